/*  proto/frames — ZeroMQ multipart framing of PixFlow messages.

    A message on the wire is [identity] + header + bulk frames:
      - identity: only on ROUTER sockets (the peer's routing id, added by ZeroMQ on receive,
        supplied by the caller on send);
      - header: pf_msg_encode's msgpack map;
      - bulk frames: pixels, checkpoint bytes, as the header describes them.
    pf_parts_recv takes every part of one message or none: a message with more than
    PF_MAX_FRAMES parts is read to its end and dropped, so the next receive starts on a message
    boundary, and the rejection is counted under PF_MSG_INVALID.

    pf_send copies the caller's buffers into ZeroMQ messages (zmq_send), so the caller may free
    or reuse them as soon as it returns. pf_send_zc hands the bulk frames to ZeroMQ without a
    copy (zmq_msg_init_data) and ZeroMQ calls the caller's free function for each frame once it
    has written it out (or dropped it): the loader's batch buffers go back to their pool that
    way.
*/
#include "proto/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

void pf_proto_count_reject(int type);   /* proto/codec.c */

/* Send [identity] + header + frames. With free_fn set the frames are handed over without a
   copy (pf_send_zc); free_fn then runs exactly once per frame on every path. */
static int send_parts(void *sock, const pf_frame *identity, const pf_msg *m,
                      const pf_frame *frames, int nframes, pf_frame_free_fn *free_fn,
                      void *hint) {
    int bad = !sock || !m || nframes < 0 || (nframes && !frames) ||
              (identity ? 1 : 0) + 1 + nframes > PF_MAX_FRAMES;
    void *hdr = NULL;
    size_t hdrlen = 0;
    if (bad || pf_msg_encode(m, &hdr, &hdrlen)) {
        if (free_fn)
            for (int i = 0; frames && i < nframes; i++)
                free_fn((void *)frames[i].data, hint);
        errno = EINVAL;
        return -1;
    }
    /* Zero-copy frames become ZeroMQ messages first, so that every one of them is either sent
       (ZeroMQ frees it when done) or closed here (which frees it) on every path. */
    zmq_msg_t zc[PF_MAX_FRAMES];
    for (int i = 0; free_fn && i < nframes; i++)
        if (zmq_msg_init_data(&zc[i], (void *)frames[i].data, frames[i].size, free_fn, hint)) {
            for (int j = 0; j < i; j++)
                zmq_msg_close(&zc[j]);
            for (int j = i; j < nframes; j++)
                free_fn((void *)frames[j].data, hint);
            free(hdr);
            errno = ENOMEM;
            return -1;
        }
    int rc = 0, sent = 0;
    if (identity && zmq_send(sock, identity->data, identity->size, ZMQ_SNDMORE) < 0)
        rc = -1;
    if (!rc && zmq_send(sock, hdr, hdrlen, nframes ? ZMQ_SNDMORE : 0) < 0)
        rc = -1;
    for (; !rc && sent < nframes; sent++) {
        int more = sent + 1 < nframes ? ZMQ_SNDMORE : 0;
        if (free_fn ? zmq_msg_send(&zc[sent], sock, more) < 0
                    : zmq_send(sock, frames[sent].data, frames[sent].size, more) < 0) {
            rc = -1;
            break;
        }
    }
    int saved = errno;
    /* Frames not sent (a failed zmq_msg_send leaves the message with us) are closed here,
       which calls free_fn. */
    for (int i = sent; free_fn && i < nframes; i++)
        zmq_msg_close(&zc[i]);
    free(hdr);
    errno = saved;
    return rc;
}

int pf_send(void *sock, const pf_frame *identity, const pf_msg *m, const pf_frame *frames,
            int nframes) {
    return send_parts(sock, identity, m, frames, nframes, NULL, NULL);
}

int pf_send_zc(void *sock, const pf_frame *identity, const pf_msg *m, const pf_frame *frames,
               int nframes, pf_frame_free_fn *free_fn, void *hint) {
    if (!free_fn) {
        errno = EINVAL;
        return -1;
    }
    return send_parts(sock, identity, m, frames, nframes, free_fn, hint);
}

