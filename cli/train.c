/*  train — `pixflow train CONFIG`: the front end that runs a whole job on this host.

    It validates the config and the data before anything starts, then spawns the coordinator,
    the worker, `data.loaders` loaders and the checkpoint, eval and log hooks as separate
    processes (posix_spawn of this same executable, all in one new process group so the
    terminal's Ctrl-C reaches only the front end). It joins the job as a monitor, shows one live
    progress line from the events, and reports any process that dies. --http [HOST:]PORT adds
    one more process, `pixflow monitor --http` on the job (the dashboard, cli/monitor_http.h),
    stopped when the coordinator has ended; its exit status is not the job's. Ctrl-C, SIGTERM or
    SIGHUP asks the coordinator for an orderly stop (checkpoint, then exit; see on_stop_signal);
    a second one, 1 s or more after the first, kills the group. Its exit status is the
    coordinator's, except that a stop this front end was signalled for exits 128 + the signal.
    pf_train_main is parse, prepare, spawn the coordinator, loop (train_loop: one reactor, from
    waiting for the coordinator's address to its exit; see "the loop" below), finish.
*/
#include "cli/commands.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/checkpoint.h"
#include "common/gan_cfg.h"
#include "common/log.h"
#include "common/number.h"
#include "common/util.h"
#include "coordinator/coordinator.h"
#include "hooks/evaluate.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "runtime/client.h"
#include "runtime/reactor.h"
#include "proto/security.h"
#include "worker/device.h"

extern char **environ;

#define MAX_CHILDREN 264       /* coordinator, worker, 3 hooks, up to 256 loaders */
#define EXIT_GRACE_S 10.0
#define CMD "pixflow train"   /* for messages */

typedef struct {
    pid_t pid;
    char name[64];              /* "coordinator", "worker", "loader1", "eval hook", ... */
    int exited;
    int status;                 /* from waitpid */
} child;

typedef struct {
    child kids[MAX_CHILDREN];
    int n;
    pid_t pgid;                 /* the job's process group (the coordinator's pid) */
} job;

static char self_exe[4096];

#define SPAWN_ONE_THREAD 1      /* one OpenMP thread unless the user set OMP_NUM_THREADS */
#define SPAWN_NO_STDOUT 2       /* its stdout to /dev/null (its stderr stays ours) */

/* Spawn `pixflow ARGS...` into the job's process group; `flags`: SPAWN_* (the callers' 1 is
   SPAWN_ONE_THREAD). Returns the child or NULL with err. */
static child *spawn(job *j, const char *name, char *const args[], int flags, char *err,
                    size_t errlen) {
    int single_thread = flags & SPAWN_ONE_THREAD;
    if (j->n == MAX_CHILDREN) {
        snprintf(err, errlen, "too many processes");
        return NULL;
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, j->pgid);
    /* SIGINT, SIGTERM and SIGHUP start blocked (and with their default actions): a signal that
       reaches a role before it has installed its handlers waits for them (pf_catch_signals
       unblocks) instead of killing it half-started. */
    sigset_t stop_signals;
    pf_stop_signals(&stop_signals);
    posix_spawnattr_setsigmask(&attr, &stop_signals);
    posix_spawnattr_setsigdefault(&attr, &stop_signals);
    char *argv[32];
    int k = 0;
    argv[k++] = self_exe;
    for (int i = 0; args[i] && k < 31; i++) argv[k++] = args[i];
    argv[k] = NULL;
    /* Environment: ours, plus OMP_NUM_THREADS=1 for processes that must not compete with the
       worker for cores. */
    int n_env = 0;
    while (environ[n_env]) n_env++;
    char **env = calloc((size_t)n_env + 4, sizeof *env);
    int e = 0, has_omp = getenv("OMP_NUM_THREADS") != NULL;
    for (int i = 0; i < n_env; i++) env[e++] = environ[i];
    if (single_thread && !has_omp) env[e++] = "OMP_NUM_THREADS=1";
    if (!getenv("PIXFLOW_LOG_STDERR")) env[e++] = "PIXFLOW_LOG_STDERR=warning";
    /* OpenMP threads that spin while idle steal the cores the loaders and hooks need; passive
       waiting measured 1.12 -> 0.77 s per demo step with loaders running beside the worker. */
    if (!getenv("OMP_WAIT_POLICY")) env[e++] = "OMP_WAIT_POLICY=passive";
    env[e] = NULL;
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    if (flags & SPAWN_NO_STDOUT)
        posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, self_exe, &files, &attr, argv, env);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    free(env);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start %s: %s", name, strerror(rc));
        return NULL;
    }
    child *c = &j->kids[j->n++];
    memset(c, 0, sizeof *c);
    c->pid = pid;
    snprintf(c->name, sizeof c->name, "%s", name);
    if (j->pgid == 0) j->pgid = pid;
    return c;
}

static void describe_exit(int status, char *buf, size_t len) {
    if (WIFEXITED(status)) snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, len, "was killed by signal %d (%s)",
                                           WTERMSIG(status), strsignal(WTERMSIG(status)));
    else snprintf(buf, len, "stopped (status %d)", status);
}

/* 1 for an exit status that is an orderly end: 0, or 128 + SIGHUP/SIGINT/SIGTERM (a role that
   stopped in order on that signal; 130 is also the coordinator's "interrupted"). */
static int ended_in_order(int st) {
    if (!WIFEXITED(st)) return 0;
    int code = WEXITSTATUS(st);
    return code == 0 || code == 128 + SIGHUP || code == 128 + SIGINT || code == 128 + SIGTERM;
}

