/*  video_dataset — frame-sequence datasets for video super-resolution, as BasicSR defines
    them: REDSRecurrentDataset and Vimeo90KRecurrentDataset (training samples of num_frame
    frames), VideoRecurrentTestDataset (whole clips, for evaluation and test), EDVR's sliding
    windows REDSDataset (training) and VideoTestDataset (evaluation, test); and
    RealESRGANVideoDataset (training only: REDSRecurrentDataset's clips and samples, LQ made by
    Real-ESRGAN's second-order degradation as RealBasicVSR does, below). docs/video.md.

    A clip is a folder of frames (its .png/.jpg/.jpeg files sorted by name: REDS's
    CLIP/00000000.png..., Vimeo-90K's SEQ/SUB/im1.png...im7.png) or a video file any FFmpeg
    demuxer and decoder reads (common/video.h), named relative to gt_folder; its LQ is the
    entry of the same name in lq_folder, or made from the GT frames by `degradation` (BI, BD
    or DN downscaling; DN noise and JPEG per sample): each whole frame is downscaled once and cached
    with it, except in a training set whose cache cannot hold every frame: that caches GT
    frames only and downscales just the LQ patch of each sample (the same bytes as cropping
    the whole frame's LQ, common/imresize.h), so a frame evicted unused costs no whole LQ. The clips are
    data.*.clips (name, frames [first, end), crop x y w h), else the first word of each line of
    meta_info_file (BasicSR's "000 100 (720,1280,3)": the second word, when a number, is the
    frame count to use), else every folder and video file in gt_folder, sorted; a training set
    drops the clips named in val_partition.

    Opening checks every clip up front: it exists, every frame of the used range is there with
    one size (folder headers; a video is indexed, common/video.h), LQ is exactly GT / scale,
    the crop fits, a training clip holds num_frame x max(interval_list) frames (REDSDataset:
    (num_frame - 1) x max(interval_list) + 1; a VideoTestDataset clip pf_video_min_frames of
    its padding) and an LQ patch.
    Errors name the set key, the clip and, where one is involved, the frame. A video file found
    cut short (common/video.h, "Truncation"; GT or LQ) is refused, naming the file, the frames
    its header announces, the whole frames and the bytes missing, unless cfg->skip_cut_videos
    (data.on_bad_sample: skip): then it is a warning (pf_warn) and the clip's range ends at
    its last whole frame, so frame counts and len count whole frames only, alike in every
    process that opens the set.

    REDSDataset (EDVR's sliding windows, BasicSR's REDSDataset) draws as above but frame f is
    the window's center: interval drawn, then when f - h interval < 0 or f + h interval >= n_c
    (h = num_frame / 2) the center is redrawn, uniformly among the centers whose window fits
    (BasicSR redraws from the whole clip until one fits: the same distribution); the LQ are
    the frames center - h interval .. center + h interval (reversed when random_reverse and a
    draw say so), the GT is the center frame alone, crop and flips as for every frame.
    VideoTestDataset (evaluation) enumerates every frame with its window (pf_video_window).

    Training sample `index` (in [0, len), len = frames of all clips x repeat), as BasicSR's
    REDSRecurrentDataset.__getitem__, every draw from pf_rng_make(seed, epoch, index) in this
    order: frame (clip c, frame f) = index mod the frame count; interval = interval_list[draw];
    if f > n_c - num_frame * interval, f = a draw in [0, n_c - num_frame * interval]; the
    frames f, f + interval, ... (num_frame of them), reversed when random_reverse and a draw
    says so; one LQ crop position for all frames, GT at scale times it; one set of flips for
    all frames: horizontal (use_hflip), vertical and transpose (use_rot; BasicSR's augment
    with rotation). Random degradation steps then act on each LQ patch, frame t drawing from
    pf_dataset_degrade_key(seed, epoch, index) (common/patch.h, with the patch copy and its
    flips) mixed with t. The bytes depend only on (seed, epoch, index): any loader, any
    thread, any cache state gives the same sample.

    RealESRGANVideoDataset has no lq_folder and no `degradation`: its cache holds GT frames
    only, and a sample's GT patches (drawn as above) are degraded by common/realesrgan_pipeline.h
    with ONE draw of the parameters, pf_realesrgan_draw(resr, pf_dataset_degrade_key(seed,
    epoch, index)), applied to every frame (RealBasicVSR's degradation of a clip); only the
    noise samples differ per frame, frame t (its place in the output) drawing them from
    pf_realesrgan_frame_key(key, t). With cfg->gt_usm the GT frames are USM-sharpened
    (pf_usm_sharp_u8) first and their LQ made from the sharpened frames (BasicSR's
    RealESRNetModel).

    Decoded frames (GT and LQ after crop and downscaling) are kept in a pf_pair_cache, one
    entry per frame. Video files are read through a pool of readers per clip, a read going to
    the idle reader positioned closest before the frame (so the frames of a sample decode
    forward, one seek per sample at most). Thread-safe where said.
*/
#ifndef PF_VIDEO_DATASET_H
#define PF_VIDEO_DATASET_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/pair_cache.h"
#include "common/realesrgan_pipeline.h"

