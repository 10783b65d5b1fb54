/*  visual_grid — see visual_grid.h. */
#include "hooks/visual_grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/imresize.h"

int pf_visual_check(const pf_msg_visual *v, size_t lq_len, size_t out_len, size_t gt_len,
                    char *err, size_t errlen) {
    if (v->n < 1 || v->n > PF_MAX_VISUAL || !v->lq_h || !v->lq_w || !v->gt_h || !v->gt_w) {
        snprintf(err, errlen, "visual: n %u, gt %ux%u, lq %ux%u out of range", v->n, v->gt_h,
                 v->gt_w, v->lq_h, v->lq_w);
        return -1;
    }
    uint32_t s = v->gt_h / v->lq_h;
    if (s < 1 || v->gt_h != s * v->lq_h || v->gt_w != s * v->lq_w) {
        snprintf(err, errlen, "visual: gt %ux%u is not an integer multiple of lq %ux%u", v->gt_h,
                 v->gt_w, v->lq_h, v->lq_w);
        return -1;
    }
    /* The proto bounds (n <= 64, sides <= 65536) keep these products inside 64 bits. */
    uint64_t want_lq = (uint64_t)v->n * v->lq_h * v->lq_w * 3;
    uint64_t want_gt = (uint64_t)v->n * v->gt_h * v->gt_w * 3;
    if (lq_len != want_lq || out_len != want_gt || gt_len != want_gt) {
        snprintf(err, errlen, "visual: frames of %zu, %zu, %zu bytes (lq, output, gt) do not "
                 "match n %u, lq %ux%u, gt %ux%u (want %llu, %llu, %llu)", lq_len, out_len,
                 gt_len, v->n, v->lq_h, v->lq_w, v->gt_h, v->gt_w, (unsigned long long)want_lq,
                 (unsigned long long)want_gt, (unsigned long long)want_gt);
        return -1;
    }
    if (want_gt > PF_MAX_VISUAL_FRAME) {
        snprintf(err, errlen, "visual: frames of %llu bytes exceed %d", 
                 (unsigned long long)want_gt, PF_MAX_VISUAL_FRAME);
        return -1;
    }
    return 0;
}

void pf_visual_fit(int lq_h, int lq_w, int s, int *y0, int *x0, int *ch, int *cw) {
    int64_t area = PF_MAX_VISUAL_FRAME / 3 / ((int64_t)s * s);    /* LQ pixels that fit */
    int h = lq_h, w = lq_w;
    if ((int64_t)h * w > area) {
        double f = sqrt((double)area / ((double)h * w));
        h = (int)(h * f) > 0 ? (int)(h * f) : 1;
        w = (int)(w * f) > 0 ? (int)(w * f) : 1;
        while ((int64_t)h * w > area) {         /* float rounding: never over the frame */
            if (h >= w) h--;
            else w--;
        }
    }
    *ch = h;
    *cw = w;
    *y0 = (lq_h - h) / 2;
    *x0 = (lq_w - w) / 2;
}

uint8_t *pf_visual_grid(const pf_msg_visual *v, const uint8_t *lq, const uint8_t *output,
                        const uint8_t *gt, int *w, int *h, char *err, size_t errlen) {
    int gh = (int)v->gt_h, gw = (int)v->gt_w, lh = (int)v->lq_h, lw = (int)v->lq_w;
    size_t row = (size_t)3 * gw * 3;        /* bytes of one grid row */
    size_t gt_img = (size_t)gh * gw * 3, lq_img = (size_t)lh * lw * 3;
    uint8_t *grid = malloc(row * gh * v->n), *up = malloc(gt_img);
    if (!grid || !up) {
        free(grid);
        free(up);
        snprintf(err, errlen, "visual: out of memory for a %dx%u grid", 3 * gw, gh * v->n);
        return NULL;
    }
    for (uint32_t i = 0; i < v->n; i++) {
        /* s = gh / lh exactly (pf_visual_check), so imresize gives gh x gw. */
        if (pf_imresize_u8(lq + i * lq_img, lh, lw, 3, (double)gh / lh, up) != 0) {
            snprintf(err, errlen, "visual: cannot resize a %dx%d LQ image", lh, lw);
            free(grid);
            free(up);
            return NULL;
        }
        const uint8_t *cols[3] = { up, output + i * gt_img, gt + i * gt_img };
        for (int y = 0; y < gh; y++) {
            uint8_t *dst = grid + ((size_t)i * gh + y) * row;
            for (int c = 0; c < 3; c++)
                memcpy(dst + (size_t)c * gw * 3, cols[c] + (size_t)y * gw * 3, (size_t)gw * 3);
        }
    }
    free(up);
    *w = 3 * gw;
    *h = gh * (int)v->n;
    return grid;
}
