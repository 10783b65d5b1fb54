/*  image_info — the size of a PNG without decoding its pixels (libpng's png_read_info), so a
    dataset can check every pair at start-up without decoding the whole set.
*/
#ifndef PF_IMAGE_INFO_H
#define PF_IMAGE_INFO_H
#include <stddef.h>

/* Width and height in pixels of the PNG at `path`. Returns 0, or -1 with err
   "path: what is wrong" (missing, not a PNG, corrupt header). */
int pf_image_png_size(const char *path, int *w, int *h, char *err, size_t errlen);
#endif
