/*  net — the network description and what both executors derive from it (see net.h). */
#include "nn/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "nn/video_layers.h"

/* ---- building ----------------------------------------------------------------------------- */

void pf_net_init(pf_net *g) {
    memset(g, 0, sizeof *g);
    g->input = g->output = -1;
    g->range = 1.0f;
    g->sub_conv = -1;
}

void pf_net_free(pf_net *g) {
    free(g->t);
    free(g->node);
    free(g->conv);
    free(g->tensors);
    free(g->init);
    free(g->sub_idx);
    free(g->buffers);
    pf_net_init(g);
}

/* Room for one more element in *arr (n used of *cap, elem bytes each); 0, or -1 with g->oom
   set. */
static int grow(pf_net *g, void **arr, int n, int *cap, size_t elem) {
    if (n < *cap) return 0;
    int c = *cap ? 2 * *cap : 64;
    void *a = realloc(*arr, (size_t)c * elem);
    if (!a) {
        g->oom = 1;
        return -1;
    }
    *arr = a;
    *cap = c;
    return 0;
}

int pf_net_tensor(pf_net *g, int c, int mul, int div, int one) {
    if (grow(g, (void **)&g->t, g->n_t, &g->cap_t, sizeof *g->t)) return -1;
    g->t[g->n_t] = (pf_gtensor){ .c = c, .mul = mul, .div = div, .one = one };
    return g->n_t++;
}

int pf_net_node(pf_net *g, pf_gop op, const int *in, int n_in, int out_c, int out_mul,
                int out_div, int out_one) {
    if (g->oom || n_in < 0 || n_in > PF_G_MAX_IN) return -1;
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0) return -1;
    if (grow(g, (void **)&g->node, g->n_node, &g->cap_node, sizeof *g->node)) return -1;
    int out = pf_net_tensor(g, out_c, out_mul, out_div, out_one);
    if (out < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node++];
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    nd->n_in = n_in;
    for (int i = 0; i < n_in; i++) nd->in[i] = in[i];
    nd->out = out;
    nd->conv = nd->param = -1;
    nd->scale = 1.0f;
    nd->r = 1;
    for (int c = 0; c < PF_G_MAX_CH; c++) nd->mul[c] = 1.0f;
    return out;
}

int pf_net_round(pf_net *g, int t, int round) {
    if (t >= 0) g->t[t].round = round;
    return t;
}

/* Room for one more parameter tensor (both per-tensor arrays). */
static int grow_tensors(pf_net *g) {
    if (g->n_tensors < g->cap_tensors) return 0;
    int cap = g->cap_tensors ? 2 * g->cap_tensors : 128;
    pf_param_info *t = realloc(g->tensors, (size_t)cap * sizeof *t);
    if (!t) return g->oom = 1, -1;
    g->tensors = t;
    pf_param_init *in = realloc(g->init, (size_t)cap * sizeof *in);
    if (!in) return g->oom = 1, -1;
    g->init = in;
    g->cap_tensors = cap;
    return 0;
}

int pf_net_add_tensor(pf_net *g, const char *name, int ndim, const int64_t *shape,
                      pf_param_init init) {
    if (g->oom || grow_tensors(g)) return -1;
    pf_param_info *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->offset = g->n_params;
    t->numel = 1;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->numel *= (size_t)shape[i];
    }
    g->n_params += t->numel;
    g->init[g->n_tensors] = init;
    return g->n_tensors++;
}

int pf_net_add_buffer(pf_net *g, const char *name, int ndim, const int64_t *shape,
                      const float *value) {
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= (size_t)shape[i];
    if (numel > PF_NET_BUFFER_MAX || ndim < 1 || ndim > 4) g->oom = 1;
    if (g->oom || grow(g, (void **)&g->buffers, g->n_buffers, &g->cap_buffers, sizeof *g->buffers))
        return -1;
    pf_net_buffer *b = &g->buffers[g->n_buffers];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->ndim = ndim;
    memcpy(b->shape, shape, (size_t)ndim * sizeof *shape);
    b->numel = numel;
    memcpy(b->value, value, numel * sizeof *value);
    b->before = g->n_tensors;
    return g->n_buffers++;
}

