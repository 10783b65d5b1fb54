/*  http_path — request names checked against a root (http_path.h says what and why). */
#include "common/http_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pf_http_name_ok(const char *rel) {
    size_t n = strlen(rel);
    if (n == 0 || n > PF_HTTP_NAME_MAX || rel[0] == '/') return 0;
    const char *c = rel;            /* start of the current component */
    for (size_t i = 0; i <= n; i++) {
        unsigned char b = (unsigned char)rel[i];
        if (b == '/' || b == 0) {
            size_t len = (size_t)(rel + i - c);
            if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                return 0;
            c = rel + i + 1;
        } else if (b < 0x20 || b == 0x7f || b == '\\' || b == '%') {
            return 0;
        }
    }
    return 1;
}

/* Whether `path` is `dir` or lies under it (both canonical: no symlinks, no "..", no "//"). */
static int inside(const char *dir, const char *path) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return 1;
    return strncmp(dir, path, n) == 0 && path[n] == '/';
}

int pf_http_safe_path(const char *root, const char *rel, char *out, size_t outlen) {
    if (!pf_http_name_ok(rel)) return 400;
    char real_root[PATH_MAX], joined[PATH_MAX * 2], real[PATH_MAX];
    if (!realpath(root, real_root)) return 404;
    snprintf(joined, sizeof joined, "%s/%s", real_root, rel);
    if (!realpath(joined, real)) return 404;
    if (!inside(real_root, real)) return 403;
    struct stat st;
    if (stat(real, &st) != 0) return 404;
    if (!S_ISREG(st.st_mode)) return 403;
    if (strlen(real) + 1 > outlen) return 404;
    memcpy(out, real, strlen(real) + 1);
    return 0;
}

/* Used on realpath's answer, which has no symlink in it: a component swapped for a symlink
   since realpath looked (a folder of the run replaced by a link out) fails instead of being
   followed. */
int pf_http_open_nofollow(const char *path) {
    if (path[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const char *p = path + 1;
    while (dir >= 0) {
        char comp[NAME_MAX + 1];
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > NAME_MAX) {
            close(dir);
            errno = EINVAL;
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        int fd = openat(dir, comp, slash ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                                         : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                               O_NOCTTY);
        int e = errno;
        close(dir);
        errno = e;
        if (fd < 0 || !slash) return fd;
        dir = fd;
        p = slash + 1;
    }
    return -1;
}

int pf_http_open_safe(const char *root, const char *rel, uint64_t *size) {
    char path[PATH_MAX];
    int rc = pf_http_safe_path(root, rel, path, sizeof path);
    if (rc) return -rc;
    int fd = pf_http_open_nofollow(path);
    if (fd < 0) return errno == ENOENT ? -404 : -403;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -403;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Whether `name` ends with `ext` (".png"), ignoring case. */
static int ends_with(const char *name, const char *ext) {
    size_t n = strlen(name), e = strlen(ext);
    return n > e && strcasecmp(name + n - e, ext) == 0;
}

const char *pf_http_content_type(const char *name) {
    static const struct {
        const char *ext, *type;
    } types[] = {
        { ".png", "image/png" },
        { ".jpg", "image/jpeg" },
        { ".jpeg", "image/jpeg" },
        { ".json", "application/json" },
        { ".jsonl", "application/json" },
        { ".log", "text/plain; charset=utf-8" },
        { ".txt", "text/plain; charset=utf-8" },
        { ".yaml", "text/plain; charset=utf-8" },
        { ".yml", "text/plain; charset=utf-8" },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (ends_with(name, types[i].ext)) return types[i].type;
    return NULL;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

size_t pf_http_unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex(r[1])) >= 0 && (lo = hex(r[2])) >= 0) {
            char b = (char)(hi * 16 + lo);
            *w++ = b ? b : 0x01;
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

int pf_http_parse_uint(const char *s, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s || strlen(s) > 20) return -1;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        unsigned d = (unsigned)(*c - '0');
        if (d > max || v > (max - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
