/*  loader — `pixflow loader --connect ADDR [--join-timeout S]`: turns tickets into batches.

    It joins the job through the coordinator (waiting, with back-off, for one that is not up
    yet), opens the train set named in the config it is given, and serves TICKETs in the order
    they come: each ticket's samples are decoded and augmented by pf_dataset_sample (crop and
    flips drawn from (seed, epoch, sample index); decoded images cached up to data.cache_mb),
    split over data.loader_threads threads that write straight into a batch buffer, and the
    buffer's GT and LQ frames (and, with data.train.gt_plain, the unsharpened GT's: a third
    frame) go to the worker the ticket names without a copy (the buffer
    returns to its pool when ZeroMQ has written them). It keeps no state that matters: if it
    dies, the coordinator gives its tickets to another loader and the batches come out
    bit-identical.

    Every LOADER_EVENT_S seconds, and when it leaves, it publishes a `loader` event: patches/s,
    payload bytes/s, cache hit rate and bytes, and its queue (tickets received, not served).

    A sample whose file has become unreadable: with data.on_bad_sample `fail` the loader sends
    DONE with the error (naming the file) and the coordinator ends the job; with `skip` the
    sample is left out of its batch (the batch lists it under `skipped`), logged, and
    published as a `skip` event.

    Bounds: at most LOADER_BUFFERS batches of pixels in memory (the pool), at most MAX_QUEUE
    tickets queued (the coordinator never sends more than the workers' credits anyway).
*/
#include "loader/loader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/dataset.h"
#include "common/log.h"
#include "common/number.h"
#include "common/util.h"
#include "loader/batch_builder.h"
#include "loader/batch_pool.h"
#include "runtime/client.h"
#include "proto/proto.h"
#include "runtime/reactor.h"
#include "proto/security.h"

#define MAX_WORKERS 64
#define LOADER_BUFFERS 4        /* batch buffers: being filled + being written out */
#define MAX_QUEUE 1024          /* tickets waiting; beyond (a confused coordinator) dropped */
#define LOADER_EVENT_S 2.0      /* a `loader` event this often */
#define SIGNAL_GRACE_S 10.0     /* in a group: serve on this long after a signal at most */

typedef struct {
    char endpoint[PF_MAX_ENDPOINT];
    void *push;                     /* PUSH connected to that worker's data endpoint */
} worker_link;

/* What the loader did over one event interval. */
typedef struct {
    double since;                   /* pf_now() at the start of the interval */
    uint64_t patches, bytes;        /* samples and GT + LQ bytes sent */
    uint64_t hits, misses;          /* cache counters at the start of the interval */
} interval;

typedef struct {
    pf_client client;
    const char *name;
    pf_dataset ds;
    pf_batch_builder *builder;
    pf_batch_pool *pool;
    size_t gt_size, lq_size;        /* bytes of one sample's GT and LQ */
    int gt_plain;                   /* data.train.gt_plain: batches carry the gt_plain frame */
    worker_link links[MAX_WORKERS];
    int n_links;
    pf_msg_ticket *queue;           /* ring of MAX_QUEUE tickets received, not yet served */
    int q_head, q_len;
    pf_msg *batch_msg;              /* header of the batch being sent (reused) */
    interval iv;
    uint64_t batches, patches, skipped;
    double busy_s;                  /* time spent making and sending batches */
    double joined_at, first_ticket_at;
    double signal_at;               /* pf_now() when the first signal was seen, 0 none */
    int signal_count;               /* pf_signal_count then */
} loader;

/* 1 when a signal says leave. A loader leaves on SIGINT/SIGTERM/SIGHUP (its tickets go to the
   other loaders), at once when the job has one worker. In a group (world_size > 1) its ranks
   stop after one agreed step, and when a scheduler signals every process at once a rank may
   still wait for its batch of that step: so there the loader serves on until the coordinator's
   STOP (which comes once the workers have checkpointed), a second signal, or SIGNAL_GRACE_S. */
