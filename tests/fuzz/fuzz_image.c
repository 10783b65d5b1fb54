/*  fuzz_image — libFuzzer targets for the image readers, built twice (tests/fuzz/CMakeLists.txt):
    fuzz_png (PF_FUZZ_JPEG=0): pf_image_decode_png, common/image.c;
    fuzz_jpeg (PF_FUZZ_JPEG=1): pf_image_decode_jpeg, common/image_jpeg.c.
    These are the in-memory decoders pf_image_read runs on a file's bytes, so the path-taking
    readers need no temporary file. A rejection must say why and leave `out` empty; a decoded
    image must be non-empty with w * h * 3 readable bytes (ASan checks the reads).
*/
#include "common/image.h"

#include <stdint.h>
#include <stdlib.h>

#if PF_FUZZ_JPEG
#define DECODE pf_image_decode_jpeg
#else
#define DECODE pf_image_decode_png
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pf_image img;
    char err[512];
    if (DECODE(data, size, "fuzz", &img, err, sizeof err) != 0) {
        if (!err[0] || img.data)
            abort();
        return 0;
    }
    if (img.w <= 0 || img.h <= 0 || !img.data)
        abort();
    size_t n = (size_t)img.w * img.h * 3;
    volatile unsigned sum = img.data[0] + img.data[n - 1];
    (void)sum;
    pf_image_free(&img);
    return 0;
}
