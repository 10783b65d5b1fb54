/*  gpu_check — compares every nn/cuda op with a naive CPU loop (tests/cuda_host/ref_ops.c, the
    references that tests/cuda_host's stand-ins also wrap, so they are written once; Adam also
    with nn/optim.c itself), on random inputs of odd shapes. One line per check:

        op  shape  max_rel_err  PASS|FAIL

    max_rel_err = max_i |gpu_i - ref_i| / max_i |ref_i|: the worst error relative to the
    tensor's scale (a per-element ratio would blow up on values that cancel to ~0). References
    accumulate in double. Tolerances: 1e-4 for fp32, 2e-2 for TF32 convolutions and bf16.

    Exit status: 0 all passed, 1 a check failed or an op returned an error, 77 no usable CUDA
    device (the message says why: no driver, no device, ...), 2 the check itself could not run
    (out of memory).

    Run through bench/gpu/run.sh, or: cmake --build build-gpu --target gpu_check &&
    build-gpu/bench/gpu/gpu_check

    The "network" section (built only in the CMake build, which defines PIXFLOW_HAVE_CUDA and
    links the CPU backend; run.sh's nvcc-only fallback skips it) runs EDSR on the GPU
    (nn/cuda/model_cuda.h) against the CPU model (nn/model.h) with the same weights and batch:
    loss, every gradient tensor, inference output, parameters after 3 Adam steps; the same for
    small versions of every other network (SRCNN, FSRCNN, ESPCN, MSRResNet, RCAN, RRDBNet, run
    by nn/cuda/graph_cuda.c), BasicVSR (3 and 2 frames, SGD with SPyNet joining late), EDVR
    (windows of 3 and 5 frames, one GT frame a sample); the
    GAN step's networks (a VGG19 cut with taps, both discriminators: float input, taps,
    backward_from / backward_input through pf_cuda_model_new_net; `gpu_check gan` runs them
    alone, also under the emulation); the video ops (bilinear resize, 2 x 2 pooling, flow warp: forward and backward; affine,
    the pooling's backward and 2 x 2 max pooling against ref_ops.c) against nn/video_layers.c, the CPU counterpart that tests/test_video_layers checks against
    PyTorch, with the warp's fixed-point image gradient run twice for identical bits; the
    modulated deformable convolution (nn/cuda/dcn_cuda.h with cuBLAS) against the CPU
    executor's layer (nn/cpu/dcn.h; its kernels and the layer against ref_ops.c are in the ops
    section, which the nvcc-only build runs too; so are BatchNorm2d's kernels and the Linear
    layer, nn/cuda/linear_cuda.h with cuBLAS, against ref_ops.c); then times the training steps of bench/train_step's shapes
    (`# timing` lines).

    The same file is built against the host emulation of the kernels (tests/cuda_emu,
    PF_CUDA_EMU: ctest gpu_check.emu), where every check runs on the real nn/cuda/ops.cu kernels
    without a GPU (convolutions: naive stand-ins for cuDNN) and the timings are skipped.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include "nn/cuda/conv_cudnn.h"
#include "nn/cuda/dcn_cuda.h"
#include "nn/cuda/linear_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/net.h" /* PF_BN_EPS, PF_BN_MOMENTUM */
#include "nn/optim.h"
#include "tests/cuda_host/ref_ops.h"
#ifdef PIXFLOW_HAVE_CUDA
#include <time.h>
#include "nn/cuda/model_cuda.h"
#include "nn/cuda/optim_cuda.h"
#include "nn/cpu/dcn.h"
#include "nn/cpu/dnnl_ctx.h" /* PF_PREC_BF16 */
#include "nn/cpu/ops.h"
#include "nn/discriminator.h"
#include "nn/model.h"
#include "nn/vgg.h"
#include "nn/video_layers.h"
#include "tests/cuda_host/net_cases.h"
#endif

#define TOL_FP32 1e-4
#define TOL_LOW 2e-2 /* TF32, bf16 */
/* bf16 networks' gradients against the CPU's fp32: exact autocast semantics are up to 11% from
   fp32 on these small networks (tests/reference/bf16_conv_grad_ref.py) */
#define TOL_BF16_GRAD 0.2

static int g_failures, g_checks;
static char g_err[1024];

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)((next_u64() >> 40) * (1.0 / 16777216.0));
}

static void fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = uniform(lo, hi);
}

static void *host_alloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "gpu_check: out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu_check: cudaMalloc(%zu bytes): %s\n", bytes, cudaGetErrorString(e));
        exit(2);
    }
    return p;
}

static void *upload(const void *h, size_t bytes) {
    void *d = dev_alloc(bytes);
    cudaError_t e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu_check: cudaMemcpy to device: %s\n", cudaGetErrorString(e));
        exit(2);
    }
    return d;
}

/* Wait for the GPU, then copy back; 0, or -1 with g_err (a kernel's execution error shows
   here). */
static int download(void *h, const void *d, size_t bytes) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        snprintf(g_err, sizeof g_err, "after the op: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        return -1;
    }
    return 0;
}

static double max_rel_err(const float *got, const float *ref, size_t n) {
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d <= diff)) diff = d; /* NaN counts as the worst */
        if (fabs((double)ref[i]) > scale) scale = fabs((double)ref[i]);
    }
    if (isnan(diff)) return INFINITY;
    return scale > 0.0 ? diff / scale : diff;
}

static void report(const char *op, const char *shape, double err, double tol) {
    int ok = err <= tol;
    g_checks++;
    if (!ok) g_failures++;
    printf("%-28s %-36s %.3e %s\n", op, shape, err, ok ? "PASS" : "FAIL");
    fflush(stdout);
}

static void report_error(const char *op, const char *shape, const char *msg) {
    g_checks++;
    g_failures++;
    printf("%-28s %-36s ERROR %s FAIL\n", op, shape, msg);
    fflush(stdout);
}

/* Compare count floats at device pointer d with ref; rc is the op's return code. */
static void check(const char *op, const char *shape, int rc, const float *d, const float *ref,
                  size_t count, double tol) {
    if (rc) {
        report_error(op, shape, g_err);
        return;
    }
    float *got = host_alloc(count * sizeof(float));
    if (download(got, d, count * sizeof(float)))
        report_error(op, shape, g_err);
    else
        report(op, shape, max_rel_err(got, ref, count), tol);
    free(got);
}

/* ---- element-wise, layout, loss, Adam, bf16 ----------------------------------------------- */

static void check_input_conversion(void) {
    int n = 2, h = 17, w = 23, c = 3;
    size_t count = (size_t)n * h * w * c;
    char shape[64];
    snprintf(shape, sizeof shape, "N%d H%d W%d C%d", n, h, w, c);
    uint8_t *img = host_alloc(count);
    for (size_t i = 0; i < count; i++) img[i] = (uint8_t)(next_u64() & 255);
    img[0] = 0;
    img[1] = 255;
    float *ref = host_alloc(count * sizeof(float));
    pf_ref_u8_nhwc_to_nchw(ref, img, n, h, w, c);
    uint8_t *d_img = upload(img, count);
    float *d_out = dev_alloc(count * sizeof(float));
    int rc = pf_cuda_u8_nhwc_to_nchw(d_out, d_img, n, h, w, c, 0, g_err, sizeof g_err);
    check("u8_nhwc_to_nchw", shape, rc, d_out, ref, count, TOL_FP32);

    /* mean shift and its inverse on the converted image (EDSR: DIV2K mean, img_range 255) */
    const float mean[3] = {0.4488f, 0.4371f, 0.4040f};
    const float range = 255.0f;
    float *ref2 = host_alloc(count * sizeof(float));
    pf_ref_mean_shift(ref2, ref, n, c, h, w, mean, range);
    float *d_sh = dev_alloc(count * sizeof(float));
    rc = pf_cuda_mean_shift(d_sh, d_out, n, c, h, w, mean, range, 0, g_err, sizeof g_err);
    check("mean_shift", shape, rc, d_sh, ref2, count, TOL_FP32);
    float *ref3 = host_alloc(count * sizeof(float));
    pf_ref_mean_unshift(ref3, ref2, n, c, h, w, mean, range);
    rc = pf_cuda_mean_unshift(d_sh, d_sh, n, c, h, w, mean, range, 0, g_err, sizeof g_err);
    check("mean_unshift (in place)", shape, rc, d_sh, ref3, count, TOL_FP32);
    free(img), free(ref), free(ref2), free(ref3);
    cudaFree(d_img), cudaFree(d_out), cudaFree(d_sh);
}

static void check_elementwise(void) {
    size_t count = (size_t)2 * 32 * 29 * 31;
    char shape[64];
    snprintf(shape, sizeof shape, "count %zu", count);
    float *x = host_alloc(count * sizeof(float)), *b = host_alloc(count * sizeof(float));
    float *dy = host_alloc(count * sizeof(float)), *ref = host_alloc(count * sizeof(float));
    fill(x, count, -1, 1);
    fill(b, count, -1, 1);
    fill(dy, count, -1, 1);
    for (size_t i = 0; i < count; i += 97) x[i] = 0.0f; /* ReLU's kink: masked like torch */
    float *d_x = upload(x, count * 4), *d_b = upload(b, count * 4), *d_dy = upload(dy, count * 4);
    float *d_y = dev_alloc(count * 4), *d_t = dev_alloc(count * 4);
    int rc;

    pf_ref_leaky_relu_forward(ref, x, 0.0f, count);
    rc = pf_cuda_relu_forward(d_y, d_x, count, 0, g_err, sizeof g_err);
    check("relu_forward", shape, rc, d_y, ref, count, TOL_FP32);
    float *y = host_alloc(count * sizeof(float));
    pf_ref_leaky_relu_forward(y, x, 0.0f, count);
    pf_ref_leaky_relu_backward(ref, dy, y, 0.0f, count);
    free(y);
    rc = pf_cuda_relu_backward(d_t, d_dy, d_y, count, 0, g_err, sizeof g_err);
    check("relu_backward", shape, rc, d_t, ref, count, TOL_FP32);

    const float s = 0.1f; /* EDSR res_scale */
    pf_ref_add_scaled(ref, x, b, s, count);
    rc = pf_cuda_add_scaled(d_t, d_x, d_b, s, count, 0, g_err, sizeof g_err);
    check("add_scaled (a + s b)", shape, rc, d_t, ref, count, TOL_FP32);
    pf_ref_scale(ref, dy, s, count);
    rc = pf_cuda_scale(d_t, d_dy, s, count, 0, g_err, sizeof g_err);
    check("scale (d b = s dy)", shape, rc, d_t, ref, count, TOL_FP32);
    pf_ref_axpy(ref, x, 0.5f, count); /* onto d_t's s dy, ref's too */
    rc = pf_cuda_axpy(d_t, d_x, 0.5f, count, 0, g_err, sizeof g_err);
    check("axpy (accumulate)", shape, rc, d_t, ref, count, TOL_FP32);
    free(x), free(b), free(dy), free(ref);
    cudaFree(d_x), cudaFree(d_b), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_t);
}

static void check_pixel_shuffle(int n, int c, int h, int w, int r) {
    size_t count = (size_t)n * c * r * r * h * w;
    char shape[64];
    snprintf(shape, sizeof shape, "N%d C%d->%d H%d W%d r%d", n, c * r * r, c, h, w, r);
    float *in = host_alloc(count * 4), *ref = host_alloc(count * 4);
    fill(in, count, -1, 1);
    pf_ref_pixel_shuffle_forward(ref, in, n, c, h, w, r);
    float *d_in = upload(in, count * 4), *d_out = dev_alloc(count * 4);
    int rc = pf_cuda_pixel_shuffle_forward(d_out, d_in, n, c, h, w, r, 0, g_err, sizeof g_err);
    check("pixel_shuffle_forward", shape, rc, d_out, ref, count, TOL_FP32);
    /* backward of a permutation: feeding the forward's output back must give the input */
    float *d_back = dev_alloc(count * 4);
    float *d_ref = upload(ref, count * 4);
    rc = pf_cuda_pixel_shuffle_backward(d_back, d_ref, n, c, h, w, r, 0, g_err, sizeof g_err);
    check("pixel_shuffle_backward", shape, rc, d_back, in, count, TOL_FP32);
    free(in), free(ref);
    cudaFree(d_in), cudaFree(d_out), cudaFree(d_back), cudaFree(d_ref);
}

/* type 0 L1, 1 MSE, 2 Charbonnier (eps 1e-6, larger than BasicSR's 1e-12 so that it shows) */
static int run_loss(int type, float *loss, float *grad, const float *x, const float *y,
                    size_t count, float weight, double *scratch) {
    if (type == 2)
        return pf_cuda_charbonnier_loss(loss, grad, x, y, count, weight, 1e-6f, scratch, 0,
                                        g_err, sizeof g_err);
    return (type ? pf_cuda_mse_loss : pf_cuda_l1_loss)(loss, grad, x, y, count, weight,
                                                        scratch, 0, g_err, sizeof g_err);
}

static void check_loss(int type, size_t count) {
    const char *name = type == 2 ? "charbonnier_loss" : type ? "mse_loss" : "l1_loss";
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "count %zu weight 0.5", count);
    const float weight = 0.5f;
    float *x = host_alloc(count * 4), *y = host_alloc(count * 4), *ref = host_alloc(count * 4);
    fill(x, count, 0, 1);
    fill(y, count, 0, 1);
    for (size_t i = 0; i < count; i += 101) y[i] = x[i]; /* sign(0) = 0 */
    float ref_loss = pf_ref_pixel_loss(type == 2 ? PF_REF_CHARBONNIER : type ? PF_REF_MSE : PF_REF_L1,
                                       ref, x, y, count, weight, 1e-6f);
    float *d_x = upload(x, count * 4), *d_y = upload(y, count * 4), *d_g = dev_alloc(count * 4);
    float *d_loss = dev_alloc(4);
    double *d_scratch = dev_alloc(PF_CUDA_LOSS_SCRATCH * sizeof(double));
    int rc = run_loss(type, d_loss, d_g, d_x, d_y, count, weight, d_scratch);
    snprintf(op, sizeof op, "%s value", name);
    check(op, shape, rc, d_loss, &ref_loss, 1, TOL_FP32);
    snprintf(op, sizeof op, "%s grad", name);
    check(op, shape, rc, d_g, ref, count, TOL_FP32);
    /* determinism: the same inputs again (without the gradient) give the same bits */
    float first = 0, again = 0;
    snprintf(op, sizeof op, "%s deterministic", name);
    if (!rc && !download(&first, d_loss, 4) &&
        !run_loss(type, d_loss, NULL, d_x, d_y, count, weight, d_scratch) &&
        !download(&again, d_loss, 4))
        report(op, shape, memcmp(&first, &again, 4) ? INFINITY : 0.0, 0.0);
    else
        report_error(op, shape, g_err);
    free(x), free(y), free(ref);
    cudaFree(d_x), cudaFree(d_y), cudaFree(d_g), cudaFree(d_loss), cudaFree(d_scratch);
}

static void check_adam(void) {
    size_t count = 10007;
    const float lr = 2e-4f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 1e-4f;
    char shape[96];
    float *p = host_alloc(count * 4), *ref_p = host_alloc(count * 4), *g = host_alloc(count * 4);
    float *ref_m = host_alloc(count * 4), *ref_v = host_alloc(count * 4);
    fill(p, count, -0.5f, 0.5f);
    memcpy(ref_p, p, count * 4);
    pf_adam opt;
    if (pf_adam_init(&opt, count, b1, b2, eps, wd)) exit(2);
    float *opt_p = host_alloc(count * 4);
    memcpy(opt_p, p, count * 4);
    float *d_p = upload(p, count * 4), *d_g = dev_alloc(count * 4);
    float *d_m = dev_alloc(count * 4), *d_v = dev_alloc(count * 4);
    cudaMemset(d_m, 0, count * 4);
    cudaMemset(d_v, 0, count * 4);
    for (int t = 1; t <= 3; t++) {
        fill(g, count, -1, 1);
        if (cudaMemcpy(d_g, g, count * 4, cudaMemcpyHostToDevice) != cudaSuccess) exit(2);
        /* naive: torch.optim.Adam's formula written out */
        double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
        for (size_t i = 0; i < count; i++) {
            float gi = g[i] + wd * ref_p[i];
            ref_m[i] = b1 * ref_m[i] + (1.0f - b1) * gi;
            ref_v[i] = b2 * ref_v[i] + (1.0f - b2) * gi * gi;
            float denom = sqrtf(ref_v[i]) / (float)sqrt(bc2) + eps;
            ref_p[i] -= (float)(lr / bc1) * (ref_m[i] / denom);
        }
        pf_adam_step(&opt, opt_p, g, lr);
        int rc = pf_cuda_adam_step(d_p, d_g, d_m, d_v, count, lr, b1, b2, eps, wd, t, 0, g_err,
                                   sizeof g_err);
        snprintf(shape, sizeof shape, "count %zu step %d wd %g", count, t, (double)wd);
        check("adam params (naive)", shape, rc, d_p, ref_p, count, TOL_FP32);
        check("adam params (nn/optim.c)", shape, rc, d_p, opt_p, count, TOL_FP32);
        check("adam exp_avg", shape, rc, d_m, opt.exp_avg, count, TOL_FP32);
        check("adam exp_avg_sq", shape, rc, d_v, opt.exp_avg_sq, count, TOL_FP32);
    }
    pf_adam_free(&opt);
    free(p), free(ref_p), free(g), free(ref_m), free(ref_v), free(opt_p);
    cudaFree(d_p), cudaFree(d_g), cudaFree(d_m), cudaFree(d_v);
}

