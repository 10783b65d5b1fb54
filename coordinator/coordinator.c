/*  coordinator — the one process every other role talks to.

    It binds `ctrl` (ROUTER: HELLO/WELCOME, credits, tickets, acks, stop/done) and the events
    proxy (XSUB for publishers, XPUB for subscribers), validates the config, hands out peer ids,
    ranks and the resolved config, owns the sampler, and turns worker credits into tickets for
    the least-loaded live loader. It notices dead peers by their heartbeats: a dead loader's
    outstanding tickets go to another loader; a dead worker or hook ends the job with a message
    naming it. SIGINT/SIGTERM start an orderly stop: workers checkpoint first, hooks drain.

    Everything runs in one thread, one poll loop with a 100 ms tick for timers.
*/
#include "coordinator/coordinator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/dataset.h"
#include "common/log.h"
#include "common/number.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "coordinator/sampler.h"
#include "coordinator/snapshot.h"
#include "runtime/client.h"
#include "proto/proto.h"
#include "runtime/reactor.h"
#include "proto/security.h"

#include <dirent.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_PEERS 256
#define MAX_IDENTITY 256
#define STOP_TIMEOUT_S 8.0     /* workers must checkpoint and answer an interrupt within this,
                                  plus twice the longest step seen (stop_timeout) */
#define DRAIN_TIMEOUT_S 300.0  /* hooks may finish their last evaluation within this */
#define INTERRUPT_DRAIN_S 4.0  /* after an interrupt, hooks only flush: the job ends in < 10 s */
#define JOIN_TIMEOUT_S 60.0    /* every worker rank and hook must have joined within this */
#define TICKET_TIMEOUT_S 30.0  /* a ticket not acknowledged within this goes to another loader */
#define FORWARD_BATCH 1000     /* events forwarded per poll round, so ctrl is never starved */

static const char *role_names[PF_ROLE_COUNT] = {
    "none", "loader", "worker", "checkpoint hook", "eval hook", "log hook", "monitor",
    "visual hook"
};

typedef struct {
    uint32_t id;                    /* peer_id handed out in WELCOME (index + 1) */
    int role;                       /* pf_role */
    char name[PF_MAX_NAME];
    int64_t pid;
    char host[PF_MAX_NAME];
    char endpoint[PF_MAX_ENDPOINT];
    unsigned char identity[MAX_IDENTITY]; /* ROUTER routing id of its ctrl DEALER */
    size_t identity_len;
    double last_seen;               /* pf_now() of its last message or heartbeat */
    int alive;
    int rank;                       /* workers */
    int outstanding;                /* loaders: tickets assigned and not yet acknowledged */
    int done;                       /* answered STOP (hooks) or sent DONE (workers) */
    char state[16];                 /* "joined" | "dead" | "left" (peer events, snapshots) */
    int ready;                      /* hooks: READY came (their events subscription delivers) */
} peer;

typedef struct {
    uint64_t ticket_id;
    int64_t iter;
    int rank;
    uint32_t loader;                /* peer id, 0 = waiting for a loader */
    double sent;                    /* pf_now() when it went to that loader */
} ticket;

typedef enum { PHASE_JOINING, PHASE_RUNNING, PHASE_STOPPING, PHASE_DRAINING } phase;

#define MAX_KV 4096

typedef struct {
    char key[PF_MAX_KEY];
    void *value;                    /* malloc'd */
    uint32_t size;
} kv_entry;

typedef struct {
    pf_config cfg;
    char *yaml;                     /* resolved config sent in WELCOME */
    int world_size;
    int64_t total_iters;
    pf_sampler sampler;
    void *zctx, *ctrl, *xsub, *xpub;
    char ctrl_ep[PF_MAX_ENDPOINT], pub_ep[PF_MAX_ENDPOINT], sub_ep[PF_MAX_ENDPOINT];
    peer peers[MAX_PEERS];
    int n_peers;
    int worker_of_rank[64];         /* peer index + 1 per rank, 0 = none */
    int64_t credits[64];            /* per rank: free prefetch slots */
    int64_t next_iter[64];          /* per rank: next iteration to ticket, -1 until the first
                                       credit tells where the worker starts */
    ticket *tickets;                /* outstanding, unacknowledged */
    int n_tickets, cap_tickets;
    char ckpt_endpoint[PF_MAX_ENDPOINT];
    int started;                    /* START sent to workers */
    int log_stopped;                /* draining: the log hook has been told to stop */
    kv_entry kv[MAX_KV];            /* key/value store for collective bootstrap */
    int n_kv;
    double t_start;                 /* pf_now() when the coordinator started listening */
    double last_loader_warning;     /* pf_now() of the last "no live loader" warning */
    double last_check;              /* pf_now() of the last liveness check */
    int last_loader;                /* index in peers of the loader given the last ticket */
    phase ph;
    char stop_reason[PF_MAX_NAME];  /* "finish" | "interrupt" | "abort" */
    double phase_deadline;
    double longest_step_s;          /* the largest `time` of a train event seen (s/iteration) */
    int exit_code;
    uint64_t event_seq;
    pf_snapshot *snap;              /* events kept for monitors that join late */
    pf_timer *tick, *liveness;
    int closing;                    /* the job is over: its last events are leaving */
} coord;

/* --- events ----------------------------------------------------------------------------- */

static void publish(coord *c, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void publish(coord *c, const char *kind, const char *fmt, ...) {
    pf_msg m = { .type = PF_MSG_EVENT };
    pf_msg_event *ev = &m.u.event;
    snprintf(ev->kind, sizeof ev->kind, "%s", kind);
    snprintf(ev->source, sizeof ev->source, "coordinator");
    ev->seq = ++c->event_seq;
    ev->total_iters = c->total_iters;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->text, sizeof ev->text, fmt, ap);
    va_end(ap);
    pf_frame topic = { ev->kind, strlen(ev->kind) };
    pf_send(c->xpub, &topic, &m, NULL, 0);
    pf_snapshot_add(c->snap, ev);
}

/* The `peer` event of `p` (its name in text) with the coordinator's latest sequence number,
   or, with `advance`, as a new event of its own. */
static void peer_event(coord *c, const peer *p, pf_msg_event *ev, int advance) {
    memset(ev, 0, sizeof *ev);
    snprintf(ev->kind, sizeof ev->kind, "peer");
    snprintf(ev->source, sizeof ev->source, "coordinator");
    ev->seq = advance ? ++c->event_seq : c->event_seq;
    ev->total_iters = c->total_iters;
    snprintf(ev->text, sizeof ev->text, "%s", p->name);
    snprintf(ev->role, sizeof ev->role, "%s", role_names[p->role]);
    ev->rank = p->rank;
    ev->pid = p->pid;
    ev->peer_id = p->id;
    snprintf(ev->host, sizeof ev->host, "%s", p->host);
    snprintf(ev->state, sizeof ev->state, "%s", p->state);
}

/* A peer joined, died or left: tell the monitors (not about monitors themselves). */
static void publish_peer(coord *c, peer *p, const char *state) {
    if (strcmp(p->state, state) == 0) return;
    snprintf(p->state, sizeof p->state, "%s", state);
    if (p->role == PF_ROLE_MONITOR) return;
    pf_msg m = { .type = PF_MSG_EVENT };
    peer_event(c, p, &m.u.event, 1);
    pf_frame topic = { "peer", 4 };
    pf_send(c->xpub, &topic, &m, NULL, 0);
    pf_snapshot_add(c->snap, &m.u.event);
}

