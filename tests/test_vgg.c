/*  test_vgg — the VGG19 feature extractor (nn/vgg.h).

    Without arguments (no Python needed):
      - names and cut: conv5_4 keeps torchvision's 16 convolutions of vgg19().features under
        their state_dict names (features.0 ... features.34, the indices written out here, not
        taken from nn/vgg.c) with their shapes, 15 ReLU nodes and 4 poolings, output 512
        channels at 1/16 (input multiple 16); relu2_1 with conv1_2 stops after features.5 and
        gives conv1_2's pre-ReLU tensor (a conv node's output) and relu2_1's (a ReLU node's);
        pool5 reaches 1/32;
      - the input normalisation on the executor: conv1_1 with weights that copy channel c to
        output c, on a float input, against ((x + 1) / 2 - mean) / std computed here in double
        with ImageNet's constants, for every (use_input_norm, range_norm);
      - errors: an unknown name (named, with the valid ones listed), no names, a NULL name;
      - pf_vgg_load_st: a file with more tensors than the cut (deeper features, the
        classifier) loads exactly the cut's; a missing and a mis-shaped tensor are named;
        pf_ckpt_load_net (nn/checkpoint.h) takes a file of exactly the cut's tensors but
        refuses the larger one (why pf_vgg_load exists).
    With `torch` (ctest test_vgg.torch; 77 without /usr/bin/python3 with torch and
    torchvision): tests/reference/vgg_ref.py writes torchvision's vgg19 with seeded random
    weights and five cuts (conv1_2, conv2_2, conv3_4, conv4_4, conv5_4 on 2 x 3 x 32 x 32,
    with and without the input and range normalisation); PixFlow loads the whole file with
    pf_vgg_load and, through the CPU executor's training path, compares the features within
    1e-4 relative (of the largest value) and every parameter gradient of loss = sum(features *
    gout) within 1e-4 relative. The gradient with respect to the input is not compared: the
    executor's input node passes none back yet. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "nn/checkpoint.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/graph.h"
#include "nn/net.h"
#include "nn/vgg.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

/* ---- the CPU executor on a description ------------------------------------------------ */

typedef struct {
    const pf_net *g;
    pf_dnnl dnnl;
    pf_conv *convs;
    float *params, *grads;
    pf_gctx x;
    pf_gstate *S;
    int n, oc, oh, ow;
} vrun;

/* Plan g for float input n x h x w x 3 (training); params zero. 0 or -1 (a failed check). */
static int vrun_open(vrun *r, const pf_net *g, int n, int h, int w) {
    char err[512];
    memset(r, 0, sizeof *r);
    r->g = g;
    r->n = n;
    if (pf_dnnl_init(&r->dnnl, err, sizeof err)) {
        CHECK(0, "dnnl: %s", err);
        return -1;
    }
    r->convs = calloc((size_t)g->n_convs + 1, sizeof *r->convs);
    r->params = calloc(g->n_params + 1, sizeof(float));
    r->grads = calloc(g->n_params + 1, sizeof(float));
    for (int i = 0; i < g->n_convs; i++) pf_graph_conv_init(g, i, &r->convs[i]);
    r->x = (pf_gctx){ .net = g, .dnnl = &r->dnnl, .convs = r->convs, .params = r->params,
                      .grads = r->grads };
    const pf_gtensor *t = &g->t[g->output];
    r->oc = t->c;
    r->oh = h * t->mul / t->div;
    r->ow = w * t->mul / t->div;
    int rc = pf_graph_plan(&r->x, &r->S, n, h, w, 1, err, sizeof err);
    CHECK(rc == 0, "%s: plan: %s", g->type, err);
    return rc ? -1 : 0;
}

static void vrun_close(vrun *r) {
    pf_gstate_free(&r->S);
    for (int i = 0; r->convs && i < r->g->n_convs; i++) pf_conv_free(&r->convs[i]);
    free(r->convs);
    free(r->params);
    free(r->grads);
    pf_dnnl_free(&r->dnnl);
}