int pf_net_add_batchnorm(pf_net *g, const char *name, int x) {
    if (x < 0 || g->oom) return -1;
    pf_gtensor t = g->t[x];
    char tn[128];
    int64_t shape[1] = { t.c };
    snprintf(tn, sizeof tn, "%s.weight", name);
    int w = pf_net_add_tensor(g, tn, 1, shape, (pf_param_init){ PF_INIT_CONST, 1.0, 1.0 });
    snprintf(tn, sizeof tn, "%s.bias", name);
    int b = pf_net_add_tensor(g, tn, 1, shape, (pf_param_init){ PF_INIT_CONST, 1.0, 0.0 });
    int out = w < 0 || b < 0 ? -1 : pf_net_node(g, PF_G_BATCHNORM, &x, 1, t.c, t.mul, t.div,
                                                 t.one);
    if (out < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node - 1];
    nd->param = w;
    nd->bn = g->n_bn++;
    nd->stat = g->n_running;
    g->n_running += 2 * (size_t)t.c;
    pf_net_round(g, out, t.round);
    return out;
}

int pf_net_add_linear(pf_net *g, const char *name, int x, int in_features, int out_features) {
    if (x < 0 || g->oom || in_features < 1 || out_features < 1) return -1;
    char tn[128];
    int64_t ws[2] = { out_features, in_features }, bs[1] = { out_features };
    pf_param_init ui = { PF_INIT_UNIFORM, (double)in_features, 1.0 };
    snprintf(tn, sizeof tn, "%s.weight", name);
    int w = pf_net_add_tensor(g, tn, 2, ws, ui);
    snprintf(tn, sizeof tn, "%s.bias", name);
    int b = pf_net_add_tensor(g, tn, 1, bs, ui);
    int out = w < 0 || b < 0 ? -1 : pf_net_node(g, PF_G_LINEAR, &x, 1, out_features, 1, 1, 1);
    if (out < 0) return -1;
    g->node[g->n_node - 1].param = w;
    return out;
}

int pf_net_add_dcn(pf_net *g, const char *name, int x, int offset, int mask, int ic, int oc,
                   int k, int stride, int pad, int dilation, int groups, int deform_groups,
                   int has_bias) {
    if (x < 0 || offset < 0 || mask < 0 || g->oom || ic < 1 || oc < 1 || k < 1 || stride < 1 ||
        pad < 0 || dilation < 1 || groups < 1 || deform_groups < 1)
        return -1;
    char tn[128];
    int64_t ws[4] = { oc, ic / groups > 0 ? ic / groups : 1, k, k }, bs[1] = { oc };
    snprintf(tn, sizeof tn, "%s.weight", name);
    int w = pf_net_add_tensor(g, tn, 4, ws, (pf_param_init){ PF_INIT_UNIFORM,
                                                             (double)ic * k * k, 1.0 });
    snprintf(tn, sizeof tn, "%s.bias", name);
    int b = has_bias ? pf_net_add_tensor(g, tn, 1, bs, (pf_param_init){ PF_INIT_CONST, 1.0,
                                                                         0.0 })
                     : 0;
    pf_gtensor t = g->t[x];
    int in[3] = { x, offset, mask };
    int out = w < 0 || b < 0 ? -1 : pf_net_node(g, PF_G_DCN, in, 3, oc, t.mul, t.div * stride,
                                                 t.one);
    if (out < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node - 1];
    nd->param = w;
    nd->dcn.k = k;
    nd->dcn.stride = stride;
    nd->dcn.pad = pad;
    nd->dcn.dil = dilation;
    nd->dcn.groups = groups;
    nd->dcn.dg = deform_groups;
    nd->dcn.has_bias = has_bias != 0;
    pf_net_round(g, out, t.round);
    return out;
}

int pf_net_add_mul(pf_net *g, int x0, int x1, int res, float scale) {
    if (x0 < 0 || x1 < 0) return -1;
    int in[3] = { x0, x1, res };
    pf_gtensor t = g->t[x0];
    int out = pf_net_node(g, PF_G_MUL, in, res >= 0 ? 3 : 2, t.c, t.mul, t.div, t.one);
    if (out < 0) return -1;
    g->node[g->n_node - 1].scale = scale;
    return pf_net_round(g, out, t.round);
}

