/*  layers — the parameter-free layers of PixFlow's networks, as plain C free functions with
    explicit forward and backward: pixel shuffle, scaling, bicubic upsampling and the
    conversions between the uint8 NHWC images loaders send and float activations. (ReLU and
    residual adds are fused into the convolutions, nn/cpu/conv_dnnl.h; their backward steps
    and the other element-wise nodes are the CPU executor's, nn/cpu/ops.c.)

    Activations are N x C x H x W floats in an nCHWb layout (nn/cpu/dnnl_ctx.h: b = 1 is
    plain NCHW, b = 8 / 16 are oneDNN's nChw8c / nChw16c, b = C is NHWC; channels padded to a
    multiple of b with zeros). Element-wise functions take a count of floats and are layout-agnostic as long
    as all operands share a layout.
*/
#ifndef PF_LAYERS_H
#define PF_LAYERS_H
#include <stddef.h>
#include <stdint.h>

/* dst[i] = s * src[i] (dst may equal src). */
void pf_scale(float *dst, const float *src, float s, size_t n);

/* PixelShuffle(r) forward (torch.nn.PixelShuffle): in N x (C r^2) x H x W (block bi) ->
   out N x C x (H r) x (W r) (block bo), out[n][c][h r + i][w r + j] = in[n][c r^2 + i r + j][h][w].
   Padding channels of out are zeroed. r must be 1..4; the blocks are any of dnnl_ctx.h's (1, 8,
   16, or the tensor's channel count for NHWC). */
void pf_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                              int bi, int bo);

/* Its backward: din (N x C r^2 x H x W, block bi) from dout (N x C x Hr x Wr, block bo);
   a pure permutation, so din is overwritten. */
void pf_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w, int r,
                               int bi, int bo);

/* An LQ image batch as the input nodes read it: n x h x w x 3 (or n x T x h x w x 3) HWC
   samples, either uint8 (u8, f32 NULL: sample v read as v / 255.0f) or float (f32: read as
   is, nominally [0, 1], e.g. a 16-bit PNG's v / 65535). pf_lq_at gives sample i as a float;
   for uint8 it is the expression the input nodes always used, so results stay bit-identical. */
typedef struct {
    const uint8_t *u8;
    const float *f32;
} pf_lq;
static inline float pf_lq_at(pf_lq in, size_t i) {
    return in.f32 ? in.f32[i] : (float)in.u8[i] / 255.0f;
}

/* Image batch to activation: img is n x h x w x 3 (NHWC, RGB; pf_lq_at); dst is N x 3 x H x W
   in block b with dst = (img - mean[c]) * range (mean NULL = 0). Padding zeroed. */
void pf_image_to_act(float *dst, pf_lq img, int n, int h, int w, const float *mean,
                     float range, int b);

/* Activation (N x 3T x H x W, block b; T = `frames`, 1 for images, channel 3 t + c frame t's
   colour c) to n x T x h x w x 3 float (frame-major NHWC): out = act / range + mean[c] (mean
   NULL = 0). */
void pf_act_to_image(float *out, const float *act, int n, int frames, int h, int w,
                     const float *mean, float range, int b);

/* Bicubic upsampling by an integer factor with torch.nn.Upsample(scale_factor=s,
   mode='bicubic', align_corners=False) semantics (Keys cubic, a = -0.75, source index
   (dst + 0.5) / s - 0.5, taps clamped to the border). img: n x h x w x 3 NHWC (pf_lq_at:
   uint8 / 255, or float); dst: N x 3 x (h s) x (w s) in block b. Source: PyTorch's
   aten/src/ATen/native/UpSampleBicubic2d.cpp. */
void pf_bicubic_upsample_image(float *dst, pf_lq img, int n, int h, int w, int s,
                               int b);
#endif
