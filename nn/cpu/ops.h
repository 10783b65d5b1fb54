/*  ops — the CPU executor's own kernels (the counterpart of nn/cuda/ops.h): the forward and
    backward of every graph node that is not a convolution (nn/cpu/conv_dnnl.h) or one of the
    shared layer kernels (nn/layers.h: pixel shuffle, image conversion; nn/video_layers.h:
    slice, affine, resize, average pooling's forward, warp), in plain C with OpenMP.
    nn/cpu/graph_cpu.c's forward_node and backward_node dispatch to them; what a node's
    backward does around them (which input gets a gradient, the gradient pool, passing a
    gradient on unchanged) stays there.

    Conventions (all functions):
    - Activations are N x C x H x W floats in the blocked layouts of nn/cpu/dnnl_ctx.h (block b
      of 1, 8, 16 or C; index with pf_blk_off), padding channels zero; `b` is the output's
      block (forward) or the output gradient's (backward), other layouts are named per operand.
      The kernels read and write real channels only.
    - `acc` (backward): add to dx instead of overwriting it (a tensor read by several nodes
      sums their contributions, the first one writes).
    - Loops run `omp parallel for schedule(static)`; reductions are summed per (sample,
      channel block) and then in a fixed order, so no result depends on the thread count.
    - The CUDA kernels of nn/cuda/ops.cu compute the same values in the same order.
*/
#ifndef PF_CPU_OPS_H
#define PF_CPU_OPS_H
#include <stddef.h>
#include <stdint.h>

#include "nn/layers.h" /* pf_lq */
#include "nn/net.h"   /* PF_BN_EPS, PF_BN_MOMENTUM */

/* dst = (acc ? dst : 0) + s * src over count floats (one layout). */
void pf_cpu_axpy(float *dst, const float *src, float s, size_t count, int acc);

/* Like pf_cpu_axpy between N x C x H x W tensors in blocks bd (dst) and bs (src). */
void pf_cpu_axpy_layout(float *dst, int bd, const float *src, int bs, float s, int n, int c,
                        int h, int w, int acc);

/* PF_G_INPUT: lq n x T x h x w x 3 NHWC (pf_lq_at: uint8 / 255 or float; T = c / 3 frames;
   frame t's colour k into channel 3 t + k) -> y, (lq - mean) * range (mean NULL: lq), block b. Padding
   channels are written as zeros. Its backward, pf_cpu_input_backward, only when a caller asks
   for the input's gradient (nn/graph.h pf_graph_backward_from). */
void pf_cpu_input_forward(float *y, pf_lq lq, int n, int c, int h, int w,
                          const float *mean, float range, int b);
/* PF_G_INPUT's backward: dx (lq's shape and order above, float) = [dx +] f * dy (N x c x h x
   w, block b), f = d y / d lq: the node's range where it subtracts a mean, else 1. */
void pf_cpu_input_backward(float *dx, const float *dy, int n, int c, int h, int w, float f,
                           int b, int acc);

/* PF_G_BILINEAR_IN: lq n x (H / r) x (W / r) x 3 (pf_lq_at) -> y n x 3 x H x W (block b),
   ATen's upsample_bilinear2d (align_corners=False, scale given) of lq. No backward. */
void pf_cpu_bilinear_in_forward(float *y, pf_lq lq, int n, int H, int W, int r, int b);

/* PF_G_PRELU (torch.nn.PReLU(C)): y = x > 0 ? x : alpha[c] x, hw pixels. */
void pf_cpu_prelu_forward(float *y, const float *x, const float *alpha, int n, int c, size_t hw,
                          int b);
/* Its backward: dx (NULL: none wanted) = [dx +] (x > 0 ? dy : alpha[c] dy), dalpha[c] (NULL:
   none wanted) = sum over x <= 0 of dy x (overwritten). 0, or -1 out of memory (the partial
   sums). */
int pf_cpu_prelu_backward(float *dx, float *dalpha, const float *dy, const float *x,
                          const float *alpha, int n, int c, size_t hw, int b, int acc);

/* PF_G_TANH, PF_G_SIGMOID: y = tanh(x), y = 1 / (1 + exp(-x)). */
void pf_cpu_tanh_forward(float *y, const float *x, int n, int c, size_t hw, int b);
void pf_cpu_sigmoid_forward(float *y, const float *x, int n, int c, size_t hw, int b);
/* Their backward from the forward's output y: dx = [dx +] dy (1 - y^2) (is_tanh) or
   dy y (1 - y). */
