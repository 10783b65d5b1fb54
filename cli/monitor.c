/*  monitor — `pixflow monitor --connect tcp://HOST:PORT [--once | --json]`: watch a running job
    from any host, joining at any time.

    Joining late: the monitor registers with the coordinator (role monitor: it never holds up or
    ends the job), subscribes to the events endpoint, waits until the subscription delivers (a
    probe it publishes on its own topic comes back, pf_client_confirm_subscription), and only
    then asks for a SNAPSHOT. The coordinator replays what it kept
    (coordinator/snapshot.h: the last event of every source and kind, the recent train events,
    the eval history, a `peer` event per process) and ends with SNAPSHOT_END. Every event after
    that point reaches the subscription, and events seen twice (in the replay and on the
    subscription) are told apart by their per-source sequence numbers, so nothing falls
    between the two. Sequence numbers that jump are shown as gaps (events lost on the way:
    a publisher's or the proxy's queue was full, or a slow subscriber), never hidden.

    --http HOST:PORT also serves the state, the events and curves over HTTP (cli/monitor_http.h,
    docs/protocol.md) and goes on serving after the job ends, until a signal; with it, the
    job's visual grids and eval images by step, from the work_dir the snapshot names (or
    --work-dir). `pixflow monitor --http HOST:PORT WORK_DIR...` (no --connect) serves finished
    runs instead: each run's metrics.jsonl is replayed once through apply(), the same
    bookkeeping live events go through, so a finished run's state and curves have the live
    ones' shape.

    Views: the default is a terminal view redrawn every --interval s (progress bar, ETA, it/s,
    samples/s, data wait, loss and lr sparklines, a GAN job's terms l_g_pix ... out_d_fake
    (each its latest value), loaders, workers, hooks, eval history, gaps, recent messages) until the job ends or Ctrl-C; --once prints the view once after the
    snapshot (plain text, for scripts and logs); --json prints every event, replayed ones first
    (with "replay": true), as one JSON object per line, gaps as {"kind": "gap", ...}, until the
    job ends. Exit status: 0 when the job finished or the view was printed, 1 when the
    coordinator cannot be reached or stops answering, 2 bad usage.
*/
#include "cli/commands.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/log.h"
#include "common/number.h"
#include "cli/monitor_http.h"
#include "common/util.h"
#include "hooks/event_json.h"
#include "runtime/client.h"
#include "proto/proto.h"
#include "runtime/reactor.h"
#include "proto/security.h"

#define MAX_ROWS 256
#define MAX_SOURCES 512
#define TRAIN_KEEP PF_MAX_SNAPSHOT_TRAIN
_Static_assert(PF_CURVE_COUNT - PF_CURVE_GAN == PF_GAN_N_TERMS, "a curve per GAN term");
#define DEFAULT_HISTORY 240
#define CMD "pixflow monitor"   /* for messages */
#define EVAL_KEEP 256
#define NOTES 6
#define SPARK_WIDTH 48

typedef struct {
    char source[PF_MAX_NAME];
    uint64_t last;                      /* highest sequence number seen */
    uint64_t missing;                   /* events lost in gaps */
    uint64_t gap_from, gap_to;          /* the latest gap */
} seq_track;

typedef struct {
    char name[PF_MAX_NAME], host[PF_MAX_NAME], state[16], role[PF_MAX_NAME], device[PF_MAX_NAME];
    int64_t pid, rank, iter, mem_bytes;
    int has_stats;                      /* loaders: a loader event came */
    double patches_per_s, bytes_per_s, hit_rate;
    int64_t cache_bytes, queue_depth;
    double seen;                        /* pf_now() of its last event (0 = from the snapshot) */
} row;

typedef struct {
    int64_t iter;
    double loss, lr, time, data_time;
} train_point;

typedef struct {
    int64_t iter;
    double psnr, ssim, psnr_bicubic, ssim_bicubic;
} eval_point;

typedef struct {
    /* job */
    char addr[PF_MAX_ENDPOINT];
    pf_msg_snapshot_end job;
    int have_job;
    double job_at;                      /* pf_now() when SNAPSHOT_END came */
    int64_t iter, epoch;
    int done;                           /* the coordinator's `done` event came */
    char done_text[256];
    /* rows */
    row loaders[MAX_ROWS], workers[MAX_ROWS], hooks[MAX_ROWS];
    int n_loaders, n_workers, n_hooks;
    /* history */
    train_point train[TRAIN_KEEP];
    int n_train, train_head;
    eval_point eval[EVAL_KEEP];
    int n_eval;
    double best_psnr;
    int64_t best_iter;
    char notes[NOTES][PF_MAX_NAME + 300];
    int n_notes;
    char last_ckpt[PF_MAX_ENDPOINT * 4];
    int64_t skipped;
    uint32_t gan_seen;                  /* a GAN job: the terms seen (bit i: gan_last[i]) */
    double gan_last[PF_GAN_N_TERMS];    /* each term's latest value (train events' gan[]) */
    /* sequence */
    seq_track seqs[MAX_SOURCES];
    int n_seqs;
    uint64_t events, duplicates, gaps, missing;
    int json;
    pf_monitor_http *http;              /* --http: the server fed from apply(), or NULL */
    int run;                            /* the server's run this monitor feeds */
    int from_file;                      /* a finished run read from metrics.jsonl: its events
                                           are not put in the server's ring */
} monitor;

/* ---- state ------------------------------------------------------------------------------- */

static row *find_row(row *rows, int *n, const char *name, int64_t rank) {
    for (int i = 0; i < *n; i++)
        if (rank >= 0 ? rows[i].rank == rank : strcmp(rows[i].name, name) == 0) return &rows[i];
    if (*n == MAX_ROWS) return NULL;
    row *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->rank = rank;
    snprintf(r->state, sizeof r->state, "joined");
    return r;
}

