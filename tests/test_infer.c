/*  test_infer — nn/infer: x8 self-ensemble and tiled inference, against expectations computed
    here independently.
    (a) the ensemble equals the mean of 8 inferences of transformed inputs, each transformed
        back, with flips and transposes written naively in this file (not pf_dihedral);
        the ensemble is equivariant (ensemble(hflip(x)) == hflip(ensemble(x)), also for the
        transpose, within 1e-5) while a plain inference of a random network is not (> 1e-3).
    (b) tiled == untiled within 1e-4 (max abs, float) and +-1 after uint8 rounding, for EDSR and
        SRCNN, tile sizes that do not divide the image, overlap >= the receptive radius, windows
        clipped in one dimension only, and ensemble + tiles; with overlap 0 the same comparison
        fails (seams: > 1e-3), so the check can fail. Memory: the peak RSS of a tiled
        inference of a 320 x 320 image is below half that of the whole-image inference.
    (c) `pixflow test` on a checkpoint trained here for 800 Adam steps with flip/transpose augmentation: ensemble gives a PSNR
        different from the plain one (printed), tiling (overlap >= radius) gives the plain PSNR
        within 1e-3 dB, and the closing line names the inference mode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/metrics.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "pf_test.h"

static void edsr_cfg(pf_config *c, int scale, int n_blocks) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, "EDSR");
    c->scale = scale;
    c->in_channels = c->out_channels = 3;
    c->n_feats = 8;
    c->n_blocks = n_blocks;
    c->res_scale = 1.0f;
    c->img_range = 255.0f;
    c->rgb_mean[0] = 0.4488f, c->rgb_mean[1] = 0.4371f, c->rgb_mean[2] = 0.4040f;
    strcpy(c->loss_type, "L1Loss");
    c->loss_weight = 1.0f;
}

static void srcnn_cfg(pf_config *c, int scale) {
    memset(c, 0, sizeof *c);
    strcpy(c->model_type, "SRCNN");
    c->scale = scale;
    int ch[4] = { 3, 16, 8, 3 }, k[3] = { 9, 1, 5 };
    memcpy(c->srcnn_channels, ch, sizeof ch);
    memcpy(c->srcnn_kernel_sizes, k, sizeof k);
    strcpy(c->loss_type, "MSELoss");
    c->loss_weight = 1.0f;
}

static uint8_t *random_image(int h, int w, uint32_t seed) {
    uint8_t *p = malloc((size_t)h * w * 3);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < (size_t)h * w * 3; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (uint8_t)(x >> 24);
    }
    return p;
}

/* Naive transforms of an h x w image of c floats (or bytes, via the macro) per pixel. */
#define DEF_TRANSFORMS(T, SUF)                                                             \
    static void hflip_##SUF(const T *s, int h, int w, int c, T *d) {                       \
        for (int y = 0; y < h; y++)                                                        \
            for (int x = 0; x < w; x++)                                                    \
                for (int k = 0; k < c; k++)                                                \
                    d[((size_t)y * w + x) * c + k] = s[((size_t)y * w + (w - 1 - x)) * c + k]; \
    }                                                                                      \
    static void vflip_##SUF(const T *s, int h, int w, int c, T *d) {                       \
        for (int y = 0; y < h; y++)                                                        \
            memcpy(d + (size_t)y * w * c, s + (size_t)(h - 1 - y) * w * c,                 \
                   (size_t)w * c * sizeof(T));                                             \
    }                                                                                      \
    /* d is w x h */                                                                       \
    static void transpose_##SUF(const T *s, int h, int w, int c, T *d) {                   \
        for (int y = 0; y < h; y++)                                                        \
            for (int x = 0; x < w; x++)                                                    \
                for (int k = 0; k < c; k++)                                                \
                    d[((size_t)x * h + y) * c + k] = s[((size_t)y * w + x) * c + k];       \
    }
