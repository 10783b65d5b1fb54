/*  http_path — the request-path checks of `pixflow monitor --http` (cli/monitor_http.c), apart
    from the server so that they can be unit-tested (tests/test_monitor_http_path.c) and fuzzed
    (tests/fuzz/fuzz_http_path.c) without libmicrohttpd.

    A request names a file relative to a root the server chose (a run's work_dir, its visuals
    folder); it must never reach anything else. The check is two-fold: the name itself (no
    "..", ".", empty components, absolute paths, backslashes, '%' or control characters: names
    are refused, never interpreted), then the file system (realpath of the file lies under
    realpath of the root, so a symlink that leads out is refused and one that stays inside is
    followed; the file is a regular file). What is left between the check and the open (a
    component swapped for a symlink in that instant) is closed by opening the resolved path
    (which has no symlink left in it) one component at a time with openat(O_NOFOLLOW), and
    checking the descriptor's fstat again (pf_http_open_safe).
*/
#ifndef PF_HTTP_PATH_H
#define PF_HTTP_PATH_H
#include <stddef.h>
#include <stdint.h>

/* The longest relative name accepted (bytes). */
#define PF_HTTP_NAME_MAX 1024

/* Whether `rel` (NUL-terminated, relative to a root) is a name the server may look up: 1..
   PF_HTTP_NAME_MAX bytes, components separated by single '/', none empty, "." or "..", no
   leading '/', no '\\', '%' or byte below 0x20 or 0x7f. Touches no file. Returns 1 or 0. */
int pf_http_name_ok(const char *rel);

/* Resolve `rel` under directory `root` into `out` (the canonical absolute path, outlen bytes).
   Returns 0 when it names a regular file whose real path lies inside root's real path; else
   an HTTP status and nothing opened: 400 a refused name (pf_http_name_ok), 404 no such file
   (or root missing, or out too small), 403 outside root (a symlink out) or not a regular file
   (a directory, a FIFO, a device). */
int pf_http_safe_path(const char *root, const char *rel, char *out, size_t outlen);

/* pf_http_safe_path, then open the file read-only, every component of its resolved path with
   O_NOFOLLOW (pf_http_open_nofollow; O_NONBLOCK: a FIFO swapped in cannot block), and check
   again that the descriptor is a regular file. Returns the descriptor (>= 0) with its size in
   *size (bytes), or minus the HTTP status. */
int pf_http_open_safe(const char *root, const char *rel, uint64_t *size);

/* Open the absolute `path` read-only one component at a time from "/", each with openat and
   O_NOFOLLOW: any symlink on the way (one swapped in after realpath resolved the path) makes
   it fail. Returns the descriptor, or -1 with errno (ELOOP, ENOTDIR, ENOENT, EINVAL for a
   relative path or an empty component). */
int pf_http_open_nofollow(const char *path);

/* The Content-Type served for a file name by its extension: image/png, image/jpeg,
   application/json (.json, .jsonl), text/plain; charset=utf-8 (.log, .txt, .yaml, .yml); NULL
   for anything else (not served: checkpoints, TensorBoard events). */
const char *pf_http_content_type(const char *name);

/* Decode %XX escapes in `s` in place (a query value or the request path, as libmicrohttpd's
   own unescaping would), except that a decoded NUL becomes 0x01, which pf_http_name_ok
   refuses: "a%00b" must not pass as "a". Invalid escapes stay as they are. Returns the new
   length. */
size_t pf_http_unescape(char *s);

/* Parse a decimal integer 0..max (digits only, no sign, no spaces). Returns 0, or -1. */
int pf_http_parse_uint(const char *s, uint64_t max, uint64_t *out);
#endif
