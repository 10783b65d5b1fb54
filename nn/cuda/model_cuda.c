/*  model_cuda — a network on one CUDA device (see model_cuda.h): the device parameter and
    gradient buffers, the stream and cuDNN context, the pinned staging of batches, and the
    public entry points; the network itself runs on the CUDA executor (nn/cuda/graph_cuda.c)
    over the same description the CPU runs (nn/net.h).
*/
#include "nn/cuda/model_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/precision.h"
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/net.h"

struct pf_cuda_model {
    pf_config cfg;              /* copy of the configuration it was built from */
    int device;                 /* CUDA device ordinal */
    int scale;
    size_t n_params;
    int n_tensors;
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
    pf_cugraph *graph;          /* the executor with its description and plans */
    float *running;             /* device: BatchNorm2d running statistics (n_running floats;
                                   NULL without BatchNorm2d) */
    int64_t *tracked;           /* host: their num_batches_tracked (n_bn) */
    size_t n_running;           /* floats of running (the description's n_running) */
    int from_net;               /* pf_cuda_model_new_net: no loss, any output */
    int prec_train, prec_infer; /* PF_PREC_FP32 / PF_PREC_BF16 of each plan's convolutions */
    int started;                /* a step, forward or inference ran: precision is fixed */
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

static int use_device(const pf_cuda_model *m, char *err, size_t errlen) {
    CUDA_TRY("cuda model", "cudaSetDevice", cudaSetDevice(m->device));
    return 0;
}

/* ---- construction ------------------------------------------------------------------------- */

/* pf_cuda_model_new (net NULL: cfg's model.type) and pf_cuda_model_new_net (net taken over,
   freed on failure too). */
static pf_cuda_model *model_new(const pf_config *cfg, pf_net *net, int device, int allow_tf32,
                                char *err, size_t errlen) {
    pf_cuda_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "cuda model: out of memory");
        if (net) pf_net_free(net);
        return NULL;
    }
    m->cfg = *cfg;
    m->from_net = net != NULL;
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
    m->graph = net ? pf_cugraph_new_net(cfg, net, err, errlen) : pf_cugraph_new(cfg, err, errlen);
    if (!m->graph) goto fail;
    m->n_tensors = pf_cugraph_num_tensors(m->graph);
    m->n_params = pf_cugraph_num_params(m->graph);
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
    const pf_net *desc = pf_cugraph_net(m->graph);
    m->n_running = desc->n_running;
    if (desc->n_bn) {    /* torch's reset_running_stats: mean 0, var 1, tracked 0 */
        float *h = malloc(m->n_running * sizeof *h);
        m->tracked = calloc((size_t)desc->n_bn, sizeof *m->tracked);
        if (!h || !m->tracked) {
            free(h);
            snprintf(err, errlen, "cuda model: out of memory");
            goto fail;
        }
        pf_net_bn_init(desc, h, m->tracked);
        e = cudaMalloc((void **)&m->running, m->n_running * sizeof(float));
        if (e != cudaSuccess) m->running = NULL;
        else e = cudaMemcpy(m->running, h, m->n_running * sizeof(float), cudaMemcpyHostToDevice);
        /* a pageable copy may return before its DMA lands; the stream is non-blocking */
        if (e == cudaSuccess) e = cudaStreamSynchronize(0);
        free(h);
        if (e != cudaSuccess) {
            cuda_fail(who, "BatchNorm2d running statistics", e, err, errlen);
            goto fail;
        }
    }
    if ((e = cudaMemsetAsync(m->params, 0, pbytes, m->stream)) != cudaSuccess ||
        (e = cudaMemsetAsync(m->grads, 0, pbytes, m->stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(m->stream)) != cudaSuccess) {
        cuda_fail(who, "cudaMemsetAsync", e, err, errlen);
        goto fail;
    }
    return m;
fail:
    if (net) pf_net_free(net);  /* not taken over yet (harmless when it was: left empty) */
    pf_cuda_model_destroy(&m);
    return NULL;
}

