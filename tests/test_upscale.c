/*  `pixflow upscale` (cli/upscale.c) against `pixflow test` and against itself on other paths.
    The checkpoint is an EDSR's seeded initialisation (pf_model_init) written here
    (pf_ckpt_serialize).
    (a) its outputs of RGB8 PNG and JPEG inputs equal `pixflow test`'s on a SingleImageDataset
        of the same files, pixel for pixel (same rounding); a work dir, a checkpoint file with
        config.yaml one folder up, a folder, a quoted glob all give them, and so does a work
        dir whose config names training data that is not there;
    (b) tiled (--tile 17 and 23, which do not divide the image; default overlap = receptive
        radius) equals untiled within 1 grey level; --tile auto on a small image is untiled,
        and with little memory (PIXFLOW_MEM_AVAILABLE) picks the tile its estimate allows;
        --tile-overlap 0 warns (below the receptive radius) and shows seams (> 1 grey level);
    (c) a 16-bit RGBA PNG comes back 16-bit RGBA at 2x (the IHDR bytes read here), its RGB
        within 2/255 of the 8-bit path's output for the same values (input low bytes zero), its
        alpha within 2/255 of 0.299 R + 0.587 G + 0.114 B of the 8-bit path's output of the
        alpha plane as a gray RGB image (Real-ESRGAN's alpha rule, computed here); the same
        plane as an 8-bit gray PNG comes back gray, within 1 of that weighted sum;
    (d) bad input: a text file named x.png, weights of another network, an output folder that
        cannot be made, an existing output without --force, an empty file named clip.mp4 (not
        a video FFmpeg reads), a checkpoint with no
        config beside it: exit status non-zero, the message names the file, nothing written
        under the final name (the existing output untouched); --force then overwrites; a PNG
        whose header reads but whose pixels are cut short, after a good image: the good one
        written, nothing else in the output folder (no temporary file left either);
    (e) a checkpoint with params_ema.* (0.9 x the weights, written here): upscale uses them and
        equals `pixflow test` on that checkpoint, and differs from the plain weights' output;
    (f) --ensemble equals `pixflow test` with eval_cfg.ensemble (x8 self-ensemble) pixel for
        pixel, and differs from the plain output;
    (d') --device cuda:0 with CUDA_VISIBLE_DEVICES empty fails naming cuda:0, nothing written;
        --device gpu is a usage error.
    `test_upscale demo_photos`: (a) on data/demo/val (scripts/fetch-demo-data.sh); 77 when the
    photos are not there. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/file_list.h"
#include "common/image.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test.h"
#include "pf_test_upscale.h"

static char root[256];

/* A smooth-ish test picture (so the network's output is not saturated). */
static void picture(uint8_t *px, int w, int h, int ch, int seed) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++)
                px[((size_t)y * w + x) * ch + c] =
                    (uint8_t)(128 + 90 * ((x * (c + 2) + y * (3 - c) + seed * 7) % 23) / 23 -
                              45 + ((x * y + seed) % 5));
}

static void write_png(const char *dir, const char *name, int w, int h, int seed) {
    uint8_t *px = malloc((size_t)w * h * 3);
    picture(px, w, h, 3, seed);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(pf_image_write_png(path, px, w, h, err, sizeof err) == 0, "%s", err);
    free(px);
}

static void write_jpeg(const char *dir, const char *name, int w, int h, int seed) {
    uint8_t *px = malloc((size_t)w * h * 3), *buf = NULL;
    size_t len = 0;
    picture(px, w, h, 3, seed);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(pf_image_encode_jpeg(px, w, h, 90, &buf, &len, err, sizeof err) == 0 &&
          pf_write_file_atomic(path, buf, len, err, sizeof err) == 0, "%s", err);
    free(px);
    free(buf);
}

/* Max abs difference of two RGB8 images (-1: unreadable or sizes differ). */
static int max_diff(const char *a, const char *b) {
    pf_image x, y;
    char err[512];
    if (pf_image_read(a, &x, err, sizeof err)) return fprintf(stderr, "%s\n", err), -1;
    if (pf_image_read(b, &y, err, sizeof err)) return pf_image_free(&x), fprintf(stderr, "%s\n", err), -1;
    int d = x.w == y.w && x.h == y.h ? 0 : -1;
    for (size_t i = 0; d >= 0 && i < (size_t)x.w * x.h * 3; i++) {
        int e = abs((int)x.data[i] - (int)y.data[i]);
        if (e > d) d = e;
    }
    pf_image_free(&x);
    pf_image_free(&y);
    return d;
}

