/*  test_conv_bf16 — bf16 mixed-precision convolutions (nn/cpu/conv_dnnl.h, dnnl_ctx.h
    pf_precision; issue 43), which must behave as torch.autocast("cpu", dtype=torch.bfloat16):
    input and weights rounded to bf16 (round to nearest even), fp32 accumulation, fp32 output
    and gradients.

    Layers (3 -> 16 k3; 16 -> 16 k3 bias + ReLU; 32 -> 32 k3 LeakyReLU; a residual with
    res_scale 0.5; stride 2 k4 pad 1 without bias; 1x1; 64 -> 64 k3), each on every forced
    activation layout (nchw, nChw8c, nChw16c, nhwc) and oneDNN's choice: forward,
    backward-data and backward-weights + bias of a bf16 layer against
      - a naive double convolution of the same inputs rounded to bf16 here (the strong check:
        they differ by fp32 accumulation alone, max|a - b| / max|b| <= 1e-5), and
      - the fp32 layer (the bound: max|a - b| / max|b| <= 2e-2).
    Every image network of the zoo (small), one training step and one inference in bf16:
    every kernel pf_model_precision_report names is a bf16 one, the loss and the inference
    stay within 2e-2 of fp32, the gradients within 0.25 (see check_model); BasicVSR,
    BasicVSR++ and EDVR one training step likewise (the deformable convolutions of their
    alignment stay fp32: they are not pf_conv layers).
    Without a bf16 unit (CPU or ONEDNN_MAX_CPU_ISA) all that exits 77 (skipped).

    `test_conv_bf16 refusal` (ctest entry test_conv_bf16.no_bf16_unit, run under
    ONEDNN_MAX_CPU_ISA=AVX512_CORE): pf_dnnl_bf16_isa finds no bf16 unit, pf_model_set_precision
    refuses bf16 naming the caller's key and "no bf16 unit", and fp32 still trains.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cpu/conv_dnnl.h"
#include "nn/model.h"
#include "tests/pf_test.h"

/* f32 -> bf16 -> f32, round to nearest even (NaN-free inputs). */
static float bf16r(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint64_t rng_state;
static float urand(void) {     /* uniform [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

typedef struct {
    const char *name;
    int ic, oc, k, stride, pad, bias, relu;
    float alpha, res_scale;      /* LeakyReLU slope; residual scale (0: not residual) */
} layer_case;

typedef struct {
    int n, h, w, oh, ow;
    float *src, *wt, *bias, *ident, *dd;       /* NCHW / OIHW inputs */
} inputs;

/* Outputs of one layer in NCHW / OIHW. */
typedef struct {
    double *dst, *dsrc, *dw, *db;
} outputs;

static void out_alloc(outputs *o, const layer_case *lc, const inputs *in) {
    o->dst = calloc((size_t)in->n * lc->oc * in->oh * in->ow, sizeof(double));
    o->dsrc = calloc((size_t)in->n * lc->ic * in->h * in->w, sizeof(double));
    o->dw = calloc((size_t)lc->oc * lc->ic * lc->k * lc->k, sizeof(double));
    o->db = calloc((size_t)lc->oc, sizeof(double));
}
static void out_free(outputs *o) {
    free(o->dst);
    free(o->dsrc);
    free(o->dw);
    free(o->db);
}

/* The naive reference in double on bf16-rounded src, weights and diff_dst (round: 1) or on
   the f32 values (round: 0). Forward: act(conv + bias), residual: ident + scale * that. */
static void reference(const layer_case *lc, const inputs *in, int round, outputs *o) {
    int n = in->n, h = in->h, w = in->w, oh = in->oh, ow = in->ow, k = lc->k;
#define R(x) (round ? (double)bf16r(x) : (double)(x))
    for (int b = 0; b < n; b++)
        for (int co = 0; co < lc->oc; co++)
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++) {
                    double s = lc->bias ? in->bias[co] : 0;
                    for (int ci = 0; ci < lc->ic; ci++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int iy = y * lc->stride - lc->pad + ky;
                                int ix = x * lc->stride - lc->pad + kx;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                                s += R(in->src[(((size_t)b * lc->ic + ci) * h + iy) * w + ix]) *
                                     R(in->wt[(((size_t)co * lc->ic + ci) * k + ky) * k + kx]);
                                size_t od = (((size_t)b * lc->oc + co) * oh + y) * ow + x;
                                double g = R(in->dd[od]);
                                o->dsrc[(((size_t)b * lc->ic + ci) * h + iy) * w + ix] +=
                                    g * R(in->wt[(((size_t)co * lc->ic + ci) * k + ky) * k +
                                                 kx]);
                                o->dw[(((size_t)co * lc->ic + ci) * k + ky) * k + kx] +=
                                    g * R(in->src[(((size_t)b * lc->ic + ci) * h + iy) * w +
                                                  ix]);
                            }
                    size_t od = (((size_t)b * lc->oc + co) * oh + y) * ow + x;
                    if (lc->relu && s < 0) s *= lc->alpha;
                    if (lc->res_scale != 0) s = in->ident[od] + lc->res_scale * s;
                    o->dst[od] = s;
                    o->db[co] += R(in->dd[od]);
                }
#undef R
}

