/*  test_blur_kernel — common/blur_kernel.h: Real-ESRGAN's blur kernels, their draws and the
    reflect-padded filtering.

    Without arguments (no Python needed):
      - option checks: the defaults pass; an even, too small or too large blur_kernel_size, a
        kernel_prob of the wrong length or not summing to 1, a range with lo > hi, a beta range
        without 1, a sinc_prob above 1 and an unknown kernel name are refused with a message
        naming the key (with the "2" suffix for the second stage);
      - draws: a pure function of (key, stage); 4000 default draws hold every kind and every
        odd size 7..21, about 10% sinc, iso kinds with sigma_y = sigma_x and no rotation,
        every value in its range, sinc's omega_c by size as BasicSR's dataset; over 20000
        seeded draws (numbers printed), sinc's omega_c reaches near both ends of [pi/3, pi)
        below size 13 and of [pi/5, pi) above, sizes 7..21 near 1/8 each, beta below 1 in
        about half the generalized and plateau draws, beta and sigma ranges reached at both
        ends (bounds a correct draw misses with probability below 1e-8);
      - kernels: sum 1, point-symmetric, padding centres them; bad parameters are refused;
      - filtering: a pulse gives the input back, a constant image stays constant, a kernel
        padded with zero rings gives the same bits as the unpadded one, a too small image is
        refused, and one asymmetric kernel against a naive loop (correlation, reflect).
    With `torch` (ctest test_blur_kernel.torch; 77 without /usr/bin/python3 with numpy, scipy
    and torch): 200 seeded draws over every kind and sinc (kernel_list of the six at 1/6 each,
    sinc_prob 0.2, stages 1 and 2, blur_kernel_size 3, 5, 13, 21, 31, and final sincs at
    final_sinc_prob 0.5, so pulses too), each
    written as its params line, its kernel and a filtered random image (uint8 or float), plus
    a random asymmetric kernel (whose filtering shows a flipped correlation);
    tests/reference/blur_kernel_ref.py rebuilds every kernel from the
    parameters (numpy, scipy.special.j1: max abs within 1e-6) and every filtered image with
    torch's F.pad(reflect) + F.conv2d (within 1e-3).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/blur_kernel.h"
#include "common/rng.h"
#include "tests/pf_test.h"
#include "tests/pf_test_draws.h"
#include "tests/pf_test_ref.h"

#define N_SAMPLES 200

static void expect_error(const pf_blur_opts *o, const char *sfx, const char *want) {
    char err[512] = "";
    int rc = pf_blur_opts_check(o, sfx, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want an error with '%s', got %d '%s'", want, rc, err);
    if (rc == -1) printf("refused: %s\n", err);
}

static void test_opts_check(void) {
    pf_blur_opts o;
    char err[512];
    for (int stage = 1; stage <= 2; stage++) {
        pf_blur_opts_default(&o, stage);
        CHECK(pf_blur_opts_check(&o, "", err, sizeof err) == 0, "stage %d defaults: %s", stage,
              err);
    }
    pf_blur_opts_default(&o, 1);
    o.blur_kernel_size = 20;
    expect_error(&o, "", "blur_kernel_size: 20 is even");
    o.blur_kernel_size = 33;
    expect_error(&o, "2", "blur_kernel_size2: 33 is out of range");
    o.blur_kernel_size = 1;
    expect_error(&o, "", "blur_kernel_size: 1 is out of range");
    pf_blur_opts_default(&o, 1);
    o.n_kernel_prob = 5;
    expect_error(&o, "2", "kernel_prob2: 5 values for the 6 of kernel_list2");
    pf_blur_opts_default(&o, 1);
    o.kernel_prob[0] = 0.42;
    expect_error(&o, "", "kernel_prob: 6 values sum to 0.97");
    o.kernel_prob[0] = 0.45 + 5e-7; /* within 1e-6: accepted */
    CHECK(pf_blur_opts_check(&o, "", err, sizeof err) == 0, "sum 1 + 5e-7: %s", err);
    o.kernel_prob[0] = -0.1;
    expect_error(&o, "", "kernel_prob: value 1");
    pf_blur_opts_default(&o, 2);
    o.blur_sigma[0] = 3;
    expect_error(&o, "2", "blur_sigma2: [3, 1.5] is not a range lo <= hi");
    pf_blur_opts_default(&o, 1);
    o.betag_range[0] = 5;
    expect_error(&o, "", "betag_range: [5, 4] is not a range");
    o.betag_range[0] = 2;
    expect_error(&o, "", "betag_range: [2, 4] must hold 1");
    pf_blur_opts_default(&o, 1);
    o.betap_range[0] = 0;
    expect_error(&o, "", "betap_range: [0, 2] must be above 0");
    pf_blur_opts_default(&o, 1);
    o.sinc_prob = 1.5;
    expect_error(&o, "", "sinc_prob: 1.5 is not a probability");
    pf_blur_opts_default(&o, 1);
    o.kernel_list[2] = PF_BLUR_SINC;
    expect_error(&o, "", "kernel_list: entry 3 is not one of");
    CHECK(pf_blur_family_from_name("plateau_aniso") == PF_BLUR_PLATEAU_ANISO, "plateau_aniso");
    CHECK(pf_blur_family_from_name("gaussian") == -1, "unknown name");
    CHECK(pf_blur_family_from_name("sinc") == -1, "sinc is not a kernel_list name");
}

