/*  JPEG reading and the JPEG degradation against PIL (tests/reference/make_jpeg_cases.py:
    PIL's codec is the system libjpeg-turbo, so with default settings the pixels must agree
    exactly): decoding baseline 4:2:0, progressive, 4:4:4 and grayscale files; sizes from the
    header; PixFlow's compress + decompress at quality 3/10/50/95 against PIL's
    Image.save(quality=q) + reopen. Then damage: every prefix of a JPEG and many one-byte
    corruptions are errors naming the file, never a crash (run it under valgrind to see no
    leak either); CMYK is refused at open time and at read time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/degrade.h"
#include "common/image.h"
#include "common/image_info.h"
#include "common/util.h"
#include "pf_test.h"

static char dir[512];

static void path_of(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", dir, name);
}

/* Count differing bytes between two images of the same size; -1 when the sizes differ. */
static long diff_images(const pf_image *a, const pf_image *b) {
    if (a->w != b->w || a->h != b->h) return -1;
    long d = 0;
    for (size_t i = 0; i < (size_t)a->w * a->h * 3; i++) d += a->data[i] != b->data[i];
    return d;
}

static void test_decode_matches_pil(void) {
    const char *names[] = { "photo", "progressive", "s444", "gray" };
    for (int i = 0; i < 4; i++) {
        char jpg[600], png[600], err[1024];
        snprintf(jpg, sizeof jpg, "%s/%s.jpg", dir, names[i]);
        snprintf(png, sizeof png, "%s/%s.png", dir, names[i]);
        pf_image a, b;
        CHECK(pf_image_read(jpg, &a, err, sizeof err) == 0, "%s", err);
        CHECK(pf_image_read(png, &b, err, sizeof err) == 0, "%s", err);
        long d = diff_images(&a, &b);
        CHECK(d == 0, "%s.jpg: %ld values differ from PIL's decode (%dx%d vs %dx%d)", names[i],
              d, a.w, a.h, b.w, b.h);
        int w = 0, h = 0;
        CHECK(pf_image_size(jpg, &w, &h, err, sizeof err) == 0 && w == 64 && h == 48,
              "%s.jpg: header size %dx%d (%s)", names[i], w, h, err);
        pf_image_free(&a);
        pf_image_free(&b);
    }
}

static void test_degrade_matches_pil(void) {
    char p[600], err[1024];
    pf_image src;
    path_of(p, sizeof p, "src.png");
    CHECK(pf_image_read(p, &src, err, sizeof err) == 0, "%s", err);
    if (!src.data) return;
    int qs[] = { 3, 10, 50, 95 };  /* 3: tables clamped to 255 (force_baseline, as PIL) */
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "src_q%d.png", qs[i]);
        path_of(p, sizeof p, name);
        pf_image ref, got = { src.w, src.h, malloc((size_t)src.w * src.h * 3) };
        memcpy(got.data, src.data, (size_t)src.w * src.h * 3);
        CHECK(pf_image_read(p, &ref, err, sizeof err) == 0, "%s", err);
        CHECK(pf_degrade_jpeg(got.data, got.w, got.h, qs[i], err, sizeof err) == 0, "%s", err);
        long d = diff_images(&got, &ref);
        CHECK(d == 0, "quality %d: %ld values differ from PIL's save + reopen", qs[i], d);
        CHECK(memcmp(got.data, src.data, (size_t)src.w * src.h * 3) != 0,
              "quality %d changed nothing", qs[i]);
        pf_image_free(&ref);
        pf_image_free(&got);
    }
    pf_image_free(&src);
}

static void test_damage(void) {
    char p[600], err[1024];
    path_of(p, sizeof p, "photo.jpg");
    size_t len;
    uint8_t *buf = (uint8_t *)pf_read_file(p, &len, err, sizeof err);
    CHECK(buf != NULL, "%s", err);
    if (!buf) return;
    pf_image img;
    /* Every strict prefix is an error that names the file (the EOI marker is the last two
       bytes, so even a file cut only there is refused). */
    int accepted = 0, unnamed = 0;
    for (size_t n = 0; n < len; n++) {
        if (pf_image_decode_jpeg(buf, n, "cut.jpg", &img, err, sizeof err) == 0) {
            accepted++;
            pf_image_free(&img);
        } else if (strncmp(err, "cut.jpg: ", 9) != 0) {
            unnamed++;
        }
    }
    CHECK(accepted == 0, "%d truncated prefixes decoded without error", accepted);
    CHECK(unnamed == 0, "%d errors do not start with the file name", unnamed);
    pf_image_decode_jpeg(buf, len / 2, "cut.jpg", &img, err, sizeof err);
    CHECK(strstr(err, "truncated JPEG") != NULL, "half a file: %s", err);
    /* A truncated file on disk, through pf_image_read. */
    char cut[600];
    snprintf(cut, sizeof cut, "/tmp/pf_test_jpeg_%d.jpg", (int)getpid());
    FILE *f = fopen(cut, "wb");
    fwrite(buf, 1, len - 200, f);
    fclose(f);
    CHECK(pf_image_read(cut, &img, err, sizeof err) != 0, "truncated file read");
    CHECK(strstr(err, cut) && strstr(err, "truncated JPEG"), "message: %s", err);
    unlink(cut);
    /* One-byte corruptions: whatever happens, no crash; the ones that fail name the file. */
    int failed = 0;
    for (size_t i = 2; i < len; i += 3) {
        uint8_t keep = buf[i];
        buf[i] ^= (uint8_t)(0x5a + i);
        if (pf_image_decode_jpeg(buf, len, "bad.jpg", &img, err, sizeof err) == 0)
            pf_image_free(&img);
        else {
            failed++;
            CHECK(strncmp(err, "bad.jpg: ", 9) == 0, "message: %s", err);
        }
        buf[i] = keep;
    }
    CHECK(failed > 0, "no corruption was noticed");
    CHECK(pf_image_decode_jpeg("\x89PNG", 4, "x.jpg", &img, err, sizeof err) != 0 &&
          strstr(err, "not a JPEG"), "PNG bytes as JPEG: %s", err);
    free(buf);
    /* CMYK: refused when sizes are read (dataset open) and when decoding. */
    path_of(p, sizeof p, "cmyk.jpg");
    int w, h;
    CHECK(pf_image_size(p, &w, &h, err, sizeof err) != 0 && strstr(err, "cmyk.jpg") &&
          strstr(err, "CMYK"), "CMYK size: %s", err);
    CHECK(pf_image_read(p, &img, err, sizeof err) != 0 && strstr(err, "CMYK"), "CMYK read: %s",
          err);
    CHECK(pf_image_size("/nonexistent/x.jpg", &w, &h, err, sizeof err) != 0 &&
          strstr(err, "/nonexistent/x.jpg"), "missing: %s", err);
    CHECK(pf_image_read("/nonexistent/x.gif", &img, err, sizeof err) != 0 &&
          strstr(err, "not a .png, .jpg or .jpeg"), "gif: %s", err);
    CHECK(pf_image_format_of("A.JPEG") == PF_IMAGE_JPEG && pf_image_format_of("a.Png") ==
          PF_IMAGE_PNG && pf_image_format_of("dir.jpg/x") == PF_IMAGE_UNKNOWN, "format_of");
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/jpeg", pf_test_data());
    test_decode_matches_pil();
    test_degrade_matches_pil();
    test_damage();
    return pf_test_end("test_jpeg");
}
