/*  test_nn_model — model construction and parameters: state_dict names, shapes and flat
    offsets of EDSR x2/x4 and SRCNN; PyTorch-default init (every value inside
    +-1/sqrt(fan_in), the range actually used, mean near 0, same seed -> same weights, other
    seed -> other weights); pf_model_load_weights round trip through safetensors and its
    errors (missing, unexpected, mis-shaped names); unsupported configs rejected. */
#include <stdlib.h>
#include <string.h>
#include "common/safetensors.h"
#include "nn/model.h"
#include "tests/pf_test.h"

static void edsr_cfg(pf_config *c, int scale) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, "EDSR");
    c->scale = scale;
    c->in_channels = c->out_channels = 3;
    c->n_feats = 16;
    c->n_blocks = 2;
    c->res_scale = 1.0f;
    c->img_range = 255.0f;
    strcpy(c->loss_type, "L1Loss");
    c->loss_weight = 1.0f;
}

static void test_names(void) {
    char err[512];
    pf_config c;
    edsr_cfg(&c, 4);
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!m) return;
    const char *want[] = { "conv_first.weight", "conv_first.bias", "body.0.conv1.weight",
                           "body.0.conv1.bias", "body.0.conv2.weight", "body.0.conv2.bias",
                           "body.1.conv1.weight", "body.1.conv1.bias", "body.1.conv2.weight",
                           "body.1.conv2.bias", "conv_after_body.weight", "conv_after_body.bias",
                           "upsample.0.weight", "upsample.0.bias", "upsample.2.weight",
                           "upsample.2.bias", "conv_last.weight", "conv_last.bias" };
    int nt = pf_model_num_tensors(m);
    CHECK(nt == 18, "EDSR x4 has %d tensors", nt);
    size_t off = 0;
    for (int i = 0; i < nt && i < 18; i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        CHECK(!strcmp(t->name, want[i]), "tensor %d is %s, want %s", i, t->name, want[i]);
        CHECK(t->offset == off, "%s at offset %zu, want %zu", t->name, t->offset, off);
        off += t->numel;
    }
    CHECK(off == pf_model_num_params(m), "params %zu vs sum %zu", pf_model_num_params(m), off);
    const pf_param_info *up = pf_model_tensor_info(m, 12);
    CHECK(up->ndim == 4 && up->shape[0] == 64 && up->shape[1] == 16 && up->shape[2] == 3 &&
          up->shape[3] == 3, "upsample.0.weight shape");
    const pf_param_info *last = pf_model_tensor_info(m, 16);
    CHECK(last->shape[0] == 3 && last->shape[1] == 16, "conv_last.weight shape");
    CHECK(pf_model_tensor_info(m, 18) == NULL, "out-of-range tensor index");
    pf_model_destroy(&m);
    CHECK(m == NULL, "destroy nulls the pointer");

    edsr_cfg(&c, 3);
    m = pf_model_new(&c, err, sizeof err);
    CHECK(m && pf_model_num_tensors(m) == 16 &&
          pf_model_tensor_info(m, 12)->shape[0] == 144, "EDSR x3: one upsample conv to 9 C");
    pf_model_destroy(&m);

    memset(&c, 0, sizeof c);
    strcpy(c.model_type, "SRCNN");
    c.scale = 4;
    int ch[4] = { 3, 64, 32, 3 }, k[3] = { 9, 1, 5 };
    memcpy(c.srcnn_channels, ch, sizeof ch);
    memcpy(c.srcnn_kernel_sizes, k, sizeof k);
    strcpy(c.loss_type, "MSELoss");
    m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (m) {
        CHECK(pf_model_num_params(m) == 3 * 64 * 81 + 64 + 64 * 32 + 32 + 32 * 3 * 25 + 3,
              "SRCNN params %zu", pf_model_num_params(m));
        CHECK(!strcmp(pf_model_tensor_info(m, 2)->name, "conv2.weight"), "SRCNN names");
        pf_model_destroy(&m);
    }

    edsr_cfg(&c, 5);
    CHECK(pf_model_new(&c, err, sizeof err) == NULL && strstr(err, "scale"), "x5 EDSR: %s",
          err);
    edsr_cfg(&c, 2);
    strcpy(c.model_type, "RCAN");
    CHECK(pf_model_new(&c, err, sizeof err) == NULL && strstr(err, "RCAN"), "RCAN: %s", err);
    edsr_cfg(&c, 2);
    strcpy(c.loss_type, "GANLoss");
    CHECK(pf_model_new(&c, err, sizeof err) == NULL && strstr(err, "GANLoss"), "loss: %s", err);
}

