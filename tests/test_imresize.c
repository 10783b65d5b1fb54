/*  test_imresize — MATLAB bicubic imresize against an independent numpy reference.

    tests/reference/imresize_ref.py builds MATLAB's per-dimension weight matrices (with the
    aux mirror and zero-column removal of imresize.m) and multiplies, rounding to uint8 after
    each dimension as MATLAB does for uint8 input. Cases: x1/2, x1/3, x1/4, x3/4, x2, x3 on a
    37x29 RGB image (odd sizes), and x1/4, x2 on a 5x3 image (mirroring past one period).

    Tolerance: uint8 outputs must match exactly. For scales 1/2, 1/4, 2 every weight is a
    dyadic fraction, so both sides compute exact sums and even ties round identically; for 1/3,
    3/4 and 3 the sums differ only in the last bits from summation order, which changes a
    rounding only if a value lies within ~1e-12 of a .5 boundary — none does in this data.
    Float outputs: within 2e-6 (float32 rounding of the intermediate, ~1 ulp of 1.0).
*/
#include "common/imresize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/pf_test.h"

static void *read_file(const char *path, size_t want) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *b = malloc(want + 1);
    size_t got = fread(b, 1, want + 1, f);
    fclose(f);
    if (got != want) {
        free(b);
        return NULL;
    }
    return b;
}

static void test_cases(const char *dir) {
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/imresize/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char name[64], src[64];
        int h, w, num, den, oh, ow;
        if (line[0] == '#' || sscanf(line, "%63s %63s %d %d %d %d %d %d", name, src, &h, &w,
                                     &num, &den, &oh, &ow) != 8) {
            continue;
        }
        n++;
        double scale = (double)num / den;
        CHECK(pf_imresize_out_size(h, scale) == oh && pf_imresize_out_size(w, scale) == ow,
              "%s: out size %dx%d, want %dx%d", name, pf_imresize_out_size(h, scale),
              pf_imresize_out_size(w, scale), oh, ow);
        size_t in_n = (size_t)h * w * 3, out_n = (size_t)oh * ow * 3;
        snprintf(path, sizeof path, "%s/imresize/%s.u8", dir, src);
        uint8_t *in = read_file(path, in_n);
        snprintf(path, sizeof path, "%s/imresize/%s.u8", dir, name);
        uint8_t *want = read_file(path, out_n);
        CHECK(in && want, "%s: cannot read its data", name);
        if (!in || !want) {
            free(in), free(want);
            continue;
        }
        uint8_t *got = malloc(out_n);
        CHECK(pf_imresize_u8(in, h, w, 3, scale, got) == 0, "%s: resize failed", name);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < out_n; i++) {
            if (got[i] != want[i] && bad++ == 0) first = i;
        }
        CHECK(bad == 0, "%s: %zu of %zu values differ, first at %zu: %d vs %d", name, bad,
              out_n, first, got[first], want[first]);

        snprintf(path, sizeof path, "%s/imresize/%s.f32", dir, name);
        float *want_f = read_file(path, out_n * sizeof(float));
        if (want_f) {
            float *in_f = malloc(in_n * sizeof(float)), *got_f = malloc(out_n * sizeof(float));
            for (size_t i = 0; i < in_n; i++) in_f[i] = (float)in[i] / 255.0f;
            CHECK(pf_imresize_f32(in_f, h, w, 3, scale, got_f) == 0, "%s: f32 failed", name);
            double worst = 0;
            for (size_t i = 0; i < out_n; i++) {
                double d = fabs((double)got_f[i] - want_f[i]);
                if (d > worst) worst = d;
            }
            CHECK(worst <= 2e-6, "%s: f32 max difference %g", name, worst);
            free(in_f), free(got_f), free(want_f);
        }
        free(in), free(want), free(got);
    }
    fclose(f);
    CHECK(n == 8, "%d cases in cases.txt, want 8", n);
}

/* Properties that need no reference: constants stay constant, scale 1 is the identity,
   invalid sizes fail. */
