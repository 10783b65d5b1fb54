/*  test_bn_linear — BatchNorm2d (PF_G_BATCHNORM) and Linear (PF_G_LINEAR) on the CPU executor,
    the layers BasicSR's VGGStyleDiscriminator adds to the strided convolutions: a small
    network of its shape built by hand (pf_net_* calls) and run as a model of a description
    (pf_model_new_net):
      conv0_0 3 -> 6, k 3, bias, LeakyReLU 0.2 (fused); conv0_1 6 -> 10, k 4, stride 2, no
      bias (tap 0); bn0_1 BatchNorm2d(10) (tap 1); LeakyReLU 0.2 (a node); linear1 (10 x 4 x 4
      = 160 -> 7) on the flattened map; LeakyReLU 0.2; linear2 (7 -> 1), the output.
    Against a naive forward in double written here (torch's formulas, independent of the
    executor's kernels), with BatchNorm's weight and bias drawn at random:
    - two training forwards (different inputs): both taps and the output element by element;
      the running statistics after each (momentum 0.1, the unbiased batch variance;
      num_batches_tracked 1 then 2);
    - for L = sum(a * out), every parameter tensor's gradient and the input gradient against
      central finite differences of the naive forward in double (random +-1 directions), and
      BatchNorm's weight and bias gradients element by element;
    - pf_model_backward_input's dx bit-identical to pf_model_backward_from's;
    - an eval forward (pf_model_forward_eval_f32: the running statistics, nothing updated) of
      the batch and of one sample;
    - a size at which linear1's in_features is not C H W refused, naming the rule;
    - BatchNorm2d alone on the input (no input gradient wanted): dweight and dbias against
      their sums in double, and a training batch of one value per channel refused;
    all with oneDNN's layout choice and every activation forced to NCHW, nChw8c, nChw16c and
    NHWC (10 channels: padded in blocks of 8 and 16).
    With `torch` (ctest test_bn_linear.torch; 77 without /usr/bin/python3, numpy and torch): the
    same two training forwards and backwards and the eval forward against torch.nn.Conv2d,
    BatchNorm2d, LeakyReLU and Linear modules in float64 (tests/reference/bn_linear_ref.py):
    outputs, running statistics and every gradient within 1e-5 relative, in every layout. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_naive.h"
#include "tests/pf_test_ref.h"

enum { N = 3, H = 8, W = 8, C0 = 6, C1 = 10, HH = H / 2, WH = W / 2, F1 = C1 * HH * WH,
       F2 = 7, NX = N * H * W * 3, NT = N * C1 * HH * WH };
#define SLOPE 0.2
enum { T_W0, T_B0, T_W1, T_BNW, T_BNB, T_L1W, T_L1B, T_L2W, T_L2B, T_COUNT };

/* ---- the network ---------------------------------------------------------------------- */

static int conv_node(pf_net *g, int x, const char *name, int oc, int k, int stride, int bias,
                     int lrelu) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    pf_param_init ui = { PF_INIT_UNIFORM, (double)t.c * k * k, 1.0 };
    int ci = pf_net_add_conv_strided(g, name, t.c, oc, k, stride, 1, bias, ui, ui);
    if (ci < 0) return -1;
    g->conv[ci].act = lrelu;
    g->conv[ci].alpha = lrelu ? (float)SLOPE : 0.0f;
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div * stride, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

static int lrelu_node(pf_net *g, int x) {
    if (x < 0) return -1;
    int o = pf_net_node(g, PF_G_RELU, &x, 1, g->t[x].c, g->t[x].mul, g->t[x].div, g->t[x].one);
    if (o >= 0) g->node[g->n_node - 1].alpha = (float)SLOPE;
    return o;
}

