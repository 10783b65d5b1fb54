/*  test_eval_video — evaluation of video sets (hooks/evaluate.c, docs/video.md "Evaluation and
    test of clips"):

    - pf_clip_windows, for clips of 1..70 frames and several windows and overlaps: the own
      ranges partition the clip in order, every own frame lies inside its window, windows lie
      inside the clip and hold at most `window` frames, neighbouring windows share at least
      `overlap` frames, and each boundary is in the middle of the shared frames (checked
      against the definitions, frame by frame).
    - pf_evaluate of an image network (EDSR, seeded weights) on two generated clips (frame
      folders, 5 and 3 frames, LQ by BI): each clip's PSNR-Y is the mean over its frames of a
      naive PSNR-Y (double Y, as tests/test_eval_crop.c) of pf_model_infer's output rounded to
      uint8; the result the mean over the two clips (not over the 8 frames); bicubic the same
      with MATLAB-bicubic frames; save_dir gets CLIP/%08d.png equal to those outputs; on_image
      sees each clip's middle frame. The same clips as a VideoTestDataset (sliding windows of
      3 frames) give the same table: an image network takes each frame alone.
    - BasicVSR (seeded weights) on a 7-frame clip: with clip_window 32 the clip goes through in
      one pass (equal to pf_model_infer_clip of the whole clip); with clip_window 4, overlap 2
      each frame's PSNR comes from pf_model_infer_clip of the window that owns it (computed
      here from the plan), and differs from the one-pass result.
    - Identical frames (docs/metrics.md "Identical images"): clip d's first 2 frames are flat
      (one colour), so their bicubic upscaling equals the GT (PSNR inf), then 3 textured
      frames; clip e has 2 flat frames only. The bicubic mean of d is the naive mean of its
      3 finite per-frame values with 2 frames left out; e's is inf with 2 left out; the mean
      over clips is d's alone (finite), with 4 frames and 1 whole clip left out; the network's
      means (no identical frame) are the plain means of the naive per-frame values.
      The same rule on an image set (PairedImageDataset, LQ by BI): of 3 images the flat one
      is left out of bicubic's mean over images and counted; the log lines' words for both.
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
#include "common/metrics.h"
#include "common/util.h"
#include "hooks/evaluate.h"
#include "nn/model.h"
#include "pf_test.h"
#include "pf_test_psnr.h"

static char root[256];

/* PSNR-Y of two h x w images (tests/pf_test_psnr.h, no border cropped). */
static double naive_psnr_y(const uint8_t *a, const uint8_t *b, int h, int w) {
    return pf_test_psnr_y(a, w, b, w, h, w, 0);
}

static void test_windows(void) {
    static const int cases[][2] = { { 4, 0 }, { 4, 2 }, { 5, 1 }, { 8, 3 }, { 32, 8 }, { 3, 2 } };
    int bad = 0, total = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int n = 1; n <= 70; n++) {
            int W = cases[k][0], O = cases[k][1], st[256], len[256], a[256], b[256];
            int nw = pf_clip_windows(n, W, O, st, len, a, b, 256);
            total++;
            int ok = nw >= 1 && a[0] == 0 && b[nw - 1] == n;
            for (int i = 0; ok && i < nw; i++) {
                ok = st[i] >= 0 && len[i] >= 1 && len[i] <= W && st[i] + len[i] <= n &&
                     a[i] < b[i] && a[i] >= st[i] && b[i] <= st[i] + len[i];
                if (ok && i + 1 < nw) {
                    int shared = st[i] + len[i] - st[i + 1];
                    /* contiguous, overlapping by at least O, boundary mid-overlap */
                    ok = b[i] == a[i + 1] && shared >= O &&
                         abs((b[i] - st[i + 1]) - (st[i] + len[i] - b[i])) <= 1;
                }
            }
            if (n <= W) ok = ok && nw == 1 && len[0] == n;
            if (!ok && bad++ < 3)
                fprintf(stderr, "windows of n %d, window %d, overlap %d: wrong plan\n", n, W, O);
        }
    CHECK(bad == 0, "pf_clip_windows: %d of %d plans wrong", bad, total);
    int s[1], l[1], a[1], b[1];
    CHECK(pf_clip_windows(10, 4, 4, s, l, a, b, 1) == -1 &&
          pf_clip_windows(10, 4, 0, s, l, a, b, 1) == -1, "bad overlap / too few slots refused");
}

