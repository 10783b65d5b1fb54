/*  test_rcan_layouts — RCAN's channel attention (PF_G_MUL_CH with its residual) in every
    activation layout, at widths whose attention maps oneDNN lays out unlike the features.

    Cases: n_feats / squeeze_factor 8/4 (2-channel attention maps), 16/16 (1 channel), 12/4
    (3, and 12 pads the blocked layouts), 64/16 (4), each at x2 and x3; 2 groups of 2 RCABs,
    res_scale 1 at x2 and 0.5 at x3, batch 2, LQ 13 x 11, MSE loss. The first case failed on
    main with "RCAN: channel attention residual in another layout" in oneDNN's layouts
    (inference ran; the training plan did not), on AVX-512 and capped at AVX512_CORE.

    Per case, one training step and one inference in each layout: oneDNN's choice ("any",
    the normal path) and forced NCHW, nChw8c, nChw16c, NHWC (every convolution must really
    run on the forced layout). The loss, the training output, every parameter gradient and
    the inference output must match
      - (default) the forced-NCHW run within 1e-4 relative (max |ours - ref| / max |ref|, per
        tensor, test_layouts' tolerance);
      - (`torch`) PyTorch float64 within 1e-4 relative: BasicSR's RCAN (zoo_archs.py) with the
        same weights and batch, autograd's gradients (tests/reference/rcan_layouts_ref.py);
        exit 77 without /usr/bin/python3 and torch.
    Each variant prints its worst error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/model_internal.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"
#include "tests/pf_test_zoo.h"

#define TOL 1e-4
#define N 2
#define H 13
#define W 11

typedef struct {
    int n_feats, squeeze, scale;
} rcan_case;

static const rcan_case cases[] = {
    { 8, 4, 2 },  { 8, 4, 3 },  { 16, 16, 2 }, { 16, 16, 3 },
    { 12, 4, 2 }, { 12, 4, 3 }, { 64, 16, 2 }, { 64, 16, 3 },
};
#define N_CASES (sizeof cases / sizeof cases[0])

static const pf_layout layouts[] = { PF_LAYOUT_NCHW, PF_LAYOUT_ANY, PF_LAYOUT_NCHW8C,
                                     PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
static const char *const layout_names[] = { "nchw", "any", "nChw8c", "nChw16c", "nhwc" };
#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

static void make_cfg(pf_config *c, const rcan_case *k) {
    pf_test_zoo_config(c, "RCAN", k->scale, k->n_feats);
    c->squeeze_factor = k->squeeze;
    c->res_scale = k->scale == 2 ? 1.0f : 0.5f;
    snprintf(c->loss_type, sizeof c->loss_type, "MSELoss");
    c->loss_weight = 1.0f;
}

typedef struct {
    float loss;
    float *out, *grads, *infer; /* NHWC training output, flat gradients, NHWC inference */
} result;

static void batch(const rcan_case *k, uint8_t *lq, uint8_t *gt) {
    size_t nl = (size_t)N * H * W * 3, ng = nl * k->scale * k->scale;
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)((i * 37 + 11) ^ (i >> 5));
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)((i * 53 + 7) ^ (i >> 4));
}

/* One training step and an inference (of the first image) of case k in layout l, weights from
   seed 7; 0, or -1 after a failed check. */
