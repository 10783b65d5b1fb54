/*  test_spectral_norm — nn/spectral_norm.h: torch.nn.utils.spectral_norm over a flat weight.

    Without arguments (no Python needed):
      - backward against central finite differences of the evaluation forward (u and v held,
        as autograd holds them) on a random weight, u, v and upstream gradient, for
        loss = sum(G * weight); and in place (d_weight_orig == d_weight) equal to out of place;
      - sigma on W = H1 diag(3, 1.5, 1, 0.5) H2 (H1, H2 Householder reflections: singular
        values known, singular vectors not along the axes): 60 training forwards from a drawn
        u, v reach sigma 3 (within 1e-5), as a naive power iteration on W^T W of 500 steps in
        double does; u is then the first left singular vector H1 e0 (up to sign), the
        normalised weight has spectral norm 1, and an evaluation forward changes neither u nor
        v nor sigma;
      - init: u and v of unit length, a pure function of the rng key.
    With `torch` (ctest test_spectral_norm.torch; 77 without /usr/bin/python3 with torch):
    tests/reference/spectral_norm_ref.py writes three torch Conv2d wrapped by spectral_norm (3x3,
    4x4 stride 2, and 1x1 with more rows than columns) with torch's own u, v, and three training
    steps and an eval step of each; PixFlow starts from torch's state and runs the same steps
    with the same upstream gradients: u and v after each step within 1e-6, the weight within
    1e-6 and d weight_orig within 1e-5 of the largest reference value (relative).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/rng.h"
#include "common/safetensors.h"
#include "nn/spectral_norm.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

static void fill_normal(float *x, int n, pf_rng *r) {
    for (int i = 0; i < n; i++) {
        double u1 = 1.0 - pf_rng_uniform(r), u2 = pf_rng_uniform(r);
        x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
}

static double norm2(const float *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}

/* loss = sum(G * weight) with the evaluation forward (u, v held). */
static double eval_loss(pf_spectral_norm *sn, const float *w, const float *g, float *weight) {
    pf_spectral_norm_forward(sn, w, 0, weight);
    double s = 0;
    for (int i = 0; i < sn->rows * sn->cols; i++) s += (double)g[i] * weight[i];
    return s;
}

static void test_backward_fd(void) {
    enum { O = 5, I = 3, K = 3, N = O * I * K * K };
    float w[N], g[N], weight[N], d[N], d_in_place[N], u[O], v[I * K * K];
    pf_rng r = pf_rng_make(41, 1, 0);
    fill_normal(w, N, &r);
    fill_normal(g, N, &r);
    pf_spectral_norm sn = pf_spectral_norm_layer(O, I, K, u, v);
    pf_spectral_norm_init_uv(&sn, &r);
    pf_spectral_norm_forward(&sn, w, 1, weight); /* a u, v of this W, then held */
    eval_loss(&sn, w, g, weight);
    pf_spectral_norm_backward(&sn, w, g, d);
    memcpy(d_in_place, g, sizeof g);
    pf_spectral_norm_backward(&sn, w, d_in_place, d_in_place);
    CHECK(memcmp(d, d_in_place, sizeof d) == 0, "in-place backward differs");
    double max_ref = 0, max_err = 0;
    const float h = 1e-2f;
    for (int i = 0; i < N; i++) {
        float keep = w[i];
        w[i] = keep + h;
        double lp = eval_loss(&sn, w, g, weight);
        w[i] = keep - h;
        double lm = eval_loss(&sn, w, g, weight);
        w[i] = keep;
        double fd = (lp - lm) / (2.0 * h);
        max_ref = fmax(max_ref, fabs(fd));
        max_err = fmax(max_err, fabs(fd - d[i]));
    }
    printf("backward vs finite differences: max |err| %.3g of max |grad| %.3g\n", max_err,
           max_ref);
    CHECK(max_err <= 1e-3 * max_ref, "max err %g, max grad %g", max_err, max_ref);
}

/* a -= 2 x (x . a) / (x . x): the Householder reflection of a across x's normal plane. */
static void reflect(double *a, const double *x, int n) {
    double xa = 0, xx = 0;
    for (int i = 0; i < n; i++) xa += x[i] * a[i], xx += x[i] * x[i];
    for (int i = 0; i < n; i++) a[i] -= 2 * x[i] * xa / xx;
}

enum { SR = 4, SC = 2 * 2 * 2 }; /* a 4 x 2 x 2 x 2 weight: W is 4 x 8 */

