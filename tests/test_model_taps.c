/*  test_model_taps — a model of a description built by hand (pf_model_new_net), as the GAN
    step runs a discriminator or a perceptual loss's feature extractor: taps (pf_net_add_tap),
    a one-channel output, float input, and the gradient with respect to that input
    (pf_model_backward_from).

    The network: input (x - mean) * 2.5, conv 3 -> 8 k 3 + ReLU (tap 0), conv 8 -> 8 k 4
    stride 2 padding 1 without bias (tap 1), 2 x 2 max pooling, conv 8 -> 1 k 3 (the output).
    Against a naive forward in double written here (independent of the executor's kernels):
    - the output and both taps after pf_model_forward_train_f32, element by element;
    - for L = sum(a * out) + sum(b0 * tap0) + sum(b1 * tap1) with random a, b0, b1, every
      parameter tensor's gradient and the input gradient against central finite differences
      of the naive forward in double (along random +-1 directions, and the input gradient
      also element by element at random places); again for the loss of tap 1 alone (dout
      NULL, tap 0's entry NULL), where the output layer's gradients must be exactly zero,
      and for no seed at all (every gradient zero, dx too);
    - without dx, parameter gradients bit-identical to those with dx; a second backward
      bit-identical to the first;
    - the input gradient alone (pf_model_backward_input): dx bit-identical to
      pf_model_backward_from's, for the full loss and for tap 1 alone, and the gradient
      buffer, filled with NaN before, untouched (no parameter gradient written); refused
      without dx and by a zoo model's plan;
    all with oneDNN's layout choice and every activation forced to NCHW, nChw8c, nChw16c and
    NHWC (model_internal.h: the model's pf_dnnl.force_layout).
    EDSR (a zoo network): pf_model_train_step (L1) and the same description through
    pf_model_new_net, fed uint8 / 255 and, as dout, the L1 gradient of its output
    (pf_loss_forward_backward on plain NCHW), give the same loss and the same gradients bit
    for bit where both plans run alike, with and without the input gradient asked.
    The input gradient alone through zoo descriptions (pf_model_new_net): EDSR (residual
    scaling), FSRCNN (PReLU, whose d alpha is skipped, and the sub-pixel layer) and RCAN
    (channel attention): the same two checks against pf_model_backward_from, every layout.
    With `torch` (ctest test_model_taps.torch; 77 without /usr/bin/python3, numpy and torch):
    the output, both taps, every parameter gradient and the input gradient in every layout
    against torch.nn.functional and autograd in float64 (tests/reference/model_taps_ref.py). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/rng.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_naive.h"
#include "tests/pf_test_ref.h"

enum { N = 2, H = 8, W = 12, C1 = 8 };
static const float MEAN[3] = { 0.45f, 0.5f, 0.4f };
#define RANGE 2.5f

/* ---- the network ---------------------------------------------------------------------- */

/* A convolution node on x: k x k, stride, padding, bias or none, ReLU or none. */
static int conv_node(pf_net *g, int x, const char *name, int oc, int k, int stride, int pad,
                     int bias, int relu) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    pf_param_init ui = { PF_INIT_UNIFORM, (double)t.c * k * k, 1.0 };
    int ci = pf_net_add_conv_strided(g, name, t.c, oc, k, stride, pad, bias, ui, ui);
    if (ci < 0) return -1;
    g->conv[ci].act = relu;
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div * stride, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

/* Tensor ids: t[0] input, t[1] conv1 (tap 0), t[2] down (tap 1), t[3] pooled, t[4] out. */
static int build(pf_net *g, int t[5]) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "taps");
    t[0] = g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->use_mean = 1;
    memcpy(g->mean, MEAN, sizeof MEAN);
    g->range = RANGE;
    t[1] = conv_node(g, t[0], "conv1", C1, 3, 1, 1, 1, 1);
    t[2] = conv_node(g, t[1], "down", C1, 4, 2, 1, 0, 0);
    t[3] = t[2] < 0 ? -1 : pf_net_node(g, PF_G_MAXPOOL2, &t[2], 1, C1, 1, 4, 0);
    t[4] = g->output = conv_node(g, t[3], "last", 1, 3, 1, 1, 1, 0);
    if (pf_net_add_tap(g, t[1]) != 0 || pf_net_add_tap(g, t[2]) != 1) return -1;
    return g->oom || t[4] < 0 ? -1 : 0;
}

