/*  metrics — PSNR and SSIM as the SR literature reports them (see metrics.h, docs/metrics.md).

    Reproduces BasicSR's basicsr/metrics/psnr_ssim.py (calculate_psnr, calculate_ssim), which
    follows the MATLAB code of Wang et al.: all arithmetic in double. SSIM's 11x11 Gaussian is
    separable, so the 'valid' filtering (cv2.filter2D(...)[5:-5, 5:-5] in BasicSR) runs as a
    horizontal pass into a ring of 11 rows and a vertical pass over that ring: memory is 11 rows,
    not whole-image planes, so full-size DIV2K images cost a few hundred KB.
*/
#include "common/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SSIM_K 11                /* window size */
#define SSIM_R 5                 /* window radius */

/* Value of channel ch (0..2 = R, G, B; 3 = Y) of pixel p of an RGB8 image, as a double in
   [0, 255] (RGB) or [16, 235] (Y, BT.601 as MATLAB rgb2ycbcr, not rounded). */
static inline double sample(const uint8_t *p, int ch) {
    if (ch < 3) return p[ch];
    return 16.0 + (65.481 * p[0] + 128.553 * p[1] + 24.966 * p[2]) / 255.0;
}

double pf_psnr(const uint8_t *a, const uint8_t *b, int h, int w, int crop_border,
               int y_channel) {
    int c = crop_border > 0 ? crop_border : 0;
    int ch = h - 2 * c, cw = w - 2 * c;
    if (ch <= 0 || cw <= 0) return NAN;
    double sse = 0;
    int ch_first = y_channel ? 3 : 0, ch_last = y_channel ? 3 : 2;
    for (int y = c; y < h - c; y++) {
        for (int x = c; x < w - c; x++) {
            const uint8_t *pa = a + ((size_t)y * w + x) * 3, *pb = b + ((size_t)y * w + x) * 3;
            for (int k = ch_first; k <= ch_last; k++) {
                double d = sample(pa, k) - sample(pb, k);
                sse += d * d;
            }
        }
    }
    double mse = sse / ((double)ch * cw * (ch_last - ch_first + 1));
    if (mse == 0) return INFINITY;
    return 10.0 * log10(255.0 * 255.0 / mse);
}

/* The normalised 1-D Gaussian of cv2.getGaussianKernel(11, 1.5). */
static void gaussian(double g[SSIM_K]) {
    double sum = 0;
    for (int i = 0; i < SSIM_K; i++) {
        double d = i - SSIM_R;
        g[i] = exp(-d * d / (2 * 1.5 * 1.5));
        sum += g[i];
    }
    for (int i = 0; i < SSIM_K; i++) g[i] /= sum;
}

/* Mean SSIM of one channel over the crop [c0, c0+ch) x [c0, c0+cw); needs ch, cw >= 11.
   Returns NAN if memory runs out. Loops run along x innermost so the compiler vectorises
   them; each output still sums its 11 taps in order t = 0..10. */
static double ssim_channel(const uint8_t *a, const uint8_t *b, int w, int c0, int ch, int cw,
                           int k) {
    const double C1 = (0.01 * 255) * (0.01 * 255), C2 = (0.03 * 255) * (0.03 * 255);
    double g[SSIM_K];
    gaussian(g);
    size_t ow = (size_t)cw - 2 * SSIM_R;         /* valid output width */
    /* in[q]: one cropped row of a, b, a^2, b^2, a*b (q = 0..4);
       ring[q][slot]: the last 11 rows of in[q] filtered horizontally;
       m[q]: those filtered vertically, i.e. one row of the valid output */
    double *in = malloc(sizeof(double) * 5 * (size_t)cw);
    double *ring = malloc(sizeof(double) * 5 * SSIM_K * ow);
    double *m = malloc(sizeof(double) * 5 * ow);
    if (!in || !ring || !m) {
        free(in), free(ring), free(m);
        return NAN;
    }
    double total = 0;
    for (int y = 0; y < ch; y++) {
        const uint8_t *pa = a + ((size_t)(y + c0) * w + c0) * 3;
        const uint8_t *pb = b + ((size_t)(y + c0) * w + c0) * 3;
        for (int x = 0; x < cw; x++) {
            double va = sample(pa + (size_t)x * 3, k), vb = sample(pb + (size_t)x * 3, k);
            in[x] = va;
            in[cw + x] = vb;
            in[2 * cw + x] = va * va;
            in[3 * cw + x] = vb * vb;
            in[4 * cw + x] = va * vb;
        }
        for (int q = 0; q < 5; q++) {
            double *out = ring + ((size_t)q * SSIM_K + y % SSIM_K) * ow;
            const double *src = in + (size_t)q * cw;
            for (size_t x = 0; x < ow; x++) out[x] = 0;
            for (int t = 0; t < SSIM_K; t++) {
                for (size_t x = 0; x < ow; x++) out[x] += g[t] * src[x + t];
            }
        }
        if (y < SSIM_K - 1) continue;
        /* output row y - 10 uses filtered rows y-10 .. y, i.e. slots (y-10+t) % 11 */
        for (int q = 0; q < 5; q++) {
            double *mq = m + (size_t)q * ow;
            for (size_t x = 0; x < ow; x++) mq[x] = 0;
            for (int t = 0; t < SSIM_K; t++) {
                int slot = (y - (SSIM_K - 1) + t) % SSIM_K;
                const double *row = ring + ((size_t)q * SSIM_K + slot) * ow;
                for (size_t x = 0; x < ow; x++) mq[x] += g[t] * row[x];
            }
        }
        for (size_t x = 0; x < ow; x++) {
            double mu1 = m[x], mu2 = m[ow + x];
            double s11 = m[2 * ow + x] - mu1 * mu1, s22 = m[3 * ow + x] - mu2 * mu2;
            double s12 = m[4 * ow + x] - mu1 * mu2;
            total += ((2 * mu1 * mu2 + C1) * (2 * s12 + C2)) /
                     ((mu1 * mu1 + mu2 * mu2 + C1) * (s11 + s22 + C2));
        }
    }
    free(in), free(ring), free(m);
    return total / ((double)(ch - 2 * SSIM_R) * (double)ow);
}

double pf_ssim(const uint8_t *a, const uint8_t *b, int h, int w, int crop_border, int y_channel) {
    int c = crop_border > 0 ? crop_border : 0;
    int ch = h - 2 * c, cw = w - 2 * c;
    if (ch < SSIM_K || cw < SSIM_K) return NAN;
    if (y_channel) return ssim_channel(a, b, w, c, ch, cw, 3);
    double sum = 0;
    for (int k = 0; k < 3; k++) sum += ssim_channel(a, b, w, c, ch, cw, k);
    return sum / 3;
}

void pf_to_u8(const float *src, uint8_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v = (double)src[i] * 255.0;
        /* !(v > 0) also maps NaN to 0 */
        dst[i] = !(v > 0) ? 0 : v >= 255.0 ? 255 : (uint8_t)(v + 0.5);
    }
}

void pf_psnr_mean_add(pf_psnr_mean *m, double psnr) {
    if (isinf(psnr) && psnr > 0) {
        m->inf++;
        return;
    }
    m->sum += psnr;
    m->n++;
}

double pf_psnr_mean_get(const pf_psnr_mean *m) {
    if (m->n > 0) return m->sum / (double)m->n;
    return m->inf > 0 ? INFINITY : NAN;
}
