/*  test_config_realesrgan — the Real-ESRGAN dataset types and their degradation keys as
    config rows (issue 40): a BasicSR-style block parses to the pipeline options it spells
    (compared field by field with pf_realesrgan_opts_default changed in C by the written
    values), a block that leaves the keys out gives exactly the defaults, the resolved YAML
    parses back to the same options, and each bad input is an error naming the key at its
    line (an even or too big kernel, kernel_prob that does not sum to 1 or has the wrong length,
    JPEG ranges, probabilities, the patch size, lq_folder / degradation, misplaced keys).
*/
#include "common/config.h"
#include "common/config_keys.h"
#include "common/realesrgan_cfg.h"
#include "pf_test.h"

#include <stdint.h>
#include <string.h>

/* A training config whose data.train block is `block` (lines indented by 4). */
static char *config_with(const char *block, const char *extra) {
    static const char *head = "model:\n  type: MSRResNet\n  scale: 4\n"
                              "data:\n  samples_per_gpu: 4\n  train:\n"
                              "    type: RealESRGANDataset\n    gt_folder: g\n"
                              "    gt_patch_size: 256\n";
    static const char *tail = "optimizers:\n  lr: 1.0e-4\ntotal_iters: 10\nwork_dir: w\n";
    size_t n = strlen(head) + strlen(block) + strlen(tail) + strlen(extra) + 1;
    char *t = malloc(n);
    snprintf(t, n, "%s%s%s%s", head, block, extra, tail);
    return t;
}

/* The first field where a and b differ, or NULL (each member compared, not the padding). */
static const char *opts_diff(const pf_realesrgan_opts *a, const pf_realesrgan_opts *b) {
    for (int s = 0; s < 2; s++) {
        const pf_blur_opts *x = &a->blur[s], *y = &b->blur[s];
        if (x->blur_kernel_size != y->blur_kernel_size) return "blur_kernel_size";
        if (x->n_kernels != y->n_kernels) return "kernel_list (count)";
        if (x->n_kernel_prob != y->n_kernel_prob) return "kernel_prob (count)";
        for (int i = 0; i < x->n_kernels; i++)
            if (x->kernel_list[i] != y->kernel_list[i]) return "kernel_list";
        for (int i = 0; i < x->n_kernel_prob; i++)
            if (x->kernel_prob[i] != y->kernel_prob[i]) return "kernel_prob";
        for (int i = 0; i < 2; i++) {
            if (x->blur_sigma[i] != y->blur_sigma[i]) return "blur_sigma";
            if (x->betag_range[i] != y->betag_range[i]) return "betag_range";
            if (x->betap_range[i] != y->betap_range[i]) return "betap_range";
            if (a->resize[s].resize_range[i] != b->resize[s].resize_range[i])
                return "resize_range";
            if (a->noise[s].noise_range[i] != b->noise[s].noise_range[i]) return "noise_range";
            if (a->noise[s].poisson_scale_range[i] != b->noise[s].poisson_scale_range[i])
                return "poisson_scale_range";
            if (a->jpeg[s].jpeg_range[i] != b->jpeg[s].jpeg_range[i]) return "jpeg_range";
        }
        if (x->sinc_prob != y->sinc_prob) return "sinc_prob";
        if (a->resize[s].n_resize_prob != b->resize[s].n_resize_prob) return "resize_prob (n)";
        for (int i = 0; i < 3; i++)
            if (a->resize[s].resize_prob[i] != b->resize[s].resize_prob[i]) return "resize_prob";
        if (a->noise[s].gaussian_noise_prob != b->noise[s].gaussian_noise_prob)
            return "gaussian_noise_prob";
        if (a->noise[s].gray_noise_prob != b->noise[s].gray_noise_prob) return "gray_noise_prob";
    }
    if (a->second_order_prob != b->second_order_prob) return "second_order_prob";
    if (a->second_blur_prob != b->second_blur_prob) return "second_blur_prob";
    if (a->final_sinc_prob != b->final_sinc_prob) return "final_sinc_prob";
    if (a->scale != b->scale) return "scale";
    return NULL;
}

