/*  perceptual_opts — the options of BasicSR's `PerceptualLoss` (basicsr/losses/basic_loss.py:
    layer_weights, vgg_type, use_input_norm, range_norm, perceptual_weight, style_weight,
    criterion) and VGG19's layer names (BasicSR's NAMES['vgg19']): parse, defaults and check.
    The loss on feature maps is nn/perceptual_loss.h, which includes this header; the options
    live in common/ so that the job config (common/config.c, `gan.perceptual_opt`) parses and
    checks them with the same code.
*/
#ifndef PF_PERCEPTUAL_OPTS_H
#define PF_PERCEPTUAL_OPTS_H
#include <stddef.h>

/* The names of VGG19's layers (BasicSR's NAMES['vgg19'], torchvision vgg19 `features` in order):
   conv1_1 relu1_1 conv1_2 relu1_2 pool1 conv2_1 ... conv5_4 relu5_4 pool5. */
#define PF_VGG19_N_LAYERS 37
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

/* Index of name in VGG19's layer order (0 for conv1_1 .. 36 for pool5), or -1 (unknown or
   NULL). */
int pf_vgg19_layer_index(const char *name);

/* The name of VGG19 layer i (0..36), or NULL outside. */
const char *pf_vgg19_layer_name(int i);

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
#endif
