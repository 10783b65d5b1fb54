/*  infer — see infer.h. */
#include "nn/infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"

/* pf_infer_receptive_radius is in nn/zoo.c, beside the builders whose layers it counts. */

const char *pf_infer_describe(const pf_config *cfg, char *buf, size_t len) {
    int r = pf_infer_receptive_radius(cfg);
    char tile[160] = "", warn[96] = "";
    if (r == PF_INFER_GLOBAL)
        snprintf(warn, sizeof warn, " (%s pools the whole image: tiles differ)",
                 cfg->model_type);
    else if (cfg->eval_tile_overlap < r)
        snprintf(warn, sizeof warn, " < receptive radius %d: seams possible", r);
    if (cfg->eval_tile > 0)
        snprintf(tile, sizeof tile, "tile %d overlap %d%s", cfg->eval_tile,
                 cfg->eval_tile_overlap, warn);
    snprintf(buf, len, "%s%s%s", cfg->eval_ensemble ? "x8 ensemble" : "",
             cfg->eval_ensemble && tile[0] ? ", " : "",
             tile[0] ? tile : cfg->eval_ensemble ? "" : "whole image");
    return buf;
}

void pf_dihedral(const void *src, int h, int w, size_t px, int t, int inverse, void *dst) {
    int tr = t & 4, dh = tr ? w : h, dw = tr ? h : w;
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int i = 0; i < dh; i++)
        for (int j = 0; j < dw; j++) {
            int a = (t & 2) ? dh - 1 - i : i, b = (t & 1) ? dw - 1 - j : j;
            size_t o = (size_t)i * dw + j;                        /* in the transformed image */
            size_t x = tr ? (size_t)b * w + a : (size_t)a * w + b; /* in the original */
            if (inverse)
                memcpy(d + x * px, s + o * px, px);
            else
                memcpy(d + o * px, s + x * px, px);
        }
}

/* Start of the window of `win` pixels around the core starting at c0 in a dimension of n,
   a multiple of q (the network's input multiple; n and win are multiples of it). */
static int window_start(int c0, int overlap, int win, int n, int q) {
    int s = c0 - overlap;
    if (s > n - win) s = n - win;
    s = s < 0 ? 0 : s;
    return s / q * q;
}

/* One inference of lq on the CPU model: samples of es bytes, uint8 (es 1) or float (es 4). */
static int run_cpu(void *m, const void *lq, size_t es, int h, int w, float *out, char *err,
                   size_t errlen) {
    return es == 1 ? pf_model_infer(m, lq, h, w, out, err, errlen)
                   : pf_model_infer_f32(m, lq, h, w, out, err, errlen);
}

pf_infer_net pf_infer_net_cpu(pf_model *m) {
    return (pf_infer_net){ .scale = pf_model_scale(m),
                           .input_multiple = pf_model_input_multiple(m), .run = run_cpu,
                           .ctx = m };
}

/* Tiled (or, when the tile covers the image, whole) inference of one image of es-byte
   samples. */
static int infer_tiled(const pf_infer_net *m, const void *lq_, size_t es, int h, int w,
                       int tile, int overlap, float *out, char *err, size_t errlen) {
    if (tile <= 0 || (tile >= h && tile >= w)) return m->run(m->ctx, lq_, es, h, w, out, err, errlen);
    const uint8_t *lq = lq_;
    size_t px = 3 * es;     /* bytes a pixel */
    int s = m->scale, q = m->input_multiple;
    /* windows aligned to the input multiple see the same pixel groups as the whole image */
    tile = (tile + q - 1) / q * q;
    overlap = (overlap + q - 1) / q * q;
    int wh = tile + 2 * overlap < h ? tile + 2 * overlap : h;
    int ww = tile + 2 * overlap < w ? tile + 2 * overlap : w;
    uint8_t *win = malloc((size_t)wh * ww * px);
    float *wout = malloc((size_t)wh * s * ww * s * 3 * sizeof *wout);
    int rc = win && wout ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory for a %dx%d tile", ww, wh);
    for (int cy = 0; cy < h && !rc; cy += tile)
        for (int cx = 0; cx < w && !rc; cx += tile) {
            int sy = window_start(cy, overlap, wh, h, q), sx = window_start(cx, overlap, ww, w, q);
            for (int y = 0; y < wh; y++)
                memcpy(win + (size_t)y * ww * px, lq + ((size_t)(sy + y) * w + sx) * px,
                       (size_t)ww * px);
            if ((rc = m->run(m->ctx, win, es, wh, ww, wout, err, errlen)) != 0) break;
            int ch = (cy + tile < h ? tile : h - cy) * s, cw = (cx + tile < w ? tile : w - cx) * s;
            int oy = (cy - sy) * s, ox = (cx - sx) * s;
            for (int y = 0; y < ch; y++)
                memcpy(out + ((size_t)(cy * s + y) * w * s + cx * s) * 3,
                       wout + ((size_t)(oy + y) * ww * s + ox) * 3, (size_t)cw * 3 * sizeof *out);
        }
    free(win);
    free(wout);
    return rc;
}

int pf_infer_on(const pf_infer_net *m, const void *lq, size_t es, int h, int w,
                const pf_infer_opts *o, float *out, char *err, size_t errlen) {
    if (!o->ensemble)
        return infer_tiled(m, lq, es, h, w, o->tile, o->tile_overlap, out, err, errlen);
    int s = m->scale;
    size_t n_out = (size_t)h * s * w * s * 3;
    uint8_t *tlq = malloc((size_t)h * w * 3 * es);
    float *tout = malloc(n_out * sizeof *tout), *back = malloc(n_out * sizeof *back);
    int rc = tlq && tout && back ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory for the x8 ensemble");
    if (!rc) memset(out, 0, n_out * sizeof *out);
    /* The four untransposed transforms first, then the four transposed: the network plan is
       rebuilt only once when the image is not square. */
    for (int t = 0; t < 8 && !rc; t++) {
        pf_dihedral(lq, h, w, 3 * es, t, 0, tlq);
        int th = t & 4 ? w : h, tw = t & 4 ? h : w;
        if ((rc = infer_tiled(m, tlq, es, th, tw, o->tile, o->tile_overlap, tout, err, errlen)))
            break;
        pf_dihedral(tout, h * s, w * s, 3 * sizeof(float), t, 1, back);
        for (size_t i = 0; i < n_out; i++) out[i] += back[i];
    }
    if (!rc)
        for (size_t i = 0; i < n_out; i++) out[i] *= 0.125f;
    free(tlq);
    free(tout);
    free(back);
    return rc;
}

int pf_infer(pf_model *m, const uint8_t *lq, int h, int w, const pf_infer_opts *o, float *out,
             char *err, size_t errlen) {
    pf_infer_net net = pf_infer_net_cpu(m);
    return pf_infer_on(&net, lq, 1, h, w, o, out, err, errlen);
}

int pf_infer_f32(pf_model *m, const float *lq, int h, int w, const pf_infer_opts *o,
                 float *out, char *err, size_t errlen) {
    pf_infer_net net = pf_infer_net_cpu(m);
    return pf_infer_on(&net, lq, sizeof *lq, h, w, o, out, err, errlen);
}
