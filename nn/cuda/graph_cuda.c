/*  graph_cuda — node-list networks on a CUDA device (see graph_cuda.h). The plan, forward and
    backward follow nn/graph.c node by node; what differs is the layout (plain NCHW, so no
    layout planning) and that every gradient is a buffer of its own (no hand-over of buffers
    between nodes: a contribution is copied or added). */
#include "nn/cuda/graph_cuda.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/ops.h"
#include "nn/model_internal.h"

#define TRY(x) do { if (x) return -1; } while (0)

/* An op (nn/cuda/ops.h) called with the local buffer `oe`; on failure err names the node. */
#define OP(expr)                                                                              \
    do {                                                                                      \
        if (expr) {                                                                           \
            snprintf(err, errlen, "%s node %d (%s): %s", g->desc->cfg.model_type,             \
                     (int)(nd - g->graph->node), op_name(nd->op), oe);                        \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

#define CUDA_TRY(what, expr)                                                                  \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            snprintf(err, errlen, "%s: %s: %s", g->desc->cfg.model_type, (what),              \
                     cudaGetErrorString(e_));                                                 \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

typedef struct {
    int h, w;
    size_t numel;           /* n * c * h * w */
    float *data, *grad;
    int need_grad;          /* a parameter lies upstream */
    int grad_set;           /* backward: grad holds a value this step */
    int last_use;           /* index of the last node reading it */
    int slot;               /* inference: buffer slot */
} cutensor;

typedef struct {
    int n, h, w;            /* LQ batch shape; 0 = not built */
    cutensor *ts;
    uint8_t *u8;            /* uploaded lq (then gt when training) */
    float *gt, *pred;       /* gt / 255 and the output image, N x 3 x Hs x Ws */
    float *scratch[2];      /* backward temporaries, the largest tensor each */
    void **allocs;          /* every cudaMalloc of this plan */
    int n_allocs, max_allocs;
} cuplan;

struct pf_cugraph {
    pf_model *desc;         /* the CPU backend's description: graph, tensors, convs */
    pf_graph *graph;        /* &desc->graph */
    pf_cuconv *train_conv, *infer_conv;     /* desc->n_convs each */
    /* FSRCNN: the sub-pixel conv's weights + bias and their gradients (device), and the
       index maps: params -> sub_w (n_sub_w), sub_dw -> weight grads (1 each), sub_dw -> bias
       grads (r^2 each) */
    float *sub_w, *sub_dw;
    int *idx_fwd, *idx_gw, *idx_gb;
    size_t n_sub_w;
    cuplan train, infer;
};

static const char *op_name(pf_gop op) {
    static const char *names[] = { "input", "conv", "prelu", "tanh", "sigmoid", "add", "gap",
                                   "mul_ch", "concat", "shuffle", "unshuffle", "nearest",
                                   "bilinear_in", "bicubic_in" };
    return (unsigned)op < sizeof names / sizeof *names ? names[op] : "?";
}

int pf_cugraph_supports(const char *t) {
    return !strcmp(t, "SRCNN") || !strcmp(t, "FSRCNN") || !strcmp(t, "ESPCN") ||
           !strcmp(t, "MSRResNet") || !strcmp(t, "RCAN") || !strcmp(t, "RRDBNet");
}

/* ---- description ------------------------------------------------------------------------ */

/* FSRCNN's index maps (see the struct) to the device. */
static int sub_maps(pf_cugraph *g, char *err, size_t errlen) {
    pf_model *m = g->desc;
    const pf_param_info *wt = &m->tensors[m->conv_w[m->sub_conv]], *bt = wt + 1;
    int r = m->sub_stride, rr = r * r, k = 2 * m->sub_r + 1, oc = 3 * rr;
    size_t wn = (size_t)oc * (size_t)wt->shape[0] * (size_t)k * (size_t)k;
    g->n_sub_w = wn + (size_t)oc;
    int *fwd = malloc(g->n_sub_w * sizeof *fwd), *gb = malloc((size_t)oc * sizeof *gb);
    if (!fwd || !gb) {
        free(fwd);
        free(gb);
        snprintf(err, errlen, "FSRCNN: out of memory");
        return -1;
    }
    for (size_t s = 0; s < wn; s++) fwd[s] = -1;   /* taps no weight reaches stay zero */
    for (size_t w = 0; w < wt->numel; w++) fwd[m->sub_idx[w]] = (int)(wt->offset + w);
    for (int o = 0; o < 3; o++)
        for (int p = 0; p < rr; p++) {
            fwd[wn + (size_t)o * rr + p] = (int)(bt->offset + (size_t)o);
            gb[o * rr + p] = (int)(wn + (size_t)o * rr + p);
        }
    cudaError_t e;
    if ((e = cudaMalloc((void **)&g->sub_w, g->n_sub_w * sizeof(float))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->sub_dw, g->n_sub_w * sizeof(float))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->idx_fwd, g->n_sub_w * sizeof(int))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->idx_gw, wt->numel * sizeof(int))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->idx_gb, (size_t)oc * sizeof(int))) != cudaSuccess ||
        (e = cudaMemcpy(g->idx_fwd, fwd, g->n_sub_w * sizeof(int), cudaMemcpyHostToDevice)) !=
            cudaSuccess ||
        (e = cudaMemcpy(g->idx_gw, m->sub_idx, wt->numel * sizeof(int),
                        cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(g->idx_gb, gb, (size_t)oc * sizeof(int), cudaMemcpyHostToDevice)) !=
            cudaSuccess ||
        /* a pageable cudaMemcpy may return before its DMA lands, and the model's stream is
           non-blocking (no implicit order with the legacy stream these copies went to) */
        (e = cudaStreamSynchronize(0)) != cudaSuccess) {
        free(fwd);
        free(gb);
        snprintf(err, errlen, "FSRCNN: sub-pixel weights on the device: %s",
                 cudaGetErrorString(e));
        return -1;
    }
    free(fwd);
    free(gb);
    return 0;
}

