/*  `pixflow data CONFIG --explain | --degrade` — what an image dataset of the config makes,
    without training (issue 40).

      pixflow data CONFIG --explain [--set train|eval|test] [--epoch E] --index I
          training sample I of epoch E (default 0; epochs count from 0, as the sampler's), or
          evaluation / test image I (its position in the set as opened): the file, the crop
          (LQ and GT top-left, flips) and, for a RealESRGANDataset, gt_usm and the line of its
          drawn parameters (pf_realesrgan_params_format: all its LQ depends on), to reproduce
          it. A training sample is decoded too, so a corrupt image is an error naming it (1).
          A RealESRGANVideoDataset training sample: the clip, its source frames, the crop and
          flips, gt_usm, the params line of the sample's one draw and each frame's noise key
          (pf_realesrgan_frame_key); other video sets are refused.
      pixflow data CONFIG --degrade --set eval|test -o DIR [--force]
          each image's LQ, exactly as pf_dataset_pair gives it to the eval hook and `pixflow
          test` (the config's seed), written to DIR/<GT stem>.png (temporary file renamed):
          an evaluation set degraded once, to keep, share, or use as a PairedImageDataset with
          lq_folder DIR. An existing DIR/<stem>.png is an error unless --force, checked for
          every image before any is written. Image sets only.
      pixflow data --help | -h: the usage on stdout, exit 0.

    Exit status: 0, 2 for a usage or config error (an option that does not apply to the mode
    or given twice included), 1 when a file cannot be read or written.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/config.h"
#include "common/dataset.h"
#include "common/number.h"
#include "common/realesrgan_cfg.h"
#include "common/util.h"
#include "common/video_dataset.h"

#define CMD "pixflow data"
#define PF_MAX_FRAMES 256     /* --explain of a video sample shows at most this many frames */

typedef struct {
    const char *config;
    int explain, degrade, force;
    const char *set;            /* "train" (explain's default), "eval", "test" */
    int epoch, index;           /* --epoch (0), --index (-1: not given) */
    const char *out;            /* --degrade's -o */
} data_args;

static void usage_to(FILE *f) {
    fprintf(f,
            "usage: pixflow data CONFIG --explain [--set train|eval|test] [--epoch E] --index I\n"
            "         training sample I of epoch E (0), or eval/test image I: its file, crop and\n"
            "         (RealESRGANDataset) gt_usm and the drawn degradation parameters, one line;\n"
            "         a RealESRGANVideoDataset train set: the clip, frames, crop, parameters and\n"
            "         each frame's noise key\n"
            "       pixflow data CONFIG --degrade --set eval|test -o DIR [--force]\n"
            "         each image's LQ as evaluation makes it (the config's seed), written to\n"
            "         DIR/<stem>.png: a degraded set to use with PairedImageDataset + lq_folder\n");
}

static int usage(void) {
    usage_to(stderr);
    return 2;
}

/* An option given twice: 2 after printing which. */
static int once(const char *o, int *seen) {
    if (!*seen) return *seen = 1, 0;
    fprintf(stderr, CMD ": %s given twice\n", o);
    return 2;
}

/* The options that do not apply to the mode: 2 after printing which, else 0. */
static int check_applies(const data_args *a, int seen_epoch, int seen_index) {
    static const char *writes = "--degrade writes files; --explain prints";
    const char *bad = NULL, *why = NULL;
    if (a->explain && a->out) bad = "-o", why = writes;
    else if (a->explain && a->force) bad = "--force", why = writes;
    else if (a->degrade && seen_index) bad = "--index", why = "--degrade writes every image";
    else if (a->degrade && seen_epoch)
        bad = "--epoch", why = "--degrade takes eval/test sets, which have no epochs";
    else if (a->explain && seen_epoch && a->set && strcmp(a->set, "train"))
        bad = "--epoch", why = "only training samples depend on the epoch";
    if (!bad) return 0;
    fprintf(stderr, CMD ": %s does not apply to --%s (%s)\n", bad,
            a->explain ? "explain" : "degrade", why);
    return 2;
}

