/*  blur_kernel — see blur_kernel.h.

    Filtering: the source is converted to float once into rows padded left and right by the
    reflected columns; rows above and below are the reflected rows' pointers. Each output row
    then accumulates, per kernel tap, one multiply-add over a contiguous run of w * c floats:
    no index arithmetic or branch per pixel; the runs vectorise, four taps a pass
    (common/taps.h: the bits of one pass per tap, AVX2 where the CPU has it).
*/
#include "common/blur_kernel.h"

#include "common/taps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

static const char *const NAMES[PF_BLUR_N_FAMILIES] = {
    "iso", "aniso", "generalized_iso", "generalized_aniso", "plateau_iso", "plateau_aniso",
    "sinc", "pulse",
};

const char *pf_blur_family_name(pf_blur_family f) {
    return (unsigned)f < PF_BLUR_N_FAMILIES ? NAMES[f] : "?";
}

int pf_blur_family_from_name(const char *name) {
    for (int i = 0; i <= PF_BLUR_PLATEAU_ANISO; i++)
        if (strcmp(name, NAMES[i]) == 0) return i;
    return -1;
}

void pf_blur_opts_default(pf_blur_opts *o, int stage) {
    static const double prob[6] = { 0.45, 0.25, 0.12, 0.03, 0.12, 0.03 };
    memset(o, 0, sizeof *o);
    o->blur_kernel_size = 21;
    o->n_kernels = o->n_kernel_prob = 6;
    for (int i = 0; i < 6; i++) {
        o->kernel_list[i] = (pf_blur_family)i;
        o->kernel_prob[i] = prob[i];
    }
    o->blur_sigma[0] = 0.2;
    o->blur_sigma[1] = stage == 2 ? 1.5 : 3.0;
    o->betag_range[0] = 0.5;
    o->betag_range[1] = 4.0;
    o->betap_range[0] = 1.0;
    o->betap_range[1] = 2.0;
    o->sinc_prob = 0.1;
}

/* The message for a [lo, hi] range: -1 when it is not finite, lo > hi or lo <= 0. */
static int check_range(const double *v, const char *key, const char *sfx, char *err,
                       size_t errlen) {
    if (!isfinite(v[0]) || !isfinite(v[1]) || v[0] > v[1]) {
        snprintf(err, errlen, "%s%s: [%g, %g] is not a range lo <= hi", key, sfx, v[0], v[1]);
        return -1;
    }
    if (v[0] <= 0) {
        snprintf(err, errlen, "%s%s: [%g, %g] must be above 0", key, sfx, v[0], v[1]);
        return -1;
    }
    return 0;
}

static int check_beta(const double *v, const char *key, const char *sfx, char *err,
                      size_t errlen) {
    if (check_range(v, key, sfx, err, errlen) != 0) return -1;
    if (v[0] > 1 || v[1] < 1) {
        snprintf(err, errlen, "%s%s: [%g, %g] must hold 1 (beta is drawn below or above 1 with "
                 "even odds, as BasicSR does)", key, sfx, v[0], v[1]);
        return -1;
    }
    return 0;
}

static int check_size(int k, const char *sfx, char *err, size_t errlen) {
    if (k < PF_BLUR_KERNEL_MIN || k > PF_BLUR_KERNEL_MAX) {
        snprintf(err, errlen, "blur_kernel_size%s: %d is out of range: odd, %d..%d", sfx, k,
                 PF_BLUR_KERNEL_MIN, PF_BLUR_KERNEL_MAX);
        return -1;
    }
    if (k % 2 == 0) {
        snprintf(err, errlen, "blur_kernel_size%s: %d is even: kernels need a centre pixel; "
                 "use %d or %d", sfx, k, k - 1, k + 1);
        return -1;
    }
    return 0;
}

