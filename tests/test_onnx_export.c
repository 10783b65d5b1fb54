/*  test_onnx_export — the PixFlow side of the ONNX tests (tests/onnx_export.sh): for every
    network row of common/networks.h at every scale it takes (BasicVSR unrolled over 3
    frames), small hyper-parameters and random weights (a counter hash of the tensor index and
    element, so every tensor, biases and PReLU slopes included, is non-trivial), it writes
    into DIR:
      NAME_xS.onnx          pf_onnx_export of the network
      NAME_xS.names         its parameter table's state_dict names, one a line (the
                            initializers the checker expects)
      NAME_xS.in{0,1}.f32   two inputs, N x 3 x H x W float32 NCHW = uint8 / 255: 1 x 13 x 17
                            and 2 x 24 x 20 (rounded up to the network's input multiple);
                            video N x T x 3 x H x W
      NAME_xS.out{0,1}.f32  pf_model_infer's (pf_model_infer_clip's) output for them (float,
                            not rounded), the same layout
      cases.txt             "NAME_xS K N H W SCALE T" per input (T 0: an image network)
    and work dirs DIR/work_EDSR_x2 and DIR/work_BasicVSR_x4 (config.yaml,
    checkpoints/iter_1.safetensors, latest) holding those networks and weights, for `pixflow
    export` to export again; the same files for two graphs built here around 2 x 2 max pooling
    (no network of the zoo pools), run by the CPU executor (nn/graph.h): Pooled and PoolOnly
    (build_pooled; scale 1), and for one around stride-2 convolutions with and without bias
    (Strided, build_strided; scale 1), and for ReLU / LeakyReLU nodes between convolutions
    (Relus, build_relus; scale 1), and for EDVR's TSA-fusion ops (Tsa, build_tsa; scale 1);
    and checks that an op without a mapping is refused by name. Exit 0, or 1 with what failed.
    Without DIR (its own ctest entry) it writes under ./onnx_export_out.

    Two more modes serve ctest onnx.upscale (tests/onnx_export.sh upscale): onnxruntime on the
    exported model against `pixflow upscale` on real images:
      fixtures DIR    DIR/work_upscale, a work dir of EDSR x2 (16 features, 2 blocks) with
                      the random weights above, and DIR/images/{small,large}.png (37 x 29,
                      52 x 44 generated pictures): the model and images when the demo's are
                      not there
      upscale DIR MODEL UPSCALED IMG...   MODEL (a work dir, as `pixflow upscale` takes it)
                      on each IMG k through pf_infer, whole image, as upscale runs it:
                      DIR/upscale.in{k}.f32 and .out{k}.f32 (1 x 3 x H x W NCHW, the float
                      output, not rounded), DIR/upscale.png{k}.u8 (`pixflow upscale`'s
                      UPSCALED/<stem>.png as H x W x 3 bytes, for onnx_runtime.js to compare
                      onnxruntime's rounded output with) and cases.txt; checks that those
                      floats rounded (pf_to_u8) are that PNG byte for byte (so the floats are
                      upscale's) and that the image is not flat (at least 32 grey levels). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/model_source.h"
#include "common/config.h"
#include "common/image.h"
#include "common/metrics.h"
#include "common/networks.h"
#include "common/rng.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/cpu/conv_dnnl.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/graph.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/onnx_export.h"
#include "tests/pf_test.h"
#include "tests/pf_test_zoo.h"

static void small_config(pf_config *c, const char *type, int scale) {
    pf_test_zoo_config(c, type, scale, 8);
}

/* Weights U(-1, 1) / sqrt(fan_in) for conv weights, U(-0.1, 0.1) for 1-d tensors. */
static void random_weights(pf_model *m) {
    float *p = pf_model_params(m);
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        double fan = 1;
        for (int d = 1; d < t->ndim; d++) fan *= (double)t->shape[d];
        double bound = t->ndim > 1 ? 1.0 / sqrt(fan) : 0.1;
        pf_rng r = pf_rng_make(20261206, (uint64_t)i, 7);
        for (size_t j = 0; j < t->numel; j++)
            p[t->offset + j] = (float)((2.0 * pf_rng_uniform(&r) - 1.0) * bound);
    }
}

