/*  video — frames of a video file by index (video.h says what an index means; docs/video.md).

    pf_video_open demuxes the whole stream once and keeps, per non-empty packet in decode
    order, its timestamps, file position and keyframe flag (`pk`). From that index: the frames
    (packets from the first keyframe on, minus in pts mode those displaying before it) sorted
    by presentation time (`frame_ts`, `frame_pk`), and the keyframes (`keys`).

    A read either continues decoding forward or positions the demuxer on a keyframe packet K:
    av_seek_frame backwards to a time at or before K, then packets are read and dropped until
    K itself comes (matched by file position, else by timestamp). A demuxer that cannot seek,
    or that lands after K, is reopened and read from the start instead (slow, always right).
    Decoded pictures are then named by their pts (pts mode) or counted from K's own picture
    (dts mode: AVI, where packets carry decode-order times only; one packet per display slot).

    The index pass also looks for a cut (video.h, "Truncation"): the first packet that runs
    past the end of the file (`cut_pk`), the packet slots the header announces, the duration it
    announces (check_cut, after the frames are known). It only reports: the frames past the cut
    stay in the index, and a reader that is asked for them fails as for any damaged frame.

    Invariants: `cur` is the index of the last picture the decoder gave us (-1 after a seek);
    `next_pk` is the decode index of the next packet to send; `positioned` is false whenever the
    demuxer/decoder state is unknown (after the index pass, after an error), forcing a seek.
*/
#include "common/video.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include <math.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t pts, dts;        /* stream time base; AV_NOPTS_VALUE when the demuxer gave none */
    int64_t pos;             /* byte offset in the file, -1 when unknown */
    int size;                /* bytes */
    int key;                 /* AV_PKT_FLAG_KEY */
    int frame;               /* presentation index of its picture, -1 if not a frame */
} vpacket;

struct pf_video {
    char *path;              /* as opened, for messages */
    AVFormatContext *fmt;    /* demuxer */
    int stream;              /* index of the video stream in fmt */
    AVCodecContext *dec;     /* decoder */
    AVPacket *pkt;           /* scratch packet */
    AVFrame *frame;          /* decoded picture */
    AVFrame *rgb;            /* sws output, aligned as FFmpeg's own buffers */
    struct SwsContext *sws;  /* converter for sws_fmt at w x h */
    int sws_fmt;             /* pixel format sws was made for, -1 none */
    pf_video_info info;
    AVRational tb;           /* stream time base */
    vpacket *pk;             /* every non-empty packet of the stream, decode order */
    int n_pk;
    int64_t *frame_ts;       /* presentation time of frame i (pts, or dts in dts mode), rising */
    int *frame_pk;           /* decode index of frame i's packet */
    int *keys;               /* decode indices of keyframe packets that start a frame, rising */
    int *key_frame;          /* presentation index of keys[j]'s picture, -1 not known yet */
    int n_keys;
    int use_pts;             /* 1: pictures are named by pts; 0: counted from the keyframe */
    int reorders;            /* dts mode, the codec may reorder (B-frames): keyframe indices
                                are learnt when decoding passes them */
    int pos_rising;          /* packet positions are known and strictly increasing */
    /* decoder position */
    int positioned;          /* 0: state unknown, the next read seeks */
    int seek_key;            /* keys[] entry the last seek targeted */
    int anchored;            /* dts mode: the seek keyframe's picture has come out */
    int next_ord;            /* dts mode: index of the next picture once anchored */
    int next_pk;             /* decode index of the next packet to send */
    int draining;            /* end of file reached, decoder flushed with a NULL packet */
    int cur;                 /* index of the last picture received, -1 none */
    int passed_corrupt;      /* a read failed on this corrupt picture before its target, -1 */
    pf_video_stats stats;
    /* truncation, found by the index pass */
    int cut_pk;              /* decode index of the first packet the file cuts short, -1 none */
    int n_slots;             /* packets of the stream, empty ones (AVI drop frames) counted */
};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Errors a decoder logs. Some decoders detect damage and conceal it without a flag on the
   picture or an error code: FFmpeg 5.1's FFV1 logs "slice CRC mismatch" and copies the
   previous picture's slice, even with AV_EF_CRCCHECK | AV_EF_EXPLODE (the ffmpeg CLI then
   exits 0 too). So av_log is watched: an AV_LOG_ERROR message from the decoder a thread is
   decoding with (log_watch) is counted, its first text kept, and the picture that comes out
   next is refused (decode_until). Messages still go to FFmpeg's default logger. */