int pf_net_add_chsum(pf_net *g, int x) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    return pf_net_round(g, pf_net_node(g, PF_G_CHSUM, &x, 1, 1, t.mul, t.div, t.one), t.round);
}

int pf_net_add_pool3(pf_net *g, int x, int max) {
    if (x < 0) return -1;
    pf_gtensor t = g->t[x];
    return pf_net_round(g, pf_net_node(g, max ? PF_G_MAXPOOL3 : PF_G_AVGPOOL3, &x, 1, t.c,
                                       t.mul, t.div * 2, t.one), t.round);
}

void pf_net_bn_init(const pf_net *g, float *running, int64_t *tracked) {
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        if (nd->op != PF_G_BATCHNORM) continue;
        int c = g->t[nd->out].c;
        for (int j = 0; j < c; j++) {
            running[nd->stat + (size_t)j] = 0.0f;
            running[nd->stat + (size_t)c + (size_t)j] = 1.0f;
        }
        tracked[nd->bn] = 0;
    }
}

int pf_net_add_layer(pf_net *g, const char *name, int ic, int oc, int k, int weight_tensor) {
    if (g->oom || weight_tensor < 0 ||
        grow(g, (void **)&g->conv, g->n_convs, &g->cap_convs, sizeof *g->conv))
        return -1;
    pf_nconv *c = &g->conv[g->n_convs];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ic = ic;
    c->oc = oc;
    c->k = k;
    c->stride = 1;
    c->pad = k / 2;
    c->has_bias = 1;
    c->weight = weight_tensor;
    return g->n_convs++;
}

int pf_net_add_conv(pf_net *g, const char *name, int ic, int oc, int k, pf_param_init w_init,
                    pf_param_init b_init) {
    char full[112];
    int64_t ws[4] = { oc, ic, k, k }, bs[1] = { oc };
    snprintf(full, sizeof full, "%s.weight", name);
    int w = pf_net_add_tensor(g, full, 4, ws, w_init);
    snprintf(full, sizeof full, "%s.bias", name);
    if (w < 0 || pf_net_add_tensor(g, full, 1, bs, b_init) < 0) return -1;
    return pf_net_add_layer(g, name, ic, oc, k, w);
}

int pf_net_add_conv_strided(pf_net *g, const char *name, int ic, int oc, int k, int stride,
                            int pad, int has_bias, pf_param_init w_init, pf_param_init b_init) {
    if (stride < 1 || pad < 0 || pad >= k) g->oom = 1;     /* refused like a failed append */
    if (has_bias) {
        int i = pf_net_add_conv(g, name, ic, oc, k, w_init, b_init);
        if (i >= 0) g->conv[i].stride = stride, g->conv[i].pad = pad;
        return i;
    }
    char full[112];
    int64_t ws[4] = { oc, ic, k, k };
    snprintf(full, sizeof full, "%s.weight", name);
    int w = pf_net_add_tensor(g, full, 4, ws, w_init);
    int i = pf_net_add_layer(g, name, ic, oc, k, w);
    if (i >= 0) {
        g->conv[i].stride = stride;
        g->conv[i].pad = pad;
        g->conv[i].has_bias = 0;
    }
    return i;
}

int pf_net_conv_bias(const pf_net *g, int i) {
    return g->conv[i].has_bias ? g->conv[i].weight + 1 : -1;
}

/* ---- parameters --------------------------------------------------------------------------- */

void pf_net_init_params(const pf_net *g, float *params, uint64_t seed) {
    for (int i = 0; i < g->n_tensors; i++) {
        const pf_param_info *t = &g->tensors[i];
        const pf_param_init *in = &g->init[i];
        pf_rng r = pf_rng_make(seed, (uint64_t)i, 0);
        float *p = params + t->offset;
        for (size_t j = 0; j < t->numel; j++) {
            double v;
            if (in->kind == PF_INIT_CONST) {
                v = in->scale;
            } else if (in->kind == PF_INIT_UNIFORM) {
                v = (2.0 * pf_rng_uniform(&r) - 1.0) / sqrt(in->fan_in);
            } else {
                double u1 = pf_rng_uniform(&r), u2 = pf_rng_uniform(&r);
                if (u1 < 1e-300) u1 = 1e-300;
                v = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2) * sqrt(2.0 / in->fan_in) *
                    in->scale;
            }
            p[j] = (float)v;
        }
    }
}

