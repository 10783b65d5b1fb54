/*  End-to-end video training: `pixflow train` of a small BasicVSR on generated clips, every
    role its own process, and the determinism contracts of the image sets held for clips
    (REDSRecurrentDataset samples: a clip's frames, interval_list [1, 2], random_reverse, one
    crop and one set of flips for all frames).

    Clips: three folders of PNG frames and one FFV1 video (made from PNG frames by the ffmpeg
    CLI, so the loaders decode video through common/video.c and seek in it).

    A. 1 loader: the reference (samples log: sample ids and the FNV-1a digest of each batch's
       GT and LQ bytes, all frames; metrics.jsonl: loss and learning rate per iteration).
    B. 3 loaders: the same batches, bit for bit, and the same losses.
    C. 3 loaders, one killed with SIGKILL mid-run: the job finishes; every epoch consumes each
       sample exactly once; the batches still equal run A's.
    D. SIGINT mid-run (exit 130, a checkpoint), then `--resume auto`: the losses and learning
       rates after the resume point equal run A's, and so do the batches.
*/
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define FRAMES 12           /* frames per clip */
#define CLIPS 4
#define BATCH 4
#define TOTAL_ITERS 120
#define ITERS_PER_EPOCH (CLIPS * FRAMES / BATCH)

static char root[256], bin[1024];

static void write_config(const char *path, const char *work_dir) {
    FILE *f = fopen(path, "w");
    fprintf(f,
            "model: {type: BasicVSR, scale: 4, num_feat: 4, num_block: 1,\n"
            "        loss: {type: CharbonnierLoss, eps: 1.0e-12}}\n"
            "data:\n"
            "  samples_per_gpu: %d\n"
            "  prefetch: 3\n"
            "  cache_mb: 1\n"               /* most frames decoded again: seeks in the video */
            "  train:\n"
            "    type: REDSRecurrentDataset\n"
            "    gt_folder: %s/clips\n"
            "    clips:\n"
            "      - {name: '000'}\n"
            "      - {name: '001'}\n"
            "      - {name: '002'}\n"
            "      - {name: moving.mkv}\n"
            "    num_frame: 3\n"
            "    interval_list: [1, 2]\n"
            "    random_reverse: true\n"
            "    use_hflip: true\n"
            "    use_rot: true\n"
            "    gt_patch_size: 32\n"
            "optimizers: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.99]}\n"
            "lr_config: {policy: Step, step: [60], gamma: 0.5}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: 1000, max_keep_ckpts: 2}\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: 11\n",
            BATCH, root, TOTAL_ITERS, work_dir);
    fclose(f);
}

static void start(run *r, const char *cfg, const char *loaders, const char *resume,
                  const char *tag) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    start_job(r, bin, out, cfg, loaders, resume, NULL, NULL);
}

