/*  edvr — EDVR as a description (nn/net.h): Wang, Chan, Yu, Dong and Loy, "EDVR: Video
    Restoration with Enhanced Deformable Convolutional Networks", CVPRW 2019, as BasicSR's
    basicsr/archs/edvr_arch.py (EDVR, PredeblurModule, PCDAlignment, TSAFusion) and
    arch_util.py (DCNv2Pack, ResidualBlockNoBN) describe it: x4, or with hr_in the same size.
    Parameter names, state_dict order and initialisation are BasicSR's, so weights move both
    ways: BasicSR's released EDVR-L checkpoints (num_feat 128, num_reconstruct_block 40) use
    with_predeblur with hr_in false (EDVR_L_x4_SRblur_REDS) and with hr_in true
    (EDVR_L_deblur_REDS, EDVR_L_deblurcomp_REDS: scale 1, REDS blur / blur_comp frames).

    A sliding-window network: num_frame LQ frames in, the center frame's SR out. Per frame t
    (weights shared over frames: every application after the first is a layer of its own
    naming the first one's tensors, nn/net.h), with lrelu = LeakyReLU(0.1):
      L1 = feature_extraction(lrelu(conv_first(x_t)))   (num_extract_block residual blocks)
         or, with_predeblur, feature_extraction(conv_1x1(predeblur(x_t))), PredeblurModule:
           p1 = lrelu(conv_first(x_t)); hr_in: p1 = lrelu(stride_conv_hr2(lrelu(
                stride_conv_hr1(p1))))  (3x3 stride 2: features at 1/4 of an hr input)
           p2 = lrelu(stride_conv_l2(p1)), p3 = lrelu(stride_conv_l3(p2))   (stride 2)
           p2 = up2(resblock_l2_2(resblock_l2_1(p2) + up2(resblock_l3(p3))))
           predeblur = resblock_l1.4..2(resblock_l1.1..0(p1) + p2)
           (up2 the bilinear x2, align_corners False; resblocks ResidualBlockNoBN)
      L2 = lrelu(conv_l2_2(lrelu(conv_l2_1(L1))))         (conv_l2_1: 3x3 stride 2, pad 1)
      L3 = lrelu(conv_l3_2(lrelu(conv_l3_1(L2))))         (likewise)
    PCD alignment of each frame's (L1, L2, L3) to the center frame's (ref), from level 3 down:
      o = lrelu(offset_conv1.lN(cat(nbr, ref)))
      o = lrelu(offset_conv2.l3(o))  |  lrelu(offset_conv3.lN(lrelu(offset_conv2.lN(cat(o,
          up_o)))))  (N = 2, 1)
      f = dcn_pack.lN(nbr, o)  [DCNv2Pack: c = conv_offset(o) (C -> 27 dg, zero-initialised),
          offset = c[0:18 dg] ((dy, dx) per group and tap, torchvision's order), mask =
          sigmoid(c[18 dg:27 dg]), modulated deformable conv 3x3 pad 1 of nbr]
      f = feat_conv.lN(cat(f, up_f)) (N = 2, 1); lrelu after levels 3 and 2
      up_o = 2 bilinear_x2(o), up_f = bilinear_x2(f)   (align_corners False)
      cascade: f = lrelu(cas_dcnpack(f, lrelu(cas_offset_conv2(lrelu(cas_offset_conv1(cat(f,
          ref L1)))))))
    Fusion of the aligned features a_t: with_tsa, TSAFusion (temporal attention: e_ref =
    temporal_attn1(a_center), e_t = temporal_attn2(a_t), w_t = a_t * sigmoid(sum_c(e_t e_ref));
    feat = lrelu(feat_fusion(cat w)); spatial attention over two pyramid levels with 3x3
    stride-2 max and average pooling, feat = feat * sigmoid(attn) * 2 + attn_add); without,
    a 1x1 conv `fusion` of cat(a_t). Then reconstruction (num_reconstruct_block residual
    blocks), lrelu(PixelShuffle(2)(upconv1)), lrelu(PixelShuffle(2)(upconv2)) (-> 64),
    lrelu(conv_hr), conv_last, plus the bilinear x4 (align_corners False) of the center LQ;
    with hr_in, plus the center frame itself (the output is the input's size).
*/
#include <stdio.h>
#include <string.h>

