/*  realesrgan_pipeline — Real-ESRGAN's second-order degradation: options, draws, the printed
    parameters and the LQ they make (see realesrgan_pipeline.h for the order). */
#include "common/realesrgan_pipeline.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void pf_realesrgan_opts_default(pf_realesrgan_opts *o) {
    memset(o, 0, sizeof *o);
    for (int s = 0; s < 2; s++) {
        pf_blur_opts_default(&o->blur[s], s + 1);
        pf_resize_opts_default(&o->resize[s], s + 1);
        pf_noise_opts_default(&o->noise[s], s + 1);
        pf_jpeg_opts_default(&o->jpeg[s], s + 1);
    }
    o->second_order_prob = 1;
    o->second_blur_prob = 0.8;
    o->final_sinc_prob = 0.8;
    o->scale = 4;
}

static int check_prob(double p, const char *key, char *err, size_t errlen) {
    if (p >= 0 && p <= 1) return 0;
    snprintf(err, errlen, "%s: %g is not a probability (0..1)", key, p);
    return -1;
}

/* Kernel of size ks filtering an n-pixel side: reflect padding needs n > ks / 2. */
static int check_kernel_fits(int ks, int n, const char *key, const char *what, char *err,
                             size_t errlen) {
    if (n > ks / 2) return 0;
    int fit = 2 * n - 1;
    if (fit % 2 == 0) fit--;
    snprintf(err, errlen, "%s: %d is too big for the patch: %s is %d pixels on a side, which "
             "a kernel of %d cannot filter (reflect padding needs %d); use %d or less", key,
             ks, what, n, ks, ks / 2 + 1, fit);
    return -1;
}

static int check_sizes(const pf_realesrgan_opts *o, int h, int w, char *err, size_t errlen) {
    if (h < 1 || w < 1 || h % o->scale || w % o->scale) {
        snprintf(err, errlen, "scale: the GT patch %d x %d is not a multiple of %d", h, w,
                 o->scale);
        return -1;
    }
    int n = h < w ? h : w;
    if (check_kernel_fits(o->blur[0].blur_kernel_size, n, "blur_kernel_size", "the GT patch",
                          err, errlen) ||
        check_kernel_fits(o->blur[0].blur_kernel_size, n / o->scale, "blur_kernel_size",
                          "the LQ (final sinc)", err, errlen))
        return -1;
    int n1 = pf_resize_out_size(n, o->resize[0].resize_range[0]);
    if (check_kernel_fits(o->blur[1].blur_kernel_size, n1, "blur_kernel_size2",
                          "stage 1's smallest resize (resize_range)", err, errlen))
        return -1;
    if ((int)((double)n / o->scale * o->resize[1].resize_range[0]) < 1) {
        snprintf(err, errlen, "resize_range2: %g shrinks the %d-pixel LQ side to nothing",
                 o->resize[1].resize_range[0], n / o->scale);
        return -1;
    }
    return 0;
}

int pf_realesrgan_opts_check(const pf_realesrgan_opts *o, int gt_h, int gt_w, char *err,
                             size_t errlen) {
    static const char *const sfx[2] = { "", "2" };
    for (int s = 0; s < 2; s++) {
        if (pf_blur_opts_check(&o->blur[s], sfx[s], err, errlen) ||
            pf_resize_opts_check(&o->resize[s], sfx[s], err, errlen) ||
            pf_noise_opts_check(&o->noise[s], sfx[s], err, errlen) ||
            pf_jpeg_opts_check(&o->jpeg[s], sfx[s], err, errlen))
            return -1;
    }
    if (check_prob(o->second_order_prob, "second_order_prob", err, errlen) ||
        check_prob(o->second_blur_prob, "second_blur_prob", err, errlen) ||
        check_prob(o->final_sinc_prob, "final_sinc_prob", err, errlen))
        return -1;
    if (o->scale < 1 || o->scale > 8) {
        snprintf(err, errlen, "scale: %d is not 1..8", o->scale);
        return -1;
    }
    if (gt_h == 0 && gt_w == 0) return 0;
    return check_sizes(o, gt_h, gt_w, err, errlen);
}

pf_rng pf_realesrgan_rng(uint64_t sample_key) {
    return pf_rng_make(sample_key ^ 0x7265616c65737267ULL, 0, 0); /* "realesrg" */
}

