/*  checkpoint — see checkpoint.h. */
#include "nn/checkpoint.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checkpoint.h"
#include "common/log.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/net.h"

/* The optimiser tensors of each model tensor, torch's state names. */
static int optim_state(const pf_optim *o, const char **suffix, float **data) {
    int k = 0;
    if (o->exp_avg) suffix[k] = "exp_avg", data[k++] = o->exp_avg;
    if (o->exp_avg_sq) suffix[k] = "exp_avg_sq", data[k++] = o->exp_avg_sq;
    if (o->momentum_buffer) suffix[k] = "momentum_buffer", data[k++] = o->momentum_buffer;
    return k;
}

/* Tensor table entry `t` for model tensor p under `name`, data at base + p->offset. */
static void st_entry(pf_st_tensor *t, const pf_param_info *p, const char *name,
                     const float *base) {
    t->name = name;
    t->data = base + p->offset;
    t->ndim = p->ndim;
    memcpy(t->shape, p->shape, sizeof t->shape);
}

int pf_ckpt_serialize(const pf_config *cfg, pf_model *m, const pf_optim *optim, int64_t iter,
                       int64_t epoch, double learning_rate, void **weights, size_t *weights_len,
                       void **optim_buf, size_t *optim_len, char *err, size_t errlen) {
    return pf_ckpt_serialize_net(cfg, pf_model_net(m), pf_model_params(m), optim, iter, epoch,
                                 learning_rate, weights, weights_len, optim_buf, optim_len, err,
                                 errlen);
}

int pf_ckpt_serialize_net(const pf_config *cfg, const pf_net *net, const float *params,
                          const pf_optim *optim, int64_t iter, int64_t epoch,
                          double learning_rate, void **weights, size_t *weights_len,
                          void **optim_buf, size_t *optim_len, char *err, size_t errlen) {
    int n = net->n_tensors, nb = net->n_buffers;
    int ema = optim && optim->ema;
    int slots = (n + nb) * (1 + ema);
    pf_st_tensor *t = calloc((size_t)slots + 1, sizeof *t);
    char (*names)[112] = calloc((size_t)slots + 1, sizeof *names);
    if (!t || !names) {
        free(t);
        free(names);
        snprintf(err, errlen, "out of memory serialising a checkpoint");
        return -1;
    }
    /* The weights file in state_dict order, buffers at their places (pf_net_buffer.before),
       then the EMA copy under PF_EMA_PREFIX in the same order (BasicSR's params_ema is the
       EMA network's whole state_dict, buffers included). */
    int nt = 0;
    for (int copy = 0; copy < 1 + ema; copy++) {
        const char *prefix = copy ? PF_EMA_PREFIX : "";
        const float *base = copy ? optim->ema : params;
        for (int i = 0, b = 0; i <= n; i++) {
            for (; b < nb && net->buffers[b].before <= i; b++, nt++) {
                const pf_net_buffer *buf = &net->buffers[b];
                snprintf(names[nt], sizeof names[0], "%s%s", prefix, buf->name);
                t[nt] = (pf_st_tensor){ .name = names[nt], .data = buf->value,
                                        .ndim = buf->ndim };
                memcpy(t[nt].shape, buf->shape, sizeof t[nt].shape);
            }
            if (i == n) break;
            const pf_param_info *p = &net->tensors[i];
            snprintf(names[nt], sizeof names[0], "%s%s", prefix, p->name);
            st_entry(&t[nt], p, names[nt], base);
            nt++;
        }
    }
    char s_iter[32], s_epoch[32], s_hash[32], s_scale[16], s_lr[32], s_seed[32], s_next[32],
        s_step[32];
    snprintf(s_iter, sizeof s_iter, "%" PRId64, iter);
    snprintf(s_epoch, sizeof s_epoch, "%" PRId64, epoch);
    snprintf(s_hash, sizeof s_hash, "%016" PRIx64, pf_ckpt_config_hash(cfg));
    snprintf(s_scale, sizeof s_scale, "%d", cfg->scale);
    snprintf(s_lr, sizeof s_lr, "%.9g", learning_rate);
    snprintf(s_seed, sizeof s_seed, "%" PRIu64, cfg->seed);
    snprintf(s_next, sizeof s_next, "%" PRId64, iter);
    snprintf(s_step, sizeof s_step, "%" PRId64, optim ? optim->step : 0);
    char arch[256];     /* what a mismatch message reports the file holds */
    pf_model_describe(cfg, arch, sizeof arch);
    const char *meta[] = {
        "format", "pixflow-1", "iter", s_iter, "epoch", s_epoch, "config_hash", s_hash,
        "model", cfg->model_type, "scale", s_scale, "learning_rate", s_lr, "seed", s_seed,
        "next_iter", s_next, "adam_step", s_step, "arch", arch,
    };
    int rc = pf_safetensors_serialize(t, nt, meta,
                                      (int)(sizeof meta / sizeof meta[0]) / 2, weights,
                                      weights_len, err, errlen);
    if (rc == 0 && optim) {
        rc = pf_ckpt_serialize_optim_net(net, optim, iter, optim_buf, optim_len, err, errlen);
        if (rc) {
            free(*weights);
            *weights = NULL;
        }
    }
    free(t);
    free(names);
    return rc;
}

