/*  ops — PixFlow's own CUDA kernels: everything a super-resolution training step needs besides
    the convolutions (nn/cuda/conv_cudnn.h): the uint8 -> float input conversion, ReLU, the
    residual add, the EDSR mean shift, pixel shuffle, L1 / MSE loss with a deterministic
    reduction, Adam over a flat buffer and the fp32 <-> bf16 casts of the bf16 convolutions.

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

/* BasicSR's CharbonnierLoss (reduction 'mean'), likewise: loss = weight * mean sqrt((x - y)^2
   + eps), grad = weight * (x - y) / sqrt((x - y)^2 + eps) / count; eps >= 0 (BasicSR 1e-12).
   The square root is rounded as nn/loss.c's sqrtf. */
int pf_cuda_charbonnier_loss(float *loss, float *grad, const float *x, const float *y,
                             size_t count, float weight, float eps, double *scratch,
                             cudaStream_t stream, char *err, size_t errlen);

/* The loss a config names (model.loss.type: "L1Loss", "MSELoss", "CharbonnierLoss" with eps),
   as above; an unknown name is an error that lists the known ones. */
int pf_cuda_pixel_loss(const char *type, float *loss, float *grad, const float *x,
                       const float *y, size_t count, float weight, float eps, double *scratch,
                       cudaStream_t stream, char *err, size_t errlen);

/* One Adam step over count parameters, torch.optim.Adam (amsgrad=False) as nn/optim.c:
     g = grad + weight_decay * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
     p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
   step: t AFTER incrementing (1 for the first update); bias corrections are computed on the
   host in double, as torch does with Python floats. m and v are the optimiser state
   (exp_avg, exp_avg_sq), count floats each, zero before the first step. */
int pf_cuda_adam_step(float *params, const float *grads, float *m, float *v, size_t count,
                      float lr, float beta1, float beta2, float eps, float weight_decay,
                      int64_t step, cudaStream_t stream, char *err, size_t errlen);

/* The general form nn/cuda/optim_cuda.c uses for one parameter group (nn/optim.c
   adam_range): decoupled 1 is AdamW (p *= 1 - lr weight_decay first, computed in double on
   the host, and no L2 term); write 0 updates m and v only and leaves params untouched (a
   group with lr_mult 0). pf_cuda_adam_step is decoupled 0, write 1. */
int pf_cuda_adam_range(float *params, const float *grads, float *m, float *v, size_t count,
                       float lr, float beta1, float beta2, float eps, float weight_decay,
                       int decoupled, int write, int64_t step, cudaStream_t stream, char *err,
                       size_t errlen);

/* One SGD update over count parameters, torch.optim.SGD as nn/optim.c sgd_range:
     g = grad + weight_decay * p;  b = g on the first step (first 1), else
     b = momentum b + (1 - dampening) g;  g = g + momentum b (nesterov) or b;  p -= lr g
   buf: the momentum buffer (count floats), NULL for momentum 0 (then g is used as it is).
   write 0: the buffer only. */
int pf_cuda_sgd_range(float *params, const float *grads, float *buf, size_t count, float lr,
                      float momentum, float dampening, int nesterov, float weight_decay,
                      int first, int write, cudaStream_t stream, char *err, size_t errlen);

/* BasicSR's EMA: ema = ema * decay + (1 - decay) * params over count floats. */
int pf_cuda_ema_update(float *ema, const float *params, size_t count, float decay,
                       cudaStream_t stream, char *err, size_t errlen);

/* torch.nn.utils.clip_grad_norm_(norm_type 2) as nn/optim.c pf_clip_grad_norm: the L2 norm of
   the count gradients (squares summed in double, the loss's fixed-grid reduction) into the
   device float *norm, then grads *= max_norm / (norm + 1e-6) where that is below 1; all on
   the device, nothing synchronises. scratch: PF_CUDA_LOSS_SCRATCH device doubles. */
int pf_cuda_clip_grad_norm(float *grads, size_t count, float max_norm, double *scratch,
                           float *norm, cudaStream_t stream, char *err, size_t errlen);

/* bf16 copy of count floats, round to nearest even (cuda_bf16's __float2bfloat16_rn; NaN
   stays NaN). dst holds the bf16 bit patterns (uint16_t, so C callers need no CUDA
   headers). The mixed-precision convolutions' casts (nn/cuda/conv_bf16.c): fp32 master
   weights and activations to their bf16 copies. */
