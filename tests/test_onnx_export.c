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
    export` to export again; and checks
    that an op without a mapping is refused by name. Exit 0, or 1 with what failed.
    Without DIR (its own ctest entry) it writes under ./onnx_export_out. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/networks.h"
#include "common/rng.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/onnx_export.h"
#include "tests/pf_test.h"

static void small_config(pf_config *c, const char *type, int scale) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", type);
    c->scale = scale;
    c->n_feats = 8;
    c->n_blocks = 2;
    c->num_group = 2;
    c->squeeze_factor = 4;
    c->num_grow_ch = 4;
    c->fsrcnn_d = 8;
    c->fsrcnn_s = 4;
    c->fsrcnn_m = 2;
    c->srcnn_channels[1] = 8;
    c->srcnn_channels[2] = 4;
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
    FILE *f;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.names", dir, name);
    if ((f = fopen(path, "w"))) {
        for (int i = 0; i < pf_model_num_tensors(m); i++)
            fprintf(f, "%s\n", pf_model_tensor_info(m, i)->name);
        fclose(f);
    }
    for (int k = 0; k < 2; k++) run_input(m, dir, name, k, video ? VIDEO_FRAMES : 0, cases);
    if (!strcmp(name, "EDSR_x2") || !strcmp(name, "BasicVSR_x4")) work_dir(&c, m, dir, name);
    pf_model_destroy(&m);
}

/* An op without an ONNX mapping (max pooling: no network of the zoo uses it yet) is refused,
   naming the op and the network. */
static void unmapped_refused(void) {
    pf_net g;
    pf_net_init(&g);
    snprintf(g.type, sizeof g.type, "Pooled");
    g.input = pf_net_node(&g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g.output = pf_net_node(&g, PF_G_MAXPOOL2, &g.input, 1, 3, 1, 2, 0);
    char err[1024];
    void *buf = NULL;
    size_t len;
    int rc = pf_onnx_export(&g, NULL, &buf, &len, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "Pooled: op 'maxpool2' (node 1) has no ONNX mapping"),
          "max pooling: rc %d, '%s'", rc, err);
    free(buf);
    pf_net_free(&g);
}

int main(int argc, char **argv) {
    /* alone (its plain ctest entry): the exports and the refusal, files under the cwd */
    const char *dir = argc > 1 ? argv[1] : "onnx_export_out";
    char path[2048], err[512];
    CHECK(pf_mkdirs(dir, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *cases = fopen(path, "w");
    if (!cases) return 1;
    for (int i = 0; i < pf_n_networks; i++)
        for (int s = 1; s <= 8; s++)
            if (pf_networks[i].scales >> s & 1)
                one_case(dir, pf_networks[i].name, s, pf_networks[i].video, cases);
    fclose(cases);
    unmapped_refused();
    return pf_test_end("test_onnx_export");
}