int pf_ckpt_serialize_optim_net(const pf_net *net, const pf_optim *optim, int64_t iter,
                                void **optim_buf, size_t *optim_len, char *err,
                                size_t errlen) {
    int n = net->n_tensors;
    const char *suffix[3];
    float *data[3];
    int per = optim_state(optim, suffix, data);
    pf_st_tensor *t = calloc((size_t)(per * n) + 1, sizeof *t);
    char (*names)[112] = calloc((size_t)(per * n) + 1, sizeof *names);
    if (!t || !names) {
        free(t);
        free(names);
        snprintf(err, errlen, "out of memory serialising a checkpoint");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const pf_param_info *p = &net->tensors[i];
        for (int k = 0; k < per; k++) {
            snprintf(names[per * i + k], sizeof names[0], "%s.%s", p->name, suffix[k]);
            st_entry(&t[per * i + k], p, names[per * i + k], data[k]);
        }
    }
    char s_iter[32], s_step[32];
    snprintf(s_iter, sizeof s_iter, "%" PRId64, iter);
    snprintf(s_step, sizeof s_step, "%" PRId64, optim->step);
    const char *ometa[] = { "format", "pixflow-1", "iter", s_iter, "adam_step", s_step,
                            "optimizer", pf_optim_kind_name(optim->s.kind) };
    int rc = pf_safetensors_serialize(t, per * n, ometa, 4, optim_buf, optim_len, err, errlen);
    free(t);
    free(names);
    return rc;
}

int pf_ckpt_load_weights(pf_model *m, const char *path, int64_t *iter, char *err,
                          size_t errlen) {
    return pf_ckpt_load_weights_net(pf_model_net(m), pf_model_config(m), pf_model_params(m),
                                    path, iter, err, errlen);
}

