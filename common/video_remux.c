/*  video_remux — FFmpeg encoder + stream-copying muxer and the whole-video upscaling loop
    behind common/video_remux.h. */
#include "common/video_remux.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/frame_indices.h"
#include "common/image.h"
#include "common/video.h"
#include "common/video_write.h"

struct pf_video_out {
    char path[4096], temp[4096];
    AVFormatContext *in;        /* the source, demuxed again for its audio / subtitle packets */
    AVFormatContext *fmt;       /* the output */
    AVCodecContext *enc;
    AVStream *st;               /* the output's video stream */
    int *map;                   /* source stream index -> output stream index, -1: not copied */
    int64_t in_start;           /* the source video stream's start, AV_TIME_BASE units: time 0
                                   of the output (earlier packets go negative; the muxer shifts
                                   every stream alike, avoid_negative_ts) */
    struct SwsContext *sws;
    AVFrame *frame;
    AVPacket *pkt, *pending;    /* pending: a source packet read but not yet due */
    int have_pending, in_eof;
    int w, h, vfr, opened, header, failed, quiet;
    int64_t next_pts, last_pts;
};

static int fail(pf_video_out *vo, const char *what, int averr, char *err, size_t errlen) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    if (averr) av_strerror(averr, msg, sizeof msg);
    snprintf(err, errlen, "%s: %s%s%s", vo->path, what, averr ? ": " : "", msg);
    vo->failed = 1;
    return -1;
}

pf_video_out_opts pf_video_out_opts_default(void) {
    return (pf_video_out_opts){ .codec = NULL, .crf = -1, .quality = -1 };
}

/* "<dir>/<stem>.part.<ext>" for "<dir>/<stem>.<ext>" (no extension: "<name>.part"). */
static void temp_name(const char *path, char *out, size_t len) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path))
        snprintf(out, len, "%s.part", path);
    else
        snprintf(out, len, "%.*s.part%s", (int)(dot - path), path, dot);
}

/* Open the source again and decide which of its streams are copied. */
static int open_source(pf_video_out *vo, const char *source, char *err, size_t errlen) {
    int rc = avformat_open_input(&vo->in, source, NULL, NULL);
    if (rc >= 0) rc = avformat_find_stream_info(vo->in, NULL);
    if (rc < 0) {
        char msg[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(rc, msg, sizeof msg);
        snprintf(err, errlen, "%s: cannot read the source: %s", source, msg);
        vo->failed = 1;
        return -1;
    }
    vo->in_start = vo->in->start_time == AV_NOPTS_VALUE ? 0 : vo->in->start_time;
    vo->map = malloc(vo->in->nb_streams * sizeof *vo->map);
    if (!vo->map) return fail(vo, "out of memory", 0, err, errlen);
    for (unsigned i = 0; i < vo->in->nb_streams; i++) vo->map[i] = -1;
    return 0;
}

/* Add an output stream for every audio and subtitle stream of the source. */
static int add_copies(pf_video_out *vo, int video_index, int drop_unsupported, char *err,
                      size_t errlen) {
    for (unsigned i = 0; i < vo->in->nb_streams; i++) {
        AVStream *is = vo->in->streams[i];
        enum AVMediaType type = is->codecpar->codec_type;
        const char *tname = av_get_media_type_string(type), *cname =
            avcodec_get_name(is->codecpar->codec_id);
        if ((int)i == video_index) continue;
        int attachment = type == AVMEDIA_TYPE_ATTACHMENT &&
                         !strcmp(vo->fmt->oformat->name, "matroska");
        if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE && !attachment) {
            if (!vo->quiet)
                fprintf(stderr, "%s: source stream %u (%s, %s) not copied: only audio, "
                        "subtitles and (into .mkv) attachments are\n", vo->path, i,
                        tname ? tname : "other", cname);
            continue;
        }
        if (!attachment && avformat_query_codec(vo->fmt->oformat, is->codecpar->codec_id,
                                                FF_COMPLIANCE_NORMAL) != 1) {
            char what[300];
            snprintf(what, sizeof what, "the %s container cannot hold source stream %u (%s, %s)",
                     vo->fmt->oformat->name, i, tname, cname);
            if (!drop_unsupported) {
                size_t n = strlen(what);
                snprintf(what + n, sizeof what - n, "; choose a container that holds it, or "
                         "drop it (drop_unsupported: pixflow upscale --drop-unsupported-streams)");
                return fail(vo, what, 0, err, errlen);
            }
            if (!vo->quiet) fprintf(stderr, "%s: warning: %s: dropped\n", vo->path, what);
            continue;
        }
        AVStream *os = avformat_new_stream(vo->fmt, NULL);
        if (!os) return fail(vo, "out of memory", 0, err, errlen);
        int rc = avcodec_parameters_copy(os->codecpar, is->codecpar);
        if (rc < 0) return fail(vo, "copying stream parameters", rc, err, errlen);
        os->codecpar->codec_tag = 0;    /* the output container's own tag */
        os->time_base = is->time_base;
        os->disposition = is->disposition;
        av_dict_copy(&os->metadata, is->metadata, 0);
        vo->map[i] = os->index;
    }
    return 0;
}

