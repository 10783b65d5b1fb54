/*  TensorBoard event files (hooks/tb_writer.c), read back by tests/pf_test_tb.h — a parser of
    its own (bitwise CRC32C, hand-written protobuf wire decoding), not protobuf-c.

    A. CRC32C: both implementations give the published check value crc32c("123456789") =
       0xE3069283 (RFC 3720 B.4 / the CRC catalogue).
    B. pf_tb_writer_new names the file events.out.tfevents.<unix time>.<hostname>; the file is
       readable while the writer is open; every record's length, both masked CRCs,
       file_version "brain.Event:2" first, then every scalar's tag, step and value exactly as
       written (step 0 and value 0.0, a step past 2^32, a negative value), wall_time now.
    C. A flipped byte in the data or in the length is caught by the reader (the check can fail).
    D. Reopening the file appends; a writer on /dev/full (disk full) reports failure, returns
       -1 and keeps going without crashing.
    E. Images: pf_tb_writer_image records read back with their tag, step, height, width,
       colorspace 3 and the exact PNG bytes written, which decode (common/image.c) to the
       pixels encoded (a 7 x 5 gradient and a 300 x 400 noise picture, > 128 KiB of PNG so the
       lengths take multi-byte varints), and every record's CRCs check.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/image.h"
#include "hooks/tb_writer.h"
#include "pf_test.h"
#include "pf_test_tb.h"

static const struct {
    const char *tag;
    int64_t step;
    float value;
} scalars[] = {
    {"train/loss", 0, 0.0f},
    {"train/loss", 5, 0.125f},
    {"train/lr", 5, 1.0e-4f},
    {"train/time", 5, 0.0371f},
    {"train/data_time", 5, 1.5e-6f},
    {"eval/psnr", 1000, 33.2541f},
    {"eval/ssim", 1000, 0.9137f},
    {"eval/psnr_bicubic", 1000, 30.0091f},
    {"train/loss", (int64_t)1 << 40, -2.5f},
    {"a/tag/longer/than/one/hundred/and/twenty/seven/bytes/would/need/a/two/byte/length/"
     "varint/so/here/it/is/xxxxxxxxxxxxxxxxxxxx", 300, 3.0e38f},
};
#define N_SCALARS ((int)(sizeof scalars / sizeof scalars[0]))

static tb_event ev[TB_MAX_EVENTS];

/* Check events read back: file_version first, then scalars[first..first+n). */
static void check_events(const char *what, int n_read, int first, int n, double t0, double t1) {
    CHECK(n_read == 1 + n, "%s: %d records, want %d", what, n_read, 1 + n);
    if (n_read < 1) return;
    CHECK(strcmp(ev[0].file_version, "brain.Event:2") == 0, "%s: file_version '%s'", what,
          ev[0].file_version);
    CHECK(ev[0].n_values == 0 && ev[0].step == 0, "%s: first record holds a summary", what);
    for (int i = 1; i < n_read && i <= n; i++) {
        const tb_event *e = &ev[i];
        int k = first + i - 1;
        CHECK(e->file_version[0] == 0, "%s: record %d has a file_version", what, i);
        CHECK(e->n_values == 1, "%s: record %d has %d values", what, i, e->n_values);
        CHECK(strcmp(e->tag, scalars[k].tag) == 0, "%s: record %d tag '%s', want '%s'", what,
              i, e->tag, scalars[k].tag);
        CHECK(e->step == scalars[k].step, "%s: record %d step %lld, want %lld", what, i,
              (long long)e->step, (long long)scalars[k].step);
        CHECK(memcmp(&e->value, &scalars[k].value, 4) == 0, "%s: record %d value %.9g, want "
              "%.9g", what, i, e->value, scalars[k].value);
    }
    for (int i = 0; i < n_read; i++)
        CHECK(ev[i].wall_time >= t0 - 1 && ev[i].wall_time <= t1 + 1,
              "%s: record %d wall_time %.3f outside [%.0f, %.0f]", what, i, ev[i].wall_time, t0,
              t1);
}

static size_t file_bytes(const char *path, uint8_t *buf, size_t max) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, max, f) : 0;
    if (f) fclose(f);
    return n;
}