int pf_ckpt_load_weights_net(const pf_net *net, const pf_config *cfg, float *params,
                             const char *path, int64_t *iter, char *err, size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = pf_ckpt_load_net(net, cfg, params, st, err, errlen);
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

void pf_ckpt_source_names(const char *path, char *buf, size_t len) {
    pf_safetensors *st = NULL;
    char err[256];
    if (len) buf[0] = 0;
    if (pf_safetensors_load(path, &st, err, sizeof err) != 0) return;
    const char *src = pf_safetensors_meta(st, "source"), *names = pf_safetensors_meta(st,
                                                                                "source_names");
    if (names) snprintf(buf, len, " (converted from %s: %s)", src ? src : "?", names);
    pf_safetensors_free(&st);
}

int pf_ckpt_check_weights(const pf_config *cfg, const char *path, char *err,
                           size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    pf_net net;
    int rc = pf_net_build(&net, cfg, err, errlen);
    if (rc == 0) {
        rc = pf_ckpt_check_net(&net, cfg, st, err, errlen);
        pf_net_free(&net);
    }
    pf_safetensors_free(&st);
    return rc;
}

/* Copy tensor "<prefix><name><suffix>" of every tensor of net's table from `st` (file `path`)
   into the flat buffer `dst`. Returns 0, 1 when not one of them is present (dst untouched), or
   -1 with err when some are missing or mis-shaped. */
static int load_flat(const pf_safetensors *st, const pf_net *net, const char *prefix,
                     const char *suffix, float *dst, const char *path, char *err,
                     size_t errlen) {
    int n = net->n_tensors, found = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const pf_param_info *p = &net->tensors[i];
            char name[160];
            snprintf(name, sizeof name, "%s%s%s", prefix, p->name, suffix);
            int ndim;
            int64_t shape[4];
            const float *d = pf_safetensors_get(st, name, &ndim, shape);
            size_t numel = 1;
            for (int j = 0; d && j < ndim; j++) numel *= (size_t)shape[j];
            if (pass == 0) {
                found += d != NULL;
                continue;
            }
            if (!d || numel != p->numel) {
                snprintf(err, errlen, "%s: tensor '%s' %s", path, name,
                         d ? "has the wrong shape" : "is missing");
                return -1;
            }
            memcpy(dst + p->offset, d, sizeof(float) * numel);
        }
        if (pass == 0 && found == 0) return 1;
    }
    return 0;
}

int pf_ckpt_load_optim(pf_optim *optim, pf_model *m, const char *weights_path, char *err,
                        size_t errlen) {
    return pf_ckpt_load_optim_net(optim, pf_model_net(m), weights_path, err, errlen);
}

int pf_ckpt_load_optim_net(pf_optim *optim, const pf_net *net, const char *weights_path,
                           char *err, size_t errlen) {
    char path[PF_PATH_MAX + 32];
    pf_ckpt_optim_path(weights_path, path, sizeof path);
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = 0;
    const char *type = pf_safetensors_meta(st, "optimizer");
    const char *want = pf_optim_kind_name(optim->s.kind);
    if (strcmp(type ? type : "Adam", want) != 0) {
        snprintf(err, errlen, "%s holds %s state, the config trains with %s: set resume_optim: "
                 "false to resume the weights with a fresh optimiser", path,
                 type ? type : "Adam", want);
        rc = -1;
    }
    const char *suffix[3];
    float *data[3];
    int per = optim_state(optim, suffix, data);
    for (int k = 0; k < per && rc == 0; k++) {
        char sfx[32];
        snprintf(sfx, sizeof sfx, ".%s", suffix[k]);
        rc = load_flat(st, net, "", sfx, data[k], path, err, errlen);
        if (rc == 1) {
            snprintf(err, errlen, "%s: no %s tensors", path, suffix[k]);
            rc = -1;
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

int pf_ckpt_load_ema(pf_optim *optim, pf_model *m, const char *path, char *err,
                      size_t errlen) {
    return pf_ckpt_load_ema_net(optim, pf_model_net(m), pf_model_params(m), path, err, errlen);
}

int pf_ckpt_load_ema_net(pf_optim *optim, const pf_net *net, const float *params,
                         const char *path, char *err, size_t errlen) {
    if (!optim->ema) return 0;
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = load_flat(st, net, PF_EMA_PREFIX, "", optim->ema, path, err, errlen);
    pf_safetensors_free(&st);
    if (rc == 1) {
        pf_warn("%s has no EMA weights (" PF_EMA_PREFIX "*): the EMA restarts from its weights",
                path);
        memcpy(optim->ema, params, net->n_params * sizeof(float));
        rc = 0;
    }
    return rc;
}

int pf_ckpt_load_eval_weights(pf_model *m, const char *path, int *ema, char *err,
                               size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen) != 0) return -1;
    int rc = pf_model_load_weights(m, st, err, errlen);
    *ema = 0;
    if (rc == 0) {
        rc = load_flat(st, pf_model_net(m), PF_EMA_PREFIX, "", pf_model_params(m), path, err,
                       errlen);
        *ema = rc == 0;
        if (rc == 1) rc = 0;
    }
    pf_safetensors_free(&st);
    return rc;
}

/* ---- against the description ------------------------------------------------------------ */

/* "[64, 3, 3, 3]" */
static void fmt_shape(char *buf, size_t len, int ndim, const int64_t *shape) {
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at < len) snprintf(buf + at, len - at, "]");
}

