/*  conv_cudnn — a 2-D convolution layer on cuDNN's legacy convolution API (by default stride
    1, zero padding k/2 on each side, with bias, as torch.nn.Conv2d(ic, oc, k, padding=k // 2);
    any stride, padding and bias through pf_cuconv_set_geometry):
    forward, backward-data, backward-filter, backward-bias. The GPU counterpart of
    nn/cpu/conv_dnnl.h.

    Tensors are device float32, plain NCHW: src N x ic x H x W, dst N x oc x H x W; weights
    OIHW (oc x ic x k x k) and bias (oc) in the model's flat device buffers, passed per call,
    so the layer owns no parameters. Descriptors and algorithms are chosen ONCE per shape by
    pf_cuconv_setup (cudnnGet*Algorithm_v7 heuristics, or cudnnFind* benchmarks when the
    context asks for it) and cached in the layer; the workspace is the context's, shared by
    every layer and grown at setup to the largest need, so the training step itself allocates
    nothing.

    Maths: fp32 tensors; with allow_tf32 the convolutions may use TF32 tensor cores (cuDNN's
    CUDNN_DEFAULT_MATH on Ampere and later, as PyTorch's allow_tf32 = True), otherwise strict
    FP32 FMA kernels (CUDNN_FMA_MATH). CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION is deliberately not
    used: it lets cuDNN down-convert fp32 data to fp16, which is not TF32.

    bf16 (ctx->bf16 when the layer is set up; torch.autocast("cuda", dtype=torch.bfloat16) for
    a convolution): the layer's API stays fp32, and inside it x and the fp32 master weights are
    cast to bf16 (round to nearest even, pf_cuda_f32_to_bf16), cuDNN convolves bf16 tensors
    with fp32 accumulation (CUDNN_DATA_BFLOAT16 data, CUDNN_DATA_FLOAT compute type, tensor
    cores allowed) and writes bf16, which is cast back to fp32 (pf_cuda_bf16_to_f32); the bias
    and everything after the layer stay fp32. Backward likewise: dy -> bf16, dx / dw bf16 ->
    fp32 (added in fp32 when accumulating). So y, dx and dw carry bf16's 8-bit mantissa (the
    bias gradient and the bias add do not). The casts and scratch are nn/cuda/conv_bf16.c's;
    the weights are cast again by every call that reads them (forward and backward-data), not
    once per step. Needs compute capability 8.0 (pf_cuda_model_set_precision checks it).

    Errors: every function returns 0, or -1 with err naming the layer and the cuDNN/CUDA call.
    Work is queued on the context's stream; nothing synchronises except setup.
*/
#ifndef PF_CONV_CUDNN_H
#define PF_CONV_CUDNN_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-device state shared by the layers: handle, stream, workspace, policy. */
typedef struct {
    cudnnHandle_t handle;       /* bound to stream */
    cudaStream_t stream;        /* where every layer's work is queued (not owned) */
    void *workspace;            /* shared by all layers; one layer runs at a time per stream */
    size_t workspace_bytes;     /* its size */
    size_t workspace_limit;     /* largest workspace an algorithm may ask for (bytes) */
    int allow_tf32;             /* convolutions may use TF32 tensor cores */
    int deterministic;          /* only algorithms cuDNN reports as deterministic */
    int benchmark;              /* choose algorithms by timing them (cudnnFind*) */
    int bf16;                   /* layers set up from now on convolve in bf16 (see above) */
} pf_cudnn;

/* Create the cuDNN handle on the current device, bound to stream (0 = default stream).
   workspace_limit defaults to 1 GiB; flags as in the struct. Returns NULL with err. */
pf_cudnn *pf_cudnn_new(cudaStream_t stream, int allow_tf32, int deterministic, int benchmark,
                       char *err, size_t errlen);
/* Destroy the handle and free the workspace; nulls *self. */
void pf_cudnn_destroy(pf_cudnn **self);

/* Make the shared workspace at least `bytes` large (synchronises the stream before freeing
   the old one). Returns 0 or -1 with err. */
int pf_cudnn_reserve(pf_cudnn *ctx, size_t bytes, char *err, size_t errlen);

typedef struct {
    /* what the layer is */
    char name[96];                          /* for messages, e.g. "body.0.conv1" */
    int ic, oc, k;                          /* channels in / out, square kernel size */
    int stride, pad, has_bias;              /* 1, k / 2, 1 unless pf_cuconv_set_geometry */
    /* what it is built for */
    int n, h, w;                            /* 0 when not built */
    int training;                           /* backward algorithms chosen too */
    pf_cudnn *ctx;                          /* not owned */
    cudnnTensorDescriptor_t src_desc;       /* N x ic x H x W */
    cudnnTensorDescriptor_t dst_desc;       /* N x oc x oh x ow (H x W at stride 1, pad k/2) */
    cudnnTensorDescriptor_t bias_desc;      /* 1 x oc x 1 x 1 */
    cudnnFilterDescriptor_t w_desc;         /* oc x ic x k x k */
    cudnnConvolutionDescriptor_t fwd_conv;  /* one per direction: each has the math type */
    cudnnConvolutionDescriptor_t bwdd_conv; /*   of the algorithm chosen for it */
    cudnnConvolutionDescriptor_t bwdf_conv;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdDataAlgo_t bwdd_algo;
    cudnnConvolutionBwdFilterAlgo_t bwdf_algo;
    size_t fwd_ws, bwdd_ws, bwdf_ws;        /* workspace bytes each algorithm needs */
    /* bf16 mode (ctx->bf16 at setup): src / dst / w descriptors are CUDNN_DATA_BFLOAT16 */
    int bf16;                               /* built for bf16 */
    cudnnTensorDescriptor_t out_desc;       /* fp32 N x oc x oh x ow: the bias ops' */
    uint16_t *xb, *yb, *wb;                 /* device bf16 scratch: x or dx, y or dy, w or dw */
} pf_cuconv;

