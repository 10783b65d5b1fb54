/*  monitor_http — `pixflow monitor --http`: libmicrohttpd in thread-per-connection mode serving
    the monitor's state, its events as Server-Sent Events from a bounded ring, and decimated
    curves (cli/monitor_http.h says who writes and who reads; docs/protocol.md, "Monitor HTTP
    API", what each endpoint returns).

    Why libmicrohttpd (Debian's libmicrohttpd-dev, 0.9.75, LGPL-2.1+, linked dynamically) rather
    than civetweb: it parses requests itself and answers malformed ones (400) and oversized
    headers (431, MHD_OPTION_CONNECTION_MEMORY_LIMIT) before any code of ours runs, it serves
    nothing from disk (civetweb is a file server first: a document root, CGI, Lua, that
    would have to be switched off), and its callback responses let an SSE stream block on a
    condition variable in its own connection thread.

    Request order: too many requests at once -> 503; a token required and missing or wrong ->
    401 (compared in constant time); not GET -> 405; unknown path -> 404.
*/
#include "cli/monitor_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cli/dashboard.h"
#include "common/decimate.h"

#define KEEPALIVE_S 10          /* an SSE comment this often when no event comes */
#define HANGUP_CHECK_MS 500     /* how often a waiting SSE stream looks for a closed socket */
#define SSE_BATCH (64 * 1024)   /* bytes of events formatted per lock */
#define MAX_WIDTH 100000        /* largest ?width= */

typedef struct {
    double *x, *y;              /* steps and values, PF_HTTP_CURVE_CAP each (lazily) */
    size_t n;                   /* points held */
    uint64_t raw;               /* points ever added */
} curve;

struct pf_monitor_http {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;       /* everything below */
    pthread_cond_t more;        /* an event came or the server stops */
    char **ring;                /* ring_events slots: event id i in ring[i % ring_events] */
    size_t ring_events;
    uint64_t first_id, last_id; /* ids held: first_id..last_id (last_id 0: none yet) */
    char *state;                /* GET /api/state's document */
    curve curves[PF_CURVE_COUNT];
    int clients, max_clients;   /* requests being served, the limit */
    int stopping;
    int has_token;
    char token[33];             /* 32 hex digits when has_token */
};

static const char *curve_names[PF_CURVE_COUNT] = { "loss", "lr", "it_per_s", "data_wait",
                                                   "psnr" };
static char counted;            /* *con_cls of a request counted in h->clients */

/* ---- writer side (the monitor's reactor thread) ------------------------------------------ */

void pf_monitor_http_set_state(pf_monitor_http *h, const char *json) {
    char *copy = strdup(json);
    if (!copy) return;
    pthread_mutex_lock(&h->lock);
    free(h->state);
    h->state = copy;
    pthread_mutex_unlock(&h->lock);
}

uint64_t pf_monitor_http_event(pf_monitor_http *h, const char *json) {
    char *copy = strdup(json);
    pthread_mutex_lock(&h->lock);
    uint64_t id = ++h->last_id;
    char **slot = &h->ring[id % h->ring_events];
    free(*slot);
    *slot = copy;               /* NULL when out of memory: readers see a gap there */
    if (id - h->first_id >= h->ring_events) h->first_id = id - h->ring_events + 1;
    pthread_cond_broadcast(&h->more);
    pthread_mutex_unlock(&h->lock);
    return copy ? id : 0;
}

void pf_monitor_http_point(pf_monitor_http *h, pf_curve c, double step, double value) {
    if ((unsigned)c >= PF_CURVE_COUNT) return;
    pthread_mutex_lock(&h->lock);
    curve *k = &h->curves[c];
    if (!k->x) {
        k->x = malloc(PF_HTTP_CURVE_CAP * sizeof *k->x);
        k->y = malloc(PF_HTTP_CURVE_CAP * sizeof *k->y);
        if (!k->x || !k->y) {
            free(k->x);
            free(k->y);
            k->x = k->y = NULL;
            pthread_mutex_unlock(&h->lock);
            return;
        }
    }
    if (k->n == PF_HTTP_CURVE_CAP) {
        /* Full: keep every bucket's min and max over a quarter of the room. */
        size_t w = PF_HTTP_CURVE_CAP / 8;
        double *nx = malloc(PF_DECIMATE_MAX_OUT(w) * sizeof *nx);
        double *ny = malloc(PF_DECIMATE_MAX_OUT(w) * sizeof *ny);
        if (nx && ny) {
            k->n = pf_decimate_minmax(k->x, k->y, k->n, w, nx, ny);
            memcpy(k->x, nx, k->n * sizeof *nx);
            memcpy(k->y, ny, k->n * sizeof *ny);
        } else {
            k->n--;     /* out of memory: the newest point gives way */
        }
        free(nx);
        free(ny);
    }
    k->x[k->n] = step;
    k->y[k->n] = value;
    k->n++;
    k->raw++;
    pthread_mutex_unlock(&h->lock);
}

