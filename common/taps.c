/*  taps — see taps.h. One body for both types (ADD_TAPS), cloned for AVX2 where GCC can. */
#include "common/taps.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VEC_CLONES
#endif

#define ADD_TAPS(NAME, T)                                                                   \
    VEC_CLONES void NAME(T *out, const T *const *p, const T *k, int n_taps, size_t run) {   \
        int t = 0;                                                                          \
        for (; t + 4 <= n_taps; t += 4) {                                                   \
            const T *p0 = p[t], *p1 = p[t + 1], *p2 = p[t + 2], *p3 = p[t + 3];             \
            const T k0 = k[t], k1 = k[t + 1], k2 = k[t + 2], k3 = k[t + 3];                 \
            for (size_t i = 0; i < run; i++) {                                              \
                T s = out[i];                                                               \
                s += k0 * p0[i];                                                            \
                s += k1 * p1[i];                                                            \
                s += k2 * p2[i];                                                            \
                s += k3 * p3[i];                                                            \
                out[i] = s;                                                                 \
            }                                                                               \
        }                                                                                   \
        for (; t < n_taps; t++)                                                             \
            for (size_t i = 0; i < run; i++) out[i] += k[t] * p[t][i];                      \
    }

ADD_TAPS(pf_add_taps_f32, float)
ADD_TAPS(pf_add_taps_f64, double)