/* Forward of x (NHWC floats) into out (NCHW); with gout (NCHW) also backward of sum(out *
   gout) into r->grads. 0 or -1 (a failed check). */
static int vrun_step(vrun *r, const float *x, float *out, const float *gout) {
    char err[512];
    const pf_net *g = r->g;
    int rc = 0;
    for (int i = 0; rc == 0 && i < g->n_convs; i++) {
        int bi = pf_net_conv_bias(g, i);
        rc = pf_conv_set_weights(&r->convs[i], r->params + g->tensors[g->conv[i].weight].offset,
                                 bi >= 0 ? r->params + g->tensors[bi].offset : NULL, err,
                                 sizeof err);
    }
    if (rc == 0) rc = pf_graph_forward_f32(&r->x, r->S, x, err, sizeof err);
    int b;
    float *y = pf_gstate_out(r->S, &b), *dy = gout && rc == 0 ? pf_gstate_dout(r->S) : NULL;
    if (dy) memset(dy, 0, pf_blk_numel(r->n, r->oc, r->oh, r->ow, b) * sizeof(float));
    size_t k = 0;
    for (int a = 0; rc == 0 && a < r->n; a++)
        for (int c = 0; c < r->oc; c++)
            for (int i = 0; i < r->oh; i++)
                for (int j = 0; j < r->ow; j++, k++) {
                    size_t o = pf_blk_off(a, c, i, j, r->oc, r->oh, r->ow, b);
                    out[k] = y[o];
                    if (dy) dy[o] = gout[k];
                }
    if (rc == 0 && dy) rc = pf_graph_backward(&r->x, r->S, err, sizeof err);
    CHECK(rc == 0, "%s: %s", g->type, err);
    return rc ? -1 : 0;
}

/* ---- description ---------------------------------------------------------------------- */

static int count_op(const pf_net *g, pf_gop op) {
    int k = 0;
    for (int i = 0; i < g->n_node; i++) k += g->node[i].op == op;
    return k;
}

/* The node writing tensor t. */
static const pf_gnode *producer(const pf_net *g, int t) {
    for (int i = 0; i < g->n_node; i++)
        if (g->node[i].out == t) return &g->node[i];
    return NULL;
}

