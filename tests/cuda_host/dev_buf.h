/*  dev_buf — the "device" buffer the tests of this folder start from: cudaMalloc'd, a copy of
    host data, or NaN everywhere (every byte 0xff) so that what an op fails to write shows.
    Header-only (static inline): each test is one translation unit. */
#ifndef PF_TESTS_CUDA_HOST_DEV_BUF_H
#define PF_TESTS_CUDA_HOST_DEV_BUF_H
#include <stddef.h>
#include <cuda_runtime_api.h>

/* bytes of device memory holding h (bytes of host memory), or NaN when h is NULL; NULL when
   cudaMalloc fails. */
static inline void *pf_dev_buf(const void *h, size_t bytes) {
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess) return NULL;
    if (h) cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    else cudaMemset(d, 0xff, bytes);
    return d;
}
#endif