static __thread const void *log_watch;
static __thread int log_errors;
static __thread char log_first[160];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void on_av_log(void *avcl, int level, const char *fmt, va_list vl) {
    if (avcl && avcl == log_watch && level <= AV_LOG_ERROR) {
        if (log_errors++ == 0) {
            va_list copy;
            va_copy(copy, vl);
            vsnprintf(log_first, sizeof log_first, fmt, copy);
            va_end(copy);
            log_first[strcspn(log_first, "\n")] = '\0';
        }
    }
    av_log_default_callback(avcl, level, fmt, vl);
}

static void install_log(void) { av_log_set_callback(on_av_log); }

static const char *av_msg(int code, char *buf, size_t len) {
    av_strerror(code, buf, len);
    return buf;
}

/* Open the demuxer on self->path and find the video stream. */
static int open_input(pf_video *v, char *err, size_t errlen) {
    char m[128];
    int rc = avformat_open_input(&v->fmt, v->path, NULL, NULL);
    if (rc < 0) return fail(err, errlen, "%s: %s", v->path, av_msg(rc, m, sizeof m));
    rc = avformat_find_stream_info(v->fmt, NULL);
    if (rc < 0)
        return fail(err, errlen, "%s: not a readable media file (%s)", v->path,
                    av_msg(rc, m, sizeof m));
    v->stream = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (v->stream < 0) return fail(err, errlen, "%s: no video stream", v->path);
    AVStream *st = v->fmt->streams[v->stream];
    for (unsigned s = 0; s < v->fmt->nb_streams; s++)
        if ((int)s != v->stream) v->fmt->streams[s]->discard = AVDISCARD_ALL;
    v->tb = st->time_base;
    return 0;
}

/* A packet of the video stream worth indexing and decoding (others are skipped alike by the
   index pass and by reads, so decode indices agree). A zero-size packet would drain the
   decoder. */
static int wanted(const pf_video *v, const AVPacket *p) {
    return p->stream_index == v->stream && p->size > 0;
}

/* Presentation time used to sort frames: pts in pts mode, dts otherwise. */
static int64_t pk_ts(const pf_video *v, const vpacket *p) {
    return v->use_pts ? p->pts : p->dts;
}

static int cmp_frame(const void *a, const void *b, void *ctx) {
    const pf_video *v = ctx;
    int64_t x = pk_ts(v, &v->pk[*(const int *)a]), y = pk_ts(v, &v->pk[*(const int *)b]);
    return x < y ? -1 : x > y;
}

/* Demux every packet once; build pk, frame_ts, frame_pk, keys; find a packet the end of the
   file cuts (cut_pk): one running past it, or one ending at it that the demuxer flags corrupt
   (av_get_packet read less than the container said). */
