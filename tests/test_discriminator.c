/*  test_discriminator — UNetDiscriminatorSN (nn/discriminator.h) as a description, run on the
    CPU executor with spectral normalisation over the flat buffers.

    Without arguments (no Python needed):
      - the parameter table of UNetDiscriminatorSN(3, 64, True) against the list below, written
        from BasicSR's / Real-ESRGAN's class (names, shapes, order; weight_orig for conv1..8),
        the convs' kernel / stride / padding / bias / activation / SN flags, the u / v state's
        size and offsets, the 1-channel output at the input's size, the input multiple 8, the
        skip adds present only with skip_connection, init bounds, and the builder's errors;
      - every parameter tensor's gradient (weight_orig through the spectral normalisation,
        after a training forward moved u and v) against central finite differences of
        sum(out * gout) with u and v held (evaluation forward), along two random +-1
        directions, num_feat 4, input 2 x 3 x 8 x 8 in [0, 1], LeakyReLU slopes set to 1 (a
        smooth loss: check_fd says why), in oneDNN's layout choice and with every activation
        forced to NCHW, nChw8c, nChw16c and NHWC;
      - an evaluation forward changes neither u nor v, a training forward does.
    With `torch` (ctest test_discriminator.torch; 77 without /usr/bin/python3 and torch):
    tests/reference/unet_d_ref.py writes the network written in torch with
    torch.nn.utils.spectral_norm (num_feat 16), torch's own weights and u / v, an input 2 x 3 x
    32 x 32 and an upstream gradient; PixFlow loads them by their state_dict names, runs one
    training forward and backward in every layout: output within 1e-5 (relative to its max
    |value|), u and v after the power iteration within 1e-6, every parameter's gradient within
    1e-4 (relative to the tensor's max), and PixFlow's state_dict order (parameters with each
    SN conv's weight_u, weight_v after its weight_orig) equal to torch's; the same without the
    skip connections.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/safetensors.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/discriminator.h"
#include "nn/graph.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

/* ---- the description ----------------------------------------------------------------- */

/* UNetDiscriminatorSN(num_in_ch=3, num_feat=64, skip_connection=True)'s named_parameters,
   from its __init__: conv0 3x3 with bias; conv1..3 4x4 stride 2 and conv4..8 3x3, all
   spectral_norm(bias=False); conv9 3x3 with bias to 1 channel. */
static const struct {
    const char *name;
    int64_t shape[4];
    int ndim;
} want_table[] = {
    { "conv0.weight", { 64, 3, 3, 3 }, 4 },        { "conv0.bias", { 64 }, 1 },
    { "conv1.weight_orig", { 128, 64, 4, 4 }, 4 }, { "conv2.weight_orig", { 256, 128, 4, 4 }, 4 },
    { "conv3.weight_orig", { 512, 256, 4, 4 }, 4 }, { "conv4.weight_orig", { 256, 512, 3, 3 }, 4 },
    { "conv5.weight_orig", { 128, 256, 3, 3 }, 4 }, { "conv6.weight_orig", { 64, 128, 3, 3 }, 4 },
    { "conv7.weight_orig", { 64, 64, 3, 3 }, 4 },  { "conv8.weight_orig", { 64, 64, 3, 3 }, 4 },
    { "conv9.weight", { 1, 64, 3, 3 }, 4 },        { "conv9.bias", { 1 }, 1 },
};
enum { N_WANT = sizeof want_table / sizeof *want_table };

static int count_op(const pf_net *g, pf_gop op) {
    int n = 0;
    for (int k = 0; k < g->n_node; k++) n += g->node[k].op == op;
    return n;
}

