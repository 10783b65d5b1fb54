/*  gan — BasicSR's RealESRGANModel training step over three CPU models (nn/gan.h). */
#include "nn/gan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"
#include "common/util.h"
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
    size_t np;                      /* net_d's outputs: n H W (UNet), n (VGG style) */
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

/* net_d: UNetDiscriminatorSN or VGGStyleDiscriminator, its trained parameters and u / v
   drawn from seed (BatchNorm's running statistics: the model's, pf_net_bn_init). */
static int build_d(pf_gan *s, uint64_t seed, char *err, size_t errlen) {
    pf_net net;
    pf_net_init(&net);
    if (s->o.d_type == PF_GAN_D_VGG
            ? pf_net_build_vgg_style_discriminator(&net, s->o.d_num_in_ch, s->o.d_num_feat,
                                                   s->o.d_input_size, err, errlen)
            : pf_net_build_unet_discriminator_sn(&net, s->o.d_num_in_ch, s->o.d_num_feat,
                                                 s->o.d_skip_connection, err, errlen))
        return -1;
    s->d = pf_model_new_net(&net, s->o.conv_algorithm, err, errlen);
    if (!s->d || pf_model_set_precision(s->d, s->o.precision, s->o.precision,
                                        "train_cfg.precision", err, errlen))
        return -1;
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
    if (!s->vgg || pf_model_set_precision(s->vgg, s->o.precision, s->o.precision,
                                          "train_cfg.precision", err, errlen))
        return -1;
    if (s->o.vgg_weights && pf_vgg_load(pf_model_net(s->vgg), pf_model_params(s->vgg),
                                        s->o.vgg_weights, err, errlen))
        return -1;
    return 0;
}

