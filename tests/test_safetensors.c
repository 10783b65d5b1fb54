/*  test_safetensors — safetensors parse/serialise and pf_write_file_atomic.

    tests/data/safetensors/ was written by tests/reference/safetensors_ref.py from the format
    description, without our code: a file laid out as the Python library does it must parse
    (names, shapes, values, metadata, offset order); our serialiser must reproduce the bytes
    of pixflow_layout.safetensors; each bad_*.safetensors must be rejected with the phrase in
    bad_cases.txt and the path. Every prefix and header byte flip of a valid file must parse or
    fail without crashing (checked under valgrind by hand).
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkstemp, fsync, O_DIRECTORY, fileno (CMake passes it too) */
#endif
#include "common/safetensors.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/pf_test.h"

/* The tensors of safetensors_ref.py, in its TENSORS order. */
static const char *const names[5] = {"conv.weight", "conv.bias", "scale", "empty", "body.0.w"};
static const int ndims[5] = {4, 1, 0, 2, 2};
static const int64_t shapes[5][4] = {{2, 1, 3, 3}, {2}, {0}, {0, 3}, {3, 4}};

static float value(int k, int64_t i) {
    return (float)(((7 * i + k) % 13 - 6) / 4.0);
}

static int64_t numel(int k) {
    int64_t n = 1;
    for (int d = 0; d < ndims[k]; d++) n *= shapes[k][d];
    return n;
}

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

/* Check that st holds the five reference tensors with their values and metadata. */
static void check_reference(const pf_safetensors *st, const char *what) {
    CHECK(pf_safetensors_count(st) == 5, "%s: %d tensors", what, pf_safetensors_count(st));
    for (int k = 0; k < 5; k++) {
        int nd = -1;
        int64_t sh[4];
        const float *p = pf_safetensors_get(st, names[k], &nd, sh);
        CHECK(p != NULL, "%s: tensor %s missing", what, names[k]);
        if (!p) continue;
        CHECK(((uintptr_t)p & 3) == 0, "%s: %s not 4-byte aligned", what, names[k]);
        CHECK(nd == ndims[k], "%s: %s ndim %d", what, names[k], nd);
        for (int d = 0; d < nd && d < 4; d++) {
            CHECK(sh[d] == shapes[k][d], "%s: %s shape[%d] = %lld", what, names[k], d,
                  (long long)sh[d]);
        }
        int bad = 0;
        for (int64_t i = 0; i < numel(k); i++) bad += p[i] != value(k, i);
        CHECK(bad == 0, "%s: %s: %d values differ", what, names[k], bad);
    }
    CHECK(pf_safetensors_get(st, "absent", NULL, NULL) == NULL, "%s: absent tensor found", what);
    const char *fmt = pf_safetensors_meta(st, "format"), *it = pf_safetensors_meta(st, "iter");
    CHECK(fmt && strcmp(fmt, "pt") == 0, "%s: metadata format = %s", what, fmt ? fmt : "NULL");
    CHECK(it && strcmp(it, "1200") == 0, "%s: metadata iter = %s", what, it ? it : "NULL");
    CHECK(pf_safetensors_meta(st, "nope") == NULL, "%s: absent metadata found", what);
}

static void test_python_files(const char *dir) {
    char path[1024], err[512];
    pf_safetensors *st;
    snprintf(path, sizeof path, "%s/safetensors/valid_hf.safetensors", dir);
    CHECK(pf_safetensors_load(path, &st, err, sizeof err) == 0, "%s", err);
    if (st) {
        check_reference(st, "valid_hf");
        /* file order = data-offset order: the library sorted the data by name */
        static const char *const by_offset[5] = {"body.0.w", "conv.bias", "conv.weight",
                                                 "empty", "scale"};
        for (int i = 0; i < 5; i++) {
            const char *nm = NULL;
            pf_safetensors_at(st, i, &nm, NULL, NULL);
            CHECK(nm && strcmp(nm, by_offset[i]) == 0, "at(%d) = %s, want %s", i,
                  nm ? nm : "NULL", by_offset[i]);
        }
        CHECK(pf_safetensors_at(st, 5, NULL, NULL, NULL) == NULL, "at(5) not NULL");
        pf_safetensors_free(&st);
        CHECK(st == NULL, "free did not clear the pointer");
    }
    snprintf(path, sizeof path, "%s/safetensors/valid_unaligned.safetensors", dir);
    CHECK(pf_safetensors_load(path, &st, err, sizeof err) == 0, "%s", err);
    if (st) check_reference(st, "valid_unaligned");
    pf_safetensors_free(&st);
}

