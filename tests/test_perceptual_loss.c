/*  test_perceptual_loss — nn/perceptual_loss.h: BasicSR's PerceptualLoss on feature maps, its
    options and its gradient.

    Without arguments (no Python needed):
      - names: VGG19's 37 layer names in order (index <-> name), the criteria l1 / l2 / fro;
      - options: BasicSR's defaults; every key set from text; each error names its key (an
        unknown key, a negative or non-numeric weight, an unknown criterion, vgg16, a bad
        boolean, a layer that is not VGG19's, whose message lists the valid names, a layer
        given twice) and leaves the options unchanged; the whole-set check (no layer, a
        negative weight, an unknown name or criterion written by hand);
      - finite differences: three layers of different shapes, every criterion x (percep only,
        style only, both), every element's gradient of percep + style against a central
        difference of the double loss; the gradient buffers start as NaN, so an element left
        unwritten fails;
      - values worked by hand on one 1 x 2 x 1 x 2 layer: l1 (mean, times layer and perceptual
        weight), l2 of the Gram matrices, fro of both (a norm, not a mean) and their gradients;
      - the None cases: a weight of 0 gives NAN for its term and the return bits say which
        terms exist; both 0 give zero gradients; fro at a zero difference gives 0 and a zero
        gradient (torch 1.13's norm backward), not NaN;
      - bad arguments (layer count, shape, options) return -1 and write nothing;
      - one thread and three threads give bit-identical terms and gradients.
    With `torch` (ctest test_perceptual_loss.torch; 77 without /usr/bin/python3 with numpy and
    torch): 27 cases (every criterion x percep / style / both x 3 feature sets of 3 layers of
    different sizes, one set with a layer of equal features and one of ReLU-like features)
    written with their terms and gradients; tests/reference/perceptual_ref.py recomputes both
    terms in torch float64 (L1Loss, MSELoss, torch.norm(p='fro'), bmm for the Gram matrix) and
    every gradient by autograd: terms within 1e-6 relative, gradients within 1e-5.
*/
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/perceptual_loss.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

#define N_LAYERS 3

/* Three layers of different shapes: feature maps of x and gt, gradient buffers. */
typedef struct {
    int shape[N_LAYERS][4];
    float *fx[N_LAYERS], *fgt[N_LAYERS], *dfx[N_LAYERS];
    size_t numel[N_LAYERS];
} features;

static const int small_shapes[N_LAYERS][4] = { { 2, 3, 4, 5 }, { 2, 5, 3, 2 }, { 1, 4, 2, 3 } };

/* Fill f with the shapes and uniform values in [lo, hi) drawn from (41, stream, .). */
static void features_make(features *f, const int (*shapes)[4], uint64_t stream, double lo,
                          double hi) {
    pf_rng r = pf_rng_make(41, stream, 0);
    for (int k = 0; k < N_LAYERS; k++) {
        memcpy(f->shape[k], shapes[k], sizeof f->shape[k]);
        size_t m = (size_t)shapes[k][0] * shapes[k][1] * shapes[k][2] * shapes[k][3];
        f->numel[k] = m;
        f->fx[k] = malloc(sizeof(float) * m);
        f->fgt[k] = malloc(sizeof(float) * m);
        f->dfx[k] = malloc(sizeof(float) * m);
        for (size_t i = 0; i < m; i++) {
            f->fx[k][i] = (float)(lo + (hi - lo) * pf_rng_uniform(&r));
            f->fgt[k][i] = (float)(lo + (hi - lo) * pf_rng_uniform(&r));
            f->dfx[k][i] = NAN;
        }
    }
}

static void features_free(features *f) {
    for (int k = 0; k < N_LAYERS; k++) free(f->fx[k]), free(f->fgt[k]), free(f->dfx[k]);
}

/* Options for N_LAYERS layers (conv1_2, relu3_4, conv5_4 with weights 0.1, 1, 0.75). */
static pf_perceptual_opts make_opts(pf_percep_criterion cr, double pw, double sw) {
    pf_perceptual_opts o;
    pf_perceptual_opts_default(&o);
    static const char *const names[N_LAYERS] = { "conv1_2", "relu3_4", "conv5_4" };
    static const double w[N_LAYERS] = { 0.1, 1.0, 0.75 };
    for (int k = 0; k < N_LAYERS; k++) {
        snprintf(o.layer_weights[k].name, sizeof o.layer_weights[k].name, "%s", names[k]);
        o.layer_weights[k].weight = w[k];
    }
    o.n_layers = N_LAYERS;
    o.criterion = cr;
    o.perceptual_weight = pw;
    o.style_weight = sw;
    return o;
}

