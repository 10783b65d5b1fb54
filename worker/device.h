/*  device — the worker's GPU, behind a C API that exists in every build.

    With the CUDA backend built (nvcc found), a worker started with `--device cuda:N` keeps its
    CPU model for parameter names, loading and checkpoint serialisation, and trains on an
    nn/cuda model with the device optimiser (nn/cuda/optim_cuda.h: every optimiser, paramwise
    multipliers, EMA and clipping of nn/optim.h): parameters and optimiser state are uploaded
    after loading, gradients are averaged across ranks with NCCL on the model's stream, and the
    state comes back to the host only to be checkpointed. Without the CUDA backend every function reports that clearly.
    Status: compiles; unverified on hardware until a session with a GPU runs it.
*/
#ifndef PF_DEVICE_H
#define PF_DEVICE_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "nn/collective.h"
#include "nn/infer.h"
#include "nn/optim.h"

typedef struct pf_gpu pf_gpu;

/* How far the GPU path is known to work; `pixflow --version` says it. Keep it equal to the
   Status of docs/cuda.md: "verified" only once bench/gpu/run.sh has passed on a GPU. */
#define PF_CUDA_STATUS "compiled, not verified on hardware"

/* What this build has for GPUs, for `pixflow --version`: `backend` gets the CUDA backend
   ("not built (...)", or PF_CUDA_STATUS with the CUDA runtime and cuDNN versions of the
   libraries loaded), `collective` the GPU collective ("nccl 2.28.9 (...)" or "nccl not
   built"). Needs no GPU and starts no CUDA context. */
void pf_gpu_build_info(char *backend, size_t blen, char *collective, size_t clen);

/* CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies); 0 without the CUDA
   backend or a driver. */
int pf_gpu_count(void);

/* Device memory in use on g's device (total - free, as cudaMemGetInfo reports it: every
   process's allocations on that GPU), bytes; -1 when unknown or without the CUDA backend. */
int64_t pf_gpu_mem_used(pf_gpu *g);

/* A GPU model for cfg on device `device` (TF32 allowed unless train precision says fp32 — for
   now always strict FP32). Returns NULL with err. */
pf_gpu *pf_gpu_new(const pf_config *cfg, int device, char *err, size_t errlen);
void pf_gpu_destroy(pf_gpu **g);

/* Host <-> device copies of the flat parameters and the optimiser's state (step, exp_avg,
   exp_avg_sq, momentum_buffer, ema: the CPU model's and pf_optim's layouts). The first upload
   makes the device optimiser from `optim` (kind, settings, paramwise groups, EMA decay); later
   ones must pass an optimiser of the same kind and size. Return 0 or -1 with err. */
int pf_gpu_upload(pf_gpu *g, const float *params, const pf_optim *optim, char *err,
                  size_t errlen);
int pf_gpu_download(pf_gpu *g, float *params, pf_optim *optim, char *err, size_t errlen);

/* Inference on the GPU (`pixflow upscale --device cuda:N`): pf_gpu_set_params uploads the
   flat parameters (the CPU model's layout; no optimiser), then pf_gpu_infer_net is g as a
   pf_infer_net (nn/infer.h) for pf_infer_on's tiling and ensemble: uint8 images through
   pf_cuda_model_infer; float (16-bit) input is refused with a message (CPU only for now).
   input_multiple: pf_model_input_multiple of the same config. Return 0 or -1 with err. */
int pf_gpu_set_params(pf_gpu *g, const float *params, char *err, size_t errlen);
pf_infer_net pf_gpu_infer_net(pf_gpu *g, int input_multiple);

/* Data parallel: join the NCCL group (id through the key/value store), then take rank 0's
   parameters and optimiser state. Return 0 or -1 with err. */
int pf_gpu_join_group(pf_gpu *g, int rank, int world, pf_kv_set_fn set, pf_kv_get_fn get,
                      void *kv_ctx, double timeout_s, char *err, size_t errlen);
int pf_gpu_broadcast_state(pf_gpu *g, char *err, size_t errlen);

/* One training step on the batch (uint8 NHWC on the host): forward, loss, backward; in a
   group the gradients are averaged across ranks, the loss too, and *stop (in: this rank's
   vote, out: 1 if any rank voted) is agreed. Then no optimiser step: call pf_gpu_optim_step. */
int pf_gpu_train_step(pf_gpu *g, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                      int lq_w, float *loss, int *stop, char *err, size_t errlen);
/* MMCV's OptimizerHook on the device: clip the gradients by their global norm when
   clip_max_norm > 0 (optimizer_config.grad_clip), then the optimiser step with the EMA
   (pf_optim_step's semantics). Queued on the model's stream. Returns 0 or -1 with err. */
int pf_gpu_optim_step(pf_gpu *g, float learning_rate, float clip_max_norm, char *err,
                      size_t errlen);
#endif
