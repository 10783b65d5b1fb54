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
    401 (compared in constant time); not GET -> 405; ?run= naming no run -> 404; unknown path
    -> 404. Files (/api/image, /files/): the name is checked by common/http_path.h before
    anything is opened, and the file is streamed from its descriptor
    (MHD_create_response_from_fd64), never read whole.
*/
#include "cli/monitor_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/dashboard.h"
#include "common/decimate.h"
#include "common/http_path.h"

#define KEEPALIVE_S 10          /* an SSE comment this often when no event comes */
#define HANGUP_CHECK_MS 500     /* how often a waiting SSE stream looks for a closed socket */
#define SSE_BATCH (64 * 1024)   /* bytes of events formatted per lock */
#define MAX_WIDTH 100000        /* largest ?width= */

typedef struct {
    double *x, *y;              /* steps and values, PF_HTTP_CURVE_CAP each (lazily) */
    size_t n;                   /* points held */
    uint64_t raw;               /* points ever added */
} curve;

/* One run served: the live job (run 0 of a --connect monitor) or a finished one. */
typedef struct {
    char name[256];             /* ?run=NAME selects it (the work_dir's last component) */
    char work_dir[PATH_MAX];    /* /files/ and the eval images are under it; "" = not known */
    char visual_dir[PATH_MAX];  /* the visual hook's iter_N.png; "" = not known */
    char *state;                /* GET /api/state's document */
    curve curves[PF_CURVE_COUNT];
} run;

struct pf_monitor_http {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;       /* everything below */
    pthread_cond_t more;        /* an event came or the server stops */
    char **ring;                /* ring_events slots: event id i in ring[i % ring_events] */
    size_t ring_events;
    uint64_t first_id, last_id; /* ids held: first_id..last_id (last_id 0: none yet) */
    run runs[PF_HTTP_MAX_RUNS];
    int n_runs;                 /* runs[0..n_runs-1] are served (>= 1) */
    int clients, max_clients;   /* requests being served, the limit */
    int stopping;
    int held;                   /* pf_monitor_http_hold: 503 "loading" for now */
    int has_token;
    char token[33];             /* 32 hex digits when has_token */
};

static const char *curve_names[PF_CURVE_COUNT] = { "loss", "lr", "it_per_s", "data_wait",
                                                   "psnr", "l_g_pix", "l_g_percep",
                                                   "l_g_style", "l_g_gan", "l_d_real",
                                                   "l_d_fake", "out_d_real", "out_d_fake" };
static char counted;            /* *con_cls of a request counted in h->clients */

/* ---- writer side (the monitor's reactor thread) ------------------------------------------ */

int pf_monitor_http_set_run(pf_monitor_http *h, int i, const char *name, const char *work_dir,
                            const char *visual_dir) {
    if (i < 0 || i >= PF_HTTP_MAX_RUNS || strlen(name) >= sizeof h->runs[0].name ||
        strlen(work_dir) >= PATH_MAX || strlen(visual_dir) >= PATH_MAX)
        return -1;
    pthread_mutex_lock(&h->lock);
    run *r = &h->runs[i];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->work_dir, sizeof r->work_dir, "%s", work_dir);
    snprintf(r->visual_dir, sizeof r->visual_dir, "%s", visual_dir);
    if (i >= h->n_runs) h->n_runs = i + 1;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

void pf_monitor_http_set_state(pf_monitor_http *h, int i, const char *json) {
    if (i < 0 || i >= PF_HTTP_MAX_RUNS) return;
    char *copy = strdup(json);
    if (!copy) return;
    pthread_mutex_lock(&h->lock);
    free(h->runs[i].state);
    h->runs[i].state = copy;
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

void pf_monitor_http_point(pf_monitor_http *h, int i, pf_curve c, double step, double value) {
    if ((unsigned)c >= PF_CURVE_COUNT || i < 0 || i >= PF_HTTP_MAX_RUNS) return;
    pthread_mutex_lock(&h->lock);
    curve *k = &h->runs[i].curves[c];
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
        /* Full: keep every bucket's min and max over a quarter of the room, in place (no
           allocation: the memory a curve holds stays what it was once full). */
        k->n = pf_decimate_minmax(k->x, k->y, k->n, PF_HTTP_CURVE_CAP / 8, k->x, k->y);
    }
    k->x[k->n] = step;
    k->y[k->n] = value;
    k->n++;
    k->raw++;
    pthread_mutex_unlock(&h->lock);
}

void pf_monitor_http_hold(pf_monitor_http *h, int on) {
    pthread_mutex_lock(&h->lock);
    h->held = on;
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
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE) MHD_add_response_header(r, "Retry-After", "1");
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

/* The run ?run= names (an index, or a run's name; run 0 without it). Returns its index, or -1
   when there is no such run. */