static void check_bf16(void) {
    size_t count = 100003;
    char shape[64];
    snprintf(shape, sizeof shape, "count %zu", count);
    float *x = host_alloc(count * 4);
    fill(x, count, -1000, 1000);
    /* ties (both parities), overflow to inf, inf, denormal, zero, NaN */
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x7f7fffffu,
                                0x7f800000u, 0xff800000u, 0x00000001u, 0x80000000u,
                                0x7fc00000u, 0x00008000u, 0x00018000u};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) memcpy(&x[i], &special[i], 4);
    float *d_x = upload(x, count * 4);
    uint16_t *d_h = dev_alloc(count * 2), *h = host_alloc(count * 2);
    int rc = pf_cuda_f32_to_bf16(d_h, d_x, count, 0, g_err, sizeof g_err);
    if (rc || download(h, d_h, count * 2)) {
        report_error("f32_to_bf16", shape, g_err);
    } else {
        size_t mismatched = 0;
        double err = 0.0;
        for (size_t i = 0; i < count; i++) {
            uint16_t want = pf_ref_bf16(x[i]);
            float got = pf_ref_bf16_to_f32(h[i]);
            if (isnan(x[i])) {
                if (!isnan(got)) mismatched++;
                continue;
            }
            if (h[i] != want) mismatched++;
            if (isfinite(got) && x[i] != 0.0f) {
                double e = fabs((double)got - x[i]) / fabs((double)x[i]);
                if (e > err && fabs(x[i]) > 1e-30) err = e;
            }
        }
        char op[64];
        snprintf(op, sizeof op, "f32_to_bf16 (%zu bit diffs)", mismatched);
        report(op, shape, mismatched ? INFINITY : err, TOL_LOW);
    }
    /* bf16 -> fp32: exact, so the bits of the reference; acc adds in fp32. Every pattern
       (NaN, inf, denormals included) as src; dst 0x10000 values starting from x. */
    size_t pat = 0x10000;
    uint16_t *all = host_alloc(pat * 2);
    for (size_t i = 0; i < pat; i++) all[i] = (uint16_t)i;
    float *want = host_alloc(pat * 4), *got = host_alloc(pat * 4);
    uint16_t *d_all = upload(all, pat * 2);
    for (int acc = 0; acc < 2; acc++) {
        snprintf(shape, sizeof shape, "all 65536 patterns%s", acc ? ", acc" : "");
        float *d_y = upload(x, pat * 4);   /* acc adds to these */
        memcpy(want, x, pat * 4);
        pf_ref_bf16_to_f32_acc(want, all, pat, acc);
        rc = pf_cuda_bf16_to_f32(d_y, d_all, pat, acc, 0, g_err, sizeof g_err);
        if (rc || download(got, d_y, pat * 4)) {
            report_error("bf16_to_f32", shape, g_err);
        } else {
            size_t mismatched = 0;
            for (size_t i = 0; i < pat; i++)   /* NaN payloads may differ: both NaN is equal */
                if (memcmp(&got[i], &want[i], 4) && !(isnan(got[i]) && isnan(want[i])))
                    mismatched++;
            char op[64];
            snprintf(op, sizeof op, "bf16_to_f32 (%zu bit diffs)", mismatched);
            report(op, shape, mismatched ? INFINITY : 0.0, TOL_FP32);
        }
        cudaFree(d_y);
    }
    free(all), free(want), free(got);
    cudaFree(d_all);
    free(x), free(h);
    cudaFree(d_x), cudaFree(d_h);
}

/* ---- convolution -------------------------------------------------------------------------- */

typedef pf_ref_conv conv_shape;   /* n, ic, oc, h, w, k, stride, pad */

/* All four directions of one shape under one context (three without a bias: has_bias 0);
   mode names the context in the output. */
static void check_conv(pf_cudnn *ctx, const char *mode, const conv_shape *s, int has_bias,
                       double tol) {
    char shape[128], op[64], algos[256];
    int stride = s->stride > 0 ? s->stride : 1, pad = s->stride > 0 ? s->pad : s->k / 2;
    int oh = (s->h + 2 * pad - s->k) / stride + 1, ow = (s->w + 2 * pad - s->k) / stride + 1;
    snprintf(shape, sizeof shape, "N%d C%d->%d H%d W%d k%d s%d p%d%s", s->n, s->ic, s->oc, s->h,
             s->w, s->k, stride, pad, has_bias ? "" : " no bias");
    size_t nx = (size_t)s->n * s->ic * s->h * s->w, ny = (size_t)s->n * s->oc * oh * ow;
    size_t nw = (size_t)s->oc * s->ic * s->k * s->k;
    float *x = host_alloc(nx * 4), *wt = host_alloc(nw * 4), *bias = host_alloc(s->oc * 4);
    float *dy = host_alloc(ny * 4), *y = host_alloc(ny * 4), *dx = host_alloc(nx * 4);
    float *dw = host_alloc(nw * 4), *db = host_alloc(s->oc * 4);
    float bound = 1.0f / sqrtf((float)(s->ic * s->k * s->k)); /* PyTorch's default init */
    fill(x, nx, 0, 1);
    fill(wt, nw, -bound, bound);
    fill(bias, s->oc, -bound, bound);
    fill(dy, ny, -1, 1);
    pf_ref_conv_forward(s, x, wt, has_bias ? bias : NULL, y);
    pf_ref_conv_backward_data(s, wt, dy, dx, 0);
    pf_ref_conv_backward_filter(s, x, dy, dw, 0);
    pf_ref_conv_backward_bias(s, dy, db, 0);

    float *d_x = upload(x, nx * 4), *d_w = upload(wt, nw * 4), *d_b = upload(bias, s->oc * 4);
    float *d_dy = upload(dy, ny * 4), *d_y = dev_alloc(ny * 4), *d_dx = dev_alloc(nx * 4);
    float *d_dw = dev_alloc(nw * 4), *d_db = dev_alloc(s->oc * 4);
    pf_cuconv c;
    pf_cuconv_init(&c, "check_conv", s->ic, s->oc, s->k);
    pf_cuconv_set_geometry(&c, stride, pad, has_bias);
    if (pf_cuconv_setup(&c, ctx, s->n, s->h, s->w, 1, g_err, sizeof g_err)) {
        snprintf(op, sizeof op, "conv setup %s", mode);
        report_error(op, shape, g_err);
    } else {
        pf_cuconv_describe(&c, algos, sizeof algos);
        printf("# conv %s %s: %s\n", mode, shape, algos);
        int rc = pf_cuconv_forward(&c, d_x, d_w, d_b, d_y, g_err, sizeof g_err);
        snprintf(op, sizeof op, "conv_fwd %s", mode);
        check(op, shape, rc, d_y, y, ny, tol);
        rc = pf_cuconv_backward_data(&c, d_w, d_dy, d_dx, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "conv_bwd_data %s", mode);
        check(op, shape, rc, d_dx, dx, nx, tol);
        rc = pf_cuconv_backward_filter(&c, d_x, d_dy, d_dw, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "conv_bwd_filter %s", mode);
        check(op, shape, rc, d_dw, dw, nw, tol);
        if (has_bias) {
            rc = pf_cuconv_backward_bias(&c, d_dy, d_db, 0, g_err, sizeof g_err);
            snprintf(op, sizeof op, "conv_bwd_bias %s", mode);
            check(op, shape, rc, d_db, db, s->oc, tol);
        }
        /* accumulate = 1 adds: a second pass doubles both gradients */
        for (size_t i = 0; i < nw; i++) dw[i] *= 2.0f;
        for (int i = 0; i < s->oc; i++) db[i] *= 2.0f;
        rc = pf_cuconv_backward_filter(&c, d_x, d_dy, d_dw, 1, g_err, sizeof g_err);
        snprintf(op, sizeof op, "conv_bwd_filter+= %s", mode);
        check(op, shape, rc, d_dw, dw, nw, tol);
        if (has_bias) {
            rc = pf_cuconv_backward_bias(&c, d_dy, d_db, 1, g_err, sizeof g_err);
            snprintf(op, sizeof op, "conv_bwd_bias+= %s", mode);
            check(op, shape, rc, d_db, db, s->oc, tol);
        }
    }
    pf_cuconv_free(&c);
    free(x), free(wt), free(bias), free(dy), free(y), free(dx), free(dw), free(db);
    cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx);
    cudaFree(d_dw), cudaFree(d_db);
}

static void check_convs(void) {
    /* odd sizes on purpose; k = 9 / 1 / 5 are SRCNN's layers, 3 EDSR's */
    const conv_shape shapes[] = {
        {2, 3, 16, 13, 17, 3, 1, 1}, {2, 16, 16, 24, 19, 3, 1, 1}, {2, 32, 32, 21, 23, 3, 1, 1},
        {2, 16, 32, 21, 15, 1, 1, 0}, {2, 3, 32, 33, 27, 9, 1, 4}, {2, 32, 3, 17, 40, 5, 1, 2},
        {2, 32, 12, 40, 13, 3, 1, 1}, /* EDSR's upsample conv: 4 * 3 outputs */
        /* UNetDiscriminatorSN / VGGStyleDiscriminator: k4 s2 p1 bias-free (odd H: floor),
           k3 s1 p1 (conv0, with bias), k3 s2 p1 */
        {2, 16, 32, 24, 17, 4, 2, 1}, {2, 3, 16, 24, 19, 3, 1, 1}, {2, 8, 16, 21, 18, 3, 2, 1},
    };
    const int has_bias[] = {1, 1, 1, 1, 1, 1, 1, 0, 1, 0};
    const int nshapes = (int)(sizeof shapes / sizeof *shapes);
    struct {
        const char *mode;
        int tf32, deterministic, benchmark, bf16;
        double tol;
    } modes[] = {
        {"fp32", 0, 0, 0, 0, TOL_FP32},
        {"tf32", 1, 0, 0, 0, TOL_LOW},
        {"fp32-det-find", 0, 1, 1, 0, TOL_FP32},
        {"bf16", 0, 0, 0, 1, TOL_LOW},   /* conv_bf16.c's casts around bf16 cuDNN */
    };
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        pf_cudnn *ctx = pf_cudnn_new(0, modes[m].tf32, modes[m].deterministic,
                                     modes[m].benchmark, g_err, sizeof g_err);
        if (!ctx) {
            report_error("pf_cudnn_new", modes[m].mode, g_err);
            continue;
        }
        ctx->bf16 = modes[m].bf16;
        for (int i = 0; i < nshapes; i++)
            check_conv(ctx, modes[m].mode, &shapes[i], has_bias[i], modes[m].tol);
        pf_cudnn_destroy(&ctx);
    }
}

/* ---- graph-network ops (nn/cpu/ops.c's node ops, plain NCHW) -------------------------------- */

/* Overwrite a device buffer with host data (an acc = 1 check's prior gradient, or garbage
   that an overwriting op must replace). */
static void set_dev(void *d, const void *h, size_t bytes) {
    cudaError_t e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu_check: cudaMemcpy to device: %s\n", cudaGetErrorString(e));
        exit(2);
    }
}

/* A reduction run again on the same inputs must give the same bits: first holds count floats
   downloaded after the first run, rc is the second run's return code. */
static void check_repeat(const char *op, const char *shape, int rc, const float *d,
                         const float *first, size_t count) {
    float *again = host_alloc(count * sizeof(float));
    if (rc || download(again, d, count * sizeof(float)))
        report_error(op, shape, g_err);
    else
        report(op, shape, memcmp(first, again, count * sizeof(float)) ? INFINITY : 0.0, 0.0);
    free(again);
}

/* Fetch count floats for check_repeat; NULL (after reporting) when the op failed. */
static float *fetch(const char *op, const char *shape, int rc, const float *d, size_t count) {
    float *h = host_alloc(count * sizeof(float));
    if (!rc && !download(h, d, count * sizeof(float))) return h;
    report_error(op, shape, g_err);
    free(h);
    return NULL;
}

/* LeakyReLU (slopes 0.2 and 0), tanh, sigmoid: forward, then backward from the forward's
   (reference) output with acc = 0 and 1 (LeakyReLU's backward has no acc; it is also run in
   place; the PF_G_RELU node's backward, the same with acc, after them). */
static void check_activations(void) {
    size_t count = (size_t)2 * 5 * 37 * 41 + 3;
    char shape[64], op[64];
    float *x = host_alloc(count * 4), *dy = host_alloc(count * 4), *prior = host_alloc(count * 4);
    float *ref = host_alloc(count * 4), *y = host_alloc(count * 4);
    fill(x, count, -4, 4);
    fill(dy, count, -1, 1);
    fill(prior, count, -1, 1);
    for (size_t i = 0; i < count; i += 89) x[i] = 0.0f; /* the kink: slope alpha, as torch */
    float *d_x = upload(x, count * 4), *d_dy = upload(dy, count * 4);
    float *d_y = dev_alloc(count * 4), *d_dx = dev_alloc(count * 4);
    static const struct {
        const char *name;
        int kind; /* 0 LeakyReLU, 1 tanh, 2 sigmoid */
        float alpha;
    } acts[] = {
        {"leaky_relu", 0, 0.2f}, {"leaky_relu", 0, 0.0f}, {"tanh", 1, 0}, {"sigmoid", 2, 0},
    };
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        int kind = acts[a].kind;
        double alpha = acts[a].alpha;  /* for the label */
        if (kind == 0)
            snprintf(shape, sizeof shape, "count %zu alpha %g", count, alpha);
        else
            snprintf(shape, sizeof shape, "count %zu", count);
        if (kind == 0)
            pf_ref_leaky_relu_forward(y, x, acts[a].alpha, count);
        else
            (kind == 1 ? pf_ref_tanh_forward : pf_ref_sigmoid_forward)(y, x, count);
        int rc = kind == 0 ? pf_cuda_leaky_relu_forward(d_y, d_x, acts[a].alpha, count, 0, g_err,
                                                        sizeof g_err)
                 : kind == 1 ? pf_cuda_tanh_forward(d_y, d_x, count, 0, g_err, sizeof g_err)
                             : pf_cuda_sigmoid_forward(d_y, d_x, count, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "%s_forward", acts[a].name);
        check(op, shape, rc, d_y, y, count, TOL_FP32);
        set_dev(d_y, y, count * 4); /* the backward reads the reference output */
        for (int acc = 0; acc <= (kind == 0 ? 0 : 1); acc++) {
            set_dev(d_dx, prior, count * 4);
            memcpy(ref, prior, count * 4);
            if (kind == 0)
                pf_ref_leaky_relu_backward(ref, dy, y, acts[a].alpha, count);
            else
                (kind == 1 ? pf_ref_tanh_backward : pf_ref_sigmoid_backward)(ref, dy, y, count,
                                                                             acc);
            if (kind == 0)
                rc = pf_cuda_leaky_relu_backward(d_dx, d_dy, d_y, acts[a].alpha, count, 0, g_err,
                                                 sizeof g_err);
            else
                rc = (kind == 1 ? pf_cuda_tanh_backward : pf_cuda_sigmoid_backward)(
                    d_dx, d_dy, d_y, count, acc, 0, g_err, sizeof g_err);
            snprintf(op, sizeof op, "%s_backward%s", acts[a].name,
                     kind == 0 ? "" : acc ? " acc=1" : " acc=0");
            check(op, shape, rc, d_dx, ref, count, TOL_FP32);
        }
        if (kind == 0) { /* dx = dy: the gradient buffer reused */
            set_dev(d_dx, dy, count * 4);
            rc = pf_cuda_leaky_relu_backward(d_dx, d_dx, d_y, acts[a].alpha, count, 0, g_err,
                                             sizeof g_err);
            check("leaky_relu_backward in place", shape, rc, d_dx, ref, count, TOL_FP32);
        }
    }
    /* the PF_G_RELU node's backward (LeakyReLU's with acc), slopes 0.2 and 0, acc 0 and 1 */
    for (int a = 0; a < 2; a++) {
        float alpha = a ? 0.0f : 0.2f;
        snprintf(shape, sizeof shape, "count %zu alpha %g", count, (double)alpha);
        pf_ref_leaky_relu_forward(y, x, alpha, count);
        set_dev(d_y, y, count * 4);
        for (int acc = 0; acc <= 1; acc++) {
            set_dev(d_dx, prior, count * 4);
            memcpy(ref, prior, count * 4);
            pf_ref_relu_node_backward(ref, dy, y, alpha, count, acc);
            int rc = pf_cuda_relu_node_backward(d_dx, d_dy, d_y, alpha, count, acc, 0, g_err,
                                                sizeof g_err);
            snprintf(op, sizeof op, "relu_node_backward acc=%d", acc);
            check(op, shape, rc, d_dx, ref, count, TOL_FP32);
        }
    }
    free(x), free(dy), free(prior), free(ref), free(y);
    cudaFree(d_x), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx);
}

