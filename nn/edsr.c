/*  edsr — EDSR (Lim et al., "Enhanced Deep Residual Networks for Single Image
    Super-Resolution", CVPRW 2017) exactly as BasicSR's basicsr/archs/edsr_arch.py:

      x = (lq - mean) * img_range
      f0 = conv_first(x)                                        3 -> C, 3x3
      a[i+1] = a[i] + res_scale * conv2(ReLU(conv1(a[i])))      body.i, a[0] = f0
                                                    (ReLU and the adds fused into the convs)
      r = conv_after_body(a[n_blocks]) + f0
      per upsample stage: q = PixelShuffle(r)(upsample.{2s}(q))  C -> C r^2
      y = conv_last(q) / img_range + mean                        C -> 3

    Conv layer order (model.c): conv_first, body.0.conv1, body.0.conv2, ..., conv_after_body,
    upsample stages, conv_last. Features stay in one oneDNN blocked layout from conv_first's
    output to conv_last's input; the pixel shuffle reads and writes that layout directly.
*/
#include <stdio.h>
#include <string.h>
#include "nn/layers.h"
#include "nn/model_internal.h"

#define CONV_FIRST 0
#define CONV1(i) (1 + 2 * (i))
#define CONV2(i) (2 + 2 * (i))
#define CONV_AFTER(m) (1 + 2 * (m)->cfg.n_blocks)
#define CONV_UP(m, s) (2 + 2 * (m)->cfg.n_blocks + (s))
#define CONV_LAST(m) (2 + 2 * (m)->cfg.n_blocks + (m)->n_stages)

#define TRY(x) do { if (x) return -1; } while (0)
#define ALLOC(ptr, count) do { if (!((ptr) = pf_plan_alloc(p, (count)))) goto oom; } while (0)

/* Every layer's primitives with the features in block `feat` (-1: oneDNN's choice at
   conv_first); returns the summed pf_conv_rank_cost of the layers, or -1 with err. */
static int setup_convs(pf_model *m, pf_conv *convs, int n, int h, int w, int feat, int training,
                       char *err, size_t errlen) {
    int nb = m->cfg.n_blocks, r = m->stage_r;
    pf_dnnl *ctx = &m->dnnl;
    pf_conv *cf = &convs[CONV_FIRST];
    if (feat < 0) {
        /* the body's layers decide (they are nearly all the work): the layout oneDNN picks
           for body.0.conv1 (or the upsampler's first conv without a body) (conv_first, with 3
           input channels, would pick what suits it: NHWC for AVX-512's inference kernels,
           which leaves the body without Winograd) */
        int bs = -1;
        pf_conv *body = m->cfg.n_blocks ? &convs[CONV1(0)] : &convs[CONV_UP(m, 0)];
        if (pf_conv_probe(body, ctx, n, h, w, -1, -1, training, 1, &bs, NULL) >= 0)
            feat = bs;
    }
    TRY(pf_conv_setup(cf, ctx, n, h, w, -1, feat, training, 0, err, errlen));
    int b = cf->dst_block;
    for (int i = 0; i < nb; i++) {
        TRY(pf_conv_setup(&convs[CONV1(i)], ctx, n, h, w, b, b, training, 1, err, errlen));
        TRY(pf_conv_setup(&convs[CONV2(i)], ctx, n, h, w, b, b, training, 1, err, errlen));
    }
    TRY(pf_conv_setup(&convs[CONV_AFTER(m)], ctx, n, h, w, b, b, training, 1, err, errlen));
    int sh = h, sw = w;
    for (int s = 0; s < m->n_stages; s++) {
        TRY(pf_conv_setup(&convs[CONV_UP(m, s)], ctx, n, sh, sw, b, -1, training, 1, err,
                          errlen));
        sh *= r;
        sw *= r;
    }
    TRY(pf_conv_setup(&convs[CONV_LAST(m)], ctx, n, sh, sw, b, -1, training, 1, err, errlen));
    int cost = 0;
    for (int i = 0; i < m->n_convs; i++) {
        if (convs[i].src_block != (i == CONV_FIRST ? convs[i].src_block : b) ||
            (i < CONV_UP(m, 0) && convs[i].dst_block != b)) {
            snprintf(err, errlen, "%s: oneDNN chose an unexpected layout", convs[i].name);
            return -1;
        }
        cost += pf_conv_rank_cost(pf_conv_rank(&convs[i]));
    }
    return cost;
}

