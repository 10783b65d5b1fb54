/*  ref_ops — naive host references for nn/cuda's kernels and convolutions (ref_ops.h says who
    uses them and why they depend on nothing but libm). */
#include "tests/cuda_host/ref_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* acc ? old + v : v, in double */
static float put(int acc, float old, double v) {
    return (float)(acc ? (double)old + v : v);
}

uint16_t pf_ref_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float pf_ref_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void pf_ref_f32_to_bf16(uint16_t *dst, const float *src, size_t count) {
    for (size_t i = 0; i < count; i++) dst[i] = pf_ref_bf16(src[i]);
}

void pf_ref_bf16_to_f32_acc(float *dst, const uint16_t *src, size_t count, int acc) {
    for (size_t i = 0; i < count; i++) {
        float v = pf_ref_bf16_to_f32(src[i]);
        dst[i] = acc ? dst[i] + v : v;
    }
}

void pf_ref_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c) {
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    dst[(((size_t)b * c + ch) * h + y) * w + x] =
                        (float)src[(((size_t)b * h + y) * w + x) * c + ch] / 255.0f;
}

void pf_ref_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = (x[i] - (mean ? mean[(i / hw) % c] : 0.0f)) * range;
}

void pf_ref_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = x[i] / range + (mean ? mean[(i / hw) % c] : 0.0f);
}

void pf_ref_add_scaled(float *y, const float *a, const float *b, float s, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = a[i] + s * b[i];
}

void pf_ref_scale(float *y, const float *x, float s, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = s * x[i];
}

void pf_ref_axpy(float *y, const float *x, float s, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] += s * x[i];
}

/* index of in[b][ch r^2 + i r + j][y][x] and out[b][ch][y r + i][x r + j] */
#define PS_IN(b, ch, i, j, y, x) \
    ((((size_t)(b) * c * r * r + (size_t)(ch) * r * r + (size_t)(i) * r + (j)) * h + (y)) * w + (x))
#define PS_OUT(b, ch, i, j, y, x) \
    ((((size_t)(b) * c + (ch)) * h * r + (size_t)(y) * r + (i)) * w * r + (size_t)(x) * r + (j))

void pf_ref_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r) {
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int i = 0; i < r; i++)
                        for (int j = 0; j < r; j++)
                            out[PS_OUT(b, ch, i, j, y, x)] = in[PS_IN(b, ch, i, j, y, x)];
}

void pf_ref_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w,
                                   int r) {
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int i = 0; i < r; i++)
                        for (int j = 0; j < r; j++)
                            din[PS_IN(b, ch, i, j, y, x)] = dout[PS_OUT(b, ch, i, j, y, x)];
}
#undef PS_IN
#undef PS_OUT

float pf_ref_pixel_loss(pf_ref_loss type, float *grad, const float *x, const float *y,
                        size_t count, float weight, float eps) {
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = (double)x[i] - y[i], g;
        if (type == PF_REF_CHARBONNIER) {
            double r = sqrt(d * d + eps);
            sum += r;
            g = d / r;
        } else if (type == PF_REF_MSE) {
            sum += d * d;
            g = 2.0 * d;
        } else {
            sum += fabs(d);
            g = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;   /* sign(0) = 0, as torch */
        }
        if (grad) grad[i] = (float)(weight * g / (double)count);
    }
    return (float)(sum / (double)count * weight);
}

void pf_ref_leaky_relu_forward(float *y, const float *x, float alpha, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = x[i] > 0 ? x[i] : alpha * x[i];
}

void pf_ref_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count) {
    for (size_t i = 0; i < count; i++) dx[i] = y[i] > 0 ? dy[i] : alpha * dy[i];
}

void pf_ref_relu_node_backward(float *dx, const float *dy, const float *y, float alpha,
                               size_t count, int acc) {
    for (size_t i = 0; i < count; i++)
        dx[i] = put(acc, dx[i], y[i] > 0 ? (double)dy[i] : (double)alpha * dy[i]);
}

