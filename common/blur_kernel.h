/*  blur_kernel — Real-ESRGAN's blur kernels: their random parameters, the kernels themselves
    and the 2-D filtering of an image with one (the blur steps of the second-order degradation,
    common/realesrgan_pipeline.h, which the Real-ESRGAN sets run in the loaders).

    Sources: Wang, Xie, Dong, Shan, "Real-ESRGAN: Training Real-World Blind Super-Resolution
    with Pure Synthetic Data", ICCVW 2021, section 3.1 ("Blur": the rotated anisotropic
    Gaussian and the generalized Gaussian and plateau shapes) and section 3.3 ("Ringing and
    overshoot artifacts": the 2-D sinc filter through the Bessel function J1), and BasicSR
    (github.com/XPixelGroup/BasicSR) basicsr/data/degradations.py
    (random_mixed_kernels, circular_lowpass_kernel), basicsr/data/realesrgan_dataset.py (the
    draws: kernel sizes 7..21 odd, sinc's cutoff range by kernel size, kernels zero-padded to
    21) and basicsr/utils/img_process_util.py (filter2D: reflect padding, then correlation),
    whose option names and defaults the options below keep. Written from those descriptions;
    tests/reference/blur_kernel_ref.py rebuilds every kernel and filtered image independently.

    Kernels (k x k, k odd, centre at (k-1)/2; x is the column offset, y the row offset from it,
    both in pixels; every kernel is normalised to sum 1, computed in double, stored as float):
      Gaussian              exp(-q/2)
      generalized Gaussian  exp(-q^beta/2)         (beta = 1: the Gaussian)
      plateau               1 / (1 + q^beta)
    with q = [x y] S^-1 [x y]^T, S = R diag(sigma_x^2, sigma_y^2) R^T, R the rotation by
    `rotation` radians ([[cos, -sin], [sin, cos]]); the iso kinds have sigma_y = sigma_x and
    rotation 0. Sinc (circular low-pass of cutoff omega_c radians per pixel):
      omega_c J1(omega_c r) / (2 pi r),  r = sqrt(x^2 + y^2) > 0;  omega_c^2 / (4 pi) at r = 0
    (the limit), J1 the Bessel function of the first kind of order 1 (POSIX j1()).
*/
#ifndef PF_BLUR_KERNEL_H
#define PF_BLUR_KERNEL_H
#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

#define PF_BLUR_KERNEL_MIN 3    /* smallest kernel_size */
#define PF_BLUR_KERNEL_MAX 31   /* largest kernel_size (BasicSR's configs use 21) */
#define PF_BLUR_LIST_MAX 8      /* most entries of kernel_list / kernel_prob */

/* What a drawn kernel is. The first six are BasicSR's kernel_list names, in its order. */
typedef enum {
    PF_BLUR_ISO,                /* 'iso': isotropic Gaussian */
    PF_BLUR_ANISO,              /* 'aniso': anisotropic Gaussian */
    PF_BLUR_GENERALIZED_ISO,    /* 'generalized_iso' */
    PF_BLUR_GENERALIZED_ANISO,  /* 'generalized_aniso' */
    PF_BLUR_PLATEAU_ISO,        /* 'plateau_iso' */
    PF_BLUR_PLATEAU_ANISO,      /* 'plateau_aniso' */
    PF_BLUR_SINC,               /* circular low-pass ('sinc'; drawn by sinc_prob, not listed) */
    PF_BLUR_PULSE,              /* identity (BasicSR's pulse_tensor: no final sinc drawn) */
    PF_BLUR_N_FAMILIES
} pf_blur_family;

/* The name of a family ("iso", ..., "sinc", "pulse"); "?" for a value out of range. */
const char *pf_blur_family_name(pf_blur_family f);
/* The family of a kernel_list name (one of the six), or -1 for any other string. */
int pf_blur_family_from_name(const char *name);

/* One stage's blur options, BasicSR's names (the second stage's are the same fields read from
   the *2 keys). Defaults: pf_blur_opts_default. */
typedef struct {
    int blur_kernel_size;            /* largest kernel and the size kernels are padded to, odd
                                        3..31: sizes are drawn uniformly from the odd
                                        7..blur_kernel_size (BasicSR: 7..21 with 21), or are
                                        blur_kernel_size when it is below 7 */
    int n_kernels;                   /* entries of kernel_list and kernel_prob, 1..8 */
    int n_kernel_prob;               /* entries given for kernel_prob (checked equal) */
    pf_blur_family kernel_list[PF_BLUR_LIST_MAX];  /* one of the six Gaussian-like kinds each */
    double kernel_prob[PF_BLUR_LIST_MAX];          /* >= 0, summing to 1 (within 1e-6) */
    double blur_sigma[2];            /* [lo, hi] of sigma_x and sigma_y, pixels, 0 < lo <= hi */
    double betag_range[2];           /* [lo, hi] of the generalized Gaussian's beta,
                                        0 < lo <= 1 <= hi */
    double betap_range[2];           /* [lo, hi] of the plateau's beta, 0 < lo <= 1 <= hi */
    double sinc_prob;                /* probability of a sinc kernel instead, 0..1 */
} pf_blur_opts;