static void note(monitor *m, const pf_msg_event *ev) {
    if (m->n_notes == NOTES) {
        memmove(m->notes[0], m->notes[1], sizeof m->notes[0] * (NOTES - 1));
        m->n_notes--;
    }
    char *t = m->notes[m->n_notes++];
    snprintf(t, sizeof m->notes[0], "%s %s: %.280s", ev->source, ev->kind, ev->text);
    for (char *c = t; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

/* Sequence bookkeeping. Returns 0 for an event seen before (drop it), else 1; a jump past the
   next number is a gap (live events only: the replay is a selection on purpose). */
static int track(monitor *m, const pf_msg_event *ev, int live) {
    seq_track *t = NULL;
    for (int i = 0; i < m->n_seqs && !t; i++)
        if (strcmp(m->seqs[i].source, ev->source) == 0) t = &m->seqs[i];
    if (!t && m->n_seqs < MAX_SOURCES) {
        t = &m->seqs[m->n_seqs++];
        memset(t, 0, sizeof *t);
        snprintf(t->source, sizeof t->source, "%s", ev->source);
    }
    if (!t) return 1;
    if (ev->seq <= t->last) {
        /* The replay repeats the coordinator's latest number in its `peer` rows. */
        if (live) m->duplicates++;
        return !live && ev->seq == t->last && strcmp(ev->kind, "peer") == 0;
    }
    if (live && ev->seq > t->last + 1) {
        t->gap_from = t->last + 1;
        t->gap_to = ev->seq - 1;
        t->missing += t->gap_to - t->gap_from + 1;
        m->gaps++;
        m->missing += t->gap_to - t->gap_from + 1;
        if (m->json || m->http) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "kind", "gap");
            cJSON_AddStringToObject(o, "source", t->source);
            cJSON_AddNumberToObject(o, "from", (double)t->gap_from);
            cJSON_AddNumberToObject(o, "to", (double)t->gap_to);
            cJSON_AddNumberToObject(o, "missing", (double)(t->gap_to - t->gap_from + 1));
            char *line = cJSON_PrintUnformatted(o);
            if (line && m->json) printf("%s\n", line);
            if (line && m->http && !m->from_file) pf_monitor_http_event(m->http, line);
            fflush(stdout);
            free(line);
            cJSON_Delete(o);
        }
    }
    t->last = ev->seq;
    return 1;
}

/* One event as the one-line JSON object --json prints and GET /api/events sends (kind,
   source, seq, "replay": true for the snapshot's, then hooks/event_json.h's members).
   Returns a malloc'd string, NULL when out of memory. */
static char *event_line(const pf_msg_event *ev, int replay) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "kind", ev->kind);
    cJSON_AddStringToObject(o, "source", ev->source);
    cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
    if (replay) cJSON_AddBoolToObject(o, "replay", 1);
    pf_event_json_add(o, ev);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return line;
}

/* The event to --json's stdout and/or the --http ring. */
static void emit_event(const monitor *m, const pf_msg_event *ev, int replay) {
    char *line = event_line(ev, replay);
    if (!line) return;
    if (m->json) {
        printf("%s\n", line);
        fflush(stdout);
    }
    if (m->http && !m->from_file) pf_monitor_http_event(m->http, line);
    free(line);
}

/* A process that joins under a name seen before (a loader restarted with its name) numbers
   its events from 1 again: forget the old numbering. The coordinator announces the join
   before the process can publish, so this comes first. Live events only: in the replay the
   peer rows come after the events they would reset. */
static void restart_numbering(monitor *m, const pf_msg_event *ev) {
    for (int i = 0; i < m->n_seqs; i++)
        if (strcmp(m->seqs[i].source, ev->text) == 0) m->seqs[i].last = 0;
}

/* Control characters in strings from the network (a terminal escape in a host name) become
   '?' before anything is shown on the terminal. */
static void clean_str(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

static void apply(monitor *m, const pf_msg_event *raw, int live) {
    if (!track(m, raw, live)) return;
    if (live && !strcmp(raw->kind, "peer") && !strcmp(raw->state, "joined"))
        restart_numbering(m, raw);
    m->events++;
    /* cJSON escapes what it prints */
    if (m->json || (m->http && !m->from_file)) emit_event(m, raw, !live);
    static pf_msg_event copy;
    copy = *raw;
    char *strs[] = { copy.kind, copy.source, copy.text, copy.host, copy.role, copy.state,
                     copy.device, copy.path };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) clean_str(strs[i]);
    const pf_msg_event *ev = &copy;
    double now = live ? pf_now() : 0;
    if (!strcmp(ev->kind, "train")) {
        train_point *p = &m->train[(m->train_head + m->n_train) % TRAIN_KEEP];
        if (m->n_train == TRAIN_KEEP) m->train_head = (m->train_head + 1) % TRAIN_KEEP;
        else m->n_train++;
        *p = (train_point){ ev->iter, ev->loss, ev->lr, ev->time, ev->data_time };
        if (m->http) {
            pf_monitor_http_point(m->http, m->run, PF_CURVE_LOSS, (double)ev->iter, ev->loss);
            pf_monitor_http_point(m->http, m->run, PF_CURVE_LR, (double)ev->iter, ev->lr);
            if (ev->time > 0)
                pf_monitor_http_point(m->http, m->run, PF_CURVE_ITS, (double)ev->iter,
                                      1 / ev->time);
            pf_monitor_http_point(m->http, m->run, PF_CURVE_DATA_WAIT, (double)ev->iter,
                                  ev->data_time);
        }
        for (int i = 0; i < PF_GAN_N_TERMS; i++) {
            if (!(ev->gan_terms >> i & 1)) continue;
            m->gan_seen |= 1u << i;
            m->gan_last[i] = ev->gan[i];
            if (m->http)
                pf_monitor_http_point(m->http, m->run, PF_CURVE_GAN + i, (double)ev->iter,
                                      ev->gan[i]);
        }
        if (ev->iter > m->iter) m->iter = ev->iter;
        m->epoch = ev->epoch;
    } else if (!strcmp(ev->kind, "eval")) {
        if (m->n_eval == EVAL_KEEP) {
            memmove(m->eval, m->eval + 1, sizeof m->eval[0] * (EVAL_KEEP - 1));
            m->n_eval--;
        }
        m->eval[m->n_eval++] = (eval_point){ ev->iter, ev->psnr, ev->ssim, ev->psnr_bicubic,
                                             ev->ssim_bicubic };
        if (m->http)
            pf_monitor_http_point(m->http, m->run, PF_CURVE_PSNR, (double)ev->iter, ev->psnr);
        m->best_psnr = ev->best_psnr;
        m->best_iter = ev->best_iter;
    } else if (!strcmp(ev->kind, "loader")) {
        row *r = find_row(m->loaders, &m->n_loaders, ev->source, -1);
        if (!r) return;
        snprintf(r->host, sizeof r->host, "%s", ev->host);
        r->has_stats = 1;
        r->patches_per_s = ev->patches_per_s;
        r->bytes_per_s = ev->bytes_per_s;
        r->hit_rate = ev->hit_rate;
        r->cache_bytes = ev->cache_bytes;
        r->queue_depth = ev->queue_depth;
        r->seen = now;
    } else if (!strcmp(ev->kind, "worker")) {
        row *r = find_row(m->workers, &m->n_workers, ev->source, ev->rank);
        if (!r) return;
        snprintf(r->host, sizeof r->host, "%s", ev->host);
        snprintf(r->device, sizeof r->device, "%s", ev->device);
        r->pid = ev->pid;
        r->mem_bytes = ev->mem_bytes;
        r->iter = ev->iter;
        r->seen = now;
    } else if (!strcmp(ev->kind, "peer")) {
        row *r;
        if (!strcmp(ev->role, "loader")) r = find_row(m->loaders, &m->n_loaders, ev->text, -1);
        else if (!strcmp(ev->role, "worker"))
            r = find_row(m->workers, &m->n_workers, ev->text, ev->rank);
        else r = find_row(m->hooks, &m->n_hooks, ev->text, -1);
        if (!r) return;
        snprintf(r->role, sizeof r->role, "%s", ev->role);
        snprintf(r->host, sizeof r->host, "%s", ev->host);
        snprintf(r->state, sizeof r->state, "%s", ev->state);
        r->pid = ev->pid;
    } else if (!strcmp(ev->kind, "checkpoint")) {
        snprintf(m->last_ckpt, sizeof m->last_ckpt, "%s", ev->path);
    } else if (!strcmp(ev->kind, "skip")) {
        m->skipped++;
    } else if (!strcmp(ev->kind, "status") || !strcmp(ev->kind, "error") ||
               !strcmp(ev->kind, "done")) {
        note(m, ev);
        if (!strcmp(ev->kind, "done") && !strcmp(ev->source, "coordinator") && live) {
            m->done = 1;
            snprintf(m->done_text, sizeof m->done_text, "%s", ev->text);
        }
    }
}

