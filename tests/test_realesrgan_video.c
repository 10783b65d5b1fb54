/*  test_realesrgan_video — RealESRGANVideoDataset (common/video_dataset.h):
    REDSRecurrentDataset's samples with their LQ made by Real-ESRGAN's pipeline, one draw per
    sample for all frames.

    Three clips of 8 PNG frames written here (128 x 112, x4, patch 96; clip "still" has one
    picture in every frame), num_frame 3, interval_list [1, 2], random_reverse, use_hflip,
    use_rot; every sample of two epochs:
      (a) its GT frames, clip and source frames equal REDSRecurrentDataset's (BI, no lq_folder)
          for the same (seed, epoch, index); with gt_usm each GT frame is that frame
          USM-sharpened and the LQ is made from the sharpened frames (BasicSR's
          RealESRNetModel degrades the USM GT);
      (b) LQ frame t equals pf_realesrgan_degrade_u8 (the image path, parity-tested against
          PyTorch) on REDS's GT frame t with the parameters drawn here from
          pf_dataset_degrade_key(seed, epoch, index) and the noise key replaced by frame t's
          (the formula restated here);
      (c) with the noise off (Gaussian of sigma 0 in both stages) the LQ frames of a "still"
          sample are identical (one draw for all frames); with the noise on they differ, and
          only by the noise: stage 1's noise input (after blur and resize) is the same image
          for every frame while the noise draws differ;
      (d) a second instance with a cache of 0 bytes, sampling from 2 threads in another order,
          gives the same bytes;
      (e) gt_plain (issue 41): with gt_usm, pf_video_dataset_sample_gt_plain's T plain frames
          are the GT frames of the same set without gt_usm, and its GT and LQ frames those of
          pf_video_dataset_sample; without gt_usm the plain frames are the GT frames.
    Errors: lq_folder, a `degradation` step, an evaluation set, a patch the pipeline cannot
    take, each refused naming the key.
*/
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/image.h"
#include "common/patch.h"
#include "common/realesrgan_cfg.h"
#include "common/realesrgan_ops.h"
#include "common/realesrgan_pipeline.h"
#include "common/rng.h"
#include "common/util.h"
#include "common/video_dataset.h"
#include "pf_test.h"

#define GW 128
#define GH 112
#define NF 8
#define T 3
#define P 96
#define SCALE 4
#define LP (P / SCALE)
#define GT_BYTES ((size_t)P * P * 3)
#define LQ_BYTES ((size_t)LP * LP * 3)
#define SEED 1234u

static char root[] = "/tmp/pf_test_resrv.XXXXXX";
static const char *clip_names[3] = { "clipA", "clipB", "still" };