static int in_range(double v, const double *r) {
    return v >= r[0] && v <= r[1];
}

static void test_draws(void) {
    pf_blur_opts o;
    pf_blur_opts_default(&o, 1);
    pf_blur_params a, b;
    pf_rng r1 = pf_blur_rng(42, 1), r2 = pf_blur_rng(42, 1), r3 = pf_blur_rng(42, 2);
    pf_blur_draw(&o, &r1, &a);
    pf_blur_draw(&o, &r2, &b);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "the same key and stage draw the same kernel");
    CHECK(r3.key != r1.key, "stages 1 and 2 are different streams");
    int fam[PF_BLUR_N_FAMILIES] = { 0 }, size[32] = { 0 }, bad = 0;
    const int n = 4000;
    for (int i = 0; i < n; i++) {
        pf_rng r = pf_blur_rng(pf_mix64((uint64_t)i), 1);
        pf_blur_draw(&o, &r, &a);
        fam[a.family]++;
        size[a.kernel_size]++;
        int iso = a.family == PF_BLUR_ISO || a.family == PF_BLUR_GENERALIZED_ISO ||
                  a.family == PF_BLUR_PLATEAU_ISO;
        if (a.family == PF_BLUR_SINC) {
            double lo = a.kernel_size < 13 ? M_PI / 3 : M_PI / 5;
            bad += !(a.omega_c >= lo && a.omega_c < M_PI);
            continue;
        }
        bad += !in_range(a.sigma_x, o.blur_sigma) || !in_range(a.sigma_y, o.blur_sigma);
        bad += iso && (a.sigma_y != a.sigma_x || a.rotation != 0);
        bad += !iso && !(a.rotation >= -M_PI && a.rotation < M_PI);
        if (a.family >= PF_BLUR_GENERALIZED_ISO)
            bad += !in_range(a.beta, a.family <= PF_BLUR_GENERALIZED_ANISO ? o.betag_range
                                                                           : o.betap_range);
    }
    CHECK(bad == 0, "%d draws out of their ranges", bad);
    for (int f = 0; f <= PF_BLUR_SINC; f++)
        CHECK(fam[f] > 0, "no %s among %d draws", pf_blur_family_name(f), n);
    for (int k = 7; k <= 21; k += 2) CHECK(size[k] > n / 16, "size %d drawn %d times", k, size[k]);
    CHECK(size[3] + size[5] + size[23] == 0, "sizes outside 7..21 drawn");
    CHECK(fabs(fam[PF_BLUR_SINC] / (double)n - 0.1) < 0.02, "sinc in %d of %d draws",
          fam[PF_BLUR_SINC], n);
    CHECK(fabs(fam[PF_BLUR_ISO] / (double)n - 0.9 * 0.45) < 0.03, "iso in %d of %d draws",
          fam[PF_BLUR_ISO], n);
    o.blur_kernel_size = 5;
    pf_rng r = pf_blur_rng(7, 1);
    pf_blur_draw(&o, &r, &a);
    CHECK(a.kernel_size == 5, "blur_kernel_size 5 draws size 5, not %d", a.kernel_size);
    r = pf_blur_rng(7, 3);
    pf_blur_draw_final_sinc(0, 21, &r, &a);
    CHECK(a.family == PF_BLUR_PULSE && a.kernel_size == 1, "final_sinc_prob 0: a pulse");
    pf_blur_draw_final_sinc(1, 21, &r, &a);
    CHECK(a.family == PF_BLUR_SINC && a.omega_c >= M_PI / 3, "final_sinc_prob 1: a sinc");
    char line[512];
    pf_blur_params_format(&a, line, sizeof line);
    CHECK(strncmp(line, "family=sinc kernel_size=", 24) == 0 && strstr(line, " omega_c="),
          "format: %s", line);
}

