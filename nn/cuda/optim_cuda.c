/*  optim_cuda — the device optimiser (see optim_cuda.h): nn/optim.c's group loop on the host,
    the per-range updates as kernels (nn/cuda/ops.h). */
#include "nn/cuda/optim_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/ops.h"

static int cuda_err(const char *what, cudaError_t e, char *err, size_t errlen) {
    snprintf(err, errlen, "device optimiser: %s: %s", what, cudaGetErrorString(e));
    return -1;
}

/* The state buffers of a host optimiser and of its device copy, in one order. */
static void host_buffers(const pf_optim *h, float *b[4]) {
    b[0] = h->exp_avg, b[1] = h->exp_avg_sq, b[2] = h->momentum_buffer, b[3] = h->ema;
}

void pf_cuda_optim_buffers(pf_cuda_optim *o, float *b[4]) {
    b[0] = o->exp_avg, b[1] = o->exp_avg_sq, b[2] = o->momentum_buffer, b[3] = o->ema;
}

void pf_cuda_optim_free(pf_cuda_optim *o) {
    float *b[4];
    pf_cuda_optim_buffers(o, b);
    for (int i = 0; i < 4; i++) cudaFree(b[i]);
    cudaFree(o->scratch);
    cudaFree(o->norm);
    free(o->groups);
    memset(o, 0, sizeof *o);
}

int pf_cuda_optim_init(pf_cuda_optim *o, const pf_optim *host, cudaStream_t stream, char *err,
                       size_t errlen) {
    memset(o, 0, sizeof *o);
    o->s = host->s;
    o->n = host->n;
    o->n_groups = host->n_groups;
    o->ema_decay = host->ema ? host->ema_decay : 0.0f;
    o->stream = stream;
    if (host->n_groups) {
        o->groups = malloc((size_t)host->n_groups * sizeof *o->groups);
        if (!o->groups) {
            snprintf(err, errlen, "device optimiser: out of memory");
            return -1;
        }
        memcpy(o->groups, host->groups, (size_t)host->n_groups * sizeof *o->groups);
    }
    float *hb[4], **db[4] = { &o->exp_avg, &o->exp_avg_sq, &o->momentum_buffer, &o->ema };
    host_buffers(host, hb);
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 4 && e == cudaSuccess; i++)
        if (hb[i]) e = cudaMalloc((void **)db[i], (o->n ? o->n : 1) * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc((void **)&o->scratch, PF_CUDA_LOSS_SCRATCH * sizeof(double));
    if (e == cudaSuccess) e = cudaMalloc((void **)&o->norm, sizeof(float));
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc (state of %zu parameters)", o->n);
        cuda_err(what, e, err, errlen);
        pf_cuda_optim_free(o);
        return -1;
    }
    if (pf_cuda_optim_upload(o, host, err, errlen)) {
        pf_cuda_optim_free(o);
        return -1;
    }
    return 0;
}

/* Copy every state buffer one way or the other; synchronous. */
static int copy_state(pf_cuda_optim *o, float *const hb[4], int to_device, char *err,
                      size_t errlen) {
    float *db[4];
    pf_cuda_optim_buffers(o, db);
    for (int i = 0; i < 4; i++) {
        if (!hb[i] != !db[i]) {
            snprintf(err, errlen, "device optimiser: the host optimiser's state buffers do "
                     "not match the device's (%s)", pf_optim_kind_name(o->s.kind));
            return -1;
        }
        if (!db[i]) continue;
        cudaError_t e = cudaMemcpyAsync(to_device ? (void *)db[i] : (void *)hb[i],
                                        to_device ? (const void *)hb[i] : (const void *)db[i],
                                        o->n * sizeof(float),
                                        to_device ? cudaMemcpyHostToDevice
                                                  : cudaMemcpyDeviceToHost,
                                        o->stream);
        if (e != cudaSuccess) return cuda_err("cudaMemcpyAsync", e, err, errlen);
    }
    cudaError_t e = cudaStreamSynchronize(o->stream);
    return e == cudaSuccess ? 0 : cuda_err("cudaStreamSynchronize", e, err, errlen);
}

int pf_cuda_optim_upload(pf_cuda_optim *o, const pf_optim *host, char *err, size_t errlen) {
    if (host->n != o->n || host->s.kind != o->s.kind) {
        snprintf(err, errlen, "device optimiser: upload of a %s over %zu parameters into a %s "
                 "over %zu", pf_optim_kind_name(host->s.kind), host->n,
                 pf_optim_kind_name(o->s.kind), o->n);
        return -1;
    }
    float *hb[4];
    host_buffers(host, hb);
    if (copy_state(o, hb, 1, err, errlen)) return -1;
    o->step = host->step;
    return 0;
}