void pf_cpu_tanh_sigmoid_backward(float *dx, const float *dy, const float *y, int n, int c,
                                  size_t hw, int b, int is_tanh, int acc);

/* PF_G_ADD: y = x + s * z, y and x in block b (y may equal x), z in block bz; numel: y's
   floats. Its backward passes dy to x unchanged and pf_cpu_axpy_layout(dz, .., dy, b, s, ..)
   to z. */
void pf_cpu_add_forward(float *y, const float *x, const float *z, int bz, float s, int n, int c,
                        int h, int w, int b, size_t numel);

/* PF_G_GAP: y (n x c x 1 x 1, block b) = mean of x (block b) over its hw pixels. */
void pf_cpu_gap_forward(float *y, const float *x, int n, int c, size_t hw, int b);
/* dx = [dx +] dy / hw, broadcast over the hw pixels. */
void pf_cpu_gap_backward(float *dx, const float *dy, int n, int c, size_t hw, int b, int acc);

/* PF_G_MUL_CH (channel attention): y = [res +] sc * x * s[n][c], x, y, res: hw pixels in
   block b; s: n x c x 1 x 1 with cs floats per sample (pf_blk_c of its block); res may be
   NULL. */
void pf_cpu_mul_ch_forward(float *y, const float *x, const float *res, const float *s, size_t cs,
                           float sc, int n, int c, size_t hw, int b);
/* Its backward to x: dx = [dx +] sc * dy * s[n][c]. */
void pf_cpu_mul_ch_backward_x(float *dx, const float *dy, const float *s, size_t cs, float sc,
                              int n, int c, size_t hw, int b, int acc);
/* Its backward to s: ds[n][c] = [ds +] sc * sum over pixels of dy * x (double sums). */
void pf_cpu_mul_ch_backward_s(float *ds, const float *dy, const float *x, size_t cs, float sc,
                              int n, int c, size_t hw, int b, int acc);

/* PF_G_CONCAT's forward and backward, PF_G_SLICE's too: channels c_off .. c_off + ci of `big`
   (C channels, block bb, big_numel floats, n x C x h x w) against `part` (ci channels, block
   pb). forward copies part into big's slice (a concatenation's forward, a slice's backward);
   otherwise big's slice goes into part (a concatenation's backward, a slice's forward); with
   acc either adds instead. */
void pf_cpu_concat_part(float *big, int C, int bb, size_t big_numel, float *part, int ci, int pb,
                        int c_off, int n, int h, int w, int forward, int acc);

/* PF_G_NEAREST: y (H x W = h r x w r, block b) = x (h x w, block b) repeated r x r. */
void pf_cpu_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int H, int W,
                            int r, int b);
/* dx (h x w) = [dx +] the sum of dy (H x W = h r x w r) over each r x r window; block b on
   both. */
void pf_cpu_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int H,
                             int W, int r, int b, int acc);

/* PF_G_AVGPOOL2's backward (its forward is pf_avgpool2_forward, nn/video_layers.h): every
   pixel of dx (h x w, block bx) gets [dx +] a quarter of its window's dy (oh x ow = h / 2 x
   w / 2, block b). */
void pf_cpu_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int oh,
                              int ow, int b, int bx, int acc);

/* PF_G_MAXPOOL2: y (h / 2 x w / 2, block b) = the max of each 2 x 2 window of x (h x w, even,
   block bx), F.max_pool2d(x, 2, 2). Backward: each window's gradient dy goes to its argmax,
   the first maximum in row-major window order (PyTorch's; a NaN counts as the maximum), the
   other three pixels get 0: dx = [dx +] that. */
void pf_cpu_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w, int b,
                             int bx);
void pf_cpu_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int b, int bx, int acc);

/* PF_G_RELU: y = x > 0 ? x : alpha x (alpha >= 0; 0: nn.ReLU, else nn.LeakyReLU(alpha)), any
   layout (block b, real channels only). Backward from the forward's output y, as torch's
   threshold_backward: dx = [dx +] (y > 0 ? dy : alpha dy). */
void pf_cpu_relu_forward(float *y, const float *x, float alpha, int n, int c, size_t hw, int b);
void pf_cpu_relu_backward(float *dx, const float *dy, const float *y, float alpha, int n, int c,
                          size_t hw, int b, int acc);

