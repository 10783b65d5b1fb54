/*  pf_test_psnr — the naive PSNR-Y the evaluation tests compare PixFlow's metrics with:
    Y = 16 + (65.481 R + 128.553 G + 24.966 B) / 255 in double (BasicSR's rgb2ycbcr with
    y_only, tests/reference/metrics_ref.py's convention), MSE over the region left by crop_border,
    10 log10(255^2 / MSE) (+inf for identical images). */
#ifndef PF_TEST_PSNR_H
#define PF_TEST_PSNR_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* PSNR-Y of RGB8 HWC a (aw pixels a row) against the top-left h x w of b (bw pixels a row),
   crop_border cb pixels on each side. */
static inline double pf_test_psnr_y(const uint8_t *a, int aw, const uint8_t *b, int bw, int h,
                                    int w, int cb) {
    double se = 0;
    long n = 0;
    for (int y = cb; y < h - cb; y++)
        for (int x = cb; x < w - cb; x++) {
            const uint8_t *p = a + ((size_t)y * aw + x) * 3, *q = b + ((size_t)y * bw + x) * 3;
            double ya = 16 + (65.481 * p[0] + 128.553 * p[1] + 24.966 * p[2]) / 255;
            double yb = 16 + (65.481 * q[0] + 128.553 * q[1] + 24.966 * q[2]) / 255;
            se += (ya - yb) * (ya - yb);
            n++;
        }
    return 10 * log10(255.0 * 255.0 / (se / n));
}
#endif
