/*  batch_builder — the loader's decode/augment threads (data.loader_threads).

    pf_batch_builder_fill makes the samples of one batch with pf_dataset_sample, each straight
    into its place in the caller's GT and LQ frames, with `threads` threads (the caller's plus
    threads - 1 started once, in pf_batch_builder_new). The threads take the next sample from a
    shared counter; sample i always lands at slot i and depends only on (seed, epoch, index),
    so the frames are byte-identical for any number of threads.
*/
#ifndef PF_BATCH_BUILDER_H
#define PF_BATCH_BUILDER_H
#include <stddef.h>
#include <stdint.h>

#include "common/dataset.h"

typedef struct pf_batch_builder pf_batch_builder;

/* Threads for `ds` (opened for training: gt_patch set). threads in 1..64. Returns NULL with
   err. */
pf_batch_builder *pf_batch_builder_new(pf_dataset *ds, int threads, char *err, size_t errlen);

/* Stop and join the threads, free everything, NULL the caller's pointer. */
void pf_batch_builder_destroy(pf_batch_builder **b);

/* Sample indices[i] of `epoch` into gt + i * gt_size and lq + i * lq_size for i in [0, n),
   n <= PF_MAX_BATCH; gt_size = frames x gt_patch^2 x 3 and lq_size = frames x
   (gt_patch/scale)^2 x 3 bytes (frames: ds->frames, 1 for images;
   pf_batch_builder_sample_sizes); when gt_plain is not NULL, the sample's unsharpened GT into
   gt_plain + i * gt_size (pf_dataset_sample_gt_plain). Returns how many samples failed; the
   slots of those hold no sample, and pf_batch_builder_error(b, i) says why (it names the
   file). */
int pf_batch_builder_fill(pf_batch_builder *b, uint64_t seed, uint32_t epoch,
                          const uint32_t *indices, uint32_t n, uint8_t *gt, uint8_t *lq,
                          uint8_t *gt_plain);

/* After pf_batch_builder_fill: NULL when sample slot i is there, else the error. */
const char *pf_batch_builder_error(const pf_batch_builder *b, uint32_t i);

/* Bytes of one GT and one LQ sample. */
void pf_batch_builder_sample_sizes(const pf_batch_builder *b, size_t *gt_size,
                                   size_t *lq_size);
#endif
