/*  patch — see patch.h. */
#include "common/patch.h"

#include <stddef.h>
#include <string.h>

#include "common/rng.h"

uint64_t pf_dataset_degrade_key(uint64_t seed, uint64_t epoch, uint64_t index) {
    /* One more chained word, so the stream is not the crop's pf_rng_make(seed, epoch, index). */
    return pf_mix64(pf_rng_make(seed, epoch, index).key ^ 0x6465677261646521ULL); /* "degrade!" */
}

void pf_copy_patch(const uint8_t *src, int w, int top, int left, int p, int hflip, int vflip,
                   int transpose, uint8_t *dst) {
    /* Same mapping as the per-pixel definition dst(y, x) = src(top + a, left + b) with
       (a, b) = transpose ? (x, y) : (y, x), then a = p-1-a if vflip, b = p-1-b if hflip; but
       source rows are read in order (whole rows by memcpy when nothing is mirrored), which
       made a 96 x 96 patch about 2x faster than the per-pixel loop (bench/loader). */
    size_t row = (size_t)p * 3;
    for (int a = 0; a < p; a++) {
        const uint8_t *s = src + ((size_t)(top + a) * w + left) * 3;
        int ra = vflip ? p - 1 - a : a;     /* a after the vertical flip */
        if (!transpose) {
            uint8_t *d = dst + (size_t)ra * row;
            if (!hflip) {
                memcpy(d, s, row);
            } else {
                for (int b = 0; b < p; b++) {
                    const uint8_t *q = s + (size_t)(p - 1 - b) * 3;
                    d[3 * b] = q[0];
                    d[3 * b + 1] = q[1];
                    d[3 * b + 2] = q[2];
                }
            }
        } else {
            /* source row a lands in output column ra; source column b in output row y */
            uint8_t *d = dst + (size_t)ra * 3;
            for (int b = 0; b < p; b++) {
                int y = hflip ? p - 1 - b : b;
                uint8_t *o = d + (size_t)y * row;
                o[0] = s[3 * b];
                o[1] = s[3 * b + 1];
                o[2] = s[3 * b + 2];
            }
        }
    }
}

pf_patch_crop pf_patch_crop_draw(int lq_w, int lq_h, int lq_patch, int use_flip, int use_rot,
                                 uint64_t seed, uint32_t epoch, uint32_t index) {
    pf_patch_crop c;
    pf_rng r = pf_rng_make(seed, epoch, index);
    c.top = (int)pf_rng_below(&r, (uint32_t)(lq_h - lq_patch + 1));
    c.left = (int)pf_rng_below(&r, (uint32_t)(lq_w - lq_patch + 1));
    uint64_t bits = pf_rng_u64(&r);
    c.hflip = use_flip && (bits & 1);
    c.vflip = use_flip && (bits & 2);
    c.transpose = use_rot && (bits & 4);
    return c;
}

void pf_paired_crop_augment(const pf_image *gt, const pf_image *lq, int scale, int gt_patch,
                            int use_flip, int use_rot, uint64_t seed, uint32_t epoch,
                            uint32_t index, uint8_t *gt_out, uint8_t *lq_out) {
    int lq_patch = gt_patch / scale;
    pf_patch_crop c = pf_patch_crop_draw(lq->w, lq->h, lq_patch, use_flip, use_rot, seed, epoch,
                                         index);
    pf_copy_patch(lq->data, lq->w, c.top, c.left, lq_patch, c.hflip, c.vflip, c.transpose,
                  lq_out);
    pf_copy_patch(gt->data, gt->w, c.top * scale, c.left * scale, gt_patch, c.hflip, c.vflip,
                  c.transpose, gt_out);
}
