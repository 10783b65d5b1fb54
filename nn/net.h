/*  net — a network as plain data: tensors, nodes, convolution layers and the parameter table,
    built once per model.type by one builder function (nn/zoo.c) from the config. It knows
    nothing of oneDNN or CUDA; the two executors run it: nn/cpu/graph_cpu.c on the CPU (oneDNN
    convolutions, C kernels for the rest), nn/cuda/graph_cuda.c on a CUDA device (cuDNN, own
    kernels). What both executors need to know about the node list beyond the ops themselves
    — which tensors need a gradient, each tensor's last forward reader, which activations
    backward reads, how buffers are shared by liveness — is computed here, once.

    Tensors are N x C x H x W; a tensor's H x W is the LQ size times mul / div (1 x 1 for pooled
    tensors), or, for a tensor with round > 0, the LQ size rounded up to a multiple of round,
    times mul / div (SPyNet runs at ceil(H / 32) * 32; a PF_G_RESIZE node maps the LQ-size
    tensor to the rounded one and back). Each node reads up to PF_G_MAX_IN tensors and writes one new tensor (the node
    list is in execution order, a tensor's producer comes before its readers).

    Parameters: one flat float buffer in the order of the tensor table, with the reference
    implementations' state_dict names (docs/models.md). A convolution layer is two tensors,
    `name.weight` (OIHW, oc x ic x k x k) then `name.bias` (oc), stride 1, zero padding k / 2
    by default; a strided layer (pf_net_add_conv_strided: torch.nn.Conv2d(ic, oc, k, stride,
    pad, bias=...), the GAN discriminators' downsampling) may have other padding and no bias
    (then `name.weight` alone: the reference's state_dict has no `name.bias`).
    FSRCNN's ConvTranspose2d is stored as the reference stores it ((d, 3, 9, 9) + (3)) and run
    as a stride-1 layer on re-indexed weights (pf_net_sub_weights).
*/
#ifndef PF_NET_H
#define PF_NET_H
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "nn/param_info.h"

#define PF_G_MAX_IN 64          /* a video network concatenates its T frames' outputs */
#define PF_G_MAX_CH 4           /* channels of a PF_G_AFFINE / PF_G_RESIZE constant */

