/*  Two hosts, simulated with two Linux network namespaces joined by a veth pair:
    host A (10.201.0.1) runs `pixflow train CFG --loaders 0 --bind tcp://10.201.0.1:7100`
    (coordinator, worker and hooks), host B (10.201.0.2) runs the only loader,
    `pixflow loader --connect tcp://10.201.0.1:7100`, which joins over TCP and PUSHes every batch
    across the link to the worker's data endpoint.

    Checks: every TCP socket the job listens on in A (coordinator ctrl and events, the worker's
    data endpoint, the checkpoint hook's endpoint) is bound to 10.201.0.1, none to 127.0.0.1 or a
    wildcard, and accepts a connection from B; the job finishes; every batch came from B's
    loader; and the batches (sample ids and pixel digests of every iteration) equal those of a
    single-host run of the same config, each epoch's samples exactly once.

    Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for `ip netns`); without it, or without `ip`,
    it says why and exits 77, which ctest reports as skipped. The namespaces, and every process
    in them, are removed at exit, on SIGINT/SIGTERM/SIGHUP, and (left over by a run that was
    killed) at the start of the next run.
*/
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define REPEAT 6
#define TOTAL_ITERS 96
#define IPE (8 * REPEAT / 4)
#define HOST_A "10.201.0.1"
#define HOST_B "10.201.0.2"
#define CTRL_PORT 7100
#define NS_PREFIX "pf2h_"

static char root[256], bin[1024], ns_a[32], ns_b[32];
static pid_t job_pid;  /* the single-host reference run while it runs: stopped on a signal */

/* Run a command (argv, NULL-terminated; PATH lookup) quietly; its exit status, or -1. With
   `why`, its output is kept there (one line) for the skip message. */
static int sh(char *const argv[], char *why, size_t whylen) {
    char out[320];
    snprintf(out, sizeof out, "%s/cmd.out", root);
    run r;
    start_cmd(&r, out, argv);
    int st = finish(&r, 20);
    if (why) {
        char err[64];
        char *t = pf_read_file(out, NULL, err, sizeof err);
        snprintf(why, whylen, "%.*s", t ? (int)strcspn(t, "\n") : 0, t ? t : "");
        free(t);
    }
    return st;
}

/* Kill every process in namespace `ns` (all started by this test) and delete it. */
static void remove_ns(const char *ns) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ip netns pids %s 2>/dev/null | xargs -r kill -9", ns);
    if (system(cmd) != 0) fprintf(stderr, "cleanup: '%s' failed\n", cmd);
    for (int i = 0; i < 50; i++) {  /* the namespace goes once its last process is reaped */
        snprintf(cmd, sizeof cmd, "[ -z \"$(ip netns pids %s 2>/dev/null)\" ]", ns);
        if (system(cmd) == 0) break;
        usleep(100000);
    }
    char *argv[] = { "ip", "netns", "del", (char *)ns, NULL };
    sh(argv, NULL, 0);
}

static void cleanup(void) {
    if (ns_a[0]) remove_ns(ns_a);
    if (ns_b[0]) remove_ns(ns_b);
    ns_a[0] = ns_b[0] = '\0';
}

static void on_signal(int sig) {
    if (job_pid > 0) kill(job_pid, SIGINT);
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Namespaces NS_PREFIX<pid>_[ab] whose test process is gone: a run killed before its cleanup. */
static void remove_stale(void) {
    DIR *d = opendir("/run/netns");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int pid;
        if (strncmp(e->d_name, NS_PREFIX, strlen(NS_PREFIX)) != 0 ||
            sscanf(e->d_name + strlen(NS_PREFIX), "%d", &pid) != 1 ||
            (kill(pid, 0) == 0 || errno != ESRCH))
            continue;
        fprintf(stderr, "removing namespace %s left by an earlier run\n", e->d_name);
        remove_ns(e->d_name);
    }
    if (d) closedir(d);
}

/* Two namespaces joined by a veth pair, HOST_A in ns_a and HOST_B in ns_b. 0, or 77 with a
   message when this machine does not allow it. */