/* A clip of n frames of w x h at dir/%08d.png, drifting by one pixel a frame; the first
   `flat` frames are one colour each instead. */
static void make_clip_flat(const char *dir, int n, int flat, int w, int h, int seed) {
    pf_mkdirs(dir, NULL, 0);
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int f = 0; f < n; f++) {
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) {
                    double v = 128 + 70 * sin(0.3 * (x - f) * (c + 1) + 0.2 * y + seed) +
                               40 * cos(0.11 * (x + y) * (x - f) / 7.0);
                    if (f < flat) v = 30 + 50 * c + 20 * f;
                    px[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        char path[600], err[256];
        snprintf(path, sizeof path, "%s/%08d.png", dir, f);
        if (pf_image_write_png(path, px, w, h, err, sizeof err)) {
            fprintf(stderr, "setup: %s\n", err);
            exit(1);
        }
    }
    free(px);
}

static void make_clip(const char *dir, int n, int w, int h, int seed) {
    make_clip_flat(dir, n, 0, w, h, seed);
}

typedef struct {
    int calls[4];
} seen_ctx;

static void on_image(void *ctx, int file, const char *name, const pf_image *lq,
                     const uint8_t *out, const pf_image *gt) {
    (void)name, (void)lq, (void)out, (void)gt;
    seen_ctx *s = ctx;
    if (file >= 0 && file < 4) s->calls[file]++;
}

static void base_cfg(pf_config *cfg, const char *type, int scale) {
    pf_config_defaults(cfg);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", type);
    cfg->scale = scale;
    cfg->n_feats = 8;
    cfg->n_blocks = 1;
    cfg->eval_y_channel = 1;
    cfg->eval_psnr = cfg->eval_ssim = 1;
    cfg->crop_border = 0;
    cfg->eval.present = 1;
    snprintf(cfg->eval.type, sizeof cfg->eval.type, "VideoRecurrentTestDataset");
    snprintf(cfg->eval.gt_folder, sizeof cfg->eval.gt_folder, "%s/clips", root);
    cfg->eval.n_degradations = 1;
    snprintf(cfg->eval.degradation[0].type, sizeof cfg->eval.degradation[0].type, "BI");
}

/* The frames of clip c, LQ as one buffer, GT pinned while used. */
static uint8_t *clip_lq(pf_video_dataset *v, int c, int first, int n) {
    const pf_clip *cl = &v->clips[c];
    size_t px = (size_t)cl->lq_h * cl->lq_w * 3;
    uint8_t *buf = malloc(px * n);
    char err[256];
    for (int t = 0; t < n; t++) {
        const pf_image *gt, *lq;
        if (pf_video_dataset_frame(v, c, first + t, &gt, &lq, err, sizeof err)) exit(1);
        memcpy(buf + px * t, lq->data, px);
        pf_video_dataset_release(v, c, first + t);
    }
    return buf;
}

/* PSNR-Y of output frame t (float, `s` x the LQ) against clip c's GT frame `frame`. */
static double frame_psnr(pf_video_dataset *v, int c, int frame, const float *out, double *bic_psnr,
                         int scale) {
    const pf_image *gt, *lq;
    char err[256];
    if (pf_video_dataset_frame(v, c, frame, &gt, &lq, err, sizeof err)) exit(1);
    size_t n = (size_t)gt->h * gt->w * 3;
    uint8_t *o8 = malloc(n), *b8 = malloc(n);
    for (size_t i = 0; i < n; i++) {
        double x = out[i] < 0 ? 0 : out[i] > 1 ? 1 : out[i];
        o8[i] = (uint8_t)floor(x * 255.0 + 0.5);
    }
    double p = naive_psnr_y(o8, gt->data, gt->h, gt->w);
    if (bic_psnr) {
        pf_imresize_u8(lq->data, lq->h, lq->w, 3, (double)scale, b8);
        *bic_psnr = naive_psnr_y(b8, gt->data, gt->h, gt->w);
    }
    pf_video_dataset_release(v, c, frame);
    free(o8);
    free(b8);
    return p;
}