static int run(const pf_perceptual_opts *o, features *f, int grad, double *p, double *s) {
    return pf_perceptual_forward_backward(o, N_LAYERS, (const float *const *)f->fx,
                                          (const float *const *)f->fgt,
                                          (const int(*)[4])f->shape, grad ? f->dfx : NULL, p, s);
}

static double total(const pf_perceptual_opts *o, features *f) {
    double p, s;
    run(o, f, 0, &p, &s);
    return (isnan(p) ? 0.0 : p) + (isnan(s) ? 0.0 : s);
}

static void test_names(void) {
    static const char *const some[][2] = { { "0", "conv1_1" }, { "4", "pool1" },
                                           { "18", "pool3" }, { "34", "conv5_4" },
                                           { "35", "relu5_4" }, { "36", "pool5" } };
    for (size_t i = 0; i < sizeof some / sizeof *some; i++) {
        int idx = atoi(some[i][0]);
        CHECK(pf_vgg19_layer_index(some[i][1]) == idx, "%s at %d", some[i][1], idx);
        CHECK(!strcmp(pf_vgg19_layer_name(idx), some[i][1]), "name %d", idx);
    }
    for (int i = 0; i < PF_VGG19_N_LAYERS; i++)
        CHECK(pf_vgg19_layer_index(pf_vgg19_layer_name(i)) == i, "round trip %d", i);
    CHECK(pf_vgg19_layer_index("conv6_1") == -1 && pf_vgg19_layer_index("bn1_1") == -1 &&
              pf_vgg19_layer_index("Conv1_1") == -1 && pf_vgg19_layer_index("") == -1,
          "unknown names");
    CHECK(!pf_vgg19_layer_name(37) && !pf_vgg19_layer_name(-1),
          "outside");
    static const char *const crit[3] = { "l1", "l2", "fro" };
    for (int i = 0; i < 3; i++) {
        pf_percep_criterion c = PF_PERCEP_FRO;
        CHECK(pf_percep_criterion_parse(crit[i], &c) == 0 && (int)c == i, "parse %s", crit[i]);
        CHECK(!strcmp(pf_percep_criterion_name(c), crit[i]), "name %s", crit[i]);
    }
    pf_percep_criterion c = PF_PERCEP_L2;
    CHECK(pf_percep_criterion_parse("L1", &c) == -1 && pf_percep_criterion_parse("mse", &c) ==
              -1 && c == PF_PERCEP_L2, "unknown criteria");
}

/* set(key, value) fails, its message starts with "key:" and holds want, o is unchanged. */
static void expect_set_error(const char *key, const char *value, const char *want) {
    pf_perceptual_opts o, before;
    pf_perceptual_opts_default(&o);
    char err[1024] = "";
    CHECK(pf_perceptual_opts_set(&o, "layer_weights.conv5_4", "1", err, sizeof err) == 0,
          "conv5_4: %s", err);
    before = o;
    int rc = pf_perceptual_opts_set(&o, key, value, err, sizeof err);
    CHECK(rc == -1, "%s = %s accepted", key, value);
    CHECK(!strncmp(err, key, strlen(key)) && err[strlen(key)] == ':' && strstr(err, want),
          "%s = %s: message '%s', want '%s'", key, value, err, want);
    CHECK(!memcmp(&o, &before, sizeof o), "%s = %s changed the options", key, value);
}

