/*  model_cuda — a super-resolution network on one CUDA device: training step (forward, loss,
    backward) and inference. The GPU counterpart of nn/model.h, and deliberately the same shape
    of API, so the worker can pick either by --device. Every model.type runs on the CUDA
    executor (nn/cuda/graph_cuda.h) over the description nn/zoo.c builds for the CPU too
    (nn/net.h); this file owns the device buffers, the stream, cuDNN and the staging.

    Parameters and gradients: one flat device buffer each, with EXACTLY the layout of the CPU
    model for the same config (pf_model_tensor_info: the description's parameter table, with
    the reference implementations' names). So a host copy of the buffer is a CPU model's
    parameter buffer, and checkpoints carry over in both directions.

    Precision: FP32 storage; allow_tf32 lets cuDNN use TF32 tensor cores in the convolutions
    (as torch.backends.cudnn.allow_tf32), otherwise strict FP32 FMA kernels. bf16 mixed
    precision (pf_cuda_model_set_precision): the convolutions in bf16 with fp32 accumulation
    (nn/cuda/conv_cudnn.h), everything else, parameters, gradients and the optimiser fp32.

    Threading and streams: every call must come from one host thread at a time. All work is
    queued on the model's own (non-blocking) stream, pf_cuda_model_stream(); train_step, infer
    and the host copies synchronise it before returning, so an execution fault is reported by
    the call that caused it. Device-pointer users (Adam, an NCCL all-reduce) must queue on
    that stream or synchronise with it.

    Errors: functions return 0 (or a pointer), or -1 (NULL) with err naming the layer or node
    and the CUDA / cuDNN call, e.g. "body.3.conv2: cudnnConvolutionBackwardData: ...".
*/
#ifndef PF_MODEL_CUDA_H
#define PF_MODEL_CUDA_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "common/config.h"
#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_cuda_model pf_cuda_model;

/* Build cfg->model_type on CUDA device `device` (cudaSetDevice'd here and by every call that
   touches it). Any model_type of nn/model.h; NULL with err for an unknown type or bad
   hyper-parameters (pf_net_build's message). allow_tf32: see above. Parameters start at zero: upload with pf_cuda_model_set_params (e.g. from a CPU
   model after pf_model_init, so both backends start from the same seeded weights). */
pf_cuda_model *pf_cuda_model_new(const pf_config *cfg, int device, int allow_tf32, char *err,
                                 size_t errlen);

/* A model of a description the caller built (nn/net.h: a discriminator, a perceptual loss's
   VGG; any output channel count, taps), as pf_model_new_net: *net is taken over (left empty,
   also on failure, when it is freed). No loss of its own: pf_cuda_model_train_step refuses
   it, pf_cuda_model_infer takes it when its output has 3 channels per frame; it runs
   pf_cuda_model_forward_train_f32 and the backwards below. Parameters start at zero. NULL
   with err (a device, memory or cuDNN failure). */
struct pf_net;
pf_cuda_model *pf_cuda_model_new_net(struct pf_net *net, int device, int allow_tf32, char *err,
                                     size_t errlen);

/* Mixed precision, as pf_model_set_precision (nn/model.h; PF_PREC_FP32 / PF_PREC_BF16 of
   nn/precision.h): `train` for the training plan (train_step, forward_train_f32 and the
   backwards), `infer` for pf_cuda_model_infer. bf16 = torch.autocast("cuda", bfloat16) for
   the convolutions (conv_cudnn.h "bf16"). Both start fp32 (pf_cuda_model_new reads no
   precision key). Call before the model's first step, forward or inference (after it: -1,
   "set before the first step"). bf16 on a device of compute capability below 8.0 is refused
   naming `what` (e.g. "train_cfg.precision") and the device. 0, or -1 with err. */
int pf_cuda_model_set_precision(pf_cuda_model *m, int train, int infer, const char *what,
                                char *err, size_t errlen);

/* Free everything (device buffers, cuDNN state, pinned staging); nulls *self. */
void pf_cuda_model_destroy(pf_cuda_model **self);

size_t pf_cuda_model_num_params(const pf_cuda_model *m);
int pf_cuda_model_num_tensors(const pf_cuda_model *m);
/* Name, offset, numel and shape of tensor i (0 .. num_tensors-1), as pf_model_tensor_info;
   NULL when out of range. */
const pf_param_info *pf_cuda_model_tensor_info(const pf_cuda_model *m, int i);
int pf_cuda_model_scale(const pf_cuda_model *m);

/* Copy num_params host floats (the CPU model's layout) to the device parameters / from the
   device parameters / from the device gradients. Synchronous. Returns 0 or -1 with err. */
int pf_cuda_model_set_params(pf_cuda_model *m, const float *host_params, char *err,
                             size_t errlen);
int pf_cuda_model_get_params(pf_cuda_model *m, float *host_params, char *err, size_t errlen);
int pf_cuda_model_get_grads(pf_cuda_model *m, float *host_grads, char *err, size_t errlen);

/* The BatchNorm2d layers' state, as pf_model_running / pf_model_tracked (nn/model.h): the
   running statistics (for each layer in node order running_mean then running_var, C floats
   each; num_running floats in all, 0 without BatchNorm2d) live on the device and are copied
   to / from the host here (synchronous; 0 or -1 with err); num_batches_tracked (one int64 a
   layer) is the model's host array, + 1 a training step. Both start as torch's
   reset_running_stats (pf_net_bn_init): mean 0, var 1, tracked 0. */
