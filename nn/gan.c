/*  gan — BasicSR's RealESRGANModel training step over three CPU models (nn/gan.h). */
#include "nn/gan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/discriminator.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/vgg.h"

#define MAX_TAPS PF_VGG19_N_LAYERS

struct pf_gan {
    pf_gan_opts o;
    pf_model *g;                    /* borrowed */
    pf_model *d, *vgg;              /* owned; d runs with the effective (normalised) weights */
    size_t d_n;                     /* net_d's parameters */
    float *d_params, *d_grads;      /* weight_orig etc. and their gradients */
    float *sn_state;                /* u / v */
    size_t sn_n;
    pf_spectral_norm *sn;
    int n_sn;
    /* per batch shape: n images of H x W (GT size) */
    int n, H, W, lh, lw;
    float *lq_f;                    /* n x lh x lw x 3 */
    float *y_raw, *d_raw;           /* net_g's output activation (NCHW) and its gradient */
    float *y, *gt_f, *usm_f, *dx;   /* n x H x W x 3: output image, gt, gt_usm, an input grad */
    float *pred, *dpred;            /* net_d's output n x 1 x H x W and its gradient */
    float *fx[MAX_TAPS], *fgt[MAX_TAPS], *dfx[MAX_TAPS];
    int fshape[MAX_TAPS][4];
};

static void free_shape(pf_gan *s) {
    float **b[] = { &s->lq_f, &s->y_raw, &s->d_raw, &s->y, &s->gt_f, &s->usm_f, &s->dx,
                    &s->pred, &s->dpred };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        free(*b[i]);
        *b[i] = NULL;
    }
    for (int k = 0; k < MAX_TAPS; k++) {
        free(s->fx[k]);
        free(s->fgt[k]);
        free(s->dfx[k]);
        s->fx[k] = s->fgt[k] = s->dfx[k] = NULL;
    }
    s->n = 0;
}

void pf_gan_free(pf_gan **self) {
    if (!self || !*self) return;
    pf_gan *s = *self;
    free_shape(s);
    pf_model_destroy(&s->d);
    pf_model_destroy(&s->vgg);
    free(s->d_params);
    free(s->d_grads);
    free(s->sn_state);
    free(s->sn);
    free(s);
    *self = NULL;
}

/* net_d: UNetDiscriminatorSN with its trained parameters and u / v drawn from seed. */
static int build_d(pf_gan *s, uint64_t seed, char *err, size_t errlen) {
    pf_net net;
    pf_net_init(&net);
    if (pf_net_build_unet_discriminator_sn(&net, s->o.d_num_in_ch, s->o.d_num_feat,
                                           s->o.d_skip_connection, err, errlen))
        return -1;
    s->d = pf_model_new_net(&net, s->o.conv_algorithm, err, errlen);
    if (!s->d) return -1;
    const pf_net *dn = pf_model_net(s->d);
    s->d_n = dn->n_params;
    s->n_sn = pf_disc_sn_count(dn);
    s->sn_n = pf_disc_sn_numel(dn);
    s->d_params = calloc(s->d_n + 1, sizeof(float));
    s->d_grads = calloc(s->d_n + 1, sizeof(float));
    s->sn_state = calloc(s->sn_n + 1, sizeof(float));
    s->sn = calloc((size_t)s->n_sn + 1, sizeof *s->sn);
    if (!s->d_params || !s->d_grads || !s->sn_state || !s->sn) {
        snprintf(err, errlen, "gan: out of memory for net_d");
        return -1;
    }
    pf_net_init_params(dn, s->d_params, seed);
    pf_disc_sn_layers(dn, s->sn_state, s->sn);
    pf_disc_sn_init(dn, s->sn, seed);
    return 0;
}