#include "nn/net.h"

enum { NO_ACT = -1 };           /* conv activation: NO_ACT, or the LeakyReLU slope (0: ReLU) */
enum { INIT_TORCH, INIT_RESBLOCK, INIT_ZERO };  /* a conv's initialisation (declare) */
#define LRELU 0.1f

typedef struct {
    pf_net *g;
    int C, T, dg, center, n_ext, n_rec, tsa;
    int predeblur, hr_in;       /* BasicSR's with_predeblur, hr_in */
} edvr;

/* The tensors name.weight (oc x ic x k x k) and name.bias of a conv, in state_dict order;
   init INIT_TORCH PyTorch's default (weight and bias U(+-1/sqrt(ic k k))), INIT_RESBLOCK
   BasicSR's default_init_weights(0.1) of ResidualBlockNoBN (kaiming normal times 0.1, bias 0),
   INIT_ZERO both zero (DCNv2Pack's conv_offset). Returns the weight's tensor index, or -1. */
static int declare(edvr *e, const char *name, int ic, int oc, int k, int init) {
    char full[112];
    double fan = (double)ic * k * k;
    pf_param_init wi = { PF_INIT_UNIFORM, fan, 1.0 }, bi = wi;
    if (init == INIT_RESBLOCK) wi = (pf_param_init){ PF_INIT_NORMAL, fan, 0.1 };
    if (init == INIT_ZERO) wi = (pf_param_init){ PF_INIT_CONST, 1.0, 0.0 };
    if (init != INIT_TORCH) bi = (pf_param_init){ PF_INIT_CONST, 1.0, 0.0 };
    int64_t ws[4] = { oc, ic, k, k }, bs[1] = { oc };
    snprintf(full, sizeof full, "%s.weight", name);
    int w = pf_net_add_tensor(e->g, full, 4, ws, wi);
    snprintf(full, sizeof full, "%s.bias", name);
    return pf_net_add_tensor(e->g, full, 1, bs, bi) < 0 ? -1 : w;
}

/* DCNv2Pack `name` (C -> C, 3x3, dg groups): its weight U(+-1/sqrt(9 C)) and zero bias
   (BasicSR's ModulatedDeformConv.init_weights), then conv_offset (zeros). Returns the
   weight's index (conv_offset's: + 2). */
static int declare_dcn(edvr *e, const char *name) {
    char full[112];
    int64_t ws[4] = { e->C, e->C, 3, 3 }, bs[1] = { e->C };
    snprintf(full, sizeof full, "%s.weight", name);
    int w = pf_net_add_tensor(e->g, full, 4, ws,
                              (pf_param_init){ PF_INIT_UNIFORM, 9.0 * e->C, 1.0 });
    snprintf(full, sizeof full, "%s.bias", name);
    if (pf_net_add_tensor(e->g, full, 1, bs, (pf_param_init){ PF_INIT_CONST, 1.0, 0.0 }) < 0)
        return -1;
    snprintf(full, sizeof full, "%s.conv_offset", name);
    return declare(e, full, e->C, 27 * e->dg, 3, INIT_ZERO) < 0 ? -1 : w;
}

/* ResidualBlockNoBN `name`: name.conv1, name.conv2 (C -> C, 3x3). */
static void declare_resblock(edvr *e, const char *name) {
    char full[112];
    snprintf(full, sizeof full, "%s.conv1", name);
    declare(e, full, e->C, e->C, 3, INIT_RESBLOCK);
    snprintf(full, sizeof full, "%s.conv2", name);
    declare(e, full, e->C, e->C, 3, INIT_RESBLOCK);
}