/* Distributions over 20000 seeded draws (deterministic: the same numbers every run), printed:
   sinc's cutoff reaches both ends of [pi/3, pi) below size 13 and of [pi/5, pi) at 13 and
   above; sizes 7..21 odd about uniform; beta below 1 in half the generalized and the plateau
   draws (BasicSR's even odds), each beta range and blur_sigma reached at both ends. */
static void test_draw_distributions(void) {
    enum { N = 20000 };
    pf_blur_opts o;
    pf_blur_opts_default(&o, 1);
    o.sinc_prob = 1;
    pf_span small = { 0 }, large = { 0 };
    int size[32] = { 0 };
    pf_blur_params a;
    printf("blur draws (%d each):\n", N);
    for (int i = 0; i < N; i++) {
        pf_rng r = pf_blur_rng(pf_mix64(0x5eed0000u + (uint64_t)i), 1);
        pf_blur_draw(&o, &r, &a);
        pf_span_add(a.kernel_size < 13 ? &small : &large, a.omega_c);
        size[a.kernel_size]++;
    }
    pf_check_span("sinc omega_c, size < 13", &small, M_PI / 3, M_PI);
    pf_check_span("sinc omega_c, size >= 13", &large, M_PI / 5, M_PI);
    for (int k = 7; k <= 21; k += 2) {
        char what[64];
        snprintf(what, sizeof what, "kernel size %d", k);
        pf_check_share(what, size[k], N, 1 / 8.0);
    }
    pf_blur_opts_default(&o, 1);
    o.sinc_prob = 0;
    o.n_kernels = o.n_kernel_prob = 2;
    o.kernel_list[0] = PF_BLUR_GENERALIZED_ISO;
    o.kernel_list[1] = PF_BLUR_PLATEAU_ANISO;
    o.kernel_prob[0] = o.kernel_prob[1] = 0.5;
    o.betap_range[0] = 0.25;       /* the default [1, 2] has nothing below 1 */
    char err[256];
    CHECK(pf_blur_opts_check(&o, "", err, sizeof err) == 0, "%s", err);
    pf_span bg = { 0 }, bp = { 0 }, sig = { 0 };
    int below[2] = { 0 }, n[2] = { 0 };
    for (int i = 0; i < N; i++) {
        pf_rng r = pf_blur_rng(pf_mix64(0xbe7a0000u + (uint64_t)i), 2);
        pf_blur_draw(&o, &r, &a);
        int plateau = a.family == PF_BLUR_PLATEAU_ANISO;
        n[plateau]++;
        below[plateau] += a.beta < 1;
        pf_span_add(plateau ? &bp : &bg, a.beta);
        pf_span_add(&sig, a.sigma_x);
    }
    pf_check_share("generalized beta < 1", below[0], n[0], 0.5);
    pf_check_share("plateau beta < 1", below[1], n[1], 0.5);
    pf_check_span("generalized beta", &bg, o.betag_range[0], o.betag_range[1]);
    pf_check_span("plateau beta", &bp, o.betap_range[0], o.betap_range[1]);
    pf_check_span("sigma_x", &sig, o.blur_sigma[0], o.blur_sigma[1]);
}