DEF_TRANSFORMS(uint8_t, u8)
DEF_TRANSFORMS(float, f)

static double max_abs(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > m) m = d;
    }
    return m;
}

static int max_u8_diff(const float *a, const float *b, size_t n) {
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t x, y;
        pf_to_u8(a + i, &x, 1);
        pf_to_u8(b + i, &y, 1);
        int d = abs((int)x - (int)y);
        if (d > m) m = d;
    }
    return m;
}

/* (a) ensemble == naive mean of the 8 transformed inferences; equivariance. */
static void test_ensemble(void) {
    char err[512];
    pf_config c;
    edsr_cfg(&c, 2, 2);
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!m) return;
    pf_model_init(m, 11);
    int h = 13, w = 19, s = 2, oh = h * s, ow = w * s;
    size_t n = (size_t)oh * ow * 3;
    uint8_t *lq = random_image(h, w, 1);
    uint8_t *a = malloc((size_t)h * w * 3), *b = malloc((size_t)h * w * 3);
    float *ref = calloc(n, sizeof *ref), *o = malloc(n * sizeof *o), *p = malloc(n * sizeof *p),
          *q = malloc(n * sizeof *q), *ens = malloc(n * sizeof *ens);
    /* the mean over {no transpose, transpose} x {no hflip, hflip} x {no vflip, vflip} */
    for (int t = 0; t < 8; t++) {
        int tr = t & 4, hf = t & 1, vf = t & 2;
        int th = tr ? w : h, tw = tr ? h : w;
        memcpy(a, lq, (size_t)h * w * 3);
        if (tr) transpose_u8(lq, h, w, 3, a);
        if (hf) { hflip_u8(a, th, tw, 3, b); memcpy(a, b, (size_t)h * w * 3); }
        if (vf) { vflip_u8(a, th, tw, 3, b); memcpy(a, b, (size_t)h * w * 3); }
        CHECK(pf_model_infer(m, a, th, tw, o, err, sizeof err) == 0, "%s", err);
        /* undo in reverse order: vflip, hflip, transpose */
        if (vf) { vflip_f(o, th * s, tw * s, 3, p); memcpy(o, p, n * sizeof *o); }
        if (hf) { hflip_f(o, th * s, tw * s, 3, p); memcpy(o, p, n * sizeof *o); }
        if (tr) { transpose_f(o, th * s, tw * s, 3, p); memcpy(o, p, n * sizeof *o); }
        for (size_t i = 0; i < n; i++) ref[i] += o[i] / 8;
    }
    pf_infer_opts e = { 1, 0, 0 }, plain = { 0, 0, 0 };
    CHECK(pf_infer(m, lq, h, w, &e, ens, err, sizeof err) == 0, "%s", err);
    double d = max_abs(ens, ref, n);
    CHECK(d <= 1e-5, "ensemble vs naive mean of 8: max abs %g", d);
    CHECK(pf_infer(m, lq, h, w, &plain, o, err, sizeof err) == 0, "%s", err);
    double dp = max_abs(ens, o, n);
    CHECK(dp > 1e-3, "the ensemble equals plain inference (%g): the test cannot tell", dp);

    /* equivariance: ensemble(hflip(x)) == hflip(ensemble(x)); transpose likewise */
    hflip_u8(lq, h, w, 3, a);
    CHECK(pf_infer(m, a, h, w, &e, p, err, sizeof err) == 0, "%s", err);
    hflip_f(ens, oh, ow, 3, q);
    d = max_abs(p, q, n);
    CHECK(d <= 1e-5, "ensemble(hflip x) vs hflip(ensemble x): max abs %g", d);
    transpose_u8(lq, h, w, 3, a);
    CHECK(pf_infer(m, a, w, h, &e, p, err, sizeof err) == 0, "%s", err);
    transpose_f(ens, oh, ow, 3, q);
    d = max_abs(p, q, n);
    CHECK(d <= 1e-5, "ensemble(transpose x) vs transpose(ensemble x): max abs %g", d);
    /* ... which a plain random network is not */
    hflip_u8(lq, h, w, 3, a);
    CHECK(pf_infer(m, a, h, w, &plain, p, err, sizeof err) == 0, "%s", err);
    hflip_f(o, oh, ow, 3, q);
    d = max_abs(p, q, n);
    CHECK(d > 1e-3, "plain inference is flip-equivariant (%g): the check cannot fail", d);
    printf("ensemble: vs naive %.3g, vs plain %.3g, plain equivariance error %.3g\n",
           max_abs(ens, ref, n), dp, d);

    /* pf_dihedral's inverse undoes it, for all 8 */
    for (int t = 0; t < 8; t++) {
        pf_dihedral(lq, h, w, 3, t, 0, a);
        pf_dihedral(a, h, w, 3, t, 1, b);
        CHECK(memcmp(b, lq, (size_t)h * w * 3) == 0, "dihedral %d: inverse does not undo", t);
    }
    free(lq), free(a), free(b), free(ref), free(o), free(p), free(q), free(ens);
    pf_model_destroy(&m);
}