typedef enum {
    PF_G_INPUT,         /* out = (lq / 255 - mean) * range  (the graph's one input) */
    PF_G_CONV,          /* out = conv(in0) [ReLU / LeakyReLU] or in1 + scale * conv(in0) */
    PF_G_PRELU,         /* out = in0 > 0 ? in0 : a[c] * in0 (torch.nn.PReLU(C)) */
    PF_G_TANH,          /* out = tanh(in0) */
    PF_G_SIGMOID,       /* out = 1 / (1 + exp(-in0)) */
    PF_G_ADD,           /* out = in0 + scale * in1 */
    PF_G_GAP,           /* out (C x 1 x 1) = mean of in0 over H x W (AdaptiveAvgPool2d(1)) */
    PF_G_MUL_CH,        /* out = [in2 +] scale * in0 * in1[n][c]; in1 is C x 1 x 1 */
    PF_G_CONCAT,        /* out = torch.cat(in, 1) */
    PF_G_SHUFFLE,       /* PixelShuffle(r) */
    PF_G_UNSHUFFLE,     /* PixelUnshuffle(r) */
    PF_G_NEAREST,       /* F.interpolate(scale_factor=r, mode='nearest') */
    PF_G_BILINEAR_IN,   /* F.interpolate(lq / 255, scale_factor=r, mode='bilinear',
                           align_corners=False); no gradient */
    PF_G_BICUBIC_IN,    /* the same with mode='bicubic' (SRCNN's upsampler; nn/bicubic.c);
                           no gradient */
    /* video (BasicVSR / SPyNet, BasicSR basicvsr_arch.py and spynet_arch.py; kernels in
       nn/video_layers.h) */
    PF_G_SLICE,         /* out = in0[:, c0:c0 + out_c] */
    PF_G_AFFINE,        /* out[c] = (in0[c] - sub[c]) * mul[c] (SPyNet's (x - mean) / std) */
    PF_G_RESIZE,        /* F.interpolate(in0, size=out's size, mode='bilinear',
                           align_corners=ac), then per channel times mul[c] (use_mul 1) or,
                           for a flow (2 channels, use_mul 2), channel 0 times W_out / W_in
                           and channel 1 times H_out / H_in */
    PF_G_AVGPOOL2,      /* F.avg_pool2d(in0, 2, 2) (out: div * 2) */
    PF_G_WARP,          /* flow_warp(in0, in1): in0 sampled at each pixel plus the flow in1
                           (2 channels: x, y in pixels), grid_sample bilinear,
                           align_corners=True, padding `pad` (pf_pad_mode) */
    PF_G_ZERO,          /* out = 0 (no input; an initial flow or hidden state) */
    PF_G_MAXPOOL2,      /* F.max_pool2d(in0, 2, 2) (nn.MaxPool2d(2), VGG's; out: div * 2);
                           backward: each window's gradient to its first maximum in row-major
                           order (PyTorch's), a NaN counting as the maximum */
    PF_G_RELU,          /* out = in0 > 0 ? in0 : alpha * in0: nn.ReLU (alpha 0) or
                           nn.LeakyReLU(alpha) (alpha > 0) as a node of its own, where the
                           value before it is read too (VGG's pre-ReLU features; a conv's fused
                           activation overwrites it); backward from the output, as torch's
                           threshold_backward: dx = out > 0 ? dy : alpha * dy */
    PF_G_BATCHNORM,     /* nn.BatchNorm2d(C) (eps 1e-5, momentum 0.1, affine): training plans
                           normalise by the batch's per-channel mean and biased variance over
                           N x H x W, out = (in0 - mean) / sqrt(var + eps) * weight[c] +
                           bias[c], and update the running statistics (running = (1 - 0.1)
                           running + 0.1 batch, the variance unbiased: var * M / (M - 1), M =
                           N H W; num_batches_tracked + 1); inference plans use running_mean /
                           running_var instead (torch's eval()). Parameters weight (param),
                           bias (param + 1); running statistics at stat in pf_gctx.running */
    PF_G_LINEAR,        /* nn.Linear(in, out) on in0 flattened as torch's x.view(N, -1) (C, H,
                           W order): out (out x 1 x 1) = in0 . weight^T + bias, weight [out,
                           in] (param), bias [out] (param + 1); in = C H W of in0 */
    PF_G_DCN,           /* modulated deformable convolution (DCNv2; torchvision.ops.
                           deform_conv2d with its mask; MMCV's ModulatedDeformConv2d): in0 x
                           (C_in), in1 offset (2 dg k k channels: (dy, dx) per deform group
                           and tap), in2 mask (dg k k channels, already in [0, 1]), all three at
                           the output's size but x; weight [C_out, C_in / groups, k, k]
                           (param), bias [C_out] (param + 1) when dcn.has_bias. Formula,
                           boundary rule and layouts: nn/cpu/dcn.h */
    /* EDVR's TSA fusion (BasicSR edvr_arch.py TSAFusion) */
    PF_G_MUL,           /* out = [in2 +] scale * in0 * in1, all of one size; in1 has in0's
                           channels or 1 channel, broadcast over in0's (aligned_feat *
                           corr_prob) */
    PF_G_CHSUM,         /* out (1 channel) = torch.sum(in0, 1, keepdim=True) */
    PF_G_MAXPOOL3,      /* F.max_pool2d(in0, 3, stride=2, padding=1) (out: div * 2, even
                           sizes); backward as PF_G_MAXPOOL2's (first maximum in row-major
                           window order, a NaN counting as the maximum; padding never wins) */
    PF_G_AVGPOOL3,      /* F.avg_pool2d(in0, 3, stride=2, padding=1) (count_include_pad: the
                           sum of the window's pixels inside the image / 9; out: div * 2, even
                           sizes) */
} pf_gop;

/* PF_G_BATCHNORM's constants, torch.nn.BatchNorm2d's defaults (both executors). */
#define PF_BN_EPS 1e-5
#define PF_BN_MOMENTUM 0.1

