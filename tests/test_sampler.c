/*  Sampler and augmentation determinism (DESIGN.md "Sampler"), checked against properties
    that follow from the contract rather than against recorded values:
    - each epoch is a permutation: every sample exactly once across ranks and batches
      (drop_last aside), ranks disjoint;
    - batches are a pure function of (seed, iter, rank): a fresh sampler, one queried out of
      order, and one queried after a "resume" give the same indices;
    - another seed or epoch gives another order; the distribution of first positions is not
      degenerate (chi-square against uniform);
    - pf_rng_below is unbiased enough (chi-square) and within range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "coordinator/sampler.h"
#include "pf_test.h"

static void test_epoch_is_permutation(int world, int spg, uint32_t len) {
    pf_sampler s;
    char err[256];
    CHECK(pf_sampler_init(&s, 7, len, world, spg, err, sizeof err) == 0, "%s", err);
    int64_t ipe = s.iters_per_epoch;
    CHECK(ipe == (int64_t)(len / (uint32_t)(world * spg)), "iters_per_epoch %lld",
          (long long)ipe);
    for (int64_t epoch = 0; epoch < 3; epoch++) {
        int *seen = calloc(len, sizeof *seen);
        uint32_t idx[64];
        for (int64_t i = 0; i < ipe; i++) {
            for (int r = 0; r < world; r++) {
                int64_t e = pf_sampler_batch(&s, epoch * ipe + i, r, idx);
                CHECK(e == epoch, "epoch %lld != %lld", (long long)e, (long long)epoch);
                for (int j = 0; j < spg; j++) {
                    CHECK(idx[j] < len, "index %u out of range", idx[j]);
                    if (idx[j] < len) seen[idx[j]]++;
                }
            }
        }
        int dup = 0, missing = 0;
        for (uint32_t k = 0; k < len; k++) {
            dup += seen[k] > 1;
            missing += seen[k] == 0;
        }
        CHECK(dup == 0, "world %d: %d samples twice in epoch %lld", world, dup,
              (long long)epoch);
        CHECK(missing == (int)(len % (uint32_t)(world * spg)),
              "world %d: %d samples missing, drop_last allows %u", world, missing,
              len % (uint32_t)(world * spg));
        free(seen);
    }
    pf_sampler_free(&s);
}

static void test_pure_function(void) {
    pf_sampler a, b;
    char err[256];
    pf_sampler_init(&a, 123, 1000, 2, 16, err, sizeof err);
    pf_sampler_init(&b, 123, 1000, 2, 16, err, sizeof err);
    uint32_t x[16], y[16];
    /* a in order, b backwards across epochs: same answers. */
    int same = 1;
    for (int64_t it = 0; it < 200; it++) {
        pf_sampler_batch(&a, it, it % 2, x);
        pf_sampler_batch(&b, 199 - it, (199 - it) % 2, y);
        uint32_t z[16];
        pf_sampler_batch(&b, it, it % 2, z);
        same &= memcmp(x, z, sizeof x) == 0;
    }
    CHECK(same, "batches depend on query order");
    pf_sampler c;
    pf_sampler_init(&c, 124, 1000, 2, 16, err, sizeof err);
    pf_sampler_batch(&a, 0, 0, x);
    pf_sampler_batch(&c, 0, 0, y);
    CHECK(memcmp(x, y, sizeof x) != 0, "seed does not change the order");
    pf_sampler_batch(&a, 31, 0, x);     /* epoch 1 starts at 31 (1000 / 32) */
    pf_sampler_batch(&a, 0, 0, y);
    CHECK(memcmp(x, y, sizeof x) != 0, "epochs share an order");
    pf_sampler_free(&a);
    pf_sampler_free(&b);
    pf_sampler_free(&c);
}

static void test_too_small(void) {
    pf_sampler s;
    char err[256] = "";
    CHECK(pf_sampler_init(&s, 0, 10, 1, 16, err, sizeof err) != 0, "accepted 10 < 16");
    CHECK(strstr(err, "repeat") != NULL, "message should point at repeat: %s", err);
}

/* Chi-square of the first element of epoch e over many epochs: uniform over 10 values. */
static void test_uniform_first(void) {
    pf_sampler s;
    char err[256];
    pf_sampler_init(&s, 5, 10, 1, 1, err, sizeof err);
    int count[10] = { 0 };
    const int n = 20000;
    for (int e = 0; e < n; e++) {
        uint32_t x;
        pf_sampler_batch(&s, (int64_t)e * 10, 0, &x);
        count[x]++;
    }
    double chi = 0, expect = n / 10.0;
    for (int k = 0; k < 10; k++) chi += (count[k] - expect) * (count[k] - expect) / expect;
    CHECK(chi < 27.88, "chi-square %.2f over 9 dof exceeds the 0.1%% critical value", chi);
    pf_sampler_free(&s);
}

static void test_rng_below(void) {
    pf_rng r = pf_rng_make(1, 2, 3);
    int count[7] = { 0 };
    int out = 0;
    for (int i = 0; i < 70000; i++) {
        uint32_t v = pf_rng_below(&r, 7);
        if (v >= 7) out++;
        else count[v]++;
    }
    CHECK(out == 0, "%d draws out of range", out);
    double chi = 0;
    for (int k = 0; k < 7; k++) chi += (count[k] - 10000.0) * (count[k] - 10000.0) / 10000.0;
    CHECK(chi < 22.46, "chi-square %.2f over 6 dof", chi);
    pf_rng a = pf_rng_make(1, 2, 3), b = pf_rng_make(1, 3, 2);
    CHECK(pf_rng_u64(&a) != pf_rng_u64(&b), "key words are order-insensitive");
    double u = pf_rng_uniform(&a);
    CHECK(u >= 0 && u < 1, "uniform %f", u);
}

int main(void) {
    test_epoch_is_permutation(1, 16, 600);
    test_epoch_is_permutation(3, 4, 100);
    test_epoch_is_permutation(4, 1, 37);
    test_pure_function();
    test_too_small();
    test_uniform_first();
    test_rng_below();
    return pf_test_end("test_sampler");
}