/* Append printf-style text to buf (NUL-terminated, len bytes), silently truncating. */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* What a weights file's __metadata__ says it holds, for the mismatch message. */
static void describe_file(const struct pf_safetensors *st, char *buf, size_t len) {
    const char *arch = pf_safetensors_meta(st, "arch"), *model = pf_safetensors_meta(st, "model");
    const char *scale = pf_safetensors_meta(st, "scale"), *iter = pf_safetensors_meta(st, "iter");
    const char *src = pf_safetensors_meta(st, "source");
    if (arch) snprintf(buf, len, "the checkpoint says it is %s", arch);
    else if (model) snprintf(buf, len, "the checkpoint says model %s, scale %s", model,
                             scale ? scale : "?");
    else if (src) snprintf(buf, len, "the checkpoint was converted from %s and records no "
                           "architecture", src);
    else snprintf(buf, len, "the checkpoint's __metadata__ records no architecture (not "
                  "written by PixFlow)");
    const char *names = pf_safetensors_meta(st, "source_names");
    if (!arch && !model && src && names) add(buf, len, " (its names: %s)", names);
    if ((arch || model) && iter) add(buf, len, " (PixFlow, iteration %s)", iter);
}

#define PF_SHOW_MISMATCHES 4   /* tensors named per kind of mismatch */

/* "[0.485, 0.456, 0.406]": a buffer's values (at most PF_NET_BUFFER_MAX), each with the
   fewest digits (6..9) that read back as the same float. */
static void fmt_values(char *buf, size_t len, const float *v, size_t n) {
    buf[0] = 0;
    add(buf, len, "[");
    for (size_t i = 0; i < n; i++) {
        char x[32];
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(x, sizeof x, "%.*g", digits, v[i]);
            if (strtof(x, NULL) == v[i]) break;
        }
        add(buf, len, "%s%s", i ? ", " : "", x);
    }
    add(buf, len, "]");
}

/* Buffer b as tensor `name` of st, when there: 0 when absent or equal; 1 when mis-shaped
   (described into shaped), 2 when its values differ (into valued). */
static int check_buffer(const pf_net_buffer *b, const char *name,
                        const struct pf_safetensors *st, char *shaped, size_t shaped_len,
                        char *valued, size_t valued_len, int show) {
    int ndim;
    int64_t shape[4];
    const float *d = pf_safetensors_get(st, name, &ndim, shape);
    if (!d) return 0;
    int same = ndim == b->ndim;
    for (int k = 0; same && k < ndim; k++) same = shape[k] == b->shape[k];
    char x[64], y[64];
    if (!same) {
        fmt_shape(x, sizeof x, ndim, shape);
        fmt_shape(y, sizeof y, b->ndim, b->shape);
        if (show) add(shaped, shaped_len, "; %s: checkpoint %s, config wants %s", name, x, y);
        return 1;
    }
    if (!memcmp(d, b->value, b->numel * sizeof(float))) return 0;
    if (show) {
        char v1[PF_NET_BUFFER_MAX * 18], v2[PF_NET_BUFFER_MAX * 18];
        fmt_values(v1, sizeof v1, d, b->numel);
        fmt_values(v2, sizeof v2, b->value, b->numel);
        add(valued, valued_len, "; buffer %s: checkpoint %s, the network uses %s", name, v1,
            v2);
    }
    return 2;
}