int pf_cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t count, cudaStream_t stream,
                        char *err, size_t errlen);
/* fp32 of count bf16 bit patterns (exact: the bits shifted up 16, NaN and inf kept):
   dst = (acc ? dst : 0) + value, the add rounded in fp32. Brings a bf16 convolution's output
   and gradients back to fp32 (accumulating into a gradient another node wrote, as torch's
   autograd adds the fp32 cast of a bf16 gradient). */
int pf_cuda_bf16_to_f32(float *dst, const uint16_t *src, size_t count, int acc,
                        cudaStream_t stream, char *err, size_t errlen);

/* ---- network ops (nn/cuda/graph_cuda.c runs nn/net.h descriptions with these) --------

   Shapes are plain NCHW as above. Functions with an `acc` flag write dst = (acc ? dst : 0) +
   value, so a tensor read by several nodes gets its gradient summed in place. Reductions
   (PReLU's alpha gradient, global average pool, channel attention's scale gradient) give one
   result per (sample, channel) or per channel from a fixed-order tree in double (one block
   each, no atomics): deterministic, like the loss. nn/cpu/ops.c is the CPU counterpart of every
   function here and defines its semantics. */

/* LeakyReLU (alpha > 0) or ReLU (alpha = 0) forward: y = x > 0 ? x : alpha x (y may equal
   x). */
int pf_cuda_leaky_relu_forward(float *y, const float *x, float alpha, size_t count,
                               cudaStream_t stream, char *err, size_t errlen);

/* Its backward from the forward's OUTPUT (the sign of y is the sign of x for alpha >= 0):
   dx = y > 0 ? dy : alpha dy, overwritten (dx may equal dy). */
int pf_cuda_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count, cudaStream_t stream, char *err, size_t errlen);

/* The PF_G_RELU node's backward (its forward is pf_cuda_leaky_relu_forward): the same from
   the forward's output, dx = (acc ? dx : 0) + (y > 0 ? dy : alpha dy), alpha >= 0 (torch's
   threshold_backward for ReLU, leaky_relu_backward for LeakyReLU). */
int pf_cuda_relu_node_backward(float *dx, const float *dy, const float *y, float alpha,
                               size_t count, int acc, cudaStream_t stream, char *err,
                               size_t errlen);

/* torch.nn.PReLU(C): y = x > 0 ? x : alpha[c] x; alpha: C device floats. */
int pf_cuda_prelu_forward(float *y, const float *x, const float *alpha, int n, int c, int h,
                          int w, cudaStream_t stream, char *err, size_t errlen);

/* PReLU backward: dx = (acc ? dx : 0) + (x > 0 ? dy : alpha[c] dy) (dx NULL: skipped);
   dalpha[c] = sum over n, h, w where x <= 0 of dy x (overwritten). */
int pf_cuda_prelu_backward(float *dx, float *dalpha, const float *dy, const float *x,
                           const float *alpha, int n, int c, int h, int w, int acc,
                           cudaStream_t stream, char *err, size_t errlen);

/* y = tanh(x) / y = 1 / (1 + exp(-x)) over count floats (y may equal x). */
int pf_cuda_tanh_forward(float *y, const float *x, size_t count, cudaStream_t stream, char *err,
                         size_t errlen);
int pf_cuda_sigmoid_forward(float *y, const float *x, size_t count, cudaStream_t stream,
                            char *err, size_t errlen);

/* Their backward from the forward's output y: dx = (acc ? dx : 0) + dy (1 - y^2) (tanh) /
   dy y (1 - y) (sigmoid). */
int pf_cuda_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                          cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                             cudaStream_t stream, char *err, size_t errlen);

/* Global average pool (AdaptiveAvgPool2d(1)): y[n][c] = mean of x[n][c] over h x w; y is
   N x C x 1 x 1. */
int pf_cuda_gap_forward(float *y, const float *x, int n, int c, int h, int w,
                        cudaStream_t stream, char *err, size_t errlen);

/* Its backward: dx[n][c][.][.] = (acc ? dx : 0) + dy[n][c] / (h w). */
int pf_cuda_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                         cudaStream_t stream, char *err, size_t errlen);

/* Channel attention's multiply (RCAN): y = [res +] sc * x * s[n][c]; x, res, y N x C x H x W
   (res NULL: none), s N x C x 1 x 1. */
