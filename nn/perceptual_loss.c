/*  perceptual_loss — BasicSR's PerceptualLoss on given feature maps and its gradient (see
    perceptual_loss.h for the formulas and their sources). The options half (names, parse,
    check) comes first, then the loss: per layer the perceptual term from the difference of
    the features, the style term from the difference of their Gram matrices, and the gradient
    of both, summed in double and rounded to float once. */
#include "nn/perceptual_loss.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/number.h"

static const char *const criterion_names[PF_PERCEP_N_CRITERIA] = {
    [PF_PERCEP_L1] = "l1",
    [PF_PERCEP_L2] = "l2",
    [PF_PERCEP_FRO] = "fro",
};

/* Index of name in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}


int pf_percep_criterion_parse(const char *name, pf_percep_criterion *c) {
    int i = name_index(criterion_names, PF_PERCEP_N_CRITERIA, name);
    if (i >= 0) *c = (pf_percep_criterion)i;
    return i < 0 ? -1 : 0;
}

const char *pf_percep_criterion_name(pf_percep_criterion c) {
    return (unsigned)c < PF_PERCEP_N_CRITERIA ? criterion_names[c] : "?";
}

void pf_perceptual_opts_default(pf_perceptual_opts *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->vgg_type, sizeof o->vgg_type, "vgg19");
    o->use_input_norm = 1;
    o->range_norm = 0;
    o->perceptual_weight = 1.0;
    o->style_weight = 0.0;
    o->criterion = PF_PERCEP_L1;
}

/* "KEY: not a VGG19 layer name: 'NAME' (one of conv1_1, ..., pool5)" into err. */
static void bad_layer(const char *key, const char *name, char *err, size_t errlen) {
    char list[PF_VGG19_N_LAYERS * PF_PERCEP_NAME_MAX];
    size_t used = 0;
    for (int i = 0; i < PF_VGG19_N_LAYERS; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 pf_vgg19_layer_name(i));
    snprintf(err, errlen, "%s: not a VGG19 layer name: '%s' (one of %s)", key, name, list);
}

