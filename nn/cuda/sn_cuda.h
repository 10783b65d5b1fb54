/*  sn_cuda — spectral normalisation of a discriminator's convolutions on the CUDA executor's
    device buffers: the counterpart of nn/discriminator.h's pf_disc_sn_forward /
    pf_disc_sn_backward (host buffers), with torch.nn.utils.spectral_norm's semantics (dim 0,
    one power iteration per training forward, eps 1e-12; the formulas are nn/spectral_norm.h's,
    the kernels nn/cuda/ops.h's pf_cuda_sn_*).

    Buffers (device pointers, the layouts of the host side, so checkpoints and the CPU model's
    buffers carry over with plain copies):
    - params: the flat parameter buffer of the net_d description (net->n_params floats), each
      spectral-normalised conv's (pf_nconv.sn) weight tensor being NAME.weight_orig;
    - eff: as many floats, what the executor runs with: params, except each SN conv's weight
      slot = weight_orig / sigma;
    - state: the u / v buffer of pf_disc_sn_numel(net) floats, per SN conv in description order
      NAME.weight_u (O floats) then NAME.weight_v (I K K floats) (pf_disc_sn_at's offsets);
    - grads: the executor's gradient buffer (net->n_params floats), laid out as params.
    sigma (one float per SN conv, from the last forward) lives in the pf_cusn object, on the
    device, with a small double scratch: not state (the CPU's pf_spectral_norm.sigma either).

    What a caller does, per discriminator call (e.g. BasicSR's RealESRGANModel step, where
    net_d runs in train mode on the generator's output, then on real and on fake):
      1. pf_cusn_forward(sn, params, state, training, eff, stream): before the net_d forward;
         training != 0 moves u and v once, as every train-mode call of the torch module does;
      2. the net_d forward and backward on eff (the executor's parameter buffer), gradients
         into grads with respect to eff;
      3. pf_cusn_backward(sn, params, state, grads, stream): after the net_d backward, before
         the gradients are accumulated over calls, all-reduced or stepped: each SN conv's slot
         becomes d weight_orig in place, with the u, v and sigma of step 1 (u and v held as
         constants, as torch's clones; the other tensors' gradients are already right).
    Two forwards before their backwards would need the first's u, v and sigma kept (as on the
    CPU, nn/spectral_norm.h): this object keeps one sigma per layer, so run forward, backward,
    forward, backward (BasicSR's order). Not wired into the GAN step on GPU workers yet.

    Determinism: every sum in double in a fixed order (ops.h), no atomics: the same bits on
    every run. All work is queued on the given stream; nothing synchronises.
*/
#ifndef PF_CUDA_SN_CUDA_H
#define PF_CUDA_SN_CUDA_H
#include <stddef.h>
#include <cuda_runtime_api.h>

#include "nn/net.h"

/* One spectral-normalised conv of the description. */
typedef struct {
    char name[64];          /* the conv's state_dict prefix (conv1, ...), for errors */
    int rows, cols;         /* its weight as a matrix: O, I K K */
    float eps;              /* normalize's floor: PF_SN_EPS (1e-12, torch's) */
    size_t weight_offset;   /* weight_orig's offset in params / eff / grads (floats) */
    size_t u_offset;        /* weight_u's offset in state (rows floats) */
    size_t v_offset;        /* weight_v's offset in state (cols floats) */
} pf_cusn_layer;

typedef struct {
    int n;                  /* SN convs (pf_disc_sn_count) */
    pf_cusn_layer *layer;   /* host array of n, description order */
    size_t n_params;        /* floats of params, eff, grads */
    size_t n_state;         /* floats of state (pf_disc_sn_numel) */
    float *sigma;           /* device, n floats: each layer's sigma of the last forward */
    double *scratch;        /* device, PF_CUDA_SN_SCRATCH(max rows) doubles */
    int forwarded;          /* a forward has set sigma */
} pf_cusn;

/* The SN layers of net (any description; one without SN convs gives n 0, whose forward is a
   copy and backward nothing) with their device sigma and scratch (cudaMalloc, on the current
   device). Returns the object, or NULL with err (out of host or device memory). */
pf_cusn *pf_cusn_new(const pf_net *net, char *err, size_t errlen);

/* Frees the object and its device memory and sets *self to NULL; NULL or *self NULL is a
   no-op. */
void pf_cusn_destroy(pf_cusn **self);

/* eff = params, then each SN conv's weight slot = weight_orig / sigma (pf_cuda_sn_forward:
   with training != 0 one power iteration updates its u and v in state first, else they are
   used as they are) and the object's sigma set. eff must not alias params. Queued on stream.
   Returns 0, or -1 with err naming the layer. */
int pf_cusn_forward(pf_cusn *self, const float *params, float *state, int training, float *eff,
                    cudaStream_t stream, char *err, size_t errlen);

/* grads holds the gradients with respect to eff: each SN conv's weight slot becomes
   d weight_orig in place (pf_cuda_sn_backward with the u, v in state and the sigma of the last
   pf_cusn_forward); the other tensors are left as they are. Returns 0, or -1 with err naming
   the layer (also when no forward has run yet). */
int pf_cusn_backward(const pf_cusn *self, const float *params, const float *state,
                     float *grads, cudaStream_t stream, char *err, size_t errlen);

/* Device pointer to layer j's sigma (one float; j in 0 .. n - 1), NULL when out of range. */
const float *pf_cusn_sigma(const pf_cusn *self, int j);
#endif