/* ---- reader side (libmicrohttpd's connection threads) ------------------------------------ */

/* A growing text buffer. */
typedef struct {
    char *s;
    size_t len, cap, off;       /* off: bytes already handed to libmicrohttpd */
} text;

static int text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int text_add(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return 0;
        }
        size_t cap = (t->cap ? t->cap : 4096);
        while (cap <= t->len + (size_t)n) cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) return -1;
        t->s = s;
        t->cap = cap;
    }
}

typedef struct {
    pf_monitor_http *h;
    uint64_t next;              /* the next event id this client gets */
    int fd;                     /* the client's socket (-1: unknown), watched for a hang-up */
    uint64_t reset_from;        /* > 0: its Last-Event-ID is beyond any id given out (from an
                                   earlier monitor process): say so first, then start at 1 */
    text out;                   /* formatted, not yet sent */
} sse_stream;

/* The client closed its end (a stream waiting for events would otherwise notice only at its
   next write, holding a client slot until then). */
static int hung_up(int fd) {
    struct pollfd p = { .fd = fd, .events = POLLRDHUP };
    return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Format what the client gets next into s->out, waiting up to KEEPALIVE_S for an event:
   a gap event when the ring no longer holds s->next, else the events from s->next on (up to
   SSE_BATCH bytes), else a keepalive comment. Returns -1 when the server stops or the client
   has gone. */
static int sse_fill(sse_stream *s) {
    pf_monitor_http *h = s->h;
    s->out.len = s->out.off = 0;
    pthread_mutex_lock(&h->lock);
    int gone = 0;
    for (int waited = 0; !h->stopping && s->next > h->last_id && waited < KEEPALIVE_S * 1000;
         waited += HANGUP_CHECK_MS) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += HANGUP_CHECK_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&h->more, &h->lock, &until) == ETIMEDOUT &&
            (gone = hung_up(s->fd)))
            break;
    }
    int rc = 0;
    if (h->stopping || gone) {
        rc = -1;
    } else if (s->reset_from) {
        rc = text_add(&s->out, "event: reset\ndata: {\"last_event_id\":%" PRIu64
                      ",\"last_id\":%" PRIu64 "}\n\n", s->reset_from, h->last_id);
        s->reset_from = 0;
    } else if (s->next > h->last_id) {
        rc = text_add(&s->out, ": keepalive\n\n");
    } else if (s->next < h->first_id) {
        /* The ring dropped them: say which, with the last missing id as the SSE id, so that a
           reconnect from here does not ask for them again. */
        rc = text_add(&s->out, "id: %" PRIu64 "\nevent: gap\ndata: {\"first\":%" PRIu64
                      ",\"last\":%" PRIu64 "}\n\n", h->first_id - 1, s->next, h->first_id - 1);
        s->next = h->first_id;
    } else {
        while (rc == 0 && s->next <= h->last_id && s->out.len < SSE_BATCH) {
            const char *ev = h->ring[s->next % h->ring_events];
            if (ev)
                rc = text_add(&s->out, "id: %" PRIu64 "\ndata: %s\n\n", s->next, ev);
            else    /* lost to out of memory when it came */
                rc = text_add(&s->out, "id: %" PRIu64 "\nevent: gap\ndata: {\"first\":%" PRIu64
                              ",\"last\":%" PRIu64 "}\n\n", s->next, s->next, s->next);
            s->next++;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sse_stream *s = cls;
    if (s->out.off == s->out.len && sse_fill(s) != 0) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = s->out.len - s->out.off;
    if (n > max) n = max;
    memcpy(buf, s->out.s + s->out.off, n);
    s->out.off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls) {
    sse_stream *s = cls;
    free(s->out.s);
    free(s);
}

/* Equal strings, in time that depends on the lengths only. */
static int token_equal(const char *given, const char *want) {
    size_t a = strlen(given), b = strlen(want);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < a ? given[i] : 0);
    return diff == 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body) {
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (status == MHD_HTTP_UNAUTHORIZED) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result http_error(struct MHD_Connection *c, unsigned status, const char *msg) {
    char *body = malloc(strlen(msg) + 16);
    if (!body) return MHD_NO;
    sprintf(body, "{\"error\":\"%s\"}\n", msg);     /* msg: our own constants, no quotes */
    return reply(c, status, "application/json", body);
}

static enum MHD_Result get_state(pf_monitor_http *h, struct MHD_Connection *c) {
    pthread_mutex_lock(&h->lock);
    char *body = strdup(h->state ? h->state : "{}");
    pthread_mutex_unlock(&h->lock);
    return body ? reply(c, MHD_HTTP_OK, "application/json", body) : MHD_NO;
}

/* Append n numbers as a JSON array (null for NaN and infinities). */
static int numbers(text *t, const double *v, size_t n, int integers) {
    int rc = text_add(t, "[");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *sep = i ? "," : "";
        if (v[i] != v[i] || v[i] - v[i] != 0) rc = text_add(t, "%snull", sep);
        else if (integers) rc = text_add(t, "%s%.0f", sep, v[i]);
        else rc = text_add(t, "%s%.9g", sep, v[i]);
    }
    return rc ? rc : text_add(t, "]");
}