/* EDSR x2 on data.eval clips c0 and c1. */
static void two_clips_cfg(pf_config *cfg, const char *c0, const char *c1) {
    base_cfg(cfg, "EDSR", 2);
    cfg->eval.n_clips = 2;
    snprintf(cfg->eval.clips[0].name, sizeof cfg->eval.clips[0].name, "%s", c0);
    snprintf(cfg->eval.clips[1].name, sizeof cfg->eval.clips[1].name, "%s", c1);
}

/* data.eval of `cfg` opened into ds and a network with weights seeded by `seed`; NULL (a
   failed check) when either fails. */
static pf_model *open_eval(pf_config *cfg, pf_dataset *ds, int seed) {
    char err[1024];
    int rc = pf_dataset_open(ds, &cfg->eval, "data.eval", cfg->scale, 0, err, sizeof err);
    CHECK(rc == 0, "open: %s", err);
    if (rc) return NULL;
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    CHECK(m != NULL, "model: %s", err);
    if (!m) {
        pf_dataset_close(ds);
        return NULL;
    }
    pf_model_init(m, seed);
    return m;
}

static void test_image_network(void) {
    pf_config cfg;
    two_clips_cfg(&cfg, "a", "b");
    char err[1024], save[512];
    pf_dataset ds;
    pf_model *m = open_eval(&cfg, &ds, 3);
    if (!m) return;
    snprintf(save, sizeof save, "%s/out", root);
    pf_eval_result r;
    seen_ctx seen = { { 0 } };
    int rc = pf_evaluate(m, &cfg, &ds, save, NULL, NULL, on_image, &seen, &r, err, sizeof err);
    CHECK(rc == 0, "pf_evaluate: %s", err);
    double mean = 0, mean_bic = 0;
    int bad_png = 0;
    for (int c = 0; rc == 0 && c < 2; c++) {
        const pf_clip *cl = &ds.video->clips[c];
        int n = cl->n_frames;
        uint8_t *lq = clip_lq(ds.video, c, 0, n);
        size_t opx = (size_t)cl->gt_h * cl->gt_w * 3;
        float *out = malloc(opx * sizeof(float));
        double sum = 0, sum_bic = 0;
        for (int t = 0; t < n; t++) {
            pf_model_infer(m, lq + (size_t)t * cl->lq_h * cl->lq_w * 3, cl->lq_h, cl->lq_w, out,
                           err, sizeof err);
            double b;
            sum += frame_psnr(ds.video, c, t, out, &b, 2);
            sum_bic += b;
            /* the saved frame is this output rounded */
            char path[700];
            snprintf(path, sizeof path, "%s/%s/%08d.png", save, cl->name, t);
            pf_image png = { 0 };
            if (pf_image_read_png(path, &png, err, sizeof err)) {
                bad_png++;
                continue;
            }
            for (size_t i = 0; i < opx; i++) {
                double x = out[i] < 0 ? 0 : out[i] > 1 ? 1 : out[i];
                bad_png += png.data[i] != (uint8_t)floor(x * 255.0 + 0.5);
            }
            pf_image_free(&png);
        }
        CHECK(r.items[c].frames == n && !strcmp(r.items[c].name, cl->name),
              "item %d: %s, %d frames", c, r.items[c].name, r.items[c].frames);
        CHECK(fabs(r.items[c].psnr - sum / n) < 1e-9 &&
              fabs(r.items[c].psnr_bicubic - sum_bic / n) < 1e-9,
              "clip %s: PSNR-Y %.9f (naive %.9f), bicubic %.9f (naive %.9f)", cl->name,
              r.items[c].psnr, sum / n, r.items[c].psnr_bicubic, sum_bic / n);
        CHECK(seen.calls[c] == 1, "on_image for clip %d: %d calls", c, seen.calls[c]);
        mean += sum / n / 2;
        mean_bic += sum_bic / n / 2;
        free(lq);
        free(out);
    }
    CHECK(rc || (r.n == 2 && fabs(r.psnr - mean) < 1e-9 && fabs(r.psnr_bicubic - mean_bic) < 1e-9),
          "mean over clips %.9f (naive %.9f), bicubic %.9f (%.9f)", r.psnr, mean,
          r.psnr_bicubic, mean_bic);
    CHECK(bad_png == 0, "saved frames: %d wrong or missing values", bad_png);
    printf("EDSR on 2 clips (5 and 3 frames): PSNR-Y %.4f dB (bicubic %.4f) = the mean of the "
           "clips' per-frame means\n", r.psnr, r.psnr_bicubic);
    /* a shard of clip 1 only */
    pf_dataset part;
    CHECK(pf_dataset_shard(&ds, 1, 2, &part) == 0, "shard");
    pf_eval_result r2;
    rc = pf_evaluate(m, &cfg, &part, NULL, NULL, NULL, NULL, NULL, &r2, err, sizeof err);
    CHECK(rc == 0 && r2.n == 1 && !strcmp(r2.items[0].name, "b") &&
          r2.items[0].psnr == r.items[1].psnr, "shard 1 of 2: clip b alone (%s)", err);
    pf_eval_result_free(&r2);
    pf_dataset_close(&part);
    /* the same clips as a VideoTestDataset (EDVR's sliding windows, num_frame 3): an image
       network takes each frame alone, so the windows change nothing: the same table */
    pf_config wcfg = cfg;
    snprintf(wcfg.eval.type, sizeof wcfg.eval.type, "VideoTestDataset");
    wcfg.eval.num_frame = 3;
    snprintf(wcfg.eval.padding, sizeof wcfg.eval.padding, "reflection_circle");
    pf_dataset wds;
    rc = pf_dataset_open(&wds, &wcfg.eval, "data.eval", 2, 0, err, sizeof err);
    CHECK(rc == 0, "VideoTestDataset: %s", err);
    if (rc == 0) {
        pf_eval_result r3;
        rc = pf_evaluate(m, &wcfg, &wds, NULL, NULL, NULL, NULL, NULL, &r3, err, sizeof err);
        CHECK(rc == 0 && r3.n == 2 && r3.psnr == r.psnr && r3.items[0].frames == 5 &&
              r3.items[1].psnr == r.items[1].psnr, "VideoTestDataset evaluated frame by frame: "
              "%s (%.9f vs %.9f)", err, rc ? 0 : r3.psnr, r.psnr);
        if (rc == 0) pf_eval_result_free(&r3);
        pf_dataset_close(&wds);
    }
    pf_eval_result_free(&r);
    pf_model_destroy(&m);
    pf_dataset_close(&ds);
}

