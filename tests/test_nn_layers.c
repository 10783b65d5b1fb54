/*  test_nn_layers — parameter-free layers, losses, Adam and LR schedules against independent
    computations: pixel shuffle forward/backward vs the naive index formula on NCHW (through
    blocked layouts), the three losses and their gradients vs direct formulas, Adam vs the
    textbook update in double, and MMCV LR schedules vs values computed by hand. */
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "nn/lr_schedule.h"
#include "nn/optim.h"
#include "tests/pf_test.h"

static void test_pixel_shuffle(int n, int c, int h, int w, int r, int bi, int bo) {
    int cs = c * r * r, H = h * r, W = w * r;
    size_t nin = (size_t)n * cs * h * w;
    float *in = malloc(nin * 4), *inb = malloc(pf_blk_numel(n, cs, h, w, bi) * 4);
    float *outb = malloc(pf_blk_numel(n, c, H, W, bo) * 4);
    float *dinb = malloc(pf_blk_numel(n, cs, h, w, bi) * 4);
    pf_rng g = pf_rng_make(7, (uint64_t)r, (uint64_t)bi);
    memset(inb, 0, pf_blk_numel(n, cs, h, w, bi) * 4);
    for (size_t i = 0; i < nin; i++) in[i] = (float)pf_rng_uniform(&g);
    for (int a = 0; a < n; a++)
        for (int k = 0; k < cs; k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    inb[pf_blk_off(a, k, y, x, cs, h, w, bi)] = in[((a * cs + k) * h + y) * w + x];
    pf_pixel_shuffle_forward(outb, inb, n, c, h, w, r, bi, bo);
    int bad = 0;
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    /* torch: out[n][k][y][x] = in[n][k r^2 + (y % r) r + x % r][y / r][x / r] */
                    float want = in[((a * cs + k * r * r + (y % r) * r + x % r) * h + y / r) * w + x / r];
                    if (outb[pf_blk_off(a, k, y, x, c, H, W, bo)] != want) bad++;
                }
    CHECK(bad == 0, "pixel shuffle r=%d blocks %d->%d: %d wrong elements", r, bi, bo, bad);
    /* backward of a permutation is its inverse: din must equal in again */
    pf_pixel_shuffle_backward(dinb, outb, n, c, h, w, r, bi, bo);
    bad = 0;
    for (size_t i = 0; i < pf_blk_numel(n, cs, h, w, bi); i++) bad += dinb[i] != inb[i];
    CHECK(bad == 0, "pixel shuffle backward r=%d blocks %d->%d: %d wrong elements", r, bi, bo,
          bad);
    free(in); free(inb); free(outb); free(dinb);
}

