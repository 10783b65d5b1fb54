/*  dnnl_ctx — the oneDNN engine and stream PixFlow's CPU backend runs on, plus the helpers every
    oneDNN user in nn/cpu needs: status checking with a message that names the layer, and the
    activation layouts PixFlow understands.

    Activation layouts. PixFlow keeps an activation in one of the "nCHWb" layouts: the
    channel axis split into blocks of b, element (n, c, h, w) of an N x C x H x W tensor at
    pf_blk_off(), the channel count padded up to a multiple of b with zeros. Four of them are
    oneDNN's: b = 1 is plain NCHW (nchw), b = 8 nChw8c (what AVX2 kernels prefer), b = 16
    nChw16c (AVX-512's direct and Winograd kernels), and b = C is NHWC (nhwc: one block holding
    every channel, no padding; AVX-512's brgconv inference kernels). A tensor's b is therefore
    1, 8, 16 or its own channel count, and pf_blk_carry() says which b the "same" layout has
    for a tensor of another width. Because every layer sees the same formula, element-wise
    layers (ReLU mask, residual add, pixel shuffle, loss) work on the layout directly, and
    nothing is reordered between layers.
*/
#ifndef PF_DNNL_CTX_H
#define PF_DNNL_CTX_H
#include <stddef.h>
#include <dnnl.h>
#include "nn/precision.h"

/* How the convolutions on an engine choose their algorithm (config key `conv_algorithm`). */
typedef enum {
    PF_CONV_AUTO,       /* Winograd F(4x4, 3x3) where oneDNN has a JIT kernel for it (3x3,
                           stride 1; AVX-512 in oneDNN 2.6) and it pays, direct elsewhere:
                           see conv_dnnl.h */
    PF_CONV_DIRECT,     /* direct convolution everywhere */
    PF_CONV_WINOGRAD,   /* Winograd wherever oneDNN offers it, direct elsewhere */
} pf_conv_algo;

/* Activation layouts a caller can force on every tensor (tests and diagnosis: they exercise
   layouts this machine's oneDNN would not pick). The value is the block for 1, 8 and 16;
   PF_LAYOUT_NHWC stands for b = C. */
typedef enum {
    PF_LAYOUT_ANY = 0,          /* as oneDNN chooses (the default) */
    PF_LAYOUT_NCHW = 1,
    PF_LAYOUT_NCHW8C = 8,
    PF_LAYOUT_NCHW16C = 16,
    PF_LAYOUT_NHWC = -2,
} pf_layout;

/* The arithmetic of an engine's convolutions (nn/precision.h: PF_PREC_BF16 is
   torch.autocast("cpu", dtype=torch.bfloat16) for convolutions). oneDNN 2.6 runs it on its avx512_core_bf16 (AVX512_BF16: AMD Zen 4 / 5, Intel Cooper
   Lake) and avx512_core_amx (Intel Sapphire Rapids and later) kernels; it has no bf16
   Winograd, so bf16 convolutions are always direct. */

typedef struct {
    dnnl_engine_t engine;       /* CPU engine 0 */
    dnnl_stream_t stream;       /* in-order stream on it */
    pf_conv_algo conv_algo;     /* algorithm rule of its convolutions (PF_CONV_AUTO) */
    pf_layout force_layout;     /* PF_LAYOUT_ANY, or the layout of every activation */
    pf_precision prec_train;    /* convolutions set up for training (PF_PREC_FP32) */
    pf_precision prec_infer;    /* convolutions set up for inference (PF_PREC_FP32) */
    /* bf16 convolutions' scratch: their input and their output gradient rounded to bf16
       (one layer runs at a time), grown by pf_dnnl_scratch as layers are set up */
    void *bf16_src, *bf16_dst;
    size_t bf16_src_len, bf16_dst_len;
} pf_dnnl;

/* Grow the scratch *buf (of *len bytes; the engine's bf16_src or bf16_dst) to at least bytes,
   64-byte aligned. Layers set their memory handles on it at every call, so growing it after
   they were built is safe. 0, or -1 with err naming `what`. */
