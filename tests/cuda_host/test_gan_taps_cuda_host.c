/*  test_gan_taps_cuda_host — the CUDA executor's float input, taps and given gradients
    (nn/cuda/graph_cuda.h: pf_cugraph_forward_train_f32, pf_cugraph_tap / _shape,
    pf_cugraph_backward_from, pf_cugraph_backward_input), what the GAN step (nn/gan.c) asks of
    its discriminator and of the perceptual loss's VGG, against the CPU executor (nn/graph.h:
    pf_graph_forward_f32, pf_graph_read, pf_graph_backward_from / _input, plain NCHW layouts
    forced, input_grad) on the same descriptions, weights, input and seeds:

    - a VGG19 features cut (nn/vgg.h: conv1_1, relu1_2, conv2_1 with range_norm and input
      normalisation, so two affine nodes, ReLU nodes, a 2 x 2 max pooling), each layer a tap,
      the deepest (the output) too;
    - a tiny UNetDiscriminatorSN (nn/discriminator.h: num_feat 4, skip connections; strided
      convolutions without bias, bilinear upsampling, adds), a middle tensor as a tap;
    - a tiny VGGStyleDiscriminator (num_feat 2, input 128: BatchNorm2d in training mode, Linear
      layers), a middle tensor as a tap;
    - a tiny EDSR x2 (the generator; its input node's mean shift and img_range 255, so d x
      carries the range factor), a middle tensor as a tap.

    For each, with the loss L = sum(a * out) + sum(b_k * tap_k) (a, b random): the output and
    every tap after the forward, the BatchNorm2d running statistics it updated, every parameter
    gradient and d L / d x of pf_cugraph_backward_from, all within 1e-4 of the largest
    magnitude of the CPU's tensor; then pf_cugraph_backward_input: d L / d x bit-identical to
    backward_from's and the gradient buffer (NaN-filled before) untouched. Again with dout NULL
    and only tap 0's gradient (the layers past it get exactly zero gradients). The
    VGGStyleDiscriminator once more through the model layer (nn/cuda/model_cuda.h:
    pf_cuda_model_new_net, forward_train_f32, tap, backward_from / _input, get_grads /
    get_running), its training step and 1-channel inference refused. And the errors: backward
    before a forward, dx from a plan without input_grad, an input-only backward without dx,
    train_output after a float forward.

    Built twice as the other tests of this folder: host_ops.c's naive stand-ins and the real
    kernels of nn/cuda/ops.cu under tests/cuda_emu (test_gan_taps_cuda_host.emu); cuDNN and
    cuBLAS are the naive host stand-ins in both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cpu/dnnl_ctx.h"
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/model_cuda.h"
#include "nn/discriminator.h"
#include "nn/graph.h"
#include "nn/net.h"
#include "nn/vgg.h"
#include "tests/cuda_host/cpu_step.h"
#include "tests/pf_test.h"

#define TOL 1e-4    /* max |cuda - cpu| / max |cpu| per tensor (fp32 against fp32) */
#define MAXT (PF_NET_MAX_TAPS + 1)  /* the output, then the taps */

static uint64_t rng = 4141;
static float uniform(void) {    /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) / (float)(1u << 23) - 1.0f;
}

typedef enum { NET_VGG, NET_UNET, NET_VGGSTYLE, NET_EDSR } net_kind;

