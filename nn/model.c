/*  model — construction of the networks from the config (EDSR here, the others by nn/zoo.c as
    node lists), the flat parameter and gradient buffers with their state_dict names,
    PyTorch-default initialisation, weight loading, and the public train-step / inference entry
    points (see model.h). EDSR's forward and backward live in edsr.c, the graph networks' in
    graph.c.
*/
#include "nn/model.h"
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/rng.h"
#include "common/safetensors.h"
#include "nn/layers.h"
#include "nn/model_internal.h"
#include "nn/param_table.h"

float *pf_plan_alloc(pf_plan *p, size_t n) {
    if (p->n_allocs >= PF_PLAN_MAX_ALLOCS) return NULL;
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    void *b = aligned_alloc(64, bytes ? bytes : 64);
    if (!b) return NULL;
    memset(b, 0, bytes);
    p->allocs[p->n_allocs++] = b;
    return b;
}

void pf_plan_free(pf_plan *p) {
    for (int i = 0; i < 4; i++) pf_op_free(&p->ops[i]);
    pf_gstate_free(&p->g);
    for (int i = 0; i < p->n_allocs; i++) free(p->allocs[i]);
    memset(p, 0, sizeof *p);
}

static int conv_tensor(const pf_model *m, int i) { return m->conv_w ? m->conv_w[i] : 2 * i; }
float *pf_model_conv_w(pf_model *m, float *base, int i) {
    return base + m->tensors[conv_tensor(m, i)].offset;
}
float *pf_model_conv_b(pf_model *m, float *base, int i) {
    return base + m->tensors[conv_tensor(m, i) + 1].offset;
}

int pf_model_set_weights(pf_model *m, pf_conv *convs, char *err, size_t errlen) {
    for (int i = 0; i < m->n_convs; i++) {
        const float *w = pf_model_conv_w(m, m->params, i), *b = pf_model_conv_b(m, m->params, i);
        if (i == m->sub_conv) {
            pf_zoo_sub_weights(m);
            w = m->sub_w;
            b = m->sub_w + (size_t)convs[i].oc * convs[i].ic * convs[i].k * convs[i].k;
        }
        if (pf_conv_set_weights(&convs[i], w, b, err, errlen)) return -1;
    }
    return 0;
}

/* Register conv `name` (ic -> oc, k x k) as tensors name.weight (OIHW) and name.bias (O). */
static void add_conv(pf_model *m, const char *name, int ic, int oc, int k, int relu) {
    pf_param_table_add_conv(m->tensors, &m->n_tensors, &m->n_params, name, ic, oc, k);
    pf_conv_init(&m->train_conv[m->n_convs], name, ic, oc, k, relu);
    pf_conv_init(&m->infer_conv[m->n_convs], name, ic, oc, k, relu);
    m->n_convs++;
}

/* Room for `convs` more layers and `tensors` more tensors. */
static int reserve(pf_model *m, int convs, int tensors) {
    if (m->n_convs + convs > m->cap_convs) {
        int cap = m->cap_convs ? 2 * m->cap_convs : 64;
        while (cap < m->n_convs + convs) cap *= 2;
        pf_conv *a = realloc(m->train_conv, (size_t)cap * sizeof *a);
        if (!a) return -1;
        m->train_conv = a;
        pf_conv *b = realloc(m->infer_conv, (size_t)cap * sizeof *b);
        if (!b) return -1;
        m->infer_conv = b;
        int *w = realloc(m->conv_w, (size_t)cap * sizeof *w);
        if (!w) return -1;
        m->conv_w = w;
        m->cap_convs = cap;
    }
    if (m->n_tensors + tensors > m->cap_tensors) {
        int cap = m->cap_tensors ? 2 * m->cap_tensors : 128;
        while (cap < m->n_tensors + tensors) cap *= 2;
        pf_param_info *t = realloc(m->tensors, (size_t)cap * sizeof *t);
        if (!t) return -1;
        m->tensors = t;
        pf_param_init *in = realloc(m->init, (size_t)cap * sizeof *in);
        if (!in) return -1;
        m->init = in;
        m->cap_tensors = cap;
    }
    return 0;
}

