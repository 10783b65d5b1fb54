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
   parameter is an error (a typo would otherwise change nothing). Tensors that join the
   optimisation late (pf_optim_group.start: no update, no state, their own step count from
   their first step, as torch's Adam skips a tensor whose grad is None):
    - model.fix_iter (BasicVSR, BasicVSR++): the `spynet.*` tensors sit out steps 1..fix_iter
      (MMagic's train_step);
    - train_cfg.tsa_iter (EDVR) >= 2: every tensor without "fusion" in its name sits out steps
      1..tsa_iter-1, exactly BasicSR's EDVRModel.optimize_parameters, whose 1-based
      current_iter freezes them at 1 and frees them at tsa_iter: the 0-based iterations
      0..tsa_iter-2 train the fusion alone (MMagic's EDVR, counting from 0, freezes one
      iteration more: 0..tsa_iter-1); an error when no tensor is named *fusion*.
   Returns 0 or -1 with err. */
int pf_state_optim_new(const pf_config *cfg, const pf_net *net, const float *params,
                       pf_optim *o, char *err, size_t errlen);

/* MMCV's OptimizerHook clipping (optimizer_config.grad_clip, cfg->grad_clip_max_norm > 0;
   nothing otherwise) of grads (o->n floats, the averaged gradients before pf_optim_step):
   the ranges of o that sit out the coming step (o->step + 1 <= start: fix_iter, tsa_iter)
   have no gradient in torch, so they are zeroed first and take no part in the norm; then
   pf_clip_grad_norm. Returns the norm before clipping, 0 without clipping. */
double pf_state_clip_grads(const pf_config *cfg, const pf_optim *o, float *grads);

/* The index of the custom key of parameter `name`: MMCV's rule, the longest key that is a
   substring of the name, ties to the alphabetically first; -1 when none matches. */
int pf_state_custom_key(const pf_config *cfg, const char *name);
#endif