/* ---- view -------------------------------------------------------------------------------- */

static void hms(double s, char *out, size_t n) {
    if (!(s >= 0) || s > 1e8) {
        snprintf(out, n, "--:--:--");
        return;
    }
    long t = (long)(s + 0.5);
    snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* The last `width` values of the train history, field `f`, as block characters scaled
   between their min and max. */
static void sparkline(const monitor *m, int f, int width, char *out, size_t n,
                      double *lo_out, double *hi_out) {
    static const char *blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
                                    "\u2587", "\u2588" };
    int k = m->n_train < width ? m->n_train : width;
    double v[SPARK_WIDTH], lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < k; i++) {
        const train_point *p = &m->train[(m->train_head + m->n_train - k + i) % TRAIN_KEEP];
        v[i] = f == 0 ? p->loss : p->lr;
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    out[0] = 0;
    size_t used = 0;
    for (int i = 0; i < k && used + 4 < n; i++) {
        int b = hi > lo ? (int)((v[i] - lo) / (hi - lo) * 7.0 + 0.5) : 3;
        used += (size_t)snprintf(out + used, n - used, "%s", blocks[b < 0 ? 0 : b > 7 ? 7 : b]);
    }
    *lo_out = k ? lo : 0;
    *hi_out = k ? hi : 0;
}

static const char *shown_state(const row *r, double now, char *buf, size_t n) {
    if (!strcmp(r->state, "joined")) {
        if (r->seen > 0 && now - r->seen > 6.0) {
            snprintf(buf, n, "quiet %.0fs", now - r->seen);
            return buf;
        }
        return "alive";
    }
    return r->state;
}

/* Seconds per step and data wait per step, means over the last 20 train events (0, 0: none). */
static void speed(const monitor *m, double *t_iter, double *t_data) {
    *t_iter = *t_data = 0;
    int k = m->n_train < 20 ? m->n_train : 20;
    for (int i = 0; i < k; i++) {
        const train_point *p = &m->train[(m->train_head + m->n_train - k + i) % TRAIN_KEEP];
        *t_iter += p->time;
        *t_data += p->data_time;
    }
    if (k) {
        *t_iter /= k;
        *t_data /= k;
    }
}

/* A GAN job's terms, each its latest value: "gan      l_g_pix: 1.2345e-02, ...". */
static void render_gan(const monitor *m, FILE *o) {
    if (!m->gan_seen) return;
    fprintf(o, "gan     ");
    for (int i = 0, first = 1; i < PF_GAN_N_TERMS; i++) {
        if (!(m->gan_seen >> i & 1)) continue;
        fprintf(o, "%s %s: %.4e", first ? "" : ",", pf_gan_term_name(i), m->gan_last[i]);
        first = 0;
    }
    fprintf(o, "\n");
}