static int which_run(pf_monitor_http *h, struct MHD_Connection *c) {
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "run");
    if (!q) return 0;
    uint64_t v;
    int found = -1;
    pthread_mutex_lock(&h->lock);
    if (pf_http_parse_uint(q, PF_HTTP_MAX_RUNS, &v) == 0) {
        if (v < (uint64_t)h->n_runs) found = (int)v;
    } else {
        for (int i = 0; i < h->n_runs && found < 0; i++)
            if (h->runs[i].name[0] && !strcmp(h->runs[i].name, q)) found = i;
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}

static enum MHD_Result get_state(pf_monitor_http *h, struct MHD_Connection *c, int ri) {
    pthread_mutex_lock(&h->lock);
    char *body = strdup(h->runs[ri].state ? h->runs[ri].state : "{}");
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

static enum MHD_Result get_curves(pf_monitor_http *h, struct MHD_Connection *c, int ri) {
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    const char *ws = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "width");
    int which = -1;
    for (int i = 0; i < PF_CURVE_COUNT && name; i++)
        if (!strcmp(name, curve_names[i])) which = i;
    if (which < 0)
        return http_error(c, MHD_HTTP_BAD_REQUEST,
                     "name must be one of loss, lr, it_per_s, data_wait, psnr, l_g_pix, "
                     "l_g_percep, l_g_style, l_g_gan, l_d_real, l_d_fake, out_d_real, "
                     "out_d_fake");
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
        const curve *k = &h->runs[ri].curves[which];
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

/* Queue a 200 with response r (released here): its Content-Type, Cache-Control and nosniff. */
static enum MHD_Result queue_ok(struct MHD_Connection *c, struct MHD_Response *r,
                                const char *type, const char *cache) {
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", cache);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* The dashboard (cli/dashboard.h): GET / the page with the snapshot rendered in, GET
   /api/snapshot that HTML alone; both from the state /api/state serves. */
static enum MHD_Result get_page(pf_monitor_http *h, struct MHD_Connection *c, int ri,
                                int whole) {
    pthread_mutex_lock(&h->lock);
    char *state = strdup(h->runs[ri].state ? h->runs[ri].state : "");
    uint64_t last_id = h->last_id;
    pthread_mutex_unlock(&h->lock);
    if (!state) return MHD_NO;
    char *body = whole ? pf_dashboard_page(state, h->has_token ? h->token : NULL, last_id)
                       : pf_dashboard_snapshot_html(state);
    free(state);
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    /* only this server's scripts (uPlot sets element styles, which CSP allows) */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data: blob:; "
                            "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    return queue_ok(c, r, "text/html; charset=utf-8", "no-store");
}

/* GET /static/NAME: an embedded file of web/, from the binary's own memory. */
static enum MHD_Result get_static(struct MHD_Connection *c, const char *name) {
    const pf_web_asset *a = pf_web_asset_find(name);
    const char *type = pf_web_content_type(name);
    if (!a || !type) return http_error(c, MHD_HTTP_NOT_FOUND, "no such file");
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    return queue_ok(c, r, type, "no-cache");
}

static enum MHD_Result get_events(pf_monitor_http *h, struct MHD_Connection *c) {
    const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    /* ?after=K: as Last-Event-ID K, for a first connection that wants only what comes next
       (the dashboard page, rendered with the ring's last id); the header wins (reconnects) */
    if (!last) last = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
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

/* ---- runs, images and files ------------------------------------------------------------- */

/* libmicrohttpd's unescaping of the path and the query values, replaced by ours: a %00 must not
   cut a name short (common/http_path.h). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    return pf_http_unescape(s);
}

static enum MHD_Result reply_json(struct MHD_Connection *c, cJSON *o) {
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return MHD_NO;
    return reply(c, MHD_HTTP_OK, "application/json", text);
}

static enum MHD_Result get_runs(pf_monitor_http *h, struct MHD_Connection *c) {
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "runs");
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->n_runs; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "index", i);
        cJSON_AddStringToObject(r, "name", h->runs[i].name);
        cJSON_AddStringToObject(r, "work_dir", h->runs[i].work_dir);
        cJSON_AddItemToArray(a, r);
    }
    pthread_mutex_unlock(&h->lock);
    return reply_json(c, o);
}

/* Run ri's folders, copied out of the lock. */
static void run_dirs(pf_monitor_http *h, int ri, char *work_dir, char *visual_dir) {
    pthread_mutex_lock(&h->lock);
    memcpy(work_dir, h->runs[ri].work_dir, PATH_MAX);
    memcpy(visual_dir, h->runs[ri].visual_dir, PATH_MAX);
    pthread_mutex_unlock(&h->lock);
}

#define MAX_LISTED 100000       /* steps or images one listing names at most */

/* N from "iter_N" + suffix (suffix "" for a folder). Returns 0, or -1 for another name. */
static int iter_step(const char *name, const char *suffix, uint64_t *step) {
    size_t n = strlen(name), s = strlen(suffix);
    char digits[24];
    if (strncmp(name, "iter_", 5) || n <= 5 + s || n - 5 - s >= sizeof digits ||
        strcmp(name + n - s, suffix))
        return -1;
    memcpy(digits, name + 5, n - 5 - s);
    digits[n - 5 - s] = 0;
    return pf_http_parse_uint(digits, (uint64_t)1 << 53, step);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The steps N of dir/iter_N<suffix> (regular files, or folders when suffix is ""), sorted.
   Returns how many (in a malloc'd *steps), 0 for a missing folder. */
static size_t list_steps(const char *dir, const char *suffix, uint64_t **steps) {
    *steps = NULL;
    DIR *d = dir[0] ? opendir(dir) : NULL;
    if (!d) return 0;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_LISTED) {
        uint64_t step;
        struct stat st;
        if (iter_step(e->d_name, suffix, &step) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !(suffix[0] ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode)))
            continue;
        if (n == cap) {
            uint64_t *more = realloc(*steps, (cap = cap ? 2 * cap : 64) * sizeof *more);
            if (!more) break;
            *steps = more;
        }
        (*steps)[n++] = step;
    }
    closedir(d);
    qsort(*steps, n, sizeof **steps, cmp_u64);
    return n;
}

/* Add to `a` the image files (.png, .jpg) in dir, as prefix + name, and with prefix "" those
   one folder down (a video clip's frames: "clip/00000001.png"), sorted. */
static void list_images(const char *dir, const char *prefix, cJSON *a) {
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_LISTED) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue;
        const char *t = pf_http_content_type(e->d_name);
        int image = S_ISREG(st.st_mode) && t && !strncmp(t, "image/", 6);
        int sub = S_ISDIR(st.st_mode) && !prefix[0];
        if (!image && !sub) continue;
        char *name = malloc(strlen(prefix) + strlen(e->d_name) + 2);
        if (!name) break;
        sprintf(name, "%s%s%s", prefix, e->d_name, sub ? "/" : "");
        if (n == cap) {
            char **more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *more);
            if (!more) {
                free(name);
                break;
            }
            names = more;
        }
        names[n++] = name;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (names[i][len - 1] == '/') {     /* a clip's folder: its frames */
            char sub[PATH_MAX * 2];
            snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
            list_images(sub, names[i], a);
        } else {
            cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
        }
        free(names[i]);
    }
    free(names);
}