/* The description of kind into g, with its taps. 0, or -1 (reported). */
static int build(net_kind kind, pf_net *g) {
    char err[512] = "";
    int rc = -1;
    if (kind == NET_VGG) {
        const char *names[3] = { "conv1_1", "relu1_2", "conv2_1" };
        int lt[3];
        rc = pf_net_build_vgg19_features(g, names, 3, 1, 1, lt, err, sizeof err);
        for (int k = 0; !rc && k < 3; k++) rc = pf_net_add_tap(g, lt[k]) == k ? 0 : -1;
    } else if (kind == NET_EDSR) {     /* a generator: mean shift and img_range 255 */
        pf_config cfg;
        pf_config_defaults(&cfg);
        snprintf(cfg.model_type, sizeof cfg.model_type, "EDSR");
        cfg.scale = 2;
        cfg.n_feats = 8;
        cfg.n_blocks = 1;
        cfg.res_scale = 0.5f;
        cfg.img_range = 255.0f;
        cfg.rgb_mean[0] = 0.4488f, cfg.rgb_mean[1] = 0.4371f, cfg.rgb_mean[2] = 0.4040f;
        rc = pf_net_build(g, &cfg, err, sizeof err);
        if (!rc) rc = g->use_mean && pf_net_add_tap(g, g->node[g->n_node / 2].out) == 0 ? 0 : -1;
    } else {
        rc = kind == NET_UNET ? pf_net_build_unet_discriminator_sn(g, 3, 4, 1, err, sizeof err)
                              : pf_net_build_vgg_style_discriminator(g, 3, 2, 128, err,
                                                                     sizeof err);
        if (!rc) rc = pf_net_add_tap(g, g->node[g->n_node / 2].out) == 0 ? 0 : -1;
    }
    CHECK(rc == 0, "build net %d: %s", (int)kind, err);
    return rc;
}

/* What one executor gives: the output and taps (NCHW), the parameter gradients, dx (NCHW). */
typedef struct {
    float *act[MAXT];
    int dims[MAXT][4];
    float *grads, *dx, *running;
} result;

static void result_free(result *r) {
    for (int k = 0; k < MAXT; k++) free(r->act[k]);
    free(r->grads), free(r->dx), free(r->running);
    memset(r, 0, sizeof *r);
}

static size_t numel4(const int d[4]) { return (size_t)d[0] * d[1] * d[2] * d[3]; }

/* NCHW <-> NHWC of n x c x h x w (to_nhwc: NCHW src to NHWC dst, else back). */
static void transpose(float *dst, const float *src, int n, int c, int h, int w, int to_nhwc) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++)
            for (size_t p = 0; p < (size_t)h * w; p++) {
                size_t a = ((size_t)i * c + k) * h * w + p, b = ((size_t)i * h * w + p) * c + k;
                if (to_nhwc) dst[b] = src[a];
                else dst[a] = src[b];
            }
}

/* The seeds: dout (NULL when !with_out) and dtaps, random in shapes dims (from the CPU). */
typedef struct {
    float *dout, *dtaps[PF_NET_MAX_TAPS];
} seeds;

/* The CPU executor: forward of x (NHWC) with input_grad, the output and taps read, then
   backward_from (grads, dx NHWC -> NCHW into r). 0, or -1 (reported). */
static int cpu_run(const pf_net *g, const float *params, const float *x_nhwc, int n, int h,
                   int w, seeds *sd, int with_out, int tap_only, result *r) {
    char err[512] = "";
    pf_dnnl dnnl = { 0 };
    pf_gstate *S = NULL;
    pf_conv *convs = calloc((size_t)g->n_convs + 1, sizeof *convs);
    int64_t tracked[64] = { 0 };
    size_t nin = (size_t)n * 3 * h * w;
    float *dx = malloc(nin * sizeof *dx);
    r->grads = calloc(g->n_params + 1, sizeof *r->grads);
    r->running = calloc(g->n_running + 1, sizeof *r->running);
    r->dx = malloc(nin * sizeof *r->dx);
    pf_net_bn_init(g, r->running, tracked);
    int rc = !convs || !dx || !r->grads || !r->dx || pf_dnnl_init(&dnnl, err, sizeof err);
    dnnl.force_layout = PF_LAYOUT_NCHW;
    for (int i = 0; !rc && i < g->n_convs; i++) pf_graph_conv_init(g, i, &convs[i]);
    pf_gctx c = { .net = g, .dnnl = &dnnl, .convs = convs, .params = params,
                  .grads = r->grads, .input_grad = 1, .running = r->running,
                  .tracked = tracked };
    rc = rc || pf_graph_plan(&c, &S, n, h, w, 1, err, sizeof err);
    rc = rc || pf_test_cpu_weights(g, convs, params, err, sizeof err);
    rc = rc || pf_graph_forward_f32(&c, S, x_nhwc, err, sizeof err);
    int fresh = sd->dout == NULL;
    for (int k = 0; !rc && k <= g->n_taps; k++) {
        int t = k ? g->taps[k - 1] : g->output;
        pf_gstate_shape(&c, S, t, r->dims[k]);
        r->act[k] = malloc(numel4(r->dims[k]) * sizeof(float));
        rc = !r->act[k] || pf_graph_read(&c, S, t, r->act[k]);
        if (rc) snprintf(err, sizeof err, "read tensor %d", t);
        if (fresh && !rc) {     /* first run: the seeds, in the CPU's shapes */
            float *s = malloc(numel4(r->dims[k]) * sizeof(float));
            for (size_t j = 0; s && j < numel4(r->dims[k]); j++) s[j] = uniform();
            if (k) sd->dtaps[k - 1] = s;
            else sd->dout = s;
        }
    }
    const float *dtaps[PF_NET_MAX_TAPS] = { 0 };
    for (int k = 0; k < g->n_taps; k++) dtaps[k] = tap_only && k ? NULL : sd->dtaps[k];
    rc = rc || pf_graph_backward_from(&c, S, with_out ? sd->dout : NULL, dtaps, dx, err,
                                      sizeof err);
    if (!rc) transpose(r->dx, dx, n, 3, h, w, 0);
    CHECK(!rc, "cpu %s: %s", g->type, err);
    pf_gstate_free(&S);
    for (int i = 0; convs && i < g->n_convs; i++) pf_conv_free(&convs[i]);
    free(convs);
    free(dx);
    pf_dnnl_free(&dnnl);
    return rc ? -1 : 0;
}