void pf_ref_prelu_forward(float *y, const float *x, const float *alpha, int n, int c, int h,
                          int w) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = x[i] > 0 ? x[i] : alpha[(i / hw) % c] * x[i];
}

void pf_ref_prelu_backward(float *dx, float *dalpha, const float *dy, const float *x,
                           const float *alpha, int n, int c, int h, int w, int acc) {
    size_t hw = (size_t)h * w;
    for (int ch = 0; ch < c; ch++) {
        double s = 0.0;
        for (int b = 0; b < n; b++)
            for (size_t p = 0; p < hw; p++) {
                size_t i = ((size_t)b * c + ch) * hw + p;
                if (dx) dx[i] = put(acc, dx[i], x[i] > 0 ? dy[i] : (double)alpha[ch] * dy[i]);
                if (!(x[i] > 0)) s += (double)dy[i] * x[i];
            }
        dalpha[ch] = (float)s;
    }
}

void pf_ref_tanh_forward(float *y, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = (float)tanh((double)x[i]);
}

void pf_ref_sigmoid_forward(float *y, const float *x, size_t count) {
    for (size_t i = 0; i < count; i++) y[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
}

void pf_ref_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc) {
    for (size_t i = 0; i < count; i++)
        dx[i] = put(acc, dx[i], (double)dy[i] * (1.0 - (double)y[i] * y[i]));
}

void pf_ref_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc) {
    for (size_t i = 0; i < count; i++)
        dx[i] = put(acc, dx[i], (double)dy[i] * y[i] * (1.0 - y[i]));
}

void pf_ref_gap_forward(float *y, const float *x, int n, int c, int h, int w) {
    size_t hw = (size_t)h * w;
    for (size_t q = 0; q < (size_t)n * c; q++) {
        double s = 0.0;
        for (size_t p = 0; p < hw; p++) s += x[q * hw + p];
        y[q] = (float)(s / (double)hw);
    }
}

void pf_ref_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc) {
    size_t hw = (size_t)h * w;
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (size_t p = 0; p < hw; p++)
            dx[q * hw + p] = put(acc, dx[q * hw + p], (double)dy[q] / (double)hw);
}

void pf_ref_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++)
        y[i] = (float)((res ? (double)res[i] : 0.0) + (double)sc * x[i] * s[i / hw]);
}

void pf_ref_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x,
                            const float *s, float sc, int n, int c, int h, int w, int acc_x,
                            int acc_s) {
    size_t hw = (size_t)h * w;
    for (size_t q = 0; q < (size_t)n * c; q++) {
        double sum = 0.0;
        for (size_t p = 0; p < hw; p++) {
            size_t i = q * hw + p;
            if (dx) dx[i] = put(acc_x, dx[i], (double)sc * dy[i] * s[q]);
            sum += (double)dy[i] * x[i];
        }
        if (ds) ds[q] = put(acc_s, ds[q], (double)sc * sum);
    }
}

void pf_ref_copy_channels(float *dst, int dc, int doff, const float *src, int sc, int soff,
                          int cc, int n, int hw, int acc) {
    for (int b = 0; b < n; b++)
        for (int k = 0; k < cc; k++)
            for (int p = 0; p < hw; p++) {
                float *d = &dst[((size_t)b * dc + doff + k) * hw + p];
                *d = put(acc, *d, src[((size_t)b * sc + soff + k) * hw + p]);
            }
}

void pf_ref_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r) {
    size_t H = (size_t)h * r, W = (size_t)w * r;
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (size_t Y = 0; Y < H; Y++)
            for (size_t X = 0; X < W; X++) y[(q * H + Y) * W + X] = x[(q * h + Y / r) * w + X / r];
}

void pf_ref_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r,
                             int acc) {
    size_t H = (size_t)h * r, W = (size_t)w * r;
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (int yy = 0; yy < h; yy++)
            for (int xx = 0; xx < w; xx++) {
                double s = 0.0;   /* each dy pixel goes to the pixel it was copied from */
                for (int i = 0; i < r; i++)
                    for (int j = 0; j < r; j++)
                        s += dy[(q * H + (size_t)yy * r + i) * W + (size_t)xx * r + j];
                float *d = &dx[(q * h + yy) * w + xx];
                *d = put(acc, *d, s);
            }
}

