/*  security — see security.h.

    How a refusal reaches the log: libzmq's socket monitor reports, per bound socket,
    ACCEPTED (with the connection's fd, whose peer address we read at once), then for a
    refused peer HANDSHAKE_FAILED_AUTH (zauth answered 400: key not allowed) or
    HANDSHAKE_FAILED_PROTOCOL (no CURVE, or a box that does not open with our key), then
    DISCONNECTED with the same fd. One thread per bound socket reads those events and writes
    one warning per refused connection. The monitor carries no peer address of its own, hence
    the getpeername on ACCEPTED; handshake results carry no fd, so each goes to the oldest
    connection still in its handshake (watcher_main).
*/
#include "proto/security.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define MAX_WATCHED 8      /* bound sockets one process secures (coordinator: 3) */
#define MAX_CONNS 256      /* connections whose address a watcher remembers at once */

typedef struct {
    void *pair;                 /* PAIR connected to the socket's monitor (watcher thread) */
    char what[32];              /* "ctrl", "data", ... for the log line */
    pthread_t thread;
} watcher;

static struct {
    int on;                     /* pf_security_init succeeded */
    int roles;                  /* PF_SEC_CLIENT | PF_SEC_SERVER */
    char dir[4096];             /* the key folder */
    uint8_t server_public[32], server_secret[32];  /* job's server key pair */
    uint8_t client_public[32], client_secret[32];  /* this peer's key pair */
    zactor_t *auth;             /* zauth, with PF_SEC_SERVER */
    void *ctx;                  /* czmq's context (zsys_init) */
    watcher watchers[MAX_WATCHED];
    int n_watchers;
    atomic_int stop;            /* tells the watcher threads to end */
    pthread_t zap_log_thread;   /* reads zauth's verbose log (zap_log_main) */
    int zap_log_running;
} sec;

#define ZAP_LOG_ENDPOINT "inproc://pf-zauth-log"

/* zauth decides every CURVE handshake on this process's bound sockets, one ZAP request at a
   time; with VERBOSE it logs (through czmq's log, sent here by zsys_set_logsender) each
   request's peer IP address, then its reply. A reply other than 200 is a refused key: logged
   with that address. This is exact per connection, unlike the socket monitors (whose
   handshake events carry no peer). */
static void *zap_log_main(void *arg) {
    (void)arg;
    void *sub = zmq_socket(sec.ctx, ZMQ_SUB);
    int timeout = 100;
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_connect(sub, ZAP_LOG_ENDPOINT);
    char addr[64] = "an unknown address", line[512];
    while (!atomic_load(&sec.stop)) {
        int n = zmq_recv(sub, line, sizeof line - 1, 0);
        if (n < 0) continue;
        line[n < (int)sizeof line - 1 ? n : (int)sizeof line - 1] = 0;
        const char *ip = strstr(line, "ipaddress="), *code = strstr(line, "status_code=");
        if (ip) {
            snprintf(addr, sizeof addr, "%.*s", (int)strcspn(ip + 10, " \r\n"), ip + 10);
        } else if (code && strncmp(code + 12, "200", 3) != 0) {
            const char *text = strstr(line, "status_text=");
            pf_warn("refused a connection from %s: public key not in the allowed folder "
                    "(zauth: %s; keys: %s/allowed)", addr, text ? text + 12 : code + 12,
                    sec.dir);
        }
    }
    zmq_close(sub);
    return NULL;
}

const char *pf_security_keys_dir(const char *arg, const char *cfg_dir) {
    if (arg && arg[0]) return arg;
    const char *env = getenv(PF_KEYS_ENV);
    if (env && env[0]) return env;
    if (cfg_dir && cfg_dir[0]) return cfg_dir;
    return NULL;
}

int pf_security_on(void) {
    return sec.on;
}

const char *pf_security_dir(void) {
    return sec.on ? sec.dir : "";
}

/* Load the certificate at `path` (public part) and, with `secret`, `path`_secret. Copies the
   keys out. Returns 0, or -1 with err naming the file. */
static int load_cert(const char *path, int secret, uint8_t pub[32], uint8_t sec_key[32],
                     char *err, size_t errlen) {
    char file[4200];
    snprintf(file, sizeof file, secret ? "%s_secret" : "%s", path);
    if (access(file, R_OK) != 0) {
        snprintf(err, errlen, "CURVE key '%s': %s (make the key folder with `pixflow keygen "
                 "DIR`)", file, strerror(errno));
        return -1;
    }
    zcert_t *cert = zcert_load(path);
    static const uint8_t zero[32];
    if (!cert || (secret && !memcmp(zcert_secret_key(cert), zero, 32))) {
        snprintf(err, errlen, "CURVE key '%s': not a readable czmq certificate", file);
        zcert_destroy(&cert);
        return -1;
    }
    memcpy(pub, zcert_public_key(cert), 32);
    if (secret) memcpy(sec_key, zcert_secret_key(cert), 32);
    zcert_destroy(&cert);
    return 0;
}