static void test_properties(void) {
    uint8_t flat[9 * 7 * 3], out[18 * 14 * 3];
    memset(flat, 77, sizeof flat);
    CHECK(pf_imresize_u8(flat, 9, 7, 3, 2.0, out) == 0, "x2 failed");
    int ok = 1;
    for (int i = 0; i < 18 * 14 * 3; i++) ok &= out[i] == 77;
    CHECK(ok, "a constant image changed under x2");
    CHECK(pf_imresize_u8(flat, 9, 7, 3, 0.25, out) == 0, "x1/4 failed");
    ok = 1;
    for (int i = 0; i < 3 * 2 * 3; i++) ok &= out[i] == 77;
    CHECK(ok, "a constant image changed under x1/4");
    for (int i = 0; i < 9 * 7 * 3; i++) flat[i] = (uint8_t)(i * 37);
    CHECK(pf_imresize_u8(flat, 9, 7, 3, 1.0, out) == 0 && memcmp(out, flat, sizeof flat) == 0,
          "scale 1 is not the identity");
    CHECK(pf_imresize_out_size(0, 0.5) == -1 && pf_imresize_out_size(5, 0) == -1 &&
          pf_imresize_out_size(5, -1) == -1, "invalid sizes accepted");
    CHECK(pf_imresize_out_size(2040, 0.25) == 510 && pf_imresize_out_size(1355, 0.5) == 678,
          "DIV2K sizes: %d %d", pf_imresize_out_size(2040, 0.25),
          pf_imresize_out_size(1355, 0.5));
    CHECK(pf_imresize_u8(flat, 0, 7, 3, 0.5, out) == -1, "0-high image resized");
    CHECK(pf_imresize_u8(flat, 9, 7, 3, 0.0, out) == -1, "scale 0 accepted");
    /* one channel works too */
    uint8_t g[5] = {0, 64, 128, 192, 255}, go[10];
    CHECK(pf_imresize_u8(g, 1, 5, 1, 2.0, go) == 0 && go[0] == 0 && go[9] == 255,
          "gray x2: %d .. %d", go[0], go[9]);
}

/* pf_imresize_u8_region against the same crop of the whole pf_imresize_u8 (whose values the
   reference cases above check): random image sizes and scales, random regions and the four
   corners (where the taps mirror), 1 and 3 channels; byte-identical. Out-of-range regions
   fail. */
static void test_region(void) {
    static const double scales[] = { 0.25, 1.0 / 3, 0.5, 0.75, 2.0, 3.0 };
    uint32_t r = 12345;
    int cases = 0, bad = 0;
    for (int it = 0; it < 60; it++) {
        r = r * 1664525u + 1013904223u;
        int h = 8 + (int)(r >> 8) % 61, w = 8 + (int)(r >> 16) % 77, c = it % 4 == 3 ? 1 : 3;
        double scale = scales[it % 6];
        int oh = pf_imresize_out_size(h, scale), ow = pf_imresize_out_size(w, scale);
        uint8_t *in = malloc((size_t)h * w * c), *all = malloc((size_t)oh * ow * c);
        uint8_t *reg = malloc((size_t)oh * ow * c);
        for (int i = 0; i < h * w * c; i++) {
            r = r * 1664525u + 1013904223u;
            in[i] = (uint8_t)(r >> 24);
        }
        CHECK(pf_imresize_u8(in, h, w, c, scale, all) == 0, "whole resize failed");
        for (int k = 0; k < 6; k++) {
            r = r * 1664525u + 1013904223u;
            int rh = 1 + (int)(r >> 8) % oh, rw = 1 + (int)(r >> 20) % ow;
            int y0 = (int)(r >> 4) % (oh - rh + 1), x0 = (int)(r >> 12) % (ow - rw + 1);
            if (k == 0) y0 = x0 = 0;                       /* corners */
            if (k == 1) y0 = oh - rh, x0 = ow - rw;
            if (k == 2) y0 = 0, x0 = ow - rw;
            if (k == 3) y0 = oh - rh, x0 = 0;
            CHECK(pf_imresize_u8_region(in, h, w, c, scale, y0, x0, rh, rw, reg) == 0,
                  "region failed");
            int diff = 0;
            for (int y = 0; y < rh; y++)
                diff |= memcmp(reg + (size_t)y * rw * c, all + ((size_t)(y0 + y) * ow + x0) * c,
                               (size_t)rw * c) != 0;
            if (diff && bad++ == 0)
                CHECK(0, "%dx%dx%d x%g: region %dx%d at (%d, %d) differs from the crop", h, w, c,
                      scale, rh, rw, y0, x0);
            cases++;
        }
        CHECK(pf_imresize_u8_region(in, h, w, c, scale, 0, 0, oh + 1, ow, reg) == -1 &&
              pf_imresize_u8_region(in, h, w, c, scale, -1, 0, 1, 1, reg) == -1 &&
              pf_imresize_u8_region(in, h, w, c, scale, 0, ow, 1, 1, reg) == -1 &&
              pf_imresize_u8_region(in, h, w, c, scale, 0, 0, 0, 1, reg) == -1,
              "a region outside the output was accepted");
        free(in), free(all), free(reg);
    }
    CHECK(bad == 0 && cases == 360, "%d of %d regions differ", bad, cases);
}

int main(void) {
    test_cases(pf_test_data());
    test_properties();
    test_region();
    return pf_test_end("test_imresize");
}