static void check_names(void) {
    /* torchvision's vgg19().features: conv module indices and output channels */
    static const int idx[16] = { 0, 2, 5, 7, 10, 12, 14, 16, 19, 21, 23, 25, 28, 30, 32, 34 };
    static const int och[16] = { 64, 64, 128, 128, 256, 256, 256, 256,
                                 512, 512, 512, 512, 512, 512, 512, 512 };
    pf_net g;
    char err[2048], want[64];
    const char *deep[] = { "conv5_4" };
    int lt = -1;
    int rc = pf_net_build_vgg19_features(&g, deep, 1, 1, 0, &lt, err, sizeof err);
    CHECK(rc == 0, "conv5_4: %s", err);
    if (rc) return;
    CHECK(g.n_convs == 16 && g.n_tensors == 32, "conv5_4: %d convs, %d tensors", g.n_convs,
          g.n_tensors);
    for (int i = 0; i < 16 && g.n_tensors == 32; i++) {
        const pf_param_info *w = &g.tensors[2 * i], *bias = &g.tensors[2 * i + 1];
        int ic = i ? och[i - 1] : 3;
        snprintf(want, sizeof want, "features.%d.weight", idx[i]);
        CHECK(!strcmp(w->name, want) && w->ndim == 4 && w->shape[0] == och[i] &&
              w->shape[1] == ic && w->shape[2] == 3 && w->shape[3] == 3,
              "tensor %d: %s, want %s [%d, %d, 3, 3]", 2 * i, w->name, want, och[i], ic);
        snprintf(want, sizeof want, "features.%d.bias", idx[i]);
        CHECK(!strcmp(bias->name, want) && bias->ndim == 1 && bias->shape[0] == och[i],
              "tensor %d: %s, want %s", 2 * i + 1, bias->name, want);
    }
    const pf_gtensor *o = &g.t[g.output];
    CHECK(lt == g.output && o->c == 512 && o->div == 16 && pf_net_input_multiple(&g) == 16,
          "conv5_4: tensor %d (output %d), %d channels at 1/%d, input multiple %d", lt,
          g.output, o->c, o->div, pf_net_input_multiple(&g));
    CHECK(count_op(&g, PF_G_RELU) == 15 && count_op(&g, PF_G_MAXPOOL2) == 4 &&
          count_op(&g, PF_G_AFFINE) == 1 && producer(&g, g.output)->op == PF_G_CONV,
          "conv5_4: %d ReLU, %d pooling, %d affine nodes", count_op(&g, PF_G_RELU),
          count_op(&g, PF_G_MAXPOOL2), count_op(&g, PF_G_AFFINE));
    pf_net_free(&g);

    const char *two[] = { "relu2_1", "conv1_2" };
    int lt2[2] = { -1, -1 };
    rc = pf_net_build_vgg19_features(&g, two, 2, 0, 1, lt2, err, sizeof err);
    CHECK(rc == 0, "relu2_1, conv1_2: %s", err);
    if (rc) return;
    CHECK(g.n_convs == 3 && !strcmp(g.tensors[g.n_tensors - 1].name, "features.5.bias"),
          "relu2_1: %d convs, last tensor %s", g.n_convs, g.tensors[g.n_tensors - 1].name);
    CHECK(lt2[0] == g.output && g.t[lt2[0]].c == 128 && g.t[lt2[0]].div == 2 &&
          producer(&g, lt2[0])->op == PF_G_RELU, "relu2_1: tensor %d", lt2[0]);
    CHECK(lt2[1] >= 0 && g.t[lt2[1]].c == 64 && g.t[lt2[1]].div == 1 &&
          producer(&g, lt2[1])->op == PF_G_CONV && producer(&g, lt2[1])->conv == 1,
          "conv1_2: tensor %d is not the second conv's output", lt2[1]);
    CHECK(count_op(&g, PF_G_AFFINE) == 1, "range_norm only: %d affine nodes",
          count_op(&g, PF_G_AFFINE));
    pf_net_free(&g);

    const char *p5[] = { "pool5" };
    rc = pf_net_build_vgg19_features(&g, p5, 1, 0, 0, NULL, err, sizeof err);
    CHECK(rc == 0 && g.t[g.output].div == 32 && g.n_convs == 16 &&
          count_op(&g, PF_G_AFFINE) == 0, "pool5: rc %d, 1/%d", rc,
          rc ? 0 : g.t[g.output].div);
    if (rc == 0) pf_net_free(&g);
}

static void check_errors(void) {
    pf_net g;
    char err[2048];
    const char *bad[] = { "conv1_1", "conv6_1" };
    int rc = pf_net_build_vgg19_features(&g, bad, 2, 1, 0, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "'conv6_1'") && strstr(err, "conv1_1, relu1_1") &&
          strstr(err, "relu5_4, pool5)"), "unknown layer: rc %d, '%s'", rc, err);
    rc = pf_net_build_vgg19_features(&g, bad, 0, 1, 0, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "no feature layers"), "no layers: rc %d, '%s'", rc, err);
    const char *null[] = { NULL };
    rc = pf_net_build_vgg19_features(&g, null, 1, 1, 0, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "unknown layer '(null)'"), "NULL name: rc %d, '%s'", rc, err);
    CHECK(pf_vgg19_layer_name(0) && !strcmp(pf_vgg19_layer_name(34), "conv5_4") &&
          !pf_vgg19_layer_name(PF_VGG19_N_NAMES) && !pf_vgg19_layer_name(-1),
          "pf_vgg19_layer_name");
}

