/*  test_edvr — EDVR (nn/edvr.c, pf_net_build_edvr; BasicSR's edvr_arch.py) on the CPU
    executor, a sliding-window network: num_frame LQ frames in, the center frame's SR out (x4,
    or with with_predeblur and hr_in the input's size).
    Always:
     - the parameter table: EDVR-M (num_feat 64, num_frame 5, deformable_groups 8, 5 extraction
       and 10 reconstruction blocks, TSA) has 3300131 parameters, BasicSR's EDVR-L deblur
       (num_feat 128, 40 reconstruction blocks, with_predeblur, hr_in) 23602019, and the tiny
       networks below their counts, all PyTorch's sum(p.numel()) of
       tests/reference/edvr_ref.py's model (`edvr_ref.py count`); names in BasicSR's
       state_dict order (the predeblur's first); the builder's refusals (hr_in without
       with_predeblur among them);
     - the network through a config (model.type EDVR, pf_model: the worker's path): one output
       frame per sample from num_frame LQ frames, the training step's loss against the same
       description run here, pf_model_infer_window against the training output, the refusals
       (pf_model_infer_clip, an LQ size not a multiple of 4, 16 with hr_in), and the config's
       errors (even num_frame, center_frame_idx out of range, deformable_groups not dividing
       num_feat, hr_in (scale 1 data are not supported; the hr_in case sets it on the parsed
       config), n_blocks, a recurrent data set, data.train.num_frame unlike the model's);
       center_frame_idx 1 of 5 and 0 of 3 in two of the tiny cases; with_predeblur accepted;
     - d sum(a * out) / d parameter against central differences for three elements of 22
       tensors (every kind of layer; 33 with the predeblur's) and each tensor's slope along
       its gradient, three cases (the last with_predeblur and hr_in), in oneDNN's layouts and
       NCHW (check_fd: the deep offset path's gradients lie under the differences' noise
       floor; the torch comparison covers them).
    `test_edvr torch` (ctest test_edvr.torch): the six tiny cases through pf_model in oneDNN's
    layouts and forced NCHW, nChw8c, nChw16c handed to tests/reference/edvr_ref.py (EDVR
    written in PyTorch, torchvision's deform_conv2d): output within 1e-5 and loss within 1e-5
    of float64's, every gradient within 1e-4 of float64's (all 24 case-layout pairs: 1.0e-5
    at worst, the output 1.6e-7); load_state_dict(strict=True) of PixFlow's table and of its
    checkpoint writer's file, and torch's state_dict (weights + 0.125) loaded back into PixFlow
    bit for bit. Each case's data are the draw (CASES' draw) that keeps PyTorch's float32 run
    within 5e-5 of float64 (edvr_ref.py's draw rule): no kink within float32 rounding, so the
    comparison does not hang on which side of a kink a layout's rounding lands. PF_TEST_KEEP=1
    keeps the folder.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_hash.h"
#include "tests/pf_test_ref.h"

/* A tiny EDVR: num_feat 16, deformable_groups 2, one extraction block. */
typedef struct {
    int T, rec, tsa, H, W;
    int center;                 /* center_frame_idx (-1: the default, T / 2) */
    size_t params;              /* edvr_ref.py count */
    int draw;                   /* the data's draw: hash names "lq" / "gt", or "lq#k" / "gt#k" */
    int pre, hr;                /* with_predeblur, hr_in (the config refuses hr_in: set on the
                                   parsed config, tiny_model) */
} tiny;

/* draw: the first k that `edvr_ref.py draws CASEDIR` (a PF_TEST_KEEP folder) finds meeting its
   draw rule (PyTorch's runs only, not PixFlow's): every LeakyReLU / ReLU input and Charbonnier
   difference of the float64 run at least 2e-8 from 0 and PyTorch float32's gradients within
   5e-5 of float64's; edvr_ref.py checks the rule on every run. Draw 0 of the T 5, no-TSA,
   16 x 16 case has a LeakyReLU input 9.3e-9 from 0 that float32 rounding crosses (PyTorch
   float32 7.4e-3 off float64, nChw8c 2.2e-2); draw 7 has 2.1e-8 and 4.3e-6. */
static const tiny CASES[] = {
    { 3, 1, 1, 16, 16, -1, 210347, 0, 0, 0 },
    { 5, 2, 1, 12, 20, 1, 216011, 0, 0, 0 },    /* a reference frame off the middle */
    { 5, 1, 0, 16, 16, -1, 192235, 7, 0, 0 },   /* draws 0..6 break the rule */
    { 3, 2, 0, 12, 20, 0, 196363, 0, 0, 0 },
    { 5, 1, 0, 16, 16, -1, 234267, 5, 1, 0 },   /* with_predeblur, x4; draws 0..4 break the
                                                   rule (draw 0: a LeakyReLU input 1.1e-9
                                                   from 0, nChw16c 2.7e-3 off) */
    { 3, 1, 1, 32, 32, -1, 257019, 0, 1, 1 },   /* with_predeblur, hr_in: out at 32 x 32 */
};

static int center_of(const tiny *c) { return c->center < 0 ? c->T / 2 : c->center; }
static int scale_of(const tiny *c) { return c->hr ? 1 : 4; }
static int multiple_of(const tiny *c) { return c->hr ? 16 : 4; }
enum { C = 16, DG = 2, EXT = 1, N = 2 };