static int leaving(loader *l) {
    if (!pf_signal_count) return 0;
    if (!l->signal_at) {
        l->signal_at = pf_now();
        l->signal_count = (int)pf_signal_count;
        if (l->client.world_size > 1)
            pf_info("signal %d: serving until the job stops (%d workers stop after the same "
                    "step), %.0f s at most", (int)pf_signalled, (int)l->client.world_size,
                    SIGNAL_GRACE_S);
    }
    return l->client.world_size <= 1 || pf_signal_count != l->signal_count ||
           pf_now() - l->signal_at > SIGNAL_GRACE_S;
}

static void *link_for(loader *l, const char *endpoint) {
    for (int i = 0; i < l->n_links; i++)
        if (strcmp(l->links[i].endpoint, endpoint) == 0) return l->links[i].push;
    if (l->n_links == MAX_WORKERS) return NULL;
    void *s = zmq_socket(l->client.zctx, ZMQ_PUSH);
    int linger = 1000, hwm = 64, tmo = 10000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
    if (pf_security_client(s) != 0 || zmq_connect(s, endpoint) != 0) {
        pf_error("cannot connect to worker data endpoint '%s': %s", endpoint,
                 zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    worker_link *k = &l->links[l->n_links++];
    snprintf(k->endpoint, sizeof k->endpoint, "%s", endpoint);
    k->push = s;
    return s;
}

/* The file a sample's error is about: the LQ file when the error names it, else the GT file
   (the sample's own). */
static const char *bad_file(const pf_dataset *ds, uint32_t index, const char *err) {
    if (ds->video) {    /* the error names the clip and frame */
        const pf_clip *c = NULL;   /* the longest clip name the error holds */
        for (int i = 0; i < ds->video->n_clips; i++)
            if (strstr(err, ds->video->clips[i].name) &&
                (!c || strlen(ds->video->clips[i].name) > strlen(c->name)))
                c = &ds->video->clips[i];
        return c ? c->gt_path : ds->cfg.gt_folder;
    }
    const pf_sample_file *f = &ds->files[index % (uint32_t)ds->n_files];
    return f->lq_path[0] && strstr(err, f->lq_path) ? f->lq_path : f->gt_path;
}

/* --- events ----------------------------------------------------------------------------- */

/* Publish the `loader` event for the interval that ends now and start the next one. */
static void publish_stats(loader *l, const char *text) {
    pf_cache_stats cs;
    pf_dataset_cache_stats(&l->ds, &cs);
    double now = pf_now(), dt = now - l->iv.since;
    uint64_t hits = cs.hits - l->iv.hits, misses = cs.misses - l->iv.misses;
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        snprintf(ev->kind, sizeof ev->kind, "loader");
        snprintf(ev->host, sizeof ev->host, "%s", pf_hostname());
        snprintf(ev->text, sizeof ev->text, "%s", text);
        ev->time = dt;
        ev->patches_per_s = dt > 0 ? (double)l->iv.patches / dt : 0;
        ev->bytes_per_s = dt > 0 ? (double)l->iv.bytes / dt : 0;
        ev->hit_rate = hits + misses ? (double)hits / (double)(hits + misses) : 0;
        ev->cache_bytes = (int64_t)cs.bytes;
        ev->queue_depth = l->q_len;
        ev->count = (int64_t)l->skipped;
        pf_client_publish(&l->client, ev);
        pf_debug("%.0f patches/s, %.1f MB/s, cache hit rate %.2f (%.1f MiB held), queue %d",
                 ev->patches_per_s, ev->bytes_per_s / 1e6, ev->hit_rate,
                 (double)cs.bytes / (1 << 20), l->q_len);
        free(ev);
    }
    l->iv = (interval){ .since = now, .hits = cs.hits, .misses = cs.misses };
}

/* A sample left out (on_bad_sample: skip): say so in the log and on the event bus. */
static void report_skip(loader *l, const pf_msg_ticket *t, uint32_t index, const char *why) {
    l->skipped++;
    const char *file = bad_file(&l->ds, index, why);
    pf_warn("skipped sample %u (epoch %u, iteration %lld) of ticket %llu: %s", index, t->epoch,
            (long long)t->iter, (unsigned long long)t->ticket_id, why);
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    snprintf(ev->kind, sizeof ev->kind, "skip");
    snprintf(ev->host, sizeof ev->host, "%s", pf_hostname());
    snprintf(ev->path, sizeof ev->path, "%s", file);
    snprintf(ev->text, sizeof ev->text, "%s", why);
    ev->iter = t->iter;
    ev->epoch = t->epoch;
    ev->sample = index;
    ev->count = (int64_t)l->skipped;
    pf_client_publish(&l->client, ev);
    free(ev);
}

/* --- batches ---------------------------------------------------------------------------- */

/* A ticket naming samples the train set does not have. Returns 0, or -1 with err. */
static int check_ticket(const loader *l, const pf_msg_ticket *t, char *err, size_t errlen) {
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->indices[i] >= l->ds.len) {
            snprintf(err, errlen, "ticket %llu names sample %u but data.train has %u",
                     (unsigned long long)t->ticket_id, t->indices[i], l->ds.len);
            return -1;
        }
    }
    return 0;
}

