/*  test — `pixflow test CONFIG --checkpoint PATH [--workers N] [--video[=CODEC]]
    [--precision fp32|bf16]`: run data.test through a checkpoint.

    Outputs go to work_dir/test/<checkpoint stem>/<image>.png, with results.tsv beside them:
    one row per image (PSNR, SSIM, and bicubic's, and how many frames of it had an infinite PSNR
    and were left out of its PSNR mean) and a mean row, the same table printed on stdout.
    Metrics follow evaluation.crop_border and evaluation.convert_to (docs/metrics.md).
    A SingleImageDataset (LQ only) has no GT: the outputs are written, no metrics, no
    results.tsv, and the closing line says so.

    With --workers N the test set is split across N worker processes (image or clip i goes to
    worker i mod N, each with its share of the cores); each writes its rows with full precision to
    results_shard<r>.tsv and the front end gathers them in dataset order, so the table and the
    means are bit-identical to a single worker's.

    --precision replaces the config's test_cfg.precision (docs/config.md: bf16 convolutions, on
    a CPU with a bf16 unit only; the refusal names where bf16 came from, before any worker
    starts); the closing line says which precision ran.

    A video set writes each clip's frames as <clip>/%08d.png; with --video each clip is also
    encoded from those PNGs into <clip>.mkv (common/video_write.h: FFV1 by default, lossless,
    so it decodes back to the PNGs' bytes; --video=CODEC picks another FFmpeg encoder) at the
    source video's frame rate (25 frames/s for a folder of frames).

    pf_test_main is test_parse (the command line), test_prepare (config, data.test, the output
    folder), test_run (the evaluation, here or split across workers) and test_report (tables,
    videos, the closing line).
*/
#include "cli/commands.h"
#include "cli/model_source.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/dataset.h"
#include "common/log.h"
#include "common/number.h"
#include "common/realesrgan_cfg.h"
#include "common/util.h"
#include "common/video.h"
#include "common/video_write.h"
#include "hooks/evaluate.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/precision.h"

extern char **environ;

/* results.tsv (and stdout): a header, one row per image or clip, and a mean row (not with
   `exact`, a shard's table: full precision for the gatherer). psnr_inf / psnr_bicubic_inf: the
   frames (images) whose PSNR is inf, left out of the row's PSNR mean; the mean row's are the
   totals, and its PSNR leaves out the rows whose PSNR is inf (docs/metrics.md). */
static void print_table(FILE *f, const pf_eval_result *r, const char *ch, int exact) {
    const char *fmt = exact ? "%s\t%.17g\t%.17g\t%.17g\t%.17g\t%d\t%d\n"
                            : "%s\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\n";
    fprintf(f, "%s\tpsnr_%s\tssim_%s\tpsnr_bicubic\tssim_bicubic\tpsnr_inf\tpsnr_bicubic_inf\n",
            r->n && r->items[0].frames > 1 ? "clip" : "image", ch, ch);
    for (int i = 0; i < r->n; i++)
        fprintf(f, fmt, r->items[i].name, r->items[i].psnr, r->items[i].ssim,
                r->items[i].psnr_bicubic, r->items[i].ssim_bicubic, r->items[i].psnr_inf,
                r->items[i].psnr_bicubic_inf);
    if (!exact)
        fprintf(f, fmt, "mean", r->psnr, r->ssim, r->psnr_bicubic, r->ssim_bicubic, r->psnr_inf,
                r->psnr_bicubic_inf);
}

/* --video: every clip of the set (all in this process) from its saved PNG frames into
   dir/<clip>.mkv. Returns 0 or -1 with err naming the clip and file. */
