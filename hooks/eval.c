/*  eval hook — `pixflow hook eval --connect ADDR`: evaluates checkpoints off the training path.

    On each "checkpoint" event whose iteration is a multiple of evaluation.interval it loads the
    weights from the file the event names, runs data.eval through the network (hooks/evaluate.c),
    appends a line to work_dir/eval.log, saves the outputs under
    work_dir/eval_visuals/iter_N/ when evaluation.save_image, remembers the best PSNR, and
    publishes an "eval" event (PSNR, SSIM, best, and bicubic's PSNR/SSIM on the same images).
    When the job finishes it evaluates the final checkpoint (named by checkpoints/latest) if it
    has not yet, so the last numbers are always there.

    A PSNR of +inf (an image, or a clip's frame, equal to its GT) is left out of the means and
    counted (hooks/evaluate.h): the summary line says how many, and the "eval" event carries
    the counts (psnr_inf, psnr_bicubic_inf, *_inf_items).

    With evaluation.instances N, instance i evaluates the images j with j mod N == i and writes
    their lines to eval.log; instances 1..N-1 publish their sums as an "eval_part" event, and
    instance 0 adds them to its own and, once all N parts of an iteration are in, writes the
    summary, tracks the best and publishes "eval". Training never waits for any of this.

    With visual_config.interval > 0 each evaluation also publishes the first
    visual_config.num_samples eval images (LQ, output, GT, centre-cropped to fit a visual frame)
    on topic "visual", tag "eval", for the log hook's TensorBoard images "eval/<name>".
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>
#include <sys/stat.h>

#include "common/checkpoint.h"
#include "common/dataset.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/realesrgan_cfg.h"
#include "common/util.h"
#include "hooks/evaluate.h"
#include "hooks/hook.h"
#include "hooks/visual_grid.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model.h"

#define MAX_PENDING 16
#define GATHER_TIMEOUT_S 600.0  /* instance 0 waits this long for the last parts at the end */

/* Instance 0's sums for one iteration until every instance's part is in. */
typedef struct {
    int64_t iter, epoch;            /* -1 = free slot */
    int parts;
    int64_t count;                  /* items (images or clips) in the sums */
    pf_psnr_mean psnr, psnr_bicubic;    /* over the items' PSNR: +inf items left out, counted */
    double ssim, ssim_bicubic;      /* sums over the items */
    int64_t psnr_inf, psnr_bicubic_inf; /* frames (images) with +inf PSNR, all instances */
    char path[PF_MAX_ENDPOINT * 4];
} gather;

/* One instance's share of an evaluation, as add_part takes it (an "eval_part" event's fields). */
typedef struct {
    int64_t count;                  /* items evaluated */
    double psnr, psnr_bicubic;      /* sums of the items' finite PSNR, dB */
    int64_t psnr_inf_items, psnr_bicubic_inf_items; /* items with +inf PSNR, not in the sums */
    double ssim, ssim_bicubic;      /* sums over all items */
    int64_t psnr_inf, psnr_bicubic_inf; /* frames (images) with +inf PSNR */
} part;

typedef struct {
    pf_dataset all;                 /* data.eval */
    pf_dataset ds;                  /* this instance's share (= all when alone) */
    pf_model *model;
    gather pending[MAX_PENDING];
    int64_t last_iter;          /* last iteration evaluated, -1 none */
    double best_psnr;
    int64_t best_iter;
    FILE *log;                  /* work_dir/eval.log */
    int stopped;                /* eval_stop ran: only "eval_part" events count now */
    double give_up;             /* pf_now() after which eval_waiting stops gathering */
} eval_state;

