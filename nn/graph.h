/*  graph — the CPU executor's API: runs a network description (nn/net.h) for one input shape
    with oneDNN convolutions (nn/cpu/conv_dnnl.h) and the C kernels of nn/cpu/ops.h (OpenMP)
    for the other nodes: forward in node order, backward in reverse (a tape). nn/model.c owns
    the description, the flat parameter buffers and the convolution layers, and calls this.
    Implemented in nn/cpu/: graph_cpu.c (buffers, dispatch, gradient pool, profiling) and
    layout.c (the layout planner), sharing the plan state of nn/cpu/graph_internal.h.

    Tensors are N x C x H x W floats in the layouts of nn/cpu/dnnl_ctx.h (nchw, nChw8c,
    nChw16c, NHWC), padding channels always zero. Layouts are chosen at plan time, in two
    steps (nn/cpu/layout.c, "layout groups"): first a convolution takes its input's layout and lets
    oneDNN choose its output's (a 4-7 channel feature map is kept blocked where oneDNN would
    pick plain NCHW), element-wise nodes keep their first input's (the video nodes, whose
    kernels take any layout on each side, too, or their tensor's label from the second
    step); then, if some convolution is
    left without JIT kernels in a direction it runs, the groups of tensors that must share a
    layout are relabelled to the layouts that cost least, and a convolution whose neighbours
    cannot give it a layout its fast kernels take converts its input or output (one oneDNN
    reorder each way). Nothing else is reordered between layers. Convolutions may fuse ReLU /
    LeakyReLU and a residual add.

    Memory: a training plan keeps the tensors backward reads (pf_net_backward_reads_*; the
    others share slots as in inference); their gradients come from a pool by liveness
    (nn/cpu/graph_internal.h, pf_gstate: from a tensor's first gradient write to its producer's backward, a gradient
    passed on unchanged sharing its slot; backward's temporaries too); an inference plan lets a
    tensor reuse the buffer of one that is dead (pf_net_assign_slots), so the peak is a few
    feature maps whatever the depth.
*/
#ifndef PF_GRAPH_H
#define PF_GRAPH_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "nn/cpu/conv_dnnl.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/net.h"

/* What a plan runs with, owned by the caller (nn/model.c). */
typedef struct {
    const pf_net *net;
    pf_dnnl *dnnl;
    pf_conv *convs;             /* net->n_convs layers (pf_graph_conv_init), this plan's kind
                                   of primitives (training or inference) */
    const float *params;        /* flat parameters, net->n_params */
    float *grads;               /* flat gradients (training; overwritten by backward, not
                                   written by pf_graph_backward_input) */
    float *sub_dw;              /* FSRCNN: gradients of the sub-pixel layer's weights + bias
                                   (pf_net_sub_numel floats); NULL without one */
    int input_grad;             /* training plans: backward may be asked for d loss / d input
                                   (pf_graph_backward_from); 0: never (no extra work or memory) */
    float *running;             /* BatchNorm2d running statistics (net->n_running floats, see
                                   PF_G_BATCHNORM): a training forward updates them, an
                                   inference forward reads them; NULL without such a layer */
    int64_t *tracked;           /* their num_batches_tracked (net->n_bn), + 1 a training
                                   forward */
} pf_gctx;

/* Per-shape state: layouts, buffers, gradients. */
typedef struct pf_gstate pf_gstate;

/* Set up conv layer i of the description (name, channels, kernel, fused activation, the
   residual of its node) in c, without primitives (pf_conv_setup makes them at plan time). */
void pf_graph_conv_init(const pf_net *net, int i, pf_conv *c);

/* Plan x->net for LQ n x h x w (training: keep what backward reads, gradients). *out gets the
   new state (NULL on error). A training plan with x->input_grad also plans the gradients of
   the tensors downstream of the input (pf_net_need_input_grad) and refuses a network that
   reads its image through a node without a gradient (bilinear / bicubic input). Returns 0 or
   -1 with err. */
int pf_graph_plan(const pf_gctx *x, pf_gstate **out, int n, int h, int w, int training,
                  char *err, size_t errlen);
/* Forward of lq (n x h x w x 3 uint8 NHWC, the plan's shape; for an input of 3 T channels
   n x T x h x w x 3, frame t's colour c into channel 3 t + c) through every node; queued on
   x->dnnl's stream. */