/* NCHW (or OIHW-shaped C x H x W planes) <-> block b. */
static float *to_blk(const float *nchw, int n, int c, int h, int w, int b) {
    float *t = calloc(pf_blk_numel(n, c, h, w, b), sizeof(float));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    t[pf_blk_off(i, j, y, x, c, h, w, b)] =
                        nchw[(((size_t)i * c + j) * h + y) * w + x];
    return t;
}
static void from_blk(const float *t, int n, int c, int h, int w, int b, double *nchw) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    nchw[(((size_t)i * c + j) * h + y) * w + x] =
                        t[pf_blk_off(i, j, y, x, c, h, w, b)];
}

/* Runs the layer lc on ctx (its precision and forced layout) for inputs in; 0 or -1. The
   kernels' names go to impl. */
static int run_layer(pf_dnnl *ctx, const layer_case *lc, const inputs *in, outputs *o,
                     char *impl, size_t impl_len) {
    pf_conv c;
    char err[512];
    pf_conv_init(&c, lc->name, lc->ic, lc->oc, lc->k, lc->relu);
    pf_conv_set_geometry(&c, lc->stride, lc->pad, lc->bias);
    if (lc->relu && lc->alpha != 0) pf_conv_set_lrelu(&c, lc->alpha);
    if (lc->res_scale != 0) pf_conv_set_residual(&c, lc->res_scale);
    int dst_req = lc->res_scale != 0 ? 16 : -1;
    int rc = pf_conv_setup(&c, ctx, in->n, in->h, in->w, -1, dst_req, 1, 1, err, sizeof err);
    CHECK(rc == 0, "%s: setup: %s", lc->name, err);
    if (rc) return -1;
    int sb = c.src_block, db = c.dst_block;
    /* the bf16 mds map to the blocks of their f32 twins (pf_dnnl_block_of) */
    if (ctx->force_layout != PF_LAYOUT_ANY)
        CHECK(sb == pf_layout_block(ctx->force_layout, lc->ic) &&
                  db == pf_layout_block(ctx->force_layout, lc->oc),
              "%s: runs on blocks %d -> %d, not the forced layout's", lc->name, sb, db);
    else
        CHECK(sb > 0 && db > 0, "%s: blocks %d -> %d", lc->name, sb, db);
    float *src = to_blk(in->src, in->n, lc->ic, in->h, in->w, sb);
    float *dd = to_blk(in->dd, in->n, lc->oc, in->oh, in->ow, db);
    float *ident = to_blk(in->ident, in->n, lc->oc, in->oh, in->ow, db);
    float *dst = calloc(pf_blk_numel(in->n, lc->oc, in->oh, in->ow, db), sizeof(float));
    float *dsrc = calloc(pf_blk_numel(in->n, lc->ic, in->h, in->w, sb), sizeof(float));
    size_t nw = (size_t)lc->oc * lc->ic * lc->k * lc->k;
    float *dw = calloc(nw, sizeof(float)), *dbias = calloc((size_t)lc->oc, sizeof(float));
    rc = pf_conv_set_weights(&c, in->wt, in->bias, err, sizeof err);
    if (!rc)
        rc = lc->res_scale != 0 ? pf_conv_forward_residual(&c, src, ident, dst, err, sizeof err)
                                : pf_conv_forward(&c, src, dst, err, sizeof err);
    if (!rc) rc = pf_conv_backward_data(&c, dd, dsrc, err, sizeof err);
    if (!rc) rc = pf_conv_backward_weights(&c, src, dd, dw, dbias, err, sizeof err);
    CHECK(rc == 0, "%s: %s", lc->name, err);
    if (!rc) {
        from_blk(dst, in->n, lc->oc, in->oh, in->ow, db, o->dst);
        from_blk(dsrc, in->n, lc->ic, in->h, in->w, sb, o->dsrc);
        for (size_t i = 0; i < nw; i++) o->dw[i] = dw[i];
        for (int i = 0; i < lc->oc; i++) o->db[i] = lc->bias ? dbias[i] : 0;
        snprintf(impl, impl_len, "%s / %s / %s (blocks %d -> %d%s)", pf_conv_impl(&c),
                 pf_conv_impl_bwd_data(&c), pf_conv_impl_bwd_weights(&c), sb, db,
                 c.add_fused ? ", add fused" : c.add ? ", add apart" : "");
        CHECK(c.algo == dnnl_convolution_direct || ctx->prec_train != PF_PREC_BF16,
              "%s: a bf16 layer runs Winograd", lc->name);
    }
    free(src);
    free(dd);
    free(ident);
    free(dst);
    free(dsrc);
    free(dw);
    free(dbias);
    pf_conv_free(&c);
    return rc ? -1 : 0;
}

