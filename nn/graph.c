/*  graph — the CPU executor: planning, forward and backward of a network description (see
    graph.h). */
#include "nn/graph.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/cpu/ops.h"
#include "nn/layers.h"
#include "nn/video_layers.h"

#define TRY(x) do { if (x) return -1; } while (0)

/* ---- plan state ----------------------------------------------------------------------- */

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
    int *need;              /* per tensor: pf_net_need_grad */
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
    int *wuses;             /* per parameter tensor: convolution nodes reading it */
    int *wset;              /* per parameter tensor: its gradient was written this step */
    float *wtmp;            /* weights + bias of the largest shared layer */
};

void pf_gstate_free(pf_gstate **s) {
    if (!*s) return;
    free((*s)->ts);
    free((*s)->need);
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

static size_t tnumel(const pf_tstate *t, int n, int c) {
    return pf_blk_numel(n, c, t->h, t->w, t->block);
}

/* What the video nodes need of their tensors' shapes (sizes as planned); 0, or -1 with err. */
static int check_video_node(const pf_net *g, const pf_gstate *S, const pf_gnode *nd, char *err,
                            size_t errlen) {
    const pf_tstate *o = &S->ts[nd->out], *a = nd->n_in ? &S->ts[nd->in[0]] : NULL;
    int C = g->t[nd->out].c, ca = a ? g->t[nd->in[0]].c : 0;
    const char *why = NULL;
    switch (nd->op) {
    case PF_G_SLICE:
        if (nd->c0 < 0 || nd->c0 + C > ca) why = "channels outside its input";
        else if (a->h != o->h || a->w != o->w) why = "output of another size";
        break;
    case PF_G_AFFINE:
        if (C > PF_G_MAX_CH || C != ca) why = "more channels than its constants";
        else if (a->h != o->h || a->w != o->w) why = "output of another size";
        break;
    case PF_G_RESIZE:
        if (C != ca) why = "channels changed";
        else if ((nd->use_mul == 1 && C > PF_G_MAX_CH) || (nd->use_mul == 2 && C != 2))
            why = "per-channel factors for another channel count";
        break;
    case PF_G_AVGPOOL2:
        if (C != ca) why = "channels changed";
        else if (a->h % 2 || a->w % 2 || o->h * 2 != a->h || o->w * 2 != a->w)
            why = "output not half its input";
        break;
    case PF_G_WARP:
        if (C != ca || g->t[nd->in[1]].c != 2) why = "not C channels warped by a 2-channel flow";
        else if (a->h != o->h || a->w != o->w || S->ts[nd->in[1]].h != o->h ||
                 S->ts[nd->in[1]].w != o->w)
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

/* Layouts and sizes, node by node (see graph.h), honouring S->hint. */
static int plan_layouts(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int h, int w, int training,
                        char *err, size_t errlen) {
    const pf_net *g = m->net;
    int n = S->n;
    memset(S->ts, 0, (size_t)g->n_t * sizeof *S->ts);
    for (int i = 0; i < g->n_t; i++) {
        const pf_gtensor *t = &g->t[i];
        if (m->dnnl->force_layout != PF_LAYOUT_ANY)
            S->ts[i].block = pf_layout_block(m->dnnl->force_layout, t->c);
        /* a rounded tensor: the LQ size rounded up to a multiple of round first */
        int hb = t->round > 0 ? (h + t->round - 1) / t->round * t->round : h;
        int wb = t->round > 0 ? (w + t->round - 1) / t->round * t->round : w;
        S->ts[i].h = t->one ? 1 : hb * t->mul / t->div;
        S->ts[i].w = t->one ? 1 : wb * t->mul / t->div;
        S->ts[i].last_use = S->last[i];
        S->ts[i].need_grad = S->need[i];
        if (!t->one && (hb * t->mul % t->div || wb * t->mul % t->div)) {
            snprintf(err, errlen, "%s: input %d x %d is not divisible by %d", m->net->type,
                     hb, wb, t->div);
            return -1;
        }
    }
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        pf_tstate *o = &S->ts[nd->out];
        pf_tstate *a = nd->n_in > 0 ? &S->ts[nd->in[0]] : NULL;
        TRY(check_video_node(g, S, nd, err, errlen));
        switch (nd->op) {
        case PF_G_INPUT:
        case PF_G_BILINEAR_IN:
        case PF_G_BICUBIC_IN:
        case PF_G_ZERO:
            break;              /* chosen by the consumer */
        case PF_G_WARP: {
            /* the kernels of nn/video_layers.h read and write any layout, each tensor its
               own: the output follows its group's label (improve()) where there is one, else
               the input's; the flow keeps its producer's (or its label, or plain) */
            pf_tstate *f = &S->ts[nd->in[1]];
            if (!f->block) f->block = S->hint[nd->in[1]] ? S->hint[nd->in[1]] : 1;
        }
        /* fall through */
        case PF_G_SLICE:
        case PF_G_AFFINE:
        case PF_G_RESIZE:
        case PF_G_AVGPOOL2:
            if (!a->block) a->block = S->hint[nd->in[0]] ? S->hint[nd->in[0]] : 1;
            if (!o->block)
                o->block = S->hint[nd->out]
                               ? S->hint[nd->out]
                               : pf_blk_carry(a->block, g->t[nd->in[0]].c, g->t[nd->out].c);
            break;
        case PF_G_CONV: {
            pf_conv *c = &convs[nd->conv];
            int dst = nd->n_in > 1        ? S->ts[nd->in[1]].block
                      : S->hint[nd->out] ? S->hint[nd->out]
                                         : -1;
            /* a narrow feature map (FSRCNN-s: s = 5) for which oneDNN would choose plain NCHW
               stays blocked (padded to 8): with plain layouts all of its convolutions run on
               oneDNN's reference kernels (FSRCNN-s x3, batch 16, LQ 32: 619 -> 165 ms a step;
               the s -> s forward and backward-data stay on them, oneDNN 2.6 has no AVX2
               kernel for fewer than 8 blocked input channels). The 3-channel image and the
               1 x 1 channel-attention maps keep oneDNN's choice. */
            if (dst < 0 && c->oc > 3 && c->oc < 8 && nd->out != g->output &&
                !g->t[nd->out].one)
                dst = 8;
            if (nd->n_in > 1 && c->relu) {
                /* the fused activation runs before the residual add (identity + scale *
                   act(conv)); backward masks with the sum's sign, right only without one */
                snprintf(err, errlen, "%s: a residual convolution cannot fuse an activation",
                         c->name);
                return -1;
            }
            if (nd->n_in > 1 && !dst) {
                snprintf(err, errlen, "%s: residual input has no layout", c->name);
                return -1;
            }
            int src = a->block ? a->block : S->hint[nd->in[0]] ? S->hint[nd->in[0]] : -1;
            int rs = S->run[2 * k], rd = nd->n_in > 1 ? 0 : S->run[2 * k + 1];
            TRY(pf_conv_setup(c, m->dnnl, n, a->h, a->w, rs ? rs : src, rd ? rd : dst,
                              training, a->need_grad, err, errlen));
            if (rs) {
                if (!a->block) a->block = src > 0 ? src : 1;
            } else {
                if (a->block && c->src_block != a->block) {
                    snprintf(err, errlen, "%s: oneDNN chose an unexpected input layout",
                             c->name);
                    return -1;
                }
                a->block = c->src_block;
            }
            o->block = rd ? (dst > 0 ? dst : 1) : c->dst_block;
            break;
        }
        case PF_G_UNSHUFFLE:
            /* its output's layout is chosen by the consumer like the input's: left plain, a
               12-channel conv_first (RRDBNet x2) gets oneDNN's gemm kernel with a plain
               output, and every later layer follows it */
            if (!a->block) a->block = 1;
            break;
        default:
            if (!a->block) a->block = 1;
            if (!o->block)      /* (set already only when the layout is forced) */
                o->block = pf_blk_carry(a->block, g->t[nd->in[0]].c, g->t[nd->out].c);
            break;
        case PF_G_ADD:
        case PF_G_MUL_CH: {
            pf_tstate *b = &S->ts[nd->in[1]];
            if (!a->block && !b->block) a->block = 1;
            if (!a->block) a->block = b->block;
            if (!b->block) b->block = a->block;
            if (nd->op == PF_G_MUL_CH && nd->n_in > 2) {
                if (!S->ts[nd->in[2]].block) S->ts[nd->in[2]].block = a->block;
                if (S->ts[nd->in[2]].block != a->block) {
                    snprintf(err, errlen, "%s: channel attention residual in another layout",
                             m->net->type);
                    return -1;
                }
            }
            o->block = a->block;
            break;
        }
        }
    }
    for (int i = 0; i < g->n_t; i++) {
        if (!S->ts[i].block) S->ts[i].block = 1;
        S->ts[i].numel = tnumel(&S->ts[i], n, g->t[i].c);
    }
    return 0;
}

/* ---- layout groups ---------------------------------------------------------------------

   Tensors joined by nodes that keep a layout (element-wise nodes, adds, channel attention,
   concatenation, pixel shuffle, pooling, nearest upsampling, a residual convolution's output
   and its identity) must be in one layout family: nchw, nChw8c, nChw16c or NHWC (whose block
   is each tensor's own width). Convolutions join two groups, their input's and their output's;
   the network's inputs (the image, its bicubic / bilinear upsampling, a pixel unshuffle of it)
   take whatever their group wants. The first planning pass lets oneDNN choose where it may
   (format `any`); when some convolution then lacks a JIT kernel in a direction it runs,
   improve() relabels the groups around it with the family that ranks its convolutions best
   (pf_conv_probe on explicit layouts: `any` misses some, e.g. 5 -> 5 channels 3x3 gets a
   reference forward from `any` but JIT kernels in every direction on NHWC) and the plan is
   made again with every layout given. */

enum { FAM_NONE, FAM_NCHW, FAM_8C, FAM_16C, FAM_NHWC, N_FAM };

static int fam_block(int f, int c) {
    return f == FAM_NCHW ? 1 : f == FAM_8C ? 8 : f == FAM_16C ? 16 : f == FAM_NHWC ? c : 0;
}
static int block_fam(int b, int c) {
    return b == 1 ? FAM_NCHW : b == 8 ? FAM_8C : b == 16 ? FAM_16C : b == c ? FAM_NHWC : FAM_NONE;
}

static int find(int *parent, int t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
}

/* group[t]: the representative tensor of t's group. */
static void make_groups(const pf_net *g, int *group) {
    for (int i = 0; i < g->n_t; i++) group[i] = i;
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        switch (nd->op) {
        case PF_G_INPUT:
        case PF_G_BILINEAR_IN:
        case PF_G_BICUBIC_IN:
        case PF_G_UNSHUFFLE:
        /* the video kernels take any layout on each side: their tensors are free to differ */
        case PF_G_SLICE:
        case PF_G_AFFINE:
        case PF_G_RESIZE:
        case PF_G_AVGPOOL2:
        case PF_G_WARP:
        case PF_G_ZERO:
            break;
        case PF_G_CONV:
            if (nd->n_in > 1) group[find(group, nd->out)] = find(group, nd->in[1]);
            break;
        default:
            for (int i = 0; i < nd->n_in; i++)
                group[find(group, nd->in[i])] = find(group, nd->out);
            break;
        }
    }
    for (int i = 0; i < g->n_t; i++) group[i] = find(group, i);
}

/* Probe results per kind of convolution and (input family, output family): rank + 2, 0 =
   unknown. Layers alike in every respect a probe sees share a kind, so a deep network (RRDBNet:
   hundreds of convolutions, a dozen kinds) costs a dozen probes per layout pair. */
typedef struct {
    int *kind;                  /* per conv layer: its kind */
    unsigned char *rank;        /* kinds x N_FAM x N_FAM */
} probe_cache;

/* Fills pc->kind: layer i gets the kind of the first layer j <= i with the same shape, fused
   operations and input (size, gradient). */
static void conv_kinds(const pf_gctx *m, const pf_gstate *S, const pf_conv *convs,
                       probe_cache *pc) {
    const pf_net *g = m->net;
    int *in_of = calloc((size_t)m->net->n_convs + 1, sizeof *in_of);
    for (int k = 0; in_of && k < g->n_node; k++)
        if (g->node[k].op == PF_G_CONV) in_of[g->node[k].conv] = g->node[k].in[0];
    for (int i = 0; i < m->net->n_convs; i++) {
        const pf_conv *a = &convs[i];
        const pf_tstate *ta = in_of ? &S->ts[in_of[i]] : NULL;
        pc->kind[i] = i;
        for (int j = 0; in_of && j < i; j++) {
            const pf_conv *b = &convs[j];
            const pf_tstate *tb = &S->ts[in_of[j]];
            if (a->ic == b->ic && a->oc == b->oc && a->k == b->k && a->relu == b->relu &&
                a->alpha == b->alpha && a->add == b->add && a->add_scale == b->add_scale &&
                ta->h == tb->h && ta->w == tb->w && ta->need_grad == tb->need_grad) {
                pc->kind[i] = pc->kind[j];
                break;
            }
        }
    }
    free(in_of);
}

/* A conversion costs 1 (pf_conv_rank_cost's unit). */
enum { CONVERSION_COST = 1 };

static int conv_cost(const pf_gctx *m, pf_gstate *S, pf_conv *convs, probe_cache *pc,
                     const pf_gnode *nd, int fs, int fd, int training) {
    const pf_conv *c = &convs[nd->conv];
    unsigned char *slot = &pc->rank[((size_t)pc->kind[nd->conv] * N_FAM + fs) * N_FAM + fd];
    if (!*slot) {
        const pf_tstate *a = &S->ts[nd->in[0]];
        int src = fam_block(fs, c->ic), dst = fam_block(fd, c->oc), got_s, got_d;
        int r = pf_conv_probe(c, m->dnnl, S->n, a->h, a->w, src, dst, training, a->need_grad,
                              &got_s, &got_d);
        if (r >= 0 && (got_s != src || got_d != dst)) r = -1;   /* not what was asked */
        *slot = (unsigned char)(r + 2);
    }
    return pf_conv_rank_cost((int)*slot - 2);
}

/* The cost of convolution nd between groups labelled fs and fd when it may also convert
   either side to other layouts (a residual convolution's output stays: its identity is in
   that layout); the layouts it would run on go to *rs, *rd. */
static int flex_cost(const pf_gctx *m, pf_gstate *S, pf_conv *convs, probe_cache *pc,
                     const pf_gnode *nd, int fs, int fd, int training, int *rs, int *rd) {
    int best = conv_cost(m, S, convs, pc, nd, fs, fd, training);
    *rs = fs;
    *rd = fd;
    for (int s2 = FAM_NCHW; s2 < N_FAM && best; s2++)
        for (int d2 = FAM_NCHW; d2 < N_FAM; d2++) {
            if (nd->n_in > 1 && d2 != fd) continue;
            int conv = (s2 != fs) + (d2 != fd);
            if (!conv || CONVERSION_COST * conv >= best) continue;
            int cost = conv_cost(m, S, convs, pc, nd, s2, d2, training) + CONVERSION_COST * conv;
            if (cost < best) {
                best = cost;
                *rs = s2;
                *rd = d2;
            }
        }
    return best;
}

/* Relabels groups (fam[], indexed by representative) around slow convolutions until no
   single change lowers the total cost (flex_cost: conversions counted), then records in
   S->run the conversions that remain worth it. */
static void improve(const pf_gctx *m, pf_gstate *S, pf_conv *convs, const int *group, int *fam,
                    probe_cache *pc, int training) {
    const pf_net *g = m->net;
    int rs, rd;
    for (int sweep = 0; sweep < 4; sweep++) {
        int moved = 0;
        for (int k = 0; k < g->n_node; k++) {
            const pf_gnode *nd = &g->node[k];
            if (nd->op != PF_G_CONV) continue;
            int gs = group[nd->in[0]], gd = group[nd->out];
            if (!conv_cost(m, S, convs, pc, nd, fam[gs], fam[gd], training)) continue;
            /* try every family for each of its two groups, counting every convolution that
               touches the group */
            int gg[2] = { gs, gd };
            for (int side = 0; side < 2; side++) {
                int G = gg[side], best_f = fam[G], best_cost = -1;
                for (int f = FAM_NCHW; f < N_FAM; f++) {
                    int old = fam[G], cost = 0;
                    fam[G] = f;
                    for (int j = 0; j < g->n_node; j++) {
                        const pf_gnode *nj = &g->node[j];
                        if (nj->op == PF_G_CONV &&
                            (group[nj->in[0]] == G || group[nj->out] == G))
                            cost += flex_cost(m, S, convs, pc, nj, fam[group[nj->in[0]]],
                                              fam[group[nj->out]], training, &rs, &rd);
                    }
                    fam[G] = old;
                    if (best_cost < 0 || cost < best_cost ||
                        (cost == best_cost && f == old)) {
                        best_cost = cost;
                        best_f = f;
                    }
                }
                if (best_f != fam[G]) {
                    fam[G] = best_f;
                    moved = 1;
                }
            }
        }
        if (!moved) break;
    }
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        if (nd->op != PF_G_CONV) continue;
        int fs = fam[group[nd->in[0]]], fd = fam[group[nd->out]];
        flex_cost(m, S, convs, pc, nd, fs, fd, training, &rs, &rd);
        const pf_conv *c = &convs[nd->conv];
        S->run[2 * k] = rs != fs ? fam_block(rs, c->ic) : 0;
        S->run[2 * k + 1] = rd != fd ? fam_block(rd, c->oc) : 0;
    }
}

