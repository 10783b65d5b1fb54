/*  test_video_write — common/video_write.h: frames encoded with FFV1 (the default, gbrp) at an
    odd size into .mkv decode back through common/video.c byte-identical, in order, with the
    frame count and frame rate asked for; MPEG-4 part 2 (yuv420p, lossy) in .avi decodes to
    frames close to the originals (PSNR against each, above 30 dB on smooth content, and each
    frame nearer its own original than the neighbours'); errors name the file: an unknown
    encoder, a container that does not take the codec, an extension without a container, a
    folder that does not exist (nothing left behind). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/image.h"
#include "common/video.h"
#include "common/video_write.h"
#include "tests/pf_test.h"

/* Frame t: smooth gradients moving with t plus a little deterministic noise. */
static void make_frame(uint8_t *f, int w, int h, int t, int noise) {
    uint32_t r = 12345u + (uint32_t)t * 7919u;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                r = r * 1664525u + 1013904223u;
                double v = 128 + 90 * sin((x + 3 * t) * 0.11 + c) * cos((y - 2 * t) * 0.07 - c);
                if (noise) v += (int)(r >> 29) - 4;
                f[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n) {
    double se = 0;
    for (size_t i = 0; i < n; i++) se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return se == 0 ? INFINITY : 10 * log10(255.0 * 255.0 * n / se);
}

/* Encode `frames` frames, decode them back: returns the PSNRs (own frame, and the best of the
   others) in the worst case over frames. */
static int round_trip(const char *path, const char *codec, int w, int h, int frames, int noise,
                      double *worst_own, double *best_other, int exact_expected) {
    char err[1024];
    size_t sz = (size_t)w * h * 3;
    uint8_t *src = malloc(sz * frames);
    for (int t = 0; t < frames; t++) make_frame(src + sz * t, w, h, t, noise);
    pf_video_writer *vw = pf_video_writer_open(path, w, h, 25, 1, codec, err, sizeof err);
    CHECK(vw != NULL, "open %s (%s): %s", path, codec ? codec : "default", err);
    if (!vw) {
        free(src);
        return -1;
    }
    printf("%s: encoder %s, pixel format %s\n", path, codec ? codec : "ffv1 (default)",
           pf_video_writer_pix_fmt(vw));
    int rc = 0;
    for (int t = 0; t < frames && rc == 0; t++)
        rc = pf_video_writer_frame(vw, src + sz * t, err, sizeof err);
    CHECK(rc == 0, "frames: %s", err);
    rc = pf_video_writer_close(&vw, 1, err, sizeof err);
    CHECK(rc == 0 && vw == NULL, "close: %s", err);
    pf_video *v = pf_video_open(path, err, sizeof err);
    CHECK(v != NULL, "decode %s: %s", path, err);
    if (!v) {
        free(src);
        return -1;
    }
    pf_video_info info = pf_video_get_info(v);
    CHECK(info.w == w && info.h == h && info.n_frames == frames && fabs(info.fps - 25) < 1e-6,
          "%s: %dx%d, %d frames at %g fps (expected %dx%d, %d at 25)", path, info.w, info.h,
          info.n_frames, info.fps, w, h, frames);
    *worst_own = INFINITY;
    *best_other = 0;
    int identical = 1;
    for (int t = 0; t < frames && t < info.n_frames; t++) {
        pf_image img = { 0 };
        if (pf_video_read(v, t, &img, err, sizeof err)) {
            CHECK(0, "read frame %d: %s", t, err);
            break;
        }
        identical &= !memcmp(img.data, src + sz * t, sz);
        double own = psnr(img.data, src + sz * t, sz);
        if (own < *worst_own) *worst_own = own;
        for (int u = 0; u < frames; u++)
            if (u != t) {
                double o = psnr(img.data, src + sz * u, sz);
                if (o > *best_other) *best_other = o;
            }
        pf_image_free(&img);
    }
    if (exact_expected) CHECK(identical, "%s: decoded frames differ from the encoded ones", path);
    pf_video_destroy(&v);
    free(src);
    return 0;
}

int main(void) {
    char dir[] = "/tmp/pf_video_write.XXXXXX";
    if (!mkdtemp(dir)) return 2;
    char path[256], err[1024];
    double own, other;

    snprintf(path, sizeof path, "%s/lossless.mkv", dir);
    if (round_trip(path, NULL, 67, 51, 9, 1, &own, &other, 1) == 0)
        printf("FFV1 67x51, 9 frames: byte-identical after decoding (own PSNR %g)\n", own);

    snprintf(path, sizeof path, "%s/lossy.avi", dir);
    if (round_trip(path, "mpeg4", 64, 48, 6, 0, &own, &other, 0) == 0) {
        CHECK(own > 30 && own > other, "mpeg4: worst own-frame PSNR %.2f dB, best other %.2f",
              own, other);
        printf("MPEG-4 64x48, 6 frames: worst PSNR against its own frame %.2f dB, best against "
               "another %.2f dB\n", own, other);
    }

    /* errors, each naming the file, nothing left behind */
    snprintf(path, sizeof path, "%s/x.mkv", dir);
    pf_video_writer *vw = pf_video_writer_open(path, 16, 16, 25, 1, "no_such_codec", err,
                                               sizeof err);
    CHECK(!vw && strstr(err, path) && strstr(err, "no_such_codec"), "unknown encoder: '%s'",
          err);
    snprintf(path, sizeof path, "%s/x.unknownext", dir);
    vw = pf_video_writer_open(path, 16, 16, 25, 1, NULL, err, sizeof err);
    CHECK(!vw && strstr(err, path) && strstr(err, "container"), "bad extension: '%s'", err);
    snprintf(path, sizeof path, "%s/x.mp4", dir);
    vw = pf_video_writer_open(path, 16, 16, 25, 1, "ffv1", err, sizeof err);
    CHECK(!vw && strstr(err, path) && access(path, F_OK) != 0,
          "ffv1 in mp4 refused, no file left: '%s'", err);
    snprintf(path, sizeof path, "%s/no/such/dir/x.mkv", dir);
    vw = pf_video_writer_open(path, 16, 16, 25, 1, NULL, err, sizeof err);
    CHECK(!vw && strstr(err, path) && strstr(err, "create"), "missing folder: '%s'", err);
    vw = pf_video_writer_open(path, 0, 16, 25, 1, NULL, err, sizeof err);
    CHECK(!vw && strstr(err, "size"), "zero width: '%s'", err);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pf_test_end("test_video_write");
}
