/*  test_eval_crop — a GT a pixel larger than scale x its LQ (451x300 beside 225x150 at x2, as
    an odd-sized DIV2K-style image and its bicubic LQ), the way BasicSR treats it: at
    evaluation and test its top-left 450x300 is compared (basicsr/data/paired_image_dataset.py
    outside training: img_gt[0:lq_h * scale, 0:lq_w * scale]); training refuses it and says the
    size to crop to; a GT larger by scale or more, or smaller, is refused at evaluation too.

    - pf_dataset_open: eval accepts 451x300 / 225x150 and gives the file's top-left 450x300
      (compared with the PNG decoded here); exact messages for training (451x300) and for
      evaluation (452x300, 449x300, 451x302).
    - pf_evaluate: PSNR-Y (crop border 2) of the network's output and of bicubic against the
      cropped GT, each equal to a naive reference computed here (Y = 16 + (65.481 R +
      128.553 G + 24.966 B) / 255 in double, MSE over the cropped region; tests/reference/
      metrics_ref.py's convention) to 1e-9 dB.
    - `pixflow test` (PF_BIN) on the same pair: results.tsv's PSNR equals the naive PSNR of
      the output PNG it saved against the cropped GT (4 decimals, as printed), and the crop is
      logged exactly once, naming both files and sizes.
    - pf_job_prepare (what `pixflow train` checks before starting) accepts the pair as data.eval.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/dataset.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "coordinator/coordinator.h"
#include "hooks/evaluate.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test.h"
#include "pf_test_psnr.h"

static char root[256];

/* A smooth picture with some texture, w x h RGB8, so the network's output and bicubic are not
   trivially equal to the GT. */
