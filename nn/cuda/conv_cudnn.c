/*  conv_cudnn — 2-D convolution layer on cuDNN's legacy API (see conv_cudnn.h).

    How an algorithm is chosen (pf_cuconv_setup, once per shape): cuDNN ranks its candidates
    (cudnnGet*Algorithm_v7 by heuristics, cudnnFind* by timing them when ctx->benchmark); the
    first candidate that succeeded, fits ctx->workspace_limit, is deterministic when
    ctx->deterministic, and does not down-convert fp32 to fp16 wins. Its math type goes into
    the direction's own convolution descriptor — the rankings do not respect the descriptor's
    math type (PyTorch's Conv_v7.cpp makes the same observation) — except that without
    allow_tf32 the descriptor stays CUDNN_FMA_MATH, as PyTorch does. The winner's workspace is
    then asked for again with the final descriptor; a candidate cuDNN rejects there is skipped.

    The legacy convolution API is marked deprecated in cuDNN 9 (warnings only with
    CUDNN_WARN_DEPRECATED); it is still shipped and is what PyTorch's cudnn path used for years.
    Moving to the graph API is a later step (docs/cuda.md).
*/
#include "nn/cuda/conv_cudnn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* err = "<layer>: <call>: <cuDNN status> (<cuDNN's last message>)" */
static int cudnn_fail(const char *layer, const char *call, cudnnStatus_t st, char *err,
                      size_t errlen) {
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    snprintf(err, errlen, "%s: %s: %s%s%s%s", layer, call, cudnnGetErrorString(st),
             detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
    return -1;
}

static int cuda_fail(const char *layer, const char *call, cudaError_t e, char *err,
                     size_t errlen) {
    snprintf(err, errlen, "%s: %s: %s (%s)", layer, call, cudaGetErrorString(e),
             cudaGetErrorName(e));
    return -1;
}

/* Run a cuDNN call in a function with `err`, `errlen` and a layer name `who`. */
#define CUDNN_TRY(call_name, expr)                                                            \
    do {                                                                                      \
        cudnnStatus_t st_ = (expr);                                                           \
        if (st_ != CUDNN_STATUS_SUCCESS) return cudnn_fail(who, call_name, st_, err, errlen); \
    } while (0)

/* ---- context ------------------------------------------------------------------------------ */

pf_cudnn *pf_cudnn_new(cudaStream_t stream, int allow_tf32, int deterministic, int benchmark,
                       char *err, size_t errlen) {
    const char *who = "cudnn context";
    pf_cudnn *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "%s: out of memory", who);
        return NULL;
    }
    ctx->stream = stream;
    ctx->workspace_limit = (size_t)1 << 30;
    ctx->allow_tf32 = allow_tf32;
    ctx->deterministic = deterministic;
    ctx->benchmark = benchmark;
    cudnnStatus_t st = cudnnCreate(&ctx->handle);
    if (st != CUDNN_STATUS_SUCCESS) {
        cudnn_fail(who, "cudnnCreate", st, err, errlen);
        free(ctx);
        return NULL;
    }
    st = cudnnSetStream(ctx->handle, stream);
    if (st != CUDNN_STATUS_SUCCESS) {
        cudnn_fail(who, "cudnnSetStream", st, err, errlen);
        pf_cudnn_destroy(&ctx);
        return NULL;
    }
    return ctx;
}

void pf_cudnn_destroy(pf_cudnn **self) {
    if (!self || !*self) return;
    pf_cudnn *ctx = *self;
    if (ctx->workspace) {
        cudaStreamSynchronize(ctx->stream);
        cudaFree(ctx->workspace);
    }
    if (ctx->handle) cudnnDestroy(ctx->handle);
    free(ctx);
    *self = NULL;
}

