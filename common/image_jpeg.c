/*  image_jpeg — JPEG in and out through libjpeg-turbo's libjpeg API (see image.h and
    docs/images.md for the RGB8 rule).

    Decoding uses libjpeg's defaults (islow IDCT, fancy upsampling), so the pixels equal those of
    any other libjpeg-turbo decoder with default settings (PIL, OpenCV); grayscale becomes
    R = G = B; CMYK/YCCK and other colour spaces are refused with a message naming the file.

    libjpeg reports errors through error_exit, which must not return: ours longjmps back to the
    function that called setjmp. Corrupt-data warnings (a truncated file, bad Huffman codes,
    extraneous bytes ...) are made fatal the same way, so a damaged file is an error, as it is
    for PNG, instead of an image padded with grey. Everything that must be freed after a jump
    lives in a struct owned by the caller of the setjmp function (C11 7.13.2.1).

    Encoding (for the JPEG degradation, common/degrade.h) writes into a growing memory buffer
    through a small destination manager of our own, so nothing leaks when encoding fails.
*/
#include "common/image.h"
#include "common/image_info.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* before jerror.h: its message list depends on jconfig.h */
#include <jerror.h>

/* Same guard as for PNG (image.c): refuse headers that claim gigapixels before allocating. */
#define PF_JPEG_MAX_PIXELS ((size_t)1 << 28)

typedef struct {
    struct jpeg_error_mgr pub;   /* libjpeg's part; first, so libjpeg's pointer is ours */
    jmp_buf jump;                /* where error_exit returns to */
    char msg[JMSG_LENGTH_MAX];   /* the message that ended the work */
    int code;                    /* its libjpeg message code */
} jpeg_err;

static void on_error_exit(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    e->code = cinfo->err->msg_code;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

/* Warnings (level -1) that mean the data is damaged end the decoding like an error; other
   warnings (unknown JFIF revision, Adobe transform code, a bad ICC marker: colour profiles are
   ignored anyway) and trace messages are dropped. Nothing is printed. */
static void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;
    switch (cinfo->err->msg_code) {
#if JPEG_LIB_VERSION >= 70 || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_BOGUS_PROGRESSION:
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_JPEG_EOF:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
        on_error_exit(cinfo);
        break;
    default:
        break;
    }
}

static void jpeg_err_init(jpeg_err *e) {
    jpeg_std_error(&e->pub);
    e->pub.error_exit = on_error_exit;
    e->pub.emit_message = on_emit_message;
    e->msg[0] = 0;
    e->code = 0;
}

/* After jpeg_read_header: ask for RGB output, or say why not. Returns 0, or -1 with msg. */
static int choose_rgb(j_decompress_ptr cinfo, char *msg, size_t msglen) {
    switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
        cinfo->out_color_space = JCS_RGB;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        snprintf(msg, msglen, "CMYK JPEG is not supported (convert it to RGB first)");
        return -1;
    default:
        snprintf(msg, msglen, "unsupported JPEG colour space (%d components)",
                 cinfo->num_components);
        return -1;
    }
    if ((size_t)cinfo->image_width * cinfo->image_height > PF_JPEG_MAX_PIXELS) {
        snprintf(msg, msglen, "image too large (%ux%u)", cinfo->image_width,
                 cinfo->image_height);
        return -1;
    }
    return 0;
}

typedef struct {
    struct jpeg_decompress_struct cinfo; /* libjpeg state (created when `created`) */
    jpeg_err err;                        /* its error manager */
    int created;                         /* jpeg_create_decompress ran */
    char why[200];                       /* our own reason to stop (colour space, size) */
    uint8_t *rgb;                        /* output, handed to the caller on success */
} jpeg_dec;