static int write_file(const char *dir, const char *name, const char *ext, const void *data,
                      size_t len) {
    char path[2048], err[512];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    int rc = pf_write_file_atomic(path, data, len, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    return rc;
}

/* DIR/NAME.names: g's parameter tensors' state_dict names, one a line. */
static void write_names(const char *dir, const char *name, const pf_net *g) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.names", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "%s: cannot write", path);
    for (int i = 0; f && i < g->n_tensors; i++) fprintf(f, "%s\n", g->tensors[i].name);
    if (f) fclose(f);
}

/* Input k of a case through the model: writes .in/.out files and the cases.txt line. A video
   network (T > 0 frames) takes [N, T, 3, H, W] and runs each sample's clip at once. */
static void run_input(pf_model *m, const char *dir, const char *name, int k, int T, FILE *cases) {
    int n = k ? 2 : 1, h = k ? 24 : 13, w = k ? 20 : 17, s = pf_model_scale(m);
    int q = pf_model_input_multiple(m), F = T ? T : 1;
    h = (h + q - 1) / q * q;
    w = (w + q - 1) / q * q;
    size_t in_n = (size_t)F * h * w * 3, out_n = in_n * s * s, hw = (size_t)h * w;
    uint8_t *lq = malloc(in_n);
    float *in = malloc(n * in_n * sizeof *in), *out = malloc(n * out_n * sizeof *out);
    float *hwc = malloc(out_n * sizeof *hwc);
    pf_rng r = pf_rng_make(99, (uint64_t)k, 0);
    for (int b = 0; b < n; b++) {
        for (size_t j = 0; j < in_n; j++) lq[j] = (uint8_t)(pf_rng_uniform(&r) * 256.0);
        char err[1024];
        int rc = T ? pf_model_infer_clip(m, lq, T, h, w, hwc, err, sizeof err)
                   : pf_model_infer(m, lq, h, w, hwc, err, sizeof err);
        CHECK(rc == 0, "%s: %s", name, err);
        for (int t = 0; t < F; t++)
            for (int c = 0; c < 3; c++) {
                float *i = in + (((size_t)b * F + t) * 3 + c) * hw;
                float *o = out + (((size_t)b * F + t) * 3 + c) * hw * s * s;
                for (size_t y = 0; y < hw; y++) i[y] = (float)lq[(t * hw + y) * 3 + c] / 255.0f;
                for (size_t y = 0; y < hw * s * s; y++) o[y] = hwc[(t * hw * s * s + y) * 3 + c];
            }
    }
    char ext[32];
    snprintf(ext, sizeof ext, ".in%d.f32", k);
    write_file(dir, name, ext, in, n * in_n * sizeof *in);
    snprintf(ext, sizeof ext, ".out%d.f32", k);
    write_file(dir, name, ext, out, n * out_n * sizeof *out);
    fprintf(cases, "%s %d %d %d %d %d %d\n", name, k, n, h, w, s, T);
    free(lq);
    free(in);
    free(out);
    free(hwc);
}

/* A work dir DIR/work_NAME (config.yaml, checkpoints/iter_1.safetensors, latest) of the
   model, for `pixflow export` to export again. */
static void work_dir(pf_config *c, pf_model *m, const char *dir, const char *name) {
    char path[2048], err[1024];
    snprintf(path, sizeof path, "%s/work_%s/checkpoints", dir, name);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    /* what the config needs to load: a learning rate, a work dir and a data section (its
       folders need not exist for export) */
    c->learning_rate = 1e-4f;
    snprintf(c->work_dir, sizeof c->work_dir, "work_%s", name);
    c->test.present = 1;
    snprintf(c->test.type, sizeof c->test.type, "%s",
             pf_model_is_video(m) ? "VideoRecurrentTestDataset" : "SingleImageDataset");
    snprintf(c->test.lq_folder, sizeof c->test.lq_folder, "no_such_lq_folder");
    snprintf(c->test.gt_folder, sizeof c->test.gt_folder, "%s",
             pf_model_is_video(m) ? "no_such_gt_folder" : "");
    char *yaml = pf_config_to_yaml(c);
    void *w = NULL;
    size_t wl = 0;
    CHECK(pf_ckpt_serialize(c, m, NULL, 1, 0, 0.0, &w, &wl, NULL, NULL, err, sizeof err) == 0,
          "%s", err);
    snprintf(path, sizeof path, "%s/work_%s", dir, name);
    if (yaml) write_file(path, "config", ".yaml", yaml, strlen(yaml));
    write_file(path, "checkpoints/iter_1", ".safetensors", w, wl);
    write_file(path, "checkpoints/latest", "", "iter_1.safetensors\n", 19);
    free(yaml);
    free(w);
}

