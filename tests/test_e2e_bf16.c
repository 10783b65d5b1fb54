/*  End-to-end: `pixflow train` with train_cfg.precision and test_cfg.precision bf16 (issue 43),
    every role its own process, on small generated images (test_e2e_train's EDSR job, shorter).

    test_e2e_bf16 (a CPU with a bf16 unit; else it exits 77, "no bf16 unit"):
    U. the bf16 job trains to the end: the loss goes down, the resolved config keeps both
       precisions, rank0.log says the precisions and the bf16 unit at start (the unit this
       process's oneDNN reports) and, after the first step, that net_g's training plan runs
       bf16 on it (pf_model_precision_report, convolutions set up), evaluation runs
       (eval.log).
    F. the same job in fp32: its report says fp32; its losses are not U's (bf16 rounding
       reached the step) yet close to them (iteration 1, same weights and batch: relative
       difference below 1e-2).
    I. the same job interrupted with SIGINT mid-run (exit 130, a checkpoint for the iteration
       reached), then resumed (`--resume auto`): every loss and learning rate after the resume
       point, and the final weights and optimiser state, are bitwise those of run U.
    test_e2e_bf16 refused (ctest runs it under ONEDNN_MAX_CPU_ISA=AVX512_CORE, which caps
    oneDNN below its bf16 kernels; it checks that the cap took):
    R. the bf16 job exits non-zero within seconds, the front end's output carrying the
       worker's refusal naming train_cfg.precision; nothing trained.
    T. test_cfg.precision bf16 alone: refused likewise, naming test_cfg.precision (by the eval
       hook, which builds its model first).
    P. `pixflow upscale` of a short fp32 job's work dir: `--precision bf16` is refused (exit 1,
       the refusal on stderr), `--precision fp32` writes the image, `--precision fp16` is a
       usage error (2).
    Q. `pixflow test` of P's checkpoint: `--precision bf16` is refused naming --precision
       (exit 1, no results.tsv), with `--workers 2` too, by the front end before any worker
       starts; a config with test_cfg.precision bf16 is refused naming that key, and runs with
       `--precision fp32`; `--precision fp16` is a usage error (2).
    test_e2e_bf16 pixflow_test (a CPU with a bf16 unit; else 77, "no bf16 unit"):
    B. `pixflow test` of a 400-iteration fp32 job's checkpoint (above bicubic) on 4 images of
       64 x 64 (EDSR x2, PSNR-Y crop_border 2): `--precision bf16` gives another table than
       fp32's, its mean PSNR-Y off fp32's by more than 0 and less than 0.05 dB (0.011 dB here:
       bf16 rounds inputs and weights by at most 2^-9 relative, which moves the outputs by a
       fraction of a grey level); the closing line names the precision; test_cfg.precision
       bf16 in the config gives --precision bf16's table byte for byte, and `--precision fp32`
       on that config fp32's; `--workers 2` in bf16 (from --precision and from the config)
       gives the one worker's table byte for byte.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safetensors.h"
#include "common/util.h"
#include "nn/cpu/dnnl_ctx.h"
#include "pf_test.h"
#include "pf_test_job.h"

extern char **environ;

#define TOTAL_ITERS 200
#define CKPT_EVERY 50

static char root[256], bin[1024];

/* test_e2e_train's job (write_e2e_config: EDSR x2 16 features on 8 images of 48 x 48, Adam
   1e-3 with a warm-up, evaluation and a checkpoint every CKPT_EVERY iterations), shorter;
   `precision` the train_cfg / test_cfg lines. */
static void write_config(const char *path, const char *work_dir, const char *precision) {
    write_e2e_config(path, root, work_dir, "{type: Adam, lr: 1.0e-3}", precision, TOTAL_ITERS,
                     CKPT_EVERY);
}

static const char *BF16 = "train_cfg: {precision: bf16}\ntest_cfg: {precision: bf16}\n";

static void start(run *r, const char *cfg, const char *resume, const char *tag) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    start_job(r, bin, out, cfg, "1", resume, NULL, NULL);
}

/* The whole text of work_dir/name (malloc'd; "" when missing). */
static char *work_file(const char *wd, const char *name) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", wd, name);
    return slurp(path);
}

