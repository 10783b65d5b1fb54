/*  gan — the GAN training step of BasicSR's RealESRGANModel (basicsr/models/realesrgan_model.py,
    optimize_parameters; Wang, Xie, Dong, Shan, "Real-ESRGAN: Training Real-World Blind
    Super-Resolution with Pure Synthetic Data", ICCVW 2021) on the CPU executor: a generator
    net_g (a zoo model, nn/model.h), the discriminator net_d (UNetDiscriminatorSN,
    nn/discriminator.h, spectral-normalised) and the VGG19 features of the perceptual loss
    (nn/vgg.h), with the losses of nn/loss.h (pixel), nn/perceptual_loss.h and nn/gan_loss.h.

    One iteration `iter` (1-based, BasicSR's current_iter), lq n x h x w x 3 uint8, gt and
    gt_usm n x sh x sw x 3 uint8 (s = scale; gt_usm the USM-sharpened gt the loader sends with
    gt_usm, the same as gt without it); images are value / 255:

      out = net_g(lq)                                   (always: the discriminator's fake input)
      generator step, when iter % net_d_iters == 0 and iter > net_d_init_iters (net_d frozen,
      but in training mode: its spectral norm iterates once, as torch's):
        l_g_pix    = pixel_opt(out, l1_gt)              l1_gt     = gt_usm if l1_gt_usm    else gt
        l_g_percep, l_g_style = perceptual_opt(out, percep_gt)
                                                        percep_gt = gt_usm if percep_gt_usm else gt
        l_g_gan    = gan_opt(net_d(out), real, generator)   (times gan_opt's loss_weight)
        gradients of l_g_pix + l_g_percep + l_g_style + l_g_gan into net_g's gradient buffer
      discriminator step (always):           gan_gt = gt_usm if gan_gt_usm else gt
        l_d_real = gan_opt(net_d(gan_gt), real, disc)      out_d_real = mean(net_d(gan_gt))
        l_d_fake = gan_opt(net_d(out), fake, disc)          out_d_fake = mean(net_d(out))
        each forward iterates the spectral norm once and its backward uses that forward's u, v
        and sigma; gradients (of weight_orig, not the normalised weight) summed into net_d's

    pf_gan_compute computes both networks' gradients and leaves the parameters alone: the
    caller averages them over the data-parallel group and steps both optimisers (optim_g only
    when the generator step ran) and the EMA of net_g. That order is BasicSR's: net_d's
    gradients are taken with the weights before optimizer_g.step(), which does not touch net_d,
    and on out = net_g(lq) from before that step (BasicSR's output.detach()).

    ESRGANModel (model_type PF_GAN_MODEL_ESRGAN; BasicSR's esrgan_model.py, the relativistic
    average GAN of Wang et al., "ESRGAN: Enhanced Super-Resolution Generative Adversarial
    Networks", ECCVW 2018) differs in three places: every loss compares with the plain gt
    (gt_usm and the *_gt_usm options are ignored); the generator's adversarial term is
        real_d_pred = net_d(gt).detach(); fake_g_pred = net_d(out)      (in this order)
        l_g_gan = (gan_opt(real_d_pred - mean(fake_g_pred), fake, generator)
                   + gan_opt(fake_g_pred - mean(real_d_pred), real, generator)) / 2
      (its gradient reaches out through fake_g_pred and through mean(fake_g_pred));
    and the discriminator step makes three net_d calls, each iterating the spectral norm once:
        fake_d_pred = net_d(out).detach()               (only its mean is used)
        real_d_pred = net_d(gt)       l_d_real = gan_opt(real_d_pred - mean(fake_d_pred), real,
                                                         disc) * 0.5
        fake_d_pred = net_d(out)      l_d_fake = gan_opt(fake_d_pred - mean(real_d_pred), fake,
                                                         disc) * 0.5
      the means detached; out_d_real / out_d_fake the plain means of the last two calls.
    net_d is UNetDiscriminatorSN or VGGStyleDiscriminator (BasicSR's ESRGAN recipe); the step
    does not depend on the architecture. VGGStyleDiscriminator's outputs are one logit per
    image (n of them, where UNetDiscriminatorSN gives n H W), and its BatchNorm2d layers run in
    training mode in every net_d call above (BasicSR never puts net_d in eval mode while
    training): each call normalises by its own batch's statistics and updates the running
    statistics (so the generator step's calls update them too, as torch's do); they are state
    of net_d that pf_gan_d_serialize / pf_gan_d_load carry. Data parallel: like BasicSR under
    DDP (no SyncBatchNorm), each rank normalises its own batch and keeps its own running
    statistics; rank 0's are the ones a checkpoint holds.

    Not yet: the CUDA executor (its model calls exist, nn/cuda/model_cuda.h; the plan:
    docs/cuda.md, "The GAN step on GPU workers").
*/
#ifndef PF_GAN_H
#define PF_GAN_H
#include <stddef.h>
#include <stdint.h>