pf_cuda_model *pf_cuda_model_new(const pf_config *cfg, int device, int allow_tf32, char *err,
                                 size_t errlen) {
    return model_new(cfg, NULL, device, allow_tf32, err, errlen);
}

pf_cuda_model *pf_cuda_model_new_net(struct pf_net *net, int device, int allow_tf32, char *err,
                                     size_t errlen) {
    pf_config cfg;      /* the loss keys only (unused: no training step of its own) */
    pf_config_defaults(&cfg);
    snprintf(cfg.loss_type, sizeof cfg.loss_type, "MSELoss");
    cfg.scale = net->scale;
    return model_new(&cfg, net, device, allow_tf32, err, errlen);
}

void pf_cuda_model_destroy(pf_cuda_model **self) {
    pf_cuda_model *m = *self;
    if (!m) return;
    if (m->stream) {
        cudaSetDevice(m->device);
        cudaStreamSynchronize(m->stream);
    }
    pf_cugraph_destroy(&m->graph);
    pf_cudnn_destroy(&m->cudnn);
    cudaFree(m->params);
    cudaFree(m->grads);
    cudaFree(m->loss);
    cudaFree(m->loss_scratch);
    cudaFree(m->running);
    free(m->tracked);
    cudaFreeHost(m->h_loss);
    cudaFreeHost(m->h_in);
    cudaFreeHost(m->h_out);
    if (m->stream) cudaStreamDestroy(m->stream);
    free(m);
    *self = NULL;
}

size_t pf_cuda_model_num_params(const pf_cuda_model *m) { return m->n_params; }
int pf_cuda_model_num_tensors(const pf_cuda_model *m) { return m->n_tensors; }
const pf_param_info *pf_cuda_model_tensor_info(const pf_cuda_model *m, int i) {
    return i >= 0 && i < m->n_tensors ? pf_cugraph_tensor_info(m->graph, i) : NULL;
}
int pf_cuda_model_scale(const pf_cuda_model *m) { return m->scale; }
int pf_cuda_model_frames(const pf_cuda_model *m) { return pf_cugraph_frames(m->graph); }
int pf_cuda_model_out_frames(const pf_cuda_model *m) { return pf_cugraph_out_frames(m->graph); }
float *pf_cuda_model_params_device(pf_cuda_model *m) { return m->params; }
float *pf_cuda_model_grads_device(pf_cuda_model *m) { return m->grads; }
cudaStream_t pf_cuda_model_stream(pf_cuda_model *m) { return m->stream; }
size_t pf_cuda_model_plan_bytes(const pf_cuda_model *m, int training) {
    return pf_cugraph_plan_bytes(m->graph, training);
}

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

size_t pf_cuda_model_num_running(const pf_cuda_model *m) { return m->n_running; }
int64_t *pf_cuda_model_tracked(pf_cuda_model *m) { return m->tracked; }

int pf_cuda_model_get_running(pf_cuda_model *m, float *host_running, char *err,
                              size_t errlen) {
    if (!m->n_running) return 0;
    return copy_sync(m, "cuda model get_running", host_running, m->running,
                     m->n_running * sizeof(float), cudaMemcpyDeviceToHost, err, errlen);
}

