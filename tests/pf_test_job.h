/*  pf_test_job — helpers for tests that run `pixflow` as a user would: make small PNG data
    sets (images, clips of frames), start `pixflow train` (or any subcommand) in the background with its output in a file,
    wait for it, and read what the job wrote: the front end's "processes:" line, log values, the
    workers' samples logs (work_dir/samples_rankN.log, one line per consumed batch:
    `iter epoch ticket idx,idx,... digest loader=ID[ skipped=idx,...]`, the digest FNV-1a of
    the batch's GT then LQ bytes) and metrics.jsonl. */
#ifndef PF_TEST_JOB_H
#define PF_TEST_JOB_H
#include <cjson/cJSON.h>
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
#include "common/safetensors.h"
#include "common/util.h"
#include "pf_test.h"

extern char **environ;

/* Write w x h RGB px as the PNG `path`; exits the test when it cannot. */
static inline void write_png_or_exit(const char *path, const uint8_t *px, int w, int h) {
    char err[512];
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
}

/* `path` opened for writing; exits the test when it cannot. */
static inline FILE *create_or_exit(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "setup: cannot write %s\n", path);
        exit(1);
    }
    return f;
}

/* n smooth, noisy RGB images of size x size as dir/imgNN.png. */
static inline void make_images(const char *dir, int n, int size, uint64_t seed) {
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
        char path[512];
        snprintf(path, sizeof path, "%s/img%02d.png", dir, k);
        write_png_or_exit(path, px, size, size);
    }
    free(px);
}

/* `frames` frames of a textured scene moving right and down by (dx, dy) pixels a frame,
   w x h, as dir/%08d.png (REDS's names); `clip` varies the texture and the noise. */
static inline void make_clip(const char *dir, int clip, int dx, int dy, int w, int h,
                             int frames) {
    pf_mkdirs(dir, NULL, 0);
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int f = 0; f < frames; f++) {
        pf_rng r = pf_rng_make(77, (uint64_t)clip, (uint64_t)f);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) {
                    double u = x - dx * f, v = y - dy * f;
                    double val = 128 + 80 * sin(0.21 * u * (c + 1) + 0.13 * v + clip) +
                                 30 * cos(0.07 * u * v / 8.0) + 10 * (pf_rng_uniform(&r) - 0.5);
                    px[((size_t)y * w + x) * 3 + c] =
                        (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
                }
        char path[600];
        snprintf(path, sizeof path, "%s/%08d.png", dir, f);
        write_png_or_exit(path, px, w, h);
    }
    free(px);
}

/* A background `pixflow` run: its pid and the file with its stdout and stderr. */
typedef struct {
    pid_t pid;
    char out[600];
} run;

/* Start argv[0] (found on PATH when it has no slash) with argv (NULL-terminated), stdout and
   stderr to out_path. Exits the test when it cannot start. */
static inline void start_cmd(run *r, const char *out_path, char *const argv[]) {
    snprintf(r->out, sizeof r->out, "%s", out_path);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(&r->pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(rc));
        exit(1);
    }
}