static void write_cfg(const char *path, const char *lq, const char *wd, int n_feats) {
    FILE *f = fopen(path, "w");
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: %d, n_blocks: 2}\n"
               "data:\n  test: {type: SingleImageDataset, lq_folder: %s}\n"
               "optimizers: {lr: 1.0e-3}\ntotal_iters: 1\nseed: 3\nwork_dir: %s\n",
            n_feats, lq, wd);
    fclose(f);
}

/* The seeded initial weights of cfg_path's network into path: on the pictures here the
   output spans about 84..137 grey, following the input. */
static void write_weights(const char *cfg_path, const char *path) {
    pf_test_seeded_weights(cfg_path, path, 7);
}

/* `pixflow test CFG --checkpoint CK` (outputs in work_dir/test/<CK's stem>/). */
static void pixflow_test(const char *cfg, const char *ck) {
    char *out;
    int st = pf_test_run(root, &out, "'%s' test '%s' --checkpoint '%s'", pf_test_bin(), cfg, ck);
    CHECK(st == 0, "pixflow test %s: status %d:\n%s", ck, st, out);
    free(out);
}

/* A work dir for lq (config.yaml + checkpoints/iter_5.safetensors); `pixflow test` on it
   into wd/test/iter_5/. */
static void make_work_dir(const char *wd, const char *lq) {
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/checkpoints", wd);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/config.yaml", wd);
    write_cfg(path, lq, wd, 8);
    char ck[600];
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", wd);
    write_weights(path, ck);
    pixflow_test(path, ck);
}

/* (a) on the images of lq: every output of `upscale` into od equals `pixflow test`'s. */
static void same_as_test(const char *wd, const char *od, const char **names, int n) {
    for (int i = 0; i < n; i++) {
        char a[700], b[700];
        snprintf(a, sizeof a, "%s/test/iter_5/%s.png", wd, names[i]);
        snprintf(b, sizeof b, "%s/%s.png", od, names[i]);
        int d = max_diff(a, b);
        CHECK(d == 0, "%s vs %s: max difference %d (want 0)", b, a, d);
    }
}

static int demo_photos(void) {
    const char *src = getenv("PF_SOURCE_DIR") ? getenv("PF_SOURCE_DIR") : ".";
    char val[600], wd[300], od[300], *out;
    snprintf(val, sizeof val, "%s/data/demo/val", src);
    if (!pf_is_dir(val)) {
        printf("test_upscale demo_photos: %s not fetched (scripts/fetch-demo-data.sh)\n", val);
        return 77;
    }
    snprintf(wd, sizeof wd, "%s/wd", root);
    snprintf(od, sizeof od, "%s/out", root);
    make_work_dir(wd, val);
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s' -o '%s'", pf_test_bin(), wd, val, od);
    CHECK(st == 0, "upscale: status %d:\n%s", st, out);
    free(out);
    const char *names[] = { "astronaut", "chelsea", "coffee", "motorcycle_left" };
    same_as_test(wd, od, names, 4);
    return 0;
}

