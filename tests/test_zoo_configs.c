/*  test_zoo_configs — every file in configs/zoo (the references' architectures and recipes), and
    configs/demo_video_pp.yaml (the BasicVSR++ CPU demo, not run by any other test), parses,
    builds its network with the published parameter count, and infers a small image to finite
    values. Expected counts: PyTorch's sum(p.numel()) of tests/reference/zoo_archs.py's
    networks with the same hyper-parameters, which agree with the papers' figures (EDSR-baseline
    x2 1.37 M, EDSR x2 40.7 M, MSRResNet x4 1.52 M, RCAN x2 15.4 M, ESRGAN's RRDBNet 16.7 M;
    BasicVSR++: tests/reference/basicvsrpp_ref.py's BasicVSRPP(64, 7, 10), the paper's 7.3 M).
    And every network row (common/networks.h) has a builder in nn/zoo.c: each builds its
    description at each of its scales with the default keys.
    The GAN recipes (RealESRGAN_x4plus, ESRGAN_x4) also hold the values of BasicSR's option files
    (Real-ESRGAN's options/train_realesrgan_x4plus.yml, BasicSR's
    options/train/ESRGAN/train_ESRGAN_x4.yml), written out below, and load with their paths
    checked (load_from, the VGG19 weights) in a folder where the test makes those files.
    EDVR_M_x4 holds BasicSR's train_EDVR_M_x4_SR_REDS.yml values (written out below) and, a
    sliding-window network, infers one window of its 5 frames (12 x 12, a multiple of 4). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/networks.h"
#include "common/util.h"
#include "nn/model.h"
#include "nn/net.h"
#include "tests/pf_test.h"

static const struct {
    const char *file;
    size_t params;
} cases[] = {
    { "EDSR_Mx2.yaml", 1369859 },
    { "EDSR_Lx2.yaml", 40729603 },
    { "MSRResNet_x4.yaml", 1517571 },
    { "RCAN_x2.yaml", 15444643 },
    { "RRDBNet_PSNR_x4.yaml", 16697987 },
    { "RealESRNet_x4plus.yaml", 16697987 },  /* the same RRDBNet, Real-ESRGAN data */
    { "FSRCNN_x3.yaml", 24683 },
    { "ESPCN_x3.yaml", 31131 },
    { "EDVR_M_x4.yaml", 3300131 },           /* EDVR-M with TSA (tests/reference/edvr_ref.py) */
    { "RealESRGAN_x4plus.yaml", 16697987 },  /* RealESRNet's RRDBNet, GAN fine-tune */
    { "ESRGAN_x4.yaml", 16697987 },          /* ESRGAN's RRDBNet, GAN stage */
    { "BasicVSRPP_x4.yaml", 7322927 },       /* BasicVSR++ c64n7 (the paper's 7.3 M) */
    { "../demo_video_pp.yaml", 1952255 },    /* the CPU demo's BasicVSR++ 16 / 1 */
};

/* The GAN options both recipes share with their BasicSR file: net_d_iters 1, net_d_init_iters 0,
   Adam 1e-4 betas (0.9, 0.99) weight_decay 0 for net_g and net_d, ema 0.999, 400k iterations,
   MultiStepLR gamma 0.5, vanilla GANLoss with labels 1 / 0, VGG19 with ImageNet input norm, no
   range norm, l1 criterion, perceptual 1, no style loss. */
static void gan_common(const pf_config *c, const char *f) {
    const pf_gan_cfg *g = &c->gan;
    const pf_perceptual_opts *p = &g->perceptual_opt;
    CHECK(g->enabled && g->net_d_iters == 1 && g->net_d_init_iters == 0, "%s: net_d iters", f);
    CHECK(!strcmp(c->optim_type, "Adam") && c->learning_rate == 1e-4f && c->betas[0] == 0.9f &&
              c->betas[1] == 0.99f && c->weight_decay == 0, "%s: optim_g", f);
    CHECK(!strcmp(g->optim_d.type, "Adam") && g->optim_d.lr == 1e-4f &&
              g->optim_d.betas[0] == 0.9f && g->optim_d.betas[1] == 0.99f &&
              g->optim_d.weight_decay == 0, "%s: optim_d", f);
    CHECK(c->ema_decay == 0.999f && c->total_iters == 400000 && !strcmp(c->lr_policy, "Step") &&
              c->lr_gamma == 0.5f, "%s: ema, total_iter, scheduler", f);
    CHECK(!strcmp(g->gan_opt.gan_type, "vanilla") && g->gan_opt.real_label_val == 1.0f &&
              g->gan_opt.fake_label_val == 0.0f, "%s: gan_opt", f);
    CHECK(g->has_perceptual_opt && !strcmp(p->vgg_type, "vgg19") && p->use_input_norm &&
              !p->range_norm && p->criterion == PF_PERCEP_L1 && p->perceptual_weight == 1.0 &&
              p->style_weight == 0, "%s: perceptual_opt", f);
    CHECK(!strcmp(g->vgg_weights, "experiments/pretrained_models/vgg19.safetensors"),
          "%s: vgg_weights %s", f, g->vgg_weights);
    CHECK(!strcmp(c->model_type, "RRDBNet") && c->n_feats == 64 && c->n_blocks == 23 &&
              c->num_grow_ch == 32 && c->scale == 4, "%s: network_g", f);
}

