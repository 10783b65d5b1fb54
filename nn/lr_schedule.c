/*  lr_schedule — MMCV LrUpdaterHook semantics with by_epoch=False (see lr_schedule.h). */
#include "nn/lr_schedule.h"
#include <math.h>
#include <string.h>

static double regular_lr(const pf_config *cfg, double base, int64_t iter) {
    if (!strcmp(cfg->lr_policy, "Step")) {
        /* MMCV StepLrUpdaterHook: exponent = number of milestones <= iter */
        int e = 0;
        for (int i = 0; i < cfg->n_lr_step; i++)
            if (iter >= cfg->lr_step[i]) e++;
        return base * pow((double)cfg->lr_gamma, e);
    }
    if (!strcmp(cfg->lr_policy, "CosineRestart")) {
        /* MMCV CosineRestartLrUpdaterHook + annealing_cos */
        int64_t start = 0;
        for (int k = 0; k < cfg->n_lr_periods; k++) {
            int64_t end = start + cfg->lr_periods[k];
            if (iter < end) {
                double alpha = (double)(iter - start) / (double)cfg->lr_periods[k];
                if (alpha > 1.0) alpha = 1.0;
                double w = cfg->lr_restart_weights[k];
                double min_lr = cfg->lr_min;
                return min_lr + 0.5 * w * (base - min_lr) * (cos(M_PI * alpha) + 1.0);
            }
            start = end;
        }
        return cfg->lr_min; /* past the last period (MMCV raises): stay at min_lr */
    }
    return base; /* Fixed */
}

double pf_lr_at(const pf_config *cfg, int64_t iter) {
    return pf_lr_at_base(cfg, cfg->learning_rate, iter);
}

double pf_lr_at_base(const pf_config *cfg, double base, int64_t iter) {
    double lr = regular_lr(cfg, base, iter);
    if (!strcmp(cfg->lr_warmup, "linear") && iter < cfg->lr_warmup_iters) {
        double k = (1.0 - (double)iter / (double)cfg->lr_warmup_iters) *
                   (1.0 - (double)cfg->lr_warmup_ratio);
        lr *= 1.0 - k;
    }
    return lr;
}