static int build_index(pf_video *v, char *err, size_t errlen) {
    char m[128];
    int cap = 0, rc;
    int64_t file_bytes = avio_size(v->fmt->pb);
    v->cut_pk = -1;
    while ((rc = av_read_frame(v->fmt, v->pkt)) >= 0) {
        if (v->pkt->stream_index == v->stream) v->n_slots++;
        if (wanted(v, v->pkt)) {
            int64_t end = v->pkt->pos >= 0 ? v->pkt->pos + v->pkt->size : -1;
            if (v->cut_pk < 0 && file_bytes > 0 && end >= 0 &&
                (end > file_bytes ||
                 (end == file_bytes && (v->pkt->flags & AV_PKT_FLAG_CORRUPT))))
                v->cut_pk = v->n_pk;
            if (v->n_pk == cap) {
                cap = cap ? cap * 2 : 1024;
                vpacket *np = realloc(v->pk, (size_t)cap * sizeof *np);
                if (!np) { av_packet_unref(v->pkt); return fail(err, errlen, "%s: out of memory", v->path); }
                v->pk = np;
            }
            v->pk[v->n_pk++] = (vpacket){v->pkt->pts, v->pkt->dts, v->pkt->pos,
                                         v->pkt->size, !!(v->pkt->flags & AV_PKT_FLAG_KEY), -1};
        }
        av_packet_unref(v->pkt);
        if (v->n_pk == INT32_MAX / 2) return fail(err, errlen, "%s: too many frames", v->path);
    }
    if (rc != AVERROR_EOF)
        return fail(err, errlen, "%s: demuxing failed after %d packets (%s)", v->path, v->n_pk,
                    av_msg(rc, m, sizeof m));
    int first = 0;
    while (first < v->n_pk && !v->pk[first].key) first++;
    if (first == v->n_pk)
        return fail(err, errlen, "%s: no keyframe in %d video packets", v->path, v->n_pk);

    v->use_pts = 1;
    v->pos_rising = 1;
    for (int d = 0; d < v->n_pk; d++) {
        if (v->pk[d].pts == AV_NOPTS_VALUE) v->use_pts = 0;
        if (v->pk[d].pos < 0 || (d && v->pk[d].pos <= v->pk[d - 1].pos)) v->pos_rising = 0;
    }
    size_t n_pk = v->n_pk > 0 ? (size_t)v->n_pk : 1;   /* > 0 here: a keyframe was found */
    int *order = malloc(n_pk * sizeof *order);
    if (!order) return fail(err, errlen, "%s: out of memory", v->path);
    int n = 0;
    for (int d = first; d < v->n_pk; d++) {
        /* pts mode: pictures displaying before the first keyframe need an earlier one */
        if (v->use_pts && v->pk[d].pts < v->pk[first].pts) continue;
        if (!v->use_pts && v->pk[d].dts == AV_NOPTS_VALUE) {
            free(order);
            return fail(err, errlen, "%s: video packet %d has neither pts nor dts", v->path, d);
        }
        order[n++] = d;
    }
    qsort_r(order, (size_t)n, sizeof *order, cmp_frame, v);
    v->frame_ts = malloc((size_t)n * sizeof *v->frame_ts);
    v->keys = malloc((size_t)n * sizeof *v->keys);
    v->key_frame = malloc((size_t)n * sizeof *v->key_frame);
    if (!v->frame_ts || !v->keys || !v->key_frame) { free(order); return fail(err, errlen, "%s: out of memory", v->path); }
    for (int i = 0; i < n; i++) {
        v->frame_ts[i] = pk_ts(v, &v->pk[order[i]]);
        if (i && v->frame_ts[i] == v->frame_ts[i - 1]) {
            free(order);
            return fail(err, errlen, "%s: two frames (packets %d and %d) have the same %s %lld",
                        v->path, order[i - 1], order[i], v->use_pts ? "pts" : "dts",
                        (long long)v->frame_ts[i]);
        }
        v->pk[order[i]].frame = i;
    }
    v->frame_pk = order;
    /* In dts mode the packets' order is decode order; without reordering it is also display
       order, else a keyframe's display index is only known once decoding has passed it. */
    v->reorders = !v->use_pts && v->fmt->streams[v->stream]->codecpar->video_delay > 0;
    for (int d = first; d < v->n_pk; d++)
        if (v->pk[d].key && v->pk[d].frame >= 0) {
            v->key_frame[v->n_keys] = v->reorders && d != first ? -1 : v->pk[d].frame;
            v->keys[v->n_keys++] = d;
        }
    v->info.n_frames = n;
    return 0;
}

/* Little-endian or EBML helpers for container_bytes. An EBML variable-size integer at p
   (at most `left` bytes): its value, *len its length; -1 for "unknown size" or a bad one. */
static int64_t ebml_vint(const unsigned char *p, size_t left, int *len) {
    if (!left || !p[0]) return -1;
    int n = 1;
    while (!(p[0] & (0x80 >> (n - 1)))) n++;
    if ((size_t)n > left) return -1;
    uint64_t x = p[0] & (0xFF >> n);
    int ones = x == (uint64_t)(0xFF >> n);
    for (int i = 1; i < n; i++) {
        x = x << 8 | p[i];
        ones &= p[i] == 0xFF;
    }
    *len = n;
    return ones ? -1 : (int64_t)x;
}

/* The size in bytes the container says the file has, from its first bytes: RIFF (AVI) stores
   it after "RIFF", Matroska/WebM as the size of its Segment after the EBML header. 0 when the
   container says nothing (or the Segment's size is "unknown", as a live recording's). */
static long long container_bytes(const char *path) {
    unsigned char b[256];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n >= 8 && !memcmp(b, "RIFF", 4))
        return 8 + (long long)(b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24);
    static const unsigned char ebml_id[4] = {0x1A, 0x45, 0xDF, 0xA3}, seg_id[4] = {0x18, 0x53, 0x80, 0x67};
    int len;
    if (n < 5 || memcmp(b, ebml_id, 4)) return 0;
    int64_t head = ebml_vint(b + 4, n - 4, &len);
    if (head < 0 || 4 + len + head + 4 > (int64_t)n) return 0;
    size_t at = 4 + (size_t)len + (size_t)head;
    if (memcmp(b + at, seg_id, 4)) return 0;
    int64_t seg = ebml_vint(b + at + 4, n - at - 4, &len);
    return seg < 0 ? 0 : (long long)(at + 4 + (size_t)len) + seg;
}

/* After the index: what shows a cut (video.h, "Truncation") into info.cut, header_frames,
   usable_frames, file_bytes, header_bytes. */