/* Reap exited children; report the ones that did not end cleanly. Returns the number still
   running. */
static int reap(job *j, int quiet) {
    int running = 0;
    for (int i = 0; i < j->n; i++) {
        child *c = &j->kids[i];
        if (c->exited) continue;
        int st;
        pid_t r = waitpid(c->pid, &st, WNOHANG);
        if (r == c->pid) {
            c->exited = 1;
            c->status = st;
            if (!quiet && !ended_in_order(st)) {
                char how[128];
                describe_exit(st, how, sizeof how);
                fprintf(stderr, "\npixflow: %s (pid %d) %s%s\n", c->name, (int)c->pid, how,
                        strncmp(c->name, "loader", 6) == 0
                            ? "; its tickets go to the other loaders" : "");
            }
        } else {
            running++;
        }
    }
    return running;
}

typedef struct {
    int tty;
    double last_draw;
    int64_t iter, total;
    double loss, lr;
    double t_first;             /* pf_now() at the first train event */
    int64_t iter_first;
    int have_eval;
    pf_msg_event last_eval;
    int video;                  /* data.eval is a video set (eval counts are frames, clips) */
    int64_t log_interval;
    double longest_step;        /* the largest `time` of a train event (s/iteration) */
} progress;

static void fmt_eta(double s, char *buf, size_t len) {
    long t = s > 0 ? (long)s : 0;
    snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void on_event(progress *p, const pf_msg_event *ev) {
    if (strcmp(ev->kind, "train") == 0) {
        if (p->t_first == 0) {
            p->t_first = pf_now();
            p->iter_first = ev->iter;
        }
        p->iter = ev->iter;
        p->total = ev->total_iters;
        if (ev->time > p->longest_step && ev->time < 3600) p->longest_step = ev->time;
        p->loss = ev->loss;
        p->lr = ev->lr;
        double now = pf_now();
        int due = p->tty ? (now - p->last_draw > 0.2 || ev->iter == ev->total_iters)
                         : (ev->iter % p->log_interval == 0 || ev->iter == ev->total_iters);
        if (!due) return;
        p->last_draw = now;
        double rate = (ev->iter > p->iter_first)
                          ? (ev->iter - p->iter_first) / (now - p->t_first) : 0;
        char eta[32], evs[96] = "";
        fmt_eta(rate > 0 ? (ev->total_iters - ev->iter) / rate : 0, eta, sizeof eta);
        if (p->have_eval)
            snprintf(evs, sizeof evs, " | eval PSNR %.2f dB @%" PRId64, p->last_eval.psnr,
                     p->last_eval.iter);
        fprintf(stdout, "%s[%" PRId64 "/%" PRId64 "] %5.1f%% %.2f it/s loss %.4f lr %.2e "
                "eta %s%s%s", p->tty ? "\r" : "", ev->iter, ev->total_iters,
                100.0 * ev->iter / (ev->total_iters ? ev->total_iters : 1), rate, ev->loss,
                ev->lr, eta, evs, p->tty ? "\033[K" : "\n");
        fflush(stdout);
    } else if (strcmp(ev->kind, "eval") == 0) {
        p->have_eval = 1;
        p->last_eval = *ev;
        char note[256];
        pf_eval_event_note(note, sizeof note, ev, p->video);
        fprintf(stdout, "%seval @ iter %" PRId64 ": PSNR %.3f dB (bicubic %.3f dB, %+.3f), "
                "SSIM %.4f (bicubic %.4f)%s\n", p->tty ? "\r\033[K" : "", ev->iter, ev->psnr,
                ev->psnr_bicubic, ev->psnr - ev->psnr_bicubic, ev->ssim, ev->ssim_bicubic,
                note);
        fflush(stdout);
    } else if (strcmp(ev->kind, "error") == 0) {
        fprintf(stdout, "%serror: %s\n", p->tty ? "\r\033[K" : "", ev->text);
        fflush(stdout);
    } else if (strcmp(ev->kind, "checkpoint") == 0 && !p->tty) {
        fprintf(stdout, "checkpoint %s\n", ev->path);
        fflush(stdout);
    } else if (strcmp(ev->kind, "status") == 0 && strstr(ev->text, "reissued")) {
        fprintf(stdout, "%s%s\n", p->tty ? "\r\033[K" : "", ev->text);
        fflush(stdout);
    }
}

/* The newest complete checkpoint in work_dir: the one `latest` names (the checkpoint hook
   replaces the pointer only after both files are on disk), when its weights and optimiser
   files exist. Fills `path` and *iter and returns 1, or returns 0. */
static int newest_checkpoint(const pf_config *cfg, char *path, size_t len, int64_t *iter) {
    static pf_config probe;
    probe = *cfg;
    snprintf(probe.resume_from, sizeof probe.resume_from, "auto");
    char err[512], optim[PF_PATH_MAX + 64];
    struct stat st;
    if (pf_ckpt_resolve_resume(&probe, path, len, err, sizeof err) != 0 || !path[0] ||
        stat(path, &st) != 0)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t stem = strlen(path) - strlen(".safetensors");
    snprintf(optim, sizeof optim, "%.*s.optim.safetensors", (int)stem, path);
    char *end = NULL;
    long long it = strncmp(base, "iter_", 5) == 0 ? strtoll(base + 5, &end, 10) : -1;
    if (it < 0 || !end || strcmp(end, ".safetensors") != 0 || stat(optim, &st) != 0) return 0;
    *iter = it;
    return 1;
}

/* What an interrupted job (status 130) leaves to continue from: "with a checkpoint" only when
   the newest checkpoint on disk holds the iteration the job stopped at (that of the last
   `train` event, or later should that event have been missed); otherwise that none was
   written at the stop, and which one --resume auto would take, if any. */
static void report_stop(const pf_config *cfg, const char *cfg_path, const progress *p) {
    char path[PF_PATH_MAX + 64], at[64];
    int64_t iter = -1;
    int have = newest_checkpoint(cfg, path, sizeof path, &iter);
    int trained = p->t_first != 0;      /* at least one iteration ran */
    if (have && trained && iter >= p->iter) {
        printf("pixflow: stopped at iteration %" PRId64 " with a checkpoint (%s); continue "
               "with `pixflow train %s --resume auto`\n", iter, path, cfg_path);
        return;
    }
    if (trained) snprintf(at, sizeof at, "at iteration %" PRId64 ";", p->iter);
    else snprintf(at, sizeof at, "before its first iteration: nothing was trained, so");
    if (have) {
        printf("pixflow: stopped %s no checkpoint was written at the stop. The newest is %s "
               "(iteration %" PRId64 "): `pixflow train %s --resume auto` continues from "
               "there\n", at, path, iter, cfg_path);
    } else {
        printf("pixflow: stopped %s no checkpoint was written, and %s/checkpoints has none: "
               "a new run starts from the beginning\n", at, cfg->work_dir);
    }
}

/* --- the front end's state ------------------------------------------------------------------ */

#define STOP_SAME_S 1.0         /* signals within this of the first are the same stop */
#define STOP_KILL_AFTER_S 20.0  /* the job is killed if it has not ended this long (plus three
                                   of its longest steps) after the first signal */
