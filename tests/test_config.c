/*  test_config — common/config: valid configs parse to the values written in them (and the
    documented defaults), broken ones fail with the exact `file:line: key.path:` prefix, and
    pf_config_to_yaml round-trips to an equal struct whose hash is FNV-1a 64 of that text.

    Broken configs are made from one valid base text by replacing one snippet, so each case
    states only what it breaks. The expected line is where the case's marker text ends up in
    the patched file (found by plain string search, not by the parser).
*/
#include "common/config.h"
#include "common/config_keys.h"
#include "pf_test.h"

#include <stdint.h>
#include <string.h>

/* Valid base: every path is @D@ (replaced by the test data folder, which exists). */
static const char *BASE =
    "model:\n"                                                        /* 1 */
    "  type: EDSR\n"
    "  scale: 2\n"
    "  n_feats: 32\n"
    "  n_blocks: 4\n"                                                 /* 5 */
    "  loss: {type: L1Loss, loss_weight: 1.0}\n"
    "data:\n"
    "  loaders: 3\n"
    "  samples_per_gpu: 12\n"
    "  train:\n"                                                      /* 10 */
    "    type: PairedImageDataset\n"
    "    gt_folder: @D@\n"
    "    lq_folder: @D@/config\n"
    "    filename_tmpl: '{}x2'\n"
    "    gt_patch_size: 96\n"                                         /* 15 */
    "    use_flip: true\n"
    "    use_rot: true\n"
    "    repeat: 100\n"
    "  eval:\n"
    "    gt_folder: @D@/config\n"                                     /* 20 */
    "  test:\n"
    "    gt_folder: @D@\n"
    "optimizers: {type: Adam, lr: 2.0e-4, betas: [0.9, 0.999]}\n"
    "lr_config:\n"
    "  policy: Step\n"                                                /* 25 */
    "  step: [1200, 1600]\n"
    "  gamma: 0.5\n"
    "  warmup: linear\n"
    "  warmup_iters: 50\n"
    "  warmup_ratio: 0.1\n"                                           /* 30 */
    "total_iters: 1800\n"
    "checkpoint_config: {interval: 300, max_keep_ckpts: 3}\n"
    "log_config: {interval: 20}\n"
    "evaluation: {interval: 600, metrics: [PSNR, SSIM], crop_border: 2, convert_to: y, "
    "save_image: true}\n"
    "eval_cfg: {pad_multiple: 4}\n"                                   /* 35 */
    "work_dir: work_dirs/test\n"
    "load_from: @D@/config/valid.yaml\n"
    "resume_from: null\n"
    "resume_optim: false\n"
    "seed: 7\n"                                                       /* 40 */
    "log_level: debug\n";

static char data_dir[PF_PATH_MAX];

/* Replace the first `old` in `in` by `new` into a malloc'd string (NULL old: append). */
static char *replace(const char *in, const char *old, const char *new) {
    size_t lin = strlen(in), lnew = strlen(new);
    char *out = malloc(lin + lnew + 1);
    if (!old) {
        memcpy(out, in, lin);
        memcpy(out + lin, new, lnew + 1);
        return out;
    }
    const char *at = strstr(in, old);
    if (!at) {
        fprintf(stderr, "test bug: '%s' not in the text\n", old);
        exit(2);
    }
    size_t head = (size_t)(at - in), lold = strlen(old);
    memcpy(out, in, head);
    memcpy(out + head, new, lnew);
    memcpy(out + head + lnew, at + lold, lin - head - lold + 1);
    return out;
}

/* `s` with every @D@ replaced by the test data folder, malloc'd. */
static char *expand(const char *s) {
    char *t = strdup(s);
    while (strstr(t, "@D@")) {
        char *u = replace(t, "@D@", data_dir);
        free(t);
        t = u;
    }
    return t;
}

/* The base with one replacement, @D@ expanded everywhere. */
static char *make(const char *old, const char *new) {
    char *t = expand(BASE);
    if (old || new) {
        char *o = old ? expand(old) : NULL, *w = expand(new);
        char *u = replace(t, o, w);
        free(t);
        free(o);
        free(w);
        t = u;
    }
    return t;
}

/* 1-based line of the first `marker` in `text`. */
static int line_of(const char *text, const char *marker) {
    const char *at = strstr(text, marker);
    if (!at) {
        fprintf(stderr, "test bug: marker '%s' not found\n", marker);
        exit(2);
    }
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Parse -> to_yaml -> parse gives the same struct, the same text and the hash of the text. */
static void check_round_trip(const pf_config *c, const char *what) {
    char *y = pf_config_to_yaml(c);
    CHECK(y != NULL, "%s: to_yaml", what);
    if (!y)
        return;
    CHECK(c->hash == fnv1a64(y), "%s: hash is FNV-1a 64 of the resolved YAML", what);
    pf_config d;
    char err[512];
    int rc = pf_config_parse(&d, c->path, y, strlen(y), 0, err, sizeof err);
    CHECK(rc == 0, "%s: resolved YAML parses: %s\n%s", what, err, y);
    if (rc == 0) {
        CHECK(memcmp(c, &d, sizeof d) == 0, "%s: round trip gives an equal struct\n%s", what,
              y);
        char *y2 = pf_config_to_yaml(&d);
        CHECK(y2 && !strcmp(y, y2), "%s: resolved YAML is stable", what);
        free(y2);
    }
    free(y);
}

static void test_valid_base(void) {
    char *text = make(NULL, NULL);
    pf_config c;
    char err[512];
    int rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 1, err, sizeof err);
    CHECK(rc == 0, "base parses: %s", err);
    CHECK(!strcmp(c.path, "t.yaml"), "path");
    CHECK(!strcmp(c.model_type, "EDSR") && c.scale == 2 && c.n_feats == 32 && c.n_blocks == 4,
          "model");
    CHECK(c.in_channels == 3 && c.out_channels == 3, "channels default");
    CHECK_NEAR(c.res_scale, 1.0, 0);
    CHECK_NEAR(c.rgb_mean[0], 0.4488, 1e-7);
    CHECK_NEAR(c.rgb_mean[2], 0.4040, 1e-7);
    CHECK_NEAR(c.img_range, 255.0, 0);
    CHECK(!strcmp(c.loss_type, "L1Loss"), "loss");
    CHECK_NEAR(c.loss_weight, 1.0, 0);
    CHECK(c.loaders == 3 && c.samples_per_gpu == 12 && c.prefetch == 4, "data sizes");
    CHECK(c.train.present && c.eval.present && c.test.present, "datasets present");
    CHECK(!strcmp(c.train.gt_folder, data_dir), "train gt '%s'", c.train.gt_folder);
    CHECK(strstr(c.train.lq_folder, "/config") != NULL, "train lq");
    CHECK(!strcmp(c.train.filename_tmpl, "{}x2"), "filename_tmpl");
    CHECK(c.train.gt_patch_size == 96 && c.train.use_flip == 1 && c.train.use_rot == 1 &&
              c.train.repeat == 100,
          "train pipeline");
    CHECK(!strcmp(c.eval.filename_tmpl, "{}") && c.eval.lq_folder[0] == 0 &&
              c.eval.repeat == 1,
          "eval defaults");
    CHECK(!strcmp(c.optim_type, "Adam"), "optimizer");
    CHECK_NEAR(c.learning_rate, 2e-4, 1e-11);
    CHECK_NEAR(c.betas[0], 0.9, 1e-7);
    CHECK_NEAR(c.betas[1], 0.999, 1e-7);
    CHECK_NEAR(c.eps, 1e-8, 1e-15);
    CHECK_NEAR(c.weight_decay, 0, 0);
    CHECK(!strcmp(c.lr_policy, "Step") && c.n_lr_step == 2 && c.lr_step[0] == 1200 &&
              c.lr_step[1] == 1600,
          "step");
    CHECK_NEAR(c.lr_gamma, 0.5, 0);
    CHECK(!strcmp(c.lr_warmup, "linear") && c.lr_warmup_iters == 50, "warmup");
    CHECK_NEAR(c.lr_warmup_ratio, 0.1, 1e-7);
    CHECK(c.total_iters == 1800 && c.total_epochs == 0, "runner");
    CHECK(c.ckpt_interval == 300 && c.ckpt_max_keep == 3, "checkpoint");
    CHECK(c.log_interval == 20, "log");
    CHECK(c.eval_interval == 600 && c.eval_psnr && c.eval_ssim && c.crop_border == 2 &&
              c.eval_y_channel && c.eval_save_image,
          "evaluation");
    CHECK(c.pad_multiple == 4, "eval_cfg");
    CHECK(!strcmp(c.work_dir, "work_dirs/test"), "work_dir");
    CHECK(strstr(c.load_from, "config/valid.yaml") != NULL, "load_from");
    CHECK(c.resume_from[0] == 0 && c.resume_optim == 0, "resume");
    CHECK(c.seed == 7 && !strcmp(c.log_level, "debug"), "seed, log_level");
    check_round_trip(&c, "base");
    free(text);
}

