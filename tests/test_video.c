/*  test_video — common/video.h: frame count, sizes, reads by index (seek) against sequential
    reads, colour conversion, errors.

    1. Synthetic videos made here with libavcodec/libavformat (40 frames, 128x64, each frame
       carrying its number in eight black/white blocks): FFV1 in MKV (all intra), MPEG-4 with
       B-frames in MKV (pts mode, reordering), the same in AVI (no pts: frames counted from the
       keyframe), MPEG-2 with B-frames in MPEG-PS (a parsing demuxer, like cityCC0.mpg). For
       each: count and size; frame i read sequentially carries the number i (so the index is
       right, independently of the reader); every frame read in a shuffled order and backwards
       equals its sequential read byte for byte, with seeks really done; out-of-range reads.
       The FFV1 (lossless) frames are checked against BT.601 limited-range YUV->RGB computed
       here in floating point (the colour rule video.h documents).
    2. Errors: missing file, garbage bytes, a truncated file, a damaged FFV1 packet (slice
       CRC) — each an error naming the file (and the frame). Files cut to 30 % of their bytes
       (60 % for the MPEG-4 AVI, whose first 30 % is header and keyframe)
       (FFV1 and MPEG-4 with B-frames, in AVI and MKV): they open and say they are cut, with
       the frame count and file size their headers announce (what was written), fewer usable
       frames, each read right, backwards (seeking; an FFV1 AVI with a GOP too: its cut-off
       index held the keyframe flags); the whole files say they are whole.
    3. The demo clips (scripts/fetch-demo-video.sh; PIXFLOW_DEMO_VIDEO or
       <source>/data/demo_video), when present: sizes and frame counts of the four clips, seek
       == sequential on 30 random frames of each, read rates.
    4. When the ffmpeg CLI is on PATH: frames byte-identical to `ffmpeg -vf select=eq(n\,K)
       -pix_fmt rgb24 -f rawvideo` for a few K of every video above.
    Part 3 is its own ctest entry, test_video.demo_clips, skipped (77) when no clip is fetched;
    part 4 needs Debian's ffmpeg (a test dependency): without it test_video fails.
*/
#include "common/video.h"
#include "common/util.h"
#include "pf_test.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 128
#define H 64
#define N 40

static char tmpdir[] = "/tmp/pf_test_video.XXXXXX";
static int have_ffmpeg;
static int ffmpeg_frames_equal, ffmpeg_frames_checked;

/* The synthetic picture of frame k in YUV 4:2:0 (limited range). Rows 0..15: bit b of k as
   block b (16 px wide), Y 235 or 16, neutral chroma. Below: smooth ramps moving with k. */
static uint8_t pat_y(int k, int x, int y) {
    if (y < 16) return (k >> (x / 16)) & 1 ? 235 : 16;
    return (uint8_t)(40 + (x + 2 * y + 3 * k) % 160);
}
static uint8_t pat_u(int k, int cx, int cy) { return cy < 8 ? 128 : (uint8_t)(90 + (cx + k) % 64); }
static uint8_t pat_v(int k, int cx, int cy) { return cy < 8 ? 128 : (uint8_t)(100 + (cy * 2 + k) % 50); }

/* The number a read frame carries (-1 if a block is neither black nor white). */
static int frame_number(const pf_image *im) {
    int k = 0;
    for (int b = 0; b < 8; b++) {
        const uint8_t *p = im->data + ((size_t)8 * im->w + b * 16 + 8) * 3;
        if (p[0] > 200 && p[1] > 200 && p[2] > 200) k |= 1 << b;
        else if (!(p[0] < 55 && p[1] < 55 && p[2] < 55)) return -1;
    }
    return k;
}

static int write_packets(AVFormatContext *oc, AVCodecContext *enc, AVStream *st, AVFrame *f) {
    AVPacket *pkt = av_packet_alloc();
    int rc = avcodec_send_frame(enc, f);
    while (rc >= 0) {
        rc = avcodec_receive_packet(enc, pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) { rc = 0; break; }
        if (rc < 0) break;
        av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
        pkt->stream_index = st->index;
        rc = av_interleaved_write_frame(oc, pkt);
    }
    av_packet_free(&pkt);
    return rc;
}

