/*  test_usm_jpeg — common/realesrgan_ops.h: Real-ESRGAN's USM-sharpened GT and its JPEG stage.

    Without arguments (no Python needed):
      - the Gaussian sums to 1 and is exp(-x^2 / (2 * 8^2)) relative to its centre;
      - USM keeps a constant image, and a 1 x 1 image;
      - jpeg_range checks: the defaults pass; lo > hi, 0, 101 and a fraction are refused
        naming the key (with the "2" suffix);
      - draws: a pure function of (key, stage); 4000 draws over [30, 32] hit each quality
        near 1/3 of the time and never leave the range;
      - the JPEG stage on a constant grey image gives it back within 1 level.
    With `ref` (ctest test_usm_jpeg.ref; 77 without /usr/bin/python3 with numpy, scipy and PIL):
    USM of float and uint8 images of odd sizes (some below the kernel's radius), and the JPEG
    stage at qualities 1..100 on odd sizes; tests/reference/usm_jpeg_ref.py redoes USM in numpy
    + scipy, and with cv2 when it imports (uint8 within 1 grey level, float within 0.01), and
    checks the JPEG bytes and decoded pixels identical to PIL's Image.save(quality=q) and
    decode.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/realesrgan_ops.h"
#include "common/rng.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

static void test_kernel_and_usm(void) {
    double k[PF_USM_KSIZE], sum = 0;
    pf_usm_kernel(k);
    for (int i = 0; i < PF_USM_KSIZE; i++) {
        sum += k[i];
        double want = exp(-(i - 25) * (i - 25) / 128.0); /* sigma 8, relative to the centre */
        CHECK(fabs(k[i] / k[25] - want) < 1e-12, "k[%d] / k[25] = %.17g, want %.17g", i,
              k[i] / k[25], want);
    }
    CHECK(fabs(sum - 1) < 1e-12, "kernel sums to %.17g", sum);
    enum { H = 30, W = 41 };
    static float img[H * W * 3], out[H * W * 3];
    char err[256];
    for (int i = 0; i < H * W * 3; i++) img[i] = 0.3f;
    CHECK(pf_usm_sharp_f32(img, H, W, 3, out, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < H * W * 3; i++)
        CHECK(fabsf(out[i] - 0.3f) < 1e-6f, "constant image changed at %d: %g", i, out[i]);
    uint8_t px[3] = { 10, 128, 250 };
    CHECK(pf_usm_sharp_u8(px, 1, 1, 3, px, err, sizeof err) == 0, "%s", err);
    CHECK(px[0] == 10 && px[1] == 128 && px[2] == 250, "1x1 changed");
    CHECK(pf_usm_sharp_f32(img, 0, W, 3, out, err, sizeof err) == -1, "size 0 accepted");
}

static void expect_jpeg_error(double lo, double hi, const char *sfx, const char *want) {
    pf_jpeg_opts o = { { lo, hi } };
    char err[256] = "";
    int rc = pf_jpeg_opts_check(&o, sfx, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want '%s', got %d '%s'", want, rc, err);
    if (rc == -1) printf("refused: %s\n", err);
}

static void test_jpeg_opts_draws(void) {
    pf_jpeg_opts o;
    char err[256], a[64], b[64];
    for (int stage = 1; stage <= 2; stage++) {
        pf_jpeg_opts_default(&o, stage);
        CHECK(pf_jpeg_opts_check(&o, "", err, sizeof err) == 0, "default %d: %s", stage, err);
    }
    expect_jpeg_error(95, 30, "", "jpeg_range: [95, 30] is not a range");
    expect_jpeg_error(0, 95, "2", "jpeg_range2: [0, 95] is not within 1..100");
    expect_jpeg_error(30, 101, "", "jpeg_range: [30, 101] is not within 1..100");
    expect_jpeg_error(30.5, 95, "2", "jpeg_range2: [30.5, 95] must be whole qualities");
    pf_jpeg_opts r3 = { { 30, 32 } };
    int count[3] = { 0 };
    for (int i = 0; i < 4000; i++) {
        pf_rng r = pf_jpeg_rng((uint64_t)i, 1), r2 = pf_jpeg_rng((uint64_t)i, 1);
        pf_jpeg_params p, q;
        pf_jpeg_draw(&r3, &r, &p);
        pf_jpeg_draw(&r3, &r2, &q);
        pf_jpeg_params_format(&p, a, sizeof a);
        pf_jpeg_params_format(&q, b, sizeof b);
        CHECK(strcmp(a, b) == 0, "draw %d not repeatable: %s / %s", i, a, b);
        CHECK(p.quality >= 30 && p.quality <= 32, "quality %d outside [30, 32]", p.quality);
        if (p.quality >= 30 && p.quality <= 32) count[p.quality - 30]++;
    }
    for (int i = 0; i < 3; i++)
        CHECK(fabs(count[i] / 4000.0 - 1 / 3.0) < 0.03, "quality %d drawn %d / 4000", 30 + i,
              count[i]);
    enum { H = 16, W = 24 };
    static float img[H * W * 3];
    for (int i = 0; i < H * W * 3; i++) img[i] = 100 / 255.0f;
    CHECK(pf_jpeg_apply(img, H, W, 50, NULL, NULL, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < H * W * 3; i++)
        CHECK(fabsf(img[i] * 255 - 100) <= 1.0f, "grey 100 became %g", img[i] * 255);
    CHECK(pf_jpeg_apply(img, H, W, 0, NULL, NULL, err, sizeof err) == -1, "quality 0 accepted");
}

/* A smooth image with edges and noise, so USM's mask and JPEG both have work. */
static void make_image(float *img, int h, int w, int c, pf_rng *r) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++) {
                double v = 0.5 + 0.3 * sin(x * 0.3 + ch) * cos(y * 0.2) + (x > w / 2 ? 0.2 : 0);
                v += 0.08 * (pf_rng_uniform(r) - 0.5);
                img[((size_t)y * w + x) * c + ch] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
            }
}

