/*  model_cuda — a super-resolution network on one CUDA device: training step (forward, loss,
    backward) and inference, built from nn/cuda/ops.h kernels and nn/cuda/conv_cudnn.h
    convolutions. The GPU counterpart of nn/model.h, and deliberately the same shape of API, so
    the worker can pick either by --device.

    Every network but EDSR (SRCNN, FSRCNN, ESPCN, MSRResNet, RCAN, RRDBNet) runs through
    nn/cuda/graph_cuda.h, which takes its description from the CPU builder; what follows
    describes EDSR, which has its own plan here. The parameter layout is the CPU model's in
    both cases.

    EDSR is BasicSR's basicsr/archs/edsr_arch.py exactly as nn/edsr.c computes it:

      x  = (lq / 255 - rgb_mean) * img_range
      f0 = conv_first(x)                                          3 -> C, 3x3
      a[i+1] = a[i] + res_scale * body.i.conv2(ReLU(body.i.conv1(a[i])))     a[0] = f0
      r  = conv_after_body(a[n_blocks]) + f0
      per upsample stage s: q = PixelShuffle(stage_r)(upsample.{2s}(q))      C -> C stage_r^2
                                          (x2: one stage r=2, x3: one stage r=3, x4: two r=2)
      y  = conv_last(q) / img_range + rgb_mean                    C -> 3

    Parameters and gradients: one flat device buffer each, with EXACTLY the layout of the CPU
    model for the same config (pf_model_tensor_info): per conv in state_dict order
    (conv_first, body.{i}.conv1, body.{i}.conv2, conv_after_body, upsample.0[, upsample.2],
    conv_last) name.weight (OIHW) then name.bias (O). So a host copy of the buffer is a CPU
    model's parameter buffer, and checkpoints carry over in both directions.

    Device layout: plain NCHW float32 activations. Training keeps every activation backward
    needs (llm.c style): x, f0, a[1..n_blocks], t[0..n_blocks-1] (ReLU(conv1) per block), r,
    the pixel shuffle outputs and the largest upsample conv output.

    Precision: FP32 storage; allow_tf32 lets cuDNN use TF32 tensor cores in the convolutions
    (as torch.backends.cudnn.allow_tf32), otherwise strict FP32 FMA kernels.

    Threading and streams: every call must come from one host thread at a time. All work is
    queued on the model's own (non-blocking) stream, pf_cuda_model_stream(); train_step, infer
    and the host copies synchronise it before returning, so an execution fault is reported by
    the call that caused it. Device-pointer users (Adam, an NCCL all-reduce) must queue on
    that stream or synchronise with it.

    Errors: functions return 0 (or a pointer), or -1 (NULL) with err naming the layer and the
    CUDA / cuDNN call, e.g. "body.3.conv2: cudnnConvolutionBackwardData: ...".
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
   hyper-parameters (the CPU builder's message). allow_tf32: see above. Parameters start at zero: upload with pf_cuda_model_set_params (e.g. from a CPU
   model after pf_model_init, so both backends start from the same seeded weights). */
pf_cuda_model *pf_cuda_model_new(const pf_config *cfg, int device, int allow_tf32, char *err,
                                 size_t errlen);

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

/* The flat device buffers themselves (num_params floats each) and the stream their work is
   queued on, for an optimiser or all-reduce on the device. */
float *pf_cuda_model_params_device(pf_cuda_model *m);
float *pf_cuda_model_grads_device(pf_cuda_model *m);
cudaStream_t pf_cuda_model_stream(pf_cuda_model *m);

/* One training step, as pf_model_train_step: lq n x lq_h x lq_w x 3 uint8 NHWC (host), gt
   n x (lq_h*scale) x (lq_w*scale) x 3 uint8 NHWC (host). Both are copied into a pinned
   staging buffer (kept between calls, regrown when the shape grows) and uploaded; the
   conversion to float happens on the device. Forward, loss (cfg->loss_type: L1Loss,
   MSELoss or CharbonnierLoss with charbonnier_eps, mean over all n*3*H*W values, times
   loss_weight), backward. Gradients are overwritten, not accumulated. *loss is
   the loss value. Buffers and cuDNN algorithms are (re)built when the shape changes.
   Synchronises before returning. Returns 0 or -1 with err. */
int pf_cuda_model_train_step(pf_cuda_model *m, const uint8_t *lq, const uint8_t *gt, int n,
                             int lq_h, int lq_w, float *loss, char *err, size_t errlen);

/* Inference of one image, as pf_model_infer: lq h x w x 3 uint8 HWC (host) -> out_host
   (h*scale) x (w*scale) x 3 float HWC (host), nominally [0, 1], not clamped. Uses its own
   buffers (dead activations share memory) and algorithms, rebuilt when the size changes.
   Returns 0 or -1 with err. */
int pf_cuda_model_infer(pf_cuda_model *m, const uint8_t *lq, int h, int w, float *out_host,
                        char *err, size_t errlen);

/* The optimiser is nn/cuda/optim_cuda.h, over pf_cuda_model_params_device and
   pf_cuda_model_grads_device on pf_cuda_model_stream. */

#ifdef __cplusplus
}
#endif
#endif
