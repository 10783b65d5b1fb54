/*  test_metrics — PSNR and SSIM against an independent reference and analytic values.

    tests/data/metrics_expected.txt was computed by tests/reference/metrics_ref.py (numpy,
    direct 2-D window sums; cross-checked there against skimage.metrics) for three degraded
    versions of a 40x48 image, with crop_border 0 and 4, RGB and Y. Tolerance 1e-9: both sides
    are float64 and differ only in summation order.
    Analytic checks: identical images give PSNR inf and SSIM 1; a constant offset d on every
    channel gives PSNR 10 log10(255^2 / d^2) in RGB, and in Y the offset is d * 219 / 255
    (65.481 + 128.553 + 24.966 = 219); differences confined to the border vanish with
    crop_border; a crop that leaves nothing gives NAN.
    pf_psnr_mean (the mean that leaves out +inf values and counts them): hand-computed means
    of short lists, and a naive mean of the finite values of a generated list with identical
    images (+inf) mixed in; every value +inf gives +inf, nothing added NaN, a NaN value NaN.
*/
#include "common/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/pf_test.h"

enum { H = 40, W = 48 };

static uint8_t *load(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics_%s.u8", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *b = malloc(H * W * 3 + 1);
    size_t n = fread(b, 1, H * W * 3 + 1, f);
    fclose(f);
    if (n != H * W * 3) {
        free(b);
        return NULL;
    }
    return b;
}

static void test_reference(const char *dir) {
    char path[1024], line[256];
    uint8_t *gt = load(dir, "gt");
    CHECK(gt != NULL, "cannot read metrics_gt.u8");
    snprintf(path, sizeof path, "%s/metrics_expected.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f || !gt) {
        if (f) fclose(f);
        free(gt);
        return;
    }
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char name[64];
        int crop, y;
        double want_psnr, want_ssim;
        if (line[0] == '#' || sscanf(line, "%63s %d %d %lf %lf", name, &crop, &y, &want_psnr,
                                     &want_ssim) != 5) {
            continue;
        }
        uint8_t *sr = load(dir, name);
        CHECK(sr != NULL, "cannot read metrics_%s.u8", name);
        if (!sr) continue;
        n++;
        double p = pf_psnr(sr, gt, H, W, crop, y), s = pf_ssim(sr, gt, H, W, crop, y);
        CHECK(fabs(p - want_psnr) <= 1e-9, "%s crop %d y %d: PSNR %.12f, want %.12f", name, crop,
              y, p, want_psnr);
        CHECK(fabs(s - want_ssim) <= 1e-9, "%s crop %d y %d: SSIM %.12f, want %.12f", name, crop,
              y, s, want_ssim);
        /* symmetric in its arguments */
        CHECK(pf_psnr(gt, sr, H, W, crop, y) == p, "%s: PSNR not symmetric", name);
        CHECK(fabs(pf_ssim(gt, sr, H, W, crop, y) - s) <= 1e-15, "%s: SSIM not symmetric", name);
        free(sr);
    }
    fclose(f);
    CHECK(n == 12, "%d reference lines, want 12", n);
    free(gt);
}

static void test_analytic(void) {
    enum { h = 20, w = 24 };
    static uint8_t a[h * w * 3], b[h * w * 3];
    for (int i = 0; i < h * w * 3; i++) a[i] = (uint8_t)(20 + (i * 53) % 200);
    memcpy(b, a, sizeof a);
    CHECK(isinf(pf_psnr(a, b, h, w, 0, 0)) && pf_psnr(a, b, h, w, 0, 0) > 0, "identical: not +inf");
    CHECK(isinf(pf_psnr(a, b, h, w, 2, 1)), "identical Y: not inf");
    CHECK_NEAR(pf_ssim(a, b, h, w, 0, 0), 1.0, 1e-12);
    CHECK_NEAR(pf_ssim(a, b, h, w, 3, 1), 1.0, 1e-12);

    for (int i = 0; i < h * w * 3; i++) b[i] = (uint8_t)(a[i] + 5);
    CHECK_NEAR(pf_psnr(a, b, h, w, 0, 0), 10 * log10(255.0 * 255.0 / 25.0), 1e-12);
    CHECK_NEAR(pf_psnr(a, b, h, w, 0, 0), 34.15140352195873, 1e-12);
    double dy = 5 * 219.0 / 255.0;
    CHECK_NEAR(pf_psnr(a, b, h, w, 4, 1), 10 * log10(255.0 * 255.0 / (dy * dy)), 1e-9);
    /* an offset changes only the luminance term: SSIM = mean of (2 m1 m2 + C1) / (m1^2 + m2^2
       + C1) < 1, but close to 1 for an offset of 5 on mid-grey values */
    double s = pf_ssim(a, b, h, w, 0, 0);
    CHECK(s < 1 && s > 0.99, "offset SSIM %g", s);

    /* differences only in a 2-pixel border disappear with crop_border 2 */
    memcpy(b, a, sizeof a);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            if (y < 2 || x < 2 || y >= h - 2 || x >= w - 2) b[(y * w + x) * 3 + 1] ^= 0x40;
        }
    }
    CHECK(isfinite(pf_psnr(a, b, h, w, 1, 0)), "border difference missed at crop 1");
    CHECK(isinf(pf_psnr(a, b, h, w, 2, 0)), "border difference seen at crop 2");
    CHECK_NEAR(pf_ssim(a, b, h, w, 2, 0), 1.0, 1e-12);

    /* degenerate sizes */
    CHECK(isnan(pf_psnr(a, b, h, w, 10, 0)), "crop 10 of 20 rows not NAN");
    CHECK(isnan(pf_ssim(a, b, h, w, 5, 0)), "10x14 left is too small for SSIM, not NAN");
    CHECK(!isnan(pf_ssim(a, b, h, w, 4, 0)), "12x16 left should give SSIM");
    CHECK(!isnan(pf_ssim(a, b, 11, 11, 0, 0)), "11x11 should give SSIM");
}