int pf_cuda_optim_download(const pf_cuda_optim *o, pf_optim *host, char *err, size_t errlen) {
    if (host->n != o->n || host->s.kind != o->s.kind) {
        snprintf(err, errlen, "device optimiser: download into a %s over %zu parameters from "
                 "a %s over %zu", pf_optim_kind_name(host->s.kind), host->n,
                 pf_optim_kind_name(o->s.kind), o->n);
        return -1;
    }
    float *hb[4];
    host_buffers(host, hb);
    if (copy_state((pf_cuda_optim *)o, hb, 0, err, errlen)) return -1;
    host->step = o->step;
    return 0;
}

int pf_cuda_optim_step(pf_cuda_optim *o, float *params, const float *grads, float lr,
                       char *err, size_t errlen) {
    o->step++;
    pf_optim_group whole = { 0, o->n, 1.0f, 1.0f, 0 };
    const pf_optim_group *gs = o->n_groups ? o->groups : &whole;
    int ng = o->n_groups ? o->n_groups : 1;
    char oe[400];
    for (int k = 0; k < ng; k++) {
        const pf_optim_group *g = &gs[k];
        if (o->step <= g->start) continue;      /* not yet in the optimisation (fix_iter) */
        /* as nn/optim.c: lr * mult in double; mult 1 keeps lr bit-identical */
        float glr = g->lr_mult == 1.0f ? lr : (float)((double)lr * g->lr_mult);
        float gwd = g->decay_mult == 1.0f ? o->s.weight_decay
                                          : (float)((double)o->s.weight_decay * g->decay_mult);
        int write = g->lr_mult != 0.0f, rc;
        int64_t step = o->step - (g->start > 0 ? g->start : 0);   /* its own count */
        size_t off = g->offset;
        if (o->s.kind == PF_OPTIM_SGD)
            rc = pf_cuda_sgd_range(params + off, grads + off,
                                   o->momentum_buffer ? o->momentum_buffer + off : NULL,
                                   g->numel, glr, o->s.momentum, o->s.dampening, o->s.nesterov,
                                   gwd, step == 1, write, o->stream, oe, sizeof oe);
        else
            rc = pf_cuda_adam_range(params + off, grads + off, o->exp_avg + off,
                                    o->exp_avg_sq + off, g->numel, glr, o->s.beta1,
                                    o->s.beta2, o->s.eps, gwd, o->s.kind == PF_OPTIM_ADAMW,
                                    write, step, o->stream, oe, sizeof oe);
        if (rc) {
            snprintf(err, errlen, "device optimiser: %s over parameters %zu..%zu: %s",
                     pf_optim_kind_name(o->s.kind), off, off + g->numel, oe);
            return -1;
        }
    }
    if (!o->ema) return 0;
    for (int k = 0; k < ng; k++) {
        /* a frozen tensor's EMA stays equal to it; a late one's waits for its first step */
        if (gs[k].lr_mult == 0.0f || o->step <= gs[k].start) continue;
        size_t off = gs[k].offset;
        if (pf_cuda_ema_update(o->ema + off, params + off, gs[k].numel, o->ema_decay,
                               o->stream, oe, sizeof oe)) {
            snprintf(err, errlen, "device optimiser: EMA: %s", oe);
            return -1;
        }
    }
    return 0;
}

int pf_cuda_optim_clip(pf_cuda_optim *o, float *grads, float max_norm, char *err,
                       size_t errlen) {
    char oe[400];
    /* a range not yet in the optimisation has no gradient in torch, so none in the norm
       (as the CPU worker): zeroed first; the step about to run is o->step + 1 */
    for (int k = 0; k < o->n_groups; k++)
        if (o->step + 1 <= o->groups[k].start) {
            cudaError_t e = cudaMemsetAsync(grads + o->groups[k].offset, 0,
                                            o->groups[k].numel * sizeof(float), o->stream);
            if (e != cudaSuccess) return cuda_err("cudaMemsetAsync (late group)", e, err, errlen);
        }
    if (pf_cuda_clip_grad_norm(grads, o->n, max_norm, o->scratch, o->norm, o->stream, oe,
                               sizeof oe)) {
        snprintf(err, errlen, "device optimiser: gradient clipping: %s", oe);
        return -1;
    }
    return 0;
}
