/*  spectral_norm — torch.nn.utils.spectral_norm's forward, backward and init over a flat
    weight; the formulas and names are in spectral_norm.h. Plain loops: a discriminator's
    largest normalised weight (UNetDiscriminatorSN's conv3, 512 x 256 x 4 x 4) is about two
    million multiply-adds per pass, next to that layer's convolution over a whole batch. */
#include "nn/spectral_norm.h"

#include <math.h>
#include <stddef.h>

pf_spectral_norm pf_spectral_norm_layer(int out_channels, int in_channels, int kernel,
                                        float *weight_u, float *weight_v) {
    pf_spectral_norm sn = { out_channels, in_channels * kernel * kernel, PF_SN_EPS, weight_u,
                            weight_v, 0.0f };
    return sn;
}

/* x /= max(||x||_2, eps) (F.normalize(x, dim=0, eps)); the norm in double. */
static void normalize(float *x, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double norm = fmax(sqrt(ss), (double)eps);
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] / norm);
}

/* Row r of W v, in double. */
static double row_dot(const float *w, int cols, int r, const float *v) {
    const float *row = w + (size_t)r * cols;
    double s = 0;
    for (int c = 0; c < cols; c++) s += (double)row[c] * v[c];
    return s;
}

/* One power iteration: v = normalize(W^T u), then u = normalize(W v) with the new v. Each
   product is summed in double and stored as float before its normalisation, as torch.mv's
   result is. */
static void power_iteration(pf_spectral_norm *sn, const float *w) {
    for (int c = 0; c < sn->cols; c++) {
        double s = 0;
        for (int r = 0; r < sn->rows; r++)
            s += (double)w[(size_t)r * sn->cols + c] * sn->weight_u[r];
        sn->weight_v[c] = (float)s;
    }
    normalize(sn->weight_v, sn->cols, sn->eps);
    for (int r = 0; r < sn->rows; r++)
        sn->weight_u[r] = (float)row_dot(w, sn->cols, r, sn->weight_v);
    normalize(sn->weight_u, sn->rows, sn->eps);
}

void pf_spectral_norm_init_uv(pf_spectral_norm *sn, pf_rng *r) {
    float *vec[2] = { sn->weight_u, sn->weight_v };
    int len[2] = { sn->rows, sn->cols };
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < len[k]; i++) {
            double u1 = 1.0 - pf_rng_uniform(r); /* (0, 1]: no log(0) */
            double u2 = pf_rng_uniform(r);
            vec[k][i] = (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
        }
        normalize(vec[k], len[k], sn->eps);
    }
}

float pf_spectral_norm_forward(pf_spectral_norm *sn, const float *weight_orig, int training,
                               float *weight) {
    if (training) power_iteration(sn, weight_orig);
    double sigma = 0;
    for (int r = 0; r < sn->rows; r++)
        sigma += (double)sn->weight_u[r] * row_dot(weight_orig, sn->cols, r, sn->weight_v);
    sn->sigma = (float)sigma;
    size_t n = (size_t)sn->rows * sn->cols;
    for (size_t i = 0; i < n; i++) weight[i] = weight_orig[i] / sn->sigma;
    return sn->sigma;
}

void pf_spectral_norm_backward(const pf_spectral_norm *sn, const float *weight_orig,
                               const float *d_weight, float *d_weight_orig) {
    size_t n = (size_t)sn->rows * sn->cols;
    double dot = 0;
    for (size_t i = 0; i < n; i++) dot += (double)d_weight[i] * weight_orig[i];
    double sigma = sn->sigma, d_sigma = -dot / (sigma * sigma);
    /* element by element after the sum: d_weight_orig may be d_weight */
    for (int r = 0; r < sn->rows; r++) {
        double du = d_sigma * sn->weight_u[r];
        size_t at = (size_t)r * sn->cols;
        for (int c = 0; c < sn->cols; c++)
            d_weight_orig[at + c] = (float)(d_weight[at + c] / sigma + du * sn->weight_v[c]);
    }
}