static int check_list(const pf_blur_opts *o, const char *sfx, char *err, size_t errlen) {
    if (o->n_kernels < 1 || o->n_kernels > PF_BLUR_LIST_MAX) {
        snprintf(err, errlen, "kernel_list%s: %d entries; give 1..%d", sfx, o->n_kernels,
                 PF_BLUR_LIST_MAX);
        return -1;
    }
    if (o->n_kernel_prob != o->n_kernels) {
        snprintf(err, errlen, "kernel_prob%s: %d values for the %d of kernel_list%s; give one "
                 "probability per kernel", sfx, o->n_kernel_prob, o->n_kernels, sfx);
        return -1;
    }
    double sum = 0;
    for (int i = 0; i < o->n_kernels; i++) {
        if ((unsigned)o->kernel_list[i] > PF_BLUR_PLATEAU_ANISO) {
            snprintf(err, errlen, "kernel_list%s: entry %d is not one of iso, aniso, "
                     "generalized_iso, generalized_aniso, plateau_iso, plateau_aniso", sfx, i + 1);
            return -1;
        }
        if (!(o->kernel_prob[i] >= 0 && o->kernel_prob[i] <= 1)) {
            snprintf(err, errlen, "kernel_prob%s: value %d (%g) is not in 0..1", sfx, i + 1,
                     o->kernel_prob[i]);
            return -1;
        }
        sum += o->kernel_prob[i];
    }
    if (fabs(sum - 1) > 1e-6) {
        snprintf(err, errlen, "kernel_prob%s: %d values sum to %.9g, not 1", sfx, o->n_kernels,
                 sum);
        return -1;
    }
    return 0;
}

int pf_blur_opts_check(const pf_blur_opts *o, const char *suffix, char *err, size_t errlen) {
    const char *s = suffix ? suffix : "";
    if (check_size(o->blur_kernel_size, s, err, errlen) != 0 ||
        check_list(o, s, err, errlen) != 0 ||
        check_range(o->blur_sigma, "blur_sigma", s, err, errlen) != 0 ||
        check_beta(o->betag_range, "betag_range", s, err, errlen) != 0 ||
        check_beta(o->betap_range, "betap_range", s, err, errlen) != 0)
        return -1;
    if (!(o->sinc_prob >= 0 && o->sinc_prob <= 1)) {
        snprintf(err, errlen, "sinc_prob%s: %g is not a probability (0..1)", s, o->sinc_prob);
        return -1;
    }
    return 0;
}

pf_rng pf_blur_rng(uint64_t sample_key, int stage) {
    return pf_rng_make(sample_key ^ 0x626c75726b65726eULL, (uint64_t)stage, 0); /* "blurkern" */
}

static double uniform(pf_rng *r, double lo, double hi) {
    return lo + (hi - lo) * pf_rng_uniform(r);
}

/* An odd size from 7..max_size (max_size itself when it is below 7). */
static int draw_size(int max_size, pf_rng *r) {
    if (max_size < 7) return max_size;
    return 7 + 2 * (int)pf_rng_below(r, (uint32_t)((max_size - 7) / 2 + 1));
}

static double draw_beta(const double *range, pf_rng *r) {
    if (pf_rng_uniform(r) < 0.5) return uniform(r, range[0], 1.0);
    return uniform(r, 1.0, range[1]);
}

static pf_blur_family draw_family(const pf_blur_opts *o, pf_rng *r) {
    double u = pf_rng_uniform(r), cum = 0;
    int last = 0;
    for (int i = 0; i < o->n_kernels; i++) {
        if (o->kernel_prob[i] <= 0) continue;
        cum += o->kernel_prob[i];
        last = i;
        if (u < cum) return o->kernel_list[i];
    }
    return o->kernel_list[last]; /* u above a sum that rounded below 1 */
}