pf_cugraph *pf_cugraph_new(const pf_config *cfg, char *err, size_t errlen) {
    if (!pf_cugraph_supports(cfg->model_type)) {
        snprintf(err, errlen, "cuda graph: unsupported model_type '%s'", cfg->model_type);
        return NULL;
    }
    pf_cugraph *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "cuda model: out of memory");
        return NULL;
    }
    if (!(g->desc = pf_model_new(cfg, err, errlen))) goto fail;
    pf_model *m = g->desc;
    g->graph = &m->graph;
    g->train_conv = calloc((size_t)m->n_convs + 1, sizeof *g->train_conv);
    g->infer_conv = calloc((size_t)m->n_convs + 1, sizeof *g->infer_conv);
    if (!g->train_conv || !g->infer_conv) {
        snprintf(err, errlen, "cuda model: out of memory");
        goto fail;
    }
    for (int i = 0; i < m->n_convs; i++) {
        const pf_conv *c = &m->train_conv[i];
        pf_cuconv_init(&g->train_conv[i], c->name, c->ic, c->oc, c->k);
        pf_cuconv_init(&g->infer_conv[i], c->name, c->ic, c->oc, c->k);
    }
    if (m->sub_conv >= 0 && sub_maps(g, err, errlen)) goto fail;
    return g;
fail:
    pf_cugraph_destroy(&g);
    return NULL;
}

static void plan_free(cuplan *p) {
    for (int i = 0; i < p->n_allocs; i++) cudaFree(p->allocs[i]);
    free(p->allocs);
    free(p->ts);
    memset(p, 0, sizeof *p);
}

void pf_cugraph_destroy(pf_cugraph **self) {
    pf_cugraph *g = *self;
    if (!g) return;
    plan_free(&g->train);
    plan_free(&g->infer);
    for (int i = 0; g->desc && i < g->desc->n_convs; i++) {
        if (g->train_conv) pf_cuconv_free(&g->train_conv[i]);
        if (g->infer_conv) pf_cuconv_free(&g->infer_conv[i]);
    }
    free(g->train_conv);
    free(g->infer_conv);
    cudaFree(g->sub_w);
    cudaFree(g->sub_dw);
    cudaFree(g->idx_fwd);
    cudaFree(g->idx_gw);
    cudaFree(g->idx_gb);
    pf_model_destroy(&g->desc);
    free(g);
    *self = NULL;
}