#define CHILD_GRACE_S 2.0       /* after the coordinator: SIGTERM to a role still there */
#define START_TIMEOUT_S 20.0    /* the coordinator writes its address within this */
#define ADDRESS_POLL_S 0.02     /* how often the front end looks for that address */
#define WATCH_TICK_S 0.1        /* how often it reaps the job's processes while watching */

typedef struct {
    int sig;                    /* the first SIGINT/SIGTERM/SIGHUP, 0 none yet */
    double first_at;            /* pf_now() of it */
    double kill_after;          /* s after first_at: the job is killed if still there */
    int trained;                /* the job trained: 1 a train event came, 0 none came while
                                   watching, -1 not watching (unknown) */
} job_stop;

/* The front end's view of the job: a monitor's place in it and a subscription to every event. */
typedef struct {
    void *zctx;
    pf_client mon;
    void *sub;                  /* SUB on every event, NULL when not watching */
    int joined;
} watch;

/* `pixflow train`'s command line; workers and gpus resolved by job_devices. */
typedef struct {
    const char *cfg_path, *resume, *bind, *keys;
    int loaders, workers, gpus; /* -1: not given */
    char http[80];              /* --http [HOST:]PORT as HOST:PORT ("" none) */
} train_args;

/* How the loop ended. */
typedef enum {
    LOOP_FAILED,                /* the loop could not go on (out of memory) */
    NO_COORDINATOR,             /* the coordinator did not start: exit 1 at once */
    ENDED_EARLY,                /* stopping (or ended) before the roles were started */
    SPAWN_FAILED,               /* a role could not be started (err says which) */
    COORDINATOR_ENDED,          /* watched until the coordinator exited */
} loop_end;

typedef struct {
    train_args a;
    pf_config cfg;
    job j;
    child *coord;               /* j's coordinator */
    child *http;                /* --http: j's `pixflow monitor --http`, or NULL */
    job_stop stop;
    progress p;
    watch w;
    char addr_file[PF_PATH_MAX + 32];   /* where the coordinator writes its address */
    char *addr;                 /* that address, once read */
    char err[2048];             /* the last error, reported when the job ends in one */
    pf_reactor *r;              /* the loop, while it runs */
    pf_timer *address_poll;     /* starting: looks for addr_file every ADDRESS_POLL_S */
    pf_timer *start_deadline;   /* starting: gives up START_TIMEOUT_S after the spawn */
    pf_timer *kill_deadline;    /* armed by the first signal (on_stop_signal) */
    int broken;                 /* a timer could not be armed: the loop ends (LOOP_FAILED) */
    loop_end end;
} train;

/* --- stopping on a signal ------------------------------------------------------------------ */

static const char *stop_signal_name(int sig) {
    return sig == SIGINT ? "interrupted" : sig == SIGHUP ? "hung up" : "terminated";
}

/* The deadline armed by the first signal has passed: the job is killed. */
static int on_kill_deadline(pf_reactor *r, void *arg) {
    train *t = arg;
    fprintf(stderr, "\npixflow: the job did not stop within %.0f s; killing it\n",
            t->stop.kill_after);
    killpg(t->j.pgid, SIGKILL);
    pf_reactor_cancel(r, &t->kill_deadline);
    return 0;
}

/* Take the signal in pf_signalled. The first asks the coordinator for an orderly stop (the
   worker finishes its step and checkpoints, the hooks finish, every process exits) and arms
   the kill deadline. Any more within STOP_SAME_S of the first are the same request: `timeout`
   sends SIGTERM to the front end and then to its whole process group, a scheduler (Slurm,
   systemd, a container runtime) signals every process of the job, a terminal may send Ctrl-C
   to several. One that comes later is a user's second Ctrl-C: the job is killed. The deadline
   allows for three of the longest training steps seen (none before the job is watched). */