static int build(pf_net *g) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "VGGStyleMini");
    int x = g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    x = conv_node(g, x, "conv0_0", C0, 3, 1, 1, 1);
    int t0 = conv_node(g, x, "conv0_1", C1, 4, 2, 0, 0);
    int t1 = pf_net_add_batchnorm(g, "bn0_1", t0);
    x = pf_net_add_linear(g, "linear1", lrelu_node(g, t1), F1, F2);
    g->output = pf_net_add_linear(g, "linear2", lrelu_node(g, x), F2, 1);
    if (pf_net_add_tap(g, t0) != 0 || pf_net_add_tap(g, t1) != 1) return -1;
    return g->oom || g->output < 0 || g->n_tensors != T_COUNT ? -1 : 0;
}

/* ---- the naive forward, in double ----------------------------------------------------- */

typedef struct {
    double h0[N * C0 * H * W];  /* conv0_0 after its LeakyReLU */
    double t0[NT], t1[NT];      /* conv0_1, bn0_1 (the taps) */
    double z[N * F2];           /* linear1 after its LeakyReLU */
    double out[N];
} naive_t;

static double lrelu(double v) { return v > 0 ? v : SLOPE * v; }

/* The network on x (N x H x W x 3 NHWC) with parameters p (the flat buffer's layout).
   running (2 C1: mean, var) NULL: a training forward (batch statistics; run_out, if given,
   gets the running statistics run_in updated by torch's rule); else an eval forward. */
static void naive_forward(naive_t *r, const pf_net *g, const double *p, const double *x,
                          const double *running, const double *run_in, double *run_out) {
    const double *P[T_COUNT];
    for (int t = 0; t < T_COUNT; t++) P[t] = p + g->tensors[t].offset;
    static double xc[N * 3 * H * W];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < H * W; i++) xc[(n * 3 + c) * H * W + i] = x[(n * H * W + i) * 3 + c];
    pf_naive_conv2d(r->h0, xc, N, 3, H, W, P[T_W0], P[T_B0], C0, 3, 1, 1);
    for (int i = 0; i < N * C0 * H * W; i++) r->h0[i] = lrelu(r->h0[i]);
    pf_naive_conv2d(r->t0, r->h0, N, C0, H, W, P[T_W1], NULL, C1, 4, 2, 1);
    const int M = N * HH * WH;
    for (int c = 0; c < C1; c++) {
        double mean = 0, var = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HH * WH; i++) mean += r->t0[(n * C1 + c) * HH * WH + i] / M;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HH * WH; i++) {
                double d = r->t0[(n * C1 + c) * HH * WH + i] - mean;
                var += d * d / M;
            }
        if (run_out) {
            run_out[c] = 0.9 * run_in[c] + 0.1 * mean;
            run_out[C1 + c] = 0.9 * run_in[C1 + c] + 0.1 * var * M / (M - 1);
        }
        if (running) {
            mean = running[c];
            var = running[C1 + c];
        }
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HH * WH; i++) {
                int o = (n * C1 + c) * HH * WH + i;
                r->t1[o] = (r->t0[o] - mean) / sqrt(var + 1e-5) * P[T_BNW][c] + P[T_BNB][c];
            }
    }
    for (int n = 0; n < N; n++) {
        double v2 = P[T_L2B][0];
        for (int o = 0; o < F2; o++) {
            double v = P[T_L1B][o];
            for (int i = 0; i < F1; i++) v += P[T_L1W][o * F1 + i] * lrelu(r->t1[n * F1 + i]);
            r->z[n * F2 + o] = lrelu(v);
            v2 += P[T_L2W][o] * r->z[n * F2 + o];
        }
        r->out[n] = v2;
    }
}

static double naive_loss(const pf_net *g, const double *p, const double *x, const float *a) {
    static naive_t r;
    naive_forward(&r, g, p, x, NULL, NULL, NULL);
    double l = 0;
    for (int n = 0; n < N; n++) l += a[n] * r.out[n];
    return l;
}

/* ---- checks --------------------------------------------------------------------------- */

/* max |got - want| / max |want| over n values. */
static double rel(const float *got, const double *want, size_t n) {
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs(got[i] - want[i]));
        s = fmax(s, fabs(want[i]));
    }
    return e / (s > 0 ? s : 1);
}

