/*  test_layouts — every network gives the same results in every activation layout and with
    either convolution algorithm, so layouts and kernels this machine's oneDNN would not pick
    are exercised too.

    For each network (small widths, a batch of 2, an 8 x 6 LQ), the reference is the plain
    path: every activation forced to NCHW, direct convolution. Each variant forces one layout
    (NCHW, nChw8c, nChw16c, NHWC, or "any": oneDNN's choice, the normal path) and one algorithm
    (direct, or Winograd wherever oneDNN has it: AVX-512), then runs a training step and an
    inference. The loss, the training output, every parameter gradient and the inference
    output must match the reference within 1e-4 relative (max |ours - ref| / max |ref|, the
    parity tolerance of test_zoo_parity), and with a forced layout every convolution must
    really run on it. Each variant prints which kernels ran, so the log shows what was
    covered on this CPU.
*/
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/model_internal.h"
#include "tests/pf_test.h"

#define TOL 1e-4

typedef struct {
    const char *type;
    int scale;
    float res_scale;
} net_case;

static void make_cfg(pf_config *c, const net_case *k) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", k->type);
    c->scale = k->scale;
    /* widths: 32 makes NHWC differ from nChw16c; 24, 12 and 5 pad the blocked layouts */
    c->n_feats = 32;
    c->n_blocks = strcmp(k->type, "RRDBNet") ? 2 : 1;
    c->res_scale = k->res_scale;
    c->num_group = 1;
    c->squeeze_factor = 4;
    c->num_grow_ch = 16;
    c->fsrcnn_d = 24;
    c->fsrcnn_s = 5;
    c->fsrcnn_m = 1;
    c->srcnn_channels[1] = 24;
    c->srcnn_channels[2] = 12;
}

typedef struct {
    double loss;
    float *out, *grads, *infer;
    size_t n_out, n_params, n_infer;
    int convs, wino, gemm_or_ref;
    char impls[512];
} run_result;

static void free_result(run_result *r) {
    free(r->out);
    free(r->grads);
    free(r->infer);
    memset(r, 0, sizeof *r);
}

static const char *layout_name(pf_layout l) {
    switch (l) {
    case PF_LAYOUT_NCHW: return "nchw";
    case PF_LAYOUT_NCHW8C: return "nChw8c";
    case PF_LAYOUT_NCHW16C: return "nChw16c";
    case PF_LAYOUT_NHWC: return "nhwc";
    default: return "any";
    }
}

/* Adds impl to the comma-separated list s if it is not there yet. */
static void note_impl(char *s, size_t len, const char *impl) {
    if (strstr(s, impl)) return;
    size_t u = strlen(s);
    snprintf(s + u, len - u, "%s%s", u ? ", " : "", impl);
}

/* One training step and one inference of case k under (layout, algo); 0 or -1. */
static int run(const net_case *k, pf_layout layout, pf_conv_algo algo, run_result *r) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[1024];
    memset(r, 0, sizeof *r);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s x%d: %s", k->type, k->scale, err);
    if (!m) return -1;
    m->dnnl.force_layout = layout;
    m->dnnl.conv_algo = algo;
    pf_model_init(m, 7);
    int n = 2, h = 8, w = 6, s = k->scale;
    size_t nl = (size_t)n * h * w * 3, ng = nl * s * s;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)((i * 37 + 11) ^ (i >> 5));
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)((i * 53 + 7) ^ (i >> 4));
    r->n_out = ng;
    r->n_params = pf_model_num_params(m);
    r->n_infer = (size_t)h * w * 3 * s * s;
    r->out = malloc(ng * sizeof(float));
    r->grads = malloc(r->n_params * sizeof(float));
    r->infer = malloc(r->n_infer * sizeof(float));
    float loss = 0;
    int rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
    CHECK(rc == 0, "%s x%d %s: train step: %s", k->type, k->scale, layout_name(layout), err);
    if (rc == 0) {
        r->loss = loss;
        pf_model_train_output(m, n, r->out);
        memcpy(r->grads, pf_model_grads(m), r->n_params * sizeof(float));
        rc = pf_model_infer(m, lq, h, w, r->infer, err, sizeof err);
        CHECK(rc == 0, "%s x%d %s: inference: %s", k->type, k->scale, layout_name(layout), err);
    }
    for (int i = 0; rc == 0 && i < m->net.n_convs; i++) {
        const pf_conv *cs[2] = { &m->train_conv[i], &m->infer_conv[i] };
        for (int j = 0; j < 2; j++) {
            const pf_conv *c = cs[j];
            const char *impl = pf_conv_impl(c);
            r->convs++;
            r->wino += c->algo == dnnl_convolution_winograd;
            r->gemm_or_ref += strstr(impl, "gemm") || strstr(impl, "ref");
            note_impl(r->impls, sizeof r->impls, impl);
            if (layout != PF_LAYOUT_ANY)
                CHECK(c->src_block == pf_layout_block(layout, c->ic) &&
                          c->dst_block == pf_layout_block(layout, c->oc),
                      "%s x%d: %s %s runs on blocks %d -> %d, not the forced %s", k->type,
                      k->scale, j ? "inference" : "training", c->name, c->src_block,
                      c->dst_block, layout_name(layout));
        }
    }
    free(lq);
    free(gt);
    pf_model_destroy(&m);
    return rc;
}