int pf_security_init(const char *dir, int roles, char *err, size_t errlen) {
    if (sec.on) {
        snprintf(err, errlen, "CURVE is already on (keys from '%s')", sec.dir);
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "CURVE key folder '%s': %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "CURVE key folder '%s': not a directory", dir);
        return -1;
    }
    snprintf(sec.dir, sizeof sec.dir, "%s", dir);
    char path[4200], allowed[4200];
    snprintf(path, sizeof path, "%s/server", dir);
    if (load_cert(path, (roles & PF_SEC_SERVER) != 0, sec.server_public, sec.server_secret,
                  err, errlen) != 0)
        return -1;
    if (roles & PF_SEC_CLIENT) {
        snprintf(path, sizeof path, "%s/client", dir);
        if (load_cert(path, 1, sec.client_public, sec.client_secret, err, errlen) != 0)
            return -1;
    }
    snprintf(allowed, sizeof allowed, "%s/allowed", dir);
    if ((roles & PF_SEC_SERVER) &&
        (stat(allowed, &st) != 0 || !S_ISDIR(st.st_mode) || access(allowed, R_OK | X_OK))) {
        snprintf(err, errlen, "CURVE allowed folder '%s': %s (it holds the public keys of the "
                 "peers this process admits)", allowed,
                 access(allowed, F_OK) ? strerror(errno) : "not a readable directory");
        return -1;
    }
    /* czmq catches SIGINT/SIGTERM in zsys_init unless told not to; PixFlow's roles have
       their own handlers (pf_catch_signals), so keep whatever is installed. */
    struct sigaction saved[3];
    const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
    for (int i = 0; i < 3; i++) sigaction(sigs[i], NULL, &saved[i]);
    setenv("ZSYS_SIGHANDLER", "false", 1);
    zsys_handler_set(NULL);
    sec.ctx = zsys_init();
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &saved[i], NULL);
    if (!sec.ctx) {
        snprintf(err, errlen, "cannot make the ZeroMQ context for CURVE (zsys_init)");
        return -1;
    }
    if (roles & PF_SEC_SERVER) {
        /* zauth's verbose lines go to zap_log_main only (not stderr, not syslog). */
        zsys_set_logstream(NULL);
        zsys_set_logsystem(false);
        zsys_set_logsender(ZAP_LOG_ENDPOINT);
        atomic_store(&sec.stop, 0);
        sec.zap_log_running = pthread_create(&sec.zap_log_thread, NULL, zap_log_main, NULL) == 0;
        sec.auth = zactor_new(zauth, NULL);
        if (!sec.auth || zstr_sendx(sec.auth, "VERBOSE", NULL) != 0 ||
            zsock_wait(sec.auth) != 0 || zstr_sendx(sec.auth, "CURVE", allowed, NULL) != 0 ||
            zsock_wait(sec.auth) != 0) {
            snprintf(err, errlen, "cannot start the CURVE authenticator (zauth) on '%s'",
                     allowed);
            zactor_destroy(&sec.auth);
            return -1;
        }
    }
    sec.roles = roles;
    sec.on = 1;
    return 0;
}

int pf_security_init_job(int curve, const char *cfg_keys_dir, const char *keys_arg, int roles,
                         char *err, size_t errlen) {
    const char *dir = pf_security_keys_dir(keys_arg, cfg_keys_dir);
    if (!curve) {
        if (keys_arg) pf_warn("--keys %s: ignored, security.curve is false", keys_arg);
        return 0;
    }
    if (!dir) {
        snprintf(err, errlen, "security.curve is true but there is no key folder: set "
                 "security.keys_dir, pass --keys DIR or set %s (make one with `pixflow keygen "
                 "DIR`)", PF_KEYS_ENV);
        return -1;
    }
    return pf_security_init(dir, roles, err, errlen);
}

int pf_security_init_peer(const char *keys_arg, int roles, char *err, size_t errlen) {
    const char *dir = pf_security_keys_dir(keys_arg, NULL);
    return dir ? pf_security_init(dir, roles, err, errlen) : 0;
}

