/*  loader_sink — a worker without a model, to measure what real `pixflow loader` processes
    deliver through the real coordinator (bench/loader/run.sh starts them all).

    It binds a PULL data endpoint, joins the job as a worker (HELLO names that endpoint), waits
    for START, grants data.prefetch credits, and for every batch that arrives checks it as the
    worker does (three frames, a valid `batch` header for this rank and patch size, frame sizes
    that match), ACKs it and returns its credit at once. Batches are taken in arrival order (the
    worker takes them in ticket order; the count is the same). With no training step in between,
    the loaders and the coordinator set the pace.

    Warm-up: the first tickets make each loader decode every image (and compute its bicubic LQ)
    once; that is excluded. The window starts once every expected loader (one per --loader-pid)
    has delivered WARMUP_BATCHES batches and --warmup seconds have passed since the first batch;
    it lasts --window seconds. Then one line goes to stdout,

      sink loaders=2 gt_patch=96 flip=1 rot=1 batch=16 prefetch=16 window_s=12.00 batches=...
           patches_per_s=... payload_MB_per_s=... NAME_cpu_s=... loader_cpu_s=...
           patches_per_loader_cpu_s=... sink_cpu_s=... per_loader_batches=A/B rejected=0

    (payload = GT + LQ pixel frames, MB = 1e6 bytes; CPU seconds from /proc over the window),
    the sink sends DONE; the coordinator then stops the loaders and hooks and exits with 130
    (the job stopped before total_iters, as after an interrupt). The sink keeps taking batches
    for DRAIN_S more seconds before it leaves: a loader with batches still on their way to it
    would otherwise wait for its send buffers, miss the STOP, and exit with an error once the
    coordinator has gone (see bench/README.md).

    The coordinator starts a job only when the checkpoint, eval and log hooks have joined, so
    run.sh starts the real hooks too (they stay idle: the sink never checkpoints).

    usage: bench_loader_sink --connect EP [--warmup S] [--window S] [--loader-pid PID]...
                             [--pid NAME=PID]...
    Exit status: 0 after a measurement, 1 on failure (message on stderr), 2 on bad usage.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "bench/loader/proc_cpu.h"
#include "common/util.h"
#include "runtime/client.h"
#include "proto/proto.h"

#define MAX_PIDS 16
#define MAX_LOADERS 64
#define WARMUP_BATCHES 20       /* per loader, on top of --warmup seconds */
#define WARMUP_LIMIT_S 120.0    /* give up when the loaders have not warmed up by then */
#define DRAIN_S 2.0             /* after DONE, keep taking (and dropping) batches this long */

typedef struct {
    char name[PF_MAX_NAME];     /* "loader" for --loader-pid, else NAME of --pid NAME=PID */
    long pid;
    double cpu0;                /* CPU seconds at the start of the window */
} watched;

typedef struct {
    uint32_t id;                /* the loader's peer id (batch.loader_id) */
    long batches;               /* since the start */
    long at_window;             /* batches at the start of the window */
} loader_count;

typedef struct {
    pf_client client;
    void *data;                 /* PULL, bound; its endpoint went out in HELLO */
    watched pids[MAX_PIDS];
    int n_pids, n_loader_pids;
    loader_count loaders[MAX_LOADERS];
    int n_loaders;
    long batches;               /* valid batches received */
    double payload_bytes;       /* GT + LQ frame bytes received */
    long rejected;              /* batches that failed the checks */
} sink;

static void usage(void) {
    fprintf(stderr, "usage: bench_loader_sink --connect tcp://HOST:PORT [--warmup S] "
                    "[--window S] [--loader-pid PID]... [--pid NAME=PID]...\n");
}

static loader_count *count_for(sink *s, uint32_t id) {
    for (int i = 0; i < s->n_loaders; i++)
        if (s->loaders[i].id == id) return &s->loaders[i];
    if (s->n_loaders == MAX_LOADERS) return NULL;
    loader_count *l = &s->loaders[s->n_loaders++];
    l->id = id;
    return l;
}

