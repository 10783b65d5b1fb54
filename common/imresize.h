/*  imresize — MATLAB-compatible bicubic resize (imresize(img, scale, 'bicubic')), antialiased
    when downscaling, as used to make LQ images in the SR literature (DIV2K, Set5, BasicSR's
    matlab_functions.imresize).

    Kernel: cubic with a = -0.5; when scale < 1 the kernel is stretched by 1/scale
    (antialiasing); kernel width 4 (4/scale when downscaling); taps outside the image use
    symmetric (mirror) padding; per-output weights are normalised to sum 1; the resize runs
    along the dimension with the smaller scale first, like MATLAB (one scale here: height
    first, then width). uint8 input is computed in double and rounded half away from zero,
    clamped to [0, 255], after EACH of the two passes, as MATLAB's imresizemex does for uint8
    (its per-dimension result keeps the input's class). BasicSR's float imresize rounds only
    once at the end, so on the same uint8 image it can differ by a few levels near clipped
    edges; the MATLAB-made LR sets (DIV2K, Set5 ...) follow the rule implemented here.
*/
#ifndef PF_IMRESIZE_H
#define PF_IMRESIZE_H
#include <stdint.h>

/* Resize `src` (h x w x c, uint8 HWC) by `scale` to dst (out_h x out_w x c), where
   out_h = ceil(h * scale), out_w = ceil(w * scale) (MATLAB's rule). `dst` must hold
   out_h*out_w*c bytes. Returns 0, or -1 if sizes are invalid or memory runs out. */
int pf_imresize_u8(const uint8_t *src, int h, int w, int c, double scale, uint8_t *dst);

/* Rows [y0, y0 + oh) and columns [x0, x0 + ow) of pf_imresize_u8(src, h, w, c, scale),
   bit-identical to that crop of the whole result, computing only what they need (the height
   pass over the needed input columns, the width pass over the region): a training patch's LQ
   costs its own size, not the frame's. `dst` holds oh*ow*c bytes. Returns 0, or -1 if sizes
   are invalid (the region must lie inside the whole output, oh, ow >= 1) or memory runs out. */
int pf_imresize_u8_region(const uint8_t *src, int h, int w, int c, double scale, int y0,
                          int x0, int oh, int ow, uint8_t *dst);

/* The same on float data (no rounding), HWC. */
int pf_imresize_f32(const float *src, int h, int w, int c, double scale, float *dst);

/* Output size MATLAB gives for one dimension. */
int pf_imresize_out_size(int n, double scale);
#endif
