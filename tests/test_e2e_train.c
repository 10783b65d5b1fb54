/*  End-to-end: `pixflow train` with every role as its own process, on small generated images.

    A. 1 loader: the reference run (samples log = what the worker consumed, metrics.jsonl =
       loss and learning rate of every iteration).
    B. 3 loaders: bit-identical batches (sample ids and pixel digests) and identical losses.
    C. 3 loaders, one killed with SIGKILL mid-run: the job finishes; within every epoch each
       sample is consumed exactly once, and everything still equals run A.
    D. 2 loaders, SIGINT to the front end mid-run: exit status 130, a checkpoint for the
       iteration reached, every process gone within 10 s; then `--resume auto` finishes and its
       learning rates and losses from the resume point equal run A's exactly.
    F. SGD + Nesterov + weight decay + paramwise lr_mult (one tensor frozen) + grad_clip +
       ema_decay: interrupted and resumed equals uninterrupted (losses, final weights, EMA and
       momentum buffers bitwise); the frozen tensor and its EMA stay the seed's init; eval.log
       names the EMA weights and the inference mode (eval_cfg: x8 ensemble with tiles).
*/
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/image.h"
#include "common/rng.h"
#include "common/config.h"
#include "common/safetensors.h"
#include "nn/model.h"
#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"
#include <zmq.h>

extern char **environ;

#define TOTAL_ITERS 600
#define ITERS_PER_EPOCH 6   /* 8 images x repeat 3 / batch 4 */

static char root[256], bin[1024];


/* The test job (write_e2e_config on root's images, TOTAL_ITERS iterations). */
static void write_config_with(const char *path, const char *work_dir, const char *optim,
                              const char *extra, int every) {
    write_e2e_config(path, root, work_dir, optim, extra, TOTAL_ITERS, every);
}

static void write_config(const char *path, const char *work_dir) {
    write_config_with(path, work_dir, "{type: Adam, lr: 1.0e-3}", "", 1000);
}

static void start(run *r, const char *cfg, const char *loaders, const char *resume,
                  const char *tag) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    start_job(r, bin, out, cfg, loaders, resume, NULL, NULL);
}

/* Hostile traffic at a running job: the coordinator's ctrl, the events proxy and the worker's
   data endpoint get random bytes, msgpack of the wrong shape, a wrong version, a map header
   claiming 2^32 entries, and frames that lie about their sizes. The job must go on unchanged. */
static void send_garbage(const char *work_dir) {
    char path[700], ctrl[256] = "", events[256] = "", data[256] = "", err[256];
    snprintf(path, sizeof path, "%s/coordinator.addr", work_dir);
    char *a = pf_read_file(path, NULL, err, sizeof err);
    if (a) snprintf(ctrl, sizeof ctrl, "%s", a);
    free(a);
    snprintf(path, sizeof path, "%s/coordinator.log", work_dir);
    log_value(path, "events in ", events, sizeof events);
    snprintf(path, sizeof path, "%s/rank0.log", work_dir);
    log_value(path, "data endpoint ", data, sizeof data);
    CHECK(ctrl[0] && events[0] && data[0], "endpoints not found: '%s' '%s' '%s'", ctrl, events,
          data);
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER), *pub = zmq_socket(ctx, ZMQ_PUB),
         *push = zmq_socket(ctx, ZMQ_PUSH);
    int linger = 1000;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(d, ctrl);
    zmq_connect(pub, events);
    zmq_connect(push, data);
    usleep(300000);
    static const unsigned char huge_map[] = { 0xdf, 0xff, 0xff, 0xff, 0xff };
    static const unsigned char wrong_version[] = {
        0x82, 0xa4, 't', 'y', 'p', 'e', 0xa5, 'h', 'e', 'l', 'l', 'o', 0xa1, 'v', 0x63 };
    static const unsigned char bad_batch[] = {
        0x82, 0xa4, 't', 'y', 'p', 'e', 0xa5, 'b', 'a', 't', 'c', 'h', 0xa1, 'v', 0x01 };
    pf_rng r = pf_rng_make(9, 9, 9);
    for (int i = 0; i < 200; i++) {
        unsigned char buf[64];
        size_t n = 1 + pf_rng_below(&r, sizeof buf);
        for (size_t k = 0; k < n; k++) buf[k] = (unsigned char)pf_rng_below(&r, 256);
        zmq_send(d, buf, n, 0);
        zmq_send(pub, "train", 5, ZMQ_SNDMORE);
        zmq_send(pub, buf, n, 0);
        zmq_send(push, buf, n, ZMQ_SNDMORE);
        zmq_send(push, buf, 1, ZMQ_SNDMORE);
        zmq_send(push, buf, 1, 0);
    }
    zmq_send(d, huge_map, sizeof huge_map, 0);
    zmq_send(d, wrong_version, sizeof wrong_version, 0);
    zmq_send(pub, "eval", 4, ZMQ_SNDMORE);
    zmq_send(pub, huge_map, sizeof huge_map, 0);
    zmq_send(push, bad_batch, sizeof bad_batch, ZMQ_SNDMORE);
    zmq_send(push, "x", 1, ZMQ_SNDMORE);
    zmq_send(push, "y", 1, 0);
    for (int i = 0; i < 12; i++) zmq_send(push, "z", 1, i < 11 ? ZMQ_SNDMORE : 0);
    zmq_close(d);
    zmq_close(pub);
    zmq_close(push);
    zmq_ctx_term(ctx);
}