int pf_dnnl_scratch(void **buf, size_t *len, size_t bytes, const char *what, char *err,
                    size_t errlen);


/* The bf16 unit oneDNN would use on this CPU, as oneDNN's effective ISA says (so it honours
   ONEDNN_MAX_CPU_ISA): "avx512_core_amx" (AMX tiles), "avx512_core_bf16" (AVX512_BF16), or
   NULL when there is none (the CPU lacks it or the ISA is capped below it). isa_out (NULL:
   not wanted) gets oneDNN's effective ISA name in any case, e.g. "avx512_core" or "avx2". */
const char *pf_dnnl_bf16_isa(char *isa_out, size_t isa_len);

/* Set the engine's training and inference precisions. PF_PREC_BF16 on a CPU without a bf16
   unit (pf_dnnl_bf16_isa NULL) is refused, never emulated: -1 with err "<what>: bf16 needs a
   CPU with AVX512_BF16 or AMX; oneDNN's ISA here is <isa> (no bf16 unit): use fp32", and
   nothing changes. Call before any convolution is set up (pf_model_set_precision does it for
   a model). 0, or -1 with err. */
int pf_dnnl_set_precision(pf_dnnl *ctx, pf_precision train, pf_precision infer,
                          const char *what, char *err, size_t errlen);

/* The block of layout l for a tensor of c channels (l != PF_LAYOUT_ANY). */
static inline int pf_layout_block(pf_layout l, int c) { return l == PF_LAYOUT_NHWC ? c : (int)l; }

/* Create the CPU engine and a stream (conv_algo PF_CONV_AUTO, no forced layout). Returns 0,
   or -1 with err. */
int pf_dnnl_init(pf_dnnl *ctx, char *err, size_t errlen);
void pf_dnnl_free(pf_dnnl *ctx);

/* 0 when st == dnnl_success; otherwise writes "<what>: oneDNN <call>: <status>" to err and
   returns -1. */
int pf_dnnl_check(dnnl_status_t st, const char *what, const char *call, char *err,
                  size_t errlen);

/* Memory descriptor of an f32 N x C x H x W tensor in layout block b (1, 8, 16, or C for
   NHWC), or format `any` when b < 0. Any other b is an error. Returns 0 or -1 with err. */
int pf_dnnl_act_md(dnnl_memory_desc_t *md, int n, int c, int h, int w, int b, char *err,
                   size_t errlen);

/* The block b when md is exactly one of the four layouts above for N x C x H x W (1, 8, 16,
   or C for NHWC), else 0. Where two of them are the same memory (NHWC and nChw16c at C = 16,
   NCHW and NHWC of a 1 x 1 map) and one is `prefer` (a block, or -1 for none), that one. */
int pf_dnnl_block_of(const dnnl_memory_desc_t *md, int n, int c, int h, int w, int prefer);

/* An activation layout conversion: N x C x H x W floats from block `from` to block `to` (a
   oneDNN reorder, which zeroes the destination's padding channels). */
typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t m_from, m_to;     /* handles set per call */
    pf_dnnl *ctx;
} pf_reorder;

/* Build it; 0, or -1 with err naming `what`. */
int pf_reorder_init(pf_reorder *r, pf_dnnl *ctx, const char *what, int n, int c, int h, int w,
                    int from, int to, char *err, size_t errlen);
/* to = from in the other layout; 0 or -1 with err. */
int pf_reorder_run(pf_reorder *r, const float *from, float *to, char *err, size_t errlen);
void pf_reorder_free(pf_reorder *r);

/* The block a tensor of c_to channels has in the layout that block b has for c_from channels:
   b itself for nchw, nChw8c and nChw16c; c_to for NHWC (b == c_from, other than 1, 8, 16).
   Used where a layer's output keeps its input's layout but not its width (pixel shuffle,
   concatenation). */
static inline int pf_blk_carry(int b, int c_from, int c_to) {
    return (b == c_from && b != 1 && b != 8 && b != 16) ? c_to : b;
}

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
