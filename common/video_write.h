/*  video_write — encode RGB8 frames into a video file through FFmpeg's libraries (libavcodec
    encodes, libavformat muxes, libswscale converts); the writing side of common/video.h, for
    `pixflow test --video` (docs/video.md).

    Codec. Any encoder this FFmpeg has, by name ("ffv1", "libx264", "mpeg4", ...). Pixel format:
    the first of gbrp, bgr0, rgb24 the encoder takes (a permutation of the RGB bytes, so a
    lossless codec round-trips exactly: FFV1, the default, takes bgr0, and common/video.c
    decodes it back byte-identical; tests/test_video_write.c checks that), else yuv420p / the encoder's
    first format, a lossy conversion (BT.601, limited range, as ffmpeg's default). Container:
    from the file name's extension (av_guess_format: .mkv Matroska, .mp4, .avi, ...).

    Frames are w x h x 3 RGB8, row-major, tightly packed; w and h even for yuv420p encoders.
    Time base 1 / fps_num * fps_den: frame i is shown at i / fps.

    Errors: -1 / NULL with err = "path: what is wrong" (no such encoder, the container refuses
    the codec, cannot create the file, a full disk at a write or at the trailer). A writer that
    failed is closed by pf_video_writer_close, which removes a partial file only when asked.
*/
#ifndef PF_VIDEO_WRITE_H
#define PF_VIDEO_WRITE_H
#include <stddef.h>
#include <stdint.h>

typedef struct pf_video_writer pf_video_writer;

/* Create `path` for w x h frames at fps_num / fps_den frames/s (fps_num, fps_den >= 1) with
   encoder `codec` (NULL: "ffv1"). Returns the writer, or NULL with err. */
pf_video_writer *pf_video_writer_open(const char *path, int w, int h, int fps_num, int fps_den,
                                      const char *codec, char *err, size_t errlen);

/* Encode one w x h x 3 RGB8 frame. Returns 0 or -1 with err (the frame's index named). */
int pf_video_writer_frame(pf_video_writer *vw, const uint8_t *rgb, char *err, size_t errlen);

/* Flush the encoder, write the trailer, close the file and free the writer (*self = NULL).
   Returns 0, or -1 with err when flushing or writing failed (then, with remove_on_error, the
   file is deleted so no truncated video is left behind). NULL and *self == NULL return 0. */
int pf_video_writer_close(pf_video_writer **self, int remove_on_error, char *err,
                          size_t errlen);

/* The pixel format (an enum AVPixelFormat) the writers encode with encoder `c` in: the first
   of gbrp, bgr0, rgb24 it takes, else yuv420p, else its first (common/video_remux.c too). */
struct AVCodec;
int pf_video_write_pix_fmt(const struct AVCodec *c);

/* The pixel format name the writer encodes in (e.g. "gbrp"), for messages. */
const char *pf_video_writer_pix_fmt(const pf_video_writer *vw);
#endif