/* a within TOL of b (b all zero: a exactly zero); nonzero: b must not be all zero. */
static void compare(const char *label, const char *what, const float *a, const float *b,
                    size_t count, int nonzero) {
    double scale, r = pf_test_rel_diff(a, b, count, &scale);
    CHECK(r <= TOL && (scale > 0 || r == 0), "%s: %s: max |cuda - cpu| / max |cpu| %.3g (max "
          "%.3g)", label, what, r, scale);
    CHECK(!nonzero || scale > 0, "%s: %s: all zero", label, what);
    printf("%s: %-22s max |cuda - cpu| / max |cpu| = %.2g (max %.3g)\n", label, what, r,
           scale);
}

static float *to_dev(const float *h, size_t count) { return pf_dev_buf(h, count * 4); }
static float *from_dev(const float *d, size_t count) {
    float *h = malloc(count * sizeof *h + 1);
    if (h) cudaMemcpy(h, d, count * 4, cudaMemcpyDeviceToHost);
    return h;
}

/* The CUDA executor on the same: forward, taps, backward_from, then backward_input (dx
   bit-identical, grads untouched). */
static void cuda_run(net_kind kind, const float *params, const float *x_nhwc, int n, int h,
                     int w, const seeds *sd, int with_out, int tap_only, const result *cpu,
                     const char *label) {
    char err[512] = "", what[64];
    pf_net g;
    if (build(kind, &g)) return;
    size_t np = g.n_params, nr = g.n_running, nin = (size_t)n * 3 * h * w;
    int n_taps = g.n_taps, nbn = g.n_bn;
    float *run0 = calloc(nr + 1, sizeof *run0);
    int64_t tracked[64] = { 0 };
    pf_net_bn_init(&g, run0, tracked);
    pf_cugraph_env env;
    pf_cugraph *cg = pf_test_cugraph(&g, &env, params, np, nr ? run0 : NULL, nr, tracked,
                                     label);
    free(run0);
    if (!cg) return;
    float *x = malloc(nin * sizeof *x), *d_dout = NULL, *d_dtaps[PF_NET_MAX_TAPS] = { 0 };
    transpose(x, x_nhwc, n, 3, h, w, 0);
    float *d_x = to_dev(x, nin), *d_dx = pf_dev_buf(NULL, nin * 4);
    float *d_dx2 = pf_dev_buf(NULL, nin * 4);
    pf_cugraph_set_input_grad(cg, 1);
    int rc = pf_cugraph_forward_train_f32(cg, &env, d_x, n, h, w, err, sizeof err);
    CHECK(rc == 0, "%s: forward_train_f32: %s", label, err);
    for (int k = 0; !rc && k <= n_taps; k++) {
        int dims[4];
        rc = pf_cugraph_shape(cg, k - 1, dims);
        CHECK(!rc && !memcmp(dims, cpu->dims[k], sizeof dims), "%s: shape of %d", label, k - 1);
        const float *d = pf_cugraph_tap(cg, k - 1);
        float *hb = d ? from_dev(d, numel4(dims)) : NULL;
        snprintf(what, sizeof what, k ? "tap %d" : "output", k - 1);
        if (hb) compare(label, what, hb, cpu->act[k], numel4(dims), 1);
        CHECK(hb != NULL, "%s: %s not readable", label, what);
        free(hb);
        float *seed = k ? sd->dtaps[k - 1] : sd->dout;
        float **dst = k ? &d_dtaps[k - 1] : &d_dout;
        if (!(k ? tap_only && k > 1 : !with_out)) *dst = to_dev(seed, numel4(dims));
    }
    CHECK(rc || pf_cugraph_shape(cg, n_taps, (int[4]){ 0 }) == -1, "%s: tap %d", label,
          n_taps);
    if (!rc && nr) {
        float *run = from_dev(env.running, nr);
        compare(label, "running statistics", run, cpu->running, nr, 1);
        CHECK(tracked[0] == 1 && tracked[nbn - 1] == 1, "%s: num_batches_tracked", label);
        free(run);
    }
    const float *const *dt = (const float *const *)d_dtaps;
    if (!rc) {
        rc = pf_cugraph_backward_from(cg, &env, d_dout, dt, d_dx, err, sizeof err);
        CHECK(rc == 0, "%s: backward_from: %s", label, err);
    }
    float *grads = rc ? NULL : from_dev(env.grads, np), *dx = rc ? NULL : from_dev(d_dx, nin);
    for (int i = 0; grads && i < pf_cugraph_num_tensors(cg); i++) {
        const pf_param_info *t = pf_cugraph_tensor_info(cg, i);
        snprintf(what, sizeof what, "d %s", t->name);
        compare(label, what, grads + t->offset, cpu->grads + t->offset, t->numel, with_out);
    }
    if (dx) compare(label, "d x", dx, cpu->dx, nin, 1);
    if (!rc) {      /* the input gradient alone: grads untouched (NaN stays) */
        cudaMemset(env.grads, 0xff, np * 4);
        rc = pf_cugraph_backward_input(cg, &env, d_dout, dt, d_dx2, err, sizeof err);
        CHECK(rc == 0, "%s: backward_input: %s", label, err);
    }
    if (!rc) {
        float *dx2 = from_dev(d_dx2, nin), *g2 = from_dev(env.grads, np);
        size_t untouched = 0;
        for (size_t j = 0; j < np; j++) untouched += isnan(g2[j]);
        CHECK(!memcmp(dx2, dx, nin * 4), "%s: backward_input's dx not backward_from's",
              label);
        CHECK(untouched == np, "%s: backward_input wrote %zu of %zu parameter gradients",
              label, np - untouched, np);
        printf("%s: backward_input: dx bit-identical, %zu parameter gradients untouched\n",
               label, untouched);
        free(dx2), free(g2);
    }
    free(grads), free(dx), free(x);
    cudaFree(d_x), cudaFree(d_dx), cudaFree(d_dx2), cudaFree(d_dout);
    for (int k = 0; k < PF_NET_MAX_TAPS; k++) cudaFree(d_dtaps[k]);
    pf_test_cugraph_free(&cg, &env);
}

