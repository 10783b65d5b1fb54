/*  conv_dnnl — a 2-D convolution layer (by default stride 1, zero padding k/2 on each side,
    with bias, as torch.nn.Conv2d(ic, oc, k, padding=k // 2); pf_conv_set_geometry for another
    stride, padding or no bias, as torch.nn.Conv2d(ic, oc, k, stride, pad, bias=False)) on
    oneDNN 2.6, which takes strides and paddings natively: forward (optionally with a fused
    ReLU), backward-data, backward-weights + bias.

    Primitives are built for one shape (N, H, W) by pf_conv_setup and reused until the shape
    changes; the training shape is fixed, so they are built once. Activations are in the nCHWb
    layouts of dnnl_ctx.h: the caller passes the source block (or asks oneDNN to choose) and
    reads back the blocks chosen in src_block / dst_block. Weights stay OIHW (O x I x K x K
    floats) and biases (O) in the model's flat buffers; pf_conv_set_weights reorders them into
    the layouts the primitives prefer (once per step; forward and backward-data share one copy
    wherever oneDNN runs the same kernel on it, always with Winograd) and
    pf_conv_backward_weights writes the gradients back as OIHW and (O) floats.

    Algorithm (the engine's conv_algo, dnnl_ctx.h). Under PF_CONV_AUTO a 3x3 layer with at
    least 16 channels in and out runs oneDNN's Winograd F(4x4, 3x3) kernels (Lavin and Gray,
    "Fast Algorithms for Convolutional Neural Networks", CVPR 2016; oneDNN's
    jit_wino_4x3:avx512_core) where oneDNN has them for all its directions and layouts, about
    twice as fast as direct convolution; every other layer, and every layer on CPUs without
    those kernels (AVX2 and older), is direct. Winograd rounds differently from direct
    convolution: outputs and gradients differ by about 1e-6 relative (docs/nn.md). oneDNN's
    Winograd takes no binary post-op and no LeakyReLU, so its residual layers add the identity
    and its LeakyReLU layers apply the activation apart (in C, after the primitive).

    Precision (dnnl_ctx.h pf_precision): a layer set up for training runs the engine's
    prec_train, one for inference prec_infer. In bf16 (torch.autocast("cpu", bfloat16)) the
    primitives read src / diff_dst and weights as bf16 and write dst, diff_src, diff_weights
    and diff_bias as f32 (bias f32), accumulating in f32: callers still pass floats in the
    same layouts, and the layer rounds src and diff_dst to bf16 with oneDNN reorders (round to
    nearest even; same layout) into the engine's scratch before each primitive, and its OIHW
    weights straight into the primitives' bf16 layouts in pf_conv_set_weights. bf16 layers are
    always direct (oneDNN 2.6 has no bf16 Winograd); post-ops as in fp32.
*/
#ifndef PF_CONV_DNNL_H
#define PF_CONV_DNNL_H
#include <stddef.h>
#include "nn/cpu/dnnl_ctx.h"

typedef struct {
    /* what the layer is */
    char name[96];              /* for messages, e.g. "body.0.conv1" */
    int ic, oc, k;              /* channels in / out, square kernel size (odd at stride 1) */
    int stride, pad;            /* stride and zero padding on each side (1, k / 2) */
    int bias;                   /* 1: with a bias (default); 0: none, no bias gradient */
    int relu;                   /* forward applies ReLU (LeakyReLU when alpha != 0) after the
                                   bias */
    float alpha;                /* negative slope of that ReLU (0: plain ReLU) */
    int add;                    /* forward adds a residual: dst = identity + add_scale * conv */
    float add_scale;            /* the residual branch's scale (EDSR res_scale) */
    int add_fused;              /* the add runs as oneDNN post-ops (else in C after the conv) */
    int act_apart;              /* the (Leaky)ReLU runs in C after the primitive (a Winograd
                                   kernel without that post-op), else as its post-op */
    /* what the primitives are built for */
    int n, h, w;                /* input size; 0 when not built */
    int oh, ow;                 /* output size: (h + 2 pad - k) / stride + 1 (likewise w) */
    int training;               /* forward_training with backward primitives */
    int need_bwd_data;          /* backward-data primitive built */
    int src_block, dst_block;   /* activation layouts in use (1, 8, 16 or the channel count:
                                   nn/cpu/dnnl_ctx.h) */
    int req_src, req_dst;       /* the blocks asked for (-1: any) when they were built */
    dnnl_alg_kind_t algo;       /* dnnl_convolution_direct or dnnl_convolution_winograd */
    pf_precision prec;          /* the engine's prec_train or prec_infer (by `training`) */
    pf_dnnl *ctx;
    dnnl_primitive_desc_t fwd_pd, bwdd_pd, bwdw_pd;
    dnnl_primitive_t fwd, bwdd, bwdw;
    dnnl_primitive_t w_to_fwd, w_to_bwdd, dw_to_user; /* weight reorders; NULL = same layout */
    dnnl_memory_t m_src, m_dst;         /* user handles, set per call */
    dnnl_memory_t m_identity;           /* residual input of a fused add (dst's layout) */
    dnnl_memory_t m_w_user, m_bias;     /* OIHW weights and bias in the flat buffers */
    dnnl_memory_t m_w_fwd, m_w_bwdd;    /* weights in the primitives' layouts (owned) */
    dnnl_memory_t w_for_bwdd;           /* which of m_w_user / m_w_fwd / m_w_bwdd backward-data
                                           reads (not owned) */
    dnnl_memory_t m_dw, m_dw_user;      /* diff weights: primitive layout (owned), OIHW */
    dnnl_memory_t m_dbias;              /* diff bias into the flat gradient buffer */
    /* bf16 only: the f32 -> bf16 conversions of src and of diff_dst (same layout) and their
       bf16 tensors, which live in the engine's scratch (pf_dnnl.bf16_src / bf16_dst) */
    dnnl_primitive_t src_to_lp, dst_to_lp;
    dnnl_memory_t m_src_lp, m_dst_lp;
} pf_conv;

