/*  ops — the CPU executor's own kernels: each graph op's forward and backward (see ops.h).
    Moved from nn/graph.c's forward_node / backward_node without a change to the arithmetic,
    the loop order or the OpenMP schedule. */
#include "nn/cpu/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cpu/dnnl_ctx.h"
#include "nn/layers.h"

/* Loops over (n, channel block, pixel) of a blocked tensor with C real channels, all three
   in parallel (an NHWC tensor is one block, and inference has one sample); `body` sees `base`
   (offset of the pixel's block of channels), `c0` (first channel of the block) and `kn` (real
   channels in it). */
#define FOR_BLOCKS(N, C, HW, B)                                                            \
    _Pragma("omp parallel for collapse(3) schedule(static)")                               \
    for (int n_ = 0; n_ < (N); n_++)                                                       \
        for (int cb_ = 0; cb_ < ((C) + (B) - 1) / (B); cb_++)                               \
            for (size_t px_ = 0; px_ < (HW); px_++)                                        \
                for (size_t once_ = 0, c0 __attribute__((unused)) = (size_t)cb_ * (B),      \
                            kn = (size_t)((C) - cb_ * (B) < (B) ? (C) - cb_ * (B) : (B)),   \
                            base = ((((size_t)n_ * (((C) + (B) - 1) / (B)) + cb_) * (HW)) + \
                                    px_) * (B);                                            \
                     once_ < 1; once_++)

void pf_cpu_axpy(float *dst, const float *src, float s, size_t n, int acc) {
    if (acc) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) dst[i] += s * src[i];
    } else if (s == 1.0f) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) dst[i] = src[i];
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) dst[i] = s * src[i];
    }
}

void pf_cpu_axpy_layout(float *dst, int bd, const float *src, int bs, float s, int n, int c,
                        int h, int w, int acc) {
    if (bd == bs) {
        pf_cpu_axpy(dst, src, s, pf_blk_numel(n, c, h, w, bd), acc);
        return;
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float v = s * src[pf_blk_off(in, ic, y, x, c, h, w, bs)];
                    float *d = &dst[pf_blk_off(in, ic, y, x, c, h, w, bd)];
                    *d = acc ? *d + v : v;
                }
}

/* Channel-attention kernels over one run of hw pixels, kn lanes of each pixel (kn <=
   PF_LANE_CHUNK), pixels b floats apart. Runs of 8 or 16 lanes get a constant lane count so
   GCC vectorises the lane loop; others take the general loop. Callers split a channel block
   into chunks of at most PF_LANE_CHUNK lanes (FOR_CHUNKS), so NHWC's one block of C channels
   is several runs. */
#define PF_LANE_CHUNK 16
#define LANES(b, kn, body)                                                                 \
    do {                                                                                  \
        if ((kn) == 8) { enum { K = 8 }; body }                                           \
        else if ((kn) == 16) { enum { K = 16 }; body }                                    \
        else { const int K = (kn); body }                                                 \
    } while (0)

/* min(real channels left, lanes left in the block, PF_LANE_CHUNK) */
static inline int lane_count(int real, int lanes) {
    int k = real < lanes ? real : lanes;
    return k < PF_LANE_CHUNK ? k : PF_LANE_CHUNK;
}

/* Parallel loop over (sample in_, channel block ib_, lane chunk) of an N x C tensor in block
   B: `body` sees `lane` (first lane of the chunk in its block), `c0` (its first channel) and
   `kc` (real channels in the chunk, 1..PF_LANE_CHUNK); chunks without real channels are
   skipped. */
#define FOR_CHUNKS(N, C, B)                                                                \
    _Pragma("omp parallel for collapse(3) schedule(static)")                               \
    for (int in_ = 0; in_ < (N); in_++)                                                    \
        for (int ib_ = 0; ib_ < ((C) + (B) - 1) / (B); ib_++)                               \
            for (int lane = 0; lane < (B); lane += PF_LANE_CHUNK)                           \
                for (int c0 = ib_ * (B) + lane,                                            \
                         kc = lane_count((C) - c0, (B) - lane), once_ = 0;                 \
                     once_ < 1 && kc > 0; once_++)

