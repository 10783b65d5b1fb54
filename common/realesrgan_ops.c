/*  realesrgan_ops — see realesrgan_ops.h.

    Resize: each axis becomes a table of taps (per output index: up to T source indices and
    weights); rows are resampled first into a temporary h x out_w image, then columns.
    USM: the 51-tap Gaussian along rows into a double image, then along columns; run once on
    the image and once on the threshold mask; each pass adds the taps over a whole row
    (common/taps.h: vectorised, four taps a pass) in the plain loop's order, so its sums are
    bit-identical to that loop's.
*/
#include "common/realesrgan_ops.h"

#include "common/image.h"
#include "common/taps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;
static const double CUBIC_A = -0.75; /* PyTorch's bicubic coefficient */

static const char *const MODES[PF_RESIZE_N_MODES] = { "area", "bilinear", "bicubic" };
static const char *const DIRS[3] = { "up", "down", "keep" };

const char *pf_resize_mode_name(pf_resize_mode m) {
    return (unsigned)m < PF_RESIZE_N_MODES ? MODES[m] : "?";
}

static double uniform(pf_rng *r, double lo, double hi) {
    return lo + (hi - lo) * pf_rng_uniform(r);
}

/* ---- options ---- */

void pf_resize_opts_default(pf_resize_opts *o, int stage) {
    static const double p1[3] = { 0.2, 0.7, 0.1 }, p2[3] = { 0.3, 0.4, 0.3 };
    memcpy(o->resize_prob, stage == 2 ? p2 : p1, sizeof o->resize_prob);
    o->n_resize_prob = 3;
    o->resize_range[0] = stage == 2 ? 0.3 : 0.15;
    o->resize_range[1] = stage == 2 ? 1.2 : 1.5;
}

static int check_prob(double v, const char *key, const char *sfx, char *err, size_t errlen) {
    if (v >= 0 && v <= 1) return 0;
    snprintf(err, errlen, "%s%s: %g is not a probability (0..1)", key, sfx, v);
    return -1;
}

/* [lo, hi] with lo <= hi and lo >= min. */
static int check_range(const double *v, double min, const char *key, const char *sfx,
                       char *err, size_t errlen) {
    if (!isfinite(v[0]) || !isfinite(v[1]) || v[0] > v[1]) {
        snprintf(err, errlen, "%s%s: [%g, %g] is not a range lo <= hi", key, sfx, v[0], v[1]);
        return -1;
    }
    if (v[0] < min) {
        snprintf(err, errlen, "%s%s: [%g, %g] must not go below %g", key, sfx, v[0], v[1], min);
        return -1;
    }
    return 0;
}

int pf_resize_opts_check(const pf_resize_opts *o, const char *suffix, char *err, size_t errlen) {
    const char *s = suffix ? suffix : "";
    if (o->n_resize_prob != 3) {
        snprintf(err, errlen, "resize_prob%s: %d values, not 3 (up, down, keep)", s,
                 o->n_resize_prob);
        return -1;
    }
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        if (!(o->resize_prob[i] >= 0)) {
            snprintf(err, errlen, "resize_prob%s: value %d (%g) is negative", s, i + 1,
                     o->resize_prob[i]);
            return -1;
        }
        sum += o->resize_prob[i];
    }
    if (fabs(sum - 1) > 1e-6) {
        snprintf(err, errlen, "resize_prob%s: 3 values sum to %g, not 1", s, sum);
        return -1;
    }
    if (check_range(o->resize_range, 1e-9, "resize_range", s, err, errlen) != 0) return -1;
    if (o->resize_range[0] > 1 || o->resize_range[1] < 1) {
        snprintf(err, errlen, "resize_range%s: [%g, %g] must hold 1 (down below, up above)", s,
                 o->resize_range[0], o->resize_range[1]);
        return -1;
    }
    return 0;
}

void pf_noise_opts_default(pf_noise_opts *o, int stage) {
    o->gaussian_noise_prob = 0.5;
    o->noise_range[0] = 1;
    o->noise_range[1] = stage == 2 ? 25 : 30;
    o->poisson_scale_range[0] = 0.05;
    o->poisson_scale_range[1] = stage == 2 ? 2.5 : 3;
    o->gray_noise_prob = 0.4;
}

