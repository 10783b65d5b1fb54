/*  model — the CPU model: a super-resolution network built from the config by its
    `model.type` (every row of common/networks.h; the builders and their references are in
    nn/zoo.c, docs/models.md), with explicit forward and backward, parameters and gradients
    each in one flat float buffer (llm.c style), so one optimiser pass and one all-reduce
    cover them all. Parameter names are the reference implementation's state_dict names
    ("conv_first.weight", "body.0.conv1.weight", "upsample.0.weight", ...); conv weights are
    OIHW.

    Images enter as uint8 NHWC (what loaders send) and are converted to float lq / 255 in the
    layout the CPU executor's planner chose for the first layer (nn/cpu/layout.c: plain NCHW
    or oneDNN's blocked nChw8c / nChw16c, or NHWC); convolutions run in oneDNN (nn/cpu) with
    activations kept in those layouts between layers.
*/
#ifndef PF_MODEL_H
#define PF_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "common/config.h"
#include "nn/param_info.h"

typedef struct pf_model pf_model;

/* Build the network cfg->model_type with cfg's hyper-parameters, its convolutions in the
   config's precisions (pf_model_set_precision: train_cfg.precision for the training plan,
   test_cfg.precision for inference). Returns NULL with err on an unsupported type or scale,
   or bf16 on a CPU without a bf16 unit (the message names the key: train_cfg.precision when
   it is bf16, else test_cfg.precision). Parameters start zeroed; call pf_model_init. */
pf_model *pf_model_new(const pf_config *cfg, char *err, size_t errlen);

/* pf_model_new for a model that only infers (evaluation, `pixflow test`, `pixflow upscale`,
   export): train_cfg.precision is not applied (its training plan stays fp32), so a bf16
   training config is evaluated on any CPU its test_cfg.precision allows. */
pf_model *pf_model_new_infer(const pf_config *cfg, char *err, size_t errlen);
void pf_model_destroy(pf_model **self);

/* A model of a description the caller built (nn/net.h: a discriminator, a feature extractor
   for a perceptual loss; any output channel count, taps), taken over: *net is moved into the
   model and left empty (pf_net_init), also on failure, when it is freed. conv_algorithm as
   the config key (NULL or "": auto). No loss of its own and no model.type: pf_model_train_step
   refuses it; pf_model_infer takes it when its output has 3 channels per input frame.
   Parameters start zeroed (pf_model_init draws them by net's init). Its training plan can
   give the gradient with respect to the input (pf_model_backward_from's dx_nhwc): for that
   it also keeps the first convolutions' backward-data primitives; a backward without dx costs
   what it costs a zoo model. Returns NULL with err (net refused by pf_net_check_desc, out of
   memory, bad conv_algorithm). */
struct pf_net;
pf_model *pf_model_new_net(struct pf_net *net, const char *conv_algorithm, char *err,
                           size_t errlen);

/* Mixed precision (nn/cpu/dnnl_ctx.h pf_precision: bf16 convolutions with fp32 accumulation,
   everything else fp32; parameters, gradients and checkpoints stay fp32): `train` for the
   training plan, `infer` for inference and evaluation. pf_model_new sets both from the
   config's train_cfg.precision / test_cfg.precision; callers change them here, before the
   model's first step, forward or inference (after it: -1, "set before the first step").
   bf16 where the CPU has no bf16 unit is refused with pf_dnnl_set_precision's message naming
   `what` (e.g. "train_cfg.precision"). 0, or -1 with err. */
int pf_model_set_precision(pf_model *m, int train, int infer, const char *what, char *err,
                           size_t errlen);

/* One line for the start-up log on what the model's convolutions run: the precision of each
   plan ("train", "eval", and "clip" once a video clip network is built), the CPU's bf16 unit
   (pf_dnnl_bf16_isa: "avx512_core_bf16", "avx512_core_amx"; after a bf16 plan, else at the
   end: "bf16 unit <unit>" or "no bf16 unit (oneDNN ISA <isa>)") and, for plans already set
   up, how many convolutions and the oneDNN kernels they run in any direction, each with the
   number of convolutions running it, e.g. "train bf16 on avx512_core_bf16: 34 convolutions
   jit_bf16:avx512_core_bf16 (34); eval bf16 on avx512_core_bf16" or "train fp32: 8
   convolutions jit:avx512_core (2), jit_wino_4x3:avx512_core (6); eval fp32; bf16 unit
   avx512_core_bf16". Writes at most len bytes (NUL-terminated) into buf and returns buf. */
