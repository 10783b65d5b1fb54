/*  model_internal — the pf_model struct shared by model.c (construction, parameters, the
    public entry points), EDSR's plan (edsr.c) and the graph networks (graph.c, zoo.c). Not part of the public API.
*/
#ifndef PF_MODEL_INTERNAL_H
#define PF_MODEL_INTERNAL_H
#include "nn/cpu/conv_dnnl.h"
#include "nn/cpu/eltwise_dnnl.h"
#include "nn/graph.h"
#include "nn/loss.h"
#include "nn/model.h"

#define PF_PLAN_MAX_ALLOCS 160
#define PF_MAX_STAGES 2

/* Activation buffers for one input shape. Training keeps every activation backward needs;
   inference lets buffers that are dead alias each other. */
typedef struct {
    int n, h, w;                /* LQ batch shape these are for; 0 = not built */
    int training;
    float *x;                   /* network input: mean-shifted LQ (EDSR) */
    float *f0;                  /* EDSR conv_first output */
    float **a;                  /* EDSR a[0..n_blocks], block inputs/outputs (a[0] = f0) */
    float **t;                  /* EDSR body.i: ReLU(conv1) */
    float *r;                   /* EDSR conv_after_body + f0 */
    float *p;                   /* EDSR upsample conv output (largest stage); reused as its
                                   gradient in backward */
    float *q[PF_MAX_STAGES];    /* EDSR pixel shuffle outputs */
    float *out;                 /* last conv output, 3 channels, block out_block */
    float *d_out, *d_q, *d_r, *d_a, *d_t, *d_tmp, *d_u;   /* gradients (training) */
    int in_block, block, out_block; /* layouts of x, of the features, of out */
    pf_op ops[4];               /* element-wise backward primitives (ReLU mask, accumulate) */
    void *allocs[PF_PLAN_MAX_ALLOCS];
    int n_allocs;
    pf_gstate *g;               /* graph networks: per-tensor layouts and buffers */
} pf_plan;

/* How pf_model_init draws one tensor of a graph network (the reference's scheme). */
typedef enum {
    PF_INIT_UNIFORM,            /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for
                                   conv weights (kaiming_uniform a = sqrt(5)) and biases */
    PF_INIT_NORMAL,             /* N(0, 2 / fan_in) * scale: kaiming_normal fan-in, times
                                   BasicSR's default_init_weights scale */
    PF_INIT_CONST,              /* every element = scale (PReLU 0.25, zero biases) */
} pf_init_kind;

typedef struct {
    pf_init_kind kind;
    double fan_in, scale;
} pf_param_init;

struct pf_model {
    pf_config cfg;              /* copy of the configuration it was built from */
    int is_edsr;                /* 1 EDSR (its own plan, edsr.c) */
    int is_graph;               /* SRCNN, FSRCNN, ESPCN, MSRResNet, RCAN, RRDBNet: graph.c */
    pf_graph graph;
    pf_param_init *init;        /* graph networks: per tensor (n_tensors) */
    int cap_tensors, cap_convs; /* room in tensors / init and the conv arrays */
    int *conv_w;                /* graph networks: tensor index of conv i's weight (its bias
                                   follows); EDSR: 2 i */
    int sub_conv, sub_stride;   /* FSRCNN: the conv layer computing its ConvTranspose2d in
                                   sub-pixel form (zoo.c), its stride; -1 / 0 when none */
    int sub_r;                  /* its kernel is (2 sub_r + 1)^2 */
    float *sub_w, *sub_dw;      /* that layer's weights + bias, and their gradients, in the
                                   conv's own OIHW layout */
    int *sub_idx;               /* for each element of the ConvTranspose2d weight (d x 3 x 9 x
                                   9), its index in sub_w (zoo.c sub_index) */
    int scale;
    int n_stages, stage_r;      /* EDSR upsample: stages of factor stage_r (2 or 3) */
    float *params, *grads;      /* flat buffers, n_params floats each */
    float *infer_weights;       /* the params the inference primitives' weights were
                                   reordered from (NULL: none yet) */
    size_t n_params;
    pf_param_info *tensors;     /* weight then bias for every conv, in state_dict order */
    int n_tensors;
    int n_convs;
    pf_conv *train_conv;        /* n_convs layers with training primitives */
    pf_conv *infer_conv;        /* the same layers with inference primitives */
    pf_loss loss;
    pf_dnnl dnnl;
    pf_plan train, infer;
};

/* Graph networks (nn/zoo.c): build m->graph, its convolutions and parameter tensors from
   m->cfg. Returns 0 or -1 with err. */
int pf_zoo_build(pf_model *m, char *err, size_t errlen);

/* Register a convolution (weight + bias, with their init) for a graph network; returns its
   layer index or -1 when out of memory. */
int pf_model_add_conv(pf_model *m, const char *name, int ic, int oc, int k,
                      pf_param_init w_init, pf_param_init b_init);
/* Register a layer whose weights are not its own tensors (FSRCNN's sub-pixel conv); returns
   its layer index or -1. conv_w[i] is set to weight_tensor. */
int pf_model_add_layer(pf_model *m, const char *name, int ic, int oc, int k, int weight_tensor);

/* Register a parameter tensor of ndim (1..4) dims; returns its tensor index or -1. */
int pf_model_add_tensor(pf_model *m, const char *name, int ndim, const int64_t *shape,
                        pf_param_init init);

/* FSRCNN: sub_w from the ConvTranspose2d tensors in m->params; and the reverse mapping of
   sub_dw into m->grads. */
void pf_zoo_sub_weights(pf_model *m);
void pf_zoo_sub_grads(pf_model *m);

/* Register a parameter tensor of `numel` floats, shape (numel); returns its tensor index. */
int pf_model_add_vector(pf_model *m, const char *name, int numel, pf_param_init init);

/* Allocate n floats (64-byte aligned) owned by plan; NULL when out of memory. */
float *pf_plan_alloc(pf_plan *p, size_t n);
void pf_plan_free(pf_plan *p);

/* Pointer to conv i's weights / bias in a flat buffer (params or grads). */
float *pf_model_conv_w(pf_model *m, float *base, int i);
float *pf_model_conv_b(pf_model *m, float *base, int i);

/* Reorder every conv's current weights into its primitives' layouts. */
int pf_model_set_weights(pf_model *m, pf_conv *convs, char *err, size_t errlen);

/* Per-network: build plan (buffers + primitives) for LQ n x h x w; forward up to `out`;
   backward from plan->d_out into m->grads. */
int pf_edsr_plan(pf_model *m, pf_plan *p, pf_conv *convs, int n, int h, int w, int training,
                 char *err, size_t errlen);
int pf_edsr_forward(pf_model *m, pf_plan *p, pf_conv *convs, const uint8_t *lq, char *err,
                    size_t errlen);
int pf_edsr_backward(pf_model *m, pf_plan *p, pf_conv *convs, char *err, size_t errlen);
#endif