/* Every tensor in BasicSR's state_dict order (its modules' registration order). */
static void declare_all(edvr *e) {
    char name[112];
    int C = e->C;
    if (e->predeblur) {         /* PredeblurModule, then conv_1x1, in place of conv_first */
        declare(e, "predeblur.conv_first", 3, C, 3, INIT_TORCH);
        static const char *const strided[4] = { "predeblur.stride_conv_hr1",
            "predeblur.stride_conv_hr2", "predeblur.stride_conv_l2", "predeblur.stride_conv_l3" };
        for (int i = e->hr_in ? 0 : 2; i < 4; i++) declare(e, strided[i], C, C, 3, INIT_TORCH);
        static const char *const rb[3] = { "predeblur.resblock_l3", "predeblur.resblock_l2_1",
                                           "predeblur.resblock_l2_2" };
        for (int i = 0; i < 3 + 5; i++) {
            if (i < 3) snprintf(name, sizeof name, "%s", rb[i]);
            else snprintf(name, sizeof name, "predeblur.resblock_l1.%d", i - 3);
            declare_resblock(e, name);
        }
        declare(e, "conv_1x1", C, C, 1, INIT_TORCH);
    } else {
        declare(e, "conv_first", 3, C, 3, INIT_TORCH);
    }
    for (int k = 0; k < e->n_ext; k++) {
        snprintf(name, sizeof name, "feature_extraction.%d", k);
        declare_resblock(e, name);
    }
    static const char *const lv[3] = { "conv_l2_1", "conv_l2_2", "conv_l3_1" };
    for (int i = 0; i < 3; i++) declare(e, lv[i], C, C, 3, INIT_TORCH);
    declare(e, "conv_l3_2", C, C, 3, INIT_TORCH);
    for (int l = 3; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.offset_conv1.l%d", l);
        declare(e, name, 2 * C, C, 3, INIT_TORCH);
    }
    for (int l = 3; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.offset_conv2.l%d", l);
        declare(e, name, l == 3 ? C : 2 * C, C, 3, INIT_TORCH);
    }
    for (int l = 2; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.offset_conv3.l%d", l);
        declare(e, name, C, C, 3, INIT_TORCH);
    }
    for (int l = 3; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.dcn_pack.l%d", l);
        declare_dcn(e, name);
    }
    for (int l = 2; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.feat_conv.l%d", l);
        declare(e, name, 2 * C, C, 3, INIT_TORCH);
    }
    declare(e, "pcd_align.cas_offset_conv1", 2 * C, C, 3, INIT_TORCH);
    declare(e, "pcd_align.cas_offset_conv2", C, C, 3, INIT_TORCH);
    declare_dcn(e, "pcd_align.cas_dcnpack");
    if (e->tsa) {
        static const struct { const char *n; int ic, k; } f[13] = {
            { "temporal_attn1", 1, 3 }, { "temporal_attn2", 1, 3 }, { "feat_fusion", 0, 1 },
            { "spatial_attn1", 0, 1 }, { "spatial_attn2", 2, 1 }, { "spatial_attn3", 1, 3 },
            { "spatial_attn4", 1, 1 }, { "spatial_attn5", 1, 3 }, { "spatial_attn_l1", 1, 1 },
            { "spatial_attn_l2", 2, 3 }, { "spatial_attn_l3", 1, 3 },
            { "spatial_attn_add1", 1, 1 }, { "spatial_attn_add2", 1, 1 },
        };  /* ic: times C, 0 for T C */
        for (int i = 0; i < 13; i++) {
            snprintf(name, sizeof name, "fusion.%s", f[i].n);
            declare(e, name, f[i].ic ? f[i].ic * C : e->T * C, C, f[i].k, INIT_TORCH);
        }
    } else {
        declare(e, "fusion", e->T * C, C, 1, INIT_TORCH);
    }
    for (int k = 0; k < e->n_rec; k++) {
        snprintf(name, sizeof name, "reconstruction.%d", k);
        declare_resblock(e, name);
    }
    declare(e, "upconv1", C, 4 * C, 3, INIT_TORCH);
    declare(e, "upconv2", C, 256, 3, INIT_TORCH);
    declare(e, "conv_hr", 64, 64, 3, INIT_TORCH);
    declare(e, "conv_last", 64, 3, 3, INIT_TORCH);
}

