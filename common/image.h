/*  image — PNG in and out through libpng.

    Every image in PixFlow's data path is RGB8: uint8, interleaved HWC (row-major, 3 bytes a
    pixel, no row padding). Reading converts any PNG to that by one rule (docs/images.md):
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

/* Read any PNG at `path` as RGB8. Returns 0, or -1 with err = "path: what is wrong" (missing,
   not a PNG, truncated, corrupt). On failure `out` is left empty. */
int pf_image_read_png(const char *path, pf_image *out, char *err, size_t errlen);

/* Decode a PNG held in memory (same rule). `name` is used in messages. */
int pf_image_decode_png(const void *buf, size_t len, const char *name, pf_image *out,
                        char *err, size_t errlen);

/* Write RGB8 HWC pixels as an 8-bit RGB PNG, through a temporary file renamed into place.
   Returns 0, or -1 with err naming the path (e.g. disk full). */
int pf_image_write_png(const char *path, const uint8_t *rgb, int w, int h, char *err,
                       size_t errlen);

void pf_image_free(pf_image *img);
#endif