#define PF_VIDEO_MAX_WINDOW 63    /* num_frame of a VideoTestDataset window read at once */

/* 1 when cfg->type is one of the video datasets. */
int pf_is_video_dataset(const char *type);

typedef struct pf_vreader pf_vreader;

typedef struct {
    char name[256];             /* as configured, e.g. "000", "00001/0001", "cityCC0.mpg" */
    char gt_path[PF_PATH_MAX];  /* folder of frames or video file */
    char lq_path[PF_PATH_MAX];  /* likewise, "" when LQ is made from GT */
    int gt_video, lq_video;     /* the path is a video file */
    char **gt_frames, **lq_frames; /* frame file names of a folder, sorted; NULL for a video */
    int n_gt_names, n_lq_names;
    int first, n_frames;        /* source frames [first, first + n_frames) are used */
    int crop_x, crop_y;         /* top-left of the GT crop in source pixels (multiples of
                                   scale; 0, 0 without a crop) */
    int gt_w, gt_h, lq_w, lq_h; /* frame sizes after crop (or mod-crop) */
    int file_w, file_h;         /* source GT frame size */
    int entry0;                 /* cache entry of the clip's frame 0 = the index of that frame
                                   among the frames of all clips */
} pf_clip;

typedef struct {
    pf_dataset_cfg cfg;
    char key[32];               /* "data.train": names the set in errors */
    int scale;
    int gt_patch;               /* training GT patch (0: whole clips) */
    int num_frame;              /* frames per training sample */
    int max_interval;
    int random_steps;           /* the degradation has a random step (DN, JPEG) */
    int realesrgan;             /* RealESRGANVideoDataset: LQ by the Real-ESRGAN pipeline */
    int window;                 /* a sliding-window set (REDSDataset, VideoTestDataset) */
    int gt_frames;              /* GT frames of a training sample: num_frame, a window's 1 */
    int padding;                /* VideoTestDataset: pf_frame_padding (common/frame_indices.h) */
    pf_realesrgan_opts resr;    /* its options (cfg.realesrgan with the model's scale,
                                   common/realesrgan_cfg.h), checked for the patch */
    pf_clip *clips;
    int n_clips;
    uint32_t n_frames;          /* frames of all clips */
    uint32_t len;               /* training: n_frames x repeat; else n_clips */
    pf_pair_cache cache;        /* entry clips[c].entry0 + t: frame t of clip c */
    uint64_t all_bytes;         /* GT + LQ pixels of every frame */
    int lq_whole;               /* (atomic) frames loaded now get their whole LQ: an eval set,
                                   LQ read, or a cache limit >= all_bytes */
    pthread_mutex_t pool_lock;  /* guards the readers' busy flags and the list */
    pf_vreader *readers;        /* open video readers, idle or busy */
} pf_video_dataset;

/* Open the video dataset described by cfg (its type one of the three), `key` ("data.train")
   naming it in errors; gt_patch_size > 0 makes it a training set of samples of
   cfg->num_frame frames. Returns 0, or -1 with err naming the key, the clip and the frame. */
int pf_video_dataset_open(pf_video_dataset *ds, const pf_dataset_cfg *cfg, const char *key,
                          int scale, int gt_patch_size, char *err, size_t errlen);

/* Close the readers, free the frames. */
void pf_video_dataset_close(pf_video_dataset *ds);

/* Bytes of one training sample's GT and LQ: gt_frames (num_frame; a sliding window's 1) x
   patch^2 x 3, num_frame x (patch / scale)^2 x 3. */
size_t pf_video_sample_gt_bytes(const pf_video_dataset *ds);
size_t pf_video_sample_lq_bytes(const pf_video_dataset *ds);

/* Training sample `index` of `epoch` (top of this file) into gt_out (gt_frames x gt_patch x
   gt_patch x 3, frame-major, RGB8 HWC per frame; a sliding window's: its center frame only) and
   lq_out (num_frame x (gt_patch/scale)^2 x 3). When `frames` is not NULL, frames[t] = the source frame index of output frame t and
   *clip = the clip (for logs and tests). Thread-safe. Returns 0, or -1 with err naming the
   clip and frame. */