void *pf_zmq_ctx_new(void) {
    return sec.on ? sec.ctx : zmq_ctx_new();
}

void pf_zmq_ctx_term(void *ctx) {
    if (!sec.on || ctx != sec.ctx) {
        zmq_ctx_term(ctx);
        return;
    }
    atomic_store(&sec.stop, 1);
    for (int i = 0; i < sec.n_watchers; i++) pthread_join(sec.watchers[i].thread, NULL);
    sec.n_watchers = 0;
    if (sec.zap_log_running) pthread_join(sec.zap_log_thread, NULL);
    sec.zap_log_running = 0;
    zactor_destroy(&sec.auth);
    zsys_shutdown();
    sec.ctx = NULL;
    sec.on = 0;
}

int pf_security_client(void *sock) {
    if (!sec.on) return 0;
    if (!(sec.roles & PF_SEC_CLIENT)) {
        errno = EINVAL;
        return -1;
    }
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, sec.server_public, 32) ||
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, sec.client_public, 32) ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec.client_secret, 32))
        return -1;
    return 0;
}

/* One monitor event: [uint16 event, uint32 value][endpoint]. Returns 0 or -1. */
static int read_event(void *pair, int flags, int *event, uint32_t *value) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, pair, flags) < 0) {
        zmq_msg_close(&m);
        return -1;
    }
    int ok = zmq_msg_size(&m) >= 6 && zmq_msg_more(&m);
    if (ok) {
        const uint8_t *d = zmq_msg_data(&m);
        uint16_t e;
        memcpy(&e, d, 2);
        memcpy(value, d + 2, 4);
        *event = e;
    }
    zmq_msg_close(&m);
    zmq_msg_init(&m);                 /* the endpoint frame: not needed */
    zmq_msg_recv(&m, pair, 0);
    zmq_msg_close(&m);
    return ok ? 0 : -1;
}

/* Why a handshake failed, from a HANDSHAKE_FAILED_* event, for the log and the peer. */
static const char *failure_reason(int event, uint32_t value) {
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return "public key not in the allowed folder";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        return "it does not use CURVE (no keys)";
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC)
        return "its CURVE handshake does not open with this job's server key";
    /* Either side may see a mismatch first; the other then sees only a broken handshake. */
    return "CURVE handshake broken off (a peer without keys, or with another job's server key)";
}

static void peer_address(int fd, char *out, size_t outlen) {
    struct sockaddr_storage a;
    socklen_t n = sizeof a;
    char ip[INET6_ADDRSTRLEN] = "";
    snprintf(out, outlen, "an unknown address");
    if (getpeername(fd, (struct sockaddr *)&a, &n) != 0) return;
    if (a.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&a;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        snprintf(out, outlen, "%s:%u", ip, ntohs(in->sin_port));
    } else if (a.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        snprintf(out, outlen, "[%s]:%u", ip, ntohs(in6->sin6_port));
    }
}

/* Handshake events carry no fd: a result goes to the oldest accepted connection whose
   handshake has no result yet (exact while handshakes end in the order they began, which is
   the case for connections that come one after another), and is logged at that connection's
   DISCONNECTED. */
static void *watcher_main(void *arg) {
    watcher *w = arg;
    struct {
        int fd;
        char addr[64];
        int resolved;                 /* its handshake ended (ok or not) */
        const char *reason;           /* why it failed, or NULL */
    } conns[MAX_CONNS];
    int n_conns = 0;
    while (!atomic_load(&sec.stop)) {
        zmq_pollitem_t it = { w->pair, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) <= 0) continue;
        int event;
        uint32_t value;
        if (read_event(w->pair, ZMQ_DONTWAIT, &event, &value) != 0) continue;
        if (event == ZMQ_EVENT_MONITOR_STOPPED) break;
        if (event == ZMQ_EVENT_ACCEPTED) {
            int slot = -1;
            for (int i = 0; i < n_conns; i++)
                if (conns[i].fd == (int)value) slot = i;
            if (slot < 0 && n_conns == MAX_CONNS) {  /* full: forget the oldest */
                memmove(conns, conns + 1, sizeof conns[0] * (MAX_CONNS - 1));
                n_conns--;
            }
            if (slot < 0) slot = n_conns++;
            conns[slot].fd = (int)value;
            conns[slot].resolved = 0;
            conns[slot].reason = NULL;
            peer_address((int)value, conns[slot].addr, sizeof conns[slot].addr);
        } else if (event & (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                            ZMQ_EVENT_HANDSHAKE_SUCCEEDED)) {
            int i = 0;
            while (i < n_conns && conns[i].resolved) i++;
            /* A refused key (zauth's 400) is logged by zap_log_main, with its address. */
            const char *reason = event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED ||
                                         event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                                     ? NULL : failure_reason(event, value);
            if (i < n_conns) {
                conns[i].resolved = 1;
                conns[i].reason = reason;
            } else if (reason) {
                pf_warn("refused a connection from an unknown address on %s: %s (keys: "
                        "%s/allowed)", w->what, reason, sec.dir);
            }
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            for (int i = 0; i < n_conns; i++) {
                if (conns[i].fd != (int)value) continue;
                if (conns[i].reason)
                    pf_warn("refused a connection from %s on %s: %s (keys: %s/allowed)",
                            conns[i].addr, w->what, conns[i].reason, sec.dir);
                memmove(conns + i, conns + i + 1, sizeof conns[0] * (size_t)(n_conns - i - 1));
                n_conns--;
                break;
            }
        }
    }
    zmq_close(w->pair);
    return NULL;
}