int pf_cuda_model_set_running(pf_cuda_model *m, const float *host_running, char *err,
                              size_t errlen) {
    if (!m->n_running) return 0;
    return copy_sync(m, "cuda model set_running", m->running, host_running,
                     m->n_running * sizeof(float), cudaMemcpyHostToDevice, err, errlen);
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

/* ---- entry points ------------------------------------------------------------------------- */

/* The executor's view of the model's buffers. */
static pf_cugraph_env env_of(pf_cuda_model *m) {
    return (pf_cugraph_env){ m->stream, m->cudnn, m->params, m->grads, m->loss,
                             m->loss_scratch, m->running, m->tracked };
}

int pf_cuda_model_set_precision(pf_cuda_model *m, int train, int infer, const char *what,
                                char *err, size_t errlen) {
    if (!what || !*what) what = "precision";
    if ((train != PF_PREC_FP32 && train != PF_PREC_BF16) ||
        (infer != PF_PREC_FP32 && infer != PF_PREC_BF16)) {
        snprintf(err, errlen, "%s: unknown precision %d / %d (fp32 or bf16)", what, train,
                 infer);
        return -1;
    }
    if (m->started) {
        snprintf(err, errlen, "%s: set before the first step (the CUDA model has run)", what);
        return -1;
    }
    if (train == PF_PREC_BF16 || infer == PF_PREC_BF16) {
        int major = 0, minor = 0;
        TRY(use_device(m, err, errlen));
        CUDA_TRY(what, "cudaDeviceGetAttribute (compute capability)",
                 cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m->device));
        CUDA_TRY(what, "cudaDeviceGetAttribute (compute capability)",
                 cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, m->device));
        if (major < 8) {
            snprintf(err, errlen, "%s: bf16 needs a GPU of compute capability 8.0 or later "
                     "(Ampere); cuda:%d is %d.%d: use fp32", what, m->device, major, minor);
            return -1;
        }
    }
    m->prec_train = train;
    m->prec_infer = infer;
    return 0;
}

/* Which precision the plans set up from now on take (the layers keep what they were set up
   with; each plan has its own layers). */
static void use_precision(pf_cuda_model *m, int training) {
    m->started = 1;
    m->cudnn->bf16 = (training ? m->prec_train : m->prec_infer) == PF_PREC_BF16;
}

/* A sliding-window network's LQ size (EDVR's pyramid: levels at 1/2 and 1/4), with the CPU
   model's message (pf_net_check would name the first level it fails, "not divisible by 2").
   0, or -1 with err. */
static int check_window_size(const pf_cuda_model *m, int h, int w, char *err, size_t errlen) {
    int q = pf_cugraph_input_multiple(m->graph);
    int window = pf_cugraph_frames(m->graph) > 1 && pf_cugraph_out_frames(m->graph) == 1;
    if (!window || (h % q == 0 && w % q == 0)) return 0;
    snprintf(err, errlen, "cuda model: %s: LQ %d x %d: height and width must be multiples of "
             "%d", pf_cugraph_net(m->graph)->type, h, w, q);
    return -1;
}

