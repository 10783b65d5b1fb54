/*  log hook — `pixflow hook log --connect ADDR`: the job's human and machine logs.

    Subscribes to every event. Train events are averaged over log_config.interval iterations
    and written as one line of work_dir/train.log ("Iter [it/total] epoch, lr, loss, time,
    data_time, eta", like MMCV's TextLoggerHook) and one JSON object of work_dir/metrics.jsonl;
    eval, checkpoint, status, error and done events are written as they come. Every publisher's
    sequence numbers are checked: a gap is logged ("missed N events from X"), not hidden.

    Loaders: every `loader` event (throughput, cache, queue; every 2 s per loader) goes to
    metrics.jsonl; train.log gets a loader's first one, then one per LOADER_LINE_S, and its
    last. Every `skip` event (a sample left out because its file became unreadable) goes to
    both, and when the hook stops, a summary line counts the skipped samples by file.

    TensorBoard: the same train averages (train/loss, train/lr, train/time in s/iter,
    train/data_time) and eval results (eval/psnr, eval/ssim, eval/psnr_bicubic,
    eval/ssim_bicubic) go to work_dir/events.out.tfevents.<unix time>.<host> as scalars, step =
    iteration (hooks/tb_writer.c). Visual messages (topic "visual") go there as images: the
    worker's training samples as "visual/train", the eval hook's as "eval/<file name>", each the
    grid LQ upscaled | output | GT (hooks/visual_grid.c) PNG-encoded, step = iteration. A failed
    write there is reported once and does not stop the hook.

    A GAN job (docs/gan.md): its train events carry BasicSR's logged terms (l_g_pix,
    l_g_percep, l_g_style, l_g_gan, l_d_real, l_d_fake, out_d_real, out_d_fake, those the
    iteration computed: proto.h pf_msg_event.gan_terms). Each is averaged over the interval's
    events that carry it (the generator's skip the iterations without a generator step) and
    written like BasicSR's MessageLogger: "l_g_pix: 1.2345e-02" after the loss in train.log,
    a member of that name in metrics.jsonl, and the TensorBoard scalar losses/l_g_pix (the
    losses) or out_d_real / out_d_fake (the discriminator's mean outputs), as BasicSR tags them.
*/
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/image.h"
#include "common/log.h"
#include "common/util.h"
#include "hooks/evaluate.h"
#include "hooks/event_json.h"
#include "hooks/hook.h"
#include "hooks/tb_writer.h"
#include "hooks/visual_grid.h"

#define MAX_SOURCES 64
#define LOADER_LINE_S 30.0      /* at most one train.log line per loader this often */
#define MAX_BAD_FILES 32        /* files named in the summary */

typedef struct {
    FILE *text;                 /* train.log */
    FILE *json;                 /* metrics.jsonl */
    pf_tb_writer *tb;           /* events.out.tfevents.*, NULL when it could not be created */
    int tb_reported;            /* its failure is in train.log */
    char sources[MAX_SOURCES][PF_MAX_NAME];
    uint64_t last_seq[MAX_SOURCES];
    double last_line[MAX_SOURCES];  /* loaders: pf_now() of the source's last train.log line */
    int n_sources;
    int64_t skipped;            /* skip events seen */
    int64_t skipped_in_interval;/* samples skipped in the current train interval */
    char bad_files[MAX_BAD_FILES][PF_MAX_ENDPOINT * 4];
    int64_t bad_count[MAX_BAD_FILES];
    int n_bad;
    int64_t n;                  /* train events in the current interval */
    double loss, time, data_time;
    double gan_sum[PF_GAN_N_TERMS]; /* a GAN job: each term's sum over the interval's events */
    int64_t gan_n[PF_GAN_N_TERMS];  /* that carry it (pf_msg_event.gan_terms), and how many */
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
    int world = h->client.world_size;
    fprintf(s->text, "%s config %s/config.yaml (hash %016" PRIx64 "), model %s x%d, global "
            "batch %d (%d workers x %d)\n", ts, cfg->work_dir, cfg->hash, cfg->model_type,
            cfg->scale, world * cfg->samples_per_gpu, world, cfg->samples_per_gpu);
    pf_tb_writer *tb = pf_tb_writer_new(cfg->work_dir, err, errlen);
    if (tb) {
        fprintf(s->text, "%s TensorBoard scalars: %s\n", ts, pf_tb_writer_path(tb));
        s->tb = tb;
    } else {
        fprintf(s->text, "%s TensorBoard scalars not written: %s\n", ts, err);
        pf_warn("log hook: TensorBoard scalars not written: %s", err);
        err[0] = 0;
    }
    fflush(s->text);
    return 0;
}

