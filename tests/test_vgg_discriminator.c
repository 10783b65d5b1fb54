/*  test_vgg_discriminator — BasicSR's VGGStyleDiscriminator (nn/discriminator.h) and its use
    as net_d of the GAN step (nn/gan.h), without any reference file:

    - the description for input_size 128 and 256 (num_feat 8): parameter names, order and
      shapes as BasicSR's module registers them, BatchNorm layers and their running statistics'
      size; arguments out of range refused naming them;
    - through pf_gan (ESRGANModel options, VGGStyleDiscriminator input_size 128): one logit per
      image, a 64 x 64 batch refused naming input_size, every training forward updating the
      running statistics and num_batches_tracked;
    - net_d's state_dict: torch's key order with bnX_Y.running_mean / running_var (F32 [C]) and
      num_batches_tracked (I64, 0-dim) after each bnX_Y.bias, loaded back bit for bit into a
      step of another seed; num_batches_tracked missing or stored as F32 refused by name;
    - finite differences (central, float32 forward) of RealESRGANModel's l_d_real + l_d_fake
      with respect to net_d parameters (conv0_0, a BatchNorm weight and bias, both linears)
      and of l_g_gan with respect to net_g's last bias, against the step's gradients: the
      BatchNorm layers in training mode normalise by each call's batch, so the loss is a
      function of the parameters alone and the gradient goes through the batch statistics.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "nn/discriminator.h"
#include "nn/gan.h"
#include "nn/model.h"
#include "nn/net.h"
#include "tests/pf_test.h"

enum { N = 2, GTS = 128, LQS = 64, FEAT = 8 };

/* ---- the description ------------------------------------------------------------------ */

/* BasicSR's parameter names of VGGStyleDiscriminator(3, F, size) in registration order into
   names (at most cap); returns the count. */
static int basicsr_names(int size, char (*names)[32], int cap) {
    int n = 0, levels = size == 256 ? 6 : 5;
    snprintf(names[n++], 32, "conv0_0.weight");
    snprintf(names[n++], 32, "conv0_0.bias");
    snprintf(names[n++], 32, "conv0_1.weight");
    snprintf(names[n++], 32, "bn0_1.weight");
    snprintf(names[n++], 32, "bn0_1.bias");
    for (int k = 1; k < levels && n + 6 <= cap; k++)
        for (int y = 0; y < 2; y++) {
            snprintf(names[n++], 32, "conv%d_%d.weight", k, y);
            snprintf(names[n++], 32, "bn%d_%d.weight", k, y);
            snprintf(names[n++], 32, "bn%d_%d.bias", k, y);
        }
    snprintf(names[n++], 32, "linear1.weight");
    snprintf(names[n++], 32, "linear1.bias");
    snprintf(names[n++], 32, "linear2.weight");
    snprintf(names[n++], 32, "linear2.bias");
    return n;
}

static void check_desc(int size) {
    char err[512], names[64][32];
    pf_net g;
    int rc = pf_net_build_vgg_style_discriminator(&g, 3, FEAT, size, err, sizeof err);
    CHECK(rc == 0, "input_size %d: %s", size, err);
    if (rc) return;
    int n = basicsr_names(size, names, 64), levels = size == 256 ? 6 : 5;
    CHECK(!strcmp(g.type, "VGGStyleDiscriminator") && g.scale == 1, "type %s", g.type);
    CHECK(g.n_tensors == n, "input_size %d: %d tensors, BasicSR has %d", size, g.n_tensors, n);
    for (int i = 0; i < n && i < g.n_tensors; i++)
        CHECK(!strcmp(g.tensors[i].name, names[i]), "tensor %d: %s, BasicSR's %s", i,
              g.tensors[i].name, names[i]);
    CHECK(g.n_bn == 1 + 2 * (levels - 1), "input_size %d: %d BatchNorm2d layers", size, g.n_bn);
    /* channels: F F | 2F 2F | 4F 4F | 8F 8F | 8F 8F [| 8F 8F] */
    size_t want_running = 2 * FEAT;
    for (int k = 1, c = FEAT; k < levels; k++) {
        c = k < 4 ? 2 * c : c;
        want_running += 2 * 2 * (size_t)c;
    }
    CHECK(g.n_running == want_running, "running statistics %zu floats, want %zu",
          g.n_running, want_running);
    const pf_param_info *l1 = &g.tensors[n - 4], *c11 = &g.tensors[8];
    CHECK(l1->ndim == 2 && l1->shape[0] == 100 && l1->shape[1] == FEAT * 8 * 4 * 4,
          "linear1.weight [100, %d]", FEAT * 8 * 4 * 4);
    CHECK(c11->ndim == 4 && c11->shape[0] == 2 * FEAT && c11->shape[1] == 2 * FEAT &&
          c11->shape[2] == 4 && c11->shape[3] == 4, "conv1_1.weight [2F, 2F, 4, 4]");
    CHECK(g.tensors[n - 2].shape[0] == 1 && g.tensors[n - 2].shape[1] == 100,
          "linear2.weight [1, 100]");
    pf_net_free(&g);
}