void pf_blur_draw(const pf_blur_opts *o, pf_rng *r, pf_blur_params *p) {
    memset(p, 0, sizeof *p);
    p->kernel_size = draw_size(o->blur_kernel_size, r);
    if (pf_rng_uniform(r) < o->sinc_prob) {
        p->family = PF_BLUR_SINC;
        p->omega_c = uniform(r, p->kernel_size < 13 ? PI / 3 : PI / 5, PI);
        return;
    }
    p->family = draw_family(o, r);
    p->sigma_x = p->sigma_y = uniform(r, o->blur_sigma[0], o->blur_sigma[1]);
    int aniso = p->family == PF_BLUR_ANISO || p->family == PF_BLUR_GENERALIZED_ANISO ||
                p->family == PF_BLUR_PLATEAU_ANISO;
    if (aniso) {
        p->sigma_y = uniform(r, o->blur_sigma[0], o->blur_sigma[1]);
        p->rotation = uniform(r, -PI, PI);
    }
    if (p->family == PF_BLUR_GENERALIZED_ISO || p->family == PF_BLUR_GENERALIZED_ANISO)
        p->beta = draw_beta(o->betag_range, r);
    else if (p->family == PF_BLUR_PLATEAU_ISO || p->family == PF_BLUR_PLATEAU_ANISO)
        p->beta = draw_beta(o->betap_range, r);
}

void pf_blur_draw_final_sinc(double final_sinc_prob, int max_size, pf_rng *r,
                             pf_blur_params *p) {
    memset(p, 0, sizeof *p);
    if (pf_rng_uniform(r) < final_sinc_prob) {
        p->family = PF_BLUR_SINC;
        p->kernel_size = draw_size(max_size, r);
        p->omega_c = uniform(r, PI / 3, PI);
    } else {
        p->family = PF_BLUR_PULSE;
        p->kernel_size = 1;
    }
}

int pf_blur_params_format(const pf_blur_params *p, char *buf, size_t len) {
    const char *name = pf_blur_family_name(p->family);
    switch (p->family) {
    case PF_BLUR_SINC:
        return snprintf(buf, len, "family=%s kernel_size=%d omega_c=%.17g", name,
                        p->kernel_size, p->omega_c);
    case PF_BLUR_PULSE:
        return snprintf(buf, len, "family=%s kernel_size=%d", name, p->kernel_size);
    case PF_BLUR_ISO:
        return snprintf(buf, len, "family=%s kernel_size=%d sigma=%.17g", name, p->kernel_size,
                        p->sigma_x);
    case PF_BLUR_ANISO:
        return snprintf(buf, len, "family=%s kernel_size=%d sigma_x=%.17g sigma_y=%.17g "
                        "rotation=%.17g", name, p->kernel_size, p->sigma_x, p->sigma_y,
                        p->rotation);
    case PF_BLUR_GENERALIZED_ISO:
    case PF_BLUR_PLATEAU_ISO:
        return snprintf(buf, len, "family=%s kernel_size=%d sigma=%.17g beta=%.17g", name,
                        p->kernel_size, p->sigma_x, p->beta);
    default:
        return snprintf(buf, len, "family=%s kernel_size=%d sigma_x=%.17g sigma_y=%.17g "
                        "rotation=%.17g beta=%.17g", name, p->kernel_size, p->sigma_x,
                        p->sigma_y, p->rotation, p->beta);
    }
}

/* The unnormalised value of a Gaussian-like kind at the quadratic form q (blur_kernel.h). */
static double shape(pf_blur_family f, double q, double beta) {
    switch (f) {
    case PF_BLUR_ISO:
    case PF_BLUR_ANISO: return exp(-0.5 * q);
    case PF_BLUR_GENERALIZED_ISO:
    case PF_BLUR_GENERALIZED_ANISO: return exp(-0.5 * pow(q, beta));
    default: return 1.0 / (1.0 + pow(q, beta));
    }
}

