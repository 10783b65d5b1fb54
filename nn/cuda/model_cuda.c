/*  model_cuda — EDSR on a CUDA device (see model_cuda.h): construction with the CPU model's
    parameter layout, device plans (activation buffers per input shape), forward, loss,
    backward, inference.

    The forward and backward below mirror nn/edsr.c step by step (same layer order, same
    gradient bookkeeping: d_a carries d loss / d a[i+1] down the body, f0's gradient is the
    body's plus the global skip's), with the CPU's fused epilogues spelled out as ops:
    ReLU after conv1 (in place), a + res_scale * conv2(...) and conv_after_body(...) + f0 as
    pf_cuda_add_scaled, the loss on the un-shifted prediction and its gradient scaled by
    1 / img_range (the inverse mean shift's backward).
*/
#include "nn/cuda/model_cuda.h"
#include "nn/param_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/ops.h"

#define MAX_STAGES 2

#define CONV_FIRST 0
#define CONV1(i) (1 + 2 * (i))
#define CONV2(i) (2 + 2 * (i))
#define CONV_AFTER(m) (1 + 2 * (m)->cfg.n_blocks)
#define CONV_UP(m, s) (2 + 2 * (m)->cfg.n_blocks + (s))
#define CONV_LAST(m) (2 + 2 * (m)->cfg.n_blocks + (m)->n_stages)


/* Device activation buffers for one LQ batch shape. */
typedef struct {
    int n, h, w;                /* LQ batch shape these are for; 0 = not built */
    uint8_t *u8;                /* uploaded batch: lq (n h w 3) then, training, gt */
    float *x;                   /* mean-shifted LQ, N x 3 x h x w */
    float *f0;                  /* conv_first output (a[0]) */
    float **a;                  /* a[0..n_blocks] block inputs / outputs (host array) */
    float **t;                  /* t[i] = ReLU(body.i.conv1(a[i])) (host array) */
    float *tmp;                 /* conv2 / conv_after_body output before the add; in
                                   backward reused as d_u and d_tmp (both dead by then) */
    float *r;                   /* conv_after_body(a[n_blocks]) + f0 */
    float *p;                   /* upsample conv output (largest stage); its gradient in
                                   backward */
    float *q[MAX_STAGES];       /* pixel shuffle outputs */
    float *out;                 /* conv_last output, N x 3 x H x W */
    float *pred;                /* out / img_range + mean: the image */
    float *gt;                  /* training: gt / 255, N x 3 x H x W */
    float *d_out, *d_q, *d_r, *d_a, *d_t;   /* gradients (training) */
    void **allocs;              /* every cudaMalloc of this plan */
    int n_allocs, max_allocs;
} cuplan;

struct pf_cuda_model {
    pf_config cfg;              /* copy of the configuration it was built from */
    int device;                 /* CUDA device ordinal */
    int scale;
    int n_stages, stage_r;      /* upsample: stages of factor stage_r (2 or 3) */
    size_t n_params;
    pf_param_info *tensors;     /* weight then bias for every conv, in state_dict order */
    int n_tensors;
    int n_convs;
    pf_cuconv *train_conv;      /* n_convs layers with training algorithms */
    pf_cuconv *infer_conv;      /* the same layers for the inference shape */
    cudaStream_t stream;        /* owned; every kernel, conv and copy goes here */
    pf_cudnn *cudnn;            /* handle on stream, shared workspace */
    float *params, *grads;      /* device, n_params floats each */
    float *loss;                /* device, 1 float */
    double *loss_scratch;       /* device, PF_CUDA_LOSS_SCRATCH doubles */
    float *h_loss;              /* pinned host copy of the loss */
    uint8_t *h_in;              /* pinned staging for uploads, h_in_bytes */
    size_t h_in_bytes;
    float *h_out;               /* pinned staging for the inference output, h_out_bytes */
    size_t h_out_bytes;
    cuplan train, infer;
    pf_cugraph *graph;          /* every network but EDSR (graph_cuda.h); NULL for EDSR */
};

/* ---- errors ------------------------------------------------------------------------------- */

static int cuda_fail(const char *where, const char *call, cudaError_t e, char *err,
                     size_t errlen) {
    snprintf(err, errlen, "%s: %s: %s (%s)", where, call, cudaGetErrorString(e),
             cudaGetErrorName(e));
    return -1;
}