/* The VGG19 features of perceptual_opt's layers, each a tap (tap k = layer k). */
static int build_vgg(pf_gan *s, char *err, size_t errlen) {
    const pf_perceptual_opts *p = &s->o.percep;
    const char *names[MAX_TAPS];
    int tensor[MAX_TAPS];
    for (int k = 0; k < p->n_layers; k++) names[k] = p->layer_weights[k].name;
    pf_net net;
    pf_net_init(&net);
    if (pf_net_build_vgg19_features(&net, names, p->n_layers, p->use_input_norm, p->range_norm,
                                    tensor, err, errlen))
        return -1;
    for (int k = 0; k < p->n_layers; k++)
        if (pf_net_add_tap(&net, tensor[k]) != k) {
            snprintf(err, errlen, "gan: cannot mark VGG19 layer %s", names[k]);
            pf_net_free(&net);
            return -1;
        }
    s->vgg = pf_model_new_net(&net, s->o.conv_algorithm, err, errlen);
    if (!s->vgg) return -1;
    if (s->o.vgg_weights && pf_vgg_load(pf_model_net(s->vgg), pf_model_params(s->vgg),
                                        s->o.vgg_weights, err, errlen))
        return -1;
    return 0;
}

pf_gan *pf_gan_new(const pf_gan_opts *o, pf_model *net_g, uint64_t seed, char *err,
                   size_t errlen) {
    if (o->model_type != PF_GAN_MODEL_REALESRGAN) {
        snprintf(err, errlen, "gan: model_type ESRGANModel is not supported yet "
                 "(RealESRGANModel is)");
        return NULL;
    }
    if (o->net_d_iters < 1 || o->net_d_init_iters < 0) {
        snprintf(err, errlen, "gan: net_d_iters must be >= 1 and net_d_init_iters >= 0");
        return NULL;
    }
    if (pf_model_is_video(net_g)) {
        snprintf(err, errlen, "gan: video generators are not supported yet");
        return NULL;
    }
    if (o->use_percep && pf_perceptual_opts_check(&o->percep, err, errlen)) return NULL;
    pf_gan *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "gan: out of memory");
        return NULL;
    }
    s->o = *o;
    s->g = net_g;
    if (build_d(s, seed, err, errlen) || (o->use_percep && build_vgg(s, err, errlen))) {
        pf_gan_free(&s);
        return NULL;
    }
    return s;
}

size_t pf_gan_d_num_params(const pf_gan *s) { return s->d_n; }
float *pf_gan_d_params(pf_gan *s) { return s->d_params; }
float *pf_gan_d_grads(pf_gan *s) { return s->d_grads; }
size_t pf_gan_d_sn_numel(const pf_gan *s) { return s->sn_n; }
float *pf_gan_d_sn_state(pf_gan *s) { return s->sn_state; }
const pf_net *pf_gan_d_net(const pf_gan *s) { return pf_model_net(s->d); }
pf_model *pf_gan_vgg(pf_gan *s) { return s->vgg; }

static float *alloc_f(size_t n, int *fail) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *fail = 1;
    return p;
}

/* Buffers for n images of LQ lh x lw. */
static int shape(pf_gan *s, int n, int lh, int lw, char *err, size_t errlen) {
    int sc = pf_model_scale(s->g);
    if (s->n == n && s->lh == lh && s->lw == lw) return 0;
    free_shape(s);
    int fail = 0;
    size_t img = (size_t)n * lh * lw * sc * sc * 3;
    s->lq_f = alloc_f((size_t)n * lh * lw * 3, &fail);
    s->y_raw = alloc_f(img, &fail);
    s->d_raw = alloc_f(img, &fail);
    s->y = alloc_f(img, &fail);
    s->gt_f = alloc_f(img, &fail);
    s->usm_f = alloc_f(img, &fail);
    s->dx = alloc_f(img, &fail);
    s->pred = alloc_f(img / 3, &fail);
    s->dpred = alloc_f(img / 3, &fail);
    if (fail) {
        free_shape(s);
        snprintf(err, errlen, "gan: out of memory for a batch of %d x %d x %d", n, lh, lw);
        return -1;
    }
    s->n = n;
    s->lh = lh;
    s->lw = lw;
    s->H = lh * sc;
    s->W = lw * sc;
    return 0;
}

static void to_float(const uint8_t *u, size_t count, float *f) {
    for (size_t i = 0; i < count; i++) f[i] = (float)u[i] / 255.0f;
}

