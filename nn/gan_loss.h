/*  gan_loss — the adversarial loss of BasicSR's `GANLoss` (basicsr/losses/gan_loss.py, options
    gan_type, real_label_val, fake_label_val, loss_weight) on a discriminator's raw outputs
    (logits, no sigmoid applied), with reduction 'mean', and its gradient. Written from the
    definitions below, which are BasicSR's; tests/reference/gan_loss_ref.py checks them against
    torch's BCEWithLogitsLoss, MSELoss, softplus and relu.

    x: the discriminator's n outputs, any shape flattened (a VGG-style discriminator's N x 1, a
    U-Net discriminator's N x 1 x H x W). t = real_label_val when target_is_real, else
    fake_label_val. Per element, meaned over all n, then times loss_weight only for the
    generator (is_disc false; the discriminator's loss is never weighted, as BasicSR's):

      gan_type       target real                 target fake                 d/dx (real | fake)
      vanilla        BCEWithLogits(x, t) = max(x, 0) - x t + log1p(exp(-|x|))       sigmoid(x) - t
      lsgan          (x - t)^2                                                       2 (x - t)
      wgan           -x                          x                           -1 | 1
      wgan_softplus  softplus(-x)                softplus(x)                 -sigmoid(-x) | sigmoid(x)
      hinge, disc    relu(1 - x)                 relu(1 + x)                 -[x < 1] | [x > -1]
      hinge, gen     -x (either target)                                      -1

    wgan and wgan_softplus ignore the label values (BasicSR passes them target_is_real
    itself); so does hinge. softplus(y) = max(y, 0) + log1p(exp(-|y|)) and sigmoid are
    evaluated in their stable forms, so |x| in the hundreds gives finite values (torch's
    softplus turns linear above 20: the two differ there by under 3e-9 relative). At a hinge's
    kink (x = 1 real, x = -1 fake) the derivative is 0, as torch's relu backward.
    References: Goodfellow et al. 2014 (vanilla), Mao et al. 2017 (LSGAN), Arjovsky et al. 2017
    (WGAN), Lim & Ye 2017 / Miyato et al. 2018 (hinge).

    The names of the logs (BasicSR's RealESRGANModel / SRGANModel loss_dict, with
    real_d_pred = net_d(gt), fake_d_pred = net_d(output.detach()), fake_g_pred = net_d(output)):
      l_g_gan     = GANLoss(fake_g_pred, target_is_real true,  is_disc false)  (weighted)
      l_d_real    = GANLoss(real_d_pred, target_is_real true,  is_disc true)
      l_d_fake    = GANLoss(fake_d_pred, target_is_real false, is_disc true)
      out_d_real  = mean(real_d_pred), the discriminator's mean raw output on the GT
      out_d_fake  = mean(fake_d_pred), its mean raw output on the generator's output
    (ESRGANModel is relativistic: the input is real_d_pred - mean(fake_d_pred), and so on; out_d_*
    are the same plain means.)
*/
#ifndef PF_GAN_LOSS_H
#define PF_GAN_LOSS_H
#include <stddef.h>

typedef enum {
    PF_GAN_VANILLA,
    PF_GAN_LSGAN,
    PF_GAN_WGAN,
    PF_GAN_WGAN_SOFTPLUS,
    PF_GAN_HINGE,
} pf_gan_type;

#define PF_GAN_N_TYPES 5

/* Parse BasicSR's gan_type name: "vanilla" | "lsgan" | "wgan" | "wgan_softplus" | "hinge".
   Returns 0, or -1 when unknown (*type untouched). */
int pf_gan_type_parse(const char *name, pf_gan_type *type);

/* The gan_type name of type ("vanilla", ...), or "?" for a value outside the enum. */
const char *pf_gan_type_name(pf_gan_type type);

typedef struct {
    pf_gan_type gan_type;   /* gan_type */
    float real_label_val;   /* t for target_is_real (BasicSR default 1.0) */
    float fake_label_val;   /* t otherwise (default 0.0) */
    float loss_weight;      /* times the generator's loss only (default 1.0) */
} pf_gan_loss;

/* BasicSR's defaults for gan_type: real_label_val 1, fake_label_val 0, loss_weight 1. */
void pf_gan_loss_default(pf_gan_loss *l, pf_gan_type gan_type);

/* The loss of the n raw discriminator outputs x (float, any layout: the mean does not see it)
   for (target_is_real, is_disc), and, when d_x is not NULL, d loss / d x into d_x (n floats,
   overwritten, not accumulated). Sums run in double; each derivative is computed in double and
   rounded to float once. Returns the loss, or NaN (d_x untouched) when n is 0 (torch's mean of
   nothing) or gan_type is outside the enum. A NaN or infinite x gives a NaN or infinite loss. */
double pf_gan_loss_forward_backward(const pf_gan_loss *l, const float *x, size_t n,
                                    int target_is_real, int is_disc, float *d_x);
#endif
