/*  `pixflow test` on a SingleImageDataset (LQ only): it writes one SR image per LQ image at
    scale x its size, computes no metrics and says so, writes no results.tsv; the SR images
    are byte-identical to those of a PairedImageDataset test run with the same LQ files and
    checkpoint (so the LQ was read and run through the network the same way), with one worker
    and with two. The checkpoint is the model's seeded initialisation (pf_model_init, seed 3:
    non-zero weights and biases; pf_model_new alone leaves them zero, and EDSR then outputs
    its rgb_mean everywhere, a flat image any two runs agree on), written here. So that the
    comparisons can fail: every SR image must hold at least 32 distinct byte values, and the
    same run on a checkpoint of other weights (seed 4) must give other bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/image.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test.h"

static char root[256];

static void write_cfg(const char *path, const char *test_block, const char *wd) {
    FILE *f = fopen(path, "w");
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 2}\n"
               "data:\n  test: %s\n"
               "optimizers: {lr: 1.0e-3}\ntotal_iters: 1\nseed: 3\nwork_dir: %s\n",
            test_block, wd);
    fclose(f);
}

/* Run `pixflow test`; returns its exit status, output in out (malloc'd). */
static int run_test(const char *cfg, const char *ck, int workers, char **out) {
    const char *bin = getenv("PF_BIN") ? getenv("PF_BIN") : "./pixflow";
    char cmd[2048], path[400];
    snprintf(path, sizeof path, "%s/out.txt", root);
    snprintf(cmd, sizeof cmd, "'%s' test '%s' --checkpoint '%s' --workers %d > '%s' 2>&1", bin,
             cfg, ck, workers, path);
    int st = system(cmd);
    char err[256];
    *out = pf_read_file(path, NULL, err, sizeof err);
    if (!*out) *out = strdup("");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_image(const char *dir, const char *name, int w, int h, uint64_t seed) {
    uint8_t *px = malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        px[i] = (uint8_t)((i * 37 + seed * 101 + (i / 3 % (size_t)w) * 5) % 256);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    free(px);
}

static int same_file(const char *a, const char *b) {
    size_t la, lb;
    char err[256];
    char *x = pf_read_file(a, &la, err, sizeof err), *y = pf_read_file(b, &lb, err, sizeof err);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Write cfg_path's model with pf_model_init(seed) weights as the checkpoint ck. */
static void write_checkpoint(const char *cfg_path, uint64_t seed, const char *ck) {
    static pf_config cfg;
    char err[1024];
    CHECK(pf_config_load(&cfg, cfg_path, err, sizeof err) == 0, "%s", err);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (m) pf_model_init(m, seed);
    void *wbuf = NULL;
    size_t wlen = 0;
    CHECK(m && pf_ckpt_serialize(&cfg, m, NULL, 0, 0, 0.0, &wbuf, &wlen, NULL, NULL, err,
                                  sizeof err) == 0, "%s", err);
    CHECK(wbuf && pf_write_file_atomic(ck, wbuf, wlen, err, sizeof err) == 0, "%s", err);
    free(wbuf);
    pf_model_destroy(&m);
}

/* How many distinct byte values an image holds (3 for a flat RGB image). */
static int distinct_values(const pf_image *img) {
    int seen[256] = { 0 }, n = 0;
    for (size_t i = 0; i < (size_t)img->w * img->h * 3; i++) n += !seen[img->data[i]]++;
    return n;
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/pf_test_single_%d", (int)getpid());
    char lq[300], gt[300], wd1[300], wd2[300], wd3[300], c1[300], c2[300], c3[300], ck[300],
        err[1024], block[1024];
    snprintf(lq, sizeof lq, "%s/lq", root);
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(wd1, sizeof wd1, "%s/wd_single", root);
    snprintf(wd2, sizeof wd2, "%s/wd_paired", root);
    snprintf(wd3, sizeof wd3, "%s/wd_single2", root);
    pf_mkdirs(lq, err, sizeof err);
    pf_mkdirs(gt, err, sizeof err);
    write_image(lq, "a.png", 20, 14, 1);
    write_image(lq, "b.png", 13, 17, 2);
    write_image(gt, "a.png", 40, 28, 3);
    write_image(gt, "b.png", 26, 34, 4);
    snprintf(c1, sizeof c1, "%s/single.yaml", root);
    snprintf(c2, sizeof c2, "%s/paired.yaml", root);
    snprintf(c3, sizeof c3, "%s/single2.yaml", root);
    snprintf(block, sizeof block, "{type: SingleImageDataset, lq_folder: %s}", lq);
    write_cfg(c1, block, wd1);
    write_cfg(c3, block, wd3);
    snprintf(block, sizeof block, "{type: PairedImageDataset, gt_folder: %s, lq_folder: %s}",
             gt, lq);
    write_cfg(c2, block, wd2);

    /* the checkpoints: the seeded initial weights (seed 3), and other ones (seed 4) */
    snprintf(ck, sizeof ck, "%s/init.safetensors", root);
    write_checkpoint(c1, 3, ck);
    char ck_other[300];
    snprintf(ck_other, sizeof ck_other, "%s/other.safetensors", root);
    write_checkpoint(c1, 4, ck_other);

    char *out;
    int st = run_test(c1, ck, 1, &out);
    CHECK(st == 0, "single: status %d:\n%s", st, out);
    CHECK(strstr(out, "SingleImageDataset") && strstr(out, "no metrics") &&
          strstr(out, "2 images"), "single: output does not say so:\n%s", out);
    CHECK(strstr(out, "psnr") == NULL, "single: a metrics table was printed:\n%s", out);
    free(out);
    st = run_test(c2, ck, 1, &out);
    CHECK(st == 0 && strstr(out, "psnr"), "paired: status %d:\n%s", st, out);
    free(out);
    st = run_test(c3, ck, 2, &out);
    CHECK(st == 0 && strstr(out, "no metrics") && strstr(out, "2 workers"),
          "single, 2 workers: status %d:\n%s", st, out);
    free(out);
    st = run_test(c1, ck_other, 1, &out);       /* into wd1/test/other/ */
    CHECK(st == 0, "single, other weights: status %d:\n%s", st, out);
    free(out);

    const char *names[] = { "a", "b" };
    int sizes[][2] = { { 40, 28 }, { 26, 34 } };
    for (int i = 0; i < 2; i++) {
        char s1[600], s2[600], s3[600], s4[600];
        snprintf(s1, sizeof s1, "%s/test/init/%s.png", wd1, names[i]);
        snprintf(s2, sizeof s2, "%s/test/init/%s.png", wd2, names[i]);
        snprintf(s3, sizeof s3, "%s/test/init/%s.png", wd3, names[i]);
        snprintf(s4, sizeof s4, "%s/test/other/%s.png", wd1, names[i]);
        pf_image img = { 0 };
        CHECK(pf_image_read(s1, &img, err, sizeof err) == 0, "%s", err);
        CHECK(img.w == sizes[i][0] && img.h == sizes[i][1], "%s: %dx%d, expected %dx%d", s1,
              img.w, img.h, sizes[i][0], sizes[i][1]);
        int levels = img.data ? distinct_values(&img) : 0;
        CHECK(levels >= 32, "%s: %d distinct values (a flat image proves nothing)", s1, levels);
        pf_image_free(&img);
        CHECK(same_file(s1, s2), "%s differs from the paired run's %s", s1, s2);
        CHECK(same_file(s1, s3), "%s differs from the 2-worker run's %s", s1, s3);
        CHECK(access(s4, F_OK) == 0 && !same_file(s1, s4),
              "%s: the run with other weights gave the same bytes (or none: %s)", s1, s4);
    }
    char tsv[600];
    snprintf(tsv, sizeof tsv, "%s/test/init/results.tsv", wd1);
    CHECK(access(tsv, F_OK) != 0, "single: results.tsv written");
    snprintf(tsv, sizeof tsv, "%s/test/init/results.tsv", wd2);
    CHECK(access(tsv, F_OK) == 0, "paired: no results.tsv");

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return pf_test_end("test_single_image");
}
