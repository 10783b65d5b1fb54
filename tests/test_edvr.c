/*  test_edvr — EDVR x4 (nn/edvr.c, pf_net_build_edvr; BasicSR's edvr_arch.py) on the CPU
    executor, a sliding-window network: num_frame LQ frames in, the center frame's SR out.
    Always:
     - the parameter table: EDVR-M (num_feat 64, num_frame 5, deformable_groups 8, 5 extraction
       and 10 reconstruction blocks, TSA) has 3300131 parameters, and the tiny networks below
       their counts, both PyTorch's sum(p.numel()) of tests/reference/edvr_ref.py's model
       (`edvr_ref.py count`); names in BasicSR's state_dict order; the builder's refusals;
     - the network through a config (model.type EDVR, pf_model: the worker's path): one output
       frame per sample from num_frame LQ frames, the training step's loss against the same
       description run here, pf_model_infer_window against the training output, the refusals
       (pf_model_infer_clip, an LQ size not a multiple of 4), and the config's errors (even
       num_frame, center_frame_idx out of range, deformable_groups not dividing num_feat,
       hr_in, with_predeblur, a recurrent data set, data.train.num_frame unlike the model's).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "nn/net.h"
#include "tests/pf_test.h"
#include "tests/pf_test_hash.h"

/* A tiny EDVR: num_feat 16, deformable_groups 2, one extraction block. */
typedef struct {
    int T, rec, tsa, H, W;
    size_t params;              /* edvr_ref.py count */
} tiny;

static const tiny CASES[] = {
    { 3, 1, 1, 16, 16, 210347 },
    { 5, 2, 1, 12, 20, 216011 },
    { 5, 1, 0, 16, 16, 192235 },
    { 3, 2, 0, 12, 20, 196363 },
};
enum { C = 16, DG = 2, EXT = 1, N = 2 };

static int find(const pf_net *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return i;
    return -1;
}

