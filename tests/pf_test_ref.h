/*  pf_test_ref — helpers for the tests that hand their outputs to a Python reference under
    tests/reference/ (test_blur_kernel, test_realesrgan_ops in their `torch` mode): write a
    file into the case folder, and run the reference script on the folder, then remove it.
    Uses tests/pf_test.h's CHECK. */
#ifndef PF_TEST_REF_H
#define PF_TEST_REF_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/param_info.h"
#include "tests/pf_test.h"

#define PF_REF_PY "/usr/bin/python3"

/* Whether PF_REF_PY can import `modules` ("numpy, torch"); if not, prints "<test>: SKIPPED:
   ..." naming what is missing (the caller then exits 77). */
static inline int pf_ref_have(const char *test, const char *modules) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, PF_REF_PY " -c 'import %s' 2>/dev/null", modules);
    if (access(PF_REF_PY, X_OK) == 0 && system(cmd) == 0) return 1;
    printf("%s: SKIPPED: no %s with %s (scripts/setup.sh --ref-deps)\n", test, PF_REF_PY,
           modules);
    return 0;
}

/* Make the case folder from the mkdtemp template dir (changed in place) and open its
   params.txt for writing; NULL (a failed check) on an error. */
static inline FILE *pf_ref_open_cases(char *dir) {
    char path[1100];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp %s failed", dir);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "could not write %s", path);
    return f;
}

/* Write n bytes of p to dir/name; a failure is a failed check. 0 or -1. */
static inline int pf_ref_write_file(const char *dir, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    CHECK(ok, "could not write %s", path);
    return ok ? 0 : -1;
}

/* Run PF_REF_PY $PF_SOURCE_DIR/tests/reference/<script> dir (the source dir "." when unset)
   and check that it exits 0; dir stays (the caller reads what the script wrote there). */
static inline void pf_ref_exec(const char *script, const char *dir) {
    const char *src = getenv("PF_SOURCE_DIR");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, PF_REF_PY " %s/tests/reference/%s %s", src ? src : ".", script,
             dir);
    fflush(stdout);
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: exit status %d", cmd,
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* rm -rf dir (a case folder), saying so when it fails. */
static inline void pf_ref_remove(const char *dir) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* pf_ref_exec, then remove dir. */
static inline void pf_ref_run(const char *script, const char *dir) {
    pf_ref_exec(script, dir);
    pf_ref_remove(dir);
}
/* Make a case folder from the mkdtemp template dir (changed in place) and pf_ref_exec script
   on it. 0, or -1 after a failed check (no folder). */
static inline int pf_ref_exec_tmp(const char *script, char *dir) {
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp %s failed", dir);
        return -1;
    }
    pf_ref_exec(script, dir);
    return 0;
}

/* A comparison with a reference's numbers: max |got - want| over max |want| (1e-30 at least),
   in double. */
static inline double pf_ref_rel_err(const float *got, const float *want, size_t n) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        scale = scale > fabs(want[i]) ? scale : fabs(want[i]);
        worst = worst > fabs((double)got[i] - want[i]) ? worst : fabs((double)got[i] - want[i]);
    }
    return worst / scale;
}

/* A parameter table for a reference: one line `param NAME OFFSET NDIM SHAPE...` per tensor of
   t[0..n) in order (offsets in floats into the flat buffer), as edvr_ref.py, basicvsrpp_ref.py
   and edvr_tsa_ref.py read them. */
static inline void pf_ref_print_params(FILE *f, const pf_param_info *t, int n) {
    for (int i = 0; i < n; i++) {
        fprintf(f, "param %s %zu %d", t[i].name, t[i].offset, t[i].ndim);
        for (int d = 0; d < t[i].ndim; d++) fprintf(f, " %lld", (long long)t[i].shape[d]);
        fprintf(f, "\n");
    }
}
#endif
