/*  host_cudnn — stand-ins for nn/cuda/conv_cudnn.h on the host: naive convolutions in double
    (stride 1, zero padding k / 2), independent of nn/graph.c's kernels. cuDNN is a library, not
    PixFlow's code, so both builds of tests/cuda_host use these (host_ops.c's naive kernels, or
    nn/cuda/ops.cu's real ones under tests/cuda_emu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cudnn.h>
#include "nn/cuda/conv_cudnn.h"

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

/* ---- convolution: naive, stride 1, pad k/2 ---- */
void pf_cuconv_init(pf_cuconv *c, const char *name, int ic, int oc, int k) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ic = ic;
    c->oc = oc;
    c->k = k;
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
#define IX(b, ch, C, y, x) ((((size_t)(b) * (C) + (ch)) * c->h + (y)) * c->w + (x))
#define WX(o, i, ky, kx) ((((size_t)(o)*c->ic + (i)) * c->k + (ky)) * c->k + (kx))
int pf_cuconv_forward(pf_cuconv *c, const float *src, const float *wt, const float *bias,
                      float *dst, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    int R = c->k / 2;
    for (int b = 0; b < c->n; b++)
        for (int o = 0; o < c->oc; o++)
            for (int y = 0; y < c->h; y++)
                for (int x = 0; x < c->w; x++) {
                    double s = bias ? bias[o] : 0;
                    for (int i = 0; i < c->ic; i++)
                        for (int ky = 0; ky < c->k; ky++)
                            for (int kx = 0; kx < c->k; kx++) {
                                int yy = y + ky - R, xx = x + kx - R;
                                if (yy < 0 || yy >= c->h || xx < 0 || xx >= c->w)
                                    continue;
                                s += (double)src[IX(b, i, c->ic, yy, xx)] * wt[WX(o, i, ky, kx)];
                            }
                    dst[IX(b, o, c->oc, y, x)] = (float)s;
                }
    return 0;
}
int pf_cuconv_backward_data(pf_cuconv *c, const float *wt, const float *dd, float *ds,
                            int accumulate, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    int R = c->k / 2;
    size_t ns = (size_t)c->n * c->ic * c->h * c->w;
    double *acc = calloc(ns, sizeof *acc);
    for (int b = 0; b < c->n; b++)
        for (int o = 0; o < c->oc; o++)
            for (int y = 0; y < c->h; y++)
                for (int x = 0; x < c->w; x++) {
                    double g = dd[IX(b, o, c->oc, y, x)];
                    for (int i = 0; i < c->ic; i++)
                        for (int ky = 0; ky < c->k; ky++)
                            for (int kx = 0; kx < c->k; kx++) {
                                int yy = y + ky - R, xx = x + kx - R;
                                if (yy < 0 || yy >= c->h || xx < 0 || xx >= c->w)
                                    continue;
                                acc[IX(b, i, c->ic, yy, xx)] += g * wt[WX(o, i, ky, kx)];
                            }
                }
    for (size_t i = 0; i < ns; i++)
        ds[i] = accumulate ? (float)(ds[i] + acc[i]) : (float)acc[i];
    free(acc);
    return 0;
}
int pf_cuconv_backward_filter(pf_cuconv *c, const float *src, const float *dd, float *dw,
                              int accumulate, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    int R = c->k / 2;
    for (int o = 0; o < c->oc; o++)
        for (int i = 0; i < c->ic; i++)
            for (int ky = 0; ky < c->k; ky++)
                for (int kx = 0; kx < c->k; kx++) {
                    double s = 0;
                    for (int b = 0; b < c->n; b++)
                        for (int y = 0; y < c->h; y++)
                            for (int x = 0; x < c->w; x++) {
                                int yy = y + ky - R, xx = x + kx - R;
                                if (yy < 0 || yy >= c->h || xx < 0 || xx >= c->w)
                                    continue;
                                s += (double)dd[IX(b, o, c->oc, y, x)] *
                                     src[IX(b, i, c->ic, yy, xx)];
                            }
                    dw[WX(o, i, ky, kx)] = (float)(accumulate ? dw[WX(o, i, ky, kx)] + s : s);
                }
    return 0;
}
int pf_cuconv_backward_bias(pf_cuconv *c, const float *dd, float *db, int accumulate, char *err,
                            size_t errlen) {
    (void)err;
    (void)errlen;
    for (int o = 0; o < c->oc; o++) {
        double s = 0;
        for (int b = 0; b < c->n; b++)
            for (int p = 0; p < c->h * c->w; p++)
                s += dd[((size_t)b * c->oc + o) * c->h * c->w + p];
        db[o] = (float)(accumulate ? db[o] + s : s);
    }
    return 0;
}

void pf_cuconv_describe(const pf_cuconv *c, char *buf, size_t buflen) {
    snprintf(buf, buflen, "%s: naive host stand-in (tests/cuda_host/host_cudnn.c)", c->name);
}