int pf_noise_opts_check(const pf_noise_opts *o, const char *suffix, char *err, size_t errlen) {
    const char *s = suffix ? suffix : "";
    if (check_prob(o->gaussian_noise_prob, "gaussian_noise_prob", s, err, errlen) != 0 ||
        check_prob(o->gray_noise_prob, "gray_noise_prob", s, err, errlen) != 0 ||
        check_range(o->noise_range, 0, "noise_range", s, err, errlen) != 0 ||
        check_range(o->poisson_scale_range, 0, "poisson_scale_range", s, err, errlen) != 0)
        return -1;
    return 0;
}

/* ---- draws ---- */

pf_rng pf_resize_rng(uint64_t sample_key, int stage) {
    return pf_rng_make(sample_key ^ 0x726573697a657273ULL, (uint64_t)stage, 0); /* "resizers" */
}

pf_rng pf_noise_rng(uint64_t sample_key, int stage) {
    return pf_rng_make(sample_key ^ 0x6e6f697365647277ULL, (uint64_t)stage, 0); /* "noisedrw" */
}

pf_rng pf_noise_sample_rng(uint64_t sample_key, int stage) {
    return pf_rng_make(sample_key ^ 0x6e6f69736573616dULL, (uint64_t)stage, 0); /* "noisesam" */
}

void pf_resize_draw(const pf_resize_opts *o, pf_rng *r, pf_resize_params *p) {
    double u = pf_rng_uniform(r);
    if (u < o->resize_prob[0]) p->dir = PF_RESIZE_UP;
    else if (u < o->resize_prob[0] + o->resize_prob[1]) p->dir = PF_RESIZE_DOWN;
    else p->dir = PF_RESIZE_KEEP;
    if (p->dir == PF_RESIZE_UP) p->scale = uniform(r, 1, o->resize_range[1]);
    else if (p->dir == PF_RESIZE_DOWN) p->scale = uniform(r, o->resize_range[0], 1);
    else p->scale = 1;
    p->mode = (pf_resize_mode)pf_rng_below(r, PF_RESIZE_N_MODES);
}

int pf_resize_params_format(const pf_resize_params *p, char *buf, size_t len) {
    return snprintf(buf, len, "resize=%s scale=%.17g mode=%s",
                    (unsigned)p->dir < 3 ? DIRS[p->dir] : "?", p->scale,
                    pf_resize_mode_name(p->mode));
}

void pf_noise_draw(const pf_noise_opts *o, pf_rng *r, pf_noise_params *p) {
    memset(p, 0, sizeof *p);
    if (pf_rng_uniform(r) < o->gaussian_noise_prob) {
        p->kind = PF_NOISE_GAUSSIAN;
        p->sigma = uniform(r, o->noise_range[0], o->noise_range[1]);
    } else {
        p->kind = PF_NOISE_POISSON;
        p->scale = uniform(r, o->poisson_scale_range[0], o->poisson_scale_range[1]);
    }
    p->gray = pf_rng_uniform(r) < o->gray_noise_prob;
}

int pf_noise_params_format(const pf_noise_params *p, char *buf, size_t len) {
    if (p->kind == PF_NOISE_GAUSSIAN)
        return snprintf(buf, len, "noise=gaussian gray=%d sigma=%.17g", p->gray, p->sigma);
    return snprintf(buf, len, "noise=poisson gray=%d scale=%.17g", p->gray, p->scale);
}

/* ---- resize ---- */

int pf_resize_out_size(int n, double factor) {
    return (int)floor((double)n * factor);
}

typedef struct {
    int taps;       /* taps per output index */
    int *idx;       /* out x taps source indices */
    float *wt;      /* out x taps weights */
} axis_taps;

static double cubic_near(double x) { /* |x| <= 1 */
    return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1;
}

static double cubic_far(double x) { /* 1 < |x| < 2 */
    return ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A;
}

