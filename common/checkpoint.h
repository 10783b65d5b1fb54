/*  checkpoint — where a run's checkpoints are and whether one fits the config, without a
    model: resume_from resolution (work_dir/checkpoints/latest), the optimiser file's name, the
    config hash every checkpoint records. Used by the coordinator (start-up checks), the
    worker, the eval hook and the front end; what a checkpoint holds and loading it into a
    model is nn/checkpoint.h.
*/
#ifndef PF_COMMON_CHECKPOINT_H
#define PF_COMMON_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* Hash (FNV-1a 64 of the resolved config's YAML) of what decides the training trajectory:
   the config without the keys that only say where to start or where to write (resume_from,
   load_from, gan.load_from_d, resume_optim, work_dir, log_level). Stored as config_hash in
   every checkpoint. */
uint64_t pf_ckpt_config_hash(const pf_config *cfg);

/* Resolve cfg->resume_from: "auto" -> work_dir/checkpoints/<name in `latest`>, or "" when no
   checkpoint exists yet; a path stays as it is. Returns 0, or -1 with err (unreadable
   pointer). */
int pf_ckpt_resolve_resume(const pf_config *cfg, char *path, size_t pathlen, char *err,
                            size_t errlen);

/* Before resuming from `path`: warn (log) when the checkpoint was written under another config
   (config_hash) or seed, since the resumed run then cannot equal an uninterrupted one. Returns
   0, or -1 with err when the file cannot be read. */
int pf_ckpt_check_resume(const pf_config *cfg, const char *path, char *err, size_t errlen);

/* "x/iter_100.safetensors" -> "x/iter_100.optim.safetensors". */
void pf_ckpt_optim_path(const char *weights_path, char *out, size_t outlen);

/* A GAN job's discriminator beside its weights file (issue 41, docs/gan.md):
   "x/iter_100.safetensors" -> "x/iter_100.net_d.safetensors" (net_d's state_dict); its
   optimiser file is pf_ckpt_optim_path of that, "x/iter_100.net_d.optim.safetensors". */
void pf_ckpt_net_d_path(const char *weights_path, char *out, size_t outlen);
#endif