static void test_serialize(const char *dir) {
    char path[1024], err[512];
    float *data[5];
    pf_st_tensor t[5];
    for (int k = 0; k < 5; k++) {
        data[k] = malloc(sizeof(float) * (size_t)(numel(k) + 1));
        for (int64_t i = 0; i < numel(k); i++) data[k][i] = value(k, i);
        t[k].name = names[k];
        t[k].data = data[k];
        t[k].ndim = ndims[k];
        memcpy(t[k].shape, shapes[k], sizeof t[k].shape);
    }
    const char *meta[4] = {"format", "pt", "iter", "1200"};
    void *buf = NULL;
    size_t len = 0, want_len = 0;
    CHECK(pf_safetensors_serialize(t, 5, meta, 2, &buf, &len, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/safetensors/pixflow_layout.safetensors", dir);
    uint8_t *want = read_all(path, &want_len);
    CHECK(want && len == want_len && memcmp(buf, want, len) == 0,
          "serialised bytes differ from %s (%zu vs %zu bytes)", path, len, want_len);
    free(want);

    /* round trip through a file */
    snprintf(path, sizeof path, "/tmp/pf_test_st_%ld.safetensors", (long)getpid());
    CHECK(pf_write_file_atomic(path, buf, len, err, sizeof err) == 0, "%s", err);
    pf_safetensors *st = NULL;
    CHECK(pf_safetensors_load(path, &st, err, sizeof err) == 0, "%s", err);
    if (st) check_reference(st, "round trip");
    pf_safetensors_free(&st);
    unlink(path);
    free(buf);

    /* the writer refuses what it cannot represent */
    pf_st_tensor two[2] = {t[0], t[0]};
    CHECK(pf_safetensors_serialize(two, 2, NULL, 0, &buf, &len, err, sizeof err) == -1 &&
          strstr(err, "duplicate tensor name 'conv.weight'"), "duplicate accepted: %s", err);
    const char *dup_meta[4] = {"a", "1", "a", "2"};
    CHECK(pf_safetensors_serialize(t, 1, dup_meta, 2, &buf, &len, err, sizeof err) == -1 &&
          strstr(err, "duplicate metadata key"), "duplicate metadata accepted: %s", err);
    two[0].name = "__metadata__";
    CHECK(pf_safetensors_serialize(two, 1, NULL, 0, &buf, &len, err, sizeof err) == -1,
          "tensor named __metadata__ accepted");
    two[0] = t[0];
    two[0].shape[1] = -1;
    CHECK(pf_safetensors_serialize(two, 1, NULL, 0, &buf, &len, err, sizeof err) == -1,
          "negative dimension accepted");
    /* no tensors at all is a valid file */
    CHECK(pf_safetensors_serialize(NULL, 0, NULL, 0, &buf, &len, err, sizeof err) == 0, "%s",
          err);
    CHECK(pf_safetensors_parse(buf, len, "empty", &st, err, sizeof err) == 0 &&
          pf_safetensors_count(st) == 0, "empty file: %s", err);
    pf_safetensors_free(&st);
    free(buf);
    for (int k = 0; k < 5; k++) free(data[k]);
}

static void test_bad_files(const char *dir) {
    char path[1024], line[256], err[512];
    snprintf(path, sizeof path, "%s/safetensors/bad_cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        const char *phrase = sp + 1;
        snprintf(path, sizeof path, "%s/safetensors/bad_%s.safetensors", dir, line);
        pf_safetensors *st = (pf_safetensors *)1;
        err[0] = 0;
        int rc = pf_safetensors_load(path, &st, err, sizeof err);
        CHECK(rc == -1 && st == NULL, "%s: accepted", line);
        CHECK(strstr(err, phrase) != NULL, "%s: message '%s' lacks '%s'", line, err, phrase);
        CHECK(strstr(err, path) != NULL, "%s: message '%s' does not name the file", line, err);
        if (rc == 0) pf_safetensors_free(&st);
        n++;
    }
    fclose(f);
    CHECK(n >= 20, "only %d bad cases", n);
    pf_safetensors *st;
    snprintf(path, sizeof path, "%s/safetensors/missing.safetensors", dir);
    CHECK(pf_safetensors_load(path, &st, err, sizeof err) == -1 && strstr(err, path),
          "missing file: %s", err);
}

static void test_fuzz(const char *dir) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/safetensors/valid_hf.safetensors", dir);
    size_t len = 0;
    uint8_t *good = read_all(path, &len);
    CHECK(good != NULL, "cannot read %s", path);
    if (!good) return;
    int accepted = 0;
    for (size_t n = 0; n < len; n++) {
        pf_safetensors *st;
        if (pf_safetensors_parse(good, n, "prefix", &st, err, sizeof err) == 0) accepted++;
        pf_safetensors_free(&st);
    }
    CHECK(accepted == 0, "%d strict prefixes accepted", accepted);
    uint8_t *bad = malloc(len);
    size_t hlen = good[0] | (size_t)good[1] << 8;
    for (size_t i = 0; i < 8 + hlen; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(bad, good, len);
            bad[i] ^= (uint8_t)(1 << bit);
            pf_safetensors *st;
            if (pf_safetensors_parse(bad, len, "flip", &st, err, sizeof err) == 0) {
                /* a flip inside a name or metadata string can still be a valid file */
                CHECK(pf_safetensors_count(st) == 5, "flip at %zu: %d tensors", i,
                      pf_safetensors_count(st));
                pf_safetensors_free(&st);
            } else {
                CHECK(strncmp(err, "flip: ", 6) == 0, "flip at %zu: message '%s'", i, err);
            }
        }
    }
    free(bad);
    free(good);
}

