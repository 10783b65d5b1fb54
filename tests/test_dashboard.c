/*  dashboard: the page's C side (cli/dashboard.h), no server:
    A. The snapshot HTML of a hand-written state: the numbers where the page shows them
       (iteration, ETA as 1h01m from 3665 s, the eval gain PSNR - bicubic computed here),
       a loader's liveness in data-alive and its row class, every job string escaped (a model
       name and a note carrying markup come out as text), the checkpoint path.
    B. Malformed or empty state: a fragment that says there is none, never a crash.
    C. The page: no placeholder left, the snapshot inside, ?token= on every URL it loads
       when a token is given and on none otherwise.
    D. The embedded files: every one equals its file under web/ byte for byte (read from the
       source tree), has a content type, and every /static/ URL index.html names is among
       them; unknown names and extensions are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/dashboard.h"
#include "pf_test.h"

static const char *STATE =
    "{\"job\":{\"coordinator\":\"tcp://127.0.0.1:5555\",\"model\":\"EDSR<script>x</script>\","
    "\"work_dir\":\"/runs/a&b\",\"phase\":\"train\",\"started\":true,\"done\":false,"
    "\"uptime_s\":12,\"world_size\":1,\"batch\":16},"
    "\"progress\":{\"iter\":1234,\"total_iters\":300000,\"epoch\":3,\"fraction\":0.004113,"
    "\"eta_s\":3665,\"it_per_s\":9.5,\"samples_per_s\":152,\"data_wait_s\":0.0012,"
    "\"loss\":0.0421,\"learning_rate\":0.0002},"
    "\"loaders\":[{\"name\":\"loader-0\",\"host\":\"h1\",\"pid\":100,\"state\":\"alive\","
    "\"alive\":true,\"patches_per_s\":500.5,\"bytes_per_s\":2e6,\"hit_rate\":0.25,"
    "\"cache_bytes\":0,\"queue_depth\":4},"
    "{\"name\":\"loader-1\",\"host\":\"h2\",\"pid\":101,\"state\":\"dead\",\"alive\":false}],"
    "\"workers\":[{\"name\":\"worker-0\",\"rank\":0,\"host\":\"h1\",\"pid\":102,"
    "\"state\":\"alive\",\"alive\":true,\"device\":\"cpu\",\"mem_bytes\":5e8,\"iter\":1234}],"
    "\"hooks\":[],"
    "\"eval\":{\"best_psnr\":30.5,\"best_iter\":1000,\"history\":[{\"iter\":1000,"
    "\"psnr\":30.5,\"ssim\":0.9,\"psnr_bicubic\":29.25,\"ssim_bicubic\":0.85}]},"
    "\"checkpoint\":\"/runs/a&b/iter_1000.safetensors\",\"skipped\":0,"
    "\"events\":{\"count\":5,\"duplicates\":0,\"gaps\":0,\"missing\":0},"
    "\"notes\":[\"<b>bold</b> note\"]}";

static void snapshot(void) {
    char *h = pf_dashboard_snapshot_html(STATE);
    CHECK(h != NULL, "snapshot rendered");
    if (!h) return;
    CHECK(strstr(h, "<span id=\"pf-iter\">1234</span>"), "iteration shown");
    CHECK(strstr(h, "<span id=\"pf-total\">300000</span>"), "total shown");
    CHECK(strstr(h, "<span id=\"pf-eta\">1h01m</span>"), "ETA 3665 s as 1h01m");
    char gain[32];
    snprintf(gain, sizeof gain, "<td>%+.3f</td>", 30.5 - 29.25);
    CHECK(strstr(h, gain), "eval gain over bicubic %s", gain);
    CHECK(strstr(h, "data-name=\"loader-0\" data-alive=\"true\" class=\"alive\""),
          "live loader row");
    CHECK(strstr(h, "data-name=\"loader-1\" data-alive=\"false\" class=\"gone\""),
          "dead loader row");
    CHECK(strstr(h, "<td>25%</td>"), "cache hit rate 0.25 as 25%%");
    CHECK(!strstr(h, "<script>") && strstr(h, "EDSR&lt;script&gt;x&lt;/script&gt;"),
          "model name escaped");
    CHECK(!strstr(h, "<b>bold") && strstr(h, "&lt;b&gt;bold&lt;/b&gt; note"), "note escaped");
    CHECK(strstr(h, "/runs/a&amp;b/iter_1000.safetensors"), "checkpoint path escaped");
    free(h);
}

static void malformed(void) {
    const char *bad[] = {"", "{", "[1,2]", "null", "{\"job\": 5, \"progress\": \"x\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *h = pf_dashboard_snapshot_html(bad[i]);
        CHECK(h != NULL, "state '%s' rendered", bad[i]);
        if (i < 4) CHECK(h && strstr(h, "pf-nostate"), "state '%s': says there is none", bad[i]);
        free(h);
    }
    char *h = pf_dashboard_snapshot_html(NULL);
    CHECK(h && strstr(h, "pf-nostate"), "NULL state");
    free(h);
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void page(void) {
    const char *token = "0123456789abcdef0123456789abcdef";
    char *with = pf_dashboard_page(STATE, token, 4242);
    char *without = pf_dashboard_page(STATE, NULL, 0);
    CHECK(with && without, "page rendered");
    if (!with || !without) return;
    CHECK(!strstr(with, "{{") && !strstr(without, "{{"), "no placeholder left");
    CHECK(strstr(with, "<span id=\"pf-iter\">1234</span>"), "snapshot inside the page");
    CHECK(strstr(with, "\"last_event_id\": 4242}"), "the last event id for the stream's start");
    CHECK(strstr(with, "<title>PixFlow · EDSR&lt;script&gt;"), "title from the model, escaped");
    int urls = count(without, "\"/static/");
    CHECK(urls >= 4, "%d /static/ URLs", urls);
    CHECK(count(with, "?token=0123456789abcdef0123456789abcdef\"") == urls,
          "every /static/ URL carries the token (%d)", urls);
    CHECK(!strstr(without, "?token="), "no token: none in the URLs");
    free(with);
    free(without);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    *len = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return b;
}

static void assets(void) {
    const char *src = getenv("PF_SOURCE_DIR");
    const char *names[] = {"index.html", "app.js", "app.css", "vendor/uPlot.iife.min.js",
                           "vendor/uPlot.min.css", "vendor/uPlot.LICENSE.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const pf_web_asset *a = pf_web_asset_find(names[i]);
        CHECK(a != NULL, "%s embedded", names[i]);
        if (!a) continue;
        CHECK(pf_web_content_type(names[i]) != NULL, "%s has a content type", names[i]);
        if (!src) continue;
        char path[4096];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/web/%s", src, names[i]);
        unsigned char *b = slurp(path, &len);
        CHECK(b && len == a->len && !memcmp(b, a->data, len), "%s: %zu bytes as in web/",
              names[i], a->len);
        free(b);
    }
    if (!src) printf("# PF_SOURCE_DIR unset: embedded bytes not compared with web/\n");
    /* every /static/ URL of the page names an embedded file */
    const pf_web_asset *index = pf_web_asset_find("index.html");
    char *text = index ? strndup((const char *)index->data, index->len) : NULL;
    int named = 0;
    for (char *p = text; p && (p = strstr(p, "\"/static/")); p++) {
        char name[256];
        if (sscanf(p + 9, "%255[^{\"?]", name) != 1) continue;
        named++;
        CHECK(pf_web_asset_find(name) != NULL, "index.html's /static/%s is embedded", name);
    }
    CHECK(named >= 4, "index.html names %d files", named);
    free(text);
    CHECK(!pf_web_asset_find("../CMakeLists.txt") && !pf_web_asset_find(""), "unknown names");
    CHECK(!pf_web_content_type("x.exe") && !pf_web_content_type("noext") &&
              !pf_web_content_type("a.js/b"),
          "unknown extensions have no type");
    CHECK(!strcmp(pf_web_content_type("a/B.PNG"), "image/png"), "extension case");
}

int main(void) {
    snapshot();
    malformed();
    page();
    assets();
    return pf_test_end("test_dashboard");
}
