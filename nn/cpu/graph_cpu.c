/*  graph_cpu — the CPU executor (nn/graph.h): a plan's buffers (activation slots, the gradient
    pool), forward in node order and backward in reverse, each node dispatched to its kernels
    (nn/cpu/ops.h, nn/layers.h, nn/video_layers.h, oneDNN convolutions of nn/cpu/conv_dnnl.h),
    and the per-op profile. The layouts come from nn/cpu/layout.c. */
#include "nn/graph.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/cpu/graph_internal.h"
#include "nn/cpu/ops.h"
#include "nn/layers.h"
#include "nn/video_layers.h"

void pf_gstate_free(pf_gstate **s) {
    if (!*s) return;
    free((*s)->ts);
    free((*s)->need);
    free((*s)->need_param);
    free((*s)->need_input);
    free((*s)->last);
    free((*s)->hint);
    free((*s)->run);
    for (int k = 0; (*s)->io && k < (*s)->n_io; k++) {
        pf_gconv_io *io = &(*s)->io[k];
        pf_reorder_free(&io->to_rs);
        pf_reorder_free(&io->from_rd);
        pf_reorder_free(&io->dy_to_rd);
        pf_reorder_free(&io->drs_back);
        free(io->xin);
        free(io->yrd);
        free(io->dxin);
    }
    free((*s)->io);
    for (int k = 0; (*s)->lin && k < (*s)->n_io; k++) pf_linear_free(&(*s)->lin[k]);
    free((*s)->lin);
    for (int k = 0; (*s)->dcn && k < (*s)->n_io; k++) pf_dcn_free(&(*s)->dcn[k]);
    free((*s)->dcn);
    free((*s)->bn_save);
    free((*s)->wuses);
    free((*s)->wset);
    free((*s)->wtmp);
    free((*s)->arena);
    for (int k = (*s)->n_lent; k < (*s)->n_gslots; k++) free((*s)->gbuf[k]);
    free((*s)->gbuf);
    free((*s)->gsize);
    free((*s)->grefs);
    free(*s);
    *s = NULL;
}

/* Buffers: training keeps the activations backward reads and only the output's gradient (the
   others come from the gradient pool, by liveness); every other tensor, and in inference
   every tensor, reuses the slot of one that is dead (pf_net_assign_slots). */
static int plan_buffers(const pf_gctx *m, pf_gstate *S, int training) {
    const pf_net *g = m->net;
#define ROUND(x) (((x) + 15) / 16 * 16)
    size_t *numel = malloc(((size_t)g->n_t + 1) * sizeof *numel), *size = NULL;
    int *last = malloc(((size_t)g->n_t + 1) * sizeof *last);
    int *slot = malloc(((size_t)g->n_t + 1) * sizeof *slot);
    int n_slots = -1;
    if (numel && last && slot) {
        for (int i = 0; i < g->n_t; i++) numel[i] = S->ts[i].numel;
        pf_net_last_use(g, training, last);
        n_slots = pf_net_assign_slots(g, numel, last, training, slot, &size);
        for (int i = 0; n_slots >= 0 && i < g->n_t; i++) {
            S->ts[i].slot = slot[i];
            S->ts[i].own = training && last[i] >= g->n_node;
        }
    }
    free(numel);
    size_t *off = n_slots >= 0 ? calloc((size_t)n_slots + 1, sizeof *off) : NULL, total = 0;
    size_t *dead = n_slots >= 0 ? calloc((size_t)n_slots + 1, sizeof *dead) : NULL;
    if (!off || !dead) {
        free(last);
        free(slot);
        free(size);
        free(off);
        free(dead);
        return -1;
    }
    /* training: the slots backward reads nothing from lend themselves to the gradient pool */
    int n_dead = training ? pf_net_free_after_forward(g, slot, last, size, n_slots, dead) : 0;
    free(last);
    free(slot);
    for (int s = 0; s < n_slots; s++) {
        off[s] = total;
        total += ROUND(size[s]);
    }
    free(size);
    if (n_dead > 0) {
        S->gbuf = calloc((size_t)n_dead, sizeof *S->gbuf);
        S->gsize = calloc((size_t)n_dead, sizeof *S->gsize);
        S->grefs = calloc((size_t)n_dead, sizeof *S->grefs);
        if (!S->gbuf || !S->gsize || !S->grefs) {
            free(off);
            free(dead);
            return -1;
        }
        S->cap_gslots = n_dead;
    }
    pf_tstate *out = &S->ts[g->output];
    size_t out_grad = total;            /* training: the output's gradient (the loss writes it) */
    if (training && out->need_grad) total += ROUND(out->numel);
    S->arena = aligned_alloc(64, (total ? total : 16) * sizeof(float));
    if (!S->arena) {
        free(off);
        free(dead);
        return -1;
    }
    memset(S->arena, 0, total * sizeof(float));
    for (int s = 0; s < n_slots; s++)
        if (dead[s]) {
            S->gbuf[S->n_gslots] = S->arena + off[s];
            S->gsize[S->n_gslots++] = dead[s];
        }
    S->n_lent = S->n_gslots;
    free(dead);
    for (int i = 0; i < g->n_t; i++) {
        S->ts[i].data = S->arena + off[S->ts[i].slot];
        S->ts[i].padded = S->ts[i].numel != (size_t)S->n * (size_t)g->t[i].c *
                                            (size_t)S->ts[i].h * (size_t)S->ts[i].w;
        S->ts[i].gslot = -1;
    }
    free(off);
    if (training && out->need_grad) out->grad = out->grad_own = S->arena + out_grad;
    S->tslot[0] = S->tslot[1] = -1;
    return 0;
#undef ROUND
}

/* An input_grad plan: need (pf_net_need_input_grad), need_param (pf_net_need_grad, already
   in need) and need_input (pf_net_need_input_only). 0, or -1 with err. */
static int plan_input_grad(const pf_net *g, pf_gstate *S, char *err, size_t errlen) {
    for (int k = 0; k < g->n_node; k++)
        if (g->node[k].op == PF_G_BILINEAR_IN || g->node[k].op == PF_G_BICUBIC_IN) {
            snprintf(err, errlen, "%s: no input gradient through a %s node", g->type,
                     pf_net_op_name(g->node[k].op));
            return -1;
        }
    S->need_param = malloc(((size_t)g->n_t + 1) * sizeof *S->need_param);
    S->need_input = malloc(((size_t)g->n_t + 1) * sizeof *S->need_input);
    if (!S->need_param || !S->need_input) {
        snprintf(err, errlen, "%s: out of memory", g->type);
        return -1;
    }
    memcpy(S->need_param, S->need, (size_t)g->n_t * sizeof *S->need);
    pf_net_need_input_grad(g, S->need);
    pf_net_need_input_only(g, S->need_input);
    return 0;
}

/* A layer's state_dict prefix from its weight tensor's name (`name`.weight), for errors. */
static void layer_prefix(const pf_param_info *wt, char name[96]) {
    const char *dot = strrchr(wt->name, '.');
    snprintf(name, 96, "%.*s", dot ? (int)(dot - wt->name) : 95, wt->name);
}

