/*  bicubic — integer-factor bicubic upsampling with PyTorch's semantics, for SRCNN's in-network
    upsampler (see pf_bicubic_upsample_image in layers.h). */
#include <math.h>
#include "nn/cpu/dnnl_ctx.h"
#include "nn/cubic.h"
#include "nn/layers.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void pf_bicubic_upsample_image(float *dst, pf_lq img, int n, int h, int w, int s,
                               int b) {
    int oh_n = h * s, ow_n = w * s;
    float scale = 1.0f / (float)s;
    for (int in = 0; in < n; in++)
        for (int oy = 0; oy < oh_n; oy++) {
            float ry = scale * ((float)oy + 0.5f) - 0.5f;
            int iy = (int)floorf(ry);
            float cy[4];
            pf_cubic_coeffs(cy, ry - (float)iy);
            for (int ox = 0; ox < ow_n; ox++) {
                float rx = scale * ((float)ox + 0.5f) - 0.5f;
                int ix = (int)floorf(rx);
                float cx[4];
                pf_cubic_coeffs(cx, rx - (float)ix);
                for (int c = 0; c < 3; c++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < 4; ky++) {
                        int yy = clampi(iy - 1 + ky, 0, h - 1);
                        size_t row = ((size_t)in * h + yy) * w * 3;
                        float racc = 0.0f;
                        for (int kx = 0; kx < 4; kx++) {
                            int xx = clampi(ix - 1 + kx, 0, w - 1);
                            racc += cx[kx] * pf_lq_at(img, row + (size_t)xx * 3 + c);
                        }
                        acc += cy[ky] * racc;
                    }
                    dst[pf_blk_off(in, c, oy, ox, 3, oh_n, ow_n, b)] = acc;
                }
            }
        }
    /* zero block padding channels */
    if (b > 3)
        for (int in = 0; in < n; in++)
            for (int oy = 0; oy < oh_n; oy++)
                for (int ox = 0; ox < ow_n; ox++)
                    for (int c = 3; c < b; c++)
                        dst[pf_blk_off(in, c, oy, ox, b, oh_n, ow_n, b)] = 0.0f;
}
