/*  proc_cpu — CPU time a process has used, for the loader benchmarks (bench/loader/run.sh).

    Throughput per process is unreliable on a shared 2-core machine (a loader may wait for a
    core); patches per CPU-second of the processes that did the work is not, so every program
    here reads user + system time of the processes it measures from /proc/PID/stat (fields 14
    and 15, in clock ticks; Linux only).
*/
#ifndef PF_BENCH_PROC_CPU_H
#define PF_BENCH_PROC_CPU_H
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* User + system CPU seconds used so far by process `pid` (all its threads). Returns the
   seconds, or -1 when the process is gone or its stat line cannot be parsed. */
static inline double bench_cpu_seconds(long pid) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* The command name (field 2) is in parentheses and may hold spaces: skip past its ')'. */
    const char *p = strrchr(line, ')');
    unsigned long utime, stime;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                     &stime) != 2)
        return -1;
    long tick = sysconf(_SC_CLK_TCK);
    return tick > 0 ? (double)(utime + stime) / (double)tick : -1;
}
#endif