/* The k x k values of p (unnormalised) into v. */
static void kernel_values(const pf_blur_params *p, double *v) {
    int k = p->kernel_size, r = k / 2;
    if (p->family == PF_BLUR_PULSE) {
        v[0] = 1;
        return;
    }
    if (p->family == PF_BLUR_SINC) {
        double w = p->omega_c;
        for (int y = -r; y <= r; y++)
            for (int x = -r; x <= r; x++) {
                double d = sqrt((double)(x * x + y * y));
                v[(y + r) * k + x + r] = d > 0 ? w * j1(w * d) / (2 * PI * d) : w * w / (4 * PI);
            }
        return;
    }
    /* S^-1 = R diag(1/sx^2, 1/sy^2) R^T */
    double cs = cos(p->rotation), sn = sin(p->rotation);
    double ix = 1 / (p->sigma_x * p->sigma_x), iy = 1 / (p->sigma_y * p->sigma_y);
    double a = cs * cs * ix + sn * sn * iy, c = sn * sn * ix + cs * cs * iy;
    double b = cs * sn * (ix - iy);
    for (int y = -r; y <= r; y++)
        for (int x = -r; x <= r; x++) {
            double q = a * x * x + 2 * b * x * y + c * y * y;
            v[(y + r) * k + x + r] = shape(p->family, q, p->beta);
        }
}

static int check_params(const pf_blur_params *p, int pad_to, char *err, size_t errlen) {
    int k = p->kernel_size, f = p->family;
    if ((unsigned)f >= PF_BLUR_N_FAMILIES) {
        snprintf(err, errlen, "blur kernel: family %d is not a kernel kind", f);
        return -1;
    }
    if (f == PF_BLUR_PULSE ? k != 1 : (k < PF_BLUR_KERNEL_MIN || k > PF_BLUR_KERNEL_MAX ||
                                       k % 2 == 0)) {
        snprintf(err, errlen, "blur kernel %s: kernel_size %d is not odd %d..%d",
                 pf_blur_family_name(p->family), k, PF_BLUR_KERNEL_MIN, PF_BLUR_KERNEL_MAX);
        return -1;
    }
    if (pad_to != 0 && (pad_to < k || pad_to % 2 == 0)) {
        snprintf(err, errlen, "blur kernel: pad_to %d is not odd and >= kernel_size %d", pad_to,
                 k);
        return -1;
    }
    int gaussian_like = f <= PF_BLUR_PLATEAU_ANISO;
    if ((f == PF_BLUR_SINC && !(p->omega_c > 0)) ||
        (gaussian_like && (!(p->sigma_x > 0) || !(p->sigma_y > 0))) ||
        (f >= PF_BLUR_GENERALIZED_ISO && gaussian_like && !(p->beta > 0))) {
        snprintf(err, errlen, "blur kernel %s: omega_c, sigma_x, sigma_y and beta must be above "
                 "0 where used (%g, %g, %g, %g)", pf_blur_family_name(p->family), p->omega_c,
                 p->sigma_x, p->sigma_y, p->beta);
        return -1;
    }
    return 0;
}

int pf_blur_kernel(const pf_blur_params *p, int pad_to, float *k, char *err, size_t errlen) {
    if (check_params(p, pad_to, err, errlen) != 0) return -1;
    int ks = p->kernel_size, n = pad_to ? pad_to : ks, off = (n - ks) / 2;
    double v[PF_BLUR_KERNEL_MAX * PF_BLUR_KERNEL_MAX], sum = 0;
    kernel_values(p, v);
    for (int i = 0; i < ks * ks; i++) sum += v[i];
    memset(k, 0, sizeof *k * (size_t)n * n);
    for (int y = 0; y < ks; y++)
        for (int x = 0; x < ks; x++)
            k[(size_t)(y + off) * n + x + off] = (float)(v[y * ks + x] / sum);
    return 0;
}

