/*  test_gan_step — nn/gan.h, Real-ESRGAN's training step (BasicSR's RealESRGANModel), against
    PyTorch 1.13 (tests/reference/gan_step_ref.py -> tests/data/gan_step.safetensors, float64;
    torchvision's vgg19 features and torch.nn.utils.spectral_norm are the references):
    net_g MSRResNet x2 (num_feat 8, num_block 2), net_d UNetDiscriminatorSN (num_feat 8, skip
    connections), VGG19 features to conv5_4 with Real-ESRGAN's layer weights, L1 pixel loss,
    vanilla GAN loss weight 0.1, Adam (1e-4, betas 0.9 / 0.99) on both networks and EMA 0.999
    of net_g, batch 2, LQ 16 x 16. Weights, u / v vectors and images come from the counter
    hash both sides compute (tests/pf_test_hash.h).

    Two full iterations (generator step, discriminator step, both optimisers, EMA), and after
    each: every logged term (l_g_pix, l_g_percep, l_g_gan, l_d_real, l_d_fake, out_d_real,
    out_d_fake) within 1e-5 relative of PyTorch float64; every gradient of both networks
    (summary: sum, L2 norm, 64 sampled elements, relative to the norm) within 1e-4 (or 8
    times PyTorch float32's own error where that is larger: none in the committed draw);
    every spectral-norm u within 1e-6. After both: the EMA weights, net_g's and net_d's
    weights likewise. The images are the reference's draw (metadata data_suffix) in which
    PyTorch's float32 run stays within 5e-5 of float64: in the first draws a ReLU input or an
    L1 difference sat within float32 rounding of its kink and moved whole gradient tensors
    by up to 3e-3 (gan_step_ref.py). Measured: every gradient within 7.4e-6, u within 6e-8.

    The second case, ESRGANModel (the relativistic average GAN, nn/gan.h; reference
    tests/data/gan_step_esrgan.safetensors from gan_step_ref.py --esrgan, its own draw), runs
    the same networks, options and checks with the plain gt for every loss; net_d stays
    UNetDiscriminatorSN (BasicSR's ESRGAN uses VGGStyleDiscriminator). There net_d's last bias
    gradient is a sum that cancels by construction (gan_step_ref.py E32_SKIP): PyTorch float32
    is 9% (it1) and 0.6% (it2) off float64 on it, so it is held to 8 times that. Measured:
    every other gradient within 5.6e-6, that one within 0.13 of its bound, u within 1.5e-7.
    check_esrgan_fd adds finite differences of l_g_gan, which need no reference file.

    The third case, ESRGANModel with net_d VGGStyleDiscriminator(3, num_feat 8, input_size 128)
    (tests/data/gan_step_esrgan_vgg.safetensors from gan_step_ref.py --esrgan --vgg-d; torch's
    nn.BatchNorm2d in training mode in every net_d call), LQ 64, GT 128, batch 2: every loss
    term within 1e-5 (out_d_* of max(|value|, 0.1): out_d_floor), every gradient of both
    networks as above, and after each iteration every BatchNorm running_mean / running_var
    within 1e-5 of its largest value and num_batches_tracked equal (measured: gradients within
    5.9e-6 where PyTorch float32 is within 1.25e-5, running statistics within 4.6e-7). Its
    draw is the best of three (PyTorch float32 within 2.1e-4 of float64 on the gradients:
    those tensors are held to 8 times their own error). With torch, its state_dict goes both
    ways too (the BatchNorm buffers, num_batches_tracked as I64).
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
#include "nn/optim.h"
#include "tests/pf_test.h"
#include "tests/pf_test_hash.h"
#include "tests/pf_test_ref.h"

enum { N = 2, LQ = 16, SCALE = 2, GT = LQ * SCALE, ITERS = 2 };
/* the VGGStyleDiscriminator case: GT = input_size 128 */
enum { VLQ = 64, VGT = VLQ * SCALE };

static const char *const LAYERS[] = { "conv1_2", "conv2_2", "conv3_4", "conv4_4", "conv5_4" };
static const double LAYER_W[] = { 0.1, 0.1, 1.0, 1.0, 1.0 };

/* Tensor i of a parameter table from the hash stream PREFIX + name (gan_step_ref.fill); the
   BatchNorm layers' (bnX_Y.*) keep their init. */