static void test_video_network(void) {
    pf_config cfg;
    base_cfg(&cfg, "BasicVSR", 4);
    cfg.eval.n_clips = 1;
    snprintf(cfg.eval.clips[0].name, sizeof cfg.eval.clips[0].name, "c");
    char err[1024];
    pf_dataset ds;
    pf_model *m = open_eval(&cfg, &ds, 5);
    if (!m) return;
    const pf_clip *cl = &ds.video->clips[0];
    int n = cl->n_frames;
    size_t opx = (size_t)cl->gt_h * cl->gt_w * 3;
    uint8_t *lq = clip_lq(ds.video, 0, 0, n);
    float *out = malloc(opx * n * sizeof(float));
    /* one pass */
    pf_model_infer_clip(m, lq, n, cl->lq_h, cl->lq_w, out, err, sizeof err);
    double whole = 0;
    for (int t = 0; t < n; t++) whole += frame_psnr(ds.video, 0, t, out + opx * t, NULL, 4) / n;
    pf_eval_result r;
    cfg.clip_window = 32;
    cfg.clip_overlap = 8;
    int rc = pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, NULL, NULL, &r, err, sizeof err);
    CHECK(rc == 0 && fabs(r.psnr - whole) < 1e-9, "one window: %.9f vs the whole clip %.9f (%s)",
          r.psnr, whole, err);
    pf_eval_result_free(&r);
    /* windows of 4 sharing 2 */
    int st[16], len[16], a[16], b[16];
    int nw = pf_clip_windows(n, 4, 2, st, len, a, b, 16);
    double windowed = 0;
    for (int k = 0; k < nw; k++) {
        pf_model_infer_clip(m, lq + (size_t)st[k] * cl->lq_h * cl->lq_w * 3, len[k], cl->lq_h,
                            cl->lq_w, out, err, sizeof err);
        for (int f = a[k]; f < b[k]; f++)
            windowed += frame_psnr(ds.video, 0, f, out + opx * (f - st[k]), NULL, 4) / n;
    }
    cfg.clip_window = 4;
    cfg.clip_overlap = 2;
    rc = pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, NULL, NULL, &r, err, sizeof err);
    CHECK(rc == 0 && fabs(r.psnr - windowed) < 1e-9 && r.psnr != whole,
          "%d windows of 4: %.9f vs the windows run here %.9f (one pass: %.9f; %s)", nw, r.psnr,
          windowed, whole, err);
    printf("BasicVSR on a %d-frame clip: one pass %.6f dB, %d windows of 4 sharing 2: %.6f dB\n",
           n, whole, nw, r.psnr);
    pf_eval_result_free(&r);
    free(lq);
    free(out);
    pf_model_destroy(&m);
    pf_dataset_close(&ds);
}

