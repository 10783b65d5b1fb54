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

int pf_hook_run(const pf_hook_ops *ops, int argc, char **argv) {
    const char *addr = NULL, *keys = NULL;
    int instance = 0, instances = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) addr = argv[++i];
        else if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "pixflow hook %s", ops->name);
            if (pf_arg_part(cmd, "--instance", argv[++i], 64, &instance, &instances)) return 2;
        }
        else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind_arg = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) keys = argv[++i];
        else addr = NULL, i = argc;
    }
    if (!addr) {
        fprintf(stderr, "usage: pixflow hook %s --connect tcp://HOST:PORT [--bind "
                        "tcp://HOST:PORT] [--instance I/N] [--keys DIR]\n", ops->name);
        return 2;
    }
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
    int status = 1, joined = 0, done_sent = 0, first_signal = 0;
    if (ops->bind && ops->bind(&h, endpoint, sizeof endpoint, err, sizeof err) != 0) goto out;
    if (pf_client_join(&h.client, h.zctx, addr, ops->role, name, endpoint, err, sizeof err)) {
        status = pf_client_stop_status(&h.client, err);
        err[0] = '\0';
        goto out;
    }
    joined = 1;
    pf_log_set_level(h.client.cfg.log_level);
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s_hook.log", h.client.cfg.work_dir, name);
    pf_log_open_file(path);
    h.sub = pf_events_subscribe(h.zctx, h.client.events_sub, ops->kinds);
    if (!h.sub) {
        snprintf(err, sizeof err, "cannot subscribe to events at '%s'", h.client.events_sub);
        goto out;
    }
    if (ops->start && ops->start(&h, err, sizeof err) != 0) goto out;
    /* Training starts only once every hook has said READY: its subscription delivers, so it
       misses none of the job's events (a SUB joins the proxy asynchronously). */
    {
        take_ctx t = { &h, err, sizeof err };
        if (pf_client_confirm_subscription(&h.client, h.sub, HOOK_READY_TIMEOUT_S,
                                           take_during_probe, &t, err, sizeof err) != 0) {
            /* A signal before the job started: nothing is lost by leaving (DONE with 0). */
            if (h.client.stopped_by > 0) {
                status = pf_client_stop_status(&h.client, err);
                send_done(&h, 0, err);
                done_sent = 1;
                err[0] = '\0';
            }
            goto out;
        }
    }
    for (;;) {
        if (signal_ends_hook(&first_signal, err, sizeof err)) goto out;
        if (!pf_client_coordinator_alive(&h.client)) {
            snprintf(err, sizeof err, "coordinator at %s stopped answering", addr);
            goto out;
        }
        zmq_pollitem_t items[3] = { { h.client.ctrl, 0, ZMQ_POLLIN, 0 },
                                    { h.sub, 0, ZMQ_POLLIN, 0 },
                                    { h.own, 0, ZMQ_POLLIN, 0 } };
        zmq_poll(items, h.own ? 3 : 2, 200);
        if ((items[1].revents & ZMQ_POLLIN) && drain_events(&h, err, sizeof err) != 0) goto out;
        if (h.own && (items[2].revents & ZMQ_POLLIN) && ops->own_ready &&
            ops->own_ready(&h, err, sizeof err) != 0)
            goto out;
        if (!h.pending_stop[0] && !(items[0].revents & ZMQ_POLLIN)) continue;
        if (h.pending_stop[0]) goto stop;
        pf_msg *m;
        if (pf_client_recv(&h.client, &m) != 1) continue;
        if (m->type == PF_MSG_STOP)
            snprintf(h.pending_stop, sizeof h.pending_stop, "%s", m->u.stop.reason);
        pf_client_msg_free(&m);
        if (h.pending_stop[0]) goto stop;
    }
stop:;
    /* Take what is still in flight before finishing: events until 200 ms pass without one
       (2 s at most), so the last checkpoint and eval events are not lost in the proxy. */
    char reason[PF_MAX_NAME];
    snprintf(reason, sizeof reason, "%s", h.pending_stop);
    for (double quiet_until = pf_now() + 0.2, give_up = pf_now() + 2.0;
         pf_now() < quiet_until && pf_now() < give_up;) {
        zmq_pollitem_t it = { h.sub, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 50) > 0) {
            if (drain_events(&h, err, sizeof err) != 0) goto out;
            quiet_until = pf_now() + 0.2;
        }
    }
    if (h.own && ops->own_ready && ops->own_ready(&h, err, sizeof err) != 0) goto out;
    if (ops->stop && ops->stop(&h, reason, err, sizeof err) != 0) goto out;
    status = 0;
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
