/*  client — see client.h. */
#include "runtime/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/log.h"
#include "common/util.h"
#include "proto/security.h"

static long long now_ms(void) {
    return (long long)(pf_now() * 1000.0);
}

static void *heartbeat_main(void *arg) {
    pf_client *c = arg;
    void *s = zmq_socket(c->zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (pf_security_client(s) != 0 || zmq_connect(s, c->addr) != 0) {
        zmq_close(s);
        return NULL;
    }
    pf_msg hb = { .type = PF_MSG_HEARTBEAT };
    hb.u.heartbeat.peer_id = c->peer_id;
    long long next = 0, prev = now_ms();
    while (!atomic_load(&c->hb_stop)) {
        long long t = now_ms();
        /* This loop wakes every 100 ms. A longer gap means this process was not running
           (host overloaded): the coordinator could not be heard meanwhile, so credit the gap
           instead of reading it as the coordinator's silence. */
        if (t - prev > 1000) atomic_fetch_add(&c->hb_last_reply_ms, t - prev);
        prev = t;
        if (t >= next) {
            pf_send(s, NULL, &hb, NULL, 0);
            next = t + PF_HEARTBEAT_MS;
        }
        zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) > 0) {
            pf_parts p;
            char err[256];
            while (pf_parts_recv(s, ZMQ_DONTWAIT, &p, err, sizeof err) == 0) {
                pf_msg m;
                if (p.n >= 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0),
                                              PF_MSG_HEARTBEAT, &m, err, sizeof err) == 0)
                    atomic_store(&c->hb_last_reply_ms, now_ms());
                pf_parts_close(&p);
            }
        }
    }
    zmq_close(s);
    return NULL;
}

/* Wait up to `wait_s` for the coordinator's answer to HELLO on c->ctrl. Returns 1 with the
   WELCOME taken into c, 0 when nothing came in time, or -1 with err (refused, signalled). */
static int await_welcome(pf_client *c, void *watch, int *failures, double wait_s, char *err,
                         size_t errlen) {
    double deadline = pf_now() + wait_s;
    for (;;) {
        if (pf_signalled) {
            c->stopped_by = pf_signalled;
            snprintf(err, errlen, "interrupted (signal %d) while joining the coordinator at "
                     "'%s'", (int)pf_signalled, c->addr);
            return -1;
        }
        double left = deadline - pf_now();
        if (left <= 0) return 0;
        zmq_pollitem_t it[2] = { { c->ctrl, 0, ZMQ_POLLIN, 0 }, { watch, 0, ZMQ_POLLIN, 0 } };
        if (zmq_poll(it, watch ? 2 : 1, (long)(left * 1000) + 1) <= 0) continue;
        /* A refused CURVE handshake is otherwise silent: no WELCOME, ever. */
        if (pf_security_watch_check(watch, c->addr, failures, err, errlen)) return -1;
        if (!(it[0].revents & ZMQ_POLLIN)) continue;
        pf_parts p;
        char e2[512];
        if (pf_parts_recv(c->ctrl, 0, &p, e2, sizeof e2) != 0) continue;
        pf_msg m;
        int ok = p.n >= 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), 0, &m,
                                           e2, sizeof e2) == 0;
        pf_parts_close(&p);
        if (!ok) {
            pf_warn("dropped a malformed message from the coordinator at '%s': %s", c->addr,
                    e2);
            continue;
        }
        if (m.type == PF_MSG_STOP) {
            if (strcmp(m.u.stop.reason, "abort") != 0) c->stopped_by = -1;
            snprintf(err, errlen, "the coordinator at '%s' refused us: %s", c->addr,
                     m.u.stop.text);
            pf_msg_clear(&m);
            return -1;
        }
        if (m.type != PF_MSG_WELCOME) {
            pf_msg_clear(&m);
            continue;
        }
        pf_msg_welcome *w = &m.u.welcome;
        c->peer_id = w->peer_id;
        c->rank = w->rank;
        c->world_size = w->world_size;
        snprintf(c->events_pub, sizeof c->events_pub, "%s", w->events_pub);
        snprintf(c->events_sub, sizeof c->events_sub, "%s", w->events_sub);
        c->config_yaml = w->config;
        w->config = NULL;
        pf_msg_clear(&m);
        return 1;
    }
}

