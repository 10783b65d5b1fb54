/*  spectral_norm — spectral normalisation of a convolution's weight, as
    torch.nn.utils.spectral_norm (torch/nn/utils/spectral_norm.py, PyTorch 1.13) with its
    defaults dim = 0, n_power_iterations = 1, eps = 1e-12; the method is Miyato, Kataoka,
    Koyama, Yoshida, "Spectral Normalization for Generative Adversarial Networks", ICLR 2018.
    Real-ESRGAN's UNetDiscriminatorSN wraps its convolutions this way.

    Host code that no executor owns: it reads the trained weight where it lives in the flat
    parameter buffer and writes the normalised weight the convolution runs with; its backward
    turns the convolution's weight gradient into the gradient of the trained weight.

    The weight matrix. A convolution weight weight_orig (OIHW, O x I x K x K floats) is read
    as the row-major matrix W of rows = O and cols = I K K (torch's reshape_weight_to_matrix
    for dim 0), so W[r][c] = weight_orig[r * cols + c].

    Names and the state_dict. For a layer NAME (an nn.Conv2d wrapped by spectral_norm) torch
    keeps weight_orig as the parameter (it is what the optimiser updates), weight_u (O) and
    weight_v (I K K) as buffers, and `weight` only as a plain attribute the forward pre-hook
    recomputes. state_dict() therefore holds, in this order, NAME.bias (when the conv has one;
    BasicSR's UNetDiscriminatorSN convs have none), NAME.weight_orig, NAME.weight_u,
    NAME.weight_v, and no NAME.weight; its metadata says {"spectral_norm": {"weight.version":
    1}} for the module, and torch's load_state_dict accepts the three keys without that
    metadata, and refuses a NAME.weight key under strict=True ("Unexpected key(s)"). Checked
    with torch 1.13: named_parameters bias, weight_orig; named_buffers weight_u, weight_v.

    Forward, training (module.training in torch), one power iteration updating the state:
        v = normalize(W^T u),  u = normalize(W v),   normalize(x) = x / max(||x||_2, eps)
        sigma = u . (W v),     weight = weight_orig / sigma
    Forward, evaluation: no iteration; sigma from the stored u and v.
    Backward: torch clones u and v after the iteration, so autograd treats them as constants:
        d weight_orig = d weight / sigma - (sum(d weight * weight_orig) / sigma^2) u v^T
    Sums run in double; u, v, sigma and the weights are stored as float, as torch's are.

    Every training forward iterates once: BasicSR's GAN step runs net_d (in train mode) in
    the generator step and again on real and on fake, so u moves once per call. The backward
    of a forward uses that forward's u, v and sigma (torch's clones): a caller that runs two
    forwards before their backwards keeps a copy of the struct with copies of u and v for the
    first (backward reads only weight_u, weight_v and sigma).

    Init: u and v drawn N(0, 1) and normalised, as torch's spectral_norm does when applied. The
    draws are PixFlow's (common/rng.h), not torch's generator: the same seed gives other
    vectors than torch.manual_seed, so tests that compare with torch load torch's u and v.
*/
#ifndef PF_SPECTRAL_NORM_H
#define PF_SPECTRAL_NORM_H
#include "common/rng.h"

#define PF_SN_EPS 1e-12f   /* torch's default eps */

/* One normalised weight: its matrix shape and its state (memory the caller owns, e.g. a
   checkpointed buffer). */
typedef struct {
    int rows;          /* O: output channels (weight_orig's dim 0) */
    int cols;          /* I * K * K: the rest of weight_orig, flattened */
    float eps;         /* normalize's floor on the norm: PF_SN_EPS */
    float *weight_u;   /* rows floats, unit length: torch's buffer NAME.weight_u */
    float *weight_v;   /* cols floats, unit length: torch's buffer NAME.weight_v */
    float sigma;       /* u . (W v) of the last forward, the divisor backward needs */
} pf_spectral_norm;

/* A layer of out_channels x in_channels x kernel x kernel over the caller's weight_u
   (out_channels floats) and weight_v (in_channels * kernel^2 floats), eps PF_SN_EPS, sigma 0
   (no forward yet). The vectors are not touched: pf_spectral_norm_init_uv or a loaded
   state_dict fills them. */
pf_spectral_norm pf_spectral_norm_layer(int out_channels, int in_channels, int kernel,
                                        float *weight_u, float *weight_v);

/* Torch's init of u and v: rows then cols draws N(0, 1) (Box-Muller on two uniforms of r per
   draw), each vector normalised. */
void pf_spectral_norm_init_uv(pf_spectral_norm *sn, pf_rng *r);

/* The forward above: with training != 0 one power iteration updates weight_u and weight_v
   first. weight_orig and weight are rows x cols floats (OIHW); weight may not alias
   weight_orig. Sets sn->sigma and returns it. A zero weight_orig gives sigma 0 and a weight of
   NaN, as torch. */
float pf_spectral_norm_forward(pf_spectral_norm *sn, const float *weight_orig, int training,
                               float *weight);

/* The backward above with the u, v and sigma of the last forward: d_weight (rows x cols, the
   gradient of the loss with respect to the normalised weight) to d_weight_orig (rows x cols,
   overwritten; it may be d_weight itself, e.g. the conv's slot in the flat gradient buffer). */
void pf_spectral_norm_backward(const pf_spectral_norm *sn, const float *weight_orig,
                               const float *d_weight, float *d_weight_orig);
#endif