/* The source's chapters, times shifted like the packets' (as the ffmpeg CLI's copy_chapters). */
static int copy_chapters(pf_video_out *vo, char *err, size_t errlen) {
    for (unsigned i = 0; i < vo->in->nb_chapters; i++) {
        const AVChapter *ic = vo->in->chapters[i];
        AVChapter *oc = av_mallocz(sizeof *oc);
        if (!oc) return fail(vo, "out of memory", 0, err, errlen);
        int64_t shift = av_rescale_q(vo->in_start, AV_TIME_BASE_Q, ic->time_base);
        *oc = (AVChapter){ .id = ic->id, .time_base = ic->time_base,
                           .start = ic->start - shift, .end = ic->end - shift };
        av_dict_copy(&oc->metadata, ic->metadata, 0);
        int n = (int)vo->fmt->nb_chapters;
        if (av_dynarray_add_nofree(&vo->fmt->chapters, &n, oc) < 0) {
            av_dict_free(&oc->metadata);
            av_free(oc);
            return fail(vo, "out of memory", 0, err, errlen);
        }
        vo->fmt->nb_chapters = (unsigned)n;
    }
    return 0;
}

/* The encoder: by name (NULL: libx264 if present, else ffv1), rate or time base, quality,
   colour tags. */
static int open_encoder(pf_video_out *vo, const pf_video_out_opts *o, AVRational rate,
                        const AVStream *vs, char *err, size_t errlen) {
    const char *name = o->codec && *o->codec ? o->codec : NULL;
    const AVCodec *c = name ? avcodec_find_encoder_by_name(name)
                            : avcodec_find_encoder_by_name("libx264");
    if (!name && !c) c = avcodec_find_encoder_by_name("ffv1");
    if (!c || c->type != AVMEDIA_TYPE_VIDEO) {
        char what[200];
        snprintf(what, sizeof what, "no video encoder '%s' in this FFmpeg (try libx264, ffv1)",
                 name);
        return fail(vo, what, 0, err, errlen);
    }
    if (!name && !vo->quiet)
        fprintf(stderr, "%s: encoder %s (the default: %s)\n", vo->path, c->name,
                strcmp(c->name, "libx264") ? "this FFmpeg has no libx264" : "H.264");
    int x26x = !strcmp(c->name, "libx264") || !strcmp(c->name, "libx265");
    if (o->crf >= 0 && !x26x)
        return fail(vo, "crf applies to libx264 and libx265 only (use quality or bit_rate)", 0,
                    err, errlen);
    if (o->quality >= 1 && x26x)
        return fail(vo, "quality (a fixed quantiser, ffmpeg's -q:v) does not apply to libx264 "
                    "and libx265: use crf or bit_rate", 0, err, errlen);
    if (avformat_query_codec(vo->fmt->oformat, c->id, FF_COMPLIANCE_NORMAL) != 1) {
        char what[200];
        snprintf(what, sizeof what, "the %s container does not take %s", vo->fmt->oformat->name,
                 c->name);
        return fail(vo, what, 0, err, errlen);
    }
    vo->st = avformat_new_stream(vo->fmt, NULL);
    vo->enc = avcodec_alloc_context3(c);
    if (!vo->st || !vo->enc) return fail(vo, "out of memory", 0, err, errlen);
    AVCodecContext *e = vo->enc;
    e->width = vo->w;
    e->height = vo->h;
    e->pix_fmt = pf_video_write_pix_fmt(c);
    e->framerate = rate;
    e->time_base = vo->vfr ? vs->time_base : av_inv_q(rate);
    e->gop_size = 12;
    if (o->bit_rate > 0) e->bit_rate = o->bit_rate;
    if (o->quality >= 1) {
        e->flags |= AV_CODEC_FLAG_QSCALE;
        e->global_quality = FF_QP2LAMBDA * o->quality;
    }
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(e->pix_fmt);
    if (d && (((vo->w | vo->h) & 1) && (d->log2_chroma_w || d->log2_chroma_h))) {
        char what[200];
        snprintf(what, sizeof what, "%s encodes %s, which needs an even width and height, not "
                 "%dx%d (use ffv1)", c->name, d->name, vo->w, vo->h);
        return fail(vo, what, 0, err, errlen);
    }
    if (d && (d->flags & AV_PIX_FMT_FLAG_RGB)) {
        e->colorspace = AVCOL_SPC_RGB;
    } else {
        e->colorspace = AVCOL_SPC_SMPTE170M;    /* BT.601, as the conversion below */
        e->color_range = AVCOL_RANGE_MPEG;
    }
    e->color_primaries = vs->codecpar->color_primaries;
    e->color_trc = vs->codecpar->color_trc;
    if (vo->fmt->oformat->flags & AVFMT_GLOBALHEADER) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary *opt = NULL;
    if (o->crf >= 0) av_dict_set_int(&opt, "crf", o->crf, 0);
    int rc = avcodec_open2(e, c, &opt);
    av_dict_free(&opt);
    if (rc < 0) return fail(vo, "opening the encoder", rc, err, errlen);
    if ((rc = avcodec_parameters_from_context(vo->st->codecpar, e)) < 0)
        return fail(vo, "stream parameters", rc, err, errlen);
    vo->st->time_base = e->time_base;
    vo->st->disposition = vs->disposition;
    const char *keep[] = { "language", "title" };   /* not the source's encoder or duration */
    for (int k = 0; k < 2; k++) {
        const AVDictionaryEntry *t = av_dict_get(vs->metadata, keep[k], NULL, 0);
        if (t) av_dict_set(&vo->st->metadata, keep[k], t->value, 0);
    }
    vo->st->avg_frame_rate = rate;
    vo->st->r_frame_rate = rate;
    return 0;
}