static int parse(pf_config *c, const char *text, char *err, size_t errlen) {
    return pf_config_parse(c, "t.yaml", text, strlen(text), 0, err, errlen);
}

/* The opts of data.train of a parsed config (checked for its patch). */
static int train_opts(const pf_config *c, pf_realesrgan_opts *o) {
    char err[700];
    int rc = pf_dataset_realesrgan_opts(&c->train, "data.train", c->scale, c->train.gt_patch_size,
                                        o, err, sizeof err);
    CHECK(rc == 0, "train opts: %s", err);
    return rc;
}

/* Keys left out: exactly pf_realesrgan_opts_default (doubles, so 0.1 is the double 0.1). */
static void test_defaults(void) {
    char *t = config_with("", ""), err[700] = "";
    pf_config c;
    pf_realesrgan_opts o, d;
    CHECK(parse(&c, t, err, sizeof err) == 0, "defaults parse: %s", err);
    pf_realesrgan_opts_default(&d);
    if (!train_opts(&c, &o)) {
        const char *f = opts_diff(&o, &d);
        CHECK(f == NULL, "defaults differ from pf_realesrgan_opts_default at %s", f);
        CHECK(o.blur[0].sinc_prob == 0.1 && o.resize[0].resize_range[0] == 0.15,
              "defaults are the doubles 0.1 / 0.15");
    }
    CHECK(c.train.gt_usm == 1, "gt_usm defaults to true");
    CHECK(c.train.n_degradations == 0 && !c.train.lq_folder[0], "no BI step, no lq_folder");
    free(t);
}

/* A BasicSR-style block (train_realesrnet_x4plus.yml's layout, other values) and the opts
   written out in C. */
static const char *FULL =
    "    blur_kernel_size: 15\n"
    "    kernel_list: [iso, plateau_aniso, generalized_iso]\n"
    "    kernel_prob: [0.5, 0.3, 0.2]\n"
    "    blur_sigma: [0.3, 2.5]\n"
    "    betag_range: [0.6, 3.5]\n"
    "    betap_range: [0.9, 1.7]\n"
    "    sinc_prob: 0.05\n"
    "    blur_kernel_size2: 11\n"
    "    kernel_list2: [aniso]\n"
    "    kernel_prob2: [1]\n"
    "    blur_sigma2: [0.25, 1.25]\n"
    "    betag_range2: [0.5, 4]\n"
    "    betap_range2: [1, 2]\n"
    "    sinc_prob2: 0.15\n"
    "    final_sinc_prob: 0.7\n"
    "    resize_prob: [0.25, 0.65, 0.1]\n"
    "    resize_range: [0.2, 1.4]\n"
    "    gaussian_noise_prob: 0.6\n"
    "    noise_range: [2, 28]\n"
    "    poisson_scale_range: [0.1, 2.9]\n"
    "    gray_noise_prob: 0.3\n"
    "    jpeg_range: [40, 90]\n"
    "    second_order_prob: 0.9\n"
    "    second_blur_prob: 0.75\n"
    "    resize_prob2: [0.35, 0.35, 0.3]\n"
    "    resize_range2: [0.35, 1.1]\n"
    "    gaussian_noise_prob2: 0.45\n"
    "    noise_range2: [1.5, 20]\n"
    "    poisson_scale_range2: [0.06, 2]\n"
    "    gray_noise_prob2: 0.35\n"
    "    jpeg_range2: [35, 85]\n"
    "    gt_usm: false\n";

