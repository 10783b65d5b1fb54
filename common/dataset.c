/*  dataset — see dataset.h.

    The file list is built once at open (folder listing or meta_info_file) and never changes;
    the decoded pairs live in ds->cache (common/pair_cache.h), entry i for files[i].
*/
#include "common/dataset.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/degrade.h"
#include "common/file_list.h"
#include "common/image_info.h"
#include "common/log.h"
#include "common/realesrgan_cfg.h"

/* BasicSR meta_info: the first whitespace-separated word of each non-empty line names a file
   of `folder`, in order. A missing file or another extension is an error naming the meta file
   and line. */
static int read_meta(const char *meta, const char *folder, const char *key, const char *field,
                     pf_name_list *out, char *err, size_t errlen) {
    FILE *f = fopen(meta, "r");
    if (!f) {
        snprintf(err, errlen, "%s.meta_info_file: cannot open '%s': %s", key, meta,
                 strerror(errno));
        return -1;
    }
    char line[4096], path[PF_PATH_MAX * 2];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *word = line + strspn(line, " \t\r\n");
        word[strcspn(word, " \t\r\n")] = 0;
        if (!word[0]) continue;
        snprintf(path, sizeof path, "%s/%s", folder, word);
        if (pf_image_format_of(word) == PF_IMAGE_UNKNOWN) {
            snprintf(err, errlen, "%s.meta_info_file: %s:%d: '%s' is not a .png, .jpg or .jpeg "
                     "file", key, meta, lineno, word);
            rc = -1;
        } else if (!pf_is_file(path)) {
            snprintf(err, errlen, "%s.meta_info_file: %s:%d: no file '%s' (%s '%s')", key, meta,
                     lineno, path, field, folder);
            rc = -1;
        } else if (pf_names_add(out, word) != 0) {
            snprintf(err, errlen, "%s: out of memory reading '%s'", key, meta);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s.meta_info_file: read error on '%s'", key, meta);
        rc = -1;
    }
    fclose(f);
    if (rc == 0 && out->n == 0) {
        snprintf(err, errlen, "%s.meta_info_file: '%s' names no file", key, meta);
        rc = -1;
    }
    return rc;
}

/* The stem of a file name: no folder, no extension. */
static void stem_of(const char *name, char *out, size_t outlen) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    snprintf(out, outlen, "%.*s", (int)(dot ? dot - base : (long)strlen(base)), base);
}

/* LQ path for a GT stem: lq_folder/tmpl(stem) with the GT's extension if that file exists,
   else the first of .png, .jpg, .jpeg that does; `out` holds the first candidate when none
   exists. Returns 1 found, 0 not found, -1 name too long. */
static int find_lq(char *out, size_t outlen, const char *folder, const char *tmpl,
                   const char *stem, const char *gt_ext) {
    char base[512];
    size_t n = 0;
    for (const char *p = tmpl; *p;) {     /* every "{}" becomes the stem */
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '{' && p[1] == '}') {
            piece = stem;
            len = strlen(stem);
            p += 2;
        } else {
            p++;
        }
        if (n + len >= sizeof base) return -1;
        memcpy(base + n, piece, len);
        n += len;
    }
    base[n] = 0;
    const char *exts[] = { gt_ext, ".png", ".jpg", ".jpeg" };
    for (int i = 0; i < 4; i++) {
        if ((size_t)snprintf(out, outlen, "%s/%s%s", folder, base, exts[i]) >= outlen) return -1;
        if (pf_is_file(out)) return 1;
    }
    snprintf(out, outlen, "%s/%s%s", folder, base, gt_ext);
    return 0;
}

/* Evaluation and test (no training patch) take a GT up to scale - 1 pixels larger than
   scale x its LQ in each dimension and compare its top-left scale x LQ, as BasicSR's
   PairedImageDataset does outside training (img_gt[0:lq_h * scale, 0:lq_w * scale]): an LQ
   made by a bicubic downscale of a GT whose size is not a multiple of the scale. */
static int pair_croppable(const pf_dataset *ds, const pf_sample_file *f, int w, int h) {
    int dw = w - f->lq_w * ds->scale, dh = h - f->lq_h * ds->scale;
    return ds->gt_patch == 0 && dw >= 0 && dh >= 0 && dw < ds->scale && dh < ds->scale;
}

