/*  test_graph_layout — graph networks keep their features in oneDNN's blocked layouts.

    Every convolution whose input has 8 channels or more must run on a blocked (nChwXc)
    source: a plain NCHW tensor in front of a convolution with, say, 12 input channels makes
    oneDNN 2.6 fall back to its gemm kernel with a plain output, and every later layer follows
    (RRDBNet x2 after PixelUnshuffle ran that way: 3x slower, and its forward result depended
    on the thread count). Also: the forward output is bit-identical with 1 and 2 threads. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model_internal.h"
#include "tests/pf_test.h"

static void base_cfg(pf_config *c, const char *type, int scale) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", type);
    c->scale = scale;
    c->n_feats = 16;
    c->n_blocks = 1;
    c->num_group = 1;
    c->squeeze_factor = 4;
    c->num_grow_ch = 12;
    c->fsrcnn_d = 12;
    c->fsrcnn_s = 5;
    c->fsrcnn_m = 1;
}

static void one_case(const char *type, int scale) {
    pf_config cfg;
    base_cfg(&cfg, type, scale);
    char err[1024];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s x%d: %s", type, scale, err);
    if (!m) return;
    pf_model_init(m, 1);
    int n = 3, h = 6, w = 10, s = scale;
    size_t nl = (size_t)n * h * w * 3, ng = nl * s * s;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    float *out[2] = { malloc(ng * sizeof(float)), malloc(ng * sizeof(float)) };
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)(i * 53 + 7);
    int nt = omp_get_max_threads();
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        float loss;
        int rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
        CHECK(rc == 0, "%s x%d: %s", type, scale, err);
        pf_model_train_output(m, n, out[t]);
    }
    omp_set_num_threads(nt);
    CHECK(!memcmp(out[0], out[1], ng * sizeof(float)),
          "%s x%d: forward output differs between 1 and 2 threads", type, scale);
    float *io = malloc((size_t)h * w * 3 * s * s * sizeof(float));
    CHECK(pf_model_infer(m, lq, h, w, io, err, sizeof err) == 0, "%s: %s", type, err);
    free(io);
    for (int i = 0; i < m->n_convs; i++) {
        const pf_conv *cs[2] = { &m->train_conv[i], &m->infer_conv[i] };
        for (int k = 0; k < 2; k++)
            if (cs[k]->ic >= 8)
                CHECK(cs[k]->src_block > 1, "%s x%d: %s %s runs on a plain source (block %d)",
                      type, scale, k ? "inference" : "training", cs[k]->name, cs[k]->src_block);
    }
    free(lq);
    free(gt);
    free(out[0]);
    free(out[1]);
    pf_model_destroy(&m);
}

int main(void) {
    static const struct { const char *type; int scale; } cases[] = {
        { "FSRCNN", 3 }, { "ESPCN", 2 }, { "MSRResNet", 4 }, { "RCAN", 2 },
        { "RRDBNet", 2 }, { "RRDBNet", 4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) one_case(cases[i].type, cases[i].scale);
    return pf_test_end("test_graph_layout");
}
