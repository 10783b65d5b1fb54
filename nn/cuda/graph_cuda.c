/*  graph_cuda — the CUDA executor (see graph_cuda.h): a network description (nn/net.h) on one
    device. Plain NCHW everywhere, so no layout planning; buffers by the liveness rules of
    nn/net.c (activations: pf_net_assign_slots over pf_net_last_use; gradients:
    pf_net_assign_grad_slots); each node's forward and backward is a call of nn/cuda/ops.h
    kernels, cuDNN (nn/cuda/conv_cudnn.h) or cuBLAS (the DCN and Linear layers' FP32
    GEMMs). */
#include "nn/cuda/graph_cuda.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/dcn_cuda.h"
#include "nn/cuda/linear_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/net.h"

#define TRY(x) do { if (x) return -1; } while (0)

/* An op (nn/cuda/ops.h) called with the local buffer `oe`; on failure err names the node. */
#define OP(expr)                                                                              \
    do {                                                                                      \
        if (expr) {                                                                           \
            snprintf(err, errlen, "%s node %d (%s): %s", g->net.type,             \
                     (int)(nd - g->net.node), pf_net_op_name(nd->op), oe);                        \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

#define CUDA_TRY(what, expr)                                                                  \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            snprintf(err, errlen, "%s: %s: %s", g->net.type, (what),              \
                     cudaGetErrorString(e_));                                                 \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

typedef struct {
    int h, w;
    size_t numel;           /* n * c * h * w */
    float *data, *grad;     /* grad: training, where need_grad and some node passes one */
    int need_grad;          /* a parameter lies upstream (pf_net_need_grad) */
    int grad_set;           /* backward: grad holds a value this step */
} cutensor;

typedef struct {
    int n, h, w;            /* LQ batch shape; 0 = not built */
    cutensor *ts;
    uint8_t *u8;            /* uploaded lq (then gt when training) */
    float *gt, *pred;       /* gt / 255 and the output image, N x 3 x Hs x Ws */
    float *scratch[2];      /* backward temporaries: a residual conv's scaled gradient, a
                            pixel (un)shuffle's gradient before it is added (NULL: none) */
    void *warp_scratch;     /* a flow warp's fixed-point image gradient (NULL: none) */
    pf_cudcn *dcn;          /* per node: the DCN layers' shapes (host; others unused) */
    float *dcn_col, *dcn_dcol;  /* the largest DCN layer's columns and (training) their
                                   gradient, shared by every DCN layer (dcn_cuda.h) */
    void *dcn_scratch;      /* training: a DCN input gradient's fixed-point sums */
    double *bn_save;        /* training: each BatchNorm2d's batch mean and 1 / sqrt(var + eps)
                               at its stat offset (net.n_running doubles; NULL: none) */
    int training;           /* a training plan (BatchNorm2d: batch statistics) */
    int input_grad;         /* planned with the input's gradient (pf_cugraph_set_input_grad) */
    int *need;              /* host, input_grad plans: per tensor pf_net_need_grad, then
                               pf_net_need_input_grad, then pf_net_need_input_only (3 n_t) */
    float *prelu_sink;      /* input_grad plans with PReLU: its d alpha in an input-only
                               backward (the largest C floats; not a parameter gradient) */
    const float *x_f32;     /* forward: the caller's float input (NULL: the uploaded uint8) */
    int last_fwd;           /* the last training forward: 0 none, 1 uint8 (pred, gt valid),
                               2 float */
    float *dx;              /* backward: d loss / d input wanted there (NULL: not) */
    int dx_set;             /* dx holds a contribution */
    int no_param_grads;     /* backward: parameter gradients not computed (input only) */
    void **allocs;          /* every cudaMalloc of this plan */
    int n_allocs, max_allocs;
    size_t bytes;           /* device bytes of this plan's allocations */
} cuplan;

struct pf_cugraph {
    pf_config cfg;          /* loss keys */
    pf_net net;             /* the description (nn/zoo.c) */
    pf_cuconv *train_conv, *infer_conv;     /* net.n_convs each */
    /* FSRCNN: the sub-pixel conv's weights + bias and their gradients (device), and the
       index maps: params -> sub_w (n_sub_w), sub_dw -> weight grads (1 each), sub_dw -> bias
       grads (r^2 each) */
    float *sub_w, *sub_dw;
    int *idx_fwd, *idx_gw, *idx_gb;
    size_t n_sub_w;
    cublasHandle_t blas;    /* the DCN and Linear layers' GEMMs (NULL: the network has
                               neither) */
    int input_grad;         /* pf_cugraph_set_input_grad */
    cuplan train, infer;
};

/* ---- description ------------------------------------------------------------------------ */

/* FSRCNN's index maps (see the struct) to the device. */
static int sub_maps(pf_cugraph *g, char *err, size_t errlen) {
    const pf_net *m = &g->net;
    const pf_param_info *wt = &m->tensors[m->conv[m->sub_conv].weight], *bt = wt + 1;
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

static pf_cugraph *setup(pf_cugraph *g, char *err, size_t errlen);

pf_cugraph *pf_cugraph_new(const pf_config *cfg, char *err, size_t errlen) {
    pf_cugraph *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "cuda model: out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    if (pf_net_build(&g->net, cfg, err, errlen)) {
        free(g);
        return NULL;
    }
    return setup(g, err, errlen);
}

pf_cugraph *pf_cugraph_new_net(const pf_config *cfg, pf_net *net, char *err, size_t errlen) {
    pf_cugraph *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "cuda model: out of memory");
        pf_net_free(net);
        return NULL;
    }
    g->cfg = *cfg;
    g->net = *net;
    pf_net_init(net);   /* moved: the caller's is empty (pf_net_free of it is harmless) */
    return setup(g, err, errlen);
}

/* The layers of g->net (described): convolutions, FSRCNN's maps, the cuBLAS handle; g, or
   NULL with err (g freed). */