/* torch.nn.PReLU(C): forward; backward with acc = 0 and 1, dalpha (overwritten: the device
   buffer starts as garbage), dalpha alone (dx NULL), and dalpha's bits on a second run. */
static void check_prelu(int n, int c, int h, int w) {
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, h, w);
    float *x = host_alloc(count * 4), *dy = host_alloc(count * 4), *prior = host_alloc(count * 4);
    float *ref = host_alloc(count * 4), *al = host_alloc(c * 4), *ref_al = host_alloc(c * 4);
    float *junk = host_alloc(c * 4);
    fill(x, count, -1, 1);
    fill(dy, count, -1, 1);
    fill(prior, count, -1, 1);
    fill(al, c, 0.05f, 0.5f);
    fill(junk, c, 100, 200);
    for (size_t i = 0; i < count; i += 13) x[i] = 0.0f; /* x = 0 takes the alpha branch */
    pf_ref_prelu_forward(ref, x, al, n, c, h, w);
    float *d_x = upload(x, count * 4), *d_dy = upload(dy, count * 4), *d_al = upload(al, c * 4);
    float *d_y = dev_alloc(count * 4), *d_dx = dev_alloc(count * 4), *d_dal = dev_alloc(c * 4);
    int rc = pf_cuda_prelu_forward(d_y, d_x, d_al, n, c, h, w, 0, g_err, sizeof g_err);
    check("prelu_forward", shape, rc, d_y, ref, count, TOL_FP32);
    for (int acc = 0; acc <= 1; acc++) {
        set_dev(d_dx, prior, count * 4);
        set_dev(d_dal, junk, c * 4);
        memcpy(ref, prior, count * 4);
        pf_ref_prelu_backward(ref, ref_al, dy, x, al, n, c, h, w, acc);
        rc = pf_cuda_prelu_backward(d_dx, d_dal, d_dy, d_x, d_al, n, c, h, w, acc, 0, g_err,
                                    sizeof g_err);
        snprintf(op, sizeof op, "prelu_backward dx acc=%d", acc);
        check(op, shape, rc, d_dx, ref, count, TOL_FP32);
        snprintf(op, sizeof op, "prelu_backward dalpha acc=%d", acc);
        check(op, shape, rc, d_dal, ref_al, c, TOL_FP32);
    }
    set_dev(d_dal, junk, c * 4);
    rc = pf_cuda_prelu_backward(NULL, d_dal, d_dy, d_x, d_al, n, c, h, w, 0, 0, g_err,
                                sizeof g_err);
    check("prelu_backward dalpha dx=NULL", shape, rc, d_dal, ref_al, c, TOL_FP32);
    float *first = fetch("prelu dalpha deterministic", shape, rc, d_dal, c);
    if (first) {
        rc = pf_cuda_prelu_backward(NULL, d_dal, d_dy, d_x, d_al, n, c, h, w, 0, 0, g_err,
                                    sizeof g_err);
        check_repeat("prelu dalpha deterministic", shape, rc, d_dal, first, c);
        free(first);
    }
    free(x), free(dy), free(prior), free(ref), free(al), free(ref_al), free(junk);
    cudaFree(d_x), cudaFree(d_dy), cudaFree(d_al), cudaFree(d_y), cudaFree(d_dx), cudaFree(d_dal);
}

/* AdaptiveAvgPool2d(1): forward (and its bits on a second run), backward acc = 0 and 1. */
static void check_gap(int n, int c, int h, int w) {
    size_t hw = (size_t)h * w, planes = (size_t)n * c, count = planes * hw;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, h, w);
    float *x = host_alloc(count * 4), *dy = host_alloc(planes * 4), *prior = host_alloc(count * 4);
    float *ref = host_alloc(count * 4);
    fill(x, count, -1, 1);
    fill(dy, planes, -1, 1);
    fill(prior, count, -1, 1);
    pf_ref_gap_forward(ref, x, n, c, h, w);
    float *d_x = upload(x, count * 4), *d_dy = upload(dy, planes * 4);
    float *d_y = dev_alloc(planes * 4), *d_dx = dev_alloc(count * 4);
    int rc = pf_cuda_gap_forward(d_y, d_x, n, c, h, w, 0, g_err, sizeof g_err);
    check("gap_forward", shape, rc, d_y, ref, planes, TOL_FP32);
    float *first = fetch("gap_forward deterministic", shape, rc, d_y, planes);
    if (first) {
        rc = pf_cuda_gap_forward(d_y, d_x, n, c, h, w, 0, g_err, sizeof g_err);
        check_repeat("gap_forward deterministic", shape, rc, d_y, first, planes);
        free(first);
    }
    for (int acc = 0; acc <= 1; acc++) {
        set_dev(d_dx, prior, count * 4);
        memcpy(ref, prior, count * 4);
        pf_ref_gap_backward(ref, dy, n, c, h, w, acc);
        rc = pf_cuda_gap_backward(d_dx, d_dy, n, c, h, w, acc, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "gap_backward acc=%d", acc);
        check(op, shape, rc, d_dx, ref, count, TOL_FP32);
    }
    free(x), free(dy), free(prior), free(ref);
    cudaFree(d_x), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx);
}

/* RCAN's channel-attention multiply y = [res +] sc x s: forward with and without res;
   backward with both gradients (acc 0 / 1), dx alone (ds NULL), ds alone (dx NULL), and ds's
   bits on a second run. */
static void check_mul_ch(int n, int c, int h, int w) {
    size_t hw = (size_t)h * w, planes = (size_t)n * c, count = planes * hw;
    const float sc = 0.7f;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d sc %g", n, c, h, w, (double)sc);
    float *x = host_alloc(count * 4), *s = host_alloc(planes * 4), *res = host_alloc(count * 4);
    float *dy = host_alloc(count * 4), *px = host_alloc(count * 4), *ps = host_alloc(planes * 4);
    float *ref = host_alloc(count * 4), *ref_s = host_alloc(planes * 4);
    fill(x, count, -1, 1);
    fill(s, planes, 0, 1); /* a sigmoid's output */
    fill(res, count, -1, 1);
    fill(dy, count, -1, 1);
    fill(px, count, -1, 1);
    fill(ps, planes, -1, 1);
    float *d_x = upload(x, count * 4), *d_s = upload(s, planes * 4);
    float *d_res = upload(res, count * 4), *d_dy = upload(dy, count * 4);
    float *d_y = dev_alloc(count * 4), *d_dx = dev_alloc(count * 4), *d_ds = dev_alloc(planes * 4);
    for (int with_res = 0; with_res <= 1; with_res++) {
        pf_ref_mul_ch_forward(ref, x, s, with_res ? res : NULL, sc, n, c, h, w);
        int rc = pf_cuda_mul_ch_forward(d_y, d_x, d_s, with_res ? d_res : NULL, sc, n, c, h, w,
                                        0, g_err, sizeof g_err);
        check(with_res ? "mul_ch_forward +res" : "mul_ch_forward", shape, rc, d_y, ref, count,
              TOL_FP32);
    }
    /* (dx?, ds?, acc_x, acc_s) */
    static const int cases[][4] = {{1, 1, 0, 0}, {1, 1, 1, 1}, {1, 0, 1, 0}, {0, 1, 0, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int want_x = cases[k][0], want_s = cases[k][1], acc_x = cases[k][2], acc_s = cases[k][3];
        set_dev(d_dx, px, count * 4);
        set_dev(d_ds, ps, planes * 4);
        memcpy(ref, px, count * 4);
        memcpy(ref_s, ps, planes * 4);
        pf_ref_mul_ch_backward(ref, ref_s, dy, x, s, sc, n, c, h, w, acc_x, acc_s);
        int rc = pf_cuda_mul_ch_backward(want_x ? d_dx : NULL, want_s ? d_ds : NULL, d_dy, d_x,
                                         d_s, sc, n, c, h, w, acc_x, acc_s, 0, g_err,
                                         sizeof g_err);
        const char *which = want_x && want_s ? "" : want_x ? " ds=NULL" : " dx=NULL";
        if (want_x) {
            snprintf(op, sizeof op, "mul_ch_backward dx acc=%d%s", acc_x, which);
            check(op, shape, rc, d_dx, ref, count, TOL_FP32);
        }
        if (want_s) {
            snprintf(op, sizeof op, "mul_ch_backward ds acc=%d%s", acc_s, which);
            check(op, shape, rc, d_ds, ref_s, planes, TOL_FP32);
        }
    }
    int rc = pf_cuda_mul_ch_backward(NULL, d_ds, d_dy, d_x, d_s, sc, n, c, h, w, 0, 0, 0, g_err,
                                     sizeof g_err);
    float *first = fetch("mul_ch ds deterministic", shape, rc, d_ds, planes);
    if (first) {
        rc = pf_cuda_mul_ch_backward(NULL, d_ds, d_dy, d_x, d_s, sc, n, c, h, w, 0, 0, 0, g_err,
                                     sizeof g_err);
        check_repeat("mul_ch ds deterministic", shape, rc, d_ds, first, planes);
        free(first);
    }
    free(x), free(s), free(res), free(dy), free(px), free(ps), free(ref), free(ref_s);
    cudaFree(d_x), cudaFree(d_s), cudaFree(d_res), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx);
    cudaFree(d_ds);
}

/* torch.cat's slice copy: channels [src_off, src_off + cc) of a src_c-channel tensor onto
   channels [dst_off, dst_off + cc) of a dst_c-channel one, acc = 0 and 1; the rest of dst
   must stay as it was. */
static void check_copy_channels(int n, int h, int w) {
    const int src_c = 7, src_off = 2, dst_c = 9, dst_off = 3, cc = 4;
    size_t hw = (size_t)h * w, ns = (size_t)n * src_c * hw, nd = (size_t)n * dst_c * hw;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d[%d:%d]->C%d[%d:%d] H%d W%d", n, src_c, src_off,
             src_off + cc, dst_c, dst_off, dst_off + cc, h, w);
    float *src = host_alloc(ns * 4), *prior = host_alloc(nd * 4), *ref = host_alloc(nd * 4);
    fill(src, ns, -1, 1);
    fill(prior, nd, -1, 1);
    float *d_src = upload(src, ns * 4), *d_dst = dev_alloc(nd * 4);
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, prior, nd * 4);
        pf_ref_copy_channels(ref, dst_c, dst_off, src, src_c, src_off, cc, n, (int)hw, acc);
        set_dev(d_dst, prior, nd * 4);
        int rc = pf_cuda_copy_channels(d_dst, dst_c, dst_off, d_src, src_c, src_off, cc, n,
                                       (int)hw, acc, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "copy_channels acc=%d", acc);
        check(op, shape, rc, d_dst, ref, nd, TOL_FP32);
    }
    free(src), free(prior), free(ref);
    cudaFree(d_src), cudaFree(d_dst);
}

/* F.interpolate(mode='nearest', scale_factor=r): forward, backward acc = 0 and 1. */
static void check_nearest(int n, int c, int h, int w, int r) {
    int H = h * r, W = w * r;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * H * W;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d r%d", n, c, h, w, r);
    float *x = host_alloc(nx * 4), *dy = host_alloc(ny * 4), *prior = host_alloc(nx * 4);
    float *ref = host_alloc(ny * 4);
    fill(x, nx, -1, 1);
    fill(dy, ny, -1, 1);
    fill(prior, nx, -1, 1);
    pf_ref_nearest_forward(ref, x, n, c, h, w, r);
    float *d_x = upload(x, nx * 4), *d_dy = upload(dy, ny * 4);
    float *d_y = dev_alloc(ny * 4), *d_dx = dev_alloc(nx * 4);
    int rc = pf_cuda_nearest_forward(d_y, d_x, n, c, h, w, r, 0, g_err, sizeof g_err);
    check("nearest_forward", shape, rc, d_y, ref, ny, TOL_FP32);
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, prior, nx * 4);
        pf_ref_nearest_backward(ref, dy, n, c, h, w, r, acc);
        set_dev(d_dx, prior, nx * 4);
        rc = pf_cuda_nearest_backward(d_dx, d_dy, n, c, h, w, r, acc, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "nearest_backward acc=%d", acc);
        check(op, shape, rc, d_dx, ref, nx, TOL_FP32);
    }
    free(x), free(dy), free(prior), free(ref);
    cudaFree(d_x), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_dx);
}

/* F.interpolate(lq / 255, scale_factor=r, align_corners=False), bilinear and bicubic, from an
   NHWC uint8 batch, in double: ATen's source coordinate (dst + 0.5) / r - 0.5 (bilinear clamps
   it at 0 and the far tap at the last pixel; bicubic clamps its 4 taps to the image). */
static void check_upsample_u8(int n, int h, int w, int r) {
    int H = h * r, W = w * r;
    size_t nin = (size_t)n * h * w * 3, nout = (size_t)n * 3 * H * W;
    char shape[64];
    snprintf(shape, sizeof shape, "N%d LQ%dx%d x3 r%d", n, h, w, r);
    uint8_t *lq = host_alloc(nin);
    for (size_t i = 0; i < nin; i++) lq[i] = (uint8_t)(next_u64() & 255);
    float *bil = host_alloc(nout * 4), *bic = host_alloc(nout * 4);
    pf_ref_bilinear_u8(bil, lq, n, h, w, r);
    pf_ref_bicubic_u8(bic, lq, n, h, w, r);
    uint8_t *d_lq = upload(lq, nin);
    float *d_y = dev_alloc(nout * 4);
    int rc = pf_cuda_bilinear_u8(d_y, d_lq, n, h, w, r, 0, g_err, sizeof g_err);
    check("bilinear_u8", shape, rc, d_y, bil, nout, TOL_FP32);
    rc = pf_cuda_bicubic_u8(d_y, d_lq, n, h, w, r, 0, g_err, sizeof g_err);
    check("bicubic_u8", shape, rc, d_y, bic, nout, TOL_FP32);
    free(lq), free(bil), free(bic);
    cudaFree(d_lq), cudaFree(d_y);
}

/* dst[i] = sum of src at idx[i per ..], a quarter of the indices -1 (no tap). */
static void check_gather_sum(size_t count, int per) {
    const size_t nsrc = 1013;
    size_t nidx = count * (size_t)per;
    char shape[64];
    snprintf(shape, sizeof shape, "count %zu per %d src %zu", count, per, nsrc);
    float *src = host_alloc(nsrc * 4), *ref = host_alloc(count * 4);
    int *idx = host_alloc(nidx * sizeof(int));
    fill(src, nsrc, -1, 1);
    for (size_t k = 0; k < nidx; k++) idx[k] = next_u64() % 4 ? (int)(next_u64() % nsrc) : -1;
    pf_ref_gather_sum(ref, src, idx, count, per);
    float *d_src = upload(src, nsrc * 4), *d_dst = dev_alloc(count * 4);
    int *d_idx = upload(idx, nidx * sizeof(int));
    int rc = pf_cuda_gather_sum(d_dst, d_src, d_idx, count, per, 0, g_err, sizeof g_err);
    check("gather_sum", shape, rc, d_dst, ref, count, TOL_FP32);
    free(src), free(ref), free(idx);
    cudaFree(d_src), cudaFree(d_dst), cudaFree(d_idx);
}