int main(void) {
    pf_test_job_begin("e2e_video", bin, sizeof bin, root, sizeof root);
    char dir[600], cfg[600], wd[4][600], cmd[2048];
    for (int c = 0; c < 3; c++) {
        snprintf(dir, sizeof dir, "%s/clips/%03d", root, c);
        make_clip(dir, c, 1 + c, c % 2, 48, 40, FRAMES);
    }
    snprintf(dir, sizeof dir, "%s/frames_moving", root);
    make_clip(dir, 3, 2, 1, 48, 40, FRAMES);
    snprintf(cmd, sizeof cmd, "ffmpeg -loglevel error -y -i '%s/%%08d.png' -c:v ffv1 "
             "-pix_fmt bgr0 -g 4 '%s/clips/moving.mkv'", dir, root);
    int made = system(cmd);
    CHECK(made == 0, "ffmpeg could not make the video clip (%s): status %d", cmd, made);
    if (made) return pf_test_job_end("test_e2e_video", root);
    const char *tags[4] = { "one", "three", "killed", "interrupted" };
    for (int i = 0; i < 4; i++) snprintf(wd[i], sizeof wd[i], "%s/work_%s", root, tags[i]);
    setenv("OMP_NUM_THREADS", "2", 1);  /* the same thread count for every run */

    /* A: reference, 1 loader. */
    run r;
    snprintf(cfg, sizeof cfg, "%s/one.yaml", root);
    write_config(cfg, wd[0]);
    double t0 = pf_now();
    start(&r, cfg, "1", NULL, "one");
    int st = finish(&r, 400);
    CHECK(st == 0, "run A exited with %d (see %s)", st, r.out);
    printf("run A: %d iterations of BasicVSR on 4 clips (3 frames a sample) in %.1f s\n",
           TOTAL_ITERS, pf_now() - t0);
    check_exactly_once(wd[0], 1, TOTAL_ITERS, ITERS_PER_EPOCH, CLIPS * FRAMES, "run A");
    char *ref = samples(wd[0]);
    static double loss_a[TOTAL_ITERS + 1], lr_a[TOTAL_ITERS + 1];
    CHECK(train_curve(wd[0], loss_a, lr_a, TOTAL_ITERS) == TOTAL_ITERS,
          "run A: metrics.jsonl lacks train entries");
    double first = 0, last = 0;
    for (int i = 1; i <= 20; i++) {
        first += loss_a[i];
        last += loss_a[TOTAL_ITERS + 1 - i];
    }
    CHECK(last < first, "loss did not go down: first 20 iterations %g, last 20 %g", first / 20,
          last / 20);
    printf("run A: mean loss of the first 20 iterations %.4f, of the last 20 %.4f\n",
           first / 20, last / 20);

    /* B: 3 loaders, same batches and losses. */
    snprintf(cfg, sizeof cfg, "%s/three.yaml", root);
    write_config(cfg, wd[1]);
    start(&r, cfg, "3", NULL, "three");
    st = finish(&r, 400);
    CHECK(st == 0, "run B exited with %d (see %s)", st, r.out);
    char *s = samples(wd[1]);
    CHECK(strcmp(s, ref) == 0, "3 loaders delivered other batches than 1 loader");
    free(s);
    static double loss_b[TOTAL_ITERS + 1], lr_b[TOTAL_ITERS + 1];
    train_curve(wd[1], loss_b, lr_b, TOTAL_ITERS);
    CHECK(memcmp(loss_a, loss_b, sizeof loss_a) == 0, "losses differ between 1 and 3 loaders");

    /* C: kill -9 one of 3 loaders mid-run. */
    snprintf(cfg, sizeof cfg, "%s/killed.yaml", root);
    write_config(cfg, wd[2]);
    start(&r, cfg, "3", NULL, "killed");
    CHECK(wait_lines(wd[2], 40, 200), "run C did not reach iteration 40");
    pid_t victim = pid_of(r.out, "loader2");
    CHECK(victim > 0 && kill(victim, SIGKILL) == 0, "could not kill loader2 (pid %d)",
          (int)victim);
    st = finish(&r, 400);
    CHECK(st == 0, "run C exited with %d after a loader was killed (see %s)", st, r.out);
    check_exactly_once(wd[2], 1, TOTAL_ITERS, ITERS_PER_EPOCH, CLIPS * FRAMES, "run C");
    s = samples(wd[2]);
    CHECK(strcmp(s, ref) == 0, "batches changed when a loader died");
    free(s);

    /* D: SIGINT mid-run, then resume. */
    snprintf(cfg, sizeof cfg, "%s/interrupted.yaml", root);
    write_config(cfg, wd[3]);
    start(&r, cfg, "2", NULL, "interrupted");
    CHECK(wait_lines(wd[3], 50, 200), "run D did not reach iteration 50");
    kill(r.pid, SIGINT);
    st = finish(&r, 60);
    CHECK(st == 130, "interrupted run exited with %d, expected 130 (see %s)", st, r.out);
    char latest[700], err[256];
    snprintf(latest, sizeof latest, "%s/checkpoints/latest", wd[3]);
    char *name = pf_read_file(latest, NULL, err, sizeof err);
    CHECK(name != NULL, "no checkpoints/latest after the interrupt: %s", err);
    int k = name ? atoi(name + 5) : 0;
    CHECK(k >= 50 && k < TOTAL_ITERS, "interrupt checkpoint at iteration %d", k);
    free(name);
    start(&r, cfg, "2", "auto", "resumed");
    st = finish(&r, 400);
    CHECK(st == 0, "resumed run exited with %d (see %s)", st, r.out);
    static double loss_d[TOTAL_ITERS + 1], lr_d[TOTAL_ITERS + 1];
    train_curve(wd[3], loss_d, lr_d, TOTAL_ITERS);
    int diff = 0;
    for (int it = k + 1; it <= TOTAL_ITERS; it++)
        diff += loss_d[it] != loss_a[it] || lr_d[it] != lr_a[it];
    CHECK(diff == 0, "%d iterations after the resume at %d differ from the uninterrupted run",
          diff, k);
    s = samples(wd[3]);
    CHECK(strcmp(s, ref) == 0, "resumed run consumed other batches");
    printf("run D: interrupted at iteration %d, resumed: %d later iterations equal run A's\n",
           k, TOTAL_ITERS - k);
    free(s);
    free(ref);
    return pf_test_job_end("test_e2e_video", root);
}