static void test_defaults(void) {
    const char *text = "model: {type: EDSR, scale: 4}\n"
                       "data:\n"
                       "  train: {gt_folder: a, gt_patch_size: 192}\n"
                       "optimizers: {lr: 1.0e-4}\n"
                       "total_iters: 100\n"
                       "work_dir: w\n";
    pf_config c;
    char err[512];
    CHECK(pf_config_parse(&c, "min.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "minimal config: %s", err);
    CHECK(c.n_feats == 64 && c.n_blocks == 16 && c.in_channels == 3, "model defaults");
    CHECK(!strcmp(c.loss_type, "L1Loss"), "loss default");
    CHECK_NEAR(c.charbonnier_eps, 1e-12, 1e-19);
    CHECK(c.loaders == 2 && c.samples_per_gpu == 16 && c.prefetch == 4, "data defaults");
    CHECK(c.cache_mb == 1024 && c.loader_threads == 1 && c.skip_bad_samples == 0,
          "data-plane defaults");
    CHECK(c.train.n_degradations == 1 && !strcmp(c.train.degradation[0].type, "BI"),
          "no lq_folder: bicubic (BI) by default");
    CHECK(!strcmp(c.train.type, "PairedImageDataset") && !strcmp(c.train.filename_tmpl, "{}") &&
              c.train.use_flip == 0 && c.train.use_rot == 0 && c.train.repeat == 1,
          "train defaults");
    CHECK(!c.eval.present && !c.test.present, "no eval/test");
    CHECK(!strcmp(c.optim_type, "Adam"), "Adam default");
    CHECK_NEAR(c.betas[0], 0.9, 1e-7);
    CHECK_NEAR(c.betas[1], 0.999, 1e-7);
    CHECK_NEAR(c.eps, 1e-8, 1e-15);
    CHECK(!strcmp(c.lr_policy, "Fixed") && c.lr_warmup[0] == 0, "lr defaults");
    CHECK(c.ckpt_interval == 100 && c.ckpt_max_keep == -1,
          "checkpoint defaults: one at the end (interval = total_iters)");
    CHECK(c.log_interval == 10, "log default");
    CHECK(c.visual_interval == 0 && c.visual_output_dir[0] == 0 && c.visual_num_samples == 4,
          "visual defaults: off, work_dir/visuals, 4 samples");
    CHECK(c.eval_interval == 0, "no evaluation");
    CHECK(c.pad_multiple == 1, "pad default");
    CHECK(c.load_from[0] == 0 && c.resume_from[0] == 0 && c.resume_optim == 1, "run defaults");
    CHECK(c.seed == 0 && !strcmp(c.log_level, "info"), "seed/log_level defaults");
    check_round_trip(&c, "minimal");
}

/* The optimiser family: SGD, AdamW's torch default decay, paramwise_cfg, grad_clip, EMA. */
static void test_optimizer_keys(void) {
    const char *head = "model: {type: EDSR, scale: 2}\n"
                       "data:\n"
                       "  train: {gt_folder: a, gt_patch_size: 96}\n";
    const char *tail = "total_iters: 100\nwork_dir: w\n";
    char text[1024], err[512];
    pf_config c;
    snprintf(text, sizeof text, "%soptimizers:\n  type: SGD\n  lr: 0.1\n  momentum: 0.9\n"
             "  nesterov: true\n  weight_decay: 1.0e-4\n  paramwise_cfg:\n"
             "    custom_keys:\n      body: {lr_mult: 0.5}\n      'body.0': {lr_mult: 0, "
             "decay_mult: 0}\n      conv_first: {decay_mult: 2}\n"
             "optimizer_config: {grad_clip: {max_norm: 35, norm_type: 2}}\n"
             "ema_decay: 0.999\n%s", head, tail);
    CHECK(pf_config_parse(&c, "o.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "SGD config parses: %s", err);
    CHECK(!strcmp(c.optim_type, "SGD") && c.nesterov == 1, "SGD, nesterov");
    CHECK_NEAR(c.momentum, 0.9, 1e-7);
    CHECK_NEAR(c.dampening, 0, 0);
    CHECK_NEAR(c.weight_decay, 1e-4, 1e-11);
    CHECK(c.n_custom_keys == 3 && !strcmp(c.custom_keys[1].key, "body.0"), "custom keys");
    CHECK_NEAR(c.custom_keys[0].lr_mult, 0.5, 0);
    CHECK_NEAR(c.custom_keys[0].decay_mult, 1, 0);
    CHECK_NEAR(c.custom_keys[1].lr_mult, 0, 0);
    CHECK_NEAR(c.custom_keys[2].lr_mult, 1, 0);
    CHECK_NEAR(c.custom_keys[2].decay_mult, 2, 0);
    CHECK_NEAR(c.grad_clip_max_norm, 35, 0);
    CHECK_NEAR(c.ema_decay, 0.999, 1e-7);
    check_round_trip(&c, "SGD, paramwise_cfg, grad_clip, ema_decay");

    snprintf(text, sizeof text, "%soptimizers: {type: AdamW, lr: 1.0e-3}\n"
             "optimizer_config: {grad_clip: null}\n%s", head, tail);
    CHECK(pf_config_parse(&c, "w.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "AdamW config parses: %s", err);
    CHECK(!strcmp(c.optim_type, "AdamW"), "AdamW");
    CHECK_NEAR(c.weight_decay, 0.01, 1e-9);   /* torch.optim.AdamW's default */
    CHECK(c.grad_clip_max_norm == 0 && c.ema_decay == 0 && c.n_custom_keys == 0,
          "grad_clip null, no EMA");
    check_round_trip(&c, "AdamW");
    snprintf(text, sizeof text, "%soptimizers: {type: AdamW, lr: 1.0e-3, weight_decay: 0}\n%s",
             head, tail);
    CHECK(pf_config_parse(&c, "w.yaml", text, strlen(text), 0, err, sizeof err) == 0 &&
              c.weight_decay == 0,
          "AdamW with an explicit weight_decay 0 keeps it: %s", err);
}

/* The data-plane keys and a degradation pipeline parse, keep their values and round-trip. */
static void test_data_plane_keys(void) {
    char *t1 = make("  loaders: 3\n",
                    "  loaders: 3\n  cache_mb: 64\n  loader_threads: 4\n  on_bad_sample: skip\n");
    char *text = replace(t1, "  eval:\n    gt_folder: ",
                         "  eval:\n    degradation:\n      - {type: DN, sigma: [5, 50]}\n"
                         "      - {type: JPEG, quality: [30, 95]}\n    gt_folder: ");
    char *t2 = replace(text, "  test:\n    gt_folder: ",
                       "  test:\n    degradation: [{type: BD, sigma: 2.5, kernel_size: 9}]\n"
                       "    meta_info_file: @D@/config/valid.yaml\n    gt_folder: ");
    char *t3 = expand(t2);
    pf_config c;
    char err[512];
    CHECK(pf_config_parse(&c, "d.yaml", t3, strlen(t3), 1, err, sizeof err) == 0,
          "data-plane keys parse: %s", err);
    CHECK(c.cache_mb == 64 && c.loader_threads == 4 && c.skip_bad_samples == 1, "data keys");
    CHECK(c.train.n_degradations == 0, "lq_folder given: no degradation");
    CHECK(c.eval.n_degradations == 2 && !strcmp(c.eval.degradation[0].type, "DN") &&
              !strcmp(c.eval.degradation[1].type, "JPEG"),
          "eval pipeline");
    CHECK_NEAR(c.eval.degradation[0].sigma, 5, 0);
    CHECK_NEAR(c.eval.degradation[0].sigma_max, 50, 0);
    CHECK(c.eval.degradation[1].quality == 30 && c.eval.degradation[1].quality_max == 95,
          "jpeg range");
    CHECK(c.test.n_degradations == 1 && !strcmp(c.test.degradation[0].type, "BD") &&
              c.test.degradation[0].kernel_size == 9,
          "BD");
    CHECK_NEAR(c.test.degradation[0].sigma, 2.5, 0);
    CHECK(strstr(c.test.meta_info_file, "valid.yaml") != NULL, "meta_info_file");
    check_round_trip(&c, "data-plane keys");
    free(t1);
    free(text);
    free(t2);
    free(t3);
}

/* The model zoo keys: values, aliases, per-type defaults, and the resolved YAML holds only the
   keys of the type (so it parses back). */
static void test_model_zoo_keys(void) {
    static const struct {
        const char *model;              /* replaces BASE's model lines */
        const char *absent;             /* a key the resolved YAML must not hold */
    } cases[] = {
        {"  type: RCAN\n  scale: 2\n  num_feat: 32\n  num_block: 3\n  num_group: 2\n"
         "  squeeze_factor: 8\n  res_scale: 0.5\n", "channels"},
        {"  type: RRDBNet\n  scale: 4\n  n_feats: 24\n  num_grow_ch: 12\n", "res_scale"},
        {"  type: RRDBNet\n  scale: 2\n  num_block: 2\n", "num_group"},
        {"  type: FSRCNN\n  scale: 3\n  d: 32\n  s: 5\n  m: 0\n", "n_feats"},
        {"  type: ESPCN\n  scale: 3\n", "n_feats"},
        {"  type: MSRResNet\n  scale: 4\n  n_feats: 16\n  n_blocks: 2\n", "res_scale"},
    };
    const char *base_model = "  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n";
    pf_config c[6];
    char err[512];
    for (int i = 0; i < 6; i++) {
        char *text = make(base_model, cases[i].model);
        CHECK(pf_config_parse(&c[i], "z.yaml", text, strlen(text), 0, err, sizeof err) == 0,
              "zoo case %d parses: %s", i, err);
        char *y = pf_config_to_yaml(&c[i]);
        char word[64];
        snprintf(word, sizeof word, "  %s:", cases[i].absent);
        CHECK(y && !strstr(y, word), "zoo case %d: resolved YAML holds %s\n%s", i, word, y);
        free(y);
        check_round_trip(&c[i], cases[i].model);
        free(text);
    }
    CHECK(!strcmp(c[0].model_type, "RCAN") && c[0].n_feats == 32 && c[0].n_blocks == 3 &&
              c[0].num_group == 2 && c[0].squeeze_factor == 8,
          "RCAN: num_feat / num_block aliases, num_group, squeeze_factor");
    CHECK_NEAR(c[0].res_scale, 0.5, 0);
    CHECK(c[1].n_feats == 24 && c[1].n_blocks == 23 && c[1].num_grow_ch == 12,
          "RRDBNet: n_blocks defaults to 23 (got %d)", c[1].n_blocks);
    CHECK(c[2].scale == 2 && c[2].n_blocks == 2 && c[2].n_feats == 64 && c[2].num_grow_ch == 32,
          "RRDBNet x2: num_block kept, defaults 64 / 32");
    CHECK(c[3].fsrcnn_d == 32 && c[3].fsrcnn_s == 5 && c[3].fsrcnn_m == 0, "FSRCNN d s m");
    CHECK(!strcmp(c[4].model_type, "ESPCN") && c[4].scale == 3 && c[4].n_blocks == 16, "ESPCN");
    CHECK(c[5].n_feats == 16 && c[5].n_blocks == 2, "MSRResNet");
    /* defaults of every zoo key (BasicSR / the papers) */
    char *text = make(base_model, "  type: RCAN\n  scale: 4\n");
    CHECK(pf_config_parse(&c[0], "z.yaml", text, strlen(text), 0, err, sizeof err) == 0, "%s",
          err);
    CHECK(c[0].n_feats == 64 && c[0].n_blocks == 16 && c[0].num_group == 10 &&
              c[0].squeeze_factor == 16 && c[0].fsrcnn_d == 56 && c[0].fsrcnn_s == 12 &&
              c[0].fsrcnn_m == 4,
          "zoo defaults");
    free(text);
    /* RRDBNet x2 unshuffles the LQ patch by 2: the GT patch must be a multiple of 4 */
    char *t1 = make(base_model, "  type: RRDBNet\n  scale: 2\n");
    text = replace(t1, "gt_patch_size: 96", "gt_patch_size: 98");
    char want[64];
    snprintf(want, sizeof want, "z.yaml:%d: data.train.gt_patch_size: must be a multiple of 4",
             line_of(text, "    gt_patch_size: 98"));
    CHECK(pf_config_parse(&c[0], "z.yaml", text, strlen(text), 0, err, sizeof err) == -1 &&
              !strncmp(err, want, strlen(want)),
          "RRDBNet x2 patch 98: '%s'", err);
    free(text);
    free(t1);
}

static void test_valid_file(void) {
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/config/valid.yaml", data_dir);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f)
        return;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    pf_config c;
    char err[512];
    CHECK(pf_config_parse(&c, path, text, n, 0, err, sizeof err) == 0, "valid.yaml: %s", err);
    CHECK(!strcmp(c.model_type, "SRCNN") && c.scale == 3, "srcnn");
    CHECK(c.srcnn_channels[1] == 64 && c.srcnn_channels[2] == 32 &&
              c.srcnn_kernel_sizes[1] == 5,
          "srcnn shape");
    CHECK(!strcmp(c.loss_type, "CharbonnierLoss"), "charbonnier");
    CHECK_NEAR(c.charbonnier_eps, 1e-6, 1e-13);
    CHECK_NEAR(c.loss_weight, 0.5, 0);
    CHECK(!strcmp(c.train.gt_folder, "data/DIV2K/HR sub"), "double-quoted path");
    CHECK(!strcmp(c.train.lq_folder, "data/DIV2K/LR_bicubic/X3 'sub'"), "quote in path '%s'",
          c.train.lq_folder);
    CHECK(c.train.gt_patch_size == 33, "patch");
    CHECK(c.test.present && !c.eval.present, "test only");
    CHECK(!strcmp(c.lr_policy, "CosineRestart") && c.n_lr_periods == 4 &&
              c.lr_periods[3] == 250000,
          "periods");
    CHECK_NEAR(c.lr_restart_weights[1], 0.5, 0);
    CHECK_NEAR(c.lr_min, 1e-7, 1e-14);
    CHECK_NEAR(c.lr_warmup_ratio, 0.001, 1e-9);
    CHECK_NEAR(c.weight_decay, 1e-4, 1e-11);
    CHECK(c.total_epochs == 40 && c.total_iters == 0, "epochs");
    CHECK(c.ckpt_interval == 5000 && c.eval_interval == 0, "hooks");
    CHECK(!strcmp(c.resume_from, "auto") && c.resume_optim == 0, "resume auto");
    CHECK(c.seed == 123456789012ull, "seed");
    CHECK(!strcmp(c.log_level, "warning"), "log level case-folded");
    check_round_trip(&c, "valid.yaml");

    /* pf_config_load checks paths: these folders do not exist */
    CHECK(pf_config_load(&c, path, err, sizeof err) == -1, "load with path checks");
    char want[PF_PATH_MAX + 128];
    snprintf(want, sizeof want, "%s:%d: data.train.gt_folder: no such directory", path,
             line_of(text, "    gt_folder: \"data/DIV2K/HR sub\""));
    CHECK(!strncmp(err, want, strlen(want)), "load error '%s'", err);
    CHECK(pf_config_load(&c, "/nonexistent/x.yaml", err, sizeof err) == -1 &&
              strstr(err, "/nonexistent/x.yaml:1: config: cannot open"),
          "missing file: '%s'", err);
}

static void test_demo(void) {
    const char *src = getenv("PF_SOURCE_DIR");
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/configs/demo.yaml", src ? src : ".");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f)
        return;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    pf_config c;
    char err[512];
    CHECK(pf_config_parse(&c, path, text, n, 0, err, sizeof err) == 0, "demo.yaml: %s", err);
    CHECK(!strcmp(c.model_type, "EDSR") && c.n_feats == 32 && c.n_blocks == 4 && c.scale == 2,
          "demo model");
    CHECK(c.samples_per_gpu == 16 && c.train.gt_patch_size == 96 && c.train.repeat == 100 &&
              c.train.use_flip && c.train.use_rot && c.loaders == 2,
          "demo data");
    CHECK(!strcmp(c.train.gt_folder, "data/demo/train") &&
              !strcmp(c.eval.gt_folder, "data/demo/val") &&
              !strcmp(c.test.gt_folder, "data/demo/val"),
          "demo folders");
    CHECK(!strcmp(c.loss_type, "L1Loss") && !strcmp(c.optim_type, "Adam"), "demo loss/optim");
    CHECK_NEAR(c.learning_rate, 2e-4, 1e-11);
    CHECK(c.total_iters == 1500 && !strcmp(c.lr_policy, "Step") && c.n_lr_step == 2 &&
              c.lr_step[0] == 1000 && c.lr_step[1] == 1300,
          "demo schedule");
    CHECK_NEAR(c.lr_gamma, 0.5, 0);
    CHECK(c.ckpt_interval == 300 && c.eval_interval == 300 && c.eval_psnr && c.eval_ssim &&
              c.crop_border == 2 && c.eval_y_channel && c.eval_save_image,
          "demo hooks");
    CHECK(!strcmp(c.work_dir, "work_dirs/demo") && c.seed == 0, "demo run");
    check_round_trip(&c, "demo.yaml");
}

typedef struct {
    const char *old, *new;              /* the one change to BASE (old NULL: append new) */
    const char *marker;                 /* text on the expected line; NULL = line 1 */
    const char *key;                    /* expected key path */
    const char *word;                   /* must appear in the message */
} broken_case;

static const broken_case BROKEN[] = {
    /* unknown key at each level */
    {NULL, "foo: 1\n", "foo: 1", "foo", "unknown key"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  foo: 1\n", "  foo: 1", "model.foo", "unknown key"},
    {"loss_weight: 1.0}", "loss_weight: 1.0, bar: 2}", "  loss:", "model.loss.bar",
     "unknown key"},
    {"  loaders: 3\n", "  loaders: 3\n  workers_per_gpu: 2\n", "  workers_per_gpu",
     "data.workers_per_gpu", "unknown key"},
    {"    repeat: 100\n", "    repeat: 100\n    baz: 1\n", "    baz", "data.train.baz",
     "unknown key"},
    {"betas: [0.9, 0.999]}", "betas: [0.9, 0.999], amsgrad: true}", "optimizers:",
     "optimizers.amsgrad", "unknown key"},
    /* optimizer keys of the other family, clipping, EMA, paramwise_cfg */
    {"betas: [0.9, 0.999]}", "betas: [0.9, 0.999], momentum: 0.9}", "optimizers:",
     "optimizers.momentum", "only allowed with type SGD (optimizers.type is Adam)"},
    {"type: Adam,", "type: SGD,", "optimizers:", "optimizers.betas",
     "only allowed with type Adam or AdamW (optimizers.type is SGD)"},
    {"betas: [0.9, 0.999]}", "nesterov: true}", "optimizers:", "optimizers.nesterov",
     "only allowed with type SGD"},
    {"type: Adam, lr: 2.0e-4, betas: [0.9, 0.999]}", "type: SGD, lr: 0.1, nesterov: true}",
     "optimizers:", "optimizers.nesterov", "momentum > 0 and zero dampening"},
    {"type: Adam,", "type: RMSprop,", "optimizers:", "optimizers.type",
     "expected one of Adam, AdamW, SGD"},
    {"betas: [0.9, 0.999]}", "betas: [0.9, 0.999], paramwise_cfg: {bias_lr_mult: 2}}",
     "optimizers:", "optimizers.paramwise_cfg.bias_lr_mult", "unknown key"},
    {"betas: [0.9, 0.999]}", "paramwise_cfg: {custom_keys: {'body/0': {lr_mult: 0}}}}",
     "optimizers:", "optimizers.paramwise_cfg.custom_keys.body/0", "letters, digits"},
    {"betas: [0.9, 0.999]}", "paramwise_cfg: {custom_keys: {body: {lr: 0}}}}",
     "optimizers:", "optimizers.paramwise_cfg.custom_keys.body.lr", "unknown key"},
    {"betas: [0.9, 0.999]}", "paramwise_cfg: {custom_keys: {body: {lr_mult: -1}}}}",
     "optimizers:", "optimizers.paramwise_cfg.custom_keys.body.lr_mult", "must be 0 or more"},
    {"work_dir: work_dirs/test\n", "work_dir: work_dirs/test\nema_decay: 1\n", "ema_decay",
     "ema_decay", "must be in"},
    {"work_dir: work_dirs/test\n",
     "work_dir: work_dirs/test\noptimizer_config: {grad_clip: {max_norm: 1, norm_type: 1}}\n",
     "optimizer_config", "optimizer_config.grad_clip.norm_type", "only the L2 norm"},
    {"work_dir: work_dirs/test\n",
     "work_dir: work_dirs/test\noptimizer_config: {grad_clip: {norm_type: 2}}\n",
     "optimizer_config", "optimizer_config.grad_clip.max_norm", "missing"},
    {"work_dir: work_dirs/test\n",
     "work_dir: work_dirs/test\noptimizer_config: {grad_clip: {max_norm: 0}}\n",
     "optimizer_config", "optimizer_config.grad_clip.max_norm", "greater than 0"},
    {"work_dir: work_dirs/test\n",
     "work_dir: work_dirs/test\noptimizer_config: {detect_anomalous_params: true}\n",
     "optimizer_config", "optimizer_config.detect_anomalous_params", "unknown key"},
    {"  warmup_ratio: 0.1\n", "  warmup_ratio: 0.1\n  by_epoch: false\n", "  by_epoch",
     "lr_config.by_epoch", "unknown key"},
    {"max_keep_ckpts: 3}", "max_keep_ckpts: 3, save_optimizer: true}", "checkpoint_config:",
     "checkpoint_config.save_optimizer", "unknown key"},
    {"save_image: true}", "save_image: true, gpu_collect: true}", "evaluation:",
     "evaluation.gpu_collect", "unknown key"},
    {"{pad_multiple: 4}", "{pad_multiple: 4, tile_pad: 64}", "eval_cfg:", "eval_cfg.tile_pad",
     "unknown key"},
    {"{pad_multiple: 4}", "{pad_multiple: 4, ensemble: 'yes'}", "eval_cfg:",
     "eval_cfg.ensemble", "true or false"},
    {"{pad_multiple: 4}", "{pad_multiple: 4, tile: -8}", "eval_cfg:", "eval_cfg.tile",
     "non-negative"},
    {"{pad_multiple: 4}", "{pad_multiple: 4, tile: 64.5}", "eval_cfg:", "eval_cfg.tile",
     "integer"},
    {"{pad_multiple: 4}", "{pad_multiple: 4, tile_overlap: -1}", "eval_cfg:",
     "eval_cfg.tile_overlap", "non-negative"},
    {"log_config: {interval: 20}\n", "log_config: {interval: 20}\nvisual_config: {every: 5}\n",
     "visual_config", "visual_config.every", "unknown key"},
    {"log_config: {interval: 20}\n", "log_config: {interval: 20}\nvisual_config: {interval: "
     "-1}\n", "visual_config", "visual_config.interval", "non-negative"},
    {"log_config: {interval: 20}\n", "log_config: {interval: 20}\nvisual_config: {interval: "
     "5, num_samples: 17}\n", "visual_config", "visual_config.num_samples",
     "between 1 and 16, got 17"},
    {"log_config: {interval: 20}\n", "log_config: {interval: 20}\nvisual_config: {interval: "
     "5, num_samples: 0}\n", "visual_config", "visual_config.num_samples", "positive"},
    {"log_config: {interval: 20}\n", "log_config: {interval: 20}\nvisual_config: {output_dir: "
     "[a]}\n", "visual_config", "visual_config.output_dir", "string"},
    {"  train:\n", "  training:\n", "  training:", "data.training", "unknown key"},
    /* wrong types and values */
    {"  n_feats: 32", "  n_feats: abc", "  n_feats", "model.n_feats",
     "expected a positive integer, got 'abc'"},
    {"  n_feats: 32", "  n_feats: 0", "  n_feats", "model.n_feats", "positive"},
    {"  n_feats: 32", "  n_feats: 3.5", "  n_feats", "model.n_feats", "integer"},
    {"  scale: 2", "  scale: '2'", "  scale", "model.scale", "integer"},
    {"  scale: 2", "  scale: 5", "  scale", "model.scale", "2, 3 or 4"},
    {"  scale: 2", "  scale: [2]", "  scale", "model.scale", "list"},
    {"    use_flip: true", "    use_flip: 'yes'", "    use_flip", "data.train.use_flip",
     "true or false"},
    {"lr: 2.0e-4", "lr: -1", "optimizers:", "optimizers.lr", "greater than 0"},
    {"lr: 2.0e-4", "lr: fast", "optimizers:", "optimizers.lr", "number"},
    {"log_level: debug", "log_level: verbose", "log_level", "log_level", "one of"},
    {"  type: EDSR", "  type: SwinIR", "  type: SwinIR", "model.type", "one of EDSR, SRCNN"},
    {"eval_cfg: {pad_multiple: 4}", "eval_cfg: 4", "eval_cfg", "eval_cfg", "mapping"},
    {"  samples_per_gpu: 12", "  samples_per_gpu: 2000", "  samples_per_gpu",
     "data.samples_per_gpu", "between"},
    {"    filename_tmpl: '{}x2'", "    filename_tmpl: 'x2'", "    filename_tmpl",
     "data.train.filename_tmpl", "{}"},
    {"  loss: {type: L1Loss", "  rgb_mean: [0.5, 0.5]\n  loss: {type: L1Loss", "  rgb_mean",
     "model.rgb_mean", "expected 3 items"},
    {"  step: [1200, 1600]", "  step: [1600, 1200]", "  step:", "lr_config.step[1]",
     "increasing"},
    {"  step: [1200, 1600]", "  step: 1200", "  step:", "lr_config.step", "list"},
    {"seed: 7", "seed: -7", "seed:", "seed", "non-negative"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    gt_patch_size: 96\n", "    gt_patch_size: 96\n  test",
     "data.eval.gt_patch_size", "only allowed in data.train"},
    /* missing required */
    {"  type: EDSR\n", "", NULL, "model.type", "missing"},
    {"  scale: 2\n", "", NULL, "model.scale", "missing"},
    {"lr: 2.0e-4, ", "", "optimizers:", "optimizers.lr", "missing"},
    {"work_dir: work_dirs/test\n", "", NULL, "work_dir", "missing"},
    {"    gt_folder: @D@\n    lq_folder", "    lq_folder", "  train:", "data.train.gt_folder",
     "missing"},
    {"    gt_patch_size: 96\n", "", "  train:", "data.train.gt_patch_size", "missing"},
    /* runner keys */
    {"total_iters: 1800\n", "total_iters: 1800\ntotal_epochs: 10\n", "total_epochs",
     "total_iters", "exactly one of total_iters and total_epochs must be set"},
    /* cross-checks */
    {"    gt_patch_size: 96", "    gt_patch_size: 97", "    gt_patch_size",
     "data.train.gt_patch_size", "multiple of model.scale"},
    {"interval: 600, metrics", "interval: 450, metrics", "evaluation:", "evaluation.interval",
     "multiple of checkpoint_config.interval"},
    {"  eval:\n    gt_folder: @D@/config\n", "", "evaluation:", "data.eval",
     "required when evaluation"},
    {"  type: EDSR", "  type: SRCNN", "  n_feats", "model.n_feats", "only allowed with type EDSR"},
    /* model zoo keys: each only with the types it configures, one spelling per field */
    {"  type: EDSR", "  type: FSRCNN", "  n_feats", "model.n_feats",
     "only allowed with type EDSR, MSRResNet, RCAN, RRDBNet, BasicVSR, BasicVSRPlusPlus or EDVR "
     "(model.type is FSRCNN)"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  num_group: 2\n", "  num_group", "model.num_group",
     "only allowed with type RCAN (model.type is EDSR)"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  squeeze_factor: 4\n", "  squeeze_factor",
     "model.squeeze_factor", "only allowed with type RCAN"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  num_grow_ch: 16\n", "  num_grow_ch",
     "model.num_grow_ch", "only allowed with type RRDBNet"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  d: 32\n", "  d: 32", "model.d",
     "only allowed with type FSRCNN"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  m: 2\n", "  m: 2", "model.m",
     "only allowed with type FSRCNN"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: MSRResNet\n  scale: 2\n  n_feats: 32\n  res_scale: 0.1\n", "  res_scale",
     "model.res_scale", "only allowed with type EDSR or RCAN (model.type is MSRResNet)"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: RCAN\n  scale: 2\n  kernel_sizes: [9, 1, 5]\n", "  kernel_sizes",
     "model.kernel_sizes", "only allowed with type SRCNN (model.type is RCAN)"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: ESPCN\n  scale: 2\n  n_blocks: 4\n  n_feats: 32\n", "  n_blocks",
     "model.n_blocks", "only allowed with type EDSR, MSRResNet"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  num_feat: 32\n", "  num_feat", "model.num_feat",
     "same setting as model.n_feats (line 4); give only one"},
    {"  n_feats: 32\n  n_blocks: 4\n", "  num_block: 4\n  n_feats: 32\n  n_blocks: 4\n",
     "  n_blocks", "model.n_blocks", "same setting as model.num_block (line 4)"},
    {"  n_feats: 32", "  num_feat: 0", "  num_feat", "model.num_feat", "positive"},
    {"  type: EDSR\n  scale: 2", "  type: RRDBNet\n  scale: 3", "  scale: 3", "model.scale",
     "must be 2 or 4 for RRDBNet, got 3"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n",
     "  type: RCAN\n  scale: 2\n  n_feats: 32\n  squeeze_factor: 64\n", "  squeeze_factor",
     "model.squeeze_factor", "must be at most n_feats (32)"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n", "  type: RCAN\n  scale: 2\n  n_feats: 8\n",
     "  n_feats: 8", "model.squeeze_factor", "must be at most n_feats (8)"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: RCAN\n  scale: 2\n  squeeze_factor: 0\n", "  squeeze_factor",
     "model.squeeze_factor", "positive"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: FSRCNN\n  scale: 2\n  m: -1\n", "  m: -1", "model.m", "non-negative"},
    {"  type: EDSR\n  scale: 2\n  n_feats: 32\n  n_blocks: 4\n",
     "  type: FSRCNN\n  scale: 2\n  d: 0\n", "  d: 0", "model.d", "positive"},
    {"loss_weight: 1.0}", "loss_weight: 1.0, eps: 1.0e-6}", "  loss:", "model.loss.eps",
     "CharbonnierLoss"},
    {"resume_from: null", "resume_from: auto", "resume_from", "resume_from", "exclusive"},
    {"checkpoint_config: {interval: 300, max_keep_ckpts: 3}\n", "", "evaluation:",
     "evaluation.interval", "checkpoint_config.interval must be set"},
    /* lr policy keys */
    {"  policy: Step", "  policy: Fixed", "  step:", "lr_config.step",
     "only allowed with policy Step"},
    {"  policy: Step\n  step: [1200, 1600]\n  gamma: 0.5\n",
     "  policy: CosineRestart\n  periods: [1000, 800]\n  restart_weights: [1, 0.5, 0.25]\n",
     "  restart_weights", "lr_config.restart_weights", "has 3 items but periods has 2"},
    {"  policy: Step\n  step: [1200, 1600]\n",
     "  policy: CosineRestart\n  periods: [1000, 800]\n", "  gamma", "lr_config.gamma",
     "only allowed with policy Step"},
    {"  policy: Step\n  step: [1200, 1600]\n  gamma: 0.5\n",
     "  policy: CosineRestart\n  periods: [1000, 500]\n", "  periods", "lr_config.periods",
     "less than total_iters"},
    {"  warmup: linear\n", "  warmup: null\n", "  warmup_iters", "lr_config.warmup_iters",
     "only allowed with warmup"},
    {"  warmup: linear", "  warmup: exp", "  warmup: exp", "lr_config.warmup", "one of linear"},
    /* data plane and degradations */
    {"  loaders: 3\n", "  loaders: 3\n  on_bad_sample: ignore\n", "on_bad_sample",
     "data.on_bad_sample", "one of fail, skip"},
    {"  loaders: 3\n", "  loaders: 3\n  loader_threads: 0\n", "loader_threads",
     "data.loader_threads", "positive"},
    {"  loaders: 3\n", "  loaders: 3\n  cache_mb: -1\n", "cache_mb", "data.cache_mb",
     "non-negative"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: JPEG, quality: 50}]\n",
     "degradation:", "data.eval.degradation[0]", "first step must downscale"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: BI}, {type: DN}]\n",
     "degradation:", "data.eval.degradation[1]", "only one downscaling step"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: BD, kernel_size: 6}]\n",
     "degradation:", "data.eval.degradation[0].kernel_size", "odd"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: BI, sigma: 2}]\n",
     "degradation:", "data.eval.degradation[0].sigma", "not a parameter of type BI"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: DN, sigma: [40, 10]}]\n",
     "degradation:", "data.eval.degradation[0].sigma", "empty"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n"
     "    degradation: [{type: BI}, {type: JPEG, quality: 101}]\n",
     "degradation:", "data.eval.degradation[1].quality", "[1, 100]"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    gt_folder: @D@/config\n    degradation: [{type: BI}, {type: JPEG}]\n",
     "degradation:", "data.eval.degradation[1].quality", "missing"},
    {"    repeat: 100\n", "    repeat: 100\n    degradation: [{type: BD}]\n", "degradation",
     "data.train.degradation", "cannot be combined with lq_folder"},
    {"  test:\n    gt_folder: @D@\n", "  test:\n    type: SingleImageDataset\n    gt_folder: @D@\n",
     "    gt_folder: @D@\noptim", "data.test.gt_folder", "not used by SingleImageDataset"},
    {"  test:\n    gt_folder: @D@\n", "  test:\n    type: SingleImageDataset\n", "  test:",
     "data.test.lq_folder", "required by SingleImageDataset"},
    {"  eval:\n    gt_folder: @D@/config\n",
     "  eval:\n    type: SingleImageDataset\n    lq_folder: @D@/config\n", "  eval:",
     "data.eval.type", "only allowed in data.test"},
    {"  test:\n    gt_folder: @D@\n",
     "  test:\n    gt_folder: @D@\n    meta_info_file: @D@/meta_missing.txt\n",
     "meta_info_file", "data.test.meta_info_file", "no such file"},
    /* paths */
    {"    gt_folder: @D@\n    lq", "    gt_folder: data/DIV2K_HR\n    lq", "data/DIV2K_HR",
     "data.train.gt_folder", "no such directory 'data/DIV2K_HR'"},
    {"    gt_folder: @D@\n", "    gt_folder: @D@/config/valid.yaml\n", "valid.yaml\n    lq",
     "data.train.gt_folder", "not a directory"},
    {"load_from: @D@/config/valid.yaml", "load_from: nowhere/iter_1.safetensors", "load_from",
     "load_from", "no such file 'nowhere/iter_1.safetensors'"},
    {"load_from: @D@/config/valid.yaml\nresume_from: null",
     "load_from: ~\nresume_from: missing.safetensors", "resume_from", "resume_from",
     "no such file"},
    /* YAML syntax */
    {"  n_blocks: 4\n", "  n_blocks: 4\n bad: 1\n", " bad: 1", "yaml", "indentation"},
    {"  n_feats: 32", "  n_feats: @x", "  n_feats", "yaml", "syntax error"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n\tbad: 2\n", "\tbad", "yaml", "tab"},
    {NULL, "train_cfg: {precision: fp16}\n", "train_cfg", "train_cfg.precision",
     "expected one of fp32, bf16"},
    {NULL, "test_cfg: {precision: BF16}\n", "test_cfg", "test_cfg.precision",
     "expected one of fp32, bf16"},
    {NULL, "train_cfg: {precision: [bf16]}\n", "train_cfg", "train_cfg.precision", "fp32"},
    {NULL, "train_cfg: {amp: true}\n", "train_cfg", "train_cfg.amp", "unknown key"},
    {NULL, "train_cfg: bf16\n", "train_cfg", "train_cfg", "mapping"},
    {"seed: 7\n", "seed: 7\nseed: 8\n", "seed: 8", "yaml", "duplicate key"},
    {"  n_blocks: 4\n", "  n_blocks: \"4\n", "  n_blocks", "yaml", "syntax error"},
    {"  n_feats: 32\n  n_blocks: 4", "  n_feats: &w 32\n  n_blocks: *w", "  n_blocks", "yaml",
     "aliases are not supported"},
};