/* One network: random weights (BatchNorm2d's affine away from 1 / 0), input in [0, 1), the
   seeds; the full loss, then tap 0's alone (dout NULL). */
static void check(net_kind kind, const char *name, int n, int h, int w) {
    pf_net g;
    if (build(kind, &g)) return;
    size_t np = g.n_params, nin = (size_t)n * 3 * h * w;
    float *params = calloc(np, sizeof *params), *x = malloc(nin * sizeof *x);
    pf_net_init_params(&g, params, 5);
    for (int i = 0; i < g.n_tensors; i++)
        if (!strncmp(g.tensors[i].name, "bn", 2))
            for (size_t j = 0; j < g.tensors[i].numel; j++)
                params[g.tensors[i].offset + j] =
                    (strstr(g.tensors[i].name, "weight") ? 0.8f : 0.0f) + 0.3f * uniform();
    for (size_t j = 0; j < nin; j++) x[j] = 0.5f + 0.5f * uniform();
    seeds sd = { 0 };
    for (int v = 0; v < 2; v++) {
        char label[96];
        snprintf(label, sizeof label, "%s N %d %dx%d, %s", name, n, h, w,
                 v ? "tap 0 alone" : "output + taps");
        result cpu = { 0 };
        if (!cpu_run(&g, params, x, n, h, w, &sd, !v, v, &cpu))
            cuda_run(kind, params, x, n, h, w, &sd, !v, v, &cpu, label);
        result_free(&cpu);
    }
    free(sd.dout);
    for (int k = 0; k < PF_NET_MAX_TAPS; k++) free(sd.dtaps[k]);
    free(params), free(x);
    pf_net_free(&g);
}

