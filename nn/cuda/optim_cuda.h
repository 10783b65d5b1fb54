/*  optim_cuda — nn/optim.h on one CUDA device: Adam, AdamW, SGD (momentum, dampening,
    Nesterov), weight decay, per-tensor learning-rate and weight-decay multipliers
    (paramwise_cfg), the EMA of the parameters, and gradient clipping by global norm, over the
    flat device parameter and gradient buffers of nn/cuda/model_cuda.h.

    Semantics are nn/optim.c's, group by group (torch 1.13's single-tensor updates, MMCV's
    multipliers, groups that join late as BasicVSR's SPyNet after fix_iter, BasicSR's EMA,
    clip_grad_norm_): the host keeps the settings, the groups and
    the step count; the state buffers (exp_avg, exp_avg_sq, momentum_buffer, ema) live on the
    device with the host optimiser's layout, so they move between a pf_optim and the device by
    plain copies (checkpoints, resume, broadcast). The update kernels round each operation on
    its own (no FMA contraction), as nn/optim.c compiled for x86-64 does.

    Work is queued on the stream given at init and not synchronised; the functions return 0,
    or -1 with err naming the call.
*/
#ifndef PF_OPTIM_CUDA_H
#define PF_OPTIM_CUDA_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "nn/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    pf_optim_settings s;
    size_t n;                   /* parameters */
    int64_t step;               /* steps taken */
    pf_optim_group *groups;     /* host copy; n_groups 0 = one group, multipliers 1 */
    int n_groups;
    float ema_decay;            /* 0 = no EMA */
    float *exp_avg, *exp_avg_sq, *momentum_buffer, *ema;    /* device, n floats, or NULL as
                                                               in the host optimiser */
    double *scratch;            /* device, PF_CUDA_LOSS_SCRATCH doubles (clipping) */
    float *norm;                /* device, 1 float: the last clipping's norm */
    cudaStream_t stream;
} pf_cuda_optim;

/* A device copy of `host` (settings, groups, EMA decay, step and every state buffer), on the
   current device, queued on `stream`. Returns 0 or -1 with err (out of device memory). */
int pf_cuda_optim_init(pf_cuda_optim *o, const pf_optim *host, cudaStream_t stream, char *err,
                       size_t errlen);

/* Copy host's step and state buffers to the device / the device's to host (which must have
   the same kind, size and buffers, e.g. the optimiser the device copy was made from).
   Synchronous. Returns 0 or -1 with err. */
int pf_cuda_optim_upload(pf_cuda_optim *o, const pf_optim *host, char *err, size_t errlen);
int pf_cuda_optim_download(const pf_cuda_optim *o, pf_optim *host, char *err, size_t errlen);

/* One update of params (n device floats) from grads with learning rate lr, then the EMA:
   pf_optim_step's semantics. Returns 0 or -1 with err. */
int pf_cuda_optim_step(pf_cuda_optim *o, float *params, const float *grads, float lr,
                       char *err, size_t errlen);

/* pf_clip_grad_norm on the device over grads (n floats): the L2 norm of all gradients (a
   deterministic double reduction) into o->norm, then grads *= max_norm / (norm + 1e-6) when
   that is below 1. The gradients of a group not yet in the optimisation at the coming step
   (step + 1 <= start) are zeroed first, as the CPU worker does (torch: no gradient). Nothing comes back to the host. Returns 0 or -1 with err. */
int pf_cuda_optim_clip(pf_cuda_optim *o, float *grads, float max_norm, char *err,
                       size_t errlen);

/* The device state buffers in order exp_avg, exp_avg_sq, momentum_buffer, ema (NULL where
   absent), for a broadcast. */
void pf_cuda_optim_buffers(pf_cuda_optim *o, float *bufs[4]);

/* Free the device buffers and the groups; the struct may be reused by init. */
void pf_cuda_optim_free(pf_cuda_optim *o);

#ifdef __cplusplus
}
#endif
#endif