int pf_client_join_wait(pf_client *c, void *zctx, const char *addr, int role, const char *name,
                        const char *endpoint, double timeout_s, int backoff, char *err,
                        size_t errlen) {
    memset(c, 0, sizeof *c);
    c->zctx = zctx;
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->ctrl = zmq_socket(zctx, ZMQ_DEALER);
    int linger = 2000;
    zmq_setsockopt(c->ctrl, ZMQ_LINGER, &linger, sizeof linger);
    /* ZeroMQ reconnects in the background; back off as we do, so a coordinator that is not
       there yet is not hammered. */
    int ivl = (int)(PF_JOIN_RETRY_FIRST_S * 1000), ivl_max = (int)(PF_JOIN_RETRY_MAX_S * 1000);
    zmq_setsockopt(c->ctrl, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(c->ctrl, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    void *watch = pf_security_watch(zctx, c->ctrl);
    int failures = 0;
    if (pf_security_client(c->ctrl) != 0 || zmq_connect(c->ctrl, addr) != 0) {
        snprintf(err, errlen, "cannot connect to coordinator '%s': %s (expected "
                 "tcp://HOST:PORT)", addr, zmq_strerror(errno));
        pf_security_unwatch(c->ctrl, watch);
        zmq_close(c->ctrl);
        c->ctrl = NULL;
        return -1;
    }
    pf_msg hello = { .type = PF_MSG_HELLO };
    hello.u.hello.role = role;
    snprintf(hello.u.hello.name, sizeof hello.u.hello.name, "%s", name);
    hello.u.hello.pid = getpid();
    snprintf(hello.u.hello.host, sizeof hello.u.hello.host, "%s", pf_hostname());
    snprintf(hello.u.hello.endpoint, sizeof hello.u.hello.endpoint, "%s",
             endpoint ? endpoint : "");
    /* One socket throughout: ZeroMQ queues HELLO until a connection is up, so a coordinator
       that starts later still gets it. Each attempt sends HELLO again (the coordinator ignores
       a repeated HELLO from the same socket), in case it had restarted meanwhile. */
    double t0 = pf_now(), wait = backoff ? PF_JOIN_RETRY_FIRST_S : timeout_s;
    int rc = 0;
    /* A send can block for good when libzmq has given up on the connection (a handshake that
       ended in a protocol error: not a PixFlow ctrl endpoint); bounded here, so the join
       deadline holds. EAGAIN counts as an attempt that got no answer. */
    int join_sndtimeo = 200, blocking = -1;
    zmq_setsockopt(c->ctrl, ZMQ_SNDTIMEO, &join_sndtimeo, sizeof join_sndtimeo);
    for (int attempt = 1;; attempt++) {
        if (pf_send(c->ctrl, NULL, &hello, NULL, 0) != 0 && errno != EAGAIN) {
            snprintf(err, errlen, "cannot send HELLO to coordinator '%s': %s", addr,
                     zmq_strerror(errno));
            goto fail;
        }
        if (timeout_s >= 0 && wait > timeout_s - (pf_now() - t0))
            wait = timeout_s - (pf_now() - t0);
        rc = await_welcome(c, watch, &failures, wait > 0 ? wait : 0, err, errlen);
        if (rc < 0) goto fail;
        if (rc == 1) break;
        double waited = pf_now() - t0;
        if (timeout_s >= 0 && waited >= timeout_s - 1e-3) {
            snprintf(err, errlen, "no answer from the coordinator at '%s' within %.1f s (is it "
                     "running, and is that its ctrl address?%s)", addr, timeout_s,
                     pf_security_on() ? " does it run with security.curve and admit our key?"
                                      : "");
            goto fail;
        }
        if (backoff) {
            double next = wait * 2 > PF_JOIN_RETRY_MAX_S ? PF_JOIN_RETRY_MAX_S : wait * 2;
            /* Said once per doubling, then once a minute while at the longest wait. */
            if (next > wait || attempt % (int)(60 / PF_JOIN_RETRY_MAX_S) == 0)
                pf_warn("cannot reach coordinator at %s; retrying in %.1f s", addr, next);
            wait = next;
        }
    }
    zmq_setsockopt(c->ctrl, ZMQ_SNDTIMEO, &blocking, sizeof blocking);
    if (pf_config_parse(&c->cfg, "<config from coordinator>", c->config_yaml,
                        strlen(c->config_yaml), 0, err, errlen) != 0)
        goto fail;
    pf_security_unwatch(c->ctrl, watch);
    watch = NULL;
    c->pub = zmq_socket(zctx, ZMQ_PUB);
    zmq_setsockopt(c->pub, ZMQ_LINGER, &linger, sizeof linger);
    if (pf_security_client(c->pub) != 0 || zmq_connect(c->pub, c->events_pub) != 0) {
        snprintf(err, errlen, "cannot connect to events '%s': %s", c->events_pub,
                 zmq_strerror(errno));
        goto fail;
    }
    atomic_store(&c->hb_last_reply_ms, now_ms());
    atomic_store(&c->hb_stop, 0);
    if (pthread_create(&c->hb_thread, NULL, heartbeat_main, c) != 0) {
        snprintf(err, errlen, "cannot start heartbeat thread");
        goto fail;
    }
    return 0;
fail:
    if (c->pub) zmq_close(c->pub);
    if (c->ctrl) pf_security_unwatch(c->ctrl, watch);
    if (c->ctrl) {
        int linger = 0;
        if (c->stopped_by > 0) {
            /* The coordinator may have taken HELLO already: say that this peer is leaving
               (DONE, 0), so that it is not taken for a peer that died. */
            pf_msg d = { .type = PF_MSG_DONE };
            d.u.done.rank = -1;
            snprintf(d.u.done.text, sizeof d.u.done.text, "left before joining (signal %d)",
                     c->stopped_by);
            pf_send(c->ctrl, NULL, &d, NULL, 0);
            linger = 200;
        }
        zmq_setsockopt(c->ctrl, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(c->ctrl);
    }
    free(c->config_yaml);
    c->pub = c->ctrl = NULL;
    c->config_yaml = NULL;
    return -1;
}

int pf_client_join(pf_client *c, void *zctx, const char *addr, int role, const char *name,
                   const char *endpoint, char *err, size_t errlen) {
    return pf_client_join_wait(c, zctx, addr, role, name, endpoint, PF_JOIN_TIMEOUT_MS / 1000.0,
                               0, err, errlen);
}

int pf_client_stop_status(const pf_client *c, const char *err) {
    if (c->stopped_by > 0) {
        pf_info("%s: stopping", err);
        return 128 + c->stopped_by;
    }
    if (c->stopped_by < 0) {
        pf_info("%s", err);
        return 0;
    }
    pf_error("%s", err);
    return 1;
}

int pf_client_coordinator_alive(pf_client *c) {
    return now_ms() - atomic_load(&c->hb_last_reply_ms) < PF_PEER_TIMEOUT_MS;
}

int pf_client_send(pf_client *c, const pf_msg *m, const pf_frame *frames, int nframes) {
    return pf_send(c->ctrl, NULL, m, frames, nframes);
}

int pf_client_recv(pf_client *c, pf_msg **out) {
    *out = NULL;
    pf_parts p;
    char err[512];
    if (pf_parts_recv(c->ctrl, ZMQ_DONTWAIT, &p, err, sizeof err) != 0)
        return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    pf_msg *m = malloc(sizeof *m);
    int ok = m && p.n >= 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), 0, m,
                                            err, sizeof err) == 0;
    pf_parts_close(&p);
    if (!ok) {
        pf_warn("dropped a bad message from the coordinator: %s", m ? err : "out of memory");
        free(m);
        return -1;
    }
    *out = m;
    return 1;
}

void pf_client_msg_free(pf_msg **m) {
    if (!*m) return;
    pf_msg_clear(*m);
    free(*m);
    *m = NULL;
}

/* One request/answer on the kv socket. Returns the decoded answer (caller frees) and keeps its
   value frame in *value (malloc'd) when there is one. */
static pf_msg *kv_request(pf_client *c, const pf_msg *req, const pf_frame *frame, void **value,
                          size_t *len) {
    if (!c->kv) {
        c->kv = zmq_socket(c->zctx, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(c->kv, ZMQ_LINGER, &linger, sizeof linger);
        if (pf_security_client(c->kv) != 0 || zmq_connect(c->kv, c->addr) != 0) {
            zmq_close(c->kv);
            c->kv = NULL;
            return NULL;
        }
    }
    if (pf_send(c->kv, NULL, req, frame, frame ? 1 : 0) != 0) return NULL;
    double deadline = pf_now() + 5.0;
    while (pf_now() < deadline) {
        zmq_pollitem_t it = { c->kv, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) <= 0) continue;
        pf_parts p;
        char err[256];
        if (pf_parts_recv(c->kv, ZMQ_DONTWAIT, &p, err, sizeof err) != 0) continue;
        pf_msg *m = malloc(sizeof *m);
        int ok = m && p.n >= 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0),
                                                PF_MSG_KV_VALUE, m, err, sizeof err) == 0 &&
                 strcmp(m->u.kv_value.key, req->type == PF_MSG_KV_SET ? req->u.kv_set.key
                                                                      : req->u.kv_get.key) == 0;
        if (ok && value && m->u.kv_value.found) {
            ok = p.n == 2 && pf_parts_size(&p, 1) == m->u.kv_value.size;
            *len = m->u.kv_value.size;
            *value = ok ? malloc(*len ? *len : 1) : NULL;
            if (*value) memcpy(*value, pf_parts_data(&p, 1), *len);
            else ok = 0;
        }
        pf_parts_close(&p);
        if (ok) return m;
        free(m);    /* an answer to an earlier, timed-out request: skip it */
    }
    return NULL;
}

