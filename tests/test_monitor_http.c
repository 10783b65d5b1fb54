/*  monitor_http: the server of `pixflow monitor --http` (cli/monitor_http.h) driven from C, no
    job, a raw-socket HTTP client:
    A. The ring under a fast writer: 1000 events before a reader connects to a 64-event ring,
       19000 more while it streams (`{"n": i}` for id i). Every id 1..20000 reaches the reader
       exactly once, in order, either as an event whose data is its own number or inside an
       `event: gap` range; the first record is a gap (ids the ring had dropped at connect).
    B. Curve compaction: PF_HTTP_CURVE_CAP + 5000 points with a spike up early and one down
       after the compaction: /api/curves (width 100000) still shows both spikes and both ends,
       holds at most the cap, and says how many were added.
    C. Bind addresses: bad ones are refused with a message; 0.0.0.0 draws a 32-hex token,
       needed (401 without, 200 with); 127.0.0.1 draws none.
    D. Stopping the server while a stream waits for events ends it within a second. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/monitor_http.h"
#include "common/util.h"
#include "pf_test.h"

#define EVENTS 20000
#define BEFORE 1000

static int free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) ||
        getsockname(s, (struct sockaddr *)&a, &n)) {
        if (s >= 0) close(s);
        return -1;
    }
    close(s);
    return ntohs(a.sin_port);
}

/* GET path (HTTP/1.0, so the body is not chunked: the stream's records arrive as sent) with
   extra header lines; everything read until the server closes or `seconds`
   pass. Returns a malloc'd string ("" when nothing came). */
static char *get(int port, const char *path, const char *headers, double seconds) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    buf[0] = 0;
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        if (s >= 0) close(s);
        return buf;
    }
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: t\r\n%s\r\n",
                     path, headers);
    if (write(s, req, (size_t)n) != n) {
        close(s);
        return buf;
    }
    double until = pf_now() + seconds;
    for (;;) {
        double left = until - pf_now();
        struct pollfd p = { .fd = s, .events = POLLIN };
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0) break;
        if (len + 4096 + 1 > cap) buf = realloc(buf, cap *= 2);
        ssize_t r = read(s, buf + len, cap - len - 1);
        if (r <= 0) break;
        len += (size_t)r;
    }
    buf[len] = 0;
    close(s);
    return buf;
}

typedef struct {
    int port;
    char *stream;
} reader;

static void *read_events(void *arg) {
    reader *r = arg;
    r->stream = get(r->port, "/api/events", "", 4.0);
    return NULL;
}