#include "nn/gan_loss.h"
#include "nn/loss.h"
#include "nn/perceptual_loss.h"

struct pf_model;

typedef enum { PF_GAN_MODEL_REALESRGAN, PF_GAN_MODEL_ESRGAN } pf_gan_model_type;
/* network_d.type: UNetDiscriminatorSN (0, the default of a zeroed pf_gan_opts) or
   VGGStyleDiscriminator (nn/discriminator.h). */
typedef enum { PF_GAN_D_UNET_SN, PF_GAN_D_VGG } pf_gan_d_type;

typedef struct {
    pf_gan_model_type model_type;   /* model_type: RealESRGANModel or ESRGANModel */
    int net_d_iters;                /* >= 1 (BasicSR default 1) */
    int net_d_init_iters;           /* >= 0 (default 0) */
    int l1_gt_usm, percep_gt_usm, gan_gt_usm;   /* BasicSR defaults 1, 1, 0; ESRGANModel:
                                                   ignored (plain gt) */
    int use_pixel;                  /* pixel_opt present (model.loss) */
    pf_loss pixel;
    int use_percep;                 /* perceptual_opt present */
    pf_perceptual_opts percep;
    const char *vgg_weights;        /* the VGG19 safetensors file (torchvision's names); NULL:
                                       the VGG keeps its init (tests fill its parameters) */
    pf_gan_loss gan;                /* gan_opt */
    pf_gan_d_type d_type;           /* network_d.type */
    int d_num_in_ch, d_num_feat;    /* network_d: UNetDiscriminatorSN(num_in_ch 3, num_feat, */
    int d_skip_connection;          /*            skip_connection) */
    int d_input_size;               /* VGGStyleDiscriminator(num_in_ch 3, num_feat, input_size
                                       128 or 256): GT patches must be input_size square */
    const char *conv_algorithm;     /* NULL or "": auto (docs/config.md) */
    int precision;                  /* net_d's and the VGG's convolutions, training and
                                       inference plans alike (nn/cpu/dnnl_ctx.h pf_precision;
                                       0 fp32): the job's train_cfg.precision, as
                                       torch.autocast covers the whole training step */
} pf_gan_opts;

/* One iteration's logged values (BasicSR's loss_dict names); NAN where a term was not
   computed (no generator step, no such loss). */
typedef struct {
    int g_step;                     /* 1: the generator step ran (net_g's gradients are set) */
    double l_g_pix, l_g_percep, l_g_style, l_g_gan;
    double l_d_real, l_d_fake, out_d_real, out_d_fake;
} pf_gan_losses;

typedef struct pf_gan pf_gan;

/* The step around net_g (borrowed: it must outlive the result), with net_d and the VGG built
   from o (net_d's parameters and u / v drawn from `seed`: pf_net_init_params and
   pf_disc_sn_init; the VGG's loaded from o->vgg_weights). Returns NULL with err: an option
   out of range (model_type included), a video net_g, the VGG file (its loader's message),
   o->precision bf16 on a CPU without a bf16 unit (pf_model_set_precision's message, naming
   train_cfg.precision), out of memory. */
pf_gan *pf_gan_new(const pf_gan_opts *o, struct pf_model *net_g, uint64_t seed, char *err,
                   size_t errlen);
void pf_gan_free(pf_gan **self);

