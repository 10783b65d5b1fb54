/*  fuzz_http_path — libFuzzer target for the request-path code of `pixflow monitor --http`
    (common/http_path.c): the bytes are a request's path or query value as it comes from the
    network. Each input is unescaped (pf_http_unescape, as the server's libmicrohttpd callback
    does), checked (pf_http_name_ok), resolved under a small real tree (pf_http_safe_path,
    pf_http_open_safe) and parsed as a number (pf_http_parse_uint) and a content type.

    The tree, made once in a temporary folder: root/a.png, root/sub/b.png, root/in.png ->
    sub/b.png (inside), root/out.png -> ../secret.png (out), root/dir.png/ (a folder), and
    ../secret.png beside root. Properties checked, any violation aborts:
      - an accepted path is a regular file whose canonical path starts with root + '/';
      - the secret file is never accepted (its bytes "SECRET" are never read back);
      - a name refused by pf_http_name_ok is never resolved (status 400);
      - an opened descriptor is a regular file of the size fstat gives;
      - a parsed number is at most the max, and printing it gives the input back.
*/
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/http_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[PATH_MAX], real_root[PATH_MAX];

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

static char base[] = "/tmp/pf_fuzz_http_path_XXXXXX";

/* The tree goes when the fuzzer exits normally (a crash keeps it, for a look). */
static void remove_tree(void) {
    static const char *const names[] = { "root/a.png", "root/sub/b.png", "root/in.png",
                                         "root/out.png", "root/dir.png", "root/sub", "root",
                                         "secret.png", "" };
    char p[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", base, names[i]);
        if (remove(p) != 0) perror(p);
    }
}

static void make_tree(void) {
    char p[PATH_MAX + 64];
    if (!mkdtemp(base)) abort();
    atexit(remove_tree);
    snprintf(root, sizeof root, "%s/root", base);
    mkdir(root, 0755);
    snprintf(p, sizeof p, "%s/sub", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/dir.png", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/a.png", root);
    put(p, "A");
    snprintf(p, sizeof p, "%s/sub/b.png", root);
    put(p, "B");
    snprintf(p, sizeof p, "%s/secret.png", base);
    put(p, "SECRET");
    snprintf(p, sizeof p, "%s/in.png", root);
    if (symlink("sub/b.png", p)) abort();
    snprintf(p, sizeof p, "%s/out.png", root);
    if (symlink("../secret.png", p)) abort();
    if (!realpath(root, real_root)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!root[0]) make_tree();
    if (size > 4 * PF_HTTP_NAME_MAX) return 0;
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;                        /* a NUL inside ends the string, as in a C server */
    size_t n = pf_http_unescape(s);
    if (n != strlen(s)) abort();        /* %00 must not become a NUL */

    char out[PATH_MAX];
    int ok = pf_http_name_ok(s);
    int st = pf_http_safe_path(root, s, out, sizeof out);
    if (!ok && st != 400) abort();
    if (ok && st == 400) abort();
    if (st == 0) {
        size_t r = strlen(real_root);
        struct stat sb;
        if (strncmp(out, real_root, r) || out[r] != '/') abort();
        if (lstat(out, &sb) || !S_ISREG(sb.st_mode)) abort();
        if (strstr(out, "secret")) abort();
    }
    uint64_t fsize = 0;
    int fd = pf_http_open_safe(root, s, &fsize);
    if ((fd >= 0) != (st == 0)) abort();
    if (fd >= 0) {
        char buf[16] = { 0 };
        ssize_t got = read(fd, buf, sizeof buf - 1);
        struct stat sb;
        if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != fsize ||
            got != (ssize_t)fsize || strstr(buf, "SECRET"))
            abort();
        close(fd);
    } else if (fd != -st) {
        abort();
    }

    uint64_t v, max = size ? (uint64_t)data[0] * 1000003u : UINT64_MAX;
    if (pf_http_parse_uint(s, max, &v) == 0) {
        char back[32];
        snprintf(back, sizeof back, "%" PRIu64, v);
        if (v > max || (strcmp(back, s) && s[0] != '0')) abort();
    }
    (void)pf_http_content_type(s);
    free(s);
    return 0;
}
