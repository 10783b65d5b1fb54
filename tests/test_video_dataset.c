/*  test_video_dataset — common/video_dataset.h: REDS-style clip folders, video files, samples
    as BasicSR's REDSRecurrentDataset draws them, determinism, errors.

    1. Coordinates in the pixels. Three clips of 12 frames (two folders, one video file made
       by the ffmpeg CLI, lossless FFV1); LQ frames given in lq_folder. Every LQ pixel says
       where it comes from: R = 5 x, G = 7 y, B = 20 frame + clip; every GT pixel R = 2 X,
       G = 3 Y, B the same. So a sample shows, independently of the code that made it, which
       frames it holds and where each pixel was taken: per sample, the frames step by one
       interval of interval_list, in order or (random_reverse) reversed, start where BasicSR's
       rule puts them; every frame has the same crop and the same flips; GT pixel (I, J) comes
       from the LQ pixel (I / 2, J / 2)'s 2 x 2 block. Over 400 samples all 8 orientations
       appear with use_hflip + use_rot (vflip and transpose: BasicSR's rotation), only the
       identity without, and about half are reversed.
    2. Determinism: the same (seed, epoch, index) gives the same bytes with a cold cache, a
       warm one, a cache of 0 bytes, and from two threads sampling in another order.
    3. Video against frames: a lossy MPEG-4 (B-frames) clip read directly, and the same clip
       dumped to PNG by the ffmpeg CLI: every sample byte-identical (the reader's colour and
       indexing are the CLI's); the FFV1 clip's GT frames equal the raw frames it was made of.
    4. LQ made on the fly (no lq_folder): each frame's LQ is BI of its GT; a crop [x y w h].
    5. Errors, each naming the clip (and the frame): too short for num_frame x interval, a
       missing numbered frame, frames of two sizes, LQ of the wrong size, an unknown
       val_partition clip, frames out of range, a bad crop, a corrupt video frame (FFV1 slice
       CRC) at sample time while the other samples still read.
    6. EDVR's sliding windows: REDSDataset and VideoTestDataset (test_window_sets).
*/
#include "common/video_dataset.h"

#include <libavutil/log.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dataset.h"
#include "common/degrade.h"
#include "common/image.h"
#include "common/util.h"
#include "loader/batch_builder.h"
#include "pf_test.h"

#define GW 96
#define GH 64
#define NF 12

static char root[] = "/tmp/pf_test_vds.XXXXXX";

static void run(const char *cmd) {
    if (system(cmd) != 0) {
        fprintf(stderr, "setup failed: %s\n", cmd);
        exit(1);
    }
}

/* Frame k of clip c: GT (scale 2) or LQ, coordinates in the pixels. */
static void frame_px(int c, int k, int lq, int w, int h, uint8_t *px) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 3;
            p[0] = (uint8_t)(lq ? 5 * x : 2 * x);
            p[1] = (uint8_t)(lq ? 7 * y : 3 * y);
            p[2] = (uint8_t)(20 * k + c);
        }
}

/* Clip c as PNG frames 00000000.png... (GT in gt/NAME, LQ in lq/NAME) and, with `video`, the
   GT frames as raw RGB too (for ffmpeg). */
static void make_clip_folders(const char *name, int c, int n, const char *raw) {
    char dir[512], path[700], err[256];
    uint8_t gt[GW * GH * 3], lq[GW / 2 * GH / 2 * 3];
    FILE *rf = raw ? fopen(raw, "wb") : NULL;
    for (int side = 0; side < 2; side++) {
        snprintf(dir, sizeof dir, "%s/%s/%s", root, side ? "lq" : "gt", name);
        mkdir(dir, 0755);
        for (int k = 0; k < n; k++) {
            int w = side ? GW / 2 : GW, h = side ? GH / 2 : GH;
            frame_px(c, k, side, w, h, side ? lq : gt);
            snprintf(path, sizeof path, "%s/%08d.png", dir, k);
            if (pf_image_write_png(path, side ? lq : gt, w, h, err, sizeof err)) exit(1);
            if (!side && rf) fwrite(gt, 1, sizeof gt, rf);
        }
    }
    if (rf) fclose(rf);
}

static pf_dataset_cfg base_cfg(const char *gt, const char *lq) {
    pf_dataset_cfg c;
    memset(&c, 0, sizeof c);
    snprintf(c.type, sizeof c.type, "REDSRecurrentDataset");
    snprintf(c.gt_folder, sizeof c.gt_folder, "%s", gt);
    if (lq) snprintf(c.lq_folder, sizeof c.lq_folder, "%s", lq);
    c.num_frame = 3;
    c.interval_list[0] = 1;
    c.n_intervals = 1;
    c.repeat = 1;
    return c;
}

/* What one sample shows (part 1); -1 fields when the pixels disagree. */
typedef struct {
    int clip, frames[8], orient, top, left, ok;
} seen;

