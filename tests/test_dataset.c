/*  PairedImageDataset and SingleImageDataset: pairing and start-up checks, mod-crop, the
    paired crop + flips, meta_info_file, JPEG files, degradations, and the decoded-image cache.

    The crop/flip check is exact by construction: the GT is the nearest-neighbour 2x
    upsampling of a random LQ, so whatever crop position and flips are drawn, every 2x2 block of
    the GT patch must equal the LQ patch pixel at the same place. A crop misaligned by one pixel
    or a flip applied to one side only breaks that.

    The cache tests follow the LRU order entry by entry and the counters call by call, and run
    pf_dataset_sample from 4 threads (with a cache too small for the set, so entries are
    decoded, pinned and evicted while other threads use them) against single-threaded bytes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dataset.h"
#include "common/degrade.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/rng.h"
#include "pf_test.h"

static char root[256];

static void write_rgb(const char *dir, const char *name, const uint8_t *px, int w, int h) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
}

static void make_pair(const char *gt_dir, const char *lq_dir, const char *name, int lw, int lh,
                      uint64_t seed) {
    uint8_t *lq = malloc((size_t)lw * lh * 3), *gt = malloc((size_t)lw * lh * 12);
    pf_rng r = pf_rng_make(seed, 0, 0);
    for (int i = 0; i < lw * lh * 3; i++) lq[i] = (uint8_t)pf_rng_below(&r, 256);
    for (int y = 0; y < 2 * lh; y++)
        for (int x = 0; x < 2 * lw; x++)
            memcpy(gt + ((size_t)y * 2 * lw + x) * 3, lq + ((size_t)(y / 2) * lw + x / 2) * 3, 3);
    write_rgb(gt_dir, name, gt, 2 * lw, 2 * lh);
    if (lq_dir) write_rgb(lq_dir, name, lq, lw, lh);
    free(lq);
    free(gt);
}

static pf_dataset_cfg cfg_for(const char *gt, const char *lq) {
    pf_dataset_cfg c;
    memset(&c, 0, sizeof c);
    c.present = 1;
    snprintf(c.type, sizeof c.type, "PairedImageDataset");
    snprintf(c.gt_folder, sizeof c.gt_folder, "%s", gt);
    if (lq) snprintf(c.lq_folder, sizeof c.lq_folder, "%s", lq);
    snprintf(c.filename_tmpl, sizeof c.filename_tmpl, "{}");
    c.use_flip = c.use_rot = 1;
    c.repeat = 3;
    return c;
}

static void test_crop_alignment(void) {
    char gt[300], lq[300], err[1024];
    snprintf(gt, sizeof gt, "%s/ok_gt", root);
    snprintf(lq, sizeof lq, "%s/ok_lq", root);
    mkdir(gt, 0755);
    mkdir(lq, 0755);
    make_pair(gt, lq, "a.png", 40, 30, 1);
    make_pair(gt, lq, "b.png", 33, 37, 2);
    pf_dataset_cfg c = cfg_for(gt, lq);
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 32, err, sizeof err) == 0, "%s", err);
    CHECK(ds.n_files == 2 && ds.len == 6, "n_files %d len %u", ds.n_files, ds.len);
    CHECK(strcmp(ds.files[0].name, "a") == 0, "sorted names: %s", ds.files[0].name);
    int combos[8] = { 0 }, bad = 0;
    uint8_t gp[32 * 32 * 3], lp[16 * 16 * 3], gp2[32 * 32 * 3], lp2[16 * 16 * 3];
    for (uint32_t idx = 0; idx < 400; idx++) {
        const pf_image *g, *l;
        int f = (int)(idx % 2);
        CHECK(pf_dataset_pair(&ds, f, &g, &l, err, sizeof err) == 0, "%s", err);
        pf_paired_crop_augment(g, l, 2, 32, 1, 1, 99, idx / 50, idx, gp, lp);
        for (int y = 0; y < 32; y++)
            for (int x = 0; x < 32; x++)
                bad += memcmp(gp + (y * 32 + x) * 3, lp + ((y / 2) * 16 + x / 2) * 3, 3) != 0;
        /* Identify the transform from the LQ patch's corner pixel against the image. */
        pf_paired_crop_augment(g, l, 2, 32, 1, 1, 99, idx / 50, idx, gp2, lp2);
        CHECK(memcmp(gp, gp2, sizeof gp) == 0 && memcmp(lp, lp2, sizeof lp) == 0,
              "same (seed, epoch, index) gave another patch");
        pf_rng r = pf_rng_make(99, idx / 50, idx);
        pf_rng_below(&r, 1);
        pf_rng_below(&r, 1);
        combos[pf_rng_u64(&r) & 7]++;
    }
    CHECK(bad == 0, "%d GT pixels do not match their LQ pixel after crop+flip", bad);
    for (int k = 0; k < 8; k++) CHECK(combos[k] > 20, "flip combination %d drawn %d times", k,
                                      combos[k]);
    /* A flip must change the patch (so flips are really applied). */
    const pf_image *g, *l;
    pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err);
    pf_paired_crop_augment(g, l, 2, 32, 0, 0, 99, 0, 5, gp, lp);
    int moved = 0;
    for (uint32_t idx = 0; idx < 50; idx++) {
        pf_paired_crop_augment(g, l, 2, 32, 0, 0, 99, 0, idx, gp2, lp2);
        moved += memcmp(lp, lp2, sizeof lp) != 0;
    }
    CHECK(moved > 40, "crop position barely changes with the index (%d of 50)", moved);
    pf_dataset_close(&ds);
}