/* y = [res +] sc * x * s (s per lane) */
static void mul_ch_run(float *y, const float *x, const float *res, const float *sv, float sc,
                       size_t hw, int b, int kn) {
    LANES(b, kn, {
        for (size_t px = 0; px < hw; px++, y += b, x += b) {
            for (int k = 0; k < K; k++) y[k] = sc * (x[k] * sv[k]);
            if (res) {
                for (int k = 0; k < K; k++) y[k] += res[k];
                res += b;
            }
        }
    });
}

/* dx = [dx +] sc * dy * s */
static void mul_ch_grad_x(float *dx, const float *dy, const float *sv, float sc, size_t hw, int b,
                          int kn, int acc) {
    LANES(b, kn, {
        for (size_t px = 0; px < hw; px++, dx += b, dy += b)
            for (int k = 0; k < K; k++) dx[k] = (acc ? dx[k] : 0.0f) + sc * dy[k] * sv[k];
    });
}

/* sum[k] = sum over the run of dy * x (double, in pixel order) */
static void dot_run(double *sum, const float *dy, const float *x, size_t hw, int b, int kn) {
    LANES(b, kn, {
        for (size_t px = 0; px < hw; px++, dy += b, x += b)
            for (int k = 0; k < K; k++) sum[k] += (double)dy[k] * x[k];
    });
}

/* sum[k] = sum over the run of x */
static void sum_run(double *sum, const float *x, size_t hw, int b, int kn) {
    LANES(b, kn, {
        for (size_t px = 0; px < hw; px++, x += b)
            for (int k = 0; k < K; k++) sum[k] += x[k];
    });
}

/* dx = [dx +] d (per lane, broadcast over the run) */
static void bcast_run(float *dx, const float *d, size_t hw, int b, int kn, int acc) {
    LANES(b, kn, {
        for (size_t px = 0; px < hw; px++, dx += b)
            for (int k = 0; k < K; k++) dx[k] = (acc ? dx[k] : 0.0f) + d[k];
    });
}

/* Whole channel blocks move as one run per sample. */
void pf_cpu_concat_part(float *big, int C, int b, size_t big_numel, float *part, int ci, int pb,
                        int c_off, int n, int H, int W, int forward, int acc) {
    if (b == C && pb == ci && b != pb) {
        /* NHWC on both sides: each pixel's ci channels are one run */
        size_t px = (size_t)n * H * W;
#pragma omp parallel for schedule(static)
        for (size_t p = 0; p < px; p++) {
            float *bg = big + p * (size_t)C + (size_t)c_off, *pt = part + p * (size_t)ci;
            for (int k = 0; k < ci; k++) {
                if (forward) bg[k] = acc ? bg[k] + pt[k] : pt[k];
                else pt[k] = acc ? pt[k] + bg[k] : bg[k];
            }
        }
        return;
    }
    if (pb == b && c_off % b == 0 && ci % b == 0) {
        size_t chunk = pf_blk_numel(1, ci, H, W, b);
        size_t obase = (size_t)(c_off / b) * (size_t)H * W * b;
        for (int in = 0; in < n; in++) {
            float *bg = big + (size_t)in * (big_numel / n) + obase, *pt = part + (size_t)in * chunk;
            if (forward) pf_cpu_axpy(bg, pt, 1.0f, chunk, acc);
            else pf_cpu_axpy(pt, bg, 1.0f, chunk, acc);
        }
        return;
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < ci; ic++)
            for (int yy = 0; yy < H; yy++)
                for (int xx = 0; xx < W; xx++) {
                    float *bg = &big[pf_blk_off(in, c_off + ic, yy, xx, C, H, W, b)];
                    float *pt = &part[pf_blk_off(in, ic, yy, xx, ci, H, W, pb)];
                    if (forward) *bg = acc ? *bg + *pt : *pt;
                    else *pt = acc ? *pt + *bg : *bg;
                }
}

/* The INPUT of T = c / 3 frames: lq N x T x h x w x 3 uint8, frame t's colour k into channel
   3 t + k of dst (block b), normalised as pf_image_to_act does. */