int pf_net_input_multiple(const pf_net *g) {
    int q = 1;
    for (int i = 0; i < g->n_t; i++) {
        const pf_gtensor *t = &g->t[i];
        /* a rounded tensor divides its rounded size, whatever the LQ size, when round * mul
           is a multiple of div */
        if (t->one || (t->round > 0 && t->round * t->mul % t->div == 0)) continue;
        if (t->div > q) q = t->div;
    }
    return q;
}

const float *pf_net_resize_mult(const pf_gnode *nd, int in_h, int in_w, int out_h, int out_w,
                                float fm[2]) {
    if (nd->use_mul == 1) return nd->mul;
    if (nd->use_mul != 2) return NULL;
    fm[0] = (float)((double)out_w / (double)in_w);
    fm[1] = (float)((double)out_h / (double)in_h);
    return fm;
}

size_t pf_net_sub_numel(const pf_net *g) {
    if (g->sub_conv < 0) return 0;
    const pf_nconv *c = &g->conv[g->sub_conv];
    return (size_t)c->oc * c->ic * c->k * c->k + (size_t)c->oc;
}

/* The sub-pixel weights hold, per output channel o r^2 + p, the taps sub_idx maps the
   transposed weight to (others zero), then the bias of channel o repeated over its r^2
   phases (see nn/zoo.c). */
void pf_net_sub_weights(const pf_net *g, const float *params, float *S) {
    const pf_nconv *c = &g->conv[g->sub_conv];
    const pf_param_info *wt = &g->tensors[c->weight], *bt = wt + 1;
    int rr = g->sub_stride * g->sub_stride;
    size_t wn = (size_t)c->oc * c->ic * c->k * c->k;
    memset(S, 0, wn * sizeof(float));
    for (size_t w = 0; w < wt->numel; w++) S[g->sub_idx[w]] = params[wt->offset + w];
    for (int o = 0; o < 3; o++)
        for (int p = 0; p < rr; p++) S[wn + (size_t)o * rr + p] = params[bt->offset + o];
}

void pf_net_sub_grads(const pf_net *g, const float *S, float *grads) {
    const pf_nconv *c = &g->conv[g->sub_conv];
    const pf_param_info *wt = &g->tensors[c->weight], *bt = wt + 1;
    int rr = g->sub_stride * g->sub_stride;
    size_t wn = (size_t)c->oc * c->ic * c->k * c->k;
    for (size_t w = 0; w < wt->numel; w++) grads[wt->offset + w] = S[g->sub_idx[w]];
    for (int o = 0; o < 3; o++) {
        double s = 0;
        for (int p = 0; p < rr; p++) s += S[wn + (size_t)o * rr + p];
        grads[bt->offset + o] = (float)s;
    }
}

/* ---- derived from the node list ------------------------------------------------------------ */

/* need[t] for every t: a node's output needs a gradient when the node has weights (with
   `weights`), reads the input image (with `input`) or reads a tensor that needs one. */
static void need_from(const pf_net *g, int weights, int input, int *need) {
    memset(need, 0, (size_t)g->n_t * sizeof *need);
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        int o = weights && (nd->op == PF_G_CONV || nd->op == PF_G_PRELU);
        o |= input && nd->op == PF_G_INPUT;
        for (int i = 0; i < nd->n_in; i++) o |= need[nd->in[i]];
        need[nd->out] = o;
    }
}

void pf_net_need_grad(const pf_net *g, int *need) { need_from(g, 1, 0, need); }
void pf_net_need_input_grad(const pf_net *g, int *need) { need_from(g, 1, 1, need); }
void pf_net_need_input_only(const pf_net *g, int *need) { need_from(g, 0, 1, need); }

int pf_net_add_tap(pf_net *g, int t) {
    if (t < 0 || t >= g->n_t || g->n_taps >= PF_NET_MAX_TAPS) return -1;
    for (int k = 0; k < g->n_taps; k++)
        if (g->taps[k] == t) return -1;
    g->taps[g->n_taps] = t;
    return g->n_taps++;
}