/* argv into *a; 0, -1 after printing the usage for --help, or 2 after printing why. */
static int parse_args(int argc, char **argv, data_args *a) {
    memset(a, 0, sizeof *a);
    a->index = -1;
    int seen_set = 0, seen_epoch = 0, seen_index = 0, seen_out = 0;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) return usage_to(stdout), -1;
        int takes = !strcmp(o, "--set") || !strcmp(o, "--epoch") || !strcmp(o, "--index") ||
                    !strcmp(o, "-o");
        if (takes && !v) {
            fprintf(stderr, CMD ": %s needs a value\n", o);
            return 2;
        }
        if (!strcmp(o, "--explain")) a->explain = 1;
        else if (!strcmp(o, "--degrade")) a->degrade = 1;
        else if (!strcmp(o, "--force")) a->force = 1;
        else if (!strcmp(o, "--set")) {
            if (once(o, &seen_set)) return 2;
            a->set = v;
        } else if (!strcmp(o, "-o")) {
            if (once(o, &seen_out)) return 2;
            a->out = v;
        } else if (!strcmp(o, "--epoch")) {
            if (once(o, &seen_epoch) || pf_arg_int(CMD, o, v, 0, 2147483647, &a->epoch)) return 2;
        } else if (!strcmp(o, "--index")) {
            if (once(o, &seen_index) || pf_arg_int(CMD, o, v, 0, 2147483647, &a->index)) return 2;
        } else if (o[0] != '-' && !a->config) a->config = o;
        else {
            fprintf(stderr, CMD ": unknown argument '%s'\n", o);
            return usage();
        }
        i += takes;
    }
    if (!a->config || a->explain == a->degrade) return usage();
    if (a->set && strcmp(a->set, "train") && strcmp(a->set, "eval") && strcmp(a->set, "test")) {
        fprintf(stderr, CMD ": --set %s: expected train, eval or test\n", a->set);
        return 2;
    }
    if (check_applies(a, seen_epoch, seen_index)) return 2;
    if (a->explain && a->index < 0) {
        fprintf(stderr, CMD ": --explain needs --index I\n");
        return 2;
    }
    if (a->degrade && (!a->out || !a->set || !strcmp(a->set, "train"))) {
        fprintf(stderr, CMD ": --degrade needs --set eval|test and -o DIR\n");
        return 2;
    }
    if (!a->set) a->set = "train";
    return 0;
}

/* Open data.<set> of the config as the job would (eval/test: whole images, the config's
   seed). 0, or 2 after printing why. */
static int open_set(const pf_config *cfg, const data_args *a, pf_dataset *ds, char *key,
                    size_t keylen) {
    const char *set = a->set;
    const pf_dataset_cfg *d = !strcmp(set, "train") ? &cfg->train
                              : !strcmp(set, "eval") ? &cfg->eval : &cfg->test;
    snprintf(key, keylen, "data.%s", set);
    if (!d->present) {
        fprintf(stderr, CMD ": %s has no %s\n", cfg->path, key);
        return 2;
    }
    int video_explain = a->explain && !strcmp(set, "train") &&
                        !strcmp(d->type, "RealESRGANVideoDataset");
    if (pf_config_is_video_set(d->type) && !video_explain) {
        fprintf(stderr, CMD ": %s is a %s: %s takes image sets%s\n", key, d->type,
                a->explain ? "--explain" : "--degrade",
                a->explain ? " (and a RealESRGANVideoDataset's training samples)" : " only");
        return 2;
    }
    char err[2048];
    int train = !strcmp(set, "train");
    if (pf_dataset_open(ds, d, key, cfg->scale, train ? d->gt_patch_size : 0, err,
                        sizeof err) != 0) {
        fprintf(stderr, CMD ": %s\n", err);
        return 2;
    }
    pf_dataset_set_seed(ds, pf_dataset_eval_seed(d, cfg->seed));
    return 0;
}

/* Decode training sample `index` (pf_dataset_sample) so that a corrupt image is an error
   naming it, as in the loaders. 0, or 1 after printing why. */
static int explain_decode(pf_dataset *ds, const data_args *a, uint64_t seed, const char *key) {
    size_t lp = (size_t)(ds->gt_patch / ds->scale), gp = (size_t)ds->gt_patch;
    uint8_t *gt = malloc(gp * gp * 3), *lq = malloc(lp * lp * 3);
    char err[2048] = "out of memory";
    int rc = gt && lq ? pf_dataset_sample(ds, (uint32_t)a->index, seed, (uint32_t)a->epoch, gt,
                                          lq, err, sizeof err) : -1;
    free(gt);
    free(lq);
    if (rc == 0) return 0;
    fprintf(stderr, CMD ": %s: %s\n", key, err);
    return 1;
}

/* --explain of a RealESRGANVideoDataset training sample: clip, frames, crop, the sample's
   parameters and each frame's noise key. 0, or 2 after printing why. */