/* A: every id once, as an event or in a gap. */
static void ring_under_load(void) {
    int port = free_port();
    char bind[64], err[256], ev[64];
    snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
    pf_monitor_http *h = pf_monitor_http_start(bind, 64, 4, err, sizeof err);
    CHECK(h != NULL, "A: start: %s", err);
    if (!h) return;
    for (int i = 1; i <= BEFORE; i++) {
        snprintf(ev, sizeof ev, "{\"n\":%d}", i);
        pf_monitor_http_event(h, ev);
    }
    reader r = { .port = port };
    pthread_t t;
    pthread_create(&t, NULL, read_events, &r);
    usleep(300000);
    int wrong_id = 0;
    for (int i = BEFORE + 1; i <= EVENTS; i++) {
        snprintf(ev, sizeof ev, "{\"n\":%d}", i);
        wrong_id += pf_monitor_http_event(h, ev) != (uint64_t)i;
        if (i % 500 == 0) usleep(1000);
    }
    CHECK(wrong_id == 0, "A: %d events got another id than their number", wrong_id);
    pthread_join(t, NULL);
    pf_monitor_http_stop(&h);
    CHECK(h == NULL, "A: stop did not null the pointer");
    /* walk the records after the response head */
    char *p = strstr(r.stream, "\r\n\r\n");
    CHECK(p != NULL && !strncmp(r.stream + 8, " 200", 4) && strstr(r.stream, "text/event-stream"),
          "A: no event stream: %.200s", r.stream);
    uint64_t next = 1, delivered = 0, gaps = 0, lost = 0;
    int bad = 0, first_is_gap = -1;
    /* records are found by their "id: " lines */
    for (char *q = p; q && (q = strstr(q, "id: ")); q++) {
        unsigned long long id = strtoull(q + 4, NULL, 10);
        char *line2 = strchr(q, '\n');
        if (!line2) break;
        unsigned long long first, last;
        int n;
        if (!strncmp(line2 + 1, "event: gap\ndata: ", 17) &&
            sscanf(line2 + 18, "{\"first\":%llu,\"last\":%llu}", &first, &last) == 2) {
            if (first_is_gap < 0) first_is_gap = 1;
            if (first != next || last != id || last < first) bad++;
            gaps++;
            lost += last - first + 1;
            next = last + 1;
        } else if (sscanf(line2 + 1, "data: {\"n\":%d}", &n) == 1) {
            if (first_is_gap < 0) first_is_gap = 0;
            if (id != next || (unsigned long long)n != id) bad++;
            delivered++;
            next = id + 1;
        } else {
            bad++;
        }
    }
    CHECK(bad == 0, "A: %d records out of order or mislabelled", bad);
    CHECK(next == EVENTS + 1, "A: the stream ended before id %llu (want %d)",
          (unsigned long long)next, EVENTS);
    CHECK(delivered + lost == EVENTS, "A: %llu delivered + %llu in gaps != %d",
          (unsigned long long)delivered, (unsigned long long)lost, EVENTS);
    CHECK(first_is_gap == 1, "A: the first record is not the gap of the dropped ids");
    printf("A: ring of 64, %d events: %llu delivered, %llu in %llu gap records (checked: "
           "every id once, in order)\n", EVENTS, (unsigned long long)delivered,
           (unsigned long long)lost, (unsigned long long)gaps);
    free(r.stream);
}

/* B: compaction keeps the extremes. */
static void curve_compaction(void) {
    int port = free_port();
    char bind[64], err[256];
    snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
    pf_monitor_http *h = pf_monitor_http_start(bind, 16, 4, err, sizeof err);
    CHECK(h != NULL, "B: start: %s", err);
    if (!h) return;
    const int n = PF_HTTP_CURVE_CAP + 5000;
    for (int i = 0; i < n; i++) {
        double y = 1.0 + 0.001 * (i % 7);
        if (i == 100) y = 50;
        if (i == PF_HTTP_CURVE_CAP + 100) y = -50;
        pf_monitor_http_point(h, 0, PF_CURVE_LOSS, i, y);
    }
    char *resp = get(port, "/api/curves?name=loss&width=100000", "", 10.0);
    pf_monitor_http_stop(&h);
    char *body = strstr(resp, "\r\n\r\n");
    cJSON *o = body ? cJSON_Parse(body + 4) : NULL;
    CHECK(o != NULL, "B: no JSON: %.200s", resp);
    if (o) {
        int held = cJSON_GetObjectItem(o, "held")->valueint;
        double added = cJSON_GetObjectItem(o, "added")->valuedouble;
        cJSON *x = cJSON_GetObjectItem(o, "x"), *y = cJSON_GetObjectItem(o, "y");
        int k = cJSON_GetArraySize(x), up = 0, down = 0;
        for (int i = 0; i < k; i++) {
            double v = cJSON_GetArrayItem(y, i)->valuedouble;
            up |= v == 50 && cJSON_GetArrayItem(x, i)->valuedouble == 100;
            down |= v == -50 && cJSON_GetArrayItem(x, i)->valuedouble == PF_HTTP_CURVE_CAP + 100;
        }
        CHECK(held <= PF_HTTP_CURVE_CAP && held < n, "B: holds %d points (cap %d)", held,
              PF_HTTP_CURVE_CAP);
        CHECK(added == n, "B: added %g, want %d", added, n);
        CHECK(up && down, "B: spike up %s, spike down %s", up ? "kept" : "LOST",
              down ? "kept" : "LOST");
        CHECK(k > 1 && cJSON_GetArrayItem(x, 0)->valuedouble == 0 &&
              cJSON_GetArrayItem(x, k - 1)->valuedouble == n - 1, "B: ends not kept");
        printf("B: %d points added, %d held after compaction, %d served; both spikes and both "
               "ends kept\n", n, held, k);
        cJSON_Delete(o);
    }
    free(resp);
}