static int encode_clips(const pf_dataset *ds, const char *dir, const char *codec, char *err,
                        size_t errlen) {
    const pf_video_dataset *v = ds->video;
    for (int c = 0; c < v->n_clips; c++) {
        const pf_clip *cl = &v->clips[c];
        char folder[300], path[PF_PATH_MAX + 320], frame[PF_PATH_MAX + 340];
        pf_eval_clip_folder(cl, folder, sizeof folder);
        snprintf(path, sizeof path, "%s/%s.mkv", dir, folder);
        int num = 25, den = 1;
        if (cl->gt_video) {     /* the source's nominal rate, to 1/1000 frame/s */
            pf_video *src = pf_video_open(cl->gt_path, err, errlen);
            if (!src) return -1;
            double fps = pf_video_get_info(src).fps;
            pf_video_destroy(&src);
            if (fps > 0) num = (int)(fps * 1000 + 0.5), den = 1000;
        }
        pf_video_writer *vw = NULL;
        int rc = 0;
        for (int t = 0; rc == 0 && t < cl->n_frames; t++) {
            snprintf(frame, sizeof frame, "%s/%s/%08d.png", dir, folder, cl->first + t);
            pf_image img = { 0 };
            rc = pf_image_read(frame, &img, err, errlen);
            if (rc == 0 && !vw) {
                vw = pf_video_writer_open(path, img.w, img.h, num, den, codec, err, errlen);
                rc = vw ? 0 : -1;
            }
            if (rc == 0) rc = pf_video_writer_frame(vw, img.data, err, errlen);
            pf_image_free(&img);
        }
        if (pf_video_writer_close(&vw, 1, err, errlen) != 0) rc = -1;
        if (rc) return -1;
        printf("pixflow: clip %s: %d frames encoded into %s\n", cl->name, cl->n_frames, path);
    }
    return 0;
}

/* Run the shards as child processes (with `--precision precision` unless NULL) and gather
   their rows into `res` in dataset order. */
static int run_shards(const char *cfg_path, const char *ckpt, const char *precision, int n,
                      const pf_dataset *ds, const char *dir, pf_eval_result *res, char *err,
                      size_t errlen) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        snprintf(err, errlen, "cannot find my own executable");
        return -1;
    }
    self[len] = '\0';
    /* Each worker gets its share of the cores unless the user chose a thread count. */
    if (!getenv("OMP_NUM_THREADS")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        char share[16];
        snprintf(share, sizeof share, "%ld", cores / n > 1 ? cores / n : 1);
        setenv("OMP_NUM_THREADS", share, 1);
    }
    pid_t pids[64];
    for (int r = 0; r < n; r++) {
        char shard[32];
        snprintf(shard, sizeof shard, "%d/%d", r, n);
        char *argv[] = { self, "test", (char *)cfg_path, "--checkpoint", (char *)ckpt,
                         "--shard", shard, precision ? "--precision" : NULL,   /* ends here */
                         (char *)precision, NULL };
        int rc = posix_spawn(&pids[r], self, NULL, NULL, argv, environ);
        if (rc != 0) {
            snprintf(err, errlen, "cannot start test worker %d: %s", r, strerror(rc));
            for (int k = 0; k < r; k++) kill(pids[k], SIGTERM);
            n = r;
            break;
        }
    }
    int failed = err[0] != '\0';
    for (int r = 0; r < n; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (!failed) snprintf(err, errlen, "test worker %d of %d failed", r, n);
            failed = 1;
        }
    }
    if (failed) return -1;
    memset(res, 0, sizeof *res);
    const int *clips = NULL;     /* a video set: its clips, as pf_dataset_shard deals them */
    int total = ds->video ? pf_dataset_clips(ds, &clips) : ds->n_files;
    res->items = calloc((size_t)total + 1, sizeof *res->items);
    if (!res->items) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int r = 0; r < n; r++) {
        char path[PF_PATH_MAX + 400];
        snprintf(path, sizeof path, "%s/results_shard%d.tsv", dir, r);
        FILE *f = fopen(path, "r");
        if (!f) {
            snprintf(err, errlen, "%s: missing: %s", path, strerror(errno));
            return -1;
        }
        char line[1024];
        int row = 0;
        if (!fgets(line, sizeof line, f)) row = -1;   /* header */
        for (int i = r; row >= 0 && i < total; i += n) {
            pf_eval_item *it = &res->items[i];
            const pf_clip *cl = ds->video ? &ds->video->clips[clips ? clips[i] : i] : NULL;
            if (!fgets(line, sizeof line, f) ||
                sscanf(line, "%255s %lg %lg %lg %lg %d %d", it->name, &it->psnr, &it->ssim,
                       &it->psnr_bicubic, &it->ssim_bicubic, &it->psnr_inf,
                       &it->psnr_bicubic_inf) != 7 ||
                strcmp(it->name, cl ? cl->name : ds->files[i].name) != 0) {
                row = -1;
                break;
            }
            it->frames = cl ? cl->n_frames : 1;
        }
        fclose(f);
        unlink(path);
        if (row < 0) {
            snprintf(err, errlen, "%s: rows do not match the test set", path);
            return -1;
        }
    }
    res->n = total;
    pf_eval_result_means(res);  /* as one worker: same function, same order of sums */
    return 0;
}

