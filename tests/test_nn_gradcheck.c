/*  test_nn_gradcheck — finite-difference checks of whole small models: for EDSR (x2 with
    res_scale 0.5, x3, x4) and SRCNN, the analytic gradient pf_model_train_step returns must,
    for every weight and bias tensor, give the directional derivative along a random +-1
    direction v that the central difference (L(p + e v) - L(p - e v)) / 2e measures. Smooth losses (MSE, Charbonnier) so the
    difference quotient is meaningful. The perturbed losses are evaluated in double from the
    inference outputs.

    Finite differences of float ReLU networks are only as good as the kinks allow: a
    perturbation that moves a pre-activation across 0 makes the quotient wrong, and with a few
    hundred random pre-activations that happens often enough that larger configurations
    (2 blocks, 6 x 5 inputs) show 10-50 % disagreements on some conv1 tensors whatever e is.
    The configurations below are small enough to be kink-free at e = 3e-4 (agreement ~0.5 %),
    so the 2 % tolerance here catches wrong terms, signs and factors; element-exact agreement
    on larger nets is test_nn_torch_parity's job. */
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "nn/model.h"
#include "tests/pf_test.h"

static void base_cfg(pf_config *c, const char *type, int scale, const char *loss) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, type);
    c->scale = scale;
    c->in_channels = c->out_channels = 3;
    c->n_feats = 8;
    c->n_blocks = 2;
    c->res_scale = 1.0f;
    c->rgb_mean[0] = 0.4488f;
    c->rgb_mean[1] = 0.4371f;
    c->rgb_mean[2] = 0.4040f;
    c->img_range = 1.0f; /* activations O(1), so float rounding stays far below the signal;
                            img_range 255 is covered by the PyTorch parity test */
    int ch[4] = { 3, 8, 4, 3 }, k[3] = { 9, 1, 5 };
    memcpy(c->srcnn_channels, ch, sizeof ch);
    memcpy(c->srcnn_kernel_sizes, k, sizeof k);
    strcpy(c->loss_type, loss);
    c->loss_weight = 1.0f;
    c->charbonnier_eps = 1e-6f;
}

/* The loss in double precision from the inference outputs (a float loss would quantise the
   difference quotient), with the same formula as the training loss. */
static double loss_double(pf_model *m, const pf_config *cfg, const uint8_t *lq,
                          const uint8_t *gt, int n, int h, int w) {
    int s = pf_model_scale(m);
    size_t per = (size_t)h * s * w * s * 3;
    float *out = malloc(per * sizeof(float));
    char err[512];
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        if (pf_model_infer(m, lq + (size_t)i * h * w * 3, h, w, out, err, sizeof err))
            fprintf(stderr, "infer: %s\n", err);
        for (size_t j = 0; j < per; j++) {
            double d = (double)out[j] - gt[(size_t)i * per + j] / 255.0;
            sum += strcmp(cfg->loss_type, "MSELoss") ? sqrt(d * d + cfg->charbonnier_eps)
                                                     : d * d;
        }
    }
    free(out);
    return sum / (double)(per * (size_t)n) * cfg->loss_weight;
}

static void check_model(const char *label, const pf_config *cfg, int n, int h, int w) {
    char err[512];
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    CHECK(m != NULL, "%s: %s", label, err);
    if (!m) return;
    pf_model_init(m, 42);
    int s = pf_model_scale(m);
    size_t nlq = (size_t)n * h * w * 3, ngt = nlq * s * s;
    uint8_t *lq = malloc(nlq), *gt = malloc(ngt);
    pf_rng r = pf_rng_make(5, 6, 7);
    for (size_t i = 0; i < nlq; i++) lq[i] = (uint8_t)pf_rng_below(&r, 256);
    for (size_t i = 0; i < ngt; i++) gt[i] = (uint8_t)pf_rng_below(&r, 256);
    float loss;
    CHECK(pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err) == 0, "%s: %s", label,
          err);
    double l0 = loss_double(m, cfg, lq, gt, n, h, w);
    CHECK(fabs(l0 - loss) <= 1e-5 * l0, "%s: training loss %.9g, inference loss %.9g", label,
          loss, l0);
    size_t np = pf_model_num_params(m);
    float *an = malloc(np * sizeof(float));
    memcpy(an, pf_model_grads(m), np * sizeof(float));
    float *p = pf_model_params(m);
    int checked = 0, bad = 0;
    double worst = 0.0;
    /* Per tensor, the directional derivative along a random +-1 direction v: the analytic
       g . v against (L(p + e v) - L(p - e v)) / 2e. Summing over the tensor lifts the signal
       well above float rounding; single elements are checked by the PyTorch parity test. */
    float *saved = malloc(np * sizeof(float));
    memcpy(saved, p, np * sizeof(float));
    double e = 3e-4;
    for (int t = 0; t < pf_model_num_tensors(m); t++) {
        const pf_param_info *ti = pf_model_tensor_info(m, t);
        double an_dir = 0.0;
        float *v = malloc(ti->numel * sizeof(float));
        for (size_t j = 0; j < ti->numel; j++) {
            v[j] = pf_rng_below(&r, 2) ? 1.0f : -1.0f;
            an_dir += (double)v[j] * an[ti->offset + j];
        }
        for (size_t j = 0; j < ti->numel; j++) p[ti->offset + j] = saved[ti->offset + j] + (float)e * v[j];
        double lp = loss_double(m, cfg, lq, gt, n, h, w);
        for (size_t j = 0; j < ti->numel; j++) p[ti->offset + j] = saved[ti->offset + j] - (float)e * v[j];
        double lm = loss_double(m, cfg, lq, gt, n, h, w);
        memcpy(p + ti->offset, saved + ti->offset, ti->numel * sizeof(float));
        free(v);
        double fd = (lp - lm) / (2.0 * e);
        double diff = fabs(fd - an_dir);
        double rel = diff / fmax(fabs(fd), 1e-12);
        if (rel > worst) worst = rel;
        checked++;
        if (diff > 2e-2 * fmax(fabs(fd), fabs(an_dir)) + 1e-9) {
            bad++;
            fprintf(stderr, "%s: %s: analytic directional derivative %.6g, finite difference "
                    "%.6g\n", label, ti->name, an_dir, fd);
        }
    }
    free(saved);
    CHECK(bad == 0, "%s: %d of %d tensors' gradients disagree with finite differences", label,
          bad, checked);
    printf("%s: %d tensors checked, worst relative difference %.3g\n", label, checked, worst);
    free(an);
    free(lq);
    free(gt);
    pf_model_destroy(&m);
}

int main(void) {
    pf_config c;
    base_cfg(&c, "EDSR", 2, "MSELoss");
    c.res_scale = 0.5f;
    c.n_blocks = 1;
    check_model("EDSR x2 res_scale 0.5 MSE", &c, 2, 4, 5);
    base_cfg(&c, "EDSR", 3, "CharbonnierLoss");
    c.n_blocks = 1;
    check_model("EDSR x3 Charbonnier", &c, 2, 3, 4);
    base_cfg(&c, "EDSR", 4, "MSELoss");
    c.n_blocks = 1;
    check_model("EDSR x4 MSE", &c, 1, 4, 5);
    base_cfg(&c, "SRCNN", 3, "MSELoss");
    check_model("SRCNN x3 MSE", &c, 2, 5, 6);
    return pf_test_end("test_nn_gradcheck");
}
