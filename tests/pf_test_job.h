/*  pf_test_job — helpers for tests that run `pixflow` as a user would: make small PNG data
    sets, start `pixflow train` in the background with its output in a file, wait for it. */
#ifndef PF_TEST_JOB_H
#define PF_TEST_JOB_H
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/image.h"
#include "common/rng.h"
#include "common/util.h"

extern char **environ;

/* n smooth, noisy RGB images of size x size as dir/imgNN.png. */
static void make_images(const char *dir, int n, int size, uint64_t seed) {
    pf_mkdirs(dir, NULL, 0);
    uint8_t *px = malloc((size_t)size * size * 3);
    for (int k = 0; k < n; k++) {
        pf_rng r = pf_rng_make(seed, (uint64_t)k, 0);
        double fx = 0.05 + 0.3 * pf_rng_uniform(&r), fy = 0.05 + 0.3 * pf_rng_uniform(&r);
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++)
                for (int c = 0; c < 3; c++) {
                    double v = 128 + 90 * sin(fx * x * (c + 1) + fy * y) +
                               20 * (pf_rng_uniform(&r) - 0.5);
                    px[((size_t)y * size + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        char path[512], err[512];
        snprintf(path, sizeof path, "%s/img%02d.png", dir, k);
        if (pf_image_write_png(path, px, size, size, err, sizeof err) != 0) {
            fprintf(stderr, "setup: %s\n", err);
            exit(1);
        }
    }
    free(px);
}

/* A background `pixflow` run: its pid and the file with its stdout and stderr. */
typedef struct {
    pid_t pid;
    char out[600];
} run;

/* Start `bin train cfg --loaders L [--resume R] [extra...]` with output in out_path. */
static void start_job(run *r, const char *bin, const char *out_path, const char *cfg,
                      const char *loaders, const char *resume, const char *extra1,
                      const char *extra2) {
    snprintf(r->out, sizeof r->out, "%s", out_path);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *argv[12];
    int k = 0;
    argv[k++] = (char *)bin;
    argv[k++] = "train";
    argv[k++] = (char *)cfg;
    argv[k++] = "--loaders";
    argv[k++] = (char *)loaders;
    if (resume) {
        argv[k++] = "--resume";
        argv[k++] = (char *)resume;
    }
    if (extra1) argv[k++] = (char *)extra1;
    if (extra2) argv[k++] = (char *)extra2;
    argv[k] = NULL;
    int rc = posix_spawn(&r->pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "cannot start %s: %s\n", bin, strerror(rc));
        exit(1);
    }
}

/* Wait for the run; its exit status, 128 when killed by a signal, -1 after timeout_s (then it
   is killed). */
static int finish(run *r, double timeout_s) {
    double end = pf_now() + timeout_s;
    int st;
    while (pf_now() < end) {
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        usleep(20000);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &st, 0);
    return -1;
}
#endif