int pf_cudnn_reserve(pf_cudnn *ctx, size_t bytes, char *err, size_t errlen) {
    const char *who = "cudnn workspace";
    if (bytes <= ctx->workspace_bytes) return 0;
    cudaError_t e;
    if (ctx->workspace) {
        /* layers already queued may still be using the old workspace */
        if ((e = cudaStreamSynchronize(ctx->stream)) != cudaSuccess)
            return cuda_fail(who, "cudaStreamSynchronize", e, err, errlen);
        if ((e = cudaFree(ctx->workspace)) != cudaSuccess)
            return cuda_fail(who, "cudaFree", e, err, errlen);
        ctx->workspace = NULL;
        ctx->workspace_bytes = 0;
    }
    if ((e = cudaMalloc(&ctx->workspace, bytes)) != cudaSuccess) {
        ctx->workspace = NULL;
        char what[64];
        snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", bytes);
        return cuda_fail(who, what, e, err, errlen);
    }
    ctx->workspace_bytes = bytes;
    return 0;
}

/* ---- layer -------------------------------------------------------------------------------- */

void pf_cuconv_init(pf_cuconv *c, const char *name, int ic, int oc, int k) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ic = ic;
    c->oc = oc;
    c->k = k;
    pf_cuconv_set_geometry(c, 1, k / 2, 1);
}

static void destroy_descriptors(pf_cuconv *c) {
    if (c->src_desc) cudnnDestroyTensorDescriptor(c->src_desc);
    if (c->dst_desc) cudnnDestroyTensorDescriptor(c->dst_desc);
    if (c->bias_desc) cudnnDestroyTensorDescriptor(c->bias_desc);
    if (c->out_desc) cudnnDestroyTensorDescriptor(c->out_desc);
    if (c->w_desc) cudnnDestroyFilterDescriptor(c->w_desc);
    if (c->fwd_conv) cudnnDestroyConvolutionDescriptor(c->fwd_conv);
    if (c->bwdd_conv) cudnnDestroyConvolutionDescriptor(c->bwdd_conv);
    if (c->bwdf_conv) cudnnDestroyConvolutionDescriptor(c->bwdf_conv);
    c->src_desc = c->dst_desc = c->bias_desc = c->out_desc = NULL;
    c->w_desc = NULL;
    c->fwd_conv = c->bwdd_conv = c->bwdf_conv = NULL;
    c->n = c->h = c->w = 0;
}

void pf_cuconv_free(pf_cuconv *c) {
    destroy_descriptors(c);
    pf_cuconv_bf16_free(c);
}

/* One ranked candidate, whatever the direction. */
typedef struct {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
} candidate;

enum { DIR_FWD, DIR_BWDD, DIR_BWDF };
static const char *dir_name[] = {"forward", "backward-data", "backward-filter"};

