/*  degrade — see degrade.h.

    BD is computed separably and only where it is sampled: for each LQ row, the vertical 1D
    blur of its GT centre row over the columns the row's taps read, then the horizontal 1D blur at each sampled
    column. Equal to the full 2D imfilter followed by sampling, up to double rounding (the test
    compares with a naive 2D version).
*/
#include "common/degrade.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/image.h"
#include "common/imresize.h"

void pf_gaussian_kernel_1d(int k, double sigma, double *g) {
    double c = (k - 1) / 2.0, sum = 0;
    for (int i = 0; i < k; i++) {
        double d = i - c;
        g[i] = exp(-d * d / (2 * sigma * sigma));
        sum += g[i];
    }
    for (int i = 0; i < k; i++) g[i] /= sum;
}

/* MATLAB's uint8 conversion: round half away from zero, saturate. */
static uint8_t to_u8(double v) {
    v = round(v);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

int pf_degrade_bd_region(const uint8_t *gt, int h, int w, int scale, int k, double sigma,
                         int y0, int x0, int oh, int ow, uint8_t *lq) {
    if (scale < 1 || h % scale || w % scale || h < scale || w < scale || k < 1 || k % 2 == 0 ||
        !(sigma > 0))
        return -1;
    int lh = h / scale, lw = w / scale, r = k / 2;
    if (y0 < 0 || x0 < 0 || oh < 1 || ow < 1 || y0 > lh - oh || x0 > lw - ow) return -1;
    /* GT columns the horizontal taps of LQ columns x0 .. x0 + ow - 1 read */
    int c0 = clampi((int)floor((x0 + 0.5) * scale) - r, 0, w - 1);
    int c1 = clampi((int)floor((x0 + ow - 0.5) * scale) + r, 0, w - 1);
    size_t span = (size_t)(c1 - c0 + 1) * 3;
    double *g = malloc(sizeof *g * k), *col = malloc(sizeof *col * span);
    if (!g || !col) {
        free(g);
        free(col);
        return -1;
    }
    pf_gaussian_kernel_1d(k, sigma, g);
    for (int y = y0; y < y0 + oh; y++) {
        int cy = (int)floor((y + 0.5) * scale);
        /* vertical pass at row cy, columns c0..c1, every channel */
        for (size_t x = 0; x < span; x++) col[x] = 0;
        for (int i = 0; i < k; i++) {
            const uint8_t *row = gt + ((size_t)clampi(cy + i - r, 0, h - 1) * w + c0) * 3;
            for (size_t x = 0; x < span; x++) col[x] += g[i] * row[x];
        }
        /* horizontal pass at the sampled columns */
        for (int x = x0; x < x0 + ow; x++) {
            int cx = (int)floor((x + 0.5) * scale);
            double acc[3] = { 0, 0, 0 };
            for (int i = 0; i < k; i++) {
                const double *p = col + (size_t)(clampi(cx + i - r, 0, w - 1) - c0) * 3;
                acc[0] += g[i] * p[0];
                acc[1] += g[i] * p[1];
                acc[2] += g[i] * p[2];
            }
            uint8_t *o = lq + ((size_t)(y - y0) * ow + (x - x0)) * 3;
            o[0] = to_u8(acc[0]);
            o[1] = to_u8(acc[1]);
            o[2] = to_u8(acc[2]);
        }
    }
    free(g);
    free(col);
    return 0;
}

int pf_degrade_bd(const uint8_t *gt, int h, int w, int scale, int k, double sigma,
                  uint8_t *lq) {
    if (scale < 1 || h < scale || w < scale) return -1;
    return pf_degrade_bd_region(gt, h, w, scale, k, sigma, 0, 0, h / scale, w / scale, lq);
}

int pf_degrade_downscale(const pf_degradation *step, const uint8_t *gt, int h, int w,
                         int scale, uint8_t *lq) {
    if (strcmp(step->type, "BD") == 0)
        return pf_degrade_bd(gt, h, w, scale, step->kernel_size, step->sigma, lq);
    /* BI, and DN whose noise is added per sample */
    return pf_imresize_u8(gt, h, w, 3, 1.0 / scale, lq);
}

int pf_degrade_downscale_region(const pf_degradation *step, const uint8_t *gt, int h, int w,
                                int scale, int y0, int x0, int oh, int ow, uint8_t *lq) {
    if (strcmp(step->type, "BD") == 0)
        return pf_degrade_bd_region(gt, h, w, scale, step->kernel_size, step->sigma, y0, x0, oh,
                                    ow, lq);
    return pf_imresize_u8_region(gt, h, w, 3, 1.0 / scale, y0, x0, oh, ow, lq);
}

int pf_degrade_is_random(const pf_degradation *steps, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(steps[i].type, "DN") == 0 || strcmp(steps[i].type, "JPEG") == 0) return 1;
    return 0;
}

void pf_degrade_noise(uint8_t *px, size_t n, double sigma, pf_rng *r) {
    const double two_pi = 6.283185307179586;
    for (size_t i = 0; i < n; i += 2) {
        /* Box-Muller; 1 - u is in (0, 1], so the log is finite */
        double rad = sqrt(-2.0 * log(1.0 - pf_rng_uniform(r)));
        double th = two_pi * pf_rng_uniform(r);
        px[i] = to_u8(px[i] + sigma * rad * cos(th));
        if (i + 1 < n) px[i + 1] = to_u8(px[i + 1] + sigma * rad * sin(th));
    }
}

int pf_degrade_jpeg(uint8_t *rgb, int w, int h, int quality, char *err, size_t errlen) {
    uint8_t *buf;
    size_t len;
    if (pf_image_encode_jpeg(rgb, w, h, quality, &buf, &len, err, errlen) != 0) return -1;
    pf_image back;
    int rc = pf_image_decode_jpeg(buf, len, "JPEG degradation", &back, err, errlen);
    free(buf);
    if (rc != 0) return -1;
    memcpy(rgb, back.data, (size_t)w * h * 3);
    pf_image_free(&back);
    return 0;
}

int pf_degrade_random(const pf_degradation *steps, int n, uint64_t key, uint8_t *lq, int w,
                      int h, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        const pf_degradation *s = &steps[i];
        pf_rng r = pf_rng_make(key, (uint64_t)i, 0);
        if (strcmp(s->type, "DN") == 0) {
            double sigma = s->sigma + (s->sigma_max - s->sigma) * pf_rng_uniform(&r);
            pf_degrade_noise(lq, (size_t)w * h * 3, sigma, &r);
        } else if (strcmp(s->type, "JPEG") == 0) {
            int q = s->quality + (int)pf_rng_below(&r, (uint32_t)(s->quality_max - s->quality + 1));
            if (pf_degrade_jpeg(lq, w, h, q, err, errlen) != 0) return -1;
        }
    }
    return 0;
}
