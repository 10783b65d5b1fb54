/*  model_internal — the pf_model struct (nn/model.c), for the tests that look inside a model's
    plans (tests/test_layouts.c, tests/test_conv_kernels.c). Not part of the public API.
*/
#ifndef PF_MODEL_INTERNAL_H
#define PF_MODEL_INTERNAL_H
#include "common/config.h"
#include "nn/cpu/conv_dnnl.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/net.h"

/* The CPU executor's state for one input shape. */
typedef struct {
    int n, h, w;                /* LQ batch shape it is for; 0 = not built */
    pf_gstate *g;
} pf_plan;

/* A video network's inference network for clips of t frames (pf_model_infer_clip): the same
   parameters, its own unrolled description, layers and plan. */
typedef struct {
    int t;                      /* frames; 0 = none built */
    pf_net net;
    pf_conv *conv;              /* net.n_convs layers with inference primitives */
    pf_plan plan;
    float *weights;             /* the params its primitives' weights came from (NULL: none) */
} pf_clip_net;

struct pf_model {
    pf_config cfg;              /* copy of the configuration it was built from */
    pf_net net;                 /* the description (nn/zoo.c) */
    float *params, *grads;      /* flat buffers, net.n_params floats each */
    float *sub_w, *sub_dw;      /* FSRCNN: the sub-pixel layer's weights + bias and their
                                   gradients (pf_net_sub_numel floats each) */
    float *infer_weights;       /* the params the inference primitives' weights were
                                   reordered from (NULL: none yet) */
    pf_conv *train_conv;        /* net.n_convs layers with training primitives */
    pf_conv *infer_conv;        /* the same layers with inference primitives */
    pf_loss loss;
    pf_dnnl dnnl;
    pf_plan train, infer;
    int video;                  /* a video network (BasicVSR, EDVR): inputs are clips */
    int frames;                 /* frames of the training network's input (1: images) */
    int out_frames;             /* frames of its output: frames (recurrent), 1 (images, a
                                   sliding-window network) */
    int window;                 /* a sliding-window network (EDVR): frames in, 1 out */
    pf_clip_net clip;           /* video: the network pf_model_infer_clip last ran */
    int from_net;               /* built by pf_model_new_net: no loss; its training plan can
                                   give the input's gradient (pf_gctx.input_grad) */
    int fwd_f32;                /* the training plan holds a pf_model_forward_train_f32 */
    float *running;             /* BatchNorm2d running statistics (net.n_running floats) */
    int64_t *tracked;           /* their num_batches_tracked (net.n_bn) */
};
#endif