static void check_table(void) {
    pf_net g;
    char err[256];
    int rc = pf_net_build_unet_discriminator_sn(&g, 3, 64, 1, err, sizeof err);
    CHECK(rc == 0, "build: %s", err);
    if (rc) return;
    CHECK(g.n_tensors == N_WANT, "%d parameter tensors, want %d", g.n_tensors, N_WANT);
    size_t total = 0;
    for (int i = 0; i < g.n_tensors && i < N_WANT; i++) {
        const pf_param_info *t = &g.tensors[i];
        int same = !strcmp(t->name, want_table[i].name) && t->ndim == want_table[i].ndim &&
                   t->offset == total;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == want_table[i].shape[d];
        CHECK(same, "tensor %d: %s (ndim %d, offset %zu), want %s", i, t->name, t->ndim,
              t->offset, want_table[i].name);
        total += t->numel;
    }
    CHECK(g.n_params == total && total == 4376897, "%zu parameters", g.n_params);
    /* conv i: kernel, stride, bias, SN, activation */
    for (int i = 0; i < g.n_convs; i++) {
        const pf_nconv *c = &g.conv[i];
        int k = i >= 1 && i <= 3 ? 4 : 3, s = k == 4 ? 2 : 1, sn = i >= 1 && i <= 8;
        CHECK(c->k == k && c->stride == s && c->pad == 1 && c->has_bias == !sn && c->sn == sn &&
                  c->act == (i < 9) && c->alpha == (i < 9 ? 0.2f : 0.0f),
              "%s: k %d stride %d pad %d bias %d sn %d act %d alpha %g", c->name, c->k,
              c->stride, c->pad, c->has_bias, c->sn, c->act, (double)c->alpha);
    }
    CHECK(g.n_convs == 10, "%d convs", g.n_convs);
    const pf_gtensor *o = &g.t[g.output];
    CHECK(o->c == 1 && o->mul == 1 && o->div == 1, "output %d ch, %d / %d", o->c, o->mul, o->div);
    CHECK(pf_net_input_multiple(&g) == 8, "input multiple %d", pf_net_input_multiple(&g));
    CHECK(!g.use_mean && g.range == 1.0f && g.t[g.input].c == 3, "input node: mean / range");
    CHECK(count_op(&g, PF_G_ADD) == 3 && count_op(&g, PF_G_RESIZE) == 3, "skips / upsamplings");
    for (int k = 0; k < g.n_node; k++)
        if (g.node[k].op == PF_G_RESIZE)
            CHECK(!g.node[k].ac && !g.node[k].use_mul &&
                      g.t[g.node[k].out].div * 2 == g.t[g.node[k].in[0]].div,
                  "resize node %d: align_corners %d, use_mul %d", k, g.node[k].ac,
                  g.node[k].use_mul);
    int hw[2 * 64];
    CHECK(g.n_t <= 64 && pf_net_check(&g, 16, 24, hw, err, sizeof err) == 0, "16 x 24: %s", err);
    CHECK(pf_net_check(&g, 12, 16, hw, err, sizeof err) == -1 && strstr(err, "divisible by 8"),
          "12 x 16 not refused: %s", err);
    /* u / v state: O + I K K per SN conv, in conv order */
    size_t want_sn = 0, u, v;
    for (int i = 1; i <= 8; i++)
        want_sn += (size_t)g.conv[i].oc + (size_t)g.conv[i].ic * g.conv[i].k * g.conv[i].k;
    CHECK(pf_disc_sn_count(&g) == 8 && pf_disc_sn_numel(&g) == want_sn, "sn %d, %zu floats",
          pf_disc_sn_count(&g), pf_disc_sn_numel(&g));
    CHECK(pf_disc_sn_at(&g, 0, &u, &v) == 1 && u == 0 && v == 128, "conv1's u / v offsets");
    CHECK(pf_disc_sn_at(&g, 1, &u, &v) == 2 && u == 128 + 64 * 16 && v == u + 256,
          "conv2's u / v offsets");
    CHECK(pf_disc_sn_at(&g, 8, &u, &v) == -1, "a 9th SN conv");
    /* init: PyTorch's default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    float *p = malloc(g.n_params * sizeof *p);
    pf_net_init_params(&g, p, 3);
    for (int i = 0; p && i < g.n_tensors; i++) {
        const pf_param_info *t = &g.tensors[i];
        const pf_param_info *wt = &g.tensors[i - (t->ndim == 1)]; /* a bias: its weight's */
        double fan = (double)wt->numel / (double)wt->shape[0];
        double lim = 1 / sqrt(fan), mx = 0;
        for (size_t j = 0; j < t->numel; j++) mx = fmax(mx, fabs(p[t->offset + j]));
        CHECK(mx <= lim && (t->numel < 64 || mx > 0.9 * lim), "%s: max |init| %g, bound %g",
              t->name, mx, lim);
    }
    free(p);
    pf_net_free(&g);
    rc = pf_net_build_unet_discriminator_sn(&g, 3, 64, 0, err, sizeof err);
    CHECK(rc == 0 && count_op(&g, PF_G_ADD) == 0 && g.n_tensors == N_WANT, "no skips: %s", err);
    pf_net_free(&g);
}