int pf_net_backward_reads_in(const pf_net *g, int k, int i) {
    const pf_gnode *nd = &g->node[k];
    switch (nd->op) {
    case PF_G_CONV:
    case PF_G_PRELU:
    case PF_G_BATCHNORM:
    case PF_G_LINEAR:
    case PF_G_MAXPOOL2:
    case PF_G_MAXPOOL3: return i == 0;
    case PF_G_DCN: return i < 3;
    case PF_G_MUL:
    case PF_G_MUL_CH:
    case PF_G_WARP: return i < 2;
    default: return 0;
    }
}

int pf_net_backward_reads_out(const pf_net *g, int k) {
    const pf_gnode *nd = &g->node[k];
    return nd->op == PF_G_TANH || nd->op == PF_G_SIGMOID || nd->op == PF_G_RELU ||
           (nd->op == PF_G_CONV && g->conv[nd->conv].act);
}

void pf_net_last_use(const pf_net *g, int training, int *last) {
    for (int i = 0; i < g->n_t; i++) last[i] = -1;
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        for (int i = 0; i < nd->n_in; i++) last[nd->in[i]] = k;
    }
    if (g->output >= 0) last[g->output] = g->n_node;
    for (int k = 0; k < g->n_taps; k++) last[g->taps[k]] = g->n_node;
    for (int k = 0; training && k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        for (int i = 0; i < nd->n_in; i++)
            if (pf_net_backward_reads_in(g, k, i)) last[nd->in[i]] = g->n_node;
        if (pf_net_backward_reads_out(g, k)) last[nd->out] = g->n_node;
    }
}

/* Best-fitting free slot for `need` floats (grown to fit; the first n_fixed slots cannot grow
   and are taken only when large enough), else a new one; marked busy. */
static int take_slot(size_t *size, int *busy, int *n_slots, size_t need, int n_fixed) {
    int best = -1;
    for (int s = 0; s < *n_slots; s++) {
        if (busy[s] || (s < n_fixed && size[s] < need)) continue;
        if (best < 0 || (size[s] >= need && (size[best] < need || size[s] < size[best])))
            best = s;
    }
    if (best < 0) best = (*n_slots)++;
    if (size[best] < need) size[best] = need;
    busy[best] = 1;
    return best;
}

int pf_net_assign_slots(const pf_net *g, const size_t *numel, const int *last, int training,
                        int *slot, size_t **size_out) {
    size_t *size = calloc((size_t)g->n_t + 1, sizeof *size);
    int *busy = calloc((size_t)g->n_t + 1, sizeof *busy);
    int n_slots = 0;
    if (!size || !busy) {
        free(size);
        free(busy);
        return -1;
    }
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        /* training: a tensor backward reads gets a slot of its own, leaving the dead ones
           whole for backward's gradients (pf_net_free_after_forward) */
        if (training && last[nd->out] >= g->n_node) {
            slot[nd->out] = n_slots;
            size[n_slots] = numel[nd->out];
            busy[n_slots++] = 1;
        } else {
            slot[nd->out] = take_slot(size, busy, &n_slots, numel[nd->out], 0);
        }
        /* inputs whose last reader this is are free again (after the output took its slot,
           so no node writes over its own input) */
        for (int i = 0; i < nd->n_in; i++)
            if (last[nd->in[i]] == k) busy[slot[nd->in[i]]] = 0;
    }
    free(busy);
    *size_out = size;
    return n_slots;
}

int pf_net_free_after_forward(const pf_net *g, const int *slot, const int *last,
                              const size_t *size, int n_slots, size_t *free_size) {
    int n_free = 0;
    int *kept = calloc((size_t)n_slots + 1, sizeof *kept);
    if (!kept) return 0;
    for (int i = 0; i < g->n_t; i++)
        if (last[i] >= g->n_node && slot[i] >= 0) kept[slot[i]] = 1;
    for (int s = 0; s < n_slots; s++)
        free_size[s] = kept[s] ? 0 : size[s];
    for (int s = 0; s < n_slots; s++) n_free += !kept[s];
    free(kept);
    return n_free;
}