/* Start `bin train cfg --loaders L [--resume R] [extra...]` with output in out_path. */
static inline void start_job(run *r, const char *bin, const char *out_path, const char *cfg,
                      const char *loaders, const char *resume, const char *extra1,
                      const char *extra2) {
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
    start_cmd(r, out_path, argv);
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

/* The whole file at `path` (malloc'd, NUL-terminated), or "" (malloc'd) when it cannot be read:
   for tests that look for text in logs that may not exist yet. */
static inline char *slurp(const char *path) {
    char err[256];
    char *t = pf_read_file(path, NULL, err, sizeof err);
    return t ? t : strdup("");
}

static inline int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* pid of `name=` in the front end's "processes:" line, or 0. */
static inline pid_t pid_of(const char *out, const char *name) {
    char *text = pf_read_file(out, NULL, (char[256]){ 0 }, 256);
    if (!text) return 0;
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    char *p = strstr(text, key);
    pid_t pid = p ? (pid_t)atoi(p + strlen(key)) : 0;
    free(text);
    return pid;
}

/* All pids on the "processes:" line. */
static inline int all_pids(const char *out, pid_t *pids, int max) {
    char *text = pf_read_file(out, NULL, (char[256]){ 0 }, 256);
    if (!text) return 0;
    int n = 0;
    char *p = strstr(text, "processes:");
    char *eol = p ? strchr(p, '\n') : NULL;
    while (p && (p = strchr(p, '=')) && (!eol || p < eol) && n < max) pids[n++] = atoi(++p);
    free(text);
    return n;
}

/* Rank `rank`'s samples log without the loader=ID fields (who built a batch may differ); ""
   when there is none. The caller frees it. */
static inline char *samples_rank(const char *work_dir, int rank) {
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/samples_rank%d.log", work_dir, rank);
    char *t = pf_read_file(path, NULL, err, sizeof err);
    if (!t) return strdup("");
    char *w = t;
    for (char *r = t; *r;) {
        if (strncmp(r, " loader=", 8) == 0) {
            r += 8;
            while (*r && *r != ' ' && *r != '\n') r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return t;
}

static inline char *samples(const char *work_dir) { return samples_rank(work_dir, 0); }

/* iter -> (loss, lr) of train entries in metrics.jsonl; returns count. */
static inline int train_curve(const char *work_dir, double *loss, double *lr, int max) {
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", work_dir);
    char *t = pf_read_file(path, NULL, err, sizeof err);
    if (!t) return 0;
    int n = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cJSON *kind = cJSON_GetObjectItem(o, "kind");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "train") == 0) {
            int it = (int)cJSON_GetObjectItem(o, "iter")->valuedouble;
            if (it >= 1 && it <= max) {
                loss[it] = cJSON_GetObjectItem(o, "loss")->valuedouble;
                lr[it] = cJSON_GetObjectItem(o, "lr")->valuedouble;
                n++;
            }
        }
        cJSON_Delete(o);
    }
    free(t);
    return n;
}

/* Exactly once: over the samples logs of ranks 0..ranks-1, every epoch of a run of total_iters
   iterations (iters_per_epoch per rank) consumes each of its epoch_len sample indices exactly
   once, and each rank consumed total_iters batches. (Skipped samples count as missing: for
   data sets without bad samples.) */
static inline void check_exactly_once(const char *work_dir, int ranks, int total_iters,
                               int iters_per_epoch, int epoch_len, const char *tag) {
    int epochs = total_iters / iters_per_epoch;
    int *seen = calloc((size_t)epochs * epoch_len, sizeof *seen);
    int lines = 0, bad = 0, wrong = 0;
    for (int rank = 0; rank < ranks; rank++) {
        char *t = samples_rank(work_dir, rank);
        int rank_lines = 0;
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
            long long it;
            unsigned epoch;
            unsigned long long ticket;
            char ids[256];
            if (sscanf(line, "%lld %u %llu %255s", &it, &epoch, &ticket, ids) != 4) {
                bad++;
                continue;
            }
            rank_lines++;
            char *save = NULL;
            for (char *tok = strtok_r(ids, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int idx = atoi(tok);
                if (epoch < (unsigned)epochs && idx >= 0 && idx < epoch_len)
                    seen[epoch * epoch_len + idx]++;
                else bad++;
            }
        }
        CHECK(rank_lines == total_iters, "%s: rank %d consumed %d batches, expected %d", tag,
              rank, rank_lines, total_iters);
        lines += rank_lines;
        free(t);
    }
    for (int i = 0; i < epochs * epoch_len; i++) {
        if (seen[i] != 1 && wrong < 5)
            fprintf(stderr, "%s: epoch %d sample %d consumed %d times\n", tag, i / epoch_len,
                    i % epoch_len, seen[i]);
        wrong += seen[i] != 1;
    }
    CHECK(bad == 0 && wrong == 0, "%s: %d malformed entries, %d (epoch, sample) counts != 1",
          tag, bad, wrong);
    free(seen);
}

