/*  test_bn_linear_cuda_host — the CUDA executor (nn/cuda/graph_cuda.c) on a network with
    BatchNorm2d (PF_G_BATCHNORM) and Linear (PF_G_LINEAR) layers, against the CPU executor
    (nn/graph.h) on the same description, weights and batches: two MSE training steps on
    different batches (loss, every parameter gradient, the running statistics after each step
    and num_batches_tracked), then inference (eval mode: BatchNorm2d from the running
    statistics), all within 1e-4 of the largest magnitude of each tensor.

    The network holds VGGStyleDiscriminator's pattern (BasicSR archs/discriminator_arch.py:
    conv k4 s2 p1 without bias, BatchNorm2d, LeakyReLU(0.2), flatten, Linear) inside an image
    network, so the executor's MSE training step runs it: feat = lrelu(conv3x3(x)); z =
    lrelu(bn(conv4x4/2(feat))); s = sigmoid(linear(z.view(N, -1))) (8 features); out =
    conv3x3(feat * s[n][c]) (3 channels). The Linear's input gradient flows back through the
    LeakyReLU node, BatchNorm2d and the strided convolution into feat, where the channel
    multiply's gradient adds to it. BatchNorm2d's weight and bias are drawn away from torch's
    1 / 0 start, so their gradients are not degenerate.

    Built twice as the other tests of this folder: with host_ops.c's naive stand-ins (the
    executor's bookkeeping: plans, bn_save, running / tracked, gradient accumulation) and with
    the real kernels of nn/cuda/ops.cu under tests/cuda_emu (test_bn_linear_cuda_host.emu).
    cuBLAS (the Linear's SGEMMs) and cuDNN are the naive host stand-ins in both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cpu/dnnl_ctx.h"
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/graph.h"
#include "nn/net.h"
#include "tests/cuda_host/cpu_step.h"
#include "tests/pf_test.h"

#define TOL 1e-4    /* max |cuda - cpu| / max |cpu| per tensor (fp32 against fp32) */
#define FEAT 8

/* Conv `name` (oc channels, k x k, stride, torch's padding k / 2 - (stride > 1), bias unless
   strided), LeakyReLU(0.2) fused when act. */
static int conv(pf_net *g, int x, const char *name, int oc, int k, int stride, int act) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    pf_param_init ui = { PF_INIT_UNIFORM, (double)t.c * k * k, 1.0 };
    int ci = pf_net_add_conv_strided(g, name, t.c, oc, k, stride, stride > 1 ? 1 : k / 2,
                                     stride == 1, ui, ui);
    if (ci < 0) return -1;
    g->conv[ci].act = act;
    g->conv[ci].alpha = act ? 0.2f : 0.0f;
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div * stride, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

/* The network above for an LQ of h x w (even: the Linear's in_features FEAT h w / 4). */
static void build(pf_net *g, int h, int w) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "bn_linear_net");
    g->scale = 1;
    g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    int f = conv(g, g->input, "feat", FEAT, 3, 1, 1);
    int z = pf_net_add_batchnorm(g, "bn", conv(g, f, "down", FEAT, 4, 2, 0));
    z = z < 0 ? -1 : pf_net_node(g, PF_G_RELU, &z, 1, FEAT, 1, 2, 0);
    if (z >= 0) g->node[g->n_node - 1].alpha = 0.2f;
    int s = pf_net_add_linear(g, "linear", z, FEAT * (h / 2) * (w / 2), FEAT);
    s = s < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &s, 1, FEAT, 1, 1, 1);
    int in[2] = { f, s };
    int y = f < 0 || s < 0 ? -1 : pf_net_node(g, PF_G_MUL_CH, in, 2, FEAT, 1, 1, 0);
    if (y >= 0) g->node[g->n_node - 1].scale = 1.0f;
    g->output = conv(g, y, "last", 3, 3, 1, 0);
}

static uint64_t rng = 2024;
static unsigned next(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33);
}

