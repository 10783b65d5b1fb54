/*  conv_bf16 — the bf16 mode of the convolution layer (nn/cuda/conv_cudnn.h, "bf16"): the
    casts around a raw bf16 convolution, and the layer's scratch for them. What
    torch.autocast("cuda", dtype=torch.bfloat16) does for a Conv2d with fp32 master weights:
    x and w are cast to bf16 (round to nearest even), the convolution accumulates in fp32 and
    returns bf16, autograd casts the bf16 gradients of x and w back to fp32. The bias add and
    its gradient stay fp32 here (under autocast the bias is cast too; adding it to a bf16 y
    in fp32 is within bf16's rounding of torch's result, and keeps the bias gradient fp32).

    The raw convolutions (pf_cuconv_raw_*) are cuDNN's in conv_cudnn.c and naive ones in
    tests/cuda_host/host_cudnn.c, so this file runs unchanged on the GPU and under the kernel
    emulation. Every cast goes on the context's stream; nothing synchronises.

    Scratch (device, owned by the layer, sized at setup): xb holds x (forward, backward-filter)
    or dx (backward-data), yb y or dy, wb w or dw. Each call casts what it reads itself, so
    the calls of one step may come in any order. */
#include <stdio.h>
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/ops.h"

void pf_cuconv_counts(const pf_cuconv *c, size_t *nx, size_t *ny, size_t *nw) {
    int oh = (c->h + 2 * c->pad - c->k) / c->stride + 1;
    int ow = (c->w + 2 * c->pad - c->k) / c->stride + 1;
    *nx = (size_t)c->n * c->ic * c->h * c->w;
    *ny = (size_t)c->n * c->oc * oh * ow;
    *nw = (size_t)c->oc * c->ic * c->k * c->k;
}

void pf_cuconv_bf16_free(pf_cuconv *c) {
    cudaFree(c->xb);
    cudaFree(c->yb);
    cudaFree(c->wb);
    c->xb = c->yb = c->wb = NULL;
}

int pf_cuconv_bf16_scratch(pf_cuconv *c, char *err, size_t errlen) {
    /* the old scratch may still be read by queued work */
    if (c->xb && c->ctx) cudaStreamSynchronize(c->ctx->stream);
    pf_cuconv_bf16_free(c);
    if (!c->bf16) return 0;
    size_t nx, ny, nw;
    pf_cuconv_counts(c, &nx, &ny, &nw);
    cudaError_t e;
    if ((e = cudaMalloc((void **)&c->xb, nx * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&c->yb, ny * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&c->wb, nw * 2)) != cudaSuccess) {
        snprintf(err, errlen, "%s: cudaMalloc (bf16 scratch, %zu bytes): %s", c->name,
                 (nx + ny + nw) * 2, cudaGetErrorString(e));
        pf_cuconv_bf16_free(c);
        return -1;
    }
    return 0;
}

/* Prefix err with the layer's name after an ops.h call failed. */
static int op_fail(const pf_cuconv *c, char *err, size_t errlen) {
    char inner[512];
    snprintf(inner, sizeof inner, "%s", err);
    snprintf(err, errlen, "%s (bf16): %s", c->name, inner);
    return -1;
}

int pf_cuconv_bf16_forward(pf_cuconv *c, const float *src, const float *w, const float *bias,
                           float *dst, char *err, size_t errlen) {
    cudaStream_t st = c->ctx->stream;
    size_t nx, ny, nw;
    pf_cuconv_counts(c, &nx, &ny, &nw);
    int oh = (c->h + 2 * c->pad - c->k) / c->stride + 1;
    int ow = (c->w + 2 * c->pad - c->k) / c->stride + 1;
    if (pf_cuda_f32_to_bf16(c->xb, src, nx, st, err, errlen) ||
        pf_cuda_f32_to_bf16(c->wb, w, nw, st, err, errlen))
        return op_fail(c, err, errlen);
    if (pf_cuconv_raw_forward(c, c->xb, c->wb, c->yb, err, errlen)) return -1;
    if (pf_cuda_bf16_to_f32(dst, c->yb, ny, 0, st, err, errlen) ||
        (bias && c->has_bias &&
         pf_cuda_bias_add(dst, bias, c->n, c->oc, oh, ow, st, err, errlen)))
        return op_fail(c, err, errlen);
    return 0;
}

int pf_cuconv_bf16_backward_data(pf_cuconv *c, const float *w, const float *diff_dst,
                                 float *diff_src, int accumulate, char *err, size_t errlen) {
    cudaStream_t st = c->ctx->stream;
    size_t nx, ny, nw;
    pf_cuconv_counts(c, &nx, &ny, &nw);
    if (pf_cuda_f32_to_bf16(c->yb, diff_dst, ny, st, err, errlen) ||
        pf_cuda_f32_to_bf16(c->wb, w, nw, st, err, errlen))
        return op_fail(c, err, errlen);
    if (pf_cuconv_raw_backward_data(c, c->wb, c->yb, c->xb, err, errlen)) return -1;
    if (pf_cuda_bf16_to_f32(diff_src, c->xb, nx, accumulate, st, err, errlen))
        return op_fail(c, err, errlen);
    return 0;
}

int pf_cuconv_bf16_backward_filter(pf_cuconv *c, const float *src, const float *diff_dst,
                                   float *dw, int accumulate, char *err, size_t errlen) {
    cudaStream_t st = c->ctx->stream;
    size_t nx, ny, nw;
    pf_cuconv_counts(c, &nx, &ny, &nw);
    if (pf_cuda_f32_to_bf16(c->xb, src, nx, st, err, errlen) ||
        pf_cuda_f32_to_bf16(c->yb, diff_dst, ny, st, err, errlen))
        return op_fail(c, err, errlen);
    if (pf_cuconv_raw_backward_filter(c, c->xb, c->yb, c->wb, err, errlen)) return -1;
    if (pf_cuda_bf16_to_f32(dw, c->wb, nw, accumulate, st, err, errlen))
        return op_fail(c, err, errlen);
    return 0;
}
