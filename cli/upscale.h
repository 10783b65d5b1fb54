/*  upscale — one image through a network for `pixflow upscale` (cli/upscale_image.c), one
    video file through it (cli/upscale_video.c); the command itself is cli/upscale.c.

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
#include <signal.h>
#include <stddef.h>

#include "common/image.h"
#include "common/video_remux.h"
#include "nn/infer.h"
#include "nn/model.h"

typedef struct {
    pf_model *m;                /* an image network with its weights loaded */
    pf_infer_opts opts;         /* ensemble, tile (0: whole image), tile_overlap, LQ pixels */
    int mult;                   /* pad the LQ to a multiple of this (>= 1) */
    const pf_infer_net *net;    /* what runs it (--device cuda:N: worker/device.h's
                                   pf_gpu_infer_net); NULL: the CPU model m */
} pf_upscaler;

/* Upscale `in` (w x h, 1..4 channels, 8 or 16 bits) into *out: (w * scale) x (h * scale), the
   same channels and depth, data malloc'd (pf_image_full_free). Returns 0, or -1 with err
   (out of memory, the network's error); *out is then empty. */
int pf_upscale_image(const pf_upscaler *u, const pf_image_full *in, pf_image_full *out,
                     char *err, size_t errlen);

/* ---- videos (cli/upscale_video.c) ----------------------------------------------------------
   A video file goes through common/video_remux.h (pf_video_upscale_file): decoded by
   common/video.c (RGB8, BT.601), upscaled, encoded, its audio and subtitle streams copied,
   written to "<stem>.part.<ext>" and renamed. An image network runs frame by frame through
   pf_upscale_image (so a frame's bytes are those of the same frame as a PNG: tiles, ensemble
   and all); a video network (BasicVSR) runs the clip in windows of eval_cfg.clip_window frames
   sharing eval_cfg.clip_overlap (evaluation's rule), each frame padded by edge replication to
   u->mult, pf_model_infer_clip, pf_to_u8, cropped: `pixflow test`'s bytes. A sliding-window
   network (EDVR) runs each frame with its window of pf_model_frames LQ frames as BasicSR's
   VideoTestDataset makes it (common/frame_indices.h's `padding` at the clip's ends), read
   through a ring of that many decoded frames, padded and rounded alike, one
   pf_model_infer_window per frame: `pixflow test`'s bytes on a VideoTestDataset. */

/* Whether FFmpeg reads `path` as a video (a video stream with at least one frame); its frame
   size and count. Returns 0, or -1 with err (FFmpeg's reason, naming the file). */
int pf_upscale_video_probe(const char *path, int *w, int *h, int *frames, char *err,
                           size_t errlen);

/* The default container of the output of `source` (--video-ext unset): the source's own
   extension when FFmpeg has a muxer for it that holds the encoder `codec` (NULL: libx264 when
   present, else ffv1) and every audio and subtitle stream of the source, else "mkv".
   Writes the extension, without the dot, to ext. */
void pf_upscale_video_ext(const char *source, const char *codec, char *ext, size_t len);

/* Open the output `dest` for `source` as the run will (encoder, options, container, copied
   streams) and close it again, removing the temporary file: the errors a run would meet at
   its start, found before any inference. w, h: the upscaled frame size. 0, or -1 with err. */
int pf_upscale_video_check(const char *source, const char *dest, int w, int h,
                           const pf_video_out_opts *o, char *err, size_t errlen);

/* Upscale the video file `source` into `dest` (see above). window, overlap: a recurrent video
   network's clip windows (ignored for an image network: 1 and 0, and for a sliding-window
   one); padding: a sliding-window network's (pf_frame_padding; a clip shorter than
   pf_video_min_frames is an error naming it). `interrupted` (may be NULL): checked
   before each window and after each frame, non-zero stops the run (the temporary file
   removed). Progress on stderr: frames done, frames/s, ETA. Returns 0, or -1 with err (nothing
   under `dest`, no temporary file). */
int pf_upscale_video(const pf_upscaler *u, int window, int overlap, int padding,
                     const char *source, const char *dest, const pf_video_out_opts *o,
                     const volatile sig_atomic_t *interrupted, char *err, size_t errlen);
#endif
