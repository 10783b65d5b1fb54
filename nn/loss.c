/*  loss — L1 / MSE / Charbonnier pixel losses and their gradients (see loss.h). */
#include "nn/loss.h"
#include <math.h>
#include <string.h>
#include "nn/cpu/dnnl_ctx.h"

int pf_loss_parse(const char *name, pf_loss_type *type) {
    if (!strcmp(name, "L1Loss")) *type = PF_LOSS_L1;
    else if (!strcmp(name, "MSELoss")) *type = PF_LOSS_MSE;
    else if (!strcmp(name, "CharbonnierLoss")) *type = PF_LOSS_CHARBONNIER;
    else return -1;
    return 0;
}

/* Per-element loss and derivative of one difference. */
static inline float elem(const pf_loss *l, float diff, float *deriv) {
    switch (l->type) {
    case PF_LOSS_L1:
        *deriv = diff > 0.0f ? 1.0f : diff < 0.0f ? -1.0f : 0.0f;
        return fabsf(diff);
    case PF_LOSS_MSE:
        *deriv = 2.0f * diff;
        return diff * diff;
    default: {
        float r = sqrtf(diff * diff + l->eps);
        *deriv = diff / r;
        return r;
    }
    }
}

double pf_loss_forward_backward(const pf_loss *l, const float *out, const uint8_t *gt, int n,
                                int frames, int h, int w, const float *mean, float range,
                                int b, float *d_out) {
    int C = 3 * frames;
    size_t count = (size_t)n * (size_t)C * (size_t)h * (size_t)w;
    float gscale = l->weight / (float)count / (mean ? range : 1.0f);
    double sum = 0.0;
    memset(d_out, 0, pf_blk_numel(n, C, h, w, b) * sizeof(float));
    for (int in = 0; in < n; in++)
        for (int c = 0; c < C; c++) {
            double csum = 0.0;
            int t = c / 3, k = c % 3;
            for (int y = 0; y < h; y++) {
                const uint8_t *g = gt + ((((size_t)in * frames + t) * h + y) * w) * 3 + k;
                size_t o = pf_blk_off(in, c, y, 0, C, h, w, b);
                for (int x = 0; x < w; x++, o += (size_t)b) {
                    float pred = mean ? out[o] / range + mean[k] : out[o];
                    float deriv;
                    csum += elem(l, pred - (float)g[(size_t)x * 3] / 255.0f, &deriv);
                    d_out[o] = deriv * gscale;
                }
            }
            sum += csum;
        }
    return sum / (double)count * l->weight;
}

double pf_loss_value(const pf_loss *l, const float *y, const float *g, size_t count) {
    double sum = 0.0;
    float deriv;
    for (size_t i = 0; i < count; i++) sum += elem(l, y[i] - g[i], &deriv);
    return sum / (double)count * l->weight;
}