/* max|a - b| / max|b| over n values. */
static double rel_err(const double *a, const double *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    return den > 0 ? num / den : num;
}

/* The layouts each layer runs on: oneDNN's choice, then every forced one. */
static const struct {
    pf_layout l;
    const char *name;
} layouts[] = {
    { PF_LAYOUT_ANY, "any" }, { PF_LAYOUT_NCHW, "nchw" }, { PF_LAYOUT_NCHW8C, "nChw8c" },
    { PF_LAYOUT_NCHW16C, "nChw16c" }, { PF_LAYOUT_NHWC, "nhwc" },
};

static double worst_ref, worst_fp32;

static void check_case(pf_dnnl *c16, pf_dnnl *c32, const layer_case *lc, int li) {
    pf_layout layout = layouts[li].l;
    const char *lname = layouts[li].name;
    inputs in = { .n = 2, .h = 11, .w = 13 };
    in.oh = (in.h + 2 * lc->pad - lc->k) / lc->stride + 1;
    in.ow = (in.w + 2 * lc->pad - lc->k) / lc->stride + 1;
    size_t ns = (size_t)in.n * lc->ic * in.h * in.w, nd = (size_t)in.n * lc->oc * in.oh * in.ow;
    size_t nw = (size_t)lc->oc * lc->ic * lc->k * lc->k;
    in.src = malloc(ns * sizeof(float));
    in.wt = malloc(nw * sizeof(float));
    in.bias = malloc((size_t)lc->oc * sizeof(float));
    in.ident = malloc(nd * sizeof(float));
    in.dd = malloc(nd * sizeof(float));
    rng_state = (uint64_t)(lc->ic * 131 + lc->oc * 7 + lc->k);
    float ws = 1.0f / sqrtf((float)(lc->ic * lc->k * lc->k));
    for (size_t i = 0; i < ns; i++) in.src[i] = urand();
    for (size_t i = 0; i < nw; i++) in.wt[i] = urand() * ws;
    for (int i = 0; i < lc->oc; i++) in.bias[i] = urand() * ws;
    for (size_t i = 0; i < nd; i++) in.ident[i] = urand();
    for (size_t i = 0; i < nd; i++) in.dd[i] = urand();
    outputs ref, b16, f32;
    out_alloc(&ref, lc, &in);
    out_alloc(&b16, lc, &in);
    out_alloc(&f32, lc, &in);
    reference(lc, &in, 1, &ref);
    c16->force_layout = c32->force_layout = layout;
    char impl16[512] = "", impl32[512] = "";
    if (run_layer(c16, lc, &in, &b16, impl16, sizeof impl16) == 0 &&
        run_layer(c32, lc, &in, &f32, impl32, sizeof impl32) == 0) {
        const char *what[4] = { "forward", "backward-data", "backward-weights", "bias grad" };
        double *r[4] = { ref.dst, ref.dsrc, ref.dw, ref.db };
        double *a[4] = { b16.dst, b16.dsrc, b16.dw, b16.db };
        double *f[4] = { f32.dst, f32.dsrc, f32.dw, f32.db };
        size_t cnt[4] = { nd, ns, nw, lc->bias ? (size_t)lc->oc : 0 };
        printf("  %-12s %-8s bf16: %s\n", lc->name, lname, impl16);
        for (int d = 0; d < 4; d++) {
            if (!cnt[d]) continue;
            double e_ref = rel_err(a[d], r[d], cnt[d]), e_32 = rel_err(a[d], f[d], cnt[d]);
            worst_ref = fmax(worst_ref, e_ref);
            worst_fp32 = fmax(worst_fp32, e_32);
            printf("    %-16s vs bf16-rounded reference %.2e, vs fp32 layer %.2e\n", what[d],
                   e_ref, e_32);
            CHECK(e_ref <= 1e-5, "%s %s %s: bf16 differs from the reference on bf16-rounded "
                  "inputs by %.3g (max 1e-5)", lc->name, lname, what[d], e_ref);
            CHECK(e_32 <= 2e-2, "%s %s %s: bf16 differs from fp32 by %.3g (max 2e-2)",
                  lc->name, lname, what[d], e_32);
            /* the bf16 layer did round: it is closer to the rounded reference than fp32 is
               (bias grads excepted: they see the rounding of diff_dst alone) */
            if (d < 3)
                CHECK(rel_err(f[d], r[d], cnt[d]) > 10 * e_ref, "%s %s %s: the bf16 layer is "
                      "no closer to the bf16-rounded reference than fp32", lc->name,
                      lname, what[d]);
        }
    }
    out_free(&ref);
    out_free(&b16);
    out_free(&f32);
    free(in.src);
    free(in.wt);
    free(in.bias);
    free(in.ident);
    free(in.dd);
}

