/*  device_cuda — worker/device.h on the CUDA backend (nn/cuda/model_cuda.c, the device
    optimiser nn/cuda/optim_cuda.c, NCCL). */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "nn/cuda/collective_nccl.h"
#include "nn/cuda/model_cuda.h"
#include "nn/cuda/optim_cuda.h"
#include "worker/device.h"

struct pf_gpu {
    pf_cuda_model *model;
    pf_cuda_optim optim;                /* made from the host optimiser at the first upload */
    int have_optim;
    pf_nccl *group;                     /* NULL when training alone */
    float *vote;                        /* device [loss, stop] for the per-step agreement */
    int device;
};

/* "M.m.p" of a version code M * 10000 + m * 100 + p (cuDNN 9, NCCL >= 2.9). */
static void version_code(char *buf, size_t len, long long code) {
    snprintf(buf, len, "%lld.%lld.%lld", code / 10000, code / 100 % 100, code % 100);
}

void pf_gpu_build_info(char *backend, size_t blen, char *collective, size_t clen) {
    int rt = 0, nccl = 0;
    char cudnn[32], nccl_v[32];
    cudaRuntimeGetVersion(&rt);                  /* the library's own versions: no device */
    version_code(cudnn, sizeof cudnn, (long long)cudnnGetVersion());
    ncclGetVersion(&nccl);
    version_code(nccl_v, sizeof nccl_v, nccl);
    snprintf(backend, blen, "cuda %s (CUDA runtime %d.%d, cuDNN %s, cuBLAS)", PF_CUDA_STATUS,
             rt / 1000, rt % 1000 / 10, cudnn);
    snprintf(collective, clen, "nccl %s (GPU workers; %s)", nccl_v, PF_CUDA_STATUS);
}