static void test_kernels(void) {
    float k[31 * 31];
    char err[512];
    pf_blur_params p = { PF_BLUR_PLATEAU_ANISO, 9, 2.0, 0.7, 0.6, 1.5, 0 };
    CHECK(pf_blur_kernel(&p, 0, k, err, sizeof err) == 0, "%s", err);
    double sum = 0, asym = 0;
    for (int i = 0; i < 81; i++) {
        sum += k[i];
        asym = fmax(asym, fabs(k[i] - k[80 - i]));
    }
    CHECK_NEAR(sum, 1.0, 1e-5);
    CHECK(asym < 1e-7, "kernel not point-symmetric: %g", asym);
    CHECK(k[4 * 9 + 5] != k[5 * 9 + 4], "an aniso rotated kernel is not transpose-symmetric");
    float padded[13 * 13];
    CHECK(pf_blur_kernel(&p, 13, padded, err, sizeof err) == 0, "%s", err);
    int same = 1;
    for (int y = 0; y < 13; y++)
        for (int x = 0; x < 13; x++) {
            int in = y >= 2 && y < 11 && x >= 2 && x < 11;
            same &= padded[y * 13 + x] == (in ? k[(y - 2) * 9 + x - 2] : 0.0f);
        }
    CHECK(same, "pad_to 13 centres the 9x9 kernel in zeros");
    pf_blur_params s = { PF_BLUR_SINC, 7, 0, 0, 0, 0, M_PI / 2 };
    CHECK(pf_blur_kernel(&s, 0, k, err, sizeof err) == 0, "%s", err);
    CHECK(k[24] > k[23] && k[23] > 0, "sinc centre above its neighbour");
    pf_blur_params bad = p;
    bad.kernel_size = 8;
    CHECK(pf_blur_kernel(&bad, 0, k, err, sizeof err) == -1 && strstr(err, "kernel_size 8"),
          "even size: %s", err);
    bad = p;
    bad.sigma_y = 0;
    CHECK(pf_blur_kernel(&bad, 0, k, err, sizeof err) == -1, "sigma_y 0 refused");
    CHECK(pf_blur_kernel(&p, 10, padded, err, sizeof err) == -1, "pad_to 10 refused");
}

/* Correlation with reflect padding, one pixel at a time: the orientation oracle. */
static double naive_at(const uint8_t *img, int h, int w, const float *k, int ks, int y, int x,
                       int ch) {
    double acc = 0;
    for (int i = 0; i < ks; i++)
        for (int j = 0; j < ks; j++) {
            int yy = y + i - ks / 2, xx = x + j - ks / 2;
            yy = yy < 0 ? -yy : yy >= h ? 2 * h - 2 - yy : yy;
            xx = xx < 0 ? -xx : xx >= w ? 2 * w - 2 - xx : xx;
            acc += k[i * ks + j] * img[((size_t)yy * w + xx) * 3 + ch];
        }
    return acc;
}