void pf_parts_close(pf_parts *p) {
    if (!p)
        return;
    for (int i = 0; i < p->n && i < PF_MAX_FRAMES; i++) {
        if (p->part[i]) {
            zmq_msg_close(p->part[i]);
            free(p->part[i]);
        }
        p->part[i] = NULL;
    }
    p->n = 0;
}

/* Read and discard the rest of a multipart message. */
static void drain(void *sock) {
    int more = 1;
    while (more) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, sock, 0) < 0) {
            zmq_msg_close(&msg);
            if (errno == EINTR)
                continue;
            return;
        }
        more = zmq_msg_more(&msg);
        zmq_msg_close(&msg);
    }
}

int pf_parts_recv(void *sock, int flags, pf_parts *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    if (err && errlen)
        err[0] = 0;
    for (;;) {
        zmq_msg_t *msg = malloc(sizeof *msg);
        if (!msg) {
            pf_parts_close(p);
            if (err && errlen)
                snprintf(err, errlen, "out of memory");
            errno = ENOMEM;
            return -1;
        }
        zmq_msg_init(msg);
        /* Only the first part may wait or not as the caller asked; ZeroMQ delivers the
           parts of a message together, so the rest are there already. */
        int rc;
        do
            rc = zmq_msg_recv(msg, sock, p->n == 0 ? flags : 0);
        while (rc < 0 && errno == EINTR && p->n > 0);
        if (rc < 0) {
            int saved = errno;
            zmq_msg_close(msg);
            free(msg);
            pf_parts_close(p);
            errno = saved;
            return -1;
        }
        p->part[p->n++] = msg;
        if (!zmq_msg_more(msg))
            return 0;
        if (p->n == PF_MAX_FRAMES) {
            drain(sock);
            pf_parts_close(p);
            pf_proto_count_reject(PF_MSG_INVALID);
            if (err && errlen)
                snprintf(err, errlen, "message with more than %d parts dropped",
                         PF_MAX_FRAMES);
            errno = EPROTO;
            return -1;
        }
    }
}

const void *pf_parts_data(const pf_parts *p, int i) {
    if (!p || i < 0 || i >= p->n)
        return NULL;
    return zmq_msg_data(p->part[i]);
}

size_t pf_parts_size(const pf_parts *p, int i) {
    if (!p || i < 0 || i >= p->n)
        return 0;
    return zmq_msg_size(p->part[i]);
}

/* One bulk frame of a batch against the size its header gives. */
static int batch_frame_ok(const char *name, size_t got, const pf_msg_batch *b,
                          uint32_t frames_per_sample, uint32_t h, uint32_t w, char *err,
                          size_t errlen) {
    size_t want = (size_t)b->n * frames_per_sample * h * w * 3;
    if (got == want) return 0;
    snprintf(err, errlen, "batch: %s frame is %zu bytes, expected %zu (n %u x %u frames x %u x "
             "%u x 3)", name, got, want, b->n, frames_per_sample, h, w);
    return -1;
}

int pf_batch_check_frames(const pf_msg_batch *b, uint32_t frames_per_sample, int n_parts,
                          const size_t *sizes, char *err, size_t errlen) {
    int want = b->gt_plain ? 4 : 3;
    if (n_parts != want) {
        snprintf(err, errlen, "batch: %d parts, expected %d (header, gt, lq%s)", n_parts, want,
                 b->gt_plain ? ", gt_plain" : "");
        return -1;
    }
    uint32_t gt_frames = b->gt_frames ? b->gt_frames : frames_per_sample;
    if (batch_frame_ok("gt", sizes[1], b, gt_frames, b->gt_h, b->gt_w, err, errlen) ||
        batch_frame_ok("lq", sizes[2], b, frames_per_sample, b->lq_h, b->lq_w, err, errlen))
        return -1;
    if (b->gt_plain && batch_frame_ok("gt_plain", sizes[3], b, gt_frames, b->gt_h, b->gt_w,
                                      err, errlen))
        return -1;
    return 0;
}