size_t pf_cuda_model_num_running(const pf_cuda_model *m);
int pf_cuda_model_get_running(pf_cuda_model *m, float *host_running, char *err,
                              size_t errlen);
int pf_cuda_model_set_running(pf_cuda_model *m, const float *host_running, char *err,
                              size_t errlen);
int64_t *pf_cuda_model_tracked(pf_cuda_model *m);

/* The flat device buffers themselves (num_params floats each) and the stream their work is
   queued on, for an optimiser or all-reduce on the device. */
float *pf_cuda_model_params_device(pf_cuda_model *m);
float *pf_cuda_model_grads_device(pf_cuda_model *m);
cudaStream_t pf_cuda_model_stream(pf_cuda_model *m);

/* One training step, as pf_model_train_step: lq n x lq_h x lq_w x 3 uint8 NHWC (host), gt
   n x (lq_h*scale) x (lq_w*scale) x 3 uint8 NHWC (host); for a video network each LQ sample
   is T = pf_cuda_model_frames frames and each GT sample OT = pf_cuda_model_out_frames frames,
   frame-major (lq n x T x ..., gt n x OT x ...), as pf_model's: BasicVSR / BasicVSR++ OT = T,
   EDVR (a sliding-window network) num_frame LQ frames and OT = 1, the center frame's GT, lq_h
   and lq_w multiples of 4. Both are copied into a pinned
   staging buffer (kept between calls, regrown when the shape grows) and uploaded; the
   conversion to float happens on the device. Forward, loss (cfg->loss_type: L1Loss,
   MSELoss or CharbonnierLoss with charbonnier_eps, mean over all n*OT*3*H*W values, times
   loss_weight), backward. Gradients are overwritten, not accumulated. *loss is
   the loss value. Buffers and cuDNN algorithms are (re)built when the shape changes.
   Synchronises before returning. Returns 0 or -1 with err. */
int pf_cuda_model_train_step(pf_cuda_model *m, const uint8_t *lq, const uint8_t *gt, int n,
                             int lq_h, int lq_w, float *loss, char *err, size_t errlen);

/* LQ frames per sample (1 for an image network; a video network's unrolled length, or a
   sliding-window network's window, EDVR's model.num_frame), as pf_model_frames; output (and
   GT) frames per sample, as pf_model_out_frames (T for a recurrent network, 1 otherwise). */
int pf_cuda_model_frames(const pf_cuda_model *m);
int pf_cuda_model_out_frames(const pf_cuda_model *m);

/* Inference of one image, as pf_model_infer: lq h x w x 3 uint8 HWC (host) -> out_host
   (h*scale) x (w*scale) x 3 float HWC (host), nominally [0, 1], not clamped. A video network
   takes a clip of exactly pf_cuda_model_frames frames (T x h x w x 3 -> OT x H x W x 3, OT =
   pf_cuda_model_out_frames: a recurrent network's every frame, as pf_model_infer_clip; a
   sliding-window network's center frame, as pf_model_infer_window: h and w multiples of 4,
   else -1 with the CPU model's "must be multiples of 4"). Uses its own
   buffers (dead activations share memory) and algorithms, rebuilt when the size changes.
   Returns 0 or -1 with err. */
int pf_cuda_model_infer(pf_cuda_model *m, const uint8_t *lq, int h, int w, float *out_host,
                        char *err, size_t errlen);

/* Device bytes of the current training (training = 1) or inference plan (activations,
   gradients, temporaries, the uploaded batch; not parameters or cuDNN's workspace). */
size_t pf_cuda_model_plan_bytes(const pf_cuda_model *m, int training);

/* Float input, taps and given gradients on device pointers (nn/model.h's
   pf_model_forward_train_f32, pf_model_read, pf_model_backward_from / _input; semantics,
   shapes (plain NCHW on both sides) and errors: nn/cuda/graph_cuda.h's pf_cugraph_* of the
   same names). The calls synchronise the model's stream before returning (the caller's
   device buffers may then be reused); set_input_grad and tap queue nothing. tap returns the
   output (which -1) or tap `which` of the last training forward, its sizes in dims, valid
   until the next training forward; NULL when there is none. */
void pf_cuda_model_set_input_grad(pf_cuda_model *m, int on);
int pf_cuda_model_forward_train_f32(pf_cuda_model *m, const float *x, int n, int h, int w,
                                    char *err, size_t errlen);
const float *pf_cuda_model_tap(const pf_cuda_model *m, int which, int dims[4]);
int pf_cuda_model_backward_from(pf_cuda_model *m, const float *dout, const float *const *dtaps,
                                float *dx, char *err, size_t errlen);
int pf_cuda_model_backward_input(pf_cuda_model *m, const float *dout, const float *const *dtaps,
                                 float *dx, char *err, size_t errlen);

/* The optimiser is nn/cuda/optim_cuda.h, over pf_cuda_model_params_device and
   pf_cuda_model_grads_device on pf_cuda_model_stream. */

#ifdef __cplusplus
}
#endif
#endif
