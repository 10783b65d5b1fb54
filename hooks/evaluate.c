/*  evaluate — see evaluate.h. */
#include "hooks/evaluate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame_indices.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/metrics.h"
#include "common/util.h"
#include "nn/infer.h"

/* Copy `src` (h x w RGB8) into a ph x pw buffer, replicating the last row and column. */
static void pad_replicate(const uint8_t *src, int h, int w, uint8_t *dst, int ph, int pw) {
    for (int y = 0; y < ph; y++) {
        const uint8_t *row = src + (size_t)(y < h ? y : h - 1) * w * 3;
        uint8_t *out = dst + (size_t)y * pw * 3;
        memcpy(out, row, (size_t)w * 3);
        for (int x = w; x < pw; x++) memcpy(out + (size_t)x * 3, row + (size_t)(w - 1) * 3, 3);
    }
}

void pf_eval_result_means(pf_eval_result *res) {
    pf_psnr_mean psnr = { 0 }, bic = { 0 };
    double ssim = 0, ssim_bic = 0;
    res->psnr_inf = res->psnr_bicubic_inf = res->psnr_inf_items = res->psnr_bicubic_inf_items = 0;
    if (!res->n) {      /* nothing evaluated: all means 0 */
        res->psnr = res->ssim = res->psnr_bicubic = res->ssim_bicubic = 0;
        return;
    }
    for (int i = 0; i < res->n; i++) {
        const pf_eval_item *it = &res->items[i];
        pf_psnr_mean_add(&psnr, it->psnr);
        pf_psnr_mean_add(&bic, it->psnr_bicubic);
        ssim += it->ssim;
        ssim_bic += it->ssim_bicubic;
        res->psnr_inf += it->psnr_inf;
        res->psnr_bicubic_inf += it->psnr_bicubic_inf;
    }
    res->psnr = pf_psnr_mean_get(&psnr);
    res->psnr_bicubic = pf_psnr_mean_get(&bic);
    res->ssim = ssim / res->n;
    res->ssim_bicubic = ssim_bic / res->n;
    res->psnr_inf_items = (int)psnr.inf;
    res->psnr_bicubic_inf_items = (int)bic.inf;
}

/* "N identical UNITs" (plural when N != 1) appended to out at *pos. */
static void append_count(char *out, size_t len, size_t *pos, int n, const char *unit) {
    if (*pos >= len) return;
    int k = snprintf(out + *pos, len - *pos, "%d identical %s%s", n, unit, n == 1 ? "" : "s");
    if (k > 0) *pos += (size_t)k;
}

void pf_eval_inf_note(char *out, size_t len, const char *unit, int psnr_inf, int bicubic_inf,
                      const char *items, int psnr_inf_items, int bicubic_inf_items) {
    if (!len) return;
    out[0] = '\0';
    size_t pos = 0;
    const char *who[2] = { "output", "bicubic" };
    int frames[2] = { psnr_inf, bicubic_inf }, whole[2] = { psnr_inf_items, bicubic_inf_items };
    for (int k = 0; k < 2; k++) {
        if (!frames[k] && !(items && whole[k])) continue;
        if (pos < len) {
            int c = snprintf(out + pos, len - pos, "%s%s: ", pos ? "; " : " (", who[k]);
            if (c > 0) pos += (size_t)c;
        }
        append_count(out, len, &pos, frames[k], unit);
        if (items && whole[k] && pos < len) {
            int c = snprintf(out + pos, len - pos, " (%d whole %s%s)", whole[k], items,
                             whole[k] == 1 ? "" : "s");
            if (c > 0) pos += (size_t)c;
        }
        if (pos < len) {
            int c = snprintf(out + pos, len - pos, " left out");
            if (c > 0) pos += (size_t)c;
        }
    }
    if (pos && pos < len) snprintf(out + pos, len - pos, ")");
}

void pf_eval_event_note(char *out, size_t len, const pf_msg_event *ev, int video) {
    pf_eval_inf_note(out, len, video ? "frame" : "image", (int)ev->psnr_inf,
                     (int)ev->psnr_bicubic_inf, video ? "clip" : NULL, (int)ev->psnr_inf_items,
                     (int)ev->psnr_bicubic_inf_items);
}

