/*  host_ops — stand-ins for nn/cuda/ops.h's kernels, run on the host, so
    test_model_cuda_host and test_optim_cuda_host can check the CUDA backend's host code
    (nn/cuda/model_cuda.c, graph_cuda.c, optim_cuda.c: descriptions, plans, gradient
    bookkeeping, the optimiser's group loop) independently of the kernels. The element-wise,
    activation, reduction, resampling and loss ops are tests/cuda_host/ref_ops.c's naive
    references, the very ones bench/gpu/gpu_check compares the real kernels with; the optimiser
    ranges are nn/optim.c itself and the video ops nn/video_layers.h's CPU kernels with plain
    layout (block 1), which tests/test_video_layers checks against PyTorch. The runtime calls
    are host_runtime.c's, the convolutions host_cudnn.c's. The real kernels (nn/cuda/ops.cu) run
    in the other build of these tests, under tests/cuda_emu, and on a GPU in bench/gpu/gpu_check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cpu/ops.h"
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/ops.h"
#include "tests/cuda_host/ref_ops.h"

#define ST cudaStream_t stream, char *err, size_t errlen
#define UNUSED (void)stream, (void)err, (void)errlen

int pf_cuda_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c, ST) {
    UNUSED;
    pf_ref_u8_nhwc_to_nchw(dst, src, n, h, w, c);
    return 0;
}
int pf_cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t count, ST) {
    UNUSED;
    pf_ref_f32_to_bf16(dst, src, count);
    return 0;
}
int pf_cuda_bf16_to_f32(float *dst, const uint16_t *src, size_t count, int acc, ST) {
    UNUSED;
    pf_ref_bf16_to_f32_acc(dst, src, count, acc);
    return 0;
}
int pf_cuda_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range, ST) {
    UNUSED;
    pf_ref_mean_shift(y, x, n, c, h, w, mean, range);
    return 0;
}
int pf_cuda_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range, ST) {
    UNUSED;
    pf_ref_mean_unshift(y, x, n, c, h, w, mean, range);
    return 0;
}
int pf_cuda_add_scaled(float *y, const float *a, const float *b, float s, size_t count, ST) {
    UNUSED;
    pf_ref_add_scaled(y, a, b, s, count);
    return 0;
}
int pf_cuda_scale(float *y, const float *x, float s, size_t count, ST) {
    UNUSED;
    pf_ref_scale(y, x, s, count);
    return 0;
}
int pf_cuda_axpy(float *y, const float *x, float s, size_t count, ST) {
    UNUSED;
    pf_ref_axpy(y, x, s, count);
    return 0;
}
int pf_cuda_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                                  ST) {
    UNUSED;
    pf_ref_pixel_shuffle_forward(out, in, n, c, h, w, r);
    return 0;
}
int pf_cuda_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w, int r,
                                   ST) {
    UNUSED;
    pf_ref_pixel_shuffle_backward(din, dout, n, c, h, w, r);
    return 0;
}
int pf_cuda_l1_loss(float *l, float *grad, const float *x, const float *y, size_t count,
                    float weight, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    *l = pf_ref_pixel_loss(PF_REF_L1, grad, x, y, count, weight, 0);
    return 0;
}
int pf_cuda_mse_loss(float *l, float *grad, const float *x, const float *y, size_t count,
                     float weight, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    *l = pf_ref_pixel_loss(PF_REF_MSE, grad, x, y, count, weight, 0);
    return 0;
}
int pf_cuda_charbonnier_loss(float *l, float *grad, const float *x, const float *y,
                             size_t count, float weight, float eps, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    *l = pf_ref_pixel_loss(PF_REF_CHARBONNIER, grad, x, y, count, weight, eps);
    return 0;
}
int pf_cuda_pixel_loss(const char *type, float *l, float *grad, const float *x, const float *y,
                       size_t count, float weight, float eps, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    int t = !strcmp(type, "L1Loss") ? PF_REF_L1 : !strcmp(type, "MSELoss") ? PF_REF_MSE
          : !strcmp(type, "CharbonnierLoss") ? PF_REF_CHARBONNIER : -1;
    if (t < 0) {
        snprintf(err, errlen, "unknown loss type '%s'", type);
        return -1;
    }
    *l = pf_ref_pixel_loss((pf_ref_loss)t, grad, x, y, count, weight, eps);
    return 0;
}
int pf_cuda_leaky_relu_forward(float *y, const float *x, float alpha, size_t count, ST) {
    UNUSED;
    pf_ref_leaky_relu_forward(y, x, alpha, count);
    return 0;
}
int pf_cuda_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count, ST) {
    UNUSED;
    pf_ref_leaky_relu_backward(dx, dy, y, alpha, count);
    return 0;
}
int pf_cuda_relu_node_backward(float *dx, const float *dy, const float *y, float alpha,
                               size_t count, int acc, ST) {
    UNUSED;
    pf_ref_relu_node_backward(dx, dy, y, alpha, count, acc);
    return 0;
}
int pf_cuda_relu_forward(float *y, const float *x, size_t count, ST) {
    return pf_cuda_leaky_relu_forward(y, x, 0.0f, count, stream, err, errlen);
}
int pf_cuda_relu_backward(float *dx, const float *dy, const float *y, size_t count, ST) {
    return pf_cuda_leaky_relu_backward(dx, dy, y, 0.0f, count, stream, err, errlen);
}
int pf_cuda_prelu_forward(float *y, const float *x, const float *al, int n, int c, int h, int w,
                          ST) {
    UNUSED;
    pf_ref_prelu_forward(y, x, al, n, c, h, w);
    return 0;
}
int pf_cuda_prelu_backward(float *dx, float *dal, const float *dy, const float *x, const float *al,
                           int n, int c, int h, int w, int acc, ST) {
    UNUSED;
    pf_ref_prelu_backward(dx, dal, dy, x, al, n, c, h, w, acc);
    return 0;
}
int pf_cuda_tanh_forward(float *y, const float *x, size_t count, ST) {
    UNUSED;
    pf_ref_tanh_forward(y, x, count);
    return 0;
}
int pf_cuda_sigmoid_forward(float *y, const float *x, size_t count, ST) {
    UNUSED;
    pf_ref_sigmoid_forward(y, x, count);
    return 0;
}
int pf_cuda_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc, ST) {
    UNUSED;
    pf_ref_tanh_backward(dx, dy, y, count, acc);
    return 0;
}
int pf_cuda_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                             ST) {
    UNUSED;
    pf_ref_sigmoid_backward(dx, dy, y, count, acc);
    return 0;
}
int pf_cuda_gap_forward(float *y, const float *x, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_ref_gap_forward(y, x, n, c, h, w);
    return 0;
}
int pf_cuda_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc, ST) {
    UNUSED;
    pf_ref_gap_backward(dx, dy, n, c, h, w, acc);
    return 0;
}
int pf_cuda_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w, ST) {
    UNUSED;
    pf_ref_mul_ch_forward(y, x, s, res, sc, n, c, h, w);
    return 0;
}
int pf_cuda_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x, const float *s,
                            float sc, int n, int c, int h, int w, int ax, int as, ST) {
    UNUSED;
    pf_ref_mul_ch_backward(dx, ds, dy, x, s, sc, n, c, h, w, ax, as);
    return 0;
}
int pf_cuda_copy_channels(float *dst, int dc, int doff, const float *src, int sc, int soff, int cc,
                          int n, int hw, int acc, ST) {
    UNUSED;
    pf_ref_copy_channels(dst, dc, doff, src, sc, soff, cc, n, hw, acc);
    return 0;
}
int pf_cuda_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r, ST) {
    UNUSED;
    pf_ref_nearest_forward(y, x, n, c, h, w, r);
    return 0;
}
int pf_cuda_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r, int acc,
                             ST) {
    UNUSED;
    pf_ref_nearest_backward(dx, dy, n, c, h, w, r, acc);
    return 0;
}
int pf_cuda_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r, ST) {
    UNUSED;
    pf_ref_bilinear_u8(y, lq, n, h, w, r);
    return 0;
}
int pf_cuda_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r, ST) {
    UNUSED;
    pf_ref_bicubic_u8(y, lq, n, h, w, r);
    return 0;
}
int pf_cuda_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per, ST) {
    UNUSED;
    pf_ref_gather_sum(dst, src, idx, count, per);
    return 0;
}

/* ---- optimiser ranges: nn/optim.c itself on one range (the reference the kernels follow) */