static int explain_video(const pf_config *cfg, const data_args *a, const pf_video_dataset *v,
                         const char *key) {
    char err[2048], line[8192];
    int frames[PF_MAX_FRAMES];
    pf_video_where w;
    if (v->num_frame > PF_MAX_FRAMES) {
        fprintf(stderr, CMD ": %s: num_frame %d: --explain shows at most %d\n", key,
                v->num_frame, PF_MAX_FRAMES);
        return 2;
    }
    if (pf_video_dataset_sample_where(v, (uint32_t)a->index, cfg->seed, (uint32_t)a->epoch, &w,
                                      frames, err, sizeof err) != 0) {
        fprintf(stderr, CMD ": %s\n", err);
        return 2;
    }
    const pf_clip *cl = &v->clips[w.clip];
    uint64_t k = pf_dataset_degrade_key(cfg->seed, (uint64_t)a->epoch, (uint64_t)a->index);
    pf_realesrgan_params p;
    pf_realesrgan_draw(&v->resr, k, &p);
    pf_realesrgan_params_format(&p, line, sizeof line);
    printf("%s %s: sample %d of epoch %d (seed %llu; %u samples an epoch)\n", key, v->cfg.type,
           a->index, a->epoch, (unsigned long long)cfg->seed, v->len);
    printf("clip: %s (%s; %dx%d, frames %d..%d used)\n", cl->name, cl->gt_path, cl->gt_w,
           cl->gt_h, cl->first, cl->first + cl->n_frames - 1);
    printf("frames:");
    for (int t = 0; t < v->num_frame; t++) printf(" %d", frames[t]);
    printf(" (interval %d%s)\n", w.interval, w.reverse ? ", reversed" : "");
    int s = v->scale, lp = v->gt_patch / s;
    printf("crop: lq_top=%d lq_left=%d lq_size=%d gt_top=%d gt_left=%d gt_size=%d hflip=%d "
           "vflip=%d transpose=%d\n", w.lq_top, w.lq_left, lp, w.lq_top * s, w.lq_left * s,
           v->gt_patch, w.hflip, w.vflip, w.transpose);
    printf("gt_usm: %d\n", v->cfg.gt_usm);
    printf("params: %s\n", line);
    for (int t = 0; t < v->num_frame; t++)
        printf("frame %d: source frame %d noise key 0x%016llx\n", t, frames[t],
               (unsigned long long)pf_realesrgan_frame_key(k, t));
    return 0;
}

/* --explain: print file, crop and parameters. 0, or 1 (an unreadable image) or 2 after
   printing why. */
static int explain(const pf_config *cfg, const data_args *a, pf_dataset *ds, const char *key) {
    char err[2048], line[8192] = "";
    int train = !strcmp(a->set, "train"), file = a->index, rc;
    pf_patch_crop c = { 0 };
    pf_realesrgan_params p;
    if (ds->video) return explain_video(cfg, a, ds->video, key);
    if (train)
        rc = pf_dataset_sample_crop(ds, (uint32_t)a->index, cfg->seed, (uint32_t)a->epoch, &file,
                                    &c, err, sizeof err);
    else
        rc = a->index < ds->n_files ? 0 : -1;
    if (rc == 0 && ds->realesrgan)
        rc = train ? pf_dataset_sample_params(ds, (uint32_t)a->index, cfg->seed,
                                              (uint32_t)a->epoch, &p, line, sizeof line, err,
                                              sizeof err)
                   : pf_dataset_pair_params(ds, a->index, &p, line, sizeof line, err,
                                            sizeof err);
    if (rc != 0 && !train)
        snprintf(err, sizeof err, "--index %d: image out of range (%s has %d)", a->index, key,
                 ds->n_files);
    if (rc != 0) {
        fprintf(stderr, CMD ": %s: %s\n", key, err);
        return 2;
    }
    if (train && (rc = explain_decode(ds, a, cfg->seed, key)) != 0) return rc;
    const pf_sample_file *f = &ds->files[file];
    if (train)
        printf("%s %s: sample %d of epoch %d (seed %llu; %u samples an epoch)\n", key,
               ds->cfg.type, a->index, a->epoch, (unsigned long long)cfg->seed, ds->len);
    else
        printf("%s %s: image %d of %d (seed %llu)\n", key, ds->cfg.type, a->index, ds->n_files,
               (unsigned long long)cfg->seed);
    const char *path = ds->single ? f->lq_path : f->gt_path;
    printf("file: %s (%dx%d; GT %dx%d, LQ %dx%d)\n", path, f->file_w, f->file_h, f->gt_w,
           f->gt_h, f->lq_w, f->lq_h);
    int s = ds->scale, lp = ds->gt_patch / s;
    if (train)
        printf("crop: lq_top=%d lq_left=%d lq_size=%d gt_top=%d gt_left=%d gt_size=%d hflip=%d "
               "vflip=%d transpose=%d\n", c.top, c.left, lp, c.top * s, c.left * s,
               ds->gt_patch, c.hflip, c.vflip, c.transpose);
    else
        printf("crop: none (the whole image)\n");
    if (ds->realesrgan && train)
        printf("gt_usm: %d (%s)\n", ds->cfg.gt_usm,
               ds->cfg.gt_usm ? "the GT patch is USM-sharpened, then degraded"
                              : "the GT patch is degraded as read");
    else if (ds->realesrgan)
        printf("gt_usm: 0 (evaluation degrades and compares with the GT as read)\n");
    if (ds->realesrgan)
        printf("params: %s\n", line);
    else
        printf("params: none (a %s draws no Real-ESRGAN parameters)\n", ds->cfg.type);
    return 0;
}

