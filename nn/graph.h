/*  graph — the networks of the model zoo (SRCNN, FSRCNN, ESPCN, MSRResNet, RCAN, RRDBNet) as a
    list of nodes over tensors, run forward in order and backward in reverse (a tape). EDSR
    keeps its hand-written plan (edsr.c); everything else is described here once by a builder
    (nn/zoo.c) and planned for each input shape.

    Tensors are N x C x H x W floats in the layouts of nn/cpu/dnnl_ctx.h (nchw, nChw8c,
    nChw16c, NHWC), padding channels always zero. A tensor's H x W is the LQ size times
    mul / div (1 x 1 for pooled tensors). Layouts are chosen at plan time, in two steps (graph.c,
    "layout groups"): first a convolution takes its input's layout and lets oneDNN choose its
    output's (a 4-7 channel feature map is kept blocked where oneDNN would pick plain NCHW),
    element-wise nodes keep their first input's; then, if some convolution is left without JIT
    kernels in a direction it runs, the groups of tensors that must share a layout are
    relabelled to the layouts that cost least, and a convolution whose neighbours cannot give
    it a layout its fast kernels take converts its input or output (one oneDNN reorder each
    way). Nothing else is reordered between layers. Convolutions may fuse ReLU / LeakyReLU and
    a residual add (nn/cpu/conv_dnnl.h).

    Memory: a training plan keeps the tensors backward reads (the others share slots as in
    inference); their gradients come from a pool by liveness
    (graph.c, pf_gstate: from a tensor's first gradient write to its producer's backward, a
    gradient passed on unchanged sharing its slot; backward's temporaries too); an inference
    plan lets a tensor reuse the buffer of one that is dead (liveness over the node order), so
    the peak is a few feature maps whatever the depth.
*/
#ifndef PF_GRAPH_H
#define PF_GRAPH_H
#include <stddef.h>
#include <stdint.h>
#include "nn/cpu/conv_dnnl.h"
#include "nn/cpu/eltwise_dnnl.h"

#define PF_G_MAX_IN 6

typedef enum {
    PF_G_INPUT,         /* out = (lq / 255 - mean) * range  (the graph's one input) */
    PF_G_CONV,          /* out = conv(in0) [ReLU / LeakyReLU] or in1 + scale * conv(in0) */
    PF_G_PRELU,         /* out = in0 > 0 ? in0 : a[c] * in0 (torch.nn.PReLU(C)) */
    PF_G_TANH,          /* out = tanh(in0) */
    PF_G_SIGMOID,       /* out = 1 / (1 + exp(-in0)) */
    PF_G_ADD,           /* out = in0 + scale * in1 */
    PF_G_GAP,           /* out (C x 1 x 1) = mean of in0 over H x W (AdaptiveAvgPool2d(1)) */
    PF_G_MUL_CH,        /* out = [in2 +] scale * in0 * in1[n][c]; in1 is C x 1 x 1 */
    PF_G_CONCAT,        /* out = torch.cat(in, 1) */
    PF_G_SHUFFLE,       /* PixelShuffle(r) */
    PF_G_UNSHUFFLE,     /* PixelUnshuffle(r) */
    PF_G_NEAREST,       /* F.interpolate(scale_factor=r, mode='nearest') */
    PF_G_BILINEAR_IN,   /* F.interpolate(lq / 255, scale_factor=r, mode='bilinear',
                           align_corners=False); no gradient */
    PF_G_BICUBIC_IN,    /* the same with mode='bicubic' (SRCNN's upsampler; nn/bicubic.c);
                           no gradient */
} pf_gop;

typedef struct {
    int c;              /* channels */
    int mul, div;       /* H = H_lq * mul / div (likewise W) */
    int one;            /* pooled: 1 x 1 */
} pf_gtensor;

typedef struct {
    pf_gop op;
    int in[PF_G_MAX_IN], n_in;  /* input tensor ids */
    int out;                    /* output tensor id */
    int conv;                   /* CONV: layer index in the model's conv arrays */
    int param;                  /* PRELU: index of its weight in the model's tensor table */
    float scale;                /* ADD, MUL_CH, CONV with residual */
    int r;                      /* SHUFFLE, UNSHUFFLE, NEAREST, BILINEAR_IN, BICUBIC_IN
                                   factor */
} pf_gnode;

typedef struct {
    pf_gtensor *t;
    int n_t, cap_t;
    pf_gnode *node;
    int n_node, cap_node;
    int input, output;          /* tensor ids */
    int use_mean;               /* input / output mean shift (EDSR-style); else mean NULL */
    float mean[3], range;       /* y = out / range + mean */
    int oom;                    /* an append failed; the builder reports it */
} pf_graph;

/* Building (nn/zoo.c). Each returns the new tensor id (or -1 after running out of memory, also
   recorded in g->oom). */
void pf_graph_init(pf_graph *g);
void pf_graph_free(pf_graph *g);
int pf_graph_tensor(pf_graph *g, int c, int mul, int div, int one);
int pf_graph_node(pf_graph *g, pf_gop op, const int *in, int n_in, int out_c, int out_mul,
                  int out_div, int out_one);

/* Inference buffer sharing, for the CPU plan and nn/cuda/graph_cuda.c: in node order, each
   node's output tensor takes the best-fitting free slot (or a new one, grown to fit), then the
   inputs whose last reader is this node are freed. ts: the caller's per-tensor records
   (g->n_t of `stride` bytes), each with, at the given byte offsets, a size_t numel (floats),
   an int last_use (index of the last node reading it; one past the last node for the graph's
   output) and an int slot, which this fills for every node output. *size_out gets each
   slot's size in floats (malloc'd; the caller frees it). Returns the slot count, or -1 when
   out of memory. */
int pf_graph_assign_slots(const pf_graph *g, void *ts, size_t stride, size_t numel_at,
                          size_t last_use_at, size_t slot_at, size_t **size_out);

/* Per-shape state: layouts, buffers, gradients (model_internal.h holds it in pf_plan). */
typedef struct pf_gstate pf_gstate;
struct pf_model;

/* Plan the model's graph for LQ n x h x w; fills p->out, p->out_block, p->in_block, p->block
   and (training) p->d_out of the model's pf_plan. Returns 0 or -1 with err. */
int pf_graph_plan(struct pf_model *m, void *plan, pf_conv *convs, int n, int h, int w,
                  int training, char *err, size_t errlen);
int pf_graph_forward(struct pf_model *m, void *plan, pf_conv *convs, const uint8_t *lq,
                     char *err, size_t errlen);
/* Backward from plan->d_out (set by the loss) into m->grads (overwritten). */
int pf_graph_backward(struct pf_model *m, void *plan, pf_conv *convs, char *err,
                      size_t errlen);
void pf_gstate_free(pf_gstate **s);

/* Diagnosis (tests): a convolution of a plan that runs on other layouts than its tensors' and
   converts them (graph.c, "layout groups"). Blocks as in nn/cpu/dnnl_ctx.h; run_* is 0 on a
   side that is not converted. */
typedef struct {
    int conv;                   /* layer index */
    int in_block, run_src;      /* its input's block, the block it runs on */
    int out_block, run_dst;     /* likewise for its output */
} pf_gconversion;

/* The conversions of the model's training (training = 1) or inference plan: up to max into
   out; returns how many there are. */
int pf_graph_conversions(const struct pf_model *m, int training, pf_gconversion *out, int max);
#endif
