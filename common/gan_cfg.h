/*  gan_cfg — what the roles ask of a GAN job's config (the `gan` section, issue 41;
    pf_gan_cfg in common/config_types.h, its rows in common/config_keys.c, docs/gan.md).

    The section is parsed and checked with the rest of the config (common/config.c); here are
    the checks that need more than the file: the backend a job runs on.
*/
#ifndef PF_GAN_CFG_H
#define PF_GAN_CFG_H
#include <stddef.h>

#include "common/config_types.h"

/* Whether cfg may train on the backend chosen: `on_cuda` 1 for GPU workers (`pixflow train
   --gpus N`, `pixflow worker --device cuda:N`), 0 for the CPU. A GAN job (cfg->gan.enabled)
   is CPU-only for now: the discriminator, the perceptual loss's VGG19 and the GAN step exist
   on the CPU executor only. Returns 0, or -1 with err = "PATH: gan: ...: use the CPU
   (--gpus 0)" for a GAN job on CUDA. */
int pf_gan_check_backend(const pf_config *cfg, int on_cuda, char *err, size_t errlen);
#endif
