/*  lr_schedule — the learning rate as a pure function of the iteration, so a resumed run
    continues the curve exactly (MMCV's LrUpdaterHook semantics, by_epoch=False):
      Fixed:          base
      Step:           base * gamma^(number of milestones <= iter)
      CosineRestart:  within period k (cumulative boundaries), progress p in [0, 1]:
                      min_lr + 0.5 * (base * w_k - min_lr) * (1 + cos(pi * p))  (MMCV's
                      CosineRestartLrUpdaterHook with restart_weights w_k)
      warmup linear:  for iter < warmup_iters the regular lr is multiplied by
                      1 - (1 - warmup_iters... ratio) as MMCV: k = (1 - iter / warmup_iters) *
                      (1 - warmup_ratio); lr = regular * (1 - k)
*/
#ifndef PF_LR_SCHEDULE_H
#define PF_LR_SCHEDULE_H
#include <stdint.h>
#include "common/config.h"

/* Learning rate for (0-based) iteration `iter`. */
double pf_lr_at(const pf_config *cfg, int64_t iter);
#endif