static void test_broken(void) {
    int n = (int)(sizeof BROKEN / sizeof BROKEN[0]);
    CHECK(n >= 15, "at least 15 broken configs (%d)", n);
    for (int i = 0; i < n; i++) {
        const broken_case *b = &BROKEN[i];
        /* @D@ in a case's snippets means the data folder too */
        char *t0 = make(NULL, NULL), *o = b->old ? expand(b->old) : NULL, *w = expand(b->new);
        char *text = replace(t0, o, w);
        char *mk = b->marker ? expand(b->marker) : NULL;
        int line = mk ? line_of(text, mk) : 1;
        free(mk);
        char want[PF_PATH_MAX];
        snprintf(want, sizeof want, "t.yaml:%d: %s: ", line, b->key);
        pf_config c;
        char err[1024] = "";
        int rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 1, err, sizeof err);
        CHECK(rc == -1, "case %d (%s): accepted", i, b->key);
        CHECK(!strncmp(err, want, strlen(want)), "case %d: want prefix '%s', got '%s'", i, want,
              err);
        CHECK(strstr(err + (strlen(err) > strlen(want) ? strlen(want) : 0), b->word) != NULL,
              "case %d: '%s' does not say '%s'", i, err, b->word);
        free(text);
        free(t0);
        free(o);
        free(w);
    }
}