/* The error for a GT that is not scale x its LQ (and, at evaluation, not croppable to it):
   both files and sizes, and the sizes to crop to. Returns -1. */
static int pair_size_error(const pf_dataset *ds, const pf_sample_file *f, const char *key,
                           int w, int h, char *err, size_t errlen) {
    int s = ds->scale;
    /* The largest pair both files hold: LQ at most its size and GT / scale per dimension. */
    int lw = f->lq_w < w / s ? f->lq_w : w / s, lh = f->lq_h < h / s ? f->lq_h : h / s;
    char fix[160];
    if (lw == f->lq_w && lh == f->lq_h)
        snprintf(fix, sizeof fix, "crop the GT to %dx%d (its top-left)", lw * s, lh * s);
    else if (lw * s == w && lh * s == h)
        snprintf(fix, sizeof fix, "crop the LQ to %dx%d (its top-left)", lw, lh);
    else
        snprintf(fix, sizeof fix, "crop the LQ to %dx%d and the GT to %dx%d (their top-left)",
                 lw, lh, lw * s, lh * s);
    if (lw < 1 || lh < 1) snprintf(fix, sizeof fix, "are they a pair?");
    char rule[160] = "";
    if (ds->gt_patch == 0)
        snprintf(rule, sizeof rule, " (evaluation crops a GT up to %d pixel%s larger in each "
                 "dimension, not this one)", s - 1, s - 1 == 1 ? "" : "s");
    snprintf(err, errlen, "%s: GT '%s' is %dx%d but LQ '%s' is %dx%d: at scale %d the GT must "
             "be %dx%d%s; %s", key, f->gt_path, w, h, f->lq_path, f->lq_w, f->lq_h, s,
             f->lq_w * s, f->lq_h * s, rule, fix);
    return -1;
}

/* Fill and check files[i] for the file `name` (relative to its folder). */
static int open_file(pf_dataset *ds, pf_sample_file *f, const char *name, const char *key,
                     char *err, size_t errlen) {
    const pf_dataset_cfg *cfg = &ds->cfg;
    int scale = ds->scale, lq_patch = ds->gt_patch / scale;
    stem_of(name, f->name, sizeof f->name);
    if (ds->single) {
        if ((size_t)snprintf(f->lq_path, sizeof f->lq_path, "%s/%s", cfg->lq_folder, name) >=
            sizeof f->lq_path) {
            snprintf(err, errlen, "%s: path too long: '%s/%s'", key, cfg->lq_folder, name);
            return -1;
        }
        if (pf_image_size(f->lq_path, &f->lq_w, &f->lq_h, err, errlen)) return -1;
        f->file_w = f->lq_w;
        f->file_h = f->lq_h;
        return 0;
    }
    if ((size_t)snprintf(f->gt_path, sizeof f->gt_path, "%s/%s", cfg->gt_folder, name) >=
        sizeof f->gt_path) {
        snprintf(err, errlen, "%s: path too long: '%s/%s'", key, cfg->gt_folder, name);
        return -1;
    }
    int w, h;
    if (pf_image_size(f->gt_path, &w, &h, err, errlen)) return -1;
    f->file_w = w;
    f->file_h = h;
    if (cfg->lq_folder[0]) {
        int found = find_lq(f->lq_path, sizeof f->lq_path, cfg->lq_folder, cfg->filename_tmpl,
                            f->name, strrchr(name, '.'));
        if (found < 0) {
            snprintf(err, errlen, "%s.filename_tmpl: name too long for '%s'", key, f->name);
            return -1;
        }
        if (!found) {
            snprintf(err, errlen, "%s: no LQ image '%s' (nor .png, .jpg, .jpeg) for GT '%s' "
                     "(lq_folder + filename_tmpl '%s')", key, f->lq_path, f->gt_path,
                     cfg->filename_tmpl);
            return -1;
        }
        if (pf_image_size(f->lq_path, &f->lq_w, &f->lq_h, err, errlen)) return -1;
        if (w != f->lq_w * scale || h != f->lq_h * scale) {
            if (!pair_croppable(ds, f, w, h)) return pair_size_error(ds, f, key, w, h, err, errlen);
            f->gt_cropped = 1;   /* load_pair keeps the top-left gt_w x gt_h */
        }
        f->gt_w = f->lq_w * scale;
        f->gt_h = f->lq_h * scale;
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
                 f->lq_w, f->lq_h, ds->gt_patch, lq_patch, lq_patch);
        return -1;
    }
    char why[512];
    if (ds->realesrgan && ds->gt_patch == 0 &&
        pf_realesrgan_opts_check(&ds->resr, f->gt_h, f->gt_w, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: '%s' (%dx%d, mod-cropped %dx%d) is too small for the "
                 "Real-ESRGAN degradation: %s", key, f->gt_path, w, h, f->gt_w, f->gt_h, why);
        return -1;
    }
    return 0;
}

