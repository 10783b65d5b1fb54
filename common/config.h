/*  config — the job configuration: YAML in, one validated C struct out.

    Every role of a job reads the same resolved YAML text (the coordinator sends it in WELCOME),
    so every process sees the same `pf_config`. Keys follow MMagic/BasicSR names; each key is
    one row of the key table (common/config_keys.h), which docs/config.md's tables are
    generated from.

    Validation is strict: an unknown key, a wrong type, a missing required key, an out-of-range
    value or a path that does not exist is an error `file:line: key.path: what is wrong`, and the
    job stops before any process starts. Every key accepted here is honoured by some role.
*/
#ifndef PF_CONFIG_H
#define PF_CONFIG_H

#include "common/config_types.h"

#include <stddef.h>
#include <stdint.h>

/* Every field at its default (what a config that gives only the required keys gets); the
   required ones (model.type, scale, data folders, ...) are left empty. For programs that build
   a pf_config in code (tests, benchmarks). */
void pf_config_defaults(pf_config *cfg);

/* Parse and validate YAML `text` (named `path` in messages; paths in the file are resolved
   relative to the current directory). Fills `cfg` with defaults first. Returns 0, or -1 with
   `err` = "path:line: key: what is wrong". `check_paths`: also require folders to exist.
   The text may come from the network (WELCOME): it is parsed in-process by libyaml
   (common/yaml_tree.h), chosen because 10 minutes of fuzzing found it neither crashing nor
   hanging where libfyaml 0.7.12 did both; aliases, a second document, nesting deeper than 16
   and texts over 1 MiB are refused. */
int pf_config_parse(pf_config *cfg, const char *path, const char *text, size_t len,
                    int check_paths, char *err, size_t errlen);

/* Whether cfg can train: `pixflow train` (pf_job_prepare) needs the keys a test config may
   leave out (rows flagged PF_KF_TO_TRAIN, one of total_iters / total_epochs, data.train);
   `pixflow test` needs only model, data.test and work_dir, as BasicSR's test options. Returns
   0, or -1 with err = "PATH: `pixflow train` needs KEYS, missing from the config (...)"
   naming every missing key. A config with a `gan` section trains like any other (the worker
   runs the GAN step, worker/gan_state.h). */
int pf_config_check_train(const pf_config *cfg, char *err, size_t errlen);

/* Read the file at `path` and parse it (pf_config_parse with check_paths = 1). */
int pf_config_load(pf_config *cfg, const char *path, char *err, size_t errlen);

/* Write the resolved config (every key, defaults filled in) as YAML into a malloc'd string.
   Parsing that string gives back an equal struct. Returns NULL only when out of memory. */
char *pf_config_to_yaml(const pf_config *cfg);

/* The value of key `path` ("model.type", "data.train.gt_patch_size", "security.curve") as the
   resolved YAML writes it, strings unquoted and null as "", into `out`. -1 for a path that is
   not a key with one value (a section, the degradation steps, custom_keys). */
int pf_config_get(const pf_config *cfg, const char *path, char *out, size_t size);

/* The key tables of docs/config.md, generated from the key table: one markdown table with a
   row per key for each of `what` (a section path: its keys; a key path: that key), aliases as
   rows of their own. malloc'd; NULL when an entry names neither, or out of memory. */
char *pf_config_reference(const char *const *what, int n);

/* docs/models.md's table of the network types (common/networks.h): a row per type with its
   scales, what it trains on, the implementation it follows and its model keys with their
   defaults. malloc'd; NULL when out of memory. */
char *pf_config_networks_reference(void);

/* 1 when a data.*.type names a video dataset (REDSRecurrentDataset, Vimeo90KRecurrentDataset,
   VideoRecurrentTestDataset, RealESRGANVideoDataset: common/video_dataset.h). */
int pf_config_is_video_set(const char *type);

/* 1 when a data.*.type is a sliding-window video set (REDSDataset, VideoTestDataset: a center
   frame's window of num_frame LQ frames, GT the center frame only; docs/video.md). */
int pf_config_is_window_set(const char *type);

/* Frames of one training sample: data.train.num_frame for a video training set, else 1.
   Batches hold n x this x patch x patch x 3 bytes of GT (likewise LQ). */
int pf_config_train_frames(const pf_config *cfg);
#endif