/* W = H1 S H2 with S = diag(3, 1.5, 1, 0.5) (4 x 8), H1 along x1, H2 along x2; left1 = H1 e0. */
static void known_svd(float *w, double *left1) {
    static const double s[SR] = { 3, 1.5, 1, 0.5 };
    static const double x1[SR] = { 1, -2, 0.5, 1 };
    static const double x2[SC] = { 0.3, 1, -1, 2, 0.1, -0.7, 1.2, 0.4 };
    double m[SR][SC] = { { 0 } }, col[SR];
    for (int i = 0; i < SR; i++) {
        m[i][i] = s[i];
        reflect(m[i], x2, SC); /* row i of S H2 (H2 symmetric) */
    }
    for (int c = 0; c < SC; c++) {
        for (int i = 0; i < SR; i++) col[i] = m[i][c];
        reflect(col, x1, SR);
        for (int i = 0; i < SR; i++) w[i * SC + c] = (float)col[i];
    }
    for (int i = 0; i < SR; i++) left1[i] = i == 0;
    reflect(left1, x1, SR);
}

/* The largest singular value of W (rows x cols) by 500 power steps on W^T W in double. */
static double naive_sigma(const float *w, int rows, int cols) {
    double x[64], y[64], norm = 0;
    for (int c = 0; c < cols; c++) x[c] = 1.0 + 0.1 * c;
    for (int it = 0; it < 500; it++) {
        for (int r = 0; r < rows; r++) {
            y[r] = 0;
            for (int c = 0; c < cols; c++) y[r] += w[r * cols + c] * x[c];
        }
        norm = 0;
        for (int c = 0; c < cols; c++) {
            x[c] = 0;
            for (int r = 0; r < rows; r++) x[c] += w[r * cols + c] * y[r];
            norm += x[c] * x[c];
        }
        norm = sqrt(norm); /* ||W^T W x|| -> sigma^2 for a unit x */
        for (int c = 0; c < cols; c++) x[c] /= norm;
    }
    return sqrt(norm);
}

static void test_sigma_known_svd(void) {
    float w[SR * SC], weight[SR * SC], u[SR], v[SC], sigma = 0;
    double left1[SR];
    known_svd(w, left1);
    pf_spectral_norm sn = pf_spectral_norm_layer(SR, 2, 2, u, v);
    CHECK(sn.rows == SR && sn.cols == SC, "layer %d x %d", sn.rows, sn.cols);
    pf_rng r = pf_rng_make(41, 2, 0);
    pf_spectral_norm_init_uv(&sn, &r);
    for (int it = 0; it < 60; it++) sigma = pf_spectral_norm_forward(&sn, w, 1, weight);
    double naive = naive_sigma(w, SR, SC);
    printf("sigma %.8f, naive power iteration %.8f, known 3\n", sigma, naive);
    CHECK_NEAR(naive, 3.0, 1e-6); /* W is rounded to float */
    CHECK_NEAR(sigma, 3.0, 1e-5);
    double dot = 0;
    for (int i = 0; i < SR; i++) dot += u[i] * left1[i];
    CHECK_NEAR(fabs(dot), 1.0, 1e-6);
    CHECK_NEAR(naive_sigma(weight, SR, SC), 1.0, 1e-5);
    for (int i = 0; i < SR * SC; i++)
        CHECK(weight[i] == w[i] / sigma, "weight[%d] %g, want %g", i, weight[i], w[i] / sigma);
    float u0[SR], v0[SC];
    memcpy(u0, u, sizeof u);
    memcpy(v0, v, sizeof v);
    float sigma_eval = pf_spectral_norm_forward(&sn, w, 0, weight);
    CHECK(sigma_eval == sigma && !memcmp(u0, u, sizeof u) && !memcmp(v0, v, sizeof v),
          "evaluation forward changed the state (sigma %g -> %g)", sigma, sigma_eval);
}

static void test_init(void) {
    float u[7], v[5 * 9], u2[7], v2[5 * 9];
    pf_spectral_norm a = pf_spectral_norm_layer(7, 5, 3, u, v);
    pf_spectral_norm b = pf_spectral_norm_layer(7, 5, 3, u2, v2);
    pf_rng r = pf_rng_make(9, 0, 0), r2 = pf_rng_make(9, 0, 0);
    pf_spectral_norm_init_uv(&a, &r);
    pf_spectral_norm_init_uv(&b, &r2);
    CHECK_NEAR(norm2(u, 7), 1.0, 1e-6);
    CHECK_NEAR(norm2(v, 45), 1.0, 1e-6);
    CHECK(!memcmp(u, u2, sizeof u) && !memcmp(v, v2, sizeof v), "same key, other vectors");
    r2 = pf_rng_make(10, 0, 0);
    pf_spectral_norm_init_uv(&b, &r2);
    CHECK(memcmp(u, u2, sizeof u) != 0, "another key gives the same u");
}

/* max |a - b| over n values, relative to max |b|. */
static double rel_diff(const float *a, const float *b, int n) {
    double err = 0, ref = 0;
    for (int i = 0; i < n; i++) {
        err = fmax(err, fabs((double)a[i] - b[i]));
        ref = fmax(ref, fabs((double)b[i]));
    }
    return ref > 0 ? err / ref : err;
}