/* Files that are not safetensors at all are named for what they are, never as a 17-digit
   header length: torch.save's zip and pickle formats with the converter's command line, other
   formats by their magic, anything else by its first bytes. */
static void test_other_formats(void) {
    char err[1024], want[1024];
    pf_safetensors *st = NULL;
    const char *src = getenv("PF_SOURCE_DIR");
    /* torch.save's zip: a local file header whose name ends in data.pkl (as torch 1.13 writes
       it: "x/data.pkl" for x.pth) */
    uint8_t zip[64] = "PK\x03\x04";
    zip[26] = 10;
    memcpy(zip + 30, "x/data.pkl", 10);
    const uint8_t pickle[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a,
                               0xa8, 0x50, 0x19, 0x2e, 0x80, 0x02 };
    for (int k = 0; k < 2 && src; k++) {
        const char *name = k ? "legacy.pth" : "zip.pth";
        snprintf(want, sizeof want, "%s: a PyTorch .pth (torch.save) file, not safetensors; "
                 "convert it with: python3 %s/scripts/pth2safetensors.py %s OUT.safetensors "
                 "(BasicSR's params / params_ema, MMagic's state_dict; docs/models.md)", name,
                 src, name);
        int rc = k ? pf_safetensors_parse(pickle, sizeof pickle, name, &st, err, sizeof err)
                   : pf_safetensors_parse(zip, sizeof zip, name, &st, err, sizeof err);
        CHECK(rc == -1 && !strcmp(err, want), "%s: '%s'\nwant '%s'", name, err, want);
    }
    CHECK(src != NULL, "PF_SOURCE_DIR is not set (ctest sets it)");
    memcpy(zip + 30, "x/arr.npy\0", 10);  /* another zip: numpy's .npz */
    CHECK(pf_safetensors_parse(zip, sizeof zip, "a.npz", &st, err, sizeof err) == -1 &&
          !strcmp(err, "a.npz: not a safetensors file; it looks like a zip archive (numpy .npz?): "
                  "it starts with 50 4b 03 04 00 00 00 00 00 00 00 00 00 00 00 00 "
                  "(\"PK..............\"), where safetensors has an 8-byte little-endian header "
                  "length (2 to 100000000) and then '{'"), "npz: '%s'", err);
    const char *lfs = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 123\n";
    CHECK(pf_safetensors_parse(lfs, strlen(lfs), "m.safetensors", &st, err, sizeof err) == -1 &&
          !strcmp(err, "m.safetensors: not a safetensors file; it looks like a Git LFS pointer, "
                  "not the file it points to (run `git lfs pull`): it starts with 76 65 72 73 69 "
                  "6f 6e 20 68 74 74 70 73 3a 2f 2f (\"version https://\"), where safetensors "
                  "has an 8-byte little-endian header length (2 to 100000000) and then '{'"),
          "lfs: '%s'", err);
    const uint8_t junk[] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6 };
    CHECK(pf_safetensors_parse(junk, sizeof junk, "junk", &st, err, sizeof err) == -1 &&
          !strcmp(err, "junk: not a safetensors file: it starts with de ad be ef 01 02 03 04 05 "
                  "06 (\"..........\"), where safetensors has an 8-byte little-endian header "
                  "length (2 to 100000000) and then '{'"), "junk: '%s'", err);
}