enum { VIDEO_FRAMES = 3 };      /* BasicVSR's export and inputs */

static void one_case(const char *dir, const char *type, int scale, int video, FILE *cases) {
    static pf_config c;
    small_config(&c, type, scale);
    if (video) c.n_feats = c.n_blocks = 4;
    char name[64], err[1024];
    snprintf(name, sizeof name, "%s_x%d", type, scale);
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s: %s", name, err);
    if (!m) return;
    random_weights(m);
    void *buf = NULL;
    size_t len = 0;
    /* a video network: the description unrolled over VIDEO_FRAMES (the same parameters) */
    pf_net clip;
    int rc = video ? pf_net_build_basicvsr(&clip, c.n_feats, c.n_blocks, VIDEO_FRAMES, err,
                                           sizeof err)
                   : 0;
    if (!rc)
        rc = pf_onnx_export(video ? &clip : pf_model_net(m), pf_model_params(m), &buf, &len, err,
                            sizeof err);
    if (video) pf_net_free(&clip);
    CHECK(rc == 0, "%s: %s", name, err);
    if (!rc) write_file(dir, name, ".onnx", buf, len);
    free(buf);
    write_names(dir, name, pf_model_net(m));
    for (int k = 0; k < 2; k++) run_input(m, dir, name, k, video ? VIDEO_FRAMES : 0, cases);
    if (!strcmp(name, "EDSR_x2") || !strcmp(name, "BasicVSR_x4")) work_dir(&c, m, dir, name);
    pf_model_destroy(&m);
}

/* ---- max pooling: graphs built here (no network of the zoo pools) --------------------- */

/* A 3 x 3 conv node on x (oc channels, LeakyReLU(0.1) when act), its own name.weight/.bias. */
static int graph_conv(pf_net *g, int x, const char *name, int oc, int act) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    pf_param_init ui = { PF_INIT_UNIFORM, (double)t.c * 9, 1.0 };
    int ci = pf_net_add_conv(g, name, t.c, oc, 3, ui, ui);
    int out = ci < 0 ? -1 : pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div, t.one);
    if (out < 0) return -1;
    g->conv[ci].act = act;
    g->conv[ci].alpha = 0.1f;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

/* convs 1, "Pooled": conv 3 -> 8 (LeakyReLU) -> maxpool2 -> conv 8 -> 12 -> PixelShuffle(2),
   the LQ size again (scale 1). convs 0, "PoolOnly": maxpool2 of the input -> nearest x2,
   where an input of few levels makes ties in most windows. */
static void build_pooled(pf_net *g, int convs) {
    pf_net_init(g);
    g->scale = 1;
    snprintf(g->type, sizeof g->type, "%s", convs ? "Pooled" : "PoolOnly");
    int x = g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    if (convs) x = graph_conv(g, x, "conv_first", 8, 1);
    int p = x < 0 ? -1 : pf_net_node(g, PF_G_MAXPOOL2, &x, 1, g->t[x].c, 1, 2, 0);
    if (convs) p = graph_conv(g, p, "conv_up", 12, 0);
    g->output = pf_net_node(g, convs ? PF_G_SHUFFLE : PF_G_NEAREST, &p, 1, 3, 1, 1, 0);
    if (g->output >= 0) g->node[g->n_node - 1].r = 2;
}

/* "Strided": conv 3 -> 8 (LeakyReLU) -> k 4 stride 2 padding 1 without bias 8 -> 8 -> k 3
   stride 2 padding 1 with bias 8 -> 8 -> conv 8 -> 48 -> PixelShuffle(4), the LQ size again
   (scale 1; LQ a multiple of 4): the discriminators' downsampling convolutions as ONNX Conv
   strides, pads and a Conv without its B input. */