/* A RealESRGANDataset's part of open: no lq_folder, the options read once. */
static int open_realesrgan(pf_dataset *ds, const char *key, char *err, size_t errlen) {
    if (ds->cfg.lq_folder[0]) {
        snprintf(err, errlen, "%s.lq_folder: a RealESRGANDataset makes its LQ from the GT "
                 "(Real-ESRGAN's degradations), it reads no '%s'; remove lq_folder, or use a "
                 "PairedImageDataset with it (a set frozen by `pixflow data --degrade`)", key,
                 ds->cfg.lq_folder);
        return -1;
    }
    ds->realesrgan = 1;
    return pf_dataset_realesrgan_opts(&ds->cfg, key, ds->scale, ds->gt_patch, &ds->resr, err,
                                      errlen);
}

/* Everything of a dataset but its file list, for open and shard. */
static void init_extra(pf_dataset *ds) {
    ds->pair_file = -1;
    memset(&ds->pair_lq, 0, sizeof ds->pair_lq);
}

int pf_dataset_open(pf_dataset *ds, const pf_dataset_cfg *cfg, const char *key, int scale,
                    int gt_patch_size, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    ds->cfg = *cfg;
    ds->scale = scale;
    ds->gt_patch = gt_patch_size;
    ds->frames = 1;
    ds->gt_frames = 1;
    if (pf_config_is_video_set(cfg->type)) {
        ds->video = calloc(1, sizeof *ds->video);
        if (!ds->video) {
            snprintf(err, errlen, "%s: out of memory", key);
            return -1;
        }
        if (pf_video_dataset_open(ds->video, cfg, key, scale, gt_patch_size, err, errlen)) {
            free(ds->video);
            ds->video = NULL;
            return -1;
        }
        ds->len = ds->video->len;
        if (gt_patch_size > 0) ds->frames = ds->video->num_frame;
        ds->gt_frames = gt_patch_size > 0 ? ds->video->gt_frames : 1;
        ds->random_steps = ds->video->random_steps;
        init_extra(ds);
        return 0;
    }
    ds->single = strcmp(cfg->type, "SingleImageDataset") == 0;
    init_extra(ds);
    if (strcmp(cfg->type, "RealESRGANDataset") == 0) {
        if (open_realesrgan(ds, key, err, errlen) != 0) return -1;
    } else {
        ds->random_steps = !cfg->lq_folder[0] &&
                           pf_degrade_is_random(cfg->degradation, cfg->n_degradations);
    }
    const char *folder = ds->single ? cfg->lq_folder : cfg->gt_folder;
    const char *field = ds->single ? "lq_folder" : "gt_folder";
    pf_name_list names = { 0 };
    int rc = cfg->meta_info_file[0]
                 ? read_meta(cfg->meta_info_file, folder, key, field, &names, err, errlen)
                 : pf_list_images(folder, key, field, &names, err, errlen);
    if (rc == 0) {
        ds->files = calloc(names.n, sizeof *ds->files);
        if (!ds->files || pf_pair_cache_init(&ds->cache, names.n, SIZE_MAX) != 0) {
            snprintf(err, errlen, "%s: out of memory", key);
            rc = -1;
        }
    }
    for (int i = 0; rc == 0 && i < names.n; i++) {
        pf_sample_file *f = &ds->files[i];
        f->id = i;
        ds->n_files = i + 1;
        rc = open_file(ds, f, names.names[i], key, err, errlen);
    }
    pf_names_free(&names);
    uint64_t len = (uint64_t)ds->n_files * (uint64_t)(cfg->repeat > 0 ? cfg->repeat : 1);
    if (rc == 0 && len > UINT32_MAX) {
        snprintf(err, errlen, "%s.repeat: %d images x %d is more than 2^32 samples", key,
                 ds->n_files, cfg->repeat);
        rc = -1;
    }
    if (rc) {
        pf_dataset_close(ds);
        return -1;
    }
    ds->len = (uint32_t)len;
    return 0;
}

