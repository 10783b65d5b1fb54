/*  image — PNG in and out through libpng (see image.h and docs/images.md for the RGB8 rule),
    and pf_image_read, which reads a PNG or a JPEG (image_jpeg.c) by the file's extension;
    at the end, images as stored (pf_image_full: 16 bits and alpha kept, `pixflow upscale`).

    Decoding uses libpng's low-level API with no libpng transforms except de-interlacing: rows
    are read as stored (packed 1/2/4-bit samples, big-endian 16-bit samples, palette indices)
    and converted to RGB8 here, so the rule in image.h is implemented in one visible place and
    libpng's gamma/ICC/tRNS machinery never touches the values. Ancillary chunks are ignored.

    libpng reports errors by longjmp. Everything that must be freed after a longjmp lives in a
    `png_dec` owned by the caller of the function that calls setjmp, so no automatic variable of
    the setjmp frame is read after the jump (C11 7.13.2.1).

    Writing encodes into memory, then hands the bytes to pf_write_file_atomic (safetensors.h),
    so a crash or a full disk never leaves half a PNG under the final name.
*/
#include "common/image.h"
#include "common/safetensors.h" /* pf_write_file_atomic */

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Largest decoded image accepted, in pixels: a guard against headers that claim gigapixels
   (the allocation would happen before the truncated data is noticed). */
#define PF_PNG_MAX_PIXELS ((size_t)1 << 28)

typedef struct {
    const uint8_t *buf;          /* whole PNG file */
    size_t len, pos;             /* bytes in buf, next byte to read */
    char msg[200];               /* libpng's error message, set by on_error */
    png_structp png;             /* libpng read state, or NULL */
    png_infop info;              /* its info struct, or NULL */
    uint8_t *raw;                /* stored rows (whole image if interlaced, else one row) */
    png_bytep *rows;             /* row pointers into raw (interlaced only) */
    uint8_t *rgb;                /* output, handed to the caller on success */
} png_dec;

static void on_error(png_structp png, png_const_charp msg) {
    png_dec *d = png_get_error_ptr(png);
    snprintf(d->msg, sizeof d->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* warnings (bad ancillary chunk, extra data) do not affect the pixels */
}

static void on_read(png_structp png, png_bytep out, size_t n) {
    png_dec *d = png_get_io_ptr(png);
    if (n > d->len - d->pos) {
        png_error(png, "truncated file");
    }
    memcpy(out, d->buf + d->pos, n);
    d->pos += n;
}

/* One stored row -> RGB8. `row` holds `w` samples of the PNG's colour type and depth. */
static void convert_row(const uint8_t *row, int w, int color_type, int depth,
                        const png_color *pal, int n_pal, uint8_t *out) {
    int channels = color_type == PNG_COLOR_TYPE_RGB ? 3
                 : color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4
                 : color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    for (int x = 0; x < w; x++) {
        unsigned s[4] = {0, 0, 0, 0}; /* samples of pixel x, already in 0..255 */
        if (depth < 8) {
            int per_byte = 8 / depth, shift = 8 - depth * (x % per_byte + 1);
            unsigned v = (row[x / per_byte] >> shift) & ((1u << depth) - 1);
            /* gray: scale to 8 bits, exact since 255 is a multiple of 1, 3 and 15 */
            s[0] = color_type == PNG_COLOR_TYPE_PALETTE ? v : v * 255 / ((1u << depth) - 1);
        } else if (depth == 8) {
            for (int c = 0; c < channels; c++) s[c] = row[(size_t)x * channels + c];
        } else {
            for (int c = 0; c < channels; c++) {
                const uint8_t *p = row + ((size_t)x * channels + c) * 2;
                unsigned v = (unsigned)p[0] << 8 | p[1];
                s[c] = (v * 255u + 32767u) / 65535u;
            }
        }
        uint8_t *o = out + (size_t)x * 3;
        if (color_type == PNG_COLOR_TYPE_PALETTE) {
            /* an index past the palette reads as black, as libpng's own expansion does */
            if ((int)s[0] < n_pal) {
                o[0] = pal[s[0]].red, o[1] = pal[s[0]].green, o[2] = pal[s[0]].blue;
            } else {
                o[0] = o[1] = o[2] = 0;
            }
        } else if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
            o[0] = o[1] = o[2] = (uint8_t)s[0];
        } else {
            o[0] = (uint8_t)s[0], o[1] = (uint8_t)s[1], o[2] = (uint8_t)s[2];
        }
    }
}