int pf_cuda_model_train_step(pf_cuda_model *m, const uint8_t *lq, const uint8_t *gt, int n,
                             int lq_h, int lq_w, float *loss, char *err, size_t errlen) {
    if (m->from_net) {
        snprintf(err, errlen, "cuda model: %s: a training step of a model without a loss "
                 "(pf_cuda_model_new_net: forward_train_f32 and backward_from)",
                 pf_cugraph_net(m->graph)->type);
        return -1;
    }
    TRY(use_device(m, err, errlen));
    /* the staging buffer is rewritten below: a call that failed after queueing work may
       have left an upload from it in flight */
    CUDA_TRY("cuda model", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    if (n < 1 || lq_h < 1 || lq_w < 1) {
        snprintf(err, errlen, "cuda model: bad input shape %d x %d x %d", n, lq_h, lq_w);
        return -1;
    }
    TRY(check_window_size(m, lq_h, lq_w, err, errlen));
    /* GT: the output frames' (a sliding-window network's center frame alone) */
    size_t lq_bytes = (size_t)n * pf_cugraph_frames(m->graph) * lq_h * lq_w * 3;
    size_t gt_bytes = (size_t)n * pf_cugraph_out_frames(m->graph) * lq_h * lq_w * 3 *
                      (size_t)m->scale * (size_t)m->scale;
    TRY(grow_pinned((void **)&m->h_in, &m->h_in_bytes, lq_bytes + gt_bytes, err, errlen));
    memcpy(m->h_in, lq, lq_bytes);
    memcpy(m->h_in + lq_bytes, gt, gt_bytes);
    use_precision(m, 1);
    pf_cugraph_env env = env_of(m);
    TRY(pf_cugraph_train_step(m->graph, &env, m->h_in, n, lq_h, lq_w, err, errlen));
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
    TRY(check_window_size(m, h, w, err, errlen));
    const pf_net *net = pf_cugraph_net(m->graph);
    int c_out = net->t[net->output].c;
    if (c_out < 3 || c_out % 3) {
        snprintf(err, errlen, "cuda model: %s: inference of a %d-channel output (images: 3 a "
                 "frame)", net->type, c_out);
        return -1;
    }
    /* T LQ frames in; OT frames out: T (a recurrent network), 1 (an image, or a
       sliding-window network's center frame) */
    size_t T = (size_t)pf_cugraph_frames(m->graph), OT = (size_t)(c_out / 3);
    size_t lq_bytes = T * h * w * 3;
    int H = h * m->scale, W = w * m->scale;
    size_t hw = (size_t)H * W;
    TRY(grow_pinned((void **)&m->h_in, &m->h_in_bytes, lq_bytes, err, errlen));
    TRY(grow_pinned((void **)&m->h_out, &m->h_out_bytes, OT * hw * 3 * sizeof(float), err,
                    errlen));
    memcpy(m->h_in, lq, lq_bytes);
    const float *pred;
    use_precision(m, 0);
    pf_cugraph_env env = env_of(m);
    TRY(pf_cugraph_infer(m->graph, &env, m->h_in, h, w, &pred, err, errlen));
    CUDA_TRY("infer download", "cudaMemcpyAsync",
             cudaMemcpyAsync(m->h_out, pred, OT * hw * 3 * sizeof(float),
                             cudaMemcpyDeviceToHost, m->stream));
    CUDA_TRY("infer", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    /* CHW -> HWC per frame on the host (3 x H x W floats: cheap next to the network) */
    for (size_t t = 0; t < OT; t++)
        for (int ch = 0; ch < 3; ch++)
            for (size_t i = 0; i < hw; i++)
                out_host[(t * hw + i) * 3 + ch] = m->h_out[(t * 3 + ch) * hw + i];
    return 0;
}

/* ---- float input, taps, given gradients (pf_cugraph_forward_train_f32 and the rest) -------- */

void pf_cuda_model_set_input_grad(pf_cuda_model *m, int on) {
    pf_cugraph_set_input_grad(m->graph, on);
}

int pf_cuda_model_forward_train_f32(pf_cuda_model *m, const float *x, int n, int h, int w,
                                    char *err, size_t errlen) {
    TRY(use_device(m, err, errlen));
    use_precision(m, 1);
    pf_cugraph_env env = env_of(m);
    TRY(pf_cugraph_forward_train_f32(m->graph, &env, x, n, h, w, err, errlen));
    CUDA_TRY("forward (float input)", "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    return 0;
}

const float *pf_cuda_model_tap(const pf_cuda_model *m, int which, int dims[4]) {
    if (pf_cugraph_shape(m->graph, which, dims)) return NULL;
    return pf_cugraph_tap(m->graph, which);
}

/* A backward of the executor (fn: pf_cugraph_backward_from or _input), synchronised. */
typedef int (*backward_fn)(pf_cugraph *, const pf_cugraph_env *, const float *,
                           const float *const *, float *, char *, size_t);
static int backward_sync(pf_cuda_model *m, backward_fn fn, const char *what, const float *dout,
                         const float *const *dtaps, float *dx, char *err, size_t errlen) {
    TRY(use_device(m, err, errlen));
    pf_cugraph_env env = env_of(m);
    TRY(fn(m->graph, &env, dout, dtaps, dx, err, errlen));
    CUDA_TRY(what, "cudaStreamSynchronize", cudaStreamSynchronize(m->stream));
    return 0;
}

int pf_cuda_model_backward_from(pf_cuda_model *m, const float *dout, const float *const *dtaps,
                                float *dx, char *err, size_t errlen) {
    return backward_sync(m, pf_cugraph_backward_from, "backward_from", dout, dtaps, dx, err,
                         errlen);
}

int pf_cuda_model_backward_input(pf_cuda_model *m, const float *dout, const float *const *dtaps,
                                 float *dx, char *err, size_t errlen) {
    return backward_sync(m, pf_cugraph_backward_input, "backward_input", dout, dtaps, dx, err,
                         errlen);
}