static void check_bad_args(void) {
    char err[512];
    pf_net g;
    CHECK(pf_net_build_vgg_style_discriminator(&g, 3, FEAT, 192, err, sizeof err) == -1 &&
          strstr(err, "input_size 128 or 256"), "input_size 192: %s", err);
    CHECK(pf_net_build_vgg_style_discriminator(&g, 1, FEAT, 128, err, sizeof err) == -1 &&
          strstr(err, "num_in_ch 3"), "num_in_ch 1: %s", err);
    CHECK(pf_net_build_vgg_style_discriminator(&g, 3, 0, 128, err, sizeof err) == -1 &&
          strstr(err, "num_feat"), "num_feat 0: %s", err);
}

/* ---- through the GAN step ------------------------------------------------------------- */

static pf_model *small_generator(void) {
    static pf_config cfg;
    const char *yaml = "model: {type: MSRResNet, scale: 2, n_feats: 4, n_blocks: 1, "
                       "loss: {type: L1Loss}}\n"
                       "data: {train: {gt_folder: a, gt_patch_size: 128}}\n"
                       "optimizers: {type: Adam, lr: 1.0e-4}\ntotal_iters: 2\nwork_dir: w\n";
    char err[512];
    if (pf_config_parse(&cfg, "vggd.yaml", yaml, strlen(yaml), 0, err, sizeof err) != 0) {
        CHECK(0, "config: %s", err);
        return NULL;
    }
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "MSRResNet: %s", err);
    return m;
}

static pf_gan *vgg_gan(pf_model *g, pf_gan_model_type mt, uint64_t seed) {
    pf_gan_opts o = { .model_type = mt, .net_d_iters = 1, .d_type = PF_GAN_D_VGG,
                      .d_num_in_ch = 3, .d_num_feat = FEAT, .d_input_size = GTS,
                      .conv_algorithm = "direct" };
    pf_gan_loss_default(&o.gan, PF_GAN_VANILLA);
    char err[512];
    pf_gan *s = pf_gan_new(&o, g, seed, err, sizeof err);
    CHECK(s != NULL, "pf_gan_new (VGGStyleDiscriminator): %s", err);
    return s;
}

static uint8_t lq[N * LQS * LQS * 3], gt[N * GTS * GTS * 3];

static void images(void) {
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof gt; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        gt[i] = (uint8_t)(x >> 40);
    }
    for (int i = 0; i < N; i++)     /* lq: the 2 x 2 means of gt */
        for (int y = 0; y < LQS; y++)
            for (int xx = 0; xx < LQS; xx++)
                for (int c = 0; c < 3; c++) {
                    int s = 0;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++)
                            s += gt[(((size_t)i * GTS + 2 * y + dy) * GTS + 2 * xx + dx) * 3 + c];
                    lq[(((size_t)i * LQS + y) * LQS + xx) * 3 + c] = (uint8_t)(s / 4);
                }
}

static void check_forward(pf_gan *s) {
    static float x[N * GTS * GTS * 3], out[N * GTS * GTS];
    char err[512];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = gt[i] / 255.0f;
    CHECK(pf_gan_d_forward(s, x, N, 64, 64, out, err, sizeof err) == -1 &&
          strstr(err, "input_size 128") && strstr(err, "64 x 64"), "64 x 64 refused: %s", err);
    pf_model *d = pf_gan_d_model(s);
    const pf_net *net = pf_gan_d_net(s);
    CHECK(pf_model_tracked(d)[0] == 0 && pf_model_running(d)[0] == 0.0f &&
          pf_model_running(d)[FEAT] == 1.0f, "running statistics start at 0 / 1, tracked 0");
    out[N] = 12345.0f;
    CHECK(pf_gan_d_forward(s, x, N, GTS, GTS, out, err, sizeof err) == 0, "forward: %s", err);
    CHECK(isfinite(out[0]) && isfinite(out[1]) && out[N] == 12345.0f,
          "one logit per image (%g, %g)", out[0], out[1]);
    CHECK(pf_model_running(d)[0] != 0.0f && pf_model_running(d)[FEAT] != 1.0f,
          "the training forward updated bn0_1's running statistics");
    for (int b = 0; b < net->n_bn; b++)
        CHECK(pf_model_tracked(d)[b] == 1, "bn %d num_batches_tracked %lld after one forward",
              b, (long long)pf_model_tracked(d)[b]);
}