/* Encode N frames of the pattern into `path` with muxer `mux`. Returns 0 or -1. */
static int make_video(const char *path, const char *mux, enum AVCodecID id, int gop, int bframes) {
    AVFormatContext *oc = NULL;
    if (avformat_alloc_output_context2(&oc, NULL, mux, path) < 0) return -1;
    const AVCodec *codec = avcodec_find_encoder(id);
    AVStream *st = avformat_new_stream(oc, NULL);
    AVCodecContext *enc = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!enc || !st) return -1;
    enc->width = W;
    enc->height = H;
    enc->pix_fmt = AV_PIX_FMT_YUV420P;
    enc->time_base = (AVRational){1, 10};
    enc->framerate = (AVRational){10, 1};
    enc->gop_size = gop;
    enc->max_b_frames = bframes;
    enc->thread_count = 1;
    if (id == AV_CODEC_ID_FFV1) {
        enc->level = 3;
        av_opt_set_int(enc->priv_data, "slicecrc", 1, 0);
    } else {
        enc->flags |= AV_CODEC_FLAG_QSCALE;
        enc->global_quality = FF_QP2LAMBDA * 2;
    }
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int rc = avcodec_open2(enc, codec, NULL);
    if (rc >= 0) rc = avcodec_parameters_from_context(st->codecpar, enc);
    st->time_base = enc->time_base;
    if (rc >= 0) rc = avio_open(&oc->pb, path, AVIO_FLAG_WRITE);
    if (rc >= 0) rc = avformat_write_header(oc, NULL);
    AVFrame *f = av_frame_alloc();
    for (int k = 0; k < N && rc >= 0; k++) {
        f->format = AV_PIX_FMT_YUV420P;
        f->width = W;
        f->height = H;
        rc = av_frame_get_buffer(f, 0);
        for (int y = 0; y < H && rc >= 0; y++)
            for (int x = 0; x < W; x++) {
                f->data[0][y * f->linesize[0] + x] = pat_y(k, x, y);
                if (!(x & 1) && !(y & 1)) {
                    f->data[1][y / 2 * f->linesize[1] + x / 2] = pat_u(k, x / 2, y / 2);
                    f->data[2][y / 2 * f->linesize[2] + x / 2] = pat_v(k, x / 2, y / 2);
                }
            }
        f->pts = k;
        if (rc >= 0) rc = write_packets(oc, enc, st, f);
        av_frame_unref(f);
    }
    if (rc >= 0) rc = write_packets(oc, enc, st, NULL);
    if (rc >= 0) rc = av_write_trailer(oc);
    av_frame_free(&f);
    avcodec_free_context(&enc);
    avio_closep(&oc->pb);
    avformat_free_context(oc);
    return rc < 0 ? -1 : 0;
}

static uint64_t hash(const pf_image *im) {
    return pf_fnv1a64(im->data, (size_t)im->w * im->h * 3, PF_FNV_OFFSET);
}

/* Frame k of `path` from the ffmpeg CLI as RGB24 (w x h), after the filter `vf` (NULL: none)
   ahead of the CLI's own conversion. 1 equal, 0 differs, -1 failed. */
static int ffmpeg_equal_vf(const char *path, int k, const pf_image *im, const char *vf) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -nostdin -i '%s' -vf 'select=eq(n\\,%d)%s%s' "
             "-frames:v 1 -pix_fmt rgb24 -f rawvideo - 2>/dev/null", path, k, vf ? "," : "",
             vf ? vf : "");
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = (size_t)im->w * im->h * 3;
    uint8_t *buf = malloc(n + 1);
    size_t got = fread(buf, 1, n + 1, p);
    pclose(p);
    int eq = got == n && memcmp(buf, im->data, n) == 0;
    if (got != n) fprintf(stderr, "ffmpeg CLI gave %zu bytes for %s frame %d (want %zu)\n", got, path, k, n);
    free(buf);
    if (!vf) {   /* the counts are of the plain reference */
        ffmpeg_frames_checked++;
        ffmpeg_frames_equal += eq;
    }
    return eq;
}

static int ffmpeg_equal(const char *path, int k, const pf_image *im) {
    return ffmpeg_equal_vf(path, k, im, NULL);
}

