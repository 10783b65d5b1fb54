/*  test_video_remux — common/video_remux.h with a trivial upscaler (nearest x2, done here), no
    network. Sources are made by the ffmpeg CLI (testsrc 64x48 at 24000/1001, a sine, SRT
    subtitles, chapters, an attachment); outputs are checked by ffprobe and decoded by ffmpeg to raw RGB24:
    - FFV1 .mkv (image-style, window 1, and video-style windows of 7 sharing 3): audio (FLAC)
      and subtitle streams present, their packets equal to the source's (framemd5 of a stream
      copy), the chapters, the attachment equal byte for byte, the sample rate, the audio duration within one frame, the frame count, the rate
      24000/1001, 128x96, and every frame equal to nearest x2 of the source's frame bit for bit;
    - libx264 .mp4 from an AAC + SRT source (when this FFmpeg has libx264): the default
      encoder, AAC copied, SRT dropped with a warning (drop_unsupported), yuv420p tagged
      BT.601 (smpte170m) limited range, PSNR against nearest x2 above 30 dB and no more than
      0.5 dB below the ffmpeg CLI's own libx264 encoding of those frames (same crf, 4:2:0);
    - a variable-rate source (FFV1 .mkv with a gap): the output's frame times are the source's;
    - quality and bit_rate reach the encoder (mpeg4 q 2 / q 31, libx264 2 Mb/s / 50 kb/s);
    - errors, each with nothing under the final name and no temporary file left: a missing
      folder, a folder that is a file, SRT into .mp4 (a named error), an upscaler failing
      mid-way, a run cancelled by its progress callback, crf with ffv1, an odd width for a
      yuv420p encoder, an unknown encoder, a folder without write permission (not root), and,
      where a tmpfs can be mounted (root), a full disk (16 KiB) and a read-only file system;
    - sliding windows (num_frame 5, EDVR's), each of the four paddings on the 30-frame source
      and on a 3-frame one: one upscaler call per frame, each window's frames equal, byte for
      byte, to the source frames BasicSR's generate_frame_indices (written out here) names,
      the output every frame's nearest x2 (of the window's center); reflection_circle and
      circle on 3 frames are refused before any call, naming the 5 frames they need, nothing
      written.
    Needs the ffmpeg and ffprobe CLI: without them it says so and exits 77. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/image.h"
#include "common/video.h"
#include "common/video_remux.h"
#include "tests/pf_test.h"

enum { W = 64, H = 48, N = 30, S = 2 };
static char dir[] = "/tmp/pf_video_remux.XXXXXX";

/* Run a shell command, its stdout into out (NUL-terminated). Returns the exit status. */
static int sh(const char *cmd, char *out, size_t len) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = out ? fread(out, 1, len - 1, p) : 0;
    if (out) out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    return pclose(p);
}

/* The value of `key=` in ffprobe's compact output line for stream `sel` ("v:0", "a:0"). */
static void probe(const char *file, const char *sel, const char *key, char *out, size_t len) {
    char cmd[1024], buf[4096];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -count_frames -select_streams %s "
             "-show_entries stream=%s -of default=nw=1:nk=1 '%s'", sel, key, file);
    out[0] = '\0';
    if (sh(cmd, buf, sizeof buf) == 0) {
        buf[strcspn(buf, "\n")] = '\0';
        snprintf(out, len, "%s", buf);
    }
}

static void nearest(const uint8_t *in, int h, int w, uint8_t *out) {
    for (int y = 0; y < h * S; y++)
        for (int x = 0; x < w * S; x++)
            memcpy(out + ((size_t)y * w * S + x) * 3, in + ((size_t)(y / S) * w + x / S) * 3, 3);
}

typedef struct {
    int calls, fail_at, max_t;
} up_ctx;

static int up(void *ctx, const uint8_t *in, int t, int h, int w, uint8_t *out, char *err,
              size_t errlen) {
    up_ctx *c = ctx;
    if (++c->calls == c->fail_at) {
        snprintf(err, errlen, "upscaler failed on purpose");
        return -1;
    }
    if (t > c->max_t) c->max_t = t;
    for (int i = 0; i < t; i++)
        nearest(in + (size_t)i * h * w * 3, h, w, out + (size_t)i * h * w * S * S * 3);
    return 0;
}