int pf_net_assign_grad_slots(const pf_net *g, const size_t *numel, const int *need,
                             int n_fixed, const size_t *fixed_size, int *gslot,
                             size_t **size_out) {
    size_t *size = calloc((size_t)g->n_t + (size_t)n_fixed + 1, sizeof *size);
    int *busy = calloc((size_t)g->n_t + (size_t)n_fixed + 1, sizeof *busy);
    int n_slots = n_fixed;
    if (!size || !busy) {
        free(size);
        free(busy);
        return -1;
    }
    for (int s = 0; s < n_fixed; s++) {
        size[s] = fixed_size[s];
        busy[s] = fixed_size[s] == 0;       /* not free: never taken */
    }
    for (int i = 0; i < g->n_t; i++) gslot[i] = -1;
    if (g->output >= 0 && need[g->output])
        gslot[g->output] = take_slot(size, busy, &n_slots, numel[g->output], n_fixed);
    /* the taps' gradients are given before backward starts (like the output's), so theirs
       live from the start too */
    for (int k = 0; k < g->n_taps; k++)
        if (need[g->taps[k]] && gslot[g->taps[k]] < 0)
            gslot[g->taps[k]] = take_slot(size, busy, &n_slots, numel[g->taps[k]], n_fixed);
    for (int k = g->n_node - 1; k >= 0; k--) {
        const pf_gnode *nd = &g->node[k];
        /* a node's backward reads its output's gradient and writes its inputs': those that
           have none yet get theirs here (before the output's is given back, so no node
           writes over the gradient it reads) */
        if (gslot[nd->out] < 0) continue;           /* nothing flows back through here */
        for (int i = 0; i < nd->n_in; i++)
            if (need[nd->in[i]] && gslot[nd->in[i]] < 0)
                gslot[nd->in[i]] = take_slot(size, busy, &n_slots, numel[nd->in[i]], n_fixed);
        busy[gslot[nd->out]] = 0;
    }
    free(busy);
    *size_out = size;
    return n_slots;
}

const char *pf_net_op_name(pf_gop op) {
    static const char *names[] = {
        "input", "conv", "prelu", "tanh", "sigmoid", "add", "gap", "mul_ch", "concat",
        "shuffle", "unshuffle", "nearest", "bilinear_in", "bicubic_in", "slice", "affine",
        "resize", "avgpool2", "warp", "zero", "maxpool2", "relu", "batchnorm", "linear", "dcn",
        "mul", "chsum", "maxpool3", "avgpool3",
    };
    return (unsigned)op < sizeof names / sizeof *names ? names[op] : "?";
}

/* A PF_G_DCN node's rules (pf_net_check_node), its error naming the layer. */
static int check_dcn(const pf_net *g, const pf_gnode *nd, int ah, int aw, int fh, int fw,
                     int oh, int ow, char *err, size_t errlen) {
    const pf_param_info *wt = &g->tensors[nd->param];
    int C = g->t[nd->out].c, ca = g->t[nd->in[0]].c, k = nd->dcn.k, s = nd->dcn.stride;
    int kk = k * k, G = nd->dcn.groups, dg = nd->dcn.dg;
    const pf_gtensor *to = &g->t[nd->in[1]], *tm = &g->t[nd->in[2]];
    int ch = (ah + 2 * nd->dcn.pad - nd->dcn.dil * (k - 1) - 1) / s + 1;
    int cw = (aw + 2 * nd->dcn.pad - nd->dcn.dil * (k - 1) - 1) / s + 1;
    char why[160] = "";
    if (ca % dg)
        snprintf(why, sizeof why, "deform_groups %d does not divide its %d input channels", dg,
                 ca);
    else if (ca % G || C % G)
        snprintf(why, sizeof why, "groups %d does not divide its %d input and %d output "
                 "channels", G, ca, C);
    else if (wt->ndim != 4 || wt->shape[0] != C || wt->shape[1] != ca / G || wt->shape[2] != k ||
             wt->shape[3] != k)
        snprintf(why, sizeof why, "weight not [%d, %d, %d, %d] (input of %d channels)", C,
                 ca / G, k, k, ca);
    else if (ah % s || aw % s || ch != oh || cw != ow || oh * s != ah || ow * s != aw)
        snprintf(why, sizeof why, "output not (H + 2 pad - dil (k - 1) - 1) / stride + 1 = "
                 "H / stride");
    else if (to->c != 2 * dg * kk || fh != oh || fw != ow)
        snprintf(why, sizeof why, "offset of %d channels at %d x %d, not 2 x deform_groups %d "
                 "x %d taps = %d at the output's %d x %d", to->c, fh, fw, dg, kk, 2 * dg * kk,
                 oh, ow);
    else if (tm->c != dg * kk || tm->mul != to->mul || tm->div != to->div ||
             tm->one != to->one || tm->round != to->round)
        snprintf(why, sizeof why, "mask of %d channels or another size, not deform_groups %d "
                 "x %d taps = %d at the offset's size", tm->c, dg, kk, dg * kk);
    if (!why[0]) return 0;
    const char *dot = strrchr(wt->name, '.');
    snprintf(err, errlen, "%s: deformable convolution %.*s: %s", g->type,
             dot ? (int)(dot - wt->name) : 95, wt->name, why);
    return -1;
}

