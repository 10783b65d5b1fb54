/*  train_state — what a checkpoint holds and how a worker gets back to it.

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
*/
#ifndef PF_TRAIN_STATE_H
#define PF_TRAIN_STATE_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "nn/model.h"
#include "nn/optim.h"

/* Serialise the weights (and, when `optim` is not NULL, the optimiser) into malloc'd safetensors
   buffers. Returns 0, or -1 with err. */
int pf_state_serialize(const pf_config *cfg, pf_model *m, const pf_optim *optim, int64_t iter,
                       int64_t epoch, double learning_rate, void **weights, size_t *weights_len,
                       void **optim_buf, size_t *optim_len, char *err, size_t errlen);

/* Resolve cfg->resume_from: "auto" -> work_dir/checkpoints/<name in `latest`>, or "" when no
   checkpoint exists yet; a path stays as it is. Returns 0, or -1 with err (unreadable
   pointer). */
int pf_state_resolve_resume(const pf_config *cfg, char *path, size_t pathlen, char *err,
                            size_t errlen);

/* Load weights from a safetensors file into `m` (names and shapes must match exactly). When
   `iter` is not NULL also read the metadata iteration into it. Returns 0 or -1 with err. */
int pf_state_load_weights(pf_model *m, const char *path, int64_t *iter, char *err,
                          size_t errlen);

/* Load the optimiser file that belongs to weights file `weights_path` into `optim` (state and
   step); the file's optimizer type must be optim's. Returns 0 or -1 with err. */
int pf_state_load_optim(pf_optim *optim, pf_model *m, const char *weights_path, char *err,
                        size_t errlen);

/* When optim->ema: load it from weights file `path` (params_ema.*), or, for a checkpoint
   without them, copy the model's (already loaded) parameters, with a warning. Returns 0 or -1
   with err. */
int pf_state_load_ema(pf_optim *optim, pf_model *m, const char *path, char *err, size_t errlen);

/* Build the optimiser the config asks for over m's flat buffer: type and hyper-parameters,
   one group per tensor with the multipliers of its paramwise_cfg custom key, and the EMA
   (a copy of the current parameters) when ema_decay > 0. A custom key that matches no
   parameter is an error (a typo would otherwise change nothing). Returns 0 or -1 with err. */
int pf_state_optim_new(const pf_config *cfg, pf_model *m, pf_optim *o, char *err,
                       size_t errlen);


/* The index of the custom key of parameter `name`: MMCV's rule, the longest key that is a
   substring of the name, ties to the alphabetically first; -1 when none matches. */
int pf_state_custom_key(const pf_config *cfg, const char *name);

/* For evaluation: load `path`'s EMA weights (params_ema.*) when it has them, else its plain
   weights; *ema says which. Returns 0 or -1 with err. */
int pf_state_load_eval_weights(pf_model *m, const char *path, int *ema, char *err,
                               size_t errlen);

/* Before any process starts: whether the weights file `path` (load_from, resume_from,
   `pixflow test --checkpoint`) fits the network cfg builds, without loading it into a model
   that trains. Returns 0, or -1 with err: the file's own error (unreadable, not safetensors,
   a PyTorch .pth and how to convert it) or pf_model_check_weights's mismatch message. */
int pf_state_check_weights(const pf_config *cfg, const char *path, char *err,
                           size_t errlen);

/* Before resuming from `path`: warn (log) when the checkpoint was written under another config
   (config_hash) or seed, since the resumed run then cannot equal an uninterrupted one. Returns
   0, or -1 with err when the file cannot be read. */
int pf_state_check_resume(const pf_config *cfg, const char *path, char *err, size_t errlen);

/* "x/iter_100.safetensors" -> "x/iter_100.optim.safetensors". */
void pf_state_optim_path(const char *weights_path, char *out, size_t outlen);
#endif