static void render(const monitor *m, FILE *o) {
    double now = pf_now();
    const pf_msg_snapshot_end *j = &m->job;
    char up[32], eta[32];
    hms(j->uptime + (now - m->job_at), up, sizeof up);
    fprintf(o, "PixFlow job %s  model %s  work_dir %s\n", m->addr, j->model, j->work_dir);
    fprintf(o, "phase %s%s  up %s  workers %d  global batch %d\n", m->done ? "done" : j->phase,
            j->started || m->done ? "" : " (waiting for roles)", up, j->world_size, j->batch);
    /* progress */
    int64_t total = j->total_iters;
    double frac = total > 0 ? (double)m->iter / (double)total : 0;
    char bar[64];
    int w = 40, full = (int)(frac * w + 1e-9);
    for (int i = 0; i < w; i++) bar[i] = i < full ? '#' : '.';
    bar[w] = 0;
    double t_iter, t_data;
    speed(m, &t_iter, &t_data);
    hms(t_iter > 0 ? t_iter * (double)(total - m->iter) : -1, eta, sizeof eta);
    fprintf(o, "progress [%s] %" PRId64 "/%" PRId64 " %5.1f%%  epoch %" PRId64 "  ETA %s\n",
            bar, m->iter, total, 100 * frac, m->epoch, m->done ? "0:00:00" : eta);
    if (t_iter > 0)
        fprintf(o, "speed    %.2f it/s  %.1f samples/s  data wait %.4f s/step (%.1f%%)\n",
                1 / t_iter, j->batch / t_iter, t_data, 100 * t_data / t_iter);
    else
        fprintf(o, "speed    (no training step yet)\n");
    char sp[SPARK_WIDTH * 4 + 4];
    double lo, hi;
    if (m->n_train) {
        const train_point *last = &m->train[(m->train_head + m->n_train - 1) % TRAIN_KEEP];
        sparkline(m, 0, SPARK_WIDTH, sp, sizeof sp, &lo, &hi);
        fprintf(o, "loss     %.5f %s [%.4g..%.4g]\n", last->loss, sp, lo, hi);
        sparkline(m, 1, SPARK_WIDTH, sp, sizeof sp, &lo, &hi);
        fprintf(o, "lr       %.3e %s [%.3g..%.3g]\n", last->lr, sp, lo, hi);
    }
    render_gan(m, o);
    /* loaders */
    int alive = 0;
    for (int i = 0; i < m->n_loaders; i++) alive += !strcmp(m->loaders[i].state, "joined");
    fprintf(o, "loaders  %d (%d alive)\n", m->n_loaders, alive);
    if (m->n_loaders)
        fprintf(o, "  %-20s %-16s %8s %-9s %10s %8s %6s %9s %5s\n", "name", "host", "pid",
                "state", "patches/s", "MB/s", "hit%", "cache MB", "queue");
    char st[32];
    for (int i = 0; i < m->n_loaders; i++) {
        const row *r = &m->loaders[i];
        fprintf(o, "  %-20s %-16s %8" PRId64 " %-9s", r->name, r->host, r->pid,
                shown_state(r, now, st, sizeof st));
        if (r->has_stats)
            fprintf(o, " %10.1f %8.2f %6.1f %9.1f %5" PRId64 "\n", r->patches_per_s,
                    r->bytes_per_s / 1e6, 100 * r->hit_rate, r->cache_bytes / 1048576.0,
                    r->queue_depth);
        else
            fprintf(o, " %10s\n", "-");
    }
    fprintf(o, "workers  %d\n", m->n_workers);
    for (int i = 0; i < m->n_workers; i++) {
        const row *r = &m->workers[i];
        fprintf(o, "  rank %-3" PRId64 " %-16s pid %-8" PRId64 " %-9s device %-8s mem %.1f MiB\n",
                r->rank, r->host, r->pid, shown_state(r, now, st, sizeof st),
                r->device[0] ? r->device : "?", r->mem_bytes / 1048576.0);
    }
    fprintf(o, "hooks   ");
    for (int i = 0; i < m->n_hooks; i++)
        fprintf(o, "%s %s (%s, %s)", i ? "," : "", m->hooks[i].role, m->hooks[i].host,
                shown_state(&m->hooks[i], now, st, sizeof st));
    fprintf(o, "\n");
    /* eval */
    if (m->n_eval) {
        fprintf(o, "eval     best %.4f dB at iter %" PRId64 "; last %d:\n", m->best_psnr,
                m->best_iter, m->n_eval < 5 ? m->n_eval : 5);
        for (int i = m->n_eval < 5 ? 0 : m->n_eval - 5; i < m->n_eval; i++)
            fprintf(o, "  iter %-8" PRId64 " PSNR %.4f dB  SSIM %.4f  (bicubic %.4f dB, %.4f)\n",
                    m->eval[i].iter, m->eval[i].psnr, m->eval[i].ssim, m->eval[i].psnr_bicubic,
                    m->eval[i].ssim_bicubic);
    } else {
        fprintf(o, "eval     none yet\n");
    }
    if (m->last_ckpt[0]) fprintf(o, "checkpoint %s\n", m->last_ckpt);
    if (m->skipped) fprintf(o, "skipped samples: %" PRId64 "\n", m->skipped);
    fprintf(o, "events   %" PRIu64 " (%" PRIu64 " duplicates dropped); gaps: ", m->events,
            m->duplicates);
    if (!m->gaps) fprintf(o, "none\n");
    else {
        fprintf(o, "%" PRIu64 " events missing in %" PRIu64 " gaps:", m->missing, m->gaps);
        for (int i = 0; i < m->n_seqs; i++)
            if (m->seqs[i].missing)
                fprintf(o, " %s %" PRIu64 " (last: seq %" PRIu64 "-%" PRIu64 ")",
                        m->seqs[i].source, m->seqs[i].missing, m->seqs[i].gap_from,
                        m->seqs[i].gap_to);
        fprintf(o, "\n");
    }
    for (int i = 0; i < m->n_notes; i++) fprintf(o, "  | %s\n", m->notes[i]);
    if (m->done) fprintf(o, "job ended: %s\n", m->done_text);
    fflush(o);
}

/* The rows of a table as a JSON array (loaders also with their throughput). */
static cJSON *rows_json(const row *rows, int n, int loaders, double now) {
    cJSON *a = cJSON_CreateArray();
    char st[32];
    for (int i = 0; a && i < n; i++) {
        const row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", r->name);
        if (r->role[0]) cJSON_AddStringToObject(o, "role", r->role);
        if (r->rank >= 0) cJSON_AddNumberToObject(o, "rank", (double)r->rank);
        cJSON_AddStringToObject(o, "host", r->host);
        cJSON_AddNumberToObject(o, "pid", (double)r->pid);
        cJSON_AddStringToObject(o, "state", shown_state(r, now, st, sizeof st));
        cJSON_AddBoolToObject(o, "alive", !strcmp(r->state, "joined"));
        if (r->seen > 0) cJSON_AddNumberToObject(o, "quiet_s", now - r->seen);
        if (loaders && r->has_stats) {
            cJSON_AddNumberToObject(o, "patches_per_s", r->patches_per_s);
            cJSON_AddNumberToObject(o, "bytes_per_s", r->bytes_per_s);
            cJSON_AddNumberToObject(o, "hit_rate", r->hit_rate);
            cJSON_AddNumberToObject(o, "cache_bytes", (double)r->cache_bytes);
            cJSON_AddNumberToObject(o, "queue_depth", (double)r->queue_depth);
        }
        if (!loaders && r->device[0]) {
            cJSON_AddStringToObject(o, "device", r->device);
            cJSON_AddNumberToObject(o, "mem_bytes", (double)r->mem_bytes);
            cJSON_AddNumberToObject(o, "iter", (double)r->iter);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* What render() shows, as one JSON object (GET /api/state; docs/protocol.md lists the
   members). Returns a malloc'd string, NULL when out of memory. */
static char *state_json(const monitor *m) {
    double now = pf_now();
    const pf_msg_snapshot_end *j = &m->job;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON *job = cJSON_AddObjectToObject(o, "job");
    cJSON_AddStringToObject(job, "coordinator", m->addr);
    cJSON_AddStringToObject(job, "model", j->model);
    cJSON_AddStringToObject(job, "work_dir", j->work_dir);
    cJSON_AddStringToObject(job, "phase", m->done ? "done" : j->phase);
    cJSON_AddBoolToObject(job, "started", j->started || m->done);
    cJSON_AddBoolToObject(job, "done", m->done);
    if (m->done) cJSON_AddStringToObject(job, "done_text", m->done_text);
    cJSON_AddNumberToObject(job, "uptime_s", m->have_job ? j->uptime + (now - m->job_at) : 0);
    cJSON_AddNumberToObject(job, "world_size", j->world_size);
    cJSON_AddNumberToObject(job, "batch", j->batch);
    double t_iter, t_data;
    speed(m, &t_iter, &t_data);
    cJSON *p = cJSON_AddObjectToObject(o, "progress");
    cJSON_AddNumberToObject(p, "iter", (double)m->iter);
    cJSON_AddNumberToObject(p, "total_iters", (double)j->total_iters);
    cJSON_AddNumberToObject(p, "epoch", (double)m->epoch);
    cJSON_AddNumberToObject(p, "fraction",
                            j->total_iters > 0 ? (double)m->iter / (double)j->total_iters : 0);
    if (m->done) cJSON_AddNumberToObject(p, "eta_s", 0);
    else if (t_iter > 0 && j->total_iters >= m->iter && !m->from_file)
        cJSON_AddNumberToObject(p, "eta_s", t_iter * (double)(j->total_iters - m->iter));
    else cJSON_AddNullToObject(p, "eta_s");
    if (t_iter > 0) {
        cJSON_AddNumberToObject(p, "it_per_s", 1 / t_iter);
        cJSON_AddNumberToObject(p, "samples_per_s", j->batch / t_iter);
        cJSON_AddNumberToObject(p, "data_wait_s", t_data);
    }
    if (m->n_train) {
        const train_point *last = &m->train[(m->train_head + m->n_train - 1) % TRAIN_KEEP];
        cJSON_AddNumberToObject(p, "loss", last->loss);
        cJSON_AddNumberToObject(p, "learning_rate", last->lr);
    }
    if (m->gan_seen) {
        cJSON *g = cJSON_AddObjectToObject(p, "gan");     /* each term's latest value */
        for (int i = 0; i < PF_GAN_N_TERMS; i++)
            if (m->gan_seen >> i & 1)
                cJSON_AddNumberToObject(g, pf_gan_term_name(i), m->gan_last[i]);
    }
    cJSON_AddItemToObject(o, "loaders", rows_json(m->loaders, m->n_loaders, 1, now));
    cJSON_AddItemToObject(o, "workers", rows_json(m->workers, m->n_workers, 0, now));
    cJSON_AddItemToObject(o, "hooks", rows_json(m->hooks, m->n_hooks, 0, now));
    cJSON *ev = cJSON_AddObjectToObject(o, "eval");
    if (m->n_eval) {
        cJSON_AddNumberToObject(ev, "best_psnr", m->best_psnr);
        cJSON_AddNumberToObject(ev, "best_iter", (double)m->best_iter);
    }
    cJSON *hist = cJSON_AddArrayToObject(ev, "history");
    for (int i = 0; i < m->n_eval; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "iter", (double)m->eval[i].iter);
        cJSON_AddNumberToObject(e, "psnr", m->eval[i].psnr);
        cJSON_AddNumberToObject(e, "ssim", m->eval[i].ssim);
        cJSON_AddNumberToObject(e, "psnr_bicubic", m->eval[i].psnr_bicubic);
        cJSON_AddNumberToObject(e, "ssim_bicubic", m->eval[i].ssim_bicubic);
        cJSON_AddItemToArray(hist, e);
    }
    if (m->last_ckpt[0]) cJSON_AddStringToObject(o, "checkpoint", m->last_ckpt);
    else cJSON_AddNullToObject(o, "checkpoint");
    cJSON_AddNumberToObject(o, "skipped", (double)m->skipped);
    cJSON *c = cJSON_AddObjectToObject(o, "events");
    cJSON_AddNumberToObject(c, "count", (double)m->events);
    cJSON_AddNumberToObject(c, "duplicates", (double)m->duplicates);
    cJSON_AddNumberToObject(c, "gaps", (double)m->gaps);
    cJSON_AddNumberToObject(c, "missing", (double)m->missing);
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (int i = 0; i < m->n_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(m->notes[i]));
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* GET /api/state's document from the monitor's state now. */
static void publish_state(const monitor *m) {
    if (!m->http) return;
    char *text = state_json(m);
    if (text) pf_monitor_http_set_state(m->http, m->run, text);
    free(text);
}

/* ---- finished runs ----------------------------------------------------------------------- */

/* The last component of `path` ("runs/a/" -> "a") into name. Returns name. */
static const char *last_component(const char *path, char *name, size_t n) {
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    snprintf(name, n, "%.*s", (int)(end - start), path + start);
    return name;
}

static double json_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;   /* null: NaN, as the hook wrote it */
}

static int64_t json_int(const cJSON *o, const char *key) {
    double v = json_num(o, key);
    return v == v ? (int64_t)v : 0;
}

static void json_str(const cJSON *o, const char *key, char *out, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v)) snprintf(out, n, "%s", v->valuestring);
}

