/*  bench_monitor_http — a synthetic job fed to the monitor's HTTP server (cli/monitor_http.c),
    for bench/monitor_http/run.sh (issue 36's bars: state + curves of a 100k-iteration run in
    under 100 ms, under 2% of a core while streaming 50 events/s to 5 SSE clients, RSS flat).

    It calls pf_monitor_http_start / _point / _event / _set_state as `pixflow monitor --http`'s
    reactor does (cli/monitor.c, apply() and on_publish()), without a job or ZeroMQ:

      1. fill: ITERS train iterations as the monitor sees them — per iteration one train event
         line (made as monitor.c's event_line makes it: cJSON + hooks/event_json.h) into the
         ring and one point on each of loss, lr, it_per_s and data_wait; an eval every 1000
         iterations (an eval event and a psnr point); /api/state's document, of the monitor's
         shape, with the eval history of such a run (100 entries at 100k, at most 256). Prints
         "ready fill_s=S iters=N" on stdout.
      2. stream: RATE train events per second (the same work per event, iterations going on
         from ITERS) and the state document replaced every 0.25 s (as on_publish), for SECONDS
         (0: until SIGTERM/SIGINT). Prints "stopped events=N".

    The loss has a spike (x10) every 7919 iterations, so the decimated curves carry spikes as a
    real run's do. The process's CPU time is this feeding plus the server's threads: the main
    thread is the feeder (run.sh reads the other threads apart in /proc/PID/task).

    usage: bench_monitor_http HOST:PORT [ITERS (100000)] [RATE (50)] [SECONDS (0)]
*/
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/monitor_http.h"
#include "hooks/event_json.h"
#include "proto/proto.h"

#define EVAL_EVERY 1000
#define PUBLISH_S 0.25          /* cli/monitor.c: on_publish every 0.25 s */
#define EVAL_KEEP 256           /* cli/monitor.c: the eval history it keeps (and serves) */

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The train loss of iteration `it`: a decaying curve with noise and a x10 spike every 7919. */
static double loss_at(int64_t it) {
    double base = 0.03 + 0.05 * exp(-(double)it / 20000.0);
    double noise = 0.002 * sin((double)it * 12.9898) * cos((double)it * 78.233);
    return (it % 7919 == 0 ? 10.0 : 1.0) * (base + noise);
}

/* One event as monitor.c's event_line makes it, into the ring. */
static void ring_event(pf_monitor_http *h, const pf_msg_event *ev) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", ev->kind);
    cJSON_AddStringToObject(o, "source", ev->source);
    cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
    pf_event_json_add(o, ev);
    char *line = cJSON_PrintUnformatted(o);
    if (line) pf_monitor_http_event(h, line);
    free(line);
    cJSON_Delete(o);
}

/* Iteration `it` of the synthetic job: what apply() does with its train event (and the eval
   event every EVAL_EVERY). */
static void iteration(pf_monitor_http *h, pf_msg_event *ev, int64_t it, uint64_t *seq_w,
                      uint64_t *seq_e) {
    memset(ev, 0, sizeof *ev);
    snprintf(ev->kind, sizeof ev->kind, "train");
    snprintf(ev->source, sizeof ev->source, "worker0");
    ev->seq = ++*seq_w;
    ev->iter = it;
    ev->epoch = it / 250;
    ev->loss = loss_at(it);
    ev->lr = 1e-4 * (it < 50000 ? 1.0 : 0.5);
    ev->time = 0.30 + 0.01 * sin((double)it);
    ev->data_time = 0.002 + 0.001 * cos((double)it);
    ring_event(h, ev);
    pf_monitor_http_point(h, 0, PF_CURVE_LOSS, (double)it, ev->loss);
    pf_monitor_http_point(h, 0, PF_CURVE_LR, (double)it, ev->lr);
    pf_monitor_http_point(h, 0, PF_CURVE_ITS, (double)it, 1 / ev->time);
    pf_monitor_http_point(h, 0, PF_CURVE_DATA_WAIT, (double)it, ev->data_time);
    if (it % EVAL_EVERY == 0) {
        memset(ev, 0, sizeof *ev);
        snprintf(ev->kind, sizeof ev->kind, "eval");
        snprintf(ev->source, sizeof ev->source, "eval");
        ev->seq = ++*seq_e;
        ev->iter = it;
        ev->psnr = 30.0 + 3.0 * (1 - exp(-(double)it / 30000.0));
        ev->psnr_bicubic = 30.0;
        ev->ssim = 0.90;
        ev->ssim_bicubic = 0.88;
        ring_event(h, ev);
        pf_monitor_http_point(h, 0, PF_CURVE_PSNR, (double)it, ev->psnr);
    }
}

/* A /api/state document of the monitor's shape (cli/monitor.c, state_json) at iteration
   `it`: 2 loaders, 1 worker, 3 hooks, the eval history so far (its last EVAL_KEEP entries,
   as the monitor keeps). */
