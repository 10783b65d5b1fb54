/*  dcn_cuda — modulated deformable convolution on the CUDA executor (see dcn_cuda.h). */
#include "nn/cuda/dcn_cuda.h"
#include <stdio.h>
#include <string.h>

int pf_cudcn_init(pf_cudcn *l, const char *name, int n, int cin, int h, int w, int cout, int k,
                  int stride, int pad, int dil, int groups, int dg, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    int ho = stride > 0 ? (h + 2 * pad - dil * (k - 1) - 1) / stride + 1 : 0;
    int wo = stride > 0 ? (w + 2 * pad - dil * (k - 1) - 1) / stride + 1 : 0;
    if (n < 1 || cin < 1 || cout < 1 || k < 1 || stride < 1 || pad < 0 || dil < 1 ||
        groups < 1 || dg < 1 || cin % groups || cout % groups || cin % dg || ho < 1 || wo < 1) {
        snprintf(err, errlen, "%s: deformable convolution of an impossible shape (N %d, %d -> "
                 "%d channels, %d x %d, k %d, stride %d, padding %d, dilation %d, groups %d, "
                 "deform_groups %d)", name, n, cin, cout, h, w, k, stride, pad, dil, groups, dg);
        return -1;
    }
    l->s = (pf_cuda_dcn_shape){ n, cin, h, w, k, stride, pad, dil, dg, ho, wo };
    l->cout = cout;
    l->groups = groups;
    return 0;
}

size_t pf_cudcn_col_floats(const pf_cudcn *l) {
    const pf_cuda_dcn_shape *s = &l->s;
    return (size_t)s->cin * s->k * s->k * s->n * s->ho * s->wo;
}

static int blas_fail(const pf_cudcn *l, const char *what, cublasStatus_t st, char *err,
                     size_t errlen) {
    snprintf(err, errlen, "%s: %s: cuBLAS status %d (%s)", l->name, what, (int)st,
             cublasGetStatusString(st));
    return -1;
}

#define BLAS(what, call)                                                                      \
    do {                                                                                      \
        cublasStatus_t st_ = (call);                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS) return blas_fail(l, what, st_, err, errlen);        \
    } while (0)
#define OPS(call)                                                                             \
    do {                                                                                      \
        if (call) {                                                                           \
            char m_[384];                                                                     \
            snprintf(m_, sizeof m_, "%s", err);                                               \
            snprintf(err, errlen, "%s: %s", l->name, m_);                                     \
            return -1;                                                                        \
        }                                                                                     \
    } while (0)

/* The GEMM sizes: M = C_out / groups rows of weight, K = C_in / groups k k, P = H_out W_out
   pixels of one sample, NP = N P columns. Row-major products as column-major cuBLAS calls:
   row-major C = A B is column-major C^T = B^T A^T. */
typedef struct {
    int M, K, P, NP, G;
} dims;

static dims dims_of(const pf_cudcn *l) {
    const pf_cuda_dcn_shape *s = &l->s;
    dims d = { l->cout / l->groups, s->cin / l->groups * s->k * s->k, s->ho * s->wo, 0,
               l->groups };
    d.NP = s->n * d.P;
    return d;
}

int pf_cudcn_forward(const pf_cudcn *l, cublasHandle_t blas, cudaStream_t stream,
                     const float *weight, const float *bias, const float *x, const float *off,
                     const float *mask, float *out, float *col, char *err, size_t errlen) {
    dims d = dims_of(l);
    const float one = 1.0f, zero = 0.0f;
    OPS(pf_cuda_dcn_columns(col, x, off, mask, &l->s, stream, err, errlen));
    BLAS("cublasSetStream", cublasSetStream(blas, stream));
    for (int n = 0; n < l->s.n; n++)    /* out_n[g] (M x P) = weight[g] (M x K) col_n[g] */
        BLAS("cublasSgemmStridedBatched (forward)",
             cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, d.P, d.M, d.K, &one,
                                       col + (size_t)n * d.P, d.NP, (long long)d.K * d.NP,
                                       weight, d.K, (long long)d.M * d.K, &zero,
                                       out + (size_t)n * l->cout * d.P, d.P,
                                       (long long)d.M * d.P, d.G));
    if (bias)
        OPS(pf_cuda_bias_add(out, bias, l->s.n, l->cout, l->s.ho, l->s.wo, stream, err,
                             errlen));
    return 0;
}

int pf_cudcn_backward(const pf_cudcn *l, cublasHandle_t blas, cudaStream_t stream,
                      const float *weight, float *dweight, float *dbias, const float *dy,
                      const float *x, const float *off, const float *mask, float *dx,
                      float *doff, float *dmask, int acc_x, int acc_off, int acc_mask,
                      float *col, float *dcol, void *scratch, char *err, size_t errlen) {
    dims d = dims_of(l);
    const float one = 1.0f, zero = 0.0f;
    if (dbias)
        OPS(pf_cuda_bias_backward(dbias, dy, l->s.n, l->cout, l->s.ho, l->s.wo, 1, stream, err,
                                  errlen));
    BLAS("cublasSetStream", cublasSetStream(blas, stream));
    if (dweight) {  /* dweight[g] (M x K) += sum over n of dy_n[g] (M x P) col_n[g]^T */
        OPS(pf_cuda_dcn_columns(col, x, off, mask, &l->s, stream, err, errlen));
        for (int n = 0; n < l->s.n; n++)
            BLAS("cublasSgemmStridedBatched (weights)",
                 cublasSgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, d.K, d.M, d.P, &one,
                                           col + (size_t)n * d.P, d.NP, (long long)d.K * d.NP,
                                           dy + (size_t)n * l->cout * d.P, d.P,
                                           (long long)d.M * d.P, &one, dweight, d.K,
                                           (long long)d.M * d.K, d.G));
    }
    if (!dx && !doff && !dmask) return 0;
    for (int n = 0; n < l->s.n; n++)    /* dcol_n[g] (K x P) = weight[g]^T dy_n[g] */
        BLAS("cublasSgemmStridedBatched (columns)",
             cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_T, d.P, d.K, d.M, &one,
                                       dy + (size_t)n * l->cout * d.P, d.P,
                                       (long long)d.M * d.P, weight, d.K, (long long)d.M * d.K,
                                       &zero, dcol + (size_t)n * d.P, d.NP,
                                       (long long)d.K * d.NP, d.G));
    OPS(pf_cuda_dcn_columns_backward(dx, doff, dmask, dcol, x, off, mask, &l->s, acc_x,
                                     acc_off, acc_mask, scratch, stream, err, errlen));
    return 0;
}
