/*  optim — Adam over the flat parameter buffer, step-for-step identical in formula to
    torch.optim.Adam (torch 1.13 _single_tensor_adam, amsgrad=False, maximize=False):
      g = grad + weight_decay * p
      m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
      denom = sqrt(v) / sqrt(1 - beta2^t) + eps
      p -= lr / (1 - beta1^t) * m / denom
    Bias corrections are computed in double, as torch does with Python floats. */
#include "nn/optim.h"
#include <math.h>
#include <stdlib.h>

int pf_adam_init(pf_adam *a, size_t n, float beta1, float beta2, float eps, float weight_decay) {
    a->n = n;
    a->beta1 = beta1;
    a->beta2 = beta2;
    a->eps = eps;
    a->weight_decay = weight_decay;
    a->step = 0;
    a->exp_avg = calloc(n ? n : 1, sizeof(float));
    a->exp_avg_sq = calloc(n ? n : 1, sizeof(float));
    if (!a->exp_avg || !a->exp_avg_sq) {
        pf_adam_free(a);
        return -1;
    }
    return 0;
}

void pf_adam_step(pf_adam *a, float *params, const float *grads, float lr) {
    a->step++;
    double bc1 = 1.0 - pow((double)a->beta1, (double)a->step);
    double bc2 = 1.0 - pow((double)a->beta2, (double)a->step);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1 = a->beta1, b2 = a->beta2, eps = a->eps, wd = a->weight_decay;
    float *m = a->exp_avg, *v = a->exp_avg_sq;
    for (size_t i = 0; i < a->n; i++) {
        float g = grads[i];
        if (wd != 0.0f) g += wd * params[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        params[i] -= step_size * (m[i] / denom);
    }
}

void pf_adam_free(pf_adam *a) {
    free(a->exp_avg);
    free(a->exp_avg_sq);
    a->exp_avg = a->exp_avg_sq = NULL;
}