typedef struct {
    int c;              /* channels */
    int mul, div;       /* H = H_lq * mul / div (likewise W) */
    int one;            /* pooled: 1 x 1 */
    int round;          /* > 0: H = ceil(H_lq / round) * round * mul / div (likewise W) */
} pf_gtensor;

typedef struct {
    pf_gop op;
    int in[PF_G_MAX_IN], n_in;  /* input tensor ids */
    int out;                    /* output tensor id */
    int conv;                   /* CONV: layer index in net->conv */
    int param;                  /* CONV: tensor index of its weight (bias: param + 1 when the
                                   layer has_bias); PRELU: of its weight */
    float scale;                /* ADD, MUL_CH, CONV with residual */
    int r;                      /* SHUFFLE, UNSHUFFLE, NEAREST, BILINEAR_IN, BICUBIC_IN
                                   factor */
    int c0;                     /* SLICE: first channel taken */
    int ac;                     /* RESIZE: align_corners */
    int use_mul;                /* RESIZE: 0 none, 1 times mul[c], 2 the flow's size ratio */
    int pad;                    /* WARP: pf_pad_mode (PF_PAD_ZEROS, PF_PAD_BORDER) */
    float sub[PF_G_MAX_CH];     /* AFFINE: subtracted per channel (0 by default) */
    float mul[PF_G_MAX_CH];     /* AFFINE, RESIZE with use_mul 1: factor per channel (1) */
    float alpha;                /* RELU: negative slope, >= 0 (0 by default: ReLU) */
    int bn;                     /* BATCHNORM: its index among the net's BatchNorm2d layers
                                   (num_batches_tracked), 0..n_bn-1 */
    size_t stat;                /* BATCHNORM: offset of its running_mean (C floats) in the
                                   running statistics, running_var at stat + C */
    struct {
        int k, stride, pad, dil;    /* kernel k x k, torch.nn.Conv2d's stride, padding,
                                       dilation */
        int groups, dg, has_bias;   /* groups, deform_groups, a bias tensor */
    } dcn;                      /* DCN */
} pf_gnode;

/* A convolution layer: ic -> oc channels, k x k, stride `stride`, zero padding `pad` on each
   side, with its bias when has_bias (the defaults, pf_net_add_conv / pf_net_add_layer: stride
   1, padding k / 2, bias). Output size (torch.nn.Conv2d's): H_out = floor((H + 2 pad - k) /
   stride) + 1 (likewise W), which the description requires to be exactly H / stride with H a
   multiple of stride (pf_net_check_node): the output tensor's div is its input's times
   stride. k 3 pad 1 and k 4 pad 1 at stride 2 give H / 2 for every even H. */
typedef struct {
    char name[96];              /* state_dict prefix, e.g. "body.0.conv1" */
    int ic, oc, k;
    int stride;                 /* 1 (default) or more: output H / stride */
    int pad;                    /* zero padding on each side (default k / 2) */
    int has_bias;               /* 1 (default): tensor weight + 1 is its bias; 0: no bias */
    int act;                    /* 1: ReLU (alpha 0) or LeakyReLU(alpha) on its output */
    float alpha;
    int weight;                 /* tensor index of its weight (bias: weight + 1 when has_bias) */
    int sn;                     /* 1: spectral-normalised (torch.nn.utils.spectral_norm): the
                                   weight tensor is `name.weight_orig`, and the executor runs
                                   with weight_orig / sigma, which the caller writes into the
                                   parameters it hands the executor (nn/discriminator.h) */
} pf_nconv;

/* A buffer: a constant tensor of the reference's state_dict that is not a parameter (PyTorch's
   register_buffer; SPyNet's `mean` and `std`). Not trained, not in the flat buffer: the
   checkpoint writer puts it into the weights file at its state_dict place (before parameter
   tensor `before`), and loading accepts it only with the same shape and bit-identical values
   (pf_model_check_weights), so weights move both ways with load_state_dict(strict=True). */