static void test_options(void) {
    pf_perceptual_opts o;
    pf_perceptual_opts_default(&o);
    CHECK(o.n_layers == 0 && !strcmp(o.vgg_type, "vgg19") && o.use_input_norm == 1 &&
              o.range_norm == 0 && o.perceptual_weight == 1.0 && o.style_weight == 0.0 &&
              o.criterion == PF_PERCEP_L1, "BasicSR's defaults");
    char err[1024] = "";
    CHECK(pf_perceptual_opts_check(&o, err, sizeof err) == -1 &&
              !strncmp(err, "layer_weights:", 14), "no layer: '%s'", err);
    static const char *const kv[][2] = {
        { "layer_weights.relu5_4", "0.5" }, { "layer_weights.conv1_1", "0" },
        { "layer_weights.pool2", "1e-1" },  { "vgg_type", "vgg19" },
        { "use_input_norm", "False" },      { "range_norm", "true" },
        { "perceptual_weight", "0.01" },    { "style_weight", "2" },
        { "criterion", "fro" },
    };
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        CHECK(pf_perceptual_opts_set(&o, kv[i][0], kv[i][1], err, sizeof err) == 0, "%s: %s",
              kv[i][0], err);
    CHECK(o.n_layers == 3 && !strcmp(o.layer_weights[0].name, "relu5_4") &&
              o.layer_weights[0].weight == 0.5 && !strcmp(o.layer_weights[1].name, "conv1_1") &&
              o.layer_weights[1].weight == 0.0 && !strcmp(o.layer_weights[2].name, "pool2") &&
              o.layer_weights[2].weight == 0.1, "layers in config order");
    CHECK(o.use_input_norm == 0 && o.range_norm == 1 && o.perceptual_weight == 0.01 &&
              o.style_weight == 2.0 && o.criterion == PF_PERCEP_FRO, "values set");
    CHECK(pf_perceptual_opts_check(&o, err, sizeof err) == 0, "check: %s", err);

    expect_set_error("perceptual_weight", "-1", ">= 0");
    expect_set_error("style_weight", "abc", "expected a number");
    expect_set_error("style_weight", "inf", "expected a number");
    expect_set_error("layer_weights.conv5_4", "0.5", "given twice");
    expect_set_error("layer_weights.relu3_1", "-0.5", ">= 0");
    expect_set_error("layer_weights.conv6_1", "1", "not a VGG19 layer");
    expect_set_error("layer_weights.conv6_1", "1", "conv1_1, relu1_1, conv1_2");
    expect_set_error("layer_weights.conv6_1", "1", "relu5_4, pool5)");
    expect_set_error("layer_weights.", "1", "not a VGG19 layer");
    expect_set_error("criterion", "l3", "l1, l2, fro");
    expect_set_error("vgg_type", "vgg16", "only vgg19");
    expect_set_error("use_input_norm", "yes", "true or false");
    expect_set_error("layer_weight", "1", "unknown key");
    expect_set_error("loss_weight", "1", "perceptual_weight");

    /* options written by hand: the check names the key */
    pf_perceptual_opts bad = make_opts(PF_PERCEP_L1, 1, 0);
    bad.layer_weights[1].weight = -0.25;
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              strstr(err, "layer_weights.relu3_4:"), "negative layer weight: '%s'", err);
    bad = make_opts(PF_PERCEP_L1, 1, NAN);
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              !strncmp(err, "style_weight:", 13), "NaN style_weight: '%s'", err);
    bad = make_opts(PF_PERCEP_L1, -1, 0);
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              !strncmp(err, "perceptual_weight:", 18), "negative perceptual_weight: '%s'", err);
    bad = make_opts((pf_percep_criterion)3, 1, 0);
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              !strncmp(err, "criterion:", 10), "criterion 3: '%s'", err);
    bad = make_opts(PF_PERCEP_L1, 1, 0);
    snprintf(bad.layer_weights[2].name, sizeof bad.layer_weights[2].name, "conv1_2");
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 && strstr(err, "twice"),
          "a layer twice: '%s'", err);
    snprintf(bad.layer_weights[2].name, sizeof bad.layer_weights[2].name, "fc7");
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              strstr(err, "layer_weights.fc7: not a VGG19 layer"), "fc7: '%s'", err);
    bad = make_opts(PF_PERCEP_L1, 1, 0);
    snprintf(bad.vgg_type, sizeof bad.vgg_type, "vgg16");
    CHECK(pf_perceptual_opts_check(&bad, err, sizeof err) == -1 &&
              !strncmp(err, "vgg_type:", 9), "vgg16: '%s'", err);
}

