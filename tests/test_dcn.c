/*  test_dcn — the modulated deformable convolution layer (nn/cpu/dcn.h, PF_G_DCN) on its own:
    forward against a naive loop in double written here from torchvision's definition
    (bilinear sample zero when y <= -1, y >= H, x <= -1 or x >= W, each neighbour outside the
    image zero), every gradient (x, offset, mask, weight, bias) against central differences of
    that loop (exact for the linear inputs; for an offset, only where its sample coordinate is
    more than 1e-3 from an integer, the kinks of bilinear sampling), in several layout
    combinations of x, offset, mask and output; the description's errors (deform_groups not
    dividing the channels, offset or mask of the wrong shape) naming the layer; ONNX export
    refusing it. Offsets are drawn integer (taps exactly on pixels and on the -1 / H borders),
    fractional, and far outside the image; a fifth of the mask exactly 0.
    `test_dcn torch` (ctest test_dcn.torch): the same cases against torchvision.ops.
    deform_conv2d in float64 with autograd (tests/reference/dcn_ref.py): output and every
    gradient within 1e-4 of the largest reference value of each; 77 without torch.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/cpu/dcn.h"
#include "nn/net.h"
#include "nn/onnx_export.h"
#include "tests/pf_test.h"
#include "tests/pf_test_blk.h"
#include "tests/pf_test_ref.h"

typedef struct {
    pf_dcn_shape s;
    int bias;
    size_t nx, noff, nm, nw, ny;
    float *x, *off, *mask, *w, *b, *a;      /* plain NCHW; a: d loss / d out */
} dcase;

#define N_CASES 5
static const int CASES[N_CASES][12] = {
    /* n cin h w cout k stride pad dil groups dg bias */
    { 2, 4, 5, 6, 4, 3, 1, 1, 1, 1, 1, 1 },
    { 1, 8, 6, 5, 6, 3, 1, 1, 1, 2, 2, 1 },
    { 2, 8, 6, 8, 4, 3, 2, 1, 1, 1, 4, 0 },
    { 1, 4, 7, 6, 4, 3, 1, 2, 2, 1, 2, 1 },
    { 2, 8, 4, 4, 8, 3, 1, 1, 1, 4, 4, 1 },
};

static float *alloc(size_t n) { return calloc(n + 1, sizeof(float)); }

static void draw(dcase *c, int which) {
    const int *v = CASES[which];
    c->s = (pf_dcn_shape){ .n = v[0], .cin = v[1], .h = v[2], .w = v[3], .cout = v[4],
                           .k = v[5], .stride = v[6], .pad = v[7], .dil = v[8], .groups = v[9],
                           .dg = v[10] };
    c->bias = v[11];
    pf_dcn_shape *s = &c->s;
    s->ho = pf_dcn_out_size(s->h, s->k, s->stride, s->pad, s->dil);
    s->wo = pf_dcn_out_size(s->w, s->k, s->stride, s->pad, s->dil);
    size_t P = (size_t)s->ho * s->wo, kk = (size_t)s->k * s->k;
    c->nx = (size_t)s->n * s->cin * s->h * s->w;
    c->noff = (size_t)s->n * 2 * s->dg * kk * P;
    c->nm = (size_t)s->n * s->dg * kk * P;
    c->nw = (size_t)s->cout * (s->cin / s->groups) * kk;
    c->ny = (size_t)s->n * s->cout * P;
    c->x = alloc(c->nx), c->off = alloc(c->noff), c->mask = alloc(c->nm);
    c->w = alloc(c->nw), c->b = alloc((size_t)s->cout), c->a = alloc(c->ny);
    pf_rng r = pf_rng_make(42, (uint64_t)which, 3);
    for (size_t i = 0; i < c->nx; i++) c->x[i] = (float)(2 * pf_rng_uniform(&r) - 1);
    for (size_t i = 0; i < c->noff; i++) {
        int kind = (int)pf_rng_below(&r, 3), base = (int)pf_rng_below(&r, 7) - 3;
        float fr = (float)(0.15 + 0.7 * pf_rng_uniform(&r));
        c->off[i] = kind == 0 ? (float)base            /* integer: on pixels and borders */
                  : kind == 1 ? (float)base + fr       /* fractional */
                              : (float)((int)pf_rng_below(&r, 2) ? 1 : -1) *
                                    ((float)s->h + (float)pf_rng_below(&r, 3) - 1.0f + fr);
    }
    for (size_t i = 0; i < c->nm; i++)
        c->mask[i] = pf_rng_below(&r, 5) == 0 ? 0.0f : (float)pf_rng_uniform(&r);
    double bound = 1.0 / sqrt((double)s->cin * kk);
    for (size_t i = 0; i < c->nw; i++) c->w[i] = (float)((2 * pf_rng_uniform(&r) - 1) * bound);
    for (int i = 0; i < s->cout; i++) c->b[i] = c->bias ? (float)(pf_rng_uniform(&r) - 0.5) : 0;
    for (size_t i = 0; i < c->ny; i++) c->a[i] = (float)(2 * pf_rng_uniform(&r) - 1);
}