int pf_cugraph_num_tensors(const pf_cugraph *g) { return pf_model_num_tensors(g->desc); }
const pf_param_info *pf_cugraph_tensor_info(const pf_cugraph *g, int i) {
    return pf_model_tensor_info(g->desc, i);
}
size_t pf_cugraph_num_params(const pf_cugraph *g) { return pf_model_num_params(g->desc); }
int pf_cugraph_input_multiple(const pf_cugraph *g) { return pf_model_input_multiple(g->desc); }

/* ---- plans ------------------------------------------------------------------------------ */

static void *plan_alloc(cuplan *p, size_t bytes) {
    if (p->n_allocs >= p->max_allocs) return NULL;
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    p->allocs[p->n_allocs++] = d;
    return d;
}

static int plan_build(pf_cugraph *g, cuplan *p, pf_cuconv *convs, pf_cudnn *ctx, int n, int h,
                      int w, int training, char *err, size_t errlen) {
    const pf_graph *G = g->graph;
    pf_model *m = g->desc;
    const char *type = m->cfg.model_type;
    if (n < 1 || h < 1 || w < 1) {
        snprintf(err, errlen, "%s: bad input shape %d x %d x %d", type, n, h, w);
        return -1;
    }
    if (p->n == n && p->h == h && p->w == w) return 0;
    plan_free(p);
    p->max_allocs = 2 * G->n_t + 8;
    p->ts = calloc((size_t)G->n_t, sizeof *p->ts);
    p->allocs = calloc((size_t)p->max_allocs, sizeof *p->allocs);
    if (!p->ts || !p->allocs) {
        plan_free(p);
        snprintf(err, errlen, "%s: out of host memory", type);
        return -1;
    }
    size_t max_numel = 0;
    for (int i = 0; i < G->n_t; i++) {
        const pf_gtensor *t = &G->t[i];
        if (!t->one && (h * t->mul % t->div || w * t->mul % t->div)) {
            snprintf(err, errlen, "%s: input %d x %d is not divisible by %d", type, h, w,
                     t->div);
            goto fail;
        }
        cutensor *s = &p->ts[i];
        s->h = t->one ? 1 : h * t->mul / t->div;
        s->w = t->one ? 1 : w * t->mul / t->div;
        s->numel = (size_t)n * t->c * s->h * s->w;
        s->last_use = -1;
        if (s->numel > max_numel) max_numel = s->numel;
    }
    for (int k = 0; k < G->n_node; k++) {
        const pf_gnode *nd = &G->node[k];
        cutensor *o = &p->ts[nd->out];
        for (int i = 0; i < nd->n_in; i++) {
            p->ts[nd->in[i]].last_use = k;
            if (p->ts[nd->in[i]].need_grad) o->need_grad = 1;
        }
        if (nd->op == PF_G_CONV) {
            const cutensor *a = &p->ts[nd->in[0]];
            if (pf_cuconv_setup(&convs[nd->conv], ctx, n, a->h, a->w, training, err, errlen))
                goto fail;
            o->need_grad = 1;
        }
        if (nd->op == PF_G_PRELU) o->need_grad = 1;
    }
    p->ts[G->output].last_use = G->n_node;     /* the loss / the download reads it */

    int s = m->scale;
    size_t lq = (size_t)n * h * w * 3, hq = lq * (size_t)s * s;
#define ALLOC(ptr, count)                                                                     \
    do {                                                                                      \
        if (!((ptr) = plan_alloc(p, (size_t)(count) * sizeof *(ptr)))) goto oom;              \
    } while (0)
    ALLOC(p->u8, lq + (training ? hq : 0));
    ALLOC(p->pred, hq);
    if (training) {
        ALLOC(p->gt, hq);
        ALLOC(p->scratch[0], max_numel);
        ALLOC(p->scratch[1], max_numel);
        for (int i = 0; i < G->n_t; i++) {
            ALLOC(p->ts[i].data, p->ts[i].numel);
            if (p->ts[i].need_grad) ALLOC(p->ts[i].grad, p->ts[i].numel);
        }
    } else {
        size_t *size = NULL;
        int n_slots = pf_graph_assign_slots(G, p->ts, sizeof *p->ts, offsetof(cutensor, numel),
                                            offsetof(cutensor, last_use),
                                            offsetof(cutensor, slot), &size);
        if (n_slots < 0) {
            snprintf(err, errlen, "%s: out of host memory", type);
            goto fail;
        }
        float **slot = calloc((size_t)n_slots + 1, sizeof *slot);
        int ok = slot != NULL;
        for (int i = 0; ok && i < n_slots; i++)
            ok = (slot[i] = plan_alloc(p, size[i] * sizeof(float))) != NULL;
        for (int i = 0; ok && i < G->n_t; i++) p->ts[i].data = slot[p->ts[i].slot];
        free(slot);
        free(size);
        if (!ok) goto oom;
    }
#undef ALLOC
    p->n = n;
    p->h = h;
    p->w = w;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of device memory for the activations of a %d x %d x %d "
             "batch (%s)", type, n, h, w, training ? "training" : "inference");