static pf_cugraph *setup(pf_cugraph *g, char *err, size_t errlen) {
    const pf_net *m = &g->net;
    g->train_conv = calloc((size_t)m->n_convs + 1, sizeof *g->train_conv);
    g->infer_conv = calloc((size_t)m->n_convs + 1, sizeof *g->infer_conv);
    if (!g->train_conv || !g->infer_conv) {
        snprintf(err, errlen, "cuda model: out of memory");
        goto fail;
    }
    for (int i = 0; i < m->n_convs; i++) {
        const pf_nconv *c = &m->conv[i];
        pf_cuconv_init(&g->train_conv[i], c->name, c->ic, c->oc, c->k);
        pf_cuconv_init(&g->infer_conv[i], c->name, c->ic, c->oc, c->k);
        /* torch.nn.Conv2d's stride, padding, bias (the GAN discriminators' k4 s2 p1, no bias) */
        pf_cuconv_set_geometry(&g->train_conv[i], c->stride, c->pad, c->has_bias);
        pf_cuconv_set_geometry(&g->infer_conv[i], c->stride, c->pad, c->has_bias);
    }
    for (int k = 0; k < m->n_node; k++) {
        const pf_gnode *nd = &m->node[k];
        /* FP32 GEMMs (no TF32: CUBLAS_DEFAULT_MATH): dcn_cuda.h, linear_cuda.h */
        if ((nd->op == PF_G_DCN || nd->op == PF_G_LINEAR) && !g->blas) {
            cublasStatus_t bs = cublasCreate(&g->blas);
            if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(g->blas, CUBLAS_DEFAULT_MATH);
            if (bs != CUBLAS_STATUS_SUCCESS) {
                snprintf(err, errlen, "%s: %s: cuBLAS handle: %s", m->type,
                         m->tensors[nd->param].name, cublasGetStatusString(bs));
                goto fail;
            }
        }
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
    free(p->dcn);
    free(p->need);
    memset(p, 0, sizeof *p);
}

void pf_cugraph_destroy(pf_cugraph **self) {
    pf_cugraph *g = *self;
    if (!g) return;
    plan_free(&g->train);
    plan_free(&g->infer);
    for (int i = 0; i < g->net.n_convs; i++) {
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
    if (g->blas) cublasDestroy(g->blas);
    pf_net_free(&g->net);
    free(g);
    *self = NULL;
}

int pf_cugraph_num_tensors(const pf_cugraph *g) { return g->net.n_tensors; }
const pf_net *pf_cugraph_net(const pf_cugraph *g) { return &g->net; }
const pf_param_info *pf_cugraph_tensor_info(const pf_cugraph *g, int i) {
    return i >= 0 && i < g->net.n_tensors ? &g->net.tensors[i] : NULL;
}
size_t pf_cugraph_num_params(const pf_cugraph *g) { return g->net.n_params; }
int pf_cugraph_input_multiple(const pf_cugraph *g) { return pf_net_input_multiple(&g->net); }
size_t pf_cugraph_plan_bytes(const pf_cugraph *g, int training) {
    return training ? g->train.bytes : g->infer.bytes;
}

/* ---- plans ------------------------------------------------------------------------------ */

static void *plan_alloc(cuplan *p, size_t bytes) {
    if (p->n_allocs >= p->max_allocs) return NULL;
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    p->allocs[p->n_allocs++] = d;
    p->bytes += bytes ? bytes : 4;
    return d;
}

/* One device buffer per slot (sizes in floats), but slots below n_have, which are have[];
   slot_of[t] < 0 leaves *field NULL. *bufs_out (if given) gets the slots' buffers. */
static int slot_buffers(cuplan *p, int n_t, const int *slot_of, const size_t *size,
                        int n_slots, float **have, int n_have, size_t field,
                        float ***bufs_out) {
    float **slot = calloc((size_t)n_slots + 1, sizeof *slot);
    int ok = slot != NULL;
    for (int i = 0; ok && i < n_slots; i++)
        ok = (slot[i] = i < n_have ? have[i] : plan_alloc(p, size[i] * sizeof(float))) != NULL ||
             (i < n_have && size[i] == 0);
    for (int i = 0; ok && i < n_t; i++)
        *(float **)((char *)&p->ts[i] + field) = slot_of[i] >= 0 ? slot[slot_of[i]] : NULL;
    if (ok && bufs_out) *bufs_out = slot;
    else free(slot);
    return ok ? 0 : -1;
}

/* Frames per sample (pf_net_frames): N x 3T x H x W is (N T) x 3 x H x W and the uint8 batch
   (N x T x H x W x 3) converts as N T images. The output's (pf_net_out_frames) likewise:
   T for a recurrent network, 1 for an image or sliding-window one (EDVR). */
int pf_cugraph_frames(const pf_cugraph *g) { return pf_net_frames(&g->net); }
int pf_cugraph_out_frames(const pf_cugraph *g) { return pf_net_out_frames(&g->net); }

/* Frames of the image output (p->pred, p->gt: 3 channels a frame): pf_net_out_frames, or 0
   for an output that is no image (a description of pf_cugraph_new_net's: a discriminator's
   score, VGG features), which has no uint8 forward to hold a prediction of. */
static int image_frames(const pf_net *G) {
    int c = G->t[G->output].c;
    return c % 3 ? 0 : c / 3;
}


/* The description's rules for LQ h x w (pf_net_check), every tensor's size into p->ts (h, w,
   numel, need_grad) and numel[]. 0, or -1 with err. */
static int plan_sizes(const pf_net *G, cuplan *p, size_t *numel, const int *need, int n, int h,
                      int w, char *err, size_t errlen) {
    int *hw = malloc(2 * (size_t)G->n_t * sizeof *hw + 1);
    if (!hw) {
        snprintf(err, errlen, "%s: out of host memory", G->type);
        return -1;
    }
    if (pf_net_check(G, h, w, hw, err, errlen)) {
        free(hw);
        return -1;
    }
    for (int i = 0; i < G->n_t; i++) {
        cutensor *s = &p->ts[i];
        s->h = hw[2 * i];
        s->w = hw[2 * i + 1];
        s->numel = numel[i] = (size_t)n * G->t[i].c * s->h * s->w;
        s->need_grad = need[i];
    }
    free(hw);
    return 0;
}

/* The DCN layers' shapes for batch n (p->dcn, per node) and their shared buffers: the largest
   layer's columns, in training their gradient and the fixed-point scratch of an input
   gradient. 0, or -1 with err (the caller frees the plan). */
static int dcn_plan(const pf_net *G, cuplan *p, const int *need, int n, int training,
                    char *err, size_t errlen) {
    size_t col = 0, scratch = 0;
    for (int k = 0; k < G->n_node; k++) {
        const pf_gnode *nd = &G->node[k];
        if (nd->op != PF_G_DCN) continue;
        if (!p->dcn && !(p->dcn = calloc((size_t)G->n_node, sizeof *p->dcn))) {
            snprintf(err, errlen, "%s: out of host memory", G->type);
            return -1;
        }
        const cutensor *a = &p->ts[nd->in[0]];
        pf_cudcn *l = &p->dcn[k];
        if (pf_cudcn_init(l, G->tensors[nd->param].name, n, G->t[nd->in[0]].c, a->h, a->w,
                          G->t[nd->out].c, nd->dcn.k, nd->dcn.stride, nd->dcn.pad, nd->dcn.dil,
                          nd->dcn.groups, nd->dcn.dg, err, errlen))
            return -1;
        if (pf_cudcn_col_floats(l) > col) col = pf_cudcn_col_floats(l);
        if (need[nd->in[0]] && pf_cuda_dcn_scratch_bytes(&l->s) > scratch)
            scratch = pf_cuda_dcn_scratch_bytes(&l->s);
    }
    if (!p->dcn) return 0;
    if (!(p->dcn_col = plan_alloc(p, col * sizeof(float))) ||
        (training && !(p->dcn_dcol = plan_alloc(p, col * sizeof(float)))) ||
        (training && scratch && !(p->dcn_scratch = plan_alloc(p, scratch)))) {
        snprintf(err, errlen, "%s: out of device memory for the deformable convolutions' "
                 "columns (%zu floats)", G->type, col);
        return -1;
    }
    return 0;
}

/* need[t] for the plan (pf_net_need_grad; an input_grad training plan: pf_net_need_input_grad,
   the three arrays kept in p->need, and the PReLU sink). 0, or -1 with err. */
static int plan_need(pf_cugraph *g, cuplan *p, int *need, int training, char *err,
                     size_t errlen) {
    const pf_net *G = &g->net;
    size_t nt = (size_t)G->n_t, sink = 0;
    if (!training || !g->input_grad) {
        pf_net_need_grad(G, need);
        return 0;
    }
    for (int k = 0; k < G->n_node; k++) {
        const pf_gnode *nd = &G->node[k];
        if (nd->op == PF_G_BILINEAR_IN || nd->op == PF_G_BICUBIC_IN) {
            snprintf(err, errlen, "%s: no input gradient through a %s node", G->type,
                     pf_net_op_name(nd->op));
            return -1;
        }
        if (nd->op == PF_G_PRELU && (size_t)G->t[nd->out].c > sink) sink = G->t[nd->out].c;
    }
    if (!(p->need = malloc(3 * nt * sizeof *p->need + 1))) {
        snprintf(err, errlen, "%s: out of host memory", G->type);
        return -1;
    }
    pf_net_need_grad(G, p->need);
    pf_net_need_input_grad(G, p->need + nt);
    pf_net_need_input_only(G, p->need + 2 * nt);
    memcpy(need, p->need + nt, nt * sizeof *need);
    p->input_grad = 1;
    if (sink && !(p->prelu_sink = plan_alloc(p, sink * sizeof(float)))) {
        snprintf(err, errlen, "%s: out of device memory", G->type);
        return -1;
    }
    return 0;
}

/* plan_build's second pass: the scratch a pixel (un)shuffle adding to a gradient needs
   (*shuffle, floats), the flow warp's (*warp_bytes), and affine maps within the kernel's
   channel limit. 0, or -1 with err. */
static int plan_scratch(const pf_net *G, const size_t *numel, const int *need,
                        const int *readers, size_t *shuffle, size_t *warp_bytes, char *err,
                        size_t errlen) {
    for (int k = 0; k < G->n_node; k++) {
        const pf_gnode *nd = &G->node[k];
        if ((nd->op == PF_G_SHUFFLE || nd->op == PF_G_UNSHUFFLE) && readers[nd->in[0]] > 1 &&
            numel[nd->in[0]] > *shuffle)
            *shuffle = numel[nd->in[0]];
        if (nd->op == PF_G_WARP && need[nd->in[0]] &&
            pf_cuda_flow_warp_scratch_bytes(numel[nd->in[0]]) > *warp_bytes)
            *warp_bytes = pf_cuda_flow_warp_scratch_bytes(numel[nd->in[0]]);
        if (nd->op == PF_G_AFFINE && G->t[nd->out].c > PF_CUDA_MAX_AFFINE_CHANNELS) {
            snprintf(err, errlen, "%s node %d: an affine map of %d channels (at most %d)",
                     G->type, k, G->t[nd->out].c, PF_CUDA_MAX_AFFINE_CHANNELS);
            return -1;
        }
    }
    return 0;
}

static int plan_build(pf_cugraph *g, cuplan *p, pf_cuconv *convs, pf_cudnn *ctx, int n, int h,
                      int w, int training, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    const char *type = G->type;
    if (n < 1 || h < 1 || w < 1) {
        snprintf(err, errlen, "%s: bad input shape %d x %d x %d", type, n, h, w);
        return -1;
    }
    if (p->n == n && p->h == h && p->w == w && p->input_grad == (training && g->input_grad))
        return 0;
    plan_free(p);
    p->max_allocs = 2 * G->n_t + 12;
    p->ts = calloc((size_t)G->n_t, sizeof *p->ts);
    p->allocs = calloc((size_t)p->max_allocs, sizeof *p->allocs);
    size_t *numel = calloc((size_t)G->n_t + 1, sizeof *numel), *size = NULL;
    int *need = calloc((size_t)G->n_t + 1, sizeof *need);
    int *last = calloc((size_t)G->n_t + 1, sizeof *last);
    int *slot = calloc((size_t)G->n_t + 1, sizeof *slot);
    int *readers = calloc((size_t)G->n_t + 1, sizeof *readers);
    int rc = -1;
    if (!p->ts || !p->allocs || !numel || !need || !last || !slot || !readers) {
        snprintf(err, errlen, "%s: out of host memory", type);
        goto fail;
    }
    pf_net_last_use(G, training, last);
    if (plan_need(g, p, need, training, err, errlen) ||
        plan_sizes(G, p, numel, need, n, h, w, err, errlen) ||
        dcn_plan(G, p, need, n, training, err, errlen))
        goto fail;
    size_t scratch[2] = { 0, 0 }, warp_bytes = 0;
    for (int k = 0; k < G->n_node; k++) {
        const pf_gnode *nd = &G->node[k];
        for (int i = 0; i < nd->n_in; i++) readers[nd->in[i]]++;
        if (nd->op == PF_G_CONV) {
            const cutensor *a = &p->ts[nd->in[0]];
            if (pf_cuconv_setup(&convs[nd->conv], ctx, n, a->h, a->w, training, err, errlen))
                goto fail;
            if (nd->n_in > 1 && nd->scale != 1.0f && numel[nd->out] > scratch[0])
                scratch[0] = numel[nd->out];
        }
    }
    if (plan_scratch(G, numel, need, readers, &scratch[1], &warp_bytes, err, errlen))
        goto fail;
    /* the uint8 batch: lq, then (training) the GT of the output frames; pred and gt hold
       the output frames as images */
    int s = G->scale;
    size_t lq = (size_t)n * pf_net_frames(G) * h * w * 3,
           hq = (size_t)n * image_frames(G) * h * w * 3 * (size_t)s * s;
#define ALLOC(ptr, count)                                                                     \
    do {                                                                                      \
        if (!((ptr) = plan_alloc(p, (size_t)(count) * sizeof *(ptr)))) goto oom;              \
    } while (0)
    ALLOC(p->u8, lq + (training ? hq : 0));
    ALLOC(p->pred, hq);
    p->training = training;
    if (training) {
        ALLOC(p->gt, hq);
        if (G->n_running) ALLOC(p->bn_save, G->n_running);
        for (int i = 0; i < 2; i++)
            if (scratch[i]) ALLOC(p->scratch[i], scratch[i]);
        if (warp_bytes && !(p->warp_scratch = plan_alloc(p, warp_bytes))) goto oom;
    }
#undef ALLOC
    int n_slots = pf_net_assign_slots(G, numel, last, training, slot, &size);
    if (n_slots < 0) {
        snprintf(err, errlen, "%s: out of host memory", type);
        goto fail;
    }
    float **act = NULL;
    int bad = slot_buffers(p, G->n_t, slot, size, n_slots, NULL, 0, offsetof(cutensor, data),
                           &act);
    if (bad) goto oom;
    if (training) {
        /* gradients by liveness; the activation slots backward reads nothing from (an
           upsampling conv's output, say) host gradients too */
        size_t *dead = calloc((size_t)n_slots + 1, sizeof *dead), *gsize = NULL;
        int n_act = n_slots;
        if (dead) pf_net_free_after_forward(G, slot, last, size, n_act, dead);
        int n_g = dead ? pf_net_assign_grad_slots(G, numel, need, n_act, dead, slot, &gsize)
                       : -1;
        bad = n_g < 0 ? -2
                      : slot_buffers(p, G->n_t, slot, gsize, n_g, act, n_act,
                                     offsetof(cutensor, grad), NULL);
        free(dead);
        free(gsize);
        if (bad == -2) {
            free(act);
            snprintf(err, errlen, "%s: out of host memory", type);
            goto fail;
        }
    }
    free(act);
    if (bad) goto oom;
    p->n = n;
    p->h = h;
    p->w = w;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "%s: out of device memory for the activations of a %d x %d x %d "
             "batch (%s)", type, n, h, w, training ? "training" : "inference");
fail:
    plan_free(p);
done:
    free(size);
    free(numel);
    free(need);
    free(last);
    free(slot);
    free(readers);
    return rc;
}

/* ---- forward ------------------------------------------------------------------------------ */

/* Weights and bias of conv layer i on the device (FSRCNN's sub-pixel layer: its own). */
static const float *conv_weights(pf_cugraph *g, const pf_cugraph_env *env, int i) {
    if (i == g->net.sub_conv) return g->sub_w;
    return env->params + g->net.tensors[g->net.conv[i].weight].offset;
}
static const float *conv_bias(pf_cugraph *g, const pf_cugraph_env *env, int i) {
    if (!g->net.conv[i].has_bias) return NULL;
    if (i != g->net.sub_conv) return env->params + g->net.tensors[g->net.conv[i].weight + 1].offset;
    const pf_cuconv *c = &g->train_conv[i];
    return g->sub_w + (size_t)c->oc * c->ic * c->k * c->k;
}

/* A BatchNorm2d node's forward (nn/net.h PF_G_BATCHNORM): a training plan normalises by the
   batch's statistics (kept in bn_save for backward) and updates env->running and
   env->tracked; an inference plan normalises by env->running. */
static int batchnorm_forward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                             const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    char oe[512];
    cudaStream_t st = env->stream;
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    const pf_param_info *wt = &G->tensors[nd->param];
    if (!env->running) {
        snprintf(err, errlen, "%s: %s: BatchNorm2d without running statistics (env.running)",
                 G->type, wt->name);
        return -1;
    }
    const float *wb = env->params + wt->offset, *bb = env->params + wt[1].offset;
    int C = G->t[nd->out].c;
    if (!p->training)
        OP(pf_cuda_batchnorm_eval_forward(o->data, a->data, wb, bb, env->running + nd->stat,
                                          p->n, C, o->h, o->w, PF_BN_EPS, st, oe, sizeof oe));
    else {
        OP(pf_cuda_batchnorm_train_forward(o->data, a->data, wb, bb, env->running + nd->stat,
                                           p->bn_save + nd->stat, p->n, C, o->h, o->w,
                                           PF_BN_EPS, PF_BN_MOMENTUM, st, oe, sizeof oe));
        if (env->tracked) env->tracked[nd->bn]++;
    }
    return 0;
}