/* DIR/<stem>.png of file i into out; -1 (after printing) when too long. */
static int out_path(const data_args *a, const pf_sample_file *f, char *out, size_t len) {
    if ((size_t)snprintf(out, len, "%s/%s.png", a->out, f->name) < len) return 0;
    fprintf(stderr, CMD ": path too long: %s/%s.png\n", a->out, f->name);
    return -1;
}

/* Before writing: the folder exists, no two images share a name, and nothing is overwritten
   without --force. Returns 0, or an exit status after printing why. */
static int degrade_check(const data_args *a, const pf_dataset *ds, const char *key) {
    char err[2048], path[PF_PATH_MAX + 300];
    if (ds->single) {
        fprintf(stderr, CMD ": %s is a SingleImageDataset: no GT to degrade\n", key);
        return 2;
    }
    if (pf_mkdirs(a->out, err, sizeof err) != 0) {
        fprintf(stderr, CMD ": -o %s: %s\n", a->out, err);
        return 1;
    }
    for (int i = 0; i < ds->n_files; i++) {
        const pf_sample_file *f = &ds->files[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(ds->files[j].name, f->name) && strcmp(ds->files[j].gt_path, f->gt_path)) {
                fprintf(stderr, CMD ": %s and %s would both be written to %s/%s.png\n",
                        ds->files[j].gt_path, f->gt_path, a->out, f->name);
                return 2;
            }
        if (out_path(a, f, path, sizeof path) != 0) return 2;
        if (!a->force && access(path, F_OK) == 0) {
            fprintf(stderr, CMD ": %s exists (from %s); --force overwrites\n", path, f->gt_path);
            return 2;
        }
    }
    return 0;
}

/* --degrade: every image's LQ into DIR. 0, or an exit status after printing why. */
static int degrade(const pf_config *cfg, const data_args *a, pf_dataset *ds, const char *key) {
    int rc = degrade_check(a, ds, key), written = 0;
    if (rc != 0) return rc;
    pf_dataset_set_cache_limit(ds, 0);   /* one image at a time */
    char err[2048], path[PF_PATH_MAX + 300];
    for (int i = 0; i < ds->n_files; i++) {
        const pf_sample_file *f = &ds->files[i];
        int seen = 0;   /* a meta_info_file may name an image twice: write it once */
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(ds->files[j].gt_path, f->gt_path);
        if (seen) continue;
        const pf_image *gt, *lq;
        if (out_path(a, f, path, sizeof path) != 0) return 2;
        if (pf_dataset_pair(ds, i, &gt, &lq, err, sizeof err) != 0 ||
            pf_image_write_png(path, lq->data, lq->w, lq->h, err, sizeof err) != 0) {
            fprintf(stderr, CMD ": %s\n", err);
            return 1;
        }
        fprintf(stderr, "%s: %s (%dx%d) -> %s (%dx%d)\n", key, f->gt_path, gt->w, gt->h, path,
                lq->w, lq->h);
        written++;
    }
    printf("%s: wrote %d LQ images (x%d, seed %llu) to %s; use them as a PairedImageDataset "
           "with lq_folder %s\n", key, written, cfg->scale, (unsigned long long)cfg->seed,
           a->out, a->out);
    return 0;
}

int pf_data_main(int argc, char **argv) {
    data_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) return rc < 0 ? 0 : rc;
    static pf_config cfg;
    char err[2048], key[32];
    if (pf_config_load(&cfg, a.config, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    pf_dataset ds;
    if ((rc = open_set(&cfg, &a, &ds, key, sizeof key)) != 0) return rc;
    rc = a.explain ? explain(&cfg, &a, &ds, key) : degrade(&cfg, &a, &ds, key);
    pf_dataset_close(&ds);
    return rc;
}
