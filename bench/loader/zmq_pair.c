/*  zmq_pair — the ceiling for PixFlow's data path: a bare libzmq PUSH/PULL pair over TCP
    loopback moving messages shaped like PixFlow batches, in two processes.

    A message is three frames, as a loader's batch: a HEADER_BYTES header, then GT
    (batch x gt_patch^2 x 3 bytes) and LQ (batch x (gt_patch/scale)^2 x 3 bytes). The pusher
    (a child process, forked before either side opens a ZeroMQ context) sends them without
    copying (zmq_msg_init_data, no free function: the buffers are never written after start-up,
    so one may be queued twice), as the loader sends its batches (pf_send_zc); with --copy it
    uses zmq_send, which copies each frame. Messages come from hwm + 2 buffers in turn, filled
    with data once, so that, as with the loader's pool, they are not all in the cache (nor all
    the kernel's shared zero page, which untouched calloc memory would be). The puller (this
    process) binds tcp://127.0.0.1:*, receives and counts. Both queues hold --hwm messages (PixFlow's bound is
    the worker's data.prefetch credits). After --warmup seconds a window of --window seconds is
    timed, and one line goes to stdout:

      zmq_pair gt_patch=224 batch=16 copy=0 message_MB=3.011 window_s=10.00 messages=...
               payload_MB_per_s=... push_cpu_s=... pull_cpu_s=...

    (payload = GT + LQ frames, MB = 1e6 bytes). Then the pusher is sent SIGTERM.

    usage: bench_zmq_pair [--gt-patch N] [--scale S] [--batch B] [--hwm N] [--warmup S]
                          [--window S] [--copy]      (defaults 224, 2, 16, 16, 2, 10)
    Exit status: 0 after a measurement, 1 on failure (message on stderr), 2 on bad usage.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench/loader/proc_cpu.h"
#include "common/util.h"

#define HEADER_BYTES 160   /* about a batch header of 16 samples (msgpack) */

/* Send `size` bytes of `buf` as one frame: copied (zmq_send) or handed over (the buffer
   outlives the socket, so no free function). Returns 0 or -1 with errno. */
static int send_frame(void *s, const void *buf, size_t size, int flags, int copy) {
    if (copy) return zmq_send(s, buf, size, flags) < 0 ? -1 : 0;
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, (void *)buf, size, NULL, NULL) != 0) return -1;
    if (zmq_msg_send(&m, s, flags) < 0) {
        int saved = errno;
        zmq_msg_close(&m);
        errno = saved;
        return -1;
    }
    return 0;
}

/* The pusher: read the endpoint from `fd`, connect, send until killed. Never returns. */
static void push_main(int fd, size_t gt_bytes, size_t lq_bytes, int hwm, int copy) {
    char ep[256];
    ssize_t n = read(fd, ep, sizeof ep - 1);
    if (n <= 0) {
        fprintf(stderr, "bench_zmq_pair: pusher got no endpoint\n");
        _exit(1);
    }
    ep[n] = '\0';
    int n_bufs = hwm + 2;
    unsigned char **bufs = calloc((size_t)n_bufs, sizeof *bufs);
    for (int i = 0; bufs && i < n_bufs; i++) {
        bufs[i] = malloc(gt_bytes + lq_bytes);   /* lq_bytes >= HEADER_BYTES */
        if (!bufs[i]) {
            fprintf(stderr, "bench_zmq_pair: out of memory for %d buffers\n", n_bufs);
            _exit(1);
        }
        for (size_t k = 0; k < gt_bytes + lq_bytes; k++) bufs[i][k] = (unsigned char)(k * 31 + i);
    }
    void *ctx = zmq_ctx_new();
    void *s = ctx ? zmq_socket(ctx, ZMQ_PUSH) : NULL;
    if (!bufs || !s || zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
        zmq_connect(s, ep) != 0) {
        fprintf(stderr, "bench_zmq_pair: pusher cannot connect to %s: %s\n", ep,
                bufs ? zmq_strerror(errno) : "out of memory");
        _exit(1);
    }
    for (long m = 0;; m++) {
        const unsigned char *buf = bufs[m % n_bufs];
        if (send_frame(s, buf, HEADER_BYTES, ZMQ_SNDMORE, 1) != 0 ||
            send_frame(s, buf, gt_bytes, ZMQ_SNDMORE, copy) != 0 ||
            send_frame(s, buf + gt_bytes, lq_bytes, 0, copy) != 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "bench_zmq_pair: send: %s\n", zmq_strerror(errno));
            _exit(1);
        }
    }
}

/* Receive one whole message; returns its payload bytes (frames after the header) or -1. */
static double recv_message(void *s) {
    double bytes = 0;
    int more = 1;
    for (int part = 0; more; part++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) {
            zmq_msg_close(&m);
            if (errno == EINTR && part > 0) continue;
            return -1;
        }
        if (part > 0) bytes += (double)zmq_msg_size(&m);
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
    }
    return bytes;
}

