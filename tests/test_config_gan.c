/*  test_config_gan — the `gan` section of the job config (issue 41, docs/gan.md): a full
    section (BasicSR's option names, other values than the defaults) parses with every value
    stored, the resolved YAML parses back to the same values and hash, a minimal section gets
    BasicSR's defaults (srgan_model.py / realesrgan_model.py, GANLoss, PerceptualLoss), a config
    without the section keeps gan.enabled 0 and writes no gan key, and each error names the
    file, the line and the key: unknown model_type / network_d.type / gan_type / criterion /
    layer name, input_size, the GT patch against the discriminator, the VGG19 weights file
    (with how to make it) and gan.load_from_d's file (BasicSR's pretrain_network_d), *_gt_usm
    with ESRGANModel, a video network, optim_d's rules. Also
    pf_config_check_train taking it (the step is wired), pf_gan_check_backend (CPU
    only), and that the rows' gan_type / criterion choices are what nn/gan_loss.h and
    common/perceptual_opts.h parse, in their enum order.
*/
#include "common/config.h"
#include "common/config_keys.h"
#include "common/gan_cfg.h"
#include "common/perceptual_opts.h"
#include "nn/gan_loss.h"
#include "pf_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An image training job (RRDBNet x4, GT patches of `patch`) followed by `gan` (a text that
   starts "gan:\n" or is empty). */
static char *job(int patch, const char *gan) {
    static const char *fmt = "model:\n  type: RRDBNet\n  scale: 4\n  n_blocks: 2\n"
                             "data:\n  train:\n    gt_folder: g\n    lq_folder: l\n"
                             "    gt_patch_size: %d\n"
                             "optimizers:\n  lr: 1.0e-4\ntotal_iters: 10\nwork_dir: w\n%s";
    size_t n = strlen(fmt) + strlen(gan) + 32;
    char *t = malloc(n);
    snprintf(t, n, fmt, patch, gan);
    return t;
}

/* Every key of the section, none at its default. */
static const char *FULL =
    "gan:\n"
    "  model_type: RealESRGANModel\n"
    "  net_d_iters: 3\n"
    "  net_d_init_iters: 7\n"
    "  l1_gt_usm: false\n"
    "  percep_gt_usm: false\n"
    "  gan_gt_usm: true\n"
    "  network_d: {type: UNetDiscriminatorSN, num_in_ch: 3, num_feat: 32, "
    "skip_connection: false}\n"
    "  perceptual_opt:\n"
    "    type: PerceptualLoss\n"
    "    layer_weights: {conv5_4: 1, conv1_2: 0.1, relu3_4: 0.5}\n"
    "    vgg_type: vgg19\n"
    "    use_input_norm: false\n"
    "    range_norm: true\n"
    "    perceptual_weight: 0.75\n"
    "    style_weight: 0.25\n"
    "    criterion: fro\n"
    "    vgg_weights: vgg19.safetensors\n"
    "  gan_opt: {type: GANLoss, gan_type: hinge, real_label_val: 0.9, fake_label_val: 0.1, "
    "loss_weight: 0.1}\n"
    "  optim_d: {type: SGD, lr: 2.0e-4, momentum: 0.5, dampening: 0, nesterov: true, "
    "weight_decay: 0.001}\n"
    "  load_from_d: net_d.safetensors\n";

/* Only the keys without a default. */
static const char *MINIMAL =
    "gan:\n"
    "  model_type: RealESRGANModel\n"
    "  network_d:\n"
    "    type: UNetDiscriminatorSN\n"
    "  gan_opt:\n"
    "    gan_type: vanilla\n"
    "  optim_d:\n"
    "    lr: 1.0e-4\n";

static int parse(pf_config *c, const char *text, int check_paths, char *err, size_t errlen) {
    return pf_config_parse(c, "t.yaml", text, strlen(text), check_paths, err, errlen);
}