static int cancel_at_12(void *ctx, int done, int total) {
    (void)ctx;
    (void)total;
    return done == 12;
}

/* Expected output: nearest x2 of every source frame (decoded by common/video.c). */
static uint8_t *expected_frames(const char *src) {
    char err[512];
    pf_video *v = pf_video_open(src, err, sizeof err);
    CHECK(v, "%s", err);
    if (!v) return NULL;
    size_t fo = (size_t)W * S * H * S * 3;
    uint8_t *e = malloc(fo * N);
    for (int i = 0; i < N; i++) {
        pf_image img = { 0 };
        if (pf_video_read(v, i, &img, err, sizeof err)) {
            CHECK(0, "%s", err);
            break;
        }
        nearest(img.data, H, W, e + fo * i);
        pf_image_free(&img);
    }
    pf_video_destroy(&v);
    return e;
}

/* Frames of `file` decoded by the ffmpeg CLI to RGB24; worst PSNR against exp, -1 if the
   frame count or size differs. */
static double ffmpeg_psnr(const char *file, const uint8_t *exp, int *identical) {
    char cmd[1024], raw[300];
    snprintf(raw, sizeof raw, "%s/decoded.rgb", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -i '%s' -map 0:v -fps_mode passthrough -f rawvideo -pix_fmt rgb24 "
             "'%s'", file, raw);
    if (sh(cmd, NULL, 0) != 0) return -1;
    FILE *f = fopen(raw, "rb");
    size_t fo = (size_t)W * S * H * S * 3, total = fo * N;
    uint8_t *got = malloc(total + 1);
    size_t n = f ? fread(got, 1, total + 1, f) : 0;
    if (f) fclose(f);
    unlink(raw);
    double worst = INFINITY;
    *identical = n == total && !memcmp(got, exp, total);
    for (int i = 0; n == total && i < N; i++) {
        double se = 0;
        for (size_t k = 0; k < fo; k++) {
            double d = (double)got[fo * i + k] - exp[fo * i + k];
            se += d * d;
        }
        double p = se == 0 ? INFINITY : 10 * log10(255.0 * 255 * fo / se);
        if (p < worst) worst = p;
    }
    free(got);
    return n == total ? worst : -1;
}

/* The packet data's md5 column (not the side data's) of `ffmpeg -map 0:STREAM -c copy -f framemd5` (packets as stored). */
static void packet_md5s(const char *file, const char *stream, char *out, size_t len) {
    char cmd[1024], buf[16384];
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -i '%s' -map 0:%s -c copy -f framemd5 - | "
             "grep -v '^#' | awk -F, '{print $6}'", file, stream);
    out[0] = '\0';
    if (sh(cmd, buf, sizeof buf) == 0) snprintf(out, len, "%s", buf);
}

/* No file under `path` and no temporary "<stem>.part.<ext>" beside it. */
static int nothing_left(const char *path) {
    char part[600];
    const char *dot = strrchr(path, '.');
    snprintf(part, sizeof part, "%.*s.part%s", (int)(dot - path), path, dot);
    return access(path, F_OK) != 0 && access(part, F_OK) != 0;
}

static int upscale(const char *src, const char *dst, int window, int overlap, const char *codec,
                   up_ctx *c, char *err, size_t errlen) {
    pf_video_upscale_job job = { .scale = S, .window = window, .overlap = overlap,
                                 .upscale = up, .ctx = c, .out = pf_video_out_opts_default() };
    job.out.codec = codec;
    return pf_video_upscale_file(src, dst, &job, err, errlen);
}

