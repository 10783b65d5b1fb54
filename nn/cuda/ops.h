/*  ops — PixFlow's own CUDA kernels: everything a super-resolution training step needs besides
    the convolutions (nn/cuda/conv_cudnn.h): the uint8 -> float input conversion, ReLU, the
    residual add, the EDSR mean shift, pixel shuffle, L1 / MSE loss with a deterministic
    reduction, Adam over a flat buffer and an fp32 -> bf16 copy.

    Conventions (all functions):
    - Pointers are device pointers unless a parameter says "host". Activations are N x C x H x W
      float32, plain NCHW (no padding, no blocking); element-wise functions take a count and
      accept any layout shared by their operands.
    - Work is queued on `stream` (0 = the legacy default stream); the functions do not
      synchronise, so a kernel's own execution error surfaces at the caller's next
      synchronisation. What is checked here is the launch (cudaGetLastError after it).
    - Each returns 0, or -1 with err naming the kernel and CUDA's message. A count of 0 is a
      no-op that returns 0.
    - The CPU backend's counterparts (nn/layers.h, nn/loss.h, nn/optim.h) define the semantics;
      bench/gpu/gpu_check.c compares each function here against a naive CPU loop.
*/
#ifndef PF_CUDA_OPS_H
#define PF_CUDA_OPS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most channels the per-channel functions (mean shift) handle. */
#define PF_CUDA_MAX_MEAN_CHANNELS 4

/* Doubles of device scratch the loss functions need (one partial sum per block of the
   loss's fixed grid). */
#define PF_CUDA_LOSS_SCRATCH 1024

/* Image batch to activation: src is n x h x w x c uint8 NHWC (what loaders send), dst is
   N x C x H x W float NCHW with dst = src / 255, in [0, 1]. */
int pf_cuda_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c,
                            cudaStream_t stream, char *err, size_t errlen);

/* EDSR's MeanShift (BasicSR edsr_arch.py: x = (x - mean) * img_range): y = (x - mean[c]) *
   range over an N x C x H x W tensor; mean is a host array of C <= PF_CUDA_MAX_MEAN_CHANNELS
   floats (NULL = zeros). y may equal x. Its backward is pf_cuda_scale by range. */
int pf_cuda_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range, cudaStream_t stream, char *err, size_t errlen);

/* The inverse, at the network's tail (x = x / img_range + mean): y = x / range + mean[c].
   Its backward is pf_cuda_scale by 1 / range. */
int pf_cuda_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range, cudaStream_t stream, char *err, size_t errlen);

/* ReLU forward: y[i] = max(x[i], 0) over count floats (y may equal x). */
int pf_cuda_relu_forward(float *y, const float *x, size_t count, cudaStream_t stream, char *err,
                         size_t errlen);

/* ReLU backward, masked by the forward's output as torch's threshold_backward:
   dx[i] = y[i] > 0 ? dy[i] : 0 (dx may equal dy). */
int pf_cuda_relu_backward(float *dx, const float *dy, const float *y, size_t count,
                          cudaStream_t stream, char *err, size_t errlen);

/* Residual add (BasicSR ResidualBlockNoBN: identity + res_scale * body): y = a + s * b.
   y may equal a or b. Backward: da = dy (nothing to compute, or pf_cuda_axpy into an
   accumulated gradient), db = s * dy (pf_cuda_scale). */
int pf_cuda_add_scaled(float *y, const float *a, const float *b, float s, size_t count,
                       cudaStream_t stream, char *err, size_t errlen);

/* y[i] = s * x[i] (y may equal x). */
int pf_cuda_scale(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                  char *err, size_t errlen);

/* Gradient accumulation: y[i] += s * x[i]. */
int pf_cuda_axpy(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                 char *err, size_t errlen);

/* PixelShuffle(r) forward (torch.nn.PixelShuffle): in N x (C r^2) x H x W -> out
   N x C x (H r) x (W r), out[n][c][h r + i][w r + j] = in[n][c r^2 + i r + j][h][w]. c is the
   OUTPUT channel count. r >= 1. */
int pf_cuda_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                                  cudaStream_t stream, char *err, size_t errlen);

/* Its backward (a pure permutation): din (N x C r^2 x H x W) from dout (N x C x Hr x Wr),
   overwritten. */
int pf_cuda_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w,
                                   int r, cudaStream_t stream, char *err, size_t errlen);

/* BasicSR pixel losses, reduction 'mean', times weight, on count floats of prediction x and
   target y (nn/loss.h):
     L1   loss = weight * mean |x - y|     grad = weight * sign(x - y) / count (sign(0) = 0)
     MSE  loss = weight * mean (x - y)^2   grad = weight * 2 (x - y) / count
   loss: 1 device float, written at the end of the stream's work (copy it back when needed);
   grad: count floats, or NULL for the loss alone. scratch: PF_CUDA_LOSS_SCRATCH device
   doubles. The sum is deterministic: a fixed grid of PF_CUDA_LOSS_SCRATCH blocks, each
   summing a fixed stride of elements in double and reducing them in a fixed tree, then one
   block adds the block sums in a fixed order, so the same inputs give the same bits on every
   run and every GPU (no atomics). */
int pf_cuda_l1_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                    float weight, double *scratch, cudaStream_t stream, char *err,
                    size_t errlen);
int pf_cuda_mse_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                     float weight, double *scratch, cudaStream_t stream, char *err,
                     size_t errlen);

/* One Adam step over count parameters, torch.optim.Adam (amsgrad=False) as nn/optim.c:
     g = grad + weight_decay * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
     p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
   step: t AFTER incrementing (1 for the first update); bias corrections are computed on the
   host in double, as torch does with Python floats. m and v are the optimiser state
   (exp_avg, exp_avg_sq), count floats each, zero before the first step. */
int pf_cuda_adam_step(float *params, const float *grads, float *m, float *v, size_t count,
                      float lr, float beta1, float beta2, float eps, float weight_decay,
                      int64_t step, cudaStream_t stream, char *err, size_t errlen);

/* bf16 copy of count floats, round to nearest even (cuda_bf16's __float2bfloat16_rn; NaN
   stays NaN). dst holds the bf16 bit patterns (uint16_t, so C callers need no CUDA
   headers). For the later mixed-precision path (fp32 master weights, bf16 copies). */
int pf_cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t count, cudaStream_t stream,
                        char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