/* A Linear node's forward (nn/cuda/linear_cuda.h): the plain NCHW input is x.view(N, -1). */
static int linear_forward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                          const pf_gnode *nd, char *err, size_t errlen) {
    const pf_param_info *wt = &g->net.tensors[nd->param];
    return pf_culinear_forward(g->blas, env->stream, wt->name, p->n, (int)wt->shape[1],
                               (int)wt->shape[0], env->params + wt->offset,
                               env->params + wt[1].offset, p->ts[nd->in[0]].data,
                               p->ts[nd->out].data, err, errlen);
}

/* PF_G_INPUT: the uploaded uint8 batch (v / 255), or the caller's float input (p->x_f32, NCHW)
   as the CPU reads it: (x - mean) * range with a mean shift, else x as is. */
static int input_forward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                         const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    char oe[512];
    int nt = p->n * pf_net_frames(G);
    float *y = p->ts[nd->out].data;
    if (p->x_f32) {
        OP(pf_cuda_mean_shift(y, p->x_f32, nt, 3, p->h, p->w, G->use_mean ? G->mean : NULL,
                              G->use_mean ? G->range : 1.0f, env->stream, oe, sizeof oe));
        return 0;
    }
    OP(pf_cuda_u8_nhwc_to_nchw(y, p->u8, nt, p->h, p->w, 3, env->stream, oe, sizeof oe));
    OP(pf_cuda_mean_shift(y, y, nt, 3, p->h, p->w, G->use_mean ? G->mean : NULL, G->range,
                          env->stream, oe, sizeof oe));
    return 0;
}

