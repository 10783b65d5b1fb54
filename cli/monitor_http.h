/*  monitor_http — the HTTP side of `pixflow monitor --http HOST:PORT` (docs/protocol.md,
    "Monitor HTTP API"): GET /api/state, GET /api/events (Server-Sent Events), GET /api/curves,
    and from the run's folders GET /api/runs, /api/images, /api/image and /files/ (streamed
    from the file's descriptor, names checked by common/http_path.h).

    Runs: a --connect monitor serves one run (0, the live job); `pixflow monitor --http ADDR
    WORK_DIR...` serves finished runs 0..n-1, each with its own state and curves, picked by
    ?run=INDEX or ?run=NAME (run 0 without it). The event ring is one for the whole server.

    Threads: the monitor's reactor thread owns the monitor's state and is the only writer here
    (pf_monitor_http_set_state, _event, _point); libmicrohttpd runs a polling thread and one
    thread per connection, which only read, under one mutex. The reactor never waits on a
    client: a slow SSE reader falls behind in the ring and is told of a gap, it never holds up
    the monitor.

    Memory is bounded whatever the run's length: the events are a ring of `ring_events`
    serialized events (one JSON object each, a few KiB at most: pf_msg_event's fields are fixed
    arrays), numbered 1, 2, ... (the SSE id); each curve keeps at most PF_HTTP_CURVE_CAP points
    and, when full, is compacted by min/max decimation (common/decimate.h) to a quarter, so its
    extremes survive.
*/
#ifndef PF_MONITOR_HTTP_H
#define PF_MONITOR_HTTP_H
#include <stddef.h>
#include <stdint.h>

typedef struct pf_monitor_http pf_monitor_http;

/* The series GET /api/curves?name= serves, by step: train loss, learning rate, it/s (1 / the
   step's time), data wait (s per step), eval PSNR (dB), and a GAN job's terms (proto.h
   pf_msg_event.gan, named by BasicSR's keys l_g_pix ... out_d_fake: PF_CURVE_GAN + i for
   term i; a curve gets a point at the iterations whose train event carries its term). */
typedef enum { PF_CURVE_LOSS, PF_CURVE_LR, PF_CURVE_ITS, PF_CURVE_DATA_WAIT, PF_CURVE_PSNR,
               PF_CURVE_GAN, PF_CURVE_COUNT = PF_CURVE_GAN + 8 } pf_curve;

#define PF_HTTP_CURVE_CAP (1 << 16)     /* points a curve holds before it is compacted */
#define PF_HTTP_RING_DEFAULT 4096       /* events the ring holds */
#define PF_HTTP_CLIENTS_DEFAULT 16      /* requests served at once; the next gets 503 */

/* Start serving on `bind` ("HOST:PORT", HOST an IPv4 address or "localhost"). A bind address
   outside 127.0.0.0/8 gets a random token (pf_monitor_http_token) that every request must
   carry. ring_events >= 2, max_clients >= 1. Returns the server, or NULL with a message in err
   (bad address, port taken, out of memory). */
pf_monitor_http *pf_monitor_http_start(const char *bind, size_t ring_events, int max_clients,
                                       char *err, size_t errlen);

/* The token requests need (32 hex digits), or NULL when the server binds loopback only. */
const char *pf_monitor_http_token(const pf_monitor_http *h);

#define PF_HTTP_MAX_RUNS 64             /* runs one server serves */

/* Name run `run` (0..PF_HTTP_MAX_RUNS-1; runs up to it become served) and say where its files
   are: work_dir (/files/, eval_visuals/iter_N/) and visual_dir (the visual hook's iter_N.png);
   "" for one not known. Returns 0, or -1 for an index or a string out of bounds. */
int pf_monitor_http_set_run(pf_monitor_http *h, int run, const char *name, const char *work_dir,
                            const char *visual_dir);

/* Replace the document GET /api/state?run=RUN serves by a copy of `json`. */
void pf_monitor_http_set_state(pf_monitor_http *h, int run, const char *json);

/* Append one event (a JSON object, one line) to the ring, dropping the oldest when full, and
   wake the SSE readers. Returns its id (from 1), 0 when out of memory (the event is lost, and
   the next id skips one, so readers see a gap). */
uint64_t pf_monitor_http_event(pf_monitor_http *h, const char *json);

/* Append the point (step, value) to run `run`'s curve `c` (steps in increasing order). */
void pf_monitor_http_point(pf_monitor_http *h, int run, pf_curve c, double step, double value);

/* While held (on != 0) every request but GET /static/NAME is answered 503 with Retry-After: 1
   ("loading"): a finished-runs monitor holds its server until every run is read, so nobody
   sees a run half loaded. */
void pf_monitor_http_hold(pf_monitor_http *h, int on);

/* Stop serving (open SSE streams end), free everything, null *h_p. */
void pf_monitor_http_stop(pf_monitor_http **h_p);
#endif
