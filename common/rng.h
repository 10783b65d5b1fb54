/*  rng — counter-based random numbers: every draw is a pure function of (key, counter), so a
    value depends on what it is for, never on how many draws happened elsewhere before it.
    The sampler keys a stream by (seed, epoch), each sample's augmentation by
    (seed, epoch, sample index), weight init by (seed, tensor index).

    Mixing function: SplitMix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom
    number generators", OOPSLA 2014), applied to key ^ mix(counter); keys are combined by
    chaining the mix. Not cryptographic; statistically fine for shuffling and augmentation.
*/
#ifndef PF_RNG_H
#define PF_RNG_H
#include <stdint.h>

typedef struct {
    uint64_t key;       /* identifies the stream */
    uint64_t counter;   /* draws taken so far */
} pf_rng;

/* SplitMix64 finaliser: a bijective 64-bit mix. */
uint64_t pf_mix64(uint64_t x);

/* A stream keyed by up to three words (pass 0 for unused ones); counter starts at 0. */
pf_rng pf_rng_make(uint64_t a, uint64_t b, uint64_t c);

uint64_t pf_rng_u64(pf_rng *r);
/* Uniform integer in [0, n), n >= 1, without modulo bias (Lemire's multiply-shift with
   rejection). */
uint32_t pf_rng_below(pf_rng *r, uint32_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double pf_rng_uniform(pf_rng *r);

/* Fisher-Yates shuffle of idx[0..n) with draws from r. */
void pf_rng_shuffle(pf_rng *r, uint32_t *idx, uint32_t n);
#endif
