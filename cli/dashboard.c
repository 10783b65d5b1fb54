/*  dashboard — the page's C side: embedded files, content types, the snapshot as HTML
    (cli/dashboard.h). The HTML is written with open_memstream; every job string goes through
    html() (& < > " ' escaped). */
#include "cli/dashboard.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const pf_web_asset pf_web_assets[];     /* generated: <build>/gen/cli/web_assets.c */
extern const int pf_web_n_assets;

const pf_web_asset *pf_web_asset_find(const char *name) {
    for (int i = 0; i < pf_web_n_assets; i++)
        if (!strcmp(pf_web_assets[i].name, name)) return &pf_web_assets[i];
    return NULL;
}

const char *pf_web_content_type(const char *name) {
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".png", "image/png"},
        {".jpg", "image/jpeg"},                {".jpeg", "image/jpeg"},
        {".json", "application/json"},         {".jsonl", "application/x-ndjson"},
        {".txt", "text/plain; charset=utf-8"}, {".log", "text/plain; charset=utf-8"},
        {".tsv", "text/tab-separated-values; charset=utf-8"},
        {".svg", "image/svg+xml"},
    };
    const char *dot = strrchr(name, '.');
    if (!dot || strchr(dot, '/')) return NULL;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcasecmp(dot, types[i].ext)) return types[i].type;
    return NULL;
}

/* s, escaped for HTML text and attribute values */
static void html(FILE *o, const char *s) {
    for (; s && *s; s++) switch (*s) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs("&quot;", o); break;
        case '\'': fputs("&#39;", o); break;
        default: fputc(*s, o);
        }
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* the number at key, or NAN when absent, null or not a number */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* a number for a table cell: "-" when unknown */
static void cell(FILE *o, const char *fmt, double v) {
    if (isfinite(v)) fprintf(o, fmt, v);
    else fputs("-", o);
}

static void duration(FILE *o, double s) {
    if (!isfinite(s) || s < 0) {
        fputs("-", o);
        return;
    }
    long t = lround(s);
    if (t >= 3600) fprintf(o, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) fprintf(o, "%ldm%02lds", t / 60, t % 60);
    else fprintf(o, "%lds", t);
}

/* loaders (kind 0), workers (1), hooks (2) */
static void rows(FILE *o, const cJSON *state, const char *key, int kind) {
    static const char *titles[] = {"Loaders", "Workers", "Hooks"};
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(state, key);
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    fprintf(o, "<h2>%s <small>(%d)</small></h2>\n<table id=\"pf-%s\"><tr><th>name</th>"
               "<th>host</th><th>pid</th><th>state</th>", titles[kind], n, key);
    if (kind == 0)
        fputs("<th>patches/s</th><th>MB/s</th><th>cache hit</th><th>queue</th>", o);
    if (kind == 1) fputs("<th>device</th><th>memory MB</th><th>iter</th>", o);
    fputs("</tr>\n", o);
    const cJSON *r;
    cJSON_ArrayForEach(r, a) {
        int alive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "alive"));
        fputs("<tr data-name=\"", o);
        html(o, str(r, "name"));
        fprintf(o, "\" data-alive=\"%s\" class=\"%s\"><td>", alive ? "true" : "false",
                alive ? "alive" : "gone");
        html(o, str(r, "name"));
        fputs("</td><td>", o);
        html(o, str(r, "host"));
        fputs("</td><td>", o);
        cell(o, "%.0f", num(r, "pid"));
        fputs("</td><td class=\"state\">", o);
        html(o, str(r, "state"));
        fputs("</td>", o);
        if (kind == 0) {
            fputs("<td>", o);
            cell(o, "%.1f", num(r, "patches_per_s"));
            fputs("</td><td>", o);
            cell(o, "%.1f", num(r, "bytes_per_s") / 1e6);
            fputs("</td><td>", o);
            cell(o, "%.0f%%", 100 * num(r, "hit_rate"));
            fputs("</td><td>", o);
            cell(o, "%.0f", num(r, "queue_depth"));
            fputs("</td>", o);
        }
        if (kind == 1) {
            fputs("<td>", o);
            html(o, str(r, "device"));
            fputs("</td><td>", o);
            cell(o, "%.0f", num(r, "mem_bytes") / 1e6);
            fputs("</td><td>", o);
            cell(o, "%.0f", num(r, "iter"));
            fputs("</td>", o);
        }
        fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
}

static void evals(FILE *o, const cJSON *state) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(state, "eval");
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(ev, "history");
    int n = cJSON_IsArray(hist) ? cJSON_GetArraySize(hist) : 0;
    fprintf(o, "<h2>Evaluations <small>(%d)</small></h2>\n", n);
    double best = num(ev, "best_psnr");
    if (isfinite(best))
        fprintf(o, "<p id=\"pf-best\">best PSNR %.3f dB at iteration %.0f</p>\n", best,
                num(ev, "best_iter"));
    fputs("<table id=\"pf-eval\"><tr><th>iter</th><th>PSNR dB</th><th>bicubic</th><th>gain</th>"
          "<th>SSIM</th><th>bicubic</th></tr>\n", o);
    const cJSON *e;
    cJSON_ArrayForEach(e, hist) {
        double p = num(e, "psnr"), pb = num(e, "psnr_bicubic");
        fputs("<tr data-iter=\"", o);
        cell(o, "%.0f", num(e, "iter"));
        fputs("\"><td>", o);
        cell(o, "%.0f", num(e, "iter"));
        fputs("</td><td>", o);
        cell(o, "%.3f", p);
        fputs("</td><td>", o);
        cell(o, "%.3f", pb);
        fputs("</td><td>", o);
        cell(o, "%+.3f", p - pb);
        fputs("</td><td>", o);
        cell(o, "%.4f", num(e, "ssim"));
        fputs("</td><td>", o);
        cell(o, "%.4f", num(e, "ssim_bicubic"));
        fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
}

