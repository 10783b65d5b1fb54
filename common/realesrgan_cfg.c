/*  realesrgan_cfg — see realesrgan_cfg.h. */
#include "common/realesrgan_cfg.h"

#include <stdio.h>
#include <string.h>

int pf_dataset_is_realesrgan(const pf_dataset_cfg *d) {
    return strcmp(d->type, "RealESRGANDataset") == 0 ||
           strcmp(d->type, "RealESRGANVideoDataset") == 0;
}

int pf_dataset_realesrgan_opts(const pf_dataset_cfg *d, const char *key, int scale,
                               int gt_patch, pf_realesrgan_opts *o, char *err, size_t errlen) {
    (void)d;
    pf_realesrgan_opts_default(o);
    o->scale = scale;
    char why[512];
    if (pf_realesrgan_opts_check(o, gt_patch, gt_patch, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", key, why);
        return -1;
    }
    return 0;
}
