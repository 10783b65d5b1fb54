/*  model — the CPU model: the network description (nn/net.h, built by nn/zoo.c) with its flat
    parameter and gradient buffers and the public train-step / inference entry points (see
    model.h; loading weights into it is nn/checkpoint.c's), run by the CPU executor (nn/graph.h, nn/cpu/graph_cpu.c).
*/
#include "nn/model.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/networks.h"
#include "nn/layers.h"
#include "nn/model_internal.h"

/* What pf_model_new and pf_model_new_net share once m->net is built: the flat buffers, the
   layers, the oneDNN engine and the convolution algorithm. 0, or -1 with err. */
static int model_setup(pf_model *m, const char *conv_algorithm, char *err, size_t errlen) {
    const pf_net *g = &m->net;
    m->frames = pf_net_frames(g);
    m->out_frames = pf_net_out_frames(g);
    m->params = calloc(g->n_params + 1, sizeof(float));
    m->grads = calloc(g->n_params + 1, sizeof(float));
    m->train_conv = calloc((size_t)g->n_convs + 1, sizeof *m->train_conv);
    m->infer_conv = calloc((size_t)g->n_convs + 1, sizeof *m->infer_conv);
    m->running = calloc(g->n_running + 1, sizeof(float));
    m->tracked = calloc((size_t)g->n_bn + 1, sizeof *m->tracked);
    size_t sub = pf_net_sub_numel(g);
    if (sub) {
        m->sub_w = calloc(sub, sizeof(float));
        m->sub_dw = calloc(sub, sizeof(float));
    }
    if (!m->params || !m->grads || !m->train_conv || !m->infer_conv || !m->running ||
        !m->tracked ||
        (sub && (!m->sub_w || !m->sub_dw))) {
        snprintf(err, errlen, "model: out of memory for %zu parameters", g->n_params);
        return -1;
    }
    pf_net_bn_init(g, m->running, m->tracked);
    for (int i = 0; i < g->n_convs; i++) {
        pf_graph_conv_init(g, i, &m->train_conv[i]);
        pf_graph_conv_init(g, i, &m->infer_conv[i]);
    }
    if (pf_dnnl_init(&m->dnnl, err, errlen)) return -1;
    if (!strcmp(conv_algorithm, "direct")) {
        m->dnnl.conv_algo = PF_CONV_DIRECT;
    } else if (!strcmp(conv_algorithm, "winograd")) {
        m->dnnl.conv_algo = PF_CONV_WINOGRAD;
    } else if (conv_algorithm[0] && strcmp(conv_algorithm, "auto")) {
        snprintf(err, errlen, "model: conv_algorithm '%s' is not auto, direct or winograd",
                 conv_algorithm);
        return -1;
    }
    return 0;
}

pf_model *pf_model_new(const pf_config *cfg, char *err, size_t errlen) {
    pf_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "model: out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->frames = 1;
    const pf_network *row = pf_network_find(cfg->model_type);
    m->video = row && row->video;   /* unknown types fail in pf_net_build below */
    m->window = row && row->video == 2;
    pf_net_init(&m->net);
    pf_net_init(&m->clip.net);
    if (pf_loss_parse(cfg->loss_type, &m->loss.type)) {
        snprintf(err, errlen, "model: unsupported loss_type '%s' (L1Loss, MSELoss, "
                 "CharbonnierLoss)", cfg->loss_type);
        goto fail;
    }
    m->loss.weight = cfg->loss_weight;
    m->loss.eps = cfg->charbonnier_eps;
    if (pf_net_build(&m->net, cfg, err, errlen)) goto fail;
    if (model_setup(m, cfg->conv_algorithm, err, errlen)) goto fail;
    return m;
fail:
    pf_model_destroy(&m);
    return NULL;
}

int pf_model_set_precision(pf_model *m, int train, int infer, const char *what, char *err,
                           size_t errlen) {
    if (m->train.n || m->infer.n || m->clip.t) {
        snprintf(err, errlen, "%s: precision must be set before the first step", what);
        return -1;
    }
    return pf_dnnl_set_precision(&m->dnnl, (pf_precision)train, (pf_precision)infer, what, err,
                                 errlen);
}

/* Append one plan's part of pf_model_precision_report: "<name> <prec>[ on <unit>]" and, when
   its convolutions are set up, how many there are and the oneDNN kernels they run (in any
   direction) with the number of convolutions running each. */