/* The value after `key` in a log file, up to a space, comma or newline. */
static inline int log_value(const char *path, const char *key, char *out, size_t outlen) {
    char err[256];
    char *t = pf_read_file(path, NULL, err, sizeof err);
    char *p = t ? strstr(t, key) : NULL;
    if (!p) {
        free(t);
        return -1;
    }
    p += strlen(key);
    size_t n = strcspn(p, " ,)\n");
    snprintf(out, outlen, "%.*s", (int)(n < outlen ? n : outlen - 1), p);
    free(t);
    return 0;
}

/* Wait until rank 0 has consumed n batches; 1, or 0 after timeout_s. */
static inline int wait_lines(const char *work_dir, int n, double timeout_s) {
    char path[600];
    snprintf(path, sizeof path, "%s/samples_rank0.log", work_dir);
    double end = pf_now() + timeout_s;
    while (pf_now() < end) {
        if (count_lines(path) >= n) return 1;
        usleep(5000);
    }
    return 0;
}

/* A config for data-plane tests, small enough for many runs a minute: EDSR x2 with 8 features
   and 1 block, batches of 4 GT patches of 16 x 16 from train_dir (each image `repeat` times an
   epoch), prefetch 3, Adam at a fixed 1e-3, seed 7, no evaluation, a checkpoint every
   `ckpt_every` iterations. */
static inline void write_tiny_config_every(const char *path, const char *train_dir,
                                           const char *work_dir, int repeat, int total_iters,
                                           int ckpt_every) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  prefetch: 3\n"
            "  train: {type: PairedImageDataset, gt_folder: %s, gt_patch_size: 16,\n"
            "          use_flip: true, use_rot: true, repeat: %d}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: %d, max_keep_ckpts: 2}\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: 7\n",
            train_dir, repeat, total_iters, ckpt_every, work_dir);
    fclose(f);
}

/* test_e2e_train's job: EDSR x2 (16 features, 2 blocks) on data_root/train (gt_patch_size 32,
   flips, repeat 3, batches of 4, prefetch 3), evaluated on data_root/val every `every`
   iterations (PSNR, SSIM, crop 2, Y), a checkpoint as often (2 kept); `optim` the optimizers
   mapping, a Step schedule (milestones 200, 400, gamma 0.5) with a 20-iteration linear
   warm-up, `total_iters`, `extra` more top-level keys; logs every iteration, seed 42. */
static inline void write_e2e_config(const char *path, const char *data_root,
                                    const char *work_dir, const char *optim, const char *extra,
                                    int total_iters, int every) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 16, n_blocks: 2, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  prefetch: 3\n"
            "  train: {type: PairedImageDataset, gt_folder: %s/train, gt_patch_size: 32,\n"
            "          use_flip: true, use_rot: true, repeat: 3}\n"
            "  eval: {type: PairedImageDataset, gt_folder: %s/val}\n"
            "optimizers: %s\n"
            "lr_config: {policy: Step, step: [200, 400], gamma: 0.5, warmup: linear,\n"
            "            warmup_iters: 20, warmup_ratio: 0.1}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: %d, max_keep_ckpts: 2}\n"
            "log_config: {interval: 1}\n"
            "evaluation: {interval: %d, metrics: [PSNR, SSIM], crop_border: 2, "
            "convert_to: y, save_image: false}\n"
            "%s"
            "work_dir: %s\n"
            "seed: 42\n",
            data_root, data_root, optim, total_iters, every, every, extra, work_dir);
    fclose(f);
}

/* write_tiny_config_every with a checkpoint every 1000 iterations. */
static inline void write_tiny_config(const char *path, const char *train_dir, const char *work_dir,
                              int repeat, int total_iters) {
    write_tiny_config_every(path, train_dir, work_dir, repeat, total_iters, 1000);
}

/* How many iterations first..total of `wd`'s metrics.jsonl differ in loss or learning rate
   (bitwise) from `ref`'s, counting `wd` not reaching `total` as one; the first three are
   printed with `tag`. */