static void check_table(void) {
    char err[512];
    pf_net g;
    int rc = pf_net_build_edvr(&g, 64, 5, 8, 5, 10, 2, 1, err, sizeof err);
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
    int prev = -1;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int at = find(&g, order[i]);
        CHECK(at > prev, "%s at %d (after %d)", order[i], at, prev);
        prev = at;
    }
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
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const tiny *c = &CASES[i];
        rc = pf_net_build_edvr(&g, C, c->T, DG, EXT, c->rec, c->T / 2, c->tsa, err, sizeof err);
        CHECK(rc == 0 && g.n_params == c->params, "tiny %zu: %zu parameters, PyTorch %zu (%s)",
              i, rc ? 0 : g.n_params, c->params, rc ? err : "");
        CHECK(rc || (find(&g, "fusion.weight") >= 0) == !c->tsa, "tiny %zu: fusion.weight "
              "exactly without TSA", i);
        if (!rc) pf_net_free(&g);
    }
    static const int bad[5][5] = {   /* C, T, dg, center, with_tsa */
        { 16, 4, 2, 2, 1 }, { 16, 5, 3, 2, 1 }, { 16, 5, 2, 5, 1 }, { 16, 65, 2, 2, 1 },
        { 16, 5, 2, -1, 0 } };
    static const char *why[5] = { "num_frame odd", "dividing num_feat", "center_frame_idx",
                                  "num_frame odd", "center_frame_idx" };
    for (int i = 0; i < 5; i++) {
        rc = pf_net_build_edvr(&g, bad[i][0], bad[i][1], bad[i][2], 1, 1, bad[i][3], bad[i][4],
                               err, sizeof err);
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
        { 5, "  hr_in: true\n", "model.hr_in: true" },
        { 5, "  with_predeblur: true\n", "model.with_predeblur: true" },
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
    /* the data: REDSDataset / VideoTestDataset of model.num_frame frames */
    static const struct {
        const char *data, *want;
    } sets[] = {
        { "data:\n  train:\n    type: REDSRecurrentDataset\n    gt_folder: gt\n    lq_folder: lq\n"
          "    num_frame: 5\n    gt_patch_size: 64\n", "data.train.type: EDVR takes a center frame's window" },
        { "data:\n  train:\n    type: REDSDataset\n    gt_folder: gt\n    lq_folder: lq\n"
          "    num_frame: 3\n    gt_patch_size: 64\n", "data.train.num_frame: must equal model.num_frame (5)" },
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char text[2048];
        text_of(text, sizeof text, 5, "", sets[i].data);
        rc = pf_config_parse(&cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
        CHECK(rc == -1 && strstr(err, sets[i].want), "data case %zu: want '%s', got %s", i,
              sets[i].want, rc ? err : "accepted");
    }
}

/* pf_model from a config: T frames in, one out; the training step's loss against the
   description run by hand (Charbonnier, eps 1e-12, mean over the center frame's GT); the
   training output against pf_model_infer_window per sample; the refusals. */
static void check_model(const tiny *c) {
    static pf_config cfg;
    char err[1024], extra[128];
    snprintf(extra, sizeof extra, "  num_reconstruct_block: %d\n  with_tsa: %s\n", c->rec,
             c->tsa ? "true" : "false");
    char text[2048];
    text_of(text, sizeof text, c->T, extra, NULL);
    char *p = strstr(text, "  num_reconstruct_block: 1\n");
    memmove(p, p + 27, strlen(p + 27) + 1);
    int rc = pf_config_parse(&cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
    CHECK(rc == 0, "config: %s", err);
    if (rc) return;
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "pf_model_new: %s", err);
    if (!m) return;
    CHECK(pf_model_num_params(m) == c->params && pf_model_is_video(m) && pf_model_is_window(m) &&
          pf_model_frames(m) == c->T && pf_model_out_frames(m) == 1 && pf_model_scale(m) == 4 &&
          pf_model_input_multiple(m) == 4,
          "EDVR T %d: %zu parameters, video, window, %d frames in, %d out", c->T,
          pf_model_num_params(m), pf_model_frames(m), pf_model_out_frames(m));
    const pf_net *g = pf_model_net(m);
    pf_hash_fill_params(g->tensors, g->n_tensors, pf_model_params(m));
    int H = c->H, W = c->W, T = c->T;
    size_t lq_n = (size_t)N * T * H * W * 3, gt_n = (size_t)N * 16 * H * W * 3;
    uint8_t *lq = malloc(lq_n), *gt = malloc(gt_n);
    uint64_t bl = pf_hash_name("lq"), bg = pf_hash_name("gt");
    for (size_t i = 0; i < lq_n; i++) lq[i] = (uint8_t)floor(pf_hash_unit(bl, i) * 256);
    for (size_t i = 0; i < gt_n; i++) gt[i] = (uint8_t)floor(pf_hash_unit(bg, i) * 256);
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
    printf("EDVR T %d rec %d tsa %d through pf_model (LQ %d x %d, batch %d): loss %.8f (from "
           "its output %.8f), window inference within %.2g of the training output\n", T,
           c->rec, c->tsa, H, W, N, loss, want, worst);
    rc = pf_model_infer_clip(m, lq, T, H, W, out, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "pf_model_infer_window"), "infer_clip refused: %s",
          rc ? err : "accepted");
    rc = pf_model_infer_window(m, lq, H + 2, W, out, err, sizeof err);
    char want_err[96];
    snprintf(want_err, sizeof want_err, "EDVR: LQ %d x %d: height and width must be multiples "
             "of 4", H + 2, W);
    CHECK(rc == -1 && strstr(err, want_err), "LQ %d x %d: %s", H + 2, W, rc ? err : "accepted");
    rc = pf_model_train_step(m, lq, gt, 1, H, W + 6, &loss, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "multiples of 4"), "train LQ %d x %d: %s", H, W + 6,
          rc ? err : "accepted");
    free(lq);
    free(gt);
    free(out);
    free(one);
    pf_model_destroy(&m);
}

int main(void) {
    check_table();
    check_config_errors();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) check_model(&CASES[i]);
    return pf_test_end("test_edvr");
}