static void report_plan(char *buf, size_t len, size_t *at, const char *name, pf_precision prec,
                        const char *unit, const pf_conv *convs, int n) {
    const char *kern[16];
    int count[16], nk = 0, built = 0;
    for (int i = 0; convs && i < n; i++) {
        if (!convs[i].fwd_pd) continue;
        built++;
        const char *dir[3] = { pf_conv_impl(&convs[i]), pf_conv_impl_bwd_data(&convs[i]),
                               pf_conv_impl_bwd_weights(&convs[i]) };
        for (int d = 0; d < 3; d++) {
            int seen = !dir[d][0];      /* not built */
            for (int e = 0; e < d && !seen; e++) seen = !strcmp(dir[e], dir[d]);
            if (seen) continue;
            int k = 0;
            while (k < nk && strcmp(kern[k], dir[d])) k++;
            if (k == nk && nk < 16) {
                kern[nk] = dir[d];
                count[nk++] = 0;
            }
            if (k < nk) count[k]++;
        }
    }
    if (*at >= len) return;
    *at += (size_t)snprintf(buf + *at, len - *at, "%s%s %s", *at ? "; " : "", name,
                            pf_precision_name(prec));
    if (prec == PF_PREC_BF16 && *at < len)
        *at += (size_t)snprintf(buf + *at, len - *at, " on %s", unit);
    if (built && *at < len)
        *at += (size_t)snprintf(buf + *at, len - *at, ": %d convolutions", built);
    for (int k = 0; k < nk && *at < len; k++)
        *at += (size_t)snprintf(buf + *at, len - *at, "%s %s (%d)", k ? "," : "", kern[k],
                                count[k]);
}

char *pf_model_precision_report(const pf_model *m, char *buf, size_t len) {
    char isa[32];
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    size_t at = 0;
    if (!len) return buf;
    buf[0] = 0;
    report_plan(buf, len, &at, "train", m->dnnl.prec_train, unit ? unit : "no bf16 unit",
                m->train.n ? m->train_conv : NULL, m->net.n_convs);
    report_plan(buf, len, &at, "eval", m->dnnl.prec_infer, unit ? unit : "no bf16 unit",
                m->infer.n ? m->infer_conv : NULL, m->net.n_convs);
    if (m->clip.t)
        report_plan(buf, len, &at, "clip", m->dnnl.prec_infer, unit ? unit : "no bf16 unit",
                    m->clip.conv, m->clip.net.n_convs);
    if (m->dnnl.prec_train != PF_PREC_BF16 && m->dnnl.prec_infer != PF_PREC_BF16 && at < len)
        snprintf(buf + at, len - at, unit ? "; bf16 unit %s" : "; no bf16 unit (oneDNN ISA %s)",
                 unit ? unit : isa);
    return buf;
}

pf_model *pf_model_new_net(pf_net *net, const char *conv_algorithm, char *err, size_t errlen) {
    pf_model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "model: out of memory");
        pf_net_free(net);
        return NULL;
    }
    m->net = *net;              /* taken over */
    pf_net_init(net);
    pf_net_init(&m->clip.net);
    m->from_net = 1;
    snprintf(m->cfg.model_type, sizeof m->cfg.model_type, "%s", m->net.type);
    if (m->net.oom || m->net.input < 0 || m->net.output < 0) {
        snprintf(err, errlen, "model: %s: %s", m->net.type, m->net.oom
                 ? "out of memory building the description" : "a description without input "
                 "or output");
        goto fail;
    }
    if (pf_net_check_desc(&m->net, err, errlen) ||
        model_setup(m, conv_algorithm ? conv_algorithm : "", err, errlen))
        goto fail;
    return m;
fail:
    pf_model_destroy(&m);
    return NULL;
}

static void clip_free(pf_clip_net *c);

static void plan_free(pf_plan *p) {
    pf_gstate_free(&p->g);
    memset(p, 0, sizeof *p);
}

void pf_model_destroy(pf_model **self) {
    pf_model *m = *self;
    if (!m) return;
    for (int i = 0; m->train_conv && m->infer_conv && i < m->net.n_convs; i++) {
        pf_conv_free(&m->train_conv[i]);
        pf_conv_free(&m->infer_conv[i]);
    }
    plan_free(&m->train);
    plan_free(&m->infer);
    clip_free(&m->clip);
    pf_dnnl_free(&m->dnnl);
    free(m->train_conv);
    free(m->infer_conv);
    free(m->sub_w);
    free(m->sub_dw);
    pf_net_free(&m->net);
    free(m->params);
    free(m->grads);
    free(m->infer_weights);
    free(m->running);
    free(m->tracked);
    free(m);
    *self = NULL;
}