int pf_graph_forward(const pf_gctx *x, pf_gstate *S, const uint8_t *lq, char *err,
                     size_t errlen);
/* The same with a float input, lq as is (nominally [0, 1]; a 16-bit image's v / 65535) where
   pf_graph_forward reads uint8 v as v / 255. */
int pf_graph_forward_f32(const pf_gctx *x, pf_gstate *S, const float *lq, char *err,
                         size_t errlen);
/* Backward from pf_gstate_dout (set by the loss) into x->grads (overwritten). */
int pf_graph_backward(const pf_gctx *x, pf_gstate *S, char *err, size_t errlen);
/* Backward from gradients the caller gives in plain NCHW (N x C x H x W floats, real channels
   only, whatever the plan's layouts; pf_graph_read's shapes): dout for the output, dtaps[k]
   for tap k of x->net (nn/net.h pf_net_add_tap); dout NULL, dtaps NULL or an entry NULL:
   zero, and the nodes nothing flows back through are skipped. Parameter gradients are
   overwritten into x->grads as pf_graph_backward does. dx (NULL: not wanted): d loss / d
   input, n x h x w x C floats NHWC (for 3 T channels n x T x h x w x 3), the input as
   pf_graph_forward_f32 reads it, i.e. through the PF_G_INPUT node's (lq - mean) * range
   (range only with net->use_mean, as the node applies it); needs a plan made with
   x->input_grad, else -1 with err. Returns 0, or -1 with err. */
int pf_graph_backward_from(const pf_gctx *x, pf_gstate *S, const float *dout,
                           const float *const *dtaps, float *dx, char *err, size_t errlen);
/* The same for d loss / d input alone, for a network whose parameters the step does not
   train here (a frozen feature extractor, a discriminator in the generator's step): dx must
   be given (NULL: -1 with err) and the plan made with x->input_grad. No parameter gradient is
   computed (no convolution's backward-weights nor bias sums, no PReLU's d alpha) and x->grads
   (and x->sub_dw) are not written: they keep what they held. Only the tensors downstream of
   the input get gradients (pf_net_need_input_only). dx is bit-identical to
   pf_graph_backward_from's for the same forward and seeds. Returns 0, or -1 with err. */
int pf_graph_backward_input(const pf_gctx *x, pf_gstate *S, const float *dout,
                            const float *const *dtaps, float *dx, char *err, size_t errlen);
/* Tensor t (the output or a tap; -1 for others) of the last forward of plan S, N x C x H x W
   plain NCHW floats into nchw (real channels). Its sizes: pf_gstate_shape. 0 or -1. */
int pf_graph_read(const pf_gctx *x, const pf_gstate *S, int t, float *nchw);
/* dims[0..3] = N, C, H, W of tensor t in plan S. */
void pf_gstate_shape(const pf_gctx *x, const pf_gstate *S, int t, int dims[4]);
void pf_gstate_free(pf_gstate **s);

/* Profiling for benchmarks: with the environment variable PF_GRAPH_PROFILE set (read once),
   pf_graph_forward and pf_graph_backward time every node (wall clock) and add it to a
   per-process table by op (convolutions by kernel size); pf_graph_profile_print writes the
   table (ms per call of pf_graph_forward / _backward, per op, largest first) to f and
   clears it. Without the variable nothing is timed. */
void pf_graph_profile_print(FILE *f);

/* The plan's output activation (3 channels, or 3 T for T frames; layout block *block of
   nn/cpu/dnnl_ctx.h), and
   (training) its gradient buffer, which the loss fills. */
float *pf_gstate_out(const pf_gstate *S, int *block);
float *pf_gstate_dout(const pf_gstate *S);

/* Diagnosis (tests): a convolution of a plan that runs on other layouts than its tensors' and
   converts them (nn/cpu/layout.c, "layout groups"). Blocks as in nn/cpu/dnnl_ctx.h; run_* is 0 on a
   side that is not converted. */
typedef struct {
    int conv;                   /* layer index */
    int in_block, run_src;      /* its input's block, the block it runs on */
    int out_block, run_dst;     /* likewise for its output */
} pf_gconversion;

/* The conversions of plan S of net: up to max into out; returns how many there are. */
int pf_graph_conversions(const pf_net *net, const pf_gstate *S, pf_gconversion *out, int max);
#endif