/* Every gradient element of one configuration against a central difference of the loss. */
static void check_fd(pf_percep_criterion cr, double pw, double sw) {
    features f;
    features_make(&f, small_shapes, 1, -1.0, 1.0);
    for (int k = 0; k < N_LAYERS; k++) /* off l1's kink: |fx - fgt| well above the step */
        for (size_t i = 0; i < f.numel[k]; i++)
            if (fabsf(f.fx[k][i] - f.fgt[k][i]) < 0.01f) f.fx[k][i] = f.fgt[k][i] + 0.02f;
    pf_perceptual_opts o = make_opts(cr, pw, sw);
    double p, s;
    int rc = run(&o, &f, 1, &p, &s);
    CHECK(rc == ((pw > 0 ? PF_PERCEP_HAS_PERCEP : 0) | (sw > 0 ? PF_PERCEP_HAS_STYLE : 0)),
          "%s pw %g sw %g: returned %d", pf_percep_criterion_name(cr), pw, sw, rc);
    for (int k = 0; k < N_LAYERS; k++)
        for (size_t i = 0; i < f.numel[k]; i++) {
            const float x0 = f.fx[k][i], h = 1e-3f;
            f.fx[k][i] = x0 + h;
            double up = total(&o, &f), step = (double)f.fx[k][i];
            f.fx[k][i] = x0 - h;
            double down = total(&o, &f);
            step -= (double)f.fx[k][i];
            f.fx[k][i] = x0;
            double fd = (up - down) / step, d = f.dfx[k][i];
            CHECK(fabs(d - fd) <= 1e-6 + 1e-4 * fabs(fd),
                  "%s pw %g sw %g: layer %d d[%zu] = %.9g, finite difference %.9g",
                  pf_percep_criterion_name(cr), pw, sw, k, i, d, fd);
        }
    features_free(&f);
}

static void test_finite_differences(void) {
    for (int cr = 0; cr < PF_PERCEP_N_CRITERIA; cr++) {
        check_fd((pf_percep_criterion)cr, 0.5, 0.0);
        check_fd((pf_percep_criterion)cr, 0.0, 3.0);
        check_fd((pf_percep_criterion)cr, 1.0, 20.0);
    }
}

/* The 1 x 2 x 1 x 2 case: fx = [[1, 2], [3, 4]], fgt = [[0, 1], [1, 0]] (rows are channels);
   d = fx - fgt = [1, 1, 2, 4]; gram(fx) = [[5, 11], [11, 25]] / 4, gram(fgt) = I / 4, so
   D = gram(fx) - gram(fgt) = [[1, 2.75], [2.75, 6]]. */
static void hand_case(pf_percep_criterion cr, double w, double pw, double sw, double want_p,
                      double want_s, const double *want_d, const char *what) {
    float fx[4] = { 1, 2, 3, 4 }, fgt[4] = { 0, 1, 1, 0 }, d[4] = { NAN, NAN, NAN, NAN };
    const float *pfx = fx, *pfgt = fgt;
    float *pd = d;
    const int shape[1][4] = { { 1, 2, 1, 2 } };
    pf_perceptual_opts o;
    pf_perceptual_opts_default(&o);
    snprintf(o.layer_weights[0].name, sizeof o.layer_weights[0].name, "relu2_2");
    o.layer_weights[0].weight = w;
    o.n_layers = 1, o.criterion = cr, o.perceptual_weight = pw, o.style_weight = sw;
    double p = 0, s = 0;
    int rc = pf_perceptual_forward_backward(&o, 1, &pfx, &pfgt, shape, &pd, &p, &s);
    CHECK(rc == ((pw > 0) | (sw > 0) << 1), "%s: returned %d", what, rc);
    CHECK(isnan(want_p) ? isnan(p) : fabs(p - want_p) <= 1e-12 * fabs(want_p),
          "%s: percep %.17g, want %.17g", what, p, want_p);
    CHECK(isnan(want_s) ? isnan(s) : fabs(s - want_s) <= 1e-12 * fabs(want_s),
          "%s: style %.17g, want %.17g", what, s, want_s);
    for (int i = 0; i < 4; i++)
        CHECK(fabs(d[i] - want_d[i]) <= 1e-7 * fmax(1.0, fabs(want_d[i])),
              "%s: d[%d] = %.9g, want %.9g", what, i, d[i], want_d[i]);
}

