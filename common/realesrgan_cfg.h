/*  realesrgan_cfg — the Real-ESRGAN degradation options of a dataset block (issue 40): the
    bridge between the config rows (data.*.blur_kernel_size, kernel_list, ..., BasicSR's
    option names, common/config_keys.c) and the pipeline's options (common/realesrgan_pipeline.h).

    Dataset types that degrade with it: RealESRGANDataset (GT images; LQ made per training
    sample, or per evaluation image from the set's seed) and RealESRGANVideoDataset
    (REDSRecurrentDataset's clips, one draw of the parameters per sample for all its frames,
    as RealBasicVSR).
*/
#ifndef PF_REALESRGAN_CFG_H
#define PF_REALESRGAN_CFG_H
#include <stddef.h>

#include "common/config_types.h"
#include "common/realesrgan_pipeline.h"

/* 1 when d->type is RealESRGANDataset or RealESRGANVideoDataset. */
int pf_dataset_is_realesrgan(const pf_dataset_cfg *d);

/* The seed the evaluation images of block d are degraded from (pf_dataset_set_seed): its
   degrade_seed for a RealESRGANDataset (fixed, so runs with other job seeds are scored on the
   same images), else the job's seed (DN noise and JPEG quality per image, as before). */
uint64_t pf_dataset_eval_seed(const pf_dataset_cfg *d, uint64_t job_seed);

/* The pipeline options of dataset block d for model scale `scale` (d's rows, BasicSR's
   defaults for the keys it leaves out), checked with pf_realesrgan_opts_check for GT patches
   of gt_patch x gt_patch (0: no size check). `key` ("data.train") prefixes errors. Returns 0,
   or -1 with err. */
int pf_dataset_realesrgan_opts(const pf_dataset_cfg *d, const char *key, int scale,
                               int gt_patch, pf_realesrgan_opts *o, char *err, size_t errlen);
#endif