/* Take one message off the data socket: check it as the worker does, then ACK it and return
   its credit. Returns 1 for a batch taken, 0 when nothing was waiting or the message was
   dropped, -1 when the coordinator cannot be told (send failed). */
static int take_batch(sink *s) {
    pf_parts p;
    char err[512] = "";
    if (pf_parts_recv(s->data, ZMQ_DONTWAIT, &p, err, sizeof err) != 0) return 0;
    const pf_config *cfg = &s->client.cfg;
    size_t gp = (size_t)cfg->train.gt_patch_size, lp = gp / (size_t)cfg->scale;
    pf_msg *m = malloc(sizeof *m);
    const char *why = NULL;
    if (!m) why = "out of memory";
    else if (p.n != 3) why = "expected 3 frames (header, gt, lq)";
    else if (pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_BATCH, m, err,
                           sizeof err) != 0) why = err;
    else if (m->u.batch.rank != s->client.rank) why = "batch for another rank";
    else if (m->u.batch.n != (uint32_t)cfg->samples_per_gpu) why = "wrong batch size";
    else if (m->u.batch.gt_h != gp || m->u.batch.gt_w != gp || m->u.batch.lq_h != lp ||
             m->u.batch.lq_w != lp) why = "wrong patch size";
    else if (pf_parts_size(&p, 1) != m->u.batch.n * gp * gp * 3 ||
             pf_parts_size(&p, 2) != m->u.batch.n * lp * lp * 3)
        why = "frame sizes do not match the header";
    if (why) {
        fprintf(stderr, "bench_loader_sink: dropped a batch message: %s\n", why);
        s->rejected++;
        pf_parts_close(&p);
        free(m);
        return 0;
    }
    loader_count *l = count_for(s, m->u.batch.loader_id);
    if (l) l->batches++;
    s->batches++;
    s->payload_bytes += (double)(pf_parts_size(&p, 1) + pf_parts_size(&p, 2));
    pf_msg ack = { .type = PF_MSG_ACK };
    ack.u.ack.ticket_id = m->u.batch.ticket_id;
    ack.u.ack.rank = s->client.rank;
    pf_msg credit = { .type = PF_MSG_CREDIT };
    credit.u.credit.rank = s->client.rank;
    credit.u.credit.n = 1;
    credit.u.credit.next_iter = m->u.batch.iter + 1;
    pf_parts_close(&p);
    free(m);
    if (pf_client_send(&s->client, &ack, NULL, 0) != 0 ||
        pf_client_send(&s->client, &credit, NULL, 0) != 0) {
        fprintf(stderr, "bench_loader_sink: cannot send ack/credit to the coordinator: %s\n",
                zmq_strerror(errno));
        return -1;
    }
    return 1;
}

/* Read the coordinator's messages. Returns 1 once START has come, 0 otherwise, -1 on STOP. */
static int poll_ctrl(sink *s) {
    pf_msg *m;
    int rc, started = 0;
    while ((rc = pf_client_recv(&s->client, &m)) != 0) {
        if (rc < 0) continue;
        if (m->type == PF_MSG_START) started = 1;
        if (m->type == PF_MSG_STOP) {
            fprintf(stderr, "bench_loader_sink: stopped by the coordinator (%s): %s\n",
                    m->u.stop.reason, m->u.stop.text);
            pf_client_msg_free(&m);
            return -1;
        }
        pf_client_msg_free(&m);
    }
    return started;
}

/* 1 when every expected loader has delivered WARMUP_BATCHES batches. */
static int loaders_warm(const sink *s) {
    int warm = 0;
    for (int i = 0; i < s->n_loaders; i++) warm += s->loaders[i].batches >= WARMUP_BATCHES;
    return warm >= (s->n_loader_pids ? s->n_loader_pids : 1);
}