/* Real-ESRGAN's options (train_realesrnet_x4plus.yml): stage 1 or 2 (blur_sigma [0.2, 3] or
   [0.2, 1.5]; otherwise equal: size 21, the six kinds with probabilities 0.45 0.25 0.12 0.03
   0.12 0.03, betag_range [0.5, 4], betap_range [1, 2], sinc_prob 0.1). */
void pf_blur_opts_default(pf_blur_opts *o, int stage);

/* Check o. `suffix` ("" or "2") is appended to the key names in the message, as the config
   spells them. Returns 0, or -1 with a message naming the key and the value in err
   ("kernel_prob2: 6 values sum to 0.97, not 1", "blur_kernel_size: 20 is even: kernels need
   a centre pixel; use 19 or 21"). */
int pf_blur_opts_check(const pf_blur_opts *o, const char *suffix, char *err, size_t errlen);

/* Every drawn value of one blur step: enough to rebuild its kernel (pf_blur_kernel). */
typedef struct {
    pf_blur_family family;
    int kernel_size;            /* odd, 3..31; 1 for PF_BLUR_PULSE */
    double sigma_x, sigma_y;    /* pixels (Gaussian-like kinds; equal for the iso kinds) */
    double rotation;            /* radians, [-pi, pi) (aniso kinds; 0 for the iso ones) */
    double beta;                /* shape (generalized and plateau kinds; else 0) */
    double omega_c;             /* cutoff, radians per pixel (sinc; else 0) */
} pf_blur_params;

/* The stream a stage's draws come from: `sample_key` is the sample's degradation key
   (common/patch.h pf_dataset_degrade_key(seed, epoch, sample index), or the evaluation
   image's), stage 1 or 2 the first or second blur, 3 the final sinc. A chained tag keeps it
   apart from the other random degradation steps' streams of the same key. */
pf_rng pf_blur_rng(uint64_t sample_key, int stage);

/* Draw one blur step from r with checked options o (BasicSR's realesrgan_dataset order):
   kernel_size; sinc with probability sinc_prob, its omega_c uniform in [pi/3, pi) for sizes
   below 13, else [pi/5, pi); otherwise a kind from kernel_list by kernel_prob, sigma_x
   uniform in blur_sigma, for the aniso kinds sigma_y in blur_sigma and rotation in
   [-pi, pi), for generalized and plateau kinds beta: with even odds uniform in [lo, 1) or in
   [1, hi) of its range (BasicSR's rule). */
void pf_blur_draw(const pf_blur_opts *o, pf_rng *r, pf_blur_params *p);

/* Draw the final sinc: with probability final_sinc_prob (0..1) a sinc of a size drawn as
   pf_blur_draw's (from max_size, odd 3..31) with omega_c uniform in [pi/3, pi), else
   PF_BLUR_PULSE. */
void pf_blur_draw_final_sinc(double final_sinc_prob, int max_size, pf_rng *r,
                             pf_blur_params *p);

/* One line (no newline) of p's values for its family, e.g. "family=aniso kernel_size=21
   sigma_x=1.25 sigma_y=0.5 rotation=-2.1 ", each double printed with %.17g so that it
   reads back to the same bits (what `--explain` prints; the parity test parses it). Returns
   what snprintf returns. */
int pf_blur_params_format(const pf_blur_params *p, char *buf, size_t len);

/* The kernel of p, centred in a pad_to x pad_to float array `k` (row-major; pad_to odd,
   >= p->kernel_size, or 0 for p->kernel_size), zero outside: BasicSR pads to 21 so that
   kernels of a batch share a shape. Returns 0, or -1 with err (even or out of range size,
   sigma or omega_c not > 0, beta not > 0 where used). */
int pf_blur_kernel(const pf_blur_params *p, int pad_to, float *k, char *err, size_t errlen);

/* Filter the h x w image with c interleaved channels (HWC) by the ks x ks kernel k (row-major,
   ks odd), as BasicSR's filter2D: PyTorch F.pad(mode='reflect') by ks/2 on each side (the edge
   pixel not repeated: column -1 reads column 1), then correlation (F.conv2d, the kernel not
   flipped) per channel. Output: h x w x c floats on the input's scale (0..255 for the uint8
   version; rounding is the caller's). Accumulates in float. Zero rings around the kernel are
   skipped. Requires h and w > ks/2 (as F.pad's reflect mode). Returns 0, or -1 with err (bad
   sizes, out of memory). */
int pf_blur_filter_u8(const uint8_t *src, int h, int w, int c, const float *k, int ks,
                      float *dst, char *err, size_t errlen);
int pf_blur_filter_f32(const float *src, int h, int w, int c, const float *k, int ks,
                       float *dst, char *err, size_t errlen);
#endif