int pf_cuda_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w, cudaStream_t stream, char *err,
                           size_t errlen);

/* Its backward: dx = (acc_x ? dx : 0) + sc * dy * s[n][c] (dx NULL: skipped) and
   ds[n][c] = (acc_s ? ds : 0) + sc * sum over h, w of dy x (ds NULL: skipped). res's gradient
   is dy itself (the caller's). */
int pf_cuda_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x,
                            const float *s, float sc, int n, int c, int h, int w, int acc_x,
                            int acc_s, cudaStream_t stream, char *err, size_t errlen);

/* Channel slice copy, for torch.cat(dim=1) and its backward: for every sample and channel
   k < cc, dst[n][dst_off + k] = (acc ? dst : 0) + src[n][src_off + k] (h w floats each);
   dst has dst_c channels, src src_c. */
int pf_cuda_copy_channels(float *dst, int dst_c, int dst_off, const float *src, int src_c,
                          int src_off, int cc, int n, int hw, int acc, cudaStream_t stream,
                          char *err, size_t errlen);

/* F.interpolate(scale_factor=r, mode='nearest'): y (N x C x hr x wr) from x (N x C x h x w),
   y[n][c][Y][X] = x[n][c][Y / r][X / r]. h, w are the INPUT size. */
int pf_cuda_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r,
                            cudaStream_t stream, char *err, size_t errlen);

/* Its backward: dx[n][c][y][x] = (acc ? dx : 0) + sum over i, j < r of dy[n][c][y r + i][x r + j]. */
int pf_cuda_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r,
                             int acc, cudaStream_t stream, char *err, size_t errlen);

/* F.interpolate(lq / 255, scale_factor=r, mode='bilinear', align_corners=False) straight from
   the uploaded batch: lq n x h x w x 3 uint8 NHWC -> y N x 3 x hr x wr float. ATen's rule:
   source = (dst + 0.5) / r - 0.5 clamped at 0, the far tap clamped to the last pixel
   (MSRResNet's skip). h, w are the LQ size. */
int pf_cuda_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r,
                        cudaStream_t stream, char *err, size_t errlen);

/* F.interpolate(lq / 255, scale_factor=r, mode='bicubic', align_corners=False) likewise
   (SRCNN's in-network upsampler, nn/bicubic.c): Keys' cubic with A = -0.75, taps clamped to
   the image. */
int pf_cuda_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r,
                       cudaStream_t stream, char *err, size_t errlen);

/* dst[i] = sum over j < per of (idx[i per + j] >= 0 ? src[idx[i per + j]] : 0), i < count:
   a fixed re-indexing (FSRCNN's ConvTranspose2d weights into their sub-pixel convolution and
   the gradients back; nn/zoo.c sub_index, pf_net.sub_idx). idx: count * per device ints. */
int pf_cuda_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per,
                       cudaStream_t stream, char *err, size_t errlen);

/* ---- video ops (BasicVSR / SPyNet: nn/net.h PF_G_SLICE .. PF_G_ZERO; nn/video_layers.h is
   their CPU counterpart and defines the numerics: the same source-index formulas, corner
   weights and border rules, computed in float in the same order) ------------------------- */

/* Most channels of a per-channel constant (PF_G_MAX_CH). */
#define PF_CUDA_MAX_AFFINE_CHANNELS 4

/* Per-channel affine map, forward and backward in one: y = (acc ? y : 0) + (x - sub[c]) *
   mul[c] over N x C x H x W; sub and mul are host arrays of C <= PF_CUDA_MAX_AFFINE_CHANNELS
   floats (sub NULL: 0). Forward of PF_G_AFFINE (SPyNet's (x - mean) / std): acc 0; backward:
   x = dy, sub NULL, the same mul, acc as the gradient's. y may equal x (acc 0). */
int pf_cuda_affine_ch(float *y, const float *x, int n, int c, int h, int w, const float *sub,
                      const float *mul, int acc, cudaStream_t stream, char *err, size_t errlen);

/* F.interpolate(x, size=(H, W), mode='bilinear', align_corners=ac) of x N x C x h x w into y
   N x C x H x W, each output channel then times mult[c] (host, C <= 4 floats; NULL: 1). Source
   row of output row Y: ac ? Y (h - 1) / (H - 1) : max((Y + 0.5) h / H - 0.5, 0), as ATen's
   area_pixel_compute_source_index (pf_resize_bilinear_forward). */