/* FFV1 into .mkv, windows of `window` sharing `overlap`: streams, rate, count, exact frames. */
static void check_ffv1(const char *src, const uint8_t *exp, int window, int overlap) {
    char dst[300], err[1024], a[256], b[256], cmd0[1200];
    snprintf(dst, sizeof dst, "%s/out_w%d.mkv", dir, window);
    up_ctx c = { 0 };
    int rc = upscale(src, dst, window, overlap, "ffv1", &c, err, sizeof err);
    CHECK(rc == 0, "upscale %s: %s", dst, err);
    if (rc) return;
    CHECK(c.max_t == window, "windows of %d frames asked, the upscaler got up to %d", window,
          c.max_t);
    probe(dst, "v:0", "codec_name", a, sizeof a);
    CHECK(!strcmp(a, "ffv1"), "video codec '%s'", a);
    probe(dst, "v:0", "width", a, sizeof a);
    probe(dst, "v:0", "height", b, sizeof b);
    CHECK(atoi(a) == W * S && atoi(b) == H * S, "size %sx%s", a, b);
    probe(dst, "v:0", "r_frame_rate", a, sizeof a);
    probe(dst, "v:0", "avg_frame_rate", b, sizeof b);
    CHECK(!strcmp(a, "24000/1001") && !strcmp(b, "24000/1001"), "rate %s, avg %s", a, b);
    probe(dst, "v:0", "nb_read_frames", a, sizeof a);
    CHECK(atoi(a) == N, "%s frames, expected %d", a, N);
    probe(dst, "a:0", "codec_name", a, sizeof a);
    probe(dst, "a:0", "sample_rate", b, sizeof b);
    CHECK(!strcmp(a, "flac") && !strcmp(b, "44100"), "audio '%s' at '%s' Hz", a, b);
    probe(dst, "s:0", "codec_name", a, sizeof a);
    CHECK(!strcmp(a, "subrip"), "subtitle stream '%s'", a);
    char m1[16384], m2[16384];
    packet_md5s(src, "a:0", m1, sizeof m1);
    packet_md5s(dst, "a:0", m2, sizeof m2);
    CHECK(m1[0] && !strcmp(m1, m2), "audio packets differ from the source's");
    packet_md5s(src, "s:0", m1, sizeof m1);
    packet_md5s(dst, "s:0", m2, sizeof m2);
    CHECK(m1[0] && !strcmp(m1, m2), "subtitle packets differ from the source's");
    /* chapters: the source's (start, end, title) */
    char ch1[1024], ch2[1024];
    snprintf(cmd0, sizeof cmd0, "ffprobe -v error -show_entries chapter=start_time,end_time:"
             "chapter_tags=title -of csv=p=0 '%s'", src);
    sh(cmd0, ch1, sizeof ch1);
    snprintf(cmd0, sizeof cmd0, "ffprobe -v error -show_entries chapter=start_time,end_time:"
             "chapter_tags=title -of csv=p=0 '%s'", dst);
    sh(cmd0, ch2, sizeof ch2);
    CHECK(strstr(ch1, "Second") && !strcmp(ch1, ch2), "chapters: source\n%s\noutput\n%s", ch1,
          ch2);
    /* the attachment (Matroska to Matroska), byte for byte */
    char att[400], got[256] = "", want[256] = "";
    snprintf(att, sizeof att, "%s/attachment.txt", dir);
    unlink(att);
    snprintf(cmd0, sizeof cmd0, "ffmpeg -v quiet -y -dump_attachment:t:0 '%s' -i '%s'; "
             "cat '%s'", att, dst, att);
    sh(cmd0, got, sizeof got);
    snprintf(cmd0, sizeof cmd0, "cat '%s/subs.srt'", dir);
    sh(cmd0, want, sizeof want);
    CHECK(want[0] && !strcmp(got, want), "attachment: '%s', expected '%s'", got, want);
    /* audio duration (last packet's end) within one frame of the source's */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams a:0 -show_entries "
             "packet=pts_time,duration_time -of csv=p=0 '%%s' | awk -F, '{e=$1+$2} END "
             "{print e}'");
    char c1[700], c2[700];
    snprintf(c1, sizeof c1, cmd, src);
    snprintf(c2, sizeof c2, cmd, dst);
    sh(c1, a, sizeof a);
    sh(c2, b, sizeof b);
    CHECK(fabs(atof(a) - atof(b)) < 1001.0 / 24000 && atof(a) > 1,
          "audio ends at %s s in the source, %s s in the output", a, b);
    int identical = 0;
    double p = ffmpeg_psnr(dst, exp, &identical);
    CHECK(identical, "FFV1 frames (ffmpeg rgb24) differ from nearest x2 (worst PSNR %g)", p);
    printf("ffv1, window %d overlap %d: %d upscale calls, 30 frames, audio and subtitles "
           "copied, frames bit-exact: %s\n", window, overlap, c.calls, identical ? "yes" : "no");
}