static void build_strided(pf_net *g) {
    pf_net_init(g);
    g->scale = 1;
    snprintf(g->type, sizeof g->type, "Strided");
    int x = graph_conv(g, g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0),
                       "conv_first", 8, 1);
    for (int k = 4, div = 2; x >= 0 && k >= 3; k--, div *= 2) {
        pf_param_init ui = { PF_INIT_UNIFORM, 8.0 * k * k, 1.0 };
        int ci = pf_net_add_conv_strided(g, k == 4 ? "down4" : "down3b", 8, 8, k, 2, 1, k == 3,
                                         ui, ui);
        x = ci < 0 ? -1 : pf_net_node(g, PF_G_CONV, &x, 1, 8, 1, div, 0);
        if (x < 0) break;
        g->node[g->n_node - 1].conv = ci;
        g->node[g->n_node - 1].param = g->conv[ci].weight;
    }
    x = graph_conv(g, x, "conv_up", 48, 0);
    g->output = x < 0 ? -1 : pf_net_node(g, PF_G_SHUFFLE, &x, 1, 3, 1, 1, 0);
    if (g->output >= 0) g->node[g->n_node - 1].r = 4;
}

/* "Relus": conv 3 -> 8 -> ReLU node -> conv 8 -> 8 -> LeakyReLU(0.2) node -> conv 8 -> 3
   (PF_G_RELU, the VGG feature extractor's activation as a node of its own; scale 1). */
static void build_relus(pf_net *g) {
    pf_net_init(g);
    g->scale = 1;
    snprintf(g->type, sizeof g->type, "Relus");
    int x = graph_conv(g, g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0), "conv1",
                       8, 0);
    for (int k = 0; k < 2 && x >= 0; k++) {
        x = pf_net_node(g, PF_G_RELU, &x, 1, 8, 1, 1, 0);
        if (x >= 0) g->node[g->n_node - 1].alpha = k ? 0.2f : 0.0f;
        x = graph_conv(g, x, k ? "conv3" : "conv2", k ? 3 : 8, 0);
    }
    g->output = x;
}

/* "Tsa": EDVR's TSA-fusion ops (nn/net.h PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3):
   feat = conv 3 -> 8 (LeakyReLU), sigmoid(sum over channels of conv(feat) * conv(feat))
   (1 channel) times feat, its 3 x 3 max and average pooling (stride 2, padding 1)
   concatenated, conv 16 -> 12, y * y * 2 + y, PixelShuffle(2): the LQ size again (scale 1). */
static void build_tsa(pf_net *g) {
    pf_net_init(g);
    g->scale = 1;
    snprintf(g->type, sizeof g->type, "Tsa");
    int f = graph_conv(g, g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0),
                       "conv_first", 8, 1);
    int emb = graph_conv(g, f, "emb", 8, 0), ref = graph_conv(g, f, "emb_ref", 8, 0);
    int c = pf_net_add_chsum(g, pf_net_add_mul(g, emb, ref, -1, 1.0f));
    c = c < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &c, 1, 1, 1, 1, 0);
    int a = pf_net_add_mul(g, f, c, -1, 1.0f);
    int p[2] = { pf_net_add_pool3(g, a, 1), pf_net_add_pool3(g, a, 0) };
    int y = p[0] < 0 || p[1] < 0 ? -1 : pf_net_node(g, PF_G_CONCAT, p, 2, 16, 1, 2, 0);
    y = graph_conv(g, y, "conv_up", 12, 0);
    y = pf_net_add_mul(g, y, y, y, 2.0f);
    g->output = y < 0 ? -1 : pf_net_node(g, PF_G_SHUFFLE, &y, 1, 3, 1, 1, 0);
    if (g->output >= 0) g->node[g->n_node - 1].r = 2;
}

/* PixFlow's CPU executor (nn/graph.h) on g with params: lq n x h x w x 3 uint8 -> out
   n x 3 x h x w floats (NCHW). 0, or -1 after a failed check. */
