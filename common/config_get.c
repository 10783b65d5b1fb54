/*  config_get — the typed getters over the YAML tree (common/yaml_tree.h) for the config
    parser: one node into one C value, or the error `file:line: key: what is wrong`.

    Scalars follow the YAML 1.2 core schema, strictly: numbers and booleans must be plain
    (unquoted) scalars, `null`/`~`/empty means null, strings may be plain or quoted. Strings
    are one line of printable UTF-8 (what pf_config_to_yaml can write back as itself).
    Declared in common/config_impl.h.
*/
#include "common/config.h"
#include "common/config_impl.h"
#include "common/number.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Record the first error as "path:line: key: message". Always returns -1. */
int pf_cfg_fail(pf_cfg_ctx *c, int line, const char *key, const char *fmt, ...) {
    if (c->failed)
        return -1;
    c->failed = 1;
    if (!c->err || !c->errlen)
        return -1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%d: %s: %s", c->path, line > 0 ? line : 1, key, msg);
    return -1;
}

/* ---- scalars -------------------------------------------------------------------------- */

/* Text of a scalar node (not NUL-terminated) or NULL for collections. */
static const char *scalar(const pf_ynode *n, size_t *len) {
    if (!n || n->type != PF_Y_SCALAR)
        return NULL;
    *len = n->len;
    return n->text;
}

static int is_plain(const pf_ynode *n) {
    return n && n->type == PF_Y_SCALAR && n->plain;
}