static void check_errors(void) {
    static const struct {
        int in, feat, skip;
        const char *says;
    } bad[] = { { 4, 64, 1, "num_in_ch" }, { 3, 0, 1, "num_feat" }, { 3, 2000, 1, "num_feat" },
                { 3, 64, 2, "skip_connection" } };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pf_net g;
        char err[256] = "";
        int rc = pf_net_build_unet_discriminator_sn(&g, bad[i].in, bad[i].feat, bad[i].skip, err,
                                                    sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].says) && g.n_node == 0,
              "(%d, %d, %d): rc %d, '%s'", bad[i].in, bad[i].feat, bad[i].skip, rc, err);
    }
}

/* ---- running on the CPU executor ---------------------------------------------------------- */

typedef struct {
    pf_net *g;
    pf_dnnl dnnl;
    pf_conv *convs;
    float *params;                  /* weight_orig and the rest (what training updates) */
    float *eff;                     /* what the executor runs with (pf_disc_sn_forward) */
    float *grads;
    float *state;                   /* u / v (pf_disc_sn_numel) */
    pf_spectral_norm *sn;
    pf_gctx x;
    pf_gstate *S;
    int n, h, w;
    size_t out_numel;               /* N x 1 x H x W */
} run_t;

static int run_open(run_t *r, pf_net *g, pf_layout layout, int n, int h, int w) {
    char err[512];
    memset(r, 0, sizeof *r);
    r->g = g;
    r->n = n, r->h = h, r->w = w;
    if (pf_dnnl_init(&r->dnnl, err, sizeof err)) {
        CHECK(0, "dnnl: %s", err);
        return -1;
    }
    r->dnnl.force_layout = layout;
    r->convs = calloc((size_t)g->n_convs, sizeof *r->convs);
    r->params = calloc(g->n_params, sizeof(float));
    r->eff = calloc(g->n_params, sizeof(float));
    r->grads = calloc(g->n_params, sizeof(float));
    r->state = calloc(pf_disc_sn_numel(g), sizeof(float));
    r->sn = calloc((size_t)pf_disc_sn_count(g), sizeof *r->sn);
    if (!r->convs || !r->params || !r->eff || !r->grads || !r->state || !r->sn) {
        CHECK(0, "out of memory");
        return -1;
    }
    pf_disc_sn_layers(g, r->state, r->sn);
    for (int i = 0; i < g->n_convs; i++) pf_graph_conv_init(g, i, &r->convs[i]);
    r->x = (pf_gctx){ .net = g, .dnnl = &r->dnnl, .convs = r->convs, .params = r->eff,
                      .grads = r->grads };
    if (pf_graph_plan(&r->x, &r->S, n, h, w, 1, err, sizeof err)) {
        CHECK(0, "%s: plan: %s", g->type, err);
        return -1;
    }
    r->out_numel = (size_t)n * h * w;
    return 0;
}

static void run_close(run_t *r) {
    pf_gstate_free(&r->S);
    for (int i = 0; r->convs && i < r->g->n_convs; i++) pf_conv_free(&r->convs[i]);
    void *owned[] = { r->convs, r->params, r->eff, r->grads, r->state, r->sn };
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
    pf_dnnl_free(&r->dnnl);
}

/* Where output element i (N x 1 x H x W, row-major) lies in the executor's output of block b
   (nn/cpu/dnnl_ctx.h: nCHWb with C = 1, i.e. one channel padded to b). */
