/*  onnx_export — a network description (nn/net.h) and its weights as an ONNX model
    (`pixflow export --onnx`, docs/export.md): opset 17, IR version 8, encoded by protobuf-c
    from the onnx.proto Debian's libonnx-dev ships (C generated at build time), no protobuf
    code of our own.

    The model: input "lq" float32 [batch, 3, height, width], RGB in [0, 1] (the uint8 LQ / 255);
    output "out" float32 [batch, 3, height * scale, width * scale], nominally [0, 1], not
    clamped (pf_model_infer's values, NCHW instead of HWC). A video network (a row of
    common/networks.h with video set: BasicVSR) takes [batch, T, 3, height, width] and gives
    [batch, T, 3, ...] (pf_model_infer_clip's values), T the frames its description was
    unrolled over (fixed in the model). batch, height and width are dynamic
    (dim_param "batch", "height", "width"; the output's "out_height", "out_width"); height and
    width must be multiples of pf_net_input_multiple (2 for RRDBNet x2). Initializers are the
    parameter tensors under their state_dict names (BasicSR's, "conv_first.weight"), in the
    description's order, raw little-endian float32; every other constant (mean shift, scales,
    resize factors) is a Constant node. Metadata: pixflow_model, scale, input_multiple.

    Op mapping, one description op to ONNX (PyTorch's semantics, which the executors follow):
      input (mean shift)  Sub rgb_mean, Mul img_range; the output Div img_range, Add rgb_mean
      conv                Conv (k x k, the layer's pads and stride: k / 2 and 1 by default; no B
                          input without a bias) [+ Relu / LeakyRelu(alpha)];
                          residual: Add(in1, Mul(conv, scale))
      FSRCNN's last_part  ConvTranspose(stride scale, pads 4, output_padding scale - 1) on the
                          stored (d, 3, 9, 9) weight (the description runs it as a sub-pixel
                          conv + pixel shuffle; both nodes become this one)
      prelu               PRelu (slope Unsqueeze'd to [C, 1, 1])
      tanh, sigmoid       Tanh, Sigmoid
      add                 Add(in0, Mul(in1, scale))
      gap                 GlobalAveragePool
      mul_ch              Mul(in0, in1) [Mul scale] [Add in2]
      concat              Concat(axis 1)
      shuffle             DepthToSpace(mode CRD) (= torch PixelShuffle)
      unshuffle           SpaceToDepth then Gather on channels (torch PixelUnshuffle's channel
                          order c r^2 + i r + j; SpaceToDepth's is (i r + j) C + c)
      nearest             Resize(nearest, asymmetric, floor)
      bilinear_in         Resize(linear, half_pixel) of lq
      bicubic_in          Resize(cubic, half_pixel, cubic_coeff_a -0.75, exclude_outside 0)
                          of lq
    Video (BasicVSR; sizes computed in the graph from Shape(lq), so height and width stay
    dynamic):
      input               Reshape [batch, T, 3, H, W] -> [batch, 3T, H, W]; the output back
      slice               Slice on channels
      affine              Sub, Mul per-channel constants
      resize              Resize(linear, align_corners or half_pixel) to the tensor's size
                          (sizes from Shape: rounded to a multiple of 32, times mul / div),
                          then Mul per channel, or a flow's x by W_out / W_in, y by H_out / H_in
      avgpool2            AveragePool(2 x 2, stride 2)
      maxpool2            MaxPool(2 x 2, stride 2) (a window with a NaN: NaN here and in
                          PyTorch; onnxruntime's CPU MaxPool keeps it only as the window's last
                          element, docs/export.md)
      warp                GridSample(bilinear, zeros / border, align_corners 1) at
                          (index + flow) * 2 / max(size - 1, 1) - 1 (BasicSR's flow_warp)
      zero                ConstantOfShape
    An op without a case (a new one) is refused with the op and the network named.
*/
#ifndef PF_ONNX_EXPORT_H
#define PF_ONNX_EXPORT_H
#include <stddef.h>

#include "nn/net.h"

#define PF_ONNX_OPSET 17
#define PF_ONNX_IR_VERSION 8

/* Encode net with params (net->n_params floats in net's order) as an ONNX ModelProto into a
   malloc'd buffer *buf of *len bytes (the caller frees it). Returns 0, or -1 with err: an op
   without a mapping ("NAME: op 'OP' (node 12) has no ONNX mapping ..."), out of
   memory. */
int pf_onnx_export(const pf_net *net, const float *params, void **buf, size_t *len, char *err,
                   size_t errlen);
#endif
