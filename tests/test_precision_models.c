/*  test_precision_models — train_cfg.precision / test_cfg.precision from a config file to the
    models that run them (issue 43), read back through pf_model_precision_report.

    test_precision_models (a CPU with a bf16 unit; else 77, "no bf16 unit"):
    - pf_model_new: train_cfg bf16 puts the training plan on bf16 and leaves inference fp32,
      test_cfg bf16 the other way round; pf_model_new_infer keeps a bf16 training config's
      training plan fp32.
    - a GAN job (RealESRGANModel, UNetDiscriminatorSN, a perceptual loss): pf_state_gan_opts
      carries train_cfg.precision to pf_gan_new, whose net_d and VGG then run bf16 in both
      plans; after one pf_gan_compute net_g's and net_d's training convolutions are set up
      in bf16. With train_cfg fp32 they stay fp32.
    test_precision_models.no_bf16_unit (ONEDNN_MAX_CPU_ISA=AVX512_CORE; it checks the cap took):
    - pf_model_new refuses train_cfg bf16 and test_cfg bf16, each message naming its key;
      pf_model_new_infer builds a train_cfg bf16 / test_cfg fp32 model; pf_gan_new refuses
      bf16 naming train_cfg.precision and builds fp32.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/gan.h"
#include "nn/model.h"
#include "pf_test.h"
#include "worker/gan_state.h"

/* An MSRResNet x2 job (4 features, 1 block; GT patches of 32) with a GAN section and
   `precision` (the train_cfg / test_cfg lines) into *c. 0, or -1 after a failed CHECK. */
static int config(pf_config *c, const char *precision) {
    char yaml[2048], err[512];
    snprintf(yaml, sizeof yaml,
             "model: {type: MSRResNet, scale: 2, n_feats: 4, n_blocks: 1, loss: {type: L1Loss}}\n"
             "data: {train: {gt_folder: g, gt_patch_size: 32}}\n"
             "optimizers: {type: Adam, lr: 1.0e-4}\n"
             "gan:\n"
             "  model_type: RealESRGANModel\n"
             "  network_d: {type: UNetDiscriminatorSN, num_feat: 8}\n"
             "  gan_opt: {gan_type: vanilla}\n"
             "  optim_d: {lr: 1.0e-4}\n"
             "total_iters: 2\nwork_dir: w\nconv_algorithm: direct\n%s",
             precision);
    int rc = pf_config_parse(c, "p.yaml", yaml, strlen(yaml), 0, err, sizeof err);
    CHECK(rc == 0, "config '%s': %s", precision, err);
    return rc;
}

/* The GAN step's options from *c (pf_state_gan_opts, as the worker makes them), with a
   perceptual loss on VGG19's conv1_2 and relu2_1 (weights left at their init). */
static int gan_options(const pf_config *c, pf_gan_opts *o) {
    char err[512];
    int rc = pf_state_gan_opts(c, o, err, sizeof err);
    CHECK(rc == 0, "pf_state_gan_opts: %s", err);
    o->use_percep = 1;
    pf_perceptual_opts_default(&o->percep);
    CHECK(pf_perceptual_opts_set(&o->percep, "layer_weights.conv1_2", "1", err, sizeof err) == 0 &&
              pf_perceptual_opts_set(&o->percep, "layer_weights.relu2_1", "0.5", err,
                                     sizeof err) == 0,
          "perceptual layers: %s", err);
    o->vgg_weights = NULL;
    return rc;
}

/* pf_model_precision_report of m starts with `want`. */
static void check_report(pf_model *m, const char *want, const char *what) {
    char buf[1024];
    pf_model_precision_report(m, buf, sizeof buf);
    CHECK(!strncmp(buf, want, strlen(want)), "%s: report '%s', want '%s...'", what, buf, want);
}

/* After a step, the report says the training plan's convolutions are set up in bf16:
   "train bf16 on <unit>: N convolutions <oneDNN kernels>", N > 0. (The kernels' names do not
   always say their data type: oneDNN's gemm-based bf16 convolution is "gemm:jit" as its f32
   one; test_conv_bf16 checks what they compute.) */
static void check_built_bf16(pf_model *m, const char *unit, const char *what) {
    char buf[1024], want[128];
    pf_model_precision_report(m, buf, sizeof buf);
    snprintf(want, sizeof want, "train bf16 on %s: ", unit);
    int n = !strncmp(buf, want, strlen(want)) ? atoi(buf + strlen(want)) : 0;
    CHECK(n > 0 && strstr(buf, " convolutions "), "%s: report '%s', want '%sN convolutions'",
          what, buf, want);
}