static void on_stop_signal(train *t) {
    job_stop *s = &t->stop;
    int sig = pf_signalled;
    pf_signalled = 0;
    double now = pf_now();
    if (!s->sig) {
        s->sig = sig;
        s->first_at = now;
        s->kill_after = STOP_KILL_AFTER_S + 3 * t->p.longest_step;
        t->kill_deadline = pf_reactor_after(t->r, s->kill_after, on_kill_deadline, t);
        if (!t->kill_deadline) t->broken = 1;
        fprintf(stderr, "\npixflow: %s: checkpointing and stopping (again, %.0f s or more "
                "later, to kill)\n", stop_signal_name(sig), STOP_SAME_S);
        if (!t->coord->exited) kill(t->coord->pid, SIGINT);
    } else if (now - s->first_at >= STOP_SAME_S) {
        fprintf(stderr, "\npixflow: killing the job\n");
        killpg(t->j.pgid, SIGKILL);
        pf_reactor_cancel(t->r, &t->kill_deadline);
    }
}

/* The front end's exit status: the coordinator's, but a job stopped in order (130, the
   coordinator's "interrupted") by a signal to this front end ends with 128 + that signal, as
   a shell reports a command killed by it (143 for SIGTERM), so a scheduler or `timeout
   --preserve-status` sees which signal stopped the job. */
static int stop_exit_status(const job_stop *s, int status) {
    return status == 130 && s->sig ? 128 + s->sig : status;
}

/* One line with how every process of the job ended ("coordinator 130, worker 0, ..."), after
   a job that did not simply finish. */
static void report_exits(const job *j) {
    printf("pixflow: exit statuses:");
    for (int i = 0; i < j->n; i++) {
        const child *c = &j->kids[i];
        if (!c->exited) printf(" %s running%s", c->name, i + 1 < j->n ? "," : "");
        else if (WIFEXITED(c->status))
            printf(" %s %d%s", c->name, WEXITSTATUS(c->status), i + 1 < j->n ? "," : "");
        else
            printf(" %s killed by signal %d%s", c->name, WTERMSIG(c->status),
                   i + 1 < j->n ? "," : "");
    }
    printf("\n");
}

/* Every process of the job ends by itself once the coordinator (given EXIT_GRACE_S, it is
   stopping the others) has ended: a role still there
   after CHILD_GRACE_S (one that was still starting when a stop came, waiting for a coordinator
   that has gone) gets SIGTERM, which ends any role that is not in the job; what is left
   EXIT_GRACE_S after that is killed, by name. This runs after the loop, not in it: there is
   no socket left to read and no signal to hear (the stop is under way: neither a second signal
   nor the kill deadline applies here), so it is a fixed sequence of bounded waits on waitpid. */
static void end_children(job *j, const child *coord) {
    double deadline = pf_now() + EXIT_GRACE_S;
    while (coord && !coord->exited && pf_now() < deadline) {
        reap(j, 0);
        usleep(20000);
    }
    deadline = pf_now() + CHILD_GRACE_S;
    while (reap(j, 0) > 0 && pf_now() < deadline) usleep(20000);
    if (reap(j, 0) == 0) return;
    for (int i = 0; i < j->n; i++)
        if (!j->kids[i].exited) kill(j->kids[i].pid, SIGTERM);
    deadline = pf_now() + EXIT_GRACE_S;
    while (reap(j, 0) > 0 && pf_now() < deadline) usleep(50000);
    if (reap(j, 1) > 0) {
        for (int i = 0; i < j->n; i++)
            if (!j->kids[i].exited)
                fprintf(stderr, "pixflow: %s (pid %d) did not exit; killing it\n",
                        j->kids[i].name, (int)j->kids[i].pid);
        killpg(j->pgid, SIGKILL);
        while (reap(j, 1) > 0) usleep(20000);
    }
}

/* --- watching the job ---------------------------------------------------------------------- */

/* Join the job at t->addr as a monitor and subscribe to every event. The front end does this
   before it starts the other roles, so it sees the job from its first train event, and a
   stop that came first (a refusal: the job is stopping) means nothing was trained. It tries
   for PF_JOIN_TIMEOUT_MS, 2 s at a time, while the coordinator runs. A signal ends a join
   (that is for roles that stop on one): it is taken (on_stop_signal) and the join tried
   again. Returns 1 when watching, 0 with t->err (the job goes on unwatched). */
static int watch_open(train *t) {
    watch *w = &t->w;
    w->zctx = pf_zmq_ctx_new();
    for (double until = pf_now() + PF_JOIN_TIMEOUT_MS / 1000.0; pf_now() < until;) {
        if (pf_signalled) on_stop_signal(t);
        reap(&t->j, 0);
        if (t->coord->exited) {
            snprintf(t->err, sizeof t->err, "the coordinator (pid %d) ended before it answered",
                     (int)t->coord->pid);
            break;
        }
        double t0 = pf_now();
        w->joined = pf_client_join_wait(&w->mon, w->zctx, t->addr, PF_ROLE_MONITOR,
                                        "pixflow-train", "", 2.0, 0, t->err,
                                        sizeof t->err) == 0;
        if (w->joined || w->mon.stopped_by < 0) break;
        if (!w->mon.stopped_by && pf_now() - t0 < 1.9) break;   /* refused: no use retrying */
    }
    w->sub = w->joined ? pf_events_subscribe(w->zctx, w->mon.events_sub, NULL) : NULL;
    return w->sub != NULL;
}