static void image_frames_to_act(float *dst, pf_lq lq, int n, int c, int h, int w,
                                const float *mean, float range, int b) {
    int frames = c / 3;
    memset(dst, 0, pf_blk_numel(n, c, h, w, b) * sizeof(float));
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int t = 0; t < frames; t++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    size_t p = ((((size_t)in * frames + t) * h + y) * w + x) * 3;
                    for (int k = 0; k < 3; k++) {
                        float v = pf_lq_at(lq, p + k);
                        if (mean) v = (v - mean[k]) * range;
                        dst[pf_blk_off(in, 3 * t + k, y, x, c, h, w, b)] = v;
                    }
                }
}

void pf_cpu_input_forward(float *y, pf_lq lq, int n, int c, int h, int w,
                          const float *mean, float range, int b) {
    if (c == 3) pf_image_to_act(y, lq, n, h, w, mean, range, b);
    else image_frames_to_act(y, lq, n, c, h, w, mean, range, b);
}

void pf_cpu_input_backward(float *dx, const float *dy, int n, int c, int h, int w, float f,
                           int b, int acc) {
    int frames = c / 3;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int t = 0; t < frames; t++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float *p = dx + ((((size_t)in * frames + t) * h + y) * w + x) * 3;
                    for (int k = 0; k < 3; k++) {
                        float v = f * dy[pf_blk_off(in, 3 * t + k, y, x, c, h, w, b)];
                        p[k] = acc ? p[k] + v : v;
                    }
                }
}

void pf_cpu_bilinear_in_forward(float *y, pf_lq lq, int n, int H, int W, int r, int b) {
    /* ATen upsample_bilinear2d, align_corners=False, scale given: src = (dst + 0.5) / r
       - 0.5 clamped at 0; the right/bottom tap clamps to the last pixel. */
    int ih = H / r, iw = W / r;
    float inv = 1.0f / (float)r;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int oy = 0; oy < H; oy++) {
            float sy = ((float)oy + 0.5f) * inv - 0.5f;
            if (sy < 0) sy = 0;
            int y0 = (int)sy, y1 = y0 + (y0 < ih - 1);
            float ly1 = sy - (float)y0, ly0 = 1.0f - ly1;
            for (int ox = 0; ox < W; ox++) {
                float sx = ((float)ox + 0.5f) * inv - 0.5f;
                if (sx < 0) sx = 0;
                int x0 = (int)sx, x1 = x0 + (x0 < iw - 1);
                float lx1 = sx - (float)x0, lx0 = 1.0f - lx1;
                for (int c = 0; c < 3; c++) {
#define PX(yy, xx) pf_lq_at(lq, (((size_t)in * ih + (yy)) * iw + (xx)) * 3 + c)
                    float v = ly0 * (lx0 * PX(y0, x0) + lx1 * PX(y0, x1)) +
                              ly1 * (lx0 * PX(y1, x0) + lx1 * PX(y1, x1));
#undef PX
                    y[pf_blk_off(in, c, oy, ox, 3, H, W, b)] = v;
                }
            }
        }
}

void pf_cpu_prelu_forward(float *y, const float *x, const float *al, int n, int C, size_t hw,
                          int b) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++) {
        float v = x[base + k];
        y[base + k] = v > 0 ? v : al[c0 + k] * v;
    }
}

int pf_cpu_prelu_backward(float *dx, float *dal, const float *dy, const float *x,
                          const float *al, int n, int C, size_t hw, int b, int acc) {
    int cb = (C + b - 1) / b;
    /* d alpha[c] = sum over x <= 0 of dy * x: per (sample, block) partial sums first,
       added in a fixed order, so the result does not depend on the thread count */
    double *part = dal ? calloc((size_t)n * cb * b, sizeof *part) : NULL;
    if (dal && !part) return -1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int ib = 0; ib < cb; ib++) {
            size_t base = ((size_t)in * cb + ib) * hw * b;
            int c0 = ib * b, kn = C - c0 < b ? C - c0 : b;
            double *pp = part ? part + ((size_t)in * cb + ib) * b : NULL;
            for (size_t px = 0; px < hw; px++, base += b)
                for (int k = 0; k < kn; k++) {
                    float v = x[base + k], d = dy[base + k];
                    float g1 = v > 0 ? d : al[c0 + k] * d;
                    if (pp && !(v > 0)) pp[k] += (double)d * v;
                    if (dx) dx[base + k] = acc ? dx[base + k] + g1 : g1;
                }
        }
    for (int c = 0; dal && c < C; c++) {
        double s = 0;
        for (int in = 0; in < n; in++) s += part[((size_t)in * cb + c / b) * b + c % b];
        dal[c] = (float)s;
    }
    free(part);
    return 0;
}