/* Frame k of clip c: smooth texture plus fine detail, moving with k (not for "still"). */
static void frame_px(int c, int k, uint8_t *px) {
    int m = c == 2 ? 0 : k;
    for (int y = 0; y < GH; y++)
        for (int x = 0; x < GW; x++)
            for (int ch = 0; ch < 3; ch++) {
                double v = 128 + 70 * sin(0.11 * (x + 3 * m) + 0.7 * ch + c) *
                                     cos(0.07 * (y - 2 * m) + 0.3 * c) +
                           25 * (((x * 7 + y * 13 + ch * 5 + m) % 11) - 5) / 5.0;
                px[((size_t)y * GW + x) * 3 + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

static int make_clips(void) {
    char dir[600], path[700], err[256];
    static uint8_t px[GW * GH * 3];
    for (int c = 0; c < 3; c++) {
        snprintf(dir, sizeof dir, "mkdir -p %s/gt/%s", root, clip_names[c]);
        if (system(dir) != 0) return -1;
        for (int k = 0; k < NF; k++) {
            frame_px(c, k, px);
            snprintf(path, sizeof path, "%s/gt/%s/%08d.png", root, clip_names[c], k);
            if (pf_image_write_png(path, px, GW, GH, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return -1;
            }
        }
    }
    return 0;
}

/* The dataset block as the parser leaves it for a set without lq_folder (default BI). */
static pf_dataset_cfg base_cfg(const char *type) {
    pf_dataset_cfg c;
    memset(&c, 0, sizeof c);
    snprintf(c.type, sizeof c.type, "%s", type);
    snprintf(c.gt_folder, sizeof c.gt_folder, "%s/gt", root);
    c.n_degradations = 1;
    snprintf(c.degradation[0].type, sizeof c.degradation[0].type, "BI");
    c.num_frame = T;
    c.interval_list[0] = 1;
    c.interval_list[1] = 2;
    c.n_intervals = 2;
    c.repeat = 1;
    c.random_reverse = c.use_hflip = c.use_rot = 1;
    pf_realesrgan_opts_default(&c.realesrgan);     /* the rows' defaults */
    return c;
}

static int open_cfg(pf_video_dataset *ds, const pf_dataset_cfg *c) {
    char err[1024] = "";
    int rc = pf_video_dataset_open(ds, c, "data.train", SCALE, P, err, sizeof err);
    CHECK(rc == 0, "open %s: %s", c->type, err);
    return rc;
}

static int open_set(pf_video_dataset *ds, const char *type, int gt_usm) {
    pf_dataset_cfg c = base_cfg(type);
    c.gt_usm = gt_usm;
    return open_cfg(ds, &c);
}

/* One sample of ds: bytes, clip, source frames. */
typedef struct {
    uint8_t gt[T * GT_BYTES], lq[T * LQ_BYTES];
    int clip, frames[T];
} sample;

static int take(pf_video_dataset *ds, uint32_t i, uint32_t epoch, sample *s) {
    char err[1024] = "";
    int rc = pf_video_dataset_sample(ds, i, SEED, epoch, s->gt, s->lq, &s->clip, s->frames, err,
                                     sizeof err);
    CHECK(rc == 0, "sample %u: %s", i, err);
    return rc;
}

/* (b): LQ frame t against the image pipeline on REDS's GT frame t, noise keyed per frame. */
static int lq_matches(const pf_realesrgan_opts *o, uint32_t i, uint32_t epoch,
                      const uint8_t *reds_gt, const uint8_t *lq) {
    uint64_t key = pf_dataset_degrade_key(SEED, epoch, i);
    pf_realesrgan_params p;
    pf_realesrgan_draw(o, key, &p);
    uint8_t want[LQ_BYTES];
    char err[512] = "";
    int ok = 1;
    for (int t = 0; t < T; t++) {
        uint64_t kt = pf_mix64(key ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1)));
        CHECK(pf_realesrgan_frame_key(key, t) == kt, "frame key %d", t);
        pf_realesrgan_params pt = p;
        pt.key = kt;
        if (pf_realesrgan_degrade_u8(o, &pt, reds_gt + t * GT_BYTES, P, P, want, NULL, err,
                                     sizeof err) != 0) {
            CHECK(0, "pipeline: %s", err);
            return 0;
        }
        ok &= memcmp(want, lq + t * LQ_BYTES, LQ_BYTES) == 0;
    }
    return ok;
}

/* (a) and (b) over two epochs; (a) with gt_usm too. */
static void test_against_reds(void) {
    pf_video_dataset reds, resr, usm;
    if (open_set(&reds, "REDSRecurrentDataset", 0) || open_set(&resr, "RealESRGANVideoDataset", 0)
        || open_set(&usm, "RealESRGANVideoDataset", 1))
        return;
    pf_realesrgan_opts o;
    char err[512] = "";
    CHECK(pf_dataset_realesrgan_opts(&resr.cfg, "data.train", SCALE, P, &o, err,
                                     sizeof err) == 0, "%s", err);
    static sample a, b, u, v;
    static uint8_t plain[T * GT_BYTES];
    int gt_same = 0, lq_same = 0, usm_ok = 0, usm_differs = 0, plain_ok = 0, n = 0;
    for (uint32_t epoch = 0; epoch < 2; epoch++)
        for (uint32_t i = 0; i < resr.len; i++, n++) {
            if (take(&reds, i, epoch, &a) || take(&resr, i, epoch, &b) || take(&usm, i, epoch, &u))
                return;
            gt_same += a.clip == b.clip && !memcmp(a.frames, b.frames, sizeof a.frames) &&
                       !memcmp(a.gt, b.gt, sizeof a.gt);
            lq_same += lq_matches(&o, i, epoch, a.gt, b.lq);
            /* gt_usm: each GT frame sharpened, the LQ the pipeline on the sharpened frames
               (BasicSR's RealESRNetModel degrades the USM GT) */
            static uint8_t sharp[T * GT_BYTES];
            int ok = 1;
            for (int t = 0; t < T; t++)
                ok &= pf_usm_sharp_u8(a.gt + t * GT_BYTES, P, P, 3, sharp + t * GT_BYTES, err,
                                      sizeof err) == 0 &&
                      !memcmp(sharp + t * GT_BYTES, u.gt + t * GT_BYTES, GT_BYTES);
            ok &= lq_matches(&o, i, epoch, sharp, u.lq);
            usm_ok += ok;
            usm_differs += memcmp(u.gt, a.gt, sizeof a.gt) != 0;
            /* (e) */
            ok = pf_video_dataset_sample_gt_plain(&usm, i, SEED, epoch, v.gt, v.lq, plain,
                                                  &v.clip, v.frames, err, sizeof err) == 0;
            ok &= !memcmp(plain, b.gt, sizeof plain) && !memcmp(v.gt, u.gt, sizeof v.gt) &&
                  !memcmp(v.lq, u.lq, sizeof v.lq) && v.clip == u.clip &&
                  !memcmp(v.frames, u.frames, sizeof v.frames);
            ok &= pf_video_dataset_sample_gt_plain(&resr, i, SEED, epoch, v.gt, v.lq, plain,
                                                   NULL, NULL, err, sizeof err) == 0;
            ok &= !memcmp(plain, b.gt, sizeof plain) && !memcmp(v.gt, b.gt, sizeof v.gt) &&
                  !memcmp(v.lq, b.lq, sizeof v.lq);
            plain_ok += ok;
        }
    CHECK(gt_same == n, "(a) %d of %d samples: GT frames as REDSRecurrentDataset's", gt_same, n);
    CHECK(lq_same == n, "(b) %d of %d samples: LQ = the pipeline on each GT frame", lq_same, n);
    CHECK(usm_ok == n && usm_differs == n, "gt_usm: %d of %d as expected, %d sharpened", usm_ok,
          n, usm_differs);
    CHECK(plain_ok == n, "(e) %d of %d samples: gt_plain frames the GT without gt_usm, the "
          "sample unchanged (%s)", plain_ok, n, err);
    printf("(a, b) %d samples: GT frames as REDSRecurrentDataset's, LQ frames the pipeline's; "
           "gt_usm's LQ from the sharpened GT; (e) gt_plain the GT without gt_usm\n", n);
    pf_video_dataset_close(&reds);
    pf_video_dataset_close(&resr);
    pf_video_dataset_close(&usm);
}

/* (c): one draw for all frames; with noise on, the frames differ by the noise only. */
static void test_shared_params(void) {
    pf_video_dataset quiet, noisy;
    pf_dataset_cfg c = base_cfg("RealESRGANVideoDataset");
    for (int s = 0; s < 2; s++) {     /* Gaussian noise of sigma 0 in both stages */
        c.realesrgan.noise[s].gaussian_noise_prob = 1;
        c.realesrgan.noise[s].noise_range[0] = c.realesrgan.noise[s].noise_range[1] = 0;
    }
    if (open_cfg(&quiet, &c) || open_set(&noisy, "RealESRGANVideoDataset", 0)) return;
    static sample a, b;
    int still = 0, quiet_same = 0, noisy_differ = 0, only_noise = 0;
    char err[512] = "";
    for (uint32_t i = 0; i < quiet.len; i++) {
        if (take(&quiet, i, 0, &a) || take(&noisy, i, 0, &b)) return;
        if (strcmp(quiet.clips[a.clip].name, "still")) continue;
        still++;
        int same = 1, differ = 0;
        for (int t = 1; t < T; t++) {
            same &= !memcmp(a.lq, a.lq + t * LQ_BYTES, LQ_BYTES) &&
                    !memcmp(b.gt, b.gt + t * GT_BYTES, GT_BYTES);
            differ |= memcmp(b.lq, b.lq + t * LQ_BYTES, LQ_BYTES) != 0;
        }
        quiet_same += same;
        noisy_differ += differ;
        /* frames 0 and 1 through the pipeline with a trace: stage 1's noise input equal */
        uint64_t key = pf_dataset_degrade_key(SEED, 0, i);
        pf_realesrgan_params p;
        pf_realesrgan_draw(&noisy.resr, key, &p);
        pf_realesrgan_trace tr[2] = { 0 };
        uint8_t lq[2][LQ_BYTES];
        int ok = 1;
        for (int t = 0; t < 2; t++)
            ok &= pf_realesrgan_degrade_frame_u8(&noisy.resr, &p, pf_realesrgan_frame_key(key, t),
                                                 b.gt, P, P, lq[t], &tr[t], err,
                                                 sizeof err) == 0 &&
                  !memcmp(lq[t], b.lq + t * LQ_BYTES, LQ_BYTES);
        size_t n = tr[0].n_noise_draws[0];
        size_t n_in = n / (p.noise1.gray ? 1 : 3) * 3;
        ok &= ok && n == tr[1].n_noise_draws[0] &&
              !memcmp(tr[0].noise_in[0], tr[1].noise_in[0], n_in * sizeof(float)) &&
              memcmp(tr[0].noise_draws[0], tr[1].noise_draws[0], n * sizeof(float)) != 0;
        only_noise += ok;
        pf_realesrgan_trace_free(&tr[0]);
        pf_realesrgan_trace_free(&tr[1]);
    }
    CHECK(still >= 4, "%d samples of the still clip", still);
    CHECK(quiet_same == still, "(c) noise off: %d of %d still samples with identical LQ frames",
          quiet_same, still);
    CHECK(noisy_differ == still, "(c) noise on: %d of %d still samples with LQ frames differing",
          noisy_differ, still);
    CHECK(only_noise == still, "(c) %d of %d: same noise input, other noise draws", only_noise,
          still);
    printf("(c) %d samples of a still clip: identical LQ frames without noise; with noise the "
           "same image before it, other draws\n", still);
    pf_video_dataset_close(&quiet);
    pf_video_dataset_close(&noisy);
}

/* Digest of sample i of epoch 3 (0 when it failed). */
static uint64_t digest(pf_video_dataset *ds, uint32_t i) {
    static __thread sample s;
    char err[512];
    if (pf_video_dataset_sample(ds, i, SEED, 3, s.gt, s.lq, NULL, NULL, err, sizeof err))
        return 0;
    return pf_fnv1a64(s.lq, sizeof s.lq, pf_fnv1a64(s.gt, sizeof s.gt, PF_FNV_OFFSET));
}

/* A thread's share: every other sample from the last, starting at len - 1 - odd. */
typedef struct {
    pf_video_dataset *ds;
    uint64_t *out;
    int odd;
} share;

static void *sample_share(void *arg) {
    share *a = arg;
    for (int i = (int)a->ds->len - 1 - a->odd; i >= 0; i -= 2)
        a->out[i] = digest(a->ds, (uint32_t)i);
    return NULL;
}

/* (d): another instance, no cache, two threads, reversed order. */
static void test_determinism(void) {
    pf_video_dataset a, b;
    if (open_set(&a, "RealESRGANVideoDataset", 1) || open_set(&b, "RealESRGANVideoDataset", 1))
        return;
    pf_video_dataset_set_cache_limit(&b, 0);
    uint64_t seq[NF * 3] = { 0 }, par[NF * 3] = { 0 };
    for (uint32_t i = 0; i < a.len; i++) seq[i] = digest(&a, i);
    share sh[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        sh[k] = (share){ &b, par, k };
        pthread_create(&th[k], NULL, sample_share, &sh[k]);
    }
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    int same = 0;
    for (uint32_t i = 0; i < a.len; i++) same += seq[i] && seq[i] == par[i];
    pf_cache_stats st;
    pf_video_dataset_cache_stats(&b, &st);
    CHECK(same == (int)a.len, "(d) %d of %u samples identical", same, a.len);
    CHECK(st.misses >= a.len, "the 0-byte cache decoded %llu frames",
          (unsigned long long)st.misses);
    printf("(d) %u samples identical from a second instance, 0-byte cache, 2 threads\n", a.len);
    pf_video_dataset_close(&a);
    pf_video_dataset_close(&b);
}

static void expect_refused(pf_dataset_cfg c, int patch, const char *want) {
    pf_video_dataset ds;
    char err[1024] = "";
    int rc = pf_video_dataset_open(&ds, &c, "data.train", SCALE, patch, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want), "want '%s', got %d '%s'", want, rc, err);
    if (rc == 0) pf_video_dataset_close(&ds);
    else printf("refused: %s\n", err);
}

static void test_errors(void) {
    CHECK(pf_is_video_dataset("RealESRGANVideoDataset"), "a video dataset type");
    pf_dataset_cfg c = base_cfg("RealESRGANVideoDataset");
    snprintf(c.lq_folder, sizeof c.lq_folder, "%s/gt", root);
    c.n_degradations = 0;
    expect_refused(c, P, "data.train.lq_folder: RealESRGANVideoDataset makes its LQ");
    c = base_cfg("RealESRGANVideoDataset");
    snprintf(c.degradation[0].type, sizeof c.degradation[0].type, "DN");
    expect_refused(c, P, "data.train.degradation: RealESRGANVideoDataset degrades with");
    expect_refused(base_cfg("RealESRGANVideoDataset"), 0, "is a training set");
    expect_refused(base_cfg("RealESRGANVideoDataset"), 64, "data.train.blur_kernel_size2: 21 is too big");
}

int main(void) {
    if (!mkdtemp(root) || make_clips()) return 1;
    test_against_reds();
    test_shared_params();
    test_determinism();
    test_errors();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    int rm = system(cmd);
    if (rm != 0) fprintf(stderr, "test_realesrgan_video: rm -rf %s: status %d\n", root, rm);
    return pf_test_end("test_realesrgan_video");
}
