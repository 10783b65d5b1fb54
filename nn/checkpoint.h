/*  checkpoint — what a checkpoint holds and how a model and its optimiser get back to it
    (the worker resuming, the eval hook and `pixflow test` loading weights).

    Weights file (`iter_N.safetensors`): every model tensor under the reference implementation's
    name (BasicSR state_dict), F32; with ema_decay > 0 also the EMA of every tensor under
    `params_ema.<name>` (BasicSR saves `params` and `params_ema`; pf_model_load_weights, and so
    load_from, skips them; evaluation and `pixflow test` prefer them). `__metadata__`: format
    "pixflow-1", iter (iterations completed), epoch, config_hash (hex FNV-1a of the resolved
    config without resume_from, load_from, resume_optim, work_dir, log_level), model, scale,
    learning_rate (the rate of the last step), seed, next_iter (the sampler position: the next
    global iteration to train), adam_step (the optimiser's step count, any type).
    Optimiser file (`iter_N.optim.safetensors`), torch's state names: Adam and AdamW
    `<name>.exp_avg` and `<name>.exp_avg_sq`, SGD with momentum `<name>.momentum_buffer`, plain
    SGD nothing; metadata optimizer (the type; absent in older files: Adam) and adam_step.

    Everything else (LR schedule position, sampler permutation, augmentation draws) is a pure
    function of the iteration and the seed, so (weights, optimiser, iter) restore a run exactly.

    The checks and copies by name work on the network description (nn/net.h: the parameter
    table and buffers pf_net_build gives) and a flat host buffer of its parameters, so a caller
    that holds no pf_model (the coordinator, `pixflow test` before it starts workers, the
    worker on a GPU) checks, loads and writes weights from the description alone; the pf_model
    functions wrap them.
*/
#ifndef PF_NN_CHECKPOINT_H
#define PF_NN_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/optim.h"

/* Serialise the weights (and, when `optim` is not NULL, the optimiser) into malloc'd safetensors
   buffers. Returns 0, or -1 with err. */
int pf_ckpt_serialize(const pf_config *cfg, pf_model *m, const pf_optim *optim, int64_t iter,
                       int64_t epoch, double learning_rate, void **weights, size_t *weights_len,
                       void **optim_buf, size_t *optim_len, char *err, size_t errlen);

/* Load weights from a safetensors file into `m` (names and shapes must match exactly). When
   `iter` is not NULL also read the metadata iteration into it. Returns 0 or -1 with err. */
int pf_ckpt_load_weights(pf_model *m, const char *path, int64_t *iter, char *err,
                          size_t errlen);

/* Load the optimiser file that belongs to weights file `weights_path` into `optim` (state and
   step); the file's optimizer type must be optim's. Returns 0 or -1 with err. */
int pf_ckpt_load_optim(pf_optim *optim, pf_model *m, const char *weights_path, char *err,
                        size_t errlen);

/* When optim->ema: load it from weights file `path` (params_ema.*), or, for a checkpoint
   without them, copy the model's (already loaded) parameters, with a warning. Returns 0 or -1
   with err. */
int pf_ckpt_load_ema(pf_optim *optim, pf_model *m, const char *path, char *err, size_t errlen);

/* For evaluation: load `path`'s EMA weights (params_ema.*) when it has them, else its plain
   weights; *ema says which. Returns 0 or -1 with err. */
int pf_ckpt_load_eval_weights(pf_model *m, const char *path, int *ema, char *err,
                               size_t errlen);

/* What scripts/pth2safetensors.py recorded about the weights file `path`: " (converted from
   SOURCE: NAMES)", NAMES its __metadata__ 'source_names' (the parameter-name set it found, e.g.
   "MMagic's BasicVSRPlusPlusNet (mid_channels 64, num_blocks 7), renamed to BasicSR's
   (PixFlow's)"), for the log line of load_from; "" for a file without it or unreadable. */
void pf_ckpt_source_names(const char *path, char *buf, size_t len);

