/*  job_prepare — pf_job_prepare (coordinator.h): the checks a training job must pass before
    any of its processes starts, shared by the front end (`pixflow train`) and the
    coordinator: the config, the resume point, the weights to start from (against the
    network's description, nn/checkpoint.h, no model built), the train and eval sets, the
    sampler, work_dir.
*/
#include "coordinator/coordinator.h"

#include <stdio.h>
#include <sys/stat.h>

#include "common/checkpoint.h"
#include "common/util.h"
#include "nn/checkpoint.h"

int pf_job_prepare(pf_config *cfg, const char *cfg_path, const char *resume, int workers,
                   pf_dataset *train, pf_sampler *sampler, int64_t *total_iters, char *err,
                   size_t errlen) {
    if (pf_config_load(cfg, cfg_path, err, errlen) != 0 ||
        pf_config_check_train(cfg, err, errlen) != 0)
        return -1;
    /* Resolve the resume point here, once, so every role is handed a concrete file: "auto"
       becomes work_dir/checkpoints/<latest> or, with no checkpoint yet, a fresh start (from
       load_from when set). A checkpoint to resume from wins over load_from. */
    if (resume) snprintf(cfg->resume_from, sizeof cfg->resume_from, "%s", resume);
    cfg->resume_asked = cfg->resume_from[0] != '\0';
    if (cfg->resume_from[0]) {
        char path[PF_PATH_MAX];
        struct stat st;
        if (pf_ckpt_resolve_resume(cfg, path, sizeof path, err, errlen) != 0) return -1;
        if (path[0] && stat(path, &st) != 0) {
            snprintf(err, errlen, "%s: resume_from: no checkpoint '%s'", cfg_path, path);
            return -1;
        }
        snprintf(cfg->resume_from, sizeof cfg->resume_from, "%s", path);
        if (path[0]) cfg->load_from[0] = '\0';
    }
    /* The weights to start from must fit the network, checked here rather than in every
       worker after the whole job has started. */
    const char *weights = cfg->resume_from[0] ? cfg->resume_from : cfg->load_from;
    if (weights[0] && pf_ckpt_check_weights(cfg, weights, err, errlen) != 0) return -1;
    if (pf_dataset_open(train, &cfg->train, "data.train", cfg->scale, cfg->train.gt_patch_size,
                        err, errlen) != 0)
        return -1;
    if (cfg->eval.present && cfg->eval_interval > 0) {
        pf_dataset ev;
        if (pf_dataset_open(&ev, &cfg->eval, "data.eval", cfg->scale, 0, err, errlen) != 0) {
            pf_dataset_close(train);
            return -1;
        }
        /* held-out clips, whatever the two sets list (config.c checks explicit clips only) */
        int rc = train->video && ev.video
                     ? pf_video_dataset_check_held_out(train->video, ev.video, err, errlen)
                     : 0;
        pf_dataset_close(&ev);
        if (rc != 0) {
            pf_dataset_close(train);
            return -1;
        }
    }
    if (pf_sampler_init(sampler, cfg->seed, train->len, workers, cfg->samples_per_gpu, err,
                        errlen) != 0) {
        pf_dataset_close(train);
        return -1;
    }
    *total_iters = cfg->total_iters > 0 ? cfg->total_iters
                                        : cfg->total_epochs * sampler->iters_per_epoch;
    if (pf_mkdirs(cfg->work_dir, err, errlen) != 0) {
        pf_dataset_close(train);
        return -1;
    }
    return 0;
}