static int find(const pf_net *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return i;
    return -1;
}

/* Checks that the tensors names[0..n) come in this order in g (tag names the network);
   returns the last one's index. */
static int in_order(const pf_net *g, const char *const *names, size_t n, const char *tag) {
    int prev = -1;
    for (size_t i = 0; i < n; i++) {
        int at = find(g, names[i]);
        CHECK(at > prev, "%s: %s at %d (after %d)", tag, names[i], at, prev);
        prev = at;
    }
    return prev;
}

/* BasicSR's EDVR-L deblur (test_EDVR_L_deblur_REDS.yml: num_feat 128, num_frame 5,
   deformable_groups 8, 5 extraction and 40 reconstruction blocks, TSA, with_predeblur and
   hr_in true; EDVR_L_deblur_REDS_official-*.pth loads strictly into it): its parameter count
   (`edvr_ref.py count`), the predeblur's names in its state_dict order, same-size output. */
static void check_table_deblur(void) {
    char err[512];
    pf_net g;
    int rc = pf_net_build_edvr(&g, 128, 5, 8, 5, 40, 2, 1, 1, 1, err, sizeof err);
    CHECK(rc == 0, "EDVR-L deblur: %s", err);
    if (rc) return;
    CHECK(g.n_params == 23602019, "EDVR-L deblur: %zu parameters, BasicSR's EDVR(num_feat=128, "
          "num_reconstruct_block=40, hr_in=True, with_predeblur=True) has 23602019",
          g.n_params);
    static const char *order[] = {
        "predeblur.conv_first.weight", "predeblur.conv_first.bias",
        "predeblur.stride_conv_hr1.weight", "predeblur.stride_conv_hr2.bias",
        "predeblur.stride_conv_l2.weight", "predeblur.stride_conv_l3.bias",
        "predeblur.resblock_l3.conv1.weight", "predeblur.resblock_l3.conv2.bias",
        "predeblur.resblock_l2_1.conv1.weight", "predeblur.resblock_l2_2.conv2.bias",
        "predeblur.resblock_l1.0.conv1.weight", "predeblur.resblock_l1.4.conv2.bias",
        "conv_1x1.weight", "conv_1x1.bias", "feature_extraction.0.conv1.weight",
        "conv_l2_1.weight", "pcd_align.offset_conv1.l3.weight", "fusion.temporal_attn1.weight",
        "reconstruction.39.conv2.bias", "conv_last.bias" };
    int prev = in_order(&g, order, sizeof order / sizeof order[0], "EDVR-L deblur");
    CHECK(find(&g, "predeblur.conv_first.weight") == 0 && find(&g, "conv_first.weight") < 0 &&
          prev == g.n_tensors - 1, "EDVR-L deblur: predeblur.conv_first first, no conv_first, "
          "conv_last.bias last");
    int w = find(&g, "conv_1x1.weight"), rb = find(&g, "predeblur.resblock_l1.2.conv1.weight");
    CHECK(w >= 0 && g.tensors[w].shape[1] == 128 && g.tensors[w].shape[2] == 1,
          "conv_1x1 is 1x1 over num_feat");
    CHECK(rb >= 0 && g.init[rb].kind == PF_INIT_NORMAL && fabs(g.init[rb].scale - 0.1) < 1e-12,
          "the predeblur's residual blocks: default_init_weights(0.1)");
    CHECK(g.scale == 1 && pf_net_input_multiple(&g) == 16 && pf_net_frames(&g) == 5 &&
          pf_net_out_frames(&g) == 1, "hr_in: scale 1 and input a multiple of 16 (%d, %d)",
          g.scale, pf_net_input_multiple(&g));
    pf_net_free(&g);
    /* with_predeblur alone (EDVR_L_x4_SRblur_REDS): no stride_conv_hr*, x4, multiple of 4 */
    rc = pf_net_build_edvr(&g, 16, 3, 2, 1, 1, 1, 1, 1, 0, err, sizeof err);
    CHECK(rc == 0 && find(&g, "predeblur.stride_conv_hr1.weight") < 0 &&
          find(&g, "predeblur.stride_conv_l2.weight") == 2 && g.scale == 4 &&
          pf_net_input_multiple(&g) == 4, "with_predeblur, hr_in false: %s", rc ? err : "");
    if (!rc) pf_net_free(&g);
}