#include "nn/optim.h"

/* One group over [0, count) with lr_mult 1 (write) or 0 (state only), step - 1 steps taken. */
static void optim_range(pf_optim_kind kind, float *p, const float *g, float *m, float *v,
                        float *buf, size_t count, float lr, const pf_optim_settings *s,
                        int64_t step, int write) {
    pf_optim o = {0};
    o.s = *s;
    o.s.kind = kind;
    o.n = count;
    o.step = step - 1;
    o.exp_avg = m, o.exp_avg_sq = v, o.momentum_buffer = buf;
    pf_optim_group grp = {0, count, write ? 1.0f : 0.0f, 1.0f, 0};
    o.groups = &grp;
    o.n_groups = 1;
    pf_optim_step(&o, p, g, lr);
}

int pf_cuda_adam_range(float *params, const float *grads, float *m, float *v, size_t count,
                       float lr, float beta1, float beta2, float eps, float weight_decay,
                       int decoupled, int write, int64_t step, cudaStream_t stream, char *err,
                       size_t errlen) {
    UNUSED;
    pf_optim_settings s = {PF_OPTIM_ADAM, beta1, beta2, eps, weight_decay, 0, 0, 0};
    optim_range(decoupled ? PF_OPTIM_ADAMW : PF_OPTIM_ADAM, params, grads, m, v, NULL, count,
                lr, &s, step, write);
    return 0;
}

