/*  dnnl_ctx — engine, stream, status messages and activation layouts for nn/cpu (see
    dnnl_ctx.h). */
#include "nn/cpu/dnnl_ctx.h"
#include <stdio.h>
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

void pf_dnnl_free(pf_dnnl *ctx) {
    if (ctx->stream) dnnl_stream_destroy(ctx->stream);
    if (ctx->engine) dnnl_engine_destroy(ctx->engine);
    ctx->stream = NULL;
    ctx->engine = NULL;
}

static dnnl_format_tag_t tag_of_block(int b) {
    switch (b) {
    case 1: return dnnl_nchw;
    case 8: return dnnl_nChw8c;
    case 16: return dnnl_nChw16c;
    default: return dnnl_format_tag_any;
    }
}

int pf_dnnl_act_md(dnnl_memory_desc_t *md, int n, int c, int h, int w, int b, char *err,
                   size_t errlen) {
    dnnl_dims_t dims = { n, c, h, w };
    return pf_dnnl_check(dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag_of_block(b)),
                         "activation", "dnnl_memory_desc_init_by_tag", err, errlen);
}

int pf_dnnl_block_of(const dnnl_memory_desc_t *md, int n, int c, int h, int w) {
    static const int blocks[3] = { 1, 8, 16 };
    char err[128];
    for (int i = 0; i < 3; i++) {
        dnnl_memory_desc_t cand;
        if (pf_dnnl_act_md(&cand, n, c, h, w, blocks[i], err, sizeof err)) continue;
        if (dnnl_memory_desc_equal(md, &cand)) return blocks[i];
    }
    return 0;
}