/* libx264 (the default) into .mp4 from an AAC + SRT source: SRT dropped, as asked. */
static void check_x264(const char *srt, const uint8_t *exp) {
    char src[300], dst[300], err[1024], a[256], b[256], cmd[1024];
    snprintf(src, sizeof src, "%s/src_aac.mkv", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f lavfi -i testsrc=size=%dx%d:rate=24000/1001 "
             "-f lavfi -i sine=frequency=440:sample_rate=48000 -i '%s' -map 0:v -map 1:a "
             "-map 2:s -frames:v %d -t 1.25125 -c:v ffv1 -c:a aac -c:s srt '%s'", W, H, srt, N,
             src);
    CHECK(sh(cmd, NULL, 0) == 0, "%s", cmd);
    snprintf(dst, sizeof dst, "%s/out.mp4", dir);
    up_ctx c = { 0 };
    pf_video_upscale_job job = { .scale = S, .window = 1, .upscale = up, .ctx = &c,
                                 .out = pf_video_out_opts_default() };
    job.out.crf = 12;  /* codec NULL: the default, libx264 here */
    job.out.drop_unsupported = 1;
    int rc = pf_video_upscale_file(src, dst, &job, err, sizeof err);
    CHECK(rc == 0, "libx264: %s", err);
    if (rc) return;
    probe(dst, "v:0", "codec_name", a, sizeof a);
    probe(dst, "v:0", "pix_fmt", b, sizeof b);
    CHECK(!strcmp(a, "h264") && !strcmp(b, "yuv420p"), "default encoder gave %s %s", a, b);
    probe(dst, "v:0", "color_space", a, sizeof a);
    probe(dst, "v:0", "color_range", b, sizeof b);
    CHECK(!strcmp(a, "smpte170m") && !strcmp(b, "tv"), "colour tags %s %s", a, b);
    probe(dst, "v:0", "r_frame_rate", a, sizeof a);
    probe(dst, "v:0", "nb_read_frames", b, sizeof b);
    CHECK(!strcmp(a, "24000/1001") && atoi(b) == N, "rate %s, %s frames", a, b);
    probe(dst, "a:0", "codec_name", a, sizeof a);
    probe(dst, "a:0", "sample_rate", b, sizeof b);
    CHECK(!strcmp(a, "aac") && !strcmp(b, "48000"), "audio '%s' at '%s' Hz", a, b);
    probe(dst, "s", "codec_name", a, sizeof a);
    CHECK(a[0] == '\0', "the SRT stream should be dropped from %s, found '%s'", dst, a);
    char m1[16384], m2[16384];
    packet_md5s(src, "a:0", m1, sizeof m1);
    packet_md5s(dst, "a:0", m2, sizeof m2);
    CHECK(m1[0] && !strcmp(m1, m2), "AAC packets differ from the source's");
    /* the same testsrc frames; the encoder's loss (4:2:0 chroma included) measured on the
       ffmpeg CLI's own encoding of the expected frames with the same settings */
    char raw[300], ref[300];
    snprintf(raw, sizeof raw, "%s/expected.rgb", dir);
    snprintf(ref, sizeof ref, "%s/ref.mp4", dir);
    FILE *f = fopen(raw, "wb");
    fwrite(exp, (size_t)W * S * H * S * 3, N, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f rawvideo -pix_fmt rgb24 -s %dx%d "
             "-r 24000/1001 -i '%s' -c:v libx264 -crf 12 -g 12 -pix_fmt yuv420p '%s'", W * S,
             H * S, raw, ref);
    CHECK(sh(cmd, NULL, 0) == 0, "%s", cmd);
    int identical;
    double p = ffmpeg_psnr(dst, exp, &identical), p_ref = ffmpeg_psnr(ref, exp, &identical);
    CHECK(p > 30 && p > p_ref - 0.5, "libx264 crf 12: worst frame PSNR %.2f dB against nearest "
          "x2 (the ffmpeg CLI's own encoding: %.2f dB)", p, p_ref);
    printf("libx264 (default) in .mp4, crf 12: AAC copied, SRT dropped, smpte170m/tv, worst "
           "PSNR %.2f dB (ffmpeg CLI's encoding of the same frames: %.2f dB)\n", p, p_ref);
}

