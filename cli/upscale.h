/*  upscale — one image through a network for `pixflow upscale` (cli/upscale_image.c); the
    command itself is cli/upscale.c.

    Gray, gray + alpha, RGB and RGBA images of 8 or 16 bits (pf_image_full) are upscaled the
    way Real-ESRGAN's RealESRGANer.enhance does (realesrgan/utils.py, alpha_upsampler
    'realesrgan', its default):
    - the colour goes through the network as RGB (gray replicated to R = G = B);
    - an alpha plane is replicated to 3 channels and run through the same network separately;
      its output is clamped to [0, 1] and turned back into one plane by OpenCV's BGR2GRAY
      weights, 0.299 R + 0.587 G + 0.114 B;
    - a gray image's output is clamped and made gray by the same weights (Real-ESRGAN's 'L'
      mode: gray in, gray out; gray + alpha likewise keeps its two channels);
    - 8-bit samples go in as uint8 (pf_infer, which reads v / 255) and come out by pf_to_u8
      (clamp, round half up: `pixflow test`'s rounding, so an RGB8 image gives `pixflow test`'s
      bytes); 16-bit samples go in as float v / 65535 (pf_infer_f32) and come out as
      round(clamp(y, 0, 1) * 65535). Real-ESRGAN guesses 16 bits from max > 256; here the
      file's bit depth says it.
    The LQ is padded by edge replication to a multiple of `mult` (eval_cfg.pad_multiple and the
    network's input multiple) and cropped back, as evaluation does.
*/
#ifndef PF_CLI_UPSCALE_H
#define PF_CLI_UPSCALE_H
#include <stddef.h>

#include "common/image.h"
#include "nn/infer.h"
#include "nn/model.h"

typedef struct {
    pf_model *m;                /* an image network with its weights loaded */
    pf_infer_opts opts;         /* ensemble, tile (0: whole image), tile_overlap, LQ pixels */
    int mult;                   /* pad the LQ to a multiple of this (>= 1) */
} pf_upscaler;

/* Upscale `in` (w x h, 1..4 channels, 8 or 16 bits) into *out: (w * scale) x (h * scale), the
   same channels and depth, data malloc'd (pf_image_full_free). Returns 0, or -1 with err
   (out of memory, the network's error); *out is then empty. */
int pf_upscale_image(const pf_upscaler *u, const pf_image_full *in, pf_image_full *out,
                     char *err, size_t errlen);
#endif