static void watch_close(watch *w) {
    if (w->sub) zmq_close(w->sub);
    if (w->joined) pf_client_close(&w->mon);
    if (w->zctx) pf_zmq_ctx_term(w->zctx);
    w->sub = w->zctx = NULL;
    w->joined = 0;
}

/* Every event the subscription holds, into the progress line. */
static void drain_events(train *t) {
    pf_msg_event *ev = malloc(sizeof *ev);
    char err[256];
    while (ev && pf_events_recv(t->w.sub, ZMQ_DONTWAIT, ev, err, sizeof err) == 0)
        on_event(&t->p, ev);
    free(ev);
}

/* The coordinator has ended while watched: the last events (final eval, done), how it ended
   (killed: the rest of the job gets SIGTERM) and the job's mean PSNR. Returns its exit status,
   1 when it did not exit. */
static int watch_end(train *t) {
    const progress *p = &t->p;
    const child *coord = t->coord;
    if (t->w.sub) drain_events(t);
    if (p->tty) printf("\n");
    if (t->w.sub) t->stop.trained = p->t_first != 0;
    int status = WIFEXITED(coord->status) ? WEXITSTATUS(coord->status) : 1;
    if (!WIFEXITED(coord->status)) {
        char how[128];
        describe_exit(coord->status, how, sizeof how);
        fprintf(stderr, "pixflow: coordinator (pid %d) %s; stopping the job\n",
                (int)coord->pid, how);
        killpg(t->j.pgid, SIGTERM);
    }
    if (p->have_eval) {
        const pf_msg_event *e = &p->last_eval;
        char note[256];
        pf_eval_event_note(note, sizeof note, e, p->video);
        printf("pixflow: mean PSNR-%s on %s after %" PRId64 " iterations: %s %.3f dB, "
               "bicubic %.3f dB (%+.3f dB); SSIM %.4f vs %.4f%s\n",
               t->cfg.eval_y_channel ? "Y" : "RGB", t->cfg.eval.gt_folder, e->iter,
               t->cfg.model_type, e->psnr, e->psnr_bicubic, e->psnr - e->psnr_bicubic, e->ssim,
               e->ssim_bicubic, note);
    }
    return status;
}

/* --- starting the job ---------------------------------------------------------------------- */

/* Spawn the coordinator; it writes its address to t->addr_file. Returns 0, or 1 after a
   message. */
static int spawn_coordinator(train *t) {
    const train_args *a = &t->a;
    snprintf(t->addr_file, sizeof t->addr_file, "%s/coordinator.addr", t->cfg.work_dir);
    unlink(t->addr_file);
    char *cargs[12];
    int k = 0;
    cargs[k++] = "coordinator";
    cargs[k++] = (char *)a->cfg_path;
    cargs[k++] = "--addr-file";
    cargs[k++] = t->addr_file;
    char workers_s[16];
    snprintf(workers_s, sizeof workers_s, "%d", a->workers);
    cargs[k++] = "--workers";
    cargs[k++] = workers_s;
    cargs[k++] = "--exit-with-parent";
    if (a->resume) {
        cargs[k++] = "--resume";
        cargs[k++] = (char *)a->resume;
    }
    if (a->bind) {
        cargs[k++] = "--bind";
        cargs[k++] = (char *)a->bind;
    }
    cargs[k] = NULL;
    t->coord = spawn(&t->j, "coordinator", cargs, 1, t->err, sizeof t->err);
    if (t->coord) return 0;
    fprintf(stderr, "pixflow: %s\n", t->err);
    return 1;
}

/* Spawn the workers, hooks and loaders, pointed at the coordinator's address. Returns 0, or
   -1 with t->err. */
