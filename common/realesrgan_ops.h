/*  realesrgan_ops — Real-ESRGAN's random resize and its Gaussian / Poisson noise: the drawn
    parameters, the resize of a float image as PyTorch's F.interpolate and the noise itself
    (issue 40, the resize and noise steps of the second-order degradation); the unsharp-masked
    GT (USM) and the JPEG stage through libjpeg-turbo with its drawn quality. Chained by
    common/realesrgan_pipeline.h.

    Sources: Wang et al., "Real-ESRGAN", ICCVW 2021, section 3.1 ("Resize", "Noise"), and
    BasicSR (github.com/XPixelGroup/BasicSR) basicsr/models/realesrgan_model.py feed_data (the
    draws: up / down / keep by resize_prob, the factor in resize_range, the mode among area,
    bilinear and bicubic; Gaussian noise with probability gaussian_noise_prob, else Poisson)
    and basicsr/data/degradations.py (generate_gaussian_noise_pt, generate_poisson_noise_pt),
    whose option names and defaults are kept. Written from those descriptions;
    tests/reference/realesrgan_ops_ref.py checks every output against PyTorch.

    Images are float, HWC (row-major rows of w pixels of c interleaved channels), on the
    0..1 scale for the noise (c = 3, RGB). Rounding to 1/255 at the end of a stage is the
    caller's, as in BasicSR.
*/
#ifndef PF_REALESRGAN_OPS_H
#define PF_REALESRGAN_OPS_H
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

/* ---- resize ---- */

/* F.interpolate's modes, in BasicSR's choice order. */
typedef enum {
    PF_RESIZE_AREA, PF_RESIZE_BILINEAR, PF_RESIZE_BICUBIC, PF_RESIZE_N_MODES
} pf_resize_mode;
/* Whether the draw goes up, down or keeps the size (resize_prob's order). */
typedef enum { PF_RESIZE_UP, PF_RESIZE_DOWN, PF_RESIZE_KEEP } pf_resize_dir;

/* "area", "bilinear", "bicubic"; "?" out of range. */
const char *pf_resize_mode_name(pf_resize_mode m);

/* One stage's resize options (the second stage's from the *2 keys). */
typedef struct {
    double resize_prob[3];      /* probabilities of up, down, keep; >= 0, summing to 1 */
    int n_resize_prob;          /* values given for resize_prob (checked equal to 3) */
    double resize_range[2];     /* [lo, hi] of the factor: down in [lo, 1), up in [1, hi);
                                   0 < lo <= 1 <= hi */
} pf_resize_opts;

/* train_realesrnet_x4plus.yml: stage 1 resize_prob [0.2, 0.7, 0.1], resize_range
   [0.15, 1.5]; stage 2 [0.3, 0.4, 0.3], [0.3, 1.2]. */
void pf_resize_opts_default(pf_resize_opts *o, int stage);
/* Check o; suffix "" or "2" is appended to the key names. 0, or -1 with a message naming the
   key ("resize_prob2: 3 values sum to 0.9, not 1"). */
int pf_resize_opts_check(const pf_resize_opts *o, const char *suffix, char *err, size_t errlen);

/* One drawn resize. */
typedef struct {
    pf_resize_dir dir;
    double scale;               /* factor: 1 for keep */
    pf_resize_mode mode;
} pf_resize_params;

/* The stream of a stage's resize draw (stage 1 or 2; 3 for the final resize, whose size is
   fixed and only its mode is drawn), keyed like pf_blur_rng (common/blur_kernel.h). */
pf_rng pf_resize_rng(uint64_t sample_key, int stage);
/* BasicSR's order: direction by resize_prob, the factor uniform in [1, hi) (up) or [lo, 1)
   (down), then the mode, each of the three at 1/3. */
void pf_resize_draw(const pf_resize_opts *o, pf_rng *r, pf_resize_params *p);
/* "resize=down scale=0.52000000000000002 mode=bicubic" (%.17g). Returns snprintf's value. */
int pf_resize_params_format(const pf_resize_params *p, char *buf, size_t len);

/* F.interpolate's output size for a factor: floor(n * factor) (in double). */
int pf_resize_out_size(int n, double factor);