/* Each recipe's own values (its BasicSR file's). */
static void gan_recipe_values(const pf_config *c, const char *f) {
    const pf_gan_cfg *g = &c->gan;
    const pf_perceptual_opts *p = &g->perceptual_opt;
    gan_common(c, f);
    if (!strcmp(f, "RealESRGAN_x4plus.yaml")) {
        static const char *names[] = { "conv1_2", "conv2_2", "conv3_4", "conv4_4", "conv5_4" };
        static const double w[] = { 0.1, 0.1, 1, 1, 1 };
        CHECK(!strcmp(g->model_type, "RealESRGANModel") && g->l1_gt_usm && g->percep_gt_usm &&
                  !g->gan_gt_usm, "%s: model_type, *_gt_usm", f);
        CHECK(!strcmp(g->network_d.type, "UNetDiscriminatorSN") && g->network_d.num_feat == 64 &&
                  g->network_d.num_in_ch == 3 && g->network_d.skip_connection, "%s: net_d", f);
        CHECK(p->n_layers == 5, "%s: %d perceptual layers", f, p->n_layers);
        for (int i = 0; i < 5 && i < p->n_layers; i++)
            CHECK(!strcmp(p->layer_weights[i].name, names[i]) && p->layer_weights[i].weight == w[i],
                  "%s: layer %d %s %g", f, i, p->layer_weights[i].name, p->layer_weights[i].weight);
        CHECK(c->loss_weight == 1.0f && g->gan_opt.loss_weight == 0.1f, "%s: loss weights", f);
        CHECK(c->n_lr_step == 1 && c->lr_step[0] == 400000, "%s: milestones", f);
        CHECK(c->train.gt_patch_size == 256 && c->train.gt_usm, "%s: gt_size, gt_usm", f);
        CHECK(!strcmp(c->load_from,
                      "work_dirs/RealESRNet_x4plus/checkpoints/iter_1000000.safetensors"),
              "%s: load_from %s", f, c->load_from);
    } else {
        static const int64_t ms[] = { 50000, 100000, 200000, 300000 };
        CHECK(!strcmp(g->model_type, "ESRGANModel"), "%s: model_type", f);
        CHECK(!strcmp(g->network_d.type, "VGGStyleDiscriminator") && g->network_d.num_feat == 64 &&
                  g->network_d.input_size == 128, "%s: net_d", f);
        CHECK(p->n_layers == 1 && !strcmp(p->layer_weights[0].name, "conv5_4") &&
                  p->layer_weights[0].weight == 1.0, "%s: perceptual layers", f);
        CHECK(c->loss_weight == 1e-2f && g->gan_opt.loss_weight == 5e-3f, "%s: loss weights", f);
        CHECK(c->n_lr_step == 4, "%s: %d milestones", f, c->n_lr_step);
        for (int i = 0; i < 4 && i < c->n_lr_step; i++)
            CHECK(c->lr_step[i] == ms[i], "%s: milestone %d", f, i);
        CHECK(c->train.gt_patch_size == 128, "%s: gt_size", f);
        CHECK(!strcmp(c->load_from,
                      "work_dirs/RRDBNet_PSNR_x4/checkpoints/iter_1000000.safetensors"),
              "%s: load_from %s", f, c->load_from);
    }
}

/* BasicVSRPP_x4.yaml holds MMagic's basicvsr-pp_c64n7_8xb1-600k_reds4.py values (written out
   here): BasicVSRPlusPlusNet 64 / 7, is_low_res_input, Charbonnier, fix_iter 5000, batch 1 per
   GPU of 30-frame clips at GT 256 with flips and transpose, Adam 1e-4 betas (0.9, 0.99), spynet
   lr_mult 0.25, CosineRestartLR one period of 600k to 1e-7, validation every 5000 on RGB. */