/* Buffers and reorders of the convolutions improve() made convert (S->run). */
static int plan_conversions(const pf_gctx *m, pf_gstate *S, pf_conv *convs, char *err,
                            size_t errlen) {
    const pf_net *g = m->net;
    int n = S->n;
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        pf_gconv_io *io = &S->io[k];
        if (nd->op != PF_G_CONV || (!S->run[2 * k] && !S->run[2 * k + 1])) continue;
        const pf_conv *c = &convs[nd->conv];
        const pf_tstate *a = &S->ts[nd->in[0]], *o = &S->ts[nd->out];
        io->rs = S->run[2 * k];
        io->rd = S->run[2 * k + 1];
        if (io->rs) {
            size_t cnt = pf_blk_numel(n, c->ic, a->h, a->w, io->rs);
            if (pf_reorder_init(&io->to_rs, m->dnnl, c->name, n, c->ic, a->h, a->w, a->block,
                                io->rs, err, errlen))
                return -1;
            if (!(io->xin = aligned_alloc(64, (cnt + 15) / 16 * 64))) goto oom;
            if (S->training && a->need_grad) {
                if (pf_reorder_init(&io->drs_back, m->dnnl, c->name, n, c->ic, a->h, a->w,
                                    io->rs, a->block, err, errlen))
                    return -1;
                if (!(io->dxin = aligned_alloc(64, (cnt + 15) / 16 * 64))) goto oom;
            }
        }
        if (io->rd) {
            size_t cnt = pf_blk_numel(n, c->oc, o->h, o->w, io->rd);
            if (pf_reorder_init(&io->from_rd, m->dnnl, c->name, n, c->oc, o->h, o->w, io->rd,
                                o->block, err, errlen))
                return -1;
            if (!(io->yrd = aligned_alloc(64, (cnt + 15) / 16 * 64))) goto oom;
            if (S->training &&
                pf_reorder_init(&io->dy_to_rd, m->dnnl, c->name, n, c->oc, o->h, o->w,
                                o->block, io->rd, err, errlen))
                return -1;
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", m->net->type);
    return -1;
}

/* First-pass hints: a convolution asked for `any` output while its input's layout is given
   picks the output layout that suits its own kernel, and the layers after it follow. Two such
   places get the layout oneDNN picks for the first convolution that reads the output's group
   (both of that one's sides `any`) instead:
   - a convolution on the network's input with fewer than 16 input channels (conv_first on
     the image) would pick NHWC for AVX-512's inference kernels, off the Winograd kernels that
     want nChw16c;
   - an upsampling convolution (read by a pixel shuffle) keeps the layout of the features it
     reads: BasicVSR's trunks (3 + num_feat channels in) run in nChw8c with AVX2 kernels on an
     AVX-512 machine, and without the hint its upsampling stages, conv_hr and conv_last at 2x
     and 4x the LQ size follow them (configs/demo_video.yaml's training step: 1.7 s -> 1.2 s on
     a 2-core AVX-512 Xeon). */
static int consumer_hints(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int training) {
    const pf_net *g = m->net;
    int set = 0;
    int *group = malloc((size_t)g->n_t * sizeof *group), *producer = malloc((size_t)g->n_t *
                                                                           sizeof *producer);
    char *shuffled = calloc((size_t)g->n_t + 1, 1);     /* read by a pixel shuffle */
    if (!group || !producer || !shuffled) goto done;
    make_groups(g, group);
    for (int i = 0; i < g->n_t; i++) producer[i] = -1;
    for (int k = 0; k < g->n_node; k++) {
        producer[g->node[k].out] = k;
        if (g->node[k].op == PF_G_SHUFFLE) shuffled[g->node[k].in[0]] = 1;
    }
    for (int k = 0; k < g->n_node; k++) {
        const pf_gnode *nd = &g->node[k];
        if (nd->op != PF_G_CONV || nd->n_in > 1) continue;
        int pk = producer[nd->in[0]];
        pf_gop pop = pk < 0 ? PF_G_INPUT : g->node[pk].op;
        int on_input = convs[nd->conv].ic < 16 &&
                       (pop == PF_G_INPUT || pop == PF_G_BILINEAR_IN || pop == PF_G_BICUBIC_IN ||
                        pop == PF_G_UNSHUFFLE);
        if (!on_input && !shuffled[nd->out]) continue;
        for (int j = k + 1; j < g->n_node; j++) {
            const pf_gnode *nj = &g->node[j];
            if (nj->op != PF_G_CONV || group[nj->in[0]] != group[nd->out]) continue;
            const pf_tstate *a = &S->ts[nj->in[0]];
            int bs = -1;
            if (nj->n_in == 1 &&
                pf_conv_probe(&convs[nj->conv], m->dnnl, S->n, a->h, a->w, -1, -1, training,
                              1, &bs, NULL) >= 0 &&
                bs > 0) {
                S->hint[nd->out] = pf_blk_carry(bs, convs[nj->conv].ic, convs[nd->conv].oc);
                set = 1;
            }
            break;
        }
    }
done:
    free(group);
    free(producer);
    free(shuffled);
    return set;
}

/* Layouts for every tensor: oneDNN's choice, then improve(); see above. */
static int plan_all_layouts(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int h, int w,
                            int training, char *err, size_t errlen) {
    const pf_net *g = m->net;
    if (plan_layouts(m, S, convs, h, w, training, err, errlen)) return -1;
    if (m->dnnl->force_layout == PF_LAYOUT_ANY && consumer_hints(m, S, convs, training) &&
        plan_layouts(m, S, convs, h, w, training, err, errlen))
        return -1;
    if (m->dnnl->force_layout != PF_LAYOUT_ANY) return 0;
    int slow = 0;
    for (int i = 0; i < m->net->n_convs; i++) slow |= pf_conv_rank(&convs[i]) < 2;
    if (!slow) return 0;
    int *group = malloc((size_t)g->n_t * sizeof *group);
    int *fam = calloc((size_t)g->n_t, sizeof *fam);
    probe_cache pc = { calloc((size_t)m->net->n_convs + 1, sizeof *pc.kind),
                       calloc((size_t)m->net->n_convs * N_FAM * N_FAM, 1) };
    int rc = -1;
    if (!group || !fam || !pc.rank || !pc.kind) {
        snprintf(err, errlen, "%s: out of memory", m->net->type);
        goto done;
    }
    make_groups(g, group);
    conv_kinds(m, S, convs, &pc);
    /* each group's family from the first pass: from a tensor whose width tells NHWC apart */
    for (int i = 0; i < g->n_t; i++) {
        int f = block_fam(S->ts[i].block, g->t[i].c), G = group[i];
        int c = g->t[i].c;
        if (f != FAM_NONE && (!fam[G] || (c != 1 && c != 8 && c != 16))) fam[G] = f;
    }
    for (int i = 0; i < g->n_t; i++)
        if (!fam[group[i]]) fam[group[i]] = FAM_NCHW;
    /* relabel where that helps, then plan again with every layout given: explicit layouts
       alone can already get faster kernels than `any` did */
    improve(m, S, convs, group, fam, &pc, training);
    for (int i = 0; i < g->n_t; i++) S->hint[i] = fam_block(fam[group[i]], g->t[i].c);
    rc = plan_layouts(m, S, convs, h, w, training, err, errlen);
    if (!rc) rc = plan_conversions(m, S, convs, err, errlen);
done:
    free(group);
    free(fam);
    free(pc.rank);
    free(pc.kind);
    return rc;
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

void pf_graph_conv_init(const pf_net *net, int i, pf_conv *c) {
    const pf_nconv *d = &net->conv[i];
    pf_conv_init(c, d->name, d->ic, d->oc, d->k, d->act);
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
    if (training) {
        S->wuses = calloc((size_t)g->n_tensors + 1, sizeof *S->wuses);
        S->wset = calloc((size_t)g->n_tensors + 1, sizeof *S->wset);
        if (!S->wuses || !S->wset) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            goto fail;
        }
        size_t wmax = 0;
        for (int k = 0; k < g->n_node; k++)
            if (g->node[k].op == PF_G_CONV) S->wuses[g->node[k].param]++;
        for (int k = 0; k < g->n_node; k++) {
            const pf_gnode *nd = &g->node[k];
            if (nd->op != PF_G_CONV || S->wuses[nd->param] < 2) continue;
            if (nd->conv == g->sub_conv) {
                snprintf(err, errlen, "%s: the sub-pixel layer cannot share its weights",
                         g->type);
                goto fail;
            }
            size_t wn = g->tensors[nd->param].numel + g->tensors[nd->param + 1].numel;
            if (wn > wmax) wmax = wn;
        }
        if (wmax && !(S->wtmp = malloc(wmax * sizeof(float)))) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            goto fail;
        }
    }
    if (plan_all_layouts(m, S, m->convs, h, w, training, err, errlen)) goto fail;
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

/* Forward of one node: dispatch to its kernels (nn/cpu/ops.h and the shared layers). */
static int forward_node(const pf_gctx *m, pf_gstate *S, pf_conv *convs, const pf_gnode *nd,
                        const uint8_t *lq, char *err, size_t errlen) {
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
    case PF_G_ADD:
        pf_cpu_add_forward(y, a->data, i1->data, i1->block, nd->scale, n, C, H, W, b, o->numel);
        return 0;
    case PF_G_GAP:
        pf_cpu_gap_forward(y, a->data, n, C, (size_t)a->h * (size_t)a->w, b);
        return 0;
    case PF_G_MUL_CH:
        pf_cpu_mul_ch_forward(y, a->data, nd->n_in > 2 ? S->ts[nd->in[2]].data : NULL, i1->data,
                              (size_t)pf_blk_c(C, i1->block), nd->scale, n, C, hw, b);
        return 0;
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
    static const char *const names[] = {
        "input", "conv", "prelu", "tanh", "sigmoid", "add", "gap", "mul_ch", "concat",
        "shuffle", "unshuffle", "nearest", "bilinear_in", "bicubic_in", "slice", "affine",
        "resize", "avgpool2", "warp", "zero" };
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
            else snprintf(name, sizeof name, "%s", best < (int)(sizeof names / sizeof names[0])
                                                       ? names[best] : "other");
            fprintf(f, "  %-14s %8.1f ms  %5.1f %%\n", name, prof.ms[d][best] / prof.calls[d],
                    100 * prof.ms[d][best] / total);
            prof.ms[d][best] = 0;
        }
        prof.calls[d] = 0;
    }
}

