/*  pf_test — the tiny assertion kit every tests/test_*.c uses.

    CHECK(cond, fmt, ...) records a failure with file:line and a message and goes on;
    CHECK_NEAR(a, b, tol) compares doubles. pf_test_end() prints "N passed, N failed" and returns
    the process exit status, so ctest shows a test as failed when any check failed.
*/
#ifndef PF_TEST_H
#define PF_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pf_test_pass_, pf_test_fail_;

#define CHECK(cond, ...) do { if (cond) pf_test_pass_++; else { pf_test_fail_++; \
    fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#define CHECK_NEAR(a, b, tol) do { double a_ = (a), b_ = (b); \
    CHECK(fabs(a_ - b_) <= (tol), "%s = %.10g, %s = %.10g, tolerance %g", #a, a_, #b, b_, \
          (double)(tol)); } while (0)

static inline const char *pf_test_data(void) {
    const char *d = getenv("PF_TEST_DATA");
    return d ? d : "tests/data";
}

/* 1-based line of the first `marker` in `text` (0: none): where a config test expects its
   error. */
static inline int pf_test_line_of(const char *text, const char *marker) {
    const char *at = strstr(text, marker);
    if (!at)
        return 0;
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

static inline int pf_test_end(const char *name) {
    printf("%s: %d passed, %d failed\n", name, pf_test_pass_, pf_test_fail_);
    return pf_test_fail_ ? 1 : 0;
}
#endif