int pf_cuda_sgd_range(float *params, const float *grads, float *buf, size_t count, float lr,
                      float momentum, float dampening, int nesterov, float weight_decay,
                      int first, int write, cudaStream_t stream, char *err, size_t errlen) {
    UNUSED;
    pf_optim_settings s = {PF_OPTIM_SGD, 0, 0, 0, weight_decay, momentum, dampening, nesterov};
    optim_range(PF_OPTIM_SGD, params, grads, NULL, NULL, buf, count, lr, &s, first ? 1 : 2,
                write);
    return 0;
}

int pf_cuda_ema_update(float *ema, const float *params, size_t count, float decay, ST) {
    UNUSED;
    pf_ref_ema_update(ema, params, count, decay);
    return 0;
}

int pf_cuda_clip_grad_norm(float *grads, size_t count, float max_norm, double *scratch,
                           float *norm, cudaStream_t stream, char *err, size_t errlen) {
    UNUSED;
    (void)scratch;
    *norm = (float)pf_clip_grad_norm(grads, count, max_norm);
    return 0;
}

/* ---- video ops: nn/video_layers.h's CPU kernels with plain layout (block 1), which
   tests/test_video_layers checks against PyTorch; they accumulate, so acc 0 zeroes first ---- */
#include "nn/video_layers.h"

