/*  linear_cuda — the CUDA layer of PF_G_LINEAR (nn/net.h): torch.nn.Linear(in, out) on
    x.view(N, -1), as the CPU layer nn/cpu/linear_dnnl.h, on plain device buffers: x N x in
    (an NCHW activation is already that matrix, C H W = in, in torch's order), weight
    [out, in] and bias [out] (the flat parameter buffer's), y N x out (an out x 1 x 1 tensor).

    The products are cuBLAS SGEMMs (no GEMM of our own) in column-major terms: a row-major
    R x C matrix is its column-major transpose, so y^T = weight x^T is (OP_T, OP_N) over
    weight (in x out) and x (in x N); d weight^T = x^T dy (OP_N, OP_T); dx^T = weight^T dy^T
    (OP_N, OP_N), beta 1 to add. The bias and its gradient are nn/cuda/ops.h's
    pf_cuda_bias_add / pf_cuda_bias_backward (a fixed-order reduction). Math mode: the
    handle's; the CUDA executor makes it CUBLAS_DEFAULT_MATH (FP32, no TF32). Determinism:
    cuBLAS's (the same bits on every run with the same toolkit, GPU and stream). */
#ifndef PF_CUDA_LINEAR_CUDA_H
#define PF_CUDA_LINEAR_CUDA_H
#include <stddef.h>
#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = x weight^T + bias, overwritten. Queued on stream (blas is set to it). 0, or -1 with err
   naming the layer `name` and the call. */
int pf_culinear_forward(cublasHandle_t blas, cudaStream_t stream, const char *name, int n,
                        int in, int out, const float *weight, const float *bias,
                        const float *x, float *y, char *err, size_t errlen);

/* From dy (N x out) and the forward's x: dweight (out x in) = dy^T x and dbias (out) = the
   sum of dy over the batch, overwritten (NULL: not wanted); dx (N x in; NULL: not wanted) =
   (acc ? dx : 0) + dy weight. 0, or -1 with err. */
int pf_culinear_backward(cublasHandle_t blas, cudaStream_t stream, const char *name, int n,
                         int in, int out, const float *weight, const float *x,
                         const float *dy, float *dweight, float *dbias, float *dx, int acc,
                         char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
