/*  video_write — FFmpeg encoder + muxer behind common/video_write.h. */
#include "common/video_write.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pf_video_writer {
    char path[4096];
    AVFormatContext *fmt;
    AVCodecContext *enc;
    AVStream *st;
    struct SwsContext *sws;
    AVFrame *frame;
    AVPacket *pkt;
    int w, h, opened, header, failed;
    int64_t next_pts;
};

static int fail(pf_video_writer *vw, const char *what, int averr, char *err, size_t errlen) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    if (averr) av_strerror(averr, msg, sizeof msg);
    snprintf(err, errlen, "%s: %s%s%s", vw->path, what, averr ? ": " : "", msg);
    vw->failed = 1;
    return -1;
}

/* video_write.h: lossless RGB layouts first, then yuv420p, then the encoder's first. */
int pf_video_write_pix_fmt(const struct AVCodec *c) {
    static const enum AVPixelFormat pref[] = { AV_PIX_FMT_GBRP, AV_PIX_FMT_BGR0, AV_PIX_FMT_RGB24,
                                               AV_PIX_FMT_YUV420P };
    if (!c->pix_fmts) return AV_PIX_FMT_YUV420P;
    for (size_t i = 0; i < sizeof pref / sizeof *pref; i++)
        for (const enum AVPixelFormat *p = c->pix_fmts; *p != AV_PIX_FMT_NONE; p++)
            if (*p == pref[i]) return *p;
    return c->pix_fmts[0];
}

