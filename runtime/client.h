/*  client — how every role other than the coordinator joins a job: a DEALER on the
    coordinator's `ctrl` endpoint for requests (HELLO -> WELCOME, then role traffic), a
    heartbeat thread with its own DEALER (so a long training step or a big decode never makes a
    live peer look dead), and a PUB on the coordinator's events proxy.

    Heartbeats: the thread sends HEARTBEAT{peer_id} every PF_HEARTBEAT_MS; the coordinator
    answers each one. A peer that hears nothing for PF_PEER_TIMEOUT_MS treats the coordinator
    as dead; the coordinator treats a peer the same way.
*/
#ifndef PF_CLIENT_H
#define PF_CLIENT_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/config.h"
#include "proto/proto.h"

#define PF_HEARTBEAT_MS 500
#define PF_PEER_TIMEOUT_MS 3000
#define PF_JOIN_TIMEOUT_MS 15000
#define PF_JOIN_RETRY_FIRST_S 0.1  /* pf_client_join_wait: first wait for WELCOME, doubling */
#define PF_JOIN_RETRY_MAX_S 5.0    /* ... up to this */

typedef struct {
    void *zctx;                 /* ZeroMQ context (owned) */
    void *ctrl;                 /* DEALER to the coordinator's ctrl (main thread only) */
    void *pub;                  /* PUB to events_pub (main thread only) */
    void *kv;                   /* DEALER for key/value requests, opened on first use (main
                                   thread only; a socket of its own so replies never mix with
                                   role traffic on ctrl) */
    char addr[PF_MAX_ENDPOINT]; /* coordinator ctrl endpoint */
    char name[PF_MAX_NAME];     /* "loader", "worker0", ... (source of events) */
    uint32_t peer_id;
    int32_t rank, world_size;
    char events_pub[PF_MAX_ENDPOINT], events_sub[PF_MAX_ENDPOINT];
    pf_config cfg;              /* parsed from WELCOME's YAML */
    char *config_yaml;          /* the resolved YAML text (owned) */
    uint64_t event_seq;         /* last sequence number published */
    pthread_t hb_thread;
    atomic_int hb_stop;
    atomic_llong hb_last_reply_ms; /* monotonic ms of the coordinator's last answer */
    int stopped_by;             /* why the last join or confirm wait gave up without a fault:
                                   signal N, -1 the job was already stopping (the coordinator
                                   refused with a STOP other than "abort"), 0 neither */
} pf_client;

/* Connect to `addr`, send HELLO (role, name, endpoint) and wait for WELCOME up to
   PF_JOIN_TIMEOUT_MS; parse its config (paths are not re-checked). Starts the heartbeat thread
   and connects the PUB socket. Every socket is a CURVE client when this process has CURVE on
   (proto/security.h). Returns 0, or -1 with err (timeout: "no answer from coordinator at
   ADDR"; refused, including a CURVE key the coordinator does not admit or a security mismatch,
   which fail at once with "could not authenticate: ..."; a signal while waiting). */
int pf_client_join(pf_client *c, void *zctx, const char *addr, int role, const char *name,
                   const char *endpoint, char *err, size_t errlen);

/* After pf_client_join, pf_client_join_wait or pf_client_confirm_* failed with err: log err
   and return the exit status for the role: 128 + N when signal N ended the wait (a stop in
   order, logged as info), 0 when the job was already stopping (info), else 1 (an error). */
int pf_client_stop_status(const pf_client *c, const char *err);

/* pf_client_join for a peer that may start before the coordinator (a loader joining from
   another host): waits up to timeout_s seconds (< 0: until it joins or a signal comes). With
   `backoff` the attempts wait PF_JOIN_RETRY_FIRST_S, doubling up to PF_JOIN_RETRY_MAX_S, and
   each doubling is logged as "cannot reach coordinator at ADDR; retrying in N s". Returns as
   pf_client_join. */
int pf_client_join_wait(pf_client *c, void *zctx, const char *addr, int role, const char *name,
                        const char *endpoint, double timeout_s, int backoff, char *err,
                        size_t errlen);

