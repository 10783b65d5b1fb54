/*  pf_test_draws — checks on many seeded random draws (tests/test_blur_kernel.c,
    tests/test_realesrgan_ops.c): a range reached near both ends, a share near its
    probability. Bounds are set so that a correct draw fails with a negligible probability;
    the keys are fixed, so a run gives the same numbers every time (printed). Needs
    tests/pf_test.h first.
*/
#ifndef PF_TEST_DRAWS_H
#define PF_TEST_DRAWS_H
#include <math.h>
#include <stdio.h>

/* Min and max of a sample. */
typedef struct { double lo, hi; int n; } pf_span;

static inline void pf_span_add(pf_span *s, double v) {
    if (!s->n || v < s->lo) s->lo = v;
    if (!s->n || v > s->hi) s->hi = v;
    s->n++;
}

/* The draws over [lo, hi) reach near both ends: n uniform draws miss the outer 1% of the
   range at one end with probability 0.99^n (e^-20 at n = 2000, the least accepted), so a
   correct draw passes and a range cut short or shifted by more than 1% fails. */
static inline void pf_check_span(const char *what, const pf_span *s, double lo, double hi) {
    double tol = 0.01 * (hi - lo);
    printf("  %-28s %6d draws in [%.6f, %.6f], range [%.6f, %.6f)\n", what, s->n, s->lo, s->hi,
           lo, hi);
    CHECK(s->n >= 2000 && s->lo >= lo && s->lo - lo < tol && s->hi <= hi && hi - s->hi < tol,
          "%s: %d draws span [%.6f, %.6f], want near [%.6f, %.6f) (within %.6f)", what, s->n,
          s->lo, s->hi, lo, hi, tol);
}

/* k of n draws near probability p: within 6 standard deviations (a correct draw fails with
   probability about 2e-9). */
static inline void pf_check_share(const char *what, int k, int n, double p) {
    double got = k / (double)n, tol = 6 * sqrt(p * (1 - p) / n);
    printf("  %-28s %6d of %6d = %.4f, want %.4f +- %.4f\n", what, k, n, got, p, tol);
    CHECK(fabs(got - p) < tol, "%s: %d of %d = %.4f, want %.4f within %.4f", what, k, n, got, p,
          tol);
}
#endif