/* ---- the naive forward, in double ----------------------------------------------------- */

/* pf_naive_conv2d over the N samples, then ReLU when relu. */
static void naive_conv(double *y, const double *x, int ic, int h, int w, const double *wt,
                       const double *b, int oc, int k, int s, int p, int relu) {
    pf_naive_conv2d(y, x, N, ic, h, w, wt, b, oc, k, s, p);
    size_t count = (size_t)N * oc * ((h + 2 * p - k) / s + 1) * ((w + 2 * p - k) / s + 1);
    for (size_t i = 0; relu && i < count; i++) y[i] = y[i] < 0 ? 0 : y[i];
}

typedef struct {
    double in[N * 3 * H * W], t1[N * C1 * H * W], t2[N * C1 * H * W / 4];
    double t3[N * C1 * H * W / 16], out[N * H * W / 16];
} naive_t;

/* The network on x (N x H x W x 3 NHWC) with parameters p (the model's flat layout, in
   double). */
static void naive_forward(naive_t *r, const pf_net *g, const double *p, const double *x) {
    const pf_param_info *T = g->tensors;    /* conv1.weight, conv1.bias, down.weight, last.* */
    for (int n = 0; n < N; n++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < H * W; i++)
                r->in[(n * 3 + c) * H * W + i] = (x[(n * H * W + i) * 3 + c] - MEAN[c]) * RANGE;
    naive_conv(r->t1, r->in, 3, H, W, p + T[0].offset, p + T[1].offset, C1, 3, 1, 1, 1);
    naive_conv(r->t2, r->t1, C1, H, W, p + T[2].offset, NULL, C1, 4, 2, 1, 0);
    int h2 = H / 2, w2 = W / 2;
    for (int nc = 0; nc < N * C1; nc++)
        for (int yy = 0; yy < h2 / 2; yy++)
            for (int xx = 0; xx < w2 / 2; xx++) {
                const double *s = r->t2 + (size_t)nc * h2 * w2;
                double m = s[2 * yy * w2 + 2 * xx];
                for (int d = 1; d < 4; d++) m = fmax(m, s[(2 * yy + d / 2) * w2 + 2 * xx + d % 2]);
                r->t3[(nc * (h2 / 2) + yy) * (w2 / 2) + xx] = m;
            }
    naive_conv(r->out, r->t3, C1, H / 4, W / 4, p + T[3].offset, p + T[4].offset, 1, 3, 1, 1,
               0);
}

/* The loss's three seeds (a NULL one: not in the loss). */
typedef struct {
    const float *a, *b0, *b1;
} seeds_t;

static double dot(const double *x, const float *s, size_t n) {
    double v = 0;
    for (size_t i = 0; s && i < n; i++) v += x[i] * s[i];
    return v;
}

static double naive_loss(const pf_net *g, const double *p, const double *x, const seeds_t *s) {
    static naive_t r;
    naive_forward(&r, g, p, x);
    return dot(r.out, s->a, N * H * W / 16) + dot(r.t1, s->b0, N * C1 * H * W) +
           dot(r.t2, s->b1, N * C1 * H * W / 4);
}

/* ---- checks --------------------------------------------------------------------------- */

enum { NX = N * H * W * 3 };

/* |analytic - fd| within 1e-3 of max(|fd|, |analytic|, scale) (+ 1e-7): the executor's float
   gradient against the double quotient of the naive forward. */