/* Videos tagged with a colour matrix other than BT.601 (made by the ffmpeg CLI, FFV1 4:2:0 so
   nothing is lost): frames equal the CLI's decoding, which converts with the tagged matrix,
   and differ from a BT.601 conversion (so the tag is not ignored). */
static void test_tagged(void) {
    static const struct { const char *name, *matrix, *tag, *range; } cases[] = {
        {"bt709_tv.mkv", "bt709", "bt709", "tv"},
        {"bt709_pc.mkv", "bt709", "bt709", "pc"},
        {"bt2020_tv.mkv", "bt2020", "bt2020nc", "tv"},
    };
    printf("colour-tagged videos:\n");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[512], cmd[1400], err[512];
        snprintf(path, sizeof path, "%s/%s", tmpdir, cases[c].name);
        snprintf(cmd, sizeof cmd, "ffmpeg -v error -nostdin -y -f lavfi -i "
                 "testsrc=size=64x48:rate=10 -frames:v 3 -vf "
                 "scale=out_color_matrix=%s:out_range=%s,format=yuv420p -c:v ffv1 "
                 "-colorspace %s -color_range %s '%s'", cases[c].matrix, cases[c].range,
                 cases[c].tag, cases[c].range, path);
        if (system(cmd) != 0) { CHECK(0, "ffmpeg could not make %s", path); continue; }
        pf_video *v = pf_video_open(path, err, sizeof err);
        CHECK(v != NULL, "open %s: %s", path, err);
        if (!v) continue;
        pf_image im;
        for (int k = 0; k < 3; k++) {
            CHECK(pf_video_read(v, k, &im, err, sizeof err) == 0, "%s", err);
            if (!im.data) continue;
            CHECK(ffmpeg_equal(path, k, &im) == 1, "%s: frame %d differs from the ffmpeg CLI's "
                  "(the %s matrix)", cases[c].name, k, cases[c].matrix);
            char bt601[96];
            snprintf(bt601, sizeof bt601, "scale=in_color_matrix=bt601:in_range=%s",
                     cases[c].range);
            CHECK(ffmpeg_equal_vf(path, k, &im, bt601) == 0, "%s: frame %d equals a BT.601 "
                  "conversion: the %s tag was ignored", cases[c].name, k, cases[c].tag);
            pf_image_free(&im);
        }
        printf("  %s: 3 frames equal the ffmpeg CLI's, unlike BT.601's\n", cases[c].name);
        pf_video_destroy(&v);
    }
}

/* Read every frame of `path` in order; hashes into *hs (malloc'd). Returns the count read. */
static int read_all(pf_video *v, const char *path, uint64_t **hs, int check_numbers) {
    pf_video_info in = pf_video_get_info(v);
    char err[512];
    *hs = calloc((size_t)in.n_frames, sizeof **hs);
    int ok = 0, numbers_ok = 0;
    for (int i = 0; i < in.n_frames; i++) {
        pf_image im;
        if (pf_video_read(v, i, &im, err, sizeof err) != 0) {
            CHECK(0, "%s: sequential read of frame %d: %s", path, i, err);
            break;
        }
        (*hs)[i] = hash(&im);
        if (check_numbers) numbers_ok += frame_number(&im) == i;
        pf_image_free(&im);
        ok++;
    }
    if (check_numbers)
        CHECK(numbers_ok == in.n_frames, "%s: %d of %d frames carry their own number", path,
              numbers_ok, in.n_frames);
    return ok;
}

/* Read the frames `idx[0..n)` and compare with the sequential hashes. */
static void check_random(pf_video *v, const char *path, const uint64_t *hs, const int *idx, int n) {
    char err[512];
    int same = 0;
    for (int r = 0; r < n; r++) {
        pf_image im;
        if (pf_video_read(v, idx[r], &im, err, sizeof err) != 0) {
            CHECK(0, "%s: read of frame %d: %s", path, idx[r], err);
            continue;
        }
        if (hash(&im) == hs[idx[r]]) same++;
        else CHECK(0, "%s: frame %d read out of order differs from its sequential read", path, idx[r]);
        pf_image_free(&im);
    }
    CHECK(same == n, "%s: %d of %d out-of-order reads equal sequential reads", path, same, n);
}