/* Build the batch of one ticket in `buf` (from the pool) and send it. Returns 0, or -1 with
   err (fatal for this loader: an unreadable image fails the same way in any loader, so the
   job must hear about it). */
static int serve_ticket(loader *l, const pf_msg_ticket *t, pf_batch_buf *buf, char *err,
                        size_t errlen) {
    const pf_config *cfg = &l->client.cfg;
    int failed = pf_batch_builder_fill(l->builder, cfg->seed, t->epoch, t->indices, t->n,
                                       buf->gt, buf->lq, buf->gt_plain);
    pf_msg_batch *b = &l->batch_msg->u.batch;
    memset(b, 0, sizeof *b);
    b->ticket_id = t->ticket_id;
    b->epoch = t->epoch;
    b->iter = t->iter;
    b->rank = t->rank;
    b->gt_h = b->gt_w = (uint32_t)cfg->train.gt_patch_size;
    b->lq_h = b->lq_w = (uint32_t)(cfg->train.gt_patch_size / cfg->scale);
    b->loader_id = l->client.peer_id;
    b->gt_plain = (uint32_t)l->gt_plain;
    /* a sliding-window set's one GT frame a sample (absent when GT and LQ frames agree) */
    b->gt_frames = l->ds.gt_frames != l->ds.frames ? (uint32_t)l->ds.gt_frames : 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const char *why = failed ? pf_batch_builder_error(l->builder, i) : NULL;
        if (why && !cfg->skip_bad_samples) {
            snprintf(err, errlen, "sample %u (epoch %u, iteration %lld): %s (data.on_bad_sample"
                     " is fail; set it to skip to train on without such samples)",
                     t->indices[i], t->epoch, (long long)t->iter, why);
            pf_batch_pool_put(buf);
            return -1;
        }
        if (why) {
            report_skip(l, t, t->indices[i], why);
            b->skipped[b->n_skipped++] = t->indices[i];
            continue;
        }
        /* Close the gap left by skipped samples: the frames hold the others in order. */
        if (b->n != i) {
            memmove(buf->gt + b->n * l->gt_size, buf->gt + i * l->gt_size, l->gt_size);
            memmove(buf->lq + b->n * l->lq_size, buf->lq + i * l->lq_size, l->lq_size);
            if (buf->gt_plain)
                memmove(buf->gt_plain + b->n * l->gt_size, buf->gt_plain + i * l->gt_size,
                        l->gt_size);
        }
        b->indices[b->n++] = t->indices[i];
    }
    pf_frame frames[3] = { { buf->gt, b->n * l->gt_size }, { buf->lq, b->n * l->lq_size },
                           { buf->gt_plain, b->n * l->gt_size } };
    int n_frames = l->gt_plain ? 3 : 2;
    void *push = link_for(l, t->endpoint);
    int rc = -1;
    if (push) {
        pf_batch_pool_hand_over(buf, n_frames);
        rc = pf_send_zc(push, NULL, l->batch_msg, frames, n_frames, pf_batch_pool_frame_done,
                        buf);
    } else {
        pf_batch_pool_put(buf);
    }
    if (rc != 0) {
        /* Not fatal: the ticket stays outstanding at the coordinator, which reissues it; a
           worker that is gone ends the job there. */
        pf_warn("could not send batch %llu to '%s': %s", (unsigned long long)t->ticket_id,
                t->endpoint, push ? zmq_strerror(errno) : "no connection");
        return 0;
    }
    l->batches++;
    l->patches += b->n;
    l->iv.patches += b->n;
    l->iv.bytes += frames[0].size + frames[1].size + (l->gt_plain ? frames[2].size : 0);
    return 0;
}

