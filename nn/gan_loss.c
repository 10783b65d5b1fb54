/*  gan_loss — BasicSR's GANLoss and its gradient on a discriminator's raw outputs (see
    gan_loss.h for the formulas and where each comes from). */
#include "nn/gan_loss.h"
#include <math.h>
#include <string.h>

static const char *const gan_names[PF_GAN_N_TYPES] = {
    [PF_GAN_VANILLA] = "vanilla",
    [PF_GAN_LSGAN] = "lsgan",
    [PF_GAN_WGAN] = "wgan",
    [PF_GAN_WGAN_SOFTPLUS] = "wgan_softplus",
    [PF_GAN_HINGE] = "hinge",
};

int pf_gan_type_parse(const char *name, pf_gan_type *type) {
    for (int i = 0; i < PF_GAN_N_TYPES; i++)
        if (!strcmp(name, gan_names[i])) {
            *type = (pf_gan_type)i;
            return 0;
        }
    return -1;
}

const char *pf_gan_type_name(pf_gan_type type) {
    return (unsigned)type < PF_GAN_N_TYPES ? gan_names[type] : "?";
}

void pf_gan_loss_default(pf_gan_loss *l, pf_gan_type gan_type) {
    l->gan_type = gan_type;
    l->real_label_val = 1.0f;
    l->fake_label_val = 0.0f;
    l->loss_weight = 1.0f;
}

/* 1 / (1 + exp(-y)) without overflow for y of either sign. */
static double sigmoid(double y) {
    if (y >= 0) return 1.0 / (1.0 + exp(-y));
    double e = exp(y);
    return e / (1.0 + e);
}

/* log(1 + exp(y)) = max(y, 0) + log1p(exp(-|y|)), finite for any finite y. */
static double softplus(double y) {
    return fmax(y, 0.0) + log1p(exp(-fabs(y)));
}

/* One element's loss at x and its derivative *d, for label t (vanilla, lsgan), the target
   (real) and the side (disc). */
static double elem(pf_gan_type type, double x, double t, int real, int disc, double *d) {
    switch (type) {
    case PF_GAN_VANILLA: /* softplus(x) - x t, BCE with logits */
        *d = sigmoid(x) - t;
        return softplus(x) - x * t;
    case PF_GAN_LSGAN:
        *d = 2.0 * (x - t);
        return (x - t) * (x - t);
    case PF_GAN_WGAN:
        *d = real ? -1.0 : 1.0;
        return real ? -x : x;
    case PF_GAN_WGAN_SOFTPLUS:
        *d = real ? -sigmoid(-x) : sigmoid(x);
        return softplus(real ? -x : x);
    default: /* hinge */
        if (!disc) {
            *d = -1.0;
            return -x;
        }
        double m = real ? 1.0 - x : 1.0 + x;   /* relu's argument */
        *d = m > 0 ? (real ? -1.0 : 1.0) : 0.0; /* relu'(0) = 0, as torch */
        return m <= 0 ? 0.0 : m;                /* NaN stays NaN */
    }
}

double pf_gan_loss_forward_backward(const pf_gan_loss *l, const float *x, size_t n,
                                    int target_is_real, int is_disc, float *d_x) {
    if (n == 0 || (unsigned)l->gan_type >= PF_GAN_N_TYPES) return NAN;
    double t = target_is_real ? l->real_label_val : l->fake_label_val;
    double weight = is_disc ? 1.0 : l->loss_weight;
    double gscale = weight / (double)n, sum = 0.0, d;
    for (size_t i = 0; i < n; i++) {
        sum += elem(l->gan_type, x[i], t, target_is_real, is_disc, &d);
        if (d_x) d_x[i] = (float)(d * gscale);
    }
    return sum / (double)n * weight;
}
