/*  eval hook — `pixflow hook eval --connect ADDR`: evaluates checkpoints off the training path.

    On each "checkpoint" event whose iteration is a multiple of evaluation.interval it loads the
    weights from the file the event names, runs data.eval through the network (hooks/evaluate.c),
    appends a line to work_dir/eval.log, saves the outputs under
    work_dir/eval_visuals/iter_N/ when evaluation.save_image, remembers the best PSNR, and
    publishes an "eval" event (PSNR, SSIM, best, and bicubic's PSNR/SSIM on the same images).
    When the job finishes it evaluates the final checkpoint (named by checkpoints/latest) if it
    has not yet, so the last numbers are always there.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "hooks/evaluate.h"
#include "hooks/hook.h"
#include "loader/dataset.h"
#include "nn/model.h"
#include "worker/train_state.h"

typedef struct {
    pf_dataset ds;
    pf_model *model;
    int64_t last_iter;          /* last iteration evaluated, -1 none */
    double best_psnr;
    int64_t best_iter;
    FILE *log;                  /* work_dir/eval.log */
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
    if (pf_dataset_open(&s->ds, &cfg->eval, "data.eval", cfg->scale, 0, err, errlen) != 0)
        return -1;
    s->model = pf_model_new(cfg, err, errlen);
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
    if (pf_state_load_weights(s->model, path, NULL, err, errlen) != 0) return -1;
    char dir[PF_PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/eval_visuals/iter_%" PRId64, cfg->work_dir, iter);
    double t0 = pf_now();
    pf_eval_result r;
    int rc = pf_evaluate(s->model, cfg, &s->ds, cfg->eval_save_image ? dir : NULL,
                         (pf_eval_cancel_fn)pf_hook_stop_requested, h, &r, err, errlen);
    if (rc != 0) {
        pf_eval_result_free(&r);
        if (rc == 1) pf_info("evaluation of iteration %" PRId64 " abandoned: the job is "
                             "stopping", iter);
        return rc == 1 ? 0 : -1;
    }
    s->last_iter = iter;
    if (s->best_iter < 0 || r.psnr > s->best_psnr) {
        s->best_psnr = r.psnr;
        s->best_iter = iter;
    }
    const char *ch = cfg->eval_y_channel ? "Y" : "RGB";
    fprintf(s->log, "iter %" PRId64 ": PSNR-%s %.4f dB, SSIM-%s %.4f (bicubic %.4f dB, %.4f); "
            "best %.4f dB at iter %" PRId64 "; %d images, crop_border %d, %.1f s\n", iter, ch,
            r.psnr, ch, r.ssim, r.psnr_bicubic, r.ssim_bicubic, s->best_psnr, s->best_iter,
            r.n, cfg->crop_border, pf_now() - t0);
    for (int i = 0; i < r.n; i++)
        fprintf(s->log, "    %s: PSNR %.4f dB, SSIM %.4f (bicubic %.4f dB, %.4f)\n",
                r.items[i].name, r.items[i].psnr, r.items[i].ssim, r.items[i].psnr_bicubic,
                r.items[i].ssim_bicubic);
    fflush(s->log);
    pf_info("iter %" PRId64 ": PSNR-%s %.4f dB (bicubic %.4f dB), SSIM %.4f", iter, ch, r.psnr,
            r.psnr_bicubic, r.ssim);
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        snprintf(ev->kind, sizeof ev->kind, "eval");
        ev->iter = iter;
        ev->epoch = epoch;
        ev->psnr = r.psnr;
        ev->ssim = r.ssim;
        ev->psnr_bicubic = r.psnr_bicubic;
        ev->ssim_bicubic = r.ssim_bicubic;
        ev->best_psnr = s->best_psnr;
        ev->best_iter = s->best_iter;
        snprintf(ev->path, sizeof ev->path, "%s", path);
        snprintf(ev->text, sizeof ev->text, "%d images of %s, %s channel, crop_border %d", r.n,
                 cfg->eval.gt_folder, ch, cfg->crop_border);
        pf_client_publish(&h->client, ev);
        free(ev);
    }
    pf_eval_result_free(&r);
    return 0;
}

static int eval_event(pf_hook *h, const pf_msg_event *ev, char *err, size_t errlen) {
    eval_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    if (!s->model || strcmp(ev->kind, "checkpoint") != 0) return 0;
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
    if (pf_state_resolve_resume(&tmp, path, sizeof path, err, errlen) != 0) return -1;
    if (!path[0]) return 0;
    const char *base = strrchr(path, '/');
    int64_t iter = strtoll(base ? base + 6 : path + 5, NULL, 10);
    if (iter == s->last_iter) return 0;
    return evaluate_checkpoint(h, path, iter, -1, err, errlen);
}

static void eval_destroy(pf_hook *h) {
    eval_state *s = h->state;
    if (!s) return;
    pf_dataset_close(&s->ds);
    pf_model_destroy(&s->model);
    if (s->log) fclose(s->log);
    free(s);
    h->state = NULL;
}

static const pf_hook_ops eval_ops = {
    .role = PF_ROLE_EVAL,
    .name = "eval",
    .kinds = (const char *const[]){ "checkpoint", NULL },
    .start = eval_start,
    .event = eval_event,
    .stop = eval_stop,
    .destroy = eval_destroy,
};

int pf_hook_eval_main(int argc, char **argv) {
    return pf_hook_run(&eval_ops, argc, argv);
}
