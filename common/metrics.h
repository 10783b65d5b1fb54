/*  metrics — PSNR and SSIM as the SR literature reports them (docs/metrics.md).

    Inputs are RGB8 HWC images of equal size (outputs are clamped and rounded to uint8 before
    they get here). `crop_border` pixels are removed on each side. With `y_channel`, both
    images become Y = 16 + (65.481 R + 128.553 G + 24.966 B) with R, G, B in [0, 1] (ITU-R
    BT.601, MATLAB rgb2ycbcr), kept as doubles in [16, 235] (not rounded); else all three
    channels are used and values are in [0, 255].
    PSNR = 10 log10(255^2 / MSE) dB over all remaining values (inf when equal).
    SSIM: Wang et al. 2004 with an 11x11 Gaussian window (sigma 1.5), C1 = (0.01*255)^2,
    C2 = (0.03*255)^2, 'valid' filtering (no padding), mean over the map; for RGB the mean of the
    per-channel SSIMs (BasicSR's calculate_ssim / the MATLAB ssim_index code).
*/
#ifndef PF_METRICS_H
#define PF_METRICS_H
#include <stddef.h>
#include <stdint.h>

/* Returns PSNR in dB (INFINITY if identical), or NAN if the crop leaves nothing. */
double pf_psnr(const uint8_t *a, const uint8_t *b, int h, int w, int crop_border, int y_channel);

/* Returns SSIM in [-1, 1], or NAN if the cropped image is smaller than 11x11. */
double pf_ssim(const uint8_t *a, const uint8_t *b, int h, int w, int crop_border, int y_channel);

/* Float HWC RGB in [0, 1] (any range accepted) -> RGB8 by clamp and round half up, the
   conversion applied to network outputs before metrics and PNG. */
void pf_to_u8(const float *src, uint8_t *dst, size_t n);

/* A mean of PSNR values (dB) that leaves out the infinite ones and counts them. PSNR is +inf
   when an image equals its GT (a black frame whose bicubic upscaling is exact); one such image
   would make a plain mean +inf and erase the number of every other image, so the mean is over
   the finite values and `inf` says how many were left out (docs/metrics.md "Identical images").
   NaN values (nothing left after crop_border, metric not computed) are summed like any other,
   so the mean is NaN. Start from a zero-initialised struct. */
typedef struct {
    double sum;                 /* the values added other than +inf, dB */
    int64_t n;                  /* values in sum */
    int64_t inf;                /* +inf values left out */
} pf_psnr_mean;

/* Add one PSNR value in dB: +inf is counted in m->inf, anything else summed. */
void pf_psnr_mean_add(pf_psnr_mean *m, double psnr);

/* The mean of the values summed (dB); +inf when every value added was +inf, NaN when none was
   added. */
double pf_psnr_mean_get(const pf_psnr_mean *m);
#endif