/* Keys' cubic convolution kernel (A = -0.75) at distance d. */
static double keys_cubic(double d) {
    const double A = -0.75;
    d = fabs(d);
    if (d <= 1.0) return ((A + 2.0) * d - (A + 3.0)) * d * d + 1.0;
    if (d < 2.0) return ((A * d - 5.0 * A) * d + 8.0 * A) * d - 4.0 * A;
    return 0.0;
}

static int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

#define LQ(b, yy, xx, ch) (lq[(((size_t)(b) * h + (yy)) * w + (xx)) * 3 + (ch)] / 255.0)
#define OUT(b, ch, Y, X) y[(((size_t)(b) * 3 + (ch)) * H + (Y)) * W + (X)]

void pf_ref_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r) {
    int H = h * r, W = w * r;
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < 3; ch++)
            for (int Y = 0; Y < H; Y++)
                for (int X = 0; X < W; X++) {
                    double sy = (Y + 0.5) / r - 0.5, sx = (X + 0.5) / r - 0.5;
                    double cy = sy < 0 ? 0 : sy, cx = sx < 0 ? 0 : sx;
                    int y0 = (int)floor(cy), x0 = (int)floor(cx);
                    int y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
                    double fy = cy - y0, fx = cx - x0;
                    double top = (1 - fx) * LQ(b, y0, x0, ch) + fx * LQ(b, y0, x1, ch);
                    double bottom = (1 - fx) * LQ(b, y1, x0, ch) + fx * LQ(b, y1, x1, ch);
                    OUT(b, ch, Y, X) = (float)((1 - fy) * top + fy * bottom);
                }
}

void pf_ref_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r) {
    int H = h * r, W = w * r;
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < 3; ch++)
            for (int Y = 0; Y < H; Y++)
                for (int X = 0; X < W; X++) {
                    double sy = (Y + 0.5) / r - 0.5, sx = (X + 0.5) / r - 0.5;
                    int iy = (int)floor(sy), ix = (int)floor(sx);
                    double v = 0.0;   /* taps floor(s) - 1 .. floor(s) + 2 */
                    for (int ty = iy - 1; ty <= iy + 2; ty++)
                        for (int tx = ix - 1; tx <= ix + 2; tx++)
                            v += keys_cubic(sy - ty) * keys_cubic(sx - tx) *
                                 LQ(b, clamp_int(ty, 0, h - 1), clamp_int(tx, 0, w - 1), ch);
                    OUT(b, ch, Y, X) = (float)v;
                }
}
#undef LQ
#undef OUT

void pf_ref_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per) {
    for (size_t i = 0; i < count; i++) {
        double s = 0.0;
        for (int j = 0; j < per; j++)
            if (idx[i * per + j] >= 0) s += src[idx[i * per + j]];
        dst[i] = (float)s;
    }
}

void pf_ref_ema_update(float *ema, const float *params, size_t count, float decay) {
    float a = (float)(1.0 - (double)decay);
    for (size_t i = 0; i < count; i++) ema[i] = ema[i] * decay + a * params[i];
}

void pf_ref_affine_ch(float *y, const float *x, int n, int c, int h, int w, const float *sub,
                      const float *mul, int acc) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++) {
        size_t k = i / hw % (size_t)c;
        y[i] = put(acc, y[i], ((double)x[i] - (sub ? sub[k] : 0.0f)) * mul[k]);
    }
}

void pf_ref_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc) {
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float *d = &dx[(q * h + y) * w + x];
                *d = put(acc, *d, 0.25 * dy[(q * (h / 2) + y / 2) * (w / 2) + x / 2]);
            }
}

/* Row-major index 0..3 of the maximum of x's window (q, Y, X): PyTorch's scan, a later value
   wins when greater or NaN (the first of equal values stays). */