static int make_hosts(void) {
    char why[256], va[16], vb[16];
    /* Asked first: start_cmd ends the test as failed when it cannot start `ip`. */
    if (system("command -v ip > /dev/null 2>&1") != 0) {
        printf("SKIP: no `ip` command on PATH: this test needs iproute2 (scripts/setup.sh "
               "installs it) and root or CAP_NET_ADMIN + CAP_SYS_ADMIN\n");
        return 77;
    }
    snprintf(ns_a, sizeof ns_a, NS_PREFIX "%d_a", (int)getpid());
    snprintf(ns_b, sizeof ns_b, NS_PREFIX "%d_b", (int)getpid());
    snprintf(va, sizeof va, "pfa%d", (int)getpid() % 1000000);
    snprintf(vb, sizeof vb, "pfb%d", (int)getpid() % 1000000);
    char *add_a[] = { "ip", "netns", "add", ns_a, NULL };
    int st = sh(add_a, why, sizeof why);
    if (st != 0) {
        ns_a[0] = ns_b[0] = '\0';
        printf("SKIP: cannot create a network namespace (`ip netns add` %s%s%s): this test "
               "needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN and iproute2\n",
               st == 127 || st == -1 ? "not runnable" : "failed", why[0] ? ": " : "", why);
        return 77;
    }
    char *steps[][12] = {
        { "ip", "netns", "add", ns_b, NULL },
        { "ip", "link", "add", va, "type", "veth", "peer", "name", vb, NULL },
        { "ip", "link", "set", va, "netns", ns_a, NULL },
        { "ip", "link", "set", vb, "netns", ns_b, NULL },
        { "ip", "-n", ns_a, "addr", "add", HOST_A "/24", "dev", va, NULL },
        { "ip", "-n", ns_b, "addr", "add", HOST_B "/24", "dev", vb, NULL },
        { "ip", "-n", ns_a, "link", "set", va, "up", NULL },
        { "ip", "-n", ns_b, "link", "set", vb, "up", NULL },
        { "ip", "-n", ns_a, "link", "set", "lo", "up", NULL },
        { "ip", "-n", ns_b, "link", "set", "lo", "up", NULL },
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (sh(steps[i], why, sizeof why) != 0) {
            char cmd[256] = "";
            for (int k = 0; steps[i][k]; k++)
                snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s ", steps[i][k]);
            if (i < 2) {  /* no veth support: not this test's business */
                printf("SKIP: `%s` failed: %s\n", cmd, why);
                return 77;
            }
            fprintf(stderr, "setup: `%s` failed: %s\n", cmd, why);
            exit(1);
        }
    }
    return 0;
}

/* The IPv4 TCP sockets process `pid` listens on, as "a.b.c.d:port" (from /proc/pid/fd and
   /proc/pid/net/tcp, which lists the sockets of the process's network namespace). Returns the
   count; *v6 counts its listening IPv6 sockets. */
static int listening(pid_t pid, char eps[][32], int max, int *v6) {
    char path[64], link[64];
    unsigned long inodes[256];
    int n_inodes = 0, n = 0;
    *v6 = 0;
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) && n_inodes < 256) {
        char fd_path[96];
        snprintf(fd_path, sizeof fd_path, "%s/%s", path, e->d_name);
        ssize_t len = readlink(fd_path, link, sizeof link - 1);
        if (len <= 0) continue;
        link[len] = '\0';
        if (sscanf(link, "socket:[%lu]", &inodes[n_inodes]) == 1) n_inodes++;
    }
    if (d) closedir(d);
    for (int family = 4; family <= 6; family += 2) {
        snprintf(path, sizeof path, "/proc/%d/net/tcp%s", (int)pid, family == 6 ? "6" : "");
        FILE *f = fopen(path, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            char local[64];
            unsigned port, state;
            unsigned long inode;
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*s %*s %lu", local,
                       &port, &state, &inode) != 4 || state != 0x0A)
                continue;
            int mine = 0;
            for (int i = 0; i < n_inodes; i++) mine |= inodes[i] == inode;
            if (!mine) continue;
            if (family == 6) {
                (*v6)++;
            } else if (n < max) {
                struct in_addr a = { .s_addr = (in_addr_t)strtoul(local, NULL, 16) };
                snprintf(eps[n++], 32, "%s:%u", inet_ntoa(a), port);
            }
        }
        if (f) fclose(f);
    }
    return n;
}

/* Whether a TCP connection from namespace `ns` to ip:port succeeds within 2 s (in a child
   that joins the namespace). */