static void free_case(dcase *c) {
    free(c->x), free(c->off), free(c->mask), free(c->w), free(c->b), free(c->a);
}

/* torchvision's bilinear sample of plane p (h x w) at (y, x), in double. */
static double sample(const float *p, int h, int w, double y, double x) {
    if (y <= -1 || y >= h || x <= -1 || x >= w) return 0;
    double v = 0;
    int y0 = (int)floor(y), x0 = (int)floor(x);
    for (int yy = y0; yy <= y0 + 1; yy++)
        for (int xx = x0; xx <= x0 + 1; xx++)
            if (yy >= 0 && yy < h && xx >= 0 && xx < w)
                v += (1 - fabs(y - yy)) * (1 - fabs(x - xx)) * p[yy * w + xx];
    return v;
}

/* The loss sum(a * out) of the naive forward in double; out (c->ny doubles) when not NULL. */
static double naive(const dcase *c, double *out) {
    const pf_dcn_shape *s = &c->s;
    int kk = s->k * s->k, cpg = s->cin / s->groups, opg = s->cout / s->groups;
    int cpd = s->cin / s->dg, P = s->ho * s->wo;
    double loss = 0;
    for (int n = 0; n < s->n; n++)
        for (int o = 0; o < s->cout; o++)
            for (int oy = 0; oy < s->ho; oy++)
                for (int ox = 0; ox < s->wo; ox++) {
                    double acc = c->bias ? c->b[o] : 0;
                    for (int cl = 0; cl < cpg; cl++) {
                        int ch = o / opg * cpg + cl, d = ch / cpd;
                        const float *p = c->x + ((size_t)n * s->cin + ch) * s->h * s->w;
                        for (int t = 0; t < kk; t++) {
                            size_t q = (size_t)oy * s->wo + ox;
                            size_t oi = ((size_t)n * 2 * s->dg * kk + 2 * (d * kk + t)) * P + q;
                            double y = oy * s->stride - s->pad + t / s->k * s->dil +
                                       (double)c->off[oi];
                            double x = ox * s->stride - s->pad + t % s->k * s->dil +
                                       (double)c->off[oi + (size_t)P];
                            double m = c->mask[((size_t)n * s->dg * kk + d * kk + t) * P + q];
                            acc += c->w[((size_t)o * cpg + cl) * kk + t] * m *
                                   sample(p, s->h, s->w, y, x);
                        }
                    }
                    size_t yi = (((size_t)n * s->cout + o) * s->ho + oy) * s->wo + ox;
                    if (out) out[yi] = acc;
                    loss += acc * c->a[yi];
                }
    return loss;
}

/* What the layer gives, plain: out, dx, doff, dmask, dw, db. */
typedef struct {
    float *v[6];
} dres;

static const char *RES_NAME[6] = { "out", "dx", "doff", "dmask", "dw", "db" };

static size_t res_numel(const dcase *c, int i) {
    size_t n[6] = { c->ny, c->nx, c->noff, c->nm, c->nw, (size_t)c->s.cout };
    return n[i];
}

/* A block for layout l (0 nchw, 1 nChw8c, 2 nChw16c, 3 nhwc) of a tensor of ch channels. */
static int blk(int l, int ch) { return l == 0 ? 1 : l == 1 ? 8 : l == 2 ? 16 : ch; }

/* Run the layer with the layouts lay[] (blk's codes) of x, offset, mask and output: r gets
   its output and every gradient, plain. 0 or -1. */