/* The networks trained one step in bf16, every image network of the zoo: EDSR (fused
   residual adds), SRCNN (9x9 and 5x5 on 3 channels), FSRCNN (PReLU, transposed conv as
   sub-pixel), ESPCN, MSRResNet (LeakyReLU, pixel shuffle x4), RCAN (channel attention 1x1s),
   RRDBNet (dense concatenations). */
typedef struct {
    const char *type;
    int scale, n_feats, n_blocks;
} net_case;
static const net_case nets[] = {
    { "EDSR", 2, 32, 2 }, { "SRCNN", 4, 16, 2 },     { "FSRCNN", 4, 16, 2 },
    { "ESPCN", 3, 16, 2 }, { "MSRResNet", 4, 16, 2 }, { "RCAN", 2, 16, 2 },
    { "RRDBNet", 4, 16, 1 },
};

static pf_model *make_net(const net_case *k, char *err, size_t errlen) {
    pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "%s", k->type);
    cfg.n_feats = k->n_feats;
    cfg.n_blocks = k->n_blocks;
    cfg.num_grow_ch = 8;
    cfg.num_group = 1;
    cfg.scale = k->scale;
    pf_model *m = pf_model_new(&cfg, err, errlen);
    if (m) pf_model_init(m, 3);
    return m;
}
static pf_model *edsr(char *err, size_t errlen) { return make_net(&nets[0], err, errlen); }

enum { MN = 2, MH = 12, MW = 10, MS = 2 };   /* MS: EDSR's scale, for the refusal case */

/* One train step and one inference of a fresh EDSR at precision prec; the loss, gradients,
   inference output and report come back. 0 or -1. */