int pf_net_check_node(const pf_net *g, const pf_gnode *nd, int ah, int aw, int fh, int fw,
                      int oh, int ow, char *err, size_t errlen) {
    int C = g->t[nd->out].c, ca = nd->n_in ? g->t[nd->in[0]].c : 0;
    const char *why = NULL;
    switch (nd->op) {
    case PF_G_CONV: {
        /* torch.nn.Conv2d's output size, which must be the tensor's planned H / stride */
        const pf_nconv *c = &g->conv[nd->conv];
        int s = c->stride;
        int ch = (ah + 2 * c->pad - c->k) / s + 1, cw = (aw + 2 * c->pad - c->k) / s + 1;
        if (ah % s || aw % s) why = "input not a multiple of its stride";
        else if (ch != oh || cw != ow || oh * s != ah || ow * s != aw)
            why = "output not floor((H + 2 pad - k) / stride) + 1 = H / stride";
        else if (nd->n_in > 1 && (fh != oh || fw != ow)) why = "residual of another size";
        break;
    }
    case PF_G_SLICE:
        if (nd->c0 < 0 || nd->c0 + C > ca) why = "channels outside its input";
        else if (ah != oh || aw != ow) why = "output of another size";
        break;
    case PF_G_AFFINE:
        if (C > PF_G_MAX_CH || C != ca) why = "more channels than its constants";
        else if (ah != oh || aw != ow) why = "output of another size";
        break;
    case PF_G_RESIZE:
        if (C != ca) why = "channels changed";
        else if ((nd->use_mul == 1 && C > PF_G_MAX_CH) || (nd->use_mul == 2 && C != 2))
            why = "per-channel factors for another channel count";
        break;
    case PF_G_MUL: {
        const pf_gtensor *t1 = &g->t[nd->in[1]], *to = &g->t[nd->out];
        const pf_gtensor *tr = nd->n_in > 2 ? &g->t[nd->in[2]] : to;
        if (C != ca || (t1->c != C && t1->c != 1))
            why = "factor not of its input's channel count or of 1 channel";
        else if (ah != oh || aw != ow || fh != oh || fw != ow)
            why = "inputs and output of different sizes";
        else if (tr->c != C || tr->mul != to->mul || tr->div != to->div || tr->one != to->one ||
                 tr->round != to->round)
            why = "residual of another shape";
        break;
    }
    case PF_G_CHSUM:
        if (C != 1 || ah != oh || aw != ow) why = "output not 1 channel of its input's size";
        break;
    case PF_G_AVGPOOL2:
    case PF_G_MAXPOOL2:
    case PF_G_MAXPOOL3:
    case PF_G_AVGPOOL3:
        if (C != ca) why = "channels changed";
        else if (ah % 2 || aw % 2 || oh * 2 != ah || ow * 2 != aw)
            why = "output not half its input";
        break;
    case PF_G_RELU:
        if (C != ca || ah != oh || aw != ow) why = "output of another shape";
        else if (!(nd->alpha >= 0.0f)) why = "negative or NaN slope";
        break;
    case PF_G_BATCHNORM:
        if (C != ca || ah != oh || aw != ow) why = "output of another shape";
        else if (nd->param < 0 || g->tensors[nd->param].numel != (size_t)C ||
                 g->tensors[nd->param + 1].numel != (size_t)C)
            why = "weight or bias not of its channel count";
        break;
    case PF_G_DCN: return check_dcn(g, nd, ah, aw, fh, fw, oh, ow, err, errlen);
    case PF_G_LINEAR:
        /* torch's x.view(N, -1): in_features is C H W of its input at this size */
        if (nd->param < 0 || g->tensors[nd->param].ndim != 2 ||
            g->tensors[nd->param].shape[0] != C || g->tensors[nd->param + 1].numel != (size_t)C)
            why = "weight not [out, in] or bias not [out]";
        else if (g->tensors[nd->param].shape[1] != (int64_t)ca * ah * aw)
            why = "in_features is not C x H x W of its input at this size";
        else if (oh != 1 || ow != 1) why = "output not 1 x 1";
        break;
    case PF_G_WARP:
        if (C != ca || g->t[nd->in[1]].c != 2) why = "not C channels warped by a 2-channel flow";
        else if (ah != oh || aw != ow || fh != oh || fw != ow)
            why = "image, flow and output of different sizes";
        else if (nd->pad != PF_PAD_ZEROS && nd->pad != PF_PAD_BORDER) why = "unknown padding";
        break;
    default:
        return 0;
    }
    if (why) {
        snprintf(err, errlen, "%s: %s node (tensor %d): %s", g->type, pf_net_op_name(nd->op),
                 nd->out, why);
        return -1;
    }
    return 0;
}