static int spawn_roles(train *t) {
    const train_args *a = &t->a;
    job *j = &t->j;
    char *addr = t->addr, *err = t->err;
    size_t errlen = sizeof t->err;
    /* The worker's data endpoint and the checkpoint hook's endpoint bind on the interface the
       coordinator binds, so loaders from other hosts can reach them too. */
    char role_bind[PF_MAX_ENDPOINT] = "tcp://127.0.0.1:*";
    if (a->bind) {
        const char *colon = strrchr(a->bind, ':');
        int host_len = colon && colon > a->bind + 6 ? (int)(colon - a->bind)
                                                    : (int)strlen(a->bind);
        snprintf(role_bind, sizeof role_bind, "%.*s:*", host_len, a->bind);
    }
    char device[32] = "cpu";
    char *const wargs[] = { "worker", "--connect", addr, "--bind", role_bind, "--device", device,
                            NULL };
    char *const cpargs[] = { "hook", "checkpoint", "--connect", addr, "--bind", role_bind,
                             NULL };
    char instance[32];
    char *const eargs[] = { "hook", "eval", "--connect", addr, "--instance", instance, NULL };
    char *const largs[] = { "hook", "log", "--connect", addr, NULL };
    char *const vargs[] = { "hook", "visual", "--connect", addr, NULL };
    /* CPU workers of a group share the cores: each gets its share of OpenMP threads. */
    for (int i = 0; i < a->workers; i++) {
        char wname[32];
        snprintf(wname, sizeof wname, a->workers == 1 ? "worker" : "worker%d", i);
        if (a->gpus > 0) snprintf(device, sizeof device, "cuda:%d", i);
        if (!spawn(j, wname, wargs, a->workers > 1, err, errlen)) return -1;
    }
    if (!spawn(j, "checkpoint hook", cpargs, 1, err, errlen) ||
        !spawn(j, "log hook", largs, 1, err, errlen) ||
        (t->cfg.visual_interval > 0 && !spawn(j, "visual hook", vargs, 1, err, errlen)))
        return -1;
    for (int i = 0; i < t->cfg.eval_instances; i++) {
        char ename[32];
        snprintf(instance, sizeof instance, "%d/%d", i, t->cfg.eval_instances);
        snprintf(ename, sizeof ename, i ? "eval hook %d" : "eval hook", i);
        if (!spawn(j, ename, eargs, 1, err, errlen)) return -1;
    }
    for (int i = 0; i < a->loaders; i++) {
        char lname[32];
        snprintf(lname, sizeof lname, "loader%d", i + 1);
        char *const ldargs[] = { "loader", "--connect", addr, "--name", lname, NULL };
        if (!spawn(j, lname, ldargs, 1, err, errlen)) return -1;
    }
    /* --http: the dashboard is `pixflow monitor --http` on the job, one more process of it.
       Its terminal view goes to /dev/null; its stderr (where it listens, the token) is ours. */
    char *const hargs[] = { "monitor", "--connect", addr, "--http", (char *)a->http,
                            "--interval", "3600", "--exit-with-parent", NULL };
    if (a->http[0] &&
        !(t->http = spawn(j, "http monitor", hargs, SPAWN_ONE_THREAD | SPAWN_NO_STDOUT, err,
                          errlen)))
        return -1;
    printf("pixflow: coordinator %s (pid %d); processes:", addr, (int)t->coord->pid);
    for (int i = 0; i < j->n; i++) printf(" %s=%d", j->kids[i].name, (int)j->kids[i].pid);
    printf("\n");
    fflush(stdout);
    return 0;
}

/* --- the loop -------------------------------------------------------------------------------
   Two phases on one reactor. STARTING: every ADDRESS_POLL_S the front end looks for the
   coordinator's address and reaps it (quietly: it is the only process); without the address
   within START_TIMEOUT_S, or with the coordinator gone, the job fails (unless a stop is under
   way: then the coordinator exits 130 without starting anything, and that ends the loop).
   Once the address is in, start_job joins, starts the roles and turns to WATCHING: the
   subscription is a reader (the progress line), a WATCH_TICK_S tick reaps the job's processes
   (reporting any that did not end in order) until the coordinator has exited. Children are
   noticed by a timer polling waitpid(WNOHANG), as the old loops did between two polls: a
   SIGCHLD handler would only move the same waitpid into the tick. Signals go to
   on_stop_signal throughout; the first arms the kill deadline, a one-shot. */

static int end_loop(train *t, loop_end end) {
    if (end == ENDED_EARLY) t->stop.trained = 0;
    t->end = end;
    return -1;
}

static int on_job_events(pf_reactor *r, void *arg) {
    drain_events(arg);
    return 0;
}

static int on_watch_tick(pf_reactor *r, void *arg) {
    train *t = arg;
    if (t->broken) return -1;
    reap(&t->j, 0);
    return t->coord->exited ? end_loop(t, COORDINATOR_ENDED) : 0;
}

/* The address is in: join as a monitor, start the roles (unless a stop came first or the job
   refused the monitor because it is stopping), then watch. */
static int start_job(pf_reactor *r, train *t) {
    pf_reactor_cancel(r, &t->address_poll);
    pf_reactor_cancel(r, &t->start_deadline);
    if (!t->stop.sig && !watch_open(t)) {
        fprintf(stderr, "pixflow: cannot watch the job: %s\n", t->err);
        t->err[0] = '\0';
    }
    if (t->stop.sig || t->w.mon.stopped_by < 0 || t->coord->exited)
        return end_loop(t, ENDED_EARLY);
    if (spawn_roles(t) != 0) return end_loop(t, SPAWN_FAILED);
    if (t->w.sub && pf_reactor_reader(r, t->w.sub, on_job_events, t) != 0) return -1;
    return pf_reactor_every(r, WATCH_TICK_S, on_watch_tick, t) ? 0 : -1;
}

/* The coordinator has gone, or has not written its address in time: it is killed. */
static int no_coordinator(train *t) {
    char how[128];
    snprintf(how, sizeof how, "did not start within %.0f s", START_TIMEOUT_S);
    if (t->coord->exited) describe_exit(t->coord->status, how, sizeof how);
    fprintf(stderr, "pixflow: coordinator (pid %d) %s\n", (int)t->coord->pid, how);
    kill(t->coord->pid, SIGKILL);
    return end_loop(t, NO_COORDINATOR);
}

static int on_address_poll(pf_reactor *r, void *arg) {
    train *t = arg;
    struct stat st;
    if (t->broken) return -1;
    if (stat(t->addr_file, &st) == 0)
        t->addr = pf_read_file(t->addr_file, NULL, t->err, sizeof t->err);
    if (t->addr) return start_job(r, t);
    reap(&t->j, 1);
    if (t->coord->exited) return t->stop.sig ? end_loop(t, ENDED_EARLY) : no_coordinator(t);
    return 0;
}

static int on_start_deadline(pf_reactor *r, void *arg) {
    train *t = arg;
    if (t->stop.sig) return 0;  /* stopping: the kill deadline applies instead */
    reap(&t->j, 1);
    return no_coordinator(t);
}

