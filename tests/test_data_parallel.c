/*  Data parallel on the CPU: two workers all-reducing with Gloo must train the same model as
    one worker with the doubled batch.

    Why they should agree: rank r of W takes perm[r::W] of each epoch's permutation, so at every
    iteration the two ranks' 4 samples are exactly the single worker's 8 (checked from the
    samples logs, as sets); augmentation depends on (seed, epoch, sample) only; each rank's L1
    loss is a mean over its 4 samples and the workers average their gradients, which is the
    gradient of the mean over all 8. Only the order of floating-point sums differs, so after N
    Adam steps the weights must agree to fp32 rounding. To show the comparison has teeth, a
    single worker with half the batch (same seed, other samples) must differ by far more.
    (Adam is nearly invariant to a constant gradient scale, so summed instead of averaged
    gradients would pass here; tests/test_nn_layers checks the optimiser, this checks the
    data split and the all-reduce.) The same with SGD + momentum + grad_clip + ema_decay, which
    is scale-sensitive, with the EMA tensors compared too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define ITERS 20

static char root[256], bin[1024];

static const char *ADAM = "optimizers: {type: Adam, lr: 1.0e-3}\n";
/* Not scale-invariant, unlike Adam: summed instead of averaged gradients would show. */
static const char *SGD_EMA = "optimizers: {type: SGD, lr: 0.05, momentum: 0.9, "
                             "weight_decay: 1.0e-4}\n"
                             "optimizer_config: {grad_clip: {max_norm: 0.5}}\nema_decay: 0.9\n";

static void write_config(const char *path, const char *work_dir, int spg, int seed,
                         const char *optim) {
    FILE *f = fopen(path, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 16, n_blocks: 2, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: %d\n"
            "  train: {type: PairedImageDataset, gt_folder: %s/train, gt_patch_size: 32,\n"
            "          use_flip: true, use_rot: true, repeat: 4}\n"
            "  test: {type: PairedImageDataset, gt_folder: %s/train}\n"
            "%s"
            "total_iters: %d\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: %d\n",
            spg, root, root, optim, ITERS, work_dir, seed);
    fclose(f);
}

static int train(const char *tag, int spg, int seed, const char *workers, const char *optim) {
    char cfg[600], wd[600], out[600];
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
    snprintf(wd, sizeof wd, "%s/%s", root, tag);
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    write_config(cfg, wd, spg, seed, optim);
    run r;
    start_job(&r, bin, out, cfg, "2", NULL, "--workers", workers);
    int st = finish(&r, 300);
    CHECK(st == 0, "%s: pixflow train exited with %d (see %s)", tag, st, out);
    return st;
}

/* Largest |a - b| over all tensors relative to the largest |b| of the same tensor. */
static double weight_distance(const char *tag_a, const char *tag_b) {
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/%s/checkpoints/iter_%d.safetensors", root, tag_a, ITERS);
    snprintf(pb, sizeof pb, "%s/%s/checkpoints/iter_%d.safetensors", root, tag_b, ITERS);
    return ckpt_distance(pa, pb, 1, NULL);
}

/* Per iteration, the sorted sample ids of every rank's batch together. */
static int batches(const char *tag, int ranks, unsigned ids[ITERS][16]) {
    int count[ITERS] = { 0 };
    for (int r = 0; r < ranks; r++) {
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%s/samples_rank%d.log", root, tag, r);
        char *t = pf_read_file(path, NULL, err, sizeof err);
        if (!t) return -1;
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
            int it;
            char list[256];
            if (sscanf(line, "%d %*u %*u %255s", &it, list) != 2 || it < 0 || it >= ITERS)
                continue;
            char *save = NULL;
            for (char *tok = strtok_r(list, ",", &save); tok && count[it] < 16;
                 tok = strtok_r(NULL, ",", &save))
                ids[it][count[it]++] = (unsigned)atoi(tok);
        }
        free(t);
    }
    for (int it = 0; it < ITERS; it++)
        for (int i = 1; i < count[it]; i++)
            for (int j = i; j > 0 && ids[it][j - 1] > ids[it][j]; j--) {
                unsigned x = ids[it][j];
                ids[it][j] = ids[it][j - 1];
                ids[it][j - 1] = x;
            }
    int total = 0;
    for (int it = 0; it < ITERS; it++) total += count[it];
    return total;
}