pf_gan *pf_gan_new(const pf_gan_opts *o, pf_model *net_g, uint64_t seed, char *err,
                   size_t errlen) {
    if (o->model_type != PF_GAN_MODEL_REALESRGAN && o->model_type != PF_GAN_MODEL_ESRGAN) {
        snprintf(err, errlen, "gan: model_type %d is neither RealESRGANModel nor ESRGANModel",
                 (int)o->model_type);
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
    if (o->d_type != PF_GAN_D_UNET_SN && o->d_type != PF_GAN_D_VGG) {
        snprintf(err, errlen, "gan: network_d type %d is neither UNetDiscriminatorSN nor "
                 "VGGStyleDiscriminator", (int)o->d_type);
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
pf_model *pf_gan_d_model(pf_gan *s) { return s->d; }

uint64_t pf_gan_d_digest(pf_gan *s) {
    const pf_net *d = pf_model_net(s->d);
    uint64_t h = pf_fnv1a64(s->d_params, s->d_n * sizeof(float), PF_FNV_OFFSET);
    h = pf_fnv1a64(s->sn_state, s->sn_n * sizeof(float), h);
    h = pf_fnv1a64(pf_model_running(s->d), d->n_running * sizeof(float), h);
    return pf_fnv1a64(pf_model_tracked(s->d), (size_t)d->n_bn * sizeof(int64_t), h);
}
pf_model *pf_gan_vgg(pf_gan *s) { return s->vgg; }

/* Where net_d's state_dict entries read or write: parameters (d_n floats), u / v (sn_n),
   BatchNorm running statistics (net->n_running floats) and num_batches_tracked (n_bn). */
typedef struct {
    float *params, *sn, *running;
    int64_t *tracked;
} d_store;

static int d_n_entries(const pf_gan *s) {
    const pf_net *d = pf_model_net(s->d);
    return d->n_tensors + 2 * s->n_sn + 3 * d->n_bn;
}

/* The extra entries after tensor i (k counts down; 0: this one): an SN conv's weight_u /
   weight_v after its weight_orig, a BatchNorm2d's running_mean, running_var and
   num_batches_tracked (I64, 0-dim) after its bias. Returns 0 when entry k was filled, 1
   when k stays past these (decremented), as torch's state_dict orders them. */
static int d_buffers(const pf_gan *s, int i, int *k, char *name, size_t len, pf_st_tensor *t,
                     const int64_t **i64, const d_store *st) {
    const pf_net *d = pf_model_net(s->d);
    for (int j = 0; j < s->n_sn; j++) {
        size_t off[2];
        const pf_nconv *c = &d->conv[pf_disc_sn_at(d, j, &off[0], &off[1])];
        if (c->weight != i) continue;
        for (int uv = 0; uv < 2; uv++)
            if ((*k)-- == 0) {
                snprintf(name, len, "%s.weight_%c", c->name, uv ? 'v' : 'u');
                *t = (pf_st_tensor){ .name = name, .data = st->sn + off[uv], .ndim = 1 };
                t->shape[0] = uv ? (int64_t)c->ic * c->k * c->k : c->oc;
                return 0;
            }
    }
    for (int m = 0; m < d->n_node; m++) {
        const pf_gnode *nd = &d->node[m];
        if (nd->op != PF_G_BATCHNORM || nd->param + 1 != i) continue;
        const char *bias = d->tensors[i].name;
        int base = (int)(strrchr(bias, '.') - bias);
        int64_t c = d->tensors[i].shape[0];
        for (int b = 0; b < 3; b++)
            if ((*k)-- == 0) {
                static const char *const what[3] = { "running_mean", "running_var",
                                                     "num_batches_tracked" };
                snprintf(name, len, "%.*s.%s", base, bias, what[b]);
                *t = (pf_st_tensor){ .name = name, .ndim = b < 2,
                                     .data = b < 2 ? st->running + nd->stat + b * c : NULL };
                t->shape[0] = c;
                if (b == 2) *i64 = st->tracked + nd->bn;
                return 0;
            }
    }
    return 1;
}

/* Entry k of net_d's state_dict (k from 0; d_n_entries of them, torch's order): its name into
   name, its data and shape into *t, *i64 its int64 data for num_batches_tracked (else NULL).
   Returns 0, or -1 past the end. */
static int d_entry(const pf_gan *s, int k, char *name, size_t len, pf_st_tensor *t,
                   const int64_t **i64, const d_store *st) {
    const pf_net *d = pf_model_net(s->d);
    *i64 = NULL;
    for (int i = 0; i < d->n_tensors; i++) {
        const pf_param_info *p = &d->tensors[i];
        if (k-- == 0) {
            snprintf(name, len, "%s", p->name);
            *t = (pf_st_tensor){ .name = name, .data = st->params + p->offset, .ndim = p->ndim };
            memcpy(t->shape, p->shape, sizeof t->shape);
            return 0;
        }
        if (d_buffers(s, i, &k, name, len, t, i64, st) == 0) return 0;
    }
    return -1;
}

static d_store d_own_store(const pf_gan *s) {
    return (d_store){ s->d_params, s->sn_state, pf_model_running(s->d),
                      pf_model_tracked(s->d) };
}

int pf_gan_d_serialize(const pf_gan *s, void **buf, size_t *len, char *err, size_t errlen) {
    const pf_net *d = pf_model_net(s->d);
    int n = d_n_entries(s);
    pf_st_tensor *t = calloc((size_t)n, sizeof *t);
    const int64_t **i64 = calloc((size_t)n, sizeof *i64);
    char (*names)[112] = calloc((size_t)n, sizeof *names);
    if (!t || !names || !i64) {
        free(t);
        free(i64);
        free(names);
        snprintf(err, errlen, "gan: out of memory serialising net_d");
        return -1;
    }
    const d_store st = d_own_store(s);
    for (int k = 0; k < n; k++) d_entry(s, k, names[k], sizeof names[k], &t[k], &i64[k], &st);
    char feat[16], arg[16];
    int vgg = s->o.d_type == PF_GAN_D_VGG;
    snprintf(feat, sizeof feat, "%d", s->o.d_num_feat);
    snprintf(arg, sizeof arg, "%d", vgg ? s->o.d_input_size : s->o.d_skip_connection ? 1 : 0);
    const char *meta[] = { "format", "pixflow-1", "network_d", d->type, "num_feat", feat,
                           vgg ? "input_size" : "skip_connection", arg };
    int rc = pf_safetensors_serialize_i64(t, i64, n, meta, 4, buf, len, err, errlen);
    free(t);
    free(i64);
    free(names);
    return rc;
}

/* Entry k of the file into st's place for it (shape and dtype checked). Returns 0, or -1 with
   err naming the file and the tensor. */
static int d_load_entry(const pf_gan *s, const pf_safetensors *f, int k, const d_store *st,
                        char *err, size_t errlen) {
    const pf_net *d = pf_model_net(s->d);
    char name[112];
    pf_st_tensor t;
    const int64_t *i64;
    d_entry(s, k, name, sizeof name, &t, &i64, st);
    int ndim;
    int64_t shape[4];
    size_t numel = 1;
    for (int a = 0; a < t.ndim; a++) numel *= (size_t)t.shape[a];
    const float *v = i64 ? NULL : pf_safetensors_get(f, name, &ndim, shape);
    int64_t nbt = 0;
    int found = i64 ? pf_safetensors_get_i64(f, name, &ndim, shape, &nbt, 1) >= 0 : v != NULL;
    if (!found || ndim != t.ndim || memcmp(shape, t.shape, sizeof(int64_t) * (size_t)ndim)) {
        int other = i64 ? pf_safetensors_get(f, name, NULL, NULL) != NULL : 0;
        snprintf(err, errlen, "%s: net_d (%s, num_feat %d): %s %s", pf_safetensors_name(f),
                 d->type, s->o.d_num_feat, name,
                 other ? "is not I64 (torch's int64)" : found ? "has another shape"
                                                             : "is missing");
        return -1;
    }
    if (i64)
        *(int64_t *)i64 = nbt;  /* the caller's store (tmp), not const */
    else
        memcpy((float *)t.data, v, numel * sizeof(float));
    return 0;
}

int pf_gan_d_load(pf_gan *s, const pf_safetensors *st, char *err, size_t errlen) {
    const pf_net *d = pf_model_net(s->d);
    int n = d_n_entries(s);
    const char *file = pf_safetensors_name(st);
    size_t nf = s->d_n + s->sn_n + d->n_running;
    float *p = malloc((nf + 1) * sizeof(float));
    int64_t *tr = calloc((size_t)d->n_bn + 1, sizeof *tr);
    int rc = -1;
    if (!p || !tr) {
        snprintf(err, errlen, "gan: out of memory loading net_d");
        goto out;
    }
    const d_store tmp = { p, p + s->d_n, p + s->d_n + s->sn_n, tr };
    for (int k = 0; k < n; k++)
        if (d_load_entry(s, st, k, &tmp, err, errlen)) goto out;
    for (int i = 0; i < pf_safetensors_count(st); i++) {
        const char *fname;
        int known = 0;
        pf_safetensors_at(st, i, &fname, NULL, NULL);
        for (int k = 0; k < n && !known; k++) {
            char name[112];
            pf_st_tensor t;
            const int64_t *i64;
            d_entry(s, k, name, sizeof name, &t, &i64, &tmp);
            known = !strcmp(name, fname);
        }
        if (!known) {
            snprintf(err, errlen, "%s: net_d (%s, num_feat %d): unexpected tensor %s", file,
                     d->type, s->o.d_num_feat, fname);
            goto out;
        }
    }
    memcpy(s->d_params, p, s->d_n * sizeof(float));
    memcpy(s->sn_state, p + s->d_n, s->sn_n * sizeof(float));
    memcpy(pf_model_running(s->d), p + s->d_n + s->sn_n, d->n_running * sizeof(float));
    memcpy(pf_model_tracked(s->d), tr, (size_t)d->n_bn * sizeof *tr);
    rc = 0;
out:
    free(p);
    free(tr);
    return rc;
}

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
    s->np = s->o.d_type == PF_GAN_D_VGG ? (size_t)n : (size_t)n * s->H * s->W;
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

int pf_gan_d_forward(pf_gan *s, const float *x, int n, int h, int w, float *out, char *err,
                     size_t errlen) {
    err[0] = 0;
    if (s->o.d_type == PF_GAN_D_VGG && (h != s->o.d_input_size || w != s->o.d_input_size)) {
        snprintf(err, errlen, "gan: VGGStyleDiscriminator (input_size %d) takes %d x %d "
                 "images, got %d x %d (gt_patch_size must equal network_d.input_size)",
                 s->o.d_input_size, s->o.d_input_size, s->o.d_input_size, h, w);
        return -1;
    }
    pf_disc_sn_forward(pf_model_net(s->d), s->sn, s->d_params, 1, pf_model_params(s->d));
    if (pf_model_forward_train_f32(s->d, x, n, h, w, err, errlen) ||
        pf_model_read(s->d, -1, out)) {
        if (!err[0]) snprintf(err, errlen, "gan: net_d forward failed");
        return -1;
    }
    return 0;
}

/* net_d on x (n x H x W x 3) in training mode (one power iteration) into s->pred. */
static int d_forward(pf_gan *s, const float *x, char *err, size_t errlen) {
    return pf_gan_d_forward(s, x, s->n, s->H, s->W, s->pred, err, errlen);
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

/* ESRGANModel's relativistic average GAN terms (Wang et al., "ESRGAN: Enhanced
   Super-Resolution Generative Adversarial Networks", ECCVW 2018, section 3.2, after
   Jolicoeur-Martineau, "The relativistic discriminator", 2018; BasicSR's esrgan_model.py): GAN(x - c) of net_d's np outputs `pred` shifted by the constant c, for
   (real, is_disc), times `scale`: the loss is returned, its gradient with respect to pred
   (c held constant) written to d (np floats); scratch holds np floats. */
static double rel_loss(const pf_gan *s, const float *pred, double c, size_t np, int real,
                       int is_disc, double scale, float *scratch, float *d) {
    for (size_t i = 0; i < np; i++) scratch[i] = (float)((double)pred[i] - c);
    double l = pf_gan_loss_forward_backward(&s->o.gan, scratch, np, real, is_disc, d);
    for (size_t i = 0; i < np; i++) d[i] = (float)(scale * d[i]);
    return l * scale;
}

/* ESRGANModel's generator term, after the pixel and perceptual ones (s->d_raw holds their
   gradient): real_d_pred = net_d(gt).detach(), then fake_g_pred = net_d(out) (two spectral-
   norm iterations, in this order),
     l_g_gan = (GAN(real_d_pred - mean(fake_g_pred), fake) + GAN(fake_g_pred - mean(real_d_pred),
               real)) / 2                     (generator GANs: each times gan_opt's loss_weight)
   d l_g_gan / d fake_g_pred_j = (g_fake_j - sum_i g_real_i / np) / 2, g_* the two GANs'
   gradients with respect to their inputs: the first term reaches fake_g_pred through its mean.
   Its gradient goes through net_d into net_g's buffer with the others'. */
static int esrgan_g_gan(pf_gan *s, pf_gan_losses *L, char *err, size_t errlen) {
    size_t np = s->np;
    float *real = malloc(3 * np * sizeof(float));
    if (!real) {
        snprintf(err, errlen, "gan: out of memory for ESRGANModel's generator step");
        return -1;
    }
    float *scratch = real + np, *dreal = real + 2 * np;
    int rc = -1;
    if (d_forward(s, s->gt_f, err, errlen)) goto out;
    memcpy(real, s->pred, np * sizeof(float));
    if (d_forward(s, s->y, err, errlen)) goto out;
    double l_real = rel_loss(s, real, mean_of(s->pred, np), np, 0, 0, 0.5, scratch, dreal);
    double l_fake = rel_loss(s, s->pred, mean_of(real, np), np, 1, 0, 0.5, scratch, s->dpred);
    double through_mean = 0;
    for (size_t i = 0; i < np; i++) through_mean += dreal[i];
    through_mean /= (double)np;
    for (size_t i = 0; i < np; i++) s->dpred[i] = (float)((double)s->dpred[i] - through_mean);
    L->l_g_gan = l_real + l_fake;
    if (pf_model_backward_input(s->d, s->dpred, NULL, s->dx, err, errlen)) goto out;
    add_image_grad(s, s->dx, s->d_raw);
    rc = pf_model_backward_from(s->g, s->d_raw, NULL, NULL, err, errlen);
out:
    free(real);
    return rc;
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
    if (s->o.model_type == PF_GAN_MODEL_ESRGAN) return esrgan_g_gan(s, L, err, errlen);
    if (d_forward(s, s->y, err, errlen)) return -1;
    size_t np = s->np;
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
    size_t np = s->np;
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

/* One relativistic discriminator pass (ESRGANModel): net_d on x, its loss
   GAN(net_d(x) - c, real, disc) * 0.5 into *loss (c constant: a detached mean), the mean raw
   output into *mean_out, the weight_orig gradients into d_grads (accumulate: added). */
static int d_rel_pass(pf_gan *s, const float *x, double c, int real, int accumulate,
                      float *scratch, double *loss, double *mean_out, char *err,
                      size_t errlen) {
    if (d_forward(s, x, err, errlen)) return -1;
    size_t np = s->np;
    *loss = rel_loss(s, s->pred, c, np, real, 1, 0.5, scratch, s->dpred);
    *mean_out = mean_of(s->pred, np);
    if (pf_model_backward_from(s->d, s->dpred, NULL, NULL, err, errlen)) return -1;
    float *gr = pf_model_grads(s->d);
    pf_disc_sn_backward(pf_model_net(s->d), s->sn, s->d_params, gr);
    for (size_t i = 0; i < s->d_n; i++) s->d_grads[i] = (accumulate ? s->d_grads[i] : 0) + gr[i];
    return 0;
}

/* ESRGANModel's discriminator step, BasicSR's three net_d calls in its order (each iterates
   the spectral norm once):
     fake_d_pred = net_d(out).detach()                       (only its mean is used)
     real_d_pred = net_d(gt);   l_d_real = GAN(real_d_pred - mean(fake_d_pred), real) * 0.5
     fake_d_pred = net_d(out);  l_d_fake = GAN(fake_d_pred - mean(real_d_pred), fake) * 0.5
   with the means detached; out_d_real / out_d_fake = mean(real_d_pred) / mean(fake_d_pred),
   the last two calls'. */
static int esrgan_d_step(pf_gan *s, pf_gan_losses *L, char *err, size_t errlen) {
    size_t np = s->np;
    float *scratch = malloc(np * sizeof(float));
    if (!scratch) {
        snprintf(err, errlen, "gan: out of memory for ESRGANModel's discriminator step");
        return -1;
    }
    int rc = d_forward(s, s->y, err, errlen);
    double first_fake = rc ? 0 : mean_of(s->pred, np);
    if (!rc)
        rc = d_rel_pass(s, s->gt_f, first_fake, 1, 0, scratch, &L->l_d_real, &L->out_d_real,
                        err, errlen);
    if (!rc)
        rc = d_rel_pass(s, s->y, L->out_d_real, 0, 1, scratch, &L->l_d_fake, &L->out_d_fake,
                        err, errlen);
    free(scratch);
    return rc;
}

int pf_gan_compute(pf_gan *s, int64_t iter, const uint8_t *lq, const uint8_t *gt,
                   const uint8_t *gt_usm, int n, int lq_h, int lq_w, pf_gan_losses *L,
                   char *err, size_t errlen) {
    err[0] = 0;
    *L = (pf_gan_losses){ 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN };
    if (!gt_usm || s->o.model_type == PF_GAN_MODEL_ESRGAN) gt_usm = gt;   /* ESRGANModel: gt */
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
    if (s->o.model_type == PF_GAN_MODEL_ESRGAN) return esrgan_d_step(s, L, err, errlen);
    if (d_pass(s, s->o.gan_gt_usm ? s->usm_f : s->gt_f, 1, 0, &L->l_d_real, &L->out_d_real,
               err, errlen) ||
        d_pass(s, s->y, 0, 1, &L->l_d_fake, &L->out_d_fake, err, errlen))
        return -1;
    return 0;
}