/* Node k's deformable convolution layer for this plan's batch and sizes. 0, or -1 with err. */
static int plan_dcn(const pf_gctx *m, pf_gstate *S, int k, int training, char *err,
                    size_t errlen) {
    const pf_net *g = m->net;
    const pf_gnode *nd = &g->node[k];
    const pf_tstate *a = &S->ts[nd->in[0]];
    char name[96];
    layer_prefix(&g->tensors[nd->param], name);
    if (!S->dcn && !(S->dcn = calloc((size_t)g->n_node, sizeof *S->dcn))) {
        snprintf(err, errlen, "%s: out of memory", g->type);
        return -1;
    }
    pf_dcn_shape sh = { .n = S->n, .cin = g->t[nd->in[0]].c, .h = a->h, .w = a->w,
                        .cout = g->t[nd->out].c, .k = nd->dcn.k, .stride = nd->dcn.stride,
                        .pad = nd->dcn.pad, .dil = nd->dcn.dil, .groups = nd->dcn.groups,
                        .dg = nd->dcn.dg };
    return pf_dcn_setup(&S->dcn[k], m->dnnl, name, sh, training, err, errlen);
}

/* The state of the nodes other than convolutions that a plan holds: each linear layer's
   primitives and buffers for this batch, the BatchNorm2d batch statistics backward reads.
   0, or -1 with err. */
static int plan_nodes(const pf_gctx *m, pf_gstate *S, int training, char *err, size_t errlen) {
    const pf_net *g = m->net;
    if (g->n_bn && !m->running) {
        snprintf(err, errlen, "%s: BatchNorm2d layers without running statistics", g->type);
        return -1;
    }
    if (training && g->n_running &&
        !(S->bn_save = calloc(g->n_running, sizeof *S->bn_save))) {
        snprintf(err, errlen, "%s: out of memory", g->type);
        return -1;
    }
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        if (nd->op == PF_G_DCN && plan_dcn(m, S, k, training, err, errlen)) return -1;
        if (nd->op != PF_G_LINEAR) continue;
        const pf_param_info *wt = &g->tensors[nd->param];
        char name[96];
        layer_prefix(wt, name);
        if (!S->lin && !(S->lin = calloc((size_t)g->n_node, sizeof *S->lin))) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            return -1;
        }
        if (pf_linear_setup(&S->lin[k], m->dnnl, name, S->n, (int)wt->shape[1],
                            (int)wt->shape[0], training, err, errlen))
            return -1;
    }
    return 0;
}

void pf_graph_conv_init(const pf_net *net, int i, pf_conv *c) {
    const pf_nconv *d = &net->conv[i];
    pf_conv_init(c, d->name, d->ic, d->oc, d->k, d->act);
    pf_conv_set_geometry(c, d->stride, d->pad, d->has_bias);
    if (d->act && d->alpha != 0.0f) pf_conv_set_lrelu(c, d->alpha);
    for (int k = 0; k < net->n_node; k++)
        if (net->node[k].op == PF_G_CONV && net->node[k].conv == i && net->node[k].n_in > 1)
            pf_conv_set_residual(c, net->node[k].scale);
}

int pf_graph_plan(const pf_gctx *m, pf_gstate **out_state, int n, int h, int w, int training,
                  char *err, size_t errlen) {
    const pf_net *g = m->net;
    *out_state = NULL;
    pf_gstate *S = calloc(1, sizeof *S);
    if (!S || !(S->ts = calloc((size_t)g->n_t, sizeof *S->ts))) {
        free(S);
        snprintf(err, errlen, "%s: out of memory", g->type);
        return -1;
    }
    S->n = n;
    S->training = training;
    S->output = g->output;
    S->need = calloc((size_t)g->n_t + 1, sizeof *S->need);
    S->last = calloc((size_t)g->n_t + 1, sizeof *S->last);
    S->hint = calloc((size_t)g->n_t, sizeof *S->hint);
    S->run = calloc(2 * (size_t)g->n_node + 2, sizeof *S->run);
    S->io = calloc((size_t)g->n_node + 1, sizeof *S->io);
    S->n_io = g->n_node;
    if (!S->need || !S->last || !S->hint || !S->run || !S->io) {
        snprintf(err, errlen, "%s: out of memory", g->type);
        goto fail;
    }
    pf_net_need_grad(g, S->need);
    pf_net_last_use(g, 0, S->last);
    if (training && m->input_grad && plan_input_grad(g, S, err, errlen)) goto fail;
    if (training) {
        S->wuses = calloc((size_t)g->n_tensors + 1, sizeof *S->wuses);
        S->wset = calloc((size_t)g->n_tensors + 1, sizeof *S->wset);
        if (!S->wuses || !S->wset) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            goto fail;
        }
        size_t wmax = 0;
        for (int k = 0; k < g->n_node; k++)
            if (g->node[k].op == PF_G_CONV || g->node[k].op == PF_G_DCN)
                S->wuses[g->node[k].param]++;
        for (int k = 0; k < g->n_node; k++) {
            const pf_gnode *nd = &g->node[k];
            if (nd->op == PF_G_DCN && S->wuses[nd->param] > 1) {  /* BasicVSR++'s alignment */
                size_t wn = g->tensors[nd->param].numel +
                            (nd->dcn.has_bias ? g->tensors[nd->param + 1].numel : 0);
                if (wn > wmax) wmax = wn;
            }
            if (nd->op != PF_G_CONV || S->wuses[nd->param] < 2) continue;
            if (nd->conv == g->sub_conv) {
                snprintf(err, errlen, "%s: the sub-pixel layer cannot share its weights",
                         g->type);
                goto fail;
            }
            int bi = pf_net_conv_bias(g, nd->conv);
            size_t wn = g->tensors[nd->param].numel + (bi >= 0 ? g->tensors[bi].numel : 0);
            if (wn > wmax) wmax = wn;
        }
        if (wmax && !(S->wtmp = malloc(wmax * sizeof(float)))) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            goto fail;
        }
    }
    if (pf_cpu_plan_layouts(m, S, m->convs, h, w, training, err, errlen)) goto fail;
    if (plan_nodes(m, S, training, err, errlen)) goto fail;
    if (plan_buffers(m, S, training)) {
        snprintf(err, errlen, "%s: out of memory for activations of a %d x %d x %d batch",
                 g->type, n, h, w);
        goto fail;
    }
    *out_state = S;
    return 0;
fail:
    pf_gstate_free(&S);
    return -1;
}

float *pf_gstate_out(const pf_gstate *S, int *block) {
    const pf_tstate *o = &S->ts[S->output];
    if (block) *block = o->block;
    return o->data;
}
float *pf_gstate_dout(const pf_gstate *S) { return S->ts[S->output].grad_own; }

void pf_gstate_shape(const pf_gctx *m, const pf_gstate *S, int t, int dims[4]) {
    dims[0] = S->n;
    dims[1] = m->net->t[t].c;
    dims[2] = S->ts[t].h;
    dims[3] = S->ts[t].w;
}

/* Whether tensor t is the output or a tap (kept after forward). */
static int kept(const pf_net *g, int t) {
    int hit = t == g->output;
    for (int k = 0; k < g->n_taps; k++) hit |= g->taps[k] == t;
    return hit;
}

