/*  test_gan_loss — nn/gan_loss.h: BasicSR's GANLoss and its gradient.

    Without arguments (no Python needed):
      - names: the five gan_type names parse and print back; others are refused;
      - finite differences: for every gan_type x target real / fake x discriminator / generator,
        with BasicSR's defaults and with smoothed labels (0.9 / 0.1) and loss_weight 0.1, every
        element's gradient against a central difference of the loss (double), on 9 values away
        from the hinge's kinks; the gradient buffer starts as NaN, so an element left unwritten
        fails;
      - values worked by hand: BCE-with-logits at 0 (log 2) and at +-100 and +-1000 (finite, no
        overflow), lsgan at the label (0), the wgan and hinge sign rules (wgan: -mean real,
        +mean fake; hinge discriminator: relu(1 - x) real, relu(1 + x) fake, derivative 0 at
        and beyond the margin; hinge generator: -mean(x) whatever the target and labels);
        loss_weight scales the generator's loss and gradient and never the discriminator's;
      - n = 0 and a gan_type outside the enum give NaN and leave the gradient alone.
    With `torch` (ctest test_gan_loss.torch; 77 without /usr/bin/python3 with numpy and torch):
    120 cases (every gan_type x real / fake x disc / gen x 2 label settings x 3 inputs: 37
    values in [-4, 4], 128 values of up to +-60, and 8 specials with both hinge kinks and
    +-100) written with their losses and gradients; tests/reference/gan_loss_ref.py recomputes
    them with torch's BCEWithLogitsLoss, MSELoss, softplus and relu in float64 and autograd
    (within 1e-6 relative).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/gan_loss.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

#define N_FD 9

static const char *const type_names[PF_GAN_N_TYPES] = {
    "vanilla", "lsgan", "wgan", "wgan_softplus", "hinge",
};

static void test_names(void) {
    for (int i = 0; i < PF_GAN_N_TYPES; i++) {
        pf_gan_type t = PF_GAN_HINGE;
        CHECK(pf_gan_type_parse(type_names[i], &t) == 0 && (int)t == i, "parse %s",
              type_names[i]);
        CHECK(!strcmp(pf_gan_type_name(t), type_names[i]), "name %d: %s", i,
              pf_gan_type_name(t));
    }
    static const char *const bad[] = { "Vanilla", "relativistic", "", "wgan-softplus", "hinge " };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pf_gan_type t = PF_GAN_LSGAN;
        CHECK(pf_gan_type_parse(bad[i], &t) == -1 && t == PF_GAN_LSGAN, "'%s' refused", bad[i]);
    }
    CHECK(!strcmp(pf_gan_type_name((pf_gan_type)PF_GAN_N_TYPES), "?"), "out of the enum");
}

/* Loss settings: BasicSR's defaults (set 0) or smoothed labels and loss_weight 0.1 (set 1). */
static pf_gan_loss make_loss(pf_gan_type type, int set) {
    pf_gan_loss l;
    pf_gan_loss_default(&l, type);
    if (set) {
        l.real_label_val = 0.9f;
        l.fake_label_val = 0.1f;
        l.loss_weight = 0.1f;
    }
    return l;
}

/* Every element's gradient of one configuration against a central difference. */
static void check_fd(const pf_gan_loss *l, int real, int disc, const float *x0) {
    float x[N_FD], d[N_FD];
    memcpy(x, x0, sizeof x);
    for (int i = 0; i < N_FD; i++) d[i] = NAN;
    double loss = pf_gan_loss_forward_backward(l, x, N_FD, real, disc, d);
    CHECK(isfinite(loss), "%s real %d disc %d: loss %g", pf_gan_type_name(l->gan_type), real,
          disc, loss);
    for (int i = 0; i < N_FD; i++) {
        const float h = 1e-3f;
        x[i] = x0[i] + h;
        double up = pf_gan_loss_forward_backward(l, x, N_FD, real, disc, NULL);
        double step = (double)x[i];
        x[i] = x0[i] - h;
        double down = pf_gan_loss_forward_backward(l, x, N_FD, real, disc, NULL);
        step -= (double)x[i];
        x[i] = x0[i];
        double fd = (up - down) / step;
        CHECK(fabs(d[i] - fd) <= 1e-6 + 1e-5 * fabs(fd),
              "%s real %d disc %d w %g: d[%d] = %.9g, finite difference %.9g",
              pf_gan_type_name(l->gan_type), real, disc, l->loss_weight, i, d[i], fd);
    }
}

static void test_finite_differences(void) {
    float x[N_FD];
    pf_rng r = pf_rng_make(41, 1, 0);
    for (int i = 0; i < N_FD; i++) {
        x[i] = (float)(6.0 * pf_rng_uniform(&r) - 3.0);
        if (fabsf(fabsf(x[i]) - 1.0f) < 0.05f) x[i] += 0.1f; /* off the hinge's kinks */
    }
    x[0] = 0.5f, x[1] = -0.5f, x[2] = 1.5f, x[3] = -1.5f; /* each side of both kinks */
    for (int type = 0; type < PF_GAN_N_TYPES; type++)
        for (int set = 0; set < 2; set++)
            for (int real = 0; real < 2; real++)
                for (int disc = 0; disc < 2; disc++) {
                    pf_gan_loss l = make_loss((pf_gan_type)type, set);
                    check_fd(&l, real, disc, x);
                }
}

