/*  imresize — MATLAB-compatible bicubic resize (see imresize.h).

    Follows MATLAB's imresize.m (contributions(), resizeAlongDim(); also re-implemented in
    BasicSR's basicsr/utils/matlab_functions.py): for each dimension, output pixel x (1-based)
    maps to input coordinate u = x / scale + 0.5 * (1 - 1 / scale); the taps are
    floor(u - width / 2) + 0 .. ceil(width) + 1, weighted by the Keys cubic (a = -0.5) of the
    distance (scaled by `scale`, and the kernel stretched to width 4 / scale, when shrinking),
    normalised to sum 1; taps outside the image are mirrored (index -1 reads 0, n reads n - 1).
    Taps whose weight is zero are kept: adding 0 * v changes no sum, so removing them, as
    MATLAB does, is not needed for equal results.
    Height is resized first, then width (MATLAB sorts dimensions by scale; ours is one scale).
    Like MATLAB, the result of each pass has the input's type: uint8 input is rounded (half away
    from zero) and clamped after the height pass as well as after the width pass. BasicSR's
    float implementation skips that intermediate rounding and so can differ by 1 on some pixels.
*/
#include "common/imresize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int out_len, taps;           /* output pixels, taps per output pixel */
    double *w;                   /* out_len * taps weights, rows sum to 1 */
    int *idx;                    /* out_len * taps input indices, already mirrored into range */
} contrib;

/* Keys cubic convolution kernel with a = -0.5 (MATLAB's "cubic"). */
static double cubic(double x) {
    double ax = fabs(x), ax2 = ax * ax, ax3 = ax2 * ax;
    if (ax <= 1) return 1.5 * ax3 - 2.5 * ax2 + 1;
    if (ax <= 2) return -0.5 * ax3 + 2.5 * ax2 - 4 * ax + 2;
    return 0;
}

int pf_imresize_out_size(int n, double scale) {
    if (n <= 0 || !(scale > 0) || !isfinite(scale)) return -1;
    double o = ceil((double)n * scale);
    if (o < 1 || o > 1 << 30) return -1;
    return (int)o;
}

static void contrib_free(contrib *c) {
    free(c->w);
    free(c->idx);
}

/* Weights and indices of outputs [o0, o0 + len) of resizing a dimension of length n by
   `scale` (row x - o0 for output x). Each output's weights depend on x alone, so a range's
   rows equal the whole dimension's. Returns 0 or -1. */
static int contrib_make(contrib *c, int n, double scale, int o0, int len) {
    memset(c, 0, sizeof *c);
    int full = pf_imresize_out_size(n, scale);
    if (full < 0 || o0 < 0 || len < 1 || o0 > full - len) return -1;
    c->out_len = len;
    int shrink = scale < 1;
    double width = shrink ? 4.0 / scale : 4.0;
    if (width > 1e6) return -1;
    c->taps = (int)ceil(width) + 2;
    c->w = malloc(sizeof(double) * (size_t)c->out_len * c->taps);
    c->idx = malloc(sizeof(int) * (size_t)c->out_len * c->taps);
    if (!c->w || !c->idx) {
        contrib_free(c);
        return -1;
    }
    for (int r = 0; r < len; r++) {
        int x = o0 + r;
        double u = (x + 1) / scale + 0.5 * (1 - 1 / scale);   /* 1-based input coordinate */
        double left = floor(u - width / 2);
        double *w = c->w + (size_t)r * c->taps;
        int *idx = c->idx + (size_t)r * c->taps;
        double sum = 0;
        for (int t = 0; t < c->taps; t++) {
            double j = left + t;                               /* 1-based tap */
            double d = u - j;
            w[t] = shrink ? scale * cubic(scale * d) : cubic(d);
            sum += w[t];
            /* mirror with edge repeat, period 2n: MATLAB's aux = [1:n, n:-1:1] */
            long long m = ((long long)j - 1) % (2LL * n);
            if (m < 0) m += 2LL * n;
            idx[t] = (int)(m < n ? m : 2LL * n - 1 - m);
        }
        for (int t = 0; t < c->taps; t++) w[t] /= sum;
    }
    return 0;
}

/* MATLAB's double -> uint8 cast: round half away from zero, saturate. */
static inline uint8_t to_u8(double v) {
    if (!(v > 0)) return 0;
    if (v >= 255) return 255;
    return (uint8_t)(v + 0.5);
}