/* Central differences of naive_loss (double, step 1e-6) against the model's gradients:
   each tensor along a random +-1 direction (index T_COUNT: the input against dx), the
   BatchNorm tensors element by element too; within 1e-4 of the gradient's norm. */
static void check_fd(const char *label, const pf_net *g, const float *pf, const float *grads,
                     const double *x, const float *dx, const float *a) {
    double *p = malloc(g->n_params * sizeof(double)), *xp = malloc(NX * sizeof(double));
    for (size_t j = 0; j < g->n_params; j++) p[j] = pf[j];
    memcpy(xp, x, NX * sizeof(double));
    pf_rng rng = pf_rng_make(31, 2, 0);
    const double e = 1e-6;
    for (int t = 0; t <= T_COUNT; t++) {
        int elementwise = t == T_BNW || t == T_BNB;
        size_t n = t < T_COUNT ? g->tensors[t].numel : NX;
        double *v = t < T_COUNT ? p + g->tensors[t].offset : xp;
        const float *an = t < T_COUNT ? grads + g->tensors[t].offset : dx;
        for (int rep = 0; rep < (elementwise ? (int)n + 1 : 1); rep++) {
            double dir = 0, norm = 0, l[2];
            signed char *d = calloc(n, 1);
            for (size_t j = 0; j < n; j++) {
                d[j] = rep ? (j == (size_t)rep - 1) : pf_rng_below(&rng, 2) ? 1 : -1;
                dir += d[j] * (double)an[j];
                norm += (double)an[j] * an[j];
            }
            for (int side = 0; side < 2; side++) {
                for (size_t j = 0; j < n; j++) v[j] += (side ? -e : e) * d[j];
                l[side] = naive_loss(g, p, xp, a);
                for (size_t j = 0; j < n; j++) v[j] -= (side ? -e : e) * d[j];
            }
            double fd = (l[0] - l[1]) / (2 * e);
            CHECK(fabs(dir - fd) <= 1e-4 * fmax(sqrt(norm), fabs(fd)) + 1e-9,
                  "%s: %s[%d]: analytic %.9g, finite difference %.9g", label,
                  t < T_COUNT ? g->tensors[t].name : "input", rep - 1, dir, fd);
            free(d);
        }
    }
    free(p);
    free(xp);
}

static const char *layout_name(pf_layout l) {
    return l == PF_LAYOUT_ANY ? "any" : l == PF_LAYOUT_NCHW ? "nchw" : l == PF_LAYOUT_NCHW8C
           ? "nChw8c" : l == PF_LAYOUT_NCHW16C ? "nChw16c" : "nhwc";
}

/* The network as a model in `layout`, weights from seed 7, BatchNorm's weight in [0.5, 1.5]
   and bias in [-0.5, 0.5]; NULL on an error (a failed check). */
static pf_model *make_model(pf_layout layout) {
    char err[512];
    pf_net g;
    CHECK(build(&g) == 0, "build");
    pf_model *m = pf_model_new_net(&g, "auto", err, sizeof err);
    CHECK(m != NULL, "pf_model_new_net: %s", err);
    if (!m) return NULL;
    m->dnnl.force_layout = layout;
    pf_model_init(m, 7);
    const pf_param_info *bw = pf_model_tensor_info(m, T_BNW), *bb = pf_model_tensor_info(m, T_BNB);
    CHECK(pf_model_params(m)[bw->offset] == 1.0f && pf_model_params(m)[bb->offset] == 0.0f &&
          !strcmp(bw->name, "bn0_1.weight") && !strcmp(bb->name, "bn0_1.bias"),
          "BatchNorm2d's weight starts at 1, its bias at 0 (torch's reset_parameters)");
    pf_rng rng = pf_rng_make(11, 4, 0);
    for (int c = 0; c < C1; c++) {
        pf_model_params(m)[bw->offset + (size_t)c] = (float)(0.5 + pf_rng_uniform(&rng));
        pf_model_params(m)[bb->offset + (size_t)c] = (float)(pf_rng_uniform(&rng) - 0.5);
    }
    return m;
}