void pf_eval_clip_folder(const pf_clip *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->name);
    char *dot = c->gt_video ? strrchr(out, '.') : NULL;
    if (dot && !strchr(dot, '/')) *dot = '\0';
}

typedef struct {
    pf_psnr_mean psnr, psnr_bicubic;    /* identical frames (+inf) left out and counted */
    double ssim, ssim_bicubic;
} clip_sums;

/* One output frame t of clip c: clamp, compare with its GT, bicubic beside it, save. */
static int clip_frame(const pf_config *cfg, pf_video_dataset *v, int c, int t, const float *out,
                      int pw, const char *save_dir, int middle, pf_eval_image_fn on_image,
                      void *image_ctx, clip_sums *sum, char *err, size_t errlen) {
    const pf_image *gt, *lq;
    if (pf_video_dataset_frame(v, c, t, &gt, &lq, err, errlen)) return -1;
    int s = cfg->scale, oh = gt->h, ow = gt->w, rc = 0;
    uint8_t *out8 = malloc((size_t)oh * ow * 3), *bic = malloc((size_t)oh * ow * 3);
    const pf_clip *cl = &v->clips[c];
    if (!out8 || !bic) {
        snprintf(err, errlen, "out of memory evaluating clip '%s'", cl->name);
        rc = -1;
    }
    for (int y = 0; rc == 0 && y < oh; y++)
        pf_to_u8(out + (size_t)y * pw * s * 3, out8 + (size_t)y * ow * 3, (size_t)ow * 3);
    if (rc == 0 && pf_imresize_u8(lq->data, lq->h, lq->w, 3, (double)s, bic) != 0) {
        snprintf(err, errlen, "clip '%s' frame %d: bicubic upscaling failed", cl->name,
                 cl->first + t);
        rc = -1;
    }
    if (rc == 0) {
        int y = cfg->eval_y_channel, cb = cfg->crop_border;
        if (cfg->eval_psnr) {
            pf_psnr_mean_add(&sum->psnr, pf_psnr(out8, gt->data, oh, ow, cb, y));
            pf_psnr_mean_add(&sum->psnr_bicubic, pf_psnr(bic, gt->data, oh, ow, cb, y));
        }
        if (cfg->eval_ssim) {
            sum->ssim += pf_ssim(out8, gt->data, oh, ow, cb, y);
            sum->ssim_bicubic += pf_ssim(bic, gt->data, oh, ow, cb, y);
        }
        if (middle && on_image) on_image(image_ctx, c, cl->name, lq, out8, gt);
    }
    if (rc == 0 && save_dir) {
        char folder[300], dir[PF_PATH_MAX * 2], path[PF_PATH_MAX * 2 + 16];
        pf_eval_clip_folder(cl, folder, sizeof folder);
        snprintf(dir, sizeof dir, "%s/%s", save_dir, folder);
        snprintf(path, sizeof path, "%s/%08d.png", dir, cl->first + t);
        rc = pf_mkdirs(dir, err, errlen) ? -1 : pf_image_write_png(path, out8, ow, oh, err, errlen);
    }
    pf_video_dataset_release(v, c, t);
    free(out8);
    free(bic);
    return rc;
}

/* What every clip of one evaluation shares. */
typedef struct {
    pf_model *m;
    const pf_config *cfg;
    pf_video_dataset *v;
    const char *save_dir;
    pf_eval_cancel_fn cancel;
    void *cancel_ctx;
    pf_eval_image_fn on_image;
    void *image_ctx;
    int *wv;                    /* pf_clip_windows' four arrays, MAX_WINDOWS each */
} clip_job;

enum { MAX_WINDOWS = 1 << 16 };

/* Clip c of a recurrent video network (or an image network, frame by frame): windows of at
   most eval_cfg.clip_window frames (pf_clip_windows), each one pf_model_infer_clip; frames
   padded to ph x pw. Returns 0, 1 when cancelled, or -1 with err. */