int pf_net_tensor_size(const pf_net *g, int i, int h, int w, int *th, int *tw, char *err,
                       size_t errlen) {
    const pf_gtensor *t = &g->t[i];
    /* a rounded tensor (SPyNet's): the LQ size rounded up to a multiple of round first */
    int hb = t->round > 0 ? (h + t->round - 1) / t->round * t->round : h;
    int wb = t->round > 0 ? (w + t->round - 1) / t->round * t->round : w;
    *th = t->one ? 1 : hb * t->mul / t->div;
    *tw = t->one ? 1 : wb * t->mul / t->div;
    if (!t->one && (hb * t->mul % t->div || wb * t->mul % t->div)) {
        snprintf(err, errlen, "%s: input %d x %d is not divisible by %d", g->type, hb, wb,
                 t->div);
        return -1;
    }
    return 0;
}

int pf_net_frames(const pf_net *g) { return g->t[g->input].c / 3; }
int pf_net_out_frames(const pf_net *g) { return g->t[g->output].c / 3; }

int pf_net_check_desc(const pf_net *g, char *err, size_t errlen) {
    /* the executors run a conv's activation before its residual add (identity + scale *
       act(conv)) and mask backward with the output's sign: right only without one */
    for (int k = 0; k < g->n_node; k++)
        if (g->node[k].op == PF_G_CONV && g->node[k].n_in > 1 && g->conv[g->node[k].conv].act) {
            snprintf(err, errlen, "%s: %s: a residual convolution cannot fuse an activation",
                     g->type, g->conv[g->node[k].conv].name);
            return -1;
        }
    return 0;
}

int pf_net_check(const pf_net *g, int h, int w, int *hw, char *err, size_t errlen) {
    if (pf_net_check_desc(g, err, errlen)) return -1;
    for (int i = 0; i < g->n_t; i++)
        if (pf_net_tensor_size(g, i, h, w, &hw[2 * i], &hw[2 * i + 1], err, errlen)) return -1;
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        const int *a = nd->n_in ? &hw[2 * nd->in[0]] : NULL;
        const int *f = nd->n_in > 1 ? &hw[2 * nd->in[1]] : NULL, *o = &hw[2 * nd->out];
        if (pf_net_check_node(g, nd, a ? a[0] : 0, a ? a[1] : 0, f ? f[0] : 0, f ? f[1] : 0,
                              o[0], o[1], err, errlen))
            return -1;
    }
    return 0;
}