static int model_step(const net_case *k, pf_precision prec, float *loss, float *grads,
                      float *infer, size_t *np, char *report, size_t rlen) {
    char err[1024];
    pf_model *m = make_net(k, err, sizeof err);
    CHECK(m != NULL, "%s: %s", k->type, err);
    if (!m) return -1;
    int rc = pf_model_set_precision(m, prec, prec, "test.precision", err, sizeof err);
    CHECK(rc == 0, "%s %s: %s", k->type, pf_precision_name(prec), err);
    size_t nl = (size_t)MN * MH * MW * 3, ng = nl * k->scale * k->scale;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)((i * 37 + 11) ^ (i >> 5));
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)((i * 53 + 7) ^ (i >> 4));
    if (!rc) {
        rc = pf_model_train_step(m, lq, gt, MN, MH, MW, loss, err, sizeof err);
        CHECK(rc == 0, "%s %s: train step: %s", k->type, pf_precision_name(prec), err);
    }
    if (!rc) {
        *np = pf_model_num_params(m);
        if (grads) memcpy(grads, pf_model_grads(m), *np * sizeof(float));
        rc = pf_model_infer(m, lq, MH, MW, infer, err, sizeof err);
        CHECK(rc == 0, "%s %s: inference: %s", k->type, pf_precision_name(prec), err);
    }
    if (!rc) pf_model_precision_report(m, report, rlen);
    free(lq);
    free(gt);
    pf_model_destroy(&m);
    return rc;
}

/* The kernels of plan `plan` ("train", "eval") in a report: "<plan> bf16 on <unit>: N
   convolutions k1 (c1), k2 (c2)"; every ki must name a bf16 (or AMX) kernel. Returns how many. */
static int check_report_kernels(const char *report, const char *plan) {
    char key[32];
    snprintf(key, sizeof key, "%s bf16 on ", plan);
    const char *p = strstr(report, key);
    CHECK(p != NULL, "report '%s' has no '%s'", report, key);
    if (!p) return 0;
    p = strstr(p, "convolutions ");
    CHECK(p != NULL, "report '%s': %s names no kernels", report, plan);
    if (!p) return 0;
    p += strlen("convolutions ");
    int n = 0;
    while (*p && *p != ';') {
        char name[128];
        size_t l = strcspn(p, " ;");
        snprintf(name, sizeof name, "%.*s", (int)l, p);
        /* oneDNN names its AMX kernels by the ISA alone ("...:avx512_core_amx"), which only
           runs bf16 / int8 */
        CHECK(strstr(name, "bf16") != NULL || strstr(name, "amx") != NULL,
              "%s kernel '%s' is not a bf16 one (report '%s')",
              plan, name, report);
        n++;
        p = strchr(p, ')');          /* past " (count)" */
        if (!p) break;
        p++;
        while (*p == ',' || *p == ' ') p++;
    }
    return n;
}

/* One step of network k in bf16 and in fp32: every kernel the report names is a bf16 one (the
   layout planner, which ranks kernels with pf_conv_probe, found them). */
static void check_model(const net_case *k) {
    float l16 = 0, l32 = 0;
    size_t np = 0;
    size_t no = (size_t)MH * MW * 3 * k->scale * k->scale;
    float *g16 = malloc(1 << 24), *g32 = malloc(1 << 24);
    float *i16 = malloc(no * sizeof(float)), *i32 = malloc(no * sizeof(float));
    char r16[1024] = "", r32[1024] = "";
    if (model_step(k, PF_PREC_BF16, &l16, g16, i16, &np, r16, sizeof r16) == 0 &&
        model_step(k, PF_PREC_FP32, &l32, g32, i32, &np, r32, sizeof r32) == 0) {
        printf("  %s bf16: %s\n  %s fp32: %s\n", k->type, r16, k->type, r32);
        CHECK(strstr(r16, "train bf16 on ") && strstr(r16, "eval bf16 on "), "%s report '%s'",
              k->type, r16);
        int nk = check_report_kernels(r16, "train") + check_report_kernels(r16, "eval");
        CHECK(nk >= 2, "report '%s' names %d kernels", r16, nk);
        CHECK(strstr(r32, "train fp32") && strstr(r32, "eval fp32") && !strstr(r32, "bf16 on"),
              "fp32 report '%s'", r32);
        double el = fabs((double)l16 - l32) / fabs((double)l32);
        double *a = malloc(np * sizeof(double)), *b = malloc(np * sizeof(double));
        for (size_t i = 0; i < np; i++) {
            a[i] = g16[i];
            b[i] = g32[i];
        }
        double eg = rel_err(a, b, np);
        char err[512];
        pf_model *m = make_net(k, err, sizeof err);
        for (int t = 0; m && t < pf_model_num_tensors(m); t++) {
            const pf_param_info *pi = pf_model_tensor_info(m, t);
            printf("    grad %-28s rel %.2e\n", pi->name,
                   rel_err(a + pi->offset, b + pi->offset, pi->numel));
        }
        pf_model_destroy(&m);
        free(a);
        free(b);
        a = malloc(no * sizeof(double));
        b = malloc(no * sizeof(double));
        for (size_t i = 0; i < no; i++) {
            a[i] = i16[i];
            b[i] = i32[i];
        }
        double ei = rel_err(a, b, no);
        free(a);
        free(b);
        printf("  %s step: loss bf16 %.7f fp32 %.7f (rel %.2e); grads rel %.2e; inference "
               "rel %.2e\n", k->type, l16, l32, el, eg, ei);
        CHECK(el <= 2e-2, "%s loss bf16 %.7g against fp32 %.7g", k->type, l16, l32);
        /* (MSRResNet's loss can match to the last bit: its body is initialised at 0.1 scale
           and its output is mostly the bilinear base) */
        CHECK(eg > 0, "%s: bf16 gradients equal fp32's: no rounding happened", k->type);
        /* The gradients' bound is looser: with an L1 loss d out is +-1/N, and a weight
           gradient sums such terms with signs that cancel, so its relative change is many
           times the 2^-9 of one rounding (torch.autocast's alike); EDSR: 0.03 to 0.13 per
           tensor. The layer checks above bound each direction tightly. */
        CHECK(eg <= 0.25, "%s gradients differ from fp32 by %.3g", k->type, eg);
        CHECK(ei <= 2e-2, "%s inference differs from fp32 by %.3g", k->type, ei);
    }
    free(g16);
    free(g32);
    free(i16);
    free(i32);
}

