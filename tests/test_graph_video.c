/*  test_graph_video — the video nodes of nn/net.h on the CPU executor (nn/cpu/graph_cpu.c): channel
    slice, per-channel affine, bilinear resize (both align_corners, a flow's size-ratio
    factors), 2 x 2 average pooling, flow warp (zeros and border padding), a tensor of zeros,
    a tensor whose size is the LQ size rounded up (pf_gtensor.round), one convolution's weights
    used by two layers (their gradients added), and a 3 T-channel input of T frames and a
    3 T-channel output; and 2 x 2 max pooling (PF_G_MAXPOOL2, not a video node: VGG's).

    - "mini" (tests/reference/graph_video_ref.py: every one of those in one network, built
      here by hand with pf_net_* calls): the output and every weight's gradient against
      PyTorch 1.13 (tests/data/graph_video.safetensors), element by element;
    - the same network with weights from pf_net_init_params and two more (a warp by a flow
      that a convolution computes and an affine map scales, with both paddings; pooling and a
      slice across channel blocks on a 20-channel map, both needing gradients): every weight
      tensor's gradient against central finite differences of the loss sum(out * gout) along a
      random +-1 direction (as test_nn_gradcheck), the shared weight included;
    - all of it with oneDNN's own layout choice and with every activation forced to NCHW,
      nChw8c, nChw16c and NHWC (nn/cpu/dnnl_ctx.h), so the nodes meet every layout the
      convolutions can give them; two backward passes give the same gradients bit for bit;
    - max pooling through the executor by finite differences ("maxpool"), and its kernels
      against a naive loop on inputs full of ties and a NaN (the gradient to the first maximum
      in row-major order, as PyTorch);
    - ReLU and LeakyReLU nodes (PF_G_RELU) through the executor by finite differences
      ("relu"), and their kernels against the formula at the kink (x = 0) and off it;
    - strided convolutions (pf_net_add_conv_strided: k 3 and k 4, stride 2, padding 1, with and
      without bias, as BasicSR's discriminators) between stride-1 ones ("strided"): every
      weight and bias gradient by finite differences in every layout (a strided layer's input
      gradient through the weights of the layer before it), a description whose output tensor
      does not match the stride refused; with `torch` (ctest test_graph_video.torch, 77
      without /usr/bin/python3 and torch) output and every gradient against
      torch.nn.functional.conv2d (tests/reference/conv_stride_ref.py) in every layout;
    - EDVR's TSA-fusion ops (PF_G_MUL with a 1-channel factor and with a residual, PF_G_CHSUM,
      PF_G_MAXPOOL3, PF_G_AVGPOOL3) in one network ("tsa"): finite differences in every
      layout, and f + 0.5 f f as one PF_G_MUL ("tsa square": the residual's gradient passed
      before the product's read dy overwritten, 4 % off: checked), their kernels against naive loops (check_tsa_kernels: every pair of blocks,
      pooling ties, a NaN and all-negative border windows), a factor of another channel count
      refused; with `torch` the output and every gradient against torch float64 autograd
      (tests/reference/tsa_ops_ref.py) within 1e-5 of each tensor's largest value. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/safetensors.h"
#include "nn/graph.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/cpu/ops.h"
#include "nn/net.h"
#include "nn/video_layers.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

enum { N = 2, T = 2, H = 6, W = 7 };

/* ---- building ------------------------------------------------------------------------- */

/* A 3 x 3 convolution node on x (oc channels, LeakyReLU slope act >= 0 or none with act < 0):
   its own tensors `name`.weight / .bias, or, with shared >= 0, the weight tensor of another
   layer (a layer of its own naming that tensor: shared weights). */
static int conv(pf_net *g, int x, const char *name, int oc, float act, int shared) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    double fan = (double)t.c * 9;
    pf_param_init ui = { PF_INIT_UNIFORM, fan, 1.0 };
    int ci = shared >= 0 ? pf_net_add_layer(g, name, t.c, oc, 3, shared)
                         : pf_net_add_conv(g, name, t.c, oc, 3, ui, ui);
    if (ci < 0) return -1;
    if (act >= 0) {
        g->conv[ci].act = 1;
        g->conv[ci].alpha = act;
    }
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div, t.one);
    if (out < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node - 1];
    nd->conv = ci;
    nd->param = g->conv[ci].weight;
    pf_net_round(g, out, t.round);
    return out;
}

/* A k x k, stride-2, padding-1 convolution node on x (oc channels, bias or none, LeakyReLU
   slope act >= 0 or none with act < 0): output half of x's size. */
static int strided(pf_net *g, int x, const char *name, int oc, int k, int bias, float act) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    double fan = (double)t.c * k * k;
    pf_param_init ui = { PF_INIT_UNIFORM, fan, 1.0 };
    int ci = pf_net_add_conv_strided(g, name, t.c, oc, k, 2, 1, bias, ui, ui);
    if (ci < 0) return -1;
    if (act >= 0) {
        g->conv[ci].act = 1;
        g->conv[ci].alpha = act;
    }
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, t.mul, t.div * 2, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    return out;
}

/* A parameter-free node of op on in (n_in tensors): c channels, size of `like` times mul /
   div, rounded as `like`. Returns the output; *nd the node (for its fields). */
static int node(pf_net *g, pf_gop op, const int *in, int n_in, int c, int like, int mul,
                int div, pf_gnode **nd) {
    pf_gtensor t = g->t[like];
    int out = pf_net_node(g, op, in, n_in, c, t.mul * mul, t.div * div, 0);
    if (out < 0) return -1;
    *nd = &g->node[g->n_node - 1];
    return pf_net_round(g, out, t.round);
}

static int slice(pf_net *g, int x, int c0, int c) {
    pf_gnode *nd;
    int o = node(g, PF_G_SLICE, &x, 1, c, x, 1, 1, &nd);
    if (o >= 0) nd->c0 = c0;
    return o;
}

static int affine(pf_net *g, int x, const float *sub, const float *mul) {
    pf_gnode *nd;
    int c = g->t[x].c, o = node(g, PF_G_AFFINE, &x, 1, c, x, 1, 1, &nd);
    for (int k = 0; o >= 0 && k < c; k++) {
        nd->sub[k] = sub ? sub[k] : 0.0f;
        nd->mul[k] = mul[k];
    }
    return o;
}

/* Resize x to a tensor of (mul, div, round) of the LQ size. */
static int resize(pf_net *g, int x, int mul, int div, int round, int ac, int use_mul) {
    int c = g->t[x].c, o = pf_net_node(g, PF_G_RESIZE, &x, 1, c, mul, div, 0);
    if (o < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node - 1];
    nd->ac = ac;
    nd->use_mul = use_mul;
    return pf_net_round(g, o, round);
}