void pf_cpu_tanh_forward(float *y, const float *x, int n, int C, size_t hw, int b) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++) y[base + k] = tanhf(x[base + k]);
}

void pf_cpu_sigmoid_forward(float *y, const float *x, int n, int C, size_t hw, int b) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++)
        y[base + k] = 1.0f / (1.0f + expf(-x[base + k]));
}

void pf_cpu_tanh_sigmoid_backward(float *dx, const float *dy, const float *y, int n, int C,
                                  size_t hw, int b, int tanh_, int acc) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++) {
        float v = y[base + k];
        float d = dy[base + k] * (tanh_ ? 1.0f - v * v : v * (1.0f - v));
        dx[base + k] = acc ? dx[base + k] + d : d;
    }
}

void pf_cpu_relu_forward(float *y, const float *x, float al, int n, int C, size_t hw, int b) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++) {
        float v = x[base + k];
        y[base + k] = v > 0 ? v : al * v;
    }
}

void pf_cpu_relu_backward(float *dx, const float *dy, const float *y, float al, int n, int C,
                          size_t hw, int b, int acc) {
    FOR_BLOCKS(n, C, hw, b) for (size_t k = 0; k < kn; k++) {
        float d = y[base + k] > 0 ? dy[base + k] : al * dy[base + k];
        dx[base + k] = acc ? dx[base + k] + d : d;
    }
}

void pf_cpu_add_forward(float *y, const float *x, const float *z, int bz, float s, int n, int C,
                        int h, int w, int b, size_t numel) {
    if (y != x) pf_cpu_axpy(y, x, 1.0f, numel, 0);
    pf_cpu_axpy_layout(y, b, z, bz, s, n, C, h, w, 1);
}

void pf_cpu_gap_forward(float *y, const float *x, int n, int C, size_t ahw, int b) {
    int cb = (C + b - 1) / b;
    FOR_CHUNKS(n, C, b) {
        double acc[PF_LANE_CHUNK] = { 0 };
        size_t blk = (size_t)in_ * cb + ib_;
        sum_run(acc, x + blk * ahw * b + lane, ahw, b, kc);
        for (int k = 0; k < kc; k++)
            y[blk * b + lane + k] = (float)(acc[k] / (double)ahw);
    }
}

void pf_cpu_gap_backward(float *dx, const float *dy, int n, int C, size_t ahw, int b, int acc) {
    float inv = 1.0f / (float)ahw;
    int cb = (C + b - 1) / b;
    FOR_CHUNKS(n, C, b) {
        float d[PF_LANE_CHUNK];
        size_t blk = (size_t)in_ * cb + ib_;
        for (int k = 0; k < kc; k++) d[k] = dy[blk * b + lane + k] * inv;
        bcast_run(dx + blk * ahw * b + lane, d, ahw, b, kc, acc);
    }
}

void pf_cpu_mul_ch_forward(float *y, const float *x, const float *res, const float *s, size_t cs,
                           float sc, int n, int C, size_t hw, int b) {
    int cb = (C + b - 1) / b;
    FOR_CHUNKS(n, C, b) {
        size_t base = ((size_t)in_ * cb + ib_) * hw * b + lane;
        mul_ch_run(y + base, x + base, res ? res + base : NULL,
                   s + (size_t)in_ * cs + (size_t)c0, sc, hw, b, kc);
    }
}

