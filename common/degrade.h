/*  degrade — the on-the-fly degradations that make LQ from GT (data.*.degradation; names and
    defaults from RDN, Zhang et al., "Residual Dense Network for Image Super-Resolution",
    CVPR 2018). All images are RGB8 HWC (common/image.h).

    Two kinds of step:
    - downscaling, a pure function of the GT, done once per image (the dataset caches it):
      BI  MATLAB imresize(GT, 1/scale, 'bicubic') (common/imresize.h);
      BD  MATLAB imfilter(GT, fspecial('gaussian', k, sigma), 'replicate') then
          imresize(blurred, 1/scale, 'nearest'), as RDN's BD preparation scripts;
      DN  as BI (its noise is the random step below);
    - random steps, applied to each training patch (or, in evaluation, each whole image) with
      parameters and noise drawn from a pf_rng (common/rng.h):
      DN    Gaussian noise N(0, sigma^2) on the 0..255 scale, sigma drawn uniformly from the
            configured [sigma, sigma_max]; each value rounded half away from zero and clamped
            to 0..255 (MATLAB's uint8 conversion, as RDN's `uint8(LR + sigma * randn)`);
      JPEG  compression and decompression with libjpeg-turbo at a quality drawn uniformly from
            the integers [quality, quality_max] (common/image.h: pf_image_encode_jpeg; YCbCr
            4:2:0, libjpeg's default, as PIL's Image.save(quality=q)).
*/
#ifndef PF_DEGRADE_H
#define PF_DEGRADE_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/rng.h"

/* fspecial('gaussian', k, sigma) as one separable factor: g[i] = exp(-(i - (k-1)/2)^2 /
   (2 sigma^2)), normalised to sum 1; the 2D kernel is g[y] * g[x] (equal to fspecial's up to
   its zeroing of taps below eps * max, which is far below 8-bit precision). `g` holds k
   values. */
void pf_gaussian_kernel_1d(int k, double sigma, double *g);

/* BD: blur `gt` (h x w, both multiples of `scale`) with the k x k Gaussian of `sigma`,
   replicating the border (MATLAB imfilter 'replicate', computed in double), and keep the
   pixel at (floor((y + 0.5) * scale), floor((x + 0.5) * scale)) for LQ pixel (y, x), 0-based:
   that is where MATLAB's imresize(..., 1/scale, 'nearest') samples (output u maps to input
   u * scale + 0.5 * (1 - scale) in 1-based coordinates, rounded half up), i.e. the centre of
   each scale x scale block (for even scales the lower right of its four centre pixels).
   Values are rounded half away from zero (MATLAB's uint8 output). `lq` holds
   (h/scale) x (w/scale) x 3 bytes. Returns 0, or -1 on bad arguments or out of memory. */
int pf_degrade_bd(const uint8_t *gt, int h, int w, int scale, int k, double sigma,
                  uint8_t *lq);

/* Rows [y0, y0 + oh) and columns [x0, x0 + ow) of pf_degrade_bd's LQ, bit-identical to that
   crop of the whole result, computed from the GT pixels they need only. `lq` holds
   oh x ow x 3 bytes. Returns 0, or -1 on bad arguments (the region outside the LQ) or out of
   memory. */
int pf_degrade_bd_region(const uint8_t *gt, int h, int w, int scale, int k, double sigma,
                         int y0, int x0, int oh, int ow, uint8_t *lq);

/* The downscaling step `step` (BI, BD or DN) of gt (h x w, multiples of scale) into lq
   ((h/scale) x (w/scale) x 3). Returns 0, or -1 (out of memory). */
int pf_degrade_downscale(const pf_degradation *step, const uint8_t *gt, int h, int w,
                         int scale, uint8_t *lq);

/* The LQ region [y0, y0 + oh) x [x0, x0 + ow) of pf_degrade_downscale(step, gt, ...),
   bit-identical to that crop of it (pf_imresize_u8_region, pf_degrade_bd_region): what a
   training patch needs, at the patch's cost. `lq` holds oh x ow x 3 bytes. Returns 0, or -1
   (bad region, out of memory). */
int pf_degrade_downscale_region(const pf_degradation *step, const uint8_t *gt, int h, int w,
                                int scale, int y0, int x0, int oh, int ow, uint8_t *lq);

/* Whether steps[0..n) hold a random step (DN noise or JPEG). */
int pf_degrade_is_random(const pf_degradation *steps, int n);

/* Add N(0, sigma^2) noise to n bytes, drawing from r (Box-Muller on pf_rng_uniform, both
   values of each pair used), rounding half away from zero and clamping to 0..255. */
void pf_degrade_noise(uint8_t *px, size_t n, double sigma, pf_rng *r);

/* JPEG-compress and decompress the w x h RGB8 image in place at `quality`. Returns 0, or -1
   with err (out of memory). */
int pf_degrade_jpeg(uint8_t *rgb, int w, int h, int quality, char *err, size_t errlen);

/* Apply the random steps of steps[0..n) (in order; the downscaling ones other than DN do
   nothing here) to the w x h RGB8 image `lq` in place. Step i draws its parameters and noise
   from its own stream, pf_rng_make(key, i, 0): so `key` alone decides the result, whatever
   thread computes it. Returns 0, or -1 with err. */
int pf_degrade_random(const pf_degradation *steps, int n, uint64_t key, uint8_t *lq, int w,
                      int h, char *err, size_t errlen);
#endif
