/*  graph_cuda — the CUDA executor: a network description (nn/net.h, built by nn/zoo.c for
    every model.type, the same one the CPU executor nn/cpu/graph_cpu.c runs) on one CUDA device. Same
    parameter table (names, offsets, shapes), so a host copy of the device parameter buffer is
    the CPU model's, and checkpoints carry over in both directions. Nothing of the CPU backend
    is built.

    Device layout: plain NCHW float32 for every tensor. Convolutions are cuDNN's
    (nn/cuda/conv_cudnn.h) with the bias; fused activations and residual adds of the
    description are separate kernels here (nn/cuda/ops.h). FSRCNN's ConvTranspose2d runs, as
    on the CPU, as a stride-1 convolution on re-indexed weights plus PixelShuffle
    (pf_cuda_gather_sum with the description's sub_idx, every step).

    Memory by liveness, the rules of nn/net.c shared with the CPU: activations share buffers
    by pf_net_assign_slots (training keeps only what backward reads: pf_net_last_use),
    gradients by pf_net_assign_grad_slots (a tensor's gradient lives from the backward of its
    last reader to its producer's); backward's two temporaries exist only where a node needs
    them (a residual conv with res_scale != 1, a pixel shuffle adding to a gradient).

    Threading: one host thread at a time; work is queued on the env's stream and nothing here
    synchronises (the caller does, after the loss copy or the output download).
*/
#ifndef PF_GRAPH_CUDA_H
#define PF_GRAPH_CUDA_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "common/config.h"
#include "nn/cuda/conv_cudnn.h"
#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_cugraph pf_cugraph;

/* What a call works with, owned by the caller (model_cuda.c): its stream and cuDNN context,
   the flat device parameter and gradient buffers (the CPU model's layout), the device loss
   float and its scratch (PF_CUDA_LOSS_SCRATCH doubles), the BatchNorm2d state. */
typedef struct {
    cudaStream_t stream;
    pf_cudnn *cudnn;
    float *params, *grads;
    float *loss;
    double *loss_scratch;
    float *running;         /* device: the BatchNorm2d running statistics (net->n_running
                               floats, nn/net.h PF_G_BATCHNORM; pf_net_bn_init's start): a
                               training step updates them, inference reads them; NULL without
                               BatchNorm2d */
    int64_t *tracked;       /* host: their num_batches_tracked (net->n_bn), + 1 a training
                               step; NULL: not counted */
} pf_cugraph_env;

/* Describe cfg's network (allocates on the device only FSRCNN's weight index maps). Returns
   NULL with err: an unsupported type or hyper-parameter (pf_net_build's message), out of
   memory. */
pf_cugraph *pf_cugraph_new(const pf_config *cfg, char *err, size_t errlen);

/* The same for a description the caller built (nn/net.h; a network not in the zoo, as the
   tests build one): *net is taken over (moved, left empty as pf_net_init leaves it; freed on
   failure too); cfg gives the loss keys only. */
struct pf_net;
pf_cugraph *pf_cugraph_new_net(const pf_config *cfg, struct pf_net *net, char *err,
                               size_t errlen);

/* Frees the plans' device buffers (call with the model's device current) and the
   description; nulls *self. */
void pf_cugraph_destroy(pf_cugraph **self);

/* The parameter tensors (weight then bias per conv, PReLU weights, ...), as
   pf_model_tensor_info, and their total size in floats. */
int pf_cugraph_num_tensors(const pf_cugraph *g);
/* The description it runs (n_running, n_bn for the BatchNorm2d state: pf_net_bn_init). */
const struct pf_net *pf_cugraph_net(const pf_cugraph *g);
const pf_param_info *pf_cugraph_tensor_info(const pf_cugraph *g, int i);
size_t pf_cugraph_num_params(const pf_cugraph *g);
/* Frames per sample: 1 for an image network, T for a video network unrolled over T frames
   (BasicVSR over data.train.num_frame): its batches hold T frames per sample. */
int pf_cugraph_frames(const pf_cugraph *g);
/* LQ height and width must be multiples of this (pf_model_input_multiple). */
int pf_cugraph_input_multiple(const pf_cugraph *g);
/* Device bytes of the current training (training = 1) or inference plan's buffers:
   activations, gradients, temporaries, the uploaded batch (0 before the first call). */
size_t pf_cugraph_plan_bytes(const pf_cugraph *g, int training);

/* One training step on the device: host_in is a host buffer (pinned for an asynchronous
   copy) holding lq (n x T x h x w x 3 uint8 NHWC, T = pf_cugraph_frames) followed by gt
   (n x T x hs x ws x 3, s the scale).
   Uploads it, runs forward, the loss (cfg's L1Loss, MSELoss or CharbonnierLoss, mean, times
   loss_weight, on the image out / range + mean) into env->loss and backward into env->grads (overwritten). Plans (buffers
   and cuDNN algorithms) are (re)built when the shape changes. Queued on env->stream; returns
   0 or -1 with err naming the node or layer. */
int pf_cugraph_train_step(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in,
                          int n, int h, int w, char *err, size_t errlen);

/* Inference of one image (T frames for a video network): host_in holds lq (T x h x w x 3
   uint8); *pred is set to the device output, T x 3 x hs x ws float NCHW (out / range + mean:
   nominally [0, 1], not clamped),
   valid until the next call. Queued on env->stream; returns 0 or -1 with err. */
int pf_cugraph_infer(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in, int h,
                     int w, const float **pred, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