static void check_cut(pf_video *v) {
    pf_video_info *in = &v->info;
    AVStream *st = v->fmt->streams[v->stream];
    int n = in->n_frames;
    in->usable_frames = n;
    in->file_bytes = avio_size(v->fmt->pb);
    in->header_bytes = container_bytes(v->path);
    double dur = 0;   /* duration the header states: the video stream's, else the file's when
                         it has one stream; not one estimated from the bit rate */
    if (v->fmt->duration_estimation_method == AVFMT_DURATION_FROM_STREAM) {
        if (st->duration != AV_NOPTS_VALUE && st->duration > 0) dur = st->duration * av_q2d(v->tb);
        else if (v->fmt->nb_streams == 1 && v->fmt->duration > 0)
            dur = (double)v->fmt->duration / AV_TIME_BASE;
    }
    int by_count = 0, by_duration = 0;
    if (st->nb_frames > 0 && st->nb_frames < INT32_MAX) {
        in->header_frames = (int)st->nb_frames;
        by_count = v->n_slots < in->header_frames;
    } else if (dur > 0 && in->fps > 0) {
        in->header_frames = (int)lround(dur * in->fps);
        in->header_frames_about = 1;
        double gap = dur - in->duration;   /* seconds announced that no frame covers */
        by_duration = gap > 2 / in->fps && gap > 0.1 * dur;
    }
    /* A file as long as its own header says (AVI's RIFF size, Matroska's segment size) is
       whole: a header frame count or duration above what its packets hold is then the
       container's way (opencv-doc's tree.avi: the header counts 444 frames of 15 frames/s, the
       demuxer gives its 68 packets, the file is all there), not a cut. */
    if (in->header_bytes > 0 && in->file_bytes >= in->header_bytes) by_count = by_duration = 0;
    if (v->cut_pk >= 0) {
        /* frames decoded from the cut packet on are not whole: keep the display-order
           prefix before the first of them */
        for (int d = v->cut_pk; d < v->n_pk; d++)
            if (v->pk[d].frame >= 0 && v->pk[d].frame < in->usable_frames)
                in->usable_frames = v->pk[d].frame;
        const vpacket *p = &v->pk[v->cut_pk];
        snprintf(in->cut, sizeof in->cut, "the file ends inside video packet %d (frame %d, "
                 "%d of its bytes at byte %lld are there)", v->cut_pk, p->frame, p->size,
                 (long long)p->pos);
    } else if (by_count) {
        snprintf(in->cut, sizeof in->cut, "the header announces %d frames, the file holds %d "
                 "packets of the stream", in->header_frames, v->n_slots);
    } else if (by_duration) {
        snprintf(in->cut, sizeof in->cut, "the header announces %.3f s of video, the frames in "
                 "the file cover %.3f s", dur, in->duration);
    } else if (in->header_bytes > 0 && in->file_bytes >= 0 && in->file_bytes < in->header_bytes) {
        snprintf(in->cut, sizeof in->cut, "the header says the file has %lld bytes, it has "
                 "%lld", in->header_bytes, in->file_bytes);
    }
    /* An AVI keeps its keyframe flags in the index at its end (idx1); cut off, the demuxer
       flags every packet a keyframe where no parser reads the bitstream (FFV1 with a GOP:
       a read that seeks to a packet in mid-GOP fails, "Cannot decode non-keyframe"). So in a
       cut file whose every packet says keyframe, with a codec that is not intra-only, the
       flags are not believed: reads decode from the first keyframe (slow for a long clip,
       right). */
    const AVCodecDescriptor *cd = avcodec_descriptor_get(st->codecpar->codec_id);
    if (in->cut[0] && v->n_keys > 1 && v->n_keys == n &&
        !(cd && (cd->props & AV_CODEC_PROP_INTRA_ONLY)))
        v->n_keys = 1;
    /* A codec that reorders (B-frames) displays a picture at most video_delay places before
       its place in decode order: a missing packet may display among the last video_delay
       frames kept (before them, none can). */
    int delay = st->codecpar->video_delay;
    if (in->cut[0] && delay > 0)
        in->usable_frames = in->usable_frames > delay ? in->usable_frames - delay : 0;
}