char *pf_model_precision_report(const pf_model *m, char *buf, size_t len);

/* A training forward of float input x: n x h x w x C NHWC (C the input tensor's channels; 3 T
   channels as n x T x h x w x 3), read as pf_graph_forward_f32 reads it (as is, nominally
   [0, 1]; the PF_G_INPUT node then applies the description's mean and range). Keeps the
   output and the taps (pf_model_read) and what backward reads. Any model (a zoo model: its
   float LQ, e.g. uint8 / 255.0f for pf_model_train_step's bits). Returns 0, or -1 with err. */
int pf_model_forward_train_f32(pf_model *m, const float *x, int n, int h, int w, char *err,
                               size_t errlen);

/* An eval forward (torch's module.eval(): BatchNorm2d with its running statistics, nothing
   updated) of x as pf_model_forward_train_f32 takes it, on the inference plan; out gets the
   output N x C x H x W plain NCHW (pf_model_shape's C, H, W for this size). Image networks
   (a video network: -1 with err). Returns 0, or -1 with err. */
int pf_model_forward_eval_f32(pf_model *m, const float *x, int n, int h, int w, float *out,
                              char *err, size_t errlen);

/* The BatchNorm2d layers' running statistics (nn/net.h PF_G_BATCHNORM: for each layer in node
   order, running_mean then running_var, C floats each; net->n_running floats, reset by
   pf_net_bn_init at creation) and num_batches_tracked (one int64 a layer). The model's own,
   updated by every training forward; the caller may write them (a checkpoint). */
float *pf_model_running(pf_model *m);
int64_t *pf_model_tracked(pf_model *m);

/* N, C, H, W of the last pf_model_forward_train_f32's output (which -1) or tap `which`
   (0..n_taps-1) into dims. Returns 0, or -1 when no such forward ran or which is out of
   range. */
int pf_model_shape(const pf_model *m, int which, int dims[4]);

/* That output (which -1) or tap as N x C x H x W plain NCHW floats (real channels, whatever
   layout the planner chose), raw activations: no mean or range applied. Returns 0, or -1 as
   pf_model_shape. */
int pf_model_read(const pf_model *m, int which, float *nchw);

/* Backward of the last pf_model_forward_train_f32 for the scalar loss whose gradients the
   caller gives in pf_model_shape's shapes, plain NCHW: dout_nchw for the output, dtaps[k] for
   tap k (NULL, or a NULL entry: zero; nothing is computed for what only zeros reach).
   Parameter gradients are overwritten into pf_model_grads (as pf_model_train_step's);
   dx_nhwc (NULL: not wanted) gets d loss / d x in x's shape (n x h x w x C NHWC), the chain
   rule through the input node's (x - mean) * range included (a model from pf_model_new gives
   none: -1 with err). Returns 0, or -1 with err. */
int pf_model_backward_from(pf_model *m, const float *dout_nchw, const float *const *dtaps,
                           float *dx_nhwc, char *err, size_t errlen);

/* pf_model_backward_from for d loss / d x alone: a network the caller does not train at this
   step (the VGG features of a perceptual loss; the discriminator in a GAN's generator step),
   so nothing is spent on parameter gradients (every convolution's backward-weights and bias
   sums, PReLU's d alpha: about a third of VGG19's backward). dx_nhwc is required (NULL: -1
   with err) and bit-identical to pf_model_backward_from's for the same forward and seeds;
   pf_model_grads is not written (it keeps what it held). A model from pf_model_new_net only
   (pf_model_new: -1 with err). Returns 0, or -1 with err. */
int pf_model_backward_input(pf_model *m, const float *dout_nchw, const float *const *dtaps,
                            float *dx_nhwc, char *err, size_t errlen);