int pf_video_dataset_sample(pf_video_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                            uint8_t *gt_out, uint8_t *lq_out, int *clip, int *frames,
                            char *err, size_t errlen);

/* pf_video_dataset_sample, and gt_plain_out (NULL: none; else num_frame x gt_patch^2 x 3
   bytes, as gt_out) gets each GT frame before USM: with gt_usm the frames gt_out would hold
   with gt_usm off, without it a copy of gt_out (pf_dataset_sample_gt_plain). */
int pf_video_dataset_sample_gt_plain(pf_video_dataset *ds, uint32_t index, uint64_t seed,
                                     uint32_t epoch, uint8_t *gt_out, uint8_t *lq_out,
                                     uint8_t *gt_plain_out, int *clip, int *frames, char *err,
                                     size_t errlen);

/* Where training sample `index` of `epoch` reads, without decoding anything: the draws of
   pf_video_dataset_sample (top of this file). frames (num_frame ints, or NULL) gets frames[t]
   = the source frame index of output frame t. For `pixflow data --explain` and tests.
   Returns 0, or -1 with err (not a training set, index out of range). */
typedef struct {
    int clip;                   /* index into ds->clips */
    int first, interval;        /* the sample's frames: first + j x interval (clip-relative,
                                   before its `first`), j in [0, num_frame) */
    int reverse;                /* output frame t is j = num_frame - 1 - t */
    int center;                 /* a sliding window's GT frame (clip-relative, = first +
                                   (num_frame / 2) x interval); -1 for the recurrent sets */
    int lq_top, lq_left;        /* LQ patch top-left (GT: scale times it), after the clip's crop */
    int hflip, vflip, transpose;
} pf_video_where;
int pf_video_dataset_sample_where(const pf_video_dataset *ds, uint32_t index, uint64_t seed,
                                  uint32_t epoch, pf_video_where *w, int *frames, char *err,
                                  size_t errlen);

/* VideoTestDataset's samples (BasicSR's VideoTestDataset): every frame of every clip, clip by
   clip in frame order, i in [0, ds->n_frames). Sample i is frame *frame (clip-relative: 0 is
   the clip's `first`) of clip *clip, its GT that frame, its LQ the frames lq_frames[0 ..
   num_frame - 1] (clip-relative) of pf_video_frame_indices with the set's padding. Returns 0,
   or -1 with err (not a VideoTestDataset, i out of range). */
int pf_video_window(const pf_video_dataset *ds, uint32_t i, int *clip, int *frame,
                    int *lq_frames, char *err, size_t errlen);

/* Sample i of pf_video_window read: lq_out (num_frame x lq_h x lq_w x 3, frame-major, RGB8
   HWC, the clip's LQ size) and gt_out (gt_h x gt_w x 3). Thread-safe. Returns 0, or -1 with
   err naming the clip and frame. */
int pf_video_window_read(pf_video_dataset *ds, uint32_t i, uint8_t *lq_out, uint8_t *gt_out,
                         char *err, size_t errlen);

/* Frame t (0 <= t < clips[c].n_frames) of clip c, whole (after the clip's crop): pinned until
   pf_video_dataset_release(ds, c, t). GT and LQ are RGB8 HWC; on a training set whose LQ is
   made from GT (no lq_folder) and whose cache cannot hold every frame, and on a
   RealESRGANVideoDataset, the LQ is empty (0 x 0): its samples make only their patch's.
   Thread-safe. Returns 0, or -1 with err. */
int pf_video_dataset_frame(pf_video_dataset *ds, int c, int t, const pf_image **gt,
                           const pf_image **lq, char *err, size_t errlen);
void pf_video_dataset_release(pf_video_dataset *ds, int c, int t);

/* The cache's bound (bytes of pixels) and counters. Thread-safe. */
void pf_video_dataset_set_cache_limit(pf_video_dataset *ds, size_t bytes);
void pf_video_dataset_cache_stats(pf_video_dataset *ds, pf_cache_stats *out);

/* Held-out check at start-up: no frame of an evaluation set's clips may be a frame the
   training set samples. Clips are the same source when their GT paths resolve (realpath) to
   the same folder or file, whatever the configs call them (explicit clips, meta_info_file,
   every clip of gt_folder); frames overlap when [first, first + n_frames) meet. Returns 0, or
   -1 with err naming both sets, both clips and both frame ranges. */
int pf_video_dataset_check_held_out(const pf_video_dataset *train,
                                    const pf_video_dataset *eval, char *err, size_t errlen);
#endif
