/*  collective_nccl — see collective_nccl.h. */
#include "nn/cuda/collective_nccl.h"

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pf_nccl {
    ncclComm_t comm;
    int rank, size, device;
    double timeout_s;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait until the communicator is no longer in progress (init) or `stream` is done (ops),
   watching for asynchronous NCCL errors and the timeout. */
static int watch(pf_nccl *c, cudaStream_t stream, int ops, const char *what, char *err,
                 size_t errlen) {
    double deadline = now_s() + c->timeout_s;
    for (;;) {
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(c->comm, &async);
        if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
            snprintf(err, errlen, "NCCL %s on rank %d: %s", what, c->rank,
                     ncclGetErrorString(r != ncclSuccess ? r : async));
            ncclCommAbort(c->comm);
            c->comm = NULL;
            return -1;
        }
        if (ops) {
            cudaError_t q = cudaStreamQuery(stream);
            if (q == cudaSuccess) return 0;
            if (q != cudaErrorNotReady) {
                snprintf(err, errlen, "NCCL %s on rank %d: cudaStreamQuery: %s", what, c->rank,
                         cudaGetErrorString(q));
                return -1;
            }
        } else if (async == ncclSuccess) {
            return 0;
        }
        if (now_s() > deadline) {
            snprintf(err, errlen, "NCCL %s on rank %d did not finish within %.0f s (a peer is "
                     "gone?); communicator aborted", what, c->rank, c->timeout_s);
            ncclCommAbort(c->comm);
            c->comm = NULL;
            return -1;
        }
        usleep(100);
    }
}

pf_nccl *pf_nccl_new(int rank, int size, int device, const char *prefix, pf_kv_set_fn set,
                     pf_kv_get_fn get, void *kv_ctx, double timeout_s, char *err,
                     size_t errlen) {
    cudaError_t ce = cudaSetDevice(device);
    if (ce != cudaSuccess) {
        snprintf(err, errlen, "cudaSetDevice(%d): %s", device, cudaGetErrorString(ce));
        return NULL;
    }
    char key[128];
    snprintf(key, sizeof key, "%s/id", prefix);
    ncclUniqueId id;
    if (rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) {
            snprintf(err, errlen, "ncclGetUniqueId: %s", ncclGetErrorString(r));
            return NULL;
        }
        if (set(kv_ctx, key, &id, sizeof id) != 0) {
            snprintf(err, errlen, "cannot store the NCCL id under '%s'", key);
            return NULL;
        }
    } else {
        double deadline = now_s() + timeout_s;
        for (;;) {
            void *v = NULL;
            size_t len = 0;
            int rc = get(kv_ctx, key, &v, &len);
            if (rc == 1 && len == sizeof id) {
                memcpy(&id, v, sizeof id);
                free(v);
                break;
            }
            free(v);
            if (rc < 0 || (rc == 1 && len != sizeof id) || now_s() > deadline) {
                snprintf(err, errlen, "rank %d: no NCCL id under '%s' within %.0f s", rank,
                         key, timeout_s);
                return NULL;
            }
            usleep(20000);
        }
    }
    pf_nccl *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->rank = rank;
    c->size = size;
    c->device = device;
    c->timeout_s = timeout_s;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&c->comm, size, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        snprintf(err, errlen, "ncclCommInitRankConfig on rank %d: %s", rank,
                 ncclGetErrorString(r));
        free(c);
        return NULL;
    }
    if (watch(c, NULL, 0, "communicator set-up", err, errlen) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

int pf_nccl_allreduce_mean(pf_nccl *c, float *buf, size_t n, cudaStream_t stream, char *err,
                           size_t errlen) {
    if (!c->comm) {
        snprintf(err, errlen, "NCCL communicator of rank %d was aborted", c->rank);
        return -1;
    }
    ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat, ncclAvg, c->comm, stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        snprintf(err, errlen, "ncclAllReduce on rank %d: %s", c->rank, ncclGetErrorString(r));
        return -1;
    }
    return watch(c, stream, 1, "all-reduce", err, errlen);
}

int pf_nccl_broadcast(pf_nccl *c, float *buf, size_t n, int root, cudaStream_t stream,
                      char *err, size_t errlen) {
    if (!c->comm) {
        snprintf(err, errlen, "NCCL communicator of rank %d was aborted", c->rank);
        return -1;
    }
    ncclResult_t r = ncclBroadcast(buf, buf, n, ncclFloat, root, c->comm, stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        snprintf(err, errlen, "ncclBroadcast on rank %d: %s", c->rank, ncclGetErrorString(r));
        return -1;
    }
    return watch(c, stream, 1, "broadcast", err, errlen);
}

void pf_nccl_destroy(pf_nccl **c) {
    if (!*c) return;
    if ((*c)->comm) ncclCommDestroy((*c)->comm);
    free(*c);
    *c = NULL;
}