/* Before any process starts: whether the weights file `path` (load_from, resume_from,
   `pixflow test --checkpoint`) fits the network cfg builds, without loading it into a model
   that trains. Returns 0, or -1 with err: the file's own error (unreadable, not safetensors,
   a PyTorch .pth and how to convert it) or pf_ckpt_check_net's mismatch message. Builds only
   the description (pf_net_build), no model. */
int pf_ckpt_check_weights(const pf_config *cfg, const char *path, char *err,
                           size_t errlen);

/* ---- against the description ---------------------------------------------------------- */
struct pf_safetensors;

/* Whether a safetensors file's tensors fit net (built from cfg) by reference name: every
   tensor of net's parameter table present with the same shape and no extra tensors (tensors
   named PF_EMA_PREFIX + name, a checkpoint's EMA weights, are ignored; the file's dtypes are
   F32, pf_safetensors_load refuses others). The network's buffers (pf_net_buffer) may be
   absent (PixFlow's checkpoints before they were written); when present, plain or under
   PF_EMA_PREFIX, they must have the buffer's shape and bit-identical values. Returns 0, or -1
   with one err: the file name, the config's network (pf_model_describe), the counts of
   mis-shaped, missing and unexpected tensors (and of buffers with other values, each named
   with both values), the first few of each ("conv_first.weight: checkpoint [64, 3, 3, 3],
   config wants [32, 3, 3, 3]"), and what the file's __metadata__ says it holds ("arch",
   written by PixFlow's checkpoints; older ones: "model" and "scale"). */
int pf_ckpt_check_net(const pf_net *net, const pf_config *cfg, const struct pf_safetensors *st,
                      char *err, size_t errlen);

/* pf_ckpt_check_net, then copy every tensor of net's table from st into params (net->n_params
   floats, at each tensor's offset); on a mismatch params is untouched. Returns 0 or -1. */
int pf_ckpt_load_net(const pf_net *net, const pf_config *cfg, float *params,
                     const struct pf_safetensors *st, char *err, size_t errlen);

/* The checkpoint functions above on a description and host buffers instead of a pf_model
   (the worker on a GPU holds no CPU model; the pf_model forms call these): params holds
   net->n_params floats in net's order; cfg the config net was built from. */
int pf_ckpt_serialize_net(const pf_config *cfg, const pf_net *net, const float *params,
                          const pf_optim *optim, int64_t iter, int64_t epoch,
                          double learning_rate, void **weights, size_t *weights_len,
                          void **optim_buf, size_t *optim_len, char *err, size_t errlen);
/* The optimiser file alone (what pf_ckpt_serialize_net writes as *optim_buf): optim's state
   under net's parameter names, metadata iter, adam_step, optimizer. A GAN job's optim_d over
   net_d (pf_gan_d_net) goes through it. Returns 0, or -1 with err (out of memory). */
int pf_ckpt_serialize_optim_net(const pf_net *net, const pf_optim *optim, int64_t iter,
                                void **optim_buf, size_t *optim_len, char *err,
                                size_t errlen);
int pf_ckpt_load_weights_net(const pf_net *net, const pf_config *cfg, float *params,
                             const char *path, int64_t *iter, char *err, size_t errlen);
int pf_ckpt_load_optim_net(pf_optim *optim, const pf_net *net, const char *weights_path,
                           char *err, size_t errlen);
/* The fallback EMA (a checkpoint without one) is a copy of params. */
int pf_ckpt_load_ema_net(pf_optim *optim, const pf_net *net, const float *params,
                         const char *path, char *err, size_t errlen);

/* BasicVSR: copy SPyNet's weights (every tensor of net named "spynet.*") from the safetensors
   file `path` (model.spynet_pretrained) into params, each found under its own name or without
   the "spynet." prefix (BasicSR's spynet_sintel_final file converted: "basic_module.0.
   basic_module.0.weight"); other tensors of the file (SPyNet's mean and std buffers) are
   ignored. Returns 0, or -1 with err naming the file and the first tensor that is missing or
   mis-shaped (params is then untouched), or when net has no SPyNet. */
int pf_ckpt_load_spynet(const pf_net *net, float *params, const char *path, char *err,
                        size_t errlen);
#endif