static void check_full(const pf_gan_cfg *g, const char *what) {
    CHECK(g->enabled == 1, "%s: enabled", what);
    CHECK(!strcmp(g->model_type, "RealESRGANModel"), "%s: model_type %s", what, g->model_type);
    CHECK(g->net_d_iters == 3 && g->net_d_init_iters == 7, "%s: net_d_iters %d, init %d", what,
          g->net_d_iters, g->net_d_init_iters);
    CHECK(g->l1_gt_usm == 0 && g->percep_gt_usm == 0 && g->gan_gt_usm == 1, "%s: usm flags",
          what);
    CHECK(!strcmp(g->network_d.type, "UNetDiscriminatorSN") && g->network_d.num_in_ch == 3 &&
              g->network_d.num_feat == 32 && g->network_d.skip_connection == 0,
          "%s: network_d", what);
    const pf_perceptual_opts *p = &g->perceptual_opt;
    CHECK(g->has_perceptual_opt == 1, "%s: has perceptual_opt", what);
    CHECK(p->n_layers == 3, "%s: 3 layers, got %d", what, p->n_layers);
    if (p->n_layers == 3) {
        CHECK(!strcmp(p->layer_weights[0].name, "conv5_4") && p->layer_weights[0].weight == 1.0,
              "%s: layer 0", what);
        CHECK(!strcmp(p->layer_weights[1].name, "conv1_2") && p->layer_weights[1].weight == 0.1,
              "%s: layer 1 (file order, the double 0.1)", what);
        CHECK(!strcmp(p->layer_weights[2].name, "relu3_4") && p->layer_weights[2].weight == 0.5,
              "%s: layer 2", what);
    }
    CHECK(!strcmp(p->vgg_type, "vgg19") && p->use_input_norm == 0 && p->range_norm == 1,
          "%s: vgg_type, norms", what);
    CHECK(p->perceptual_weight == 0.75 && p->style_weight == 0.25, "%s: weights", what);
    CHECK(p->criterion == PF_PERCEP_FRO, "%s: criterion %d", what, (int)p->criterion);
    CHECK(!strcmp(g->vgg_weights, "vgg19.safetensors"), "%s: vgg_weights %s", what,
          g->vgg_weights);
    CHECK(!strcmp(g->gan_opt.gan_type, "hinge") && g->gan_opt.real_label_val == 0.9f &&
              g->gan_opt.fake_label_val == 0.1f && g->gan_opt.loss_weight == 0.1f,
          "%s: gan_opt", what);
    const pf_gan_optim_cfg *o = &g->optim_d;
    CHECK(!strcmp(o->type, "SGD") && o->lr == 2.0e-4f && o->momentum == 0.5f &&
              o->dampening == 0 && o->nesterov == 1 && o->weight_decay == 0.001f,
          "%s: optim_d", what);
    CHECK(!strcmp(g->load_from_d, "net_d.safetensors"), "%s: load_from_d %s", what,
          g->load_from_d);
}

static void test_full_and_round_trip(void) {
    char *t = job(128, FULL), err[1024] = "";
    pf_config c, back;
    int rc = parse(&c, t, 0, err, sizeof err);
    CHECK(rc == 0, "full section parses: %s", err);
    if (rc == 0) {
        check_full(&c.gan, "full");
        char *yaml = pf_config_to_yaml(&c);
        CHECK(yaml && strstr(yaml, "\ngan:\n") &&
                  strstr(yaml, "layer_weights: {conv5_4: 1, conv1_2: 0.1, relu3_4: 0.5}"),
              "resolved YAML writes the section:\n%s", yaml ? yaml : "(null)");
        rc = yaml ? parse(&back, yaml, 0, err, sizeof err) : -1;
        CHECK(rc == 0, "resolved YAML parses back: %s", err);
        if (rc == 0) {
            check_full(&back.gan, "round trip");
            CHECK(back.hash == c.hash, "same hash after the round trip");
        }
        free(yaml);
        /* the step is wired (worker/gan_state.h): train takes a GAN job; without gt_usm the
           loaders send no gt_plain frame (the batch's gt is the plain GT) */
        CHECK(pf_config_check_train(&c, err, sizeof err) == 0, "check_train takes a GAN job: %s",
              err);
        CHECK(c.train.gt_plain == 0, "no gt_usm: no gt_plain frame");
    }
    free(t);
}

