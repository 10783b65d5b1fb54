/*  decimate — min/max per bucket (common/decimate.h says the rule). */
#include "common/decimate.h"

#include <math.h>

size_t pf_decimate_minmax(const double *x, const double *y, size_t n, size_t width,
                          double *out_x, double *out_y) {
    if (n == 0 || width == 0) return 0;
    size_t k = 0;
    if (n <= 2 * width) {
        for (size_t i = 0; i < n; i++, k++) {
            out_x[k] = x[i];
            out_y[k] = y[i];
        }
        return k;
    }
    /* `last` is the index of the last point written (SIZE_MAX: none), so that the first point,
       a bucket's two extremes and the last point are each written once, in index order. */
    size_t last = (size_t)-1;
#define EMIT(i) do { size_t i_ = (i); if (last == (size_t)-1 || i_ > last) { \
        out_x[k] = x[i_]; out_y[k] = y[i_]; k++; last = i_; } } while (0)
    EMIT(0);
    for (size_t b = 0; b < width; b++) {
        /* (b * n) fits: n and width are counts of points held in memory. */
        size_t lo = b * n / width, hi = (b + 1) * n / width;
        size_t imin = (size_t)-1, imax = (size_t)-1;
        for (size_t i = lo; i < hi; i++) {
            if (isnan(y[i])) continue;
            if (imin == (size_t)-1 || y[i] < y[imin]) imin = i;
            if (imax == (size_t)-1 || y[i] > y[imax]) imax = i;
        }
        if (imin == (size_t)-1) continue;
        if (imin < imax) {
            EMIT(imin);
            EMIT(imax);
        } else {
            EMIT(imax);
            EMIT(imin);
        }
    }
    EMIT(n - 1);
#undef EMIT
    return k;
}