static void fill_table(const pf_param_info *t, int n_tensors, float *params, const char *prefix,
                       int vgg) {
    for (int i = 0; i < n_tensors; i++) {
        if (!strncmp(t[i].name, "bn", 2)) continue;
        const pf_param_info *w = t[i].ndim >= 2 ? &t[i] : &t[i - 1];   /* a bias: its weight */
        double fan = 1;     /* conv: I K K; linear: in_features */
        for (int a = 1; a < w->ndim; a++) fan *= (double)w->shape[a];
        double bound = vgg ? (t[i].ndim == 4 ? sqrt(6.0 / fan) : 0.1) : 1.0 / sqrt(fan);
        char key[160];
        snprintf(key, sizeof key, "%s%s", prefix, t[i].name);
        uint64_t base = pf_hash_name(key);
        for (size_t j = 0; j < t[i].numel; j++)
            params[t[i].offset + j] = (float)((2 * pf_hash_unit(base, j) - 1) * bound);
    }
}

/* u / v of every spectral-normalised conv: normalize(2 u - 1) of "d.NAME.weight_u|v". */
static void fill_sn(const pf_net *d, float *state) {
    for (int j = 0; j < pf_disc_sn_count(d); j++) {
        size_t off[2];
        int ci = pf_disc_sn_at(d, j, &off[0], &off[1]);
        const pf_nconv *c = &d->conv[ci];
        size_t len[2] = { (size_t)c->oc, (size_t)c->ic * c->k * c->k };
        for (int uv = 0; uv < 2; uv++) {
            char key[160];
            snprintf(key, sizeof key, "d.%s.weight_%c", c->name, uv ? 'v' : 'u');
            uint64_t base = pf_hash_name(key);
            double n2 = 0;
            float *x = state + off[uv];
            double tmp[4096];
            for (size_t i = 0; i < len[uv]; i++) {
                tmp[i] = 2 * pf_hash_unit(base, i) - 1;
                n2 += tmp[i] * tmp[i];
            }
            for (size_t i = 0; i < len[uv]; i++) x[i] = (float)(tmp[i] / sqrt(n2));
        }
    }
}

/* Image NAME + the reference's draw suffix (gan_step_ref.py: redrawn until no kink sits within
   float32 rounding of its switch point). */
static void image(const pf_safetensors *ref, const char *name, int h, uint8_t *out) {
    const char *suffix = pf_safetensors_meta(ref, "data_suffix");
    char key[64];
    snprintf(key, sizeof key, "%s%s", name, suffix ? suffix : "");
    uint64_t base = pf_hash_name(key);
    for (size_t i = 0; i < (size_t)N * h * h * 3; i++)
        out[i] = (uint8_t)floor(pf_hash_unit(base, i) * 256);
}

static pf_model *generator(void) {
    const char *text = "model:\n  type: MSRResNet\n  scale: 2\n  n_feats: 8\n  n_blocks: 2\n"
                       "  loss: {type: L1Loss}\ndata:\n  train: {gt_folder: a, gt_patch_size: 32}\n"
                       "optimizers: {type: Adam, lr: 1.0e-4}\ntotal_iters: 10\nwork_dir: w\n";
    static pf_config cfg;
    char err[512];
    CHECK(pf_config_parse(&cfg, "gan_step.yaml", text, strlen(text), 0, err, sizeof err) == 0,
          "config: %s", err);
    pf_model *g = pf_model_new(&cfg, err, sizeof err);
    CHECK(g != NULL, "MSRResNet: %s", err);
    return g;
}