/* The weight tensor named name.weight (declared), or -1. */
static int weight_of(const edvr *e, const char *name) {
    char full[112];
    snprintf(full, sizeof full, "%s.weight", name);
    for (int i = 0; i < e->g->n_tensors; i++)
        if (!strcmp(e->g->tensors[i].name, full)) return i;
    return -1;
}

/* A node on in[0..n_in) with c channels at the size of `like` times mul / div; *nd its
   node. */
static int node(edvr *e, pf_gop op, const int *in, int n_in, int c, int like, int mul, int div,
                pf_gnode **nd) {
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0) return -1;
    const pf_gtensor t = e->g->t[like];
    int m = t.mul * mul, d = t.div * div, a = m, b = d;
    while (b) {                 /* lowest terms (a PF_G_MUL's residual compares mul, div) */
        int r = a % b;
        a = b;
        b = r;
    }
    int out = pf_net_node(e->g, op, in, n_in, c, m / a, d / a, 0);
    if (out >= 0) *nd = &e->g->node[e->g->n_node - 1];
    return out;
}

/* Conv `name` (declared) on x: oc channels, k x k, stride 1 or 2 (padding k / 2),
   activation act, out = res + conv when res >= 0. */
static int conv(edvr *e, int x, const char *name, int oc, int k, int stride, float act,
                int res) {
    int w = weight_of(e, name);
    if (x < 0 || w < 0) return -1;
    int ci = pf_net_add_layer(e->g, name, e->g->t[x].c, oc, k, w);
    if (ci < 0) return -1;
    e->g->conv[ci].stride = stride;
    if (act != NO_ACT) {
        e->g->conv[ci].act = 1;
        e->g->conv[ci].alpha = act;
    }
    pf_gnode *nd;
    int in[2] = { x, res };
    int out = node(e, PF_G_CONV, in, res >= 0 ? 2 : 1, oc, x, 1, stride, &nd);
    if (out < 0) return -1;
    nd->conv = ci;
    nd->param = w;
    nd->scale = 1.0f;
    return out;
}

static int cat(edvr *e, const int *xs, int n) {
    pf_gnode *nd;
    int c = 0;
    for (int i = 0; i < n; i++) {
        if (xs[i] < 0) return -1;
        c += e->g->t[xs[i]].c;
    }
    return node(e, PF_G_CONCAT, xs, n, c, xs[0], 1, 1, &nd);
}

static int cat2(edvr *e, int a, int b) { return cat(e, (int[2]){ a, b }, 2); }

static int slice(edvr *e, int x, int c0, int c) {
    pf_gnode *nd;
    int o = node(e, PF_G_SLICE, &x, 1, c, x, 1, 1, &nd);
    if (o >= 0) nd->c0 = c0;
    return o;
}

/* One-input elementwise op: PF_G_SIGMOID, or PF_G_RELU with slope alpha. */
static int unary(edvr *e, pf_gop op, int x, float alpha) {
    pf_gnode *nd;
    int o = node(e, op, &x, 1, x < 0 ? 0 : e->g->t[x].c, x, 1, 1, &nd);
    if (o >= 0) nd->alpha = alpha;
    return o;
}

/* F.interpolate(x, scale_factor=mul, mode='bilinear', align_corners=False). */
static int upsample(edvr *e, int x, int mul) {
    pf_gnode *nd;
    int o = node(e, PF_G_RESIZE, &x, 1, x < 0 ? 0 : e->g->t[x].c, x, mul, 1, &nd);
    if (o >= 0) {
        nd->ac = 0;
        nd->use_mul = 0;
    }
    return o;
}

static int add(edvr *e, int a, int b, float scale) {
    pf_gnode *nd;
    int in[2] = { a, b };
    int o = node(e, PF_G_ADD, in, 2, a < 0 ? 0 : e->g->t[a].c, a, 1, 1, &nd);
    if (o >= 0) nd->scale = scale;
    return o;
}

/* ResidualBlockNoBN `name` (res_scale 1) on x: x + conv2(relu(conv1(x))). */
static int resblock(edvr *e, const char *name, int x) {
    char full[112];
    snprintf(full, sizeof full, "%s.conv1", name);
    int m = conv(e, x, full, e->C, 3, 1, 0.0f, -1);
    snprintf(full, sizeof full, "%s.conv2", name);
    return conv(e, m, full, e->C, 3, 1, NO_ACT, x);
}