#define PF_NET_BUFFER_MAX 16    /* elements of a buffer */
typedef struct pf_net_buffer {
    char name[96];              /* state_dict name, e.g. "spynet.mean" */
    int ndim;
    int64_t shape[4];
    size_t numel;               /* 1..PF_NET_BUFFER_MAX */
    float value[PF_NET_BUFFER_MAX];
    int before;                 /* state_dict order: written before parameter tensor `before`
                                   (n_tensors: after the last) */
} pf_net_buffer;

/* How pf_net_init_params draws one tensor (the reference's scheme). */
typedef enum {
    PF_INIT_UNIFORM,            /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for
                                   conv weights (kaiming_uniform a = sqrt(5)) and biases */
    PF_INIT_NORMAL,             /* N(0, 2 / fan_in) * scale: kaiming_normal fan-in, times
                                   BasicSR's default_init_weights scale */
    PF_INIT_CONST,              /* every element = scale (PReLU 0.25, zero biases) */
} pf_init_kind;

typedef struct {
    pf_init_kind kind;
    double fan_in, scale;
} pf_param_init;

/* Taps: intermediate tensors a caller reads after forward and gives a gradient before
   backward (the pre-ReLU VGG features of a perceptual loss), beside the output. */
#define PF_NET_MAX_TAPS 16

typedef struct pf_net {
    char type[32];              /* model.type */
    int scale;
    pf_gtensor *t;
    int n_t, cap_t;
    pf_gnode *node;
    int n_node, cap_node;
    int input, output;          /* tensor ids */
    int use_mean;               /* input / output mean shift (EDSR, RCAN); else mean unused */
    float mean[3], range;       /* image = out / range + mean */
    pf_nconv *conv;
    int n_convs, cap_convs;
    pf_param_info *tensors;     /* the parameter table, state_dict order */
    pf_param_init *init;        /* per tensor */
    int n_tensors, cap_tensors;
    size_t n_params;            /* floats in the flat buffer */
    pf_net_buffer *buffers;     /* the reference's buffers, state_dict order */
    int n_buffers, cap_buffers;
    /* FSRCNN: the layer computing its ConvTranspose2d in sub-pixel form (-1: none), its
       stride and tap radius (kernel 2 sub_r + 1), and for each element of the transposed
       weight (d x 3 x 9 x 9) its index in the sub-pixel weights (nn/zoo.c) */
    int sub_conv, sub_stride, sub_r;
    int *sub_idx;
    int oom;                    /* an append failed; the builder reports it */
    int taps[PF_NET_MAX_TAPS];  /* tensors kept readable after forward, whose gradient the
                                   caller may give backward (pf_net_add_tap) */
    int n_taps;
    int n_bn;                   /* BatchNorm2d layers (PF_G_BATCHNORM nodes) */
    size_t n_running;           /* floats of their running statistics: running_mean then
                                   running_var of each, 2 C floats a layer, in node order */
} pf_net;

/* BasicVSR x4 (nn/zoo.c) unrolled over `frames` frames (1..64): input 3 frames channels in
   [0, 1] (lq / 255), output 3 frames channels at 4x; BasicSR's parameter names. Returns 0, or
   -1 with err. */
int pf_net_build_basicvsr(pf_net *net, int num_feat, int num_block, int frames, char *err,
                          size_t errlen);

/* BasicVSR++ x4 (nn/zoo.c; is_low_res_input) unrolled over `frames` frames (1..64) with
   mid_channels (a multiple of 8), num_blocks (0..31) per propagation branch and
   max_residue_magnitude: input 3 frames channels in [0, 1] (lq / 255), output 3 frames
   channels at 4x; BasicSR's parameter names (docs/models.md). Returns 0, or -1 with err. */
int pf_net_build_basicvsrpp(pf_net *net, int mid_channels, int num_blocks,
                            float max_residue_magnitude, int frames, char *err, size_t errlen);

