/*  reactor — the one loop a role runs: readers (libzmq sockets) and timers registered on
    czmq's zloop, one pf_reactor_run; tasks for work done in steps. State changes live in
    the handlers.

    Four things PixFlow's roles need that bare zloop (czmq 4.2.1) does differently, each
    measured against the Debian library (the commit that added this file says how):
    - A signal that arrives while zloop waits in zmq_poll makes zmq_poll fail with EINTR, and
      zloop_start then returns 0 — even with zloop_set_nonstop. pf_reactor_run resumes the
      loop instead, after the role's signal handler (pf_reactor_on_signal) has run. The roles
      keep their own SIGINT/SIGTERM/SIGHUP handlers (common/util.h, pf_catch_signals):
      zloop_new installs none; czmq installs its own only in zsys_init, which
      proto/security.c calls with zsys_handler_set(NULL). The loop is made nonstop, so
      czmq's zsys_interrupted, were it ever set, would not end it either.
    - zloop's repeating timers catch up: a handler that kept the loop for 1 s is followed by
      three back-to-back runs of a 300 ms timer. A role's step or evaluation runs in a
      handler, so pf_reactor_every measures each interval from the end of the previous run,
      as the roles' `next = now + interval` did before.
    - A signal delivered while a handler runs (not in zmq_poll) interrupts nothing: every
      handler's return is followed by a look at pf_signal_count, so the role hears of it as
      soon as the handler returns.
    - zloop_timer_end inside a loop round does not stop a timer already due in that round:
      zloop still runs it. A timer cancelled (pf_reactor_cancel) or moved (pf_reactor_restart)
      by a handler does not run afterwards in that round, whatever the order they were due in.
    Timers have zloop's 1 ms resolution; readers are called once per loop round while their
    socket is readable (a handler may take one message or all of them).
*/
#ifndef PF_REACTOR_H
#define PF_REACTOR_H

typedef struct pf_reactor pf_reactor;
typedef struct pf_timer pf_timer;
typedef struct pf_task pf_task;

/* A handler: 0 to go on, -1 to end pf_reactor_run (which then returns 0). */
typedef int (pf_reactor_fn)(pf_reactor *r, void *arg);

/* A new, empty reactor, or NULL when out of memory. */
pf_reactor *pf_reactor_new(void);

/* Destroy the reactor with its readers and timers (not their sockets); nulls *self_p. */
void pf_reactor_destroy(pf_reactor **self_p);

/* Call fn(r, arg) in every loop round in which `sock` (a libzmq socket) is readable. Errors
   on the socket do not remove it. Returns 0, or -1 when sock is not a socket. */
int pf_reactor_reader(pf_reactor *r, void *sock, pf_reactor_fn *fn, void *arg);

/* Stop reading `sock` (every reader registered for it). */
void pf_reactor_reader_end(pf_reactor *r, void *sock);

/* Call fn(r, arg) every `interval_s` seconds (>= 0.001), the first time `interval_s` from
   now, each next one `interval_s` after the previous run returned. Returns the timer (owned by
   the reactor, valid until cancelled or the reactor is destroyed), NULL when out of memory. */
pf_timer *pf_reactor_every(pf_reactor *r, double interval_s, pf_reactor_fn *fn, void *arg);

/* Call fn(r, arg) once, `delay_s` seconds from now (1 ms at least). The timer stays registered, idle once it
   has run, until cancelled or the reactor is destroyed, so a deadline can be moved with
   pf_reactor_restart. Returns the timer or NULL when out of memory. */
pf_timer *pf_reactor_after(pf_reactor *r, double delay_s, pf_reactor_fn *fn, void *arg);

/* Run `t` next `delay_s` seconds from now instead of when it was due (a one-shot that has run
   is armed again; a repeating timer goes on at its interval from then). Returns 0, or -1 when
   out of memory. */
int pf_reactor_restart(pf_reactor *r, pf_timer *t, double delay_s);

/* Cancel *timer_p (may be NULL) and null it. Safe from inside any handler, the timer's own
   included. */
void pf_reactor_cancel(pf_reactor *r, pf_timer **timer_p);

/* Work done in steps: while the task is ready (pf_task_ready), fn(r, arg) runs once in every
   loop round, after the readers registered before the task (so they are heard between two
   steps: a loader serves one ticket per round and still takes STOP at once). Created not
   ready. Returns the task (the reactor's, until it is destroyed) or NULL. */
pf_task *pf_reactor_task(pf_reactor *r, pf_reactor_fn *fn, void *arg);

/* Make the task ready (1) or idle (0). */
void pf_task_ready(pf_task *task, int ready);

/* Call fn(r, arg) when a signal caught by pf_catch_signals (common/util.h) has been delivered
   since the last call (the first time: since the process started): pf_signalled and
   pf_signal_count say which and how many. Checked when pf_reactor_run starts, when a signal
   interrupts the loop's wait, and after every handler. fn returning -1 ends the loop. */
void pf_reactor_on_signal(pf_reactor *r, pf_reactor_fn *fn, void *arg);

/* Run the loop until a handler returns -1: returns 0. Returns -1 when the loop cannot go on
   (the ZeroMQ context was terminated, or out of memory). */
int pf_reactor_run(pf_reactor *r);
#endif
