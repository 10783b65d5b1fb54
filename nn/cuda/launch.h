/*  launch — PF_LAUNCH, the one way nn/cuda/ops.cu launches a kernel.

    PF_LAUNCH(kernel, grid, block, shared_bytes, stream, args...) is
    `kernel<<<grid, block, shared_bytes, stream>>>(args...)` under nvcc. Under the host emulation
    of tests/cuda_emu (PF_CUDA_EMU: ops.cu compiled by the host C++ compiler, so CI runs the real
    kernels without a GPU) it is pf_emu_launch: the grid's blocks one after another in a seeded
    order, the threads of a block as fibers that meet at __syncthreads(), the launch checked as
    the driver checks it (cudaGetLastError) and the launch site (host function and kernel)
    recorded, so a test can require that every launch ran. Nothing else in ops.cu differs
    between the two builds.
*/
#ifndef PF_CUDA_LAUNCH_H
#define PF_CUDA_LAUNCH_H

#ifdef PF_CUDA_EMU
/* tests/cuda_emu/cuda_runtime.h (first on the include path in that build) declares
   pf_emu_launch. The lambda copies the variables it names, as a launch copies its arguments;
   the argument expressions are evaluated inside it, on those copies, so they must be values
   (variables, constants, arithmetic, NULL), as every launch of ops.cu passes: an expression
   such as v.data() would read a copy of v. */
#define PF_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                             \
    pf_emu_launch(__func__, #kernel, dim3(grid), dim3(block), (shared_bytes), (stream),        \
                  [=]() mutable { kernel(__VA_ARGS__); })
#else
#define PF_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                             \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)
#endif

#endif
