/*  decimate — a scalar series (loss, learning rate, it/s, data wait, PSNR by step) cut to a
    given number of buckets for a plot, by min and max per bucket, so that no spike is hidden:
    a line drawn through the output reaches every extreme of the raw series.

    The rule (the same one M4/"min-max" plotting uses, without the per-bucket first/last):
    the n points, in step order, are split into `width` buckets of consecutive indices, bucket
    b holding indices [b*n/width, (b+1)*n/width); each bucket contributes the index of its
    minimum and of its maximum (the first one on ties; once when they are the same index), in
    index order; the first and the last raw points are always kept. NaN values are never a
    bucket's min or max (a bucket of NaN only contributes nothing). When n <= 2 * width every
    point is kept. The output is a subsequence of the input (indices strictly increasing), at
    most 2 * width + 2 points. Used by `pixflow monitor --http` (GET /api/curves,
    cli/monitor_http.c) and to compact a series that reached its memory bound.
*/
#ifndef PF_DECIMATE_H
#define PF_DECIMATE_H
#include <stddef.h>

/* The most points pf_decimate_minmax writes for `width` buckets. */
#define PF_DECIMATE_MAX_OUT(width) (2 * (size_t)(width) + 2)

/* Decimate x[n], y[n] (x the step, y the value; in step order) to `width` (>= 1) buckets into
   out_x, out_y, each of room for PF_DECIMATE_MAX_OUT(width) points. out may be the input
   itself (out_x == x and out_y == y: compaction in place; the k-th point written comes from
   an index >= k that no later read needs), but not overlap it otherwise. Returns the number of points written; 0 when n == 0 or width == 0. */
size_t pf_decimate_minmax(const double *x, const double *y, size_t n, size_t width,
                          double *out_x, double *out_y);
#endif
