/*  hook — see hook.h. */
#include "hooks/hook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/log.h"
#include "common/number.h"
#include "common/util.h"
#include "hooks/visual_grid.h"
#include "runtime/reactor.h"
#include "proto/security.h"

static const char *bind_arg = "tcp://127.0.0.1:*";

const char *pf_hook_bind_arg(void) {
    return bind_arg;
}

static void send_done(pf_hook *h, int status, const char *text) {
    pf_msg m = { .type = PF_MSG_DONE };
    m.u.done.rank = -1;
    m.u.done.status = status;
    snprintf(m.u.done.text, sizeof m.u.done.text, "%s", text);
    pf_client_send(&h->client, &m, NULL, 0);
}

int pf_hook_stop_requested(pf_hook *h) {
    pf_msg *m;
    int rc;
    /* A later interrupt or abort overrides a "finish" being worked on. */
    while ((!h->pending_stop[0] || !strcmp(h->pending_stop, "finish")) &&
           (rc = pf_client_recv(&h->client, &m)) != 0) {
        if (rc == 1 && m->type == PF_MSG_STOP)
            snprintf(h->pending_stop, sizeof h->pending_stop, "%s", m->u.stop.reason);
        pf_client_msg_free(&m);
    }
    return h->pending_stop[0] && strcmp(h->pending_stop, "finish") != 0;
}

/* A message on topic "visual": decoded, its frames checked, handed to ops->visual. Bad input
   is logged and dropped. Returns 0 or -1 (hook failure, err set). */
static int take_visual(pf_hook *h, const pf_parts *p, char *err, size_t errlen) {
    if (!h->ops->visual) return 0;
    pf_msg *m = malloc(sizeof *m);
    char e2[512];
    int rc = 0;
    if (!m) return 0;
    if (p->n != 5) {
        pf_warn("dropped a visual message with %d frames (expected topic, header, lq, output, "
                "gt)", p->n);
    } else if (pf_msg_decode(pf_parts_data(p, 1), pf_parts_size(p, 1), PF_MSG_VISUAL, m, e2,
                             sizeof e2) != 0) {
        pf_warn("dropped a malformed visual message: %s", e2);
    } else if (pf_visual_check(&m->u.visual, pf_parts_size(p, 2), pf_parts_size(p, 3),
                               pf_parts_size(p, 4), e2, sizeof e2) != 0) {
        pf_warn("dropped a visual message from '%s' (iter %lld): %s", m->u.visual.source,
                (long long)m->u.visual.iter, e2);
    } else {
        rc = h->ops->visual(h, &m->u.visual, pf_parts_data(p, 2), pf_parts_data(p, 3),
                            pf_parts_data(p, 4), err, errlen);
    }
    free(m);
    return rc;
}

/* One message from the SUB socket: pictures to ops->visual, events to ops->event, probes
   (another hook's subscription check) ignored. Returns 0 or -1 (hook failure, err set). */
static int take_message(pf_hook *h, const pf_parts *p, char *err, size_t errlen) {
    if (pf_events_is_probe(p)) return 0;
    if (pf_events_is_visual(p)) return take_visual(h, p, err, errlen);
    char e2[512];
    int rc = 0;
    pf_msg_event *ev = malloc(sizeof *ev);
    if (ev && pf_events_decode(p, ev, e2, sizeof e2) != 0)
        pf_warn("dropped a malformed event: %s", e2);
    else if (ev && h->ops->event)
        rc = h->ops->event(h, ev, err, errlen);
    free(ev);
    return rc;
}

typedef struct {
    pf_hook *h;
    char *err;
    size_t errlen;
} take_ctx;

static int take_during_probe(const pf_parts *p, void *ctx) {
    take_ctx *t = ctx;
    return take_message(t->h, p, t->err, t->errlen);
}

/* Drain the SUB socket into the hook. Returns 0 or -1 (hook failure, err set). */
static int drain_events(pf_hook *h, char *err, size_t errlen) {
    for (;;) {
        pf_parts p;
        char e2[512];
        if (pf_parts_recv(h->sub, ZMQ_DONTWAIT, &p, e2, sizeof e2) != 0) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            pf_warn("dropped a malformed event: %s", e2);
            continue;
        }
        int rc = take_message(h, &p, err, errlen);
        pf_parts_close(&p);
        if (rc) return -1;
    }
}

#define HOOK_READY_TIMEOUT_S 20.0

/* A signal does not end a hook that has joined: when a scheduler signals every process of the
   job, the coordinator stops the hooks only after the workers' last checkpoint, which this
   hook may have to write or evaluate or log. So the first SIGTERM/SIGHUP (SIGINT is ignored)
   is noted and the hook goes on until its STOP, or until the coordinator stops answering; a
   second one makes it leave at once (the job then aborts). Returns 1 to leave now, with err. */