#define CUDA_TRY(where, call_name, expr)                                                      \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        if (e_ != cudaSuccess) return cuda_fail(where, call_name, e_, err, errlen);           \
    } while (0)

/* Convolution calls name their layer themselves. */
#define TRY(expr) do { if (expr) return -1; } while (0)

/* An op (nn/cuda/ops.h) called with the local buffer `oe`; on failure err =
   "<layer> <what>: <op's message>". */
#define OP(layer, what, expr)                                                                 \
    do {                                                                                      \
        if (expr) {                                                                           \
            snprintf(err, errlen, "%s %s: %s", (layer), (what), oe);                          \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

static int use_device(const pf_cuda_model *m, char *err, size_t errlen) {
    CUDA_TRY("cuda model", "cudaSetDevice", cudaSetDevice(m->device));
    return 0;
}

/* ---- construction ------------------------------------------------------------------------- */

/* Register conv `name` (ic -> oc, k x k) as tensors name.weight (OIHW) and name.bias (O):
   through nn/param_table.c like nn/model.c, so the offsets are the CPU model's. */
static void add_conv(pf_cuda_model *m, const char *name, int ic, int oc, int k) {
    pf_param_table_add_conv(m->tensors, &m->n_tensors, &m->n_params, name, ic, oc, k);
    pf_cuconv_init(&m->train_conv[m->n_convs], name, ic, oc, k);
    pf_cuconv_init(&m->infer_conv[m->n_convs], name, ic, oc, k);
    m->n_convs++;
}

static float *conv_w(pf_cuda_model *m, float *base, int i) {
    return base + m->tensors[2 * i].offset;
}
static float *conv_b(pf_cuda_model *m, float *base, int i) {
    return base + m->tensors[2 * i + 1].offset;
}

/* EDSR's parameter table and layers (m->cfg, m->stage_r, m->n_stages set). */
static int edsr_describe(pf_cuda_model *m, char *err, size_t errlen) {
    const pf_config *cfg = &m->cfg;
    if (cfg->scale == 2 || cfg->scale == 4) {
        m->stage_r = 2;
        m->n_stages = cfg->scale == 2 ? 1 : 2;
    } else if (cfg->scale == 3) {
        m->stage_r = 3;
        m->n_stages = 1;
    } else {
        snprintf(err, errlen, "cuda model: EDSR supports scale 2, 3 or 4, not %d", cfg->scale);
        return -1;
    }
    if (cfg->n_feats < 1 || cfg->n_blocks < 0 || cfg->img_range <= 0.0f) {
        snprintf(err, errlen, "cuda model: EDSR needs n_feats >= 1, n_blocks >= 0, "
                 "img_range > 0");
        return -1;
    }
    int max_convs = 2 * cfg->n_blocks + 3 + m->n_stages;
    m->tensors = calloc((size_t)max_convs * 2, sizeof *m->tensors);
    m->train_conv = calloc((size_t)max_convs, sizeof *m->train_conv);
    m->infer_conv = calloc((size_t)max_convs, sizeof *m->infer_conv);
    if (!m->tensors || !m->train_conv || !m->infer_conv) {
        snprintf(err, errlen, "cuda model: out of memory");
        return -1;
    }
    int c = cfg->n_feats;
    char name[64];
    add_conv(m, "conv_first", 3, c, 3);
    for (int i = 0; i < cfg->n_blocks; i++) {
        snprintf(name, sizeof name, "body.%d.conv1", i);
        add_conv(m, name, c, c, 3);
        snprintf(name, sizeof name, "body.%d.conv2", i);
        add_conv(m, name, c, c, 3);
    }
    add_conv(m, "conv_after_body", c, c, 3);
    for (int s = 0; s < m->n_stages; s++) {
        snprintf(name, sizeof name, "upsample.%d", 2 * s);
        add_conv(m, name, c, c * m->stage_r * m->stage_r, 3);
    }
    add_conv(m, "conv_last", c, 3, 3);
    return 0;
}

/* Every other network: the description and the parameter table from the CPU builder
   (graph_cuda.h). The device must be current (FSRCNN's index maps live on it). */
static int graph_describe(pf_cuda_model *m, char *err, size_t errlen) {
    if (!(m->graph = pf_cugraph_new(&m->cfg, err, errlen))) return -1;
    m->n_tensors = pf_cugraph_num_tensors(m->graph);
    m->n_params = pf_cugraph_num_params(m->graph);
    if (!(m->tensors = calloc((size_t)m->n_tensors + 1, sizeof *m->tensors))) {
        snprintf(err, errlen, "cuda model: out of memory");
        return -1;
    }
    for (int i = 0; i < m->n_tensors; i++) m->tensors[i] = *pf_cugraph_tensor_info(m->graph, i);
    return 0;
}

pf_cuda_model *pf_cuda_model_new(const pf_config *cfg, int device, int allow_tf32, char *err,
                                 size_t errlen) {
    int graph = pf_cugraph_supports(cfg->model_type);
    if (!graph && strcmp(cfg->model_type, "EDSR")) {
        snprintf(err, errlen, "cuda model: unsupported model_type '%s'", cfg->model_type);
        return NULL;
    }
    pf_cuda_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "cuda model: out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->device = device;
    m->scale = cfg->scale;
    if (strcmp(cfg->loss_type, "L1Loss") && strcmp(cfg->loss_type, "MSELoss") &&
        strcmp(cfg->loss_type, "CharbonnierLoss")) {
        snprintf(err, errlen, "cuda model: unsupported loss_type '%s' (L1Loss, MSELoss, "
                 "CharbonnierLoss)", cfg->loss_type);
        goto fail;
    }
    cudaError_t e;
    const char *who = "cuda model";
    if ((e = cudaSetDevice(device)) != cudaSuccess) {
        char call[64];
        snprintf(call, sizeof call, "cudaSetDevice(%d)", device);
        cuda_fail(who, call, e, err, errlen);
        goto fail;
    }
    if (graph ? graph_describe(m, err, errlen) : edsr_describe(m, err, errlen)) goto fail;
    if ((e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        m->stream = NULL;
        cuda_fail(who, "cudaStreamCreateWithFlags", e, err, errlen);
        goto fail;
    }
    if (!(m->cudnn = pf_cudnn_new(m->stream, allow_tf32, 0, 0, err, errlen))) goto fail;
    size_t pbytes = m->n_params * sizeof(float);
    if ((e = cudaMalloc((void **)&m->params, pbytes)) != cudaSuccess ||
        (e = cudaMalloc((void **)&m->grads, pbytes)) != cudaSuccess ||
        (e = cudaMalloc((void **)&m->loss, sizeof(float))) != cudaSuccess ||
        (e = cudaMalloc((void **)&m->loss_scratch, PF_CUDA_LOSS_SCRATCH * sizeof(double))) !=
            cudaSuccess) {
        char call[96];
        snprintf(call, sizeof call, "cudaMalloc (%zu parameters)", m->n_params);
        cuda_fail(who, call, e, err, errlen);
        goto fail;
    }
    if ((e = cudaMallocHost((void **)&m->h_loss, sizeof(float))) != cudaSuccess) {
        cuda_fail(who, "cudaMallocHost", e, err, errlen);
        goto fail;
    }
    if ((e = cudaMemsetAsync(m->params, 0, pbytes, m->stream)) != cudaSuccess ||
        (e = cudaMemsetAsync(m->grads, 0, pbytes, m->stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(m->stream)) != cudaSuccess) {
        cuda_fail(who, "cudaMemsetAsync", e, err, errlen);
        goto fail;
    }
    return m;
fail:
    pf_cuda_model_destroy(&m);
    return NULL;
}

static void plan_free(cuplan *p) {
    for (int i = 0; i < p->n_allocs; i++) cudaFree(p->allocs[i]);
    free(p->allocs);
    free(p->a);
    free(p->t);
    memset(p, 0, sizeof *p);
}

void pf_cuda_model_destroy(pf_cuda_model **self) {
    pf_cuda_model *m = *self;
    if (!m) return;
    if (m->stream) {
        cudaSetDevice(m->device);
        cudaStreamSynchronize(m->stream);
    }
    for (int i = 0; i < m->n_convs; i++) {
        pf_cuconv_free(&m->train_conv[i]);
        pf_cuconv_free(&m->infer_conv[i]);
    }
    plan_free(&m->train);
    plan_free(&m->infer);
    pf_cugraph_destroy(&m->graph);
    pf_cudnn_destroy(&m->cudnn);
    cudaFree(m->params);
    cudaFree(m->grads);
    cudaFree(m->loss);
    cudaFree(m->loss_scratch);
    cudaFreeHost(m->h_loss);
    cudaFreeHost(m->h_in);
    cudaFreeHost(m->h_out);
    if (m->stream) cudaStreamDestroy(m->stream);
    free(m->train_conv);
    free(m->infer_conv);
    free(m->tensors);
    free(m);
    *self = NULL;
}

size_t pf_cuda_model_num_params(const pf_cuda_model *m) { return m->n_params; }
int pf_cuda_model_num_tensors(const pf_cuda_model *m) { return m->n_tensors; }
const pf_param_info *pf_cuda_model_tensor_info(const pf_cuda_model *m, int i) {
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}
int pf_cuda_model_scale(const pf_cuda_model *m) { return m->scale; }
float *pf_cuda_model_params_device(pf_cuda_model *m) { return m->params; }
float *pf_cuda_model_grads_device(pf_cuda_model *m) { return m->grads; }
cudaStream_t pf_cuda_model_stream(pf_cuda_model *m) { return m->stream; }

/* ---- host <-> device copies --------------------------------------------------------------- */

static int copy_sync(pf_cuda_model *m, const char *what, void *dst, const void *src,
                     size_t bytes, enum cudaMemcpyKind kind, char *err, size_t errlen) {
    TRY(use_device(m, err, errlen));
    CUDA_TRY(what, "cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind, m->stream));
    CUDA_TRY(what, "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    return 0;
}

int pf_cuda_model_set_params(pf_cuda_model *m, const float *host_params, char *err,
                             size_t errlen) {
    return copy_sync(m, "cuda model set_params", m->params, host_params,
                     m->n_params * sizeof(float), cudaMemcpyHostToDevice, err, errlen);
}

int pf_cuda_model_get_params(pf_cuda_model *m, float *host_params, char *err, size_t errlen) {
    return copy_sync(m, "cuda model get_params", host_params, m->params,
                     m->n_params * sizeof(float), cudaMemcpyDeviceToHost, err, errlen);
}

int pf_cuda_model_get_grads(pf_cuda_model *m, float *host_grads, char *err, size_t errlen) {
    return copy_sync(m, "cuda model get_grads", host_grads, m->grads,
                     m->n_params * sizeof(float), cudaMemcpyDeviceToHost, err, errlen);
}

/* Make a pinned host buffer at least `bytes` large (the stream is idle between calls, so
   the old one is free to go). */
static int grow_pinned(void **buf, size_t *have, size_t bytes, char *err, size_t errlen) {
    if (bytes <= *have) return 0;
    cudaFreeHost(*buf);
    *buf = NULL;
    *have = 0;
    cudaError_t e = cudaMallocHost(buf, bytes);
    if (e != cudaSuccess) {
        *buf = NULL;
        char call[64];
        snprintf(call, sizeof call, "cudaMallocHost(%zu bytes)", bytes);
        return cuda_fail("cuda model staging", call, e, err, errlen);
    }
    *have = bytes;
    return 0;
}

/* ---- plans -------------------------------------------------------------------------------- */

static void *plan_alloc(cuplan *p, size_t bytes) {
    if (p->n_allocs >= p->max_allocs) return NULL;
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) {
        cudaGetLastError(); /* not sticky, but clear it so later checks see only their own */
        return NULL;
    }
    p->allocs[p->n_allocs++] = d;
    return d;
}

#define ALLOC(ptr, count)                                                                     \
    do {                                                                                      \
        if (!((ptr) = plan_alloc(p, (size_t)(count) * sizeof *(ptr)))) goto oom;              \
    } while (0)

/* Buffers and convolution algorithms for LQ batches n x h x w; training keeps every
   activation backward needs, inference lets dead ones share memory. */
static int plan_build(pf_cuda_model *m, cuplan *p, pf_cuconv *convs, int n, int h, int w,
                      int training, char *err, size_t errlen) {
    if (n < 1 || h < 1 || w < 1) {
        snprintf(err, errlen, "cuda model: bad input shape %d x %d x %d", n, h, w);
        return -1;
    }
    if (p->n == n && p->h == h && p->w == w) return 0;
    plan_free(p);
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r, ns = m->n_stages;
    pf_cudnn *ctx = m->cudnn;

    /* convolutions */
    TRY(pf_cuconv_setup(&convs[CONV_FIRST], ctx, n, h, w, training, err, errlen));
    for (int i = 0; i < nb; i++) {
        TRY(pf_cuconv_setup(&convs[CONV1(i)], ctx, n, h, w, training, err, errlen));
        TRY(pf_cuconv_setup(&convs[CONV2(i)], ctx, n, h, w, training, err, errlen));
    }
    TRY(pf_cuconv_setup(&convs[CONV_AFTER(m)], ctx, n, h, w, training, err, errlen));
    int sh = h, sw = w;
    size_t pmax = 0, qmax = 0;
    for (int s = 0; s < ns; s++) {
        TRY(pf_cuconv_setup(&convs[CONV_UP(m, s)], ctx, n, sh, sw, training, err, errlen));
        size_t ps = (size_t)n * c * r * r * sh * sw;
        if (ps > pmax) pmax = ps;
        sh *= r;
        sw *= r;
        size_t qs = (size_t)n * c * sh * sw;
        if (qs > qmax) qmax = qs;
    }
    TRY(pf_cuconv_setup(&convs[CONV_LAST(m)], ctx, n, sh, sw, training, err, errlen));

    /* buffers */
    p->max_allocs = 2 * nb + 32;
    p->allocs = calloc((size_t)p->max_allocs, sizeof *p->allocs);
    p->a = calloc((size_t)nb + 1, sizeof *p->a);
    p->t = calloc((size_t)nb + 1, sizeof *p->t);
    if (!p->allocs || !p->a || !p->t) {
        plan_free(p);
        snprintf(err, errlen, "cuda model: out of host memory");
        return -1;
    }
    size_t feat = (size_t)n * c * h * w;
    size_t img_lq = (size_t)n * 3 * h * w, img_hq = (size_t)n * 3 * sh * sw;
    ALLOC(p->u8, img_lq + (training ? img_hq : 0));
    ALLOC(p->x, img_lq);
    ALLOC(p->f0, feat);
    p->a[0] = p->f0;
    ALLOC(p->tmp, feat);
    ALLOC(p->p, pmax);
    ALLOC(p->out, img_hq);
    ALLOC(p->pred, img_hq);
    if (training) {
        for (int i = 0; i < nb; i++) {
            ALLOC(p->t[i], feat);
            ALLOC(p->a[i + 1], feat);
        }
        ALLOC(p->r, feat);
        ALLOC(p->gt, img_hq);
        ALLOC(p->d_out, img_hq);
        ALLOC(p->d_q, qmax);
        ALLOC(p->d_r, feat);
        ALLOC(p->d_a, feat);
        ALLOC(p->d_t, feat);
    } else {
        /* live at once: f0 (the skip), a[i], ReLU(conv1), conv2's output (tmp) and a[i+1];
           r takes t's buffer once the body is done */
        float *A, *B, *T;
        ALLOC(A, feat);
        ALLOC(B, feat);
        ALLOC(T, feat);
        for (int i = 0; i < nb; i++) {
            p->t[i] = T;
            p->a[i + 1] = (i % 2 == 0) ? A : B;
        }
        p->r = T;
    }
    sh = h;
    sw = w;
    for (int s = 0; s < ns; s++) {
        sh *= r;
        sw *= r;
        ALLOC(p->q[s], (size_t)n * c * sh * sw);
    }
    p->n = n;
    p->h = h;
    p->w = w;
    return 0;
oom:
    plan_free(p);
    snprintf(err, errlen, "cuda model: out of device memory for the activations of a %d x %d "
             "x %d batch (%s)", n, h, w, training ? "training" : "inference");
    return -1;
}
#undef ALLOC

/* ---- forward / backward ------------------------------------------------------------------- */

/* From the uploaded LQ (p->u8) to p->out and p->pred. */
static int edsr_forward(pf_cuda_model *m, cuplan *p, pf_cuconv *convs, char *err,
                        size_t errlen) {
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r;
    int n = p->n, h = p->h, w = p->w;
    size_t feat = (size_t)n * c * h * w;
    cudaStream_t st = m->stream;
    float *W = m->params;
    char oe[512];

    OP("input", "uint8 -> float", pf_cuda_u8_nhwc_to_nchw(p->x, p->u8, n, h, w, 3, st, oe,
                                                          sizeof oe));
    OP("input", "mean shift", pf_cuda_mean_shift(p->x, p->x, n, 3, h, w, m->cfg.rgb_mean,
                                                 m->cfg.img_range, st, oe, sizeof oe));
    TRY(pf_cuconv_forward(&convs[CONV_FIRST], p->x, conv_w(m, W, CONV_FIRST),
                          conv_b(m, W, CONV_FIRST), p->f0, err, errlen));
    for (int i = 0; i < nb; i++) {
        pf_cuconv *c1 = &convs[CONV1(i)], *c2 = &convs[CONV2(i)];
        TRY(pf_cuconv_forward(c1, p->a[i], conv_w(m, W, CONV1(i)), conv_b(m, W, CONV1(i)),
                              p->t[i], err, errlen));
        OP(c1->name, "ReLU", pf_cuda_relu_forward(p->t[i], p->t[i], feat, st, oe, sizeof oe));
        TRY(pf_cuconv_forward(c2, p->t[i], conv_w(m, W, CONV2(i)), conv_b(m, W, CONV2(i)),
                              p->tmp, err, errlen));
        OP(c2->name, "residual add", pf_cuda_add_scaled(p->a[i + 1], p->a[i], p->tmp,
                                                         m->cfg.res_scale, feat, st, oe,
                                                         sizeof oe));
    }
    int ca = CONV_AFTER(m);
    TRY(pf_cuconv_forward(&convs[ca], p->a[nb], conv_w(m, W, ca), conv_b(m, W, ca), p->tmp,
                          err, errlen));
    OP(convs[ca].name, "skip add", pf_cuda_add_scaled(p->r, p->f0, p->tmp, 1.0f, feat, st, oe,
                                                      sizeof oe));
    const float *in = p->r;
    int sh = h, sw = w;
    for (int s = 0; s < m->n_stages; s++) {
        int cu = CONV_UP(m, s);
        TRY(pf_cuconv_forward(&convs[cu], in, conv_w(m, W, cu), conv_b(m, W, cu), p->p, err,
                              errlen));
        OP(convs[cu].name, "pixel shuffle",
           pf_cuda_pixel_shuffle_forward(p->q[s], p->p, n, c, sh, sw, r, st, oe, sizeof oe));
        in = p->q[s];
        sh *= r;
        sw *= r;
    }
    int cl = CONV_LAST(m);
    TRY(pf_cuconv_forward(&convs[cl], in, conv_w(m, W, cl), conv_b(m, W, cl), p->out, err,
                          errlen));
    OP(convs[cl].name, "mean unshift",
       pf_cuda_mean_unshift(p->pred, p->out, n, 3, sh, sw, m->cfg.rgb_mean, m->cfg.img_range,
                            st, oe, sizeof oe));
    return 0;
}

/* Loss of p->pred against the uploaded GT into m->loss, and d loss / d out into p->d_out. */
static int edsr_loss(pf_cuda_model *m, cuplan *p, char *err, size_t errlen) {
    int s = m->scale, n = p->n, H = p->h * s, W = p->w * s;
    size_t count = (size_t)n * 3 * H * W;
    const uint8_t *gt_u8 = p->u8 + (size_t)n * p->h * p->w * 3;
    cudaStream_t st = m->stream;
    char oe[512];
    OP("loss", "gt uint8 -> float",
       pf_cuda_u8_nhwc_to_nchw(p->gt, gt_u8, n, H, W, 3, st, oe, sizeof oe));
    OP("loss", m->cfg.loss_type,
       pf_cuda_pixel_loss(m->cfg.loss_type, m->loss, p->d_out, p->pred, p->gt, count,
                          m->cfg.loss_weight, m->cfg.charbonnier_eps, m->loss_scratch, st, oe,
                          sizeof oe));
    /* through the inverse mean shift: d out = d pred / img_range */
    OP("loss", "mean unshift backward",
       pf_cuda_scale(p->d_out, p->d_out, 1.0f / m->cfg.img_range, count, st, oe, sizeof oe));
    return 0;
}

/* From p->d_out to every gradient in m->grads (overwritten), as nn/edsr.c's backward. */
static int edsr_backward(pf_cuda_model *m, cuplan *p, pf_cuconv *convs, char *err,
                         size_t errlen) {
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r, ns = m->n_stages;
    int n = p->n, h = p->h, w = p->w;
    size_t feat = (size_t)n * c * h * w;
    cudaStream_t st = m->stream;
    float *W = m->params, *G = m->grads;
    char oe[512];
    /* weight and bias gradients of conv i from its input `src` and output gradient `dd` */
#define BWDW(i, src, dd)                                                                      \
    do {                                                                                      \
        TRY(pf_cuconv_backward_filter(&convs[i], (src), (dd), conv_w(m, G, i), 0, err,        \
                                      errlen));                                               \
        TRY(pf_cuconv_backward_bias(&convs[i], (dd), conv_b(m, G, i), 0, err, errlen));       \
    } while (0)

    /* conv_last */
    int cl = CONV_LAST(m);
    BWDW(cl, p->q[ns - 1], p->d_out);
    TRY(pf_cuconv_backward_data(&convs[cl], conv_w(m, W, cl), p->d_out, p->d_q, err, errlen));
    /* upsample stages, last first; p->p holds the gradient at the conv output */
    int f = 1;
    for (int s = 0; s < ns; s++) f *= r;
    for (int s = ns - 1; s >= 0; s--) {
        int cu = CONV_UP(m, s);
        f /= r;
        int sh = h * f, sw = w * f;
        OP(convs[cu].name, "pixel shuffle backward",
           pf_cuda_pixel_shuffle_backward(p->p, p->d_q, n, c, sh, sw, r, st, oe, sizeof oe));
        BWDW(cu, s == 0 ? p->r : p->q[s - 1], p->p);
        TRY(pf_cuconv_backward_data(&convs[cu], conv_w(m, W, cu), p->p,
                                    s == 0 ? p->d_r : p->d_q, err, errlen));
    }
    /* r = conv_after_body(a[nb]) + f0 */
    int ca = CONV_AFTER(m);
    BWDW(ca, p->a[nb], p->d_r);
    TRY(pf_cuconv_backward_data(&convs[ca], conv_w(m, W, ca), p->d_r, p->d_a, err, errlen));
    /* body, last block first; d_a holds d loss / d a[i+1]. tmp (dead after the forward)
       serves as d_u = res_scale * d_a and then as d_tmp = d loss / d a[i] via conv1. */
    for (int i = nb - 1; i >= 0; i--) {
        pf_cuconv *c1 = &convs[CONV1(i)], *c2 = &convs[CONV2(i)];
        const float *du = p->d_a;
        if (m->cfg.res_scale != 1.0f) {
            OP(c2->name, "residual scale backward",
               pf_cuda_scale(p->tmp, p->d_a, m->cfg.res_scale, feat, st, oe, sizeof oe));
            du = p->tmp;
        }
        BWDW(CONV2(i), p->t[i], du);
        TRY(pf_cuconv_backward_data(c2, conv_w(m, W, CONV2(i)), du, p->d_t, err, errlen));
        OP(c1->name, "ReLU backward",
           pf_cuda_relu_backward(p->d_t, p->d_t, p->t[i], feat, st, oe, sizeof oe));
        BWDW(CONV1(i), p->a[i], p->d_t);
        TRY(pf_cuconv_backward_data(c1, conv_w(m, W, CONV1(i)), p->d_t, p->tmp, err, errlen));
        OP(c1->name, "identity gradient",
           pf_cuda_axpy(p->d_a, p->tmp, 1.0f, feat, st, oe, sizeof oe));
    }
    /* f0 feeds both the body and the global skip */
    OP("conv_first", "skip gradient", pf_cuda_axpy(p->d_a, p->d_r, 1.0f, feat, st, oe,
                                                   sizeof oe));
    BWDW(CONV_FIRST, p->x, p->d_a);
#undef BWDW
    return 0;
}

/* ---- entry points ------------------------------------------------------------------------- */

int pf_cuda_model_train_step(pf_cuda_model *m, const uint8_t *lq, const uint8_t *gt, int n,
                             int lq_h, int lq_w, float *loss, char *err, size_t errlen) {
    TRY(use_device(m, err, errlen));
    /* the staging buffer is rewritten below: a call that failed after queueing work may
       have left an upload from it in flight */
    CUDA_TRY("cuda model", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    if (n < 1 || lq_h < 1 || lq_w < 1) {
        snprintf(err, errlen, "cuda model: bad input shape %d x %d x %d", n, lq_h, lq_w);
        return -1;
    }
    size_t lq_bytes = (size_t)n * lq_h * lq_w * 3;
    size_t gt_bytes = lq_bytes * (size_t)m->scale * (size_t)m->scale;
    TRY(grow_pinned((void **)&m->h_in, &m->h_in_bytes, lq_bytes + gt_bytes, err, errlen));
    memcpy(m->h_in, lq, lq_bytes);
    memcpy(m->h_in + lq_bytes, gt, gt_bytes);
    if (m->graph) {
        pf_cugraph_env env = { m->stream, m->cudnn, m->params, m->grads, m->loss,
                               m->loss_scratch };
        TRY(pf_cugraph_train_step(m->graph, &env, m->h_in, n, lq_h, lq_w, err, errlen));
    } else {
        cuplan *p = &m->train;
        TRY(plan_build(m, p, m->train_conv, n, lq_h, lq_w, 1, err, errlen));
        CUDA_TRY("train step upload", "cudaMemcpyAsync",
                 cudaMemcpyAsync(p->u8, m->h_in, lq_bytes + gt_bytes, cudaMemcpyHostToDevice,
                                 m->stream));
        TRY(edsr_forward(m, p, m->train_conv, err, errlen));
        TRY(edsr_loss(m, p, err, errlen));
        TRY(edsr_backward(m, p, m->train_conv, err, errlen));
    }
    CUDA_TRY("train step loss", "cudaMemcpyAsync",
             cudaMemcpyAsync(m->h_loss, m->loss, sizeof(float), cudaMemcpyDeviceToHost,
                             m->stream));
    /* an execution fault of any kernel above shows here */
    CUDA_TRY("train step", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    *loss = *m->h_loss;
    return 0;
}

int pf_cuda_model_infer(pf_cuda_model *m, const uint8_t *lq, int h, int w, float *out_host,
                        char *err, size_t errlen) {
    TRY(use_device(m, err, errlen));
    /* the staging buffer is rewritten below: a call that failed after queueing work may
       have left an upload from it in flight */
    CUDA_TRY("cuda model", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    if (h < 1 || w < 1) {
        snprintf(err, errlen, "cuda model: bad input shape %d x %d", h, w);
        return -1;
    }
    size_t lq_bytes = (size_t)h * w * 3;
    int H = h * m->scale, W = w * m->scale;
    size_t hw = (size_t)H * W;
    TRY(grow_pinned((void **)&m->h_in, &m->h_in_bytes, lq_bytes, err, errlen));
    TRY(grow_pinned((void **)&m->h_out, &m->h_out_bytes, hw * 3 * sizeof(float), err,
                    errlen));
    memcpy(m->h_in, lq, lq_bytes);
    const float *pred;
    if (m->graph) {
        pf_cugraph_env env = { m->stream, m->cudnn, m->params, m->grads, m->loss,
                               m->loss_scratch };
        TRY(pf_cugraph_infer(m->graph, &env, m->h_in, h, w, &pred, err, errlen));
    } else {
        cuplan *p = &m->infer;
        TRY(plan_build(m, p, m->infer_conv, 1, h, w, 0, err, errlen));
        CUDA_TRY("infer upload", "cudaMemcpyAsync",
                 cudaMemcpyAsync(p->u8, m->h_in, lq_bytes, cudaMemcpyHostToDevice, m->stream));
        TRY(edsr_forward(m, p, m->infer_conv, err, errlen));
        pred = p->pred;
    }
    CUDA_TRY("infer download", "cudaMemcpyAsync",
             cudaMemcpyAsync(m->h_out, pred, hw * 3 * sizeof(float), cudaMemcpyDeviceToHost,
                             m->stream));
    CUDA_TRY("infer", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    /* CHW -> HWC on the host (3 x H x W floats: cheap next to the network) */
    for (int ch = 0; ch < 3; ch++)
        for (size_t i = 0; i < hw; i++) out_host[i * 3 + ch] = m->h_out[ch * hw + i];
    return 0;
}
