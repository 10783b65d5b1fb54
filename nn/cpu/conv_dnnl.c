/*  conv_dnnl — oneDNN convolution layer: forward, backward-data, backward-weights (see
    conv_dnnl.h). */
#include "nn/cpu/conv_dnnl.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CK(call, what) \
    do { if (pf_dnnl_check((call), c->name, what, err, errlen)) goto fail; } while (0)

void pf_conv_init(pf_conv *c, const char *name, int ic, int oc, int k, int relu) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ic = ic;
    c->oc = oc;
    c->k = k;
    c->relu = relu;
    c->stride = 1;
    c->pad = k / 2;
    c->bias = 1;
}

void pf_conv_set_geometry(pf_conv *c, int stride, int pad, int has_bias) {
    c->stride = stride;
    c->pad = pad;
    c->bias = has_bias;
}

void pf_conv_set_lrelu(pf_conv *c, float alpha) {
    c->relu = 1;
    c->alpha = alpha;
}

void pf_conv_set_residual(pf_conv *c, float scale) {
    c->add = 1;
    c->add_scale = scale;
}

static void destroy_prim(dnnl_primitive_t *p) {
    if (*p) dnnl_primitive_destroy(*p);
    *p = NULL;
}
static void destroy_pd(dnnl_primitive_desc_t *p) {
    if (*p) dnnl_primitive_desc_destroy(*p);
    *p = NULL;
}
static void destroy_mem(dnnl_memory_t *m) {
    if (*m) dnnl_memory_destroy(*m);
    *m = NULL;
}

void pf_conv_free(pf_conv *c) {
    destroy_prim(&c->fwd);
    destroy_prim(&c->bwdd);
    destroy_prim(&c->bwdw);
    destroy_prim(&c->w_to_fwd);
    destroy_prim(&c->w_to_bwdd);
    destroy_prim(&c->dw_to_user);
    destroy_prim(&c->src_to_lp);
    destroy_prim(&c->dst_to_lp);
    destroy_pd(&c->fwd_pd);
    destroy_pd(&c->bwdd_pd);
    destroy_pd(&c->bwdw_pd);
    destroy_mem(&c->m_src);
    destroy_mem(&c->m_dst);
    destroy_mem(&c->m_identity);
    destroy_mem(&c->m_w_user);
    destroy_mem(&c->m_bias);
    destroy_mem(&c->m_w_fwd);
    destroy_mem(&c->m_w_bwdd);
    destroy_mem(&c->m_dw);
    destroy_mem(&c->m_dw_user);
    destroy_mem(&c->m_dbias);
    destroy_mem(&c->m_src_lp);
    destroy_mem(&c->m_dst_lp);
    c->w_for_bwdd = NULL;
    c->n = c->h = c->w = c->oh = c->ow = 0;
}

/* bf16 mixed precision (dnnl_ctx.h pf_precision): the convolution reads src / diff_dst and
   weights as bf16; dst, diff_src, diff_weights and bias stay f32. */
static int lp(const pf_conv *c) { return c->prec == PF_PREC_BF16; }
static dnnl_data_type_t lp_dt(const pf_conv *c) { return lp(c) ? dnnl_bf16 : dnnl_f32; }

/* md with another data type, the layout unchanged (oneDNN's blocking strides count elements,
   so an nChw16c f32 md and its bf16 twin place element (n, c, h, w) at the same index). */
static dnnl_memory_desc_t with_dt(const dnnl_memory_desc_t *md, dnnl_data_type_t dt) {
    dnnl_memory_desc_t d = *md;
    d.data_type = dt;
    return d;
}

/* Forward primitive descriptor with algorithm c->algo for the given activation blocks
   (-1 = any). Winograd is built for forward_training even for inference: oneDNN 2.6 has its
   F(4x4, 3x3) kernel only there (inference would get the slower F(2x2, 3x3) one), and a
   convolution keeps no workspace, so nothing else changes. */