int pf_cuda_resize_bilinear_forward(float *y, const float *x, int n, int c, int h, int w, int H,
                                    int W, int ac, const float *mult, cudaStream_t stream,
                                    char *err, size_t errlen);

/* Its backward: dx (N x C x h x w) = (acc ? dx : 0) + the transpose of the resize applied to
   dy (N x C x H x W), mult as in forward. Computed as a gather (each input pixel sums the
   output pixels whose taps reach it, in a fixed order): deterministic, no atomics. */
int pf_cuda_resize_bilinear_backward(float *dx, const float *dy, int n, int c, int h, int w,
                                     int H, int W, int ac, const float *mult, int acc,
                                     cudaStream_t stream, char *err, size_t errlen);

/* F.avg_pool2d(x, 2, 2): y N x C x (h / 2) x (w / 2), each the mean of a 2 x 2 window of x
   (N x C x h x w, h and w even). Backward: dx = (acc ? dx : 0) + dy[window] / 4. */
int pf_cuda_avgpool2_forward(float *y, const float *x, int n, int c, int h, int w,
                             cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                              cudaStream_t stream, char *err, size_t errlen);

/* F.max_pool2d(x, 2, 2) (nn.MaxPool2d(2)): y N x C x (h / 2) x (w / 2), each the max of a 2 x 2
   window of x (N x C x h x w, h and w even). Backward: dx = (acc ? dx : 0) + dy[window] at the
   window's argmax (the first maximum in row-major order, a NaN winning: PyTorch's), 0 at its
   other three pixels; x is the forward's input. */
int pf_cuda_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w,
                             cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int acc, cudaStream_t stream, char *err, size_t errlen);

/* BasicSR flow_warp(x, flow) (grid_sample, bilinear, align_corners=True, padding pad: 0 zeros,
   1 border, pf_pad_mode): y[n][c][i][j] = x[n][c] sampled at (j + flow[n][0][i][j],
   i + flow[n][1][i][j]); x, y N x C x H x W, flow N x 2 x H x W (pf_flow_warp_forward). */
int pf_cuda_flow_warp_forward(float *y, const float *x, const float *flow, int n, int c, int h,
                              int w, int pad, cudaStream_t stream, char *err, size_t errlen);

/* Bytes of device scratch pf_cuda_flow_warp_backward needs for x of count = n c h w floats. */
size_t pf_cuda_flow_warp_scratch_bytes(size_t count);

/* Its backward. dflow (NULL: not wanted) = (acc_f ? dflow : 0) + d y / d sample position,
   summed over channels per output pixel (a gather: one thread per pixel). dx (NULL: not
   wanted) = (acc_x ? dx : 0) + the scatter of dy by the bilinear weights. The scatter is
   deterministic: every contribution is turned into a 64-bit fixed-point integer with one
   power-of-two scale for the call (chosen from max |dy| and h w so no sum can overflow) and
   added with integer atomics, which are exact, so the order does not matter; the sum is then
   converted back to float. Its resolution is max |dy| h w / 2^62 (about 1e-14 max |dy| for a
   256 x 256 image), far below float rounding of any gradient of note. A non-finite dy gives
   NaN in dx. scratch: pf_cuda_flow_warp_scratch_bytes(n c h w) device bytes (dx only). */
int pf_cuda_flow_warp_backward(float *dx, float *dflow, const float *dy, const float *x,
                               const float *flow, int n, int c, int h, int w, int pad,
                               int acc_x, int acc_f, void *scratch, cudaStream_t stream,
                               char *err, size_t errlen);

/* ---- modulated deformable convolution (PF_G_DCN; nn/cpu/dcn.h defines the formula, the
   boundary rule and the column layout; nn/cuda/dcn_cuda.h runs the layer: these sampling
   kernels plus cuBLAS for the contraction) ------------------------------------------------ */

/* One layer's shape: x N x C_in x H x W, offset N x 2 dg k k x H_out x W_out ((dy, dx) per
   deform group and tap), mask N x dg k k x H_out x W_out, all plain NCHW; dg divides C_in. */