/* EDVR (nn/edvr.c; Wang et al., "EDVR: Video Restoration with Enhanced Deformable
   Convolutional Networks", CVPRW 2019, as BasicSR's edvr_arch.py): a sliding-window network.
   Input: num_frame (odd, 1..63) LQ frames as 3 num_frame channels in [0, 1] (lq / 255; frame
   t = channels 3t..3t+2), H and W multiples of 4 (its pyramid has levels at 1/2 and 1/4; 16
   with hr_in); output: ONE frame, 3 channels, the restored frame center_frame_idx
   (0..num_frame-1): at 4x, bilinear x4 of it (align_corners False) plus the network's
   residual; with hr_in, at the input's size (net->scale 1), the frame itself plus the
   residual. num_feat a multiple of deformable_groups; num_extract_block,
   num_reconstruct_block >= 0; with_tsa 1: TSA fusion, 0: a 1x1 conv `fusion`;
   with_predeblur 1: BasicSR's PredeblurModule and conv_1x1 in place of conv_first; hr_in 1
   (needs with_predeblur): the predeblur's two stride-2 convs bring the input down by 4 first.
   BasicSR's parameter names, state_dict order and initialisation. Returns 0, or -1 with err
   naming the value. */
int pf_net_build_edvr(pf_net *net, int num_feat, int num_frame, int deformable_groups,
                      int num_extract_block, int num_reconstruct_block, int center_frame_idx,
                      int with_tsa, int with_predeblur, int hr_in, char *err,
                      size_t errlen);

/* A video network of cfg (BasicVSR, BasicVSRPlusPlus: its keys) unrolled over `frames`
   frames, or EDVR (its window is model.num_frame frames: `frames` must be that); 0, or -1 with
   err (another type, a key it does not support). */
int pf_net_build_video(pf_net *net, const pf_config *cfg, int frames, char *err, size_t errlen);

/* Describe cfg's network (model.type and its hyper-parameters, scale, rgb_mean, img_range) in
   net (nn/zoo.c, one builder per type). Returns 0, or -1 with err naming the type, key or
   value that is not supported; net is then freed. */
int pf_net_build(pf_net *net, const pf_config *cfg, char *err, size_t errlen);
void pf_net_free(pf_net *net);

/* Building blocks for the builders. Each returns the new index, or -1 when out of memory (also
   recorded in net->oom) or when an input is -1 (so builders chain calls and check once). */
void pf_net_init(pf_net *net);
int pf_net_tensor(pf_net *net, int c, int mul, int div, int one);
int pf_net_node(pf_net *net, pf_gop op, const int *in, int n_in, int out_c, int out_mul,
                int out_div, int out_one);
/* A layer with its own tensors name.weight (OIHW) and name.bias, appended to the table. */
int pf_net_add_conv(pf_net *net, const char *name, int ic, int oc, int k, pf_param_init w_init,
                    pf_param_init b_init);
/* A layer with its own tensors name.weight (OIHW) and, when has_bias, name.bias (b_init is
   then unused without one): torch.nn.Conv2d(ic, oc, k, stride, pad, bias=has_bias). stride >=
   1, 0 <= pad < k; the caller makes the output tensor stride times smaller (div * stride). */
int pf_net_add_conv_strided(pf_net *net, const char *name, int ic, int oc, int k, int stride,
                            int pad, int has_bias, pf_param_init w_init, pf_param_init b_init);
/* Conv layer i's bias tensor index, or -1 when it has none. */
int pf_net_conv_bias(const pf_net *net, int i);
/* A layer whose weights are not its own tensors: weight_tensor (its bias weight_tensor + 1).
   FSRCNN's sub-pixel conv; and shared weights: a recurrent network applies one layer's
   tensors at several places, each place a layer of its own (its own primitives and shape)
   naming the same weight_tensor. Backward adds up their weight gradients. Stride 1, padding
   k / 2, bias weight_tensor + 1 (pf_nconv's fields, for the caller to change). */
int pf_net_add_layer(pf_net *net, const char *name, int ic, int oc, int k, int weight_tensor);
/* Tensor t gets round (pf_gtensor.round); returns t (-1 stays -1). */
int pf_net_round(pf_net *net, int t, int round);
/* Make tensor t tap k (k = the returned index, in call order): like the output, its buffer
   stays readable after forward (pf_net_last_use: read at n_node) and a gradient the caller
   gives for it joins backward (nn/graph.h pf_graph_backward_from). A tensor may be a tap once.
   Returns k, or -1 when t is not a tensor (t -1 stays -1), is a tap already or
   PF_NET_MAX_TAPS are taken. */
