/*  video_layers — flow warp, bilinear resize, 2 x 2 average pooling, per-channel affine (see
    video_layers.h). Each output pixel is computed from its sources (gather); backward scatters
    with the same weights. Samples (n) are independent, so they are the parallel work where a
    layer is large enough to care; the layers here are small next to SPyNet's 7 x 7
    convolutions, so the loops stay simple. */
#include "nn/video_layers.h"

#include <math.h>
#include <string.h>

#include "nn/cpu/dnnl_ctx.h"

#define OFF(t, b, nn, cc, yy, xx, C, H, W) ((t) + pf_blk_off(nn, cc, yy, xx, C, H, W, b))

/* Zero the padding channels of an N x C x H x W tensor in block b (c .. roundup(c, b) - 1). */
static void zero_pad_channels(float *t, int n, int c, int h, int w, int b) {
    int cp = (int)pf_blk_c(c, b);
    for (int a = 0; a < n; a++)
        for (int k = c; k < cp; k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    *OFF(t, b, a, k, y, x, cp, h, w) = 0;
}

/* ---- flow warp (grid_sample, bilinear, align_corners=True) ----------------------------- */

/* The sample position for one axis of size `size` at pixel p with flow f, as grid_sample
   computes it from BasicSR's normalised grid: flow_warp normalises p + f to
   2 (p + f) / (size - 1) - 1 and grid_sample (align_corners=True) unnormalises that with
   (g + 1) (size - 1) / 2, both in float, so the position is p + f up to that rounding, which
   decides the corner where p + f is a whole number; it is kept. A size of 1 maps to 0. Clamped
   for border padding; *grad = d position / d f (0 where clamped or size 1). */
static float sample_pos(int p, float f, int size, pf_pad_mode pad, float *grad) {
    if (size == 1) {
        *grad = 0;
        return 0;
    }
    float g = 2.0f * ((float)p + f) / (float)(size - 1) - 1.0f;
    float v = (g + 1.0f) * ((float)(size - 1) / 2.0f);
    *grad = 1;
    if (pad == PF_PAD_BORDER) {
        /* aten clip_coordinates_set_grad: in <= 0 -> 0, in >= size - 1 -> size - 1, grad 0 */
        if (v <= 0) {
            *grad = 0;
            return 0;
        }
        if (v >= (float)(size - 1)) {
            *grad = 0;
            return (float)(size - 1);
        }
    }
    return v;
}

static int inside(int x, int y, int w, int h) {
    return x >= 0 && x < w && y >= 0 && y < h;
}

/* One output pixel's four corners: positions, weights (torch's nw, ne, sw, se order). */
typedef struct {
    int x0, y0;             /* the north-west corner */
    float ix, iy;           /* the sample position */
    float gx, gy;           /* d position / d flow */
    float wt[4];            /* nw, ne, sw, se */
} pf_corners;

static void corners(pf_corners *q, int x, int y, const float *flow, int a, int h, int w,
                    pf_pad_mode pad, int bf) {
    float fx = *OFF(flow, bf, a, 0, y, x, 2, h, w), fy = *OFF(flow, bf, a, 1, y, x, 2, h, w);
    q->ix = sample_pos(x, fx, w, pad, &q->gx);
    q->iy = sample_pos(y, fy, h, pad, &q->gy);
    float x0 = floorf(q->ix), y0 = floorf(q->iy);
    q->x0 = (int)x0;
    q->y0 = (int)y0;
    float e = q->ix - x0, s = q->iy - y0;           /* east and south fractions */
    q->wt[0] = (1 - e) * (1 - s);
    q->wt[1] = e * (1 - s);
    q->wt[2] = (1 - e) * s;
    q->wt[3] = e * s;
}

void pf_flow_warp_forward(float *out, const float *x, const float *flow, int n, int c, int h,
                          int w, pf_pad_mode pad, int bo, int bx, int bf) {
    for (int a = 0; a < n; a++) {
        for (int y = 0; y < h; y++) {
            for (int xx = 0; xx < w; xx++) {
                pf_corners q;
                corners(&q, xx, y, flow, a, h, w, pad, bf);
                for (int k = 0; k < c; k++) {
                    float v = 0;
                    for (int i = 0; i < 4; i++) {
                        int cx = q.x0 + (i & 1), cy = q.y0 + (i >> 1);
                        if (inside(cx, cy, w, h))
                            v += *OFF(x, bx, a, k, cy, cx, c, h, w) * q.wt[i];
                    }
                    *OFF(out, bo, a, k, y, xx, c, h, w) = v;
                }
            }
        }
    }
    zero_pad_channels(out, n, c, h, w, bo);
}

void pf_flow_warp_backward(float *dx, float *dflow, const float *dout, const float *x,
                           const float *flow, int n, int c, int h, int w, pf_pad_mode pad, int bo,
                           int bx, int bf) {
    for (int a = 0; a < n; a++) {
        for (int y = 0; y < h; y++) {
            for (int xx = 0; xx < w; xx++) {
                pf_corners q;
                corners(&q, xx, y, flow, a, h, w, pad, bf);
                float e = q.ix - (float)q.x0, s = q.iy - (float)q.y0;
                float gix = 0, giy = 0;
                for (int k = 0; k < c; k++) {
                    float g = *OFF(dout, bo, a, k, y, xx, c, h, w);
                    for (int i = 0; i < 4; i++) {
                        int cx = q.x0 + (i & 1), cy = q.y0 + (i >> 1);
                        if (!inside(cx, cy, w, h))
                            continue;
                        if (dx)
                            *OFF(dx, bx, a, k, cy, cx, c, h, w) += q.wt[i] * g;
                        float v = *OFF(x, bx, a, k, cy, cx, c, h, w) * g;
                        /* d wt / d ix and d wt / d iy of each corner */
                        float dwx = (i & 1) ? ((i >> 1) ? s : 1 - s) : -((i >> 1) ? s : 1 - s);
                        float dwy = (i >> 1) ? ((i & 1) ? e : 1 - e) : -((i & 1) ? e : 1 - e);
                        gix += v * dwx;
                        giy += v * dwy;
                    }
                }
                if (dflow) {
                    *OFF(dflow, bf, a, 0, y, xx, 2, h, w) += gix * q.gx;
                    *OFF(dflow, bf, a, 1, y, xx, 2, h, w) += giy * q.gy;
                }
            }
        }
    }
}

/* ---- bilinear resize ------------------------------------------------------------------ */

/* Source index and weights of output index d along an axis of in -> out elements (aten
   area_pixel_compute_source_index, linear). */
static void lin_src(int d, int in, int out, int ac, int *i0, int *i1, float *l0, float *l1) {
    float src;
    if (ac)
        src = out > 1 ? (float)d * ((float)(in - 1) / (float)(out - 1)) : 0.0f;
    else {
        src = ((float)in / (float)out) * ((float)d + 0.5f) - 0.5f;
        if (src < 0)
            src = 0;
    }
    int i = (int)src;
    if (i > in - 1)
        i = in - 1;
    *i0 = i;
    *i1 = i < in - 1 ? i + 1 : i;
    *l1 = src - (float)i;
    *l0 = 1.0f - *l1;
}

void pf_resize_bilinear_forward(float *out, const float *in, int n, int c, int h, int w, int H,
                                int W, int ac, const float *mult, int bo, int bi) {
    for (int Y = 0; Y < H; Y++) {
        int y0, y1;
        float ly0, ly1;
        lin_src(Y, h, H, ac, &y0, &y1, &ly0, &ly1);
        for (int X = 0; X < W; X++) {
            int x0, x1;
            float lx0, lx1;
            lin_src(X, w, W, ac, &x0, &x1, &lx0, &lx1);
            for (int a = 0; a < n; a++)
                for (int k = 0; k < c; k++) {
                    float v = ly0 * (lx0 * *OFF(in, bi, a, k, y0, x0, c, h, w) +
                                     lx1 * *OFF(in, bi, a, k, y0, x1, c, h, w)) +
                              ly1 * (lx0 * *OFF(in, bi, a, k, y1, x0, c, h, w) +
                                     lx1 * *OFF(in, bi, a, k, y1, x1, c, h, w));
                    *OFF(out, bo, a, k, Y, X, c, H, W) = mult ? v * mult[k] : v;
                }
        }
    }
    zero_pad_channels(out, n, c, H, W, bo);
}

void pf_resize_bilinear_backward(float *din, const float *dout, int n, int c, int h, int w,
                                 int H, int W, int ac, const float *mult, int bo, int bi) {
    for (int Y = 0; Y < H; Y++) {
        int y0, y1;
        float ly0, ly1;
        lin_src(Y, h, H, ac, &y0, &y1, &ly0, &ly1);
        for (int X = 0; X < W; X++) {
            int x0, x1;
            float lx0, lx1;
            lin_src(X, w, W, ac, &x0, &x1, &lx0, &lx1);
            for (int a = 0; a < n; a++)
                for (int k = 0; k < c; k++) {
                    float g = *OFF(dout, bo, a, k, Y, X, c, H, W) * (mult ? mult[k] : 1.0f);
                    *OFF(din, bi, a, k, y0, x0, c, h, w) += ly0 * lx0 * g;
                    *OFF(din, bi, a, k, y0, x1, c, h, w) += ly0 * lx1 * g;
                    *OFF(din, bi, a, k, y1, x0, c, h, w) += ly1 * lx0 * g;
                    *OFF(din, bi, a, k, y1, x1, c, h, w) += ly1 * lx1 * g;
                }
        }
    }
}

/* ---- pooling and per-channel affine --------------------------------------------------- */

void pf_avgpool2_forward(float *out, const float *in, int n, int c, int h, int w, int bo,
                         int bi) {
    int H = h / 2, W = w / 2;
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float s = *OFF(in, bi, a, k, 2 * y, 2 * x, c, h, w) +
                              *OFF(in, bi, a, k, 2 * y, 2 * x + 1, c, h, w) +
                              *OFF(in, bi, a, k, 2 * y + 1, 2 * x, c, h, w) +
                              *OFF(in, bi, a, k, 2 * y + 1, 2 * x + 1, c, h, w);
                    *OFF(out, bo, a, k, y, x, c, H, W) = s / 4.0f;
                }
    zero_pad_channels(out, n, c, H, W, bo);
}

void pf_affine_ch_forward(float *out, const float *in, int n, int c, int h, int w,
                          const float *sub, const float *mul, int bo, int bi) {
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    *OFF(out, bo, a, k, y, x, c, h, w) =
                        (*OFF(in, bi, a, k, y, x, c, h, w) - (sub ? sub[k] : 0.0f)) * mul[k];
    zero_pad_channels(out, n, c, h, w, bo);
}

void pf_affine_ch_backward(float *din, const float *dout, int n, int c, int h, int w,
                           const float *mul, int bo, int bi) {
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    *OFF(din, bi, a, k, y, x, c, h, w) +=
                        *OFF(dout, bo, a, k, y, x, c, h, w) * mul[k];
}
