/*  loss — pixel losses of BasicSR (basicsr/losses/basic_loss.py) with reduction 'mean', times
    loss_weight, and their gradients:
      L1Loss           mean |y - g|                 d/dy = sign(y - g) / count (sign(0) = 0)
      MSELoss          mean (y - g)^2               d/dy = 2 (y - g) / count
      CharbonnierLoss  mean sqrt((y - g)^2 + eps)   d/dy = (y - g) / sqrt((y - g)^2 + eps) / count
*/
#ifndef PF_LOSS_H
#define PF_LOSS_H
#include <stddef.h>
#include <stdint.h>

typedef enum { PF_LOSS_L1, PF_LOSS_MSE, PF_LOSS_CHARBONNIER } pf_loss_type;

/* Parse "L1Loss" | "MSELoss" | "CharbonnierLoss". Returns 0, or -1 when unknown. */
int pf_loss_parse(const char *name, pf_loss_type *type);

typedef struct {
    pf_loss_type type;
    float weight;       /* loss_weight */
    float eps;          /* Charbonnier eps (BasicSR default 1e-12) */
} pf_loss;

/* Loss of the network output against the ground truth, and the gradient at the output.
   out: the last layer's activation, N x 3T x H x W in block b (nn/cpu/dnnl_ctx.h; T =
   `frames`, 1 for images; channel 3 t + k is frame t's colour k); the prediction is
   y = out / range + mean[k] (mean NULL: y = out). gt: n x T x h x w x 3 uint8 (frame-major
   NHWC), taken as gt / 255. d_out (same layout as out, padding zeroed) = d loss / d out.
   Returns the loss (mean over the n*T*h*w*3 values, times weight: a video network's loss is
   the mean over all its output frames, as BasicSR's on (n, t, c, h, w) tensors). */
double pf_loss_forward_backward(const pf_loss *l, const float *out, const uint8_t *gt, int n,
                                int frames, int h, int w, const float *mean, float range,
                                int b, float *d_out);

/* The loss alone, on already-converted n x h x w x 3 float predictions and targets. */
double pf_loss_value(const pf_loss *l, const float *y, const float *g, size_t count);
#endif
