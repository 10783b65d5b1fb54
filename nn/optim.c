/*  optim — see optim.h. Each update follows the torch 1.13 single-tensor functions, in float
    as torch does on float tensors, with the Python-float scalars in double:
    Adam (_single_tensor_adam):
      g = grad + weight_decay * p
      m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
      denom = sqrt(v) / sqrt(1 - beta2^t) + eps
      p -= lr / (1 - beta1^t) * m / denom
    AdamW (_single_tensor_adamw): p *= 1 - lr * weight_decay first, then Adam with g = grad.
    SGD (_single_tensor_sgd):
      g = grad + weight_decay * p
      b = g on the first step, else b = momentum b + (1 - dampening) g
      g = g + momentum b (nesterov) or g = b;   p -= lr g
    A group's lr and weight_decay are the settings times its lr_mult and decay_mult (MMCV
    DefaultOptimizerConstructor). A group with lr_mult 0 has its state updated as torch
    would with lr 0, but its parameters are not touched at all (torch's p - 0 * x equals p
    for finite x; skipping the write makes it exact for every x). */
#include "nn/optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

int pf_optim_init(pf_optim *o, size_t n, const pf_optim_settings *s) {
    memset(o, 0, sizeof *o);
    o->s = *s;
    o->n = n;
    int ok = 1;
    if (s->kind == PF_OPTIM_ADAM || s->kind == PF_OPTIM_ADAMW) {
        o->exp_avg = zeros(n);
        o->exp_avg_sq = zeros(n);
        ok = o->exp_avg && o->exp_avg_sq;
    } else if (s->momentum != 0.0f) {
        o->momentum_buffer = zeros(n);
        ok = o->momentum_buffer != NULL;
    }
    if (!ok) {
        pf_optim_free(o);
        return -1;
    }
    return 0;
}

int pf_optim_set_groups(pf_optim *o, const pf_optim_group *g, int n_groups) {
    size_t at = 0;
    for (int i = 0; i < n_groups; i++) {
        if (g[i].offset != at) return -1;
        at += g[i].numel;
    }
    if (at != o->n) return -1;
    pf_optim_group *copy = malloc((size_t)(n_groups ? n_groups : 1) * sizeof *copy);
    if (!copy) return -1;
    memcpy(copy, g, (size_t)n_groups * sizeof *copy);
    free(o->groups);
    o->groups = copy;
    o->n_groups = n_groups;
    return 0;
}

int pf_optim_ema_init(pf_optim *o, float decay, const float *params) {
    if (!o->ema) o->ema = malloc((o->n ? o->n : 1) * sizeof(float));
    if (!o->ema) return -1;
    memcpy(o->ema, params, o->n * sizeof(float));
    o->ema_decay = decay;
    return 0;
}

/* Adam/AdamW over one range; `write` 0 updates the moments only (lr_mult 0). */
static void adam_range(const pf_optim *o, size_t off, size_t cnt, float *params,
                       const float *grads, float lr, float wd, int write, int64_t step) {
    double bc1 = 1.0 - pow((double)o->s.beta1, (double)step);
    double bc2 = 1.0 - pow((double)o->s.beta2, (double)step);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1 = o->s.beta1, b2 = o->s.beta2, eps = o->s.eps;
    float *m = o->exp_avg + off, *v = o->exp_avg_sq + off, *p = params + off;
    const float *gr = grads + off;
    int decoupled = o->s.kind == PF_OPTIM_ADAMW;
    float shrink = (float)(1.0 - (double)lr * (double)wd);
    for (size_t i = 0; i < cnt; i++) {
        float g = gr[i];
        if (decoupled) {
            if (write && wd != 0.0f) p[i] *= shrink;
        } else if (wd != 0.0f) {
            g += wd * p[i];
        }
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        if (write) p[i] -= step_size * (m[i] / denom);
    }
}

