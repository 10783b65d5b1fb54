/*  Degradations (common/degrade.h).

    BD is compared with a naive MATLAB-style version written here from MATLAB's definitions:
    fspecial's 2D kernel (with its zeroing of taps below eps * max), imfilter 'replicate' over
    the whole image, uint8 rounding, then imresize 'nearest' with the sample position computed
    by MATLAB's own mapping u = x / s + 0.5 * (1 - 1 / s) (s = 1/scale, 1-based) rounded half
    up, i.e. not the floor((i + 0.5) * scale) that degrade.c uses. Noise is checked for its
    statistics and for being a function of the key alone. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/degrade.h"
#include "common/rng.h"
#include "pf_test.h"

/* The naive reference: full 2D blur, then MATLAB's nearest-neighbour downscale. */
static void naive_bd(const uint8_t *gt, int h, int w, int scale, int k, double sigma,
                     uint8_t *lq) {
    double *ker = malloc(sizeof *ker * k * k), mx = 0, sum = 0;
    int r = (k - 1) / 2;
    for (int y = -r; y <= r; y++)
        for (int x = -r; x <= r; x++) {
            double v = exp(-(x * x + y * y) / (2 * sigma * sigma));
            ker[(y + r) * k + x + r] = v;
            if (v > mx) mx = v;
        }
    for (int i = 0; i < k * k; i++) {
        if (ker[i] < DBL_EPSILON * mx) ker[i] = 0;
        sum += ker[i];
    }
    for (int i = 0; i < k * k; i++) ker[i] /= sum;
    uint8_t *blur = malloc((size_t)h * w * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double acc = 0;
                for (int dy = -r; dy <= r; dy++)
                    for (int dx = -r; dx <= r; dx++) {
                        int yy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
                        int xx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
                        acc += ker[(dy + r) * k + dx + r] * gt[((size_t)yy * w + xx) * 3 + c];
                    }
                double v = floor(acc + 0.5);   /* acc >= 0: half away from zero */
                blur[((size_t)y * w + x) * 3 + c] = (uint8_t)(v > 255 ? 255 : v);
            }
    double s = 1.0 / scale;
    for (int y = 1; y <= h / scale; y++)
        for (int x = 1; x <= w / scale; x++) {
            int sy = (int)floor(y / s + 0.5 * (1 - 1 / s) + 0.5) - 1;
            int sx = (int)floor(x / s + 0.5 * (1 - 1 / s) + 0.5) - 1;
            memcpy(lq + ((size_t)(y - 1) * (w / scale) + x - 1) * 3,
                   blur + ((size_t)sy * w + sx) * 3, 3);
        }
    free(ker);
    free(blur);
}

static void test_bd_against_naive(void) {
    int sizes[][2] = { { 48, 36 }, { 30, 42 }, { 24, 24 } };
    struct { int scale, k; double sigma; } cases[] = {
        { 2, 7, 1.6 }, { 3, 7, 1.6 }, { 4, 7, 1.6 }, { 2, 5, 0.8 }, { 3, 13, 3.0 },
        { 4, 1, 1.0 }, { 2, 21, 7.5 },
    };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int w = sizes[si][0], h = sizes[si][1];
        uint8_t *gt = malloc((size_t)w * h * 3);
        pf_rng r = pf_rng_make(7, si, 0);
        /* smooth ramps plus noise, and a saturated block, so rounding and clamping matter */
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) {
                    int v = (x * 5 + y * 3 + c * 40) % 256 + (int)pf_rng_below(&r, 61) - 30;
                    if (x < 6 && y < 6) v = c == 0 ? 255 : 0;
                    gt[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            int s = cases[ci].scale;
            if (w % s || h % s) continue;
            size_t n = (size_t)(w / s) * (h / s) * 3;
            uint8_t *a = malloc(n), *b = malloc(n);
            CHECK(pf_degrade_bd(gt, h, w, s, cases[ci].k, cases[ci].sigma, a) == 0, "bd failed");
            naive_bd(gt, h, w, s, cases[ci].k, cases[ci].sigma, b);
            int diff = 0;
            for (size_t i = 0; i < n; i++) diff += a[i] != b[i];
            CHECK(diff == 0, "%dx%d x%d k%d sigma %g: %d of %zu values differ from the naive "
                  "imfilter + imresize 'nearest'", w, h, s, cases[ci].k, cases[ci].sigma, diff, n);
            free(a);
            free(b);
        }
        free(gt);
    }
}

/* Hand-checked values: an impulse of 255 at GT (y0, x0) appears in the LQ pixel whose sample
   position is within the kernel, weighted by g[dy] * g[dx]; and the sample positions are the
   block centres. */