static void test_filter(void) {
    enum { H = 11, W = 14 };
    uint8_t img[H * W * 3];
    pf_rng r = pf_rng_make(1, 2, 3);
    for (int i = 0; i < H * W * 3; i++) img[i] = (uint8_t)pf_rng_below(&r, 256);
    float out[H * W * 3], out2[H * W * 3], pulse[9] = { 0, 0, 0, 0, 1, 0, 0, 0, 0 };
    char err[512];
    CHECK(pf_blur_filter_u8(img, H, W, 3, pulse, 3, out, err, sizeof err) == 0, "%s", err);
    int same = 1;
    for (int i = 0; i < H * W * 3; i++) same &= out[i] == img[i];
    CHECK(same, "a pulse gives the input back");
    /* asymmetric kernel against the naive loop */
    float k5[25], k21[21 * 21] = { 0 };
    for (int i = 0; i < 25; i++) k5[i] = (float)(pf_rng_uniform(&r) - 0.3);
    CHECK(pf_blur_filter_u8(img, H, W, 3, k5, 5, out, err, sizeof err) == 0, "%s", err);
    double worst = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int ch = 0; ch < 3; ch++)
                worst = fmax(worst, fabs(out[(y * W + x) * 3 + ch] -
                                         naive_at(img, H, W, k5, 5, y, x, ch)));
    CHECK(worst < 1e-3, "asymmetric 5x5 vs the naive loop: max diff %g", worst);
    /* the same kernel in 21x21 zeros: the same bits (the rings are skipped), where the image
       is above 10 pixels each side as F.pad's reflect mode needs for 21 / 2 */
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) k21[(i + 8) * 21 + j + 8] = k5[i * 5 + j];
    CHECK(pf_blur_filter_u8(img, H, W, 3, k21, 21, out2, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(out, out2, sizeof out) == 0, "zero rings skipped: same bits as unpadded");
    CHECK(pf_blur_filter_u8(img, 10, W, 3, k21, 21, out2, err, sizeof err) == -1 &&
          strstr(err, "too small"), "10 rows with a 21x21 kernel refused: %s", err);
    enum { H2 = 24, W2 = 10 };
    static float fimg[H2 * W2 * 2], fo1[H2 * W2 * 2], fo2[H2 * W2 * 2];
    CHECK(pf_blur_filter_f32(fimg, H2, W2, 2, k21, 21, fo2, err, sizeof err) == -1,
          "width 10 with 21x21 refused");
    for (int i = 0; i < H2 * W2 * 2; i++) fimg[i] = (float)pf_rng_uniform(&r);
    CHECK(pf_blur_filter_f32(fimg, H2, W2, 2, k5, 5, fo1, err, sizeof err) == 0, "%s", err);
    float k9[81] = { 0 };
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) k9[(i + 2) * 9 + j + 2] = k5[i * 5 + j];
    CHECK(pf_blur_filter_f32(fimg, H2, W2, 2, k9, 9, fo2, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(fo1, fo2, sizeof fo1) == 0, "float, 9x9 rings: same bits as unpadded");
    /* constant image, normalised kernel: constant */
    float g[49];
    pf_blur_params p = { PF_BLUR_GENERALIZED_ANISO, 7, 1.5, 0.8, 1.0, 0.7, 0 };
    CHECK(pf_blur_kernel(&p, 0, g, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < H2 * W2 * 2; i++) fimg[i] = 0.25f;
    CHECK(pf_blur_filter_f32(fimg, H2, W2, 2, g, 7, fo1, err, sizeof err) == 0, "%s", err);
    worst = 0;
    for (int i = 0; i < H2 * W2 * 2; i++) worst = fmax(worst, fabs(fo1[i] - 0.25));
    CHECK(worst < 1e-6, "a constant image stays constant: max diff %g", worst);
}

/* Sample i: its options, stage and the kernel's size after padding. */
static void sample_draw(int i, pf_blur_params *p, int *stage, int *pad_to) {
    static const int sizes[5] = { 21, 31, 13, 3, 5 };
    pf_blur_opts o;
    *stage = i % 8 == 7 ? 3 : 1 + (i / 5) % 2;
    pf_blur_opts_default(&o, *stage == 2 ? 2 : 1);
    for (int f = 0; f < 6; f++) o.kernel_prob[f] = 1.0 / 6;
    o.sinc_prob = 0.2;
    o.blur_kernel_size = sizes[i % 5];
    pf_rng r = pf_blur_rng(pf_mix64(2026 + (uint64_t)i), *stage);
    if (*stage == 3)
        pf_blur_draw_final_sinc(0.5, o.blur_kernel_size, &r, p); /* pulses too */
    else
        pf_blur_draw(&o, &r, p);
    *pad_to = o.blur_kernel_size; /* BasicSR pads to the largest size */
}

/* Kernel, input and output of sample i into dir; its line into list. */
static void write_sample(const char *dir, FILE *list, int i) {
    pf_blur_params p;
    int stage, n;
    sample_draw(i, &p, &stage, &n);
    static float k[31 * 31];
    char err[512], line[512], name[64];
    if (n < p.kernel_size) n = p.kernel_size;
    CHECK(pf_blur_kernel(&p, n, k, err, sizeof err) == 0, "sample %d: %s", i, err);
    int h = 16 + i % 7, w = 16 + (i * 5) % 11, c = 3, u8 = i % 2 == 0;
    size_t count = (size_t)h * w * c;
    uint8_t *in8 = malloc(count);
    float *inf = malloc(sizeof *inf * count), *out = malloc(sizeof *out * count);
    pf_rng r = pf_rng_make(99, (uint64_t)i, 0);
    for (size_t j = 0; j < count; j++) {
        in8[j] = (uint8_t)pf_rng_below(&r, 256);
        inf[j] = (float)pf_rng_uniform(&r);
    }
    int rc = u8 ? pf_blur_filter_u8(in8, h, w, c, k, n, out, err, sizeof err)
                : pf_blur_filter_f32(inf, h, w, c, k, n, out, err, sizeof err);
    CHECK(rc == 0, "sample %d filter: %s", i, err);
    pf_blur_params_format(&p, line, sizeof line);
    fprintf(list, "%d stage=%d pad_to=%d h=%d w=%d c=%d input=%s %s\n", i, stage, n, h, w, c,
            u8 ? "u8" : "f32", line);
    snprintf(name, sizeof name, "k%03d.f32", i);
    pf_ref_write_file(dir, name, k, sizeof *k * (size_t)n * n);
    snprintf(name, sizeof name, "in%03d.bin", i);
    pf_ref_write_file(dir, name, u8 ? (void *)in8 : (void *)inf,
                      u8 ? count : sizeof *inf * count);
    snprintf(name, sizeof name, "out%03d.f32", i);
    pf_ref_write_file(dir, name, out, sizeof *out * count);
    free(in8);
    free(inf);
    free(out);
}

/* A random kernel without symmetry (the orientation of the correlation shows), as sample i. */
static void write_asymmetric(const char *dir, FILE *list, int i) {
    enum { KS = 5, H = 9, W = 13, C = 3 };
    float k[KS * KS], out[H * W * C];
    uint8_t img[H * W * C];
    char err[512], name[64];
    pf_rng r = pf_rng_make(5, 6, 7);
    for (int j = 0; j < KS * KS; j++) k[j] = (float)(pf_rng_uniform(&r) - 0.3);
    for (int j = 0; j < H * W * C; j++) img[j] = (uint8_t)pf_rng_below(&r, 256);
    CHECK(pf_blur_filter_u8(img, H, W, C, k, KS, out, err, sizeof err) == 0, "%s", err);
    fprintf(list, "%d stage=0 pad_to=%d h=%d w=%d c=%d input=u8 family=asymmetric "
            "kernel_size=%d\n", i, KS, H, W, C, KS);
    snprintf(name, sizeof name, "k%03d.f32", i);
    pf_ref_write_file(dir, name, k, sizeof k);
    snprintf(name, sizeof name, "in%03d.bin", i);
    pf_ref_write_file(dir, name, img, sizeof img);
    snprintf(name, sizeof name, "out%03d.f32", i);
    pf_ref_write_file(dir, name, out, sizeof out);
}

static int with_torch(void) {
    if (!pf_ref_have("test_blur_kernel torch", "numpy, scipy.special, torch")) return 77;
    char dir[] = "/tmp/pf_blur_kernel.XXXXXX";
    FILE *list = pf_ref_open_cases(dir);
    if (!list) return pf_test_end("test_blur_kernel torch");
    for (int i = 0; i < N_SAMPLES; i++) write_sample(dir, list, i);
    write_asymmetric(dir, list, N_SAMPLES);
    fclose(list);
    pf_ref_run("blur_kernel_ref.py", dir);
    return pf_test_end("test_blur_kernel torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    test_opts_check();
    test_draws();
    test_draw_distributions();
    test_kernels();
    test_filter();
    return pf_test_end("test_blur_kernel");
}
