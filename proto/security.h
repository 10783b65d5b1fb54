/*  security — ZeroMQ CURVE on every PixFlow socket that can cross hosts (security.curve;
    docs/architecture.md, "Security").

    A job's key folder (made by `pixflow keygen DIR`, czmq certificate files):

      DIR/server, DIR/server_secret   the job's server key pair: every binding process
                                      (coordinator, workers, checkpoint hook) serves with it
      DIR/client, DIR/client_secret   a peer's own key pair (one per host or per peer)
      DIR/allowed/                    public certificates of the peers that are admitted

    Binding processes run czmq's zauth, which answers the ZAP requests of their sockets:
    a peer whose public key is not in DIR/allowed/ is refused, and a monitor on each bound
    socket logs "refused a connection from ADDR on WHAT: REASON". Connecting processes need
    DIR/server (public part) and their own DIR/client_secret.

    CURVE is a per-process switch: a process turns it on with pf_security_init before it
    makes its ZeroMQ context (pf_zmq_ctx_new), and then pf_bind_report and the client's
    sockets (runtime/client.c) apply it. zauth serves only sockets of czmq's own context,
    so a process with CURVE on uses that context (zsys_init).
*/
#ifndef PF_SECURITY_H
#define PF_SECURITY_H
#include <stddef.h>

#define PF_KEYS_ENV "PIXFLOW_KEYS"   /* key folder when --keys is not given */

enum {
    PF_SEC_CLIENT = 1,   /* connects: loads DIR/client_secret and DIR/server */
    PF_SEC_SERVER = 2,   /* binds: loads DIR/server_secret, admits DIR/allowed/ (zauth) */
};

/* The key folder a process uses: `arg` (its --keys) when given, else $PIXFLOW_KEYS when set
   and not empty, else `cfg_dir` (security.keys_dir; NULL or "" for none). Returns NULL when
   there is none. */
const char *pf_security_keys_dir(const char *arg, const char *cfg_dir);

/* Turn CURVE on for this process with the keys in `dir`; `roles` is PF_SEC_CLIENT and/or
   PF_SEC_SERVER. Loads the certificates (and with PF_SEC_SERVER starts zauth, admitting the
   public certificates in DIR/allowed/). Call once, before pf_zmq_ctx_new. Returns 0, or -1
   with err naming the file or folder that is missing or unreadable. */
int pf_security_init(const char *dir, int roles, char *err, size_t errlen);

/* For a process that reads the job's config itself (coordinator, `pixflow train`): CURVE on
   when cfg->curve, with the folder pf_security_keys_dir(keys_arg, cfg->keys_dir). Returns 0
   (also when CURVE is off), or -1 with err (no key folder, or pf_security_init's error). */
int pf_security_init_job(int curve, const char *cfg_keys_dir, const char *keys_arg, int roles,
                         char *err, size_t errlen);

/* For a peer, which learns the config only after joining: CURVE on when `keys_arg` (--keys)
   or $PIXFLOW_KEYS names a folder. Returns 0 or -1 with err. */
int pf_security_init_peer(const char *keys_arg, int roles, char *err, size_t errlen);

/* 1 when pf_security_init succeeded in this process. */
int pf_security_on(void);

/* The key folder given to pf_security_init ("" when CURVE is off). */
const char *pf_security_dir(void);

/* This process's ZeroMQ context: czmq's (zsys_init) when CURVE is on, else zmq_ctx_new().
   Signal handlers installed before are kept (czmq would install its own). NULL on failure. */
void *pf_zmq_ctx_new(void);

/* Close what pf_zmq_ctx_new made, after every socket on it is closed: stops zauth and the
   refusal monitors, then terminates the context. */
void pf_zmq_ctx_term(void *ctx);

/* Make `sock` a CURVE client of the job's server key; call before zmq_connect. Nothing when
   CURVE is off. Returns 0 or -1 (errno from zmq_setsockopt). */
int pf_security_client(void *sock);

/* Make `sock` a CURVE server; call before zmq_bind. Refused connections are logged as
   warnings naming the peer's address and `what` ("ctrl", "data", ...). Nothing when CURVE is
   off. Returns 0, or -1 with err. */
int pf_security_server(void *sock, const char *what, char *err, size_t errlen);

/* Watching a connecting socket's handshakes, so a refused peer fails at once with a message
   instead of waiting for an answer that never comes (a CURVE refusal is silent otherwise).
   pf_security_watch returns a socket to poll (ZMQ_POLLIN), or NULL. */
void *pf_security_watch(void *ctx, void *sock);

/* Read the events waiting on `watch` (non-blocking). Returns 1 with err saying why the peer
   at `addr` will not talk to us (key refused, security mechanism mismatch, repeated
   handshake failure), else 0. `failures` counts handshakes that failed without a reason
   (keep it between calls, start at 0). */
int pf_security_watch_check(void *watch, const char *addr, int *failures, char *err,
                            size_t errlen);

/* Stop watching `sock` and close `watch`. */
void pf_security_unwatch(void *sock, void *watch);

/* `pixflow keygen DIR [--name NAME] [--allow]`: see cli/main.c usage. Returns the exit
   status (0, 1 for an error, 2 for bad usage). */
int pf_keygen_main(int argc, char **argv);

/* 1 when the host of the tcp endpoint `ep` is a loopback address (127.x.x.x, ::1,
   localhost); non-tcp transports (ipc, inproc) count as local too. */
int pf_endpoint_is_local(const char *ep);
#endif