int pf_ckpt_check_net(const pf_net *net, const pf_config *cfg, const struct pf_safetensors *st,
                      char *err, size_t errlen) {
    char shaped[1024] = "", missing[512] = "", unexpected[512] = "", valued[1024] = "";
    char a[64], b[64];
    int n_shaped = 0, n_missing = 0, n_unexpected = 0, n_valued = 0;
    for (int i = 0; i < net->n_tensors; i++) {
        const pf_param_info *t = &net->tensors[i];
        int ndim;
        int64_t shape[4];
        if (!pf_safetensors_get(st, t->name, &ndim, shape)) {
            if (n_missing++ < PF_SHOW_MISMATCHES)
                add(missing, sizeof missing, "%s'%s'", n_missing > 1 ? ", " : "", t->name);
            continue;
        }
        int same = ndim == t->ndim;
        for (int k = 0; same && k < ndim; k++) same = shape[k] == t->shape[k];
        if (!same && n_shaped++ < PF_SHOW_MISMATCHES) {
            fmt_shape(a, sizeof a, ndim, shape);
            fmt_shape(b, sizeof b, t->ndim, t->shape);
            add(shaped, sizeof shaped, "; %s: checkpoint %s, config wants %s", t->name, a, b);
        }
    }
    for (int i = 0; i < net->n_buffers; i++)
        for (int ema = 0; ema < 2; ema++) {
            const pf_net_buffer *buf = &net->buffers[i];
            char name[sizeof buf->name + sizeof PF_EMA_PREFIX];
            snprintf(name, sizeof name, "%s%s", ema ? PF_EMA_PREFIX : "", buf->name);
            int show = n_shaped < PF_SHOW_MISMATCHES && n_valued < PF_SHOW_MISMATCHES;
            int r = check_buffer(buf, name, st, shaped, sizeof shaped, valued, sizeof valued,
                                 show);
            n_shaped += r == 1;
            n_valued += r == 2;
        }
    int n = pf_safetensors_count(st);
    for (int j = 0; j < n; j++) {
        const char *name;
        pf_safetensors_at(st, j, &name, NULL, NULL);
        /* The EMA copy a checkpoint may carry (worker/train_state.h) is not the model's. */
        int known = !strncmp(name, PF_EMA_PREFIX, strlen(PF_EMA_PREFIX));
        for (int i = 0; i < net->n_tensors && !known; i++)
            known = !strcmp(net->tensors[i].name, name);
        for (int i = 0; i < net->n_buffers && !known; i++)
            known = !strcmp(net->buffers[i].name, name);
        if (!known && n_unexpected++ < PF_SHOW_MISMATCHES)
            add(unexpected, sizeof unexpected, "%s'%s'", n_unexpected > 1 ? ", " : "", name);
    }
    if (!n_shaped && !n_missing && !n_unexpected && !n_valued) return 0;
    char arch[256], says[384];
    pf_model_describe(cfg, arch, sizeof arch);
    describe_file(st, says, sizeof says);
    snprintf(err, errlen, "%s: the weights do not fit the config's network (%s): tensors "
             "%d mis-shaped, %d missing, %d unexpected", pf_safetensors_name(st), arch,
             n_shaped, n_missing, n_unexpected);
    if (n_valued)
        add(err, errlen, ", %d buffer%s with other values than the network's", n_valued,
            n_valued > 1 ? "s" : "");
    add(err, errlen, "%s%s", shaped, n_shaped > PF_SHOW_MISMATCHES ? "; ..." : "");
    add(err, errlen, "%s%s", valued, n_valued > PF_SHOW_MISMATCHES ? "; ..." : "");
    if (n_missing)
        add(err, errlen, "; missing %s%s", missing, n_missing > PF_SHOW_MISMATCHES ? ", ..." : "");
    if (n_unexpected)
        add(err, errlen, "; unexpected %s%s", unexpected,
            n_unexpected > PF_SHOW_MISMATCHES ? ", ..." : "");
    add(err, errlen, "; %s. Set model: in the config to the network the checkpoint holds, or "
        "use a checkpoint of this one", says);
    return -1;
}