int pf_dataset_log_gt_crops(const pf_dataset *ds, const char *key) {
    int n = 0;
    for (int i = 0; i < ds->n_files; i++) {
        const pf_sample_file *f = &ds->files[i];
        if (!f->gt_cropped) continue;
        pf_info("%s: GT '%s' is %dx%d, LQ '%s' %dx%d: comparing the GT's top-left %dx%d "
                "(BasicSR's crop outside training)", key, f->gt_path, f->file_w, f->file_h,
                f->lq_path, f->lq_w, f->lq_h, f->gt_w, f->gt_h);
        n++;
    }
    return n;
}

int pf_dataset_clips(const pf_dataset *ds, const int **ids) {
    *ids = ds->clip_ids;
    return ds->clip_ids ? ds->n_clip_ids : ds->video ? ds->video->n_clips : 0;
}

int pf_dataset_shard(const pf_dataset *ds, int r, int n, pf_dataset *out) {
    *out = *ds;
    init_extra(out);
    if (ds->video) {
        const int *all;
        int total = pf_dataset_clips(ds, &all), count = 0;
        out->video_shared = 1;
        out->clip_ids = malloc(((size_t)total / (size_t)n + 1) * sizeof *out->clip_ids);
        if (!out->clip_ids) return -1;
        for (int i = r; i < total; i += n) out->clip_ids[count++] = all ? all[i] : i;
        out->n_clip_ids = count;
        out->len = (uint32_t)count;
        return 0;
    }
    int count = ds->n_files / n + (r < ds->n_files % n);
    out->files = calloc((size_t)count + 1, sizeof *out->files);
    if (!out->files || pf_pair_cache_init(&out->cache, count, ds->cache.stats.limit) != 0) {
        free(out->files);
        out->files = NULL;
        out->n_files = 0;
        return -1;
    }
    out->n_files = 0;
    for (int i = r; i < ds->n_files; i += n) out->files[out->n_files++] = ds->files[i];
    out->len = (uint32_t)out->n_files;
    return 0;
}

void pf_dataset_set_seed(pf_dataset *ds, uint64_t seed) {
    ds->seed = seed;
}

void pf_dataset_close(pf_dataset *ds) {
    if (ds->video && !ds->video_shared) {
        pf_video_dataset_close(ds->video);
        free(ds->video);
    }
    ds->video = NULL;
    free(ds->clip_ids);
    ds->clip_ids = NULL;
    pf_pair_cache_free(&ds->cache);
    free(ds->files);
    ds->files = NULL;
    ds->n_files = 0;
    pf_image_free(&ds->pair_lq);
    ds->pair_file = -1;
}

/* ---- decoded pairs ---------------------------------------------------------------------- */

/* The key of evaluation image f's random draws (DN, JPEG, Real-ESRGAN). */
static uint64_t pair_key(const pf_dataset *ds, const pf_sample_file *f) {
    return pf_dataset_degrade_key(ds->seed, PF_DATASET_EVAL_EPOCH, (uint64_t)f->id);
}

/* "what: why" into err, where why may be err itself. */
static void prefix_err(char *err, size_t errlen, const char *what) {
    char why[1024];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "%s: %s", what, why);
}

/* A RealESRGANDataset's evaluation LQ, made once when its GT g is decoded and cached with
   it: the whole GT degraded with the parameters of pf_dataset_pair_params. */
static int realesrgan_eval_lq(const pf_dataset *ds, const pf_sample_file *f, pf_image *g,
                              pf_image *l, char *err, size_t errlen) {
    l->w = f->lq_w;
    l->h = f->lq_h;
    l->data = malloc((size_t)l->w * l->h * 3);
    pf_realesrgan_params p;
    pf_realesrgan_draw(&ds->resr, pair_key(ds, f), &p);
    if (!l->data) snprintf(err, errlen, "out of memory");
    if (!l->data || pf_realesrgan_degrade_u8(&ds->resr, &p, g->data, g->h, g->w, l->data, NULL,
                                             err, errlen) != 0) {
        prefix_err(err, errlen, f->gt_path);
        pf_image_free(g);
        pf_image_free(l);
        return -1;
    }
    return 0;
}