/* vgg: net_d VGGStyleDiscriminator(3, 8, input_size 128), else UNetDiscriminatorSN(3, 8, skip). */
static pf_gan_opts options_d(int vgg) {
    pf_gan_opts o = { .model_type = PF_GAN_MODEL_REALESRGAN, .net_d_iters = 1,
                      .net_d_init_iters = 0, .l1_gt_usm = 1, .percep_gt_usm = 1,
                      .gan_gt_usm = 0, .use_pixel = 1, .use_percep = 1, .d_num_in_ch = 3,
                      .d_num_feat = 8, .d_skip_connection = 1,
                      .d_type = vgg ? PF_GAN_D_VGG : PF_GAN_D_UNET_SN, .d_input_size = VGT };
    o.pixel = (pf_loss){ .type = PF_LOSS_L1, .weight = 1.0f, .eps = 1e-12f };
    pf_perceptual_opts_default(&o.percep);
    for (int k = 0; k < 5; k++) {
        snprintf(o.percep.layer_weights[k].name, sizeof o.percep.layer_weights[k].name, "%s",
                 LAYERS[k]);
        o.percep.layer_weights[k].weight = LAYER_W[k];
    }
    o.percep.n_layers = 5;
    /* Direct convolution: Winograd's rounding (oneDNN's F(4x4, 3x3), AVX-512) is about 1e-6
       of a layer's largest value, enough to take a ReLU input of VGG19's conv3_x across 0 in
       this draw, and that moves net_g's gradients by up to 5e-3 (measured: the same noise on
       conv3_x's outputs in PyTorch float64 moves them as far). The kinks, not the step, are
       what differs; test_layouts holds Winograd to its tolerance. */
    o.conv_algorithm = "direct";
    pf_gan_loss_default(&o.gan, PF_GAN_VANILLA);
    o.gan.loss_weight = 0.1f;
    return o;
}

static pf_gan_opts options(void) { return options_d(0); }

static const float *ref_get(const pf_safetensors *ref, const char *key) {
    int ndim;
    int64_t shape[8];
    const float *r = pf_safetensors_get(ref, key, &ndim, shape);
    CHECK(r != NULL, "gan_step.safetensors: no %s", key);
    return r;
}

static double worst_tight, worst_loose;

/* A summarised tensor against "KEY" with the tolerance max(1e-4, 8 e32). */
static void check_summary(const pf_safetensors *ref, const char *key, const char *name,
                          const float *x, size_t n) {
    const float *r = ref_get(ref, key);
    char k32[200];
    snprintf(k32, sizeof k32, "e32.%s", key);
    const float *e32 = ref_get(ref, k32);
    if (!r || !e32) return;
    double e = pf_hash_summary_error(x, n, name, r), tol = fmax(1e-4, 8 * e32[0]);
    CHECK(e < tol, "%s: %.3g from PyTorch float64 (its float32: %.3g)", key, e, e32[0]);
    if (e32[0] * 8 <= 1e-4) worst_tight = fmax(worst_tight, e);
    else worst_loose = fmax(worst_loose, e / tol);
}

/* The VGGStyleDiscriminator case's out_d_real / out_d_fake are means of two logits of
   opposite signs (it1 out_d_real 0.014 of logits about 0.4): they are held to 1e-5 of
   max(|value|, out_d_floor), 0.1 there (measured 2.3e-7 absolute, 1.6e-5 of the value, where
   PyTorch float32 happens to be 5.8e-7 of it); 0 (plain relative) in the other cases. */
static double out_d_floor;

static void check_losses(const pf_safetensors *ref, int it, const pf_gan_losses *L) {
    const char *names[] = { "l_g_pix", "l_g_percep", "l_g_gan", "l_d_real", "l_d_fake",
                            "out_d_real", "out_d_fake" };
    double got[] = { L->l_g_pix, L->l_g_percep, L->l_g_gan, L->l_d_real, L->l_d_fake,
                     L->out_d_real, L->out_d_fake };
    CHECK(L->g_step == 1, "it%d: the generator step ran", it);
    CHECK(isnan(L->l_g_style), "it%d: no style term (style_weight 0)", it);
    for (int i = 0; i < 7; i++) {
        char key[64];
        snprintf(key, sizeof key, "it%d.%s", it, names[i]);
        const float *r = ref_get(ref, key);
        if (!r) continue;
        double e = fabs(got[i] - r[0]) / fmax(fabs(r[0]), i >= 5 ? fmax(out_d_floor, 1e-12)
                                                                  : 1e-12);
        CHECK(e < 1e-5, "%s: %.9g, PyTorch %.9g (%.2g relative)", key, got[i], r[0], e);
    }
    printf("it%d: l_g_pix %.6f l_g_percep %.6f l_g_gan %.6f l_d_real %.6f l_d_fake %.6f "
           "out_d_real %.5f out_d_fake %.5f\n", it, L->l_g_pix, L->l_g_percep, L->l_g_gan,
           L->l_d_real, L->l_d_fake, L->out_d_real, L->out_d_fake);
}