/* The argument errors the contracts promise, and count 0 as a no-op (NULL pointers then). */
static void check_graph_op_args(void) {
    float v = 1.0f, *f = &v;
    char *e = g_err;
    size_t el = sizeof g_err;
    struct {
        const char *what;
        int rc, want;
    } cases[] = {
        {"nearest r=0", pf_cuda_nearest_forward(f, f, 1, 1, 1, 1, 0, 0, e, el), -1},
        {"bicubic n<0", pf_cuda_bicubic_u8(f, NULL, -1, 1, 1, 2, 0, e, el), -1},
        {"copy slice out of range", pf_cuda_copy_channels(f, 4, 2, f, 4, 0, 3, 1, 1, 0, 0, e, el),
         -1},
        {"gather per=0", pf_cuda_gather_sum(f, f, NULL, 1, 0, 0, e, el), -1},
        {"leaky alpha<0", pf_cuda_leaky_relu_forward(f, f, -0.1f, 1, 0, e, el), -1},
        {"prelu dalpha NULL", pf_cuda_prelu_backward(NULL, NULL, f, f, f, 1, 1, 1, 1, 0, 0, e, el),
         -1},
        {"gap empty plane", pf_cuda_gap_forward(f, f, 1, 1, 0, 3, 0, e, el), -1},
        {"batchnorm train N H W = 1",
         pf_cuda_batchnorm_train_forward(f, f, f, f, f, NULL, 1, 1, 1, 1, 1e-5, 0.1, 0, e, el),
         -1},
        {"tanh count 0", pf_cuda_tanh_forward(NULL, NULL, 0, 0, e, el), 0},
        {"mul_ch n=0", pf_cuda_mul_ch_forward(NULL, NULL, NULL, NULL, 1, 0, 4, 4, 4, 0, e, el), 0},
        {"gather count 0", pf_cuda_gather_sum(NULL, NULL, NULL, 0, 2, 0, e, el), 0},
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (cases[i].rc != cases[i].want) {
            printf("# graph op args: %s returned %d, expected %d\n", cases[i].what, cases[i].rc,
                   cases[i].want);
            wrong++;
        }
    char shape[64];
    snprintf(shape, sizeof shape, "%zu cases", sizeof cases / sizeof *cases);
    report("graph ops bad args / no-ops", shape, wrong ? INFINITY : 0.0, 0.0);
}

/* ---- modulated deformable convolution (nn/cuda/dcn_cuda.h, ops.h pf_cuda_dcn_*) ---------- */

/* Offsets that reach every case of the sampling: integers (taps exactly on pixels, on the -1
   row / column whose value is 0 and slope is not, and on H / W), fractions, and far outside
   the image; masks a fifth exactly 0. */
static void fill_dcn_inputs(float *off, size_t noff, float *mask, size_t nmask, int h) {
    for (size_t i = 0; i < noff; i++) {
        int kind = (int)(next_u64() % 6);
        off[i] = kind < 2 ? (float)((int)(next_u64() % 7) - 3)
                 : kind < 4 ? uniform(-2.0f, 2.0f)
                 : kind == 4 ? uniform(-1.0f, 1.0f) + (next_u64() & 1 ? h + 3 : -h - 3)
                             : uniform(-0.5f, 0.5f);
    }
    for (size_t i = 0; i < nmask; i++) mask[i] = next_u64() % 5 ? uniform(0.0f, 1.0f) : 0.0f;
}

typedef struct {
    int n, cin, h, w, cout, k, stride, pad, dil, groups, dg;
} dcn_case;

/* out = weight x columns + bias, and its backward products, in double (the contraction the
   layer hands to cuBLAS), on ref_ops.c's columns. */
static void ref_dcn_gemm(const dcn_case *c, const pf_ref_dcn *r, const float *col,
                         const float *wt, const float *bias, const float *dy, float *out,
                         float *dw, float *db, float *dcol) {
    int kk = c->k * c->k, M = c->cout / c->groups, K = c->cin / c->groups * kk;
    size_t P = (size_t)r->ho * r->wo, NP = (size_t)c->n * P;
    for (int g = 0; g < c->groups; g++)
        for (int m = 0; m < M; m++) {
            int o = g * M + m;
            double sb = 0;
            for (int kx = 0; kx < K; kx++) {
                double sw = 0;
                for (size_t j = 0; j < NP; j++)
                    sw += (double)dy[((j / P) * c->cout + o) * P + j % P] *
                          col[((size_t)g * K + kx) * NP + j];
                dw[(size_t)o * K + kx] = (float)sw;
            }
            for (size_t j = 0; j < NP; j++) {
                double so = bias[o];
                for (int kx = 0; kx < K; kx++)
                    so += (double)wt[(size_t)o * K + kx] * col[((size_t)g * K + kx) * NP + j];
                out[((j / P) * c->cout + o) * P + j % P] = (float)so;
                sb += dy[((j / P) * c->cout + o) * P + j % P];
            }
            db[o] = (float)sb;
        }
    for (int g = 0; g < c->groups; g++)
        for (int kx = 0; kx < K; kx++)
            for (size_t j = 0; j < NP; j++) {
                double sc = 0;
                for (int m = 0; m < M; m++)
                    sc += (double)wt[(size_t)(g * M + m) * K + kx] *
                          dy[((j / P) * c->cout + g * M + m) * P + j % P];
                dcol[((size_t)g * K + kx) * NP + j] = (float)sc;
            }
}

/* The sampling kernels against ref_ops.c (forward; backward to x, offset, mask with acc 0 and
   1; x's fixed-point gradient twice for the same bits), then the layer with cuBLAS against
   the double contraction of the reference columns. */
static void check_dcn(const dcn_case *c) {
    pf_cudcn l;
    if (pf_cudcn_init(&l, "dcn", c->n, c->cin, c->h, c->w, c->cout, c->k, c->stride, c->pad,
                      c->dil, c->groups, c->dg, g_err, sizeof g_err)) {
        report_error("dcn init", "", g_err);
        return;
    }
    const pf_cuda_dcn_shape *s = &l.s;
    pf_ref_dcn r = { s->n, s->cin, s->h, s->w, s->k, s->stride, s->pad, s->dil, s->dg, s->ho,
                     s->wo };
    int kk = c->k * c->k;
    size_t P = (size_t)s->ho * s->wo, nx = (size_t)c->n * c->cin * c->h * c->w;
    size_t nmask = (size_t)c->n * c->dg * kk * P, noff = 2 * nmask, ncol = pf_cudcn_col_floats(&l);
    size_t nout = (size_t)c->n * c->cout * P, nw = (size_t)c->cout * (c->cin / c->groups) * kk;
    char shape[96];
    snprintf(shape, sizeof shape, "%dx%dx%dx%d->%d s%d d%d g%d dg%d", c->n, c->cin, c->h, c->w,
             c->cout, c->stride, c->dil, c->groups, c->dg);
    float *x = host_alloc(nx * 4), *off = host_alloc(noff * 4), *mask = host_alloc(nmask * 4);
    float *col = host_alloc(ncol * 4), *dcol = host_alloc(ncol * 4), *wt = host_alloc(nw * 4);
    float *bias = host_alloc(c->cout * 4), *dy = host_alloc(nout * 4), *out = host_alloc(nout * 4);
    float *dw = host_alloc(nw * 4), *db = host_alloc(c->cout * 4), *rx = host_alloc(nx * 4);
    float *roff = host_alloc(noff * 4), *rmask = host_alloc(nmask * 4);
    float *px = host_alloc(nx * 4), *poff = host_alloc(noff * 4), *pmask = host_alloc(nmask * 4);
    fill(x, nx, -1, 1), fill(wt, nw, -0.5f, 0.5f), fill(bias, c->cout, -1, 1);
    fill(dy, nout, -1, 1), fill(px, nx, -1, 1), fill(poff, noff, -1, 1), fill(pmask, nmask, -1, 1);
    fill_dcn_inputs(off, noff, mask, nmask, c->h);
    pf_ref_dcn_columns(&r, col, x, off, mask);
    ref_dcn_gemm(c, &r, col, wt, bias, dy, out, dw, db, dcol);
    float *d_x = upload(x, nx * 4), *d_off = upload(off, noff * 4), *d_m = upload(mask, nmask * 4);
    float *d_col = dev_alloc(ncol * 4), *d_dcol = dev_alloc(ncol * 4), *d_w = upload(wt, nw * 4);
    float *d_b = upload(bias, c->cout * 4), *d_dy = upload(dy, nout * 4);
    float *d_out = dev_alloc(nout * 4);
    float *d_dw = dev_alloc(nw * 4), *d_db = dev_alloc(c->cout * 4), *d_dx = dev_alloc(nx * 4);
    float *d_doff = dev_alloc(noff * 4), *d_dm = dev_alloc(nmask * 4);
    void *scratch = dev_alloc(pf_cuda_dcn_scratch_bytes(s));
    check("dcn columns", shape, pf_cuda_dcn_columns(d_col, d_x, d_off, d_m, s, 0, g_err,
                                                     sizeof g_err), d_col, col, ncol, TOL_FP32);
    float *first = NULL;
    for (int acc = 0; acc < 2; acc++) {
        memcpy(rx, px, nx * 4), memcpy(roff, poff, noff * 4), memcpy(rmask, pmask, nmask * 4);
        pf_ref_dcn_columns_backward(&r, rx, roff, rmask, dcol, x, off, mask, acc);
        set_dev(d_dx, px, nx * 4), set_dev(d_doff, poff, noff * 4), set_dev(d_dm, pmask, nmask * 4);
        set_dev(d_dcol, dcol, ncol * 4);
        int rc = pf_cuda_dcn_columns_backward(d_dx, d_doff, d_dm, d_dcol, d_x, d_off, d_m, s, acc,
                                              acc, acc, scratch, 0, g_err, sizeof g_err);
        char op[64];
        snprintf(op, sizeof op, "dcn backward dx acc=%d", acc);
        check(op, shape, rc, d_dx, rx, nx, TOL_FP32);
        snprintf(op, sizeof op, "dcn backward doffset acc=%d", acc);
        check(op, shape, rc, d_doff, roff, noff, TOL_FP32);
        snprintf(op, sizeof op, "dcn backward dmask acc=%d", acc);
        check(op, shape, rc, d_dm, rmask, nmask, TOL_FP32);
        if (!acc) first = fetch("dcn backward dx (repeat)", shape, rc, d_dx, nx);
    }
    if (first) {
        set_dev(d_dcol, dcol, ncol * 4);
        int rc = pf_cuda_dcn_columns_backward(d_dx, NULL, NULL, d_dcol, d_x, d_off, d_m, s, 0, 0,
                                              0, scratch, 0, g_err, sizeof g_err);
        check_repeat("dcn backward dx same bits", shape, rc, d_dx, first, nx);
        free(first);
    }
    /* the layer: cuBLAS's contraction; weight and bias gradients are added to (zeroed here) */
    cublasHandle_t blas = NULL;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        report_error("dcn layer", shape, "cublasCreate failed");
    } else {
        check("dcn layer forward", shape,
              pf_cudcn_forward(&l, blas, 0, d_w, d_b, d_x, d_off, d_m, d_out, d_col, g_err,
                               sizeof g_err), d_out, out, nout, TOL_FP32);
        memcpy(rx, px, nx * 4), memcpy(roff, poff, noff * 4), memcpy(rmask, pmask, nmask * 4);
        pf_ref_dcn_columns_backward(&r, rx, roff, rmask, dcol, x, off, mask, 1);
        cudaMemset(d_dw, 0, nw * 4), cudaMemset(d_db, 0, c->cout * 4);
        set_dev(d_dx, px, nx * 4), set_dev(d_doff, poff, noff * 4), set_dev(d_dm, pmask, nmask * 4);
        int rc = pf_cudcn_backward(&l, blas, 0, d_w, d_dw, d_db, d_dy, d_x, d_off, d_m, d_dx,
                                   d_doff, d_dm, 1, 1, 1, d_col, d_dcol, scratch, g_err,
                                   sizeof g_err);
        check("dcn layer dweight", shape, rc, d_dw, dw, nw, TOL_FP32);
        check("dcn layer dbias", shape, rc, d_db, db, c->cout, TOL_FP32);
        check("dcn layer dx", shape, rc, d_dx, rx, nx, TOL_FP32);
        check("dcn layer doffset", shape, rc, d_doff, roff, noff, TOL_FP32);
        check("dcn layer dmask", shape, rc, d_dm, rmask, nmask, TOL_FP32);
        cublasDestroy(blas);
    }
    float *hf[] = { x, off, mask, col, dcol, wt, bias, dy, out, dw, db, rx, roff, rmask, px,
                    poff, pmask };
    for (size_t i = 0; i < sizeof hf / sizeof *hf; i++) free(hf[i]);
    float *df[] = { d_x, d_off, d_m, d_col, d_dcol, d_w, d_b, d_dy, d_out, d_dw, d_db, d_dx,
                    d_doff, d_dm };
    for (size_t i = 0; i < sizeof df / sizeof *df; i++) cudaFree(df[i]);
    cudaFree(scratch);
}