/* Decode file f's pair (no lock held: reads only what open set). GT is mod-cropped; LQ is
   read, or made by the downscaling step. Returns 0, or -1 with err naming the file. */
static int load_pair(const pf_dataset *ds, const pf_sample_file *f, pf_image *g, pf_image *l,
                     char *err, size_t errlen) {
    if (ds->single) {
        if (pf_image_read(f->lq_path, l, err, errlen)) return -1;
        if (l->w != f->lq_w || l->h != f->lq_h) {
            snprintf(err, errlen, "%s: size changed since start-up", f->lq_path);
            pf_image_free(l);
            return -1;
        }
        return 0;
    }
    if (pf_image_read(f->gt_path, g, err, errlen)) return -1;
    /* The file may have been replaced since open: everything below relies on its size. */
    if (g->w != f->file_w || g->h != f->file_h) {
        snprintf(err, errlen, "%s: size changed since start-up", f->gt_path);
        pf_image_free(g);
        return -1;
    }
    if (g->w != f->gt_w) {   /* mod-crop in place: keep the top-left gt_w x gt_h */
        for (int y = 0; y < f->gt_h; y++)
            memmove(g->data + (size_t)y * f->gt_w * 3, g->data + (size_t)y * g->w * 3,
                    (size_t)f->gt_w * 3);
        g->w = f->gt_w;
    }
    g->h = f->gt_h;
    if (ds->realesrgan)   /* training: GT alone, the LQ is made per sample */
        return ds->gt_patch > 0 ? 0 : realesrgan_eval_lq(ds, f, g, l, err, errlen);
    if (f->lq_path[0]) {
        if (pf_image_read(f->lq_path, l, err, errlen)) {
            pf_image_free(g);
            return -1;
        }
        if (l->w != f->lq_w || l->h != f->lq_h) {
            snprintf(err, errlen, "%s: size changed since start-up", f->lq_path);
            pf_image_free(g);
            pf_image_free(l);
            return -1;
        }
        return 0;
    }
    static const pf_degradation bi = { .type = "BI" };
    const pf_degradation *down = ds->cfg.n_degradations ? &ds->cfg.degradation[0] : &bi;
    l->w = f->lq_w;
    l->h = f->lq_h;
    l->data = malloc((size_t)l->w * l->h * 3);
    if (!l->data || pf_degrade_downscale(down, g->data, g->h, g->w, ds->scale, l->data)) {
        snprintf(err, errlen, "%s: %s downscaling failed (out of memory)", f->gt_path,
                 down->type);
        pf_image_free(g);
        pf_image_free(l);
        return -1;
    }
    return 0;
}

static int load_entry(void *ctx, int i, pf_image *g, pf_image *l, char *err, size_t errlen) {
    const pf_dataset *ds = ctx;
    return load_pair(ds, &ds->files[i], g, l, err, errlen);
}

/* Pin file i's decoded pair, decoding it first when no thread has. Returns 0
   (ds->cache.entries[i].gt/lq valid until release), or -1 with err. */
static int acquire(pf_dataset *ds, int i, char *err, size_t errlen) {
    return pf_pair_cache_acquire(&ds->cache, i, load_entry, ds, err, errlen);
}

static void release(pf_dataset *ds, int i) {
    pf_pair_cache_release(&ds->cache, i);
}

void pf_dataset_set_cache_limit(pf_dataset *ds, size_t bytes) {
    if (ds->video) {
        pf_video_dataset_set_cache_limit(ds->video, bytes);
        return;
    }
    pf_pair_cache_set_limit(&ds->cache, bytes);
}

void pf_dataset_cache_stats(pf_dataset *ds, pf_cache_stats *out) {
    if (ds->video) {
        pf_video_dataset_cache_stats(ds->video, out);
        return;
    }
    pf_pair_cache_stats(&ds->cache, out);
}

