/*  video_layers — the parameter-free layers of recurrent video SR networks (BasicVSR and
    SPyNet, Chan et al., "BasicVSR: The Search for Essential Components in Video
    Super-Resolution and Beyond", CVPR 2021; Ranjan & Black, "Optical Flow Estimation using a
    Spatial Pyramid Network", CVPR 2017), as BasicSR's basicvsr_arch.py and spynet_arch.py use
    them: warping by an optical flow (torch.nn.functional.grid_sample, bilinear,
    align_corners=True), bilinear resizing (F.interpolate, both align_corners), 2 x 2 average
    pooling, and per-channel affine maps. Forward and backward, plain C.

    Layout: every tensor is N x C x H x W floats in an nCHWb layout (nn/cpu/dnnl_ctx.h:
    b = 1 plain NCHW, 8 / 16 oneDNN's blocked layouts, b = C NHWC), each with its own b, so
    the layers read and write whatever layout the convolutions around them chose. Padding
    channels of an output are written as zeros. Backward functions accumulate (+=) into the
    input gradients, because a recurrent network reads one tensor in several places; the
    caller zeroes them first.

    Numerics follow PyTorch 1.13's CPU kernels (aten/src/ATen/native/GridSampler.cpp,
    UpSampleBilinear2d.cpp, AveragePool2d.cpp): the same source-index formulas, corner
    weights and border rules, so results agree to float rounding.
*/
#ifndef PF_VIDEO_LAYERS_H
#define PF_VIDEO_LAYERS_H
#include <stddef.h>

typedef enum {
    PF_PAD_ZEROS,       /* grid_sample padding_mode='zeros': a corner outside reads 0 */
    PF_PAD_BORDER,      /* 'border': the sample position is clamped into the image first (its
                           gradient is 0 where it was clamped) */
} pf_pad_mode;

/* BasicSR flow_warp(x, flow): out[n][c][y][x] = x[n][c] sampled bilinearly at (x + flow[n][0]
   [y][x], y + flow[n][1][y][x]) in pixels (grid_sample with align_corners=True on the grid
   normalised by (W - 1) and (H - 1)). x: N x C x H x W (block bx); flow: N x 2 x H x W
   (block bf, channel 0 horizontal, 1 vertical); out: N x C x H x W (block bo). A dimension of
   size 1 samples its only pixel (torch: the normalised coordinate maps to 0). */
void pf_flow_warp_forward(float *out, const float *x, const float *flow, int n, int c, int h,
                          int w, pf_pad_mode pad, int bo, int bx, int bf);

/* Its backward from dout (block bo): dx += the scatter of dout by the bilinear weights (NULL:
   not wanted), dflow += the derivative of out with respect to the sample position (NULL: not
   wanted). */
void pf_flow_warp_backward(float *dx, float *dflow, const float *dout, const float *x,
                           const float *flow, int n, int c, int h, int w, pf_pad_mode pad, int bo,
                           int bx, int bf);

/* F.interpolate(in, size=(H, W), mode='bilinear', align_corners=ac) for in N x C x h x w
   (block bi) into out N x C x H x W (block bo). Source row of output row Y: ac ? Y (h - 1) /
   (H - 1) : max((Y + 0.5) h / H - 0.5, 0) (a scale_factor s gives the same as size h s).
   out[..] is then multiplied by mult[c] when mult is not NULL (SPyNet scales each flow
   component with its resize). */
void pf_resize_bilinear_forward(float *out, const float *in, int n, int c, int h, int w, int H,
                                int W, int ac, const float *mult, int bo, int bi);

/* Its backward: din (block bi) += the transpose of the resize applied to dout (block bo),
   mult as in forward. */
void pf_resize_bilinear_backward(float *din, const float *dout, int n, int c, int h, int w,
                                 int H, int W, int ac, const float *mult, int bo, int bi);

/* F.avg_pool2d(in, 2, 2): out N x C x (h / 2) x (w / 2) (block bo), each the mean of a 2 x 2
   window of in (N x C x h x w, block bi; h and w even). SPyNet pools only its inputs, so there
   is no backward. */
void pf_avgpool2_forward(float *out, const float *in, int n, int c, int h, int w, int bo,
                         int bi);

/* out[n][c] = (in[n][c] - sub[c]) * mul[c] (sub NULL: 0), in N x C x H x W (block bi), out
   (block bo); for SPyNet's ImageNet normalisation (sub = mean, mul = 1 / std) and the flow
   scaling. Backward: din += dout * mul[c]. */
void pf_affine_ch_forward(float *out, const float *in, int n, int c, int h, int w,
                          const float *sub, const float *mul, int bo, int bi);
void pf_affine_ch_backward(float *din, const float *dout, int n, int c, int h, int w,
                           const float *mul, int bo, int bi);
#endif