typedef struct {
    int n, cin, h, w;           /* input */
    int k, stride, pad, dil;    /* kernel k x k, >= 1, >= 0, >= 1 */
    int dg;                     /* deform_groups */
    int ho, wo;                 /* output size (torch.nn.Conv2d's rule) */
} pf_cuda_dcn_shape;

/* The columns: col[(c k k + t) N H_out W_out + (n H_out + oy) W_out + ox] = mask * X_c(py, px)
   (torchvision's bilinear sample, 0 from py <= -1 / py >= H on, likewise x), C_in k k rows of
   N H_out W_out floats, overwritten. */
int pf_cuda_dcn_columns(float *col, const float *x, const float *off, const float *mask,
                        const pf_cuda_dcn_shape *s, cudaStream_t stream, char *err,
                        size_t errlen);

/* Bytes of device scratch pf_cuda_dcn_columns_backward needs for dx of shape s. */
size_t pf_cuda_dcn_scratch_bytes(const pf_cuda_dcn_shape *s);

/* The sampling's adjoint from the columns' gradient dcol (layout as above; it is multiplied by
   the mask in place, so it is garbage afterwards): doff and dmask (NULL: not wanted) =
   (acc ? them : 0) + their gradients, one thread per (n, deform group, tap, output pixel), the
   sum over the group's channels in double in channel order (a gather: deterministic); dx (NULL:
   not wanted) = (acc_x ? dx : 0) + the scatter of dcol * mask by the bilinear weights, as
   pf_cuda_flow_warp_backward's: 64-bit fixed-point integer atomics with one power-of-two scale
   per call (from max |dcol * mask| and the k k H_out W_out contributions an element can get),
   exact and so order-independent; NaN in dx for a non-finite dcol * mask. The offsets'
   derivative is torchvision's get_coordinate_weight (the cell's slope at py = -1 exactly).
   scratch: pf_cuda_dcn_scratch_bytes(s) device bytes (dx only). */
int pf_cuda_dcn_columns_backward(float *dx, float *doff, float *dmask, float *dcol,
                                 const float *x, const float *off, const float *mask,
                                 const pf_cuda_dcn_shape *s, int acc_x, int acc_off,
                                 int acc_mask, void *scratch, cudaStream_t stream, char *err,
                                 size_t errlen);

/* A per-channel bias on N x C x H x W: y[n][c][.][.] += bias[c] (forward), and its gradient
   dbias[c] = (acc ? dbias : 0) + sum over n, h, w of dy (k_plane_sum's fixed-order tree in
   double: deterministic). */