int pf_graph_read(const pf_gctx *m, const pf_gstate *S, int t, float *nchw) {
    const pf_net *g = m->net;
    if (t < 0 || t >= g->n_t || !kept(g, t)) return -1;
    const pf_tstate *a = &S->ts[t];
    pf_cpu_concat_part(a->data, g->t[t].c, a->block, a->numel, nchw, g->t[t].c, 1, 0, S->n,
                       a->h, a->w, 0, 0);
    return 0;
}


/* ---- forward -------------------------------------------------------------------------- */

/* A convolution node's forward: around pf_conv_forward, the conversions of its input and
   output where it runs on other layouts (plan_conversions). */
static int conv_forward(pf_gstate *S, pf_conv *c, const pf_gconv_io *io, const pf_gnode *nd,
                        float *y, char *err, size_t errlen) {
    const pf_tstate *a = &S->ts[nd->in[0]];
    const float *x = a->data;
    if (io->rs) {
        TRY(pf_reorder_run((pf_reorder *)&io->to_rs, a->data, io->xin, err, errlen));
        x = io->xin;
    }
    if (nd->n_in > 1)
        return pf_conv_forward_residual(c, x, S->ts[nd->in[1]].data, y, err, errlen);
    if (!io->rd) return pf_conv_forward(c, x, y, err, errlen);
    TRY(pf_conv_forward(c, x, io->yrd, err, errlen));
    return pf_reorder_run((pf_reorder *)&io->from_rd, io->yrd, y, err, errlen);
}

/* A BatchNorm2d node's forward: batch statistics (training plans, running statistics
   updated) or the running ones (inference). */
static int batchnorm_forward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd, char *err,
                             size_t errlen) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    const float *wb = m->params + g->tensors[nd->param].offset;
    const float *bb = m->params + g->tensors[nd->param + 1].offset;
    int C = g->t[nd->out].c;
    size_t hw = (size_t)o->h * (size_t)o->w;
    if (!S->training) {
        pf_cpu_batchnorm_eval_forward(o->data, a->data, wb, bb, m->running + nd->stat, S->n, C,
                                      hw, o->block, a->block);
        return 0;
    }
    if (pf_cpu_batchnorm_train_forward(o->data, a->data, wb, bb, m->running + nd->stat,
                                       S->bn_save + nd->stat, S->n, C, hw, o->block,
                                       a->block)) {
        snprintf(err, errlen, "%s: %s: a training batch of one value per channel (N H W = 1)",
                 g->type, g->tensors[nd->param].name);
        return -1;
    }
    if (m->tracked) m->tracked[nd->bn]++;
    return 0;
}

/* A linear node's forward: its input flattened to plain N x (C H W) (torch's view), the
   inner product, the result into the output's layout. */
static int linear_forward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd, char *err,
                          size_t errlen) {
    const pf_net *g = m->net;
    pf_linear *l = &S->lin[nd - g->node];
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    int ca = g->t[nd->in[0]].c;
    pf_cpu_concat_part(a->data, ca, a->block, a->numel, l->x, ca, 1, 0, S->n, a->h, a->w, 0, 0);
    TRY(pf_linear_forward(l, m->params + g->tensors[nd->param].offset,
                          m->params + g->tensors[nd->param + 1].offset, err, errlen));
    pf_cpu_concat_part(o->data, l->out, o->block, o->numel, l->y, l->out, 1, 0, S->n, 1, 1, 1,
                       0);
    return 0;
}

/* A deformable convolution node's forward (nn/cpu/dcn.h). */
static int dcn_forward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd, char *err,
                       size_t errlen) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]], *f = &S->ts[nd->in[1]],
              *k = &S->ts[nd->in[2]];
    const float *w = m->params + g->tensors[nd->param].offset;
    const float *b = nd->dcn.has_bias ? m->params + g->tensors[nd->param + 1].offset : NULL;
    return pf_dcn_forward(&S->dcn[nd - g->node], w, b, a->data, a->block, f->data, f->block,
                          k->data, k->block, o->data, o->block, err, errlen);
}

/* Forward of an EDVR TSA-fusion node (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3;
   nn/cpu/ops.h), each tensor in its own layout. */
static void tsa_forward(const pf_net *g, pf_gstate *S, const pf_gnode *nd) {
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    int n = S->n, C = g->t[nd->in[0]].c;
    if (nd->op == PF_G_MUL) {
        const pf_tstate *f = &S->ts[nd->in[1]], *r = nd->n_in > 2 ? &S->ts[nd->in[2]] : NULL;
        pf_cpu_mul_forward(o->data, a->data, f->data, r ? r->data : NULL, nd->scale, n, C,
                           g->t[nd->in[1]].c, o->h, o->w, o->block, a->block, f->block,
                           r ? r->block : 1);
    } else if (nd->op == PF_G_CHSUM) {
        pf_cpu_chsum_forward(o->data, a->data, n, C, o->h, o->w, o->block, a->block);
    } else {
        pf_cpu_pool3_forward(o->data, a->data, nd->op == PF_G_MAXPOOL3, n, C, a->h, a->w,
                             o->block, a->block);
    }
}

