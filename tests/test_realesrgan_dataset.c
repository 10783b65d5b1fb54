/*  RealESRGANDataset (common/dataset.h): training samples and evaluation pairs, each checked
    against what the test computes on its own from the pieces the set is made of.

    (a) a sample's GT patch is the GT patch a PairedImageDataset (BI) crops and flips for the
        same (seed, epoch, index) (gt_usm off), and with gt_usm pf_usm_sharp_u8 of it;
    (b) its LQ is pf_realesrgan_degrade_u8 of that patch (with gt_usm: of the sharpened patch,
        as BasicSR's RealESRNetModel degrades the USM GT) with the parameters
        pf_realesrgan_draw gives for pf_dataset_degrade_key(seed, epoch, index), under
        BasicSR's default options built here (pf_realesrgan_opts_default, scale 4); explain's
        crop and params line agree with them;
    (c) the same bytes from a second instance with a cache of 0 bytes and from 2 threads at
        once; other bytes for another epoch or another index of the same file;
    (d) an evaluation pair is the whole mod-cropped GT (read here with pf_image_read) and
        its LQ degraded with the key (seed, PF_DATASET_EVAL_EPOCH, id), the same on every call,
        in another instance and in a shard, other for another seed;
    (e) an evaluation image too small for the kernels (pf_realesrgan_opts_check says so at
        its size) is an error naming the file; an lq_folder is refused;
    (f) gt_plain (issue 41: RealESRGANModel's `gt` beside `gt_usm`): with gt_usm, a sample's
        gt_plain is the GT patch the same set without gt_usm gives for (seed, epoch, index),
        and its GT and LQ are those of the sample without gt_plain; without gt_usm gt_plain is
        its GT; the loader's batch builder (2 threads, data.train.gt_plain set on the
        config) writes the same bytes into its third frame.

    `test_realesrgan_dataset cli` (ctest test_realesrgan_dataset.cli; 77 without the pixflow
    binary, PF_BIN) runs `pixflow data` on a config written here: --degrade's PNGs equal
    pf_dataset_pair's LQ for the same config (and an existing file without --force is refused,
    untouched); --explain's file and crop lines equal pf_patch_crop_draw's, for a
    PairedImageDataset with a random JPEG step and a RealESRGANDataset, whose explain lines
    (a training sample's, an eval image's) are key=value words equal to the format of the
    parameters drawn here. --help exits 0; an option that does not apply to the mode or is
    given twice exits 2 naming it; a training PNG cut in half makes --explain exit 1 naming
    it; a RealESRGANVideoDataset sample's explain shows pf_video_dataset_sample's clip and
    frames, the params line of pf_realesrgan_draw for pf_dataset_degrade_key(seed, epoch,
    index) and frame t's pf_realesrgan_frame_key.
*/
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/dataset.h"
#include "loader/batch_builder.h"
#include "common/image.h"
#include "common/realesrgan_ops.h"
#include "common/realesrgan_pipeline.h"
#include "common/rng.h"
#include "common/video_dataset.h"
#include "pf_test.h"

#define SCALE 4
#define GP 256                  /* gt_patch_size: BasicSR's; the defaults refuse 64 */
#define LP (GP / SCALE)
#define N_IDX 6                 /* samples checked per set: 2 visits of each of 3 files */

static char root[256];

