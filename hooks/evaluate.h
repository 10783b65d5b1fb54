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
#include "common/video_remux.h"   /* pf_clip_windows */
#include "nn/model.h"
#include "proto/proto.h"

typedef struct {
    char name[256];             /* GT file stem; a video set: the clip's name */
    int frames;                 /* a video set: frames of the clip (its means are over them);
                                   images: 1 */
    double psnr, ssim;          /* network, dB and [0, 1]; NaN when not in evaluation.metrics;
                                   a clip's psnr: the mean over its frames of finite PSNR
                                   (pf_psnr_mean), +inf when every frame is identical */
    double psnr_bicubic, ssim_bicubic;
    int psnr_inf;               /* frames (an image: 0 or 1) whose output equals the GT (PSNR
                                   +inf), left out of psnr */
    int psnr_bicubic_inf;       /* the same for bicubic, left out of psnr_bicubic */
} pf_eval_item;

typedef struct {
    int n;
    pf_eval_item *items;        /* malloc'd, n entries in dataset order */
    double psnr, ssim;          /* means over the items (images, or clips' means); psnr over
                                   the items whose psnr is finite (+inf when none is) */
    double psnr_bicubic, ssim_bicubic;
    int psnr_inf, psnr_bicubic_inf;     /* frames (images) with +inf PSNR in all the items:
                                           the sum of the items' counts */
    int psnr_inf_items, psnr_bicubic_inf_items; /* items whose psnr is +inf (an image equal to
                                           its GT, a clip all of whose frames are), left out of
                                           the mean over items; = psnr_inf for an image set */
} pf_eval_result;

/* Asked between images; returning non-zero abandons the evaluation (an interrupted job must
   not wait for a whole evaluation set). */
typedef int (*pf_eval_cancel_fn)(void *ctx);

/* Called after each image that has a GT: `file` its index in the dataset, `name` its stem,
   lq and gt the dataset's images (RGB8 HWC), out the network's output clamped and rounded to
   uint8, gt->h x gt->w x 3 HWC. */
typedef void (*pf_eval_image_fn)(void *ctx, int file, const char *name, const pf_image *lq,
                                 const uint8_t *out, const pf_image *gt);

/* Video sets (ds->video, docs/video.md "Evaluation"): each clip whole, frame by frame for an
   image network; a video network (pf_model_is_video) in windows of at most
   eval_cfg.clip_window frames that share eval_cfg.clip_overlap frames with their neighbours
   (pf_clip_windows); a sliding-window network (pf_model_is_window, EDVR) on a
   VideoTestDataset one pf_model_infer_window per frame, its LQ window the set's
   (pf_video_frame_indices with data.eval.padding; BasicSR's VideoTestDataset), a clip too
   short for it an error. PSNR and SSIM per frame, averaged per clip (items are clips), then over
   the clips (BasicSR's and MMagic's video protocol); bicubic likewise. A frame whose PSNR is
   +inf (equal to its GT) is left out of its clip's PSNR mean and counted (pf_psnr_mean), and a
   clip all of whose frames are is left out of the mean over clips and counted; the same for
   the images of an image set. `on_image` gets each
   clip's middle frame (file = the clip's index in ds->video); save_dir gets
   save_dir/<clip>/<frame>.png (the clip's name less a video file's extension, the source
   frame number as %08d). eval_cfg.ensemble and tile are refused for video sets. */

/* A clip's folder name under save_dir: its name, a video file's extension dropped
   ("cityCC0.mpg" -> "cityCC0"). */
void pf_eval_clip_folder(const pf_clip *c, char *out, size_t len);

/* Evaluate `m` on every image of `ds`. When `save_dir` is not NULL, each output is written as
   save_dir/<name>.png (the folder is created). `cancel` and `on_image` may be NULL. Returns 0,
   1 when cancelled, or -1 with err naming the image. */
int pf_evaluate(pf_model *m, const pf_config *cfg, pf_dataset *ds, const char *save_dir,
                pf_eval_cancel_fn cancel, void *cancel_ctx, pf_eval_image_fn on_image,
                void *image_ctx, pf_eval_result *res, char *err, size_t errlen);
void pf_eval_result_free(pf_eval_result *res);

/* The means of res->items into res (psnr and psnr_bicubic by pf_psnr_mean over the items:
   +inf items left out and counted in *_inf_items; *_inf the sum of the items' counts; SSIM a
   plain mean), summed in item order. Used by pf_evaluate and by `pixflow test`'s gatherer, so
   a split test gives the same bits. */
void pf_eval_result_means(pf_eval_result *res);

/* " (output: N identical frames left out; bicubic: M ...)" for the counts of identical
   frames (`unit` "frame" or "image") and of whole items (`items`, "clip"; NULL not said), or ""
   when all counts are 0. For log lines and `pixflow test`'s closing line. */
void pf_eval_inf_note(char *out, size_t len, const char *unit, int psnr_inf, int bicubic_inf,
                      const char *items, int psnr_inf_items, int bicubic_inf_items);

/* pf_eval_inf_note of an "eval" event's counts (psnr_inf, ..., psnr_bicubic_inf_items): frames
   and whole clips when `video` (data.eval is a video set), else images. */
void pf_eval_event_note(char *out, size_t len, const pf_msg_event *ev, int video);
#endif
