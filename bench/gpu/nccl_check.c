/*  nccl_check — the NCCL collective (nn/cuda/collective_nccl.c) on one GPU: a one-rank group
    bootstrapped through an in-process key/value store; the all-reduce mean of a buffer must
    leave it unchanged and a broadcast from rank 0 too, and the watchdog must report success.
    Exit 0 pass, 1 fail, 77 no CUDA device. Several ranks need several GPUs (or hosts): that is
    exercised by a data-parallel training run, not here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/collective_nccl.h"

static char kv_key[128];
static void *kv_val;
static size_t kv_len;

static int kv_set(void *ctx, const char *key, const void *value, size_t len) {
    (void)ctx;
    snprintf(kv_key, sizeof kv_key, "%s", key);
    free(kv_val);
    kv_val = malloc(len);
    memcpy(kv_val, value, len);
    kv_len = len;
    return 0;
}

static int kv_get(void *ctx, const char *key, void **value, size_t *len) {
    (void)ctx;
    if (strcmp(key, kv_key) != 0) return 0;
    *value = malloc(kv_len);
    memcpy(*value, kv_val, kv_len);
    *len = kv_len;
    return 1;
}

int main(void) {
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count == 0) {
        printf("no CUDA device: %s\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "none");
        return 77;
    }
    char err[512];
    pf_nccl *c = pf_nccl_new(0, 1, 0, "check", kv_set, kv_get, NULL, 30.0, err, sizeof err);
    if (!c) {
        printf("nccl set-up FAIL: %s\n", err);
        return 1;
    }
    enum { N = 1 << 20 };
    float *h = malloc(sizeof(float) * N), *back = malloc(sizeof(float) * N), *d = NULL;
    for (int i = 0; i < N; i++) h[i] = (float)i * 0.5f - 7.0f;
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMalloc((void **)&d, sizeof(float) * N);
    cudaMemcpy(d, h, sizeof(float) * N, cudaMemcpyHostToDevice);
    int fails = 0;
    if (pf_nccl_allreduce_mean(c, d, N, s, err, sizeof err) != 0) {
        printf("nccl all-reduce FAIL: %s\n", err);
        fails++;
    }
    if (pf_nccl_broadcast(c, d, N, 0, s, err, sizeof err) != 0) {
        printf("nccl broadcast FAIL: %s\n", err);
        fails++;
    }
    cudaMemcpy(back, d, sizeof(float) * N, cudaMemcpyDeviceToHost);
    int diff = memcmp(h, back, sizeof(float) * N) != 0;
    printf("nccl one-rank all-reduce mean + broadcast of %d floats: %s\n", N,
           diff ? "FAIL (buffer changed)" : "PASS");
    pf_nccl_destroy(&c);
    cudaFree(d);
    free(h);
    free(back);
    return fails || diff ? 1 : 0;
}