/* A video network (small: 16 features, 2 blocks, 3-frame clips or windows) one training step
   in bf16 and in fp32: bf16 kernels only, loss within 2e-2, gradients within 0.25. */
static void check_video(const char *type) {
    float loss[2] = { 0, 0 };
    float *g[2] = { NULL, NULL };
    size_t np = 0;
    char report[1024] = "";
    for (int p = 0; p < 2; p++) {
        pf_config cfg;
        char err[1024];
        pf_config_defaults(&cfg);
        snprintf(cfg.model_type, sizeof cfg.model_type, "%s", type);
        cfg.scale = 4;
        cfg.n_feats = 16;
        cfg.n_blocks = 2;
        cfg.edvr_num_frame = 3;
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s: %s", type, err);
        if (!m) break;
        pf_model_init(m, 1);
        int n = 1, h = 16, w = 16, fi = pf_model_frames(m), fo = pf_model_out_frames(m);
        size_t nl = (size_t)n * fi * h * w * 3, ng = (size_t)n * fo * h * w * 3 * 16;
        uint8_t *lq = malloc(nl), *gt = malloc(ng);
        for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)((i * 37 + 11) ^ (i >> 5));
        for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)((i * 53 + 7) ^ (i >> 4));
        pf_precision prec = p ? PF_PREC_BF16 : PF_PREC_FP32;
        int rc = pf_model_set_precision(m, prec, prec, "test.precision", err, sizeof err);
        if (!rc) rc = pf_model_train_step(m, lq, gt, n, h, w, &loss[p], err, sizeof err);
        CHECK(rc == 0, "%s %s: %s", type, pf_precision_name(prec), err);
        if (!rc) {
            np = pf_model_num_params(m);
            g[p] = malloc(np * sizeof(float));
            memcpy(g[p], pf_model_grads(m), np * sizeof(float));
            if (p) pf_model_precision_report(m, report, sizeof report);
        }
        free(lq);
        free(gt);
        pf_model_destroy(&m);
    }
    if (g[0] && g[1]) {
        double *a = malloc(np * sizeof(double)), *b = malloc(np * sizeof(double));
        for (size_t i = 0; i < np; i++) {
            a[i] = g[1][i];
            b[i] = g[0][i];
        }
        double eg = rel_err(a, b, np), el = fabs((double)loss[1] - loss[0]) / fabs(loss[0]);
        printf("  %s bf16: %s\n  %s step: loss bf16 %.7f fp32 %.7f (rel %.2e); grads rel "
               "%.2e\n", type, report, type, loss[1], loss[0], el, eg);
        CHECK(check_report_kernels(report, "train") >= 1, "%s: report '%s'", type, report);
        CHECK(el <= 2e-2, "%s loss bf16 %.7g against fp32 %.7g", type, loss[1], loss[0]);
        CHECK(eg > 0 && eg <= 0.25, "%s gradients differ from fp32 by %.3g", type, eg);
        free(a);
        free(b);
    }
    free(g[0]);
    free(g[1]);
}