static void put_bytes(const char *path, const uint8_t *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, n, f);
    fclose(f);
}

int main(void) {
    char err[512];
    /* A */
    CHECK(tb_crc32c((const uint8_t *)"123456789", 9) == 0xE3069283u, "test crc32c %08x",
          tb_crc32c((const uint8_t *)"123456789", 9));
    CHECK(pf_crc32c("123456789", 9) == 0xE3069283u, "pf_crc32c %08x", pf_crc32c("123456789", 9));
    uint8_t big[1000];
    for (int i = 0; i < 1000; i++) big[i] = (uint8_t)(i * 7 + 3);
    CHECK(pf_crc32c(big, 1000) == tb_crc32c(big, 1000), "table and bitwise CRC32C differ");

    /* B */
    char dir[] = "/tmp/pf_test_tb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    double t0 = (double)time(NULL);
    pf_tb_writer *w = pf_tb_writer_new(dir, err, sizeof err);
    CHECK(w != NULL, "pf_tb_writer_new: %s", err);
    if (!w) return pf_test_end("test_tensorboard");
    for (int i = 0; i < N_SCALARS; i++)
        CHECK(pf_tb_writer_scalar(w, scalars[i].tag, scalars[i].step, scalars[i].value) == 0,
              "scalar %d", i);
    double t1 = (double)time(NULL);
    char path[1024], host[256] = "", want[1024];
    CHECK(tb_find(dir, path, sizeof path) == 1, "one event file in %s", dir);
    CHECK(strcmp(path, pf_tb_writer_path(w)) == 0, "found %s, writer says %s", path,
          pf_tb_writer_path(w));
    gethostname(host, sizeof host - 1);
    long long stamp = 0;
    CHECK(sscanf(path + strlen(dir), "/events.out.tfevents.%lld.", &stamp) == 1 &&
          stamp >= (long long)t0 && stamp <= (long long)t1, "file name %s", path);
    snprintf(want, sizeof want, "%s/events.out.tfevents.%lld.%s", dir, stamp, host);
    CHECK(strcmp(path, want) == 0, "file name %s, want %s", path, want);
    int n = tb_read(path, ev, TB_MAX_EVENTS, err, sizeof err);   /* writer still open */
    CHECK(n >= 0, "read while open: %s", err);
    check_events("B", n, 0, N_SCALARS, t0, t1);
    CHECK(!pf_tb_writer_failed(w), "writer failed");
    pf_tb_writer_destroy(&w);
    CHECK(w == NULL, "destroy nulls the pointer");

    /* C: corrupt a copy */
    static uint8_t bytes[1 << 16], copy[1 << 16];
    size_t len = file_bytes(path, bytes, sizeof bytes);
    char bad[1100];
    snprintf(bad, sizeof bad, "%s/corrupt", dir);
    size_t first_len = (size_t)tb_le(bytes, 8);
    size_t at[2] = {12 + first_len + 16 + 14, 12 + first_len + 16};  /* 2nd record data, length */
    for (int k = 0; k < 2; k++) {
        memcpy(copy, bytes, len);
        copy[at[k]] ^= 0x10;
        put_bytes(bad, copy, len);
        CHECK(tb_read(bad, ev, TB_MAX_EVENTS, err, sizeof err) < 0,
              "flipped byte %zu not caught", at[k]);
    }
    put_bytes(bad, bytes, len - 1);
    CHECK(tb_read(bad, ev, TB_MAX_EVENTS, err, sizeof err) < 0, "truncated file not caught");

    /* D: append, then /dev/full */
    w = pf_tb_writer_open(path, err, sizeof err);
    CHECK(w != NULL, "reopen: %s", err);
    if (w) {
        CHECK(pf_tb_writer_scalar(w, scalars[1].tag, scalars[1].step, scalars[1].value) == 0,
              "append");
        pf_tb_writer_destroy(&w);
        n = tb_read(path, ev, TB_MAX_EVENTS, err, sizeof err);
        CHECK(n == N_SCALARS + 3, "after reopening: %d records (%s)", n,
              n < 0 ? err : "");
        if (n == N_SCALARS + 3) {
            CHECK(strcmp(ev[N_SCALARS + 1].file_version, "brain.Event:2") == 0,
                  "reopened file starts with a file_version record");
            CHECK(strcmp(ev[N_SCALARS + 2].tag, scalars[1].tag) == 0 &&
                  ev[N_SCALARS + 2].step == scalars[1].step, "appended scalar");
        }
    }
    w = pf_tb_writer_open("/dev/full", err, sizeof err);
    CHECK(w != NULL, "open /dev/full: %s", err);
    if (w) {
        CHECK(pf_tb_writer_failed(w), "the file_version write to /dev/full did not fail");
        CHECK(pf_tb_writer_scalar(w, "train/loss", 1, 1.0f) == -1, "scalar on a full disk");
        CHECK(pf_tb_writer_scalar(w, "train/loss", 2, 1.0f) == -1, "and again");
        CHECK(strcmp(pf_tb_writer_path(w), "/dev/full") == 0, "path");
        pf_tb_writer_destroy(&w);
    }

    /* E */
    char ipath[1100];
    snprintf(ipath, sizeof ipath, "%s/images.tfevents", dir);
    w = pf_tb_writer_open(ipath, err, sizeof err);
    CHECK(w != NULL, "open %s: %s", ipath, err);
    static const struct { const char *tag; int64_t step; int w, h; } pics[] = {
        {"visual/train", 300, 7, 5}, {"eval/0801", (int64_t)1 << 33, 400, 300},
    };
    uint8_t *px[2] = {NULL, NULL}, *png[2] = {NULL, NULL};
    size_t png_len[2] = {0, 0};
    uint64_t x = 88172645463325252ull;
    for (int k = 0; k < 2 && w; k++) {
        size_t bytes = (size_t)pics[k].w * pics[k].h * 3;
        px[k] = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            px[k][i] = k == 0 ? (uint8_t)(i * 11) : (uint8_t)x;
        }
        CHECK(pf_image_encode_png(px[k], pics[k].w, pics[k].h, &png[k], &png_len[k], err,
                                  sizeof err) == 0, "encode %d: %s", k, err);
        CHECK(pf_tb_writer_image(w, pics[k].tag, pics[k].step, pics[k].h, pics[k].w, png[k],
                                 png_len[k]) == 0, "image %d", k);
    }
    CHECK(png_len[1] > (128u << 10), "noise PNG of %zu bytes", png_len[1]);
    pf_tb_writer_destroy(&w);
    n = tb_read(ipath, ev, TB_MAX_EVENTS, err, sizeof err);
    CHECK(n == 3, "images: %d records (%s)", n, n < 0 ? err : "");
    for (int k = 0; k < 2 && n == 3; k++) {
        const tb_event *e = &ev[k + 1];
        CHECK(e->has_image && e->n_values == 1 && !strcmp(e->tag, pics[k].tag) &&
              e->step == pics[k].step, "image %d: tag '%s' step %lld", k, e->tag,
              (long long)e->step);
        CHECK(e->height == pics[k].h && e->width == pics[k].w && e->colorspace == 3,
              "image %d: %lldx%lld colorspace %lld", k, (long long)e->width,
              (long long)e->height, (long long)e->colorspace);
        CHECK(e->png_len == png_len[k] && e->png && !memcmp(e->png, png[k], png_len[k]),
              "image %d: PNG bytes differ", k);
        pf_image img = {0};
        CHECK(e->png && pf_image_decode_png(e->png, e->png_len, "tb", &img, err, sizeof err) == 0,
              "image %d decodes: %s", k, err);
        CHECK(img.w == pics[k].w && img.h == pics[k].h && img.data &&
              !memcmp(img.data, px[k], (size_t)img.w * img.h * 3), "image %d pixels", k);
        pf_image_free(&img);
    }
    if (n > 0) tb_free(ev, n);
    for (int k = 0; k < 2; k++) {
        free(px[k]);
        free(png[k]);
    }
    unlink(ipath);

    unlink(bad);
    unlink(path);
    rmdir(dir);
    return pf_test_end("test_tensorboard");
}