/* (b): tiles against the untiled outputs in od. */
static void tiles(const char *wd, const char *lq, const char *od) {
    char *out, t[400], a[700], b[700];
    for (int tile = 17; tile <= 23; tile += 6) {
        snprintf(t, sizeof t, "%s/tile%d", root, tile);
        int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s/big.png' -o '%s' --tile %d", pf_test_bin(), wd, lq, t,
                     tile);
        CHECK(st == 0, "--tile %d: status %d:\n%s", tile, st, out);
        free(out);
        snprintf(a, sizeof a, "%s/big.png", od);
        snprintf(b, sizeof b, "%s/big.png", t);
        int d = max_diff(a, b);
        CHECK(d >= 0 && d <= 1, "--tile %d: max difference %d from untiled (want <= 1)", tile, d);
    }
    snprintf(t, sizeof t, "%s/auto", root);
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s/big.png' -o '%s' --tile auto", pf_test_bin(), wd, lq, t);
    CHECK(st == 0 && strstr(out, "tile 0)"), "--tile auto: status %d:\n%s", st, out);
    free(out);
    snprintf(b, sizeof b, "%s/big.png", t);
    CHECK(max_diff(a, b) == 0, "--tile auto on a small image differs from untiled");
    /* with memory for a window of about 1300 pixels (its estimate per pixel from the log
       line): tile sqrt(1300) - 2 x overlap (8) = 20 */
    double per = 0;
    snprintf(t, sizeof t, "%s/auto2", root);
    st = pf_test_run(root, &out, "'%s' upscale '%s' '%s/big.png' -o '%s/auto_probe' --tile auto", pf_test_bin(), wd,
             lq, root);
    const char *p = strstr(out, "activations <= ");
    if (p) per = atof(p + strlen("activations <= "));
    free(out);
    CHECK(per > 100, "no activation estimate in the start-up line");
    st = pf_test_run(root, &out, "PIXFLOW_MEM_AVAILABLE=%.0f '%s' upscale '%s' '%s/big.png' -o '%s' --tile auto",
             2 * per * 1300, pf_test_bin(), wd, lq, t);
    CHECK(st == 0 && strstr(out, "tile 20)"), "--tile auto, little memory: status %d:\n%s", st,
          out);
    free(out);
    snprintf(b, sizeof b, "%s/big.png", t);
    int d = max_diff(a, b);
    CHECK(d >= 0 && d <= 1, "--tile auto (tile 20): max difference %d from untiled", d);
    /* an overlap below the receptive radius (8 here): a warning, and indeed seams */
    snprintf(t, sizeof t, "%s/tile_overlap0", root);
    st = pf_test_run(root, &out, "'%s' upscale '%s' '%s/big.png' -o '%s' --tile 17 "
                     "--tile-overlap 0", pf_test_bin(), wd, lq, t);
    CHECK(st == 0 && strstr(out, "below the receptive radius"), "--tile-overlap 0: status %d, "
          "no warning:\n%s", st, out);
    free(out);
    snprintf(b, sizeof b, "%s/big.png", t);
    CHECK(max_diff(a, b) > 1, "--tile-overlap 0: no seam, so the tiling test above cannot fail");
}