static void test_losses(void) {
    const int n = 2, h = 3, w = 5, b = 8;
    uint8_t gt[2 * 3 * 5 * 3];
    float out[2 * 8 * 3 * 5], d[2 * 8 * 3 * 5];
    const float mean[3] = { 0.4488f, 0.4371f, 0.4040f };
    pf_rng g = pf_rng_make(11, 0, 0);
    for (size_t i = 0; i < sizeof gt; i++) gt[i] = (uint8_t)pf_rng_below(&g, 256);
    memset(out, 0, sizeof out);
    for (int a = 0; a < n; a++)
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    out[pf_blk_off(a, c, y, x, 3, h, w, b)] = (float)(255.0 * (pf_rng_uniform(&g) - 0.4));
    const char *names[3] = { "L1Loss", "MSELoss", "CharbonnierLoss" };
    for (int t = 0; t < 3; t++) {
        pf_loss l;
        CHECK(pf_loss_parse(names[t], &l.type) == 0, "parse %s", names[t]);
        l.weight = 0.7f;
        l.eps = 1e-3f;
        double got = pf_loss_forward_backward(&l, out, gt, n, 1, h, w, mean, 255.0f, b, d);
        double want = 0.0, count = n * h * w * 3;
        int bad = 0;
        for (int a = 0; a < n; a++)
            for (int c = 0; c < 3; c++)
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) {
                        size_t o = pf_blk_off(a, c, y, x, 3, h, w, b);
                        double pred = out[o] / 255.0 + mean[c];
                        double diff = pred - gt[((a * h + y) * w + x) * 3 + c] / 255.0;
                        double v, dv;
                        if (t == 0) { v = fabs(diff); dv = diff > 0 ? 1 : -1; }
                        else if (t == 1) { v = diff * diff; dv = 2 * diff; }
                        else { v = sqrt(diff * diff + 1e-3); dv = diff / v; }
                        want += v;
                        double dwant = 0.7 * dv / count / 255.0;
                        if (fabs(d[o] - dwant) > 1e-4 * fabs(dwant) + 1e-12) bad++;
                    }
        want = want / count * 0.7;
        CHECK(fabs(got - want) <= 1e-6 * want, "%s: %.9g vs %.9g", names[t], got, want);
        CHECK(bad == 0, "%s: %d wrong gradient elements", names[t], bad);
        int pad_ok = 1;
        for (int a = 0; a < n; a++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int c = 3; c < b; c++)
                        pad_ok &= d[pf_blk_off(a, c, y, x, b, h, w, b)] == 0.0f;
        CHECK(pad_ok, "%s: gradient in padding channels not zero", names[t]);
        /* the same values as one clip of two frames (channel 3 t + c, GT frame-major): the
           same loss, each gradient element where its value went; and back to images */
        float clip[8 * 3 * 5], dclip[8 * 3 * 5], img[2 * 3 * 5 * 3];
        memset(clip, 0, sizeof clip);
        for (int a = 0; a < n; a++)
            for (int c = 0; c < 3; c++)
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        clip[pf_blk_off(0, 3 * a + c, y, x, 6, h, w, b)] =
                            out[pf_blk_off(a, c, y, x, 3, h, w, b)];
        double got2 = pf_loss_forward_backward(&l, clip, gt, 1, 2, h, w, mean, 255.0f, b, dclip);
        pf_act_to_image(img, clip, 1, 2, h, w, mean, 255.0f, b);
        int moved = 0, imaged = 0;
        for (int a = 0; a < n; a++)
            for (int c = 0; c < 3; c++)
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) {
                        float o = out[pf_blk_off(a, c, y, x, 3, h, w, b)];
                        moved += dclip[pf_blk_off(0, 3 * a + c, y, x, 6, h, w, b)] !=
                                 d[pf_blk_off(a, c, y, x, 3, h, w, b)];
                        imaged += img[((a * h + y) * w + x) * 3 + c] != o / 255.0f + mean[c];
                    }
        CHECK(got2 == got && moved == 0, "%s as a clip of 2 frames: %.9g vs %.9g, %d gradient "
              "elements differ", names[t], got2, got, moved);
        CHECK(imaged == 0, "pf_act_to_image of 2 frames: %d elements differ", imaged);
    }
    pf_loss_type ty;
    CHECK(pf_loss_parse("PerceptualLoss", &ty) == -1, "unknown loss accepted");
}

static void test_adam(void) {
    enum { N = 5 };
    float p[N] = { 0.5f, -1.0f, 0.0f, 2.0f, 1e-3f };
    double pd[N], md[N] = { 0 }, vd[N] = { 0 };
    for (int i = 0; i < N; i++) pd[i] = p[i];
    pf_adam a;
    CHECK(pf_adam_init(&a, N, 0.9f, 0.999f, 1e-8f, 0.01f) == 0, "adam init");
    for (int t = 1; t <= 4; t++) {
        float g[N];
        for (int i = 0; i < N; i++) g[i] = (float)(0.1 * (i + 1) * (t % 2 ? 1 : -2));
        float lr = 1e-2f * t;
        pf_adam_step(&a, p, g, lr);
        for (int i = 0; i < N; i++) {
            double gg = g[i] + 0.01 * pd[i];
            md[i] = 0.9 * md[i] + 0.1 * gg;
            vd[i] = 0.999 * vd[i] + 0.001 * gg * gg;
            double mh = md[i] / (1 - pow(0.9, t)), vh = vd[i] / (1 - pow(0.999, t));
            pd[i] -= lr * mh / (sqrt(vh) + 1e-8);
        }
    }
    CHECK(a.step == 4, "step %lld", (long long)a.step);
    for (int i = 0; i < N; i++) CHECK_NEAR(p[i], pd[i], 1e-6);
    pf_adam_free(&a);
}