void pf_model_init(pf_model *m, uint64_t seed) { pf_net_init_params(&m->net, m->params, seed); }

size_t pf_model_num_params(const pf_model *m) { return m->net.n_params; }
float *pf_model_params(pf_model *m) { return m->params; }
float *pf_model_grads(pf_model *m) { return m->grads; }
int pf_model_num_tensors(const pf_model *m) { return m->net.n_tensors; }
const pf_param_info *pf_model_tensor_info(const pf_model *m, int i) {
    return i >= 0 && i < m->net.n_tensors ? &m->net.tensors[i] : NULL;
}
const pf_net *pf_model_net(const pf_model *m) { return &m->net; }
const pf_config *pf_model_config(const pf_model *m) { return &m->cfg; }
int pf_model_num_buffers(const pf_model *m) { return m->net.n_buffers; }
const pf_net_buffer *pf_model_buffer(const pf_model *m, int i) {
    return i >= 0 && i < m->net.n_buffers ? &m->net.buffers[i] : NULL;
}
int pf_model_scale(const pf_model *m) { return m->net.scale; }
int pf_model_input_multiple(const pf_model *m) { return pf_net_input_multiple(&m->net); }

/* Reorder every layer's current weights into its primitives' layouts. */
static int set_weights(pf_model *m, const pf_net *g, pf_conv *convs, char *err,
                       size_t errlen) {
    if (m->sub_w) pf_net_sub_weights(g, m->params, m->sub_w);
    for (int i = 0; i < g->n_convs; i++) {
        const pf_param_info *wt = &g->tensors[g->conv[i].weight];
        int bi = pf_net_conv_bias(g, i);    /* -1: a layer without bias */
        const float *w = m->params + wt->offset;
        const float *b = bi >= 0 ? m->params + g->tensors[bi].offset : NULL;
        if (i == g->sub_conv) {
            w = m->sub_w;
            b = m->sub_w + (size_t)convs[i].oc * convs[i].ic * convs[i].k * convs[i].k;
        }
        if (pf_conv_set_weights(&convs[i], w, b, err, errlen)) return -1;
    }
    return 0;
}

static pf_gctx ctx(pf_model *m, const pf_net *net, pf_conv *convs) {
    return (pf_gctx){ .net = net, .dnnl = &m->dnnl, .convs = convs, .params = m->params,
                      .grads = m->grads, .sub_dw = m->sub_dw, .input_grad = m->from_net,
                      .running = m->net.n_bn ? m->running : NULL, .tracked = m->tracked };
}

static int plan(pf_model *m, const pf_net *net, pf_plan *p, pf_conv *convs, int n, int h,
                int w, int training, char *err, size_t errlen) {
    if (n < 1 || h < 1 || w < 1) {
        snprintf(err, errlen, "model: bad input shape %d x %d x %d", n, h, w);
        return -1;
    }
    if (p->n == n && p->h == h && p->w == w) return 0;
    int q = pf_net_input_multiple(net);
    if (m->window && (h % q || w % q)) {    /* EDVR's pyramid: levels at 1/2 and 1/4 */
        snprintf(err, errlen, "model: %s: LQ %d x %d: height and width must be multiples of "
                 "%d", net->type, h, w, q);
        return -1;
    }
    plan_free(p);
    pf_gctx x = ctx(m, net, convs);
    if (pf_graph_plan(&x, &p->g, n, h, w, training, err, errlen)) return -1;
    p->n = n;
    p->h = h;
    p->w = w;
    return 0;
}

/* The output activation's units: y = out / range + mean (mean NULL: none). */
static const float *out_mean(const pf_model *m) { return m->net.use_mean ? m->net.mean : NULL; }

int pf_model_train_step(pf_model *m, const uint8_t *lq, const uint8_t *gt, int n, int lq_h,
                        int lq_w, float *loss, char *err, size_t errlen) {
    pf_plan *p = &m->train;
    if (m->from_net) {
        snprintf(err, errlen, "model: %s has no loss (pf_model_new_net): "
                 "pf_model_forward_train_f32 and pf_model_backward_from", m->net.type);
        return -1;
    }
    m->fwd_f32 = 0;
    pf_conv *convs = m->train_conv;
    if (plan(m, &m->net, p, convs, n, lq_h, lq_w, 1, err, errlen)) return -1;
    if (set_weights(m, &m->net, convs, err, errlen)) return -1;
    pf_gctx x = ctx(m, &m->net, convs);
    if (pf_graph_forward(&x, p->g, lq, err, errlen)) return -1;
    int s = m->net.scale, block;
    const float *out = pf_gstate_out(p->g, &block);
    *loss = (float)pf_loss_forward_backward(&m->loss, out, gt, n, m->out_frames, lq_h * s, lq_w * s,
                                            out_mean(m), m->net.range, block,
                                            pf_gstate_dout(p->g));
    if (pf_graph_backward(&x, p->g, err, errlen)) return -1;
    return pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                         errlen);
}