/* Forward of one node: dispatch to its kernels (nn/cpu/ops.h and the shared layers). */
static int forward_node(const pf_gctx *m, pf_gstate *S, pf_conv *convs, const pf_gnode *nd,
                        pf_lq lq, char *err, size_t errlen) {
    const pf_net *g = m->net;
    int n = S->n, C = g->t[nd->out].c;
    pf_tstate *o = &S->ts[nd->out], *a = nd->n_in ? &S->ts[nd->in[0]] : NULL;
    const pf_tstate *i1 = nd->n_in > 1 ? &S->ts[nd->in[1]] : NULL;
    int b = o->block, H = o->h, W = o->w;
    size_t hw = (size_t)H * (size_t)W;
    float *y = o->data, fm[PF_G_MAX_CH];
    const float *al = nd->op == PF_G_PRELU ? m->params + g->tensors[nd->param].offset : NULL;
    /* Padding channels must read as zeros. A slot of a tensor's own starts zeroed; a shared
       one may have held another tensor (or, lent to the gradient pool, a gradient), and the C
       kernels write real channels only. */
    if (!o->own && C % b && nd->op != PF_G_CONV) memset(y, 0, o->numel * sizeof(float));
    switch (nd->op) {
    case PF_G_INPUT:
        pf_cpu_input_forward(y, lq, n, C, H, W, g->use_mean ? g->mean : NULL, g->range, b);
        return 0;
    case PF_G_ZERO:
        memset(y, 0, o->numel * sizeof(float));
        return 0;
    case PF_G_SLICE:
        pf_cpu_concat_part((float *)a->data, g->t[nd->in[0]].c, a->block, a->numel, y, C, b,
                           nd->c0, n, a->h, a->w, 0, 0);
        return 0;
    case PF_G_AFFINE:
        pf_affine_ch_forward(y, a->data, n, C, H, W, nd->sub, nd->mul, b, a->block);
        return 0;
    case PF_G_RESIZE:
        pf_resize_bilinear_forward(y, a->data, n, C, a->h, a->w, H, W, nd->ac,
                                   pf_net_resize_mult(nd, a->h, a->w, H, W, fm), b, a->block);
        return 0;
    case PF_G_AVGPOOL2:
        pf_avgpool2_forward(y, a->data, n, C, a->h, a->w, b, a->block);
        return 0;
    case PF_G_MAXPOOL2:
        pf_cpu_maxpool2_forward(y, a->data, n, C, a->h, a->w, b, a->block);
        return 0;
    case PF_G_WARP:
        pf_flow_warp_forward(y, a->data, i1->data, n, C, H, W, (pf_pad_mode)nd->pad, b,
                             a->block, i1->block);
        return 0;
    case PF_G_BILINEAR_IN:
        pf_cpu_bilinear_in_forward(y, lq, n, H, W, nd->r, b);
        return 0;
    case PF_G_BICUBIC_IN:
        pf_bicubic_upsample_image(y, lq, n, H / nd->r, W / nd->r, nd->r, b);
        return 0;
    case PF_G_CONV:
        return conv_forward(S, &convs[nd->conv], &S->io[nd - g->node], nd, y, err, errlen);
    case PF_G_PRELU:
        pf_cpu_prelu_forward(y, a->data, al, n, C, hw, b);
        return 0;
    case PF_G_TANH:
        pf_cpu_tanh_forward(y, a->data, n, C, hw, b);
        return 0;
    case PF_G_SIGMOID:
        pf_cpu_sigmoid_forward(y, a->data, n, C, hw, b);
        return 0;
    case PF_G_RELU:
        pf_cpu_relu_forward(y, a->data, nd->alpha, n, C, hw, b);
        return 0;
    case PF_G_BATCHNORM:
        return batchnorm_forward(m, S, nd, err, errlen);
    case PF_G_LINEAR:
        return linear_forward(m, S, nd, err, errlen);
    case PF_G_DCN:
        return dcn_forward(m, S, nd, err, errlen);
    case PF_G_MUL:
    case PF_G_CHSUM:
    case PF_G_MAXPOOL3:
    case PF_G_AVGPOOL3:
        tsa_forward(g, S, nd);
        return 0;
    case PF_G_ADD:
        pf_cpu_add_forward(y, a->data, i1->data, i1->block, nd->scale, n, C, H, W, b, o->numel);
        return 0;
    case PF_G_GAP:
        pf_cpu_gap_forward(y, a->data, n, C, (size_t)a->h * (size_t)a->w, b);
        return 0;
    case PF_G_MUL_CH: {
        /* the residual is added in the same pass when it shares the output's layout, else
           read in its own (the planner lets them differ, as an add's second input) */
        const pf_tstate *res = nd->n_in > 2 ? &S->ts[nd->in[2]] : NULL;
        int fused = res && res->block == b;
        pf_cpu_mul_ch_forward(y, a->data, fused ? res->data : NULL, i1->data,
                              (size_t)pf_blk_c(C, i1->block), nd->scale, n, C, hw, b);
        if (res && !fused) pf_cpu_axpy_layout(y, b, res->data, res->block, 1.0f, n, C, H, W, 1);
        return 0;
    }
    case PF_G_CONCAT:
        for (int i = 0, c_off = 0; i < nd->n_in; c_off += g->t[nd->in[i]].c, i++) {
            pf_tstate *t = &S->ts[nd->in[i]];
            pf_cpu_concat_part(y, C, b, o->numel, t->data, g->t[nd->in[i]].c, t->block, c_off, n,
                               H, W, 1, 0);
        }
        return 0;
    case PF_G_SHUFFLE:
        pf_pixel_shuffle_forward(y, a->data, n, C, a->h, a->w, nd->r, a->block, b);
        return 0;
    case PF_G_UNSHUFFLE:
        /* the inverse permutation: PixelShuffle's backward moves values the same way */
        pf_pixel_shuffle_backward(y, a->data, n, g->t[nd->in[0]].c, H, W, nd->r, b, a->block);
        return 0;
    case PF_G_NEAREST:
        pf_cpu_nearest_forward(y, a->data, n, C, a->h, a->w, H, W, nd->r, b);
        return 0;
    }
    snprintf(err, errlen, "%s: unknown graph op %d", g->type, (int)nd->op);
    return -1;
}

/* ---- profiling (pf_graph_profile_print) ------------------------------------------------- */

#define PROF_KINDS 64           /* op (< 32) or 32 + a convolution's kernel size */
static struct {
    int on;                     /* -1 unread, 0 off, 1 on */
    double ms[2][PROF_KINDS];   /* [backward][kind] */
    long calls[2];
} prof = { .on = -1 };

static int prof_on(void) {
    if (prof.on < 0) prof.on = getenv("PF_GRAPH_PROFILE") != NULL;
    return prof.on;
}

static double prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int prof_kind(const pf_net *g, const pf_gnode *nd) {
    if (nd->op == PF_G_CONV) {
        int k = g->conv[nd->conv].k;
        return 32 + (k < PROF_KINDS - 32 ? k : PROF_KINDS - 33);
    }
    return (int)nd->op < 32 ? (int)nd->op : 31;
}

static void prof_add(const pf_gctx *m, const pf_gnode *nd, int backward, double t0) {
    dnnl_stream_wait(m->dnnl->stream);
    prof.ms[backward][prof_kind(m->net, nd)] += prof_now() - t0;
}

void pf_graph_profile_print(FILE *f) {
    for (int d = 0; d < 2; d++) {
        if (!prof.calls[d]) continue;
        double total = 0;
        for (int k = 0; k < PROF_KINDS; k++) total += prof.ms[d][k];
        fprintf(f, "%s: %.1f ms per call (%ld calls)\n", d ? "backward" : "forward",
                total / (double)prof.calls[d], prof.calls[d]);
        for (;;) {
            int best = -1;
            for (int k = 0; k < PROF_KINDS; k++)
                if (prof.ms[d][k] > 0 && (best < 0 || prof.ms[d][k] > prof.ms[d][best])) best = k;
            if (best < 0) break;
            char name[32];
            if (best >= 32) snprintf(name, sizeof name, "conv %dx%d", best - 32, best - 32);
            else snprintf(name, sizeof name, "%s", best < 31 ? pf_net_op_name((pf_gop)best)
                                                             : "other");
            fprintf(f, "  %-14s %8.1f ms  %5.1f %%\n", name, prof.ms[d][best] / prof.calls[d],
                    100 * prof.ms[d][best] / total);
            prof.ms[d][best] = 0;
        }
        prof.calls[d] = 0;
    }
}

/* pf_graph_forward and pf_graph_forward_f32: every node in order, the input nodes reading lq. */
static int forward_all(const pf_gctx *m, pf_gstate *S, pf_lq lq, char *err, size_t errlen) {
    int timed = prof_on();
    for (int k = 0; k < m->net->n_node; k++) {
        double t0 = timed ? prof_now() : 0;
        TRY(forward_node(m, S, m->convs, &m->net->node[k], lq, err, errlen));
        if (timed) prof_add(m, &m->net->node[k], 0, t0);
    }
    prof.calls[0] += timed;
    return 0;
}