static void test_hand_values(void) {
    /* l1: mean |d| = 8 / 4 = 2, times w 0.5 and perceptual_weight 2; d/dfx = 2 * 0.5 / 4 */
    hand_case(PF_PERCEP_L1, 0.5, 2.0, 0.0, 2.0, NAN, (double[]){ 0.25, 0.25, 0.25, 0.25 },
              "l1 percep");
    /* l2 style: mean D^2 = (1 + 2 * 7.5625 + 36) / 4; dG = 2 D / 4, dF = 2 dG F / (c h w = 4)
       = D F / 4, D F = [[9.25, 13], [20.75, 29.5]] */
    hand_case(PF_PERCEP_L2, 1.0, 0.0, 1.0, NAN, 52.125 / 4,
              (double[]){ 9.25 / 4, 13.0 / 4, 20.75 / 4, 29.5 / 4 }, "l2 style");
    /* l2 percep: mean d^2 = 22 / 4, d/dfx = 2 d / 4 */
    hand_case(PF_PERCEP_L2, 1.0, 1.0, 0.0, 5.5, NAN, (double[]){ 0.5, 0.5, 1.0, 2.0 },
              "l2 percep");
    /* fro, both terms: ||d|| = sqrt(22), ||D|| = sqrt(52.125); d/dfx = d / sqrt(22) +
       2 (D / ||D||) F / 4 */
    const double a = sqrt(22.0), b = sqrt(52.125);
    hand_case(PF_PERCEP_FRO, 1.0, 1.0, 1.0, a, b,
              (double[]){ 1 / a + 9.25 / (2 * b), 1 / a + 13 / (2 * b), 2 / a + 20.75 / (2 * b),
                          4 / a + 29.5 / (2 * b) },
              "fro both");
    /* fro: style_weight 3 and layer weight 0.5 scale the norm, which is no mean */
    hand_case(PF_PERCEP_FRO, 0.5, 0.0, 3.0, NAN, 1.5 * b,
              (double[]){ 1.5 * 9.25 / (2 * b), 1.5 * 13 / (2 * b), 1.5 * 20.75 / (2 * b),
                          1.5 * 29.5 / (2 * b) },
              "fro style weighted");
}

static void test_none_and_zero(void) {
    features f;
    features_make(&f, small_shapes, 2, -1.0, 1.0);
    pf_perceptual_opts o = make_opts(PF_PERCEP_L2, 0.0, 0.0);
    double p = 1, s = 1;
    CHECK(run(&o, &f, 1, &p, &s) == 0 && isnan(p) && isnan(s), "both None: %g %g", p, s);
    int zero = 1;
    for (int k = 0; k < N_LAYERS; k++)
        for (size_t i = 0; i < f.numel[k]; i++) zero &= f.dfx[k][i] == 0.0f;
    CHECK(zero, "both None: gradient not zero");
    /* fro at a zero difference: 0, and a zero gradient (torch's), not NaN */
    for (int k = 0; k < N_LAYERS; k++) memcpy(f.fgt[k], f.fx[k], sizeof(float) * f.numel[k]);
    o = make_opts(PF_PERCEP_FRO, 1.0, 1.0);
    CHECK(run(&o, &f, 1, &p, &s) == 3 && p == 0.0 && s == 0.0, "fro at 0: %g %g", p, s);
    zero = 1;
    for (int k = 0; k < N_LAYERS; k++)
        for (size_t i = 0; i < f.numel[k]; i++) zero &= f.dfx[k][i] == 0.0f;
    CHECK(zero, "fro at a zero difference: gradient not zero");
    features_free(&f);
}

static void test_bad_arguments(void) {
    features f;
    features_make(&f, small_shapes, 3, -1.0, 1.0);
    pf_perceptual_opts o = make_opts(PF_PERCEP_L1, 1.0, 1.0);
    double p = 7, s = 7;
    CHECK(pf_perceptual_forward_backward(&o, 2, (const float *const *)f.fx,
                                         (const float *const *)f.fgt, (const int(*)[4])f.shape,
                                         f.dfx, &p, &s) == -1, "2 layers for 3");
    f.shape[1][2] = 0;
    CHECK(run(&o, &f, 1, &p, &s) == -1, "a zero height");
    f.shape[1][2] = 3;
    o.layer_weights[0].weight = -1;
    CHECK(run(&o, &f, 1, &p, &s) == -1, "a negative weight");
    CHECK(p == 7 && s == 7 && isnan(f.dfx[0][0]) && isnan(f.dfx[2][0]), "nothing written");
    features_free(&f);
}

