/*  dataset — see dataset.h. */
#include "loader/dataset.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/image_info.h"
#include "common/imresize.h"
#include "common/log.h"
#include "common/rng.h"

static int has_png_ext(const char *name) {
    size_t n = strlen(name);
    return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* LQ file name from the template: every "{}" becomes the GT stem. */
static int lq_name(char *out, size_t outlen, const char *tmpl, const char *stem) {
    size_t n = 0;
    for (const char *p = tmpl; *p;) {
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '{' && p[1] == '}') {
            piece = stem;
            len = strlen(stem);
            p += 2;
        } else {
            p++;
        }
        if (n + len >= outlen) return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    if (n + 5 > outlen) return -1;
    memcpy(out + n, ".png", 5);
    return 0;
}

int pf_dataset_open(pf_dataset *ds, const pf_dataset_cfg *cfg, const char *key, int scale,
                    int gt_patch_size, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    ds->cfg = *cfg;
    ds->scale = scale;
    ds->gt_patch = gt_patch_size;
    ds->stats.limit = SIZE_MAX;
    pthread_mutex_init(&ds->lock, NULL);
    DIR *d = opendir(cfg->gt_folder);
    if (!d) {
        snprintf(err, errlen, "%s.gt_folder: cannot open '%s': %s", key, cfg->gt_folder,
                 strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, skipped = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (!has_png_ext(e->d_name)) {
            skipped++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **t = realloc(names, sizeof *names * cap);
            if (!t) break;  /* e != NULL marks the failure below */
            names = t;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    if (e) {    /* stopped early: out of memory */
        closedir(d);
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
        snprintf(err, errlen, "%s: out of memory listing '%s'", key, cfg->gt_folder);
        return -1;
    }
    closedir(d);
    if (skipped)
        pf_warn("%s.gt_folder: ignoring %d files that are not .png in '%s'", key, skipped,
                cfg->gt_folder);
    if (n == 0) {
        snprintf(err, errlen, "%s.gt_folder: no .png files in '%s'", key, cfg->gt_folder);
        free(names);
        return -1;
    }
    qsort(names, n, sizeof *names, cmp_str);
    ds->files = calloc(n, sizeof *ds->files);
    ds->n_files = n;
    int rc = ds->files ? 0 : -1;
    if (rc) snprintf(err, errlen, "%s: out of memory", key);
    int lq_patch = gt_patch_size / scale;
    for (int i = 0; i < n && rc == 0; i++) {
        pf_sample_file *f = &ds->files[i];
        snprintf(f->gt_path, sizeof f->gt_path, "%s/%s", cfg->gt_folder, names[i]);
        snprintf(f->name, sizeof f->name, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        int w, h;
        if (pf_image_png_size(f->gt_path, &w, &h, err, errlen)) {
            rc = -1;
            break;
        }
        f->file_w = w;
        f->file_h = h;
        if (cfg->lq_folder[0]) {
            char lqn[512];
            if (lq_name(lqn, sizeof lqn, cfg->filename_tmpl, f->name)) {
                snprintf(err, errlen, "%s.filename_tmpl: name too long for '%s'", key, f->name);
                rc = -1;
                break;
            }
            snprintf(f->lq_path, sizeof f->lq_path, "%s/%s", cfg->lq_folder, lqn);
            struct stat st;
            if (stat(f->lq_path, &st) != 0) {
                snprintf(err, errlen, "%s: no LQ image '%s' for GT '%s' (lq_folder + "
                         "filename_tmpl '%s')", key, f->lq_path, f->gt_path,
                         cfg->filename_tmpl);
                rc = -1;
                break;
            }
            if (pf_image_png_size(f->lq_path, &f->lq_w, &f->lq_h, err, errlen)) {
                rc = -1;
                break;
            }
            if (w != f->lq_w * scale || h != f->lq_h * scale) {
                snprintf(err, errlen, "%s: GT '%s' is %dx%d but LQ '%s' is %dx%d: GT must be "
                         "exactly scale %d x LQ", key, f->gt_path, w, h, f->lq_path, f->lq_w,
                         f->lq_h, scale);
                rc = -1;
                break;
            }
            f->gt_w = w;
            f->gt_h = h;
        } else {
            f->gt_w = w - w % scale;    /* mod-crop, as BasicSR's mod_crop */
            f->gt_h = h - h % scale;
            f->lq_w = f->gt_w / scale;
            f->lq_h = f->gt_h / scale;
        }
        if (f->lq_w < 1 || f->lq_h < 1 || (lq_patch > 0 && (f->lq_w < lq_patch ||
                                                              f->lq_h < lq_patch))) {
            snprintf(err, errlen, "%s: '%s' (%dx%d, LQ %dx%d) is smaller than the patch: "
                     "gt_patch_size %d needs an LQ of at least %dx%d", key, f->gt_path, w, h,
                     f->lq_w, f->lq_h, gt_patch_size, lq_patch, lq_patch);
            rc = -1;
            break;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc) {
        pf_dataset_close(ds);
        return -1;
    }
    uint64_t len = (uint64_t)n * (uint64_t)(cfg->repeat > 0 ? cfg->repeat : 1);
    if (len > UINT32_MAX) {
        snprintf(err, errlen, "%s.repeat: %d images x %d is more than 2^32 samples", key, n,
                 cfg->repeat);
        pf_dataset_close(ds);
        return -1;
    }
    ds->len = (uint32_t)len;
    return 0;
}

int pf_dataset_shard(const pf_dataset *ds, int r, int n, pf_dataset *out) {
    *out = *ds;
    out->files = calloc((size_t)ds->n_files / n + 1, sizeof *out->files);
    if (!out->files) return -1;
    out->n_files = 0;
    for (int i = r; i < ds->n_files; i += n) {
        pf_sample_file *f = &out->files[out->n_files++];
        *f = ds->files[i];
        f->decoded = 0;
        memset(&f->gt, 0, sizeof f->gt);
        memset(&f->lq, 0, sizeof f->lq);
    }
    out->len = (uint32_t)out->n_files;
    memset(&out->stats, 0, sizeof out->stats);
    out->stats.limit = ds->stats.limit;
    pthread_mutex_init(&out->lock, NULL);
    return 0;
}

void pf_dataset_close(pf_dataset *ds) {
    for (int i = 0; i < ds->n_files && ds->files; i++) {
        pf_image_free(&ds->files[i].gt);
        pf_image_free(&ds->files[i].lq);
    }
    free(ds->files);
    ds->files = NULL;
    ds->n_files = 0;
    pthread_mutex_destroy(&ds->lock);
}

int pf_dataset_pair(pf_dataset *ds, int file, const pf_image **gt, const pf_image **lq,
                    char *err, size_t errlen) {
    pf_sample_file *f = &ds->files[file];
    if (f->decoded) ds->stats.hits++;
    else ds->stats.misses++;
    if (!f->decoded) {
        pf_image g = { 0 }, l = { 0 };
        if (pf_image_read_png(f->gt_path, &g, err, errlen)) return -1;
        /* The file may have been replaced since open: everything below relies on its size. */
        if (g.w != f->file_w || g.h != f->file_h) {
            snprintf(err, errlen, "%s: size changed since start-up", f->gt_path);
            pf_image_free(&g);
            return -1;
        }
        if (g.w != f->gt_w) {   /* mod-crop in place: keep the top-left gt_w x gt_h */
            for (int y = 0; y < f->gt_h; y++)
                memmove(g.data + (size_t)y * f->gt_w * 3, g.data + (size_t)y * g.w * 3,
                        (size_t)f->gt_w * 3);
            g.w = f->gt_w;
        }
        g.h = f->gt_h;
        if (f->lq_path[0]) {
            if (pf_image_read_png(f->lq_path, &l, err, errlen)) {
                pf_image_free(&g);
                return -1;
            }
            if (l.w != f->lq_w || l.h != f->lq_h) {
                snprintf(err, errlen, "%s: size changed since start-up", f->lq_path);
                pf_image_free(&g);
                pf_image_free(&l);
                return -1;
            }
        } else {
            l.w = f->lq_w;
            l.h = f->lq_h;
            l.data = malloc((size_t)l.w * l.h * 3);
            if (!l.data || pf_imresize_u8(g.data, g.h, g.w, 3, 1.0 / ds->scale, l.data)) {
                snprintf(err, errlen, "%s: bicubic downscaling failed (out of memory)",
                         f->gt_path);
                pf_image_free(&g);
                pf_image_free(&l);
                return -1;
            }
        }
        f->gt = g;
        f->lq = l;
        f->decoded = 1;
        ds->stats.bytes += ((size_t)g.w * g.h + (size_t)l.w * l.h) * 3;
    }
    *gt = &f->gt;
    *lq = &f->lq;
    return 0;
}

/* Copy a p x p patch at (top, left) of `src` (width w) into dst with the flips and transpose
   applied as BasicSR's augment does them: hflip, then vflip, then transpose. */
static void copy_patch(const uint8_t *src, int w, int top, int left, int p, int hflip,
                       int vflip, int transpose, uint8_t *dst) {
    for (int y = 0; y < p; y++) {
        for (int x = 0; x < p; x++) {
            int a = transpose ? x : y;
            int b = transpose ? y : x;
            if (vflip) a = p - 1 - a;
            if (hflip) b = p - 1 - b;
            const uint8_t *s = src + ((size_t)(top + a) * w + (left + b)) * 3;
            uint8_t *d = dst + ((size_t)y * p + x) * 3;
            d[0] = s[0];
            d[1] = s[1];
            d[2] = s[2];
        }
    }
}

void pf_paired_crop_augment(const pf_image *gt, const pf_image *lq, int scale, int gt_patch,
                            int use_flip, int use_rot, uint64_t seed, uint32_t epoch,
                            uint32_t index, uint8_t *gt_out, uint8_t *lq_out) {
    int lq_patch = gt_patch / scale;
    pf_rng r = pf_rng_make(seed, epoch, index);
    int top = (int)pf_rng_below(&r, (uint32_t)(lq->h - lq_patch + 1));
    int left = (int)pf_rng_below(&r, (uint32_t)(lq->w - lq_patch + 1));
    uint64_t bits = pf_rng_u64(&r);
    int hflip = use_flip && (bits & 1);
    int vflip = use_flip && (bits & 2);
    int transpose = use_rot && (bits & 4);
    copy_patch(lq->data, lq->w, top, left, lq_patch, hflip, vflip, transpose, lq_out);
    copy_patch(gt->data, gt->w, top * scale, left * scale, gt_patch, hflip, vflip, transpose,
               gt_out);
}

void pf_dataset_set_cache_limit(pf_dataset *ds, size_t bytes) {
    pthread_mutex_lock(&ds->lock);
    ds->stats.limit = bytes;
    pthread_mutex_unlock(&ds->lock);
}

void pf_dataset_cache_stats(pf_dataset *ds, pf_cache_stats *out) {
    pthread_mutex_lock(&ds->lock);
    *out = ds->stats;
    pthread_mutex_unlock(&ds->lock);
}

int pf_dataset_sample(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                      uint8_t *gt_out, uint8_t *lq_out, char *err, size_t errlen) {
    if (index >= ds->len) {
        snprintf(err, errlen, "sample %u is out of range (the dataset has %u)", index, ds->len);
        return -1;
    }
    const pf_image *gt, *lq;
    pthread_mutex_lock(&ds->lock);
    int rc = pf_dataset_pair(ds, (int)(index % (uint32_t)ds->n_files), &gt, &lq, err, errlen);
    if (rc == 0)
        pf_paired_crop_augment(gt, lq, ds->scale, ds->gt_patch, ds->cfg.use_flip,
                               ds->cfg.use_rot, seed, epoch, index, gt_out, lq_out);
    pthread_mutex_unlock(&ds->lock);
    return rc;
}