static void test_defaults(void) {
    char *t = job(128, MINIMAL), err[1024] = "";
    pf_config c;
    CHECK(parse(&c, t, 0, err, sizeof err) == 0, "minimal section parses: %s", err);
    const pf_gan_cfg *g = &c.gan;
    CHECK(g->enabled == 1, "enabled");
    CHECK(g->net_d_iters == 1 && g->net_d_init_iters == 0, "BasicSR's net_d_iters 1, init 0");
    CHECK(g->l1_gt_usm == 1 && g->percep_gt_usm == 1 && g->gan_gt_usm == 0,
          "realesrgan_model.py's usm defaults: true, true, false");
    CHECK(g->network_d.num_in_ch == 3 && g->network_d.num_feat == 64 &&
              g->network_d.skip_connection == 1 && g->network_d.input_size == 128,
          "network_d defaults 3, 64, skip true (input_size 128)");
    CHECK(g->has_perceptual_opt == 0, "no perceptual_opt: no perceptual loss");
    CHECK(g->gan_opt.real_label_val == 1.0f && g->gan_opt.fake_label_val == 0.0f &&
              g->gan_opt.loss_weight == 1.0f && !strcmp(g->gan_opt.gan_type, "vanilla"),
          "GANLoss defaults 1, 0, 1");
    const pf_gan_optim_cfg *o = &g->optim_d;
    CHECK(!strcmp(o->type, "Adam") && o->lr == 1.0e-4f && o->betas[0] == 0.9f &&
              o->betas[1] == 0.999f && o->eps == 1e-8f && o->weight_decay == 0,
          "optim_d: optimizers' defaults (Adam, betas (0.9, 0.999), eps 1e-8, decay 0)");
    CHECK(g->load_from_d[0] == '\0', "no load_from_d: net_d starts from the seed");
    char *yaml = pf_config_to_yaml(&c);
    CHECK(yaml && !strstr(yaml, "perceptual_opt"), "no perceptual_opt written");
    free(yaml);
    free(t);
    /* perceptual_opt with only its required keys: PerceptualLoss's defaults */
    char gan[1024];
    snprintf(gan, sizeof gan, "%s  perceptual_opt:\n    layer_weights: {conv5_4: 1}\n"
             "    vgg_weights: v.safetensors\n", MINIMAL);
    t = job(128, gan);
    CHECK(parse(&c, t, 0, err, sizeof err) == 0, "perceptual_opt defaults parse: %s", err);
    const pf_perceptual_opts *p = &c.gan.perceptual_opt;
    CHECK(c.gan.has_perceptual_opt && p->n_layers == 1 && !strcmp(p->vgg_type, "vgg19") &&
              p->use_input_norm == 1 && p->range_norm == 0 && p->perceptual_weight == 1.0 &&
              p->style_weight == 0.0 && p->criterion == PF_PERCEP_L1,
          "PerceptualLoss defaults: vgg19, input norm, no range norm, 1, 0, l1");
    free(t);
    /* AdamW's weight_decay default, as optimizers' */
    snprintf(gan, sizeof gan, "%s", MINIMAL);
    char *at = strstr(gan, "    lr: 1.0e-4\n");
    snprintf(at, sizeof gan - (size_t)(at - gan), "    type: AdamW\n    lr: 1.0e-4\n");
    t = job(128, gan);
    CHECK(parse(&c, t, 0, err, sizeof err) == 0 && c.gan.optim_d.weight_decay == 0.01f,
          "AdamW optim_d: weight_decay 0.01 (%s)", err);
    free(t);
}

