/*  video_remux — write an upscaled video "like" its source: the new video stream at the
    source's frame rate and frame times, every audio and subtitle stream of the source copied
    packet by packet (no re-encoding), through FFmpeg's libraries; and pf_video_upscale_file,
    which runs a whole video through a caller's upscaler in windows and writes it that way.
    The video side of `pixflow upscale` (docs/video.md "Upscaling a video file").

    Rate and times. The output's nominal rate is the source's (av_guess_frame_rate: its
    r_frame_rate / avg_frame_rate, as a rational, e.g. 24000/1001). A constant-rate source is
    written with time base 1 / rate and frame i at pts i; a variable-rate one (frame times
    more than a quarter period off i / rate) with the source stream's time base and each
    frame's own source time (pf_video_frame_time). Every stream's timestamps are shifted by
    the source video stream's start time (frame 0 at 0; audio that starts earlier keeps its
    lead, the muxer shifting all streams alike), so audio stays in sync with the pictures.

    Copied streams. Audio and subtitle streams go over as they are (packets remuxed, their
    timestamps rescaled); attachments (the fonts of ASS subtitles) too, from Matroska to
    Matroska; data streams and other attachments are not copied (a log line says so). The
    file's tags (title, ...), its chapters, and the video stream's language, title and
    disposition are kept. A
    stream the output container cannot hold (avformat_query_codec: SRT subtitles in .mp4) is
    an error naming it, or, with drop_unsupported, a warning naming it and the stream is left
    out.

    Encoder. `codec` by name; default libx264 when this FFmpeg has it, else ffv1 (a log line
    says which). Pixel format as common/video_write.h chooses it (pf_video_write_pix_fmt):
    FFV1 keeps RGB exactly (bgr0, tagged RGB); libx264 takes yuv420p, converted with BT.601
    coefficients, limited range (16..235), and tagged so (colour matrix SMPTE 170M = BT.601,
    range tv); the source's primaries and transfer tags are copied (the pixels keep them).
    BT.601 is what common/video.c and ffmpeg 5.1's CLI use to decode, so frames read back
    are the frames written, up to the encoder's loss. Quality: crf (libx264, libx265),
    quality (a qscale, as ffmpeg's -q:v, for the other encoders), bit_rate.

    Safety. The file is written under a temporary name in the same folder, "<stem>.part.<ext>"
    (the extension kept, so the container is the final name's), and renamed to the final name
    on success; on any failure (encoder, full disk, the upscaler) the temporary file is removed
    and nothing is left under the final name. An existing file under the final name is
    replaced on success (the CLI decides whether that is allowed: --force).

    Errors: -1 / NULL with err = "path: what is wrong" (the output's or the source's path). */
#ifndef PF_VIDEO_REMUX_H
#define PF_VIDEO_REMUX_H
#include <stddef.h>
#include <stdint.h>

/* How the output is encoded. Zero-initialise, then set crf/quality to -1 for "unset" (or use
   pf_video_out_opts_default). */
typedef struct {
    const char *codec;      /* encoder name; NULL or "": libx264 if present, else ffv1 */
    int crf;                /* libx264 / libx265 constant rate factor 0..51; -1: encoder's */
    int quality;            /* other encoders: qscale (ffmpeg's -q:v), >= 1; -1: unset */
    long long bit_rate;     /* bits/s; 0: the encoder's default */
    int drop_unsupported;   /* 1: a stream the container cannot hold is dropped with a
                               warning; 0: it is an error */
    int quiet;              /* 1: no log lines on stderr */
} pf_video_out_opts;

pf_video_out_opts pf_video_out_opts_default(void);

typedef struct pf_video_out pf_video_out;

/* Open `path` for w x h frames (even for yuv420p encoders) like the video file `source`: its
   rate, its audio and subtitle streams (see above). vfr: 1 to write the source's own frame
   times (pf_video_out_frame's t), 0 for a constant rate. Returns the writer or NULL with err
   (unknown encoder, option that does not apply to it, a stream the container cannot hold,
   the source unreadable, the folder not writable). */
