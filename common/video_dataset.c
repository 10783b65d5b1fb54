/*  video_dataset — see video_dataset.h.

    The clip list and every clip's frame range, sizes and crop are fixed at open; afterwards
    only the cache (one entry per used frame, common/pair_cache.h) and the reader pool change.
    A reader is taken (busy) by one thread for one frame and given back; readers are never
    closed before the dataset is.
*/
#include "common/video_dataset.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/degrade.h"
#include "common/file_list.h"
#include "common/frame_indices.h"
#include "common/image_info.h"
#include "common/log.h"
#include "common/patch.h"
#include "common/realesrgan_cfg.h"
#include "common/realesrgan_ops.h"
#include "common/rng.h"
#include "common/video.h"

struct pf_vreader {
    pf_video *v;
    int clip, lq;               /* which clip's GT (0) or LQ (1) file it reads */
    int busy;
    pf_vreader *next;
};

int pf_is_video_dataset(const char *type) {
    return pf_config_is_video_set(type) || !strcmp(type, "RealESRGANVideoDataset");
}

/* A name FFmpeg's demuxers are asked to read when a folder is listed for clips. */
static int is_video_name(const char *name) {
    static const char *ext[] = {".avi", ".mp4", ".mkv", ".mov", ".mpg", ".mpeg", ".webm",
                                ".m4v", ".ts", ".flv", ".wmv", ".y4m", ".ogv", ".nut", NULL};
    const char *dot = strrchr(name, '.');
    for (int i = 0; dot && ext[i]; i++)
        if (!strcasecmp(dot, ext[i])) return 1;
    return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the clip list ------------------------------------------------------------------------ */

/* Every folder and video file of gt_folder, sorted. */
static int list_clips(const pf_video_dataset *ds, pf_name_list *out, char *err, size_t errlen) {
    const char *folder = ds->cfg.gt_folder;
    DIR *d = opendir(folder);
    if (!d)
        return fail(err, errlen, "%s.gt_folder: cannot open '%s': %s", ds->key, folder,
                    strerror(errno));
    struct dirent *e;
    char path[PF_PATH_MAX * 2];
    int oom = 0;
    while (!oom && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        if (pf_is_dir(path) || (is_video_name(e->d_name) && pf_is_file(path)))
            oom = pf_names_add(out, e->d_name) != 0;
    }
    closedir(d);
    if (oom) return fail(err, errlen, "%s: out of memory listing '%s'", ds->key, folder);
    if (out->n == 0)
        return fail(err, errlen, "%s.gt_folder: no clip (a folder of frames or a video file) "
                    "in '%s'", ds->key, folder);
    pf_names_sort(out);
    return 0;
}

/* The clips to open, as pf_clip_cfg items: data.*.clips, meta_info_file, or the folder;
   val_partition dropped from a training set. *out is malloc'd. */
static int clip_specs(const pf_video_dataset *ds, pf_clip_cfg **out, int *n, char *err,
                      size_t errlen) {
    const pf_dataset_cfg *cfg = &ds->cfg;
    pf_name_list names = { 0 };
    pf_clip_cfg *specs = NULL;
    int count = 0, rc = 0;
    if (cfg->n_clips) {
        specs = malloc(sizeof *specs * (size_t)cfg->n_clips);
        if (!specs) return fail(err, errlen, "%s: out of memory", ds->key);
        memcpy(specs, cfg->clips, sizeof *specs * (size_t)cfg->n_clips);
        count = cfg->n_clips;
    } else if (cfg->meta_info_file[0]) {
        FILE *f = fopen(cfg->meta_info_file, "r");
        if (!f)
            return fail(err, errlen, "%s.meta_info_file: cannot open '%s': %s", ds->key,
                        cfg->meta_info_file, strerror(errno));
        char line[4096];
        int lineno = 0, cap = 0;
        while (rc == 0 && fgets(line, sizeof line, f)) {
            lineno++;
            char *word = line + strspn(line, " \t\r\n"), *rest;
            size_t len = strcspn(word, " \t\r\n");
            if (!len) continue;
            rest = word + len;
            *rest++ = '\0';
            if (len >= sizeof specs->name) {
                rc = fail(err, errlen, "%s.meta_info_file: %s:%d: clip name too long", ds->key,
                          cfg->meta_info_file, lineno);
                break;
            }
            if (count == cap) {
                cap = cap ? 2 * cap : 64;
                pf_clip_cfg *t = realloc(specs, sizeof *t * (size_t)cap);
                if (!t) {
                    rc = fail(err, errlen, "%s: out of memory", ds->key);
                    break;
                }
                specs = t;
            }
            pf_clip_cfg *s = &specs[count++];
            memset(s, 0, sizeof *s);
            snprintf(s->name, sizeof s->name, "%s", word);
            char *end;
            long frames = strtol(rest, &end, 10);
            if (end != rest && frames > 0 && frames < (1L << 30)) s->frames[1] = (int)frames;
        }
        fclose(f);
        if (rc == 0 && count == 0)
            rc = fail(err, errlen, "%s.meta_info_file: '%s' names no clip", ds->key,
                      cfg->meta_info_file);
    } else {
        rc = list_clips(ds, &names, err, errlen);
        if (rc == 0 && !(specs = calloc((size_t)names.n, sizeof *specs)))
            rc = fail(err, errlen, "%s: out of memory", ds->key);
        for (int i = 0; rc == 0 && i < names.n; i++)
            snprintf(specs[count++].name, sizeof specs->name, "%s", names.names[i]);
        pf_names_free(&names);
    }
    /* val_partition: held out of training */
    for (int v = 0; rc == 0 && ds->gt_patch > 0 && v < cfg->n_val_partition; v++) {
        int kept = 0, found = 0;
        for (int i = 0; i < count; i++) {
            if (!strcmp(specs[i].name, cfg->val_partition[v])) found = 1;
            else specs[kept++] = specs[i];
        }
        if (!found)
            rc = fail(err, errlen, "%s.val_partition: no clip '%s' in the set", ds->key,
                      cfg->val_partition[v]);
        count = kept;
    }
    if (rc == 0 && count == 0)
        rc = fail(err, errlen, "%s: no clip left after val_partition", ds->key);
    if (rc) {
        free(specs);
        return -1;
    }
    *out = specs;
    *n = count;
    return 0;
}

/* ---- one clip ----------------------------------------------------------------------------- */

static int cmp_number(const void *a, const void *b) {
    long x = strtol(*(char *const *)a, NULL, 10), y = strtol(*(char *const *)b, NULL, 10);
    return x < y ? -1 : x > y;
}

/* Keep an open reader in the pool, idle. */
static int pool_add(pf_video_dataset *ds, pf_video *v, int clip, int lq, int busy,
                    pf_vreader **out) {
    pf_vreader *r = calloc(1, sizeof *r);
    if (!r) return -1;
    *r = (pf_vreader){ .v = v, .clip = clip, .lq = lq, .busy = busy };
    pthread_mutex_lock(&ds->pool_lock);
    r->next = ds->readers;
    ds->readers = r;
    pthread_mutex_unlock(&ds->pool_lock);
    if (out) *out = r;
    return 0;
}

/* What a video cut short lacks, for messages: "PATH is cut short (REASON): the header
   announces H frames, F are whole, B bytes are missing". */
static void describe_cut(const char *path, const pf_video_info *in, char *out, size_t len) {
    char frames[64] = "", bytes[128] = "";
    if (in->header_frames > 0)
        snprintf(frames, sizeof frames, "the header announces %s%d frames, ",
                 in->header_frames_about ? "about " : "", in->header_frames);
    if (in->header_bytes > in->file_bytes && in->file_bytes >= 0)
        snprintf(bytes, sizeof bytes, "%lld bytes are missing (the header says %lld, the file "
                 "has %lld)", in->header_bytes - in->file_bytes, in->header_bytes,
                 in->file_bytes);
    else
        snprintf(bytes, sizeof bytes, "the container does not say how many bytes are missing "
                 "(the file has %lld)", in->file_bytes);
    snprintf(out, len, "%s is cut short (%s): %s%d of the %d frames it holds are whole, %s",
             path, in->cut, frames, in->usable_frames, in->n_frames, bytes);
}

/* Open one side (GT or LQ) of clip c at `path`: a folder's frame names, or a video reader
   (kept in the pool). Sets *count and the frame size *w x *h (checked for every frame of
   [first, end) of a folder; end 0: up to *count). A video cut short (common/video.h,
   "Truncation") sets *count to its whole frames and `cut` to describe_cut's text; else cut
   is "". */
static int open_side(pf_video_dataset *ds, int c, int lq, const char *path, const char *what,
                     int first, int end, int *count, int *w, int *h, char *cut, size_t cutlen,
                     char *err, size_t errlen) {
    pf_clip *cl = &ds->clips[c];
    char e2[1024];
    cut[0] = '\0';
    if (pf_is_dir(path)) {
        pf_name_list names = { 0 };
        if (pf_list_images(path, ds->key, what, &names, e2, sizeof e2) != 0) {
            pf_names_free(&names);
            return fail(err, errlen, "%s: clip '%s': %s", ds->key, cl->name, e2);
        }
        /* Numbered frames (REDS 00000000.png, ..., or 0.png ... 10.png): in number order,
           and a gap is a missing frame. */
        int numbered = 1;
        for (int i = 0; i < names.n && numbered; i++) {
            char *end;
            strtol(names.names[i], &end, 10);
            numbered = end != names.names[i] && *end == '.';
        }
        if (numbered) {
            qsort(names.names, (size_t)names.n, sizeof *names.names, cmp_number);
            for (int i = 1; i < names.n; i++) {
                long a = strtol(names.names[i - 1], NULL, 10), b = strtol(names.names[i], NULL, 10);
                if (b != a + 1) {
                    fail(err, errlen, "%s: clip '%s': frame %ld missing in '%s' (after '%s' "
                         "comes '%s')", ds->key, cl->name, a + 1, path, names.names[i - 1],
                         names.names[i]);
                    pf_names_free(&names);
                    return -1;
                }
            }
        }
        *count = names.n;
        if (lq) {
            cl->lq_frames = names.names;
            cl->n_lq_names = names.n;
        } else {
            cl->gt_frames = names.names;
            cl->n_gt_names = names.n;
        }
        if (end == 0) end = names.n;
        char fp[PF_PATH_MAX * 2];
        for (int i = first; i < end && i < names.n; i++) {
            int fw, fh;
            snprintf(fp, sizeof fp, "%s/%s", path, names.names[i]);
            if (pf_image_size(fp, &fw, &fh, e2, sizeof e2) != 0)
                return fail(err, errlen, "%s: clip '%s' frame %d: %s", ds->key, cl->name, i, e2);
            if (i == first) {
                *w = fw;
                *h = fh;
            } else if (fw != *w || fh != *h) {
                return fail(err, errlen, "%s: clip '%s' frame %d: '%s' is %dx%d, frame %d %dx%d "
                            "(the frames of a clip have one size)", ds->key, cl->name, i, fp,
                            fw, fh, first, *w, *h);
            }
        }
        return 0;
    }
    if (!pf_is_file(path))
        return fail(err, errlen, "%s: clip '%s': no '%s' (%s: neither a folder of frames nor a "
                    "video file)", ds->key, cl->name, path, what);
    pf_video *v = pf_video_open(path, e2, sizeof e2);
    if (!v) return fail(err, errlen, "%s: clip '%s': %s", ds->key, cl->name, e2);
    pf_video_info in = pf_video_get_info(v);
    if (pool_add(ds, v, c, lq, 0, NULL) != 0) {
        pf_video_destroy(&v);
        return fail(err, errlen, "%s: out of memory", ds->key);
    }
    if (lq) cl->lq_video = 1;
    else cl->gt_video = 1;
    *count = in.n_frames;
    if (in.cut[0]) {
        *count = in.usable_frames;
        describe_cut(path, &in, cut, cutlen);
    }
    *w = in.w;
    *h = in.h;
    return 0;
}

/* A video side of clip c found cut short at open (`cut` from open_side): with
   data.on_bad_sample fail, the error; with skip, a warning saying which frames the clip keeps
   ([first, end), already shrunk to the whole frames). Returns 0, or -1 with err. */
static int report_cut(const pf_video_dataset *ds, const pf_clip *cl, const char *side,
                      const char *cut, int first, int end, int asked_end, char *err,
                      size_t errlen) {
    if (!ds->cfg.skip_cut_videos)
        return fail(err, errlen, "%s: clip '%s': %s %s; refused at start-up (data.on_bad_sample: "
                    "fail; with `skip` the clip keeps its whole frames)", ds->key, cl->name, side,
                    cut);
    if (first >= end)
        return fail(err, errlen, "%s: clip '%s': %s %s; no whole frame is left of frames [%d, "
                    "%d)", ds->key, cl->name, side, cut, first, asked_end);
    pf_warn("%s: clip '%s': %s %s; the clip keeps frames [%d, %d) (data.on_bad_sample: skip)",
            ds->key, cl->name, side, cut, first, end);
    return 0;
}

/* Frames a training clip must hold: REDSRecurrentDataset's num_frame x max(interval_list)
   (BasicSR's check), a sliding window's (num_frame - 1) x max(interval_list) + 1. */
static int train_frames_needed(const pf_video_dataset *ds) {
    return ds->window ? (ds->num_frame - 1) * ds->max_interval + 1
                      : ds->num_frame * ds->max_interval;
}

/* Fill and check clips[c] from its spec. */
static int open_clip(pf_video_dataset *ds, int c, const pf_clip_cfg *spec, char *err,
                     size_t errlen) {
    const pf_dataset_cfg *cfg = &ds->cfg;
    pf_clip *cl = &ds->clips[c];
    int s = ds->scale;
    snprintf(cl->name, sizeof cl->name, "%s", spec->name);
    if ((size_t)snprintf(cl->gt_path, sizeof cl->gt_path, "%s/%s", cfg->gt_folder, spec->name) >=
            sizeof cl->gt_path ||
        (cfg->lq_folder[0] && (size_t)snprintf(cl->lq_path, sizeof cl->lq_path, "%s/%s",
                                               cfg->lq_folder, spec->name) >= sizeof cl->lq_path))
        return fail(err, errlen, "%s: clip '%s': path too long", ds->key, spec->name);
    int count, w, h;
    int first = spec->frames[0], end = spec->frames[1];
    char cut[1024];
    if (open_side(ds, c, 0, cl->gt_path, "gt_folder", first, end, &count, &w, &h, cut,
                  sizeof cut, err, errlen))
        return -1;
    if (cut[0]) {   /* a video cut short: its whole frames only (count) */
        int asked = end ? end : count;
        if (!end || end > count) end = count;
        if (report_cut(ds, cl, "GT", cut, first, end, asked, err, errlen)) return -1;
    }
    if (end == 0) end = count;
    if (first >= end || end > count)
        return fail(err, errlen, "%s: clip '%s': frames [%d, %d) asked for, the clip has %d "
                    "(0..%d)", ds->key, cl->name, first, end, count, count - 1);
    cl->first = first;
    cl->n_frames = end - first;
    cl->file_w = w;
    cl->file_h = h;
    if (spec->crop[2] > 0) {
        const int *k = spec->crop;
        if (k[0] % s || k[1] % s || k[2] % s || k[3] % s || k[3] <= 0)
            return fail(err, errlen, "%s: clip '%s': crop [%d, %d, %d, %d]: x, y, w and h must "
                        "be positive multiples of model.scale %d", ds->key, cl->name, k[0],
                        k[1], k[2], k[3], s);
        if (k[0] + k[2] > w || k[1] + k[3] > h)
            return fail(err, errlen, "%s: clip '%s': crop [%d, %d, %d, %d] does not fit its "
                        "%dx%d frames", ds->key, cl->name, k[0], k[1], k[2], k[3], w, h);
        cl->crop_x = k[0];
        cl->crop_y = k[1];
        cl->gt_w = k[2];
        cl->gt_h = k[3];
    } else {
        cl->gt_w = w - w % s;               /* mod-crop, as BasicSR's mod_crop */
        cl->gt_h = h - h % s;
    }
    cl->lq_w = cl->gt_w / s;
    cl->lq_h = cl->gt_h / s;
    if (cl->lq_path[0]) {
        int lcount, lw, lh;
        if (open_side(ds, c, 1, cl->lq_path, "lq_folder", first, end, &lcount, &lw, &lh, cut,
                      sizeof cut, err, errlen))
            return -1;
        if (cut[0]) {   /* the LQ video cut short: the GT range shrinks to its whole frames */
            int asked = end;
            if (end > lcount) end = lcount;
            if (report_cut(ds, cl, "LQ", cut, first, end, asked, err, errlen)) return -1;
            cl->n_frames = end - first;
        }
        if (lcount < end)
            return fail(err, errlen, "%s: clip '%s': LQ '%s' has %d frames, GT frames up to %d "
                        "are used", ds->key, cl->name, cl->lq_path, lcount, end - 1);
        if (lw != w / s || lh != h / s)
            return fail(err, errlen, "%s: clip '%s': LQ frames are %dx%d, GT %dx%d: LQ must be "
                        "GT / scale %d = %dx%d", ds->key, cl->name, lw, lh, w, h, s, w / s,
                        h / s);
    }
    int lp = ds->gt_patch / s;
    if (ds->gt_patch > 0 && cl->n_frames < train_frames_needed(ds))
        return fail(err, errlen, "%s: clip '%s' has %d frames; num_frame %d with interval %d "
                    "needs %d", ds->key, cl->name, cl->n_frames, ds->num_frame, ds->max_interval,
                    train_frames_needed(ds));
    if (ds->window && ds->gt_patch <= 0 &&
        cl->n_frames < pf_video_min_frames(ds->num_frame, ds->padding))
        return fail(err, errlen, "%s: clip '%s' has %d frames; num_frame %d with padding %s "
                    "needs %d (a window inside the clip for every frame)", ds->key, cl->name,
                    cl->n_frames, ds->num_frame, pf_frame_padding_name(ds->padding),
                    pf_video_min_frames(ds->num_frame, ds->padding));
    if (cl->lq_w < 1 || cl->lq_h < 1 || (lp > 0 && (cl->lq_w < lp || cl->lq_h < lp)))
        return fail(err, errlen, "%s: clip '%s': LQ frames %dx%d are smaller than the patch "
                    "(gt_patch_size %d needs %dx%d)", ds->key, cl->name, cl->lq_w, cl->lq_h,
                    ds->gt_patch, lp, lp);
    return 0;
}

/* ---- decoding a frame --------------------------------------------------------------------- */

/* The idle reader of clip c's side `lq` positioned closest before `frame` (else any idle
   one), taken busy; a new reader when all are busy. */
static pf_vreader *take_reader(pf_video_dataset *ds, int c, int lq, int frame, char *err,
                               size_t errlen) {
    pf_vreader *best = NULL;
    int best_pos = -2;
    pthread_mutex_lock(&ds->pool_lock);
    for (pf_vreader *r = ds->readers; r; r = r->next) {
        if (r->busy || r->clip != c || r->lq != lq) continue;
        int pos = pf_video_position(r->v);
        int score = pos >= 0 && pos < frame ? pos : -1;
        if (score > best_pos) {
            best = r;
            best_pos = score;
        }
    }
    if (best) best->busy = 1;
    pthread_mutex_unlock(&ds->pool_lock);
    if (best) return best;
    const char *path = lq ? ds->clips[c].lq_path : ds->clips[c].gt_path;
    pf_video *v = pf_video_open(path, err, errlen);
    if (!v) return NULL;
    if (pool_add(ds, v, c, lq, 1, &best) != 0) {
        pf_video_destroy(&v);
        fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    return best;
}

static void give_reader(pf_video_dataset *ds, pf_vreader *r) {
    pthread_mutex_lock(&ds->pool_lock);
    r->busy = 0;
    pthread_mutex_unlock(&ds->pool_lock);
}

/* Source frame `frame` of clip c's GT (lq 0) or LQ side, whole, w x h as opened. */
static int read_frame(pf_video_dataset *ds, int c, int lq, int frame, int w, int h,
                      pf_image *out, char *err, size_t errlen) {
    const pf_clip *cl = &ds->clips[c];
    if (lq ? cl->lq_video : cl->gt_video) {
        pf_vreader *r = take_reader(ds, c, lq, frame, err, errlen);
        if (!r) return -1;
        int rc = pf_video_read(r->v, frame, out, err, errlen);
        give_reader(ds, r);
        return rc;
    }
    char path[PF_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", lq ? cl->lq_path : cl->gt_path,
             (lq ? cl->lq_frames : cl->gt_frames)[frame]);
    if (pf_image_read(path, out, err, errlen) != 0) return -1;
    if (out->w != w || out->h != h) {
        fail(err, errlen, "%s: size changed since start-up (%dx%d, was %dx%d)", path, out->w,
             out->h, w, h);
        pf_image_free(out);
        return -1;
    }
    return 0;
}

/* The w x h region at (x, y) of `src` into *out (allocated). */
static int crop_into(const pf_image *src, int x, int y, int w, int h, pf_image *out) {
    out->data = malloc((size_t)w * h * 3);
    if (!out->data) return -1;
    out->w = w;
    out->h = h;
    for (int r = 0; r < h; r++)
        memcpy(out->data + (size_t)r * w * 3, src->data + ((size_t)(y + r) * src->w + x) * 3,
               (size_t)w * 3);
    return 0;
}

/* The clip whose frames hold entry e (entries are the frames of all clips in order, so e is
   also the frame a training sample index maps to). */
static int clip_of_entry(const pf_video_dataset *ds, int e) {
    int lo = 0, hi = ds->n_clips - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ds->clips[mid].entry0 <= e) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The downscaling step that makes LQ from GT: the degradation's first step, else BI. */
static const pf_degradation *downscale_step(const pf_video_dataset *ds) {
    static const pf_degradation bi = { .type = "BI" };
    return ds->cfg.n_degradations ? &ds->cfg.degradation[0] : &bi;
}

/* Whether a frame loaded now leaves its LQ to the samples: a training set whose LQ is made
   from GT, when its cache cannot hold every frame with its LQ. Then the cache holds GT frames
   only and each sample downscales just its LQ patch (pf_degrade_downscale_region: the same
   bytes as cropping the whole frame's LQ, at a patch's cost instead of a frame's): a frame
   that is evicted before it is used again would waste the whole-frame LQ. When every frame
   stays, the whole LQ made once is cheaper. Samples use whatever the entry holds, so the
   bytes never depend on this choice. */
static int lq_per_patch(const pf_video_dataset *ds, const pf_clip *cl) {
    return ds->gt_patch > 0 && !cl->lq_path[0] && !__atomic_load_n(&ds->lq_whole,
                                                                    __ATOMIC_RELAXED);
}

/* pf_cache_load_fn: entry e = one frame, GT after the clip's crop, LQ read or made (none for
   a set that makes it per patch). */
static int load_frame(void *ctx, int e, pf_image *g, pf_image *l, char *err, size_t errlen) {
    pf_video_dataset *ds = ctx;
    int c = clip_of_entry(ds, e);
    const pf_clip *cl = &ds->clips[c];
    int frame = cl->first + (e - cl->entry0), s = ds->scale;
    char e2[1024];
    pf_image src = { 0 };
    if (read_frame(ds, c, 0, frame, cl->file_w, cl->file_h, &src, e2, sizeof e2) != 0)
        return fail(err, errlen, "%s: clip '%s' frame %d: %s", ds->key, cl->name, frame, e2);
    int rc = crop_into(&src, cl->crop_x, cl->crop_y, cl->gt_w, cl->gt_h, g);
    pf_image_free(&src);
    if (rc) return fail(err, errlen, "%s: clip '%s': out of memory", ds->key, cl->name);
    if (cl->lq_path[0]) {
        if (read_frame(ds, c, 1, frame, cl->file_w / s, cl->file_h / s, &src, e2,
                       sizeof e2) != 0) {
            pf_image_free(g);
            return fail(err, errlen, "%s: clip '%s' LQ frame %d: %s", ds->key, cl->name, frame,
                        e2);
        }
        rc = crop_into(&src, cl->crop_x / s, cl->crop_y / s, cl->lq_w, cl->lq_h, l);
        pf_image_free(&src);
    } else if (!ds->realesrgan && !lq_per_patch(ds, cl)) {   /* Real-ESRGAN: GT only */
        l->w = cl->lq_w;
        l->h = cl->lq_h;
        l->data = malloc((size_t)l->w * l->h * 3);
        rc = !l->data || pf_degrade_downscale(downscale_step(ds), g->data, g->h, g->w, s,
                                              l->data);
    }
    if (rc) {
        pf_image_free(g);
        pf_image_free(l);
        return fail(err, errlen, "%s: clip '%s' frame %d: out of memory", ds->key, cl->name,
                    frame);
    }
    return 0;
}

/* ---- the dataset -------------------------------------------------------------------------- */

/* RealESRGANVideoDataset's rules and options: a training set, LQ from GT by its own keys
   (no lq_folder, no `degradation` beyond the parser's default BI), the pipeline's options
   checked for the patch. */
static int realesrgan_setup(pf_video_dataset *ds, char *err, size_t errlen) {
    const pf_dataset_cfg *cfg = &ds->cfg;
    if (!ds->realesrgan) return 0;
    if (ds->gt_patch <= 0)
        return fail(err, errlen, "%s.type: RealESRGANVideoDataset is a training set (data.train, "
                    "with gt_patch_size); evaluate on clips with their LQ "
                    "(VideoRecurrentTestDataset with lq_folder)", ds->key);
    if (cfg->lq_folder[0])
        return fail(err, errlen, "%s.lq_folder: RealESRGANVideoDataset makes its LQ from the GT "
                    "frames (Real-ESRGAN's degradation); remove lq_folder '%s' or use "
                    "REDSRecurrentDataset", ds->key, cfg->lq_folder);
    if (cfg->n_degradations > 1 ||
        (cfg->n_degradations == 1 && strcmp(cfg->degradation[0].type, "BI")))
        return fail(err, errlen, "%s.degradation: RealESRGANVideoDataset degrades with "
                    "Real-ESRGAN's keys (blur_kernel_size, kernel_list, ...; docs/config.md), "
                    "not `degradation` steps", ds->key);
    return pf_dataset_realesrgan_opts(cfg, ds->key, ds->scale, ds->gt_patch, &ds->resr, err,
                                      errlen);
}

/* A RealESRGANVideoDataset sample's LQ (top of video_dataset.h): the T GT patches in gt
   (p x p x 3 each, as sent) degraded with one draw for the sample, frame t's noise from
   pf_realesrgan_frame_key; each GT frame sharpened first when gt_usm, its LQ made from the
   sharpened frame (BasicSR's RealESRNetModel). */
static int realesrgan_lq(pf_video_dataset *ds, uint64_t key, uint8_t *gt, uint8_t *lq,
                         uint8_t *gt_plain, const pf_clip *cl, uint32_t index, char *err,
                         size_t errlen) {
    int T = ds->num_frame, p = ds->gt_patch, lp = p / ds->scale;
    size_t gt_bytes = (size_t)p * p * 3, lq_bytes = (size_t)lp * lp * 3;
    pf_realesrgan_params par;
    pf_realesrgan_draw(&ds->resr, key, &par);
    char why[512];
    for (int t = 0; t < T; t++) {
        uint8_t *g = gt + (size_t)t * gt_bytes;
        if (gt_plain) memcpy(gt_plain + (size_t)t * gt_bytes, g, gt_bytes);   /* before USM */
        if ((ds->cfg.gt_usm && pf_usm_sharp_u8(g, p, p, 3, g, why, sizeof why) != 0) ||
            pf_realesrgan_degrade_frame_u8(&ds->resr, &par, pf_realesrgan_frame_key(key, t), g,
                                           p, p, lq + (size_t)t * lq_bytes, NULL, why,
                                           sizeof why) != 0)
            return fail(err, errlen, "%s: clip '%s': sample %u frame %d: %s", ds->key, cl->name,
                        index, t, why);
    }
    return 0;
}

/* The sliding-window sets' rules (the config checks them too; a set opened from a
   pf_dataset_cfg built in code meets them here): REDSDataset is a training set,
   VideoTestDataset an evaluation one, num_frame odd, a known padding. */
static int window_setup(pf_video_dataset *ds, char *err, size_t errlen) {
    if (!ds->window) return 0;
    int train = !strcmp(ds->cfg.type, "REDSDataset");
    if (train != (ds->gt_patch > 0))
        return fail(err, errlen, "%s.type: %s is %s", ds->key, ds->cfg.type,
                    train ? "a training set (data.train, with gt_patch_size)"
                          : "an evaluation and test set (data.eval, data.test)");
    if (ds->num_frame % 2 == 0)
        return fail(err, errlen, "%s.num_frame: %s takes an odd num_frame (a center frame and "
                    "num_frame / 2 neighbours on each side), got %d", ds->key, ds->cfg.type,
                    ds->num_frame);
    if (ds->padding < 0)
        return fail(err, errlen, "%s.padding: '%s' is not one of replicate, reflection, "
                    "reflection_circle, circle", ds->key, ds->cfg.padding);
    return 0;
}

int pf_video_dataset_open(pf_video_dataset *ds, const pf_dataset_cfg *cfg, const char *key,
                          int scale, int gt_patch_size, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    ds->cfg = *cfg;
    snprintf(ds->key, sizeof ds->key, "%s", key);
    ds->scale = scale;
    ds->gt_patch = gt_patch_size;
    ds->num_frame = cfg->num_frame > 0 ? cfg->num_frame : 1;
    ds->max_interval = 1;
    for (int i = 0; i < cfg->n_intervals; i++)
        if (cfg->interval_list[i] > ds->max_interval) ds->max_interval = cfg->interval_list[i];
    if (ds->cfg.n_intervals == 0) {
        ds->cfg.interval_list[0] = 1;
        ds->cfg.n_intervals = 1;
    }
    ds->realesrgan = !strcmp(cfg->type, "RealESRGANVideoDataset");
    ds->window = !strcmp(cfg->type, "REDSDataset") || !strcmp(cfg->type, "VideoTestDataset");
    ds->gt_frames = ds->window ? 1 : ds->num_frame;
    ds->padding = cfg->padding[0] ? pf_frame_padding_parse(cfg->padding)
                                  : PF_PAD_REFLECTION_CIRCLE;
    ds->random_steps = !cfg->lq_folder[0] && !ds->realesrgan &&
                       pf_degrade_is_random(cfg->degradation, cfg->n_degradations);
    pthread_mutex_init(&ds->pool_lock, NULL);
    if (!pf_is_video_dataset(cfg->type)) {
        fail(err, errlen, "%s.type: %s is not a video dataset", key, cfg->type);
        pf_video_dataset_close(ds);
        return -1;
    }
    if (realesrgan_setup(ds, err, errlen) || window_setup(ds, err, errlen)) {
        pf_video_dataset_close(ds);
        return -1;
    }
    if (ds->random_steps && gt_patch_size == 0) {
        fail(err, errlen, "%s.degradation: random steps (DN noise, JPEG) are not supported in "
             "video evaluation and test sets yet: give lq_folder or a BI/BD degradation", key);
        pf_video_dataset_close(ds);
        return -1;
    }
    pf_clip_cfg *specs = NULL;
    int n = 0;
    int rc = clip_specs(ds, &specs, &n, err, errlen);
    if (rc == 0 && !(ds->clips = calloc((size_t)n, sizeof *ds->clips)))
        rc = fail(err, errlen, "%s: out of memory", key);
    uint64_t frames = 0;
    for (int c = 0; rc == 0 && c < n; c++) {
        ds->n_clips = c + 1;
        rc = open_clip(ds, c, &specs[c], err, errlen);
        ds->clips[c].entry0 = (int)frames;
        frames += (uint64_t)ds->clips[c].n_frames;
        if (rc == 0 && frames > (1u << 30))
            rc = fail(err, errlen, "%s: more than 2^30 frames", key);
    }
    free(specs);
    uint64_t len = gt_patch_size > 0 ? frames * (uint64_t)(cfg->repeat > 0 ? cfg->repeat : 1)
                                     : (uint64_t)ds->n_clips;
    if (rc == 0 && len > UINT32_MAX)
        rc = fail(err, errlen, "%s.repeat: %llu frames x %d is more than 2^32 samples", key,
                  (unsigned long long)frames, cfg->repeat);
    if (rc == 0 && pf_pair_cache_init(&ds->cache, (int)frames, SIZE_MAX) != 0)
        rc = fail(err, errlen, "%s: out of memory", key);
    if (rc) {
        pf_video_dataset_close(ds);
        return -1;
    }
    ds->n_frames = (uint32_t)frames;
    ds->len = (uint32_t)len;
    for (int c = 0; c < ds->n_clips; c++) {
        const pf_clip *cl = &ds->clips[c];
        ds->all_bytes += (uint64_t)cl->n_frames * 3 *
                         ((uint64_t)cl->gt_w * cl->gt_h +
                          (ds->realesrgan ? 0 : (uint64_t)cl->lq_w * cl->lq_h));
    }
    ds->lq_whole = 1;                   /* the cache starts unbounded */
    return 0;
}

void pf_video_dataset_close(pf_video_dataset *ds) {
    pf_pair_cache_free(&ds->cache);
    while (ds->readers) {
        pf_vreader *next = ds->readers->next;
        pf_video_destroy(&ds->readers->v);
        free(ds->readers);
        ds->readers = next;
    }
    for (int c = 0; ds->clips && c < ds->n_clips; c++) {
        pf_name_list gl = { ds->clips[c].gt_frames, ds->clips[c].n_gt_names, 0 };
        pf_name_list ll = { ds->clips[c].lq_frames, ds->clips[c].n_lq_names, 0 };
        pf_names_free(&gl);
        pf_names_free(&ll);
    }
    free(ds->clips);
    ds->clips = NULL;
    ds->n_clips = 0;
    pthread_mutex_destroy(&ds->pool_lock);
}

size_t pf_video_sample_gt_bytes(const pf_video_dataset *ds) {
    return (size_t)ds->gt_frames * ds->gt_patch * ds->gt_patch * 3;
}

size_t pf_video_sample_lq_bytes(const pf_video_dataset *ds) {
    size_t lp = (size_t)(ds->gt_patch / ds->scale);
    return (size_t)ds->num_frame * lp * lp * 3;
}

int pf_video_dataset_sample_where(const pf_video_dataset *ds, uint32_t index, uint64_t seed,
                                  uint32_t epoch, pf_video_where *w, int *frames, char *err,
                                  size_t errlen) {
    if (ds->gt_patch <= 0)
        return fail(err, errlen, "%s: not a training set (no gt_patch_size)", ds->key);
    if (index >= ds->len)
        return fail(err, errlen, "%s: sample %u is out of range (the set has %u)", ds->key, index,
                    ds->len);
    const pf_dataset_cfg *cfg = &ds->cfg;
    uint32_t k = index % ds->n_frames;
    int c = clip_of_entry(ds, (int)k);
    const pf_clip *cl = &ds->clips[c];
    int T = ds->num_frame, n = cl->n_frames, f = (int)k - cl->entry0;
    pf_rng r = pf_rng_make(seed, epoch, index);
    int interval = cfg->interval_list[pf_rng_below(&r, (uint32_t)cfg->n_intervals)];
    if (ds->window) {
        /* f is the center; BasicSR redraws it uniformly from the clip until the window fits,
           which is a uniform draw among the centers whose window fits */
        int reach = (T / 2) * interval;
        if (f < reach || f > n - 1 - reach)
            f = reach + (int)pf_rng_below(&r, (uint32_t)(n - 2 * reach));
        w->center = f;
        f -= reach;
    } else {
        if (f > n - T * interval) f = (int)pf_rng_below(&r, (uint32_t)(n - T * interval + 1));
        w->center = -1;
    }
    w->clip = c;
    w->first = f;
    w->interval = interval;
    w->reverse = cfg->random_reverse && (pf_rng_u64(&r) & 1);
    int lp = ds->gt_patch / ds->scale;
    w->lq_top = (int)pf_rng_below(&r, (uint32_t)(cl->lq_h - lp + 1));
    w->lq_left = (int)pf_rng_below(&r, (uint32_t)(cl->lq_w - lp + 1));
    uint64_t bits = pf_rng_u64(&r);
    w->hflip = cfg->use_hflip && (bits & 1);
    w->vflip = cfg->use_rot && (bits & 2);
    w->transpose = cfg->use_rot && (bits & 4);
    for (int j = 0; frames && j < T; j++)
        frames[w->reverse ? T - 1 - j : j] = cl->first + f + j * interval;
    return 0;
}

int pf_video_dataset_sample(pf_video_dataset *ds, uint32_t index, uint64_t seed, uint32_t epoch,
                            uint8_t *gt_out, uint8_t *lq_out, int *clip, int *frames,
                            char *err, size_t errlen) {
    return pf_video_dataset_sample_gt_plain(ds, index, seed, epoch, gt_out, lq_out, NULL, clip,
                                            frames, err, errlen);
}

int pf_video_dataset_sample_gt_plain(pf_video_dataset *ds, uint32_t index, uint64_t seed,
                                     uint32_t epoch, uint8_t *gt_out, uint8_t *lq_out,
                                     uint8_t *gt_plain_out, int *clip, int *frames, char *err,
                                     size_t errlen) {
    pf_video_where w;
    if (pf_video_dataset_sample_where(ds, index, seed, epoch, &w, frames, err, errlen) != 0)
        return -1;
    const pf_dataset_cfg *cfg = &ds->cfg;
    int c = w.clip, f = w.first, interval = w.interval, reverse = w.reverse;
    const pf_clip *cl = &ds->clips[c];
    int T = ds->num_frame, lp = ds->gt_patch / ds->scale, top = w.lq_top, left = w.lq_left;
    int hflip = w.hflip, vflip = w.vflip, transpose = w.transpose;
    size_t gt_bytes = (size_t)ds->gt_patch * ds->gt_patch * 3, lq_bytes = (size_t)lp * lp * 3;
    if (clip) *clip = c;
    uint8_t *lq_patch = NULL;           /* for entries without their frame's LQ */
    /* Source frames in increasing order, so a video decodes forward; reversed samples are
       written back to front. */
    for (int j = 0; j < T; j++) {
        int t = reverse ? T - 1 - j : j, e = cl->entry0 + f + j * interval;
        if (pf_pair_cache_acquire(&ds->cache, e, load_frame, ds, err, errlen) != 0) {
            free(lq_patch);
            return -1;
        }
        const pf_cache_entry *ce = &ds->cache.entries[e];
        if (ds->realesrgan) {
            /* LQ made below from the GT patches */
        } else if (!ce->lq.data) {
            if (!lq_patch && !(lq_patch = malloc(lq_bytes))) {
                pf_pair_cache_release(&ds->cache, e);
                return fail(err, errlen, "%s: out of memory", ds->key);
            }
            if (pf_degrade_downscale_region(downscale_step(ds), ce->gt.data, ce->gt.h,
                                            ce->gt.w, ds->scale, top, left, lp, lp,
                                            lq_patch) != 0) {
                pf_pair_cache_release(&ds->cache, e);
                free(lq_patch);
                return fail(err, errlen, "%s: clip '%s' frame %d: out of memory", ds->key,
                            cl->name, cl->first + f + j * interval);
            }
            pf_copy_patch(lq_patch, lp, 0, 0, lp, hflip, vflip, transpose,
                          lq_out + (size_t)t * lq_bytes);
        } else {
            pf_copy_patch(ce->lq.data, ce->lq.w, top, left, lp, hflip, vflip, transpose,
                          lq_out + (size_t)t * lq_bytes);
        }
        if (!ds->window || 2 * j == T - 1)   /* a sliding window's GT: the center frame */
            pf_copy_patch(ce->gt.data, ce->gt.w, top * ds->scale, left * ds->scale,
                          ds->gt_patch, hflip, vflip, transpose,
                          gt_out + (size_t)(ds->window ? 0 : t) * gt_bytes);
        pf_pair_cache_release(&ds->cache, e);
    }
    free(lq_patch);
    uint64_t key = pf_dataset_degrade_key(seed, epoch, index);
    if (ds->realesrgan)
        return realesrgan_lq(ds, key, gt_out, lq_out, gt_plain_out, cl, index, err, errlen);
    if (gt_plain_out) memcpy(gt_plain_out, gt_out, (size_t)ds->gt_frames * gt_bytes); /* no USM */
    if (!ds->random_steps) return 0;
    for (int t = 0; t < T; t++) {
        uint64_t kt = pf_mix64(key ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1)));
        if (pf_degrade_random(cfg->degradation, cfg->n_degradations, kt,
                              lq_out + (size_t)t * lq_bytes, lp, lp, err, errlen) != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err);
            return fail(err, errlen, "%s: clip '%s': sample %u frame %d: %s", ds->key, cl->name,
                        index, t, why);
        }
    }
    return 0;
}