/* One line of metrics.jsonl back into the event the log hook wrote it from (hooks/log.c:
   kind, source, then hooks/event_json.c's members; train lines are averages over
   log_config.interval iterations). Returns 0, or -1 for a line that is not an event. */
static int event_from_line(const char *line, pf_msg_event *ev) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!cJSON_IsObject(o) || !cJSON_IsString(kind)) {
        cJSON_Delete(o);
        return -1;
    }
    memset(ev, 0, sizeof *ev);
    json_str(o, "kind", ev->kind, sizeof ev->kind);
    json_str(o, "source", ev->source, sizeof ev->source);
    ev->iter = json_int(o, "iter");
    ev->epoch = json_int(o, "epoch");
    ev->loss = json_num(o, "loss");
    ev->lr = json_num(o, "lr");
    ev->time = json_num(o, strcmp(ev->kind, "loader") ? "time" : "interval");
    ev->data_time = json_num(o, "data_time");
    ev->count = json_int(o, "skipped");
    ev->psnr = json_num(o, "psnr");
    ev->ssim = json_num(o, "ssim");
    ev->psnr_bicubic = json_num(o, "psnr_bicubic");
    ev->ssim_bicubic = json_num(o, "ssim_bicubic");
    ev->psnr_inf = json_int(o, "psnr_inf");
    ev->psnr_bicubic_inf = json_int(o, "psnr_bicubic_inf");
    ev->best_psnr = json_num(o, "best_psnr");
    ev->best_iter = json_int(o, "best_iter");
    ev->patches_per_s = json_num(o, "patches_per_s");
    ev->bytes_per_s = json_num(o, "bytes_per_s");
    ev->hit_rate = json_num(o, "hit_rate");
    ev->cache_bytes = json_int(o, "cache_bytes");
    ev->queue_depth = json_int(o, "queue_depth");
    ev->sample = json_int(o, "sample");
    ev->rank = cJSON_GetObjectItemCaseSensitive(o, "rank") ? (int32_t)json_int(o, "rank") : -1;
    ev->pid = json_int(o, "pid");
    ev->mem_bytes = json_int(o, "mem_bytes");
    json_str(o, "host", ev->host, sizeof ev->host);
    json_str(o, "role", ev->role, sizeof ev->role);
    json_str(o, "state", ev->state, sizeof ev->state);
    json_str(o, "device", ev->device, sizeof ev->device);
    json_str(o, "text", ev->text, sizeof ev->text);
    json_str(o, "name", ev->text, sizeof ev->text);             /* peer */
    json_str(o, "path", ev->path, sizeof ev->path);
    json_str(o, "checkpoint", ev->path, sizeof ev->path);       /* eval */
    for (int i = 0; !strcmp(ev->kind, "train") && i < PF_GAN_N_TERMS; i++) {
        if (!cJSON_GetObjectItemCaseSensitive(o, pf_gan_term_name(i))) continue;
        ev->gan_terms |= 1u << i;                                  /* a GAN job's terms */
        ev->gan[i] = json_num(o, pf_gan_term_name(i));
    }
    cJSON_Delete(o);
    return 0;
}

/* Serve the finished run in `dir` as run `index`: its config.yaml (written by the coordinator:
   model, total_iters, visual_config.output_dir), its metrics.jsonl replayed through apply()
   into the state and curves. Returns 0, or -1 with a message on stderr. */
