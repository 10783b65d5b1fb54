/*  A stop by SIGTERM never loses work.

    `pixflow train` runs a tiny job (EDSR 8 features, 1 block, batches of 4 16 x 16 patches,
    a checkpoint every 5 iterations, 100000 iterations so it never ends by itself) with the
    front end in a process group of its own, as `timeout` and a shell's job control start it.
    At a pseudo-random moment (the seed is printed; PF_SIGTERM_SEED and PF_SIGTERM_RUNS change
    it and the number of runs, PF_SIGTERM_KEEP=1 keeps every output) the test sends SIGTERM the
    way one of these does:

      timeout    coreutils `timeout -s TERM`: kill(front end), then kill(its group): the front
                 end gets SIGTERM twice, here 0 to 0.3 s apart (on a busy host `timeout` may
                 not run for that long between the two);
      every      Slurm, systemd, a container runtime: every process of the job (the front end's
                 group and the job's own group, which the front end made for its children);
      job        only the job's group (coordinator, worker, hooks, loaders), not the front end;
      front      `kill PID` of the front end alone.

    Most moments fall while the job trains (0 to 1.5 s after the first batch was consumed, so
    in a step, a data wait, an interval checkpoint, or an event); one run in five falls in the
    first 0.8 s after the start (configuration, spawning, joining), and one in four runs has 2
    workers (a Gloo group, whose ranks stop after the same step). Each time:

      - the front end exits on its own within 30 s, with 128 + 15 (130 for `job`: the front end
        was not signalled, the coordinator's interrupt status), or, signalled within the first
        milliseconds, is killed by it before its handler is there, having started nothing;
      - no process was killed: the front end's report of its children names no signal and no
        kill, and nothing of the job's group is left;
      - when the worker consumed n > 0 batches, checkpoints/latest names iter_n.safetensors and
        both files say iteration n in their metadata; when it consumed none, there is no
        checkpoint and the front end said that nothing was trained.

    Then one job of 120 iterations is stopped (`every`) at a random iteration between 5 and 40
    and resumed with `--resume auto`: its batches, learning rates and losses equal an
    uninterrupted run's, iteration by iteration. Last, a user's second Ctrl-C still kills: with
    the worker held (SIGSTOP) so that the stop cannot end, a second SIGINT 1.2 s after the first
    makes the front end kill the job at once, and nothing is left.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rng.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define RUNS_DEFAULT 24
#define RESUME_ITERS 120
#define TRAIN_WINDOW_S 1.5      /* signals fall this long after the first batch at most */
#define STARTUP_WINDOW_S 0.8    /* ... or this long after the start */
#define STOP_LIMIT_S 30.0       /* the front end must have exited this long after the signal */

static char root[256], bin[1024], train_dir[300];

typedef enum { M_TIMEOUT, M_EVERY, M_JOB, M_FRONT } mode;
static const char *mode_names[] = { "timeout", "every", "job", "front" };

/* The tiny job (write_tiny_config_every: EDSR 8 features, 1 block, batches of 4 16 x 16
   patches, 2 loaders by default), `total` iterations, a checkpoint every `ckpt_every`. */
static void write_config(const char *path, const char *work_dir, int total, int ckpt_every) {
    write_tiny_config_every(path, train_dir, work_dir, 3, total, ckpt_every);
}

/* Start `pixflow train cfg [--workers N] [--resume auto]` as the leader of a new process group
   (as `timeout` and job control start a command), output to `out`. */
static void start_leader(run *r, const char *out, const char *cfg, int workers, int resume) {
    char wn[16];
    snprintf(wn, sizeof wn, "%d", workers);
    char *argv[] = { bin, "train", (char *)cfg, "--workers", wn, resume ? "--resume" : NULL,
                     "auto", NULL };
    snprintf(r->out, sizeof r->out, "%s", out);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    int rc = posix_spawn(&r->pid, bin, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        fprintf(stderr, "cannot start %s: %s\n", bin, strerror(rc));
        exit(1);
    }
}

/* Wait up to timeout_s for the front end; its wait status, or -1 (then it and its group are
   killed). */