static int agrees(double an, double fd, double scale) {
    return fabs(an - fd) <= 1e-3 * fmax(fmax(fabs(fd), fabs(an)), scale) + 1e-7;
}

/* Every parameter tensor's gradient (grads) and the input gradient dx against central
   differences of naive_loss along random +-1 directions; dx also element by element at 24
   random places. */
static void check_fd(const char *label, const pf_net *g, const float *params_f,
                     const float *grads, const double *x, const float *dx, const seeds_t *s) {
    double *params = malloc(g->n_params * sizeof(double));
    for (size_t j = 0; j < g->n_params; j++) params[j] = params_f[j];
    pf_rng rng = pf_rng_make(21, 3, 0);
    const double e = 1e-7;
    for (int t = 0; t <= g->n_tensors; t++) {       /* n_tensors: the input */
        size_t n = t < g->n_tensors ? g->tensors[t].numel : NX;
        const float *an = t < g->n_tensors ? grads + g->tensors[t].offset : dx;
        double dir = 0, norm = 0, l[2];
        signed char *v = malloc(n);
        for (size_t j = 0; j < n; j++) {
            v[j] = pf_rng_below(&rng, 2) ? 1 : -1;
            dir += v[j] * (double)an[j];
            norm += (double)an[j] * an[j];
        }
        for (int side = 0; side < 2; side++) {
            double h = side ? -e : e;
            if (t < g->n_tensors) {
                double *p = params + g->tensors[t].offset;
                for (size_t j = 0; j < n; j++) p[j] += h * v[j];
                l[side] = naive_loss(g, params, x, s);
                for (size_t j = 0; j < n; j++) p[j] = params_f[g->tensors[t].offset + j];
            } else {
                double *xp = malloc(NX * sizeof(double));
                for (size_t j = 0; j < NX; j++) xp[j] = x[j] + h * v[j];
                l[side] = naive_loss(g, params, xp, s);
                free(xp);
            }
        }
        double fd = (l[0] - l[1]) / (2 * e);
        const char *name = t < g->n_tensors ? g->tensors[t].name : "input";
        CHECK(agrees(dir, fd, sqrt(norm)), "%s: %s: analytic %.9g, finite difference %.9g",
              label, name, dir, fd);
        free(v);
    }
    double norm = 0;
    for (size_t j = 0; j < NX; j++) norm += (double)dx[j] * dx[j];
    double *xp = malloc(NX * sizeof(double));
    for (int k = 0; k < 24; k++) {
        size_t j = (size_t)pf_rng_below(&rng, NX);
        memcpy(xp, x, NX * sizeof(double));
        xp[j] = x[j] + e;
        double lp = naive_loss(g, params, xp, s);
        xp[j] = x[j] - e;
        double fd = (lp - naive_loss(g, params, xp, s)) / (2 * e);
        CHECK(agrees(dx[j], fd, sqrt(norm / NX)), "%s: input[%zu]: analytic %.9g, finite "
              "difference %.9g", label, j, dx[j], fd);
    }
    free(xp);
    free(params);
}