static size_t out_at(const run_t *r, size_t i, int b) {
    size_t plane = (size_t)r->h * r->w, at = i % plane;
    return pf_blk_off((int)(i / plane), 0, (int)(at / r->w), (int)(at % r->w), 1, r->h, r->w, b);
}

/* Spectral norm (training or not), then the forward of x (n x h x w x 3 floats, NHWC); the
   output into out (N x 1 x H x W). */
static int run_forward(run_t *r, const float *x, int training, float *out) {
    char err[512];
    const pf_net *g = r->g;
    pf_disc_sn_forward(g, r->sn, r->params, training, r->eff);
    int rc = 0;
    for (int i = 0; i < g->n_convs && !rc; i++) { /* the effective weights, not weight_orig */
        const float *w = r->eff + g->tensors[g->conv[i].weight].offset;
        int bi = pf_net_conv_bias(g, i);
        rc = pf_conv_set_weights(&r->convs[i], w, bi >= 0 ? r->eff + g->tensors[bi].offset : NULL,
                                 err, sizeof err);
    }
    if (rc || pf_graph_forward_f32(&r->x, r->S, x, err, sizeof err)) {
        CHECK(0, "forward: %s", err);
        return -1;
    }
    int b;
    const float *y = pf_gstate_out(r->S, &b);
    for (size_t i = 0; i < r->out_numel; i++) out[i] = y[out_at(r, i, b)];
    return 0;
}

/* A training forward, then backward from d loss / d out = gout into r->grads (d weight_orig
   for the SN convs). */
static int run_backward(run_t *r, const float *x, const float *gout, float *out) {
    char err[512];
    if (run_forward(r, x, 1, out)) return -1;
    int b;
    pf_gstate_out(r->S, &b);
    float *dy = pf_gstate_dout(r->S);
    memset(dy, 0, pf_blk_numel(r->n, 1, r->h, r->w, b) * sizeof(float));
    for (size_t i = 0; i < r->out_numel; i++) dy[out_at(r, i, b)] = gout[i];
    if (pf_graph_backward(&r->x, r->S, err, sizeof err)) {
        CHECK(0, "backward: %s", err);
        return -1;
    }
    pf_disc_sn_backward(r->g, r->sn, r->params, r->grads);
    return 0;
}

static double loss_of(const float *out, const float *gout, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * gout[i];
    return s;
}

static const char *layout_name(pf_layout l) {
    return l == PF_LAYOUT_ANY ? "any" : l == PF_LAYOUT_NCHW ? "nchw" : l == PF_LAYOUT_NCHW8C
           ? "nChw8c" : l == PF_LAYOUT_NCHW16C ? "nChw16c" : "nhwc";
}

/* The loss along direction v (n floats) of tensor ti: (L(p + e v) - L(p - e v)) / 2 e with u
   and v held (the evaluation forward), in double. */
static double fd_along(run_t *r, const pf_param_info *ti, const float *v, double e,
                       const float *x, const float *gout, float *out) {
    float *keep = malloc(ti->numel * sizeof *keep);
    double l[2];
    memcpy(keep, r->params + ti->offset, ti->numel * sizeof *keep);
    for (int side = 0; side < 2; side++) {
        for (size_t j = 0; j < ti->numel; j++)
            r->params[ti->offset + j] = keep[j] + (float)(side ? -e : e) * v[j];
        run_forward(r, x, 0, out);
        l[side] = loss_of(out, gout, r->out_numel);
    }
    memcpy(r->params + ti->offset, keep, ti->numel * sizeof *keep);
    free(keep);
    return (l[0] - l[1]) / (2 * e);
}

/* Per tensor, FD_DIRS random +-1 directions: the analytic directional derivative against the
   central difference, within 1 % of the larger of the two (measured: < 0.1 %). Returns the
   worst relative difference. */
