/*  reactor — see reactor.h.

    Every registration is a small struct of ours; the trampolines (on_zloop_reader,
    on_zloop_timer, on_zloop_task) call the role's handler, then look at the signal count.
    Readers and tasks are zloop's handler argument themselves. Timers are zloop one-shots
    re-armed after each run (no catch-up), whose argument is the reactor, never the pf_timer:
    the trampoline looks the timer up by zloop's id. zloop (czmq 4.2.1) runs every timer due
    in a round before it drops those that zloop_timer_end ended meanwhile, so a one-shot
    cancelled or moved by a handler earlier in the same round still fires; its id is then no
    pf_timer's and the firing is ignored. (With the pf_timer as the argument, a timer
    cancelled and freed in that round was called from freed memory: on an early SIGTERM the
    coordinator's tick ended the job, cancelling the liveness timer due in the same round, the
    new closing timer's zloop record took the freed block, and on_zloop_timer called itself
    until the stack overflowed.) A task is a zloop poller on an eventfd that holds 1 while the
    task is ready: zloop calls pollers in registration order once per round, so the readers
    registered before it are served between two steps of the task. Readers ended inside a loop
    round stay allocated until the reactor goes: zloop may still hold a copy of their poll item
    for the rest of that round.
*/
#include "runtime/reactor.h"

#include <czmq.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/util.h"

typedef struct pf_reader pf_reader;

struct pf_reader {
    pf_reader *next;            /* the reactor's list */
    pf_reactor *r;
    void *sock;                 /* the libzmq socket read */
    pf_reactor_fn *fn;
    void *arg;
    int ended;                  /* pf_reactor_reader_end was called: never call fn again */
};

struct pf_timer {
    pf_timer *next;             /* the reactor's list */
    pf_reactor *r;
    pf_reactor_fn *fn;
    void *arg;
    size_t ms;                  /* delay of the next arming, ms */
    int repeat;                 /* re-armed after each run (pf_reactor_every) */
    int zid;                    /* zloop's id of the pending one-shot, 0 when none */
    int running;                /* fn is running: a cancel only marks it */
    int cancelled;              /* freed once fn returns */
};

struct pf_task {
    pf_task *next;              /* the reactor's list */
    pf_reactor *r;
    pf_reactor_fn *fn;
    void *arg;
    int fd;                     /* eventfd, readable while the task is ready */
    int ready;
};

struct pf_reactor {
    zloop_t *loop;
    pf_reader *readers;
    pf_timer *timers;
    pf_task *tasks;
    pf_reactor_fn *on_signal;   /* the role's signal handler, or NULL */
    void *on_signal_arg;
    int signals_seen;           /* pf_signal_count when on_signal last ran (0 at first: a
                                   signal caught before the loop is the role's news too) */
    int failed;                 /* a timer could not be re-armed: pf_reactor_run returns -1 */
};

pf_reactor *pf_reactor_new(void) {
    pf_reactor *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->loop = zloop_new();
    if (!r->loop) {
        free(r);
        return NULL;
    }
    /* The roles decide when to stop (their own signal handlers), never czmq. */
    zloop_set_nonstop(r->loop, true);
    return r;
}

void pf_reactor_destroy(pf_reactor **self_p) {
    pf_reactor *r = *self_p;
    if (!r) return;
    zloop_destroy(&r->loop);
    while (r->readers) {
        pf_reader *next = r->readers->next;
        free(r->readers);
        r->readers = next;
    }
    while (r->timers) {
        pf_timer *next = r->timers->next;
        free(r->timers);
        r->timers = next;
    }
    while (r->tasks) {
        pf_task *next = r->tasks->next;
        close(r->tasks->fd);
        free(r->tasks);
        r->tasks = next;
    }
    free(r);
    *self_p = NULL;
}

/* After a handler returned `rc`: a signal delivered meanwhile goes to the role's handler. */
static int after_handler(pf_reactor *r, int rc) {
    if (rc != 0) return -1;
    if ((int)pf_signal_count == r->signals_seen || !r->on_signal) return 0;
    r->signals_seen = (int)pf_signal_count;
    return r->on_signal(r, r->on_signal_arg) != 0 ? -1 : 0;
}

static int on_zloop_reader(zloop_t *loop, zmq_pollitem_t *item, void *arg) {
    pf_reader *rd = arg;
    if (rd->ended) return 0;
    return after_handler(rd->r, rd->fn(rd->r, rd->arg));
}

int pf_reactor_reader(pf_reactor *r, void *sock, pf_reactor_fn *fn, void *arg) {
    pf_reader *rd = calloc(1, sizeof *rd);
    if (!rd) return -1;
    *rd = (pf_reader){ r->readers, r, sock, fn, arg, 0 };
    zmq_pollitem_t item = { sock, 0, ZMQ_POLLIN, 0 };
    if (zloop_poller(r->loop, &item, on_zloop_reader, rd) != 0) {
        free(rd);
        return -1;
    }
    /* Without this zloop drops a poller silently after an error on its socket. */
    zloop_poller_set_tolerant(r->loop, &item);
    r->readers = rd;
    return 0;
}

void pf_reactor_reader_end(pf_reactor *r, void *sock) {
    zmq_pollitem_t item = { sock, 0, ZMQ_POLLIN, 0 };
    zloop_poller_end(r->loop, &item);
    for (pf_reader *rd = r->readers; rd; rd = rd->next)
        if (rd->sock == sock) rd->ended = 1;
}