static int warp(pf_net *g, int x, int flow, pf_pad_mode pad) {
    pf_gnode *nd;
    int in[2] = { x, flow }, o = node(g, PF_G_WARP, in, 2, g->t[x].c, x, 1, 1, &nd);
    if (o >= 0) nd->pad = pad;
    return o;
}

/* tests/reference/graph_video_ref.py's network (see there), LQ any size, rounded to 8. */
static void build_mini(pf_net *g) {
    static const float mean[3] = { 0.485f, 0.456f, 0.406f };
    static const float inv_std[3] = { 1 / 0.229f, 1 / 0.224f, 1 / 0.225f };
    static const float flow_mul[2] = { 2.5f, 2.0f };
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "mini");
    pf_gnode *nd;
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3 * T, 1, 1, 0);
    g->input = x;
    int f0 = slice(g, x, 0, 3), f1 = slice(g, x, 3, 3);
    int p[2], fr[2] = { f0, f1 };
    for (int i = 0; i < 2; i++) {
        /* SPyNet's (x - mean) / std as (x - mean) * (1 / std): 1 ulp from PyTorch's */
        int nrm = affine(g, fr[i], mean, inv_std);
        int r = resize(g, nrm, 1, 1, 8, 0, 0);
        p[i] = node(g, PF_G_AVGPOOL2, &r, 1, 3, r, 1, 2, &nd);
    }
    int z = pf_net_round(g, pf_net_node(g, PF_G_ZERO, NULL, 0, 2, 1, 2, 0), 8);
    int cat[3] = { p[0], warp(g, p[1], z, PF_PAD_BORDER), z };
    int c = node(g, PF_G_CONCAT, cat, 3, 8, p[0], 1, 1, &nd);
    int fl = conv(g, conv(g, c, "flow.0", 8, 0.0f, -1), "flow.1", 2, -1, -1);
    int fu = resize(g, fl, 1, 1, 8, 1, 2);
    int fw = resize(g, fu, 1, 1, 0, 0, 2);
    int fb = affine(g, fw, NULL, flow_mul);
    int feat = conv(g, f0, "feat", 4, 0.1f, -1);
    int wf = warp(g, feat, fb, PF_PAD_ZEROS);
    int s1 = conv(g, wf, "body", 4, -1, -1);
    int body_w = g->conv[g->n_convs - 1].weight;
    int add_in[2] = { s1, feat };
    int a = node(g, PF_G_ADD, add_in, 2, 4, s1, 1, 1, &nd);
    int s2 = conv(g, a, "body.again", 4, -1, body_w);
    g->output = conv(g, s2, "last", 3 * T, -1, -1);
}

/* A warp by a flow a convolution computes, scaled up (samples leave the image), in the given
   padding; 3-channel output. */
static void build_warp(pf_net *g, pf_pad_mode pad) {
    static const float big[2] = { 3.0f, -2.5f };
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "warp");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int feat = conv(g, x, "feat", 5, 0.1f, -1);
    int flow = affine(g, conv(g, x, "flow", 2, -1, -1), NULL, big);
    g->output = conv(g, warp(g, feat, flow, pad), "last", 3, -1, -1);
}

/* A 20-channel map (two blocks of 16, three of 8): channels 5..16 sliced, pooled, resized
   back up with align_corners (x2) and down to half without (the output at LQ / 2). */
static void build_pool(pf_net *g) {
    pf_gnode *nd;
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "pool");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int f = conv(g, x, "wide", 20, -1, -1);
    int s = slice(g, f, 5, 12);
    int p = node(g, PF_G_AVGPOOL2, &s, 1, 12, s, 1, 2, &nd);
    int u = resize(g, conv(g, p, "mid", 4, -1, -1), 1, 1, 0, 1, 0);
    int d = resize(g, u, 1, 2, 0, 0, 0);
    g->output = conv(g, d, "last", 3, -1, -1);
}

/* 2 x 2 max pooling (PF_G_MAXPOOL2, nn.MaxPool2d(2)) on a 20-channel map (two blocks of 16,
   three of 8), convolved at half the size (the output at LQ / 2). Its kinks (a window's
   argmax moving under the perturbation) leave the finite differences up to 1.4 % off here
   (measured, every layout), inside grad_check's 2 %; the kernels' exact values are
   check_maxpool_kernels's. */
static void build_maxpool(pf_net *g) {
    pf_gnode *nd;
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "maxpool");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int f = conv(g, x, "wide", 20, -1, -1);
    int p = node(g, PF_G_MAXPOOL2, &f, 1, 20, f, 1, 2, &nd);
    g->output = conv(g, p, "last", 3, -1, -1);
}

/* PF_G_RELU nodes (nn.ReLU, then nn.LeakyReLU(0.2)) after convolutions without a fused
   activation, as VGG's pre-ReLU features need them: a 20-channel map (padded blocks), ReLU,
   conv to 8, LeakyReLU, conv to 3. */
static int relu(pf_net *g, int x, float alpha) {
    pf_gnode *nd;
    int o = x < 0 ? -1 : node(g, PF_G_RELU, &x, 1, g->t[x].c, x, 1, 1, &nd);
    if (o >= 0) nd->alpha = alpha;
    return o;
}

static void build_relu(pf_net *g) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "relu");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int f = relu(g, conv(g, x, "wide", 20, -1, -1), 0.0f);
    int m = relu(g, conv(g, f, "mid", 8, -1, -1), 0.2f);
    g->output = conv(g, m, "last", 3, -1, -1);
}

/* A modulated deformable convolution (PF_G_DCN) fed as BasicSR's DCNv2Pack feeds it: offsets
   and a sigmoid mask from convolutions of its input. `dcn` (stride 1, groups 2, deform_groups
   2, bias) and `dcn_s2` (stride 2, deform_groups 2, no bias; its offset and mask from stride-2
   convolutions); LQ a multiple of 2. Sampling is piecewise bilinear in the offsets, as the
   warp: with deform_groups 4 at stride 2 (twice the offsets) the e = 1e-4 step moved a sample
   across a pixel edge and dcn_s2_offset.weight's quotient came out 10 % off, the same in every
   layout (measured: 4 % at e = 1e-3, 0.8 % at e = 3e-5, so the step, not the gradient); the
   layer's own test (tests/test_dcn.c) checks 4 deform groups at stride 2 where
   the sampling is smooth, and against torchvision. */