/* max |got - want| over max |want|, got the model's tensor `which`, want the naive one. */
static double read_err(pf_model *m, int which, const double *want, size_t n) {
    float *got = malloc(n * sizeof(float));
    double worst = 0, scale = 1e-30;
    int dims[4];
    if (pf_model_shape(m, which, dims) ||
        (size_t)dims[0] * dims[1] * dims[2] * dims[3] != n || pf_model_read(m, which, got)) {
        free(got);
        return INFINITY;
    }
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(got[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    free(got);
    return worst / scale;
}

static const char *layout_name(pf_layout l) {
    return l == PF_LAYOUT_ANY ? "any" : l == PF_LAYOUT_NCHW ? "nchw" : l == PF_LAYOUT_NCHW8C
           ? "nChw8c" : l == PF_LAYOUT_NCHW16C ? "nChw16c" : "nhwc";
}

static void fill(pf_rng *rng, float *v, size_t n) {
    for (size_t i = 0; i < n; i++) v[i] = (float)(2 * pf_rng_uniform(rng) - 1);
}

/* Backward of m's last forward for seeds s into a copy of the parameter gradients (*grads,
   malloc'd) and dx (NULL: not asked). 0 or -1. */
static int backward(pf_model *m, const seeds_t *s, float **grads, float *dx) {
    char err[512];
    const float *dtaps[2] = { s->b0, s->b1 };
    int rc = pf_model_backward_from(m, s->a, dtaps, dx, err, sizeof err);
    CHECK(rc == 0, "backward: %s", err);
    size_t np = pf_model_num_params(m);
    *grads = malloc(np * sizeof(float));
    memcpy(*grads, pf_model_grads(m), np * sizeof(float));
    return rc;
}

/* pf_model_backward_input for seeds s against want_dx (pf_model_backward_from's dx for the
   same seeds): dx bit-identical, the gradient buffer (NaN first) untouched. */
static void check_input_only(pf_model *m, const float *dout, const float *const *dtaps,
                             const float *want_dx, size_t nx, const char *label) {
    char err[512];
    size_t np = pf_model_num_params(m), kept = 0;
    float *dx = malloc(nx * sizeof(float)), *gr = pf_model_grads(m);
    for (size_t j = 0; j < np; j++) gr[j] = NAN;
    int rc = pf_model_backward_input(m, dout, dtaps, dx, err, sizeof err);
    CHECK(rc == 0, "%s: input-only backward: %s", label, err);
    for (size_t j = 0; j < np; j++) kept += isnan(gr[j]);
    CHECK(rc || !memcmp(dx, want_dx, nx * sizeof(float)),
          "%s: the input gradient alone differs from pf_model_backward_from's", label);
    CHECK(kept == np, "%s: the input-only backward wrote %zu parameter gradients", label,
          np - kept);
    CHECK(pf_model_backward_input(m, dout, dtaps, NULL, err, sizeof err) == -1,
          "%s: an input-only backward without dx is refused", label);
    free(dx);
}

/* The network as a model with every activation in `layout`, weights from seed 7; NULL (a
   failed check) on an error. */
static pf_model *taps_model(pf_layout layout) {
    char err[512];
    pf_net g;
    int t[5];
    CHECK(build(&g, t) == 0, "build");
    pf_model *m = pf_model_new_net(&g, "auto", err, sizeof err);
    CHECK(m != NULL, "pf_model_new_net: %s", err);
    CHECK(g.n_t == 0 && g.node == NULL, "the description is taken over");
    if (!m) return NULL;
    m->dnnl.force_layout = layout;
    pf_model_init(m, 7);
    return m;
}

static void check_layout(pf_layout layout) {
    char err[512], label[64];
    pf_model *m = taps_model(layout);
    if (!m) return;
    const pf_net *net = pf_model_net(m);
    pf_rng rng = pf_rng_make(5, 1, (uint64_t)layout + 2);
    float xf[NX], a[N * H * W / 16], b0[N * C1 * H * W], b1[N * C1 * H * W / 4];
    double x[NX];
    for (int i = 0; i < NX; i++) x[i] = xf[i] = (float)pf_rng_uniform(&rng);
    fill(&rng, a, sizeof a / sizeof *a);
    fill(&rng, b0, sizeof b0 / sizeof *b0);
    fill(&rng, b1, sizeof b1 / sizeof *b1);
    int rc = pf_model_forward_train_f32(m, xf, N, H, W, err, sizeof err);
    CHECK(rc == 0, "forward: %s", err);
    static naive_t want;
    double *pd = malloc(net->n_params * sizeof(double));
    for (size_t j = 0; j < net->n_params; j++) pd[j] = pf_model_params(m)[j];
    naive_forward(&want, net, pd, x);
    free(pd);
    snprintf(label, sizeof label, "taps (%s)", layout_name(layout));
    double e_out = read_err(m, -1, want.out, N * H * W / 16);
    double e_t0 = read_err(m, 0, want.t1, N * C1 * H * W);
    double e_t1 = read_err(m, 1, want.t2, N * C1 * H * W / 4);
    CHECK(e_out < 1e-5 && e_t0 < 1e-5 && e_t1 < 1e-5, "%s: output %.3g, tap 0 %.3g, tap 1 %.3g",
          label, e_out, e_t0, e_t1);
    int dims[4];
    CHECK(pf_model_shape(m, -1, dims) == 0 && dims[0] == N && dims[1] == 1 &&
          dims[2] == H / 4 && dims[3] == W / 4, "%s: output shape", label);
    CHECK(pf_model_read(m, 2, b1) == -1 && pf_model_shape(m, -2, dims) == -1,
          "%s: no tap 2", label);
    float dx[NX], dx2[NX], *g1 = NULL, *g2 = NULL, *g3 = NULL;
    seeds_t all = { a, b0, b1 }, one = { NULL, NULL, b1 };
    if (rc == 0 && !backward(m, &all, &g1, dx) && !backward(m, &all, &g2, dx2)) {
        check_fd(label, net, pf_model_params(m), g1, x, dx, &all);
        CHECK(!memcmp(g1, g2, pf_model_num_params(m) * sizeof(float)) &&
              !memcmp(dx, dx2, sizeof dx), "%s: a second backward differs", label);
        free(g2);
        g2 = NULL;
        if (!backward(m, &all, &g2, NULL))
            CHECK(!memcmp(g1, g2, pf_model_num_params(m) * sizeof(float)),
                  "%s: parameter gradients differ without dx", label);
        const float *dtaps[2] = { b0, b1 }, *dtap1[2] = { NULL, b1 };
        check_input_only(m, a, dtaps, dx, NX, label);
        if (!backward(m, &one, &g3, dx)) {
            snprintf(label, sizeof label, "tap 1 alone (%s)", layout_name(layout));
            check_fd(label, net, pf_model_params(m), g3, x, dx, &one);
            check_input_only(m, NULL, dtap1, dx, NX, label);
            const pf_param_info *lw = &net->tensors[3];
            size_t zeros = 0, n_last = lw->numel + net->tensors[4].numel;
            for (size_t j = 0; j < n_last; j++) zeros += g3[lw->offset + j] == 0.0f;
            CHECK(zeros == n_last, "%s: the output layer's gradient is not zero", label);
        }
        seeds_t none = { NULL, NULL, NULL };
        free(g3);
        g3 = NULL;
        if (!backward(m, &none, &g3, dx)) {
            size_t nz = 0;
            for (size_t j = 0; j < pf_model_num_params(m); j++) nz += g3[j] != 0.0f;
            for (int j = 0; j < NX; j++) nz += dx[j] != 0.0f;
            CHECK(nz == 0, "%s: %zu gradients not zero without a seed", label, nz);
        }
    }
    printf("%s: output, taps within %.2g of the naive forward\n", label,
           fmax(e_out, fmax(e_t0, e_t1)));
    free(g1);
    free(g2);
    free(g3);
    pf_model_destroy(&m);
}

/* ---- EDSR: the new path against pf_model_train_step ----------------------------------- */

static void check_edsr(pf_layout layout) {
    char err[512];
    pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "EDSR");
    snprintf(cfg.loss_type, sizeof cfg.loss_type, "L1Loss");
    cfg.scale = 2;
    cfg.n_feats = 16;
    cfg.n_blocks = 2;
    enum { n = 2, h = 8, w = 8, s = 2 };
    pf_net net;
    CHECK(pf_net_build(&net, &cfg, err, sizeof err) == 0, "EDSR: %s", err);
    pf_model *ma = pf_model_new(&cfg, err, sizeof err);
    pf_model *mb = pf_model_new_net(&net, cfg.conv_algorithm, err, sizeof err);
    CHECK(ma && mb, "EDSR: %s", err);
    if (!ma || !mb) goto done;
    ma->dnnl.force_layout = mb->dnnl.force_layout = layout;
    pf_model_init(ma, 3);
    pf_model_init(mb, 3);
    pf_rng rng = pf_rng_make(8, 0, 0);
    static uint8_t lq[n * h * w * 3], gt[n * h * s * w * s * 3];
    static float lqf[n * h * w * 3], out[n * 3 * h * s * w * s], dout[n * 3 * h * s * w * s];
    static float dx[n * h * w * 3];
    for (size_t i = 0; i < sizeof lq; i++) lqf[i] = (lq[i] = (uint8_t)pf_rng_below(&rng, 256)) / 255.0f;
    for (size_t i = 0; i < sizeof gt; i++) gt[i] = (uint8_t)pf_rng_below(&rng, 256);
    float loss_a;
    CHECK(pf_model_train_step(ma, lq, gt, n, h, w, &loss_a, err, sizeof err) == 0, "A: %s", err);
    CHECK(pf_model_forward_train_f32(mb, lqf, n, h, w, err, sizeof err) == 0, "B: %s", err);
    CHECK(pf_model_read(mb, -1, out) == 0, "B: read");
    const pf_net *g = pf_model_net(mb);
    pf_loss l = { PF_LOSS_L1, cfg.loss_weight, cfg.charbonnier_eps };
    float loss_b = (float)pf_loss_forward_backward(&l, out, gt, n, 1, h * s, w * s,
                                                   g->use_mean ? g->mean : NULL, g->range, 1,
                                                   dout);
    CHECK(loss_a == loss_b, "EDSR (%s): loss %.9g, through pf_model_new_net %.9g",
          layout_name(layout), loss_a, loss_b);
    /* Planned for the input's gradient too, the first convolution also runs backward-data,
       and where oneDNN has no fast kernel for that on the layouts it chose, the planner
       converts around it (nn/cpu/layout.c): the same gradients, rounded otherwise. */
    pf_gconversion ca[8], cb[8];
    memset(ca, 0, sizeof ca);
    memset(cb, 0, sizeof cb);
    int same_plan = pf_graph_conversions(g, ma->train.g, ca, 8) ==
                    pf_graph_conversions(g, mb->train.g, cb, 8) &&
                    !memcmp(ca, cb, sizeof ca);
    size_t np = pf_model_num_params(ma);
    const float *ga = pf_model_grads(ma), *gb = pf_model_grads(mb);
    for (int with_dx = 0; with_dx < 2; with_dx++) {
        CHECK(pf_model_backward_from(mb, dout, NULL, with_dx ? dx : NULL, err, sizeof err) == 0,
              "B: %s", err);
        double worst = 0, scale = 1e-30;
        for (size_t j = 0; j < np; j++) {
            worst = fmax(worst, fabs(ga[j] - gb[j]));
            scale = fmax(scale, fabs(ga[j]));
        }
        if (same_plan)
            CHECK(!memcmp(ga, gb, np * sizeof(float)), "EDSR (%s): gradients differ from "
                  "pf_model_train_step's (dx %d)", layout_name(layout), with_dx);
        else
            CHECK(worst <= 1e-5 * scale, "EDSR (%s): gradients %.3g from pf_model_train_step's "
                  "(dx %d, another plan)", layout_name(layout), worst / scale, with_dx);
    }
    CHECK(pf_model_train_step(mb, lq, gt, n, h, w, &loss_b, err, sizeof err) == -1,
          "pf_model_train_step refuses a model without a loss");
    CHECK(pf_model_forward_train_f32(ma, lqf, n, h, w, err, sizeof err) == 0, "A: %s", err);
    CHECK(pf_model_backward_from(ma, dout, NULL, dx, err, sizeof err) == -1 &&
              strstr(err, "input_grad"), "a zoo model's plan gives no input gradient");
    CHECK(pf_model_backward_input(ma, dout, NULL, dx, err, sizeof err) == -1 &&
              strstr(err, "input_grad"), "nor an input gradient alone");
    printf("EDSR (%s): loss identical, %zu gradients %s through pf_model_new_net\n",
           layout_name(layout), np, same_plan ? "identical" : "within 1e-5 (another plan)");
done:
    pf_model_destroy(&ma);
    pf_model_destroy(&mb);
}

/* ---- the input gradient alone through zoo descriptions -------------------------------- */

/* `type` (small widths) through pf_model_new_net in `layout`: pf_model_backward_input against
   pf_model_backward_from's dx for a random output gradient (check_input_only). */
static void check_zoo_input_only(const char *type, pf_layout layout) {
    char err[512], label[64];
    pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "%s", type);
    snprintf(label, sizeof label, "%s input only (%s)", type, layout_name(layout));
    cfg.scale = 2;
    cfg.n_feats = 16;
    cfg.n_blocks = 2;
    cfg.res_scale = 0.5f;
    cfg.num_group = 2;
    cfg.squeeze_factor = 4;
    cfg.fsrcnn_d = 8;
    cfg.fsrcnn_s = 4;
    cfg.fsrcnn_m = 1;
    enum { n = 2, h = 8, w = 8, s = 2, nx = n * h * w * 3, ny = n * 3 * h * s * w * s };
    static float x[nx], dout[ny], dx[nx];
    pf_net net;
    CHECK(pf_net_build(&net, &cfg, err, sizeof err) == 0, "%s: %s", label, err);
    pf_model *m = pf_model_new_net(&net, cfg.conv_algorithm, err, sizeof err);
    CHECK(m != NULL, "%s: %s", label, err);
    if (!m) return;
    m->dnnl.force_layout = layout;
    pf_model_init(m, 4);
    pf_rng rng = pf_rng_make(8, 1, (uint64_t)layout);
    for (int i = 0; i < nx; i++) x[i] = (float)pf_rng_uniform(&rng);
    fill(&rng, dout, ny);
    if (pf_model_forward_train_f32(m, x, n, h, w, err, sizeof err) ||
        pf_model_backward_from(m, dout, NULL, dx, err, sizeof err))
        CHECK(0, "%s: %s", label, err);
    else
        check_input_only(m, dout, NULL, dx, nx, label);
    printf("%s: checked against pf_model_backward_from\n", label);
    pf_model_destroy(&m);
}

