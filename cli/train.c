/*  train — `pixflow train CONFIG`: the front end that runs a whole job on this host.

    It validates the config and the data before anything starts, then spawns the coordinator,
    the worker, `data.loaders` loaders and the checkpoint, eval and log hooks as separate
    processes (posix_spawn of this same executable, all in one new process group so the
    terminal's Ctrl-C reaches only the front end). It joins the job as a monitor, shows one live
    progress line from the events, and reports any process that dies. Ctrl-C, SIGTERM or
    SIGHUP asks the coordinator for an orderly stop (checkpoint, then exit; see on_stop_signal);
    a second one, 1 s or more after the first, kills the group. Its exit status is the
    coordinator's, except that a stop this front end was signalled for exits 128 + the signal.
*/
#include "cli/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/checkpoint.h"
#include "common/log.h"
#include "common/number.h"
#include "common/util.h"
#include "coordinator/coordinator.h"
#include "nn/model.h"
#include "proto/client.h"
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

/* Spawn `pixflow ARGS...` into the job's process group. `single_thread`: give it one OpenMP
   thread unless the user set OMP_NUM_THREADS. Returns the child or NULL with err. */
static child *spawn(job *j, const char *name, char *const args[], int single_thread, char *err,
                    size_t errlen) {
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
    pid_t pid;
    int rc = posix_spawn(&pid, self_exe, NULL, &attr, argv, env);
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
        fprintf(stdout, "%seval @ iter %" PRId64 ": PSNR %.3f dB (bicubic %.3f dB, %+.3f), "
                "SSIM %.4f (bicubic %.4f)%s\n", p->tty ? "\r\033[K" : "", ev->iter, ev->psnr,
                ev->psnr_bicubic, ev->psnr - ev->psnr_bicubic, ev->ssim, ev->ssim_bicubic,
                "");
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

/* --- stopping on a signal ------------------------------------------------------------------ */

#define STOP_SAME_S 1.0         /* signals within this of the first are the same stop */
#define STOP_KILL_AFTER_S 20.0  /* the job is killed if it has not ended this long (plus three
                                   of its longest steps) after the first signal */
#define CHILD_GRACE_S 2.0       /* after the coordinator: SIGTERM to a role still there */

typedef struct {
    int sig;                    /* the first SIGINT/SIGTERM/SIGHUP, 0 none yet */
    double first_at;            /* pf_now() of it */
    double kill_at;             /* kill the job if it is still there then; 0 = no deadline */
    int trained;                /* the job trained: 1 a train event came, 0 none came while
                                   watching, -1 not watching (unknown) */
} job_stop;

static const char *stop_signal_name(int sig) {
    return sig == SIGINT ? "interrupted" : sig == SIGHUP ? "hung up" : "terminated";
}

/* Take the signal in pf_signalled. The first asks the coordinator for an orderly stop (the
   worker finishes its step and checkpoints, the hooks finish, every process exits) and arms
   the kill deadline. Any more within STOP_SAME_S of the first are the same request: `timeout`
   sends SIGTERM to the front end and then to its whole process group, a scheduler (Slurm,
   systemd, a container runtime) signals every process of the job, a terminal may send Ctrl-C
   to several. One that comes later is a user's second Ctrl-C: the job is killed.
   `longest_step`: the longest training step seen, in seconds. */
static void on_stop_signal(job *j, child *coord, job_stop *s, double longest_step) {
    int sig = pf_signalled;
    pf_signalled = 0;
    double now = pf_now();
    if (!s->sig) {
        s->sig = sig;
        s->first_at = now;
        s->kill_at = now + STOP_KILL_AFTER_S + 3 * longest_step;
        fprintf(stderr, "\npixflow: %s: checkpointing and stopping (again, %.0f s or more "
                "later, to kill)\n", stop_signal_name(sig), STOP_SAME_S);
        if (!coord->exited) kill(coord->pid, SIGINT);
    } else if (now - s->first_at >= STOP_SAME_S) {
        fprintf(stderr, "\npixflow: killing the job\n");
        killpg(j->pgid, SIGKILL);
        s->kill_at = 0;
    }
}

