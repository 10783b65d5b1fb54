/*  lr_schedule — the learning rate as a pure function of the iteration, so a resumed run
    continues the curve exactly (MMCV's LrUpdaterHook semantics, by_epoch=False; iter is the
    0-based iteration about to run, MMCV's runner.iter):
      Fixed:          base
      Step:           base * gamma^(number of milestones m with m <= iter)
      CosineRestart:  periods P_0, P_1, ... with cumulative ends E_k = P_0 + ... + P_k; iter is in
                      the first period k with iter < E_k, progress alpha = (iter - E_{k-1}) / P_k
                      (E_{-1} = 0); lr = min_lr + 0.5 * w_k * (base - min_lr) * (1 + cos(pi *
                      alpha)) (MMCV's CosineRestartLrUpdaterHook with annealing_cos, restart
                      weight w_k; min_lr absolute). Past the last period: min_lr (MMCV raises).
      warmup linear:  for iter < warmup_iters the regular lr above is multiplied by (1 - k),
                      k = (1 - iter / warmup_iters) * (1 - warmup_ratio), so it starts at
                      base * warmup_ratio and reaches the regular lr at warmup_iters (MMCV's
                      get_warmup_lr, 'linear'); from warmup_iters on, the regular lr.
*/
#ifndef PF_LR_SCHEDULE_H
#define PF_LR_SCHEDULE_H
#include <stdint.h>
#include "common/config.h"

/* Learning rate for (0-based) iteration `iter`. */
double pf_lr_at(const pf_config *cfg, int64_t iter);
/* The same schedule (lr_config) from another base rate: a second optimiser's own lr (a GAN
   job's gan.optim_d.lr; BasicSR builds one scheduler per optimiser from the same options, so
   min_lr stays absolute). pf_lr_at(cfg, it) is pf_lr_at_base(cfg, cfg->learning_rate, it). */
double pf_lr_at_base(const pf_config *cfg, double base, int64_t iter);
#endif