static int run(const rcan_case *k, pf_layout l, const char *lname, result *r) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[1024];
    memset(r, 0, sizeof *r);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "RCAN %d/%d x%d: %s", k->n_feats, k->squeeze, k->scale, err);
    if (!m) return -1;
    m->dnnl.force_layout = l;
    pf_model_init(m, 7);
    size_t nl = (size_t)N * H * W * 3, ng = nl * k->scale * k->scale;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    batch(k, lq, gt);
    r->out = malloc(ng * sizeof(float));
    r->grads = malloc(pf_model_num_params(m) * sizeof(float));
    r->infer = malloc(ng / N * sizeof(float));
    int rc = pf_model_train_step(m, lq, gt, N, H, W, &r->loss, err, sizeof err);
    CHECK(rc == 0, "RCAN %d/%d x%d %s: training step: %s", k->n_feats, k->squeeze, k->scale,
          lname, err);
    if (rc == 0) {
        pf_model_train_output(m, N, r->out);
        memcpy(r->grads, pf_model_grads(m), pf_model_num_params(m) * sizeof(float));
        rc = pf_model_infer(m, lq, H, W, r->infer, err, sizeof err);
        CHECK(rc == 0, "RCAN %d/%d x%d %s: inference: %s", k->n_feats, k->squeeze, k->scale,
              lname, err);
    }
    for (int i = 0; rc == 0 && l != PF_LAYOUT_ANY && i < m->net.n_convs; i++) {
        const pf_conv *cs[2] = { &m->train_conv[i], &m->infer_conv[i] };
        for (int j = 0; j < 2; j++)
            CHECK(cs[j]->src_block == pf_layout_block(l, cs[j]->ic) &&
                      cs[j]->dst_block == pf_layout_block(l, cs[j]->oc),
                  "RCAN %d/%d x%d: %s %s runs on blocks %d -> %d, not the forced %s",
                  k->n_feats, k->squeeze, k->scale, j ? "inference" : "training", cs[j]->name,
                  cs[j]->src_block, cs[j]->dst_block, lname);
    }
    free(lq);
    free(gt);
    pf_model_destroy(&m);
    return rc;
}

static void free_result(result *r) {
    free(r->out);
    free(r->grads);
    free(r->infer);
    memset(r, 0, sizeof *r);
}

/* r against the reference ref (what: "nchw" or "torch"); every tensor within TOL. */
static void compare(const rcan_case *k, const char *lname, const char *what, const result *r,
                    const result *ref) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[512];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (!m) return;
    size_t ng = (size_t)N * H * W * 3 * k->scale * k->scale;
    double le = fabs((double)r->loss - ref->loss) / fabs((double)ref->loss);
    double oe = pf_ref_rel_err(r->out, ref->out, ng);
    double ie = pf_ref_rel_err(r->infer, ref->out, ng / N);  /* the first image */
    double ge = 0;
    const char *gname = "";
    for (int t = 0; t < pf_model_num_tensors(m); t++) {
        const pf_param_info *ti = pf_model_tensor_info(m, t);
        double e = pf_ref_rel_err(r->grads + ti->offset, ref->grads + ti->offset, ti->numel);
        CHECK(e <= TOL, "RCAN %d/%d x%d %s vs %s: gradient of %s: relative error %.3g",
              k->n_feats, k->squeeze, k->scale, lname, what, ti->name, e);
        if (!(e <= ge)) {
            ge = e;
            gname = ti->name;
        }
    }
    CHECK(le <= TOL, "RCAN %d/%d x%d %s vs %s: loss %.9g, reference %.9g", k->n_feats,
          k->squeeze, k->scale, lname, what, r->loss, ref->loss);
    CHECK(oe <= TOL, "RCAN %d/%d x%d %s vs %s: training output: relative error %.3g",
          k->n_feats, k->squeeze, k->scale, lname, what, oe);
    CHECK(ie <= TOL, "RCAN %d/%d x%d %s vs %s: inference output: relative error %.3g",
          k->n_feats, k->squeeze, k->scale, lname, what, ie);
    printf("RCAN %2d/%-2d x%d %-7s vs %-5s: loss %.2e out %.2e infer %.2e grad %.2e (%s)\n",
           k->n_feats, k->squeeze, k->scale, lname, what, le, oe, ie, ge, gname);
    pf_model_destroy(&m);
}