/* --- the loop --------------------------------------------------------------------------- */

/* The loader's loop: ctrl is a reader (tickets to the queue, STOP ends the loop); `serve` is
   a task, ready while tickets wait, serving one per loop round so that ctrl is heard between
   two batches; a timer publishes the `loader` event every LOADER_EVENT_S; a 200 ms tick
   watches the coordinator and the signal grace. */
typedef struct {
    loader *l;
    const char *addr;
    pf_task *serve;
    int status;                 /* the exit status when the loop ends */
    char *err;
    size_t errlen;
} loader_loop;

#define LOADER_TICK_S 0.2
#define BUFFER_WAIT_S 0.2       /* longest wait for a free batch buffer inside one step */

/* Take what the coordinator sent without waiting. Tickets go to the queue. Returns 1 when
   told to stop, else 0. */
static int take_ctrl(loader *l) {
    pf_msg *m;
    int rc, stop = 0;
    while (!stop && (rc = pf_client_recv(&l->client, &m)) != 0) {
        if (rc < 0) continue;
        if (m->type == PF_MSG_TICKET) {
            if (!l->first_ticket_at) {
                l->first_ticket_at = pf_now();
                pf_info("first ticket %.0f ms after joining",
                        1000 * (l->first_ticket_at - l->joined_at));
            }
            if (l->q_len == MAX_QUEUE) {
                pf_warn("ticket queue full (%d): dropped ticket %llu; the coordinator reissues "
                        "it", MAX_QUEUE, (unsigned long long)m->u.ticket.ticket_id);
            } else {
                l->queue[(l->q_head + l->q_len++) % MAX_QUEUE] = m->u.ticket;
            }
        } else if (m->type == PF_MSG_STOP) {
            pf_info("stop (%s): %s", m->u.stop.reason, m->u.stop.text);
            stop = 1;
        }
        pf_client_msg_free(&m);
    }
    return stop;
}

static int on_loader_ctrl(pf_reactor *r, void *arg) {
    loader_loop *ll = arg;
    if (take_ctrl(ll->l)) {
        ll->status = 0;
        return -1;
    }
    pf_task_ready(ll->serve, ll->l->q_len > 0);
    return 0;
}

/* One step of `serve`: the ticket at the head of the queue. When every batch buffer is still
   queued to workers (one may have left with batches in its queue) it waits BUFFER_WAIT_S at
   most and tries again in the next round, so a STOP, a signal or the coordinator's silence is
   heard meanwhile. */
static int on_serve(pf_reactor *r, void *arg) {
    loader_loop *ll = arg;
    loader *l = ll->l;
    const pf_msg_ticket *t = &l->queue[l->q_head];
    double t0 = pf_now();
    if (check_ticket(l, t, ll->err, ll->errlen) != 0) return -1;
    pf_batch_buf *buf = pf_batch_pool_take(l->pool, BUFFER_WAIT_S);
    if (buf && serve_ticket(l, t, buf, ll->err, ll->errlen) != 0) return -1;
    l->busy_s += pf_now() - t0;
    if (!buf) return 0;
    l->q_head = (l->q_head + 1) % MAX_QUEUE;
    l->q_len--;
    pf_task_ready(ll->serve, l->q_len > 0);
    return 0;
}

static int on_loader_stats(pf_reactor *r, void *arg) {
    loader_loop *ll = arg;
    publish_stats(ll->l, "");
    return 0;
}