int pf_model_add_conv(pf_model *m, const char *name, int ic, int oc, int k,
                      pf_param_init w_init, pf_param_init b_init) {
    if (reserve(m, 1, 2)) return -1;
    int t = m->n_tensors;
    pf_param_table_add_conv(m->tensors, &m->n_tensors, &m->n_params, name, ic, oc, k);
    m->init[t] = w_init;
    m->init[t + 1] = b_init;
    m->conv_w[m->n_convs] = t;
    pf_conv_init(&m->train_conv[m->n_convs], name, ic, oc, k, 0);
    pf_conv_init(&m->infer_conv[m->n_convs], name, ic, oc, k, 0);
    return m->n_convs++;
}

int pf_model_add_tensor(pf_model *m, const char *name, int ndim, const int64_t *shape,
                        pf_param_init init) {
    if (reserve(m, 0, 1)) return -1;
    pf_param_info *t = &m->tensors[m->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = m->n_params;
    t->numel = 1;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->numel *= (size_t)shape[i];
    }
    m->n_params += t->numel;
    m->init[m->n_tensors] = init;
    return m->n_tensors++;
}

int pf_model_add_vector(pf_model *m, const char *name, int numel, pf_param_init init) {
    int64_t shape[1] = { numel };
    return pf_model_add_tensor(m, name, 1, shape, init);
}

int pf_model_add_layer(pf_model *m, const char *name, int ic, int oc, int k, int weight_tensor) {
    if (reserve(m, 1, 0)) return -1;
    pf_conv_init(&m->train_conv[m->n_convs], name, ic, oc, k, 0);
    pf_conv_init(&m->infer_conv[m->n_convs], name, ic, oc, k, 0);
    m->conv_w[m->n_convs] = weight_tensor;
    return m->n_convs++;
}

pf_model *pf_model_new(const pf_config *cfg, char *err, size_t errlen) {
    pf_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "model: out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->scale = cfg->scale;
    m->sub_conv = -1;
    if (pf_loss_parse(cfg->loss_type, &m->loss.type)) {
        snprintf(err, errlen, "model: unsupported loss_type '%s' (L1Loss, MSELoss, "
                 "CharbonnierLoss)", cfg->loss_type);
        goto fail;
    }
    m->loss.weight = cfg->loss_weight;
    m->loss.eps = cfg->charbonnier_eps;
    int max_convs;
    if (!strcmp(cfg->model_type, "EDSR")) {
        m->is_edsr = 1;
        if (cfg->scale == 2 || cfg->scale == 4) {
            m->stage_r = 2;
            m->n_stages = cfg->scale == 2 ? 1 : 2;
        } else if (cfg->scale == 3) {
            m->stage_r = 3;
            m->n_stages = 1;
        } else {
            snprintf(err, errlen, "model: EDSR supports scale 2, 3 or 4, not %d", cfg->scale);
            goto fail;
        }
        if (cfg->n_feats < 1 || cfg->n_blocks < 0 || cfg->img_range <= 0.0f) {
            snprintf(err, errlen, "model: EDSR needs n_feats >= 1, n_blocks >= 0, img_range > 0");
            goto fail;
        }
        max_convs = 2 * cfg->n_blocks + 3 + m->n_stages;
    } else {
        m->is_graph = 1;
        pf_graph_init(&m->graph);
        if (pf_zoo_build(m, err, errlen)) goto fail;
        max_convs = 0;
    }
    if (!m->is_graph) {
    m->tensors = calloc((size_t)max_convs * 2, sizeof *m->tensors);
    m->train_conv = calloc((size_t)max_convs, sizeof *m->train_conv);
    m->infer_conv = calloc((size_t)max_convs, sizeof *m->infer_conv);
    if (!m->tensors || !m->train_conv || !m->infer_conv) {
        snprintf(err, errlen, "model: out of memory");
        goto fail;
    }
    if (m->is_edsr) {
        int c = cfg->n_feats;
        char name[64];
        add_conv(m, "conv_first", 3, c, 3, 0);
        for (int i = 0; i < cfg->n_blocks; i++) {
            snprintf(name, sizeof name, "body.%d.conv1", i);
            add_conv(m, name, c, c, 3, 1);
            snprintf(name, sizeof name, "body.%d.conv2", i);
            add_conv(m, name, c, c, 3, 0);
            pf_conv_set_residual(&m->train_conv[m->n_convs - 1], cfg->res_scale);
            pf_conv_set_residual(&m->infer_conv[m->n_convs - 1], cfg->res_scale);
        }
        add_conv(m, "conv_after_body", c, c, 3, 0);
        pf_conv_set_residual(&m->train_conv[m->n_convs - 1], 1.0f);
        pf_conv_set_residual(&m->infer_conv[m->n_convs - 1], 1.0f);
        for (int s = 0; s < m->n_stages; s++) {
            snprintf(name, sizeof name, "upsample.%d", 2 * s);
            add_conv(m, name, c, c * m->stage_r * m->stage_r, 3, 0);
        }
        add_conv(m, "conv_last", c, 3, 3, 0);
    }
    }
    m->params = calloc(m->n_params, sizeof(float));
    m->grads = calloc(m->n_params, sizeof(float));
    if (!m->params || !m->grads) {
        snprintf(err, errlen, "model: out of memory for %zu parameters", m->n_params);
        goto fail;
    }
    if (pf_dnnl_init(&m->dnnl, err, errlen)) goto fail;
    if (!strcmp(cfg->conv_algorithm, "direct")) {
        m->dnnl.conv_algo = PF_CONV_DIRECT;
    } else if (!strcmp(cfg->conv_algorithm, "winograd")) {
        m->dnnl.conv_algo = PF_CONV_WINOGRAD;
    } else if (cfg->conv_algorithm[0] && strcmp(cfg->conv_algorithm, "auto")) {
        snprintf(err, errlen, "model: conv_algorithm '%s' is not auto, direct or winograd",
                 cfg->conv_algorithm);
        goto fail;
    }
    return m;
fail:
    pf_model_destroy(&m);
    return NULL;
}