static enum MHD_Result get_curves(pf_monitor_http *h, struct MHD_Connection *c) {
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    const char *ws = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "width");
    int which = -1;
    for (int i = 0; i < PF_CURVE_COUNT && name; i++)
        if (!strcmp(name, curve_names[i])) which = i;
    if (which < 0)
        return http_error(c, MHD_HTTP_BAD_REQUEST,
                     "name must be one of loss, lr, it_per_s, data_wait, psnr");
    long width = 1000;
    if (ws) {
        char *end;
        errno = 0;
        width = strtol(ws, &end, 10);
        if (errno || end == ws || *end || width < 1 || width > MAX_WIDTH)
            return http_error(c, MHD_HTTP_BAD_REQUEST, "width must be an integer in 1..100000");
    }
    size_t cap = PF_DECIMATE_MAX_OUT(width);
    double *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
    text t = { 0 };
    int rc = x && y ? 0 : -1;
    if (rc == 0) {
        pthread_mutex_lock(&h->lock);
        const curve *k = &h->curves[which];
        size_t n = k->x ? pf_decimate_minmax(k->x, k->y, k->n, (size_t)width, x, y) : 0;
        size_t held = k->n;
        uint64_t raw = k->raw;
        pthread_mutex_unlock(&h->lock);
        rc = text_add(&t, "{\"name\":\"%s\",\"width\":%ld,\"held\":%zu,\"added\":%" PRIu64
                      ",\"points\":%zu,\"x\":", curve_names[which], width, held, raw, n);
        if (rc == 0) rc = numbers(&t, x, n, 1);
        if (rc == 0) rc = text_add(&t, ",\"y\":");
        if (rc == 0) rc = numbers(&t, y, n, 0);
        if (rc == 0) rc = text_add(&t, "}\n");
    }
    free(x);
    free(y);
    if (rc) {
        free(t.s);
        return MHD_NO;
    }
    return reply(c, MHD_HTTP_OK, "application/json", t.s);
}

/* The dashboard (cli/dashboard.h): GET / the page with the snapshot rendered in, GET
   /api/snapshot that HTML alone; both from the state /api/state serves. */
static enum MHD_Result get_page(pf_monitor_http *h, struct MHD_Connection *c, int whole) {
    pthread_mutex_lock(&h->lock);
    char *state = strdup(h->state ? h->state : "");
    pthread_mutex_unlock(&h->lock);
    if (!state) return MHD_NO;
    char *body = whole ? pf_dashboard_page(state, h->has_token ? h->token : NULL)
                       : pf_dashboard_snapshot_html(state);
    free(state);
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* only this server's scripts (uPlot sets element styles, which CSP allows) */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data: blob:; "
                            "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /static/NAME: an embedded file of web/, from the binary's own memory. */
static enum MHD_Result get_static(struct MHD_Connection *c, const char *name) {
    const pf_web_asset *a = pf_web_asset_find(name);
    const char *type = pf_web_content_type(name);
    if (!a || !type) return http_error(c, MHD_HTTP_NOT_FOUND, "no such file");
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result get_events(pf_monitor_http *h, struct MHD_Connection *c) {
    const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    uint64_t after = 0;
    if (last) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(last, &end, 10);
        if (errno || end == last || *end || last[0] == '-')
            return http_error(c, MHD_HTTP_BAD_REQUEST, "Last-Event-ID must be an event id");
        after = v;
    }
    sse_stream *s = calloc(1, sizeof *s);
    if (!s) return MHD_NO;
    s->h = h;
    s->next = after + 1;
    pthread_mutex_lock(&h->lock);
    if (after > h->last_id) {
        s->reset_from = after;
        s->next = 1;
    }
    pthread_mutex_unlock(&h->lock);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->fd = ci ? ci->connect_fd : -1;
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
                                                               sse_read, s, sse_free);
    if (!r) {
        sse_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    (void)upload_data;
    pf_monitor_http *h = cls;
    if (*con_cls) {             /* a body we do not want: the answer is already queued */
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&h->lock);
    int busy = h->clients >= h->max_clients;
    if (!busy) h->clients++;
    pthread_mutex_unlock(&h->lock);
    if (busy) {
        *con_cls = (void *)1;
        return http_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many clients");
    }
    *con_cls = &counted;
    if (h->has_token) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
        int ok = 0;
        if (auth && !strncmp(auth, "Bearer ", 7)) ok |= token_equal(auth + 7, h->token);
        if (q) ok |= token_equal(q, h->token);
        if (!ok) return http_error(c, MHD_HTTP_UNAUTHORIZED, "token missing or wrong");
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return http_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
    if (!strcmp(url, "/api/state")) return get_state(h, c);
    if (!strcmp(url, "/api/events")) return get_events(h, c);
    if (!strcmp(url, "/api/curves")) return get_curves(h, c);
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return get_page(h, c, 1);
    if (!strcmp(url, "/api/snapshot")) return get_page(h, c, 0);
    if (!strncmp(url, "/static/", 8)) return get_static(c, url + 8);
    return http_error(c, MHD_HTTP_NOT_FOUND, "no such path: /api/state, /api/events, /api/curves");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)c;
    (void)why;
    pf_monitor_http *h = cls;
    if (*con_cls == &counted) {
        pthread_mutex_lock(&h->lock);
        h->clients--;
        pthread_mutex_unlock(&h->lock);
    }
    *con_cls = NULL;
}

