/*  log — see log.h. Lines are written with one write() each so that processes sharing a
    terminal do not interleave within a line. */
#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdlib.h>

static char log_name[64] = "pixflow";
static pf_log_level log_threshold = PF_LOG_INFO;
static int log_fd = -1;
static pf_log_level stderr_threshold = PF_LOG_DEBUG;  /* raised by PIXFLOW_LOG_STDERR */
static int stderr_checked;

void pf_log_set_name(const char *name) {
    snprintf(log_name, sizeof log_name, "%s", name);
}

void pf_log_set_level(const char *level) {
    static const char *names[] = { "debug", "info", "warning", "error" };
    for (int i = 0; i < 4; i++)
        if (strcmp(level, names[i]) == 0) log_threshold = (pf_log_level)i;
}

int pf_log_open_file(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    if (log_fd >= 0) close(log_fd);
    log_fd = fd;
    return 0;
}

void pf_log(pf_log_level level, const char *fmt, ...) {
    static const char *tags[] = { "DEBUG", "INFO", "WARNING", "ERROR" };
    if (level < log_threshold) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char line[4096];
    int n = (int)strftime(line, sizeof line, "%Y-%m-%d %H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - n, ".%03d %s %s ", (int)(tv.tv_usec / 1000), log_name,
                  tags[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    n = (m < 0) ? n : (n + m < (int)sizeof line - 1 ? n + m : (int)sizeof line - 2);
    line[n++] = '\n';
    if (!stderr_checked) {
        /* The front end starts roles with PIXFLOW_LOG_STDERR=warning so that its terminal shows
           the progress line and problems; everything else goes to the role's log file. */
        const char *e = getenv("PIXFLOW_LOG_STDERR");
        if (e && strcmp(e, "warning") == 0) stderr_threshold = PF_LOG_WARNING;
        if (e && strcmp(e, "error") == 0) stderr_threshold = PF_LOG_ERROR;
        stderr_checked = 1;
    }
    ssize_t w = 0;
    if (level >= stderr_threshold || log_fd < 0) w = write(STDERR_FILENO, line, n);
    if (log_fd >= 0) w = write(log_fd, line, n);
    (void)w;
}