static void usage(void) {
    fprintf(stderr, "usage: bench_zmq_pair [--gt-patch N] [--scale S] [--batch B] [--hwm N] "
                    "[--warmup S] [--window S] [--copy]\n");
}

int main(int argc, char **argv) {
    int gt_patch = 224, scale = 2, batch = 16, hwm = 16, copy = 0;
    double warmup = 2.0, window = 10.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--copy") == 0) {
            copy = 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
            return 2;
        }
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--gt-patch") == 0) gt_patch = atoi(v);
        else if (strcmp(argv[i - 1], "--scale") == 0) scale = atoi(v);
        else if (strcmp(argv[i - 1], "--batch") == 0) batch = atoi(v);
        else if (strcmp(argv[i - 1], "--hwm") == 0) hwm = atoi(v);
        else if (strcmp(argv[i - 1], "--warmup") == 0) warmup = atof(v);
        else if (strcmp(argv[i - 1], "--window") == 0) window = atof(v);
        else {
            usage();
            return 2;
        }
    }
    if (gt_patch < 1 || scale < 1 || gt_patch % scale || batch < 1 || hwm < 1 || warmup < 0 ||
        window <= 0) {
        usage();
        return 2;
    }
    size_t lq_patch = (size_t)(gt_patch / scale);
    size_t gt_bytes = (size_t)batch * gt_patch * gt_patch * 3;
    size_t lq_bytes = (size_t)batch * lq_patch * lq_patch * 3;
    if (lq_bytes < HEADER_BYTES) {
        fprintf(stderr, "bench_zmq_pair: batch too small (LQ frame under %d bytes)\n",
                HEADER_BYTES);
        return 2;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        perror("bench_zmq_pair: pipe");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("bench_zmq_pair: fork");
        return 1;
    }
    if (child == 0) {
        close(fds[1]);
        push_main(fds[0], gt_bytes, lq_bytes, hwm, copy);
    }
    close(fds[0]);
    int status = 1;
    void *ctx = zmq_ctx_new();
    void *s = ctx ? zmq_socket(ctx, ZMQ_PULL) : NULL;
    char ep[256];
    size_t eplen = sizeof ep;
    int timeout_ms = 10000;   /* a pusher that died leaves the receive waiting: give up */
    if (!s || zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms) != 0 ||
        zmq_bind(s, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &eplen) != 0) {
        fprintf(stderr, "bench_zmq_pair: cannot bind the PULL socket: %s\n",
                zmq_strerror(errno));
        goto out;
    }
    if (write(fds[1], ep, strlen(ep)) != (ssize_t)strlen(ep)) {
        perror("bench_zmq_pair: write endpoint");
        goto out;
    }
    double t0 = pf_now(), t_window = 0, bytes = 0, push0 = 0, pull0 = 0;
    long messages = 0;
    for (;;) {
        double b = recv_message(s);
        if (b < 0) {
            fprintf(stderr, "bench_zmq_pair: receive: %s\n", zmq_strerror(errno));
            goto out;
        }
        double now = pf_now();
        if (!t_window && now - t0 >= warmup) {
            t_window = now;
            push0 = bench_cpu_seconds(child);
            pull0 = bench_cpu_seconds(getpid());
            if (push0 < 0 || pull0 < 0) {
                fprintf(stderr, "bench_zmq_pair: cannot read CPU times\n");
                goto out;
            }
            continue;
        }
        if (!t_window) continue;
        bytes += b;
        messages++;
        if (now - t_window >= window) {
            double dt = now - t_window;
            printf("zmq_pair gt_patch=%d batch=%d copy=%d message_MB=%.3f window_s=%.2f "
                   "messages=%ld payload_MB_per_s=%.1f push_cpu_s=%.2f pull_cpu_s=%.2f\n",
                   gt_patch, batch, copy, (double)(gt_bytes + lq_bytes) / 1e6, dt, messages,
                   bytes / dt / 1e6,
                   bench_cpu_seconds(child) - push0, bench_cpu_seconds(getpid()) - pull0);
            fflush(stdout);
            status = 0;
            break;
        }
    }
out:
    kill(child, SIGTERM);
    int ws;
    if (waitpid(child, &ws, 0) != child) {
        perror("bench_zmq_pair: waitpid");
        status = 1;
    } else if (!(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM)) {
        fprintf(stderr, "bench_zmq_pair: the pusher ended early (status %d)\n", ws);
        status = 1;
    }
    close(fds[1]);
    if (s) {
        int linger = 0;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(s);
    }
    if (ctx) zmq_ctx_term(ctx);
    return status;
}