static void timer_free(pf_reactor *r, pf_timer *t) {
    for (pf_timer **p = &r->timers; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    free(t);
}

static int on_zloop_timer(zloop_t *loop, int zid, void *arg);

/* Arm t's one-shot in zloop, `ms` from now. Returns 0 or -1. */
static int timer_arm(pf_timer *t, size_t ms) {
    /* At least 1 ms: zloop would run a 0 ms one-shot armed inside a timer handler in the
       same round, before any reader (measured: 1000 such re-arms ran back to back). */
    int zid = zloop_timer(t->r->loop, ms ? ms : 1, 1, on_zloop_timer, t->r);
    t->zid = zid > 0 ? zid : 0;
    return zid > 0 ? 0 : -1;
}

/* The timer whose pending one-shot is zloop's `zid`, or NULL: that one-shot was ended
   (cancel, restart) and the timer may be gone. zloop's ids only grow, so none is reused. */
static pf_timer *timer_of(pf_reactor *r, int zid) {
    for (pf_timer *t = r->timers; t; t = t->next)
        if (t->zid == zid) return t;
    return NULL;
}

static int on_zloop_timer(zloop_t *loop, int zid, void *arg) {
    pf_reactor *r = arg;
    pf_timer *t = timer_of(r, zid);
    if (!t) return 0;   /* ended earlier in this round: nothing of ours runs */
    t->zid = 0;     /* zloop deletes its one-shot after this returns */
    t->running = 1;
    int rc = t->fn(r, t->arg);
    t->running = 0;
    if (t->cancelled) {
        timer_free(r, t);
    } else if (t->repeat && !t->zid && timer_arm(t, t->ms) != 0) {
        r->failed = 1;
        return -1;
    }
    return after_handler(r, rc);
}

static pf_timer *timer_new(pf_reactor *r, double s, int repeat, pf_reactor_fn *fn, void *arg) {
    pf_timer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    *t = (pf_timer){ .next = r->timers, .r = r, .fn = fn, .arg = arg,
                     .ms = s > 0 ? (size_t)(s * 1000.0 + 0.5) : 0, .repeat = repeat };
    if (timer_arm(t, t->ms) != 0) {
        free(t);
        return NULL;
    }
    r->timers = t;
    return t;
}

pf_timer *pf_reactor_every(pf_reactor *r, double interval_s, pf_reactor_fn *fn, void *arg) {
    return timer_new(r, interval_s, 1, fn, arg);
}

pf_timer *pf_reactor_after(pf_reactor *r, double delay_s, pf_reactor_fn *fn, void *arg) {
    return timer_new(r, delay_s, 0, fn, arg);
}

int pf_reactor_restart(pf_reactor *r, pf_timer *t, double delay_s) {
    if (t->zid) zloop_timer_end(r->loop, t->zid);
    t->zid = 0;
    return timer_arm(t, delay_s > 0 ? (size_t)(delay_s * 1000.0 + 0.5) : 0);
}

void pf_reactor_cancel(pf_reactor *r, pf_timer **timer_p) {
    pf_timer *t = *timer_p;
    *timer_p = NULL;
    if (!t) return;
    if (t->zid) zloop_timer_end(r->loop, t->zid);
    t->zid = 0;
    if (t->running) t->cancelled = 1;   /* freed by on_zloop_timer once fn returns */
    else timer_free(r, t);
}

static int on_zloop_task(zloop_t *loop, zmq_pollitem_t *item, void *arg) {
    pf_task *k = arg;
    if (!k->ready) return 0;
    return after_handler(k->r, k->fn(k->r, k->arg));
}

pf_task *pf_reactor_task(pf_reactor *r, pf_reactor_fn *fn, void *arg) {
    pf_task *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    *k = (pf_task){ r->tasks, r, fn, arg, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), 0 };
    zmq_pollitem_t item = { NULL, k->fd, ZMQ_POLLIN, 0 };
    if (k->fd < 0 || zloop_poller(r->loop, &item, on_zloop_task, k) != 0) {
        if (k->fd >= 0) close(k->fd);
        free(k);
        return NULL;
    }
    zloop_poller_set_tolerant(r->loop, &item);
    r->tasks = k;
    return k;
}

void pf_task_ready(pf_task *k, int ready) {
    ready = !!ready;
    if (ready == k->ready) return;
    k->ready = ready;
    uint64_t v = 1;
    /* The eventfd's count is 0 or 1: it says whether zmq_poll sees the task readable. */
    if (ready) (void)!write(k->fd, &v, sizeof v);
    else (void)!read(k->fd, &v, sizeof v);
}

void pf_reactor_on_signal(pf_reactor *r, pf_reactor_fn *fn, void *arg) {
    r->on_signal = fn;
    r->on_signal_arg = arg;
}

int pf_reactor_run(pf_reactor *r) {
    if (after_handler(r, 0) != 0) return 0;     /* a signal before the loop started */
    for (;;) {
        errno = 0;
        int rc = zloop_start(r->loop);
        if (r->failed) return -1;
        if (rc == -1) return 0;     /* a handler ended the loop */
        /* zmq_poll failed: EINTR (a signal: the loop goes on after the role has seen it) or
           the context is gone. */
        int e = errno;
        if ((int)pf_signal_count != r->signals_seen) {
            if (after_handler(r, 0) != 0) return 0;
        } else if (e != EINTR) {
            return -1;
        }
    }
}