/* FFV1 is lossless: the RGB must be BT.601 limited-range YUV->RGB of the pattern. */
static void check_colour(pf_video *v, const char *path) {
    char err[512];
    pf_image im;
    int k = 7, worst = 0;
    if (pf_video_read(v, k, &im, err, sizeof err) != 0) { CHECK(0, "%s: %s", path, err); return; }
    for (int y = 16; y < H; y++)
        for (int x = 0; x < W; x++) {
            double Y = 1.164383 * (pat_y(k, x, y) - 16), U = pat_u(k, x / 2, y / 2) - 128.0,
                   V = pat_v(k, x / 2, y / 2) - 128.0;
            double rgb[3] = {Y + 1.596027 * V, Y - 0.391762 * U - 0.812968 * V, Y + 2.017232 * U};
            for (int c = 0; c < 3; c++) {
                double e = rgb[c] < 0 ? 0 : rgb[c] > 255 ? 255 : rgb[c];
                int d = abs(im.data[((size_t)y * W + x) * 3 + c] - (int)(e + 0.5));
                if (d > worst) worst = d;
            }
        }
    /* swscale's unscaled converter uses table arithmetic and nearest chroma: a few levels.
       A full-range reading of the same YUV would be off by 20 or more. */
    CHECK(worst <= 3, "%s: RGB differs from BT.601 limited range by up to %d levels", path, worst);
    printf("  colour: frame %d within %d levels of BT.601 limited-range YUV->RGB\n", k, worst);
    pf_image_free(&im);
}

static void shuffle(int *a, int n, unsigned seed) {
    for (int i = 0; i < n; i++) a[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (unsigned)(i + 1)), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void test_synthetic(const char *name, const char *mux, enum AVCodecID id, int gop, int bf,
                           char *path_out) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (path_out) strcpy(path_out, path);
    if (make_video(path, mux, id, gop, bf) != 0) { CHECK(0, "cannot encode %s", path); return; }
    pf_video *v = pf_video_open(path, err, sizeof err);
    CHECK(v != NULL, "open %s: %s", path, err);
    if (!v) return;
    pf_video_info in = pf_video_get_info(v);
    printf("%s: %s/%s %dx%d, %d frames, %.1f fps\n", name, in.container, in.codec, in.w, in.h,
           in.n_frames, in.fps);
    CHECK(in.w == W && in.h == H, "%s: %dx%d", name, in.w, in.h);
    CHECK(in.n_frames == N, "%s: %d frames, made %d", name, in.n_frames, N);
    CHECK(!in.cut[0] && in.usable_frames == N, "%s: a whole file reported cut short (%s), %d "
          "usable frames", name, in.cut, in.usable_frames);
    CHECK_NEAR(in.fps, 10.0, 1e-9);
    CHECK_NEAR(pf_video_frame_time(v, 13), 1.3, 1e-6);
    uint64_t *hs;
    read_all(v, path, &hs, 1);
    pf_video_stats s0 = pf_video_get_stats(v);
    CHECK(s0.seeks == 1, "%s: sequential reads seeked %ld times (1: the first read)", name, s0.seeks);
    int idx[2 * N];
    shuffle(idx, N, 17);
    for (int i = 0; i < N; i++) idx[N + i] = N - 1 - i;   /* then backwards */
    check_random(v, path, hs, idx, 2 * N);
    pf_video_stats s1 = pf_video_get_stats(v);
    printf("  %d shuffled + backward reads: %ld seeks, %ld pictures decoded\n", 2 * N,
           s1.seeks - s0.seeks, s1.decoded - s0.decoded);
    CHECK(s1.seeks - s0.seeks >= N, "%s: only %ld seeks for %d out-of-order reads", name,
          s1.seeks - s0.seeks, 2 * N);
    pf_image im;
    CHECK(pf_video_read(v, N, &im, err, sizeof err) == -1 && strstr(err, "frame 40 out of range")
          && strstr(err, path), "%s: frame %d: err '%s'", name, N, err);
    CHECK(pf_video_read(v, -1, &im, err, sizeof err) == -1 && strstr(err, "frame -1 out of range"),
          "%s: frame -1: err '%s'", name, err);
    CHECK(pf_video_read(v, 5, &im, err, sizeof err) == 0 && hash(&im) == hs[5],
          "%s: the reader works after an error", name);
    pf_image_free(&im);
    if (id == AV_CODEC_ID_FFV1) check_colour(v, path);
    if (have_ffmpeg) {
        int ks[] = {0, 1, 11, 22, N - 1};
        for (int j = 0; j < 5; j++) {
            CHECK(pf_video_read(v, ks[j], &im, err, sizeof err) == 0, "%s", err);
            if (im.data) CHECK(ffmpeg_equal(path, ks[j], &im) == 1, "%s: frame %d differs from the ffmpeg CLI's", name, ks[j]);
            pf_image_free(&im);
        }
    }
    free(hs);
    pf_video_destroy(&v);
    CHECK(v == NULL, "destroy nulls the pointer");
}