/* GET /api/images: the steps with a visual grid and the steps with eval images (and their
   names), from the run's folders as they are now. */
static enum MHD_Result get_images(pf_monitor_http *h, struct MHD_Connection *c, int ri) {
    char work_dir[PATH_MAX], visual_dir[PATH_MAX], eval_dir[PATH_MAX + 16];
    run_dirs(h, ri, work_dir, visual_dir);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", ri);
    cJSON *v = cJSON_AddObjectToObject(o, "visuals");
    cJSON *vs = cJSON_AddArrayToObject(v, "steps");
    uint64_t *steps;
    size_t n = list_steps(visual_dir, ".png", &steps);
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(vs, cJSON_CreateNumber((double)steps[i]));
    free(steps);
    steps = NULL;
    cJSON *ev = cJSON_AddArrayToObject(o, "eval");
    snprintf(eval_dir, sizeof eval_dir, "%s/eval_visuals", work_dir);
    n = work_dir[0] ? list_steps(eval_dir, "", &steps) : 0;
    for (size_t i = 0; i < n; i++) {
        char dir[PATH_MAX * 2];
        snprintf(dir, sizeof dir, "%s/iter_%" PRIu64, eval_dir, steps[i]);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "step", (double)steps[i]);
        list_images(dir, "", cJSON_AddArrayToObject(e, "images"));
        cJSON_AddItemToArray(ev, e);
    }
    free(steps);
    /* the eval hook's references for the A/B view (eval_visuals/bicubic/, gt/: same names) */
    cJSON *refs = cJSON_AddArrayToObject(o, "references");
    static const char *kinds[] = {"bicubic", "gt"};
    for (int k = 0; k < 2 && work_dir[0]; k++) {
        char dir[PATH_MAX * 2];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", eval_dir, kinds[k]);
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            cJSON_AddItemToArray(refs, cJSON_CreateString(kinds[k]));
    }
    return reply_json(c, o);
}

/* The file `rel` under `root`, streamed from its descriptor (nothing is read into memory
   here: libmicrohttpd sends it with sendfile or reads it in pieces). A refused name 400, a
   type not served or a missing file 404, outside root or not a regular file 403. */
