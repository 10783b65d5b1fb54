/*  log hook — `pixflow hook log --connect ADDR`: the job's human and machine logs.

    Subscribes to every event. Train events are averaged over log_config.interval iterations
    and written as one line of work_dir/train.log ("Iter [it/total] epoch, lr, loss, time,
    data_time, eta", like MMCV's TextLoggerHook) and one JSON object of work_dir/metrics.jsonl;
    eval, checkpoint, status, error and done events are written as they come. Every publisher's
    sequence numbers are checked: a gap is logged ("missed N events from X"), not hidden.
*/
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "hooks/hook.h"

#define MAX_SOURCES 64

typedef struct {
    FILE *text;                 /* train.log */
    FILE *json;                 /* metrics.jsonl */
    char sources[MAX_SOURCES][PF_MAX_NAME];
    uint64_t last_seq[MAX_SOURCES];
    int n_sources;
    int64_t n;                  /* train events in the current interval */
    double loss, time, data_time;
    double started;             /* pf_now() of the first train event */
    int64_t first_iter;         /* iteration of the first train event seen */
} log_state;

static void stamp(char *buf, size_t len) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static int log_start(pf_hook *h, char *err, size_t errlen) {
    const pf_config *cfg = &h->client.cfg;
    log_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->state = s;
    s->first_iter = -1;
    char path[PF_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/train.log", cfg->work_dir);
    s->text = fopen(path, "a");
    snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->work_dir);
    s->json = fopen(path, "a");
    if (!s->text || !s->json) {
        snprintf(err, errlen, "%s: cannot open %s for appending", cfg->work_dir,
                 s->text ? "metrics.jsonl" : "train.log");
        return -1;
    }
    char ts[32];
    stamp(ts, sizeof ts);
    fprintf(s->text, "%s config %s/config.yaml (hash %016" PRIx64 "), model %s x%d\n", ts,
            cfg->work_dir,
            cfg->hash, cfg->model_type, cfg->scale);
    fflush(s->text);
    return 0;
}

static void check_seq(log_state *s, const pf_msg_event *ev) {
    int i;
    for (i = 0; i < s->n_sources; i++)
        if (strcmp(s->sources[i], ev->source) == 0) break;
    if (i == s->n_sources) {
        if (i == MAX_SOURCES) return;
        snprintf(s->sources[i], sizeof s->sources[i], "%s", ev->source);
        s->n_sources++;
        s->last_seq[i] = ev->seq;
        return;
    }
    if (ev->seq > s->last_seq[i] + 1) {
        char ts[32];
        stamp(ts, sizeof ts);
        fprintf(s->text, "%s missed %" PRIu64 " events from %s\n", ts,
                ev->seq - s->last_seq[i] - 1, ev->source);
    }
    s->last_seq[i] = ev->seq;
}

static void write_json(log_state *s, cJSON *o) {
    char *line = cJSON_PrintUnformatted(o);
    if (line) {
        fprintf(s->json, "%s\n", line);
        fflush(s->json);
        free(line);
    }
    cJSON_Delete(o);
}

static int log_event(pf_hook *h, const pf_msg_event *ev, char *err, size_t errlen) {
    log_state *s = h->state;
    const pf_config *cfg = &h->client.cfg;
    check_seq(s, ev);
    char ts[32];
    stamp(ts, sizeof ts);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", ev->kind);
    cJSON_AddStringToObject(o, "source", ev->source);
    cJSON_AddStringToObject(o, "time_stamp", ts);
    if (strcmp(ev->kind, "train") == 0) {
        if (s->first_iter < 0) {
            s->first_iter = ev->iter - 1;
            s->started = pf_now();
        }
        s->n++;
        s->loss += ev->loss;
        s->time += ev->time;
        s->data_time += ev->data_time;
        if (ev->iter % cfg->log_interval != 0 && ev->iter != ev->total_iters) {
            cJSON_Delete(o);
            return 0;
        }
        double loss = s->loss / s->n, t = s->time / s->n, dt = s->data_time / s->n;
        int64_t done = ev->iter - s->first_iter;
        double rate = done > 0 ? (pf_now() - s->started) / (double)done : 0;
        long eta = (long)(rate * (double)(ev->total_iters > ev->iter ? ev->total_iters - ev->iter
                                                                   : 0));
        fprintf(s->text, "%s Iter [%" PRId64 "/%" PRId64 "] epoch %" PRId64 ", lr: %.3e, "
                "loss: %.4f, time: %.3f, data_time: %.3f, eta: %ld:%02ld:%02ld\n", ts, ev->iter,
                ev->total_iters, ev->epoch, ev->lr, loss, t, dt, eta / 3600, eta / 60 % 60,
                eta % 60);
        fflush(s->text);
        cJSON_AddNumberToObject(o, "iter", (double)ev->iter);
        cJSON_AddNumberToObject(o, "epoch", (double)ev->epoch);
        cJSON_AddNumberToObject(o, "lr", ev->lr);
        cJSON_AddNumberToObject(o, "loss", loss);
        cJSON_AddNumberToObject(o, "time", t);
        cJSON_AddNumberToObject(o, "data_time", dt);
        cJSON_AddNumberToObject(o, "n", (double)s->n);
        s->n = 0;
        s->loss = s->time = s->data_time = 0;
    } else if (strcmp(ev->kind, "eval") == 0) {
        fprintf(s->text, "%s Eval iter %" PRId64 ": PSNR %.4f dB, SSIM %.4f (bicubic %.4f dB, "
                "%.4f); best %.4f dB at iter %" PRId64 "\n", ts, ev->iter, ev->psnr, ev->ssim,
                ev->psnr_bicubic, ev->ssim_bicubic, ev->best_psnr, ev->best_iter);
        fflush(s->text);
        cJSON_AddNumberToObject(o, "iter", (double)ev->iter);
        cJSON_AddNumberToObject(o, "psnr", ev->psnr);
        cJSON_AddNumberToObject(o, "ssim", ev->ssim);
        cJSON_AddNumberToObject(o, "psnr_bicubic", ev->psnr_bicubic);
        cJSON_AddNumberToObject(o, "ssim_bicubic", ev->ssim_bicubic);
        cJSON_AddNumberToObject(o, "best_psnr", ev->best_psnr);
        cJSON_AddNumberToObject(o, "best_iter", (double)ev->best_iter);
        cJSON_AddStringToObject(o, "checkpoint", ev->path);
    } else if (strcmp(ev->kind, "checkpoint") == 0) {
        fprintf(s->text, "%s Saved checkpoint %s\n", ts, ev->path);
        fflush(s->text);
        cJSON_AddNumberToObject(o, "iter", (double)ev->iter);
        cJSON_AddStringToObject(o, "path", ev->path);
    } else {
        fprintf(s->text, "%s %s %s: %s\n", ts, ev->source, ev->kind, ev->text);
        fflush(s->text);
        cJSON_AddStringToObject(o, "text", ev->text);
    }
    write_json(s, o);
    (void)err;
    (void)errlen;
    return 0;
}

static void log_destroy(pf_hook *h) {
    log_state *s = h->state;
    if (!s) return;
    if (s->text) fclose(s->text);
    if (s->json) fclose(s->json);
    free(s);
    h->state = NULL;
}

static const pf_hook_ops log_ops = {
    .role = PF_ROLE_LOG,
    .name = "log",
    .kinds = NULL,
    .start = log_start,
    .event = log_event,
    .destroy = log_destroy,
};

int pf_hook_log_main(int argc, char **argv) {
    return pf_hook_run(&log_ops, argc, argv);
}