static void test_errors(void) {
    char gt[300], lq[300], err[1024];
    /* GT not exactly scale x LQ */
    snprintf(gt, sizeof gt, "%s/mis_gt", root);
    snprintf(lq, sizeof lq, "%s/mis_lq", root);
    mkdir(gt, 0755);
    mkdir(lq, 0755);
    make_pair(gt, NULL, "x.png", 20, 20, 3);
    uint8_t small[19 * 20 * 3] = { 0 };
    write_rgb(lq, "x.png", small, 19, 20);
    pf_dataset_cfg c = cfg_for(gt, lq);
    pf_dataset ds;
    err[0] = 0;
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 16, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "mis_gt/x.png") && strstr(err, "mis_lq/x.png") &&
          strstr(err, "is 40x40 but LQ") &&
          strstr(err, "at scale 2 the GT must be 38x40; crop the GT to 38x40 (its top-left)"),
          "message: %s", err);
    /* missing LQ file */
    snprintf(lq, sizeof lq, "%s/ok_lq", root);
    c = cfg_for(gt, lq);
    snprintf(c.filename_tmpl, sizeof c.filename_tmpl, "{}x2");
    CHECK(pf_dataset_open(&ds, &c, "data.eval", 2, 0, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "xx2.png") && strstr(err, "data.eval"), "message: %s", err);
    /* smaller than the patch */
    c = cfg_for(gt, NULL);
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 48, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "mis_gt/x.png") && strstr(err, "smaller than the patch"), "message: %s",
          err);
    /* not a PNG behind a .png name */
    char bad[300], path[400];
    snprintf(bad, sizeof bad, "%s/bad_gt", root);
    mkdir(bad, 0755);
    snprintf(path, sizeof path, "%s/broken.png", bad);
    FILE *f = fopen(path, "w");
    fputs("this is not a png", f);
    fclose(f);
    c = cfg_for(bad, NULL);
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "broken.png") != NULL, "message: %s", err);
    /* empty folder */
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", root);
    mkdir(empty, 0755);
    c = cfg_for(empty, NULL);
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "no .png, .jpg or .jpeg files"), "message: %s", err);
}

static void test_mod_crop_and_bicubic(void) {
    char gt[300], err[1024];
    snprintf(gt, sizeof gt, "%s/odd_gt", root);
    mkdir(gt, 0755);
    uint8_t px[65 * 49 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
    write_rgb(gt, "odd.png", px, 65, 49);
    pf_dataset_cfg c = cfg_for(gt, NULL);
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) == 0, "%s", err);
    CHECK(ds.files[0].gt_w == 64 && ds.files[0].gt_h == 48 && ds.files[0].lq_w == 32 &&
          ds.files[0].lq_h == 24, "mod-crop sizes %dx%d / %dx%d", ds.files[0].gt_w,
          ds.files[0].gt_h, ds.files[0].lq_w, ds.files[0].lq_h);
    const pf_image *g, *l;
    CHECK(pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err) == 0, "%s", err);
    CHECK(g->w == 64 && g->h == 48 && l->w == 32 && l->h == 24, "decoded sizes");
    /* Mod-crop keeps the top-left corner: row 1 of the GT is row 1 of the file. */
    CHECK(memcmp(g->data + 64 * 3, px + 65 * 3, 64 * 3) == 0, "mod-crop moved pixels");
    pf_dataset_close(&ds);
}