/* ---- start, stop ------------------------------------------------------------------------- */

const char *pf_monitor_http_token(const pf_monitor_http *h) {
    return h->has_token ? h->token : NULL;
}

/* "HOST:PORT" into sa. Returns 0, or -1 with a message. */
static int parse_bind(const char *bind, struct sockaddr_in *sa, char *err, size_t errlen) {
    const char *colon = strrchr(bind, ':');
    char host[64];
    if (!colon || colon == bind || (size_t)(colon - bind) >= sizeof host) {
        snprintf(err, errlen, "--http '%s': want HOST:PORT (e.g. 127.0.0.1:8080)", bind);
        return -1;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - bind), bind);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || port < 1 || port > 65535) {
        snprintf(err, errlen, "--http '%s': the port must be 1..65535", bind);
        return -1;
    }
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
        snprintf(err, errlen, "--http '%s': HOST must be an IPv4 address or localhost", bind);
        return -1;
    }
    return 0;
}

pf_monitor_http *pf_monitor_http_start(const char *bind, size_t ring_events, int max_clients,
                                       char *err, size_t errlen) {
    struct sockaddr_in sa;
    if (parse_bind(bind, &sa, err, errlen) != 0) return NULL;
    pf_monitor_http *h = calloc(1, sizeof *h);
    if (h) h->ring = calloc(ring_events < 2 ? 2 : ring_events, sizeof *h->ring);
    if (!h || !h->ring) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->ring_events = ring_events < 2 ? 2 : ring_events;
    h->max_clients = max_clients < 1 ? 1 : max_clients;
    h->first_id = 1;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->more, NULL);
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
        unsigned char r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            snprintf(err, errlen, "cannot draw a token: %s", strerror(errno));
            pf_monitor_http_stop(&h);
            return NULL;
        }
        for (int i = 0; i < 16; i++) sprintf(h->token + 2 * i, "%02x", r[i]);
        h->has_token = 1;
    }
    /* The server's threads inherit this mask: SIGINT/SIGTERM/SIGHUP stay the reactor's. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    h->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD, 0, NULL, NULL,
        on_request, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        /* the 503 is ours; past this many sockets the kernel's backlog waits */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(h->max_clients + 16),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(3 * KEEPALIVE_S),
        /* request line and headers beyond 32 KiB: 431, before on_request */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_END);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!h->daemon) {
        snprintf(err, errlen, "--http %s: cannot listen there (%s)", bind,
                 e ? strerror(e) : "libmicrohttpd refused");
        pf_monitor_http_stop(&h);
        return NULL;
    }
    return h;
}

void pf_monitor_http_stop(pf_monitor_http **h_p) {
    pf_monitor_http *h = *h_p;
    if (!h) return;
    if (h->daemon) {
        pthread_mutex_lock(&h->lock);
        h->stopping = 1;
        pthread_cond_broadcast(&h->more);
        pthread_mutex_unlock(&h->lock);
        MHD_stop_daemon(h->daemon);
    }
    for (size_t i = 0; i < h->ring_events; i++) free(h->ring[i]);
    free(h->ring);
    for (int i = 0; i < PF_CURVE_COUNT; i++) {
        free(h->curves[i].x);
        free(h->curves[i].y);
    }
    free(h->state);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->more);
    free(h);
    *h_p = NULL;
}
