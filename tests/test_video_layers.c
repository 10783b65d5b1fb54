/*  test_video_layers — nn/video_layers.h against PyTorch 1.13: flow warp (grid_sample,
    bilinear, align_corners=True, padding zeros and border; flows that leave the image and
    whole-pixel flows), bilinear resize (align_corners True and False, up and down, by size and
    by factor), 2 x 2 average pooling: outputs and the gradients of sum(out * gout) for every
    input, from tests/data/video_ops.safetensors (written by tests/reference/video_ops_ref.py).
    Every case runs in each layout the convolutions may pick (nn/cpu/dnnl_ctx.h: plain NCHW,
    nChw8c, nChw16c, NHWC), each tensor in its own, so the layers are checked on blocked data.
    The per-channel affine map is checked against its formula. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/video_layers.h"
#include "tests/pf_test.h"

static pf_safetensors *REF;

/* A reference tensor (NCHW) with its shape; exits the test when it is missing. */
static const float *ref(const char *cname, const char *what, int64_t shape[4]) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", cname, what);
    int ndim;
    const float *t = pf_safetensors_get(REF, name, &ndim, shape);
    if (!t) {
        fprintf(stderr, "test_video_layers: %s: no tensor %s\n", pf_safetensors_name(REF), name);
        exit(1);
    }
    return t;
}

/* NCHW -> nCHWb (padding channels filled with garbage: the layers must not read them) and
   back. */