static void test_sgd_ema_resume(void) {
    const char *optim = "{type: SGD, lr: 0.05, momentum: 0.9, nesterov: true, "
                        "weight_decay: 1.0e-4, paramwise_cfg: {custom_keys: "
                        "{conv_first: {lr_mult: 0}, body: {lr_mult: 0.5, decay_mult: 0}}}}";
    const char *extra = "optimizer_config: {grad_clip: {max_norm: 0.5, norm_type: 2}}\n"
                        "ema_decay: 0.99\n"
                        "eval_cfg: {ensemble: true, tile: 16, tile_overlap: 8}\n";
    char cfg[600], wdu[600], wdi[600];
    run r;
    snprintf(wdu, sizeof wdu, "%s/work_sgd", root);
    snprintf(wdi, sizeof wdi, "%s/work_sgd_interrupted", root);
    snprintf(cfg, sizeof cfg, "%s/sgd.yaml", root);
    write_config_with(cfg, wdu, optim, extra, 300);
    double t0 = pf_now();
    start(&r, cfg, "1", NULL, "sgd");
    int st = finish(&r, 300);
    CHECK(st == 0, "run F exited with %d (see %s)", st, r.out);
    printf("run F (SGD, EMA): %d iterations in %.1f s\n", TOTAL_ITERS, pf_now() - t0);
    static double loss_u[TOTAL_ITERS + 1], lr_u[TOTAL_ITERS + 1];
    CHECK(train_curve(wdu, loss_u, lr_u, TOTAL_ITERS) == TOTAL_ITERS,
          "run F: metrics.jsonl lacks train entries");
    CHECK(loss_u[TOTAL_ITERS] < loss_u[1], "SGD: loss did not go down: %g -> %g", loss_u[1],
          loss_u[TOTAL_ITERS]);

    snprintf(cfg, sizeof cfg, "%s/sgd_interrupted.yaml", root);
    write_config_with(cfg, wdi, optim, extra, 300);
    start(&r, cfg, "1", NULL, "sgd_interrupted");
    CHECK(wait_lines(wdi, 150, 120), "run F' did not reach iteration 150");
    kill(r.pid, SIGINT);
    st = finish(&r, 30);
    CHECK(st == 130, "run F' exited with %d, expected 130 (see %s)", st, r.out);
    start(&r, cfg, "1", "auto", "sgd_resumed");
    st = finish(&r, 300);
    CHECK(st == 0, "run F' resumed exited with %d (see %s)", st, r.out);
    static double loss_i[TOTAL_ITERS + 1], lr_i[TOTAL_ITERS + 1];
    train_curve(wdi, loss_i, lr_i, TOTAL_ITERS);
    int diff = 0;
    for (int it = 1; it <= TOTAL_ITERS; it++)
        diff += loss_i[it] != loss_u[it] || lr_i[it] != lr_u[it];
    CHECK(diff == 0, "SGD: %d iterations after the resume differ from the uninterrupted run",
          diff);
    CHECK(iter_files_differ(wdu, wdi, TOTAL_ITERS, "safetensors") == 0,
          "SGD: final weights / EMA differ after the resume");
    CHECK(iter_files_differ(wdu, wdi, TOTAL_ITERS, "optim.safetensors") == 0,
          "SGD: final momentum buffers differ after the resume");
    char a[700], b[700];

    /* The checkpoint's contents: EMA tensors, the frozen conv_first, momentum buffers. */
    snprintf(a, sizeof a, "%s/checkpoints/iter_%d.safetensors", wdu, TOTAL_ITERS);
    pf_safetensors *st_w = NULL, *st_o = NULL;
    char err[256];
    CHECK(pf_safetensors_load(a, &st_w, err, sizeof err) == 0, "%s", err);
    snprintf(b, sizeof b, "%s/checkpoints/iter_%d.optim.safetensors", wdu, TOTAL_ITERS);
    CHECK(pf_safetensors_load(b, &st_o, err, sizeof err) == 0, "%s", err);
    if (st_w && st_o) {
        int nd;
        int64_t sh[4];
        const float *w = pf_safetensors_get(st_w, "conv_first.weight", &nd, sh);
        size_t n0 = w ? (size_t)(sh[0] * sh[1] * sh[2] * sh[3]) : 0;
        const float *e = pf_safetensors_get(st_w, "params_ema.conv_first.weight", &nd, sh);
        const float *w1 = pf_safetensors_get(st_w, "body.0.conv1.weight", &nd, sh);
        const float *e1 = pf_safetensors_get(st_w, "params_ema.body.0.conv1.weight", &nd, sh);
        size_t numel = (size_t)(sh[0] * sh[1] * sh[2] * sh[3]);
        CHECK(w && e && w1 && e1, "weights file lacks params_ema.* tensors");
        if (w && e) {
            /* The seed's init (pf_model_init), recomputed here. */
            pf_config c;
            char cpath[600];
            snprintf(cpath, sizeof cpath, "%s/sgd.yaml", root);
            CHECK(pf_config_load(&c, cpath, err, sizeof err) == 0, "%s", err);
            pf_model *m = pf_model_new(&c, err, sizeof err);
            if (m) {
                pf_model_init(m, c.seed);
                const float *p0 = pf_model_params(m) + pf_model_tensor_info(m, 0)->offset;
                CHECK(!strcmp(pf_model_tensor_info(m, 0)->name, "conv_first.weight"),
                      "tensor 0 is %s", pf_model_tensor_info(m, 0)->name);
                CHECK(memcmp(w, p0, n0 * sizeof(float)) == 0,
                      "frozen conv_first.weight moved");
                CHECK(memcmp(e, p0, n0 * sizeof(float)) == 0,
                      "EMA of the frozen conv_first.weight drifted");
                pf_model_destroy(&m);
            }
        }
        if (w1 && e1) {
            int differs = 0;
            for (size_t i = 0; i < numel; i++) differs += w1[i] != e1[i];
            CHECK(differs > 0, "EMA of body.0.conv1.weight equals the weights");
        }
        CHECK(pf_safetensors_get(st_o, "body.0.conv1.weight.momentum_buffer", &nd, sh) &&
                  !pf_safetensors_get(st_o, "body.0.conv1.weight.exp_avg", &nd, sh),
              "optimiser file: momentum_buffer expected, no exp_avg");
        const char *type = pf_safetensors_meta(st_o, "optimizer");
        CHECK(type && !strcmp(type, "SGD"), "optimizer metadata '%s'", type ? type : "");
    }
    pf_safetensors_free(&st_w);
    pf_safetensors_free(&st_o);
    snprintf(a, sizeof a, "%s/eval.log", wdu);
    char *log = pf_read_file(a, NULL, err, sizeof err);
    CHECK(log && strstr(log, "iter 600: EMA weights (params_ema.*)"),
          "eval.log does not say the EMA weights were evaluated:\n%s", log ? log : err);
    CHECK(log && strstr(log, "inference: x8 ensemble, tile 16 overlap 8\n"),
          "eval.log does not name the inference mode (eval_cfg):\n%s", log ? log : err);
    free(log);
}

