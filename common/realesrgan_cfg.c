/*  realesrgan_cfg — see realesrgan_cfg.h. The config rows (common/config_keys.c,
    REALESRGAN_KEYS) parse straight into the set's pf_realesrgan_opts, starting from the rows'
    defaults, which are pf_realesrgan_opts_default's values written as YAML (as doubles: a key
    left out gives exactly the default's double); this file adds the model's scale and checks
    the whole. */
#include "common/realesrgan_cfg.h"

#include <stdio.h>
#include <string.h>

int pf_dataset_is_realesrgan(const pf_dataset_cfg *d) {
    return strcmp(d->type, "RealESRGANDataset") == 0 ||
           strcmp(d->type, "RealESRGANVideoDataset") == 0;
}

uint64_t pf_dataset_eval_seed(const pf_dataset_cfg *d, uint64_t job_seed) {
    return strcmp(d->type, "RealESRGANDataset") == 0 ? (uint64_t)d->degrade_seed : job_seed;
}

int pf_dataset_realesrgan_opts(const pf_dataset_cfg *d, const char *key, int scale,
                               int gt_patch, pf_realesrgan_opts *o, char *err, size_t errlen) {
    *o = d->realesrgan;
    o->scale = scale;
    char why[512];
    if (pf_realesrgan_opts_check(o, gt_patch, gt_patch, why, sizeof why) != 0) {
        /* the pipeline names its option ("kernel_prob2: ..."); its "scale: the GT patch ..."
           is about the set's gt_patch_size */
        if (!strncmp(why, "scale: the GT patch", 19))
            snprintf(err, errlen, "%s.gt_patch_size: %s", key, why + 7);
        else
            snprintf(err, errlen, "%s.%s", key, why);
        return -1;
    }
    return 0;
}
