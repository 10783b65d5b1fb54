/*  linear_cuda — torch.nn.Linear on the device with cuBLAS (see linear_cuda.h). */
#include "nn/cuda/linear_cuda.h"
#include <stdio.h>
#include "nn/cuda/ops.h"

/* C = op(A) op(B) + (acc ? C : 0), column-major, one SGEMM on stream; `what` names the pass
   in err. 0, or -1 with err. */
static int gemm(cublasHandle_t blas, cudaStream_t stream, const char *name, const char *what,
                cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                const float *A, int lda, const float *B, int ldb, int acc, float *C, int ldc,
                char *err, size_t errlen) {
    const float one = 1.0f, zero = 0.0f;
    const char *call = "cublasSetStream";
    cublasStatus_t bs = cublasSetStream(blas, stream);
    if (bs == CUBLAS_STATUS_SUCCESS) {
        call = "cublasSgemm";
        bs = cublasSgemm(blas, ta, tb, m, n, k, &one, A, lda, B, ldb, acc ? &one : &zero, C,
                         ldc);
    }
    if (bs == CUBLAS_STATUS_SUCCESS) return 0;
    snprintf(err, errlen, "%s: %s (%s): %s", name, call, what, cublasGetStatusString(bs));
    return -1;
}

/* An ops.h call's failure, prefixed with the layer. */
static int op_fail(const char *name, const char *oe, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", name, oe);
    return -1;
}

int pf_culinear_forward(cublasHandle_t blas, cudaStream_t stream, const char *name, int n,
                        int in, int out, const float *weight, const float *bias,
                        const float *x, float *y, char *err, size_t errlen) {
    char oe[512];
    if (gemm(blas, stream, name, "forward", CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, weight, in,
             x, in, 0, y, out, err, errlen))
        return -1;
    if (pf_cuda_bias_add(y, bias, n, out, 1, 1, stream, oe, sizeof oe))
        return op_fail(name, oe, err, errlen);
    return 0;
}

int pf_culinear_backward(cublasHandle_t blas, cudaStream_t stream, const char *name, int n,
                         int in, int out, const float *weight, const float *x,
                         const float *dy, float *dweight, float *dbias, float *dx, int acc,
                         char *err, size_t errlen) {
    char oe[512];
    if (dweight && gemm(blas, stream, name, "backward weights", CUBLAS_OP_N, CUBLAS_OP_T, in,
                        out, n, x, in, dy, out, 0, dweight, in, err, errlen))
        return -1;
    if (dbias && pf_cuda_bias_backward(dbias, dy, n, out, 1, 1, 0, stream, oe, sizeof oe))
        return op_fail(name, oe, err, errlen);
    if (dx && gemm(blas, stream, name, "backward data", CUBLAS_OP_N, CUBLAS_OP_N, in, n, out,
                   weight, in, dy, out, acc, dx, in, err, errlen))
        return -1;
    return 0;
}
