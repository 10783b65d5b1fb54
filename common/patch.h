/*  patch — the crop and augment helpers that the image datasets (common/dataset.c) and the
    video datasets (common/video_dataset.c) share: BasicSR's paired random crop with its flips
    and transpose, the patch copy under them, and the key of the random degradation steps.
    Nothing here knows a dataset: pixels in, pixels out, randomness from (seed, epoch, index).
*/
#ifndef PF_PATCH_H
#define PF_PATCH_H
#include <stdint.h>

#include "common/image.h"

/* The crop and flips of sample `index` of `epoch`, drawn from (seed, epoch, index) alone:
   the LQ patch's top-left (top, left) uniform over an lq_w x lq_h LQ (the GT patch starts at
   scale times it), then one word for the flips (hflip, vflip with use_flip, transpose with
   use_rot, each with probability 1/2). pf_paired_crop_augment uses it; so do the sets that
   crop a GT alone (RealESRGANDataset: lq_w x lq_h = the mod-cropped GT / scale, so its crop
   is a BI set's) and `pixflow data --explain`. lq_patch <= lq_w, lq_h. */
typedef struct {
    int top, left;              /* the LQ patch's top-left, in LQ pixels */
    int hflip, vflip, transpose;/* 1: applied (in that order, as BasicSR's augment) */
} pf_patch_crop;
pf_patch_crop pf_patch_crop_draw(int lq_w, int lq_h, int lq_patch, int use_flip, int use_rot,
                                 uint64_t seed, uint32_t epoch, uint32_t index);

/* BasicSR's paired_random_crop + augment for sample `index` of `epoch`: an LQ patch of
   gt_patch/scale at a random position and the GT patch at scale times it, then hflip, vflip
   (each with probability 1/2 when use_flip) and transpose (1/2 when use_rot), in that order.
   All randomness comes from (seed, epoch, index). Outputs are RGB8 HWC, gt_patch^2 * 3 and
   (gt_patch/scale)^2 * 3 bytes. */
void pf_paired_crop_augment(const pf_image *gt, const pf_image *lq, int scale, int gt_patch,
                            int use_flip, int use_rot, uint64_t seed, uint32_t epoch,
                            uint32_t index, uint8_t *gt_out, uint8_t *lq_out);

/* Copy the p x p patch at (top, left) of `src` (RGB8 HWC, width w) into dst (p x p x 3) with
   the flips and transpose applied as BasicSR's augment does them: hflip, then vflip, then
   transpose. */
void pf_copy_patch(const uint8_t *src, int w, int top, int left, int p, int hflip, int vflip,
                   int transpose, uint8_t *dst);

/* The key pf_dataset_sample (epoch < 2^32) and pf_dataset_pair (eval: the image's id, with a
   word no epoch can take) give pf_degrade_random; pf_video_dataset_sample mixes it with the
   frame. Exposed for tests. */
uint64_t pf_dataset_degrade_key(uint64_t seed, uint64_t epoch, uint64_t index);
#define PF_DATASET_EVAL_EPOCH ((uint64_t)1 << 32)
#endif
