/*  model_source — see model_source.h. */
#include "cli/model_source.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "nn/checkpoint.h"

/* DIR/checkpoints/<latest>, else the iter_N.safetensors with the largest N. */
static int latest_weights(const char *dir, char *weights, size_t len, char *err, size_t errlen) {
    char path[4096], e[256];
    snprintf(path, sizeof path, "%s/checkpoints/latest", dir);
    size_t n = 0;
    char *name = pf_read_file(path, &n, e, sizeof e);
    if (name) {
        name[strcspn(name, "\r\n")] = 0;
        snprintf(weights, len, "%s/checkpoints/%s", dir, name);
        free(name);
        return 0;
    }
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    DIR *d = opendir(path);
    long best = -1;
    for (struct dirent *de; d && (de = readdir(d));) {
        long it;
        char tail[32];
        if (sscanf(de->d_name, "iter_%ld%31s", &it, tail) == 2 &&
            !strcmp(tail, ".safetensors") && it > best) {
            best = it;
            snprintf(weights, len, "%s/checkpoints/iter_%ld.safetensors", dir, it);
        }
    }
    if (d) closedir(d);
    if (best < 0) {
        snprintf(err, errlen, "%s: no checkpoints/latest and no checkpoints/iter_N.safetensors "
                 "(a work dir of `pixflow train`, or name a .safetensors file)", dir);
        return -1;
    }
    return 0;
}

int pf_model_source_resolve(const char *src, const char *config_opt, char *cfg_path,
                            size_t cfg_len, char *weights, size_t weights_len, char *err,
                            size_t errlen) {
    struct stat st;
    if (stat(src, &st) != 0) {
        snprintf(err, errlen, "%s: no such file or work dir", src);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (latest_weights(src, weights, weights_len, err, errlen)) return -1;
        snprintf(cfg_path, cfg_len, "%s/config.yaml", src);
    } else {
        snprintf(weights, weights_len, "%s", src);
        const char *slash = strrchr(src, '/');
        int dl = slash ? (int)(slash - src) : 0;
        const char *folder = src;
        for (const char *p = src; p < src + dl; p++)
            if (*p == '/') folder = p + 1;
        if (!config_opt && !(dl >= 11 && !strncmp(folder, "checkpoints", 11) &&
                             folder + 11 == src + dl)) {
            snprintf(err, errlen, "%s: which network is it? give --config CONFIG (only a "
                     "work dir's checkpoints/*.safetensors finds its ../config.yaml)", src);
            return -1;
        }
        snprintf(cfg_path, cfg_len, "%.*s/../config.yaml", dl, src);
    }
    if (config_opt) snprintf(cfg_path, cfg_len, "%s", config_opt);
    return 0;
}

pf_model *pf_model_source_load(const char *src, const char *config_opt, int precision,
                               pf_config *cfg, int *ema, char *err, size_t errlen) {
    char cfg_path[4096], weights[4096];
    int e = 0;
    if (pf_model_source_resolve(src, config_opt, cfg_path, sizeof cfg_path, weights,
                                sizeof weights, err, errlen))
        return NULL;
    /* the config's data folders need not exist any more: only its model is used */
    size_t len = 0;
    char *text = pf_read_file(cfg_path, &len, err, errlen);
    int rc = text ? pf_config_parse(cfg, cfg_path, text, len, 0, err, errlen) : -1;
    free(text);
    /* the description against the file first: a file of another network is named with the
       tensors that do not fit (pf_model_load_weights' message does not name the file) */
    if (rc || pf_ckpt_check_weights(cfg, weights, err, errlen)) return NULL;
    if (precision >= 0) cfg->test_precision = precision;
    pf_model *m = pf_model_source_build(cfg, precision >= 0 ? "--precision"
                                                            : "test_cfg.precision", err, errlen);
    if (m && pf_ckpt_load_eval_weights(m, weights, &e, err, errlen)) pf_model_destroy(&m);
    if (ema) *ema = e;
    return m;
}

pf_model *pf_model_source_build(pf_config *cfg, const char *what, char *err, size_t errlen) {
    /* built fp32, then set to the precision wanted, so a refusal names where bf16 came from */
    int want = cfg->test_precision;
    cfg->test_precision = 0;
    pf_model *m = pf_model_new_infer(cfg, err, errlen);
    cfg->test_precision = want;
    if (m && pf_model_set_precision(m, 0, want, what, err, errlen)) pf_model_destroy(&m);
    return m;
}