/* No gan section: disabled, nothing written, and train does not mention it. */
static void test_absent(void) {
    char *t = job(128, ""), err[1024] = "";
    pf_config c;
    CHECK(parse(&c, t, 0, err, sizeof err) == 0, "plain job parses: %s", err);
    CHECK(c.gan.enabled == 0 && c.gan.has_perceptual_opt == 0, "gan.enabled 0");
    char *yaml = pf_config_to_yaml(&c);
    CHECK(yaml && !strstr(yaml, "gan"), "no gan key written");
    free(yaml);
    CHECK(pf_config_check_train(&c, err, sizeof err) == 0, "a plain job trains: %s", err);
    pf_config d;
    pf_config_defaults(&d);
    CHECK(d.gan.enabled == 0, "pf_config_defaults: gan off");
    free(t);
}

/* `gan` text whose `from` is replaced by `to`, parsed: the error must start with
   "t.yaml:LINE: KEY: " (LINE that of `marker` in the whole text) and contain `part`. */
static void expect_error(int patch, const char *gan, const char *from, const char *to,
                         const char *marker, const char *key, const char *part) {
    char g[2048];
    const char *at = strstr(gan, from);
    if (!at) {
        CHECK(0, "'%s' not in the section", from);
        return;
    }
    snprintf(g, sizeof g, "%.*s%s%s", (int)(at - gan), gan, to, at + strlen(from));
    char *t = job(patch, g), err[1024] = "", want[256];
    pf_config c;
    int rc = parse(&c, t, 0, err, sizeof err);
    snprintf(want, sizeof want, "t.yaml:%d: %s: ", pf_test_line_of(t, marker), key);
    CHECK(rc == -1 && !strncmp(err, want, strlen(want)) && strstr(err, part),
          "%s -> %s: want '%s...%s', got '%s'", from, to, want, part, err);
    free(t);
}

static void test_errors(void) {
    /* BasicSR's path.pretrain_network_d, written at the top level as its pretrain_network_g is */
    expect_error(128, FULL, "  load_from_d: net_d.safetensors\n", "pretrain_network_d: n.pth\n",
                 "pretrain_network_d:", "pretrain_network_d",
                 "unknown key; PixFlow calls this 'gan.load_from_d' (net_d's weights");
    expect_error(128, FULL, "model_type: RealESRGANModel", "model_type: SRGANModel",
                 "model_type:", "gan.model_type", "expected one of RealESRGANModel, ESRGANModel, got 'SRGANModel'");
    expect_error(128, FULL, "type: UNetDiscriminatorSN", "type: PatchGAN", "network_d:",
                 "gan.network_d.type", "expected one of UNetDiscriminatorSN, VGGStyleDiscriminator");
    expect_error(128, FULL, "gan_type: hinge", "gan_type: ragan", "gan_opt:",
                 "gan.gan_opt.gan_type", "expected one of vanilla, lsgan, wgan, wgan_softplus, hinge");
    expect_error(128, FULL, "criterion: fro", "criterion: l3", "criterion:",
                 "gan.perceptual_opt.criterion", "expected one of l1, l2, fro");
    expect_error(128, FULL, "relu3_4: 0.5", "conv6_1: 0.5", "layer_weights:",
                 "gan.perceptual_opt.layer_weights.conv6_1", "not a VGG19 layer name");
    expect_error(128, FULL, "relu3_4: 0.5", "relu3_4: -1", "layer_weights:",
                 "gan.perceptual_opt.layer_weights.relu3_4", "");
    expect_error(128, FULL, "layer_weights: {conv5_4: 1, conv1_2: 0.1, relu3_4: 0.5}",
                 "layer_weights: {}", "layer_weights:", "gan.perceptual_opt.layer_weights",
                 "0 layers");
    expect_error(128, FULL, "    layer_weights: {conv5_4: 1, conv1_2: 0.1, relu3_4: 0.5}\n", "",
                 "perceptual_opt:", "gan.perceptual_opt.layer_weights", "required key");
    expect_error(128, FULL, "    vgg_weights: vgg19.safetensors\n", "", "perceptual_opt:",
                 "gan.perceptual_opt.vgg_weights", "required key");
    expect_error(128, FULL, "network_d: {type: UNetDiscriminatorSN, num_in_ch: 3, num_feat: 32, "
                 "skip_connection: false}",
                 "network_d: {type: VGGStyleDiscriminator, input_size: 192}", "network_d:",
                 "gan.network_d.input_size", "128 or 256");
    expect_error(128, FULL, "network_d: {type: UNetDiscriminatorSN, num_in_ch: 3, num_feat: 32, "
                 "skip_connection: false}",
                 "network_d: {type: VGGStyleDiscriminator, input_size: 256}", "gt_patch_size:",
                 "data.train.gt_patch_size", "must equal gan.network_d.input_size (256)");
    expect_error(132, FULL, "num_feat: 32", "num_feat: 32", "gt_patch_size:",
                 "data.train.gt_patch_size", "multiple of 8 for UNetDiscriminatorSN");
    expect_error(128, FULL, "network_d: {type: UNetDiscriminatorSN, num_in_ch: 3, num_feat: 32, "
                 "skip_connection: false}",
                 "network_d: {type: VGGStyleDiscriminator, skip_connection: true}", "network_d:",
                 "gan.network_d.skip_connection", "only allowed with type UNetDiscriminatorSN");
    expect_error(128, FULL, "model_type: RealESRGANModel", "model_type: ESRGANModel",
                 "l1_gt_usm:", "gan.l1_gt_usm", "only allowed with model_type RealESRGANModel");
    expect_error(128, MINIMAL, "  gan_opt:\n    gan_type: vanilla\n", "", "gan:", "gan.gan_opt",
                 "required key");
    expect_error(128, MINIMAL, "    lr: 1.0e-4\n", "    type: Adam\n", "optim_d:",
                 "gan.optim_d.lr", "required key");
    expect_error(128, FULL, "dampening: 0,", "dampening: 0.5,", "optim_d:",
                 "gan.optim_d.nesterov", "Nesterov");
    expect_error(128, MINIMAL, "    lr: 1.0e-4\n", "    lr: 1.0e-4\n    momentum: 0.9\n",
                 "momentum:", "gan.optim_d.momentum", "only allowed with type SGD");
    expect_error(128, MINIMAL, "  model_type: RealESRGANModel\n",
                 "  model_type: RealESRGANModel\n  net_d_iter: 2\n", "net_d_iter:",
                 "gan.net_d_iter", "did you mean 'net_d_iters'?");
    expect_error(128, MINIMAL, "  model_type: RealESRGANModel\n",
                 "  model_type: RealESRGANModel\n  net_d_iters: 0\n", "net_d_iters:",
                 "gan.net_d_iters", "");
}

