/*  dataset — PairedImageDataset, SingleImageDataset and RealESRGANDataset (BasicSR/MMagic).

    Paired: GT images (.png, .jpg, .jpeg) in gt_folder; LQ either from lq_folder (file
    filename_tmpl with "{}" replaced by the GT stem, with the GT's extension, else the first of
    .png, .jpg, .jpeg that exists) or made from the GT mod-cropped to the scale by the
    configured degradation (common/degrade.h). Single (data.test only): LQ images of lq_folder,
    no GT. With meta_info_file, the files are the ones it names (first word of each non-empty
    line), in its order; else every image of the folder, sorted by name.

    Opening a dataset lists and checks every file up front (sizes from the headers): a GT that
    is not exactly scale x its LQ, or (for training) an LQ smaller than the LQ patch, is an
    error naming both files and sizes and the sizes to crop to. Evaluation and test sets
    (gt_patch_size 0) take a GT up to scale - 1 pixels larger in each dimension and use its
    top-left scale x LQ, as BasicSR's PairedImageDataset does outside training
    (pf_dataset_log_gt_crops says which). RepeatDataset: index i in [0, len) is file i % n_files.

    Decoded-image cache (common/pair_cache.h): each file's decoded pair (GT after mod-crop,
    and LQ after the per-image downscaling step) is kept in a least-recently-used cache bounded
    by a number of bytes of pixels.

    Random degradation steps (DN noise, JPEG) are not cached: pf_dataset_sample applies them to
    each LQ patch with draws keyed by (seed, epoch, index), pf_dataset_pair to the whole LQ
    with draws keyed by (the dataset's seed, the image's position in the dataset as opened).
    The crop, the flips and that key are common/patch.h's, shared with the video sets
    (common/video_dataset.h), which this file opens for the video types.

    RealESRGANDataset (issue 40): GT images only, opened as a PairedImageDataset without
    lq_folder (gt_folder, meta_info_file, repeat, use_flip, use_rot, gt_patch_size), its LQ made
    by Real-ESRGAN's second-order degradation (common/realesrgan_pipeline.h) with the options of
    the block (common/realesrgan_cfg.h, read once at open). The cache holds the mod-cropped GT
    alone for training, the GT and its degraded LQ for evaluation. A training sample is the GT
    patch a BI set crops for the same (seed, epoch, index) (pf_patch_crop_draw), replaced by
    pf_usm_sharp_u8 of it when gt_usm, its LQ pf_realesrgan_degrade_u8 of that GT with the
    parameters pf_realesrgan_draw gives for pf_dataset_degrade_key(seed, epoch, index)
    (BasicSR's RealESRNetModel sharpens self.gt, then degrades it). Evaluation and test degrade the whole mod-cropped GT once, when it is decoded into the
    cache, keyed by (the set's seed, PF_DATASET_EVAL_EPOCH, the image's id), and compare with
    the GT as read (no USM). Unlike BasicSR, which degrades a 400 x 400 crop of the flipped GT
    and then crops 256 from GT and LQ, PixFlow degrades the GT patch itself: the kernels'
    reflect padding sees the patch's border, and the work is that of the patch only (BasicSR's
    400 crop costs 2.4x the pixels).
*/
#ifndef PF_DATASET_H
#define PF_DATASET_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/image.h"
#include "common/pair_cache.h"
#include "common/patch.h"     /* the crop, the flips, the degradation key */
#include "common/realesrgan_pipeline.h"
#include "common/video_dataset.h"

typedef struct {
    char gt_path[PF_PATH_MAX];  /* "" for SingleImageDataset */
    char lq_path[PF_PATH_MAX];  /* "" when LQ is made from GT by the degradation */
    char name[256];             /* file stem (GT; Single: LQ), e.g. "0801" */
    int id;                     /* position in the dataset as opened (kept by
                                   pf_dataset_shard): keys pf_dataset_pair's random steps */
    int file_w, file_h;         /* GT file size read from its header at open (Single: LQ) */
    int gt_w, gt_h;             /* after mod-crop (0 for Single) */
    int gt_cropped;             /* eval/test: the GT file is larger than scale x its LQ (by
                                   less than scale), gt_w x gt_h is its top-left */
    int lq_w, lq_h;
} pf_sample_file;