/* U then I (a CPU with a bf16 unit). */
static void test_train_resume(const char *unit) {
    char cfg[600], wdu[600], wdi[600];
    snprintf(wdu, sizeof wdu, "%s/work_bf16", root);
    snprintf(wdi, sizeof wdi, "%s/work_bf16_interrupted", root);

    /* U: uninterrupted. */
    run r;
    snprintf(cfg, sizeof cfg, "%s/bf16.yaml", root);
    write_config(cfg, wdu, BF16);
    double t0 = pf_now();
    start(&r, cfg, NULL, "bf16");
    int st = finish(&r, 300);
    CHECK(st == 0, "run U exited with %d (see %s)", st, r.out);
    printf("run U (bf16): %d iterations in %.1f s\n", TOTAL_ITERS, pf_now() - t0);
    static double loss_u[TOTAL_ITERS + 1], lr_u[TOTAL_ITERS + 1];
    CHECK(train_curve(wdu, loss_u, lr_u, TOTAL_ITERS) == TOTAL_ITERS,
          "run U: metrics.jsonl lacks train entries");
    double first = 0, last = 0;     /* means of the first and last 20 losses (batches vary) */
    for (int i = 1; i <= 20; i++) {
        first += loss_u[i] / 20;
        last += loss_u[TOTAL_ITERS + 1 - i] / 20;
    }
    CHECK(isfinite(last) && last < 0.8 * first, "bf16: loss did not go down: %g -> %g", first,
          last);
    char *y = work_file(wdu, "config.yaml");
    CHECK(strstr(y, "train_cfg:") && strstr(y, "test_cfg:") &&
              strstr(strstr(y, "train_cfg:"), "precision: bf16") &&
              strstr(strstr(y, "test_cfg:"), "precision: bf16"),
          "resolved config lacks the precisions:\n%s", y);
    free(y);
    char want[256];
    snprintf(want, sizeof want, "precision: train_cfg.precision bf16, test_cfg.precision bf16; "
             "bf16 unit: %s", unit);
    char *log = work_file(wdu, "rank0.log");
    CHECK(strstr(log, want) != NULL, "rank0.log lacks '%s':\n%.3000s", want, log);
    snprintf(want, sizeof want, "precision net_g: train bf16 on %s: ", unit);
    const char *rep = strstr(log, want);
    CHECK(rep != NULL, "rank0.log lacks '%s':\n%.3000s", want, log);
    if (rep) {
        printf("run U: %.*s\n", (int)strcspn(rep, "\n"), rep);
        CHECK(atoi(rep + strlen(want)) > 0, "run U: no convolution set up: %.*s",
              (int)strcspn(rep, "\n"), rep);
    }
    free(log);
    log = work_file(wdu, "eval.log");
    CHECK(strstr(log, "iter 200") != NULL, "eval.log has no evaluation at iteration 200:\n%s",
          log);
    free(log);

    /* F: fp32. */
    char wdf[600];
    snprintf(wdf, sizeof wdf, "%s/work_fp32", root);
    snprintf(cfg, sizeof cfg, "%s/fp32.yaml", root);
    write_config(cfg, wdf, "");
    start(&r, cfg, NULL, "fp32");
    st = finish(&r, 300);
    CHECK(st == 0, "run F exited with %d (see %s)", st, r.out);
    static double loss_f[TOTAL_ITERS + 1], lr_f[TOTAL_ITERS + 1];
    CHECK(train_curve(wdf, loss_f, lr_f, TOTAL_ITERS) == TOTAL_ITERS,
          "run F: metrics.jsonl lacks train entries");
    int same = 0;
    for (int it = 1; it <= TOTAL_ITERS; it++) same += loss_f[it] == loss_u[it];
    double rel1 = fabs(loss_u[1] - loss_f[1]) / loss_f[1];
    printf("run F (fp32): iteration 1 loss %.9g, bf16 %.9g (relative %.2e); %d of %d losses "
           "equal\n", loss_f[1], loss_u[1], rel1, same, TOTAL_ITERS);
    CHECK(same < TOTAL_ITERS / 2, "bf16 and fp32 give %d equal losses of %d: bf16 did not run",
          same, TOTAL_ITERS);
    CHECK(rel1 < 1e-2, "iteration 1: bf16 loss %g vs fp32 %g", loss_u[1], loss_f[1]);
    log = work_file(wdf, "rank0.log");
    CHECK(strstr(log, "precision net_g: train fp32") != NULL, "run F: no fp32 report:\n%.3000s",
          log);
    free(log);

    /* I: SIGINT mid-run, then resume. */
    snprintf(cfg, sizeof cfg, "%s/bf16_interrupted.yaml", root);
    write_config(cfg, wdi, BF16);
    start(&r, cfg, NULL, "bf16_interrupted");
    CHECK(wait_lines(wdi, 60, 120), "run I did not reach iteration 60");
    kill(r.pid, SIGINT);
    st = finish(&r, 60);
    CHECK(st == 130, "run I exited with %d, expected 130 (see %s)", st, r.out);
    char *name = work_file(wdi, "checkpoints/latest");
    int k = strncmp(name, "iter_", 5) == 0 ? atoi(name + 5) : 0;
    free(name);
    CHECK(k >= 60 && k < TOTAL_ITERS, "interrupt checkpoint at iteration %d", k);
    start(&r, cfg, "auto", "bf16_resumed");
    st = finish(&r, 300);
    CHECK(st == 0, "run I resumed exited with %d (see %s)", st, r.out);
    printf("run I: interrupted at iteration %d, resumed to %d\n", k, TOTAL_ITERS);
    static double loss_i[TOTAL_ITERS + 1], lr_i[TOTAL_ITERS + 1];
    train_curve(wdi, loss_i, lr_i, TOTAL_ITERS);
    int diff = 0;
    for (int it = 1; it <= TOTAL_ITERS; it++)
        diff += loss_i[it] != loss_u[it] || lr_i[it] != lr_u[it];
    CHECK(diff == 0, "bf16: %d iterations of interrupted + resumed differ from run U", diff);
    CHECK(loss_i[TOTAL_ITERS] == loss_u[TOTAL_ITERS], "final loss %.17g vs %.17g",
          loss_i[TOTAL_ITERS], loss_u[TOTAL_ITERS]);
    CHECK(iter_files_differ(wdu, wdi, TOTAL_ITERS, "safetensors") == 0,
          "bf16: final weights differ after the resume");
    CHECK(iter_files_differ(wdu, wdi, TOTAL_ITERS, "optim.safetensors") == 0,
          "bf16: final Adam state differs after the resume");
    char *samples_u = samples(wdu), *samples_i = samples(wdi);
    CHECK(strcmp(samples_u, samples_i) == 0, "the resumed run consumed other batches");
    free(samples_u);
    free(samples_i);
}