static void ref_cases(void) {
    char dir[] = "/tmp/pf_usm_jpeg_XXXXXX", name[64], err[256];
    FILE *f = pf_ref_open_cases(dir);
    if (!f) return;
    static const int usm[][3] = { { 37, 53, 3 }, { 9, 20, 3 }, { 64, 31, 1 }, { 1, 7, 3 } };
    static const int jpg[][3] = { { 17, 23, 1 }, { 33, 9, 10 }, { 64, 48, 24 }, { 31, 47, 25 },
                                  { 8, 8, 50 }, { 45, 29, 75 }, { 1, 1, 90 }, { 50, 61, 95 },
                                  { 19, 37, 100 }, { 120, 80, 2 } };
    pf_rng r = pf_rng_make(40, 3, 0);
    int idx = 0;
    for (size_t i = 0; i < sizeof usm / sizeof *usm; i++, idx++) {
        int h = usm[i][0], w = usm[i][1], c = usm[i][2];
        size_t n = (size_t)h * w * c;
        float *a = malloc(n * 4 * sizeof *a);
        uint8_t *u = malloc(n * 2);
        make_image(a, h, w, c, &r);
        CHECK(pf_usm_sharp_f32(a, h, w, c, a + n, err, sizeof err) == 0, "%s", err);
        for (size_t j = 0; j < n; j++) u[j] = (uint8_t)(a[j] * 255.0f + 0.5f);
        CHECK(pf_usm_sharp_u8(u, h, w, c, u + n, err, sizeof err) == 0, "%s", err);
        fprintf(f, "%d kind=usm h=%d w=%d c=%d\n", idx, h, w, c);
        snprintf(name, sizeof name, "%d.f32", idx);
        pf_ref_write_file(dir, name, a, n * 2 * sizeof *a);
        snprintf(name, sizeof name, "%d.u8", idx);
        pf_ref_write_file(dir, name, u, n * 2);
        free(a);
        free(u);
    }
    for (size_t i = 0; i < sizeof jpg / sizeof *jpg; i++, idx++) {
        int h = jpg[i][0], w = jpg[i][1], q = jpg[i][2];
        size_t n = (size_t)h * w * 3, len = 0;
        float *a = malloc(n * 2 * sizeof *a);
        uint8_t *buf = NULL;
        make_image(a, h, w, 3, &r);
        a[0] = -0.2f; /* clamped */
        a[n - 1] = 1.3f;
        memcpy(a + n, a, n * sizeof *a);
        CHECK(pf_jpeg_apply(a + n, h, w, q, &buf, &len, err, sizeof err) == 0, "%s", err);
        fprintf(f, "%d kind=jpeg h=%d w=%d quality=%d\n", idx, h, w, q);
        snprintf(name, sizeof name, "%d.f32", idx);
        pf_ref_write_file(dir, name, a, n * 2 * sizeof *a);
        snprintf(name, sizeof name, "%d.jpg", idx);
        if (buf) pf_ref_write_file(dir, name, buf, len);
        free(buf);
        free(a);
    }
    fclose(f);
    pf_ref_run("usm_jpeg_ref.py", dir);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "ref") == 0) {
        if (!pf_ref_have("test_usm_jpeg.ref", "numpy, scipy.ndimage, PIL")) return 77;
        ref_cases();
        return pf_test_end("test_usm_jpeg.ref");
    }
    test_kernel_and_usm();
    test_jpeg_opts_draws();
    return pf_test_end("test_usm_jpeg");
}