/* After a TensorBoard write returned rc: a failure is noted in train.log once (tb_writer logs
   it too). */
static void tb_note(log_state *s, int rc) {
    if (rc == 0 || s->tb_reported) return;
    char ts[32];
    stamp(ts, sizeof ts);
    fprintf(s->text, "%s TensorBoard event file %s: write failed; nothing more written\n", ts,
            pf_tb_writer_path(s->tb));
    fflush(s->text);
    s->tb_reported = 1;
}

/* One TensorBoard scalar. */
static void tb_scalar(log_state *s, const char *tag, int64_t step, double value) {
    if (s->tb) tb_note(s, pf_tb_writer_scalar(s->tb, tag, step, (float)value));
}

/* A train event's GAN terms into the interval's sums. */
static void gan_add(log_state *s, const pf_msg_event *ev) {
    for (int i = 0; i < PF_GAN_N_TERMS; i++) {
        if (!(ev->gan_terms >> i & 1)) continue;
        s->gan_sum[i] += ev->gan[i];
        s->gan_n[i]++;
    }
}

/* The interval's GAN term means (those seen) as ", l_g_pix: 1.2345e-02, ..." into text (""
   without any), members of o and TensorBoard scalars at iter (BasicSR's tags: losses/<key>
   for the l_* terms, <key> for the others); the sums reset. */
static void gan_flush(log_state *s, int64_t iter, char *text, size_t len, cJSON *o) {
    size_t at = 0;
    text[0] = '\0';
    for (int i = 0; i < PF_GAN_N_TERMS; i++) {
        if (!s->gan_n[i]) continue;
        const char *key = pf_gan_term_name(i);
        double mean = s->gan_sum[i] / (double)s->gan_n[i];
        int w = snprintf(text + at, len - at, ", %s: %.4e", key, mean);
        if (w > 0 && (size_t)w < len - at) at += (size_t)w;
        char tag[PF_MAX_NAME];
        snprintf(tag, sizeof tag, "%s%s", strncmp(key, "l_", 2) ? "" : "losses/", key);
        tb_scalar(s, tag, iter, mean);
        cJSON_AddNumberToObject(o, key, mean);
        s->gan_sum[i] = 0;
        s->gan_n[i] = 0;
    }
}

/* A visual message (checked by the hook loop) as a TensorBoard image: the grid LQ upscaled |
   output | GT (hooks/visual_grid.c) as PNG, tag "visual/train" for the worker's training
   samples and "eval/<file name>" for the eval hook's, step = v->iter. */
static int log_visual(pf_hook *h, const pf_msg_visual *v, const uint8_t *lq,
                      const uint8_t *output, const uint8_t *gt, char *err, size_t errlen) {
    log_state *s = h->state;
    if (!s->tb || pf_tb_writer_failed(s->tb)) return 0;
    char tag[PF_MAX_NAME + 8], e2[512];
    if (strcmp(v->tag, "train") == 0) snprintf(tag, sizeof tag, "visual/train");
    else snprintf(tag, sizeof tag, "eval/%s", v->name);
    int w, gh;
    uint8_t *png = NULL;
    size_t len = 0;
    uint8_t *grid = pf_visual_grid(v, lq, output, gt, &w, &gh, e2, sizeof e2);
    if (grid && pf_image_encode_png(grid, w, gh, &png, &len, e2, sizeof e2) == 0)
        tb_note(s, pf_tb_writer_image(s->tb, tag, v->iter, gh, w, png, len));
    else
        pf_warn("log hook: TensorBoard image %s of iter %lld not written: %s", tag,
                (long long)v->iter, e2);
    free(grid);
    free(png);
    (void)err;
    (void)errlen;
    return 0;
}

/* Check the source's sequence number; returns its index, or -1 when there are too many
   sources to track. */