static void full_expected(pf_realesrgan_opts *e) {
    pf_realesrgan_opts_default(e);
    pf_blur_opts *b = &e->blur[0];
    b->blur_kernel_size = 15;
    b->n_kernels = b->n_kernel_prob = 3;
    b->kernel_list[0] = PF_BLUR_ISO;
    b->kernel_list[1] = PF_BLUR_PLATEAU_ANISO;
    b->kernel_list[2] = PF_BLUR_GENERALIZED_ISO;
    b->kernel_prob[0] = 0.5, b->kernel_prob[1] = 0.3, b->kernel_prob[2] = 0.2;
    b->blur_sigma[0] = 0.3, b->blur_sigma[1] = 2.5;
    b->betag_range[0] = 0.6, b->betag_range[1] = 3.5;
    b->betap_range[0] = 0.9, b->betap_range[1] = 1.7;
    b->sinc_prob = 0.05;
    b = &e->blur[1];
    b->blur_kernel_size = 11;
    b->n_kernels = b->n_kernel_prob = 1;
    b->kernel_list[0] = PF_BLUR_ANISO;
    b->kernel_prob[0] = 1;
    b->blur_sigma[0] = 0.25, b->blur_sigma[1] = 1.25;
    b->sinc_prob = 0.15;
    e->final_sinc_prob = 0.7;
    double rp1[3] = {0.25, 0.65, 0.1}, rp2[3] = {0.35, 0.35, 0.3};
    memcpy(e->resize[0].resize_prob, rp1, sizeof rp1);
    memcpy(e->resize[1].resize_prob, rp2, sizeof rp2);
    e->resize[0].resize_range[0] = 0.2, e->resize[0].resize_range[1] = 1.4;
    e->resize[1].resize_range[0] = 0.35, e->resize[1].resize_range[1] = 1.1;
    e->noise[0].gaussian_noise_prob = 0.6, e->noise[1].gaussian_noise_prob = 0.45;
    e->noise[0].noise_range[0] = 2, e->noise[0].noise_range[1] = 28;
    e->noise[1].noise_range[0] = 1.5, e->noise[1].noise_range[1] = 20;
    e->noise[0].poisson_scale_range[0] = 0.1, e->noise[0].poisson_scale_range[1] = 2.9;
    e->noise[1].poisson_scale_range[0] = 0.06, e->noise[1].poisson_scale_range[1] = 2;
    e->noise[0].gray_noise_prob = 0.3, e->noise[1].gray_noise_prob = 0.35;
    e->jpeg[0].jpeg_range[0] = 40, e->jpeg[0].jpeg_range[1] = 90;
    e->jpeg[1].jpeg_range[0] = 35, e->jpeg[1].jpeg_range[1] = 85;
    e->second_order_prob = 0.9;
    e->second_blur_prob = 0.75;
}

static void test_full_block_and_round_trip(void) {
    char *t = config_with(FULL, ""), err[700] = "";
    pf_config c, d;
    pf_realesrgan_opts o, e, o2;
    CHECK(parse(&c, t, err, sizeof err) == 0, "full block parses: %s", err);
    full_expected(&e);
    if (!train_opts(&c, &o)) {
        const char *f = opts_diff(&o, &e);
        CHECK(f == NULL, "full block: %s differs from the written value", f);
    }
    CHECK(c.train.gt_usm == 0, "gt_usm: false");
    /* the resolved YAML parses back to the same options and the same struct */
    char *y = pf_config_to_yaml(&c);
    CHECK(y && strstr(y, "kernel_list: [iso, plateau_aniso, generalized_iso]") &&
              strstr(y, "sinc_prob: 0.05") && strstr(y, "gt_usm: false"),
          "resolved YAML:\n%s", y ? y : "(null)");
    CHECK(y && parse(&d, y, err, sizeof err) == 0, "resolved YAML parses: %s", err);
    if (y && !train_opts(&d, &o2)) {
        const char *f = opts_diff(&o2, &e);
        CHECK(f == NULL, "round trip: %s differs", f);
        char *y2 = pf_config_to_yaml(&d);
        CHECK(y2 && !strcmp(y, y2), "resolved YAML is stable");
        free(y2);
    }
    char v[256];
    CHECK(pf_config_get(&c, "data.train.kernel_list2", v, sizeof v) == 0 &&
              !strcmp(v, "[aniso]"), "config --get kernel_list2: %s", v);
    CHECK(pf_config_get(&c, "data.train.noise_range2", v, sizeof v) == 0 &&
              !strcmp(v, "[1.5, 20]"), "config --get noise_range2: %s", v);
    free(y);
    free(t);
}