static void check_table(void) {
    char err[512];
    pf_net g;
    int rc = pf_net_build_edvr(&g, 64, 5, 8, 5, 10, 2, 1, 0, 0, err, sizeof err);
    CHECK(rc == 0, "EDVR-M: %s", err);
    if (rc) return;
    CHECK(g.n_params == 3300131, "EDVR-M: %zu parameters, BasicSR's EDVR(num_feat=64, "
          "num_frame=5, deformable_groups=8, num_extract_block=5, num_reconstruct_block=10) "
          "has 3300131", g.n_params);
    static const char *order[] = {
        "conv_first.weight", "conv_first.bias", "feature_extraction.0.conv1.weight",
        "feature_extraction.4.conv2.bias", "conv_l2_1.weight", "conv_l2_2.weight",
        "conv_l3_1.weight", "conv_l3_2.bias", "pcd_align.offset_conv1.l3.weight",
        "pcd_align.offset_conv1.l1.bias", "pcd_align.offset_conv2.l3.weight",
        "pcd_align.offset_conv2.l1.weight", "pcd_align.offset_conv3.l2.weight",
        "pcd_align.offset_conv3.l1.bias", "pcd_align.dcn_pack.l3.weight",
        "pcd_align.dcn_pack.l3.bias", "pcd_align.dcn_pack.l3.conv_offset.weight",
        "pcd_align.dcn_pack.l3.conv_offset.bias", "pcd_align.dcn_pack.l1.conv_offset.bias",
        "pcd_align.feat_conv.l2.weight", "pcd_align.feat_conv.l1.bias",
        "pcd_align.cas_offset_conv1.weight", "pcd_align.cas_offset_conv2.bias",
        "pcd_align.cas_dcnpack.weight", "pcd_align.cas_dcnpack.conv_offset.bias",
        "fusion.temporal_attn1.weight", "fusion.temporal_attn2.weight",
        "fusion.feat_fusion.weight", "fusion.spatial_attn1.weight", "fusion.spatial_attn5.bias",
        "fusion.spatial_attn_l1.weight", "fusion.spatial_attn_l3.bias",
        "fusion.spatial_attn_add1.weight", "fusion.spatial_attn_add2.bias",
        "reconstruction.0.conv1.weight", "reconstruction.9.conv2.bias", "upconv1.weight",
        "upconv2.weight", "conv_hr.weight", "conv_last.weight", "conv_last.bias" };
    int prev = in_order(&g, order, sizeof order / sizeof order[0], "EDVR-M");
    CHECK(prev == g.n_tensors - 1, "conv_last.bias is the last tensor");
    int off = find(&g, "pcd_align.dcn_pack.l2.conv_offset.weight");
    CHECK(off >= 0 && g.tensors[off].shape[0] == 27 * 8 && g.tensors[off].shape[1] == 64,
          "conv_offset [216, 64, 3, 3]");
    CHECK(off >= 0 && g.init[off].kind == PF_INIT_CONST && g.init[off].scale == 0.0 &&
          g.init[off + 1].kind == PF_INIT_CONST, "DCNv2Pack's conv_offset zero-initialised");
    int rb = find(&g, "reconstruction.3.conv1.weight");
    CHECK(rb >= 0 && g.init[rb].kind == PF_INIT_NORMAL && fabs(g.init[rb].scale - 0.1) < 1e-12,
          "residual blocks: default_init_weights(0.1)");
    int ff = find(&g, "fusion.feat_fusion.weight");
    CHECK(ff >= 0 && g.tensors[ff].shape[1] == 5 * 64 && g.tensors[ff].shape[2] == 1,
          "feat_fusion 1x1 over 5 frames");
    int dcn = 0;
    for (int k = 0; k < g.n_node; k++) dcn += g.node[k].op == PF_G_DCN;
    CHECK(dcn == 4 * 5, "%d DCN nodes, want 4 per frame", dcn);
    CHECK(pf_net_frames(&g) == 5 && pf_net_out_frames(&g) == 1 && pf_net_input_multiple(&g) == 4,
          "5 frames in, 1 out, LQ a multiple of 4 (%d, %d, %d)", pf_net_frames(&g),
          pf_net_out_frames(&g), pf_net_input_multiple(&g));
    pf_net_free(&g);
    check_table_deblur();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const tiny *c = &CASES[i];
        rc = pf_net_build_edvr(&g, C, c->T, DG, EXT, c->rec, center_of(c), c->tsa, c->pre,
                               c->hr, err, sizeof err);
        CHECK(rc == 0 && g.n_params == c->params, "tiny %zu: %zu parameters, PyTorch %zu (%s)",
              i, rc ? 0 : g.n_params, c->params, rc ? err : "");
        CHECK(rc || (find(&g, "fusion.weight") >= 0) == !c->tsa, "tiny %zu: fusion.weight "
              "exactly without TSA", i);
        if (!rc) pf_net_free(&g);
    }
    static const int bad[6][6] = {   /* C, T, dg, center, with_tsa, hr_in (no predeblur) */
        { 16, 4, 2, 2, 1, 0 }, { 16, 5, 3, 2, 1, 0 }, { 16, 5, 2, 5, 1, 0 },
        { 16, 65, 2, 2, 1, 0 }, { 16, 5, 2, -1, 0, 0 }, { 16, 5, 2, 2, 1, 1 } };
    static const char *why[6] = { "num_frame odd", "dividing num_feat", "center_frame_idx",
                                  "num_frame odd", "center_frame_idx",
                                  "with_predeblur true for hr_in true" };
    for (int i = 0; i < 6; i++) {
        rc = pf_net_build_edvr(&g, bad[i][0], bad[i][1], bad[i][2], 1, 1, bad[i][3], bad[i][4],
                               0, bad[i][5], err, sizeof err);
        CHECK(rc == -1 && strstr(err, "EDVR") && strstr(err, why[i]), "bad case %d: rc %d '%s'",
              i, rc, err);
        if (!rc) pf_net_free(&g);
    }
}

/* ---- the config: model.type EDVR through pf_model --------------------------------------- */

static const char *BASE =
    "work_dir: /tmp/pf_test_edvr\n"
    "model:\n  type: EDVR\n  scale: 4\n  n_feats: 16\n  num_frame: %d\n"
    "  deformable_groups: 2\n  num_extract_block: 1\n  num_reconstruct_block: 1\n%s"
    "  loss:\n    type: CharbonnierLoss\n    eps: 1.0e-12\n";