static int ref_argmax2(const float *x, size_t q, int h, int w, int Y, int X) {
    int best = 0;
    for (int k = 1; k < 4; k++) {
        float v = x[(q * h + 2 * Y + k / 2) * w + 2 * X + k % 2];
        float m = x[(q * h + 2 * Y + best / 2) * w + 2 * X + best % 2];
        if (v > m || isnan(v)) best = k;
    }
    return best;
}

void pf_ref_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w) {
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (int Y = 0; Y < h / 2; Y++)
            for (int X = 0; X < w / 2; X++) {
                int k = ref_argmax2(x, q, h, w, Y, X);
                y[(q * (h / 2) + Y) * (w / 2) + X] = x[(q * h + 2 * Y + k / 2) * w + 2 * X + k % 2];
            }
}

void pf_ref_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int acc) {
    for (size_t q = 0; q < (size_t)n * c; q++)
        for (int y = 0; y < h; y++)
            for (int xx = 0; xx < w; xx++) {
                int k = ref_argmax2(x, q, h, w, y / 2, xx / 2);
                float *d = &dx[(q * h + y) * w + xx];
                double g = k == (y % 2) * 2 + xx % 2
                               ? dy[(q * (h / 2) + y / 2) * (w / 2) + xx / 2] : 0.0;
                *d = put(acc, *d, g);
            }
}

/* ---- convolution: stride `stride`, zero padding `pad` (stride 0: 1 and k / 2) ---- */
#define XI(b, ch, C, y, x) ((((size_t)(b) * (C) + (ch)) * s->h + (y)) * s->w + (x))
#define YI(b, ch, y, x) ((((size_t)(b) * s->oc + (ch)) * oh + (y)) * ow + (x))
#define WI(o, i, ky, kx) ((((size_t)(o) * s->ic + (i)) * s->k + (ky)) * s->k + (kx))

/* The geometry: stride, padding and output size (torch's floor rule). */
static void conv_geometry(const pf_ref_conv *s, int *st, int *p, int *oh, int *ow) {
    *st = s->stride > 0 ? s->stride : 1;
    *p = s->stride > 0 ? s->pad : s->k / 2;
    *oh = (s->h + 2 * *p - s->k) / *st + 1;
    *ow = (s->w + 2 * *p - s->k) / *st + 1;
}

void pf_ref_conv_forward(const pf_ref_conv *s, const float *x, const float *wt,
                         const float *bias, float *y) {
    int st, p, oh, ow;
    conv_geometry(s, &st, &p, &oh, &ow);
    for (int b = 0; b < s->n; b++)
        for (int o = 0; o < s->oc; o++)
            for (int yy = 0; yy < oh; yy++)
                for (int xx = 0; xx < ow; xx++) {
                    double acc = bias ? bias[o] : 0.0;
                    for (int i = 0; i < s->ic; i++)
                        for (int ky = 0; ky < s->k; ky++) {
                            int sy = yy * st + ky - p;
                            if (sy < 0 || sy >= s->h) continue;
                            for (int kx = 0; kx < s->k; kx++) {
                                int sx = xx * st + kx - p;
                                if (sx < 0 || sx >= s->w) continue;
                                acc += (double)wt[WI(o, i, ky, kx)] * x[XI(b, i, s->ic, sy, sx)];
                            }
                        }
                    y[YI(b, o, yy, xx)] = (float)acc;
                }
}

void pf_ref_conv_backward_data(const pf_ref_conv *s, const float *wt, const float *dy,
                               float *dx, int acc) {
    int st, p, oh, ow;
    conv_geometry(s, &st, &p, &oh, &ow);
    for (int b = 0; b < s->n; b++)
        for (int i = 0; i < s->ic; i++)
            for (int sy = 0; sy < s->h; sy++)
                for (int sx = 0; sx < s->w; sx++) {
                    double sum = 0.0;
                    for (int o = 0; o < s->oc; o++)
                        for (int ky = 0; ky < s->k; ky++) {
                            int ty = sy - ky + p, yy = ty / st;   /* sy = yy st + ky - p */
                            if (ty < 0 || ty % st || yy >= oh) continue;
                            for (int kx = 0; kx < s->k; kx++) {
                                int tx = sx - kx + p, xx = tx / st;
                                if (tx < 0 || tx % st || xx >= ow) continue;
                                sum += (double)wt[WI(o, i, ky, kx)] * dy[YI(b, o, yy, xx)];
                            }
                        }
                    float *d = &dx[XI(b, i, s->ic, sy, sx)];
                    *d = put(acc, *d, sum);
                }
}