static double abs_diff(const float *a, const float *b, int n) {
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs((double)a[i] - b[i]));
    return err;
}

/* tag's tensor `what` of n floats from the case file; NULL (a failed check) if absent or of
   another size. */
static const float *case_tensor(const pf_safetensors *st, const char *tag, const char *what,
                                int n) {
    char name[64];
    int ndim;
    int64_t shape[4];
    snprintf(name, sizeof name, "%s.%s", tag, what);
    const float *p = pf_safetensors_get(st, name, &ndim, shape);
    int64_t numel = 1;
    for (int i = 0; p && i < ndim; i++) numel *= shape[i];
    CHECK(p && numel == n, "%s: %s missing or not %d values", pf_safetensors_name(st), name, n);
    return p && numel == n ? p : NULL;
}

/* One step `tag` (training or not) from the state in sn against torch's numbers. */
static void torch_step(pf_spectral_norm *sn, const pf_safetensors *st, const char *tag,
                       int training, float *weight, float *d_weight_orig) {
    int n = sn->rows * sn->cols;
    const float *wo = case_tensor(st, tag, "weight_orig", n);
    const float *dw = case_tensor(st, tag, "d_weight", n);
    const float *u = case_tensor(st, tag, "weight_u", sn->rows);
    const float *v = case_tensor(st, tag, "weight_v", sn->cols);
    const float *want_w = case_tensor(st, tag, "weight", n);
    const float *want_d = case_tensor(st, tag, "d_weight_orig", n);
    if (!wo || !dw || !u || !v || !want_w || !want_d) return;
    pf_spectral_norm_forward(sn, wo, training, weight);
    pf_spectral_norm_backward(sn, wo, dw, d_weight_orig);
    double eu = abs_diff(sn->weight_u, u, sn->rows), ev = abs_diff(sn->weight_v, v, sn->cols);
    double ew = rel_diff(weight, want_w, n), ed = rel_diff(d_weight_orig, want_d, n);
    printf("%s step %s: u %.2g, v %.2g, weight %.2g, d weight_orig %.2g (sigma %.6f)\n",
           pf_safetensors_name(st), tag, eu, ev, ew, ed, sn->sigma);
    CHECK(eu <= 1e-6 && ev <= 1e-6, "%s: u off by %g, v by %g", tag, eu, ev);
    CHECK(ew <= 1e-6, "%s: weight off by %g (relative)", tag, ew);
    CHECK(ed <= 1e-5, "%s: d weight_orig off by %g (relative)", tag, ed);
}

static void torch_case(const char *path) {
    char err[512];
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, sizeof err) != 0) {
        CHECK(0, "%s", err);
        return;
    }
    const char *o = pf_safetensors_meta(st, "out_channels");
    const char *i = pf_safetensors_meta(st, "in_channels");
    const char *k = pf_safetensors_meta(st, "kernel"), *steps = pf_safetensors_meta(st, "steps");
    CHECK(o && i && k && steps, "%s: metadata missing", path);
    if (!o || !i || !k || !steps) {
        pf_safetensors_free(&st);
        return;
    }
    int rows = atoi(o), cols = atoi(i) * atoi(k) * atoi(k), n = rows * cols;
    float *buf = malloc(sizeof *buf * (size_t)(rows + cols + 2 * n));
    pf_spectral_norm sn = pf_spectral_norm_layer(rows, atoi(i), atoi(k), buf, buf + rows);
    const float *u0 = case_tensor(st, "conv", "weight_u", rows);
    const float *v0 = case_tensor(st, "conv", "weight_v", cols);
    if (buf && u0 && v0) {
        memcpy(sn.weight_u, u0, sizeof *u0 * (size_t)rows); /* torch's init */
        memcpy(sn.weight_v, v0, sizeof *v0 * (size_t)cols);
        for (int s = 0; s < atoi(steps); s++) {
            char tag[16];
            snprintf(tag, sizeof tag, "%d", s);
            torch_step(&sn, st, tag, 1, buf + rows + cols, buf + rows + cols + n);
        }
        torch_step(&sn, st, "eval", 0, buf + rows + cols, buf + rows + cols + n);
    }
    free(buf);
    pf_safetensors_free(&st);
}

static int with_torch(void) {
    if (!pf_ref_have("test_spectral_norm torch", "numpy, torch")) return 77;
    char dir[] = "/tmp/pf_spectral_norm.XXXXXX", cmd[2048];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(cmd, sizeof cmd, PF_REF_PY " %s/tests/reference/spectral_norm_ref.py %s",
             src ? src : ".", dir);
    fflush(stdout);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s failed", cmd);
    for (int c = 0; c < 3; c++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/case%d.safetensors", dir, c);
        torch_case(path);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pf_test_end("test_spectral_norm torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    test_backward_fd();
    test_sigma_known_svd();
    test_init();
    return pf_test_end("test_spectral_norm");
}