/* Ranked candidates for one direction into cand (at most 16); returns the count or -1. */
static int rank_candidates(pf_cuconv *c, int dir, candidate *cand, char *err, size_t errlen) {
    const char *who = c->name;
    cudnnHandle_t h = c->ctx->handle;
    int bench = c->ctx->benchmark, got = 0;
    enum { MAXC = 16 };
    if (dir == DIR_FWD) {
        cudnnConvolutionFwdAlgoPerf_t p[MAXC];
        if (bench)
            CUDNN_TRY("cudnnFindConvolutionForwardAlgorithm",
                      cudnnFindConvolutionForwardAlgorithm(h, c->src_desc, c->w_desc, c->fwd_conv,
                                                           c->dst_desc, MAXC, &got, p));
        else
            CUDNN_TRY("cudnnGetConvolutionForwardAlgorithm_v7",
                      cudnnGetConvolutionForwardAlgorithm_v7(h, c->src_desc, c->w_desc,
                                                             c->fwd_conv, c->dst_desc, MAXC,
                                                             &got, p));
        for (int i = 0; i < got; i++)
            cand[i] = (candidate){(int)p[i].algo, p[i].status, p[i].memory, p[i].determinism,
                                  p[i].mathType};
    } else if (dir == DIR_BWDD) {
        cudnnConvolutionBwdDataAlgoPerf_t p[MAXC];
        if (bench)
            CUDNN_TRY("cudnnFindConvolutionBackwardDataAlgorithm",
                      cudnnFindConvolutionBackwardDataAlgorithm(h, c->w_desc, c->dst_desc,
                                                                c->bwdd_conv, c->src_desc, MAXC,
                                                                &got, p));
        else
            CUDNN_TRY("cudnnGetConvolutionBackwardDataAlgorithm_v7",
                      cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c->w_desc, c->dst_desc,
                                                                  c->bwdd_conv, c->src_desc,
                                                                  MAXC, &got, p));
        for (int i = 0; i < got; i++)
            cand[i] = (candidate){(int)p[i].algo, p[i].status, p[i].memory, p[i].determinism,
                                  p[i].mathType};
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[MAXC];
        if (bench)
            CUDNN_TRY("cudnnFindConvolutionBackwardFilterAlgorithm",
                      cudnnFindConvolutionBackwardFilterAlgorithm(h, c->src_desc, c->dst_desc,
                                                                  c->bwdf_conv, c->w_desc, MAXC,
                                                                  &got, p));
        else
            CUDNN_TRY("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                      cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c->src_desc, c->dst_desc,
                                                                    c->bwdf_conv, c->w_desc,
                                                                    MAXC, &got, p));
        for (int i = 0; i < got; i++)
            cand[i] = (candidate){(int)p[i].algo, p[i].status, p[i].memory, p[i].determinism,
                                  p[i].mathType};
    }
    return got;
}