/* All public functions: outputs [y0, y0 + oh) x [x0, x0 + ow) of resizing src (h x w x c
   HWC, uint8 when u8 else float) into dst (oh x ow x c). The height pass runs only over the
   output rows asked for and the input columns their width taps read (cmin..cmax); every
   value is computed by the same operations in the same order as in the whole resize, so a
   region is bit-identical to the same crop of the whole result. The loops over a row are
   kept free of type branches so the compiler vectorises them. */
static int resize(const void *src, int h, int w, int c, double scale, int y0, int x0, int oh,
                  int ow, void *dst, int u8) {
    if (!src || !dst || h <= 0 || w <= 0 || c <= 0) return -1;
    contrib ch, cw;
    if (contrib_make(&ch, h, scale, y0, oh) != 0) return -1;
    if (contrib_make(&cw, w, scale, x0, ow) != 0) {
        contrib_free(&ch);
        return -1;
    }
    int cmin = w, cmax = 0;
    for (size_t i = 0; i < (size_t)ow * cw.taps; i++) {
        if (cw.idx[i] < cmin) cmin = cw.idx[i];
        if (cw.idx[i] > cmax) cmax = cw.idx[i];
    }
    size_t src_row = (size_t)w * c, row = (size_t)(cmax - cmin + 1) * c;
    void *mid = malloc((u8 ? 1 : sizeof(float)) * (size_t)oh * row); /* oh x (cmax-cmin+1) x c */
    double *acc = malloc(sizeof(double) * row);
    int rc = -1;
    if (!mid || !acc) goto out;
    /* height pass: src -> mid, one output row at a time */
    for (int y = 0; y < oh; y++) {
        memset(acc, 0, sizeof(double) * row);
        for (int t = 0; t < ch.taps; t++) {
            double wt = ch.w[(size_t)y * ch.taps + t];
            size_t s = (size_t)ch.idx[(size_t)y * ch.taps + t] * src_row + (size_t)cmin * c;
            if (u8) {
                const uint8_t *p = (const uint8_t *)src + s;
                for (size_t i = 0; i < row; i++) acc[i] += wt * p[i];
            } else {
                const float *p = (const float *)src + s;
                for (size_t i = 0; i < row; i++) acc[i] += wt * p[i];
            }
        }
        if (u8) {
            uint8_t *m = (uint8_t *)mid + (size_t)y * row;
            for (size_t i = 0; i < row; i++) m[i] = to_u8(acc[i]);
        } else {
            float *m = (float *)mid + (size_t)y * row;
            for (size_t i = 0; i < row; i++) m[i] = (float)acc[i];
        }
    }
    for (size_t i = 0; i < (size_t)ow * cw.taps; i++) cw.idx[i] -= cmin;
    /* width pass: mid -> dst */
    for (int y = 0; y < oh; y++) {
        for (int x = 0; x < ow; x++) {
            const double *wt = cw.w + (size_t)x * cw.taps;
            const int *idx = cw.idx + (size_t)x * cw.taps;
            size_t o = ((size_t)y * ow + x) * c;
            for (int k = 0; k < c; k++) {
                double s = 0;
                if (u8) {
                    const uint8_t *m = (const uint8_t *)mid + (size_t)y * row + k;
                    for (int t = 0; t < cw.taps; t++) s += wt[t] * m[(size_t)idx[t] * c];
                    ((uint8_t *)dst)[o + k] = to_u8(s);
                } else {
                    const float *m = (const float *)mid + (size_t)y * row + k;
                    for (int t = 0; t < cw.taps; t++) s += wt[t] * m[(size_t)idx[t] * c];
                    ((float *)dst)[o + k] = (float)s;
                }
            }
        }
    }
    rc = 0;
out:
    free(mid);
    free(acc);
    contrib_free(&ch);
    contrib_free(&cw);
    return rc;
}

static int whole(const void *src, int h, int w, int c, double scale, void *dst, int u8) {
    int oh = pf_imresize_out_size(h, scale), ow = pf_imresize_out_size(w, scale);
    if (oh < 0 || ow < 0) return -1;
    return resize(src, h, w, c, scale, 0, 0, oh, ow, dst, u8);
}

int pf_imresize_u8(const uint8_t *src, int h, int w, int c, double scale, uint8_t *dst) {
    return whole(src, h, w, c, scale, dst, 1);
}

int pf_imresize_f32(const float *src, int h, int w, int c, double scale, float *dst) {
    return whole(src, h, w, c, scale, dst, 0);
}

int pf_imresize_u8_region(const uint8_t *src, int h, int w, int c, double scale, int y0,
                          int x0, int oh, int ow, uint8_t *dst) {
    return resize(src, h, w, c, scale, y0, x0, oh, ow, dst, 1);
}