/* VGGStyleDiscriminator: each bnX_Y's running_mean and running_var against "itK.rs.NAME"
   within 1e-5 of the tensor's largest value, num_batches_tracked equal to "itK.nbt.NAME". */
static void check_running(const pf_safetensors *ref, int it, pf_gan *s) {
    const pf_net *d = pf_gan_d_net(s);
    pf_model *m = pf_gan_d_model(s);
    double worst = 0;
    for (int i = 0; i < d->n_node; i++) {
        const pf_gnode *nd = &d->node[i];
        if (nd->op != PF_G_BATCHNORM) continue;
        const char *bias = d->tensors[nd->param + 1].name;     /* bnX_Y.bias */
        int base = (int)(strrchr(bias, '.') - bias);
        int64_t c = d->tensors[nd->param].shape[0];
        char key[160];
        for (int b = 0; b < 2; b++) {
            snprintf(key, sizeof key, "it%d.rs.%.*s.%s", it, base, bias,
                     b ? "running_var" : "running_mean");
            const float *r = ref_get(ref, key), *x = pf_model_running(m) + nd->stat + b * c;
            double mx = 1e-12, e = 0;
            for (int64_t k = 0; r && k < c; k++) {
                mx = fmax(mx, fabs(r[k]));
                e = fmax(e, fabs(x[k] - r[k]));
            }
            worst = fmax(worst, e / mx);
        }
        snprintf(key, sizeof key, "it%d.nbt.%.*s.num_batches_tracked", it, base, bias);
        const float *r = ref_get(ref, key);
        CHECK(r && pf_model_tracked(m)[nd->bn] == (int64_t)r[0], "%s: %lld, torch %g", key,
              (long long)pf_model_tracked(m)[nd->bn], r ? r[0] : -1.0);
    }
    CHECK(worst < 1e-5, "it%d: running statistics %.3g from PyTorch's", it, worst);
    printf("it%d: BatchNorm running statistics within %.2g of PyTorch float64\n", it, worst);
}

static void check_grads(const pf_safetensors *ref, int it, pf_model *g, pf_gan *s) {
    char key[200];
    const float *gg = pf_model_grads(g), *gd = pf_gan_d_grads(s);
    for (int i = 0; i < pf_model_num_tensors(g); i++) {
        const pf_param_info *t = pf_model_tensor_info(g, i);
        snprintf(key, sizeof key, "it%d.gg.%s", it, t->name);
        check_summary(ref, key, t->name, gg + t->offset, t->numel);
    }
    const pf_net *d = pf_gan_d_net(s);
    for (int i = 0; i < d->n_tensors; i++) {
        const pf_param_info *t = &d->tensors[i];
        snprintf(key, sizeof key, "it%d.gd.%s", it, t->name);
        check_summary(ref, key, t->name, gd + t->offset, t->numel);
    }
    double worst_u = 0;
    for (int j = 0; j < pf_disc_sn_count(d); j++) {
        size_t uo, vo;
        const pf_nconv *c = &d->conv[pf_disc_sn_at(d, j, &uo, &vo)];
        snprintf(key, sizeof key, "it%d.u.%s.weight_u", it, c->name);
        const float *r = ref_get(ref, key);
        for (int i = 0; r && i < c->oc; i++)
            worst_u = fmax(worst_u, fabs(pf_gan_d_sn_state(s)[uo + (size_t)i] - r[i]));
    }
    if (d->n_bn) {
        check_running(ref, it, s);
        return;
    }
    CHECK(worst_u < 1e-6, "it%d: spectral-norm u %.3g from PyTorch's", it, worst_u);
    printf("it%d: spectral-norm u within %.2g of PyTorch float64\n", it, worst_u);
}

static void check_weights(const pf_safetensors *ref, pf_model *g, const pf_optim *og,
                          pf_gan *s) {
    char key[200];
    for (int i = 0; i < pf_model_num_tensors(g); i++) {
        const pf_param_info *t = pf_model_tensor_info(g, i);
        snprintf(key, sizeof key, "ema.%s", t->name);
        check_summary(ref, key, t->name, og->ema + t->offset, t->numel);
        snprintf(key, sizeof key, "g.%s", t->name);
        check_summary(ref, key, t->name, pf_model_params(g) + t->offset, t->numel);
    }
    const pf_net *d = pf_gan_d_net(s);
    for (int i = 0; i < d->n_tensors; i++) {
        snprintf(key, sizeof key, "d.%s", d->tensors[i].name);
        check_summary(ref, key, d->tensors[i].name,
                      pf_gan_d_params(s) + d->tensors[i].offset, d->tensors[i].numel);
    }
}