pf_video *pf_video_open(const char *path, char *err, size_t errlen) {
    char m[128];
    pf_video *v = calloc(1, sizeof *v);
    if (!v || !(v->path = strdup(path))) { free(v); fail(err, errlen, "%s: out of memory", path); return NULL; }
    pthread_once(&log_once, install_log);
    v->sws_fmt = -1;
    v->cur = -1;
    v->pkt = av_packet_alloc();
    v->frame = av_frame_alloc();
    v->rgb = av_frame_alloc();
    if (!v->pkt || !v->frame || !v->rgb) { fail(err, errlen, "%s: out of memory", path); goto bad; }
    if (open_input(v, err, errlen) < 0) goto bad;

    AVStream *st = v->fmt->streams[v->stream];
    const AVCodec *codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!codec) {
        fail(err, errlen, "%s: no decoder for codec '%s'", path, avcodec_get_name(st->codecpar->codec_id));
        goto bad;
    }
    v->dec = avcodec_alloc_context3(codec);
    if (!v->dec) { fail(err, errlen, "%s: out of memory", path); goto bad; }
    int rc = avcodec_parameters_to_context(v->dec, st->codecpar);
    v->dec->thread_count = 1;                    /* one reader per thread (video.h) */
    /* report corrupt data, do not conceal it: CRCCHECK makes decoders act on a checksum
       that fails (FFV1 slices), EXPLODE turns what they detect into an error */
    v->dec->err_recognition |= AV_EF_CRCCHECK | AV_EF_EXPLODE;
    v->dec->pkt_timebase = st->time_base;
    if (rc >= 0) rc = avcodec_open2(v->dec, codec, NULL);
    if (rc < 0) { fail(err, errlen, "%s: cannot open the %s decoder (%s)", path, codec->name, av_msg(rc, m, sizeof m)); goto bad; }
    if (st->codecpar->width <= 0 || st->codecpar->height <= 0) {
        fail(err, errlen, "%s: video stream has no picture size", path);
        goto bad;
    }
    v->info.w = st->codecpar->width;
    v->info.h = st->codecpar->height;
    snprintf(v->info.codec, sizeof v->info.codec, "%s", codec->name);
    snprintf(v->info.container, sizeof v->info.container, "%s", v->fmt->iformat->name);
    AVRational fr = av_guess_frame_rate(v->fmt, st, NULL);
    v->info.fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 0;

    if (build_index(v, err, errlen) < 0) goto bad;
    if (v->info.n_frames == 0) { fail(err, errlen, "%s: no video frames", path); goto bad; }
    double last = pf_video_frame_time(v, v->info.n_frames - 1);
    v->info.duration = last + (v->info.fps > 0 ? 1.0 / v->info.fps : 0);
    check_cut(v);
    return v;
bad:
    pf_video_destroy(&v);
    return NULL;
}

void pf_video_destroy(pf_video **self) {
    if (!self || !*self) return;
    pf_video *v = *self;
    sws_freeContext(v->sws);
    av_frame_free(&v->rgb);
    av_frame_free(&v->frame);
    av_packet_free(&v->pkt);
    avcodec_free_context(&v->dec);
    avformat_close_input(&v->fmt);
    free(v->pk);
    free(v->frame_ts);
    free(v->frame_pk);
    free(v->keys);
    free(v->key_frame);
    free(v->path);
    free(v);
    *self = NULL;
}

pf_video_info pf_video_get_info(const pf_video *self) { return self->info; }

pf_video_stats pf_video_get_stats(const pf_video *self) { return self->stats; }

int pf_video_position(const pf_video *self) { return self->positioned ? self->cur : -1; }

double pf_video_frame_time(const pf_video *v, int i) {
    if (i < 0 || i >= v->info.n_frames) return -1;
    return (double)(v->frame_ts[i] - v->frame_ts[0]) * av_q2d(v->tb);
}

/* The keyframe to decode frame i from, as an entry of keys[]. pts mode: the last keyframe at
   or before frame i's packet in decode order whose own picture displays no later than frame i
   (a leading picture of an open GOP needs the keyframe before). dts mode: the last keyframe
   whose display index is known and at most i (every picture displaying after a keyframe is
   decoded after it). */
static int key_for(const pf_video *v, int i) {
    int d = v->reorders ? v->n_pk : v->frame_pk[i];   /* frame i's packet, if known */
    int lo = 0, hi = v->n_keys;           /* first key with decode index > d */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v->keys[mid] <= d) lo = mid + 1; else hi = mid;
    }
    for (int k = lo - 1; k >= 0; k--)
        if (v->key_frame[k] >= 0 && v->key_frame[k] <= i) return k;
    return 0;                             /* the first keyframe is frame 0 */
}

/* keys[] entry whose packet sits at byte `pos`, or -1 (needs rising positions). */
static int key_at_pos(const pf_video *v, int64_t pos) {
    if (!v->pos_rising || pos < 0) return -1;
    int lo = 0, hi = v->n_keys;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v->pk[v->keys[mid]].pos < pos) lo = mid + 1; else hi = mid;
    }
    return lo < v->n_keys && v->pk[v->keys[lo]].pos == pos ? lo : -1;
}

/* Does packet p (just read) sit before (-1), at (0) or after (1) index packet d? A packet
   at d's place but of another size (2) is a fragment: right after a seek, a parsing demuxer
   (MPEG-PS) may return the tail of a picture cut at the seek point as a packet of its own. */