void pf_realesrgan_draw(const pf_realesrgan_opts *o, uint64_t sample_key,
                        pf_realesrgan_params *p) {
    memset(p, 0, sizeof *p);
    p->key = sample_key;
    pf_rng r = pf_blur_rng(sample_key, 1);
    pf_blur_draw(&o->blur[0], &r, &p->blur1);
    r = pf_blur_rng(sample_key, 2);
    pf_blur_draw(&o->blur[1], &r, &p->blur2);
    r = pf_blur_rng(sample_key, 3);
    pf_blur_draw_final_sinc(o->final_sinc_prob, o->blur[0].blur_kernel_size, &r, &p->sinc);
    for (int s = 0; s < 2; s++) {
        r = pf_resize_rng(sample_key, s + 1);
        pf_resize_draw(&o->resize[s], &r, s ? &p->resize2 : &p->resize1);
        r = pf_noise_rng(sample_key, s + 1);
        pf_noise_draw(&o->noise[s], &r, s ? &p->noise2 : &p->noise1);
    }
    r = pf_resize_rng(sample_key, 3);
    p->final_mode = (pf_resize_mode)pf_rng_below(&r, PF_RESIZE_N_MODES);
    r = pf_realesrgan_rng(sample_key);
    p->second_order = pf_rng_uniform(&r) < o->second_order_prob;
    p->blur2_on = pf_rng_uniform(&r) < o->second_blur_prob;
    p->sinc_first = pf_rng_uniform(&r) < 0.5;
    pf_jpeg_params q;
    r = pf_jpeg_rng(sample_key, 1);
    pf_jpeg_draw(&o->jpeg[0], &r, &q);
    p->quality1 = q.quality;
    r = pf_jpeg_rng(sample_key, 3);
    pf_jpeg_draw(&o->jpeg[1], &r, &q);
    p->quality2 = q.quality;
}

/* Append printf-style text to buf at *at (counting what did not fit, as snprintf). */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(*at < len ? buf + *at : NULL, *at < len ? len - *at : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *at += (size_t)k;
}

/* Append `words` (a slice's formatted line) to buf at *at, each word prefixed by "pre.". */
static void put_prefixed(char *buf, size_t len, size_t *at, const char *pre, const char *words) {
    const char *w = words;
    while (*w) {
        while (*w == ' ') w++;
        if (!*w) break;
        size_t n = strcspn(w, " ");
        put(buf, len, at, "%s%s.%.*s", *at ? " " : "", pre, (int)n, w);
        w += n;
    }
}

int pf_realesrgan_params_format(const pf_realesrgan_params *p, char *buf, size_t len) {
    char t[512];
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int s = 0; s < 2; s++) {
        char pre[3] = { 'b', (char)('1' + s), 0 };
        pf_blur_params_format(s ? &p->blur2 : &p->blur1, t, sizeof t);
        put_prefixed(buf, len, &at, pre, t);
        pre[0] = 'r';
        pf_resize_params_format(s ? &p->resize2 : &p->resize1, t, sizeof t);
        put_prefixed(buf, len, &at, pre, t);
        pre[0] = 'n';
        pf_noise_params_format(s ? &p->noise2 : &p->noise1, t, sizeof t);
        put_prefixed(buf, len, &at, pre, t);
        if (!s)
            put(buf, len, &at, " q1=%d second_order=%d blur2_on=%d", p->quality1,
                p->second_order, p->blur2_on);
    }
    put(buf, len, &at, " final=%s final_mode=%s", p->sinc_first ? "sinc_first" : "jpeg_first",
        pf_resize_mode_name(p->final_mode));
    pf_blur_params_format(&p->sinc, t, sizeof t);
    put_prefixed(buf, len, &at, "s", t);
    put(buf, len, &at, " q2=%d key=0x%016llx", p->quality2, (unsigned long long)p->key);
    return (int)at;
}

void pf_realesrgan_trace_free(pf_realesrgan_trace *t) {
    if (!t) return;
    for (int s = 0; s < 2; s++) {
        free(t->noise_draws[s]);
        t->noise_draws[s] = NULL;
        t->n_noise_draws[s] = 0;
        free(t->noise_in[s]);
        t->noise_in[s] = NULL;
        free(t->jpeg_in[s]);
        t->jpeg_in[s] = NULL;
        t->n_jpeg_in[s] = 0;
        free(t->jpeg[s]);
        t->jpeg[s] = NULL;
        t->n_jpeg[s] = 0;
    }
}

/* The working image: h x w x 3 floats in a buffer of room floats, and a spare of the same
   room for the next step's output. */
typedef struct {
    float *img, *tmp;
    int h, w;
    size_t room;
} work;

static int ensure(work *x, int h, int w, char *err, size_t errlen) {
    size_t need = (size_t)h * (size_t)w * 3;
    if (need <= x->room) return 0;
    float *a = realloc(x->img, need * sizeof(float));
    if (a) x->img = a;
    float *b = a ? realloc(x->tmp, need * sizeof(float)) : NULL;
    if (b) x->tmp = b;
    if (!a || !b) {
        snprintf(err, errlen, "realesrgan degradation: out of memory (%d x %d)", h, w);
        return -1;
    }
    x->room = need;
    return 0;
}