static int run_graph(const pf_net *g, const float *params, const uint8_t *lq, int n, int h,
                     int w, float *out) {
    pf_dnnl dnnl;
    char err[1024];
    if (pf_dnnl_init(&dnnl, err, sizeof err)) {
        CHECK(0, "dnnl: %s", err);
        return -1;
    }
    pf_conv *convs = calloc((size_t)g->n_convs + 1, sizeof *convs);
    for (int i = 0; i < g->n_convs; i++) pf_graph_conv_init(g, i, &convs[i]);
    pf_gctx x = { .net = g, .dnnl = &dnnl, .convs = convs, .params = params };
    pf_gstate *S = NULL;
    int rc = pf_graph_plan(&x, &S, n, h, w, 0, err, sizeof err);
    for (int i = 0; rc == 0 && i < g->n_convs; i++) {
        const pf_param_info *wt = &g->tensors[g->conv[i].weight];
        int bi = pf_net_conv_bias(g, i);
        rc = pf_conv_set_weights(&convs[i], params + wt->offset,
                                 bi >= 0 ? params + g->tensors[bi].offset : NULL, err, sizeof err);
    }
    if (rc == 0) rc = pf_graph_forward(&x, S, lq, err, sizeof err);
    if (rc == 0) dnnl_stream_wait(dnnl.stream);
    CHECK(rc == 0, "%s: %s", g->type, err);
    int b;
    const float *y = rc ? NULL : pf_gstate_out(S, &b);
    for (int a = 0; y && a < n; a++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++)
                    out[(((size_t)a * 3 + c) * h + i) * w + j] = y[pf_blk_off(a, c, i, j, 3, h, w, b)];
    pf_gstate_free(&S);
    for (int i = 0; i < g->n_convs; i++) pf_conv_free(&convs[i]);
    free(convs);
    pf_dnnl_free(&dnnl);
    return rc ? -1 : 0;
}

/* Both pooling graphs, the strided one, the ReLU nodes' and the TSA ops' exported, with their two inputs (the cases' sizes,
   rounded up to the graph's input multiple) and PixFlow's outputs for onnx_runtime.js, as
   one_case writes a network's. */
static void pooled_cases(const char *dir, FILE *cases) {
    for (int convs = 0; convs < 5; convs++) {
        pf_net g;
        if (convs < 2) build_pooled(&g, convs);
        else if (convs == 2) build_strided(&g);
        else if (convs == 3) build_relus(&g);
        else build_tsa(&g);
        CHECK(!g.oom && g.output >= 0, "%s: building", g.type);
        float *params = calloc(g.n_params + 1, sizeof *params);
        pf_net_init_params(&g, params, 39);
        void *buf = NULL;
        size_t len = 0;
        char err[1024];
        int rc = pf_onnx_export(&g, params, &buf, &len, err, sizeof err);
        CHECK(rc == 0, "%s: %s", g.type, err);
        if (rc == 0) write_file(dir, g.type, ".onnx", buf, len);
        write_names(dir, g.type, &g);
        free(buf);
        for (int k = 0; rc == 0 && k < 2; k++) {
            int n = k ? 2 : 1, q = pf_net_input_multiple(&g);
            int h = (k ? 24 : 14) + q - 1, w = (k ? 20 : 18) + q - 1;
            h -= h % q;
            w -= w % q;
            size_t px = (size_t)n * h * w * 3;
            uint8_t *lq = malloc(px);
            float *in = malloc(px * sizeof *in), *out = malloc(px * sizeof *out);
            pf_rng r = pf_rng_make(39, (uint64_t)k, (uint64_t)convs);
            for (size_t j = 0; j < px; j++)     /* PoolOnly: 4 levels, ties everywhere */
                lq[j] = convs ? (uint8_t)(pf_rng_uniform(&r) * 256.0)
                              : (uint8_t)((int)(pf_rng_uniform(&r) * 4.0) * 85);
            for (int a = 0; a < n; a++)
                for (int c = 0; c < 3; c++)
                    for (int i = 0; i < h * w; i++)
                        in[((size_t)a * 3 + c) * h * w + i] =
                            (float)lq[((size_t)a * h * w + i) * 3 + c] / 255.0f;
            if (run_graph(&g, params, lq, n, h, w, out) == 0) {
                char ext[32];
                snprintf(ext, sizeof ext, ".in%d.f32", k);
                write_file(dir, g.type, ext, in, px * sizeof *in);
                snprintf(ext, sizeof ext, ".out%d.f32", k);
                write_file(dir, g.type, ext, out, px * sizeof *out);
                fprintf(cases, "%s %d %d %d %d 1 0\n", g.type, k, n, h, w);
            }
            free(lq);
            free(in);
            free(out);
        }
        free(params);
        pf_net_free(&g);
    }
}