pf_video_out *pf_video_out_open(const char *path, const char *source, int w, int h, int vfr,
                                const pf_video_out_opts *o, char *err, size_t errlen);

/* Encode the next frame: w x h x 3 RGB8 HWC, tightly packed; t its time in seconds relative to
   the source's frame 0 (pf_video_frame_time; used when vfr, else frame i is at i / rate).
   Source packets of the copied streams up to that time are written first. Returns 0 or -1
   with err. */
int pf_video_out_frame(pf_video_out *vo, const uint8_t *rgb, double t, char *err,
                       size_t errlen);

/* commit = 1: flush the encoder, copy the rest of the source's packets, write the trailer and
   rename the temporary file to the final name; commit = 0 (or any failure on the way): remove
   the temporary file. Frees the writer, *self = NULL. Returns 0, or -1 with err. */
int pf_video_out_close(pf_video_out **self, int commit, char *err, size_t errlen);

/* The encoder's name ("libx264") and pixel format ("yuv420p"), for messages. */
const char *pf_video_out_codec(const pf_video_out *vo);
const char *pf_video_out_pix_fmt(const pf_video_out *vo);

/* The caller's upscaler: `in` holds t frames h x w x 3 RGB8 (frame-major, HWC); it writes t
   frames (h*scale) x (w*scale) x 3 RGB8 to `out`. t is 1 for an image network (window 1) and
   up to `window` for a video network. Sliding windows (num_frame > 0): t = num_frame, `in`
   the window of one output frame in window order, and it writes that one frame. Returns 0,
   or non-zero with err (the run stops). */
typedef int (*pf_video_upscale_fn)(void *ctx, const uint8_t *in, int t, int h, int w,
                                   uint8_t *out, char *err, size_t errlen);

/* A whole-video run: pf_video_upscale_file's settings. */
typedef struct {
    int scale;                  /* output size = scale x the source's */
    int window, overlap;        /* frames per upscale call and shared with the next window
                                   (pf_clip_windows); 1, 0 for an image network */
    int num_frame, padding;     /* num_frame > 0: sliding windows (EDVR) instead: output frame
                                   f is one upscale call on the num_frame frames
                                   pf_video_frame_indices(f, n, num_frame, padding) gives
                                   (common/frame_indices.h; window and overlap unused) */
    pf_video_upscale_fn upscale;
    void *ctx;                  /* passed to upscale and progress */
    int (*progress)(void *ctx, int frames_done, int frames); /* after each frame written;
                                   non-zero cancels the run (an error, nothing left); NULL */
    pf_video_out_opts out;
} pf_video_upscale_job;

/* Decode `source` (common/video.h), run it through job->upscale in windows, encode to `dest`
   with the source's rate, audio and subtitles (pf_video_out_*). Memory: two windows of frames
   (in and out), not the clip; frames are read in order, the frames two windows share kept,
   not re-read. Sliding windows: a ring of the num_frame frames read last (every window of a
   frame lies within num_frame consecutive frames, whatever the padding), each frame read
   once, plus one window gathered for the call and one output frame. A source cut short is
   upscaled up to its last whole frame (a warning). Returns 0, or -1 with err (nothing left
   under `dest`, no temporary file; a clip too short for the window with that padding names
   the fewest frames it needs). */
int pf_video_upscale_file(const char *source, const char *dest, const pf_video_upscale_job *job,
                          char *err, size_t errlen);

/* The windows of a clip of n frames for windows of `window` frames sharing `overlap`
   (0 <= overlap < window): window k runs frames [start[k], start[k] + len[k]) and gives the
   outputs of frames [own0[k], own1[k]); the own ranges partition [0, n), each boundary in the
   middle of the two windows' shared frames. The last window ends at the clip's end (it may
   share more). Arrays of `max` entries; returns the number of windows, or -1 when more than
   max would be needed. (Evaluation's rule, hooks/evaluate.c.) */
int pf_clip_windows(int n, int window, int overlap, int *start, int *len, int *own0, int *own1,
                    int max);
#endif