/* conv1_1 made the identity on channels 0..2 (centre tap 1, bias 0), so its output is the
   normalised input; against the formula in double. */
static void check_input_norm(void) {
    static const double mean[3] = { 0.485, 0.456, 0.406 }, std_[3] = { 0.229, 0.224, 0.225 };
    enum { NN = 2, HH = 4, WW = 6 };
    const char *c11[] = { "conv1_1" };
    for (int mode = 0; mode < 4; mode++) {
        int use_norm = mode & 1, range_norm = mode >> 1;
        pf_net g;
        char err[512];
        if (pf_net_build_vgg19_features(&g, c11, 1, use_norm, range_norm, NULL, err,
                                        sizeof err)) {
            CHECK(0, "conv1_1: %s", err);
            continue;
        }
        vrun r;
        if (vrun_open(&r, &g, NN, HH, WW) == 0) {
            float *wt = r.params + g.tensors[0].offset;      /* 64 x 3 x 3 x 3, bias zero */
            for (int c = 0; c < 3; c++) wt[(c * 3 + c) * 9 + 4] = 1.0f;
            float x[NN * HH * WW * 3], *out = malloc((size_t)NN * 64 * HH * WW * sizeof *out);
            for (int i = 0; i < NN * HH * WW * 3; i++)
                x[i] = (float)((i * 37 % 101) / 100.0 * (range_norm ? 2.0 : 1.0) -
                               (range_norm ? 1.0 : 0.0));
            double worst = 0;
            if (vrun_step(&r, x, out, NULL) == 0)
                for (int a = 0; a < NN; a++)
                    for (int c = 0; c < 3; c++)
                        for (int p = 0; p < HH * WW; p++) {
                            double v = x[((size_t)a * HH * WW + p) * 3 + c];
                            if (range_norm) v = (v + 1) / 2;
                            if (use_norm) v = (v - mean[c]) / std_[c];
                            double got = out[((size_t)a * 64 + c) * HH * WW + p];
                            worst = fmax(worst, fabs(got - v) / fmax(fabs(v), 1.0));
                        }
            CHECK(worst < 1e-6, "input norm %d, range norm %d: off by %.3g", use_norm,
                  range_norm, worst);
            free(out);
        }
        vrun_close(&r);
        pf_net_free(&g);
    }
}