/* Under ONEDNN_MAX_CPU_ISA=AVX512_CORE: bf16 refused, fp32 fine. */
static int refusal(void) {
    char isa[32], err[1024] = "", report[1024];
    CHECK(pf_dnnl_bf16_isa(isa, sizeof isa) == NULL, "a bf16 unit (%s) below the cap; is "
          "ONEDNN_MAX_CPU_ISA set?", isa);
    pf_model *m = edsr(err, sizeof err);
    CHECK(m != NULL, "EDSR: %s", err);
    if (!m) return pf_test_end("test_conv_bf16 refusal");
    int rc = pf_model_set_precision(m, PF_PREC_BF16, PF_PREC_FP32, "train_cfg.precision", err,
                                    sizeof err);
    printf("  refused: %s\n", err);
    CHECK(rc == -1, "bf16 accepted without a bf16 unit");
    CHECK(strstr(err, "train_cfg.precision") && strstr(err, "no bf16 unit"),
          "message '%s' names neither the key nor 'no bf16 unit'", err);
    rc = pf_model_set_precision(m, PF_PREC_FP32, PF_PREC_BF16, "test_cfg.precision", err,
                                sizeof err);
    CHECK(rc == -1 && strstr(err, "test_cfg.precision"), "inference bf16: rc %d '%s'", rc,
          err);
    CHECK(pf_model_set_precision(m, PF_PREC_FP32, PF_PREC_FP32, "x", err, sizeof err) == 0,
          "fp32 refused: %s", err);
    size_t nl = (size_t)MN * MH * MW * 3, ng = nl * MS * MS;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)(i * 53 + 7);
    float loss = -1;
    rc = pf_model_train_step(m, lq, gt, MN, MH, MW, &loss, err, sizeof err);
    CHECK(rc == 0 && loss > 0 && isfinite(loss), "fp32 step: rc %d loss %g: %s", rc, loss, err);
    pf_model_precision_report(m, report, sizeof report);
    printf("  %s\n", report);
    CHECK(strstr(report, "train fp32") && strstr(report, "no bf16 unit"), "report '%s'",
          report);
    free(lq);
    free(gt);
    pf_model_destroy(&m);
    return pf_test_end("test_conv_bf16 refusal");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "refusal")) return refusal();
    char isa[32], err[512];
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    if (!unit) {
        printf("no bf16 unit (oneDNN ISA %s): skipped\n", isa);
        return 77;
    }
    printf("bf16 unit: %s\n", unit);
    pf_dnnl c16, c32;
    if (pf_dnnl_init(&c16, err, sizeof err) || pf_dnnl_init(&c32, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    CHECK(pf_dnnl_set_precision(&c16, PF_PREC_BF16, PF_PREC_BF16, "test", err, sizeof err) == 0,
          "%s", err);
    const layer_case cases[] = {
        { "3->16 k3", 3, 16, 3, 1, 1, 1, 0, 0, 0 },
        { "16->16 relu", 16, 16, 3, 1, 1, 1, 1, 0, 0 },
        { "32->32 lrelu", 32, 32, 3, 1, 1, 1, 1, 0.2f, 0 },
        { "residual 0.5", 32, 32, 3, 1, 1, 1, 0, 0, 0.5f },
        { "s2 k4 nobias", 16, 32, 4, 2, 1, 0, 0, 0, 0 },
        { "1x1", 32, 16, 1, 1, 0, 1, 0, 0, 0 },
        { "64->64 k3", 64, 64, 3, 1, 1, 1, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int j = 0; j < (int)(sizeof layouts / sizeof layouts[0]); j++)
            check_case(&c16, &c32, &cases[i], j);
    printf("worst: %.2e against the bf16-rounded reference, %.2e against fp32\n", worst_ref,
           worst_fp32);
    pf_dnnl_free(&c16);
    pf_dnnl_free(&c32);
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) check_model(&nets[i]);
    check_video("BasicVSR");
    check_video("BasicVSRPlusPlus");
    check_video("EDVR");
    return pf_test_end("test_conv_bf16");
}
