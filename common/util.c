/*  util — see util.h. */
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t pf_signalled = 0;
volatile sig_atomic_t pf_signal_count = 0;

double pf_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int pf_mkdirs(const char *path, char *err, size_t errlen) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create folder: %s", buf, strerror(errno));
                return -1;
            }
            *p = c;
            if (c == '\0') break;
        }
    }
    return 0;
}

char *pf_read_file(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f)) {
            snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
            free(buf);
            buf = NULL;
            break;
        }
        if (feof(f)) break;
        char *t = realloc(buf, cap *= 2);
        if (!t) {
            free(buf);
            buf = NULL;
        } else {
            buf = t;
        }
    }
    fclose(f);
    if (!buf) {
        if (!err[0]) snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

const char *pf_hostname(void) {
    static char name[256];
    if (!name[0] && gethostname(name, sizeof name - 1) != 0) snprintf(name, sizeof name,
                                                                      "localhost");
    return name;
}

static void on_signal(int sig) {
    pf_signalled = sig;
    pf_signal_count++;  /* the three are masked while this runs: no lost increment */
}

void pf_stop_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

void pf_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    pf_stop_signals(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigprocmask(SIG_UNBLOCK, &sa.sa_mask, NULL);
}

uint64_t pf_fnv1a64(const void *data, size_t len, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
