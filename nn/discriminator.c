/*  discriminator — UNetDiscriminatorSN and VGGStyleDiscriminator as descriptions, and spectral normalisation over the
    flat buffers (see discriminator.h). */
#include "nn/discriminator.h"

#include <stdio.h>
#include <string.h>

#include "common/rng.h"

enum { SN_NONE = 0, SN_ON = 1 };
#define LRELU_SLOPE 0.2f        /* BasicSR's F.leaky_relu(negative_slope=0.2) */

/* Conv `name` on x: oc channels, k x k, stride, padding (k 3 p 1 / k 4 s 2 p 1), bias or not,
   spectral-normalised or not, LeakyReLU(0.2) when lrelu; PyTorch's default init. The output
   tensor is x's size / stride. Returns it (-1 when x is -1 or out of memory). */
static int dconv(pf_net *g, int x, const char *name, int oc, int k, int stride, int bias,
                 int sn, int lrelu) {
    if (x < 0) return -1;
    const pf_gtensor t = g->t[x];
    double fan = (double)t.c * k * k;
    pf_param_init ui = { PF_INIT_UNIFORM, fan, 1.0 };
    int ci = pf_net_add_conv_strided(g, name, t.c, oc, k, stride, 1, bias, ui, ui);
    if (ci < 0) return -1;
    pf_nconv *c = &g->conv[ci];
    c->act = lrelu;
    c->alpha = lrelu ? LRELU_SLOPE : 0.0f;
    c->sn = sn;
    if (sn) /* torch's spectral_norm keeps the trained tensor as weight_orig */
        snprintf(g->tensors[c->weight].name, sizeof g->tensors[c->weight].name,
                 "%s.weight_orig", name);
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div * stride, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

/* F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False): a PF_G_RESIZE to
   twice x's size (size 2 H, the same source coordinates (dst + 0.5) / 2 - 0.5). */
static int up2(pf_net *g, int x) {
    if (x < 0) return -1;
    const pf_gtensor t = g->t[x];
    int o = pf_net_node(g, PF_G_RESIZE, &x, 1, t.c, t.mul, t.div / 2, 0);
    if (o < 0) return -1;
    g->node[g->n_node - 1].ac = 0;
    g->node[g->n_node - 1].use_mul = 0;
    return o;
}

/* x + skip when skip_connection (PF_G_ADD, scale 1), else x. */
static int skip_add(pf_net *g, int x, int skip, int skip_connection) {
    if (!skip_connection || x < 0) return x;
    int in[2] = { x, skip };
    const pf_gtensor t = g->t[x];
    return pf_net_node(g, PF_G_ADD, in, 2, t.c, t.mul, t.div, 0);
}

/* What num_in_ch or num_feat must be when out of range, else NULL. */
static const char *args_bad(int num_in_ch, int num_feat) {
    return num_in_ch != 3                    ? "num_in_ch 3 (3-channel images)"
           : num_feat < 1 || num_feat > 1024 ? "num_feat in 1..1024"
                                             : NULL;
}

/* A discriminator's start: net initialised; with `bad` (the argument out of range) err "TYPE
   needs BAD (num_in_ch, num_feat, ARG)" and -1; else type TYPE, scale 1, the image in [0, 1]
   as is (no mean, range 1) and its input node, returned. */
static int d_begin(pf_net *g, const char *type, const char *bad, int num_in_ch, int num_feat,
                   const char *arg, int arg_value, char *err, size_t errlen) {
    pf_net_init(g);
    if (bad) {
        snprintf(err, errlen, "%s needs %s (num_in_ch %d, num_feat %d, %s %d)", type, bad,
                 num_in_ch, num_feat, arg, arg_value);
        return -1;
    }
    snprintf(g->type, sizeof g->type, "%s", type);
    g->scale = 1;
    g->use_mean = 0;
    g->range = 1.0f;
    g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, num_in_ch, 1, 1, 0);
    return g->input;
}

/* A discriminator's end: 0 when it was built and passes pf_net_check_desc; else -1 with err
   and net freed. */