typedef struct {
    pf_dataset_cfg cfg;
    int scale;
    int single;                 /* SingleImageDataset: LQ only, gt empty */
    int n_files;
    pf_sample_file *files;
    uint32_t len;               /* n_files * repeat */
    int gt_patch;               /* training GT patch (0 for eval/test) */
    int random_steps;           /* the degradation has a random step (DN, JPEG) */
    int realesrgan;             /* RealESRGANDataset: LQ made by the Real-ESRGAN pipeline
                                   from the GT (training: the cache holds the GT alone) */
    pf_realesrgan_opts resr;    /* its options (pf_dataset_realesrgan_opts at open) */
    uint64_t seed;              /* pf_dataset_pair's random steps (pf_dataset_set_seed) */
    pf_pair_cache cache;        /* entry i: files[i]'s decoded pair */
    int pair_file;              /* entry pinned by the last pf_dataset_pair call, -1 none */
    pf_image pair_lq;           /* pf_dataset_pair's LQ with the random steps applied */
    /* a video dataset (cfg.type REDSRecurrentDataset, Vimeo90KRecurrentDataset,
       VideoRecurrentTestDataset): opened by pf_video_dataset_open, which does the work;
       files is then NULL and n_files 0 */
    pf_video_dataset *video;
    int video_shared;           /* a shard: video belongs to the dataset it was cut from */
    int *clip_ids;              /* a shard's clips (indices into video->clips); NULL: all */
    int n_clip_ids;
    int frames;                 /* frames per training sample: 1, or a video set's num_frame */
    int gt_frames;              /* GT frames of those: frames, or a sliding-window set's 1 */
} pf_dataset;

/* List and check the dataset described by cfg (`key` such as "data.train" names it in
   errors); a video set type opens a pf_video_dataset in ds->video (len: its training samples,
   or its clips for evaluation and test). gt_patch_size > 0 also checks that every LQ holds a patch of gt_patch/scale.
   A RealESRGANDataset refuses lq_folder, reads its options once (errors prefixed by `key`)
   and, for evaluation and test (gt_patch_size 0), refuses a GT too small for its kernels
   (pf_realesrgan_opts_check at its mod-cropped size; the error names the file).
   Errors name the file (and for meta_info_file the meta file and line). The cache starts
   unbounded. Returns 0, or -1 with err. */
int pf_dataset_open(pf_dataset *ds, const pf_dataset_cfg *cfg, const char *key, int scale,
                    int gt_patch_size, char *err, size_t errlen);
void pf_dataset_close(pf_dataset *ds);

/* Log (pf_info), once per file, each GT an eval or test set crops to scale x its LQ: both
   files and sizes. `key` names the set ("data.eval"). Returns the number of such files. */
int pf_dataset_log_gt_crops(const pf_dataset *ds, const char *key);

/* The clips of a video set (a shard's share of them): *ids (NULL: clips 0..count-1); returns
   the count. */
int pf_dataset_clips(const pf_dataset *ds, const int **ids);

/* The files i with i mod n == r as a dataset of their own (a video set: its clips i with
   i mod n == r, reading through the video set of `ds`, which must outlive the shard) (for splitting an eval or test set
   over workers); nothing decoded is shared; the seed, the cache limit and each file's id are
   kept, so an image degrades the same in any shard. Free with pf_dataset_close. Returns 0 or
   -1 (out of memory). */
int pf_dataset_shard(const pf_dataset *ds, int r, int n, pf_dataset *out);

/* Seed of the random degradation steps pf_dataset_pair applies (default 0); eval and test set
   the config's seed. Not thread-safe: call before use. */
void pf_dataset_set_seed(pf_dataset *ds, uint64_t seed);

/* Decoded pair of file `file` for evaluation and testing, whole images, RGB8: GT (gt->data NULL
   for SingleImageDataset) and LQ with the random steps applied, drawn from (seed set by
   pf_dataset_set_seed, files[file].id); a RealESRGANDataset's LQ (gt_w/scale x gt_h/scale) is
   the pipeline's output for the whole mod-cropped GT with the parameters of
   pf_dataset_pair_params, made when the GT is decoded and cached with it (so the seed must be
   set before the first call). The pointers stay valid until the next pf_dataset_pair call or
   pf_dataset_close (the entry stays pinned until then); one caller thread at a time
   (pf_dataset_sample may run beside it). Returns 0, or -1 with err naming the file (unreadable
   image, size changed since open, out of memory). */