/* The RGB24 -> encoder format conversion: BT.601, full-range RGB to limited-range YUV. */
static int open_convert(pf_video_out *vo, char *err, size_t errlen) {
    AVCodecContext *e = vo->enc;
    vo->frame = av_frame_alloc();
    vo->pkt = av_packet_alloc();
    vo->pending = av_packet_alloc();
    if (!vo->frame || !vo->pkt || !vo->pending) return fail(vo, "out of memory", 0, err, errlen);
    vo->frame->format = e->pix_fmt;
    vo->frame->width = vo->w;
    vo->frame->height = vo->h;
    int rc = av_frame_get_buffer(vo->frame, 0);
    if (rc < 0) return fail(vo, "frame buffer", rc, err, errlen);
    vo->sws = sws_getContext(vo->w, vo->h, AV_PIX_FMT_RGB24, vo->w, vo->h, e->pix_fmt,
                             SWS_BICUBIC, NULL, NULL, NULL);
    if (!vo->sws) return fail(vo, "no RGB24 conversion to the encoder's format", 0, err, errlen);
    const int *bt601 = sws_getCoefficients(SWS_CS_ITU601);
    sws_setColorspaceDetails(vo->sws, bt601, 1, bt601, 0, 0, 1 << 16, 1 << 16);
    return 0;
}