static void write_png(const char *dir, const char *name, int w, int h, int seed) {
    pf_mkdirs(dir, NULL, 0);
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double v = 128 + 80 * sin(0.05 * x * (c + 1) + seed) * cos(0.07 * y + c) +
                           20 * sin(0.9 * x + 1.3 * y);
                px[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    free(px);
}

static void open_pair(const char *tag, const char *gt, const char *lq, const char *key,
                      int patch, const char *want) {
    static pf_dataset_cfg dc;
    memset(&dc, 0, sizeof dc);
    snprintf(dc.type, sizeof dc.type, "PairedImageDataset");
    snprintf(dc.gt_folder, sizeof dc.gt_folder, "%s", gt);
    snprintf(dc.lq_folder, sizeof dc.lq_folder, "%s", lq);
    snprintf(dc.filename_tmpl, sizeof dc.filename_tmpl, "{}");
    dc.repeat = 1;
    pf_dataset ds;
    char err[1024];
    int rc = pf_dataset_open(&ds, &dc, key, 2, patch, err, sizeof err);
    CHECK(rc == -1 && !strcmp(err, want), "%s: rc %d\n'%s'\nwant\n'%s'", tag, rc,
          rc ? err : "", want);
    if (rc == 0) pf_dataset_close(&ds);
}

/* Captured by pf_evaluate's per-image callback. */
typedef struct {
    uint8_t *out;
    int h, w;
} captured;

static void on_image(void *ctx, int file, const char *name, const pf_image *lq,
                     const uint8_t *out, const pf_image *gt) {
    captured *c = ctx;
    free(c->out);
    c->out = malloc((size_t)gt->w * gt->h * 3);
    memcpy(c->out, out, (size_t)gt->w * gt->h * 3);
    c->h = gt->h;
    c->w = gt->w;
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/pf_eval_crop_%d", (int)getpid());
    char gt[300], lq[300], path[600], lqpath[600], err[2048], want[2048];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    write_png(gt, "a.png", 451, 300, 1);
    write_png(lq, "a.png", 225, 150, 2);
    snprintf(path, sizeof path, "%s/a.png", gt);
    snprintf(lqpath, sizeof lqpath, "%s/a.png", lq);
    pf_image file = { 0 };
    CHECK(pf_image_read(path, &file, err, sizeof err) == 0 && file.w == 451, "%s", err);

    /* evaluation: accepted, the GT is the file's top-left 450x300 */
    static pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "EDSR");
    cfg.scale = 2;
    cfg.n_feats = 8;
    cfg.n_blocks = 1;
    cfg.crop_border = 2;
    cfg.eval_y_channel = 1;
    cfg.eval_psnr = cfg.eval_ssim = 1;
    pf_dataset_cfg *dc = &cfg.test;
    snprintf(dc->type, sizeof dc->type, "PairedImageDataset");
    snprintf(dc->gt_folder, sizeof dc->gt_folder, "%s", gt);
    snprintf(dc->lq_folder, sizeof dc->lq_folder, "%s", lq);
    snprintf(dc->filename_tmpl, sizeof dc->filename_tmpl, "{}");
    dc->repeat = 1;
    pf_dataset ds;
    int rc = pf_dataset_open(&ds, dc, "data.eval", 2, 0, err, sizeof err);
    CHECK(rc == 0, "eval refused a GT 1 pixel wider than 2 x LQ: %s", err);
    if (rc == 0) {
        CHECK(ds.files[0].gt_cropped && ds.files[0].gt_w == 450 && ds.files[0].gt_h == 300,
              "cropped %d, %dx%d", ds.files[0].gt_cropped, ds.files[0].gt_w, ds.files[0].gt_h);
        CHECK(pf_dataset_log_gt_crops(&ds, "data.eval") == 1, "one crop to log");
        const pf_image *g, *l;
        CHECK(pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err) == 0, "%s", err);
        int same = g && g->w == 450 && g->h == 300 && l->w == 225 && l->h == 150;
        for (int y = 0; same && y < 300; y++)
            same = !memcmp(g->data + (size_t)y * 450 * 3, file.data + (size_t)y * 451 * 3,
                           450 * 3);
        CHECK(same, "the eval GT is not the file's top-left 450x300");

        /* pf_evaluate against the naive reference on the cropped pair */
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s", err);
        pf_model_init(m, 3);
        captured cap = { 0 };
        pf_eval_result res;
        CHECK(m && pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, on_image, &cap, &res, err,
                               sizeof err) == 0, "%s", err);
        CHECK(cap.out && cap.w == 450 && cap.h == 300, "output %dx%d", cap.w, cap.h);
        if (cap.out) {
            double ref = pf_test_psnr_y(cap.out, 450, file.data, 451, 300, 450, 2);
            CHECK_NEAR(res.items[0].psnr, ref, 1e-9);
            uint8_t *bic = malloc(450 * 300 * 3);
            pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err);
            CHECK(pf_imresize_u8(l->data, 150, 225, 3, 2.0, bic) == 0, "bicubic");
            double ref_bic = pf_test_psnr_y(bic, 450, file.data, 451, 300, 450, 2);
            CHECK_NEAR(res.items[0].psnr_bicubic, ref_bic, 1e-9);
            printf("eval on the cropped pair: PSNR-Y %.6f dB (reference %.6f), bicubic %.6f "
                   "(reference %.6f)\n", res.items[0].psnr, ref, res.items[0].psnr_bicubic,
                   ref_bic);
            free(bic);
        }
        free(cap.out);
        pf_eval_result_free(&res);

        /* `pixflow test` on the same pair, with these weights */
        char ck[600], tcfg[600], cmd[2000], wd[400];
        snprintf(ck, sizeof ck, "%s/iter_7.safetensors", root);
        snprintf(wd, sizeof wd, "%s/work", root);
        void *wbuf = NULL;
        size_t wlen = 0;
        CHECK(m && pf_ckpt_serialize(&cfg, m, NULL, 7, 0, 0.0, &wbuf, &wlen, NULL, NULL, err,
                                      sizeof err) == 0 &&
              pf_write_file_atomic(ck, wbuf, wlen, err, sizeof err) == 0, "%s", err);
        free(wbuf);
        snprintf(tcfg, sizeof tcfg, "%s/t.yaml", root);
        FILE *f = fopen(tcfg, "w");
        fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
                   "data:\n  test: {type: PairedImageDataset, gt_folder: %s, lq_folder: %s}\n"
                   "  eval: {type: PairedImageDataset, gt_folder: %s, lq_folder: %s}\n"
                   "optimizers: {lr: 1.0e-3}\ntotal_iters: 10\nwork_dir: %s\n"
                   "checkpoint_config: {interval: 10}\n"
                   "evaluation: {interval: 10, crop_border: 2, convert_to: y}\n", gt, lq, gt,
                lq, wd);
        fclose(f);
        const char *bin = getenv("PF_BIN");
        snprintf(cmd, sizeof cmd, "%s test %s --checkpoint %s > %s/test.out 2>&1",
                 bin ? bin : "build/pixflow", tcfg, ck, root);
        CHECK(system(cmd) == 0, "%s failed", cmd);
        snprintf(path, sizeof path, "%s/test.out", root);
        char *out = pf_read_file(path, NULL, err, sizeof err);
        snprintf(want, sizeof want, "data.test: GT '%s/a.png' is 451x300, LQ '%s' 225x150: "
                 "comparing the GT's top-left 450x300 (BasicSR's crop outside training)", gt,
                 lqpath);
        int logged = 0;
        for (char *p = out; p && (p = strstr(p, want)) != NULL; p++) logged++;
        CHECK(logged == 1, "the crop is logged %d times, want once:\n%s", logged,
              out ? out : "");
        free(out);
        snprintf(path, sizeof path, "%s/test/iter_7/a.png", wd);
        pf_image saved = { 0 };
        CHECK(pf_image_read(path, &saved, err, sizeof err) == 0 && saved.w == 450 &&
              saved.h == 300, "%s: %s (%dx%d)", path, err, saved.w, saved.h);
        snprintf(path, sizeof path, "%s/test/iter_7/results.tsv", wd);
        char *tsv = pf_read_file(path, NULL, err, sizeof err);
        double psnr = NAN;
        char *row = tsv ? strstr(tsv, "\na\t") : NULL;
        CHECK(row && sscanf(row + 3, "%lf", &psnr) == 1, "%s: no row for a", path);
        if (saved.data) {
            double ref = pf_test_psnr_y(saved.data, 450, file.data, 451, 300, 450, 2);
            CHECK_NEAR(psnr, ref, 5e-5);
        }
        free(tsv);
        pf_image_free(&saved);
        pf_model_destroy(&m);
        pf_dataset_close(&ds);
    }

    /* training refuses the same pair and says what to crop to */
    snprintf(want, sizeof want, "data.train: GT '%s/a.png' is 451x300 but LQ '%s' is 225x150: "
             "at scale 2 the GT must be 450x300; crop the GT to 450x300 (its top-left)", gt,
             lqpath);
    open_pair("train 451x300", gt, lq, "data.train", 32, want);

    /* evaluation refuses a GT larger by the scale or more, or smaller */
    const struct { int w, h; const char *fix; } bad[] = {
        { 452, 300, "crop the GT to 450x300 (its top-left)" },
        { 451, 302, "crop the GT to 450x300 (its top-left)" },
        { 449, 300, "crop the LQ to 224x150 and the GT to 448x300 (their top-left)" },
        { 450, 299, "crop the LQ to 225x149 and the GT to 450x298 (their top-left)" },
    };
    for (int i = 0; i < 4; i++) {
        char g2[400];
        snprintf(g2, sizeof g2, "%s/gt%d", root, i);
        write_png(g2, "a.png", bad[i].w, bad[i].h, 1);
        snprintf(want, sizeof want, "data.eval: GT '%s/a.png' is %dx%d but LQ '%s' is 225x150: "
                 "at scale 2 the GT must be 450x300 (evaluation crops a GT up to 1 pixel larger "
                 "in each dimension, not this one); %s", g2, bad[i].w, bad[i].h, lqpath,
                 bad[i].fix);
        open_pair("eval", g2, lq, "data.eval", 0, want);
    }
    /* an LQ that is GT / 2 exactly but the GT is even smaller: crop the LQ only */
    {
        char g2[400];
        snprintf(g2, sizeof g2, "%s/gt_small", root);
        write_png(g2, "a.png", 448, 300, 1);
        snprintf(want, sizeof want, "data.train: GT '%s/a.png' is 448x300 but LQ '%s' is "
                 "225x150: at scale 2 the GT must be 450x300; crop the LQ to 224x150 (its "
                 "top-left)", g2, lqpath);
        open_pair("train 448x300", g2, lq, "data.train", 32, want);
    }

    /* pf_job_prepare, as `pixflow train` runs it: the pair as data.eval is fine */
    {
        char train[400], ycfg[600], wd[400];
        snprintf(train, sizeof train, "%s/train", root);
        write_png(train, "t.png", 64, 64, 3);
        snprintf(wd, sizeof wd, "%s/work_train", root);
        snprintf(ycfg, sizeof ycfg, "%s/train.yaml", root);
        FILE *f = fopen(ycfg, "w");
        fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
                   "data:\n  samples_per_gpu: 2\n"
                   "  train: {type: PairedImageDataset, gt_folder: %s, gt_patch_size: 32, repeat: 4}\n"
                   "  eval: {type: PairedImageDataset, gt_folder: %s, lq_folder: %s}\n"
                   "optimizers: {lr: 1.0e-3}\ntotal_iters: 10\nwork_dir: %s\n"
                   "checkpoint_config: {interval: 10}\n"
                   "evaluation: {interval: 10, crop_border: 2, convert_to: y}\n", train, gt, lq,
                wd);
        fclose(f);
        static pf_config jc;
        pf_dataset tr;
        pf_sampler sampler;
        int64_t total = 0;
        rc = pf_job_prepare(&jc, ycfg, NULL, 1, &tr, &sampler, &total, err, sizeof err);
        CHECK(rc == 0, "pf_job_prepare refused the eval pair: %s", err);
        if (rc == 0) {
            pf_dataset_close(&tr);
            pf_sampler_free(&sampler);
        }
    }
    pf_image_free(&file);
    rc = pf_test_end("test_eval_crop");
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    }
    return rc;
}