/* Frame times (ffprobe) of the video stream, one line each. */
static void frame_times(const char *file, char *out, size_t len) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries frame=pts_time "
             "-of csv=p=0 '%s'", file);
    if (sh(cmd, out, len) != 0) out[0] = '\0';
}

/* A variable-rate source (a 0.25 s gap after frame 9) keeps its frame times. */
static void check_vfr(void) {
    char src[300], dst[300], cmd[1024], err[1024], t1[4096], t2[4096];
    snprintf(src, sizeof src, "%s/vfr.mkv", dir);
    snprintf(dst, sizeof dst, "%s/vfr_out.mkv", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f lavfi -i testsrc=size=%dx%d:rate=24 -f lavfi "
             "-i sine=sample_rate=44100 -frames:v 20 -t 1.5 -vf \"setpts='(N+gte(N\\,10)*6)"
             "/24/TB'\" -fps_mode passthrough -c:v ffv1 -c:a flac '%s'", W, H, src);
    CHECK(sh(cmd, NULL, 0) == 0, "%s", cmd);
    up_ctx c = { 0 };
    CHECK(upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err) == 0, "vfr: %s", err);
    frame_times(src, t1, sizeof t1);
    frame_times(dst, t2, sizeof t2);
    CHECK(strstr(t1, "0.375000\n0.667000\n") && !strcmp(t1, t2),
          "frame times: source\n%s\noutput\n%s", t1, t2);
    printf("variable rate: the 20 frame times kept (a 0.29 s step after frame 9)\n");
}

/* quality (qscale) and bit_rate reach the encoder: mpeg4 at q 2 against q 31, and libx264
   (when there) at 2 Mb/s against 50 kb/s, the first of each pair at least twice as large
   (video packet bytes). */
static void check_quality(const char *src, int has_x264) {
    long long size[4] = { 0 };
    for (int k = 0; k < 4; k++) {
        char dst[300], err[1024];
        snprintf(dst, sizeof dst, "%s/q%d.mkv", dir, k);
        up_ctx c = { 0 };
        pf_video_upscale_job job = { .scale = S, .window = 1, .upscale = up, .ctx = &c,
                                     .out = pf_video_out_opts_default() };
        job.out.codec = k < 2 ? "mpeg4" : "libx264";
        if (k < 2) job.out.quality = k == 0 ? 2 : 31;
        else job.out.bit_rate = k == 2 ? 2000000 : 50000;
        if (k == 2 && !has_x264) break;
        CHECK(pf_video_upscale_file(src, dst, &job, err, sizeof err) == 0, "%s", err);
        char cmd[600], out[64];
        snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams v:0 -show_entries "
                 "packet=size -of csv=p=0 '%s' | awk '{s+=$1} END {print s}'", dst);
        if (sh(cmd, out, sizeof out) == 0) size[k] = atoll(out);
        unlink(dst);
    }
    CHECK(size[0] > 2 * size[1] && (!has_x264 || size[2] > 2 * size[3]),
          "video bytes: q 2 %lld, q 31 %lld, 2 Mb/s %lld, 50 kb/s %lld", size[0], size[1],
          size[2], size[3]);
    printf("video bytes: mpeg4 q 2 %lld, q 31 %lld; libx264 2 Mb/s %lld, 50 kb/s %lld\n",
           size[0], size[1], size[2], size[3]);
}

