/*  test_nn_conv — nn/cpu/conv_dnnl against a naive C convolution (plain loops below, the
    oracle): forward (with and without the fused ReLU), backward-data, backward-weights and the
    bias gradient, on odd shapes (N = 2, channels 3..16, H and W not multiples of 8, kernels
    1, 3, 5, 9), through whatever blocked layouts oneDNN picks. */
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "nn/cpu/conv_dnnl.h"
#include "tests/pf_test.h"

/* NCHW naive reference, stride 1, zero padding k/2. */
static void naive_fwd(double *y, const float *x, const float *wt, const float *b, int n, int ic,
                      int oc, int h, int w, int k, int relu) {
    int p = k / 2;
    for (int in = 0; in < n; in++)
        for (int o = 0; o < oc; o++)
            for (int yy = 0; yy < h; yy++)
                for (int xx = 0; xx < w; xx++) {
                    double acc = b[o];
                    for (int i = 0; i < ic; i++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int sy = yy + ky - p, sx = xx + kx - p;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                acc += (double)x[((in * ic + i) * h + sy) * w + sx] *
                                       wt[((o * ic + i) * k + ky) * k + kx];
                            }
                    if (relu && acc < 0) acc = 0;
                    y[((in * oc + o) * h + yy) * w + xx] = acc;
                }
}

static void naive_bwd(double *dx, double *dw, double *db, const float *x, const float *wt,
                      const float *dy, int n, int ic, int oc, int h, int w, int k) {
    int p = k / 2;
    memset(dx, 0, sizeof(double) * n * ic * h * w);
    memset(dw, 0, sizeof(double) * oc * ic * k * k);
    memset(db, 0, sizeof(double) * oc);
    for (int in = 0; in < n; in++)
        for (int o = 0; o < oc; o++)
            for (int yy = 0; yy < h; yy++)
                for (int xx = 0; xx < w; xx++) {
                    double g = dy[((in * oc + o) * h + yy) * w + xx];
                    db[o] += g;
                    for (int i = 0; i < ic; i++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int sy = yy + ky - p, sx = xx + kx - p;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                size_t xi = ((size_t)(in * ic + i) * h + sy) * w + sx;
                                size_t wi = ((size_t)(o * ic + i) * k + ky) * k + kx;
                                dx[xi] += g * wt[wi];
                                dw[wi] += g * x[xi];
                            }
                }
}

static void pack(float *dst, const float *nchw, int n, int c, int h, int w, int b) {
    memset(dst, 0, pf_blk_numel(n, c, h, w, b) * sizeof(float));
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    dst[pf_blk_off(in, ic, y, x, c, h, w, b)] = nchw[((in * c + ic) * h + y) * w + x];
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

static void check_shape(pf_dnnl *ctx, int n, int ic, int oc, int h, int w, int k, int relu) {
    char err[512], name[64];
    snprintf(name, sizeof name, "conv n%d ic%d oc%d %dx%d k%d%s", n, ic, oc, h, w, k,
             relu ? " relu" : "");
    pf_conv c;
    pf_conv_init(&c, name, ic, oc, k, relu);
    int rc = pf_conv_setup(&c, ctx, n, h, w, -1, -1, 1, 1, err, sizeof err);
    CHECK(rc == 0, "%s: setup: %s", name, err);
    if (rc) return;
    pf_rng r = pf_rng_make(n * 1000 + ic * 100 + oc, h * 100 + w, k);
    size_t nx = (size_t)n * ic * h * w, ny = (size_t)n * oc * h * w, nw = (size_t)oc * ic * k * k;
    float *x = malloc(nx * 4), *wt = malloc(nw * 4), *b = malloc(oc * 4), *dy = malloc(ny * 4);
    fill(x, nx, &r);
    fill(wt, nw, &r);
    fill(b, oc, &r);
    fill(dy, ny, &r);
    float *xb = malloc(pf_blk_numel(n, ic, h, w, c.src_block) * 4);
    float *yb = malloc(pf_blk_numel(n, oc, h, w, c.dst_block) * 4);
    float *dyb = malloc(pf_blk_numel(n, oc, h, w, c.dst_block) * 4);
    float *dxb = malloc(pf_blk_numel(n, ic, h, w, c.src_block) * 4);
    float *dw = malloc(nw * 4), *db = malloc(oc * 4);
    double *yr = malloc(ny * 8), *dxr = malloc(nx * 8), *dwr = malloc(nw * 8), *dbr = malloc(oc * 8);
    pack(xb, x, n, ic, h, w, c.src_block);
    pack(dyb, dy, n, oc, h, w, c.dst_block);
    CHECK(pf_conv_set_weights(&c, wt, b, err, sizeof err) == 0, "%s: %s", name, err);
    CHECK(pf_conv_forward(&c, xb, yb, err, sizeof err) == 0, "%s: %s", name, err);
    naive_fwd(yr, x, wt, b, n, ic, oc, h, w, k, relu);
    double e = unpack_err(yb, yr, n, oc, h, w, c.dst_block);
    CHECK(e < 1e-5, "%s: forward relative error %.3g (blocks %d -> %d, %s)", name, e,
          c.src_block, c.dst_block, pf_conv_impl(&c));
    CHECK(pf_conv_backward_data(&c, dyb, dxb, err, sizeof err) == 0, "%s: %s", name, err);
    CHECK(pf_conv_backward_weights(&c, xb, dyb, dw, db, err, sizeof err) == 0, "%s: %s", name,
          err);
    naive_bwd(dxr, dwr, dbr, x, wt, dy, n, ic, oc, h, w, k);
    e = unpack_err(dxb, dxr, n, ic, h, w, c.src_block);
    CHECK(e < 1e-5, "%s: backward-data relative error %.3g", name, e);
    e = max_rel(dw, dwr, nw);
    CHECK(e < 1e-5, "%s: weight gradient relative error %.3g", name, e);
    e = max_rel(db, dbr, (size_t)oc);
    CHECK(e < 1e-5, "%s: bias gradient relative error %.3g", name, e);
    /* The same request again keeps the primitives (no rebuild). (Asking for the blocks
       oneDNN chose under `any` explicitly is another request: it may get other kernels.) */
    dnnl_primitive_t fwd = c.fwd;
    CHECK(pf_conv_setup(&c, ctx, n, h, w, -1, -1, 1, 1, err, sizeof err) == 0 && c.fwd == fwd,
          "%s: primitives rebuilt for an unchanged request", name);
    free(x); free(wt); free(b); free(dy); free(xb); free(yb); free(dyb); free(dxb);
    free(dw); free(db); free(yr); free(dxr); free(dwr); free(dbr);
    pf_conv_free(&c);
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
    pf_dnnl_free(&ctx);
    return pf_test_end("test_nn_conv");
}