/* --- peers -------------------------------------------------------------------------------- */

static peer *peer_by_identity(coord *c, const void *id, size_t len) {
    for (int i = 0; i < c->n_peers; i++)
        if (c->peers[i].identity_len == len && memcmp(c->peers[i].identity, id, len) == 0)
            return &c->peers[i];
    return NULL;
}

static peer *peer_by_id(coord *c, uint32_t id) {
    return (id >= 1 && id <= (uint32_t)c->n_peers) ? &c->peers[id - 1] : NULL;
}

static void send_to(coord *c, const peer *p, const pf_msg *m) {
    pf_frame id = { p->identity, p->identity_len };
    if (pf_send(c->ctrl, &id, m, NULL, 0) != 0)
        pf_warn("cannot send %s to %s (pid %lld): %s", pf_msg_type_name(m->type), p->name,
                (long long)p->pid, zmq_strerror(errno));
}

static void send_stop(coord *c, const peer *p, const char *reason, const char *text) {
    pf_msg m = { .type = PF_MSG_STOP };
    snprintf(m.u.stop.reason, sizeof m.u.stop.reason, "%s", reason);
    snprintf(m.u.stop.text, sizeof m.u.stop.text, "%s", text);
    send_to(c, p, &m);
}

static void stop_all(coord *c, const char *reason, const char *text, int roles_mask) {
    for (int i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (p->alive && (roles_mask & (1 << p->role))) send_stop(c, p, reason, text);
    }
}

#define MASK(r) (1 << (r))
/* Every hook role: stopped and waited for at the end. */
#define HOOKS (MASK(PF_ROLE_CHECKPOINT) | MASK(PF_ROLE_EVAL) | MASK(PF_ROLE_LOG) | \
               MASK(PF_ROLE_VISUAL))
/* The hooks training waits for: the visual hook only when visual_config.interval > 0. */
#define HOOKS_NEEDED(c) (HOOKS & ~((c)->cfg.visual_interval > 0 ? 0 : MASK(PF_ROLE_VISUAL)))

