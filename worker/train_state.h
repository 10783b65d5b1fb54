/*  train_state — the optimiser a worker trains with, built from the config: type,
    hyper-parameters and paramwise_cfg groups. The checkpoint format is nn/checkpoint.h, its
    paths and resume resolution common/checkpoint.h.
*/
#ifndef PF_TRAIN_STATE_H
#define PF_TRAIN_STATE_H
#include <stddef.h>

#include "common/config.h"
#include "nn/net.h"
#include "nn/optim.h"

/* Build the optimiser the config asks for over the flat buffer of net's parameter table
   (nn/net.h; params: its net->n_params floats): type and hyper-parameters, one group per
   tensor with the multipliers of its paramwise_cfg custom key, and the EMA (a copy of params)
   when ema_decay > 0. A custom key that matches no
   parameter is an error (a typo would otherwise change nothing). Returns 0 or -1 with err. */
int pf_state_optim_new(const pf_config *cfg, const pf_net *net, const float *params,
                       pf_optim *o, char *err, size_t errlen);

/* The index of the custom key of parameter `name`: MMCV's rule, the longest key that is a
   substring of the name, ties to the alphabetically first; -1 when none matches. */
int pf_state_custom_key(const pf_config *cfg, const char *name);
#endif