static int reachable_from(const char *ns, const char *ip, unsigned port) {
    pid_t pid = fork();
    if (pid == 0) {
        char path[96];
        snprintf(path, sizeof path, "/run/netns/%s", ns);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(2);
        int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        inet_pton(AF_INET, ip, &sa.sin_addr);
        if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) _exit(1);
        struct pollfd p = { s, POLLOUT, 0 };
        int err = 1;
        socklen_t len = sizeof err;
        if (poll(&p, 1, 2000) == 1) getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        close(s);
        _exit(err == 0 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Every listening socket of the job's coordinator, worker and checkpoint hook is on HOST_A and
   reachable from namespace B. */
static void check_endpoints(const char *out) {
    const char *roles[] = { "coordinator", "worker", "checkpoint hook" };
    int total = 0;
    for (int i = 0; i < 3; i++) {
        pid_t pid = pid_of(out, roles[i]);
        char eps[16][32];
        int v6, n = pid > 0 ? listening(pid, eps, 16, &v6) : 0;
        CHECK(n >= 1, "%s (pid %d) listens on no IPv4 TCP socket", roles[i], (int)pid);
        CHECK(pid <= 0 || v6 == 0, "%s listens on %d IPv6 socket(s)", roles[i], v6);
        for (int k = 0; k < n; k++) {
            char ip[32];
            unsigned port = 0;
            sscanf(eps[k], "%31[^:]:%u", ip, &port);
            CHECK(strcmp(ip, HOST_A) == 0, "%s listens on %s, not on %s: host B cannot reach "
                  "it", roles[i], eps[k], HOST_A);
            CHECK(reachable_from(ns_b, ip, port), "%s's %s is not reachable from namespace B",
                  roles[i], eps[k]);
            printf("  %s listens on %s\n", roles[i], eps[k]);
            total++;
        }
    }
    CHECK(total >= 5, "%d listening sockets (want >= 5: ctrl, events in and out, data, "
          "checkpoint)", total);
}

int main(void) {
    pf_test_job_begin("two_host", bin, sizeof bin, root, sizeof root);
    remove_stale();
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    if (make_hosts() == 77) {
        remove_tree(root);
        return 77;
    }

    char train[320], cfg[600], wd_one[600], wd_two[600], out[600];
    snprintf(train, sizeof train, "%s/train", root);
    make_images(train, 8, 40, 5);
    setenv("OMP_NUM_THREADS", "1", 1);
    double t0 = pf_now();

    /* The single-host reference. */
    run r;
    snprintf(wd_one, sizeof wd_one, "%s/work_one", root);
    snprintf(cfg, sizeof cfg, "%s/one.yaml", root);
    write_tiny_config(cfg, train, wd_one, REPEAT, TOTAL_ITERS);
    snprintf(out, sizeof out, "%s/one.out", root);
    start_job(&r, bin, out, cfg, "1", NULL, NULL, NULL);
    job_pid = r.pid;
    int st = finish(&r, 120);
    job_pid = 0;
    CHECK(st == 0, "single-host run exited with %d (see %s)", st, out);
    printf("single host: %d iterations, %.1f s\n", TOTAL_ITERS, pf_now() - t0);

    /* Host A: everything but the loaders. */
    double t1 = pf_now();
    char bind[64], far_out[600];
    snprintf(bind, sizeof bind, "tcp://%s:%d", HOST_A, CTRL_PORT);
    snprintf(wd_two, sizeof wd_two, "%s/work_two", root);
    snprintf(cfg, sizeof cfg, "%s/two.yaml", root);
    write_tiny_config(cfg, train, wd_two, REPEAT, TOTAL_ITERS);
    snprintf(out, sizeof out, "%s/two.out", root);
    char *job_argv[] = { "ip", "netns", "exec", ns_a, bin, "train", cfg, "--loaders", "0",
                         "--bind", bind, NULL };
    start_cmd(&r, out, job_argv);
    char path[700], err[256];
    snprintf(path, sizeof path, "%s/coordinator.log", wd_two);
    int started = wait_text(path, "training starts", 60);
    CHECK(started, "host A: the job did not start (see %s)", out);
    snprintf(path, sizeof path, "%s/coordinator.addr", wd_two);
    char *addr = pf_read_file(path, NULL, err, sizeof err);
    CHECK(addr && strcmp(addr, bind) == 0, "coordinator.addr is '%s', expected '%s'",
          addr ? addr : err, bind);
    free(addr);
    int failed_before = pf_test_fail_;
    if (started) check_endpoints(out);
    if (!started || pf_test_fail_ > failed_before) {  /* a loader in B could not serve it */
        kill(r.pid, SIGINT);
        finish(&r, 30);
        goto done;
    }

    /* Host B: one loader, joining over the veth link. */
    run far;
    snprintf(far_out, sizeof far_out, "%s/far1.out", root);
    char *far_argv[] = { "ip", "netns", "exec", ns_b, bin, "loader", "--connect", bind,
                         "--name", "far1", NULL };
    start_cmd(&far, far_out, far_argv);
    st = finish(&r, 120);
    CHECK(st == 0, "two-host run exited with %d (see %s)", st, out);
    int far_st = finish(&far, 10);
    CHECK(far_st == 0, "the loader on host B exited with %d (see %s)", far_st, far_out);
    unsigned peer = loader_peer(wd_two, "far1");
    int n = batches_by(wd_two, 1, peer);
    CHECK(peer && n == TOTAL_ITERS, "host B's loader (peer %u) built %d of %d batches", peer, n,
          TOTAL_ITERS);
    check_exactly_once(wd_two, 1, TOTAL_ITERS, IPE, 8 * REPEAT, "two hosts");
    check_same_batches(wd_one, wd_two, 1, "two hosts");
    printf("two hosts: coordinator, worker and hooks in %s, loader in %s: %d iterations, "
           "%.1f s\n", ns_a, ns_b, TOTAL_ITERS, pf_now() - t1);

done:
    cleanup();
    return pf_test_job_end("test_two_host", root);
}
