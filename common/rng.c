/*  rng — see rng.h. */
#include "common/rng.h"

uint64_t pf_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

pf_rng pf_rng_make(uint64_t a, uint64_t b, uint64_t c) {
    /* Chain the words so (a, b, c) and permutations of them give unrelated keys. */
    pf_rng r = { pf_mix64(pf_mix64(pf_mix64(a) ^ b) ^ c), 0 };
    return r;
}

uint64_t pf_rng_u64(pf_rng *r) {
    return pf_mix64(r->key ^ pf_mix64(r->counter++));
}

uint32_t pf_rng_below(pf_rng *r, uint32_t n) {
    /* Lemire, "Fast random integer generation in an interval", 2019. */
    uint64_t m = (uint64_t)(uint32_t)pf_rng_u64(r) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)(uint32_t)pf_rng_u64(r) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double pf_rng_uniform(pf_rng *r) {
    return (double)(pf_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

void pf_rng_shuffle(pf_rng *r, uint32_t *idx, uint32_t n) {
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = pf_rng_below(r, i);
        uint32_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}