static int load_run(pf_monitor_http *h, int index, const char *dir) {
    char path[PF_PATH_MAX + 32], name[256], err[1024], visual[PF_PATH_MAX + 16];
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "pixflow monitor: %s: not a folder (a run's work_dir)\n", dir);
        return -1;
    }
    static pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    size_t len;
    char *yaml = pf_read_file(path, &len, err, sizeof err);
    if (yaml && pf_config_parse(&cfg, path, yaml, len, 0, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow monitor: %s (served without it)\n", err);
        pf_config_defaults(&cfg);
    }
    free(yaml);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pixflow monitor: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (cfg.visual_output_dir[0])
        snprintf(visual, sizeof visual, "%s", cfg.visual_output_dir);
    else
        snprintf(visual, sizeof visual, "%s/visuals", dir);
    monitor *m = calloc(1, sizeof *m);
    pf_msg_event *ev = malloc(sizeof *ev);
    if (!m || !ev || pf_monitor_http_set_run(h, index, last_component(dir, name, sizeof name),
                                             dir, visual) != 0) {
        fprintf(stderr, "pixflow monitor: %s: out of memory or a path too long\n", dir);
        fclose(f);
        free(m);
        free(ev);
        return -1;
    }
    m->http = h;
    m->run = index;
    m->from_file = 1;
    snprintf(m->job.work_dir, sizeof m->job.work_dir, "%s", dir);
    snprintf(m->job.model, sizeof m->job.model, "%s", cfg.model_type);
    snprintf(m->job.phase, sizeof m->job.phase, "finished");
    m->job.total_iters = cfg.total_iters;
    char *line = NULL;
    size_t cap = 0;
    uint64_t seq = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        if (event_from_line(line, ev) != 0) {
            bad++;
            continue;
        }
        ev->seq = ++seq;
        apply(m, ev, 0);
        if (!strcmp(ev->kind, "train")) m->job.started = 1;
        if (!strcmp(ev->kind, "done") && !strcmp(ev->source, "coordinator")) {
            m->done = 1;
            snprintf(m->done_text, sizeof m->done_text, "%s", ev->text);
        }
    }
    free(line);
    fclose(f);
    /* the run is over: no process of it is alive, whatever its last line said */
    row *tables[3] = {m->loaders, m->workers, m->hooks};
    int counts[3] = {m->n_loaders, m->n_workers, m->n_hooks};
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < counts[t]; i++)
            if (!strcmp(tables[t][i].state, "joined"))
                snprintf(tables[t][i].state, sizeof tables[t][i].state, "ended");
    if (bad) fprintf(stderr, "pixflow monitor: %s: %" PRIu64 " lines not events, skipped\n",
                     path, bad);
    /* The log hook may stop before the coordinator's `done` reaches it: a run whose last
       train line is its last iteration is done too. */
    if (cfg.total_iters > 0 && m->iter >= cfg.total_iters) m->done = 1;
    publish_state(m);
    free(ev);
    free(m);
    return 0;
}

/* ---- main -------------------------------------------------------------------------------- */

static int usage(void) {
    fprintf(stderr, "usage: pixflow monitor --connect tcp://HOST:PORT [--once | --json] "
                    "[--interval S] [--history N (train events replayed, <= 4096)] "
                    "[--join-timeout S] [--keys DIR]\n"
                    "       [--http HOST:PORT [--http-ring N (events, >= 2)] "
                    "[--http-clients N] [--work-dir DIR (the job's, as seen here)]]\n"
                    "   or: pixflow monitor --http HOST:PORT [--http-clients N] WORK_DIR... "
                    "(finished runs, at most %d)\n", PF_HTTP_MAX_RUNS);
    return 2;
}

/* Take every event waiting on `sub`. */
static void drain(monitor *m, void *sub, int live) {
    pf_msg_event *ev = malloc(sizeof *ev);
    char err[256];
    while (ev && pf_events_recv(sub, ZMQ_DONTWAIT, ev, err, sizeof err) == 0) apply(m, ev, live);
    free(ev);
}

/* The monitor's loop: SNAPSHOT until SNAPSHOT_END comes on ctrl (the subscription meanwhile
   buffers: it is not read), then LIVE: events from the subscription, the view redrawn every
   --interval s, until the job's `done` event. A 100 ms tick watches the coordinator. */
typedef struct {
    monitor *m;
    pf_client *cl;
    void *sub;
    int once, json, tty;
    double interval;
    int live;                   /* the snapshot is in */
    int rc;                     /* the exit status when the loop ends */
    pf_timer *deadline;         /* SNAPSHOT: gives up after 10 s */
    const char *http_bind;      /* --http HOST:PORT, or NULL */
    const char *work_dir;       /* --work-dir: where the job's files are seen from here, or NULL
                                   (the work_dir the job reports) */
    int http_ring, http_clients;
    int ended;                  /* the job's `done` came (--http goes on serving) */
    int exit_with_parent;       /* started by `pixflow train --http`: it ends with the job */
} monitor_loop;

#define SNAPSHOT_TIMEOUT_S 10.0
#define MONITOR_TICK_S 0.1

static void draw(monitor_loop *l) {
    if (l->tty) fputs("\033[H\033[2J", stdout);
    render(l->m, stdout);
    if (!l->tty) fputs("\n", stdout);
}

static int on_draw(pf_reactor *r, void *arg) {
    draw(arg);
    return 0;
}

/* The job's `done` came: the last view, status 0. With --http the monitor goes on serving
   the finished job until a signal ends it. */
static int job_ended(monitor_loop *l) {
    if (l->ended) return 0;
    l->ended = 1;
    publish_state(l->m);
    if (!l->json) {
        if (l->tty) fputs("\033[H\033[2J", stdout);
        render(l->m, stdout);
    }
    l->rc = 0;
    if (l->m->http) {
        if (!l->exit_with_parent)
            fprintf(stderr, "pixflow monitor: the job ended; still serving --http until "
                            "Ctrl-C\n");
        return 0;
    }
    return -1;
}

static int on_publish(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    if (l->live) publish_state(l->m);
    return 0;
}

static int on_live_events(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    drain(l->m, l->sub, 1);
    return l->m->done ? job_ended(l) : 0;
}

/* SNAPSHOT_END came: print it (--json), take what the subscription buffered, then the
   view once (--once, status 0) or LIVE. */