static int eval_start(pf_hook *h, char *err, size_t errlen) {
    const pf_config *cfg = &h->client.cfg;
    eval_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->state = s;
    s->last_iter = -1;
    s->best_iter = -1;
    if (!cfg->eval.present || cfg->eval_interval <= 0) {
        pf_info("no evaluation configured; idle");
        return 0;
    }
    if (pf_dataset_open(&s->all, &cfg->eval, "data.eval", cfg->scale, 0, err, errlen) != 0)
        return -1;
    pf_dataset_set_seed(&s->all, pf_dataset_eval_seed(&cfg->eval, cfg->seed));
    if (pf_dataset_shard(&s->all, h->instance, h->instances, &s->ds) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pf_dataset_log_gt_crops(&s->ds, "data.eval");   /* this instance's images, once */
    for (int i = 0; i < MAX_PENDING; i++) s->pending[i].iter = -1;
    s->model = pf_model_new_infer(cfg, err, errlen);
    if (!s->model) return -1;
    char path[PF_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/eval.log", cfg->work_dir);
    s->log = fopen(path, "a");
    if (!s->log) {
        snprintf(err, errlen, "%s: cannot open for appending", path);
        return -1;
    }
    return 0;
}

/* What the evaluation's items are: a video set's means are per clip, then over clips. */
static const char *units(const pf_config *cfg) {
    return pf_config_is_video_set(cfg->eval.type) ? "clips (per-frame means per clip, then "
                                                    "over clips)"
                                                  : "images";
}

/* All parts of `g` are in: write the summary, track the best, publish "eval". */
static void finish_gather(pf_hook *h, gather *g) {
    eval_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    double n = g->count > 0 ? (double)g->count : 1;
    double psnr = pf_psnr_mean_get(&g->psnr), ssim = g->ssim / n,
           pb = pf_psnr_mean_get(&g->psnr_bicubic), sb = g->ssim_bicubic / n;
    if (!g->count) psnr = pb = 0;   /* as before: an empty evaluation reads 0 */
    char note[256];
    pf_msg_event counts = { .psnr_inf = g->psnr_inf, .psnr_bicubic_inf = g->psnr_bicubic_inf,
                            .psnr_inf_items = g->psnr.inf,
                            .psnr_bicubic_inf_items = g->psnr_bicubic.inf };
    pf_eval_event_note(note, sizeof note, &counts, pf_config_is_video_set(cfg->eval.type));
    if (s->best_iter < 0 || psnr > s->best_psnr) {
        s->best_psnr = psnr;
        s->best_iter = g->iter;
    }
    const char *ch = cfg->eval_y_channel ? "Y" : "RGB";
    char mode[192];
    fprintf(s->log, "iter %" PRId64 ": PSNR-%s %.4f dB, SSIM-%s %.4f (bicubic %.4f dB, %.4f)%s; "
            "best %.4f dB at iter %" PRId64 "; %lld %s, crop_border %d, %d instance%s, "
            "inference: %s\n", g->iter, ch, psnr, ch, ssim, pb, sb, note, s->best_psnr,
            s->best_iter, (long long)g->count, units(cfg), cfg->crop_border, h->instances,
            h->instances > 1 ? "s" : "",
            pf_infer_describe(cfg, mode, sizeof mode));
    fflush(s->log);
    pf_info("iter %" PRId64 ": PSNR-%s %.4f dB (bicubic %.4f dB), SSIM %.4f%s", g->iter, ch,
            psnr, pb, ssim, note);
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        snprintf(ev->kind, sizeof ev->kind, "eval");
        ev->iter = g->iter;
        ev->epoch = g->epoch;
        ev->psnr = psnr;
        ev->ssim = ssim;
        ev->psnr_bicubic = pb;
        ev->ssim_bicubic = sb;
        ev->best_psnr = s->best_psnr;
        ev->best_iter = s->best_iter;
        ev->count = g->count;
        ev->psnr_inf = g->psnr_inf;
        ev->psnr_bicubic_inf = g->psnr_bicubic_inf;
        ev->psnr_inf_items = g->psnr.inf;
        ev->psnr_bicubic_inf_items = g->psnr_bicubic.inf;
        snprintf(ev->path, sizeof ev->path, "%s", g->path);
        snprintf(ev->text, sizeof ev->text, "%lld %s of %s, %s channel, crop_border %d",
                 (long long)g->count, units(cfg), cfg->eval.gt_folder, ch, cfg->crop_border);
        pf_client_publish(&h->client, ev);
        free(ev);
    }
    g->iter = -1;
}

/* Instance 0: add one instance's sums for `iter`; publish when all parts are in. */
static void add_part(pf_hook *h, int64_t iter, int64_t epoch, const char *path, const part *p) {
    eval_state *s = h->state;
    gather *g = NULL, *free_slot = NULL;
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].iter == iter) g = &s->pending[i];
        if (s->pending[i].iter < 0 && !free_slot) free_slot = &s->pending[i];
    }
    if (!g) {
        if (!free_slot) {
            pf_warn("too many evaluations in flight; iteration %" PRId64 " dropped", iter);
            return;
        }
        g = free_slot;
        memset(g, 0, sizeof *g);
        g->iter = iter;
        g->epoch = epoch;
    }
    if (epoch >= 0) g->epoch = epoch;
    if (path && path[0]) snprintf(g->path, sizeof g->path, "%s", path);
    g->parts++;
    g->count += p->count;
    g->psnr.sum += p->psnr;
    g->psnr.n += p->count - p->psnr_inf_items;
    g->psnr.inf += p->psnr_inf_items;
    g->psnr_bicubic.sum += p->psnr_bicubic;
    g->psnr_bicubic.n += p->count - p->psnr_bicubic_inf_items;
    g->psnr_bicubic.inf += p->psnr_bicubic_inf_items;
    g->ssim += p->ssim;
    g->ssim_bicubic += p->ssim_bicubic;
    g->psnr_inf += p->psnr_inf;
    g->psnr_bicubic_inf += p->psnr_bicubic_inf;
    if (g->parts == h->instances) finish_gather(h, g);
}

