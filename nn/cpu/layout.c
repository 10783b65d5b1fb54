/*  layout — the CPU executor's layout planner: a size and a layout for every tensor of a plan,
    oneDNN's primitives for every convolution, and the convolutions that convert their input
    or output to run on faster kernels (see nn/graph.h, "Layouts are chosen at plan time", and
    "layout groups" below). nn/cpu/graph_cpu.c calls pf_cpu_plan_layouts once per plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cpu/graph_internal.h"

/* How a node's layouts relate (plan_layouts) and whether it joins its tensors in one layout
   group (make_groups). */
enum {
    L_CARRY,        /* the output keeps its input's layout, carried to its channel count; one
                       group (element-wise nodes, pooling, attention, concatenation, shuffle,
                       nearest upsampling) */
    L_SHARED,       /* the output in the first input's layout, the others in it where they
                       have none yet (add, channel multiply: their kernels read any) */
    L_SOURCE,       /* the network's inputs: chosen by the consumer */
    L_UNSHUFFLE,    /* input plain unless chosen; output chosen by the consumer; no group */
    L_FREE,         /* the video kernels: any layout on each side, no group */
    L_CONV,         /* a convolution: oneDNN's choice, the residual joins the output's group */
};
static const unsigned char layout_rule[] = {
    [PF_G_INPUT] = L_SOURCE,    [PF_G_BILINEAR_IN] = L_SOURCE, [PF_G_BICUBIC_IN] = L_SOURCE,
    [PF_G_ZERO] = L_SOURCE,     [PF_G_UNSHUFFLE] = L_UNSHUFFLE, [PF_G_SLICE] = L_FREE,
    [PF_G_AFFINE] = L_FREE,     [PF_G_RESIZE] = L_FREE,        [PF_G_AVGPOOL2] = L_FREE,
    [PF_G_WARP] = L_FREE,       [PF_G_CONV] = L_CONV,          [PF_G_ADD] = L_SHARED,
    [PF_G_MUL_CH] = L_SHARED,   [PF_G_PRELU] = L_CARRY,        [PF_G_TANH] = L_CARRY,
    [PF_G_SIGMOID] = L_CARRY,   [PF_G_GAP] = L_CARRY,          [PF_G_CONCAT] = L_CARRY,
    [PF_G_SHUFFLE] = L_CARRY,   [PF_G_NEAREST] = L_CARRY,      [PF_G_MAXPOOL2] = L_CARRY,
    [PF_G_RELU] = L_CARRY,      [PF_G_DCN] = L_FREE,           [PF_G_MUL] = L_FREE,
    [PF_G_CHSUM] = L_FREE,      [PF_G_MAXPOOL3] = L_FREE,      [PF_G_AVGPOOL3] = L_FREE,
};

static int rule_of(pf_gop op) {
    return (size_t)op < sizeof layout_rule ? layout_rule[op] : L_CARRY;
}

static size_t tnumel(const pf_tstate *t, int n, int c) {
    return pf_blk_numel(n, c, t->h, t->w, t->block);
}

/* The description's rules for LQ h x w (pf_net_check), every tensor's size and its block
   where the layout is forced. */
static int plan_sizes(const pf_gctx *m, pf_gstate *S, int h, int w, char *err, size_t errlen) {
    const pf_net *g = m->net;
    int *hw = malloc(2 * (size_t)g->n_t * sizeof *hw + 1);
    if (!hw) {
        snprintf(err, errlen, "%s: out of memory planning a %d x %d input", g->type, h, w);
        return -1;
    }
    if (pf_net_check(g, h, w, hw, err, errlen)) {
        free(hw);
        return -1;
    }
    memset(S->ts, 0, (size_t)g->n_t * sizeof *S->ts);
    for (int i = 0; i < g->n_t; i++) {
        if (m->dnnl->force_layout != PF_LAYOUT_ANY)
            S->ts[i].block = pf_layout_block(m->dnnl->force_layout, g->t[i].c);
        S->ts[i].last_use = S->last[i];
        S->ts[i].need_grad = S->need[i];
        S->ts[i].h = hw[2 * i];
        S->ts[i].w = hw[2 * i + 1];
    }
    free(hw);
    return 0;
}

/* A convolution's layouts: oneDNN's choice (pf_conv_setup) within what its input, its
   residual and S->hint / S->run give. */