/* net_d's state_dict: torch's order, the BN buffers, I64 num_batches_tracked; loaded strictly
   into a step of another seed. */
static void check_state_dict(pf_gan *s, pf_model *g) {
    char err[512];
    void *buf = NULL;
    size_t len = 0;
    pf_safetensors *st = NULL;
    CHECK(pf_gan_d_serialize(s, &buf, &len, err, sizeof err) == 0 &&
          pf_safetensors_parse(buf, len, "vgg_d.safetensors", &st, err, sizeof err) == 0,
          "serialise: %s", err);
    free(buf);
    if (!st) return;
    const char *order[] = { "conv0_0.weight", "conv0_0.bias", "conv0_1.weight", "bn0_1.weight",
                            "bn0_1.bias", "bn0_1.running_mean", "bn0_1.running_var",
                            "bn0_1.num_batches_tracked", "conv1_0.weight", "bn1_0.weight" };
    for (int i = 0; i < 10; i++) {
        const char *name;
        pf_safetensors_at(st, i, &name, NULL, NULL);
        CHECK(!strcmp(name, order[i]), "entry %d: %s, torch's %s", i, name, order[i]);
    }
    const pf_net *net = pf_gan_d_net(s);
    CHECK(pf_safetensors_count(st) == net->n_tensors + 3 * net->n_bn, "%d entries",
          pf_safetensors_count(st));
    int ndim = -1;
    int64_t nbt = -1, shape[4];
    CHECK(pf_safetensors_get_i64(st, "bn4_1.num_batches_tracked", &ndim, shape, &nbt, 1) == 1 &&
          ndim == 0 && nbt == pf_model_tracked(pf_gan_d_model(s))[net->n_bn - 1],
          "bn4_1.num_batches_tracked: I64, 0-dim, %lld", (long long)nbt);
    pf_gan *s2 = vgg_gan(g, PF_GAN_MODEL_ESRGAN, 99);
    CHECK(s2 && pf_gan_d_load(s2, st, err, sizeof err) == 0, "load: %s", err);
    if (s2) {
        pf_model *a = pf_gan_d_model(s), *b = pf_gan_d_model(s2);
        CHECK(!memcmp(pf_gan_d_params(s), pf_gan_d_params(s2), net->n_params * 4) &&
              !memcmp(pf_model_running(a), pf_model_running(b), net->n_running * 4) &&
              !memcmp(pf_model_tracked(a), pf_model_tracked(b), net->n_bn * sizeof(int64_t)),
              "parameters, running statistics and num_batches_tracked back bit for bit");
    }
    pf_safetensors_free(&st);
    /* bn0_1.num_batches_tracked stored as F32, then left out (the other BN counters are not
       written either: the first one the loader meets is bn0_1's) */
    pf_safetensors *full = NULL;
    buf = NULL;
    pf_gan_d_serialize(s, &buf, &len, err, sizeof err);
    pf_safetensors_parse(buf, len, "vgg_d.safetensors", &full, err, sizeof err);
    free(buf);
    static const float one = 1.0f;
    for (int as_f32 = 1; as_f32 >= 0 && s2 && full; as_f32--) {
        pf_st_tensor t[64];
        int n = 0;
        for (int i = 0; i < pf_safetensors_count(full) && n < 64; i++) {
            t[n].data = pf_safetensors_at(full, i, &t[n].name, &t[n].ndim, t[n].shape);
            if (!t[n].data && as_f32 && !strcmp(t[n].name, "bn0_1.num_batches_tracked"))
                t[n].data = &one;
            n += t[n].data != NULL;
        }
        pf_safetensors *bad = NULL;
        CHECK(pf_safetensors_serialize(t, n, NULL, 0, &buf, &len, err, sizeof err) == 0 &&
              pf_safetensors_parse(buf, len, "bad.safetensors", &bad, err, sizeof err) == 0,
              "%s", err);
        free(buf);
        CHECK(pf_gan_d_load(s2, bad, err, sizeof err) == -1 &&
              strstr(err, "bn0_1.num_batches_tracked") &&
              strstr(err, as_f32 ? "is not I64" : "is missing"), "refused: %s", err);
        pf_safetensors_free(&bad);
    }
    pf_safetensors_free(&full);
    pf_gan_free(&s2);
}

/* ---- finite differences --------------------------------------------------------------- */