void pf_ref_conv_backward_filter(const pf_ref_conv *s, const float *x, const float *dy,
                                 float *dw, int acc) {
    int st, p, oh, ow;
    conv_geometry(s, &st, &p, &oh, &ow);
    for (int o = 0; o < s->oc; o++)
        for (int i = 0; i < s->ic; i++)
            for (int ky = 0; ky < s->k; ky++)
                for (int kx = 0; kx < s->k; kx++) {
                    double sum = 0.0;
                    for (int b = 0; b < s->n; b++)
                        for (int yy = 0; yy < oh; yy++) {
                            int sy = yy * st + ky - p;
                            if (sy < 0 || sy >= s->h) continue;
                            for (int xx = 0; xx < ow; xx++) {
                                int sx = xx * st + kx - p;
                                if (sx < 0 || sx >= s->w) continue;
                                sum += (double)dy[YI(b, o, yy, xx)] *
                                       x[XI(b, i, s->ic, sy, sx)];
                            }
                        }
                    float *d = &dw[WI(o, i, ky, kx)];
                    *d = put(acc, *d, sum);
                }
}

void pf_ref_conv_backward_bias(const pf_ref_conv *s, const float *dy, float *db, int acc) {
    int st, p, oh, ow;
    conv_geometry(s, &st, &p, &oh, &ow);
    size_t hw = (size_t)oh * ow;
    for (int o = 0; o < s->oc; o++) {
        double sum = 0.0;
        for (int b = 0; b < s->n; b++)
            for (size_t q = 0; q < hw; q++) sum += dy[((size_t)b * s->oc + o) * hw + q];
        db[o] = put(acc, db[o], sum);
    }
}
#undef YI
#undef XI
#undef WI

/* ---- modulated deformable convolution's sampling (nn/cpu/dcn.h's contract) ---- */

/* Pixel (y, x) of plane xc, 0 outside. */
static double dcn_pix(const float *xc, int h, int w, int y, int x) {
    return y >= 0 && y < h && x >= 0 && x < w ? xc[(size_t)y * w + x] : 0.0;
}

/* The sample of plane xc at (py, px) and its slopes (torchvision's bilinear_interpolate and
   get_coordinate_weight): all 0 outside [-1, H) x [-1, W); at -1 the value is 0 but the
   slope is the cell's. */
static double dcn_sample(const float *xc, int h, int w, double py, double px, double *gy,
                         double *gx) {
    *gy = *gx = 0.0;
    if (py < -1 || py >= h || px < -1 || px >= w) return 0.0;
    int y0 = (int)floor(py), x0 = (int)floor(px);
    double ly = py - y0, lx = px - x0;
    double a = dcn_pix(xc, h, w, y0, x0), b = dcn_pix(xc, h, w, y0, x0 + 1);
    double c = dcn_pix(xc, h, w, y0 + 1, x0), d = dcn_pix(xc, h, w, y0 + 1, x0 + 1);
    *gy = lx * (d - b) + (1 - lx) * (c - a);
    *gx = ly * (d - c) + (1 - ly) * (b - a);
    return (1 - ly) * (1 - lx) * a + (1 - ly) * lx * b + ly * (1 - lx) * c + ly * lx * d;
}

/* One sample (n, c, t, oy, ox): where it reads and writes, and its position. */
typedef struct {
    size_t col, plane, off_y, off_x, m;     /* indices into col, x (plane), offset, mask */
    double py, px;
} dcn_at;

