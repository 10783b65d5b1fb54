/*  test_realesrgan_pipeline — common/realesrgan_pipeline.h: Real-ESRGAN's second-order
    degradation chained from its stages.

    Without arguments (no Python needed):
      - option checks: the defaults pass for a 256 x 256 patch; a 64 x 64 patch is refused
        naming blur_kernel_size2 (stage 1 may shrink it to 9 pixels), a JPEG range outside
        1..100, a probability above 1 and a patch not a multiple of scale are refused;
      - determinism: the same sample key gives the same parameters, the same printed line and
        the same LQ; other keys give other parameters and other LQs; a cut line;
      - draws over 4000 keys: second order, second blur, final order, final sinc and the final
        mode near their probabilities; JPEG qualities integers over the whole range.
    With `torch` (ctest test_realesrgan_pipeline.torch; 77 without /usr/bin/python3 with numpy,
    torch, scipy and PIL): 200 samples of a random 64 x 64 GT, x4, second_order_prob 0.5, their
    parameters, GT, raw noise draws, noise and JPEG inputs, JPEG bytes and LQ written;
    tests/reference/realesrgan_pipeline_ref.py rebuilds each LQ from the parameters (torch,
    scipy's J1, PIL's JPEG) within 1 grey level, each JPEG byte-identical to PIL's.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/patch.h"
#include "common/realesrgan_pipeline.h"
#include "common/rng.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

#define N_SAMPLES 200
#define GT 64

static void expect_error(const pf_realesrgan_opts *o, int h, const char *want) {
    char err[512] = "";
    int rc = pf_realesrgan_opts_check(o, h, h, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want '%s', got %d '%s'", want, rc, err);
    if (rc == -1) printf("refused: %s\n", err);
}

/* The test's options: the defaults with stage 1 shrinking to 0.35 at most (a 64-pixel GT
   keeps 22 pixels, enough for blur 2's 21) and stage 2 half the time. */
static void test_opts(pf_realesrgan_opts *o) {
    pf_realesrgan_opts_default(o);
    o->resize[0].resize_range[0] = 0.35;
    o->second_order_prob = 0.5;
}

static void test_checks(void) {
    pf_realesrgan_opts o;
    char err[512] = "";
    pf_realesrgan_opts_default(&o);
    CHECK(pf_realesrgan_opts_check(&o, 256, 256, err, sizeof err) == 0, "defaults: %s", err);
    expect_error(&o, 64, "blur_kernel_size2: 21 is too big for the patch");
    expect_error(&o, 258, "scale: the GT patch 258 x 258 is not a multiple of 4");
    o.jpeg[1].jpeg_range[0] = 0;
    expect_error(&o, 256, "jpeg_range2: [0, 95]");
    pf_realesrgan_opts_default(&o);
    o.second_blur_prob = 1.5;
    expect_error(&o, 256, "second_blur_prob: 1.5 is not a probability");
    pf_realesrgan_opts_default(&o);
    o.blur[0].kernel_prob[0] = 0.5;
    expect_error(&o, 256, "kernel_prob");
    test_opts(&o);
    CHECK(pf_realesrgan_opts_check(&o, GT, GT, err, sizeof err) == 0, "test opts: %s", err);
}

static void random_gt(uint64_t seed, uint8_t *gt) {
    pf_rng r = pf_rng_make(seed, 77, 0);
    /* smooth gradients plus noise: JPEG and the blurs see structure, not only noise */
    for (int y = 0; y < GT; y++)
        for (int x = 0; x < GT; x++)
            for (int c = 0; c < 3; c++)
                gt[(y * GT + x) * 3 + c] =
                    (uint8_t)((x * 3 + y * (c + 1) + (int)pf_rng_below(&r, 60)) % 256);
}

static int degrade(const pf_realesrgan_opts *o, uint64_t key, const uint8_t *gt, uint8_t *lq,
                   pf_realesrgan_params *p, pf_realesrgan_trace *t) {
    char err[512] = "";
    pf_realesrgan_draw(o, key, p);
    int rc = pf_realesrgan_degrade_u8(o, p, gt, GT, GT, lq, t, err, sizeof err);
    CHECK(rc == 0, "degrade key %llu: %s", (unsigned long long)key, err);
    return rc;
}

static void test_determinism(void) {
    pf_realesrgan_opts o;
    test_opts(&o);
    uint8_t gt[GT * GT * 3], lq[3][(GT / 4) * (GT / 4) * 3];
    random_gt(1, gt);
    pf_realesrgan_params p[3];
    uint64_t k = pf_dataset_degrade_key(7, 2, 11);
    degrade(&o, k, gt, lq[0], &p[0], NULL);
    degrade(&o, k, gt, lq[1], &p[1], NULL);
    degrade(&o, pf_dataset_degrade_key(7, 2, 12), gt, lq[2], &p[2], NULL);
    char a[2048], b[2048];
    pf_realesrgan_params_format(&p[0], a, sizeof a);
    pf_realesrgan_params_format(&p[1], b, sizeof b);
    CHECK(!strcmp(a, b) && !memcmp(lq[0], lq[1], sizeof lq[0]), "same key, same sample");
    pf_realesrgan_params_format(&p[2], b, sizeof b);
    CHECK(strcmp(a, b) && memcmp(lq[0], lq[2], sizeof lq[0]), "another index, another sample");
    printf("explain: %s\n", a);
    int n = pf_realesrgan_params_format(&p[0], b, 40);
    CHECK(n == (int)strlen(a) && strlen(b) == 39, "a cut line: %d of %zu", n, strlen(a));
}