int pf_edsr_plan(pf_model *m, pf_plan *p, pf_conv *convs, int n, int h, int w, int training,
                 char *err, size_t errlen) {
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r;

    /* Primitives: let oneDNN pick the feature layout at conv_first, then force it; where
       that leaves a layer without its fast kernels (e.g. SSE4.1, whose blocked layouts have
       only reference kernels here), take the feature layout that costs least. */
    int cost = setup_convs(m, convs, n, h, w, -1, training, err, errlen);
    if (cost < 0) return -1;
    if (cost > 0) {
        const int cand[4] = { 16, 8, c, 1 };
        int best = -1, best_cost = cost;
        for (int i = 0; i < 4; i++) {
            int k = setup_convs(m, convs, n, h, w, cand[i], training, err, errlen);
            if (k >= 0 && k < best_cost) {
                best_cost = k;
                best = cand[i];
            }
        }
        if (setup_convs(m, convs, n, h, w, best, training, err, errlen) < 0) return -1;
    }
    int b = convs[CONV_FIRST].dst_block;
    p->in_block = convs[CONV_FIRST].src_block;
    p->block = b;
    p->out_block = convs[CONV_LAST(m)].dst_block;
    int sh, sw;
    /* Buffers. */
    size_t feat = pf_blk_numel(n, c, h, w, b);
    size_t pmax = 0, qmax = 0;
    sh = h;
    sw = w;
    for (int s = 0; s < m->n_stages; s++) {
        size_t ps = pf_blk_numel(n, c * r * r, sh, sw, convs[CONV_UP(m, s)].dst_block);
        if (ps > pmax) pmax = ps;
        sh *= r;
        sw *= r;
        size_t qs = pf_blk_numel(n, c, sh, sw, b);
        if (qs > qmax) qmax = qs;
    }
    ALLOC(p->x, pf_blk_numel(n, 3, h, w, p->in_block));
    p->a = (float **)pf_plan_alloc(p, (size_t)(nb + 1) * sizeof(float *) / sizeof(float) + 1);
    p->t = (float **)pf_plan_alloc(p, (size_t)(nb + 1) * sizeof(float *) / sizeof(float) + 1);
    if (!p->a || !p->t) goto oom;
    ALLOC(p->f0, feat);
    p->a[0] = p->f0;
    ALLOC(p->p, pmax);
    ALLOC(p->out, pf_blk_numel(n, 3, sh, sw, p->out_block));
    if (training) {
        for (int i = 0; i < nb; i++) {
            ALLOC(p->t[i], feat);
            ALLOC(p->a[i + 1], feat);
        }
        ALLOC(p->r, feat);
        ALLOC(p->d_out, pf_blk_numel(n, 3, sh, sw, p->out_block));
        ALLOC(p->d_q, qmax);
        ALLOC(p->d_r, feat);
        ALLOC(p->d_a, feat);
        ALLOC(p->d_t, feat);
        ALLOC(p->d_tmp, feat);
        if (m->cfg.res_scale != 1.0f) ALLOC(p->d_u, feat);
    } else {
        /* Only the skip (f0) and two block buffers stay live; t and r share one. */
        float *A, *B, *T;
        ALLOC(A, feat);
        ALLOC(B, feat);
        ALLOC(T, feat);
        for (int i = 0; i < nb; i++) {
            p->t[i] = T;
            p->a[i + 1] = (i % 2 == 0) ? A : B;
        }
        p->r = T;
    }
    sh = h;
    sw = w;
    for (int s = 0; s < m->n_stages; s++) {
        sh *= r;
        sw *= r;
        ALLOC(p->q[s], pf_blk_numel(n, c, sh, sw, b));
    }
    return 0;
oom:
    snprintf(err, errlen, "EDSR: out of memory for activations of a %d x %d x %d batch", n, h,
             w);
    return -1;
}