/* R or T: `precision` on a CPU oneDNN sees without a bf16 unit: the job ends non-zero within
   60 s, the front end's output carrying the coordinator's report of role `who` failing with
   the refusal naming `key`; no training step ran. */
static void test_refused(const char *tag, const char *precision, const char *key,
                         const char *who) {
    char cfg[600], wd[600];
    snprintf(wd, sizeof wd, "%s/work_%s", root, tag);
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
    write_config(cfg, wd, precision);
    run r;
    double t0 = pf_now();
    start(&r, cfg, NULL, tag);
    int st = finish(&r, 120);
    double took = pf_now() - t0;
    CHECK(st != 0 && st != -1 && st != 128, "%s: the job exited with %d (see %s)", tag, st,
          r.out);
    CHECK(took < 60, "%s: the refusal took %.1f s", tag, took);
    char want[256];
    snprintf(want, sizeof want, "%s: bf16 needs a CPU with AVX512_BF16 or AMX; oneDNN's ISA "
             "here is ", key);
    char *out = slurp(r.out);
    CHECK(strstr(out, want) && strstr(out, "(no bf16 unit): use fp32"),
          "%s: the front end's output lacks '%s...':\n%s", tag, want, out);
    char said[600];
    snprintf(said, sizeof said, "error: %s", who);
    const char *line = strstr(out, said);
    CHECK(line && strstr(line, want) && strstr(line, want) < strchr(line, '\n'),
          "%s: no line '%s ... %s...':\n%s", tag, said, want, out);
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/samples_rank0.log", wd);
    CHECK(count_lines(path) <= 0, "%s: %d batches were trained", tag, count_lines(path));
    printf("%s: refused in %.1f s, exit status %d\n", tag, took, st);
}

/* `pixflow upscale WD img -o OUT --precision P`: its exit status, output in root/<tag>.out. */
static int upscale(const char *wd, const char *img, const char *precision, const char *tag) {
    char out_dir[600], out[600];
    snprintf(out_dir, sizeof out_dir, "%s/%s", root, tag);
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    char *argv[] = { bin, "upscale", (char *)wd, (char *)img, "-o", out_dir, "--precision",
                     (char *)precision, NULL };
    run r;
    start_cmd(&r, out, argv);
    return finish(&r, 120);
}