/* What publish_sample needs besides the image. */
typedef struct {
    pf_hook *h;
    const pf_dataset *ds;           /* this instance's share */
    int64_t iter;
} sample_ctx;

/* visual_config.interval > 0: the first visual_config.num_samples images of data.eval (global
   order: pf_dataset_file.id) go out as PF_MSG_VISUAL tag "eval", n = 1,
   name = the image's stem, for TensorBoard (log hook). LQ, output and GT are centre-cropped
   consistently (pf_visual_fit: LQ ch x cw at (y0, x0), output and GT s ch x s cw at
   (s y0, s x0)) so the GT frame fits PF_MAX_VISUAL_FRAME. Best effort: PUB drops at its high-water mark. */
static void publish_sample(void *ctx, int file, const char *name, const pf_image *lq,
                           const uint8_t *out, const pf_image *gt) {
    sample_ctx *c = ctx;
    pf_hook *h = c->h;
    const pf_config *cfg = &h->client.cfg;
    int s = cfg->scale;
    int64_t global = c->ds->video ? file : c->ds->files[file].id;   /* video: the clip */
    if (global >= cfg->visual_num_samples || gt->h < lq->h * s || gt->w < lq->w * s) return;
    int y0, x0, ch, cw;
    pf_visual_fit(lq->h, lq->w, s, &y0, &x0, &ch, &cw);
    int gh = ch * s, gw = cw * s;
    uint8_t *lq_c = malloc((size_t)ch * cw * 3), *out_c = malloc((size_t)gh * gw * 3),
            *gt_c = malloc((size_t)gh * gw * 3);
    if (lq_c && out_c && gt_c) {
        for (int y = 0; y < ch; y++)
            memcpy(lq_c + (size_t)y * cw * 3, lq->data + ((size_t)(y0 + y) * lq->w + x0) * 3,
                   (size_t)cw * 3);
        for (int y = 0; y < gh; y++) {
            size_t src = ((size_t)(y0 * s + y) * gt->w + (size_t)x0 * s) * 3;
            memcpy(out_c + (size_t)y * gw * 3, out + src, (size_t)gw * 3);
            memcpy(gt_c + (size_t)y * gw * 3, gt->data + src, (size_t)gw * 3);
        }
        pf_msg m = { .type = PF_MSG_VISUAL };
        pf_msg_visual *v = &m.u.visual;
        snprintf(v->source, sizeof v->source, "%s", h->client.name);
        snprintf(v->tag, sizeof v->tag, "eval");
        snprintf(v->name, sizeof v->name, "%s", name);
        v->iter = c->iter;
        v->n = 1;
        v->lq_h = (uint32_t)ch;
        v->lq_w = (uint32_t)cw;
        v->gt_h = (uint32_t)gh;
        v->gt_w = (uint32_t)gw;
        pf_frame topic = { "visual", 6 };
        pf_frame frames[3] = { { lq_c, (size_t)ch * cw * 3 }, { out_c, (size_t)gh * gw * 3 },
                               { gt_c, (size_t)gh * gw * 3 } };
        if (pf_send(h->client.pub, &topic, &m, frames, 3) != 0)
            pf_warn("eval sample %s of iteration %" PRId64 " not published", name, c->iter);
    }
    free(lq_c);
    free(out_c);
    free(gt_c);
}