/* One hand-worked case: loss and gradient of x[0..n) against want and want_d[0..n). */
static void expect(const pf_gan_loss *l, const float *x, int n, int real, int disc, double want,
                   const double *want_d, const char *what) {
    float d[16];
    double loss = pf_gan_loss_forward_backward(l, x, (size_t)n, real, disc, d);
    CHECK(fabs(loss - want) <= 1e-12 * fmax(1.0, fabs(want)), "%s: loss %.17g, want %.17g",
          what, loss, want);
    for (int i = 0; i < n; i++)
        CHECK(fabs(d[i] - want_d[i]) <= 1e-7 * fmax(1.0, fabs(want_d[i])),
              "%s: d[%d] = %.9g, want %.9g", what, i, d[i], want_d[i]);
}

static void test_vanilla_values(void) {
    pf_gan_loss l = make_loss(PF_GAN_VANILLA, 0);
    const float zero[1] = { 0.0f };
    expect(&l, zero, 1, 1, 1, log(2.0), (double[]){ -0.5 }, "vanilla 0 real");
    expect(&l, zero, 1, 0, 1, log(2.0), (double[]){ 0.5 }, "vanilla 0 fake");
    /* x = +-100, +-1000: the softplus of the large side is x itself, the other ~0 */
    const float big[4] = { 100.0f, -100.0f, 1000.0f, -1000.0f };
    expect(&l, big, 4, 1, 1, (100.0 + 1000.0) / 4, (double[]){ 0, -0.25, 0, -0.25 },
           "vanilla large real");
    expect(&l, big, 4, 0, 1, (100.0 + 1000.0) / 4, (double[]){ 0.25, 0, 0.25, 0 },
           "vanilla large fake");
    l.real_label_val = 0.9f; /* BCE at 0 is log 2 whatever t; d = 1/2 - t */
    expect(&l, zero, 1, 1, 0, log(2.0), (double[]){ 0.5 - (double)0.9f }, "vanilla 0 t 0.9");
}

static void test_lsgan_values(void) {
    pf_gan_loss l = make_loss(PF_GAN_LSGAN, 1); /* labels 0.9 / 0.1, weight 0.1 */
    const float at_label[2] = { 0.9f, 0.9f }, x[2] = { 2.1f, 0.1f };
    expect(&l, at_label, 2, 1, 1, 0.0, (double[]){ 0, 0 }, "lsgan at the real label");
    double e = (double)2.1f - (double)0.1f; /* x[0] - fake label; x[1] is at it */
    expect(&l, x, 2, 0, 1, e * e / 2, (double[]){ e, 0 }, "lsgan fake disc");
    expect(&l, x, 2, 0, 0, e * e / 2 * (double)0.1f, (double[]){ e * (double)0.1f, 0 },
           "lsgan fake gen, weighted");
}

static void test_sign_rules(void) {
    const float x[4] = { 1, 2, 3, 6 }; /* mean 3 */
    pf_gan_loss l = make_loss(PF_GAN_WGAN, 0);
    l.loss_weight = 0.5f;
    const double q = 0.25, hq = 0.125;
    expect(&l, x, 4, 1, 1, -3.0, (double[]){ -q, -q, -q, -q }, "wgan real disc");
    expect(&l, x, 4, 0, 1, 3.0, (double[]){ q, q, q, q }, "wgan fake disc");
    expect(&l, x, 4, 1, 0, -1.5, (double[]){ -hq, -hq, -hq, -hq }, "wgan real gen, weighted");
    expect(&l, x, 4, 0, 0, 1.5, (double[]){ hq, hq, hq, hq }, "wgan fake gen, weighted");
    l = make_loss(PF_GAN_WGAN_SOFTPLUS, 0);
    const float ws[2] = { 0.0f, -800.0f };
    expect(&l, ws, 2, 1, 1, (log(2.0) + 800.0) / 2, (double[]){ -0.25, -0.5 },
           "wgan_softplus real");
    expect(&l, ws, 2, 0, 1, log(2.0) / 2, (double[]){ 0.25, 0 }, "wgan_softplus fake");

    l = make_loss(PF_GAN_HINGE, 1); /* the labels must not matter, nor the weight for D */
    const float hr[4] = { 2, 1, 0.5f, -1 }, hf[4] = { -2, -1, -0.5f, 1 };
    expect(&l, hr, 4, 1, 1, 0.625, (double[]){ 0, 0, -q, -q }, "hinge real disc");
    expect(&l, hf, 4, 0, 1, 0.625, (double[]){ 0, 0, q, q }, "hinge fake disc");
    const double w = (double)0.1f;
    for (int real = 0; real < 2; real++)
        expect(&l, x, 4, real, 0, -3.0 * w, (double[]){ -q * w, -q * w, -q * w, -q * w },
               real ? "hinge gen, target real" : "hinge gen, target fake");
}