static int make_fwd_pd(pf_conv *c, int src_block, int dst_block, int fuse_add, char *err,
                       size_t errlen) {
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_dims_t wdims = { c->oc, c->ic, c->k, c->k }, bdims = { c->oc };
    dnnl_dims_t strides = { c->stride, c->stride }, pad = { c->pad, c->pad };
    int wino = c->algo == dnnl_convolution_winograd;
    int rc = -1;
    if (pf_dnnl_act_md(&src, c->n, c->ic, c->h, c->w, src_block, err, errlen)) return -1;
    if (pf_dnnl_act_md(&dst, c->n, c->oc, c->oh, c->ow, dst_block, err, errlen)) return -1;
    src.data_type = lp_dt(c);
    CK(dnnl_memory_desc_init_by_tag(&wei, 4, wdims, lp_dt(c), dnnl_format_tag_any),
       "weights memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_a), "bias memory_desc");
    CK(dnnl_convolution_forward_desc_init(&cd,
                                          c->training || wino ? dnnl_forward_training
                                                              : dnnl_forward_inference,
                                          c->algo, &src, &wei, c->bias ? &bias : NULL, &dst,
                                          strides, pad, pad),
       "dnnl_convolution_forward_desc_init");
    CK(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    if ((c->relu && !c->act_apart) || fuse_add) {
        CK(dnnl_post_ops_create(&po), "dnnl_post_ops_create");
        if (c->relu && !c->act_apart)
            CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, c->alpha, 0.0f),
               "dnnl_post_ops_append_eltwise");
        if (fuse_add && c->add_scale != 1.0f)
            CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, c->add_scale, 0.0f),
               "dnnl_post_ops_append_eltwise");
        if (fuse_add)
            CK(dnnl_post_ops_append_binary(po, dnnl_binary_add, &dst),
               "dnnl_post_ops_append_binary");
        CK(dnnl_primitive_attr_set_post_ops(attr, po), "dnnl_primitive_attr_set_post_ops");
    }
    destroy_pd(&c->fwd_pd);
    CK(dnnl_primitive_desc_create(&c->fwd_pd, &cd, attr, c->ctx->engine, NULL),
       "convolution forward primitive_desc_create");
    rc = 0;
fail:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return rc;
}