int pf_graph_forward(const pf_gctx *m, pf_gstate *S, const uint8_t *lq, char *err,
                     size_t errlen) {
    return forward_all(m, S, (pf_lq){ .u8 = lq }, err, errlen);
}

int pf_graph_forward_f32(const pf_gctx *m, pf_gstate *S, const float *lq, char *err,
                         size_t errlen) {
    return forward_all(m, S, (pf_lq){ .f32 = lq }, err, errlen);
}

/* ---- backward ------------------------------------------------------------------------- */

/* A gradient buffer from the pool for t (see pf_gstate): the best-fitting free slot, else a
   new one. Zeroed when t's layout pads channels (padding stays zero, as everywhere). 0, or -1
   out of memory (S->goom). */
static int gslot_get(pf_gstate *S, size_t numel) {
    int best = -1;
    for (int k = 0; k < S->n_gslots; k++)
        if (!S->grefs[k] && S->gsize[k] >= numel && (best < 0 || S->gsize[k] < S->gsize[best]))
            best = k;
    if (best < 0) {
        if (S->n_gslots == S->cap_gslots) {
            int cap = S->cap_gslots ? 2 * S->cap_gslots : 16;
            float **b = realloc(S->gbuf, (size_t)cap * sizeof *b);
            if (b) S->gbuf = b;
            size_t *sz = b ? realloc(S->gsize, (size_t)cap * sizeof *sz) : NULL;
            if (sz) S->gsize = sz;
            int *r = sz ? realloc(S->grefs, (size_t)cap * sizeof *r) : NULL;
            if (!r) {
                S->goom = 1;
                return -1;
            }
            S->grefs = r;
            S->cap_gslots = cap;
        }
        size_t bytes = (numel + 15) / 16 * 16 * sizeof(float);
        float *buf = aligned_alloc(64, bytes ? bytes : 64);
        if (!buf) {
            S->goom = 1;
            return -1;
        }
        best = S->n_gslots++;
        S->gbuf[best] = buf;
        S->gsize[best] = numel;
        S->grefs[best] = 0;
    }
    S->grefs[best]++;
    return best;
}

static int gacquire(pf_gstate *S, pf_tstate *t) {
    int k = gslot_get(S, t->numel);
    if (k < 0) return -1;
    t->gslot = k;
    t->grad = S->gbuf[k];
    if (t->padded) memset(t->grad, 0, t->numel * sizeof(float));
    return 0;
}

/* Temporary i (0 or 1) of the node being run backward, numel floats from the pool, given back
   after the node (pf_graph_backward). NULL when out of memory (S->goom). */
static float *gscratch(pf_gstate *S, int i, size_t numel) {
    if (S->tslot[i] < 0 && (S->tslot[i] = gslot_get(S, numel)) < 0) return NULL;
    return S->gbuf[S->tslot[i]];
}

/* The gradient buffer of t for a contribution: *acc says whether to add to it. NULL when t
   needs no gradient (or the pool is out of memory: S->goom). */
static float *grad_for(pf_gstate *S, pf_tstate *t, int *acc) {
    if (!t->need_grad) return NULL;
    if (!t->grad && gacquire(S, t)) return NULL;
    *acc = t->grad_set;
    t->grad_set = 1;
    return t->grad;
}

/* t's gradient gets o's (the gradient of a same-shaped output, layout b) added. When t has
   none yet and the layouts agree, t simply shares o's buffer instead of copying it: o is dead
   once its node's backward has run, and each node passes its buffer on to one input at
   most. */
static void grad_pass(pf_gstate *S, pf_tstate *t, const pf_tstate *o, int b, int n, int c, int h,
                      int w) {
    int acc;
    if (t->need_grad && !t->grad_set && t->block == b) {
        t->grad = o->grad;
        t->gslot = o->gslot;
        if (t->gslot >= 0) S->grefs[t->gslot]++;
        t->grad_set = 1;
        return;
    }
    float *dx = grad_for(S, t, &acc);
    if (dx) pf_cpu_axpy_layout(dx, t->block, o->grad, b, 1.0f, n, c, h, w, acc);
}

/* Backward-weights of convolution node nd into the flat gradients from dd (its output's
   gradient in the layout it ran on): FSRCNN's sub-pixel layer through its own form, a weight
   another layer has written this step already (shared weights) through wtmp, then added. */
static int conv_weight_grads(const pf_gctx *m, pf_gstate *S, pf_conv *c, const pf_gnode *nd,
                             const float *dd, char *err, size_t errlen) {
    const pf_net *g = m->net;
    int bi = pf_net_conv_bias(g, nd->conv);     /* -1: no bias, gb unused */
    const pf_param_info *wt = &g->tensors[nd->param], *bt = bi >= 0 ? &g->tensors[bi] : NULL;
    float *gw = m->grads + wt->offset, *gb = bt ? m->grads + bt->offset : NULL;
    if (nd->conv == g->sub_conv) {  /* FSRCNN: gradients of the sub-pixel form first */
        gw = m->sub_dw;
        gb = m->sub_dw + (size_t)c->oc * c->ic * c->k * c->k;
    }
    int add_w = S->wuses[nd->param] > 1 && S->wset[nd->param];
    if (add_w) {
        gw = S->wtmp;
        gb = S->wtmp + wt->numel;
    }
    S->wset[nd->param] = 1;
    const pf_gconv_io *io = &S->io[nd - g->node];
    TRY(pf_conv_backward_weights(c, io->rs ? io->xin : S->ts[nd->in[0]].data, dd, gw, gb, err,
                                 errlen));
    if (nd->conv == g->sub_conv) pf_net_sub_grads(g, m->sub_dw, m->grads);
    if (add_w) {
        pf_cpu_axpy(m->grads + wt->offset, S->wtmp, 1.0f, wt->numel, 1);
        if (bt) pf_cpu_axpy(m->grads + bt->offset, S->wtmp + wt->numel, 1.0f, bt->numel, 1);
    }
    return 0;
}

/* A convolution node's backward: the fused activation's mask, the residual's identity,
   backward-weights (conv_weight_grads; not with S->no_param_grads) and backward-data, each
   side converted where the convolution runs on other layouts. */