/* loss_weight: the generator's loss and gradient scale with it, the discriminator's do not. */
static void test_weight_sides(void) {
    float x[N_FD], d1[N_FD], dw[N_FD];
    pf_rng r = pf_rng_make(41, 2, 0);
    for (int i = 0; i < N_FD; i++) x[i] = (float)(4.0 * pf_rng_uniform(&r) - 2.0);
    for (int type = 0; type < PF_GAN_N_TYPES; type++)
        for (int real = 0; real < 2; real++)
            for (int disc = 0; disc < 2; disc++) {
                pf_gan_loss l = make_loss((pf_gan_type)type, 0);
                double a = pf_gan_loss_forward_backward(&l, x, N_FD, real, disc, d1);
                l.loss_weight = 0.25f;
                double b = pf_gan_loss_forward_backward(&l, x, N_FD, real, disc, dw);
                double k = disc ? 1.0 : 0.25;
                int same = 1;
                for (int i = 0; i < N_FD; i++) same &= dw[i] == (float)(d1[i] * k);
                CHECK(fabs(b - a * k) <= 1e-15 * fabs(a) && same,
                      "%s real %d disc %d: weight 0.25 gives %.17g, weight 1 %.17g",
                      type_names[type], real, disc, b, a);
            }
}

static void test_nan_cases(void) {
    pf_gan_loss l = make_loss(PF_GAN_VANILLA, 0);
    float x[1] = { 1 }, d[1] = { 7 };
    CHECK(isnan(pf_gan_loss_forward_backward(&l, x, 0, 1, 1, d)) && d[0] == 7, "n = 0");
    l.gan_type = (pf_gan_type)PF_GAN_N_TYPES;
    CHECK(isnan(pf_gan_loss_forward_backward(&l, x, 1, 1, 1, d)) && d[0] == 7, "bad gan_type");
    l = make_loss(PF_GAN_HINGE, 0);
    x[0] = NAN;
    CHECK(isnan(pf_gan_loss_forward_backward(&l, x, 1, 1, 1, d)), "hinge of NaN is NaN");
}

/* One case for the reference: x%03d.f32, grad%03d.f32 and its line in params.txt. */
static void write_case(const char *dir, FILE *list, int i, const pf_gan_loss *l, int real,
                       int disc, const float *x, size_t n) {
    float *d = malloc(sizeof *d * n);
    double loss = pf_gan_loss_forward_backward(l, x, n, real, disc, d);
    fprintf(list,
            "%d gan_type=%s real=%d disc=%d real_label_val=%.17g fake_label_val=%.17g "
            "loss_weight=%.17g n=%zu loss=%.17g\n",
            i, pf_gan_type_name(l->gan_type), real, disc, (double)l->real_label_val,
            (double)l->fake_label_val, (double)l->loss_weight, n, loss);
    char name[64];
    snprintf(name, sizeof name, "x%03d.f32", i);
    pf_ref_write_file(dir, name, x, sizeof *x * n);
    snprintf(name, sizeof name, "grad%03d.f32", i);
    pf_ref_write_file(dir, name, d, sizeof *d * n);
    free(d);
}

static int with_torch(void) {
    if (!pf_ref_have("test_gan_loss torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_gan_loss.XXXXXX";
    FILE *list = pf_ref_open_cases(dir);
    if (!list) return pf_test_end("test_gan_loss torch");
    static float small[37], wide[128];
    static const float specials[8] = { 1, -1, 0, 0.5f, 25, -25, 100, -100 };
    pf_rng r = pf_rng_make(41, 3, 0);
    for (size_t j = 0; j < 37; j++) small[j] = (float)(8.0 * pf_rng_uniform(&r) - 4.0);
    for (size_t j = 0; j < 128; j++) /* a U-Net output 2 x 1 x 8 x 8, up to +-60 */
        wide[j] = (float)((2.0 * pf_rng_uniform(&r) - 1.0) * (j % 4 == 0 ? 60.0 : 5.0));
    const float *inputs[3] = { small, wide, specials };
    const size_t sizes[3] = { 37, 128, 8 };
    int i = 0;
    for (int type = 0; type < PF_GAN_N_TYPES; type++)
        for (int set = 0; set < 2; set++)
            for (int real = 0; real < 2; real++)
                for (int disc = 0; disc < 2; disc++)
                    for (int k = 0; k < 3; k++, i++) {
                        pf_gan_loss l = make_loss((pf_gan_type)type, set);
                        write_case(dir, list, i, &l, real, disc, inputs[k], sizes[k]);
                    }
    fclose(list);
    pf_ref_run("gan_loss_ref.py", dir);
    return pf_test_end("test_gan_loss torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    test_names();
    test_finite_differences();
    test_vanilla_values();
    test_lsgan_values();
    test_sign_rules();
    test_weight_sides();
    test_nan_cases();
    return pf_test_end("test_gan_loss");
}