/* libpng's read state for d->buf, before the caller's setjmp (nothing here longjmps).
   Returns 0, or -1 (out of memory) with d->msg. */
static int start_read(png_dec *d) {
    d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, on_error, on_warning);
    d->info = d->png ? png_create_info_struct(d->png) : NULL;
    if (!d->info) {
        snprintf(d->msg, sizeof d->msg, "out of memory");
        return -1;
    }
    png_set_read_fn(d->png, d, on_read);
    /* ignore every ancillary chunk (gamma, ICC, text...); libpng keeps IHDR/PLTE/tRNS/IDAT */
    png_set_keep_unknown_chunks(d->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    png_set_user_limits(d->png, 1u << 20, 1u << 20);
    return 0;
}

/* The libpng part; returns 0 or -1 with d->msg set. Resources are recorded in d. */
static int decode(png_dec *d, pf_image *out) {
    if (start_read(d)) return -1;
    if (setjmp(png_jmpbuf(d->png))) {
        return -1;
    }
    png_read_info(d->png, d->info);

    png_uint_32 w32, h32;
    int depth, color_type, interlace;
    png_get_IHDR(d->png, d->info, &w32, &h32, &depth, &color_type, &interlace, NULL, NULL);
    if ((size_t)w32 * h32 > PF_PNG_MAX_PIXELS) {
        png_error(d->png, "image too large");
    }
    png_colorp pal = NULL;
    int n_pal = 0;
    if (color_type == PNG_COLOR_TYPE_PALETTE &&
        !(png_get_PLTE(d->png, d->info, &pal, &n_pal) & PNG_INFO_PLTE)) {
        png_error(d->png, "palette image without PLTE chunk");
    }
    int passes = png_set_interlace_handling(d->png);
    png_read_update_info(d->png, d->info);
    size_t rowbytes = png_get_rowbytes(d->png, d->info);
    size_t w = w32, h = h32;

    d->rgb = malloc(w * h * 3);
    /* zeroed: libpng merges the interlace passes into these rows, sub-byte pixels by mask */
    d->raw = calloc(passes > 1 ? h : 1, rowbytes);
    if (!d->rgb || !d->raw) {
        png_error(d->png, "out of memory");
    }
    if (passes > 1) {
        d->rows = malloc(h * sizeof *d->rows);
        if (!d->rows) {
            png_error(d->png, "out of memory");
        }
        for (size_t y = 0; y < h; y++) d->rows[y] = d->raw + y * rowbytes;
        png_read_image(d->png, d->rows);
        for (size_t y = 0; y < h; y++) {
            convert_row(d->rows[y], (int)w, color_type, depth, pal, n_pal, d->rgb + y * w * 3);
        }
    } else {
        for (size_t y = 0; y < h; y++) {
            png_read_row(d->png, d->raw, NULL);
            convert_row(d->raw, (int)w, color_type, depth, pal, n_pal, d->rgb + y * w * 3);
        }
    }
    /* reads up to IEND: a file cut after the pixel data, or with a bad CRC there, is corrupt */
    png_read_end(d->png, NULL);
    out->w = (int)w;
    out->h = (int)h;
    out->data = d->rgb;
    d->rgb = NULL;
    return 0;
}

