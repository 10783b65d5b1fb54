/*  graph_internal — the plan state of the CPU executor, shared by its two halves:
    nn/cpu/layout.c (the layout planner: a layout and a size for every tensor, the conversions
    around convolutions) and nn/cpu/graph_cpu.c (buffers, forward and backward, the gradient
    pool). Nothing outside nn/cpu includes it; the public API is nn/graph.h. */
#ifndef PF_CPU_GRAPH_INTERNAL_H
#define PF_CPU_GRAPH_INTERNAL_H
#include <stddef.h>

#include "nn/cpu/dcn.h"
#include "nn/cpu/linear_dnnl.h"
#include "nn/graph.h"

#define TRY(x) do { if (x) return -1; } while (0)

typedef struct {
    int h, w;           /* spatial size in this plan */
    int block;          /* layout; 0 = not chosen yet */
    size_t numel;       /* floats, padding included */
    float *data, *grad;
    int slot;           /* inference: buffer slot */
    int last_use;       /* index of the last node reading it */
    int need_grad;      /* some parameter lies upstream */
    int grad_set;       /* backward: grad holds a value (else it is garbage) */
    float *grad_own;    /* the graph output's gradient buffer (the loss writes it) */
    int gslot;          /* backward: the gradient pool slot grad lies in (-1: none) */
    int padded;         /* its layout pads channels (a pooled gradient is zeroed first) */
    int own;            /* training, read by backward: its slot is its alone (zeroed once) */
} pf_tstate;

/* A convolution that runs on other layouts than its tensors' (plan_conversions): its input
   and output are converted around it, and their gradients back. */
typedef struct {
    int rs, rd;                 /* the blocks it runs on (0: its input's / output's own) */
    pf_reorder to_rs, from_rd;  /* forward: input -> rs, rd -> output */
    pf_reorder dy_to_rd, drs_back; /* backward: output gradient -> rd, input gradient -> own */
    float *xin;                 /* the input in rs (kept for backward-weights) */
    float *yrd;                 /* the output in rd; its gradient in backward */
    float *dxin;                /* the input gradient in rs */
} pf_gconv_io;

struct pf_gstate {
    int n;
    int training;
    pf_tstate *ts;
    int *need;              /* per tensor: pf_net_need_grad (an input_grad plan:
                               pf_net_need_input_grad) */
    int *need_param;        /* an input_grad plan: pf_net_need_grad, the need of a backward
                               not asked for dx (NULL: not such a plan) */
    int *need_input;        /* an input_grad plan: pf_net_need_input_only, the need of a
                               backward asked for dx alone (pf_graph_backward_input) */
    int no_param_grads;     /* backward: parameter gradients not wanted (x->grads not written) */
    float *dx;              /* backward: d loss / d input, the caller's NHWC (NULL: none) */
    int dx_set;             /* backward: dx holds a contribution */
    int *last;              /* per tensor: pf_net_last_use in forward (not extended) */
    int *run;               /* per node: 2 blocks a convolution runs on instead of its input's
                               and output's (0 = its own), from improve() */
    pf_gconv_io *io;        /* per node: the conversions of such a convolution */
    int *hint;              /* per tensor: its block, from the group labels of improve()
                               (0 = as the first pass chooses) */
    int n_io;               /* entries of io (nodes) */
    int output;             /* the net's output tensor */
    float *arena;           /* every buffer */
    int tslot[2];           /* backward temporaries of the current node: pool slots (-1) */
    /* Gradient pool (training): a tensor's gradient lives from its first write (the backward
       of its last reader) to its producer's backward, in a slot taken best-fit from the free
       ones and given back there; a gradient passed on unchanged to an input (grad_pass)
       shares its slot, which is counted. Slots are allocated as the first backward needs
       them and kept: every later step takes the same ones. */
    float **gbuf;
    size_t *gsize;
    int *grefs;
    int n_gslots, cap_gslots;
    int n_lent;             /* the first n_lent slots are arena slots backward reads nothing
                               from (pf_net_free_after_forward), not the pool's own */
    int goom;               /* a slot could not be allocated */
    /* Shared weights (several layers naming one weight tensor, nn/net.h): backward-weights
       overwrites, so the first layer to run backward writes the flat gradient and the others
       write wtmp and add it */
    int *wuses;             /* per parameter tensor: (deformable) convolution nodes reading it */
    int *wset;              /* per parameter tensor: its gradient was written this step */
    float *wtmp;            /* weights + bias of the largest shared layer */
    pf_linear *lin;         /* per node: a PF_G_LINEAR node's inner product (else unused) */
    pf_dcn *dcn;            /* per node: a PF_G_DCN node's layer (else unused) */
    double *bn_save;        /* training: each BatchNorm2d's batch mean and 1 / sqrt(var +
                               eps) of the last forward, at its node's stat (2 C doubles) */
};

/* Layouts and sizes of every tensor of S (S->ts: h, w, block, numel, last_use, need_grad) for
   LQ h x w, the convolutions' primitives (pf_conv_setup) and, where the planner makes a
   convolution convert its input or output, S->run and S->io (see nn/graph.h and layout.c).
   Needs S->n, S->need, S->last, S->hint, S->run, S->io allocated. 0, or -1 with err. */
int pf_cpu_plan_layouts(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int h, int w,
                        int training, char *err, size_t errlen);
#endif
