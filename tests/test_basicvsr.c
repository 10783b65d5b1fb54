/*  test_basicvsr — BasicVSR x4 (nn/zoo.c, pf_net_build_basicvsr) on the CPU executor against
    PyTorch 1.13 (tests/reference/basicvsr_ref.py -> tests/data/basicvsr.safetensors): the
    model of bench/video/torch_basicvsr.py (BasicSR's basicvsr_arch.py / spynet_arch.py) with
    num_feat 8, num_block 1, a clip of 3 frames, LQ 64 x 64, weights, LQ and GT from a counter
    hash both sides compute (SPyNet's flows reach about 2 pixels, some samples leave the
    image). Checked: every parameter name and shape is PyTorch's; the output (per-frame sums
    and sums of squares, 4096 sampled elements) within 1e-4 relative; the Charbonnier loss;
    every parameter's gradient (sum, L2 norm, 64 sampled elements, relative to its norm)
    against PyTorch in float64, within 1e-4 or, where PyTorch's own float32 run is further off
    than that (SPyNet's gradients are sums of many cancelling terms: up to 3e-3), within 16
    times PyTorch float32's error (measured on an AVX-512 Xeon: at most 8 times, in NCHW, whose
    backward-weights kernels sum in another order; 16 leaves room for other CPUs' kernels) — in oneDNN's own layouts and with every activation forced
    to NCHW, nChw8c, nChw16c and NHWC.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/safetensors.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_hash.h"

enum { N = 1, T = 3, H = 64, W = 64, FEAT = 8, BLOCKS = 1 };

/* ---- the counter hash of basicvsr_ref.py ------------------------------------------------ */

/* The weights: element j of tensor NAME (2 u - 1) * bound (pf_hash_fill_params). */
static void fill_params(const pf_net *g, float *params) {
    pf_hash_fill_params(g->tensors, g->n_tensors, params);
}

/* ---- running ------------------------------------------------------------------------------ */

static const char *layout_name(pf_layout l) {
    return l == PF_LAYOUT_ANY ? "any" : l == PF_LAYOUT_NCHW ? "nchw" : l == PF_LAYOUT_NCHW8C
           ? "nChw8c" : l == PF_LAYOUT_NCHW16C ? "nChw16c" : "nhwc";
}

static double rel(double got, double want, double scale) {
    return fabs(got - want) / (scale > 0 ? scale : 1);
}