static int dcn_block(pf_net *g, int f, const char *name, int oc, int stride, int groups, int dg,
                     int bias) {
    char nm[96];
    snprintf(nm, sizeof nm, "%s_offset", name);
    int off = stride > 1 ? strided(g, f, nm, 2 * dg * 9, 3, 1, -1)
                         : conv(g, f, nm, 2 * dg * 9, -1, -1);
    snprintf(nm, sizeof nm, "%s_mask", name);
    int m = stride > 1 ? strided(g, f, nm, dg * 9, 3, 1, -1) : conv(g, f, nm, dg * 9, -1, -1);
    m = m < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &m, 1, dg * 9, g->t[m].mul, g->t[m].div, 0);
    return pf_net_add_dcn(g, name, f, off, m, g->t[f].c, oc, 3, stride, 1, 1, groups, dg, bias);
}

static void build_dcn_net(pf_net *g, int stride, int groups, int dg, int bias) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "dcn");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int f = conv(g, x, "feat", 8, -1, -1);
    g->output = dcn_block(g, f, stride > 1 ? "dcn_s2" : "dcn", 4, stride, groups, dg, bias);
}

static void build_dcn(pf_net *g) { build_dcn_net(g, 1, 2, 2, 1); }
static void build_dcn_s2(pf_net *g) { build_dcn_net(g, 2, 1, 2, 0); }

/* EDVR's TSA-fusion ops (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3) in one small
   network, tests/reference/tsa_ops_ref.py's (the formulas there): a 20-channel feature map
   (padded blocks of 8 and 16), the correlation torch.sum(emb * emb_ref, 1) through a sigmoid
   multiplied into the features (a 1-channel factor broadcast over 20), 3 x 3 max and average
   pooling (stride 2, padding 1) concatenated, and the attention form feat * attn * 2 +
   attn_add (a multiply of equal channel counts with a residual); the output at LQ / 2 (LQ
   even). `half` has no activation: with a LeakyReLU there, its kink moved enough
   pre-activations across 0 under the e = 1e-4 step that half.weight's quotient came out 10 %
   off in every layout, the analytic value the same in all of them (measured); without it,
   0.8 % at worst. */
static void build_tsa(pf_net *g) {
    pf_gnode *nd;
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "tsa");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int feat = conv(g, x, "feat", 20, 0.1f, -1);
    int emb = conv(g, feat, "emb", 20, -1, -1), ref = conv(g, feat, "emb_ref", 20, -1, -1);
    int corr = pf_net_add_chsum(g, pf_net_add_mul(g, emb, ref, -1, 1.0f));
    int prob = corr < 0 ? -1 : node(g, PF_G_SIGMOID, &corr, 1, 1, corr, 1, 1, &nd);
    int att = conv(g, pf_net_add_mul(g, feat, prob, -1, 1.0f), "att", 20, 0.1f, -1);
    int pools[2] = { pf_net_add_pool3(g, att, 1), pf_net_add_pool3(g, att, 0) };
    int cat = pools[0] < 0 || pools[1] < 0 ? -1
                                           : node(g, PF_G_CONCAT, pools, 2, 40, pools[0], 1, 1,
                                                  &nd);
    int half = conv(g, cat, "half", 20, -1, -1);
    int gate = conv(g, half, "gate", 20, -1, -1);
    gate = gate < 0 ? -1 : node(g, PF_G_SIGMOID, &gate, 1, 20, gate, 1, 1, &nd);
    int add = conv(g, half, "att_add", 20, -1, -1);
    g->output = conv(g, pf_net_add_mul(g, half, gate, add, 2.0f), "last", 3, -1, -1);
}

/* A network `type` begun: its 3-channel input and a 20-channel `feat` convolution of it
   (returned). */
static int feat_head(pf_net *g, const char *type) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "%s", type);
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    return conv(g, x, "feat", 20, -1, -1);
}

/* PF_G_MUL with one tensor as both factors and the residual (f + 0.5 f f): three gradient
   contributions into one buffer, the residual's after the product's. */
static void build_square(pf_net *g) {
    int f = feat_head(g, "square");
    g->output = conv(g, pf_net_add_mul(g, f, f, f, 0.5f), "last", 3, -1, -1);
}

/* PF_G_MUL_CH with its factor x as the residual too (f + 4 f sigmoid(att(mean f)), RCAN's
   attention form with x for the identity): the scales' gradient must read dy before the
   residual's share of it is passed on (were dy handed to f first, dx would be dy's own buffer
   and the scales would read dy + dx). */
static void build_ca_square(pf_net *g) {
    int f = feat_head(g, "ca square");
    int p = f < 0 ? -1 : pf_net_node(g, PF_G_GAP, &f, 1, 20, 1, 1, 1);
    int a = conv(g, p, "att", 20, -1, -1);  /* its gradients come through the scales' alone */
    int s = a < 0 ? -1 : pf_net_node(g, PF_G_SIGMOID, &a, 1, 20, 1, 1, 1);
    int in[3] = { f, s, f };
    int y = s < 0 ? -1 : pf_net_node(g, PF_G_MUL_CH, in, 3, 20, 1, 1, 0);
    if (y >= 0) g->node[g->n_node - 1].scale = 4.0f;
    g->output = conv(g, y, "last", 3, -1, -1);
}

/* tests/reference/conv_stride_ref.py's network (see there): four stride-2 layers (k 3 with
   bias, k 4 without and LeakyReLU, k 3 without, k 4 with) between stride-1 `head` and `tail`;
   LQ a multiple of 16. */
static void build_strided(pf_net *g) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "strided");
    int x = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g->input = x;
    int y = conv(g, x, "head", 6, 0.2f, -1);
    y = strided(g, y, "down3b", 8, 3, 1, -1);
    y = strided(g, y, "down4", 8, 4, 0, 0.2f);
    y = strided(g, y, "down3", 8, 3, 0, -1);
    y = strided(g, y, "down4b", 8, 4, 1, -1);
    g->output = conv(g, y, "tail", 3, -1, -1);
}

/* ---- running -------------------------------------------------------------------------- */

typedef struct {
    pf_net *g;
    pf_dnnl dnnl;
    pf_conv *convs;
    float *params, *grads;
    pf_gctx x;
    pf_gstate *S;
    int n, h, w;
    size_t out_numel;               /* NCHW floats of the output */
    int oc, oh, ow;
} run_t;

