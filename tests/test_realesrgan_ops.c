/*  test_realesrgan_ops — common/realesrgan_ops.h: Real-ESRGAN's random resize and noise.

    Without arguments (no Python needed):
      - option checks: the defaults pass; resize_prob of the wrong length or not summing to 1,
        resize_range without 1, a noise_range with lo > hi, a probability above 1 are refused
        naming the key (with the "2" suffix for the second stage);
      - draws: a pure function of (key, stage); 6000 draws keep their ranges and the mix of
        up / down / keep, the three modes, Gaussian / Poisson and gray near their probabilities;
        20000 seeded draws per stage (numbers printed) hold those shares within 6 standard
        deviations, and the up and down factors, sigma and the Poisson scale reach within 1%
        of both ends of their ranges;
      - resize: factor 1 bilinear and bicubic give the input back, a constant image stays
        constant in every mode, area by 1/2 is the 2x2 mean;
      - noise statistics over a 256 x 256 image: Gaussian draws of mean 0 and standard deviation
        1 (within 2%), the noise's standard deviation sigma / 255 within 2%; Poisson counts of
        mean q * vals and variance q * vals (within 2%) on an image of 200 levels (vals 256).
    With `torch` (ctest test_realesrgan_ops.torch; 77 without /usr/bin/python3 with torch):
    resizes in each mode by 7 factors 0.15 .. 1.5 and to 3 given sizes (down, up, mixed),
    on odd sizes, and 60 drawn
    noise steps (both kinds, gray and colour) with their raw draws written;
    tests/reference/realesrgan_ops_ref.py redoes them with F.interpolate (within 1e-4) and
    BasicSR's noise formulas given the same draws (within 1e-5).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/realesrgan_ops.h"
#include "common/rng.h"
#include "tests/pf_test.h"
#include "tests/pf_test_draws.h"
#include "tests/pf_test_ref.h"

#define N_NOISE 60

static void expect_resize_error(const pf_resize_opts *o, const char *sfx, const char *want) {
    char err[512] = "";
    int rc = pf_resize_opts_check(o, sfx, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want '%s', got %d '%s'", want, rc, err);
    if (rc == -1) printf("refused: %s\n", err);
}

static void expect_noise_error(const pf_noise_opts *o, const char *sfx, const char *want) {
    char err[512] = "";
    int rc = pf_noise_opts_check(o, sfx, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want '%s', got %d '%s'", want, rc, err);
    if (rc == -1) printf("refused: %s\n", err);
}

static void test_opts_check(void) {
    pf_resize_opts r;
    pf_noise_opts n;
    char err[512];
    for (int stage = 1; stage <= 2; stage++) {
        pf_resize_opts_default(&r, stage);
        pf_noise_opts_default(&n, stage);
        CHECK(pf_resize_opts_check(&r, "", err, sizeof err) == 0, "resize %d: %s", stage, err);
        CHECK(pf_noise_opts_check(&n, "", err, sizeof err) == 0, "noise %d: %s", stage, err);
    }
    static const struct {
        int n;
        double p3, lo;
        const char *sfx, *want;
    } rcase[] = {
        { 2, NAN, NAN, "2", "resize_prob2: 2 values, not 3" },
        { 3, 0.2, NAN, "", "resize_prob: 3 values sum to 1.1, not 1" },
        { 3, NAN, 1.1, "", "resize_range: [1.1, 1.5] must hold 1" },
        { 3, NAN, 2, "2", "resize_range2: [2, 1.5] is not a range" },
    };
    for (size_t i = 0; i < sizeof rcase / sizeof *rcase; i++) {
        pf_resize_opts_default(&r, 1);
        r.n_resize_prob = rcase[i].n;
        if (!isnan(rcase[i].p3)) r.resize_prob[2] = rcase[i].p3;
        if (!isnan(rcase[i].lo)) r.resize_range[0] = rcase[i].lo;
        expect_resize_error(&r, rcase[i].sfx, rcase[i].want);
    }
    static const struct {
        int stage;
        double noise_lo, scale_lo, gray;
        const char *sfx, *want;
    } ncase[] = {
        { 2, 30, NAN, NAN, "2", "noise_range2: [30, 25] is not a range" },
        { 1, NAN, -1, NAN, "", "poisson_scale_range: [-1, 3] must not go below 0" },
        { 1, NAN, NAN, 1.5, "", "gray_noise_prob: 1.5 is not a probability" },
    };
    for (size_t i = 0; i < sizeof ncase / sizeof *ncase; i++) {
        pf_noise_opts_default(&n, ncase[i].stage);
        if (!isnan(ncase[i].noise_lo)) n.noise_range[0] = ncase[i].noise_lo;
        if (!isnan(ncase[i].scale_lo)) n.poisson_scale_range[0] = ncase[i].scale_lo;
        if (!isnan(ncase[i].gray)) n.gray_noise_prob = ncase[i].gray;
        expect_noise_error(&n, ncase[i].sfx, ncase[i].want);
    }
}

static void test_draws(void) {
    pf_resize_opts ro;
    pf_noise_opts no;
    pf_resize_opts_default(&ro, 1);
    pf_noise_opts_default(&no, 1);
    pf_resize_params a, b;
    pf_rng r1 = pf_resize_rng(42, 1), r2 = pf_resize_rng(42, 1);
    pf_resize_draw(&ro, &r1, &a);
    pf_resize_draw(&ro, &r2, &b);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "the same key and stage draw the same resize");
    CHECK(pf_resize_rng(42, 2).key != r1.key && pf_noise_rng(42, 1).key != r1.key &&
          pf_noise_sample_rng(42, 1).key != pf_noise_rng(42, 1).key, "streams differ");
    int dir[3] = { 0 }, mode[3] = { 0 }, gauss = 0, gray = 0, bad = 0;
    const int n = 6000;
    for (int i = 0; i < n; i++) {
        pf_rng r = pf_resize_rng(pf_mix64((uint64_t)i), 1);
        pf_resize_draw(&ro, &r, &a);
        dir[a.dir]++;
        mode[a.mode]++;
        bad += a.dir == PF_RESIZE_UP && !(a.scale >= 1 && a.scale < 1.5);
        bad += a.dir == PF_RESIZE_DOWN && !(a.scale >= 0.15 && a.scale < 1);
        bad += a.dir == PF_RESIZE_KEEP && a.scale != 1;
        pf_noise_params np;
        r = pf_noise_rng(pf_mix64((uint64_t)i), 1);
        pf_noise_draw(&no, &r, &np);
        gauss += np.kind == PF_NOISE_GAUSSIAN;
        gray += np.gray;
        bad += np.kind == PF_NOISE_GAUSSIAN ? !(np.sigma >= 1 && np.sigma < 30 && np.scale == 0)
                                            : !(np.scale >= 0.05 && np.scale < 3 && np.sigma == 0);
    }
    CHECK(bad == 0, "%d draws out of their ranges", bad);
    CHECK(fabs(dir[0] / (double)n - 0.2) < 0.02 && fabs(dir[1] / (double)n - 0.7) < 0.02 &&
          fabs(dir[2] / (double)n - 0.1) < 0.02, "up/down/keep %d %d %d of %d", dir[0], dir[1],
          dir[2], n);
    for (int m = 0; m < 3; m++)
        CHECK(fabs(mode[m] / (double)n - 1 / 3.0) < 0.03, "mode %d drawn %d times", m, mode[m]);
    CHECK(fabs(gauss / (double)n - 0.5) < 0.03, "gaussian %d of %d", gauss, n);
    CHECK(fabs(gray / (double)n - 0.4) < 0.03, "gray %d of %d", gray, n);
    char line[256];
    a.dir = PF_RESIZE_DOWN;
    a.scale = 0.5;
    a.mode = PF_RESIZE_BICUBIC;
    pf_resize_params_format(&a, line, sizeof line);
    CHECK(!strcmp(line, "resize=down scale=0.5 mode=bicubic"), "format: %s", line);
}

/* Distributions over 20000 seeded draws per stage (deterministic), printed: the up / down /
   keep and mode shares, the factor reaching near both ends of [1, hi) up and [lo, 1) down;
   the Gaussian and gray shares, sigma and the Poisson scale near both ends of their ranges. */