void pf_model_destroy(pf_model **self) {
    pf_model *m = *self;
    if (!m) return;
    for (int i = 0; i < m->n_convs; i++) {
        pf_conv_free(&m->train_conv[i]);
        pf_conv_free(&m->infer_conv[i]);
    }
    pf_plan_free(&m->train);
    pf_plan_free(&m->infer);
    pf_dnnl_free(&m->dnnl);
    free(m->train_conv);
    free(m->infer_conv);
    free(m->tensors);
    free(m->init);
    free(m->conv_w);
    free(m->sub_w);
    free(m->sub_dw);
    free(m->sub_idx);
    pf_graph_free(&m->graph);
    free(m->params);
    free(m->grads);
    free(m->infer_weights);
    free(m);
    *self = NULL;
}

/* Graph networks: each tensor by its pf_param_init, from stream (seed, tensor index); normal
   draws by Box-Muller on pairs of uniforms. */
static void init_graph(pf_model *m, uint64_t seed) {
    for (int i = 0; i < m->n_tensors; i++) {
        const pf_param_info *t = &m->tensors[i];
        const pf_param_init *in = &m->init[i];
        pf_rng r = pf_rng_make(seed, (uint64_t)i, 0);
        float *p = m->params + t->offset;
        for (size_t j = 0; j < t->numel; j++) {
            double v;
            if (in->kind == PF_INIT_CONST) {
                v = in->scale;
            } else if (in->kind == PF_INIT_UNIFORM) {
                v = (2.0 * pf_rng_uniform(&r) - 1.0) / sqrt(in->fan_in);
            } else {
                double u1 = pf_rng_uniform(&r), u2 = pf_rng_uniform(&r);
                if (u1 < 1e-300) u1 = 1e-300;
                v = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2) * sqrt(2.0 / in->fan_in) *
                    in->scale;
            }
            p[j] = (float)v;
        }
    }
}

void pf_model_init(pf_model *m, uint64_t seed) {
    if (m->is_graph) {
        init_graph(m, seed);
        return;
    }
    /* kaiming_uniform_(a = sqrt(5)): gain = sqrt(2 / (1 + 5)), bound = gain * sqrt(3 / fan_in)
       = 1 / sqrt(fan_in); the bias bound is 1 / sqrt(fan_in) as well. Tensor i draws from
       stream (seed, i), element j is its j-th draw. */
    for (int i = 0; i < m->n_tensors; i++) {
        const pf_param_info *t = &m->tensors[i];
        const pf_param_info *wt = &m->tensors[i & ~1];
        double fan_in = (double)(wt->shape[1] * wt->shape[2] * wt->shape[3]);
        double bound = 1.0 / sqrt(fan_in);
        pf_rng r = pf_rng_make(seed, (uint64_t)i, 0);
        float *p = m->params + t->offset;
        for (size_t j = 0; j < t->numel; j++)
            p[j] = (float)((2.0 * pf_rng_uniform(&r) - 1.0) * bound);
    }
}