/* 1 and 3 threads: the same bits. */
static void test_threads(void) {
    static const int shapes[N_LAYERS][4] = { { 2, 16, 6, 7 }, { 2, 9, 5, 5 }, { 2, 33, 2, 2 } };
    features a, b;
    features_make(&a, shapes, 4, 0.0, 2.0);
    features_make(&b, shapes, 4, 0.0, 2.0);
    for (int cr = 0; cr < PF_PERCEP_N_CRITERIA; cr++) {
        pf_perceptual_opts o = make_opts((pf_percep_criterion)cr, 1.0, 5.0);
        double pa, sa, pb, sb;
        int nt = omp_get_max_threads();
        omp_set_num_threads(1);
        run(&o, &a, 1, &pa, &sa);
        omp_set_num_threads(3);
        run(&o, &b, 1, &pb, &sb);
        omp_set_num_threads(nt);
        int same = pa == pb && sa == sb;
        for (int k = 0; k < N_LAYERS; k++)
            same &= !memcmp(a.dfx[k], b.dfx[k], sizeof(float) * a.numel[k]);
        CHECK(same, "%s: 1 and 3 threads differ", pf_percep_criterion_name(o.criterion));
    }
    features_free(&a);
    features_free(&b);
}

/* One case for the reference: its line in params.txt and fx/fgt/dfx CASE_LAYER.f32. */
static void write_case(const char *dir, FILE *list, int i, const pf_perceptual_opts *o,
                       features *f) {
    double p, s;
    int rc = run(o, f, 1, &p, &s);
    CHECK(rc >= 0, "case %d: returned %d", i, rc);
    fprintf(list, "%d criterion=%s perceptual_weight=%.17g style_weight=%.17g n_layers=%d", i,
            pf_percep_criterion_name(o->criterion), o->perceptual_weight, o->style_weight,
            N_LAYERS);
    for (int k = 0; k < N_LAYERS; k++) {
        fprintf(list, " w%d=%.17g shape%d=%dx%dx%dx%d", k, o->layer_weights[k].weight, k,
                f->shape[k][0], f->shape[k][1], f->shape[k][2], f->shape[k][3]);
        char name[64];
        static const char *const kinds[3] = { "fx", "fgt", "dfx" };
        float *const bufs[3] = { f->fx[k], f->fgt[k], f->dfx[k] };
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "%s%03d_%d.f32", kinds[j], i, k);
            pf_ref_write_file(dir, name, bufs[j], sizeof(float) * f->numel[k]);
        }
    }
    fprintf(list, " percep=%.17g style=%.17g\n", p, s);
}

static int with_torch(void) {
    if (!pf_ref_have("test_perceptual_loss torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_perceptual_loss.XXXXXX";
    FILE *list = pf_ref_open_cases(dir);
    if (!list) return pf_test_end("test_perceptual_loss torch");
    static const int shapes[3][N_LAYERS][4] = {
        { { 2, 8, 12, 10 }, { 2, 16, 6, 5 }, { 2, 32, 3, 2 } },
        { { 1, 3, 7, 9 }, { 1, 64, 4, 4 }, { 1, 5, 1, 1 } },
        { { 3, 4, 8, 8 }, { 3, 12, 4, 4 }, { 3, 24, 2, 2 } },
    };
    features f[3];
    features_make(&f[0], shapes[0], 10, -2.0, 2.0);
    features_make(&f[1], shapes[1], 11, 0.0, 3.0); /* ReLU-like: >= 0 */
    for (size_t i = 0; i < f[1].numel[0]; i += 3) f[1].fx[0][i] = 0.0f;
    features_make(&f[2], shapes[2], 12, -1.0, 1.0);
    memcpy(f[2].fgt[1], f[2].fx[1], sizeof(float) * f[2].numel[1]); /* a zero difference */
    for (size_t i = 0; i < f[2].numel[0]; i += 5) f[2].fgt[0][i] = f[2].fx[0][i];
    static const double weights[3][2] = { { 1.0, 0.0 }, { 0.0, 250.0 }, { 0.5, 40.0 } };
    int i = 0;
    for (int cr = 0; cr < PF_PERCEP_N_CRITERIA; cr++)
        for (int wi = 0; wi < 3; wi++)
            for (int set = 0; set < 3; set++, i++) {
                pf_perceptual_opts o = make_opts((pf_percep_criterion)cr, weights[wi][0],
                                                 weights[wi][1]);
                write_case(dir, list, i, &o, &f[set]);
            }
    fclose(list);
    for (int k = 0; k < 3; k++) features_free(&f[k]);
    pf_ref_run("perceptual_ref.py", dir);
    return pf_test_end("test_perceptual_loss torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    test_names();
    test_options();
    test_finite_differences();
    test_hand_values();
    test_none_and_zero();
    test_bad_arguments();
    test_threads();
    return pf_test_end("test_perceptual_loss");
}
