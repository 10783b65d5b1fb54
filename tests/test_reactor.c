/*  test_reactor — runtime/reactor.c: readers, tasks served between reads, timers without catch-up, cancel and restart from
    handlers (a timer's own, and others due in the same round), and signals: one that comes while the loop waits, and one that comes while a
    handler runs, both reach the role's signal handler and the loop goes on, and one caught
    before the loop started is reported when it starts; the role's own
    signal handlers stay installed. Times are checked against the monotonic clock with
    tolerances a loaded 2-core machine keeps.
*/
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"
#include "pf_test.h"
#include "runtime/reactor.h"

typedef struct {
    int reads, fires, signals, blocked;
    double first_fire, second_fire, signal_at, tick_after_signal;
    pf_timer *self_cancel, *deadline, *victim;
    int self_cancel_runs, deadline_runs, victim_runs;
    double deadline_at;
    void *sock;
} probe;

static double t0;

static int on_read(pf_reactor *r, void *arg) {
    probe *p = arg;
    char b[8];
    while (zmq_recv(p->sock, b, sizeof b, ZMQ_DONTWAIT) >= 0) p->reads++;
    return p->reads >= 3 ? -1 : 0;
}

static int stop(pf_reactor *r, void *arg) {
    return -1;
}

static int fire(pf_reactor *r, void *arg) {
    probe *p = arg;
    double t = pf_now() - t0;
    if (p->fires == 0) p->first_fire = t;
    if (p->fires == 1) p->second_fire = t;
    p->fires++;
    if (p->signals && !p->tick_after_signal) p->tick_after_signal = t;
    return 0;
}

static int block(pf_reactor *r, void *arg) {
    probe *p = arg;
    p->blocked++;
    usleep(500000);
    return 0;
}

static int cancel_self(pf_reactor *r, void *arg) {
    probe *p = arg;
    p->self_cancel_runs++;
    pf_reactor_cancel(r, &p->self_cancel);
    return 0;
}

static int deadline(pf_reactor *r, void *arg) {
    probe *p = arg;
    p->deadline_runs++;
    p->deadline_at = pf_now() - t0;
    return 0;
}

static int push_deadline(pf_reactor *r, void *arg) {
    probe *p = arg;
    pf_reactor_restart(r, p->deadline, 0.3);
    return 0;
}

static int victim(pf_reactor *r, void *arg) {
    probe *p = arg;
    p->victim_runs++;
    return 0;
}

/* What the coordinator's tick did on an early SIGTERM (end_job): cancel another timer, move
   one, start a new one. */
static int cancel_move_new(pf_reactor *r, void *arg) {
    probe *p = arg;
    pf_reactor_cancel(r, &p->victim);
    pf_reactor_restart(r, p->deadline, 0.2);
    pf_reactor_after(r, 0.4, stop, p);
    return 0;
}

static int on_signal(pf_reactor *r, void *arg) {
    probe *p = arg;
    p->signals++;
    p->signal_at = pf_now() - t0;
    return 0;
}

static int raise_term(pf_reactor *r, void *arg) {
    kill(getpid(), SIGTERM);
    return 0;
}

static void test_reader(void) {
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL), *push = zmq_socket(ctx, ZMQ_PUSH);
    zmq_bind(pull, "inproc://reactor");
    zmq_connect(push, "inproc://reactor");
    for (int i = 0; i < 3; i++) zmq_send(push, "x", 1, 0);
    probe p = { .sock = pull };
    pf_reactor *r = pf_reactor_new();
    CHECK(pf_reactor_reader(r, pull, on_read, &p) == 0, "reader registered");
    pf_reactor_after(r, 2.0, stop, &p);   /* a safety net */
    CHECK(pf_reactor_run(r) == 0, "a handler's -1 ends the loop with 0");
    CHECK(p.reads == 3, "reads %d", p.reads);
    pf_reactor_destroy(&r);
    CHECK(r == NULL, "destroy nulls the pointer");
    zmq_close(pull);
    zmq_close(push);
    zmq_ctx_term(ctx);
}