/* make_layer(ResidualBlockNoBN, n) `name` on x: blocks name.0 .. name.(n-1). */
static int resblocks(edvr *e, const char *name, int x, int n) {
    char full[112];
    for (int k = 0; k < n; k++) {
        snprintf(full, sizeof full, "%s.%d", name, k);
        x = resblock(e, full, x);
    }
    return x;
}

/* conv_1x1(PredeblurModule(x)) (the header's p1..p3): the L1 features of frame x, at 1/4 of
   x's size with hr_in, else at x's. */
static int predeblur(edvr *e, int x) {
    char name[112];
    int C = e->C;
    int p1 = conv(e, x, "predeblur.conv_first", C, 3, 1, LRELU, -1);
    if (e->hr_in) {
        p1 = conv(e, p1, "predeblur.stride_conv_hr1", C, 3, 2, LRELU, -1);
        p1 = conv(e, p1, "predeblur.stride_conv_hr2", C, 3, 2, LRELU, -1);
    }
    int p2 = conv(e, p1, "predeblur.stride_conv_l2", C, 3, 2, LRELU, -1);
    int p3 = conv(e, p2, "predeblur.stride_conv_l3", C, 3, 2, LRELU, -1);
    p3 = upsample(e, resblock(e, "predeblur.resblock_l3", p3), 2);
    p2 = add(e, resblock(e, "predeblur.resblock_l2_1", p2), p3, 1.0f);
    p2 = upsample(e, resblock(e, "predeblur.resblock_l2_2", p2), 2);
    for (int k = 0; k < 5; k++) {
        if (k == 2) p1 = add(e, p1, p2, 1.0f);
        snprintf(name, sizeof name, "predeblur.resblock_l1.%d", k);
        p1 = resblock(e, name, p1);
    }
    return conv(e, p1, "conv_1x1", C, 1, 1, NO_ACT, -1);
}

/* DCNv2Pack `name` on x with the offset features feat. */
static int dcn_pack(edvr *e, const char *name, int x, int feat) {
    char full[112];
    int dg = e->dg;
    snprintf(full, sizeof full, "%s.conv_offset", name);
    int o = conv(e, feat, full, 27 * dg, 3, 1, NO_ACT, -1);
    int mask = unary(e, PF_G_SIGMOID, slice(e, o, 18 * dg, 9 * dg), 0.0f);
    pf_gnode *nd;
    int in[3] = { x, slice(e, o, 0, 18 * dg), mask };
    int w = weight_of(e, name);
    int out = w < 0 ? -1 : node(e, PF_G_DCN, in, 3, e->C, x, 1, 1, &nd);
    if (out < 0) return -1;
    nd->param = w;          /* 3x3, stride 1, padding 1, dilation 1, one group, a bias */
    nd->dcn.k = 3;
    nd->dcn.stride = nd->dcn.pad = nd->dcn.dil = nd->dcn.groups = nd->dcn.has_bias = 1;
    nd->dcn.dg = dg;
    return out;
}