int pf_client_kv_set(void *client, const char *key, const void *value, size_t len) {
    pf_client *c = client;
    if (strlen(key) >= PF_MAX_KEY || len > PF_MAX_KV_VALUE) return -1;
    pf_msg req = { .type = PF_MSG_KV_SET };
    snprintf(req.u.kv_set.key, sizeof req.u.kv_set.key, "%s", key);
    req.u.kv_set.size = (uint32_t)len;
    pf_frame f = { value, len };
    pf_msg *a = kv_request(c, &req, &f, NULL, NULL);
    int rc = a && a->u.kv_value.found ? 0 : -1;
    free(a);
    return rc;
}

int pf_client_kv_get(void *client, const char *key, void **value, size_t *len) {
    pf_client *c = client;
    if (strlen(key) >= PF_MAX_KEY) return -1;
    pf_msg req = { .type = PF_MSG_KV_GET };
    snprintf(req.u.kv_get.key, sizeof req.u.kv_get.key, "%s", key);
    *value = NULL;
    *len = 0;
    pf_msg *a = kv_request(c, &req, NULL, value, len);
    int rc = !a ? -1 : a->u.kv_value.found ? 1 : 0;
    free(a);
    return rc;
}

int pf_client_publish(pf_client *c, pf_msg_event *ev) {
    snprintf(ev->source, sizeof ev->source, "%s", c->name);
    ev->seq = ++c->event_seq;
    pf_msg m = { .type = PF_MSG_EVENT };
    m.u.event = *ev;
    pf_frame topic = { ev->kind, strlen(ev->kind) };
    return pf_send(c->pub, &topic, &m, NULL, 0);
}