/* RealESRGANDataset as the eval set: degradation keys allowed, gt_usm (train only) not. */
static void test_eval_set(void) {
    const char *eval = "  eval:\n    type: RealESRGANDataset\n    gt_folder: e\n"
                       "    jpeg_range2: [50, 60]\n    degrade_seed: 7\n";
    char *t = config_with("", eval), err[700] = "";
    pf_config c;
    CHECK(parse(&c, t, err, sizeof err) == 0, "eval set parses: %s", err);
    pf_dataset_cfg paired = {.type = "PairedImageDataset", .degrade_seed = 7};
    CHECK(c.eval.degrade_seed == 7 && pf_dataset_eval_seed(&c.eval, 11) == 7 &&
              pf_dataset_eval_seed(&paired, 11) == 11, "degrade_seed: %lld",
          (long long)c.eval.degrade_seed);
    pf_realesrgan_opts o;
    CHECK(pf_dataset_realesrgan_opts(&c.eval, "data.eval", 4, 0, &o, err, sizeof err) == 0 &&
              o.jpeg[1].jpeg_range[0] == 50 && o.jpeg[1].jpeg_range[1] == 60,
          "eval opts: %s", err);
    free(t);
    const char *usm = "  eval:\n    type: RealESRGANDataset\n    gt_folder: e\n"
                      "    gt_usm: true\n";
    t = config_with("", usm);
    CHECK(parse(&c, t, err, sizeof err) == -1 && strstr(err, "data.eval.gt_usm"),
          "gt_usm in eval: %s", err);
    free(t);
    t = config_with("    degrade_seed: 1\n", "");
    CHECK(parse(&c, t, err, sizeof err) == -1 && strstr(err, "data.train.degrade_seed: eval and "
                                                           "test only"),
          "degrade_seed in train: %s", err);
    free(t);
    const char *video = "  eval:\n    type: RealESRGANVideoDataset\n    gt_folder: e\n";
    t = config_with("", video);
    CHECK(parse(&c, t, err, sizeof err) == -1 && strstr(err, "data.eval.type: "
                                                           "RealESRGANVideoDataset makes training"),
          "video type in eval: %s", err);
    free(t);
}

