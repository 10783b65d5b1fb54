/*  upscale_video — one video file through the network for `pixflow upscale`: the probe that
    tells a video from other files, the default container, the check made before any
    inference, and the run (pf_video_upscale_file with an upscaler per window and a progress
    line). The rules are in cli/upscale.h; the writing, the copied streams and the temporary
    file are common/video_remux.h's. */
#include "cli/upscale.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/metrics.h" /* pf_to_u8 */
#include "common/util.h"    /* pf_now */
#include "common/video.h"

int pf_upscale_video_probe(const char *path, int *w, int *h, int *frames, char *err,
                           size_t errlen) {
    char why[1024];
    pf_video *v = pf_video_open(path, why, sizeof why);
    if (!v) {
        size_t n = strlen(path);   /* FFmpeg's reason, without the path it starts with */
        const char *r = !strncmp(why, path, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why;
        snprintf(err, errlen, "not an image (.png, .jpg, .jpeg) and not a video FFmpeg reads "
                 "(%s)", r);
        return -1;
    }
    pf_video_info info = pf_video_get_info(v);
    *w = info.w;
    *h = info.h;
    *frames = info.usable_frames > 0 ? info.usable_frames : info.n_frames;
    pf_video_destroy(&v);
    if (*frames < 1 || *w < 1 || *h < 1) {
        snprintf(err, errlen, "%s: a video without a whole frame", path);
        return -1;
    }
    return 0;
}

/* The encoder `codec` names (NULL or "": libx264 when present, else ffv1), as
   pf_video_out_open chooses it. */
static const AVCodec *encoder_of(const char *codec) {
    if (codec && *codec) return avcodec_find_encoder_by_name(codec);
    const AVCodec *c = avcodec_find_encoder_by_name("libx264");
    return c ? c : avcodec_find_encoder_by_name("ffv1");
}

void pf_upscale_video_ext(const char *source, const char *codec, char *ext, size_t len) {
    const char *slash = strrchr(source, '/'), *dot = strrchr(source, '.');
    snprintf(ext, len, "mkv");
    if (!dot || (slash && dot < slash) || !dot[1] || strlen(dot) > 16) return;
    char probe[32];
    snprintf(probe, sizeof probe, "x%s", dot);
    const AVOutputFormat *of = av_guess_format(NULL, probe, NULL);
    const AVCodec *c = encoder_of(codec);
    if (!of || !c || avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) != 1) return;
    AVFormatContext *in = NULL;
    int ok = avformat_open_input(&in, source, NULL, NULL) >= 0 &&
             avformat_find_stream_info(in, NULL) >= 0;
    for (unsigned i = 0; ok && i < in->nb_streams; i++) {
        const AVCodecParameters *p = in->streams[i]->codecpar;
        /* the copied streams (video_remux.h); FLAC in .mp4 is experimental in FFmpeg 5.1 */
        if ((p->codec_type == AVMEDIA_TYPE_AUDIO || p->codec_type == AVMEDIA_TYPE_SUBTITLE) &&
            (avformat_query_codec(of, p->codec_id, FF_COMPLIANCE_NORMAL) != 1 ||
             (p->codec_id == AV_CODEC_ID_FLAC && strstr(of->name, "mp4"))))
            ok = 0;
    }
    avformat_close_input(&in);
    if (ok) snprintf(ext, len, "%s", dot + 1);
}

int pf_upscale_video_check(const char *source, const char *dest, int w, int h,
                           const pf_video_out_opts *o, char *err, size_t errlen) {
    pf_video_out_opts q = *o;
    q.quiet = 1;
    pf_video_out *vo = pf_video_out_open(dest, source, w, h, 0, &q, err, errlen);
    if (!vo) return -1;
    return pf_video_out_close(&vo, 0, err, errlen) == 0 ? 0 : -1;
}

typedef struct {
    const pf_upscaler *u;
    int video;                  /* a video network: pf_model_infer_clip over the window */
    int sliding;                /* a sliding-window network: pf_model_infer_window */
    const char *name;           /* the source's base name, for the progress line */
    const volatile sig_atomic_t *interrupted;
    double t0, last;            /* start, last progress line (pf_now seconds) */
    int tty;
} video_ctx;

/* An image network: one frame through pf_upscale_image (the PNG path's bytes). */
static int upscale_frame(const pf_upscaler *u, const uint8_t *in, int h, int w, uint8_t *out,
                         char *err, size_t errlen) {
    pf_image_full img = { w, h, 3, 8, (void *)in }, res = { 0 };
    if (pf_upscale_image(u, &img, &res, err, errlen)) return -1;
    memcpy(out, res.data, (size_t)res.w * res.h * 3);
    pf_image_full_free(&res);
    return 0;
}

