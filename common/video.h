/*  video — read frames of a video file by index, as RGB8, through FFmpeg's libraries
    (libavformat demuxes, libavcodec decodes, libswscale converts). docs/video.md.

    Any container and codec this FFmpeg decodes is accepted; the reader uses the file's "best"
    video stream (av_find_best_stream) and ignores the others.

    Frame index. Frame i is the i-th picture in presentation (display) order, counting from the
    first picture the decoder can produce from the start of the file: the first keyframe in
    decode order, minus, in files with timestamps, the "leading" pictures that display before
    it (the open-GOP B-frames of a stream cut mid-sequence, which cannot be decoded). Reading
    the file from the start and numbering what comes out gives the same indices; that is what
    `ffmpeg -i FILE -vf select='eq(n,i)'` picks too (tests/test_video.c compares both).

    Frame count. pf_video_open demuxes every packet of the stream once (no decoding; about
    8 MB/s-bound, milliseconds for the demo clips) and counts one frame per non-empty packet
    from the first keyframe on; the container's own count (AVStream.nb_frames) is not used,
    because it is missing (MPEG-PS: cityCC0.mpg), or counts index slots rather than pictures
    (tree.avi's header says 444 frames, its index holds 444 slots of which 376 are empty drop
    frames; 68 pictures decode). The same pass records each packet's timestamps, file position
    and keyframe flag: that index drives seeking.

    Seeking. Reading frame i after frame j (j < i <= j + PF_VIDEO_FORWARD_WINDOW, or no keyframe
    between them) decodes forward from where the decoder is; any other read seeks to the last
    keyframe at or before frame i (in decode order, and displaying no later than frame i),
    flushes the decoder and decodes forward, dropping the pictures before i. A stream with one
    keyframe (tree.avi has three) is therefore decoded from near the start for a backward read.
    Each decoded picture is identified by its presentation timestamp when every packet has one
    (MKV, MP4, MPEG-PS/TS, ...), else (AVI, which stores decode-order slots only) by counting
    pictures from the keyframe the seek landed on, found by its file position.

    Colour. Pictures are converted to RGB24 with sws_scale exactly as `ffmpeg -i FILE -pix_fmt
    rgb24` does by default in FFmpeg 5.1: SWS_BICUBIC flags, the coefficients of the frame's
    colour matrix tag (BT.709, BT.2020, SMPTE 240M, FCC, BT.601) and BT.601 for an untagged
    frame, YUV range taken from the frame (full range when the frame says AVCOL_RANGE_JPEG or
    the pixel format is a yuvj* one, else limited 16..235), RGB output full range 0..255.
    Byte-identical to the ffmpeg CLI (tests/test_video.c, BT.709- and BT.2020-tagged files
    too).

    Truncation. A file cut short (a copy or download that stopped) still opens: the index
    holds the packets that are there. pf_video_open then says what it can see of the cut
    (pf_video_info.cut, usable_frames), from three signs:
      - a packet of the stream runs past the end of the file (pos + size beyond avio_size),
        or ends exactly at the end of the file with the demuxer's AV_PKT_FLAG_CORRUPT (it read
        less than it asked for: AVI, through av_get_packet);
      - the container's header announces more frames (AVStream.nb_frames: AVI, MP4) than the
        stream has packet slots, empty drop-frame slots counted (tree.avi: 444 of 444);
      - without a header count, the stream's duration from the header (Matroska's Segment
        Duration, AVFMT_DURATION_FROM_STREAM, single-stream files only) exceeds what the
        indexed frames cover by more than 10 % and 2 frame periods.
    Usable frames: every frame whose packet comes, in decode order, before the first cut
    packet, up to the first frame in display order that does not (frames are a prefix
    [0, usable_frames)). A picture only references pictures decoded before it, so the frames
    kept need no missing byte; the cut packet's own picture and every picture decoded after it
    are dropped; and for a codec that reorders (B-frames: video_delay > 0) the last
    video_delay frames kept too, as a picture missing from the file may display among them
    (frames are then numbered over the pictures that are there). A cut AVI has lost the
    index that marks its keyframes, and the demuxer may then call every packet one: in a cut
    file whose every packet is a "keyframe" of a codec that is not intra-only (FFV1 with a
    GOP), reads decode from the first keyframe instead of seeking. The bytes missing are known where the container states its own size (RIFF:
    AVI; EBML: Matroska, WebM). Not seen: a packet cut exactly at the end of the file in a
    container that neither flags it nor announces a count or duration (a NUT whose index was
    cut off); reading that frame then fails with the error below, naming it.

    Errors. Functions return -1 (or NULL) with err = "path: what is wrong", naming the frame
    where one is involved: missing or unreadable file, no video stream, no decoder, a corrupt
    stream (the decoder runs with AV_EF_EXPLODE, so errors it would conceal are reported, and a
    picture it flags corrupt is refused), a frame index out of range, a picture whose size
    differs from the stream's.

    Threads. A pf_video is used by one thread at a time (it owns a demuxer and a decoder with
    state); open one reader per thread, on the same file if need be. Decoding is single-
    threaded (loaders parallelise across processes and threads). FFmpeg's own messages go to
    av_log (stderr by default).
*/
#ifndef PF_VIDEO_H
#define PF_VIDEO_H
#include <stddef.h>