/* An op without an ONNX mapping is refused, naming the op and the network: a description
   node whose op is far past the last one (a new op added to nn/net.h without a case; not
   the last one + 1, which the next op appended to the enum becomes). */
static void unmapped_refused(void) {
    pf_net g;
    pf_net_init(&g);
    snprintf(g.type, sizeof g.type, "Future");
    g.input = pf_net_node(&g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g.output = pf_net_node(&g, PF_G_TANH, &g.input, 1, 3, 1, 1, 0);
    g.node[1].op = (pf_gop)1000;
    char err[1024];
    void *buf = NULL;
    size_t len;
    int rc = pf_onnx_export(&g, NULL, &buf, &len, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "Future: op '") && strstr(err, "(node 1) has no ONNX mapping"),
          "an op without a case: rc %d, '%s'", rc, err);
    free(buf);
    pf_net_free(&g);
}

/* ---- onnx.upscale's modes ------------------------------------------------------------- */

/* A smooth-ish picture with some texture (the network's output is neither flat nor clipped). */
static void write_picture(const char *dir, const char *name, int w, int h, int seed) {
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                px[((size_t)y * w + x) * 3 + c] =
                    (uint8_t)(128 + 90 * ((x * (c + 2) + y * (3 - c) + seed * 7) % 23) / 23 -
                              45 + (x * y + seed) % 5);
    char path[2048], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(pf_image_write_png(path, px, w, h, err, sizeof err) == 0, "%s", err);
    free(px);
}

static int fixtures(const char *dir) {
    static pf_config c;
    char err[1024], path[2048];
    small_config(&c, "EDSR", 2);
    c.n_feats = 16;
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "EDSR x2: %s", err);
    if (!m) return pf_test_end("test_onnx_export fixtures");
    random_weights(m);
    work_dir(&c, m, dir, "upscale");
    pf_model_destroy(&m);
    snprintf(path, sizeof path, "%s/images", dir);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    write_picture(path, "small.png", 37, 29, 1);
    write_picture(path, "large.png", 52, 44, 2);
    return pf_test_end("test_onnx_export fixtures");
}