/* BasicSR's generate_frame_indices for num_frame 3 (h = 1), written from its docstring:
   frame idx of a clip of n frames gets idx - 1, idx, idx + 1, an index outside [0, n - 1]
   replaced by the padding's rule (m = n - 1). */
static void window3(int idx, int n, int reflection_circle, int *out) {
    int m = n - 1;
    for (int k = 0; k < 3; k++) {
        int i = idx - 1 + k;
        if (i < 0) i = reflection_circle ? idx + 1 - i : 0;        /* replicate: 0 */
        else if (i > m) i = reflection_circle ? (idx - 1) - (i - m) : m;
        out[k] = i;
    }
}

/* Frame `frame` of clip c by EDVR from its window of 3 (padded here to multiples of 4, the
   last row and column replicated), cropped to the GT size: its PSNR-Y as frame_psnr. */
static double window_psnr(pf_model *m, pf_video_dataset *v, int c, int frame,
                          int reflection_circle) {
    const pf_clip *cl = &v->clips[c];
    int n = cl->n_frames, lh = cl->lq_h, lw = cl->lq_w, idx[3];
    int ph = (lh + 3) / 4 * 4, pw = (lw + 3) / 4 * 4;
    window3(frame, n, reflection_circle, idx);
    uint8_t *in = malloc((size_t)3 * ph * pw * 3);
    uint8_t *lq = clip_lq(v, c, 0, n);
    for (int t = 0; t < 3; t++)
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                memcpy(in + (((size_t)t * ph + y) * pw + x) * 3,
                       lq + (((size_t)idx[t] * lh + (y < lh ? y : lh - 1)) * lw +
                             (x < lw ? x : lw - 1)) * 3, 3);
    float *out = malloc((size_t)ph * pw * 16 * 3 * sizeof(float));
    float *crop = malloc((size_t)cl->gt_h * cl->gt_w * 3 * sizeof(float));
    char err[512];
    int rc = pf_model_infer_window(m, in, ph, pw, out, err, sizeof err);
    CHECK(rc == 0, "pf_model_infer_window: %s", err);
    for (int y = 0; y < cl->gt_h; y++)
        memcpy(crop + (size_t)y * cl->gt_w * 3, out + (size_t)y * pw * 4 * 3,
               (size_t)cl->gt_w * 3 * sizeof(float));
    double p = frame_psnr(v, c, frame, crop, NULL, 4);
    free(in);
    free(lq);
    free(out);
    free(crop);
    return p;
}

/* EDVR (seeded weights, 3-frame windows) on clips c (7 frames, LQ 8 x 6) and a (5 frames,
   LQ 6 x 5) as a VideoTestDataset: each clip's PSNR-Y is the mean over its frames of the
   naive PSNR-Y of pf_model_infer_window of that frame's window (computed here by BasicSR's
   rule, padded to 8 x 8); another padding gives other numbers (the windows are used); a
   clip too short for the window is an error naming it. */