/* (b) tiled vs untiled for one model; returns the largest float difference seen with
   overlap = `overlap`, over the listed tile sizes. */
static double tiled_vs_whole(pf_model *m, int s, int h, int w, const int *tiles, int n_tiles,
                             int overlap, int ensemble, int *u8_diff) {
    char err[512];
    size_t n = (size_t)h * s * w * s * 3;
    uint8_t *lq = random_image(h, w, 7);
    float *whole = malloc(n * sizeof *whole), *tiled = malloc(n * sizeof *tiled);
    pf_infer_opts o = { ensemble, 0, overlap };
    CHECK(pf_infer(m, lq, h, w, &o, whole, err, sizeof err) == 0, "%s", err);
    double worst = 0;
    *u8_diff = 0;
    for (int i = 0; i < n_tiles; i++) {
        o.tile = tiles[i];
        for (size_t k = 0; k < n; k++) tiled[k] = NAN;   /* every pixel must be written */
        CHECK(pf_infer(m, lq, h, w, &o, tiled, err, sizeof err) == 0, "%s", err);
        double d = max_abs(whole, tiled, n);
        if (!(d <= worst)) worst = d;     /* NaN counts as worst */
        int u = max_u8_diff(whole, tiled, n);
        if (u > *u8_diff) *u8_diff = u;
    }
    free(lq), free(whole), free(tiled);
    return worst;
}