/* The command line of `pixflow test`. */
typedef struct {
    const char *cfg_path, *ckpt;
    const char *video;          /* --video: the encoder's name; NULL without */
    int workers;                /* --workers (test_prepare clamps it to the set's size) */
    int shard, nshards;         /* --shard R/N: this process is worker R of N; -1: the front end */
    int precision;              /* --precision: PF_PREC_FP32 or PF_PREC_BF16 (test_prepare
                                   puts it in test_cfg.precision); -1: the config's */
} test_args;

/* What test_prepare opens for test_run and test_report; test_close frees it. */
typedef struct {
    pf_config *cfg;             /* the loaded config (static storage: it is large) */
    pf_dataset ds;              /* data.test */
    pf_dataset part;            /* a worker's share of ds (--shard); zeroed otherwise */
    char dir[PF_PATH_MAX + 300];   /* work_dir/test/<checkpoint stem>: outputs, results */
} test_job;

/* Read argv into *a (and apply --threads). Returns 0, or 2 after printing the usage or the
   bad option's message. */
static int test_parse(int argc, char **argv, test_args *a) {
    *a = (test_args){ .workers = 1, .shard = -1, .precision = -1 };
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) a->ckpt = argv[++i];
        else if (strcmp(argv[i], "--video") == 0) a->video = "ffv1";
        else if (strncmp(argv[i], "--video=", 8) == 0 && argv[i][8]) a->video = argv[i] + 8;
        else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            if (pf_arg_int("pixflow test", "--workers", argv[++i], 1, 64, &a->workers)) return 2;
        } else if (strcmp(argv[i], "--shard") == 0 && i + 1 < argc) {
            if (pf_arg_part("pixflow test", "--shard", argv[++i], 64, &a->shard, &a->nshards))
                return 2;
        } else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            pf_precision p;
            if (pf_precision_parse(argv[++i], &p) != 0) {
                fprintf(stderr, "pixflow test: --precision %s: expected fp32 or bf16\n",
                        argv[i]);
                return 2;
            }
            a->precision = (int)p;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            int threads;
            if (pf_arg_int("pixflow test", "--threads", argv[++i], 1, PF_MAX_THREADS, &threads))
                return 2;
            pf_set_threads(threads);
        } else if (argv[i][0] != '-' && !a->cfg_path) a->cfg_path = argv[i];
        else a->cfg_path = NULL, i = argc;
    }
    if (!a->cfg_path || !a->ckpt) {
        fprintf(stderr, "usage: pixflow test CONFIG --checkpoint PATH [--workers N] [--threads N] "
                "[--video[=CODEC]] [--precision fp32|bf16]\n");
        return 2;
    }
    return 0;
}

