/*  dataset — PairedImageDataset (BasicSR/MMagic): GT PNGs in gt_folder, LQ either from
    lq_folder (name = filename_tmpl with "{}" replaced by the GT stem, ".png") or made on the fly
    by MATLAB-compatible bicubic downscaling of the GT mod-cropped to the scale.

    Opening a dataset lists and checks every pair up front (sizes from the PNG headers): a GT
    that is not exactly scale x its LQ, or (for training) an LQ smaller than the LQ patch, is an
    error naming the files. Decoded pairs are cached for the dataset's lifetime.
    RepeatDataset: index i in [0, len) is file i % n_files.
*/
#ifndef PF_DATASET_H
#define PF_DATASET_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/image.h"

typedef struct {
    char gt_path[PF_PATH_MAX];
    char lq_path[PF_PATH_MAX];  /* "" when LQ is made by bicubic downscaling */
    char name[256];             /* GT file stem, e.g. "0801" */
    int file_w, file_h;         /* GT file size read from its header at open */
    int gt_w, gt_h;             /* after mod-crop */
    int lq_w, lq_h;
    int decoded;                /* the cache below holds the pair */
    pf_image gt, lq;            /* cached RGB8 pixels */
} pf_sample_file;

/* Decoded-image cache counters (one per dataset). */
typedef struct {
    uint64_t hits, misses;      /* pf_dataset_sample/pair calls that found / decoded the pair */
    uint64_t evictions;         /* pairs dropped to stay under the limit */
    size_t bytes, limit;        /* bytes of pixels held now; the limit (SIZE_MAX: none) */
} pf_cache_stats;

typedef struct {
    pf_dataset_cfg cfg;
    int scale;
    int n_files;
    pf_sample_file *files;
    uint32_t len;               /* n_files * repeat */
    int gt_patch;               /* training GT patch (0 for eval/test) */
    pthread_mutex_t lock;       /* guards the cache (files[].decoded/gt/lq) and stats */
    pf_cache_stats stats;
} pf_dataset;

/* List and check the dataset described by cfg (`key` such as "data.train" names it in
   errors). gt_patch_size > 0 also checks that every LQ holds a patch of gt_patch/scale.
   Returns 0, or -1 with err. */
int pf_dataset_open(pf_dataset *ds, const pf_dataset_cfg *cfg, const char *key, int scale,
                    int gt_patch_size, char *err, size_t errlen);
void pf_dataset_close(pf_dataset *ds);

/* The files i with i mod n == r as a dataset of their own (for splitting an eval or test set
   over workers); nothing decoded is shared. Free with pf_dataset_close. Returns 0 or -1 (out
   of memory). */
int pf_dataset_shard(const pf_dataset *ds, int r, int n, pf_dataset *out);

/* Decoded pair of file `file` (cached after the first call). Returns 0, or -1 with err naming
   the file (unreadable PNG, size changed since open). */
int pf_dataset_pair(pf_dataset *ds, int file, const pf_image **gt, const pf_image **lq,
                    char *err, size_t errlen);

/* Bound the decoded-image cache to `bytes` of pixels (GT + LQ), least recently used pairs
   dropped first; 0 keeps nothing (every sample decodes its pair). Default: no bound. */
void pf_dataset_set_cache_limit(pf_dataset *ds, size_t bytes);

/* A snapshot of the cache counters. Thread-safe. */
void pf_dataset_cache_stats(pf_dataset *ds, pf_cache_stats *out);

/* Training sample `index` (in [0, len)) of `epoch`: the pair of file index % n_files, cropped
   and augmented by pf_paired_crop_augment with the dataset's patch size and flags, into gt_out
   (gt_patch^2 * 3 bytes) and lq_out ((gt_patch/scale)^2 * 3), RGB8 HWC. Safe to call from
   several threads at once. Returns 0, or -1 with err naming the file (unreadable, changed
   since open, out of memory); the same call fails the same way in any loader. */
int pf_dataset_sample(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                      uint8_t *gt_out, uint8_t *lq_out, char *err, size_t errlen);

/* BasicSR's paired_random_crop + augment for sample `index` of `epoch`: an LQ patch of
   gt_patch/scale at a random position and the GT patch at scale times it, then hflip, vflip
   (each with probability 1/2 when use_flip) and transpose (1/2 when use_rot), in that order.
   All randomness comes from (seed, epoch, index). Outputs are RGB8 HWC, gt_patch^2 * 3 and
   (gt_patch/scale)^2 * 3 bytes. */
void pf_paired_crop_augment(const pf_image *gt, const pf_image *lq, int scale, int gt_patch,
                            int use_flip, int use_rot, uint64_t seed, uint32_t epoch,
                            uint32_t index, uint8_t *gt_out, uint8_t *lq_out);
#endif
