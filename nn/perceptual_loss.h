/*  perceptual_loss — BasicSR's `PerceptualLoss` (basicsr/losses/basic_loss.py; options
    layer_weights, vgg_type, use_input_norm, range_norm, perceptual_weight, style_weight,
    criterion) on feature maps already extracted, and its gradient with respect to the SR
    output's features. The VGG network that makes the features is not here, and the options
    (their parse and check, VGG19's layer names) are common/perceptual_opts.h, included below,
    so that the job config checks them too: this file owns the loss on what the network hands
    over. Written from the definitions below,
    which are BasicSR's (Johnson et al. 2016 "Perceptual losses for real-time style transfer",
    Gatys et al. 2016 for the Gram matrix); tests/reference/perceptual_ref.py checks them
    against the same formulas in torch with torch's autograd.

    Features: for each layer k of layer_weights (config order), f_k(x) of the SR output and
    f_k(gt) of the ground truth (detached: no gradient), both plain NCHW float, n x c x h x w.
    With w_k the layer's weight, d = f_k(x) - f_k(gt) and crit the criterion:

      percep = perceptual_weight * sum_k w_k crit(f_k(x), f_k(gt))
      style  = style_weight      * sum_k w_k crit(gram(f_k(x)), gram(f_k(gt)))
      gram(f)[b] = F_b F_b^T / (c h w), F_b the c x (h w) matrix of sample b: n x c x c

      criterion  crit(a, g), over all m elements of a (all samples)   d crit / d a
      l1         mean |a - g|          (torch.nn.L1Loss)             sign(a - g) / m, sign(0) = 0
      l2         mean (a - g)^2        (torch.nn.MSELoss)            2 (a - g) / m
      fro        ||a - g||_F, not a mean (torch.norm(a - g, p='fro')) (a - g) / ||a - g||_F

    and through the Gram matrix d style / d F_b = 2 dG_b F_b / (c h w) (dG_b symmetric).
    A term whose weight is 0 is not computed: BasicSR returns None for it (its test is
    `weight > 0`; negative weights are refused here). fro's gradient at a zero difference
    (||a - g|| = 0) is 0, as torch 1.13's norm backward (checked: torch.norm of zeros gives a
    zero gradient, not NaN). BasicSR sums the layers in the network's order, here they are
    summed in config order: the same value up to rounding.
*/
#ifndef PF_PERCEPTUAL_LOSS_H
#define PF_PERCEPTUAL_LOSS_H
#include <stddef.h>

#include "common/perceptual_opts.h"

/* The bits pf_perceptual_forward_backward returns: which terms it computed (BasicSR's
   non-None terms). */
#define PF_PERCEP_HAS_PERCEP 1
#define PF_PERCEP_HAS_STYLE 2

/* Both terms of the loss for n_layers (== o->n_layers) layers and the gradient of
   percep + style with respect to every f_k(x).
   fx[k], fgt[k]: f_k(x) and f_k(gt) of layer k (o->layer_weights[k]), plain NCHW float of
     shape[k] = {n, c, h, w} (each >= 1; layers may differ in every dimension).
   dfx: NULL for the loss alone, else dfx[k] (shape[k], overwritten, not accumulated) gets
     d (percep + style) / d fx[k]: zeros when neither term is computed.
   *percep, *style: the terms, or NAN for a term not computed (BasicSR's None).
   Sums, Gram matrices and every derivative run in double, each gradient element rounded to
   float once; the result does not depend on the thread count (each sum is made by one
   thread in a fixed order). NaN or infinite features give NaN or infinite terms.
   Returns PF_PERCEP_HAS_PERCEP | PF_PERCEP_HAS_STYLE as computed (0: neither), or -1 with
   nothing written when o fails pf_perceptual_opts_check, n_layers differs from o->n_layers,
   a shape is not positive, a pointer is NULL or, with the style term on, scratch memory
   cannot be had ((n + 1) c c doubles, plus c h w with a gradient, for the largest layer). */
int pf_perceptual_forward_backward(const pf_perceptual_opts *o, int n_layers,
                                   const float *const *fx, const float *const *fgt,
                                   const int (*shape)[4], float **dfx, double *percep,
                                   double *style);
#endif