static inline int curve_diffs(const char *ref, const char *wd, int first, int total,
                              const char *tag) {
    size_t n = (size_t)total + 1;
    double *loss_ref = calloc(n, sizeof *loss_ref), *lr_ref = calloc(n, sizeof *lr_ref);
    double *loss = calloc(n, sizeof *loss), *lr = calloc(n, sizeof *lr);
    train_curve(ref, loss_ref, lr_ref, total);
    train_curve(wd, loss, lr, total);
    int diff = 0;
    for (int it = first; it <= total; it++) {
        if ((loss[it] != loss_ref[it] || lr[it] != lr_ref[it]) && diff++ < 3)
            fprintf(stderr, "%s: iteration %d: loss %.9g lr %.9g, reference %.9g %.9g\n", tag,
                    it, loss[it], lr[it], loss_ref[it], lr_ref[it]);
    }
    if (loss[total] == 0 && ++diff) fprintf(stderr, "%s: no loss at iteration %d\n", tag, total);
    free(loss_ref);
    free(lr_ref);
    free(loss);
    free(lr);
    return diff;
}

/* Rank by rank, the batches of `wd` equal those of `ref`; prints the first line that differs. */
static inline void check_same_batches(const char *ref, const char *wd, int ranks, const char *tag) {
    for (int rank = 0; rank < ranks; rank++) {
        char *a = samples_rank(ref, rank), *b = samples_rank(wd, rank);
        int same = strcmp(a, b) == 0;
        if (!same) {
            int line = 1;
            char *p = a, *q = b;
            while (*p && *p == *q) line += *p == '\n', p++, q++;
            while (p > a && p[-1] != '\n') p--, q--;
            fprintf(stderr, "%s: rank %d, batch line %d:\n  reference: %.*s\n  this run:  %.*s\n",
                    tag, rank, line, (int)strcspn(p, "\n"), p, (int)strcspn(q, "\n"), q);
        }
        CHECK(same, "%s: rank %d consumed other batches than the reference", tag, rank);
        free(a);
        free(b);
    }
}

/* The peer id the coordinator gave loader `name` (from work_dir/name.log), or 0. */
static inline unsigned loader_peer(const char *work_dir, const char *name) {
    char path[700], v[32];
    snprintf(path, sizeof path, "%s/%s.log", work_dir, name);
    return log_value(path, "as peer ", v, sizeof v) == 0 ? (unsigned)atoi(v) : 0;
}

/* How many batches loader `peer` built, over ranks 0..ranks-1. */
static inline int batches_by(const char *work_dir, int ranks, unsigned peer) {
    char key[32], path[600], err[256];
    snprintf(key, sizeof key, " loader=%u", peer);
    int n = 0;
    for (int rank = 0; rank < ranks; rank++) {
        snprintf(path, sizeof path, "%s/samples_rank%d.log", work_dir, rank);
        char *t = pf_read_file(path, NULL, err, sizeof err);
        for (char *p = t; p && (p = strstr(p, key)); p++)
            n += p[strlen(key)] == ' ' || p[strlen(key)] == '\n';
        free(t);
    }
    return n;
}

/* Wait until `text` appears in `path`; 1, or 0 after timeout_s. */
static inline int wait_text(const char *path, const char *text, double timeout_s) {
    for (double end = pf_now() + timeout_s; pf_now() < end; usleep(10000)) {
        char err[256];
        char *t = pf_read_file(path, NULL, err, sizeof err);
        int found = t && strstr(t, text);
        free(t);
        if (found) return 1;
    }
    return 0;
}

/* Start of a test that runs pixflow: the binary (PF_BIN, else build/pixflow) into `bin` and the
   test's folder /tmp/pf_<tag>_<pid> (created) into `root`. */
static inline void pf_test_job_begin(const char *tag, char *bin, size_t binlen, char *root,
                                     size_t rootlen) {
    const char *b = getenv("PF_BIN");
    snprintf(bin, binlen, "%s", b ? b : "build/pixflow");
    snprintf(root, rootlen, "/tmp/pf_%s_%d", tag, (int)getpid());
    pf_mkdirs(root, NULL, 0);
}