int pf_image_decode_png(const void *buf, size_t len, const char *name, pf_image *out,
                        char *err, size_t errlen) {
    out->w = out->h = 0;
    out->data = NULL;
    if (len < 8 || png_sig_cmp((png_const_bytep)buf, 0, 8) != 0) {
        snprintf(err, errlen, "%s: not a PNG file%s", name,
                 len < 8 ? " (shorter than the PNG signature)" : " (bad signature)");
        return -1;
    }
    png_dec d;
    memset(&d, 0, sizeof d);
    d.buf = buf;
    d.len = len;
    int rc = decode(&d, out);
    if (rc != 0) {
        if (strstr(d.msg, "truncated") || strstr(d.msg, "Not enough image data")) {
            snprintf(err, errlen, "%s: truncated PNG (%s)", name, d.msg);
        } else {
            snprintf(err, errlen, "%s: corrupt PNG (%s)", name, d.msg);
        }
    }
    png_destroy_read_struct(d.png ? &d.png : NULL, d.info ? &d.info : NULL, NULL);
    free(d.rows);
    free(d.raw);
    free(d.rgb);
    return rc;
}

/* Read all of `path` into a malloc'd buffer. Returns 0, or -1 with err. */
static int slurp(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen) {
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) {
            fclose(f);
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
        if (!nb) free(b);
        b = nb;
        cap *= 2;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        fclose(f);
        free(b);
        return -1;
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
}