static void sgd_range(const pf_optim *o, size_t off, size_t cnt, float *params,
                      const float *grads, float lr, float wd, int write, int64_t step) {
    float mom = o->s.momentum, damp = 1.0f - o->s.dampening;
    float *b = o->momentum_buffer ? o->momentum_buffer + off : NULL, *p = params + off;
    const float *gr = grads + off;
    int first = step == 1, nesterov = o->s.nesterov;
    for (size_t i = 0; i < cnt; i++) {
        float g = gr[i];
        if (wd != 0.0f) g += wd * p[i];
        if (b) {
            b[i] = first ? g : mom * b[i] + damp * g;
            g = nesterov ? g + mom * b[i] : b[i];
        }
        if (write) p[i] -= lr * g;
    }
}

void pf_optim_step(pf_optim *o, float *params, const float *grads, float lr) {
    o->step++;
    pf_optim_group whole = { 0, o->n, 1.0f, 1.0f, 0 };
    const pf_optim_group *gs = o->n_groups ? o->groups : &whole;
    int ng = o->n_groups ? o->n_groups : 1;
    for (int k = 0; k < ng; k++) {
        const pf_optim_group *g = &gs[k];
        if (o->step <= g->start) continue;      /* not yet in the optimisation */
        /* lr * mult in double, as MMCV's Python floats; mult 1 keeps lr bit-identical. */
        float glr = g->lr_mult == 1.0f ? lr : (float)((double)lr * g->lr_mult);
        float gwd = g->decay_mult == 1.0f ? o->s.weight_decay
                                          : (float)((double)o->s.weight_decay * g->decay_mult);
        int write = g->lr_mult != 0.0f;
        int64_t step = o->step - (g->start > 0 ? g->start : 0);
        if (o->s.kind == PF_OPTIM_SGD)
            sgd_range(o, g->offset, g->numel, params, grads, glr, gwd, write, step);
        else
            adam_range(o, g->offset, g->numel, params, grads, glr, gwd, write, step);
    }
    pf_optim_ema_update(o, params);
}

void pf_optim_ema_update(pf_optim *o, const float *params) {
    if (!o->ema) return;
    pf_optim_group whole = { 0, o->n, 1.0f, 1.0f, 0 };
    const pf_optim_group *gs = o->n_groups ? o->groups : &whole;
    int ng = o->n_groups ? o->n_groups : 1;
    /* BasicSR model_ema: ema.mul_(decay).add_(p, alpha=1 - decay). */
    float d = o->ema_decay, a = (float)(1.0 - (double)o->ema_decay);
    for (int k = 0; k < ng; k++) {
        /* a frozen range, or one not yet in the optimisation (start > 0: o->step is at
           least 1 here after pf_optim_step's increment, and may be 0 in the EMA alone) */
        if (gs[k].lr_mult == 0.0f || (gs[k].start > 0 && o->step <= gs[k].start)) continue;
        float *e = o->ema + gs[k].offset;
        const float *p = params + gs[k].offset;
        for (size_t i = 0; i < gs[k].numel; i++) e[i] = e[i] * d + a * p[i];
    }
}

void pf_optim_free(pf_optim *o) {
    free(o->exp_avg);
    free(o->exp_avg_sq);
    free(o->momentum_buffer);
    free(o->groups);
    free(o->ema);
    o->exp_avg = o->exp_avg_sq = o->momentum_buffer = o->ema = NULL;
    o->groups = NULL;
    o->n_groups = 0;
}

const char *pf_optim_kind_name(pf_optim_kind k) {
    return k == PF_OPTIM_ADAMW ? "AdamW" : k == PF_OPTIM_SGD ? "SGD" : "Adam";
}

double pf_clip_grad_norm(float *grads, size_t n, float max_norm) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)grads[i] * grads[i];
    float norm = (float)sqrt(sum);
    float coef = max_norm / (norm + 1e-6f);   /* float tensors in torch */
    if (coef < 1.0f)
        for (size_t i = 0; i < n; i++) grads[i] *= coef;
    return norm;
}

int pf_adam_init(pf_adam *a, size_t n, float beta1, float beta2, float eps, float weight_decay) {
    pf_optim_settings s = { PF_OPTIM_ADAM, beta1, beta2, eps, weight_decay, 0, 0, 0 };
    return pf_optim_init(a, n, &s);
}

void pf_adam_step(pf_adam *a, float *params, const float *grads, float lr) {
    pf_optim_step(a, params, grads, lr);
}

void pf_adam_free(pf_adam *a) { pf_optim_free(a); }