fail:
    plan_free(p);
    return -1;
}

/* ---- forward ------------------------------------------------------------------------------ */

/* Weights and bias of conv layer i on the device (FSRCNN's sub-pixel layer: its own). */
static const float *conv_weights(pf_cugraph *g, const pf_cugraph_env *env, int i) {
    return i == g->desc->sub_conv ? g->sub_w : pf_model_conv_w(g->desc, env->params, i);
}
static const float *conv_bias(pf_cugraph *g, const pf_cugraph_env *env, int i) {
    if (i != g->desc->sub_conv) return pf_model_conv_b(g->desc, env->params, i);
    const pf_cuconv *c = &g->train_conv[i];
    return g->sub_w + (size_t)c->oc * c->ic * c->k * c->k;
}

static int forward_node(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, pf_cuconv *convs,
                        const pf_gnode *nd, char *err, size_t errlen) {
    const pf_graph *G = g->graph;
    cudaStream_t st = env->stream;
    char oe[512];
    int n = p->n, C = G->t[nd->out].c;
    cutensor *o = &p->ts[nd->out], *a = nd->n_in ? &p->ts[nd->in[0]] : NULL;
    float *y = o->data;
    switch (nd->op) {
    case PF_G_INPUT:
        OP(pf_cuda_u8_nhwc_to_nchw(y, p->u8, n, p->h, p->w, 3, st, oe, sizeof oe));
        OP(pf_cuda_mean_shift(y, y, n, 3, p->h, p->w, G->use_mean ? G->mean : NULL, G->range,
                              st, oe, sizeof oe));
        return 0;
    case PF_G_BILINEAR_IN:
        OP(pf_cuda_bilinear_u8(y, p->u8, n, p->h, p->w, nd->r, st, oe, sizeof oe));
        return 0;
    case PF_G_BICUBIC_IN:
        OP(pf_cuda_bicubic_u8(y, p->u8, n, p->h, p->w, nd->r, st, oe, sizeof oe));
        return 0;
    case PF_G_CONV: {
        pf_cuconv *c = &convs[nd->conv];
        const pf_conv *dc = &g->desc->train_conv[nd->conv];
        TRY(pf_cuconv_forward(c, a->data, conv_weights(g, env, nd->conv),
                              conv_bias(g, env, nd->conv), y, err, errlen));
        if (dc->relu)
            OP(pf_cuda_leaky_relu_forward(y, y, dc->alpha, o->numel, st, oe, sizeof oe));
        if (nd->n_in > 1)   /* y = identity + scale * conv */
            OP(pf_cuda_add_scaled(y, p->ts[nd->in[1]].data, y, nd->scale, o->numel, st, oe,
                                  sizeof oe));
        return 0;
    }
    case PF_G_PRELU:
        OP(pf_cuda_prelu_forward(y, a->data, env->params + g->desc->tensors[nd->param].offset,
                                 n, C, o->h, o->w, st, oe, sizeof oe));
        return 0;
    case PF_G_TANH:
        OP(pf_cuda_tanh_forward(y, a->data, o->numel, st, oe, sizeof oe));
        return 0;
    case PF_G_SIGMOID:
        OP(pf_cuda_sigmoid_forward(y, a->data, o->numel, st, oe, sizeof oe));
        return 0;
    case PF_G_ADD:
        OP(pf_cuda_add_scaled(y, a->data, p->ts[nd->in[1]].data, nd->scale, o->numel, st, oe,
                              sizeof oe));
        return 0;
    case PF_G_GAP:
        OP(pf_cuda_gap_forward(y, a->data, n, C, a->h, a->w, st, oe, sizeof oe));
        return 0;
    case PF_G_MUL_CH:
        OP(pf_cuda_mul_ch_forward(y, a->data, p->ts[nd->in[1]].data,
                                  nd->n_in > 2 ? p->ts[nd->in[2]].data : NULL, nd->scale, n, C,
                                  o->h, o->w, st, oe, sizeof oe));
        return 0;
    case PF_G_CONCAT: {
        int off = 0;
        for (int i = 0; i < nd->n_in; i++) {
            int ci = G->t[nd->in[i]].c;
            OP(pf_cuda_copy_channels(y, C, off, p->ts[nd->in[i]].data, ci, 0, ci, n,
                                     o->h * o->w, 0, st, oe, sizeof oe));
            off += ci;
        }
        return 0;
    }
    case PF_G_SHUFFLE:
        OP(pf_cuda_pixel_shuffle_forward(y, a->data, n, C, a->h, a->w, nd->r, st, oe,
                                         sizeof oe));
        return 0;
    case PF_G_UNSHUFFLE:    /* the inverse permutation: PixelShuffle's backward */
        OP(pf_cuda_pixel_shuffle_backward(y, a->data, n, G->t[nd->in[0]].c, o->h, o->w, nd->r,
                                          st, oe, sizeof oe));
        return 0;
    case PF_G_NEAREST:
        OP(pf_cuda_nearest_forward(y, a->data, n, C, a->h, a->w, nd->r, st, oe, sizeof oe));
        return 0;
    }
    snprintf(err, errlen, "%s: unknown graph op %d", g->desc->cfg.model_type, (int)nd->op);
    return -1;
}