static const dnnl_memory_desc_t *q_md(dnnl_primitive_desc_t pd, dnnl_query_t what) {
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

/* The activation block of pd's md `what` (pf_dnnl_block_of, which knows f32 mds: a bf16 md
   maps to the block of its f32 twin). */
static int block_of(dnnl_primitive_desc_t pd, dnnl_query_t what, int n, int ch, int h, int w,
                    int prefer) {
    dnnl_memory_desc_t d = with_dt(q_md(pd, what), dnnl_f32);
    return pf_dnnl_block_of(&d, n, ch, h, w, prefer);
}

static const char *impl_of(dnnl_primitive_desc_t pd) {
    const char *s = NULL;
    if (!pd || dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success ||
        !s)
        return "";
    return s;
}

/* oneDNN's slow general kernels: reference loops and the im2col + gemm path. */
static int slow_impl(const char *impl) { return strstr(impl, "ref") || strstr(impl, "gemm"); }

/* A reorder from md `from` to md `to`, or NULL (returned through *p) when they are equal. */
static int make_reorder(pf_conv *c, dnnl_primitive_t *p, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to, char *err, size_t errlen) {
    dnnl_primitive_desc_t pd = NULL;
    *p = NULL;
    if (dnnl_memory_desc_equal(from, to)) return 0;
    CK(dnnl_reorder_primitive_desc_create(&pd, from, c->ctx->engine, to, c->ctx->engine, NULL),
       "reorder primitive_desc_create");
    CK(dnnl_primitive_create(p, pd), "reorder primitive_create");
    dnnl_primitive_desc_destroy(pd);
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return -1;
}

/* Whether the layer should try Winograd first under the engine's rule (dnnl_ctx.h). AUTO:
   3x3 layers with at least 16 channels on both sides. Winograd transforms 16-channel blocks,
   so an image-facing layer (3 channels padded to 16) pays 5x for nothing: conv_first 3 -> 64
   at batch 16, 48 x 48 on AVX-512 ran forward + backward-weights in 0.7 ms direct against
   2.9 ms Winograd, while 64 -> 64 took 8.6 against 4.7 ms (forward, backward-data and
   backward-weights; 32 x 32) and 64 -> 256 at 64 x 64 348 against 180 ms. */
static int want_winograd(const pf_conv *c) {
    if (c->k != 3 || c->stride != 1 || lp(c)) return 0;   /* oneDNN 2.6: no bf16 Winograd */
    switch (c->ctx->conv_algo) {
    case PF_CONV_DIRECT: return 0;
    case PF_CONV_WINOGRAD: return 1;
    default: return c->ic >= 16 && c->oc >= 16;
    }
}

/* The forward primitive for algorithm c->algo: fused residual add where that keeps a fast
   kernel, oneDNN's layout choice where asked, plain NCHW for a choice outside the four layouts
   PixFlow knows. A Winograd request fails (-1, no message needed) when oneDNN has no JIT
   Winograd kernel for the layer or its layouts. */
static int setup_forward(pf_conv *c, int src_block, int dst_block, char *err, size_t errlen) {
    int wino = c->algo == dnnl_convolution_winograd;
    c->add_fused = 0;
    if (c->add && !wino) {
        /* Fuse the residual add when oneDNN offers a fast kernel with those post-ops; a
           reference or gemm kernel would be far slower than the add done apart. (oneDNN 2.6's
           Winograd kernels take no binary post-op, so a Winograd layer always adds apart.) */
        char ferr[256];
        if (make_fwd_pd(c, src_block, dst_block, 1, ferr, sizeof ferr) == 0 &&
            !slow_impl(impl_of(c->fwd_pd)))
            c->add_fused = 1;
    }
    c->act_apart = 0;
    if (!c->add_fused && make_fwd_pd(c, src_block, dst_block, 0, err, errlen) && !wino)
        return -1;
    if (wino && (!c->fwd_pd || !strstr(impl_of(c->fwd_pd), "wino"))) {
        /* oneDNN 2.6's Winograd kernels take ReLU but no LeakyReLU post-op (MSRResNet's
           upconvs and conv_hr, every RRDBNet dense conv): run the convolution bare and the
           activation in C after it, which costs a pass over the output and keeps Winograd's
           1.8x. */
        if (!c->relu) return -1;
        c->act_apart = 1;
        if (make_fwd_pd(c, src_block, dst_block, 0, err, errlen) ||
            !strstr(impl_of(c->fwd_pd), "wino"))
            return -1;
    }
    c->src_block = block_of(c->fwd_pd, dnnl_query_src_md, c->n, c->ic, c->h, c->w, src_block);
    c->dst_block = block_of(c->fwd_pd, dnnl_query_dst_md, c->n, c->oc, c->oh, c->ow, dst_block);
    if (!c->src_block || !c->dst_block) {
        if (wino) return -1;
        c->src_block = c->src_block ? c->src_block : 1;
        c->dst_block = c->dst_block ? c->dst_block : 1;
        if (make_fwd_pd(c, c->src_block, c->dst_block, c->add_fused, err, errlen)) return -1;
    }
    return 0;
}

/* Backward-data primitive descriptor, sharing the forward's weights layout when oneDNN runs
   the same kernel on it (then one reorder per step serves both). bf16: diff_dst and weights
   bf16, diff_src f32. */
static int make_bwdd_pd(pf_conv *c, char *err, size_t errlen) {
    dnnl_memory_desc_t dsrc = with_dt(q_md(c->fwd_pd, dnnl_query_src_md), dnnl_f32);
    dnnl_memory_desc_t ddst = with_dt(q_md(c->fwd_pd, dnnl_query_dst_md), lp_dt(c));
    const dnnl_memory_desc_t *src_md = &dsrc, *dst_md = &ddst;
    const dnnl_memory_desc_t *wfwd_md = q_md(c->fwd_pd, dnnl_query_weights_md);
    dnnl_dims_t wdims = { c->oc, c->ic, c->k, c->k };
    dnnl_dims_t strides = { c->stride, c->stride }, pad = { c->pad, c->pad };
    dnnl_convolution_desc_t cd;
    dnnl_memory_desc_t wany;
    CK(dnnl_memory_desc_init_by_tag(&wany, 4, wdims, lp_dt(c), dnnl_format_tag_any),
       "weights memory_desc");
    CK(dnnl_convolution_backward_data_desc_init(&cd, c->algo, src_md, &wany, dst_md, strides,
                                                pad, pad),
       "dnnl_convolution_backward_data_desc_init");
    CK(dnnl_primitive_desc_create(&c->bwdd_pd, &cd, NULL, c->ctx->engine, c->fwd_pd),
       "convolution backward-data primitive_desc_create");
    if (!dnnl_memory_desc_equal(q_md(c->bwdd_pd, dnnl_query_weights_md), wfwd_md)) {
        dnnl_primitive_desc_t shared = NULL;
        char name[128];
        snprintf(name, sizeof name, "%s", impl_of(c->bwdd_pd));
        if (dnnl_convolution_backward_data_desc_init(&cd, c->algo, src_md, wfwd_md, dst_md,
                                                     strides, pad, pad) == dnnl_success &&
            dnnl_primitive_desc_create(&shared, &cd, NULL, c->ctx->engine, c->fwd_pd) ==
                dnnl_success &&
            !strcmp(impl_of(shared), name)) {
            destroy_pd(&c->bwdd_pd);
            c->bwdd_pd = shared;
        } else {
            destroy_pd(&shared);
        }
    }
    return 0;
fail:
    return -1;
}

/* Backward-weights primitive descriptor. bf16: src and diff_dst bf16, diff_weights and
   diff_bias f32. */
static int make_bwdw_pd(pf_conv *c, char *err, size_t errlen) {
    dnnl_dims_t wdims = { c->oc, c->ic, c->k, c->k }, bdims = { c->oc };
    dnnl_dims_t strides = { c->stride, c->stride }, pad = { c->pad, c->pad };
    dnnl_convolution_desc_t cd;
    dnnl_memory_desc_t wany, bias_md;
    dnnl_memory_desc_t ddst = with_dt(q_md(c->fwd_pd, dnnl_query_dst_md), lp_dt(c));
    CK(dnnl_memory_desc_init_by_tag(&wany, 4, wdims, dnnl_f32, dnnl_format_tag_any),
       "weights memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&bias_md, 1, bdims, dnnl_f32, dnnl_a), "bias memory_desc");
    CK(dnnl_convolution_backward_weights_desc_init(&cd, c->algo,
                                                   q_md(c->fwd_pd, dnnl_query_src_md), &wany,
                                                   c->bias ? &bias_md : NULL, &ddst,
                                                   strides, pad, pad),
       "dnnl_convolution_backward_weights_desc_init");
    CK(dnnl_primitive_desc_create(&c->bwdw_pd, &cd, NULL, c->ctx->engine, c->fwd_pd),
       "convolution backward-weights primitive_desc_create");
    return 0;
fail:
    return -1;
}

/* Every primitive descriptor of the layer for algorithm c->algo (c->n, h, w, training set):
   a Winograd request fails unless every direction gets oneDNN's Winograd kernel. */
static int make_pds(pf_conv *c, int src_block, int dst_block, char *err, size_t errlen) {
    int wino = c->algo == dnnl_convolution_winograd;
    if (setup_forward(c, src_block, dst_block, err, errlen)) return -1;
    if (!c->training) return 0;
    if (c->need_bwd_data &&
        (make_bwdd_pd(c, err, errlen) || (wino && !strstr(impl_of(c->bwdd_pd), "wino"))))
        return -1;
    if (make_bwdw_pd(c, err, errlen) || (wino && !strstr(impl_of(c->bwdw_pd), "wino")))
        return -1;
    return 0;
}

/* The primitives, memory handles and weight reorders of the descriptors make_pds built. */
static int materialize(pf_conv *c, char *err, size_t errlen) {
    pf_dnnl *ctx = c->ctx;
    const dnnl_memory_desc_t *lp_src_md = q_md(c->fwd_pd, dnnl_query_src_md);
    const dnnl_memory_desc_t *dst_md = q_md(c->fwd_pd, dnnl_query_dst_md);
    dnnl_memory_desc_t src_f32 = with_dt(lp_src_md, dnnl_f32);
    dnnl_memory_desc_t dst_lp = with_dt(dst_md, dnnl_bf16);
    const dnnl_memory_desc_t *src_md = &src_f32;     /* the caller's float tensors */
    const dnnl_memory_desc_t *wfwd_md = q_md(c->fwd_pd, dnnl_query_weights_md);
    dnnl_memory_desc_t user_w_md, bias_md;
    dnnl_dims_t wdims = { c->oc, c->ic, c->k, c->k }, bdims = { c->oc };
    CK(dnnl_memory_desc_init_by_tag(&user_w_md, 4, wdims, dnnl_f32, dnnl_oihw),
       "weights memory_desc");
    CK(dnnl_memory_desc_init_by_tag(&bias_md, 1, bdims, dnnl_f32, dnnl_a), "bias memory_desc");
    CK(dnnl_primitive_create(&c->fwd, c->fwd_pd), "convolution forward primitive_create");
    CK(dnnl_memory_create(&c->m_src, src_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&c->m_dst, dst_md, ctx->engine, DNNL_MEMORY_NONE), "memory_create");
    CK(dnnl_memory_create(&c->m_identity, dst_md, ctx->engine, DNNL_MEMORY_NONE),
       "memory_create");
    CK(dnnl_memory_create(&c->m_w_user, &user_w_md, ctx->engine, DNNL_MEMORY_NONE),
       "memory_create");
    CK(dnnl_memory_create(&c->m_bias, &bias_md, ctx->engine, DNNL_MEMORY_NONE),
       "memory_create");
    if (lp(c)) {
        /* src (forward, backward-weights) and diff_dst (both backward directions) are rounded
           to bf16 by oneDNN reorders (round to nearest even) into the engine's scratch */
        CK(dnnl_memory_create(&c->m_src_lp, lp_src_md, ctx->engine, DNNL_MEMORY_NONE),
           "memory_create");
        if (make_reorder(c, &c->src_to_lp, src_md, lp_src_md, err, errlen) ||
            pf_dnnl_scratch(&ctx->bf16_src, &ctx->bf16_src_len,
                            dnnl_memory_desc_get_size(lp_src_md), c->name, err, errlen))
            goto fail;
        if (c->training) {
            CK(dnnl_memory_create(&c->m_dst_lp, &dst_lp, ctx->engine, DNNL_MEMORY_NONE),
               "memory_create");
            if (make_reorder(c, &c->dst_to_lp, dst_md, &dst_lp, err, errlen) ||
                pf_dnnl_scratch(&ctx->bf16_dst, &ctx->bf16_dst_len,
                                dnnl_memory_desc_get_size(&dst_lp), c->name, err, errlen))
                goto fail;
        }
    }
    if (make_reorder(c, &c->w_to_fwd, &user_w_md, wfwd_md, err, errlen)) goto fail;
    if (c->w_to_fwd)
        CK(dnnl_memory_create(&c->m_w_fwd, wfwd_md, ctx->engine, DNNL_MEMORY_ALLOCATE),
           "memory_create");
    if (c->bwdd_pd) {
        CK(dnnl_primitive_create(&c->bwdd, c->bwdd_pd),
           "convolution backward-data primitive_create");
        const dnnl_memory_desc_t *wb_md = q_md(c->bwdd_pd, dnnl_query_weights_md);
        if (dnnl_memory_desc_equal(wb_md, wfwd_md)) {
            /* reuse the forward copy (or the user buffer) */
            c->w_for_bwdd = c->w_to_fwd ? c->m_w_fwd : c->m_w_user;
        } else {
            if (make_reorder(c, &c->w_to_bwdd, &user_w_md, wb_md, err, errlen)) goto fail;
            if (c->w_to_bwdd)
                CK(dnnl_memory_create(&c->m_w_bwdd, wb_md, ctx->engine, DNNL_MEMORY_ALLOCATE),
                   "memory_create");
            c->w_for_bwdd = c->w_to_bwdd ? c->m_w_bwdd : c->m_w_user;
        }
    }
    if (c->bwdw_pd) {
        CK(dnnl_primitive_create(&c->bwdw, c->bwdw_pd),
           "convolution backward-weights primitive_create");
        const dnnl_memory_desc_t *dw_md = q_md(c->bwdw_pd, dnnl_query_diff_weights_md);
        CK(dnnl_memory_create(&c->m_dw_user, &user_w_md, ctx->engine, DNNL_MEMORY_NONE),
           "memory_create");
        CK(dnnl_memory_create(&c->m_dbias, &bias_md, ctx->engine, DNNL_MEMORY_NONE),
           "memory_create");
        if (make_reorder(c, &c->dw_to_user, dw_md, &user_w_md, err, errlen)) goto fail;
        if (c->dw_to_user)
            CK(dnnl_memory_create(&c->m_dw, dw_md, ctx->engine, DNNL_MEMORY_ALLOCATE),
               "memory_create");
    }
    return 0;
fail:
    return -1;
}

/* The descriptors for (n, h, w, training) and the given blocks: Winograd first where the rule
   says so, direct when any direction lacks its Winograd kernel. 0, or -1 with err. */
static int choose(pf_conv *c, pf_dnnl *ctx, int n, int h, int w, int src_block, int dst_block,
                  int training, int need_bwd_data, char *err, size_t errlen) {
    if (ctx->force_layout != PF_LAYOUT_ANY) {
        src_block = pf_layout_block(ctx->force_layout, c->ic);
        dst_block = pf_layout_block(ctx->force_layout, c->oc);
    }
    if (c->add && dst_block < 0) {
        snprintf(err, errlen, "%s: a residual convolution needs its output layout", c->name);
        pf_conv_free(c);
        return -1;
    }
    c->ctx = ctx;
    c->prec = training ? ctx->prec_train : ctx->prec_infer;
    for (int wino = want_winograd(c); wino >= 0; wino--) {
        pf_conv_free(c);
        c->n = n;
        c->h = h;
        c->w = w;
        c->oh = (h + 2 * c->pad - c->k) / c->stride + 1;
        c->ow = (w + 2 * c->pad - c->k) / c->stride + 1;
        c->training = training;
        c->need_bwd_data = training && need_bwd_data;
        c->algo = wino ? dnnl_convolution_winograd : dnnl_convolution_direct;
        if (make_pds(c, src_block, dst_block, err, errlen) == 0) return 0;
    }
    pf_conv_free(c);
    return -1;
}

int pf_conv_setup(pf_conv *c, pf_dnnl *ctx, int n, int h, int w, int src_block, int dst_block,
                  int training, int need_bwd_data, char *err, size_t errlen) {
    int fs = ctx->force_layout != PF_LAYOUT_ANY ? pf_layout_block(ctx->force_layout, c->ic)
                                                : src_block;
    int fd = ctx->force_layout != PF_LAYOUT_ANY ? pf_layout_block(ctx->force_layout, c->oc)
                                                : dst_block;
    /* the same request again keeps what was built (an explicit layout can get other kernels
       than `any` resolving to the same layout) */
    if (c->fwd && c->n == n && c->h == h && c->w == w && c->training == training &&
        c->need_bwd_data == (training && need_bwd_data) && fs == c->req_src &&
        fd == c->req_dst && c->prec == (training ? ctx->prec_train : ctx->prec_infer))
        return 0;
    if (choose(c, ctx, n, h, w, src_block, dst_block, training, need_bwd_data, err, errlen))
        return -1;
    c->req_src = fs;
    c->req_dst = fd;
    if (materialize(c, err, errlen)) {
        pf_conv_free(c);
        return -1;
    }
    return 0;
}

/* How fast a kernel is: 2 JIT (jit, brgconv, Winograd), 1 oneDNN's im2col + gemm path, 0 a
   reference loop. */
static int kernel_rank(dnnl_primitive_desc_t pd) {
    const char *impl = impl_of(pd);
    return !pd ? 2 : strstr(impl, "ref") ? 0 : strstr(impl, "gemm") ? 1 : 2;
}

static int rank_of(const pf_conv *c) {
    int a = kernel_rank(c->fwd_pd), b = kernel_rank(c->bwdd_pd), d = kernel_rank(c->bwdw_pd);
    int r = a < b ? a : b;
    return r < d ? r : d;
}

int pf_conv_rank(const pf_conv *c) { return c->fwd_pd ? rank_of(c) : -1; }

int pf_conv_probe(const pf_conv *c, pf_dnnl *ctx, int n, int h, int w, int src_block,
                  int dst_block, int training, int need_bwd_data, int *src_out, int *dst_out) {
    pf_conv p;
    char err[256];
    pf_conv_init(&p, c->name, c->ic, c->oc, c->k, c->relu);
    pf_conv_set_geometry(&p, c->stride, c->pad, c->bias);
    p.alpha = c->alpha;
    p.add = c->add;
    p.add_scale = c->add_scale;
    int r = -1;
    if (choose(&p, ctx, n, h, w, src_block, dst_block, training, need_bwd_data, err,
               sizeof err) == 0) {
        r = rank_of(&p);
        if (src_out) *src_out = p.src_block;
        if (dst_out) *dst_out = p.dst_block;
    }
    pf_conv_free(&p);
    return r;
}

static int run(pf_conv *c, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args,
               const char *what, char *err, size_t errlen) {
    return pf_dnnl_check(dnnl_primitive_execute(p, c->ctx->stream, nargs, args), c->name, what,
                         err, errlen);
}

static int reorder(pf_conv *c, dnnl_primitive_t p, dnnl_memory_t from, dnnl_memory_t to,
                   char *err, size_t errlen) {
    dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
    return run(c, p, 2, a, "weights reorder", err, errlen);
}

static int set_handle(pf_conv *c, dnnl_memory_t m, const void *p, char *err, size_t errlen) {
    return pf_dnnl_check(dnnl_memory_set_data_handle(m, (void *)p), c->name,
                         "memory_set_data_handle", err, errlen);
}

/* The memory a direction reads a tensor from: `user` (f32, its handle already set), or in
   bf16 that tensor rounded by `prim` into `lpm` on the engine's scratch `buf` (src: to_lp
   src_to_lp, m_src_lp, bf16_src; diff_dst: dst_to_lp, m_dst_lp, bf16_dst). NULL on failure
   (err set). */
static dnnl_memory_t to_lp(pf_conv *c, dnnl_memory_t user, dnnl_primitive_t prim,
                           dnnl_memory_t lpm, void *buf, char *err, size_t errlen) {
    if (!lp(c)) return user;
    dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, user }, { DNNL_ARG_TO, lpm } };
    if (set_handle(c, lpm, buf, err, errlen) ||
        run(c, prim, 2, a, "f32 to bf16 reorder", err, errlen))
        return NULL;
    return lpm;
}
static dnnl_memory_t src_in(pf_conv *c, char *err, size_t errlen) {
    return to_lp(c, c->m_src, c->src_to_lp, c->m_src_lp, c->ctx->bf16_src, err, errlen);
}
static dnnl_memory_t ddst_in(pf_conv *c, char *err, size_t errlen) {
    return to_lp(c, c->m_dst, c->dst_to_lp, c->m_dst_lp, c->ctx->bf16_dst, err, errlen);
}