/* Unknown keys: BasicSR's and MMagic's names get the PixFlow key (and how it differs), a typo
   the nearest key of its section, anything else the bare message. Whole messages. */
static const struct {
    const char *old, *new;              /* the one change to BASE (old NULL: append new) */
    const char *want;                   /* the whole error */
} UNKNOWN[] = {
    {"    gt_folder: @D@\n    lq", "    dataroot_gt: @D@\n    lq",
     "t.yaml:12: data.train.dataroot_gt: unknown key; PixFlow calls this 'gt_folder'"},
    {"    lq_folder: @D@/config", "    dataroot_lq: @D@/config",
     "t.yaml:13: data.train.dataroot_lq: unknown key; PixFlow calls this 'lq_folder'"},
    {"    gt_patch_size: 96", "    gt_size: 96",
     "t.yaml:15: data.train.gt_size: unknown key; PixFlow calls this 'gt_patch_size'"},
    {"    use_flip: true", "    use_hflip: true",
     "t.yaml:16: data.train.use_hflip: only allowed with type REDSRecurrentDataset, "
     "Vimeo90KRecurrentDataset, RealESRGANVideoDataset or REDSDataset (data.train.type is "
     "PairedImageDataset); PixFlow calls this "
     "'use_flip', which flips "
     "vertically too (BasicSR's use_rot adds the vertical flip; PixFlow's use_rot is the "
     "transpose alone): BasicSR's use_hflip + use_rot is use_flip + use_rot here"},
    {"    repeat: 100", "    batch_size_per_gpu: 16",
     "t.yaml:18: data.train.batch_size_per_gpu: unknown key; PixFlow calls this "
     "'data.samples_per_gpu' (one batch size per worker, under data, not per set)"},
    {"    repeat: 100", "    num_worker_per_gpu: 6",
     "t.yaml:18: data.train.num_worker_per_gpu: unknown key; PixFlow's loader processes are "
     "'data.loaders' (for the whole job on this host, not per GPU)"},
    {"    repeat: 100", "    dataset_enlarge_ratio: 100",
     "t.yaml:18: data.train.dataset_enlarge_ratio: unknown key; PixFlow calls this 'repeat'"},
    {"  eval:\n", "  val:\n", "t.yaml:19: data.val: unknown key; PixFlow calls this 'eval'"},
    {"  samples_per_gpu: 12", "  batch_size_per_gpu: 12",
     "t.yaml:9: data.batch_size_per_gpu: unknown key; PixFlow calls this 'samples_per_gpu'"},
    {"model:\n", "network_g:\n",
     "t.yaml:1: network_g: unknown key; PixFlow calls this 'model' (type, scale, num_feat or "
     "n_feats, num_block or n_blocks, ...)"},
    {"  scale: 2", "  upscale: 2", "t.yaml:3: model.upscale: unknown key; PixFlow calls this "
     "'scale'"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  num_in_ch: 3\n",
     "t.yaml:6: model.num_in_ch: unknown key; PixFlow calls this 'in_channels'"},
    {"total_iters: 1800", "total_iter: 1800",
     "t.yaml:31: total_iter: unknown key; PixFlow calls this 'total_iters'"},
    {"seed: 7", "manual_seed: 7", "t.yaml:40: manual_seed: unknown key; PixFlow calls this "
     "'seed'"},
    {"load_from: @D@/config/valid.yaml", "pretrain_network_g: @D@/config/valid.yaml",
     "t.yaml:37: pretrain_network_g: unknown key; PixFlow calls this 'load_from' (weights "
     "only, every tensor must match; training starts at iteration 0)"},
    {"resume_from: null", "resume_state: ~",
     "t.yaml:38: resume_state: unknown key; PixFlow calls this 'resume_from': a checkpoint's "
     "weights file (checkpoints/iter_N.safetensors, its optimiser state beside it) or auto, "
     "not a .state file"},
    {NULL, "train: {ema_decay: 0.999}\n",
     "t.yaml:42: train: unknown key; PixFlow has no train section: optim_g is 'optimizers', "
     "scheduler is 'lr_config', total_iter is 'total_iters', pixel_opt is 'model.loss', "
     "ema_decay is 'ema_decay', all at the top level"},
    {NULL, "save_checkpoint_freq: 5000\n", "t.yaml:42: save_checkpoint_freq: unknown key; "
     "PixFlow calls this 'checkpoint_config.interval'"},
    {"log_config: {interval: 20}", "log_config: {print_freq: 20}",
     "t.yaml:33: log_config.print_freq: unknown key; PixFlow calls this 'interval'"},
    {"evaluation: {interval: 600,", "evaluation: {val_freq: 600,",
     "t.yaml:34: evaluation.val_freq: unknown key; PixFlow calls this 'interval'"},
    {"convert_to: y,", "test_y_channel: true,",
     "t.yaml:34: evaluation.test_y_channel: unknown key; PixFlow calls this 'convert_to' (y "
     "for true, null for false)"},
    {"  step: [1200, 1600]", "  milestones: [1200, 1600]",
     "t.yaml:26: lr_config.milestones: unknown key; PixFlow calls this 'step' (with policy: "
     "Step)"},
    {"  policy: Step", "  type: MultiStepLR",
     "t.yaml:25: lr_config.type: unknown key; PixFlow calls this 'policy' (MultiStepLR is "
     "Step, CosineAnnealingRestartLR is CosineRestart)"},
    {NULL, "test_cfg: {metrics: [PSNR], crop_border: 4}\n",
     "t.yaml:42: test_cfg.metrics: unknown key; PixFlow calls this 'evaluation.metrics'"},
    {NULL, "train_cfg: {fix_iter: 5000}\n",
     "t.yaml:42: train_cfg.fix_iter: unknown key; PixFlow calls this 'model.fix_iter'"},
    {NULL, "train_cfg: {precison: bf16}\n",
     "t.yaml:42: train_cfg.precison: unknown key; did you mean 'precision'?"},
    /* typos: the nearest key of the section */
    {"    gt_folder: @D@\n    lq", "    gt_foldr: @D@\n    lq",
     "t.yaml:12: data.train.gt_foldr: unknown key; did you mean 'gt_folder'?"},
    {"  samples_per_gpu: 12", "  samples_per_gpus: 12",
     "t.yaml:9: data.samples_per_gpus: unknown key; did you mean 'samples_per_gpu'?"},
    {"  n_feats: 32", "  n_feat: 32",
     "t.yaml:4: model.n_feat: unknown key; did you mean 'n_feats'?"},
    {"seed: 7", "sede: 7", "t.yaml:40: sede: unknown key; did you mean 'seed'?"},
    {"{interval: 300, max_keep_ckpts: 3}", "{intervall: 300, max_keep_ckpts: 3}",
     "t.yaml:32: checkpoint_config.intervall: unknown key; did you mean 'interval'?"},
    {"  train:\n", "  training:\n", "t.yaml:10: data.training: unknown key; did you mean "
     "'train'?"},
    {"  warmup_iters: 50", "  Warmup_Iters: 50",
     "t.yaml:29: lr_config.Warmup_Iters: unknown key; did you mean 'warmup_iters'?"},
    /* nothing near: the bare message */
    {NULL, "colour: red\n", "t.yaml:42: colour: unknown key"},
    {"  n_blocks: 4\n", "  n_blocks: 4\n  foo: 1\n", "t.yaml:6: model.foo: unknown key"},
};