static int check_seq(log_state *s, const pf_msg_event *ev) {
    int i;
    for (i = 0; i < s->n_sources; i++)
        if (strcmp(s->sources[i], ev->source) == 0) break;
    if (i == s->n_sources) {
        if (i == MAX_SOURCES) return -1;
        snprintf(s->sources[i], sizeof s->sources[i], "%s", ev->source);
        s->n_sources++;
        s->last_seq[i] = ev->seq;
        s->last_line[i] = -1;
        return i;
    }
    if (ev->seq > s->last_seq[i] + 1) {
        char ts[32];
        stamp(ts, sizeof ts);
        fprintf(s->text, "%s missed %" PRIu64 " events from %s\n", ts,
                ev->seq - s->last_seq[i] - 1, ev->source);
    }
    s->last_seq[i] = ev->seq;
    return i;
}

/* A `loader` event: every one to metrics.jsonl, some to train.log (see the top). */
static void log_loader(log_state *s, int src, const pf_msg_event *ev, const char *ts,
                       cJSON *o) {
    int last = strcmp(ev->text, "final") == 0;
    if (src < 0 || last || s->last_line[src] < 0 ||
        pf_now() - s->last_line[src] >= LOADER_LINE_S) {
        fprintf(s->text, "%s Loader %s (%s)%s: %.1f patches/s, %.2f MB/s, cache hit rate "
                "%.1f%% (%.1f MiB held), queue %" PRId64 "\n", ts, ev->source, ev->host,
                last ? " leaving" : "", ev->patches_per_s, ev->bytes_per_s / 1e6,
                100 * ev->hit_rate, (double)ev->cache_bytes / (1 << 20), ev->queue_depth);
        fflush(s->text);
        if (src >= 0) s->last_line[src] = pf_now();
    }
    pf_event_json_add(o, ev);
    if (last) cJSON_AddBoolToObject(o, "final", 1);
}