static int recurrent_clip(const clip_job *j, int c, int ph, int pw, clip_sums *sum, char *err,
                          size_t errlen) {
    const pf_clip *cl = &j->v->clips[c];
    int video = pf_model_is_video(j->m), n = cl->n_frames, s = j->cfg->scale, *wv = j->wv;
    int window = video ? j->cfg->clip_window : 1, overlap = video ? j->cfg->clip_overlap : 0;
    int nw = pf_clip_windows(n, window, overlap, wv, wv + MAX_WINDOWS, wv + 2 * MAX_WINDOWS,
                             wv + 3 * MAX_WINDOWS, MAX_WINDOWS);
    if (nw < 0) {
        snprintf(err, errlen, "clip '%s': %d frames need too many windows", cl->name, n);
        return -1;
    }
    size_t in_px = (size_t)ph * pw, out_px = in_px * (size_t)s * s;
    uint8_t *in = malloc((size_t)window * in_px * 3);
    float *out = malloc((size_t)window * out_px * 3 * sizeof *out);
    int rc = 0;
    if (!in || !out) {
        snprintf(err, errlen, "out of memory evaluating clip '%s'", cl->name);
        rc = -1;
    }
    for (int k = 0; rc == 0 && k < nw; k++) {
        if (j->cancel && j->cancel(j->cancel_ctx)) {
            rc = 1;
            break;
        }
        int f0 = wv[k], len = wv[MAX_WINDOWS + k];
        for (int t = 0; rc == 0 && t < len; t++) {
            const pf_image *gt, *lq;
            if ((rc = pf_video_dataset_frame(j->v, c, f0 + t, &gt, &lq, err, errlen))) break;
            pad_replicate(lq->data, lq->h, lq->w, in + t * in_px * 3, ph, pw);
            pf_video_dataset_release(j->v, c, f0 + t);
        }
        if (rc == 0) rc = pf_model_infer_clip(j->m, in, len, ph, pw, out, err, errlen);
        for (int f = wv[2 * MAX_WINDOWS + k]; rc == 0 && f < wv[3 * MAX_WINDOWS + k]; f++)
            rc = clip_frame(j->cfg, j->v, c, f, out + (size_t)(f - f0) * out_px * 3, pw,
                            j->save_dir, f == n / 2, j->on_image, j->image_ctx, sum, err,
                            errlen);
    }
    free(in);
    free(out);
    return rc;
}

/* Clip c of a sliding-window network (EDVR): frame f's SR from its window of
   pf_model_frames LQ frames (pf_video_frame_indices with the set's padding, BasicSR's
   VideoTestDataset), one pf_model_infer_window per frame; frames padded to ph x pw. Returns
   0, 1 when cancelled, or -1 with err naming the clip. */
static int window_clip(const clip_job *j, int c, int ph, int pw, clip_sums *sum, char *err,
                       size_t errlen) {
    const pf_clip *cl = &j->v->clips[c];
    int T = pf_model_frames(j->m), n = cl->n_frames, s = j->cfg->scale, idx[PF_VIDEO_MAX_WINDOW];
    if (!j->v->window || T > PF_VIDEO_MAX_WINDOW) {
        snprintf(err, errlen, "%s: %s evaluates on a VideoTestDataset (windows of %d frames), "
                 "got %s", j->v->key, j->cfg->model_type, T, j->v->cfg.type);
        return -1;
    }
    size_t in_px = (size_t)ph * pw;
    uint8_t *in = malloc((size_t)T * in_px * 3);
    float *out = malloc(in_px * (size_t)s * s * 3 * sizeof *out);
    int rc = 0;
    if (!in || !out) {
        snprintf(err, errlen, "out of memory evaluating clip '%s'", cl->name);
        rc = -1;
    }
    for (int f = 0; rc == 0 && f < n; f++) {
        if (j->cancel && j->cancel(j->cancel_ctx)) {
            rc = 1;
            break;
        }
        if (pf_video_frame_indices(f, n, T, j->v->padding, idx)) {
            snprintf(err, errlen, "%s: clip '%s' has %d frames: too few for windows of %d with "
                     "padding %s (%d at least)", j->v->key, cl->name, n, T,
                     pf_frame_padding_name(j->v->padding),
                     pf_video_min_frames(T, j->v->padding));
            rc = -1;
            break;
        }
        for (int t = 0; rc == 0 && t < T; t++) {
            const pf_image *gt, *lq;
            if ((rc = pf_video_dataset_frame(j->v, c, idx[t], &gt, &lq, err, errlen))) break;
            pad_replicate(lq->data, lq->h, lq->w, in + t * in_px * 3, ph, pw);
            pf_video_dataset_release(j->v, c, idx[t]);
        }
        if (rc == 0) rc = pf_model_infer_window(j->m, in, ph, pw, out, err, errlen);
        if (rc == 0)
            rc = clip_frame(j->cfg, j->v, c, f, out, pw, j->save_dir, f == n / 2, j->on_image,
                            j->image_ctx, sum, err, errlen);
    }
    free(in);
    free(out);
    return rc;
}