pf_video_out *pf_video_out_open(const char *path, const char *source, int w, int h, int vfr,
                                const pf_video_out_opts *o, char *err, size_t errlen) {
    pf_video_out_opts def = pf_video_out_opts_default();
    if (!o) o = &def;
    pf_video_out *vo = calloc(1, sizeof *vo);
    if (!vo) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(vo->path, sizeof vo->path, "%s", path);
    temp_name(path, vo->temp, sizeof vo->temp);
    vo->w = w;
    vo->h = h;
    vo->vfr = vfr;
    vo->quiet = o->quiet;
    vo->last_pts = AV_NOPTS_VALUE;
    int rc = 0, vi;
    if (w < 1 || h < 1) {
        fail(vo, "bad frame size", 0, err, errlen);
        goto bad;
    }
    if (open_source(vo, source, err, errlen)) goto bad;
    vi = av_find_best_stream(vo->in, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (vi < 0) {
        snprintf(err, errlen, "%s: no video stream", source);
        goto bad;
    }
    AVStream *vs = vo->in->streams[vi];
    AVRational rate = av_guess_frame_rate(vo->in, vs, NULL);
    if (rate.num <= 0 || rate.den <= 0) rate = (AVRational){ 25, 1 };
    if (vs->start_time != AV_NOPTS_VALUE)
        vo->in_start = av_rescale_q(vs->start_time, vs->time_base, AV_TIME_BASE_Q);
    /* the container from the final name; the bytes go to the temporary one */
    if ((rc = avformat_alloc_output_context2(&vo->fmt, NULL, NULL, path)) < 0 || !vo->fmt) {
        fail(vo, "no container for this file name (use .mkv, .mp4)", rc, err, errlen);
        goto bad;
    }
    if (open_encoder(vo, o, rate, vs, err, errlen) || open_convert(vo, err, errlen) ||
        add_copies(vo, vi, o->drop_unsupported, err, errlen) || copy_chapters(vo, err, errlen))
        goto bad;
    av_dict_copy(&vo->fmt->metadata, vo->in->metadata, 0);    /* title, ...: not the encoder */
    av_dict_set(&vo->fmt->metadata, "encoder", NULL, 0);
    if (!(vo->fmt->oformat->flags & AVFMT_NOFILE)) {
        vo->opened = 1;
        if ((rc = avio_open(&vo->fmt->pb, vo->temp, AVIO_FLAG_WRITE)) < 0) {
            char what[4200];
            snprintf(what, sizeof what, "cannot create %s", vo->temp);
            fail(vo, what, rc, err, errlen);
            goto bad;
        }
    }
    if ((rc = avformat_write_header(vo->fmt, NULL)) < 0) {
        fail(vo, rc == AVERROR_EXPERIMENTAL ? "the container takes a copied stream only as "
             "experimental in this FFmpeg (FLAC in .mp4 in FFmpeg 5.1): use .mkv"
             : "writing the header", rc, err, errlen);
        goto bad;
    }
    vo->header = 1;
    return vo;
bad: {
        char ignore[8];
        pf_video_out_close(&vo, 0, ignore, sizeof ignore);
        return NULL;
    }
}

/* Write the source packets of copied streams due at or before `t_abs` seconds (relative to
   the source's start); all of them when t_abs is INFINITY. */
static int copy_until(pf_video_out *vo, double t_abs, char *err, size_t errlen) {
    for (;;) {
        if (!vo->have_pending) {
            if (vo->in_eof) return 0;
            int rc = av_read_frame(vo->in, vo->pending);
            if (rc == AVERROR_EOF) {
                vo->in_eof = 1;
                return 0;
            }
            if (rc < 0) return fail(vo, "reading the source's packets", rc, err, errlen);
            if (vo->map[vo->pending->stream_index] < 0) {
                av_packet_unref(vo->pending);
                continue;
            }
            vo->have_pending = 1;
        }
        AVPacket *p = vo->pending;
        AVStream *is = vo->in->streams[p->stream_index];
        int64_t ts = p->dts != AV_NOPTS_VALUE ? p->dts : p->pts;
        int64_t shift = av_rescale_q(vo->in_start, AV_TIME_BASE_Q, is->time_base);
        if (ts != AV_NOPTS_VALUE && (ts - shift) * av_q2d(is->time_base) > t_abs) return 0;
        if (p->pts != AV_NOPTS_VALUE) p->pts -= shift;
        if (p->dts != AV_NOPTS_VALUE) p->dts -= shift;
        AVStream *os = vo->fmt->streams[vo->map[p->stream_index]];
        av_packet_rescale_ts(p, is->time_base, os->time_base);
        p->stream_index = os->index;
        p->pos = -1;
        vo->have_pending = 0;
        int rc = av_interleaved_write_frame(vo->fmt, p);   /* takes the packet's data */
        if (rc < 0) return fail(vo, "writing a copied packet", rc, err, errlen);
    }
}

/* Send frame (NULL: flush) and write every packet the encoder gives back. */
static int drain(pf_video_out *vo, AVFrame *frame, char *err, size_t errlen) {
    int rc = avcodec_send_frame(vo->enc, frame);
    if (rc < 0) return fail(vo, "avcodec_send_frame", rc, err, errlen);
    for (;;) {
        rc = avcodec_receive_packet(vo->enc, vo->pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
        if (rc < 0) return fail(vo, "encoding", rc, err, errlen);
        av_packet_rescale_ts(vo->pkt, vo->enc->time_base, vo->st->time_base);
        vo->pkt->stream_index = vo->st->index;
        rc = av_interleaved_write_frame(vo->fmt, vo->pkt);
        if (rc < 0) return fail(vo, "writing a video packet", rc, err, errlen);
    }
}

int pf_video_out_frame(pf_video_out *vo, const uint8_t *rgb, double t, char *err,
                       size_t errlen) {
    if (vo->failed) return fail(vo, "the writer failed before", 0, err, errlen);
    double tb = av_q2d(vo->enc->time_base);
    int64_t pts = vo->vfr ? llrint(t / tb) : vo->next_pts;
    if (vo->last_pts != AV_NOPTS_VALUE && pts <= vo->last_pts) pts = vo->last_pts + 1;
    if (copy_until(vo, pts * tb, err, errlen)) return -1;
    int rc = av_frame_make_writable(vo->frame);
    if (rc < 0) return fail(vo, "frame buffer", rc, err, errlen);
    const uint8_t *src[1] = { rgb };
    int stride[1] = { 3 * vo->w };
    sws_scale(vo->sws, src, stride, 0, vo->h, vo->frame->data, vo->frame->linesize);
    vo->frame->pts = pts;
    vo->frame->quality = vo->enc->global_quality;  /* qscale: the mpegvideo encoders read it
                                                      per frame (as the ffmpeg CLI sets it) */
    vo->last_pts = pts;
    vo->next_pts++;
    if (drain(vo, vo->frame, err, errlen)) {
        size_t len = strlen(err);
        snprintf(err + len, errlen - len, " (frame %lld)", (long long)(vo->next_pts - 1));
        return -1;
    }
    return 0;
}

/* fsync the closed temporary file, rename it to the final name, fsync the folder (as
   pf_write_file_atomic does), so a crash leaves the old file or the whole new one. */
static int durable_rename(pf_video_out *vo, char *err, size_t errlen) {
    char what[4300];
    int fd = open(vo->temp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        snprintf(what, sizeof what, "fsync of %s failed: %s", vo->temp, strerror(errno));
        if (fd >= 0) close(fd);
        return fail(vo, what, 0, err, errlen);
    }
    close(fd);
    if (rename(vo->temp, vo->path) != 0) {
        snprintf(what, sizeof what, "cannot rename %s into place: %s", vo->temp,
                 strerror(errno));
        return fail(vo, what, 0, err, errlen);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", vo->path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);     /* best effort: the file is in place; some file systems say EINVAL */
        close(dfd);
    }
    return 0;
}

/* Flush, copy the rest, trailer, close the temporary file (commit only). */
static int finish(pf_video_out *vo, char *err, size_t errlen) {
    int rc;
    if (drain(vo, NULL, err, errlen) || copy_until(vo, INFINITY, err, errlen)) return -1;
    if ((rc = av_write_trailer(vo->fmt)) < 0)
        return fail(vo, "writing the trailer", rc, err, errlen);
    if (vo->fmt->pb && vo->fmt->pb->error < 0)
        return fail(vo, "writing the file", vo->fmt->pb->error, err, errlen);
    if (vo->fmt->pb && (rc = avio_closep(&vo->fmt->pb)) < 0)
        return fail(vo, "closing the file (disk full?)", rc, err, errlen);
    return durable_rename(vo, err, errlen);
}

int pf_video_out_close(pf_video_out **self, int commit, char *err, size_t errlen) {
    pf_video_out *vo = self ? *self : NULL;
    if (!vo) return 0;
    int rc = vo->failed || !commit || !vo->header ? -1 : finish(vo, err, errlen);
    if (rc && commit && !vo->failed) fail(vo, "not finished", 0, err, errlen);
    if (vo->fmt && vo->fmt->pb) avio_closep(&vo->fmt->pb);
    if (rc && vo->opened) unlink(vo->temp);
    sws_freeContext(vo->sws);
    av_frame_free(&vo->frame);
    av_packet_free(&vo->pkt);
    av_packet_free(&vo->pending);
    avcodec_free_context(&vo->enc);
    avformat_free_context(vo->fmt);
    avformat_close_input(&vo->in);
    free(vo->map);
    free(vo);
    *self = NULL;
    return commit ? rc : 0;
}

const char *pf_video_out_codec(const pf_video_out *vo) { return vo->enc->codec->name; }

const char *pf_video_out_pix_fmt(const pf_video_out *vo) {
    return av_get_pix_fmt_name(vo->enc->pix_fmt);
}

int pf_clip_windows(int n, int window, int overlap, int *start, int *len, int *own0, int *own1,
                    int max) {
    if (n < 1 || window < 1 || overlap < 0 || overlap >= window || max < 1) return -1;
    int k = 0;
    if (n <= window) {
        start[0] = 0;
        len[0] = n;
    } else {
        for (int s = 0;; s += window - overlap) {
            if (k == max) return -1;
            int last = s + window >= n;
            start[k] = last ? n - window : s;
            len[k] = window;
            k++;
            if (last) break;
        }
        k--;
    }
    for (int i = 0; i <= k; i++) {
        own0[i] = i ? own1[i - 1] : 0;
        /* the middle of the frames shared with the next window */
        own1[i] = i == k ? n : (start[i + 1] + start[i] + len[i] + 1) / 2;
    }
    return k + 1;
}

/* Whether the frame times are off a constant rate (more than a quarter period). */
static int is_vfr(const pf_video *v, int n, double fps) {
    if (fps <= 0) return 1;
    for (int i = 0; i < n; i++)
        if (fabs(pf_video_frame_time(v, i) * fps - i) > 0.25) return 1;
    return 0;
}

/* Read frames [from, to) of the source into in (slots from - base on). */
static int read_frames(pf_video *v, int from, int to, int base, uint8_t *in, size_t frame_px,
                       char *err, size_t errlen) {
    for (int f = from; f < to; f++) {
        pf_image img = { 0 };
        if (pf_video_read(v, f, &img, err, errlen)) return -1;
        memcpy(in + (size_t)(f - base) * frame_px * 3, img.data, frame_px * 3);
        pf_image_free(&img);
    }
    return 0;
}

/* The window loop of pf_video_upscale_file. */
static int run_windows(pf_video *v, pf_video_out *vo, const pf_video_upscale_job *job, int n,
                       int w, int h, const int *wv, int nw, char *err, size_t errlen) {
    size_t in_px = (size_t)w * h, out_px = in_px * job->scale * job->scale;
    int win = job->window > 0 ? job->window : 1, rc = 0, have0 = 0, have1 = 0, done = 0;
    uint8_t *in = malloc((size_t)win * in_px * 3), *out = malloc((size_t)win * out_px * 3);
    if (!in || !out) {
        snprintf(err, errlen, "out of memory for a window of %d frames", win);
        rc = -1;
    }
    for (int k = 0; rc == 0 && k < nw; k++) {
        int f0 = wv[k], len = wv[nw + k];
        /* keep the frames this window shares with the last one, read the rest */
        int keep0 = f0 > have0 ? f0 : have0, keep = have1 > keep0 ? have1 - keep0 : 0;
        if (keep) memmove(in, in + (size_t)(keep0 - have0) * in_px * 3, keep * in_px * 3);
        rc = read_frames(v, f0 + keep, f0 + len, f0, in, in_px, err, errlen);
        have0 = f0;
        have1 = f0 + len;
        if (rc == 0 && job->upscale(job->ctx, in, len, h, w, out, err, errlen)) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, " (frames %d..%d)", f0, f0 + len - 1);
            rc = -1;
        }
        for (int f = wv[2 * nw + k]; rc == 0 && f < wv[3 * nw + k]; f++) {
            rc = pf_video_out_frame(vo, out + (size_t)(f - f0) * out_px * 3,
                                    pf_video_frame_time(v, f), err, errlen);
            if (job->progress && rc == 0 && job->progress(job->ctx, ++done, n)) {
                snprintf(err, errlen, "%s: cancelled after %d of %d frames", vo->path, done, n);
                rc = -1;
            }
        }
    }
    free(in);
    free(out);
    return rc;
}