int main(void) {
    pf_test_job_begin("dp", bin, sizeof bin, root, sizeof root);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, 8, 48, 11);
    setenv("OMP_NUM_THREADS", "1", 1);

    if (train("two_workers", 4, 7, "2", ADAM) == 0 && train("one_worker", 8, 7, "1", ADAM) == 0 &&
        train("half_batch", 4, 7, "1", ADAM) == 0) {
        static unsigned a[ITERS][16], c[ITERS][16];
        CHECK(batches("two_workers", 2, a) == ITERS * 8, "two workers consumed %d samples",
              batches("two_workers", 2, a));
        CHECK(batches("one_worker", 1, c) == ITERS * 8, "one worker consumed the wrong count");
        CHECK(memcmp(a, c, sizeof a) == 0,
              "the two ranks' batches together are not the single worker's batches");
        double same = weight_distance("two_workers", "one_worker");
        double other = weight_distance("half_batch", "one_worker");
        printf("after %d steps: 2 workers x 4 vs 1 worker x 8: max relative weight "
               "difference %.3g; 1 worker x 4: %.3g\n", ITERS, same, other);
        CHECK(same < 1e-4, "data parallel drifted from the single worker: %.3g", same);
        CHECK(other > 100 * same && other > 1e-3,
              "the comparison cannot tell runs apart (%.3g vs %.3g)", other, same);
    }
    /* SGD with momentum, clipping and an EMA: the same agreement, EMA tensors included
       (weight_distance compares every tensor of the checkpoint, params_ema.* too). */
    if (train("two_workers_sgd", 4, 7, "2", SGD_EMA) == 0 &&
        train("one_worker_sgd", 8, 7, "1", SGD_EMA) == 0 &&
        train("half_batch_sgd", 4, 7, "1", SGD_EMA) == 0) {
        double same = weight_distance("two_workers_sgd", "one_worker_sgd");
        double other = weight_distance("half_batch_sgd", "one_worker_sgd");
        printf("SGD + EMA: 2 workers x 4 vs 1 worker x 8: %.3g; 1 worker x 4: %.3g\n", same,
               other);
        CHECK(same < 1e-4, "SGD data parallel drifted from the single worker: %.3g", same);
        CHECK(other > 100 * same && other > 1e-3,
              "SGD: the comparison cannot tell runs apart (%.3g vs %.3g)", other, same);
        /* pixflow test evaluates the EMA weights of such a checkpoint and says so. */
        char scfg[600], sck[700], sout[700], err[256];
        snprintf(scfg, sizeof scfg, "%s/one_worker_sgd.yaml", root);
        snprintf(sck, sizeof sck, "%s/one_worker_sgd/checkpoints/iter_%d.safetensors", root,
                 ITERS);
        snprintf(sout, sizeof sout, "%s/test_sgd.out", root);
        run r;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, sout, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        char *argv[] = { bin, "test", scfg, "--checkpoint", sck, NULL };
        CHECK(posix_spawn(&r.pid, bin, &fa, NULL, argv, environ) == 0, "spawn");
        posix_spawn_file_actions_destroy(&fa);
        CHECK(finish(&r, 120) == 0, "pixflow test of the SGD checkpoint failed (see %s)", sout);
        char *text = pf_read_file(sout, NULL, err, sizeof err);
        CHECK(text && strstr(text, "its EMA weights (params_ema.*)"),
              "pixflow test does not say it used the EMA weights:\n%s", text ? text : err);
        free(text);
    }
    /* pixflow test split over 3 workers gives the single worker's table, byte for byte. */
    char cfg[600], ck[700], out[700], tsv[800];
    snprintf(cfg, sizeof cfg, "%s/one_worker.yaml", root);
    snprintf(ck, sizeof ck, "%s/one_worker/checkpoints/iter_%d.safetensors", root, ITERS);
    snprintf(tsv, sizeof tsv, "%s/one_worker/test/iter_%d/results.tsv", root, ITERS);
    char *tables[2] = { NULL, NULL };
    const char *nw[2] = { "1", "3" };
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/test_%s.out", root, nw[k]);
        run r;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        char *argv[] = { bin, "test", cfg, "--checkpoint", ck, "--workers", (char *)nw[k],
                         NULL };
        CHECK(posix_spawn(&r.pid, bin, &fa, NULL, argv, environ) == 0, "spawn");
        posix_spawn_file_actions_destroy(&fa);
        int st = finish(&r, 120);
        CHECK(st == 0, "pixflow test --workers %s exited with %d (see %s)", nw[k], st, out);
        char err[256];
        tables[k] = pf_read_file(tsv, NULL, err, sizeof err);
        CHECK(tables[k] != NULL, "%s", err);
    }
    CHECK(tables[0] && tables[1] && strcmp(tables[0], tables[1]) == 0 &&
              strstr(tables[0], "img07\t"),
          "pixflow test on 3 workers gave another table:\n%s\nvs\n%s",
          tables[0] ? tables[0] : "", tables[1] ? tables[1] : "");
    free(tables[0]);
    free(tables[1]);

    /* evaluation.instances 3 splits the eval set over three eval services; instance 0's
       gathered means equal one service's (to summation order). */
    double psnr[2][2] = { { 0 } }, ssim[2][2] = { { 0 } };
    int got[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
        char ecfg[600], ewd[600], eout[600];
        snprintf(ecfg, sizeof ecfg, "%s/eval%d.yaml", root, k);
        snprintf(ewd, sizeof ewd, "%s/eval%d", root, k);
        snprintf(eout, sizeof eout, "%s/eval%d.out", root, k);
        FILE *f = fopen(ecfg, "w");
        fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
                   "data:\n  samples_per_gpu: 4\n"
                   "  train: {type: PairedImageDataset, gt_folder: %s/train, gt_patch_size: 32,"
                   " repeat: 4}\n"
                   "  eval: {type: PairedImageDataset, gt_folder: %s/train}\n"
                   "optimizers: {lr: 1.0e-3}\ntotal_iters: 10\n"
                   "checkpoint_config: {interval: 5}\n"
                   "evaluation: {interval: 5, crop_border: 2, convert_to: y, instances: %d}\n"
                   "work_dir: %s\nseed: 1\n", root, root, k ? 3 : 1, ewd);
        fclose(f);
        run r;
        start_job(&r, bin, eout, ecfg, "1", NULL, NULL, NULL);
        int st = finish(&r, 300);
        CHECK(st == 0, "eval instances run %d exited with %d (see %s)", k, st, eout);
        char path[700], err[256];
        snprintf(path, sizeof path, "%s/metrics.jsonl", ewd);
        char *t = pf_read_file(path, NULL, err, sizeof err);
        for (char *line = t ? strtok(t, "\n") : NULL; line; line = strtok(NULL, "\n")) {
            double it = 0, p = 0, q = 0;
            char *e = strstr(line, "\"kind\":\"eval\"");
            if (!e) continue;
            char *pi = strstr(line, "\"iter\":"), *pp = strstr(line, "\"psnr\":"),
                 *ps = strstr(line, "\"ssim\":");
            if (!pi || !pp || !ps) continue;
            it = atof(pi + 7);
            p = atof(pp + 7);
            q = atof(ps + 7);
            int slot = it == 5 ? 0 : it == 10 ? 1 : -1;
            if (slot >= 0) {
                psnr[k][slot] = p;
                ssim[k][slot] = q;
                got[k]++;
            }
        }
        free(t);
    }
    CHECK(got[0] == 2 && got[1] == 2, "eval entries: %d with 1 instance, %d with 3", got[0],
          got[1]);
    for (int slot = 0; slot < 2; slot++) {
        CHECK(fabs(psnr[0][slot] - psnr[1][slot]) < 1e-9 && psnr[0][slot] > 10,
              "PSNR %.12g (1 instance) vs %.12g (3 instances)", psnr[0][slot], psnr[1][slot]);
        CHECK(fabs(ssim[0][slot] - ssim[1][slot]) < 1e-9, "SSIM %.12g vs %.12g",
              ssim[0][slot], ssim[1][slot]);
    }

    int rc = pf_test_end("test_data_parallel");
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    } else {
        fprintf(stderr, "outputs kept in %s\n", root);
    }
    return rc;
}