static void test_unknown_keys(void) {
    CHECK(pf_edit_distance("kitten", "sitting") == 3 && pf_edit_distance("ca", "ac") == 1 &&
              pf_edit_distance("", "abc") == 3 && pf_edit_distance("seed", "seed") == 0 &&
              pf_edit_distance("gt_foldr", "gt_folder") == 1,
          "edit distance reference values");
    for (size_t i = 0; i < sizeof UNKNOWN / sizeof UNKNOWN[0]; i++) {
        char *text = make(UNKNOWN[i].old, UNKNOWN[i].new);
        pf_config c;
        char err[1024] = "";
        int rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 0, err, sizeof err);
        CHECK(rc == -1 && !strcmp(err, UNKNOWN[i].want), "unknown case %zu:\n got  '%s'\n want "
              "'%s'", i, err, UNKNOWN[i].want);
        free(text);
    }
}

/* YAML that puts `value` at key `path` ("a.b.c" -> "a: {b: {c: V}}"); a `*` part (one
   custom key) becomes "body". */
static void nest(const char *path, const char *value, char *out, size_t size) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", path);
    int depth = 0;
    out[0] = 0;
    for (char *part = strtok(tmp, "."); part; part = strtok(NULL, ".")) {
        size_t at = strlen(out);
        snprintf(out + at, size - at, "%s%s: ", depth ? "{" : "", strcmp(part, "*") ? part : "body");
        depth++;
    }
    size_t at = strlen(out);
    snprintf(out + at, size - at, "%s", value);
    for (int i = 1; i < depth; i++)
        strncat(out, "}", size - strlen(out) - 1);
    strncat(out, "\n", size - strlen(out) - 1);
}

/* Every key of the table is accepted where it is listed, under its alias too (a wrong value
   or a missing sibling may fail, but never as "unknown key"), and a made-up key in each
   section is unknown there. The keys of a degradation step (parsed by code of their own) the
   same way. */
static void test_section_keys(void) {
    int n_keys = 0, n_sections = 0;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        char text[512], err[1024] = "", path[200];
        pf_config c;
        for (int spelling = 0; spelling < (k->alias ? 2 : 1); spelling++) {
            snprintf(path, sizeof path, "%.*s%s", (int)(pf_config_key_name(k) - k->path),
                     k->path, spelling ? k->alias : pf_config_key_name(k));
            nest(path, "0", text, sizeof text);
            pf_config_parse(&c, "k.yaml", text, strlen(text), 0, err, sizeof err);
            CHECK(!strstr(err, "unknown key"), "key %s: '%s'", path, err);
            n_keys++;
        }
        if (k->kind != PF_K_SECTION)
            continue;
        snprintf(path, sizeof path, "%s.zz_not_a_key", k->path);
        nest(path, "0", text, sizeof text);
        pf_config_parse(&c, "k.yaml", text, strlen(text), 0, err, sizeof err);
        CHECK(strstr(err, "unknown key") != NULL, "section %s, made-up key: '%s'", k->path, err);
        n_sections++;
    }
    const char *steps[] = {"zz_not_a_key", "kernel_size", "sigma", "quality"};
    for (int i = 0; i < 4; i++) {
        char text[256], err[1024] = "";
        pf_config c;
        snprintf(text, sizeof text, "data: {train: {degradation: [{type: DN, %s: 0}]}}\n",
                 steps[i]);
        pf_config_parse(&c, "k.yaml", text, strlen(text), 0, err, sizeof err);
        int unknown = strstr(err, "unknown key") != NULL;
        CHECK(i == 0 ? unknown : !unknown, "degradation step key %s: '%s'", steps[i], err);
    }
    printf("  %d keys and %d sections of the table checked\n", n_keys, n_sections);
    CHECK(n_keys > 120 && n_sections > 15, "only %d keys, %d sections", n_keys, n_sections);
}

/* The table itself: ranges that are ranges, defaults of every optional key that the parser
   accepts (the defaults' YAML parses back to the defaults), `when` keys that are choices with
   those values (`when` and `required_when`), aliases that no other key of the section uses. */
