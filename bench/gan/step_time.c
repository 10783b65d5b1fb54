/*  step_time — seconds per pf_gan_compute (nn/gan.h): one iteration of Real-ESRGAN's
    training step on the CPU executor (net_g forward, the generator step through the VGG19
    features and net_d, the discriminator step on real and fake), without the optimisers.

    The case (issue 41's Real-ESRGAN step at a size the 2-core machine runs):
      net_g   MSRResNet x4, num_feat 64, num_block 16 (BasicSR's default_init_weights)
      net_d   UNetDiscriminatorSN, num_feat 64, skip_connection (weights and u / v drawn)
      VGG19   conv1_2 0.1, conv2_2 0.1, conv3_4 1, conv4_4 1, conv5_4 1 (train_realesrgan_x4plus
              .yml's layer_weights), use_input_norm, l1, perceptual_weight 1; random weights
              (PyTorch's default init: timing does not depend on their values)
      losses  L1 pixel 1.0 on gt_usm, perceptual on gt_usm, vanilla GAN 0.1 on gt
      data    batch 4, GT patch 128 x 128 (LQ 32 x 32), random uint8, gt_usm = gt
    net_d_iters 1, net_d_init_iters 0: every iteration runs both steps. conv_algorithm auto.

    Prints each timed step (wall clock, and the process's CPU time: on a machine shared with
    other work the wall clock measures the neighbours too), then "pf_gan_compute: median M s,
    min m s over N steps (W warm-up, T threads); CPU median ..., min ..." and the last step's logged terms and a hash of both networks' gradient buffers
    (FNV-1a 64 of the float bytes), so that two builds can be compared for the same result as
    well as for time (bench/gan/README.md, with the last before / after numbers).

    usage: bench_gan_step [--steps N (5)] [--warmup W (1)] [--threads T (OMP_NUM_THREADS)]
                          [--net-g SCALE FEAT BLOCKS (4 64 16; the demo's: 2 32 4)] [--smoke]
      --smoke: batch 1, GT 32, net_g 8 / 2, net_d 8, one step: the same code path, seconds
               (ctest bench_smoke.gan_step).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/rng.h"
#include "common/util.h"
#include "nn/gan.h"
#include "nn/model.h"

/* perceptual_opt of train_realesrgan_x4plus.yml, as the config gives it */
static const char *const PERCEP[][2] = {
    { "layer_weights.conv1_2", "0.1" }, { "layer_weights.conv2_2", "0.1" },
    { "layer_weights.conv3_4", "1" },   { "layer_weights.conv4_4", "1" },
    { "layer_weights.conv5_4", "1" },   { "vgg_type", "vgg19" },
    { "use_input_norm", "true" },       { "perceptual_weight", "1.0" },
    { "style_weight", "0" },            { "range_norm", "false" },
    { "criterion", "l1" },
};

/* This process's CPU time (every thread, user + system), seconds. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t fnv(uint64_t h, const float *v, size_t n) {
    const unsigned char *p = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* net_g: MSRResNet x scale of feat / blocks, BasicSR's init from seed 0. NULL with a
   message. */
static pf_model *generator(int scale, int feat, int blocks) {
    char text[512], err[512];
    snprintf(text, sizeof text,
             "model:\n  type: MSRResNet\n  scale: %d\n  n_feats: %d\n  n_blocks: %d\n"
             "  loss: {type: L1Loss}\ndata:\n  train: {gt_folder: a, gt_patch_size: 128}\n"
             "optimizers: {type: Adam, lr: 1.0e-4}\ntotal_iters: 10\nwork_dir: w\n",
             scale, feat, blocks);
    static pf_config cfg;
    pf_model *g = NULL;
    if (pf_config_parse(&cfg, "step_time.yaml", text, strlen(text), 0, err, sizeof err) ||
        !(g = pf_model_new(&cfg, err, sizeof err))) {
        fprintf(stderr, "bench_gan_step: net_g: %s\n", err);
        return NULL;
    }
    pf_model_init(g, 0);
    return g;
}

/* Real-ESRGAN's options with net_d's num_feat d_feat into *o; 0, or -1 with a message. */
static int options(pf_gan_opts *o, int d_feat) {
    char err[512];
    *o = (pf_gan_opts){ .model_type = PF_GAN_MODEL_REALESRGAN, .net_d_iters = 1,
                        .l1_gt_usm = 1, .percep_gt_usm = 1, .use_pixel = 1, .use_percep = 1,
                        .d_num_in_ch = 3, .d_num_feat = d_feat, .d_skip_connection = 1,
                        .pixel = { .type = PF_LOSS_L1, .weight = 1.0f, .eps = 1e-12f } };
    pf_perceptual_opts_default(&o->percep);
    for (size_t k = 0; k < sizeof PERCEP / sizeof *PERCEP; k++)
        if (pf_perceptual_opts_set(&o->percep, PERCEP[k][0], PERCEP[k][1], err, sizeof err)) {
            fprintf(stderr, "bench_gan_step: perceptual_opt.%s\n", err);
            return -1;
        }
    pf_gan_loss_default(&o->gan, PF_GAN_VANILLA);
    o->gan.loss_weight = 0.1f;
    return 0;
}