/* Each bad input: the error names the key (and its line, where `marker` is in the text). */
static void test_errors(void) {
    static const struct {
        const char *block, *marker, *want;
    } cases[] = {
        {"    blur_kernel_size: 20\n", "blur_kernel_size", "data.train.blur_kernel_size: 20 is even"},
        {"    blur_kernel_size2: 21\n    resize_range: [0.03, 1.5]\n", "blur_kernel_size2",
         "data.train.blur_kernel_size2: 21 is too big for the patch"},
        {"    kernel_prob: [0.45, 0.25, 0.12, 0.03, 0.12, 0.02]\n", "kernel_prob",
         "data.train.kernel_prob: 6 values sum to"},
        /* kernel_prob2 left out (its 6 defaults): the set's line */
        {"    kernel_list2: [iso, aniso]\n", "  train:", "data.train.kernel_prob2: 6 values"},
        {"    kernel_list2: [iso, aniso]\n    kernel_prob2: [1]\n", "kernel_prob2",
         "data.train.kernel_prob2: 1 value"},
        {"    kernel_list: [iso, gaussian]\n", "kernel_list", "data.train.kernel_list[1]: "},
        {"    jpeg_range: [0, 95]\n", "jpeg_range", "data.train.jpeg_range[0]: must be in [1, 100]"},
        {"    jpeg_range2: [95, 30]\n", "jpeg_range2", "data.train.jpeg_range2: [95, 30] is not a range"},
        {"    jpeg_range: [30, 101]\n", "jpeg_range", "data.train.jpeg_range[1]: "},
        {"    sinc_prob2: 1.5\n", "sinc_prob2", "data.train.sinc_prob2: must be in [0, 1]"},
        {"    second_order_prob: -0.1\n", "second_order_prob",
         "data.train.second_order_prob: must be in [0, 1]"},
        {"    resize_prob: [0.5, 0.4, 0.2]\n", "resize_prob", "data.train.resize_prob: 3 values sum to"},
        {"    noise_range: [30, 1]\n", "noise_range", "data.train.noise_range: [30, 1] is not a range"},
        {"    lq_folder: l\n", "lq_folder", "data.train.lq_folder: not used by RealESRGANDataset"},
        {"    degradation: [{type: BI}]\n", "degradation",
         "data.train.degradation: not used by RealESRGANDataset"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = config_with(cases[i].block, ""), err[700] = "", want[300];
        pf_config c;
        snprintf(want, sizeof want, "t.yaml:%d: %s", pf_test_line_of(t, cases[i].marker), cases[i].want);
        int rc = parse(&c, t, err, sizeof err);
        CHECK(rc == -1 && !strncmp(err, want, strlen(want)), "case %zu:\n got  '%s'\n want '%s...'",
              i, err, want);
        free(t);
    }
    /* gt_patch_size not a multiple of scale */
    char *t = config_with("", ""), err[700] = "";
    pf_config c;
    char *u = strstr(t, "gt_patch_size: 256");
    memcpy(u, "gt_patch_size: 254", 18);
    CHECK(parse(&c, t, err, sizeof err) == -1 && strstr(err, "data.train.gt_patch_size: "),
          "patch not a multiple of scale: %s", err);
    /* a kernel too big for a small patch: blur 1 of 21 on a 8-pixel patch */
    memcpy(u, "gt_patch_size: 008", 18);
    CHECK(parse(&c, t, err, sizeof err) == -1 &&
              strstr(err, "data.train.blur_kernel_size: 21 is too big for the patch"),
          "kernel too big for the patch: %s", err);
    free(t);
}

/* The keys in the wrong place: an image set, the top level, model. */
static void test_misplaced(void) {
    char err[700] = "";
    pf_config c;
    char *t = config_with("    jpeg_range: [30, 95]\n", "");
    const char *from = "    type: RealESRGANDataset\n";
    char *at = strstr(t, from), buf[2048];
    snprintf(buf, sizeof buf, "%.*s    type: PairedImageDataset\n%s", (int)(at - t), t,
             at + strlen(from));
    CHECK(parse(&c, buf, err, sizeof err) == -1 &&
              strstr(err, "data.train.jpeg_range: only allowed with type RealESRGANDataset or "
                          "RealESRGANVideoDataset (data.train.type is PairedImageDataset)"),
          "key on an image set: %s", err);
    free(t);
    t = config_with("", "resize_prob: [0.2, 0.7, 0.1]\n");
    CHECK(parse(&c, t, err, sizeof err) == -1 && strstr(err, "resize_prob: unknown key") &&
              strstr(err, "in the dataset block") && strstr(err, "'data.train.resize_prob'"),
          "top-level resize_prob: %s", err);
    free(t);
    t = config_with("", "");
    at = strstr(t, "  scale: 4\n");
    snprintf(buf, sizeof buf, "%.*s  gt_usm: true\n%s", (int)(at - t), t, at);
    CHECK(parse(&c, buf, err, sizeof err) == -1 && strstr(err, "model.gt_usm: unknown key") &&
              strstr(err, "'data.train.gt_usm'"),
          "model.gt_usm: %s", err);
    free(t);
}

/* kernel_list's choices are pf_blur_family's order (the row stores the index). */
static void test_kernel_names(void) {
    const pf_config_key *k = pf_config_key_find("data.train.kernel_list");
    CHECK(k && k->kind == PF_K_ENUM_LIST, "kernel_list is an enum list");
    if (!k)
        return;
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    int n = pf_cfg_split_choices(k->choices, store, v);
    CHECK(n == 6, "six kernel kinds, got %d", n);
    for (int i = 0; i < n; i++)
        CHECK(pf_blur_family_from_name(v[i]) == i, "%s is family %d", v[i], i);
}

int main(void) {
    test_defaults();
    test_full_block_and_round_trip();
    test_eval_set();
    test_errors();
    test_misplaced();
    test_kernel_names();
    return pf_test_end("test_config_realesrgan");
}