static void test_key_table(void) {
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        int number = k->kind == PF_K_INT || k->kind == PF_K_INT64 || k->kind == PF_K_FLOAT ||
                     k->kind == PF_K_INT_LIST || k->kind == PF_K_INT64_LIST ||
                     k->kind == PF_K_FLOAT_LIST || k->kind == PF_K_DOUBLE ||
                     k->kind == PF_K_DOUBLE_LIST;
        CHECK(!number || k->lo < k->hi, "%s: range [%g, %g]", k->path, k->lo, k->hi);
        CHECK(k->kind == PF_K_SECTION || k->def || k->def_doc || (k->flags & PF_KF_REQUIRED),
              "%s: neither a default nor required", k->path);
        CHECK(k->kind == PF_K_SECTION || k->doc, "%s: no meaning", k->path);
        if (k->when_key) {
            const pf_config_key *sel = pf_config_key_find(k->when_key);
            CHECK(sel && sel->kind == PF_K_CHOICE, "%s: when_key %s is not a choice", k->path,
                  k->when_key);
            char w[400];   /* the values of `when` and of `required_when` */
            snprintf(w, sizeof w, "%s|%s", k->when ? k->when : "",
                     k->required_when ? k->required_when : "");
            for (char *v = strtok(w, "|"); sel && v; v = strtok(NULL, "|")) {
                char pat[64];
                snprintf(pat, sizeof pat, "|%s|", v);
                char all[400];
                snprintf(all, sizeof all, "|%s|", sel->choices);
                CHECK(strstr(all, pat) != NULL, "%s: when value %s is not a choice of %s",
                      k->path, v, sel->path);
            }
        }
        if (k->alias) {
            char sec[200], p[260];
            snprintf(sec, sizeof sec, "%.*s", (int)(pf_config_key_name(k) - k->path), k->path);
            snprintf(p, sizeof p, "%s%s", sec, k->alias);
            CHECK(pf_config_key_find(p) == NULL, "%s: alias %s is a key too", k->path, p);
        }
    }
    /* the defaults with the required keys filled in parse back to themselves */
    const char *req = "model: {type: EDSR, scale: 2}\ndata: {train: {gt_folder: g, "
                      "gt_patch_size: 64}}\noptimizers: {lr: 1.0e-4}\ntotal_iters: 10\n"
                      "work_dir: w\n";
    pf_config c, d;
    char err[512];
    CHECK(pf_config_parse(&c, "r.yaml", req, strlen(req), 0, err, sizeof err) == 0, "%s", err);
    pf_config_defaults(&d);
    CHECK(c.n_feats == d.n_feats && c.eval_tile_overlap == 40 && c.lr_warmup_ratio == 0.1f &&
              c.rgb_mean[2] == 0.4040f && !strcmp(c.train.filename_tmpl, "{}") &&
              c.ckpt_max_keep == -1 && c.eval_psnr && c.eval_ssim && c.resume_optim,
          "defaults from the table");
    check_round_trip(&c, "defaults");
    char v[64];
    CHECK(pf_config_get(&c, "model.scale", v, sizeof v) == 0 && !strcmp(v, "2") &&
              pf_config_get(&c, "data.train.gt_folder", v, sizeof v) == 0 && !strcmp(v, "g") &&
              pf_config_get(&c, "optimizers.betas", v, sizeof v) == 0 &&
              !strcmp(v, "[0.9, 0.999]") && pf_config_get(&c, "load_from", v, sizeof v) == 0 &&
              !strcmp(v, "") && pf_config_get(&c, "model", v, sizeof v) == -1 &&
              pf_config_get(&c, "no.such", v, sizeof v) == -1,
          "pf_config_get");
}