/* C: bind addresses and the token. */
static void binds(void) {
    char err[256];
    const char *bad[] = { "nope", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "1.2.3:80",
                          ":80", "127.0.0.1:80x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        pf_monitor_http *h = pf_monitor_http_start(bad[i], 16, 4, err, sizeof err);
        CHECK(h == NULL && strstr(err, "--http"), "C: '%s' accepted or no message: %s", bad[i],
              err);
        pf_monitor_http_stop(&h);
    }
    int port = free_port();
    char bind[64], hdr[128];
    snprintf(bind, sizeof bind, "0.0.0.0:%d", port);
    pf_monitor_http *h = pf_monitor_http_start(bind, 16, 4, err, sizeof err);
    CHECK(h != NULL, "C: start on %s: %s", bind, err);
    if (!h) return;
    const char *token = pf_monitor_http_token(h);
    CHECK(token && strlen(token) == 32 && strspn(token, "0123456789abcdef") == 32,
          "C: token %s", token ? token : "(none)");
    pf_monitor_http_set_state(h, 0, "{\"x\":1}");
    char *no = get(port, "/api/state", "", 5.0);
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", token ? token : "");
    char *yes = get(port, "/api/state", hdr, 5.0);
    CHECK(strlen(no) > 12 && strlen(yes) > 12, "C: no answer");
    CHECK(!strncmp(no + 8, " 401", 4), "C: no token: %.40s", no);
    CHECK(!strncmp(yes + 8, " 200", 4) && strstr(yes, "{\"x\":1}"), "C: token: %.80s", yes);
    free(no);
    free(yes);
    pf_monitor_http_stop(&h);
    snprintf(bind, sizeof bind, "127.0.0.1:%d", free_port());
    h = pf_monitor_http_start(bind, 16, 4, err, sizeof err);
    CHECK(h && !pf_monitor_http_token(h), "C: loopback drew a token");
    pf_monitor_http_stop(&h);
    printf("C: 7 bad bind addresses refused; 0.0.0.0 needs its 32-hex token (401/200); "
           "loopback none\n");
}

/* D: stopping with a stream open ends the stream at once. */
static void stop_with_stream(void) {
    int port = free_port();
    char bind[64], err[256];
    snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
    pf_monitor_http *h = pf_monitor_http_start(bind, 16, 4, err, sizeof err);
    CHECK(h != NULL, "D: start: %s", err);
    if (!h) return;
    pf_monitor_http_event(h, "{\"n\":1}");
    reader r = { .port = port };
    pthread_t t;
    double t0 = pf_now();
    pthread_create(&t, NULL, read_events, &r);   /* reads for up to 4 s */
    usleep(300000);
    double t_stop = pf_now();
    pf_monitor_http_stop(&h);
    double stop_s = pf_now() - t_stop;
    pthread_join(t, NULL);
    double read_s = pf_now() - t0;
    CHECK(strstr(r.stream, "id: 1\ndata: {\"n\":1}") != NULL, "D: event 1 not streamed: %.200s",
          r.stream);
    CHECK(stop_s < 1.5 && read_s < 2.5, "D: stop took %.2f s, the stream ended after %.2f s",
          stop_s, read_s);
    printf("D: stop with an open stream: %.2f s; the stream ended %.2f s after it began\n",
           stop_s, read_s);
    free(r.stream);
}

int main(void) {
    ring_under_load();
    curve_compaction();
    binds();
    stop_with_stream();
    return pf_test_end("test_monitor_http");
}