static void check_layout(const pf_net *g, pf_safetensors *ref, pf_layout layout,
                         const uint8_t *lq, const uint8_t *gt) {
    char err[1024];
    pf_dnnl d;
    if (pf_dnnl_init(&d, err, sizeof err)) {
        CHECK(0, "dnnl: %s", err);
        return;
    }
    d.force_layout = layout;
    pf_conv *convs = calloc((size_t)g->n_convs, sizeof *convs);
    float *params = calloc(g->n_params, sizeof(float)), *grads = calloc(g->n_params, sizeof(float));
    for (int i = 0; i < g->n_convs; i++) pf_graph_conv_init(g, i, &convs[i]);
    fill_params(g, params);
    pf_gctx x = { .net = g, .dnnl = &d, .convs = convs, .params = params, .grads = grads };
    pf_gstate *S = NULL;
    int ok = pf_graph_plan(&x, &S, N, H, W, 1, err, sizeof err) == 0;
    CHECK(ok, "plan (%s): %s", layout_name(layout), err);
    for (int i = 0; ok && i < g->n_convs; i++) {
        const pf_param_info *wt = &g->tensors[g->conv[i].weight];
        ok = pf_conv_set_weights(&convs[i], params + wt->offset, params + wt[1].offset, err,
                                 sizeof err) == 0;
        CHECK(ok, "weights of %s: %s", g->conv[i].name, err);
    }
    ok = ok && pf_graph_forward(&x, S, lq, err, sizeof err) == 0;
    CHECK(ok, "forward (%s): %s", layout_name(layout), err);
    const int C = 3 * T, OH = 4 * H, OW = 4 * W;
    size_t numel = (size_t)N * C * OH * OW;
    float *out = malloc(numel * sizeof(float));
    int b = 0;
    const float *y = ok ? pf_gstate_out(S, &b) : NULL;
    double loss = 0;
    float *dy = ok ? pf_gstate_dout(S) : NULL;
    if (ok) memset(dy, 0, pf_blk_numel(N, C, OH, OW, b) * sizeof(float));
    for (int c = 0; ok && c < C; c++)
        for (int yy = 0; yy < OH; yy++)
            for (int xx = 0; xx < OW; xx++) {
                size_t at = pf_blk_off(0, c, yy, xx, C, OH, OW, b);
                float o = y[at];
                out[((size_t)c * OH + yy) * OW + xx] = o;
                /* GT is N T 4H 4W 3: frame c / 3, colour c % 3 */
                double gv = gt[(((size_t)(c / 3) * OH + yy) * OW + xx) * 3 + c % 3] / 255.0;
                double dd = o - gv, s = sqrt(dd * dd + 1e-12);
                loss += s;
                dy[at] = (float)(dd / s / (double)numel);
            }
    loss /= (double)numel;
    int ndim;
    int64_t shape[8];
    double worst_out = 0, worst_grad = 0, worst_e = 0, worst_e32 = 0;
    int n_tight = 0;
    if (ok) {
        const float *sum = pf_safetensors_get(ref, "out.sum", &ndim, shape);
        const float *sq = pf_safetensors_get(ref, "out.sumsq", &ndim, shape);
        const float *smp = pf_safetensors_get(ref, "out.sample", &ndim, shape);
        const float *rl = pf_safetensors_get(ref, "loss", &ndim, shape);
        CHECK(sum && sq && smp && rl, "basicvsr.safetensors: out.* or loss missing");
        if (!sum || !sq || !smp || !rl) ok = 0;
        for (int t = 0; ok && t < T; t++) {
            double s = 0, s2 = 0;
            for (size_t i = (size_t)t * 3 * OH * OW; i < (size_t)(t + 1) * 3 * OH * OW; i++) {
                s += out[i];
                s2 += (double)out[i] * out[i];
            }
            double e = fmax(rel(s, sum[t], sqrt(sq[t] * 3.0 * OH * OW)), rel(s2, sq[t], sq[t]));
            worst_out = fmax(worst_out, e);
        }
        double maxabs = 0;
        for (size_t i = 0; i < numel; i++) maxabs = fmax(maxabs, fabs(out[i]));
        uint64_t base = pf_hash_name("out");
        for (int k = 0; ok && k < 4096; k++)
            worst_out = fmax(worst_out, rel(out[pf_hash_mix(base ^ (uint64_t)k) % numel], smp[k], maxabs));
        CHECK(worst_out < 1e-4, "output (%s): %.3g from PyTorch's", layout_name(layout),
              worst_out);
        CHECK(rel(loss, rl[0], rl[0]) < 1e-5, "loss %.8f, PyTorch %.8f", loss, rl[0]);
    }
    ok = ok && pf_graph_backward(&x, S, err, sizeof err) == 0;
    CHECK(ok || !y, "backward (%s): %s", layout_name(layout), err);
    const char *worst_name = "";
    for (int i = 0; ok && i < g->n_tensors; i++) {
        const pf_param_info *t = &g->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "g.%s", t->name);
        const float *r = pf_safetensors_get(ref, name, &ndim, shape);
        CHECK(r != NULL, "basicvsr.safetensors: no %s (a parameter name PyTorch lacks)", name);
        if (!r) continue;
        const float *gr = grads + t->offset;
        double s = 0, n2 = 0;
        for (size_t j = 0; j < t->numel; j++) {
            s += gr[j];
            n2 += (double)gr[j] * gr[j];
        }
        double norm = sqrt(n2), e = fmax(rel(norm, r[1], r[1]), rel(s, r[0], r[1] * 10));
        snprintf(name, sizeof name, "idx.%s", t->name);
        uint64_t base = pf_hash_name(name);
        for (int k = 0; k < 64; k++)
            e = fmax(e, rel(gr[pf_hash_mix(base ^ (uint64_t)k) % t->numel], r[2 + k], r[1]));
        snprintf(name, sizeof name, "e32.%s", t->name);
        const float *e32 = pf_safetensors_get(ref, name, &ndim, shape);
        double tol = fmax(1e-4, 16 * (e32 ? e32[0] : 0));
        CHECK(e32 && e < tol, "gradient of %s (%s): %.3g from PyTorch's float64 (its float32: "
              "%.3g; norm %.4g vs %.4g)", t->name, layout_name(layout), e, e32 ? e32[0] : -1,
              norm, r[1]);
        if (e / tol > worst_grad) {   /* the tensor closest to its bound */
            worst_grad = e / tol;
            worst_name = t->name;
            worst_e = e;
            worst_e32 = e32 ? e32[0] : 0;
        }
        n_tight += e < 1e-4;
    }
    if (ok)
        printf("BasicVSR (%s): output within %.2g, loss %.6f; %d of %d gradients within 1e-4 "
               "of PyTorch's float64, the rest within 16x PyTorch float32's own error (closest "
               "to its bound: %s, %.2g, float32 %.2g)\n", layout_name(layout), worst_out, loss,
               n_tight, g->n_tensors, worst_name, worst_e, worst_e32);
    free(out);
    pf_gstate_free(&S);
    for (int i = 0; i < g->n_convs; i++) pf_conv_free(&convs[i]);
    free(convs);
    free(params);
    free(grads);
    pf_dnnl_free(&d);
}