static void test_draw_distributions(void) {
    enum { N = 20000 };
    for (int stage = 1; stage <= 2; stage++) {
        pf_resize_opts ro;
        pf_noise_opts no;
        pf_resize_opts_default(&ro, stage);
        pf_noise_opts_default(&no, stage);
        int dir[3] = { 0 }, mode[3] = { 0 }, gauss = 0, gray = 0;
        pf_span up = { 0 }, down = { 0 }, sigma = { 0 }, scale = { 0 };
        printf("stage %d draws (%d):\n", stage, N);
        for (int i = 0; i < N; i++) {
            uint64_t key = pf_mix64(0xd157000u + (uint64_t)i);
            pf_resize_params a;
            pf_rng r = pf_resize_rng(key, stage);
            pf_resize_draw(&ro, &r, &a);
            dir[a.dir]++;
            mode[a.mode]++;
            if (a.dir != PF_RESIZE_KEEP) pf_span_add(a.dir == PF_RESIZE_UP ? &up : &down, a.scale);
            pf_noise_params np;
            r = pf_noise_rng(key, stage);
            pf_noise_draw(&no, &r, &np);
            gauss += np.kind == PF_NOISE_GAUSSIAN;
            gray += np.gray;
            if (np.kind == PF_NOISE_GAUSSIAN) pf_span_add(&sigma, np.sigma);
            else pf_span_add(&scale, np.scale);
        }
        static const char *dirs[3] = { "resize up", "resize down", "resize keep" };
        for (int d = 0; d < 3; d++) pf_check_share(dirs[d], dir[d], N, ro.resize_prob[d]);
        for (int m = 0; m < 3; m++) pf_check_share(pf_resize_mode_name(m), mode[m], N, 1 / 3.0);
        pf_check_span("up factor", &up, 1, ro.resize_range[1]);
        pf_check_span("down factor", &down, ro.resize_range[0], 1);
        pf_check_share("gaussian", gauss, N, no.gaussian_noise_prob);
        pf_check_share("gray", gray, N, no.gray_noise_prob);
        pf_check_span("gaussian sigma", &sigma, no.noise_range[0], no.noise_range[1]);
        pf_check_span("poisson scale", &scale, no.poisson_scale_range[0],
                      no.poisson_scale_range[1]);
    }
}