/* evaluation.save_image: the references the dashboard's A/B slider compares each output with
   (docs/dashboard.md), written once per image, by the first evaluation that meets it:
   work_dir/eval_visuals/gt/NAME.png (the GT as evaluated) and eval_visuals/bicubic/NAME.png
   (MATLAB bicubic of the LQ: the psnr_bicubic baseline). Best effort: a failure is a warning,
   never the evaluation's. Images only (for a clip this is called with its middle frame, which
   the viewer's frame names would not find). */
static void save_references(const pf_config *cfg, const char *name, const pf_image *lq,
                            const pf_image *gt) {
    char dir[PF_PATH_MAX + 64], path[PF_PATH_MAX * 2 + 300], err[512];
    int s = cfg->scale;
    for (int which = 0; which < 2; which++) {
        snprintf(dir, sizeof dir, "%s/eval_visuals/%s", cfg->work_dir, which ? "bicubic" : "gt");
        snprintf(path, sizeof path, "%s/%s.png", dir, name);
        struct stat st;
        if (stat(path, &st) == 0) continue;
        uint8_t *bic = NULL;
        int rc = pf_mkdirs(dir, err, sizeof err);
        if (rc == 0 && which) {
            if (gt->h != lq->h * s || gt->w != lq->w * s) continue;   /* not the output's size */
            bic = malloc((size_t)gt->h * gt->w * 3);
            rc = bic ? pf_imresize_u8(lq->data, lq->h, lq->w, 3, (double)s, bic) : -1;
            if (rc) snprintf(err, sizeof err, "bicubic of '%s' failed", name);
        }
        if (rc == 0)
            rc = pf_image_write_png(path, which ? bic : gt->data, gt->w, gt->h, err, sizeof err);
        if (rc) pf_warn("eval reference %s not written: %s", path, err);
        free(bic);
    }
}

/* pf_evaluate's per-image call: the references (save_image) and the TensorBoard sample
   (visual_config.interval > 0). */
static void on_eval_image(void *ctx, int file, const char *name, const pf_image *lq,
                          const uint8_t *out, const pf_image *gt) {
    sample_ctx *c = ctx;
    const pf_config *cfg = &c->h->client.cfg;
    if (cfg->eval_save_image && !c->ds->video) save_references(cfg, name, lq, gt);
    if (cfg->visual_interval > 0) publish_sample(ctx, file, name, lq, out, gt);
}