static int run_open(run_t *r, pf_net *g, pf_layout layout, int n, int h, int w) {
    char err[512];
    memset(r, 0, sizeof *r);
    r->g = g;
    r->n = n;
    r->h = h;
    r->w = w;
    if (pf_dnnl_init(&r->dnnl, err, sizeof err)) {
        CHECK(0, "dnnl: %s", err);
        return -1;
    }
    r->dnnl.force_layout = layout;
    r->convs = calloc((size_t)g->n_convs + 1, sizeof *r->convs);
    r->params = calloc(g->n_params + 1, sizeof(float));
    r->grads = calloc(g->n_params + 1, sizeof(float));
    for (int i = 0; i < g->n_convs; i++) pf_graph_conv_init(g, i, &r->convs[i]);
    r->x = (pf_gctx){ .net = g, .dnnl = &r->dnnl, .convs = r->convs, .params = r->params,
                      .grads = r->grads };
    if (pf_graph_plan(&r->x, &r->S, n, h, w, 1, err, sizeof err)) {
        CHECK(0, "%s: plan: %s", g->type, err);
        return -1;
    }
    int b;
    pf_gstate_out(r->S, &b);
    const pf_gtensor *t = &g->t[g->output];
    r->oc = t->c;
    r->oh = h * t->mul / t->div;
    r->ow = w * t->mul / t->div;
    r->out_numel = (size_t)n * r->oc * r->oh * r->ow;
    return 0;
}

static void run_close(run_t *r) {
    pf_gstate_free(&r->S);
    for (int i = 0; r->convs && i < r->g->n_convs; i++) pf_conv_free(&r->convs[i]);
    free(r->convs);
    free(r->params);
    free(r->grads);
    pf_dnnl_free(&r->dnnl);
}

/* Forward of lq; the output into out (NCHW). */
static int run_forward(run_t *r, const uint8_t *lq, float *out) {
    char err[512];
    const pf_net *g = r->g;
    for (int i = 0; i < g->n_convs; i++) {
        const pf_param_info *wt = &g->tensors[g->conv[i].weight];
        int bi = pf_net_conv_bias(g, i);
        if (pf_conv_set_weights(&r->convs[i], r->params + wt->offset,
                                bi >= 0 ? r->params + g->tensors[bi].offset : NULL, err,
                                sizeof err)) {
            CHECK(0, "%s: %s", g->type, err);
            return -1;
        }
    }
    if (pf_graph_forward(&r->x, r->S, lq, err, sizeof err)) {
        CHECK(0, "%s: forward: %s", g->type, err);
        return -1;
    }
    int b;
    const float *y = pf_gstate_out(r->S, &b);
    for (int a = 0; a < r->n; a++)
        for (int c = 0; c < r->oc; c++)
            for (int yy = 0; yy < r->oh; yy++)
                for (int xx = 0; xx < r->ow; xx++)
                    out[((a * r->oc + c) * r->oh + yy) * r->ow + xx] =
                        y[pf_blk_off(a, c, yy, xx, r->oc, r->oh, r->ow, b)];
    return 0;
}

/* sum(out * gout) in double. */
static double loss_of(const float *out, const float *gout, size_t numel) {
    double s = 0;
    for (size_t i = 0; i < numel; i++) s += (double)out[i] * gout[i];
    return s;
}

/* Forward, then backward from d loss / d out = gout (NCHW) into r->grads. */
static int run_backward(run_t *r, const uint8_t *lq, const float *gout, float *out) {
    char err[512];
    if (run_forward(r, lq, out)) return -1;
    int b;
    pf_gstate_out(r->S, &b);
    float *dy = pf_gstate_dout(r->S);
    memset(dy, 0, pf_blk_numel(r->n, r->oc, r->oh, r->ow, b) * sizeof(float));
    for (int a = 0; a < r->n; a++)
        for (int c = 0; c < r->oc; c++)
            for (int yy = 0; yy < r->oh; yy++)
                for (int xx = 0; xx < r->ow; xx++)
                    dy[pf_blk_off(a, c, yy, xx, r->oc, r->oh, r->ow, b)] =
                        gout[((a * r->oc + c) * r->oh + yy) * r->ow + xx];
    if (pf_graph_backward(&r->x, r->S, err, sizeof err)) {
        CHECK(0, "%s: backward: %s", r->g->type, err);
        return -1;
    }
    return 0;
}

static const char *layout_name(pf_layout l) {
    return l == PF_LAYOUT_ANY ? "any" : l == PF_LAYOUT_NCHW ? "nchw" : l == PF_LAYOUT_NCHW8C
           ? "nChw8c" : l == PF_LAYOUT_NCHW16C ? "nChw16c" : "nhwc";
}

/* Per weight tensor: the analytic directional derivative along a random +-1 direction against
   the central difference of the loss, within 2 % of the larger of the two and the gradient's
   L2 norm (the size of a typical directional derivative: a direction along which the terms
   cancel is not held to a tighter bound than float rounding allows). e = 1e-4: the warp is
   piecewise bilinear in the sample position, so a perturbation that moves a flow across a
   whole pixel makes the quotient wrong in proportion to e (1e-3: 5-20 % off on flow weights,
   1e-4: 0.5 % at worst here, measured). Also: a second backward gives the same gradients
   bit for bit. Returns the worst relative difference. */
static double grad_check(run_t *r, const char *label, const uint8_t *lq, const float *gout) {
    const pf_net *g = r->g;
    float *out = malloc(r->out_numel * sizeof(float));
    float *an = malloc(g->n_params * sizeof(float)), *saved = malloc(g->n_params * sizeof(float));
    double worst = 0;
    if (run_backward(r, lq, gout, out)) goto done;
    memcpy(an, r->grads, g->n_params * sizeof(float));
    if (run_backward(r, lq, gout, out)) goto done;
    CHECK(!memcmp(an, r->grads, g->n_params * sizeof(float)),
          "%s: a second backward gives other gradients", label);
    memcpy(saved, r->params, g->n_params * sizeof(float));
    pf_rng rng = pf_rng_make(3, 1, 4);
    const double e = 1e-4;
    int bad = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pf_param_info *ti = &g->tensors[t];
        float *v = malloc(ti->numel * sizeof(float));
        double an_dir = 0, norm = 0;
        for (size_t j = 0; j < ti->numel; j++) {
            v[j] = pf_rng_below(&rng, 2) ? 1.0f : -1.0f;
            an_dir += (double)v[j] * an[ti->offset + j];
            norm += (double)an[ti->offset + j] * an[ti->offset + j];
        }
        norm = sqrt(norm);
        double l[2];
        for (int side = 0; side < 2; side++) {
            for (size_t j = 0; j < ti->numel; j++)
                r->params[ti->offset + j] = saved[ti->offset + j] + (float)(side ? -e : e) * v[j];
            if (run_forward(r, lq, out)) goto done;
            l[side] = loss_of(out, gout, r->out_numel);
        }
        memcpy(r->params + ti->offset, saved + ti->offset, ti->numel * sizeof(float));
        free(v);
        double fd = (l[0] - l[1]) / (2 * e), diff = fabs(fd - an_dir);
        double scale = fmax(fmax(fabs(fd), fabs(an_dir)), norm);
        double rel = diff / fmax(scale, 1e-12);
        if (rel > worst) worst = rel;
        if (diff > 2e-2 * scale + 1e-6) {
            bad++;
            fprintf(stderr, "%s: %s: analytic %.7g, finite difference %.7g\n", label, ti->name,
                    an_dir, fd);
        }
    }
    CHECK(bad == 0, "%s: %d of %d tensors' gradients disagree with finite differences", label,
          bad, g->n_tensors);