static enum MHD_Result send_file(struct MHD_Connection *c, const char *root, const char *rel) {
    if (!pf_http_name_ok(rel))
        return http_error(c, MHD_HTTP_BAD_REQUEST, "a refused name (.., absolute, %, control "
                          "characters)");
    const char *type = pf_http_content_type(rel);
    if (!type)
        return http_error(c, MHD_HTTP_NOT_FOUND, "not a served type (.png .jpg .jpeg .json "
                          ".jsonl .log .txt .yaml .yml)");
    if (!root[0]) return http_error(c, MHD_HTTP_NOT_FOUND, "this run's folder is not known");
    uint64_t size;
    int fd = pf_http_open_safe(root, rel, &size);
    if (fd < 0)
        return http_error(c, (unsigned)-fd, fd == -403 ? "outside the run's folder or not a "
                          "regular file" : fd == -400 ? "a refused name" : "no such file");
    struct MHD_Response *r = MHD_create_response_from_fd64(size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    return queue_ok(c, r, type, "no-cache");
}

/* GET /api/image?kind=visual&step=N (the visual grid iter_N.png) or
   ?kind=eval&step=N&name=NAME (eval_visuals/iter_N/NAME). */
static enum MHD_Result get_image(pf_monitor_http *h, struct MHD_Connection *c, int ri) {
    const char *kind = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "kind");
    const char *ss = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    uint64_t step;
    if (pf_http_parse_uint(ss, (uint64_t)1 << 53, &step) != 0)
        return http_error(c, MHD_HTTP_BAD_REQUEST, "step must be an iteration number");
    char work_dir[PATH_MAX], visual_dir[PATH_MAX], rel[PF_HTTP_NAME_MAX + 64];
    run_dirs(h, ri, work_dir, visual_dir);
    if (kind && !strcmp(kind, "visual")) {
        snprintf(rel, sizeof rel, "iter_%" PRIu64 ".png", step);
        return send_file(c, visual_dir, rel);
    }
    if (kind && !strcmp(kind, "eval") && name) {
        if (strlen(name) > PF_HTTP_NAME_MAX)
            return http_error(c, MHD_HTTP_BAD_REQUEST, "name too long");
        snprintf(rel, sizeof rel, "eval_visuals/iter_%" PRIu64 "/%s", step, name);
        return send_file(c, work_dir, rel);
    }
    return http_error(c, MHD_HTTP_BAD_REQUEST, "kind=visual&step=N or kind=eval&step=N&name=NAME");
}

/* GET /files/REL: a file of the run's work_dir (logs, metrics.jsonl, config.yaml, images). */
static enum MHD_Result get_file(pf_monitor_http *h, struct MHD_Connection *c, int ri,
                                const char *rel) {
    char work_dir[PATH_MAX], visual_dir[PATH_MAX];
    run_dirs(h, ri, work_dir, visual_dir);
    return send_file(c, work_dir, rel);
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
    if (!strncmp(url, "/static/", 8)) return get_static(c, url + 8);
    pthread_mutex_lock(&h->lock);
    int held = h->held;
    pthread_mutex_unlock(&h->lock);
    if (held) return http_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "loading the runs");
    if (!strcmp(url, "/api/events")) return get_events(h, c);
    if (!strcmp(url, "/api/runs")) return get_runs(h, c);
    int ri = which_run(h, c);
    if (ri < 0) return http_error(c, MHD_HTTP_NOT_FOUND, "no such run (GET /api/runs lists them)");
    if (!strcmp(url, "/api/state")) return get_state(h, c, ri);
    if (!strcmp(url, "/api/curves")) return get_curves(h, c, ri);
    if (!strcmp(url, "/api/images")) return get_images(h, c, ri);
    if (!strcmp(url, "/api/image")) return get_image(h, c, ri);
    if (!strncmp(url, "/files/", 7)) return get_file(h, c, ri, url + 7);
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return get_page(h, c, ri, 1);
    if (!strcmp(url, "/api/snapshot")) return get_page(h, c, ri, 0);
    return http_error(c, MHD_HTTP_NOT_FOUND, "no such path: /, /api/state, /api/events, "
                      "/api/curves, /api/runs, /api/images, /api/image, /api/snapshot, "
                      "/files/, /static/");
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
    h->n_runs = 1;
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
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
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
    for (int r = 0; r < PF_HTTP_MAX_RUNS; r++) {
        for (int i = 0; i < PF_CURVE_COUNT; i++) {
            free(h->runs[r].curves[i].x);
            free(h->runs[r].curves[i].y);
        }
        free(h->runs[r].state);
    }
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->more);
    free(h);
    *h_p = NULL;
}
