/*  dnnl_ctx — engine, stream, status messages and activation layouts for nn/cpu (see
    dnnl_ctx.h). */
#include "nn/cpu/dnnl_ctx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dnnl_debug.h>

int pf_dnnl_check(dnnl_status_t st, const char *what, const char *call, char *err,
                  size_t errlen) {
    if (st == dnnl_success) return 0;
    snprintf(err, errlen, "%s: oneDNN %s: %s", what, call, dnnl_status2str(st));
    return -1;
}

int pf_dnnl_init(pf_dnnl *ctx, char *err, size_t errlen) {
    ctx->engine = NULL;
    ctx->stream = NULL;
    ctx->conv_algo = PF_CONV_AUTO;
    ctx->force_layout = PF_LAYOUT_ANY;
    ctx->prec_train = ctx->prec_infer = PF_PREC_FP32;
    ctx->bf16_src = ctx->bf16_dst = NULL;
    ctx->bf16_src_len = ctx->bf16_dst_len = 0;
    if (pf_dnnl_check(dnnl_engine_create(&ctx->engine, dnnl_cpu, 0), "cpu backend",
                      "dnnl_engine_create", err, errlen))
        return -1;
    if (pf_dnnl_check(dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags),
                      "cpu backend", "dnnl_stream_create", err, errlen)) {
        dnnl_engine_destroy(ctx->engine);
        ctx->engine = NULL;
        return -1;
    }
    return 0;
}

/* oneDNN's name of an effective ISA (the highest level it contains). */
static const char *isa_name(dnnl_cpu_isa_t isa) {
    static const struct { dnnl_cpu_isa_t isa; const char *name; } t[] = {
        { dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx" },
        { dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16" },
        { dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni" },
        { dnnl_cpu_isa_avx512_core, "avx512_core" },
        { dnnl_cpu_isa_avx2_vnni, "avx2_vnni" },
        { dnnl_cpu_isa_avx2, "avx2" },
        { dnnl_cpu_isa_avx, "avx" },
        { dnnl_cpu_isa_sse41, "sse41" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if ((isa & t[i].isa) == t[i].isa) return t[i].name;
    return "generic";
}

const char *pf_dnnl_bf16_isa(char *isa_out, size_t isa_len) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa_out) snprintf(isa_out, isa_len, "%s", isa_name(isa));
    if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx)
        return "avx512_core_amx";
    if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16)
        return "avx512_core_bf16";
    return NULL;
}

int pf_dnnl_set_precision(pf_dnnl *ctx, pf_precision train, pf_precision infer,
                          const char *what, char *err, size_t errlen) {
    char isa[32];
    if ((train == PF_PREC_BF16 || infer == PF_PREC_BF16) && !pf_dnnl_bf16_isa(isa, sizeof isa)) {
        snprintf(err, errlen, "%s: bf16 needs a CPU with AVX512_BF16 or AMX; oneDNN's ISA here "
                 "is %s (no bf16 unit): use fp32", what, isa);
        return -1;
    }
    ctx->prec_train = train;
    ctx->prec_infer = infer;
    return 0;
}

int pf_dnnl_scratch(void **buf, size_t *len, size_t bytes, const char *what, char *err,
                    size_t errlen) {
    if (bytes <= *len) return 0;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes)) {
        snprintf(err, errlen, "%s: out of memory for %zu bytes of bf16 scratch", what, bytes);
        return -1;
    }
    free(*buf);
    *buf = p;
    *len = bytes;
    return 0;
}

void pf_dnnl_free(pf_dnnl *ctx) {
    free(ctx->bf16_src);
    free(ctx->bf16_dst);
    ctx->bf16_src = ctx->bf16_dst = NULL;
    ctx->bf16_src_len = ctx->bf16_dst_len = 0;
    if (ctx->stream) dnnl_stream_destroy(ctx->stream);
    if (ctx->engine) dnnl_engine_destroy(ctx->engine);
    ctx->stream = NULL;
    ctx->engine = NULL;
}

/* The oneDNN tag of block b for c channels (nn/cpu/dnnl_ctx.h), or format_tag_undef. */
static dnnl_format_tag_t tag_of_block(int b, int c) {
    switch (b) {
    case 1: return dnnl_nchw;
    case 8: return dnnl_nChw8c;
    case 16: return dnnl_nChw16c;
    default: return b == c ? dnnl_nhwc : dnnl_format_tag_undef;
    }
}

