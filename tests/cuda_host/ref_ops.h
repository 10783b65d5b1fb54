/*  ref_ops — naive host references for nn/cuda/ops.h's kernels and nn/cuda/conv_cudnn.h's
    convolutions, written once from the contracts in those headers and used twice:

      - bench/gpu/gpu_check compares every kernel (on a GPU, or emulated under tests/cuda_emu)
        with them;
      - tests/cuda_host/host_ops.c and host_cudnn.c wrap them as the stand-ins the first build
        of tests/cuda_host runs in place of the kernels and of cuDNN.

    Each pf_ref_X takes the arguments of pf_cuda_X without the stream and error buffer, on host
    memory, with the same shapes and layouts (NCHW float unless said; see ops.h for each op).
    They are plain loops, accumulating reductions in double, and depend on nothing but libm,
    so that run.sh's nvcc-only fallback build can compile them beside gpu_check.c. Arguments
    are not checked (the kernels' argument errors are gpu_check's own cases). */
#ifndef PF_REF_OPS_H
#define PF_REF_OPS_H
#include <stddef.h>
#include <stdint.h>

/* fp32 -> bf16 bit pattern, round to nearest even (cuda_bf16's __float2bfloat16_rn); NaN ->
   a quiet NaN. And bf16 -> fp32, exact (the bits shifted up 16). */
uint16_t pf_ref_bf16(float f);
float pf_ref_bf16_to_f32(uint16_t h);
/* ops.h pf_cuda_f32_to_bf16 / pf_cuda_bf16_to_f32 over count values */
void pf_ref_f32_to_bf16(uint16_t *dst, const float *src, size_t count);
void pf_ref_bf16_to_f32_acc(float *dst, const uint16_t *src, size_t count, int acc);

/* NHWC uint8 -> NCHW float / 255 */
void pf_ref_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c);
/* y = (x - mean[c]) * range (mean NULL: 0), and its inverse x / range + mean[c] */
void pf_ref_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range);
void pf_ref_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range);
void pf_ref_add_scaled(float *y, const float *a, const float *b, float s, size_t count);
void pf_ref_scale(float *y, const float *x, float s, size_t count);
void pf_ref_axpy(float *y, const float *x, float s, size_t count);   /* y += s x */

/* torch.nn.PixelShuffle(r): in N x C r^2 x H x W -> out N x C x Hr x Wr; the backward is the
   inverse permutation. */
void pf_ref_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r);
void pf_ref_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w,
                                   int r);

/* BasicSR's pixel losses, reduction 'mean', times weight: returns the loss and writes its
   gradient to grad (when not NULL). Charbonnier is sqrt(d^2 + eps). */
typedef enum { PF_REF_L1, PF_REF_MSE, PF_REF_CHARBONNIER } pf_ref_loss;
float pf_ref_pixel_loss(pf_ref_loss type, float *grad, const float *x, const float *y,
                        size_t count, float weight, float eps);

/* Activations; the backwards read the forward's output y, as the kernels do. acc: add to dx
   instead of overwriting it. */
void pf_ref_leaky_relu_forward(float *y, const float *x, float alpha, size_t count);
void pf_ref_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count);
/* the PF_G_RELU node's backward: dx = [dx +] (y > 0 ? dy : alpha dy) */
void pf_ref_relu_node_backward(float *dx, const float *dy, const float *y, float alpha,
                               size_t count, int acc);
void pf_ref_prelu_forward(float *y, const float *x, const float *alpha, int n, int c, int h,
                          int w);
/* dx (may be NULL) with acc; dalpha[c] = sum over x <= 0 of dy x, overwritten */
void pf_ref_prelu_backward(float *dx, float *dalpha, const float *dy, const float *x,
                           const float *alpha, int n, int c, int h, int w, int acc);
void pf_ref_tanh_forward(float *y, const float *x, size_t count);
void pf_ref_sigmoid_forward(float *y, const float *x, size_t count);
void pf_ref_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc);
void pf_ref_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc);

/* AdaptiveAvgPool2d(1): y N x C */
void pf_ref_gap_forward(float *y, const float *x, int n, int c, int h, int w);
void pf_ref_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc);
/* y = [res +] sc x s[n c] (RCAN's channel attention); dx, ds may be NULL */
void pf_ref_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w);
void pf_ref_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x,
                            const float *s, float sc, int n, int c, int h, int w, int acc_x,
                            int acc_s);
/* channels [soff, soff + cc) of an sc-channel src onto [doff, doff + cc) of a dc-channel dst */
void pf_ref_copy_channels(float *dst, int dc, int doff, const float *src, int sc, int soff,
                          int cc, int n, int hw, int acc);
/* F.interpolate(mode='nearest', scale_factor=r) */
void pf_ref_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r);
void pf_ref_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r,
                             int acc);
/* F.interpolate(lq / 255, scale_factor=r, align_corners=False) of an NHWC uint8 RGB batch to
   N x 3 x Hr x Wr: bilinear (source clamped at 0, far tap at the last pixel) and bicubic
   (Keys, A = -0.75, taps clamped to the image), ATen's source coordinate (d + 0.5) / r - 0.5 */