/* pf_vgg_load_st on files built here for the conv1_2 cut (features.0, features.2). */
static void check_load(void) {
    pf_net g;
    char err[2048];
    const char *c12[] = { "conv1_2" };
    if (pf_net_build_vgg19_features(&g, c12, 1, 1, 0, NULL, err, sizeof err)) {
        CHECK(0, "conv1_2: %s", err);
        return;
    }
    static float w0[64 * 27], b0[64], w2[64 * 64 * 9], b2[64], extra[128], other[128];
    for (size_t i = 0; i < sizeof w2 / sizeof *w2; i++) w2[i] = (float)i * 1e-4f;
    for (int i = 0; i < 64 * 27; i++) w0[i] = (float)-i;
    for (int i = 0; i < 64; i++) b0[i] = (float)i + 0.5f, b2[i] = (float)-i;
    pf_st_tensor t[] = {
        { "features.0.weight", w0, 4, { 64, 3, 3, 3 } }, { "features.0.bias", b0, 1, { 64 } },
        { "features.2.weight", w2, 4, { 64, 64, 3, 3 } }, { "features.2.bias", b2, 1, { 64 } },
        { "features.5.bias", extra, 1, { 128 } }, { "classifier.6.bias", other, 1, { 128 } },
    };
    float *params = calloc(g.n_params, sizeof *params);
    static pf_config cfg;
    pf_config_defaults(&cfg);
    for (int n_file = 4; n_file <= 6; n_file += 2) {      /* the checkpoint loader */
        void *buf = NULL;
        size_t len = 0;
        pf_safetensors *st = NULL;
        memset(params, 0, g.n_params * sizeof *params);
        int rc = pf_safetensors_serialize(t, n_file, NULL, 0, &buf, &len, err, sizeof err);
        if (rc == 0) rc = pf_safetensors_parse(buf, len, "vgg.safetensors", &st, err, sizeof err);
        if (rc == 0) rc = pf_ckpt_load_net(&g, &cfg, params, st, err, sizeof err);
        if (n_file == 4)
            CHECK(rc == 0 && params[g.tensors[3].offset + 5] == b2[5],
                  "pf_ckpt_load_net, the cut's tensors only: rc %d, '%s'", rc, rc ? err : "");
        else
            CHECK(rc == -1 && strstr(err, "2 unexpected"),
                  "pf_ckpt_load_net, a larger file: rc %d, '%s'", rc, err);
        pf_safetensors_free(&st);
        free(buf);
    }
    for (int mode = 0; mode < 3; mode++) {
        pf_st_tensor u[6];
        memcpy(u, t, sizeof t);
        if (mode == 1) u[3].name = "features.3.bias";       /* features.2.bias missing */
        if (mode == 2) u[2].shape[1] = 32;                  /* features.2.weight mis-shaped */
        void *buf = NULL;
        size_t len = 0;
        pf_safetensors *st = NULL;
        if (pf_safetensors_serialize(u, 6, NULL, 0, &buf, &len, err, sizeof err) ||
            pf_safetensors_parse(buf, len, "vgg.safetensors", &st, err, sizeof err)) {
            CHECK(0, "serialise: %s", err);
            free(buf);
            continue;
        }
        int rc = pf_vgg_load_st(&g, params, st, err, sizeof err);
        if (mode == 0) {
            int same = rc == 0 && g.n_tensors == 4;
            const float *src[4] = { w0, b0, w2, b2 };
            for (int i = 0; same && i < 4; i++)
                same = !memcmp(params + g.tensors[i].offset, src[i],
                               g.tensors[i].numel * sizeof(float));
            CHECK(same, "a superset file: rc %d, '%s', values copied %d", rc, rc ? err : "",
                  same);
        } else if (mode == 1) {
            CHECK(rc == -1 && strstr(err, "vgg.safetensors") && strstr(err, "1 tensors missing") &&
                  strstr(err, "features.2.bias") && strstr(err, "pth2safetensors"),
                  "missing tensor: rc %d, '%s'", rc, err);
        } else {
            CHECK(rc == -1 && strstr(err, "features.2.weight: the file has [64, 32, 3, 3], "
                                          "VGG19 wants [64, 64, 3, 3]"),
                  "mis-shaped tensor: rc %d, '%s'", rc, err);
        }
        pf_safetensors_free(&st);
        free(buf);
    }
    int rc = pf_vgg_load(&g, params, "/nonexistent/vgg19.safetensors", err, sizeof err);
    CHECK(rc == -1 && strstr(err, "/nonexistent/vgg19.safetensors"), "no file: rc %d, '%s'",
          rc, err);
    free(params);
    pf_net_free(&g);
}

/* ---- against torchvision -------------------------------------------------------------- */

static const float *ref_get(const pf_safetensors *ref, const char *name, size_t want) {
    int ndim = 0;
    int64_t shape[8];
    const float *d = pf_safetensors_get(ref, name, &ndim, shape);
    size_t n = 1;
    for (int k = 0; d && k < ndim; k++) n *= (size_t)shape[k];
    CHECK(d && n == want, "reference: %s missing or of %zu values (want %zu)", name, d ? n : 0,
          want);
    return d && n == want ? d : NULL;
}