static int wait_front(run *r, double timeout_s) {
    int st;
    for (double end = pf_now() + timeout_s; pf_now() < end; usleep(10000))
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) return st;
    kill(-r->pid, SIGKILL);
    waitpid(r->pid, &st, 0);
    return -1;
}

/* The process group the front end made for the job (its first child's), or 0 before it has a
   child. */
static pid_t job_group(pid_t front) {
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)front, (int)front);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
    fclose(f);
    pid_t child = (pid_t)atoi(buf);
    pid_t g = child > 0 ? getpgid(child) : -1;
    return g > 0 && g != getpgid(front) ? g : 0;
}

/* Send SIGTERM as `m` does; `gap` seconds between timeout's two signals. */
static void send_term(mode m, pid_t front, pid_t job, double gap) {
    switch (m) {
    case M_TIMEOUT:             /* coreutils timeout.c, cleanup(): the child, then the group */
        kill(front, SIGTERM);
        usleep((useconds_t)(gap * 1e6));
        kill(-front, SIGTERM);
        break;
    case M_EVERY:
        if (job) kill(-job, SIGTERM);
        kill(-front, SIGTERM);
        break;
    case M_JOB:
        kill(-job, SIGTERM);
        break;
    case M_FRONT:
        kill(front, SIGTERM);
        break;
    }
}

/* The value of metadata `key` of safetensors file `path`, or -1. */
static long long meta_iter(const char *path) {
    pf_safetensors *st = NULL;
    char err[256];
    if (pf_safetensors_load(path, &st, err, sizeof err) != 0) return -1;
    const char *v = pf_safetensors_meta(st, "iter");
    long long it = v ? atoll(v) : -1;
    pf_safetensors_free(&st);
    return it;
}

/* One stop. Returns 1 when it kept its checkpoint (or had nothing to keep), 0 when work was
   lost; the checks are recorded either way. */
