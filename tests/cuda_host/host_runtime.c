/*  host_runtime — the CUDA runtime calls the CUDA backend's host code makes (memory, copies,
    streams), as host calls: "device" memory is host memory, each allocation its own heap block
    (so AddressSanitizer sees an access past its end), every stream is synchronous. Used by both
    builds of tests/cuda_host: with the naive kernels of host_ops.c, and with the real kernels
    of nn/cuda/ops.cu under the emulation of tests/cuda_emu (PF_CUDA_EMU), which supplies its
    own cudaGetLastError / cudaGetErrorString / cudaGetErrorName reporting bad launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>


/* Device memory starts as garbage (cudaMalloc does not zero it): all bits set, a NaN in
   every float, so an op that accumulates where it should overwrite shows. */
cudaError_t cudaMalloc(void **p, size_t b) {
    *p = malloc(b ? b : 4);
    if (*p) memset(*p, 0xff, b ? b : 4);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t b, enum cudaMemcpyKind k) {
    (void)k;
    memmove(d, s, b);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t b, enum cudaMemcpyKind k,
                            cudaStream_t st) {
    (void)k;
    (void)st;
    memmove(d, s, b);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *d, int v, size_t b, cudaStream_t st) {
    (void)st;
    memset(d, v, b);
    return cudaSuccess;
}

/* host_ops.c's build: no launch can fail (tests/cuda_emu/emu.cpp has the real ones) */
#ifndef PF_CUDA_EMU
const char *cudaGetErrorString(cudaError_t e) {
    (void)e;
    return "mock error";
}
cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
const char *cudaGetErrorName(cudaError_t e) {
    (void)e;
    return "cudaErrorMock";
}
#endif

cudaError_t cudaStreamSynchronize(cudaStream_t st) {
    (void)st;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    (void)device;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned int flags) {
    (void)flags;
    *st = (cudaStream_t)0;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t st) {
    (void)st;
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t b) {
    return cudaMalloc(p, b);
}
cudaError_t cudaFreeHost(void *p) {
    return cudaFree(p);
}

/* what bench/gpu/gpu_check asks besides (its build under tests/cuda_emu) */
cudaError_t cudaMemset(void *d, int v, size_t b) {
    memset(d, v, b);
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    *free_bytes = *total = (size_t)1 << 34;     /* no device limit: host memory */
    return cudaSuccess;
}

/* The emulated device's compute capability: 9.0 (an H100's), or "MAJOR.MINOR" from
   PF_HOST_CC, so a test can play an older GPU (pf_cuda_model_set_precision's bf16 refusal). */
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    (void)device;
    int major = 9, minor = 0;
    const char *cc = getenv("PF_HOST_CC");
    if (cc && sscanf(cc, "%d.%d", &major, &minor) != 2) major = 9, minor = 0;
    if (attr == cudaDevAttrComputeCapabilityMajor) *value = major;
    else if (attr == cudaDevAttrComputeCapabilityMinor) *value = minor;
    else return cudaErrorInvalidValue;
    return cudaSuccess;
}
