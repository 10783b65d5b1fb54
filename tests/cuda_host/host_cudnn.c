/*  host_cudnn — stand-ins for nn/cuda/conv_cudnn.h on the host: tests/cuda_host/ref_ops.c's
    naive convolutions in double (the layer's stride and zero padding, the references gpu_check compares
    cuDNN with), independent of nn/cpu/ops.c's kernels. cuDNN is a library, not
    PixFlow's code, so both builds of tests/cuda_host use these (host_ops.c's naive kernels, or
    nn/cuda/ops.cu's real ones under tests/cuda_emu).

    bf16 (ctx->bf16 at setup): the layer's own bf16 code runs, nn/cuda/conv_bf16.c (the casts
    and scratch, the kernels of either build), around the raw bf16 convolutions below, which
    stand in for cuDNN's on CUDNN_DATA_BFLOAT16 tensors: read the bf16 patterns exactly,
    accumulate in double (cuDNN: fp32), write bf16 rounded to nearest even. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "nn/cuda/conv_cudnn.h"
#include "tests/cuda_host/ref_ops.h"

size_t cudnnGetVersion(void) {
    return CUDNN_VERSION;
}

pf_cudnn *pf_cudnn_new(cudaStream_t stream, int allow_tf32, int deterministic, int benchmark,
                       char *err, size_t errlen) {
    (void)err, (void)errlen;
    pf_cudnn *c = calloc(1, sizeof *c);
    if (c) {
        c->stream = stream;
        c->allow_tf32 = allow_tf32;
        c->deterministic = deterministic;
        c->benchmark = benchmark;
        c->bf16 = 0;
    }
    return c;
}
void pf_cudnn_destroy(pf_cudnn **c) {
    free(*c);
    *c = NULL;
}

/* ---- convolution: ref_ops.c's, stride and padding as the layer's ---- */
void pf_cuconv_init(pf_cuconv *c, const char *name, int ic, int oc, int k) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ic = ic;
    c->oc = oc;
    c->k = k;
    pf_cuconv_set_geometry(c, 1, k / 2, 1);
}
int pf_cuconv_setup(pf_cuconv *c, pf_cudnn *ctx, int n, int h, int w, int training, char *err,
                    size_t errlen) {
    (void)err;
    (void)errlen;
    c->ctx = ctx;
    c->n = n;
    c->h = h;
    c->w = w;
    c->training = training;
    c->bf16 = ctx && ctx->bf16;
    return pf_cuconv_bf16_scratch(c, err, errlen);
}
void pf_cuconv_free(pf_cuconv *c) {
    pf_cuconv_bf16_free(c);
}
static pf_ref_conv shape_of(const pf_cuconv *c) {
    pf_ref_conv s = {c->n, c->ic, c->oc, c->h, c->w, c->k, c->stride, c->pad};
    return s;
}
int pf_cuconv_forward(pf_cuconv *c, const float *src, const float *wt, const float *bias,
                      float *dst, char *err, size_t errlen) {
    if (c->bf16) return pf_cuconv_bf16_forward(c, src, wt, bias, dst, err, errlen);
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_forward(&s, src, wt, c->has_bias ? bias : NULL, dst);
    return 0;
}
int pf_cuconv_backward_data(pf_cuconv *c, const float *wt, const float *dd, float *ds,
                            int accumulate, char *err, size_t errlen) {
    if (c->bf16) return pf_cuconv_bf16_backward_data(c, wt, dd, ds, accumulate, err, errlen);
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_backward_data(&s, wt, dd, ds, accumulate);
    return 0;
}
int pf_cuconv_backward_filter(pf_cuconv *c, const float *src, const float *dd, float *dw,
                              int accumulate, char *err, size_t errlen) {
    if (c->bf16) return pf_cuconv_bf16_backward_filter(c, src, dd, dw, accumulate, err, errlen);
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_backward_filter(&s, src, dd, dw, accumulate);
    return 0;
}
int pf_cuconv_backward_bias(pf_cuconv *c, const float *dd, float *db, int accumulate, char *err,
                            size_t errlen) {
    if (!c->has_bias) {
        snprintf(err, errlen, "%s: backward_bias of a layer without a bias", c->name);
        return -1;
    }
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_backward_bias(&s, dd, db, accumulate);
    return 0;
}

/* ---- raw bf16 convolutions: bf16 in, double sums (ref_ops.c's), bf16 out ---- */

/* float copy of count bf16 patterns (exact); NULL when out of memory */
static float *widen(const uint16_t *h, size_t count) {
    float *f = malloc((count ? count : 1) * sizeof *f);
    if (f) pf_ref_bf16_to_f32_acc(f, h, count, 0);
    return f;
}
/* dir 0: out = conv(a = x, b = w); 1: out = dx(a = w, b = dy); 2: out = dw(a = x, b = dy) */
static int raw(pf_cuconv *c, int dir, const uint16_t *a, const uint16_t *b, uint16_t *out,
               char *err, size_t errlen) {
    size_t nx, ny, nw;
    pf_cuconv_counts(c, &nx, &ny, &nw);
    size_t na = dir == 1 ? nw : nx, nb = dir == 0 ? nw : ny;
    size_t nout = dir == 0 ? ny : dir == 1 ? nx : nw;
    float *fa = widen(a, na), *fb = widen(b, nb), *fo = malloc((nout ? nout : 1) * 4);
    if (!fa || !fb || !fo) {
        free(fa), free(fb), free(fo);
        snprintf(err, errlen, "%s: raw bf16 convolution: out of memory", c->name);
        return -1;
    }
    pf_ref_conv s = shape_of(c);
    if (dir == 0) pf_ref_conv_forward(&s, fa, fb, NULL, fo);
    else if (dir == 1) pf_ref_conv_backward_data(&s, fa, fb, fo, 0);
    else pf_ref_conv_backward_filter(&s, fa, fb, fo, 0);
    /* ref_ops stores its double sums as float first: a double rounding (double -> fp32 ->
       bf16), as cuDNN's fp32 accumulator is rounded to bf16 */
    pf_ref_f32_to_bf16(out, fo, nout);
    free(fa), free(fb), free(fo);
    return 0;
}
int pf_cuconv_raw_forward(pf_cuconv *c, const uint16_t *x, const uint16_t *w, uint16_t *y,
                          char *err, size_t errlen) {
    return raw(c, 0, x, w, y, err, errlen);
}
int pf_cuconv_raw_backward_data(pf_cuconv *c, const uint16_t *w, const uint16_t *dy,
                                uint16_t *dx, char *err, size_t errlen) {
    return raw(c, 1, w, dy, dx, err, errlen);
}
int pf_cuconv_raw_backward_filter(pf_cuconv *c, const uint16_t *x, const uint16_t *dy,
                                  uint16_t *dw, char *err, size_t errlen) {
    return raw(c, 2, x, dy, dw, err, errlen);
}

void pf_cuconv_describe(const pf_cuconv *c, char *buf, size_t buflen) {
    snprintf(buf, buflen, "%s: naive host stand-in (tests/cuda_host/host_cudnn.c)", c->name);
}