enum { FD_DIRS = 2 };
static double fd_tensors(run_t *r, const char *label, const float *x, const float *gout,
                         float *out) {
    const pf_net *g = r->g;
    float *an = malloc(g->n_params * sizeof *an);
    pf_rng rng = pf_rng_make(41, 7, 1);
    const double e = 1e-3;
    double worst = 0;
    int bad = 0;
    memcpy(an, r->grads, g->n_params * sizeof *an);
    for (int t = 0; t < g->n_tensors; t++) {
        const pf_param_info *ti = &g->tensors[t];
        float *v = calloc(ti->numel, sizeof *v);
        for (int d = 0; d < FD_DIRS; d++) {
            double an_dir = 0;
            for (size_t j = 0; j < ti->numel; j++) v[j] = pf_rng_below(&rng, 2) ? 1.0f : -1.0f;
            for (size_t j = 0; j < ti->numel; j++) an_dir += (double)v[j] * an[ti->offset + j];
            double fd = fd_along(r, ti, v, e, x, gout, out), diff = fabs(fd - an_dir);
            double scale = fmax(fabs(fd), fabs(an_dir));
            worst = fmax(worst, diff / fmax(scale, 1e-12));
            if (diff > 1e-2 * scale + 1e-6) {
                bad++;
                fprintf(stderr, "%s: %s: analytic %.7g, finite difference %.7g\n", label,
                        ti->name, an_dir, fd);
            }
        }
        free(v);
    }
    CHECK(bad == 0, "%s: %d of %d directions disagree with finite differences", label, bad,
          FD_DIRS * g->n_tensors);
    free(an);
    return worst;
}

/* Finite differences of UNetDiscriminatorSN(3, 4, True) on a 2 x 3 x 8 x 8 input in layout,
   its LeakyReLU slopes set to 1. With 0.2, too many of this small network's pre-activations
   lie within a perturbation of 0 for any e that float rounding allows: the quotient was off
   by several % at every e from 1e-2 to 1e-5 (measured) while PyTorch agrees to 3e-6. Slope
   1 makes the loss smooth (still not linear in weight_orig: sigma, and the products of
   layers) and leaves every other backward in the path: the convolutions' weights and data,
   the bilinear upsampling, the skip adds, the spectral norm; the fused LeakyReLU's mask is
   test_graph_video's and the torch entry's. And u / v: moved by a training forward, not by
   an evaluation one. */
static void check_fd(pf_layout layout) {
    enum { FN = 2, FH = 8, FW = 8 };
    pf_net g;
    char err[256], label[64];
    snprintf(label, sizeof label, "UNetDiscriminatorSN fd (%s)", layout_name(layout));
    if (pf_net_build_unet_discriminator_sn(&g, 3, 4, 1, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    for (int i = 0; i < g.n_convs; i++) /* slope 1: a smooth loss (see above) */
        if (g.conv[i].act) g.conv[i].alpha = 1.0f;
    run_t r;
    float x[FN * FH * FW * 3], gout[FN * FH * FW], out[FN * FH * FW];
    if (run_open(&r, &g, layout, FN, FH, FW) == 0) {
        pf_net_init_params(&g, r.params, 5);
        pf_disc_sn_init(&g, r.sn, 5);
        pf_rng rng = pf_rng_make(41, 8, 2);
        for (int i = 0; i < FN * FH * FW * 3; i++) x[i] = (float)pf_rng_uniform(&rng);
        for (int i = 0; i < FN * FH * FW; i++) gout[i] = (float)(2 * pf_rng_uniform(&rng) - 1);
        size_t ns = pf_disc_sn_numel(&g);
        float *s0 = malloc(ns * sizeof *s0);
        memcpy(s0, r.state, ns * sizeof *s0);
        if (run_backward(&r, x, gout, out) == 0) {
            CHECK(memcmp(s0, r.state, ns * sizeof *s0) != 0, "a training forward kept u / v");
            memcpy(s0, r.state, ns * sizeof *s0);
            double worst = fd_tensors(&r, label, x, gout, out);
            CHECK(memcmp(s0, r.state, ns * sizeof *s0) == 0, "evaluation forwards moved u / v");
            printf("%s: %d tensors x %d directions, worst relative difference %.2g\n", label,
                   g.n_tensors, FD_DIRS, worst);
        }
        free(s0);
    }
    run_close(&r);
    pf_net_free(&g);
}

/* ---- against torch ------------------------------------------------------------------------ */

/* max |got - want| / max(max |want|, 1e-30) */
static double rel_err(const float *got, const float *want, size_t n) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst / scale;
}

/* name's tensor of n floats in ref, or NULL (a failed check). */
static const float *ref_get(const pf_safetensors *ref, const char *name, size_t n) {
    int ndim;
    int64_t shape[8];
    const float *p = pf_safetensors_get(ref, name, &ndim, shape);
    size_t numel = 1;
    for (int i = 0; p && i < ndim; i++) numel *= (size_t)shape[i];
    CHECK(p && numel == n, "%s: %s missing or not %zu floats", pf_safetensors_name(ref), name, n);
    return p && numel == n ? p : NULL;
}

/* PixFlow's state_dict keys (parameters; after each SN conv's weight_orig its weight_u,
   weight_v) against torch's (metadata state_dict). */
static void check_keys(const pf_net *g, const pf_safetensors *ref) {
    const char *want = pf_safetensors_meta(ref, "state_dict");
    char keys[4096] = "";
    size_t at = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const char *nm = g->tensors[t].name;
        at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%s", t ? "," : "", nm);
        size_t len = strlen(nm);
        if (len > 12 && !strcmp(nm + len - 12, ".weight_orig"))
            at += (size_t)snprintf(keys + at, sizeof keys - at, ",%.*s.weight_u,%.*s.weight_v",
                                   (int)(len - 12), nm, (int)(len - 12), nm);
    }
    CHECK(want && !strcmp(keys, want), "state_dict order:\n  %s\ntorch's:\n  %s", keys,
          want ? want : "(none)");
}