/* (c): a 16-bit RGBA PNG. */
static void deep_alpha(const char *wd) {
    int w = 21, h = 15;
    char dir[400], od[400], path[600], err[512], *out;
    snprintf(dir, sizeof dir, "%s/deep", root);
    snprintf(od, sizeof od, "%s/deep_out", root);
    CHECK(pf_mkdirs(dir, err, sizeof err) == 0, "%s", err);
    uint8_t *rgb = malloc((size_t)w * h * 3), *alpha = malloc((size_t)w * h * 3);
    uint16_t *rgba = malloc((size_t)w * h * 4 * 2);
    picture(rgb, w, h, 3, 5);
    for (int i = 0; i < w * h; i++) {
        uint8_t a = (uint8_t)(i % w * 12);           /* a horizontal ramp */
        alpha[i * 3] = alpha[i * 3 + 1] = alpha[i * 3 + 2] = a;
        for (int c = 0; c < 3; c++) rgba[i * 4 + c] = (uint16_t)(rgb[i * 3 + c] << 8);
        rgba[i * 4 + 3] = (uint16_t)(a << 8);
    }
    pf_image_full img = { w, h, 4, 16, rgba };
    snprintf(path, sizeof path, "%s/c16.png", dir);
    CHECK(pf_image_write_png_full(path, &img, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/c8.png", dir);
    CHECK(pf_image_write_png(path, rgb, w, h, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/a8.png", dir);
    CHECK(pf_image_write_png(path, alpha, w, h, err, sizeof err) == 0, "%s", err);
    uint8_t *gray = malloc((size_t)w * h);      /* the alpha plane again, as a gray PNG */
    for (int i = 0; i < w * h; i++) gray[i] = alpha[i * 3];
    pf_image_full g8 = { w, h, 1, 8, gray };
    snprintf(path, sizeof path, "%s/g8.png", dir);
    CHECK(pf_image_write_png_full(path, &g8, err, sizeof err) == 0, "%s", err);
    free(gray);
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s' -o '%s'", pf_test_bin(), wd, dir, od);
    CHECK(st == 0, "16-bit RGBA: status %d:\n%s", st, out);
    free(out);
    /* the IHDR of the output, byte by byte: width, height, bit depth 16, colour type 6 */
    snprintf(path, sizeof path, "%s/c16.png", od);
    size_t len = 0;
    uint8_t *png = (uint8_t *)pf_read_file(path, &len, err, sizeof err);
    CHECK(png && len > 33 && !memcmp(png + 12, "IHDR", 4), "%s: no IHDR", path);
    if (png && len > 33) {
        uint32_t ow = (uint32_t)png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19];
        uint32_t oh = (uint32_t)png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23];
        CHECK(ow == (uint32_t)w * 2 && oh == (uint32_t)h * 2, "%s: %ux%u", path, ow, oh);
        CHECK(png[24] == 16 && png[25] == 6, "%s: bit depth %d colour type %d (want 16, 6)",
              path, png[24], png[25]);
    }
    free(png);
    pf_image_full o16 = { 0 }, og = { 0 };
    pf_image o8 = { 0 }, oa = { 0 };
    char p8[600], pa[600], pg[600];
    snprintf(p8, sizeof p8, "%s/c8.png", od);
    snprintf(pa, sizeof pa, "%s/a8.png", od);
    snprintf(pg, sizeof pg, "%s/g8.png", od);
    CHECK(pf_image_read_full(pg, &og, err, sizeof err) == 0, "%s", err);
    CHECK(og.channels == 1 && og.depth == 8, "gray in: %d channels %d bits out (want 1, 8)",
          og.channels, og.depth);
    double dgray = og.channels == 1 ? 0 : 255;
    CHECK(pf_image_read_full(path, &o16, err, sizeof err) == 0 &&
          pf_image_read(p8, &o8, err, sizeof err) == 0 &&
          pf_image_read(pa, &oa, err, sizeof err) == 0, "%s", err);
    double drgb = 0, dalpha = 0;
    int distinct = 0;
    for (int i = 0; o16.data && o8.data && oa.data && i < 4 * w * h; i++) {
        const uint16_t *p = (const uint16_t *)o16.data + i * 4;
        for (int c = 0; c < 3; c++) {
            double d = fabs(p[c] / 257.0 - o8.data[i * 3 + c]);
            if (d > drgb) drgb = d;
        }
        const uint8_t *q = oa.data + i * 3;
        double want = 0.299 * q[0] + 0.587 * q[1] + 0.114 * q[2];
        if (fabs(p[3] / 257.0 - want) > dalpha) dalpha = fabs(p[3] / 257.0 - want);
        if (og.channels == 1 && fabs(((const uint8_t *)og.data)[i] - want) > dgray)
            dgray = fabs(((const uint8_t *)og.data)[i] - want);
        distinct += p[0] % 257 != 0;   /* not 8-bit values: the 16 bits are used */
    }
    CHECK(o16.channels == 4 && o16.depth == 16, "read back: %d channels, %d bits", o16.channels,
          o16.depth);
    CHECK(drgb <= 2.0, "16-bit RGB vs 8-bit path: max difference %.2f/255 (want <= 2)", drgb);
    CHECK(dalpha <= 2.0, "alpha vs gray of the alpha plane's output: max %.2f/255", dalpha);
    CHECK(dgray <= 1.0, "gray PNG vs gray of its RGB output: max %.2f (want <= 1)", dgray);
    CHECK(distinct > w * h, "only %d of %d red samples are not multiples of 257", distinct,
          4 * w * h);
    pf_image_full_free(&o16);
    pf_image_full_free(&og);
    pf_image_free(&o8);
    pf_image_free(&oa);
    free(rgb);
    free(alpha);
    free(rgba);
}

/* src's tensors plus params_ema.<name> = 0.9 x each, into dst (an EMA unlike the weights). */
static void add_ema(const char *src, const char *dst) {
    pf_safetensors *st = NULL;
    char err[512];
    CHECK(pf_safetensors_load(src, &st, err, sizeof err) == 0, "%s", err);
    int n = st ? pf_safetensors_count(st) : 0;
    pf_st_tensor *t = calloc((size_t)2 * n + 1, sizeof *t);
    char **names = calloc((size_t)n + 1, sizeof *names);
    float **scaled = calloc((size_t)n + 1, sizeof *scaled);
    for (int i = 0; i < n; i++) {
        pf_st_tensor *a = &t[i], *e = &t[n + i];
        a->data = pf_safetensors_at(st, i, &a->name, &a->ndim, a->shape);
        size_t numel = 1;
        for (int k = 0; k < a->ndim; k++) numel *= (size_t)a->shape[k];
        scaled[i] = malloc(numel * sizeof(float));
        for (size_t k = 0; k < numel; k++) scaled[i][k] = 0.9f * a->data[k];
        names[i] = malloc(strlen(a->name) + 16);
        sprintf(names[i], "params_ema.%s", a->name);
        *e = *a;
        e->name = names[i];
        e->data = scaled[i];
    }
    void *buf = NULL;
    size_t len = 0;
    CHECK(pf_safetensors_serialize(t, 2 * n, NULL, 0, &buf, &len, err, sizeof err) == 0 &&
          pf_write_file_atomic(dst, buf, len, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) free(names[i]), free(scaled[i]);
    free(names);
    free(scaled);
    free(t);
    free(buf);
    pf_safetensors_free(&st);
}

/* (e): a checkpoint with params_ema: upscale uses them, as `pixflow test` does. */
static void ema(const char *wd, const char *lq, const char *od) {
    char ck[600], cfg[600], eo[400], a[700], b[700], c[700], *out;
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", wd);
    snprintf(cfg, sizeof cfg, "%s/config.yaml", wd);
    snprintf(eo, sizeof eo, "%s/ema_ck", root);
    char ema_ck[700];
    snprintf(ema_ck, sizeof ema_ck, "%s/withema.safetensors", root);
    add_ema(ck, ema_ck);
    pixflow_test(cfg, ema_ck);
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s/a.png' -o '%s' --config '%s'", pf_test_bin(), ema_ck, lq, eo, cfg);
    CHECK(st == 0 && strstr(out, "EMA weights"), "upscale with EMA: status %d:\n%s", st, out);
    free(out);
    snprintf(a, sizeof a, "%s/test/withema/a.png", wd);
    snprintf(b, sizeof b, "%s/a.png", eo);
    snprintf(c, sizeof c, "%s/a.png", od);
    CHECK(max_diff(a, b) == 0, "EMA: %s differs from pixflow test's %s", b, a);
    CHECK(max_diff(b, c) > 0, "EMA: %s equals the plain weights' output %s", b, c);
}

/* (f): --ensemble equals `pixflow test` with eval_cfg.ensemble (the x8 self-ensemble), and
   differs from the plain output. */
static void ensemble(const char *wd, const char *lq, const char *od) {
    char we[400], path[600], ck[600], src[600], oe[400], err[512], *out;
    snprintf(we, sizeof we, "%s/wd_ens", root);
    snprintf(path, sizeof path, "%s/checkpoints", we);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/config.yaml", we);
    write_cfg(path, lq, we, 8);
    FILE *f = fopen(path, "a");
    if (f) fputs("eval_cfg: {ensemble: true}\n", f), fclose(f);
    snprintf(src, sizeof src, "%s/checkpoints/iter_5.safetensors", wd);
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", we);
    size_t n = 0;
    char *bytes = pf_read_file(src, &n, err, sizeof err);
    CHECK(bytes && pf_write_file_atomic(ck, bytes, n, err, sizeof err) == 0, "%s", err);
    free(bytes);
    pixflow_test(path, ck);
    snprintf(oe, sizeof oe, "%s/out_ens", root);
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s' -o '%s' --ensemble", pf_test_bin(),
                         we, lq, oe);
    CHECK(st == 0 && strstr(out, "x8 ensemble"), "--ensemble: status %d:\n%s", st, out);
    free(out);
    const char *names[] = { "a", "b", "big" };
    same_as_test(we, oe, names, 3);
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/a.png", oe);
    snprintf(b, sizeof b, "%s/a.png", od);
    CHECK(max_diff(a, b) > 0, "--ensemble: %s equals the plain output %s", a, b);
}

/* (d): one failing command: non-zero, `name` in its message, `absent` not created. */
static void refused(const char *what, const char *name, const char *absent, const char *cmd) {
    char *out;
    int st = pf_test_run(root, &out, "%s", cmd);
    CHECK(st != 0 && st != -1, "%s: status %d:\n%s", what, st, out);
    CHECK(strstr(out, name) != NULL, "%s: the message does not name %s:\n%s", what, name, out);
    CHECK(!absent || access(absent, F_OK) != 0, "%s: %s was written", what, absent);
    free(out);
}

static void bad_input(const char *wd, const char *lq, const char *od) {
    char p[700], q[700], cmd[4096], err[256];
    snprintf(p, sizeof p, "%s/x.png", root);
    FILE *f = fopen(p, "w");
    fputs("this is not a picture\n", f);
    fclose(f);
    snprintf(q, sizeof q, "%s/bad1/x.png", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/bad1'", pf_test_bin(), wd, p, root);
    refused("a text file named x.png", p, q, cmd);

    char other_cfg[600], other[600];          /* another network's weights (n_feats 16) */
    snprintf(other_cfg, sizeof other_cfg, "%s/other.yaml", root);
    write_cfg(other_cfg, lq, wd, 16);
    snprintf(other, sizeof other, "%s/other.safetensors", root);
    write_weights(other_cfg, other);
    snprintf(q, sizeof q, "%s/bad2/a.png", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s/a.png' -o '%s/bad2' --config '%s/config.yaml'",
             pf_test_bin(), other, lq, root, wd);
    refused("weights of another network", other, q, cmd);

    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s/a.png' -o '%s/sub'", pf_test_bin(), wd, lq, p);
    refused("an output folder under a file", p, NULL, cmd);

    snprintf(q, sizeof q, "%s/a.png", od);
    size_t before_len = 0, after_len = 0;
    char *before = pf_read_file(q, &before_len, err, sizeof err);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s'", pf_test_bin(), wd, lq, od);
    refused("an existing output without --force", q, NULL, cmd);
    char *after = pf_read_file(q, &after_len, err, sizeof err);
    CHECK(before && after && before_len == after_len && !memcmp(before, after, before_len),
          "%s changed without --force", q);
    free(before);
    free(after);
    char *out;
    int st = pf_test_run(root, &out, "%s --force", cmd);
    CHECK(st == 0, "--force: status %d:\n%s", st, out);
    free(out);

    snprintf(p, sizeof p, "%s/clip.mp4", root);
    f = fopen(p, "w");
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/bad3'", pf_test_bin(), wd, p, root);
    refused("an empty file named clip.mp4", p, NULL, cmd);

    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s/a.png' -o '%s/bad4'", pf_test_bin(), other, lq, root);
    refused("a checkpoint with no config beside it", "config.yaml", NULL, cmd);

    /* --device cuda:0 with no GPU visible (CUDA_VISIBLE_DEVICES empty, on any machine): the
       CUDA backend's error, or without one "no CUDA backend", named by the device */
    snprintf(q, sizeof q, "%s/bad5/a.png", root);
    snprintf(cmd, sizeof cmd, "CUDA_VISIBLE_DEVICES= '%s' upscale '%s' '%s/a.png' -o '%s/bad5' "
             "--device cuda:0", pf_test_bin(), wd, lq, root);
    refused("--device cuda:0 without a visible GPU", "cuda:0", q, cmd);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s/a.png' -o '%s/bad6' --device gpu",
             pf_test_bin(), wd, lq, root);
    refused("--device gpu", "expected cpu or cuda:N", NULL, cmd);

    /* mid-way: t.png's header reads but its pixels are cut off; a.png before it is done */
    char dir[400], src[700];
    snprintf(dir, sizeof dir, "%s/half", root);
    CHECK(pf_mkdirs(dir, err, sizeof err) == 0, "%s", err);
    snprintf(src, sizeof src, "%s/big.png", lq);
    size_t len = 0;
    char *png = pf_read_file(src, &len, err, sizeof err);
    snprintf(p, sizeof p, "%s/t.png", dir);
    CHECK(png && pf_write_file_atomic(p, png, len / 2, err, sizeof err) == 0, "%s", err);
    snprintf(q, sizeof q, "%s/a.png", dir);
    CHECK(png && pf_write_file_atomic(q, png, len, err, sizeof err) == 0, "%s", err);
    free(png);
    snprintf(q, sizeof q, "%s/half_out/t.png", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/half_out'", pf_test_bin(), wd, dir, root);
    refused("a PNG cut short, after another image", p, q, cmd);
    snprintf(q, sizeof q, "%s/half_out/a.png", root);
    CHECK(access(q, F_OK) == 0, "the image before the bad one was not written");
    snprintf(cmd, sizeof cmd, "ls -A '%s/half_out' | grep -v '^a.png$'", root);
    st = pf_test_run(root, &out, "%s", cmd);
    CHECK(st != 0 && !out[0], "files left in the output folder: %s", out);
    free(out);
}

int main(int argc, char **argv) {
    snprintf(root, sizeof root, "/tmp/pf_test_upscale_%d", (int)getpid());
    char err[512], lq[300], wd[300], od[300], *out;
    CHECK(pf_mkdirs(root, err, sizeof err) == 0, "%s", err);
    if (argc > 1 && !strcmp(argv[1], "demo_photos")) {
        int rc = demo_photos();
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
        return rc == 77 ? 77 : pf_test_end("test_upscale demo_photos");
    }
    snprintf(lq, sizeof lq, "%s/lq", root);
    snprintf(wd, sizeof wd, "%s/wd", root);
    snprintf(od, sizeof od, "%s/out", root);
    CHECK(pf_mkdirs(lq, err, sizeof err) == 0, "%s", err);
    write_png(lq, "a.png", 37, 29, 1);
    write_jpeg(lq, "b.jpg", 23, 31, 2);
    write_png(lq, "big.png", 61, 45, 3);
    make_work_dir(wd, lq);
    const char *names[] = { "a", "b", "big" };

    /* (a) a work dir and a folder; a checkpoint file (config one folder up) and a quoted glob */
    int st = pf_test_run(root, &out, "'%s' upscale '%s' '%s' -o '%s'", pf_test_bin(), wd, lq, od);
    CHECK(st == 0 && strstr(out, "[3/3]"), "upscale: status %d:\n%s", st, out);
    free(out);
    same_as_test(wd, od, names, 3);
    char od2[400];
    snprintf(od2, sizeof od2, "%s/out_glob", root);
    st = pf_test_run(root, &out, "'%s' upscale '%s/checkpoints/iter_5.safetensors' '%s/*.png' '%s/b.jpg' -o '%s'",
             pf_test_bin(), wd, lq, lq, od2);
    CHECK(st == 0, "checkpoint file + glob: status %d:\n%s", st, out);
    free(out);
    same_as_test(wd, od2, names, 3);
    /* a work dir whose config names data that is not here (relative to where it trained) */
    char rel[400], path[700], ck[700];
    snprintf(rel, sizeof rel, "%s/wd_rel", root);
    snprintf(path, sizeof path, "%s/checkpoints", rel);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/config.yaml", rel);
    write_cfg(path, "data/not/here", rel, 8);
    snprintf(path, sizeof path, "%s/checkpoints/iter_5.safetensors", rel);
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", wd);
    CHECK(symlink(ck, path) == 0, "symlink %s", path);
    snprintf(od2, sizeof od2, "%s/out_rel", root);
    st = pf_test_run(root, &out, "'%s' upscale '%s' '%s' -o '%s'", pf_test_bin(), rel, lq, od2);
    CHECK(st == 0, "a config naming data that is not here: status %d:\n%s", st, out);
    free(out);
    same_as_test(wd, od2, names, 3);

    tiles(wd, lq, od);
    ema(wd, lq, od);
    ensemble(wd, lq, od);
    deep_alpha(wd);
    bad_input(wd, lq, od);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (!getenv("PF_TEST_KEEP") && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return pf_test_end("test_upscale");
}