static int run_layer(pf_dnnl *ctx, const dcase *c, const int lay[4], dres *r) {
    const pf_dcn_shape *s = &c->s;
    int kk = s->k * s->k, cx = s->cin, co = 2 * s->dg * kk, cm = s->dg * kk;
    int bx = blk(lay[0], cx), bo = blk(lay[1], co), bm = blk(lay[2], cm);
    int by = blk(lay[3], s->cout);
    size_t nx = pf_blk_numel(s->n, cx, s->h, s->w, bx);
    size_t no = pf_blk_numel(s->n, co, s->ho, s->wo, bo);
    size_t nm = pf_blk_numel(s->n, cm, s->ho, s->wo, bm);
    size_t ny = pf_blk_numel(s->n, s->cout, s->ho, s->wo, by);
    float *x = alloc(nx), *off = alloc(no), *m = alloc(nm), *y = alloc(ny), *dy = alloc(ny);
    float *dx = alloc(nx), *doff = alloc(no), *dm = alloc(nm);
    pf_dcn l;
    char err[512];
    int rc = -1;
    pf_test_blk_pack(x, c->x, s->n, cx, s->h, s->w, bx);
    pf_test_blk_pack(off, c->off, s->n, co, s->ho, s->wo, bo);
    pf_test_blk_pack(m, c->mask, s->n, cm, s->ho, s->wo, bm);
    pf_test_blk_pack(dy, c->a, s->n, s->cout, s->ho, s->wo, by);
    for (int i = 0; i < 6; i++) r->v[i] = alloc(res_numel(c, i));
    if (pf_dcn_setup(&l, ctx, "dcn", *s, 1, err, sizeof err)) {
        CHECK(0, "setup: %s", err);
        goto done;
    }
    if (pf_dcn_forward(&l, c->w, c->bias ? c->b : NULL, x, bx, off, bo, m, bm, y, by, err,
                       sizeof err) ||
        pf_dcn_backward(&l, c->w, r->v[4], c->bias ? r->v[5] : NULL, dy, by, x, bx, off, bo, m,
                        bm, dx, doff, dm, err, sizeof err)) {
        CHECK(0, "dcn: %s", err);
    } else {
        pf_test_blk_unpack(r->v[0], y, s->n, s->cout, s->ho, s->wo, by);
        pf_test_blk_unpack(r->v[1], dx, s->n, cx, s->h, s->w, bx);
        pf_test_blk_unpack(r->v[2], doff, s->n, co, s->ho, s->wo, bo);
        pf_test_blk_unpack(r->v[3], dm, s->n, cm, s->ho, s->wo, bm);
        rc = 0;
    }
    pf_dcn_free(&l);
done:
    free(x), free(off), free(m), free(y), free(dy), free(dx), free(doff), free(dm);
    return rc;
}

/* Central difference of the naive loss in element i of array p; NAN where it is not smooth
   (offset coordinate within 1e-3 of an integer). */
static double fd(dcase *c, float *p, size_t i, int is_off) {
    if (is_off) {
        double fr = c->off[i] - floor(c->off[i]);
        if (fr < 1e-3 || fr > 1 - 1e-3) return NAN;     /* base positions are integers */
    }
    float keep = p[i];
    double e = is_off ? 1e-3 : 0.5;    /* the loss is linear in x, mask, weight, bias */
    p[i] = (float)(keep + e);
    double e1 = (double)p[i] - keep;
    double lp = naive(c, NULL);
    p[i] = (float)(keep - e);
    double e2 = keep - (double)p[i];
    double lm = naive(c, NULL);
    p[i] = keep;
    return (lp - lm) / (e1 + e2);
}

/* Every gradient of r against finite differences, the output against the naive loop. */
static void check_against_naive(dcase *c, const dres *r, const char *label) {
    double *out = malloc(c->ny * sizeof(double));
    naive(c, out);
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < c->ny; i++) scale = fmax(scale, fabs(out[i]));
    for (size_t i = 0; i < c->ny; i++) worst = fmax(worst, fabs(r->v[0][i] - out[i]));
    CHECK(worst <= 1e-5 * scale, "%s: out off by %.3g of %.3g", label, worst, scale);
    free(out);
    float *arr[5] = { c->x, c->off, c->mask, c->w, c->b };
    for (int k = 1; k < 6; k++) {
        if (k == 5 && !c->bias) continue;
        size_t n = res_numel(c, k);
        double *want = malloc(n * sizeof(double));
        double sc = 1e-30, bad = 0;
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
            want[i] = fd(c, arr[k - 1], i, k == 2);
            if (!isnan(want[i])) sc = fmax(sc, fabs(want[i])), used++;
        }
        for (size_t i = 0; i < n; i++)
            if (!isnan(want[i])) bad = fmax(bad, fabs(r->v[k][i] - want[i]));
        CHECK(bad <= 1e-4 * sc, "%s: %s off by %.3g of %.3g (%zu finite differences)", label,
              RES_NAME[k], bad, sc, used);
        free(want);
    }
}