static const char *TEST_SET =
    "data:\n  test:\n    type: VideoTestDataset\n    gt_folder: gt\n    lq_folder: lq\n"
    "    num_frame: %d\n";

/* BASE with T, extra and the test set of T frames (data NULL) or data. */
static void text_of(char *text, size_t size, int T, const char *extra, const char *data) {
    int at = snprintf(text, size, BASE, T, extra);
    if (data) snprintf(text + at, size - (size_t)at, "%s", data);
    else snprintf(text + at, size - (size_t)at, TEST_SET, T);
}

static int parse(pf_config *cfg, int T, const char *extra, char *err, size_t errlen) {
    char text[2048];
    text_of(text, sizeof text, T, extra, NULL);
    return pf_config_parse(cfg, "edvr.yaml", text, strlen(text), 0, err, errlen);
}

static void check_config_errors(void) {
    static pf_config cfg;
    char err[1024];
    static const struct {
        int T;
        const char *extra, *want;
    } bad[] = {
        { 4, "", "model.num_frame: must be odd" },
        { 5, "  center_frame_idx: 5\n", "model.center_frame_idx: must be in [0, num_frame)" },
        { 5, "  n_feats: 12\n  deformable_groups: 8\n", "model.deformable_groups: must divide "
          "n_feats (12), got 8" },
        { 5, "  with_predeblur: true\n  hr_in: true\n", "model.hr_in: true (BasicSR's "
          "same-size EDVR, trained at scale 1" },
        { 5, "  n_blocks: 4\n", "model.n_blocks: only allowed with type" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* n_feats twice would be a duplicate key: the base's goes when a case gives its own */
        char text[2048];
        text_of(text, sizeof text, bad[i].T, bad[i].extra, NULL);
        if (strstr(bad[i].extra, "n_feats")) {
            char *p = strstr(text, "  n_feats: 16\n");
            memmove(p, p + 14, strlen(p + 14) + 1);
            p = strstr(text, "  deformable_groups: 2\n");
            memmove(p, p + 23, strlen(p + 23) + 1);
        }
        int rc = pf_config_parse(&cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].want), "config case %zu: want '%s', got %s", i,
              bad[i].want, rc ? err : "accepted");
    }
    int rc = parse(&cfg, 5, "", err, sizeof err);
    CHECK(rc == 0 && cfg.center_frame_idx == 2 && cfg.with_tsa == 1 && cfg.edvr_num_frame == 5,
          "defaults: center_frame_idx num_frame // 2, with_tsa (%s)", rc ? err : "");
    rc = parse(&cfg, 5, "  with_predeblur: true\n", err, sizeof err);
    CHECK(rc == 0 && cfg.with_predeblur == 1 && cfg.hr_in == 0, "with_predeblur: true (%s)",
          rc ? err : "");
    rc = parse(&cfg, 5, "  center_frame_idx: ~\n", err, sizeof err);   /* BasicSR's files */
    CHECK(rc == 0 && cfg.center_frame_idx == 2, "center_frame_idx: ~ is num_frame // 2 (%s)",
          rc ? err : "");
    /* the data: REDSDataset / VideoTestDataset of model.num_frame frames */
    static const struct {
        const char *data, *want;
    } sets[] = {
        { "data:\n  train:\n    type: REDSRecurrentDataset\n    gt_folder: gt\n    lq_folder: lq\n"
          "    num_frame: 5\n    gt_patch_size: 64\n",
          "data.train.type: EDVR takes a center frame's window" },
        { "data:\n  train:\n    type: REDSDataset\n    gt_folder: gt\n    lq_folder: lq\n"
          "    num_frame: 3\n    gt_patch_size: 64\n",
          "data.train.num_frame: must equal model.num_frame (5)" },
        { "data:\n  eval:\n    type: VideoRecurrentTestDataset\n    gt_folder: gt\n"
          "    lq_folder: lq\n", "data.eval.type: EDVR takes a center frame's window of "
          "num_frame LQ frames and gives that frame: use VideoTestDataset" },
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char text[2048];
        text_of(text, sizeof text, 5, "", sets[i].data);
        rc = pf_config_parse(&cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
        CHECK(rc == -1 && strstr(err, sets[i].want), "data case %zu: want '%s', got %s", i,
              sets[i].want, rc ? err : "accepted");
    }
}

/* The config of tiny case c parsed and its model built, weights from the counter hash
   (pf_hash_fill_params) and layout forced (PF_LAYOUT_ANY: oneDNN's choice); NULL after a
   failed check. */