/* Describe the layer (stride 1, zero padding k / 2, with bias; k odd); builds nothing. */
void pf_cuconv_init(pf_cuconv *c, const char *name, int ic, int oc, int k);
/* Stride (>= 1), zero padding on each side (0 <= pad < k, any k >= 1) and whether the layer
   has a bias (torch.nn.Conv2d's stride, padding, bias; BasicSR's UNetDiscriminatorSN and
   VGGStyleDiscriminator use k 4 s 2 p 1 bias=False); call before pf_cuconv_setup. The output
   is oh = floor((H + 2 pad - k) / stride) + 1 high, likewise wide (torch's rule). Without a
   bias, forward adds none and pf_cuconv_backward_bias must not be called. As nn/cpu's
   pf_conv_set_geometry. Inline: tests/cuda_host's stand-in layer shares it. */
static inline void pf_cuconv_set_geometry(pf_cuconv *c, int stride, int pad, int has_bias) {
    c->stride = stride;
    c->pad = pad;
    c->has_bias = has_bias;
}

/* Build descriptors and choose algorithms for an N x ic x H x W input (keeps them when the
   shape and mode are unchanged), and grow the context's workspace. training: choose the
   backward algorithms too. Returns 0, or -1 with err naming the layer. */
int pf_cuconv_setup(pf_cuconv *c, pf_cudnn *ctx, int n, int h, int w, int training, char *err,
                    size_t errlen);

/* dst (N x oc x oh x ow) = conv(src, w) + bias (bias NULL or no has_bias: none). */
int pf_cuconv_forward(pf_cuconv *c, const float *src, const float *w, const float *bias,
                      float *dst, char *err, size_t errlen);

/* diff_src = d loss / d src from diff_dst; accumulate = 0 overwrites, 1 adds to diff_src
   (cuDNN's beta). */
int pf_cuconv_backward_data(pf_cuconv *c, const float *w, const float *diff_dst,
                            float *diff_src, int accumulate, char *err, size_t errlen);

/* dw (OIHW) = d loss / d w; accumulate = 0 overwrites, 1 adds to dw. */
int pf_cuconv_backward_filter(pf_cuconv *c, const float *src, const float *diff_dst, float *dw,
                              int accumulate, char *err, size_t errlen);

/* db (oc) = sum of diff_dst over N, H, W; accumulate as above. */
int pf_cuconv_backward_bias(pf_cuconv *c, const float *diff_dst, float *db, int accumulate,
                            char *err, size_t errlen);

/* Human-readable algorithm choice, e.g. "fwd 1 (ws 0 B) bwdd 1 (...) bwdf 1 (...)". */
void pf_cuconv_describe(const pf_cuconv *c, char *buf, size_t buflen);

void pf_cuconv_free(pf_cuconv *c);

/* ---- bf16 internals: nn/cuda/conv_bf16.c, shared by conv_cudnn.c and tests/cuda_host's
   stand-in layer (host_cudnn.c), which each bring the raw bf16 convolutions below ---- */

/* Element counts of src (N ic H W), dst (N oc oh ow) and w (oc ic k k) for the built shape. */
void pf_cuconv_counts(const pf_cuconv *c, size_t *nx, size_t *ny, size_t *nw);
/* (Re)allocate the layer's bf16 scratch for its built shape (c->n ... set), or free it when
   c->bf16 is 0. 0, or -1 with err naming the layer. */
int pf_cuconv_bf16_scratch(pf_cuconv *c, char *err, size_t errlen);
void pf_cuconv_bf16_free(pf_cuconv *c);
/* The fp32 API of a bf16 layer: cast, raw convolution, cast back (bias: pf_cuda_bias_add in
   fp32). Same contracts as pf_cuconv_forward / _backward_data / _backward_filter. */
int pf_cuconv_bf16_forward(pf_cuconv *c, const float *src, const float *w, const float *bias,
                           float *dst, char *err, size_t errlen);
int pf_cuconv_bf16_backward_data(pf_cuconv *c, const float *w, const float *diff_dst,
                                 float *diff_src, int accumulate, char *err, size_t errlen);
int pf_cuconv_bf16_backward_filter(pf_cuconv *c, const float *src, const float *diff_dst,
                                   float *dw, int accumulate, char *err, size_t errlen);
/* Raw bf16 convolutions (bit patterns; no bias, overwrite): y = conv(x, w), dx from dy and w,
   dw from x and dy, fp32 accumulation, bf16 result rounded to nearest even. */
int pf_cuconv_raw_forward(pf_cuconv *c, const uint16_t *x, const uint16_t *w, uint16_t *y,
                          char *err, size_t errlen);
int pf_cuconv_raw_backward_data(pf_cuconv *c, const uint16_t *w, const uint16_t *dy,
                                uint16_t *dx, char *err, size_t errlen);
int pf_cuconv_raw_backward_filter(pf_cuconv *c, const uint16_t *x, const uint16_t *dy,
                                  uint16_t *dw, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
