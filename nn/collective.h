/*  collective — the all-reduce and broadcast that data-parallel workers need, behind a C API,
    for both backends: this is the interface and the key/value callbacks every implementation
    bootstraps through (nn/cpu/collective_gloo.cc here, nn/cuda/collective_nccl.h on GPUs).

    The CPU implementation is Gloo (facebookincubator/gloo, Debian's libgloo) over TCP, with a
    full mesh bootstrapped through the coordinator's key/value store (KV_SET / KV_GET): each
    rank publishes its addresses under "<prefix>/..." and reads the others'. The store is reached
    through the two callbacks, so this file knows nothing of ZeroMQ. Every Gloo failure (a peer
    that died, a timeout) comes back as -1 with Gloo's message; nothing throws past this API.
*/
#ifndef PF_COLLECTIVE_H
#define PF_COLLECTIVE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_collective pf_collective;

/* Store `len` bytes under `key`. Returns 0 or -1. */
typedef int (*pf_kv_set_fn)(void *ctx, const char *key, const void *value, size_t len);
/* Look `key` up: returns 1 with *value (malloc'd, caller frees) and *len, 0 when not set yet,
   -1 on failure. */
typedef int (*pf_kv_get_fn)(void *ctx, const char *key, void **value, size_t *len);

/* Join a group of `size` ranks as `rank`, listening on `hostname` (an address the other ranks
   can reach), keys under `prefix`. Blocks until every rank has joined or `timeout_s` passes;
   the same timeout bounds each later operation. Returns NULL with err on failure. */
pf_collective *pf_collective_gloo_new(int rank, int size, const char *hostname,
                                      const char *prefix, pf_kv_set_fn set, pf_kv_get_fn get,
                                      void *kv_ctx, double timeout_s, char *err, size_t errlen);

/* In place: buf[i] = sum over ranks of buf[i]. Returns 0 or -1 with err. */
int pf_collective_allreduce_sum(pf_collective *c, float *buf, size_t n, char *err,
                                size_t errlen);

/* In place: every rank gets root's buf. Returns 0 or -1 with err. */
int pf_collective_broadcast(pf_collective *c, float *buf, size_t n, int root, char *err,
                            size_t errlen);

void pf_collective_destroy(pf_collective **c);

#ifdef __cplusplus
}
#endif
#endif