void pf_cpu_mul_ch_backward_x(float *dx, const float *dy, const float *s, size_t cs, float sc,
                              int n, int C, size_t hw, int b, int acc) {
    int cb = (C + b - 1) / b;
    FOR_CHUNKS(n, C, b) {
        size_t base = ((size_t)in_ * cb + ib_) * hw * b + lane;
        mul_ch_grad_x(dx + base, dy + base, s + (size_t)in_ * cs + (size_t)c0, sc, hw, b, kc,
                      acc);
    }
}

void pf_cpu_mul_ch_backward_s(float *dx, const float *dy, const float *x, size_t cs, float sc,
                              int n, int C, size_t hw, int b, int acc) {
    int cb = (C + b - 1) / b;
    FOR_CHUNKS(n, C, b) {
        double sum[PF_LANE_CHUNK] = { 0 };
        size_t base = ((size_t)in_ * cb + ib_) * hw * b + lane;
        dot_run(sum, dy + base, x + base, hw, b, kc);
        float *d = dx + (size_t)in_ * cs + (size_t)c0;
        for (int k = 0; k < kc; k++) d[k] = (acc ? d[k] : 0.0f) + sc * (float)sum[k];
    }
}

void pf_cpu_nearest_forward(float *y, const float *x, int n, int C, int h, int w, int H, int W,
                             int r, int b) {
    int cb = (C + b - 1) / b;
#pragma omp parallel for collapse(3) schedule(static)
    for (int in = 0; in < n; in++)
        for (int ib = 0; ib < cb; ib++)
            for (int yy = 0; yy < H; yy++) {
                const float *src = x + (((size_t)in * cb + ib) * h + yy / r) * w * b;
                float *dst = y + (((size_t)in * cb + ib) * H + yy) * W * b;
                for (int xx = 0; xx < W; xx++)
                    memcpy(dst + (size_t)xx * b, src + (size_t)(xx / r) * b,
                           (size_t)b * sizeof(float));
            }
}

void pf_cpu_nearest_backward(float *dx, const float *dy, int n, int C, int H, int W, int oh,
                             int ow, int r, int b, int acc) {
    int cb = (C + b - 1) / b;
#pragma omp parallel for collapse(3) schedule(static)
    for (int in = 0; in < n; in++)
        for (int ib = 0; ib < cb; ib++)
            for (int yy = 0; yy < H; yy++)
                for (int xx = 0; xx < W; xx++)
                    for (int k0 = 0; k0 < b; k0 += PF_LANE_CHUNK) {
                        int kc = b - k0 < PF_LANE_CHUNK ? b - k0 : PF_LANE_CHUNK;
                        float sum[PF_LANE_CHUNK] = { 0 };
                        for (int i = 0; i < r; i++)
                            for (int j = 0; j < r; j++) {
                                const float *src = dy + ((((size_t)in * cb + ib) * oh +
                                                          (size_t)yy * r + i) * ow +
                                                         (size_t)xx * r + j) * b + k0;
                                for (int k = 0; k < kc; k++) sum[k] += src[k];
                            }
                        float *d = dx + ((((size_t)in * cb + ib) * H + yy) * W + xx) * b + k0;
                        for (int k = 0; k < kc; k++) d[k] = acc ? d[k] + sum[k] : sum[k];
                    }
}

void pf_cpu_avgpool2_backward(float *dx, const float *dy, int n, int C, int H, int W, int oh,
                              int ow, int b, int ab, int acc) {
    /* each input pixel gets a quarter of its window's gradient */
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++)
            for (int yy = 0; yy < H; yy++)
                for (int xx = 0; xx < W; xx++) {
                    float d = 0.25f * dy[pf_blk_off(in, c, yy / 2, xx / 2, C, oh, ow, b)];
                    float *p = &dx[pf_blk_off(in, c, yy, xx, C, H, W, ab)];
                    *p = acc ? *p + d : d;
                }
}

/* Index 0..3 of the maximum of window (Y, X) of plane (in, c): the first in row-major order,
   a NaN winning as in PyTorch's max_pool2d (`v > max || isnan(v)`). */