static int compare_packet(const pf_video *v, const AVPacket *p, int d) {
    const vpacket *k = &v->pk[d];
    int c;
    if (v->pos_rising && p->pos >= 0) {
        c = p->pos < k->pos ? -1 : p->pos > k->pos;
    } else {
        int64_t a = v->use_pts ? p->pts : p->dts, b = pk_ts(v, k);
        if (a == AV_NOPTS_VALUE) return -1;
        c = a < b ? -1 : a > b;   /* before/after in time only: enough to find K */
    }
    return c == 0 && p->size != k->size ? 2 : c;
}

/* Seek the demuxer backwards to a time at or before packet d. Returns 0, or -1 if it cannot. */
static int seek_before(pf_video *v, int d) {
    int64_t ts = v->pk[d].dts;
    if (ts == AV_NOPTS_VALUE || (v->pk[d].pts != AV_NOPTS_VALUE && v->pk[d].pts < ts))
        ts = v->pk[d].pts;
    if (ts == AV_NOPTS_VALUE) return -1;
    return av_seek_frame(v->fmt, v->stream, ts, AVSEEK_FLAG_BACKWARD) < 0 ? -1 : 0;
}

/* Position the demuxer so the next packet to send is keys[key]'s packet K, and flush the
   decoder. Tries a seek to K's time, then to earlier keyframes' times when the seek lands
   after K or on a fragment of it, then reopening the file and reading from the start.
   Returns 1 (K is in v->pkt, not yet sent) or -1. */
static int seek_to(pf_video *v, int key, char *err, size_t errlen) {
    int d = v->keys[key], from = key, restarted = 0;
    v->positioned = 0;
    v->stats.seeks++;
    avcodec_flush_buffers(v->dec);
    int rc = seek_before(v, d);
    for (;;) {
        if (rc < 0) {                     /* no seek possible: reread from the start */
            if (restarted)
                return fail(err, errlen, "%s: keyframe packet %d (byte %lld) not found on "
                            "rereading the file", v->path, d, (long long)v->pk[d].pos);
            restarted = 1;
            avformat_close_input(&v->fmt);
            if (open_input(v, err, errlen) < 0) return -1;
        }
        int c;
        for (;;) {
            rc = av_read_frame(v->fmt, v->pkt);
            if (rc < 0) { c = 1; break; }
            if (!wanted(v, v->pkt)) { av_packet_unref(v->pkt); continue; }
            c = compare_packet(v, v->pkt, d);
            if (c == 0) break;
            av_packet_unref(v->pkt);
            if (c > 0) break;
        }
        if (c == 0) break;
        /* landed after K, or on a fragment: start from an earlier keyframe's time */
        rc = !restarted && from > 0 ? seek_before(v, v->keys[--from]) : -1;
    }
    v->seek_key = key;
    v->next_pk = d;                       /* K is read but not yet sent */
    v->anchored = 0;
    v->draining = 0;
    v->cur = -1;
    v->positioned = 1;
    return 1;
}

/* The index of the picture just decoded, -1 for one that is not a frame (a leading picture
   after a seek, a picture outside the index), or -2 with err when the counting disagrees
   with what was learnt before. */
static int identify(pf_video *v, const AVFrame *f, char *err, size_t errlen) {
    if (v->use_pts) {
        int64_t t = f->pts;
        int lo = 0, hi = v->info.n_frames;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (v->frame_ts[mid] < t) lo = mid + 1; else hi = mid;
        }
        return lo < v->info.n_frames && v->frame_ts[lo] == t ? lo : -1;
    }
    if (!v->anchored) {   /* pictures before the seek keyframe's own are leading ones */
        const vpacket *k = &v->pk[v->keys[v->seek_key]];
        if (k->pos >= 0 && f->pkt_pos >= 0 && f->pkt_pos != k->pos) return -1;
        v->anchored = 1;
        v->next_ord = v->key_frame[v->seek_key];
    }
    int idx = v->next_ord++, key = key_at_pos(v, f->pkt_pos);
    if (key >= 0 && v->key_frame[key] < 0) v->key_frame[key] = idx;   /* learnt */
    if (key >= 0 && v->key_frame[key] != idx) {
        fail(err, errlen, "%s: frame %d: the keyframe at byte %lld came out as frame %d before "
             "and now as frame %d (frames lost or gained in decoding)", v->path, idx,
             (long long)f->pkt_pos, v->key_frame[key], idx);
        return -2;
    }
    return idx;
}

/* The frame's YCbCr matrix and range into the converter, per frame, as FFmpeg 5.1's vf_scale
   does with its default in_color_matrix "auto" (libavfilter/vf_scale.c, scale_frame and
   parse_yuv_type): the matrix of the frame's colorspace tag (BT.709, FCC, BT.470BG,
   SMPTE 170M, SMPTE 240M, BT.2020), BT.601 for an untagged frame or any other tag; the tagged
   range (full or limited), else the pixel format's (yuvj formats full). Without this a
   BT.709-tagged HD video would be converted with BT.601 and its colours shifted. */