int pf_net_add_tap(pf_net *net, int t);
/* nn.BatchNorm2d(C) on tensor x (C = x's channels; PF_G_BATCHNORM): appends the parameter
   tensors `name`.weight (C, init 1) and `name`.bias (C, init 0), torch's defaults, and the
   node; its running statistics (running_mean 0, running_var 1 at the start: pf_net_bn_init)
   are the executor's state, not parameters. Returns the output tensor (x's shape), or -1. */
int pf_net_add_batchnorm(pf_net *net, const char *name, int x);
/* nn.Linear(in_features, out_features) on tensor x flattened (PF_G_LINEAR): `name`.weight
   [out, in] and `name`.bias [out], both U(-1/sqrt(in), 1/sqrt(in)) (torch's default,
   kaiming_uniform a = sqrt(5)); in_features must equal x's C H W at the planned size
   (pf_net_check_node). Returns the output tensor (out_features x 1 x 1), or -1. */
int pf_net_add_linear(pf_net *net, const char *name, int x, int in_features,
                      int out_features);
/* Modulated deformable convolution (PF_G_DCN) of x with the offsets `offset` and the mask
   `mask` (tensors of 2 deform_groups k k and deform_groups k k channels at the output's
   size): MMCV's / BasicSR's ModulatedDeformConv2d(ic, oc, k, stride, pad, dilation, groups,
   deform_groups, bias) after its caller's sigmoid of the mask, i.e. torchvision.ops.
   deform_conv2d(x, offset, weight, bias, stride, pad, dilation, mask). Parameters
   `name`.weight [oc, ic / groups, k, k], U(-1/sqrt(ic k k), 1/sqrt(ic k k)), and, when
   has_bias, `name`.bias [oc], 0 (MMCV's init_weights). The output (oc channels) is stride
   times smaller than x (its div times stride). pf_net_check_node refuses, naming the layer:
   deform_groups or groups not dividing ic, groups not dividing oc, x not of ic channels,
   offset or mask of the wrong channel count or size, an output size other than torch's
   (H + 2 pad - dil (k - 1) - 1) / stride + 1 = H / stride. Returns the output tensor, or -1
   (an input -1, k, stride or dilation < 1, pad < 0, out of memory). */
int pf_net_add_dcn(pf_net *net, const char *name, int x, int offset, int mask, int ic, int oc,
                   int k, int stride, int pad, int dilation, int groups, int deform_groups,
                   int has_bias);
/* EDVR's TSA-fusion nodes (BasicSR edvr_arch.py TSAFusion), parameter-free. Each returns its
   output tensor, or -1 (an input -1, out of memory); pf_net_check_node checks the shapes at
   plan time, naming the op.
   pf_net_add_mul: out = [res +] scale * x0 * x1 (PF_G_MUL): x1 of x0's size and channels or
   of one channel (broadcast over x0's: `aligned_feat * corr_prob`), res (-1: none) of the
   output's shape. Out: x0's channels and size.
   pf_net_add_chsum: out (1 channel, x's size) = torch.sum(x, 1, keepdim=True) (PF_G_CHSUM).
   pf_net_add_pool3: F.max_pool2d (max 1, PF_G_MAXPOOL3) or F.avg_pool2d (max 0,
   PF_G_AVGPOOL3, count_include_pad: / 9) of x, kernel 3, stride 2, padding 1: out
   floor((H - 1) / 2) + 1, which the description keeps to even H (out H / 2, its div twice
   x's). */
int pf_net_add_mul(pf_net *net, int x0, int x1, int res, float scale);
int pf_net_add_chsum(pf_net *net, int x);
int pf_net_add_pool3(pf_net *net, int x, int max);
/* The running statistics' start (torch's reset_running_stats): running_mean 0, running_var 1
   for every BatchNorm2d layer into running (net->n_running floats), num_batches_tracked 0
   into tracked (net->n_bn). */