static int d_finish(pf_net *g, char *err, size_t errlen) {
    char why[256];
    if (g->oom || g->output < 0) {
        snprintf(err, errlen, "%s: out of memory building the network", g->type);
    } else if (pf_net_check_desc(g, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
    } else {
        return 0;
    }
    pf_net_free(g);
    return -1;
}

int pf_net_build_unet_discriminator_sn(pf_net *g, int num_in_ch, int num_feat,
                                       int skip_connection, char *err, size_t errlen) {
    const char *bad = args_bad(num_in_ch, num_feat);
    if (!bad && skip_connection != 0 && skip_connection != 1) bad = "skip_connection 0 or 1";
    int x = d_begin(g, "UNetDiscriminatorSN", bad, num_in_ch, num_feat, "skip_connection",
                    skip_connection, err, errlen);
    if (bad) return -1;
    const int F = num_feat;
    int x0 = dconv(g, x, "conv0", F, 3, 1, 1, SN_NONE, 1);
    int x1 = dconv(g, x0, "conv1", 2 * F, 4, 2, 0, SN_ON, 1);
    int x2 = dconv(g, x1, "conv2", 4 * F, 4, 2, 0, SN_ON, 1);
    int x3 = dconv(g, x2, "conv3", 8 * F, 4, 2, 0, SN_ON, 1);
    int x4 = skip_add(g, dconv(g, up2(g, x3), "conv4", 4 * F, 3, 1, 0, SN_ON, 1), x2,
                      skip_connection);
    int x5 = skip_add(g, dconv(g, up2(g, x4), "conv5", 2 * F, 3, 1, 0, SN_ON, 1), x1,
                      skip_connection);
    int x6 = skip_add(g, dconv(g, up2(g, x5), "conv6", F, 3, 1, 0, SN_ON, 1), x0,
                      skip_connection);
    int o = dconv(g, x6, "conv7", F, 3, 1, 0, SN_ON, 1);
    o = dconv(g, o, "conv8", F, 3, 1, 0, SN_ON, 1);
    g->output = dconv(g, o, "conv9", 1, 3, 1, 1, SN_NONE, 0);
    return d_finish(g, err, errlen);
}

/* ---- VGGStyleDiscriminator --------------------------------------------------------------- */

/* LeakyReLU(0.2) as a node of its own (after a BatchNorm2d). */
static int lrelu_node(pf_net *g, int x) {
    if (x < 0) return -1;
    const pf_gtensor t = g->t[x];
    int o = pf_net_node(g, PF_G_RELU, &x, 1, t.c, t.mul, t.div, t.one);
    if (o >= 0) g->node[g->n_node - 1].alpha = LRELU_SLOPE;
    return o;
}

/* lrelu(bn_NAME(conv_NAME(x))): conv `conv` (no bias) then BatchNorm2d `bn`. */
static int conv_bn(pf_net *g, int x, int k, int y, int oc, int ksize, int stride) {
    char conv[16], bn[16];
    snprintf(conv, sizeof conv, "conv%d_%d", k, y);
    snprintf(bn, sizeof bn, "bn%d_%d", k, y);
    return lrelu_node(g, pf_net_add_batchnorm(g, bn, dconv(g, x, conv, oc, ksize, stride, 0,
                                                           SN_NONE, 0)));
}

int pf_net_build_vgg_style_discriminator(pf_net *g, int num_in_ch, int num_feat,
                                         int input_size, char *err, size_t errlen) {
    const char *bad = args_bad(num_in_ch, num_feat);
    if (!bad && input_size != 128 && input_size != 256) bad = "input_size 128 or 256";
    int x = d_begin(g, "VGGStyleDiscriminator", bad, num_in_ch, num_feat, "input_size",
                    input_size, err, errlen);
    if (bad) return -1;
    const int F = num_feat, levels = input_size == 256 ? 6 : 5;
    x = dconv(g, x, "conv0_0", F, 3, 1, 1, SN_NONE, 1);
    x = conv_bn(g, x, 0, 1, F, 4, 2);
    for (int k = 1, c = F; k < levels; k++) {
        int oc = k < 4 ? 2 * c : c;     /* F -> 2F -> 4F -> 8F, then 8F */
        x = conv_bn(g, x, k, 0, oc, 3, 1);
        x = conv_bn(g, x, k, 1, oc, 4, 2);
        c = oc;
    }
    x = lrelu_node(g, pf_net_add_linear(g, "linear1", x, F * 8 * 4 * 4, 100));
    g->output = pf_net_add_linear(g, "linear2", x, 100, 1);
    return d_finish(g, err, errlen);
}

/* ---- spectral normalisation over the flat buffers ------------------------------------------ */

int pf_disc_sn_count(const pf_net *g) {
    int n = 0;
    for (int i = 0; i < g->n_convs; i++) n += g->conv[i].sn != 0;
    return n;
}

size_t pf_disc_sn_numel(const pf_net *g) {
    size_t n = 0;
    for (int i = 0; i < g->n_convs; i++)
        if (g->conv[i].sn)
            n += (size_t)g->conv[i].oc + (size_t)g->conv[i].ic * g->conv[i].k * g->conv[i].k;
    return n;
}

int pf_disc_sn_at(const pf_net *g, int j, size_t *u_offset, size_t *v_offset) {
    size_t at = 0;
    for (int i = 0; i < g->n_convs; i++) {
        const pf_nconv *c = &g->conv[i];
        if (!c->sn) continue;
        if (j-- == 0) {
            *u_offset = at;
            *v_offset = at + (size_t)c->oc;
            return i;
        }
        at += (size_t)c->oc + (size_t)c->ic * c->k * c->k;
    }
    return -1;
}

void pf_disc_sn_layers(const pf_net *g, float *state, pf_spectral_norm *sn) {
    size_t u, v;
    for (int j = 0, i; (i = pf_disc_sn_at(g, j, &u, &v)) >= 0; j++) {
        const pf_nconv *c = &g->conv[i];
        sn[j] = pf_spectral_norm_layer(c->oc, c->ic, c->k, state + u, state + v);
    }
}

void pf_disc_sn_init(const pf_net *g, pf_spectral_norm *sn, uint64_t seed) {
    int n = pf_disc_sn_count(g);
    for (int j = 0; j < n; j++) {
        pf_rng r = pf_rng_make(seed, (uint64_t)j, 1);
        pf_spectral_norm_init_uv(&sn[j], &r);
    }
}

void pf_disc_sn_forward(const pf_net *g, pf_spectral_norm *sn, const float *params,
                        int training, float *eff) {
    memcpy(eff, params, g->n_params * sizeof *eff);
    size_t u, v;
    for (int j = 0, i; (i = pf_disc_sn_at(g, j, &u, &v)) >= 0; j++) {
        size_t off = g->tensors[g->conv[i].weight].offset;
        pf_spectral_norm_forward(&sn[j], params + off, training, eff + off);
    }
}

void pf_disc_sn_backward(const pf_net *g, const pf_spectral_norm *sn, const float *params,
                         float *grads) {
    size_t u, v;
    for (int j = 0, i; (i = pf_disc_sn_at(g, j, &u, &v)) >= 0; j++) {
        size_t off = g->tensors[g->conv[i].weight].offset;
        pf_spectral_norm_backward(&sn[j], params + off, grads + off, grads + off);
    }
}