static pf_model *tiny_model(const tiny *c, pf_config *cfg, pf_layout layout) {
    char err[1024], extra[128], text[2048];
    int at = snprintf(extra, sizeof extra, "  num_reconstruct_block: %d\n  with_tsa: %s\n"
                      "  with_predeblur: %s\n", c->rec, c->tsa ? "true" : "false",
                      c->pre ? "true" : "false");
    if (c->center >= 0)
        snprintf(extra + at, sizeof extra - (size_t)at, "  center_frame_idx: %d\n", c->center);
    text_of(text, sizeof text, c->T, extra, NULL);
    char *p = strstr(text, "  num_reconstruct_block: 1\n");
    memmove(p, p + 27, strlen(p + 27) + 1);
    int rc = pf_config_parse(cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
    CHECK(rc == 0, "config: %s", err);
    if (rc) return NULL;
    cfg->hr_in = c->hr;         /* the network nn/zoo.c builds for it; the config refuses it */
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    CHECK(m != NULL, "pf_model_new: %s", err);
    if (!m) return NULL;
    ((struct pf_model *)m)->dnnl.force_layout = layout;
    const pf_net *g = pf_model_net(m);
    pf_hash_fill_params(g->tensors, g->n_tensors, pf_model_params(m));
    return m;
}

/* LQ (N x T x H x W x 3) and the center frame's GT (N x sH x sW x 3, s scale_of) of case c,
   from the counter hash; malloc'd. */
static void tiny_data(const tiny *c, uint8_t **lq, uint8_t **gt) {
    int s = scale_of(c);
    size_t lq_n = (size_t)N * c->T * c->H * c->W * 3;
    size_t gt_n = (size_t)N * s * s * c->H * c->W * 3;
    *lq = malloc(lq_n);
    *gt = malloc(gt_n);
    char nl[32] = "lq", ng[32] = "gt";
    if (c->draw) {
        snprintf(nl, sizeof nl, "lq#%d", c->draw);
        snprintf(ng, sizeof ng, "gt#%d", c->draw);
    }
    uint64_t bl = pf_hash_name(nl), bg = pf_hash_name(ng);
    for (size_t i = 0; i < lq_n; i++) (*lq)[i] = (uint8_t)floor(pf_hash_unit(bl, i) * 256);
    for (size_t i = 0; i < gt_n; i++) (*gt)[i] = (uint8_t)floor(pf_hash_unit(bg, i) * 256);
}

/* pf_model from a config: T frames in, one out; the training step's loss against the
   description run by hand (Charbonnier, eps 1e-12, mean over the center frame's GT); the
   training output against pf_model_infer_window per sample; the refusals. */
static void check_model(const tiny *c) {
    static pf_config cfg;
    char err[1024];
    pf_model *m = tiny_model(c, &cfg, PF_LAYOUT_ANY);
    if (!m) return;
    int s = scale_of(c), q = multiple_of(c);
    CHECK(pf_model_num_params(m) == c->params && pf_model_is_video(m) && pf_model_is_window(m) &&
          pf_model_frames(m) == c->T && pf_model_out_frames(m) == 1 && pf_model_scale(m) == s &&
          pf_model_input_multiple(m) == q,
          "EDVR T %d: %zu parameters, video, window, %d frames in, %d out, scale %d, multiple "
          "%d", c->T, pf_model_num_params(m), pf_model_frames(m), pf_model_out_frames(m),
          pf_model_scale(m), pf_model_input_multiple(m));
    int H = c->H, W = c->W, T = c->T, rc;
    size_t gt_n = (size_t)N * s * s * H * W * 3;
    uint8_t *lq, *gt;
    tiny_data(c, &lq, &gt);
    float loss = 0;
    float *out = malloc(gt_n * sizeof(float)), *one = malloc(gt_n / N * sizeof(float));
    rc = pf_model_train_step(m, lq, gt, N, H, W, &loss, err, sizeof err);
    CHECK(rc == 0, "pf_model_train_step: %s", err);
    rc = rc ? rc : pf_model_train_output(m, N, out);
    /* the loss from the training output, in double */
    double want = 0;
    for (size_t i = 0; !rc && i < gt_n; i++) {
        double d = out[i] - gt[i] / 255.0;
        want += sqrt(d * d + 1e-12);
    }
    want /= (double)gt_n;
    CHECK(rc || fabs(loss - want) <= 1e-5 * want, "loss %.8f, from the output %.8f", loss, want);
    double worst = 0;
    for (int s = 0; !rc && s < N; s++) {
        rc = pf_model_infer_window(m, lq + (size_t)s * T * H * W * 3, H, W, one, err,
                                   sizeof err);
        for (size_t i = 0; !rc && i < gt_n / N; i++)
            worst = fmax(worst, fabs(one[i] - out[(size_t)s * (gt_n / N) + i]));
    }
    CHECK(rc == 0 && worst < 1e-5, "pf_model_infer_window against the training output: %.3g "
          "(%s)", worst, rc ? err : "");
    printf("EDVR T %d rec %d tsa %d predeblur %d hr_in %d through pf_model (LQ %d x %d, batch "
           "%d): loss %.8f (from its output %.8f), window inference within %.2g of the training "
           "output\n", T, c->rec, c->tsa, c->pre, c->hr, H, W, N, loss, want, worst);
    rc = pf_model_infer_clip(m, lq, T, H, W, out, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "pf_model_infer_window"), "infer_clip refused: %s",
          rc ? err : "accepted");
    rc = pf_model_infer_window(m, lq, H + 2, W, out, err, sizeof err);
    char want_err[96];
    snprintf(want_err, sizeof want_err, "EDVR: LQ %d x %d: height and width must be multiples "
             "of %d", H + 2, W, q);
    CHECK(rc == -1 && strstr(err, want_err), "LQ %d x %d: %s", H + 2, W, rc ? err : "accepted");
    rc = pf_model_train_step(m, lq, gt, 1, H, W + 6, &loss, err, sizeof err);
    snprintf(want_err, sizeof want_err, "multiples of %d", q);
    CHECK(rc == -1 && strstr(err, want_err), "train LQ %d x %d: %s", H, W + 6,
          rc ? err : "accepted");
    free(lq);
    free(gt);
    free(out);
    free(one);
    pf_model_destroy(&m);
}

