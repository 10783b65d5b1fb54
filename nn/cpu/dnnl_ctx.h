/*  dnnl_ctx — the oneDNN engine and stream PixFlow's CPU backend runs on, plus the helpers every
    oneDNN user in nn/cpu needs: status checking with a message that names the layer, and the
    activation layouts PixFlow understands.

    Activation layouts. PixFlow keeps activations in one of three layouts, all "nCHWb": the
    channel axis split into blocks of b (b = 1: plain NCHW; b = 8: oneDNN's nChw8c, what AVX2
    kernels prefer; b = 16: nChw16c, AVX-512). Element (n, c, h, w) of an N x C x H x W tensor
    lives at pf_blk_off(); the channel count is padded up to a multiple of b with zeros. Because
    every layer sees the same formula, element-wise layers (ReLU mask, residual add, pixel
    shuffle, loss) work on the blocked data directly, and reorders happen only at the ends.
*/
#ifndef PF_DNNL_CTX_H
#define PF_DNNL_CTX_H
#include <stddef.h>
#include <dnnl.h>

typedef struct {
    dnnl_engine_t engine;       /* CPU engine 0 */
    dnnl_stream_t stream;       /* in-order stream on it */
} pf_dnnl;

/* Create the CPU engine and a stream. Returns 0, or -1 with err. */
int pf_dnnl_init(pf_dnnl *ctx, char *err, size_t errlen);
void pf_dnnl_free(pf_dnnl *ctx);

/* 0 when st == dnnl_success; otherwise writes "<what>: oneDNN <call>: <status>" to err and
   returns -1. */
int pf_dnnl_check(dnnl_status_t st, const char *what, const char *call, char *err,
                  size_t errlen);

/* Memory descriptor of an f32 N x C x H x W tensor in layout block b (1, 8 or 16), or
   format `any` when b < 0. Returns 0 or -1 with err. */
int pf_dnnl_act_md(dnnl_memory_desc_t *md, int n, int c, int h, int w, int b, char *err,
                   size_t errlen);

/* The block b (1, 8 or 16) when md is exactly that nCHWb layout of N x C x H x W, else 0. */
int pf_dnnl_block_of(const dnnl_memory_desc_t *md, int n, int c, int h, int w);

/* Channels rounded up to a multiple of the block. */
static inline int pf_blk_c(int c, int b) { return (c + b - 1) / b * b; }

/* Floats in an N x C x H x W tensor of block b (padding included). */
static inline size_t pf_blk_numel(int n, int c, int h, int w, int b) {
    return (size_t)n * (size_t)pf_blk_c(c, b) * (size_t)h * (size_t)w;
}

/* Offset of element (n, c, h, w) in an nCHWb tensor with C channels and H x W pixels. */
static inline size_t pf_blk_off(int n, int c, int h, int w, int C, int H, int W, int b) {
    size_t cb = (size_t)(C + b - 1) / (size_t)b;
    return ((((size_t)n * cb + (size_t)(c / b)) * (size_t)H + (size_t)h) * (size_t)W +
            (size_t)w) * (size_t)b + (size_t)(c % b);
}
#endif