int pf_graph_forward(const pf_gctx *m, pf_gstate *S, const uint8_t *lq, char *err,
                     size_t errlen) {
    int timed = prof_on();
    for (int k = 0; k < m->net->n_node; k++) {
        double t0 = timed ? prof_now() : 0;
        TRY(forward_node(m, S, m->convs, &m->net->node[k], lq, err, errlen));
        if (timed) prof_add(m, &m->net->node[k], 0, t0);
    }
    prof.calls[0] += timed;
    return 0;
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

/* A convolution node's backward: the fused activation's mask, the residual's identity,
   backward-weights into the flat gradients (FSRCNN's sub-pixel layer, shared weights) and
   backward-data, each side converted where the convolution runs on other layouts. */
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
    const pf_param_info *wt = &g->tensors[nd->param], *bt = &g->tensors[nd->param + 1];
    float *gw = m->grads + wt->offset, *gb = m->grads + bt->offset;
    if (nd->conv == g->sub_conv) {  /* FSRCNN: gradients of the sub-pixel form first */
        gw = m->sub_dw;
        gb = m->sub_dw + (size_t)c->oc * c->ic * c->k * c->k;
    }
    /* a weight another layer has written this step already: into wtmp, then added */
    int add_w = S->wuses[nd->param] > 1 && S->wset[nd->param];
    if (add_w) {
        gw = S->wtmp;
        gb = S->wtmp + wt->numel;
    }
    S->wset[nd->param] = 1;
    pf_gconv_io *io = &S->io[nd - g->node];
    if (io->rd) {   /* the gradient in the layout the convolution ran on */
        TRY(pf_reorder_run(&io->dy_to_rd, dd, io->yrd, err, errlen));
        dd = io->yrd;
    }
    TRY(pf_conv_backward_weights(c, io->rs ? io->xin : a->data, dd, gw, gb, err, errlen));
    if (nd->conv == g->sub_conv) pf_net_sub_grads(g, m->sub_dw, m->grads);
    if (add_w) {
        pf_cpu_axpy(m->grads + wt->offset, S->wtmp, 1.0f, wt->numel, 1);
        pf_cpu_axpy(m->grads + bt->offset, S->wtmp + wt->numel, 1.0f, bt->numel, 1);
    }
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
        if (pf_cpu_prelu_backward(dx, m->grads + g->tensors[nd->param].offset, dy, a->data,
                                  m->params + g->tensors[nd->param].offset, n, C, hw, b, acc)) {
            snprintf(err, errlen, "%s: out of memory", g->type);
            return -1;
        }
        return 0;
    case PF_G_TANH:
    case PF_G_SIGMOID:
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_tanh_sigmoid_backward(dx, dy, o->data, n, C, hw, b, nd->op == PF_G_TANH, acc);
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
        if (nd->n_in > 2) grad_pass(S, &S->ts[nd->in[2]], o, b, n, C, H, W);
        if ((dx = grad_for(S, a, &acc)))
            pf_cpu_mul_ch_backward_x(dx, dy, i1->data, (size_t)pf_blk_c(C, i1->block),
                                     nd->scale, n, C, hw, b, acc);
        if ((dx = grad_for(S, i1, &acc)))
            pf_cpu_mul_ch_backward_s(dx, dy, a->data, (size_t)pf_blk_c(C, i1->block), nd->scale,
                                     n, C, hw, b, acc);
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

int pf_graph_backward(const pf_gctx *m, pf_gstate *S, char *err, size_t errlen) {
    const pf_net *g = m->net;
    pf_conv *convs = m->convs;
    memset(m->grads, 0, m->net->n_params * sizeof(float));
    memset(S->wset, 0, (size_t)g->n_tensors * sizeof *S->wset);
    for (int i = 0; i < g->n_t; i++) {
        S->ts[i].grad_set = 0;
        S->ts[i].grad = S->ts[i].grad_own;     /* NULL but for the output */
        S->ts[i].gslot = -1;
    }
    for (int k = 0; k < S->n_gslots; k++) S->grefs[k] = 0;
    S->tslot[0] = S->tslot[1] = -1;
    S->ts[g->output].grad_set = 1;      /* the loss wrote d_out */
    int timed = prof_on();
    prof.calls[1] += timed;
    for (int k = g->n_node - 1; k >= 0; k--) {
        double t0 = timed ? prof_now() : 0;
        TRY(backward_node(m, S, convs, &g->node[k], err, errlen));
        if (timed) prof_add(m, &g->node[k], 1, t0);
        if (S->goom) {
            snprintf(err, errlen, "%s: out of memory for gradients of a %d-sample batch",
                     m->net->type, S->n);
            return -1;
        }
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
    return 0;
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