static void test_bd_by_hand(void) {
    enum { W = 24, H = 24 };
    uint8_t gt[W * H * 3], lq[(W / 3) * (H / 3) * 3];
    memset(gt, 0, sizeof gt);
    /* k = 1: pure sampling; for scale 3 the LQ pixel (i, j) is GT (3i + 1, 3j + 1) */
    for (int i = 0; i < W * H * 3; i++) gt[i] = (uint8_t)(i * 13 % 251);
    CHECK(pf_degrade_bd(gt, H, W, 3, 1, 1.0, lq) == 0, "bd");
    int bad = 0;
    for (int i = 0; i < H / 3; i++)
        for (int j = 0; j < W / 3; j++)
            bad += memcmp(lq + (i * (W / 3) + j) * 3, gt + ((3 * i + 1) * W + 3 * j + 1) * 3, 3);
    CHECK(bad == 0, "x3 samples are not the block centres");
    uint8_t lq2[(W / 2) * (H / 2) * 3], lq4[(W / 4) * (H / 4) * 3];
    pf_degrade_bd(gt, H, W, 2, 1, 1.0, lq2);
    pf_degrade_bd(gt, H, W, 4, 1, 1.0, lq4);
    CHECK(memcmp(lq2 + (5 * 12 + 3) * 3, gt + (11 * W + 7) * 3, 3) == 0,
          "x2 LQ (5, 3) should be GT (11, 7)");
    CHECK(memcmp(lq4 + (2 * 6 + 4) * 3, gt + (10 * W + 18) * 3, 3) == 0,
          "x4 LQ (2, 4) should be GT (10, 18)");
    /* Impulse at GT (7, 10) (x3 sample position of LQ (2, 3)), sigma 1, k 3:
       g = [e^-0.5, 1, e^-0.5] / (1 + 2 e^-0.5) = [0.27407, 0.45186, 0.27407].
       LQ (2, 3) = 255 * 0.45186^2 = 52.07 -> 52. The next LQ pixel samples GT (7, 13): out of
       reach of a 3x3 kernel -> 0. */
    memset(gt, 0, sizeof gt);
    gt[(7 * W + 10) * 3 + 1] = 255;
    CHECK(pf_degrade_bd(gt, H, W, 3, 3, 1.0, lq) == 0, "bd");
    CHECK(lq[(2 * 8 + 3) * 3 + 1] == 52, "impulse centre: %d, expected 52",
          lq[(2 * 8 + 3) * 3 + 1]);
    CHECK(lq[(2 * 8 + 4) * 3 + 1] == 0 && lq[(2 * 8 + 3) * 3] == 0, "impulse spread too far");
    /* Replicated border: a constant image stays constant (weights sum to 1). */
    memset(gt, 200, sizeof gt);
    CHECK(pf_degrade_bd(gt, H, W, 2, 7, 1.6, lq2) == 0, "bd");
    int off = 0;
    for (size_t i = 0; i < sizeof lq2; i++) off += lq2[i] != 200;
    CHECK(off == 0, "constant image changed at %d values (border handling?)", off);
    CHECK(pf_degrade_bd(gt, H - 1, W, 2, 7, 1.6, lq2) != 0, "odd height accepted");
}

/* pf_degrade_downscale_region (BI and BD) against the same crop of the whole
   pf_degrade_downscale (checked above and in test_imresize): random GT sizes, regions at the
   borders and inside, byte-identical; regions outside the LQ fail. */
static void test_downscale_region(void) {
    static const pf_degradation steps[] = {
        { .type = "BI" }, { .type = "BD", .kernel_size = 7, .sigma = 1.6 },
        { .type = "BD", .kernel_size = 13, .sigma = 3.0 },
    };
    int bad = 0, cases = 0;
    for (int it = 0; it < 24; it++) {
        pf_rng r = pf_rng_make(11, (uint64_t)it, 0);
        int s = 2 + it % 3, lh = 3 + (int)pf_rng_below(&r, 30), lw = 3 + (int)pf_rng_below(&r, 40);
        int h = lh * s, w = lw * s;
        const pf_degradation *step = &steps[it % 3];
        uint8_t *gt = malloc((size_t)h * w * 3), *all = malloc((size_t)lh * lw * 3);
        uint8_t *reg = malloc((size_t)lh * lw * 3);
        for (int i = 0; i < h * w * 3; i++) gt[i] = (uint8_t)pf_rng_below(&r, 256);
        CHECK(pf_degrade_downscale(step, gt, h, w, s, all) == 0, "whole downscale failed");
        for (int k = 0; k < 5; k++) {
            int oh = 1 + (int)pf_rng_below(&r, (uint32_t)lh);
            int ow = 1 + (int)pf_rng_below(&r, (uint32_t)lw);
            int y0 = (int)pf_rng_below(&r, (uint32_t)(lh - oh + 1));
            int x0 = (int)pf_rng_below(&r, (uint32_t)(lw - ow + 1));
            if (k == 0) y0 = x0 = 0;
            if (k == 1) y0 = lh - oh, x0 = lw - ow;
            CHECK(pf_degrade_downscale_region(step, gt, h, w, s, y0, x0, oh, ow, reg) == 0,
                  "region failed");
            int diff = 0;
            for (int y = 0; y < oh; y++)
                diff |= memcmp(reg + (size_t)y * ow * 3, all + ((size_t)(y0 + y) * lw + x0) * 3,
                               (size_t)ow * 3) != 0;
            if (diff && bad++ == 0)
                CHECK(0, "%s %dx%d x%d: region %dx%d at (%d, %d) differs from the crop",
                      step->type, w, h, s, ow, oh, x0, y0);
            cases++;
        }
        CHECK(pf_degrade_downscale_region(step, gt, h, w, s, 0, 0, lh + 1, 1, reg) == -1 &&
              pf_degrade_downscale_region(step, gt, h, w, s, 0, lw, 1, 1, reg) == -1,
              "%s: a region outside the LQ was accepted", step->type);
        free(gt), free(all), free(reg);
    }
    CHECK(bad == 0 && cases == 120, "%d of %d regions differ", bad, cases);
}