int pf_dnnl_act_md(dnnl_memory_desc_t *md, int n, int c, int h, int w, int b, char *err,
                   size_t errlen) {
    dnnl_dims_t dims = { n, c, h, w };
    dnnl_format_tag_t tag = b < 0 ? dnnl_format_tag_any : tag_of_block(b, c);
    if (tag == dnnl_format_tag_undef) {
        snprintf(err, errlen, "activation: no layout with block %d for %d channels", b, c);
        return -1;
    }
    return pf_dnnl_check(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag),
                         "activation", "dnnl_memory_desc_init_by_tag", err, errlen);
}

int pf_dnnl_block_of(const dnnl_memory_desc_t *md, int n, int c, int h, int w, int prefer) {
    /* Where two layouts are the same memory (NHWC of 1, 8 or 16 channels and that block; NCHW
       and NHWC of a 1 x 1 map), `prefer` wins, else the first in this order. */
    const struct { dnnl_format_tag_t tag; int b; } cand[5] = {
        { dnnl_format_tag_undef, prefer }, { dnnl_nchw, 1 }, { dnnl_nChw8c, 8 },
        { dnnl_nChw16c, 16 }, { dnnl_nhwc, c },
    };
    dnnl_dims_t dims = { n, c, h, w };
    for (int i = 0; i < 5; i++) {
        dnnl_memory_desc_t d;
        char err[128];
        int ok = i ? dnnl_memory_desc_init_by_tag(&d, 4, dims, dnnl_f32, cand[i].tag) ==
                         dnnl_success
                   : prefer > 0 && pf_dnnl_act_md(&d, n, c, h, w, prefer, err, sizeof err) == 0;
        if (ok && dnnl_memory_desc_equal(md, &d)) return cand[i].b;
    }
    return 0;
}

int pf_reorder_init(pf_reorder *r, pf_dnnl *ctx, const char *what, int n, int c, int h, int w,
                    int from, int to, char *err, size_t errlen) {
    dnnl_memory_desc_t a, b;
    dnnl_primitive_desc_t pd = NULL;
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    if (pf_dnnl_act_md(&a, n, c, h, w, from, err, errlen) ||
        pf_dnnl_act_md(&b, n, c, h, w, to, err, errlen))
        return -1;
    if (pf_dnnl_check(dnnl_reorder_primitive_desc_create(&pd, &a, ctx->engine, &b, ctx->engine,
                                                         NULL),
                      what, "reorder primitive_desc_create", err, errlen) ||
        pf_dnnl_check(dnnl_primitive_create(&r->prim, pd), what, "reorder primitive_create", err,
                      errlen) ||
        pf_dnnl_check(dnnl_memory_create(&r->m_from, &a, ctx->engine, DNNL_MEMORY_NONE), what,
                      "memory_create", err, errlen) ||
        pf_dnnl_check(dnnl_memory_create(&r->m_to, &b, ctx->engine, DNNL_MEMORY_NONE), what,
                      "memory_create", err, errlen)) {
        if (pd) dnnl_primitive_desc_destroy(pd);
        pf_reorder_free(r);
        return -1;
    }
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

int pf_reorder_run(pf_reorder *r, const float *from, float *to, char *err, size_t errlen) {
    if (pf_dnnl_check(dnnl_memory_set_data_handle(r->m_from, (void *)from), "reorder",
                      "memory_set_data_handle", err, errlen) ||
        pf_dnnl_check(dnnl_memory_set_data_handle(r->m_to, to), "reorder",
                      "memory_set_data_handle", err, errlen))
        return -1;
    dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, r->m_from }, { DNNL_ARG_TO, r->m_to } };
    return pf_dnnl_check(dnnl_primitive_execute(r->prim, r->ctx->stream, 2, args), "reorder",
                         "primitive_execute", err, errlen);
}

void pf_reorder_free(pf_reorder *r) {
    if (r->prim) dnnl_primitive_destroy(r->prim);
    if (r->m_from) dnnl_memory_destroy(r->m_from);
    if (r->m_to) dnnl_memory_destroy(r->m_to);
    memset(r, 0, sizeof *r);
}