char *pf_dashboard_snapshot_html(const char *state_json) {
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o) return NULL;
    cJSON *s = cJSON_Parse(state_json ? state_json : "");
    if (!cJSON_IsObject(s)) {
        fputs("<p class=\"error\" id=\"pf-nostate\">no state from the job yet</p>\n", o);
    } else {
        const cJSON *job = cJSON_GetObjectItemCaseSensitive(s, "job");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "progress");
        fputs("<p id=\"pf-job\"><b>", o);
        html(o, str(job, "model"));
        fputs("</b> · phase <span id=\"pf-phase\">", o);
        html(o, str(job, "phase"));
        fputs("</span> · work_dir <code>", o);
        html(o, str(job, "work_dir"));
        fputs("</code> · coordinator <code>", o);
        html(o, str(job, "coordinator"));
        fputs("</code></p>\n", o);
        double it = num(p, "iter"), total = num(p, "total_iters"), frac = num(p, "fraction");
        fprintf(o, "<div id=\"pf-progress\"><progress max=\"1\" value=\"%.4f\"></progress> "
                   "iteration <span id=\"pf-iter\">", isfinite(frac) ? frac : 0);
        cell(o, "%.0f", it);
        fputs("</span> / <span id=\"pf-total\">", o);
        cell(o, "%.0f", total);
        fputs("</span> · ETA <span id=\"pf-eta\">", o);
        duration(o, num(p, "eta_s"));
        fputs("</span> · ", o);
        cell(o, "%.2f", num(p, "it_per_s"));
        fputs(" it/s · data wait ", o);
        cell(o, "%.4f", num(p, "data_wait_s"));
        fputs(" s · loss <span id=\"pf-loss\">", o);
        cell(o, "%.6g", num(p, "loss"));
        fputs("</span> · lr ", o);
        cell(o, "%.3g", num(p, "learning_rate"));
        fputs("</div>\n", o);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "done"))) {
            const char *why = str(job, "done_text");
            fputs("<p id=\"pf-done\">job ended", o);
            if (why && why[0]) {
                fputs(": ", o);
                html(o, why);
            }
            fputs("</p>\n", o);
        }
        rows(o, s, "loaders", 0);
        rows(o, s, "workers", 1);
        rows(o, s, "hooks", 2);
        evals(o, s);
        fputs("<h2>Checkpoint</h2>\n<p id=\"pf-checkpoint\">", o);
        const char *ck = str(s, "checkpoint");
        if (ck) html(o, ck);
        else fputs("none yet", o);
        fputs("</p>\n", o);
        const cJSON *notes = cJSON_GetObjectItemCaseSensitive(s, "notes"), *nt;
        if (cJSON_GetArraySize(notes) > 0) {
            fputs("<h2>Notes</h2>\n<ul id=\"pf-notes\">", o);
            cJSON_ArrayForEach(nt, notes) {
                fputs("<li>", o);
                html(o, cJSON_IsString(nt) ? nt->valuestring : "");
                fputs("</li>", o);
            }
            fputs("</ul>\n", o);
        }
    }
    cJSON_Delete(s);
    if (fclose(o) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *pf_dashboard_page(const char *state_json, const char *token,
                        unsigned long long last_event_id) {
    const pf_web_asset *a = pf_web_asset_find("index.html");
    if (!a) return NULL;
    char *snap = pf_dashboard_snapshot_html(state_json);
    if (!snap) return NULL;
    cJSON *s = cJSON_Parse(state_json ? state_json : "");
    const char *model = str(cJSON_GetObjectItemCaseSensitive(s, "job"), "model");
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (o) {
        const char *p = (const char *)a->data, *end = p + a->len;
        while (p < end) {
            const char *open = memmem(p, (size_t)(end - p), "{{", 2);
            if (!open) {
                fwrite(p, 1, (size_t)(end - p), o);
                break;
            }
            fwrite(p, 1, (size_t)(open - p), o);
            const char *close = memmem(open, (size_t)(end - open), "}}", 2);
            if (!close) {
                fwrite(open, 1, (size_t)(end - open), o);
                break;
            }
            size_t n = (size_t)(close - open - 2);
            if (n == 8 && !memcmp(open + 2, "SNAPSHOT", 8)) fputs(snap, o);
            else if (n == 5 && !memcmp(open + 2, "MODEL", 5)) html(o, model ? model : "job");
            else if (n == 1 && !memcmp(open + 2, "Q", 1) && token) {
                fputs("?token=", o);
                html(o, token);             /* 32 hex digits */
            } else if (n == 5 && !memcmp(open + 2, "TOKEN", 5)) html(o, token ? token : "");
            else if (n == 13 && !memcmp(open + 2, "LAST_EVENT_ID", 13))
                fprintf(o, "%llu", last_event_id);
            p = close + 2;
        }
        if (fclose(o) != 0) {
            free(buf);
            buf = NULL;
        }
    }
    cJSON_Delete(s);
    free(snap);
    return buf;
}
