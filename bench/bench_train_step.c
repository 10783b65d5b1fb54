/*  bench_train_step — seconds per training step (forward + loss + backward + Adam) of PixFlow's
    CPU backend, for the demo EDSR (n_feats 32, n_blocks 4, x2) and EDSR-baseline (64 / 16,
    x2), batch 16 with 48 x 48 LQ patches, L1 loss. Prints the median of N timed steps after W
    warm-up steps. Threads: oneDNN's OpenMP pool, i.e. OMP_NUM_THREADS (default all cores).
    bench/torch_train_step.py measures the same in PyTorch; bench/run_train_step.sh runs both.

    usage: bench_train_step [--steps N] [--warmup W] [--batch B] [--patch P] [--only demo|baseline]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/rng.h"
#include "nn/model.h"
#include "nn/optim.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void edsr_cfg(pf_config *c, int feats, int blocks) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, "EDSR");
    c->scale = 2;
    c->in_channels = c->out_channels = 3;
    c->n_feats = feats;
    c->n_blocks = blocks;
    c->res_scale = 1.0f;
    c->rgb_mean[0] = 0.4488f;
    c->rgb_mean[1] = 0.4371f;
    c->rgb_mean[2] = 0.4040f;
    c->img_range = 255.0f;
    strcpy(c->loss_type, "L1Loss");
    c->loss_weight = 1.0f;
    c->learning_rate = 1e-4f;
    c->betas[0] = 0.9f;
    c->betas[1] = 0.999f;
    c->eps = 1e-8f;
}

static int bench(const char *label, const pf_config *cfg, int batch, int patch, int warmup,
                 int steps) {
    char err[512];
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    pf_model_init(m, 0);
    pf_adam adam;
    if (pf_adam_init(&adam, pf_model_num_params(m), cfg->betas[0], cfg->betas[1], cfg->eps,
                     cfg->weight_decay)) {
        fprintf(stderr, "out of memory\n");
        pf_model_destroy(&m);
        return -1;
    }
    int s = cfg->scale, gp = patch * s;
    size_t nlq = (size_t)batch * patch * patch * 3, ngt = (size_t)batch * gp * gp * 3;
    uint8_t *lq = malloc(nlq), *gt = malloc(ngt);
    pf_rng r = pf_rng_make(1, 2, 3);
    for (size_t i = 0; i < nlq; i++) lq[i] = (uint8_t)pf_rng_below(&r, 256);
    for (size_t i = 0; i < ngt; i++) gt[i] = (uint8_t)pf_rng_below(&r, 256);
    double *t = calloc((size_t)steps, sizeof(double));
    float loss = 0.0f;
    int rc = 0;
    for (int i = 0; i < warmup + steps; i++) {
        double t0 = now();
        if (pf_model_train_step(m, lq, gt, batch, patch, patch, &loss, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = -1;
            break;
        }
        pf_adam_step(&adam, pf_model_params(m), pf_model_grads(m), cfg->learning_rate);
        if (i >= warmup) t[i - warmup] = now() - t0;
    }
    if (!rc) {
        qsort(t, (size_t)steps, sizeof(double), cmp);
        printf("%-9s EDSR %d feats %d blocks x%d batch %d patch %d: %zu params, median %.4f s/step "
               "(min %.4f, max %.4f, %d steps), last loss %.4f\n",
               label, cfg->n_feats, cfg->n_blocks, s, batch, patch, pf_model_num_params(m),
               t[steps / 2], t[0], t[steps - 1], steps, loss);
    }
    free(t);
    free(lq);
    free(gt);
    pf_adam_free(&adam);
    pf_model_destroy(&m);
    return rc;
}

int main(int argc, char **argv) {
    int steps = 10, warmup = 3, batch = 16, patch = 48;
    const char *only = "";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--patch")) patch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--steps N] [--warmup W] [--batch B] [--patch P] "
                    "[--only demo|baseline]\n", argv[0]);
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    pf_config cfg;
    int rc = 0;
    if (strcmp(only, "baseline")) {
        edsr_cfg(&cfg, 32, 4);
        rc |= bench("demo", &cfg, batch, patch, warmup, steps);
    }
    if (strcmp(only, "demo")) {
        edsr_cfg(&cfg, 64, 16);
        rc |= bench("baseline", &cfg, batch, patch, warmup, steps);
    }
    return rc ? 1 : 0;
}