/* Inputs x[k] (k = 0, 1: the two training batches) and the loss weights a. */
typedef struct {
    float x[2][NX];
    float a[N];
} inputs_t;

static void draw_inputs(inputs_t *in) {
    pf_rng rng = pf_rng_make(5, 9, 0);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NX; i++) in->x[k][i] = (float)pf_rng_uniform(&rng) + 0.3f * k;
    for (int n = 0; n < N; n++) in->a[n] = (float)(2 * pf_rng_uniform(&rng) - 1);
}

/* One training forward and backward of batch k: taps, output, running statistics (against
   the naive ones, run updated), gradients by finite differences, the input-only backward. */
static void check_step(pf_model *m, const inputs_t *in, int k, double *run, const char *ln) {
    char err[512], label[64];
    snprintf(label, sizeof label, "%s, batch %d", ln, k);
    const pf_net *g = pf_model_net(m);
    double *p = malloc(g->n_params * sizeof(double)), x[NX], run_new[2 * C1];
    for (size_t j = 0; j < g->n_params; j++) p[j] = pf_model_params(m)[j];
    for (int i = 0; i < NX; i++) x[i] = in->x[k][i];
    static naive_t r;
    naive_forward(&r, g, p, x, NULL, run, run_new);
    memcpy(run, run_new, sizeof run_new);
    static float t0[NT], t1[NT], out[N], dx[NX], dx2[NX];
    int rc = pf_model_forward_train_f32(m, in->x[k], N, H, W, err, sizeof err);
    CHECK(rc == 0, "%s: forward: %s", label, err);
    if (rc) goto done;
    CHECK(pf_model_read(m, 0, t0) == 0 && pf_model_read(m, 1, t1) == 0 &&
          pf_model_read(m, -1, out) == 0, "%s: read", label);
    CHECK(rel(t0, r.t0, NT) < 1e-5, "%s: conv0_1: %.3g", label, rel(t0, r.t0, NT));
    CHECK(rel(t1, r.t1, NT) < 1e-5, "%s: bn0_1: %.3g", label, rel(t1, r.t1, NT));
    CHECK(rel(out, r.out, N) < 1e-5, "%s: output: %.3g", label, rel(out, r.out, N));
    CHECK(rel(pf_model_running(m), run, 2 * C1) < 1e-6, "%s: running statistics: %.3g",
          label, rel(pf_model_running(m), run, 2 * C1));
    CHECK(pf_model_tracked(m)[0] == k + 1, "%s: num_batches_tracked %lld", label,
          (long long)pf_model_tracked(m)[0]);
    rc = pf_model_backward_from(m, in->a, NULL, dx, err, sizeof err);
    CHECK(rc == 0, "%s: backward: %s", label, err);
    if (rc) goto done;
    check_fd(label, g, pf_model_params(m), pf_model_grads(m), x, dx, in->a);
    rc = pf_model_backward_input(m, in->a, NULL, dx2, err, sizeof err);
    CHECK(rc == 0 && !memcmp(dx, dx2, sizeof dx), "%s: the input-only backward's dx: %s",
          label, rc ? err : "differs");
done:
    free(p);
}

/* The eval forward of batch 1 and of its first sample against the naive one with the running
   statistics run; the statistics unchanged. */
