/*  http_path: the request-name checks of `pixflow monitor --http` (common/http_path.h) on a
    real tree in a temporary folder:

        root/visuals/iter_100.png    a file
        root/eval_visuals/iter_1000/ a folder
        root/in_link.png -> visuals/iter_100.png        a symlink that stays inside: served
        root/out_link.png -> OUTSIDE/secret.png         a symlink out: 403
        root/out_dir -> OUTSIDE                         a folder symlink out: 403
        root/fifo.log                                   a FIFO: 403, and open does not block
        OUTSIDE/secret.png                              beside root, never reachable

    Every refused request is also checked to hand back no descriptor. Then the race that
    pf_http_open_safe closes (a folder swapped for a symlink out between realpath and open):
    shown to be real with a plain open(), refused by pf_http_open_nofollow. The expected statuses
    are written out per case (not derived from the function), and the served file's bytes are
    compared with what was written.
*/
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/http_path.h"
#include "pf_test.h"

/* dir/rel, in one of two static buffers (so that two can be passed at once). */
static const char *at(const char *dir, const char *rel) {
    static char buf[2][PATH_MAX * 2];
    static int next;
    char *b = buf[next++ % 2];
    snprintf(b, sizeof buf[0], "%s/%s", dir, rel);
    return b;
}

/* Make dir/rel: a folder when text is NULL, else a file holding text. */
static void make(const char *dir, const char *rel, const char *text) {
    FILE *f = text ? fopen(at(dir, rel), "w") : NULL;
    if (!text) mkdir(at(dir, rel), 0755);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void) {
    char base[] = "/tmp/pf_http_path_XXXXXX";
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    char root[PATH_MAX], outside[PATH_MAX], p[PATH_MAX * 2];
    snprintf(root, sizeof root, "%s/wd", base);
    snprintf(outside, sizeof outside, "%s/wd_secret", base);   /* a prefix of root's name + */
    make(base, "wd", NULL);
    make(base, "wd_secret", NULL);
    make(root, "visuals", NULL);
    make(root, "eval_visuals", NULL);
    make(root, "eval_visuals/iter_1000", NULL);
    make(root, "visuals/iter_100.png", "PNG bytes of step 100");
    make(outside, "secret.png", "secret");
    CHECK(symlink("visuals/iter_100.png", at(root, "in_link.png")) == 0, "symlink inside");
    CHECK(symlink(at(outside, "secret.png"), at(root, "out_link.png")) == 0, "symlink out");
    CHECK(symlink(outside, at(root, "out_dir")) == 0, "folder symlink out");
    CHECK(symlink("../wd_secret/secret.png", at(root, "up_link.png")) == 0,
          "relative symlink out");
    CHECK(mkfifo(at(root, "fifo.log"), 0600) == 0, "mkfifo");

    static const struct {
        const char *rel;
        int status;
    } cases[] = {
        { "visuals/iter_100.png", 0 },
        { "in_link.png", 0 },                       /* a symlink inside: followed */
        { "visuals/iter_200.png", 404 },            /* missing */
        { "nope/iter_100.png", 404 },
        { "visuals", 403 },                         /* a folder */
        { "eval_visuals/iter_1000", 403 },
        { "fifo.log", 403 },                        /* not a regular file */
        { "out_link.png", 403 },                    /* symlink escape */
        { "up_link.png", 403 },
        { "out_dir/secret.png", 403 },              /* through a folder symlink */
        { "../wd_secret/secret.png", 400 },         /* traversal */
        { "visuals/../../wd_secret/secret.png", 400 },
        { "visuals/..", 400 },
        { "..", 400 },
        { "./visuals/iter_100.png", 400 },
        { "visuals//iter_100.png", 400 },           /* empty component */
        { "visuals/iter_100.png/", 400 },
        { "/etc/passwd", 400 },                     /* absolute */
        { "%2e%2e/wd_secret/secret.png", 400 },     /* percent-encoded, not decoded again */
        { "%2E%2E%2Fwd_secret%2Fsecret.png", 400 },
        { "..%2fwd_secret/secret.png", 400 },
        { "visuals\\..\\..\\wd_secret", 400 },      /* backslashes */
        { "visuals/iter_100.png\x01", 400 },         /* a control byte (%00 after unescape) */
        { "", 400 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[PATH_MAX];
        int st = pf_http_safe_path(root, cases[i].rel, out, sizeof out);
        CHECK(st == cases[i].status, "'%s': %d, want %d", cases[i].rel, st, cases[i].status);
        uint64_t size = 0;
        int fd = pf_http_open_safe(root, cases[i].rel, &size);
        if (cases[i].status == 0) {
            char buf[64] = { 0 };
            ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
            CHECK(fd >= 0 && size == 21 && n == 21 && !strcmp(buf, "PNG bytes of step 100"),
                  "'%s': fd %d size %llu read '%s'", cases[i].rel, fd,
                  (unsigned long long)size, buf);
        } else {
            CHECK(fd == -cases[i].status, "'%s': open gave %d, want %d", cases[i].rel, fd,
                  -cases[i].status);
        }
        if (fd >= 0) close(fd);
    }
    /* The race pf_http_open_safe closes: the path resolved while sub/ was a folder, then
       sub/ swapped for a symlink to OUTSIDE (which holds a b.png of its own) before the open.
       A plain open() follows the link and reads the outside file; pf_http_open_nofollow
       refuses it. */
    char resolved[PATH_MAX];
    make(root, "sub", NULL);
    make(root, "sub/b.png", "inside b");
    make(outside, "b.png", "outside b");
    CHECK(pf_http_safe_path(root, "sub/b.png", resolved, sizeof resolved) == 0, "sub/b.png");
    CHECK(rename(at(root, "sub"), at(root, "sub_moved")) == 0 &&
          symlink(outside, at(root, "sub")) == 0, "swap sub/ for a symlink");
    int plain = open(resolved, O_RDONLY);
    char buf[32] = { 0 };
    CHECK(plain >= 0 && read(plain, buf, sizeof buf - 1) == 9 && !strcmp(buf, "outside b"),
          "a plain open follows the swapped link (the race is real): '%s'", buf);
    if (plain >= 0) close(plain);
    int fd = pf_http_open_nofollow(resolved);
    CHECK(fd == -1, "pf_http_open_nofollow opened '%s' through a symlink", resolved);
    if (fd >= 0) close(fd);
    fd = pf_http_open_nofollow(at(root, "sub_moved/b.png"));
    CHECK(fd >= 0, "pf_http_open_nofollow on a path without links");
    if (fd >= 0) close(fd);
    CHECK(pf_http_open_nofollow("relative/b.png") == -1, "a relative path");

    /* A name of PF_HTTP_NAME_MAX + 1 bytes is refused before any lookup. */
    char longname[PF_HTTP_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK(pf_http_safe_path(root, longname, p, sizeof p) == 400, "a name too long");
    /* A missing root: 404. */
    CHECK(pf_http_safe_path("/nonexistent/pf_http_root", "a.png", p, sizeof p) == 404,
          "missing root");

    /* pf_http_unescape: %XX decoded, %00 becomes 0x01 (refused by the name check), bad
       escapes kept. */
    char u1[] = "a%2e%2E%2fb", u2[] = "x%00y", u3[] = "%zz%4", u4[] = "%41%42c";
    CHECK(pf_http_unescape(u1) == 5 && !strcmp(u1, "a../b"), "'%s'", u1);
    CHECK(pf_http_unescape(u2) == 3 && !strcmp(u2, "x\x01y") && !pf_http_name_ok(u2), "%%00");
    CHECK(pf_http_unescape(u3) == 5 && !strcmp(u3, "%zz%4"), "'%s'", u3);
    CHECK(pf_http_unescape(u4) == 3 && !strcmp(u4, "ABc"), "'%s'", u4);

    /* pf_http_parse_uint */
    uint64_t v = 7;
    CHECK(pf_http_parse_uint("1000", 5000, &v) == 0 && v == 1000, "1000");
    CHECK(pf_http_parse_uint("5000", 5000, &v) == 0 && v == 5000, "the max itself");
    CHECK(pf_http_parse_uint("5001", 5000, &v) == -1, "over the max");
    CHECK(pf_http_parse_uint("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX,
          "UINT64_MAX");
    CHECK(pf_http_parse_uint("18446744073709551616", UINT64_MAX, &v) == -1, "overflow");
    CHECK(pf_http_parse_uint("7", 5, &v) == -1, "one digit over a small max");
    CHECK(pf_http_parse_uint("", 10, &v) == -1 && pf_http_parse_uint(NULL, 10, &v) == -1 &&
          pf_http_parse_uint("-1", 10, &v) == -1 && pf_http_parse_uint("+1", 10, &v) == -1 &&
          pf_http_parse_uint(" 1", 10, &v) == -1 && pf_http_parse_uint("1x", 10, &v) == -1,
          "junk");

    /* Content types */
    CHECK(!strcmp(pf_http_content_type("a/iter_1.png"), "image/png"), "png");
    CHECK(!strcmp(pf_http_content_type("x.JPG"), "image/jpeg"), "JPG");
    CHECK(!strcmp(pf_http_content_type("metrics.jsonl"), "application/json"), "jsonl");
    CHECK(!strncmp(pf_http_content_type("train.log"), "text/plain", 10), "log");
    CHECK(pf_http_content_type("checkpoints/iter_1.safetensors") == NULL, "safetensors");
    CHECK(pf_http_content_type(".png") == NULL && pf_http_content_type("png") == NULL, "bare");

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return pf_test_end("test_monitor_http_path");
}