/* ---- finite differences ----------------------------------------------------------------- */

/* The loss sum(a * out) (a in [-1, 1) from the hash) of m's training forward on lq / 255,
   in double; with grads, its backward too (the parameter gradients into pf_model_grads). */
static double fd_loss(pf_model *m, const float *x, const float *a, int H, int W, int grads) {
    char err[1024];
    int dims[4];
    if (pf_model_forward_train_f32(m, x, 1, H, W, err, sizeof err) ||
        pf_model_shape(m, -1, dims)) {
        CHECK(0, "forward: %s", err);
        return NAN;
    }
    size_t n = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    float *out = malloc(n * sizeof(float));
    pf_model_read(m, -1, out);
    double l = 0;
    for (size_t i = 0; i < n; i++) l += (double)a[i] * out[i];
    free(out);
    if (grads && pf_model_backward_from(m, a, NULL, NULL, err, sizeof err)) {
        CHECK(0, "backward: %s", err);
        return NAN;
    }
    return l;
}

/* The noise floor of the central differences below: sum(a * out) adds 12288 float32 outputs
   of about 0.5 (rounding a few 1e-6 over the sum, more where a step moves a deformable tap)
   over a step of 2e-3: up to about 3e-3, as test_basicvsrpp's. The gradients of the deep
   offset path (offset_conv*, the coarse levels' conv_offset) are 1e-5..1e-3 with the hash
   weights, under that floor: those tensors are checked by the torch comparison (1e-4 of
   float64's), here only against gross errors (PF_FD_DEBUG=1 prints each tensor's |gradient|
   and slope). */
#define FD_NOISE 3e-3

/* Central differences of sum(a * out) for a tiny EDVR (case c, batch 1) in layout: three
   elements of each named tensor (every kind of layer: the DCNs and their conv_offset at each
   level and the cascade, the pyramid's strided convs, the TSA's, the tail) against its
   gradient, and each tensor's slope along its own gradient against |gradient| (a part of a
   gradient missing, e.g. one of the T places of a shared layer, shows there). */