int pf_gpu_count(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

int64_t pf_gpu_mem_used(pf_gpu *g) {
    size_t free_b = 0, total = 0;
    if (!g || cudaSetDevice(g->device) != cudaSuccess ||
        cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return -1;
    return (int64_t)(total - free_b);
}

pf_gpu *pf_gpu_new(const pf_config *cfg, int device, char *err, size_t errlen) {
    pf_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->device = device;
    g->model = pf_cuda_model_new(cfg, device, 0, err, errlen);
    /* train_cfg.precision / test_cfg.precision bf16: cuDNN bf16 convolutions with fp32
       accumulation and fp32 master weights (nn/cuda/conv_bf16.c), refused below compute
       capability 8.0 naming the key */
    if (!g->model ||
        ((cfg->train_precision || cfg->test_precision) &&
         pf_cuda_model_set_precision(g->model, cfg->train_precision, cfg->test_precision,
                                     cfg->train_precision ? "train_cfg.precision"
                                                          : "test_cfg.precision",
                                     err, errlen) != 0)) {
        pf_gpu_destroy(&g);
        return NULL;
    }
    cudaError_t e = cudaMalloc((void **)&g->vote, 2 * sizeof(float));
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda:%d: cudaMalloc (vote): %s", device, cudaGetErrorString(e));
        pf_gpu_destroy(&g);
        return NULL;
    }
    return g;
}

void pf_gpu_destroy(pf_gpu **g) {
    if (!*g) return;
    pf_nccl_destroy(&(*g)->group);
    if ((*g)->vote) cudaFree((*g)->vote);
    if ((*g)->have_optim) pf_cuda_optim_free(&(*g)->optim);
    pf_cuda_model_destroy(&(*g)->model);
    free(*g);
    *g = NULL;
}

int pf_gpu_upload(pf_gpu *g, const float *params, const pf_optim *optim, char *err,
                  size_t errlen) {
    /* the device optimiser runs over optim->n floats of the model's buffers */
    if (optim->n != pf_cuda_model_num_params(g->model)) {
        snprintf(err, errlen, "cuda:%d: optimiser over %zu parameters, model has %zu",
                 g->device, optim->n, pf_cuda_model_num_params(g->model));
        return -1;
    }
    if (pf_cuda_model_set_params(g->model, params, err, errlen) != 0) return -1;
    if (g->have_optim) return pf_cuda_optim_upload(&g->optim, optim, err, errlen);
    if (pf_cuda_optim_init(&g->optim, optim, pf_cuda_model_stream(g->model), err, errlen) != 0)
        return -1;
    g->have_optim = 1;
    return 0;
}

int pf_gpu_download(pf_gpu *g, float *params, pf_optim *optim, char *err, size_t errlen) {
    if (pf_cuda_model_get_params(g->model, params, err, errlen) != 0) return -1;
    if (!g->have_optim) {
        snprintf(err, errlen, "cuda:%d: no optimiser state on the device yet", g->device);
        return -1;
    }
    return pf_cuda_optim_download(&g->optim, optim, err, errlen);
}

int pf_gpu_set_params(pf_gpu *g, const float *params, char *err, size_t errlen) {
    return pf_cuda_model_set_params(g->model, params, err, errlen);
}

static int gpu_run(void *ctx, const void *lq, size_t es, int h, int w, float *out, char *err,
                   size_t errlen) {
    pf_gpu *g = ctx;
    if (es != 1) {
        snprintf(err, errlen, "cuda:%d: float input (a 16-bit image) runs on the CPU only for "
                 "now (--device cpu)", g->device);
        return -1;
    }
    return pf_cuda_model_infer(g->model, lq, h, w, out, err, errlen);
}

pf_infer_net pf_gpu_infer_net(pf_gpu *g, int input_multiple) {
    return (pf_infer_net){ .scale = pf_cuda_model_scale(g->model),
                           .input_multiple = input_multiple, .run = gpu_run, .ctx = g };
}

int pf_gpu_join_group(pf_gpu *g, int rank, int world, pf_kv_set_fn set, pf_kv_get_fn get,
                      void *kv_ctx, double timeout_s, char *err, size_t errlen) {
    g->group = pf_nccl_new(rank, world, g->device, "nccl", set, get, kv_ctx, timeout_s, err,
                           errlen);
    return g->group ? 0 : -1;
}

int pf_gpu_broadcast_state(pf_gpu *g, char *err, size_t errlen) {
    if (!g->group) return 0;
    if (!g->have_optim) {
        snprintf(err, errlen, "cuda:%d: broadcast before the optimiser state was uploaded",
                 g->device);
        return -1;
    }
    /* Rank 0's parameters and every optimiser state buffer, device to device. Every rank
       holds the same step count already (same checkpoint or a fresh start). */
    size_t n = pf_cuda_model_num_params(g->model);
    cudaStream_t s = pf_cuda_model_stream(g->model);
    float *bufs[4];
    pf_cuda_optim_buffers(&g->optim, bufs);
    if (pf_nccl_broadcast(g->group, pf_cuda_model_params_device(g->model), n, 0, s, err,
                          errlen) != 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (bufs[i] && pf_nccl_broadcast(g->group, bufs[i], n, 0, s, err, errlen) != 0)
            return -1;
    cudaError_t e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda:%d: state broadcast: %s", g->device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

int pf_gpu_train_step(pf_gpu *g, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                      int lq_w, float *loss, int *stop, char *err, size_t errlen) {
    if (pf_cuda_model_train_step(g->model, lq, gt, n, lq_h, lq_w, loss, err, errlen) != 0)
        return -1;
    if (!g->group) return 0;
    cudaStream_t s = pf_cuda_model_stream(g->model);
    size_t np = pf_cuda_model_num_params(g->model);
    if (pf_nccl_allreduce_mean(g->group, pf_cuda_model_grads_device(g->model), np, s, err,
                               errlen) != 0)
        return -1;
    float vote[2] = { *loss, *stop ? 1.0f : 0.0f };
    cudaError_t e = cudaMemcpyAsync(g->vote, vote, sizeof vote, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess && pf_nccl_allreduce_mean(g->group, g->vote, 2, s, err, errlen) != 0)
        return -1;
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(vote, g->vote, sizeof vote, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda:%d: step vote copy: %s", g->device, cudaGetErrorString(e));
        return -1;
    }
    *loss = vote[0];
    *stop = vote[1] > 0;
    return 0;
}

int pf_gpu_optim_step(pf_gpu *g, float learning_rate, float clip_max_norm, char *err,
                      size_t errlen) {
    if (!g->have_optim) {
        snprintf(err, errlen, "cuda:%d: optimiser step before the state was uploaded",
                 g->device);
        return -1;
    }
    cudaError_t e = cudaSetDevice(g->device);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda:%d: cudaSetDevice: %s", g->device, cudaGetErrorString(e));
        return -1;
    }
    float *params = pf_cuda_model_params_device(g->model);
    float *grads = pf_cuda_model_grads_device(g->model);
    if (clip_max_norm > 0 && pf_cuda_optim_clip(&g->optim, grads, clip_max_norm, err, errlen))
        return -1;
    return pf_cuda_optim_step(&g->optim, params, grads, learning_rate, err, errlen);
}