/* The libjpeg part of decoding; returns 0, or -1 with d->err.msg or d->why set. */
static int decode(jpeg_dec *d, const uint8_t *buf, size_t len, pf_image *out) {
    jpeg_err_init(&d->err);
    d->cinfo.err = &d->err.pub;
    if (setjmp(d->err.jump)) return -1;
    jpeg_create_decompress(&d->cinfo);
    d->created = 1;
    jpeg_mem_src(&d->cinfo, buf, (unsigned long)len);
    jpeg_read_header(&d->cinfo, TRUE);
    if (choose_rgb(&d->cinfo, d->why, sizeof d->why)) return -1;
    jpeg_start_decompress(&d->cinfo);
    size_t w = d->cinfo.output_width, h = d->cinfo.output_height;
    d->rgb = malloc(w * h * 3);
    if (!d->rgb) {
        snprintf(d->why, sizeof d->why, "out of memory");
        return -1;
    }
    while (d->cinfo.output_scanline < h) {
        JSAMPROW row = d->rgb + (size_t)d->cinfo.output_scanline * w * 3;
        jpeg_read_scanlines(&d->cinfo, &row, 1);
    }
    /* reads up to EOI: a file cut after the last scanline is corrupt too */
    jpeg_finish_decompress(&d->cinfo);
    out->w = (int)w;
    out->h = (int)h;
    out->data = d->rgb;
    d->rgb = NULL;
    return 0;
}

int pf_image_decode_jpeg(const void *buf, size_t len, const char *name, pf_image *out,
                         char *err, size_t errlen) {
    *out = (pf_image){ 0 };
    const uint8_t *b = buf;
    if (len < 3 || b[0] != 0xFF || b[1] != 0xD8 || b[2] != 0xFF) {
        snprintf(err, errlen, "%s: not a JPEG file (no SOI marker)", name);
        return -1;
    }
    jpeg_dec d;
    memset(&d, 0, sizeof d);
    int rc = decode(&d, buf, len, out);
    if (rc != 0) {
        if (d.why[0])
            snprintf(err, errlen, "%s: %s", name, d.why);
        else if (d.err.code == JWRN_JPEG_EOF)
            snprintf(err, errlen, "%s: truncated JPEG (%s)", name, d.err.msg);
        else
            snprintf(err, errlen, "%s: corrupt JPEG (%s)", name, d.err.msg);
    }
    if (d.created) jpeg_destroy_decompress(&d.cinfo);
    free(d.rgb);
    return rc;
}

typedef struct {
    struct jpeg_decompress_struct cinfo; /* libjpeg state (created when `created`) */
    jpeg_err err;                        /* its error manager */
    int created;                         /* jpeg_create_decompress ran */
    FILE *f;                             /* the open file, or NULL */
} jpeg_hdr;

static int read_header(jpeg_hdr *d) {
    jpeg_err_init(&d->err);
    d->cinfo.err = &d->err.pub;
    if (setjmp(d->err.jump)) return -1;
    jpeg_create_decompress(&d->cinfo);
    d->created = 1;
    jpeg_stdio_src(&d->cinfo, d->f);
    jpeg_read_header(&d->cinfo, TRUE);
    return 0;
}