static void test_atomic(void) {
    char dir[256], path[300], err[512];
    snprintf(dir, sizeof dir, "/tmp/pf_test_atomic_%ld", (long)getpid());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/out.bin", dir);
    CHECK(pf_write_file_atomic(path, "hello", 5, err, sizeof err) == 0, "%s", err);
    CHECK(pf_write_file_atomic(path, "bye", 3, err, sizeof err) == 0, "%s", err);
    size_t len = 0;
    uint8_t *b = read_all(path, &len);
    CHECK(b && len == 3 && memcmp(b, "bye", 3) == 0, "replace did not take");
    free(b);
    /* the target is a folder: rename fails; the error names the path, no temp is left */
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0755);
    CHECK(pf_write_file_atomic(path, "x", 1, err, sizeof err) == -1, "wrote over a folder");
    CHECK(strstr(err, path) != NULL, "message '%s'", err);
    int entries = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))) {
            entries++;
            CHECK(!strcmp(e->d_name, "out.bin") || !strcmp(e->d_name, "sub"),
                  "left behind: %s", e->d_name);
        }
    }
    if (d) closedir(d);
    CHECK(entries == 2, "%d entries in %s", entries, dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/out.bin", dir);
    unlink(path);
    rmdir(dir);
    CHECK(pf_write_file_atomic("/nonexistent_pf_dir/f", "x", 1, err, sizeof err) == -1 &&
          strstr(err, "/nonexistent_pf_dir/f"), "missing folder: %s", err);
    /* a bare file name goes to the current folder */
    snprintf(path, sizeof path, "pf_test_atomic_%ld.bin", (long)getpid());
    CHECK(pf_write_file_atomic(path, "x", 1, err, sizeof err) == 0, "%s", err);
    unlink(path);
}

/* I64 tensors (torch's int64 buffers): written little-endian beside F32 ones, read back by
   pf_safetensors_get_i64 (values past 32 bits and negative ones), 0-dim kept; the F32
   accessors return NULL for them (name and shape still set); an I64 header with the bytes of
   F32 is refused naming I64. */
static void test_i64(void) {
    char err[512];
    const float w[2] = { 1.5f, -2.0f };
    const int64_t big[3] = { INT64_C(5000000000), -7, 0 }, one = 1;
    pf_st_tensor t[3] = { { .name = "w", .data = w, .ndim = 1, .shape = { 2 } },
                          { .name = "big", .ndim = 1, .shape = { 3 } },
                          { .name = "bn.num_batches_tracked", .ndim = 0 } };
    const int64_t *i64[3] = { NULL, big, &one };
    void *buf = NULL;
    size_t len = 0;
    pf_safetensors *st = NULL;
    CHECK(pf_safetensors_serialize_i64(t, i64, 3, NULL, 0, &buf, &len, err, sizeof err) == 0 &&
          pf_safetensors_parse(buf, len, "i64", &st, err, sizeof err) == 0, "I64: %s", err);
    CHECK(buf && memmem(buf, len, "\"dtype\":\"I64\"", 13) != NULL, "header says I64");
    const uint8_t *b = buf;
    CHECK(len >= 40 && b[len - 8] == 1 && b[len - 1] == 0, "the 0-dim counter, little-endian");
    free(buf);
    if (!st) return;
    int64_t v[3] = { 0 }, shape[4];
    int ndim = -1;
    CHECK(pf_safetensors_get_i64(st, "big", &ndim, shape, v, 3) == 3 && ndim == 1 &&
          shape[0] == 3 && v[0] == INT64_C(5000000000) && v[1] == -7 && v[2] == 0,
          "big: %lld %lld %lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    CHECK(pf_safetensors_get_i64(st, "bn.num_batches_tracked", &ndim, NULL, v, 1) == 1 &&
          ndim == 0 && v[0] == 1, "0-dim counter %lld (ndim %d)", (long long)v[0], ndim);
    CHECK(pf_safetensors_get_i64(st, "w", NULL, NULL, v, 1) == -1, "F32 w is not I64");
    CHECK(pf_safetensors_get(st, "big", NULL, NULL) == NULL, "get: NULL for I64");
    const float *f = pf_safetensors_get(st, "w", NULL, NULL);
    CHECK(f && f[0] == 1.5f && f[1] == -2.0f, "F32 beside I64");
    pf_safetensors_free(&st);
    const char bad[] = "{\"x\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint8_t file[8 + sizeof bad - 1 + 4] = { (uint8_t)(sizeof bad - 1) };
    memcpy(file + 8, bad, sizeof bad - 1);
    CHECK(pf_safetensors_parse(file, sizeof file, "bad", &st, err, sizeof err) == -1 &&
          strstr(err, "I64"), "I64 with 4 bytes refused: %s", err);
}

int main(void) {
    const char *dir = pf_test_data();
    test_python_files(dir);
    test_serialize(dir);
    test_i64();
    test_bad_files(dir);
    test_fuzz(dir);
    test_other_formats();
    test_atomic();
    return pf_test_end("test_safetensors");
}