/* The same through the model layer (nn/cuda/model_cuda.h: pf_cuda_model_new_net and its
   float-input / tap / backward calls, which synchronise): VGGStyleDiscriminator, output +
   taps, against the CPU; its training step and (1-channel output) inference refused. */
static void check_model(int n, int h, int w) {
    const char *label = "model_cuda VGGStyleDiscriminator F 2";
    char err[512] = "";
    pf_net g;
    if (build(NET_VGGSTYLE, &g)) return;
    size_t np = g.n_params, nin = (size_t)n * 3 * h * w, nr = g.n_running;
    int n_taps = g.n_taps;
    float *params = calloc(np, sizeof *params), *x = malloc(nin * sizeof *x);
    float *xc = malloc(nin * sizeof *xc);
    pf_net_init_params(&g, params, 7);
    for (size_t j = 0; j < nin; j++) x[j] = 0.5f + 0.5f * uniform();
    transpose(xc, x, n, 3, h, w, 0);
    seeds sd = { 0 };
    result cpu = { 0 };
    int rc = cpu_run(&g, params, x, n, h, w, &sd, 1, 0, &cpu);
    pf_cuda_model *m = rc ? NULL : pf_cuda_model_new_net(&g, 0, 0, err, sizeof err);
    CHECK(rc || m, "%s: new_net: %s", label, err);
    float *d_x = to_dev(xc, nin), *d_dx = pf_dev_buf(NULL, nin * 4);
    float *d_dx2 = pf_dev_buf(NULL, nin * 4), *d_seed[MAXT] = { 0 };
    if (m) {
        pf_cuda_model_set_input_grad(m, 1);
        rc = pf_cuda_model_set_params(m, params, err, sizeof err) ||
             pf_cuda_model_forward_train_f32(m, d_x, n, h, w, err, sizeof err);
        CHECK(rc == 0, "%s: forward: %s", label, err);
    }
    for (int k = 0; m && !rc && k <= n_taps; k++) {
        int dims[4];
        const float *d = pf_cuda_model_tap(m, k - 1, dims);
        float *hb = d ? from_dev(d, numel4(dims)) : NULL;
        CHECK(hb && !memcmp(dims, cpu.dims[k], sizeof dims), "%s: tap %d", label, k - 1);
        if (hb) compare(label, k ? "tap 0" : "output", hb, cpu.act[k], numel4(dims), 1);
        free(hb);
        d_seed[k] = to_dev(k ? sd.dtaps[k - 1] : sd.dout, numel4(cpu.dims[k]));
    }
    float *run = calloc(nr, sizeof *run), *grads = calloc(np, sizeof *grads);
    const float *const *dt = (const float *const *)d_seed + 1;
    if (m && !rc) {
        rc = pf_cuda_model_backward_from(m, d_seed[0], dt, d_dx, err, sizeof err) ||
             pf_cuda_model_get_grads(m, grads, err, sizeof err) ||
             pf_cuda_model_get_running(m, run, err, sizeof err) ||
             pf_cuda_model_backward_input(m, d_seed[0], dt, d_dx2, err, sizeof err);
        CHECK(rc == 0, "%s: backward: %s", label, err);
    }
    if (m && !rc) {
        float *dx = from_dev(d_dx, nin), *dx2 = from_dev(d_dx2, nin), *dxc = malloc(nin * 4);
        for (int i = 0; i < pf_cuda_model_num_tensors(m); i++) {
            const pf_param_info *t = pf_cuda_model_tensor_info(m, i);
            char what[64];
            snprintf(what, sizeof what, "d %s", t->name);
            compare(label, what, grads + t->offset, cpu.grads + t->offset, t->numel, 1);
        }
        compare(label, "running statistics", run, cpu.running, nr, 1);
        compare(label, "d x", dx, cpu.dx, nin, 1);
        CHECK(!memcmp(dx, dx2, nin * 4), "%s: backward_input's dx", label);
        uint8_t u8[2 * 128 * 128 * 3] = { 0 };
        CHECK(pf_cuda_model_train_step(m, u8, u8, 1, 128, 128, dxc, err, sizeof err) == -1 &&
              strstr(err, "without a loss"), "%s: train_step refused: '%s'", label, err);
        CHECK(pf_cuda_model_infer(m, u8, 128, 128, dxc, err, sizeof err) == -1 &&
              strstr(err, "1-channel"), "%s: infer refused: '%s'", label, err);
        free(dx), free(dx2), free(dxc);
    }
    pf_cuda_model_destroy(&m);
    cudaFree(d_x), cudaFree(d_dx), cudaFree(d_dx2);
    for (int k = 0; k < MAXT; k++) cudaFree(d_seed[k]);
    result_free(&cpu);
    free(sd.dout);
    for (int k = 0; k < PF_NET_MAX_TAPS; k++) free(sd.dtaps[k]);
    free(params), free(x), free(xc), free(run), free(grads);
    pf_net_free(&g);
}

