/*  upscale_image — one image through the network: colour and alpha planes, 8 and 16 bits
    (see cli/upscale.h for the rules and their source, Real-ESRGAN's realesrgan/utils.py). */
#include "cli/upscale.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h" /* pf_to_u8 */

/* OpenCV's COLOR_BGR2GRAY weights, which Real-ESRGAN applies to the clamped outputs. */
static float gray_of(const float *rgb) {
    float r = rgb[0] < 0 ? 0 : rgb[0] > 1 ? 1 : rgb[0];
    float g = rgb[1] < 0 ? 0 : rgb[1] > 1 ? 1 : rgb[1];
    float b = rgb[2] < 0 ? 0 : rgb[2] > 1 ? 1 : rgb[2];
    return 0.299f * r + 0.587f * g + 0.114f * b;
}

/* round(clamp(v, 0, 1) * 65535); NaN -> 0 */
static uint16_t to_u16(float v) {
    double x = (double)v * 65535.0;
    return !(x > 0) ? 0 : x >= 65535.0 ? 65535 : (uint16_t)(x + 0.5);
}

/* Run an h x w x 3 plane (uint8 when es == 1, float when es == 4) through the network: pad by
   edge replication to u->mult, infer, crop. *out: (h s) x (w s) x 3 floats, malloc'd. */
static int run_plane(const pf_upscaler *u, const void *lq, size_t es, int h, int w, float **out,
                     char *err, size_t errlen) {
    int s = pf_model_scale(u->m), q = u->mult;
    int ph = (h + q - 1) / q * q, pw = (w + q - 1) / q * q;
    size_t px = 3 * es;
    uint8_t *pad = malloc((size_t)ph * pw * px);
    float *full = malloc((size_t)ph * s * pw * s * 3 * sizeof *full);
    *out = malloc((size_t)h * s * w * s * 3 * sizeof **out);
    int rc = pad && full && *out ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory for a %dx%d image", w, h);
    for (int y = 0; rc == 0 && y < ph; y++) {
        const uint8_t *src = (const uint8_t *)lq + (size_t)(y < h ? y : h - 1) * w * px;
        uint8_t *dst = pad + (size_t)y * pw * px;
        memcpy(dst, src, (size_t)w * px);
        for (int x = w; x < pw; x++) memcpy(dst + (size_t)x * px, src + (size_t)(w - 1) * px, px);
    }
    pf_infer_net cpu = pf_infer_net_cpu(u->m);
    if (rc == 0)
        rc = pf_infer_on(u->net ? u->net : &cpu, pad, es, ph, pw, &u->opts, full, err, errlen);
    for (int y = 0; rc == 0 && y < h * s; y++)
        memcpy(*out + (size_t)y * w * s * 3, full + (size_t)y * pw * s * 3,
               (size_t)w * s * 3 * sizeof *full);
    free(pad);
    free(full);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Plane of `in` as the network's 3-channel input: colour (gray replicated) or, alpha != 0,
   the alpha channel replicated. uint8 for 8 bits, float v / 65535 for 16. malloc'd. */
static void *make_plane(const pf_image_full *in, int alpha) {
    size_t n = (size_t)in->w * in->h, es = in->depth == 16 ? sizeof(float) : 1;
    int C = in->channels;
    void *p = malloc(n * 3 * es);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            int k = alpha ? C - 1 : C >= 3 ? c : 0;    /* the source channel */
            if (es == 1)
                ((uint8_t *)p)[i * 3 + c] = ((const uint8_t *)in->data)[i * C + k];
            else
                ((float *)p)[i * 3 + c] = (float)((const uint16_t *)in->data)[i * C + k] / 65535.0f;
        }
    return p;
}

/* Sample k of output pixel i from the network's outputs (rgb; alpha NULL when none). */
static void put_pixel(pf_image_full *out, size_t i, const float *rgb, const float *alpha) {
    int C = out->channels, colour = C >= 3 ? 3 : 1;
    float v[4];
    if (colour == 3) memcpy(v, rgb + i * 3, 3 * sizeof *v);
    else v[0] = gray_of(rgb + i * 3);
    if (alpha) v[colour] = gray_of(alpha + i * 3);
    for (int k = 0; k < C; k++) {
        if (out->depth == 16) ((uint16_t *)out->data)[i * C + k] = to_u16(v[k]);
        else pf_to_u8(&v[k], (uint8_t *)out->data + i * C + k, 1);
    }
}

int pf_upscale_image(const pf_upscaler *u, const pf_image_full *in, pf_image_full *out,
                     char *err, size_t errlen) {
    int s = pf_model_scale(u->m), has_alpha = in->channels == 2 || in->channels == 4;
    size_t es = in->depth == 16 ? sizeof(float) : 1;
    memset(out, 0, sizeof *out);
    float *rgb = NULL, *alpha = NULL;
    void *plane = make_plane(in, 0);
    int rc = plane ? run_plane(u, plane, es, in->h, in->w, &rgb, err, errlen) : -2;
    free(plane);
    if (rc == 0 && has_alpha) {
        plane = make_plane(in, 1);
        rc = plane ? run_plane(u, plane, es, in->h, in->w, &alpha, err, errlen) : -2;
        free(plane);
    }
    size_t n = (size_t)in->w * s * in->h * s;
    void *data = rc == 0 ? malloc(n * in->channels * (in->depth / 8)) : NULL;
    if (rc == -2 || (rc == 0 && !data))
        snprintf(err, errlen, "out of memory for a %dx%d image", in->w, in->h);
    if (data) {
        *out = (pf_image_full){ in->w * s, in->h * s, in->channels, in->depth, data };
        for (size_t i = 0; i < n; i++) put_pixel(out, i, rgb, alpha);
    }
    free(rgb);
    free(alpha);
    return data ? 0 : -1;
}