/* End the job now: every peer is told to abort. */
static void abort_job(coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void abort_job(coord *c, const char *fmt, ...) {
    char text[PF_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pf_error("%s; ending the job", text);
    publish(c, "error", "%s", text);
    stop_all(c, "abort", text, ~0);
    c->exit_code = 1;
    snprintf(c->stop_reason, sizeof c->stop_reason, "abort");
    c->ph = PHASE_DRAINING;
    c->phase_deadline = 0;  /* nothing to wait for */
}

/* --- tickets ------------------------------------------------------------------------------ */

static int has_live_loader(const coord *c) {
    for (int i = 0; i < c->n_peers; i++)
        if (c->peers[i].role == PF_ROLE_LOADER && c->peers[i].alive) return 1;
    return 0;
}

/* The live loader with the fewest outstanding tickets; ties go round-robin (the scan starts
   after the loader chosen last), so every loader gets work even when workers x prefetch
   tickets are fewer than the loaders. */
static peer *least_loaded_loader(coord *c) {
    peer *best = NULL;
    for (int k = 1; k <= c->n_peers; k++) {
        int i = (c->last_loader + k) % c->n_peers;
        peer *p = &c->peers[i];
        if (p->role == PF_ROLE_LOADER && p->alive && (!best || p->outstanding <
                                                                   best->outstanding))
            best = p;
    }
    if (best) c->last_loader = (int)(best - c->peers);
    return best;
}

static void send_ticket(coord *c, ticket *t, peer *loader) {
    pf_msg *m = calloc(1, sizeof *m);
    if (!m) return;
    m->type = PF_MSG_TICKET;
    pf_msg_ticket *k = &m->u.ticket;
    k->ticket_id = t->ticket_id;
    k->iter = t->iter;
    k->rank = t->rank;
    k->n = (uint32_t)c->cfg.samples_per_gpu;
    int64_t epoch = pf_sampler_batch(&c->sampler, t->iter, t->rank, k->indices);
    if (epoch < 0) {
        free(m);
        abort_job(c, "out of memory drawing the sampler's permutation");
        return;
    }
    k->epoch = (uint32_t)epoch;
    peer *w = &c->peers[c->worker_of_rank[t->rank] - 1];
    snprintf(k->endpoint, sizeof k->endpoint, "%s", w->endpoint);
    send_to(c, loader, m);
    free(m);
    t->loader = loader->id;
    t->sent = pf_now();
    loader->outstanding++;
}

/* Turn credits into tickets and give waiting tickets to loaders. */
static void dispatch(coord *c) {
    /* Tickets keep flowing while workers stop: ranks of a group stop after the same step, which
       may be a step or two after the STOP reached the first of them. */
    if ((c->ph != PHASE_RUNNING && c->ph != PHASE_STOPPING) || !c->started) return;
    for (int r = 0; r < c->world_size; r++) {
        while (c->credits[r] > 0 && c->next_iter[r] >= 0 && c->next_iter[r] < c->total_iters) {
            if (c->n_tickets == c->cap_tickets) {
                int cap = c->cap_tickets ? 2 * c->cap_tickets : 64;
                ticket *t = realloc(c->tickets, sizeof *t * cap);
                if (!t) return;
                c->tickets = t;
                c->cap_tickets = cap;
            }
            ticket *t = &c->tickets[c->n_tickets++];
            t->iter = c->next_iter[r]++;
            t->rank = r;
            t->ticket_id = (uint64_t)t->iter * c->world_size + r;
            t->loader = 0;
            c->credits[r]--;
        }
    }
    for (int i = 0; i < c->n_tickets && (c->ph == PHASE_RUNNING || c->ph == PHASE_STOPPING);
         i++) {
        if (c->tickets[i].loader) continue;
        peer *l = least_loaded_loader(c);
        if (!l) return;
        send_ticket(c, &c->tickets[i], l);
    }
}

/* A worker's CREDIT: n more free prefetch slots. Bound: its credits plus its unacknowledged
   tickets never exceed data.prefetch, so the tickets the coordinator holds (and any loader's
   share of them) stay within world_size x prefetch whatever a worker sends. */
static void take_credit(coord *c, peer *w, uint32_t n) {
    int64_t held = c->credits[w->rank];
    for (int i = 0; i < c->n_tickets; i++) held += c->tickets[i].rank == w->rank;
    if (held + n > c->cfg.prefetch) {
        pf_warn("worker rank %d (pid %lld on %s) granted %u credits while holding %lld of "
                "data.prefetch %d; keeping %lld", w->rank, (long long)w->pid, w->host, n,
                (long long)held, c->cfg.prefetch,
                (long long)(held < c->cfg.prefetch ? c->cfg.prefetch - held : 0));
        n = held < c->cfg.prefetch ? (uint32_t)(c->cfg.prefetch - held) : 0;
    }
    c->credits[w->rank] += n;
}

static void ack_ticket(coord *c, uint64_t ticket_id) {
    for (int i = 0; i < c->n_tickets; i++) {
        if (c->tickets[i].ticket_id != ticket_id) continue;
        peer *l = peer_by_id(c, c->tickets[i].loader);
        if (l && l->outstanding > 0) l->outstanding--;
        c->tickets[i] = c->tickets[--c->n_tickets];
        return;
    }
    /* A late duplicate ack (ticket reissued and acknowledged twice) is harmless. */
}

/* --- message handling --------------------------------------------------------------------- */

/* Training starts once every rank has a worker and the checkpoint, eval and log hooks (and the
   visual hook when visual_config.interval > 0) are there and READY, i.e. their events
   subscriptions deliver (so no checkpoint, event or picture goes unrecorded); loaders may come
   later. */
static void maybe_start(coord *c) {
    if (c->started || c->ph != PHASE_RUNNING || !c->ckpt_endpoint[0]) return;
    for (int r = 0; r < c->world_size; r++)
        if (!c->worker_of_rank[r]) return;
    int hooks = 0, evals = 0;
    for (int i = 0; i < c->n_peers; i++) {
        if (c->peers[i].alive && c->peers[i].ready && (MASK(c->peers[i].role) & HOOKS_NEEDED(c)))
            hooks |= MASK(c->peers[i].role);
        evals += c->peers[i].alive && c->peers[i].ready && c->peers[i].role == PF_ROLE_EVAL;
    }
    if (hooks != HOOKS_NEEDED(c) || evals < c->cfg.eval_instances) return;
    pf_msg m = { .type = PF_MSG_START };
    snprintf(m.u.start.ckpt_endpoint, sizeof m.u.start.ckpt_endpoint, "%s", c->ckpt_endpoint);
    m.u.start.total_iters = c->total_iters;
    m.u.start.iters_per_epoch = c->sampler.iters_per_epoch;
    for (int r = 0; r < c->world_size; r++) send_to(c, &c->peers[c->worker_of_rank[r] - 1], &m);
    c->started = 1;
    pf_info("all roles present: training starts (%lld iterations, %lld per epoch)",
            (long long)c->total_iters, (long long)c->sampler.iters_per_epoch);
    publish(c, "status", "training starts: %lld iterations, %lld per epoch",
            (long long)c->total_iters, (long long)c->sampler.iters_per_epoch);
}

/* Monitors and loaders come and go (`pixflow monitor --once` in a loop, loaders added and
   killed in an elastic job): a slot of one that has gone, with no ticket still naming it, goes
   to the next of the same role, so they never use up MAX_PEERS. Its peer id stays. */
static peer *reusable_slot(coord *c, int role) {
    if (role != PF_ROLE_MONITOR && role != PF_ROLE_LOADER) return NULL;
    for (int i = 0; i < c->n_peers; i++) {
        peer *q = &c->peers[i];
        if (q->role != role || q->alive) continue;
        int named = 0;
        for (int k = 0; k < c->n_tickets && !named; k++) named = c->tickets[k].loader == q->id;
        if (!named) return q;
    }
    return NULL;
}

static void on_hello(coord *c, const void *id, size_t id_len, const pf_msg_hello *h) {
    if (id_len > MAX_IDENTITY) return;
    peer *p = peer_by_identity(c, id, id_len);
    if (p) return; /* a repeated HELLO on the same socket: ignore */
    if (h->role <= PF_ROLE_NONE || h->role >= PF_ROLE_COUNT) return;
    peer *reuse = reusable_slot(c, h->role);
    peer tmp = { 0 };
    tmp.role = h->role;
    snprintf(tmp.name, sizeof tmp.name, "%s", h->name);
    tmp.pid = h->pid;
    snprintf(tmp.host, sizeof tmp.host, "%s", h->host);
    snprintf(tmp.endpoint, sizeof tmp.endpoint, "%s", h->endpoint);
    memcpy(tmp.identity, id, id_len);
    tmp.identity_len = id_len;
    tmp.rank = -1;
    const char *refuse = NULL;
    if (c->ph != PHASE_RUNNING && c->ph != PHASE_JOINING) refuse = "the job is stopping";
    if (h->role == PF_ROLE_WORKER && !refuse) {
        for (int r = 0; r < c->world_size && tmp.rank < 0; r++)
            if (!c->worker_of_rank[r]) tmp.rank = r;
        if (tmp.rank < 0) refuse = "every worker rank is taken";
        if (!h->endpoint[0]) refuse = "a worker must name its data endpoint";
    }
    if (h->role == PF_ROLE_CHECKPOINT && !refuse && c->ckpt_endpoint[0])
        refuse = "a checkpoint hook is already registered";
    char why[PF_MAX_TEXT];
    /* A loader's name is its events' source: two live ones with one name would mix their
       sequence numbers (monitors would drop one's events as duplicates). */
    for (int i = 0; i < c->n_peers && !refuse && h->role == PF_ROLE_LOADER; i++) {
        const peer *q = &c->peers[i];
        if (q->role == PF_ROLE_LOADER && q->alive && strcmp(q->name, h->name) == 0) {
            snprintf(why, sizeof why, "a live loader is already named '%s' (pid %lld on %s); "
                     "start this one with another --name", q->name, (long long)q->pid, q->host);
            refuse = why;
        }
    }
    if (!refuse && !reuse && c->n_peers == MAX_PEERS) {
        snprintf(why, sizeof why, "%d processes have joined this job, the most it takes",
                 MAX_PEERS);
        refuse = why;
    }
    if (refuse) {
        peer q = tmp;
        /* A job that is stopping in order tells a latecomer so ("interrupt", "finish"): it
           exits without an error (pf_client_stop_status). */
        int in_order = c->ph > PHASE_RUNNING && strcmp(c->stop_reason, "abort") != 0;
        send_stop(c, &q, in_order ? c->stop_reason : "abort", refuse);
        pf_warn("refused %s from %s pid %lld: %s", role_names[h->role], h->host,
                (long long)h->pid, refuse);
        return;
    }
    if (reuse) {
        uint32_t id_kept = reuse->id;
        p = reuse;
        *p = tmp;
        p->id = id_kept;
    } else {
        p = &c->peers[c->n_peers++];
        *p = tmp;
        p->id = (uint32_t)c->n_peers;
    }
    p->alive = 1;
    p->last_seen = pf_now();
    if (p->role == PF_ROLE_WORKER) c->worker_of_rank[p->rank] = (int)p->id;
    if (p->role == PF_ROLE_CHECKPOINT)
        snprintf(c->ckpt_endpoint, sizeof c->ckpt_endpoint, "%s", p->endpoint);
    pf_msg *m = calloc(1, sizeof *m);
    if (!m) {
        abort_job(c, "out of memory welcoming %s", p->name);
        return;
    }
    m->type = PF_MSG_WELCOME;
    pf_msg_welcome *w = &m->u.welcome;
    w->peer_id = p->id;
    w->rank = p->rank;
    w->world_size = c->world_size;
    w->heartbeat_ms = PF_HEARTBEAT_MS;
    snprintf(w->events_pub, sizeof w->events_pub, "%s", c->pub_ep);
    snprintf(w->events_sub, sizeof w->events_sub, "%s", c->sub_ep);
    w->config = c->yaml;
    w->config_len = (uint32_t)strlen(c->yaml);
    send_to(c, p, m);
    w->config = NULL;
    free(m);
    pf_info("%s '%s' joined from %s (pid %lld)%s%s", role_names[p->role], p->name, p->host,
            (long long)p->pid, p->rank >= 0 ? ", rank " : "", p->rank >= 0 ? "assigned" : "");
    if (p->role != PF_ROLE_MONITOR)
        publish(c, "status", "%s %s joined from %s (pid %lld)", role_names[p->role], p->name,
                p->host, (long long)p->pid);
    publish_peer(c, p, "joined");
    maybe_start(c);
    dispatch(c);
}

static void peer_died(coord *c, peer *p, const char *why) {
    p->alive = 0;
    publish_peer(c, p, strcmp(why, "left the job") == 0 ? "left" : "dead");
    if (p->role == PF_ROLE_LOADER) {
        int moved = 0;
        for (int i = 0; i < c->n_tickets; i++) {
            if (c->tickets[i].loader == p->id) {
                c->tickets[i].loader = 0;
                moved++;
            }
        }
        p->outstanding = 0;
        char text[PF_MAX_TEXT];
        snprintf(text, sizeof text, "loader %s (pid %lld on %s) %s; reissuing its %d "
                 "outstanding tickets", p->name, (long long)p->pid, p->host, why, moved);
        /* While workers stop (a signal to every process of the job) loaders leaving is
           expected: no warning. */
        if (c->ph == PHASE_STOPPING) pf_info("%s", text);
        else pf_warn("%s", text);
        publish(c, "status", "loader %s (pid %lld on %s) %s; %d tickets reissued", p->name,
                (long long)p->pid, p->host, why, moved);
        dispatch(c);
        return;
    }
    if (p->role == PF_ROLE_MONITOR) return;
    if (p->role == PF_ROLE_WORKER && p->done) return;
    if (c->ph == PHASE_DRAINING && p->done) return;
    if (p->rank >= 0)
        abort_job(c, "%s rank %d (pid %lld on %s) %s", role_names[p->role], p->rank,
                  (long long)p->pid, p->host, why);
    else
        abort_job(c, "%s (pid %lld on %s) %s", role_names[p->role], (long long)p->pid, p->host,
                  why);
}

static void begin_drain(coord *c) {
    c->ph = PHASE_DRAINING;
    int interrupted = strcmp(c->stop_reason, "interrupt") == 0;
    c->phase_deadline = pf_now() + (interrupted ? INTERRUPT_DRAIN_S : DRAIN_TIMEOUT_S);
    /* The log hook goes last, so it records what the others publish while finishing. Workers
       that never started are told too. */
    stop_all(c, c->stop_reason, "training ended",
             MASK(PF_ROLE_LOADER) | MASK(PF_ROLE_CHECKPOINT) | MASK(PF_ROLE_EVAL) |
                 MASK(PF_ROLE_VISUAL) | (c->started ? 0 : MASK(PF_ROLE_WORKER)));
    c->log_stopped = 0;
    pf_info("workers done (%s); waiting for hooks to finish", c->stop_reason);
}

static int all_workers_done(coord *c) {
    for (int r = 0; r < c->world_size; r++) {
        if (!c->worker_of_rank[r]) return 0;
        if (!c->peers[c->worker_of_rank[r] - 1].done) return 0;
    }
    return 1;
}

/* 1 when every live peer of the roles in `mask` has answered its STOP. */
static int roles_done(coord *c, int mask) {
    for (int i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if ((MASK(p->role) & mask) && p->alive && !p->done) return 0;
    }
    return 1;
}

/* How long workers have to finish their step and checkpoint after an interrupt: STOP_TIMEOUT_S,
   plus twice the longest step seen, so a network whose step takes longer than that (a big
   model on a CPU) still gets its checkpoint instead of an abort. */
static double stop_timeout(const coord *c) {
    return STOP_TIMEOUT_S + 2 * c->longest_step_s;
}

static void begin_interrupt(coord *c) {
    if (c->ph == PHASE_STOPPING || c->ph == PHASE_DRAINING) return;
    snprintf(c->stop_reason, sizeof c->stop_reason, "interrupt");
    pf_info("interrupted: workers checkpoint and stop");
    publish(c, "status", "interrupted: checkpointing and stopping");
    c->exit_code = 130;
    if (!c->started) {
        begin_drain(c);
        return;
    }
    c->ph = PHASE_STOPPING;
    c->phase_deadline = pf_now() + stop_timeout(c);
    stop_all(c, "interrupt", "interrupted by the user", MASK(PF_ROLE_WORKER));
}

/* Key/value store: KV_SET stores frame 2 under the key (a later set replaces it), KV_GET
   answers with the value or found = 0; peers poll until a key appears. */
static void on_kv(coord *c, const pf_parts *parts, const pf_msg *m) {
    const char *key = m->type == PF_MSG_KV_SET ? m->u.kv_set.key : m->u.kv_get.key;
    pf_msg r = { .type = PF_MSG_KV_VALUE };
    snprintf(r.u.kv_value.key, sizeof r.u.kv_value.key, "%s", key);
    kv_entry *e = NULL;
    for (int i = 0; i < c->n_kv && !e; i++)
        if (strcmp(c->kv[i].key, key) == 0) e = &c->kv[i];
    pf_frame id = { pf_parts_data(parts, 0), pf_parts_size(parts, 0) };
    if (m->type == PF_MSG_KV_SET) {
        uint32_t size = m->u.kv_set.size;
        if (parts->n != 3 || pf_parts_size(parts, 2) != size) {
            pf_warn("dropped a kv_set for '%s': value frame does not match its size", key);
            return;
        }
        if (!e && c->n_kv == MAX_KV) {
            abort_job(c, "key/value store full (%d keys)", MAX_KV);
            return;
        }
        void *v = malloc(size ? size : 1);
        if (!v) {
            abort_job(c, "out of memory in the key/value store");
            return;
        }
        memcpy(v, pf_parts_data(parts, 2), size);
        if (!e) {
            e = &c->kv[c->n_kv++];
            snprintf(e->key, sizeof e->key, "%s", key);
        } else {
            free(e->value);
        }
        e->value = v;
        e->size = size;
        r.u.kv_value.found = 1;
        pf_send(c->ctrl, &id, &r, NULL, 0);
        return;
    }
    r.u.kv_value.found = e != NULL;
    r.u.kv_value.size = e ? e->size : 0;
    pf_frame value = { e ? e->value : "", e ? e->size : 0 };
    pf_send(c->ctrl, &id, &r, e ? &value : NULL, e ? 1 : 0);
}

typedef struct {
    coord *c;
    pf_frame id;
    uint32_t sent;
} replay_ctx;

static void replay_one(const pf_msg_event *ev, void *ctx) {
    replay_ctx *r = ctx;
    pf_msg *m = malloc(sizeof *m);
    if (!m) return;
    m->type = PF_MSG_EVENT;
    m->u.event = *ev;
    if (pf_send(r->c->ctrl, &r->id, m, NULL, 0) == 0) r->sent++;
    free(m);
}

static const char *phase_name(phase ph) {
    static const char *names[] = { "joining", "running", "stopping", "draining" };
    return names[ph];
}

/* A monitor's SNAPSHOT: the kept events in the order they came, a `peer` event for every peer
   (its state now), then SNAPSHOT_END. Anyone who can reach ctrl may ask: it is what the
   events endpoint tells a subscriber anyway. */
static void on_snapshot(coord *c, const void *id, size_t id_len, uint32_t max_train) {
    replay_ctx r = { c, { id, id_len }, 0 };
    pf_snapshot_replay(c->snap, max_train, replay_one, &r);
    pf_msg_event *ev = malloc(sizeof *ev);
    for (int i = 0; ev && i < c->n_peers; i++) {
        if (c->peers[i].role == PF_ROLE_MONITOR) continue;
        peer_event(c, &c->peers[i], ev, 0);
        replay_one(ev, &r);
    }
    free(ev);
    pf_msg end = { .type = PF_MSG_SNAPSHOT_END };
    pf_msg_snapshot_end *e = &end.u.snapshot_end;
    e->events = r.sent;
    e->total_iters = c->total_iters;
    e->iters_per_epoch = c->sampler.iters_per_epoch;
    e->world_size = c->world_size;
    e->batch = c->world_size * c->cfg.samples_per_gpu;
    e->started = c->started;
    snprintf(e->phase, sizeof e->phase, "%s", phase_name(c->ph));
    e->uptime = pf_now() - c->t_start;
    snprintf(e->work_dir, sizeof e->work_dir, "%s", c->cfg.work_dir);
    snprintf(e->model, sizeof e->model, "%s", c->cfg.model_type);
    pf_frame f = { id, id_len };
    if (pf_send(c->ctrl, &f, &end, NULL, 0) != 0)
        pf_warn("cannot send a snapshot to a monitor: %s", zmq_strerror(errno));
}

/* DONE from peer p: a worker finished or failed, a hook answered its STOP, a loader left, a
   monitor went away. */
static void on_done(coord *c, peer *p, const pf_msg_done *d) {
    if (p->role == PF_ROLE_MONITOR) {   /* a monitor leaving: its slot is free */
        p->alive = 0;
        return;
    }
    p->done = 1;
    if (d->status == 0 && p->role != PF_ROLE_LOADER)
        publish_peer(c, p, "left");
    if (d->status != 0 && c->ph == PHASE_DRAINING && c->exit_code == 1) {
        /* The job is already being aborted: this is the peer answering the abort, not
           a second cause worth an error of its own. */
        pf_info("%s (pid %lld on %s) stopped: %s", role_names[p->role],
                (long long)p->pid, p->host, d->text);
        return;
    }
    if (p->role == PF_ROLE_WORKER) {
        if (d->status != 0) {
            abort_job(c, "worker rank %d (pid %lld on %s) failed: %s", p->rank,
                      (long long)p->pid, p->host, d->text);
            return;
        }
        pf_info("worker rank %d done at iteration %lld%s%s", p->rank,
                (long long)d->iter, d->text[0] ? ": " : "",
                d->text);
        if (d->iter < c->total_iters && !c->stop_reason[0]) {
            /* It stopped early with a checkpoint (SIGTERM at the worker). */
            snprintf(c->stop_reason, sizeof c->stop_reason, "interrupt");
            c->exit_code = 130;
        }
        if (!c->started && c->ph == PHASE_RUNNING) {
            /* A worker that leaves before START (a signal while it started): the job
               cannot start, so it stops, in order. */
            begin_interrupt(c);
        } else if (all_workers_done(c) && c->ph != PHASE_DRAINING) {
            if (!c->stop_reason[0]) snprintf(c->stop_reason, sizeof c->stop_reason,
                                             "finish");
            begin_drain(c);
        }
    } else if (d->status != 0) {
        abort_job(c, "%s (pid %lld on %s) failed: %s", role_names[p->role],
                  (long long)p->pid, p->host, d->text);
    } else if (p->role == PF_ROLE_LOADER && p->alive &&
               (c->ph == PHASE_RUNNING || c->ph == PHASE_STOPPING)) {
        peer_died(c, p, "left the job");
    }
}

static void on_ctrl(coord *c) {
    pf_parts parts;
    char err[512];
    while (pf_parts_recv(c->ctrl, ZMQ_DONTWAIT, &parts, err, sizeof err) == 0) {
        if (parts.n < 2) {
            pf_parts_close(&parts);
            continue;
        }
        const void *id = pf_parts_data(&parts, 0);
        size_t id_len = pf_parts_size(&parts, 0);
        pf_msg *m = malloc(sizeof *m);
        if (!m || pf_msg_decode(pf_parts_data(&parts, 1), pf_parts_size(&parts, 1), 0, m, err,
                                sizeof err) != 0) {
            peer *p = peer_by_identity(c, id, id_len);
            pf_warn("dropped a bad message from %s: %s", p ? p->name : "an unknown peer", err);
            free(m);
            pf_parts_close(&parts);
            continue;
        }
        peer *p = peer_by_identity(c, id, id_len);
        if (p) p->last_seen = pf_now();
        switch (m->type) {
        case PF_MSG_HELLO:
            on_hello(c, id, id_len, &m->u.hello);
            break;
        case PF_MSG_HEARTBEAT: {
            peer *q = peer_by_id(c, m->u.heartbeat.peer_id);
            if (q) q->last_seen = pf_now();
            pf_msg r = { .type = PF_MSG_HEARTBEAT };
            pf_frame f = { id, id_len };
            pf_send(c->ctrl, &f, &r, NULL, 0);
            break;
        }
        case PF_MSG_KV_SET:
        case PF_MSG_KV_GET:
            on_kv(c, &parts, m);
            break;
        case PF_MSG_READY:
            if (p && !p->ready) {
                p->ready = 1;
                maybe_start(c);
                dispatch(c);
            }
            break;
        case PF_MSG_SNAPSHOT:
            on_snapshot(c, id, id_len, m->u.snapshot.max_train);
            break;
        case PF_MSG_CREDIT:
            if (p && p->role == PF_ROLE_WORKER && m->u.credit.rank == p->rank) {
                if (c->next_iter[p->rank] < 0) c->next_iter[p->rank] = m->u.credit.next_iter;
                take_credit(c, p, m->u.credit.n);
                dispatch(c);
            }
            break;
        case PF_MSG_ACK:
            if (p && p->role == PF_ROLE_WORKER) ack_ticket(c, m->u.ack.ticket_id);
            dispatch(c);
            break;
        case PF_MSG_DONE:
            if (p) on_done(c, p, &m->u.done);
            break;
        default:
            pf_warn("unexpected %s from %s", pf_msg_type_name(m->type), p ? p->name : "?");
        }
        pf_msg_clear(m);
        free(m);
        pf_parts_close(&parts);
    }
}

/* Forward up to FORWARD_BATCH messages waiting on `from` to `to`, frame by frame (the events
   proxy); the rest wait for the next round so a flood of events cannot starve ctrl. */
/* The header of an event passing through the proxy, remembered for monitors (not `visual`
   messages: pictures are not state; nor malformed ones: subscribers drop those too). */
static void keep_event(coord *c, zmq_msg_t *topic, zmq_msg_t *header) {
    if (zmq_msg_size(topic) == 6 && memcmp(zmq_msg_data(topic), "visual", 6) == 0) return;
    if (zmq_msg_size(topic) > 6 && memcmp(zmq_msg_data(topic), "ready/", 6) == 0) return;
    pf_msg *m = malloc(sizeof *m);
    char err[256];
    if (m && pf_msg_decode(zmq_msg_data(header), zmq_msg_size(header), PF_MSG_EVENT, m, err,
                           sizeof err) == 0) {
        pf_snapshot_add(c->snap, &m->u.event);
        if (strcmp(m->u.event.kind, "train") == 0 && m->u.event.time > c->longest_step_s &&
            m->u.event.time < 3600)
            c->longest_step_s = m->u.event.time;
        pf_msg_clear(m);
    }
    free(m);
}

static void forward(coord *c, void *from, void *to) {
    for (int n = 0; n < FORWARD_BATCH; n++) {
        zmq_msg_t part, topic;
        zmq_msg_init(&part);
        zmq_msg_init(&topic);
        if (zmq_msg_recv(&part, from, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&part);
            zmq_msg_close(&topic);
            return;
        }
        int more = zmq_msg_more(&part), index = 0;
        int peek = c && from == c->xsub;
        if (peek) zmq_msg_copy(&topic, &part);
        zmq_msg_send(&part, to, more ? ZMQ_SNDMORE : 0);
        zmq_msg_close(&part);
        while (more) {
            zmq_msg_init(&part);
            if (zmq_msg_recv(&part, from, 0) < 0) {
                zmq_msg_close(&part);
                zmq_msg_close(&topic);
                return;
            }
            more = zmq_msg_more(&part);
            if (peek && ++index == 1) keep_event(c, &topic, &part);
            zmq_msg_send(&part, to, more ? ZMQ_SNDMORE : 0);
            zmq_msg_close(&part);
        }
        zmq_msg_close(&topic);
    }
}

/* Liveness checks run every 0.5 s. A longer gap means this process was not running (a host
   under heavy load can stop everything for seconds): peers could not be heard meanwhile, so
   the gap is credited to every peer rather than read as their silence. */
#define STALL_CREDIT_AFTER_S 1.0

static void check_liveness(coord *c) {
    double now = pf_now();
    double gap = c->last_check > 0 ? now - c->last_check : 0;
    c->last_check = now;
    if (gap > STALL_CREDIT_AFTER_S) {
        pf_warn("this coordinator did not run for %.1f s (host overloaded?); peers' heartbeat "
                "clocks are extended by that much", gap);
        for (int i = 0; i < c->n_peers; i++) c->peers[i].last_seen += gap;
    }
    for (int i = 0; i < c->n_peers; i++) {
        peer *p = &c->peers[i];
        if (!p->alive || now - p->last_seen < PF_PEER_TIMEOUT_MS / 1000.0) continue;
        if (c->ph == PHASE_DRAINING && (p->role == PF_ROLE_LOADER || p->done)) {
            p->alive = 0;   /* it left after being told to */
            publish_peer(c, p, "left");
            continue;
        }
        char why[96];
        snprintf(why, sizeof why, "sent no heartbeat for %.1f s", now - p->last_seen);
        peer_died(c, p, why);
    }
    if (c->ph != PHASE_RUNNING && c->ph != PHASE_STOPPING) return;
    /* A ticket can be lost while its loader lives (a send that timed out, a batch the worker
       refused as malformed): give it to another loader. The worker drops duplicates. */
    int waiting = 0;
    for (int i = 0; i < c->n_tickets; i++) {
        ticket *t = &c->tickets[i];
        if (!t->loader) {
            waiting++;
        } else if (now - t->sent > TICKET_TIMEOUT_S) {
            peer *l = peer_by_id(c, t->loader);
            if (l && l->outstanding > 0) l->outstanding--;
            pf_warn("ticket %llu (iteration %lld) not acknowledged %.0f s after it went to "
                    "%s; reissuing it", (unsigned long long)t->ticket_id, (long long)t->iter,
                    now - t->sent, l ? l->name : "?");
            t->loader = 0;
            waiting++;
        }
    }
    if (waiting) dispatch(c);
    /* A lone worker stops without another batch: no warning for it while stopping. */
    if (waiting && !has_live_loader(c) && now - c->last_loader_warning > 10.0 &&
        (c->ph == PHASE_RUNNING || c->world_size > 1)) {
        c->last_loader_warning = now;
        pf_warn("no live loader: %d batches are waiting; start one with `pixflow loader "
                "--connect %s`", waiting, c->ctrl_ep);
        publish(c, "status", "no live loader: %d batches waiting (pixflow loader --connect %s)",
                waiting, c->ctrl_ep);
    }
    if (!c->started && now - c->t_start > JOIN_TIMEOUT_S) {
        char missing[256] = "";
        int have = 0, hooks = 0;
        for (int r = 0; r < c->world_size; r++) have += c->worker_of_rank[r] != 0;
        for (int i = 0; i < c->n_peers; i++)
            if (c->peers[i].alive && c->peers[i].ready) hooks |= MASK(c->peers[i].role);
        snprintf(missing, sizeof missing, "%d of %d workers%s%s%s%s", have, c->world_size,
                 hooks & MASK(PF_ROLE_CHECKPOINT) ? "" : ", no checkpoint hook ready",
                 hooks & MASK(PF_ROLE_EVAL) ? "" : ", no eval hook ready",
                 hooks & MASK(PF_ROLE_LOG) ? "" : ", no log hook ready",
                 (hooks | ~HOOKS_NEEDED(c)) & MASK(PF_ROLE_VISUAL) ? "" : ", no visual hook ready");
        abort_job(c, "the job did not assemble within %.0f s: %s", JOIN_TIMEOUT_S, missing);
    }
}

/* --- set-up ------------------------------------------------------------------------------- */

/* Everything a run writes into work_dir, as fnmatch patterns: one list, so a file a role
   starts writing is archived with the rest (tests/test_work_dir.c fails on an entry a run
   leaves that this list misses). Not here: archived_*, and launch/, which scripts/launch.sh
   fills before the coordinator starts. */
static const char *const RUN_OUTPUTS[] = {
    "config.yaml",              /* resolved config (coordinator) */
    "coordinator.addr",         /* the job's address (coordinator) */
    "*.log",                    /* coordinator, rankN, loaders, hooks, train, eval, samples_rankN */
    "metrics.jsonl",            /* log hook */
    "events.out.tfevents.*",    /* TensorBoard (log hook) */
    "checkpoints",              /* checkpoint hook */
    "eval_visuals",             /* eval hook, evaluation.save_image */
    "visuals",                  /* visual hook, default visual_config.output_dir */
    "test",                     /* pixflow test */
    NULL
};

static int is_run_output(const char *name) {
    for (int i = 0; RUN_OUTPUTS[i]; i++)
        if (fnmatch(RUN_OUTPUTS[i], name, FNM_PERIOD) == 0) return 1;
    return 0;
}

/* A fresh start in a work_dir that holds an earlier run's results moves them all
   (RUN_OUTPUTS) into work_dir/archived_<time>/ (BasicSR renames the whole experiment folder
   likewise), so the new run's checkpoints, logs, TensorBoard file and pictures are its own and
   nothing old is deleted. Runs before this process opens its own log. `dir` gets the archive
   folder, or "" when there was nothing to move. Returns 0 or -1 with err. */
static int archive_previous_run(const pf_config *cfg, char *dir, size_t dirlen, char *err,
                                size_t errlen) {
    dir[0] = '\0';
    DIR *d = opendir(cfg->work_dir);
    if (!d) return 0;
    char (*names)[256] = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_run_output(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            void *grown = realloc(names, (size_t)cap * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    int rc = 0;
    if (n > 0) {
        /* archived_<time>, or archived_<time>_2, ... when runs start within one second */
        char stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
        for (int k = 1;; k++) {
            if (k == 1) snprintf(dir, dirlen, "%s/archived_%s", cfg->work_dir, stamp);
            else snprintf(dir, dirlen, "%s/archived_%s_%d", cfg->work_dir, stamp, k);
            if (mkdir(dir, 0755) == 0) break;
            if (errno != EEXIST || k == 100) {
                snprintf(err, errlen, "%s: cannot create the archive folder: %s", dir,
                         strerror(errno));
                rc = -1;
                break;
            }
        }
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        char from[PF_PATH_MAX + 300], to[2 * PF_PATH_MAX + 300];
        snprintf(from, sizeof from, "%s/%s", cfg->work_dir, names[i]);
        snprintf(to, sizeof to, "%s/%s", dir, names[i]);
        if (rename(from, to) != 0) {
            snprintf(err, errlen, "%s: cannot move the earlier run's %s into %s: %s",
                     cfg->work_dir, names[i], dir, strerror(errno));
            rc = -1;
        }
    }
    free(names);
    return rc;
}

/* --- the loop ------------------------------------------------------------------------------ */

#define PHASE_TICK_S 0.1       /* deadlines and the drain are looked at this often (the old
                                  poll's 100 ms wake-up) and after every ctrl message */
#define LIVENESS_CHECK_S 0.5
#define CLOSING_S 0.3          /* after the job ends, events and ctrl are served this long so
                                  the last events leave before the sockets close */

/* Deadlines of the stopping and draining phases, and the end of the drain: the log hook is
   told to stop once the other hooks are done, the loop ends once it is. Returns -1 when the
   job is over (c->closing is set, the loop serves events for CLOSING_S more), else 0. */
static int check_phase(coord *c);

static int on_closed(pf_reactor *r, void *arg) {
    (void)r;
    (void)arg;
    return -1;
}

static int end_job(pf_reactor *r, coord *c) {
    if (c->exit_code == 0) publish(c, "done", "job finished");
    else if (c->exit_code == 130) publish(c, "done", "job interrupted; resume with --resume auto");
    c->closing = 1;
    pf_reactor_reader_end(r, c->xpub);
    pf_reactor_cancel(r, &c->tick);
    pf_reactor_cancel(r, &c->liveness);
    return pf_reactor_after(r, CLOSING_S, on_closed, c) ? 0 : -1;
}

static int check_phase(coord *c) {
    double now = pf_now();
    if (c->ph == PHASE_STOPPING && now > c->phase_deadline)
        abort_job(c, "workers did not checkpoint within %.0f s of the interrupt",
                  stop_timeout(c));
    if (c->ph != PHASE_DRAINING) return 0;
    if (!c->log_stopped && (c->phase_deadline == 0 ||
                            roles_done(c, MASK(PF_ROLE_CHECKPOINT) | MASK(PF_ROLE_EVAL)))) {
        if (c->phase_deadline != 0) stop_all(c, c->stop_reason, "training ended", MASK(PF_ROLE_LOG));
        c->log_stopped = 1;
    }
    if (c->log_stopped && roles_done(c, HOOKS)) return -1;
    if (now > c->phase_deadline) {
        if (c->exit_code == 0) {
            pf_error("hooks did not finish within %.0f s of the end of training",
                     DRAIN_TIMEOUT_S);
            publish(c, "error", "hooks did not finish within %.0f s", DRAIN_TIMEOUT_S);
            c->exit_code = 1;
        }
        stop_all(c, "abort", "did not finish in time", HOOKS);
        return -1;
    }
    return 0;
}

/* The end of a handler: the job's phase is looked at (it may be over). */
static int after(pf_reactor *r, coord *c) {
    if (c->closing || check_phase(c) == 0) return 0;
    return end_job(r, c);
}

static int on_ctrl_readable(pf_reactor *r, void *arg) {
    coord *c = arg;
    on_ctrl(c);
    return after(r, c);
}

static int on_events_in(pf_reactor *r, void *arg) {
    coord *c = arg;
    (void)r;
    forward(c, c->xsub, c->xpub);
    return 0;
}

/* Subscriptions from the events' subscribers go up to the publishers. */
static int on_events_out(pf_reactor *r, void *arg) {
    coord *c = arg;
    (void)r;
    forward(c, c->xpub, c->xsub);
    return 0;
}

static int on_tick(pf_reactor *r, void *arg) {
    return after(r, arg);
}

static int on_liveness(pf_reactor *r, void *arg) {
    coord *c = arg;
    check_liveness(c);
    return after(r, c);
}

static int on_coordinator_signal(pf_reactor *r, void *arg) {
    coord *c = arg;
    int sig = pf_signalled;
    pf_signalled = 0;
    if (c->closing) return 0;
    if (c->ph == PHASE_RUNNING) {
        begin_interrupt(c);
    } else if (c->ph == PHASE_DRAINING && strcmp(c->stop_reason, "finish") == 0) {
        /* Interrupted during the final evaluation: cut it short. */
        pf_warn("signal %d while finishing: hooks stop now", sig);
        snprintf(c->stop_reason, sizeof c->stop_reason, "interrupt");
        stop_all(c, "interrupt", "interrupted by the user",
                 MASK(PF_ROLE_CHECKPOINT) | MASK(PF_ROLE_EVAL));
        double d = pf_now() + INTERRUPT_DRAIN_S;
        if (d < c->phase_deadline) c->phase_deadline = d;
    } else {
        /* A scheduler signals every process: the front end's forwarded SIGINT follows this
           process's own SIGTERM. Nothing to do. */
        pf_info("signal %d while stopping: already stopping", sig);
    }
    return after(r, c);
}

/* Run the job from the first peer's HELLO to the last hook's DONE: ctrl, the two sides of the
   events proxy, the phase tick and the liveness check on one reactor. Returns 0, or -1 when
   the loop could not be set up or failed. */
static int coordinator_run(coord *c) {
    pf_reactor *r = pf_reactor_new();
    int ok = r && pf_reactor_reader(r, c->xsub, on_events_in, c) == 0 &&
             pf_reactor_reader(r, c->xpub, on_events_out, c) == 0 &&
             pf_reactor_reader(r, c->ctrl, on_ctrl_readable, c) == 0 &&
             (c->tick = pf_reactor_every(r, PHASE_TICK_S, on_tick, c)) &&
             (c->liveness = pf_reactor_every(r, LIVENESS_CHECK_S, on_liveness, c));
    c->ph = PHASE_RUNNING;
    c->t_start = pf_now();
    if (ok) {
        pf_reactor_on_signal(r, on_coordinator_signal, c);
        ok = pf_reactor_run(r) == 0;
    }
    pf_reactor_destroy(&r);
    return ok ? 0 : -1;
}

/* --- main --------------------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: pixflow coordinator CONFIG [--bind tcp://HOST:PORT] "
                    "[--addr-file PATH] [--workers N] [--resume auto|PATH] "
                    "[--keys DIR] [--exit-with-parent]\n");
}

typedef struct {
    const char *cfg_path, *bind, *addr_file, *resume, *keys;
    int workers, exit_with_parent;
} coord_args;

/* Returns 0, or 2 after a usage message. */
static int parse_args(int argc, char **argv, coord_args *a) {
    *a = (coord_args){ .bind = "tcp://127.0.0.1:*", .workers = 1 };
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) a->bind = argv[++i];
        else if (strcmp(argv[i], "--addr-file") == 0 && i + 1 < argc) a->addr_file = argv[++i];
        else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            if (pf_arg_int("pixflow coordinator", "--workers", argv[++i], 1, 64, &a->workers))
                return 2;
        }
        else if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc) a->resume = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) a->keys = argv[++i];
        else if (strcmp(argv[i], "--exit-with-parent") == 0) a->exit_with_parent = 1;
        else if (argv[i][0] != '-' && !a->cfg_path) a->cfg_path = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!a->cfg_path) {
        usage();
        return 2;
    }
    return 0;
}

