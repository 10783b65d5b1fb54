/*  sampler — see sampler.h. */
#include "coordinator/sampler.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/rng.h"

/* Stream tag that keeps the sampler's draws apart from augmentation draws of the same epoch. */
#define PF_SAMPLER_STREAM 0x73616d706c6572ULL /* "sampler" */

int pf_sampler_init(pf_sampler *s, uint64_t seed, uint32_t len, int world_size,
                    int samples_per_gpu, char *err, size_t errlen) {
    s->seed = seed;
    s->len = len;
    s->world_size = world_size;
    s->samples_per_gpu = samples_per_gpu;
    s->perm = NULL;
    s->perm_epoch = -1;
    uint64_t global = (uint64_t)world_size * (uint64_t)samples_per_gpu;
    s->iters_per_epoch = global ? (int64_t)(len / global) : 0;
    if (s->iters_per_epoch < 1) {
        snprintf(err, errlen,
                 "data.train: %u samples per epoch are fewer than one global batch of %llu "
                 "(%d workers x samples_per_gpu %d); raise data.train.repeat",
                 len, (unsigned long long)global, world_size, samples_per_gpu);
        return -1;
    }
    return 0;
}

void pf_sampler_free(pf_sampler *s) {
    free(s->perm);
    s->perm = NULL;
    s->perm_epoch = -1;
}

uint32_t pf_sampler_epoch(const pf_sampler *s, int64_t iter) {
    return (uint32_t)(iter / s->iters_per_epoch);
}

int64_t pf_sampler_batch(pf_sampler *s, int64_t iter, int rank, uint32_t *indices) {
    int64_t epoch = iter / s->iters_per_epoch;
    int64_t i = iter % s->iters_per_epoch;
    if (s->perm_epoch != epoch) {
        if (!s->perm && !(s->perm = malloc(sizeof *s->perm * (size_t)s->len))) return -1;
        for (uint32_t k = 0; k < s->len; k++) s->perm[k] = k;
        pf_rng r = pf_rng_make(s->seed, (uint64_t)epoch, PF_SAMPLER_STREAM);
        pf_rng_shuffle(&r, s->perm, s->len);
        s->perm_epoch = epoch;
    }
    for (int j = 0; j < s->samples_per_gpu; j++) {
        uint64_t pos = ((uint64_t)i * s->samples_per_gpu + j) * s->world_size + rank;
        indices[j] = s->perm[pos];
    }
    return epoch;
}