/* The sliding-window loop of pf_video_upscale_file: frame k of the source in ring slot
   k % T (T = num_frame), read once, in order; frame f's window gathered from the ring. */
static int run_sliding(pf_video *v, pf_video_out *vo, const pf_video_upscale_job *job, int n,
                       int w, int h, char *err, size_t errlen) {
    int T = job->num_frame, *slot = malloc(2 * (size_t)T * sizeof *slot), *idx = slot + T;
    size_t in_px = (size_t)w * h, out_px = in_px * job->scale * job->scale;
    uint8_t *ring = malloc((size_t)T * in_px * 3), *in = malloc((size_t)T * in_px * 3);
    uint8_t *out = malloc(out_px * 3);
    int rc = 0, next = 0;       /* next: the first frame not read yet */
    if (!slot || !ring || !in || !out) {
        snprintf(err, errlen, "out of memory for a window of %d frames", T);
        rc = -1;
    }
    for (int t = 0; rc == 0 && t < T; t++) slot[t] = -1;
    for (int f = 0; rc == 0 && f < n; f++) {
        pf_video_frame_indices(f, n, T, job->padding, idx);    /* checked by the caller */
        for (int t = 0; rc == 0 && t < T; t++)
            while (rc == 0 && next <= idx[t]) {
                pf_image img = { 0 };
                if ((rc = pf_video_read(v, next, &img, err, errlen))) break;
                memcpy(ring + (size_t)(next % T) * in_px * 3, img.data, in_px * 3);
                pf_image_free(&img);
                slot[next % T] = next;
                next++;
            }
        for (int t = 0; rc == 0 && t < T; t++) {
            if (slot[idx[t] % T] != idx[t]) {   /* not for the four paddings (the header) */
                snprintf(err, errlen, "frame %d's window needs frame %d, no longer held", f,
                         idx[t]);
                rc = -1;
            } else {
                memcpy(in + (size_t)t * in_px * 3, ring + (size_t)(idx[t] % T) * in_px * 3,
                       in_px * 3);
            }
        }
        if (rc == 0 && job->upscale(job->ctx, in, T, h, w, out, err, errlen)) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, " (frame %d's window)", f);
            rc = -1;
        }
        if (rc == 0) rc = pf_video_out_frame(vo, out, pf_video_frame_time(v, f), err, errlen);
        if (job->progress && rc == 0 && job->progress(job->ctx, f + 1, n)) {
            snprintf(err, errlen, "%s: cancelled after %d of %d frames", vo->path, f + 1, n);
            rc = -1;
        }
    }
    free(slot);
    free(ring);
    free(in);
    free(out);
    return rc;
}