int pf_model_train_output(const pf_model *m, int n, float *out) {
    const pf_plan *p = &m->train;
    if (!p->n || !p->g || n < 1 || n > p->n || m->from_net) return -1;
    int block, s = m->net.scale;
    const float *y = pf_gstate_out(p->g, &block);
    pf_act_to_image(out, y, n, m->out_frames, p->h * s, p->w * s, out_mean(m), m->net.range,
                    block);
    return 0;
}

int pf_model_forward_train_f32(pf_model *m, const float *x, int n, int h, int w, char *err,
                               size_t errlen) {
    pf_plan *p = &m->train;
    pf_conv *convs = m->train_conv;
    m->fwd_f32 = 0;
    if (plan(m, &m->net, p, convs, n, h, w, 1, err, errlen)) return -1;
    if (set_weights(m, &m->net, convs, err, errlen)) return -1;
    pf_gctx c = ctx(m, &m->net, convs);
    if (pf_graph_forward_f32(&c, p->g, x, err, errlen)) return -1;
    if (pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                      errlen))
        return -1;
    m->fwd_f32 = 1;
    return 0;
}

int pf_model_forward_eval_f32(pf_model *m, const float *x, int n, int h, int w, float *out,
                              char *err, size_t errlen) {
    pf_plan *p = &m->infer;
    pf_conv *convs = m->infer_conv;
    if (m->video) {
        snprintf(err, errlen, "model: %s: an eval forward of a video network", m->net.type);
        return -1;
    }
    if (plan(m, &m->net, p, convs, n, h, w, 0, err, errlen)) return -1;
    if (set_weights(m, &m->net, convs, err, errlen)) return -1;
    free(m->infer_weights);     /* pf_model_infer's cache: its primitives are set again */
    m->infer_weights = NULL;
    pf_gctx c = ctx(m, &m->net, convs);
    if (pf_graph_forward_f32(&c, p->g, x, err, errlen)) return -1;
    if (pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                      errlen))
        return -1;
    return pf_graph_read(&c, p->g, m->net.output, out);
}

float *pf_model_running(pf_model *m) { return m->running; }
int64_t *pf_model_tracked(pf_model *m) { return m->tracked; }

/* The tensor id of `which` (-1 output, k tap k) after a pf_model_forward_train_f32, or -1. */
static int tensor_of(const pf_model *m, int which) {
    if (!m->fwd_f32 || !m->train.g || which < -1 || which >= m->net.n_taps) return -1;
    return which < 0 ? m->net.output : m->net.taps[which];
}

int pf_model_shape(const pf_model *m, int which, int dims[4]) {
    int t = tensor_of(m, which);
    if (t < 0) return -1;
    pf_gctx c = ctx((pf_model *)m, &m->net, m->train_conv);
    pf_gstate_shape(&c, m->train.g, t, dims);
    return 0;
}

int pf_model_read(const pf_model *m, int which, float *nchw) {
    int t = tensor_of(m, which);
    if (t < 0) return -1;
    pf_gctx c = ctx((pf_model *)m, &m->net, m->train_conv);
    return pf_graph_read(&c, m->train.g, t, nchw);
}

/* pf_model_backward_from (params 1) and pf_model_backward_input (params 0). */
static int backward_given(pf_model *m, const float *dout_nchw, const float *const *dtaps,
                          float *dx_nhwc, int params, char *err, size_t errlen) {
    if (!m->fwd_f32 || !m->train.g) {
        snprintf(err, errlen, "model: %s: backward without pf_model_forward_train_f32",
                 m->net.type);
        return -1;
    }
    pf_gctx c = ctx(m, &m->net, m->train_conv);
    int rc = params ? pf_graph_backward_from(&c, m->train.g, dout_nchw, dtaps, dx_nhwc, err,
                                             errlen)
                    : pf_graph_backward_input(&c, m->train.g, dout_nchw, dtaps, dx_nhwc, err,
                                              errlen);
    if (rc) return -1;
    return pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                         errlen);
}