int pf_image_read_png(const char *path, pf_image *out, char *err, size_t errlen) {
    out->w = out->h = 0;
    out->data = NULL;
    uint8_t *buf;
    size_t len;
    if (slurp(path, &buf, &len, err, errlen) != 0) return -1;
    int rc = pf_image_decode_png(buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

int pf_image_format_of(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return PF_IMAGE_UNKNOWN;
    if (strcasecmp(dot, ".png") == 0) return PF_IMAGE_PNG;
    if (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0) return PF_IMAGE_JPEG;
    return PF_IMAGE_UNKNOWN;
}

int pf_image_read(const char *path, pf_image *out, char *err, size_t errlen) {
    out->w = out->h = 0;
    out->data = NULL;
    int format = pf_image_format_of(path);
    if (format == PF_IMAGE_UNKNOWN) {
        snprintf(err, errlen, "%s: not a .png, .jpg or .jpeg file", path);
        return -1;
    }
    uint8_t *buf;
    size_t len;
    if (slurp(path, &buf, &len, err, errlen) != 0) return -1;
    int rc = format == PF_IMAGE_PNG ? pf_image_decode_png(buf, len, path, out, err, errlen)
                                    : pf_image_decode_jpeg(buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

typedef struct {
    char msg[200];               /* libpng's error message */
    png_structp png;             /* write state, or NULL */
    png_infop info;              /* its info struct, or NULL */
    uint8_t *buf;                /* encoded bytes so far (malloc'd) */
    size_t len, cap;             /* bytes used, bytes allocated */
} png_enc;

static void on_write_error(png_structp png, png_const_charp msg) {
    png_enc *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_write(png_structp png, png_bytep data, size_t n) {
    png_enc *e = png_get_io_ptr(png);
    if (n > e->cap - e->len) {
        size_t cap = e->cap ? e->cap : 1 << 16;
        while (cap - e->len < n) {
            if (cap > SIZE_MAX / 2) png_error(png, "out of memory");
            cap *= 2;
        }
        uint8_t *nb = realloc(e->buf, cap);
        if (!nb) png_error(png, "out of memory");
        e->buf = nb;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, data, n);
    e->len += n;
}

static void on_flush(png_structp png) {
    (void)png;
}

/* libpng's write state into e->buf, before the caller's setjmp. 0, or -1 with e->msg. */
static int start_write(png_enc *e) {
    e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_write_error, on_warning);
    e->info = e->png ? png_create_info_struct(e->png) : NULL;
    if (!e->info) {
        snprintf(e->msg, sizeof e->msg, "out of memory");
        return -1;
    }
    png_set_write_fn(e->png, e, on_write, on_flush);
    return 0;
}

/* The libpng part of writing: encodes into e->buf. Returns 0 or -1 with e->msg. */
static int encode(png_enc *e, const uint8_t *rgb, int w, int h) {
    if (start_write(e)) return -1;
    if (setjmp(png_jmpbuf(e->png))) {
        return -1;
    }
    png_set_IHDR(e->png, e->info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(e->png, 6);
    png_write_info(e->png, e->info);
    for (int y = 0; y < h; y++) {
        png_write_row(e->png, (png_const_bytep)(rgb + (size_t)y * w * 3));
    }
    png_write_end(e->png, NULL);
    return 0;
}

int pf_image_encode_png(const uint8_t *rgb, int w, int h, uint8_t **buf, size_t *len,
                        char *err, size_t errlen) {
    *buf = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || w > (1 << 20) || h > (1 << 20) || !rgb) {
        snprintf(err, errlen, "invalid image size %dx%d", w, h);
        return -1;
    }
    png_enc e;
    memset(&e, 0, sizeof e);
    int rc = encode(&e, rgb, w, h);
    png_destroy_write_struct(e.png ? &e.png : NULL, e.info ? &e.info : NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot encode PNG: %s", e.msg);
        free(e.buf);
        return -1;
    }
    *buf = e.buf;
    *len = e.len;
    return 0;
}

int pf_image_write_png(const char *path, const uint8_t *rgb, int w, int h, char *err,
                       size_t errlen) {
    uint8_t *buf;
    size_t len;
    char e[256];
    if (pf_image_encode_png(rgb, w, h, &buf, &len, e, sizeof e) != 0) {
        snprintf(err, errlen, "%s: %s", path, e);
        return -1;
    }
    int rc = pf_write_file_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

void pf_image_free(pf_image *img) {
    if (!img) return;
    free(img->data);
    img->data = NULL;
    img->w = img->h = 0;
}

/* ---- images as stored (pf_image_full) ------------------------------------------------------
   Here libpng's own transforms do the expansions (palette, low-bit gray, tRNS, byte order),
   since no conversion rule of ours applies: the samples stay what the file holds. */

static int host_little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* The libpng part of pf_image_read_full (header_only: stop after the header, no pixels).
   Returns 0 or -1 with d->msg; resources in d (d->rgb: the samples). */
static int decode_full(png_dec *d, pf_image_full *out, int header_only) {
    if (start_read(d)) return -1;
    if (setjmp(png_jmpbuf(d->png))) {
        return -1;
    }
    png_read_info(d->png, d->info);
    png_uint_32 w32, h32;
    int depth, color_type;
    png_get_IHDR(d->png, d->info, &w32, &h32, &depth, &color_type, NULL, NULL, NULL);
    if ((size_t)w32 * h32 > PF_PNG_MAX_PIXELS) {
        png_error(d->png, "image too large");
    }
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(d->png);
    if (color_type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(d->png);
    if (png_get_valid(d->png, d->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(d->png);
    if (depth == 16 && host_little_endian()) png_set_swap(d->png);
    png_set_interlace_handling(d->png);
    png_read_update_info(d->png, d->info);
    out->w = (int)w32;
    out->h = (int)h32;
    out->channels = png_get_channels(d->png, d->info);
    out->depth = png_get_bit_depth(d->png, d->info);
    out->data = NULL;
    if (header_only) return 0;
    size_t rowbytes = png_get_rowbytes(d->png, d->info), h = h32;
    if (rowbytes != (size_t)w32 * out->channels * (size_t)(out->depth / 8)) {
        png_error(d->png, "unexpected row size");
    }
    d->rgb = malloc(h * rowbytes);
    d->rows = malloc(h * sizeof *d->rows);
    if (!d->rgb || !d->rows) {
        png_error(d->png, "out of memory");
    }
    for (size_t y = 0; y < h; y++) d->rows[y] = d->rgb + y * rowbytes;
    png_read_image(d->png, d->rows);
    png_read_end(d->png, NULL);
    out->data = d->rgb;
    d->rgb = NULL;
    return 0;
}

/* pf_image_read_full and pf_image_full_info. */
static int read_full(const char *path, pf_image_full *out, int header_only, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    int format = pf_image_format_of(path);
    if (format == PF_IMAGE_UNKNOWN) {
        snprintf(err, errlen, "%s: not a .png, .jpg or .jpeg file", path);
        return -1;
    }
    if (format == PF_IMAGE_JPEG) {     /* decoded even for the header: the check is whole */
        pf_image rgb = { 0 };
        if (pf_image_read(path, &rgb, err, errlen)) return -1;
        *out = (pf_image_full){ rgb.w, rgb.h, 3, 8, rgb.data };
        if (header_only) free(rgb.data), out->data = NULL;
        return 0;
    }
    uint8_t *buf;
    size_t len;
    if (slurp(path, &buf, &len, err, errlen) != 0) return -1;
    int rc = -1;
    if (len < 8 || png_sig_cmp((png_const_bytep)buf, 0, 8) != 0) {
        snprintf(err, errlen, "%s: not a PNG file%s", path,
                 len < 8 ? " (shorter than the PNG signature)" : " (bad signature)");
    } else {
        png_dec d;
        memset(&d, 0, sizeof d);
        d.buf = buf;
        d.len = len;
        rc = decode_full(&d, out, header_only);
        if (rc != 0)
            snprintf(err, errlen, "%s: %s PNG (%s)", path,
                     strstr(d.msg, "truncated") || strstr(d.msg, "Not enough image data")
                         ? "truncated" : "corrupt", d.msg);
        png_destroy_read_struct(d.png ? &d.png : NULL, d.info ? &d.info : NULL, NULL);
        free(d.rows);
        free(d.rgb);
    }
    free(buf);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}

int pf_image_read_full(const char *path, pf_image_full *out, char *err, size_t errlen) {
    return read_full(path, out, 0, err, errlen);
}

int pf_image_full_info(const char *path, pf_image_full *out, char *err, size_t errlen) {
    return read_full(path, out, 1, err, errlen);
}

/* The libpng part of pf_image_write_png_full: encodes into e->buf. 0 or -1 with e->msg. */
static int encode_full(png_enc *e, const pf_image_full *img) {
    static const int types[] = { 0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                 PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA };
    if (start_write(e)) return -1;
    if (setjmp(png_jmpbuf(e->png))) {
        return -1;
    }
    png_set_IHDR(e->png, e->info, (png_uint_32)img->w, (png_uint_32)img->h, img->depth,
                 types[img->channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(e->png, 6);
    png_write_info(e->png, e->info);
    if (img->depth == 16 && host_little_endian()) png_set_swap(e->png);
    size_t rowbytes = (size_t)img->w * img->channels * (size_t)(img->depth / 8);
    for (int y = 0; y < img->h; y++) {
        png_write_row(e->png, (png_const_bytep)img->data + (size_t)y * rowbytes);
    }
    png_write_end(e->png, NULL);
    return 0;
}

int pf_image_write_png_full(const char *path, const pf_image_full *img, char *err,
                            size_t errlen) {
    if (img->w <= 0 || img->h <= 0 || img->w > (1 << 20) || img->h > (1 << 20) || !img->data ||
        img->channels < 1 || img->channels > 4 || (img->depth != 8 && img->depth != 16)) {
        snprintf(err, errlen, "%s: cannot write a %dx%d image of %d channels at %d bits", path,
                 img->w, img->h, img->channels, img->depth);
        return -1;
    }
    png_enc e;
    memset(&e, 0, sizeof e);
    int rc = encode_full(&e, img);
    png_destroy_write_struct(e.png ? &e.png : NULL, e.info ? &e.info : NULL);
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot encode PNG: %s", path, e.msg);
        free(e.buf);
        return -1;
    }
    rc = pf_write_file_atomic(path, e.buf, e.len, err, errlen);
    free(e.buf);
    return rc;
}

void pf_image_full_free(pf_image_full *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}