/* A folder `name` under root with n random GT images of w x h (file i: "<i>.png"). */
static void make_gt_folder(char *dir, size_t dirlen, const char *name, int n, int w, int h) {
    snprintf(dir, dirlen, "%s/%s", root, name);
    mkdir(dir, 0755);
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int i = 0; i < n; i++) {
        pf_rng r = pf_rng_make(1000 + i, w, h);
        for (size_t k = 0; k < (size_t)w * h * 3; k++) px[k] = (uint8_t)pf_rng_below(&r, 256);
        char fn[32];
        snprintf(fn, sizeof fn, "%d.png", i);
        write_rgb(dir, fn, px, w, h);
    }
    free(px);
}

static void expect_state(pf_dataset *ds, const char *want, const char *when) {
    char got[16] = "";
    for (int i = 0; i < ds->n_files && i < 15; i++)
        got[i] = pf_pair_cache_state(&ds->cache, i) == PF_ENTRY_READY ? 'R' : '-';
    CHECK(strcmp(got, want) == 0, "%s: cached entries %s, expected %s", when, got, want);
}

static void expect_stats(pf_dataset *ds, uint64_t hits, uint64_t misses, uint64_t evictions,
                         size_t bytes, const char *when) {
    pf_cache_stats st;
    pf_dataset_cache_stats(ds, &st);
    CHECK(st.hits == hits && st.misses == misses && st.evictions == evictions &&
          st.bytes == bytes, "%s: hits %llu misses %llu evictions %llu bytes %zu, expected "
          "%llu %llu %llu %zu", when, (unsigned long long)st.hits,
          (unsigned long long)st.misses, (unsigned long long)st.evictions, st.bytes,
          (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)evictions,
          bytes);
}

static void test_cache_lru(void) {
    char gt[300], err[1024];
    make_gt_folder(gt, sizeof gt, "lru", 4, 16, 16);
    pf_dataset_cfg c = cfg_for(gt, NULL);
    c.repeat = 1;
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 8, err, sizeof err) == 0, "%s", err);
    const size_t E = (16 * 16 + 8 * 8) * 3;   /* bytes of one entry: 960 */
    uint8_t g[8 * 8 * 3], l[4 * 4 * 3], g0[8 * 8 * 3], l0[4 * 4 * 3];
    /* unbounded first: the reference patch of sample 2 */
    CHECK(pf_dataset_sample(&ds, 2, 5, 0, g0, l0, err, sizeof err) == 0, "%s", err);
    pf_dataset_set_cache_limit(&ds, 2 * E);
    expect_stats(&ds, 0, 1, 0, E, "after one sample");
    uint32_t seq[] = { 0, 2, 1 };  /* 2 is a hit; then 0, 2 cached; 1 evicts 0 (LRU) */
    for (int i = 0; i < 3; i++) pf_dataset_sample(&ds, seq[i], 5, 0, g, l, err, sizeof err);
    expect_state(&ds, "-RR-", "after 2 0 2 1");
    expect_stats(&ds, 1, 3, 1, 2 * E, "after 2 0 2 1");
    pf_dataset_sample(&ds, 2, 5, 0, g, l, err, sizeof err);   /* 2 most recent */
    pf_dataset_sample(&ds, 3, 5, 0, g, l, err, sizeof err);   /* evicts 1 */
    expect_state(&ds, "--RR", "after ... 2 3");
    expect_stats(&ds, 2, 4, 2, 2 * E, "after ... 2 3");
    /* a lower limit drops the least recently used at once */
    pf_dataset_set_cache_limit(&ds, E + 1);
    expect_state(&ds, "---R", "limit 1 entry");
    expect_stats(&ds, 2, 4, 3, E, "limit 1 entry");
    /* an entry larger than the limit is still used for its sample, then dropped */
    pf_dataset_set_cache_limit(&ds, E - 1);
    CHECK(pf_dataset_sample(&ds, 2, 5, 0, g, l, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(g, g0, sizeof g) == 0 && memcmp(l, l0, sizeof l) == 0,
          "a pair larger than the limit gave another patch");
    expect_state(&ds, "----", "limit below one entry");
    expect_stats(&ds, 2, 5, 5, 0, "limit below one entry");
    /* 0 keeps nothing: every sample decodes */
    pf_dataset_set_cache_limit(&ds, 0);
    for (uint32_t i = 0; i < 8; i++) pf_dataset_sample(&ds, i % 4, 5, 0, g, l, err, sizeof err);
    expect_stats(&ds, 2, 13, 13, 0, "limit 0");
    /* pf_dataset_pair pins until the next call: the pair survives a zero limit */
    const pf_image *pg, *pl;
    CHECK(pf_dataset_pair(&ds, 1, &pg, &pl, err, sizeof err) == 0, "%s", err);
    expect_state(&ds, "-R--", "pair pinned");
    CHECK(pf_dataset_pair(&ds, 1, &pg, &pl, err, sizeof err) == 0, "%s", err);
    expect_stats(&ds, 3, 14, 13, E, "the same pair twice: a hit");
    pf_dataset_pair(&ds, 2, &pg, &pl, err, sizeof err);
    expect_state(&ds, "--R-", "next pair");
    pf_dataset_close(&ds);
}