/* Forward of an EDVR TSA-fusion node (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3;
   nn/cuda/ops.h). */
static int tsa_forward(pf_cugraph *g, cuplan *p, const pf_gnode *nd, cudaStream_t st, char *err,
                       size_t errlen) {
    char oe[512];
    const cutensor *a = &p->ts[nd->in[0]];
    int n = p->n, C = g->net.t[nd->in[0]].c;
    float *y = p->ts[nd->out].data;
    if (nd->op == PF_G_MUL)
        OP(pf_cuda_mul_forward(y, a->data, p->ts[nd->in[1]].data,
                               nd->n_in > 2 ? p->ts[nd->in[2]].data : NULL, nd->scale, n, C,
                               g->net.t[nd->in[1]].c, a->h, a->w, st, oe, sizeof oe));
    else if (nd->op == PF_G_CHSUM)
        OP(pf_cuda_chsum_forward(y, a->data, n, C, a->h, a->w, st, oe, sizeof oe));
    else
        OP(pf_cuda_pool3_forward(y, a->data, nd->op == PF_G_MAXPOOL3, n, C, a->h, a->w, st, oe,
                                 sizeof oe));
    return 0;
}

static int forward_node(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, pf_cuconv *convs,
                        const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cudaStream_t st = env->stream;
    char oe[512];
    int n = p->n, C = G->t[nd->out].c;
    cutensor *o = &p->ts[nd->out], *a = nd->n_in ? &p->ts[nd->in[0]] : NULL;
    float *y = o->data;
    switch (nd->op) {
    case PF_G_INPUT:
        return input_forward(g, env, p, nd, err, errlen);
    case PF_G_BILINEAR_IN:
        OP(pf_cuda_bilinear_u8(y, p->u8, n, p->h, p->w, nd->r, st, oe, sizeof oe));
        return 0;
    case PF_G_BICUBIC_IN:
        OP(pf_cuda_bicubic_u8(y, p->u8, n, p->h, p->w, nd->r, st, oe, sizeof oe));
        return 0;
    case PF_G_CONV: {
        pf_cuconv *c = &convs[nd->conv];
        const pf_nconv *dc = &G->conv[nd->conv];
        TRY(pf_cuconv_forward(c, a->data, conv_weights(g, env, nd->conv),
                              conv_bias(g, env, nd->conv), y, err, errlen));
        if (dc->act)
            OP(pf_cuda_leaky_relu_forward(y, y, dc->alpha, o->numel, st, oe, sizeof oe));
        if (nd->n_in > 1)   /* y = identity + scale * conv */
            OP(pf_cuda_add_scaled(y, p->ts[nd->in[1]].data, y, nd->scale, o->numel, st, oe,
                                  sizeof oe));
        return 0;
    }
    case PF_G_PRELU:
        OP(pf_cuda_prelu_forward(y, a->data, env->params + G->tensors[nd->param].offset,
                                 n, C, o->h, o->w, st, oe, sizeof oe));
        return 0;
    case PF_G_TANH:
        OP(pf_cuda_tanh_forward(y, a->data, o->numel, st, oe, sizeof oe));
        return 0;
    case PF_G_SIGMOID:
        OP(pf_cuda_sigmoid_forward(y, a->data, o->numel, st, oe, sizeof oe));
        return 0;
    case PF_G_RELU:
        OP(pf_cuda_leaky_relu_forward(y, a->data, nd->alpha, o->numel, st, oe, sizeof oe));
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
    case PF_G_SLICE:
        OP(pf_cuda_copy_channels(y, C, 0, a->data, G->t[nd->in[0]].c, nd->c0, C, n,
                                 o->h * o->w, 0, st, oe, sizeof oe));
        return 0;
    case PF_G_AFFINE:
        OP(pf_cuda_affine_ch(y, a->data, n, C, o->h, o->w, nd->sub, nd->mul, 0, st, oe,
                             sizeof oe));
        return 0;
    case PF_G_RESIZE: {
        float fm[PF_G_MAX_CH];
        const float *mult = pf_net_resize_mult(nd, a->h, a->w, o->h, o->w, fm);
        OP(pf_cuda_resize_bilinear_forward(y, a->data, n, C, a->h, a->w, o->h, o->w, nd->ac,
                                           mult, st, oe, sizeof oe));
        return 0;
    }
    case PF_G_AVGPOOL2:
        OP(pf_cuda_avgpool2_forward(y, a->data, n, C, a->h, a->w, st, oe, sizeof oe));
        return 0;
    case PF_G_MAXPOOL2:
        OP(pf_cuda_maxpool2_forward(y, a->data, n, C, a->h, a->w, st, oe, sizeof oe));
        return 0;
    case PF_G_WARP:
        OP(pf_cuda_flow_warp_forward(y, a->data, p->ts[nd->in[1]].data, n, C, o->h, o->w,
                                     nd->pad, st, oe, sizeof oe));
        return 0;
    case PF_G_ZERO:
        CUDA_TRY("zero node", cudaMemsetAsync(y, 0, o->numel * sizeof(float), st));
        return 0;
    case PF_G_DCN: {
        const pf_param_info *wt = &G->tensors[nd->param];
        return pf_cudcn_forward(&p->dcn[nd - G->node], g->blas, st, env->params + wt->offset,
                                nd->dcn.has_bias ? env->params + wt[1].offset : NULL, a->data,
                                p->ts[nd->in[1]].data, p->ts[nd->in[2]].data, y, p->dcn_col,
                                err, errlen);
    }
    case PF_G_MUL: case PF_G_CHSUM: case PF_G_MAXPOOL3: case PF_G_AVGPOOL3:
        return tsa_forward(g, p, nd, st, err, errlen);
    case PF_G_BATCHNORM: return batchnorm_forward(g, env, p, nd, err, errlen);
    case PF_G_LINEAR: return linear_forward(g, env, p, nd, err, errlen);
    }
    snprintf(err, errlen, "%s: unknown graph op %d", g->net.type, (int)nd->op);
    return -1;
}