/* The description's rules for taps: kept to the end of forward (pf_net_last_use, in
   inference too, where tap 0 would otherwise die at its reader), refused twice or past
   PF_NET_MAX_TAPS. */
static void check_desc(void) {
    pf_net g;
    int t[5], last[8];
    CHECK(build(&g, t) == 0 && g.n_t <= 8, "build");
    pf_net_last_use(&g, 0, last);
    CHECK(last[t[1]] == g.n_node && last[t[2]] == g.n_node && last[t[3]] == g.n_node - 1,
          "tap liveness: %d %d %d of %d nodes", last[t[1]], last[t[2]], last[t[3]], g.n_node);
    CHECK(pf_net_add_tap(&g, t[1]) == -1 && pf_net_add_tap(&g, -1) == -1 &&
          pf_net_add_tap(&g, g.n_t) == -1, "bad taps refused");
    CHECK(pf_net_add_tap(&g, t[4]) == 2, "the output may be a tap too");
    int added = 0;
    for (int k = 0; k < PF_NET_MAX_TAPS; k++)
        added += pf_net_add_tap(&g, pf_net_tensor(&g, 1, 1, 1, 0)) >= 0;
    CHECK(added == PF_NET_MAX_TAPS - 3 && g.n_taps == PF_NET_MAX_TAPS, "%d more taps", added);
    pf_net_free(&g);
}

