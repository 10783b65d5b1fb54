/*  evaluate — run a dataset through a model and measure it, the way the SR literature does
    (docs/metrics.md): the LQ image (padded at the right and bottom edges by replication to a
    multiple of eval_cfg.pad_multiple, cropped back after inference) goes through the network
    (pf_infer: with eval_cfg.ensemble the x8 self-ensemble, with eval_cfg.tile in tiles);
    the output is clamped and rounded to uint8 and compared with the GT by PSNR and SSIM with
    evaluation.crop_border and convert_to: y. The same metrics of MATLAB-bicubic upscaling of
    the LQ are reported beside them. Used by the eval hook and by `pixflow test`.
    A SingleImageDataset (no GT) gives outputs of scale x the LQ size and no metrics (NaN).
*/
#ifndef PF_EVALUATE_H
#define PF_EVALUATE_H
#include <stddef.h>

#include "common/config.h"
#include "common/dataset.h"
#include "nn/model.h"

typedef struct {
    char name[256];             /* GT file stem */
    double psnr, ssim;          /* network, dB and [0, 1]; NaN when not in evaluation.metrics */
    double psnr_bicubic, ssim_bicubic;
} pf_eval_item;

typedef struct {
    int n;
    pf_eval_item *items;        /* malloc'd, n entries in dataset order */
    double psnr, ssim;          /* means over the images */
    double psnr_bicubic, ssim_bicubic;
} pf_eval_result;

/* Asked between images; returning non-zero abandons the evaluation (an interrupted job must
   not wait for a whole evaluation set). */
typedef int (*pf_eval_cancel_fn)(void *ctx);

/* Called after each image that has a GT: `file` its index in the dataset, `name` its stem,
   lq and gt the dataset's images (RGB8 HWC), out the network's output clamped and rounded to
   uint8, gt->h x gt->w x 3 HWC. */
typedef void (*pf_eval_image_fn)(void *ctx, int file, const char *name, const pf_image *lq,
                                 const uint8_t *out, const pf_image *gt);

/* Evaluate `m` on every image of `ds`. When `save_dir` is not NULL, each output is written as
   save_dir/<name>.png (the folder is created). `cancel` and `on_image` may be NULL. Returns 0,
   1 when cancelled, or -1 with err naming the image. */
int pf_evaluate(pf_model *m, const pf_config *cfg, pf_dataset *ds, const char *save_dir,
                pf_eval_cancel_fn cancel, void *cancel_ctx, pf_eval_image_fn on_image,
                void *image_ctx, pf_eval_result *res, char *err, size_t errlen);
void pf_eval_result_free(pf_eval_result *res);
#endif
