/*  number — see number.h. */
#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pf_num_status pf_parse_int(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out) {
    char t[32];
    if (!s || len == 0 || len >= sizeof t) return PF_NUM_SYNTAX;
    memcpy(t, s, len);
    t[len] = 0;
    size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
    if (!t[i]) return PF_NUM_SYNTAX;
    for (; t[i]; i++)
        if (!isdigit((unsigned char)t[i])) return PF_NUM_SYNTAX;
    errno = 0;
    long long v = strtoll(t, NULL, 10);   /* saturates at LLONG_MIN / LLONG_MAX with ERANGE */
    *out = v;
    return errno == ERANGE || v < lo || v > hi ? PF_NUM_RANGE : PF_NUM_OK;
}

pf_num_status pf_parse_double(const char *s, size_t len, double *out) {
    char t[64];
    if (!s || len == 0 || len >= sizeof t) return PF_NUM_SYNTAX;
    memcpy(t, s, len);
    t[len] = 0;
    for (size_t i = 0; t[i]; i++)
        if (!isdigit((unsigned char)t[i]) && !strchr("+-.eE", t[i])) return PF_NUM_SYNTAX;
    char *end = NULL;
    errno = 0;
    double v = strtod(t, &end);
    if (!end || *end || errno != 0 || !isfinite(v) || !isfinite((float)v)) return PF_NUM_SYNTAX;
    *out = v;
    return PF_NUM_OK;
}

/* The value as it goes into a message: quoted when empty or holding a space, cut to 40. */
static const char *shown(const char *value, char *buf, size_t size) {
    size_t len = strlen(value);
    int quote = len == 0 || strpbrk(value, " \t\n") != NULL;
    snprintf(buf, size, "%s%.40s%s%s", quote ? "'" : "", value, len > 40 ? "..." : "",
             quote ? "'" : "");
    return buf;
}

int pf_arg_int(const char *cmd, const char *opt, const char *value, int lo, int hi, int *out) {
    int64_t v = 0;
    if (pf_parse_int(value, strlen(value), lo, hi, &v) == PF_NUM_OK) {
        *out = (int)v;
        return 0;
    }
    char b[64];
    fprintf(stderr, "%s: %s %s: expected a whole number %d..%d\n", cmd, opt,
            shown(value, b, sizeof b), lo, hi);
    return -1;
}

int pf_arg_seconds(const char *cmd, const char *opt, const char *value, double hi,
                   double *out) {
    double v = 0;
    if (pf_parse_double(value, strlen(value), &v) == PF_NUM_OK && v > 0 && v <= hi) {
        *out = v;
        return 0;
    }
    char b[64];
    fprintf(stderr, "%s: %s %s: expected seconds in (0, %g]\n", cmd, opt,
            shown(value, b, sizeof b), hi);
    return -1;
}

int pf_arg_part(const char *cmd, const char *opt, const char *value, int max_n, int *index,
                int *count) {
    const char *slash = strchr(value, '/');
    int64_t i = 0, n = 0;
    if (slash && pf_parse_int(slash + 1, strlen(slash + 1), 1, max_n, &n) == PF_NUM_OK &&
        pf_parse_int(value, (size_t)(slash - value), 0, n - 1, &i) == PF_NUM_OK) {
        *index = (int)i;
        *count = (int)n;
        return 0;
    }
    char b[64];
    fprintf(stderr, "%s: %s %s: expected I/N with N a whole number 1..%d and I 0..N-1\n", cmd,
            opt, shown(value, b, sizeof b), max_n);
    return -1;
}