static void test_tiles(void) {
    char err[512];
    pf_config c;
    edsr_cfg(&c, 2, 2);
    int r = pf_infer_receptive_radius(&c);
    CHECK(r == 8, "EDSR 2 blocks: receptive radius %d, expected 8", r);
    pf_model *m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!m) return;
    pf_model_init(m, 5);
    int tiles[] = { 7, 10, 16, 25 }, u;
    /* 37 x 41: 7, 10, 16 do not divide it; 25 + 2 * 8 covers the height, not the width */
    double d = tiled_vs_whole(m, 2, 37, 41, tiles, 4, r, 0, &u);
    CHECK(d <= 1e-4 && u <= 1, "EDSR tiled, overlap %d: max abs %g, uint8 %d", r, d, u);
    printf("EDSR x2 tiles 7/10/16/25 overlap %d: max abs %.3g, uint8 max diff %d\n", r, d, u);
    d = tiled_vs_whole(m, 2, 37, 41, tiles, 4, r + 5, 0, &u);
    CHECK(d <= 1e-4 && u <= 1, "EDSR tiled, overlap %d: max abs %g, uint8 %d", r + 5, d, u);
    int t8 = 8;
    d = tiled_vs_whole(m, 2, 37, 41, &t8, 1, 0, 0, &u);
    CHECK(d > 1e-3, "overlap 0 shows no seam (max abs %g): the comparison cannot fail", d);
    printf("EDSR x2 tile 8 overlap 0 (seams expected): max abs %.3g, uint8 max diff %d\n", d, u);
    d = tiled_vs_whole(m, 2, 37, 41, &t8, 1, 3, 0, &u);
    CHECK(d > 1e-4, "overlap 3 < radius 8 shows no seam (max abs %g)", d);
    /* ensemble and tiles combine (the transposed images are tiled too) */
    d = tiled_vs_whole(m, 2, 21, 30, tiles + 1, 1, r, 1, &u);
    CHECK(d <= 1e-4 && u <= 1, "ensemble + tile 10: max abs %g, uint8 %d", d, u);
    pf_model_destroy(&m);
    char mode[192];
    c.eval_tile = 8, c.eval_tile_overlap = 3;
    pf_infer_describe(&c, mode, sizeof mode);
    CHECK(!strcmp(mode, "tile 8 overlap 3 < receptive radius 8: seams possible"), "'%s'", mode);
    c.eval_tile_overlap = 8, c.eval_ensemble = 1;
    pf_infer_describe(&c, mode, sizeof mode);
    CHECK(!strcmp(mode, "x8 ensemble, tile 8 overlap 8"), "'%s'", mode);

    edsr_cfg(&c, 4, 1);
    m = pf_model_new(&c, err, sizeof err);
    if (m) {
        pf_model_init(m, 6);
        d = tiled_vs_whole(m, 4, 19, 23, tiles, 2, pf_infer_receptive_radius(&c), 0, &u);
        CHECK(d <= 1e-4 && u <= 1, "EDSR x4 tiled: max abs %g, uint8 %d", d, u);
        pf_model_destroy(&m);
    }

    srcnn_cfg(&c, 3);
    r = pf_infer_receptive_radius(&c);
    CHECK(r == 4, "SRCNN 9-1-5 x3: receptive radius %d, expected 2 + ceil(6/3) = 4", r);
    m = pf_model_new(&c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!m) return;
    pf_model_init(m, 9);
    d = tiled_vs_whole(m, 3, 22, 17, tiles, 3, r, 0, &u);
    CHECK(d <= 1e-4 && u <= 1, "SRCNN tiled, overlap %d: max abs %g, uint8 %d", r, d, u);
    printf("SRCNN x3 tiles 7/10/16 overlap %d: max abs %.3g, uint8 max diff %d\n", r, d, u);
    d = tiled_vs_whole(m, 3, 22, 17, &t8, 1, 0, 0, &u);
    CHECK(d > 1e-3, "SRCNN overlap 0 shows no seam (max abs %g)", d);
    pf_model_destroy(&m);
}

/* (b) for the graph networks: MSRResNet (bilinear skip) and RRDBNet x2 (pixel-unshuffled
   input: tiles aligned to 2, else the 2x2 groups differ) tile exactly; RCAN's channel
   attention pools the whole image, which pf_infer_describe says. */