static int signal_ends_hook(int *first_count, char *err, size_t errlen) {
    if (!pf_signal_count) return 0;
    if (!*first_count) {
        *first_count = (int)pf_signal_count;
        pf_info("signal %d: going on until the coordinator stops this hook, after the workers' "
                "checkpoint (a second signal ends it now)", (int)pf_signalled);
        return 0;
    }
    if (pf_signal_count == *first_count) return 0;
    snprintf(err, errlen, "terminated by a second signal (%d)", (int)pf_signalled);
    return 1;
}

/* The hook's loop. RUNNING: events, the own socket and ctrl are read, a 200 ms tick watches
   the coordinator; a STOP moves to DRAINING: only events are read, until 200 ms pass without
   one (2 s at most), so the last checkpoint and eval events are not lost in the proxy; then
   ops->stop, and WAITING while ops->waiting says the hook still expects events. */
typedef enum { HOOK_RUNNING, HOOK_DRAINING, HOOK_WAITING } hook_phase;

typedef struct {
    pf_hook *h;
    const char *addr;               /* the coordinator's, for messages */
    hook_phase phase;
    int first_signal;               /* pf_signal_count at the first signal, 0 before one */
    int status;                     /* the exit status when the loop ends */
    char reason[PF_MAX_NAME];       /* the STOP being finished */
    pf_timer *quiet, *give_up;      /* DRAINING: 200 ms without an event, 2 s in all */
    char *err;
    size_t errlen;
} hook_loop;

#define DRAIN_QUIET_S 0.2
#define DRAIN_MAX_S 2.0
#define HOOK_TICK_S 0.2

/* The hook is done: ends the loop with status 0. */
static int finish(hook_loop *l) {
    l->status = 0;
    return -1;
}

static int drain_over(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    pf_hook *h = l->h;
    pf_reactor_cancel(r, &l->quiet);
    pf_reactor_cancel(r, &l->give_up);
    if (h->own && h->ops->own_ready && h->ops->own_ready(h, l->err, l->errlen) != 0) return -1;
    if (h->ops->stop && h->ops->stop(h, l->reason, l->err, l->errlen) != 0) return -1;
    if (!h->ops->waiting || !h->ops->waiting(h)) return finish(l);
    l->phase = HOOK_WAITING;
    return 0;
}

static int begin_drain(pf_reactor *r, hook_loop *l) {
    pf_hook *h = l->h;
    l->phase = HOOK_DRAINING;
    snprintf(l->reason, sizeof l->reason, "%s", h->pending_stop);
    pf_reactor_reader_end(r, h->client.ctrl);
    if (h->own) pf_reactor_reader_end(r, h->own);   /* taken once more after the drain */
    l->quiet = pf_reactor_after(r, DRAIN_QUIET_S, drain_over, l);
    l->give_up = pf_reactor_after(r, DRAIN_MAX_S, drain_over, l);
    return l->quiet && l->give_up ? 0 : -1;
}

static int on_events(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    pf_hook *h = l->h;
    if (drain_events(h, l->err, l->errlen) != 0) return -1;
    switch (l->phase) {
    case HOOK_RUNNING:  /* a callback may have taken a STOP (pf_hook_stop_requested) */
        return h->pending_stop[0] ? begin_drain(r, l) : 0;
    case HOOK_DRAINING:
        return pf_reactor_restart(r, l->quiet, DRAIN_QUIET_S);
    case HOOK_WAITING:
        return h->ops->waiting(h) ? 0 : finish(l);
    }
    return 0;
}

static int on_own(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    pf_hook *h = l->h;
    if (h->ops->own_ready && h->ops->own_ready(h, l->err, l->errlen) != 0) return -1;
    return h->pending_stop[0] ? begin_drain(r, l) : 0;
}

static int on_ctrl(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    pf_hook *h = l->h;
    pf_msg *m;
    int rc;
    while (!h->pending_stop[0] && (rc = pf_client_recv(&h->client, &m)) != 0) {
        if (rc == 1 && m->type == PF_MSG_STOP)
            snprintf(h->pending_stop, sizeof h->pending_stop, "%s", m->u.stop.reason);
        pf_client_msg_free(&m);
    }
    return h->pending_stop[0] ? begin_drain(r, l) : 0;
}

static int on_tick(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    pf_hook *h = l->h;
    if (l->phase == HOOK_WAITING) return h->ops->waiting(h) ? 0 : finish(l);
    if (l->phase == HOOK_RUNNING && !pf_client_coordinator_alive(&h->client)) {
        snprintf(l->err, l->errlen, "coordinator at %s stopped answering", l->addr);
        return -1;
    }
    return 0;
}

static int on_hook_signal(pf_reactor *r, void *arg) {
    hook_loop *l = arg;
    /* While it drains or waits, the hook is already finishing what the job asked of it. */
    return l->phase == HOOK_RUNNING && signal_ends_hook(&l->first_signal, l->err, l->errlen)
               ? -1 : 0;
}

/* Run the joined hook until it is done. Returns the exit status: 0 once its STOP is
   finished, 1 with err on a failure. */