/* PCDAlignment of nbr[0..2] (L1, L2, L3) to ref[0..2]. */
static int pcd(edvr *e, const int *nbr, const int *ref) {
    char name[112];
    int C = e->C, up_o = -1, up_f = -1, f = -1;
    for (int l = 3; l >= 1; l--) {
        snprintf(name, sizeof name, "pcd_align.offset_conv1.l%d", l);
        int o = conv(e, cat2(e, nbr[l - 1], ref[l - 1]), name, C, 3, 1, LRELU, -1);
        snprintf(name, sizeof name, "pcd_align.offset_conv2.l%d", l);
        o = conv(e, l == 3 ? o : cat2(e, o, up_o), name, C, 3, 1, LRELU, -1);
        if (l < 3) {
            snprintf(name, sizeof name, "pcd_align.offset_conv3.l%d", l);
            o = conv(e, o, name, C, 3, 1, LRELU, -1);
        }
        snprintf(name, sizeof name, "pcd_align.dcn_pack.l%d", l);
        f = dcn_pack(e, name, nbr[l - 1], o);
        if (l < 3) {
            snprintf(name, sizeof name, "pcd_align.feat_conv.l%d", l);
            f = conv(e, cat2(e, f, up_f), name, C, 3, 1, l > 1 ? LRELU : NO_ACT, -1);
        } else {
            f = unary(e, PF_G_RELU, f, LRELU);
        }
        if (l > 1) {
            /* upsample(offset) * 2: two resizes added (PF_G_RESIZE's constant factors cover
               only PF_G_MAX_CH channels) */
            up_o = add(e, upsample(e, o, 2), upsample(e, o, 2), 1.0f);
            up_f = upsample(e, f, 2);
        }
    }
    int o = conv(e, cat2(e, f, ref[0]), "pcd_align.cas_offset_conv1", C, 3, 1, LRELU, -1);
    o = conv(e, o, "pcd_align.cas_offset_conv2", C, 3, 1, LRELU, -1);
    return unary(e, PF_G_RELU, dcn_pack(e, "pcd_align.cas_dcnpack", f, o), LRELU);
}

/* The 3x3 stride-2 max and average pooling of x, concatenated. */
static int pools(edvr *e, int x) {
    return cat2(e, pf_net_add_pool3(e->g, x, 1), pf_net_add_pool3(e->g, x, 0));
}

/* TSAFusion of the aligned features a[0..T). */
static int tsa(edvr *e, const int *a) {
    int C = e->C, w[64];
    int ref = conv(e, a[e->center], "fusion.temporal_attn1", C, 3, 1, NO_ACT, -1);
    for (int t = 0; t < e->T; t++) {
        int emb = conv(e, a[t], "fusion.temporal_attn2", C, 3, 1, NO_ACT, -1);
        int corr = pf_net_add_chsum(e->g, pf_net_add_mul(e->g, emb, ref, -1, 1.0f));
        w[t] = pf_net_add_mul(e->g, a[t], unary(e, PF_G_SIGMOID, corr, 0.0f), -1, 1.0f);
    }
    int wa = cat(e, w, e->T);
    int feat = conv(e, wa, "fusion.feat_fusion", C, 1, 1, LRELU, -1);
    int attn = conv(e, wa, "fusion.spatial_attn1", C, 1, 1, LRELU, -1);
    attn = conv(e, pools(e, attn), "fusion.spatial_attn2", C, 1, 1, LRELU, -1);
    int lvl = conv(e, attn, "fusion.spatial_attn_l1", C, 1, 1, LRELU, -1);
    lvl = conv(e, pools(e, lvl), "fusion.spatial_attn_l2", C, 3, 1, LRELU, -1);
    lvl = conv(e, lvl, "fusion.spatial_attn_l3", C, 3, 1, LRELU, -1);
    attn = add(e, conv(e, attn, "fusion.spatial_attn3", C, 3, 1, LRELU, -1),
               upsample(e, lvl, 2), 1.0f);
    attn = upsample(e, conv(e, attn, "fusion.spatial_attn4", C, 1, 1, LRELU, -1), 2);
    attn = conv(e, attn, "fusion.spatial_attn5", C, 3, 1, NO_ACT, -1);
    int attn_add = conv(e, conv(e, attn, "fusion.spatial_attn_add1", C, 1, 1, LRELU, -1),
                        "fusion.spatial_attn_add2", C, 1, 1, NO_ACT, -1);
    return pf_net_add_mul(e->g, feat, unary(e, PF_G_SIGMOID, attn, 0.0f), attn_add, 2.0f);
}