/* The VGG19 weights must exist when paths are checked (pf_config_load); the message says how
   to make the file. */
static void test_vgg_weights_file(void) {
    char *t = job(128, FULL), err[1024] = "", want[64], dir[] = "/tmp/pf_test_gancfg_XXXXXX";
    char cwd[4096];
    pf_config c;
    /* in a folder of its own with the data folders g and l, and no vgg19.safetensors */
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(dir) || chdir(dir) || mkdir("g", 0700) ||
        mkdir("l", 0700)) {
        CHECK(0, "cannot make %s", dir);
        free(t);
        return;
    }
    FILE *f = fopen("net_d.safetensors", "wb");     /* gan.load_from_d: below */
    if (f)
        fclose(f);
    CHECK(parse(&c, t, 1, err, sizeof err) == -1, "a missing vgg_weights file is an error");
    snprintf(want, sizeof want, "t.yaml:%d: gan.perceptual_opt.vgg_weights: ",
             pf_test_line_of(t, "vgg_weights:"));
    CHECK(!strncmp(err, want, strlen(want)) &&
              strstr(err, "convert torchvision's vgg19 weights (vgg19-dcbb9e9d.pth) with "
                          "scripts/pth2safetensors.py") &&
              strstr(err, "python3 scripts/pth2safetensors.py vgg19-dcbb9e9d.pth "
                          "vgg19.safetensors"),
          "missing vgg_weights: %s", err);
    f = fopen("vgg19.safetensors", "wb");           /* present: the config loads */
    if (f)
        fclose(f);
    CHECK(parse(&c, t, 1, err, sizeof err) == 0, "vgg_weights present: %s", err);
    /* gan.load_from_d (BasicSR's pretrain_network_d) must name a file too */
    remove("net_d.safetensors");
    CHECK(parse(&c, t, 1, err, sizeof err) == -1, "a missing load_from_d file is an error");
    snprintf(want, sizeof want, "t.yaml:%d: gan.load_from_d: ",
             pf_test_line_of(t, "load_from_d:"));
    CHECK(!strncmp(err, want, strlen(want)) && strstr(err, "no such file 'net_d.safetensors'"),
          "missing load_from_d: %s", err);
    remove("vgg19.safetensors");
    rmdir("g");
    rmdir("l");
    CHECK(chdir(cwd) == 0 && rmdir(dir) == 0, "clean up %s", dir);
    free(t);
}