/* PF_G_BATCHNORM (nn/cpu/batchnorm.c: torch.nn.BatchNorm2d, formulas and source there): x
   (block bx) -> y (block b), N x C x (hw pixels), weight and bias C floats, running (2 C:
   running_mean, running_var) updated by the training forward with momentum PF_BN_MOMENTUM
   and the unbiased batch variance; save (2 C doubles) gets the batch mean and 1 / sqrt(var +
   eps) for backward. The training forward returns -1 (nothing written) when N H W < 2 (no
   variance; torch refuses it too), else 0. The eval forward normalises with running. Backward
   (of a training forward, from its x and save; dy block b, dx block bx): dweight, dbias (C
   floats, overwritten; NULL: not wanted) and dx = [dx +] the gradient through the batch
   statistics (NULL: not wanted). */
int pf_cpu_batchnorm_train_forward(float *y, const float *x, const float *weight,
                                   const float *bias, float *running, double *save, int n,
                                   int c, size_t hw, int b, int bx);
void pf_cpu_batchnorm_eval_forward(float *y, const float *x, const float *weight,
                                   const float *bias, const float *running, int n, int c,
                                   size_t hw, int b, int bx);
void pf_cpu_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, size_t hw, int b, int bx, int acc);

/* EDVR's TSA-fusion ops (BasicSR edvr_arch.py TSAFusion), any layout: every tensor indexed
   with pf_blk_off in its own block (b the output's or its gradient's, b0 / b1 / br the
   inputs'), real channels only; the backwards overwrite, or add when acc. Planes run in
   parallel, each in a fixed order: same bits every run.
   PF_G_MUL: y (n x c x h x w) = [r +] sc * x0 * x1, x1 of c1 = c channels or c1 = 1
   (broadcast over x0's channels). Backward: dx0 = [dx0 +] sc * dy * x1; dx1 = [dx1 +] sc *
   dy * x0, summed over the c channels in order (in double) when c1 = 1; either NULL: not
   wanted (r's gradient is dy: the executor passes it on). */
void pf_cpu_mul_forward(float *y, const float *x0, const float *x1, const float *r, float sc,
                        int n, int c, int c1, int h, int w, int b, int b0, int b1, int br);
void pf_cpu_mul_backward(float *dx0, float *dx1, const float *dy, const float *x0,
                         const float *x1, float sc, int n, int c, int c1, int h, int w, int b,
                         int b0, int b1, int acc0, int acc1);
/* PF_G_CHSUM: y (n x 1 x h x w, block b) = the sum of x (c channels, block bx) over its
   channels, in channel order in double (torch.sum(x, 1, keepdim=True)). Backward: dx = [dx
   +] dy on every channel. */
void pf_cpu_chsum_forward(float *y, const float *x, int n, int c, int h, int w, int b, int bx);
void pf_cpu_chsum_backward(float *dx, const float *dy, int n, int c, int h, int w, int b,
                           int bx, int acc);
/* PF_G_MAXPOOL3 (max 1) / PF_G_AVGPOOL3 (max 0): y (h / 2 x w / 2, block b) from x (h x w,
   both even, block bx), window rows 2 Y - 1 .. 2 Y + 1 (likewise columns), the pixels outside
   x skipped: F.max_pool2d(x, 3, 2, 1) (the first maximum in row-major window order, a NaN
   counting as the maximum, as pf_cpu_maxpool2_forward) / F.avg_pool2d(x, 3, 2, 1) (the sum
   / 9, count_include_pad). Backward: each window's dy to its argmax / dy / 9 to each of its
   pixels, dx = [dx +] the sum over the windows (up to 4) holding a pixel, added in window
   order; the max pooling's backward reads x. */
void pf_cpu_pool3_forward(float *y, const float *x, int max, int n, int c, int h, int w, int b,
                          int bx);
void pf_cpu_pool3_backward(float *dx, const float *dy, const float *x, int max, int n, int c,
                           int h, int w, int b, int bx, int acc);

/* A convolution's fused (Leaky)ReLU backward, in place over count floats: dy *= (y > 0 ? 1 :
   alpha) with y the activation's output (alpha >= 0, so its sign is the input's). */
void pf_cpu_act_mask_backward(float *dy, const float *y, float alpha, size_t count);
#endif