/* The CPU executor's run (cpu_step.h) of the network for h x w. 0, or -1. */
static int cpu_run(const float *params, float *grads, float *running, int64_t *tracked,
                   const uint8_t *lq, const uint8_t *gt, int n, int h, int w, int training,
                   double *loss, float *out) {
    pf_net g;
    build(&g, h, w);
    int rc = pf_test_cpu_run(&g, params, grads, running, tracked, lq, gt, n, h, w, training,
                             loss, out);
    pf_net_free(&g);
    return rc;
}

/* max |a - b| / max |b| over count floats (a NaN in a counts as infinite). */
static double rel_diff(const float *a, const float *b, size_t count, double *scale) {
    double diff = 0;
    *scale = 0;
    for (size_t j = 0; j < count; j++) {
        double d = fabs((double)a[j] - b[j]);
        if (!(d <= diff)) diff = isnan(d) ? INFINITY : d;
        *scale = fmax(*scale, fabs(b[j]));
    }
    return *scale > 0 ? diff / *scale : diff;
}

static void check(int n, int h, int w) {
    char label[96], err[512] = "";
    snprintf(label, sizeof label, "bn_linear_net N %d %dx%d", n, h, w);
    pf_net g;
    build(&g, h, w);
    CHECK(g.output >= 0 && g.n_bn == 1 && g.n_running == 2 * FEAT, "%s: description", label);
    size_t np = g.n_params, count = (size_t)n * h * w * 3, nr = g.n_running;
    float *params = calloc(np, sizeof *params), *grads = calloc(np, sizeof *grads);
    float *dgrads = calloc(np, sizeof *dgrads), *out = calloc(count, sizeof *out);
    float *pred = calloc(count, sizeof *pred), *run = calloc(nr, sizeof *run);
    float *drun = calloc(nr, sizeof *drun);
    int64_t tracked = 0, dtracked = 0;
    uint8_t *in = malloc(4 * count);    /* step 1's lq, gt, step 2's lq, gt */
    pf_net_init_params(&g, params, 11);
    for (int i = 0; i < g.n_tensors; i++)   /* BatchNorm2d's affine away from 1 / 0 */
        if (!strncmp(g.tensors[i].name, "bn.", 3))
            for (size_t j = 0; j < g.tensors[i].numel; j++)
                params[g.tensors[i].offset + j] =
                    (strstr(g.tensors[i].name, "weight") ? 0.6f : -0.3f) +
                    (float)(next() >> 8) / (float)(1u << 24);
    for (size_t i = 0; i < 4 * count; i++) in[i] = (uint8_t)(next() >> 24);
    pf_net_bn_init(&g, run, &tracked);
    pf_net_bn_init(&g, drun, &dtracked);
    pf_cugraph_env env;
    pf_cugraph *cg = pf_test_cugraph(&g, &env, params, np, drun, nr, &dtracked, label);
    if (!cg) goto done;
    int rc = 0;
    for (int step = 0; !rc && step < 2; step++) {
        const uint8_t *lq = in + 2 * step * count;
        double loss_cpu = 0;
        if ((rc = cpu_run(params, grads, run, &tracked, lq, lq + count, n, h, w, 1, &loss_cpu,
                          out)))
            break;
        rc = pf_cugraph_train_step(cg, &env, lq, n, h, w, err, sizeof err);
        CHECK(rc == 0, "%s: train step %d: %s", label, step + 1, err);
        if (rc) break;
        float loss_dev = 0;
        cudaStreamSynchronize(0);
        cudaMemcpy(dgrads, env.grads, np * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(drun, env.running, nr * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(&loss_dev, env.loss, 4, cudaMemcpyDeviceToHost);
        CHECK(fabs(loss_dev - loss_cpu) <= 1e-5 * loss_cpu, "%s: step %d loss %.8g, CPU %.8g",
              label, step + 1, loss_dev, loss_cpu);
        for (int i = 0; i < pf_cugraph_num_tensors(cg); i++) {
            const pf_param_info *t = pf_cugraph_tensor_info(cg, i);
            double scale, r = rel_diff(dgrads + t->offset, grads + t->offset, t->numel, &scale);
            CHECK(scale > 0 && r <= TOL, "%s: step %d %s gradient: max diff / max %.3g of "
                  "max %.3g", label, step + 1, t->name, r, scale);
            printf("%s: step %d %-12s gradient max |cuda - cpu| / max |cpu| = %.2g\n", label,
                   step + 1, t->name, r);
        }
        for (int part = 0; part < 2; part++) {  /* running_mean, running_var */
            double scale, r = rel_diff(drun + part * FEAT, run + part * FEAT, FEAT, &scale);
            CHECK(r <= TOL, "%s: step %d running_%s max diff / max %.3g", label, step + 1,
                  part ? "var" : "mean", r);
            printf("%s: step %d running_%s max |cuda - cpu| / max |cpu| = %.2g\n", label,
                   step + 1, part ? "var" : "mean", r);
        }
        /* not the start: a step moved them (mean from 0, var from 1) */
        CHECK(fabs(run[0]) > 1e-6 && fabs(run[FEAT] - 1.0f) > 1e-6, "%s: running unchanged",
              label);
        CHECK(dtracked == step + 1 && tracked == step + 1, "%s: num_batches_tracked %lld "
              "(CPU %lld), want %d", label, (long long)dtracked, (long long)tracked, step + 1);
        printf("%s: step %d loss %.8g (CPU %.8g)\n", label, step + 1, loss_dev, loss_cpu);
    }
    /* eval mode: inference of step 2's sample 0 with the running statistics */
    double unused;
    const float *d_pred = NULL;
    if (!rc) rc = cpu_run(params, NULL, run, &tracked, in + 2 * count, NULL, 1, h, w, 0,
                          &unused, out);
    if (!rc) {
        rc = pf_cugraph_infer(cg, &env, in + 2 * count, h, w, &d_pred, err, sizeof err);
        CHECK(rc == 0, "%s: infer: %s", label, err);
    }
    if (!rc) {
        cudaMemcpy(pred, d_pred, count / n * 4, cudaMemcpyDeviceToHost);
        double scale, r = rel_diff(pred, out, count / n, &scale);
        CHECK(r <= TOL, "%s: inference (eval): max diff / max %.3g of max %.3g", label, r,
              scale);
        CHECK(dtracked == 2, "%s: inference counted a batch", label);
        printf("%s: inference (eval) max |cuda - cpu| / max |cpu| = %.2g\n", label, r);
    }
    pf_test_cugraph_free(&cg, &env);
done:
    pf_net_free(&g);
    free(params), free(grads), free(dgrads), free(in), free(out), free(pred), free(run);
    free(drun);
}

/* A BatchNorm2d network without running statistics is refused, naming the layer. */
static void check_no_running(void) {
    pf_net g;
    build(&g, 4, 4);
    char err[512] = "";
    pf_cugraph_env env;
    size_t np = g.n_params;
    float *params = calloc(np, sizeof *params);
    pf_cugraph *cg = pf_test_cugraph(&g, &env, params, np, NULL, 0, NULL, "no-running net");
    free(params);
    if (!cg) return;
    uint8_t in[2 * 2 * 4 * 4 * 3] = { 0 };  /* lq and gt of a 2 x 4 x 4 batch */
    int rc = pf_cugraph_train_step(cg, &env, in, 2, 4, 4, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "bn.weight") && strstr(err, "running"),
          "no running statistics: rc %d, err '%s'", rc, err);
    pf_test_cugraph_free(&cg, &env);
    pf_net_free(&g);
}

int main(void) {
    check(3, 8, 8);
    check(2, 6, 10);
    check_no_running();
    return pf_test_end("test_bn_linear_cuda_host");
}
