/*  realesrgan_pipeline — Real-ESRGAN's second-order degradation chained from its stages
    (common/blur_kernel.h, common/realesrgan_ops.h, JPEG through common/image.h): the options
    of both stages, one sample's drawn parameters, their printed form, and the LQ they make
    (RealESRGANDataset and RealESRGANVideoDataset run it in the loaders, common/dataset.h and
    common/video_dataset.h; the video set's per-frame noise: pf_realesrgan_degrade_frame).

    Order (BasicSR basicsr/models/realesrgan_model.py feed_data, Real-ESRGAN's paper, sec. 3):
      stage 1   blur (kernel 1), random resize by a factor, noise (clamped to 0..1), JPEG at
                quality1 (jpeg_range);
      stage 2   with probability second_order_prob (BasicSR always: 1): blur (kernel 2) with
                probability second_blur_prob, random resize to the size
                int(h / scale * factor) x int(w / scale * factor), noise;
      final     with even odds either [resize to h/scale x w/scale, final sinc, JPEG] or
                [JPEG, resize to h/scale x w/scale, final sinc], the JPEG at quality2
                (jpeg_range2), the resize mode drawn among area/bilinear/bicubic; then
                clamp(round(x * 255), 0, 255).
    JPEG is real (pf_jpeg_apply: libjpeg-turbo, 4:2:0; BasicSR uses DiffJPEG): its input is
    the image clamped to 0..1 and rounded to 8 bits, its output read back as v / 255.
    Images are float HWC RGB on the 0..1 scale between stages.
*/
#ifndef PF_REALESRGAN_PIPELINE_H
#define PF_REALESRGAN_PIPELINE_H
#include <stddef.h>
#include <stdint.h>

#include "common/blur_kernel.h"
#include "common/realesrgan_ops.h"

/* Both stages' options; index 0 is stage 1 (the plain keys), 1 stage 2 (the *2 keys). */
typedef struct {
    pf_blur_opts blur[2];
    pf_resize_opts resize[2];
    pf_noise_opts noise[2];
    pf_jpeg_opts jpeg[2];       /* jpeg_range (stage 1), jpeg_range2 (the final JPEG) */
    double second_order_prob;   /* probability of stage 2, 0..1 (default 1, as BasicSR) */
    double second_blur_prob;    /* probability of stage 2's blur, 0..1 (default 0.8) */
    double final_sinc_prob;     /* probability of a final sinc rather than none (0.8) */
    int scale;                  /* GT size / LQ size, 1..8 (4) */
} pf_realesrgan_opts;

/* train_realesrnet_x4plus.yml's values (the slices' defaults, scale 4). */
void pf_realesrgan_opts_default(pf_realesrgan_opts *o);

/* Check o for GT patches of gt_h x gt_w (0 x 0: skip the size checks): the slices' checks,
   the JPEG ranges, the probabilities, the scale, and the sizes — gt_h and gt_w multiples of
   scale, each kernel smaller than twice the image it filters (reflect padding: blur 1 on the
   GT, blur 2 on stage 1's smallest resize, the final sinc on the LQ size) and stage 2's
   smallest resize at least 1 pixel. 0, or -1 with a message naming the key and value
   ("blur_kernel_size2: 21 is too big for the patch: stage 1's smallest resize (resize_range)
   is 9 pixels on a side, which a kernel of 21 cannot filter (reflect padding needs 11); use
   17 or less", for the defaults and a 64 x 64 patch). */
int pf_realesrgan_opts_check(const pf_realesrgan_opts *o, int gt_h, int gt_w, char *err,
                             size_t errlen);

/* One sample's draws: every value the LQ depends on. Stage 2's draws are made (and
   recorded) even where second_order is 0, so that each stream stays the same. */
typedef struct {
    uint64_t key;               /* the sample key (pf_dataset_degrade_key); keys the noise
                                   (a video frame's: pf_realesrgan_degrade_frame) */
    pf_blur_params blur1;
    pf_resize_params resize1;
    pf_noise_params noise1;
    int quality1;
    int second_order;           /* 1: stage 2 applied */
    int blur2_on;               /* 1: stage 2's blur applied */
    pf_blur_params blur2;
    pf_resize_params resize2;
    pf_noise_params noise2;
    int sinc_first;             /* 1: [resize, sinc, JPEG]; 0: [JPEG, resize, sinc] */
    pf_resize_mode final_mode;
    pf_blur_params sinc;        /* PF_BLUR_PULSE: no final sinc */
    int quality2;
} pf_realesrgan_params;