static void test_window_network(void) {
    pf_config cfg;
    base_cfg(&cfg, "EDVR", 4);
    cfg.edvr_num_frame = 3;
    cfg.deformable_groups = 2;
    cfg.num_extract_block = cfg.num_reconstruct_block = 1;
    cfg.center_frame_idx = 1;
    snprintf(cfg.eval.type, sizeof cfg.eval.type, "VideoTestDataset");
    cfg.eval.num_frame = 3;
    snprintf(cfg.eval.padding, sizeof cfg.eval.padding, "reflection_circle");
    cfg.eval.n_clips = 2;
    snprintf(cfg.eval.clips[0].name, sizeof cfg.eval.clips[0].name, "c");
    snprintf(cfg.eval.clips[1].name, sizeof cfg.eval.clips[1].name, "a");
    char err[1024], save[512];
    pf_dataset ds;
    pf_model *m = open_eval(&cfg, &ds, 7);
    if (!m) return;
    snprintf(save, sizeof save, "%s/edvr", root);
    pf_eval_result r;
    seen_ctx seen = { { 0 } };
    int rc = pf_evaluate(m, &cfg, &ds, save, NULL, NULL, on_image, &seen, &r, err, sizeof err);
    CHECK(rc == 0 && r.n == 2, "pf_evaluate (EDVR): %s", err);
    double mean = 0, other = 0;
    for (int c = 0; rc == 0 && c < 2; c++) {
        const pf_clip *cl = &ds.video->clips[c];
        int n = cl->n_frames;
        double sum = 0, sum_rep = 0;
        for (int f = 0; f < n; f++) {
            sum += window_psnr(m, ds.video, c, f, 1);
            sum_rep += window_psnr(m, ds.video, c, f, 0);
        }
        char path[700];
        snprintf(path, sizeof path, "%s/%s/%08d.png", save, cl->name, n - 1);
        CHECK(access(path, F_OK) == 0, "no saved frame %s", path);
        CHECK(r.items[c].frames == n && !strcmp(r.items[c].name, cl->name) &&
              fabs(r.items[c].psnr - sum / n) < 1e-9 && seen.calls[c] == 1,
              "EDVR clip %s (%d frames): PSNR-Y %.9f, from the windows run here %.9f", cl->name,
              r.items[c].frames, r.items[c].psnr, sum / n);
        mean += sum / n / 2;
        other += sum_rep / n / 2;
    }
    CHECK(rc || (fabs(r.psnr - mean) < 1e-9 && fabs(other - mean) > 1e-6),
          "EDVR mean over clips %.9f (naive %.9f; replicate padding %.9f)", r.psnr, mean, other);
    printf("EDVR on 2 clips (7 and 5 frames, windows of 3): PSNR-Y %.6f dB = the mean of the "
           "clips' per-frame means (replicate padding instead: %.6f dB)\n", r.psnr, other);
    if (rc == 0) pf_eval_result_free(&r);
    pf_dataset_close(&ds);
    /* clip e: 2 frames, too few for reflection_circle windows of 3 */
    snprintf(cfg.eval.clips[1].name, sizeof cfg.eval.clips[1].name, "e");
    rc = pf_dataset_open(&ds, &cfg.eval, "data.eval", cfg.scale, 0, err, sizeof err);
    if (rc == 0) {
        rc = pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, NULL, NULL, &r, err, sizeof err);
        if (rc == 0) pf_eval_result_free(&r);
        pf_dataset_close(&ds);
    }
    CHECK(rc == -1 && strstr(err, "'e'"), "a 2-frame clip for windows of 3: %s",
          rc ? err : "accepted");
    printf("a 2-frame clip, windows of 3 (reflection_circle): %s\n", err);
    pf_model_destroy(&m);
}

/* Clips d (2 flat frames, then 3 textured) and e (2 flat frames): identical frames left out
   of the PSNR means and counted, against naive per-frame PSNR-Y (inf when equal). */