/* Read the sample's pixels back into coordinates and check them. */
static seen decode(const uint8_t *gt, const uint8_t *lq, int T, int P) {
    int p = P / 2;
    seen s = { .ok = 1 };
    int x00 = 0, y00 = 0;
    for (int t = 0; t < T; t++) {
        const uint8_t *l = lq + (size_t)t * p * p * 3, *g = gt + (size_t)t * P * P * 3;
        int b = l[2];
        s.frames[t] = b / 20;
        if (t == 0) s.clip = b % 20;
        if (b % 20 != s.clip) s.ok = 0;
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++) {
                const uint8_t *q = l + ((size_t)i * p + j) * 3;
                if (q[2] != b) s.ok = 0;
                /* the same coordinates in every frame */
                const uint8_t *q0 = lq + ((size_t)i * p + j) * 3;
                if (q[0] != q0[0] || q[1] != q0[1]) s.ok = 0;
            }
        for (int I = 0; I < P; I++)
            for (int J = 0; J < P; J++) {
                const uint8_t *G = g + ((size_t)I * P + J) * 3;
                const uint8_t *q = l + ((size_t)(I / 2) * p + J / 2) * 3;
                if (G[2] != b || G[0] / 2 / 2 != q[0] / 5 || G[1] / 3 / 2 != q[1] / 7) s.ok = 0;
            }
    }
    /* orientation: where pixel (0,0), (0,1) and (1,0) come from */
    x00 = lq[0] / 5;
    y00 = lq[1] / 7;
    int xr = lq[3] / 5 - x00, yr = lq[4] / 7 - y00;             /* step along j */
    int xd = lq[p * 3] / 5 - x00, yd = lq[p * 3 + 1] / 7 - y00; /* step along i */
    int transpose = xr == 0;   /* moving right changes y */
    int hflip = transpose ? yr < 0 : xr < 0;
    int vflip = transpose ? xd < 0 : yd < 0;
    s.orient = hflip | vflip << 1 | transpose << 2;
    int minx = 1 << 20, miny = 1 << 20;
    for (int i = 0; i < p * p; i++) {
        if (lq[i * 3] / 5 < minx) minx = lq[i * 3] / 5;
        if (lq[i * 3 + 1] / 7 < miny) miny = lq[i * 3 + 1] / 7;
    }
    s.left = minx;
    s.top = miny;
    if (abs(xr) + abs(yr) != 1 || abs(xd) + abs(yd) != 1) s.ok = 0;
    return s;
}

static void test_coordinates(void) {
    char gt[300], lq[300], err[1024];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    pf_dataset_cfg c = base_cfg(gt, lq);
    c.num_frame = 4;
    c.interval_list[0] = 1;
    c.interval_list[1] = 2;
    c.n_intervals = 2;
    c.random_reverse = 1;
    c.use_hflip = c.use_rot = 1;
    snprintf(c.val_partition[0], sizeof c.val_partition[0], "clipB");
    c.n_val_partition = 0;
    pf_video_dataset ds;
    int P = 16, T = 4;
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    if (!ds.clips) return;
    CHECK(ds.n_clips == 3 && ds.len == 3 * NF, "%d clips, %u samples", ds.n_clips, ds.len);
    uint8_t gtb[4 * 16 * 16 * 3], lqb[4 * 8 * 8 * 3];
    int orients[8] = { 0 }, reversed = 0, bad = 0, rule = 0, n = 400;
    for (int i = 0; i < n; i++) {
        uint32_t index = (uint32_t)(i % ds.len);
        int clip, frames[8];
        if (pf_video_dataset_sample(&ds, index, 7, (uint32_t)(i / ds.len), gtb, lqb, &clip,
                                    frames, err, sizeof err) != 0) {
            CHECK(0, "sample %u: %s", index, err);
            break;
        }
        seen s = decode(gtb, lqb, T, P);
        int step = s.frames[1] - s.frames[0];
        int ok = s.ok && s.clip == clip && s.clip == (int)(index / NF) && (abs(step) == 1 ||
                                                                           abs(step) == 2);
        for (int t = 0; t < T; t++) {
            ok &= s.frames[t] == frames[t] && s.frames[t] >= 0 && s.frames[t] < NF;
            if (t) ok &= s.frames[t] - s.frames[t - 1] == step;
        }
        /* BasicSR: the sample starts at the index's frame unless too close to the end */
        int f0 = (int)(index % NF), start = step > 0 ? s.frames[0] : s.frames[T - 1];
        if (f0 <= NF - T * abs(step)) rule += start == f0;
        else rule += start <= NF - T * abs(step);
        if (!ok) bad++;
        orients[s.orient]++;
        reversed += step < 0;
    }
    CHECK(bad == 0, "%d of %d samples with frames or pixels out of place", bad, n);
    CHECK(rule == n, "%d of %d samples start where BasicSR's rule says", rule, n);
    int all = 1;
    for (int o = 0; o < 8; o++) all &= orients[o] > n / 16;
    CHECK(all, "orientations %d %d %d %d %d %d %d %d", orients[0], orients[1], orients[2],
          orients[3], orients[4], orients[5], orients[6], orients[7]);
    CHECK(reversed > n * 35 / 100 && reversed < n * 65 / 100, "%d of %d reversed", reversed, n);
    printf("coordinates: %d samples, frames/crop/flips in place; orientations %d..%d each; "
           "%d reversed\n", n, orients[0], orients[7], reversed);
    pf_video_dataset_close(&ds);

    /* no flips, no reverse, and clipB held out */
    c.use_hflip = c.use_rot = c.random_reverse = 0;
    c.n_val_partition = 1;
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    if (!ds.clips) return;
    CHECK(ds.n_clips == 2 && strcmp(ds.clips[1].name, "clipC.mkv") == 0, "val_partition");
    int id = 0, clips_seen = 0;
    for (uint32_t i = 0; i < ds.len; i++) {
        int clip;
        if (pf_video_dataset_sample(&ds, i, 3, 0, gtb, lqb, &clip, NULL, err, sizeof err)) break;
        seen s = decode(gtb, lqb, T, P);
        id += s.orient == 0 && s.frames[1] > s.frames[0];
        clips_seen |= 1 << s.clip;
    }
    CHECK(id == (int)ds.len, "%d of %u samples unflipped and in order", id, ds.len);
    CHECK(clips_seen == (1 << 0 | 1 << 2), "clips seen %#x: clipB (1) must be held out",
          clips_seen);
    pf_video_dataset_close(&ds);
}