done:
    free(out);
    free(an);
    free(saved);
    return worst;
}

static void random_inputs(pf_rng *rng, uint8_t *lq, size_t nlq, float *gout, size_t nout) {
    for (size_t i = 0; i < nlq; i++) lq[i] = (uint8_t)pf_rng_below(rng, 256);
    for (size_t i = 0; i < nout; i++) gout[i] = (float)(2 * pf_rng_uniform(rng) - 1);
}

/* Finite differences of net (built by build) with seeded weights, LQ n x h x w x (3 T). */
static void check_fd(const char *what, void (*build)(pf_net *), pf_layout layout, int frames,
                     int n, int h, int w) {
    pf_net g;
    build(&g);
    run_t r;
    char label[96];
    snprintf(label, sizeof label, "%s (%s)", what, layout_name(layout));
    if (run_open(&r, &g, layout, n, h, w) == 0) {
        pf_net_init_params(&g, r.params, 11);
        pf_rng rng = pf_rng_make(9, 2, 6);
        size_t nlq = (size_t)n * frames * h * w * 3;
        uint8_t *lq = malloc(nlq);
        float *gout = malloc(r.out_numel * sizeof(float));
        random_inputs(&rng, lq, nlq, gout, r.out_numel);
        double worst = grad_check(&r, label, lq, gout);
        printf("%s: finite differences, %d tensors, worst relative difference %.2g\n", label,
               g.n_tensors, worst);
        free(lq);
        free(gout);
    }
    run_close(&r);
    pf_net_free(&g);
}

static void build_warp_zeros(pf_net *g) { build_warp(g, PF_PAD_ZEROS); }
static void build_warp_border(pf_net *g) { build_warp(g, PF_PAD_BORDER); }

/* max |got - want| / max(max |want|, 1e-30) */
static double rel_err(const float *got, const float *want, size_t n) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst / scale;
}

/* A network (built by build, LQ n x h x w x (3 frames)) against PyTorch's numbers in ref:
   output (within 1e-5 of its largest value) and every weight's gradient (within grad_tol of
   the tensor's largest). */
static void check_parity(pf_safetensors *ref, void (*build)(pf_net *), pf_layout layout,
                         int frames, int n, int h, int w, double grad_tol) {
    pf_net g;
    build(&g);
    run_t r;
    int ndim;
    int64_t shape[8];
    uint8_t *lq = malloc((size_t)n * frames * h * w * 3);
    if (lq && run_open(&r, &g, layout, n, h, w) == 0) {
        const float *lqf = pf_safetensors_get(ref, "lq", &ndim, shape);
        const float *gout = pf_safetensors_get(ref, "gout", &ndim, shape);
        const float *want = pf_safetensors_get(ref, "out", &ndim, shape);
        CHECK(lqf && gout && want, "%s: lq, gout or out missing", pf_safetensors_name(ref));
        if (!lqf || !gout || !want) goto done;
        CHECK((size_t)(shape[0] * shape[1] * shape[2] * shape[3]) == r.out_numel,
              "reference output of another shape");
        for (int i = 0; i < n * frames * h * w * 3; i++) lq[i] = (uint8_t)lqf[i];
        for (int t = 0; t < g.n_tensors; t++) {
            const pf_param_info *ti = &g.tensors[t];
            const float *p = pf_safetensors_get(ref, ti->name, &ndim, shape);
            CHECK(p != NULL, "%s: no %s", pf_safetensors_name(ref), ti->name);
            if (!p) goto done;
            memcpy(r.params + ti->offset, p, ti->numel * sizeof(float));
        }
        float *out = malloc(r.out_numel * sizeof(float));
        if (run_backward(&r, lq, gout, out) == 0) {
            double e_out = rel_err(out, want, r.out_numel), e_grad = 0;
            CHECK(e_out < 1e-5, "%s (%s): output %.3g from PyTorch's (relative to its max)",
                  g.type, layout_name(layout), e_out);
            for (int t = 0; t < g.n_tensors; t++) {
                const pf_param_info *ti = &g.tensors[t];
                char name[128];
                snprintf(name, sizeof name, "grad.%s", ti->name);
                const float *gw = pf_safetensors_get(ref, name, &ndim, shape);
                CHECK(gw != NULL, "%s: no %s", pf_safetensors_name(ref), name);
                if (!gw) continue;
                double e = rel_err(r.grads + ti->offset, gw, ti->numel);
                CHECK(e < grad_tol, "%s (%s): d %s %.3g from PyTorch's", g.type,
                      layout_name(layout), ti->name, e);
                e_grad = fmax(e_grad, e);
            }
            printf("%s (%s): PyTorch parity, output max error %.2g, gradients %.2g (relative "
                   "to each tensor's max)\n", g.type, layout_name(layout), e_out, e_grad);
        }
        free(out);
    }
done:
    if (lq) run_close(&r);
    free(lq);
    pf_net_free(&g);
}

/* The max pooling kernels (nn/cpu/ops.h) on their own against a naive loop, in NCHW and in
   blocks of 8 and 16 (20 channels: padded blocks): inputs of small integers, so that most
   windows hold ties (forward the max; backward the whole gradient to the first maximum in
   row-major order, PyTorch's rule, 0 to the other three), one window with a NaN (it wins),
   backward overwriting and adding. */