static int one_stop(int i, pf_rng *rng) {
    char tag[64], wd[600], cfg[600], out[600], path[700], err[256];
    int workers = pf_rng_below(rng, 4) == 0 ? 2 : 1;
    int early = pf_rng_below(rng, 5) == 0;
    mode m = (mode)pf_rng_below(rng, 4);
    double delay = pf_rng_uniform(rng) * (early ? STARTUP_WINDOW_S : TRAIN_WINDOW_S);
    double gap = 0.3 * pf_rng_uniform(rng);
    snprintf(tag, sizeof tag, "run%02d", i);
    snprintf(wd, sizeof wd, "%s/work_%s", root, tag);
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    write_config(cfg, wd, 100000, 5);
    run r;
    double t0 = pf_now();
    start_leader(&r, out, cfg, workers, 0);
    if (!early) {
        if (!wait_lines(wd, 1, 60)) {
            CHECK(0, "%s: no batch consumed within 60 s (see %s)", tag, out);
            kill(-r.pid, SIGKILL);
            finish(&r, 10);
            return 0;
        }
    }
    double t_base = pf_now();
    while (pf_now() < t_base + delay) usleep(2000);
    pid_t job = job_group(r.pid);
    if (m == M_JOB && !job) m = M_FRONT;   /* too early: nothing spawned yet */
    double t_sig = pf_now();
    send_term(m, r.pid, job, gap);
    int raw = wait_front(&r, STOP_LIMIT_S);
    int st = raw < 0 ? -1 : WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
    double took = pf_now() - t_sig;
    if (!job) job = (pid_t)pid_of(out, "coordinator");
    if (!job && raw >= 0 && WIFSIGNALED(raw) && WTERMSIG(raw) == SIGTERM) {
        /* Before `pixflow train` had its handler (while the dynamic loader ran): nothing had
           started, so nothing was lost. */
        printf("%s: %-7s SIGTERM %.3f s after the start killed the front end before it ran: "
               "nothing had started\n", tag, mode_names[m], delay);
        return 1;
    }
    snprintf(path, sizeof path, "%s/samples_rank0.log", wd);
    int n = count_lines(path);
    char *text = slurp(out);
    int want = m == M_JOB ? 130 : 128 + SIGTERM;
    CHECK(st == want, "%s (%s, %d worker%s, %s %.3f s): the front end exited with %d, "
          "expected %d (see %s)", tag, mode_names[m], workers, workers > 1 ? "s" : "",
          early ? "start +" : "first batch +", delay, st, want, out);
    CHECK(!strstr(text, "killed by signal") && !strstr(text, "killing"),
          "%s (%s): a process was killed (see %s)", tag, mode_names[m], out);
    CHECK(!job || (kill(-job, 0) != 0 && errno == ESRCH),
          "%s (%s): processes of the job's group %d are left", tag, mode_names[m], (int)job);
    if (job) kill(-job, SIGKILL);
    int kept = 1;
    snprintf(path, sizeof path, "%s/checkpoints/latest", wd);
    char *latest = pf_read_file(path, NULL, err, sizeof err);
    if (n > 0) {
        char want_name[64];
        snprintf(want_name, sizeof want_name, "iter_%d.safetensors\n", n);
        kept = latest && strcmp(latest, want_name) == 0;
        CHECK(kept, "%s (%s, %d worker%s): %d batches consumed but checkpoints/latest is %s "
              "(see %s)", tag, mode_names[m], workers, workers > 1 ? "s" : "", n,
              latest ? latest : "missing", out);
        if (kept) {
            snprintf(path, sizeof path, "%s/checkpoints/iter_%d.safetensors", wd, n);
            long long a = meta_iter(path);
            snprintf(path, sizeof path, "%s/checkpoints/iter_%d.optim.safetensors", wd, n);
            long long b = meta_iter(path);
            CHECK(a == n && b == n, "%s: the checkpoint files say iterations %lld and %lld, "
                  "expected %d", tag, a, b, n);
        }
    } else {
        CHECK(latest == NULL, "%s: no batch consumed but checkpoints/latest is %s", tag, latest);
        CHECK(strstr(text, "nothing was trained"), "%s (%s, start + %.3f s): stopped before "
              "training but the front end does not say so (see %s)", tag, mode_names[m], delay,
              out);
    }
    printf("%s: %-7s %d worker%s, %s + %.3f s: stopped at iteration %d, exit %d, %.1f s after "
           "the signal (%.1f s in all)%s\n", tag, mode_names[m], workers, workers > 1 ? "s" : " ",
           early ? "start" : "first batch", delay, n, st, took, pf_now() - t0,
           kept ? "" : "  LOST");
    fflush(stdout);
    free(latest);
    free(text);
    if (kept && st == want && !getenv("PF_SIGTERM_KEEP")) remove_tree(wd);
    return kept;
}

/* Stopped at a random iteration and resumed: the same batches, learning rates and losses as
   an uninterrupted run. */
static void stop_and_resume(pf_rng *rng) {
    char ref[600], wd[600], cfg[600], out[600], path[700], err[256];
    snprintf(ref, sizeof ref, "%s/work_reference", root);
    snprintf(cfg, sizeof cfg, "%s/reference.yaml", root);
    snprintf(out, sizeof out, "%s/reference.out", root);
    write_config(cfg, ref, RESUME_ITERS, 1000);
    run r;
    start_leader(&r, out, cfg, 1, 0);
    int st = finish(&r, 300);
    CHECK(st == 0, "reference run exited with %d (see %s)", st, out);

    snprintf(wd, sizeof wd, "%s/work_resumed", root);
    snprintf(cfg, sizeof cfg, "%s/resumed.yaml", root);
    snprintf(out, sizeof out, "%s/stopped.out", root);
    write_config(cfg, wd, RESUME_ITERS, 1000);
    int at = 5 + (int)pf_rng_below(rng, 36);
    start_leader(&r, out, cfg, 1, 0);
    CHECK(wait_lines(wd, at, 120), "stop-and-resume: iteration %d not reached", at);
    send_term(M_EVERY, r.pid, job_group(r.pid), 0);
    st = finish(&r, STOP_LIMIT_S);
    CHECK(st == 128 + SIGTERM, "stop-and-resume: the stopped run exited with %d (see %s)", st,
          out);
    snprintf(path, sizeof path, "%s/checkpoints/latest", wd);
    char *latest = pf_read_file(path, NULL, err, sizeof err);
    int k = latest ? atoi(latest + 5) : -1;
    free(latest);
    CHECK(k >= at && k < RESUME_ITERS, "stop-and-resume: checkpoint at iteration %d (signal "
          "after %d)", k, at);
    snprintf(out, sizeof out, "%s/resumed.out", root);
    start_leader(&r, out, cfg, 1, 1);
    st = finish(&r, 300);
    CHECK(st == 0, "stop-and-resume: the resumed run exited with %d (see %s)", st, out);
    check_same_batches(ref, wd, 1, "stop-and-resume");
    int diff = curve_diffs(ref, wd, (k > 0 ? k : 0) + 1, RESUME_ITERS, "stop-and-resume");
    CHECK(diff == 0, "stop-and-resume: %d iterations after %d differ from the uninterrupted run",
          diff, k);
    printf("stop-and-resume: SIGTERM after iteration %d, checkpoint %d, resumed to %d: losses "
           "%s the uninterrupted run's\n", at, k, RESUME_ITERS, diff ? "differ from" : "equal");
}