static int hook_loop_run(pf_hook *h, const char *addr, char *err, size_t errlen) {
    hook_loop l = { .h = h, .addr = addr, .status = 1, .err = err, .errlen = errlen };
    pf_reactor *r = pf_reactor_new();
    int ok = r && pf_reactor_reader(r, h->sub, on_events, &l) == 0 &&
             pf_reactor_reader(r, h->client.ctrl, on_ctrl, &l) == 0 &&
             (!h->own || pf_reactor_reader(r, h->own, on_own, &l) == 0) &&
             pf_reactor_every(r, HOOK_TICK_S, on_tick, &l);
    if (ok) {
        pf_reactor_on_signal(r, on_hook_signal, &l);
        if (pf_reactor_run(r) != 0) snprintf(err, errlen, "the hook's loop failed");
    } else {
        snprintf(err, errlen, "cannot set up the hook's loop (out of memory)");
    }
    pf_reactor_destroy(&r);
    return l.status;
}

/* Parse argv into *addr, *keys, the instance and --bind. Returns 0, or 2 after a usage
   message. */
static int parse_args(const pf_hook_ops *ops, int argc, char **argv, const char **addr,
                      const char **keys, int *instance, int *instances) {
    *addr = *keys = NULL;
    *instance = 0;
    *instances = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) *addr = argv[++i];
        else if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "pixflow hook %s", ops->name);
            if (pf_arg_part(cmd, "--instance", argv[++i], 64, instance, instances)) return 2;
        }
        else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind_arg = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) *keys = argv[++i];
        else *addr = NULL, i = argc;
    }
    if (!*addr) {
        fprintf(stderr, "usage: pixflow hook %s --connect tcp://HOST:PORT [--bind "
                        "tcp://HOST:PORT] [--instance I/N] [--keys DIR]\n", ops->name);
        return 2;
    }
    return 0;
}

/* After the join: log file, subscription, ops->start, and READY once the subscription
   delivers (training starts only once every hook has said it, so it misses none of the
   job's events: a SUB joins the proxy asynchronously). Returns 0, or -1 with err; a signal
   before the job started sets *status (128 + N) and sends DONE 0, err empty. */
static int hook_start(pf_hook *h, const char *name, int *status, int *done_sent, char *err,
                      size_t errlen) {
    const pf_hook_ops *ops = h->ops;
    pf_log_set_level(h->client.cfg.log_level);
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s_hook.log", h->client.cfg.work_dir, name);
    pf_log_open_file(path);
    h->sub = pf_events_subscribe(h->zctx, h->client.events_sub, ops->kinds);
    if (!h->sub) {
        snprintf(err, errlen, "cannot subscribe to events at '%s'", h->client.events_sub);
        return -1;
    }
    if (ops->start && ops->start(h, err, errlen) != 0) return -1;
    take_ctx t = { h, err, errlen };
    if (pf_client_confirm_subscription(&h->client, h->sub, HOOK_READY_TIMEOUT_S,
                                       take_during_probe, &t, err, errlen) == 0)
        return 0;
    /* A signal before the job started: nothing is lost by leaving (DONE with 0). */
    if (h->client.stopped_by > 0) {
        *status = pf_client_stop_status(&h->client, err);
        send_done(h, 0, err);
        *done_sent = 1;
        err[0] = '\0';
    }
    return -1;
}

int pf_hook_run(const pf_hook_ops *ops, int argc, char **argv) {
    const char *addr, *keys;
    int instance, instances;
    if (parse_args(ops, argc, argv, &addr, &keys, &instance, &instances)) return 2;
    char name[PF_MAX_NAME];
    if (instance) snprintf(name, sizeof name, "%s%d", ops->name, instance);
    else snprintf(name, sizeof name, "%s", ops->name);
    pf_log_set_name(name);
    pf_catch_signals();
    signal(SIGINT, SIG_IGN);  /* stopped through the coordinator, after the workers */
    static pf_hook h;
    memset(&h, 0, sizeof h);
    h.ops = ops;
    h.instance = instance;
    h.instances = instances;
    char err[2048] = "", endpoint[PF_MAX_ENDPOINT] = "";
    if (pf_security_init_peer(keys, PF_SEC_CLIENT | (ops->bind ? PF_SEC_SERVER : 0), err,
                              sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    h.zctx = pf_zmq_ctx_new();
    int status = 1, joined = 0, done_sent = 0;
    if (ops->bind && ops->bind(&h, endpoint, sizeof endpoint, err, sizeof err) != 0) goto out;
    if (pf_client_join(&h.client, h.zctx, addr, ops->role, name, endpoint, err, sizeof err)) {
        status = pf_client_stop_status(&h.client, err);
        err[0] = '\0';
        goto out;
    }
    joined = 1;
    if (hook_start(&h, name, &status, &done_sent, err, sizeof err) == 0)
        status = hook_loop_run(&h, addr, err, sizeof err);
out:
    if (status && err[0]) pf_error("%s", err);
    if (joined && !done_sent) send_done(&h, status, err);
    if (ops->destroy) ops->destroy(&h);
    if (h.sub) zmq_close(h.sub);
    if (h.own) zmq_close(h.own);
    if (joined) pf_client_close(&h.client);
    pf_zmq_ctx_term(h.zctx);
    return status;
}