void pf_client_close(pf_client *c) {
    if (c->ctrl) {
        atomic_store(&c->hb_stop, 1);
        pthread_join(c->hb_thread, NULL);
        zmq_close(c->ctrl);
        zmq_close(c->pub);
        if (c->kv) zmq_close(c->kv);
    }
    c->ctrl = c->pub = c->kv = NULL;
    free(c->config_yaml);
    c->config_yaml = NULL;
}

int pf_bind_report(void *sock, const char *what, const char *want, char *out, size_t outlen,
                   char *err, size_t errlen) {
    if (pf_security_server(sock, what, err, errlen) != 0) return -1;
    if (!pf_security_on() && !pf_endpoint_is_local(want))
        pf_warn("%s binds %s without CURVE: anyone who can reach that address can join or feed "
                "the job; set security.curve: true (docs/architecture.md, Security)", what,
                want);
    if (zmq_bind(sock, want) != 0) {
        snprintf(err, errlen, "cannot bind '%s': %s", want, zmq_strerror(errno));
        return -1;
    }
    char ep[PF_MAX_ENDPOINT];
    size_t n = sizeof ep;
    zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &n);
    const char *wild = strstr(ep, "0.0.0.0");
    if (wild)
        snprintf(out, outlen, "%.*s%s%s", (int)(wild - ep), ep, pf_hostname(), wild + 7);
    else
        snprintf(out, outlen, "%s", ep);
    return 0;
}