static void write_bytes(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, n, f);
    fclose(f);
}

static void test_errors(const char *mkv, const char *ffv1) {
    char err[512], path[512];
    printf("errors:\n");
    av_log_set_level(AV_LOG_QUIET);   /* the decoders' own complaints about the damage */
    pf_video *v = pf_video_open("/nonexistent/clip.avi", err, sizeof err);
    CHECK(!v && strstr(err, "/nonexistent/clip.avi: No such file"), "missing file: '%s'", err);
    printf("  missing: %s\n", err);

    uint8_t junk[20000];
    unsigned s = 5;
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)((s = s * 1664525u + 1013904223u) >> 24);
    snprintf(path, sizeof path, "%s/garbage.avi", tmpdir);
    write_bytes(path, junk, sizeof junk);
    v = pf_video_open(path, err, sizeof err);
    CHECK(!v && strncmp(err, path, strlen(path)) == 0, "garbage: '%s'", err);
    printf("  garbage bytes: %s\n", err);

    /* truncated: 60 % of the MPEG-4 MKV: fewer frames, every one still right, or an error */
    size_t len;
    char *data = pf_read_file(mkv, &len, err, sizeof err);
    CHECK(data != NULL, "%s", err);
    if (data) {
        snprintf(path, sizeof path, "%s/truncated.mkv", tmpdir);
        write_bytes(path, data, len * 6 / 10);
        v = pf_video_open(path, err, sizeof err);
        CHECK(v != NULL, "truncated MKV does not open: %s", err);
        if (v) {
            int n = pf_video_get_info(v).n_frames, good = 0, failed = 0;
            CHECK(n > 0 && n < N, "truncated MKV: %d frames", n);
            for (int i = 0; i < n; i++) {
                pf_image im;
                if (pf_video_read(v, i, &im, err, sizeof err) == 0) {
                    good += frame_number(&im) == i;
                    pf_image_free(&im);
                } else {
                    failed++;
                    char want[64];
                    snprintf(want, sizeof want, "frame %d", i);
                    CHECK(strstr(err, want) && strstr(err, path), "truncated: error '%s'", err);
                }
            }
            CHECK(good + failed == n && good >= n - 1, "truncated MKV: %d right, %d errors of %d", good, failed, n);
            printf("  truncated to 60%%: %d frames indexed, %d read right, %d errors%s%s\n", n,
                   good, failed, failed ? ", e.g. " : "", failed ? err : "");
            pf_video_destroy(&v);
        }
        free(data);
    }

    /* damaged: flip bytes inside FFV1 frame 17's packet; its slice CRC no longer matches */
    AVFormatContext *fc = NULL;
    int64_t pos = -1;
    int size = 0;
    if (avformat_open_input(&fc, ffv1, NULL, NULL) == 0 && avformat_find_stream_info(fc, NULL) >= 0) {
        AVPacket *p = av_packet_alloc();
        for (int k = 0; av_read_frame(fc, p) >= 0; k++) {
            if (k == 17) { pos = p->pos; size = p->size; }
            av_packet_unref(p);
        }
        av_packet_free(&p);
    }
    avformat_close_input(&fc);
    data = pf_read_file(ffv1, &len, err, sizeof err);
    CHECK(data && pos > 0 && size > 64, "FFV1 packet 17 at %lld (%d bytes)", (long long)pos, size);
    if (data && pos > 0 && size > 64) {
        for (int j = size / 3; j < size / 3 + 16; j++) data[pos + j] ^= 0x5a;
        snprintf(path, sizeof path, "%s/damaged.mkv", tmpdir);
        write_bytes(path, data, len);
        v = pf_video_open(path, err, sizeof err);
        CHECK(v != NULL, "damaged FFV1 does not open: %s", err);
        if (v) {
            pf_image im;
            int rc = pf_video_read(v, 17, &im, err, sizeof err);
            CHECK(rc == -1 && strstr(err, "frame 17") && strstr(err, "corrupt") && strstr(err, path),
                  "damaged frame 17: rc %d, err '%s'", rc, err);
            printf("  damaged packet: %s\n", err);
            rc = pf_video_read(v, 16, &im, err, sizeof err);
            CHECK(rc == 0 && frame_number(&im) == 16, "frame 16 beside the damage: %s", rc ? err : "wrong picture");
            pf_image_free(&im);
            rc = pf_video_read(v, 18, &im, err, sizeof err);
            CHECK(rc == 0 && frame_number(&im) == 18, "frame 18 beside the damage: %s", rc ? err : "wrong picture");
            pf_image_free(&im);
            pf_video_destroy(&v);
        }
    }
    free(data);
    av_log_set_level(AV_LOG_ERROR);
}

