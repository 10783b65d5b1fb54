/*  perceptual_loss — BasicSR's PerceptualLoss on given feature maps and its gradient (see
    perceptual_loss.h for the formulas and their sources). The options (names, parse,
    check) are common/perceptual_opts.c. Per layer the perceptual term from the difference of
    the features, the style term from the difference of their Gram matrices, and the gradient
    of both, summed in double and rounded to float once. */
#include "nn/perceptual_loss.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