int pf_image_jpeg_size(const char *path, int *w, int *h, char *err, size_t errlen) {
    jpeg_hdr d;
    memset(&d, 0, sizeof d);
    d.f = fopen(path, "rb");
    if (!d.f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    unsigned char sig[3];
    int rc = -1;
    char why[200] = "";
    if (fread(sig, 1, 3, d.f) != 3 || sig[0] != 0xFF || sig[1] != 0xD8 || sig[2] != 0xFF) {
        snprintf(err, errlen, "%s: not a JPEG file (no SOI marker)", path);
    } else if (fseek(d.f, 0, SEEK_SET) != 0 || read_header(&d) != 0) {
        snprintf(err, errlen, "%s: corrupt JPEG header (%s)", path,
                 d.err.msg[0] ? d.err.msg : strerror(errno));
    } else if (choose_rgb(&d.cinfo, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
    } else {
        *w = (int)d.cinfo.image_width;
        *h = (int)d.cinfo.image_height;
        rc = 0;
    }
    if (d.created) jpeg_destroy_decompress(&d.cinfo);
    fclose(d.f);
    return rc;
}

/* Destination manager that grows a malloc'd buffer (libjpeg-turbo's jpeg_mem_dest leaks its
   buffer when compression is abandoned midway). */
typedef struct {
    struct jpeg_destination_mgr pub; /* libjpeg's part; first */
    uint8_t *buf;                    /* encoded bytes (malloc'd) */
    size_t cap;                      /* bytes allocated */
} mem_dest;

static void dest_init(j_compress_ptr cinfo) {
    mem_dest *m = (mem_dest *)cinfo->dest;
    m->pub.next_output_byte = m->buf;
    m->pub.free_in_buffer = m->cap;
}

static boolean dest_grow(j_compress_ptr cinfo) {
    mem_dest *m = (mem_dest *)cinfo->dest;
    /* libjpeg calls this only with the buffer full, whatever free_in_buffer says. */
    uint8_t *nb = m->cap < SIZE_MAX / 2 ? realloc(m->buf, m->cap * 2) : NULL;
    if (!nb) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    m->pub.next_output_byte = nb + m->cap;
    m->pub.free_in_buffer = m->cap;
    m->buf = nb;
    m->cap *= 2;
    return TRUE;
}

static void dest_term(j_compress_ptr cinfo) {
    (void)cinfo;
}

typedef struct {
    struct jpeg_compress_struct cinfo; /* libjpeg state (created when `created`) */
    jpeg_err err;                      /* its error manager */
    int created;                       /* jpeg_create_compress ran */
    mem_dest dest;                     /* the output buffer */
} jpeg_enc;

static int encode(jpeg_enc *e, const uint8_t *rgb, int w, int h, int quality) {
    jpeg_err_init(&e->err);
    e->cinfo.err = &e->err.pub;
    if (setjmp(e->err.jump)) return -1;
    jpeg_create_compress(&e->cinfo);
    e->created = 1;
    e->dest.pub.init_destination = dest_init;
    e->dest.pub.empty_output_buffer = dest_grow;
    e->dest.pub.term_destination = dest_term;
    e->cinfo.dest = &e->dest.pub;
    e->cinfo.image_width = (JDIMENSION)w;
    e->cinfo.image_height = (JDIMENSION)h;
    e->cinfo.input_components = 3;
    e->cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&e->cinfo);
    jpeg_set_quality(&e->cinfo, quality, TRUE);
    jpeg_start_compress(&e->cinfo, TRUE);
    while (e->cinfo.next_scanline < (JDIMENSION)h) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)e->cinfo.next_scanline * w * 3);
        jpeg_write_scanlines(&e->cinfo, &row, 1);
    }
    jpeg_finish_compress(&e->cinfo);
    return 0;
}

int pf_image_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, uint8_t **buf,
                         size_t *len, char *err, size_t errlen) {
    *buf = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || w > 65500 || h > 65500 || quality < 1 || quality > 100) {
        snprintf(err, errlen, "JPEG encoding: invalid size %dx%d or quality %d", w, h, quality);
        return -1;
    }
    jpeg_enc e;
    memset(&e, 0, sizeof e);
    e.dest.cap = 4096 + (size_t)w * h / 2;
    e.dest.buf = malloc(e.dest.cap);
    int rc = e.dest.buf ? encode(&e, rgb, w, h, quality) : -1;
    if (rc == 0) {
        *len = e.dest.cap - e.dest.pub.free_in_buffer;
        *buf = e.dest.buf;
    } else {
        snprintf(err, errlen, "JPEG encoding failed: %s", e.dest.buf ? e.err.msg : "out of memory");
        free(e.dest.buf);
    }
    if (e.created) jpeg_destroy_compress(&e.cinfo);
    return rc;
}