int pf_security_server(void *sock, const char *what, char *err, size_t errlen) {
    if (!sec.on) return 0;
    if (!(sec.roles & PF_SEC_SERVER)) {
        snprintf(err, errlen, "%s: this process has no server key to bind with CURVE", what);
        return -1;
    }
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec.server_secret, 32) ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "pixflow", 7)) {
        snprintf(err, errlen, "%s: cannot turn CURVE on: %s", what, zmq_strerror(errno));
        return -1;
    }
    if (sec.n_watchers == MAX_WATCHED) return 0;   /* secured, just not watched */
    watcher *w = &sec.watchers[sec.n_watchers];
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://pf-security-%d", sec.n_watchers);
    snprintf(w->what, sizeof w->what, "%s", what);
    int events = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (zmq_socket_monitor(sock, ep, events) != 0) {
        snprintf(err, errlen, "%s: cannot monitor the socket: %s", what, zmq_strerror(errno));
        return -1;
    }
    /* Connected before the bind, so no event of this socket is lost. */
    w->pair = zmq_socket(sec.ctx, ZMQ_PAIR);
    if (!w->pair || zmq_connect(w->pair, ep) != 0 ||
        pthread_create(&w->thread, NULL, watcher_main, w) != 0) {
        snprintf(err, errlen, "%s: cannot start the CURVE monitor", what);
        if (w->pair) zmq_close(w->pair);
        return -1;
    }
    sec.n_watchers++;
    return 0;
}