/* Resize the h x w x c float image src to out_h x out_w x c in dst (not overlapping src), as
   PyTorch's F.interpolate (no antialias, align_corners=False):
     area      adaptive average pooling: output row i averages input rows
               floor(i*h/out_h) .. ceil((i+1)*h/out_h) - 1 (columns alike);
     bilinear  source coordinate x = (i + 0.5) * s - 0.5, clamped at 0 below, the two
               neighbours (the last one repeated at the end);
     bicubic   the same x unclamped, Keys' cubic convolution with A = -0.75 over the four
               neighbours floor(x) - 1 .. floor(x) + 2, their indices clamped to the image.
   s is 1 / factor when factor > 0 (F.interpolate given scale_factor: out_h must then be
   pf_resize_out_size(h, factor)), in / out when factor is 0 (given size); the same factor
   on both axes. Separable: rows then columns, in float with double weights.
   Returns 0, or -1 with err (sizes below 1, c not 1..4, an unknown mode, out of memory). */
int pf_resize_f32(const float *src, int h, int w, int c, int out_h, int out_w, double factor,
                  pf_resize_mode mode, float *dst, char *err, size_t errlen);

/* ---- noise ---- */

typedef enum { PF_NOISE_GAUSSIAN, PF_NOISE_POISSON } pf_noise_kind;

/* One stage's noise options (the second stage's from the *2 keys). */
typedef struct {
    double gaussian_noise_prob;     /* probability of Gaussian noise, else Poisson; 0..1 */
    double noise_range[2];          /* Gaussian sigma [lo, hi] on the 0..255 scale, 0 <= lo <= hi */
    double poisson_scale_range[2];  /* Poisson noise scale [lo, hi], 0 <= lo <= hi */
    double gray_noise_prob;         /* probability of gray noise (one plane for R, G, B), 0..1 */
} pf_noise_opts;

/* train_realesrnet_x4plus.yml: gaussian_noise_prob 0.5, gray_noise_prob 0.4 both stages;
   noise_range [1, 30] / [1, 25], poisson_scale_range [0.05, 3] / [0.05, 2.5]. */
void pf_noise_opts_default(pf_noise_opts *o, int stage);
/* 0, or -1 with a message naming the key ("noise_range2: [30, 1] is not a range lo <= hi"). */
int pf_noise_opts_check(const pf_noise_opts *o, const char *suffix, char *err, size_t errlen);

typedef struct {
    pf_noise_kind kind;
    int gray;           /* 1: one noise plane shared by the three channels */
    double sigma;       /* Gaussian: standard deviation on the 0..255 scale (else 0) */
    double scale;       /* Poisson: the noise's factor (else 0) */
} pf_noise_params;

/* The stream of a stage's noise draw (stage 1 or 2), keyed like pf_blur_rng, and the
   separate stream its noise samples come from (so the drawn parameters do not depend on the
   image size). */
pf_rng pf_noise_rng(uint64_t sample_key, int stage);
pf_rng pf_noise_sample_rng(uint64_t sample_key, int stage);
/* BasicSR's order: Gaussian with probability gaussian_noise_prob, then its sigma uniform in
   noise_range (or the scale in poisson_scale_range), then gray with probability
   gray_noise_prob. */
void pf_noise_draw(const pf_noise_opts *o, pf_rng *r, pf_noise_params *p);
/* "noise=gaussian gray=1 sigma=12.5" / "noise=poisson gray=0 scale=0.75" (%.17g). */
int pf_noise_params_format(const pf_noise_params *p, char *buf, size_t len);

/* The Poisson levels of n values v (0..1): v rounded to 1/255 (clamped, ties to even as
   torch.round), the count u of distinct levels, 2^ceil(log2(u)) (BasicSR's `vals`: it uses
   2 ** np.ceil(np.log2(len(unique)))). */
double pf_noise_poisson_vals(const float *v, size_t n);

/* Add p's noise to the h x w x 3 RGB image img (0..1) in place, then clamp to [0, 1]
   (BasicSR's clip=True; no rounding). Noise per value, q the value rounded to 1/255:
     Gaussian  z * sigma / 255, z standard normal (Box-Muller from r);
     Poisson   (k / vals - q) * scale, k ~ Poisson(q * vals), vals = pf_noise_poisson_vals
               of the image (color) — BasicSR's generate_poisson_noise_pt.
   Gray: one plane of h x w draws added to all three channels; for Poisson it is drawn from
   the gray image 0.2989 R + 0.587 G + 0.114 B (torchvision's rgb_to_grayscale), its own q
   and vals. draws, when not NULL, receives the raw draws (z, or k as floats), h * w * 3 in
   HWC order or h * w for gray: the parity test hands them to the reference. Poisson counts
   by inversion below a mean of 10, else Hörmann's PTRS (transformed rejection, 1993).
   Returns 0, or -1 with err (sizes below 1, out of memory). */