static void set_colorspace(struct SwsContext *sws, const AVFrame *f) {
    int *inv, *tab, src_full, dst_full, bright, contrast, sat;
    sws_getColorspaceDetails(sws, &inv, &src_full, &tab, &dst_full, &bright, &contrast, &sat);
    int cs = f->colorspace;
    if (cs < 1 || cs > 10 || cs == AVCOL_SPC_YCGCO) cs = AVCOL_SPC_BT470BG;
    const int *matrix = sws_getCoefficients(cs);
    if (f->color_range != AVCOL_RANGE_UNSPECIFIED) src_full = f->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws, matrix, src_full, matrix, dst_full, bright, contrast, sat);
}

/* Convert the decoded picture to RGB8 into *out (as `ffmpeg -pix_fmt rgb24`, video.h). */
static int to_rgb(pf_video *v, int i, pf_image *out, char *err, size_t errlen) {
    AVFrame *f = v->frame;
    int w = v->info.w, h = v->info.h;
    if (f->width != w || f->height != h)
        return fail(err, errlen, "%s: frame %d: picture is %dx%d, the stream %dx%d", v->path, i,
                    f->width, f->height, w, h);
    if (f->format != v->sws_fmt) {
        sws_freeContext(v->sws);
        v->sws = sws_alloc_context();
        if (!v->sws) return fail(err, errlen, "%s: out of memory", v->path);
        /* the options vf_scale gives it for the ffmpeg CLI's default conversion (FFmpeg 5.1
           fftools: sws flags "bicubic"; vf_scale: MPEG-2 vertical chroma position for
           yuv420p input) */
        av_opt_set_int(v->sws, "srcw", w, 0);
        av_opt_set_int(v->sws, "srch", h, 0);
        av_opt_set_int(v->sws, "src_format", f->format, 0);
        av_opt_set_int(v->sws, "dstw", w, 0);
        av_opt_set_int(v->sws, "dsth", h, 0);
        av_opt_set_int(v->sws, "dst_format", AV_PIX_FMT_RGB24, 0);
        av_opt_set_int(v->sws, "sws_flags", SWS_BICUBIC, 0);
        if (f->format == AV_PIX_FMT_YUV420P) av_opt_set_int(v->sws, "src_v_chr_pos", 128, 0);
        if (sws_init_context(v->sws, NULL, NULL) < 0) {
            sws_freeContext(v->sws);
            v->sws = NULL;
            v->sws_fmt = -1;
            return fail(err, errlen, "%s: frame %d: cannot convert pixel format %s to RGB",
                        v->path, i, av_get_pix_fmt_name(f->format));
        }
        v->sws_fmt = f->format;
        av_frame_unref(v->rgb);
        v->rgb->format = AV_PIX_FMT_RGB24;
        v->rgb->width = w;
        v->rgb->height = h;
        if (av_frame_get_buffer(v->rgb, 0) < 0) {
            v->sws_fmt = -1;
            return fail(err, errlen, "%s: out of memory", v->path);
        }
    }
    set_colorspace(v->sws, f);
    sws_scale(v->sws, (const uint8_t *const *)f->data, f->linesize, 0, h, v->rgb->data,
              v->rgb->linesize);
    size_t row = (size_t)w * 3;
    out->data = malloc(row * (size_t)h);
    if (!out->data) return fail(err, errlen, "%s: out of memory", v->path);
    for (int y = 0; y < h; y++) memcpy(out->data + row * y, v->rgb->data[0] + (size_t)v->rgb->linesize[0] * y, row);
    out->w = w;
    out->h = h;
    return 0;
}

