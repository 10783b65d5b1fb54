/*  test_image — PNG decoding (every colour type, bit depth, Adam7) and encoding.

    The cases in tests/data/png/ were written by tests/reference/make_png_cases.py, a PNG
    encoder written from the specification (not libpng), together with the RGB8 pixels the rule
    of docs/images.md gives; each must decode byte for byte. Broken files (truncated, bad CRC,
    not a PNG, missing) must fail with a message naming the file. Every prefix and many one-byte
    corruptions of a valid file must decode or fail cleanly (run under valgrind to see leaks).
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkstemp, fsync, O_DIRECTORY, fileno (CMake passes it too) */
#endif
#include "common/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/pf_test.h"

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static void test_cases(const char *dir) {
    char path[1024], line[256], err[512];
    snprintf(path, sizeof path, "%s/png/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128];
        int w, h;
        if (line[0] == '#' || sscanf(line, "%127s %d %d", name, &w, &h) != 3) continue;
        n++;
        snprintf(path, sizeof path, "%s/png/%s.rgb", dir, name);
        size_t len = 0;
        uint8_t *want = read_all(path, &len);
        CHECK(want && len == (size_t)w * h * 3, "%s: expected %d bytes", path, w * h * 3);
        snprintf(path, sizeof path, "%s/png/%s.png", dir, name);
        pf_image img;
        int rc = pf_image_read_png(path, &img, err, sizeof err);
        CHECK(rc == 0, "%s: %s", name, err);
        if (rc == 0 && want && len == (size_t)w * h * 3) {
            CHECK(img.w == w && img.h == h, "%s: %dx%d, want %dx%d", name, img.w, img.h, w, h);
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < len && img.w == w && img.h == h; i++) {
                if (img.data[i] != want[i] && bad++ == 0) first = i;
            }
            CHECK(bad == 0, "%s: %zu bytes differ, first at byte %zu (%d, want %d)", name, bad,
                  first, img.data[first], want[first]);
        }
        pf_image_free(&img);
        free(want);
    }
    fclose(f);
    CHECK(n >= 34, "only %d cases in cases.txt", n);
}

static void expect_error(const char *path, const char *what) {
    char err[512] = "";
    pf_image img = {7, 7, (uint8_t *)1};
    int rc = pf_image_read_png(path, &img, err, sizeof err);
    CHECK(rc == -1, "%s: decoded", path);
    CHECK(strstr(err, path) != NULL, "message '%s' does not name %s", err, path);
    CHECK(strstr(err, what) != NULL, "message '%s' does not say '%s'", err, what);
    CHECK(img.data == NULL && img.w == 0 && img.h == 0, "%s: output not left empty", path);
    printf("  expected error: %s\n", err);
}

static void test_errors(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/png/broken_truncated.png", dir);
    expect_error(path, "truncated");
    snprintf(path, sizeof path, "%s/png/broken_crc.png", dir);
    expect_error(path, "CRC");
    snprintf(path, sizeof path, "%s/png/broken_notpng.png", dir);
    expect_error(path, "not a PNG");
    snprintf(path, sizeof path, "%s/png/no_such_file.png", dir);
    expect_error(path, "No such file");
    snprintf(path, sizeof path, "%s/png", dir);
    expect_error(path, "png");           /* a folder: fails by name, whatever the reason */
}

/* Every prefix of a valid interlaced 16-bit file, and every single-byte corruption of the
   first 300 bytes, must either decode or fail with a message: no crash, no leak. */
static void test_fuzz(const char *dir) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/png/rgba16_adam7.png", dir);
    size_t len = 0;
    uint8_t *good = read_all(path, &len);
    CHECK(good && len > 100, "cannot read %s", path);
    if (!good) return;
    int failed = 0;
    for (size_t n = 0; n < len; n++) {
        pf_image img;
        err[0] = 0;
        int rc = pf_image_decode_png(good, n, "prefix", &img, err, sizeof err);
        if (rc != 0) failed++;
        if (rc != 0 && strncmp(err, "prefix: ", 8) != 0) {
            CHECK(0, "prefix %zu: message '%s'", n, err);
        }
        pf_image_free(&img);
    }
    CHECK(failed == (int)len, "only %d of %zu prefixes failed", failed, len);
    uint8_t *bad = malloc(len);
    int rejected = 0;
    for (size_t i = 0; i < len && i < 300; i++) {
        memcpy(bad, good, len);
        bad[i] ^= (uint8_t)(0x01 << (i % 8));
        pf_image img;
        err[0] = 0;
        if (pf_image_decode_png(bad, len, "flip", &img, err, sizeof err) != 0) {
            rejected++;
            CHECK(err[0] != 0, "byte %zu: error without message", i);
        }
        pf_image_free(&img);
    }
    /* nearly every flip lands in a CRC-protected chunk or the signature */
    CHECK(rejected >= 290, "only %d of 300 corruptions rejected", rejected);
    free(bad);
    free(good);
}

static void test_round_trip(void) {
    char err[512], path[256];
    snprintf(path, sizeof path, "/tmp/pf_test_image_%ld.png", (long)getpid());
    int w = 37, h = 23;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) rgb[i] = (uint8_t)(i * 131 + (i >> 7));
    CHECK(pf_image_write_png(path, rgb, w, h, err, sizeof err) == 0, "write: %s", err);
    pf_image img;
    CHECK(pf_image_read_png(path, &img, err, sizeof err) == 0, "read back: %s", err);
    CHECK(img.w == w && img.h == h && memcmp(img.data, rgb, (size_t)w * h * 3) == 0,
          "round trip differs");
    pf_image_free(&img);
    /* overwrite in place: the old file is replaced whole */
    rgb[0] ^= 0xFF;
    CHECK(pf_image_write_png(path, rgb, w, h, err, sizeof err) == 0, "rewrite: %s", err);
    CHECK(pf_image_read_png(path, &img, err, sizeof err) == 0 && img.data[0] == rgb[0],
          "rewrite not visible");
    pf_image_free(&img);
    unlink(path);
    /* a folder that does not exist: error names the path, nothing is left behind */
    CHECK(pf_image_write_png("/nonexistent_pf_dir/x.png", rgb, w, h, err, sizeof err) == -1,
          "write into a missing folder succeeded");
    CHECK(strstr(err, "/nonexistent_pf_dir/x.png") != NULL, "message '%s'", err);
    CHECK(pf_image_write_png(path, rgb, 0, h, err, sizeof err) == -1, "0-wide image written");
    free(rgb);
}

int main(void) {
    const char *dir = pf_test_data();
    test_cases(dir);
    test_errors(dir);
    test_fuzz(dir);
    test_round_trip();
    return pf_test_end("test_image");
}