/* Everything before the first peer: the checked config and the sampler, the previous run
   archived, the logs, work_dir/config.yaml. Returns 0, or the exit status after an error. */
static int prepare(coord *c, const coord_args *a) {
    char err[2048] = "";
    pf_dataset train = { 0 };
    if (pf_job_prepare(&c->cfg, a->cfg_path, a->resume, a->workers, &train, &c->sampler,
                       &c->total_iters, err, sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    pf_dataset_close(&train);
    pf_log_set_level(c->cfg.log_level);
    char path[PF_PATH_MAX + 64], archived[PF_PATH_MAX + 64] = "";
    if (!c->cfg.resume_asked &&
        archive_previous_run(&c->cfg, archived, sizeof archived, err, sizeof err) != 0) {
        pf_error("%s", err);
        return 1;
    }
    snprintf(path, sizeof path, "%s/coordinator.log", c->cfg.work_dir);
    pf_log_open_file(path);
    if (archived[0])
        pf_warn("%s held an earlier run and this one does not resume it: moved its checkpoints, "
                "logs, TensorBoard events and pictures to %s", c->cfg.work_dir, archived);
    c->world_size = a->workers;
    c->yaml = pf_config_to_yaml(&c->cfg);
    snprintf(path, sizeof path, "%s/config.yaml", c->cfg.work_dir);
    if (!c->yaml || pf_write_file_atomic(path, c->yaml, strlen(c->yaml), err, sizeof err) != 0) {
        pf_error("%s", c->yaml ? err : "out of memory");
        return 1;
    }
    for (int r = 0; r < 64; r++) c->next_iter[r] = -1;
    c->snap = pf_snapshot_new();
    if (!c->snap) {
        pf_error("out of memory");
        return 1;
    }
    return 0;
}

/* The three sockets (ctrl ROUTER, events XSUB in and XPUB out), bound; the address written to
   --addr-file. Returns 0, or the exit status after an error (sockets closed). */
static int open_sockets(coord *c, const coord_args *a) {
    char err[2048] = "";
    if (pf_security_init_job(c->cfg.curve, c->cfg.keys_dir, a->keys, PF_SEC_SERVER, err,
                             sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    c->zctx = pf_zmq_ctx_new();
    c->ctrl = zmq_socket(c->zctx, ZMQ_ROUTER);
    c->xsub = zmq_socket(c->zctx, ZMQ_XSUB);
    c->xpub = zmq_socket(c->zctx, ZMQ_XPUB);
    int one = 1, linger = 1000;
    zmq_setsockopt(c->ctrl, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    /* Never block on a peer that does not read: a send to a full queue fails (and is logged)
       instead of freezing the job's hub. No control message is anywhere near 1 MiB. */
    int zero = 0;
    int64_t max_msg = 1 << 20;
    zmq_setsockopt(c->ctrl, ZMQ_SNDTIMEO, &zero, sizeof zero);
    zmq_setsockopt(c->ctrl, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    zmq_setsockopt(c->xsub, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    zmq_setsockopt(c->ctrl, ZMQ_LINGER, &linger, sizeof linger);
    /* A snapshot is up to ~4,900 messages to one monitor at once. */
    int sndhwm = 16384;
    zmq_setsockopt(c->ctrl, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(c->xsub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(c->xpub, ZMQ_LINGER, &linger, sizeof linger);
    /* Events bind on the same interface as ctrl, on ports of their own. */
    char host_part[PF_MAX_ENDPOINT];
    snprintf(host_part, sizeof host_part, "%s", a->bind);
    char *colon = strrchr(host_part, ':');
    if (colon && colon > host_part + 6) *colon = '\0';
    char any[PF_MAX_ENDPOINT + 4];
    snprintf(any, sizeof any, "%s:*", host_part);
    if (pf_bind_report(c->ctrl, "ctrl", a->bind, c->ctrl_ep, sizeof c->ctrl_ep, err,
                       sizeof err) ||
        pf_bind_report(c->xsub, "events in", any, c->pub_ep, sizeof c->pub_ep, err,
                       sizeof err) ||
        pf_bind_report(c->xpub, "events out", any, c->sub_ep, sizeof c->sub_ep, err,
                       sizeof err) ||
        (a->addr_file && pf_write_file_atomic(a->addr_file, c->ctrl_ep, strlen(c->ctrl_ep), err,
                                              sizeof err) != 0)) {
        /* Close everything first: with CURVE the context is czmq's, whose exit-time cleanup
           aborts on sockets left open. */
        pf_error("%s", err);
        zmq_close(c->ctrl);
        zmq_close(c->xsub);
        zmq_close(c->xpub);
        pf_zmq_ctx_term(c->zctx);
        return 1;
    }
    pf_info("listening on %s (events in %s, out %s); config %s, %d worker(s)", c->ctrl_ep,
            c->pub_ep, c->sub_ep, a->cfg_path, a->workers);
    return 0;
}

static void coordinator_close(coord *c) {
    zmq_close(c->ctrl);
    zmq_close(c->xsub);
    zmq_close(c->xpub);
    pf_zmq_ctx_term(c->zctx);
    free(c->yaml);
    free(c->tickets);
    pf_snapshot_free(c->snap);
    for (int i = 0; i < c->n_kv; i++) free(c->kv[i].value);
    pf_sampler_free(&c->sampler);
}

int pf_coordinator_main(int argc, char **argv) {
    coord_args a;
    if (parse_args(argc, argv, &a) != 0) return 2;
    pf_log_set_name("coordinator");
    pf_catch_signals();
    /* Started by `pixflow train`: if the front end dies (closed terminal, kill), stop the job
       in order rather than run on unattended. */
    if (a.exit_with_parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1)) {
        pf_error("the front end that started this coordinator is gone");
        return 1;
    }
    static coord c;
    memset(&c, 0, sizeof c);
    int rc = prepare(&c, &a);
    if (rc == 0) rc = open_sockets(&c, &a);
    if (rc != 0) return rc;
    if (coordinator_run(&c) != 0) {
        pf_error("the coordinator's loop failed (out of memory, or the ZeroMQ context ended)");
        c.exit_code = 1;
    }
    pf_info("exiting with status %d", c.exit_code);
    coordinator_close(&c);
    return c.exit_code;
}