static void zero_unless(float *d, int acc, size_t count) {
    if (d && !acc) memset(d, 0, count * sizeof(float));
}
int pf_cuda_affine_ch(float *y, const float *x, int n, int c, int h, int w, const float *sub,
                      const float *mul, int acc, ST) {
    UNUSED;
    pf_ref_affine_ch(y, x, n, c, h, w, sub, mul, acc);
    return 0;
}
int pf_cuda_resize_bilinear_forward(float *y, const float *x, int n, int c, int h, int w, int H,
                                    int W, int ac, const float *mult, ST) {
    UNUSED;
    pf_resize_bilinear_forward(y, x, n, c, h, w, H, W, ac, mult, 1, 1);
    return 0;
}
int pf_cuda_resize_bilinear_backward(float *dx, const float *dy, int n, int c, int h, int w,
                                     int H, int W, int ac, const float *mult, int acc, ST) {
    UNUSED;
    zero_unless(dx, acc, (size_t)n * c * h * w);
    pf_resize_bilinear_backward(dx, dy, n, c, h, w, H, W, ac, mult, 1, 1);
    return 0;
}
int pf_cuda_avgpool2_forward(float *y, const float *x, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_avgpool2_forward(y, x, n, c, h, w, 1, 1);
    return 0;
}
int pf_cuda_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                              ST) {
    UNUSED;
    pf_ref_avgpool2_backward(dx, dy, n, c, h, w, acc);
    return 0;
}
int pf_cuda_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_ref_maxpool2_forward(y, x, n, c, h, w);
    return 0;
}
int pf_cuda_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int acc, ST) {
    UNUSED;
    pf_ref_maxpool2_backward(dx, dy, x, n, c, h, w, acc);
    return 0;
}
int pf_cuda_flow_warp_forward(float *y, const float *x, const float *flow, int n, int c, int h,
                              int w, int pad, ST) {
    UNUSED;
    pf_flow_warp_forward(y, x, flow, n, c, h, w, (pf_pad_mode)pad, 1, 1, 1);
    return 0;
}
size_t pf_cuda_flow_warp_scratch_bytes(size_t count) {
    return 16 + count * 8;
}
int pf_cuda_flow_warp_backward(float *dx, float *dflow, const float *dy, const float *x,
                               const float *flow, int n, int c, int h, int w, int pad,
                               int acc_x, int acc_f, void *scratch, ST) {
    UNUSED;
    if (dx && !scratch) {
        snprintf(err, errlen, "pf_cuda_flow_warp_backward: no scratch for dx");
        return -1;
    }
    zero_unless(dx, acc_x, (size_t)n * c * h * w);
    zero_unless(dflow, acc_f, (size_t)n * 2 * h * w);
    pf_flow_warp_backward(dx, dflow, dy, x, flow, n, c, h, w, (pf_pad_mode)pad, 1, 1, 1);
    return 0;
}

/* ---- modulated deformable convolution's sampling: ref_ops.c's naive loops ---- */
static pf_ref_dcn ref_dcn(const pf_cuda_dcn_shape *s) {
    pf_ref_dcn r = { s->n, s->cin, s->h, s->w, s->k, s->stride, s->pad, s->dil, s->dg, s->ho,
                     s->wo };
    return r;
}
int pf_cuda_dcn_columns(float *col, const float *x, const float *off, const float *mask,
                        const pf_cuda_dcn_shape *s, ST) {
    UNUSED;
    pf_ref_dcn r = ref_dcn(s);
    pf_ref_dcn_columns(&r, col, x, off, mask);
    return 0;
}
size_t pf_cuda_dcn_scratch_bytes(const pf_cuda_dcn_shape *s) {
    return (size_t)s->n * s->cin * s->h * s->w * sizeof(double) + 16;
}
int pf_cuda_dcn_columns_backward(float *dx, float *doff, float *dmask, float *dcol,
                                 const float *x, const float *off, const float *mask,
                                 const pf_cuda_dcn_shape *s, int acc_x, int acc_off,
                                 int acc_mask, void *scratch, ST) {
    UNUSED;
    if (dx && !scratch) {
        snprintf(err, errlen, "pf_cuda_dcn_columns_backward: no scratch for dx");
        return -1;
    }
    pf_ref_dcn r = ref_dcn(s);
    /* one acc flag per call of the reference */
    pf_ref_dcn_columns_backward(&r, dx, NULL, NULL, dcol, x, off, mask, acc_x);
    pf_ref_dcn_columns_backward(&r, NULL, doff, NULL, dcol, x, off, mask, acc_off);
    pf_ref_dcn_columns_backward(&r, NULL, NULL, dmask, dcol, x, off, mask, acc_mask);
    return 0;
}
int pf_cuda_bias_add(float *y, const float *bias, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_ref_bias_add(y, bias, n, c, h, w);
    return 0;
}
int pf_cuda_bias_backward(float *dbias, const float *dy, int n, int c, int h, int w, int acc,
                          ST) {
    UNUSED;
    pf_ref_bias_backward(dbias, dy, n, c, h, w, acc);
    return 0;
}
int pf_cuda_sn_forward(float *weight, float *u, float *v, float *sigma,
                       const float *weight_orig, int rows, int cols, float eps, int training,
                       double *scratch, ST) {
    UNUSED, (void)scratch;
    pf_ref_sn_forward(weight, u, v, sigma, weight_orig, rows, cols, eps, training);
    return 0;
}
int pf_cuda_sn_backward(float *d_weight_orig, const float *d_weight, const float *weight_orig,
                        const float *u, const float *v, const float *sigma, int rows, int cols,
                        double *scratch, ST) {
    UNUSED, (void)scratch;
    pf_ref_sn_backward(d_weight_orig, d_weight, weight_orig, u, v, sigma, rows, cols);
    return 0;
}