int pf_conv_set_weights(pf_conv *c, const float *w_oihw, const float *bias, char *err,
                        size_t errlen) {
    if (!c->fwd) {
        snprintf(err, errlen, "%s: set_weights before setup", c->name);
        return -1;
    }
    if (set_handle(c, c->m_w_user, w_oihw, err, errlen)) return -1;
    if (c->bias && set_handle(c, c->m_bias, bias, err, errlen)) return -1;
    if (c->w_to_fwd && reorder(c, c->w_to_fwd, c->m_w_user, c->m_w_fwd, err, errlen)) return -1;
    if (c->w_to_bwdd && reorder(c, c->w_to_bwdd, c->m_w_user, c->m_w_bwdd, err, errlen))
        return -1;
    return 0;
}

int pf_conv_forward(pf_conv *c, const float *src, float *dst, char *err, size_t errlen) {
    if (set_handle(c, c->m_src, src, err, errlen) || set_handle(c, c->m_dst, dst, err, errlen))
        return -1;
    dnnl_memory_t s = src_in(c, err, errlen);
    if (!s) return -1;
    dnnl_exec_arg_t a[4] = {    /* the bias last: left out without one */
        { DNNL_ARG_SRC, s },
        { DNNL_ARG_WEIGHTS, c->w_to_fwd ? c->m_w_fwd : c->m_w_user },
        { DNNL_ARG_DST, c->m_dst },
        { DNNL_ARG_BIAS, c->m_bias },
    };
    if (run(c, c->fwd, 3 + !!c->bias, a, "convolution forward", err, errlen)) return -1;
    if (c->act_apart) {
        /* the activation the primitive could not fuse: y = y > 0 ? y : alpha * y, selected
           on the bits with integer masks (as nn/cpu/ops.c's pf_cpu_act_mask_backward), which GCC vectorises;
           a float compare and select stays a scalar branch */
        size_t n = pf_blk_numel(c->n, c->oc, c->oh, c->ow, c->dst_block);
        float al = c->alpha;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            int32_t xi, si;
            float sv = dst[i] * al;
            memcpy(&xi, &dst[i], sizeof xi);
            memcpy(&si, &sv, sizeof si);
            int32_t keep = -(int32_t)(xi > 0);          /* all ones where y > 0 */
            xi = (xi & keep) | (si & ~keep);
            memcpy(&dst[i], &xi, sizeof xi);
        }
    }
    return 0;
}