int pf_model_backward_from(pf_model *m, const float *dout_nchw, const float *const *dtaps,
                           float *dx_nhwc, char *err, size_t errlen) {
    return backward_given(m, dout_nchw, dtaps, dx_nhwc, 1, err, errlen);
}

int pf_model_backward_input(pf_model *m, const float *dout_nchw, const float *const *dtaps,
                            float *dx_nhwc, char *err, size_t errlen) {
    return backward_given(m, dout_nchw, dtaps, dx_nhwc, 0, err, errlen);
}

/* pf_model_infer and pf_model_infer_f32 on an image network: lq one of u8 and f32. */
static int infer_image(pf_model *m, const uint8_t *lq, const float *lqf, int h, int w,
                       float *out, char *err, size_t errlen) {
    pf_plan *p = &m->infer;
    pf_conv *convs = m->infer_conv;
    if (m->net.t[m->net.output].c != 3) {     /* one image (a window network: its center) */
        snprintf(err, errlen, "model: %s's output is not an image (%d channels)", m->net.type,
                 m->net.t[m->net.output].c);
        return -1;
    }
    int replanned = p->n != 1 || p->h != h || p->w != w;
    size_t n_params = m->net.n_params;
    if (plan(m, &m->net, p, convs, 1, h, w, 0, err, errlen)) return -1;
    /* The weights go into the primitives' layouts only when they changed since the last
       inference (or the primitives are new): evaluating many images or tiles with one
       checkpoint reorders them once. */
    if (replanned || !m->infer_weights ||
        memcmp(m->infer_weights, m->params, n_params * sizeof(float))) {
        if (set_weights(m, &m->net, convs, err, errlen)) return -1;
        if (!m->infer_weights) m->infer_weights = malloc(n_params * sizeof(float) + 1);
        if (m->infer_weights) memcpy(m->infer_weights, m->params, n_params * sizeof(float));
    }
    pf_gctx x = ctx(m, &m->net, convs);
    if (lqf ? pf_graph_forward_f32(&x, p->g, lqf, err, errlen)
            : pf_graph_forward(&x, p->g, lq, err, errlen))
        return -1;
    if (pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                      errlen))
        return -1;
    int block, s = m->net.scale;
    const float *y = pf_gstate_out(p->g, &block);
    pf_act_to_image(out, y, 1, 1, h * s, w * s, out_mean(m), m->net.range, block);
    return 0;
}

int pf_model_infer(pf_model *m, const uint8_t *lq, int h, int w, float *out, char *err,
                   size_t errlen) {
    if (m->video) return pf_model_infer_clip(m, lq, 1, h, w, out, err, errlen);
    return infer_image(m, lq, NULL, h, w, out, err, errlen);
}

int pf_model_infer_f32(pf_model *m, const float *lq, int h, int w, float *out, char *err,
                       size_t errlen) {
    if (m->video) {
        snprintf(err, errlen, "model: float input is for image networks (%s is a video "
                 "network)", m->net.type);
        return -1;
    }
    return infer_image(m, NULL, lq, h, w, out, err, errlen);
}

int pf_model_infer_window(pf_model *m, const uint8_t *lq, int h, int w, float *out,
                          char *err, size_t errlen) {
    if (!m->window) {
        snprintf(err, errlen, "model: %s is not a sliding-window network (%s)", m->net.type,
                 m->video ? "pf_model_infer_clip" : "pf_model_infer");
        return -1;
    }
    return infer_image(m, lq, NULL, h, w, out, err, errlen);
}

int pf_model_frames(const pf_model *m) { return m->frames; }
int pf_model_out_frames(const pf_model *m) { return m->out_frames; }
int pf_model_is_video(const pf_model *m) { return m->video; }
int pf_model_is_window(const pf_model *m) { return m->window; }

static void clip_free(pf_clip_net *c) {
    for (int i = 0; c->conv && i < c->net.n_convs; i++) pf_conv_free(&c->conv[i]);
    free(c->conv);
    plan_free(&c->plan);
    pf_net_free(&c->net);
    free(c->weights);
    memset(c, 0, sizeof *c);
}