static int conv_backward(const pf_gctx *m, pf_gstate *S, pf_conv *c, const pf_gnode *nd,
                         char *err, size_t errlen) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    float *dy = o->grad, *dx;
    int acc = 0;
    if (c->relu) pf_cpu_act_mask_backward(dy, o->data, c->alpha, o->numel);
    const float *dd = dy;
    if (nd->n_in > 1) {
        /* out = identity + scale * conv: the identity gets dy as it is */
        grad_pass(S, &S->ts[nd->in[1]], o, o->block, S->n, g->t[nd->out].c, o->h, o->w);
        if (nd->scale != 1.0f) {
            float *t0 = gscratch(S, 0, o->numel);
            if (!t0) return 0;      /* out of memory: reported by the caller */
            pf_cpu_axpy(t0, dy, nd->scale, o->numel, 0);
            dd = t0;
        }
    }
    pf_gconv_io *io = &S->io[nd - g->node];
    if (io->rd) {   /* the gradient in the layout the convolution ran on */
        TRY(pf_reorder_run(&io->dy_to_rd, dd, io->yrd, err, errlen));
        dd = io->yrd;
    }
    if (!S->no_param_grads) TRY(conv_weight_grads(m, S, c, nd, dd, err, errlen));
    if ((dx = grad_for(S, a, &acc))) {
        float *t1;
        if (io->rs) {
            TRY(pf_conv_backward_data(c, dd, io->dxin, err, errlen));
            if (!acc) return pf_reorder_run(&io->drs_back, io->dxin, dx, err, errlen);
            if (!(t1 = gscratch(S, 1, a->numel))) return 0;
            TRY(pf_reorder_run(&io->drs_back, io->dxin, t1, err, errlen));
        } else {
            if (!acc) return pf_conv_backward_data(c, dd, dx, err, errlen);
            if (!(t1 = gscratch(S, 1, a->numel))) return 0;
            TRY(pf_conv_backward_data(c, dd, t1, err, errlen));
        }
        pf_cpu_axpy(dx, t1, 1.0f, a->numel, 1);
    }
    return 0;
}

/* dx (NULL: none wanted) of a node whose kernel overwrites its output, zeroed first unless a
   contribution is added to it (acc). */
static float *grad_zeroed(pf_gstate *S, pf_tstate *t, int *acc) {
    float *dx = grad_for(S, t, acc);
    if (dx && !*acc) memset(dx, 0, t->numel * sizeof(float));
    return dx;
}

/* A pixel shuffle's (unshuffle's) backward, the other permutation: written into dx, or, when
   dx holds a contribution already, into a temporary added to it. */
static void shuffle_backward(pf_gstate *S, const pf_gnode *nd, pf_tstate *a, int ca,
                             const pf_tstate *o, int C) {
    int acc = 0;
    float *dx = grad_for(S, a, &acc);
    if (!dx) return;
    float *dst = acc ? gscratch(S, 1, a->numel) : dx;
    if (!dst) return;
    if (acc && a->padded) memset(dst, 0, a->numel * sizeof(float));   /* padding lanes */
    if (nd->op == PF_G_SHUFFLE)
        pf_pixel_shuffle_backward(dst, o->grad, S->n, C, a->h, a->w, nd->r, a->block, o->block);
    else
        pf_pixel_shuffle_forward(dst, o->grad, S->n, ca, o->h, o->w, nd->r, o->block, a->block);
    if (acc) pf_cpu_axpy(dx, dst, 1.0f, a->numel, 1);
}

/* A deformable convolution node's backward: weight and bias gradients (not with
   S->no_param_grads) and those of x, offset and mask where they need one. */
static int dcn_backward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd, char *err,
                        size_t errlen) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[nd->out], *t[3];
    float *d[3];
    int acc[3] = { 0, 0, 0 };
    for (int i = 0; i < 3; i++) {
        t[i] = &S->ts[nd->in[i]];
        d[i] = grad_zeroed(S, t[i], &acc[i]);
        if (S->goom) return 0;  /* out of memory: reported by the caller */
    }
    const pf_param_info *wt = &g->tensors[nd->param];
    const pf_param_info *bt = nd->dcn.has_bias ? wt + 1 : NULL;
    float *dw = S->no_param_grads ? NULL : m->grads + wt->offset;
    float *db = dw && bt ? m->grads + bt->offset : NULL;
    /* shared weights (one layer applied at several places, as conv_weight_grads): the first
       backward writes them, the later ones write wtmp and add it */
    int add_w = dw && S->wuses[nd->param] > 1 && S->wset[nd->param];
    if (dw) S->wset[nd->param] = 1;
    if (add_w) {
        dw = S->wtmp;
        db = bt ? S->wtmp + wt->numel : NULL;
    }
    TRY(pf_dcn_backward(&S->dcn[nd - g->node], m->params + wt->offset, dw, db, o->grad,
                        o->block, t[0]->data, t[0]->block, t[1]->data, t[1]->block, t[2]->data,
                        t[2]->block, d[0], d[1], d[2], err, errlen));
    if (add_w) {
        pf_cpu_axpy(m->grads + wt->offset, S->wtmp, 1.0f, wt->numel, 1);
        if (bt) pf_cpu_axpy(m->grads + bt->offset, S->wtmp + wt->numel, 1.0f, bt->numel, 1);
    }
    return 0;
}

/* A linear node's backward: weight and bias gradients (not with S->no_param_grads) and its
   input's, each side through the plain buffers of the layer. */
static int linear_backward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd, char *err,
                           size_t errlen) {
    const pf_net *g = m->net;
    pf_linear *l = &S->lin[nd - g->node];
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    int ca = g->t[nd->in[0]].c, acc = 0;
    const pf_param_info *wt = &g->tensors[nd->param], *bt = &g->tensors[nd->param + 1];
    pf_cpu_concat_part(o->grad, l->out, o->block, o->numel, l->dy, l->out, 1, 0, S->n, 1, 1, 0,
                       0);
    float *dx = grad_zeroed(S, a, &acc);
    if (S->goom) return 0;      /* out of memory: reported by the caller */
    TRY(pf_linear_backward(l, m->params + wt->offset,
                           S->no_param_grads ? NULL : m->grads + wt->offset,
                           S->no_param_grads ? NULL : m->grads + bt->offset, dx != NULL, err,
                           errlen));
    if (dx)
        pf_cpu_concat_part(dx, ca, a->block, a->numel, l->dx, ca, 1, 0, S->n, a->h, a->w, 1,
                           acc);
    return 0;
}

/* A BatchNorm2d node's backward (training plans): through the batch statistics. */
static void batchnorm_backward(const pf_gctx *m, pf_gstate *S, const pf_gnode *nd) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    int acc = 0;
    const pf_param_info *wt = &g->tensors[nd->param], *bt = &g->tensors[nd->param + 1];
    float *dx = grad_for(S, a, &acc);
    if (S->goom || (!dx && S->no_param_grads)) return;
    pf_cpu_batchnorm_backward(dx, S->no_param_grads ? NULL : m->grads + wt->offset,
                              S->no_param_grads ? NULL : m->grads + bt->offset, o->grad,
                              a->data, m->params + wt->offset, S->bn_save + nd->stat, S->n,
                              g->t[nd->out].c, (size_t)o->h * (size_t)o->w, o->block, a->block,
                              acc);
}

/* Backward of an EDVR TSA-fusion node (tsa_forward's). PF_G_MUL's residual gets dy last:
   passed on, its buffer may be dy's own. */
