/*  test_nn_conv — nn/cpu/conv_dnnl against a naive C convolution (plain loops below, the
    oracle): forward (with and without the fused ReLU), backward-data, backward-weights and the
    bias gradient, on odd shapes (N = 2, channels 3..16, H and W not multiples of 8, kernels
    1, 3, 5, 9), through whatever blocked layouts oneDNN picks; and strided layers
    (pf_conv_set_geometry: k 3 and k 4, stride 2, padding 1, with and without bias, as the GAN
    discriminators', odd sizes included: H_out = floor((H + 2 pad - k) / stride) + 1). */
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "nn/cpu/conv_dnnl.h"
#include "tests/pf_test.h"
#include "tests/pf_test_blk.h"

/* The layer's geometry: kernel, stride, zero padding on each side; output size. */
typedef struct {
    int k, s, p;
    int oh, ow;     /* (h + 2 p - k) / s + 1 */
} geom;

/* NCHW naive reference: y[o][Y][X] = b[o] + sum x[i][s Y + ky - p][s X + kx - p] w[o][i][ky][kx]
   (zero outside; b NULL: no bias). */
static void naive_fwd(double *y, const float *x, const float *wt, const float *b, int n, int ic,
                      int oc, int h, int w, geom g, int relu) {
    int k = g.k, p = g.p;
    for (int in = 0; in < n; in++)
        for (int o = 0; o < oc; o++)
            for (int yy = 0; yy < g.oh; yy++)
                for (int xx = 0; xx < g.ow; xx++) {
                    double acc = b ? b[o] : 0.0;
                    for (int i = 0; i < ic; i++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int sy = g.s * yy + ky - p, sx = g.s * xx + kx - p;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                acc += (double)x[((in * ic + i) * h + sy) * w + sx] *
                                       wt[((o * ic + i) * k + ky) * k + kx];
                            }
                    if (relu && acc < 0) acc = 0;
                    y[((in * oc + o) * g.oh + yy) * g.ow + xx] = acc;
                }
}

static void naive_bwd(double *dx, double *dw, double *db, const float *x, const float *wt,
                      const float *dy, int n, int ic, int oc, int h, int w, geom gm) {
    int k = gm.k, p = gm.p;
    memset(dx, 0, sizeof(double) * n * ic * h * w);
    memset(dw, 0, sizeof(double) * oc * ic * k * k);
    memset(db, 0, sizeof(double) * oc);
    for (int in = 0; in < n; in++)
        for (int o = 0; o < oc; o++)
            for (int yy = 0; yy < gm.oh; yy++)
                for (int xx = 0; xx < gm.ow; xx++) {
                    double g = dy[((in * oc + o) * gm.oh + yy) * gm.ow + xx];
                    db[o] += g;
                    for (int i = 0; i < ic; i++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int sy = gm.s * yy + ky - p, sx = gm.s * xx + kx - p;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                size_t xi = ((size_t)(in * ic + i) * h + sy) * w + sx;
                                size_t wi = ((size_t)(o * ic + i) * k + ky) * k + kx;
                                dx[xi] += g * wt[wi];
                                dw[wi] += g * x[xi];
                            }
                }
}

static double unpack_err(const float *blk, const double *ref, int n, int c, int h, int w, int b) {
    double num = 0, den = 1e-30;
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    double r = ref[((in * c + ic) * h + y) * w + x];
                    double d = fabs(blk[pf_blk_off(in, ic, y, x, c, h, w, b)] - r);
                    if (d > num) num = d;
                    if (fabs(r) > den) den = fabs(r);
                }
    return num / den;
}

static double max_rel(const float *a, const double *ref, size_t n) {
    double num = 0, den = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - ref[i]);
        if (d > num) num = d;
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return num / den;
}

static void fill(float *p, size_t n, pf_rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(2.0 * pf_rng_uniform(r) - 1.0);
}

