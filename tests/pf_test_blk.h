/*  pf_test_blk — plain NCHW float arrays into and out of the CPU executor's nCHWb layouts
    (nn/cpu/dnnl_ctx.h: pf_blk_off), for the tests that hand a layer blocked tensors. */
#ifndef PF_TEST_BLK_H
#define PF_TEST_BLK_H
#include <string.h>

#include "nn/cpu/dnnl_ctx.h"

/* dst (block b, padding channels zeroed) = nchw, an n x c x h x w tensor. */
static inline void pf_test_blk_pack(float *dst, const float *nchw, int n, int c, int h, int w,
                                    int b) {
    memset(dst, 0, pf_blk_numel(n, c, h, w, b) * sizeof(float));
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    dst[pf_blk_off(in, ic, y, x, c, h, w, b)] =
                        nchw[((in * c + ic) * h + y) * w + x];
}

/* nchw = src (block b), an n x c x h x w tensor. */
static inline void pf_test_blk_unpack(float *nchw, const float *src, int n, int c, int h, int w,
                                      int b) {
    for (int in = 0; in < n; in++)
        for (int ic = 0; ic < c; ic++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    nchw[((in * c + ic) * h + y) * w + x] =
                        src[pf_blk_off(in, ic, y, x, c, h, w, b)];
}
#endif