/* The stream of the pipeline's own draws (second order, second blur, final order) for a
   sample key; the stages use their slices' streams (pf_blur_rng stage 1, 2, 3 = final sinc;
   pf_resize_rng 1, 2, 3 = final mode; pf_noise_rng 1, 2; pf_jpeg_rng 1, 3 = final). */
pf_rng pf_realesrgan_rng(uint64_t sample_key);

/* Draw every parameter of sample_key with checked options o. */
void pf_realesrgan_draw(const pf_realesrgan_opts *o, uint64_t sample_key,
                        pf_realesrgan_params *p);

/* p as one line (no newline) of key=value words, each stage's words prefixed ("b1.family=iso
   b1.kernel_size=13 b1.sigma=... r1.resize=down ... n1.noise=gaussian ... q1=57 second_order=1
   blur2_on=1 b2.... final=sinc_first final_mode=area s.family=sinc ... q2=80 key=0x..."),
   doubles with %.17g (what `--explain` will print; the parity test parses it). Returns the
   length it needed (as snprintf); the line is cut where len is too small. */
int pf_realesrgan_params_format(const pf_realesrgan_params *p, char *buf, size_t len);

/* Optional record of the raw noise draws (for the parity test): stage s's draws, as
   pf_noise_add writes them (h * w * 3, or h * w for gray), malloc'd by the pipeline; NULL
   where that stage did not run, and the image the noise was added to (h * w * 3 floats); the
   8-bit input of the two JPEG steps (stage 1's, the final one; h * w * 3 bytes at the size
   the image had there) and their encoded bytes. Free with pf_realesrgan_trace_free. */
typedef struct {
    float *noise_draws[2];
    size_t n_noise_draws[2];
    float *noise_in[2];
    uint8_t *jpeg_in[2];
    size_t n_jpeg_in[2];        /* bytes: h * w * 3 */
    uint8_t *jpeg[2];
    size_t n_jpeg[2];
} pf_realesrgan_trace;
void pf_realesrgan_trace_free(pf_realesrgan_trace *t);

/* Degrade the gt_h x gt_w RGB GT (float HWC, 0..1; the _u8 form takes RGB8 and divides by
   255) with the recorded parameters p under options o (checked for this size) into lq,
   (gt_h / scale) x (gt_w / scale) x 3 bytes. The same p always gives the same lq. trace may
   be NULL. Returns 0, or -1 with err (sizes, out of memory, a JPEG error). */
int pf_realesrgan_degrade(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                          const float *gt, int gt_h, int gt_w, uint8_t *lq,
                          pf_realesrgan_trace *trace, char *err, size_t errlen);
int pf_realesrgan_degrade_u8(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                             const uint8_t *gt, int gt_h, int gt_w, uint8_t *lq,
                             pf_realesrgan_trace *trace, char *err, size_t errlen);

/* Video (RealESRGANVideoDataset, as RealBasicVSR): every frame of a sample is degraded with
   the sample's one draw p, the noise samples alone coming from another key per frame.
   pf_realesrgan_frame_key(sample_key, t) is frame t's (t >= 0, the frame's place in the
   sample): pf_mix64(sample_key ^ 0x9e3779b97f4a7c15 * (t + 1)). The _frame forms are
   pf_realesrgan_degrade / _u8 with the noise streams (pf_noise_sample_rng) keyed by noise_key
   instead of p->key; everything else p says is applied unchanged, so two frames' LQs differ
   only by their noise. With noise_key == p->key they are pf_realesrgan_degrade's bytes. */
uint64_t pf_realesrgan_frame_key(uint64_t sample_key, int t);
int pf_realesrgan_degrade_frame(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                                uint64_t noise_key, const float *gt, int gt_h, int gt_w,
                                uint8_t *lq, pf_realesrgan_trace *trace, char *err,
                                size_t errlen);
int pf_realesrgan_degrade_frame_u8(const pf_realesrgan_opts *o, const pf_realesrgan_params *p,
                                   uint64_t noise_key, const uint8_t *gt, int gt_h, int gt_w,
                                   uint8_t *lq, pf_realesrgan_trace *trace, char *err,
                                   size_t errlen);
#endif