/* Load the config (--precision into its test_cfg.precision), open data.test (seeded for its
   random degradation steps), check --video against it, clamp a->workers to the number of
   images or clips and name the output folder. Returns 0, or 2 after printing why (nothing
   left open). */
static int test_prepare(test_args *a, test_job *j) {
    pf_log_set_name("test");
    pf_config *cfg = j->cfg;
    char err[2048] = "";
    if (pf_config_load(cfg, a->cfg_path, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    if (a->precision >= 0) cfg->test_precision = a->precision;
    if (!cfg->test.present) {
        fprintf(stderr, "pixflow: %s: data.test: required by `pixflow test`\n", a->cfg_path);
        return 2;
    }
    if (pf_dataset_open(&j->ds, &cfg->test, "data.test", cfg->scale, 0, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    pf_dataset_set_seed(&j->ds, pf_dataset_eval_seed(&cfg->test, cfg->seed));
    if (a->shard < 0) pf_dataset_log_gt_crops(&j->ds, "data.test");   /* not again in each worker */
    if (a->video && !j->ds.video) {
        fprintf(stderr, "pixflow: --video: data.test (%s) is not a video set\n", cfg->test.type);
        pf_dataset_close(&j->ds);
        return 2;
    }
    const int *clip_ids;
    int n_items = j->ds.video ? pf_dataset_clips(&j->ds, &clip_ids) : j->ds.n_files;
    if (a->workers > n_items) a->workers = n_items > 0 ? n_items : 1;
    const char *base = strrchr(a->ckpt, '/');
    base = base ? base + 1 : a->ckpt;
    char stem[256];
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(base, "."), base);
    snprintf(j->dir, sizeof j->dir, "%s/test/%s", cfg->work_dir, stem);
    return 0;
}

/* Run the checkpoint over the test set into *r: split across a->workers processes (the front
   end, after checking that the checkpoint fits the network and that this CPU runs its
   precision), or in this process (alone, or as the worker of --shard). Returns 0, or -1
   after printing why. */
static int test_run(const test_args *a, test_job *j, pf_eval_result *r) {
    char err[2048] = "";
    const char *what = a->precision >= 0 ? "--precision" : "test_cfg.precision";
    if (a->shard < 0 && a->workers > 1) {
        /* the checkpoint must fit the network, and bf16 the CPU, before N workers each find
           out it does not */
        pf_model *probe = NULL;
        if (j->cfg->test_precision != PF_PREC_FP32)   /* refused here, if at all */
            probe = pf_model_source_build(j->cfg, what, err, sizeof err);
        int refused = j->cfg->test_precision != PF_PREC_FP32 && !probe;
        pf_model_destroy(&probe);
        if (refused || pf_ckpt_check_weights(j->cfg, a->ckpt, err, sizeof err) != 0 ||
            pf_mkdirs(j->dir, err, sizeof err) != 0 ||
            run_shards(a->cfg_path, a->ckpt,
                       a->precision >= 0 ? pf_precision_name((pf_precision)a->precision) : NULL,
                       a->workers, &j->ds, j->dir, r, err, sizeof err) != 0) {
            fprintf(stderr, "pixflow: %s\n", err);
            return -1;
        }
        return 0;
    }
    pf_dataset *use = &j->ds;
    if (a->shard >= 0) {
        if (pf_dataset_shard(&j->ds, a->shard, a->nshards, &j->part) != 0) {
            fprintf(stderr, "pixflow: out of memory\n");
            return -1;
        }
        use = &j->part;
    }
    pf_model *m = pf_model_source_build(j->cfg, what, err, sizeof err);
    int ema;   /* the EMA weights when the checkpoint has them, as evaluation */
    int rc = 0;
    if (!m || pf_ckpt_load_eval_weights(m, a->ckpt, &ema, err, sizeof err) != 0 ||
        pf_evaluate(m, j->cfg, use, j->dir, NULL, NULL, NULL, NULL, r, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        rc = -1;
    } else if (ema && a->shard < 0) {
        printf("pixflow: %s: its EMA weights (params_ema.*)\n", a->ckpt);
    }
    pf_model_destroy(&m);
    return rc;
}

/* Write what test_run found: a worker's full-precision shard table; or the clips' videos
   (--video), then the table on stdout and in results.tsv and the closing line (a
   SingleImageDataset: the closing line alone). t0: when the run began (pf_now). Returns the
   exit status, 0 or 1. */
static int test_report(const test_args *a, const test_job *j, const pf_eval_result *r,
                       double t0) {
    const pf_config *cfg = j->cfg;
    const char *ch = cfg->eval_y_channel ? "Y" : "RGB";
    char tsv[PF_PATH_MAX + 320];
    char err[2048] = "";
    if (a->shard >= 0) {   /* a worker of a split test: full-precision rows for the gatherer */
        snprintf(tsv, sizeof tsv, "%s/results_shard%d.tsv", j->dir, a->shard);
        FILE *f = fopen(tsv, "w");
        if (!f) {
            fprintf(stderr, "pixflow: %s: cannot write\n", tsv);
            return 1;
        }
        print_table(f, r, ch, 1);
        return fclose(f) == 0 ? 0 : 1;
    }
    if (a->video && encode_clips(&j->ds, j->dir, a->video, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: --video: %s\n", err);
        return 1;
    }
    if (j->ds.single) {    /* no GT: outputs only */
        printf("pixflow: SingleImageDataset (LQ only, no GT): %d images super-resolved x%d in "
               "%.1f s on %d worker%s; no metrics computed; outputs in %s\n", r->n, cfg->scale,
               pf_now() - t0, a->workers, a->workers > 1 ? "s" : "", j->dir);
        return 0;
    }
    snprintf(tsv, sizeof tsv, "%s/results.tsv", j->dir);
    FILE *f = fopen(tsv, "w");
    if (!f) {
        fprintf(stderr, "pixflow: %s: cannot write\n", tsv);
        return 1;
    }
    print_table(stdout, r, ch, 0);
    print_table(f, r, ch, 0);
    fclose(f);
    char mode[192];
    char what[64];
    int frames = 0;
    for (int i = 0; i < r->n; i++) frames += r->items[i].frames;
    if (j->ds.video)
        snprintf(what, sizeof what, "%d clips (%d frames; means per clip, then over clips)",
                 r->n, frames);
    else
        snprintf(what, sizeof what, "%d images", r->n);
    char note[256];
    pf_eval_inf_note(note, sizeof note, j->ds.video ? "frame" : "image", r->psnr_inf,
                     r->psnr_bicubic_inf, j->ds.video ? "clip" : NULL, r->psnr_inf_items,
                     r->psnr_bicubic_inf_items);
    printf("pixflow: %s%s in %.1f s on %d worker%s (crop_border %d, %s, precision %s, "
           "inference: %s); outputs and results.tsv in %s\n", what, note, pf_now() - t0,
           a->workers, a->workers > 1 ? "s" : "", cfg->crop_border, ch,
           pf_precision_name((pf_precision)cfg->test_precision),
           pf_infer_describe(cfg, mode, sizeof mode), j->dir);
    return 0;
}

int pf_test_main(int argc, char **argv) {
    test_args a;
    if (test_parse(argc, argv, &a) != 0) return 2;
    static pf_config cfg;
    test_job j = { .cfg = &cfg };
    if (test_prepare(&a, &j) != 0) return 2;
    pf_eval_result r = { 0 };
    double t0 = pf_now();
    int status = test_run(&a, &j, &r) == 0 ? test_report(&a, &j, &r, t0) : 1;
    pf_eval_result_free(&r);
    if (j.part.files || j.part.video_shared) pf_dataset_close(&j.part);
    pf_dataset_close(&j.ds);
    return status;
}
