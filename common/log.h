/*  log — one log function for every role: "2026-11-29 15:40:01.123 worker0 INFO message" to
    stderr and, when a file is opened, to that file too (work_dir/rankN.log for workers,
    work_dir/<role>.log for the others). The threshold comes from the config's log_level.
    With PIXFLOW_LOG_STDERR=warning (set by `pixflow train` for the processes it starts), lines
    below WARNING go only to the file once one is open.
*/
#ifndef PF_LOG_H
#define PF_LOG_H
#include <stdarg.h>

typedef enum { PF_LOG_DEBUG = 0, PF_LOG_INFO, PF_LOG_WARNING, PF_LOG_ERROR } pf_log_level;

/* Name shown in each line ("coordinator", "loader1", "worker0"); copied. */
void pf_log_set_name(const char *name);
/* Threshold by name ("debug" | "info" | "warning" | "error"); unknown names keep "info". */
void pf_log_set_level(const char *level);
/* Also append to `path` (created). Returns 0, or -1 if it cannot be opened (stderr only). */
int pf_log_open_file(const char *path);
void pf_log(pf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pf_debug(...) pf_log(PF_LOG_DEBUG, __VA_ARGS__)
#define pf_info(...) pf_log(PF_LOG_INFO, __VA_ARGS__)
#define pf_warn(...) pf_log(PF_LOG_WARNING, __VA_ARGS__)
#define pf_error(...) pf_log(PF_LOG_ERROR, __VA_ARGS__)
#endif
