/*  discriminator — GAN discriminators as network descriptions (nn/net.h), and the host side of
    their spectral normalisation: the effective weights the executor runs with, and the
    gradients of the trained weights.

    UNetDiscriminatorSN: Real-ESRGAN's discriminator (Wang, Xie, Dong, Shan, "Real-ESRGAN:
    Training Real-World Blind Super-Resolution with Pure Synthetic Data", ICCVW 2021), as
    BasicSR / Real-ESRGAN define it (realesrgan/archs/discriminator_arch.py, also
    basicsr/archs/discriminator_arch.py), with its parameter names. F = num_feat, lrelu =
    LeakyReLU(0.2), SN = torch.nn.utils.spectral_norm, up = F.interpolate(scale_factor=2,
    mode='bilinear', align_corners=False):

        x0 = lrelu(conv0(x))          3x3, bias, no SN      num_in_ch -> F      H
        x1 = lrelu(conv1(x0))         4x4 s2 p1, SN, no bias    F -> 2F         H / 2
        x2 = lrelu(conv2(x1))         4x4 s2 p1, SN, no bias   2F -> 4F         H / 4
        x3 = lrelu(conv3(x2))         4x4 s2 p1, SN, no bias   4F -> 8F         H / 8
        x4 = lrelu(conv4(up(x3))) [+ x2]   3x3, SN, no bias    8F -> 4F         H / 4
        x5 = lrelu(conv5(up(x4))) [+ x1]   3x3, SN, no bias    4F -> 2F         H / 2
        x6 = lrelu(conv6(up(x5))) [+ x0]   3x3, SN, no bias    2F -> F          H
        out = conv9(lrelu(conv8(lrelu(conv7(x6)))))   conv7, conv8 3x3 SN no bias F -> F;
                                      conv9 3x3, bias, no SN, no activation     F -> 1

    The skip adds ([+ ...], skip_connection) come after the activation, so they are PF_G_ADD
    nodes of their own (a convolution cannot fuse both, pf_net_check_desc). Input: the image
    in [0, 1] (the input node with no mean shift and range 1: the executors' uint8 input v /
    255, or a float batch through pf_graph_forward_f32), N x 3 x H x W; output: raw logits N x
    1 x H x W (GANLoss takes them), H and W multiples of 8 (pf_net_input_multiple says 8).

    Parameters (the flat buffer, torch's named_parameters order): conv0.weight, conv0.bias,
    conv1.weight_orig .. conv8.weight_orig, conv9.weight, conv9.bias; init PyTorch's nn.Conv2d
    default (BasicSR applies no other to this network): U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    fan_in = I K K, for weights (weight_orig: spectral_norm wraps the initialised conv) and
    biases.

    Spectral normalisation (nn/spectral_norm.h, torch semantics). A conv with pf_nconv.sn
    names its weight tensor NAME.weight_orig: the trained tensor, updated by the optimiser. The
    executor runs with a second flat buffer, `eff` (net->n_params floats, laid out as the
    parameters): every tensor copied, except that each SN conv's weight is weight_orig / sigma
    (pf_disc_sn_forward). Its backward writes d eff into the gradient buffer; pf_disc_sn_backward
    turns each SN conv's slot into d weight_orig in place (u and v held, as autograd holds
    them); biases and the other tensors' gradients are already right.

    The u / v state (torch's buffers, not parameters: not trained, not in the flat buffers):
    one float buffer of pf_disc_sn_numel floats, for each SN conv in description order (conv1,
    conv2, .., conv8) its NAME.weight_u (O floats) then NAME.weight_v (I K K floats) — torch's
    state_dict order of those buffers, each module's weight_orig coming just before them (a
    checkpoint writes the three per layer in that order). pf_disc_sn_layers makes the
    pf_spectral_norm views over it (sigma, set by each forward, is not state).
*/
#ifndef PF_DISCRIMINATOR_H
#define PF_DISCRIMINATOR_H
#include <stddef.h>
#include <stdint.h>

#include "nn/net.h"
#include "nn/spectral_norm.h"

/* UNetDiscriminatorSN(num_in_ch, num_feat, skip_connection) above, into net (type
   "UNetDiscriminatorSN", scale 1). num_in_ch must be 3 (the executors read 3-channel images),
   num_feat 1..1024, skip_connection 0 or 1. Returns 0, or -1 with err naming the argument out
   of range (or out of memory); net is then freed. */
int pf_net_build_unet_discriminator_sn(pf_net *net, int num_in_ch, int num_feat,
                                       int skip_connection, char *err, size_t errlen);