static void print_result(sink *s, double window, long batches, double bytes) {
    const pf_config *cfg = &s->client.cfg;
    double patches = (double)batches * cfg->samples_per_gpu;
    double loader_cpu = 0;
    printf("sink loaders=%d gt_patch=%d flip=%d rot=%d batch=%d prefetch=%d window_s=%.2f "
           "batches=%ld patches_per_s=%.1f payload_MB_per_s=%.1f", s->n_loader_pids,
           cfg->train.gt_patch_size, cfg->train.use_flip, cfg->train.use_rot,
           cfg->samples_per_gpu, cfg->prefetch, window, batches, patches / window,
           bytes / window / 1e6);
    for (int i = 0; i < s->n_pids; i++) {
        double cpu = bench_cpu_seconds(s->pids[i].pid) - s->pids[i].cpu0;
        if (strcmp(s->pids[i].name, "loader") == 0) loader_cpu += cpu;
        else printf(" %s_cpu_s=%.2f", s->pids[i].name, cpu);
    }
    if (s->n_loader_pids)
        printf(" loader_cpu_s=%.2f patches_per_loader_cpu_s=%.1f", loader_cpu,
               loader_cpu > 0 ? patches / loader_cpu : 0.0);
    printf(" sink_cpu_s=%.2f per_loader_batches=", bench_cpu_seconds(getpid()) -
                                                       s->pids[s->n_pids].cpu0);
    for (int i = 0; i < s->n_loaders; i++)
        printf("%s%ld", i ? "/" : "", s->loaders[i].batches - s->loaders[i].at_window);
    printf(" rejected=%ld\n", s->rejected);
    fflush(stdout);
}