static int go_live(pf_reactor *r, monitor_loop *l) {
    monitor *m = l->m;
    pf_reactor_cancel(r, &l->deadline);
    l->live = 1;
    if (l->json) {
        printf("{\"kind\":\"snapshot_end\",\"events\":%u,\"total_iters\":%" PRId64
               ",\"world_size\":%d,\"batch\":%d,\"phase\":\"%s\",\"uptime\":%.3f}\n",
               m->job.events, m->job.total_iters, m->job.world_size, m->job.batch, m->job.phase,
               m->job.uptime);
        fflush(stdout);
    }
    drain(m, l->sub, 1);
    publish_state(m);
    if (l->once) {
        render(m, stdout);
        l->rc = 0;
        return -1;
    }
    if (m->done) return job_ended(l);
    if (!l->json) {
        draw(l);
        if (!pf_reactor_every(r, l->interval > 0 ? l->interval : 0.001, on_draw, l)) return -1;
    }
    return pf_reactor_reader(r, l->sub, on_live_events, l);
}

/* The folders --http serves the job's images and files from: --work-dir, or the work_dir the
   job reports (as its coordinator's host sees it: the same path here when the monitor runs
   there or on a shared file system); the visual grids in visual_config.output_dir (from the
   config WELCOME carried) or WORK_DIR/visuals. */
static void serve_job_dirs(monitor_loop *l) {
    if (!l->m->http) return;
    const char *wd = l->work_dir ? l->work_dir : l->m->job.work_dir;
    char visual[PF_PATH_MAX + 16];
    if (l->cl->cfg.visual_output_dir[0] && !l->work_dir)
        snprintf(visual, sizeof visual, "%s", l->cl->cfg.visual_output_dir);
    else
        snprintf(visual, sizeof visual, "%s/visuals", wd);
    char name[256];
    if (pf_monitor_http_set_run(l->m->http, 0, last_component(wd, name, sizeof name), wd,
                                visual) != 0)
        fprintf(stderr, "pixflow monitor: the work_dir's path is too long to serve its files\n");
}

static int on_monitor_ctrl(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    monitor *m = l->m;
    pf_msg *msg = NULL;
    if (l->live) {  /* STOP etc.: nothing for a monitor */
        while (pf_client_recv(l->cl, &msg) == 1) pf_client_msg_free(&msg);
        return 0;
    }
    while (!m->have_job && pf_client_recv(l->cl, &msg) == 1) {
        if (msg->type == PF_MSG_EVENT) apply(m, &msg->u.event, 0);
        else if (msg->type == PF_MSG_SNAPSHOT_END) {
            m->job = msg->u.snapshot_end;
            m->have_job = 1;
            m->job_at = pf_now();
            serve_job_dirs(l);
        }
        pf_client_msg_free(&msg);
    }
    return m->have_job ? go_live(r, l) : 0;
}

static int no_snapshot(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    fprintf(stderr, "pixflow monitor: no snapshot from the coordinator at %s\n", l->m->addr);
    return -1;
}

static int on_monitor_tick(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    if (l->ended || pf_client_coordinator_alive(l->cl)) return 0;
    if (!l->live) return no_snapshot(r, l);
    if (!l->json && l->tty) render(l->m, stdout);
    fprintf(stderr, "pixflow monitor: the coordinator at %s stopped answering\n", l->m->addr);
    return -1;
}

static int on_monitor_signal(pf_reactor *r, void *arg) {
    monitor_loop *l = arg;
    l->rc = l->live ? 0 : 1;    /* Ctrl-C ends a live view normally */
    return -1;
}

/* Run the loop on a joined, subscribed monitor that has asked for its snapshot. Returns the
   exit status. */
static int monitor_run(monitor_loop *l) {
    l->rc = 1;
    l->tty = isatty(STDOUT_FILENO);
    pf_reactor *r = pf_reactor_new();
    int ok = r && pf_reactor_reader(r, l->cl->ctrl, on_monitor_ctrl, l) == 0 &&
             pf_reactor_every(r, MONITOR_TICK_S, on_monitor_tick, l) &&
             (l->deadline = pf_reactor_after(r, SNAPSHOT_TIMEOUT_S, no_snapshot, l));
    if (ok && l->m->http) ok = pf_reactor_every(r, 0.25, on_publish, l) != NULL;
    if (ok) pf_reactor_on_signal(r, on_monitor_signal, l);
    if (!ok || pf_reactor_run(r) != 0) {
        fprintf(stderr, "pixflow monitor: the monitor's loop failed\n");
        l->rc = 1;
    }
    pf_reactor_destroy(&r);
    return l->rc;
}

/* Subscribe, confirm that the subscription delivers, ask for the snapshot. Returns the SUB
   or NULL after a message. */
static void *monitor_subscribe(pf_client *cl, void *zctx, int history) {
    char err[1024];
    void *sub = pf_events_subscribe(zctx, cl->events_sub, NULL);
    if (!sub) {
        fprintf(stderr, "pixflow monitor: cannot subscribe to events at %s\n", cl->events_sub);
        return NULL;
    }
    /* The subscription travels to the proxy asynchronously: a probe published on our own
       topic coming back proves it delivers. Events that arrive before it were forwarded before
       the snapshot request, so the snapshot covers them: they are dropped here. */
    if (pf_client_confirm_subscription(cl, sub, 10.0, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow monitor: %s\n", err);
        zmq_close(sub);
        return NULL;
    }
    pf_msg req = { .type = PF_MSG_SNAPSHOT };
    req.u.snapshot.max_train = (uint32_t)history;
    if (pf_client_send(cl, &req, NULL, 0) != 0) {
        fprintf(stderr, "pixflow monitor: cannot ask %s for a snapshot\n", cl->addr);
        zmq_close(sub);
        return NULL;
    }
    return sub;
}

/* Parse argv. Returns 0, or 2 after the usage message. */
static int monitor_args(int argc, char **argv, const char **addr, const char **keys,
                        monitor_loop *l, double *join_timeout, int *history, char **dirs,
                        int *n_dirs) {
    *n_dirs = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] != '-' && *n_dirs < argc) dirs[(*n_dirs)++] = argv[i];
        else if (!strcmp(argv[i], "--connect") && i + 1 < argc) *addr = argv[++i];
        else if (!strcmp(argv[i], "--work-dir") && i + 1 < argc) l->work_dir = argv[++i];
        else if (!strcmp(argv[i], "--once")) l->once = 1;
        else if (!strcmp(argv[i], "--json")) l->json = 1;
        else if (!strcmp(argv[i], "--keys") && i + 1 < argc) *keys = argv[++i];
        else if (!strcmp(argv[i], "--http") && i + 1 < argc) l->http_bind = argv[++i];
        else if (!strcmp(argv[i], "--exit-with-parent")) l->exit_with_parent = 1;
        else if (!strcmp(argv[i], "--http-ring") && i + 1 < argc) {
            if (pf_arg_int(CMD, "--http-ring", argv[++i], 2, 1 << 20, &l->http_ring)) return 2;
        } else if (!strcmp(argv[i], "--http-clients") && i + 1 < argc) {
            if (pf_arg_int(CMD, "--http-clients", argv[++i], 1, 1024, &l->http_clients))
                return 2;
        }
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            if (pf_arg_seconds(CMD, "--interval", argv[++i], 3600, &l->interval)) return 2;
        } else if (!strcmp(argv[i], "--history") && i + 1 < argc) {
            if (pf_arg_int(CMD, "--history", argv[++i], 0, TRAIN_KEEP, history)) return 2;
        } else if (!strcmp(argv[i], "--join-timeout") && i + 1 < argc) {
            if (pf_arg_seconds(CMD, "--join-timeout", argv[++i], PF_MAX_WAIT_S, join_timeout))
                return 2;
        } else return usage();
    }
    if (*n_dirs)    /* finished runs: --http and the folders, no job */
        return *addr || !l->http_bind || l->once || l->json || l->work_dir ? usage() : 0;
    return !*addr || (l->once && l->json) || (l->once && l->http_bind) ? usage() : 0;
}

