/*  gan_state — what a worker builds for a GAN job (cfg->gan.enabled, issue 41, docs/gan.md)
    beside its generator: the options of the step (nn/gan.h) and the discriminator's optimiser,
    both from the resolved config; and the discriminator's part of a checkpoint, as BasicSR
    saves net_d_N.pth and optimizer_d's state in N.state: net_d's state_dict in
    iter_N.net_d.safetensors (pf_gan_d_serialize: weight_orig, weight_u, weight_v) and optim_d's
    in iter_N.net_d.optim.safetensors (pf_ckpt_serialize_optim_net over pf_gan_d_net: torch's
    state names under net_d's parameter names, and the step count), beside net_g's
    iter_N.safetensors (common/checkpoint.h: pf_ckpt_net_d_path).
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
   (type UNetDiscriminatorSN: num_in_ch, num_feat, skip_connection; VGGStyleDiscriminator:
   num_in_ch, num_feat, input_size); conv_algorithm. model_type RealESRGANModel or ESRGANModel
   (relativistic, nn/gan.h). Returns 0, or -1 with err for what the step cannot take: an
   unknown model_type, network_d type, gan_type or pixel loss (the config's checks keep the
   unknown ones out of a parsed config). */
int pf_state_gan_opts(const pf_config *cfg, pf_gan_opts *o, char *err, size_t errlen);

/* gan.optim_d as an optimiser over net_d's n parameters (one group, no EMA: BasicSR keeps no
   EMA of net_d): type and hyper-parameters; its lr comes with each step
   (pf_lr_at_base(cfg, cfg->gan.optim_d.lr, it)). Returns 0, or -1 with err (out of memory). */
int pf_state_optim_d_new(const pf_config *cfg, size_t n, pf_optim *o, char *err,
                         size_t errlen);

/* net_d's state_dict (*d_buf, *d_len) and optim_d's state after `iter` iterations (*o_buf,
   *o_len), both malloc'd safetensors images (the caller frees them). Returns 0, or -1 with err
   (out of memory; then both are NULL). */
int pf_state_gan_serialize(const pf_gan *gan, const pf_optim *optim_d, int64_t iter,
                           void **d_buf, size_t *d_len, void **o_buf, size_t *o_len, char *err,
                           size_t errlen);

/* After pf_gan_new and pf_state_optim_d_new: net_d's starting state. With `resume_path` (the
   weights file of the checkpoint net_g resumed from, "" = none) net_d's parameters and u / v
   from the net_d file beside it and, when cfg->resume_optim, optim_d's state and step from
   that file's optimiser file; else with cfg->gan.load_from_d net_d from that file (optim_d
   fresh); else nothing (net_d keeps its init from the seed). Every file strictly: each tensor
   present with its shape, nothing else (pf_gan_d_load). Returns 0, or -1 with err naming the
   file (and the tensor): a missing file of a checkpoint says that it is a GAN job's and which
   file it lacks. */
int pf_state_gan_restore(const pf_config *cfg, pf_gan *gan, pf_optim *optim_d,
                         const char *resume_path, char *err, size_t errlen);
#endif
