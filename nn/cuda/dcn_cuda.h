/*  dcn_cuda — the CUDA layer of PF_G_DCN (nn/net.h): modulated deformable convolution (DCNv2,
    Zhu et al., CVPR 2019) with the semantics of torchvision.ops.deform_conv2d with a mask, as
    the CPU layer nn/cpu/dcn.h (formula, boundary rule, column layout) on plain NCHW device
    tensors: the sampling and its adjoint are nn/cuda/ops.h's pf_cuda_dcn_* kernels, the
    contraction with the weights and both backward products are cuBLAS strided-batched SGEMMs
    (the groups as the batch, one call per sample; no GEMM of our own), the bias a kernel.

    Shapes: x N x C_in x H x W; offset N x 2 dg k k x H_out x W_out; mask N x dg k k x H_out x
    W_out; weight C_out x C_in / groups x k x k (OIHW); bias C_out; out N x C_out x H_out x W_out.

    Determinism: the kernels are deterministic (gathers, and fixed-point integer atomics for
    x's gradient, exact in any order: ops.h); cuBLAS gives the same bits on every run with the
    same toolkit, GPU model and stream (its documented reproducibility; the handle is used on
    one stream). The math mode is CUBLAS_DEFAULT_MATH: FP32, no TF32 (unless the environment
    forces it with NVIDIA_TF32_OVERRIDE).

    Memory: the caller gives the columns (pf_cudcn_col_floats) and, in training, as many
    floats for their gradient and pf_cuda_dcn_scratch_bytes of scratch; the backward samples
    the columns again instead of keeping them from the forward, so one set of buffers serves
    every DCN layer of a network (the price: one sampling pass more per layer and step).
*/
#ifndef PF_CUDA_DCN_CUDA_H
#define PF_CUDA_DCN_CUDA_H
#include <stddef.h>
#include <cublas_v2.h>
#include "nn/cuda/ops.h"

typedef struct {
    char name[96];              /* the layer's state_dict prefix, for errors */
    pf_cuda_dcn_shape s;        /* input, kernel, deform groups, output size */
    int cout, groups;           /* output channels; groups divides C_in and C_out */
} pf_cudcn;

/* l for batch n of C_in x h x w (H_out, W_out by torch.nn.Conv2d's rule). 0, or -1 with err
   when the shape is impossible (groups / deform_groups not dividing, an empty output). */
int pf_cudcn_init(pf_cudcn *l, const char *name, int n, int cin, int h, int w, int cout, int k,
                  int stride, int pad, int dil, int groups, int dg, char *err, size_t errlen);

/* Floats of the columns (C_in k k N H_out W_out; as many again for their gradient). */
size_t pf_cudcn_col_floats(const pf_cudcn *l);

/* out = the formula of nn/cpu/dcn.h (bias NULL: none), overwritten; col: the columns'
   buffer (pf_cudcn_col_floats). Queued on stream (blas is set to it). 0, or -1 with err
   naming the layer. */
int pf_cudcn_forward(const pf_cudcn *l, cublasHandle_t blas, cudaStream_t stream,
                     const float *weight, const float *bias, const float *x, const float *off,
                     const float *mask, float *out, float *col, char *err, size_t errlen);

/* From dy and the forward's x, off, mask: dweight and dbias (NULL: not wanted) ADDED to (the
   executor zeroes the gradients before backward; so shared weights sum), dx, doff, dmask
   (NULL: not wanted) = (acc_* ? them : 0) + their gradients. col, dcol: pf_cudcn_col_floats
   each; scratch: pf_cuda_dcn_scratch_bytes(&l->s) bytes (dx only). 0, or -1 with err. */
int pf_cudcn_backward(const pf_cudcn *l, cublasHandle_t blas, cudaStream_t stream,
                      const float *weight, float *dweight, float *dbias, const float *dy,
                      const float *x, const float *off, const float *mask, float *dx,
                      float *doff, float *dmask, int acc_x, int acc_off, int acc_mask,
                      float *col, float *dcol, void *scratch, char *err, size_t errlen);
#endif