int main(void) {
    pf_test_job_begin("e2e", bin, sizeof bin, root, sizeof root);
    char dir[600], cfg[600], wd[4][600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, 8, 48, 1);
    snprintf(dir, sizeof dir, "%s/val", root);
    make_images(dir, 2, 40, 2);
    const char *tags[4] = { "one", "three", "killed", "interrupted" };
    for (int i = 0; i < 4; i++) snprintf(wd[i], sizeof wd[i], "%s/work_%s", root, tags[i]);
    setenv("OMP_NUM_THREADS", "2", 1);  /* the same thread count for every run */

    /* A: reference, 1 loader. */
    run r;
    snprintf(cfg, sizeof cfg, "%s/one.yaml", root);
    write_config(cfg, wd[0]);
    double t0 = pf_now();
    start(&r, cfg, "1", NULL, "one");
    int st = finish(&r, 300);
    CHECK(st == 0, "run A exited with %d (see %s)", st, r.out);
    printf("run A: %d iterations in %.1f s\n", TOTAL_ITERS, pf_now() - t0);
    check_exactly_once(wd[0], 1, TOTAL_ITERS, ITERS_PER_EPOCH, 24, "run A");
    char *ref = samples(wd[0]);
    static double loss_a[TOTAL_ITERS + 1], lr_a[TOTAL_ITERS + 1];
    CHECK(train_curve(wd[0], loss_a, lr_a, TOTAL_ITERS) == TOTAL_ITERS,
          "run A: metrics.jsonl lacks train entries");
    CHECK(fabs(lr_a[1] / 1e-4 - 1) < 1e-6 && fabs(lr_a[300] / 5e-4 - 1) < 1e-6,
          "learning rate: warm-up start %g, after first milestone %g", lr_a[1], lr_a[300]);
    CHECK(loss_a[TOTAL_ITERS] < loss_a[1], "loss did not go down: %g -> %g", loss_a[1],
          loss_a[TOTAL_ITERS]);

    /* B: 3 loaders, same batches and losses. */
    snprintf(cfg, sizeof cfg, "%s/three.yaml", root);
    write_config(cfg, wd[1]);
    start(&r, cfg, "3", NULL, "three");
    CHECK(wait_lines(wd[1], 60, 120), "run B did not reach iteration 60");
    send_garbage(wd[1]);
    st = finish(&r, 300);
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
    CHECK(wait_lines(wd[2], 100, 120), "run C did not reach iteration 100");
    pid_t victim = pid_of(r.out, "loader2");
    CHECK(victim > 0 && kill(victim, SIGKILL) == 0, "could not kill loader2 (pid %d)",
          (int)victim);
    st = finish(&r, 300);
    CHECK(st == 0, "run C exited with %d after a loader was killed (see %s)", st, r.out);
    check_exactly_once(wd[2], 1, TOTAL_ITERS, ITERS_PER_EPOCH, 24, "run C");
    s = samples(wd[2]);
    CHECK(strcmp(s, ref) == 0, "batches changed when a loader died");
    free(s);

    /* D: SIGINT mid-run, then resume. */
    snprintf(cfg, sizeof cfg, "%s/interrupted.yaml", root);
    write_config(cfg, wd[3]);
    start(&r, cfg, "2", NULL, "interrupted");
    CHECK(wait_lines(wd[3], 150, 120), "run D did not reach iteration 150");
    pid_t pids[16];
    int np = all_pids(r.out, pids, 16);
    CHECK(np >= 7, "found %d processes on the front end's line (want >= 7)", np);
    double t_int = pf_now();
    kill(r.pid, SIGINT);
    st = finish(&r, 30);
    double took = pf_now() - t_int;
    CHECK(st == 130, "interrupted run exited with %d, expected 130 (see %s)", st, r.out);
    CHECK(took < 10.0, "interrupted run took %.1f s to exit", took);
    int left = 0;
    for (int i = 0; i < np; i++) left += kill(pids[i], 0) == 0;
    CHECK(left == 0, "%d processes left over after the interrupt", left);
    char latest[700], err[256];
    snprintf(latest, sizeof latest, "%s/checkpoints/latest", wd[3]);
    char *name = pf_read_file(latest, NULL, err, sizeof err);
    CHECK(name != NULL, "no checkpoints/latest after the interrupt: %s", err);
    int k = name ? atoi(name + 5) : 0;
    CHECK(k >= 150 && k < TOTAL_ITERS, "interrupt checkpoint at iteration %d", k);
    printf("run D: interrupted at iteration %d, all processes gone after %.1f s\n", k, took);
    free(name);
    start(&r, cfg, "2", "auto", "resumed");
    st = finish(&r, 300);
    CHECK(st == 0, "resumed run exited with %d (see %s)", st, r.out);
    static double loss_d[TOTAL_ITERS + 1], lr_d[TOTAL_ITERS + 1];
    train_curve(wd[3], loss_d, lr_d, TOTAL_ITERS);
    int diff = 0;
    for (int it = k + 1; it <= TOTAL_ITERS; it++)
        diff += loss_d[it] != loss_a[it] || lr_d[it] != lr_a[it];
    CHECK(diff == 0, "%d iterations after the resume differ from the uninterrupted run", diff);
    CHECK(loss_d[TOTAL_ITERS] == loss_a[TOTAL_ITERS], "final loss %.17g vs %.17g",
          loss_d[TOTAL_ITERS], loss_a[TOTAL_ITERS]);
    s = samples(wd[3]);
    CHECK(strcmp(s, ref) == 0, "resumed run consumed other batches");
    free(s);
    free(ref);

    /* F: SGD with Nesterov momentum and weight decay, conv_first frozen (lr_mult 0),
       gradient clipping and an EMA: interrupted + resumed == uninterrupted, in the losses and
       in every tensor of the final checkpoint (weights, params_ema.*); the frozen tensor and
       its EMA keep the seed's values; evaluation says it used the EMA weights. */
    test_sgd_ema_resume();

    /* E: a dead worker ends the job with a message naming it; nothing is left over. */
    for (int victim_role = 0; victim_role < 2; victim_role++) {
        const char *tag = victim_role ? "dead_coordinator" : "dead_worker";
        char wdx[600];
        snprintf(wdx, sizeof wdx, "%s/work_%s", root, tag);
        snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
        write_config(cfg, wdx);
        start(&r, cfg, "2", NULL, tag);
        CHECK(wait_lines(wdx, 50, 120), "%s: did not reach iteration 50", tag);
        np = all_pids(r.out, pids, 16);
        pid_t v = pid_of(r.out, victim_role ? "coordinator" : "worker");
        CHECK(v > 0 && kill(v, SIGKILL) == 0, "%s: could not kill pid %d", tag, (int)v);
        double tk = pf_now();
        st = finish(&r, 60);
        double dt = pf_now() - tk;
        CHECK(st != 0 && st != -1, "%s: front end exited with %d", tag, st);
        CHECK(dt < 15, "%s: the job took %.1f s to end", tag, dt);
        char *out = pf_read_file(r.out, NULL, err, sizeof err);
        const char *want = victim_role ? "coordinator (pid" : "worker (pid";
        CHECK(out && strstr(out, want) && strstr(out, "signal 9"),
              "%s: output does not name the dead process:\n%s", tag, out ? out : "");
        if (!victim_role)
            CHECK(out && strstr(out, "worker rank 0"), "%s: coordinator's message missing", tag);
        free(out);
        usleep(500000);
        left = 0;
        for (int i = 0; i < np; i++) left += kill(pids[i], 0) == 0;
        CHECK(left == 0, "%s: %d processes left over", tag, left);
        printf("run %s: job ended %.1f s after the kill\n", tag, dt);
    }

    return pf_test_job_end("test_e2e_train", root);
}
