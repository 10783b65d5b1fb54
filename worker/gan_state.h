/*  gan_state — what a worker builds for a GAN job (cfg->gan.enabled, issue 41, docs/gan.md)
    beside its generator: the options of the step (nn/gan.h) and the discriminator's optimiser,
    both from the resolved config.
*/
#ifndef PF_GAN_STATE_H
#define PF_GAN_STATE_H
#include <stddef.h>

#include "common/config.h"
#include "nn/gan.h"
#include "nn/optim.h"

/* The step's options from the config, BasicSR's option names to pf_gan_opts: gan.model_type,
   net_d_iters, net_d_init_iters, l1_gt_usm, percep_gt_usm, gan_gt_usm; model.loss (type,
   loss_weight, eps) as pixel_opt (always present: model.loss has a default); perceptual_opt
   and its vgg_weights path (borrowed from cfg: cfg must outlive o); gan_opt; network_d
   (UNetDiscriminatorSN's num_in_ch, num_feat, skip_connection); conv_algorithm. model_type
   RealESRGANModel or ESRGANModel (relativistic, nn/gan.h). Returns 0, or -1 with err for what
   the step cannot take: VGGStyleDiscriminator, an unknown model_type, gan_type or pixel loss
   (the config's checks keep the unknown ones out of a parsed config). */
int pf_state_gan_opts(const pf_config *cfg, pf_gan_opts *o, char *err, size_t errlen);

/* gan.optim_d as an optimiser over net_d's n parameters (one group, no EMA: BasicSR keeps no
   EMA of net_d): type and hyper-parameters; its lr comes with each step
   (pf_lr_at_base(cfg, cfg->gan.optim_d.lr, it)). Returns 0, or -1 with err (out of memory). */
int pf_state_optim_d_new(const pf_config *cfg, size_t n, pf_optim *o, char *err,
                         size_t errlen);
#endif