/* net_d's state_dict: pf_gan_d_serialize, parsed, pf_gan_d_load into a second step (another
   seed) bit for bit; refused by a step whose net_d has another num_feat, naming a tensor. */
static pf_gan *check_state_dict(pf_gan *s, pf_model *g, void **file, size_t *len) {
    char err[1024];
    pf_gan_opts o = options();
    pf_gan *s2 = pf_gan_new(&o, g, 7, err, sizeof err);
    pf_safetensors *st = NULL;
    int ok = s2 && pf_gan_d_serialize(s, file, len, err, sizeof err) == 0 &&
             pf_safetensors_parse(*file, *len, "net_d.safetensors", &st, err, sizeof err) == 0;
    CHECK(ok, "net_d state_dict: %s", err);
    if (!ok) return s2;
    CHECK(pf_gan_d_load(s2, st, err, sizeof err) == 0, "pf_gan_d_load: %s", err);
    CHECK(!memcmp(pf_gan_d_params(s2), pf_gan_d_params(s), pf_gan_d_num_params(s) * 4) &&
          !memcmp(pf_gan_d_sn_state(s2), pf_gan_d_sn_state(s), pf_gan_d_sn_numel(s) * 4),
          "net_d's weights and u / v back bit for bit");
    o.d_num_feat = 16;
    pf_gan *s16 = pf_gan_new(&o, g, 0, err, sizeof err);
    CHECK(s16 && pf_gan_d_load(s16, st, err, sizeof err) == -1 &&
          strstr(err, "net_d.safetensors") && strstr(err, "conv0.weight has another shape"),
          "num_feat 16 refuses the num_feat 8 file: %s", err);
    pf_gan_free(&s16);
    pf_safetensors_free(&st);
    return s2;
}

/* Largest difference of net_d's u / v (s) from torch's file st; 0 without spectral norm. */
static double uv_worst(const pf_safetensors *st, pf_gan *s) {
    const pf_net *d = pf_gan_d_net(s);
    double worst = 0;
    for (int j = 0; j < pf_disc_sn_count(d); j++) {
        size_t off[2];
        const pf_nconv *c = &d->conv[pf_disc_sn_at(d, j, &off[0], &off[1])];
        size_t l[2] = { (size_t)c->oc, (size_t)c->ic * c->k * c->k };
        for (int uv = 0; uv < 2; uv++) {
            char name[128];
            snprintf(name, sizeof name, "%s.weight_%c", c->name, uv ? 'v' : 'u');
            const float *t = pf_safetensors_get(st, name, NULL, NULL);
            CHECK(t != NULL, "torch_d.safetensors: %s", name);
            for (size_t k = 0; t && k < l[uv]; k++)
                worst = fmax(worst, fabs(t[k] - pf_gan_d_sn_state(s)[off[uv] + k]));
        }
    }
    return worst;
}

/* Largest relative difference of net_d's BatchNorm running statistics between s and t (torch's
   loaded), num_batches_tracked checked equal; 0 without BatchNorm. */
static double running_worst(pf_gan *s, pf_gan *t) {
    const pf_net *d = pf_gan_d_net(s);
    const float *a = pf_model_running(pf_gan_d_model(s)), *b = pf_model_running(pf_gan_d_model(t));
    double worst = 0;
    for (size_t k = 0; k < d->n_running; k++)
        worst = fmax(worst, fabs(a[k] - b[k]) / fmax(fabs(b[k]), 1e-3));
    CHECK(!memcmp(pf_model_tracked(pf_gan_d_model(s)), pf_model_tracked(pf_gan_d_model(t)),
                  (size_t)d->n_bn * sizeof(int64_t)), "num_batches_tracked = torch's");
    return worst;
}