/* ---- concurrency: threads run samples of their own epoch; bytes must equal the reference */

#define CT_EPOCHS 4
typedef struct {
    pf_dataset *ds;
    uint32_t epoch;
    uint8_t *gt, *lq;           /* len samples of this epoch */
    int failures;
    pthread_barrier_t *start;
} ct_job;

static void *ct_run(void *arg) {
    ct_job *j = arg;
    size_t gs = 16 * 16 * 3, ls = 8 * 8 * 3;
    char err[512];
    pthread_barrier_wait(j->start);
    for (uint32_t i = 0; i < j->ds->len; i++)
        j->failures += pf_dataset_sample(j->ds, i, 77, j->epoch, j->gt + i * gs, j->lq + i * ls,
                                         err, sizeof err) != 0;
    return NULL;
}

/* Run CT_EPOCHS epochs on `threads` threads at once (thread t: epoch t, every index in
   order, so all threads want the same file at about the same time). */
static void ct_epochs(pf_dataset *ds, int threads, uint8_t *gt, uint8_t *lq) {
    size_t gs = 16 * 16 * 3, ls = 8 * 8 * 3;
    pthread_t th[CT_EPOCHS];
    ct_job jobs[CT_EPOCHS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int e = 0; e < CT_EPOCHS; e += threads) {
        for (int t = 0; t < threads; t++) {
            jobs[t] = (ct_job){ ds, (uint32_t)(e + t), gt + (e + t) * ds->len * gs,
                                lq + (e + t) * ds->len * ls, 0, &start };
            pthread_create(&th[t], NULL, ct_run, &jobs[t]);
        }
        for (int t = 0; t < threads; t++) {
            pthread_join(th[t], NULL);
            CHECK(jobs[t].failures == 0, "%d samples failed", jobs[t].failures);
        }
    }
    pthread_barrier_destroy(&start);
}

