/*  sampler — which samples go in which batch, as a pure function of (seed, iteration, rank).

    Epoch e visits a permutation of [0, len) drawn by Fisher-Yates from the counter-based
    stream (seed, e, "sampler"). Rank r of W takes the strided share perm[r], perm[r + W], ...
    (torch's DistributedSampler), and batch i of rank r is the share's items
    [i * samples_per_gpu, (i + 1) * samples_per_gpu). Incomplete batches at the end of an epoch
    are dropped (drop_last, as MMagic's and BasicSR's train loaders). Global iteration `it`
    belongs to epoch it / iters_per_epoch. Nothing here depends on loaders or timing, so the
    batches are identical for any number of loaders and after a resume at any iteration.
*/
#ifndef PF_SAMPLER_H
#define PF_SAMPLER_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t seed;
    uint32_t len;               /* samples per epoch (dataset files * repeat) */
    int world_size;             /* ranks W */
    int samples_per_gpu;        /* batch size per rank */
    int64_t iters_per_epoch;    /* floor(len / (W * samples_per_gpu)) >= 1 */
    uint32_t *perm;             /* permutation of the cached epoch */
    int64_t perm_epoch;         /* epoch `perm` belongs to, -1 = none */
} pf_sampler;

/* Returns 0, or -1 with err when one global batch does not fit in an epoch. */
int pf_sampler_init(pf_sampler *s, uint64_t seed, uint32_t len, int world_size,
                    int samples_per_gpu, char *err, size_t errlen);
void pf_sampler_free(pf_sampler *s);

/* Epoch of global iteration `iter`. */
uint32_t pf_sampler_epoch(const pf_sampler *s, int64_t iter);

/* The samples_per_gpu dataset indices of rank `rank` at global iteration `iter` into
   `indices`; returns the epoch. Returns -1 only when out of memory. */
int64_t pf_sampler_batch(pf_sampler *s, int64_t iter, int rank, uint32_t *indices);
#endif