/* The iterations of train_fp32's job: its checkpoint is iter_<fp32_iters>.safetensors. */
static int fp32_iters = 30;

/* A short fp32 job (fp32_iters iterations, a checkpoint at the end) into root/work_fp32; its
   path in wd. 0, or -1 after a failed CHECK. */
static int train_fp32(char *wd, size_t len) {
    char cfg[600];
    snprintf(wd, len, "%s/work_fp32", root);
    snprintf(cfg, sizeof cfg, "%s/fp32.yaml", root);
    write_e2e_config(cfg, root, wd, "{type: Adam, lr: 1.0e-3}", "", fp32_iters, fp32_iters);
    run r;
    start(&r, cfg, NULL, "fp32");
    int st = finish(&r, 120);
    CHECK(st == 0, "the fp32 job exited with %d (see %s)", st, r.out);
    return st == 0 ? 0 : -1;
}

/* P (oneDNN without a bf16 unit); wd: train_fp32's work dir. */
static void test_upscale_refused(const char *wd) {
    char img[600], path[700];
    snprintf(img, sizeof img, "%s/val/img00.png", root);
    int st = upscale(wd, img, "bf16", "up_bf16");
    snprintf(path, sizeof path, "%s/up_bf16.out", root);
    char *out = slurp(path);
    CHECK(st == 1 && strstr(out, "pixflow upscale: --precision: bf16 needs a CPU with "
                            "AVX512_BF16 or AMX"),
          "upscale --precision bf16 without a bf16 unit: status %d:\n%s", st, out);
    free(out);
    st = upscale(wd, img, "fp32", "up_fp32");
    snprintf(path, sizeof path, "%s/up_fp32/img00.png", root);
    struct stat sb;
    CHECK(st == 0 && stat(path, &sb) == 0, "upscale --precision fp32: status %d, %s %s", st,
          path, stat(path, &sb) == 0 ? "written" : "missing");
    st = upscale(wd, img, "fp16", "up_fp16");
    snprintf(path, sizeof path, "%s/up_fp16.out", root);
    out = slurp(path);
    CHECK(st == 2 && strstr(out, "--precision fp16: expected fp32 or bf16"),
          "upscale --precision fp16: status %d:\n%s", st, out);
    free(out);
}

/* A config for `pixflow test` alone: EDSR as write_e2e_config's; data.test the 64 x 64 images
   of root/test (data.eval and checkpoint_config too: evaluation's keys need them); PSNR-Y with
   crop_border 2; `extra` (test_cfg lines); work dir root/work_test (the results of
   train_fp32's checkpoint: work_test/test/iter_<fp32_iters>/results.tsv). */
static void write_test_config(const char *path, const char *extra) {
    FILE *f = create_or_exit(path);
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 16, n_blocks: 2}\n"
               "data:\n  test: {type: PairedImageDataset, gt_folder: %s/test}\n"
               "  eval: {type: PairedImageDataset, gt_folder: %s/test}\n"
               "checkpoint_config: {interval: 1}\n"
               "evaluation: {interval: 1, crop_border: 2, convert_to: y}\n%s"
               "work_dir: %s/work_test\nseed: 42\n", root, root, extra, root);
    fclose(f);
}

/* `pixflow test cfg --checkpoint ck [a1 a2 [a3 a4]]` (NULL ends the options), output in
   root/<tag>.out: its exit status; *out its output and *table the results.tsv it wrote (both
   malloc'd, "" when missing; results.tsv is removed after reading, so that a run which
   writes none shows). */
static int pixflow_test(const char *cfg, const char *ck, const char *a1, const char *a2,
                        const char *a3, const char *a4, const char *tag, char **out,
                        char **table) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.out", root, tag);
    char *argv[] = { bin, "test", (char *)cfg, "--checkpoint", (char *)ck, (char *)a1,
                     (char *)a2, (char *)a3, (char *)a4, NULL };
    run r;
    start_cmd(&r, path, argv);
    int st = finish(&r, 300);
    *out = slurp(path);
    snprintf(path, sizeof path, "%s/work_test/test/iter_%d/results.tsv", root, fp32_iters);
    *table = slurp(path);
    unlink(path);
    return st;
}

/* The mean row's PSNR of a results.tsv text, NaN if it has none. */
static double mean_psnr(const char *table) {
    const char *p = strstr(table, "\nmean\t");
    return p ? atof(p + 6) : NAN;
}

