/*  gan_state — see gan_state.h. */
#include "worker/gan_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/checkpoint.h"
#include "common/log.h"
#include "common/safetensors.h"
#include "nn/checkpoint.h"

int pf_state_gan_opts(const pf_config *cfg, pf_gan_opts *o, char *err, size_t errlen) {
    const pf_gan_cfg *g = &cfg->gan;
    memset(o, 0, sizeof *o);
    int esrgan = !strcmp(g->model_type, "ESRGANModel");
    if (!esrgan && strcmp(g->model_type, "RealESRGANModel") != 0) {
        snprintf(err, errlen, "%s: gan.model_type %s: not a model of the training step "
                 "(RealESRGANModel, ESRGANModel)", cfg->path, g->model_type);
        return -1;
    }
    int vgg = !strcmp(g->network_d.type, "VGGStyleDiscriminator");
    if (!vgg && strcmp(g->network_d.type, "UNetDiscriminatorSN") != 0) {
        snprintf(err, errlen, "%s: gan.network_d.type %s: not a discriminator of the training "
                 "step (UNetDiscriminatorSN, VGGStyleDiscriminator)", cfg->path,
                 g->network_d.type);
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
    o->d_type = vgg ? PF_GAN_D_VGG : PF_GAN_D_UNET_SN;
    o->d_input_size = g->network_d.input_size;
    o->conv_algorithm = cfg->conv_algorithm;
    o->precision = cfg->train_precision;
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

int pf_state_gan_serialize(const pf_gan *gan, const pf_optim *optim_d, int64_t iter,
                           void **d_buf, size_t *d_len, void **o_buf, size_t *o_len, char *err,
                           size_t errlen) {
    *d_buf = *o_buf = NULL;
    if (pf_gan_d_serialize(gan, d_buf, d_len, err, errlen) != 0) return -1;
    if (pf_ckpt_serialize_optim_net(pf_gan_d_net(gan), optim_d, iter, o_buf, o_len, err,
                                    errlen) != 0) {
        free(*d_buf);
        *d_buf = NULL;
        return -1;
    }
    return 0;
}

/* net_d's parameters, u / v and BatchNorm buffers from the state_dict file `path` (strict). `ckpt`: the file
   belongs to the checkpoint `ckpt` (for the message when it is missing), or NULL. */
static int load_d(pf_gan *gan, const char *path, const char *ckpt, char *err, size_t errlen) {
    struct stat sb;
    if (ckpt && stat(path, &sb) != 0) {
        snprintf(err, errlen, "gan: %s has no net_d: %s is missing (a GAN job's checkpoint "
                 "holds net_d's state_dict and optim_d's state beside net_g's weights: "
                 "iter_N.net_d.safetensors, iter_N.net_d.optim.safetensors)", ckpt, path);
        return -1;
    }
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = pf_gan_d_load(gan, st, err, errlen);
    pf_safetensors_free(&st);
    return rc;
}

int pf_state_gan_restore(const pf_config *cfg, pf_gan *gan, pf_optim *optim_d,
                         const char *resume_path, char *err, size_t errlen) {
    char dpath[PF_PATH_MAX + 96];
    if (!resume_path[0]) {
        if (!cfg->gan.load_from_d[0]) return 0;
        if (load_d(gan, cfg->gan.load_from_d, NULL, err, errlen) != 0) return -1;
        pf_info("gan: net_d's weights from %s (gan.load_from_d)", cfg->gan.load_from_d);
        return 0;
    }
    pf_ckpt_net_d_path(resume_path, dpath, sizeof dpath);
    if (load_d(gan, dpath, resume_path, err, errlen) != 0) return -1;
    if (cfg->resume_optim) {
        char opath[PF_PATH_MAX + 128];
        pf_ckpt_optim_path(dpath, opath, sizeof opath);
        struct stat sb;
        if (stat(opath, &sb) != 0) {
            snprintf(err, errlen, "gan: %s has no optim_d state: %s is missing (or set "
                     "resume_optim: false to resume with fresh optimisers)", resume_path,
                     opath);
            return -1;
        }
        if (pf_ckpt_load_optim_net(optim_d, pf_gan_d_net(gan), dpath, err, errlen) != 0)
            return -1;
    }
    pf_info("gan: resumed net_d from %s%s", dpath,
            cfg->resume_optim ? " with optim_d's state" : " (optim_d reset)");
    return 0;
}