static void test_init(void) {
    char err[512];
    pf_config c;
    edsr_cfg(&c, 2);
    pf_model *a = pf_model_new(&c, err, sizeof err), *b = pf_model_new(&c, err, sizeof err);
    if (!a || !b) {
        CHECK(0, "%s", err);
        return;
    }
    pf_model_init(a, 7);
    pf_model_init(b, 7);
    size_t n = pf_model_num_params(a);
    CHECK(!memcmp(pf_model_params(a), pf_model_params(b), n * sizeof(float)),
          "same seed, different weights");
    for (int i = 0; i < pf_model_num_tensors(a); i++) {
        const pf_param_info *t = pf_model_tensor_info(a, i);
        const pf_param_info *w = pf_model_tensor_info(a, i & ~1);
        double bound = 1.0 / sqrt((double)(w->shape[1] * w->shape[2] * w->shape[3]));
        const float *p = pf_model_params(a) + t->offset;
        double mx = 0, sum = 0;
        for (size_t j = 0; j < t->numel; j++) {
            if (fabs(p[j]) > mx) mx = fabs(p[j]);
            sum += p[j];
        }
        CHECK(mx <= bound, "%s: |w| up to %g, bound %g", t->name, mx, bound);
        if (t->numel >= 200) {
            CHECK(mx >= 0.95 * bound, "%s: |w| only up to %g of bound %g", t->name, mx, bound);
            /* U(-b, b) has std b/sqrt(3); the mean of n draws is within 5 std/sqrt(n) */
            CHECK(fabs(sum / t->numel) <= 5 * bound / sqrt(3.0 * t->numel), "%s: mean %g",
                  t->name, sum / t->numel);
        }
    }
    pf_model_init(b, 8);
    CHECK(memcmp(pf_model_params(a), pf_model_params(b), n * sizeof(float)),
          "different seeds, same weights");
    pf_model_destroy(&a);
    pf_model_destroy(&b);
}

static void test_load(void) {
    char err[1024];
    pf_config c;
    edsr_cfg(&c, 2);
    pf_model *a = pf_model_new(&c, err, sizeof err), *b = pf_model_new(&c, err, sizeof err);
    if (!a || !b) {
        CHECK(0, "%s", err);
        return;
    }
    pf_model_init(a, 1);
    int nt = pf_model_num_tensors(a);
    pf_st_tensor *t = calloc((size_t)nt + 1, sizeof *t);
    for (int i = 0; i < nt; i++) {
        const pf_param_info *p = pf_model_tensor_info(a, i);
        t[i].name = p->name;
        t[i].data = pf_model_params(a) + p->offset;
        t[i].ndim = p->ndim;
        memcpy(t[i].shape, p->shape, sizeof t[i].shape);
    }
    void *buf;
    size_t len;
    pf_safetensors *st = NULL;
    CHECK(pf_safetensors_serialize(t, nt, NULL, 0, &buf, &len, err, sizeof err) == 0, "%s", err);
    CHECK(pf_safetensors_parse(buf, len, "weights", &st, err, sizeof err) == 0, "%s", err);
    free(buf);
    CHECK(pf_model_load_weights(b, st, err, sizeof err) == 0, "load: %s", err);
    CHECK(!memcmp(pf_model_params(a), pf_model_params(b), pf_model_num_params(a) * sizeof(float)),
          "loaded weights differ");
    pf_safetensors_free(&st);

    /* drop conv_last.bias, rename body.0.conv1.weight, reshape conv_first.bias */
    float extra[8] = { 0 };
    t[nt - 1].name = "something.else";
    t[nt - 1].data = extra;
    t[nt - 1].ndim = 1;
    t[nt - 1].shape[0] = 8;
    t[1].shape[0] = 8;
    t[1].ndim = 1;
    t[1].data = extra;
    CHECK(pf_safetensors_serialize(t, nt, NULL, 0, &buf, &len, err, sizeof err) == 0, "%s", err);
    CHECK(pf_safetensors_parse(buf, len, "weights", &st, err, sizeof err) == 0, "%s", err);
    free(buf);
    int rc = pf_model_load_weights(b, st, err, sizeof err);
    CHECK(rc == -1, "mismatched weights accepted");
    CHECK(strstr(err, "missing 'conv_last.bias'") != NULL, "no missing name in: %s", err);
    CHECK(strstr(err, "unexpected 'something.else'") != NULL, "no unexpected name in: %s", err);
    CHECK(strstr(err, "tensors 1 mis-shaped, 1 missing, 1 unexpected; conv_first.bias: "
                 "checkpoint [8], config wants [16]") != NULL, "no mis-shaped shapes in: %s", err);
    CHECK(!memcmp(pf_model_params(a), pf_model_params(b), pf_model_num_params(a) * sizeof(float)),
          "a failed load changed the weights");
    pf_safetensors_free(&st);
    free(t);
    pf_model_destroy(&a);
    pf_model_destroy(&b);
}

int main(void) {
    test_names();
    test_init();
    test_load();
    return pf_test_end("test_nn_model");
}
