/*  linear_dnnl — oneDNN inner product layer (see linear_dnnl.h). */
#include "nn/cpu/linear_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call, what) \
    do { if (pf_dnnl_check((call), l->name, what, err, errlen)) goto fail; } while (0)

void pf_linear_free(pf_linear *l) {
    dnnl_primitive_t *p[3] = { &l->fwd, &l->bwdd, &l->bwdw };
    dnnl_memory_t *m[4] = { &l->m_x, &l->m_w, &l->m_b, &l->m_y };
    for (int i = 0; i < 3; i++)
        if (*p[i]) dnnl_primitive_destroy(*p[i]);
    for (int i = 0; i < 4; i++)
        if (*m[i]) dnnl_memory_destroy(*m[i]);
    free(l->x);
    free(l->y);
    free(l->dx);
    free(l->dy);
    memset(l, 0, sizeof *l);
}

/* A primitive from an operation descriptor (hint: the forward's, for the backward ones). */
static dnnl_status_t make(dnnl_primitive_t *prim, const void *desc, pf_dnnl *ctx,
                          const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, desc, NULL, ctx->engine, hint);
    if (st == dnnl_success) st = dnnl_primitive_create(prim, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

int pf_linear_setup(pf_linear *l, pf_dnnl *ctx, const char *name, int n, int in, int out,
                    int training, char *err, size_t errlen) {
    *l = (pf_linear){ .n = n, .in = in, .out = out, .training = training, .ctx = ctx };
    snprintf(l->name, sizeof l->name, "%s", name);
    dnnl_memory_desc_t x_md, w_md, b_md, y_md;
    dnnl_dims_t xd = { n, in }, wd = { out, in }, bd = { out }, yd = { n, out };
    dnnl_inner_product_desc_t fd, dd, wdsc;
    dnnl_primitive_desc_t fpd = NULL;
    CK(dnnl_memory_desc_init_by_tag(&x_md, 2, xd, dnnl_f32, dnnl_nc), "memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&w_md, 2, wd, dnnl_f32, dnnl_oi), "memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&b_md, 1, bd, dnnl_f32, dnnl_x), "memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&y_md, 2, yd, dnnl_f32, dnnl_nc), "memory_desc");
    CK(dnnl_inner_product_forward_desc_init(&fd, training ? dnnl_forward_training
                                                          : dnnl_forward_inference,
                                            &x_md, &w_md, &b_md, &y_md),
       "inner_product_forward_desc_init");
    CK(dnnl_primitive_desc_create(&fpd, &fd, NULL, ctx->engine, NULL), "primitive_desc_create");
    CK(dnnl_primitive_create(&l->fwd, fpd), "primitive_create");
    if (training) {
        CK(dnnl_inner_product_backward_data_desc_init(&dd, &x_md, &w_md, &y_md),
           "inner_product_backward_data_desc_init");
        CK(make(&l->bwdd, &dd, ctx, fpd), "backward-data primitive");
        CK(dnnl_inner_product_backward_weights_desc_init(&wdsc, &x_md, &w_md, &b_md, &y_md),
           "inner_product_backward_weights_desc_init");
        CK(make(&l->bwdw, &wdsc, ctx, fpd), "backward-weights primitive");
    }
    dnnl_primitive_desc_destroy(fpd);
    fpd = NULL;
    CK(dnnl_memory_create(&l->m_x, &x_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&l->m_w, &w_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&l->m_b, &b_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&l->m_y, &y_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    size_t nx = (size_t)n * (size_t)in, ny = (size_t)n * (size_t)out;
    l->x = malloc(nx * sizeof(float));
    l->y = malloc(ny * sizeof(float));
    if (training) {
        l->dx = malloc(nx * sizeof(float));
        l->dy = malloc(ny * sizeof(float));
    }
    if (!l->x || !l->y || (training && (!l->dx || !l->dy))) {
        snprintf(err, errlen, "%s: out of memory for a %d x %d linear layer", name, n, in);
        goto fail;
    }
    return 0;
fail:
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    pf_linear_free(l);
    return -1;
}

/* Run prim with (x, w, b, y) bound to the four memories under the given argument names. */
static int run(pf_linear *l, dnnl_primitive_t prim, const int arg[4], const float *ptr[4],
               char *err, size_t errlen) {
    dnnl_memory_t mem[4] = { l->m_x, l->m_w, l->m_b, l->m_y };
    dnnl_exec_arg_t args[4];
    int k = 0;
    for (int i = 0; i < 4; i++) {
        if (!ptr[i]) continue;
        CK(dnnl_memory_set_data_handle(mem[i], (void *)ptr[i]), "memory_set_data_handle");
        args[k++] = (dnnl_exec_arg_t){ arg[i], mem[i] };
    }
    CK(dnnl_primitive_execute(prim, l->ctx->stream, k, args), "primitive_execute");
    return 0;
fail:
    return -1;
}

int pf_linear_forward(pf_linear *l, const float *weight, const float *bias, char *err,
                      size_t errlen) {
    const int arg[4] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST };
    const float *ptr[4] = { l->x, weight, bias, l->y };
    return run(l, l->fwd, arg, ptr, err, errlen);
}

int pf_linear_backward(pf_linear *l, const float *weight, float *dweight, float *dbias,
                       int want_dx, char *err, size_t errlen) {
    if (!l->training) {
        snprintf(err, errlen, "%s: backward of an inference plan", l->name);
        return -1;
    }
    if (dweight) {
        const int arg[4] = { DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS,
                             DNNL_ARG_DIFF_DST };
        const float *ptr[4] = { l->x, dweight, dbias, l->dy };
        if (run(l, l->bwdw, arg, ptr, err, errlen)) return -1;
    }
    if (want_dx) {
        const int arg[4] = { DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, 0, DNNL_ARG_DIFF_DST };
        const float *ptr[4] = { l->dx, weight, NULL, l->dy };
        if (run(l, l->bwdd, arg, ptr, err, errlen)) return -1;
    }
    return 0;
}