/* Q (oneDNN without a bf16 unit); wd: train_fp32's work dir. */
static void test_pixflow_test_refused(const char *wd) {
    char ck[700], cfg32[600], cfg16[600];
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_%d.safetensors", wd, fp32_iters);
    snprintf(cfg32, sizeof cfg32, "%s/test_fp32.yaml", root);
    snprintf(cfg16, sizeof cfg16, "%s/test_bf16.yaml", root);
    write_test_config(cfg32, "");
    write_test_config(cfg16, "test_cfg: {precision: bf16}\n");
    const char *want = "pixflow: --precision: bf16 needs a CPU with AVX512_BF16 or AMX; "
                       "oneDNN's ISA here is ";
    char *out, *table;
    int st = pixflow_test(cfg32, ck, "--precision", "bf16", NULL, NULL, "test_q1", &out, &table);
    CHECK(st == 1 && strstr(out, want) && !table[0],
          "test --precision bf16 without a bf16 unit: status %d, %s results.tsv:\n%s", st,
          table[0] ? "a" : "no", out);
    free(out);
    free(table);
    st = pixflow_test(cfg32, ck, "--precision", "bf16", "--workers", "2", "test_q2", &out, &table);
    const char *once = strstr(out, want);
    CHECK(st == 1 && once && !strstr(once + 1, want) && !strstr(out, "test worker") && !table[0],
          "test --precision bf16 --workers 2 without a bf16 unit: status %d (expected 1, "
          "the front end's refusal once, no worker):\n%s", st, out);
    free(out);
    free(table);
    st = pixflow_test(cfg16, ck, NULL, NULL, NULL, NULL, "test_q3", &out, &table);
    CHECK(st == 1 && strstr(out, "pixflow: test_cfg.precision: bf16 needs a CPU with "
                                 "AVX512_BF16 or AMX") && !table[0],
          "test with test_cfg.precision bf16 without a bf16 unit: status %d:\n%s", st, out);
    free(out);
    free(table);
    st = pixflow_test(cfg16, ck, "--precision", "fp32", NULL, NULL, "test_q4", &out, &table);
    CHECK(st == 0 && strstr(out, "precision fp32, ") && isfinite(mean_psnr(table)),
          "test --precision fp32 over test_cfg.precision bf16: status %d, mean PSNR %g:\n%s",
          st, mean_psnr(table), out);
    printf("Q: pixflow test --precision bf16 refused; --precision fp32: PSNR-Y %.4f dB\n",
           mean_psnr(table));
    free(out);
    free(table);
    st = pixflow_test(cfg32, ck, "--precision", "fp16", NULL, NULL, "test_q5", &out, &table);
    CHECK(st == 2 && strstr(out, "pixflow test: --precision fp16: expected fp32 or bf16"),
          "test --precision fp16: status %d:\n%s", st, out);
    free(out);
    free(table);
}