/* --http: start the server and say where it listens (with the token a non-loopback address
   needs) on stderr. Returns the server, or NULL with a message in err. */
/* hold: answer 503 "loading" until pf_monitor_http_hold(h, 0) (finished runs being read). */
static pf_monitor_http *monitor_http_start(const monitor_loop *l, int hold, char *err,
                                           size_t errlen) {
    pf_monitor_http *h = pf_monitor_http_start(l->http_bind, (size_t)l->http_ring,
                                               l->http_clients, err, errlen);
    if (!h) return NULL;
    if (hold) pf_monitor_http_hold(h, 1);
    const char *token = pf_monitor_http_token(h);
    if (token)
        fprintf(stderr, "pixflow monitor: serving http://%s/ (the dashboard: open "
                        "http://%s/?token=%s; API under /api/: state, events, curves, images; "
                        "/files/); token %s (Authorization: Bearer TOKEN or ?token=TOKEN)\n",
                l->http_bind, l->http_bind, token, token);
    else
        fprintf(stderr, "pixflow monitor: serving http://%s/ (the dashboard; API under /api/: "
                        "state, events, curves, images; /files/)\n",
                l->http_bind);
    return h;
}

static int on_idle(pf_reactor *r, void *arg) {
    (void)r;
    (void)arg;
    return 0;   /* the loop only waits for a signal; the server's threads do the work */
}

/* `pixflow monitor --http ADDR WORK_DIR...`: serve the finished runs until a signal. Returns
   the exit status. */
static int serve_finished(monitor_loop *l, char **dirs, int n) {
    char err[1024];
    if (n > PF_HTTP_MAX_RUNS) {
        fprintf(stderr, "pixflow monitor: at most %d runs at once\n", PF_HTTP_MAX_RUNS);
        return 2;
    }
    for (int i = 0; i < n; i++) {   /* before the server says it serves */
        char path[PF_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/metrics.jsonl", dirs[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "pixflow monitor: %s: %s (WORK_DIR: a run's work_dir, where the "
                    "log hook wrote metrics.jsonl)\n", path, strerror(errno));
            return 1;
        }
    }
    pf_monitor_http *h = monitor_http_start(l, 1, err, sizeof err);
    if (!h) {
        fprintf(stderr, "pixflow monitor: %s\n", err);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) rc = load_run(h, i, dirs[i]);
    pf_monitor_http_hold(h, 0);     /* every run read: answer */
    pf_reactor *r = rc == 0 ? pf_reactor_new() : NULL;
    if (r && !pf_reactor_every(r, 1.0, on_idle, NULL)) pf_reactor_destroy(&r);
    if (r) {
        fprintf(stderr, "pixflow monitor: %d finished run%s served until Ctrl-C\n", n,
                n > 1 ? "s" : "");
        l->live = 1;
        pf_reactor_on_signal(r, on_monitor_signal, l);
        rc = pf_reactor_run(r) != 0 ? 1 : 0;
    } else if (rc == 0) {
        rc = 1;
    }
    pf_reactor_destroy(&r);
    pf_monitor_http_stop(&h);
    return rc ? 1 : 0;
}

int pf_monitor_main(int argc, char **argv) {
    const char *addr = NULL, *keys = NULL;
    double join_timeout = 10.0;
    int history = DEFAULT_HISTORY;
    static monitor m;
    static pf_client cl;
    memset(&m, 0, sizeof m);
    monitor_loop l = { .m = &m, .cl = &cl, .interval = 1.0, .http_ring = PF_HTTP_RING_DEFAULT,
                       .http_clients = PF_HTTP_CLIENTS_DEFAULT };
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    int n_dirs = 0;
    if (!dirs || monitor_args(argc, argv, &addr, &keys, &l, &join_timeout, &history, dirs,
                              &n_dirs)) {
        free(dirs);
        return 2;
    }
    pf_log_set_name("monitor");
    pf_catch_signals();
    /* Started by `pixflow train --http`: a front end killed outright (SIGKILL) cannot stop
       this server, which would otherwise serve the finished job forever. */
    if (l.exit_with_parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1)) {
        fprintf(stderr, "pixflow monitor: the pixflow train that started this monitor is gone\n");
        free(dirs);
        return 1;
    }
    if (n_dirs) {
        int rc = serve_finished(&l, dirs, n_dirs);
        free(dirs);
        return rc;
    }
    free(dirs);
    m.json = l.json;
    snprintf(m.addr, sizeof m.addr, "%s", addr);
    char err[1024];
    if (l.http_bind && !(m.http = monitor_http_start(&l, 0, err, sizeof err))) {
        fprintf(stderr, "pixflow monitor: %s\n", err);
        return 1;
    }
    /* A CURVE job (security.curve): this monitor's key pair must be in the job's allowed/. */
    if (pf_security_init_peer(keys, PF_SEC_CLIENT, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow monitor: %s\n", err);
        pf_monitor_http_stop(&m.http);
        return 1;
    }
    void *zctx = pf_zmq_ctx_new();
    if (!zctx) {
        fprintf(stderr, "pixflow monitor: cannot create a ZeroMQ context\n");
        pf_monitor_http_stop(&m.http);
        return 1;
    }
    if (pf_client_join_wait(&cl, zctx, addr, PF_ROLE_MONITOR, "monitor", "", join_timeout, 0,
                            err, sizeof err) != 0) {
        fprintf(stderr, "pixflow monitor: %s\n", err);
        pf_zmq_ctx_term(zctx);
        pf_monitor_http_stop(&m.http);
        return 1;
    }
    l.sub = monitor_subscribe(&cl, zctx, history);
    int rc = l.sub ? monitor_run(&l) : 1;
    if (l.sub) zmq_close(l.sub);
    pf_msg bye = { .type = PF_MSG_DONE };   /* frees this monitor's slot */
    bye.u.done.rank = -1;
    snprintf(bye.u.done.text, sizeof bye.u.done.text, "monitor leaving");
    pf_client_send(&cl, &bye, NULL, 0);
    pf_client_close(&cl);
    pf_zmq_ctx_term(zctx);
    pf_monitor_http_stop(&m.http);
    return rc;
}