/* deform_groups 1 / 2 / 4, groups 1 / 2, stride 1 / 2, dilation 1 / 2, batch 1 / 2 */
static void check_dcns(void) {
    static const dcn_case cases[] = {
        {2, 4, 7, 9, 6, 3, 1, 1, 1, 1, 1},
        {1, 8, 9, 8, 4, 3, 2, 1, 1, 2, 2},
        {2, 8, 6, 7, 8, 3, 1, 2, 2, 1, 4},
        {1, 4, 8, 8, 4, 3, 2, 1, 1, 1, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_dcn(&cases[i]);
}

/* Spectral normalisation of a rows x cols weight (pf_cuda_sn_*): a training forward (the
   normalised weight, u, v, sigma; its bits again from the same u), an eval forward, and the
   backward in place (d weight_orig written over d weight), against ref_ops.c. */
static void check_sn(int rows, int cols) {
    size_t nw = (size_t)rows * cols;
    char shape[64];
    snprintf(shape, sizeof shape, "%d x %d", rows, cols);
    float *w = host_alloc(nw * 4), *dw = host_alloc(nw * 4), *ref = host_alloc(nw * 4);
    float *u = host_alloc(rows * 4), *v = host_alloc(cols * 4), sigma = 0;
    fill(w, nw, -1, 1);
    fill(dw, nw, -1, 1);
    fill(u, rows, -1, 1);
    fill(v, cols, -1, 1);
    float *d_w = upload(w, nw * 4), *d_u = upload(u, rows * 4), *d_v = upload(v, cols * 4);
    float *d_dw = upload(dw, nw * 4), *d_eff = dev_alloc(nw * 4), *d_sigma = dev_alloc(4);
    double *d_scratch = dev_alloc(PF_CUDA_SN_SCRATCH(rows) * sizeof(double));
    pf_ref_sn_forward(ref, u, v, &sigma, w, rows, cols, 1e-12f, 1);
    int rc = pf_cuda_sn_forward(d_eff, d_u, d_v, d_sigma, d_w, rows, cols, 1e-12f, 1, d_scratch,
                                0, g_err, sizeof g_err);
    check("sn_forward weight", shape, rc, d_eff, ref, nw, TOL_FP32);
    check("sn_forward u", shape, rc, d_u, u, rows, TOL_FP32);
    check("sn_forward v", shape, rc, d_v, v, cols, TOL_FP32);
    check("sn_forward sigma", shape, rc, d_sigma, &sigma, 1, TOL_FP32);
    float *first = fetch("sn_forward deterministic", shape, rc, d_eff, nw);
    if (first) {    /* from the same u and v: the forward's u and v as inputs again */
        float *u0 = fetch("sn_forward deterministic", shape, rc, d_u, rows);
        if (u0) {
            rc = pf_cuda_sn_forward(d_eff, d_u, d_v, d_sigma, d_w, rows, cols, 1e-12f, 0,
                                    d_scratch, 0, g_err, sizeof g_err);
            check_repeat("sn_forward eval same bits", shape, rc, d_eff, first, nw);
            check_repeat("sn_forward eval keeps u", shape, rc, d_u, u0, rows);
            free(u0);
        }
        free(first);
    }
    pf_ref_sn_backward(ref, dw, w, u, v, &sigma, rows, cols);
    rc = pf_cuda_sn_backward(d_dw, d_dw, d_w, d_u, d_v, d_sigma, rows, cols, d_scratch, 0,
                             g_err, sizeof g_err);
    check("sn_backward in place", shape, rc, d_dw, ref, nw, TOL_FP32);
    free(w), free(dw), free(ref), free(u), free(v);
    cudaFree(d_w), cudaFree(d_u), cudaFree(d_v), cudaFree(d_dw), cudaFree(d_eff);
    cudaFree(d_sigma), cudaFree(d_scratch);
}

/* torch.nn.BatchNorm2d (ops.h pf_cuda_batchnorm_*) against ref_ops.c: the training forward
   (y, the batch statistics kept for backward, the running statistics after two updates), the
   eval forward, backward with acc = 0 and 1 (dweight, dbias overwritten over garbage), dx
   alone, and dweight's and dx's bits on a second run. x has an offset per channel (mean far
   from 0: the two-pass variance). */
static void check_batchnorm(int n, int c, int h, int w) {
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw, c2 = 2 * (size_t)c;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, h, w);
    float *x = host_alloc(count * 4), *dy = host_alloc(count * 4), *prior = host_alloc(count * 4);
    float *ref = host_alloc(count * 4), *wt = host_alloc(c * 4), *bi = host_alloc(c * 4);
    float *run = host_alloc(c2 * 4), *ref_dw = host_alloc(c * 4), *ref_db = host_alloc(c * 4);
    float *junk = host_alloc(c * 4);
    double *save = host_alloc(c2 * sizeof(double));
    fill(x, count, -1, 1);
    for (size_t i = 0; i < count; i++) x[i] += (float)((i / hw) % (size_t)c) - 2.0f;
    fill(dy, count, -1, 1);
    fill(prior, count, -1, 1);
    fill(wt, c, 0.5f, 1.5f);
    fill(bi, c, -0.5f, 0.5f);
    fill(junk, c, 100, 200);
    for (int i = 0; i < c; i++) run[i] = 0.0f, run[c + i] = 1.0f;
    float *d_x = upload(x, count * 4), *d_dy = upload(dy, count * 4), *d_w = upload(wt, c * 4);
    float *d_b = upload(bi, c * 4), *d_run = upload(run, c2 * 4), *d_y = dev_alloc(count * 4);
    float *d_dx = dev_alloc(count * 4), *d_dw = dev_alloc(c * 4), *d_db = dev_alloc(c * 4);
    double *d_save = dev_alloc(c2 * sizeof(double));
    int rc = 0;
    for (int step = 0; step < 2 && !rc; step++) {   /* the running statistics update twice */
        pf_ref_batchnorm_train(ref, x, wt, bi, run, save, n, c, h, w, PF_BN_EPS, PF_BN_MOMENTUM);
        rc = pf_cuda_batchnorm_train_forward(d_y, d_x, d_w, d_b, d_run, d_save, n, c, h, w,
                                             PF_BN_EPS, PF_BN_MOMENTUM, 0, g_err, sizeof g_err);
    }
    check("batchnorm train_forward", shape, rc, d_y, ref, count, TOL_FP32);
    check("batchnorm running stats", shape, rc, d_run, run, c2, TOL_FP32);
    pf_ref_batchnorm_eval(ref, x, wt, bi, run, n, c, h, w, PF_BN_EPS);
    rc = pf_cuda_batchnorm_eval_forward(d_y, d_x, d_w, d_b, d_run, n, c, h, w, PF_BN_EPS, 0,
                                        g_err, sizeof g_err);
    check("batchnorm eval_forward", shape, rc, d_y, ref, count, TOL_FP32);
    for (int acc = 0; acc <= 1; acc++) {
        set_dev(d_dx, prior, count * 4);
        set_dev(d_dw, junk, c * 4);
        set_dev(d_db, junk, c * 4);
        memcpy(ref, prior, count * 4);
        pf_ref_batchnorm_backward(ref, ref_dw, ref_db, dy, x, wt, save, n, c, h, w, acc);
        rc = pf_cuda_batchnorm_backward(d_dx, d_dw, d_db, d_dy, d_x, d_w, d_save, n, c, h, w,
                                        acc, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "batchnorm backward dx acc=%d", acc);
        check(op, shape, rc, d_dx, ref, count, TOL_FP32);
        snprintf(op, sizeof op, "batchnorm backward dw acc=%d", acc);
        check(op, shape, rc, d_dw, ref_dw, c, TOL_FP32);
        snprintf(op, sizeof op, "batchnorm backward db acc=%d", acc);
        check(op, shape, rc, d_db, ref_db, c, TOL_FP32);
    }
    pf_ref_batchnorm_backward(ref, NULL, NULL, dy, x, wt, save, n, c, h, w, 0);
    rc = pf_cuda_batchnorm_backward(d_dx, NULL, NULL, d_dy, d_x, d_w, d_save, n, c, h, w, 0, 0,
                                    g_err, sizeof g_err);
    check("batchnorm backward dx only", shape, rc, d_dx, ref, count, TOL_FP32);
    float *first = fetch("batchnorm same bits", shape, rc, d_dx, count);
    float *first_w = fetch("batchnorm same bits", shape, rc, d_dw, c);
    if (first && first_w) {
        rc = pf_cuda_batchnorm_backward(d_dx, d_dw, d_db, d_dy, d_x, d_w, d_save, n, c, h, w,
                                        0, 0, g_err, sizeof g_err);
        check_repeat("batchnorm dx same bits", shape, rc, d_dx, first, count);
        check_repeat("batchnorm dw same bits", shape, rc, d_dw, first_w, c);
    }
    free(first), free(first_w);
    free(x), free(dy), free(prior), free(ref), free(wt), free(bi), free(run), free(ref_dw);
    free(ref_db), free(junk), free(save);
    float *df[] = { d_x, d_dy, d_w, d_b, d_run, d_y, d_dx, d_dw, d_db };
    for (size_t i = 0; i < sizeof df / sizeof *df; i++) cudaFree(df[i]);
    cudaFree(d_save);
}

/* torch.nn.Linear (nn/cuda/linear_cuda.h, cuBLAS SGEMMs) against ref_ops.c: forward, backward
   with acc = 0 and 1 (dweight, dbias overwritten over garbage), then dx alone with acc = 1
   (dweight, dbias NULL: left as they were). */
static void check_linear(int n, int in, int out) {
    size_t nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)out * in;
    char shape[64], op[64];
    snprintf(shape, sizeof shape, "N%d in%d out%d", n, in, out);
    float *x = host_alloc(nx * 4), *wt = host_alloc(nw * 4), *bi = host_alloc(out * 4);
    float *dy = host_alloc(ny * 4), *prior = host_alloc(nx * 4), *ref = host_alloc(nx * 4);
    float *ref_y = host_alloc(ny * 4), *ref_dw = host_alloc(nw * 4), *ref_db = host_alloc(out * 4);
    float *junk = host_alloc(nw * 4);
    fill(x, nx, -1, 1);
    fill(wt, nw, -0.5f, 0.5f);
    fill(bi, out, -0.5f, 0.5f);
    fill(dy, ny, -1, 1);
    fill(prior, nx, -1, 1);
    fill(junk, nw, 100, 200);
    float *d_x = upload(x, nx * 4), *d_w = upload(wt, nw * 4), *d_b = upload(bi, out * 4);
    float *d_dy = upload(dy, ny * 4), *d_y = dev_alloc(ny * 4), *d_dx = dev_alloc(nx * 4);
    float *d_dw = dev_alloc(nw * 4), *d_db = dev_alloc(out * 4);
    cublasHandle_t blas = NULL;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        report_error("linear", shape, "cublasCreate failed");
    } else {
        pf_ref_linear_forward(ref_y, x, wt, bi, n, in, out);
        check("linear forward", shape,
              pf_culinear_forward(blas, 0, "linear", n, in, out, d_w, d_b, d_x, d_y, g_err,
                                  sizeof g_err), d_y, ref_y, ny, TOL_FP32);
        for (int acc = 0; acc <= 1; acc++) {
            set_dev(d_dx, prior, nx * 4);
            set_dev(d_dw, junk, nw * 4);
            set_dev(d_db, junk, out * 4);
            memcpy(ref, prior, nx * 4);
            pf_ref_linear_backward(ref, ref_dw, ref_db, dy, x, wt, n, in, out, acc);
            int rc = pf_culinear_backward(blas, 0, "linear", n, in, out, d_w, d_x, d_dy, d_dw,
                                          d_db, d_dx, acc, g_err, sizeof g_err);
            snprintf(op, sizeof op, "linear backward dx acc=%d", acc);
            check(op, shape, rc, d_dx, ref, nx, TOL_FP32);
            snprintf(op, sizeof op, "linear backward dw acc=%d", acc);
            check(op, shape, rc, d_dw, ref_dw, nw, TOL_FP32);
            snprintf(op, sizeof op, "linear backward db acc=%d", acc);
            check(op, shape, rc, d_db, ref_db, out, TOL_FP32);
        }
        set_dev(d_dx, prior, nx * 4);
        float *kept = fetch("linear dw kept (NULL)", shape, 0, d_dw, nw);
        int rc = pf_culinear_backward(blas, 0, "linear", n, in, out, d_w, d_x, d_dy, NULL, NULL,
                                      d_dx, 1, g_err, sizeof g_err);   /* ref: acc = 1's */
        check("linear backward dx only", shape, rc, d_dx, ref, nx, TOL_FP32);
        if (kept) check_repeat("linear dw kept (NULL)", shape, rc, d_dw, kept, nw);
        free(kept);
        cublasDestroy(blas);
    }
    free(x), free(wt), free(bi), free(dy), free(prior), free(ref), free(ref_y), free(ref_dw);
    free(ref_db), free(junk);
    float *df[] = { d_x, d_w, d_b, d_dy, d_y, d_dx, d_dw, d_db };
    for (size_t i = 0; i < sizeof df / sizeof *df; i++) cudaFree(df[i]);
}

static void check_graph_ops(void) {
    check_activations();
    check_prelu(2, 5, 7, 9);
    check_prelu(2, 3, 37, 41); /* > THREADS elements per channel */
    check_gap(2, 5, 7, 9);
    check_gap(2, 3, 37, 41);
    check_mul_ch(2, 5, 7, 9);
    check_mul_ch(2, 3, 37, 41);
    check_copy_channels(2, 7, 9);
    check_nearest(2, 5, 7, 9, 2);
    check_nearest(2, 5, 7, 9, 3);
    check_upsample_u8(2, 7, 9, 2);
    check_upsample_u8(2, 7, 9, 3);
    check_upsample_u8(1, 5, 11, 4);
    check_gather_sum(517, 1);
    check_gather_sum(517, 4);
    check_batchnorm(2, 5, 7, 9);
    check_batchnorm(3, 3, 13, 11);  /* > THREADS elements per channel */
    check_batchnorm(4, 6, 1, 1);    /* after a Linear: one pixel, M = N */
    check_linear(3, 8 * 4 * 5, 7);
    check_linear(2, 300, 1);        /* VGG's last layer: one logit */
    check_graph_op_args();
    check_dcns();
    check_sn(16, 288);
    check_sn(300, 37);  /* rows past THREADS */
}

/* ---- networks on the GPU (nn/cuda/model_cuda) vs the CPU model (nn/model) ------------------ */

#ifdef PIXFLOW_HAVE_CUDA

static void edsr_cfg(pf_config *c, int scale, int n_feats, int n_blocks, float res_scale,
                     const char *loss) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, "EDSR");
    c->scale = scale;
    c->in_channels = c->out_channels = 3;
    c->n_feats = n_feats;
    c->n_blocks = n_blocks;
    c->res_scale = res_scale;
    c->rgb_mean[0] = 0.4488f; /* BasicSR's DIV2K mean, img_range 255: the real settings */
    c->rgb_mean[1] = 0.4371f;
    c->rgb_mean[2] = 0.4040f;
    c->img_range = 255.0f;
    strcpy(c->loss_type, loss);
    c->loss_weight = 1.0f;
    c->charbonnier_eps = 1e-12f;
}

/* A network of the zoo (nn/zoo.c) or SRCNN, small: the config's defaults, then the type's
   hyper-parameters from `hp`: MSRResNet n_feats n_blocks; RCAN n_feats n_blocks num_group
   squeeze_factor; RRDBNet n_feats n_blocks num_grow_ch; FSRCNN d s m; SRCNN c1 c2; ESPCN
   none; the video networks as tests/cuda_host/net_cases.h's pf_net_case_video. */
static void zoo_cfg(pf_config *c, const char *type, int scale, const char *loss,
                    const int hp[4]) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", type);
    snprintf(c->loss_type, sizeof c->loss_type, "%s", loss);
    c->scale = scale;
    if (pf_net_case_video(c, type, hp)) return;
    if (!strcmp(type, "MSRResNet") || !strcmp(type, "RCAN") || !strcmp(type, "RRDBNet")) {
        c->n_feats = hp[0];
        c->n_blocks = hp[1];
    }
    if (!strcmp(type, "RCAN")) {
        c->num_group = hp[2];
        c->squeeze_factor = hp[3];
    } else if (!strcmp(type, "RRDBNet")) {
        c->num_grow_ch = hp[2];
    } else if (!strcmp(type, "FSRCNN")) {
        c->fsrcnn_d = hp[0];
        c->fsrcnn_s = hp[1];
        c->fsrcnn_m = hp[2];
    } else if (!strcmp(type, "SRCNN")) {
        c->srcnn_channels[1] = hp[0];
        c->srcnn_channels[2] = hp[1];
    }
}

static void random_u8(uint8_t *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(next_u64() & 255);
}

/* Worst per-tensor max_rel_err over the flat buffers; *worst_name gets that tensor's name. */
static double worst_tensor_err(const pf_model *cpu, const float *got, const float *ref,
                               const char **worst_name) {
    double worst = 0.0;
    *worst_name = "";
    for (int i = 0; i < pf_model_num_tensors(cpu); i++) {
        const pf_param_info *t = pf_model_tensor_info(cpu, i);
        double e = max_rel_err(got + t->offset, ref + t->offset, t->numel);
        if (!(e <= worst)) {
            worst = e;
            *worst_name = t->name;
        }
    }
    return worst;
}

/* One EDSR config, one math mode (math: 0 fp32, 1 tf32, 2 bf16 mixed precision by
   pf_cuda_model_set_precision, against the CPU model in fp32): build both models with the
   same seeded weights, one train step on the same random batch, compare loss, every gradient
   tensor and inference; then 3 Adam steps (a new batch each) and compare the parameters. */
