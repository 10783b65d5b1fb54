/*  eltwise_dnnl — ReLU backward and in-place accumulation on oneDNN (see eltwise_dnnl.h). */
#include "nn/cpu/eltwise_dnnl.h"
#include <string.h>

#define CK(call, what) \
    do { if (pf_dnnl_check((call), name, what, err, errlen)) goto fail; } while (0)

void pf_op_free(pf_op *op) {
    if (op->prim) dnnl_primitive_destroy(op->prim);
    if (op->m0) dnnl_memory_destroy(op->m0);
    if (op->m1) dnnl_memory_destroy(op->m1);
    memset(op, 0, sizeof *op);
}

static int build(pf_op *op, pf_dnnl *ctx, pf_op_kind kind, size_t n, char *err, size_t errlen) {
    if (op->prim && op->kind == kind && op->n == n && op->ctx == ctx) return 0;
    const char *name = kind == PF_OP_RELU_BACKWARD ? "relu backward" : "gradient accumulate";
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = { (dnnl_dim_t)n };
    pf_op_free(op);
    op->kind = kind;
    op->ctx = ctx;
    CK(dnnl_memory_desc_init_by_tag(&md, 1, dims, dnnl_f32, dnnl_a), "memory_desc");
    if (kind == PF_OP_RELU_BACKWARD) {
        dnnl_eltwise_desc_t ed;
        CK(dnnl_eltwise_backward_desc_init(&ed, dnnl_eltwise_relu_use_dst_for_bwd, &md, &md,
                                           0.0f, 0.0f),
           "dnnl_eltwise_backward_desc_init");
        /* backward eltwise wants a forward hint */
        dnnl_eltwise_desc_t fd;
        dnnl_primitive_desc_t hint = NULL;
        CK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training,
                                          dnnl_eltwise_relu_use_dst_for_bwd, &md, 0.0f, 0.0f),
           "dnnl_eltwise_forward_desc_init");
        CK(dnnl_primitive_desc_create(&hint, &fd, NULL, ctx->engine, NULL),
           "eltwise forward primitive_desc_create");
        dnnl_status_t st = dnnl_primitive_desc_create(&pd, &ed, NULL, ctx->engine, hint);
        dnnl_primitive_desc_destroy(hint);
        CK(st, "eltwise backward primitive_desc_create");
    } else {
        const float scales[2] = { 1.0f, 1.0f };
        dnnl_memory_desc_t srcs[2] = { md, md };
        CK(dnnl_sum_primitive_desc_create(&pd, &md, 2, scales, srcs, NULL, ctx->engine),
           "sum primitive_desc_create");
    }
    CK(dnnl_primitive_create(&op->prim, pd), "primitive_create");
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    CK(dnnl_memory_create(&op->m0, &md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&op->m1, &md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    op->n = n;
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    pf_op_free(op);
    return -1;
}

static int exec2(pf_op *op, float *inout, const float *in, int arg_inout, int arg_in,
                 int arg_out, const char *name, char *err, size_t errlen) {
    CK(dnnl_memory_set_data_handle(op->m0, inout), "memory_set_data_handle");
    CK(dnnl_memory_set_data_handle(op->m1, (void *)in), "memory_set_data_handle");
    dnnl_exec_arg_t a[3] = { { arg_inout, op->m0 }, { arg_in, op->m1 }, { arg_out, op->m0 } };
    CK(dnnl_primitive_execute(op->prim, op->ctx->stream, 3, a), "primitive_execute");
    return 0;
fail:
    return -1;
}

int pf_op_relu_backward(pf_op *op, pf_dnnl *ctx, float *d, const float *y, size_t n, char *err,
                        size_t errlen) {
    if (build(op, ctx, PF_OP_RELU_BACKWARD, n, err, errlen)) return -1;
    return exec2(op, d, y, DNNL_ARG_DIFF_DST, DNNL_ARG_DST, DNNL_ARG_DIFF_SRC, "relu backward",
                 err, errlen);
}

int pf_op_accumulate(pf_op *op, pf_dnnl *ctx, float *a, const float *b, size_t n, char *err,
                     size_t errlen) {
    if (build(op, ctx, PF_OP_ACCUMULATE, n, err, errlen)) return -1;
    return exec2(op, a, b, DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_MULTIPLE_SRC + 1, DNNL_ARG_DST,
                 "gradient accumulate", err, errlen);
}