static void check_eval(pf_model *m, const inputs_t *in, const double *run, const char *ln) {
    char err[512];
    const pf_net *g = pf_model_net(m);
    double *p = malloc(g->n_params * sizeof(double)), x[NX];
    for (size_t j = 0; j < g->n_params; j++) p[j] = pf_model_params(m)[j];
    for (int i = 0; i < NX; i++) x[i] = in->x[1][i];
    static naive_t r;
    naive_forward(&r, g, p, x, run, NULL, NULL);
    float out[N], before[2 * C1];
    memcpy(before, pf_model_running(m), sizeof before);
    int rc = pf_model_forward_eval_f32(m, in->x[1], N, H, W, out, err, sizeof err);
    CHECK(rc == 0 && rel(out, r.out, N) < 1e-5, "%s: eval forward: %s %.3g", ln,
          rc ? err : "", rel(out, r.out, N));
    rc = pf_model_forward_eval_f32(m, in->x[1], 1, H, W, out, err, sizeof err);
    CHECK(rc == 0 && rel(out, r.out, 1) < 1e-5, "%s: eval forward of one sample: %s %.3g", ln,
          rc ? err : "", rel(out, r.out, 1));
    CHECK(!memcmp(before, pf_model_running(m), sizeof before) && pf_model_tracked(m)[0] == 2,
          "%s: an eval forward changed the running statistics", ln);
    free(p);
}

static void check_layout(pf_layout layout) {
    const char *ln = layout_name(layout);
    pf_model *m = make_model(layout);
    if (!m) return;
    static inputs_t in;
    draw_inputs(&in);
    double run[2 * C1];
    for (int c = 0; c < C1; c++) {
        run[c] = 0;
        run[C1 + c] = 1;
    }
    for (int k = 0; k < 2; k++) check_step(m, &in, k, run, ln);
    check_eval(m, &in, run, ln);
    pf_model_destroy(&m);
}

/* A size at which linear1 does not get its in_features is refused, naming the rule. */
static void check_errors(void) {
    char err[512] = "";
    pf_model *m = make_model(PF_LAYOUT_ANY);
    if (!m) return;
    static float x[N * 2 * H * 2 * W * 3];
    int rc = pf_model_forward_train_f32(m, x, N, 2 * H, 2 * W, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "linear node") && strstr(err, "in_features is not C x H x W"),
          "in_features of another size: rc %d, '%s'", rc, err);
    pf_model_destroy(&m);
}

/* BatchNorm2d straight on the input (3 channels, the output): nothing upstream needs a
   gradient, so backward computes dweight and dbias alone, against db = sum dy and dw = sum dy
   x^ in double; and a training batch of one value per channel (N = H = W = 1) refused. */
static void check_bn_alone(void) {
    char err[512] = "";
    pf_net g;
    pf_net_init(&g);
    snprintf(g.type, sizeof g.type, "BNAlone");
    g.input = pf_net_node(&g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g.output = pf_net_add_batchnorm(&g, "bn", g.input);
    CHECK(g.output >= 0 && g.n_bn == 1 && g.n_running == 6, "build");
    pf_model *m = pf_model_new_net(&g, "auto", err, sizeof err);
    CHECK(m != NULL, "pf_model_new_net: %s", err);
    if (!m) return;
    enum { NB = 2, HB = 3, WB = 5, MB = NB * HB * WB };
    float x[MB * 3], dy[MB * 3];
    pf_rng rng = pf_rng_make(3, 1, 0);
    for (int i = 0; i < MB * 3; i++) {
        x[i] = (float)pf_rng_uniform(&rng);
        dy[i] = (float)(2 * pf_rng_uniform(&rng) - 1);
    }
    pf_model_init(m, 1);
    int rc = pf_model_forward_train_f32(m, x, NB, HB, WB, err, sizeof err) ||
             pf_model_backward_from(m, dy, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "BN alone: %s", err);
    const float *gr = pf_model_grads(m);
    for (int c = 0; c < 3 && !rc; c++) {
        double mean = 0, var = 0, db = 0, dw = 0;
        for (int i = 0; i < MB; i++) mean += x[i * 3 + c] / MB;
        for (int i = 0; i < MB; i++) var += (x[i * 3 + c] - mean) * (x[i * 3 + c] - mean) / MB;
        for (int n = 0; n < NB; n++)
            for (int i = 0; i < HB * WB; i++) {
                double d = dy[(n * 3 + c) * HB * WB + i];   /* dy is NCHW, x NHWC */
                db += d;
                dw += d * (x[(n * HB * WB + i) * 3 + c] - mean) / sqrt(var + 1e-5);
            }
        CHECK(fabs(gr[c] - dw) < 1e-5 * fmax(1, fabs(dw)) &&
              fabs(gr[3 + c] - db) < 1e-5 * fmax(1, fabs(db)),
              "BN alone, channel %d: dweight %.9g (want %.9g), dbias %.9g (want %.9g)", c,
              gr[c], dw, gr[3 + c], db);
    }
    rc = pf_model_forward_train_f32(m, x, 1, 1, 1, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "bn.weight") && strstr(err, "one value per channel"),
          "a training batch of N H W = 1: rc %d, '%s'", rc, err);
    pf_model_destroy(&m);
}