static int max_of_window(const float *x, int in, int c, int Y, int X, int C, int h, int w,
                         int bx) {
    int best = 0;
    float m = x[pf_blk_off(in, c, 2 * Y, 2 * X, C, h, w, bx)];
    for (int k = 1; k < 4; k++) {
        float v = x[pf_blk_off(in, c, 2 * Y + k / 2, 2 * X + k % 2, C, h, w, bx)];
        if (v > m || isnan(v)) {
            m = v;
            best = k;
        }
    }
    return best;
}

/* Every 2 x 2 window: forward (y) its max, else backward (dx from dy) the gradient to it. */
static void maxpool2_windows(float *y, float *dx, const float *dy, const float *x, int n, int C,
                             int h, int w, int b, int bx, int acc) {
    int H = h / 2, W = w / 2;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++)
            for (int yy = 0; yy < H; yy++)
                for (int xx = 0; xx < W; xx++) {
                    int best = max_of_window(x, in, c, yy, xx, C, h, w, bx);
                    size_t o = pf_blk_off(in, c, yy, xx, C, H, W, b);
                    for (int k = 0; k < 4; k++) {
                        size_t i = pf_blk_off(in, c, 2 * yy + k / 2, 2 * xx + k % 2, C, h, w, bx);
                        if (y) {
                            if (k == best) y[o] = x[i];
                        } else {
                            float v = k == best ? dy[o] : 0.0f;
                            dx[i] = acc ? dx[i] + v : v;
                        }
                    }
                }
}

void pf_cpu_maxpool2_forward(float *y, const float *x, int n, int C, int h, int w, int b,
                             int bx) {
    maxpool2_windows(y, NULL, NULL, x, n, C, h, w, b, bx, 0);
}

void pf_cpu_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int C, int h,
                              int w, int b, int bx, int acc) {
    maxpool2_windows(NULL, dx, dy, x, n, C, h, w, b, bx, acc);
}

void pf_cpu_act_mask_backward(float *dy, const float *y, float al, size_t cnt) {
    /* y > 0 is tested on the bits (a positive float is a positive int32) and the result
       selected with integer masks, which GCC vectorises (a float compare may trap, and a
       select of dy * 1 becomes a branch): 6.6 -> about 1 ns per element */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < cnt; i++) {
        int32_t yi, di, si;
        float sv = dy[i] * al;
        memcpy(&yi, &y[i], sizeof yi);
        memcpy(&di, &dy[i], sizeof di);
        memcpy(&si, &sv, sizeof si);
        int32_t keep = -(int32_t)(yi > 0);      /* all ones where y > 0 */
        di = (di & keep) | (si & ~keep);
        memcpy(&dy[i], &di, sizeof di);
    }
}

/* ---- EDVR's TSA-fusion ops (ops.h) ------------------------------------------------------ */

void pf_cpu_mul_forward(float *y, const float *x0, const float *x1, const float *r, float sc,
                        int n, int C, int C1, int h, int w, int b, int b0, int b1, int br) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++) {
                    float v = sc * (x0[pf_blk_off(in, c, i, j, C, h, w, b0)] *
                                    x1[pf_blk_off(in, C1 == 1 ? 0 : c, i, j, C1, h, w, b1)]);
                    if (r) v += r[pf_blk_off(in, c, i, j, C, h, w, br)];
                    y[pf_blk_off(in, c, i, j, C, h, w, b)] = v;
                }
}

void pf_cpu_mul_backward(float *dx0, float *dx1, const float *dy, const float *x0,
                         const float *x1, float sc, int n, int C, int C1, int h, int w, int b,
                         int b0, int b1, int acc0, int acc1) {
    if (dx0) {
#pragma omp parallel for collapse(2) schedule(static)
        for (int in = 0; in < n; in++)
            for (int c = 0; c < C; c++)
                for (int i = 0; i < h; i++)
                    for (int j = 0; j < w; j++) {
                        size_t o = pf_blk_off(in, c, i, j, C, h, w, b0);
                        float g = sc * dy[pf_blk_off(in, c, i, j, C, h, w, b)] *
                                  x1[pf_blk_off(in, C1 == 1 ? 0 : c, i, j, C1, h, w, b1)];
                        dx0[o] = acc0 ? dx0[o] + g : g;
                    }
    }
    if (!dx1) return;
    /* one channel: the sum over x0's channels of sc * dy * x0, in channel order */
    int cs = C1 == 1 ? C : 1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c1 = 0; c1 < C1; c1++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++) {
                    double s = 0;
                    for (int c = c1; c < c1 + cs; c++)
                        s += (double)dy[pf_blk_off(in, c, i, j, C, h, w, b)] *
                             x0[pf_blk_off(in, c, i, j, C, h, w, b0)];
                    size_t o = pf_blk_off(in, c1, i, j, C1, h, w, b1);
                    float g = (float)(sc * s);
                    dx1[o] = acc1 ? dx1[o] + g : g;
                }
}