static const int LAYOUTS[4][4] = { { 0, 0, 0, 0 }, { 1, 2, 0, 1 }, { 2, 1, 2, 3 }, { 3, 3, 3, 2 } };

static void free_res(dres *r) {
    for (int i = 0; i < 6; i++) free(r->v[i]);
}

/* The description's errors: deform_groups 4 of 6 channels, an offset of 37 channels, a mask
   at half the size, each naming the layer; and ONNX export refusing a valid one. */
static void check_errors(void) {
    int hw[64];
    char err[512];
    for (int bad = 0; bad < 3; bad++) {
        pf_net g;
        pf_net_init(&g);
        snprintf(g.type, sizeof g.type, "err");
        int x = pf_net_node(&g, PF_G_INPUT, NULL, 0, 6, 1, 1, 0);
        int dg = bad == 0 ? 4 : 2;     /* 4 does not divide 6 */
        int off = pf_net_node(&g, PF_G_ZERO, NULL, 0, 2 * dg * 9 + (bad == 1), 1, 1, 0);
        int m = pf_net_node(&g, PF_G_ZERO, NULL, 0, dg * 9, 1, bad == 2 ? 2 : 1, 0);
        g.input = x;
        g.output = pf_net_add_dcn(&g, "align.dcn_pack", x, off, m, 6, 6, 3, 1, 1, 1, 1, dg, 1);
        int rc = g.output >= 0 && g.n_t <= 32 ? pf_net_check(&g, 8, 8, hw, err, sizeof err) : 0;
        const char *want[3] = { "deform_groups 4 does not divide its 6 input channels",
                                "offset of 37 channels", "mask of 18 channels" };
        CHECK(rc == -1 && strstr(err, "align.dcn_pack") && strstr(err, want[bad]),
              "bad %d: rc %d, '%s'", bad, rc, err);
        if (bad == 2) {
            g.t[m].div = 1;
            void *buf = NULL;
            size_t len;
            rc = pf_onnx_export(&g, NULL, &buf, &len, err, sizeof err);
            CHECK(rc != 0 && strstr(err, "dcn") && strstr(err, "no ONNX mapping"),
                  "ONNX export of a DCN: rc %d, '%s'", rc, err);
            free(buf);
        }
        pf_net_free(&g);
    }
}

static void put(const char *dir, const char *name, const float *p, size_t n) {
    pf_ref_write_file(dir, name, p, n * sizeof(float));
}

int main(int argc, char **argv) {
    int torch = argc > 1 && !strcmp(argv[1], "torch");
    if (torch && !pf_ref_have("test_dcn torch", "numpy, torch, torchvision")) return 77;
    char dir[] = "/tmp/pf_dcn.XXXXXX", name[128], err[512];
    FILE *f = torch ? pf_ref_open_cases(dir) : NULL;
    if (torch && !f) return pf_test_end("test_dcn torch");
    pf_dnnl ctx;
    CHECK(pf_dnnl_init(&ctx, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < N_CASES; k++) {
        dcase c;
        draw(&c, k);
        const int *v = CASES[k];
        if (f) {
            for (int i = 0; i < 12; i++) fprintf(f, "%d ", v[i]);
            fprintf(f, "\n");
            float *in[6] = { c.x, c.off, c.mask, c.w, c.b, c.a };
            size_t nin[6] = { c.nx, c.noff, c.nm, c.nw, (size_t)c.s.cout, c.ny };
            static const char *iname[6] = { "x", "offset", "mask", "weight", "bias", "a" };
            for (int i = 0; i < 6; i++) {
                snprintf(name, sizeof name, "case%d.%s.f32", k, iname[i]);
                put(dir, name, in[i], nin[i]);
            }
        }
        for (int l = 0; l < 4; l++) {
            dres r;
            char label[96];
            snprintf(label, sizeof label, "case %d layouts %d", k, l);
            if (run_layer(&ctx, &c, LAYOUTS[l], &r) == 0) {
                if (!torch) check_against_naive(&c, &r, label);
                for (int i = 0; f && i < 6; i++) {
                    snprintf(name, sizeof name, "case%d.L%d.%s.f32", k, l, RES_NAME[i]);
                    put(dir, name, r.v[i], res_numel(&c, i));
                }
            }
            free_res(&r);
        }
        free_case(&c);
    }
    pf_dnnl_free(&ctx);
    if (torch) {
        CHECK(fclose(f) == 0, "params.txt");
        pf_ref_run("dcn_ref.py", dir);
        return pf_test_end("test_dcn torch");
    }
    check_errors();
    return pf_test_end("test_dcn");
}