/* A video network with a gan section: not supported yet, said at the section's line. */
static void test_video_network(void) {
    char text[2048], err[1024] = "";
    snprintf(text, sizeof text, "model:\n  type: BasicVSR\n  scale: 4\n"
             "data:\n  test:\n    type: VideoRecurrentTestDataset\n    gt_folder: g\n"
             "    lq_folder: l\nwork_dir: w\n%s", MINIMAL);
    pf_config c;
    char want[64];
    snprintf(want, sizeof want, "t.yaml:%d: gan: ", pf_test_line_of(text, "gan:"));
    CHECK(parse(&c, text, 0, err, sizeof err) == -1 && !strncmp(err, want, strlen(want)) &&
              strstr(err, "video network (BasicVSR) is not supported yet"),
          "video network: %s", err);
}

static void test_backend(void) {
    char *t = job(128, MINIMAL), err[1024] = "";
    pf_config c, plain;
    CHECK(parse(&c, t, 0, err, sizeof err) == 0, "parses: %s", err);
    CHECK(pf_gan_check_backend(&c, 0, err, sizeof err) == 0, "a GAN job on the CPU");
    err[0] = 0;
    CHECK(pf_gan_check_backend(&c, 1, err, sizeof err) == -1 &&
              strstr(err, "t.yaml: gan: a GAN job runs on the CPU only"),
          "a GAN job on CUDA is refused: %s", err);
    pf_config_defaults(&plain);
    CHECK(pf_gan_check_backend(&plain, 1, err, sizeof err) == 0, "a plain job on CUDA");
    free(t);
}

/* The rows' choices are the names the loss code parses, in its enum order. */
static void test_names(void) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    const pf_config_key *k = pf_config_key_find("gan.gan_opt.gan_type");
    CHECK(k != NULL, "gan_type row");
    int n = k ? pf_cfg_split_choices(k->choices, store, v) : 0;
    CHECK(n == PF_GAN_N_TYPES, "%d gan types, nn/gan_loss.h has %d", n, PF_GAN_N_TYPES);
    for (int i = 0; i < n; i++) {
        pf_gan_type t = (pf_gan_type)-1;
        CHECK(pf_gan_type_parse(v[i], &t) == 0 && (int)t == i, "gan_type %s", v[i]);
    }
    k = pf_config_key_find("gan.perceptual_opt.criterion");
    CHECK(k && k->kind == PF_K_ENUM, "criterion row is an enum");
    n = k ? pf_cfg_split_choices(k->choices, store, v) : 0;
    CHECK(n == PF_PERCEP_N_CRITERIA, "%d criteria", n);
    for (int i = 0; i < n; i++) {
        pf_percep_criterion cr = (pf_percep_criterion)-1;
        CHECK(pf_percep_criterion_parse(v[i], &cr) == 0 && (int)cr == i, "criterion %s", v[i]);
    }
    CHECK(sizeof(pf_percep_criterion) == sizeof(int), "an enum row stores an int");
}

int main(void) {
    test_full_and_round_trip();
    test_defaults();
    test_absent();
    test_errors();
    test_vgg_weights_file();
    test_video_network();
    test_backend();
    test_names();
    return pf_test_end("test_config_gan");
}
