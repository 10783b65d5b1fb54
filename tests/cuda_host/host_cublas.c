/*  host_cublas — stand-ins for the cuBLAS calls of nn/cuda/dcn_cuda.c and of graph_cuda.c's
    Linear layers on the host: a naive column-major (strided-batched) SGEMM accumulating in
    double (BLAS's definition, C = alpha op(A) op(B) + beta C, C not read when beta is 0), and
    trivial handles. cuBLAS is a library, not PixFlow's code, so both builds of tests/cuda_host
    use these, as host_cudnn.c stands in for cuDNN; bench/gpu/gpu_check runs the real library
    on a GPU. */
#include <stdlib.h>
#include <cublas_v2.h>

struct cublasContext {
    cudaStream_t stream;
    cublasMath_t mode;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    *handle = calloc(1, sizeof **handle);
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                           : "cuBLAS error (host stand-in)";
}

/* op(M)[i][j] of a column-major matrix with leading dimension ld. */
static double at(const float *m, int ld, cublasOperation_t op, int i, int j) {
    return op == CUBLAS_OP_N ? m[(size_t)j * ld + i] : m[(size_t)i * ld + j];
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batchCount < 0 || ldc < (m > 1 ? m : 1) ||
        (transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) ||
        (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T) ||
        lda < ((transa == CUBLAS_OP_N ? m : k) > 1 ? (transa == CUBLAS_OP_N ? m : k) : 1) ||
        ldb < ((transb == CUBLAS_OP_N ? k : n) > 1 ? (transb == CUBLAS_OP_N ? k : n) : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    for (int b = 0; b < batchCount; b++) {
        const float *a = A + b * strideA, *bb = B + b * strideB;
        float *c = C + b * strideC;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int l = 0; l < k; l++)
                    s += at(a, lda, transa, i, l) * at(bb, ldb, transb, l, j);
                float *o = &c[(size_t)j * ldc + i];
                *o = (float)(*alpha * s + (*beta != 0.0f ? (double)*beta * *o : 0.0));
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* One GEMM: the batched stand-in with a batch of one. */
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc) {
    return cublasSgemmStridedBatched(handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb,
                                     0, beta, C, ldc, 0, 1);
}
