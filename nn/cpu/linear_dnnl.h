/*  linear_dnnl — the fully connected layer of PF_G_LINEAR (nn/net.h; torch.nn.Linear(in, out)
    on x.view(N, -1)) on oneDNN's inner product: forward, backward-data, backward-weights +
    bias, on plain row-major matrices: x N x in, weight out x in (torch's layout, the flat
    parameter buffer's), bias out, y N x out. The executor (nn/cpu/graph_cpu.c) flattens its
    input from whatever nCHWb layout it has into x (C, H, W order, torch's view) and writes y
    into the output's layout; the layer owns those plain buffers (x kept from forward for
    backward-weights). Primitives are made once per plan (a fixed N). */
#ifndef PF_CPU_LINEAR_DNNL_H
#define PF_CPU_LINEAR_DNNL_H
#include <stddef.h>
#include <dnnl.h>

#include "nn/cpu/dnnl_ctx.h"

typedef struct {
    char name[96];              /* the layer's state_dict prefix, for errors */
    int n, in, out;             /* batch, in_features, out_features */
    int training;               /* backward primitives made */
    pf_dnnl *ctx;
    dnnl_primitive_t fwd, bwdd, bwdw;
    dnnl_memory_t m_x, m_w, m_b, m_y;           /* handles set per call */
    float *x, *y, *dx, *dy;     /* plain buffers: N x in, N x out, N x in, N x out */
} pf_linear;

/* Make l's primitives for batch n (forward_training with backward-data and backward-weights
   when training, else forward_inference) and its buffers. 0, or -1 with err naming the
   layer (l is then freed). */
int pf_linear_setup(pf_linear *l, pf_dnnl *ctx, const char *name, int n, int in, int out,
                    int training, char *err, size_t errlen);
/* l->y = l->x weight^T + bias. 0, or -1 with err. */
int pf_linear_forward(pf_linear *l, const float *weight, const float *bias, char *err,
                      size_t errlen);
/* From l->dy: dweight (out x in) = dy^T x and dbias = the column sums of dy (both overwritten;
   dweight NULL: neither), and l->dx = dy weight when want_dx. 0, or -1 with err. */
int pf_linear_backward(pf_linear *l, const float *weight, float *dweight, float *dbias,
                       int want_dx, char *err, size_t errlen);
void pf_linear_free(pf_linear *l);
#endif