/* A 100 ms timer around a handler that keeps the loop 500 ms: zloop alone would run it four
   times back to back afterwards; here the next run is 100 ms after the late one. */
static void test_no_catch_up(void) {
    probe p = { 0 };
    pf_reactor *r = pf_reactor_new();
    pf_reactor_every(r, 0.1, fire, &p);
    pf_reactor_after(r, 0.05, block, &p);
    pf_reactor_after(r, 1.0, stop, &p);
    t0 = pf_now();
    CHECK(pf_reactor_run(r) == 0, "run");
    CHECK(p.blocked == 1, "the one-shot ran once (%d)", p.blocked);
    CHECK(p.first_fire >= 0.5, "first run after the block (%.3f s)", p.first_fire);
    CHECK(p.second_fire - p.first_fire >= 0.09, "no catch-up: second run %.3f s after the first",
          p.second_fire - p.first_fire);
    CHECK(p.fires >= 3 && p.fires <= 6, "%d runs in 1 s (expected 5)", p.fires);
    pf_reactor_destroy(&r);
}

static void test_cancel_restart(void) {
    probe p = { 0 };
    pf_reactor *r = pf_reactor_new();
    p.self_cancel = pf_reactor_every(r, 0.05, cancel_self, &p);
    p.deadline = pf_reactor_after(r, 0.2, deadline, &p);
    pf_reactor_after(r, 0.1, push_deadline, &p);   /* the deadline moves to 0.4 s */
    pf_reactor_after(r, 0.7, stop, &p);
    t0 = pf_now();
    CHECK(pf_reactor_run(r) == 0, "run");
    CHECK(p.self_cancel_runs == 1, "a timer cancelled in its own handler ran %d times",
          p.self_cancel_runs);
    CHECK(p.self_cancel == NULL, "cancel nulls the pointer");
    CHECK(p.deadline_runs == 1, "restarted deadline ran %d times", p.deadline_runs);
    CHECK(p.deadline_at >= 0.38 && p.deadline_at < 0.6, "restarted deadline ran at %.3f s",
          p.deadline_at);
    pf_reactor_cancel(r, &p.deadline);   /* a one-shot that has run can still be cancelled */
    pf_reactor_destroy(&r);
}

/* Timers due in the same loop round: zloop runs every one due before it drops those cancelled
   meanwhile, so the first one's handler cancels the second (which must not run, nor be touched
   once freed: before the fix its memory went to the new timer's zloop record and
   on_zloop_timer called itself until the stack overflowed) and moves the third (which must
   run at its new time only). All three are 1 ms timers and the loop starts 20 ms later, so
   all are due in its first round however slow the machine. */
static void test_same_round(void) {
    probe p = { 0 };
    pf_reactor *r = pf_reactor_new();
    pf_reactor_after(r, 0.001, cancel_move_new, &p);
    p.victim = pf_reactor_after(r, 0.001, victim, &p);
    p.deadline = pf_reactor_after(r, 0.001, deadline, &p);
    usleep(20000);
    t0 = pf_now();
    CHECK(pf_reactor_run(r) == 0, "run");
    CHECK(p.victim_runs == 0, "a timer cancelled by an earlier one of its round ran %d times",
          p.victim_runs);
    CHECK(p.deadline_runs == 1 && p.deadline_at >= 0.19,
          "a timer moved by an earlier one of its round ran %d times, at %.3f s",
          p.deadline_runs, p.deadline_at);
    pf_reactor_destroy(&r);
}

