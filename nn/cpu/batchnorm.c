/*  batchnorm — the CPU kernels of PF_G_BATCHNORM (nn/net.h), torch.nn.BatchNorm2d(C, eps=1e-5,
    momentum=0.1, affine=True, track_running_stats=True): the training forward (batch
    statistics, running statistics updated), the eval forward (running statistics) and the
    training backward through the batch statistics. Declared in nn/cpu/ops.h; plain C loops
    with OpenMP over channels, any layout (pf_blk_off), real channels only.

    A reduction, not a convolution engine: each channel's sums run in double, in one thread,
    in a fixed order (sample, then pixel), so no result depends on the thread count. Formulas
    (Ioffe and Szegedy, "Batch Normalization", ICML 2015; torch's batch_norm_cpu): M = N H W,
    mean = sum x / M, var = sum (x - mean)^2 / M (biased, two passes), x^ = (x - mean) /
    sqrt(var + eps), y = weight x^ + bias; running_mean = (1 - m) running_mean + m mean,
    running_var = (1 - m) running_var + m var M / (M - 1) (unbiased, as torch); backward: db =
    sum dy, dw = sum dy x^, dx = weight / sqrt(var + eps) (dy - db / M - x^ dw / M). */
#include <math.h>
#include <stddef.h>

#include "nn/cpu/dnnl_ctx.h"
#include "nn/cpu/ops.h"

/* Element (s, c, p) of an N x C x (hw) tensor in block b: p the pixel index h W + w. */
static size_t at(int s, int c, size_t p, int C, size_t hw, int b) {
    size_t cb = (size_t)(C + b - 1) / (size_t)b;
    return (((size_t)s * cb + (size_t)(c / b)) * hw + p) * (size_t)b + (size_t)(c % b);
}

int pf_cpu_batchnorm_train_forward(float *y, const float *x, const float *weight,
                                   const float *bias, float *running, double *save, int n,
                                   int C, size_t hw, int b, int bx) {
    double M = (double)n * (double)hw;
    if (M < 2) return -1;   /* torch: "Expected more than 1 value per channel when training" */
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double sum = 0, sq = 0;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++) sum += x[at(s, c, p, C, hw, bx)];
        double mean = sum / M;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++) {
                double d = x[at(s, c, p, C, hw, bx)] - mean;
                sq += d * d;
            }
        double var = sq / M, inv = 1.0 / sqrt(var + PF_BN_EPS);
        double sc = weight[c] * inv, sh = bias[c] - mean * sc;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++)
                y[at(s, c, p, C, hw, b)] = (float)(x[at(s, c, p, C, hw, bx)] * sc + sh);
        save[c] = mean;
        save[C + c] = inv;
        running[c] = (float)((1.0 - PF_BN_MOMENTUM) * running[c] + PF_BN_MOMENTUM * mean);
        running[C + c] = (float)((1.0 - PF_BN_MOMENTUM) * running[C + c] +
                                 PF_BN_MOMENTUM * var * M / (M - 1.0));
    }
    return 0;
}

void pf_cpu_batchnorm_eval_forward(float *y, const float *x, const float *weight,
                                   const float *bias, const float *running, int n, int C,
                                   size_t hw, int b, int bx) {
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double inv = 1.0 / sqrt((double)running[C + c] + PF_BN_EPS);
        double sc = weight[c] * inv, sh = bias[c] - running[c] * sc;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++)
                y[at(s, c, p, C, hw, b)] = (float)(x[at(s, c, p, C, hw, bx)] * sc + sh);
    }
}

void pf_cpu_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int C, size_t hw, int b, int bx, int acc) {
    double M = (double)n * (double)hw;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double mean = save[c], inv = save[C + c], db = 0, dw = 0;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++) {
                double g = dy[at(s, c, p, C, hw, b)];
                db += g;
                dw += g * (x[at(s, c, p, C, hw, bx)] - mean) * inv;
            }
        if (dweight) dweight[c] = (float)dw;
        if (dbias) dbias[c] = (float)db;
        if (!dx) continue;
        double k = weight[c] * inv;
        for (int s = 0; s < n; s++)
            for (size_t p = 0; p < hw; p++) {
                size_t o = at(s, c, p, C, hw, bx);
                double xh = (x[o] - mean) * inv;
                float v = (float)(k * (dy[at(s, c, p, C, hw, b)] - db / M - xh * dw / M));
                dx[o] = acc ? dx[o] + v : v;
            }
    }
}