void pf_cpu_chsum_forward(float *y, const float *x, int n, int C, int h, int w, int b, int bx) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int i = 0; i < h; i++)
            for (int j = 0; j < w; j++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += x[pf_blk_off(in, c, i, j, C, h, w, bx)];
                y[pf_blk_off(in, 0, i, j, 1, h, w, b)] = (float)s;
            }
}

void pf_cpu_chsum_backward(float *dx, const float *dy, int n, int C, int h, int w, int b,
                           int bx, int acc) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++) {
                    size_t o = pf_blk_off(in, c, i, j, C, h, w, bx);
                    float g = dy[pf_blk_off(in, 0, i, j, 1, h, w, b)];
                    dx[o] = acc ? dx[o] + g : g;
                }
}

/* Offset in x of the maximum of the 3 x 3 window (Y, X) (rows 2 Y - 1 .. 2 Y + 1 inside x):
   the first in row-major order, a NaN winning (`v > m || isnan(v)`, max_of_window's rule). */
static size_t max3_of_window(const float *x, int in, int c, int Y, int X, int C, int h, int w,
                             int bx) {
    size_t best = (size_t)-1;
    float m = 0.0f;
    for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
        for (int j = 2 * X - 1; j <= 2 * X + 1; j++) {
            if (i < 0 || j < 0 || i >= h || j >= w) continue;
            size_t o = pf_blk_off(in, c, i, j, C, h, w, bx);
            if (best == (size_t)-1 || x[o] > m || isnan(x[o])) {
                m = x[o];
                best = o;
            }
        }
    return best;
}

void pf_cpu_pool3_forward(float *y, const float *x, int max, int n, int C, int h, int w, int b,
                          int bx) {
    int H = h / 2, W = w / 2;
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++)
            for (int Y = 0; Y < H; Y++)
                for (int X = 0; X < W; X++) {
                    float v;
                    if (max) {
                        v = x[max3_of_window(x, in, c, Y, X, C, h, w, bx)];
                    } else {
                        double s = 0;
                        for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
                            for (int j = 2 * X - 1; j <= 2 * X + 1; j++)
                                if (i >= 0 && j >= 0 && i < h && j < w)
                                    s += x[pf_blk_off(in, c, i, j, C, h, w, bx)];
                        v = (float)(s / 9.0);
                    }
                    y[pf_blk_off(in, c, Y, X, C, H, W, b)] = v;
                }
}

void pf_cpu_pool3_backward(float *dx, const float *dy, const float *x, int max, int n, int C,
                           int h, int w, int b, int bx, int acc) {
    int H = h / 2, W = w / 2;
    /* one plane per iteration: its windows scatter in order into its own pixels */
#pragma omp parallel for collapse(2) schedule(static)
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++) {
            if (!acc)
                for (int i = 0; i < h; i++)
                    for (int j = 0; j < w; j++) dx[pf_blk_off(in, c, i, j, C, h, w, bx)] = 0.0f;
            for (int Y = 0; Y < H; Y++)
                for (int X = 0; X < W; X++) {
                    float g = dy[pf_blk_off(in, c, Y, X, C, H, W, b)];
                    if (max) {
                        dx[max3_of_window(x, in, c, Y, X, C, h, w, bx)] += g;
                        continue;
                    }
                    for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
                        for (int j = 2 * X - 1; j <= 2 * X + 1; j++)
                            if (i >= 0 && j >= 0 && i < h && j < w)
                                dx[pf_blk_off(in, c, i, j, C, h, w, bx)] += g / 9.0f;
                }
        }
}
