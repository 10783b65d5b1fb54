/*  onnx_export — the ONNX writer (see onnx_export.h): walks the description's nodes in order,
    emitting ONNX nodes into protobuf-c's generated structs (onnx/onnx.pb-c.h, from Debian's
    /usr/include/onnx/onnx.proto at build time, nn/CMakeLists.txt), then packs the ModelProto.
    Every struct and string of the model is allocated from one list that is freed after
    packing; the weights are not copied (raw_data points into params).
*/
#include "nn/onnx_export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/networks.h"
#include "nn/video_layers.h"
#include "onnx/onnx.pb-c.h"

#define MAX_ATTR 8              /* attributes of one node */

typedef struct {
    const pf_net *g;
    const float *params;
    void **mem;                 /* every allocation of the model, freed together */
    size_t n_mem, cap_mem;
    void **nodes;               /* the graph's nodes (Onnx__NodeProto *), in order */
    size_t n_nodes, cap_nodes;
    const char **tname;         /* ONNX value name of each description tensor */
    int fresh;                  /* counter of intermediate value names */
    int frames;                 /* video: frames T of the input [batch, T, 3, H, W]; 0 image */
    const char *lq_hw;          /* video: the LQ's (H, W), int64 [2] */
    int oom;
} ox;

/* Room for one more pointer in *arr (n used of *cap). 0, or -1 (x->oom set). */
static int grow(ox *x, void ***arr, size_t n, size_t *cap) {
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void **a = realloc(*arr, c * sizeof *a);
    if (!a) {
        x->oom = 1;
        return -1;
    }
    *arr = a;
    *cap = c;
    return 0;
}

static void *oa(ox *x, size_t size) {
    if (x->oom || grow(x, &x->mem, x->n_mem, &x->cap_mem)) return NULL;
    void *p = calloc(1, size ? size : 1);
    if (!p) x->oom = 1;
    else x->mem[x->n_mem++] = p;
    return p;
}