static dcn_at dcn_index(const pf_ref_dcn *s, const float *off, int n, int c, int t, int oy,
                        int ox) {
    int kk = s->k * s->k, d = c / (s->cin / s->dg);
    size_t P = (size_t)s->ho * s->wo, p = (size_t)oy * s->wo + ox;
    dcn_at a;
    a.col = ((size_t)c * kk + t) * s->n * P + (size_t)n * P + p;
    a.plane = ((size_t)n * s->cin + c) * s->h * s->w;
    a.off_y = ((size_t)n * 2 * s->dg * kk + 2 * ((size_t)d * kk + t)) * P + p;
    a.off_x = a.off_y + P;
    a.m = ((size_t)n * s->dg * kk + (size_t)d * kk + t) * P + p;
    a.py = (double)(oy * s->stride - s->pad + (t / s->k) * s->dil) + off[a.off_y];
    a.px = (double)(ox * s->stride - s->pad + (t % s->k) * s->dil) + off[a.off_x];
    return a;
}

/* Calls f(a, ctx) for every (n, c, t, oy, ox) in that order. */
static void dcn_walk(const pf_ref_dcn *s, const float *off, void (*f)(const dcn_at *, void *),
                     void *ctx) {
    for (int n = 0; n < s->n; n++)
        for (int c = 0; c < s->cin; c++)
            for (int t = 0; t < s->k * s->k; t++)
                for (int oy = 0; oy < s->ho; oy++)
                    for (int ox = 0; ox < s->wo; ox++) {
                        dcn_at a = dcn_index(s, off, n, c, t, oy, ox);
                        f(&a, ctx);
                    }
}

typedef struct {
    const pf_ref_dcn *s;
    float *col;
    const float *dcol, *x, *mask;
    double *gx, *go, *gm;   /* backward: the sums of x's, the offsets' and the mask's */
} dcn_walker;

static void dcn_column(const dcn_at *a, void *ctx) {
    dcn_walker *w = ctx;
    double gy, gx;
    w->col[a->col] = (float)(w->mask[a->m] * dcn_sample(w->x + a->plane, w->s->h, w->s->w, a->py,
                                                        a->px, &gy, &gx));
}

void pf_ref_dcn_columns(const pf_ref_dcn *s, float *col, const float *x, const float *off,
                        const float *mask) {
    dcn_walker w = { .s = s, .col = col, .x = x, .mask = mask };
    dcn_walk(s, off, dcn_column, &w);
}