static void tsa_backward(const pf_net *g, pf_gstate *S, const pf_gnode *nd) {
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
    int n = S->n, C = g->t[nd->in[0]].c, acc = 0, acc1 = 0;
    float *dx = grad_for(S, a, &acc);
    if (nd->op == PF_G_MUL) {
        pf_tstate *f = &S->ts[nd->in[1]];
        float *d1 = grad_for(S, f, &acc1);
        if (dx || d1)
            pf_cpu_mul_backward(dx, d1, o->grad, a->data, f->data, nd->scale, n, C,
                                g->t[nd->in[1]].c, o->h, o->w, o->block, a->block, f->block,
                                acc, acc1);
        if (nd->n_in > 2) grad_pass(S, &S->ts[nd->in[2]], o, o->block, n, C, o->h, o->w);
    } else if (!dx) {
        return;
    } else if (nd->op == PF_G_CHSUM) {
        pf_cpu_chsum_backward(dx, o->grad, n, C, o->h, o->w, o->block, a->block, acc);
    } else {
        pf_cpu_pool3_backward(dx, o->grad, a->data, nd->op == PF_G_MAXPOOL3, n, C, a->h, a->w,
                              o->block, a->block, acc);
    }
}

/* PF_G_MUL_CH's backward (n samples, C channels): the product's gradients first, the
   residual's last. Were the residual also the factor x, passing dy to it first would make dx
   dy's own buffer, and the scales' gradient would read dy after dx had been added into it. */
static void mul_ch_backward(pf_gstate *S, const pf_gnode *nd, int n, int C) {
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]], *s = &S->ts[nd->in[1]];
    int b = o->block, acc;
    size_t hw = (size_t)o->h * (size_t)o->w, cs = (size_t)pf_blk_c(C, s->block);
    float *dx;
    if ((dx = grad_for(S, a, &acc)))
        pf_cpu_mul_ch_backward_x(dx, o->grad, s->data, cs, nd->scale, n, C, hw, b, acc);
    if ((dx = grad_for(S, s, &acc)))
        pf_cpu_mul_ch_backward_s(dx, o->grad, a->data, cs, nd->scale, n, C, hw, b, acc);
    if (nd->n_in > 2) grad_pass(S, &S->ts[nd->in[2]], o, b, n, C, o->h, o->w);
}

/* Backward of one node (its output gradient is set): dispatch to its kernels, each input's
   gradient from grad_for (first contribution writes, the others add). */
static int backward_node(const pf_gctx *m, pf_gstate *S, pf_conv *convs, const pf_gnode *nd,
                         char *err, size_t errlen) {
    const pf_net *g = m->net;
    int n = S->n, C = g->t[nd->out].c, acc = 0, acc1 = 0;
    pf_tstate *o = &S->ts[nd->out], *a = nd->n_in ? &S->ts[nd->in[0]] : NULL;
    pf_tstate *i1 = nd->n_in > 1 ? &S->ts[nd->in[1]] : NULL;
    if (!o->grad_set) return 0;         /* nothing flows back through here */
    int b = o->block, H = o->h, W = o->w;
    size_t hw = (size_t)H * (size_t)W;
    float *dy = o->grad, *dx, *d1, fm[PF_G_MAX_CH];
    switch (nd->op) {
    case PF_G_INPUT:
        if (S->dx)      /* d loss / d lq, asked of pf_graph_backward_from */
            pf_cpu_input_backward(S->dx, dy, n, C, H, W, g->use_mean ? g->range : 1.0f, b,
                                  S->dx_set);
        S->dx_set |= S->dx != NULL;
        return 0;
    case PF_G_BILINEAR_IN:
    case PF_G_BICUBIC_IN:
    case PF_G_ZERO:
        return 0;
    case PF_G_SLICE:
        if ((dx = grad_zeroed(S, a, &acc)))
            pf_cpu_concat_part(dx, g->t[nd->in[0]].c, a->block, a->numel, dy, C, b, nd->c0, n,
                               a->h, a->w, 1, acc);
        return 0;
    case PF_G_AFFINE:
        if ((dx = grad_zeroed(S, a, &acc)))
            pf_affine_ch_backward(dx, dy, n, C, H, W, nd->mul, b, a->block);
        return 0;
    case PF_G_RESIZE:
        if ((dx = grad_zeroed(S, a, &acc)))
            pf_resize_bilinear_backward(dx, dy, n, C, a->h, a->w, H, W, nd->ac,
                                        pf_net_resize_mult(nd, a->h, a->w, H, W, fm), b,
                                        a->block);
        return 0;
    case PF_G_AVGPOOL2:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_avgpool2_backward(dx, dy, n, C, a->h, a->w, H, W, b, a->block, acc);
        return 0;
    case PF_G_MAXPOOL2:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_maxpool2_backward(dx, dy, a->data, n, C, a->h, a->w, b, a->block, acc);
        return 0;
    case PF_G_WARP:
        d1 = grad_zeroed(S, i1, &acc1);
        dx = grad_zeroed(S, a, &acc);
        if (!S->goom && (dx || d1))
            pf_flow_warp_backward(dx, d1, dy, a->data, i1->data, n, C, H, W,
                                  (pf_pad_mode)nd->pad, b, a->block, i1->block);
        return 0;
    case PF_G_CONV:
        return conv_backward(m, S, &convs[nd->conv], nd, err, errlen);
    case PF_G_PRELU:
        dx = grad_for(S, a, &acc);
        d1 = S->no_param_grads ? NULL : m->grads + g->tensors[nd->param].offset;
        if ((dx || d1) &&
            pf_cpu_prelu_backward(dx, d1, dy, a->data, m->params + g->tensors[nd->param].offset,
                                  n, C, hw, b, acc)) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            return -1;
        }
        return 0;
    case PF_G_TANH:
    case PF_G_SIGMOID:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_tanh_sigmoid_backward(dx, dy, o->data, n, C, hw, b, nd->op == PF_G_TANH, acc);
        return 0;
    case PF_G_RELU:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_relu_backward(dx, dy, o->data, nd->alpha, n, C, hw, b, acc);
        return 0;
    case PF_G_BATCHNORM:
        batchnorm_backward(m, S, nd);
        return 0;
    case PF_G_LINEAR:
        return linear_backward(m, S, nd, err, errlen);
    case PF_G_DCN:
        return dcn_backward(m, S, nd, err, errlen);
    case PF_G_MUL:
    case PF_G_CHSUM:
    case PF_G_MAXPOOL3:
    case PF_G_AVGPOOL3:
        tsa_backward(g, S, nd);
        return 0;
    case PF_G_ADD:
        grad_pass(S, a, o, b, n, C, H, W);
        if ((dx = grad_for(S, i1, &acc)))
            pf_cpu_axpy_layout(dx, i1->block, dy, b, nd->scale, n, C, H, W, acc);
        return 0;
    case PF_G_GAP:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_gap_backward(dx, dy, n, C, (size_t)a->h * (size_t)a->w, b, acc);
        return 0;
    case PF_G_MUL_CH:
        mul_ch_backward(S, nd, n, C);
        return 0;
    case PF_G_CONCAT:
        for (int i = 0, c_off = 0; i < nd->n_in; c_off += g->t[nd->in[i]].c, i++) {
            pf_tstate *t = &S->ts[nd->in[i]];
            if ((dx = grad_for(S, t, &acc)))
                pf_cpu_concat_part(dy, C, b, o->numel, dx, g->t[nd->in[i]].c, t->block, c_off,
                                   n, H, W, 0, acc);
        }
        return 0;
    case PF_G_SHUFFLE:
    case PF_G_UNSHUFFLE:
        shuffle_backward(S, nd, a, g->t[nd->in[0]].c, o, C);
        return 0;
    case PF_G_NEAREST:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_nearest_backward(dx, dy, n, C, a->h, a->w, H, W, nd->r, b, acc);
        return 0;
    }
    snprintf(err, errlen, "%s: unknown graph op %d", g->type, (int)nd->op);
    return -1;
}