static void check_network(const char *label, const pf_config *cfg, int n, int h, int w,
                          int math) {
    int tf32 = math == 1;
    const char *mode = math == 2 ? "bf16" : tf32 ? "tf32" : "fp32";
    const double tol = math ? TOL_LOW : TOL_FP32;
    char shape[96], op[128];
    snprintf(shape, sizeof shape, "%s %s N%d LQ%dx%d %s", label, mode, n, h, w,
             cfg->loss_type);
    int s = cfg->scale, H = h * s, W = w * s;
    pf_model *cpu = pf_model_new(cfg, g_err, sizeof g_err);
    if (!cpu) {
        report_error("net cpu model", shape, g_err);
        return;
    }
    pf_model_init(cpu, 20240601);
    pf_cuda_model *gpu = pf_cuda_model_new(cfg, 0, tf32, g_err, sizeof g_err);
    if (gpu && math == 2 &&
        pf_cuda_model_set_precision(gpu, PF_PREC_BF16, PF_PREC_BF16, "gpu_check bf16", g_err,
                                    sizeof g_err))
        pf_cuda_model_destroy(&gpu);
    if (!gpu) {
        report_error("net gpu model", shape, g_err);
        pf_model_destroy(&cpu);
        return;
    }
    size_t np = pf_model_num_params(cpu);
    float *grads = host_alloc(np * sizeof(float)), *params = host_alloc(np * sizeof(float));
    /* a video network's batches: n x T LQ frames, n x OT GT frames (EDVR: 1, the center's) */
    int T = pf_model_frames(cpu), OT = pf_model_out_frames(cpu);
    size_t lq_bytes = (size_t)n * T * h * w * 3, gt_bytes = (size_t)n * OT * H * W * 3;
    size_t n_out = (size_t)OT * H * W * 3;     /* one inference's output */
    uint8_t *lq = host_alloc(lq_bytes), *gt = host_alloc(gt_bytes);
    float *out_cpu = host_alloc(n_out * sizeof(float));
    float *out_gpu = host_alloc(n_out * sizeof(float));

    /* same parameter layout: names, offsets, sizes */
    int same = pf_cuda_model_num_params(gpu) == np &&
               pf_cuda_model_num_tensors(gpu) == pf_model_num_tensors(cpu);
    for (int i = 0; same && i < pf_model_num_tensors(cpu); i++) {
        const pf_param_info *a = pf_model_tensor_info(cpu, i);
        const pf_param_info *b = pf_cuda_model_tensor_info(gpu, i);
        same = !strcmp(a->name, b->name) && a->offset == b->offset && a->numel == b->numel;
    }
    report("net param layout", shape, same ? 0.0 : INFINITY, 0.0);
    if (!same) goto done;

    if (pf_cuda_model_set_params(gpu, pf_model_params(cpu), g_err, sizeof g_err)) {
        report_error("net set_params", shape, g_err);
        goto done;
    }
    random_u8(lq, lq_bytes);
    random_u8(gt, gt_bytes);
    float loss_cpu = 0, loss_gpu = 0;
    if (pf_model_train_step(cpu, lq, gt, n, h, w, &loss_cpu, g_err, sizeof g_err)) {
        report_error("net cpu train step", shape, g_err);
        goto done;
    }
    if (pf_cuda_model_train_step(gpu, lq, gt, n, h, w, &loss_gpu, g_err, sizeof g_err)) {
        report_error("net gpu train step", shape, g_err);
        goto done;
    }
    report("net loss", shape, fabs((double)loss_gpu - loss_cpu) / fabs((double)loss_cpu), tol);

    /* L1's gradient is sign(pred - gt): where the two backends' predictions straddle a GT
       value the sign differs and the gradients do too, legitimately. Count the near-ties
       (from the CPU's inference of each image) so such a failure can be told apart. */
    int ties = 0;
    if (!strcmp(cfg->loss_type, "L1Loss") && T == 1)
        for (int b = 0; b < n; b++) {
            if (pf_model_infer(cpu, lq + (size_t)b * h * w * 3, h, w, out_cpu, g_err,
                               sizeof g_err))
                break;
            for (size_t i = 0; i < (size_t)H * W * 3; i++)
                if (fabs(out_cpu[i] - gt[(size_t)b * H * W * 3 + i] / 255.0) < 1e-5) ties++;
        }

    if (pf_cuda_model_get_grads(gpu, grads, g_err, sizeof g_err)) {
        report_error("net get_grads", shape, g_err);
        goto done;
    }
    const float *ref = pf_model_grads(cpu);
    for (int i = 0; i < pf_model_num_tensors(cpu); i++) {
        const pf_param_info *t = pf_model_tensor_info(cpu, i);
        snprintf(op, sizeof op, "net grad %s%s", t->name, ties ? " (L1 near-ties)" : "");
        report(op, shape, max_rel_err(grads + t->offset, ref + t->offset, t->numel),
               pf_grad_tol(cfg->model_type, t->name,
                           math == 2 ? TOL_BF16_GRAD : tol));   /* net_cases.h */
    }
    if (ties) printf("# %s: %d predictions within 1e-5 of their GT value (L1 sign)\n", shape,
                     ties);

    /* inference of the first image (a video network: the first clip, or EDVR's window) */
    int rc = pf_model_is_window(cpu)
                 ? pf_model_infer_window(cpu, lq, h, w, out_cpu, g_err, sizeof g_err)
             : T > 1 ? pf_model_infer_clip(cpu, lq, T, h, w, out_cpu, g_err, sizeof g_err)
                     : pf_model_infer(cpu, lq, h, w, out_cpu, g_err, sizeof g_err);
    if (rc) {
        report_error("net cpu infer", shape, g_err);
        goto done;
    }
    if (pf_cuda_model_infer(gpu, lq, h, w, out_gpu, g_err, sizeof g_err))
        report_error("net infer", shape, g_err);
    else
        report("net infer", shape, max_rel_err(out_gpu, out_cpu, n_out), tol);

    /* 3 Adam steps on both (BasicSR EDSR: lr 1e-4, betas 0.9 / 0.99). A video network: SGD
       with momentum at lr 1e-2, SPyNet (BasicVSR, BasicVSR++) joining at step 3 (fix_iter 2),
       because Adam's normalised update magnifies the rounding differences of BasicVSR's many
       near-zero gradients, EDVR's zero-started DCN offsets' too
       (tests/cuda_host/test_model_cuda_host does the same) */
    const float lr = T > 1 ? 1e-2f : 1e-4f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.0f;
    pf_adam opt;
    pf_cuda_optim dopt;
    if (T == 1 && pf_adam_init(&opt, np, b1, b2, eps, wd)) exit(2);
    if (T > 1) {
        pf_optim_settings sgd = {PF_OPTIM_SGD, 0, 0, 0, 0.0f, 0.9f, 0.0f, 0};
        int nt = pf_model_num_tensors(cpu);
        pf_optim_group *gs = calloc((size_t)nt, sizeof *gs);
        if (!gs || pf_optim_init(&opt, np, &sgd)) exit(2);
        for (int i = 0; i < nt; i++) {
            const pf_param_info *t = pf_model_tensor_info(cpu, i);
            gs[i] = (pf_optim_group){t->offset, t->numel, 1.0f, 1.0f,
                                     strncmp(t->name, "spynet.", 7) ? 0 : 2};
        }
        if (pf_optim_set_groups(&opt, gs, nt)) exit(2);
        free(gs);
    }
    if (pf_cuda_optim_init(&dopt, &opt, pf_cuda_model_stream(gpu), g_err, sizeof g_err)) {
        report_error("net adam init", shape, g_err);
        pf_adam_free(&opt);
        goto done;
    }
    for (int t = 1; t <= 3; t++) {
        if (t > 1) {
            random_u8(lq, lq_bytes);
            random_u8(gt, gt_bytes);
            if (pf_model_train_step(cpu, lq, gt, n, h, w, &loss_cpu, g_err, sizeof g_err) ||
                pf_cuda_model_train_step(gpu, lq, gt, n, h, w, &loss_gpu, g_err,
                                         sizeof g_err)) {
                report_error("net adam train step", shape, g_err);
                break;
            }
        }
        pf_optim_step(&opt, pf_model_params(cpu), pf_model_grads(cpu), lr);
        if (pf_cuda_optim_step(&dopt, pf_cuda_model_params_device(gpu),
                               pf_cuda_model_grads_device(gpu), lr, g_err, sizeof g_err)) {
            report_error("net adam step", shape, g_err);
            break;
        }
        if (t == 3) {
            const char *worst;
            if (pf_cuda_model_get_params(gpu, params, g_err, sizeof g_err)) {
                report_error("net adam params", shape, g_err);
                break;
            }
            double e = worst_tensor_err(cpu, params, pf_model_params(cpu), &worst);
            snprintf(op, sizeof op, "net %s x3 params (%s)", T > 1 ? "sgd" : "adam", worst);
            if (math == 2) {   /* bf16: max |diff| within 6 lr (a near-zero gradient may take
                                  the other sign; Adam moves a parameter about lr a step) */
                e = 0;
                for (size_t i = 0; i < np; i++) {
                    double d = fabs((double)params[i] - pf_model_params(cpu)[i]);
                    if (!(d <= e)) e = d;
                }
                snprintf(op, sizeof op, "net adam x3 params max |diff|");
                report(op, shape, e, 6.0 * lr);
            } else {
                report(op, shape, e, pf_param_tol(cfg->model_type, tol));   /* net_cases.h */
            }
            report("net adam x3 loss (step 3)", shape,
                   fabs((double)loss_gpu - loss_cpu) / fabs((double)loss_cpu), tol);
        }
    }
    pf_optim_free(&opt);
    pf_cuda_optim_free(&dopt);
done:
    free(grads), free(params), free(lq), free(gt), free(out_cpu), free(out_gpu);
    pf_cuda_model_destroy(&gpu);
    pf_model_destroy(&cpu);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One training step of `cfg` (L1): upload + forward + loss + backward + Adam, timed on the
   host around a synchronised step; median of 20 after 5 warm-up steps. math: 0 fp32, 1 tf32,
   2 bf16 convolutions (pf_cuda_model_set_precision). */
static void time_train_step(const char *label, const pf_config *cfg, int n, int h, int w,
                            int math) {
    const int warm = 5, steps = 20;
    int tf32 = math == 1;
    const char *mode = math == 2 ? "bf16" : tf32 ? "tf32" : "fp32";
#ifdef PF_CUDA_EMU
    /* the kernels on the host, the convolutions naive: a time says nothing */
    (void)warm, (void)steps, (void)cfg, (void)n, (void)h, (void)w;
    printf("# timing %s %s: skipped under the host emulation (tests/cuda_emu)\n", label, mode);
    return;
#endif
    pf_model *cpu = pf_model_new(cfg, g_err, sizeof g_err); /* for the seeded weights only */
    if (!cpu) {
        printf("# timing %s %s: cpu model: %s\n", label, mode, g_err);
        return;
    }
    pf_model_init(cpu, 1);
    size_t free0 = 0, free1 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);
    pf_cuda_model *gpu = pf_cuda_model_new(cfg, 0, tf32, g_err, sizeof g_err);
    if (gpu && math == 2 &&
        pf_cuda_model_set_precision(gpu, PF_PREC_BF16, PF_PREC_BF16, "timing bf16", g_err,
                                    sizeof g_err))
        pf_cuda_model_destroy(&gpu);
    size_t lq_bytes = (size_t)n * h * w * 3;
    size_t gt_bytes = lq_bytes * (size_t)cfg->scale * (size_t)cfg->scale;
    uint8_t *lq = host_alloc(lq_bytes), *gt = host_alloc(gt_bytes);
    random_u8(lq, lq_bytes);
    random_u8(gt, gt_bytes);
    double t[20];
    float loss = 0;
    pf_adam opt;
    pf_cuda_optim dopt = {0};
    if (pf_adam_init(&opt, pf_model_num_params(cpu), 0.9f, 0.99f, 1e-8f, 0.0f)) exit(2);
    int ok = gpu && !pf_cuda_model_set_params(gpu, pf_model_params(cpu), g_err, sizeof g_err) &&
             !pf_cuda_optim_init(&dopt, &opt, pf_cuda_model_stream(gpu), g_err, sizeof g_err);
    for (int i = 0; ok && i < warm + steps; i++) {
        double t0 = now_s();
        ok = !pf_cuda_model_train_step(gpu, lq, gt, n, h, w, &loss, g_err, sizeof g_err) &&
             !pf_cuda_optim_step(&dopt, pf_cuda_model_params_device(gpu),
                                 pf_cuda_model_grads_device(gpu), 1e-4f, g_err, sizeof g_err) &&
             cudaStreamSynchronize(pf_cuda_model_stream(gpu)) == cudaSuccess;
        if (i >= warm) t[i - warm] = now_s() - t0;
        if (i == 0) cudaMemGetInfo(&free1, &total);
    }
    if (!ok) {
        printf("# timing %s N%d LQ%d %s: ERROR %s\n", label, n, h, mode, g_err);
    } else {
        qsort(t, steps, sizeof *t, cmp_double);
        double med = 0.5 * (t[steps / 2 - 1] + t[steps / 2]);
        printf("# timing %s N%d LQ%d %s train step (upload+fwd+loss+bwd+adam): "
               "median %.2f ms, min %.2f ms, max %.2f ms, %.1f img/s; device memory %.0f MiB "
               "(model + activations + workspace); loss %.4f\n",
               label, n, h, mode, med * 1e3, t[0] * 1e3, t[steps - 1] * 1e3, n / med,
               (double)(free0 - free1) / (1024.0 * 1024.0), (double)loss);
    }
    fflush(stdout);
    free(lq), free(gt);
    pf_adam_free(&opt);
    pf_cuda_optim_free(&dopt);
    pf_cuda_model_destroy(&gpu);
    pf_model_destroy(&cpu);
}

/* The device optimiser (nn/cuda/optim_cuda.h) against nn/optim.c on one flat buffer of odd
   size split into four groups (frozen, lr 0.1 without decay, plain, lr 2 with half decay),
   3 steps: parameters, every state buffer and the step after a download. The kernels round
   each operation as nn/optim.c does (optim_cuda.h), so without clipping the results must be
   bit-identical (tolerance 0): at TOL_FP32 a wrong decay_mult or AdamW shrink (updates of
   ~1e-5 against parameters of ~0.5) would pass. Clipping's norm is summed in another order
   than the CPU's, so a clipped run keeps TOL_FP32. */
static void check_optim_cuda(const char *label, pf_optim_settings s, float ema, float clip) {
    const size_t n = 10007;
    const double tol = clip > 0 ? TOL_FP32 : 0.0;
    char shape[128];
    pf_optim host, back;
    pf_cuda_optim dev;
    if (pf_optim_init(&host, n, &s) || pf_optim_init(&back, n, &s)) exit(2);
    pf_optim_group gr[4] = {{0, 1000, 0.0f, 1.0f, 0}, {1000, 3000, 0.1f, 0.0f, 0},
                            {4000, 5000, 1.0f, 1.0f, 0}, {9000, 1007, 2.0f, 0.5f, 0}};
    float *p = host_alloc(n * 4), *g = host_alloc(n * 4), *got = host_alloc(n * 4);
    fill(p, n, -0.5f, 0.5f);
    if (pf_optim_set_groups(&host, gr, 4) || pf_optim_set_groups(&back, gr, 4) ||
        (ema > 0 && (pf_optim_ema_init(&host, ema, p) || pf_optim_ema_init(&back, ema, p))))
        exit(2);
    float *d_p = upload(p, n * 4), *d_g = dev_alloc(n * 4);
    if (pf_cuda_optim_init(&dev, &host, 0, g_err, sizeof g_err)) {
        report_error("optim init", label, g_err);
        goto out;
    }
    for (int t = 1; t <= 3; t++) {
        fill(g, n, -2, 2);
        if (cudaMemcpy(d_g, g, n * 4, cudaMemcpyHostToDevice) != cudaSuccess) exit(2);
        float lr = 1e-2f * (float)t;
        snprintf(shape, sizeof shape, "%s count %zu step %d", label, n, t);
        if (clip > 0) {
            pf_clip_grad_norm(g, n, clip);
            int rc = pf_cuda_optim_clip(&dev, d_g, clip, g_err, sizeof g_err);
            check("optim clipped grads", shape, rc, d_g, g, n, TOL_FP32);
        }
        pf_optim_step(&host, p, g, lr);
        int rc = pf_cuda_optim_step(&dev, d_p, d_g, lr, g_err, sizeof g_err);
        check("optim params", shape, rc, d_p, p, n, tol);
    }
    if (pf_cuda_optim_download(&dev, &back, g_err, sizeof g_err)) {
        report_error("optim download", label, g_err);
    } else {
        float *hb[4] = {host.exp_avg, host.exp_avg_sq, host.momentum_buffer, host.ema};
        float *bb[4] = {back.exp_avg, back.exp_avg_sq, back.momentum_buffer, back.ema};
        const char *names[4] = {"optim exp_avg", "optim exp_avg_sq", "optim momentum_buffer",
                                "optim ema"};
        for (int i = 0; i < 4; i++)
            if (hb[i]) report(names[i], label, max_rel_err(bb[i], hb[i], n), tol);
        report("optim step count", label, back.step == host.step ? 0.0 : INFINITY, 0.0);
        /* a frozen group is never written: bit-identical */
        int frozen = download(got, d_p, n * 4) == 0 && !memcmp(got, p, 1000 * 4);
        report("optim frozen group untouched", label, frozen ? 0.0 : INFINITY, 0.0);
    }
    pf_cuda_optim_free(&dev);
out:
    pf_optim_free(&host);
    pf_optim_free(&back);
    free(p), free(g), free(got);
    cudaFree(d_p), cudaFree(d_g);
}

static void check_optimisers(void) {
    pf_optim_settings adam = {PF_OPTIM_ADAM, 0.9f, 0.99f, 1e-8f, 1e-4f, 0, 0, 0};
    pf_optim_settings adamw = {PF_OPTIM_ADAMW, 0.9f, 0.999f, 1e-8f, 1e-2f, 0, 0, 0};
    pf_optim_settings sgd = {PF_OPTIM_SGD, 0, 0, 0, 1e-4f, 0.9f, 0.1f, 0};
    pf_optim_settings nesterov = {PF_OPTIM_SGD, 0, 0, 0, 0.0f, 0.9f, 0.0f, 1};
    pf_optim_settings plain = {PF_OPTIM_SGD, 0, 0, 0, 1e-3f, 0.0f, 0.0f, 0};
    check_optim_cuda("Adam wd EMA 0.999", adam, 0.999f, 0);
    check_optim_cuda("AdamW EMA 0.999", adamw, 0.999f, 0); /* exact: decoupled shrink */
    check_optim_cuda("AdamW clip 1", adamw, 0, 1.0f);
    check_optim_cuda("SGD momentum dampening EMA 0.9", sgd, 0.9f, 0);
    check_optim_cuda("SGD Nesterov clip 5", nesterov, 0, 5.0f);
    check_optim_cuda("SGD plain wd", plain, 0, 0);
}


/* ---- video ops vs nn/video_layers.c (plain layout) ---- */

/* A flow that sends samples outside the image, with some positions on whole pixels. */
static void fill_flow(float *f, int n, int h, int w) {
    size_t hw = (size_t)h * w;
    for (size_t i = 0; i < (size_t)n * 2 * hw; i++) {
        uint64_t r = next_u64() % 8;
        f[i] = r == 0 ? (float)((int)(next_u64() % 7) - 3) : uniform(-0.4f * w, 0.4f * w);
    }
}