/* The video network unrolled over t frames, built when t changes. */
static int clip_net(pf_model *m, int t, char *err, size_t errlen) {
    pf_clip_net *c = &m->clip;
    if (c->t == t) return 0;
    clip_free(c);
    if (pf_net_build_video(&c->net, &m->cfg, t, err, errlen)) return -1;
    if (c->net.n_params != m->net.n_params) {   /* shared tensors are declared first */
        snprintf(err, errlen, "model: %s over %d frames has %zu parameters, %zu in training",
                 m->cfg.model_type, t, c->net.n_params, m->net.n_params);
        pf_net_free(&c->net);
        return -1;
    }
    c->conv = calloc((size_t)c->net.n_convs + 1, sizeof *c->conv);
    if (!c->conv) {
        snprintf(err, errlen, "model: out of memory");
        pf_net_free(&c->net);
        return -1;
    }
    for (int i = 0; i < c->net.n_convs; i++) pf_graph_conv_init(&c->net, i, &c->conv[i]);
    c->t = t;
    return 0;
}

int pf_model_infer_clip(pf_model *m, const uint8_t *lq, int t, int h, int w, float *out,
                        char *err, size_t errlen) {
    int s = m->net.scale;
    if (t < 1 || (m->video && t > PF_MODEL_MAX_CLIP)) {
        snprintf(err, errlen, "model: a clip of %d frames (1..%d)", t, PF_MODEL_MAX_CLIP);
        return -1;
    }
    if (m->window) {
        snprintf(err, errlen, "model: %s is a sliding-window network: its windows of %d frames "
                 "go through pf_model_infer_window, one output frame each", m->net.type,
                 m->frames);
        return -1;
    }
    size_t in_px = (size_t)h * w, out_px = in_px * (size_t)s * s;
    for (int f = 0; !m->video && f < t; f++)
        if (pf_model_infer(m, lq + f * in_px * 3, h, w, out + f * out_px * 3, err, errlen))
            return -1;
    if (!m->video) return 0;
    if (clip_net(m, t, err, errlen)) return -1;
    pf_clip_net *c = &m->clip;
    int replanned = c->plan.h != h || c->plan.w != w;
    if (plan(m, &c->net, &c->plan, c->conv, 1, h, w, 0, err, errlen)) return -1;
    size_t n_params = m->net.n_params;
    if (replanned || !c->weights || memcmp(c->weights, m->params, n_params * sizeof(float))) {
        if (set_weights(m, &c->net, c->conv, err, errlen)) return -1;
        if (!c->weights) c->weights = malloc(n_params * sizeof(float) + 1);
        if (c->weights) memcpy(c->weights, m->params, n_params * sizeof(float));
    }
    pf_gctx x = ctx(m, &c->net, c->conv);
    if (pf_graph_forward(&x, c->plan.g, lq, err, errlen)) return -1;
    if (pf_dnnl_check(dnnl_stream_wait(m->dnnl.stream), "model", "dnnl_stream_wait", err,
                      errlen))
        return -1;
    int block;
    const float *y = pf_gstate_out(c->plan.g, &block);
    pf_act_to_image(out, y, 1, t, h * s, w * s, NULL, 1.0f, block);
    return 0;
}

int pf_model_describe(const pf_config *cfg, char *buf, size_t len) {
    /* The model: section of the resolved config, which lists exactly the keys the type takes,
       less the ones that shape no tensor. */
    static const char *const skip[] = { "type", "in_channels", "out_channels", "res_scale",
                                        "rgb_mean", "img_range", NULL };
    snprintf(buf, len, "%s", cfg->model_type);
    char *yaml = pf_config_to_yaml(cfg);
    if (!yaml) return -1;
    const char *p = strstr(yaml, "model:\n");
    for (p = p ? strchr(p, '\n') + 1 : ""; strncmp(p, "  ", 2) == 0 && p[2] != ' ';) {
        const char *eol = strchr(p, '\n');
        if (!eol) break;
        const char *key = p + 2, *colon = memchr(key, ':', (size_t)(eol - key));
        int keep = colon && colon[1] == ' ';   /* "loss:" opens a sub-section: not a value */
        for (int i = 0; keep && skip[i]; i++)
            keep = !(strlen(skip[i]) == (size_t)(colon - key) &&
                     !strncmp(key, skip[i], (size_t)(colon - key)));
        size_t used = strlen(buf);
        if (keep && used + 1 < len)
            snprintf(buf + used, len - used, ", %.*s %.*s", (int)(colon - key), key,
                     (int)(eol - colon - 2), colon + 2);
        p = eol + 1;
    }
    free(yaml);
    return 0;
}

void pf_set_threads(int n) {
    char v[16];
    snprintf(v, sizeof v, "%d", n);
    omp_set_num_threads(n);
    setenv("OMP_NUM_THREADS", v, 1);    /* for the processes this one starts */
}
