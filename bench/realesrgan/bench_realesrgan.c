/*  bench_realesrgan — samples/s of one PixFlow loader's Real-ESRGAN pipeline on one thread
    (issue 40's speed acceptance; bench/realesrgan/run.sh compares it with torch_realesrgan.py).

    Per sample, what a loader does once it holds the GT patch: pf_realesrgan_draw (the sample
    key from pf_dataset_degrade_key(seed, 0, i)), pf_realesrgan_degrade_u8 (GT 256 x 256 ->
    LQ 64 x 64 at scale 4, BasicSR's train_realesrnet_x4plus.yml options) and pf_usm_sharp_u8
    of the GT. PNG decoding and cropping happen before the clock starts (the PyTorch side gets
    the same crops from a file, so neither side times them).

    A second pass runs the same chain step by step through the public ops (blur_kernel.h,
    realesrgan_ops.h) with a clock around each step, so that a slow stage shows; its LQ must
    equal pf_realesrgan_degrade_u8's byte for byte (else exit 1), so the stage times are those
    of the work the pipeline does.

    bench_realesrgan [--n N] [--warmup W] [--seed S] [--patch P] [--crops FILE] [--params FILE]
                     IMAGE...
      --crops FILE   write the N GT crops (N x P x P x 3 bytes, RGB HWC) for the PyTorch side
      --params FILE  write each sample's drawn parameters (pf_realesrgan_params_format lines)
    Prints "pixflow: N samples in T s: X samples/s" and one line of per-stage milliseconds.
    Crops: sample i takes image i mod n_images at a position stepping through it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "common/image.h"
#include "common/patch.h"
#include "common/realesrgan_pipeline.h"

enum { ST_BLUR, ST_RESIZE, ST_NOISE, ST_JPEG, ST_USM, ST_OTHER, ST_N };
static const char *stage_name[ST_N] = { "blur", "resize", "noise", "jpeg", "usm", "other" };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_realesrgan: %s: %s\n", what, err);
    exit(2);
}

/* N crops of p x p from the images, sample i from image i mod n at a stepped position. */
static uint8_t *make_crops(char **paths, int n_paths, int n, int p) {
    pf_image *img = calloc((size_t)n_paths, sizeof *img);
    uint8_t *crops = malloc((size_t)n * (size_t)p * (size_t)p * 3);
    char err[256];
    if (!img || !crops) die("crops", "out of memory");
    for (int j = 0; j < n_paths; j++) {
        if (pf_image_read(paths[j], &img[j], err, sizeof err)) die(paths[j], err);
        if (img[j].h < p || img[j].w < p) die(paths[j], "smaller than the patch");
    }
    for (int i = 0; i < n; i++) {
        const pf_image *m = &img[i % n_paths];
        int k = i / n_paths;
        int top = (k * 97) % (m->h - p + 1), left = (k * 61) % (m->w - p + 1);
        pf_copy_patch(m->data + ((size_t)top * (size_t)m->w + (size_t)left) * 3, m->w, 0, 0, p,
                      0, 0, 0, crops + (size_t)i * (size_t)p * (size_t)p * 3);
    }
    for (int j = 0; j < n_paths; j++) pf_image_free(&img[j]);
    free(img);
    return crops;
}

/* The step-by-step chain's state: the working image is buf[cur], the next step writes
   buf[!cur]; both hold 4 GT sizes of floats (the largest resize is 1.5x). */
typedef struct {
    float *buf[2];
    int cur;
    int h, w;
    double t[ST_N];     /* seconds per stage, summed over samples */
} chain;

#define IMG(c) ((c)->buf[(c)->cur])
#define NEXT(c) ((c)->buf[!(c)->cur])

/* The step's output becomes the working image, of oh x ow. */
static void flip(chain *c, int oh, int ow) {
    c->cur = !c->cur;
    c->h = oh;
    c->w = ow;
}

static void blur(chain *c, const pf_blur_params *bp) {
    char err[256];
    float k[PF_BLUR_KERNEL_MAX * PF_BLUR_KERNEL_MAX];
    if (bp->family == PF_BLUR_PULSE) return;
    double t0 = now();
    if (pf_blur_kernel(bp, 0, k, err, sizeof err) ||
        pf_blur_filter_f32(IMG(c), c->h, c->w, 3, k, bp->kernel_size, NEXT(c), err, sizeof err))
        die("blur", err);
    flip(c, c->h, c->w);
    c->t[ST_BLUR] += now() - t0;
}