/* y (n x H x W x 3 NHWC) = raw (n x 3 x H x W NCHW) / range + mean[c] (net_g's output). */
static void output_image(const pf_gan *s, const float *raw, float *y) {
    const pf_net *g = pf_model_net(s->g);
    size_t hw = (size_t)s->H * s->W;
    for (int i = 0; i < s->n; i++)
        for (int c = 0; c < 3; c++) {
            const float *r = raw + ((size_t)i * 3 + c) * hw;
            float m = g->use_mean ? g->mean[c] : 0.0f;
            for (size_t p = 0; p < hw; p++) y[((size_t)i * hw + p) * 3 + c] = r[p] / g->range + m;
        }
}

/* d_raw (NCHW) += dx (NHWC, a gradient with respect to the output image) / range. */
static void add_image_grad(const pf_gan *s, const float *dx, float *d_raw) {
    const pf_net *g = pf_model_net(s->g);
    size_t hw = (size_t)s->H * s->W;
    for (int i = 0; i < s->n; i++)
        for (int c = 0; c < 3; c++) {
            float *r = d_raw + ((size_t)i * 3 + c) * hw;
            for (size_t p = 0; p < hw; p++) r[p] += dx[((size_t)i * hw + p) * 3 + c] / g->range;
        }
}

/* net_d on x (n x H x W x 3) in training mode (one power iteration) into s->pred. */
static int d_forward(pf_gan *s, const float *x, char *err, size_t errlen) {
    pf_disc_sn_forward(pf_model_net(s->d), s->sn, s->d_params, 1, pf_model_params(s->d));
    if (pf_model_forward_train_f32(s->d, x, s->n, s->H, s->W, err, errlen) ||
        pf_model_read(s->d, -1, s->pred)) {
        if (!err[0]) snprintf(err, errlen, "gan: net_d forward failed");
        return -1;
    }
    return 0;
}

static double mean_of(const float *p, size_t n) {
    double a = 0;
    for (size_t i = 0; i < n; i++) a += p[i];
    return a / (double)n;
}

/* The perceptual loss of the output image s->y against target t (n x H x W x 3): its terms
   into L and d (terms) / d y into s->dx. */
static int perceptual(pf_gan *s, const float *t, pf_gan_losses *L, char *err, size_t errlen) {
    int nl = s->o.percep.n_layers;
    if (pf_model_forward_train_f32(s->vgg, t, s->n, s->H, s->W, err, errlen)) return -1;
    for (int k = 0; k < nl; k++) {
        if (pf_model_shape(s->vgg, k, s->fshape[k])) {
            snprintf(err, errlen, "gan: VGG19 layer %s has no shape",
                     s->o.percep.layer_weights[k].name);
            return -1;
        }
        size_t numel = (size_t)s->fshape[k][0] * s->fshape[k][1] * s->fshape[k][2] *
                       s->fshape[k][3];
        int fail = 0;
        if (!s->fx[k]) s->fx[k] = alloc_f(numel, &fail);
        if (!s->fgt[k]) s->fgt[k] = alloc_f(numel, &fail);
        if (!s->dfx[k]) s->dfx[k] = alloc_f(numel, &fail);
        if (fail) {
            snprintf(err, errlen, "gan: out of memory for VGG19 features");
            return -1;
        }
        pf_model_read(s->vgg, k, s->fgt[k]);
    }
    if (pf_model_forward_train_f32(s->vgg, s->y, s->n, s->H, s->W, err, errlen)) return -1;
    for (int k = 0; k < nl; k++) pf_model_read(s->vgg, k, s->fx[k]);
    double percep, style;
    if (pf_perceptual_forward_backward(&s->o.percep, nl, (const float *const *)s->fx,
                                       (const float *const *)s->fgt,
                                       (const int(*)[4])s->fshape, s->dfx, &percep,
                                       &style) < 0) {
        snprintf(err, errlen, "gan: perceptual loss failed (options or memory)");
        return -1;
    }
    L->l_g_percep = percep;
    L->l_g_style = style;
    /* the VGG is frozen: its input gradient alone, no parameter gradients */
    return pf_model_backward_input(s->vgg, NULL, (const float *const *)s->dfx, s->dx, err,
                                   errlen);
}