static void test_identical_frames(void) {
    pf_config cfg;
    two_clips_cfg(&cfg, "d", "e");
    char err[1024];
    pf_dataset ds;
    pf_model *m = open_eval(&cfg, &ds, 3);
    if (!m) return;
    pf_eval_result r;
    int rc = pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, NULL, NULL, &r, err, sizeof err);
    CHECK(rc == 0 && r.n == 2, "pf_evaluate: %s", err);
    if (rc || r.n != 2) return;
    /* naive, per clip: mean of the finite per-frame values, count of the infinite ones */
    double clip_mean[2], clip_mean_bic[2];
    int inf_out[2] = { 0 }, inf_bic[2] = { 0 };
    for (int c = 0; c < 2; c++) {
        const pf_clip *cl = &ds.video->clips[c];
        int n = cl->n_frames, fin = 0, fin_bic = 0;
        uint8_t *lq = clip_lq(ds.video, c, 0, n);
        float *out = malloc((size_t)cl->gt_h * cl->gt_w * 3 * sizeof(float));
        double sum = 0, sum_bic = 0;
        for (int t = 0; t < n; t++) {
            pf_model_infer(m, lq + (size_t)t * cl->lq_h * cl->lq_w * 3, cl->lq_h, cl->lq_w, out,
                           err, sizeof err);
            double b, p = frame_psnr(ds.video, c, t, out, &b, 2);
            if (isinf(p)) inf_out[c]++;
            else sum += p, fin++;
            if (isinf(b)) inf_bic[c]++;
            else sum_bic += b, fin_bic++;
        }
        clip_mean[c] = fin ? sum / fin : INFINITY;
        clip_mean_bic[c] = fin_bic ? sum_bic / fin_bic : INFINITY;
        free(lq);
        free(out);
    }
    /* the set-up itself: the flat frames are the identical ones, the network's are not */
    CHECK(inf_bic[0] == 2 && inf_bic[1] == 2 && inf_out[0] == 0 && inf_out[1] == 0,
          "naive: bicubic identical frames %d, %d (want 2, 2), network %d, %d (want 0, 0)",
          inf_bic[0], inf_bic[1], inf_out[0], inf_out[1]);
    for (int c = 0; c < 2; c++) {
        const pf_eval_item *it = &r.items[c];
        int same_bic = isinf(clip_mean_bic[c]) ? isinf(it->psnr_bicubic)
                                               : fabs(it->psnr_bicubic - clip_mean_bic[c]) < 1e-9;
        CHECK(fabs(it->psnr - clip_mean[c]) < 1e-9 && same_bic && it->psnr_inf == inf_out[c] &&
              it->psnr_bicubic_inf == inf_bic[c],
              "clip %s: PSNR-Y %.9f (naive %.9f), %d left out (%d); bicubic %.9f (naive %.9f), "
              "%d left out (%d)", it->name, it->psnr, clip_mean[c], it->psnr_inf, inf_out[c],
              it->psnr_bicubic, clip_mean_bic[c], it->psnr_bicubic_inf, inf_bic[c]);
        CHECK(it->ssim_bicubic <= 1 && isfinite(it->ssim_bicubic), "clip %s: SSIM %g",
              it->name, it->ssim_bicubic);
    }
    /* over clips: the mean of the clips' means, an infinite one left out */
    double over = (clip_mean[0] + clip_mean[1]) / 2;
    double over_bic = clip_mean_bic[0];     /* e's is inf: left out */
    CHECK(fabs(r.psnr - over) < 1e-9 && isfinite(r.psnr_bicubic) &&
          fabs(r.psnr_bicubic - over_bic) < 1e-9,
          "over clips: PSNR-Y %.9f (naive %.9f), bicubic %.9f (naive %.9f)", r.psnr, over,
          r.psnr_bicubic, over_bic);
    CHECK(r.psnr_inf == 0 && r.psnr_inf_items == 0 &&
          r.psnr_bicubic_inf == inf_bic[0] + inf_bic[1] && r.psnr_bicubic_inf_items == 1,
          "over clips left out: network %d frames, %d clips; bicubic %d frames (want %d), "
          "%d clips (want 1)", r.psnr_inf, r.psnr_inf_items, r.psnr_bicubic_inf,
          inf_bic[0] + inf_bic[1], r.psnr_bicubic_inf_items);
    char note[256];
    pf_eval_inf_note(note, sizeof note, "frame", r.psnr_inf, r.psnr_bicubic_inf, "clip",
                     r.psnr_inf_items, r.psnr_bicubic_inf_items);
    CHECK(!strcmp(note, " (bicubic: 4 identical frames (1 whole clip) left out)"), "note '%s'",
          note);
    printf("identical frames: bicubic over clips %.4f dB%s\n", r.psnr_bicubic, note);
    pf_eval_result_free(&r);
    pf_model_destroy(&m);
    pf_dataset_close(&ds);
}