int main(int argc, char **argv) {
    static sink s;
    const char *addr = NULL;
    double warmup = 3.0, window = 12.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) {
            addr = argv[++i];
        } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
            warmup = atof(argv[++i]);
        } else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            window = atof(argv[++i]);
        } else if ((strcmp(argv[i], "--loader-pid") == 0 || strcmp(argv[i], "--pid") == 0) &&
                   i + 1 < argc && s.n_pids < MAX_PIDS - 1) {
            watched *w = &s.pids[s.n_pids];
            int is_loader = strcmp(argv[i], "--loader-pid") == 0;
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (is_loader) {
                snprintf(w->name, sizeof w->name, "loader");
                s.n_loader_pids++;
            } else if (eq && eq > v && eq - v < PF_MAX_NAME) {
                snprintf(w->name, sizeof w->name, "%.*s", (int)(eq - v), v);
                v = eq + 1;
            } else {
                usage();
                return 2;
            }
            w->pid = strtol(v, NULL, 10);
            if (w->pid <= 0) {
                usage();
                return 2;
            }
            s.n_pids++;
        } else {
            usage();
            return 2;
        }
    }
    if (!addr || warmup < 0 || window <= 0) {
        usage();
        return 2;
    }
    /* The slot after the watched processes holds the sink itself. */
    snprintf(s.pids[s.n_pids].name, sizeof s.pids[s.n_pids].name, "sink");
    s.pids[s.n_pids].pid = getpid();
    pf_catch_signals();
    char err[2048] = "";
    void *zctx = zmq_ctx_new();
    s.data = zctx ? zmq_socket(zctx, ZMQ_PULL) : NULL;
    if (!s.data) {
        fprintf(stderr, "bench_loader_sink: cannot open a ZeroMQ socket: %s\n",
                zmq_strerror(errno));
        return 1;
    }
    int linger = 0, hwm = 256;   /* as the worker's data socket */
    char data_ep[PF_MAX_ENDPOINT];
    if (zmq_setsockopt(s.data, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(s.data, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        pf_bind_report(s.data, "data", "tcp://127.0.0.1:*", data_ep, sizeof data_ep, err,
                       sizeof err) != 0 ||
        pf_client_join(&s.client, zctx, addr, PF_ROLE_WORKER, "sink", data_ep, err,
                       sizeof err) != 0) {
        fprintf(stderr, "bench_loader_sink: %s\n", err[0] ? err : zmq_strerror(errno));
        zmq_close(s.data);
        zmq_ctx_term(zctx);
        return 1;
    }
    int status = 1, started = 0;
    double t_first = 0, t_window = 0, t_end = 0, deadline = pf_now() + WARMUP_LIMIT_S;
    long batches0 = 0;
    double bytes0 = 0;
    while (!pf_signalled) {
        if (!pf_client_coordinator_alive(&s.client)) {
            snprintf(err, sizeof err, "the coordinator stopped answering");
            break;
        }
        zmq_pollitem_t items[] = { { s.data, 0, ZMQ_POLLIN, 0 },
                                   { s.client.ctrl, 0, ZMQ_POLLIN, 0 } };
        if (zmq_poll(items, 2, 100) < 0 && errno != EINTR) {
            snprintf(err, sizeof err, "poll: %s", zmq_strerror(errno));
            break;
        }
        int rc = poll_ctrl(&s);
        if (rc < 0) {
            snprintf(err, sizeof err, "stopped by the coordinator");
            break;
        }
        if (rc == 1 && !started) {
            started = 1;
            pf_msg credit = { .type = PF_MSG_CREDIT };
            credit.u.credit.rank = s.client.rank;
            credit.u.credit.n = (uint32_t)s.client.cfg.prefetch;
            credit.u.credit.next_iter = 0;
            if (pf_client_send(&s.client, &credit, NULL, 0) != 0) {
                snprintf(err, sizeof err, "cannot send credits: %s", zmq_strerror(errno));
                break;
            }
        }
        while ((rc = take_batch(&s)) == 1) {}
        if (rc < 0) {
            snprintf(err, sizeof err, "lost the coordinator");
            break;
        }
        double now = pf_now();
        if (!t_first && s.batches) t_first = now;
        if (!t_window && t_first && now - t_first >= warmup && loaders_warm(&s)) {
            t_window = now;
            t_end = now + window;
            batches0 = s.batches;
            bytes0 = s.payload_bytes;
            for (int i = 0; i <= s.n_pids; i++) {
                s.pids[i].cpu0 = bench_cpu_seconds(s.pids[i].pid);
                if (s.pids[i].cpu0 < 0) {
                    snprintf(err, sizeof err, "cannot read the CPU time of %s pid %ld",
                             s.pids[i].name, s.pids[i].pid);
                    break;
                }
            }
            if (err[0]) break;
            for (int i = 0; i < s.n_loaders; i++) s.loaders[i].at_window = s.loaders[i].batches;
        }
        if (!t_window && now > deadline) {
            snprintf(err, sizeof err, "%d loader(s) delivered no %d batches each within %.0f s "
                     "(%ld batches from %d loaders)", s.n_loader_pids ? s.n_loader_pids : 1,
                     WARMUP_BATCHES, WARMUP_LIMIT_S, s.batches, s.n_loaders);
            break;
        }
        if (t_window && now >= t_end) {
            print_result(&s, now - t_window, s.batches - batches0, s.payload_bytes - bytes0);
            status = 0;
            break;
        }
    }
    if (pf_signalled && status) snprintf(err, sizeof err, "signal %d", (int)pf_signalled);
    if (status) fprintf(stderr, "bench_loader_sink: %s\n", err);
    pf_msg done = { .type = PF_MSG_DONE };
    done.u.done.rank = s.client.rank;
    done.u.done.iter = s.batches;
    done.u.done.status = status;
    snprintf(done.u.done.text, sizeof done.u.done.text, "%s",
             status ? err : "bench_loader_sink: measured");
    if (pf_client_send(&s.client, &done, NULL, 0) != 0)
        fprintf(stderr, "bench_loader_sink: cannot send DONE: %s\n", zmq_strerror(errno));
    for (double until = pf_now() + DRAIN_S; pf_now() < until && !pf_signalled;) {
        zmq_pollitem_t it = { s.data, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) <= 0) continue;
        pf_parts p;
        while (pf_parts_recv(s.data, ZMQ_DONTWAIT, &p, err, sizeof err) == 0) pf_parts_close(&p);
    }
    zmq_close(s.data);
    pf_client_close(&s.client);
    zmq_ctx_term(zctx);
    return status;
}