int pf_video_window(const pf_video_dataset *ds, uint32_t i, int *clip, int *frame,
                    int *lq_frames, char *err, size_t errlen) {
    if (!ds->window || ds->gt_patch > 0)
        return fail(err, errlen, "%s: not a VideoTestDataset", ds->key);
    if (i >= ds->n_frames)
        return fail(err, errlen, "%s: window %u is out of range (the set has %u frames)",
                    ds->key, i, ds->n_frames);
    int c = clip_of_entry(ds, (int)i), f = (int)i - ds->clips[c].entry0;
    if (pf_video_frame_indices(f, ds->clips[c].n_frames, ds->num_frame, ds->padding,
                               lq_frames) != 0)   /* opening checked the clip's length */
        return fail(err, errlen, "%s: clip '%s' frame %d: no window of %d frames", ds->key,
                    ds->clips[c].name, f, ds->num_frame);
    *clip = c;
    *frame = f;
    return 0;
}

int pf_video_window_read(pf_video_dataset *ds, uint32_t i, uint8_t *lq_out, uint8_t *gt_out,
                         char *err, size_t errlen) {
    int c, f, idx[PF_VIDEO_MAX_WINDOW];
    if (ds->num_frame > PF_VIDEO_MAX_WINDOW)
        return fail(err, errlen, "%s.num_frame: %d, at most %d for a window", ds->key,
                    ds->num_frame, PF_VIDEO_MAX_WINDOW);
    if (pf_video_window(ds, i, &c, &f, idx, err, errlen) != 0) return -1;
    const pf_clip *cl = &ds->clips[c];
    const pf_image *gt = NULL, *lq = NULL;
    size_t lq_bytes = (size_t)cl->lq_w * cl->lq_h * 3;
    for (int k = 0; k < ds->num_frame; k++) {
        if (pf_video_dataset_frame(ds, c, idx[k], &gt, &lq, err, errlen) != 0) return -1;
        memcpy(lq_out + (size_t)k * lq_bytes, lq->data, lq_bytes);
        if (idx[k] == f) memcpy(gt_out, gt->data, (size_t)cl->gt_w * cl->gt_h * 3);
        pf_video_dataset_release(ds, c, idx[k]);
    }
    return 0;
}

