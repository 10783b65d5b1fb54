/*  device_none — worker/device.h in a build without the CUDA backend. */
#include <stdio.h>

#include "worker/device.h"

static const char *no_cuda = "this build has no CUDA backend (nvcc and cuDNN were not found "
                             "when it was configured); use --device cpu";

void pf_gpu_build_info(char *backend, size_t blen, char *collective, size_t clen) {
#ifdef PIXFLOW_HAVE_CUDA
    /* nn/cuda was built, but without NCCL the worker has no GPU path */
    snprintf(backend, blen, "cuda ops compiled (nn/cuda, gpu_check), GPU workers not built: "
                            "NCCL was not found when the build was configured");
#else
    snprintf(backend, blen, "cuda not built (nvcc, cuDNN or cuBLAS were not found when the "
                            "build was configured)");
#endif
    snprintf(collective, clen, "nccl not built");
}

int pf_gpu_count(void) {
    return 0;
}

int64_t pf_gpu_mem_used(pf_gpu *g) {
    (void)g;
    return -1;
}

pf_gpu *pf_gpu_new(const pf_config *cfg, int device, char *err, size_t errlen) {
    (void)cfg;
    (void)device;
    snprintf(err, errlen, "%s", no_cuda);
    return NULL;
}

void pf_gpu_destroy(pf_gpu **g) {
    *g = NULL;
}

int pf_gpu_upload(pf_gpu *g, const float *params, const pf_optim *optim, char *err,
                  size_t errlen) {
    (void)g, (void)params, (void)optim;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

int pf_gpu_download(pf_gpu *g, float *params, pf_optim *optim, char *err, size_t errlen) {
    (void)g, (void)params, (void)optim;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

int pf_gpu_set_params(pf_gpu *g, const float *params, char *err, size_t errlen) {
    (void)g, (void)params;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

pf_infer_net pf_gpu_infer_net(pf_gpu *g, int input_multiple) {
    (void)g, (void)input_multiple;
    return (pf_infer_net){ 0 };
}

int pf_gpu_join_group(pf_gpu *g, int rank, int world, pf_kv_set_fn set, pf_kv_get_fn get,
                      void *kv_ctx, double timeout_s, char *err, size_t errlen) {
    (void)g, (void)rank, (void)world, (void)set, (void)get, (void)kv_ctx, (void)timeout_s;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

int pf_gpu_broadcast_state(pf_gpu *g, char *err, size_t errlen) {
    (void)g;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

int pf_gpu_train_step(pf_gpu *g, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                      int lq_w, float *loss, int *stop, char *err, size_t errlen) {
    (void)g, (void)lq, (void)gt, (void)n, (void)lq_h, (void)lq_w, (void)loss, (void)stop;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}

int pf_gpu_optim_step(pf_gpu *g, float learning_rate, float clip_max_norm, char *err,
                      size_t errlen) {
    (void)g, (void)learning_rate, (void)clip_max_norm;
    snprintf(err, errlen, "%s", no_cuda);
    return -1;
}