/* Failures: each an error with a message, nothing left behind. */
static void check_errors(const char *src) {
    char dst[400], err[1024];
    up_ctx c = { 0 };
    snprintf(dst, sizeof dst, "%s/no/such/folder/out.mkv", dir);
    CHECK(upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err) != 0 && strstr(err, "create"),
          "missing folder: '%s'", err);
    snprintf(dst, sizeof dst, "%s/afile", dir);
    FILE *f = fopen(dst, "w");
    if (f) fclose(f);
    snprintf(dst, sizeof dst, "%s/afile/out.mkv", dir);
    CHECK(upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err) != 0 && strstr(err, dst),
          "folder is a file: '%s'", err);
    if (geteuid() != 0) {   /* root writes anyway: check_disk's read-only tmpfs covers it */
        snprintf(dst, sizeof dst, "%s/ro", dir);
        mkdir(dst, 0555);
        snprintf(dst, sizeof dst, "%s/ro/out.mkv", dir);
        CHECK(upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err) != 0 &&
              strstr(err, "Permission denied") && nothing_left(dst), "folder 0555: '%s'", err);
    }
    snprintf(dst, sizeof dst, "%s/subs.mp4", dir);
    CHECK(upscale(src, dst, 1, 0, "mpeg4", &c, err, sizeof err) != 0 &&
          strstr(err, "subrip") && nothing_left(dst), "SRT into mp4: '%s'", err);
    snprintf(dst, sizeof dst, "%s/fail.mkv", dir);
    up_ctx failing = { .fail_at = 10 };
    CHECK(upscale(src, dst, 1, 0, "ffv1", &failing, err, sizeof err) != 0 &&
          strstr(err, "on purpose") && nothing_left(dst), "upscaler failing: '%s'", err);
    pf_video_upscale_job stop = { .scale = S, .window = 1, .upscale = up, .ctx = &c,
                                  .progress = cancel_at_12, .out = pf_video_out_opts_default() };
    stop.out.codec = "ffv1";
    CHECK(pf_video_upscale_file(src, dst, &stop, err, sizeof err) != 0 &&
          strstr(err, "cancelled after 12 of 30") && nothing_left(dst), "cancel: '%s'", err);
    pf_video_upscale_job job = { .scale = S, .window = 1, .upscale = up, .ctx = &c,
                                 .out = pf_video_out_opts_default() };
    job.out.codec = "ffv1";
    job.out.crf = 20;
    CHECK(pf_video_upscale_file(src, dst, &job, err, sizeof err) != 0 && strstr(err, "crf") &&
          nothing_left(dst), "crf with ffv1: '%s'", err);
    pf_video_out_opts o = pf_video_out_opts_default();
    o.codec = "mpeg4";
    pf_video_out *vo = pf_video_out_open(dst, src, 129, 96, 0, &o, err, sizeof err);
    CHECK(!vo && strstr(err, "even") && strstr(err, "129x96") && nothing_left(dst),
          "odd width for yuv420p: '%s'", err);
    job.out = pf_video_out_opts_default();
    job.out.codec = "no_such_codec";
    CHECK(pf_video_upscale_file(src, dst, &job, err, sizeof err) != 0 &&
          strstr(err, "no_such_codec"), "unknown encoder: '%s'", err);
}

/* BasicSR's generate_frame_indices (basicsr/data/data_util.py): frame i's num_frame
   neighbours in a clip of n frames, padding 0 replicate, 1 reflection, 2 reflection_circle,
   3 circle (common/frame_indices.h's order). */
static void basicsr_indices(int i, int n, int num_frame, int padding, int *out) {
    int h = num_frame / 2, m = n - 1;
    for (int k = 0; k < num_frame; k++) {
        int j = i - h + k;
        out[k] = j >= 0 && j <= m ? j
               : padding == 0 ? (j < 0 ? 0 : m)
               : padding == 1 ? (j < 0 ? -j : 2 * m - j)
               : padding == 2 ? (j < 0 ? i + h - j : (i - h) - (j - m))
               : (j < 0 ? num_frame + j : j - num_frame);
    }
}