/* Upload (lq [+ gt]) and run every node; p->pred = out / range + mean. */
static int forward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, pf_cuconv *convs,
                   const uint8_t *host_in, size_t in_bytes, char *err, size_t errlen) {
    const pf_graph *G = g->graph;
    cudaStream_t st = env->stream;
    CUDA_TRY("upload", cudaMemcpyAsync(p->u8, host_in, in_bytes, cudaMemcpyHostToDevice, st));
    if (g->desc->sub_conv >= 0) {
        char oe[512];
        if (pf_cuda_gather_sum(g->sub_w, env->params, g->idx_fwd, g->n_sub_w, 1, st, oe,
                               sizeof oe)) {
            snprintf(err, errlen, "FSRCNN last_part: sub-pixel weights: %s", oe);
            return -1;
        }
    }
    for (int k = 0; k < G->n_node; k++)
        TRY(forward_node(g, env, p, convs, &G->node[k], err, errlen));
    const cutensor *o = &p->ts[G->output];
    char oe[512];
    if (pf_cuda_mean_unshift(p->pred, o->data, p->n, 3, o->h, o->w,
                             G->use_mean ? G->mean : NULL, G->range, st, oe, sizeof oe)) {
        snprintf(err, errlen, "%s output: %s", g->desc->cfg.model_type, oe);
        return -1;
    }
    return 0;
}

/* ---- backward ----------------------------------------------------------------------------- */

/* t's gradient buffer for a contribution, *acc telling whether to add to it; NULL when t
   needs none. */
static float *grad_for(cutensor *t, int *acc) {
    if (!t->need_grad) return NULL;
    *acc = t->grad_set;
    t->grad_set = 1;
    return t->grad;
}

/* t's gradient gets src (a gradient of t's shape) as it is: copied, or added. */
static int grad_add(cutensor *t, const float *src, cudaStream_t st, char *oe, size_t oelen) {
    int acc;
    float *dx = grad_for(t, &acc);
    if (!dx) return 0;
    if (acc) return pf_cuda_axpy(dx, src, 1.0f, t->numel, st, oe, oelen);
    cudaError_t e = cudaMemcpyAsync(dx, src, t->numel * sizeof(float),
                                    cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess) return 0;
    snprintf(oe, oelen, "cudaMemcpyAsync: %s", cudaGetErrorString(e));
    return -1;
}