static int clampi(int i, int n) {
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The taps of one axis: n input, m output, coordinate scale s. */
static int make_taps(int n, int m, double s, pf_resize_mode mode, axis_taps *t) {
    t->taps = mode == PF_RESIZE_BICUBIC ? 4 : mode == PF_RESIZE_BILINEAR ? 2 : (n + m - 1) / m + 1;
    t->idx = calloc((size_t)m * t->taps, sizeof *t->idx);
    t->wt = calloc((size_t)m * t->taps, sizeof *t->wt);
    if (!t->idx || !t->wt) return -1;
    for (int o = 0; o < m; o++) {
        int *ix = t->idx + (size_t)o * t->taps;
        float *w = t->wt + (size_t)o * t->taps;
        if (mode == PF_RESIZE_AREA) {
            long a = (long)o * n / m, b = ((long)(o + 1) * n + m - 1) / m;
            for (long i = a; i < b; i++) {
                ix[i - a] = (int)i;
                w[i - a] = (float)(1.0 / (double)(b - a));
            }
            continue;
        }
        double x = (o + 0.5) * s - 0.5;
        if (mode == PF_RESIZE_BILINEAR) {
            if (x < 0) x = 0;
            int i0 = (int)x;
            double l = x - i0;
            ix[0] = i0;
            ix[1] = i0 < n - 1 ? i0 + 1 : i0;
            w[0] = (float)(1 - l);
            w[1] = (float)l;
        } else {
            int i0 = (int)floor(x);
            double f = x - i0;
            double c[4] = { cubic_far(f + 1), cubic_near(f), cubic_near(1 - f), cubic_far(2 - f) };
            for (int j = 0; j < 4; j++) {
                ix[j] = clampi(i0 - 1 + j, n);
                w[j] = (float)c[j];
            }
        }
    }
    return 0;
}

/* dst[o] = sum_j wt[o][j] * src[idx[o][j]] for m outputs of `px` floats each, src/dst
   strides in floats between successive indices. */
static void resample_line(const float *src, size_t sstride, float *dst, size_t dstride,
                          int m, int px, const axis_taps *t) {
    for (int o = 0; o < m; o++) {
        const int *ix = t->idx + (size_t)o * t->taps;
        const float *w = t->wt + (size_t)o * t->taps;
        float *d = dst + (size_t)o * dstride;
        for (int k = 0; k < px; k++) d[k] = 0;
        for (int j = 0; j < t->taps; j++) {
            if (w[j] == 0) continue;
            const float *s = src + (size_t)ix[j] * sstride;
            for (int k = 0; k < px; k++) d[k] += w[j] * s[k];
        }
    }
}

int pf_resize_f32(const float *src, int h, int w, int c, int out_h, int out_w, double factor,
                  pf_resize_mode mode, float *dst, char *err, size_t errlen) {
    if (h < 1 || w < 1 || out_h < 1 || out_w < 1 || c < 1 || c > 4) {
        snprintf(err, errlen, "resize: bad sizes %dx%dx%d -> %dx%d", h, w, c, out_h, out_w);
        return -1;
    }
    if ((unsigned)mode >= PF_RESIZE_N_MODES) {
        snprintf(err, errlen, "resize: unknown mode %d", (int)mode);
        return -1;
    }
    double sh = factor > 0 ? 1 / factor : (double)h / out_h;
    double sw = factor > 0 ? 1 / factor : (double)w / out_w;
    axis_taps th = { 0 }, tw = { 0 };
    float *tmp = malloc((size_t)h * out_w * c * sizeof *tmp);
    int rc = -1;
    if (tmp && make_taps(h, out_h, sh, mode, &th) == 0 && make_taps(w, out_w, sw, mode, &tw) == 0) {
        for (int y = 0; y < h; y++) /* rows: pixels of c floats */
            resample_line(src + (size_t)y * w * c, (size_t)c, tmp + (size_t)y * out_w * c,
                          (size_t)c, out_w, c, &tw);
        resample_line(tmp, (size_t)out_w * c, dst, (size_t)out_w * c, out_h, out_w * c, &th);
        rc = 0;
    } else {
        snprintf(err, errlen, "resize: out of memory for %dx%dx%d -> %dx%d", h, w, c, out_h,
                 out_w);
    }
    free(tmp);
    free(th.idx);
    free(th.wt);
    free(tw.idx);
    free(tw.wt);
    return rc;
}

/* ---- noise ---- */

/* v rounded to 1/255 as torch's clamp((v * 255).round(), 0, 255), as a level 0..255. */
static int level(float v) {
    float r = nearbyintf(v * 255.0f);
    return r < 0 ? 0 : r > 255 ? 255 : (int)r;
}

double pf_noise_poisson_vals(const float *v, size_t n) {
    unsigned char seen[256] = { 0 };
    int u = 0;
    for (size_t i = 0; i < n; i++) {
        int l = level(v[i]);
        u += !seen[l];
        seen[l] = 1;
    }
    return u <= 1 ? 1 : pow(2, ceil(log2((double)u)));
}

static double normal(pf_rng *r, double *spare, int *has_spare) {
    if (*has_spare) {
        *has_spare = 0;
        return *spare;
    }
    double u1 = pf_rng_uniform(r), u2 = pf_rng_uniform(r);
    double rad = sqrt(-2 * log(1 - u1)); /* 1 - u1 in (0, 1]: no log(0) */
    *spare = rad * sin(2 * PI * u2);
    *has_spare = 1;
    return rad * cos(2 * PI * u2);
}

/* What Poisson(lam) needs that depends on lam alone, computed once per level of the image
   (lam = q * vals takes at most 256 values): the same expressions as per draw, so the same
   bits. */
typedef struct {
    double lam;
    double p0;                  /* exp(-lam) (inversion, lam < 10) */
    double loglam, b, a, vr;    /* PTRS's constants (lam >= 10) */
    double log_inv_alpha;
} poisson_consts;

static void poisson_prepare(double lam, poisson_consts *c) {
    c->lam = lam;
    if (lam <= 0) return;
    if (lam < 10) {
        c->p0 = exp(-lam);
        return;
    }
    double slam = sqrt(lam);
    c->loglam = log(lam);
    c->b = 0.931 + 2.53 * slam;
    c->a = -0.059 + 0.02483 * c->b;
    c->log_inv_alpha = log(1.1239 + 1.1328 / (c->b - 3.4));
    c->vr = 0.9277 - 3.6224 / (c->b - 2);
}

/* Poisson(lam): inversion for lam < 10, else PTRS (Hörmann, "The transformed rejection
   method for generating Poisson random variables", 1993). */
static double poisson(pf_rng *r, const poisson_consts *c) {
    double lam = c->lam;
    if (lam <= 0) return 0;
    if (lam < 10) {
        double u = pf_rng_uniform(r), p = c->p0, cum = p;
        int k = 0;
        while (u > cum && k < 1000) {
            k++;
            p *= lam / k;
            cum += p;
        }
        return k;
    }
    double b = c->b, a = c->a;
    for (;;) {
        double u = pf_rng_uniform(r) - 0.5, v = pf_rng_uniform(r), us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= c->vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (log(v) + c->log_inv_alpha - log(a / (us * us) + b) <=
            -lam + k * c->loglam - lgamma(k + 1))
            return k;
    }
}

static float gray_of(const float *px) {
    return 0.2989f * px[0] + 0.587f * px[1] + 0.114f * px[2];
}

/* The noise of n planes' worth (1 gray or 3 colour) into noise[], from values v. */
static void make_noise(const float *v, size_t n, const pf_noise_params *p, pf_rng *r,
                       float *noise, float *draws) {
    double spare = 0;
    int has = 0;
    float vals = p->kind == PF_NOISE_POISSON ? (float)pf_noise_poisson_vals(v, n) : 1;
    poisson_consts c[256];
    unsigned char ready[256] = { 0 };
    for (size_t i = 0; i < n; i++) {
        float d;
        if (p->kind == PF_NOISE_GAUSSIAN) {
            d = (float)normal(r, &spare, &has);
            noise[i] = d * (float)p->sigma / 255.0f;
        } else {
            int l = level(v[i]);
            float q = (float)l / 255.0f;
            if (!ready[l]) poisson_prepare((double)(q * vals), &c[l]);
            ready[l] = 1;
            d = (float)poisson(r, &c[l]);
            noise[i] = (d / vals - q) * (float)p->scale;
        }
        if (draws) draws[i] = d;
    }
}

int pf_noise_add(float *img, int h, int w, const pf_noise_params *p, pf_rng *r, float *draws,
                 char *err, size_t errlen) {
    if (h < 1 || w < 1) {
        snprintf(err, errlen, "noise: bad size %dx%d", h, w);
        return -1;
    }
    size_t npx = (size_t)h * w, n = p->gray ? npx : npx * 3;
    float *noise = malloc(n * sizeof *noise), *gray = NULL;
    if (p->gray && p->kind == PF_NOISE_POISSON) gray = malloc(npx * sizeof *gray);
    if (!noise || (p->gray && p->kind == PF_NOISE_POISSON && !gray)) {
        free(noise);
        free(gray);
        snprintf(err, errlen, "noise: out of memory for %dx%d", h, w);
        return -1;
    }
    if (gray)
        for (size_t i = 0; i < npx; i++) gray[i] = gray_of(img + 3 * i);
    make_noise(gray ? gray : img, n, p, r, noise, draws);
    for (size_t i = 0; i < npx * 3; i++) {
        float v = img[i] + noise[p->gray ? i / 3 : i];
        img[i] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
    free(noise);
    free(gray);
    return 0;
}

/* ---- USM ---- */

void pf_usm_kernel(double *k) {
    const int n = PF_USM_KSIZE;
    double sigma = 0.3 * ((n - 1) * 0.5 - 1) + 0.8, sum = 0; /* OpenCV's rule for sigma 0 */
    for (int i = 0; i < n; i++) {
        double x = i - (n - 1) * 0.5;
        k[i] = exp(-x * x / (2 * sigma * sigma));
        sum += k[i];
    }
    for (int i = 0; i < n; i++) k[i] /= sum;
}

/* BORDER_REFLECT_101 (gfedcb|abcdefgh|gfedcba), repeated for any i. */
static int reflect101(int i, int n) {
    if (n == 1) return 0;
    int period = 2 * (n - 1);
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}

/* dst = src (h x w x c) filtered with the separable kernel k; tmp holds h * w * c doubles,
   line (w + 2r) * c doubles and acc w * c doubles. Each output sums its 51 taps as the plain
   double loop does (s = 0; s += k[j] * v, j = -r..r), so the result is that loop's to the
   bit; the taps run over whole rows (pf_add_taps_f64) so that they vectorise: the row
   pass over a reflect-padded double copy of the row, the column pass over tmp's rows. */
static void gauss_blur(const float *src, int h, int w, int c, const double *k, double *tmp,
                       double *line, double *acc, float *dst) {
    const int r = PF_USM_KSIZE / 2;
    const size_t run = (size_t)w * c;
    const double *p[PF_USM_KSIZE];
    for (int j = 0; j < PF_USM_KSIZE; j++) p[j] = line + (size_t)j * c;
    for (int y = 0; y < h; y++) {
        const float *row = src + run * y;
        for (int x = -r; x < w + r; x++)
            for (int ch = 0; ch < c; ch++)
                line[(size_t)(x + r) * c + ch] = row[(size_t)reflect101(x, w) * c + ch];
        double *t = tmp + run * y;
        for (size_t i = 0; i < run; i++) t[i] = 0;
        pf_add_taps_f64(t, p, k, PF_USM_KSIZE, run);
    }
    for (int y = 0; y < h; y++) {
        for (int j = -r; j <= r; j++) p[j + r] = tmp + run * reflect101(y + j, h);
        for (size_t i = 0; i < run; i++) acc[i] = 0;
        pf_add_taps_f64(acc, p, k, PF_USM_KSIZE, run);
        float *d = dst + run * y;
        for (size_t i = 0; i < run; i++) d[i] = (float)acc[i];
    }
}

static int usm_size_bad(int h, int w, int c, char *err, size_t errlen) {
    if (h >= 1 && w >= 1 && c >= 1 && c <= 4) return 0;
    snprintf(err, errlen, "usm: bad size %dx%dx%d", h, w, c);
    return 1;
}

int pf_usm_sharp_f32(const float *src, int h, int w, int c, float *dst, char *err,
                     size_t errlen) {
    if (usm_size_bad(h, w, c, err, errlen)) return -1;
    size_t n = (size_t)h * w * c;
    size_t run = (size_t)w * c;
    double k[PF_USM_KSIZE], *tmp = malloc(n * sizeof *tmp), *acc = malloc(run * sizeof *acc);
    float *blur = malloc(n * sizeof *blur), *mask = malloc(n * sizeof *mask);
    double *line = malloc((size_t)(w + PF_USM_KSIZE - 1) * c * sizeof *line);
    if (!tmp || !acc || !blur || !mask || !line) {
        free(tmp);
        free(acc);
        free(blur);
        free(mask);
        free(line);
        snprintf(err, errlen, "usm: out of memory for %dx%dx%d", h, w, c);
        return -1;
    }
    pf_usm_kernel(k);
    gauss_blur(src, h, w, c, k, tmp, line, acc, blur);
    for (size_t i = 0; i < n; i++) {
        blur[i] = src[i] - blur[i]; /* the residual */
        mask[i] = fabsf(blur[i]) * 255.0f > (float)PF_USM_THRESHOLD ? 1.0f : 0.0f;
    }
    gauss_blur(mask, h, w, c, k, tmp, line, acc, mask); /* read into tmp before written */
    for (size_t i = 0; i < n; i++) {
        float sharp = src[i] + (float)PF_USM_WEIGHT * blur[i];
        sharp = sharp < 0 ? 0 : sharp > 1 ? 1 : sharp;
        dst[i] = mask[i] * sharp + (1 - mask[i]) * src[i];
    }
    free(tmp);
    free(acc);
    free(blur);
    free(mask);
    free(line);
    return 0;
}

int pf_usm_sharp_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, char *err,
                    size_t errlen) {
    if (usm_size_bad(h, w, c, err, errlen)) return -1;
    size_t n = (size_t)h * w * c;
    float *f = malloc(n * 2 * sizeof *f);
    if (!f) {
        snprintf(err, errlen, "usm: out of memory for %dx%dx%d", h, w, c);
        return -1;
    }
    for (size_t i = 0; i < n; i++) f[i] = src[i] / 255.0f;
    int rc = pf_usm_sharp_f32(f, h, w, c, f + n, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        float v = f[n + i] * 255.0f + 0.5f;
        dst[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    free(f);
    return rc;
}

/* ---- JPEG ---- */

void pf_jpeg_opts_default(pf_jpeg_opts *o, int stage) {
    (void)stage; /* both stages: [30, 95] */
    o->jpeg_range[0] = 30;
    o->jpeg_range[1] = 95;
}

int pf_jpeg_opts_check(const pf_jpeg_opts *o, const char *suffix, char *err, size_t errlen) {
    const char *s = suffix ? suffix : "";
    const double *v = o->jpeg_range;
    if (check_range(v, -INFINITY, "jpeg_range", s, err, errlen) != 0) return -1;
    if (v[0] < 1 || v[1] > 100) {
        snprintf(err, errlen, "jpeg_range%s: [%g, %g] is not within 1..100", s, v[0], v[1]);
        return -1;
    }
    if (v[0] != floor(v[0]) || v[1] != floor(v[1])) {
        snprintf(err, errlen, "jpeg_range%s: [%g, %g] must be whole qualities", s, v[0], v[1]);
        return -1;
    }
    return 0;
}

pf_rng pf_jpeg_rng(uint64_t sample_key, int stage) {
    return pf_rng_make(sample_key ^ 0x6a70656764726177ULL, (uint64_t)stage, 0); /* "jpegdraw" */
}

void pf_jpeg_draw(const pf_jpeg_opts *o, pf_rng *r, pf_jpeg_params *p) {
    int lo = (int)o->jpeg_range[0], hi = (int)o->jpeg_range[1];
    p->quality = lo + (int)pf_rng_below(r, (uint32_t)(hi - lo + 1));
}

int pf_jpeg_params_format(const pf_jpeg_params *p, char *buf, size_t len) {
    return snprintf(buf, len, "jpeg quality=%d", p->quality);
}

int pf_jpeg_apply(float *img, int h, int w, int quality, uint8_t **jpeg, size_t *jpeg_len,
                  char *err, size_t errlen) {
    if (jpeg) *jpeg = NULL;
    if (h < 1 || w < 1 || quality < 1 || quality > 100) {
        snprintf(err, errlen, "jpeg: bad size %dx%d or quality %d (1..100)", h, w, quality);
        return -1;
    }
    size_t n = (size_t)h * w * 3, len = 0;
    uint8_t *u8 = malloc(n), *buf = NULL;
    if (!u8) {
        snprintf(err, errlen, "jpeg: out of memory for %dx%d", h, w);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        float v = img[i] < 0 ? 0 : img[i] > 1 ? 1 : img[i];
        u8[i] = (uint8_t)(v * 255.0f + 0.5f);
    }
    pf_image dec = { 0 };
    int rc = pf_image_encode_jpeg(u8, w, h, quality, &buf, &len, err, errlen);
    free(u8);
    if (rc == 0) rc = pf_image_decode_jpeg(buf, len, "jpeg stage", &dec, err, errlen);
    if (rc == 0 && (dec.w != w || dec.h != h)) {
        snprintf(err, errlen, "jpeg: decoded %dx%d, not %dx%d", dec.w, dec.h, w, h);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) img[i] = dec.data[i] / 255.0f;
    pf_image_free(&dec);
    if (rc == 0 && jpeg) {
        *jpeg = buf;
        *jpeg_len = len;
    } else {
        free(buf);
    }
    return rc;
}