/* Upload (lq [+ gt]) and run every node; p->pred = out / range + mean. host_in NULL: the
   input is p->x_f32, and no pred. */
static int forward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, pf_cuconv *convs,
                   const uint8_t *host_in, size_t in_bytes, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cudaStream_t st = env->stream;
    if (host_in)
        CUDA_TRY("upload",
                 cudaMemcpyAsync(p->u8, host_in, in_bytes, cudaMemcpyHostToDevice, st));
    if (G->sub_conv >= 0) {
        char oe[512];
        if (pf_cuda_gather_sum(g->sub_w, env->params, g->idx_fwd, g->n_sub_w, 1, st, oe,
                               sizeof oe)) {
            snprintf(err, errlen, "FSRCNN last_part: sub-pixel weights: %s", oe);
            return -1;
        }
    }
    for (int k = 0; k < G->n_node; k++)
        TRY(forward_node(g, env, p, convs, &G->node[k], err, errlen));
    /* a float input, or an output that is no image: no prediction */
    if (!host_in || !image_frames(G)) return 0;
    const cutensor *o = &p->ts[G->output];
    char oe[512];
    if (pf_cuda_mean_unshift(p->pred, o->data, p->n * image_frames(G), 3, o->h, o->w,
                             G->use_mean ? G->mean : NULL, G->range, st, oe, sizeof oe)) {
        snprintf(err, errlen, "%s output: %s", g->net.type, oe);
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

/* Where a parameter gradient at offset off goes: env->grads, or NULL in an input-only
   backward (not computed). */
static float *pgrad(const pf_cugraph_env *env, const cuplan *p, size_t off) {
    return p->no_param_grads ? NULL : env->grads + off;
}

/* PF_G_INPUT's backward, when d loss / d input is asked (p->dx, N x C x H x W as the input):
   dx = [dx +] f dy, f = the node's range where it subtracts a mean, else 1 (as the CPU). */
static int input_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                          const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    const cutensor *o = &p->ts[nd->out];
    char oe[512];
    float f = G->use_mean ? G->range : 1.0f;
    if (!p->dx) return 0;
    if (p->dx_set) OP(pf_cuda_axpy(p->dx, o->grad, f, o->numel, env->stream, oe, sizeof oe));
    else OP(pf_cuda_scale(p->dx, o->grad, f, o->numel, env->stream, oe, sizeof oe));
    p->dx_set = 1;
    return 0;
}

/* A convolution node's backward: the fused activation's mask, the residual's identity,
   backward-filter and -bias (FSRCNN's sub-pixel layer gathered back, shared weights added;
   not in an input-only backward) and backward-data. */