static void check_video_ops(int n, int c, int h, int w) {
    char shape[80], op[80];
    size_t nx = (size_t)n * c * h * w, nf = (size_t)n * 2 * h * w;
    float *x = host_alloc(nx * 4), *dy = host_alloc(nx * 4), *prior = host_alloc(nx * 4);
    float *ref = host_alloc(nx * 4), *flow = host_alloc(nf * 4), *fprior = host_alloc(nf * 4);
    float *fref = host_alloc(nf * 4);
    fill(x, nx, -1, 1);
    fill(dy, nx, -1, 1);
    fill(prior, nx, -1, 1);
    fill(fprior, nf, -1, 1);
    fill_flow(flow, n, h, w);
    float *d_x = upload(x, nx * 4), *d_dy = upload(dy, nx * 4), *d_y = dev_alloc(nx * 4);
    float *d_f = upload(flow, nf * 4), *d_df = dev_alloc(nf * 4);
    int rc;

    /* affine on min(c, 3) channels (at most PF_CUDA_MAX_AFFINE_CHANNELS; x holds c: with
       c = 2 the 3-channel case read past the end of d_x, found by AddressSanitizer under
       tests/cuda_emu) */
    {
        const float sub[3] = {0.485f, 0.456f, 0.406f}, mul[3] = {1 / 0.229f, 1 / 0.224f, 1 / 0.225f};
        int ca = c < 3 ? c : 3;
        size_t n3 = (size_t)n * ca * h * w;
        snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, ca, h, w);
        pf_ref_affine_ch(ref, x, n, ca, h, w, sub, mul, 0);
        rc = pf_cuda_affine_ch(d_y, d_x, n, ca, h, w, sub, mul, 0, 0, g_err, sizeof g_err);
        check("affine_ch forward", shape, rc, d_y, ref, n3, TOL_FP32);
        memcpy(ref, prior, n3 * 4);
        pf_ref_affine_ch(ref, dy, n, ca, h, w, NULL, mul, 1);
        set_dev(d_y, prior, n3 * 4);
        rc = pf_cuda_affine_ch(d_y, d_dy, n, ca, h, w, NULL, mul, 1, 0, g_err, sizeof g_err);
        check("affine_ch backward acc=1", shape, rc, d_y, ref, n3, TOL_FP32);
    }

    /* bilinear resize: up x2, down to a rounded size and back, both align_corners, a flow's
       per-channel factor */
    static const int sizes[][2] = {{2, 2}, {1, 1}, {-5, -3}};   /* factor, or minus a delta */
    for (int si = 0; si < 3; si++)
        for (int ac = 0; ac <= 1; ac++) {
            int H = sizes[si][0] > 0 ? h * sizes[si][0] : h + sizes[si][0];
            int W = sizes[si][1] > 0 ? w * sizes[si][1] : w + sizes[si][1];
            if (si == 1) H = (h + 31) / 32 * 32, W = (w + 31) / 32 * 32;
            size_t ny = (size_t)n * c * H * W;
            float *ry = host_alloc(ny * 4), *gy = host_alloc(ny * 4);
            fill(gy, ny, -1, 1);
            const float mult2[2] = {(float)W / w, (float)H / h};
            const float *mult = c == 2 ? mult2 : NULL;
            snprintf(shape, sizeof shape, "N%d C%d %dx%d->%dx%d ac=%d", n, c, h, w, H, W, ac);
            float *d_r = dev_alloc(ny * 4), *d_g = upload(gy, ny * 4);
            pf_resize_bilinear_forward(ry, x, n, c, h, w, H, W, ac, mult, 1, 1);
            rc = pf_cuda_resize_bilinear_forward(d_r, d_x, n, c, h, w, H, W, ac, mult, 0, g_err,
                                                 sizeof g_err);
            check("resize_bilinear forward", shape, rc, d_r, ry, ny, TOL_FP32);
            for (int acc = 0; acc <= 1; acc++) {
                memcpy(ref, prior, nx * 4);
                if (!acc) memset(ref, 0, nx * 4);
                pf_resize_bilinear_backward(ref, gy, n, c, h, w, H, W, ac, mult, 1, 1);
                set_dev(d_y, prior, nx * 4);
                rc = pf_cuda_resize_bilinear_backward(d_y, d_g, n, c, h, w, H, W, ac, mult, acc,
                                                      0, g_err, sizeof g_err);
                snprintf(op, sizeof op, "resize_bilinear backward acc=%d", acc);
                check(op, shape, rc, d_y, ref, nx, TOL_FP32);
            }
            free(ry), free(gy);
            cudaFree(d_r), cudaFree(d_g);
        }

    /* 2 x 2 average pooling (even sizes) */
    {
        int he = h & ~1, we = w & ~1;
        size_t ne = (size_t)n * c * he * we, np2 = ne / 4;
        snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, he, we);
        pf_avgpool2_forward(ref, x, n, c, he, we, 1, 1);
        rc = pf_cuda_avgpool2_forward(d_y, d_x, n, c, he, we, 0, g_err, sizeof g_err);
        check("avgpool2 forward", shape, rc, d_y, ref, np2, TOL_FP32);
        memcpy(ref, prior, ne * 4);
        pf_ref_avgpool2_backward(ref, dy, n, c, he, we, 1);
        set_dev(d_y, prior, ne * 4);
        rc = pf_cuda_avgpool2_backward(d_y, d_dy, n, c, he, we, 1, 0, g_err, sizeof g_err);
        check("avgpool2 backward acc=1", shape, rc, d_y, ref, ne, TOL_FP32);
    }

    /* 2 x 2 max pooling (even sizes) against ref_ops.c, on x rounded to quarters so that
       windows hold ties (the gradient goes to the first maximum in row-major order);
       backward acc 0 and 1 */
    {
        int he = h & ~1, we = w & ~1;
        size_t ne = (size_t)n * c * he * we, np2 = ne / 4;
        float *xq = host_alloc(ne * 4);
        for (size_t i = 0; i < ne; i++) xq[i] = floorf(x[i] * 4.0f) / 4.0f;
        float *d_q = upload(xq, ne * 4);
        snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, he, we);
        pf_ref_maxpool2_forward(ref, xq, n, c, he, we);
        rc = pf_cuda_maxpool2_forward(d_y, d_q, n, c, he, we, 0, g_err, sizeof g_err);
        check("maxpool2 forward", shape, rc, d_y, ref, np2, TOL_FP32);
        for (int acc = 0; acc <= 1; acc++) {
            memcpy(ref, prior, ne * 4);
            pf_ref_maxpool2_backward(ref, dy, xq, n, c, he, we, acc);
            set_dev(d_y, prior, ne * 4);
            rc = pf_cuda_maxpool2_backward(d_y, d_dy, d_q, n, c, he, we, acc, 0, g_err,
                                           sizeof g_err);
            snprintf(op, sizeof op, "maxpool2 backward acc=%d", acc);
            check(op, shape, rc, d_y, ref, ne, TOL_FP32);
        }
        free(xq);
        cudaFree(d_q);
    }

    /* flow warp, zeros and border padding; backward dx (fixed point, twice for the same
       bits) and dflow, with acc 0 and 1 */
    void *scratch = dev_alloc(pf_cuda_flow_warp_scratch_bytes(nx));
    for (int pad = 0; pad <= 1; pad++) {
        snprintf(shape, sizeof shape, "N%d C%d H%d W%d pad=%s", n, c, h, w,
                 pad ? "border" : "zeros");
        pf_flow_warp_forward(ref, x, flow, n, c, h, w, (pf_pad_mode)pad, 1, 1, 1);
        rc = pf_cuda_flow_warp_forward(d_y, d_x, d_f, n, c, h, w, pad, 0, g_err, sizeof g_err);
        check("flow_warp forward", shape, rc, d_y, ref, nx, TOL_FP32);
        for (int acc = 0; acc <= 1; acc++) {
            memcpy(ref, prior, nx * 4);
            memcpy(fref, fprior, nf * 4);
            if (!acc) memset(ref, 0, nx * 4), memset(fref, 0, nf * 4);
            pf_flow_warp_backward(ref, fref, dy, x, flow, n, c, h, w, (pf_pad_mode)pad, 1, 1, 1);
            set_dev(d_y, prior, nx * 4);
            set_dev(d_df, fprior, nf * 4);
            rc = pf_cuda_flow_warp_backward(d_y, d_df, d_dy, d_x, d_f, n, c, h, w, pad, acc,
                                            acc, scratch, 0, g_err, sizeof g_err);
            snprintf(op, sizeof op, "flow_warp backward dx acc=%d", acc);
            check(op, shape, rc, d_y, ref, nx, TOL_FP32);
            snprintf(op, sizeof op, "flow_warp backward dflow acc=%d", acc);
            check(op, shape, rc, d_df, fref, nf, TOL_FP32);
        }
        float *first = fetch("flow_warp backward dx (repeat)", shape, rc, d_y, nx);
        if (first) {
            set_dev(d_y, prior, nx * 4);
            rc = pf_cuda_flow_warp_backward(d_y, NULL, d_dy, d_x, d_f, n, c, h, w, pad, 1, 0,
                                            scratch, 0, g_err, sizeof g_err);
            check_repeat("flow_warp backward dx same bits", shape, rc, d_y, first, nx);
            free(first);
        }
    }
    cudaFree(scratch);
    free(x), free(dy), free(prior), free(ref), free(flow), free(fprior), free(fref);
    cudaFree(d_x), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_f), cudaFree(d_df);
}

/* The CUDA DCN layer (sampling kernels + cuBLAS) against the CPU executor's layer
   (nn/cpu/dcn.h, which tests/test_dcn.torch checks against torchvision): output and every
   gradient, on fill_dcn_inputs' offsets and masks. */
static void check_dcn_cpu(const dcn_case *c) {
    char err[512], shape[96];
    snprintf(shape, sizeof shape, "%dx%dx%dx%d->%d s%d d%d g%d dg%d", c->n, c->cin, c->h, c->w,
             c->cout, c->stride, c->dil, c->groups, c->dg);
    pf_dnnl dnnl;
    pf_dcn cpu;
    pf_cudcn l;
    pf_dcn_shape cs = { c->n, c->cin, c->h, c->w, c->cout, c->k, c->stride, c->pad, c->dil,
                        c->groups, c->dg, 0, 0 };
    if (pf_dnnl_init(&dnnl, err, sizeof err) ||
        pf_dcn_setup(&cpu, &dnnl, "dcn", cs, 1, err, sizeof err) ||
        pf_cudcn_init(&l, "dcn", c->n, c->cin, c->h, c->w, c->cout, c->k, c->stride, c->pad,
                      c->dil, c->groups, c->dg, err, sizeof err)) {
        report_error("dcn vs cpu", shape, err);
        return;
    }
    int kk = c->k * c->k;
    size_t P = (size_t)l.s.ho * l.s.wo, nx = (size_t)c->n * c->cin * c->h * c->w;
    size_t nm = (size_t)c->n * c->dg * kk * P, nout = (size_t)c->n * c->cout * P;
    size_t nw = (size_t)c->cout * (c->cin / c->groups) * kk, nb = (size_t)c->cout;
    float *h[12], *d[12];       /* x off mask w b dy | out dw db dx doff dmask */
    size_t szs[12] = { nx, 2 * nm, nm, nw, nb, nout, nout, nw, nb, nx, 2 * nm, nm };
    for (int i = 0; i < 12; i++) h[i] = host_alloc(szs[i] * 4);
    fill(h[0], nx, -1, 1), fill(h[3], nw, -0.5f, 0.5f), fill(h[4], nb, -1, 1);
    fill(h[5], nout, -1, 1);
    fill_dcn_inputs(h[1], 2 * nm, h[2], nm, c->h);
    for (int i = 0; i < 12; i++) d[i] = i < 6 ? upload(h[i], szs[i] * 4) : dev_alloc(szs[i] * 4);
    void *scratch = dev_alloc(pf_cuda_dcn_scratch_bytes(&l.s));
    float *col = dev_alloc(pf_cudcn_col_floats(&l) * 4);
    float *dcol = dev_alloc(pf_cudcn_col_floats(&l) * 4);
    cublasHandle_t blas = NULL;
    int rc_cpu = pf_dcn_forward(&cpu, h[3], h[4], h[0], 1, h[1], 1, h[2], 1, h[6], 1, err,
                                sizeof err) ||
                 pf_dcn_backward(&cpu, h[3], h[7], h[8], h[5], 1, h[0], 1, h[1], 1, h[2], 1,
                                 h[9], h[10], h[11], err, sizeof err);
    if (rc_cpu || cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        report_error("dcn vs cpu", shape, rc_cpu ? err : "cublasCreate failed");
    } else {
        cudaMemset(d[7], 0, nw * 4), cudaMemset(d[8], 0, nb * 4);
        int rc = pf_cudcn_forward(&l, blas, 0, d[3], d[4], d[0], d[1], d[2], d[6], col, g_err,
                                  sizeof g_err) ||
                 pf_cudcn_backward(&l, blas, 0, d[3], d[7], d[8], d[5], d[0], d[1], d[2], d[9],
                                   d[10], d[11], 0, 0, 0, col, dcol, scratch, g_err,
                                   sizeof g_err);
        static const char *what[6] = { "out", "dweight", "dbias", "dx", "doffset", "dmask" };
        for (int i = 6; i < 12; i++) {
            char op[64];
            snprintf(op, sizeof op, "dcn vs cpu %s", what[i - 6]);
            check(op, shape, rc, d[i], h[i], szs[i], TOL_FP32);
        }
        cublasDestroy(blas);
    }
    for (int i = 0; i < 12; i++) free(h[i]), cudaFree(d[i]);
    cudaFree(scratch), cudaFree(col), cudaFree(dcol);
    pf_dcn_free(&cpu);
    pf_dnnl_free(&dnnl);
}

/* The device optimiser, the DCN layer against the CPU's and the video ops (they need the CMake
   build's CPU backend). */
/* EDVR's TSA-fusion kernels (mul, chsum, 3 x 3 pooling) against the CPU executor's own
   (nn/cpu/ops.c, plain NCHW: block 1), within 1e-5 of the largest value: mul with a factor of
   c channels and of 1 (broadcast), with and without a residual; backward to both factors,
   acc 0 and 1; the channel sum; max and average pooling on x rounded to quarters (ties in
   most windows), forward and backward acc 0 and 1 (even h, w). */
static void check_tsa_ops(int n, int c, int h, int w) {
    char shape[80], op[80];
    size_t nx = (size_t)n * c * h * w, np = (size_t)n * h * w, nq = nx / 4;
    float *x = host_alloc(nx * 4), *x1 = host_alloc(nx * 4), *r = host_alloc(nx * 4);
    float *dy = host_alloc(nx * 4), *prior = host_alloc(nx * 4), *ref = host_alloc(nx * 4);
    float *ref1 = host_alloc(nx * 4);
    fill(x, nx, -1, 1);
    fill(x1, nx, -1, 1);
    fill(r, nx, -1, 1);
    fill(dy, nx, -1, 1);
    fill(prior, nx, -1, 1);
    float *d_x = upload(x, nx * 4), *d_x1 = upload(x1, nx * 4), *d_r = upload(r, nx * 4);
    float *d_dy = upload(dy, nx * 4), *d_y = dev_alloc(nx * 4), *d_d1 = dev_alloc(nx * 4);
    int rc;
    const float sc = 1.5f;
    for (int c1 = c; c1 >= 1; c1 = c1 > 1 ? 1 : 0) {
        size_t n1 = (size_t)n * c1 * h * w;
        for (int res = 0; res <= 1; res++) {
            snprintf(shape, sizeof shape, "N%d C%d C1 %d H%d W%d%s", n, c, c1, h, w,
                     res ? " +res" : "");
            pf_cpu_mul_forward(ref, x, x1, res ? r : NULL, sc, n, c, c1, h, w, 1, 1, 1, 1);
            rc = pf_cuda_mul_forward(d_y, d_x, d_x1, res ? d_r : NULL, sc, n, c, c1, h, w, 0,
                                     g_err, sizeof g_err);
            check("mul forward", shape, rc, d_y, ref, nx, 1e-5);
        }
        snprintf(shape, sizeof shape, "N%d C%d C1 %d H%d W%d", n, c, c1, h, w);
        for (int acc = 0; acc <= 1; acc++) {
            memcpy(ref, prior, nx * 4);
            memcpy(ref1, prior, n1 * 4);
            pf_cpu_mul_backward(ref, ref1, dy, x, x1, sc, n, c, c1, h, w, 1, 1, 1, acc, acc);
            set_dev(d_y, prior, nx * 4);
            set_dev(d_d1, prior, n1 * 4);
            rc = pf_cuda_mul_backward(d_y, d_d1, d_dy, d_x, d_x1, sc, n, c, c1, h, w, acc, acc,
                                      0, g_err, sizeof g_err);
            snprintf(op, sizeof op, "mul backward dx0 acc=%d", acc);
            check(op, shape, rc, d_y, ref, nx, 1e-5);
            snprintf(op, sizeof op, "mul backward dx1 acc=%d", acc);
            check(op, shape, rc, d_d1, ref1, n1, 1e-5);
        }
    }
    snprintf(shape, sizeof shape, "N%d C%d H%d W%d", n, c, h, w);
    pf_cpu_chsum_forward(ref, x, n, c, h, w, 1, 1);
    rc = pf_cuda_chsum_forward(d_y, d_x, n, c, h, w, 0, g_err, sizeof g_err);
    check("chsum forward", shape, rc, d_y, ref, np, 1e-5);
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, prior, nx * 4);
        pf_cpu_chsum_backward(ref, dy, n, c, h, w, 1, 1, acc);
        set_dev(d_y, prior, nx * 4);
        rc = pf_cuda_chsum_backward(d_y, d_dy, n, c, h, w, acc, 0, g_err, sizeof g_err);
        snprintf(op, sizeof op, "chsum backward acc=%d", acc);
        check(op, shape, rc, d_y, ref, nx, 1e-5);
    }
    for (size_t i = 0; i < nx; i++) x1[i] = floorf(x[i] * 4.0f) / 4.0f;     /* ties */
    set_dev(d_x1, x1, nx * 4);
    for (int max = 0; max <= 1; max++) {
        pf_cpu_pool3_forward(ref, x1, max, n, c, h, w, 1, 1);
        rc = pf_cuda_pool3_forward(d_y, d_x1, max, n, c, h, w, 0, g_err, sizeof g_err);
        check(max ? "maxpool3 forward" : "avgpool3 forward", shape, rc, d_y, ref, nq, 1e-5);
        for (int acc = 0; acc <= 1; acc++) {
            memcpy(ref, prior, nx * 4);
            pf_cpu_pool3_backward(ref, dy, x1, max, n, c, h, w, 1, 1, acc);
            set_dev(d_y, prior, nx * 4);
            rc = pf_cuda_pool3_backward(d_y, d_dy, d_x1, max, n, c, h, w, acc, 0, g_err,
                                        sizeof g_err);
            snprintf(op, sizeof op, "%s backward acc=%d", max ? "maxpool3" : "avgpool3", acc);
            check(op, shape, rc, d_y, ref, nx, 1e-5);
        }
    }
    free(x), free(x1), free(r), free(dy), free(prior), free(ref), free(ref1);
    cudaFree(d_x), cudaFree(d_x1), cudaFree(d_r), cudaFree(d_dy), cudaFree(d_y), cudaFree(d_d1);
}