static void with_bf16_unit(const char *unit) {
    static pf_config c;
    char err[512], want[128];
    if (config(&c, "train_cfg: {precision: bf16}\n")) return;
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "pf_model_new, train bf16: %s", err);
    snprintf(want, sizeof want, "train bf16 on %s; eval fp32", unit);
    if (m) check_report(m, want, "pf_model_new, train_cfg bf16");
    pf_model *inf = pf_model_new_infer(&c, err, sizeof err);
    CHECK(inf != NULL, "pf_model_new_infer, train bf16: %s", err);
    if (inf) check_report(inf, "train fp32; eval fp32", "pf_model_new_infer, train_cfg bf16");
    pf_model_destroy(&inf);

    /* the GAN step: net_d and the VGG follow train_cfg.precision */
    pf_gan_opts o;
    if (m && gan_options(&c, &o) == 0) {
        CHECK(o.precision == 1, "pf_state_gan_opts: precision %d, want 1 (bf16)", o.precision);
        pf_model_init(m, 3);
        pf_gan *s = pf_gan_new(&o, m, 5, err, sizeof err);
        CHECK(s != NULL, "pf_gan_new bf16: %s", err);
        if (s) {
            snprintf(want, sizeof want, "train bf16 on %s; eval bf16 on %s", unit, unit);
            check_report(pf_gan_d_model(s), want, "net_d");
            check_report(pf_gan_vgg(s), want, "vgg");
            enum { N = 1, LQ = 16, GT = 32 };
            static uint8_t lq[N * LQ * LQ * 3], gt[N * GT * GT * 3];
            for (size_t i = 0; i < sizeof gt; i++) gt[i] = (uint8_t)(i * 37 + (i >> 5));
            for (size_t i = 0; i < sizeof lq; i++) lq[i] = (uint8_t)(i * 11 + 3);
            pf_gan_losses L;
            int rc = pf_gan_compute(s, 1, lq, gt, gt, N, LQ, LQ, &L, err, sizeof err);
            CHECK(rc == 0, "pf_gan_compute: %s", err);
            if (rc == 0) {
                check_built_bf16(pf_gan_d_model(s), unit, "net_d after a step");
                check_built_bf16(m, unit, "net_g after a step");
            }
        }
        pf_gan_free(&s);
    }
    pf_model_destroy(&m);

    if (config(&c, "test_cfg: {precision: bf16}\n")) return;
    m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "pf_model_new, test bf16: %s", err);
    snprintf(want, sizeof want, "train fp32; eval bf16 on %s", unit);
    if (m && gan_options(&c, &o) == 0) {
        check_report(m, want, "pf_model_new, test_cfg bf16");
        CHECK(o.precision == 0, "pf_state_gan_opts: precision %d with train_cfg fp32",
              o.precision);
        pf_gan *s = pf_gan_new(&o, m, 5, err, sizeof err);
        CHECK(s != NULL, "pf_gan_new fp32: %s", err);
        if (s) check_report(pf_gan_d_model(s), "train fp32; eval fp32", "net_d, train_cfg fp32");
        pf_gan_free(&s);
    }
    pf_model_destroy(&m);
}

/* `err` begins with "<key>: bf16 needs a CPU with AVX512_BF16 or AMX". */
static void check_refusal(const char *err, const char *key, const char *what) {
    char want[128];
    snprintf(want, sizeof want, "%s: bf16 needs a CPU with AVX512_BF16 or AMX", key);
    CHECK(!strncmp(err, want, strlen(want)), "%s: '%s', want '%s...'", what, err, want);
}

static void without_bf16_unit(void) {
    static pf_config c;
    char err[512] = "";
    if (config(&c, "train_cfg: {precision: bf16}\n")) return;
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m == NULL, "pf_model_new accepted train_cfg bf16 without a bf16 unit");
    check_refusal(err, "train_cfg.precision", "pf_model_new, train_cfg bf16");
    pf_model_destroy(&m);
    m = pf_model_new_infer(&c, err, sizeof err);
    CHECK(m != NULL, "pf_model_new_infer, train_cfg bf16 / test_cfg fp32: %s", err);
    if (m) check_report(m, "train fp32; eval fp32", "pf_model_new_infer");
    pf_gan_opts o;
    if (m && gan_options(&c, &o) == 0) {
        err[0] = '\0';
        pf_gan *s = pf_gan_new(&o, m, 5, err, sizeof err);
        CHECK(s == NULL, "pf_gan_new accepted bf16 without a bf16 unit");
        check_refusal(err, "train_cfg.precision", "pf_gan_new bf16");
        pf_gan_free(&s);
        o.precision = 0;
        s = pf_gan_new(&o, m, 5, err, sizeof err);
        CHECK(s != NULL, "pf_gan_new fp32: %s", err);
        pf_gan_free(&s);
    }
    pf_model_destroy(&m);
    if (config(&c, "test_cfg: {precision: bf16}\n")) return;
    err[0] = '\0';
    m = pf_model_new(&c, err, sizeof err);
    CHECK(m == NULL, "pf_model_new accepted test_cfg bf16 without a bf16 unit");
    check_refusal(err, "test_cfg.precision", "pf_model_new, test_cfg bf16");
    pf_model_destroy(&m);
    m = pf_model_new_infer(&c, err, sizeof err);
    CHECK(m == NULL, "pf_model_new_infer accepted test_cfg bf16 without a bf16 unit");
    check_refusal(err, "test_cfg.precision", "pf_model_new_infer, test_cfg bf16");
    pf_model_destroy(&m);
}

int main(int argc, char **argv) {
    int capped = argc > 1 && !strcmp(argv[1], "no_bf16_unit");
    char isa[32];
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    if (capped) {
        CHECK(unit == NULL, "oneDNN still has %s: run with ONEDNN_MAX_CPU_ISA=AVX512_CORE",
              unit ? unit : "");
        if (!unit) without_bf16_unit();
        return pf_test_end("test_precision_models no_bf16_unit");
    }
    if (!unit) {
        printf("test_precision_models: no bf16 unit (oneDNN's ISA here is %s): skipped\n", isa);
        return 77;
    }
    with_bf16_unit(unit);
    return pf_test_end("test_precision_models");
}