int pf_cuda_bias_add(float *y, const float *bias, int n, int c, int h, int w,
                     cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_bias_backward(float *dbias, const float *dy, int n, int c, int h, int w, int acc,
                          cudaStream_t stream, char *err, size_t errlen);

/* ---- spectral normalisation of a convolution's weight (torch.nn.utils.spectral_norm, dim 0,
   one power iteration, its eps; nn/spectral_norm.h defines the formulas, nn/cuda/sn_cuda.h
   runs them over a discriminator's layers). W is weight_orig (OIHW) read as the row-major
   rows x cols matrix, rows = O, cols = I K K. Every sum is in double, in a fixed order (a
   column's products in row order; a row's in THREADS in-order strands, then block_sum's tree),
   so the results are the same bits on every run. */

/* Doubles of device scratch the two functions below need for a weight of `rows` rows. */
#define PF_CUDA_SN_SCRATCH(rows) ((size_t)(rows) + 1)

/* training != 0: one power iteration first, v = normalize(W^T u), then u = normalize(W v),
   normalize(x) = x / max(||x||_2, eps) (u: rows floats, v: cols floats, updated in place);
   then (both modes) *sigma = u . (W v) (one float, device) and weight = weight_orig / sigma
   (rows x cols floats, overwritten; must not alias weight_orig). A zero weight_orig gives
   sigma 0 and a NaN weight, as torch. scratch: PF_CUDA_SN_SCRATCH(rows) doubles. */
int pf_cuda_sn_forward(float *weight, float *u, float *v, float *sigma,
                       const float *weight_orig, int rows, int cols, float eps, int training,
                       double *scratch, cudaStream_t stream, char *err, size_t errlen);

/* The backward with the u, v and *sigma of the forward it follows (held constant, as torch's
   clones are): d_weight_orig = d_weight / sigma - (sum(d_weight * weight_orig) / sigma^2)
   u v^T, overwritten (it may be d_weight itself). scratch: PF_CUDA_SN_SCRATCH(rows)
   doubles. */
int pf_cuda_sn_backward(float *d_weight_orig, const float *d_weight, const float *weight_orig,
                        const float *u, const float *v, const float *sigma, int rows, int cols,
                        double *scratch, cudaStream_t stream, char *err, size_t errlen);
/* torch.nn.BatchNorm2d (PF_G_BATCHNORM; nn/cpu/batchnorm.c is the CPU counterpart, formulas
   from Ioffe and Szegedy 2015 / torch's batch_norm) on x, N x C x H x W, into y (same shape;
   may equal x); weight, bias C floats; eps and momentum torch's (PF_BN_EPS, PF_BN_MOMENTUM).
   Training forward: one block per channel sums its N H W values in double (fixed-order
   per-thread strides, then block_sum's tree: deterministic), mean = sum / M and the biased
   var = sum (x - mean)^2 / M (two passes), M = N H W; y = (x - mean) / sqrt(var + eps)
   weight + bias; running (2 C floats: running_mean then running_var) updated as
   (1 - momentum) running + momentum batch with the unbiased var M / (M - 1); save (2 C
   doubles) gets mean and 1 / sqrt(var + eps) for backward. M < 2: -1 (torch: "Expected more
   than 1 value per channel when training"), nothing launched.
   Eval forward: y = (x - running_mean) / sqrt(running_var + eps) weight + bias.
   Backward of a training forward (its x and save): per channel in double db = sum dy,
   dw = sum dy x^ (x^ = (x - mean) inv); dweight, dbias (NULL: not wanted) = dw, db
   (overwritten); dx (NULL: not wanted) = (acc ? dx : 0) + weight inv (dy - db / M - x^ dw /
   M). */
int pf_cuda_batchnorm_train_forward(float *y, const float *x, const float *weight,
                                    const float *bias, float *running, double *save, int n,
                                    int c, int h, int w, double eps, double momentum,
                                    cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_batchnorm_eval_forward(float *y, const float *x, const float *weight,
                                   const float *bias, const float *running, int n, int c, int h,
                                   int w, double eps, cudaStream_t stream, char *err,
                                   size_t errlen);
int pf_cuda_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, int h, int w, int acc, cudaStream_t stream, char *err,
                               size_t errlen);

/* EDVR's TSA-fusion ops (nn/net.h PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3), NCHW,
   the CPU executor's formulas (nn/cpu/ops.h pf_cpu_mul_* / _chsum_* / _pool3_*, which
   gpu_check compares them with): backward overwrites, or adds when acc; no atomics (each
   output element one thread, sums in a fixed order). 0, or -1 with err (bad shape, NULL
   tensor, launch failure).
   mul: y (n c h w) = [r +] sc * x0 * x1, x1 of c1 = c channels or 1 (broadcast). Backward:
   dx0 = [dx0 +] sc dy x1, dx1 = [dx1 +] sc dy x0 (c1 = 1: summed over the c channels in
   order, in double); either NULL: not wanted.
   chsum: y (n 1 h w) = the sum of x (n c h w) over channels (double, in order); backward dx
   = [dx +] dy on every channel.
   pool3: y (n c h/2 w/2; h, w even) = the 3 x 3, stride 2, padding 1 max (max 1: first
   maximum in row-major window order, a NaN winning, padding never) or average (max 0: sum
   of the pixels inside / 9) of x; backward gathers each pixel's windows (up to 4) in window
   order; the max's reads x. */
int pf_cuda_mul_forward(float *y, const float *x0, const float *x1, const float *r, float sc,
                        int n, int c, int c1, int h, int w, cudaStream_t stream, char *err,
                        size_t errlen);
int pf_cuda_mul_backward(float *dx0, float *dx1, const float *dy, const float *x0,
                         const float *x1, float sc, int n, int c, int c1, int h, int w,
                         int acc0, int acc1, cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_chsum_forward(float *y, const float *x, int n, int c, int h, int w,
                          cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_chsum_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                           cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_pool3_forward(float *y, const float *x, int max, int n, int c, int h, int w,
                          cudaStream_t stream, char *err, size_t errlen);
int pf_cuda_pool3_backward(float *dx, const float *dy, const float *x, int max, int n, int c,
                           int h, int w, int acc, cudaStream_t stream, char *err,
                           size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
