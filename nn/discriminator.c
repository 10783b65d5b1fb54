/*  discriminator — UNetDiscriminatorSN as a description, and spectral normalisation over the
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

int pf_net_build_unet_discriminator_sn(pf_net *g, int num_in_ch, int num_feat,
                                       int skip_connection, char *err, size_t errlen) {
    pf_net_init(g);
    const char *bad = num_in_ch != 3                      ? "num_in_ch 3 (3-channel images)"
                      : num_feat < 1 || num_feat > 1024   ? "num_feat in 1..1024"
                      : skip_connection != 0 && skip_connection != 1 ? "skip_connection 0 or 1"
                                                                     : NULL;
    if (bad) {
        snprintf(err, errlen, "UNetDiscriminatorSN needs %s (num_in_ch %d, num_feat %d, "
                 "skip_connection %d)", bad, num_in_ch, num_feat, skip_connection);
        return -1;
    }
    snprintf(g->type, sizeof g->type, "UNetDiscriminatorSN");
    g->scale = 1;
    g->use_mean = 0;            /* the image in [0, 1] as is */
    g->range = 1.0f;
    const int F = num_feat;
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, num_in_ch, 1, 1, 0);
    g->input = x;
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
    char why[256];
    if (g->oom || g->output < 0) {
        snprintf(err, errlen, "UNetDiscriminatorSN: out of memory building the network");
    } else if (pf_net_check_desc(g, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
    } else {
        return 0;
    }
    pf_net_free(g);
    return -1;
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
