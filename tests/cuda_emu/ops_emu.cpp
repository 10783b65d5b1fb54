/*  ops_emu — nn/cuda/ops.cu itself, compiled by the host C++ compiler under the emulation of
    tests/cuda_emu/cuda_runtime.h (PF_CUDA_EMU; this folder first on the include path), so the
    real kernels run in CI without a GPU. Built with -ffp-contract=off (the __f*_rn intrinsics
    never contract) and AddressSanitizer (device buffers are heap blocks of their own). */
#include "nn/cuda/ops.cu"