/* The timed loop over s: warmup + steps iterations of pf_gan_compute; 0 or -1. */
static int run(pf_gan *s, pf_model *g, int n, int gp, int warmup, int steps) {
    int lp = gp / pf_model_scale(g);
    size_t nlq = (size_t)n * lp * lp * 3, ngt = (size_t)n * gp * gp * 3;
    uint8_t *lq = malloc(nlq), *gt = malloc(ngt);
    double *t = calloc(2 * (size_t)steps + 1, sizeof(double)), *c = t + steps;
    char err[512];
    if (!lq || !gt || !t) {
        fprintf(stderr, "bench_gan_step: out of memory\n");
        free(lq);
        free(gt);
        free(t);
        return -1;
    }
    pf_rng r = pf_rng_make(1, 2, 3);
    for (size_t i = 0; i < nlq; i++) lq[i] = (uint8_t)pf_rng_below(&r, 256);
    for (size_t i = 0; i < ngt; i++) gt[i] = (uint8_t)pf_rng_below(&r, 256);
    pf_gan_losses L;
    int rc = 0;
    for (int i = 0; !rc && i < warmup + steps; i++) {
        double t0 = pf_now(), c0 = cpu_now();
        rc = pf_gan_compute(s, i + 1, lq, gt, NULL, n, lp, lp, &L, err, sizeof err);
        double dt = pf_now() - t0, dc = cpu_now() - c0;
        if (rc) fprintf(stderr, "bench_gan_step: %s\n", err);
        if (!rc && i >= warmup) {
            t[i - warmup] = dt;
            c[i - warmup] = dc;
            printf("step %d: %.3f s, CPU %.3f s\n", i - warmup, dt, dc);
        }
    }
    if (!rc) {
        qsort(t, (size_t)steps, sizeof *t, cmp);
        qsort(c, (size_t)steps, sizeof *c, cmp);
        printf("pf_gan_compute: median %.3f s, min %.3f s over %d steps (%d warm-up, %s "
               "threads); CPU median %.3f s, min %.3f s\n", t[steps / 2], t[0], steps, warmup,
               getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "all", c[steps / 2],
               c[0]);
        printf("last: l_g_pix %.9g l_g_percep %.9g l_g_gan %.9g l_d_real %.9g l_d_fake %.9g "
               "out_d_real %.9g out_d_fake %.9g\n", L.l_g_pix, L.l_g_percep, L.l_g_gan,
               L.l_d_real, L.l_d_fake, L.out_d_real, L.out_d_fake);
        uint64_t h = fnv(0xcbf29ce484222325ULL, pf_model_grads(g), pf_model_num_params(g));
        h = fnv(h, pf_gan_d_grads(s), pf_gan_d_num_params(s));
        printf("gradient hash (net_g, net_d): %016llx\n", (unsigned long long)h);
    }
    free(lq);
    free(gt);
    free(t);
    return rc;
}

int main(int argc, char **argv) {
    int steps = 5, warmup = 1, smoke = 0, scale = 4, feat = 64, blocks = 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) {
            smoke = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "--steps")) {
            steps = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--warmup")) {
            warmup = atoi(argv[++i]);
        } else if (i + 3 < argc && !strcmp(argv[i], "--net-g")) {
            scale = atoi(argv[++i]);
            feat = atoi(argv[++i]);
            blocks = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--threads")) {
            int th = atoi(argv[++i]);
            if (th < 1 || th > PF_MAX_THREADS) {
                fprintf(stderr, "bench_gan_step: --threads 1..%d\n", PF_MAX_THREADS);
                return 2;
            }
            pf_set_threads(th);
        } else {
            fprintf(stderr, "usage: bench_gan_step [--steps N] [--warmup W] [--threads T] "
                    "[--net-g SCALE FEAT BLOCKS] [--smoke]\n");
            return 2;
        }
    }
    if (steps < 1 || warmup < 0) {
        fprintf(stderr, "bench_gan_step: --steps >= 1, --warmup >= 0\n");
        return 2;
    }
    if (smoke) {
        steps = 1;
        warmup = 0;
    }
    int n = smoke ? 1 : 4, gp = smoke ? 32 : 128;
    pf_model *g = smoke ? generator(4, 8, 2) : generator(scale, feat, blocks);
    if (!g) return 1;
    char err[512];
    pf_gan_opts o;
    pf_gan *s = NULL;
    if (!options(&o, smoke ? 8 : 64) && !(s = pf_gan_new(&o, g, 0, err, sizeof err)))
        fprintf(stderr, "bench_gan_step: %s\n", err);
    if (!s) {
        pf_model_destroy(&g);
        return 1;
    }
    pf_model_init(pf_gan_vgg(s), 5);
    int rc = run(s, g, n, gp, warmup, steps);
    pf_gan_free(&s);
    pf_model_destroy(&g);
    return rc ? 1 : 0;
}
