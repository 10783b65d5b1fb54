/*  gan_cfg — see gan_cfg.h. */
#include "common/gan_cfg.h"

#include <stdio.h>

int pf_gan_check_backend(const pf_config *cfg, int on_cuda, char *err, size_t errlen) {
    if (!cfg->gan.enabled || !on_cuda)
        return 0;
    snprintf(err, errlen, "%s: gan: a GAN job runs on the CPU only for now (the discriminator, "
             "VGG19 and the GAN step have no CUDA backend yet, issue 41): use the CPU "
             "(`pixflow train --gpus 0`, `pixflow worker --device cpu`)", cfg->path);
    return -1;
}