/* Load torch's weights and u / v into r; x (NCHW in the file) into xs (NHWC). 0 or -1. */
static int load_ref(run_t *r, const pf_safetensors *ref, float *xs) {
    const pf_net *g = r->g;
    for (int t = 0; t < g->n_tensors; t++) {
        const float *p = ref_get(ref, g->tensors[t].name, g->tensors[t].numel);
        if (!p) return -1;
        memcpy(r->params + g->tensors[t].offset, p, g->tensors[t].numel * sizeof *p);
    }
    size_t u, v;
    for (int j = 0, i; (i = pf_disc_sn_at(g, j, &u, &v)) >= 0; j++) {
        char name[128];
        snprintf(name, sizeof name, "%s.weight_u", g->conv[i].name);
        const float *pu = ref_get(ref, name, (size_t)r->sn[j].rows);
        snprintf(name, sizeof name, "%s.weight_v", g->conv[i].name);
        const float *pv = ref_get(ref, name, (size_t)r->sn[j].cols);
        if (!pu || !pv) return -1;
        memcpy(r->state + u, pu, (size_t)r->sn[j].rows * sizeof *pu);
        memcpy(r->state + v, pv, (size_t)r->sn[j].cols * sizeof *pv);
    }
    const float *x = ref_get(ref, "x", (size_t)r->n * 3 * r->h * r->w);
    if (!x) return -1;
    size_t plane = (size_t)r->h * r->w;
    for (int a = 0; a < r->n; a++)
        for (int c = 0; c < 3; c++)
            for (size_t i = 0; i < plane; i++)
                xs[(a * plane + i) * 3 + c] = x[((size_t)a * 3 + c) * plane + i];
    return 0;
}

/* u / v after the forward and every gradient against torch's; returns the worst of each. */
static void compare_after(run_t *r, const pf_safetensors *ref, const char *label, double *e_uv,
                          double *e_grad) {
    const pf_net *g = r->g;
    size_t u, v;
    for (int j = 0, i; (i = pf_disc_sn_at(g, j, &u, &v)) >= 0; j++) {
        char name[128];
        int len[2] = { r->sn[j].rows, r->sn[j].cols };
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "after.%s.weight_%c", g->conv[i].name, k ? 'v' : 'u');
            const float *want = ref_get(ref, name, (size_t)len[k]), *got = r->state + (k ? v : u);
            for (int e = 0; want && e < len[k]; e++)
                *e_uv = fmax(*e_uv, fabs((double)got[e] - want[e]));
        }
    }
    CHECK(*e_uv <= 1e-6, "%s: u / v after the forward off by %.3g", label, *e_uv);
    for (int t = 0; t < g->n_tensors; t++) {
        const pf_param_info *ti = &g->tensors[t];
        char name[128];
        snprintf(name, sizeof name, "grad.%s", ti->name);
        const float *gw = ref_get(ref, name, ti->numel);
        if (!gw) continue;
        double e = rel_err(r->grads + ti->offset, gw, ti->numel);
        CHECK(e <= 1e-4, "%s: d %s %.3g from torch's", label, ti->name, e);
        *e_grad = fmax(*e_grad, e);
    }
}