/* dx from a plan without input_grad, and an input-only backward without dx, are refused. */
static void check_errors(void) {
    pf_net g;
    if (build(NET_VGG, &g)) return;
    size_t np = g.n_params, nin = 2 * 3 * 4 * 4;
    float *params = calloc(np, sizeof *params), x[2 * 3 * 4 * 4] = { 0 };
    char err[512] = "";
    pf_cugraph_env env;
    pf_cugraph *cg = pf_test_cugraph(&g, &env, params, np, NULL, 0, NULL, "errors");
    free(params);
    if (!cg) return;
    float *d_x = to_dev(x, nin), *d_dx = pf_dev_buf(NULL, nin * 4);
    int rc = pf_cugraph_backward_from(cg, &env, NULL, NULL, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "without a training forward"), "no forward: '%s'", err);
    rc = pf_cugraph_forward_train_f32(cg, &env, d_x, 2, 4, 4, err, sizeof err);
    CHECK(rc == 0, "errors: forward: %s", err);
    rc = pf_cugraph_backward_from(cg, &env, NULL, NULL, d_dx, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "input_grad"), "dx without input_grad: rc %d '%s'", rc, err);
    rc = pf_cugraph_backward_input(cg, &env, NULL, NULL, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "without dx"), "input-only without dx: rc %d '%s'", rc, err);
    const float *pred, *gt;
    CHECK(pf_cugraph_train_output(cg, &pred, &gt, (int[4]){ 0 }) == -1,
          "train_output after a float forward");
    cudaFree(d_x), cudaFree(d_dx);
    pf_test_cugraph_free(&cg, &env);
}

int main(void) {
    check(NET_VGG, "VGG19 conv1_1 relu1_2 conv2_1", 2, 8, 8);
    check(NET_UNET, "UNetDiscriminatorSN F 4", 2, 16, 16);
    check(NET_VGGSTYLE, "VGGStyleDiscriminator F 2", 2, 128, 128);
    check(NET_EDSR, "EDSR x2 8f 1b (mean shift, range 255)", 2, 6, 5);
    check_model(2, 128, 128);
    check_errors();
    return pf_test_end("test_gan_taps_cuda_host");
}