/* x's gradient: each sample's four neighbours get dcol mask times their bilinear weight. */
static void dcn_scatter(double *dx, const pf_ref_dcn *s, const dcn_at *a, double g) {
    if (a->py <= -1 || a->py >= s->h || a->px <= -1 || a->px >= s->w) return;
    int y0 = (int)floor(a->py), x0 = (int)floor(a->px);
    double ly = a->py - y0, lx = a->px - x0;
    double wt[4] = { (1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx };
    for (int q = 0; q < 4; q++) {
        int y = y0 + (q >> 1), x = x0 + (q & 1);
        if (y >= 0 && y < s->h && x >= 0 && x < s->w)
            dx[a->plane + (size_t)y * s->w + x] += g * wt[q];
    }
}

static float dcn_put(int acc, float old, double v) { return (float)(acc ? old + v : v); }

/* One sample's share of the backward: x by the scatter, the mask by the sample, the offsets
   by its slopes; o indexes the mask (n dg kk + d kk + t) P + p. */
static void dcn_adjoint(const dcn_at *a, void *ctx) {
    dcn_walker *w = ctx;
    double g = w->dcol[a->col], m = w->mask[a->m], sy, sx;
    double v = dcn_sample(w->x + a->plane, w->s->h, w->s->w, a->py, a->px, &sy, &sx);
    w->gm[a->m] += g * v;
    w->go[2 * a->m] += g * m * sy;
    w->go[2 * a->m + 1] += g * m * sx;
    dcn_scatter(w->gx, w->s, a, g * m);
}

void pf_ref_dcn_columns_backward(const pf_ref_dcn *s, float *dx, float *doff, float *dmask,
                                 const float *dcol, const float *x, const float *off,
                                 const float *mask, int acc) {
    int kk = s->k * s->k;
    size_t nx = (size_t)s->n * s->cin * s->h * s->w, P = (size_t)s->ho * s->wo;
    size_t nm = (size_t)s->n * s->dg * kk * P;
    double *gx_ = calloc(nx + 1, sizeof *gx_), *go = calloc(2 * nm + 1, sizeof *go);
    double *gm = calloc(nm + 1, sizeof *gm);
    dcn_walker w = { .s = s, .dcol = dcol, .x = x, .mask = mask, .gx = gx_, .go = go, .gm = gm };
    dcn_walk(s, off, dcn_adjoint, &w);
    for (size_t i = 0; dx && i < nx; i++) dx[i] = dcn_put(acc, dx[i], gx_[i]);
    for (size_t i = 0; i < nm; i++) {   /* o = (n dg kk + ch) P + p; offset 2 ch, 2 ch + 1 */
        size_t p = i % P, nch = i / P, n = nch / ((size_t)s->dg * kk), ch = nch % (s->dg * kk);
        size_t oy_ = (n * 2 * s->dg * kk + 2 * ch) * P + p;
        if (dmask) dmask[i] = dcn_put(acc, dmask[i], gm[i]);
        if (doff) {
            doff[oy_] = dcn_put(acc, doff[oy_], go[2 * i]);
            doff[oy_ + P] = dcn_put(acc, doff[oy_ + P], go[2 * i + 1]);
        }
    }
    free(gx_);
    free(go);
    free(gm);
}

void pf_ref_bias_add(float *y, const float *bias, int n, int c, int h, int w) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * c * hw; i++) y[i] += bias[(i / hw) % (size_t)c];
}

void pf_ref_bias_backward(float *dbias, const float *dy, int n, int c, int h, int w, int acc) {
    size_t hw = (size_t)h * w;
    for (int o = 0; o < c; o++) {
        double sum = 0;
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) sum += dy[((size_t)b * c + o) * hw + j];
        dbias[o] = dcn_put(acc, dbias[o], sum);
    }
}

/* x /= max(||x||, eps), the norm and the division in double */
static void sn_normalize(float *x, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double norm = sqrt(ss) > eps ? sqrt(ss) : (double)eps;
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] / norm);
}

void pf_ref_sn_forward(float *weight, float *u, float *v, float *sigma,
                       const float *weight_orig, int rows, int cols, float eps, int training) {
    const float *w = weight_orig;
    if (training) {
        for (int c = 0; c < cols; c++) {
            double s = 0;
            for (int r = 0; r < rows; r++) s += (double)w[(size_t)r * cols + c] * u[r];
            v[c] = (float)s;
        }
        sn_normalize(v, cols, eps);
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < cols; c++) s += (double)w[(size_t)r * cols + c] * v[c];
            u[r] = (float)s;
        }
        sn_normalize(u, rows, eps);
    }
    double sg = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) sg += (double)u[r] * w[(size_t)r * cols + c] * v[c];
    *sigma = (float)sg;
    for (size_t i = 0; i < (size_t)rows * cols; i++) weight[i] = w[i] / *sigma;
}

void pf_ref_sn_backward(float *d_weight_orig, const float *d_weight, const float *weight_orig,
                        const float *u, const float *v, const float *sigma, int rows,
                        int cols) {
    size_t n = (size_t)rows * cols;
    double dot = 0, sg = *sigma;
    for (size_t i = 0; i < n; i++) dot += (double)d_weight[i] * weight_orig[i];
    for (size_t i = 0; i < n; i++)
        d_weight_orig[i] = (float)(d_weight[i] / sg - dot / (sg * sg) * u[i / (size_t)cols] *
                                                          v[i % (size_t)cols]);
}

/* ---- BatchNorm2d ---- */