int pf_dataset_pair(pf_dataset *ds, int file, const pf_image **gt, const pf_image **lq,
                    char *err, size_t errlen);

/* Bound the decoded-image cache to `bytes` of pixels (GT + LQ), least recently used pairs
   dropped first (at once, if over); 0 keeps nothing (every sample decodes its pair).
   Default: no bound. Thread-safe. */
void pf_dataset_set_cache_limit(pf_dataset *ds, size_t bytes);

/* A snapshot of the cache counters. Thread-safe. */
void pf_dataset_cache_stats(pf_dataset *ds, pf_cache_stats *out);

/* Training sample `index` (in [0, len)) of `epoch`. A video set: pf_video_dataset_sample (frames
   x the sizes below, frame-major). An image set: the pair of file index % n_files, cropped and
   augmented by pf_paired_crop_augment with the dataset's patch size and flags, into gt_out
   (gt_patch^2 * 3 bytes) and lq_out ((gt_patch/scale)^2 * 3), RGB8 HWC; then the random
   degradation steps on lq_out, drawn from (seed, epoch, index) in a stream of their own (the
   crop's draws are those of pf_paired_crop_augment alone). A RealESRGANDataset: the GT patch
   cropped and flipped as a BI set's, lq_out the pipeline's output for it with the parameters of
   pf_dataset_sample_params, then gt_out sharpened when gt_usm (see above). Safe to call from
   several threads at once; the bytes depend only on (seed, epoch, index). Returns 0, or -1 with
   err naming the file (unreadable, changed since open, out of memory, or a SingleImageDataset);
   the same call fails the same way in any loader. */
int pf_dataset_sample(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                      uint8_t *gt_out, uint8_t *lq_out, char *err, size_t errlen);

/* pf_dataset_sample, and gt_plain_out (NULL: none; else as many bytes as gt_out) gets the
   sample's GT patch before any USM: with gt_usm, the patch gt_out would hold with gt_usm off
   (same crop and flips, same bytes; BasicSR RealESRGANModel's `gt` beside `gt_usm`), without
   it a copy of gt_out. A video set: each of the frames likewise. gt_out and lq_out are those
   of pf_dataset_sample, whatever gt_plain_out is. Same errors. */
int pf_dataset_sample_gt_plain(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                               uint8_t *gt_out, uint8_t *lq_out, uint8_t *gt_plain_out,
                               char *err, size_t errlen);

/* Which file training sample `index` of `epoch` reads (*file, an index into ds->files) and
   its crop (pf_patch_crop_draw over the file's LQ size, as pf_dataset_sample does). Image
   sets with GT only. Returns 0, or -1 with err (out of range, a video or single set). */
int pf_dataset_sample_crop(const pf_dataset *ds, uint32_t index, uint64_t seed,
                           uint32_t epoch, int *file, pf_patch_crop *crop, char *err,
                           size_t errlen);

/* A RealESRGANDataset's drawn parameters (pf_realesrgan_draw), for `pixflow data --explain`
   and to rebuild a sample: of training sample `index` of `epoch` (key
   pf_dataset_degrade_key(seed, epoch, index)), or of evaluation image `file` (key
   pf_dataset_degrade_key(the set's seed, PF_DATASET_EVAL_EPOCH, files[file].id)). The
   pf_realesrgan_params_format line of *p goes to line (len bytes; cut if too small) when
   line is not NULL. Returns 0, or -1 with err (out of range, another type of set). */
int pf_dataset_sample_params(const pf_dataset *ds, uint32_t index, uint64_t seed,
                             uint32_t epoch, pf_realesrgan_params *p, char *line, size_t len,
                             char *err, size_t errlen);
int pf_dataset_pair_params(const pf_dataset *ds, int file, pf_realesrgan_params *p, char *line,
                           size_t len, char *err, size_t errlen);
#endif