/* torch: PixFlow's net_d file loads with load_state_dict(strict=True) in torch's key order
   (tests/reference/gan_d_roundtrip.py); torch's state_dict after one training forward loads
   back strictly, and equals PixFlow's after the same forward: weights bit for bit, u / v
   within 1e-6, running statistics within 1e-5 relative (measured 3.2e-6: both float32) and
   num_batches_tracked equal
   (VGGStyleDiscriminator, I64 both ways), the outputs within 1e-5. */
static void check_torch(pf_gan *s, pf_model *g, const void *file, size_t len,
                        const pf_safetensors *ref, int vgg) {
    char dir[] = "/tmp/pf_gan_d_XXXXXX", path[1100], err[1024];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    const int gts = vgg ? VGT : GT, np = vgg ? N : N * GT * GT;
    static uint8_t x8[N * VGT * VGT * 3];
    static float x[N * VGT * VGT * 3], xc[N * VGT * VGT * 3], out[N * GT * GT], tout[N * GT * GT];
    image(ref, "gan.gt", gts, x8);
    for (int i = 0; i < N; i++)
        for (int p = 0; p < gts * gts; p++)
            for (int c = 0; c < 3; c++) {
                x[(i * gts * gts + p) * 3 + c] = x8[(i * gts * gts + p) * 3 + c] / 255.0f;
                xc[(i * 3 + c) * gts * gts + p] = x8[(i * gts * gts + p) * 3 + c] / 255.0f;
            }
    pf_ref_write_file(dir, "net_d.safetensors", file, len);
    pf_ref_write_file(dir, "x.f32", xc, sizeof(float) * (size_t)N * 3 * gts * gts);
    pf_ref_exec("gan_d_roundtrip.py", dir);
    CHECK(pf_gan_d_forward(s, x, N, gts, gts, out, err, sizeof err) == 0, "forward: %s", err);
    snprintf(path, sizeof path, "%s/out.f32", dir);
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(tout, sizeof(float) * (size_t)np, 1, f) == 1, "read %s", path);
    if (f) fclose(f);
    double e = pf_ref_rel_err(out, tout, (size_t)np);
    CHECK(e < 1e-5, "net_d's output %.3g from torch's", e);
    snprintf(path, sizeof path, "%s/torch_d.safetensors", dir);
    pf_safetensors *st = NULL;
    pf_gan_opts o = options_d(vgg);
    pf_gan *s2 = pf_gan_new(&o, g, 0, err, sizeof err);
    CHECK(pf_safetensors_load(path, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st && s2 && pf_gan_d_load(s2, st, err, sizeof err) == 0,
          "torch's state_dict loads strictly: %s", err);
    double worst_rs = st && s2 ? running_worst(s, s2) : 0;
    pf_gan_free(&s2);
    if (st) {
        const pf_net *d = pf_gan_d_net(s);
        int same = 1;
        for (int i = 0; i < d->n_tensors; i++) {
            const float *t = pf_safetensors_get(st, d->tensors[i].name, NULL, NULL);
            same &= t && !memcmp(t, pf_gan_d_params(s) + d->tensors[i].offset,
                                 d->tensors[i].numel * 4);
        }
        double worst = uv_worst(st, s);
        CHECK(same, "torch's weights = PixFlow's bit for bit");
        CHECK(worst < 1e-6, "u / v after one forward: %.3g from torch's", worst);
        CHECK(worst_rs < 1e-5, "running statistics after one forward: %.3g from torch's",
              worst_rs);
        printf("net_d state_dict: torch loads PixFlow's strictly; after one training forward "
               "output within %.2g, u / v within %.2g, running statistics within %.2g of "
               "torch's\n", e, worst, worst_rs);
    }
    pf_safetensors_free(&st);
    pf_ref_remove(dir);
}

/* ESRGANModel's l_g_gan (loss_weight 1, no pixel or perceptual loss) at iteration 1 with
   the spectral norm's u / v reset before each call, so every call sees the same net_d. */
static double esrgan_gan_loss(pf_gan *s, const float *sn0, const uint8_t *lq, const uint8_t *gt,
                              pf_gan_losses *L) {
    char err[512];
    memcpy(pf_gan_d_sn_state(s), sn0, pf_gan_d_sn_numel(s) * sizeof(float));
    int rc = pf_gan_compute(s, 1, lq, gt, NULL, N, LQ, LQ, L, err, sizeof err);
    CHECK(rc == 0, "ESRGANModel: %s", err);
    return rc ? NAN : L->l_g_gan;
}