static void test_lr(void) {
    pf_config c;
    memset(&c, 0, sizeof c);
    c.learning_rate = 1e-4f;
    strcpy(c.lr_policy, "Fixed");
    CHECK_NEAR(pf_lr_at(&c, 123456), 1e-4, 1e-10);

    strcpy(c.lr_policy, "Step");
    c.n_lr_step = 2;
    c.lr_step[0] = 100;
    c.lr_step[1] = 250;
    c.lr_gamma = 0.5f;
    CHECK_NEAR(pf_lr_at(&c, 0), 1e-4, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 99), 1e-4, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 100), 5e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 249), 5e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 250), 2.5e-5, 1e-10);

    /* CosineRestart periods (10, 20), weights (1, 0.5), min 1e-6:
       iter 5: 1e-6 + 0.5 * 1 * (1e-4 - 1e-6) * (1 + cos(pi/2)) = 5.05e-5
       iter 10: restart, alpha 0, weight 0.5: 1e-6 + 0.5 * 0.5 * 9.9e-5 * 2 = 5.05e-5
       iter 20: alpha 0.5: 1e-6 + 0.25 * 9.9e-5 = 2.575e-5; past the end: min_lr */
    strcpy(c.lr_policy, "CosineRestart");
    c.n_lr_periods = 2;
    c.lr_periods[0] = 10;
    c.lr_periods[1] = 20;
    c.lr_restart_weights[0] = 1.0f;
    c.lr_restart_weights[1] = 0.5f;
    c.lr_min = 1e-6f;
    CHECK_NEAR(pf_lr_at(&c, 0), 1e-4, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 5), 5.05e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 10), 5.05e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 20), 2.575e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 30), 1e-6, 1e-10);
    /* the same schedule from another base (a GAN job's optim_d.lr, 2e-4), min_lr absolute:
       iter 5: 1e-6 + 0.5 * (2e-4 - 1e-6) = 1.005e-4; iter 20: 1e-6 + 0.25 * 1.99e-4 =
       5.075e-5; past the end: 1e-6 */
    CHECK_NEAR(pf_lr_at_base(&c, 2e-4, 5), 1.005e-4, 1e-10);
    CHECK_NEAR(pf_lr_at_base(&c, 2e-4, 20), 5.075e-5, 1e-10);
    CHECK_NEAR(pf_lr_at_base(&c, 2e-4, 30), 1e-6, 1e-10);
    CHECK(pf_lr_at_base(&c, c.learning_rate, 17) == pf_lr_at(&c, 17), "pf_lr_at's base");

    /* linear warmup, 10 iters, ratio 0.1, over Fixed 1e-4:
       iter 0: k = 0.9 -> 1e-5; iter 5: k = 0.5 * 0.9 = 0.45 -> 5.5e-5; iter 10: 1e-4 */
    strcpy(c.lr_policy, "Fixed");
    strcpy(c.lr_warmup, "linear");
    c.lr_warmup_iters = 10;
    c.lr_warmup_ratio = 0.1f;
    CHECK_NEAR(pf_lr_at(&c, 0), 1e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 5), 5.5e-5, 1e-10);
    CHECK_NEAR(pf_lr_at(&c, 10), 1e-4, 1e-10);
    CHECK_NEAR(pf_lr_at_base(&c, 3e-4, 5), 1.65e-4, 1e-10);   /* 3e-4 * (1 - 0.45) */
}

int main(void) {
    test_pixel_shuffle(2, 8, 5, 7, 2, 8, 8);
    test_pixel_shuffle(2, 8, 3, 4, 3, 8, 8);
    test_pixel_shuffle(1, 3, 4, 3, 2, 1, 1);
    test_pixel_shuffle(2, 5, 3, 5, 2, 8, 16);
    test_pixel_shuffle(1, 4, 3, 3, 3, 16, 1);
    test_losses();
    test_adam();
    test_lr();
    return pf_test_end("test_nn_layers");
}