static int layout_conv(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int k, int training,
                       char *err, size_t errlen) {
    const pf_net *g = m->net;
    const pf_gnode *nd = &g->node[k];
    pf_tstate *o = &S->ts[nd->out], *a = &S->ts[nd->in[0]];
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
    if (dst < 0 && c->oc > 3 && c->oc < 8 && nd->out != g->output && !g->t[nd->out].one)
        dst = 8;
    if (nd->n_in > 1 && !dst) {
        snprintf(err, errlen, "%s: residual input has no layout", c->name);
        return -1;
    }
    int src = a->block ? a->block : S->hint[nd->in[0]] ? S->hint[nd->in[0]] : -1;
    int rs = S->run[2 * k], rd = nd->n_in > 1 ? 0 : S->run[2 * k + 1];
    TRY(pf_conv_setup(c, m->dnnl, S->n, a->h, a->w, rs ? rs : src, rd ? rd : dst, training,
                      a->need_grad, err, errlen));
    if (c->oh != o->h || c->ow != o->w) {   /* pf_net_check_node holds this for every conv */
        snprintf(err, errlen, "%s: output %d x %d, planned %d x %d", c->name, c->oh, c->ow, o->h,
                 o->w);
        return -1;
    }
    if (rs) {
        if (!a->block) a->block = src > 0 ? src : 1;
    } else {
        if (a->block && c->src_block != a->block) {
            snprintf(err, errlen, "%s: oneDNN chose an unexpected input layout", c->name);
            return -1;
        }
        a->block = c->src_block;
    }
    o->block = rd ? (dst > 0 ? dst : 1) : c->dst_block;
    return 0;
}

/* Node k's layouts by its rule (layout_rule), honouring S->hint. */
static int layout_node(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int k, int training,
                       char *err, size_t errlen) {
    const pf_net *g = m->net;
    const pf_gnode *nd = &g->node[k];
    pf_tstate *o = &S->ts[nd->out];
    pf_tstate *a = nd->n_in > 0 ? &S->ts[nd->in[0]] : NULL;
    switch (rule_of(nd->op)) {
    case L_SOURCE:
        break;              /* chosen by the consumer */
    case L_FREE:
        /* the kernels of nn/video_layers.h read and write any layout, each tensor its
           own: the output follows its group's label (improve()) where there is one, else
           the input's; a warp's flow keeps its producer's (or its label, or plain) */
        for (int i = 1; i < nd->n_in; i++) {   /* a deformable conv's offset and mask too */
            pf_tstate *f = &S->ts[nd->in[i]];
            if (!f->block) f->block = S->hint[nd->in[i]] ? S->hint[nd->in[i]] : 1;
        }
        if (!a->block) a->block = S->hint[nd->in[0]] ? S->hint[nd->in[0]] : 1;
        if (!o->block)
            o->block = S->hint[nd->out]
                           ? S->hint[nd->out]
                           : pf_blk_carry(a->block, g->t[nd->in[0]].c, g->t[nd->out].c);
        break;
    case L_CONV:
        return layout_conv(m, S, convs, k, training, err, errlen);
    case L_UNSHUFFLE:
        /* its output's layout is chosen by the consumer like the input's: left plain, a
           12-channel conv_first (RRDBNet x2) gets oneDNN's gemm kernel with a plain
           output, and every later layer follows it */
        if (!a->block) a->block = 1;
        break;
    case L_CARRY:
        if (!a->block) a->block = 1;
        if (!o->block)      /* (set already only when the layout is forced) */
            o->block = pf_blk_carry(a->block, g->t[nd->in[0]].c, g->t[nd->out].c);
        break;
    case L_SHARED: {
        pf_tstate *b = &S->ts[nd->in[1]];
        if (!a->block && !b->block) a->block = 1;
        if (!a->block) a->block = b->block;
        if (!b->block) b->block = a->block;
        /* channel attention's residual: a's layout unless it has one already; one in
           another layout (RCAN at n_feats 8 on AVX-512: conv_first's output in nChw16c, the
           attention's x in nChw8c) is read in its own, as b is (an add's second input, the
           attention's scales) */
        if (nd->n_in > 2 && !S->ts[nd->in[2]].block) S->ts[nd->in[2]].block = a->block;
        o->block = a->block;
        break;
    }
    }
    return 0;
}

/* Layouts and sizes, node by node (see graph.h), honouring S->hint. */
static int plan_layouts(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int h, int w, int training,
                        char *err, size_t errlen) {
    const pf_net *g = m->net;
    TRY(plan_sizes(m, S, h, w, err, errlen));
    for (int k = 0; k < g->n_node; k++) TRY(layout_node(m, S, convs, k, training, err, errlen));
    for (int i = 0; i < g->n_t; i++) {
        if (!S->ts[i].block) S->ts[i].block = 1;
        S->ts[i].numel = tnumel(&S->ts[i], S->n, g->t[i].c);
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
        switch (rule_of(nd->op)) {
        case L_SOURCE:
        case L_UNSHUFFLE:
        case L_FREE:    /* the video kernels take any layout on each side: free to differ */
            break;
        case L_CONV:
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
            if (a->ic == b->ic && a->oc == b->oc && a->k == b->k && a->stride == b->stride &&
                a->pad == b->pad && a->bias == b->bias && a->relu == b->relu &&
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
int pf_cpu_plan_layouts(const pf_gctx *m, pf_gstate *S, pf_conv *convs, int h, int w,
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

