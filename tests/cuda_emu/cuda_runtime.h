/*  cuda_runtime.h (tests/cuda_emu) — a host runtime for CUDA C++, so nn/cuda/ops.cu compiles
    with the host C++ compiler and its kernels run in CI without a GPU.

    This folder is first on the include path of the emulation build (PF_CUDA_EMU), so ops.cu's
    `#include <cuda_runtime.h>` lands here. Types and the runtime API's declarations are the
    toolkit's own (cuda_runtime_api.h: cudaError_t, cudaStream_t, dim3, uint3); what nvcc
    provides for device code is defined here and in emu.cpp:

    - __global__ / __device__ / __host__: nothing; __shared__: `static`, one array per kernel
      shared by the threads of the block that runs (blocks run one at a time);
    - threadIdx / blockIdx / blockDim / gridDim: the running fiber's and launch's values;
    - __syncthreads(): a real barrier. The threads of a block are cooperative fibers (ucontext,
      each on its own heap stack); a thread runs until it reaches a barrier or returns, and the
      block goes on when every thread has reached it (a thread that returns while others wait
      is a kernel bug and aborts with the kernel's name). Threads are resumed in a seeded order
      at each barrier and blocks run in a seeded order (PF_EMU_SEED, default 1), so a missing
      barrier or an order dependence between blocks changes the result;
    - atomicAdd / atomicMax: plain read-modify-write (one host thread runs everything);
    - __fadd_rn & co.: IEEE float operations (the file is compiled with -ffp-contract=off, so
      no FMA contraction, as the intrinsics guarantee); __double2ll_rn: llrint (round to nearest
      even); __float_as_uint & co.: bit copies;
    - pf_emu_launch (PF_LAUNCH in nn/cuda/launch.h): checks the configuration as the driver does
      (a zero dimension, more than 1024 threads a block, block.z over 64, grid.y/z over 65535,
      dynamic shared memory over 48 KiB: cudaErrorInvalidConfiguration, left for
      cudaGetLastError), runs the grid and records the kernel's name.

    What the emulation cannot see (docs/cuda.md): warp-synchronous code (no warps here:
    threads interleave only at barriers), memory ordering between blocks of one launch (they
    run one after another), timing and occupancy, the size of static shared memory.
*/
#ifndef PF_CUDA_EMU_RUNTIME_H
#define PF_CUDA_EMU_RUNTIME_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#ifdef __cplusplus
#include <functional>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __forceinline__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

/* The running thread's index in its block, and the launch's geometry. */
const uint3 &pf_emu_thread_idx(void);
extern uint3 pf_emu_block_idx;
extern dim3 pf_emu_block_dim, pf_emu_grid_dim;
#define threadIdx (pf_emu_thread_idx())
#define blockIdx (pf_emu_block_idx)
#define blockDim (pf_emu_block_dim)
#define gridDim (pf_emu_grid_dim)

/* Waits until every thread of the block has called it (see the head comment). */
void __syncthreads(void);

/* Runs body (the kernel call with its arguments) as `name`<<<grid, block, shared_bytes,
   stream>>>, launched from host function `site`; a bad configuration runs nothing and is
   reported by cudaGetLastError. */
void pf_emu_launch(const char *site, const char *name, dim3 grid, dim3 block,
                   size_t shared_bytes, cudaStream_t stream, const std::function<void()> &body);

/* atomicAdd / atomicMax for CUDA's operand types (int, unsigned, unsigned long long, float,
   double): the old value, as CUDA's. */
template <typename T> static inline T atomicAdd(T *a, T v) {
    T old = *a;
    *a = old + v;
    return old;
}
template <typename T> static inline T atomicMax(T *a, T v) {
    T old = *a;
    if (v > old) *a = v;
    return old;
}

/* CUDA's device min / max overloads (math_functions.h). */
#define PF_EMU_MINMAX(T)                                                                      \
    static inline T min(T a, T b) { return a < b ? a : b; }                                   \
    static inline T max(T a, T b) { return a > b ? a : b; }
PF_EMU_MINMAX(int)
PF_EMU_MINMAX(unsigned)
PF_EMU_MINMAX(long long)
PF_EMU_MINMAX(unsigned long long)
#undef PF_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }

static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline long long __double2ll_rn(double x) { return llrint(x); }
static inline unsigned __float_as_uint(float x) {
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline float __int_as_float(int i) {
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}
#endif /* __cplusplus */

#endif