/* The pipeline's own draws over 4000 keys: near their probabilities, qualities in range. */
static void test_draw_rates(void) {
    pf_realesrgan_opts o;
    pf_realesrgan_opts_default(&o);
    o.second_order_prob = 0.5;
    o.jpeg[1].jpeg_range[0] = 60;
    o.jpeg[1].jpeg_range[1] = 61;
    const int n = 4000;
    int second = 0, blur2 = 0, sinc_first = 0, sinc = 0, bad = 0, q30 = 0, q95 = 0, q60 = 0;
    int modes[PF_RESIZE_N_MODES] = { 0 };
    double q_sum = 0;
    for (int i = 0; i < n; i++) {
        pf_realesrgan_params p;
        pf_realesrgan_draw(&o, pf_dataset_degrade_key(5, 0, (uint64_t)i), &p);
        second += p.second_order;
        blur2 += p.blur2_on;
        sinc_first += p.sinc_first;
        sinc += p.sinc.family == PF_BLUR_SINC;
        modes[p.final_mode]++;
        bad += p.quality1 < 30 || p.quality1 > 95 || p.quality2 < 60 || p.quality2 > 61;
        q30 += p.quality1 == 30;
        q95 += p.quality1 == 95;
        q60 += p.quality2 == 60;
        q_sum += p.quality1;
    }
    CHECK(bad == 0, "%d qualities out of range", bad);
    CHECK(q30 > 0 && q95 > 0, "both ends of jpeg_range drawn (%d, %d)", q30, q95);
    CHECK(fabs(q_sum / n - 62.5) < 1.0, "mean quality %g, not 62.5", q_sum / n);
    CHECK(fabs(q60 / (double)n - 0.5) < 0.03, "quality2 60 drawn %d of %d", q60, n);
    CHECK(fabs(second / (double)n - 0.5) < 0.03, "second order %d of %d", second, n);
    CHECK(fabs(blur2 / (double)n - 0.8) < 0.03, "second blur %d of %d", blur2, n);
    CHECK(fabs(sinc_first / (double)n - 0.5) < 0.03, "sinc first %d of %d", sinc_first, n);
    CHECK(fabs(sinc / (double)n - 0.8) < 0.03, "final sinc %d of %d", sinc, n);
    for (int m = 0; m < PF_RESIZE_N_MODES; m++)
        CHECK(fabs(modes[m] / (double)n - 1 / 3.0) < 0.03, "final mode %d: %d", m, modes[m]);
}

static int write_sample(const char *dir, FILE *f, int i, const pf_realesrgan_params *p,
                        const uint8_t *gt, const uint8_t *lq, const pf_realesrgan_trace *t) {
    char line[2048], name[64];
    pf_realesrgan_params_format(p, line, sizeof line);
    fprintf(f, "%d %s\n", i, line);
    snprintf(name, sizeof name, "gt%03d.u8", i);
    int rc = pf_ref_write_file(dir, name, gt, GT * GT * 3);
    snprintf(name, sizeof name, "lq%03d.u8", i);
    rc |= pf_ref_write_file(dir, name, lq, (GT / 4) * (GT / 4) * 3);
    for (int s = 0; s < 2; s++) {
        snprintf(name, sizeof name, "jpeg%d_%03d.u8", s + 1, i);
        if (t->jpeg_in[s]) rc |= pf_ref_write_file(dir, name, t->jpeg_in[s], t->n_jpeg_in[s]);
        snprintf(name, sizeof name, "jpeg%d_%03d.jpg", s + 1, i);
        if (t->jpeg[s]) rc |= pf_ref_write_file(dir, name, t->jpeg[s], t->n_jpeg[s]);
        if (!t->noise_draws[s]) continue;
        snprintf(name, sizeof name, "noise%d_%03d.f32", s + 1, i);
        rc |= pf_ref_write_file(dir, name, t->noise_draws[s], t->n_noise_draws[s] * 4);
        snprintf(name, sizeof name, "noisein%d_%03d.f32", s + 1, i);
        int gray = s ? p->noise2.gray : p->noise1.gray; /* draws: h * w, the input h * w * 3 */
        size_t n_in = t->n_noise_draws[s] * (gray ? 3 : 1);
        rc |= pf_ref_write_file(dir, name, t->noise_in[s], n_in * 4);
    }
    return rc;
}

static void test_torch(void) {
    char dir[] = "/tmp/pf_realesrgan_pipeline_XXXXXX";
    FILE *f = pf_ref_open_cases(dir);
    if (!f) return;
    pf_realesrgan_opts o;
    test_opts(&o);
    for (int i = 0; i < N_SAMPLES; i++) {
        uint8_t gt[GT * GT * 3], lq[(GT / 4) * (GT / 4) * 3];
        pf_realesrgan_params p;
        pf_realesrgan_trace t = { 0 };
        random_gt((uint64_t)i, gt);
        int rc = degrade(&o, pf_dataset_degrade_key(3, 1, (uint64_t)i), gt, lq, &p, &t);
        if (rc == 0) write_sample(dir, f, i, &p, gt, lq, &t);
        pf_realesrgan_trace_free(&t);
    }
    fclose(f);
    pf_ref_run("realesrgan_pipeline_ref.py", dir);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) {
        if (!pf_ref_have("test_realesrgan_pipeline", "numpy, torch, scipy, PIL")) return 77;
        test_torch();
    } else {
        test_checks();
        test_determinism();
        test_draw_rates();
    }
    return pf_test_end("test_realesrgan_pipeline");
}