/* PyTorch's default initialisation for nn.Conv2d (kaiming_uniform a=sqrt(5), bias
   U(-1/sqrt(fan_in), 1/sqrt(fan_in))), drawn from a counter-based RNG keyed by `seed`, so the
   same seed gives the same weights on any machine. */
void pf_model_init(pf_model *m, uint64_t seed);

size_t pf_model_num_params(const pf_model *m);
float *pf_model_params(pf_model *m);
float *pf_model_grads(pf_model *m);
int pf_model_num_tensors(const pf_model *m);
const pf_param_info *pf_model_tensor_info(const pf_model *m, int i);
/* The network's description (nn/net.h; its parameter table, for the checkpoint functions of
   nn/checkpoint.h) and the config the model was built from. */
struct pf_net;
const struct pf_net *pf_model_net(const pf_model *m);
const pf_config *pf_model_config(const pf_model *m);
/* The network's buffers (constant state_dict tensors that are not parameters, e.g. BasicVSR's
   spynet.mean and spynet.std; nn/net.h pf_net_buffer): how many, and buffer i (NULL when out
   of range). */
struct pf_net_buffer;
int pf_model_num_buffers(const pf_model *m);
const struct pf_net_buffer *pf_model_buffer(const pf_model *m, int i);

/* One training step's forward + loss + backward. lq: n x lq_h x lq_w x 3 uint8, gt: n x
   (lq_h*scale) x (lq_w*scale) x 3 uint8 (NHWC); a video network's samples hold frames:
   lq n x pf_model_frames x lq_h x lq_w x 3, gt n x pf_model_out_frames x (lq_h*scale) x
   (lq_w*scale) x 3 (EDVR: num_frame LQ frames and the center frame's GT, one frame per
   sample; its lq_h, lq_w multiples of 4). Gradients are overwritten (not accumulated).
   *loss = cfg's loss (mean over all elements) * loss_weight. Returns 0, or -1 with err.
   Buffers are (re)allocated when the shape changes. */
int pf_model_train_step(pf_model *m, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                        int lq_w, float *loss, char *err, size_t errlen);

/* The network output of the last pf_model_train_step for its first n samples (1 <= n <= that
   step's batch): out is n x (lq_h*scale) x (lq_w*scale) x 3 float NHWC (times
   pf_model_out_frames frames per sample: a video network's), values nominally
   [0, 1], not clamped (what pf_model_infer would give for those inputs with the weights before
   the optimiser step). Costs a layout conversion only, no forward pass. Returns 0, or -1 when
   no training step has run or n is out of range. */
int pf_model_train_output(const pf_model *m, int n, float *out);

/* Inference of one image: lq h x w x 3 uint8 HWC -> out (h*scale) x (w*scale) x 3 float HWC,
   values nominally [0, 1], not clamped. Returns 0 or -1 with err. */
int pf_model_infer(pf_model *m, const uint8_t *lq, int h, int w, float *out, char *err,
                   size_t errlen);

/* The same with a float input: lq h x w x 3 float HWC taken as is, nominally [0, 1] (a 16-bit
   image's v / 65535), where pf_model_infer reads uint8 v as v / 255. Image networks only (a
   video network: -1 with err). For uint8 values v / 255.0f it gives pf_model_infer's bits. */
int pf_model_infer_f32(pf_model *m, const float *lq, int h, int w, float *out, char *err,
                       size_t errlen);

/* Frames one network input holds: 1 for the image networks; for a recurrent video network
   (BasicVSR) the training clip length, data.train.num_frame (1 without a video data.train);
   for a sliding-window network (EDVR) its window, model.num_frame. Training steps take
   n x frames x H x W x 3 LQ (frame-major per sample). */
int pf_model_frames(const pf_model *m);

/* Frames one network output holds: pf_model_frames for a recurrent video network (every
   frame of the clip), 1 for the image networks and a sliding-window network (the center
   frame's SR). Training steps take GT and pf_model_train_output gives n x out_frames x (H
   scale) x (W scale) x 3, and the loss is the mean over all output frames. */
int pf_model_out_frames(const pf_model *m);

