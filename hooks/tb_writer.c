/*  tb_writer — TensorBoard event files of scalars and images (see tb_writer.h).

    Framing is TensorFlow's TFRecord (tensorflow/core/lib/io/record_writer.cc): the length and
    the data each followed by their masked CRC32C, masked = ((crc >> 15) | (crc << 17)) +
    0xa282ead8 (tensorflow/core/lib/hash/crc32c.h, Mask). CRC32C is computed here with a
    256-entry table: Debian 12 has no C library that exposes it (zlib's crc32 is the IEEE
    polynomial; only python3-crc32c packages Castagnoli).
*/
#include "hooks/tb_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "hooks/tb_event.pb-c.h"

struct pf_tb_writer {
    FILE *file;                 /* the event file, NULL once a write failed */
    char path[4096];            /* its path, for messages */
    int failed;                 /* a write failed (logged once) */
};

/* Seconds since the Unix epoch: an Event's wall_time. */
static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
    crc_ready = 1;
}

uint32_t pf_crc32c(const void *data, size_t len) {
    if (!crc_ready) crc_init();
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* TensorFlow masks stored CRCs so that a CRC of data holding CRCs is not degenerate. */
static uint32_t masked_crc(const void *data, size_t len) {
    uint32_t c = pf_crc32c(data, len);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Write one TFRecord holding the serialised event; flush. On failure: log once, close. */
static int write_event(pf_tb_writer *self, const Tensorflow__Event *ev) {
    if (self->failed) return -1;
    size_t n = tensorflow__event__get_packed_size(ev);
    uint8_t *buf = malloc(n + 16);
    int ok = buf != NULL;
    if (ok) {
        put_le(buf, n, 8);
        put_le(buf + 8, masked_crc(buf, 8), 4);
        tensorflow__event__pack(ev, buf + 12);
        put_le(buf + 12 + n, masked_crc(buf + 12, n), 4);
        errno = 0;
        ok = fwrite(buf, 1, n + 16, self->file) == n + 16 && fflush(self->file) == 0;
    }
    free(buf);
    if (ok) return 0;
    pf_error("TensorBoard event file %s: %s; nothing more is written to it", self->path,
             buf ? (errno ? strerror(errno) : "write failed") : "out of memory");
    self->failed = 1;
    fclose(self->file);
    self->file = NULL;
    return -1;
}

pf_tb_writer *pf_tb_writer_open(const char *path, char *err, size_t errlen) {
    pf_tb_writer *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(self->path, sizeof self->path, "%s", path);
    self->file = fopen(path, "ab");
    if (!self->file) {
        snprintf(err, errlen, "%s: cannot open for appending: %s", path, strerror(errno));
        free(self);
        return NULL;
    }
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
    ev.file_version = "brain.Event:2";
    write_event(self, &ev);
    return self;
}

pf_tb_writer *pf_tb_writer_new(const char *dir, char *err, size_t errlen) {
    char host[256] = "localhost", path[4096];
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s", dir, (long long)time(NULL),
             host);
    return pf_tb_writer_open(path, err, errlen);
}

/* Write one Event with wall_time = now, step and the one summary value v. */
static int write_value(pf_tb_writer *self, int64_t step, Tensorflow__Summary__Value *v) {
    Tensorflow__Summary__Value *values[1] = {v};
    Tensorflow__Summary summary = TENSORFLOW__SUMMARY__INIT;
    summary.n_value = 1;
    summary.value = values;
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.step = step;
    ev.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
    ev.summary = &summary;
    return write_event(self, &ev);
}

int pf_tb_writer_scalar(pf_tb_writer *self, const char *tag, int64_t step, float value) {
    Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = value;
    return write_value(self, step, &v);
}

int pf_tb_writer_image(pf_tb_writer *self, const char *tag, int64_t step, int height, int width,
                       const uint8_t *png, size_t png_len) {
    Tensorflow__Summary__Image img = TENSORFLOW__SUMMARY__IMAGE__INIT;
    img.height = height;
    img.width = width;
    img.colorspace = 3;
    img.encoded_image_string.data = (uint8_t *)png;
    img.encoded_image_string.len = png_len;
    Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_IMAGE;
    v.image = &img;
    return write_value(self, step, &v);
}

const char *pf_tb_writer_path(const pf_tb_writer *self) {
    return self->path;
}

int pf_tb_writer_failed(const pf_tb_writer *self) {
    return self->failed;
}

void pf_tb_writer_destroy(pf_tb_writer **self_p) {
    if (!self_p || !*self_p) return;
    if ((*self_p)->file) fclose((*self_p)->file);
    free(*self_p);
    *self_p = NULL;
}
