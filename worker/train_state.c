/*  train_state — see train_state.h. */
#include "worker/train_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int pf_state_custom_key(const pf_config *cfg, const char *name) {
    int best = -1;
    for (int i = 0; i < cfg->n_custom_keys; i++) {
        const char *k = cfg->custom_keys[i].key;
        if (!strstr(name, k)) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        const char *b = cfg->custom_keys[best].key;
        size_t lk = strlen(k), lb = strlen(b);
        if (lk > lb || (lk == lb && strcmp(k, b) < 0)) best = i;
    }
    return best;
}

int pf_state_optim_new(const pf_config *cfg, const pf_net *net, const float *params,
                       pf_optim *o, char *err, size_t errlen) {
    pf_optim_settings s = {
        .kind = !strcmp(cfg->optim_type, "AdamW") ? PF_OPTIM_ADAMW
              : !strcmp(cfg->optim_type, "SGD")   ? PF_OPTIM_SGD
                                                  : PF_OPTIM_ADAM,
        .beta1 = cfg->betas[0], .beta2 = cfg->betas[1], .eps = cfg->eps,
        .weight_decay = cfg->weight_decay, .momentum = cfg->momentum,
        .dampening = cfg->dampening, .nesterov = cfg->nesterov,
    };
    size_t np = net->n_params;
    int n = net->n_tensors;
    pf_optim_group *g = calloc((size_t)n + 1, sizeof *g);
    int used[PF_MAX_CUSTOM_KEYS] = { 0 };
    int n_tsa_frozen = 0;       /* tensors out of steps 1..tsa_iter-1 */
    if (!g || pf_optim_init(o, np, &s) != 0) {
        free(g);
        snprintf(err, errlen, "out of memory for the optimiser");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const pf_param_info *p = &net->tensors[i];
        int k = pf_state_custom_key(cfg, p->name);
        g[i] = (pf_optim_group){ p->offset, p->numel, 1.0f, 1.0f, 0 };
        /* BasicVSR: SPyNet frozen for the first fix_iter iterations (MMagic's BasicVSR
           train_step: requires_grad off until then; torch's Adam then skips it and counts its
           steps from its first gradient) */
        if (cfg->fix_iter > 0 && !strncmp(p->name, "spynet.", 7)) g[i].start = cfg->fix_iter;
        /* EDVR: BasicSR's EDVRModel.optimize_parameters(current_iter) sets requires_grad off
           on every tensor without 'fusion' in its name at current_iter 1 and back on at
           current_iter tsa_iter: they sit out steps 1..tsa_iter-1 */
        if (cfg->tsa_iter > 1 && !strstr(p->name, "fusion")) {
            g[i].start = cfg->tsa_iter - 1;
            n_tsa_frozen++;
        }
        if (k >= 0) {
            g[i].lr_mult = cfg->custom_keys[k].lr_mult;
            g[i].decay_mult = cfg->custom_keys[k].decay_mult;
            used[k]++;
        }
    }
    int rc = 0;
    for (int k = 0; k < cfg->n_custom_keys && rc == 0; k++) {
        if (used[k]) {
            pf_info("paramwise_cfg: '%s' (lr_mult %g, decay_mult %g) applies to %d tensor%s",
                    cfg->custom_keys[k].key, cfg->custom_keys[k].lr_mult,
                    cfg->custom_keys[k].decay_mult, used[k], used[k] > 1 ? "s" : "");
            continue;
        }
        snprintf(err, errlen, "optimizers.paramwise_cfg.custom_keys: '%s' is in no parameter "
                 "name of %s (names like '%s')", cfg->custom_keys[k].key, cfg->model_type,
                 net->tensors[0].name);
        rc = -1;
    }
    if (rc == 0 && n_tsa_frozen == n) {
        snprintf(err, errlen, "train_cfg.tsa_iter: no tensor of %s has 'fusion' in its name, "
                 "so nothing would train in iterations 1..%lld", cfg->model_type,
                 (long long)cfg->tsa_iter - 1);
        rc = -1;
    }
    if (rc == 0 && n_tsa_frozen > 0)
        pf_info("train_cfg.tsa_iter %lld: iterations 1..%lld train only the %d tensors named "
                "*fusion*, %d others join at iteration %lld", (long long)cfg->tsa_iter,
                (long long)cfg->tsa_iter - 1, n - n_tsa_frozen, n_tsa_frozen,
                (long long)cfg->tsa_iter);
    if (rc == 0 && (cfg->n_custom_keys > 0 || cfg->fix_iter > 0 || n_tsa_frozen > 0) &&
        pf_optim_set_groups(o, g, n) != 0) {
        snprintf(err, errlen, "out of memory for the optimiser");
        rc = -1;
    }
    if (rc == 0 && cfg->ema_decay > 0 &&
        pf_optim_ema_init(o, cfg->ema_decay, params) != 0) {
        snprintf(err, errlen, "out of memory for the EMA weights");
        rc = -1;
    }
    free(g);
    if (rc != 0) pf_optim_free(o);
    return rc;
}

double pf_state_clip_grads(const pf_config *cfg, const pf_optim *o, float *grads) {
    if (cfg->grad_clip_max_norm <= 0) return 0;
    for (int k = 0; k < o->n_groups; k++)
        if (o->step + 1 <= o->groups[k].start)
            memset(grads + o->groups[k].offset, 0, o->groups[k].numel * sizeof(float));
    return pf_clip_grad_norm(grads, o->n, cfg->grad_clip_max_norm);
}