/* The same network built from a config (model.type BasicVSR, a video training set of T-frame
   clips) through the model API the worker and the eval hook use: the training step's loss
   and its output (pf_model_train_output, frame-major images) and pf_model_infer_clip of the
   clip (an unrolled network of its own) against PyTorch's output. */
static void check_model(pf_safetensors *ref, const uint8_t *lq, const uint8_t *gt) {
    pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "BasicVSR");
    cfg.scale = 4;
    cfg.n_feats = FEAT;
    cfg.n_blocks = BLOCKS;
    snprintf(cfg.loss_type, sizeof cfg.loss_type, "CharbonnierLoss");
    cfg.charbonnier_eps = 1e-12f;
    cfg.train.present = 1;
    snprintf(cfg.train.type, sizeof cfg.train.type, "REDSRecurrentDataset");
    cfg.train.num_frame = T;
    char err[1024];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "pf_model_new: %s", err);
    if (!m) return;
    CHECK(pf_model_is_video(m) && pf_model_frames(m) == T && pf_model_scale(m) == 4,
          "a video model of %d frames x4", T);
    const pf_net *g = &((struct pf_model *)m)->net;
    fill_params(g, pf_model_params(m));
    int ndim;
    int64_t shape[8];
    const float *sum = pf_safetensors_get(ref, "out.sum", &ndim, shape);
    const float *sq = pf_safetensors_get(ref, "out.sumsq", &ndim, shape);
    const float *rl = pf_safetensors_get(ref, "loss", &ndim, shape);
    const int OH = 4 * H, OW = 4 * W;
    size_t frame = (size_t)OH * OW * 3;
    float *out = malloc((size_t)T * frame * sizeof(float));
    float loss = 0;
    for (int pass = 0; pass < 2 && sum && sq && rl && out; pass++) {
        int rc = pass == 0 ? pf_model_train_step(m, lq, gt, N, H, W, &loss, err, sizeof err)
                           : pf_model_infer_clip(m, lq, T, H, W, out, err, sizeof err);
        CHECK(rc == 0, "%s: %s", pass ? "pf_model_infer_clip" : "pf_model_train_step", err);
        if (rc) break;
        if (pass == 0) {
            CHECK(rel(loss, rl[0], rl[0]) < 1e-5, "model loss %.8f, PyTorch %.8f", loss, rl[0]);
            CHECK(pf_model_train_output(m, N, out) == 0, "pf_model_train_output");
        }
        double worst = 0;
        for (int t = 0; t < T; t++) {   /* frame-major HWC: frame t's sums */
            double s = 0, s2 = 0;
            for (size_t i = (size_t)t * frame; i < (size_t)(t + 1) * frame; i++) {
                s += out[i];
                s2 += (double)out[i] * out[i];
            }
            worst = fmax(worst, fmax(rel(s, sum[t], sqrt(sq[t] * (double)frame)),
                                     rel(s2, sq[t], sq[t])));
        }
        CHECK(worst < 1e-4, "model %s output: %.3g from PyTorch's", pass ? "clip" : "training",
              worst);
        printf("BasicVSR through pf_model: %s output within %.2g of PyTorch's\n",
               pass ? "pf_model_infer_clip" : "training step", worst);
    }
    /* model.spynet_pretrained: SPyNet's tensors under BasicSR's names without the "spynet."
       prefix (its spynet_sintel_final file), plus its mean buffer, which is ignored; the rest
       of the model keeps its weights; a file lacking a tensor names it and changes nothing */
    const float *params = pf_model_params(m);
    size_t np = pf_model_num_params(m);
    float *before = malloc(np * sizeof(float)), *vals = malloc(np * sizeof(float));
    pf_st_tensor *st = calloc((size_t)g->n_tensors + 1, sizeof *st);
    char (*names)[96] = calloc((size_t)g->n_tensors + 1, sizeof *names);
    int n = 0;
    memcpy(before, params, np * sizeof(float));
    for (size_t i = 0; i < np; i++) vals[i] = (float)i * 1e-6f;
    for (int i = 0; i < g->n_tensors; i++) {
        const pf_param_info *t = &g->tensors[i];
        if (strncmp(t->name, "spynet.", 7)) continue;
        snprintf(names[n], sizeof names[n], "%s", t->name + 7);
        st[n] = (pf_st_tensor){ names[n], vals + t->offset, t->ndim, { 0 } };
        memcpy(st[n].shape, t->shape, sizeof st[n].shape);
        n++;
    }
    static const float mean[3] = { 0.485f, 0.456f, 0.406f };
    st[n++] = (pf_st_tensor){ "mean", mean, 1, { 3 } };
    char path[256];
    snprintf(path, sizeof path, "/tmp/pf_spynet_%d.safetensors", (int)getpid());
    for (int drop = 0; drop < 2; drop++) {
        void *buf = NULL;
        size_t len = 0;
        int rc = pf_safetensors_serialize(st + drop, n - drop, NULL, 0, &buf, &len, err,
                                          sizeof err);
        FILE *f = rc ? NULL : fopen(path, "wb");
        CHECK(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0, "writing %s", path);
        free(buf);
        rc = pf_model_load_spynet(m, path, err, sizeof err);
        if (drop) {
            CHECK(rc == -1 && strstr(err, path) && strstr(err, names[0]) &&
                  !memcmp(before, params, np * sizeof(float)),
                  "a SPyNet file without %s: %s", names[0], rc ? err : "accepted");
            continue;
        }
        CHECK(rc == 0, "pf_model_load_spynet: %s", err);
        int moved = 0, spy = 0;
        for (int i = 0; i < g->n_tensors; i++) {
            const pf_param_info *t = &g->tensors[i];
            int is_spy = !strncmp(t->name, "spynet.", 7);
            spy += is_spy;
            const float *want = (is_spy ? vals : before) + t->offset;
            moved += memcmp(params + t->offset, want, t->numel * sizeof(float)) != 0;
        }
        CHECK(moved == 0 && spy == 60, "spynet_pretrained: %d of %d tensors wrong (%d SPyNet)",
              moved, g->n_tensors, spy);
        memcpy(pf_model_params(m), before, np * sizeof(float));
    }
    unlink(path);
    free(before);
    free(vals);
    free(st);
    free(names);
    free(out);
    pf_model_destroy(&m);
}