int pf_noise_add(float *img, int h, int w, const pf_noise_params *p, pf_rng *r, float *draws,
                 char *err, size_t errlen);
/* ---- USM sharpening of the GT ---- */

/* BasicSR's usm_sharp / USMSharp defaults: kernel size 51 (radius 50 made odd), sigma from
   OpenCV's rule for sigma 0, weight 0.5, threshold 10 (on the 0..255 scale). */
#define PF_USM_KSIZE 51
#define PF_USM_WEIGHT 0.5
#define PF_USM_THRESHOLD 10.0

/* The 1-D Gaussian of cv2.getGaussianKernel(PF_USM_KSIZE, 0) into k[PF_USM_KSIZE]: sigma =
   0.3 * ((51 - 1) * 0.5 - 1) + 0.8 = 8, k[i] = exp(-(i - 25)^2 / (2 sigma^2)) normalised to
   sum 1 (double). The 2-D kernel is its outer product (BasicSR: np.dot(k, k.T)). */
void pf_usm_kernel(double *k);

/* Unsharp-mask the h x w x c float image src (HWC, 0..1, c 1..4) into dst (may not overlap),
   as BasicSR's usm_sharp:
     blur     = src filtered with the 51 x 51 Gaussian, border BORDER_REFLECT_101 (cv2's
                default; torch's 'reflect' pad), repeated for images below 26 pixels;
     residual = src - blur;  mask = |residual| * 255 > 10 (1 or 0);
     soft     = mask filtered with the same Gaussian;
     sharp    = clip(src + 0.5 * residual, 0, 1);
     dst      = soft * sharp + (1 - soft) * src.
   Separable (rows then columns, double sums). dst is not rounded (BasicSR keeps its gt_usm
   float). Returns 0, or -1 with err (sizes below 1, c not 1..4, out of memory). */
int pf_usm_sharp_f32(const float *src, int h, int w, int c, float *dst, char *err,
                     size_t errlen);
/* The same on uint8 (v / 255 in, out rounded to nearest and clamped to 0..255, as writing
   BasicSR's float result to an 8-bit image). src and dst may be the same buffer. */
int pf_usm_sharp_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, char *err,
                    size_t errlen);

/* ---- JPEG ---- */

/* One stage's JPEG option: jpeg_range (stage 1), jpeg_range2 (stage 2 and the final JPEG). */
typedef struct {
    double jpeg_range[2];   /* whole qualities [lo, hi], 1 <= lo <= hi <= 100 */
} pf_jpeg_opts;

/* train_realesrnet_x4plus.yml: jpeg_range [30, 95], jpeg_range2 [30, 95]. */
void pf_jpeg_opts_default(pf_jpeg_opts *o, int stage);
/* 0, or -1 with a message naming the key ("jpeg_range2: [0, 95] is not within 1..100"). */
int pf_jpeg_opts_check(const pf_jpeg_opts *o, const char *suffix, char *err, size_t errlen);

typedef struct {
    int quality;        /* 1..100 */
} pf_jpeg_params;

/* The stream of a JPEG draw (stage 1, 2, or 3 for the final JPEG), keyed like pf_blur_rng. */
pf_rng pf_jpeg_rng(uint64_t sample_key, int stage);
/* The quality uniform over the whole numbers lo..hi (BasicSR draws a float for DiffJPEG;
   libjpeg takes an integer quality). */
void pf_jpeg_draw(const pf_jpeg_opts *o, pf_rng *r, pf_jpeg_params *p);
/* "jpeg quality=57". Returns snprintf's value. */
int pf_jpeg_params_format(const pf_jpeg_params *p, char *buf, size_t len);

/* Real JPEG of the h x w x 3 RGB float image img (0..1) in place: each value clamped to
   [0, 1] (BasicSR clamps before its JPEG), rounded to uint8 as (uint8)(v * 255f + 0.5f) in
   float, encoded with pf_image_encode_jpeg at quality (libjpeg defaults, 4:2:0: the bytes of
   PIL's Image.save(quality=q)), decoded with pf_image_decode_jpeg, and img = byte / 255f.
   When jpeg is not NULL it receives the encoded bytes (malloc'd, the caller frees) and
   *jpeg_len their count. Returns 0, or -1 with err (sizes below 1, quality outside 1..100,
   out of memory, a libjpeg error). */
int pf_jpeg_apply(float *img, int h, int w, int quality, uint8_t **jpeg, size_t *jpeg_len,
                  char *err, size_t errlen);
#endif