int pf_ref_batchnorm_train(float *y, const float *x, const float *weight, const float *bias,
                           float *running, double *save, int n, int c, int h, int w, double eps,
                           double momentum) {
    size_t hw = (size_t)h * w, M = (size_t)n * hw;
    if (M < 2) return -1;
    for (int o = 0; o < c; o++) {
        double sum = 0, sq = 0;
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) sum += x[((size_t)b * c + o) * hw + j];
        double mean = sum / (double)M;
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) {
                double d = x[((size_t)b * c + o) * hw + j] - mean;
                sq += d * d;
            }
        double var = sq / (double)M, inv = 1.0 / sqrt(var + eps);
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) {
                size_t e = ((size_t)b * c + o) * hw + j;
                y[e] = (float)((x[e] - mean) * inv * weight[o] + bias[o]);
            }
        save[o] = mean;
        save[c + o] = inv;
        running[o] = (float)(running[o] + momentum * (mean - running[o]));
        double unbiased = sq / (double)(M - 1);
        running[c + o] = (float)(running[c + o] + momentum * (unbiased - running[c + o]));
    }
    return 0;
}

void pf_ref_batchnorm_eval(float *y, const float *x, const float *weight, const float *bias,
                           const float *running, int n, int c, int h, int w, double eps) {
    size_t hw = (size_t)h * w;
    for (int b = 0; b < n; b++)
        for (int o = 0; o < c; o++)
            for (size_t j = 0; j < hw; j++) {
                size_t e = ((size_t)b * c + o) * hw + j;
                y[e] = (float)(((double)x[e] - running[o]) / sqrt((double)running[c + o] + eps) *
                                   weight[o] + bias[o]);
            }
}

void pf_ref_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, int h, int w, int acc) {
    size_t hw = (size_t)h * w;
    double M = (double)n * (double)hw;
    for (int o = 0; o < c; o++) {
        double mean = save[o], inv = save[c + o], sdy = 0, sdyx = 0;
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) {
                size_t e = ((size_t)b * c + o) * hw + j;
                sdy += dy[e];
                sdyx += dy[e] * (x[e] - mean) * inv;
            }
        if (dweight) dweight[o] = (float)sdyx;
        if (dbias) dbias[o] = (float)sdy;
        if (!dx) continue;
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < hw; j++) {
                size_t e = ((size_t)b * c + o) * hw + j;
                double xh = (x[e] - mean) * inv;
                double v = weight[o] * inv / M * (M * dy[e] - sdy - xh * sdyx);
                dx[e] = acc ? (float)(dx[e] + v) : (float)v;
            }
    }
}

/* ---- Linear ---- */

void pf_ref_linear_forward(float *y, const float *x, const float *weight, const float *bias,
                           int n, int in, int out) {
    for (int b = 0; b < n; b++)
        for (int o = 0; o < out; o++) {
            double sum = bias[o];
            for (int i = 0; i < in; i++)
                sum += (double)x[(size_t)b * in + i] * weight[(size_t)o * in + i];
            y[(size_t)b * out + o] = (float)sum;
        }
}

void pf_ref_linear_backward(float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, int n, int in, int out,
                            int acc) {
    for (int o = 0; o < out; o++) {
        double sb = 0;
        for (int b = 0; b < n; b++) sb += dy[(size_t)b * out + o];
        dbias[o] = (float)sb;
        for (int i = 0; i < in; i++) {
            double sw = 0;
            for (int b = 0; b < n; b++)
                sw += (double)dy[(size_t)b * out + o] * x[(size_t)b * in + i];
            dweight[(size_t)o * in + i] = (float)sw;
        }
    }
    for (int b = 0; b < n; b++)
        for (int i = 0; i < in; i++) {
            double sx = 0;
            for (int o = 0; o < out; o++)
                sx += (double)dy[(size_t)b * out + o] * weight[(size_t)o * in + i];
            size_t e = (size_t)b * in + i;
            dx[e] = acc ? (float)(dx[e] + sx) : (float)sx;
        }
}
