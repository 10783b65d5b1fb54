/*  `pixflow data CONFIG --explain | --degrade` — what an image dataset of the config makes,
    without training (issue 40).

      pixflow data CONFIG --explain [--set train|eval|test] [--epoch E] --index I
          training sample I of epoch E (default 0; epochs count from 0, as the sampler's), or
          evaluation / test image I (its position in the set as opened): the file, the crop
          (LQ and GT top-left, flips) and, for a RealESRGANDataset, the line of its drawn
          parameters (pf_realesrgan_params_format: all its LQ depends on), to reproduce it.
      pixflow data CONFIG --degrade --set eval|test -o DIR [--force]
          each image's LQ, exactly as pf_dataset_pair gives it to the eval hook and `pixflow
          test` (the config's seed), written to DIR/<GT stem>.png (temporary file renamed):
          an evaluation set degraded once, to keep, share, or use as a PairedImageDataset with
          lq_folder DIR. An existing DIR/<stem>.png is an error unless --force, checked for
          every image before any is written.

    Exit status: 0, 2 for a usage or config error, 1 when a file cannot be read or written.
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

#define CMD "pixflow data"

typedef struct {
    const char *config;
    int explain, degrade, force;
    const char *set;            /* "train" (explain's default), "eval", "test" */
    int epoch, index;           /* --epoch (0), --index (-1: not given) */
    const char *out;            /* --degrade's -o */
} data_args;

static int usage(void) {
    fprintf(stderr,
            "usage: pixflow data CONFIG --explain [--set train|eval|test] [--epoch E] --index I\n"
            "         training sample I of epoch E (0), or eval/test image I: its file, crop and\n"
            "         (RealESRGANDataset) the drawn degradation parameters, one line\n"
            "       pixflow data CONFIG --degrade --set eval|test -o DIR [--force]\n"
            "         each image's LQ as evaluation makes it (the config's seed), written to\n"
            "         DIR/<stem>.png: a degraded set to use with PairedImageDataset + lq_folder\n");
    return 2;
}

/* argv into *a; 0, or 2 after printing why. */
static int parse_args(int argc, char **argv, data_args *a) {
    memset(a, 0, sizeof *a);
    a->index = -1;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(o, "--set") || !strcmp(o, "--epoch") || !strcmp(o, "--index") ||
                    !strcmp(o, "-o");
        if (takes && !v) {
            fprintf(stderr, CMD ": %s needs a value\n", o);
            return 2;
        }
        if (!strcmp(o, "--explain")) a->explain = 1;
        else if (!strcmp(o, "--degrade")) a->degrade = 1;
        else if (!strcmp(o, "--force")) a->force = 1;
        else if (!strcmp(o, "--set")) a->set = v;
        else if (!strcmp(o, "-o")) a->out = v;
        else if (!strcmp(o, "--epoch") && pf_arg_int(CMD, o, v, 0, 2147483647, &a->epoch)) return 2;
        else if (!strcmp(o, "--index") && pf_arg_int(CMD, o, v, 0, 2147483647, &a->index)) return 2;
        else if (o[0] != '-' && !a->config) a->config = o;
        else if (!takes) {
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
static int open_set(const pf_config *cfg, const char *set, pf_dataset *ds, char *key,
                    size_t keylen) {
    const pf_dataset_cfg *d = !strcmp(set, "train") ? &cfg->train
                              : !strcmp(set, "eval") ? &cfg->eval : &cfg->test;
    snprintf(key, keylen, "data.%s", set);
    if (!d->present) {
        fprintf(stderr, CMD ": %s has no %s\n", cfg->path, key);
        return 2;
    }
    if (pf_config_is_video_set(d->type)) {
        fprintf(stderr, CMD ": %s is a %s: --explain and --degrade take image sets\n", key,
                d->type);
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

/* --explain: print file, crop and parameters. 0, or 2 after printing why. */
static int explain(const pf_config *cfg, const data_args *a, pf_dataset *ds, const char *key) {
    char err[2048], line[8192] = "";
    int train = !strcmp(a->set, "train"), file = a->index, rc;
    pf_patch_crop c = { 0 };
    pf_realesrgan_params p;
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
    if (rc != 0) return rc;
    static pf_config cfg;
    char err[2048], key[32];
    if (pf_config_load(&cfg, a.config, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    pf_dataset ds;
    if ((rc = open_set(&cfg, a.set, &ds, key, sizeof key)) != 0) return rc;
    rc = a.explain ? explain(&cfg, &a, &ds, key) : degrade(&cfg, &a, &ds, key);
    pf_dataset_close(&ds);
    return rc;
}