/* The radius of k without its all-zero outer rings. */
static int support_radius(const float *k, int ks) {
    int r = ks / 2;
    for (; r > 0; r--) {
        int c = ks / 2, lo = c - r, hi = c + r, nonzero = 0;
        for (int i = lo; i <= hi && !nonzero; i++)
            nonzero = k[lo * ks + i] != 0 || k[hi * ks + i] != 0 || k[i * ks + lo] != 0 ||
                      k[i * ks + hi] != 0;
        if (nonzero) break;
    }
    return r;
}

/* F.pad's reflect: index -1 reads 1, n reads n - 2 (valid for pads below n). */
static int reflect(int i, int n) {
    return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
}

/* pf_blur_filter_u8 / _f32 (is_u8 says which src is): `pad` holds the h source rows as floats,
   widened by r reflected columns each side; rows[] points at them for rows -r .. h + r - 1. */
static int filter_rows(const void *src, int is_u8, int h, int w, int c, const float *k, int ks,
                       float *dst, char *err, size_t errlen) {
    if (h < 1 || w < 1 || c < 1 || ks < 1 || ks % 2 == 0 || ks > PF_BLUR_KERNEL_MAX) {
        snprintf(err, errlen, "blur filter: bad sizes %dx%dx%d, kernel %d (odd, at most %d)", h,
                 w, c, ks, PF_BLUR_KERNEL_MAX);
        return -1;
    }
    if (h <= ks / 2 || w <= ks / 2) {
        snprintf(err, errlen, "blur filter: a %dx%d image is too small for a %dx%d kernel's "
                 "reflect padding (each side must be above %d)", w, h, ks, ks, ks / 2);
        return -1;
    }
    int r = support_radius(k, ks), ko = ks / 2 - r;
    size_t prow = (size_t)(w + 2 * r) * c, run = (size_t)w * c;
    float *pad = malloc(sizeof *pad * prow * h);
    const float **rows = malloc(sizeof *rows * (size_t)(h + 2 * r));
    if (!pad || !rows) {
        free(pad);
        free((void *)rows);
        snprintf(err, errlen, "blur filter: out of memory for a %dx%d image", w, h);
        return -1;
    }
    for (int y = 0; y < h; y++) {
        float *d = pad + prow * y;
        for (int x = -r; x < w + r; x++) {
            size_t s = ((size_t)y * w + reflect(x, w)) * c;
            for (int ch = 0; ch < c; ch++)
                d[(size_t)(x + r) * c + ch] =
                    is_u8 ? ((const uint8_t *)src)[s + ch] : ((const float *)src)[s + ch];
        }
    }
    for (int y = -r; y < h + r; y++) rows[y + r] = pad + prow * reflect(y, h);
    const float *tap[PF_BLUR_KERNEL_MAX * PF_BLUR_KERNEL_MAX];
    float kv[PF_BLUR_KERNEL_MAX * PF_BLUR_KERNEL_MAX];
    int n_taps = 0;
    for (int i = 0; i <= 2 * r; i++)
        for (int j = 0; j <= 2 * r; j++) kv[n_taps++] = k[(size_t)(i + ko) * ks + ko + j];
    for (int y = 0; y < h; y++) {
        float *out = dst + run * y;
        for (int i = 0, t = 0; i <= 2 * r; i++)
            for (int j = 0; j <= 2 * r; j++) tap[t++] = rows[y + i] + (size_t)j * c;
        memset(out, 0, sizeof *out * run);
        pf_add_taps_f32(out, tap, kv, n_taps, run);
    }
    free(pad);
    free((void *)rows);
    return 0;
}

int pf_blur_filter_u8(const uint8_t *src, int h, int w, int c, const float *k, int ks,
                      float *dst, char *err, size_t errlen) {
    return filter_rows(src, 1, h, w, c, k, ks, dst, err, errlen);
}

int pf_blur_filter_f32(const float *src, int h, int w, int c, const float *k, int ks,
                       float *dst, char *err, size_t errlen) {
    return filter_rows(src, 0, h, w, c, k, ks, dst, err, errlen);
}