/* An image set of 3 (the middle one flat): bicubic's mean over images leaves the flat one out. */
static void test_identical_images(void) {
    char dir[400], err[1024];
    snprintf(dir, sizeof dir, "%s/images", root);
    pf_mkdirs(dir, NULL, 0);
    int w = 24, h = 20;
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < w * h * 3; k++)
            px[k] = i == 1 ? (uint8_t)(50 + 60 * (k % 3))
                           : (uint8_t)(128 + 100 * sin(0.37 * k * (i + 1) + 0.01 * k * k));
        char path[500];
        snprintf(path, sizeof path, "%s/img%d.png", dir, i);
        CHECK(pf_image_write_png(path, px, w, h, err, sizeof err) == 0, "%s", err);
    }
    free(px);
    pf_config cfg;
    base_cfg(&cfg, "EDSR", 2);
    pf_dataset_cfg *dc = &cfg.eval;
    memset(dc, 0, sizeof *dc);
    dc->present = 1;
    snprintf(dc->type, sizeof dc->type, "PairedImageDataset");
    snprintf(dc->gt_folder, sizeof dc->gt_folder, "%s", dir);
    snprintf(dc->filename_tmpl, sizeof dc->filename_tmpl, "{}");
    dc->repeat = 1;
    pf_dataset ds;
    pf_model *m = open_eval(&cfg, &ds, 3);
    if (!m) return;
    CHECK(ds.n_files == 3, "image set of %d images, want 3", ds.n_files);
    pf_eval_result r;
    int rc = pf_evaluate(m, &cfg, &ds, NULL, NULL, NULL, NULL, NULL, &r, err, sizeof err);
    CHECK(rc == 0 && r.n == 3, "pf_evaluate: %s", err);
    /* naive: bicubic PSNR-Y of each image, mean of the finite ones */
    double sum = 0;
    int fin = 0, left = 0, wrong = 0;
    for (int i = 0; rc == 0 && i < 3; i++) {
        const pf_image *gt, *lq;
        if (pf_dataset_pair(&ds, i, &gt, &lq, err, sizeof err)) {
            wrong++;
            continue;
        }
        uint8_t *b8 = malloc((size_t)gt->h * gt->w * 3);
        pf_imresize_u8(lq->data, lq->h, lq->w, 3, 2.0, b8);
        double b = naive_psnr_y(b8, gt->data, gt->h, gt->w);
        free(b8);
        int inf = isinf(b) != 0;
        if (inf) left++;
        else sum += b, fin++;
        wrong += r.items[i].psnr_bicubic_inf != inf || r.items[i].psnr_inf != 0;
    }
    CHECK(rc == 0 && left == 1 && wrong == 0 && r.psnr_bicubic_inf == 1 &&
          r.psnr_bicubic_inf_items == 1 && r.psnr_inf == 0 && isfinite(r.psnr) &&
          fabs(r.psnr_bicubic - sum / fin) < 1e-9,
          "image set: bicubic mean %.9f (naive %.9f over %d), %d left out (naive %d), %d "
          "images' counts wrong", r.psnr_bicubic, fin ? sum / fin : NAN, fin, r.psnr_bicubic_inf,
          left, wrong);
    /* as the eval hook's event carries them, in the words of an image set */
    pf_msg_event ev = { .psnr_inf = r.psnr_inf, .psnr_bicubic_inf = r.psnr_bicubic_inf,
                        .psnr_inf_items = r.psnr_inf_items,
                        .psnr_bicubic_inf_items = r.psnr_bicubic_inf_items };
    char note[256];
    pf_eval_event_note(note, sizeof note, &ev, 0);
    CHECK(!strcmp(note, " (bicubic: 1 identical image left out)"), "note '%s'", note);
    pf_eval_result_free(&r);
    pf_model_destroy(&m);
    pf_dataset_close(&ds);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/pf_eval_video_%d", (int)getpid());
    char dir[400];
    snprintf(dir, sizeof dir, "%s/clips/a", root);
    make_clip(dir, 5, 24, 20, 1);
    snprintf(dir, sizeof dir, "%s/clips/b", root);
    make_clip(dir, 3, 24, 20, 2);
    snprintf(dir, sizeof dir, "%s/clips/c", root);
    make_clip(dir, 7, 32, 24, 3);
    snprintf(dir, sizeof dir, "%s/clips/d", root);
    make_clip_flat(dir, 5, 2, 24, 20, 4);
    snprintf(dir, sizeof dir, "%s/clips/e", root);
    make_clip_flat(dir, 2, 2, 24, 20, 5);
    test_windows();
    test_image_network();
    test_video_network();
    test_window_network();
    test_identical_frames();
    test_identical_images();
    int rc = pf_test_end("test_eval_video");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (rc == 0 && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}
