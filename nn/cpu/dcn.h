/*  dcn — the CPU layer of PF_G_DCN (nn/net.h): modulated deformable convolution, DCNv2 (Zhu,
    Hu, Lin, Dai, "Deformable ConvNets v2: More Deformable, Better Results", CVPR 2019), with
    the semantics of torchvision.ops.deform_conv2d(input, offset, weight, bias, stride, padding,
    dilation, mask) (torchvision 0.14; MMCV's / BasicSR's ModulatedDeformConv2d compute the
    same thing from the mask they have already passed through a sigmoid):

      out[n, o, y, x] = bias[o] + sum over c in o's group, taps (i, j) of
          weight[o, c', i, j] * mask[n, d kk + t, y, x] * X_c(py, px)
      py = y stride - pad + i dil + offset[n, 2 (d kk + t), y, x]
      px = x stride - pad + j dil + offset[n, 2 (d kk + t) + 1, y, x]

    t = i k + j, kk = k * k, c' = c mod (C_in / groups), d = c / (C_in / deform_groups) the
    channel's deform group: the offset holds (dy, dx) per tap and deform group, in that order.
    X_c(py, px) is torchvision's bilinear sample: 0 when py <= -1, py >= H, px <= -1 or px >= W;
    otherwise the four neighbours floor(p), floor(p) + 1 with bilinear weights, each outside
    the image counting as 0. Its derivative in py (px) is the one of that bilinear form in the
    cell floor(p), neighbours outside the image 0 (torchvision's get_coordinate_weight): 0 for
    py < -1 or py >= H, but at py = -1 exactly the cell [-1, 0]'s slope (the value there is 0,
    the derivative is not; likewise px = -1).

    Shapes (N x C x H x W, every tensor in any nCHWb layout of nn/cpu/dnnl_ctx.h, given by its
    block): x N x C_in x H x W; offset N x 2 deform_groups kk x H_out x W_out; mask N x
    deform_groups kk x H_out x W_out; weight C_out x C_in / groups x k x k (OIHW, the flat
    buffer's); bias C_out; out N x C_out x H_out x W_out, H_out = (H + 2 pad - dil (k - 1) - 1)
    / stride + 1 (likewise W).

    Sampling ("columns", C_in kk rows of N H_out W_out samples, torchvision's im2col order) and
    its adjoint are C loops with OpenMP, each output element written by one thread in a fixed
    order (so they do not depend on the thread count); the contraction with the weights, and
    both of its backward products, is oneDNN's matmul with the groups as its batch dimension
    (not promised thread-count independent by oneDNN; measured bit-identical at 1 and 2).
*/
#ifndef PF_CPU_DCN_H
#define PF_CPU_DCN_H
#include <stddef.h>
#include <dnnl.h>

#include "nn/cpu/dnnl_ctx.h"

typedef struct {
    int n, cin, h, w;           /* input */
    int cout, k;                /* output channels, kernel k x k */
    int stride, pad, dil;       /* >= 1, >= 0, >= 1 */
    int groups, dg;             /* groups (divides cin and cout), deform_groups (divides cin) */
    int ho, wo;                 /* output size (pf_dcn_out_size) */
} pf_dcn_shape;

typedef struct {
    char name[96];              /* the layer's state_dict prefix, for errors */
    pf_dcn_shape s;
    int training;               /* backward primitives made */
    pf_dnnl *ctx;
    dnnl_primitive_t fwd, bwdw, bwdd;
    dnnl_memory_desc_t md_w, md_col, md_y, md_colt, md_wt;
    float *col;                 /* C_in kk x N H_out W_out samples (kept for backward) */
    float *y;                   /* C_out x N H_out W_out: the product, then dy in backward */
    float *dcol;                /* training: the columns' gradient */
} pf_dcn;

/* H_out for an input of h (torch.nn.Conv2d's rule). */
int pf_dcn_out_size(int h, int k, int stride, int pad, int dil);

/* Make l's primitives and buffers for shape s (ho, wo filled in here). 0, or -1 with err
   naming the layer (l is then freed). */
int pf_dcn_setup(pf_dcn *l, pf_dnnl *ctx, const char *name, pf_dcn_shape s, int training,
                 char *err, size_t errlen);
void pf_dcn_free(pf_dcn *l);

/* out (block bo) = the formula above; x, off, mask in blocks bx, boff, bm; bias NULL: none. 0,
   or -1 with err. */
int pf_dcn_forward(pf_dcn *l, const float *weight, const float *bias, const float *x, int bx,
                   const float *off, int boff, const float *mask, int bm, float *out, int bo,
                   char *err, size_t errlen);

/* From dy (block by) and the forward's x, off, mask (same pointers and blocks): dweight and
   dbias overwritten (NULL: not wanted), and dx, doff, dmask added to (NULL: not wanted; the
   caller zeroes a buffer it wants written). The columns of the last pf_dcn_forward are used.
   0, or -1 with err. */
int pf_dcn_backward(pf_dcn *l, const float *weight, float *dweight, float *dbias,
                    const float *dy, int by, const float *x, int bx, const float *off, int boff,
                    const float *mask, int bm, float *dx, float *doff, float *dmask, char *err,
                    size_t errlen);
#endif