/* Describe the layer; builds nothing. */
void pf_conv_init(pf_conv *c, const char *name, int ic, int oc, int k, int relu);

/* Stride (>= 1), zero padding on each side (0 <= pad < k) and whether the layer has a bias
   (torch.nn.Conv2d's stride, padding, bias); call before pf_conv_setup. The output is
   floor((H + 2 pad - k) / stride) + 1 high (likewise wide). A strided layer never runs
   Winograd (oneDNN's F(4x4, 3x3) kernels are stride 1 only). */
void pf_conv_set_geometry(pf_conv *c, int stride, int pad, int has_bias);

/* Make the fused activation a LeakyReLU with negative slope alpha > 0. Its backward (the
   caller's job) masks the gradient with the output: d *= y > 0 ? 1 : alpha. */
void pf_conv_set_lrelu(pf_conv *c, float alpha);

/* Make the forward a residual add: dst = identity + scale * (conv(src) + bias) (BasicSR's
   ResidualBlockNoBN tail, EDSR's global skip). Call before pf_conv_setup; the output layout
   must then be given (dst_block >= 0). Fused into the convolution as oneDNN post-ops
   (eltwise linear, binary add) when oneDNN has a fast kernel for that, else done in C. */
void pf_conv_set_residual(pf_conv *c, float scale);

/* Build (or keep, when nothing changed) the primitives for an N x ic x H x W input.
   src_block: layout of the input (1, 8, 16) or -1 to let oneDNN choose; dst_block likewise
   for the output. A choice oneDNN makes outside the nCHWb family is replaced by plain NCHW.
   training: build backward-weights, and backward-data when need_bwd_data. Returns 0, or -1
   with err naming the layer. */
int pf_conv_setup(pf_conv *c, pf_dnnl *ctx, int n, int h, int w, int src_block, int dst_block,
                  int training, int need_bwd_data, char *err, size_t errlen);

/* How fast the layer's kernels are, the slowest direction it runs counting: 2 when all are
   JIT kernels (jit, brgconv, Winograd), 1 when one is oneDNN's im2col + gemm path, 0 when one
   is a reference loop; -1 when not set up. */
int pf_conv_rank(const pf_conv *c);

/* The cost layout planning gives a layer of that rank, in units of one activation layout
   conversion: oneDNN's gemm path 4, a reference loop 64, a layer that cannot be built 4096. */
static inline int pf_conv_rank_cost(int rank) {
    return rank >= 2 ? 0 : rank == 1 ? 4 : rank == 0 ? 64 : 4096;
}

/* The rank the layer would have if set up with these arguments (as pf_conv_setup), without
   touching it: descriptors only, no primitives. The blocks it would run on go to *src_out and
   *dst_out (either may be NULL). -1 when oneDNN cannot build it. For layout planning. */
int pf_conv_probe(const pf_conv *c, pf_dnnl *ctx, int n, int h, int w, int src_block,
                  int dst_block, int training, int need_bwd_data, int *src_out, int *dst_out);

/* Reorder OIHW weights (oc x ic x k x k) and bias (oc) into the primitives' layouts. The bias
   pointer is kept and must stay valid until the next call; it is ignored (may be NULL) for a
   layer without a bias. */
int pf_conv_set_weights(pf_conv *c, const float *w_oihw, const float *bias, char *err,
                        size_t errlen);

/* dst (N x oc x oh x ow, dst_block) = conv(src (N x ic x H x W, src_block)) [+ ReLU]. */
int pf_conv_forward(pf_conv *c, const float *src, float *dst, char *err, size_t errlen);

/* Forward of a layer made residual by pf_conv_set_residual: dst = identity + scale * conv(src).
   identity has dst's shape and layout and must not alias dst. */
int pf_conv_forward_residual(pf_conv *c, const float *src, const float *identity, float *dst,
                             char *err, size_t errlen);

/* diff_src = d loss / d src from diff_dst (the gradient at the conv output, after any ReLU
   mask has been applied by the caller). */
int pf_conv_backward_data(pf_conv *c, const float *diff_dst, float *diff_src, char *err,
                          size_t errlen);

/* Weight gradient (written as OIHW into dw) and bias gradient (into db; ignored, may be NULL,
   without a bias), overwriting. */
int pf_conv_backward_weights(pf_conv *c, const float *src, const float *diff_dst, float *dw,
                             float *db, char *err, size_t errlen);

/* oneDNN's implementation name of the forward primitive (e.g. "jit:avx2"), or "". */
const char *pf_conv_impl(const pf_conv *c);

/* The same for backward-data and backward-weights ("" where not built). */
const char *pf_conv_impl_bwd_data(const pf_conv *c);
const char *pf_conv_impl_bwd_weights(const pf_conv *c);

void pf_conv_free(pf_conv *c);
#endif