/* evaluate.h: the video sets. */
static int evaluate_clips(pf_model *m, const pf_config *cfg, pf_dataset *ds, const char *save_dir,
                          pf_eval_cancel_fn cancel, void *cancel_ctx, pf_eval_image_fn on_image,
                          void *image_ctx, pf_eval_result *res, char *err, size_t errlen) {
    pf_video_dataset *v = ds->video;
    const int *ids;
    int n_clips = pf_dataset_clips(ds, &ids);
    if (cfg->eval_ensemble || cfg->eval_tile > 0) {
        snprintf(err, errlen, "%s: eval_cfg.ensemble and eval_cfg.tile are not supported for "
                 "video sets", cfg->eval.present ? "data.eval" : "data.test");
        return -1;
    }
    res->items = calloc((size_t)n_clips + 1, sizeof *res->items);
    if (!res->items) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (save_dir && pf_mkdirs(save_dir, err, errlen) != 0) return -1;
    int mult = cfg->pad_multiple > 0 ? cfg->pad_multiple : 1;
    int q = pf_model_input_multiple(m);
    if (mult % q) mult *= q;
    clip_job j = { m, cfg, v, save_dir, cancel, cancel_ctx, on_image, image_ctx,
                   malloc(4 * MAX_WINDOWS * sizeof(int)) };
    if (!j.wv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (int ci = 0; rc == 0 && ci < n_clips; ci++) {
        int c = ids ? ids[ci] : ci;
        const pf_clip *cl = &v->clips[c];
        int n = cl->n_frames, lh = cl->lq_h, lw = cl->lq_w;
        int ph = (lh + mult - 1) / mult * mult, pw = (lw + mult - 1) / mult * mult;
        clip_sums sum = { 0 };
        rc = pf_model_is_window(m) ? window_clip(&j, c, ph, pw, &sum, err, errlen)
                                   : recurrent_clip(&j, c, ph, pw, &sum, err, errlen);
        if (rc) break;
        pf_eval_item *it = &res->items[ci];
        snprintf(it->name, sizeof it->name, "%s", cl->name);
        it->frames = n;
        it->psnr = cfg->eval_psnr ? pf_psnr_mean_get(&sum.psnr) : NAN;
        it->ssim = cfg->eval_ssim ? sum.ssim / n : NAN;
        it->psnr_bicubic = cfg->eval_psnr ? pf_psnr_mean_get(&sum.psnr_bicubic) : NAN;
        it->ssim_bicubic = cfg->eval_ssim ? sum.ssim_bicubic / n : NAN;
        it->psnr_inf = (int)sum.psnr.inf;
        it->psnr_bicubic_inf = (int)sum.psnr_bicubic.inf;
        res->n++;
    }
    free(j.wv);
    if (rc) return rc;
    pf_eval_result_means(res);
    return 0;
}

int pf_evaluate(pf_model *m, const pf_config *cfg, pf_dataset *ds, const char *save_dir,
                pf_eval_cancel_fn cancel, void *cancel_ctx, pf_eval_image_fn on_image,
                void *image_ctx, pf_eval_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    if (ds->video)
        return evaluate_clips(m, cfg, ds, save_dir, cancel, cancel_ctx, on_image, image_ctx,
                              res, err, errlen);
    res->items = calloc((size_t)ds->n_files, sizeof *res->items);
    if (!res->items) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (save_dir && pf_mkdirs(save_dir, err, errlen) != 0) return -1;
    int s = cfg->scale, mult = cfg->pad_multiple > 0 ? cfg->pad_multiple : 1;
    /* and whatever the network needs (RRDBNet x2: even sizes); both are powers of two or 1 in
       practice, so the larger is a multiple of the smaller unless the user chose otherwise */
    int q = pf_model_input_multiple(m);
    if (mult % q) mult *= q;
    pf_infer_opts opts = {cfg->eval_ensemble, cfg->eval_tile, cfg->eval_tile_overlap};
    for (int i = 0; i < ds->n_files; i++) {
        if (cancel && cancel(cancel_ctx)) return 1;
        const pf_image *gt, *lq;
        if (pf_dataset_pair(ds, i, &gt, &lq, err, errlen) != 0) return -1;
        const char *path = ds->single ? ds->files[i].lq_path : ds->files[i].gt_path;
        /* The output is the GT's size; without a GT (SingleImageDataset), scale x the LQ. */
        int oh = gt->data ? gt->h : lq->h * s, ow = gt->data ? gt->w : lq->w * s;
        int ph = (lq->h + mult - 1) / mult * mult, pw = (lq->w + mult - 1) / mult * mult;
        size_t out_px = (size_t)ph * s * pw * s;
        uint8_t *padded = malloc((size_t)ph * pw * 3);
        float *out = malloc(out_px * 3 * sizeof *out);
        uint8_t *out8 = malloc((size_t)oh * ow * 3);
        uint8_t *bic = gt->data ? malloc((size_t)oh * ow * 3) : NULL;
        int rc = (padded && out && out8 && (bic || !gt->data)) ? 0 : -1;
        if (rc) snprintf(err, errlen, "out of memory evaluating '%s'", path);
        if (rc == 0) {
            pad_replicate(lq->data, lq->h, lq->w, padded, ph, pw);
            rc = pf_infer(m, padded, ph, pw, &opts, out, err, errlen);
        }
        if (rc == 0) {
            /* Crop the padded output back to the output size, then clamp and round. */
            for (int y = 0; y < oh; y++)
                pf_to_u8(out + (size_t)y * pw * s * 3, out8 + (size_t)y * ow * 3,
                         (size_t)ow * 3);
            if (bic && (rc = pf_imresize_u8(lq->data, lq->h, lq->w, 3, (double)s, bic)) != 0)
                snprintf(err, errlen, "bicubic upscaling of '%s' failed", path);
        }
        if (rc == 0) {
            pf_eval_item *it = &res->items[i];
            snprintf(it->name, sizeof it->name, "%s", ds->files[i].name);
            it->frames = 1;
            int y = cfg->eval_y_channel, cb = cfg->crop_border;
            /* evaluation.metrics decides what is computed; the rest stays NaN (null in
               metrics.jsonl), and so does everything without a GT. */
            it->psnr = it->psnr_bicubic = it->ssim = it->ssim_bicubic = NAN;
            if (cfg->eval_psnr && gt->data) {
                it->psnr = pf_psnr(out8, gt->data, gt->h, gt->w, cb, y);
                it->psnr_bicubic = pf_psnr(bic, gt->data, gt->h, gt->w, cb, y);
            }
            if (cfg->eval_ssim && gt->data) {
                it->ssim = pf_ssim(out8, gt->data, gt->h, gt->w, cb, y);
                it->ssim_bicubic = pf_ssim(bic, gt->data, gt->h, gt->w, cb, y);
            }
            it->psnr_inf = isinf(it->psnr) && it->psnr > 0;
            it->psnr_bicubic_inf = isinf(it->psnr_bicubic) && it->psnr_bicubic > 0;
            res->n++;
            if (on_image && gt->data) on_image(image_ctx, i, it->name, lq, out8, gt);
            if (save_dir) {
                char out_path[PF_PATH_MAX * 2];
                snprintf(out_path, sizeof out_path, "%s/%s.png", save_dir, it->name);
                rc = pf_image_write_png(out_path, out8, ow, oh, err, errlen);
            }
        }
        free(padded);
        free(out);
        free(out8);
        free(bic);
        if (rc) return -1;
    }
    pf_eval_result_means(res);
    return 0;
}

void pf_eval_result_free(pf_eval_result *res) {
    free(res->items);
    memset(res, 0, sizeof *res);
}