/* A video cut to 30 % of its bytes (video.h, "Truncation"): it opens, says it is cut, with
   fewer usable frames than the N the header announces (N: what make_video wrote), the bytes
   the container states (the whole file's length, known here) where it states them, and every
   usable frame reads right (the number it carries is its index). Returns the usable count. */
static int test_cut(const char *name, const char *mux, enum AVCodecID id, int gop, int bf,
                    int percent, int header_bytes_known) {
    char whole[512], path[512], err[512];
    snprintf(whole, sizeof whole, "%s/whole_%s", tmpdir, name);
    snprintf(path, sizeof path, "%s/cut_%s", tmpdir, name);
    if (make_video(whole, mux, id, gop, bf) != 0) { CHECK(0, "cannot encode %s", whole); return -1; }
    size_t len;
    char *data = pf_read_file(whole, &len, err, sizeof err);
    CHECK(data != NULL, "%s", err);
    if (!data) return -1;
    size_t cut_len = len * (size_t)percent / 100;
    write_bytes(path, data, cut_len);
    free(data);
    pf_video *v = pf_video_open(whole, err, sizeof err);
    CHECK(v != NULL, "%s: %s", whole, err);
    if (v) {
        pf_video_info in = pf_video_get_info(v);
        CHECK(!in.cut[0] && in.usable_frames == N && in.n_frames == N,
              "whole %s: cut '%s', %d usable of %d", name, in.cut, in.usable_frames, in.n_frames);
        pf_video_destroy(&v);
    }
    av_log_set_level(AV_LOG_QUIET);
    v = pf_video_open(path, err, sizeof err);
    CHECK(v != NULL, "%s cut to %d%% does not open: %s", name, percent, err);
    if (!v) { av_log_set_level(AV_LOG_ERROR); return -1; }
    pf_video_info in = pf_video_get_info(v);
    printf("  %s, %zu of %zu bytes: %d frames indexed, %d usable, header %d frames, %lld bytes: "
           "%s\n", name, cut_len, len, in.n_frames, in.usable_frames, in.header_frames,
           in.header_bytes, in.cut);
    CHECK(in.cut[0], "%s cut to %d%%: not reported cut", name, percent);
    CHECK(in.usable_frames > 0 && in.usable_frames <= in.n_frames && in.usable_frames < N,
          "%s: %d usable of %d indexed, %d made", name, in.usable_frames, in.n_frames, N);
    /* FFV1 frames are of about one size: 30 % of the bytes, less the headers, about 30 % of
       the frames */
    if (id == AV_CODEC_ID_FFV1)
        CHECK(in.usable_frames >= N * percent / 100 - 6 && in.usable_frames <= N * percent / 100,
              "%s: %d usable frames in %d%% of the bytes of %d", name, in.usable_frames,
              percent, N);
    /* AVI: the frame count; MKV: the duration, 3.9 s here (make_video gives the last frame
       no duration), so 39 frames "about" */
    CHECK(in.header_frames_about ? in.header_frames >= N - 1 && in.header_frames <= N
                                 : in.header_frames == N,
          "%s: the header announces %s%d frames, %d were written", name,
          in.header_frames_about ? "about " : "", in.header_frames, N);
    CHECK(in.file_bytes == (long long)cut_len, "%s: file_bytes %lld, %zu", name, in.file_bytes,
          cut_len);
    if (header_bytes_known)
        CHECK(in.header_bytes == (long long)len, "%s: the header's size %lld, the whole file %zu",
              name, in.header_bytes, len);
    int right = 0;   /* backwards: each read seeks */
    for (int i = in.usable_frames - 1; i >= 0; i--) {
        pf_image im;
        if (pf_video_read(v, i, &im, err, sizeof err) == 0) {
            right += frame_number(&im) == i;
            pf_image_free(&im);
        } else {
            CHECK(0, "%s: usable frame %d: %s", name, i, err);
        }
    }
    CHECK(right == in.usable_frames, "%s: %d of the %d usable frames read right", name, right,
          in.usable_frames);
    if (id == AV_CODEC_ID_FFV1 && in.usable_frames < in.n_frames) {   /* the cut frame */
        pf_image im;
        int rc = pf_video_read(v, in.usable_frames, &im, err, sizeof err);
        CHECK(rc == -1, "%s: frame %d, in the cut packet, reads", name, in.usable_frames);
        if (rc == 0) pf_image_free(&im);
        else printf("  %s: reading frame %d: %s\n", name, in.usable_frames, err);
    }
    int usable = in.usable_frames;
    pf_video_destroy(&v);
    av_log_set_level(AV_LOG_ERROR);
    return usable;
}