/* A `skip` event: a sample left out of its batch because its file became unreadable. */
static void log_skip(log_state *s, const pf_msg_event *ev, const char *ts, cJSON *o) {
    s->skipped++;
    int i;
    for (i = 0; i < s->n_bad && strcmp(s->bad_files[i], ev->path); i++) {}
    if (i == s->n_bad && i < MAX_BAD_FILES)
        snprintf(s->bad_files[s->n_bad++], sizeof s->bad_files[0], "%s", ev->path);
    if (i < MAX_BAD_FILES) s->bad_count[i]++;
    fprintf(s->text, "%s Skipped sample %" PRId64 " (epoch %" PRId64 ", iter %" PRId64 ") "
            "from %s on %s: %s\n", ts, ev->sample, ev->epoch, ev->iter, ev->source, ev->host,
            ev->text);
    fflush(s->text);
    pf_event_json_add(o, ev);
    cJSON_AddNumberToObject(o, "skipped", (double)s->skipped);
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
    int src = check_seq(s, ev);
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
        s->skipped_in_interval += ev->count;
        gan_add(s, ev);
        if (ev->iter % cfg->log_interval != 0 && ev->iter != ev->total_iters) {
            cJSON_Delete(o);
            return 0;
        }
        double loss = s->loss / s->n, t = s->time / s->n, dt = s->data_time / s->n;
        int64_t done = ev->iter - s->first_iter;
        double rate = done > 0 ? (pf_now() - s->started) / (double)done : 0;
        long eta = (long)(rate * (double)(ev->total_iters > ev->iter ? ev->total_iters - ev->iter
                                                                   : 0));
        char skipped[48] = "", gan[PF_GAN_N_TERMS * 32];
        if (s->skipped_in_interval)
            snprintf(skipped, sizeof skipped, ", skipped: %" PRId64, s->skipped_in_interval);
        gan_flush(s, ev->iter, gan, sizeof gan, o);
        fprintf(s->text, "%s Iter [%" PRId64 "/%" PRId64 "] epoch %" PRId64 ", lr: %.3e, "
                "loss: %.4f%s, time: %.3f, data_time: %.3f%s, eta: %ld:%02ld:%02ld\n", ts,
                ev->iter, ev->total_iters, ev->epoch, ev->lr, loss, gan, t, dt, skipped,
                eta / 3600, eta / 60 % 60, eta % 60);
        fflush(s->text);
        tb_scalar(s, "train/loss", ev->iter, loss);
        tb_scalar(s, "train/lr", ev->iter, ev->lr);
        tb_scalar(s, "train/time", ev->iter, t);
        if (t > 0) tb_scalar(s, "train/it_per_s", ev->iter, 1.0 / t);
        tb_scalar(s, "train/data_time", ev->iter, dt);
        cJSON_AddNumberToObject(o, "iter", (double)ev->iter);
        cJSON_AddNumberToObject(o, "epoch", (double)ev->epoch);
        cJSON_AddNumberToObject(o, "lr", ev->lr);
        cJSON_AddNumberToObject(o, "loss", loss);
        cJSON_AddNumberToObject(o, "time", t);
        cJSON_AddNumberToObject(o, "data_time", dt);
        cJSON_AddNumberToObject(o, "n", (double)s->n);
        cJSON_AddNumberToObject(o, "skipped", (double)s->skipped_in_interval);
        s->n = 0;
        s->skipped_in_interval = 0;
        s->loss = s->time = s->data_time = 0;
    } else if (strcmp(ev->kind, "eval") == 0) {
        char note[256];
        pf_eval_event_note(note, sizeof note, ev, pf_config_is_video_set(cfg->eval.type));
        fprintf(s->text, "%s Eval iter %" PRId64 ": PSNR %.4f dB, SSIM %.4f (bicubic %.4f dB, "
                "%.4f)%s; best %.4f dB at iter %" PRId64 "\n", ts, ev->iter, ev->psnr, ev->ssim,
                ev->psnr_bicubic, ev->ssim_bicubic, note, ev->best_psnr, ev->best_iter);
        fflush(s->text);
        tb_scalar(s, "eval/psnr", ev->iter, ev->psnr);
        tb_scalar(s, "eval/ssim", ev->iter, ev->ssim);
        tb_scalar(s, "eval/psnr_bicubic", ev->iter, ev->psnr_bicubic);
        tb_scalar(s, "eval/ssim_bicubic", ev->iter, ev->ssim_bicubic);
        pf_event_json_add(o, ev);
    } else if (strcmp(ev->kind, "loader") == 0) {
        log_loader(s, src, ev, ts, o);
    } else if (strcmp(ev->kind, "skip") == 0) {
        log_skip(s, ev, ts, o);
    } else if (strcmp(ev->kind, "checkpoint") == 0) {
        fprintf(s->text, "%s Saved checkpoint %s\n", ts, ev->path);
        fflush(s->text);
        pf_event_json_add(o, ev);
    } else if (strcmp(ev->kind, "worker") == 0 || strcmp(ev->kind, "peer") == 0) {
        /* metrics.jsonl only: worker events come every 2 s per rank, and train.log already
           has the coordinator's status line for each join and death. */
        pf_event_json_add(o, ev);
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

/* STOP: the summary of skipped samples, in both files. */
static int log_stop(pf_hook *h, const char *reason, char *err, size_t errlen) {
    log_state *s = h->state;
    char ts[32], files[2048] = "";
    stamp(ts, sizeof ts);
    cJSON *o = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "kind", "summary");
    cJSON_AddStringToObject(o, "source", "log");
    cJSON_AddStringToObject(o, "time_stamp", ts);
    cJSON_AddNumberToObject(o, "skipped", (double)s->skipped);
    for (int i = 0; i < s->n_bad; i++) {
        size_t used = strlen(files);
        snprintf(files + used, sizeof files - used, "%s%s (%" PRId64 ")", i ? ", " : "",
                 s->bad_files[i], s->bad_count[i]);
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "path", s->bad_files[i]);
        cJSON_AddNumberToObject(f, "count", (double)s->bad_count[i]);
        cJSON_AddItemToArray(list, f);
    }
    cJSON_AddItemToObject(o, "files", list);
    write_json(s, o);
    if (s->skipped)
        fprintf(s->text, "%s Summary: %" PRId64 " samples skipped (data.on_bad_sample: skip): "
                "%s\n", ts, s->skipped, files);
    else
        fprintf(s->text, "%s Summary: no sample skipped\n", ts);
    fflush(s->text);
    (void)reason;
    (void)err;
    (void)errlen;
    return 0;
}

static void log_destroy(pf_hook *h) {
    log_state *s = h->state;
    if (!s) return;
    if (s->text) fclose(s->text);
    if (s->json) fclose(s->json);
    pf_tb_writer_destroy(&s->tb);
    free(s);
    h->state = NULL;
}

static const pf_hook_ops log_ops = {
    .role = PF_ROLE_LOG,
    .name = "log",
    .kinds = NULL,
    .start = log_start,
    .event = log_event,
    .visual = log_visual,
    .stop = log_stop,
    .destroy = log_destroy,
};

int pf_hook_log_main(int argc, char **argv) {
    return pf_hook_run(&log_ops, argc, argv);
}