static void test_cache_threads(void) {
    char gt[300], err[1024];
    make_gt_folder(gt, sizeof gt, "threads", 6, 40, 34);
    pf_dataset_cfg c = cfg_for(gt, NULL);
    c.repeat = 2;
    c.n_degradations = 2;   /* noise and JPEG, random per sample */
    c.degradation[0] = (pf_degradation){ .type = "DN", .sigma = 5, .sigma_max = 30 };
    c.degradation[1] = (pf_degradation){ .type = "JPEG", .quality = 40, .quality_max = 90 };
    pf_dataset one, four, tiny;
    CHECK(pf_dataset_open(&one, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&four, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&tiny, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    size_t n = (size_t)CT_EPOCHS * one.len;
    uint8_t *g1 = malloc(n * 768), *l1 = malloc(n * 192), *g4 = malloc(n * 768),
            *l4 = malloc(n * 192), *gt4 = malloc(n * 768), *lt4 = malloc(n * 192);
    ct_epochs(&one, 1, g1, l1);
    ct_epochs(&four, 4, g4, l4);
    /* room for one and a half entries: threads evict what others just decoded */
    const size_t E = (40 * 34 + 20 * 17) * 3;
    pf_dataset_set_cache_limit(&tiny, E + E / 2);
    ct_epochs(&tiny, 4, gt4, lt4);
    CHECK(memcmp(g1, g4, n * 768) == 0 && memcmp(l1, l4, n * 192) == 0,
          "4 threads gave other patches than 1");
    CHECK(memcmp(g1, gt4, n * 768) == 0 && memcmp(l1, lt4, n * 192) == 0,
          "4 threads with a small cache gave other patches than 1");
    pf_cache_stats st;
    pf_dataset_cache_stats(&four, &st);
    CHECK(st.misses == 6 && st.hits == n - 6 && st.evictions == 0,
          "4 threads, no limit: %llu misses (each file must be decoded once), %llu hits",
          (unsigned long long)st.misses, (unsigned long long)st.hits);
    pf_dataset_cache_stats(&tiny, &st);
    CHECK(st.hits + st.misses == n && st.bytes <= E + E / 2 && st.misses > 6,
          "small cache: %llu hits %llu misses %zu bytes", (unsigned long long)st.hits,
          (unsigned long long)st.misses, st.bytes);
    printf("small cache, 4 threads: %llu hits, %llu misses, %llu evictions of %zu samples\n",
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.evictions, n);
    /* The crop is the one of pf_paired_crop_augment on the clean pair (the degradation has a
       stream of its own), and the LQ differs from the clean crop by noise + JPEG. */
    pf_dataset_cfg cb = cfg_for(gt, NULL);
    cb.repeat = 2;
    pf_dataset clean;
    CHECK(pf_dataset_open(&clean, &cb, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    uint8_t gc[768], lc[192];
    double sq = 0;
    int same_gt = 1;
    for (uint32_t i = 0; i < clean.len; i++) {
        pf_dataset_sample(&clean, i, 77, 1, gc, lc, err, sizeof err);
        same_gt &= memcmp(gc, g1 + (one.len + i) * 768, 768) == 0;
        for (int k = 0; k < 192; k++) {
            double d = (double)l1[(one.len + i) * 192 + k] - lc[k];
            sq += d * d;
        }
    }
    double rms = sqrt(sq / (clean.len * 192.0));
    CHECK(same_gt, "the degradation changed the GT crop");
    /* noise alone: rms sqrt(E[sigma^2]) = 18.9 for sigma in U[5, 30]; JPEG of random pixels
       adds a lot */
    CHECK(rms > 15 && rms < 60, "LQ differs from the clean LQ by rms %.2f (noise 5..30, then "
          "JPEG 40..90)", rms);
    pf_dataset_close(&clean);
    pf_dataset_close(&one);
    pf_dataset_close(&four);
    pf_dataset_close(&tiny);
    free(g1);
    free(l1);
    free(g4);
    free(l4);
    free(gt4);
    free(lt4);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_meta_info(void) {
    char gt[300], meta[400], err[1024];
    make_gt_folder(gt, sizeof gt, "meta", 3, 20, 20);
    snprintf(meta, sizeof meta, "%s/meta.txt", root);
    write_text(meta, "2.png (20,20,3)\n\n   0.png 7\n2.png\n");
    pf_dataset_cfg c = cfg_for(gt, NULL);
    snprintf(c.meta_info_file, sizeof c.meta_info_file, "%s", meta);
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) == 0, "%s", err);
    CHECK(ds.n_files == 3 && ds.len == 9 && !strcmp(ds.files[0].name, "2") &&
          !strcmp(ds.files[1].name, "0") && !strcmp(ds.files[2].name, "2"),
          "meta order: %d files", ds.n_files);
    pf_dataset_close(&ds);
    write_text(meta, "0.png\n1.png\n\nnope.png\n");
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) != 0, "accepted");
    CHECK(strstr(err, "meta.txt:4:") && strstr(err, "nope.png") &&
          strstr(err, "data.train.meta_info_file"), "message: %s", err);
    write_text(meta, "0.bmp\n");
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) != 0 &&
          strstr(err, "meta.txt:1:") && strstr(err, "0.bmp"), "message: %s", err);
    write_text(meta, "\n  \n");
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 0, err, sizeof err) != 0 &&
          strstr(err, "names no file"), "message: %s", err);
    /* SingleImageDataset: the meta file names LQ images */
    pf_dataset_cfg s = cfg_for("", gt);
    snprintf(s.type, sizeof s.type, "SingleImageDataset");
    s.repeat = 1;
    write_text(meta, "1.png\n");
    snprintf(s.meta_info_file, sizeof s.meta_info_file, "%s", meta);
    CHECK(pf_dataset_open(&ds, &s, "data.test", 2, 0, err, sizeof err) == 0, "%s", err);
    CHECK(ds.single && ds.n_files == 1 && !strcmp(ds.files[0].name, "1") &&
          ds.files[0].lq_w == 20, "single: %d files", ds.n_files);
    const pf_image *g, *l;
    CHECK(pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err) == 0 && !g->data && l->w == 20,
          "single pair: %s", err);
    uint8_t buf[16 * 16 * 3];
    CHECK(pf_dataset_sample(&ds, 0, 1, 0, buf, buf, err, sizeof err) != 0 &&
          strstr(err, "SingleImageDataset"), "single sample: %s", err);
    pf_dataset_close(&ds);
}