static void test_misc_errors(void) {
    pf_config c;
    char err[512];
    const char *list = "- a\n- b\n";
    CHECK(pf_config_parse(&c, "l.yaml", list, strlen(list), 0, err, sizeof err) == -1 &&
              !strncmp(err, "l.yaml:1: config: expected a mapping", 36),
          "top-level list: '%s'", err);
    CHECK(pf_config_parse(&c, "e.yaml", "", 0, 0, err, sizeof err) == -1 &&
              !strncmp(err, "e.yaml:1: ", 10),
          "empty file: '%s'", err);
    /* a number is checked as the float it is stored in (found by fuzz_config: 1.0e-67 passed
       "greater than 0" as a double, became 0, and the resolved config did not parse back) */
    const char *tiny = "model:\n  loss:\n    eps: 1.0e-67\n";
    CHECK(pf_config_parse(&c, "f.yaml", tiny, strlen(tiny), 0, err, sizeof err) == -1 &&
              strstr(err, "f.yaml:3: model.loss.eps: must be greater than 0, got 1.0e-67 (as a "
                          "32-bit float: 0)"),
          "float underflow: '%s'", err);
    /* refused by the YAML tree (common/yaml_tree.h), with the line */
    const char *two = "seed: 1\n---\nseed: 2\n";
    CHECK(pf_config_parse(&c, "d.yaml", two, strlen(two), 0, err, sizeof err) == -1 &&
              !strncmp(err, "d.yaml:2: yaml: a second YAML document", 38),
          "two documents: '%s'", err);
    char deep[200] = "a: ";
    for (int i = 0; i < 20; i++) strcat(deep, "[");
    CHECK(pf_config_parse(&c, "x.yaml", deep, strlen(deep), 0, err, sizeof err) == -1 &&
              strstr(err, "x.yaml:1: yaml: nested more than 16 levels deep"),
          "deep nesting: '%s'", err);
    const char *dup3 = "seed: 1\nlog_level: info\nseed: 2\nlog_level: debug\n";
    CHECK(pf_config_parse(&c, "k.yaml", dup3, strlen(dup3), 0, err, sizeof err) == -1 &&
              !strcmp(err, "k.yaml:3: yaml: duplicate key 'seed'"),
          "duplicate keys, the first repeat named: '%s'", err);
    /* a string the resolved YAML could not write back as itself (fuzz_config: "\a" decoded
       to BEL inside a single-quoted scalar is not YAML) */
    const char *bel = "work_dir: \"w\\ab\"\n", *nel = "work_dir: \"w\\x85\"\n";
    CHECK(pf_config_parse(&c, "b.yaml", bel, strlen(bel), 0, err, sizeof err) == -1 &&
              !strcmp(err, "b.yaml:1: work_dir: contains U+0007, which is not printable (a path "
                           "or name is one line of printable text)") &&
              pf_config_parse(&c, "b.yaml", nel, strlen(nel), 0, err, sizeof err) == -1 &&
              strstr(err, "U+0085"),
          "control characters in strings: '%s'", err);
    const char *nul = "model: {type: EDSR}\0x";
    CHECK(pf_config_parse(&c, "n.yaml", nul, 21, 0, err, sizeof err) == -1 &&
              strstr(err, "NUL"),
          "NUL byte: '%s'", err);
    /* Not UTF-8: refused before libfyaml, which loops forever on a directive followed by a
       malformed sequence (tests/fuzz/regressions/config/). The line is the offending byte's. */
    const char *hang = "# ok\n%\xf0 x\n";
    CHECK(pf_config_parse(&c, "u.yaml", hang, strlen(hang), 0, err, sizeof err) == -1 &&
              !strcmp(err, "u.yaml:2: config: not UTF-8 text (byte 0xf0 at offset 6)"),
          "bad UTF-8: '%s'", err);
    const char *overlong = "a: \xc0\xaf\n", *surrogate = "a: \xed\xa0\x80\n";
    CHECK(pf_config_parse(&c, "o.yaml", overlong, strlen(overlong), 0, err, sizeof err) == -1 &&
              strstr(err, "not UTF-8") &&
              pf_config_parse(&c, "s.yaml", surrogate, strlen(surrogate), 0, err, sizeof err) == -1 &&
              strstr(err, "not UTF-8"),
          "overlong / surrogate: '%s'", err);
    const char *utf8 = "# r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\n"
                       "model: {type: EDSR, scale: 4}\n"
                       "data: {train: {gt_folder: a, gt_patch_size: 192}}\n"
                       "optimizers: {lr: 1.0e-4}\ntotal_iters: 100\nwork_dir: w\n";
    CHECK(pf_config_parse(&c, "v.yaml", utf8, strlen(utf8), 0, err, sizeof err) == 0,
          "UTF-8 comment (2, 3, 4 bytes, U+10FFFF): '%s'", err);
    /* errors never overflow a small buffer */
    char small[16];
    char *text = make("  n_feats: 32", "  n_feats: abc");
    CHECK(pf_config_parse(&c, "t.yaml", text, strlen(text), 0, small, sizeof small) == -1 &&
              strlen(small) == sizeof small - 1,
          "truncated error '%s'", small);
    free(text);
    /* without path checks a missing folder is fine */
    text = make("    gt_folder: @D@\n    lq", "    gt_folder: data/DIV2K_HR\n    lq");
    CHECK(pf_config_parse(&c, "t.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "check_paths = 0: %s", err);
    free(text);
    /* hash changes with content, not with the file name */
    char *a = make(NULL, NULL), *b = make("seed: 7", "seed: 8");
    pf_config ca, cb, cc;
    CHECK(pf_config_parse(&ca, "a.yaml", a, strlen(a), 0, err, sizeof err) == 0 &&
              pf_config_parse(&cb, "a.yaml", b, strlen(b), 0, err, sizeof err) == 0 &&
              pf_config_parse(&cc, "other.yaml", a, strlen(a), 0, err, sizeof err) == 0,
          "parse for hash");
    CHECK(ca.hash != cb.hash, "different seed, different hash");
    CHECK(ca.hash == cc.hash, "same content, same hash");
    free(a);
    free(b);
}

/* eval_cfg.ensemble / tile / tile_overlap: values kept and round-tripped; the defaults are
   not written, so configs without them keep the hash they had before these keys existed. */
static void test_eval_cfg(void) {
    char *text = make("eval_cfg: {pad_multiple: 4}", "eval_cfg: {pad_multiple: 4, ensemble: "
                      "true, tile: 64, tile_overlap: 16}");
    pf_config c, d;
    char err[512];
    CHECK(pf_config_parse(&c, "e.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "eval_cfg parses: %s", err);
    CHECK(c.eval_ensemble == 1 && c.eval_tile == 64 && c.eval_tile_overlap == 16,
          "eval_cfg values %d %d %d", c.eval_ensemble, c.eval_tile, c.eval_tile_overlap);
    check_round_trip(&c, "eval_cfg ensemble + tile");
    free(text);
    text = make("eval_cfg: {pad_multiple: 4}", "eval_cfg: {pad_multiple: 4}");
    CHECK(pf_config_parse(&c, "e.yaml", text, strlen(text), 0, err, sizeof err) == 0, "%s",
          err);
    CHECK(c.eval_ensemble == 0 && c.eval_tile == 0 && c.eval_tile_overlap == 40,
          "eval_cfg defaults: no ensemble, no tiles, overlap 40");
    char *y = pf_config_to_yaml(&c);
    CHECK(y && !strstr(y, "ensemble") && !strstr(y, "tile"), "defaults written:\n%s", y);
    free(y);
    free(text);
    text = make("eval_cfg: {pad_multiple: 4}", "eval_cfg: {pad_multiple: 4, ensemble: false, "
                "tile: 0, tile_overlap: 40}");
    CHECK(pf_config_parse(&d, "e.yaml", text, strlen(text), 0, err, sizeof err) == 0, "%s",
          err);
    CHECK(c.hash == d.hash, "explicit defaults change the hash");
    free(text);
}

/* train_cfg.precision / test_cfg.precision (issue 43): fp32 (0) by default and not written
   then, so configs without them keep their hash; bf16 (1, nn/cpu/dnnl_ctx.h PF_PREC_BF16) in
   either or both, kept and round-tripped. */
static void test_precision(void) {
    static const struct {
        const char *yaml;
        int train, test;
    } CASES[] = {
        {"", 0, 0},
        {"train_cfg: {precision: bf16}\n", 1, 0},
        {"test_cfg: {precision: bf16}\n", 0, 1},
        {"train_cfg: {precision: bf16}\ntest_cfg: {precision: bf16}\n", 1, 1},
        {"train_cfg: {precision: fp32}\ntest_cfg: {precision: fp32}\n", 0, 0},
        {"train_cfg: {}\n", 0, 0},
    };
    uint64_t plain = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char *text = make(NULL, CASES[i].yaml);
        pf_config c;
        char err[512] = "", what[96];
        snprintf(what, sizeof what, "precision case %zu", i);
        CHECK(pf_config_parse(&c, "p.yaml", text, strlen(text), 0, err, sizeof err) == 0,
              "%s: %s", what, err);
        CHECK(c.train_precision == CASES[i].train && c.test_precision == CASES[i].test,
              "%s: train %d test %d, want %d %d", what, c.train_precision, c.test_precision,
              CASES[i].train, CASES[i].test);
        check_round_trip(&c, what);
        char *y = pf_config_to_yaml(&c);
        int bf16 = CASES[i].train || CASES[i].test;
        CHECK(y && !strstr(y, "fp32") && (strstr(y, "precision: bf16") != NULL) == bf16 &&
                  (strstr(y, "train_cfg") != NULL) == CASES[i].train &&
                  (strstr(y, "test_cfg") != NULL) == CASES[i].test,
              "%s: resolved YAML:\n%s", what, y ? y : "");
        if (i == 0) plain = c.hash;
        CHECK(bf16 || c.hash == plain, "%s: fp32 written out changes the hash", what);
        CHECK(!bf16 || c.hash != plain, "%s: bf16 leaves the hash of fp32", what);
        free(y);
        free(text);
    }
    const pf_config_key *k = pf_config_key_find("train_cfg.precision");
    const pf_config_key *t = pf_config_key_find("test_cfg.precision");
    CHECK(k && t && k->doc && strstr(k->doc, "torch.autocast") && t->doc &&
              strstr(t->doc, "--precision"),
          "train_cfg.precision / test_cfg.precision rows and their docs");
}

/* visual_config: values kept and round-tripped; output_dir is optional. */
static void test_visual(void) {
    char *text = make("log_config: {interval: 20}\n", "log_config: {interval: 20}\n"
                      "visual_config: {interval: 150, output_dir: pics/v, num_samples: 16}\n");
    pf_config c;
    char err[512];
    CHECK(pf_config_parse(&c, "v.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "visual_config parses: %s", err);
    CHECK(c.visual_interval == 150 && !strcmp(c.visual_output_dir, "pics/v") &&
              c.visual_num_samples == 16,
          "visual_config values");
    check_round_trip(&c, "visual_config");
    free(text);
    text = make("log_config: {interval: 20}\n",
                "log_config: {interval: 20}\nvisual_config: {interval: 0}\n");
    CHECK(pf_config_parse(&c, "v0.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "visual_config interval 0 parses: %s", err);
    CHECK(c.visual_interval == 0 && c.visual_num_samples == 4 && !c.visual_output_dir[0],
          "interval 0: off, defaults kept");
    check_round_trip(&c, "visual_config off");
    free(text);
}

/* The video sets: BasicSR's keys parsed, the resolved YAML round-trips, and the rules that
   span keys (training types in data.train only, Vimeo-90K's list, evaluation frames never
   trained on, a held-out clip not listed) fail naming the key. */
static const char *VIDEO_DATA =
    "    type: REDSRecurrentDataset\n"
    "    gt_folder: @D@\n"
    "    gt_patch_size: 96\n"
    "    num_frame: 5\n"
    "    interval_list: [1, 2]\n"
    "    random_reverse: true\n"
    "    use_hflip: true\n"
    "    use_rot: true\n"
    "    val_partition: [held, 'two words']\n"
    "    clips:\n"
    "      - {name: cityCC0.mpg, frames: [0, 120]}\n"
    "      - name: 'vtest.avi'\n"
    "        crop: [0, 8, 256, 128]\n"
    "  eval:\n"
    "    type: VideoRecurrentTestDataset\n"
    "    gt_folder: @D@\n"
    "    clips:\n"
    "      - {name: cityCC0.mpg, frames: [130, 150], crop: [0, 0, 512, 256]}\n";
static const char *IMAGE_DATA =
    "    type: PairedImageDataset\n"
    "    gt_folder: @D@\n"
    "    lq_folder: @D@/config\n"
    "    filename_tmpl: '{}x2'\n"
    "    gt_patch_size: 96\n"
    "    use_flip: true\n"
    "    use_rot: true\n"
    "    repeat: 100\n"
    "  eval:\n"
    "    gt_folder: @D@/config\n";

/* BASE with a video network (BasicVSR x4, the same line count up to data) and `data` in
   place of its image sets (its test set dropped: BasicVSR takes clips only). */
static char *make_video(const char *data) {
    char *t = make(IMAGE_DATA, data);
    char *u = replace(t, "  type: EDSR\n  scale: 2\n", "  type: BasicVSR\n  scale: 4\n");
    char *test = expand("  test:\n    gt_folder: @D@\n");
    char *v = replace(u, test, "");
    free(t);
    free(u);
    free(test);
    return v;
}

static void test_video_sets(void) {
    char *text = make_video(VIDEO_DATA), err[1024] = "";
    pf_config c;
    int rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 1, err, sizeof err);
    CHECK(rc == 0, "video config: %s", err);
    if (rc == 0) {
        const pf_dataset_cfg *t = &c.train, *e = &c.eval;
        CHECK(!strcmp(t->type, "REDSRecurrentDataset") && t->num_frame == 5 &&
              t->n_intervals == 2 && t->interval_list[1] == 2 && t->random_reverse &&
              t->use_hflip && t->use_rot && t->n_val_partition == 2 &&
              !strcmp(t->val_partition[1], "two words"), "video train keys");
        CHECK(t->n_clips == 2 && !strcmp(t->clips[0].name, "cityCC0.mpg") &&
              t->clips[0].frames[1] == 120 && t->clips[0].crop[2] == 0 &&
              !strcmp(t->clips[1].name, "vtest.avi") && t->clips[1].frames[1] == 0 &&
              t->clips[1].crop[1] == 8 && t->clips[1].crop[3] == 128, "train clips");
        CHECK(e->n_clips == 1 && e->clips[0].frames[0] == 130 && e->clips[0].crop[2] == 512,
              "eval clips");
        CHECK(t->n_degradations == 1 && !strcmp(t->degradation[0].type, "BI"), "BI default");
        check_round_trip(&c, "video config");
        char got[512];
        CHECK(pf_config_get(&c, "data.train.val_partition", got, sizeof got) == 0 &&
              !strcmp(got, "['held', 'two words']"), "--get val_partition: %s", got);
    }
    free(text);
    static const struct {
        const char *old, *new, *want;
    } bad[] = {
        {"frames: [130, 150]", "frames: [100, 130]",
         "t.yaml:27: data.eval.clips: item 0 (cityCC0.mpg, frames [100, 130)) shares frames "
         "with data.train.clips item 0 ([0, 120))"},
        {"    type: VideoRecurrentTestDataset", "    type: REDSRecurrentDataset",
         "t.yaml:25: data.eval.type: REDSRecurrentDataset makes training samples"},
        {"    type: REDSRecurrentDataset\n    gt_folder: @D@\n    gt_patch_size: 96\n"
         "    num_frame: 5\n    interval_list: [1, 2]\n    random_reverse: true\n"
         "    use_hflip: true\n    use_rot: true\n    val_partition: [held, 'two words']\n",
         "    type: VideoRecurrentTestDataset\n    gt_folder: @D@\n    gt_patch_size: 96\n",
         "t.yaml:11: data.train.type: VideoRecurrentTestDataset is whole clips"},
        {"    type: REDSRecurrentDataset", "    type: Vimeo90KRecurrentDataset", NULL},
        {"      - {name: cityCC0.mpg, frames: [0, 120]}", "      - {frames: [0, 120]}",
         "t.yaml:21: data.train.clips[0].name: required key is missing"},
        {"frames: [0, 120]", "frames: [0, 120, 3]", "t.yaml:21: data.train.clips[0].frames:"},
        {"    use_hflip: true", "    use_flip: true",
         "t.yaml:17: data.train.use_flip: only allowed with type PairedImageDataset, "
         "SingleImageDataset or RealESRGANDataset (data.train.type is REDSRecurrentDataset)"},
        {"    type: VideoRecurrentTestDataset", "    type: VideoRecurrentTestDataset\n"
         "    num_frame: 3", "t.yaml:26: data.eval.num_frame: only allowed with type "
         "REDSRecurrentDataset, "},
        {"[held, 'two words']", "[held, vtest.avi]",
         "t.yaml:19: data.train.val_partition: 'vtest.avi' is held out but listed in "
         "data.train.clips (item 1)"},
        {"[held, 'two words']", "[held, held]", "t.yaml:19: data.train.val_partition[1]: "
         "'held' is already item 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *v = expand(VIDEO_DATA), *o = expand(bad[i].old), *w = expand(bad[i].new);
        char *patched = replace(v, o, w);
        const char *want = bad[i].want;
        if (!want) {   /* Vimeo-90K without its list: no meta_info_file and no clips */
            char *cut = replace(patched, "    clips:\n      - {name: cityCC0.mpg, frames: [0, "
                                "120]}\n      - name: 'vtest.avi'\n        crop: [0, 8, 256, "
                                "128]\n", "");
            free(patched);
            patched = cut;
            want = "t.yaml:10: data.train.meta_info_file: Vimeo90KRecurrentDataset needs";
        }
        char *t2 = make_video(patched);
        err[0] = 0;
        rc = pf_config_parse(&c, "t.yaml", t2, strlen(t2), 1, err, sizeof err);
        CHECK(rc == -1 && !strncmp(err, want, strlen(want)),
              "video case %zu:\n got  '%s'\n want '%s...'", i, err, want);
        free(v);
        free(o);
        free(w);
        free(patched);
        free(t2);
    }
    /* Vimeo-90K: 7 frames unless said */
    char *v = expand(VIDEO_DATA), *o = expand("    type: REDSRecurrentDataset\n"),
         *w = expand("    type: Vimeo90KRecurrentDataset\n");
    char *p1 = replace(v, o, w), *p2 = replace(p1, "    num_frame: 5\n", "");
    char *t3 = make_video(p2);
    rc = pf_config_parse(&c, "t.yaml", t3, strlen(t3), 1, err, sizeof err);
    CHECK(rc == 0 && c.train.num_frame == 7, "Vimeo default num_frame: %s", err);
    free(v);
    free(o);
    free(w);
    free(p1);
    free(p2);
    free(t3);
    /* the network and the sets must agree: clips train a video network, images an image
       network; BasicVSR is x4; its depth defaults to BasicSR's 15 blocks a trunk */
    text = make_video(VIDEO_DATA);
    rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 1, err, sizeof err);
    CHECK(rc == 0 && c.n_blocks == 4 && c.n_feats == 32 && c.fix_iter == 0 &&
          !c.spynet_pretrained[0], "BasicVSR keys: %s", err);
    char *nb = replace(text, "  n_blocks: 4\n", "");
    rc = pf_config_parse(&c, "t.yaml", nb, strlen(nb), 1, err, sizeof err);
    CHECK(rc == 0 && c.n_blocks == 15, "BasicVSR default num_block 15: %s (%d)", err,
          c.n_blocks);
    static const struct {
        const char *old, *new, *want;
    } mismatch[] = {
        {"  type: BasicVSR\n", "  type: EDSR\n", "t.yaml:11: data.train.type: EDSR is an "
         "image network; REDSRecurrentDataset makes clips"},
        {"  scale: 4\n", "  scale: 2\n", "t.yaml:3: model.scale: must be 4 for BasicVSR"},
        {"  n_blocks: 4\n", "  n_blocks: 32\n", "t.yaml:5: model.n_blocks: must be at most 31 "
         "for BasicVSR"},
        {"  n_blocks: 4\n", "  n_blocks: 4\n  fix_iter: -1\n", "t.yaml:6: model.fix_iter:"},
    };
    for (size_t i = 0; i < sizeof mismatch / sizeof mismatch[0]; i++) {
        char *t4 = replace(text, mismatch[i].old, mismatch[i].new);
        err[0] = 0;
        rc = pf_config_parse(&c, "t.yaml", t4, strlen(t4), 1, err, sizeof err);
        CHECK(rc == -1 && !strncmp(err, mismatch[i].want, strlen(mismatch[i].want)),
              "network/set case %zu:\n got  '%s'\n want '%s...'", i, err, mismatch[i].want);
        free(t4);
    }
    /* an image training set for BasicVSR */
    char *img = make(NULL, NULL);
    char *t5 = replace(img, "  type: EDSR\n  scale: 2\n", "  type: BasicVSR\n  scale: 4\n");
    rc = pf_config_parse(&c, "t.yaml", t5, strlen(t5), 1, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "data.train.type: BasicVSR trains on clips"),
          "BasicVSR on images: %s", err);
    free(img);
    free(t5);
    free(nb);
    free(text);
}

/* The sliding-window sets (issue 42, EDVR's data): REDSDataset in data.train, VideoTestDataset
   in data.eval / data.test. Each rule fails naming its key and line: num_frame even, a listed
   clip shorter than a window (REDSDataset: (num_frame - 1) x max(interval_list) + 1 frames,
   one frame less fails and exactly that many passes; VideoTestDataset: by its padding),
   interval_list empty or not positive, an unknown padding, each type in the other's block,
   and (no sliding-window network yet) either set with BasicVSR, which outputs every frame.
   An image network evaluates a VideoTestDataset (frame by frame): its keys parse with BasicSR's
   defaults (num_frame 5, padding reflection_circle) and round-trip. */
static void test_window_sets(void) {
    static const struct {
        const char *old, *new, *want;
    } cases[] = {
        {NULL, NULL, "t.yaml:11: data.train.type: REDSDataset gives a center frame's window of "
         "num_frame LQ frames and one GT frame (a sliding-window network's data, EDVR); BasicVSR "
         "outputs every frame of a clip: use REDSRecurrentDataset"},
        {"    num_frame: 5\n", "    num_frame: 4\n", "t.yaml:14: data.train.num_frame: "
         "REDSDataset takes an odd num_frame (a center frame and num_frame / 2 neighbours on "
         "each side, as BasicSR's REDSDataset), got 4"},
        {"frames: [0, 120]", "frames: [0, 8]", "t.yaml:20: data.train.clips: item 0 "
         "(cityCC0.mpg) has 8 frames ([0, 8)); num_frame 5 with interval 2 needs 9"},
        {"frames: [0, 120]", "frames: [3, 12]", "t.yaml:11: data.train.type: REDSDataset gives"},
        {"interval_list: [1, 2]", "interval_list: []", "t.yaml:15: data.train.interval_list:"},
        {"interval_list: [1, 2]", "interval_list: [1, 0]", "t.yaml:15: data.train.interval_list"},
        {"    type: VideoRecurrentTestDataset\n", "    type: VideoTestDataset\n    num_frame: 4\n",
         "t.yaml:26: data.eval.num_frame: VideoTestDataset takes an odd num_frame"},
        {"    type: VideoRecurrentTestDataset\n", "    type: VideoTestDataset\n    padding: mirror\n",
         "t.yaml:26: data.eval.padding: "},
        {"frames: [130, 150], crop", "frames: [130, 134], crop", NULL},   /* VideoTestDataset */
        {"    type: VideoRecurrentTestDataset\n", "    type: REDSDataset\n",
         "t.yaml:25: data.eval.type: REDSDataset makes training samples"},
    };
    char *v = expand(VIDEO_DATA), err[1024];
    char *reds = replace(v, "    type: REDSRecurrentDataset\n", "    type: REDSDataset\n");
    pf_config c;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *patched = cases[i].old ? replace(reds, cases[i].old, cases[i].new) : strdup(reds);
        const char *want = cases[i].want;
        if (!want) {   /* a 4-frame eval clip: reflection_circle needs 5, replicate 1 */
            char *u = replace(patched, "    type: VideoRecurrentTestDataset\n",
                              "    type: VideoTestDataset\n");
            free(patched);
            patched = u;
            want = "t.yaml:27: data.eval.clips: item 0 (cityCC0.mpg) has 4 frames ([130, 134)); "
                   "num_frame 5 with padding reflection_circle needs 5";
        }
        char *t = make_video(patched);
        err[0] = 0;
        int rc = pf_config_parse(&c, "t.yaml", t, strlen(t), 1, err, sizeof err);
        CHECK(rc == -1 && !strncmp(err, want, strlen(want)),
              "window case %zu:\n got  '%s'\n want '%s...'", i, err, want);
        free(patched);
        free(t);
    }
    /* the same 4-frame clip with replicate (1 frame is enough) passes the window rules and
       meets the network's: BasicVSR outputs every frame */
    char *r1 = replace(v, "    type: VideoRecurrentTestDataset\n",
                       "    type: VideoTestDataset\n    padding: replicate\n");
    char *r2 = replace(r1, "frames: [130, 150], crop", "frames: [130, 134], crop");
    char *t = make_video(r2);
    int rc = pf_config_parse(&c, "t.yaml", t, strlen(t), 1, err, sizeof err);
    const char *want = "t.yaml:25: data.eval.type: VideoTestDataset gives a center frame's "
                       "window";
    CHECK(rc == -1 && !strncmp(err, want, strlen(want)), "replicate, BasicVSR: '%s'", err);
    free(r1);
    free(r2);
    free(t);
    /* data.train VideoTestDataset */
    char *r3 = replace(v, "    type: REDSRecurrentDataset\n", "    type: VideoTestDataset\n");
    char *r4 = replace(r3, "    random_reverse: true\n    use_hflip: true\n", "");
    char *r5 = replace(r4, "    interval_list: [1, 2]\n", "");
    char *r6 = replace(r5, "    val_partition: [held, 'two words']\n", "");
    t = make_video(r6);
    rc = pf_config_parse(&c, "t.yaml", t, strlen(t), 1, err, sizeof err);
    want = "t.yaml:11: data.train.type: VideoTestDataset is whole clips for evaluation and test";
    CHECK(rc == -1 && !strncmp(err, want, strlen(want)), "VideoTestDataset in data.train: '%s'",
          err);
    free(r3);
    free(r4);
    free(r5);
    free(r6);
    free(t);
    /* an image network evaluating a VideoTestDataset frame by frame: BasicSR's defaults */
    char *img = make(NULL, NULL);
    char *ev = expand("  eval:\n    gt_folder: @D@/config\n");
    char *vt = expand("  eval:\n    type: VideoTestDataset\n    gt_folder: @D@\n");
    char *t7 = replace(img, ev, vt);
    rc = pf_config_parse(&c, "t.yaml", t7, strlen(t7), 1, err, sizeof err);
    CHECK(rc == 0 && c.eval.num_frame == 5 && !strcmp(c.eval.padding, "reflection_circle"),
          "EDSR with a VideoTestDataset eval set: %s (num_frame %d, padding %s)", err,
          c.eval.num_frame, c.eval.padding);
    if (rc == 0) check_round_trip(&c, "VideoTestDataset");
    free(img);
    free(ev);
    free(vt);
    free(t7);
    free(reds);
    free(v);
}

/* A test config (issue 33): model, data.test and work_dir are enough to parse, round-trip and
   run `pixflow test`; pf_config_check_train names every training key it lacks, and each key
   alone is named when only it is missing. */
static void test_test_only(void) {
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
             "data:\n  test: {type: PairedImageDataset, gt_folder: %s}\n"
             "work_dir: work_dirs/t\n", data_dir);
    pf_config c;
    int rc = pf_config_parse(&c, "t.yaml", text, strlen(text), 1, err, sizeof err);
    CHECK(rc == 0, "a config with model, data.test and work_dir parses: %s", err);
    if (rc)
        return;
    CHECK(!c.has_optimizers && !c.total_iters && !c.total_epochs && !c.train.present &&
              c.test.present, "the training keys are absent");
    check_round_trip(&c, "test-only config");
    char *y = pf_config_to_yaml(&c);
    CHECK(y && !strstr(y, "optimizers") && !strstr(y, "total_"),
          "its resolved YAML invents no training keys:\n%s", y ? y : "");
    free(y);
    rc = pf_config_check_train(&c, err, sizeof err);
    CHECK(rc == -1 && !strcmp(err, "t.yaml: `pixflow train` needs optimizers, total_iters (or "
                              "total_epochs), data.train, missing from the config (a config "
                              "with model, data.test and work_dir is enough for `pixflow test` "
                              "only)"),
          "check_train names the three: '%s'", err);
    /* the full base trains; without total_iters only that is named */
    char *base = make(NULL, NULL);
    rc = pf_config_parse(&c, "t.yaml", base, strlen(base), 1, err, sizeof err);
    CHECK(rc == 0 && c.has_optimizers && pf_config_check_train(&c, err, sizeof err) == 0,
          "the base config trains: %s", err);
    free(base);
    char *no_iters = make("total_iters: 1800\n", "");
    rc = pf_config_parse(&c, "t.yaml", no_iters, strlen(no_iters), 1, err, sizeof err);
    CHECK(rc == 0, "without total_iters it parses: %s", err);
    rc = pf_config_check_train(&c, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "needs total_iters (or total_epochs), missing") &&
              !strstr(err, "optimizers") && !strstr(err, "data.train"),
          "only total_iters is named: '%s'", err);
    free(no_iters);
    char *no_opt = make("optimizers: {type: Adam, lr: 2.0e-4, betas: [0.9, 0.999]}\n", "");
    rc = pf_config_parse(&c, "t.yaml", no_opt, strlen(no_opt), 1, err, sizeof err);
    CHECK(rc == 0 && pf_config_check_train(&c, err, sizeof err) == -1 &&
              strstr(err, "needs optimizers, missing"),
          "only optimizers is named: '%s'", err);
    free(no_opt);
    /* a config made in code (pf_config_defaults) keeps training */
    pf_config_defaults(&c);
    CHECK(c.has_optimizers == 1, "pf_config_defaults: has_optimizers 1");
}

int main(void) {
    test_optimizer_keys();
    snprintf(data_dir, sizeof data_dir, "%s", pf_test_data());
    CHECK(fnv1a64("") == 0xcbf29ce484222325ull && fnv1a64("a") == 0xaf63dc4c8601ec8cull,
          "FNV-1a 64 reference vectors");
    test_valid_base();
    test_defaults();
    test_valid_file();
    test_model_zoo_keys();
    test_data_plane_keys();
    test_demo();
    test_visual();
    test_eval_cfg();
    test_precision();
    test_broken();
    test_unknown_keys();
    test_section_keys();
    test_key_table();
    test_misc_errors();
    test_video_sets();
    test_window_sets();
    test_test_only();
    return pf_test_end("test_config");
}