#include "common/image.h"

/* Forward reads up to this many frames ahead never seek. */
#define PF_VIDEO_FORWARD_WINDOW 16

typedef struct pf_video pf_video;

/* What pf_video_info reports. */
typedef struct {
    int w, h;             /* picture size in pixels (the stream's coded parameters) */
    int n_frames;         /* exact number of readable frames (see "Frame count" above) */
    double fps;           /* nominal frame rate in frames/s (av_guess_frame_rate), 0 if unknown;
                             a variable-rate file (tree.avi) shows fewer frames than
                             fps x duration: use pf_video_frame_time for real times */
    double duration;      /* seconds from frame 0 to the end of the last frame (nominal) */
    char codec[32];       /* decoder name, e.g. "mpeg4" */
    char container[32];   /* demuxer name, e.g. "avi" */
    /* truncation (see "Truncation" above); all 0 / "" for a whole file */
    int usable_frames;    /* frames 0 .. usable_frames - 1 are whole; n_frames if not cut */
    int header_frames;    /* frames the container announces: nb_frames, else its duration x
                             fps rounded (header_frames_about = 1: a muxer may leave the last
                             frame's duration out, so one fewer); 0 if it announces none */
    int header_frames_about;
    long long file_bytes; /* size of the file as it is, bytes (-1 unknown) */
    long long header_bytes; /* size the container says the file has (RIFF, EBML); 0 unknown */
    char cut[256];        /* "" for a whole file, else what shows the cut, e.g. "the file ends
                             inside video packet 7 (frame 7, at byte 20390)" */
} pf_video_info;

/* Open the video file at `path` and index it (one demuxing pass). Returns the reader, or NULL
   with err = "path: what is wrong" (no such file, not a video, no decoder, no keyframe, no
   frames). */
pf_video *pf_video_open(const char *path, char *err, size_t errlen);

/* Close the reader and set *self to NULL. NULL and *self == NULL are fine. */
void pf_video_destroy(pf_video **self);

/* Size, frame count, frame rate, codec of an open reader. */
pf_video_info pf_video_get_info(const pf_video *self);

/* Presentation time of frame i in seconds, relative to frame 0; -1 if i is out of range. */
double pf_video_frame_time(const pf_video *self, int i);

/* Read frame i (0 <= i < n_frames) as RGB8 HWC into *out (w x h, w * h * 3 bytes, allocated
   here; free with pf_image_free). Returns 0, or -1 with err = "path: frame i: what is wrong"
   (out of range, corrupt data, the stream ends early); *out is left empty on failure. After
   an error the reader stays usable: the next read seeks. */
int pf_video_read(pf_video *self, int i, pf_image *out, char *err, size_t errlen);

/* The frame the reader decoded last, or -1 when its next read seeks (a new reader, after an
   error): of several readers of one file, the one positioned closest before frame i reads it
   without a seek. */
int pf_video_position(const pf_video *self);

/* Counters of how reads were served, for tests and benchmarks. */
typedef struct {
    long seeks;           /* reads that seeked to a keyframe (or restarted the file) */
    long decoded;         /* pictures decoded, including those dropped before a target */
} pf_video_stats;
pf_video_stats pf_video_get_stats(const pf_video *self);
#endif
