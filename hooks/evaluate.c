/*  evaluate — see evaluate.h. */
#include "hooks/evaluate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int pf_evaluate(pf_model *m, const pf_config *cfg, pf_dataset *ds, const char *save_dir,
                pf_eval_cancel_fn cancel, void *cancel_ctx, pf_eval_image_fn on_image,
                void *image_ctx, pf_eval_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
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
            res->psnr += it->psnr;
            res->ssim += it->ssim;
            res->psnr_bicubic += it->psnr_bicubic;
            res->ssim_bicubic += it->ssim_bicubic;
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
    if (res->n) {
        res->psnr /= res->n;
        res->ssim /= res->n;
        res->psnr_bicubic /= res->n;
        res->ssim_bicubic /= res->n;
    }
    return 0;
}

void pf_eval_result_free(pf_eval_result *res) {
    free(res->items);
    memset(res, 0, sizeof *res);
}