int pf_dataset_pair(pf_dataset *ds, int file, const pf_image **gt, const pf_image **lq,
                    char *err, size_t errlen) {
    if (file < 0 || file >= ds->n_files) {
        snprintf(err, errlen, "image %d is out of range (the dataset has %d)", file,
                 ds->n_files);
        return -1;
    }
    /* Pin the new pair before unpinning the last one, so asking for the same file twice
       never decodes it again, whatever the limit. */
    int rc = acquire(ds, file, err, errlen);
    if (ds->pair_file >= 0) release(ds, ds->pair_file);
    ds->pair_file = rc == 0 ? file : -1;
    if (rc) return -1;
    pf_sample_file *f = &ds->files[file];
    const pf_cache_entry *e = &ds->cache.entries[file];
    *gt = &e->gt;
    *lq = &e->lq;   /* a RealESRGANDataset's: degraded when decoded (load_pair) */
    if (!ds->random_steps) return 0;
    size_t n = (size_t)e->lq.w * e->lq.h * 3;
    if (ds->pair_lq.w * ds->pair_lq.h != e->lq.w * e->lq.h) {
        uint8_t *p = realloc(ds->pair_lq.data, n);
        if (!p) {
            snprintf(err, errlen, "%s: out of memory", f->gt_path);
            return -1;
        }
        ds->pair_lq.data = p;
    }
    ds->pair_lq.w = e->lq.w;
    ds->pair_lq.h = e->lq.h;
    memcpy(ds->pair_lq.data, e->lq.data, n);
    if (pf_degrade_random(ds->cfg.degradation, ds->cfg.n_degradations, pair_key(ds, f),
                          ds->pair_lq.data, e->lq.w, e->lq.h, err, errlen) != 0)
        return -1;
    *lq = &ds->pair_lq;
    return 0;
}

/* A RealESRGANDataset's training sample from file i: the GT patch cropped as a BI set's,
   sharpened when gt_usm, and its LQ degraded from that GT (BasicSR's RealESRNetModel sharpens
   self.gt, then degrades it; RealESRGANModel degrades gt_usm too). */