static void check_model_ops(void) {
    check_tsa_ops(2, 5, 14, 18);
    check_tsa_ops(1, 16, 8, 6);
    check_optimisers();
    static const dcn_case dcn_cases[] = {
        {2, 8, 7, 9, 6, 3, 1, 1, 1, 2, 2},
        {1, 8, 9, 8, 4, 3, 2, 1, 1, 1, 4},
        {2, 4, 6, 7, 4, 3, 1, 2, 2, 1, 1},
    };
    for (size_t i = 0; i < sizeof dcn_cases / sizeof *dcn_cases; i++)
        check_dcn_cpu(&dcn_cases[i]);
    check_video_ops(2, 5, 13, 17);
    check_video_ops(2, 2, 37, 41);      /* a flow's 2 channels: the resize factors */
    check_video_ops(1, 16, 64, 64);     /* BasicVSR's feature warp at LQ 64 */
}

/* The GAN step's networks (issue 41): 0 a VGG19 features cut (conv1_1, relu1_2, conv2_1, each
   a tap), 1 UNetDiscriminatorSN (num_feat 16), 2 VGGStyleDiscriminator (num_feat 8, 128 x
   128); the discriminators with a middle tensor as a tap. 0, or -1 (reported). */
static int gan_net(int kind, pf_net *g) {
    int rc;
    if (kind == 0) {
        const char *names[3] = {"conv1_1", "relu1_2", "conv2_1"};
        int lt[3];
        rc = pf_net_build_vgg19_features(g, names, 3, 1, 1, lt, g_err, sizeof g_err);
        for (int k = 0; !rc && k < 3; k++) rc = pf_net_add_tap(g, lt[k]) == k ? 0 : -1;
    } else {
        rc = kind == 1 ? pf_net_build_unet_discriminator_sn(g, 3, 16, 1, g_err, sizeof g_err)
                       : pf_net_build_vgg_style_discriminator(g, 3, 8, 128, g_err,
                                                              sizeof g_err);
        if (!rc) rc = pf_net_add_tap(g, g->node[g->n_node / 2].out) == 0 ? 0 : -1;
    }
    if (rc) report_error("gan net build", "", g_err);
    return rc;
}

/* NCHW <-> NHWC of n x c x h x w floats (to_nhwc: NCHW src to NHWC dst, else back). */
static void nchw_nhwc(float *dst, const float *src, int n, int c, int h, int w, int to_nhwc) {
    size_t hw = (size_t)h * w;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++)
            for (size_t p = 0; p < hw; p++) {
                size_t a = ((size_t)i * c + k) * hw + p, b = ((size_t)i * hw + p) * c + k;
                if (to_nhwc) dst[b] = src[a];
                else dst[a] = src[b];
            }
}

/* A GAN network on the GPU's float input, taps and given gradients (nn/cuda/model_cuda.h
   pf_cuda_model_new_net and its calls) against the CPU model's (pf_model_new_net, same
   description, weights, input): the output and each tap after the training forward, the
   running statistics, then for L = sum(a out) + sum(b_k tap_k) (random a, b) every parameter
   gradient and d L / d x of backward_from, and backward_input's d x the same (bit-identical
   with deterministic cuDNN algorithms; the model lets cuDNN pick others: within 1e-5). */
static void check_gan_net(const char *label, int kind, int n, int h, int w, int tf32) {
    pf_net gc, gg;
    if (gan_net(kind, &gc)) return;
    if (gan_net(kind, &gg)) {
        pf_net_free(&gc);
        return;
    }
    char shape[96], op[96];
    snprintf(shape, sizeof shape, "%s %s N%d %dx%d", label, tf32 ? "tf32" : "fp32", n, h, w);
    double tol = tf32 ? TOL_LOW : TOL_FP32;
    int n_taps = gc.n_taps;
    pf_model *cpu = pf_model_new_net(&gc, "", g_err, sizeof g_err);
    pf_cuda_model *gpu = cpu ? pf_cuda_model_new_net(&gg, 0, tf32, g_err, sizeof g_err) : NULL;
    if (!gpu) {
        report_error("gan net new", shape, g_err);
        pf_net_free(&gg);
        pf_model_destroy(&cpu);
        return;
    }
    pf_model_init(cpu, 17);
    size_t np = pf_model_num_params(cpu), nin = (size_t)n * 3 * h * w;
    float *x = host_alloc(nin * 4), *xc = host_alloc(nin * 4), *dx = host_alloc(nin * 4);
    float *got = host_alloc(np * 4), *seed[PF_NET_MAX_TAPS + 1] = {0};
    float *d_seed[PF_NET_MAX_TAPS + 1] = {0};
    fill(x, nin, 0.0f, 1.0f);
    nchw_nhwc(xc, x, n, 3, h, w, 0);
    float *d_x = upload(xc, nin * 4), *d_dx = dev_alloc(nin * 4), *d_dx2 = dev_alloc(nin * 4);
    pf_cuda_model_set_input_grad(gpu, 1);
    int rc = pf_cuda_model_set_params(gpu, pf_model_params(cpu), g_err, sizeof g_err) ||
             pf_model_forward_train_f32(cpu, x, n, h, w, g_err, sizeof g_err) ||
             pf_cuda_model_forward_train_f32(gpu, d_x, n, h, w, g_err, sizeof g_err);
    for (int k = -1; !rc && k < n_taps; k++) {
        int dims[4];
        const float *d = pf_cuda_model_tap(gpu, k, dims);
        size_t count = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
        float *ref = host_alloc(count * 4);
        pf_model_read(cpu, k, ref);
        snprintf(op, sizeof op, k < 0 ? "gan output" : "gan tap %d", k);
        check(op, shape, d ? 0 : -1, d, ref, count, tol);
        seed[k + 1] = ref;
        fill(ref, count, -1.0f, 1.0f);
        d_seed[k + 1] = upload(ref, count * 4);
    }
    size_t nr = pf_cuda_model_num_running(gpu);
    if (!rc && nr) {
        rc = pf_cuda_model_get_running(gpu, got, g_err, sizeof g_err);
        if (!rc) report("gan running statistics", shape,
                        max_rel_err(got, pf_model_running(cpu), nr), tol);
    }
    rc = rc || pf_model_backward_from(cpu, seed[0], (const float *const *)seed + 1, dx, g_err,
                                      sizeof g_err) ||
         pf_cuda_model_backward_from(gpu, d_seed[0], (const float *const *)d_seed + 1, d_dx,
                                     g_err, sizeof g_err) ||
         pf_cuda_model_get_grads(gpu, got, g_err, sizeof g_err);
    if (!rc) {
        const char *worst;
        double e = worst_tensor_err(cpu, got, pf_model_grads(cpu), &worst);
        snprintf(op, sizeof op, "gan grads (%.14s)", worst);
        report(op, shape, e, tol);
        nchw_nhwc(xc, dx, n, 3, h, w, 0);
        check("gan d x", shape, 0, d_dx, xc, nin, tol);
        rc = pf_cuda_model_backward_input(gpu, d_seed[0], (const float *const *)d_seed + 1,
                                          d_dx2, g_err, sizeof g_err);
    }
    if (!rc && !download(dx, d_dx, nin * 4) && !download(xc, d_dx2, nin * 4))
        report("gan d x input-only ~ from", shape, max_rel_err(xc, dx, nin), 1e-5);
    if (rc) report_error("gan net", shape, g_err);
    for (int k = 0; k <= PF_NET_MAX_TAPS; k++) {
        free(seed[k]);
        cudaFree(d_seed[k]);
    }
    cudaFree(d_x), cudaFree(d_dx), cudaFree(d_dx2);
    free(x), free(xc), free(dx), free(got);
    pf_cuda_model_destroy(&gpu);
    pf_model_destroy(&cpu);
}

static void check_gan_nets(void) {
    check_gan_net("VGG19 conv1_1 relu1_2 conv2_1", 0, 2, 24, 20, 0);
    check_gan_net("UNetDiscriminatorSN F16", 1, 2, 32, 24, 0);
    check_gan_net("VGGStyleDiscriminator F8", 2, 3, 128, 128, 0);
    check_gan_net("UNetDiscriminatorSN F16", 1, 2, 32, 24, 1);
}

static void check_networks(void) {
    check_gan_nets();
    static const struct {
        int scale, h, w;
        float res_scale;
        const char *loss;
    } cases[] = {
        {2, 12, 12, 1.0f, "L1Loss"},  {2, 17, 13, 0.5f, "MSELoss"},
        {4, 12, 12, 1.0f, "MSELoss"}, {4, 17, 13, 0.1f, "L1Loss"},
        {3, 17, 13, 1.0f, "MSELoss"},
    };
    for (int math = 0; math <= 2; math++)   /* fp32, tf32, bf16 */
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            pf_config cfg;
            char label[64];
            edsr_cfg(&cfg, cases[i].scale, 16, 2, cases[i].res_scale, cases[i].loss);
            snprintf(label, sizeof label, "EDSR x%d 16f 2b rs%g", cases[i].scale,
                     (double)cases[i].res_scale);
            check_network(label, &cfg, 2, cases[i].h, cases[i].w, math);
        }
    /* every other network, through nn/cuda/graph_cuda.c: each op of nn/graph.h in forward
       and backward, at odd sizes where the network allows them */
    for (int i = 0; i < PF_NET_CASES; i++) {
        const pf_net_case *z = &pf_net_cases[i];   /* tests/cuda_host/net_cases.h */
        pf_config cfg;
        char label[64];
        zoo_cfg(&cfg, z->type, z->scale, z->loss, z->hp);
        snprintf(label, sizeof label, "%s x%d (%d %d %d %d)", z->type, z->scale, z->hp[0],
                 z->hp[1], z->hp[2], z->hp[3]);
        check_network(label, &cfg, 2, z->h, z->w, z->tf32);
    }
    /* BasicVSR x4: SPyNet at 32 x 32 (both resizes) and at 64 x 64 (the demo's LQ patch) */
    static const struct {
        int feat, blocks, frames, h, w;
        const char *loss;
    } vsr[] = {{8, 1, 3, 12, 12, "CharbonnierLoss"}, {16, 2, 2, 64, 64, "CharbonnierLoss"}};
    for (size_t i = 0; i < sizeof vsr / sizeof *vsr; i++) {
        pf_config cfg;
        char label[64];
        zoo_cfg(&cfg, "BasicVSR", 4, vsr[i].loss, (const int[4]){0, 0, 0, 0});
        cfg.n_feats = vsr[i].feat;
        cfg.n_blocks = vsr[i].blocks;
        cfg.train.present = 1;
        snprintf(cfg.train.type, sizeof cfg.train.type, "REDSRecurrentDataset");
        cfg.train.num_frame = vsr[i].frames;
        snprintf(label, sizeof label, "BasicVSR x4 (%d %d) T%d", vsr[i].feat, vsr[i].blocks,
                 vsr[i].frames);
        check_network(label, &cfg, 2, vsr[i].h, vsr[i].w, 0);
    }

    /* the errors the API promises */
    pf_config cfg;
    edsr_cfg(&cfg, 2, 16, 2, 1.0f, "L1Loss");
    strcpy(cfg.model_type, "NoSuchNet");
    pf_cuda_model *m = pf_cuda_model_new(&cfg, 0, 0, g_err, sizeof g_err);
    report("net unknown type refused", g_err, m ? INFINITY : 0.0, 0.0);
    pf_cuda_model_destroy(&m);
    edsr_cfg(&cfg, 2, 16, 2, 1.0f, "PerceptualLoss");
    m = pf_cuda_model_new(&cfg, 0, 0, g_err, sizeof g_err);
    report("net unknown loss refused", g_err, m ? INFINITY : 0.0, 0.0);
    pf_cuda_model_destroy(&m);
    /* CharbonnierLoss (BasicSR eps 1e-12) through both executors */
    edsr_cfg(&cfg, 3, 16, 2, 1.0f, "CharbonnierLoss");
    check_network("EDSR x3 16f 2b", &cfg, 2, 17, 13, 0);
    zoo_cfg(&cfg, "RCAN", 2, "CharbonnierLoss", (const int[4]){16, 2, 2, 4});
    check_network("RCAN x2 (16 2 2 4)", &cfg, 2, 12, 12, 0);

    /* the issue's benchmark shapes (bench/train_step) */
    edsr_cfg(&cfg, 4, 64, 16, 1.0f, "L1Loss");
    time_train_step("EDSR x4 64f 16b", &cfg, 16, 48, 48, 0);
    time_train_step("EDSR x4 64f 16b", &cfg, 16, 48, 48, 1);
    time_train_step("EDSR x4 64f 16b", &cfg, 16, 48, 48, 2);
    edsr_cfg(&cfg, 2, 64, 16, 1.0f, "L1Loss");
    time_train_step("EDSR x2 64f 16b", &cfg, 16, 48, 48, 0);
    zoo_cfg(&cfg, "MSRResNet", 4, "L1Loss", (const int[4]){64, 16, 0, 0});
    time_train_step("MSRResNet x4 64f 16b", &cfg, 16, 32, 32, 0);
    zoo_cfg(&cfg, "RCAN", 2, "L1Loss", (const int[4]){64, 4, 2, 16});
    time_train_step("RCAN x2 64f 2x4", &cfg, 16, 48, 48, 0);
}

#else
static void check_model_ops(void) {
    printf("# optimisers, video ops: skipped (needs the CMake build: the CPU backend is the "
           "reference)\n");
}
static void check_networks(void) {
    printf("# network: skipped (needs the CMake build: the CPU model is the reference)\n");
}
static void check_gan_nets(void) {
    printf("# gan networks: skipped (needs the CMake build: the CPU model is the reference)\n");
}
#endif

int main(int argc, char **argv) {
    /* `gpu_check ops`: the kernels' checks only, without cuDNN's convolutions, the networks
       and the timings (ctest gpu_check.emu: the convolutions there are naive stand-ins and the
       networks run in test_model_cuda_host.emu) */
    int ops_only = argc > 1 && !strcmp(argv[1], "ops");
    int gan_only = argc > 1 && !strcmp(argv[1], "gan");
    if (argc > 1 && !ops_only && !gan_only) {
        fprintf(stderr, "usage: gpu_check [ops | gan]\n");
        return 2;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("no CUDA device: %s\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
        return 77;
    }
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess ||
        (e = cudaSetDevice(0)) != cudaSuccess) {
        printf("no CUDA device: %s\n", cudaGetErrorString(e));
        return 77;
    }
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("# device 0 of %d: %s, sm_%d%d, %.1f GiB; CUDA runtime %d, driver %d, cuDNN %zu\n",
           ndev, prop.name, prop.major, prop.minor,
           (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), rt, drv,
           cudnnGetVersion());
    printf("# %-26s %-36s %s\n", "op", "shape", "max_rel_err (vs max |ref|)");

    if (gan_only) {     /* `gpu_check gan`: the GAN networks alone (also under the emulation) */
        check_gan_nets();
        printf("# %d checks, %d failed\n", g_checks, g_failures);
        return g_failures ? 1 : 0;
    }
    check_input_conversion();
    check_elementwise();
    check_pixel_shuffle(2, 3, 13, 17, 2);
    check_pixel_shuffle(2, 5, 11, 7, 3);
    check_pixel_shuffle(1, 3, 9, 14, 4);
    check_loss(0, (size_t)2 * 3 * 37 * 29);
    check_loss(1, (size_t)2 * 3 * 37 * 29);
    check_loss(2, (size_t)2 * 3 * 37 * 29);
    check_loss(0, (size_t)16 * 3 * 96 * 96 * 3 + 5); /* > one pass of the loss grid */
    check_adam();
    check_bf16();
    if (!ops_only) check_convs();
    check_graph_ops();
    check_model_ops();
    if (!ops_only) check_networks();

    printf("# %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