static void swap(work *x, int h, int w) {
    float *t = x->img;
    x->img = x->tmp;
    x->tmp = t;
    x->h = h;
    x->w = w;
}

static int blur(work *x, const pf_blur_params *bp, char *err, size_t errlen) {
    if (bp->family == PF_BLUR_PULSE) return 0;
    float k[PF_BLUR_KERNEL_MAX * PF_BLUR_KERNEL_MAX];
    if (pf_blur_kernel(bp, 0, k, err, errlen) ||
        pf_blur_filter_f32(x->img, x->h, x->w, 3, k, bp->kernel_size, x->tmp, err, errlen))
        return -1;
    swap(x, x->h, x->w);
    return 0;
}

/* Resize to oh x ow (factor > 0: F.interpolate's scale_factor, else its size). */
static int resize(work *x, int oh, int ow, double factor, pf_resize_mode mode, char *err,
                  size_t errlen) {
    if (oh < 1 || ow < 1) {
        snprintf(err, errlen, "realesrgan degradation: a resize to %d x %d", oh, ow);
        return -1;
    }
    if (ensure(x, oh > x->h ? oh : x->h, ow > x->w ? ow : x->w, err, errlen) ||
        pf_resize_f32(x->img, x->h, x->w, 3, oh, ow, factor, mode, x->tmp, err, errlen))
        return -1;
    swap(x, oh, ow);
    return 0;
}

static int noise(work *x, const pf_noise_params *np, uint64_t key, int stage,
                 pf_realesrgan_trace *trace, char *err, size_t errlen) {
    float *draws = NULL;
    size_t n = (size_t)x->h * (size_t)x->w * (np->gray ? 1 : 3);
    if (trace) {
        size_t n_in = (size_t)x->h * (size_t)x->w * 3;
        draws = malloc(n * sizeof(float));
        float *in = malloc(n_in * sizeof(float));
        free(trace->noise_draws[stage - 1]);
        free(trace->noise_in[stage - 1]);
        trace->noise_draws[stage - 1] = draws;
        trace->noise_in[stage - 1] = in;
        trace->n_noise_draws[stage - 1] = n;
        if (!draws || !in) {
            snprintf(err, errlen, "realesrgan degradation: out of memory");
            return -1;
        }
        memcpy(in, x->img, n_in * sizeof(float));
    }
    pf_rng r = pf_noise_sample_rng(key, stage);
    return pf_noise_add(x->img, x->h, x->w, np, &r, draws, err, errlen);
}

/* clamp(round(v * 255), 0, 255), ties to even (torch.round). */
static uint8_t to_u8(float v) {
    float s = rintf(v * 255.0f);
    return (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s);
}

/* pf_jpeg_apply at quality q on x->img; with a trace, keep its 8-bit input (the same
   rounding as pf_jpeg_apply's, made here only for the parity test) and its bytes in slot i. */
static int jpeg(work *x, int q, pf_realesrgan_trace *trace, int i, char *err, size_t errlen) {
    if (!trace) return pf_jpeg_apply(x->img, x->h, x->w, q, NULL, NULL, err, errlen);
    size_t n = (size_t)x->h * (size_t)x->w * 3;
    uint8_t *in = malloc(n);
    free(trace->jpeg_in[i]);
    free(trace->jpeg[i]);
    trace->jpeg_in[i] = in;
    trace->jpeg[i] = NULL;
    trace->n_jpeg_in[i] = n;
    if (!in) {
        snprintf(err, errlen, "realesrgan degradation: out of memory");
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        float v = x->img[k] < 0 ? 0 : x->img[k] > 1 ? 1 : x->img[k];
        in[k] = (uint8_t)(v * 255.0f + 0.5f);
    }
    return pf_jpeg_apply(x->img, x->h, x->w, q, &trace->jpeg[i], &trace->n_jpeg[i], err,
                         errlen);
}

/* One stage: blur (bp NULL: none), resize (stage 1 by rp's factor; stage 2 to
   int(lq_h * factor) x int(lq_w * factor), lq_h = gt_h / scale in double as Python's /),
   noise. */
static int stage(work *x, const pf_blur_params *bp, double lq_h, double lq_w,
                 const pf_resize_params *rp, const pf_noise_params *np, uint64_t key, int s,
                 pf_realesrgan_trace *trace, char *err, size_t errlen) {
    if (bp && blur(x, bp, err, errlen)) return -1;
    int rc = s == 1
        ? resize(x, pf_resize_out_size(x->h, rp->scale), pf_resize_out_size(x->w, rp->scale),
                 rp->scale, rp->mode, err, errlen)
        : resize(x, (int)(lq_h * rp->scale), (int)(lq_w * rp->scale), 0,
                 rp->mode, err, errlen);
    return rc ? -1 : noise(x, np, key, s, trace, err, errlen);
}