/* Decode forward until frame i comes out. `pending`: v->pkt holds a packet to send first. */
static int decode_until(pf_video *v, int i, int pending, pf_image *out, char *err, size_t errlen) {
    char m[128];
    for (;;) {
        int rc = avcodec_receive_frame(v->dec, v->frame);
        if (rc == 0) {
            v->stats.decoded++;
            int idx = identify(v, v->frame, err, errlen);
            if (idx == -2) { av_frame_unref(v->frame); return -1; }
            int logged = log_errors;   /* errors since the previous picture: this one's */
            log_errors = 0;
            if (idx < 0) { av_frame_unref(v->frame); continue; }
            v->cur = idx;
            if ((v->frame->flags & AV_FRAME_FLAG_CORRUPT) || v->frame->decode_error_flags ||
                logged) {
                av_frame_unref(v->frame);
                if (idx != i) v->passed_corrupt = idx;
                return fail(err, errlen, "%s: frame %d: corrupt picture (%s%s%s)%s", v->path,
                            idx, logged ? "the decoder reports: " : "the decoder flags it",
                            logged ? log_first : "", logged > 1 ? ", ..." : "",
                            idx == i ? "" : " on the way to the frame asked for");
            }
            if (idx > i) {
                av_frame_unref(v->frame);
                return fail(err, errlen, "%s: frame %d: the decoder produced no picture for it "
                            "(frame %d came next)", v->path, i, idx);
            }
            if (idx < i) { av_frame_unref(v->frame); continue; }
            rc = to_rgb(v, i, out, err, errlen);
            av_frame_unref(v->frame);
            return rc;
        }
        if (rc == AVERROR_EOF)
            return fail(err, errlen, "%s: frame %d: the stream ends before it (last picture: "
                        "frame %d)", v->path, i, v->cur);
        if (rc != AVERROR(EAGAIN))
            return fail(err, errlen, "%s: frame %d: corrupt data (%s)", v->path, i,
                        av_msg(rc, m, sizeof m));
        if (!pending) {           /* decoder wants input: read the next packet */
            if (v->draining)
                return fail(err, errlen, "%s: frame %d: decoder stalled at end of file", v->path, i);
            for (;;) {
                rc = av_read_frame(v->fmt, v->pkt);
                if (rc < 0 || wanted(v, v->pkt)) break;
                av_packet_unref(v->pkt);
            }
            if (rc == AVERROR_EOF) {
                v->draining = 1;
                rc = avcodec_send_packet(v->dec, NULL);
                if (rc < 0)
                    return fail(err, errlen, "%s: frame %d: corrupt data at end of stream (%s)",
                                v->path, i, av_msg(rc, m, sizeof m));
                continue;
            }
            if (rc < 0)
                return fail(err, errlen, "%s: frame %d: reading the file failed (%s)", v->path,
                            i, av_msg(rc, m, sizeof m));
        }
        pending = 0;
        int64_t pos = v->pkt->pos;
        if (v->next_pk < v->n_pk) {
            /* after a seek a parsing demuxer may stamp packets differently (MPEG-PS gave K no
               pts): the index's timestamps are the ones pictures are named by */
            const vpacket *e = &v->pk[v->next_pk];
            int size = v->pkt->size;
            if (e->size != size || (e->pos >= 0 && pos >= 0 && e->pos != pos)) {
                av_packet_unref(v->pkt);
                return fail(err, errlen, "%s: frame %d: video packet %d reads back as %d bytes "
                            "at byte %lld, indexed as %d bytes at byte %lld", v->path, i,
                            v->next_pk, size, (long long)pos, e->size, (long long)e->pos);
            }
            v->pkt->pts = e->pts;
            v->pkt->dts = e->dts;
        }
        rc = avcodec_send_packet(v->dec, v->pkt);
        av_packet_unref(v->pkt);
        v->next_pk++;
        if (rc < 0)
            return fail(err, errlen, "%s: frame %d: corrupt data in video packet %d (byte "
                        "%lld): %s", v->path, i, v->next_pk - 1, (long long)pos,
                        av_msg(rc, m, sizeof m));
    }
}

int pf_video_read(pf_video *v, int i, pf_image *out, char *err, size_t errlen) {
    out->w = out->h = 0;
    out->data = NULL;
    if (i < 0 || i >= v->info.n_frames)
        return fail(err, errlen, "%s: frame %d out of range (the video has %d frames, 0..%d)",
                    v->path, i, v->info.n_frames, v->info.n_frames - 1);
    int k = key_for(v, i), pending = 0;
    int forward = v->positioned && v->cur >= 0 && i > v->cur &&
                  (i - v->cur <= PF_VIDEO_FORWARD_WINDOW || v->keys[k] < v->next_pk);
    if (!forward) {
        pending = seek_to(v, k, err, errlen);
        if (pending < 0) return -1;
    }
    log_watch = v->dec;
    log_errors = 0;
    v->passed_corrupt = -1;
    int rc = decode_until(v, i, pending, out, err, errlen);
    if (rc < 0 && forward && v->passed_corrupt >= 0 &&
        v->keys[k] > v->frame_pk[v->passed_corrupt]) {
        /* a corrupt picture between where the decoder was and frame i, but frame i's
           keyframe comes after it: decoding from that keyframe does not pass the damage */
        log_errors = 0;
        rc = seek_to(v, k, err, errlen) < 0 ? -1 : decode_until(v, i, 1, out, err, errlen);
    }
    log_watch = NULL;
    if (rc < 0) {
        v->positioned = 0;
        return -1;
    }
    return 0;
}