static int on_loader_tick(pf_reactor *r, void *arg) {
    loader_loop *ll = arg;
    if (leaving(ll->l)) {
        ll->status = 0;
        return -1;
    }
    if (!pf_client_coordinator_alive(&ll->l->client)) {
        pf_error("coordinator at %s stopped answering; exiting", ll->addr);
        return -1;
    }
    return 0;
}

static int on_loader_signal(pf_reactor *r, void *arg) {
    loader_loop *ll = arg;
    if (!leaving(ll->l)) return 0;
    ll->status = 0;
    return -1;
}

/* Serve tickets until STOP, a signal, a fatal error or the coordinator's silence. Returns the
   exit status (1 with err on a fatal error; 1 with err empty when the coordinator went
   silent, already logged). */
static int run(loader *l, const char *addr, char *err, size_t errlen) {
    loader_loop ll = { .l = l, .addr = addr, .status = 1, .err = err, .errlen = errlen };
    l->iv.since = pf_now();
    pf_reactor *r = pf_reactor_new();
    int ok = r && pf_reactor_reader(r, l->client.ctrl, on_loader_ctrl, &ll) == 0 &&
             (ll.serve = pf_reactor_task(r, on_serve, &ll)) &&
             pf_reactor_every(r, LOADER_EVENT_S, on_loader_stats, &ll) &&
             pf_reactor_every(r, LOADER_TICK_S, on_loader_tick, &ll);
    if (ok) pf_reactor_on_signal(r, on_loader_signal, &ll);
    if (!ok || pf_reactor_run(r) != 0) {
        snprintf(err, errlen, "the loader's loop failed");
        ll.status = 1;
    }
    pf_reactor_destroy(&r);
    return ll.status;
}

static void send_done(loader *l, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void send_done(loader *l, int status, const char *fmt, ...) {
    pf_msg d = { .type = PF_MSG_DONE };
    d.u.done.rank = -1;
    d.u.done.status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d.u.done.text, sizeof d.u.done.text, fmt, ap);
    va_end(ap);
    pf_client_send(&l->client, &d, NULL, 0);
}

static void usage(void) {
    fprintf(stderr, "usage: pixflow loader --connect tcp://HOST:PORT [--name NAME] "
                    "[--join-timeout SECONDS] [--keys DIR]\n");
}

/* Parse argv. Returns 0, or 2 after the usage message. */
static int loader_args(int argc, char **argv, const char **addr, const char **name,
                       const char **keys, double *join_timeout) {
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) {
            *addr = argv[++i];
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            *name = argv[++i];
        } else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) {
            *keys = argv[++i];
        } else if (strcmp(argv[i], "--join-timeout") == 0 && i + 1 < argc) {
            if (pf_arg_seconds("pixflow loader", "--join-timeout", argv[++i], PF_MAX_WAIT_S,
                               join_timeout))
                return 2;
        } else {
            usage();
            return 2;
        }
    }
    if (!*addr) {
        usage();
        return 2;
    }
    return 0;
}

/* After the join: the log file, the train set, the batch builder, the pool and the queue.
   Returns 0, or -1 with err. */
