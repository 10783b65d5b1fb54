/*  infer — whole-image inference the way evaluation and `pixflow test` run it: optional x8
    self-ensemble (EDSR's forward_x8, Lim et al. 2017) and optional tiling (BasicSR's
    tile_process) so an image whose activations do not fit is run piece by piece with network
    buffers bounded by the tile, not by the image. Used by hooks/evaluate.c and by
    `pixflow upscale` (cli/upscale.c, which also feeds 16-bit images as floats: pf_infer_f32).
*/
#ifndef PF_INFER_H
#define PF_INFER_H
#include <stddef.h>
#include <stdint.h>

#include "nn/model.h"

typedef struct {
    int ensemble;       /* 1: average the 8 dihedral transforms (eval_cfg.ensemble) */
    int tile;           /* output core of a tile in LQ pixels; 0 = whole image (eval_cfg.tile) */
    int tile_overlap;   /* LQ pixels of context around each core (eval_cfg.tile_overlap) */
} pf_infer_opts;

/* Radius, in LQ pixels, of the network's receptive field: an upper bound on how far an input
   pixel can influence an output pixel (EDSR 2 * n_blocks + 4, SRCNN 2 + ceil(6 / scale) for
   the 9-1-5 kernels). Tiling with tile_overlap >= this equals untiled inference up to float
   summation order. PF_INFER_GLOBAL for networks that see the whole image (RCAN's channel
   attention pools over it): no overlap makes tiles exact for those. Defined in nn/zoo.c, one
   function per builder. */
#define PF_INFER_GLOBAL (1 << 20)
int pf_infer_receptive_radius(const pf_config *cfg);

/* A short description of cfg's eval_cfg inference mode for logs, into buf: "whole image",
   "x8 ensemble", "tile 64 overlap 40" or both joined by ", "; a tiling whose overlap is below
   pf_infer_receptive_radius says so ("overlap 8 < receptive radius 36: seams possible").
   Returns buf. */
const char *pf_infer_describe(const pf_config *cfg, char *buf, size_t len);

/* The dihedral transform t (0..7) of an h x w image of px-byte pixels, HWC: bit 2 transposes,
   then bit 0 flips left-right and bit 1 flips top-bottom (of the transposed image). inverse =
   0: dst = T_t(src), src h x w, dst (t & 4 ? w x h : h x w). inverse = 1: dst = T_t^-1(src),
   src the transformed shape, dst h x w. */
void pf_dihedral(const void *src, int h, int w, size_t px, int t, int inverse, void *dst);

/* Inference of one image with `o`: lq h x w x 3 uint8 HWC -> out (h*scale) x (w*scale) x 3
   float HWC, not clamped (pf_model_infer's contract). Ensemble: the mean, in float, of the 8
   transformed inferences transformed back; no rounding happens here. Tiling: cores of
   tile x tile LQ pixels on a grid from the top-left; each is inferred from a window of
   min(tile + 2*tile_overlap, h) x min(tile + 2*tile_overlap, w) pixels around it, shifted
   inwards at the image edges so every window has the same size (one network plan for all
   tiles); only each core's output is kept, so tiles do not blend but abut, exactly (no seam)
   when tile_overlap >= pf_infer_receptive_radius. Ensemble and tiling combine (each
   transformed image is tiled). Returns 0 or -1 with err. */
int pf_infer(pf_model *m, const uint8_t *lq, int h, int w, const pf_infer_opts *o, float *out,
             char *err, size_t errlen);

/* pf_infer with a float input: lq h x w x 3 float HWC, nominally [0, 1], taken as is
   (pf_model_infer_f32; a 16-bit image's v / 65535). Image networks only. Same tiling and
   ensemble; same output. */
int pf_infer_f32(pf_model *m, const float *lq, int h, int w, const pf_infer_opts *o,
                 float *out, char *err, size_t errlen);

/* An image network to infer with, whatever executes it: the CPU model (pf_infer_net_cpu) or
   a GPU (worker/device.h, pf_gpu_infer_net). `run` is one inference of an h x w image of
   es-byte samples (es 1: uint8 HWC; es 4: float HWC, nominally [0, 1]) into out,
   (h * scale) x (w * scale) x 3 float HWC, not clamped; 0 or -1 with err. h and w are
   multiples of input_multiple (pf_model_input_multiple). */
typedef struct {
    int scale, input_multiple;
    int (*run)(void *ctx, const void *lq, size_t es, int h, int w, float *out, char *err,
               size_t errlen);
    void *ctx;
} pf_infer_net;

/* The CPU model m as a pf_infer_net (uint8: pf_model_infer; float: pf_model_infer_f32). */
pf_infer_net pf_infer_net_cpu(pf_model *m);

/* pf_infer / pf_infer_f32 on any pf_infer_net: the same tiling, ensemble and output. */
int pf_infer_on(const pf_infer_net *net, const void *lq, size_t es, int h, int w,
                const pf_infer_opts *o, float *out, char *err, size_t errlen);
#endif