int pf_video_upscale_file(const char *source, const char *dest, const pf_video_upscale_job *job,
                          char *err, size_t errlen) {
    if (!job || !job->upscale || job->scale < 1) {
        snprintf(err, errlen, "%s: no upscaler or a bad scale", dest);
        return -1;
    }
    if (job->num_frame && (job->num_frame < 1 || job->num_frame % 2 == 0 ||
                           job->padding < 0 || job->padding >= PF_PAD_COUNT)) {
        snprintf(err, errlen, "%s: bad sliding window (%d frames, padding %d)", dest,
                 job->num_frame, job->padding);
        return -1;
    }
    pf_video *v = pf_video_open(source, err, errlen);
    if (!v) return -1;
    pf_video_info info = pf_video_get_info(v);
    int n = info.usable_frames > 0 ? info.usable_frames : info.n_frames;
    if (info.cut[0] && !job->out.quiet)
        fprintf(stderr, "%s: warning: the file is cut short (%s): upscaling its %d whole "
                "frames\n", source, info.cut, n);
    int win = job->window > 0 ? job->window : 1, ov = job->window > 0 ? job->overlap : 0;
    if (job->num_frame && n < pf_video_min_frames(job->num_frame, job->padding)) {
        snprintf(err, errlen, "%s: %d frames: too few for windows of %d frames with padding %s "
                 "(%d at least)", source, n, job->num_frame,
                 pf_frame_padding_name(job->padding), pf_video_min_frames(job->num_frame,
                                                                          job->padding));
        pf_video_destroy(&v);
        return -1;
    }
    int *wv = malloc(4 * (size_t)n * sizeof *wv), nw = -1, rc = -1;
    if (wv) nw = pf_clip_windows(n, win, ov, wv, wv + n, wv + 2 * n, wv + 3 * n, n);
    if (nw < 0) {
        snprintf(err, errlen, "%s: bad window (%d frames) or overlap (%d)", source, win, ov);
    } else {
        /* pf_clip_windows writes k-th entries at offsets of n; run_windows reads them at nw */
        for (int a = 1; a < 4; a++) memmove(wv + a * nw, wv + a * n, nw * sizeof *wv);
        pf_video_out *vo = pf_video_out_open(dest, source, info.w * job->scale,
                                             info.h * job->scale, is_vfr(v, n, info.fps),
                                             &job->out, err, errlen);
        if (vo) {
            rc = job->num_frame ? run_sliding(v, vo, job, n, info.w, info.h, err, errlen)
                                : run_windows(v, vo, job, n, info.w, info.h, wv, nw, err, errlen);
            if (rc == 0) rc = pf_video_out_close(&vo, 1, err, errlen);
            else pf_video_out_close(&vo, 0, NULL, 0);
        }
    }
    free(wv);
    pf_video_destroy(&v);
    return rc;
}