static void publish(pf_monitor_http *h, int64_t it, int64_t total) {
    cJSON *o = cJSON_CreateObject();
    cJSON *job = cJSON_AddObjectToObject(o, "job");
    cJSON_AddStringToObject(job, "coordinator", "tcp://127.0.0.1:40000");
    cJSON_AddStringToObject(job, "phase", "running");
    cJSON_AddBoolToObject(job, "done", 0);
    cJSON_AddNumberToObject(job, "uptime_s", 0.3 * (double)it);
    cJSON_AddNumberToObject(job, "world_size", 1);
    cJSON_AddNumberToObject(job, "batch", 16);
    cJSON *p = cJSON_AddObjectToObject(o, "progress");
    cJSON_AddNumberToObject(p, "iter", (double)it);
    cJSON_AddNumberToObject(p, "total_iters", (double)total);
    cJSON_AddNumberToObject(p, "epoch", (double)(it / 250));
    cJSON_AddNumberToObject(p, "fraction", (double)it / (double)total);
    cJSON_AddNumberToObject(p, "eta_s", 0.3 * (double)(total - it));
    cJSON_AddNumberToObject(p, "it_per_s", 3.3);
    cJSON_AddNumberToObject(p, "loss", loss_at(it));
    cJSON *rows[3] = { cJSON_AddArrayToObject(o, "loaders"), cJSON_AddArrayToObject(o, "workers"),
                       cJSON_AddArrayToObject(o, "hooks") };
    static const char *hooks[] = { "checkpoint hook", "eval hook", "log hook" };
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < (k == 1 ? 1 : k == 0 ? 2 : 3); i++) {
            cJSON *r = cJSON_CreateObject();
            char name[32];
            if (k == 0) snprintf(name, sizeof name, "loader%d", i + 1);
            else if (k == 1) snprintf(name, sizeof name, "worker%d", i);
            else snprintf(name, sizeof name, "%s", hooks[i]);
            cJSON_AddStringToObject(r, "name", name);
            cJSON_AddStringToObject(r, "host", "node-a");
            cJSON_AddStringToObject(r, "state", "alive");
            cJSON_AddNumberToObject(r, "pid", 1000 + 10 * k + i);
            if (k == 0) {
                cJSON_AddNumberToObject(r, "patches_per_s", 60.5);
                cJSON_AddNumberToObject(r, "bytes_per_s", 2.2e6);
                cJSON_AddNumberToObject(r, "hit_rate", 0.98);
            }
            if (k == 1) {
                cJSON_AddStringToObject(r, "device", "cpu");
                cJSON_AddNumberToObject(r, "mem_bytes", 3.1e8);
            }
            cJSON_AddItemToArray(rows[k], r);
        }
    cJSON *hist = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "eval"), "history");
    int64_t first = it / EVAL_EVERY > EVAL_KEEP ? (it / EVAL_EVERY - EVAL_KEEP + 1) * EVAL_EVERY
                                                 : EVAL_EVERY;
    for (int64_t e = first; e <= it; e += EVAL_EVERY) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "iter", (double)e);
        cJSON_AddNumberToObject(r, "psnr", 30.0 + 3.0 * (1 - exp(-(double)e / 30000.0)));
        cJSON_AddNumberToObject(r, "ssim", 0.9);
        cJSON_AddNumberToObject(r, "psnr_bicubic", 30.0);
        cJSON_AddNumberToObject(r, "ssim_bicubic", 0.88);
        cJSON_AddItemToArray(hist, r);
    }
    char *text = cJSON_PrintUnformatted(o);
    if (text) pf_monitor_http_set_state(h, 0, text);
    free(text);
    cJSON_Delete(o);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_monitor_http HOST:PORT [ITERS] [RATE] [SECONDS]\n");
        return 2;
    }
    int64_t iters = argc > 2 ? atoll(argv[2]) : 100000;
    double rate = argc > 3 ? atof(argv[3]) : 50;
    double seconds = argc > 4 ? atof(argv[4]) : 0;
    if (iters < 1 || rate <= 0 || seconds < 0) {
        fprintf(stderr, "bench_monitor_http: ITERS >= 1, RATE > 0, SECONDS >= 0\n");
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    char err[512];
    pf_monitor_http *h = pf_monitor_http_start(argv[1], PF_HTTP_RING_DEFAULT,
                                               PF_HTTP_CLIENTS_DEFAULT, err, sizeof err);
    if (!h) {
        fprintf(stderr, "bench_monitor_http: %s\n", err);
        return 1;
    }
    /* one run, the live job's (as pixflow monitor --connect serves it; no files) */
    if (pf_monitor_http_set_run(h, 0, "bench", "", "") != 0) {
        fprintf(stderr, "bench_monitor_http: cannot name run 0\n");
        pf_monitor_http_stop(&h);
        return 1;
    }
    static pf_msg_event ev;
    uint64_t seq_w = 0, seq_e = 0;
    int64_t total = iters * 2;  /* the job goes on past the filled part while streaming */
    double t0 = now_s();
    for (int64_t it = 1; it <= iters; it++) iteration(h, &ev, it, &seq_w, &seq_e);
    publish(h, iters, total);
    printf("ready fill_s=%.3f iters=%" PRId64 "\n", now_s() - t0, iters);
    fflush(stdout);

    /* stream: event k at t_start + k / rate (absolute times: no drift) */
    double t_start = now_s(), next_publish = t_start + PUBLISH_S;
    int64_t it = iters;
    uint64_t sent = 0;
    while (!stop && (seconds == 0 || now_s() - t_start < seconds)) {
        double due = t_start + (double)sent / rate, t = now_s();
        if (due > t) {
            struct timespec d = { (time_t)(due - t), (long)(fmod(due - t, 1.0) * 1e9) };
            while (nanosleep(&d, &d) != 0 && errno == EINTR && !stop) {}
            continue;
        }
        iteration(h, &ev, ++it, &seq_w, &seq_e);
        sent++;
        if (now_s() >= next_publish) {
            publish(h, it, total);
            next_publish += PUBLISH_S;
        }
    }
    printf("stopped events=%" PRIu64 "\n", sent);
    fflush(stdout);
    pf_monitor_http_stop(&h);
    return 0;
}