void *pf_events_subscribe(void *zctx, const char *events_sub, const char *const *kinds) {
    void *s = zmq_socket(zctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (!kinds) {
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    } else {
        for (int i = 0; kinds[i]; i++) zmq_setsockopt(s, ZMQ_SUBSCRIBE, kinds[i],
                                                      strlen(kinds[i]));
    }
    if (pf_security_client(s) != 0 || zmq_connect(s, events_sub) != 0) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

int pf_events_is_visual(const pf_parts *p) {
    return p->n >= 1 && pf_parts_size(p, 0) == 6 && memcmp(pf_parts_data(p, 0), "visual", 6) == 0;
}

int pf_events_is_probe(const pf_parts *p) {
    return p->n >= 1 && pf_parts_size(p, 0) > 6 && memcmp(pf_parts_data(p, 0), "ready/", 6) == 0;
}

int pf_client_confirm_subscription(pf_client *c, void *sub, double timeout_s,
                                   int (*on_other)(const pf_parts *msg, void *ctx), void *ctx,
                                   char *err, size_t errlen) {
    char topic[32];
    snprintf(topic, sizeof topic, "ready/%u", c->peer_id);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, strlen(topic));
    pf_msg probe = { .type = PF_MSG_READY };
    probe.u.ready.peer_id = c->peer_id;
    pf_frame t = { topic, strlen(topic) };
    double deadline = pf_now() + timeout_s, next_probe = 0;
    int seen = 0;
    while (!seen) {
        double now = pf_now();
        if (pf_signalled) {
            c->stopped_by = pf_signalled;
            snprintf(err, errlen, "signal %d while confirming the events subscription",
                     (int)pf_signalled);
            return -1;
        }
        if (now > deadline) {
            snprintf(err, errlen, "the events subscription at %s did not deliver within %.0f s",
                     c->events_sub, timeout_s);
            return -1;
        }
        if (now >= next_probe) {
            pf_send(c->pub, &t, &probe, NULL, 0);
            next_probe = now + 0.1;
        }
        zmq_pollitem_t it = { sub, 0, ZMQ_POLLIN, 0 };
        zmq_poll(&it, 1, 20);
        pf_parts p;
        char e2[256];
        while (!seen && pf_parts_recv(sub, ZMQ_DONTWAIT, &p, e2, sizeof e2) == 0) {
            int mine = pf_events_is_probe(&p) && pf_parts_size(&p, 0) == strlen(topic) &&
                       memcmp(pf_parts_data(&p, 0), topic, strlen(topic)) == 0;
            int rc = mine || pf_events_is_probe(&p) || !on_other ? 0 : on_other(&p, ctx);
            pf_parts_close(&p);
            if (rc) {   /* on_other said why (err may be its buffer too) */
                if (err && errlen && !err[0])
                    snprintf(err, errlen, "failed while confirming the events subscription");
                return -1;
            }
            seen = mine;
        }
    }
    zmq_setsockopt(sub, ZMQ_UNSUBSCRIBE, topic, strlen(topic));
    return pf_client_send(c, &probe, NULL, 0);
}

int pf_client_confirm_publisher(pf_client *c, double timeout_s, char *err, size_t errlen) {
    static const char *const none[] = { "ready/", NULL };  /* probes only */
    void *sub = pf_events_subscribe(c->zctx, c->events_sub, none);
    if (!sub) {
        snprintf(err, errlen, "cannot subscribe to events at '%s'", c->events_sub);
        return -1;
    }
    int rc = pf_client_confirm_subscription(c, sub, timeout_s, NULL, NULL, err, errlen);
    zmq_close(sub);
    return rc;
}

int pf_events_decode(const pf_parts *p, pf_msg_event *ev, char *err, size_t errlen) {
    int rc = -1;
    pf_msg *m = malloc(sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
    } else if (p->n != 2) {
        snprintf(err, errlen, "event with %d frames (expected topic + header)", p->n);
        errno = EPROTO;
    } else if (pf_msg_decode(pf_parts_data(p, 1), pf_parts_size(p, 1), PF_MSG_EVENT, m, err,
                             errlen) == 0) {
        *ev = m->u.event;
        rc = 0;
    } else {
        errno = EPROTO;
    }
    free(m);
    return rc;
}

int pf_events_recv(void *sub, int flags, pf_msg_event *ev, char *err, size_t errlen) {
    for (;;) {
        pf_parts p;
        if (pf_parts_recv(sub, flags, &p, err, errlen) != 0) return -1;
        /* Pictures share the proxy but are not events: skipped here (hooks/hook.c takes them). */
        int skip = pf_events_is_visual(&p) || pf_events_is_probe(&p);
        int rc = skip ? 0 : pf_events_decode(&p, ev, err, errlen);
        pf_parts_close(&p);
        if (!skip) return rc;
    }
}
