/*  test_graph_cuda_host — nn/cuda/graph_cuda.c (the GPU executor of every network but EDSR)
    run on the host with tests/cuda_host/host_ops.c standing in for the device, against the
    CPU model (nn/model.h) with the same weights and batch: loss, every gradient tensor and
    inference, for each network at x2 / x3 / x4 and odd sizes. What it checks is the
    executor's part: the description taken from the CPU builder (parameter table, SRCNN's
    nodes, FSRCNN's weight index maps), the plans (sizes, liveness reuse in inference), the
    order of the ops, their arguments and the gradient bookkeeping (accumulation where a
    tensor has several readers). The kernels themselves need a GPU: bench/gpu/gpu_check.
    Built only with the CUDA backend (the headers come from the toolkit).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cuda/graph_cuda.h"
#include "nn/cuda/ops.h"
#include "nn/model.h"
#include "tests/pf_test.h"

#define TOL 1e-4 /* max |a - b| / max |b| per tensor, as the GPU check (fp32) */

static uint64_t rng = 12345;
static uint8_t random_u8(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(rng >> 56);
}

static double max_rel_err(const float *got, const float *ref, size_t n) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= worst)) worst = d;
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    }
    return scale > 0 ? worst / scale : worst;
}

/* hp: MSRResNet n_feats n_blocks; RCAN n_feats n_blocks num_group squeeze_factor; RRDBNet
   n_feats n_blocks num_grow_ch; FSRCNN d s m; SRCNN c1 c2; ESPCN none. */
static void check(const char *type, int scale, int h, int w, const int hp[4], const char *loss) {
    pf_config c;
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "%s", type);
    snprintf(c.loss_type, sizeof c.loss_type, "%s", loss);
    c.scale = scale;
    if (!strcmp(type, "MSRResNet") || !strcmp(type, "RCAN") || !strcmp(type, "RRDBNet")) {
        c.n_feats = hp[0];
        c.n_blocks = hp[1];
    }
    if (!strcmp(type, "RCAN")) {
        c.num_group = hp[2];
        c.squeeze_factor = hp[3];
    } else if (!strcmp(type, "RRDBNet")) {
        c.num_grow_ch = hp[2];
    } else if (!strcmp(type, "FSRCNN")) {
        c.fsrcnn_d = hp[0];
        c.fsrcnn_s = hp[1];
        c.fsrcnn_m = hp[2];
    } else if (!strcmp(type, "SRCNN")) {
        c.srcnn_channels[1] = hp[0];
        c.srcnn_channels[2] = hp[1];
    }
    char label[96], err[512];
    snprintf(label, sizeof label, "%s x%d %dx%d %s", type, scale, h, w, loss);
    pf_model *cpu = pf_model_new(&c, err, sizeof err);
    pf_cugraph *g = pf_cugraph_new(&c, err, sizeof err);
    CHECK(cpu && g, "%s: %s", label, err);
    if (!cpu || !g) {
        pf_model_destroy(&cpu);
        pf_cugraph_destroy(&g);
        return;
    }
    pf_model_init(cpu, 7);

    /* the same parameter table */
    int same = pf_cugraph_num_params(g) == pf_model_num_params(cpu) &&
               pf_cugraph_num_tensors(g) == pf_model_num_tensors(cpu);
    for (int i = 0; same && i < pf_model_num_tensors(cpu); i++)
        same = !strcmp(pf_cugraph_tensor_info(g, i)->name, pf_model_tensor_info(cpu, i)->name) &&
               pf_cugraph_tensor_info(g, i)->offset == pf_model_tensor_info(cpu, i)->offset;
    CHECK(same, "%s: parameter tables differ", label);

    int n = 2, H = h * scale, W = w * scale;
    size_t lq = (size_t)n * h * w * 3, hq = (size_t)n * H * W * 3;
    size_t np = pf_model_num_params(cpu);
    uint8_t *in = malloc(lq + hq);
    float *params = malloc(np * sizeof(float)), *grads = malloc(np * sizeof(float));
    float *out_cpu = malloc((size_t)H * W * 3 * sizeof(float));
    float *out_dev = malloc((size_t)H * W * 3 * sizeof(float));
    double *scratch = malloc(PF_CUDA_LOSS_SCRATCH * sizeof(double));
    if (!in || !params || !grads || !out_cpu || !out_dev || !scratch) exit(2);
    for (size_t i = 0; i < lq + hq; i++) in[i] = random_u8();
    memcpy(params, pf_model_params(cpu), np * sizeof(float));
    for (size_t i = 0; i < np; i++) grads[i] = NAN; /* garbage, as device memory: never read */
    float loss_cpu = 0, loss_dev = 0;
    pf_cugraph_env env = {0, NULL, params, grads, &loss_dev, scratch};
    int rc = pf_model_train_step(cpu, in, in + lq, n, h, w, &loss_cpu, err, sizeof err);
    CHECK(rc == 0, "%s: cpu train step: %s", label, err);
    if (rc == 0) {
        rc = pf_cugraph_train_step(g, &env, in, n, h, w, err, sizeof err);
        CHECK(rc == 0, "%s: train step: %s", label, err);
    }
    if (rc == 0) {
        CHECK(fabs((double)loss_dev - loss_cpu) <= TOL * fabs((double)loss_cpu),
              "%s: loss %.8g, cpu %.8g", label, (double)loss_dev, (double)loss_cpu);
        double worst = 0;
        const char *worst_name = "";
        for (int i = 0; i < pf_model_num_tensors(cpu); i++) {
            const pf_param_info *t = pf_model_tensor_info(cpu, i);
            double e = max_rel_err(grads + t->offset, pf_model_grads(cpu) + t->offset, t->numel);
            CHECK(e <= TOL, "%s: gradient of %s: max rel err %.3g", label, t->name, e);
            if (!(e <= worst)) {
                worst = e;
                worst_name = t->name;
            }
        }
        const float *pred = NULL;
        rc = pf_model_infer(cpu, in, h, w, out_cpu, err, sizeof err);
        CHECK(rc == 0, "%s: cpu infer: %s", label, err);
        if (rc == 0) {
            rc = pf_cugraph_infer(g, &env, in, h, w, &pred, err, sizeof err);
            CHECK(rc == 0, "%s: infer: %s", label, err);
        }
        double ie = NAN;
        if (rc == 0) {
            size_t hw = (size_t)H * W; /* CHW on the device, HWC from the CPU model */
            for (int ch = 0; ch < 3; ch++)
                for (size_t i = 0; i < hw; i++) out_dev[i * 3 + ch] = pred[ch * hw + i];
            ie = max_rel_err(out_dev, out_cpu, hw * 3);
            CHECK(ie <= TOL, "%s: inference: max rel err %.3g", label, ie);
        }
        printf("%-30s loss %.6f / %.6f, worst gradient %.2e (%s), inference %.2e\n", label,
               (double)loss_dev, (double)loss_cpu, worst, worst_name, ie);
    }
    free(in), free(params), free(grads), free(out_cpu), free(out_dev), free(scratch);
    pf_cugraph_destroy(&g);
    pf_model_destroy(&cpu);
}