static int text_is(const char *s, size_t len, const char *word) {
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* YAML 1.2 core null: absent value, or plain "", "~", "null", "Null", "NULL". */
int pf_cfg_is_null(const pf_ynode *n) {
    if (!n)
        return 1;
    size_t len;
    const char *s = scalar(n, &len);
    if (!s || !is_plain(n))
        return 0;
    return len == 0 || text_is(s, len, "~") || text_is(s, len, "null") ||
           text_is(s, len, "Null") || text_is(s, len, "NULL");
}

/* What the user wrote, for "got ..." in messages. */
const char *pf_cfg_describe(const pf_ynode *n, char *buf, size_t size) {
    if (pf_cfg_is_null(n))
        return "null";
    if (ytype(n) == PF_Y_MAPPING)
        return "a mapping";
    if (ytype(n) == PF_Y_SEQUENCE)
        return "a list";
    size_t len = 0;
    const char *s = scalar(n, &len);
    size_t show = len > 40 ? 40 : len;
    snprintf(buf, size, "%s'%.*s%s'", is_plain(n) ? "" : "the quoted string ", (int)show, s,
             len > show ? "..." : "");
    return buf;
}

/* Copy a scalar into a NUL-terminated buffer; -1 when it does not fit. */
int pf_cfg_scalar_copy(const pf_ynode *n, char *out, size_t size) {
    size_t len;
    const char *s = scalar(n, &len);
    if (!s || len + 1 > size)
        return -1;
    memcpy(out, s, len);
    out[len] = 0;
    return 0;
}

int pf_cfg_get_int(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int64_t lo, int64_t hi,
                   int64_t *out) {
    const char *want = lo > 0 ? "a positive integer" : lo == 0 ? "a non-negative integer"
                                                               : "an integer";
    char g[96];
    size_t len = 0;
    const char *s = scalar(n, &len);
    int64_t v = 0;
    pf_num_status st = s && is_plain(n) ? pf_parse_int(s, len, lo, hi, &v) : PF_NUM_SYNTAX;
    if (st == PF_NUM_SYNTAX)
        return pf_cfg_fail(c, node_line(n), key, "expected %s, got %s", want,
                           pf_cfg_describe(n, g, sizeof g));
    if (st == PF_NUM_RANGE) {
        int beyond_64_bits = v == INT64_MIN || v == INT64_MAX;
        if (v < lo && (lo == 0 || lo == 1) && !beyond_64_bits)
            return pf_cfg_fail(c, node_line(n), key, "expected %s, got %.*s", want, (int)len, s);
        return pf_cfg_fail(c, node_line(n), key, "must be between %lld and %lld, got %.*s",
                           (long long)lo, (long long)hi, (int)len, s);
    }
    *out = v;
    return 0;
}

int pf_cfg_get_int32(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int lo, int hi,
                     int *out) {
    int64_t v = 0;   /* set by get_int on success; silences -Wmaybe-uninitialized */
    if (pf_cfg_get_int(c, n, key, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* A finite number (integers accepted). `lo_open` / `hi_open`: lo / hi themselves are not
   allowed. */
/* A number of node n in the range, checked on the value as stored: a float (as_float; 1e-67
   is 0 there; beyond the float range pf_parse_double refuses it) or a double. */
static int get_number(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo, int lo_open,
                      double hi, int hi_open, int as_float, double *out) {
    char g[96];
    size_t len = 0;
    const char *s = scalar(n, &len);
    double v = 0;
    if (!s || !is_plain(n) || pf_parse_double(s, len, &v) != PF_NUM_OK)
        return pf_cfg_fail(c, node_line(n), key, "expected a number, got %s",
                           pf_cfg_describe(n, g, sizeof g));
    double f = as_float ? (double)(float)v : v;
    if (f < lo || (lo_open && f == lo) || f > hi || (hi_open && f == hi)) {
        const char *as = f != v ? " (as a 32-bit float: " : "";
        char fs[32] = "";
        if (as[0])
            snprintf(fs, sizeof fs, "%g)", f);
        if (lo_open && lo == 0 && hi == HUGE_VAL)
            return pf_cfg_fail(c, node_line(n), key, "must be greater than 0, got %.*s%s%s",
                               (int)len, s, as, fs);
        if (!lo_open && lo == 0 && hi == HUGE_VAL)
            return pf_cfg_fail(c, node_line(n), key, "must be 0 or more, got %.*s%s%s", (int)len, s,
                               as, fs);
        return pf_cfg_fail(c, node_line(n), key, "must be in %c%g, %g%c, got %.*s%s%s",
                           lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']', (int)len, s, as, fs);
    }
    *out = f;
    return 0;
}

int pf_cfg_get_float(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo, int lo_open,
                     double hi, int hi_open, float *out) {
    double v = 0;
    if (get_number(c, n, key, lo, lo_open, hi, hi_open, 1, &v))
        return -1;
    *out = (float)v;
    return 0;
}

int pf_cfg_get_double(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo, int lo_open,
                      double hi, int hi_open, double *out) {
    return get_number(c, n, key, lo, lo_open, hi, hi_open, 0, out);
}

int pf_cfg_get_bool(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int *out) {
    char g[96];
    size_t len;
    const char *s = scalar(n, &len);
    if (s && is_plain(n)) {
        if (text_is(s, len, "true") || text_is(s, len, "True") || text_is(s, len, "TRUE")) {
            *out = 1;
            return 0;
        }
        if (text_is(s, len, "false") || text_is(s, len, "False") || text_is(s, len, "FALSE")) {
            *out = 0;
            return 0;
        }
    }
    return pf_cfg_fail(c, node_line(n), key, "expected true or false, got %s",
                       pf_cfg_describe(n, g, sizeof g));
}

/* The first code point of UTF-8 text `s` that a one-line single-quoted YAML scalar cannot
   hold as itself (what pf_config_to_yaml writes), or -1: C0 controls (tab and line breaks
   included: a line break would be folded to a space on reading back), DEL, C1 controls, U+FEFF,
   U+FFFE, U+FFFF (YAML 1.2 c-printable, less what folding changes). An escape in a
   double-quoted scalar ("\a", "\x85") decodes to such a character; found by fuzz_config (the
   resolved config did not parse back). -2: not UTF-8 (an escape of a lone surrogate). */
static long unprintable(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    if (pf_utf8_invalid_at(u, len) < len)
        return -2;
    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            return u[i];
        if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return u[i + 1];                                    /* U+0080..U+009F */
        if (u[i] == 0xef && i + 2 < len && ((u[i + 1] == 0xbb && u[i + 2] == 0xbf) ||
                                            (u[i + 1] == 0xbf && u[i + 2] >= 0xbe)))
            return u[i + 1] == 0xbb ? 0xfeff : 0xff00 | u[i + 2];
    }
    return -1;
}

int pf_cfg_get_str(pf_cfg_ctx *c, const pf_ynode *n, const char *key, char *out, size_t size) {
    char g[96];
    if (pf_cfg_is_null(n) || ytype(n) != PF_Y_SCALAR)
        return pf_cfg_fail(c, node_line(n), key, "expected a string, got %s",
                           pf_cfg_describe(n, g, sizeof g));
    size_t len;
    const char *s = scalar(n, &len);
    if (memchr(s, 0, len))
        return pf_cfg_fail(c, node_line(n), key, "contains a NUL character");
    long bad = unprintable(s, len);
    if (bad == -2)
        return pf_cfg_fail(c, node_line(n), key, "not UTF-8 text (an escape of a lone surrogate?)");
    if (bad >= 0)
        return pf_cfg_fail(c, node_line(n), key,
                           "contains U+%04lX, which is not printable (a path or "
                           "name is one line of printable text)", (unsigned long)bad);
    if (pf_cfg_scalar_copy(n, out, size))
        return pf_cfg_fail(c, node_line(n), key, "longer than %zu characters", size - 1);
    return 0;
}

/* A string from a fixed list (`choices` NULL-terminated); exact case unless `nocase`. */
int pf_cfg_get_choice(pf_cfg_ctx *c, const pf_ynode *n, const char *key, const char **choices,
                      int nocase, char *out, size_t size) {
    char g[96], v[64];
    if (pf_cfg_is_null(n) || ytype(n) != PF_Y_SCALAR || pf_cfg_scalar_copy(n, v, sizeof v))
        v[0] = 0;
    for (int i = 0; v[0] && choices[i]; i++) {
        if (nocase ? !strcasecmp(v, choices[i]) : !strcmp(v, choices[i])) {
            snprintf(out, size, "%s", choices[i]);
            return 0;
        }
    }
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", choices[i]);
    }
    return pf_cfg_fail(c, node_line(n), key, "expected one of %s, got %s", list,
                       pf_cfg_describe(n, g, sizeof g));
}

/* A list of `min_n`..`max_n` items; `get` converts item i. */
int pf_cfg_get_seq(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int min_n, int max_n,
                   int *count, const pf_ynode **items) {
    char g[96];
    if (!n || ytype(n) != PF_Y_SEQUENCE)
        return pf_cfg_fail(c, node_line(n), key, "expected a list, got %s",
                           pf_cfg_describe(n, g, sizeof g));
    int k = 0;
    for (int i = 0; i < n->n; i++) {
        const pf_ynode *item = n->kid[i];
        if (k == max_n)
            return pf_cfg_fail(c, node_line(item), key, "at most %d items allowed", max_n);
        items[k++] = item;
    }
    if (k < min_n) {
        if (min_n == max_n)
            return pf_cfg_fail(c, node_line(n), key, "expected %d items, got %d", min_n, k);
        return pf_cfg_fail(c, node_line(n), key, "expected at least %d items, got %d", min_n, k);
    }
    *count = k;
    return 0;
}


/* Offset of the first byte of `s` that does not start a well-formed UTF-8 sequence (RFC 3629:
   no overlong forms, no surrogates, nothing past U+10FFFF), or `len` when all of it is UTF-8.
   The config must be UTF-8 text (YAML 1.2); saying so with the offset is clearer than the
   parser's error (libfyaml 0.7.12, the earlier parser, even looped forever on a directive
   followed by a malformed sequence, "%\xf0", found by tests/fuzz/fuzz_config). */
size_t pf_utf8_invalid_at(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned char b = s[i];
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF;     /* allowed range of the second byte */
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            n = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            n = 2;
            if (b == 0xE0) lo = 0xA0;           /* overlong */
            if (b == 0xED) hi = 0x9F;           /* surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            n = 3;
            if (b == 0xF0) lo = 0x90;           /* overlong */
            if (b == 0xF4) hi = 0x8F;           /* past U+10FFFF */
        } else {
            return i;
        }
        if (len - i - 1 < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return i;
        i += n + 1;
    }
    return len;
}