static void resize(chain *c, int oh, int ow, double factor, pf_resize_mode mode) {
    char err[256];
    double t0 = now();
    if (pf_resize_f32(IMG(c), c->h, c->w, 3, oh, ow, factor, mode, NEXT(c), err, sizeof err))
        die("resize", err);
    flip(c, oh, ow);
    c->t[ST_RESIZE] += now() - t0;
}

static void noise(chain *c, const pf_noise_params *np, uint64_t key, int stage) {
    char err[256];
    double t0 = now();
    pf_rng r = pf_noise_sample_rng(key, stage);
    if (pf_noise_add(IMG(c), c->h, c->w, np, &r, NULL, err, sizeof err)) die("noise", err);
    c->t[ST_NOISE] += now() - t0;
}

static void jpeg(chain *c, int q) {
    char err[256];
    double t0 = now();
    if (pf_jpeg_apply(IMG(c), c->h, c->w, q, NULL, NULL, err, sizeof err)) die("jpeg", err);
    c->t[ST_JPEG] += now() - t0;
}

/* pf_realesrgan_degrade's order (common/realesrgan_pipeline.h) through the public ops; the
   GT is p x p, the LQ p/scale square. */
static void degrade_staged(chain *c, const pf_realesrgan_opts *o, const pf_realesrgan_params *pr,
                           const uint8_t *gt, int p, uint8_t *lq) {
    double t0 = now();
    for (size_t i = 0; i < (size_t)p * (size_t)p * 3; i++) IMG(c)[i] = gt[i] / 255.0f;
    c->h = c->w = p;
    c->t[ST_OTHER] += now() - t0;
    int lq_n = p / o->scale;
    double lq_d = (double)p / o->scale;
    blur(c, &pr->blur1);
    resize(c, pf_resize_out_size(p, pr->resize1.scale), pf_resize_out_size(p, pr->resize1.scale),
           pr->resize1.scale, pr->resize1.mode);
    noise(c, &pr->noise1, pr->key, 1);
    jpeg(c, pr->quality1);
    if (pr->second_order) {
        if (pr->blur2_on) blur(c, &pr->blur2);
        int n2 = (int)(lq_d * pr->resize2.scale);
        resize(c, n2, n2, 0, pr->resize2.mode);
        noise(c, &pr->noise2, pr->key, 2);
    }
    if (pr->sinc_first) {
        resize(c, lq_n, lq_n, 0, pr->final_mode);
        blur(c, &pr->sinc);
        jpeg(c, pr->quality2);
    } else {
        jpeg(c, pr->quality2);
        resize(c, lq_n, lq_n, 0, pr->final_mode);
        blur(c, &pr->sinc);
    }
    t0 = now();
    for (size_t i = 0; i < (size_t)lq_n * (size_t)lq_n * 3; i++) {
        float s = rintf(IMG(c)[i] * 255.0f);
        lq[i] = (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s);
    }
    c->t[ST_OTHER] += now() - t0;
}

/* The loader's per-sample work on sample i; returns nothing, dies on an error. */
static void one_sample(const pf_realesrgan_opts *o, uint64_t seed, int i, const uint8_t *gt,
                       int p, uint8_t *lq, uint8_t *usm, pf_realesrgan_params *pr) {
    char err[256];
    pf_realesrgan_draw(o, pf_dataset_degrade_key(seed, 0, (uint64_t)i), pr);
    if (pf_realesrgan_degrade_u8(o, pr, gt, p, p, lq, NULL, err, sizeof err))
        die("pf_realesrgan_degrade_u8", err);
    if (pf_usm_sharp_u8(gt, p, p, 3, usm, err, sizeof err)) die("pf_usm_sharp_u8", err);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) die(path, "cannot write");
}

/* The step-by-step pass: per-stage seconds into t, and 0 when every LQ equals the
   pipeline's (lq_ref, n x lq_n x lq_n x 3). */
