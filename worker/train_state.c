/*  train_state — see train_state.h. */
#include "worker/train_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/safetensors.h"
#include "common/log.h"
#include "common/util.h"

/* Hash of what decides the training trajectory: the resolved config without the keys that only
   say where to start or where to write (resume_from, load_from, resume_optim, work_dir,
   log_level). Stored as config_hash in every checkpoint. */
static uint64_t training_hash(const pf_config *cfg) {
    static pf_config c;
    c = *cfg;
    c.resume_from[0] = c.load_from[0] = c.work_dir[0] = '\0';
    c.resume_optim = 1;
    snprintf(c.log_level, sizeof c.log_level, "info");
    char *yaml = pf_config_to_yaml(&c);
    uint64_t h = yaml ? pf_fnv1a64(yaml, strlen(yaml), PF_FNV_OFFSET) : 0;
    free(yaml);
    return h;
}

int pf_state_serialize(const pf_config *cfg, pf_model *m, const pf_adam *optim, int64_t iter,
                       int64_t epoch, double learning_rate, void **weights, size_t *weights_len,
                       void **optim_buf, size_t *optim_len, char *err, size_t errlen) {
    int n = pf_model_num_tensors(m);
    pf_st_tensor *t = calloc((size_t)n * 2, sizeof *t);
    char (*names)[112] = calloc((size_t)n * 2, sizeof *names);
    if (!t || !names) {
        free(t);
        free(names);
        snprintf(err, errlen, "out of memory serialising a checkpoint");
        return -1;
    }
    const float *params = pf_model_params(m);
    for (int i = 0; i < n; i++) {
        const pf_param_info *p = pf_model_tensor_info(m, i);
        t[i].name = p->name;
        t[i].data = params + p->offset;
        t[i].ndim = p->ndim;
        memcpy(t[i].shape, p->shape, sizeof t[i].shape);
    }
    char s_iter[32], s_epoch[32], s_hash[32], s_scale[16], s_lr[32], s_seed[32], s_next[32],
        s_step[32];
    snprintf(s_iter, sizeof s_iter, "%" PRId64, iter);
    snprintf(s_epoch, sizeof s_epoch, "%" PRId64, epoch);
    snprintf(s_hash, sizeof s_hash, "%016" PRIx64, training_hash(cfg));
    snprintf(s_scale, sizeof s_scale, "%d", cfg->scale);
    snprintf(s_lr, sizeof s_lr, "%.9g", learning_rate);
    snprintf(s_seed, sizeof s_seed, "%" PRIu64, cfg->seed);
    snprintf(s_next, sizeof s_next, "%" PRId64, iter);
    snprintf(s_step, sizeof s_step, "%" PRId64, optim ? optim->step : 0);
    const char *meta[] = {
        "format", "pixflow-1", "iter", s_iter, "epoch", s_epoch, "config_hash", s_hash,
        "model", cfg->model_type, "scale", s_scale, "learning_rate", s_lr, "seed", s_seed,
        "next_iter", s_next, "adam_step", s_step,
    };
    int rc = pf_safetensors_serialize(t, n, meta, (int)(sizeof meta / sizeof meta[0]) / 2,
                                      weights, weights_len, err, errlen);
    if (rc == 0 && optim) {
        for (int i = 0; i < n; i++) {
            const pf_param_info *p = pf_model_tensor_info(m, i);
            for (int k = 0; k < 2; k++) {
                pf_st_tensor *o = &t[2 * i + k];
                snprintf(names[2 * i + k], sizeof names[0], "%s.%s", p->name,
                         k ? "exp_avg_sq" : "exp_avg");
                o->name = names[2 * i + k];
                o->data = (k ? optim->exp_avg_sq : optim->exp_avg) + p->offset;
                o->ndim = p->ndim;
                memcpy(o->shape, p->shape, sizeof o->shape);
            }
        }
        const char *ometa[] = { "format", "pixflow-1", "iter", s_iter, "adam_step", s_step };
        rc = pf_safetensors_serialize(t, 2 * n, ometa, 3, optim_buf, optim_len, err, errlen);
        if (rc) {
            free(*weights);
            *weights = NULL;
        }
    }
    free(t);
    free(names);
    return rc;
}

int pf_state_resolve_resume(const pf_config *cfg, char *path, size_t pathlen, char *err,
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

int pf_state_load_weights(pf_model *m, const char *path, int64_t *iter, char *err,
                          size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = pf_model_load_weights(m, st, err, errlen);
    if (rc == 0 && iter) {
        const char *s = pf_safetensors_meta(st, "iter");
        char *end = NULL;
        long long v = s ? strtoll(s, &end, 10) : -1;
        if (!s || *end || v < 0) {
            snprintf(err, errlen, "%s: __metadata__.iter missing or invalid: cannot resume "
                     "from a file without it (use load_from for weights only)", path);
            rc = -1;
        } else {
            *iter = v;
        }
    }
    pf_safetensors_free(&st);
    return rc;
}

int pf_state_check_resume(const pf_config *cfg, const char *path, char *err, size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    char hash[32], seed[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, training_hash(cfg));
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

void pf_state_optim_path(const char *weights_path, char *out, size_t outlen) {
    size_t n = strlen(weights_path);
    const char *ext = ".safetensors";
    size_t e = strlen(ext);
    if (n > e && strcmp(weights_path + n - e, ext) == 0)
        snprintf(out, outlen, "%.*s.optim.safetensors", (int)(n - e), weights_path);
    else
        snprintf(out, outlen, "%s.optim.safetensors", weights_path);
}

int pf_state_load_optim(pf_adam *optim, pf_model *m, const char *weights_path, char *err,
                        size_t errlen) {
    char path[PF_PATH_MAX + 32];
    pf_state_optim_path(weights_path, path, sizeof path);
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = 0;
    int n = pf_model_num_tensors(m);
    for (int i = 0; i < n && rc == 0; i++) {
        const pf_param_info *p = pf_model_tensor_info(m, i);
        for (int k = 0; k < 2 && rc == 0; k++) {
            char name[128];
            snprintf(name, sizeof name, "%s.%s", p->name, k ? "exp_avg_sq" : "exp_avg");
            int ndim;
            int64_t shape[4];
            const float *d = pf_safetensors_get(st, name, &ndim, shape);
            size_t numel = 1;
            for (int j = 0; d && j < ndim; j++) numel *= (size_t)shape[j];
            if (!d || numel != p->numel) {
                snprintf(err, errlen, "%s: tensor '%s' %s", path, name,
                         d ? "has the wrong shape" : "is missing");
                rc = -1;
                break;
            }
            memcpy((k ? optim->exp_avg_sq : optim->exp_avg) + p->offset, d,
                   sizeof(float) * numel);
        }
    }
    const char *s = pf_safetensors_meta(st, "adam_step");
    if (rc == 0) {
        char *end = NULL;
        long long v = s ? strtoll(s, &end, 10) : -1;
        if (!s || *end || v < 0) {
            snprintf(err, errlen, "%s: __metadata__.adam_step missing or invalid", path);
            rc = -1;
        } else {
            optim->step = v;
        }
    }
    pf_safetensors_free(&st);
    return rc;
}
