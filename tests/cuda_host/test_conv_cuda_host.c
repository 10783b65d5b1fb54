/*  test_conv_cuda_host — nn/cuda/conv_cudnn.h's layer geometry (pf_cuconv_set_geometry: stride,
    padding, bias) as the CUDA executor's host code drives it, against the CPU executor's
    convolution (nn/cpu/conv_dnnl.h, oneDNN, plain NCHW): forward, backward-data,
    backward-filter and backward-bias, accumulate included, on UNetDiscriminatorSN's shapes
    (conv0: k 3 s 1 p 1 with bias; conv1..3: k 4 s 2 p 1 without bias, odd sizes: floor) and
    VGGStyleDiscriminator's k 3 s 2 p 1. Here pf_cuconv is tests/cuda_host/host_cudnn.c's
    stand-in (ref_ops.c's naive convolutions, which bench/gpu/gpu_check compares cuDNN with on
    a GPU, these shapes included), so this checks the stand-in's and the reference's geometry
    against oneDNN, and the layer's bias-free contract. Tolerance: the CUDA tests' 1e-4
    (max |a - b| / max |b| per tensor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "nn/cpu/conv_dnnl.h"
#include "nn/cuda/conv_cudnn.h"
#include "tests/pf_test.h"

#define TOL 1e-4

static double max_rel_err(const float *got, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= num)) num = d;   /* a NaN sticks */
        if (fabs((double)ref[i]) > den) den = fabs((double)ref[i]);
    }
    return den > 0 ? num / den : num;
}

static void fill(float *p, size_t n, pf_rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(2.0 * pf_rng_uniform(r) - 1.0);
}

typedef struct {
    int n, ic, oc, h, w, k, stride, pad, has_bias;
} shape;

/* The CPU layer's outputs: y, dx, dw, db (db untouched without a bias). */
static int cpu_conv(pf_dnnl *ctx, const shape *s, const float *x, const float *wt,
                    const float *b, const float *dy, float *y, float *dx, float *dw, float *db,
                    char *err, size_t errlen) {
    pf_conv c;
    pf_conv_init(&c, "cpu", s->ic, s->oc, s->k, 0);
    pf_conv_set_geometry(&c, s->stride, s->pad, s->has_bias);
    int rc = pf_conv_setup(&c, ctx, s->n, s->h, s->w, 1, 1, 1, 1, err, errlen) ||
             pf_conv_set_weights(&c, wt, s->has_bias ? b : NULL, err, errlen) ||
             pf_conv_forward(&c, x, y, err, errlen) ||
             pf_conv_backward_data(&c, dy, dx, err, errlen) ||
             pf_conv_backward_weights(&c, x, dy, dw, s->has_bias ? db : NULL, err, errlen);
    pf_conv_free(&c);
    return rc;
}