static void check_maxpool_kernels(void) {
    enum { PN = 2, PC = 20, PH = 6, PW = 8 };
    static const int blocks[] = { 1, 8, 16 };
    pf_rng rng = pf_rng_make(5, 3, 1);
    for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
        int b = blocks[bi];
        size_t nx = pf_blk_numel(PN, PC, PH, PW, b), ny = pf_blk_numel(PN, PC, PH / 2, PW / 2, b);
        float *x = calloc(nx, sizeof *x), *y = calloc(ny, sizeof *y), *dy = calloc(ny, sizeof *dy);
        float *dx = calloc(nx, sizeof *dx);
        for (int n = 0; n < PN; n++)
            for (int c = 0; c < PC; c++)
                for (int i = 0; i < PH; i++)
                    for (int j = 0; j < PW; j++)
                        x[pf_blk_off(n, c, i, j, PC, PH, PW, b)] = (float)pf_rng_below(&rng, 3);
        x[pf_blk_off(1, 7, 3, 2, PC, PH, PW, b)] = NAN;
        for (int n = 0; n < PN; n++)
            for (int c = 0; c < PC; c++)
                for (int i = 0; i < PH / 2; i++)
                    for (int j = 0; j < PW / 2; j++)
                        dy[pf_blk_off(n, c, i, j, PC, PH / 2, PW / 2, b)] = (float)(1 + i * 7 + j);
        pf_cpu_maxpool2_forward(y, x, PN, PC, PH, PW, b, b);
        int bad = 0;
        for (int acc = 0; acc <= 1; acc++) {
            for (size_t i = 0; i < nx; i++) dx[i] = 0.5f;
            pf_cpu_maxpool2_backward(dx, dy, x, PN, PC, PH, PW, b, b, acc);
            for (int n = 0; n < PN; n++)
                for (int c = 0; c < PC; c++)
                    for (int i = 0; i < PH / 2; i++)
                        for (int j = 0; j < PW / 2; j++) {
                            int best = 0;
                            float m = x[pf_blk_off(n, c, 2 * i, 2 * j, PC, PH, PW, b)];
                            for (int k = 1; k < 4; k++) {
                                float v = x[pf_blk_off(n, c, 2 * i + k / 2, 2 * j + k % 2, PC,
                                                       PH, PW, b)];
                                if (v > m || isnan(v)) m = v, best = k;
                            }
                            float got = y[pf_blk_off(n, c, i, j, PC, PH / 2, PW / 2, b)];
                            bad += !(got == m || (isnan(got) && isnan(m)));
                            float g = dy[pf_blk_off(n, c, i, j, PC, PH / 2, PW / 2, b)];
                            for (int k = 0; k < 4; k++) {
                                float want = (acc ? 0.5f : 0.0f) + (k == best ? g : 0.0f);
                                bad += dx[pf_blk_off(n, c, 2 * i + k / 2, 2 * j + k % 2, PC,
                                                     PH, PW, b)] != want;
                            }
                        }
        }
        CHECK(bad == 0, "maxpool2 kernels, block %d: %d values differ from the naive loop", b,
              bad);
        free(x), free(y), free(dy), free(dx);
    }
}

/* The PF_G_RELU kernels (nn/cpu/ops.h) against the formula, in NCHW and blocks of 8 and 16
   (20 channels: padded blocks), slopes 0 and 0.2, on small integers (many exact zeros: the
   kink, where the gradient is alpha dy, as torch's threshold_backward), backward overwriting
   and adding. */
static void check_relu_kernels(void) {
    enum { RN = 2, RC = 20, RHW = 15 };
    static const int blocks[] = { 1, 8, 16 };
    pf_rng rng = pf_rng_make(5, 3, 2);
    int bad = 0;
    for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++)
        for (int a = 0; a < 2; a++) {
            int b = blocks[bi];
            float al = a ? 0.2f : 0.0f;
            size_t nx = pf_blk_numel(RN, RC, 1, RHW, b);
            float *x = calloc(nx, sizeof *x), *y = calloc(nx, sizeof *y);
            float *dy = calloc(nx, sizeof *dy), *dx = calloc(nx, sizeof *dx);
            for (int n = 0; n < RN; n++)
                for (int c = 0; c < RC; c++)
                    for (int j = 0; j < RHW; j++) {
                        size_t o = pf_blk_off(n, c, 0, j, RC, 1, RHW, b);
                        x[o] = (float)pf_rng_below(&rng, 5) - 2.0f;
                        dy[o] = (float)(1 + c + j);
                    }
            pf_cpu_relu_forward(y, x, al, RN, RC, RHW, b);
            for (int acc = 0; acc <= 1; acc++) {
                for (size_t i = 0; i < nx; i++) dx[i] = 0.5f;
                pf_cpu_relu_backward(dx, dy, y, al, RN, RC, RHW, b, acc);
                for (int n = 0; n < RN; n++)
                    for (int c = 0; c < RC; c++)
                        for (int j = 0; j < RHW; j++) {
                            size_t o = pf_blk_off(n, c, 0, j, RC, 1, RHW, b);
                            float v = x[o], want = v > 0 ? v : al * v;
                            float g = v > 0 ? dy[o] : al * dy[o];
                            bad += y[o] != want;
                            bad += dx[o] != (acc ? 0.5f + g : g);
                        }
            }
            free(x), free(y), free(dy), free(dx);
        }
    CHECK(bad == 0, "relu kernels: %d values differ from the formula", bad);
}

/* NCHW (n x c x h x w) src into dst of block b. */
static void to_block(float *dst, const float *src, int n, int c, int h, int w, int b) {
    memset(dst, 0, pf_blk_numel(n, c, h, w, b) * sizeof *dst);
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++)
                    dst[pf_blk_off(a, k, i, j, c, h, w, b)] = src[((a * c + k) * h + i) * w + j];
}

/* The number of real values of got (block b) differing from want (NCHW), NaN matching NaN,
   within tol of the larger magnitude (relative, at least 1). */
static int blk_diff(const float *got, const double *want, int n, int c, int h, int w, int b,
                    double tol) {
    int bad = 0;
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++) {
                    double g = got[pf_blk_off(a, k, i, j, c, h, w, b)];
                    double v = want[((a * c + k) * h + i) * w + j];
                    if (isnan(g) || isnan(v)) bad += !(isnan(g) && isnan(v));
                    else bad += fabs(g - v) > tol * fmax(fabs(v), 1.0);
                }
    return bad;
}

/* The TSA kernels (nn/cpu/ops.h: mul, chsum, 3 x 3 pooling) on their own against naive NCHW
   loops in double written here, with the tensors in different blocks each (1, 8, 16, and the
   tensor's own width: NHWC), 20 channels (padded blocks). Pooling on small integers (ties in
   most windows: the first maximum in row-major window order gets the gradient; padding never
   counts, so an all-negative border window pools a pixel, not 0) and a NaN (it wins);
   backward overwriting and adding (acc). */