/* The inputs of case `idx` for rcan_layouts_ref.py: caseK.txt, its weights, lq and gt. */
static int write_case(const char *dir, int idx, const rcan_case *k) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[512], name[64];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "RCAN %d/%d x%d: %s", k->n_feats, k->squeeze, k->scale, err);
    if (!m) return -1;
    pf_model_init(m, 7);
    snprintf(name, sizeof name, "%s/case%d.txt", dir, idx);
    FILE *f = fopen(name, "w");
    CHECK(f != NULL, "could not write %s", name);
    if (!f) {
        pf_model_destroy(&m);
        return -1;
    }
    fprintf(f, "%d %d %d %d %d %d %.9g %.9g %.9g %.9g %.9g %d %d\n", k->n_feats, k->squeeze,
            k->scale, N, H, W, cfg.res_scale, cfg.img_range, cfg.rgb_mean[0], cfg.rgb_mean[1],
            cfg.rgb_mean[2], cfg.num_group, cfg.n_blocks);
    for (int t = 0; t < pf_model_num_tensors(m); t++) {
        const pf_param_info *ti = pf_model_tensor_info(m, t);
        fprintf(f, "%s %zu", ti->name, ti->numel);
        for (int d = 0; d < ti->ndim; d++) fprintf(f, " %lld", (long long)ti->shape[d]);
        fprintf(f, "\n");
    }
    int rc = fclose(f) ? -1 : 0;
    size_t nl = (size_t)N * H * W * 3, ng = nl * k->scale * k->scale;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    batch(k, lq, gt);
    snprintf(name, sizeof name, "case%d_params.bin", idx);
    if (!rc) rc = pf_ref_write_file(dir, name, pf_model_params(m),
                                    pf_model_num_params(m) * sizeof(float));
    snprintf(name, sizeof name, "case%d_lq.bin", idx);
    if (!rc) rc = pf_ref_write_file(dir, name, lq, nl);
    snprintf(name, sizeof name, "case%d_gt.bin", idx);
    if (!rc) rc = pf_ref_write_file(dir, name, gt, ng);
    free(lq);
    free(gt);
    pf_model_destroy(&m);
    return rc;
}

/* PyTorch's float64 results of case idx (caseK_ref.bin) as a result; 0 or -1. */
static int read_ref(const char *dir, int idx, const rcan_case *k, result *ref) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[512], path[1100];
    memset(ref, 0, sizeof *ref);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (!m) return -1;
    size_t ng = (size_t)N * H * W * 3 * k->scale * k->scale, np = pf_model_num_params(m);
    size_t total = 1 + ng + np;
    pf_model_destroy(&m);
    float *buf = malloc(total * sizeof(float));
    snprintf(path, sizeof path, "%s/case%d_ref.bin", dir, idx);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(buf, sizeof(float), total + 1, f) : 0;
    if (f) fclose(f);
    CHECK(got == total, "%s: %zu floats, expected %zu", path, got, total);
    if (got != total) {
        free(buf);
        return -1;
    }
    ref->loss = buf[0];
    ref->out = malloc(ng * sizeof(float));
    ref->grads = malloc(np * sizeof(float));
    memcpy(ref->out, buf + 1, ng * sizeof(float));
    memcpy(ref->grads, buf + 1 + ng, np * sizeof(float));
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int torch_mode = argc > 1 && !strcmp(argv[1], "torch");
    char dir[] = "/tmp/pf_rcan_layouts_XXXXXX";
    if (torch_mode) {
        if (!pf_ref_have("test_rcan_layouts", "numpy, torch")) return 77;
        if (!mkdtemp(dir)) {
            CHECK(0, "mkdtemp %s failed", dir);
            return pf_test_end("test_rcan_layouts");
        }
        for (size_t i = 0; i < N_CASES; i++) write_case(dir, (int)i, &cases[i]);
        pf_ref_exec("rcan_layouts_ref.py", dir);
    }
    for (size_t i = 0; i < N_CASES; i++) {
        const rcan_case *k = &cases[i];
        result ref;
        int rc = torch_mode ? read_ref(dir, (int)i, k, &ref)
                            : run(k, layouts[0], layout_names[0], &ref);
        if (rc) {
            free_result(&ref);
            continue;
        }
        for (size_t li = torch_mode ? 0 : 1; li < N_LAYOUTS; li++) {
            result r;
            if (run(k, layouts[li], layout_names[li], &r) == 0)
                compare(k, layout_names[li], torch_mode ? "torch" : "nchw", &r, &ref);
            free_result(&r);
        }
        free_result(&ref);
    }
    if (torch_mode) pf_ref_remove(dir);
    return pf_test_end("test_rcan_layouts");
}
