/*  decimate: pf_decimate_minmax (common/decimate.h) against a naive reference on a 100 000-point
    synthetic loss curve (a decaying exponential with noise from a fixed LCG) with 50 planted
    spikes up and 50 down (and 10 NaN):
    - the output is a subsequence of the raw series (each (x, y) is the raw point at index x,
      indices strictly increasing), at most 2 * width + 2 points, first and last raw points kept;
    - for every bucket [b*n/w, (b+1)*n/w), the minimum and the maximum of the raw values in it,
      found by a plain scan here, appear among the output points with x in that bucket;
    - the highest and the lowest spike (the series' extremes) are in the output;
    for widths 1, 7, 333, 1000 and 4096; and a short series (n <= 2 * width) comes back whole.
    A decimation by averaging or by taking every k-th point fails the bucket checks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/decimate.h"
#include "pf_test.h"

#define N 100000
#define SPIKES 50

static double xs[N], ys[N];
static size_t spike_at[2 * SPIKES];

static uint64_t lcg = 12345;
static double uniform(void) {
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

/* Check one width; returns the number of failed checks. */
static void check_width(size_t w) {
    size_t cap = PF_DECIMATE_MAX_OUT(w);
    double *ox = malloc(cap * sizeof *ox), *oy = malloc(cap * sizeof *oy);
    size_t k = pf_decimate_minmax(xs, ys, N, w, ox, oy);
    CHECK(k >= 2 && k <= cap, "width %zu: %zu points (room %zu)", w, k, cap);
    int subseq = 1;
    for (size_t j = 0; j < k; j++) {
        size_t i = (size_t)ox[j];
        if (ox[j] != (double)i || i >= N || memcmp(&oy[j], &ys[i], sizeof ys[i]) != 0 ||
            (j && ox[j] <= ox[j - 1]))
            subseq = 0;
    }
    CHECK(subseq, "width %zu: the output is not a subsequence of the raw points", w);
    CHECK(ox[0] == 0 && ox[k - 1] == N - 1, "width %zu: first %g, last %g", w, ox[0],
          ox[k - 1]);
    /* the naive reference: every bucket's raw min and max, by a plain scan */
    size_t bad = 0, j = 0;
    for (size_t b = 0; b < w; b++) {
        size_t lo = b * N / w, hi = (b + 1) * N / w;
        double mn = INFINITY, mx = -INFINITY;
        for (size_t i = lo; i < hi; i++) {
            if (ys[i] < mn) mn = ys[i];
            if (ys[i] > mx) mx = ys[i];
        }
        int has_min = 0, has_max = 0;
        while (j < k && ox[j] < (double)lo) j++;
        for (size_t q = j; q < k && ox[q] < (double)hi; q++) {
            has_min |= oy[q] == mn;
            has_max |= oy[q] == mx;
        }
        if (!has_min || !has_max) {
            if (bad++ < 3)
                fprintf(stderr, "width %zu: bucket %zu [%zu, %zu): min %g %s, max %g %s\n", w,
                        b, lo, hi, mn, has_min ? "kept" : "LOST", mx, has_max ? "kept" : "LOST");
        }
    }
    CHECK(bad == 0, "width %zu: %zu of %zu buckets lost their min or max", w, bad, w);
    /* the highest and the lowest spike (the series' extremes) survive any width */
    int hi = 0, lo = 0;
    for (size_t q = 0; q < k; q++) {
        hi |= oy[q] == 5.0 + (SPIKES - 1);
        lo |= oy[q] == -1.0 - (2 * SPIKES - 1);
    }
    CHECK(hi && lo, "width %zu: the series' highest spike %s, lowest %s", w, hi ? "kept" : "LOST",
          lo ? "kept" : "LOST");
    printf("width %zu: %zu of %d points; every bucket's min and max, both ends and the highest "
           "and lowest spikes kept\n", w, k, N);
    free(ox);
    free(oy);
}

int main(void) {
    for (size_t i = 0; i < N; i++) {
        xs[i] = (double)i;
        ys[i] = 0.02 + 0.5 * exp(-(double)i / 20000.0) + 0.01 * uniform();
    }
    /* spikes far outside the noise, at indices drawn from the LCG (distinct enough: a clash
       only makes one spike the other's neighbour) */
    for (int s = 0; s < 2 * SPIKES; s++) {
        size_t i = 1 + (size_t)(uniform() * (N - 2));
        spike_at[s] = i;
        ys[i] = s < SPIKES ? 5.0 + s : -1.0 - s;
    }
    for (int s = 0; s < 10; s++) {
        size_t i = 1 + (size_t)(uniform() * (N - 2));
        if (i != spike_at[SPIKES - 1] && i != spike_at[2 * SPIKES - 1]) ys[i] = NAN;
    }
    size_t widths[] = { 1, 7, 333, 1000, 4096 };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) check_width(widths[i]);

    /* in place (the monitor's curve compaction): the same points as into other arrays */
    static double ix[N], iy[N], ox2[2 * 8192 + 2], oy2[2 * 8192 + 2];
    for (size_t w = 1000; w <= 8192; w += 7192) {
        memcpy(ix, xs, sizeof xs);
        memcpy(iy, ys, sizeof ys);
        size_t k1 = pf_decimate_minmax(xs, ys, N, w, ox2, oy2);
        size_t k2 = pf_decimate_minmax(ix, iy, N, w, ix, iy);
        CHECK(k1 == k2 && !memcmp(ox2, ix, k1 * sizeof *ix) && !memcmp(oy2, iy, k1 * sizeof *iy),
              "width %zu: in place gives the same %zu points (%zu)", w, k1, k2);
    }
    printf("in place (widths 1000, 8192) equals into other arrays\n");

    /* short: returned whole */
    double ox[64], oy[64];
    size_t k = pf_decimate_minmax(xs, ys, 20, 10, ox, oy);
    CHECK(k == 20 && ox[19] == 19 && oy[5] == ys[5], "short series: %zu points", k);
    CHECK(pf_decimate_minmax(xs, ys, 0, 10, ox, oy) == 0, "empty series gave points");
    printf("short series (20 points, width 10) returned whole; empty gives none\n");
    return pf_test_end("test_decimate");
}