static int on_train_signal(pf_reactor *r, void *arg) {
    if (pf_signalled) on_stop_signal(arg);     /* watch_open may have taken it already */
    return 0;
}

/* Run the loop from the coordinator's spawn until the coordinator has ended, or the job
   failed to start; t->end says how it ended. */
static void train_loop(train *t) {
    t->end = LOOP_FAILED;
    pf_reactor *r = t->r = pf_reactor_new();
    int ok = r && (t->address_poll = pf_reactor_every(r, ADDRESS_POLL_S, on_address_poll, t)) &&
             (t->start_deadline = pf_reactor_after(r, START_TIMEOUT_S, on_start_deadline, t));
    if (ok) pf_reactor_on_signal(r, on_train_signal, t);
    if (!ok || pf_reactor_run(r) != 0) t->end = LOOP_FAILED;
    if (t->end == LOOP_FAILED)
        snprintf(t->err, sizeof t->err, "the front end's loop failed (out of memory, or its "
                 "ZeroMQ context ended)");
    pf_reactor_destroy(&t->r);
    t->address_poll = t->start_deadline = t->kill_deadline = NULL;
}

/* --- before and after ---------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: pixflow train CONFIG [--resume auto|PATH] [--loaders N] "
                    "[--workers N] [--gpus N] [--bind tcp://HOST:PORT] [--keys DIR] "
                    "[--threads N] [--http [HOST:]PORT]\n");
}

/* --http [HOST:]PORT (HOST defaults to 127.0.0.1, the monitor's rules for the rest: an IPv4
   address or localhost; off loopback its requests need the token it prints) into HOST:PORT,
   and that the port is free now: a port taken is an error before anything starts, not a job
   running without its dashboard. (Taken between this check and the monitor's start, the
   monitor says so and exits; the job goes on without a server.) Returns 0, or -1 after a
   message. */
static int http_addr(const char *arg, char *out, size_t len) {
    const char *colon = strrchr(arg, ':');
    char host[64] = "127.0.0.1";
    if (colon) snprintf(host, sizeof host, "%.*s", (int)(colon - arg), arg);
    const char *port_s = colon ? colon + 1 : arg;
    char *end;
    long port = strtol(port_s, &end, 10);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    const char *ip = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (end == port_s || *end || port < 1 || port > 65535 ||
        inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fprintf(stderr, "pixflow: --http '%s': want [HOST:]PORT, HOST an IPv4 address or "
                        "localhost, PORT 1..65535\n", arg);
        return -1;
    }
    snprintf(out, len, "%s:%ld", host, port);
    /* As libmicrohttpd binds: SO_REUSEADDR, so a port in TIME_WAIT counts as free. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e = 0;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0)
        e = errno;
    if (fd >= 0) close(fd);
    if (e) {
        fprintf(stderr, "pixflow: --http %s: cannot listen there (%s); nothing was started\n",
                out, strerror(e));
        return -1;
    }
    return 0;
}

/* Parse argv into *a. Returns 0, or 2 after a message. */
static int train_parse(int argc, char **argv, train_args *a) {
    *a = (train_args){ .loaders = -1, .workers = -1, .gpus = -1 };
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc) a->resume = argv[++i];
        else if (strcmp(argv[i], "--loaders") == 0 && i + 1 < argc) {
            /* --loaders 0: every loader joins by hand (`pixflow loader --connect ADDR`, from
               any host); until one does, the coordinator says how every 10 s. */
            if (pf_arg_int(CMD, "--loaders", argv[++i], 0, 256, &a->loaders)) return 2;
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            if (pf_arg_int(CMD, "--workers", argv[++i], 1, 64, &a->workers)) return 2;
        } else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
            if (pf_arg_int(CMD, "--gpus", argv[++i], 0, 64, &a->gpus)) return 2;
        } else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) a->bind = argv[++i];
        else if (strcmp(argv[i], "--http") == 0 && i + 1 < argc) {
            if (http_addr(argv[++i], a->http, sizeof a->http) != 0) return 2;
        }
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) a->keys = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            /* compute threads of each worker and eval hook (through OMP_NUM_THREADS) */
            int threads;
            if (pf_arg_int(CMD, "--threads", argv[++i], 1, PF_MAX_THREADS, &threads)) return 2;
            pf_set_threads(threads);
        } else if (argv[i][0] != '-' && !a->cfg_path) a->cfg_path = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (a->cfg_path) return 0;
    usage();
    return 2;
}

/* One worker per visible GPU (CUDA_VISIBLE_DEVICES applies; --gpus N takes the first N,
   --gpus 0 forces the CPU), else CPU workers (--workers N, default 1). Resolves a->gpus and
   a->workers; returns 0, or 2 after a message. */
static int job_devices(train_args *a) {
    int visible = pf_gpu_count();
    if (a->gpus > visible) {
        fprintf(stderr, "pixflow: --gpus %d: only %d CUDA device%s visible\n", a->gpus,
                visible, visible == 1 ? "" : "s");
        return 2;
    }
    if (a->gpus < 0) a->gpus = a->workers > 0 ? 0 : visible;
    if (a->gpus > 0 && a->workers > 0 && a->workers != a->gpus) {
        fprintf(stderr, "pixflow: --workers %d with %d GPUs: GPU jobs run one worker per GPU\n",
                a->workers, a->gpus);
        return 2;
    }
    if (a->gpus > 0) a->workers = a->gpus;
    if (a->workers < 0) a->workers = 1;
    return 0;
}

