/*  model_source — what a user names as "the model" on the command line (`pixflow export`,
    `pixflow upscale`): WEIGHTS_OR_WORK_DIR [--config CONFIG], resolved to a config and a
    weights file, loaded into a CPU model with the weights evaluation uses (params_ema when
    the file has them).
*/
#ifndef PF_CLI_MODEL_SOURCE_H
#define PF_CLI_MODEL_SOURCE_H
#include <stddef.h>

#include "common/config.h"
#include "nn/model.h"

/* The config and weights files of `src`:
   - a folder (a work dir): config DIR/config.yaml, weights DIR/checkpoints/<the name in
     `latest`>, or without `latest` the iter_N.safetensors with the largest N;
   - a file (a .safetensors): weights src; config beside a work dir's checkpoints/
     (dirname(src)/../config.yaml when src's folder is named "checkpoints").
   config_opt (--config; NULL: none) replaces the config either way. Returns 0, or -1 with err
   naming what is missing ("work_dirs/x: no checkpoints/latest and no
   checkpoints/iter_N.safetensors"). */
int pf_model_source_resolve(const char *src, const char *config_opt, char *cfg_path,
                            size_t cfg_len, char *weights, size_t weights_len, char *err,
                            size_t errlen);

/* pf_model_source_resolve, then load the config into *cfg (its data folders need not exist),
   check the weights file against its network (pf_ckpt_check_weights: names and shapes),
   build the model and load the weights (pf_ckpt_load_eval_weights: params_ema.* preferred;
   *ema says which, may be NULL). The model only infers (pf_model_new_infer), in `precision`
   (0 fp32, 1 bf16: test_cfg.precision's values, which it replaces in *cfg) or, for -1, the
   config's test_cfg.precision.
   Returns the model (pf_model_destroy), or NULL with err naming the file, or naming
   "--precision" (precision 1) or test_cfg.precision when bf16 meets a CPU without a bf16
   unit. */
pf_model *pf_model_source_load(const char *src, const char *config_opt, int precision,
                               pf_config *cfg, int *ema, char *err, size_t errlen);

/* pf_model_new_infer for cfg, whose test_cfg.precision the caller has set, with a refusal of
   bf16 on a CPU without a bf16 unit naming `what`, where the precision came from
   ("--precision" or "test_cfg.precision"): the model is built fp32, then set to it
   (pf_model_set_precision; cfg is changed meanwhile, as it was on return). Returns the model
   (no weights yet), or NULL with err. */
pf_model *pf_model_source_build(pf_config *cfg, const char *what, char *err, size_t errlen);
#endif
