/*  image_info — the size of a PNG or JPEG without decoding its pixels (libpng's
    png_read_info, libjpeg's jpeg_read_header), so a dataset can check every pair at start-up
    without decoding the whole set.
*/
#ifndef PF_IMAGE_INFO_H
#define PF_IMAGE_INFO_H
#include <stddef.h>

/* Width and height in pixels of the PNG at `path`. Returns 0, or -1 with err
   "path: what is wrong" (missing, not a PNG, corrupt header). */
int pf_image_png_size(const char *path, int *w, int *h, char *err, size_t errlen);

/* Width and height of the JPEG at `path` from its header. A colour space that reading would
   refuse (CMYK, YCCK) is an error here already. Returns 0, or -1 with err "path: ...". */
int pf_image_jpeg_size(const char *path, int *w, int *h, char *err, size_t errlen);

/* The size of a PNG or JPEG, by its extension (pf_image_format_of). Returns 0, or -1 with err
   "path: ..." (also for an extension that is neither). */
int pf_image_size(const char *path, int *w, int *h, char *err, size_t errlen);
#endif
