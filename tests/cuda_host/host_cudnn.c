/*  host_cudnn — stand-ins for nn/cuda/conv_cudnn.h on the host: tests/cuda_host/ref_ops.c's
    naive convolutions in double (the layer's stride and zero padding, the references gpu_check compares
    cuDNN with), independent of nn/cpu/ops.c's kernels. cuDNN is a library, not
    PixFlow's code, so both builds of tests/cuda_host use these (host_ops.c's naive kernels, or
    nn/cuda/ops.cu's real ones under tests/cuda_emu). */
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
    return 0;
}
void pf_cuconv_free(pf_cuconv *c) {
    (void)c;
}
static pf_ref_conv shape_of(const pf_cuconv *c) {
    pf_ref_conv s = {c->n, c->ic, c->oc, c->h, c->w, c->k, c->stride, c->pad};
    return s;
}
int pf_cuconv_forward(pf_cuconv *c, const float *src, const float *wt, const float *bias,
                      float *dst, char *err, size_t errlen) {
    (void)err, (void)errlen;
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_forward(&s, src, wt, c->has_bias ? bias : NULL, dst);
    return 0;
}
int pf_cuconv_backward_data(pf_cuconv *c, const float *wt, const float *dd, float *ds,
                            int accumulate, char *err, size_t errlen) {
    (void)err, (void)errlen;
    pf_ref_conv s = shape_of(c);
    pf_ref_conv_backward_data(&s, wt, dd, ds, accumulate);
    return 0;
}
int pf_cuconv_backward_filter(pf_cuconv *c, const float *src, const float *dd, float *dw,
                              int accumulate, char *err, size_t errlen) {
    (void)err, (void)errlen;
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

void pf_cuconv_describe(const pf_cuconv *c, char *buf, size_t buflen) {
    snprintf(buf, buflen, "%s: naive host stand-in (tests/cuda_host/host_cudnn.c)", c->name);
}