/* Whether the network is a video network (inputs are clips: pf_model_infer_clip, or windows
   of one: pf_model_infer_window). */
int pf_model_is_video(const pf_model *m);

/* Whether it is a sliding-window video network (EDVR, common/networks.h video 2): num_frame
   LQ frames in (pf_model_frames), one frame out, the SR of the window's center frame
   (model.center_frame_idx, num_frame / 2 by default); its evaluation runs
   pf_model_infer_window once per frame (BasicSR's VideoTestDataset windows). */
int pf_model_is_window(const pf_model *m);

/* Inference of one window of a sliding-window network: lq pf_model_frames(m) x h x w x 3 uint8
   (frame-major, HWC; h and w multiples of pf_model_input_multiple, 4 for EDVR) -> out (h*scale)
   x (w*scale) x 3 float HWC, the center frame's SR, values nominally [0, 1], not clamped.
   Returns 0, or -1 with err (not a window network, a size not a multiple of 4). */
int pf_model_infer_window(pf_model *m, const uint8_t *lq, int h, int w, float *out,
                          char *err, size_t errlen);

/* Inference of a clip of t frames (t >= 1): lq t x h x w x 3 uint8 (frame-major, HWC) ->
   out t x (h*scale) x (w*scale) x 3 float HWC, values nominally [0, 1], not clamped. An
   image network runs each frame on its own (pf_model_infer); a video network runs the whole
   clip as one recurrent pass (its graph unrolled over t frames, 1 <= t <= PF_MODEL_MAX_CLIP,
   built when t or the frame size changes): callers split longer clips into windows
   (hooks/evaluate.c). A sliding-window network (pf_model_is_window) refuses it: -1 with err
   naming pf_model_infer_window. Returns 0 or -1 with err. */
#define PF_MODEL_MAX_CLIP 64
int pf_model_infer_clip(pf_model *m, const uint8_t *lq, int t, int h, int w, float *out,
                        char *err, size_t errlen);

int pf_model_scale(const pf_model *m);

/* LQ height and width must be multiples of this (RRDBNet x2 pixel-unshuffles its input by 2;
   1 for every other network). Evaluation pads to it; tiles are aligned to it. */
int pf_model_input_multiple(const pf_model *m);

/* Set the CPU backend's compute threads (the OpenMP pool oneDNN and the graph kernels share)
   to `n` (1..PF_MAX_THREADS; a `--threads` value, parsed by pf_arg_int). Also exported as
   OMP_NUM_THREADS to the processes started after it. Without it the pool has OMP_NUM_THREADS
   threads (default: all cores). */
#define PF_MAX_THREADS 1024
void pf_set_threads(int n);

/* The network cfg describes, in one line: its type and every model: key that shapes a
   tensor, as the resolved config has them ("EDSR, scale 2, n_feats 32, n_blocks 4"). Returns
   0, or -1 when out of memory (buf then holds the type alone). */
int pf_model_describe(const pf_config *cfg, char *buf, size_t len);

/* Whether a safetensors file's tensors fit the model by reference name: pf_ckpt_check_net
   (nn/checkpoint.h) on the model's description. This and the two loaders below are
   implemented in nn/checkpoint.c (which includes this header, not the other way round). Tensors named PF_EMA_PREFIX + name are a
   checkpoint's EMA weights. Returns 0, or -1 with err. */
#define PF_EMA_PREFIX "params_ema."
struct pf_safetensors;
int pf_model_check_weights(const pf_model *m, const struct pf_safetensors *st, char *err,
                           size_t errlen);

/* Copy weights from a safetensors file's tensors into the model, by reference name, after
   the check (pf_ckpt_load_net on the model's description and parameters; on a mismatch err
   gets the check's message and the model is untouched). Returns 0 or -1. */
int pf_model_load_weights(pf_model *m, const struct pf_safetensors *st, char *err,
                          size_t errlen);

/* BasicVSR: copy SPyNet's weights from the safetensors file `path` (model.spynet_pretrained)
   into the model (pf_ckpt_load_spynet on its description and parameters). Returns 0, or -1
   with err. */
int pf_model_load_spynet(pf_model *m, const char *path, char *err, size_t errlen);
#endif