static char *ostr(ox *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *ostr(ox *x, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = oa(x, (size_t)n + 1);
    if (!s) return (char *)"";
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* A new value name "hint_N". */
static const char *fresh(ox *x, const char *hint) { return ostr(x, "%s_%d", hint, x->fresh++); }

/* Append a node op_type(in[0..n_in)) -> out; returns it (NULL when out of memory) so the
   caller adds attributes (attr_*). */
static Onnx__NodeProto *node(ox *x, const char *op_type, const char *const *in, int n_in,
                             const char *out) {
    Onnx__NodeProto *n = oa(x, sizeof *n);
    char **ins = oa(x, (size_t)(n_in ? n_in : 1) * sizeof *ins);
    char **outs = oa(x, sizeof *outs);
    Onnx__AttributeProto **at = oa(x, MAX_ATTR * sizeof *at);
    if (!n || !ins || !outs || !at || grow(x, &x->nodes, x->n_nodes, &x->cap_nodes))
        return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++) ins[i] = (char *)in[i];
    outs[0] = (char *)out;
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->op_type = (char *)op_type;
    n->name = ostr(x, "%s_%zu", op_type, x->n_nodes);
    n->attribute = at;
    x->nodes[x->n_nodes++] = n;
    return n;
}

static Onnx__AttributeProto *attr(ox *x, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type) {
    if (!n || n->n_attribute >= MAX_ATTR) {
        x->oom = 1;
        return NULL;
    }
    Onnx__AttributeProto *a = oa(x, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void attr_i(ox *x, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) {
        a->has_i = 1;
        a->i = v;
    }
}

static void attr_f(ox *x, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) {
        a->has_f = 1;
        a->f = v;
    }
}

static void attr_s(ox *x, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (a) {
        a->has_s = 1;
        a->s.data = (uint8_t *)v;
        a->s.len = strlen(v);
    }
}

static void attr_ints(ox *x, Onnx__NodeProto *n, const char *name, const int64_t *v, int k) {
    Onnx__AttributeProto *a = attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = oa(x, (size_t)k * sizeof *c);
    if (!a || !c) return;
    memcpy(c, v, (size_t)k * sizeof *c);
    a->n_ints = (size_t)k;
    a->ints = c;
}

/* A tensor `name` of dims[0..ndim) whose data_type elements are the bytes at data (raw, not
   copied). */
static Onnx__TensorProto *tensor(ox *x, const char *name, const int64_t *dims, int ndim,
                                 int data_type, const void *data, size_t bytes) {
    Onnx__TensorProto *t = oa(x, sizeof *t);
    int64_t *d = oa(x, (size_t)(ndim ? ndim : 1) * sizeof *d);
    if (!t || !d) return NULL;
    onnx__tensor_proto__init(t);
    memcpy(d, dims, (size_t)ndim * sizeof *d);
    t->n_dims = (size_t)ndim;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = data_type;
    t->name = (char *)name;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = bytes;
    return t;
}

/* A Constant node holding n floats (shape dims[0..ndim)) or n int64s; returns its output. */
static const char *constant(ox *x, const char *hint, const int64_t *dims, int ndim,
                            const float *f, const int64_t *i, size_t n) {
    const char *out = fresh(x, hint);
    size_t bytes = n * (f ? sizeof *f : sizeof *i);
    void *copy = oa(x, bytes);
    if (!copy) return out;
    memcpy(copy, f ? (const void *)f : (const void *)i, bytes);
    Onnx__NodeProto *nd = node(x, "Constant", NULL, 0, out);
    Onnx__AttributeProto *a = attr(x, nd, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (a)
        a->t = tensor(x, out, dims, ndim,
                      f ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                        : ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                      copy, bytes);
    return out;
}

static const char *scalar(ox *x, float v) { return constant(x, "const", NULL, 0, &v, NULL, 1); }

/* in * s (in itself when s is 1). */
static const char *times(ox *x, const char *in, float s) {
    if (s == 1.0f) return in;
    const char *ins[2] = { in, scalar(x, s) }, *out = fresh(x, "scaled");
    node(x, "Mul", ins, 2, out);
    return out;
}

static const char *binop(ox *x, const char *op, const char *a, const char *b, const char *out) {
    const char *ins[2] = { a, b };
    if (!out) out = fresh(x, op);
    node(x, op, ins, 2, out);
    return out;
}

/* Resize(in, scales [1, 1, r, r]) in `mode` with its attributes. */
static void resize(ox *x, const char *in, int r, const char *mode, const char *out) {
    static const int64_t d4[1] = { 4 };
    const float sc[4] = { 1, 1, (float)r, (float)r };
    const char *ins[3] = { in, "", constant(x, "scales", d4, 1, sc, NULL, 4) };
    Onnx__NodeProto *n = node(x, "Resize", ins, 3, out);
    attr_s(x, n, "mode", mode);
    if (!strcmp(mode, "nearest")) {
        /* F.interpolate(mode='nearest'): source index floor(dst / r) */
        attr_s(x, n, "coordinate_transformation_mode", "asymmetric");
        attr_s(x, n, "nearest_mode", "floor");
        return;
    }
    /* align_corners=False; PyTorch clamps a negative source coordinate to 0 for linear and
       replicates the edge for cubic taps outside the image: ONNX's edge handling */
    attr_s(x, n, "coordinate_transformation_mode", "half_pixel");
    if (!strcmp(mode, "cubic")) {
        attr_f(x, n, "cubic_coeff_a", -0.75f);
        attr_i(x, n, "exclude_outside", 0);
    }
}

static const char *pname(ox *x, int tensor) { return x->g->tensors[tensor].name; }

/* op_type (Conv or ConvTranspose) of node nd's first input with layer nd->conv's weight and
   bias: k x k, padding pad, stride; into out. */
static Onnx__NodeProto *conv_node(ox *x, const pf_gnode *nd, const char *op_type, int k,
                                  int pad, int stride, const char *out) {
    const pf_nconv *c = &x->g->conv[nd->conv];
    const int64_t ks[2] = { k, k }, pads[4] = { pad, pad, pad, pad }, st[2] = { stride, stride };
    const char *ins[3] = { x->tname[nd->in[0]], pname(x, c->weight),
                           c->has_bias ? pname(x, c->weight + 1) : NULL };
    Onnx__NodeProto *n = node(x, op_type, ins, c->has_bias ? 3 : 2, out);   /* B optional */
    attr_ints(x, n, "kernel_shape", ks, 2);
    attr_ints(x, n, "pads", pads, 4);
    attr_ints(x, n, "strides", st, 2);
    return n;
}

/* The convolution (its stride and padding, its bias when it has one), then its activation or
   residual, into out. */
static void conv(ox *x, const pf_gnode *nd, const char *out) {
    const pf_nconv *c = &x->g->conv[nd->conv];
    const int64_t ones[2] = { 1, 1 };
    int res = nd->n_in > 1;
    const char *y = c->act || res ? fresh(x, "conv") : out;
    Onnx__NodeProto *n = conv_node(x, nd, "Conv", c->k, c->pad, c->stride, y);
    attr_ints(x, n, "dilations", ones, 2);
    attr_i(x, n, "group", 1);
    if (c->act) {
        Onnx__NodeProto *a = node(x, c->alpha == 0.0f ? "Relu" : "LeakyRelu", &y, 1, out);
        if (c->alpha != 0.0f) attr_f(x, a, "alpha", c->alpha);
    } else if (res) {
        binop(x, "Add", x->tname[nd->in[1]], times(x, y, nd->scale), out);
    }
}

/* FSRCNN's last_part as the ConvTranspose2d it is (weight (d, 3, 9, 9), stride r, padding 4,
   output_padding r - 1): from the sub-pixel conv's input straight to its shuffle's output. */
static void conv_transpose(ox *x, const pf_gnode *nd, const char *out) {
    int r = x->g->sub_stride;
    const int64_t op[2] = { r - 1, r - 1 };
    attr_ints(x, conv_node(x, nd, "ConvTranspose", 9, 4, r, out), "output_padding", op, 2);
}

/* PixelUnshuffle(r) of a C-channel tensor: SpaceToDepth puts input (c, i, j) in channel
   (i r + j) C + c, torch in c r^2 + i r + j; a Gather reorders. */
static void unshuffle(ox *x, const pf_gnode *nd, const char *out) {
    int r = nd->r, C = x->g->t[nd->in[0]].c, rr = r * r;
    int64_t *idx = oa(x, (size_t)C * rr * sizeof *idx), d1[1] = { (int64_t)C * rr };
    if (!idx) return;
    for (int c = 0; c < C; c++)
        for (int p = 0; p < rr; p++) idx[c * rr + p] = (int64_t)p * C + c;
    const char *s2d = fresh(x, "space_to_depth");
    Onnx__NodeProto *n = node(x, "SpaceToDepth", &x->tname[nd->in[0]], 1, s2d);
    attr_i(x, n, "blocksize", r);
    const char *ins[2] = { s2d, constant(x, "channels", d1, 1, NULL, idx, (size_t)C * rr) };
    attr_i(x, node(x, "Gather", ins, 2, out), "axis", 1);
}

/* ---- video (BasicVSR) ------------------------------------------------------------------
   Sizes are computed in the graph from the input's shape (Shape, integer Add / Div / Mul), so
   height and width stay dynamic; the frame count is fixed by the description. */

static const char *i64(ox *x, const int64_t *v, int n) {
    const int64_t d[1] = { n };
    return constant(x, "i64", d, 1, NULL, v, (size_t)n);
}

static const char *i64_scalar(ox *x, int64_t v) { return constant(x, "i64", NULL, 0, NULL, &v, 1); }

/* Shape(v)[start:end]. */
static const char *shape_of(ox *x, const char *v, int start, int end) {
    const char *out = fresh(x, "shape");
    Onnx__NodeProto *n = node(x, "Shape", &v, 1, out);
    attr_i(x, n, "start", start);
    attr_i(x, n, "end", end);
    return out;
}

static const char *concat3(ox *x, const char *a, const char *b, const char *c, int axis) {
    const char *ins[3] = { a, b, c }, *out = fresh(x, "concat");
    attr_i(x, node(x, "Concat", ins, c ? 3 : 2, out), "axis", axis);
    return out;
}

/* Tensor t's (H, W), int64 [2], from the LQ's: rounded up to a multiple of round, times mul
   / div (pf_net_tensor_size's rule). */
static const char *tensor_hw(ox *x, int t) {
    const pf_gtensor *g = &x->g->t[t];
    const char *hw = x->lq_hw;
    if (g->round > 0) {
        hw = binop(x, "Div", binop(x, "Add", hw, i64_scalar(x, g->round - 1), NULL),
                   i64_scalar(x, g->round), NULL);
        hw = binop(x, "Mul", hw, i64_scalar(x, g->round), NULL);
    }
    if (g->mul != 1) hw = binop(x, "Mul", hw, i64_scalar(x, g->mul), NULL);
    if (g->div != 1) hw = binop(x, "Div", hw, i64_scalar(x, g->div), NULL);
    return hw;
}

static const char *cast_float(ox *x, const char *v) {
    const char *out = fresh(x, "float");
    attr_i(x, node(x, "Cast", &v, 1, out), "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    return out;
}

/* Per-channel constant v[0..c) as [1, c, 1, 1]. */
static const char *per_channel(ox *x, const float *v, int c) {
    const int64_t d4[4] = { 1, c, 1, 1 };
    return constant(x, "per_channel", d4, 4, v, NULL, (size_t)c);
}

/* PF_G_RESIZE: bilinear to the output tensor's size, then its per-channel factors. */
static void video_resize(ox *x, const pf_gnode *nd, const char *a, const char *out) {
    const char *sizes = concat3(x, shape_of(x, a, 0, 2), tensor_hw(x, nd->out), NULL, 0);
    const char *ins[4] = { a, "", "", sizes };
    const char *y = nd->use_mul ? fresh(x, "resized") : out;
    Onnx__NodeProto *n = node(x, "Resize", ins, 4, y);
    attr_s(x, n, "mode", "linear");
    attr_s(x, n, "coordinate_transformation_mode", nd->ac ? "align_corners" : "half_pixel");
    if (nd->use_mul == 1) {
        binop(x, "Mul", y, per_channel(x, nd->mul, x->g->t[nd->out].c), out);
    } else if (nd->use_mul == 2) {
        /* a flow: x by W_out / W_in, y by H_out / H_in */
        const char *r = binop(x, "Div", cast_float(x, tensor_hw(x, nd->out)),
                              cast_float(x, shape_of(x, a, 2, 4)), NULL);
        static const int64_t wh[2] = { 1, 0 }, d4[4] = { 1, 2, 1, 1 };
        r = binop(x, "Reshape", binop(x, "Gather", r, i64(x, wh, 2), NULL), i64(x, d4, 4), NULL);
        binop(x, "Mul", y, r, out);
    }
}

/* in[:, c0:c1] into out (NULL: a new name); returns its name. */
static const char *slice_ch(ox *x, const char *in, int c0, int c1, const char *out) {
    const int64_t a[1] = { c0 }, b[1] = { c1 }, ax[1] = { 1 };
    const char *ins[4] = { in, i64(x, a, 1), i64(x, b, 1), i64(x, ax, 1) };
    if (!out) out = fresh(x, "slice");
    node(x, "Slice", ins, 4, out);
    return out;
}

/* One coordinate of flow_warp's sampling grid: (index + flow) * 2 / max(size - 1, 1) - 1
   (grid_sample's align_corners=True normalisation), index along axis 3 (x) or 2 (y). */
static const char *grid_coord(ox *x, const char *flow_c, const char *size_f, int axis) {
    static const float zero = 0, one = 1, two = 2;
    const char *ins[3] = { constant(x, "f", NULL, 0, &zero, NULL, 1), size_f,
                           constant(x, "f", NULL, 0, &one, NULL, 1) };
    const char *idx = fresh(x, "range");
    node(x, "Range", ins, 3, idx);
    const int64_t sh[4] = { 1, 1, axis == 2 ? -1 : 1, axis == 3 ? -1 : 1 };
    idx = binop(x, "Reshape", idx, i64(x, sh, 4), NULL);
    const char *ones = constant(x, "f", NULL, 0, &one, NULL, 1);
    const char *den = binop(x, "Max", binop(x, "Sub", size_f, ones, NULL), ones, NULL);
    const char *k = binop(x, "Div", constant(x, "f", NULL, 0, &two, NULL, 1), den, NULL);
    return binop(x, "Sub", binop(x, "Mul", binop(x, "Add", flow_c, idx, NULL), k, NULL), ones,
                 NULL);
}

/* PF_G_WARP: GridSample(bilinear, align_corners) at each pixel plus the flow. */
static void warp(ox *x, const pf_gnode *nd, const char *a, const char *flow, const char *out) {
    const char *hw = cast_float(x, shape_of(x, flow, 2, 4));
    const char *h = binop(x, "Gather", hw, i64_scalar(x, 0), NULL);
    const char *w = binop(x, "Gather", hw, i64_scalar(x, 1), NULL);
    const char *gx = grid_coord(x, slice_ch(x, flow, 0, 1, NULL), w, 3);
    const char *gy = grid_coord(x, slice_ch(x, flow, 1, 2, NULL), h, 2);
    const char *grid = fresh(x, "grid");
    static const int64_t perm[4] = { 0, 2, 3, 1 };
    const char *xy = concat3(x, gx, gy, NULL, 1);
    attr_ints(x, node(x, "Transpose", &xy, 1, grid), "perm", perm, 4);
    const char *ins[2] = { a, grid };
    Onnx__NodeProto *n = node(x, "GridSample", ins, 2, out);
    attr_s(x, n, "mode", "bilinear");
    attr_s(x, n, "padding_mode", nd->pad == PF_PAD_BORDER ? "border" : "zeros");
    attr_i(x, n, "align_corners", 1);
}

/* op ("AveragePool", "MaxPool") over 2 x 2 windows, stride 2, no padding: a -> out. */
static void pool2(ox *x, const char *op, const char *a, const char *out) {
    static const int64_t two[2] = { 2, 2 };
    Onnx__NodeProto *n = node(x, op, &a, 1, out);
    attr_ints(x, n, "kernel_shape", two, 2);
    attr_ints(x, n, "strides", two, 2);
}

/* F.max_pool2d / F.avg_pool2d(x, 3, stride=2, padding=1) (PF_G_MAXPOOL3 / _AVGPOOL3): the
   average counts the padding (count_include_pad=True, torch's default: / 9). */
static void pool3(ox *x, const char *op, const char *a, const char *out) {
    static const int64_t three[2] = { 3, 3 }, two[2] = { 2, 2 }, ones[4] = { 1, 1, 1, 1 };
    Onnx__NodeProto *n = node(x, op, &a, 1, out);
    attr_ints(x, n, "kernel_shape", three, 2);
    attr_ints(x, n, "strides", two, 2);
    attr_ints(x, n, "pads", ones, 4);
    if (op[0] == 'A') attr_i(x, n, "count_include_pad", 1);
}

/* The video ops; 1 when nd is not one of them. */
static int emit_video(ox *x, const pf_gnode *nd, const char *a, const char *b, const char *out) {
    const pf_net *g = x->g;
    int C = g->t[nd->out].c;
    switch (nd->op) {
    case PF_G_SLICE: slice_ch(x, a, nd->c0, nd->c0 + C, out); return 0;
    case PF_G_AFFINE:
        binop(x, "Mul", binop(x, "Sub", a, per_channel(x, nd->sub, C), NULL),
              per_channel(x, nd->mul, C), out);
        return 0;
    case PF_G_RESIZE: video_resize(x, nd, a, out); return 0;
    case PF_G_AVGPOOL2: pool2(x, "AveragePool", a, out); return 0;
    case PF_G_WARP: warp(x, nd, a, b, out); return 0;
    case PF_G_CHSUM: {     /* torch.sum(x, 1, keepdim=True); opset 13+: axes an input */
        static const int64_t ch[1] = { 1 };
        const char *ins[2] = { a, i64(x, ch, 1) };
        attr_i(x, node(x, "ReduceSum", ins, 2, out), "keepdims", 1);
        return 0;
    }
    case PF_G_MAXPOOL3: pool3(x, "MaxPool", a, out); return 0;
    case PF_G_AVGPOOL3: pool3(x, "AveragePool", a, out); return 0;
    case PF_G_ZERO: {
        const int64_t c[1] = { C }, d1[1] = { 1 };
        static const float zero = 0;
        const char *sh =
            concat3(x, shape_of(x, "lq", 0, 1), i64(x, c, 1), tensor_hw(x, nd->out), 0);
        Onnx__NodeProto *n = node(x, "ConstantOfShape", &sh, 1, out);
        Onnx__AttributeProto *v =
            attr(x, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
        float *z = oa(x, sizeof *z);
        if (v && z) {
            *z = zero;
            v->t = tensor(x, "zero", d1, 1, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, z, sizeof *z);
        }
        return 0;
    }
    default: return 1;
    }
}

/* The video input [batch, T, 3, H, W] as the description's [batch, 3 T, H, W]. */
static void video_input(ox *x, const char *out) {
    const int64_t c[1] = { 3 * (int64_t)x->frames };
    const char *sh = concat3(x, shape_of(x, "lq", 0, 1), i64(x, c, 1), x->lq_hw, 0);
    binop(x, "Reshape", "lq", sh, out);
}

/* The description's output [batch, 3 T, 4H, 4W] as [batch, T, 3, 4H, 4W] into "out". */
static void video_output(ox *x, const char *net_out) {
    const int64_t t3[2] = { x->frames, 3 };
    const char *sh = concat3(x, shape_of(x, net_out, 0, 1), i64(x, t3, 2),
                             shape_of(x, net_out, 2, 4), 0);
    binop(x, "Reshape", net_out, sh, "out");
}

/* The node reading tensor t, or -1 when none or several do. */
static int only_reader(const pf_net *g, int t) {
    int k = -1;
    for (int j = 0; j < g->n_node; j++)
        for (int i = 0; i < g->node[j].n_in; i++)
            if (g->node[j].in[i] == t) {
                if (k >= 0) return -1;
                k = j;
            }
    return k;
}

/* Whether tensor t is the output of FSRCNN's sub-pixel conv. */
static int from_sub_conv(const pf_net *g, int t) {
    for (int j = 0; j < g->n_node; j++)
        if (g->node[j].out == t)
            return g->node[j].op == PF_G_CONV && g->node[j].conv == g->sub_conv;
    return 0;
}

static int unsupported(const pf_net *g, int k, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: op '%s' (node %d) has no ONNX mapping (docs/export.md lists "
             "the ops that have one)", g->type, pf_net_op_name(g->node[k].op), k);
    return -1;
}

/* Node k of the description into ONNX nodes writing x->tname[its output]. Returns 0, or -1
   with err for an op without a mapping. */
static int emit(ox *x, int k, char *err, size_t errlen) {
    const pf_net *g = x->g;
    const pf_gnode *nd = &g->node[k];
    const char *out = x->tname[nd->out], *a = nd->n_in ? x->tname[nd->in[0]] : NULL;
    const char *b = nd->n_in > 1 ? x->tname[nd->in[1]] : NULL;
    switch (nd->op) {
    case PF_G_INPUT:
        if (g->use_mean) {
            static const int64_t d4[4] = { 1, 3, 1, 1 };
            const char *m = constant(x, "rgb_mean", d4, 4, g->mean, NULL, 3);
            binop(x, "Mul", binop(x, "Sub", "lq", m, NULL), scalar(x, g->range), out);
        } else if (x->frames) {
            video_input(x, out);
        } else {
            node(x, "Identity", &(const char *){ "lq" }, 1, out);
        }
        return 0;
    case PF_G_BILINEAR_IN: resize(x, "lq", nd->r, "linear", out); return 0;
    case PF_G_BICUBIC_IN: resize(x, "lq", nd->r, "cubic", out); return 0;
    case PF_G_NEAREST: resize(x, a, nd->r, "nearest", out); return 0;
    case PF_G_CONV:
        if (nd->conv == g->sub_conv) {
            int s = only_reader(g, nd->out);
            if (s < 0 || g->node[s].op != PF_G_SHUFFLE || nd->n_in != 1)
                return unsupported(g, k, err, errlen);
            conv_transpose(x, nd, x->tname[g->node[s].out]);   /* the shuffle's output */
        } else {
            conv(x, nd, out);
        }
        return 0;
    case PF_G_PRELU: {
        static const int64_t d2[1] = { 2 }, axes[2] = { 1, 2 };
        const char *ins[2] = { pname(x, nd->param), constant(x, "axes", d2, 1, NULL, axes, 2) };
        const char *slope = fresh(x, "slope");
        node(x, "Unsqueeze", ins, 2, slope);
        binop(x, "PRelu", a, slope, out);
        return 0;
    }
    case PF_G_TANH: node(x, "Tanh", &a, 1, out); return 0;
    case PF_G_SIGMOID: node(x, "Sigmoid", &a, 1, out); return 0;
    case PF_G_ADD: binop(x, "Add", a, times(x, b, nd->scale), out); return 0;
    case PF_G_GAP: node(x, "GlobalAveragePool", &a, 1, out); return 0;
    case PF_G_MUL:         /* ONNX's Mul broadcasts a 1-channel factor too */
    case PF_G_MUL_CH: {
        int direct = nd->n_in < 3 && nd->scale == 1.0f;   /* the product is the output */
        const char *p = times(x, binop(x, "Mul", a, b, direct ? out : NULL), nd->scale);
        if (nd->n_in > 2) binop(x, "Add", x->tname[nd->in[2]], p, out);
        else if (p != out) node(x, "Identity", &p, 1, out);
        return 0;
    }
    case PF_G_CONCAT: {
        const char *ins[PF_G_MAX_IN];
        for (int i = 0; i < nd->n_in; i++) ins[i] = x->tname[nd->in[i]];
        attr_i(x, node(x, "Concat", ins, nd->n_in, out), "axis", 1);
        return 0;
    }
    case PF_G_SHUFFLE:
        if (from_sub_conv(g, nd->in[0])) return 0;     /* written by conv_transpose */
        Onnx__NodeProto *n = node(x, "DepthToSpace", &a, 1, out);
        attr_i(x, n, "blocksize", nd->r);
        attr_s(x, n, "mode", "CRD");
        return 0;
    case PF_G_UNSHUFFLE: unshuffle(x, nd, out); return 0;
    case PF_G_MAXPOOL2: pool2(x, "MaxPool", a, out); return 0;
    case PF_G_RELU: {
        Onnx__NodeProto *r = node(x, nd->alpha == 0.0f ? "Relu" : "LeakyRelu", &a, 1, out);
        if (nd->alpha != 0.0f) attr_f(x, r, "alpha", nd->alpha);
        return 0;
    }
    default: return emit_video(x, nd, a, b, out) ? unsupported(g, k, err, errlen) : 0;
    }
}

/* A float32 value [batch, 3, h, w] (video: [batch, T, 3, h, w]) with symbolic dims. */
static Onnx__ValueInfoProto *value_info(ox *x, const char *name, const char *h, const char *w) {
    Onnx__ValueInfoProto *v = oa(x, sizeof *v);
    Onnx__TypeProto *tp = oa(x, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = oa(x, sizeof *tt);
    Onnx__TensorShapeProto *sh = oa(x, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = oa(x, 5 * sizeof *dims);
    if (!v || !tp || !tt || !sh || !dims) return NULL;
    const char *param[5] = { "batch", NULL, NULL, h, w };
    int64_t value[5] = { 0, x->frames, 3, 0, 0 };
    int nd = x->frames ? 5 : 4, skip = x->frames ? 0 : 1;   /* image: no T */
    for (int i = 0; i < nd; i++) {
        int j = i && skip ? i + 1 : i;
        Onnx__TensorShapeProto__Dimension *d = dims[i] = oa(x, sizeof *d);
        if (!d) return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (param[j]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)param[j];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = value[j];
        }
    }
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)nd;
    sh->dim = dims;
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    onnx__type_proto__init(tp);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    v->type = tp;
    return v;
}

/* The graph: every description node, then the output mean shift; initializers = the
   parameter table. */
static Onnx__GraphProto *graph(ox *x, char *err, size_t errlen) {
    const pf_net *g = x->g;
    for (int t = 0; t < g->n_t; t++) x->tname[t] = ostr(x, "t%d", t);
    if (x->frames) x->lq_hw = shape_of(x, "lq", 3, 5);
    const char *last = g->use_mean || x->frames ? fresh(x, "net_out") : "out";
    x->tname[g->output] = last;
    for (int k = 0; k < g->n_node; k++)
        if (emit(x, k, err, errlen)) return NULL;
    if (g->use_mean) {
        static const int64_t d4[4] = { 1, 3, 1, 1 };
        const char *m = constant(x, "rgb_mean", d4, 4, g->mean, NULL, 3);
        binop(x, "Add", binop(x, "Div", last, scalar(x, g->range), NULL), m, "out");
    }
    if (x->frames) video_output(x, last);
    Onnx__GraphProto *gp = oa(x, sizeof *gp);
    Onnx__TensorProto **init = oa(x, (size_t)(g->n_tensors + 1) * sizeof *init);
    Onnx__ValueInfoProto **in = oa(x, sizeof *in), **out = oa(x, sizeof *out);
    if (!gp || !init || !in || !out) return NULL;
    onnx__graph_proto__init(gp);
    for (int i = 0; i < g->n_tensors; i++) {
        const pf_param_info *p = &g->tensors[i];
        init[i] = tensor(x, p->name, p->shape, p->ndim, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                         x->params + p->offset, p->numel * sizeof(float));
    }
    in[0] = value_info(x, "lq", "height", "width");
    out[0] = value_info(x, "out", "out_height", "out_width");
    gp->name = ostr(x, "pixflow_%s_x%d", g->type, g->scale);
    gp->n_node = x->n_nodes;
    gp->node = (Onnx__NodeProto **)x->nodes;
    gp->n_initializer = (size_t)g->n_tensors;
    gp->initializer = init;
    gp->n_input = 1;
    gp->input = in;
    gp->n_output = 1;
    gp->output = out;
    gp->doc_string = ostr(x, "lq: RGB in [0, 1], NCHW, height and width multiples of %d; "
                          "out: NCHW, (height, width) x %d, nominally [0, 1], not clamped",
                          pf_net_input_multiple(g), g->scale);
    return gp;
}

static Onnx__StringStringEntryProto *meta(ox *x, const char *key, char *value) {
    Onnx__StringStringEntryProto *e = oa(x, sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = (char *)key;
    e->value = value;
    return e;
}

static int pack(ox *x, Onnx__GraphProto *gp, void **buf, size_t *len) {
    Onnx__ModelProto *m = oa(x, sizeof *m);
    Onnx__OperatorSetIdProto *ops = oa(x, sizeof *ops), **opsv = oa(x, sizeof *opsv);
    Onnx__StringStringEntryProto **md = oa(x, 3 * sizeof *md);
    if (!m || !ops || !opsv || !md) return -1;
    onnx__operator_set_id_proto__init(ops);
    ops->domain = (char *)"";
    ops->has_version = 1;
    ops->version = PF_ONNX_OPSET;
    opsv[0] = ops;
    md[0] = meta(x, "pixflow_model", ostr(x, "%s", x->g->type));
    md[1] = meta(x, "scale", ostr(x, "%d", x->g->scale));
    md[2] = meta(x, "input_multiple", ostr(x, "%d", pf_net_input_multiple(x->g)));
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = PF_ONNX_IR_VERSION;
    m->n_opset_import = 1;
    m->opset_import = opsv;
    m->producer_name = (char *)"pixflow";
    m->graph = gp;
    m->n_metadata_props = 3;
    m->metadata_props = md;
    if (x->oom) return -1;
    *len = onnx__model_proto__get_packed_size(m);
    *buf = malloc(*len ? *len : 1);
    if (!*buf) return -1;
    onnx__model_proto__pack(m, *buf);
    return 0;
}

int pf_onnx_export(const pf_net *g, const float *params, void **buf, size_t *len, char *err,
                   size_t errlen) {
    *buf = NULL;
    *len = 0;
    const pf_network *row = pf_network_find(g->type);
    ox x = { .g = g, .params = params, .frames = row && row->video ? pf_net_frames(g) : 0 };
    x.tname = calloc((size_t)g->n_t + 1, sizeof *x.tname);
    int rc = -1;
    err[0] = 0;
    Onnx__GraphProto *gp = x.tname ? graph(&x, err, errlen) : NULL;
    if (gp && !x.oom) rc = pack(&x, gp, buf, len);
    if (rc && !err[0]) snprintf(err, errlen, "%s: out of memory writing the ONNX model", g->type);
    for (size_t i = 0; i < x.n_mem; i++) free(x.mem[i]);
    free(x.mem);
    free(x.nodes);
    free(x.tname);
    return rc;
}