static void torch_case(const pf_safetensors *ref, pf_layout layout) {
    enum { TN = 2, TH = 32, TW = 32 };
    const char *nf = pf_safetensors_meta(ref, "num_feat");
    const char *sk = pf_safetensors_meta(ref, "skip_connection");
    pf_net g;
    char err[256], label[96];
    if (!nf || !sk || pf_net_build_unet_discriminator_sn(&g, 3, atoi(nf), atoi(sk), err,
                                                         sizeof err)) {
        CHECK(0, "num_feat / skip_connection metadata, or build: %s", nf && sk ? err : "");
        return;
    }
    snprintf(label, sizeof label, "UNetDiscriminatorSN(3, %s, %s) (%s)", nf, sk,
             layout_name(layout));
    if (layout == PF_LAYOUT_ANY) check_keys(&g, ref);
    run_t r;
    float *xs = malloc(sizeof(float) * TN * 3 * TH * TW), out[TN * TH * TW];
    if (xs && run_open(&r, &g, layout, TN, TH, TW) == 0 && load_ref(&r, ref, xs) == 0) {
        const float *want = ref_get(ref, "out", TN * TH * TW);
        const float *gout = ref_get(ref, "gout", TN * TH * TW);
        if (want && gout && run_backward(&r, xs, gout, out) == 0) {
            double e_out = rel_err(out, want, TN * TH * TW), e_uv = 0, e_grad = 0;
            CHECK(e_out <= 1e-5, "%s: output %.3g from torch's", label, e_out);
            compare_after(&r, ref, label, &e_uv, &e_grad);
            printf("%s: torch parity: output %.2g, u / v %.2g (absolute), gradients %.2g\n",
                   label, e_out, e_uv, e_grad);
        }
    }
    if (xs) run_close(&r);
    free(xs);
    pf_net_free(&g);
}

static int with_torch(const pf_layout *layouts, size_t n_layouts) {
    if (!pf_ref_have("test_discriminator torch", "numpy, torch")) return 77;
    static const char *args[] = { "16 1", "8 0" };
    for (size_t a = 0; a < sizeof args / sizeof *args; a++) {
        char dir[] = "/tmp/pf_unet_d.XXXXXX", path[1100], err[512], cmd[2300];
        if (!mkdtemp(dir)) {
            CHECK(0, "mkdtemp failed");
            break;
        }
        /* pf_ref_exec's command with num_feat and skip_connection after the folder */
        const char *src = getenv("PF_SOURCE_DIR");
        snprintf(cmd, sizeof cmd, PF_REF_PY " %s/tests/reference/unet_d_ref.py %s %s",
                 src ? src : ".", dir, args[a]);
        fflush(stdout);
        int st = system(cmd);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
        snprintf(path, sizeof path, "%s/unet_d.safetensors", dir);
        pf_safetensors *ref = NULL;
        CHECK(pf_safetensors_load(path, &ref, err, sizeof err) == 0, "%s", err);
        for (size_t i = 0; ref && i < n_layouts; i++) torch_case(ref, layouts[i]);
        pf_safetensors_free(&ref);
        pf_ref_remove(dir);
    }
    return pf_test_end("test_discriminator torch");
}

int main(int argc, char **argv) {
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    enum { N_LAYOUTS = sizeof layouts / sizeof *layouts };
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch(layouts, N_LAYOUTS);
    check_table();
    check_errors();
    for (int i = 0; i < N_LAYOUTS; i++) check_fd(layouts[i]);
    return pf_test_end("test_discriminator");
}