/* Finite differences, no reference file: d l_g_gan / d net_g's last conv (its 3 biases and
   3 weights), central, step 1e-2, against the step's gradient within 5e-2 relative to the
   difference quotient plus 5e-5 (measured: within 1e-2, the step's curvature and float32
   forward noise; step 3e-3 gives 1.4e-2). The relativistic term reaches the output through
   mean(fake_g_pred) about as much as through fake_g_pred itself: leaving that path out
   halves these derivatives (measured: the six off by 41 to 51%). */
static void check_esrgan_fd(const pf_safetensors *ref) {
    char err[512];
    pf_model *g = generator();
    pf_gan_opts o = options();
    o.model_type = PF_GAN_MODEL_ESRGAN;
    o.use_pixel = o.use_percep = 0;
    o.gan.loss_weight = 1.0f;
    pf_gan *s = g ? pf_gan_new(&o, g, 0, err, sizeof err) : NULL;
    CHECK(s != NULL, "ESRGANModel: %s", err);
    if (!s) {
        pf_model_destroy(&g);
        return;
    }
    fill_table(pf_model_net(g)->tensors, pf_model_net(g)->n_tensors, pf_model_params(g), "g.", 0);
    const pf_net *d = pf_gan_d_net(s);
    fill_table(d->tensors, d->n_tensors, pf_gan_d_params(s), "d.", 0);
    fill_sn(d, pf_gan_d_sn_state(s));
    static float sn0[8192], grad[8];
    CHECK(pf_gan_d_sn_numel(s) <= 8192, "u / v fit");
    memcpy(sn0, pf_gan_d_sn_state(s), pf_gan_d_sn_numel(s) * sizeof(float));
    static uint8_t lq[N * LQ * LQ * 3], gt[N * GT * GT * 3];
    image(ref, "gan.lq", LQ, lq);
    image(ref, "gan.gt", GT, gt);
    pf_gan_losses L;
    esrgan_gan_loss(s, sn0, lq, gt, &L);
    int nt = pf_model_num_tensors(g);
    const pf_param_info *b = pf_model_tensor_info(g, nt - 1), *w = pf_model_tensor_info(g, nt - 2);
    size_t at[6] = { b->offset, b->offset + 1, b->offset + 2, w->offset, w->offset + 7,
                     w->offset + w->numel - 1 };
    for (int k = 0; k < 6; k++) grad[k] = pf_model_grads(g)[at[k]];
    double worst = 0;
    for (int k = 0; k < 6; k++) {
        float *p = pf_model_params(g) + at[k], p0 = *p, h = 1e-2f;
        *p = p0 + h;
        double lp = esrgan_gan_loss(s, sn0, lq, gt, &L);
        *p = p0 - h;
        double lm = esrgan_gan_loss(s, sn0, lq, gt, &L);
        *p = p0;
        double fd = (lp - lm) / (2.0 * h), e = fabs(fd - grad[k]) / (fabs(fd) + 5e-5);
        CHECK(e < 5e-2, "ESRGANModel d l_g_gan / d param %zu: %.6g, finite differences %.6g",
              at[k], grad[k], fd);
        worst = fmax(worst, e);
    }
    printf("ESRGANModel l_g_gan: net_g's gradient within %.2g of finite differences\n", worst);
    pf_gan_free(&s);
    pf_model_destroy(&g);
}

/* One case: the reference file FILE (tests/data/), model_type mt, net_d VGGStyleDiscriminator
   when vgg (LQ 64, GT 128); the state_dict checks with the first case (state_dict set). */