static void test_noise(void) {
    enum { N = 3 * 256 * 256 };
    uint8_t *a = malloc(N), *b = malloc(N);
    /* statistics: flat 128, sigma 10: mean 128 +- 0.1 (5 standard errors is 0.1), std
       sqrt(100 + 1/12) (rounding) +- 0.1 */
    memset(a, 128, N);
    pf_rng r = pf_rng_make(1, 2, 3);
    pf_degrade_noise(a, N, 10.0, &r);
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
    }
    double mean = sum / N, sd = sqrt(sq / N - mean * mean);
    CHECK_NEAR(mean, 128.0, 0.1);
    CHECK_NEAR(sd, sqrt(100.0 + 1.0 / 12), 0.1);
    /* clamping: on black, half the values stay 0 and none wraps to 255 */
    memset(b, 0, N);
    r = pf_rng_make(1, 2, 4);
    pf_degrade_noise(b, N, 30.0, &r);
    int zeros = 0, high = 0;
    for (int i = 0; i < N; i++) {
        zeros += b[i] == 0;
        high += b[i] > 150;     /* 5 sigma */
    }
    CHECK(fabs(zeros / (double)N - 0.5066) < 0.01, "fraction clamped to 0: %g (expected "
          "P(N(0,30) < 0.5) = 0.5066)", zeros / (double)N);
    CHECK(high == 0, "%d values above 5 sigma (wrap-around?)", high);
    free(a);
    free(b);
}

static void test_random_steps(void) {
    pf_degradation dn = { .type = "DN", .sigma = 5, .sigma_max = 50 };
    pf_degradation steps[2] = { { .type = "DN", .sigma = 15, .sigma_max = 15 },
                                { .type = "JPEG", .quality = 30, .quality_max = 90 } };
    enum { W = 32, H = 24, N = W * H * 3 };
    uint8_t base[N], a[N], b[N];
    for (int i = 0; i < N; i++) base[i] = (uint8_t)(60 + i % 97);
    char err[256];
    /* the same key gives the same bytes; another key other bytes */
    memcpy(a, base, N);
    memcpy(b, base, N);
    CHECK(pf_degrade_random(steps, 2, 42, a, W, H, err, sizeof err) == 0, "%s", err);
    CHECK(pf_degrade_random(steps, 2, 42, b, W, H, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(a, b, N) == 0, "same key, different result");
    memcpy(b, base, N);
    pf_degrade_random(steps, 2, 43, b, W, H, err, sizeof err);
    CHECK(memcmp(a, b, N) != 0, "another key, same result");
    /* a sigma range: the measured noise std spans the range */
    double lo = 1e9, hi = 0;
    for (uint64_t key = 0; key < 200; key++) {
        memset(a, 128, N);
        pf_degrade_random(&dn, 1, key, a, W, H, err, sizeof err);
        double sq = 0;
        for (int i = 0; i < N; i++) sq += (a[i] - 128.0) * (a[i] - 128.0);
        double sd = sqrt(sq / N);
        if (sd < lo) lo = sd;
        if (sd > hi) hi = sd;
    }
    CHECK(lo > 4 && lo < 8 && hi > 45 && hi < 53, "noise std over 200 keys spans %.1f..%.1f, "
          "expected about 5..50", lo, hi);
    /* a quality range: JPEG output size (bytes of difference) varies; every drawn quality is
       one of the range: recompute the draw as degrade.c documents it */
    pf_degradation jq = { .type = "JPEG", .quality = 30, .quality_max = 32 };
    int seen[3] = { 0, 0, 0 };
    for (uint64_t key = 0; key < 60; key++) {
        pf_rng r = pf_rng_make(key, 0, 0);
        int q = 30 + (int)pf_rng_below(&r, 3);
        seen[q - 30]++;
        memcpy(a, base, N);
        memcpy(b, base, N);
        pf_degrade_random(&jq, 1, key, a, W, H, err, sizeof err);
        pf_degrade_jpeg(b, W, H, q, err, sizeof err);
        CHECK(memcmp(a, b, N) == 0, "key %llu: JPEG step is not quality %d",
              (unsigned long long)key, q);
    }
    CHECK(seen[0] && seen[1] && seen[2], "qualities drawn %d %d %d", seen[0], seen[1], seen[2]);
    CHECK(pf_degrade_is_random(steps, 2) && !pf_degrade_is_random(
              &(pf_degradation){ .type = "BD" }, 1), "is_random");
}

int main(void) {
    test_bd_against_naive();
    test_bd_by_hand();
    test_downscale_region();
    test_noise();
    test_random_steps();
    return pf_test_end("test_degrade");
}