void *pf_security_watch(void *ctx, void *sock) {
    static atomic_int seq;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://pf-watch-%d-%d", (int)getpid(), atomic_fetch_add(&seq, 1));
    if (zmq_socket_monitor(sock, ep, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                         ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
        return NULL;
    void *pair = zmq_socket(ctx, ZMQ_PAIR);
    if (pair && zmq_connect(pair, ep) == 0) return pair;
    if (pair) zmq_close(pair);
    zmq_socket_monitor(sock, NULL, 0);
    return NULL;
}

int pf_security_watch_check(void *watch, const char *addr, int *failures, char *err,
                            size_t errlen) {
    int event;
    uint32_t value;
    while (watch && read_event(watch, ZMQ_DONTWAIT, &event, &value) == 0) {
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
            snprintf(err, errlen, "could not authenticate: %s refused this process's CURVE "
                     "key (%s/client): its public key is not in the allowed folder there",
                     addr, sec.dir);
            return 1;
        }
        int mismatch = event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
                       value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH;
        /* Which side notices a mismatch first is a race: the other sees the connection
           dropped mid-handshake. So a few dropped handshakes count as a mismatch too. */
        if (mismatch || (!sec.on && ++*failures >= 3)) {
            if (sec.on)
                snprintf(err, errlen, "could not authenticate: this process uses CURVE (keys "
                         "in %s) but %s does not (security.curve is false there)", sec.dir,
                         addr);
            else if (mismatch)
                snprintf(err, errlen, "refused by %s: the job runs with security.curve and "
                         "this process has no keys (pass --keys DIR or set %s)", addr,
                         PF_KEYS_ENV);
            else
                snprintf(err, errlen, "%d handshakes with %s failed (%s): either it is not a "
                         "PixFlow ctrl endpoint, or the job runs with security.curve and this "
                         "process has no keys (pass --keys DIR or set %s)", *failures, addr,
                         failure_reason(event, value), PF_KEYS_ENV);
            return 1;
        }
        /* A wrong server key shows here only as a dropped handshake; a coordinator that is
           restarting can cause one too, so give up after a few. */
        if (sec.on && ++*failures >= 3) {
            snprintf(err, errlen, "could not authenticate: %d handshakes with %s failed (%s)%s",
                     *failures, addr, failure_reason(event, value),
                     sec.on ? "; does the key folder's 'server' hold this job's server "
                              "public key?" : "");
            return 1;
        }
    }
    return 0;
}

void pf_security_unwatch(void *sock, void *watch) {
    if (!watch) return;
    zmq_socket_monitor(sock, NULL, 0);
    zmq_close(watch);
}

int pf_endpoint_is_local(const char *ep) {
    if (strncmp(ep, "tcp://", 6) != 0) return 1;
    const char *h = ep + 6;
    if (strncmp(h, "127.", 4) == 0 || strncmp(h, "localhost:", 10) == 0 ||
        strncmp(h, "[::1]:", 6) == 0)
        return 1;
    return 0;
}

/* --- pixflow keygen --------------------------------------------------------------------- */

/* Write a new key pair as DIR/NAME (public) and DIR/NAME_secret (mode 0600); with `allow`
   also DIR/allowed/NAME. Refuses to overwrite. Returns 0, or -1 with err. */
static int write_pair(const char *dir, const char *name, int allow, char *err, size_t errlen) {
    char pub[4200], secret[4300], allowed[4300];
    snprintf(pub, sizeof pub, "%s/%s", dir, name);
    snprintf(secret, sizeof secret, "%s_secret", pub);
    snprintf(allowed, sizeof allowed, "%s/allowed/%s", dir, name);
    const char *exists = !access(pub, F_OK) ? pub : !access(secret, F_OK) ? secret
                       : allow && !access(allowed, F_OK) ? allowed : NULL;
    if (exists) {
        snprintf(err, errlen, "'%s' exists; not overwriting a key", exists);
        return -1;
    }
    zcert_t *cert = zcert_new();
    if (!cert) {
        snprintf(err, errlen, "cannot make a key pair (libsodium?)");
        return -1;
    }
    zcert_set_meta(cert, "name", "%s", name);
    int rc = zcert_save(cert, pub);
    if (rc == 0) rc = chmod(secret, 0600);
    if (rc == 0) rc = chmod(pub, 0644);
    if (rc == 0 && allow) rc = zcert_save_public(cert, allowed);
    zcert_destroy(&cert);
    if (rc != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", rc && access(pub, F_OK) ? pub : allowed,
                 strerror(errno));
        return -1;
    }
    printf("pixflow keygen: wrote %s and %s%s%s\n", pub, secret, allow ? ", admitted in " : "",
           allow ? allowed : "");
    return 0;
}

static int valid_key_name(const char *n) {
    size_t len = strlen(n);
    if (!len || len > 64 || n[0] == '.' || (len > 7 && !strcmp(n + len - 7, "_secret")))
        return 0;
    for (; *n; n++)
        if (!(('a' <= *n && *n <= 'z') || ('A' <= *n && *n <= 'Z') || ('0' <= *n && *n <= '9') ||
              *n == '_' || *n == '-' || *n == '.'))
            return 0;
    return 1;
}

int pf_keygen_main(int argc, char **argv) {
    const char *dir = NULL, *name = NULL;
    int allow = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--allow")) allow = 1;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else dir = NULL, i = argc;
    }
    if (!dir || (name && !valid_key_name(name))) {
        fprintf(stderr, "usage: pixflow keygen DIR [--name NAME [--allow]]\n"
                        "  without --name: a job's key folder (server and client pairs, the client "
                        "admitted in DIR/allowed/)\n"
                        "  --name NAME: one more pair DIR/NAME, DIR/NAME_secret (NAME: letters, "
                        "digits, . _ -); --allow: admit it\n");
        return 2;
    }
    char err[4400], allowed[4200];
    snprintf(allowed, sizeof allowed, "%s/allowed", dir);
    if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
        ((!name || allow) && mkdir(allowed, 0755) != 0 && errno != EEXIST)) {
        fprintf(stderr, "pixflow keygen: cannot make '%s': %s\n",
                access(dir, F_OK) ? dir : allowed, strerror(errno));
        return 1;
    }
    int rc = name ? write_pair(dir, name, allow, err, sizeof err)
                  : (write_pair(dir, "server", 0, err, sizeof err) ||
                     write_pair(dir, "client", 1, err, sizeof err));
    if (rc) {
        fprintf(stderr, "pixflow keygen: %s\n", err);
        return 1;
    }
    return 0;
}
