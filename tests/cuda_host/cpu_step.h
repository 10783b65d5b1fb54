/*  cpu_step — what the CUDA executor tests of this folder (test_dcn_cuda_host,
    test_bn_linear_cuda_host) share: the CPU executor's (nn/graph.h) run of a description as
    the reference, the CUDA executor with an MSE loss and its env, a device buffer filled from
    the host. */
#ifndef PF_TEST_CPU_STEP_H
#define PF_TEST_CPU_STEP_H
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "common/config.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/graph.h"
#include "nn/net.h"
#include "tests/cuda_host/dev_buf.h"
#include "tests/pf_test.h"

/* The CPU executor's run of description g (plain NCHW layouts forced) on lq (n x h x w x 3
   uint8 NHWC, 3-channel output at scale 1): training = 1, one MSE step against gt (same
   shape): *loss, the gradients into grads (overwritten), running / tracked (BatchNorm2d's,
   NULL without) updated; training = 0, inference (running read; grads, gt, loss unused). The
   output, N x 3 x h x w floats NCHW, into out. 0, or -1 (reported with CHECK). */
static inline int pf_test_cpu_run(const pf_net *g, const float *params, float *grads,
                                  float *running, int64_t *tracked, const uint8_t *lq,
                                  const uint8_t *gt, int n, int h, int w, int training,
                                  double *loss, float *out) {
    char err[512];
    pf_dnnl dnnl = { 0 };
    pf_gstate *S = NULL;
    pf_conv *convs = calloc((size_t)g->n_convs + 1, sizeof *convs);
    size_t count = (size_t)n * 3 * h * w;
    float *dout = malloc(count * sizeof *dout);
    int rc = !convs || !dout || pf_dnnl_init(&dnnl, err, sizeof err);
    dnnl.force_layout = PF_LAYOUT_NCHW;
    for (int i = 0; !rc && i < g->n_convs; i++) pf_graph_conv_init(g, i, &convs[i]);
    pf_gctx x = { .net = g, .dnnl = &dnnl, .convs = convs, .params = params, .grads = grads,
                  .running = running, .tracked = tracked };
    rc = rc || pf_graph_plan(&x, &S, n, h, w, training, err, sizeof err);
    for (int i = 0; !rc && i < g->n_convs; i++) {
        int bi = pf_net_conv_bias(g, i);
        rc = pf_conv_set_weights(&convs[i], params + g->tensors[g->conv[i].weight].offset,
                                 bi < 0 ? NULL : params + g->tensors[bi].offset, err,
                                 sizeof err);
    }
    rc = rc || pf_graph_forward(&x, S, lq, err, sizeof err);
    if (!rc) {
        int b;
        const float *y = pf_gstate_out(S, &b);      /* NCHW: forced layout */
        size_t hw = (size_t)h * w;
        double sum = 0;
        for (size_t i = 0; i < count; i++) {
            out[i] = y[i];
            if (!training) continue;
            size_t px = i / (3 * hw) * hw + i % hw;   /* gt is NHWC */
            double d = (double)y[i] - gt[px * 3 + i / hw % 3] / 255.0;
            sum += d * d;
            dout[i] = (float)(2.0 * d / (double)count);
        }
        if (training) {
            *loss = sum / (double)count;
            rc = pf_graph_backward_from(&x, S, dout, NULL, NULL, err, sizeof err);
        }
    }
    CHECK(!rc, "cpu %s: %s", training ? "training step" : "inference", err);
    pf_gstate_free(&S);
    for (int i = 0; convs && i < g->n_convs; i++) pf_conv_free(&convs[i]);
    free(convs);
    free(dout);
    pf_dnnl_free(&dnnl);
    return rc ? -1 : 0;
}

/* The CUDA executor of description *g (taken over: pf_cugraph_new_net) with MSELoss, and an
   env on the legacy stream: params uploaded (np floats), gradients, loss and its scratch
   NaN-filled, running uploaded (nr floats; NULL: env.running NULL), tracked as given. NULL
   (reported with CHECK, naming label) on failure. */
static inline pf_cugraph *pf_test_cugraph(pf_net *g, pf_cugraph_env *env, const float *params,
                                          size_t np, const float *running, size_t nr,
                                          int64_t *tracked, const char *label);
/* Frees what pf_test_cugraph made (the env's buffers, cuDNN, the executor). */
static inline void pf_test_cugraph_free(pf_cugraph **cg, pf_cugraph_env *env) {
    cudaStreamSynchronize(0);
    cudaFree(env->params), cudaFree(env->grads), cudaFree(env->loss);
    cudaFree(env->loss_scratch), cudaFree(env->running);
    pf_cudnn_destroy(&env->cudnn);
    pf_cugraph_destroy(cg);
}

static inline pf_cugraph *pf_test_cugraph(pf_net *g, pf_cugraph_env *env, const float *params,
                                          size_t np, const float *running, size_t nr,
                                          int64_t *tracked, const char *label) {
    char err[512] = "";
    pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.loss_type, sizeof cfg.loss_type, "MSELoss");
    cfg.loss_weight = 1.0f;
    pf_cugraph *cg = pf_cugraph_new_net(&cfg, g, err, sizeof err);
    CHECK(cg != NULL, "%s: %s", label, err);
    if (!cg) return NULL;
    *env = (pf_cugraph_env){ .stream = 0,
                             .cudnn = pf_cudnn_new(0, 0, 0, 0, err, sizeof err),
                             .params = pf_dev_buf(params, np * 4),
                             .grads = pf_dev_buf(NULL, np * 4),
                             .loss = pf_dev_buf(NULL, 4),
                             .loss_scratch = pf_dev_buf(NULL, PF_CUDA_LOSS_SCRATCH * 8),
                             .running = running ? pf_dev_buf(running, nr * 4) : NULL,
                             .tracked = tracked };
    return cg;
}
#endif