static void check_fd(const tiny *c, pf_layout layout) {
    static pf_config cfg;
    pf_model *m = tiny_model(c, &cfg, layout);
    if (!m) return;
    const pf_net *g = pf_model_net(m);
    float *params = pf_model_params(m), *gr = malloc(g->n_params * sizeof(float));
    int H = c->H, W = c->W;
    uint8_t *lq, *gt;
    tiny_data(c, &lq, &gt);
    size_t nx = (size_t)c->T * H * W * 3, na = (size_t)3 * scale_of(c) * scale_of(c) * H * W;
    float *x = malloc(nx * sizeof(float)), *a = malloc(na * sizeof(float));
    for (size_t i = 0; i < nx; i++) x[i] = lq[i] / 255.0f;
    uint64_t ba = pf_hash_name("fd.a");
    for (size_t i = 0; i < na; i++) a[i] = (float)(2 * pf_hash_unit(ba, i) - 1);
    fd_loss(m, x, a, H, W, 1);
    memcpy(gr, pf_model_grads(m), g->n_params * sizeof(float));
    static const char *names[] = {
        "conv_first.weight", "feature_extraction.0.conv2.weight", "conv_l2_1.weight",
        "conv_l3_1.bias", "pcd_align.offset_conv1.l3.weight", "pcd_align.offset_conv2.l2.weight",
        "pcd_align.dcn_pack.l3.weight", "pcd_align.dcn_pack.l2.conv_offset.weight",
        "pcd_align.dcn_pack.l1.weight", "pcd_align.dcn_pack.l1.conv_offset.bias",
        "pcd_align.feat_conv.l1.weight", "pcd_align.cas_dcnpack.weight",
        "pcd_align.cas_dcnpack.conv_offset.weight", "fusion.temporal_attn1.weight",
        "fusion.temporal_attn2.weight", "fusion.spatial_attn2.weight",
        "fusion.spatial_attn_l2.weight", "fusion.spatial_attn_add2.bias", "fusion.weight",
        "reconstruction.0.conv1.weight", "upconv2.weight", "conv_last.bias",
        "predeblur.conv_first.weight", "predeblur.stride_conv_hr1.weight",
        "predeblur.stride_conv_hr2.bias", "predeblur.stride_conv_l2.weight",
        "predeblur.stride_conv_l3.weight", "predeblur.resblock_l3.conv1.weight",
        "predeblur.resblock_l2_1.conv2.weight", "predeblur.resblock_l2_2.conv1.bias",
        "predeblur.resblock_l1.1.conv2.weight", "predeblur.resblock_l1.4.conv1.weight",
        "conv_1x1.weight" };
    int n_bad = 0, n_all = 0, n_slopes = 0;
    int n_strong = 0;           /* slopes of |gradient| >= 10 FD_NOISE: checked within 20 % */
    double worst = 0, worst_slope = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        int ti = find(g, names[k]);
        if (ti < 0) {   /* fusion.* with TSA, fusion.weight without; conv_first or the
                           predeblur's (stride_conv_hr* with hr_in) */
            int pre = !strncmp(names[k], "predeblur.", 10) ||
                      !strcmp(names[k], "conv_1x1.weight");
            CHECK(!strncmp(names[k], "fusion.", 7) ||
                  (c->pre ? !strcmp(names[k], "conv_first.weight") ||
                                (!c->hr && strstr(names[k], "stride_conv_hr"))
                          : pre), "no %s", names[k]);
            continue;
        }
        const pf_param_info *t = &g->tensors[ti];
        double scale = 0, n2 = 0;
        for (size_t j = 0; j < t->numel; j++) {
            scale = fmax(scale, fabs(gr[t->offset + j]));
            n2 += (double)gr[t->offset + j] * gr[t->offset + j];
        }
        for (int s = 0; s < 3; s++) {
            size_t j = pf_hash_mix(pf_hash_name(names[k]) ^ (uint64_t)s) % t->numel;
            float *p = &params[t->offset + j], keep = *p;
            *p = (float)(keep + 1e-3);
            double e1 = *p - keep, lp = fd_loss(m, x, a, H, W, 0);
            *p = (float)(keep - 1e-3);
            double e2 = keep - *p, lm = fd_loss(m, x, a, H, W, 0);
            *p = keep;
            double fd = (lp - lm) / (e1 + e2), e = fabs(fd - gr[t->offset + j]);
            n_all++;
            worst = fmax(worst, e / (2e-2 * scale + FD_NOISE));
            if (e > 2e-2 * scale + FD_NOISE) {
                n_bad++;
                printf("  %s[%zu]: gradient %.6g, finite difference %.6g (%.3g of %.3g)\n",
                       names[k], j, gr[t->offset + j], fd, e, scale);
            }
        }
        /* along the gradient: a step of norm 1e-3; within 10 % (a step moves deformable taps
           across pixel borders) */
        float *p = params + t->offset, *keep = malloc(t->numel * sizeof(float));
        double norm = sqrt(n2), h = 1e-3 / (norm > 0 ? norm : 1);
        memcpy(keep, p, t->numel * sizeof(float));
        for (size_t j = 0; j < t->numel; j++) p[j] = (float)(keep[j] + h * gr[t->offset + j]);
        double lp = fd_loss(m, x, a, H, W, 0);
        for (size_t j = 0; j < t->numel; j++) p[j] = (float)(keep[j] - h * gr[t->offset + j]);
        double lm = fd_loss(m, x, a, H, W, 0);
        memcpy(p, keep, t->numel * sizeof(float));
        free(keep);
        double slope = (lp - lm) / 2e-3;
        n_slopes++;
        n_strong += norm >= 10 * FD_NOISE;
        if (getenv("PF_FD_DEBUG")) printf("  %s |g| %.3g slope %.3g\n", names[k], norm, slope);
        worst_slope = fmax(worst_slope, fabs(slope - norm) / (1e-1 * norm + FD_NOISE));
        CHECK(fabs(slope - norm) <= 1e-1 * norm + FD_NOISE, "%s (layout %d): slope along the "
              "gradient %.6g, |gradient| %.6g", names[k], (int)layout, slope, norm);
    }
    /* a bilinear kink (deformable sampling, a resize) inside a step may cost a sample */
    CHECK(n_bad <= 2, "layout %d: %d of %d gradient samples off their finite differences",
          (int)layout, n_bad, n_all);
    printf("EDVR T %d tsa %d predeblur %d hr_in %d (layout %d): %d of %d gradient samples "
           "within 2e-2 of their tensor's largest gradient plus %.0e of their central "
           "differences (worst at %.2g of that); %d slopes along the gradient within 10 %% of "
           "|gradient| plus %.0e (worst at %.2g of that; %d of them with |gradient| >= 10x that "
           "floor, the others are the torch comparison's)\n", c->T, c->tsa, c->pre, c->hr,
           (int)layout, n_all - n_bad, n_all, FD_NOISE, worst, n_slopes, FD_NOISE, worst_slope,
           n_strong);
    free(x);
    free(a);
    free(gr);
    free(lq);
    free(gt);
    pf_model_destroy(&m);
}

/* ---- torch: every case to edvr_ref.py ----------------------------------------------------- */

static const pf_layout LAYOUTS[4] = { PF_LAYOUT_ANY, PF_LAYOUT_NCHW, PF_LAYOUT_NCHW8C,
                                      PF_LAYOUT_NCHW16C };

/* Case c's folder dir: params.txt, params.f32, lq.u8, gt.u8, saved.safetensors (the
   checkpoint writer's file) and, per layout k, LK.out.f32 (N 3 4H 4W), LK.loss.f32,
   LK.grads.f32 from pf_model_train_step (Charbonnier eps 1e-12). */
