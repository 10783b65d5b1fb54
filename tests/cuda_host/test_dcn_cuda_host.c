/*  test_dcn_cuda_host — the CUDA executor (nn/cuda/graph_cuda.c) on a network with a modulated
    deformable convolution (PF_G_DCN), against the CPU executor (nn/graph.h) on the same
    description, weights and batch: loss and every parameter gradient of one MSE training
    step. The network is BasicSR's DCNv2Pack pattern: features from a convolution, offsets and
    a sigmoid mask from convolutions of them, the DCN, a residual add of the features (so the
    DCN's input gradient is added to one already there) and a convolution to 3 channels. The
    offset convolution's weights are scaled by 6, so that offsets reach a few pixels and
    border taps fall outside. Built twice as the other tests of this folder: with host_ops.c's
    naive stand-ins (the executor's bookkeeping: plans, the shared column buffers, gradient
    accumulation into x) and with the real kernels under tests/cuda_emu
    (test_dcn_cuda_host.emu). cuBLAS and cuDNN are the naive host stand-ins in both. No zoo
    network uses the op yet, so the description is built here and given to
    pf_cugraph_new_net. Stride 1 only: the CUDA executor refuses strided convolutions, which a
    stride-2 DCN's offsets come from (the layer's stride 2 is checked in gpu_check's dcn
    cases). The same comparison runs on a network of EDVR's TSA-fusion ops (build_tsa: mul with
    a broadcast 1-channel factor and with a residual, channel sum, 3 x 3 max and average
    pooling), within 1e-5. */
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

#define TOL 1e-4 /* max |a - b| / max |b| per tensor, as the GPU check (fp32) */
#define TOL_TSA 1e-5 /* the TSA-fusion network's (issue 42's bound for its ops) */

static int conv(pf_net *g, int x, const char *name, int oc, int act) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    pf_param_init ui = { PF_INIT_UNIFORM, (double)t.c * 9, 1.0 };
    int ci = pf_net_add_conv(g, name, t.c, oc, 3, ui, ui);
    if (ci < 0) return -1;
    g->conv[ci].act = act;
    g->conv[ci].alpha = 0.1f;
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div, t.one);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    pf_net_round(g, out, t.round);
    return out;
}

/* groups 0: EDVR's TSA-fusion ops (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3) in
   the shape of TSAFusion: feat (8, LeakyReLU), sigmoid(sum over channels of emb * emb_ref)
   broadcast over feat, its 3 x 3 max and average pooling concatenated, conv 16 -> 12, the
   attention form y * gate * 2 + add (a residual), PixelShuffle(2) back to the LQ size (LQ
   even). */
static void build_tsa(pf_net *g) {
    snprintf(g->type, sizeof g->type, "tsa_net");
    int f = conv(g, g->input, "feat", 8, 1);
    int emb = conv(g, f, "emb", 8, 0), ref = conv(g, f, "emb_ref", 8, 0);
    int c = pf_net_add_chsum(g, pf_net_add_mul(g, emb, ref, -1, 1.0f));
    c = c < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &c, 1, 1, 1, 1, 0);
    int a = pf_net_add_mul(g, f, c, -1, 1.0f);
    int p[2] = { pf_net_add_pool3(g, a, 1), pf_net_add_pool3(g, a, 0) };
    int y = p[0] < 0 || p[1] < 0 ? -1 : pf_net_node(g, PF_G_CONCAT, p, 2, 16, 1, 2, 0);
    y = conv(g, y, "half", 12, 0);
    int gate = conv(g, y, "gate", 12, 0);
    gate = gate < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &gate, 1, 12, 1, 2, 0);
    int add = conv(g, y, "att_add", 12, 0);
    y = pf_net_add_mul(g, y, gate, add, 2.0f);
    g->output = y < 0 ? -1 : pf_net_node(g, PF_G_SHUFFLE, &y, 1, 3, 1, 1, 0);
    if (g->output >= 0) g->node[g->n_node - 1].r = 2;
}

/* input -> feat (8, LeakyReLU) -> offset / sigmoid(mask) convs -> DCN (3 x 3, 8 -> 8) + feat
   -> last (3); groups 0: build_tsa's network */
static void build(pf_net *g, int groups, int dg, int bias) {
    pf_net_init(g);
    g->scale = 1;
    g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    if (!groups) {
        build_tsa(g);
        return;
    }
    snprintf(g->type, sizeof g->type, "dcn_net");
    int f = conv(g, g->input, "feat", 8, 1);
    int off = conv(g, f, "dcn_offset", 2 * dg * 9, 0);
    int m = conv(g, f, "dcn_mask", dg * 9, 0);
    m = m < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &m, 1, dg * 9, 1, 1, 0);
    int y = pf_net_add_dcn(g, "dcn", f, off, m, 8, 8, 3, 1, 1, 1, groups, dg, bias);
    int in[2] = { y, f };   /* the residual's gradient reaches feat first: DCN's x adds to it */
    y = y < 0 || f < 0 ? -1 : pf_net_node(g, PF_G_ADD, in, 2, 8, 1, 1, 0);
    g->output = conv(g, y, "last", 3, 0);
}