static int final_stage(work *x, const pf_realesrgan_params *p, int lq_h, int lq_w, uint8_t *lq,
                       pf_realesrgan_trace *trace, char *err, size_t errlen) {
    int rc = p->sinc_first
        ? resize(x, lq_h, lq_w, 0, p->final_mode, err, errlen) ||
              blur(x, &p->sinc, err, errlen) || jpeg(x, p->quality2, trace, 1, err, errlen)
        : jpeg(x, p->quality2, trace, 1, err, errlen) ||
              resize(x, lq_h, lq_w, 0, p->final_mode, err, errlen) ||
              blur(x, &p->sinc, err, errlen);
    if (rc) return -1;
    /* after a final JPEG the values are bytes / 255, which this gives back exactly */
    for (size_t i = 0; i < (size_t)lq_h * (size_t)lq_w * 3; i++) lq[i] = to_u8(x->img[i]);
    return 0;
}

uint64_t pf_realesrgan_frame_key(uint64_t sample_key, int t) {
    /* the mix pf_video_dataset_sample gives DN/JPEG steps per frame */
    return pf_mix64(sample_key ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1)));
}

int pf_realesrgan_degrade(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                          const float *gt, int gt_h, int gt_w, uint8_t *lq,
                          pf_realesrgan_trace *trace, char *err, size_t errlen) {
    return pf_realesrgan_degrade_frame(o, p, p->key, gt, gt_h, gt_w, lq, trace, err, errlen);
}

int pf_realesrgan_degrade_frame(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                                uint64_t noise_key, const float *gt, int gt_h, int gt_w,
                                uint8_t *lq, pf_realesrgan_trace *trace, char *err,
                                size_t errlen) {
    if (pf_realesrgan_opts_check(o, gt_h, gt_w, err, errlen)) return -1;
    work x = { 0 };
    if (ensure(&x, gt_h, gt_w, err, errlen)) {
        free(x.img);
        free(x.tmp);
        return -1;
    }
    memcpy(x.img, gt, (size_t)gt_h * (size_t)gt_w * 3 * sizeof(float));
    x.h = gt_h;
    x.w = gt_w;
    /* F.interpolate's size for stage 2: int(ori / scale * factor), in double. */
    double lq_h = (double)gt_h / o->scale, lq_w = (double)gt_w / o->scale;
    int rc = stage(&x, &p->blur1, 0, 0, &p->resize1, &p->noise1, noise_key, 1, trace, err,
                   errlen);
    if (!rc) rc = jpeg(&x, p->quality1, trace, 0, err, errlen);
    if (!rc && p->second_order) {
        const pf_blur_params *b2 = p->blur2_on ? &p->blur2 : NULL;
        if (b2 && check_kernel_fits(b2->kernel_size, x.h < x.w ? x.h : x.w, "blur_kernel_size2",
                                    "stage 1's output", err, errlen))
            rc = -1;
        if (!rc) rc = stage(&x, b2, lq_h, lq_w, &p->resize2, &p->noise2, noise_key, 2, trace,
                            err, errlen);
    }
    if (!rc) rc = final_stage(&x, p, gt_h / o->scale, gt_w / o->scale, lq, trace, err, errlen);
    free(x.img);
    free(x.tmp);
    return rc;
}

int pf_realesrgan_degrade_u8(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                             const uint8_t *gt, int gt_h, int gt_w, uint8_t *lq,
                             pf_realesrgan_trace *trace, char *err, size_t errlen) {
    return pf_realesrgan_degrade_frame_u8(o, p, p->key, gt, gt_h, gt_w, lq, trace, err, errlen);
}

int pf_realesrgan_degrade_frame_u8(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                                   uint64_t noise_key, const uint8_t *gt, int gt_h, int gt_w,
                                   uint8_t *lq, pf_realesrgan_trace *trace, char *err,
                                   size_t errlen) {
    if (gt_h < 1 || gt_w < 1) {
        snprintf(err, errlen, "realesrgan degradation: a GT of %d x %d", gt_h, gt_w);
        return -1;
    }
    size_t n = (size_t)gt_h * (size_t)gt_w * 3;
    float *f = malloc(n * sizeof(float));
    if (!f) {
        snprintf(err, errlen, "realesrgan degradation: out of memory (%d x %d)", gt_h, gt_w);
        return -1;
    }
    for (size_t i = 0; i < n; i++) f[i] = gt[i] / 255.0f;
    int rc = pf_realesrgan_degrade_frame(o, p, noise_key, f, gt_h, gt_w, lq, trace, err, errlen);
    free(f);
    return rc;
}