static void torch_case(const tiny *c, const char *dir) {
    static pf_config cfg;
    char err[1024], path[1200];
    uint8_t *lq, *gt;
    tiny_data(c, &lq, &gt);
    int s = scale_of(c);
    size_t gt_n = (size_t)N * s * s * c->H * c->W * 3;
    float *out = malloc(gt_n * sizeof(float)), *nchw = malloc(gt_n * sizeof(float));
    for (int k = 0; k < 4; k++) {
        pf_model *m = tiny_model(c, &cfg, LAYOUTS[k]);
        if (!m) break;
        const pf_net *g = pf_model_net(m);
        if (k == 0) {
            snprintf(path, sizeof path, "%s/params.txt", dir);
            FILE *f = fopen(path, "w");
            CHECK(f != NULL, "%s", path);
            if (!f) break;
            fprintf(f, "config %d %d %d %d %d %d %d %d %d %d %d %d %d\n", N, c->T, c->H, c->W, C,
                    DG, EXT, c->rec, center_of(c), c->tsa, c->draw, c->pre, c->hr);
            for (int i = 0; i < g->n_tensors; i++) {
                const pf_param_info *t = &g->tensors[i];
                fprintf(f, "param %s %zu %d", t->name, t->offset, t->ndim);
                for (int d = 0; d < t->ndim; d++) fprintf(f, " %lld", (long long)t->shape[d]);
                fprintf(f, "\n");
            }
            CHECK(fclose(f) == 0, "%s", path);
            pf_ref_write_file(dir, "params.f32", pf_model_params(m),
                              g->n_params * sizeof(float));
            pf_ref_write_file(dir, "lq.u8", lq, (size_t)N * c->T * c->H * c->W * 3);
            pf_ref_write_file(dir, "gt.u8", gt, gt_n);
            void *wbuf = NULL;
            size_t wlen = 0;
            snprintf(path, sizeof path, "%s/saved.safetensors", dir);
            CHECK(pf_ckpt_serialize(&cfg, m, NULL, 0, 0, 0.0, &wbuf, &wlen, NULL, NULL, err,
                                    sizeof err) == 0 &&
                  pf_write_file_atomic(path, wbuf, wlen, err, sizeof err) == 0, "%s", err);
            free(wbuf);
        }
        float loss = 0;
        int rc = pf_model_train_step(m, lq, gt, N, c->H, c->W, &loss, err, sizeof err);
        CHECK(rc == 0, "train step (layout %d): %s", (int)LAYOUTS[k], err);
        if (rc == 0 && pf_model_train_output(m, N, out) == 0) {
            int OH = s * c->H, OW = s * c->W;
            for (int n = 0; n < N; n++)
                for (int ch = 0; ch < 3; ch++)
                    for (size_t i = 0; i < (size_t)OH * OW; i++)
                        nchw[((size_t)n * 3 + ch) * OH * OW + i] =
                            out[((size_t)n * OH * OW + i) * 3 + ch];
            char name[64];
            snprintf(name, sizeof name, "L%d.out.f32", k);
            pf_ref_write_file(dir, name, nchw, gt_n * sizeof(float));
            snprintf(name, sizeof name, "L%d.grads.f32", k);
            pf_ref_write_file(dir, name, pf_model_grads(m), g->n_params * sizeof(float));
            snprintf(name, sizeof name, "L%d.loss.f32", k);
            pf_ref_write_file(dir, name, &loss, sizeof loss);
        }
        pf_model_destroy(&m);
    }
    free(out);
    free(nchw);
    free(lq);
    free(gt);
}

/* torch's state_dict (edvr_ref.py wrote it as torch.safetensors: the hash weights + 0.125)
   into PixFlow's model of case c: every parameter equal. */
static void torch_back(const tiny *c, const char *dir) {
    static pf_config cfg;
    char err[1024], path[1200];
    pf_model *m = tiny_model(c, &cfg, PF_LAYOUT_ANY);
    if (!m) return;
    size_t n = pf_model_num_params(m);
    float *want = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) want[i] = pf_model_params(m)[i] + 0.125f;
    snprintf(path, sizeof path, "%s/torch.safetensors", dir);
    int rc = pf_ckpt_load_weights(m, path, NULL, err, sizeof err);
    CHECK(rc == 0, "torch's state_dict into PixFlow: %s", err);
    CHECK(rc || memcmp(want, pf_model_params(m), n * sizeof(float)) == 0,
          "torch's state_dict: parameters differ after loading");
    free(want);
    pf_model_destroy(&m);
}

static void check_torch(void) {
    char root[] = "/tmp/pf_edvr.XXXXXX", dir[1100], err[512];
    if (!mkdtemp(root)) {
        CHECK(0, "mkdtemp");
        return;
    }
    size_t n_cases = sizeof CASES / sizeof CASES[0];
    for (size_t i = 0; i < n_cases; i++) {
        snprintf(dir, sizeof dir, "%s/case%zu", root, i);
        CHECK(pf_mkdirs(dir, err, sizeof err) == 0, "%s", err);
        torch_case(&CASES[i], dir);
    }
    pf_ref_exec("edvr_ref.py", root);
    for (size_t i = 0; i < n_cases; i++) {
        snprintf(dir, sizeof dir, "%s/case%zu", root, i);
        torch_back(&CASES[i], dir);
    }
    if (getenv("PF_TEST_KEEP")) printf("test_edvr torch: kept %s (PF_TEST_KEEP)\n", root);
    else pf_ref_remove(root);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) {
        if (!pf_ref_have("test_edvr torch", "numpy, torch, torchvision")) return 77;
        check_torch();
        return pf_test_end("test_edvr torch");
    }
    check_table();
    check_config_errors();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_model(&CASES[i]);
    check_fd(&CASES[0], PF_LAYOUT_ANY);
    check_fd(&CASES[3], PF_LAYOUT_NCHW);
    check_fd(&CASES[5], PF_LAYOUT_ANY);     /* the predeblur with hr_in */
    return pf_test_end("test_edvr");
}
