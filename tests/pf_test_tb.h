/*  pf_test_tb — reads a TensorBoard event file back for tests, independently of the writer.

    Its own TFRecord framing checks (uint64 length, masked CRC32C of the length bytes, data,
    masked CRC32C of the data), its own bit-at-a-time CRC32C (the writer uses a table), and its
    own protobuf wire decoding of tensorflow.Event with TensorFlow's field numbers
    (tensorflow/core/util/event.proto: wall_time 1 double, step 2 int64, file_version 3 string,
    summary 5; tensorflow/core/framework/summary.proto: Summary.value 1, Value.tag 1,
    Value.simple_value 2 float, Value.image 4; Image.height 1, width 2, colorspace 3 int32,
    encoded_image_string 4 bytes). No protobuf-c here, so a wrong schema in the writer shows.
    An image's bytes are copied out (tb_free releases them).
*/
#ifndef PF_TEST_TB_H
#define PF_TEST_TB_H
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_MAX_EVENTS 4096

typedef struct {
    double wall_time;
    int64_t step;
    char file_version[64];      /* "" unless the event holds one */
    int n_values;               /* scalars in its summary (PixFlow writes one) */
    char tag[128];              /* the first value's tag */
    float value;                /* and its scalar value */
    int has_image;              /* the first value is an image: */
    int64_t height, width, colorspace;
    uint8_t *png;               /* its encoded bytes (malloc'd), png_len of them */
    size_t png_len;
} tb_event;

/* Free the image bytes of n events. */
static inline void tb_free(tb_event *ev, int n) {
    for (int i = 0; i < n; i++) {
        free(ev[i].png);
        ev[i].png = NULL;
    }
}

/* CRC32C bit by bit, reflected polynomial 0x82F63B78. */
static inline uint32_t tb_crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static inline uint32_t tb_masked(const uint8_t *p, size_t n) {
    uint32_t c = tb_crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static inline uint64_t tb_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A varint at *p (< end); advances *p. Returns -1 when it runs past end. */
static inline int tb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* Decode the fields of one message: calls back with field number, wire type, and either the
   varint / fixed value or the length-delimited bytes. Returns -1 on malformed input. */
typedef int (*tb_field_fn)(void *ctx, int field, int wire, uint64_t v, const uint8_t *b,
                           size_t n);
static inline int tb_fields(const uint8_t *p, const uint8_t *end, tb_field_fn fn, void *ctx) {
    while (p < end) {
        uint64_t key, v = 0, n = 0;
        if (tb_varint(&p, end, &key)) return -1;
        int wire = (int)(key & 7), field = (int)(key >> 3);
        const uint8_t *b = NULL;
        if (wire == 0) {
            if (tb_varint(&p, end, &v)) return -1;
        } else if (wire == 1 || wire == 5) {
            int w = wire == 1 ? 8 : 4;
            if (end - p < w) return -1;
            v = tb_le(p, w);
            p += w;
        } else if (wire == 2) {
            if (tb_varint(&p, end, &n) || (uint64_t)(end - p) < n) return -1;
            b = p;
            p += n;
        } else {
            return -1;
        }
        if (fn(ctx, field, wire, v, b, (size_t)n)) return -1;
    }
    return 0;
}

static inline int tb_image_field(void *ctx, int field, int wire, uint64_t v, const uint8_t *b,
                                 size_t n) {
    tb_event *e = ctx;
    if (field == 1 && wire == 0) {
        e->height = (int64_t)v;
    } else if (field == 2 && wire == 0) {
        e->width = (int64_t)v;
    } else if (field == 3 && wire == 0) {
        e->colorspace = (int64_t)v;
    } else if (field == 4 && wire == 2 && !e->png) {
        e->png = malloc(n ? n : 1);
        if (!e->png) return -1;
        memcpy(e->png, b, n);
        e->png_len = n;
    } else {
        return -1;
    }
    return 0;
}

static inline int tb_value_field(void *ctx, int field, int wire, uint64_t v, const uint8_t *b,
                                 size_t n) {
    tb_event *e = ctx;
    if (field == 4 && wire == 2 && !e->has_image) {
        e->has_image = 1;
        return tb_fields(b, b + n, tb_image_field, e);
    } else if (field == 1 && wire == 2 && n < sizeof e->tag) {
        memcpy(e->tag, b, n);
        e->tag[n] = 0;
    } else if (field == 2 && wire == 5) {
        uint32_t bits = (uint32_t)v;
        memcpy(&e->value, &bits, 4);
    } else {
        return -1;      /* PixFlow writes nothing else */
    }
    return 0;
}

static inline int tb_summary_field(void *ctx, int field, int wire, uint64_t v,
                                   const uint8_t *b, size_t n) {
    tb_event *e = ctx;
    if (field != 1 || wire != 2) return -1;
    if (e->n_values++ == 0) return tb_fields(b, b + n, tb_value_field, e);
    return 0;
}

static inline int tb_event_field(void *ctx, int field, int wire, uint64_t v, const uint8_t *b,
                                 size_t n) {
    tb_event *e = ctx;
    if (field == 1 && wire == 1) {
        memcpy(&e->wall_time, &v, 8);
    } else if (field == 2 && wire == 0) {
        e->step = (int64_t)v;
    } else if (field == 3 && wire == 2 && n < sizeof e->file_version) {
        memcpy(e->file_version, b, n);
        e->file_version[n] = 0;
    } else if (field == 5 && wire == 2) {
        return tb_fields(b, b + n, tb_summary_field, e);
    } else {
        return -1;
    }
    return 0;
}

/* Read every record of PATH into ev (at most max). Returns the number of events, or -1 with a
   message in err: a short record, a length or data CRC that does not match, a bad message. */
static inline int tb_read(const char *path, tb_event *ev, int max, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    int count = 0;
    uint8_t head[12], foot[4];
    size_t got;
    while ((got = fread(head, 1, 12, f)) > 0) {
        if (got != 12 || count == max) {
            snprintf(err, errlen, "record %d: %s", count, got != 12 ? "short header" : "too many");
            fclose(f);
            return -1;
        }
        uint64_t len = tb_le(head, 8);
        if (tb_le(head + 8, 4) != tb_masked(head, 8) || len > (64u << 20)) {
            snprintf(err, errlen, "record %d: length CRC mismatch (length %llu)", count,
                     (unsigned long long)len);
            fclose(f);
            return -1;
        }
        uint8_t *data = malloc(len ? len : 1);
        if (fread(data, 1, len, f) != len || fread(foot, 1, 4, f) != 4) {
            snprintf(err, errlen, "record %d: short data (length %llu)", count,
                     (unsigned long long)len);
            free(data);
            fclose(f);
            return -1;
        }
        int bad_crc = tb_le(foot, 4) != tb_masked(data, len);
        memset(&ev[count], 0, sizeof ev[count]);
        int bad_msg = !bad_crc && tb_fields(data, data + len, tb_event_field, &ev[count]);
        free(data);
        if (bad_crc || bad_msg) {
            tb_free(ev, count + 1);
            snprintf(err, errlen, "record %d: %s", count, bad_crc ? "data CRC mismatch"
                                                                  : "not a PixFlow Event");
            fclose(f);
            return -1;
        }
        count++;
    }
    fclose(f);
    return count;
}

/* The path of the one events.out.tfevents.* file in DIR into out; returns how many there are. */
static inline int tb_find(const char *dir, char *out, size_t outlen) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "events.out.tfevents.", 20) == 0) {
            snprintf(out, outlen, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}
#endif