/* The demo clips: name, size, frame count (video packets; ffprobe -count_frames agrees). */
static const struct { const char *name; int w, h, n; } clips[] = {
    {"vtest.avi", 768, 576, 795},
    {"Megamind.avi", 720, 528, 270},
    {"tree.avi", 320, 240, 68},
    {"cityCC0.mpg", 720, 405, 190},
};

static int test_demo_clips(void) {
    char dir[1024], path[1200], err[512];
    const char *env = getenv("PIXFLOW_DEMO_VIDEO"), *src = getenv("PF_SOURCE_DIR");
    if (env) snprintf(dir, sizeof dir, "%s", env);
    else snprintf(dir, sizeof dir, "%s/data/demo_video", src ? src : ".");
    int done = 0;
    printf("demo clips in %s:\n", dir);
    for (size_t c = 0; c < sizeof clips / sizeof clips[0]; c++) {
        snprintf(path, sizeof path, "%s/%s", dir, clips[c].name);
        if (access(path, R_OK) != 0) {
            printf("  %s: not there (scripts/fetch-demo-video.sh fetches it)\n", clips[c].name);
            continue;
        }
        double t0 = pf_now();
        pf_video *v = pf_video_open(path, err, sizeof err);
        double t_open = pf_now() - t0;
        CHECK(v != NULL, "%s", err);
        if (!v) continue;
        pf_video_info in = pf_video_get_info(v);
        CHECK(in.w == clips[c].w && in.h == clips[c].h && in.n_frames == clips[c].n,
              "%s: %dx%d, %d frames; expected %dx%d, %d", clips[c].name, in.w, in.h, in.n_frames,
              clips[c].w, clips[c].h, clips[c].n);
        /* whole files: none may look cut (tree.avi's header counts 444 slots, 376 empty) */
        CHECK(!in.cut[0] && in.usable_frames == in.n_frames, "%s: reported cut short: %s",
              clips[c].name, in.cut);
        uint64_t *hs;
        t0 = pf_now();
        int n = read_all(v, path, &hs, 0);
        double t_seq = pf_now() - t0;
        int idx[30];
        unsigned s = 99 + (unsigned)c;
        for (int r = 0; r < 30; r++) idx[r] = (int)((s = s * 1103515245u + 12345u) >> 8) % in.n_frames;
        pf_video_stats s0 = pf_video_get_stats(v);
        t0 = pf_now();
        check_random(v, path, hs, idx, 30);
        double t_rand = pf_now() - t0;
        pf_video_stats s1 = pf_video_get_stats(v);
        printf("  %-13s %s/%-10s %dx%d, %d frames, %.3f fps; open+index %.1f ms; sequential "
               "%.0f frames/s; 30 random reads %.1f frames/s (%ld seeks, %.1f pictures decoded "
               "a read)\n", clips[c].name, in.container, in.codec, in.w, in.h, in.n_frames,
               in.fps, t_open * 1e3, n / t_seq, 30 / t_rand, s1.seeks - s0.seeks,
               (double)(s1.decoded - s0.decoded) / 30);
        if (have_ffmpeg) {
            int ks[] = {0, 1, in.n_frames / 3, in.n_frames - 1};
            for (int j = 0; j < 4; j++) {
                pf_image im;
                CHECK(pf_video_read(v, ks[j], &im, err, sizeof err) == 0, "%s", err);
                if (im.data) CHECK(ffmpeg_equal(path, ks[j], &im) == 1, "%s: frame %d differs from the ffmpeg CLI's", clips[c].name, ks[j]);
                pf_image_free(&im);
            }
        }
        free(hs);
        pf_video_destroy(&v);
        done++;
    }
    return done;
}

