/*  gan_state — see gan_state.h. */
#include "worker/gan_state.h"

#include <stdio.h>
#include <string.h>

int pf_state_gan_opts(const pf_config *cfg, pf_gan_opts *o, char *err, size_t errlen) {
    const pf_gan_cfg *g = &cfg->gan;
    memset(o, 0, sizeof *o);
    int esrgan = !strcmp(g->model_type, "ESRGANModel");
    if (!esrgan && strcmp(g->model_type, "RealESRGANModel") != 0) {
        snprintf(err, errlen, "%s: gan.model_type %s: not a model of the training step "
                 "(RealESRGANModel, ESRGANModel)", cfg->path, g->model_type);
        return -1;
    }
    if (strcmp(g->network_d.type, "UNetDiscriminatorSN") != 0) {
        snprintf(err, errlen, "%s: gan.network_d.type %s: not supported by the training step "
                 "yet (UNetDiscriminatorSN only, issue 41)", cfg->path, g->network_d.type);
        return -1;
    }
    o->model_type = esrgan ? PF_GAN_MODEL_ESRGAN : PF_GAN_MODEL_REALESRGAN;
    o->net_d_iters = g->net_d_iters;
    o->net_d_init_iters = g->net_d_init_iters;
    o->l1_gt_usm = g->l1_gt_usm;
    o->percep_gt_usm = g->percep_gt_usm;
    o->gan_gt_usm = g->gan_gt_usm;
    o->use_pixel = 1;
    o->pixel = (pf_loss){ .weight = cfg->loss_weight, .eps = cfg->charbonnier_eps };
    if (pf_loss_parse(cfg->loss_type, &o->pixel.type) != 0) {
        snprintf(err, errlen, "%s: model.loss.type %s: unknown pixel loss", cfg->path,
                 cfg->loss_type);
        return -1;
    }
    o->use_percep = g->has_perceptual_opt;
    if (o->use_percep) {
        o->percep = g->perceptual_opt;
        o->vgg_weights = g->vgg_weights;
    }
    pf_gan_type type;
    if (pf_gan_type_parse(g->gan_opt.gan_type, &type) != 0) {
        snprintf(err, errlen, "%s: gan.gan_opt.gan_type %s: unknown", cfg->path,
                 g->gan_opt.gan_type);
        return -1;
    }
    o->gan = (pf_gan_loss){ .gan_type = type, .real_label_val = g->gan_opt.real_label_val,
                            .fake_label_val = g->gan_opt.fake_label_val,
                            .loss_weight = g->gan_opt.loss_weight };
    o->d_num_in_ch = g->network_d.num_in_ch;
    o->d_num_feat = g->network_d.num_feat;
    o->d_skip_connection = g->network_d.skip_connection;
    o->conv_algorithm = cfg->conv_algorithm;
    return 0;
}

int pf_state_optim_d_new(const pf_config *cfg, size_t n, pf_optim *o, char *err,
                         size_t errlen) {
    const pf_gan_optim_cfg *d = &cfg->gan.optim_d;
    pf_optim_settings s = {
        .kind = !strcmp(d->type, "AdamW") ? PF_OPTIM_ADAMW
              : !strcmp(d->type, "SGD")   ? PF_OPTIM_SGD
                                          : PF_OPTIM_ADAM,
        .beta1 = d->betas[0], .beta2 = d->betas[1], .eps = d->eps,
        .weight_decay = d->weight_decay, .momentum = d->momentum,
        .dampening = d->dampening, .nesterov = d->nesterov,
    };
    if (pf_optim_init(o, n, &s) != 0) {
        snprintf(err, errlen, "out of memory for the discriminator's optimiser");
        return -1;
    }
    return 0;
}