static void check_tsa_kernels(void) {
    enum { KN = 2, KC = 20, KH = 6, KW = 8, OH = KH / 2, OW = KW / 2 };
    static const int blocks[][3] = { { 1, 1, 1 }, { 8, 16, 1 }, { 16, 8, 16 }, { KC, 1, 8 },
                                     { 1, KC, KC } };
    size_t nx = (size_t)KN * KC * KH * KW, big = pf_blk_numel(KN, KC, KH, KW, 16);
    float *x0 = malloc(nx * sizeof *x0), *x1 = malloc(nx * sizeof *x1), *r = malloc(nx * 4);
    float *dy = malloc(nx * sizeof *dy), *bx0 = malloc(big * 4), *bx1 = malloc(big * 4);
    float *br = malloc(big * 4), *bdy = malloc(big * 4), *y = malloc(big * 4);
    float *d0 = malloc(big * 4), *d1 = malloc(big * 4);
    double *want = malloc(nx * sizeof *want), *want1 = malloc(nx * sizeof *want1);
    pf_rng rng = pf_rng_make(8, 4, 2);
    for (size_t i = 0; i < nx; i++) {
        x0[i] = (float)pf_rng_below(&rng, 5) - 3.0f;    /* -3..1: all-negative windows too */
        x1[i] = (float)(2 * pf_rng_uniform(&rng) - 1);
        r[i] = (float)(2 * pf_rng_uniform(&rng) - 1);
        dy[i] = (float)(2 * pf_rng_uniform(&rng) - 1);
    }
    const float sc = 0.75f;
    for (size_t bi = 0; bi < sizeof blocks / sizeof *blocks; bi++) {
        int b = blocks[bi][0], b0 = blocks[bi][1], b1 = blocks[bi][2], bad = 0;
        for (int c1 = 1; c1 <= KC; c1 += KC - 1) {      /* a 1-channel factor, then KC */
            int b1c = b1 == KC ? c1 : b1;
            to_block(bx0, x0, KN, KC, KH, KW, b0);
            to_block(bx1, x1, KN, c1, KH, KW, b1c);
            to_block(br, r, KN, KC, KH, KW, b0);
            to_block(bdy, dy, KN, KC, KH, KW, b);
            pf_cpu_mul_forward(y, bx0, bx1, br, sc, KN, KC, c1, KH, KW, b, b0, b1c, b0);
            for (size_t i = 0; i < nx; i++) {
                size_t q = i / ((size_t)KC * KH * KW), p = i % ((size_t)KH * KW);
                size_t i1 = c1 == 1 ? q * KH * KW + p : i;
                want[i] = r[i] + (double)sc * x0[i] * x1[i1];
            }
            bad += blk_diff(y, want, KN, KC, KH, KW, b, 1e-6);
            for (int acc = 0; acc <= 1; acc++) {
                for (size_t i = 0; i < big; i++) d0[i] = d1[i] = 0.5f;
                pf_cpu_mul_backward(d0, d1, bdy, bx0, bx1, sc, KN, KC, c1, KH, KW, b, b0, b1c,
                                    acc, acc);
                for (size_t i = 0; i < nx; i++) want1[i] = acc ? 0.5 : 0.0;
                for (size_t i = 0; i < nx; i++) {
                    size_t q = i / ((size_t)KC * KH * KW), p = i % ((size_t)KH * KW);
                    size_t i1 = c1 == 1 ? q * KH * KW + p : i;
                    want[i] = (acc ? 0.5 : 0.0) + (double)sc * dy[i] * x1[i1];
                    want1[i1] += (double)sc * dy[i] * x0[i];
                }
                bad += blk_diff(d0, want, KN, KC, KH, KW, b0, 1e-6);
                bad += blk_diff(d1, want1, KN, c1, KH, KW, b1c, 1e-5);
            }
        }
        /* chsum: y (1 channel, block b1 or 1) from x1 (block b0) */
        int bs = b1 == KC ? 1 : b1;
        to_block(bx1, x1, KN, KC, KH, KW, b0);
        pf_cpu_chsum_forward(y, bx1, KN, KC, KH, KW, bs, b0);
        for (int a = 0; a < KN; a++)
            for (int p = 0; p < KH * KW; p++) {
                double s = 0;
                for (int k = 0; k < KC; k++) s += x1[(size_t)(a * KC + k) * KH * KW + p];
                want[a * KH * KW + p] = s;
            }
        bad += blk_diff(y, want, KN, 1, KH, KW, bs, 1e-6);
        to_block(bdy, dy, KN, 1, KH, KW, bs);
        for (int acc = 0; acc <= 1; acc++) {
            for (size_t i = 0; i < big; i++) d0[i] = 0.5f;
            pf_cpu_chsum_backward(d0, bdy, KN, KC, KH, KW, bs, b0, acc);
            for (size_t i = 0; i < nx; i++)
                want[i] = (acc ? 0.5 : 0.0) + dy[(i / ((size_t)KC * KH * KW)) * KH * KW +
                                                 i % ((size_t)KH * KW)];
            bad += blk_diff(d0, want, KN, KC, KH, KW, b0, 1e-6);
        }
        /* pooling: x0 (block b0, a NaN in one window) -> y (block b) */
        float keep = x0[(size_t)(1 * KC + 7) * KH * KW + 3 * KW + 2];
        x0[(size_t)(1 * KC + 7) * KH * KW + 3 * KW + 2] = NAN;
        to_block(bx0, x0, KN, KC, KH, KW, b0);
        to_block(bdy, dy, KN, KC, OH, OW, b);
        for (int max = 0; max <= 1; max++) {
            pf_cpu_pool3_forward(y, bx0, max, KN, KC, KH, KW, b, b0);
            double *dwant = want1;
            for (int acc = 0; acc <= 1; acc++) {
                for (size_t i = 0; i < nx; i++) dwant[i] = acc ? 0.5 : 0.0;
                for (int q = 0; q < KN * KC; q++)
                    for (int Y = 0; Y < OH; Y++)
                        for (int X = 0; X < OW; X++) {
                            const float *pl = x0 + (size_t)q * KH * KW;
                            double s = 0, m = -INFINITY;
                            int at = -1;
                            for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
                                for (int j = 2 * X - 1; j <= 2 * X + 1; j++) {
                                    if (i < 0 || j < 0 || i >= KH || j >= KW) continue;
                                    double v = pl[i * KW + j];
                                    s += v;
                                    if (at < 0 || v > m || isnan(v)) m = v, at = i * KW + j;
                                }
                            want[(q * OH + Y) * OW + X] = max ? m : s / 9;
                            double gy = dy[(q * OH + Y) * OW + X];
                            for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
                                for (int j = 2 * X - 1; j <= 2 * X + 1; j++)
                                    if (i >= 0 && j >= 0 && i < KH && j < KW &&
                                        (!max || i * KW + j == at))
                                        dwant[(size_t)q * KH * KW + i * KW + j] +=
                                            max ? gy : gy / 9;
                        }
                bad += blk_diff(y, want, KN, KC, OH, OW, b, 1e-6);
                for (size_t i = 0; i < big; i++) d0[i] = 0.5f;
                pf_cpu_pool3_backward(d0, bdy, bx0, max, KN, KC, KH, KW, b, b0, acc);
                bad += blk_diff(d0, dwant, KN, KC, KH, KW, b0, 1e-6);
            }
        }
        x0[(size_t)(1 * KC + 7) * KH * KW + 3 * KW + 2] = keep;
        CHECK(bad == 0, "tsa kernels, blocks %d / %d / %d: %d values differ from the naive "
              "loops", b, b0, b1, bad);
    }
    free(x0), free(x1), free(r), free(dy), free(bx0), free(bx1), free(br), free(bdy), free(y);
    free(d0), free(d1), free(want), free(want1);
}