/* test_video: the synthetic videos, the errors and the ffmpeg CLI reference (Debian's ffmpeg,
   a test dependency: scripts/setup.sh --test-deps). test_video demo_clips: the four demo
   clips, exit 77 (ctest: skipped) when they have not been fetched. */
int main(int argc, char **argv) {
    av_log_set_level(AV_LOG_ERROR);
    have_ffmpeg = system("command -v ffmpeg >/dev/null 2>&1") == 0;
    int clips = argc > 1 && strcmp(argv[1], "demo_clips") == 0;
    if (clips) {
        int done = test_demo_clips();
        if (done == 0) {
            printf("test_video demo_clips: SKIPPED: no demo clip fetched "
                   "(bash scripts/fetch-demo-video.sh)\n");
            return 77;
        }
        printf("ran: demo clips: %d of 4%s\n", done, done < 4 ? " (the rest not fetched)" : "");
    } else {
        CHECK(have_ffmpeg, "no ffmpeg on PATH, the reference for decoded frames: "
              "bash scripts/setup.sh --test-deps installs it");
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
        char mkv[512], ffv1[512];
        test_synthetic("ffv1.mkv", "matroska", AV_CODEC_ID_FFV1, 1, 0, ffv1);
        test_synthetic("mpeg4_bframes.mkv", "matroska", AV_CODEC_ID_MPEG4, 10, 2, mkv);
        test_synthetic("mpeg4_bframes.avi", "avi", AV_CODEC_ID_MPEG4, 10, 2, NULL);
        test_synthetic("mpeg2_bframes.mpg", "vob", AV_CODEC_ID_MPEG2VIDEO, 12, 2, NULL);
        test_errors(mkv, ffv1);
        test_tagged();
        printf("cut to 30%% of the bytes:\n");
        test_cut("ffv1.avi", "avi", AV_CODEC_ID_FFV1, 1, 0, 30, 1);
        test_cut("ffv1_gop10.avi", "avi", AV_CODEC_ID_FFV1, 10, 0, 30, 1);
        test_cut("ffv1.mkv", "matroska", AV_CODEC_ID_FFV1, 1, 0, 30, 1);
        test_cut("mpeg4_bframes.mkv", "matroska", AV_CODEC_ID_MPEG4, 10, 2, 30, 1);
        /* at 30 % this AVI holds its header, the first keyframe and a cut packet: 60 % */
        test_cut("mpeg4_bframes.avi", "avi", AV_CODEC_ID_MPEG4, 10, 2, 60, 1);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
        printf("ran: 4 synthetic videos, 3 colour-tagged videos, 4 error cases, 5 videos "
               "cut short\n");
    }
    if (have_ffmpeg)
        printf("ffmpeg CLI reference: %d of %d frames byte-identical\n", ffmpeg_frames_equal,
               ffmpeg_frames_checked);
    return pf_test_end(clips ? "test_video demo_clips" : "test_video");
}