size_t pf_model_num_params(const pf_model *m) { return m->n_params; }
float *pf_model_params(pf_model *m) { return m->params; }
float *pf_model_grads(pf_model *m) { return m->grads; }
int pf_model_num_tensors(const pf_model *m) { return m->n_tensors; }
const pf_param_info *pf_model_tensor_info(const pf_model *m, int i) {
    return i >= 0 && i < m->n_tensors ? &m->tensors[i] : NULL;
}
int pf_model_scale(const pf_model *m) { return m->scale; }

int pf_model_input_multiple(const pf_model *m) {
    int q = 1;
    for (int i = 0; m->is_graph && i < m->graph.n_t; i++)
        if (!m->graph.t[i].one && m->graph.t[i].div > q) q = m->graph.t[i].div;
    return q;
}

static int plan(pf_model *m, pf_plan *p, pf_conv *convs, int n, int h, int w, int training,
                char *err, size_t errlen) {
    if (n < 1 || h < 1 || w < 1) {
        snprintf(err, errlen, "model: bad input shape %d x %d x %d", n, h, w);
        return -1;
    }
    if (p->n == n && p->h == h && p->w == w) return 0;
    pf_plan_free(p);
    int rc = m->is_graph ? pf_graph_plan(m, p, convs, n, h, w, training, err, errlen)
                         : pf_edsr_plan(m, p, convs, n, h, w, training, err, errlen);
    if (rc) {
        pf_plan_free(p);
        return -1;
    }
    p->n = n;
    p->h = h;
    p->w = w;
    p->training = training;
    return 0;
}

static int forward(pf_model *m, pf_plan *p, pf_conv *convs, const uint8_t *lq, char *err,
                   size_t errlen) {
    return m->is_graph ? pf_graph_forward(m, p, convs, lq, err, errlen)
                       : pf_edsr_forward(m, p, convs, lq, err, errlen);
}

/* The output activation's units: y = out / range + mean (mean NULL: none). */
static const float *out_mean(const pf_model *m) {
    if (m->is_graph) return m->graph.use_mean ? m->graph.mean : NULL;
    return m->cfg.rgb_mean;
}
static float out_range(const pf_model *m) {
    return m->is_graph ? m->graph.range : m->cfg.img_range;
}

int pf_model_train_step(pf_model *m, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                        int lq_w, float *loss, char *err, size_t errlen) {
    pf_plan *p = &m->train;
    pf_conv *convs = m->train_conv;
    if (plan(m, p, convs, n, lq_h, lq_w, 1, err, errlen)) return -1;
    if (pf_model_set_weights(m, convs, err, errlen)) return -1;
    int rc = forward(m, p, convs, lq, err, errlen);
    if (rc) return -1;
    int s = m->scale;
    *loss = (float)pf_loss_forward_backward(&m->loss, p->out, gt, n, lq_h * s, lq_w * s,
                                            out_mean(m), out_range(m), p->out_block, p->d_out);
    rc = m->is_graph ? pf_graph_backward(m, p, convs, err, errlen)
                     : pf_edsr_backward(m, p, convs, err, errlen);
    if (rc) return -1;
    return pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                         errlen);
}

int pf_model_train_output(const pf_model *m, int n, float *out) {
    const pf_plan *p = &m->train;
    if (!p->n || !p->out || n < 1 || n > p->n) return -1;
    pf_act_to_image(out, p->out, n, p->h * m->scale, p->w * m->scale, out_mean(m),
                    out_range(m), p->out_block);
    return 0;
}

int pf_model_infer(pf_model *m, const uint8_t *lq, int h, int w, float *out, char *err,
                   size_t errlen) {
    pf_plan *p = &m->infer;
    pf_conv *convs = m->infer_conv;
    int replanned = p->n != 1 || p->h != h || p->w != w;
    if (plan(m, p, convs, 1, h, w, 0, err, errlen)) return -1;
    /* The weights go into the primitives' layouts only when they changed since the last
       inference (or the primitives are new): evaluating many images or tiles with one
       checkpoint reorders them once. */
    if (replanned || !m->infer_weights ||
        memcmp(m->infer_weights, m->params, m->n_params * sizeof(float))) {
        if (pf_model_set_weights(m, convs, err, errlen)) return -1;
        if (!m->infer_weights) m->infer_weights = malloc(m->n_params * sizeof(float));
        if (m->infer_weights) memcpy(m->infer_weights, m->params, m->n_params * sizeof(float));
    }
    if (forward(m, p, convs, lq, err, errlen)) return -1;
    if (pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                      errlen))
        return -1;
    pf_act_to_image(out, p->out, 1, h * m->scale, w * m->scale, out_mean(m), out_range(m),
                    p->out_block);
    return 0;
}