/* Ctrl-C, and again 1.2 s later while the stop cannot finish (the worker is stopped): the
   front end kills the job at once. */
static void second_signal_kills(void) {
    char wd[600], cfg[600], out[600];
    snprintf(wd, sizeof wd, "%s/work_killed", root);
    snprintf(cfg, sizeof cfg, "%s/killed.yaml", root);
    snprintf(out, sizeof out, "%s/killed.out", root);
    write_config(cfg, wd, 100000, 1000);
    run r;
    start_leader(&r, out, cfg, 1, 0);
    CHECK(wait_lines(wd, 1, 60), "second signal: no batch consumed within 60 s");
    pid_t worker = pid_of(out, "worker"), job = job_group(r.pid);
    CHECK(worker > 0 && job > 0, "second signal: no worker pid (%d) or job group (%d)",
          (int)worker, (int)job);
    if (worker > 0) kill(worker, SIGSTOP);
    kill(r.pid, SIGINT);
    usleep(1200000);
    double t = pf_now();
    kill(r.pid, SIGINT);
    int raw = wait_front(&r, STOP_LIMIT_S);
    double took = pf_now() - t;
    char *text = slurp(out);
    CHECK(raw >= 0 && WIFEXITED(raw) && WEXITSTATUS(raw) != 0 && WEXITSTATUS(raw) != 130,
          "second signal: the front end ended with wait status %d (see %s)", raw, out);
    CHECK(strstr(text, "killing the job") && strstr(text, "killed by signal 9"),
          "second signal: the front end did not kill the job (see %s)", out);
    CHECK(took < 5, "second signal: the front end took %.1f s to end after it", took);
    CHECK(job <= 0 || (kill(-job, 0) != 0 && errno == ESRCH),
          "second signal: processes of the job's group %d are left", (int)job);
    if (job > 0) kill(-job, SIGKILL);
    printf("second signal: 1.2 s after the first, the job was killed; the front end ended %.1f s "
           "later\n", took);
    free(text);
}

int main(void) {
    pf_test_job_begin("sigterm", bin, sizeof bin, root, sizeof root);
    snprintf(train_dir, sizeof train_dir, "%s/train", root);
    make_images(train_dir, 8, 48, 5);
    setenv("OMP_NUM_THREADS", "1", 1);
    const char *s = getenv("PF_SIGTERM_SEED"), *nr = getenv("PF_SIGTERM_RUNS");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 20261201;
    int runs = nr ? atoi(nr) : RUNS_DEFAULT;
    printf("test_sigterm: seed %llu (PF_SIGTERM_SEED), %d runs (PF_SIGTERM_RUNS)\n",
           (unsigned long long)seed, runs);
    pf_rng rng = pf_rng_make(seed, 0, 0);
    int lost = 0;
    for (int i = 0; i < runs; i++) lost += !one_stop(i, &rng);
    printf("test_sigterm: %d of %d stops lost the checkpoint\n", lost, runs);
    stop_and_resume(&rng);
    second_signal_kills();
    if (getenv("PF_SIGTERM_KEEP")) {
        printf("outputs kept in %s\n", root);
        return pf_test_end("test_sigterm");
    }
    return pf_test_job_end("test_sigterm", root);
}