/* RealESRGANModel's iteration 1 (GAN loss only, weight 1): l_d_real + l_d_fake and l_g_gan. */
static void losses(pf_gan *s, double *ld, double *lg) {
    pf_gan_losses L;
    char err[512];
    int rc = pf_gan_compute(s, 1, lq, gt, NULL, N, LQS, LQS, &L, err, sizeof err);
    CHECK(rc == 0, "step: %s", err);
    *ld = rc ? NAN : L.l_d_real + L.l_d_fake;
    *lg = rc ? NAN : L.l_g_gan;
}

/* Central differences, step 3e-4, of one loss (is_d: the discriminator's) at parameter *p
   against the step's gradient `grad`: relative to |fd| + 1e-4 within 8e-2. The step crosses
   LeakyReLU kinks among the 2 x 128 x 128 x 8 activations of each layer, and the two logits
   see all of them: the quotients move by a few percent with the step (measured, worst of the
   eleven: 3e-3 15%, 1e-3 6%, 3e-4 4%), so this is a check of the paths (a batch-statistics
   term or a layer's gradient left out is off by far more), not of the last digits; the
   torch reference (test_gan_step.torch) is. Returns the error. */
static double fd_check(pf_gan *s, float *p, double grad, int is_d, const char *what) {
    const float p0 = *p, h = 3e-4f;
    double dp, gp, dm, gm;
    *p = p0 + h;
    losses(s, &dp, &gp);
    *p = p0 - h;
    losses(s, &dm, &gm);
    *p = p0;
    double fd = is_d ? (dp - dm) / (2.0 * h) : (gp - gm) / (2.0 * h);
    double e = fabs(fd - grad) / (fabs(fd) + 1e-4);
    CHECK(e < 8e-2, "%s: step's gradient %.6g, finite differences %.6g", what, grad, fd);
    return e;
}

static void check_fd(pf_model *g) {
    pf_gan *s = vgg_gan(g, PF_GAN_MODEL_REALESRGAN, 5);
    if (!s) return;
    const pf_net *d = pf_gan_d_net(s);
    double ld, lg, ld2, lg2, worst = 0;
    losses(s, &ld2, &lg2);
    losses(s, &ld, &lg);
    CHECK(ld == ld2 && lg == lg2, "the same step twice: the same losses (the running statistics "
          "do not enter a training forward)");
    size_t nd = d->n_params, ng = pf_model_num_params(g);
    float *gd = malloc(nd * sizeof(float)), *gg = malloc(ng * sizeof(float));
    if (!gd || !gg) {
        CHECK(0, "out of memory");
        free(gd);
        free(gg);
        pf_gan_free(&s);
        return;
    }
    memcpy(gd, pf_gan_d_grads(s), nd * sizeof(float));
    memcpy(gg, pf_model_grads(g), ng * sizeof(float));
    /* tensors: conv0_0.weight [0] and .bias [1], bn0_1.weight [3] / bias [4], bn4_1.weight,
       linear1.weight, linear2.bias */
    struct { const char *name; size_t k; } at[] = {
        { "conv0_0.weight", 5 }, { "conv0_0.bias", 2 }, { "bn0_1.weight", 1 },
        { "bn0_1.bias", 3 }, { "bn4_1.weight", 7 }, { "linear1.weight", 11 },
        { "linear2.weight", 4 }, { "linear2.bias", 0 } };
    for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
        const pf_param_info *t = NULL;
        for (int i = 0; i < d->n_tensors; i++)
            if (!strcmp(d->tensors[i].name, at[a].name)) t = &d->tensors[i];
        CHECK(t != NULL, "net_d has %s", at[a].name);
        if (!t) continue;
        size_t off = t->offset + at[a].k;
        worst = fmax(worst, fd_check(s, pf_gan_d_params(s) + off, gd[off], 1, at[a].name));
    }
    int nt = pf_model_num_tensors(g);
    const pf_param_info *b = pf_model_tensor_info(g, nt - 1);
    for (int c = 0; c < 3; c++)
        worst = fmax(worst, fd_check(s, pf_model_params(g) + b->offset + c,
                                     gg[b->offset + c], 0, "net_g's last bias (l_g_gan)"));
    printf("VGGStyleDiscriminator step: gradients within %.2g of finite differences "
           "(l_d %.6f, l_g_gan %.6f)\n", worst, ld, lg);
    free(gd);
    free(gg);
    pf_gan_free(&s);
}

int main(void) {
    check_desc(128);
    check_desc(256);
    check_bad_args();
    images();
    pf_model *g = small_generator();
    pf_gan *s = g ? vgg_gan(g, PF_GAN_MODEL_ESRGAN, 1) : NULL;
    if (s) {
        check_forward(s);
        check_state_dict(s, g);
        check_fd(g);
    }
    pf_gan_free(&s);
    pf_model_destroy(&g);
    return pf_test_end("test_vgg_discriminator");
}