static void torch_case(const pf_safetensors *ref, const char *path, const char *layer,
                       int use_norm, int range_norm) {
    enum { RN = 2, RH = 32, RW = 32 };
    pf_net g;
    char err[2048], name[128];
    int lt;
    if (pf_net_build_vgg19_features(&g, &layer, 1, use_norm, range_norm, &lt, err,
                                    sizeof err)) {
        CHECK(0, "%s: %s", layer, err);
        return;
    }
    snprintf(name, sizeof name, "n_params.%s", layer);
    const char *np = pf_safetensors_meta(ref, name);
    CHECK(np && atoi(np) == g.n_tensors, "%s: %d tensors, torch's %s", layer, g.n_tensors,
          np ? np : "?");
    vrun r;
    if (vrun_open(&r, &g, RN, RH, RW) == 0 &&
        pf_vgg_load(&g, r.params, path, err, sizeof err) == 0) {
        size_t no = (size_t)RN * r.oc * r.oh * r.ow;
        float *out = malloc(no * sizeof *out);
        const float *x, *gout, *want;
        snprintf(name, sizeof name, "%s.x", layer);
        x = ref_get(ref, name, (size_t)RN * RH * RW * 3);
        snprintf(name, sizeof name, "%s.gout", layer);
        gout = ref_get(ref, name, no);
        snprintf(name, sizeof name, "%s.out", layer);
        want = ref_get(ref, name, no);
        if (x && gout && want && vrun_step(&r, x, out, gout) == 0) {
            double e = pf_ref_rel_err(out, want, no), worst = 0;
            CHECK(e < 1e-4, "%s: features off by %.3g", layer, e);
            for (int i = 0; i < g.n_tensors; i++) {
                const pf_param_info *t = &g.tensors[i];
                snprintf(name, sizeof name, "%s.grad.%s", layer, t->name);
                const float *gw = ref_get(ref, name, t->numel);
                double eg = gw ? pf_ref_rel_err(r.grads + t->offset, gw, t->numel) : 1;
                CHECK(eg < 1e-4, "%s: d %s off by %.3g", layer, t->name, eg);
                worst = fmax(worst, eg);
            }
            printf("%s (input norm %d, range norm %d): features %.2g, worst of %d gradients "
                   "%.2g relative\n", layer, use_norm, range_norm, e, g.n_tensors, worst);
        }
        free(out);
    } else if (r.S) {
        CHECK(0, "%s: %s", layer, err);
    }
    vrun_close(&r);
    pf_net_free(&g);
}

static int with_torch(void) {
    if (!pf_ref_have("test_vgg torch", "numpy, torch, torchvision")) return 77;
    char dir[] = "/tmp/pf_vgg.XXXXXX", path[1100], err[512];
    pf_safetensors *ref = NULL;
    int made = pf_ref_exec_tmp("vgg_ref.py", dir) == 0;
    snprintf(path, sizeof path, "%s/vgg.safetensors", dir);
    if (made) CHECK(pf_safetensors_load(path, &ref, err, sizeof err) == 0, "%s", err);
    const char *cases = ref ? pf_safetensors_meta(ref, "cases") : NULL;
    CHECK(!ref || cases, "reference: no cases");
    int n_cases = 0;
    for (const char *p = cases; p && *p;) {     /* "conv1_2:1:1,conv2_2:1:0,..." */
        char layer[32];
        int un, rn, used = 0;
        if (sscanf(p, "%31[^:]:%d:%d%n", layer, &un, &rn, &used) != 3) break;
        torch_case(ref, path, layer, un, rn);
        n_cases++;
        p += used + (p[used] == ',');
    }
    CHECK(!ref || n_cases == 5, "reference: %d cases, want 5", n_cases);
    pf_safetensors_free(&ref);
    if (made) pf_ref_remove(dir);
    return pf_test_end("test_vgg torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    check_names();
    check_errors();
    check_input_norm();
    check_load();
    return pf_test_end("test_vgg");
}