static int evaluate_checkpoint(pf_hook *h, const char *path, int64_t iter, int64_t epoch,
                               char *err, size_t errlen) {
    eval_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    struct stat st;
    if (stat(path, &st) != 0) {
        /* Pruned (max_keep_ckpts) before this hook got to it: nothing to evaluate. */
        pf_warn("%s is gone (pruned?); iteration %" PRId64 " not evaluated", path, iter);
        return 0;
    }
    /* With ema_decay > 0 the checkpoint carries the EMA weights: evaluate those (BasicSR). */
    int ema = 0;
    if (pf_ckpt_load_eval_weights(s->model, path, &ema, err, errlen) != 0) return -1;
    if (ema) {
        fprintf(s->log, "    iter %" PRId64 ": EMA weights (" PF_EMA_PREFIX "*)\n", iter);
        fflush(s->log);
    }
    char dir[PF_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/eval_visuals/iter_%" PRId64, cfg->work_dir, iter);
    double t0 = pf_now();
    pf_eval_result r;
    sample_ctx sc = { h, &s->ds, iter };
    int rc = pf_evaluate(s->model, cfg, &s->ds, cfg->eval_save_image ? dir : NULL,
                         (pf_eval_cancel_fn)pf_hook_stop_requested, h,
                         cfg->visual_interval > 0 || cfg->eval_save_image ? on_eval_image
                                                                          : NULL, &sc, &r, err,
                         errlen);
    if (rc != 0) {
        pf_eval_result_free(&r);
        if (rc == 1) pf_info("evaluation of iteration %" PRId64 " abandoned: the job is "
                             "stopping", iter);
        return rc == 1 ? 0 : -1;
    }
    s->last_iter = iter;
    const char *ch = cfg->eval_y_channel ? "Y" : "RGB";
    int frames = 0;
    for (int i = 0; i < r.n; i++) {
        const pf_eval_item *it = &r.items[i];
        char what[32] = "", note[192] = "";
        if (s->ds.video) {
            snprintf(what, sizeof what, " (%d frames)", it->frames);
            pf_eval_inf_note(note, sizeof note, "frame", it->psnr_inf, it->psnr_bicubic_inf,
                             NULL, 0, 0);
        }
        frames += it->frames;
        fprintf(s->log, "    iter %" PRId64 " %s%s: PSNR-%s %.4f dB, SSIM-%s %.4f (bicubic %.4f "
                "dB, %.4f)%s\n", iter, it->name, what, ch, it->psnr, ch, it->ssim,
                it->psnr_bicubic, it->ssim_bicubic, note);
    }
    fflush(s->log);
    if (s->ds.video)
        pf_info("iter %" PRId64 ": %d clips (%d frames) evaluated in %.1f s", iter, r.n, frames,
                pf_now() - t0);
    else
        pf_info("iter %" PRId64 ": %d images evaluated in %.1f s", iter, r.n, pf_now() - t0);
    /* This instance's sums: straight to the gatherer when it is instance 0, else an event.
       A mean over the finite items times their number is their sum (0 when there are none). */
    part p = { .count = r.n, .psnr_inf_items = r.psnr_inf_items,
               .psnr_bicubic_inf_items = r.psnr_bicubic_inf_items, .psnr_inf = r.psnr_inf,
               .psnr_bicubic_inf = r.psnr_bicubic_inf };
    int fin = r.n - r.psnr_inf_items, fin_b = r.n - r.psnr_bicubic_inf_items;
    p.psnr = fin > 0 ? r.psnr * fin : 0;
    p.psnr_bicubic = fin_b > 0 ? r.psnr_bicubic * fin_b : 0;
    p.ssim = r.ssim * r.n;
    p.ssim_bicubic = r.ssim_bicubic * r.n;
    if (h->instance == 0) {
        add_part(h, iter, epoch, path, &p);
    } else {
        pf_msg_event *ev = calloc(1, sizeof *ev);
        if (ev) {
            snprintf(ev->kind, sizeof ev->kind, "eval_part");
            ev->iter = iter;
            ev->epoch = epoch;
            ev->count = p.count;
            ev->psnr = p.psnr;
            ev->ssim = p.ssim;
            ev->psnr_bicubic = p.psnr_bicubic;
            ev->ssim_bicubic = p.ssim_bicubic;
            ev->psnr_inf = p.psnr_inf;
            ev->psnr_bicubic_inf = p.psnr_bicubic_inf;
            ev->psnr_inf_items = p.psnr_inf_items;
            ev->psnr_bicubic_inf_items = p.psnr_bicubic_inf_items;
            snprintf(ev->path, sizeof ev->path, "%s", path);
            pf_client_publish(&h->client, ev);
            free(ev);
        }
    }
    pf_eval_result_free(&r);
    return 0;
}

static int eval_event(pf_hook *h, const pf_msg_event *ev, char *err, size_t errlen) {
    eval_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    if (!s->model) return 0;
    if (strcmp(ev->kind, "eval_part") == 0) {
        if (h->instance == 0 && ev->count >= 0 && ev->psnr_inf_items <= ev->count &&
            ev->psnr_bicubic_inf_items <= ev->count) {
            part p = { ev->count, ev->psnr, ev->psnr_bicubic, ev->psnr_inf_items,
                       ev->psnr_bicubic_inf_items, ev->ssim, ev->ssim_bicubic, ev->psnr_inf,
                       ev->psnr_bicubic_inf };
            add_part(h, ev->iter, ev->epoch, ev->path, &p);
        } else if (h->instance == 0) {
            pf_warn("eval_part of iteration %" PRId64 " from %s: more items left out than "
                    "evaluated (%" PRId64 ", %" PRId64 " of %" PRId64 "); ignored", ev->iter,
                    ev->source, ev->psnr_inf_items, ev->psnr_bicubic_inf_items, ev->count);
        }
        return 0;
    }
    if (strcmp(ev->kind, "checkpoint") != 0 || s->stopped) return 0;
    if (ev->iter % cfg->eval_interval != 0 || ev->iter == s->last_iter) return 0;
    return evaluate_checkpoint(h, ev->path, ev->iter, ev->epoch, err, errlen);
}

static int eval_stop(pf_hook *h, const char *reason, char *err, size_t errlen) {
    eval_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    if (!s->model || strcmp(reason, "finish") != 0) return 0;
    pf_config tmp = *cfg;
    snprintf(tmp.resume_from, sizeof tmp.resume_from, "auto");
    char path[PF_PATH_MAX + 64];
    if (pf_ckpt_resolve_resume(&tmp, path, sizeof path, err, errlen) != 0) return -1;
    if (!path[0]) return 0;
    const char *base = strrchr(path, '/');
    int64_t iter = strtoll(base ? base + 6 : path + 5, NULL, 10);
    if (iter != s->last_iter && evaluate_checkpoint(h, path, iter, -1, err, errlen) != 0)
        return -1;
    /* Instance 0 gathers the other instances' last parts before it leaves (eval_waiting). */
    s->stopped = 1;
    s->give_up = pf_now() + GATHER_TIMEOUT_S;
    return 0;
}

/* After eval_stop: 1 while instance 0 still misses parts of an evaluation, for at most
   GATHER_TIMEOUT_S, and unless the coordinator asks to interrupt or abort. */
static int eval_waiting(pf_hook *h) {
    eval_state *s = h->state;
    if (!s || !s->stopped) return 0;
    int open = 0;
    for (int i = 0; i < MAX_PENDING; i++) open += s->pending[i].iter >= 0;
    if (!open || h->instance != 0 || pf_hook_stop_requested(h)) return 0;
    if (pf_now() > s->give_up) {
        pf_warn("%d evaluations still miss parts from other instances; giving up", open);
        return 0;
    }
    return 1;
}

static void eval_destroy(pf_hook *h) {
    eval_state *s = h->state;
    if (!s) return;
    if (s->ds.files != s->all.files || s->ds.video_shared) pf_dataset_close(&s->ds);
    pf_dataset_close(&s->all);
    pf_model_destroy(&s->model);
    if (s->log) fclose(s->log);
    free(s);
    h->state = NULL;
}

static const pf_hook_ops eval_ops = {
    .role = PF_ROLE_EVAL,
    .name = "eval",
    .kinds = (const char *const[]){ "checkpoint", "eval_part", NULL },
    .start = eval_start,
    .event = eval_event,
    .stop = eval_stop,
    .waiting = eval_waiting,
    .destroy = eval_destroy,
};

int pf_hook_eval_main(int argc, char **argv) {
    return pf_hook_run(&eval_ops, argc, argv);
}
