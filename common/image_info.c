/*  image_info — see image_info.h. */
#include "common/image_info.h"
#include "common/image.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char msg[256];      /* libpng's error text */
} info_err;

static void info_error_fn(png_structp png, png_const_charp msg) {
    info_err *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    longjmp(png_jmpbuf(png), 1);
}

static void info_warning_fn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

int pf_image_png_size(const char *path, int *w, int *h, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    unsigned char sig[8];
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
        snprintf(err, errlen, "%s: not a PNG file (bad signature)", path);
        fclose(f);
        return -1;
    }
    info_err e = { "" };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e, info_error_fn,
                                             info_warning_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        snprintf(err, errlen, "%s: out of memory", path);
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(f);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        snprintf(err, errlen, "%s: corrupt PNG header: %s", path, e.msg);
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    *w = (int)png_get_image_width(png, info);
    *h = (int)png_get_image_height(png, info);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return 0;
}

int pf_image_size(const char *path, int *w, int *h, char *err, size_t errlen) {
    switch (pf_image_format_of(path)) {
    case PF_IMAGE_PNG:
        return pf_image_png_size(path, w, h, err, errlen);
    case PF_IMAGE_JPEG:
        return pf_image_jpeg_size(path, w, h, err, errlen);
    default:
        snprintf(err, errlen, "%s: not a .png, .jpg or .jpeg file", path);
        return -1;
    }
}