static void copy_file(const char *from, const char *to) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    CHECK(system(cmd) == 0, "%s", cmd);
}

static void test_jpeg_files(void) {
    char gt[300], lq[300], src[600], dst[600], err[1024];
    snprintf(gt, sizeof gt, "%s/jpg_gt", root);
    mkdir(gt, 0755);
    snprintf(src, sizeof src, "%s/jpeg/photo.jpg", pf_test_data());
    snprintf(dst, sizeof dst, "%s/p.JPG", gt);
    copy_file(src, dst);
    pf_dataset_cfg c = cfg_for(gt, NULL);
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    const pf_image *g, *l;
    pf_image ref;
    CHECK(pf_dataset_pair(&ds, 0, &g, &l, err, sizeof err) == 0, "%s", err);
    CHECK(pf_image_read(dst, &ref, err, sizeof err) == 0, "%s", err);
    CHECK(g->w == 64 && g->h == 48 && memcmp(g->data, ref.data, 64 * 48 * 3) == 0 &&
          l->w == 32 && !strcmp(ds.files[0].name, "p"), "JPEG GT");
    pf_image_free(&ref);
    pf_dataset_close(&ds);
    /* GT .png, LQ .jpg: the LQ extension falls back from the GT's to .jpg */
    snprintf(gt, sizeof gt, "%s/mixed_gt", root);
    snprintf(lq, sizeof lq, "%s/mixed_lq", root);
    mkdir(gt, 0755);
    mkdir(lq, 0755);
    snprintf(dst, sizeof dst, "%s/px2.jpg", lq);
    copy_file(src, dst);
    uint8_t *big = calloc(128 * 96 * 3, 1);
    write_rgb(gt, "p.png", big, 128, 96);
    free(big);
    c = cfg_for(gt, lq);
    snprintf(c.filename_tmpl, sizeof c.filename_tmpl, "{}x2");
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 32, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(ds.files[0].lq_path, "px2.jpg") != NULL, "LQ path %s", ds.files[0].lq_path);
    pf_dataset_close(&ds);
    /* a truncated JPEG found mid-run is an error naming it; no crash */
    snprintf(gt, sizeof gt, "%s/cut_gt", root);
    mkdir(gt, 0755);
    snprintf(dst, sizeof dst, "%s/c.jpg", gt);
    copy_file(src, dst);
    c = cfg_for(gt, NULL);
    CHECK(pf_dataset_open(&ds, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(truncate(dst, 900) == 0, "truncate");
    uint8_t gp[16 * 16 * 3], lp[8 * 8 * 3];
    CHECK(pf_dataset_sample(&ds, 0, 1, 0, gp, lp, err, sizeof err) != 0 &&
          strstr(err, "c.jpg") && strstr(err, "truncated JPEG"), "message: %s", err);
    CHECK(pf_dataset_sample(&ds, 0, 1, 0, gp, lp, err, sizeof err) != 0, "second try");
    pf_dataset_close(&ds);
}

static void test_degradations(void) {
    char gt[300], err[1024];
    make_gt_folder(gt, sizeof gt, "degr", 4, 30, 27);
    /* BD: the LQ is pf_degrade_bd of the mod-cropped GT */
    pf_dataset_cfg c = cfg_for(gt, NULL);
    c.n_degradations = 1;
    c.degradation[0] = (pf_degradation){ .type = "BD", .kernel_size = 7, .sigma = 1.6f,
                                         .sigma_max = 1.6f };
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.eval", 3, 0, err, sizeof err) == 0, "%s", err);
    const pf_image *g, *l;
    CHECK(pf_dataset_pair(&ds, 1, &g, &l, err, sizeof err) == 0, "%s", err);
    uint8_t want[10 * 9 * 3];
    pf_degrade_bd(g->data, g->h, g->w, 3, 7, 1.6, want);
    CHECK(g->w == 30 && g->h == 27 && l->w == 10 && l->h == 9 &&
          memcmp(l->data, want, sizeof want) == 0, "BD pair");
    CHECK(!ds.random_steps, "BD is not random");
    pf_dataset_close(&ds);
    /* DN in evaluation: per image, keyed by (seed, image id); shards agree with the whole */
    c.degradation[0] = (pf_degradation){ .type = "DN", .sigma = 10, .sigma_max = 10 };
    pf_dataset a, b, part;
    CHECK(pf_dataset_open(&a, &c, "data.eval", 3, 0, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&b, &c, "data.eval", 3, 0, err, sizeof err) == 0, "%s", err);
    pf_dataset_set_seed(&a, 9);
    pf_dataset_set_seed(&b, 9);
    CHECK(pf_dataset_shard(&a, 1, 2, &part) == 0, "shard");
    const pf_image *ga, *la, *gb, *lb;
    uint8_t first[10 * 9 * 3];
    CHECK(pf_dataset_pair(&a, 3, &ga, &la, err, sizeof err) == 0, "%s", err);
    memcpy(first, la->data, sizeof first);
    CHECK(pf_dataset_pair(&part, 1, &gb, &lb, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(first, lb->data, sizeof first) == 0, "shard 1/2 image 1 is not image 3");
    /* the cached LQ stays clean: BI of the GT */
    uint8_t bi[10 * 9 * 3];
    pf_imresize_u8(ga->data, ga->h, ga->w, 3, 1.0 / 3, bi);
    CHECK(memcmp(a.cache.entries[3].lq.data, bi, sizeof bi) == 0, "cached LQ is not BI");
    double sq = 0;
    for (size_t k = 0; k < sizeof bi; k++) sq += (first[k] - (double)bi[k]) * (first[k] - bi[k]);
    CHECK(sqrt(sq / sizeof bi) > 7 && sqrt(sq / sizeof bi) < 13, "DN 10 rms %.2f",
          sqrt(sq / sizeof bi));
    pf_dataset_set_seed(&b, 10);
    CHECK(pf_dataset_pair(&b, 3, &gb, &lb, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(first, lb->data, sizeof first) != 0, "another seed, same noise");
    pf_dataset_set_seed(&b, 9);
    pf_dataset_pair(&b, 2, &gb, &lb, err, sizeof err);
    pf_dataset_pair(&b, 3, &gb, &lb, err, sizeof err);
    CHECK(memcmp(first, lb->data, sizeof first) == 0, "same seed and image, other noise");
    pf_dataset_close(&part);
    pf_dataset_close(&a);
    pf_dataset_close(&b);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/pf_test_dataset_%d", (int)getpid());
    mkdir(root, 0755);
    test_crop_alignment();
    test_errors();
    test_mod_crop_and_bicubic();
    test_cache_lru();
    test_cache_threads();
    test_meta_info();
    test_jpeg_files();
    test_degradations();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return pf_test_end("test_dataset");
}