static void test_resize(void) {
    enum { H = 13, W = 10, C = 3 };
    float img[H * W * C], out[H * W * C * 4];
    pf_rng r = pf_rng_make(1, 2, 3);
    for (int i = 0; i < H * W * C; i++) img[i] = (float)pf_rng_uniform(&r);
    char err[512];
    for (int m = PF_RESIZE_BILINEAR; m <= PF_RESIZE_BICUBIC; m++) {
        CHECK(pf_resize_f32(img, H, W, C, H, W, 1.0, m, out, err, sizeof err) == 0, "%s", err);
        double worst = 0;
        for (int i = 0; i < H * W * C; i++) worst = fmax(worst, fabs(out[i] - img[i]));
        CHECK(worst < 1e-6, "%s factor 1: the input back (max diff %g)", pf_resize_mode_name(m),
              worst);
    }
    float flat[H * W * C];
    for (int i = 0; i < H * W * C; i++) flat[i] = 0.375f;
    for (int m = 0; m < PF_RESIZE_N_MODES; m++) {
        int oh = pf_resize_out_size(H, 1.37), ow = pf_resize_out_size(W, 1.37);
        CHECK(pf_resize_f32(flat, H, W, C, oh, ow, 1.37, m, out, err, sizeof err) == 0, "%s",
              err);
        double worst = 0;
        for (int i = 0; i < oh * ow * C; i++) worst = fmax(worst, fabs(out[i] - 0.375));
        CHECK(worst < 1e-6, "%s: a constant stays constant (%g)", pf_resize_mode_name(m), worst);
    }
    CHECK(pf_resize_f32(img, 12, W, C, 6, 5, 0, PF_RESIZE_AREA, out, err, sizeof err) == 0, "%s",
          err);
    double worst = 0;
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 5; x++)
            for (int c = 0; c < C; c++) {
                const float *p = img + ((size_t)(2 * y) * W + 2 * x) * C + c;
                double mean = (p[0] + p[C] + p[W * C] + p[W * C + C]) / 4;
                worst = fmax(worst, fabs(out[(y * 5 + x) * C + c] - mean));
            }
    CHECK(worst < 1e-6, "area by 1/2: the 2x2 mean (max diff %g)", worst);
    CHECK(pf_resize_f32(img, H, W, C, 0, 5, 0, PF_RESIZE_AREA, out, err, sizeof err) == -1 &&
          strstr(err, "bad sizes"), "0 rows refused: %s", err);
}