/* net_d's trained parameters (weight_orig for its spectral-normalised convs; the parameter
   table of pf_gan_d_net, BasicSR's names), their gradients of the last pf_gan_compute, and
   the spectral norm's u / v state (pf_disc_sn_numel floats, nn/discriminator.h's layout;
   none for VGGStyleDiscriminator, whose BatchNorm running statistics are pf_gan_d_model's
   pf_model_running / pf_model_tracked). */
size_t pf_gan_d_num_params(const pf_gan *s);
float *pf_gan_d_params(pf_gan *s);
float *pf_gan_d_grads(pf_gan *s);
size_t pf_gan_d_sn_numel(const pf_gan *s);
float *pf_gan_d_sn_state(pf_gan *s);
const struct pf_net *pf_gan_d_net(const pf_gan *s);
struct pf_model *pf_gan_d_model(pf_gan *s);
/* FNV-1a 64 (common/util.h pf_fnv1a64) of net_d's state: its parameters, u / v, then the
   BatchNorm running statistics and num_batches_tracked (none for UNetDiscriminatorSN, whose
   digest is that of the first two), host byte order: equal states, equal digests. */
uint64_t pf_gan_d_digest(pf_gan *s);
/* net_d's state_dict as a safetensors file image (malloc'd *buf, *len bytes): torch's names
   and order, BasicSR's UNetDiscriminatorSN's: conv0.weight, conv0.bias, then per
   spectral-normalised conv NAME.weight_orig, NAME.weight_u, NAME.weight_v, ..., conv9.weight,
   conv9.bias (what `torch.save(net_d.state_dict())` holds, so load_state_dict(strict=True)
   takes it after scripts/pth2safetensors.py's conversion the other way); metadata format
   "pixflow-1", network_d "UNetDiscriminatorSN", num_feat, skip_connection.
   VGGStyleDiscriminator's: its parameters in torch's order with each bnX_Y's buffers after its
   bias: bnX_Y.running_mean, bnX_Y.running_var (F32 [C]) and bnX_Y.num_batches_tracked (I64,
   0-dim, as torch keeps it); metadata network_d "VGGStyleDiscriminator", num_feat,
   input_size. Returns 0, or -1 with err. */
int pf_gan_d_serialize(const pf_gan *s, void **buf, size_t *len, char *err, size_t errlen);

struct pf_safetensors;
/* Load net_d's parameters, u / v and BatchNorm buffers from a state_dict file (the layout above, any tensor
   order), strictly: every tensor present with its shape and nothing else. On a mismatch err
   names the file and the first missing, mis-shaped or unexpected tensor, and net_d is left as
   it was. Returns 0 or -1. */
int pf_gan_d_load(pf_gan *s, const struct pf_safetensors *st, char *err, size_t errlen);

/* One training-mode forward of net_d (its spectral norm iterates u once, as every net_d call
   of the step does; BatchNorm2d in training mode, its running statistics updated) on x (n x h
   x w x 3 NHWC, images in [0, 1]; UNetDiscriminatorSN: h and w multiples of 8, out n x 1 x h x
   w; VGGStyleDiscriminator: h = w = input_size, else an error saying so, out n floats).
   Returns 0, or -1 with err. */
int pf_gan_d_forward(pf_gan *s, const float *x, int n, int h, int w, float *out, char *err,
                     size_t errlen);

/* The VGG model (its parameters: pf_model_params), NULL without perceptual_opt. The step
   takes its input gradient alone (pf_model_backward_input): its pf_model_grads is never
   written. */
struct pf_model *pf_gan_vgg(pf_gan *s);

/* The iteration above for BasicSR's current_iter `iter` (>= 1). gt_usm NULL: gt (ESRGANModel:
   unused). Fills net_g's gradient buffer (pf_model_grads; zeros when the generator step does
   not run), pf_gan_d_grads and *L. Returns 0, or -1 with err. */
int pf_gan_compute(pf_gan *s, int64_t iter, const uint8_t *lq, const uint8_t *gt,
                   const uint8_t *gt_usm, int n, int lq_h, int lq_w, pf_gan_losses *L,
                   char *err, size_t errlen);
#endif