/* A weight >= 0 from text (common/number.h's rule); 0, or -1 with "KEY: ..." in err. */
static int parse_weight(const char *key, const char *value, double *out, char *err,
                        size_t errlen) {
    double v;
    if (pf_parse_double(value, strlen(value), &v) != PF_NUM_OK) {
        snprintf(err, errlen, "%s: expected a number >= 0, got '%s'", key, value);
        return -1;
    }
    if (!(v >= 0)) {
        snprintf(err, errlen, "%s: must be >= 0, got %s", key, value);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bool(const char *key, const char *value, int *out, char *err, size_t errlen) {
    if (!strcmp(value, "true") || !strcmp(value, "True") || !strcmp(value, "TRUE")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(value, "false") || !strcmp(value, "False") || !strcmp(value, "FALSE")) {
        *out = 0;
        return 0;
    }
    snprintf(err, errlen, "%s: expected true or false, got '%s'", key, value);
    return -1;
}

/* layer_weights.NAME = value: appended after the layers already set. */
static int set_layer(pf_perceptual_opts *o, const char *key, const char *name,
                     const char *value, char *err, size_t errlen) {
    if (pf_vgg19_layer_index(name) < 0) {
        bad_layer(key, name, err, errlen);
        return -1;
    }
    for (int k = 0; k < o->n_layers; k++)
        if (!strcmp(o->layer_weights[k].name, name)) {
            snprintf(err, errlen, "%s: layer given twice", key);
            return -1;
        }
    if (o->n_layers >= PF_VGG19_N_LAYERS) { /* unreachable with distinct valid names */
        snprintf(err, errlen, "%s: more than %d layers", key, PF_VGG19_N_LAYERS);
        return -1;
    }
    double w;
    if (parse_weight(key, value, &w, err, errlen)) return -1;
    pf_percep_layer *l = &o->layer_weights[o->n_layers++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->weight = w;
    return 0;
}

int pf_perceptual_opts_set(pf_perceptual_opts *o, const char *key, const char *value, char *err,
                           size_t errlen) {
    static const char layer_prefix[] = "layer_weights.";
    if (!strncmp(key, layer_prefix, sizeof layer_prefix - 1))
        return set_layer(o, key, key + sizeof layer_prefix - 1, value, err, errlen);
    if (!strcmp(key, "perceptual_weight"))
        return parse_weight(key, value, &o->perceptual_weight, err, errlen);
    if (!strcmp(key, "style_weight"))
        return parse_weight(key, value, &o->style_weight, err, errlen);
    if (!strcmp(key, "use_input_norm")) return parse_bool(key, value, &o->use_input_norm, err,
                                                          errlen);
    if (!strcmp(key, "range_norm")) return parse_bool(key, value, &o->range_norm, err, errlen);
    if (!strcmp(key, "criterion")) {
        if (pf_percep_criterion_parse(value, &o->criterion) == 0) return 0;
        snprintf(err, errlen, "%s: unknown criterion '%s' (one of l1, l2, fro)", key, value);
        return -1;
    }
    if (!strcmp(key, "vgg_type")) {
        if (!strcmp(value, "vgg19")) {
            snprintf(o->vgg_type, sizeof o->vgg_type, "vgg19");
            return 0;
        }
        snprintf(err, errlen, "%s: '%s' is not supported (only vgg19)", key, value);
        return -1;
    }
    snprintf(err, errlen,
             "%s: unknown key (known: layer_weights.NAME, vgg_type, use_input_norm, range_norm,"
             " perceptual_weight, style_weight, criterion)", key);
    return -1;
}

int pf_perceptual_opts_check(const pf_perceptual_opts *o, char *err, size_t errlen) {
    if (o->n_layers < 1 || o->n_layers > PF_VGG19_N_LAYERS) {
        snprintf(err, errlen, "layer_weights: %d layers; give 1 to %d, e.g. {conv5_4: 1.0}",
                 o->n_layers, PF_VGG19_N_LAYERS);
        return -1;
    }
    char key[64];
    for (int k = 0; k < o->n_layers; k++) {
        const pf_percep_layer *l = &o->layer_weights[k];
        snprintf(key, sizeof key, "layer_weights.%.*s", PF_PERCEP_NAME_MAX, l->name);
        if (!memchr(l->name, 0, sizeof l->name) || pf_vgg19_layer_index(l->name) < 0) {
            bad_layer(key, memchr(l->name, 0, sizeof l->name) ? l->name : "(unterminated)",
                      err, errlen);
            return -1;
        }
        for (int j = 0; j < k; j++)
            if (!strcmp(o->layer_weights[j].name, l->name)) {
                snprintf(err, errlen, "%s: layer given twice", key);
                return -1;
            }
        if (!(l->weight >= 0 && isfinite(l->weight))) {
            snprintf(err, errlen, "%s: must be a finite number >= 0, got %g", key, l->weight);
            return -1;
        }
    }
    static const char *const wnames[2] = { "perceptual_weight", "style_weight" };
    const double w[2] = { o->perceptual_weight, o->style_weight };
    for (int i = 0; i < 2; i++)
        if (!(w[i] >= 0 && isfinite(w[i]))) {
            snprintf(err, errlen, "%s: must be a finite number >= 0, got %g", wnames[i], w[i]);
            return -1;
        }
    if (strcmp(o->vgg_type, "vgg19")) {
        snprintf(err, errlen, "vgg_type: '%.*s' is not supported (only vgg19)",
                 (int)sizeof o->vgg_type, o->vgg_type);
        return -1;
    }
    if ((unsigned)o->criterion >= PF_PERCEP_N_CRITERIA) {
        snprintf(err, errlen, "criterion: %d is not l1, l2 or fro", (int)o->criterion);
        return -1;
    }
    return 0;
}

/* ---- the loss ---- */

/* crit over m differences given by their sum of |d| (l1) or of d^2 (l2, fro). */
static double crit_value(pf_percep_criterion c, double sum, size_t m) {
    if (c == PF_PERCEP_FRO) return sqrt(sum);
    return sum / (double)m;
}

/* The factor s with d crit / d a = s * (sign(d) for l1, d otherwise): 1/m, 2/m, 1/||d||
   (0 at a zero norm, as torch). */
static double crit_scale(pf_percep_criterion c, double value, size_t m) {
    if (c == PF_PERCEP_L1) return 1.0 / (double)m;
    if (c == PF_PERCEP_L2) return 2.0 / (double)m;
    return value > 0 ? 1.0 / value : 0.0;
}

static double crit_deriv(pf_percep_criterion c, double d, double scale) {
    if (c == PF_PERCEP_L1) return scale * (double)((d > 0) - (d < 0));
    return scale * d;
}

/* Sum of |d| (l1) or d^2 (l2, fro) over the m differences a - g. */
static double diff_sum(pf_percep_criterion c, const float *a, const float *g, size_t m) {
    double sum = 0.0;
    for (size_t i = 0; i < m; i++) {
        double d = (double)a[i] - (double)g[i];
        sum += c == PF_PERCEP_L1 ? fabs(d) : d * d;
    }
    return sum;
}

/* gram[i c + j] = sum_p f[i][p] f[j][p] / (c hw), f: c x hw floats; each entry summed in
   double by one thread, the lower triangle mirrored from the upper. */
static void gram(const float *f, int c, size_t hw, double *out) {
    const double norm = 1.0 / ((double)c * (double)hw);
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < c; i++) {
        const float *fi = f + (size_t)i * hw;
        for (int j = i; j < c; j++) {
            const float *fj = f + (size_t)j * hw;
            double s = 0.0;
            for (size_t p = 0; p < hw; p++) s += (double)fi[p] * (double)fj[p];
            out[(size_t)i * c + j] = s * norm;
        }
    }
    for (int i = 0; i < c; i++)
        for (int j = 0; j < i; j++) out[(size_t)i * c + j] = out[(size_t)j * c + i];
}

/* The style criterion of one layer: dg (n c c doubles) gets gram(fx) - gram(fgt) per sample
   (tmp: c c doubles), then, when grad, d style_k / d gram(fx) times scale (in place).
   Returns crit(gram(fx), gram(fgt)). */
static double style_layer(pf_percep_criterion cr, const float *fx, const float *fgt,
                          const int *shape, double scale, int grad, double *dg, double *tmp) {
    const int n = shape[0], c = shape[1];
    const size_t hw = (size_t)shape[2] * (size_t)shape[3], cc = (size_t)c * (size_t)c;
    for (int b = 0; b < n; b++) {
        double *d = dg + (size_t)b * cc;
        gram(fx + (size_t)b * c * hw, c, hw, d);
        gram(fgt + (size_t)b * c * hw, c, hw, tmp);
        for (size_t i = 0; i < cc; i++) d[i] -= tmp[i];
    }
    const size_t m = (size_t)n * cc;
    double sum = 0.0;
    for (size_t i = 0; i < m; i++) sum += cr == PF_PERCEP_L1 ? fabs(dg[i]) : dg[i] * dg[i];
    const double value = crit_value(cr, sum, m);
    if (grad) {
        const double s = scale * crit_scale(cr, value, m);
        for (size_t i = 0; i < m; i++) dg[i] = crit_deriv(cr, dg[i], s);
    }
    return value;
}

/* out (c x hw doubles) = 2 dg f / (c hw) for one sample: d style / d f through the symmetric
   dg (c x c); each row summed by one thread in j order. */
static void gram_backward(const double *dg, const float *f, int c, size_t hw, double *out) {
    const double k = 2.0 / ((double)c * (double)hw);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < c; i++) {
        double *row = out + (size_t)i * hw;
        for (size_t p = 0; p < hw; p++) row[p] = 0.0;
        for (int j = 0; j < c; j++) {
            const double a = dg[(size_t)i * c + j] * k;
            const float *fj = f + (size_t)j * hw;
            for (size_t p = 0; p < hw; p++) row[p] += a * (double)fj[p];
        }
    }
}

/* What one layer's gradient needs: the perceptual factor (0: no percep term) and the style
   gradient by gram entry (NULL: no style term). */
typedef struct {
    pf_percep_criterion cr;
    double pscale;       /* d percep / d fx = crit_deriv(cr, fx - fgt, pscale) */
    const double *dg;    /* n x c x c: d style / d gram(fx), or NULL */
    double *dfs;         /* scratch: c x h x w doubles for one sample's style gradient */
} layer_grad;

/* dfx = d percep / d fx + d style / d fx for one layer, rounded to float once. */
static void layer_backward(const layer_grad *g, const float *fx, const float *fgt,
                           const int *shape, float *dfx) {
    const int n = shape[0], c = shape[1];
    const size_t hw = (size_t)shape[2] * (size_t)shape[3], chw = (size_t)c * hw;
    for (int b = 0; b < n; b++) {
        const size_t off = (size_t)b * chw;
        if (g->dg) gram_backward(g->dg + (size_t)b * c * c, fx + off, c, hw, g->dfs);
        for (size_t i = 0; i < chw; i++) {
            double v = g->dg ? g->dfs[i] : 0.0;
            if (g->pscale != 0.0)
                v += crit_deriv(g->cr, (double)fx[off + i] - (double)fgt[off + i], g->pscale);
            dfx[off + i] = (float)v;
        }
    }
}

/* Checks of the arguments, and the scratch sizes (doubles) the style term needs. 0 or -1. */
static int check_args(const pf_perceptual_opts *o, int n_layers, const float *const *fx,
                      const float *const *fgt, const int (*shape)[4], float **dfx,
                      size_t *max_ncc, size_t *max_chw) {
    char err[512];
    if (!o || pf_perceptual_opts_check(o, err, sizeof err) || n_layers != o->n_layers || !fx ||
        !fgt || !shape)
        return -1;
    *max_ncc = *max_chw = 0;
    for (int k = 0; k < n_layers; k++) {
        const int *s = shape[k];
        if (s[0] < 1 || s[1] < 1 || s[2] < 1 || s[3] < 1 || !fx[k] || !fgt[k] ||
            (dfx && !dfx[k]))
            return -1;
        size_t ncc = (size_t)s[0] * s[1] * s[1] + (size_t)s[1] * s[1]; /* dg, tmp */
        size_t chw = (size_t)s[1] * s[2] * s[3];
        if (ncc > *max_ncc) *max_ncc = ncc;
        if (chw > *max_chw) *max_chw = chw;
    }
    return 0;
}

int pf_perceptual_forward_backward(const pf_perceptual_opts *o, int n_layers,
                                   const float *const *fx, const float *const *fgt,
                                   const int (*shape)[4], float **dfx, double *percep,
                                   double *style) {
    size_t max_ncc, max_chw;
    if (!percep || !style ||
        check_args(o, n_layers, fx, fgt, shape, dfx, &max_ncc, &max_chw))
        return -1;
    const int has_p = o->perceptual_weight > 0, has_s = o->style_weight > 0;
    double *scratch = NULL;
    if (has_s) {
        scratch = malloc(sizeof *scratch * (max_ncc + (dfx ? max_chw : 0)));
        if (!scratch) return -1;
    }
    const pf_percep_criterion cr = o->criterion;
    double p_sum = 0.0, s_sum = 0.0;
    for (int k = 0; k < n_layers; k++) {
        const int *s = shape[k];
        const size_t m = (size_t)s[0] * s[1] * s[2] * s[3];
        const double w = o->layer_weights[k].weight;
        layer_grad g = { cr, 0.0, NULL, NULL };
        if (has_p) {
            double v = crit_value(cr, diff_sum(cr, fx[k], fgt[k], m), m);
            p_sum += v * w;
            g.pscale = o->perceptual_weight * w * crit_scale(cr, v, m);
        }
        if (has_s) {
            double *dg = scratch, *tmp = scratch + (size_t)s[0] * s[1] * s[1];
            s_sum += w * style_layer(cr, fx[k], fgt[k], s, o->style_weight * w, dfx != NULL,
                                     dg, tmp);
            g.dg = dg;
            g.dfs = scratch + max_ncc;
        }
        if (dfx) layer_backward(&g, fx[k], fgt[k], s, dfx[k]);
    }
    free(scratch);
    *percep = has_p ? p_sum * o->perceptual_weight : NAN;
    *style = has_s ? s_sum * o->style_weight : NAN;
    return (has_p ? PF_PERCEP_HAS_PERCEP : 0) | (has_s ? PF_PERCEP_HAS_STYLE : 0);
}