static void test_noise_stats(void) {
    enum { H = 256, W = 256, N = H * W * 3 };
    float *img = malloc(sizeof *img * N), *orig = malloc(sizeof *img * N);
    float *draws = malloc(sizeof *draws * N);
    char err[512];
    for (int i = 0; i < N; i++) orig[i] = img[i] = 0.5f;
    pf_noise_params p = { PF_NOISE_GAUSSIAN, 0, 20, 0 };
    pf_rng r = pf_noise_sample_rng(7, 1);
    CHECK(pf_noise_add(img, H, W, &p, &r, draws, err, sizeof err) == 0, "%s", err);
    double s = 0, s2 = 0, d = 0, d2 = 0;
    for (int i = 0; i < N; i++) {
        s += draws[i];
        s2 += (double)draws[i] * draws[i];
        d += img[i] - 0.5;
        d2 += (img[i] - 0.5) * (img[i] - 0.5);
    }
    CHECK(fabs(s / N) < 0.02 && fabs(sqrt(s2 / N) - 1) < 0.02, "normal draws: mean %g sd %g",
          s / N, sqrt(s2 / N));
    double sd = sqrt(d2 / N - (d / N) * (d / N));
    CHECK(fabs(sd / (20 / 255.0) - 1) < 0.02, "noise sd %g, sigma/255 %g", sd, 20 / 255.0);
    /* Poisson: 200 levels (vals 256), mean and variance of k equal q * vals */
    for (int i = 0; i < N; i++) orig[i] = img[i] = (float)((i / 3) % 200) / 255.0f;
    CHECK(pf_noise_poisson_vals(img, N) == 256, "200 levels: vals 256, not %g",
          pf_noise_poisson_vals(img, N));
    float three[4] = { 0, 0.5f, 1, 0.5f };
    CHECK(pf_noise_poisson_vals(three, 4) == 4, "3 levels: vals 4");
    p.kind = PF_NOISE_POISSON;
    p.sigma = 0;
    p.scale = 1;
    CHECK(pf_noise_add(img, H, W, &p, &r, draws, err, sizeof err) == 0, "%s", err);
    double dev = 0, var = 0, lam_sum = 0;
    for (int i = 0; i < N; i++) {
        double lam = ((i / 3) % 200) / 255.0 * 256;
        dev += draws[i] - lam;
        var += (draws[i] - lam) * (draws[i] - lam);
        lam_sum += lam;
    }
    CHECK(fabs(dev / lam_sum) < 0.01, "Poisson mean off by %g of the total", dev / lam_sum);
    CHECK(fabs(var / lam_sum - 1) < 0.02, "Poisson variance / mean %g", var / lam_sum);
    free(img);
    free(orig);
    free(draws);
}

static void write_pair(const char *dir, int i, const float *in, size_t nin, const float *out,
                       size_t nout) {
    char name[64];
    snprintf(name, sizeof name, "in%03d.f32", i);
    pf_ref_write_file(dir, name, in, sizeof *in * nin);
    snprintf(name, sizeof name, "out%03d.f32", i);
    pf_ref_write_file(dir, name, out, sizeof *out * nout);
}