/* The deadline armed by the first signal: past it, the job is killed. */
static void check_stop_deadline(job *j, job_stop *s) {
    if (!s->kill_at || pf_now() < s->kill_at) return;
    fprintf(stderr, "\npixflow: the job did not stop within %.0f s; killing it\n",
            s->kill_at - s->first_at);
    killpg(j->pgid, SIGKILL);
    s->kill_at = 0;
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
   EXIT_GRACE_S after that is killed, by name. */
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

/* The front end's view of the job: a monitor's place in it and a subscription to every event. */
typedef struct {
    void *zctx;
    pf_client mon;
    void *sub;                  /* SUB on every event, NULL when not watching */
    int joined;
} watch;

/* Join the job at `addr` as a monitor and subscribe to every event. The front end does this
   before it starts the other roles, so it sees the job from its first train event, and a
   stop that came first (a refusal: the job is stopping) means nothing was trained. It tries
   for PF_JOIN_TIMEOUT_MS, 2 s at a time, while the coordinator runs. A signal ends a join
   (that is for roles that stop on one): it is taken (on_stop_signal) and the join tried
   again. Returns 1 when watching, 0 with err (the job goes on unwatched). */
static int watch_open(watch *w, const char *addr, job *j, child *coord, job_stop *s, char *err,
                      size_t errlen) {
    w->zctx = pf_zmq_ctx_new();
    for (double until = pf_now() + PF_JOIN_TIMEOUT_MS / 1000.0; pf_now() < until;) {
        if (pf_signalled) on_stop_signal(j, coord, s, 0);
        reap(j, 0);
        if (coord->exited) {
            snprintf(err, errlen, "the coordinator (pid %d) ended before it answered",
                     (int)coord->pid);
            break;
        }
        double t0 = pf_now();
        w->joined = pf_client_join_wait(&w->mon, w->zctx, addr, PF_ROLE_MONITOR,
                                        "pixflow-train", "", 2.0, 0, err, errlen) == 0;
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

static void usage(void) {
    fprintf(stderr, "usage: pixflow train CONFIG [--resume auto|PATH] [--loaders N] "
                    "[--workers N] [--gpus N] [--bind tcp://HOST:PORT] [--keys DIR] "
                    "[--threads N]\n");
}

int pf_train_main(int argc, char **argv) {
    const char *cfg_path = NULL, *resume = NULL, *bind = NULL, *keys = NULL;
    int loaders = -1, workers = -1, gpus = -1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc) resume = argv[++i];
        else if (strcmp(argv[i], "--loaders") == 0 && i + 1 < argc) {
            /* --loaders 0: every loader joins by hand (`pixflow loader --connect ADDR`, from
               any host); until one does, the coordinator says how every 10 s. */
            if (pf_arg_int(CMD, "--loaders", argv[++i], 0, 256, &loaders)) return 2;
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            if (pf_arg_int(CMD, "--workers", argv[++i], 1, 64, &workers)) return 2;
        } else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
            if (pf_arg_int(CMD, "--gpus", argv[++i], 0, 64, &gpus)) return 2;
        } else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) keys = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            /* compute threads of each worker and eval hook (through OMP_NUM_THREADS) */
            int threads;
            if (pf_arg_int(CMD, "--threads", argv[++i], 1, PF_MAX_THREADS, &threads)) return 2;
            pf_set_threads(threads);
        } else if (argv[i][0] != '-' && !cfg_path) cfg_path = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!cfg_path) {
        usage();
        return 2;
    }
    pf_log_set_name("pixflow");
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0) {
        fprintf(stderr, "pixflow: cannot find my own executable\n");
        return 1;
    }
    self_exe[n] = '\0';
    /* A signal from here on stops the job in order (on_stop_signal). */
    pf_catch_signals();
    /* 1. Everything that can be checked before a process starts. */
    static pf_config cfg;
    pf_dataset train;
    pf_sampler sampler;
    int64_t total = 0;
    char err[2048] = "";
    /* One worker per visible GPU (CUDA_VISIBLE_DEVICES applies; --gpus N takes the first N,
       --gpus 0 forces the CPU), else CPU workers (--workers N, default 1). */
    int visible = pf_gpu_count();
    if (gpus > visible) {
        fprintf(stderr, "pixflow: --gpus %d: only %d CUDA device%s visible\n", gpus, visible,
                visible == 1 ? "" : "s");
        return 2;
    }
    if (gpus < 0) gpus = workers > 0 ? 0 : visible;
    if (gpus > 0 && workers > 0 && workers != gpus) {
        fprintf(stderr, "pixflow: --workers %d with %d GPUs: GPU jobs run one worker per GPU\n",
                workers, gpus);
        return 2;
    }
    if (gpus > 0) workers = gpus;
    if (workers < 0) workers = 1;
    if (pf_job_prepare(&cfg, cfg_path, resume, workers, &train, &sampler, &total, err,
                       sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    if (loaders < 0) loaders = cfg.loaders;
    printf("pixflow: %s: %s x%d, %d training images (%u samples/epoch), %" PRId64
           " iterations, batch %d x %d %s worker%s, %d loaders, work_dir %s\n", cfg_path,
           cfg.model_type, cfg.scale, train.n_files, train.len, total, cfg.samples_per_gpu,
           workers, gpus > 0 ? "GPU" : "CPU", workers > 1 ? "s" : "", loaders, cfg.work_dir);
    if (cfg.resume_from[0]) printf("pixflow: resuming from %s\n", cfg.resume_from);
    else if (cfg.load_from[0]) printf("pixflow: weights from %s, starting at iteration 0\n",
                                      cfg.load_from);
    pf_dataset_close(&train);
    pf_sampler_free(&sampler);

    /* security.curve: every process started below finds the key folder in PIXFLOW_KEYS (and
       none when CURVE is off, so a stray variable cannot make one side use CURVE alone). */
    if (pf_security_init_job(cfg.curve, cfg.keys_dir, keys, PF_SEC_CLIENT, err,
                             sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    if (pf_security_on()) setenv(PF_KEYS_ENV, pf_security_dir(), 1);
    else unsetenv(PF_KEYS_ENV);

    /* 2. The coordinator, then everyone else pointed at it. */
    signal(SIGPIPE, SIG_IGN);
    if (pf_signalled) {
        printf("pixflow: %s before the job started: nothing was trained, so no checkpoint "
               "was written\n", stop_signal_name(pf_signalled));
        return 128 + pf_signalled;
    }
    job j = { .n = 0, .pgid = 0 };
    job_stop stop = { .trained = -1 };
    char addr_file[PF_PATH_MAX + 32];
    snprintf(addr_file, sizeof addr_file, "%s/coordinator.addr", cfg.work_dir);
    unlink(addr_file);
    char *cargs[12];
    int k = 0;
    cargs[k++] = "coordinator";
    cargs[k++] = (char *)cfg_path;
    cargs[k++] = "--addr-file";
    cargs[k++] = addr_file;
    char workers_s[16];
    snprintf(workers_s, sizeof workers_s, "%d", workers);
    cargs[k++] = "--workers";
    cargs[k++] = workers_s;
    cargs[k++] = "--exit-with-parent";
    if (resume) {
        cargs[k++] = "--resume";
        cargs[k++] = (char *)resume;
    }
    if (bind) {
        cargs[k++] = "--bind";
        cargs[k++] = (char *)bind;
    }
    cargs[k] = NULL;
    child *coord = spawn(&j, "coordinator", cargs, 1, err, sizeof err);
    if (!coord) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 1;
    }
    char *addr = NULL;
    double deadline = pf_now() + 20.0;
    while (!addr) {
        struct stat st;
        if (stat(addr_file, &st) == 0) addr = pf_read_file(addr_file, NULL, err, sizeof err);
        if (addr) break;
        reap(&j, 1);
        if (pf_signalled) on_stop_signal(&j, coord, &stop, 0);
        if (stop.sig) {     /* stopping: it exits (130) without starting anything */
            check_stop_deadline(&j, &stop);
            if (coord->exited) break;
        } else if (coord->exited || pf_now() > deadline) {
            char how[128] = "did not start within 20 s";
            if (coord->exited) describe_exit(coord->status, how, sizeof how);
            fprintf(stderr, "pixflow: coordinator (pid %d) %s\n", (int)coord->pid, how);
            kill(coord->pid, SIGKILL);
            return 1;
        }
        usleep(20000);
    }
    progress p = { .tty = isatty(STDOUT_FILENO), .log_interval = cfg.log_interval };
    int status = 1, early = 0;     /* early: the job ended before its roles were started */
    static watch w;
    if (!stop.sig && !watch_open(&w, addr, &j, coord, &stop, err, sizeof err)) {
        fprintf(stderr, "pixflow: cannot watch the job: %s\n", err);
        err[0] = '\0';
    }
    if (stop.sig || w.mon.stopped_by < 0 || coord->exited) {
        /* stopping (or ended) before any role but the coordinator started: start nothing */
        stop.trained = 0;
        early = 1;
        goto kill_all;
    }
    /* The worker's data endpoint and the checkpoint hook's endpoint bind on the interface the
       coordinator binds, so loaders from other hosts can reach them too. */
    char role_bind[PF_MAX_ENDPOINT] = "tcp://127.0.0.1:*";
    if (bind) {
        const char *colon = strrchr(bind, ':');
        int host_len = colon && colon > bind + 6 ? (int)(colon - bind) : (int)strlen(bind);
        snprintf(role_bind, sizeof role_bind, "%.*s:*", host_len, bind);
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
    for (int i = 0; i < workers; i++) {
        char wname[32];
        snprintf(wname, sizeof wname, workers == 1 ? "worker" : "worker%d", i);
        if (gpus > 0) snprintf(device, sizeof device, "cuda:%d", i);
        if (!spawn(&j, wname, wargs, workers > 1, err, sizeof err)) goto kill_all;
    }
    if (!spawn(&j, "checkpoint hook", cpargs, 1, err, sizeof err) ||
        !spawn(&j, "log hook", largs, 1, err, sizeof err) ||
        (cfg.visual_interval > 0 && !spawn(&j, "visual hook", vargs, 1, err, sizeof err)))
        goto kill_all;
    for (int i = 0; i < cfg.eval_instances; i++) {
        char ename[32];
        snprintf(instance, sizeof instance, "%d/%d", i, cfg.eval_instances);
        snprintf(ename, sizeof ename, i ? "eval hook %d" : "eval hook", i);
        if (!spawn(&j, ename, eargs, 1, err, sizeof err)) goto kill_all;
    }
    for (int i = 0; i < loaders; i++) {
        char lname[32], *largv[6];
        snprintf(lname, sizeof lname, "loader%d", i + 1);
        largv[0] = "loader";
        largv[1] = "--connect";
        largv[2] = addr;
        largv[3] = "--name";
        largv[4] = lname;
        largv[5] = NULL;
        if (!spawn(&j, lname, largv, 1, err, sizeof err)) goto kill_all;
    }
    printf("pixflow: coordinator %s (pid %d); processes:", addr, (int)coord->pid);
    for (int i = 0; i < j.n; i++) printf(" %s=%d", j.kids[i].name, (int)j.kids[i].pid);
    printf("\n");
    fflush(stdout);

    /* 3. Watch the job. */
    {
        void *sub = w.sub;
        while (!coord->exited) {
            check_stop_deadline(&j, &stop);
            if (pf_signalled) on_stop_signal(&j, coord, &stop, p.longest_step);
            if (sub) {
                zmq_pollitem_t it = { sub, 0, ZMQ_POLLIN, 0 };
                if (zmq_poll(&it, 1, 100) > 0) {
                    pf_msg_event *ev = malloc(sizeof *ev);
                    char e2[256];
                    while (ev && pf_events_recv(sub, ZMQ_DONTWAIT, ev, e2, sizeof e2) == 0)
                        on_event(&p, ev);
                    free(ev);
                }
            } else {
                usleep(100000);
            }
            reap(&j, 0);
        }
        if (sub) {  /* the last events (final eval, done) */
            pf_msg_event *ev = malloc(sizeof *ev);
            char e2[256];
            while (ev && pf_events_recv(sub, ZMQ_DONTWAIT, ev, e2, sizeof e2) == 0)
                on_event(&p, ev);
            free(ev);
        }
        if (p.tty) printf("\n");
        if (sub) stop.trained = p.t_first != 0;
        status = WIFEXITED(coord->status) ? WEXITSTATUS(coord->status) : 1;
        if (!WIFEXITED(coord->status)) {
            char how[128];
            describe_exit(coord->status, how, sizeof how);
            fprintf(stderr, "pixflow: coordinator (pid %d) %s; stopping the job\n",
                    (int)coord->pid, how);
            killpg(j.pgid, SIGTERM);
        }
        if (p.have_eval) {
            const pf_msg_event *e = &p.last_eval;
            printf("pixflow: mean PSNR-%s on %s after %" PRId64 " iterations: %s %.3f dB, "
                   "bicubic %.3f dB (%+.3f dB); SSIM %.4f vs %.4f\n",
                   cfg.eval_y_channel ? "Y" : "RGB", cfg.eval.gt_folder, e->iter,
                   cfg.model_type, e->psnr, e->psnr_bicubic, e->psnr - e->psnr_bicubic, e->ssim,
                   e->ssim_bicubic);
        }
    }
kill_all:
    watch_close(&w);
    if (status == 1 && err[0] && !coord->exited) {
        fprintf(stderr, "pixflow: %s\n", err);
        kill(coord->pid, SIGINT);
    }
    /* 4. Every process of the job ends by itself, or is killed (end_children). */
    end_children(&j, coord);
    if (early && WIFEXITED(coord->status)) status = WEXITSTATUS(coord->status);
    free(addr);
    if (status != 0) report_exits(&j);
    if (status == 0) printf("pixflow: done; logs and checkpoints in %s\n", cfg.work_dir);
    else if (status == 130 && stop.trained < 0)
        printf("pixflow: stopped (not watched: see %s/checkpoints/latest); continue with "
               "`pixflow train %s --resume auto`\n", cfg.work_dir, cfg_path);
    else if (status == 130) report_stop(&cfg, cfg_path, &p);
    return stop_exit_status(&stop, status);
}
