/*  test_conv_cuda_host — nn/cuda/conv_cudnn.h's layer geometry (pf_cuconv_set_geometry: stride,
    padding, bias) as the CUDA executor's host code drives it, against the CPU executor's
    convolution (nn/cpu/conv_dnnl.h, oneDNN, plain NCHW): forward, backward-data,
    backward-filter and backward-bias, accumulate included, on UNetDiscriminatorSN's shapes
    (conv0: k 3 s 1 p 1 with bias; conv1..3: k 4 s 2 p 1 without bias, odd sizes: floor) and
    VGGStyleDiscriminator's k 3 s 2 p 1. Here pf_cuconv is tests/cuda_host/host_cudnn.c's
    stand-in (ref_ops.c's naive convolutions, which bench/gpu/gpu_check compares cuDNN with on
    a GPU, these shapes included), so this checks the stand-in's and the reference's geometry
    against oneDNN, and the layer's bias-free contract. Tolerance: the CUDA tests' 1e-4
    (max |a - b| / max |b| per tensor).

    bf16 mode (ctx->bf16; nn/cuda/conv_bf16.c's casts, built with host_ops.c's cast stand-ins
    here, around host_cudnn.c's raw bf16 convolutions), against oneDNN in fp32: (1) on inputs
    rounded to bf16 by this file's own rounding (frexp / rint, not the bit trick of ref_ops.c
    and ops.cu), y, dx and dw within half a bf16 ulp of oneDNN's result plus 1e-5 of the
    tensor's largest value (the one output rounding to bf16, and fp32 summation order); dx and
    dw exactly bf16 values; the bias gradient (fp32 in bf16 mode) within 1e-4; (2) on the
    unrounded inputs within 2e-2 (bench/gpu/gpu_check's TOL_LOW for bf16); accumulate adds
    exactly. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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

/* bf16 round to nearest even of a normal or zero float, from its exponent and rint (the
   default rounding mode rounds ties to even): 8 significant bits. */
static float round_bf16(float f) {
    if (f == 0.0f) return f;
    int e;
    double m = frexp((double)f, &e);   /* |m| in [0.5, 1) */
    return (float)ldexp(rint(ldexp(m, 8)), e - 8);
}
static void round_all(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = round_bf16(src[i]);
}
/* the worst |got - ref| in units of (2^-8 |ref - off| + 1e-5 max |ref|): half a bf16 ulp
   (8 significant bits: the spacing in [2^e, 2^(e+1)) is 2^(e-7)) of the value rounded, plus
   summation order; off: the bias of each output channel, which the bf16 layer adds after
   rounding (NULL: none), plane floats each. <= 1 passes. */
static double bf16_ulps(const float *got, const float *ref, size_t n, const float *off,
                        size_t plane, int channels) {
    double big = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)ref[i]) > big) big = fabs((double)ref[i]);
    for (size_t i = 0; i < n; i++) {
        double o = off ? off[(i / plane) % (size_t)channels] : 0.0;
        double bound = ldexp(fabs((double)ref[i] - o), -8) + 1e-5 * big;
        double u = fabs((double)got[i] - ref[i]) / bound;
        if (!(u <= worst)) worst = u;
    }
    return worst;
}
/* values that are not bf16 (low 16 bits set) */
static size_t not_bf16(const float *x, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        bad += (u & 0xffffu) != 0;
    }
    return bad;
}

