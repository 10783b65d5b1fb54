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
   (BasicVSR over data.train.num_frame), or a sliding-window network's window (EDVR:
   model.num_frame): its LQ batches hold T frames per sample. */
int pf_cugraph_frames(const pf_cugraph *g);
/* Frames of one output (pf_net_out_frames): T for a recurrent network (every frame of the
   clip), 1 for an image network and a sliding-window one (EDVR: the center frame's SR). GT
   batches, the loss and pf_cugraph_infer's output hold this many frames per sample. */
int pf_cugraph_out_frames(const pf_cugraph *g);
/* LQ height and width must be multiples of this (pf_model_input_multiple). */
int pf_cugraph_input_multiple(const pf_cugraph *g);
/* Device bytes of the current training (training = 1) or inference plan's buffers:
   activations, gradients, temporaries, the uploaded batch (0 before the first call). */
size_t pf_cugraph_plan_bytes(const pf_cugraph *g, int training);

/* One training step on the device: host_in is a host buffer (pinned for an asynchronous
   copy) holding lq (n x T x h x w x 3 uint8 NHWC, T = pf_cugraph_frames) followed by gt
   (n x OT x hs x ws x 3, OT = pf_cugraph_out_frames, s the scale: EDVR's center frame alone),
   as pf_model_train_step takes them.
   Uploads it, runs forward, the loss (cfg's L1Loss, MSELoss or CharbonnierLoss, mean over the
   n x OT output frames, times loss_weight, on the image out / range + mean) into env->loss and backward into env->grads (overwritten). Plans (buffers
   and cuDNN algorithms) are (re)built when the shape changes. Queued on env->stream; returns
   0 or -1 with err naming the node or layer. */
int pf_cugraph_train_step(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in,
                          int n, int h, int w, char *err, size_t errlen);

/* Inference of one image (T frames for a video network): host_in holds lq (T x h x w x 3
   uint8); *pred is set to the device output, OT x 3 x hs x ws float NCHW (OT =
   pf_cugraph_out_frames: T for BasicVSR, 1 for EDVR's window; out / range + mean:
   nominally [0, 1], not clamped),
   valid until the next call. Queued on env->stream; returns 0 or -1 with err. */
int pf_cugraph_infer(pf_cugraph *g, const pf_cugraph_env *env, const uint8_t *host_in, int h,
                     int w, const float **pred, char *err, size_t errlen);

/* ---- float input, taps, given gradients (a discriminator, a perceptual loss's VGG) -------
   The CUDA counterparts of nn/graph.h's pf_graph_forward_f32, pf_graph_read,
   pf_graph_backward_from and pf_graph_backward_input (nn/model.h's pf_model_* of the same
   names), with the same semantics but device pointers in plain NCHW on both sides (the CPU's
   input and dx are NHWC): x and dx are N x C x H x W floats, C the input tensor's channels (3
   T for T frames: N x T x 3 x H x W). They work on the training plan. */

/* Whether the training plans made from now on can give d loss / d input (the CPU's
   pf_gctx.input_grad): on = 1 also plans the gradients of the tensors downstream of the input
   (pf_net_need_input_grad), and a network reading its image through a bilinear / bicubic
   input node is then refused at plan time. A change rebuilds the training plan at its next
   use. */
void pf_cugraph_set_input_grad(pf_cugraph *g, int on);

/* A training forward (BatchNorm2d: batch statistics, env->running and env->tracked updated) of
   the device input x (N x C x h x w NCHW floats, nominally [0, 1], read as is: the PF_G_INPUT
   node then applies (x - mean) * range where the description has a mean shift), on the
   training plan, (re)built for n x h x w. Keeps the output and the taps (pf_cugraph_tap) and
   what backward reads; x is read by the queued work only (the caller keeps it until the
   stream has run it). Queued on env->stream; returns 0, or -1 with err (a bilinear / bicubic
   input node, which reads uint8 only; a shape the description refuses). */
int pf_cugraph_forward_train_f32(pf_cugraph *g, const pf_cugraph_env *env, const float *x,
                                 int n, int h, int w, char *err, size_t errlen);

/* N, C, H, W of the last training forward's (pf_cugraph_forward_train_f32's or
   pf_cugraph_train_step's) output (which -1) or tap `which` (0..n_taps-1, nn/net.h
   pf_net_add_tap) into dims. 0, or -1 when no training forward ran or which is out of
   range. */
int pf_cugraph_shape(const pf_cugraph *g, int which, int dims[4]);
/* That tensor on the device, N x C x H x W NCHW floats (pf_cugraph_shape), the raw activation
   (no mean or range applied); valid until the next training forward or pf_cugraph_destroy
   (backward does not write it). NULL as pf_cugraph_shape's -1. */
const float *pf_cugraph_tap(const pf_cugraph *g, int which);

/* Backward of the last training forward from gradients the caller gives on the device, in
   pf_cugraph_shape's shapes: dout for the output, dtaps[k] for tap k (dout NULL, dtaps NULL or
   an entry NULL: zero; nodes nothing flows back through are skipped). Parameter gradients are
   overwritten into env->grads (zeroed first, as pf_cugraph_train_step's). dx (NULL: not
   wanted): d loss / d x on the device, N x C x H x W as x, through the input node's (x - mean)
   * range (range only with a mean shift, as the node applies it); zero where no gradient
   reaches the input. dx needs a plan made with pf_cugraph_set_input_grad(g, 1), else -1 with
   err. The given buffers are only read. Queued on env->stream; returns 0, or -1 with err. */
int pf_cugraph_backward_from(pf_cugraph *g, const pf_cugraph_env *env, const float *dout,
                             const float *const *dtaps, float *dx, char *err, size_t errlen);
/* The same for d loss / d x alone (a frozen VGG, the discriminator in the generator's step):
   dx must be given (NULL: -1 with err) and the plan made with input_grad. No parameter
   gradient is computed (no backward-filter or bias sums, no Linear / BatchNorm2d / PReLU
   parameter sums) and env->grads is not written; only the tensors downstream of the input get
   gradients (pf_net_need_input_only). dx is bit-identical to pf_cugraph_backward_from's for
   the same forward and seeds where the convolutions' algorithms are deterministic
   (pf_cudnn.deterministic; cuDNN's others may round differently from call to call). Returns
   0, or -1 with err. */
int pf_cugraph_backward_input(pf_cugraph *g, const pf_cugraph_env *env, const float *dout,
                              const float *const *dtaps, float *dx, char *err, size_t errlen);

/* The last pf_cugraph_train_step's output image and target on the device (the generator's
   output for the discriminator, as the CPU's pf_model_train_output): *pred = out / range +
   mean and *gt = gt / 255, each N OT x 3 x Hs x Ws NCHW floats (OT = pf_cugraph_out_frames;
   dims gets N OT, 3, Hs, Ws);
   valid until the next training forward. -1 when the last training forward was no
   pf_cugraph_train_step (none, or a float one). */
int pf_cugraph_train_output(const pf_cugraph *g, const float **pred, const float **gt,
                            int dims[4]);

#ifdef __cplusplus
}
#endif
#endif