int pf_edsr_forward(pf_model *m, pf_plan *p, pf_conv *convs, const uint8_t *lq, char *err,
                    size_t errlen) {
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r;
    int n = p->n, h = p->h, w = p->w, b = p->block;

    pf_image_to_act(p->x, lq, n, h, w, m->cfg.rgb_mean, m->cfg.img_range, p->in_block);
    TRY(pf_conv_forward(&convs[CONV_FIRST], p->x, p->f0, err, errlen));
    for (int i = 0; i < nb; i++) {
        TRY(pf_conv_forward(&convs[CONV1(i)], p->a[i], p->t[i], err, errlen));
        TRY(pf_conv_forward_residual(&convs[CONV2(i)], p->t[i], p->a[i], p->a[i + 1], err,
                                     errlen));
    }
    TRY(pf_conv_forward_residual(&convs[CONV_AFTER(m)], p->a[nb], p->f0, p->r, err, errlen));
    const float *in = p->r;
    int sh = h, sw = w;
    for (int s = 0; s < m->n_stages; s++) {
        pf_conv *cu = &convs[CONV_UP(m, s)];
        TRY(pf_conv_forward(cu, in, p->p, err, errlen));
        pf_pixel_shuffle_forward(p->q[s], p->p, n, c, sh, sw, r, cu->dst_block, b);
        in = p->q[s];
        sh *= r;
        sw *= r;
    }
    TRY(pf_conv_forward(&convs[CONV_LAST(m)], in, p->out, err, errlen));
    return 0;
}

int pf_edsr_backward(pf_model *m, pf_plan *p, pf_conv *convs, char *err, size_t errlen) {
    int c = m->cfg.n_feats, nb = m->cfg.n_blocks, r = m->stage_r, ns = m->n_stages;
    int n = p->n, h = p->h, w = p->w, b = p->block;
    size_t feat = pf_blk_numel(n, c, h, w, b);
    float *g = m->grads;
#define BWDW(i, src, dd) \
    TRY(pf_conv_backward_weights(&convs[i], (src), (dd), pf_model_conv_w(m, g, i), \
                                 pf_model_conv_b(m, g, i), err, errlen))

    /* conv_last */
    int cl = CONV_LAST(m);
    BWDW(cl, p->q[ns - 1], p->d_out);
    TRY(pf_conv_backward_data(&convs[cl], p->d_out, p->d_q, err, errlen));
    /* upsample stages, last first; p->p holds the gradient at the conv output */
    int f = 1;
    for (int s = 0; s < ns; s++) f *= r;
    for (int s = ns - 1; s >= 0; s--) {
        int cu = CONV_UP(m, s);
        f /= r;
        int sh = h * f, sw = w * f;
        pf_pixel_shuffle_backward(p->p, p->d_q, n, c, sh, sw, r, convs[cu].dst_block, b);
        BWDW(cu, s == 0 ? p->r : p->q[s - 1], p->p);
        TRY(pf_conv_backward_data(&convs[cu], p->p, s == 0 ? p->d_r : p->d_q, err, errlen));
    }
    /* r = conv_after_body(a[nb]) + f0 */
    int ca = CONV_AFTER(m);
    BWDW(ca, p->a[nb], p->d_r);
    TRY(pf_conv_backward_data(&convs[ca], p->d_r, p->d_a, err, errlen));
    /* body, last block first; d_a holds d loss / d a[i+1] */
    for (int i = nb - 1; i >= 0; i--) {
        const float *du = p->d_a;
        if (m->cfg.res_scale != 1.0f) {
            pf_scale(p->d_u, p->d_a, m->cfg.res_scale, feat);
            du = p->d_u;
        }
        BWDW(CONV2(i), p->t[i], du);
        TRY(pf_conv_backward_data(&convs[CONV2(i)], du, p->d_t, err, errlen));
        TRY(pf_op_relu_backward(&p->ops[0], &m->dnnl, p->d_t, p->t[i], feat, err, errlen));
        BWDW(CONV1(i), p->a[i], p->d_t);
        TRY(pf_conv_backward_data(&convs[CONV1(i)], p->d_t, p->d_tmp, err, errlen));
        TRY(pf_op_accumulate(&p->ops[1], &m->dnnl, p->d_a, p->d_tmp, feat, err, errlen));
    }
    /* f0 feeds both the body and the global skip */
    TRY(pf_op_accumulate(&p->ops[1], &m->dnnl, p->d_a, p->d_r, feat, err, errlen));
    BWDW(CONV_FIRST, p->x, p->d_a);
#undef BWDW
    return 0;
}