/* Send frame (NULL: flush) and write every packet the encoder gives back. */
static int drain(pf_video_writer *vw, AVFrame *frame, char *err, size_t errlen) {
    int rc = avcodec_send_frame(vw->enc, frame);
    if (rc < 0) return fail(vw, "avcodec_send_frame", rc, err, errlen);
    for (;;) {
        rc = avcodec_receive_packet(vw->enc, vw->pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
        if (rc < 0) return fail(vw, "avcodec_receive_packet", rc, err, errlen);
        av_packet_rescale_ts(vw->pkt, vw->enc->time_base, vw->st->time_base);
        vw->pkt->stream_index = vw->st->index;
        rc = av_interleaved_write_frame(vw->fmt, vw->pkt);   /* takes the packet's data */
        if (rc < 0) return fail(vw, "writing a packet", rc, err, errlen);
    }
}

pf_video_writer *pf_video_writer_open(const char *path, int w, int h, int fps_num, int fps_den,
                                      const char *codec, char *err, size_t errlen) {
    pf_video_writer *vw = calloc(1, sizeof *vw);
    if (!vw) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(vw->path, sizeof vw->path, "%s", path);
    vw->w = w;
    vw->h = h;
    int rc = 0;
    if (w < 1 || h < 1 || fps_num < 1 || fps_den < 1) {
        fail(vw, "bad frame size or frame rate", 0, err, errlen);
        goto bad;
    }
    const char *name = codec && *codec ? codec : "ffv1";
    const AVCodec *c = avcodec_find_encoder_by_name(name);
    if (!c || c->type != AVMEDIA_TYPE_VIDEO) {
        char what[160];
        snprintf(what, sizeof what, "no video encoder '%s' in this FFmpeg (try ffv1, mpeg4)",
                 name);
        fail(vw, what, 0, err, errlen);
        goto bad;
    }
    if ((rc = avformat_alloc_output_context2(&vw->fmt, NULL, NULL, path)) < 0 || !vw->fmt) {
        fail(vw, "no container for this file name (use .mkv, .mp4, .avi)", rc, err, errlen);
        goto bad;
    }
    if (avformat_query_codec(vw->fmt->oformat, c->id, FF_COMPLIANCE_NORMAL) == 0) {
        char what[160];
        snprintf(what, sizeof what, "the %s container does not take %s", vw->fmt->oformat->name,
                 c->name);
        fail(vw, what, 0, err, errlen);
        goto bad;
    }
    vw->st = avformat_new_stream(vw->fmt, NULL);
    vw->enc = avcodec_alloc_context3(c);
    vw->frame = av_frame_alloc();
    vw->pkt = av_packet_alloc();
    if (!vw->st || !vw->enc || !vw->frame || !vw->pkt) {
        fail(vw, "out of memory", 0, err, errlen);
        goto bad;
    }
    vw->enc->width = w;
    vw->enc->height = h;
    vw->enc->pix_fmt = pf_video_write_pix_fmt(c);
    vw->enc->time_base = (AVRational){ fps_den, fps_num };
    vw->enc->framerate = (AVRational){ fps_num, fps_den };
    vw->enc->gop_size = 12;
    vw->enc->thread_count = 1;
    if (vw->fmt->oformat->flags & AVFMT_GLOBALHEADER)
        vw->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if ((rc = avcodec_open2(vw->enc, c, NULL)) < 0) {
        fail(vw, "opening the encoder", rc, err, errlen);
        goto bad;
    }
    if ((rc = avcodec_parameters_from_context(vw->st->codecpar, vw->enc)) < 0) {
        fail(vw, "stream parameters", rc, err, errlen);
        goto bad;
    }
    vw->st->time_base = vw->enc->time_base;
    vw->frame->format = vw->enc->pix_fmt;
    vw->frame->width = w;
    vw->frame->height = h;
    if ((rc = av_frame_get_buffer(vw->frame, 0)) < 0) {
        fail(vw, "frame buffer", rc, err, errlen);
        goto bad;
    }
    vw->sws = sws_getContext(w, h, AV_PIX_FMT_RGB24, w, h, vw->enc->pix_fmt, SWS_BICUBIC, NULL,
                             NULL, NULL);
    if (!vw->sws) {
        fail(vw, "no RGB24 conversion to the encoder's pixel format", 0, err, errlen);
        goto bad;
    }
    if (!(vw->fmt->oformat->flags & AVFMT_NOFILE) &&
        (rc = avio_open(&vw->fmt->pb, path, AVIO_FLAG_WRITE)) < 0) {
        fail(vw, "cannot create the file", rc, err, errlen);
        goto bad;
    }
    vw->opened = 1;
    if ((rc = avformat_write_header(vw->fmt, NULL)) < 0) {
        fail(vw, "writing the header", rc, err, errlen);
        goto bad;
    }
    vw->header = 1;
    return vw;
bad: {
        char ignore[8];
        pf_video_writer_close(&vw, 1, ignore, sizeof ignore);
        return NULL;
    }
}

int pf_video_writer_frame(pf_video_writer *vw, const uint8_t *rgb, char *err, size_t errlen) {
    int rc = av_frame_make_writable(vw->frame);
    if (rc < 0) return fail(vw, "frame buffer", rc, err, errlen);
    const uint8_t *src[1] = { rgb };
    int stride[1] = { 3 * vw->w };
    sws_scale(vw->sws, src, stride, 0, vw->h, vw->frame->data, vw->frame->linesize);
    vw->frame->pts = vw->next_pts++;
    if (drain(vw, vw->frame, err, errlen)) {
        char what[64];
        snprintf(what, sizeof what, " (frame %lld)", (long long)(vw->next_pts - 1));
        size_t len = strlen(err);
        if (len + strlen(what) < errlen) strcat(err, what);
        return -1;
    }
    return 0;
}

int pf_video_writer_close(pf_video_writer **self, int remove_on_error, char *err,
                          size_t errlen) {
    pf_video_writer *vw = self ? *self : NULL;
    if (!vw) return 0;
    int rc = vw->failed ? -1 : 0;
    if (vw->header && !vw->failed) {
        int r;
        if (drain(vw, NULL, err, errlen)) rc = -1;
        else if ((r = av_write_trailer(vw->fmt)) < 0)
            rc = fail(vw, "writing the trailer", r, err, errlen);
    }
    if (vw->fmt && vw->fmt->pb && !(vw->fmt->oformat->flags & AVFMT_NOFILE)) {
        if (avio_closep(&vw->fmt->pb) < 0 && rc == 0)
            rc = fail(vw, "closing the file (disk full?)", 0, err, errlen);
    }
    if (rc && remove_on_error && vw->opened) unlink(vw->path);
    sws_freeContext(vw->sws);
    av_frame_free(&vw->frame);
    av_packet_free(&vw->pkt);
    avcodec_free_context(&vw->enc);
    avformat_free_context(vw->fmt);
    free(vw);
    *self = NULL;
    return rc;
}

const char *pf_video_writer_pix_fmt(const pf_video_writer *vw) {
    return av_get_pix_fmt_name(vw->enc->pix_fmt);
}
