/*  checkpoint — see checkpoint.h. */
#include "common/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/safetensors.h"
#include "common/util.h"

/* Hash of what decides the training trajectory: the resolved config without the keys that only
   say where to start or where to write (resume_from, load_from, resume_optim, work_dir,
   log_level). Stored as config_hash in every checkpoint. */
uint64_t pf_ckpt_config_hash(const pf_config *cfg) {
    static pf_config c;
    c = *cfg;
    c.resume_from[0] = c.load_from[0] = c.gan.load_from_d[0] = c.work_dir[0] = '\0';
    c.resume_optim = 1;
    snprintf(c.log_level, sizeof c.log_level, "info");
    char *yaml = pf_config_to_yaml(&c);
    uint64_t h = yaml ? pf_fnv1a64(yaml, strlen(yaml), PF_FNV_OFFSET) : 0;
    free(yaml);
    return h;
}

int pf_ckpt_resolve_resume(const pf_config *cfg, char *path, size_t pathlen, char *err,
                            size_t errlen) {
    path[0] = '\0';
    if (!cfg->resume_from[0]) return 0;
    if (strcmp(cfg->resume_from, "auto") != 0) {
        snprintf(path, pathlen, "%s", cfg->resume_from);
        return 0;
    }
    char latest[PF_PATH_MAX + 32];
    snprintf(latest, sizeof latest, "%s/checkpoints/latest", cfg->work_dir);
    struct stat st;
    if (stat(latest, &st) != 0) return 0;   /* nothing to resume: a fresh start */
    char *name = pf_read_file(latest, NULL, err, errlen);
    if (!name) return -1;
    name[strcspn(name, "\r\n")] = '\0';
    if (!name[0] || strchr(name, '/')) {
        snprintf(err, errlen, "%s: does not name a checkpoint file ('%s')", latest, name);
        free(name);
        return -1;
    }
    snprintf(path, pathlen, "%s/checkpoints/%s", cfg->work_dir, name);
    free(name);
    return 0;
}

int pf_ckpt_check_resume(const pf_config *cfg, const char *path, char *err, size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    char hash[32], seed[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, pf_ckpt_config_hash(cfg));
    snprintf(seed, sizeof seed, "%" PRIu64, cfg->seed);
    const char *h = pf_safetensors_meta(st, "config_hash");
    const char *s = pf_safetensors_meta(st, "seed");
    if (s && strcmp(s, seed) != 0)
        pf_warn("%s was trained with seed %s, this config has seed %s: the batches from here on "
                "are not the ones the interrupted run would have seen", path, s, seed);
    else if (h && strcmp(h, hash) != 0)
        pf_warn("%s was written under another config (hash %s, now %s): the resumed run may "
                "differ from an uninterrupted one", path, h, hash);
    pf_safetensors_free(&st);
    return 0;
}

/* weights_path with `kind` ("optim", "net_d") before its ".safetensors". */
static void sibling_path(const char *weights_path, const char *kind, char *out,
                         size_t outlen) {
    size_t n = strlen(weights_path);
    const char *ext = ".safetensors";
    size_t e = strlen(ext);
    if (n > e && strcmp(weights_path + n - e, ext) == 0)
        snprintf(out, outlen, "%.*s.%s.safetensors", (int)(n - e), weights_path, kind);
    else
        snprintf(out, outlen, "%s.%s.safetensors", weights_path, kind);
}

void pf_ckpt_optim_path(const char *weights_path, char *out, size_t outlen) {
    sibling_path(weights_path, "optim", out, outlen);
}

void pf_ckpt_net_d_path(const char *weights_path, char *out, size_t outlen) {
    sibling_path(weights_path, "net_d", out, outlen);
}
