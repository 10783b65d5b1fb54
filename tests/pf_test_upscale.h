/*  pf_test_upscale — helpers of the `pixflow upscale` tests (tests/test_upscale.c,
    tests/test_upscale_video.c): a shell command with its output captured, and a checkpoint
    of a network's seeded initialisation. */
#ifndef PF_TEST_UPSCALE_H
#define PF_TEST_UPSCALE_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/config.h"
#include "common/safetensors.h" /* pf_write_file_atomic */
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test.h"

/* Run a shell command line, its stdout and stderr into dir/out.txt, returned in *out
   (malloc'd, "" when unreadable). Returns its exit status, -1 when it did not exit. */
static inline int pf_test_run(const char *dir, char **out, const char *fmt, ...) {
    char cmd[8192], path[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd - 700, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(cmd + strlen(cmd), 700, " > '%s' 2>&1", path);
    int st = system(cmd);
    char err[256];
    *out = pf_read_file(path, NULL, err, sizeof err);
    if (!*out) *out = strdup("");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The `pixflow` binary: $PF_BIN, else ./pixflow. */
static inline const char *pf_test_bin(void) {
    return getenv("PF_BIN") ? getenv("PF_BIN") : "./pixflow";
}

/* The seeded initial weights (pf_model_init, PyTorch's default initialisation) of cfg_path's
   network into path, a checkpoint of iteration 5. pf_model_new's parameters are zeros, which
   would give an output that does not depend on the input. */
static inline void pf_test_seeded_weights(const char *cfg_path, const char *path, uint64_t seed) {
    static pf_config cfg;
    char err[1024];
    CHECK(pf_config_load(&cfg, cfg_path, err, sizeof err) == 0, "%s", err);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (m) pf_model_init(m, seed);
    void *buf = NULL;
    size_t len = 0;
    CHECK(m && pf_ckpt_serialize(&cfg, m, NULL, 5, 0, 0.0, &buf, &len, NULL, NULL, err,
                                  sizeof err) == 0, "%s", err);
    CHECK(buf && pf_write_file_atomic(path, buf, len, err, sizeof err) == 0, "%s", err);
    free(buf);
    pf_model_destroy(&m);
}
#endif