/* A video network: t frames padded to u->mult, one pass (the clip's t frames, or of a
   sliding-window network the window's center frame), cropped and rounded. */
static int upscale_clip(const pf_upscaler *u, int sliding, const uint8_t *in, int t, int h,
                        int w, uint8_t *out, char *err, size_t errlen) {
    int s = pf_model_scale(u->m), q = u->mult;
    int ph = (h + q - 1) / q * q, pw = (w + q - 1) / q * q;
    size_t in_px = (size_t)ph * pw, out_px = in_px * s * s;
    uint8_t *pad = malloc((size_t)t * in_px * 3);
    int t_out = sliding ? 1 : t;
    float *full = malloc((size_t)t_out * out_px * 3 * sizeof *full);
    int rc = pad && full ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory for a window of %d frames", t);
    for (int f = 0; rc == 0 && f < t; f++)
        for (int y = 0; y < ph; y++) {
            const uint8_t *row = in + ((size_t)f * h + (y < h ? y : h - 1)) * w * 3;
            uint8_t *dst = pad + ((size_t)f * ph + y) * pw * 3;
            memcpy(dst, row, (size_t)w * 3);
            for (int x = w; x < pw; x++) memcpy(dst + (size_t)x * 3, row + (size_t)(w - 1) * 3, 3);
        }
    if (rc == 0)
        rc = sliding ? pf_model_infer_window(u->m, pad, ph, pw, full, err, errlen)
                     : pf_model_infer_clip(u->m, pad, t, ph, pw, full, err, errlen);
    for (int f = 0; rc == 0 && f < t_out; f++)
        for (int y = 0; y < h * s; y++)
            pf_to_u8(full + (size_t)f * out_px * 3 + (size_t)y * pw * s * 3,
                     out + ((size_t)f * h * s + y) * w * s * 3, (size_t)w * s * 3);
    free(pad);
    free(full);
    return rc;
}

static int on_window(void *ctx, const uint8_t *in, int t, int h, int w, uint8_t *out,
                     char *err, size_t errlen) {
    video_ctx *c = ctx;
    if (c->interrupted && *c->interrupted) {
        snprintf(err, errlen, "interrupted");
        return -1;
    }
    if (c->video) return upscale_clip(c->u, c->sliding, in, t, h, w, out, err, errlen);
    size_t in_px = (size_t)h * w, s = (size_t)pf_model_scale(c->u->m);
    for (int f = 0; f < t; f++)
        if (upscale_frame(c->u, in + f * in_px * 3, h, w, out + f * in_px * s * s * 3, err,
                          errlen))
            return -1;
    return 0;
}

/* After each frame: the progress line (redrawn on a terminal; else every 5 s and at the
   end), and the interrupt flag (non-zero cancels). */
static int on_progress(void *ctx, int done, int total) {
    video_ctx *c = ctx;
    double now = pf_now(), dt = now - c->t0, rate = dt > 0 ? done / dt : 0;
    if (c->tty ? now - c->last >= 0.2 || done == total : now - c->last >= 5 || done == total) {
        int eta = rate > 0 ? (int)((total - done) / rate + 0.5) : 0;
        fprintf(stderr, "%s%s: frame %d/%d %.2f frames/s ETA %d:%02d%s", c->tty ? "\r\033[K" : "",
                c->name, done, total, rate, eta / 60, eta % 60, c->tty && done < total ? "" : "\n");
        c->last = now;
    }
    return c->interrupted && *c->interrupted;
}

int pf_upscale_video(const pf_upscaler *u, int window, int overlap, int padding,
                     const char *source, const char *dest, const pf_video_out_opts *o,
                     const volatile sig_atomic_t *interrupted, char *err, size_t errlen) {
    const char *base = strrchr(source, '/');
    video_ctx c = { u, pf_model_is_video(u->m), pf_model_is_window(u->m),
                    base ? base + 1 : source, interrupted, pf_now(), 0, isatty(2) };
    pf_video_upscale_job job = { .scale = pf_model_scale(u->m), .window = c.video ? window : 1,
                                 .overlap = c.video ? overlap : 0,
                                 .num_frame = c.sliding ? pf_model_frames(u->m) : 0,
                                 .padding = padding, .upscale = on_window, .ctx = &c,
                                 .progress = on_progress, .out = *o };
    int rc = pf_video_upscale_file(source, dest, &job, err, errlen);
    if (rc && c.tty) fputc('\n', stderr);
    return rc;
}
