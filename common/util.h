/*  util — small system helpers every role needs: monotonic time, folders, whole-file reads,
    the host name, and one signal flag for a role's poll loop.
*/
#ifndef PF_UTIL_H
#define PF_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <signal.h>

/* Monotonic clock in seconds. */
double pf_now(void);

/* mkdir -p with mode 0755. Returns 0, or -1 with err naming the folder. */
int pf_mkdirs(const char *path, char *err, size_t errlen);

/* Read a whole file into a malloc'd, NUL-terminated buffer. Returns NULL with err naming the
   path. `len` may be NULL. */
char *pf_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* This machine's host name ("localhost" if unknown). */
const char *pf_hostname(void);

/* Install handlers for SIGINT, SIGTERM and SIGHUP that set pf_signalled to the signal number
   and count every delivery in pf_signal_count (no SA_RESTART, so blocking calls return EINTR
   and the poll loop sees it), then unblock the three: `pixflow train` starts every role with
   them blocked (pf_stop_signals), so a signal that comes while a role is still starting waits
   for this handler instead of killing the role by the default action. */
extern volatile sig_atomic_t pf_signalled;
extern volatile sig_atomic_t pf_signal_count;
void pf_catch_signals(void);

/* The signals that stop a job in order: *set = { SIGINT, SIGTERM, SIGHUP }. */
void pf_stop_signals(sigset_t *set);

/* FNV-1a 64 of a buffer. */
uint64_t pf_fnv1a64(const void *data, size_t len, uint64_t h);
#define PF_FNV_OFFSET 0xcbf29ce484222325ULL
#endif