static int realesrgan_sample(pf_dataset *ds, int i, uint32_t index, uint64_t seed,
                             uint32_t epoch, uint8_t *gt_out, uint8_t *lq_out,
                             uint8_t *gt_plain_out, char *err, size_t errlen) {
    if (acquire(ds, i, err, errlen) != 0) return -1;
    const pf_image *g = &ds->cache.entries[i].gt;
    int s = ds->scale, gp = ds->gt_patch;
    pf_patch_crop c = pf_patch_crop_draw(g->w / s, g->h / s, gp / s, ds->cfg.use_flip,
                                         ds->cfg.use_rot, seed, epoch, index);
    pf_copy_patch(g->data, g->w, c.top * s, c.left * s, gp, c.hflip, c.vflip, c.transpose,
                  gt_out);
    release(ds, i);
    if (gt_plain_out) memcpy(gt_plain_out, gt_out, (size_t)gp * gp * 3);   /* before USM */
    pf_realesrgan_params p;
    pf_realesrgan_draw(&ds->resr, pf_dataset_degrade_key(seed, epoch, index), &p);
    if ((ds->cfg.gt_usm && pf_usm_sharp_u8(gt_out, gp, gp, 3, gt_out, err, errlen) != 0) ||
        pf_realesrgan_degrade_u8(&ds->resr, &p, gt_out, gp, gp, lq_out, NULL, err, errlen) != 0) {
        char what[PF_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s: sample %u", ds->files[i].gt_path, index);
        prefix_err(err, errlen, what);
        return -1;
    }
    return 0;
}

int pf_dataset_sample(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                      uint8_t *gt_out, uint8_t *lq_out, char *err, size_t errlen) {
    return pf_dataset_sample_gt_plain(ds, index, seed, epoch, gt_out, lq_out, NULL, err,
                                      errlen);
}

int pf_dataset_sample_gt_plain(pf_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                               uint8_t *gt_out, uint8_t *lq_out, uint8_t *gt_plain_out,
                               char *err, size_t errlen) {
    if (index >= ds->len) {
        snprintf(err, errlen, "sample %u is out of range (the dataset has %u)", index, ds->len);
        return -1;
    }
    if (ds->video)
        return pf_video_dataset_sample_gt_plain(ds->video, index, seed, epoch, gt_out, lq_out,
                                                gt_plain_out, NULL, NULL, err, errlen);
    if (ds->single) {
        snprintf(err, errlen, "a SingleImageDataset has no training samples (no GT)");
        return -1;
    }
    int i = (int)(index % (uint32_t)ds->n_files);
    if (ds->realesrgan)
        return realesrgan_sample(ds, i, index, seed, epoch, gt_out, lq_out, gt_plain_out, err,
                                 errlen);
    if (acquire(ds, i, err, errlen) != 0) return -1;
    pf_sample_file *f = &ds->files[i];
    const pf_cache_entry *e = &ds->cache.entries[i];
    pf_paired_crop_augment(&e->gt, &e->lq, ds->scale, ds->gt_patch, ds->cfg.use_flip,
                           ds->cfg.use_rot, seed, epoch, index, gt_out, lq_out);
    release(ds, i);
    if (gt_plain_out)   /* no USM here: the plain GT is the GT */
        memcpy(gt_plain_out, gt_out, (size_t)ds->gt_patch * ds->gt_patch * 3);
    if (!ds->random_steps) return 0;
    int lp = ds->gt_patch / ds->scale;
    if (pf_degrade_random(ds->cfg.degradation, ds->cfg.n_degradations,
                          pf_dataset_degrade_key(seed, epoch, index), lq_out, lp, lp, err,
                          errlen) != 0) {
        char what[PF_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s: sample %u", f->gt_path, index);
        prefix_err(err, errlen, what);
        return -1;
    }
    return 0;
}

/* ---- explain ---------------------------------------------------------------------------- */

/* err for a set that has no per-file crop or no Real-ESRGAN draws. */
static int not_for(const pf_dataset *ds, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: not for a %s", what, ds->cfg.type);
    return -1;
}

int pf_dataset_sample_crop(const pf_dataset *ds, uint32_t index, uint64_t seed,
                           uint32_t epoch, int *file, pf_patch_crop *crop, char *err,
                           size_t errlen) {
    if (ds->video || ds->single || ds->gt_patch <= 0)
        return not_for(ds, "a training crop", err, errlen);
    if (index >= ds->len) {
        snprintf(err, errlen, "sample %u is out of range (the dataset has %u)", index, ds->len);
        return -1;
    }
    int i = (int)(index % (uint32_t)ds->n_files);
    const pf_sample_file *f = &ds->files[i];
    *file = i;
    *crop = pf_patch_crop_draw(f->lq_w, f->lq_h, ds->gt_patch / ds->scale, ds->cfg.use_flip,
                               ds->cfg.use_rot, seed, epoch, index);
    return 0;
}

/* *p drawn for `key`, its line into line (when not NULL). */
static int params_of(const pf_dataset *ds, uint64_t key, pf_realesrgan_params *p, char *line,
                     size_t len) {
    pf_realesrgan_draw(&ds->resr, key, p);
    if (line) pf_realesrgan_params_format(p, line, len);
    return 0;
}

int pf_dataset_sample_params(const pf_dataset *ds, uint32_t index, uint64_t seed,
                             uint32_t epoch, pf_realesrgan_params *p, char *line, size_t len,
                             char *err, size_t errlen) {
    if (!ds->realesrgan) return not_for(ds, "Real-ESRGAN parameters", err, errlen);
    if (index >= ds->len) {
        snprintf(err, errlen, "sample %u is out of range (the dataset has %u)", index, ds->len);
        return -1;
    }
    return params_of(ds, pf_dataset_degrade_key(seed, epoch, index), p, line, len);
}

int pf_dataset_pair_params(const pf_dataset *ds, int file, pf_realesrgan_params *p, char *line,
                           size_t len, char *err, size_t errlen) {
    if (!ds->realesrgan) return not_for(ds, "Real-ESRGAN parameters", err, errlen);
    if (file < 0 || file >= ds->n_files) {
        snprintf(err, errlen, "image %d is out of range (the dataset has %d)", file,
                 ds->n_files);
        return -1;
    }
    return params_of(ds, pair_key(ds, &ds->files[file]), p, line, len);
}