static float *to_blk(const float *t, const int64_t s[4], int b) {
    int n = (int)s[0], c = (int)s[1], h = (int)s[2], w = (int)s[3];
    size_t numel = pf_blk_numel(n, c, h, w, b);
    float *o = malloc(numel * sizeof *o);
    for (size_t i = 0; i < numel; i++) o[i] = 1e30f;
    for (int a = 0; a < n; a++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    o[pf_blk_off(a, k, y, x, c, h, w, b)] = t[((a * c + k) * h + y) * w + x];
    return o;
}

static float *zeros_blk(const int64_t s[4], int b) {
    return calloc(pf_blk_numel((int)s[0], (int)s[1], (int)s[2], (int)s[3], b), sizeof(float));
}

/* max |got - want| over the tensor relative to max(1, max |want|); padding channels of an
   output must be 0 (`pad_zero`). */
static double compare(const float *got_blk, const float *want, const int64_t s[4], int b,
                      int pad_zero, int *pad_bad) {
    int n = (int)s[0], c = (int)s[1], h = (int)s[2], w = (int)s[3];
    double worst = 0, scale = 1;
    for (size_t i = 0; i < (size_t)(n * c * h * w); i++)
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    for (int a = 0; a < n; a++)
        for (int k = 0; k < (int)pf_blk_c(c, b); k++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    float g = got_blk[pf_blk_off(a, k, y, x, c, h, w, b)];
                    if (k >= c) {
                        *pad_bad += pad_zero && g != 0;
                        continue;
                    }
                    double d = fabs(g - want[((a * c + k) * h + y) * w + x]) / scale;
                    if (d > worst) worst = d;
                }
    return worst;
}

/* Blocks for an x, flow and out of c channels: the four layouts, each tensor its own. */
static int block(int layout, int c) {
    static const int b[4] = {1, 8, 16, 0};
    return b[layout] ? b[layout] : c;
}

static void check_warp(const char *cname, pf_pad_mode pad) {
    int64_t sx[4], sf[4], so[4];
    const float *x = ref(cname, "x", sx), *flow = ref(cname, "flow", sf);
    const float *out = ref(cname, "out", so), *gout = ref(cname, "gout", so);
    const float *dx = ref(cname, "dx", sx), *dflow = ref(cname, "dflow", sf);
    int n = (int)sx[0], c = (int)sx[1], h = (int)sx[2], w = (int)sx[3];
    for (int lx = 0; lx < 4; lx++) {
        /* the flow and out layouts rotate against x's so different pairs meet */
        int bx = block(lx, c), bf = block((lx + 1) % 4, 2), bo = block((lx + 2) % 4, c);
        float *X = to_blk(x, sx, bx), *Fl = to_blk(flow, sf, bf), *G = to_blk(gout, so, bo);
        float *O = to_blk(out, so, bo), *DX = zeros_blk(sx, bx), *DF = zeros_blk(sf, bf);
        pf_flow_warp_forward(O, X, Fl, n, c, h, w, pad, bo, bx, bf);
        pf_flow_warp_backward(DX, DF, G, X, Fl, n, c, h, w, pad, bo, bx, bf);
        int pad_bad = 0;
        double eo = compare(O, out, so, bo, 1, &pad_bad);
        double ex = compare(DX, dx, sx, bx, 0, &pad_bad);
        double ef = compare(DF, dflow, sf, bf, 0, &pad_bad);
        CHECK(eo < 1e-5 && ex < 1e-5 && ef < 2e-5 && !pad_bad,
              "%s blocks x %d flow %d out %d: out %.2g dx %.2g dflow %.2g (relative), %d "
              "padding channels not zero", cname, bx, bf, bo, eo, ex, ef, pad_bad);
        if (lx == 0)
            printf("  %-16s out %.1e  dx %.1e  dflow %.1e\n", cname, eo, ex, ef);
        free(X), free(Fl), free(G), free(O), free(DX), free(DF);
    }
}

static void check_resize(const char *cname, int ac) {
    int64_t sx[4], so[4];
    const float *x = ref(cname, "x", sx), *out = ref(cname, "out", so);
    const float *gout = ref(cname, "gout", so), *dx = ref(cname, "dx", sx);
    int n = (int)sx[0], c = (int)sx[1];
    for (int l = 0; l < 4; l++) {
        int bi = block(l, c), bo = block((l + 1) % 4, c);
        float *X = to_blk(x, sx, bi), *G = to_blk(gout, so, bo), *O = to_blk(out, so, bo);
        float *DX = zeros_blk(sx, bi);
        pf_resize_bilinear_forward(O, X, n, c, (int)sx[2], (int)sx[3], (int)so[2], (int)so[3],
                                   ac, NULL, bo, bi);
        pf_resize_bilinear_backward(DX, G, n, c, (int)sx[2], (int)sx[3], (int)so[2],
                                    (int)so[3], ac, NULL, bo, bi);
        int pad_bad = 0;
        double eo = compare(O, out, so, bo, 1, &pad_bad), ex = compare(DX, dx, sx, bi, 0, &pad_bad);
        CHECK(eo < 1e-6 && ex < 1e-5 && !pad_bad, "%s blocks %d -> %d: out %.2g dx %.2g, %d "
              "padding channels not zero", cname, bi, bo, eo, ex, pad_bad);
        if (l == 0)
            printf("  %-16s out %.1e  dx %.1e\n", cname, eo, ex);
        free(X), free(G), free(O), free(DX);
    }
}

static void check_pool(void) {
    int64_t sx[4], so[4];
    const float *x = ref("pool", "x", sx), *out = ref("pool", "out", so);
    for (int l = 0; l < 4; l++) {
        int bi = block(l, (int)sx[1]), bo = block((l + 3) % 4, (int)sx[1]);
        float *X = to_blk(x, sx, bi), *O = to_blk(out, so, bo);
        pf_avgpool2_forward(O, X, (int)sx[0], (int)sx[1], (int)sx[2], (int)sx[3], bo, bi);
        int pad_bad = 0;
        double e = compare(O, out, so, bo, 1, &pad_bad);
        CHECK(e < 1e-6 && !pad_bad, "pool blocks %d -> %d: %.2g", bi, bo, e);
        free(X), free(O);
    }
}

/* (x - sub) * mul and its backward, against the formula, through blocked layouts. */
static void check_affine(void) {
    int64_t s[4] = {2, 3, 4, 5};
    float x[120], sub[3] = {0.485f, 0.456f, 0.406f}, mul[3] = {1 / 0.229f, 1 / 0.224f, 1 / 0.225f};
    for (int i = 0; i < 120; i++) x[i] = (float)((i * 37) % 101) / 100.0f;
    float *X = to_blk(x, s, 8), *O = zeros_blk(s, 16), *D = zeros_blk(s, 8);
    pf_affine_ch_forward(O, X, 2, 3, 4, 5, sub, mul, 16, 8);
    pf_affine_ch_backward(D, O, 2, 3, 4, 5, mul, 16, 8);
    int bad = 0;
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 20; i++) {
                float v = x[(a * 3 + k) * 20 + i];
                float o = O[pf_blk_off(a, k, i / 5, i % 5, 3, 4, 5, 16)];
                float d = D[pf_blk_off(a, k, i / 5, i % 5, 3, 4, 5, 8)];
                bad += o != (v - sub[k]) * mul[k] || d != o * mul[k];
            }
    CHECK(bad == 0, "affine per channel: %d wrong", bad);
    free(X), free(O), free(D);
}

int main(void) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/video_ops.safetensors", pf_test_data());
    if (pf_safetensors_load(path, &REF, err, sizeof err)) {
        fprintf(stderr, "test_video_layers: %s\n", err);
        return 1;
    }
    printf("against PyTorch (%s), max difference relative to max(1, |reference|):\n", path);
    check_warp("warp_zeros", PF_PAD_ZEROS);
    check_warp("warp_border", PF_PAD_BORDER);
    check_warp("warp_zeros_int", PF_PAD_ZEROS);
    check_warp("warp_border_int", PF_PAD_BORDER);
    check_warp("warp_flow_only", PF_PAD_BORDER);
    check_resize("resize_ac_x2", 1);
    check_resize("resize_to_size", 0);
    check_resize("resize_down", 0);
    check_resize("resize_x4", 0);
    check_pool();
    check_affine();
    pf_safetensors_free(&REF);
    return pf_test_end("test_video_layers");
}