static void test_to_u8(void) {
    /* 0.5 * 255 = 127.5 exactly: half up gives 128 */
    const float v[] = {-1.0f, 0.0f, 0.51f / 255, 0.49f / 255, 1.51f / 255, 0.5f, 1.0f, 1.2f, NAN,
                       254.51f / 255, 254.49f / 255};
    const uint8_t want[] = {0, 0, 1, 0, 2, 128, 255, 255, 0, 255, 254};
    uint8_t got[11];
    pf_to_u8(v, got, 11);
    for (int i = 0; i < 11; i++) {
        CHECK(got[i] == want[i], "pf_to_u8(%g) = %d, want %d", v[i], got[i], want[i]);
    }
}

static void test_psnr_mean(void) {
    pf_psnr_mean m = { 0 };
    CHECK(isnan(pf_psnr_mean_get(&m)) && m.n == 0 && m.inf == 0, "empty mean not NaN");
    pf_psnr_mean_add(&m, 30.0);
    pf_psnr_mean_add(&m, INFINITY);
    pf_psnr_mean_add(&m, 33.0);
    pf_psnr_mean_add(&m, INFINITY);
    CHECK(pf_psnr_mean_get(&m) == 31.5 && m.n == 2 && m.inf == 2,
          "30, inf, 33, inf: mean %g (want 31.5), %lld summed, %lld left out", pf_psnr_mean_get(&m),
          (long long)m.n, (long long)m.inf);
    pf_psnr_mean all = { 0 };
    for (int i = 0; i < 3; i++) pf_psnr_mean_add(&all, INFINITY);
    CHECK(isinf(pf_psnr_mean_get(&all)) && pf_psnr_mean_get(&all) > 0 && all.inf == 3,
          "every value inf: mean %g, %lld left out", pf_psnr_mean_get(&all), (long long)all.inf);
    pf_psnr_mean with_nan = { 0 };
    pf_psnr_mean_add(&with_nan, 28.0);
    pf_psnr_mean_add(&with_nan, NAN);
    pf_psnr_mean_add(&with_nan, INFINITY);
    CHECK(isnan(pf_psnr_mean_get(&with_nan)) && with_nan.inf == 1, "a NaN value: mean not NaN");
    /* 50 values, every 7th +inf: the naive mean of the others */
    pf_psnr_mean g = { 0 };
    double sum = 0;
    int finite = 0, left = 0;
    for (int i = 0; i < 50; i++) {
        double v = i % 7 == 3 ? INFINITY : 20.0 + 0.37 * i + sin(i);
        pf_psnr_mean_add(&g, v);
        if (i % 7 == 3) left++;
        else sum += v, finite++;
    }
    CHECK(left == 7 && g.inf == left && g.n == finite && fabs(pf_psnr_mean_get(&g) - sum / finite)
          < 1e-12, "50 values, 7 inf: mean %.12f (naive %.12f), %lld left out",
          pf_psnr_mean_get(&g), sum / finite, (long long)g.inf);
}

int main(void) {
    test_reference(pf_test_data());
    test_analytic();
    test_to_u8();
    test_psnr_mean();
    return pf_test_end("test_metrics");
}