int pf_model_describe(const pf_config *cfg, char *buf, size_t len) {
    /* The model: section of the resolved config, which lists exactly the keys the type takes,
       less the ones that shape no tensor. */
    static const char *const skip[] = { "type", "in_channels", "out_channels", "res_scale",
                                        "rgb_mean", "img_range", NULL };
    snprintf(buf, len, "%s", cfg->model_type);
    char *yaml = pf_config_to_yaml(cfg);
    if (!yaml) return -1;
    const char *p = strstr(yaml, "model:\n");
    for (p = p ? strchr(p, '\n') + 1 : ""; strncmp(p, "  ", 2) == 0 && p[2] != ' ';) {
        const char *eol = strchr(p, '\n');
        if (!eol) break;
        const char *key = p + 2, *colon = memchr(key, ':', (size_t)(eol - key));
        int keep = colon && colon[1] == ' ';   /* "loss:" opens a sub-section: not a value */
        for (int i = 0; keep && skip[i]; i++)
            keep = !(strlen(skip[i]) == (size_t)(colon - key) &&
                     !strncmp(key, skip[i], (size_t)(colon - key)));
        size_t used = strlen(buf);
        if (keep && used + 1 < len)
            snprintf(buf + used, len - used, ", %.*s %.*s", (int)(colon - key), key,
                     (int)(eol - colon - 2), colon + 2);
        p = eol + 1;
    }
    free(yaml);
    return 0;
}

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
    if ((arch || model) && iter) add(buf, len, " (PixFlow, iteration %s)", iter);
}

#define PF_SHOW_MISMATCHES 4   /* tensors named per kind of mismatch */

int pf_model_check_weights(const pf_model *m, const struct pf_safetensors *st, char *err,
                           size_t errlen) {
    char shaped[1024] = "", missing[512] = "", unexpected[512] = "", a[64], b[64];
    int n_shaped = 0, n_missing = 0, n_unexpected = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const pf_param_info *t = &m->tensors[i];
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
    int n = pf_safetensors_count(st);
    for (int j = 0; j < n; j++) {
        const char *name;
        pf_safetensors_at(st, j, &name, NULL, NULL);
        /* The EMA copy a checkpoint may carry (worker/train_state.h) is not the model's. */
        int known = !strncmp(name, PF_EMA_PREFIX, strlen(PF_EMA_PREFIX));
        for (int i = 0; i < m->n_tensors && !known; i++)
            known = !strcmp(m->tensors[i].name, name);
        if (!known && n_unexpected++ < PF_SHOW_MISMATCHES)
            add(unexpected, sizeof unexpected, "%s'%s'", n_unexpected > 1 ? ", " : "", name);
    }
    if (!n_shaped && !n_missing && !n_unexpected) return 0;
    char arch[256], says[384];
    pf_model_describe(&m->cfg, arch, sizeof arch);
    describe_file(st, says, sizeof says);
    snprintf(err, errlen, "%s: the weights do not fit the config's network (%s): tensors "
             "%d mis-shaped, %d missing, %d unexpected", pf_safetensors_name(st), arch,
             n_shaped, n_missing, n_unexpected);
    add(err, errlen, "%s%s", shaped, n_shaped > PF_SHOW_MISMATCHES ? "; ..." : "");
    if (n_missing)
        add(err, errlen, "; missing %s%s", missing, n_missing > PF_SHOW_MISMATCHES ? ", ..." : "");
    if (n_unexpected)
        add(err, errlen, "; unexpected %s%s", unexpected,
            n_unexpected > PF_SHOW_MISMATCHES ? ", ..." : "");
    add(err, errlen, "; %s. Set model: in the config to the network the checkpoint holds, or "
        "use a checkpoint of this one", says);
    return -1;
}

int pf_model_load_weights(pf_model *m, const struct pf_safetensors *st, char *err,
                          size_t errlen) {
    if (pf_model_check_weights(m, st, err, errlen) != 0) return -1;
    for (int i = 0; i < m->n_tensors; i++) {
        const pf_param_info *t = &m->tensors[i];
        const float *d = pf_safetensors_get(st, t->name, NULL, NULL);
        memcpy(m->params + t->offset, d, t->numel * sizeof(float));
    }
    return 0;
}

void pf_set_threads(int n) {
    char v[16];
    snprintf(v, sizeof v, "%d", n);
    omp_set_num_threads(n);
    setenv("OMP_NUM_THREADS", v, 1);    /* for the processes this one starts */
}