static int conv_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, pf_cuconv *convs,
                         const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net, *m = G;
    cudaStream_t st = env->stream;
    char oe[512];
    int acc = 0;
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    float *dy = o->grad, *dx;
    const float *y = o->data;
    pf_cuconv *c = &convs[nd->conv];
    const pf_nconv *dc = &G->conv[nd->conv];
    if (dc->act)    /* dy is this node's own: masked in place */
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
    float *gw = sub ? g->sub_dw : env->grads + m->tensors[nd->param].offset;
    float *gb = !dc->has_bias ? NULL
                : sub     ? g->sub_dw + (size_t)c->oc * c->ic * c->k * c->k
                          : env->grads + m->tensors[nd->param + 1].offset;
    /* shared weights (several layers naming one weight tensor): the gradients were zeroed
       before backward, so every layer adds */
    int shared = 0;
    for (int j = 0; j < G->n_node && !sub; j++)
        shared |= G->node[j].op == PF_G_CONV && G->node[j].param == nd->param &&
                  &G->node[j] != nd;
    if (!p->no_param_grads)
        TRY(pf_cuconv_backward_filter(c, a->data, dd, gw, shared, err, errlen));
    if (dc->has_bias && !p->no_param_grads)
        TRY(pf_cuconv_backward_bias(c, dd, gb, shared, err, errlen));
    if (sub && !p->no_param_grads) {      /* back to the ConvTranspose2d tensors */
        const pf_param_info *wt = &m->tensors[nd->param], *bt = wt + 1;
        int rr = m->sub_stride * m->sub_stride;
        OP(pf_cuda_gather_sum(env->grads + wt->offset, g->sub_dw, g->idx_gw, wt->numel, 1,
                              st, oe, sizeof oe));
        OP(pf_cuda_gather_sum(env->grads + bt->offset, g->sub_dw, g->idx_gb, bt->numel, rr,
                              st, oe, sizeof oe));
    }
    if ((dx = grad_for(a, &acc))) {
        TRY(pf_cuconv_backward_data(c, conv_weights(g, env, nd->conv), dd, dx, acc, err,
                                    errlen));
    }
    return 0;
}

/* A pixel shuffle's (unshuffle's) backward, the other permutation: into dx, or, when dx holds
   a contribution already, into scratch[1] added to it. */
static int shuffle_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                            const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cudaStream_t st = env->stream;
    char oe[512];
    int n = p->n, C = G->t[nd->out].c, acc = 0;
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    float *dy = o->grad, *dx;
    if (!(dx = grad_for(a, &acc))) return 0;
    float *to = acc ? p->scratch[1] : dx;
    if (nd->op == PF_G_SHUFFLE)
        OP(pf_cuda_pixel_shuffle_backward(to, dy, n, C, a->h, a->w, nd->r, st, oe, sizeof oe));
    else    /* unshuffle's backward is the shuffle */
        OP(pf_cuda_pixel_shuffle_forward(to, dy, n, G->t[nd->in[0]].c, o->h, o->w, nd->r, st,
                                         oe, sizeof oe));
    if (acc) OP(pf_cuda_axpy(dx, to, 1.0f, a->numel, st, oe, sizeof oe));
    return 0;
}

/* A deformable convolution's backward: weight and bias gradients added (zeroed before
   backward), those of x, offset and mask where they need one. */
static int dcn_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                        const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cutensor *t[3];
    float *d[3];
    int acc[3] = { 0, 0, 0 };
    for (int i = 0; i < 3; i++) {
        t[i] = &p->ts[nd->in[i]];
        d[i] = grad_for(t[i], &acc[i]);
    }
    const pf_param_info *wt = &G->tensors[nd->param];
    return pf_cudcn_backward(&p->dcn[nd - G->node], g->blas, env->stream,
                             env->params + wt->offset, pgrad(env, p, wt->offset),
                             nd->dcn.has_bias ? pgrad(env, p, wt[1].offset) : NULL,
                             p->ts[nd->out].grad, t[0]->data, t[1]->data, t[2]->data, d[0],
                             d[1], d[2], acc[0], acc[1], acc[2], p->dcn_col, p->dcn_dcol,
                             p->dcn_scratch, err, errlen);
}

/* A Linear node's backward: weight and bias gradients (overwritten), the input's where it
   needs one (added to a contribution already there). */
static int linear_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                           const pf_gnode *nd, char *err, size_t errlen) {
    const pf_param_info *wt = &g->net.tensors[nd->param];
    cutensor *a = &p->ts[nd->in[0]];
    int acc = 0;
    float *dx = grad_for(a, &acc);
    return pf_culinear_backward(g->blas, env->stream, wt->name, p->n, (int)wt->shape[1],
                                (int)wt->shape[0], env->params + wt->offset, a->data,
                                p->ts[nd->out].grad, pgrad(env, p, wt->offset),
                                pgrad(env, p, wt[1].offset), dx, acc, err, errlen);
}

/* PF_G_BATCHNORM's backward through the batch statistics (the forward's saved mean and
   inverse deviation); the weight's and bias's gradients overwritten. */
static int bn_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, const pf_gnode *nd,
                       char *err, size_t errlen) {
    const pf_param_info *wt = &g->net.tensors[nd->param];
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    char oe[512];
    int acc = 0;
    float *dx = grad_for(a, &acc);
    if (!dx && p->no_param_grads) return 0;
    OP(pf_cuda_batchnorm_backward(dx, pgrad(env, p, wt->offset), pgrad(env, p, wt[1].offset),
                                  o->grad, a->data, env->params + wt->offset,
                                  p->bn_save + nd->stat, p->n, g->net.t[nd->out].c, o->h, o->w,
                                  acc, env->stream, oe, sizeof oe));
    return 0;
}

/* Backward of an EDVR TSA-fusion node (tsa_forward's). PF_G_MUL's residual gets dy last. */
static int tsa_backward(pf_cugraph *g, cuplan *p, const pf_gnode *nd, cudaStream_t st,
                        char *err, size_t errlen) {
    char oe[512];
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    int n = p->n, C = g->net.t[nd->in[0]].c, acc = 0, acc1 = 0;
    float *dx = grad_for(a, &acc);
    if (nd->op == PF_G_MUL) {
        cutensor *f = &p->ts[nd->in[1]];
        float *d1 = grad_for(f, &acc1);
        if (dx || d1)
            OP(pf_cuda_mul_backward(dx, d1, o->grad, a->data, f->data, nd->scale, n, C,
                                    g->net.t[nd->in[1]].c, a->h, a->w, acc, acc1, st, oe,
                                    sizeof oe));
        if (nd->n_in > 2) OP(grad_add(&p->ts[nd->in[2]], o->grad, st, oe, sizeof oe));
    } else if (dx && nd->op == PF_G_CHSUM) {
        OP(pf_cuda_chsum_backward(dx, o->grad, n, C, a->h, a->w, acc, st, oe, sizeof oe));
    } else if (dx) {
        OP(pf_cuda_pool3_backward(dx, o->grad, a->data, nd->op == PF_G_MAXPOOL3, n, C, a->h,
                                  a->w, acc, st, oe, sizeof oe));
    }
    return 0;
}