typedef struct {
    const uint8_t *src;         /* the source's frames (common/video.c) */
    int n, padding, calls, wrong;
} slide_ctx;

/* Sliding windows: call k is frame k's window; each of its frames is compared with the source
   frame BasicSR's rule names; the output is nearest x2 of the center frame. */
static int slide_up(void *ctx, const uint8_t *in, int t, int h, int w, uint8_t *out, char *err,
                    size_t errlen) {
    slide_ctx *c = ctx;
    int idx[5];
    size_t fb = (size_t)h * w * 3;
    if (t != 5) {
        snprintf(err, errlen, "a window of %d frames, not 5", t);
        return -1;
    }
    basicsr_indices(c->calls, c->n, 5, c->padding, idx);
    for (int k = 0; k < t; k++)
        c->wrong += idx[k] < 0 || idx[k] >= c->n || memcmp(in + k * fb, c->src + idx[k] * fb, fb);
    nearest(in + 2 * fb, h, w, out);
    c->calls++;
    return 0;
}

/* The source's frames through common/video.c. */
static uint8_t *source_frames(const char *src, int n) {
    char err[512];
    pf_video *v = pf_video_open(src, err, sizeof err);
    CHECK(v, "%s", err);
    uint8_t *e = v ? malloc((size_t)W * H * 3 * n) : NULL;
    for (int i = 0; e && i < n; i++) {
        pf_image img = { 0 };
        CHECK(pf_video_read(v, i, &img, err, sizeof err) == 0, "%s", err);
        if (img.data) memcpy(e + (size_t)W * H * 3 * i, img.data, (size_t)W * H * 3);
        pf_image_free(&img);
    }
    pf_video_destroy(&v);
    return e;
}

/* Sliding windows of 5 with each padding on `src` (n frames); exp: nearest x2 of its frames
   (NULL: not compared). */
static void check_sliding(const char *src, int n, const uint8_t *exp) {
    uint8_t *frames = source_frames(src, n);
    for (int p = 0; frames && p < 4; p++) {
        char dst[400], err[1024];
        snprintf(dst, sizeof dst, "%s/slide_%d_%d.mkv", dir, n, p);
        slide_ctx c = { frames, n, p, 0, 0 };
        pf_video_upscale_job job = { .scale = S, .num_frame = 5, .padding = p, .upscale = slide_up,
                                     .ctx = &c, .out = pf_video_out_opts_default() };
        job.out.codec = "ffv1";
        job.out.quiet = 1;
        int rc = pf_video_upscale_file(src, dst, &job, err, sizeof err);
        if (n < 5 && p >= 2) {
            CHECK(rc != 0 && strstr(err, "too few for windows of 5") &&
                  strstr(err, "(5 at least)") && c.calls == 0 && nothing_left(dst),
                  "%d frames, padding %d: refused before any call: rc %d '%s'", n, p, rc, err);
            continue;
        }
        CHECK(rc == 0 && c.calls == n && c.wrong == 0, "%d frames, padding %d: rc %d '%s', %d "
              "calls, %d window frames not BasicSR's", n, p, rc, rc ? err : "", c.calls, c.wrong);
        if (rc == 0 && exp) {
            int identical = 0;
            double q = ffmpeg_psnr(dst, exp, &identical);
            CHECK(identical, "sliding windows, padding %d: frames differ from nearest x2 (worst "
                  "PSNR %g)", p, q);
        }
    }
    free(frames);
}

