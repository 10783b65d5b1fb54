/*  coordinator — `pixflow coordinator CONFIG`: the job's hub (see coordinator.c). */
#ifndef PF_COORDINATOR_H
#define PF_COORDINATOR_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/dataset.h"
#include "coordinator/sampler.h"

/* Entry point; argv excludes the subcommand. Returns the process exit status: 0 finished,
   130 interrupted (a checkpoint was written), 1 failed, 2 bad usage or config. */
int pf_coordinator_main(int argc, char **argv);

/* Everything that must hold before any process of a training job starts: load and validate
   the config (with `resume` overriding resume_from when not NULL), open and check the train
   set (and the eval set when evaluation is on), size the sampler for `workers` ranks, compute
   the total iterations, create work_dir. On success `train` is open and `sampler`
   initialised. Returns 0, or -1 with err naming file, key or image. */
int pf_job_prepare(pf_config *cfg, const char *cfg_path, const char *resume, int workers,
                   pf_dataset *train, pf_sampler *sampler, int64_t *total_iters, char *err,
                   size_t errlen);
#endif
