/*  dcn — modulated deformable convolution on the CPU (see dcn.h for the formula and sources). */
#include "nn/cpu/dcn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call, what) \
    do { if (pf_dnnl_check((call), l->name, what, err, errlen)) goto fail; } while (0)

int pf_dcn_out_size(int h, int k, int stride, int pad, int dil) {
    return (h + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

void pf_dcn_free(pf_dcn *l) {
    dnnl_primitive_t *p[3] = { &l->fwd, &l->bwdw, &l->bwdd };
    for (int i = 0; i < 3; i++)
        if (*p[i]) dnnl_primitive_destroy(*p[i]);
    free(l->col);
    free(l->y);
    free(l->dcol);
    memset(l, 0, sizeof *l);
}

/* A [G, rows, cols] f32 matrix descriptor with the given strides. */
static dnnl_status_t mat(dnnl_memory_desc_t *md, int64_t g, int64_t r, int64_t c, int64_t sg,
                         int64_t sr, int64_t sc) {
    dnnl_dims_t d = { g, r, c }, s = { sg, sr, sc };
    return dnnl_memory_desc_init_by_strides(md, 3, d, dnnl_f32, s);
}

/* dst = src x wei (oneDNN matmul, batch = the groups) as a primitive. */
static dnnl_status_t make(dnnl_primitive_t *prim, pf_dnnl *ctx, const dnnl_memory_desc_t *src,
                          const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *dst) {
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_matmul_desc_init(&d, src, wei, NULL, dst);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &d, NULL, ctx->engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(prim, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

int pf_dcn_setup(pf_dcn *l, pf_dnnl *ctx, const char *name, pf_dcn_shape s, int training,
                 char *err, size_t errlen) {
    *l = (pf_dcn){ .training = training, .ctx = ctx };
    snprintf(l->name, sizeof l->name, "%s", name);
    s.ho = pf_dcn_out_size(s.h, s.k, s.stride, s.pad, s.dil);
    s.wo = pf_dcn_out_size(s.w, s.k, s.stride, s.pad, s.dil);
    l->s = s;
    int64_t G = s.groups, M = s.cout / s.groups, K = (int64_t)(s.cin / s.groups) * s.k * s.k;
    int64_t NP = (int64_t)s.n * s.ho * s.wo;
    dnnl_memory_desc_t md_dy;
    CK(mat(&l->md_w, G, M, K, M * K, K, 1), "memory_desc");       /* weight [G, M, K] */
    CK(mat(&l->md_col, G, K, NP, K * NP, NP, 1), "memory_desc");  /* columns [G, K, NP] */
    CK(mat(&l->md_y, G, M, NP, M * NP, NP, 1), "memory_desc");    /* product [G, M, NP] */
    CK(mat(&l->md_colt, G, NP, K, K * NP, 1, NP), "memory_desc"); /* columns^T */
    CK(mat(&l->md_wt, G, K, M, M * K, 1, K), "memory_desc");      /* weight^T */
    md_dy = l->md_y;
    CK(make(&l->fwd, ctx, &l->md_w, &l->md_col, &l->md_y), "matmul");
    if (training) {
        CK(make(&l->bwdw, ctx, &md_dy, &l->md_colt, &l->md_w), "matmul (weights)");
        CK(make(&l->bwdd, ctx, &l->md_wt, &md_dy, &l->md_col), "matmul (data)");
    }
    size_t ncol = (size_t)s.cin * s.k * s.k * (size_t)NP;
    l->col = malloc(ncol * sizeof(float) + 1);
    l->y = malloc((size_t)s.cout * (size_t)NP * sizeof(float) + 1);
    if (training) l->dcol = malloc(ncol * sizeof(float) + 1);
    if (!l->col || !l->y || (training && !l->dcol)) {
        snprintf(err, errlen, "%s: out of memory for the columns of a deformable convolution",
                 name);
        goto fail;
    }
    return 0;
fail:
    pf_dcn_free(l);
    return -1;
}

/* dst = a x b under the three descriptors. */
static int run(pf_dcn *l, dnnl_primitive_t prim, const dnnl_memory_desc_t *md[3],
               const float *ptr[3], char *err, size_t errlen) {
    static const int arg[3] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST };
    dnnl_memory_t mem[3] = { NULL, NULL, NULL };
    dnnl_exec_arg_t args[3];
    int rc = -1;
    for (int i = 0; i < 3; i++) {
        CK(dnnl_memory_create(&mem[i], md[i], l->ctx->engine, (void *)ptr[i]), "memory_create");
        args[i] = (dnnl_exec_arg_t){ arg[i], mem[i] };
    }
    CK(dnnl_primitive_execute(prim, l->ctx->stream, 3, args), "primitive_execute");
    CK(dnnl_stream_wait(l->ctx->stream), "stream_wait");
    rc = 0;
fail:
    for (int i = 0; i < 3; i++)
        if (mem[i]) dnnl_memory_destroy(mem[i]);
    return rc;
}

/* One sample position of tap t at output pixel (oy, ox): the offsets of deform group d. */
typedef struct {
    const pf_dcn_shape *s;
    const float *off, *mask;
    int boff, bm;
} pf_dcn_in;

static void position(const pf_dcn_in *in, int n, int d, int t, int oy, int ox, float *py,
                     float *px, float *m) {
    const pf_dcn_shape *s = in->s;
    int kk = s->k * s->k, co = 2 * s->dg * kk;
    int i = t / s->k, j = t % s->k;
    float dy = in->off[pf_blk_off(n, 2 * (d * kk + t), oy, ox, co, s->ho, s->wo, in->boff)];
    float dx = in->off[pf_blk_off(n, 2 * (d * kk + t) + 1, oy, ox, co, s->ho, s->wo, in->boff)];
    *py = (float)(oy * s->stride - s->pad + i * s->dil) + dy;
    *px = (float)(ox * s->stride - s->pad + j * s->dil) + dx;
    *m = in->mask[pf_blk_off(n, d * kk + t, oy, ox, s->dg * kk, s->ho, s->wo, in->bm)];
}

/* The four neighbours of (py, px) in the cell of floor(py), floor(px): their (y, x) and
   bilinear weights, a neighbour outside the image weight 0, and the fractional parts. Returns
   0 (sample and derivatives 0) when py < -1, py >= H, px < -1 or px >= W. torchvision's sample
   is 0 from py <= -1 on: at py = -1 exactly both neighbours inside have weight 0, so that is
   the same value; its coordinate derivative (get_coordinate_weight) has only the neighbours'
   validity, so at py = -1 it is the cell [-1, 0]'s, not 0, and this rule gives it. */
static int corners(float py, float px, int H, int W, int cy[4], int cx[4], float wt[4],
                   float *ly, float *lx) {
    if (py < -1.0f || py >= (float)H || px < -1.0f || px >= (float)W) return 0;
    int y0 = (int)floorf(py), x0 = (int)floorf(px);
    *ly = py - (float)y0;
    *lx = px - (float)x0;
    float hy = 1.0f - *ly, hx = 1.0f - *lx;
    float w[4] = { hy * hx, hy * *lx, *ly * hx, *ly * *lx };
    for (int q = 0; q < 4; q++) {
        cy[q] = y0 + (q >> 1);
        cx[q] = x0 + (q & 1);
        wt[q] = cy[q] >= 0 && cy[q] < H && cx[q] >= 0 && cx[q] < W ? w[q] : 0.0f;
    }
    return 1;
}

/* The columns: row c kk + t, column (n H_out + oy) W_out + ox, = mask * X_c(py, px). */
static void columns(float *col, const float *x, int bx, const pf_dcn_in *in) {
    const pf_dcn_shape *s = in->s;
    int kk = s->k * s->k, rows = s->cin * kk, cpd = s->cin / s->dg;
    size_t P = (size_t)s->ho * s->wo, NP = (size_t)s->n * P;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        int c = r / kk, t = r % kk;
        float *dst = col + (size_t)r * NP;
        for (int n = 0; n < s->n; n++)
            for (int oy = 0; oy < s->ho; oy++)
                for (int ox = 0; ox < s->wo; ox++) {
                    float py, px, m, ly, lx, wt[4], v = 0.0f;
                    int cy[4], cx[4];
                    position(in, n, c / cpd, t, oy, ox, &py, &px, &m);
                    if (corners(py, px, s->h, s->w, cy, cx, wt, &ly, &lx))
                        for (int q = 0; q < 4; q++)
                            if (wt[q] != 0.0f)
                                v += wt[q] * x[pf_blk_off(n, c, cy[q], cx[q], s->cin, s->h,
                                                          s->w, bx)];
                    dst[(size_t)n * P + (size_t)oy * s->wo + ox] = m * v;
                }
    }
}

int pf_dcn_forward(pf_dcn *l, const float *weight, const float *bias, const float *x, int bx,
                   const float *off, int boff, const float *mask, int bm, float *out, int bo,
                   char *err, size_t errlen) {
    const pf_dcn_shape *s = &l->s;
    pf_dcn_in in = { s, off, mask, boff, bm };
    columns(l->col, x, bx, &in);
    const dnnl_memory_desc_t *md[3] = { &l->md_w, &l->md_col, &l->md_y };
    const float *ptr[3] = { weight, l->col, l->y };
    if (run(l, l->fwd, md, ptr, err, errlen)) return -1;
    size_t P = (size_t)s->ho * s->wo, NP = (size_t)s->n * P;
#pragma omp parallel for schedule(static)
    for (int o = 0; o < s->cout; o++)
        for (int n = 0; n < s->n; n++)
            for (int oy = 0; oy < s->ho; oy++)
                for (int ox = 0; ox < s->wo; ox++)
                    out[pf_blk_off(n, o, oy, ox, s->cout, s->ho, s->wo, bo)] =
                        l->y[(size_t)o * NP + (size_t)n * P + (size_t)oy * s->wo + ox] +
                        (bias ? bias[o] : 0.0f);
    return 0;
}

/* dx += the adjoint of the sampling: each (n, c) plane by one thread. */
static void columns_dx(float *dx, int bx, const float *dcol, const pf_dcn_in *in) {
    const pf_dcn_shape *s = in->s;
    int kk = s->k * s->k, cpd = s->cin / s->dg;
    size_t P = (size_t)s->ho * s->wo, NP = (size_t)s->n * P;
#pragma omp parallel for schedule(static)
    for (int nc = 0; nc < s->n * s->cin; nc++) {
        int n = nc / s->cin, c = nc % s->cin;
        for (int t = 0; t < kk; t++) {
            const float *g = dcol + (size_t)(c * kk + t) * NP + (size_t)n * P;
            for (int oy = 0; oy < s->ho; oy++)
                for (int ox = 0; ox < s->wo; ox++) {
                    float py, px, m, ly, lx, wt[4];
                    int cy[4], cx[4];
                    position(in, n, c / cpd, t, oy, ox, &py, &px, &m);
                    float gm = g[(size_t)oy * s->wo + ox] * m;
                    if (gm == 0.0f || !corners(py, px, s->h, s->w, cy, cx, wt, &ly, &lx))
                        continue;
                    for (int q = 0; q < 4; q++)
                        if (wt[q] != 0.0f)
                            dx[pf_blk_off(n, c, cy[q], cx[q], s->cin, s->h, s->w, bx)] +=
                                gm * wt[q];
                }
        }
    }
}

/* d sample / d py and d px (torchvision's get_coordinate_weight) and the sample itself, of
   channel plane xc (read through the layout). */
static float sample_grad(const float *x, int bx, const pf_dcn_shape *s, int n, int c, float py,
                         float px, float *gy, float *gx) {
    float ly, lx, wt[4];
    int cy[4], cx[4];
    *gy = *gx = 0.0f;
    if (!corners(py, px, s->h, s->w, cy, cx, wt, &ly, &lx)) return 0.0f;
    float v[4], val = 0.0f;
    for (int q = 0; q < 4; q++) {
        int in = cy[q] >= 0 && cy[q] < s->h && cx[q] >= 0 && cx[q] < s->w;
        v[q] = in ? x[pf_blk_off(n, c, cy[q], cx[q], s->cin, s->h, s->w, bx)] : 0.0f;
        val += wt[q] * v[q];
    }
    *gy = lx * (v[3] - v[1]) + (1.0f - lx) * (v[2] - v[0]);
    *gx = ly * (v[3] - v[2]) + (1.0f - ly) * (v[1] - v[0]);
    return val;
}

/* doff, dmask += their gradients: each (n, deform group, tap) by one thread, the sum over the
   group's channels in double, in channel order. */
static void columns_doff(float *doff, float *dmask, const float *x, int bx, const float *dcol,
                         const pf_dcn_in *in) {
    const pf_dcn_shape *s = in->s;
    int kk = s->k * s->k, cpd = s->cin / s->dg;
    size_t P = (size_t)s->ho * s->wo, NP = (size_t)s->n * P;
#pragma omp parallel for schedule(static)
    for (int ndt = 0; ndt < s->n * s->dg * kk; ndt++) {
        int n = ndt / (s->dg * kk), d = ndt / kk % s->dg, t = ndt % kk;
        for (int oy = 0; oy < s->ho; oy++)
            for (int ox = 0; ox < s->wo; ox++) {
                float py, px, m;
                position(in, n, d, t, oy, ox, &py, &px, &m);
                double sy = 0, sx = 0, sm = 0;
                for (int c = d * cpd; c < (d + 1) * cpd; c++) {
                    float g = dcol[(size_t)(c * kk + t) * NP + (size_t)n * P +
                                   (size_t)oy * s->wo + ox], gy, gx;
                    float v = sample_grad(x, bx, s, n, c, py, px, &gy, &gx);
                    sm += (double)g * v;
                    sy += (double)g * gy;
                    sx += (double)g * gx;
                }
                int ch = d * kk + t, co = 2 * s->dg * kk;
                if (dmask)
                    dmask[pf_blk_off(n, ch, oy, ox, s->dg * kk, s->ho, s->wo, in->bm)] +=
                        (float)sm;
                if (doff) {
                    doff[pf_blk_off(n, 2 * ch, oy, ox, co, s->ho, s->wo, in->boff)] +=
                        (float)(sy * m);
                    doff[pf_blk_off(n, 2 * ch + 1, oy, ox, co, s->ho, s->wo, in->boff)] +=
                        (float)(sx * m);
                }
            }
    }
}

int pf_dcn_backward(pf_dcn *l, const float *weight, float *dweight, float *dbias,
                    const float *dy, int by, const float *x, int bx, const float *off, int boff,
                    const float *mask, int bm, float *dx, float *doff, float *dmask, char *err,
                    size_t errlen) {
    const pf_dcn_shape *s = &l->s;
    if (!l->training) {
        snprintf(err, errlen, "%s: backward of an inference plan", l->name);
        return -1;
    }
    size_t P = (size_t)s->ho * s->wo, NP = (size_t)s->n * P;
#pragma omp parallel for schedule(static)
    for (int o = 0; o < s->cout; o++) {
        double sum = 0;
        for (int n = 0; n < s->n; n++)
            for (int oy = 0; oy < s->ho; oy++)
                for (int ox = 0; ox < s->wo; ox++) {
                    float g = dy[pf_blk_off(n, o, oy, ox, s->cout, s->ho, s->wo, by)];
                    l->y[(size_t)o * NP + (size_t)n * P + (size_t)oy * s->wo + ox] = g;
                    sum += g;
                }
        if (dbias) dbias[o] = (float)sum;
    }
    if (dweight) {
        const dnnl_memory_desc_t *md[3] = { &l->md_y, &l->md_colt, &l->md_w };
        const float *ptr[3] = { l->y, l->col, dweight };
        if (run(l, l->bwdw, md, ptr, err, errlen)) return -1;
    }
    if (!dx && !doff && !dmask) return 0;
    const dnnl_memory_desc_t *md[3] = { &l->md_wt, &l->md_y, &l->md_col };
    const float *ptr[3] = { weight, l->y, l->dcol };
    if (run(l, l->bwdd, md, ptr, err, errlen)) return -1;
    pf_dcn_in in = { s, off, mask, boff, bm };
    if (dx) columns_dx(dx, bx, l->dcol, &in);
    if (doff || dmask) columns_doff(doff, dmask, x, bx, l->dcol, &in);
    return 0;
}