static void test_graph_tiles(void) {
    char err[512], buf[256];
    const int tiles[3] = { 6, 9, 14 };
    static const struct { const char *type; int scale, h, w; } nets[] = {
        { "MSRResNet", 3, 21, 26 }, { "RRDBNet", 2, 40, 46 }, { "FSRCNN", 2, 19, 23 },
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        pf_config c;
        edsr_cfg(&c, nets[i].scale, 2);
        strcpy(c.model_type, nets[i].type);
        c.n_blocks = 1, c.num_grow_ch = 4, c.fsrcnn_d = 8, c.fsrcnn_s = 4, c.fsrcnn_m = 1;
        if (!strcmp(nets[i].type, "RRDBNet")) c.n_blocks = 0;   /* radius 8: several windows */
        c.num_group = 1, c.squeeze_factor = 4;
        int r = pf_infer_receptive_radius(&c), u;
        pf_model *m = pf_model_new(&c, err, sizeof err);
        CHECK(m != NULL, "%s: %s", nets[i].type, err);
        if (!m) continue;
        pf_model_init(m, 11);
        double d = tiled_vs_whole(m, c.scale, nets[i].h, nets[i].w, tiles, 3, r, 0, &u);
        CHECK(d <= 1e-4 && u <= 1, "%s tiled, overlap %d: max abs %g, uint8 %d", nets[i].type, r,
              d, u);
        printf("%s x%d tiles 6/9/14 overlap %d: max abs %.3g, uint8 max diff %d\n",
               nets[i].type, c.scale, r, d, u);
        d = tiled_vs_whole(m, c.scale, nets[i].h, nets[i].w, tiles, 1, 0, 0, &u);
        CHECK(d > 1e-3, "%s overlap 0 shows no seam (max abs %g)", nets[i].type, d);
        pf_model_destroy(&m);
    }
    pf_config c;
    edsr_cfg(&c, 2, 2);
    strcpy(c.model_type, "RCAN");
    c.eval_tile = 32, c.eval_tile_overlap = 40;
    pf_infer_describe(&c, buf, sizeof buf);
    CHECK(strstr(buf, "RCAN pools the whole image") != NULL, "RCAN tiling not flagged: '%s'", buf);
}

/* Peak resident memory (KiB) of a fresh child process that builds EDSR (32 features, 4
   blocks) x2 and infers one 320 x 320 LQ image with tile `tile` (0 = whole), overlap 12;
   -1 on failure. */
static long peak_rss_kib(int tile) {
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        alarm(120);   /* a hung child fails the check instead of the test hanging */
        pf_config c;
        char err[512];
        edsr_cfg(&c, 2, 4);
        c.n_feats = 32;
        pf_model *m = pf_model_new(&c, err, sizeof err);
        int h = 320, w = 320;
        uint8_t *lq = random_image(h, w, 3);
        float *out = malloc((size_t)h * w * 4 * 3 * sizeof *out);
        pf_infer_opts o = { 0, tile, 12 };
        long kib = -1;
        if (m && lq && out) {
            pf_model_init(m, 1);
            struct rusage r;
            if (pf_infer(m, lq, h, w, &o, out, err, sizeof err) == 0 &&
                getrusage(RUSAGE_SELF, &r) == 0)
                kib = r.ru_maxrss;
        }
        if (write(fd[1], &kib, sizeof kib) != sizeof kib) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    long kib = -1;
    if (pid < 0 || read(fd[0], &kib, sizeof kib) != sizeof kib) kib = -1;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return kib;
}

/* Memory bounded by the tile: a tiled inference's peak is far below the whole image's. */
static void test_tile_memory(void) {
    long whole = peak_rss_kib(0), tiled = peak_rss_kib(32);
    printf("peak RSS, EDSR-32x4 x2 on 320x320: whole %ld MiB, tile 32 overlap 12 %ld MiB\n",
           whole / 1024, tiled / 1024);
    CHECK(whole > 0 && tiled > 0, "peak RSS not measured (%ld, %ld)", whole, tiled);
    CHECK(tiled * 2 < whole, "tiled peak %ld KiB is not below half the whole image's %ld KiB",
          tiled, whole);
}

/* (c) end to end through `pixflow test`. */
static char root[256];

static void write_png(const char *path, const uint8_t *px, int w, int h) {
    char err[512];
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
}

/* A smooth GT (sums of sinusoids) and its MATLAB-bicubic x2 LQ. */
static void make_pair(int h, int w, int seed, uint8_t **gt, uint8_t **lq) {
    *gt = malloc((size_t)h * w * 3);
    *lq = malloc((size_t)(h / 2) * (w / 2) * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 3; k++)
                (*gt)[((size_t)y * w + x) * 3 + k] = (uint8_t)lround(
                    127.5 + 60 * sin(0.31 * x + 0.7 * k + seed) + 50 * cos(0.23 * y - 0.4 * k +
                    0.17 * x * (seed % 3 == 0)));
    pf_imresize_u8(*gt, h, w, 3, 0.5, *lq);
}