static void basicvsrpp_recipe_values(const pf_config *c, const char *f) {
    CHECK(c->n_feats == 64 && c->n_blocks == 7 && c->max_residue_magnitude == 10.0f &&
              c->is_low_res_input && c->scale == 4 && c->fix_iter == 5000, "%s: network_g", f);
    CHECK(!strcmp(c->loss_type, "CharbonnierLoss"), "%s: loss %s", f, c->loss_type);
    CHECK(c->samples_per_gpu == 1 && c->train.num_frame == 30 && c->train.gt_patch_size == 256 &&
              c->train.use_hflip && c->train.use_rot, "%s: train data", f);
    CHECK(!strcmp(c->optim_type, "Adam") && c->learning_rate == 1e-4f && c->betas[0] == 0.9f &&
              c->betas[1] == 0.99f && c->weight_decay == 0, "%s: optimizer", f);
    CHECK(c->n_custom_keys == 1 && !strcmp(c->custom_keys[0].key, "spynet") &&
              c->custom_keys[0].lr_mult == 0.25f, "%s: paramwise_cfg", f);
    CHECK(!strcmp(c->lr_policy, "CosineRestart") && c->n_lr_periods == 1 &&
              c->lr_periods[0] == 600000 && c->lr_restart_weights[0] == 1.0f &&
              c->lr_min == 1e-7f && c->total_iters == 600000, "%s: scheduler", f);
}

/* An empty file at rel (its folders made). */
static int touch(const char *rel) {
    char dir[1024], err[256];
    snprintf(dir, sizeof dir, "%s", rel);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    FILE *f = slash && pf_mkdirs(dir, err, sizeof err) ? NULL : fopen(rel, "wb");
    return f ? fclose(f) : -1;
}

/* EDVR_M_x4.yaml against BasicSR's train_EDVR_M_x4_SR_REDS.yml (the values written out). */
static void edvr_recipe_values(const pf_config *c, const char *f) {
    static const int64_t periods[] = { 50000, 100000, 150000, 150000, 150000 };
    CHECK(!strcmp(c->model_type, "EDVR") && c->scale == 4 && c->n_feats == 64 &&
              c->edvr_num_frame == 5 && c->deformable_groups == 8 && c->num_extract_block == 5 &&
              c->num_reconstruct_block == 10 && c->center_frame_idx == 2 && c->with_tsa,
          "%s: network_g", f);
    CHECK(!strcmp(c->train.type, "REDSDataset") && c->train.num_frame == 5 &&
              c->train.gt_patch_size == 256 && c->train.n_intervals == 1 &&
              c->train.interval_list[0] == 1 && c->train.use_hflip && c->train.use_rot &&
              c->train.repeat == 200 && c->samples_per_gpu == 4, "%s: datasets.train", f);
    CHECK(!strcmp(c->eval.type, "VideoTestDataset") && c->eval.num_frame == 5 &&
              !strcmp(c->eval.padding, "reflection_circle"), "%s: datasets.val", f);
    CHECK(!strcmp(c->optim_type, "Adam") && c->learning_rate == 4e-4f && c->betas[0] == 0.9f &&
              c->betas[1] == 0.99f && c->weight_decay == 0, "%s: optim_g", f);
    CHECK(!strcmp(c->lr_policy, "CosineRestart") && c->n_lr_periods == 5 &&
              c->lr_min == 1e-7f && c->total_iters == 600000, "%s: scheduler", f);
    for (int i = 0; i < 5 && i < c->n_lr_periods; i++)
        CHECK(c->lr_periods[i] == periods[i] && c->lr_restart_weights[i] == 1.0f,
              "%s: period %d", f, i);
    CHECK(c->eval_psnr && !c->eval_ssim && c->crop_border == 0 && !c->eval_y_channel &&
              c->seed == 10, "%s: val metrics, seed", f);
    CHECK(c->tsa_iter == 50000 && c->n_custom_keys == 0, "%s: train.tsa_iter 50000 "
          "(train_cfg.tsa_iter), dcn_lr_mul 1 (no paramwise_cfg)", f);
}

/* The recipe at `path` loads with its paths checked, relative to a fresh folder holding the
   demo data folders and the files it names (load_from, VGG19); without the VGG19 file it is
   refused at that key. */