/* The gradients backward starts from: the output's (out_set: in its buffer already, or,
   with dout, from the caller's NCHW) and the taps' (dtaps, NCHW), each converted into the
   tensor's layout in a buffer of the gradient pool (held until the tap's producer has run
   backward). 0, or -1 out of memory (S->goom). */
static int seed_grads(const pf_gctx *m, pf_gstate *S, int out_set, const float *dout,
                      const float *const *dtaps) {
    const pf_net *g = m->net;
    pf_tstate *o = &S->ts[g->output];
    o->grad_set = out_set;
    if (dout && o->grad && o->padded) memset(o->grad, 0, o->numel * sizeof(float));
    if (dout && o->grad)
        pf_cpu_concat_part(o->grad, g->t[g->output].c, o->block, o->numel, (float *)dout,
                           g->t[g->output].c, 1, 0, S->n, o->h, o->w, 1, 0);
    for (int k = 0; dtaps && k < g->n_taps; k++) {
        pf_tstate *t = &S->ts[g->taps[k]];
        int acc = t->grad_set;
        if (!dtaps[k] || !t->need_grad) continue;
        if (!t->grad && gacquire(S, t)) return -1;      /* padding zeroed */
        if (!acc && t->padded && t->grad == t->grad_own)    /* the output as a tap */
            memset(t->grad, 0, t->numel * sizeof(float));
        t->grad_set = 1;
        pf_cpu_concat_part(t->grad, g->t[g->taps[k]].c, t->block, t->numel, (float *)dtaps[k],
                           g->t[g->taps[k]].c, 1, 0, S->n, t->h, t->w, 1, acc);
    }
    return 0;
}

/* pf_graph_backward, pf_graph_backward_from and pf_graph_backward_input: the output's
   gradient set (out_set), or given (dout), the taps' (dtaps), dx (see
   pf_graph_backward_from), the parameter gradients (params; 0: x->grads not written). */
static int backward_run(const pf_gctx *m, pf_gstate *S, int out_set, const float *dout,
                        const float *const *dtaps, float *dx, int params, char *err,
                        size_t errlen) {
    const pf_net *g = m->net;
    pf_conv *convs = m->convs;
    if (params) memset(m->grads, 0, m->net->n_params * sizeof(float));
    S->no_param_grads = !params;
    memset(S->wset, 0, (size_t)g->n_tensors * sizeof *S->wset);
    for (int i = 0; i < g->n_t; i++) {
        S->ts[i].grad_set = 0;
        S->ts[i].grad = S->ts[i].grad_own;     /* NULL but for the output */
        S->ts[i].gslot = -1;
        /* an input_grad plan computes the gradients only the input needs when dx is asked */
        if (S->need_param)
            S->ts[i].need_grad = !dx ? S->need_param[i] : params ? S->need[i]
                                                                  : S->need_input[i];
    }
    for (int k = 0; k < S->n_gslots; k++) S->grefs[k] = 0;
    S->tslot[0] = S->tslot[1] = -1;
    S->dx = dx;
    S->dx_set = 0;
    if (seed_grads(m, S, out_set, dout, dtaps)) goto oom;   /* out_set: the loss wrote d_out */
    int timed = prof_on();
    prof.calls[1] += timed;
    for (int k = g->n_node - 1; k >= 0; k--) {
        double t0 = timed ? prof_now() : 0;
        TRY(backward_node(m, S, convs, &g->node[k], err, errlen));
        if (timed) prof_add(m, &g->node[k], 1, t0);
        if (S->goom) goto oom;
        /* the node's output gradient is consumed: its slot is free unless passed on; its
           temporaries are free */
        pf_tstate *o = &S->ts[g->node[k].out];
        if (o->gslot >= 0) S->grefs[o->gslot]--;
        o->gslot = -1;
        for (int i = 0; i < 2; i++) {
            if (S->tslot[i] >= 0) S->grefs[S->tslot[i]]--;
            S->tslot[i] = -1;
        }
    }
    S->dx = NULL;
    S->no_param_grads = 0;
    return 0;
oom:
    S->dx = NULL;
    S->no_param_grads = 0;
    snprintf(err, errlen, "%s: out of memory for gradients of a %d-sample batch",
             m->net->type, S->n);
    return -1;
}

int pf_graph_backward(const pf_gctx *m, pf_gstate *S, char *err, size_t errlen) {
    return backward_run(m, S, 1, NULL, NULL, NULL, 1, err, errlen);
}

/* pf_graph_backward_from (params 1) and pf_graph_backward_input (params 0). */
static int backward_given(const pf_gctx *m, pf_gstate *S, const float *dout,
                          const float *const *dtaps, float *dx, int params, char *err,
                          size_t errlen) {
    const pf_net *g = m->net;
    if (!S->training) {
        snprintf(err, errlen, "%s: backward of an inference plan", g->type);
        return -1;
    }
    if (dx && !S->need_param) {
        snprintf(err, errlen, "%s: an input gradient from a plan made without input_grad",
                 g->type);
        return -1;
    }
    TRY(backward_run(m, S, dout != NULL, dout, dtaps, dx, params, err, errlen));
    if (dx && !S->dx_set) {     /* no gradient reached the input */
        const pf_tstate *in = &S->ts[g->input];
        memset(dx, 0, (size_t)S->n * g->t[g->input].c * in->h * in->w * sizeof(float));
    }
    return 0;
}

int pf_graph_backward_from(const pf_gctx *m, pf_gstate *S, const float *dout,
                           const float *const *dtaps, float *dx, char *err, size_t errlen) {
    return backward_given(m, S, dout, dtaps, dx, 1, err, errlen);
}

int pf_graph_backward_input(const pf_gctx *m, pf_gstate *S, const float *dout,
                            const float *const *dtaps, float *dx, char *err, size_t errlen) {
    if (!dx) {
        snprintf(err, errlen, "%s: an input-only backward without dx", m->net->type);
        return -1;
    }
    return backward_given(m, S, dout, dtaps, dx, 0, err, errlen);
}

int pf_graph_conversions(const pf_net *net, const pf_gstate *S, pf_gconversion *out, int max) {
    int count = 0;
    for (int k = 0; S && S->io && k < net->n_node; k++) {
        const pf_gnode *nd = &net->node[k];
        const pf_gconv_io *io = &S->io[k];
        if (nd->op != PF_G_CONV || (!io->rs && !io->rd)) continue;
        if (count < max)
            out[count] = (pf_gconversion){ .conv = nd->conv,
                                           .in_block = S->ts[nd->in[0]].block,
                                           .run_src = io->rs,
                                           .out_block = S->ts[nd->out].block,
                                           .run_dst = io->rd };
        count++;
    }
    return count;
}
