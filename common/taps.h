/*  taps — the inner loop of the separable and 2-D filters of the Real-ESRGAN degradations
    (common/blur_kernel.c's blur, common/realesrgan_ops.c's USM): a row of outputs gains a list
    of weighted input rows, out[i] += k[t] * p[t][i], t in order.

    Four taps share a pass over the row, each added in turn to a sum held in a register: the
    same operations in the same order as one pass per tap (so the same bits), with a quarter of
    the output row's loads and stores (2x faster for a 21 x 21 blur on 256 x 256 x 3). On
    x86-64 Linux with GCC each function is built twice, for the baseline (SSE2) and AVX2, and
    the AVX2 one runs where the CPU has it (target_clones); taps.c is compiled without fused
    multiply-add (-ffp-contract=off), so both give the same bits and loaders on different CPUs
    make the same batches.
*/
#ifndef PF_TAPS_H
#define PF_TAPS_H
#include <stddef.h>

/* out[i] += k[t] * p[t][i] for t = 0 .. n_taps - 1 in that order, i < run (float sums). The
   rows p[t] may overlap each other but not out. */
void pf_add_taps_f32(float *out, const float *const *p, const float *k, int n_taps, size_t run);
/* The same in double. */
void pf_add_taps_f64(double *out, const double *const *p, const double *k, int n_taps,
                     size_t run);
#endif