/* A w x h RGB8 image: a gradient under random noise, so every stage has something to do. */
static void write_image(const char *dir, const char *name, int w, int h, uint64_t seed) {
    uint8_t *px = malloc((size_t)w * h * 3);
    pf_rng r = pf_rng_make(seed, 1, 2);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                int v = (x * 255 / w + y * 128 / h + c * 40) % 256 - 24 +
                        (int)pf_rng_below(&r, 48);
                px[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    free(px);
}

static pf_dataset_cfg cfg_for(const char *type, const char *gt, int gt_usm) {
    pf_dataset_cfg c;
    memset(&c, 0, sizeof c);
    c.present = 1;
    snprintf(c.type, sizeof c.type, "%s", type);
    snprintf(c.gt_folder, sizeof c.gt_folder, "%s", gt);
    snprintf(c.filename_tmpl, sizeof c.filename_tmpl, "{}");
    c.use_flip = c.use_rot = 1;
    c.repeat = 2;
    c.gt_usm = gt_usm;
    pf_realesrgan_opts_default(&c.realesrgan);   /* what the config rows give by default */
    return c;
}

static pf_realesrgan_opts default_opts(void) {
    pf_realesrgan_opts o;
    pf_realesrgan_opts_default(&o);
    o.scale = SCALE;
    return o;
}

static const uint64_t SEED = 11;
static const uint32_t EPOCH = 3;

/* samples 0..N_IDX-1 of (SEED, EPOCH) */
typedef struct {
    uint8_t gt[N_IDX][GP * GP * 3];
    uint8_t lq[N_IDX][LP * LP * 3];
} samples;

static int sample_all(pf_dataset *ds, samples *out, char *err, size_t errlen) {
    for (uint32_t i = 0; i < N_IDX; i++)
        if (pf_dataset_sample(ds, i, SEED, EPOCH, out->gt[i], out->lq[i], err, errlen) != 0)
            return -1;
    return 0;
}

typedef struct {
    pf_dataset *ds;
    samples *out;
    int rc;
    char err[1024];
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    j->rc = sample_all(j->ds, j->out, j->err, sizeof j->err);
    return NULL;
}

/* (a), (b): the sample against BI's crop, USM and the pipeline called here. */
static void check_against_parts(pf_dataset *real, pf_dataset *usm, const samples *rs,
                                const samples *us) {
    char err[1024] = "";
    char train[300];
    snprintf(train, sizeof train, "%s/train", root);
    pf_dataset_cfg bc = cfg_for("PairedImageDataset", train, 0);
    pf_dataset bi;
    CHECK(pf_dataset_open(&bi, &bc, "data.train", SCALE, GP, err, sizeof err) == 0, "%s", err);
    static samples bs;
    CHECK(sample_all(&bi, &bs, err, sizeof err) == 0, "%s", err);
    pf_realesrgan_opts o = default_opts();
    static uint8_t sharp[GP * GP * 3], lq[LP * LP * 3];
    for (uint32_t i = 0; i < N_IDX; i++) {
        CHECK(memcmp(rs->gt[i], bs.gt[i], sizeof bs.gt[i]) == 0, "sample %u: GT patch is not "
              "the BI set's", i);
        CHECK(pf_usm_sharp_u8(bs.gt[i], GP, GP, 3, sharp, err, sizeof err) == 0, "%s", err);
        CHECK(memcmp(us->gt[i], sharp, sizeof sharp) == 0, "sample %u: gt_usm GT is not USM of "
              "the BI patch", i);
        CHECK(memcmp(us->gt[i], bs.gt[i], sizeof sharp) != 0, "sample %u: USM changed nothing",
              i);
        pf_realesrgan_params p;
        pf_realesrgan_draw(&o, pf_dataset_degrade_key(SEED, EPOCH, i), &p);
        CHECK(pf_realesrgan_degrade_u8(&o, &p, bs.gt[i], GP, GP, lq, NULL, err, sizeof err) == 0,
              "%s", err);
        CHECK(memcmp(rs->lq[i], lq, sizeof lq) == 0, "sample %u: LQ is not the pipeline's", i);
        static uint8_t lq_usm[LP * LP * 3];
        CHECK(pf_realesrgan_degrade_u8(&o, &p, sharp, GP, GP, lq_usm, NULL, err, sizeof err) == 0,
              "%s", err);
        CHECK(memcmp(us->lq[i], lq_usm, sizeof lq) == 0, "sample %u: gt_usm's LQ is not the "
              "pipeline on the sharpened GT (BasicSR degrades the USM GT)", i);
        /* explain: the params line and the crop */
        char want[4096], got[4096];
        pf_realesrgan_params_format(&p, want, sizeof want);
        pf_realesrgan_params q;
        CHECK(pf_dataset_sample_params(real, i, SEED, EPOCH, &q, got, sizeof got, err,
                                       sizeof err) == 0, "%s", err);
        CHECK(strcmp(got, want) == 0, "sample %u: params line\n  %s\n  %s", i, got, want);
        int file = -1;
        pf_patch_crop c;
        CHECK(pf_dataset_sample_crop(usm, i, SEED, EPOCH, &file, &c, err, sizeof err) == 0,
              "%s", err);
        CHECK(file == (int)(i % 3), "sample %u: file %d", i, file);
        pf_image g;
        CHECK(pf_image_read(real->files[file].gt_path, &g, err, sizeof err) == 0, "%s", err);
        pf_copy_patch(g.data, g.w, c.top * SCALE, c.left * SCALE, GP, c.hflip, c.vflip,
                      c.transpose, sharp);
        CHECK(memcmp(sharp, bs.gt[i], sizeof sharp) == 0, "sample %u: explained crop is not "
              "the sample's", i);
        pf_image_free(&g);
    }
    pf_dataset_close(&bi);
}

/* (f): rs / us are the samples without / with gt_usm, made by pf_dataset_sample. */
static void check_gt_plain(pf_dataset *real, pf_dataset *usm, const samples *rs,
                           const samples *us) {
    char err[1024] = "";
    static uint8_t g[GP * GP * 3], l[LP * LP * 3], plain[GP * GP * 3];
    for (uint32_t i = 0; i < N_IDX; i++) {
        CHECK(pf_dataset_sample_gt_plain(usm, i, SEED, EPOCH, g, l, plain, err,
                                         sizeof err) == 0, "%s", err);
        CHECK(memcmp(plain, rs->gt[i], sizeof plain) == 0, "sample %u: gt_plain is not the "
              "GT the set gives without gt_usm", i);
        CHECK(memcmp(g, us->gt[i], sizeof g) == 0 && memcmp(l, us->lq[i], sizeof l) == 0,
              "sample %u: gt_plain changed the sample's GT or LQ", i);
        CHECK(pf_dataset_sample_gt_plain(real, i, SEED, EPOCH, g, l, plain, err,
                                         sizeof err) == 0, "%s", err);
        CHECK(memcmp(plain, rs->gt[i], sizeof plain) == 0 && memcmp(g, rs->gt[i], sizeof g) == 0
              && memcmp(l, rs->lq[i], sizeof l) == 0, "sample %u: without gt_usm gt_plain is "
              "not the GT, or the sample changed", i);
    }
    /* the loader's path: batch_builder with the flag on the config, as loader.c reads it */
    usm->cfg.gt_plain = 1;
    pf_batch_builder *b = pf_batch_builder_new(usm, 2, err, sizeof err);
    CHECK(b != NULL, "%s", err);
    if (!b) return;
    size_t gs, ls;
    pf_batch_builder_sample_sizes(b, &gs, &ls);
    CHECK(gs == sizeof us->gt[0] && ls == sizeof us->lq[0], "sample sizes %zu %zu", gs, ls);
    static samples bg, bp;     /* batch GT and LQ; gt_plain in bp.gt */
    uint32_t idx[N_IDX];
    for (uint32_t i = 0; i < N_IDX; i++) idx[i] = N_IDX - 1 - i;   /* another order */
    CHECK(pf_batch_builder_fill(b, SEED, EPOCH, idx, N_IDX, bg.gt[0], bg.lq[0],
                                usm->cfg.gt_plain ? bp.gt[0] : NULL) == 0, "batch failed");
    for (uint32_t i = 0; i < N_IDX; i++)
        CHECK(!memcmp(bg.gt[i], us->gt[idx[i]], gs) && !memcmp(bg.lq[i], us->lq[idx[i]], ls) &&
                  !memcmp(bp.gt[i], rs->gt[idx[i]], gs), "batch slot %u (sample %u): GT, LQ or "
              "gt_plain is not the sample's", i, idx[i]);
    pf_batch_builder_destroy(&b);
    usm->cfg.gt_plain = 0;
}

static void test_training(void) {
    char train[300], err[1024] = "";
    snprintf(train, sizeof train, "%s/train", root);
    pf_dataset_cfg rc = cfg_for("RealESRGANDataset", train, 0),
                   uc = cfg_for("RealESRGANDataset", train, 1);
    pf_dataset real, usm, cold;
    CHECK(pf_dataset_open(&real, &rc, "data.train", SCALE, GP, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&usm, &uc, "data.train", SCALE, GP, err, sizeof err) == 0, "%s", err);
    CHECK(real.n_files == 3 && real.len == 6, "n_files %d len %u", real.n_files, real.len);
    static samples rs, us, cs, t1, t2;
    CHECK(sample_all(&real, &rs, err, sizeof err) == 0, "%s", err);
    CHECK(sample_all(&usm, &us, err, sizeof err) == 0, "%s", err);
    pf_cache_stats st;
    pf_dataset_cache_stats(&real, &st);
    CHECK(st.bytes == (size_t)(300 * 280 + 256 * 260 + 400 * 300) * 3, "the cache holds the "
          "mod-cropped GTs alone: %zu bytes", st.bytes);
    check_against_parts(&real, &usm, &rs, &us);
    check_gt_plain(&real, &usm, &rs, &us);

    /* (c) another instance, no cache; two threads at once */
    CHECK(pf_dataset_open(&cold, &rc, "data.train", SCALE, GP, err, sizeof err) == 0, "%s", err);
    pf_dataset_set_cache_limit(&cold, 0);
    CHECK(sample_all(&cold, &cs, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(&cs, &rs, sizeof cs) == 0, "another instance without cache: other bytes");
    thread_job j1 = { &cold, &t1, 0, "" }, j2 = { &cold, &t2, 0, "" };
    pthread_t a, b;
    pthread_create(&a, NULL, thread_main, &j1);
    pthread_create(&b, NULL, thread_main, &j2);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(j1.rc == 0 && j2.rc == 0, "%s %s", j1.err, j2.err);
    CHECK(memcmp(&t1, &rs, sizeof t1) == 0 && memcmp(&t2, &rs, sizeof t2) == 0,
          "2 threads: other bytes");
    static uint8_t g2[GP * GP * 3], l2[LP * LP * 3];
    CHECK(pf_dataset_sample(&real, 0, SEED, EPOCH + 1, g2, l2, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(l2, rs.lq[0], sizeof l2) != 0, "another epoch, same LQ");
    CHECK(pf_dataset_sample(&real, 3, SEED, EPOCH, g2, l2, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(l2, rs.lq[0], sizeof l2) != 0, "index 3 (file 0 again), same LQ as index 0");
    CHECK(pf_dataset_sample(&real, 6, SEED, EPOCH, g2, l2, err, sizeof err) != 0 &&
          strstr(err, "out of range"), "index 6 of 6: %s", err);
    pf_dataset_close(&cold);
    pf_dataset_close(&usm);
    pf_dataset_close(&real);
}

/* files[file]'s GT read here and mod-cropped to SCALE (its top-left). */
static void read_mod_cropped(const char *path, pf_image *g) {
    char err[1024];
    if (pf_image_read(path, g, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    int w = g->w - g->w % SCALE, h = g->h - g->h % SCALE;
    for (int y = 0; y < h; y++)
        memmove(g->data + (size_t)y * w * 3, g->data + (size_t)y * g->w * 3, (size_t)w * 3);
    g->w = w;
    g->h = h;
}

static void test_eval(void) {
    char dir[300], err[1024] = "";
    snprintf(dir, sizeof dir, "%s/eval", root);
    pf_dataset_cfg c = cfg_for("RealESRGANDataset", dir, 1);   /* gt_usm: not in eval */
    c.repeat = 1;
    pf_dataset ev, again, other, part;
    CHECK(pf_dataset_open(&ev, &c, "data.eval", SCALE, 0, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&again, &c, "data.eval", SCALE, 0, err, sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&other, &c, "data.eval", SCALE, 0, err, sizeof err) == 0, "%s", err);
    pf_dataset_set_seed(&ev, 5);
    pf_dataset_set_seed(&again, 5);
    pf_dataset_set_seed(&other, 6);
    CHECK(pf_dataset_shard(&again, 1, 2, &part) == 0, "shard");
    pf_realesrgan_opts o = default_opts();
    for (int i = 0; i < ev.n_files; i++) {
        pf_image g;
        read_mod_cropped(ev.files[i].gt_path, &g);
        size_t n = (size_t)(g.w / SCALE) * (g.h / SCALE) * 3;
        uint8_t *want = malloc(n);
        pf_realesrgan_params p;
        pf_realesrgan_draw(&o, pf_dataset_degrade_key(5, PF_DATASET_EVAL_EPOCH, (uint64_t)i),
                           &p);
        CHECK(pf_realesrgan_degrade_u8(&o, &p, g.data, g.h, g.w, want, NULL, err, sizeof err) ==
              0, "%s", err);
        const pf_image *gt, *lq;
        for (int call = 0; call < 2; call++) {
            CHECK(pf_dataset_pair(&ev, i, &gt, &lq, err, sizeof err) == 0, "%s", err);
            CHECK(gt->w == g.w && gt->h == g.h && memcmp(gt->data, g.data, (size_t)g.w * g.h * 3)
                  == 0, "image %d: GT is not the mod-cropped file (no USM in eval)", i);
            CHECK(lq->w == g.w / SCALE && lq->h == g.h / SCALE && memcmp(lq->data, want, n) == 0,
                  "image %d call %d: LQ is not the pipeline's for (seed, eval, id)", i, call);
        }
        char line[4096], want_line[4096];
        pf_realesrgan_params_format(&p, want_line, sizeof want_line);
        CHECK(pf_dataset_pair_params(&ev, i, &p, line, sizeof line, err, sizeof err) == 0, "%s",
              err);
        CHECK(strcmp(line, want_line) == 0, "image %d: params line", i);
        pf_cache_stats st;
        pf_dataset_cache_stats(&ev, &st);
        CHECK(st.misses == (uint64_t)i + 1, "image %d: %llu misses: the LQ was made again", i,
              (unsigned long long)st.misses);
        CHECK(pf_dataset_pair(&other, i, &gt, &lq, err, sizeof err) == 0, "%s", err);
        CHECK(memcmp(lq->data, want, n) != 0, "image %d: another seed, same LQ", i);
        if (i % 2 == 1) {
            CHECK(pf_dataset_pair(&part, i / 2, &gt, &lq, err, sizeof err) == 0, "%s", err);
            CHECK(memcmp(lq->data, want, n) == 0, "image %d: a shard's LQ differs", i);
        }
        free(want);
        pf_image_free(&g);
    }
    CHECK(ev.n_files == 2, "eval files: %d", ev.n_files);
    pf_dataset_close(&part);
    pf_dataset_close(&other);
    pf_dataset_close(&again);
    pf_dataset_close(&ev);
}

static void test_errors(void) {
    char dir[300], small[400], err[1024] = "", why[512];
    snprintf(dir, sizeof dir, "%s/small", root);
    snprintf(small, sizeof small, "%s/tiny.png", dir);
    pf_realesrgan_opts o = default_opts();
    /* the oracle: the pipeline's own check at these sizes */
    CHECK(pf_realesrgan_opts_check(&o, 40, 48, why, sizeof why) != 0, "40x48 passes the check");
    CHECK(pf_realesrgan_opts_check(&o, 120, 100, why, sizeof why) == 0, "%s", why);
    pf_dataset_cfg c = cfg_for("RealESRGANDataset", dir, 0);
    pf_dataset ds;
    CHECK(pf_dataset_open(&ds, &c, "data.eval", SCALE, 0, err, sizeof err) != 0 &&
          strstr(err, small) && strstr(err, "data.eval") && strstr(err, "too small"),
          "a 43x50 eval image: %s", err);
    snprintf(c.lq_folder, sizeof c.lq_folder, "%s", dir);
    CHECK(pf_dataset_open(&ds, &c, "data.train", SCALE, GP, err, sizeof err) != 0 &&
          strstr(err, "data.train.lq_folder"), "lq_folder: %s", err);
    snprintf(dir, sizeof dir, "%s/eval", root);
    pf_dataset_cfg t = cfg_for("RealESRGANDataset", dir, 0);
    CHECK(pf_dataset_open(&ds, &t, "data.train", SCALE, GP, err, sizeof err) != 0 &&
          strstr(err, "smaller than the patch"), "a 120x100 image and patch 256: %s", err);
    pf_dataset_cfg p = cfg_for("PairedImageDataset", dir, 0);
    CHECK(pf_dataset_open(&ds, &p, "data.eval", SCALE, 0, err, sizeof err) == 0, "%s", err);
    pf_realesrgan_params q;
    CHECK(pf_dataset_pair_params(&ds, 0, &q, NULL, 0, err, sizeof err) != 0 &&
          strstr(err, "PairedImageDataset"), "params of a Paired set: %s", err);
    pf_dataset_close(&ds);
}

/* ---- pixflow data ---------------------------------------------------------------------- */

static const char *pf_bin;

/* Run `pixflow data CFG ARGS`, stdout into out (len bytes); the exit status. */
static int run_data(const char *cfg, const char *args, char *out, size_t len) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s data %s %s 2>%s/stderr.txt", pf_bin, cfg, args, root);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, len - 1, p) : 0;
    out[n] = 0;
    int st = p ? pclose(p) : -1;
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The integer after "NAME=" in text, or -1. */
static int field(const char *text, const char *name) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", name);
    const char *p = strstr(text, pat);
    return p && isdigit((unsigned char)p[strlen(pat)]) ? atoi(p + strlen(pat)) : -1;
}

static void write_config(const char *path, const char *type, const char *extra) {
    FILE *f = fopen(path, "w");
    fprintf(f, "model: {type: EDSR, scale: %d, n_feats: 8, n_blocks: 1}\n"
               "seed: 9\n"
               "data:\n"
               "  samples_per_gpu: 2\n"
               "  train: {type: %s, gt_folder: %s/train, gt_patch_size: %d, repeat: 2%s}\n"
               "  eval: {type: %s, gt_folder: %s/eval%s%s}\n"
               "optimizers: {type: Adam, lr: 1.0e-3}\n"
               "total_iters: 20\n"
               "work_dir: %s/wd\n", SCALE, type, root, GP, extra, type, root, extra,
            strcmp(type, "RealESRGANDataset") ? "" : ", degrade_seed: 3", root);
    fclose(f);
}

/* explain's "params: " line of `text` is key=value words equal to `want` (the pipeline's
   format of the draws computed here): 1, else 0 after saying why. */
static int params_line_ok(const char *text, const char *want) {
    const char *p = strstr(text, "\nparams: ");
    if (!p) return 0;
    char line[8192];
    snprintf(line, sizeof line, "%s", p + 9);
    line[strcspn(line, "\n")] = 0;
    int words = 0;
    for (char *save, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        if (!eq || eq == w || !eq[1]) {
            fprintf(stderr, "params word '%s' is not key=value\n", w);
            return 0;
        }
        words++;
    }
    snprintf(line, sizeof line, "%s", p + 9);
    line[strcspn(line, "\n")] = 0;
    if (words < 10 || strcmp(line, want) != 0) {
        fprintf(stderr, "params line (%d words)\n  %s\nwanted\n  %s\n", words, line, want);
        return 0;
    }
    return 1;
}

/* --degrade into DIR equals pf_dataset_pair; explain's crop equals pf_patch_crop_draw and
   (RealESRGANDataset) its params line the pipeline's for the sample's key. */
static void check_cli(const char *type, const char *extra) {
    char cfg_path[400], out[400], args[600], text[16384], err[2048] = "";
    snprintf(cfg_path, sizeof cfg_path, "%s/%s.yaml", root, type);
    snprintf(out, sizeof out, "%s/frozen_%s", root, type);
    write_config(cfg_path, type, extra);
    static pf_config cfg;
    CHECK(pf_config_load(&cfg, cfg_path, err, sizeof err) == 0, "%s", err);
    pf_dataset ev, tr;
    CHECK(pf_dataset_open(&ev, &cfg.eval, "data.eval", SCALE, 0, err, sizeof err) == 0, "%s",
          err);
    /* a RealESRGANDataset's eval images come from its degrade_seed (3), not the job's seed */
    int real = !strcmp(type, "RealESRGANDataset");
    CHECK(!real || cfg.eval.degrade_seed == 3, "degrade_seed %lld",
          (long long)cfg.eval.degrade_seed);
    pf_dataset_set_seed(&ev, real ? 3 : cfg.seed);
    snprintf(args, sizeof args, "--degrade --set eval -o %s", out);
    CHECK(run_data(cfg_path, args, text, sizeof text) == 0, "%s: %s", type, args);
    for (int i = 0; i < ev.n_files; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s.png", out, ev.files[i].name);
        const pf_image *gt, *lq;
        pf_image got = { 0 };
        CHECK(pf_dataset_pair(&ev, i, &gt, &lq, err, sizeof err) == 0, "%s", err);
        CHECK(pf_image_read(path, &got, err, sizeof err) == 0, "%s", err);
        CHECK(got.data && got.w == lq->w && got.h == lq->h &&
              memcmp(got.data, lq->data, (size_t)lq->w * lq->h * 3) == 0,
              "%s: %s is not pf_dataset_pair's LQ", type, path);
        pf_image_free(&got);
    }
    struct stat before, after;
    char first[600];
    snprintf(first, sizeof first, "%s/%s.png", out, ev.files[0].name);
    stat(first, &before);
    CHECK(run_data(cfg_path, args, text, sizeof text) == 2, "%s: an existing DIR overwritten "
          "without --force", type);
    stat(first, &after);
    CHECK(before.st_mtime == after.st_mtime && before.st_ino == after.st_ino, "%s: touched", type);
    snprintf(args, sizeof args, "--degrade --set eval -o %s --force", out);
    CHECK(run_data(cfg_path, args, text, sizeof text) == 0, "%s: --force refused", type);
    pf_dataset_close(&ev);

    CHECK(pf_dataset_open(&tr, &cfg.train, "data.train", SCALE, GP, err, sizeof err) == 0, "%s",
          err);
    for (uint32_t idx = 0; idx < 6; idx += 5) {
        snprintf(args, sizeof args, "--explain --epoch 4 --index %u", idx);
        CHECK(run_data(cfg_path, args, text, sizeof text) == 0, "%s: %s", type, args);
        const pf_sample_file *f = &tr.files[idx % 3];
        pf_patch_crop c = pf_patch_crop_draw(f->lq_w, f->lq_h, LP, cfg.train.use_flip,
                                             cfg.train.use_rot, 9, 4, idx);
        CHECK(strstr(text, f->gt_path) != NULL, "%s: explain names no %s:\n%s", type,
              f->gt_path, text);
        CHECK(field(text, "lq_top") == c.top && field(text, "lq_left") == c.left &&
              field(text, "gt_top") == c.top * SCALE && field(text, "gt_left") == c.left * SCALE &&
              field(text, "hflip") == c.hflip && field(text, "vflip") == c.vflip &&
              field(text, "transpose") == c.transpose,
              "%s sample %u: crop %d,%d:\n%s", type, idx, c.top, c.left, text);
        if (!tr.realesrgan) continue;
        pf_realesrgan_opts o = default_opts();
        pf_realesrgan_params p;
        char want[8192];
        pf_realesrgan_draw(&o, pf_dataset_degrade_key(9, 4, idx), &p);
        pf_realesrgan_params_format(&p, want, sizeof want);
        CHECK(params_line_ok(text, want), "sample %u: explain's params line", idx);
        char usm[32];
        snprintf(usm, sizeof usm, "\ngt_usm: %d (", cfg.train.gt_usm);
        CHECK(strstr(text, usm) != NULL, "sample %u: no '%s' line:\n%s", idx, usm + 1, text);
        snprintf(args, sizeof args, "--explain --set eval --index %u", idx % 2);
        CHECK(run_data(cfg_path, args, text, sizeof text) == 0, "%s: %s", type, args);
        pf_realesrgan_draw(&o, pf_dataset_degrade_key(3, PF_DATASET_EVAL_EPOCH, idx % 2), &p);
        pf_realesrgan_params_format(&p, want, sizeof want);
        CHECK(params_line_ok(text, want), "eval image %u: explain's params line", idx % 2);
    }
    pf_dataset_close(&tr);
}

/* stderr of the last run_data call into buf. */
static void last_stderr(char *buf, size_t len) {
    char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", root);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
}

/* --help exits 0 with the usage on stdout; each option that does not apply, or given twice,
   exits 2 naming it. */
static void check_cli_usage(void) {
    char cfg_path[400], text[16384], msg[4096];
    snprintf(cfg_path, sizeof cfg_path, "%s/RealESRGANDataset.yaml", root);
    write_config(cfg_path, "RealESRGANDataset", "");
    const char *helps[] = { "--help", "-h" };
    for (int i = 0; i < 2; i++)
        CHECK(run_data(cfg_path, helps[i], text, sizeof text) == 0 &&
              strstr(text, "usage: pixflow data"), "%s: exit 0 and the usage:\n%s", helps[i],
              text);
    static const struct { const char *args, *names; } bad[] = {
        { "--explain --set eval --epoch 1 --index 0", "--epoch" },
        { "--explain --set test --epoch 0 --index 0", "--epoch" },
        { "--explain --index 0 -o /tmp/x", "-o" },
        { "--explain --index 0 --force", "--force" },
        { "--degrade --set eval -o /tmp/x --index 0", "--index" },
        { "--explain --set train --set eval --index 0", "--set" },
        { "--explain --index 0 --index 1", "--index" },
        { "--explain --index 0 --epoch 1 --epoch 2", "--epoch" },
        { "--degrade --set eval -o /tmp/x -o /tmp/y", "-o" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_data(cfg_path, bad[i].args, text, sizeof text);
        last_stderr(msg, sizeof msg);
        char named[64];
        snprintf(named, sizeof named, "%s ", bad[i].names);
        CHECK(rc == 2 && !strncmp(msg, "pixflow data: ", 14) && strstr(msg, named),
              "`%s`: exit %d (want 2), stderr naming %s:\n%s", bad[i].args, rc, bad[i].names,
              msg);
    }
}

/* A training image whose header reads but whose pixels do not (the PNG cut in half):
   --explain exits 1 naming it. */
static void check_cli_corrupt(void) {
    char dir[300], path[400], cfg_path[400], text[16384], msg[4096];
    snprintf(dir, sizeof dir, "%s/corrupt", root);
    mkdir(dir, 0755);
    write_image(dir, "bad.png", 300, 280, 8);
    snprintf(path, sizeof path, "%s/bad.png", dir);
    struct stat st;
    CHECK(stat(path, &st) == 0 && truncate(path, st.st_size / 2) == 0, "truncate %s", path);
    snprintf(cfg_path, sizeof cfg_path, "%s/corrupt.yaml", root);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f, "model: {type: EDSR, scale: %d, n_feats: 8, n_blocks: 1}\n"
               "data:\n"
               "  train: {type: RealESRGANDataset, gt_folder: %s, gt_patch_size: %d}\n"
               "optimizers: {type: Adam, lr: 1.0e-3}\n"
               "total_iters: 20\n"
               "work_dir: %s/wd\n", SCALE, dir, GP, root);
    fclose(f);
    int rc = run_data(cfg_path, "--explain --index 0", text, sizeof text);
    last_stderr(msg, sizeof msg);
    CHECK(rc == 1 && strstr(msg, path), "a corrupt %s: exit %d (want 1), stderr:\n%s", path, rc,
          msg);
}

/* --explain of a RealESRGANVideoDataset sample: its frames are pf_video_dataset_sample's, its
   params line the format of pf_realesrgan_draw for pf_dataset_degrade_key(seed, epoch, index)
   under the default options, and frame t's noise key pf_realesrgan_frame_key(key, t). */
static void check_cli_video(void) {
    char dir[300], cfg_path[400], text[16384], err[2048] = "", want[8192];
    static const char *clips[] = { "clipA", "clipB" };
    for (int c = 0; c < 2; c++) {
        snprintf(dir, sizeof dir, "%s/clips/%s", root, clips[c]);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
        CHECK(system(cmd) == 0, "%s", cmd);
        for (int k = 0; k < 6; k++) {
            char name[32];
            snprintf(name, sizeof name, "%08d.png", k);
            write_image(dir, name, 260, 256, (uint64_t)(20 + c * 6 + k));
        }
    }
    snprintf(cfg_path, sizeof cfg_path, "%s/video.yaml", root);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f, "model: {type: BasicVSR, scale: %d, num_feat: 4, num_block: 1}\n"
               "seed: 9\n"
               "data:\n"
               "  train: {type: RealESRGANVideoDataset, gt_folder: %s/clips, num_frame: 3,\n"
               "          interval_list: [1, 2], random_reverse: true, use_hflip: true,\n"
               "          use_rot: true, gt_patch_size: %d}\n"
               "optimizers: {type: Adam, lr: 1.0e-3}\n"
               "total_iters: 20\n"
               "work_dir: %s/wd\n", SCALE, root, GP, root);
    fclose(f);
    static pf_config cfg;
    pf_video_dataset v;
    int ok = pf_config_load(&cfg, cfg_path, err, sizeof err) == 0 &&
             pf_video_dataset_open(&v, &cfg.train, "data.train", SCALE, GP, err,
                                   sizeof err) == 0;
    CHECK(ok, "video set: %s", err);
    if (!ok) return;
    size_t gb = 3 * pf_video_sample_gt_bytes(&v), lb = 3 * pf_video_sample_lq_bytes(&v);
    uint8_t *gt = malloc(gb), *lq = malloc(lb);
    pf_realesrgan_opts o = default_opts();
    for (uint32_t idx = 0; idx < 12; idx += 5) {
        char args[200], fr[64] = "frames:";
        int clip = -1, frames[3];
        CHECK(pf_video_dataset_sample(&v, idx, 9, 2, gt, lq, &clip, frames, err,
                                      sizeof err) == 0, "%s", err);
        snprintf(args, sizeof args, "--explain --epoch 2 --index %u", idx);
        CHECK(run_data(cfg_path, args, text, sizeof text) == 0, "video %s", args);
        for (int t = 0; t < 3; t++)
            snprintf(fr + strlen(fr), sizeof fr - strlen(fr), " %d", frames[t]);
        char clip_line[300];
        snprintf(clip_line, sizeof clip_line, "\nclip: %s ", v.clips[clip].name);
        CHECK(strstr(text, clip_line) && strstr(text, fr), "video sample %u: clip %s, %s:\n%s",
              idx, v.clips[clip].name, fr, text);
        uint64_t key = pf_dataset_degrade_key(9, 2, idx);
        pf_realesrgan_params p;
        pf_realesrgan_draw(&o, key, &p);
        pf_realesrgan_params_format(&p, want, sizeof want);
        CHECK(params_line_ok(text, want), "video sample %u: explain's params line", idx);
        char usm[32];
        snprintf(usm, sizeof usm, "\ngt_usm: %d\n", cfg.train.gt_usm);
        CHECK(strstr(text, usm) != NULL, "video sample %u: no '%s' line", idx, usm + 1);
        for (int t = 0; t < 3; t++) {
            char line[200];
            snprintf(line, sizeof line, "frame %d: source frame %d noise key 0x%016llx\n", t,
                     frames[t], (unsigned long long)pf_realesrgan_frame_key(key, t));
            CHECK(strstr(text, line) != NULL, "video sample %u: no '%s' in\n%s", idx, line,
                  text);
        }
    }
    free(gt);
    free(lq);
    pf_video_dataset_close(&v);
}

static int cli_main(void) {
    pf_bin = getenv("PF_BIN");
    if (!pf_bin || access(pf_bin, X_OK) != 0) {
        printf("test_realesrgan_dataset cli: no pixflow binary (PF_BIN), skipped\n");
        return 77;
    }
    check_cli("PairedImageDataset", ", degradation: [{type: BI}, {type: JPEG, quality: [20, 90]}]");
    check_cli("RealESRGANDataset", "");
    check_cli_usage();
    check_cli_corrupt();
    check_cli_video();
    return pf_test_end("test_realesrgan_dataset cli");
}

static void make_images(void);

int main(int argc, char **argv) {
    snprintf(root, sizeof root, "/tmp/pf_test_realesrgan_dataset_%d", (int)getpid());
    make_images();
    int rc;
    if (argc > 1 && !strcmp(argv[1], "cli")) {
        rc = cli_main();
    } else {
        test_training();
        test_eval();
        test_errors();
        rc = pf_test_end("test_realesrgan_dataset");
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return rc;
}

static void make_images(void) {
    const char *sub[] = { "", "/train", "/eval", "/small" };
    for (int i = 0; i < 4; i++) {
        char d[300];
        snprintf(d, sizeof d, "%s%s", root, sub[i]);
        mkdir(d, 0755);
    }
    char d[300];
    snprintf(d, sizeof d, "%s/train", root);
    write_image(d, "a.png", 300, 280, 1);
    write_image(d, "b.png", 257, 263, 2);     /* mod-cropped to 256 x 260 */
    write_image(d, "c.png", 400, 300, 3);
    snprintf(d, sizeof d, "%s/eval", root);
    write_image(d, "e1.png", 121, 102, 4);     /* mod-cropped to 120 x 100 */
    write_image(d, "e2.png", 96, 136, 5);
    snprintf(d, sizeof d, "%s/small", root);
    write_image(d, "ok.png", 120, 100, 6);
    write_image(d, "tiny.png", 43, 50, 7);     /* mod-cropped to 40 x 48 */
}