typedef struct {
    pf_video_dataset *ds;
    uint64_t *digests;
    int from, step;
} worker_arg;

static void *sample_range(void *p) {
    worker_arg *a = p;
    uint8_t gtb[3 * 16 * 16 * 3], lqb[3 * 8 * 8 * 3];
    char err[512];
    for (int i = (int)a->ds->len - 1 - a->from; i >= 0; i -= a->step) {
        if (pf_video_dataset_sample(a->ds, (uint32_t)i, 11, 2, gtb, lqb, NULL, NULL, err,
                                    sizeof err) == 0)
            a->digests[i] = pf_fnv1a64(lqb, sizeof lqb, pf_fnv1a64(gtb, sizeof gtb, PF_FNV_OFFSET));
    }
    return NULL;
}

static void test_determinism(void) {
    char gt[300], lq[300], err[1024];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    pf_dataset_cfg c = base_cfg(gt, lq);
    c.use_hflip = c.use_rot = c.random_reverse = 1;
    pf_video_dataset a, b;
    CHECK(pf_video_dataset_open(&a, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(pf_video_dataset_open(&b, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    if (!a.clips || !b.clips) return;
    pf_video_dataset_set_cache_limit(&b, 0);
    uint64_t seq[64] = { 0 }, warm[64] = { 0 }, par[64] = { 0 };
    worker_arg one = { &a, seq, 0, 1 };
    sample_range(&one);   /* cold */
    worker_arg again = { &a, warm, 0, 1 };
    sample_range(&again); /* warm */
    worker_arg w0 = { &b, par, 0, 2 }, w1 = { &b, par, 1, 2 };
    pthread_t t0, t1;
    pthread_create(&t0, NULL, sample_range, &w0);
    pthread_create(&t1, NULL, sample_range, &w1);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    int same = 0;
    for (uint32_t i = 0; i < a.len; i++) same += seq[i] && seq[i] == warm[i] && seq[i] == par[i];
    CHECK(same == (int)a.len, "%d of %u samples identical cold / warm / no cache, 2 threads",
          same, a.len);
    pf_cache_stats st;
    pf_video_dataset_cache_stats(&b, &st);
    printf("determinism: %u samples identical cold, warm, and with a 0-byte cache from 2 "
           "threads (%llu decodes there)\n", a.len, (unsigned long long)st.misses);
    pf_video_dataset_close(&a);
    pf_video_dataset_close(&b);
}

/* LQ made from GT (BI, then BD 7x7 sigma 1.6): a set whose cache holds every frame keeps each
   frame's whole LQ and crops it; one with a 0-byte cache downscales each sample's LQ patch
   alone (pf_degrade_downscale_region). Every sample's bytes must be the same both ways. */
static void test_lq_per_patch(void) {
    char gt[300], err[1024];
    snprintf(gt, sizeof gt, "%s/gt", root);
    static const char *types[] = { "BI", "BD" };
    for (int k = 0; k < 2; k++) {
        pf_dataset_cfg c = base_cfg(gt, NULL);
        c.use_hflip = c.use_rot = c.random_reverse = 1;
        snprintf(c.degradation[0].type, sizeof c.degradation[0].type, "%s", types[k]);
        c.degradation[0].kernel_size = 7;
        c.degradation[0].sigma = 1.6f;
        c.n_degradations = 1;
        pf_video_dataset a, b;
        CHECK(pf_video_dataset_open(&a, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s",
              err);
        CHECK(pf_video_dataset_open(&b, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s",
              err);
        if (!a.clips || !b.clips) return;
        pf_video_dataset_set_cache_limit(&b, 0);
        uint64_t whole[64] = { 0 }, patch[64] = { 0 };
        worker_arg wa = { &a, whole, 0, 1 }, wb = { &b, patch, 0, 1 };
        sample_range(&wa);
        sample_range(&wb);
        int same = 0, with_lq = 0;
        for (uint32_t i = 0; i < a.len; i++) same += whole[i] && whole[i] == patch[i];
        for (uint32_t e = 0; e < a.n_frames; e++) with_lq += a.cache.entries[e].lq.data != NULL;
        CHECK(a.len > 8 && same == (int)a.len && with_lq == (int)a.n_frames,
              "%s: %d of %u samples identical from whole-frame LQ (%d of %u frames cached with "
              "LQ) and per-patch LQ", types[k], same, a.len, with_lq, a.n_frames);
        printf("%s made from GT: %u samples identical from the cached whole-frame LQ and from "
               "per-patch LQ (0-byte cache)\n", types[k], a.len);
        pf_video_dataset_close(&a);
        pf_video_dataset_close(&b);
    }
}

/* Held-out check (pf_video_dataset_check_held_out, run by the coordinator at start-up): a
   training set of every clip in gt_folder (no clips listed, so config.c cannot see it) and an
   eval set listing clipA frames [2, 9) from the same folder named another way ("gt/."): an
   error naming both clips and ranges; with clipA in val_partition, or eval frames the training
   clips do not cover, none. */
static void test_held_out(void) {
    char gt[300], gt2[310], err[1024];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(gt2, sizeof gt2, "%s/gt/.", root);
    pf_dataset_cfg tc = base_cfg(gt, NULL), ec;
    memset(&ec, 0, sizeof ec);
    snprintf(ec.type, sizeof ec.type, "VideoRecurrentTestDataset");
    snprintf(ec.gt_folder, sizeof ec.gt_folder, "%s", gt2);
    snprintf(ec.clips[0].name, sizeof ec.clips[0].name, "clipA");
    ec.clips[0].frames[0] = 2;
    ec.clips[0].frames[1] = 9;
    ec.n_clips = 1;
    pf_video_dataset t, e, t2;
    CHECK(pf_video_dataset_open(&t, &tc, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(pf_video_dataset_open(&e, &ec, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (!t.clips || !e.clips) return;
    err[0] = '\0';
    int rc = pf_video_dataset_check_held_out(&t, &e, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "data.eval: clip 'clipA' frames [2, 9) are trained on: "
                             "data.train clip 'clipA' samples frames [0, 12)"),
          "eval frames inside the training clips: rc %d, '%s'", rc, err);
    printf("held out: %s\n", err);
    snprintf(tc.val_partition[0], sizeof tc.val_partition[0], "clipA");
    tc.n_val_partition = 1;
    CHECK(pf_video_dataset_open(&t2, &tc, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    if (t2.clips) {
        CHECK(pf_video_dataset_check_held_out(&t2, &e, err, sizeof err) == 0,
              "clipA held out by val_partition, still refused: %s", err);
        pf_video_dataset_close(&t2);
    }
    pf_video_dataset_close(&t);
    /* train on clipA frames [0, 6) only: eval [6, 12) is disjoint, [5, 12) is not */
    tc.n_val_partition = 0;
    snprintf(tc.clips[0].name, sizeof tc.clips[0].name, "clipA");
    tc.clips[0].frames[0] = 0;
    tc.clips[0].frames[1] = 6;
    tc.n_clips = 1;
    CHECK(pf_video_dataset_open(&t, &tc, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    pf_video_dataset_close(&e);
    ec.clips[0].frames[0] = 6;
    ec.clips[0].frames[1] = 12;
    CHECK(pf_video_dataset_open(&e, &ec, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (t.clips && e.clips)
        CHECK(pf_video_dataset_check_held_out(&t, &e, err, sizeof err) == 0,
              "disjoint ranges [0, 6) and [6, 12) refused: %s", err);
    pf_video_dataset_close(&e);
    ec.clips[0].frames[0] = 5;
    CHECK(pf_video_dataset_open(&e, &ec, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (t.clips && e.clips)
        CHECK(pf_video_dataset_check_held_out(&t, &e, err, sizeof err) == -1,
              "ranges [0, 6) and [5, 12) share frame 5, accepted");
    pf_video_dataset_close(&e);
    pf_video_dataset_close(&t);
}

/* Part 3: a lossy MPEG-4 clip read as video and as the ffmpeg CLI's PNG dump. */
static void test_video_vs_frames(void) {
    char cmd[2048], vdir[300], fdir[300], err[1024];
    snprintf(vdir, sizeof vdir, "%s/vid", root);
    snprintf(fdir, sizeof fdir, "%s/vidframes", root);
    mkdir(vdir, 0755);
    mkdir(fdir, 0755);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -nostdin -f rawvideo -pix_fmt rgb24 -s %dx%d "
             "-r 10 -i %s/clipC.rgb -c:v mpeg4 -q:v 4 -bf 2 -g 5 %s/m.avi && ffmpeg -v error -nostdin "
             "-i %s/m.avi -pix_fmt rgb24 -start_number 0 %s/m/%%08d.png", GW, GH, root, vdir,
             vdir, fdir);
    char mdir[400];
    snprintf(mdir, sizeof mdir, "%s/m", fdir);
    mkdir(mdir, 0755);
    run(cmd);
    pf_dataset_cfg cv = base_cfg(vdir, NULL), cf = base_cfg(fdir, NULL);
    cv.use_hflip = cf.use_hflip = cv.use_rot = cf.use_rot = 1;
    pf_video_dataset a, b;
    CHECK(pf_video_dataset_open(&a, &cv, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    CHECK(pf_video_dataset_open(&b, &cf, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    if (!a.clips || !b.clips) return;
    CHECK(a.len == NF && b.len == NF, "lengths %u %u", a.len, b.len);
    uint8_t g1[3 * 768], l1[3 * 192], g2[3 * 768], l2[3 * 192];
    int same = 0, n = 3 * NF;
    for (int i = 0; i < n; i++) {
        uint32_t idx = (uint32_t)((i * 7) % NF);
        int r1 = pf_video_dataset_sample(&a, idx, 5, (uint32_t)i, g1, l1, NULL, NULL, err,
                                         sizeof err);
        CHECK(r1 == 0, "%s", err);
        int r2 = pf_video_dataset_sample(&b, idx, 5, (uint32_t)i, g2, l2, NULL, NULL, err,
                                         sizeof err);
        CHECK(r2 == 0, "%s", err);
        same += !r1 && !r2 && !memcmp(g1, g2, sizeof g1) && !memcmp(l1, l2, sizeof l1);
    }
    CHECK(same == n, "%d of %d samples from m.avi equal those of its ffmpeg PNG dump", same, n);
    printf("video vs frames: %d samples of an MPEG-4 AVI (B-frames, shuffled order) equal the "
           "ffmpeg CLI's PNG dump of it\n", same);
    pf_video_dataset_close(&a);
    pf_video_dataset_close(&b);

    /* The lossless clip: frames equal the raw frames (part 1's clipC, GT side) */
    char gt[300];
    snprintf(gt, sizeof gt, "%s/gt", root);
    pf_dataset_cfg ce = base_cfg(gt, NULL);
    snprintf(ce.type, sizeof ce.type, "VideoRecurrentTestDataset");
    snprintf(ce.clips[0].name, sizeof ce.clips[0].name, "clipC.mkv");
    ce.clips[0].frames[0] = 2;
    ce.clips[0].frames[1] = 9;
    ce.clips[0].crop[0] = 10;
    ce.clips[0].crop[1] = 4;
    ce.clips[0].crop[2] = 40;
    ce.clips[0].crop[3] = 30;
    ce.n_clips = 1;
    CHECK(pf_video_dataset_open(&a, &ce, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (!a.clips) return;
    CHECK(a.len == 1 && a.clips[0].n_frames == 7 && a.clips[0].gt_w == 40 &&
          a.clips[0].lq_h == 15, "eval clip: %u clips, %d frames, %dx%d", a.len,
          a.clips[0].n_frames, a.clips[0].gt_w, a.clips[0].gt_h);
    int exact = 0, bi = 0;
    uint8_t ref[GW * GH * 3];
    for (int t = 0; t < 7; t++) {
        const pf_image *g, *l;
        if (pf_video_dataset_frame(&a, 0, t, &g, &l, err, sizeof err)) {
            CHECK(0, "%s", err);
            break;
        }
        frame_px(2, t + 2, 0, GW, GH, ref);
        int eq = g->w == 40 && g->h == 30;
        for (int y = 0; eq && y < 30; y++)
            eq = !memcmp(g->data + (size_t)y * 40 * 3, ref + ((size_t)(y + 4) * GW + 10) * 3,
                         40 * 3);
        exact += eq;
        uint8_t down[20 * 15 * 3];
        static const pf_degradation bi_step = { .type = "BI" };
        pf_degrade_downscale(&bi_step, g->data, 30, 40, 2, down);
        bi += l->w == 20 && l->h == 15 && !memcmp(l->data, down, sizeof down);
        pf_video_dataset_release(&a, 0, t);
    }
    CHECK(exact == 7 && bi == 7, "FFV1 crop frames: %d of 7 equal the raw frames, %d of 7 LQ "
          "are BI of them", exact, bi);
    printf("FFV1 clip, frames [2, 9), crop [10, 4, 40, 30]: %d of 7 GT frames equal the raw "
           "frames, LQ BI of them\n", exact);
    pf_video_dataset_close(&a);
}

/* Open `c` and check it fails with every one of the words. */
static void expect_error(const pf_dataset_cfg *c, int patch, const char *what, const char *w1,
                         const char *w2) {
    pf_video_dataset ds;
    char err[1024] = "";
    int rc = pf_video_dataset_open(&ds, c, "data.train", 2, patch, err, sizeof err);
    CHECK(rc == -1 && strstr(err, w1) && (!w2 || strstr(err, w2)), "%s: rc %d, '%s'", what, rc,
          err);
    if (rc == 0) pf_video_dataset_close(&ds);
    printf("  %s: %s\n", what, err);
}

static void test_errors(void) {
    char gt[300], lq[300], dir[400], path[600], err[1024], cmd[1400];
    printf("errors:\n");
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    pf_dataset_cfg c = base_cfg(gt, lq);
    c.num_frame = 5;
    c.interval_list[0] = 3;
    expect_error(&c, 16, "too short", "clipA", "needs 15");

    c = base_cfg(gt, lq);
    snprintf(c.val_partition[0], sizeof c.val_partition[0], "nosuch");
    c.n_val_partition = 1;
    expect_error(&c, 16, "val_partition", "val_partition", "nosuch");

    c = base_cfg(gt, lq);
    snprintf(c.clips[0].name, sizeof c.clips[0].name, "clipA");
    c.clips[0].frames[0] = 4;
    c.clips[0].frames[1] = 20;
    c.n_clips = 1;
    expect_error(&c, 16, "frames out of range", "clipA", "has 12");
    c.clips[0].frames[1] = 0;
    c.clips[0].crop[0] = 3;
    c.clips[0].crop[2] = 20;
    c.clips[0].crop[3] = 20;
    expect_error(&c, 0, "odd crop", "clipA", "multiples");

    /* a missing numbered frame; frames of two sizes; LQ of the wrong size */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/bad/gapped %s/bad/sizes %s/badlq/sizes && "
             "cp %s/gt/clipA/*.png %s/bad/gapped/ && rm %s/bad/gapped/00000006.png && "
             "cp %s/gt/clipA/*.png %s/bad/sizes/ && cp %s/gt/clipA/*.png %s/badlq/sizes/",
             root, root, root, root, root, root, root, root, root, root);
    run(cmd);
    snprintf(dir, sizeof dir, "%s/bad", root);
    c = base_cfg(dir, NULL);
    snprintf(c.clips[0].name, sizeof c.clips[0].name, "gapped");
    c.n_clips = 1;
    expect_error(&c, 16, "missing frame", "gapped", "frame 6 missing");
    uint8_t small[40 * 30 * 3] = { 0 };
    snprintf(path, sizeof path, "%s/bad/sizes/00000004.png", root);
    pf_image_write_png(path, small, 40, 30, err, sizeof err);
    snprintf(c.clips[0].name, sizeof c.clips[0].name, "sizes");
    expect_error(&c, 16, "two sizes", "sizes' frame 4", "40x30");
    snprintf(path, sizeof path, "%s/bad/sizes/00000004.png", root);
    snprintf(cmd, sizeof cmd, "cp %s/gt/clipA/00000004.png %s", root, path);
    run(cmd);
    snprintf(dir, sizeof dir, "%s/badlq", root);
    snprintf(c.lq_folder, sizeof c.lq_folder, "%s", dir);
    expect_error(&c, 16, "LQ size", "sizes", "LQ frames are");

    /* a corrupt frame in a video: FFV1 slice CRC, found when a sample reads it */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/dmg && ffmpeg -v error -nostdin -f rawvideo "
             "-pix_fmt rgb24 -s %dx%d -r 10 -i %s/clipC.rgb -c:v ffv1 -level 3 -slicecrc 1 "
             "-pix_fmt bgr0 %s/dmg/d.mkv", root, GW, GH, root, root);
    run(cmd);
    /* ffprobe prints a packet's size, then its position */
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries "
             "packet=pos,size -of csv=p=0 %s/dmg/d.mkv | sed -n 8p", root);
    FILE *p = popen(cmd, "r");
    long pos = -1, size = 0;
    if (p) {
        if (fscanf(p, "%ld,%ld", &size, &pos) != 2) pos = -1;
        pclose(p);
    }
    snprintf(path, sizeof path, "%s/dmg/d.mkv", root);
    size_t len;
    char *data = pf_read_file(path, &len, err, sizeof err);
    CHECK(data && pos > 0 && size > 64 && (size_t)(pos + size) <= len, "packet 7 at %ld, %ld "
          "bytes", pos, size);
    if (!data || pos <= 0 || size <= 64) return;
    for (long j = size / 3; j < size / 3 + 16; j++) data[pos + j] ^= 0x5a;
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
    free(data);
    snprintf(dir, sizeof dir, "%s/dmg", root);
    c = base_cfg(dir, NULL);
    pf_video_dataset ds;
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, 16, err, sizeof err) == 0, "%s", err);
    if (!ds.clips) return;
    uint8_t g[3 * 768], l[3 * 192];
    int failed = 0, good = 0;
    for (uint32_t i = 0; i < ds.len; i++) {
        int frames[3];
        int rc = pf_video_dataset_sample(&ds, i, 1, 0, g, l, NULL, frames, err, sizeof err);
        if (rc == 0) {
            good++;
            CHECK(frames[0] > 7 || frames[2] < 7, "sample %u with frame 7 read", i);
        } else {
            failed++;
            CHECK(strstr(err, "d.mkv") && strstr(err, "frame 7") && strstr(err, "corrupt"),
                  "corrupt frame: '%s'", err);
            if (failed == 1) printf("  corrupt video frame: %s\n", err);
        }
    }
    CHECK(failed >= 1 && good >= 1, "%d samples failed, %d read", failed, good);
    pf_video_dataset_close(&ds);
}

/* EDVR's sliding windows (issue 42).
   REDSDataset: num_frame 5, interval_list [1, 2], random_reverse, flips, 600 samples: every LQ
   frame shows one crop and one orientation (the pixels' coordinates), the frames step by one
   interval around the middle one, the GT is the middle frame only (its pixels, 2x the LQ's
   coordinates), the center is the index's frame when its window fits (BasicSR's rule) and
   otherwise a center whose window fits, every such center drawn; about half reversed, every
   orientation seen; sample_where's center and frames agree with the pixels; 1 GT frame of
   bytes, 5 of LQ; the same bytes from a second instance with a 0-byte cache, read backwards;
   through pf_dataset: frames 5, gt_frames 1, and the loaders' batch builder (3 threads,
   gt_plain on, reverse order) puts each sample's bytes in its slot. Errors: num_frame even, a clip too short for
   (num_frame - 1) x max interval + 1, each type in the other role.
   VideoTestDataset: 36 windows (3 clips x 12 frames), each read back (pf_video_window_read):
   its LQ frames by their pixels are BasicSR's reflection_circle windows (hand-written ends:
   frame 0 -> 4 3 0 1 2, frame 11 -> 9 10 11 8 7), its GT the frame itself; a 3-frame clip
   refused with reflection_circle, read with replicate (0 0 0 1 2 ... 0 1 2 2 2). */
static void test_window_sets(void) {
    char gt[300], lq[300], err[1024];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    pf_dataset_cfg c = base_cfg(gt, lq);
    snprintf(c.type, sizeof c.type, "REDSDataset");
    c.num_frame = 5;
    c.interval_list[1] = 2;
    c.n_intervals = 2;
    c.random_reverse = c.use_hflip = c.use_rot = 1;
    enum { P = 16, p = 8, T = 5, N = 600 };
    pf_video_dataset ds, cold;
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    CHECK(pf_video_dataset_open(&cold, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    if (!ds.clips || !cold.clips) return;
    pf_video_dataset_set_cache_limit(&cold, 0);
    CHECK(pf_video_sample_gt_bytes(&ds) == P * P * 3 && pf_video_sample_lq_bytes(&ds) ==
          T * p * p * 3, "sample bytes %zu / %zu", pf_video_sample_gt_bytes(&ds),
          pf_video_sample_lq_bytes(&ds));
    static uint8_t gtb[N][P * P * 3], lqb[N][T * p * p * 3];
    int bad = 0, rule = 0, reversed = 0, orients[8] = {0}, redrawn[2][NF] = {{0}};
    for (int i = 0; i < N; i++) {
        uint32_t index = (uint32_t)(i % ds.len), epoch = (uint32_t)(i / ds.len);
        int clip, frames[T];
        pf_video_where w;
        if (pf_video_dataset_sample(&ds, index, 5, epoch, gtb[i], lqb[i], &clip, frames, err,
                                    sizeof err) != 0 ||
            pf_video_dataset_sample_where(&ds, index, 5, epoch, &w, NULL, err, sizeof err)) {
            CHECK(0, "sample %u: %s", index, err);
            break;
        }
        int ok = 1, f[T];
        for (int t = 0; t < T; t++) {
            const uint8_t *l = lqb[i] + (size_t)t * p * p * 3;
            f[t] = l[2] / 20;
            ok &= l[2] % 20 == clip && f[t] == frames[t];
            for (int k = 0; k < p * p; k++)   /* one frame; the crop and flips of frame 0 */
                ok &= l[k * 3 + 2] == l[2] && l[k * 3] == lqb[i][k * 3] &&
                      l[k * 3 + 1] == lqb[i][k * 3 + 1];
        }
        int step = f[1] - f[0], iv = abs(step), center = f[T / 2];
        for (int t = 1; t < T; t++) ok &= f[t] - f[t - 1] == step;
        ok &= (iv == 1 || iv == 2) && w.center == center && w.interval == iv &&
              ds.clips[w.clip].first + w.center == center;
        seen g = decode(gtb[i], lqb[i] + (size_t)(T / 2) * p * p * 3, 1, P);   /* GT = center */
        ok &= g.ok && g.frames[0] == center && g.clip == clip;
        int f0 = (int)(index % NF), fits = f0 - 2 * iv >= 0 && f0 + 2 * iv <= NF - 1;
        if (fits) rule += center == f0;
        else {
            rule += center - 2 * iv >= 0 && center + 2 * iv <= NF - 1;
            redrawn[iv - 1][center]++;
        }
        bad += !ok;
        reversed += step < 0;
        orients[g.orient]++;
    }
    CHECK(bad == 0, "%d of %d REDSDataset samples with frames or pixels out of place", bad, N);
    CHECK(rule == N, "%d of %d centers where BasicSR's rule puts them", rule, N);
    int every = 1;   /* interval 1: centers 2..9 fit; interval 2: 4..7 */
    for (int k = 0; k < NF; k++) {
        every &= (redrawn[0][k] > 0) == (k >= 2 && k <= 9);
        every &= (redrawn[1][k] > 0) == (k >= 4 && k <= 7);
    }
    CHECK(every, "redrawn centers: interval 1 %d..%d, interval 2 %d..%d", redrawn[0][2],
          redrawn[0][9], redrawn[1][4], redrawn[1][7]);
    int all = 1;
    for (int o = 0; o < 8; o++) all &= orients[o] > N / 16;
    CHECK(all, "orientations %d %d %d %d %d %d %d %d", orients[0], orients[1], orients[2],
          orients[3], orients[4], orients[5], orients[6], orients[7]);
    CHECK(reversed > N * 35 / 100 && reversed < N * 65 / 100, "%d of %d reversed", reversed, N);
    int same = 0;
    for (int i = N - 1; i >= 0; i--) {
        uint8_t g2[P * P * 3], l2[T * p * p * 3];
        if (pf_video_dataset_sample(&cold, (uint32_t)(i % ds.len), 5, (uint32_t)(i / ds.len), g2,
                                    l2, NULL, NULL, err, sizeof err) == 0)
            same += !memcmp(g2, gtb[i], sizeof g2) && !memcmp(l2, lqb[i], sizeof l2);
    }
    CHECK(same == N, "%d of %d samples identical with a 0-byte cache, read backwards", same, N);
    printf("REDSDataset: %d samples, LQ windows and center GT in place, %d reversed, redrawn "
           "centers all in range; same bytes cold\n", N, reversed);
    pf_video_dataset_close(&ds);
    pf_video_dataset_close(&cold);
    pf_dataset pds;
    CHECK(pf_dataset_open(&pds, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    if (pds.video) {
        CHECK(pds.frames == T && pds.gt_frames == 1, "pf_dataset frames %d gt_frames %d",
              pds.frames, pds.gt_frames);
        /* the loaders' path: a batch of epoch 0's samples in reverse order from 3 threads,
           with the gt_plain frame on: every slot the sample's bytes (1 GT, 5 LQ patches) */
        pds.cfg.gt_plain = 1;
        pf_batch_builder *b = pf_batch_builder_new(&pds, 3, err, sizeof err);
        CHECK(b != NULL, "%s", err);
        size_t gs = 0, ls = 0;
        if (b) pf_batch_builder_sample_sizes(b, &gs, &ls);
        CHECK(gs == P * P * 3 && ls == T * p * p * 3, "builder sample sizes %zu %zu", gs, ls);
        static uint8_t bg[NF * 3][P * P * 3], bl[NF * 3][T * p * p * 3], bp[NF * 3][P * P * 3];
        uint32_t idx[NF * 3], nb = pds.len < NF * 3 ? pds.len : NF * 3, right = 0;
        for (uint32_t i = 0; i < nb; i++) idx[i] = nb - 1 - i;
        if (b && pf_batch_builder_fill(b, 5, 0, idx, nb, bg[0], bl[0], bp[0]) == 0)
            for (uint32_t i = 0; i < nb; i++)
                right += !memcmp(bg[i], gtb[idx[i]], gs) && !memcmp(bl[i], lqb[idx[i]], ls) &&
                         !memcmp(bp[i], gtb[idx[i]], gs);
        CHECK(nb == NF * 3 && right == nb, "%u of %u batch slots hold their sample", right, nb);
        pf_batch_builder_destroy(&b);
        pf_dataset_close(&pds);
    }
    /* errors */
    c.num_frame = 4;
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == -1 &&
          strstr(err, "data.train.num_frame: REDSDataset takes an odd num_frame"), "even: %s",
          err);
    c.num_frame = 7;   /* (7 - 1) x 2 + 1 = 13 > 12 frames */
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == -1 &&
          strstr(err, "clip 'clipA' has 12 frames; num_frame 7 with interval 2 needs 13"),
          "short: %s", err);
    c.n_intervals = 1;   /* (7 - 1) x 1 + 1 = 7: fits */
    CHECK(pf_video_dataset_open(&ds, &c, "data.train", 2, P, err, sizeof err) == 0, "%s", err);
    if (ds.clips) pf_video_dataset_close(&ds);
    CHECK(pf_video_dataset_open(&ds, &c, "data.eval", 2, 0, err, sizeof err) == -1 &&
          strstr(err, "data.eval.type: REDSDataset is a training set"), "REDS eval: %s", err);

    /* VideoTestDataset */
    pf_dataset_cfg e = base_cfg(gt, lq);
    snprintf(e.type, sizeof e.type, "VideoTestDataset");
    e.num_frame = 5;
    snprintf(e.padding, sizeof e.padding, "reflection_circle");
    CHECK(pf_video_dataset_open(&ds, &e, "data.train", 2, P, err, sizeof err) == -1 &&
          strstr(err, "VideoTestDataset is an evaluation"), "VideoTestDataset train: %s", err);
    CHECK(pf_video_dataset_open(&ds, &e, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (!ds.clips) return;
    static uint8_t wl[T * (GW / 2) * (GH / 2) * 3], wg[GW * GH * 3], want_g[GW * GH * 3];
    int wrong = 0, n = 0;
    for (uint32_t i = 0; i < ds.n_frames; i++, n++) {
        int clip, frame, idx[T], want[T];
        if (pf_video_window(&ds, i, &clip, &frame, idx, err, sizeof err) != 0 ||
            pf_video_window_read(&ds, i, wl, wg, err, sizeof err) != 0) {
            CHECK(0, "window %u: %s", i, err);
            break;
        }
        for (int k = 0; k < T; k++) want[k] = frame - 2 + k;   /* inside the clip */
        if (frame == 0) memcpy(want, (int[]){4, 3, 0, 1, 2}, sizeof want);
        if (frame == 1) memcpy(want, (int[]){4, 0, 1, 2, 3}, sizeof want);
        if (frame == 10) memcpy(want, (int[]){8, 9, 10, 11, 7}, sizeof want);
        if (frame == 11) memcpy(want, (int[]){9, 10, 11, 8, 7}, sizeof want);
        int ok = clip == (int)(i / NF) && frame == (int)(i % NF);
        for (int k = 0; k < T; k++)
            ok &= idx[k] == want[k] &&
                  wl[(size_t)k * (GW / 2) * (GH / 2) * 3 + 2] == 20 * want[k] + clip;
        frame_px(clip, frame, 0, GW, GH, want_g);
        ok &= !memcmp(wg, want_g, sizeof wg);
        wrong += !ok;
    }
    CHECK(n == 3 * NF && wrong == 0, "%d of %d windows wrong", wrong, n);
    CHECK(pf_video_window(&ds, ds.n_frames, &(int){0}, &(int){0}, (int[T]){0}, err,
                          sizeof err) == -1, "window out of range");
    printf("VideoTestDataset: %d windows (reflection_circle) read back as BasicSR's\n", n);
    pf_video_dataset_close(&ds);
    e.clips[0] = (pf_clip_cfg){ .name = "clipA", .frames = {4, 7} };
    e.n_clips = 1;
    CHECK(pf_video_dataset_open(&ds, &e, "data.eval", 2, 0, err, sizeof err) == -1 &&
          strstr(err, "clip 'clipA' has 3 frames; num_frame 5 with padding reflection_circle "
                 "needs 5"), "short eval clip: %s", err);
    snprintf(e.padding, sizeof e.padding, "replicate");
    CHECK(pf_video_dataset_open(&ds, &e, "data.eval", 2, 0, err, sizeof err) == 0, "%s", err);
    if (!ds.clips) return;
    int rep[3][T] = {{0, 0, 0, 1, 2}, {0, 0, 1, 2, 2}, {0, 1, 2, 2, 2}}, rep_ok = 0;
    for (uint32_t i = 0; i < 3; i++) {
        if (pf_video_window_read(&ds, i, wl, wg, err, sizeof err) != 0) break;
        int ok = wg[2] == 20 * (4 + (int)i);   /* GT: source frame 4 + i */
        for (int k = 0; k < T; k++)
            ok &= wl[(size_t)k * (GW / 2) * (GH / 2) * 3 + 2] == 20 * (4 + rep[i][k]);
        rep_ok += ok;
    }
    CHECK(rep_ok == 3, "replicate on a 3-frame clip: %d of 3 windows right", rep_ok);
    pf_video_dataset_close(&ds);
}

int main(void) {
    if (system("command -v ffmpeg >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_video_dataset: no ffmpeg on PATH (bash scripts/setup.sh "
                        "--test-deps installs it)\n");
        return 1;
    }
    av_log_set_level(AV_LOG_QUIET);   /* the damaged clip's CRC complaints (still caught) */
    if (!mkdtemp(root)) return 1;
    char cmd[1024], raw[400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/gt %s/lq", root, root);
    run(cmd);
    make_clip_folders("clipA", 0, NF, NULL);
    make_clip_folders("clipB", 1, NF, NULL);
    snprintf(raw, sizeof raw, "%s/clipC.rgb", root);
    make_clip_folders("clipC", 2, NF, raw);
    /* clipC as lossless FFV1 video in gt/ and lq/ (bgr0 holds RGB exactly); the folders go */
    snprintf(cmd, sizeof cmd, "cd %s && ffmpeg -v error -nostdin -f rawvideo -pix_fmt rgb24 "
             "-s %dx%d -r 10 -i clipC.rgb -c:v ffv1 -pix_fmt bgr0 gt/clipC.mkv && "
             "ffmpeg -v error -nostdin -i lq/clipC/%%08d.png -c:v ffv1 -pix_fmt bgr0 lq/clipC.mkv "
             "&& rm -r gt/clipC lq/clipC", root, GW, GH);
    run(cmd);
    test_coordinates();
    test_determinism();
    test_lq_per_patch();
    test_held_out();
    test_video_vs_frames();
    test_errors();
    test_window_sets();
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    run(cmd);
    return pf_test_end("test_video_dataset");
}