static int staged_pass(const pf_realesrgan_opts *o, uint64_t seed, const uint8_t *crops, int n,
                       int p, const uint8_t *lq_ref, double *t) {
    size_t gt_n = (size_t)p * (size_t)p * 3, lq_n = gt_n / (size_t)(o->scale * o->scale);
    chain c = { { malloc(gt_n * 4 * sizeof(float)), malloc(gt_n * 4 * sizeof(float)) }, 0, 0, 0,
                 { 0 } };
    uint8_t *lq = malloc(lq_n), *usm = malloc(gt_n);
    int bad = 0;
    char err[256];
    if (!c.buf[0] || !c.buf[1] || !lq || !usm) die("staged pass", "out of memory");
    for (int i = 0; i < n; i++) {
        pf_realesrgan_params pr;
        double t0 = now();
        pf_realesrgan_draw(o, pf_dataset_degrade_key(seed, 0, (uint64_t)i), &pr);
        c.t[ST_OTHER] += now() - t0;
        degrade_staged(&c, o, &pr, crops + (size_t)i * gt_n, p, lq);
        t0 = now();
        if (pf_usm_sharp_u8(crops + (size_t)i * gt_n, p, p, 3, usm, err, sizeof err))
            die("pf_usm_sharp_u8", err);
        c.t[ST_USM] += now() - t0;
        if (memcmp(lq, lq_ref + (size_t)i * lq_n, lq_n)) bad++;
    }
    memcpy(t, c.t, sizeof c.t);
    free(c.buf[0]);
    free(c.buf[1]);
    free(lq);
    free(usm);
    return bad;
}

int main(int argc, char **argv) {
    int n = 200, warmup = 10, p = 256, a = 1;
    uint64_t seed = 0;
    const char *crops_path = NULL, *params_path = NULL;
    for (; a < argc && argv[a][0] == '-' && a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--n")) n = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--warmup")) warmup = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--seed")) seed = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "--patch")) p = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--crops")) crops_path = argv[a + 1];
        else if (!strcmp(argv[a], "--params")) params_path = argv[a + 1];
        else die(argv[a], "unknown option (--n --warmup --seed --patch --crops --params)");
    }
    if (a >= argc || n < 1 || warmup < 0 || p < 64 || p % 4)
        die("usage", "bench_realesrgan [--n N>=1] [--warmup W] [--seed S] [--patch P>=64, "
            "a multiple of 4] [--crops FILE] [--params FILE] IMAGE...");
    pf_realesrgan_opts o;
    char err[512];
    pf_realesrgan_opts_default(&o);
    if (pf_realesrgan_opts_check(&o, p, p, err, sizeof err)) die("options", err);
    uint8_t *crops = make_crops(argv + a, argc - a, n, p);
    size_t gt_n = (size_t)p * (size_t)p * 3, lq_n = gt_n / (size_t)(o.scale * o.scale);
    uint8_t *lq = malloc((size_t)n * lq_n), *usm = malloc(gt_n);
    pf_realesrgan_params *pr = malloc((size_t)n * sizeof *pr);
    if (!lq || !usm || !pr) die("buffers", "out of memory");
    for (int i = 0; i < warmup; i++) one_sample(&o, seed, i % n, crops, p, lq, usm, pr);
    double t0 = now();
    for (int i = 0; i < n; i++)
        one_sample(&o, seed, i, crops + (size_t)i * gt_n, p, lq + (size_t)i * lq_n, usm, &pr[i]);
    double total = now() - t0;
    double t[ST_N];
    int bad = staged_pass(&o, seed, crops, n, p, lq, t);
    printf("pixflow: %d samples in %.3f s: %.2f samples/s\n", n, total, n / total);
    printf("pixflow stages (ms/sample, step-by-step pass):");
    double sum = 0;
    for (int s = 0; s < ST_N; s++) {
        printf(" %s %.3f", stage_name[s], 1e3 * t[s] / n);
        sum += t[s];
    }
    printf(" total %.3f\n", 1e3 * sum / n);
    if (crops_path) write_file(crops_path, crops, (size_t)n * gt_n);
    if (params_path) {
        FILE *f = fopen(params_path, "w");
        if (!f) die(params_path, "cannot write");
        for (int i = 0; i < n; i++) {
            char line[4096];
            pf_realesrgan_params_format(&pr[i], line, sizeof line);
            fprintf(f, "%d %s\n", i, line);
        }
        if (fclose(f)) die(params_path, "cannot write");
    }
    if (bad) fprintf(stderr, "bench_realesrgan: %d of %d step-by-step LQs differ from "
                     "pf_realesrgan_degrade_u8's\n", bad, n);
    free(crops);
    free(lq);
    free(usm);
    free(pr);
    return bad ? 1 : 0;
}