int main(void) {
    char err[1024], path[1024];
    snprintf(path, sizeof path, "%s/basicvsr.safetensors", pf_test_data());
    pf_safetensors *ref = NULL;
    if (pf_safetensors_load(path, &ref, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pf_net g;
    int rc = pf_net_build_basicvsr(&g, FEAT, BLOCKS, T, err, sizeof err);
    CHECK(rc == 0, "build: %s", err);
    if (rc) return pf_test_end("test_basicvsr");
    /* the parameter table is PyTorch's: same names, in state_dict order, same sizes */
    int named = 0, n_ref = 0;
    for (int i = 0; i < pf_safetensors_count(ref); i++) {
        const char *name;
        int ndim;
        int64_t shape[8];
        pf_safetensors_at(ref, i, &name, &ndim, shape);
        n_ref += !strncmp(name, "g.", 2);
    }
    for (int i = 0; i < g.n_tensors; i++) {
        char name[128];
        snprintf(name, sizeof name, "g.%s", g.tensors[i].name);
        int ndim;
        int64_t shape[8];
        named += pf_safetensors_get(ref, name, &ndim, shape) != NULL;
    }
    CHECK(named == g.n_tensors && n_ref == g.n_tensors, "%d of %d parameter tensors named as "
          "PyTorch's %d", named, g.n_tensors, n_ref);
    printf("BasicVSR num_feat %d num_block %d, %d frames: %d nodes, %d conv layers on %d weight "
           "tensors, %zu parameters\n", FEAT, BLOCKS, T, g.n_node, g.n_convs, g.n_tensors / 2,
           g.n_params);
    uint8_t *lq = malloc((size_t)N * T * H * W * 3), *gt = malloc((size_t)N * T * 16 * H * W * 3);
    uint64_t bl = pf_hash_name("lq"), bg = pf_hash_name("gt");
    for (size_t i = 0; i < (size_t)N * T * H * W * 3; i++) lq[i] = (uint8_t)floor(pf_hash_unit(bl, i) * 256);
    for (size_t i = 0; i < (size_t)N * T * 16 * H * W * 3; i++)
        gt[i] = (uint8_t)floor(pf_hash_unit(bg, i) * 256);
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
        check_layout(&g, ref, layouts[l], lq, gt);
    check_model(ref, lq, gt);
    free(lq);
    free(gt);
    pf_net_free(&g);
    pf_safetensors_free(&ref);
    return pf_test_end("test_basicvsr");
}