int pf_cuda_batchnorm_train_forward(float *y, const float *x, const float *weight,
                                    const float *bias, float *running, double *save, int n,
                                    int c, int h, int w, double eps, double momentum, ST) {
    UNUSED;
    if (!c || !n || !h || !w) return 0;
    if (pf_ref_batchnorm_train(y, x, weight, bias, running, save, n, c, h, w, eps, momentum)) {
        snprintf(err, errlen, "pf_cuda_batchnorm_train_forward: a training batch of one value "
                 "per channel (N H W < 2)");
        return -1;
    }
    return 0;
}
int pf_cuda_batchnorm_eval_forward(float *y, const float *x, const float *weight,
                                   const float *bias, const float *running, int n, int c, int h,
                                   int w, double eps, ST) {
    UNUSED;
    pf_ref_batchnorm_eval(y, x, weight, bias, running, n, c, h, w, eps);
    return 0;
}
int pf_cuda_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, int h, int w, int acc, ST) {
    UNUSED;
    pf_ref_batchnorm_backward(dx, dweight, dbias, dy, x, weight, save, n, c, h, w, acc);
    return 0;
}

/* EDVR's TSA-fusion ops: the CPU executor's kernels (nn/cpu/ops.h) in plain NCHW (block 1),
   which test_graph_video checks against naive loops and torch */
int pf_cuda_mul_forward(float *y, const float *x0, const float *x1, const float *r, float sc,
                        int n, int c, int c1, int h, int w, ST) {
    UNUSED;
    pf_cpu_mul_forward(y, x0, x1, r, sc, n, c, c1, h, w, 1, 1, 1, 1);
    return 0;
}
int pf_cuda_mul_backward(float *dx0, float *dx1, const float *dy, const float *x0,
                         const float *x1, float sc, int n, int c, int c1, int h, int w,
                         int acc0, int acc1, ST) {
    UNUSED;
    pf_cpu_mul_backward(dx0, dx1, dy, x0, x1, sc, n, c, c1, h, w, 1, 1, 1, acc0, acc1);
    return 0;
}
int pf_cuda_chsum_forward(float *y, const float *x, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_cpu_chsum_forward(y, x, n, c, h, w, 1, 1);
    return 0;
}
int pf_cuda_chsum_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc, ST) {
    UNUSED;
    pf_cpu_chsum_backward(dx, dy, n, c, h, w, 1, 1, acc);
    return 0;
}
int pf_cuda_pool3_forward(float *y, const float *x, int max, int n, int c, int h, int w, ST) {
    UNUSED;
    pf_cpu_pool3_forward(y, x, max, n, c, h, w, 1, 1);
    return 0;
}
int pf_cuda_pool3_backward(float *dx, const float *dy, const float *x, int max, int n, int c,
                           int h, int w, int acc, ST) {
    UNUSED;
    pf_cpu_pool3_backward(dx, dy, x, max, n, c, h, w, 1, 1, acc);
    return 0;
}