void pf_net_bn_init(const pf_net *net, float *running, int64_t *tracked);
/* A parameter tensor of ndim (1..4) dims. */
int pf_net_add_tensor(pf_net *net, const char *name, int ndim, const int64_t *shape,
                      pf_param_init init);

/* A buffer (pf_net_buffer) of ndim (1..4) dims holding value[0..numel), placed in state_dict
   order before the next parameter tensor added. Returns its index, or -1 (out of memory, or
   more than PF_NET_BUFFER_MAX elements; net->oom set). */
int pf_net_add_buffer(pf_net *net, const char *name, int ndim, const int64_t *shape,
                      const float *value);

/* Fill params (net->n_params floats): tensor i by its pf_param_init from the counter-based
   stream pf_rng_make(seed, i, 0), element j its j-th draw (normal: Box-Muller on pairs), so
   weights depend only on the seed. */
void pf_net_init_params(const pf_net *net, float *params, uint64_t seed);

/* LQ height and width must be multiples of this (a pixel unshuffle divides them). */
int pf_net_input_multiple(const pf_net *net);

/* The per-channel factors a PF_G_RESIZE node multiplies its output by, for an input of
   in_h x in_w resized to out_h x out_w: use_mul 1 its constants (nd->mul), use_mul 2 a flow's
   size ratio (x by out_w / in_w, y by out_h / in_h, into fm[0..1]), else NULL (none). Both
   executors call this, so they scale alike. */
const float *pf_net_resize_mult(const pf_gnode *nd, int in_h, int in_w, int out_h, int out_w,
                                float fm[2]);

/* FSRCNN: floats of the sub-pixel layer's weights + bias (0 without one); those weights from
   the ConvTranspose2d tensors in params; and their gradients sub_dw back into grads. */
size_t pf_net_sub_numel(const pf_net *net);
void pf_net_sub_weights(const pf_net *net, const float *params, float *sub_w);
void pf_net_sub_grads(const pf_net *net, const float *sub_dw, float *grads);

/* ---- what both executors derive from the node list ---------------------------------------
   Per-tensor arrays of net->n_t ints, filled by the caller's request. */

/* need[t] = 1 when a parameter lies upstream of tensor t (backward computes its gradient). */
void pf_net_need_grad(const pf_net *net, int *need);
/* The same when backward also computes d loss / d input: need[t] = 1 when a parameter or a
   PF_G_INPUT node lies upstream of t. */
void pf_net_need_input_grad(const pf_net *net, int *need);
/* When backward computes d loss / d input alone (no parameter gradients, nn/graph.h
   pf_graph_backward_input): need[t] = 1 when a PF_G_INPUT node lies upstream of t. */
void pf_net_need_input_only(const pf_net *net, int *need);
/* last[t] = index of the last node reading t in the forward pass (-1: none; the output and
   the taps: n_node, the loss or the download reads them). training = 1 extends to n_node every tensor
   backward reads (pf_net_backward_reads_in / _out), so its buffer is not shared. */
void pf_net_last_use(const pf_net *net, int training, int *last);
/* Whether node k's backward reads input i (0..n_in-1) / its output: a convolution's input
   (weights gradient) and its output when it has an activation (the mask), PReLU's input,
   tanh's, sigmoid's and ReLU's outputs, both factors of the channel multiply and of PF_G_MUL,
   both inputs of a warp, max pooling's input (its argmax; 2 x 2 and 3 x 3). */
int pf_net_backward_reads_in(const pf_net *net, int k, int i);
int pf_net_backward_reads_out(const pf_net *net, int k);

/* Buffer sharing by liveness (interval colouring in node order): each node's output takes the
   best-fitting free slot (or a new one, grown to fit), then the inputs whose last reader is
   this node are freed. numel[t]: floats of tensor t (the caller's layout); last[t] from
   pf_net_last_use. training = 1: a tensor backward reads takes a new slot of its own, so
   the slots of the others stay whole for backward (pf_net_free_after_forward). Fills slot[t]
   for every node output and *size_out (malloc'd, caller frees) with each slot's size in
   floats. Returns the slot count, or -1 when out of memory. */