int pf_video_dataset_frame(pf_video_dataset *ds, int c, int t, const pf_image **gt,
                           const pf_image **lq, char *err, size_t errlen) {
    if (c < 0 || c >= ds->n_clips || t < 0 || t >= ds->clips[c].n_frames)
        return fail(err, errlen, "%s: clip %d frame %d is out of range", ds->key, c, t);
    int e = ds->clips[c].entry0 + t;
    if (pf_pair_cache_acquire(&ds->cache, e, load_frame, ds, err, errlen) != 0) return -1;
    *gt = &ds->cache.entries[e].gt;
    *lq = &ds->cache.entries[e].lq;
    return 0;
}

void pf_video_dataset_release(pf_video_dataset *ds, int c, int t) {
    pf_pair_cache_release(&ds->cache, ds->clips[c].entry0 + t);
}

void pf_video_dataset_set_cache_limit(pf_video_dataset *ds, size_t bytes) {
    __atomic_store_n(&ds->lq_whole, (uint64_t)bytes >= ds->all_bytes, __ATOMIC_RELAXED);
    pf_pair_cache_set_limit(&ds->cache, bytes);
}

void pf_video_dataset_cache_stats(pf_video_dataset *ds, pf_cache_stats *out) {
    pf_pair_cache_stats(&ds->cache, out);
}

int pf_video_dataset_check_held_out(const pf_video_dataset *train,
                                    const pf_video_dataset *eval, char *err, size_t errlen) {
    char a[PATH_MAX], b[PATH_MAX];
    for (int i = 0; i < eval->n_clips; i++) {
        const pf_clip *e = &eval->clips[i];
        if (!realpath(e->gt_path, a)) continue;    /* opening it checked that it exists */
        for (int j = 0; j < train->n_clips; j++) {
            const pf_clip *t = &train->clips[j];
            if (!realpath(t->gt_path, b) || strcmp(a, b) != 0) continue;
            if (e->first < t->first + t->n_frames && t->first < e->first + e->n_frames)
                return fail(err, errlen, "%s: clip '%s' frames [%d, %d) are trained on: %s "
                            "clip '%s' samples frames [%d, %d) of the same source (%s); "
                            "evaluation frames must not be trained on (hold the clip out with "
                            "%s.val_partition or give %s.clips frame ranges)", eval->key, e->name,
                            e->first, e->first + e->n_frames, train->key, t->name, t->first,
                            t->first + t->n_frames, a, train->key, train->key);
        }
    }
    return 0;
}