int pf_ckpt_load_net(const pf_net *net, const pf_config *cfg, float *params,
                     const struct pf_safetensors *st, char *err, size_t errlen) {
    if (pf_ckpt_check_net(net, cfg, st, err, errlen) != 0) return -1;
    for (int i = 0; i < net->n_tensors; i++) {
        const pf_param_info *t = &net->tensors[i];
        const float *d = pf_safetensors_get(st, t->name, NULL, NULL);
        memcpy(params + t->offset, d, t->numel * sizeof(float));
    }
    return 0;
}

int pf_ckpt_load_spynet(const pf_net *net, float *params, const char *path, char *err,
                        size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen)) return -1;
    const float **src = calloc((size_t)net->n_tensors + 1, sizeof *src);
    int rc = src ? 0 : -1, found = 0;
    if (!src) snprintf(err, errlen, "%s: out of memory", path);
    for (int i = 0; rc == 0 && i < net->n_tensors; i++) {
        const pf_param_info *t = &net->tensors[i];
        if (strncmp(t->name, "spynet.", 7)) continue;
        int ndim = 0;
        int64_t shape[8];
        const float *d = pf_safetensors_get(st, t->name, &ndim, shape);
        if (!d) d = pf_safetensors_get(st, t->name + 7, &ndim, shape);
        int same = d && ndim == t->ndim;
        for (int k = 0; same && k < ndim; k++) same = shape[k] == t->shape[k];
        if (!same) {
            char want[64];
            fmt_shape(want, sizeof want, t->ndim, t->shape);
            snprintf(err, errlen, "%s: model.spynet_pretrained: %s '%s' (or '%s') %s", path,
                     d ? "mis-shaped tensor" : "no tensor", t->name, t->name + 7,
                     d ? "for SPyNet" : "");
            if (d) {
                char got[64];
                fmt_shape(got, sizeof got, ndim, shape);
                add(err, errlen, ": the file has %s, SPyNet wants %s", got, want);
            } else {
                add(err, errlen, "(SPyNet wants %s)", want);
            }
            rc = -1;
        }
        src[i] = d;
        found++;
    }
    if (rc == 0 && !found) {
        snprintf(err, errlen, "%s: model.spynet_pretrained: %s has no SPyNet", path,
                 net->type);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < net->n_tensors; i++)
        if (src[i])
            memcpy(params + net->tensors[i].offset, src[i],
                   net->tensors[i].numel * sizeof(float));
    free(src);
    pf_safetensors_free(&st);
    return rc;
}

/* nn/model.h's weight loaders, the forms above on a model's description and parameters (here,
   not in nn/model.c, so that the model does not include this module, which includes it). */
int pf_model_check_weights(const pf_model *m, const struct pf_safetensors *st, char *err,
                           size_t errlen) {
    return pf_ckpt_check_net(pf_model_net(m), pf_model_config(m), st, err, errlen);
}

int pf_model_load_weights(pf_model *m, const struct pf_safetensors *st, char *err,
                          size_t errlen) {
    return pf_ckpt_load_net(pf_model_net(m), pf_model_config(m), pf_model_params(m), st, err,
                            errlen);
}

int pf_model_load_spynet(pf_model *m, const char *path, char *err, size_t errlen) {
    return pf_ckpt_load_spynet(pf_model_net(m), pf_model_params(m), path, err, errlen);
}