/* Resize cases from index 0; returns the next index. */
static int write_resizes(const char *dir, FILE *list) {
    static const double factors[] = { 0.15, 0.3, 0.5, 0.77, 1.0, 1.2, 1.5 };
    static const int sizes[3][2] = { { 37, 53 }, { 64, 48 }, { 21, 22 } };
    int i = 0;
    char err[512];
    for (int m = 0; m < PF_RESIZE_N_MODES; m++)
        for (int f = 0; f < 10; f++, i++) {
            int h = sizes[(m + f) % 3][0], w = sizes[(m + f) % 3][1], c = 3, oh, ow;
            double factor = f < 7 ? factors[f] : 0;
            if (f < 7) {
                oh = pf_resize_out_size(h, factor);
                ow = pf_resize_out_size(w, factor);
            } else { /* a given size, as BasicSR's second-order and final resizes */
                oh = f == 7 ? h / 4 + 3 : f == 8 ? h * 5 / 4 : h - 2;
                ow = f == 7 ? w / 3 + 1 : f == 8 ? w + 7 : w * 2 + 1;
            }
            size_t nin = (size_t)h * w * c, nout = (size_t)oh * ow * c;
            float *in = malloc(sizeof *in * nin), *out = malloc(sizeof *out * nout);
            pf_rng r = pf_rng_make(11, (uint64_t)i, 0);
            for (size_t j = 0; j < nin; j++) in[j] = (float)pf_rng_uniform(&r);
            CHECK(pf_resize_f32(in, h, w, c, oh, ow, factor, m, out, err, sizeof err) == 0,
                  "resize %d: %s", i, err);
            fprintf(list, "%d op=resize h=%d w=%d c=%d out_h=%d out_w=%d factor=%.17g mode=%s\n",
                    i, h, w, c, oh, ow, factor, pf_resize_mode_name(m));
            write_pair(dir, i, in, nin, out, nout);
            free(in);
            free(out);
        }
    return i;
}

static void write_noise(const char *dir, FILE *list, int i, int k) {
    pf_noise_opts o;
    pf_noise_opts_default(&o, 1 + k % 2);
    o.gray_noise_prob = 0.5;
    pf_noise_params p;
    pf_rng r = pf_noise_rng(pf_mix64(2026 + (uint64_t)k), 1 + k % 2);
    pf_noise_draw(&o, &r, &p);
    int h = 17 + k % 9, w = 20 + (k * 3) % 7;
    size_t n = (size_t)h * w * 3;
    float *in = malloc(sizeof *in * n), *out = malloc(sizeof *out * n);
    float *draws = malloc(sizeof *draws * n);
    r = pf_rng_make(12, (uint64_t)k, 0);
    int levels = k % 3 == 0 ? 5 : 256; /* few levels: a small vals */
    for (size_t j = 0; j < n; j++)
        in[j] = (float)(pf_rng_below(&r, (uint32_t)levels) / (double)(levels - 1));
    in[0] = 0.5f / 255; /* a tie for the rounding */
    memcpy(out, in, sizeof *in * n);
    char err[512], line[256], name[64];
    r = pf_noise_sample_rng(pf_mix64(2026 + (uint64_t)k), 1 + k % 2);
    CHECK(pf_noise_add(out, h, w, &p, &r, draws, err, sizeof err) == 0, "noise %d: %s", k, err);
    pf_noise_params_format(&p, line, sizeof line);
    fprintf(list, "%d op=noise h=%d w=%d c=3 %s\n", i, h, w, line);
    write_pair(dir, i, in, n, out, n);
    snprintf(name, sizeof name, "draws%03d.f32", i);
    pf_ref_write_file(dir, name, draws, sizeof *draws * (p.gray ? n / 3 : n));
    free(in);
    free(out);
    free(draws);
}

static int with_torch(void) {
    if (!pf_ref_have("test_realesrgan_ops torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_realesrgan_ops.XXXXXX";
    FILE *list = pf_ref_open_cases(dir);
    if (!list) return pf_test_end("test_realesrgan_ops torch");
    int i = write_resizes(dir, list);
    for (int k = 0; k < N_NOISE; k++, i++) write_noise(dir, list, i, k);
    fclose(list);
    pf_ref_run("realesrgan_ops_ref.py", dir);
    return pf_test_end("test_realesrgan_ops torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    test_opts_check();
    test_draws();
    test_draw_distributions();
    test_resize();
    test_noise_stats();
    return pf_test_end("test_realesrgan_ops");
}