static int loader_open(loader *l, char *err, size_t errlen) {
    const pf_config *cfg = &l->client.cfg;
    pf_log_set_level(cfg->log_level);
    char logpath[PF_PATH_MAX + 96];
    snprintf(logpath, sizeof logpath, "%s/%s.log", cfg->work_dir, l->name);
    if (pf_mkdirs(cfg->work_dir, err, errlen) == 0) pf_log_open_file(logpath);
    err[0] = '\0';
    if (pf_dataset_open(&l->ds, &cfg->train, "data.train", cfg->scale,
                        cfg->train.gt_patch_size, err, errlen) != 0)
        return -1;
    pf_dataset_set_cache_limit(&l->ds, (size_t)cfg->cache_mb << 20);
    l->builder = pf_batch_builder_new(&l->ds, cfg->loader_threads, err, errlen);
    if (l->builder) pf_batch_builder_sample_sizes(l->builder, &l->gt_size, &l->lq_size);
    size_t n = (size_t)cfg->samples_per_gpu;
    l->gt_plain = cfg->train.gt_plain != 0;
    l->pool = l->builder ? pf_batch_pool_new(LOADER_BUFFERS, n * l->gt_size, n * l->lq_size,
                                             l->gt_plain ? n * l->gt_size : 0)
                         : NULL;
    l->queue = calloc(MAX_QUEUE, sizeof *l->queue);
    l->batch_msg = calloc(1, sizeof *l->batch_msg);
    if (!l->builder || !l->pool || !l->queue || !l->batch_msg) {
        if (l->builder) snprintf(err, errlen, "out of memory for %d batch buffers of %zu "
                                 "bytes", LOADER_BUFFERS, n * (l->gt_size + l->lq_size));
        return -1;
    }
    l->batch_msg->type = PF_MSG_BATCH;
    return 0;
}

int pf_loader_main(int argc, char **argv) {
    const char *addr = NULL, *name = NULL, *keys = NULL;
    double join_timeout = -1;   /* keep trying */
    if (loader_args(argc, argv, &addr, &name, &keys, &join_timeout)) return 2;
    char auto_name[PF_MAX_NAME];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "loader-%d", (int)getpid());
        name = auto_name;
    }
    pf_log_set_name(name);
    pf_catch_signals();
    static loader l;
    l.name = name;
    char err[2048] = "";
    if (pf_security_init_peer(keys, PF_SEC_CLIENT, err, sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    void *zctx = pf_zmq_ctx_new();
    if (pf_client_join_wait(&l.client, zctx, addr, PF_ROLE_LOADER, name, "", join_timeout, 1,
                            err, sizeof err)) {
        pf_zmq_ctx_term(zctx);
        return pf_client_stop_status(&l.client, err);
    }
    l.joined_at = pf_now();
    const pf_config *cfg = &l.client.cfg;
    int status = 1;
    if (loader_open(&l, err, sizeof err) != 0) {
        pf_error("%s", err);
        send_done(&l, 1, "loader %s: %s", name, err);
        goto out;
    }
    char what[64];
    if (l.ds.video)
        snprintf(what, sizeof what, "%d clips (%u frames), %d frames a sample",
                 l.ds.video->n_clips, l.ds.video->n_frames, l.ds.frames);
    else
        snprintf(what, sizeof what, "%d images", l.ds.n_files);
    pf_info("joined %s as peer %u; %s, %u samples per epoch; %d thread(s), cache %d MiB, "
            "on_bad_sample %s", addr, l.client.peer_id, what, l.ds.len, cfg->loader_threads,
            cfg->cache_mb, cfg->skip_bad_samples ? "skip" : "fail");
    status = run(&l, addr, err, sizeof err);
    if (status && err[0]) {
        pf_error("%s", err);
        send_done(&l, 1, "loader %s: %s", name, err);
    } else if (pf_signalled) {
        /* Leaving on SIGTERM/SIGINT: say so, so the coordinator reissues our tickets at once
           rather than after the heartbeat timeout. */
        pf_info("signal %d: leaving the job", (int)pf_signalled);
        send_done(&l, 0, "loader %s left (signal %d)", name, (int)pf_signalled);
    }
    publish_stats(&l, "final");
    if (l.batches)
        pf_info("served %llu batches (%llu patches, %llu skipped), %.1f ms each",
                (unsigned long long)l.batches, (unsigned long long)l.patches,
                (unsigned long long)l.skipped, 1000.0 * l.busy_s / l.batches);
out:
    for (int i = 0; i < l.n_links; i++) zmq_close(l.links[i].push);
    pf_client_close(&l.client);
    /* After this ZeroMQ holds no frame: every batch buffer is back in the pool. */
    pf_zmq_ctx_term(zctx);
    pf_batch_builder_destroy(&l.builder);
    pf_batch_pool_destroy(&l.pool);
    pf_dataset_close(&l.ds);
    free(l.queue);
    free(l.batch_msg);
    return status;
}
