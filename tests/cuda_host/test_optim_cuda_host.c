/*  test_optim_cuda_host — the device optimiser (nn/cuda/optim_cuda.c) run on the host, with
    tests/cuda_host/host_ops.c standing in for the device (its per-range updates are nn/optim.c
    on that range), against nn/optim.c's pf_optim over the whole buffer: Adam, AdamW, SGD
    (momentum, dampening, Nesterov, plain), weight decay, paramwise groups (one frozen with
    lr_mult 0, others with lr and decay multipliers, one joining at step 3 as BasicVSR's SPyNet
    after fix_iter 2), the EMA and clipping, over 4 steps. What
    it checks is optim_cuda.c's part — the group loop, the multipliers, the step count, which
    buffers exist, the EMA skipping frozen groups, the state going up and down — so the
    parameters, every state buffer and the step must be bit-identical. The kernels need a GPU:
    bench/gpu/gpu_check. Built only with the CUDA backend.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/optim_cuda.h"
#include "tests/pf_test.h"

#define N 40

static uint64_t rng = 99;
static float uniform(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static int same(const float *a, const float *b, size_t n) {
    return (!a && !b) || (a && b && !memcmp(a, b, n * sizeof(float)));
}

/* grouped 2: the groups of 1 with the normal one (20..29) joining late (start 2). */
static void run(const char *label, pf_optim_settings s, int grouped, float ema, float clip) {
    pf_optim host, back;
    float p_host[N], p_dev[N], g[N], g_dev[N];
    for (int i = 0; i < N; i++) p_host[i] = p_dev[i] = uniform();
    if (pf_optim_init(&host, N, &s) || pf_optim_init(&back, N, &s)) exit(2);
    /* four tensors: frozen, slow with no decay, normal, fast */
    pf_optim_group groups[4] = {
        {0, 10, 0.0f, 1.0f, 0}, {10, 10, 0.1f, 0.0f, 0}, {20, 10, 1.0f, 1.0f, 0}, {30, 10, 2.0f, 0.5f, 0}};
    if (grouped == 2) groups[2].start = 2;
    float late0[10];
    memcpy(late0, p_host + 20, sizeof late0);
    if (grouped && (pf_optim_set_groups(&host, groups, 4) || pf_optim_set_groups(&back, groups, 4)))
        exit(2);
    if (ema > 0 && (pf_optim_ema_init(&host, ema, p_host) || pf_optim_ema_init(&back, ema, p_host)))
        exit(2);
    pf_cuda_optim dev;
    char err[512];
    int rc = pf_cuda_optim_init(&dev, &host, 0, err, sizeof err);
    CHECK(rc == 0, "%s: init: %s", label, err);
    if (rc) return;
    for (int t = 1; t <= 4; t++) {
        for (int i = 0; i < N; i++) g[i] = g_dev[i] = uniform() * (clip > 0 ? 3.0f : 1.0f);
        float lr = 0.01f * (float)t;
        if (clip > 0) {
            /* a group not yet in: no gradient, none in the norm (the CPU worker's rule) */
            if (grouped == 2 && t <= 2) memset(g + 20, 0, 10 * sizeof(float));
            pf_clip_grad_norm(g, N, clip);
            CHECK(pf_cuda_optim_clip(&dev, g_dev, clip, err, sizeof err) == 0, "%s", err);
            CHECK(same(g, g_dev, N), "%s step %d: clipped gradients differ", label, t);
        }
        pf_optim_step(&host, p_host, g, lr);
        CHECK(pf_cuda_optim_step(&dev, p_dev, g_dev, lr, err, sizeof err) == 0, "%s", err);
        CHECK(same(p_host, p_dev, N), "%s step %d: parameters differ", label, t);
        if (grouped == 2)
            CHECK((t <= 2) == !memcmp(p_dev + 20, late0, sizeof late0),
                  "%s step %d: the late group %s", label, t, t <= 2 ? "moved" : "did not move");
    }
    CHECK(pf_cuda_optim_download(&dev, &back, err, sizeof err) == 0, "%s: %s", label, err);
    CHECK(back.step == host.step, "%s: step %lld, host %lld", label, (long long)back.step,
          (long long)host.step);
    CHECK(same(back.exp_avg, host.exp_avg, N) && same(back.exp_avg_sq, host.exp_avg_sq, N) &&
              same(back.momentum_buffer, host.momentum_buffer, N) && same(back.ema, host.ema, N),
          "%s: state buffers differ after download", label);
    if (grouped) /* a frozen tensor is never written, its EMA stays equal to it */
        CHECK(!memcmp(p_dev, p_host, 10 * sizeof(float)) &&
                  (!back.ema || !memcmp(back.ema, p_dev, 10 * sizeof(float))),
              "%s: frozen group moved", label);
    printf("%-34s 4 steps: parameters and state bit-identical to nn/optim.c\n", label);
    pf_cuda_optim_free(&dev);
    pf_optim_free(&host);
    pf_optim_free(&back);
}

int main(void) {
    pf_optim_settings adam = {PF_OPTIM_ADAM, 0.9f, 0.99f, 1e-8f, 0.0f, 0, 0, 0};
    run("Adam", adam, 0, 0, 0);
    adam.weight_decay = 1e-2f;
    run("Adam wd, groups, EMA", adam, 1, 0.999f, 0);
    pf_optim_settings adamw = {PF_OPTIM_ADAMW, 0.9f, 0.999f, 1e-8f, 1e-2f, 0, 0, 0};
    run("AdamW groups, clip", adamw, 1, 0, 0.5f);
    pf_optim_settings sgd = {PF_OPTIM_SGD, 0, 0, 0, 1e-4f, 0.9f, 0.1f, 0};
    run("SGD momentum dampening, groups, EMA", sgd, 1, 0.9f, 0);
    pf_optim_settings nesterov = {PF_OPTIM_SGD, 0, 0, 0, 0.0f, 0.9f, 0.0f, 1};
    run("SGD Nesterov, clip", nesterov, 0, 0, 1.0f);
    pf_optim_settings plain = {PF_OPTIM_SGD, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0};
    run("SGD plain, groups", plain, 1, 0, 0);
    adam.weight_decay = 0;
    run("Adam, a group joining at 3, EMA, clip", adam, 2, 0.99f, 0.5f);
    run("SGD momentum, a group joining at 3, clip", sgd, 2, 0, 0.5f);

    /* state of another kind is refused, naming both */
    pf_optim a, b;
    pf_cuda_optim dev;
    char err[512] = "";
    if (pf_optim_init(&a, N, &adam) || pf_optim_init(&b, N, &sgd)) exit(2);
    CHECK(pf_cuda_optim_init(&dev, &a, 0, err, sizeof err) == 0, "%s", err);
    CHECK(pf_cuda_optim_upload(&dev, &b, err, sizeof err) != 0 && strstr(err, "SGD") &&
              strstr(err, "Adam"),
          "kind mismatch: '%s'", err);
    pf_cuda_optim_free(&dev);
    pf_optim_free(&a);
    pf_optim_free(&b);
    return pf_test_end("test_optim_cuda_host");
}