/* 1 while the coordinator has answered a heartbeat within PF_PEER_TIMEOUT_MS. */
int pf_client_coordinator_alive(pf_client *c);

/* Send a message on ctrl. Returns 0 or -1. */
int pf_client_send(pf_client *c, const pf_msg *m, const pf_frame *frames, int nframes);

/* Take one message from the coordinator off ctrl without blocking. Returns 1 with *out a
   malloc'd, decoded message (free with pf_client_msg_free), 0 when nothing is waiting, or -1
   when a malformed message was dropped (logged; call again for the next). */
int pf_client_recv(pf_client *c, pf_msg **out);
void pf_client_msg_free(pf_msg **m);

/* The coordinator's key/value store (collective bootstrap). set: returns 0 or -1. get: 1 with
   *value malloc'd and *len, 0 when the key is not set yet, -1 on failure (no answer within
   5 s). Signatures match pf_kv_set_fn / pf_kv_get_fn with the client as context. */
int pf_client_kv_set(void *client, const char *key, const void *value, size_t len);
int pf_client_kv_get(void *client, const char *key, void **value, size_t *len);

/* Publish an event: fills source and the next sequence number; the topic frame is the kind. */
int pf_client_publish(pf_client *c, pf_msg_event *ev);

/* Stop the heartbeat thread, close sockets and free the config (not the context). */
void pf_client_close(pf_client *c);

/* Bind `sock` (named `what` in messages: "ctrl", "data", ...) at `want` ("tcp://host:port",
   port may be "*") and put the endpoint peers should connect to in `out`: a wildcard address
   (0.0.0.0) is replaced by this host's name. With CURVE on in this process the socket is made a
   CURVE server first (pf_security_server); without it, a `want` that is not a loopback address
   is bound with a warning naming it and security.curve. Returns 0, or -1 with err naming the
   endpoint. */
int pf_bind_report(void *sock, const char *what, const char *want, char *out, size_t outlen,
                   char *err, size_t errlen);

/* A SUB socket connected to `events_sub`, subscribed to each kind in the NULL-terminated list
   (NULL list = everything). Returns the socket or NULL. */
void *pf_events_subscribe(void *zctx, const char *events_sub, const char *const *kinds);

/* 1 when a message received from the events proxy has the topic frame "visual" (a
   PF_MSG_VISUAL: pictures, not an event), else 0. */
int pf_events_is_visual(const pf_parts *p);

/* 1 when it has a topic "ready/<peer id>" (a hook's subscription probe, PF_MSG_READY), else 0. */
int pf_events_is_probe(const pf_parts *p);

/* For a subscriber whose first events must not be lost (hooks): publish probes on topic
   "ready/<its peer id>" on its PUB every 100 ms until one comes back on `sub` (which then
   delivers: the proxy forwards to it), calling on_other(msg, ctx) for anything else `sub`
   receives meanwhile, then send READY on ctrl so the coordinator may start. Returns 0, or -1
   with err after timeout_s or when on_other returns -1. */
int pf_client_confirm_subscription(pf_client *c, void *sub, double timeout_s,
                                   int (*on_other)(const pf_parts *msg, void *ctx), void *ctx,
                                   char *err, size_t errlen);

/* For a publisher whose first events must not be lost (a worker's first train events): the
   same probe through a SUB of its own, opened and closed here, proves its PUB is connected
   to the proxy and subscribed to. Returns 0 or -1 with err (timeout, signal). */
int pf_client_confirm_publisher(pf_client *c, double timeout_s, char *err, size_t errlen);

/* Decode a received event (topic frame + header). Returns 0, or -1 with err (errno EPROTO). */
int pf_events_decode(const pf_parts *p, pf_msg_event *ev, char *err, size_t errlen);

/* Receive one event from a SUB socket (topic frame + header); messages on topic "visual"
   (pictures, not events) are skipped. Returns 0, or -1 with err for a malformed event (dropped
   and counted by proto) or errno EAGAIN/EINTR. */
int pf_events_recv(void *sub, int flags, pf_msg_event *ev, char *err, size_t errlen);
#endif