int pf_conv_forward_residual(pf_conv *c, const float *src, const float *identity, float *dst,
                             char *err, size_t errlen) {
    if (!c->add) {
        snprintf(err, errlen, "%s: not a residual convolution", c->name);
        return -1;
    }
    if (!c->add_fused) {
        if (pf_conv_forward(c, src, dst, err, errlen)) return -1;
        size_t n = pf_blk_numel(c->n, c->oc, c->oh, c->ow, c->dst_block);
        float sc = c->add_scale;
        if (sc == 1.0f) {
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) dst[i] += identity[i];
        } else {
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) dst[i] = identity[i] + sc * dst[i];
        }
        return 0;
    }
    if (set_handle(c, c->m_src, src, err, errlen) || set_handle(c, c->m_dst, dst, err, errlen) ||
        set_handle(c, c->m_identity, identity, err, errlen))
        return -1;
    dnnl_memory_t s = src_in(c, err, errlen);
    if (!s) return -1;
    int binary_idx = c->add_scale != 1.0f ? 1 : 0; /* position of the add in the chain */
    dnnl_exec_arg_t a[5] = {    /* the bias last: left out without one */
        { DNNL_ARG_SRC, s },
        { DNNL_ARG_WEIGHTS, c->w_to_fwd ? c->m_w_fwd : c->m_w_user },
        { DNNL_ARG_DST, c->m_dst },
        { DNNL_ARG_ATTR_MULTIPLE_POST_OP(binary_idx) | DNNL_ARG_SRC_1, c->m_identity },
        { DNNL_ARG_BIAS, c->m_bias },
    };
    return run(c, c->fwd, 4 + !!c->bias, a, "convolution forward (residual)", err, errlen);
}