/* Write a float array as dir/name; 0 or -1. */
static int put(const char *dir, const char *name, const float *v, size_t n) {
    return pf_ref_write_file(dir, name, v, n * sizeof(float));
}

/* One layout's forward and backward of the full loss, into dir as LAYOUT.{out,tap0,tap1,grads,
   dx}.f32 for the reference. */
static void torch_case(const char *dir, pf_layout layout, const float *x, const seeds_t *s) {
    char err[512], name[64];
    pf_model *m = taps_model(layout);
    if (!m) return;
    static float out[N * H * W / 16], t0[N * C1 * H * W], t1[N * C1 * H * W / 4], dx[NX];
    const float *dtaps[2] = { s->b0, s->b1 };
    const char *ln = layout_name(layout);
    if (pf_model_forward_train_f32(m, x, N, H, W, err, sizeof err) ||
        pf_model_read(m, -1, out) || pf_model_read(m, 0, t0) || pf_model_read(m, 1, t1) ||
        pf_model_backward_from(m, s->a, dtaps, dx, err, sizeof err)) {
        CHECK(0, "%s: %s", ln, err);
    } else {
        const char *keys[] = { "out", "tap0", "tap1", "grads", "dx" };
        const float *vals[] = { out, t0, t1, pf_model_grads(m), dx };
        size_t sizes[] = { sizeof out / sizeof *out, sizeof t0 / sizeof *t0,
                           sizeof t1 / sizeof *t1, pf_model_num_params(m), NX };
        for (int k = 0; k < 5; k++) {
            snprintf(name, sizeof name, "%s.%s.f32", ln, keys[k]);
            put(dir, name, vals[k], sizes[k]);
        }
        if (layout == PF_LAYOUT_ANY) put(dir, "params.f32", pf_model_params(m),
                                         pf_model_num_params(m));
    }
    pf_model_destroy(&m);
}

