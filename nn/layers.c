/*  layers — scaling, pixel shuffle and image <-> activation conversion (see layers.h; the
    other element-wise ops are nn/cpu/ops.c's). Loops are ordered so the larger tensor is walked contiguously. */
#include "nn/layers.h"
#include <string.h>
#include "nn/cpu/dnnl_ctx.h"

void pf_scale(float *dst, const float *src, float s, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = s * src[i];
}

/* Walk the output (C channels, H r x W r) in memory order; each element's source is
   channel c r^2 + (oh % r) r + (ow % r) at (oh / r, ow / r). For one output row and one
   column phase j the sources of up to 16 lanes of an output channel block sit at fixed
   offsets from the input pixel, so they are computed once per row (off[j][k]) and the inner
   loop is a strided gather. A block wider than 16 lanes (NHWC: one block of C channels) is
   walked in chunks of 16 lanes. Rows of (sample, channel block) are independent in both
   directions, so they are the parallel work. `fwd` selects the direction (big = out, small =
   in for forward; the reverse copies back). */
#define PF_SHUFFLE_MAX_R 4
#define PF_SHUFFLE_CHUNK 16
static void shuffle(float *big, float *small, int n, int c, int h, int w, int r, int bi, int bo,
                    int fwd) {
    int oh_n = h * r, ow_n = w * r, cs = c * r * r;
    int cbo = (c + bo - 1) / bo;
#pragma omp parallel for collapse(3) schedule(static)
    for (int in = 0; in < n; in++) {
        for (int cb = 0; cb < cbo; cb++) {
            for (int oh = 0; oh < oh_n; oh++) {
                size_t off[PF_SHUFFLE_MAX_R][PF_SHUFFLE_CHUNK];
                int kn = c - cb * bo < bo ? c - cb * bo : bo; /* real channels in the block */
                int ih = oh / r, i = oh % r;
                float *row = big + pf_blk_off(in, cb * bo, oh, 0, c, oh_n, ow_n, bo);
                for (int k0 = 0; k0 < bo; k0 += PF_SHUFFLE_CHUNK) {
                    int kc = bo - k0 < PF_SHUFFLE_CHUNK ? bo - k0 : PF_SHUFFLE_CHUNK;
                    int kr = kn - k0 < 0 ? 0 : kn - k0 < kc ? kn - k0 : kc; /* real lanes */
                    for (int j = 0; j < r; j++)
                        for (int k = 0; k < kr; k++)
                            off[j][k] = pf_blk_off(in, (cb * bo + k0 + k) * r * r + i * r + j,
                                                   ih, 0, cs, h, w, bi);
                    float *o = row + k0;
                    for (int iw = 0; iw < w; iw++) {
                        size_t base = (size_t)iw * (size_t)bi;
                        for (int j = 0; j < r; j++, o += bo) {
                            const size_t *oj = off[j];
                            if (fwd) {
                                for (int k = 0; k < kr; k++) o[k] = small[oj[k] + base];
                                for (int k = kr; k < kc; k++) o[k] = 0.0f;
                            } else {
                                for (int k = 0; k < kr; k++) small[oj[k] + base] = o[k];
                            }
                        }
                    }
                }
            }
        }
    }
}

void pf_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                              int bi, int bo) {
    shuffle(out, (float *)in, n, c, h, w, r, bi, bo, 1);
}

void pf_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w, int r,
                               int bi, int bo) {
    /* Every real channel of din is written; zero the block padding, if any. */
    size_t total = pf_blk_numel(n, c * r * r, h, w, bi);
    if ((size_t)n * (size_t)(c * r * r) * (size_t)h * (size_t)w != total)
        memset(din, 0, total * sizeof(float));
    shuffle((float *)dout, din, n, c, h, w, r, bi, bo, 0);
}

void pf_image_to_act(float *dst, pf_lq img, int n, int h, int w, const float *mean,
                     float range, int b) {
    memset(dst, 0, pf_blk_numel(n, 3, h, w, b) * sizeof(float));
    for (int in = 0; in < n; in++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                size_t p = (((size_t)in * h + y) * w + x) * 3;
                for (int c = 0; c < 3; c++) {
                    float v = pf_lq_at(img, p + c);
                    if (mean) v = (v - mean[c]) * range;
                    dst[pf_blk_off(in, c, y, x, 3, h, w, b)] = v;
                }
            }
}

void pf_act_to_image(float *out, const float *act, int n, int frames, int h, int w,
                     const float *mean, float range, int b) {
    int C = 3 * frames;
    for (int in = 0; in < n; in++)
        for (int t = 0; t < frames; t++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float *p = out + ((((size_t)in * frames + t) * h + y) * w + x) * 3;
                    for (int c = 0; c < 3; c++) {
                        float v = act[pf_blk_off(in, 3 * t + c, y, x, C, h, w, b)];
                        p[c] = mean ? v / range + mean[c] : v;
                    }
                }
}