static void test_signals(void) {
    pf_catch_signals();
    struct sigaction before, after;
    sigaction(SIGTERM, NULL, &before);
    probe p = { 0 };
    pf_reactor *r = pf_reactor_new();
    sigaction(SIGTERM, NULL, &after);
    CHECK(before.sa_handler == after.sa_handler, "pf_reactor_new keeps the role's handler");
    pf_reactor_on_signal(r, on_signal, &p);
    pf_reactor_every(r, 0.1, fire, &p);
    pf_reactor_after(r, 0.8, stop, &p);
    pid_t child = fork();
    if (child == 0) {
        usleep(250000);
        kill(getppid(), SIGTERM);
        _exit(0);
    }
    t0 = pf_now();
    CHECK(pf_reactor_run(r) == 0, "a signal does not end the loop");
    waitpid(child, NULL, 0);
    CHECK(p.signals == 1, "on_signal ran %d times for one signal", p.signals);
    CHECK(p.signal_at >= 0.2 && p.signal_at < 0.45, "on_signal at %.3f s", p.signal_at);
    CHECK(p.tick_after_signal > p.signal_at, "the loop went on after the signal");
    CHECK(pf_signalled == SIGTERM, "pf_signalled %d", (int)pf_signalled);
    sigaction(SIGTERM, NULL, &after);
    CHECK(before.sa_handler == after.sa_handler, "the role's handler is still installed");
    pf_reactor_destroy(&r);

    /* The signal above came before this loop: reported when it starts. Then one while a
       handler runs: heard when the handler returns, not at the next wake-up. */
    probe q = { 0 };
    r = pf_reactor_new();
    pf_reactor_on_signal(r, on_signal, &q);
    pf_reactor_after(r, 0.1, raise_term, &q);
    pf_reactor_after(r, 0.6, stop, &q);
    t0 = pf_now();
    CHECK(pf_reactor_run(r) == 0, "run");
    CHECK(q.signals == 2, "on_signal ran %d times (one earlier signal, one now)", q.signals);
    CHECK(q.signal_at >= 0.09 && q.signal_at < 0.2, "on_signal right after the handler, at %.3f s",
          q.signal_at);
    pf_reactor_destroy(&r);
}

typedef struct {
    void *sock;
    pf_task *task;
    int reads, steps, reads_at_step[8];
} stepper;

static int read_one(pf_reactor *r, void *arg) {
    stepper *k = arg;
    char b[8];
    if (zmq_recv(k->sock, b, sizeof b, ZMQ_DONTWAIT) >= 0) k->reads++;
    return 0;
}

static int step(pf_reactor *r, void *arg) {
    stepper *k = arg;
    k->reads_at_step[k->steps++] = k->reads;
    if (k->steps == 5) pf_task_ready(k->task, 0);
    return 0;
}

/* A task runs once per round while ready, after the reader registered before it. */
static void test_task(void) {
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL), *push = zmq_socket(ctx, ZMQ_PUSH);
    zmq_bind(pull, "inproc://task");
    zmq_connect(push, "inproc://task");
    for (int i = 0; i < 3; i++) zmq_send(push, "x", 1, 0);
    stepper k = { .sock = pull };
    pf_reactor *r = pf_reactor_new();
    pf_reactor_reader(r, pull, read_one, &k);
    k.task = pf_reactor_task(r, step, &k);
    CHECK(k.task != NULL, "task created");
    pf_task_ready(k.task, 1);
    pf_reactor_after(r, 0.3, stop, &k);
    CHECK(pf_reactor_run(r) == 0, "run");
    CHECK(k.steps == 5, "%d steps (the task went idle after 5)", k.steps);
    CHECK(k.reads_at_step[0] == 1 && k.reads_at_step[1] == 2 && k.reads_at_step[2] == 3,
          "one read before each step: %d %d %d", k.reads_at_step[0], k.reads_at_step[1],
          k.reads_at_step[2]);
    pf_reactor_destroy(&r);
    zmq_close(pull);
    zmq_close(push);
    zmq_ctx_term(ctx);
}

int main(void) {
    test_reader();
    test_task();
    test_no_catch_up();
    test_cancel_restart();
    test_same_round();
    test_signals();
    return pf_test_end("test_reactor");
}