static uint64_t rng = 99;
static unsigned next(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33);
}

/* The CPU executor's MSE step (cpu_step.h): loss, gradients into grads, the output (NCHW)
   into out. 0, or -1. */
static int cpu_step(int groups, int dg, int bias, const float *params, float *grads,
                    const uint8_t *lq, const uint8_t *gt, int n, int h, int w, double *loss,
                    float *out) {
    pf_net g;
    build(&g, groups, dg, bias);
    int rc = pf_test_cpu_run(&g, params, grads, NULL, NULL, lq, gt, n, h, w, 1, loss, out);
    pf_net_free(&g);
    return rc;
}

static void check(int groups, int dg, int bias, int n, int h, int w) {
    char label[96], err[512] = "";
    if (groups)
        snprintf(label, sizeof label, "dcn_net groups %d deform_groups %d%s N %d %dx%d",
                 groups, dg, bias ? " bias" : "", n, h, w);
    else
        snprintf(label, sizeof label, "tsa_net N %d %dx%d", n, h, w);
    double tol = groups ? TOL : TOL_TSA;
    pf_net g;
    build(&g, groups, dg, bias);
    size_t np = g.n_params, count = (size_t)n * h * w * 3;
    float *params = calloc(np, sizeof *params), *grads = calloc(np, sizeof *grads);
    float *dgrads = calloc(np, sizeof *dgrads), *out = calloc(count, sizeof *out);
    float *pred = calloc(count, sizeof *pred);
    uint8_t *in = malloc(2 * count);
    pf_net_init_params(&g, params, 5);
    for (int i = 0; i < g.n_tensors; i++)   /* offsets of several pixels; a bias to shift */
        if (!strncmp(g.tensors[i].name, "dcn_offset.", 11))
            for (size_t j = 0; j < g.tensors[i].numel; j++) params[g.tensors[i].offset + j] *= 6;
    for (size_t i = 0; i < 2 * count; i++) in[i] = (uint8_t)(next() >> 24);
    double loss_cpu = 0;
    if (cpu_step(groups, dg, bias, params, grads, in, in + count, n, h, w, &loss_cpu, out))
        goto done;
    pf_cugraph_env env;
    pf_cugraph *cg = pf_test_cugraph(&g, &env, params, np, NULL, 0, NULL, label);
    if (!cg) goto done;
    int rc = pf_cugraph_train_step(cg, &env, in, n, h, w, err, sizeof err);
    CHECK(rc == 0, "%s: train step: %s", label, err);
    float loss_dev = 0;
    cudaStreamSynchronize(0);
    cudaMemcpy(dgrads, env.grads, np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&loss_dev, env.loss, 4, cudaMemcpyDeviceToHost);
    CHECK(fabs(loss_dev - loss_cpu) <= 1e-5 * loss_cpu, "%s: loss %.8g, CPU %.8g", label,
          loss_dev, loss_cpu);
    for (int i = 0; !rc && i < pf_cugraph_num_tensors(cg); i++) {
        const pf_param_info *t = pf_cugraph_tensor_info(cg, i);
        double diff = 0, scale = 0;
        for (size_t j = 0; j < t->numel; j++) {
            double d = fabs((double)dgrads[t->offset + j] - grads[t->offset + j]);
            if (!(d <= diff)) diff = d;
            scale = fmax(scale, fabs(grads[t->offset + j]));
        }
        CHECK(scale > 0 && diff <= tol * scale, "%s: %s gradient: max diff %.3g of max %.3g",
              label, t->name, diff, scale);
        printf("%s: %-18s max |cuda - cpu| / max |cpu| = %.2g\n", label, t->name,
               scale > 0 ? diff / scale : diff);
    }
    printf("%s: loss %.8g (CPU %.8g)\n", label, loss_dev, loss_cpu);
    const float *d_pred = NULL;     /* inference of sample 0: the plan without gradients */
    rc = pf_cugraph_infer(cg, &env, in, h, w, &d_pred, err, sizeof err);
    CHECK(rc == 0, "%s: infer: %s", label, err);
    if (!rc) {
        cudaMemcpy(pred, d_pred, count / n * 4, cudaMemcpyDeviceToHost);
        double diff = 0, scale = 0;
        for (size_t j = 0; j < count / n; j++) {
            diff = fmax(diff, fabs((double)pred[j] - out[j]));
            scale = fmax(scale, fabs(out[j]));
        }
        CHECK(diff <= tol * scale, "%s: inference: max diff %.3g of max %.3g", label, diff,
              scale);
        printf("%s: inference max |cuda - cpu| / max |cpu| = %.2g\n", label, diff / scale);
    }
    pf_test_cugraph_free(&cg, &env);
done:
    pf_net_free(&g);
    free(params), free(grads), free(dgrads), free(in), free(out), free(pred);
}

int main(void) {
    check(1, 1, 1, 2, 7, 9);
    check(2, 2, 1, 1, 8, 8);
    check(1, 4, 0, 2, 6, 7);
    check(0, 0, 0, 2, 8, 10);       /* the TSA-fusion ops' network */
    return pf_test_end("test_dcn_cuda_host");
}
