/*  test_nn_torch_parity — PixFlow's EDSR and SRCNN against PyTorch: the same weights and batch
    must give the same output, loss and every gradient (relative error <= 1e-4, measured as
    max |ours - torch| / max |torch| per tensor), and 3 Adam steps must give the same losses.
    Reference data: tests/data/nn_ref_*.{txt,bin}, written by tests/reference/nn_torch_ref.py
    (BasicSR's EDSR re-implemented in PyTorch 1.13, MMagic's SRCNNNet). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/model.h"
#include "nn/optim.h"
#include "tests/pf_test.h"

#define MAXT 128

typedef struct {
    char key[64][32], val[64][64];
    int n_params;
    char name[MAXT][96];
    size_t off[MAXT], numel[MAXT];
    int n_tensors;
    float *data;
} refcase;

static const char *param(const refcase *r, const char *key) {
    for (int i = 0; i < r->n_params; i++)
        if (!strcmp(r->key[i], key)) return r->val[i];
    return NULL;
}

static const float *tensor(const refcase *r, const char *name, size_t *numel) {
    for (int i = 0; i < r->n_tensors; i++)
        if (!strcmp(r->name[i], name)) {
            if (numel) *numel = r->numel[i];
            return r->data + r->off[i];
        }
    return NULL;
}

static int load(refcase *r, const char *cname) {
    char path[1024], line[512];
    memset(r, 0, sizeof *r);
    snprintf(path, sizeof path, "%s/nn_ref_%s.txt", pf_test_data(), cname);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    size_t total = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "param ", 6) && r->n_params < 64) {
            sscanf(line + 6, "%31s %63s", r->key[r->n_params], r->val[r->n_params]);
            r->n_params++;
        } else if (!strncmp(line, "tensor ", 7) && r->n_tensors < MAXT) {
            int i = r->n_tensors++;
            sscanf(line + 7, "%95s %zu %zu", r->name[i], &r->off[i], &r->numel[i]);
            if (r->off[i] + r->numel[i] > total) total = r->off[i] + r->numel[i];
        }
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/nn_ref_%s.bin", pf_test_data(), cname);
    f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    r->data = malloc(total * sizeof(float));
    size_t got = fread(r->data, sizeof(float), total, f);
    fclose(f);
    return got == total ? 0 : -1;
}

static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num) num = d;
        if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
    }
    return num / den;
}

static void run_case(const char *cname) {
    refcase r;
    if (load(&r, cname)) {
        CHECK(0, "%s: reference data missing", cname);
        return;
    }
    pf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "%s", param(&r, "model"));
    cfg.scale = atoi(param(&r, "scale"));
    cfg.in_channels = cfg.out_channels = 3;
    if (!strcmp(cfg.model_type, "EDSR")) {
        cfg.n_feats = atoi(param(&r, "n_feats"));
        cfg.n_blocks = atoi(param(&r, "n_blocks"));
        cfg.res_scale = (float)atof(param(&r, "res_scale"));
    } else {
        int ch[4] = { 3, atoi(param(&r, "c1")), atoi(param(&r, "c2")), 3 };
        int k[3] = { atoi(param(&r, "k1")), atoi(param(&r, "k2")), atoi(param(&r, "k3")) };
        memcpy(cfg.srcnn_channels, ch, sizeof ch);
        memcpy(cfg.srcnn_kernel_sizes, k, sizeof k);
    }
    cfg.rgb_mean[0] = 0.4488f;
    cfg.rgb_mean[1] = 0.4371f;
    cfg.rgb_mean[2] = 0.4040f;
    cfg.img_range = 255.0f;
    snprintf(cfg.loss_type, sizeof cfg.loss_type, "%s", param(&r, "loss"));
    cfg.loss_weight = (float)atof(param(&r, "loss_weight"));
    cfg.charbonnier_eps = (float)atof(param(&r, "charbonnier_eps"));
    int n = atoi(param(&r, "n")), h = atoi(param(&r, "h")), w = atoi(param(&r, "w"));
    int s = cfg.scale;
    float lr = (float)atof(param(&r, "lr"));

    char err[512];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s: %s", cname, err);
    if (!m) return;
    float *params = pf_model_params(m), *grads = pf_model_grads(m);
    int loaded = 0;
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        char key[128];
        size_t numel = 0;
        snprintf(key, sizeof key, "param:%s", t->name);
        const float *src = tensor(&r, key, &numel);
        CHECK(src && numel == t->numel, "%s: %s missing or mis-sized in reference", cname,
              t->name);
        if (src && numel == t->numel) {
            memcpy(params + t->offset, src, numel * sizeof(float));
            loaded++;
        }
    }
    CHECK(loaded == pf_model_num_tensors(m), "%s: %d of %d tensors", cname, loaded,
          pf_model_num_tensors(m));

    size_t nlq, ngt, nout;
    const float *lqf = tensor(&r, "lq", &nlq), *gtf = tensor(&r, "gt", &ngt);
    const float *ref_out = tensor(&r, "output", &nout);
    uint8_t *lq = malloc(nlq), *gt = malloc(ngt);
    for (size_t i = 0; i < nlq; i++) lq[i] = (uint8_t)lqf[i];
    for (size_t i = 0; i < ngt; i++) gt[i] = (uint8_t)gtf[i];

    /* Output, image by image through the inference path. */
    size_t per = (size_t)h * s * w * s * 3;
    float *out = malloc(per * sizeof(float));
    for (int i = 0; i < n; i++) {
        int rc = pf_model_infer(m, lq + (size_t)i * h * w * 3, h, w, out, err, sizeof err);
        CHECK(rc == 0, "%s: infer: %s", cname, err);
        double e = rel_err(out, ref_out + (size_t)i * per, per);
        CHECK(e <= 1e-4, "%s: output of image %d: relative error %.3g", cname, i, e);
    }

    /* Loss and every gradient. */
    float loss = 0.0f;
    int rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
    CHECK(rc == 0, "%s: train_step: %s", cname, err);
    double ref_loss = tensor(&r, "loss", NULL)[0];
    float first_loss = loss;
    CHECK(fabs(loss - ref_loss) <= 1e-4 * fabs(ref_loss), "%s: loss %.8g vs torch %.8g", cname,
          loss, ref_loss);
    double worst = 0.0;
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        char key[128];
        size_t numel = 0;
        snprintf(key, sizeof key, "grad:%s", t->name);
        const float *g = tensor(&r, key, &numel);
        if (!g || numel != t->numel) {
            CHECK(0, "%s: %s missing in reference", cname, key);
            continue;
        }
        double e = rel_err(grads + t->offset, g, numel);
        if (e > worst) worst = e;
        CHECK(e <= 1e-4, "%s: gradient of %s: relative error %.3g", cname, t->name, e);
    }

    /* Adam: the update after this step and three more steps' losses. */
    const float *losses = tensor(&r, "losses", NULL);
    pf_adam adam;
    CHECK(pf_adam_init(&adam, pf_model_num_params(m), 0.9f, 0.999f, 1e-8f, 0.0f) == 0, "oom");
    pf_adam_step(&adam, params, grads, lr);
    for (int k = 1; k <= 3; k++) {
        rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
        CHECK(rc == 0, "%s: train_step: %s", cname, err);
        CHECK(fabs(loss - losses[k]) <= 1e-4 * fabs(losses[k]),
              "%s: loss after %d Adam steps %.8g vs torch %.8g", cname, k, loss, losses[k]);
        pf_adam_step(&adam, params, grads, lr);
    }
    printf("%s: loss %.8f (torch %.8f), worst gradient relative error %.3g, loss after 3 Adam "
           "steps %.8f (torch %.8f)\n", cname, first_loss, ref_loss, worst, loss, losses[3]);
    pf_adam_free(&adam);
    free(out);
    free(lq);
    free(gt);
    free(r.data);
    pf_model_destroy(&m);
}

int main(void) {
    run_case("edsr_x2");
    run_case("edsr_x3");
    run_case("edsr_x4");
    run_case("srcnn_x2");
    return pf_test_end("test_nn_torch_parity");
}
