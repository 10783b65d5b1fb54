/*  vgg — the VGG19 feature extractor of the perceptual loss as a network description
    (nn/net.h), BasicSR's VGGFeatureExtractor (basicsr/archs/vgg_arch.py) with vgg_type
    'vgg19', requires_grad False, remove_pooling False, pooling_stride 2: torchvision's
    `vgg19().features` (Simonyan & Zisserman, "Very Deep Convolutional Networks for
    Large-Scale Image Recognition", ICLR 2015, configuration E) cut after the deepest layer
    asked for. Not a model.type of the zoo: the GAN training step builds it beside the
    generator (a later part of issue 41) and only reads its features.

    Layers, BasicSR's NAMES['vgg19'] (37 names, index = the module's index in torchvision's
    `features` Sequential): conv1_1 relu1_1 conv1_2 relu1_2 pool1, conv2_1 relu2_1 conv2_2
    relu2_2 pool2, conv3_1 relu3_1 ... conv3_4 relu3_4 pool3, conv4_1 ... relu4_4 pool4,
    conv5_1 ... conv5_4 relu5_4 pool5. convX_Y: 3 x 3 convolution, padding 1, bias, channels
    64 (block 1), 128 (2), 256 (3), 512 (4, 5); reluX_Y: ReLU (a PF_G_RELU node, so the conv's
    output, the pre-ReLU feature Real-ESRGAN's and ESRGAN's perceptual losses read, stays a
    tensor of its own); poolX: nn.MaxPool2d(2, 2) (PF_G_MAXPOOL2: half the size, so pool k is
    at 1 / 2^k of the input and convX_Y at 1 / 2^(X-1); the input's H and W must be multiples
    of 2^(pools kept), pf_net_input_multiple).

    Input: N x 3 x H x W floats, RGB in [0, 1] (or [-1, 1] with range_norm) as the executor's
    float input (pf_graph_forward_f32; PF_G_INPUT with no mean shift and range 1, so the
    uint8 path reads v / 255). Before the first convolution, as BasicSR's forward:
      range_norm:     x = (x + 1) / 2                              (PF_G_AFFINE: sub -1, mul 0.5)
      use_input_norm: x = (x - mean) / std, ImageNet's mean [0.485, 0.456, 0.406], std [0.229,
                      0.224, 0.225]                                (PF_G_AFFINE: mul 1 / std,
                      which differs from torch's division by at most 1 ulp of the factor)

    Parameters: torchvision's vgg19 state_dict names, `features.I.weight` (O x I x 3 x 3, OIHW)
    and `features.I.bias` (O) for every conv up to the cut, I its index above (0, 2, 5, 7, 10,
    12, 14, 16, 19, 21, 23, 25, 28, 30, 32, 34): the user's weights file is torchvision's
    vgg19 .pth converted with scripts/pth2safetensors.py (its classifier and deeper features
    are more than the network holds: pf_vgg_load takes what it needs). Init (unused once
    loaded; torchvision's VGG init): weights N(0, 2 / (O 3 3)) (kaiming_normal_, fan_out,
    relu), biases 0. */
#ifndef PF_NN_VGG_H
#define PF_NN_VGG_H
#include <stddef.h>

#include "common/perceptual_opts.h"
#include "nn/net.h"

#define PF_VGG19_N_NAMES PF_VGG19_N_LAYERS

/* pf_vgg19_layer_name, pf_vgg19_layer_index: common/perceptual_opts.h (the names are the
   perceptual loss's options too). */

/* Describe VGGFeatureExtractor(layer_names, 'vgg19', use_input_norm, range_norm) in net (type
   "VGG19", scale 1): the layers up to the deepest of layer_names[0..n_layers) (names in any
   order, repeats allowed), nothing past it. layer_tensor (n_layers ints, may be NULL) gets
   each requested layer's output tensor id (for the caller to read the features; a conv's is
   its pre-ReLU output); net->output is the deepest one's. Returns 0, or -1 with err: no
   layers, a NULL or unknown name (the message names it and lists the valid ones), out of
   memory; net is then freed. */
int pf_net_build_vgg19_features(pf_net *net, const char *const *layer_names, int n_layers,
                                int use_input_norm, int range_norm, int *layer_tensor,
                                char *err, size_t errlen);

struct pf_safetensors;

/* Copy every tensor of net's parameter table from st, found by its name (torchvision's), into
   params (net->n_params floats, at each tensor's offset); st may hold more (a whole
   torchvision vgg19: the classifier, deeper layers), which are ignored. Returns 0, or -1 with
   err naming the file, how many tensors are missing or mis-shaped and the first few of each
   ("features.34.weight: the file has [256, 512, 3, 3], VGG19 wants [512, 512, 3, 3]"), and how
   such a file is made; params is then untouched. pf_vgg_load: the same from the safetensors
   file at path. */
int pf_vgg_load_st(const pf_net *net, float *params, const struct pf_safetensors *st,
                   char *err, size_t errlen);
int pf_vgg_load(const pf_net *net, float *params, const char *path, char *err, size_t errlen);
#endif