static void run_case(const char *file, pf_gan_model_type mt, int state_dict, int torch,
                     int vgg) {
    char path[1024], err[1024];
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/%s", src ? src : ".", file);
    pf_safetensors *ref = NULL;
    CHECK(pf_safetensors_load(path, &ref, err, sizeof err) == 0, "%s: %s", path, err);
    pf_model *g = ref ? generator() : NULL;
    pf_gan_opts o = options_d(vgg);
    o.model_type = mt;
    const int lqs = vgg ? VLQ : LQ, gts = vgg ? VGT : GT;
    out_d_floor = vgg ? 0.1 : 0;
    pf_gan *s = g ? pf_gan_new(&o, g, 0, err, sizeof err) : NULL;
    CHECK(!g || s != NULL, "pf_gan_new: %s", err);
    if (!s) {
        pf_model_destroy(&g);
        pf_safetensors_free(&ref);
        return;
    }
    printf("%s (%s):\n", file, mt == PF_GAN_MODEL_ESRGAN ? "ESRGANModel" : "RealESRGANModel");
    fill_table(pf_model_net(g)->tensors, pf_model_net(g)->n_tensors, pf_model_params(g), "g.", 0);
    const pf_net *d = pf_gan_d_net(s);
    fill_table(d->tensors, d->n_tensors, pf_gan_d_params(s), "d.", 0);
    fill_sn(d, pf_gan_d_sn_state(s));
    const pf_net *v = pf_model_net(pf_gan_vgg(s));
    fill_table(v->tensors, v->n_tensors, pf_model_params(pf_gan_vgg(s)), "vgg.", 1);
    pf_optim og, od;
    pf_optim_settings adam = { .kind = PF_OPTIM_ADAM, .beta1 = 0.9f, .beta2 = 0.99f,
                               .eps = 1e-8f };
    CHECK(pf_optim_init(&og, pf_model_num_params(g), &adam) == 0 &&
          pf_optim_init(&od, pf_gan_d_num_params(s), &adam) == 0 &&
          pf_optim_ema_init(&og, 0.999f, pf_model_params(g)) == 0, "optimisers");
    static uint8_t lq[N * VLQ * VLQ * 3], gt[N * VGT * VGT * 3], usm[N * VGT * VGT * 3];
    image(ref, "gan.lq", lqs, lq);
    image(ref, "gan.gt", gts, gt);
    image(ref, "gan.gt_usm", gts, usm);
    worst_tight = worst_loose = 0;
    for (int it = 1; it <= ITERS; it++) {
        pf_gan_losses L;
        int rc = pf_gan_compute(s, it, lq, gt, usm, N, lqs, lqs, &L, err, sizeof err);
        CHECK(rc == 0, "iteration %d: %s", it, err);
        if (rc) break;
        check_losses(ref, it, &L);
        check_grads(ref, it, g, s);
        pf_optim_step(&og, pf_model_params(g), pf_model_grads(g), 1e-4f);
        pf_optim_step(&od, pf_gan_d_params(s), pf_gan_d_grads(s), 1e-4f);
    }
    check_weights(ref, g, &og, s);
    void *buf = NULL;
    size_t len = 0;
    pf_gan *s2 = state_dict ? check_state_dict(s, g, &buf, &len) : NULL;
    if (vgg && torch && pf_gan_d_serialize(s, &buf, &len, err, sizeof err) != 0)
        CHECK(0, "VGGStyleDiscriminator state_dict: %s", err);
    if (torch && buf) check_torch(s, g, buf, len, ref, vgg);
    free(buf);
    pf_gan_free(&s2);
    printf("gradients and weights: within %.2g where PyTorch float32 is within 1.25e-5 of "
           "float64; elsewhere at most %.2f of the bound 8 x its error\n", worst_tight,
           worst_loose);
    pf_optim_free(&og);
    pf_optim_free(&od);
    pf_gan_free(&s);
    pf_model_destroy(&g);
    pf_safetensors_free(&ref);
}

int main(int argc, char **argv) {
    int torch = argc > 1 && !strcmp(argv[1], "torch");
    if (torch && !pf_ref_have("test_gan_step torch", "numpy, torch, torchvision")) return 77;
    run_case("gan_step.safetensors", PF_GAN_MODEL_REALESRGAN, 1, torch, 0);
    run_case("gan_step_esrgan.safetensors", PF_GAN_MODEL_ESRGAN, 0, torch, 0);
    run_case("gan_step_esrgan_vgg.safetensors", PF_GAN_MODEL_ESRGAN, 0, torch, 1);
    pf_safetensors *ref = NULL;
    char path[1024], err[512];
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/gan_step.safetensors", src ? src : ".");
    if (pf_safetensors_load(path, &ref, err, sizeof err) == 0) check_esrgan_fd(ref);
    pf_safetensors_free(&ref);
    return pf_test_end("test_gan_step");
}