static void check(pf_dnnl *ctx, shape s) {
    char label[128], err[512] = "";
    int oh = (s.h + 2 * s.pad - s.k) / s.stride + 1, ow = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    snprintf(label, sizeof label, "N%d C%d->%d %dx%d k%d s%d p%d%s", s.n, s.ic, s.oc, s.h, s.w,
             s.k, s.stride, s.pad, s.has_bias ? "" : " no bias");
    size_t nx = (size_t)s.n * s.ic * s.h * s.w, ny = (size_t)s.n * s.oc * oh * ow;
    size_t nw = (size_t)s.oc * s.ic * s.k * s.k;
    float *x = malloc(nx * 4), *wt = malloc(nw * 4), *b = malloc(s.oc * 4), *dy = malloc(ny * 4);
    float *y[2] = {malloc(ny * 4), malloc(ny * 4)}, *dx[2] = {malloc(nx * 4), malloc(nx * 4)};
    float *dw[2] = {malloc(nw * 4), malloc(nw * 4)}, *db[2] = {malloc(s.oc * 4), malloc(s.oc * 4)};
    pf_rng r = pf_rng_make(41, (uint64_t)s.h * 100 + s.w, (uint64_t)s.k * 10 + s.stride);
    fill(x, nx, &r);
    fill(wt, nw, &r);
    fill(b, s.oc, &r);
    fill(dy, ny, &r);
    for (int o = 0; o < s.oc; o++) db[0][o] = db[1][o] = 7.0f;   /* a bias-free layer leaves it */
    int rc = cpu_conv(ctx, &s, x, wt, b, dy, y[0], dx[0], dw[0], db[0], err, sizeof err);
    CHECK(rc == 0, "%s: CPU layer: %s", label, err);

    pf_cuconv c;
    pf_cuconv_init(&c, label, s.ic, s.oc, s.k);
    pf_cuconv_set_geometry(&c, s.stride, s.pad, s.has_bias);
    rc = pf_cuconv_setup(&c, NULL, s.n, s.h, s.w, 1, err, sizeof err) ||
         pf_cuconv_forward(&c, x, wt, b, y[1], err, sizeof err) ||
         pf_cuconv_backward_data(&c, wt, dy, dx[1], 0, err, sizeof err) ||
         pf_cuconv_backward_filter(&c, x, dy, dw[1], 0, err, sizeof err) ||
         (s.has_bias && pf_cuconv_backward_bias(&c, dy, db[1], 0, err, sizeof err));
    CHECK(rc == 0, "%s: CUDA layer: %s", label, err);
    double e;
    CHECK((e = max_rel_err(y[1], y[0], ny)) <= TOL, "%s: forward: %.3g", label, e);
    CHECK((e = max_rel_err(dx[1], dx[0], nx)) <= TOL, "%s: backward-data: %.3g", label, e);
    CHECK((e = max_rel_err(dw[1], dw[0], nw)) <= TOL, "%s: backward-filter: %.3g", label, e);
    CHECK((e = max_rel_err(db[1], db[0], s.oc)) <= TOL, "%s: backward-bias: %.3g", label, e);
    if (!s.has_bias) {   /* no bias gradient to take */
        CHECK(pf_cuconv_backward_bias(&c, dy, db[1], 0, err, sizeof err) == -1,
              "%s: backward_bias of a bias-free layer accepted", label);
    }
    /* accumulate = 1 adds: the second pass doubles the gradients */
    rc = pf_cuconv_backward_data(&c, wt, dy, dx[1], 1, err, sizeof err) ||
         pf_cuconv_backward_filter(&c, x, dy, dw[1], 1, err, sizeof err);
    for (size_t i = 0; i < nx; i++) dx[0][i] *= 2.0f;
    for (size_t i = 0; i < nw; i++) dw[0][i] *= 2.0f;
    CHECK(rc == 0 && max_rel_err(dx[1], dx[0], nx) <= TOL && max_rel_err(dw[1], dw[0], nw) <= TOL,
          "%s: accumulate", label);
    pf_cuconv_free(&c);
    free(x), free(wt), free(b), free(dy);
    for (int i = 0; i < 2; i++) free(y[i]), free(dx[i]), free(dw[i]), free(db[i]);
}

int main(void) {
    pf_dnnl ctx;
    char err[256];
    int rc = pf_dnnl_init(&ctx, err, sizeof err);
    CHECK(rc == 0, "oneDNN: %s", err);
    if (rc) return pf_test_end("test_conv_cuda_host");
    check(&ctx, (shape){2, 3, 16, 24, 19, 3, 1, 1, 1});   /* UNetDiscriminatorSN conv0 */
    check(&ctx, (shape){2, 16, 32, 24, 18, 4, 2, 1, 0});  /* its conv1 (k4 s2 p1, no bias) */
    check(&ctx, (shape){1, 8, 12, 13, 11, 4, 2, 1, 0});   /* odd sizes: floor */
    check(&ctx, (shape){2, 8, 16, 21, 18, 3, 2, 1, 1});   /* VGGStyleDiscriminator's k3 s2 */
    check(&ctx, (shape){2, 16, 16, 12, 10, 3, 1, 1, 0});  /* UNetDiscriminatorSN's k3, no bias */
    pf_dnnl_free(&ctx);
    return pf_test_end("test_conv_cuda_host");
}