/* B (a CPU with a bf16 unit). */
static void test_pixflow_test_bf16(void) {
    char wd[600], ck[700], cfg32[600], cfg16[600];
    fp32_iters = 400;   /* about 7 s here; above bicubic's PSNR-Y (37.3 vs 37.0 dB here) */
    if (train_fp32(wd, sizeof wd)) return;
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_%d.safetensors", wd, fp32_iters);
    snprintf(cfg32, sizeof cfg32, "%s/test_fp32.yaml", root);
    snprintf(cfg16, sizeof cfg16, "%s/test_bf16.yaml", root);
    write_test_config(cfg32, "");
    write_test_config(cfg16, "test_cfg: {precision: bf16}\n");
    struct {
        const char *cfg, *a1, *a2, *a3, *a4, *workers, *prec;   /* what the closing line says */
    } runs[] = {
        { cfg32, NULL, NULL, NULL, NULL, "1 worker", "fp32" },                         /* 0 */
        { cfg32, "--precision", "bf16", NULL, NULL, "1 worker", "bf16" },              /* 1 */
        { cfg16, NULL, NULL, NULL, NULL, "1 worker", "bf16" },                         /* 2 */
        { cfg16, "--precision", "fp32", NULL, NULL, "1 worker", "fp32" },              /* 3 */
        { cfg32, "--precision", "bf16", "--workers", "2", "2 workers", "bf16" },       /* 4 */
        { cfg16, "--workers", "2", NULL, NULL, "2 workers", "bf16" },                  /* 5 */
    };
    enum { N = sizeof runs / sizeof runs[0] };
    char *tables[N];
    for (int k = 0; k < N; k++) {
        char tag[32], says[128], *out;
        snprintf(tag, sizeof tag, "test_b%d", k);
        snprintf(says, sizeof says, " on %s (crop_border 2, Y, precision %s, inference: ",
                 runs[k].workers, runs[k].prec);
        int st = pixflow_test(runs[k].cfg, ck, runs[k].a1, runs[k].a2, runs[k].a3, runs[k].a4,
                              tag, &out, &tables[k]);
        CHECK(st == 0 && strstr(out, says) && strstr(tables[k], "\nimg03\t"),
              "pixflow test run %d: status %d, output lacks '%s' or results.tsv its rows:\n%s",
              k, st, says, out);
        free(out);
    }
    double p32 = mean_psnr(tables[0]), p16 = mean_psnr(tables[1]), d = fabs(p16 - p32);
    const char *m = strstr(tables[0], "\nmean\t");
    double bicubic = NAN;
    if (m) sscanf(m, "\nmean\t%*g\t%*g\t%lg", &bicubic);
    printf("B: pixflow test of %d iterations' checkpoint: PSNR-Y fp32 %.4f dB, bf16 %.4f dB "
           "(difference %.5f dB; bicubic %.4f dB)\n", fp32_iters, p32, p16, d, bicubic);
    CHECK(strcmp(tables[0], tables[1]) != 0, "bf16 gives fp32's table: bf16 did not run");
    CHECK(isfinite(d) && d > 0 && d < 0.05,
          "bf16's mean PSNR-Y %.6f vs fp32's %.6f: expected 0 < difference < 0.05 dB", p16, p32);
    const char *what[N] = { NULL, NULL, "test_cfg.precision bf16 vs --precision bf16",
                            "--precision fp32 over test_cfg.precision bf16 vs fp32",
                            "--precision bf16 on 2 workers vs 1",
                            "test_cfg.precision bf16 on 2 workers vs --precision bf16 on 1" };
    const int ref[N] = { 0, 1, 1, 0, 1, 1 };
    for (int k = 2; k < N; k++)
        CHECK(strcmp(tables[k], tables[ref[k]]) == 0, "%s: another table:\n%s\nvs\n%s",
              what[k], tables[k], tables[ref[k]]);
    for (int k = 0; k < N; k++) free(tables[k]);
}

int main(int argc, char **argv) {
    int refused = argc > 1 && !strcmp(argv[1], "refused");
    int test_cmd = argc > 1 && !strcmp(argv[1], "pixflow_test");
    char isa[32];
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    if (refused && unit) {
        fprintf(stderr, "test_e2e_bf16 refused: oneDNN still has %s (ONEDNN_MAX_CPU_ISA=%s): "
                "run it with ONEDNN_MAX_CPU_ISA=AVX512_CORE\n", unit,
                getenv("ONEDNN_MAX_CPU_ISA") ? getenv("ONEDNN_MAX_CPU_ISA") : "unset");
        return 1;
    }
    if (!refused && !unit) {
        printf("test_e2e_bf16: no bf16 unit (oneDNN's ISA here is %s): skipped\n", isa);
        return 77;
    }
    const char *tag = refused ? "e2e_bf16_refused" : test_cmd ? "e2e_bf16_test" : "e2e_bf16";
    pf_test_job_begin(tag, bin, sizeof bin, root, sizeof root);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, 8, 48, 1);
    snprintf(dir, sizeof dir, "%s/val", root);
    make_images(dir, 2, 40, 2);
    snprintf(dir, sizeof dir, "%s/test", root);
    make_images(dir, 4, 64, 3);
    setenv("OMP_NUM_THREADS", "2", 1);  /* the same thread count for every run */
    if (refused) {
        test_refused("refused_train", "train_cfg: {precision: bf16}\n", "train_cfg.precision",
                     "worker");
        test_refused("refused_test", "test_cfg: {precision: bf16}\n", "test_cfg.precision",
                     "eval hook");
        char wd[600];
        if (train_fp32(wd, sizeof wd) == 0) {
            test_upscale_refused(wd);
            test_pixflow_test_refused(wd);
        }
    } else if (test_cmd) {
        test_pixflow_test_bf16();
    } else {
        test_train_resume(unit);
    }
    return pf_test_job_end(refused ? "test_e2e_bf16 refused" : test_cmd
                           ? "test_e2e_bf16 pixflow_test" : "test_e2e_bf16", root);
}