int pf_net_assign_slots(const pf_net *net, const size_t *numel, const int *last, int training,
                        int *slot, size_t **size_out);
/* Training: which activation slots hold no tensor backward reads, so backward may use them
   (an upsampling conv's output before its pixel shuffle, for one). slot, last, size, n_slots
   as pf_net_assign_slots used and made; free_size[s] = size[s] for such a slot, 0 for the
   others. Returns how many there are. */
int pf_net_free_after_forward(const pf_net *net, const int *slot, const int *last,
                              const size_t *size, int n_slots, size_t *free_size);
/* Gradient buffers by liveness, in backward (nodes in reverse order): the gradient of t is
   written first by the backward of its last reader that passes one back (need[t]) and read
   last by its producer's backward; gslot[t] = -1 where need[t] is 0 or no node passes t a
   gradient. The graph output's gradient (the loss writes it) is taken first, then the taps'
   (the caller gives them before backward: they live from its start, pf_net_add_tap). Slots
   0..n_fixed-1 are the caller's buffers of fixed_size[s] floats (0: not available), e.g. dead
   activations (pf_net_free_after_forward): taken when one fits, never grown; new slots
   follow. *size_out (malloc'd) gets every slot's size. Returns the slot count (n_fixed
   included), or -1 when out of memory. */
int pf_net_assign_grad_slots(const pf_net *net, const size_t *numel, const int *need,
                             int n_fixed, const size_t *fixed_size, int *gslot,
                             size_t **size_out);

const char *pf_net_op_name(pf_gop op);

/* What a node needs of its tensors' planned sizes (a convolution: output floor((H + 2 pad -
   k) / stride) + 1 = H / stride, H a multiple of its stride, a residual of the output's size;
   the video nodes: a slice inside its input,
   an affine's or resize's constants for its channel count, pooling (average or max, 2 x 2
   or 3 x 3) to half the size, a multiply's factor of its channels or one and residual of its
   shape, a channel sum's one channel, a ReLU's slope >= 0 and output of its input's shape, a warp's
   image, 2-channel flow and output of one size and a known padding): ah x aw its first input,
   fh x fw its second (a warp's flow), oh x ow its output. 0, or -1 with err naming the network,
   the op and the tensor. */
int pf_net_check_node(const pf_net *net, const pf_gnode *nd, int ah, int aw, int fh, int fw,
                      int oh, int ow, char *err, size_t errlen);

/* The size rule both executors plan with: tensor t's height and width for LQ h x w into
   *th, *tw (1 x 1 for a one-pixel tensor; h * mul / div, from h rounded up to a multiple of
   round for a rounded one). 0, or -1 with err when the size is not whole ("input H x W is
   not divisible by DIV"). */
int pf_net_tensor_size(const pf_net *net, int t, int h, int w, int *th, int *tw, char *err,
                       size_t errlen);

/* The description's rules, checked once by both executors where they plan a shape (and the
   shape-free ones by pf_net_build):
   pf_net_check_desc: no convolution both fuses an activation and adds a residual (the
   executors run the activation first and mask backward with the output's sign).
   pf_net_check: that, every tensor's size for LQ h x w (pf_net_tensor_size) into hw[2 t] (H)
   and hw[2 t + 1] (W) (2 net->n_t ints, the caller's), and every node's shape rules
   (pf_net_check_node). 0, or -1 with err ("TYPE: ..."), the first rule broken. */
int pf_net_check_desc(const pf_net *net, char *err, size_t errlen);
int pf_net_check(const pf_net *net, int h, int w, int *hw, char *err, size_t errlen);

/* Frames one input holds: a video network's input is T frames as 3 T channels (frame t's
   colour c is channel 3 t + c); 1 for the image networks. */
int pf_net_frames(const pf_net *net);
/* Frames the output holds (its channels / 3): the input's frames for the recurrent video
   networks (BasicVSR: every frame of the clip), 1 for the image networks and for a
   sliding-window network (EDVR: num_frame frames in, the center frame's SR out). */
int pf_net_out_frames(const pf_net *net);
#endif