/* ---- with torch ----------------------------------------------------------------------- */

static int put(const char *dir, const char *name, const float *v, size_t n) {
    return pf_ref_write_file(dir, name, v, n * sizeof(float));
}

/* One layout's two training steps and eval forward into dir as LAYOUT.{out,grads,dx,running}K
   .f32 (K = 1, 2) and LAYOUT.eval.f32. */
static void torch_case(const char *dir, pf_layout layout, const inputs_t *in) {
    char err[512], name[64];
    const char *ln = layout_name(layout);
    pf_model *m = make_model(layout);
    if (!m) return;
    static float out[N], dx[NX];
    if (layout == PF_LAYOUT_ANY) put(dir, "params.f32", pf_model_params(m), pf_model_num_params(m));
    for (int k = 0; k < 2; k++) {
        if (pf_model_forward_train_f32(m, in->x[k], N, H, W, err, sizeof err) ||
            pf_model_read(m, -1, out) ||
            pf_model_backward_from(m, in->a, NULL, dx, err, sizeof err)) {
            CHECK(0, "%s: %s", ln, err);
            break;
        }
        const char *keys[] = { "out", "grads", "dx", "running" };
        const float *vals[] = { out, pf_model_grads(m), dx, pf_model_running(m) };
        size_t sizes[] = { N, pf_model_num_params(m), NX, 2 * C1 };
        for (int j = 0; j < 4; j++) {
            snprintf(name, sizeof name, "%s.%s%d.f32", ln, keys[j], k + 1);
            put(dir, name, vals[j], sizes[j]);
        }
    }
    CHECK(pf_model_forward_eval_f32(m, in->x[1], N, H, W, out, err, sizeof err) == 0,
          "%s: eval: %s", ln, err);
    snprintf(name, sizeof name, "%s.eval.f32", ln);
    put(dir, name, out, N);
    pf_model_destroy(&m);
}

static int with_torch(const pf_layout *layouts, size_t n_layouts) {
    if (!pf_ref_have("test_bn_linear torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_bn_linear.XXXXXX";
    FILE *f = pf_ref_open_cases(dir);
    if (!f) return pf_test_end("test_bn_linear torch");
    fprintf(f, "%d %d %d %d %d %d %.9g\n", N, H, W, C0, C1, F2, SLOPE);
    for (size_t i = 0; i < n_layouts; i++) fprintf(f, "%s\n", layout_name(layouts[i]));
    CHECK(fclose(f) == 0, "params.txt");
    static inputs_t in;
    draw_inputs(&in);
    put(dir, "x1.f32", in.x[0], NX);
    put(dir, "x2.f32", in.x[1], NX);
    put(dir, "a.f32", in.a, N);
    for (size_t i = 0; i < n_layouts; i++) torch_case(dir, layouts[i], &in);
    pf_ref_run("bn_linear_ref.py", dir);
    return pf_test_end("test_bn_linear torch");
}

int main(int argc, char **argv) {
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    size_t n_layouts = sizeof layouts / sizeof *layouts;
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch(layouts, n_layouts);
    for (size_t i = 0; i < n_layouts; i++) check_layout(layouts[i]);
    check_errors();
    check_bn_alone();
    return pf_test_end("test_bn_linear");
}