/* A layer of geometry (k, stride, pad), with bias or not, against the naive loops. */
static void check_layer(pf_dnnl *ctx, int n, int ic, int oc, int h, int w, geom g, int bias,
                        int relu) {
    char err[512], name[96];
    int k = g.k;
    g.oh = (h + 2 * g.p - k) / g.s + 1;
    g.ow = (w + 2 * g.p - k) / g.s + 1;
    snprintf(name, sizeof name, "conv n%d ic%d oc%d %dx%d k%d s%d p%d%s%s", n, ic, oc, h, w, k,
             g.s, g.p, bias ? "" : " no bias", relu ? " relu" : "");
    pf_conv c;
    pf_conv_init(&c, name, ic, oc, k, relu);
    pf_conv_set_geometry(&c, g.s, g.p, bias);
    int rc = pf_conv_setup(&c, ctx, n, h, w, -1, -1, 1, 1, err, sizeof err);
    CHECK(rc == 0, "%s: setup: %s", name, err);
    if (rc) return;
    CHECK(c.oh == g.oh && c.ow == g.ow, "%s: output %d x %d, want %d x %d", name, c.oh, c.ow,
          g.oh, g.ow);
    pf_rng r = pf_rng_make(n * 1000 + ic * 100 + oc, h * 100 + w, k);
    size_t nx = (size_t)n * ic * h * w, ny = (size_t)n * oc * g.oh * g.ow;
    size_t nw = (size_t)oc * ic * k * k;
    float *x = malloc(nx * 4), *wt = malloc(nw * 4), *b = malloc(oc * 4), *dy = malloc(ny * 4);
    fill(x, nx, &r);
    fill(wt, nw, &r);
    fill(b, oc, &r);
    fill(dy, ny, &r);
    float *xb = malloc(pf_blk_numel(n, ic, h, w, c.src_block) * 4);
    float *yb = malloc(pf_blk_numel(n, oc, g.oh, g.ow, c.dst_block) * 4);
    float *dyb = malloc(pf_blk_numel(n, oc, g.oh, g.ow, c.dst_block) * 4);
    float *dxb = malloc(pf_blk_numel(n, ic, h, w, c.src_block) * 4);
    float *dw = malloc(nw * 4), *db = malloc(oc * 4);
    double *yr = malloc(ny * 8), *dxr = malloc(nx * 8), *dwr = malloc(nw * 8), *dbr = malloc(oc * 8);
    for (int o = 0; o < oc; o++) db[o] = 7.0f;     /* a layer without bias leaves it */
    pf_test_blk_pack(xb, x, n, ic, h, w, c.src_block);
    pf_test_blk_pack(dyb, dy, n, oc, g.oh, g.ow, c.dst_block);
    CHECK(pf_conv_set_weights(&c, wt, bias ? b : NULL, err, sizeof err) == 0, "%s: %s", name,
          err);
    CHECK(pf_conv_forward(&c, xb, yb, err, sizeof err) == 0, "%s: %s", name, err);
    naive_fwd(yr, x, wt, bias ? b : NULL, n, ic, oc, h, w, g, relu);
    double e = unpack_err(yb, yr, n, oc, g.oh, g.ow, c.dst_block);
    CHECK(e < 1e-5, "%s: forward relative error %.3g (blocks %d -> %d, %s)", name, e,
          c.src_block, c.dst_block, pf_conv_impl(&c));
    CHECK(pf_conv_backward_data(&c, dyb, dxb, err, sizeof err) == 0, "%s: %s", name, err);
    CHECK(pf_conv_backward_weights(&c, xb, dyb, dw, bias ? db : NULL, err, sizeof err) == 0,
          "%s: %s", name, err);
    naive_bwd(dxr, dwr, dbr, x, wt, dy, n, ic, oc, h, w, g);
    e = unpack_err(dxb, dxr, n, ic, h, w, c.src_block);
    CHECK(e < 1e-5, "%s: backward-data relative error %.3g", name, e);
    e = max_rel(dw, dwr, nw);
    CHECK(e < 1e-5, "%s: weight gradient relative error %.3g", name, e);
    if (bias) {
        e = max_rel(db, dbr, (size_t)oc);
        CHECK(e < 1e-5, "%s: bias gradient relative error %.3g", name, e);
    } else {
        CHECK(db[0] == 7.0f && db[oc - 1] == 7.0f, "%s: a bias gradient written", name);
    }
    /* The same request again keeps the primitives (no rebuild). (Asking for the blocks
       oneDNN chose under `any` explicitly is another request: it may get other kernels.) */
    dnnl_primitive_t fwd = c.fwd;
    CHECK(pf_conv_setup(&c, ctx, n, h, w, -1, -1, 1, 1, err, sizeof err) == 0 && c.fwd == fwd,
          "%s: primitives rebuilt for an unchanged request", name);
    free(x); free(wt); free(b); free(dy); free(xb); free(yb); free(dyb); free(dxb);
    free(dw); free(db); free(yr); free(dxr); free(dwr); free(dbr);
    pf_conv_free(&c);
}

/* The default layer: stride 1, padding k / 2, with bias. */
static void check_shape(pf_dnnl *ctx, int n, int ic, int oc, int h, int w, int k, int relu) {
    check_layer(ctx, n, ic, oc, h, w, (geom){ k, 1, k / 2, 0, 0 }, 1, relu);
}

int main(void) {
    pf_dnnl ctx;
    char err[256];
    if (pf_dnnl_init(&ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    check_shape(&ctx, 2, 3, 8, 7, 9, 3, 0);    /* conv_first-like: plain NCHW input */
    check_shape(&ctx, 2, 8, 8, 11, 5, 3, 1);   /* blocked both sides, fused ReLU */
    check_shape(&ctx, 2, 16, 3, 9, 13, 3, 0);  /* conv_last-like: 3 outputs, padded block */
    check_shape(&ctx, 2, 5, 12, 6, 10, 5, 0);  /* channels not multiples of 8 */
    check_shape(&ctx, 2, 3, 16, 10, 7, 9, 1);  /* SRCNN conv1 */
    check_shape(&ctx, 2, 16, 8, 9, 7, 1, 1);   /* SRCNN conv2 */
    check_shape(&ctx, 2, 8, 3, 12, 11, 5, 0);  /* SRCNN conv3 */
    check_shape(&ctx, 2, 8, 32, 5, 6, 3, 0);   /* upsample conv 8 -> 4 * 8 */
    check_shape(&ctx, 1, 13, 7, 17, 3, 3, 1);  /* odd everything, N = 1 */
    /* strided, as the discriminators' (VGGStyleDiscriminator conv0_1, UNetDiscriminatorSN
       conv1..3: k 4 s 2 p 1 without bias; k 3 s 2 p 1) */
    const geom k3s2 = { 3, 2, 1, 0, 0 }, k4s2 = { 4, 2, 1, 0, 0 };
    check_layer(&ctx, 2, 3, 8, 8, 10, k3s2, 1, 0);
    check_layer(&ctx, 2, 8, 16, 12, 6, k4s2, 0, 1);
    check_layer(&ctx, 2, 16, 16, 6, 8, k3s2, 0, 0);
    check_layer(&ctx, 2, 5, 12, 10, 14, k4s2, 1, 0);
    check_layer(&ctx, 1, 13, 7, 9, 7, k3s2, 1, 1);  /* odd sizes: floor */
    check_layer(&ctx, 1, 7, 9, 11, 5, k4s2, 0, 0);
    pf_dnnl_free(&ctx);
    return pf_test_end("test_nn_conv");
}