static void check_bf16(pf_dnnl *ctx, shape s) {
    char label[128], err[512] = "";
    int oh = (s.h + 2 * s.pad - s.k) / s.stride + 1, ow = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    snprintf(label, sizeof label, "bf16 N%d C%d->%d %dx%d k%d s%d p%d%s", s.n, s.ic, s.oc, s.h,
             s.w, s.k, s.stride, s.pad, s.has_bias ? "" : " no bias");
    size_t nx = (size_t)s.n * s.ic * s.h * s.w, ny = (size_t)s.n * s.oc * oh * ow;
    size_t nw = (size_t)s.oc * s.ic * s.k * s.k;
    float *x = malloc(nx * 4), *wt = malloc(nw * 4), *b = malloc(s.oc * 4), *dy = malloc(ny * 4);
    float *xr = malloc(nx * 4), *wr = malloc(nw * 4), *dyr = malloc(ny * 4);
    /* [0]: oneDNN on the unrounded inputs, [1]: on the rounded ones, [2]: the bf16 layer */
    float *y[3], *dx[3], *dw[3], *db[3];
    for (int i = 0; i < 3; i++)
        y[i] = malloc(ny * 4), dx[i] = malloc(nx * 4), dw[i] = malloc(nw * 4),
        db[i] = malloc(s.oc * 4);
    pf_rng r = pf_rng_make(43, (uint64_t)s.h * 100 + s.w, (uint64_t)s.ic * 10 + s.stride);
    fill(x, nx, &r);
    fill(wt, nw, &r);
    fill(b, s.oc, &r);
    fill(dy, ny, &r);
    round_all(xr, x, nx);
    round_all(wr, wt, nw);
    round_all(dyr, dy, ny);
    int rc = cpu_conv(ctx, &s, x, wt, b, dy, y[0], dx[0], dw[0], db[0], err, sizeof err) ||
             cpu_conv(ctx, &s, xr, wr, b, dyr, y[1], dx[1], dw[1], db[1], err, sizeof err);
    CHECK(rc == 0, "%s: CPU layer: %s", label, err);

    pf_cudnn *cx = pf_cudnn_new(0, 0, 0, 0, err, sizeof err);
    CHECK(cx != NULL, "%s: context: %s", label, err);
    if (!cx) return;
    cx->bf16 = 1;
    pf_cuconv c;
    pf_cuconv_init(&c, label, s.ic, s.oc, s.k);
    pf_cuconv_set_geometry(&c, s.stride, s.pad, s.has_bias);
    rc = pf_cuconv_setup(&c, cx, s.n, s.h, s.w, 1, err, sizeof err) ||
         pf_cuconv_forward(&c, x, wt, b, y[2], err, sizeof err) ||
         pf_cuconv_backward_data(&c, wt, dy, dx[2], 0, err, sizeof err) ||
         pf_cuconv_backward_filter(&c, x, dy, dw[2], 0, err, sizeof err) ||
         (s.has_bias && pf_cuconv_backward_bias(&c, dy, db[2], 0, err, sizeof err));
    CHECK(rc == 0 && c.bf16, "%s: CUDA layer: %s", label, err);
    double u[3], e[3];
    u[0] = bf16_ulps(y[2], y[1], ny, s.has_bias ? b : NULL, (size_t)oh * ow, s.oc);
    u[1] = bf16_ulps(dx[2], dx[1], nx, NULL, 1, 1);
    u[2] = bf16_ulps(dw[2], dw[1], nw, NULL, 1, 1);
    e[0] = max_rel_err(y[2], y[0], ny);
    e[1] = max_rel_err(dx[2], dx[0], nx);
    e[2] = max_rel_err(dw[2], dw[0], nw);
    const char *what[3] = {"forward", "backward-data", "backward-filter"};
    for (int i = 0; i < 3; i++) {
        CHECK(u[i] <= 1.0, "%s: %s: %.3g x (half a bf16 ulp + 1e-5 max) from oneDNN on the "
              "rounded inputs", label, what[i], u[i]);
        CHECK(e[i] <= 2e-2, "%s: %s: max rel err %.3g from fp32", label, what[i], e[i]);
    }
    size_t nb = not_bf16(dx[2], nx) + not_bf16(dw[2], nw) + (s.has_bias ? 0 : not_bf16(y[2], ny));
    CHECK(nb == 0, "%s: %zu values of y / dx / dw are not bf16", label, nb);
    if (s.has_bias) {
        double eb = max_rel_err(db[2], db[0], s.oc);
        CHECK(eb <= TOL, "%s: backward-bias (fp32): %.3g", label, eb);
    }
    printf("%-44s half-ulp units y %.3f dx %.3f dw %.3f; vs fp32 %.2e %.2e %.2e\n", label,
           u[0], u[1], u[2], e[0], e[1], e[2]);
    /* accumulate = 1 adds the same values again: exactly twice */
    memcpy(dx[1], dx[2], nx * 4);
    memcpy(dw[1], dw[2], nw * 4);
    rc = pf_cuconv_backward_data(&c, wt, dy, dx[2], 1, err, sizeof err) ||
         pf_cuconv_backward_filter(&c, x, dy, dw[2], 1, err, sizeof err);
    size_t off = 0;
    for (size_t i = 0; i < nx; i++) off += dx[2][i] != 2.0f * dx[1][i];
    for (size_t i = 0; i < nw; i++) off += dw[2][i] != 2.0f * dw[1][i];
    CHECK(rc == 0 && off == 0, "%s: accumulate: %zu values not doubled (%s)", label, off, err);
    pf_cuconv_free(&c);
    pf_cudnn_destroy(&cx);
    free(x), free(wt), free(b), free(dy), free(xr), free(wr), free(dyr);
    for (int i = 0; i < 3; i++) free(y[i]), free(dx[i]), free(dw[i]), free(db[i]);
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
    check_bf16(&ctx, (shape){2, 3, 16, 24, 19, 3, 1, 1, 1});
    check_bf16(&ctx, (shape){2, 16, 32, 24, 18, 4, 2, 1, 0});
    check_bf16(&ctx, (shape){2, 32, 16, 13, 11, 3, 1, 1, 1});   /* 288-term sums */
    check_bf16(&ctx, (shape){1, 8, 12, 13, 11, 4, 2, 1, 0});
    pf_dnnl_free(&ctx);
    return pf_test_end("test_conv_cuda_host");
}
