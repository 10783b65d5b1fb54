/*  host_ops — naive stand-ins for nn/cuda/ops.h's kernels, run on the host, so
    test_model_cuda_host and test_optim_cuda_host can check the CUDA backend's host code
    (nn/cuda/model_cuda.c, graph_cuda.c, optim_cuda.c: descriptions, plans, gradient
    bookkeeping, the optimiser's group loop) independently of the kernels. Every op is a naive
    loop written from its contract in ops.h, independent of nn/graph.c's kernels; pixel shuffle
    and bicubic use the CPU backend's functions with plain layout (block 1). The runtime calls
    are host_runtime.c's, the convolutions host_cudnn.c's. The real kernels (nn/cuda/ops.cu) run
    in the other build of these tests, under tests/cuda_emu, and on a GPU in bench/gpu/gpu_check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/ops.h"
#include "nn/layers.h"

#define ST cudaStream_t stream, char *err, size_t errlen
#define UNUSED (void)stream, (void)err, (void)errlen
static float A(int acc, float old) {
    return acc ? old : 0.0f;
}

int pf_cuda_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c, ST) {
    UNUSED;
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    dst[(((size_t)b * c + ch) * h + y) * w + x] =
                        src[(((size_t)b * h + y) * w + x) * c + ch] / 255.0f;
    return 0;
}
int pf_cuda_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = (x[i] - (mean ? mean[(i / hw) % c] : 0.0f)) * range;
    return 0;
}
int pf_cuda_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = x[i] / range + (mean ? mean[(i / hw) % c] : 0.0f);
    return 0;
}
int pf_cuda_add_scaled(float *y, const float *a, const float *b, float s, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] = a[i] + s * b[i];
    return 0;
}
int pf_cuda_scale(float *y, const float *x, float s, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] = s * x[i];
    return 0;
}
int pf_cuda_axpy(float *y, const float *x, float s, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] += s * x[i];
    return 0;
}
int pf_cuda_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                                  ST) {
    UNUSED;
    pf_pixel_shuffle_forward(out, in, n, c, h, w, r, 1, 1);
    return 0;
}
int pf_cuda_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w, int r,
                                   ST) {
    UNUSED;
    pf_pixel_shuffle_backward(din, dout, n, c, h, w, r, 1, 1);
    return 0;
}
/* type 0 L1, 1 MSE, 2 Charbonnier (sqrt(d^2 + eps)); in double */
static int loss(int type, float *l, float *grad, const float *x, const float *y, size_t count,
                float weight, float eps) {
    double s = 0;
    for (size_t i = 0; i < count; i++) {
        double d = (double)x[i] - y[i], r = sqrt(d * d + eps);
        s += type == 0 ? fabs(d) : type == 1 ? d * d : r;
        double g = type == 0 ? (d > 0 ? 1 : d < 0 ? -1 : 0) : type == 1 ? 2 * d : d / r;
        if (grad) grad[i] = (float)(weight * g / (double)count);
    }
    *l = (float)(weight * s / count);
    return 0;
}
int pf_cuda_l1_loss(float *l, float *grad, const float *x, const float *y, size_t count,
                    float weight, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    return loss(0, l, grad, x, y, count, weight, 0);
}
int pf_cuda_mse_loss(float *l, float *grad, const float *x, const float *y, size_t count,
                     float weight, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    return loss(1, l, grad, x, y, count, weight, 0);
}
int pf_cuda_charbonnier_loss(float *l, float *grad, const float *x, const float *y,
                             size_t count, float weight, float eps, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    return loss(2, l, grad, x, y, count, weight, eps);
}
int pf_cuda_pixel_loss(const char *type, float *l, float *grad, const float *x, const float *y,
                       size_t count, float weight, float eps, double *scratch, ST) {
    UNUSED;
    (void)scratch;
    int t = !strcmp(type, "L1Loss") ? 0 : !strcmp(type, "MSELoss") ? 1
          : !strcmp(type, "CharbonnierLoss") ? 2 : -1;
    if (t < 0) {
        snprintf(err, errlen, "unknown loss type '%s'", type);
        return -1;
    }
    return loss(t, l, grad, x, y, count, weight, eps);
}
int pf_cuda_leaky_relu_forward(float *y, const float *x, float alpha, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] = x[i] > 0 ? x[i] : alpha * x[i];
    return 0;
}
int pf_cuda_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        dx[i] = y[i] > 0 ? dy[i] : alpha * dy[i];
    return 0;
}
int pf_cuda_prelu_forward(float *y, const float *x, const float *al, int n, int c, int h, int w,
                          ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = x[i] > 0 ? x[i] : al[(i / hw) % c] * x[i];
    return 0;
}
int pf_cuda_prelu_backward(float *dx, float *dal, const float *dy, const float *x, const float *al,
                           int n, int c, int h, int w, int acc, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    double *s = calloc(c, sizeof *s);
    for (size_t i = 0; i < (size_t)n * c * hw; i++) {
        int ch = (i / hw) % c;
        if (dx)
            dx[i] = A(acc, dx[i]) + (x[i] > 0 ? dy[i] : al[ch] * dy[i]);
        if (!(x[i] > 0))
            s[ch] += (double)dy[i] * x[i];
    }
    for (int k = 0; k < c; k++)
        dal[k] = (float)s[k];
    free(s);
    return 0;
}
int pf_cuda_tanh_forward(float *y, const float *x, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] = tanhf(x[i]);
    return 0;
}
int pf_cuda_sigmoid_forward(float *y, const float *x, size_t count, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        y[i] = 1.0f / (1.0f + expf(-x[i]));
    return 0;
}
int pf_cuda_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        dx[i] = A(acc, dx[i]) + dy[i] * (1 - y[i] * y[i]);
    return 0;
}
int pf_cuda_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                             ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++)
        dx[i] = A(acc, dx[i]) + dy[i] * y[i] * (1 - y[i]);
    return 0;
}
int pf_cuda_gap_forward(float *y, const float *x, int n, int c, int h, int w, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t k = 0; k < (size_t)n * c; k++) {
        double s = 0;
        for (size_t p = 0; p < hw; p++)
            s += x[k * hw + p];
        y[k] = (float)(s / hw);
    }
    return 0;
}
int pf_cuda_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t k = 0; k < (size_t)n * c; k++)
        for (size_t p = 0; p < hw; p++)
            dx[k * hw + p] = A(acc, dx[k * hw + p]) + dy[k] / (float)hw;
    return 0;
}
int pf_cuda_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = (res ? res[i] : 0.0f) + sc * x[i] * s[i / hw];
    return 0;
}
int pf_cuda_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x, const float *s,
                            float sc, int n, int c, int h, int w, int ax, int as, ST) {
    UNUSED;
    size_t hw = (size_t)h * w;
    for (size_t k = 0; k < (size_t)n * c; k++) {
        double t = 0;
        for (size_t p = 0; p < hw; p++) {
            size_t i = k * hw + p;
            if (dx)
                dx[i] = A(ax, dx[i]) + sc * dy[i] * s[k];
            t += (double)dy[i] * x[i];
        }
        if (ds)
            ds[k] = A(as, ds[k]) + (float)(sc * t);
    }
    return 0;
}
int pf_cuda_copy_channels(float *dst, int dc, int doff, const float *src, int sc, int soff, int cc,
                          int n, int hw, int acc, ST) {
    UNUSED;
    for (int b = 0; b < n; b++)
        for (int k = 0; k < cc; k++)
            for (int p = 0; p < hw; p++) {
                float *d = &dst[((size_t)b * dc + doff + k) * hw + p];
                *d = A(acc, *d) + src[((size_t)b * sc + soff + k) * hw + p];
            }
    return 0;
}
int pf_cuda_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r, ST) {
    UNUSED;
    for (size_t k = 0; k < (size_t)n * c; k++)
        for (int Y = 0; Y < h * r; Y++)
            for (int X = 0; X < w * r; X++)
                y[(k * h * r + Y) * w * r + X] = x[(k * h + Y / r) * w + X / r];
    return 0;
}
int pf_cuda_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r, int acc,
                             ST) {
    UNUSED;
    for (size_t k = 0; k < (size_t)n * c; k++)
        for (int yy = 0; yy < h; yy++)
            for (int xx = 0; xx < w; xx++) {
                double s = 0;
                for (int i = 0; i < r; i++)
                    for (int j = 0; j < r; j++)
                        s += dy[(k * h * r + yy * r + i) * w * r + xx * r + j];
                float *d = &dx[(k * h + yy) * w + xx];
                *d = A(acc, *d) + (float)s;
            }
    return 0;
}
int pf_cuda_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r, ST) {
    UNUSED;
    int H = h * r, W = w * r;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < W; ox++) {
                double sy = (oy + 0.5) / r - 0.5, sx = (ox + 0.5) / r - 0.5;
                if (sy < 0)
                    sy = 0;
                if (sx < 0)
                    sx = 0;
                int y0 = (int)sy, x0 = (int)sx, y1 = y0 + (y0 < h - 1), x1 = x0 + (x0 < w - 1);
                double ly = sy - y0, lx = sx - x0;
                for (int c = 0; c < 3; c++) {
#define P(yy, xx) (lq[(((size_t)b * h + (yy)) * w + (xx)) * 3 + c] / 255.0)
                    y[(((size_t)b * 3 + c) * H + oy) * W + ox] =
                        (float)((1 - ly) * ((1 - lx) * P(y0, x0) + lx * P(y0, x1)) +
                                ly * ((1 - lx) * P(y1, x0) + lx * P(y1, x1)));
#undef P
                }
            }
    return 0;
}
int pf_cuda_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r, ST) {
    UNUSED;
    pf_bicubic_upsample_image(y, lq, n, h, w, r, 1);
    return 0;
}
int pf_cuda_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per, ST) {
    UNUSED;
    for (size_t i = 0; i < count; i++) {
        float s = 0;
        for (int j = 0; j < per; j++) {
            int k = idx[i * per + j];
            if (k >= 0)
                s += src[k];
        }
        dst[i] = s;
    }
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
    float a = (float)(1.0 - (double)decay);
    for (size_t i = 0; i < count; i++) ema[i] = ema[i] * decay + a * params[i];
    return 0;
}

int pf_cuda_clip_grad_norm(float *grads, size_t count, float max_norm, double *scratch,
                           float *norm, cudaStream_t stream, char *err, size_t errlen) {
    UNUSED;
    (void)scratch;
    *norm = (float)pf_clip_grad_norm(grads, count, max_norm);
    return 0;
}

int pf_cuda_relu_forward(float *y, const float *x, size_t count, ST) {
    return pf_cuda_leaky_relu_forward(y, x, 0.0f, count, stream, err, errlen);
}
int pf_cuda_relu_backward(float *dx, const float *dy, const float *y, size_t count, ST) {
    return pf_cuda_leaky_relu_backward(dx, dy, y, 0.0f, count, stream, err, errlen);
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
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++) {
        int k = (int)(i / hw % (size_t)c);
        y[i] = A(acc, y[i]) + (x[i] - (sub ? sub[k] : 0.0f)) * mul[k];
    }
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
    for (size_t p = 0; p < (size_t)n * c; p++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float *d = &dx[(p * h + y) * w + x];
                *d = A(acc, *d) + 0.25f * dy[(p * (h / 2) + y / 2) * (w / 2) + x / 2];
            }
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