/* How far checkpoint file pa is from pb: over every tensor of pb (found in pa by name; one
   missing fails a CHECK and gives INFINITY), the largest |a - b| relative to the largest |b|
   of the same tensor (relative 1), or absolute (0). *n_ema (may be NULL) gets how many
   params_ema.* tensors pb holds. INFINITY, after a failed CHECK, when a file cannot be read. */
static inline double ckpt_distance(const char *pa, const char *pb, int relative, int *n_ema) {
    char err[512];
    pf_safetensors *a = NULL, *b = NULL;
    if (n_ema) *n_ema = 0;
    if (pf_safetensors_load(pa, &a, err, sizeof err) != 0 ||
        pf_safetensors_load(pb, &b, err, sizeof err) != 0) {
        CHECK(0, "%s", err);
        pf_safetensors_free(&a);
        return INFINITY;
    }
    double worst = 0;
    for (int i = 0; i < pf_safetensors_count(b); i++) {
        const char *name;
        int nd, nd2;
        int64_t shape[4], shape2[4];
        const float *vb = pf_safetensors_at(b, i, &name, &nd, shape);
        const float *va = pf_safetensors_get(a, name, &nd2, shape2);
        if (n_ema) *n_ema += strncmp(name, "params_ema.", 11) == 0;
        size_t n = 1;
        for (int k = 0; k < nd; k++) n *= (size_t)shape[k];
        if (!va) {
            CHECK(0, "%s missing in %s", name, pa);
            worst = INFINITY;
            continue;
        }
        double diff = 0, scale = 1e-12;
        for (size_t k = 0; k < n; k++) {
            diff = fmax(diff, fabs((double)va[k] - vb[k]));
            scale = fmax(scale, fabs((double)vb[k]));
        }
        worst = fmax(worst, relative ? diff / scale : diff);
    }
    pf_safetensors_free(&a);
    pf_safetensors_free(&b);
    return worst;
}

/* Every tensor of checkpoint file `a` equals (bitwise: shape and values) the one of the same
   name in `b`; returns how many differ or are missing from b, -1 when a file cannot be read
   (said on stderr). */
static inline int tensors_differ(const char *a, const char *b) {
    pf_safetensors *sa = NULL, *sb = NULL;
    char err[256];
    if (pf_safetensors_load(a, &sa, err, sizeof err) != 0 ||
        pf_safetensors_load(b, &sb, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        pf_safetensors_free(&sa);
        return -1;
    }
    int bad = 0, n = pf_safetensors_count(sa);
    for (int j = 0; j < n; j++) {
        const char *name;
        int nd, nd2;
        int64_t sh[4], sh2[4];
        pf_safetensors_at(sa, j, &name, &nd, sh);
        const float *x = pf_safetensors_get(sa, name, &nd, sh);
        const float *y = pf_safetensors_get(sb, name, &nd2, sh2);
        size_t numel = 1;
        for (int k = 0; k < nd; k++) numel *= (size_t)sh[k];
        bad += !x || !y || nd != nd2 || memcmp(sh, sh2, sizeof(int64_t) * (size_t)nd) != 0 ||
               memcmp(x, y, numel * sizeof(float)) != 0;
    }
    pf_safetensors_free(&sa);
    pf_safetensors_free(&sb);
    return bad;
}

/* tensors_differ of work dirs wa's and wb's checkpoints/iter_<iter>.<ext> (ext "safetensors"
   for the weights, "optim.safetensors" for the optimiser state). */
static inline int iter_files_differ(const char *wa, const char *wb, int iter, const char *ext) {
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/checkpoints/iter_%d.%s", wa, iter, ext);
    snprintf(b, sizeof b, "%s/checkpoints/iter_%d.%s", wb, iter, ext);
    return tensors_differ(a, b);
}

/* Remove folder `dir` and everything in it (rm -rf); says so when it cannot. */
static inline void remove_tree(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* pf_test_end(name); then the test's folder `root` is removed when every check passed, and
   named for the post-mortem otherwise. Returns the exit status. */
static inline int pf_test_job_end(const char *name, const char *root) {
    int rc = pf_test_end(name);
    if (rc == 0) remove_tree(root);
    else fprintf(stderr, "outputs kept in %s\n", root);
    return rc;
}
#endif
