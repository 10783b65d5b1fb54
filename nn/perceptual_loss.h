/*  perceptual_loss — BasicSR's `PerceptualLoss` (basicsr/losses/basic_loss.py; options
    layer_weights, vgg_type, use_input_norm, range_norm, perceptual_weight, style_weight,
    criterion) on feature maps already extracted, and its gradient with respect to the SR
    output's features. The VGG network that makes the features is not here: this file owns the
    options and the loss on what the network hands over. Written from the definitions below,
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

#include "nn/vgg.h"

/* The names of VGG19's layers (BasicSR's NAMES['vgg19'], torchvision vgg19 `features` in order):
   conv1_1 relu1_1 conv1_2 relu1_2 pool1 conv2_1 ... conv5_4 relu5_4 pool5. */
#define PF_VGG19_N_LAYERS PF_VGG19_N_NAMES  /* nn/vgg.h */
#define PF_PERCEP_NAME_MAX 16   /* bytes of a layer name with its NUL */

typedef enum { PF_PERCEP_L1, PF_PERCEP_L2, PF_PERCEP_FRO } pf_percep_criterion;
#define PF_PERCEP_N_CRITERIA 3

typedef struct {
    char name[PF_PERCEP_NAME_MAX]; /* a VGG19 layer name ("conv5_4") */
    double weight;                 /* its weight w_k, >= 0 */
} pf_percep_layer;

typedef struct {
    pf_percep_layer layer_weights[PF_VGG19_N_LAYERS]; /* layer_weights, in config order */
    int n_layers;                      /* entries of layer_weights, 1..PF_VGG19_N_LAYERS */
    char vgg_type[8];                  /* vgg_type: "vgg19" (the only one for now) */
    int use_input_norm;                /* use_input_norm (BasicSR default true): for the VGG */
    int range_norm;                    /* range_norm (default false): for the VGG */
    double perceptual_weight;          /* perceptual_weight >= 0 (default 1); 0: no percep term */
    double style_weight;               /* style_weight >= 0 (default 0); 0: no style term */
    pf_percep_criterion criterion;     /* criterion (default l1) */
} pf_perceptual_opts;

/* Parse a criterion name: "l1" | "l2" | "fro". 0, or -1 when unknown (*c untouched). */
int pf_percep_criterion_parse(const char *name, pf_percep_criterion *c);

/* The criterion's name ("l1", ...), or "?" for a value outside the enum. */
const char *pf_percep_criterion_name(pf_percep_criterion c);

/* BasicSR's defaults: vgg_type vgg19, use_input_norm true, range_norm false,
   perceptual_weight 1, style_weight 0, criterion l1, and no layers (layer_weights has no
   default: it must be given). */
void pf_perceptual_opts_default(pf_perceptual_opts *o);

/* Set one option from its text, as a config file gives it. key is the option's name below
   perceptual_opt: "vgg_type", "use_input_norm", "range_norm" (true/True/TRUE, false/...),
   "perceptual_weight", "style_weight" (a number >= 0: common/number.h's rule), "criterion",
   or "layer_weights.NAME" (appends layer NAME with weight value, >= 0; a layer given twice is
   refused). Returns 0, or -1 with err holding "KEY: what is wrong" (the caller prefixes its
   path, e.g. "train.perceptual_opt.") and *o unchanged: an unknown key (the message lists the
   known ones), a bad value, an unknown layer (the message lists VGG19's names). */
int pf_perceptual_opts_set(pf_perceptual_opts *o, const char *key, const char *value, char *err,
                           size_t errlen);

/* Check a whole option set (filled by pf_perceptual_opts_set or by hand): at least one layer,
   every name a VGG19 layer and none twice, every weight finite and >= 0, vgg_type "vgg19",
   criterion in the enum. 0, or -1 with err "KEY: what is wrong", as pf_perceptual_opts_set. */
int pf_perceptual_opts_check(const pf_perceptual_opts *o, char *err, size_t errlen);

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
