/*  collective_nccl — all-reduce and broadcast of device buffers between GPU workers with NCCL,
    bootstrapped through the coordinator's key/value store like the Gloo group (rank 0 creates
    the unique id and stores it under "<prefix>/id"; the others poll for it).

    The communicator is non-blocking and every operation is waited for by a watchdog: it polls
    the stream and ncclCommGetAsyncError, and after `timeout_s` aborts the communicator
    (ncclCommAbort) and returns an error naming this rank, so a dead peer ends the job with a
    message instead of a hang. Buffers are float32 on the device; work is queued on `stream`.
*/
#ifndef PF_COLLECTIVE_NCCL_H
#define PF_COLLECTIVE_NCCL_H
#include <stddef.h>

#include <cuda_runtime.h>

#include "nn/collective.h"   /* pf_kv_set_fn, pf_kv_get_fn */

typedef struct pf_nccl pf_nccl;

/* Join `size` ranks as `rank` on CUDA device `device`. Returns NULL with err on failure. */
pf_nccl *pf_nccl_new(int rank, int size, int device, const char *prefix, pf_kv_set_fn set,
                     pf_kv_get_fn get, void *kv_ctx, double timeout_s, char *err,
                     size_t errlen);

/* In place: buf = mean over ranks of buf (ncclAvg), then wait. Returns 0 or -1 with err. */
int pf_nccl_allreduce_mean(pf_nccl *c, float *buf, size_t n, cudaStream_t stream, char *err,
                           size_t errlen);

/* In place: every rank gets root's buf, then wait. Returns 0 or -1 with err. */
int pf_nccl_broadcast(pf_nccl *c, float *buf, size_t n, int root, cudaStream_t stream,
                      char *err, size_t errlen);

void pf_nccl_destroy(pf_nccl **c);
#endif
