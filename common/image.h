/*  image — PNG (libpng, image.c) and JPEG (libjpeg-turbo, image_jpeg.c) in and out.

    Every image in PixFlow's data path is RGB8: uint8, interleaved HWC (row-major, 3 bytes a
    pixel, no row padding). JPEG is decoded with libjpeg's default settings to RGB (grayscale
    -> R = G = B; CMYK refused). Reading converts any PNG to RGB8 by one rule (docs/images.md):
    palette -> RGB (an index past the palette reads as black, as in libpng);
    gray of 1/2/4 bits -> v * 255 / (2^bits - 1), exact; gray -> R = G = B;
    16-bit -> 8-bit by rounding (v * 255 + 32767) / 65535 (integer division);
    alpha is dropped (not composited: restoration data has no meaningful alpha); tRNS ignored;
    interlaced images are de-interlaced; gamma/ICC chunks are ignored (values taken as stored).
*/
#ifndef PF_IMAGE_H
#define PF_IMAGE_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int w, h;           /* pixels */
    uint8_t *data;      /* w * h * 3 bytes, RGB HWC; malloc'd, free with pf_image_free */
} pf_image;

enum { PF_IMAGE_UNKNOWN = 0, PF_IMAGE_PNG = 1, PF_IMAGE_JPEG = 2 };

/* The format a file name says by its extension: ".png" -> PF_IMAGE_PNG, ".jpg"/".jpeg" ->
   PF_IMAGE_JPEG (any case), else PF_IMAGE_UNKNOWN. */
int pf_image_format_of(const char *path);

/* Read the PNG or JPEG at `path` (chosen by pf_image_format_of; an unknown extension is an
   error) as RGB8. Returns 0, or -1 with err = "path: what is wrong". */
int pf_image_read(const char *path, pf_image *out, char *err, size_t errlen);

/* Read any PNG at `path` as RGB8. Returns 0, or -1 with err = "path: what is wrong" (missing,
   not a PNG, truncated, corrupt). On failure `out` is left empty. */
int pf_image_read_png(const char *path, pf_image *out, char *err, size_t errlen);

/* Decode a PNG held in memory (same rule). `name` is used in messages. */
int pf_image_decode_png(const void *buf, size_t len, const char *name, pf_image *out,
                        char *err, size_t errlen);

/* Decode a JPEG held in memory to RGB8 (libjpeg defaults: islow IDCT, fancy upsampling).
   `name` is used in messages. Returns 0, or -1 with err = "name: what is wrong" (no SOI
   marker, truncated, corrupt data, CMYK or another unsupported colour space, too large);
   libjpeg's corrupt-data warnings count as errors. On failure `out` is left empty. */
int pf_image_decode_jpeg(const void *buf, size_t len, const char *name, pf_image *out,
                         char *err, size_t errlen);

/* Encode RGB8 HWC pixels as a baseline JPEG in memory with libjpeg's defaults at `quality`
   (1..100, jpeg_set_quality with force_baseline as PIL and OpenCV do): YCbCr 4:2:0 (2x2
   luma sampling, libjpeg's default), standard tables scaled by quality, islow DCT,
   unoptimised Huffman tables. *buf is malloc'd (free it), *len its bytes. Returns 0, or -1
   with err (bad arguments, out of memory). */
int pf_image_encode_jpeg(const uint8_t *rgb, int w, int h, int quality, uint8_t **buf,
                         size_t *len, char *err, size_t errlen);

/* Encode RGB8 HWC pixels (w x h) as an 8-bit RGB PNG in memory: *buf is malloc'd (free it),
   *len its bytes. Returns 0, or -1 with err (invalid size, out of memory, libpng error). */
int pf_image_encode_png(const uint8_t *rgb, int w, int h, uint8_t **buf, size_t *len,
                        char *err, size_t errlen);

/* Write RGB8 HWC pixels as an 8-bit RGB PNG, through a temporary file renamed into place.
   Returns 0, or -1 with err naming the path (e.g. disk full). */
int pf_image_write_png(const char *path, const uint8_t *rgb, int w, int h, char *err,
                       size_t errlen);

void pf_image_free(pf_image *img);

/* ---- images as stored: channels and bit depth kept (`pixflow upscale`) ------------------
   Not the data path's rule: a PNG keeps its 16 bits and its alpha. Reading: gray, gray +
   alpha, RGB and RGBA stay what they are at 8 or 16 bits; palette -> RGB (RGBA when it has a
   tRNS chunk); gray of 1/2/4 bits -> 8-bit gray (v * 255 / (2^bits - 1), as the RGB8 rule);
   a tRNS colour key on gray or RGB -> an alpha channel (libpng's png_set_tRNS_to_alpha);
   gamma/ICC chunks ignored. A JPEG reads as RGB8 (pf_image_read's decoder). */
typedef struct {
    int w, h;           /* pixels */
    int channels;       /* 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA */
    int depth;          /* bits a sample: 8 (data is uint8_t) or 16 (uint16_t, host order) */
    void *data;         /* w * h * channels samples, HWC, no row padding; malloc'd (NULL after
                           pf_image_full_info); free with pf_image_full_free */
} pf_image_full;

/* Read the PNG or JPEG at `path` (by extension, pf_image_format_of) as stored. Returns 0, or
   -1 with err = "path: what is wrong"; on failure `out` is left empty. */
int pf_image_read_full(const char *path, pf_image_full *out, char *err, size_t errlen);

/* What pf_image_read_full would give (w, h, channels, depth; data NULL) from a PNG's header,
   without decoding its pixels (a JPEG is decoded). Returns 0, or -1 with err = "path: what is
   wrong". */
int pf_image_full_info(const char *path, pf_image_full *out, char *err, size_t errlen);

/* Write img as a PNG of its channels (gray, gray + alpha, RGB, RGBA) and depth (8 or 16),
   through a temporary file in the same folder renamed into place (pf_write_file_atomic).
   Returns 0, or -1 with err naming the path (bad layout, disk full). */
int pf_image_write_png_full(const char *path, const pf_image_full *img, char *err,
                            size_t errlen);

void pf_image_full_free(pf_image_full *img);
#endif