/* PReLU's backward: dx where its input needs one, d alpha overwritten (into the plan's sink
   in an input-only backward: the kernel always writes it). */
static int prelu_backward(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                          const pf_gnode *nd, char *err, size_t errlen) {
    const pf_param_info *wt = &g->net.tensors[nd->param];
    cutensor *o = &p->ts[nd->out], *a = &p->ts[nd->in[0]];
    char oe[512];
    int acc = 0;
    float *dx = grad_for(a, &acc);
    OP(pf_cuda_prelu_backward(dx, p->no_param_grads ? p->prelu_sink : env->grads + wt->offset,
                              o->grad, a->data, env->params + wt->offset, p->n,
                              g->net.t[nd->out].c, o->h, o->w, acc, env->stream, oe,
                              sizeof oe));
    return 0;
}

static int backward_node(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p,
                         pf_cuconv *convs, const pf_gnode *nd, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cudaStream_t st = env->stream;
    char oe[512];
    int n = p->n, C = G->t[nd->out].c, acc = 0;
    cutensor *o = &p->ts[nd->out], *a = nd->n_in ? &p->ts[nd->in[0]] : NULL;
    if (!o->grad_set) return 0;             /* nothing flows back through here */
    float *dy = o->grad, *dx;
    const float *y = o->data;
    switch (nd->op) {
    case PF_G_INPUT: return input_backward(g, env, p, nd, err, errlen);
    case PF_G_BILINEAR_IN: case PF_G_BICUBIC_IN: case PF_G_ZERO:
        return 0;   /* no gradient to pass on */
    case PF_G_CONV:
        return conv_backward(g, env, p, convs, nd, err, errlen);
    case PF_G_PRELU: return prelu_backward(g, env, p, nd, err, errlen);
    case PF_G_TANH:
    case PF_G_SIGMOID:
    case PF_G_RELU:     /* backward from the output y */
        if ((dx = grad_for(a, &acc)))
            OP(nd->op == PF_G_RELU ? pf_cuda_relu_node_backward(dx, dy, y, nd->alpha, o->numel,
                                                                acc, st, oe, sizeof oe)
               : (nd->op == PF_G_TANH ? pf_cuda_tanh_backward : pf_cuda_sigmoid_backward)(
                     dx, dy, y, o->numel, acc, st, oe, sizeof oe));
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
    case PF_G_UNSHUFFLE:
        return shuffle_backward(g, env, p, nd, err, errlen);
    case PF_G_NEAREST:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_nearest_backward(dx, dy, n, C, a->h, a->w, nd->r, acc, st, oe,
                                        sizeof oe));
        return 0;
    case PF_G_SLICE:
        if (!(dx = grad_for(a, &acc))) return 0;
        if (!acc)   /* the channels outside the slice get no gradient from here */
            CUDA_TRY("slice gradient", cudaMemsetAsync(dx, 0, a->numel * sizeof(float), st));
        OP(pf_cuda_copy_channels(dx, G->t[nd->in[0]].c, nd->c0, dy, C, 0, C, n, o->h * o->w, 1,
                                 st, oe, sizeof oe));
        return 0;
    case PF_G_AFFINE:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_affine_ch(dx, dy, n, C, o->h, o->w, NULL, nd->mul, acc, st, oe,
                                 sizeof oe));
        return 0;
    case PF_G_RESIZE: {
        float fm[PF_G_MAX_CH];
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_resize_bilinear_backward(
                dx, dy, n, C, a->h, a->w, o->h, o->w, nd->ac,
                pf_net_resize_mult(nd, a->h, a->w, o->h, o->w, fm), acc, st, oe, sizeof oe));
        return 0;
    }
    case PF_G_AVGPOOL2:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_avgpool2_backward(dx, dy, n, C, a->h, a->w, acc, st, oe, sizeof oe));
        return 0;
    case PF_G_MAXPOOL2:
        if ((dx = grad_for(a, &acc)))
            OP(pf_cuda_maxpool2_backward(dx, dy, a->data, n, C, a->h, a->w, acc, st, oe,
                                         sizeof oe));
        return 0;
    case PF_G_WARP: {
        cutensor *f = &p->ts[nd->in[1]];
        int acc_f = 0;
        float *df = grad_for(f, &acc_f);
        dx = grad_for(a, &acc);
        if (dx || df)
            OP(pf_cuda_flow_warp_backward(dx, df, dy, a->data, f->data, n, C, o->h, o->w,
                                          nd->pad, acc, acc_f, p->warp_scratch, st, oe,
                                          sizeof oe));
        return 0;
    }
    case PF_G_DCN: return dcn_backward(g, env, p, nd, err, errlen);
    case PF_G_MUL: case PF_G_CHSUM: case PF_G_MAXPOOL3: case PF_G_AVGPOOL3:
        return tsa_backward(g, p, nd, st, err, errlen);
    case PF_G_BATCHNORM: return bn_backward(g, env, p, nd, err, errlen);
    case PF_G_LINEAR: return linear_backward(g, env, p, nd, err, errlen);
    }
    snprintf(err, errlen, "%s: unknown graph op %d", G->type, (int)nd->op);
    return -1;
}

/* Before a backward: which tensors get a gradient (an input_grad plan: those of the
   parameters, plus the input's when dx is asked, or the input's alone without params), no
   gradient set yet, the parameter gradients zeroed (overwritten: a parameter no node reaches
   keeps zero) unless input only. */
static int backward_start(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, int want_dx,
                          int params, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    size_t nt = (size_t)G->n_t;
    const int *need = !p->need ? NULL : p->need + (!want_dx ? 0 : params ? nt : 2 * nt);
    for (int i = 0; i < G->n_t; i++) {
        p->ts[i].grad_set = 0;
        if (need) p->ts[i].need_grad = need[i];
    }
    p->no_param_grads = !params;
    if (params)
        CUDA_TRY("zero gradients",
                 cudaMemsetAsync(env->grads, 0, G->n_params * sizeof(float), env->stream));
    return 0;
}

/* Every node's backward, in reverse, from the gradients set. */
static int backward_all(pf_cugraph *g, const pf_cugraph_env *env, cuplan *p, char *err,
                        size_t errlen) {
    for (int k = g->net.n_node - 1; k >= 0; k--)
        TRY(backward_node(g, env, p, g->train_conv, &g->net.node[k], err, errlen));
    return 0;
}

/* ---- entry points ------------------------------------------------------------------------- */