int pf_net_build_edvr(pf_net *g, int num_feat, int num_frame, int deformable_groups,
                      int num_extract_block, int num_reconstruct_block, int center_frame_idx,
                      int with_tsa, int with_predeblur, int hr_in, char *err, size_t errlen) {
    pf_net_init(g);
    snprintf(g->type, sizeof g->type, "EDVR");
    const char *bad = num_frame < 1 || num_frame > 63 || num_frame % 2 == 0
                          ? "num_frame odd in 1..63"
                      : center_frame_idx < 0 || center_frame_idx >= num_frame
                          ? "center_frame_idx in [0, num_frame)"
                      : num_feat < 1 || deformable_groups < 1 || num_feat % deformable_groups
                          ? "deformable_groups dividing num_feat"
                      : num_extract_block < 0 || num_reconstruct_block < 0
                          ? "num_extract_block, num_reconstruct_block >= 0"
                      /* BasicSR's EDVR brings an hr input down by 4 in its PredeblurModule
                         alone: without it, its x4 output does not match the hr base */
                      : hr_in && !with_predeblur ? "with_predeblur true for hr_in true"
                          : NULL;
    if (bad) {
        snprintf(err, errlen, "model: EDVR needs %s (num_feat %d, num_frame %d, "
                 "deformable_groups %d, num_extract_block %d, num_reconstruct_block %d, "
                 "center_frame_idx %d, with_predeblur %d, hr_in %d)", bad, num_feat,
                 num_frame, deformable_groups, num_extract_block, num_reconstruct_block,
                 center_frame_idx, with_predeblur, hr_in);
        return -1;
    }
    edvr e = { .g = g, .C = num_feat, .T = num_frame, .dg = deformable_groups,
               .center = center_frame_idx, .n_ext = num_extract_block,
               .n_rec = num_reconstruct_block, .tsa = with_tsa,
               .predeblur = with_predeblur, .hr_in = hr_in };
    declare_all(&e);
    g->scale = hr_in ? 1 : 4;
    g->range = 1.0f;
    int T = num_frame, C = num_feat;
    int in = g->oom ? -1 : pf_net_node(g, PF_G_INPUT, NULL, 0, 3 * T, 1, 1, 0);
    g->input = in;
    int x[64], feat[64][3], aligned[64];
    for (int t = 0; in >= 0 && t < T; t++) {
        x[t] = slice(&e, in, 3 * t, 3);
        int f = with_predeblur ? predeblur(&e, x[t])
                               : conv(&e, x[t], "conv_first", C, 3, 1, LRELU, -1);
        f = feat[t][0] = resblocks(&e, "feature_extraction", f, e.n_ext);
        f = conv(&e, conv(&e, f, "conv_l2_1", C, 3, 2, LRELU, -1), "conv_l2_2", C, 3, 1,
                 LRELU, -1);
        feat[t][1] = f;
        feat[t][2] = conv(&e, conv(&e, f, "conv_l3_1", C, 3, 2, LRELU, -1), "conv_l3_2", C, 3,
                          1, LRELU, -1);
    }
    for (int t = 0; in >= 0 && t < T; t++) aligned[t] = pcd(&e, feat[t], feat[e.center]);
    int out = -1;
    if (in >= 0) {
        int f = with_tsa ? tsa(&e, aligned)
                         : conv(&e, cat(&e, aligned, T), "fusion", C, 1, 1, NO_ACT, -1);
        pf_gnode *nd;
        f = resblocks(&e, "reconstruction", f, e.n_rec);
        f = conv(&e, f, "upconv1", 4 * C, 3, 1, LRELU, -1);   /* lrelu commutes with the */
        f = node(&e, PF_G_SHUFFLE, &f, 1, C, f, 2, 1, &nd);   /* pixel shuffle */
        if (f >= 0) nd->r = 2;
        f = conv(&e, f, "upconv2", 256, 3, 1, LRELU, -1);
        f = node(&e, PF_G_SHUFFLE, &f, 1, 64, f, 2, 1, &nd);
        if (f >= 0) nd->r = 2;
        f = conv(&e, f, "conv_hr", 64, 3, 1, LRELU, -1);
        out = conv(&e, f, "conv_last", 3, 3, 1, NO_ACT,
                   hr_in ? x[e.center] : upsample(&e, x[e.center], 4));
    }
    g->output = out;
    if (g->oom || out < 0) {
        snprintf(err, errlen, "model: EDVR: out of memory building the network");
        pf_net_free(g);
        return -1;
    }
    return 0;
}