/* max |a - b| / max(max |b|, 1e-6) */
static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0, den = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > num || d != d) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}

static void one_case(const net_case *k) {
    run_result ref;
    if (run(k, PF_LAYOUT_NCHW, PF_CONV_DIRECT, &ref)) {
        free_result(&ref);
        return;
    }
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    static const pf_conv_algo algos[] = { PF_CONV_DIRECT, PF_CONV_WINOGRAD };
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        for (size_t ai = 0; ai < 2; ai++) {
            pf_layout l = layouts[li];
            if (l == PF_LAYOUT_NCHW && algos[ai] == PF_CONV_DIRECT) continue; /* the reference */
            run_result r;
            if (run(k, l, algos[ai], &r) == 0) {
                const char *what = algos[ai] == PF_CONV_DIRECT ? "direct" : "winograd";
                double le = fabs(r.loss - ref.loss) / fabs(ref.loss);
                double oe = rel_err(r.out, ref.out, ref.n_out);
                double ie = rel_err(r.infer, ref.infer, ref.n_infer);
                double ge = 0;
                const char *gname = "";
                pf_config cfg;
                make_cfg(&cfg, k);
                char err[256];
                pf_model *m = pf_model_new(&cfg, err, sizeof err);
                for (int t = 0; m && t < pf_model_num_tensors(m); t++) {
                    const pf_param_info *ti = pf_model_tensor_info(m, t);
                    double e = rel_err(r.grads + ti->offset, ref.grads + ti->offset, ti->numel);
                    if (e > ge || e != e) {
                        ge = e;
                        gname = ti->name;
                    }
                    CHECK(e <= TOL, "%s x%d %s %s: gradient of %s: relative error %.3g", k->type,
                          k->scale, layout_name(l), what, ti->name, e);
                }
                CHECK(le <= TOL, "%s x%d %s %s: loss %.8g vs %.8g", k->type, k->scale,
                      layout_name(l), what, r.loss, ref.loss);
                CHECK(oe <= TOL, "%s x%d %s %s: training output: relative error %.3g", k->type,
                      k->scale, layout_name(l), what, oe);
                CHECK(ie <= TOL, "%s x%d %s %s: inference output: relative error %.3g",
                      k->type, k->scale, layout_name(l), what, ie);
                printf("%-9s x%d %-7s %-8s loss %.2e out %.2e infer %.2e grad %.2e (%s); "
                       "%d convs, %d winograd, %d gemm/ref: %s\n",
                       k->type, k->scale, layout_name(l), what, le, oe, ie, ge, gname, r.convs,
                       r.wino, r.gemm_or_ref, r.impls);
                pf_model_destroy(&m);
            }
            free_result(&r);
        }
    free_result(&ref);
}

int main(int argc, char **argv) {
    static const net_case cases[] = {
        { "EDSR", 2, 1.0f }, { "EDSR", 3, 0.5f }, { "EDSR", 4, 1.0f }, { "SRCNN", 3, 1.0f },
        { "FSRCNN", 3, 1.0f }, { "ESPCN", 2, 1.0f }, { "MSRResNet", 4, 1.0f },
        { "RCAN", 2, 0.5f }, { "RRDBNet", 2, 1.0f }, { "RRDBNet", 4, 1.0f },
    };
    printf("oneDNN %d.%d, effective ISA %d (dnnl_cpu_isa_t)\n", dnnl_version()->major,
           dnnl_version()->minor, (int)dnnl_get_effective_cpu_isa());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc < 2 || !strcmp(argv[1], cases[i].type)) one_case(&cases[i]);
    return pf_test_end("test_layouts");
}