/* Image k (lq, h x w) through m as `pixflow upscale` runs it; its files in dir. */
static void upscale_one(pf_model *m, const char *dir, const char *upscaled, const char *img,
                        int k, const pf_image *lq, FILE *cases) {
    int s = pf_model_scale(m), h = lq->h, w = lq->w, H = h * s, W = w * s;
    size_t hw = (size_t)h * w, HW = (size_t)H * W;
    float *out = malloc(HW * 3 * sizeof *out), *in = malloc(hw * 3 * sizeof *in);
    float *nchw = malloc(HW * 3 * sizeof *nchw);
    uint8_t *u8 = malloc(HW * 3);
    char err[1024], path[2048], ext[32];
    pf_infer_opts whole = { 0 };
    int rc = pf_infer(m, lq->data, h, w, &whole, out, err, sizeof err);
    CHECK(rc == 0, "%s: %s", img, err);
    if (rc) goto done;
    for (size_t i = 0; i < hw; i++)
        for (int c = 0; c < 3; c++) in[c * hw + i] = (float)lq->data[i * 3 + c] / 255.0f;
    for (size_t i = 0; i < HW; i++)
        for (int c = 0; c < 3; c++) nchw[c * HW + i] = out[i * 3 + c];
    pf_to_u8(out, u8, HW * 3);
    /* `pixflow upscale`'s PNG of this image: OUT/<stem>.png */
    const char *base = strrchr(img, '/') ? strrchr(img, '/') + 1 : img;
    const char *dot = strrchr(base, '.');
    snprintf(path, sizeof path, "%s/%.*s.png", upscaled, (int)(dot ? dot - base : (long)strlen(base)),
             base);
    pf_image up = { 0 };
    rc = pf_image_read_png(path, &up, err, sizeof err);
    CHECK(rc == 0, "pixflow upscale's output: %s", err);
    if (rc) goto done;
    CHECK(up.w == W && up.h == H, "%s: %d x %d, want %d x %d", path, up.w, up.h, W, H);
    size_t differ = 0;
    int seen[256] = { 0 }, levels = 0;
    for (size_t i = 0; up.w == W && up.h == H && i < HW * 3; i++) {
        differ += up.data[i] != u8[i];
        levels += !seen[u8[i]]++;
    }
    CHECK(differ == 0, "%s: %zu of %zu bytes differ from pf_infer's output rounded", path, differ,
          HW * 3);
    CHECK(levels >= 32, "%s: only %d grey levels (a flat output proves little)", path, levels);
    snprintf(ext, sizeof ext, ".in%d.f32", k);
    write_file(dir, "upscale", ext, in, hw * 3 * sizeof *in);
    snprintf(ext, sizeof ext, ".out%d.f32", k);
    write_file(dir, "upscale", ext, nchw, HW * 3 * sizeof *nchw);
    snprintf(ext, sizeof ext, ".png%d.u8", k);
    write_file(dir, "upscale", ext, up.data, HW * 3);
    fprintf(cases, "upscale %d 1 %d %d %d 0\n", k, h, w, s);
    printf("%s: %d x %d -> %d x %d, %d grey levels, pf_infer rounded %s upscale's PNG\n", img,
           w, h, W, H, levels, differ ? "!=" : "=");
    pf_image_free(&up);
done:
    free(out);
    free(in);
    free(nchw);
    free(u8);
}

static int upscale_side(const char *dir, const char *model, const char *upscaled, int n,
                        char **imgs) {
    static pf_config cfg;
    char err[1024], path[2048];
    pf_model *m = pf_model_source_load(model, NULL, -1, &cfg, NULL, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *cases = m ? fopen(path, "w") : NULL;
    CHECK(!m || cases, "%s: cannot write", path);
    for (int k = 0; cases && k < n; k++) {
        pf_image lq = { 0 };
        int rc = pf_image_read(imgs[k], &lq, err, sizeof err);
        CHECK(rc == 0, "%s", err);
        int q = pf_model_input_multiple(m);
        CHECK(rc || (lq.h % q == 0 && lq.w % q == 0),
              "%s: %d x %d, not a multiple of the network's %d (upscale pads those; this "
              "comparison does not)", imgs[k], lq.w, lq.h, q);
        if (!rc && lq.h % q == 0 && lq.w % q == 0)
            upscale_one(m, dir, upscaled, imgs[k], k, &lq, cases);
        pf_image_free(&lq);
    }
    if (cases) fclose(cases);
    pf_model_destroy(&m);
    return pf_test_end("test_onnx_export upscale");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "fixtures")) return fixtures(argv[2]);
    if (argc >= 6 && !strcmp(argv[1], "upscale"))
        return upscale_side(argv[2], argv[3], argv[4], argc - 5, argv + 5);
    /* alone (its plain ctest entry): the exports and the refusal, files under the cwd */
    const char *dir = argc > 1 ? argv[1] : "onnx_export_out";
    char path[2048], err[512];
    CHECK(pf_mkdirs(dir, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *cases = fopen(path, "w");
    if (!cases) return 1;
    /* BasicVSRPlusPlus's and EDVR's deformable convolutions have no ONNX mapping yet
       (refused, as test_dcn checks) */
    for (int i = 0; i < pf_n_networks; i++)
        for (int s = 1; s <= 8; s++)
            if (pf_networks[i].scales >> s & 1 && strcmp(pf_networks[i].name, "BasicVSRPlusPlus") &&
                strcmp(pf_networks[i].name, "EDVR"))
                one_case(dir, pf_networks[i].name, s, pf_networks[i].video, cases);
    pooled_cases(dir, cases);
    fclose(cases);
    unmapped_refused();
    return pf_test_end("test_onnx_export");
}