int pf_conv_backward_data(pf_conv *c, const float *diff_dst, float *diff_src, char *err,
                          size_t errlen) {
    if (!c->bwdd) {
        snprintf(err, errlen, "%s: backward-data primitive not built", c->name);
        return -1;
    }
    /* m_dst / m_src (f32) share the diff tensors' descriptors (same shape and layout). */
    if (set_handle(c, c->m_dst, diff_dst, err, errlen) ||
        set_handle(c, c->m_src, diff_src, err, errlen))
        return -1;
    dnnl_memory_t w = c->w_for_bwdd, dd = ddst_in(c, err, errlen);
    if (!dd) return -1;
    dnnl_exec_arg_t a[3] = {
        { DNNL_ARG_DIFF_DST, dd },
        { DNNL_ARG_WEIGHTS, w },
        { DNNL_ARG_DIFF_SRC, c->m_src },
    };
    return run(c, c->bwdd, 3, a, "convolution backward-data", err, errlen);
}

int pf_conv_backward_weights(pf_conv *c, const float *src, const float *diff_dst, float *dw,
                             float *db, char *err, size_t errlen) {
    if (!c->bwdw) {
        snprintf(err, errlen, "%s: backward-weights primitive not built", c->name);
        return -1;
    }
    if (set_handle(c, c->m_src, src, err, errlen) ||
        set_handle(c, c->m_dst, diff_dst, err, errlen) ||
        set_handle(c, c->m_dw_user, dw, err, errlen) ||
        (c->bias && set_handle(c, c->m_dbias, db, err, errlen)))
        return -1;
    dnnl_memory_t s = src_in(c, err, errlen), dd = s ? ddst_in(c, err, errlen) : NULL;
    if (!dd) return -1;
    dnnl_exec_arg_t a[4] = {    /* the bias last: left out without one */
        { DNNL_ARG_SRC, s },
        { DNNL_ARG_DIFF_DST, dd },
        { DNNL_ARG_DIFF_WEIGHTS, c->dw_to_user ? c->m_dw : c->m_dw_user },
        { DNNL_ARG_DIFF_BIAS, c->m_dbias },
    };
    if (run(c, c->bwdw, 3 + !!c->bias, a, "convolution backward-weights", err, errlen)) return -1;
    if (c->dw_to_user && reorder(c, c->dw_to_user, c->m_dw, c->m_dw_user, err, errlen))
        return -1;
    return 0;
}

const char *pf_conv_impl(const pf_conv *c) { return impl_of(c->fwd_pd); }
const char *pf_conv_impl_bwd_data(const pf_conv *c) { return impl_of(c->bwdd_pd); }
const char *pf_conv_impl_bwd_weights(const pf_conv *c) { return impl_of(c->bwdw_pd); }