/* Plan errors name the node and the reason. */
static void check_errors(void) {
    pf_net g;
    pf_net_init(&g);
    snprintf(g.type, sizeof g.type, "bad");
    int x = pf_net_node(&g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    g.input = x;
    g.output = slice(&g, conv(&g, x, "c", 4, -1, -1), 2, 3);
    pf_dnnl d;
    char err[512];
    if (pf_dnnl_init(&d, err, sizeof err) == 0) {
        pf_conv c[1];
        pf_graph_conv_init(&g, 0, &c[0]);
        float p[200], gr[200];
        pf_gctx x2 = { .net = &g, .dnnl = &d, .convs = c, .params = p, .grads = gr };
        pf_gstate *S = NULL;
        int rc = pf_graph_plan(&x2, &S, 1, 4, 4, 1, err, sizeof err);
        CHECK(rc == -1 && strstr(err, "slice") && strstr(err, "outside"),
              "a slice past its input's channels: rc %d, '%s'", rc, err);
        pf_gstate_free(&S);
        pf_conv_free(&c[0]);
        pf_dnnl_free(&d);
    }
    pf_net_free(&g);
    /* a stride-2 layer whose output tensor was not made smaller: refused by pf_net_check (what
       both executors plan with) */
    build_strided(&g);
    g.t[g.node[2].out].div = 1;
    int hw[64];     /* 2 per tensor: 7 here */
    int rc = g.n_t <= 32 ? pf_net_check(&g, 16, 16, hw, err, sizeof err) : 0;
    CHECK(rc == -1 && strstr(err, "conv") && strstr(err, "stride"),
          "a stride-2 conv with an output of its input's size: rc %d, '%s'", rc, err);
    pf_net_free(&g);
    /* a ReLU node with a negative slope */
    build_relu(&g);
    g.node[4].alpha = -0.1f;
    rc = g.n_t <= 32 ? pf_net_check(&g, 8, 8, hw, err, sizeof err) : 0;
    CHECK(rc == -1 && strstr(err, "relu") && strstr(err, "slope"),
          "a ReLU node of slope -0.1: rc %d, '%s'", rc, err);
    pf_net_free(&g);
    /* a multiply by a factor of 3 channels on 20 */
    build_tsa(&g);
    for (int k = 0; k < g.n_node; k++)
        if (g.node[k].op == PF_G_MUL && g.t[g.node[k].in[1]].c == 1) g.t[g.node[k].in[1]].c = 3;
    rc = g.n_t <= 32 ? pf_net_check(&g, 8, 8, hw, err, sizeof err) : 0;
    CHECK(rc == -1 && strstr(err, "mul") && strstr(err, "factor"),
          "a multiply by 3 channels on 20: rc %d, '%s'", rc, err);
    pf_net_free(&g);
}

/* tests/reference/SCRIPT's DIR/NAME.safetensors against the network build makes (its
   parameter count, then check_parity with LQ 2 x h x w in every layout). */
static void torch_case(const char *dir, const char *script, const char *name,
                       void (*build)(pf_net *), int h, int w, double grad_tol,
                       const pf_layout *layouts, size_t n_layouts) {
    char path[1100], err[512];
    pf_ref_exec(script, dir);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    pf_safetensors *ref = NULL;
    CHECK(pf_safetensors_load(path, &ref, err, sizeof err) == 0, "%s", err);
    if (ref) {
        pf_net g;
        build(&g);
        const char *np = pf_safetensors_meta(ref, "n_params");
        CHECK(np && atoi(np) == g.n_tensors, "%s: %d parameter tensors, torch's %s", name,
              g.n_tensors, np ? np : "?");
        pf_net_free(&g);
        for (size_t i = 0; i < n_layouts; i++)
            check_parity(ref, build, layouts[i], 1, 2, h, w, grad_tol);
    }
    pf_safetensors_free(&ref);
}

/* The strided network against torch.nn.functional.conv2d (tests/reference/conv_stride_ref.py)
   and the TSA-fusion ops' network against torch float64 (tests/reference/tsa_ops_ref.py), in
   every layout. */
static int with_torch(const pf_layout *layouts, size_t n_layouts) {
    if (!pf_ref_have("test_graph_video torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_conv_stride.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp %s failed", dir);
        return pf_test_end("test_graph_video torch");
    }
    torch_case(dir, "conv_stride_ref.py", "strided", build_strided, 16, 32, 1e-4, layouts,
               n_layouts);
    torch_case(dir, "tsa_ops_ref.py", "tsa", build_tsa, 8, 12, 1e-5, layouts, n_layouts);
    pf_ref_remove(dir);
    return pf_test_end("test_graph_video torch");
}

int main(int argc, char **argv) {
    char path[512], err[512];
    static const pf_layout layouts[] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                         PF_LAYOUT_NCHW16C, PF_LAYOUT_NHWC };
    if (argc > 1 && !strcmp(argv[1], "torch"))
        return with_torch(layouts, sizeof layouts / sizeof *layouts);
    snprintf(path, sizeof path, "%s/graph_video.safetensors", pf_test_data());
    pf_safetensors *ref = NULL;
    CHECK(pf_safetensors_load(path, &ref, err, sizeof err) == 0, "%s", err);
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        if (ref) check_parity(ref, build_mini, layouts[i], T, N, H, W, 1e-4);
        check_fd("mini", build_mini, layouts[i], T, N, H, W);
        check_fd("warp zeros", build_warp_zeros, layouts[i], 1, N, 5, 6);
        check_fd("warp border", build_warp_border, layouts[i], 1, N, 5, 6);
        check_fd("pool", build_pool, layouts[i], 1, N, 6, 8);
        check_fd("maxpool", build_maxpool, layouts[i], 1, N, 6, 8);
        check_fd("strided", build_strided, layouts[i], 1, N, 16, 32);
        check_fd("relu", build_relu, layouts[i], 1, N, 6, 8);
        check_fd("dcn", build_dcn, layouts[i], 1, N, 6, 8);
        check_fd("dcn stride 2", build_dcn_s2, layouts[i], 1, N, 6, 8);
        check_fd("tsa", build_tsa, layouts[i], 1, N, 8, 12);
        check_fd("tsa square", build_square, layouts[i], 1, N, 5, 7);
        check_fd("channel attention square", build_ca_square, layouts[i], 1, N, 5, 7);
    }
    check_maxpool_kernels();
    check_relu_kernels();
    check_tsa_kernels();
    check_errors();
    pf_safetensors_free(&ref);
    return pf_test_end("test_graph_video");
}