/* VGGStyleDiscriminator(num_in_ch, num_feat, input_size) into net (type
   "VGGStyleDiscriminator", scale 1): BasicSR's discriminator of SRGAN / ESRGAN
   (basicsr/archs/discriminator_arch.py; Ledig et al., "Photo-Realistic Single Image
   Super-Resolution Using a Generative Adversarial Network", CVPR 2017, figure 4, as BasicSR
   writes it). F = num_feat, lrelu = LeakyReLU(0.2), every conv padding 1, bn = BatchNorm2d
   (affine, eps 1e-5, momentum 0.1; nn/net.h PF_G_BATCHNORM):

        lrelu(conv0_0(x))                 3x3 s1, bias            num_in_ch -> F     S
        lrelu(bn0_1(conv0_1(.)))          4x4 s2, no bias                 F -> F     S / 2
        lrelu(bnK_0(convK_0(.)))          3x3 s1, no bias   K = 1 2 3: C -> 2C (C = F, 2F, 4F),
        lrelu(bnK_1(convK_1(.)))          4x4 s2, no bias                         K = 4: 8F -> 8F
                                                                      (each K halves the size)
        [input_size 256: conv5_0 / bn5_0 and conv5_1 / bn5_1 too, 8F -> 8F]
        lrelu(linear1(flatten(.)))        8F * 4 * 4 -> 100     (torch's x.view(N, -1): C, H, W)
        out = linear2(.)                  100 -> 1

   Input: the image in [0, 1] (no mean shift, range 1), N x num_in_ch x S x S with S =
   input_size exactly (BasicSR asserts it; here the linear layer's in_features check refuses
   another size when a plan is made, naming linear1); output: raw logits N x 1 (x 1 x 1).
   Parameters and buffers are BasicSR's names in torch's order: conv0_0.weight, conv0_0.bias,
   conv0_1.weight, bn0_1.weight, bn0_1.bias, conv1_0.weight, bn1_0.weight, ..., linear1.weight,
   linear1.bias, linear2.weight, linear2.bias (the flat buffer); bnX_Y.running_mean /
   running_var / num_batches_tracked are the model's running statistics (pf_model_running,
   pf_model_tracked), between a layer's bias and the next module's weight in a state_dict.
   Init: torch's defaults (BasicSR applies no other to this network): convs and linears
   U(-1/sqrt(fan_in), 1/sqrt(fan_in)), BatchNorm weight 1, bias 0. num_in_ch must be 3,
   num_feat 1..1024, input_size 128 or 256. Returns 0, or -1 with err (net freed). */
int pf_net_build_vgg_style_discriminator(pf_net *net, int num_in_ch, int num_feat,
                                         int input_size, char *err, size_t errlen);

/* Number of spectral-normalised convolutions in net (pf_nconv.sn), and floats of their u / v
   state (sum of O + I K K over them). */
int pf_disc_sn_count(const pf_net *net);
size_t pf_disc_sn_numel(const pf_net *net);

/* The j-th SN conv (0 .. pf_disc_sn_count - 1, description order): its conv index, and the
   offsets of its weight_u (O floats) and weight_v (I K K floats) in the state buffer. Returns
   the conv index, or -1 when j is out of range. */
int pf_disc_sn_at(const pf_net *net, int j, size_t *u_offset, size_t *v_offset);

/* Views over state (pf_disc_sn_numel floats): sn[j] for the j-th SN conv (the caller's array
   of pf_disc_sn_count), eps PF_SN_EPS, sigma 0. */
void pf_disc_sn_layers(const pf_net *net, float *state, pf_spectral_norm *sn);

/* Torch's init of every u and v (pf_spectral_norm_init_uv), the j-th SN conv's from the
   stream pf_rng_make(seed, j, 1) (a counter-based key apart from pf_net_init_params's). Not
   torch's generator: tests comparing with torch load torch's vectors. */
void pf_disc_sn_init(const pf_net *net, pf_spectral_norm *sn, uint64_t seed);

/* The effective weights: eff (net->n_params floats, not aliasing params) = params, except each
   SN conv's weight = weight_orig / sigma (pf_spectral_norm_forward: with training != 0 one
   power iteration updates its u and v first, as a torch module in train mode does on every
   forward; else u and v are used as they are). */
void pf_disc_sn_forward(const pf_net *net, pf_spectral_norm *sn, const float *params,
                        int training, float *eff);

/* grads (net->n_params floats) holds the executor's gradients with respect to eff: each SN
   conv's weight slot becomes d weight_orig in place (pf_spectral_norm_backward with the u, v
   and sigma of the last pf_disc_sn_forward); the other tensors are left as they are. */
void pf_disc_sn_backward(const pf_net *net, const pf_spectral_norm *sn, const float *params,
                         float *grads);
#endif