int main(void) {
    check("SRCNN", 3, 12, 12, (const int[4]){16, 8, 0, 0}, "L1Loss");
    check("SRCNN", 2, 17, 13, (const int[4]){16, 8, 0, 0}, "MSELoss");
    check("FSRCNN", 3, 12, 12, (const int[4]){12, 4, 2, 0}, "L1Loss");
    check("FSRCNN", 2, 17, 13, (const int[4]){16, 8, 1, 0}, "MSELoss");
    check("ESPCN", 3, 12, 12, (const int[4]){0, 0, 0, 0}, "L1Loss");
    check("ESPCN", 4, 17, 13, (const int[4]){0, 0, 0, 0}, "MSELoss");
    check("MSRResNet", 4, 12, 12, (const int[4]){16, 2, 0, 0}, "L1Loss");
    check("MSRResNet", 2, 17, 13, (const int[4]){16, 2, 0, 0}, "MSELoss");
    check("MSRResNet", 3, 17, 13, (const int[4]){16, 2, 0, 0}, "L1Loss");
    check("RCAN", 2, 12, 12, (const int[4]){16, 2, 2, 4}, "L1Loss");
    check("RCAN", 3, 17, 13, (const int[4]){16, 2, 2, 4}, "MSELoss");
    check("RCAN", 4, 12, 12, (const int[4]){16, 2, 2, 4}, "L1Loss");
    check("RRDBNet", 4, 12, 12, (const int[4]){16, 1, 8, 0}, "L1Loss");
    check("RRDBNet", 2, 12, 14, (const int[4]){16, 1, 8, 0}, "MSELoss");
    check("RRDBNet", 4, 17, 13, (const int[4]){12, 1, 12, 0}, "MSELoss");
    /* refused: a size RRDBNet x2 cannot unshuffle */
    pf_config c;
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "RRDBNet");
    c.scale = 2, c.n_feats = 8, c.n_blocks = 1, c.num_grow_ch = 4;
    char err[512] = "";
    pf_cugraph *g = pf_cugraph_new(&c, err, sizeof err);
    uint8_t px[2 * 13 * 12 * 3 * 5] = {0};
    const float *pred;
    double scratch[PF_CUDA_LOSS_SCRATCH];
    float *params = calloc(pf_cugraph_num_params(g), sizeof(float)), loss;
    pf_cugraph_env env = {0, NULL, params, params, &loss, scratch};
    err[0] = 0;
    CHECK(g && pf_cugraph_infer(g, &env, px, 13, 12, &pred, err, sizeof err) != 0 &&
              strstr(err, "not divisible by 2"),
          "odd size for RRDBNet x2: '%s'", err);
    free(params);
    pf_cugraph_destroy(&g);
    snprintf(c.model_type, sizeof c.model_type, "NoSuchNet");
    CHECK(pf_cugraph_new(&c, err, sizeof err) == NULL && strstr(err, "NoSuchNet"),
          "unknown type: '%s'", err);
    return pf_test_end("test_graph_cuda_host");
}
