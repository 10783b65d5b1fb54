/*  pf_test_hash — the counter hash the PyTorch references share with the C tests
    (tests/reference/basicvsr_ref.py: fnv1a64, mix, hash_units, summary, error): weights and
    data both sides compute, so a reference file holds summaries, not tensors. */
#ifndef PF_TEST_HASH_H
#define PF_TEST_HASH_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nn/param_info.h"

/* FNV-1a 64 of a NUL-terminated string. */
static inline uint64_t pf_hash_name(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* splitmix64's finaliser. */
static inline uint64_t pf_hash_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* u in [0, 1): element j of the stream `base` (hash_units). */
static inline double pf_hash_unit(uint64_t base, uint64_t j) {
    return (double)(pf_hash_mix(base ^ j) >> 40) / (double)(1 << 24);
}

/* The error measure of basicvsr_ref.error for x (n floats) against its reference summary ref
   ([sum, L2 norm, 64 elements at indices mix(hash("idx." name) ^ k) % n]): the largest of
   |norm - ref norm| / ref norm, |sum - ref sum| / (10 ref norm) and each sample's difference
   over ref norm. */
static inline double pf_hash_summary_error(const float *x, size_t n, const char *name,
                                           const float *ref) {
    double s = 0, n2 = 0;
    for (size_t j = 0; j < n; j++) {
        s += x[j];
        n2 += (double)x[j] * x[j];
    }
    double scale = ref[1] > 0 ? ref[1] : 1;
    double e = fmax(fabs(sqrt(n2) - ref[1]) / scale, fabs(s - ref[0]) / (10 * scale));
    char key[160];
    snprintf(key, sizeof key, "idx.%s", name);
    uint64_t base = pf_hash_name(key);
    for (int k = 0; k < 64; k++)
        e = fmax(e, fabs(x[pf_hash_mix(base ^ (uint64_t)k) % n] - ref[2 + k]) / scale);
    return e;
}

/* The video tests' weights (tests/reference/basicvsr_ref.py; test_basicvsrpp): element j of
   tensor NAME (2 u - 1) * bound, u = hash_unit(NAME, j), bound = 1 / sqrt(fan_in) of the
   tensor's weight (a bias follows its 4-d weight), 0.2 for the last bias of each SPyNet
   level (`spynet.*basic_module.8.bias`), so the flows reach pixels. */
static inline void pf_hash_fill_params(const pf_param_info *tensors, int n, float *params) {
    for (int i = 0; i < n; i++) {
        const pf_param_info *t = &tensors[i];
        const pf_param_info *w = t->ndim == 4 ? t : &tensors[i - 1];   /* a bias: its weight */
        double bound = 1.0 / sqrt((double)(w->shape[1] * w->shape[2] * w->shape[3]));
        size_t len = strlen(t->name);
        if (!strncmp(t->name, "spynet.", 7) && len > 19 &&
            !strcmp(t->name + len - 19, "basic_module.8.bias"))
            bound = 0.2;
        uint64_t base = pf_hash_name(t->name);
        for (size_t j = 0; j < t->numel; j++)
            params[t->offset + j] = (float)((2 * pf_hash_unit(base, j) - 1) * bound);
    }
}
#endif