static int backward_node(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                         pf_cuconv *convs, const pf_gnode *nd, char *err, size_t errlen) {
    const pf_graph *G = g->graph;
    pf_model *m = g->desc;
    cudaStream_t st = env->stream;
    char oe[512];
    int n = p->n, C = G->t[nd->out].c, acc = 0;
    cutensor *o = &p->ts[nd->out], *a = nd->n_in ? &p->ts[nd->in[0]] : NULL;
    if (!o->grad_set) return 0;             /* nothing flows back through here */
    float *dy = o->grad, *dx;
    const float *y = o->data;
    switch (nd->op) {
    case PF_G_INPUT:
    case PF_G_BILINEAR_IN:
    case PF_G_BICUBIC_IN:
        return 0;
    case PF_G_CONV: {
        pf_cuconv *c = &convs[nd->conv];
        const pf_conv *dc = &m->train_conv[nd->conv];
        if (dc->relu)   /* dy is this node's own: masked in place */
            OP(pf_cuda_leaky_relu_backward(dy, dy, y, dc->alpha, o->numel, st, oe, sizeof oe));
        const float *dd = dy;
        if (nd->n_in > 1) {     /* y = identity + scale * conv */
            OP(grad_add(&p->ts[nd->in[1]], dy, st, oe, sizeof oe));
            if (nd->scale != 1.0f) {
                OP(pf_cuda_scale(p->scratch[0], dy, nd->scale, o->numel, st, oe, sizeof oe));
                dd = p->scratch[0];
            }
        }
        int sub = nd->conv == m->sub_conv;
        float *gw = sub ? g->sub_dw : pf_model_conv_w(m, env->grads, nd->conv);
        float *gb = sub ? g->sub_dw + (size_t)c->oc * c->ic * c->k * c->k
                        : pf_model_conv_b(m, env->grads, nd->conv);
        TRY(pf_cuconv_backward_filter(c, a->data, dd, gw, 0, err, errlen));
        TRY(pf_cuconv_backward_bias(c, dd, gb, 0, err, errlen));
        if (sub) {      /* back to the ConvTranspose2d tensors */
            const pf_param_info *wt = &m->tensors[m->conv_w[nd->conv]], *bt = wt + 1;
            int rr = m->sub_stride * m->sub_stride;
            OP(pf_cuda_gather_sum(env->grads + wt->offset, g->sub_dw, g->idx_gw, wt->numel, 1,
                                  st, oe, sizeof oe));
            OP(pf_cuda_gather_sum(env->grads + bt->offset, g->sub_dw, g->idx_gb, bt->numel, rr,
                                  st, oe, sizeof oe));
        }
        if ((dx = grad_for(a, &acc))) {
            const float *wts = conv_weights(g, env, nd->conv);
            if (!acc) return pf_cuconv_backward_data(c, wts, dd, dx, err, errlen);
            TRY(pf_cuconv_backward_data(c, wts, dd, p->scratch[1], err, errlen));
            OP(pf_cuda_axpy(dx, p->scratch[1], 1.0f, a->numel, st, oe, sizeof oe));
        }
        return 0;
    }
    case PF_G_PRELU:
        dx = grad_for(a, &acc);
        OP(pf_cuda_prelu_backward(dx, env->grads + m->tensors[nd->param].offset, dy, a->data,
                                  env->params + m->tensors[nd->param].offset, n, C, o->h,
                                  o->w, acc, st, oe, sizeof oe));
        return 0;
    case PF_G_TANH:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_tanh_backward(dx, dy, y, o->numel, acc, st, oe, sizeof oe));
        return 0;
    case PF_G_SIGMOID:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_sigmoid_backward(dx, dy, y, o->numel, acc, st, oe, sizeof oe));
        return 0;
    case PF_G_ADD: {
        cutensor *b = &p->ts[nd->in[1]];
        OP(grad_add(a, dy, st, oe, sizeof oe));
        if ((dx = grad_for(b, &acc))) {
            if (acc) OP(pf_cuda_axpy(dx, dy, nd->scale, b->numel, st, oe, sizeof oe));
            else OP(pf_cuda_scale(dx, dy, nd->scale, b->numel, st, oe, sizeof oe));
        }
        return 0;
    }
    case PF_G_GAP:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_gap_backward(dx, dy, n, C, a->h, a->w, acc, st, oe, sizeof oe));
        return 0;
    case PF_G_MUL_CH: {
        cutensor *s = &p->ts[nd->in[1]];
        int acc_s = 0;
        if (nd->n_in > 2) OP(grad_add(&p->ts[nd->in[2]], dy, st, oe, sizeof oe));
        dx = grad_for(a, &acc);
        float *ds = grad_for(s, &acc_s);
        if (dx || ds)
            OP(pf_cuda_mul_ch_backward(dx, ds, dy, a->data, s->data, nd->scale, n, C, o->h,
                                       o->w, acc, acc_s, st, oe, sizeof oe));
        return 0;
    }
    case PF_G_CONCAT: {
        int off = 0;
        for (int i = 0; i < nd->n_in; i++) {
            cutensor *t = &p->ts[nd->in[i]];
            int ci = G->t[nd->in[i]].c;
            if ((dx = grad_for(t, &acc)))
                OP(pf_cuda_copy_channels(dx, ci, 0, dy, C, off, ci, n, o->h * o->w, acc, st,
                                         oe, sizeof oe));
            off += ci;
        }
        return 0;
    }
    case PF_G_SHUFFLE:
    case PF_G_UNSHUFFLE: {
        if (!(dx = grad_for(a, &acc))) return 0;
        float *to = acc ? p->scratch[1] : dx;
        if (nd->op == PF_G_SHUFFLE)
            OP(pf_cuda_pixel_shuffle_backward(to, dy, n, C, a->h, a->w, nd->r, st, oe,
                                              sizeof oe));
        else    /* unshuffle's backward is the shuffle */
            OP(pf_cuda_pixel_shuffle_forward(to, dy, n, G->t[nd->in[0]].c, o->h, o->w, nd->r,
                                             st, oe, sizeof oe));
        if (acc) OP(pf_cuda_axpy(dx, to, 1.0f, a->numel, st, oe, sizeof oe));
        return 0;
    }
    case PF_G_NEAREST:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_nearest_backward(dx, dy, n, C, a->h, a->w, nd->r, acc, st, oe,
                                        sizeof oe));
        return 0;
    }
    snprintf(err, errlen, "%s: unknown graph op %d", m->cfg.model_type, (int)nd->op);
    return -1;
}