/* A 16 KiB tmpfs (the FFV1 output is larger) and a read-only one; root only. */
static void check_disk(const char *src, const char *big) {
    struct stat sb;
    if (stat(big, &sb) != 0 || geteuid() != 0) {
        printf("full-disk and read-only cases skipped: mounting a tmpfs needs root\n");
        return;
    }
    CHECK(sb.st_size > 16 * 1024, "the FFV1 output (%lld bytes) must not fit 16 KiB",
          (long long)sb.st_size);
    char mnt[300], cmd[600], dst[400], err[1024];
    snprintf(mnt, sizeof mnt, "%s/tiny", dir);
    mkdir(mnt, 0755);
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=16k tmpfs '%s' 2>&1", mnt);
    if (sh(cmd, NULL, 0) != 0) {
        printf("full-disk case skipped: `%s` failed (no CAP_SYS_ADMIN here?)\n", cmd);
        return;
    }
    snprintf(dst, sizeof dst, "%s/out.mkv", mnt);
    up_ctx c = { 0 };
    int rc = upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err);
    CHECK(rc != 0 && strstr(err, dst) && nothing_left(dst), "full disk: rc %d, '%s'", rc, err);
    printf("full disk (16 KiB tmpfs): '%s'\n", err);
    snprintf(cmd, sizeof cmd, "mount -o remount,ro '%s' 2>&1", mnt);
    if (sh(cmd, NULL, 0) == 0) {
        rc = upscale(src, dst, 1, 0, "ffv1", &c, err, sizeof err);
        CHECK(rc != 0 && strstr(err, "create") && nothing_left(dst), "read-only: '%s'", err);
        printf("read-only folder: '%s'\n", err);
    }
    snprintf(cmd, sizeof cmd, "umount '%s'", mnt);
    sh(cmd, NULL, 0);
}

int main(void) {
    if (sh("ffmpeg -version >/dev/null 2>&1 && ffprobe -version >/dev/null 2>&1", NULL, 0)) {
        printf("test_video_remux: skipped: needs the ffmpeg and ffprobe CLI (Debian's ffmpeg, "
               "scripts/setup.sh --test-deps)\n");
        return 77;
    }
    if (!mkdtemp(dir)) return 2;
    char src[300], srt[300], cmd[1200];
    snprintf(srt, sizeof srt, "%s/subs.srt", dir);
    FILE *f = fopen(srt, "w");
    fprintf(f, "1\n00:00:00,000 --> 00:00:00,500\nhello\n\n2\n00:00:00,600 --> 00:00:01,100\n"
               "world\n");
    fclose(f);
    char meta[300];
    snprintf(meta, sizeof meta, "%s/chapters.txt", dir);
    f = fopen(meta, "w");
    fprintf(f, ";FFMETADATA1\ntitle=test clip\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=500\n"
               "title=First\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=500\nEND=1250\n"
               "title=Second\n");
    fclose(f);
    snprintf(src, sizeof src, "%s/src.mkv", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f lavfi -i testsrc=size=%dx%d:rate=24000/1001 "
             "-f lavfi -i sine=frequency=440:sample_rate=44100 -i '%s' -i '%s' -map 0:v -map 1:a "
             "-map 2:s -map_metadata 3 "
             "-frames:v %d -t 1.25125 -c:v ffv1 -c:a flac -c:s srt -attach '%s' "
             "-metadata:s:t mimetype=application/x-truetype-font '%s'", W, H, srt, meta, N, srt,
             src);
    CHECK(sh(cmd, NULL, 0) == 0, "making the source: %s", cmd);
    uint8_t *exp = expected_frames(src);
    if (exp) {
        check_ffv1(src, exp, 1, 0);
        check_ffv1(src, exp, 7, 3);
        int has_x264 = sh("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q ' libx264 '",
                          NULL, 0) == 0;
        if (has_x264)
            check_x264(srt, exp);
        else
            printf("libx264 case skipped: this FFmpeg has no libx264\n");
        check_vfr();
        check_quality(src, has_x264);
        check_errors(src);
        check_sliding(src, N, exp);
        char short_src[300];
        snprintf(short_src, sizeof short_src, "%s/short.mkv", dir);
        snprintf(cmd, sizeof cmd, "ffmpeg -v error -y -f lavfi -i testsrc=size=%dx%d:rate=25 "
                 "-frames:v 3 -c:v ffv1 '%s'", W, H, short_src);
        CHECK(sh(cmd, NULL, 0) == 0, "making the 3-frame source: %s", cmd);
        check_sliding(short_src, 3, NULL);
        char big[300];
        snprintf(big, sizeof big, "%s/out_w1.mkv", dir);
        check_disk(src, big);
    }
    free(exp);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pf_test_end("test_video_remux");
}