/* Workspace of algorithm `algo` in direction dir with the direction's current descriptor. */
static cudnnStatus_t workspace_of(pf_cuconv *c, int dir, int algo, size_t *bytes) {
    cudnnHandle_t h = c->ctx->handle;
    if (dir == DIR_FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(h, c->src_desc, c->w_desc, c->fwd_conv,
                                                       c->dst_desc,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    if (dir == DIR_BWDD)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, c->w_desc, c->dst_desc, c->bwdd_conv, c->src_desc,
            (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, c->src_desc, c->dst_desc, c->bwdf_conv, c->w_desc,
        (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

/* Choose direction dir's algorithm (see the file comment); *algo and *ws set. */
static int choose(pf_cuconv *c, int dir, int *algo, size_t *ws, char *err, size_t errlen) {
    const char *who = c->name;
    cudnnConvolutionDescriptor_t conv =
        dir == DIR_FWD ? c->fwd_conv : dir == DIR_BWDD ? c->bwdd_conv : c->bwdf_conv;
    int any_math = c->ctx->allow_tf32 || c->bf16;   /* bf16 is meant for tensor cores */
    cudnnMathType_t base = any_math ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    candidate cand[16];
    int got = rank_candidates(c, dir, cand, err, errlen);
    if (got < 0) return -1;
    for (int i = 0; i < got; i++) {
        candidate *p = &cand[i];
        if (p->status != CUDNN_STATUS_SUCCESS || p->memory > c->ctx->workspace_limit) continue;
        if (c->ctx->deterministic && p->determinism != CUDNN_DETERMINISTIC) continue;
        if (p->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue; /* fp32 -> fp16 */
        cudnnMathType_t math = any_math ? p->math : CUDNN_FMA_MATH;
        CUDNN_TRY("cudnnSetConvolutionMathType", cudnnSetConvolutionMathType(conv, math));
        size_t bytes = 0;
        if (workspace_of(c, dir, p->algo, &bytes) != CUDNN_STATUS_SUCCESS ||
            bytes > c->ctx->workspace_limit)
            continue;
        *algo = p->algo;
        *ws = bytes;
        return 0;
    }
    cudnnSetConvolutionMathType(conv, base);
    snprintf(err, errlen,
             "%s: no usable cuDNN %s algorithm for N=%d ic=%d oc=%d k=%d H=%d W=%d (%d ranked; "
             "workspace limit %zu bytes%s%s)",
             c->name, dir_name[dir], c->n, c->ic, c->oc, c->k, c->h, c->w, got,
             c->ctx->workspace_limit, c->ctx->deterministic ? ", deterministic only" : "",
             c->bf16 ? ", bf16" : c->ctx->allow_tf32 ? "" : ", FP32 FMA only");
    return -1;
}

int pf_cuconv_setup(pf_cuconv *c, pf_cudnn *ctx, int n, int h, int w, int training, char *err,
                    size_t errlen) {
    const char *who = c->name;
    if (c->n == n && c->h == h && c->w == w && c->ctx == ctx && c->training >= training &&
        c->bf16 == !!ctx->bf16)
        return 0;
    int pad = c->pad, stride = c->stride;
    int oh = stride > 0 ? (h + 2 * pad - c->k) / stride + 1 : 0;
    int ow = stride > 0 ? (w + 2 * pad - c->k) / stride + 1 : 0;
    if (n < 1 || h < 1 || w < 1 || c->ic < 1 || c->oc < 1 || c->k < 1 || stride < 1 ||
        pad < 0 || pad >= c->k || h + 2 * pad < c->k || w + 2 * pad < c->k) {
        snprintf(err, errlen,
                 "%s: bad shape N=%d H=%d W=%d ic=%d oc=%d k=%d stride=%d pad=%d (stride >= 1, "
                 "0 <= pad < k, H + 2 pad >= k)",
                 c->name, n, h, w, c->ic, c->oc, c->k, stride, pad);
        return -1;
    }
    destroy_descriptors(c);
    c->ctx = ctx;
    c->n = n; /* for messages; reset to 0 on failure below */
    c->h = h;
    c->w = w;
    c->bf16 = !!ctx->bf16;
    /* bf16: the convolution's tensors are bf16, its compute type stays CUDNN_DATA_FLOAT */
    cudnnDataType_t data = c->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnMathType_t base = ctx->allow_tf32 || c->bf16 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
#define SETUP_TRY(call_name, expr)                                                            \
    do {                                                                                      \
        cudnnStatus_t st_ = (expr);                                                           \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                    \
            cudnn_fail(who, call_name, st_, err, errlen);                                     \
            destroy_descriptors(c);                                                           \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)
    SETUP_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c->src_desc));
    SETUP_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c->dst_desc));
    SETUP_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c->bias_desc));
    SETUP_TRY("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c->out_desc));
    SETUP_TRY("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&c->w_desc));
    SETUP_TRY("cudnnSetTensor4dDescriptor (src)",
              cudnnSetTensor4dDescriptor(c->src_desc, CUDNN_TENSOR_NCHW, data, n, c->ic, h, w));
    SETUP_TRY("cudnnSetTensor4dDescriptor (dst)",
              cudnnSetTensor4dDescriptor(c->dst_desc, CUDNN_TENSOR_NCHW, data, n, c->oc, oh,
                                         ow));
    SETUP_TRY("cudnnSetTensor4dDescriptor (fp32 out)",
              cudnnSetTensor4dDescriptor(c->out_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n,
                                         c->oc, oh, ow));
    SETUP_TRY("cudnnSetTensor4dDescriptor (bias)",
              cudnnSetTensor4dDescriptor(c->bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                         c->oc, 1, 1));
    SETUP_TRY("cudnnSetFilter4dDescriptor",
              cudnnSetFilter4dDescriptor(c->w_desc, data, CUDNN_TENSOR_NCHW, c->oc, c->ic, c->k,
                                         c->k));
    cudnnConvolutionDescriptor_t *convs[3] = {&c->fwd_conv, &c->bwdd_conv, &c->bwdf_conv};
    for (int i = 0; i < 3; i++) {
        SETUP_TRY("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(convs[i]));
        /* CROSS_CORRELATION: what torch's Conv2d computes (no kernel flip) */
        SETUP_TRY("cudnnSetConvolution2dDescriptor",
                  cudnnSetConvolution2dDescriptor(*convs[i], pad, pad, stride, stride, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        SETUP_TRY("cudnnSetConvolutionMathType", cudnnSetConvolutionMathType(*convs[i], base));
    }
#undef SETUP_TRY
    int algo;
    if (choose(c, DIR_FWD, &algo, &c->fwd_ws, err, errlen)) goto fail;
    c->fwd_algo = (cudnnConvolutionFwdAlgo_t)algo;
    size_t need = c->fwd_ws;
    c->bwdd_ws = c->bwdf_ws = 0;
    if (training) {
        if (choose(c, DIR_BWDD, &algo, &c->bwdd_ws, err, errlen)) goto fail;
        c->bwdd_algo = (cudnnConvolutionBwdDataAlgo_t)algo;
        if (choose(c, DIR_BWDF, &algo, &c->bwdf_ws, err, errlen)) goto fail;
        c->bwdf_algo = (cudnnConvolutionBwdFilterAlgo_t)algo;
        if (c->bwdd_ws > need) need = c->bwdd_ws;
        if (c->bwdf_ws > need) need = c->bwdf_ws;
    }
    if (pf_cudnn_reserve(ctx, need, err, errlen)) goto fail;
    if (pf_cuconv_bf16_scratch(c, err, errlen)) goto fail;   /* frees it in fp32 */
    c->training = training;
    return 0;
fail:
    destroy_descriptors(c);
    return -1;
}

static int not_built(const pf_cuconv *c, int need_training, const char *fn, char *err,
                     size_t errlen) {
    if (c->n && (!need_training || c->training)) return 0;
    snprintf(err, errlen, "%s: %s before pf_cuconv_setup%s", c->name, fn,
             need_training ? " with training" : "");
    return -1;
}

int pf_cuconv_forward(pf_cuconv *c, const float *src, const float *w, const float *bias,
                      float *dst, char *err, size_t errlen) {
    const char *who = c->name;
    if (not_built(c, 0, "forward", err, errlen)) return -1;
    if (c->bf16) return pf_cuconv_bf16_forward(c, src, w, bias, dst, err, errlen);
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY("cudnnConvolutionForward",
              cudnnConvolutionForward(c->ctx->handle, &one, c->src_desc, src, c->w_desc, w,
                                      c->fwd_conv, c->fwd_algo, c->ctx->workspace, c->fwd_ws,
                                      &zero, c->dst_desc, dst));
    if (bias && c->has_bias)
        CUDNN_TRY("cudnnAddTensor (bias)",
                  cudnnAddTensor(c->ctx->handle, &one, c->bias_desc, bias, &one, c->out_desc,
                                 dst));
    return 0;
}

int pf_cuconv_backward_data(pf_cuconv *c, const float *w, const float *diff_dst,
                            float *diff_src, int accumulate, char *err, size_t errlen) {
    const char *who = c->name;
    if (not_built(c, 1, "backward_data", err, errlen)) return -1;
    if (c->bf16)
        return pf_cuconv_bf16_backward_data(c, w, diff_dst, diff_src, accumulate, err, errlen);
    const float one = 1.0f, zero = accumulate ? 1.0f : 0.0f;
    CUDNN_TRY("cudnnConvolutionBackwardData",
              cudnnConvolutionBackwardData(c->ctx->handle, &one, c->w_desc, w, c->dst_desc,
                                           diff_dst, c->bwdd_conv, c->bwdd_algo,
                                           c->ctx->workspace, c->bwdd_ws, &zero, c->src_desc,
                                           diff_src));
    return 0;
}

int pf_cuconv_backward_filter(pf_cuconv *c, const float *src, const float *diff_dst, float *dw,
                              int accumulate, char *err, size_t errlen) {
    const char *who = c->name;
    if (not_built(c, 1, "backward_filter", err, errlen)) return -1;
    if (c->bf16) return pf_cuconv_bf16_backward_filter(c, src, diff_dst, dw, accumulate, err,
                                                       errlen);
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    CUDNN_TRY("cudnnConvolutionBackwardFilter",
              cudnnConvolutionBackwardFilter(c->ctx->handle, &one, c->src_desc, src, c->dst_desc,
                                             diff_dst, c->bwdf_conv, c->bwdf_algo,
                                             c->ctx->workspace, c->bwdf_ws, &beta, c->w_desc,
                                             dw));
    return 0;
}

int pf_cuconv_backward_bias(pf_cuconv *c, const float *diff_dst, float *db, int accumulate,
                            char *err, size_t errlen) {
    const char *who = c->name;
    if (not_built(c, 0, "backward_bias", err, errlen)) return -1;
    if (!c->has_bias) {
        snprintf(err, errlen, "%s: backward_bias of a layer without a bias", c->name);
        return -1;
    }
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    CUDNN_TRY("cudnnConvolutionBackwardBias",
              cudnnConvolutionBackwardBias(c->ctx->handle, &one, c->out_desc, diff_dst, &beta,
                                           c->bias_desc, db));
    return 0;
}

/* ---- raw bf16 convolutions (conv_bf16.c casts around them) ------------------------------- */

/* Scaling factors stay float for bf16 data (cuDNN: float for every data type but double). */
int pf_cuconv_raw_forward(pf_cuconv *c, const uint16_t *x, const uint16_t *w, uint16_t *y,
                          char *err, size_t errlen) {
    const char *who = c->name;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY("cudnnConvolutionForward (bf16)",
              cudnnConvolutionForward(c->ctx->handle, &one, c->src_desc, x, c->w_desc, w,
                                      c->fwd_conv, c->fwd_algo, c->ctx->workspace, c->fwd_ws,
                                      &zero, c->dst_desc, y));
    return 0;
}

int pf_cuconv_raw_backward_data(pf_cuconv *c, const uint16_t *w, const uint16_t *dy,
                                uint16_t *dx, char *err, size_t errlen) {
    const char *who = c->name;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY("cudnnConvolutionBackwardData (bf16)",
              cudnnConvolutionBackwardData(c->ctx->handle, &one, c->w_desc, w, c->dst_desc, dy,
                                           c->bwdd_conv, c->bwdd_algo, c->ctx->workspace,
                                           c->bwdd_ws, &zero, c->src_desc, dx));
    return 0;
}

int pf_cuconv_raw_backward_filter(pf_cuconv *c, const uint16_t *x, const uint16_t *dy,
                                  uint16_t *dw, char *err, size_t errlen) {
    const char *who = c->name;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY("cudnnConvolutionBackwardFilter (bf16)",
              cudnnConvolutionBackwardFilter(c->ctx->handle, &one, c->src_desc, x, c->dst_desc,
                                             dy, c->bwdf_conv, c->bwdf_algo, c->ctx->workspace,
                                             c->bwdf_ws, &zero, c->w_desc, dw));
    return 0;
}

void pf_cuconv_describe(const pf_cuconv *c, char *buf, size_t buflen) {
    if (!c->n) {
        snprintf(buf, buflen, "not built");
        return;
    }
    if (c->training)
        snprintf(buf, buflen, "%sfwd algo %d (ws %zu B) bwd-data algo %d (ws %zu B) "
                 "bwd-filter algo %d (ws %zu B)", c->bf16 ? "bf16 " : "", (int)c->fwd_algo,
                 c->fwd_ws, (int)c->bwdd_algo, c->bwdd_ws, (int)c->bwdf_algo, c->bwdf_ws);
    else
        snprintf(buf, buflen, "%sfwd algo %d (ws %zu B)", c->bf16 ? "bf16 " : "",
                 (int)c->fwd_algo, c->fwd_ws);
}
