/*  PairedImageDataset: pairing and start-up checks, mod-crop, and the paired crop + flips.

    The crop/flip check is exact by construction: the GT is the nearest-neighbour 2x
    upsampling of a random LQ, so whatever crop position and flips are drawn, every 2x2 block of
    the GT patch must equal the LQ patch pixel at the same place. A crop misaligned by one pixel
    or a flip applied to one side only breaks that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/image.h"
#include "common/rng.h"
#include "loader/dataset.h"
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
          strstr(err, "exactly scale"), "message: %s", err);
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
    CHECK(strstr(err, "no .png files"), "message: %s", err);
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

int main(void) {
    snprintf(root, sizeof root, "/tmp/pf_test_dataset_%d", (int)getpid());
    mkdir(root, 0755);
    test_crop_alignment();
    test_errors();
    test_mod_crop_and_bicubic();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return pf_test_end("test_dataset");
}