/* The generator step: gradients of its losses into net_g's buffer (s->y, s->y_raw set). */
static int g_step(pf_gan *s, const uint8_t *gt, const uint8_t *gt_usm, pf_gan_losses *L,
                  char *err, size_t errlen) {
    const pf_net *g = pf_model_net(s->g);
    size_t img = (size_t)s->n * s->H * s->W * 3;
    memset(s->d_raw, 0, img * sizeof(float));
    if (s->o.use_pixel)
        L->l_g_pix = pf_loss_forward_backward(&s->o.pixel, s->y_raw,
                                              s->o.l1_gt_usm ? gt_usm : gt, s->n, 1, s->H,
                                              s->W, g->use_mean ? g->mean : NULL, g->range, 1,
                                              s->d_raw);
    if (s->o.use_percep) {
        if (perceptual(s, s->o.percep_gt_usm ? s->usm_f : s->gt_f, L, err, errlen)) return -1;
        add_image_grad(s, s->dx, s->d_raw);
    }
    if (d_forward(s, s->y, err, errlen)) return -1;
    size_t np = img / 3;
    L->l_g_gan = pf_gan_loss_forward_backward(&s->o.gan, s->pred, np, 1, 0, s->dpred);
    /* net_d is frozen here (BasicSR sets requires_grad False): its input gradient alone; its
       parameter gradients are the discriminator step's (d_pass overwrites them first) */
    if (pf_model_backward_input(s->d, s->dpred, NULL, s->dx, err, errlen)) return -1;
    add_image_grad(s, s->dx, s->d_raw);
    return pf_model_backward_from(s->g, s->d_raw, NULL, NULL, err, errlen);
}

/* One discriminator pass on x for target_is_real: its loss and mean output into *loss and
   *mean_out, its weight_orig gradients into d_grads (accumulate: added). */
static int d_pass(pf_gan *s, const float *x, int real, int accumulate, double *loss,
                  double *mean_out, char *err, size_t errlen) {
    if (d_forward(s, x, err, errlen)) return -1;
    size_t np = (size_t)s->n * s->H * s->W;
    *loss = pf_gan_loss_forward_backward(&s->o.gan, s->pred, np, real, 1, s->dpred);
    *mean_out = mean_of(s->pred, np);
    if (pf_model_backward_from(s->d, s->dpred, NULL, NULL, err, errlen)) return -1;
    float *gr = pf_model_grads(s->d);
    pf_disc_sn_backward(pf_model_net(s->d), s->sn, s->d_params, gr);
    if (accumulate)
        for (size_t i = 0; i < s->d_n; i++) s->d_grads[i] += gr[i];
    else
        memcpy(s->d_grads, gr, s->d_n * sizeof(float));
    return 0;
}

int pf_gan_compute(pf_gan *s, int64_t iter, const uint8_t *lq, const uint8_t *gt,
                   const uint8_t *gt_usm, int n, int lq_h, int lq_w, pf_gan_losses *L,
                   char *err, size_t errlen) {
    err[0] = 0;
    *L = (pf_gan_losses){ 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN };
    if (!gt_usm) gt_usm = gt;
    if (shape(s, n, lq_h, lq_w, err, errlen)) return -1;
    size_t img = (size_t)n * s->H * s->W * 3;
    to_float(lq, (size_t)n * lq_h * lq_w * 3, s->lq_f);
    to_float(gt, img, s->gt_f);
    to_float(gt_usm, img, s->usm_f);
    if (pf_model_forward_train_f32(s->g, s->lq_f, n, lq_h, lq_w, err, errlen) ||
        pf_model_read(s->g, -1, s->y_raw)) {
        if (!err[0]) snprintf(err, errlen, "gan: net_g forward failed");
        return -1;
    }
    output_image(s, s->y_raw, s->y);
    L->g_step = iter % s->o.net_d_iters == 0 && iter > s->o.net_d_init_iters;
    if (L->g_step) {
        if (g_step(s, gt, gt_usm, L, err, errlen)) return -1;
    } else {
        memset(pf_model_grads(s->g), 0, pf_model_num_params(s->g) * sizeof(float));
    }
    if (d_pass(s, s->o.gan_gt_usm ? s->usm_f : s->gt_f, 1, 0, &L->l_d_real, &L->out_d_real,
               err, errlen) ||
        d_pass(s, s->y, 0, 1, &L->l_d_fake, &L->out_d_fake, err, errlen))
        return -1;
    return 0;
}