int pf_cugraph_train_step(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in,
                          int n, int h, int w, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cuplan *p = &g->train;
    TRY(plan_build(g, p, g->train_conv, env->cudnn, n, h, w, 1, err, errlen));
    /* lq: n x T frames; GT and the loss: the n x OT output frames (EDVR: the center frame's
       GT alone, OT 1), as the CPU model (pf_model_train_step) */
    int s = G->scale, T = pf_net_frames(G), OT = pf_net_out_frames(G);
    size_t lq = (size_t)n * T * h * w * 3, hq = (size_t)n * OT * h * w * 3 * (size_t)s * s;
    p->last_fwd = 0;
    TRY(forward(g, env, p, g->train_conv, host_in, lq + hq, err, errlen));
    p->last_fwd = 1;

    /* loss on the image; its gradient through out / range + mean is d image / range */
    cudaStream_t st = env->stream;
    cutensor *o = &p->ts[G->output];
    char oe[512];
    if (pf_cuda_u8_nhwc_to_nchw(p->gt, p->u8 + lq, n * OT, h * s, w * s, 3, st, oe, sizeof oe) ||
        pf_cuda_pixel_loss(g->cfg.loss_type, env->loss, o->grad, p->pred, p->gt, hq,
                           g->cfg.loss_weight, g->cfg.charbonnier_eps,
                           env->loss_scratch, st, oe, sizeof oe) ||
        (G->range != 1.0f &&
         pf_cuda_scale(o->grad, o->grad, 1.0f / G->range, hq, st, oe, sizeof oe))) {
        snprintf(err, errlen, "%s loss: %s", g->net.type, oe);
        return -1;
    }

    TRY(backward_start(g, env, p, 0, 1, err, errlen));
    o->grad_set = 1;
    return backward_all(g, env, p, err, errlen);
}

int pf_cugraph_infer(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in, int h,
                     int w, const float **pred, char *err, size_t errlen) {
    cuplan *p = &g->infer;
    TRY(plan_build(g, p, g->infer_conv, env->cudnn, 1, h, w, 0, err, errlen));
    TRY(forward(g, env, p, g->infer_conv, host_in, (size_t)pf_net_frames(&g->net) * h * w * 3, err,
                errlen));
    *pred = p->pred;
    return 0;
}

/* ---- float input, taps, given gradients ------------------------------------------------------ */

void pf_cugraph_set_input_grad(pf_cugraph *g, int on) { g->input_grad = on != 0; }

int pf_cugraph_forward_train_f32(pf_cugraph *g, const pf_cugraph_env *env, const float *x,
                                 int n, int h, int w, char *err, size_t errlen) {
    const pf_net *G = &g->net;
    cuplan *p = &g->train;
    for (int k = 0; k < G->n_node; k++)
        if (G->node[k].op == PF_G_BILINEAR_IN || G->node[k].op == PF_G_BICUBIC_IN) {
            snprintf(err, errlen, "%s: a float input through a %s node (uint8 only)", G->type,
                     pf_net_op_name(G->node[k].op));
            return -1;
        }
    if (!x) {
        snprintf(err, errlen, "%s: float forward without an input", G->type);
        return -1;
    }
    TRY(plan_build(g, p, g->train_conv, env->cudnn, n, h, w, 1, err, errlen));
    p->last_fwd = 0;
    p->x_f32 = x;
    int rc = forward(g, env, p, g->train_conv, NULL, 0, err, errlen);
    p->x_f32 = NULL;
    if (!rc) p->last_fwd = 2;
    return rc;
}

/* Tensor id of the output (which -1) or tap which of the last training forward; -1: none. */
static int tap_tensor(const pf_cugraph *g, int which) {
    if (!g->train.last_fwd || which < -1 || which >= g->net.n_taps) return -1;
    return which < 0 ? g->net.output : g->net.taps[which];
}

int pf_cugraph_shape(const pf_cugraph *g, int which, int dims[4]) {
    int t = tap_tensor(g, which);
    if (t < 0) return -1;
    dims[0] = g->train.n;
    dims[1] = g->net.t[t].c;
    dims[2] = g->train.ts[t].h;
    dims[3] = g->train.ts[t].w;
    return 0;
}

const float *pf_cugraph_tap(const pf_cugraph *g, int which) {
    int t = tap_tensor(g, which);
    return t < 0 ? NULL : g->train.ts[t].data;
}

/* pf_cugraph_backward_from (params 1) and pf_cugraph_backward_input (params 0). */
static int backward_given(pf_cugraph *g, const pf_cugraph_env *env, const float *dout,
                          const float *const *dtaps, float *dx, int params, char *err,
                          size_t errlen) {
    const pf_net *G = &g->net;
    cuplan *p = &g->train;
    char oe[512];
    if (!p->last_fwd) {
        snprintf(err, errlen, "%s: backward without a training forward", G->type);
        return -1;
    }
    if (dx && !p->input_grad) {
        snprintf(err, errlen, "%s: an input gradient from a plan made without input_grad "
                 "(pf_cugraph_set_input_grad)", G->type);
        return -1;
    }
    TRY(backward_start(g, env, p, dx != NULL, params, err, errlen));
    cutensor *o = &p->ts[G->output];
    if (dout && grad_add(o, dout, env->stream, oe, sizeof oe)) {
        snprintf(err, errlen, "%s output gradient: %s", G->type, oe);
        return -1;
    }
    for (int k = 0; dtaps && k < G->n_taps; k++)
        if (dtaps[k] && grad_add(&p->ts[G->taps[k]], dtaps[k], env->stream, oe, sizeof oe)) {
            snprintf(err, errlen, "%s tap %d gradient: %s", G->type, k, oe);
            return -1;
        }
    p->dx = dx;
    p->dx_set = 0;
    int rc = backward_all(g, env, p, err, errlen);
    p->dx = NULL;
    p->no_param_grads = 0;
    if (rc || !dx || p->dx_set) return rc;
    const cutensor *in = &p->ts[G->input];      /* no gradient reached the input */
    CUDA_TRY("input gradient", cudaMemsetAsync(dx, 0, in->numel * sizeof(float), env->stream));
    return 0;
}

int pf_cugraph_backward_from(pf_cugraph *g, const pf_cugraph_env *env, const float *dout,
                             const float *const *dtaps, float *dx, char *err, size_t errlen) {
    return backward_given(g, env, dout, dtaps, dx, 1, err, errlen);
}

int pf_cugraph_backward_input(pf_cugraph *g, const pf_cugraph_env *env, const float *dout,
                              const float *const *dtaps, float *dx, char *err, size_t errlen) {
    if (!dx) {
        snprintf(err, errlen, "%s: an input-only backward without dx", g->net.type);
        return -1;
    }
    return backward_given(g, env, dout, dtaps, dx, 0, err, errlen);
}

int pf_cugraph_train_output(const pf_cugraph *g, const float **pred, const float **gt,
                            int dims[4]) {
    const cuplan *p = &g->train;
    if (p->last_fwd != 1) return -1;
    const cutensor *o = &p->ts[g->net.output];
    *pred = p->pred;
    *gt = p->gt;
    dims[0] = p->n * pf_net_out_frames(&g->net);
    dims[1] = 3;
    dims[2] = o->h;
    dims[3] = o->w;
    return 0;
}