static int with_torch(const pf_layout *layouts, size_t n_layouts) {
    if (!pf_ref_have("test_model_taps torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_model_taps.XXXXXX";
    FILE *f = pf_ref_open_cases(dir);
    if (!f) return pf_test_end("test_model_taps torch");
    fprintf(f, "%d %d %d %d %.9g %.9g %.9g %.9g\n", N, H, W, C1, MEAN[0], MEAN[1], MEAN[2],
            RANGE);
    for (size_t i = 0; i < n_layouts; i++) fprintf(f, "%s\n", layout_name(layouts[i]));
    CHECK(fclose(f) == 0, "params.txt");
    pf_rng rng = pf_rng_make(5, 9, 0);
    static float x[NX], a[N * H * W / 16], b0[N * C1 * H * W], b1[N * C1 * H * W / 4];
    for (int i = 0; i < NX; i++) x[i] = (float)pf_rng_uniform(&rng);
    fill(&rng, a, sizeof a / sizeof *a);
    fill(&rng, b0, sizeof b0 / sizeof *b0);
    fill(&rng, b1, sizeof b1 / sizeof *b1);
    put(dir, "x.f32", x, NX);
    put(dir, "a.f32", a, sizeof a / sizeof *a);
    put(dir, "b0.f32", b0, sizeof b0 / sizeof *b0);
    put(dir, "b1.f32", b1, sizeof b1 / sizeof *b1);
    seeds_t s = { a, b0, b1 };
    for (size_t i = 0; i < n_layouts; i++) torch_case(dir, layouts[i], x, &s);
    pf_ref_run("model_taps_ref.py", dir);
    return pf_test_end("test_model_taps torch");
}

int main(int argc, char **argv) {
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    if (argc > 1 && !strcmp(argv[1], "torch"))
        return with_torch(layouts, sizeof layouts / sizeof *layouts);
    check_desc();
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) check_layout(layouts[i]);
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) check_edsr(layouts[i]);
    static const char *const zoo[] = { "EDSR", "FSRCNN", "RCAN" };
    for (size_t z = 0; z < sizeof zoo / sizeof *zoo; z++)
        for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++)
            check_zoo_input_only(zoo[z], layouts[i]);
    return pf_test_end("test_model_taps");
}