static int run_test(const char *cfg, const char *ck, char **out) {
    const char *bin = getenv("PF_BIN") ? getenv("PF_BIN") : "./pixflow";
    char cmd[2048], path[400];
    snprintf(path, sizeof path, "%s/out.txt", root);
    snprintf(cmd, sizeof cmd, "'%s' test '%s' --checkpoint '%s' > '%s' 2>&1", bin, cfg, ck,
             path);
    int st = system(cmd);
    char err[256];
    *out = pf_read_file(path, NULL, err, sizeof err);
    if (!*out) *out = strdup("");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The mean PSNR from results.tsv's last line ("mean\t<psnr>\t..."), NaN if absent. */
static double mean_psnr(const char *wd) {
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/test/trained/results.tsv", wd);
    char *t = pf_read_file(path, NULL, err, sizeof err);
    const char *p = t ? strstr(t, "\nmean\t") : NULL;
    double v = p ? atof(p + 6) : NAN;
    free(t);
    return v;
}

static void test_cli(void) {
    char err[1024], gtd[300], lqd[300], ck[300];
    snprintf(root, sizeof root, "/tmp/pf_test_infer_%d", (int)getpid());
    snprintf(gtd, sizeof gtd, "%s/gt", root);
    snprintf(lqd, sizeof lqd, "%s/lq", root);
    pf_mkdirs(gtd, err, sizeof err);
    pf_mkdirs(lqd, err, sizeof err);
    uint8_t *gt[3], *lq[3];
    int hw[3][2] = { { 32, 40 }, { 36, 28 }, { 30, 30 } };
    for (int i = 0; i < 3; i++) {
        char p[400];
        make_pair(hw[i][0], hw[i][1], i + 1, &gt[i], &lq[i]);
        snprintf(p, sizeof p, "%s/im%d.png", gtd, i);
        write_png(p, gt[i], hw[i][1], hw[i][0]);
        snprintf(p, sizeof p, "%s/im%d.png", lqd, i);
        write_png(p, lq[i], hw[i][1] / 2, hw[i][0] / 2);
    }
    const char *modes[] = { "", "eval_cfg: {ensemble: true}\n",
                            "eval_cfg: {tile: 6, tile_overlap: 8}\n" };
    char cfgs[3][400], wds[3][400];
    for (int i = 0; i < 3; i++) {
        snprintf(cfgs[i], sizeof cfgs[i], "%s/c%d.yaml", root, i);
        snprintf(wds[i], sizeof wds[i], "%s/wd%d", root, i);
        FILE *f = fopen(cfgs[i], "w");
        fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 2}\n"
                   "data:\n  test: {type: PairedImageDataset, gt_folder: %s, lq_folder: %s}\n"
                   "  eval: {type: PairedImageDataset, gt_folder: %s, lq_folder: %s}\n"
                   "checkpoint_config: {interval: 1}\n"
                   "evaluation: {interval: 1, metrics: [PSNR], crop_border: 2}\n%s"
                   "optimizers: {lr: 1.0e-3}\ntotal_iters: 1\nseed: 3\nwork_dir: %s\n",
                gtd, lqd, gtd, lqd, modes[i], wds[i]);
        fclose(f);
    }
    /* a checkpoint trained here: 800 Adam steps on 12x12 LQ crops of the three pairs */
    static pf_config cfg;
    CHECK(pf_config_load(&cfg, cfgs[0], err, sizeof err) == 0, "%s", err);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!m) return;
    pf_model_init(m, 3);
    pf_adam adam;
    pf_adam_init(&adam, pf_model_num_params(m), 0.9f, 0.999f, 1e-8f, 0);
    uint8_t blq[3 * 12 * 12 * 3], bgt[3 * 24 * 24 * 3];
    for (int it = 0; it < 800; it++) {
        for (int i = 0; i < 3; i++) {
            int lw = hw[i][1] / 2, oy = it % 3, ox = (it / 3) % 2;
            for (int y = 0; y < 12; y++)
                memcpy(blq + ((size_t)i * 144 + y * 12) * 3,
                       lq[i] + ((size_t)(oy + y) * lw + ox) * 3, 36);
            for (int y = 0; y < 24; y++)
                memcpy(bgt + ((size_t)i * 576 + y * 24) * 3,
                       gt[i] + ((size_t)(2 * oy + y) * hw[i][1] + 2 * ox) * 3, 72);
        }
        /* flip/transpose augmentation (BasicSR use_flip + use_rot): without it a network
           this small and briefly trained is orientation-specific and the ensemble hurts */
        for (int i = 0; i < 3; i++) {
            uint8_t tl[12 * 12 * 3], tg[24 * 24 * 3];
            pf_dihedral(blq + (size_t)i * 432, 12, 12, 3, (it + i) % 8, 0, tl);
            pf_dihedral(bgt + (size_t)i * 1728, 24, 24, 3, (it + i) % 8, 0, tg);
            memcpy(blq + (size_t)i * 432, tl, sizeof tl);
            memcpy(bgt + (size_t)i * 1728, tg, sizeof tg);
        }
        float loss;
        CHECK(pf_model_train_step(m, blq, bgt, 3, 12, 12, &loss, err, sizeof err) == 0, "%s",
              err);
        pf_adam_step(&adam, pf_model_params(m), pf_model_grads(m), 2e-3f * (1 - it / 800.0f));
    }
    pf_adam_free(&adam);
    void *wbuf = NULL;
    size_t wlen = 0;
    CHECK(pf_ckpt_serialize(&cfg, m, NULL, 0, 0, 0.0, &wbuf, &wlen, NULL, NULL, err,
                             sizeof err) == 0, "%s", err);
    snprintf(ck, sizeof ck, "%s/trained.safetensors", root);
    CHECK(wbuf && pf_write_file_atomic(ck, wbuf, wlen, err, sizeof err) == 0, "%s", err);
    free(wbuf);
    pf_model_destroy(&m);

    double psnr[3];
    const char *say[] = { "inference: whole image", "inference: x8 ensemble",
                          "inference: tile 6 overlap 8)" };
    for (int i = 0; i < 3; i++) {
        char *out;
        int st = run_test(cfgs[i], ck, &out);
        CHECK(st == 0, "pixflow test (%s): status %d:\n%s", say[i], st, out);
        CHECK(strstr(out, say[i]) != NULL, "the output does not say '%s':\n%s", say[i], out);
        free(out);
        psnr[i] = mean_psnr(wds[i]);
    }
    printf("pixflow test PSNR-RGB: plain %.4f dB, x8 ensemble %.4f dB, tile 6 overlap 8 "
           "%.4f dB\n", psnr[0], psnr[1], psnr[2]);
    CHECK(isfinite(psnr[0]) && isfinite(psnr[1]) && isfinite(psnr[2]), "PSNR missing");
    CHECK(fabs(psnr[1] - psnr[0]) > 1e-3, "ensemble PSNR %.4f equals plain %.4f", psnr[1],
          psnr[0]);
    CHECK(psnr[1] >= psnr[0], "ensemble PSNR %.4f below plain %.4f", psnr[1], psnr[0]);
    CHECK(fabs(psnr[2] - psnr[0]) <= 1e-3, "tiled PSNR %.4f vs plain %.4f", psnr[2], psnr[0]);
    for (int i = 0; i < 3; i++) free(gt[i]), free(lq[i]);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
}

int main(void) {
    test_tile_memory();   /* first: fork after oneDNN's OpenMP threads started can hang */
    test_ensemble();
    test_tiles();
    test_graph_tiles();
    test_cli();
    return pf_test_end("test_infer");
}