static void gan_recipe_loads(const char *path, const char *text, size_t len, const pf_config *c) {
    char cwd[4096], dir[] = "/tmp/pf_test_zoo_gan_XXXXXX", err[2048] = "";
    static pf_config l;
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(dir) || chdir(dir)) {
        CHECK(0, "cannot make %s", dir);
        return;
    }
    CHECK(pf_mkdirs(c->train.gt_folder, err, sizeof err) == 0 &&
              pf_mkdirs(c->test.gt_folder, err, sizeof err) == 0 && touch(c->load_from) == 0,
          "%s: make the data folders and load_from: %s", path, err);
    CHECK(pf_config_parse(&l, path, text, len, 1, err, sizeof err) == -1 &&
              strstr(err, "gan.perceptual_opt.vgg_weights: no such file"),
          "%s without VGG19 weights: %s", path, err);
    CHECK(touch(c->gan.vgg_weights) == 0, "make %s", c->gan.vgg_weights);
    CHECK(pf_config_parse(&l, path, text, len, 1, err, sizeof err) == 0, "%s: %s", path, err);
    CHECK(chdir(cwd) == 0, "back to %s", cwd);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    CHECK(system(rm) == 0, "%s", rm);
}

static void every_row_builds(void) {
    static pf_config c;
    for (int i = 0; i < pf_n_networks; i++)
        for (int s = 1; s <= 8; s++) {
            if (!(pf_networks[i].scales >> s & 1)) continue;
            pf_config_defaults(&c);
            snprintf(c.model_type, sizeof c.model_type, "%s", pf_networks[i].name);
            c.scale = s;
            if (pf_networks[i].n_blocks) c.n_blocks = pf_networks[i].n_blocks;
            pf_net g;
            char err[512];
            int rc = pf_net_build(&g, &c, err, sizeof err);
            CHECK(rc == 0, "%s x%d: %s", pf_networks[i].name, s, err);
            if (!rc) pf_net_free(&g);
        }
}

int main(void) {
    every_row_builds();
    const char *src = getenv("PF_SOURCE_DIR");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024], err[2048];
        snprintf(path, sizeof path, "%s/configs/zoo/%s", src ? src : ".", cases[i].file);
        size_t len = 0;
        char *text = pf_read_file(path, &len, err, sizeof err);
        CHECK(text != NULL, "%s", err);
        if (!text) continue;
        static pf_config cfg;
        int rc = pf_config_parse(&cfg, path, text, len, 0, err, sizeof err);
        if (!rc && !strcmp(cases[i].file, "EDVR_M_x4.yaml"))
            edvr_recipe_values(&cfg, cases[i].file);
        CHECK(rc == 0, "%s: %s", path, err);
        if (!rc && cfg.gan.enabled) {
            gan_recipe_values(&cfg, cases[i].file);
            gan_recipe_loads(path, text, len, &cfg);
        }
        if (!rc && !strcmp(cases[i].file, "BasicVSRPP_x4.yaml"))
            basicvsrpp_recipe_values(&cfg, cases[i].file);
        free(text);
        if (rc) continue;
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s: %s", cases[i].file, err);
        if (!m) continue;
        CHECK(pf_model_num_params(m) == cases[i].params, "%s: %zu parameters, expected %zu",
              cases[i].file, pf_model_num_params(m), cases[i].params);
        pf_model_init(m, 1);
        /* a sliding-window network (EDVR) infers one window of its frames, sides multiples
           of 4 */
        int win = pf_model_is_window(m), T = win ? pf_model_frames(m) : 1;
        int h = win ? 12 : 10, w = 12, s = cfg.scale;
        uint8_t *lq = malloc((size_t)T * h * w * 3);
        for (int k = 0; k < T * h * w * 3; k++) lq[k] = (uint8_t)(k * 37 % 256);
        float *out = malloc((size_t)h * s * w * s * 3 * sizeof(float));
        rc = win ? pf_model_infer_window(m, lq, h, w, out, err, sizeof err)
                 : pf_model_infer(m, lq, h, w, out, err, sizeof err);
        CHECK(rc == 0, "%s: %s", cases[i].file, err);
        int finite = 1;
        for (int k = 0; !rc && k < h * s * w * s * 3; k++) finite &= isfinite(out[k]);
        CHECK(finite, "%s: non-finite output", cases[i].file);
        printf("%-22s %-9s x%d %10zu parameters, infers %dx%d -> %dx%d\n", cases[i].file,
               cfg.model_type, s, pf_model_num_params(m), h, w, h * s, w * s);
        free(out);
        free(lq);
        pf_model_destroy(&m);
    }
    return pf_test_end("test_zoo_configs");
}