void pf_ref_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r);
void pf_ref_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r);
/* dst[i] = sum over j < per of src[idx[i per + j]] where that index >= 0 */
void pf_ref_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per);
/* ema = decay ema + (1 - decay) params */
void pf_ref_ema_update(float *ema, const float *params, size_t count, float decay);
/* y [+]= (x - sub[c]) mul[c] (sub NULL: 0) */
void pf_ref_affine_ch(float *y, const float *x, int n, int c, int h, int w, const float *sub,
                      const float *mul, int acc);
/* 2 x 2 average pooling's backward, even h and w (the input's size) */
void pf_ref_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc);
/* 2 x 2 max pooling (F.max_pool2d(x, 2, 2)), even h and w (the input's size): forward, and
   backward to each window's argmax (the first maximum in row-major order; a NaN wins) */
void pf_ref_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w);
void pf_ref_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int acc);

/* Convolution as nn/cuda/conv_cudnn.h's pf_cuconv: NCHW input n x ic x h x w, weight
   oc x ic x k x k, stride `stride` and zero padding `pad` on each side, output n x oc x oh x ow
   with oh = (h + 2 pad - k) / stride + 1 (torch.nn.Conv2d); stride 0 (an initialiser that
   leaves both out) means stride 1, padding k / 2. The backwards overwrite, or add when acc. */
typedef struct {
    int n, ic, oc, h, w, k;
    int stride, pad;
} pf_ref_conv;
void pf_ref_conv_forward(const pf_ref_conv *s, const float *x, const float *wt,
                         const float *bias, float *y);               /* bias may be NULL */
void pf_ref_conv_backward_data(const pf_ref_conv *s, const float *wt, const float *dy,
                               float *dx, int acc);
void pf_ref_conv_backward_filter(const pf_ref_conv *s, const float *x, const float *dy,
                                 float *dw, int acc);
void pf_ref_conv_backward_bias(const pf_ref_conv *s, const float *dy, float *db, int acc);
/* Modulated deformable convolution's sampling (ops.h pf_cuda_dcn_*; formula and boundary rule
   nn/cpu/dcn.h), the fields of pf_cuda_dcn_shape: the columns (C_in k k rows of N H_out W_out),
   and their adjoint to x, offset and mask (NULL: not wanted; overwritten, or added when acc),
   in double from dcol as given (not modified here). */
typedef struct {
    int n, cin, h, w, k, stride, pad, dil, dg, ho, wo;
} pf_ref_dcn;
void pf_ref_dcn_columns(const pf_ref_dcn *s, float *col, const float *x, const float *off,
                        const float *mask);
void pf_ref_dcn_columns_backward(const pf_ref_dcn *s, float *dx, float *doff, float *dmask,
                                 const float *dcol, const float *x, const float *off,
                                 const float *mask, int acc);
/* y += bias[c]; dbias[c] [+]= the sum of dy over n, h, w */
void pf_ref_bias_add(float *y, const float *bias, int n, int c, int h, int w);
void pf_ref_bias_backward(float *dbias, const float *dy, int n, int c, int h, int w, int acc);
/* Spectral normalisation (ops.h pf_cuda_sn_*; nn/spectral_norm.h): W = weight_orig as rows x
   cols. Forward: with training, v = normalize(W^T u), u = normalize(W v) (each product stored
   as float before its normalisation); then *sigma = u . (W v) and weight = weight_orig /
   sigma. Backward: d_weight_orig (may be d_weight) = d_weight / sigma - (sum(d_weight *
   weight_orig) / sigma^2) u v^T. */
void pf_ref_sn_forward(float *weight, float *u, float *v, float *sigma,
                       const float *weight_orig, int rows, int cols, float eps, int training);
void pf_ref_sn_backward(float *d_weight_orig, const float *d_weight, const float *weight_orig,
                        const float *u, const float *v, const float *sigma, int rows,
                        int cols);
/* torch.nn.BatchNorm2d (ops.h pf_cuda_batchnorm_*) on N x C x H x W, in double, straight
   from the definition (eps, momentum given): training forward (y; running 2 C floats updated
   with the unbiased variance; save 2 C doubles: mean, 1 / sqrt(var + eps)), eval forward
   from running, backward of a training forward (dx [+]=, dweight and dbias overwritten; each
   NULL: not wanted), dx = weight inv / M (M dy - sum dy - x^ sum dy x^). The training
   forward returns -1 when N H W < 2. */
int pf_ref_batchnorm_train(float *y, const float *x, const float *weight, const float *bias,
                           float *running, double *save, int n, int c, int h, int w, double eps,
                           double momentum);
void pf_ref_batchnorm_eval(float *y, const float *x, const float *weight, const float *bias,
                           const float *running, int n, int c, int h, int w, double eps);
void pf_ref_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, int h, int w, int acc);
/* torch.nn.Linear(in, out) (nn/cuda/linear_cuda.h) on x N x in, in double: y (N x out) =
   x weight^T + bias; backward: dweight (out x in) = dy^T x, dbias = sum of dy over N
   (overwritten), dx (N x in) = (acc ? dx : 0) + dy weight. */
void pf_ref_linear_forward(float *y, const float *x, const float *weight, const float *bias,
                           int n, int in, int out);
void pf_ref_linear_backward(float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, int n, int in, int out,
                            int acc);
#endif