/* ---- entry points ------------------------------------------------------------------------- */

int pf_cugraph_train_step(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in,
                          int n, int h, int w, char *err, size_t errlen) {
    const pf_graph *G = g->graph;
    cuplan *p = &g->train;
    TRY(plan_build(g, p, g->train_conv, env->cudnn, n, h, w, 1, err, errlen));
    int s = g->desc->scale;
    size_t lq = (size_t)n * h * w * 3, hq = lq * (size_t)s * s;
    TRY(forward(g, env, p, g->train_conv, host_in, lq + hq, err, errlen));

    /* loss on the image; its gradient through out / range + mean is d image / range */
    cudaStream_t st = env->stream;
    cutensor *o = &p->ts[G->output];
    char oe[512];
    if (pf_cuda_u8_nhwc_to_nchw(p->gt, p->u8 + lq, n, h * s, w * s, 3, st, oe, sizeof oe) ||
        pf_cuda_pixel_loss(g->desc->cfg.loss_type, env->loss, o->grad, p->pred, p->gt, hq,
                           g->desc->cfg.loss_weight, g->desc->cfg.charbonnier_eps,
                           env->loss_scratch, st, oe, sizeof oe) ||
        (G->range != 1.0f &&
         pf_cuda_scale(o->grad, o->grad, 1.0f / G->range, hq, st, oe, sizeof oe))) {
        snprintf(err, errlen, "%s loss: %s", g->desc->cfg.model_type, oe);
        return -1;
    }

    /* gradients are overwritten: a parameter no node reaches keeps zero */
    CUDA_TRY("zero gradients",
             cudaMemsetAsync(env->grads, 0, pf_model_num_params(g->desc) * sizeof(float), st));
    for (int i = 0; i < G->n_t; i++) p->ts[i].grad_set = 0;
    o->grad_set = 1;
    for (int k = G->n_node - 1; k >= 0; k--)
        TRY(backward_node(g, env, p, g->train_conv, &G->node[k], err, errlen));
    return 0;
}

int pf_cugraph_infer(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in, int h,
                     int w, const float **pred, char *err, size_t errlen) {
    cuplan *p = &g->infer;
    TRY(plan_build(g, p, g->infer_conv, env->cudnn, 1, h, w, 0, err, errlen));
    TRY(forward(g, env, p, g->infer_conv, host_in, (size_t)h * w * 3, err, errlen));
    *pred = p->pred;
    return 0;
}