/* Everything that can be checked before a process starts: the executable, the devices, the
   config and the data (with a line saying what will run), the job's keys. Installs the
   signal handlers first, so a signal from here on stops the job in order; one that came
   before anything started ends it here. Returns 0, or the exit status after a message. */
static int train_prepare(train *t) {
    train_args *a = &t->a;
    pf_log_set_name("pixflow");
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0) {
        fprintf(stderr, "pixflow: cannot find my own executable\n");
        return 1;
    }
    self_exe[n] = '\0';
    pf_catch_signals();
    pf_dataset train;
    pf_sampler sampler;
    int64_t total = 0;
    if (job_devices(a) != 0) return 2;
    if (pf_job_prepare(&t->cfg, a->cfg_path, a->resume, a->workers, &train, &sampler, &total,
                       t->err, sizeof t->err) != 0) {
        fprintf(stderr, "pixflow: %s\n", t->err);
        return 2;
    }
    if (pf_gan_check_backend(&t->cfg, a->gpus > 0, t->err, sizeof t->err) != 0) {
        fprintf(stderr, "pixflow: %s\n", t->err);
        pf_dataset_close(&train);
        pf_sampler_free(&sampler);
        return 2;
    }
    const pf_config *cfg = &t->cfg;
    if (a->loaders < 0) a->loaders = cfg->loaders;
    char what[96];
    if (train.video)
        snprintf(what, sizeof what, "%u frames of %d clip%s, clips of %d frames",
                 train.video->n_frames, train.video->n_clips, train.video->n_clips > 1 ? "s" : "",
                 train.frames);
    else
        snprintf(what, sizeof what, "%d training images", train.n_files);
    printf("pixflow: %s: %s x%d, %s (%u samples/epoch), %" PRId64
           " iterations, batch %d x %d %s worker%s, %d loaders, work_dir %s\n", a->cfg_path,
           cfg->model_type, cfg->scale, what, train.len, total, cfg->samples_per_gpu,
           a->workers, a->gpus > 0 ? "GPU" : "CPU", a->workers > 1 ? "s" : "", a->loaders,
           cfg->work_dir);
    if (cfg->resume_from[0]) printf("pixflow: resuming from %s\n", cfg->resume_from);
    else if (cfg->load_from[0]) {
        char names[512];
        pf_ckpt_source_names(cfg->load_from, names, sizeof names);
        printf("pixflow: weights from %s%s, starting at iteration 0\n", cfg->load_from, names);
    }
    pf_dataset_close(&train);
    pf_sampler_free(&sampler);
    /* security.curve: every process started below finds the key folder in PIXFLOW_KEYS (and
       none when CURVE is off, so a stray variable cannot make one side use CURVE alone). */
    if (pf_security_init_job(cfg->curve, cfg->keys_dir, a->keys, PF_SEC_CLIENT, t->err,
                             sizeof t->err) != 0) {
        fprintf(stderr, "pixflow: %s\n", t->err);
        return 2;
    }
    if (pf_security_on()) setenv(PF_KEYS_ENV, pf_security_dir(), 1);
    else unsetenv(PF_KEYS_ENV);
    signal(SIGPIPE, SIG_IGN);
    if (pf_signalled) {
        printf("pixflow: %s before the job started: nothing was trained, so no checkpoint "
               "was written\n", stop_signal_name(pf_signalled));
        return 128 + pf_signalled;
    }
    t->p = (progress){ .tty = isatty(STDOUT_FILENO), .log_interval = cfg->log_interval,
                       .video = pf_config_is_video_set(cfg->eval.type) };
    return 0;
}

/* After the loop: what the job left (its summary when watched to the end), every process
   ends (end_children), and what to do next. Returns the exit status. */
static int train_finish(train *t) {
    child *coord = t->coord;
    int status = t->end == COORDINATOR_ENDED ? watch_end(t) : 1;
    watch_close(&t->w);
    /* The dashboard ends with the job (it would serve the finished job until a signal);
       its exit status does not count in the job's. */
    if (t->http && !t->http->exited) kill(t->http->pid, SIGTERM);
    if (status == 1 && t->err[0] && (!coord->exited || t->end == LOOP_FAILED)) {
        fprintf(stderr, "pixflow: %s\n", t->err);
        if (!coord->exited) kill(coord->pid, SIGINT);
    }
    end_children(&t->j, coord);
    if (t->end == ENDED_EARLY && WIFEXITED(coord->status)) status = WEXITSTATUS(coord->status);
    free(t->addr);
    const char *work_dir = t->cfg.work_dir, *cfg_path = t->a.cfg_path;
    if (status != 0) report_exits(&t->j);
    if (status == 0) printf("pixflow: done; logs and checkpoints in %s\n", work_dir);
    else if (status == 130 && t->stop.trained < 0)
        printf("pixflow: stopped (not watched: see %s/checkpoints/latest); continue with "
               "`pixflow train %s --resume auto`\n", work_dir, cfg_path);
    else if (status == 130) report_stop(&t->cfg, cfg_path, &t->p);
    return stop_exit_status(&t->stop, status);
}

int pf_train_main(int argc, char **argv) {
    static train t;
    memset(&t, 0, sizeof t);
    t.stop.trained = -1;
    int rc = train_parse(argc, argv, &t.a);
    if (rc == 0) rc = train_prepare(&t);
    if (rc == 0) rc = spawn_coordinator(&t);
    if (rc != 0) return rc;
    train_loop(&t);
    return t.end == NO_COORDINATOR ? 1 : train_finish(&t);
}
