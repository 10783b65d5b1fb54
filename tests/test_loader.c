/*  The loader as a user meets it: `pixflow train` and `pixflow loader` on small generated
    images, each role its own process.

    A. data.loader_threads 1 and 3: byte-identical batches (sample ids and pixel digests of
       every batch in samples_rank0.log); metrics.jsonl holds `loader` events (throughput, cache
       hit rate and bytes, queue) and train entries with data_time; train.log names the global
       batch; work_dir holds one TensorBoard event file whose train/loss, train/lr and train/it_per_s (= 1 / time) scalars
       (read by tests/pf_test_tb.h) have the steps and values of metrics.jsonl's train entries.
    B. A training image deleted mid-run with data.cache_mb 0 (every sample re-reads its file):
       on_bad_sample `fail` ends the job with a non-zero status and a message naming the file;
       `skip` finishes, every sample of that file from then on is listed as skipped in the
       batches, and train.log and metrics.jsonl name the file and count the skipped samples.
    C. `pixflow loader` started before the coordinator: it says it cannot reach it, retries
       with back-off, joins once the job is up (`pixflow train --loaders 0`: it is the only
       loader) and serves every batch; with --join-timeout and nobody listening it gives up
       with status 1.
    (Loaders joining a running job and leaving it: tests/test_dataplane.c, H.)
*/
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"
#include "pf_test_tb.h"

#define ITERS_PER_EPOCH 6   /* 8 images x repeat 3 / batch 4 */
#define EPOCH_LEN 24

static char root[256], bin[1024];

static void write_config(const char *path, const char *work_dir, int total_iters,
                         const char *data_extra) {
    FILE *f = fopen(path, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  prefetch: 2\n"
            "%s"
            "  train: {type: PairedImageDataset, gt_folder: %s/train, gt_patch_size: 32,\n"
            "          use_flip: true, use_rot: true, repeat: 3}\n"
            "  eval: {type: PairedImageDataset, gt_folder: %s/val}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: 100000, max_keep_ckpts: 1}\n"
            "log_config: {interval: 5}\n"
            "evaluation: {interval: 100000, metrics: [PSNR], crop_border: 2, convert_to: y,\n"
            "             save_image: false}\n"
            "work_dir: %s\n"
            "seed: 7\n",
            data_extra, root, root, total_iters, work_dir);
    fclose(f);
}

static char *work_file(const char *work_dir, const char *name) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", work_dir, name);
    return slurp(path);
}

/* metrics.jsonl entries of `kind`, as a cJSON array (caller deletes). */
static cJSON *metrics_of(const char *work_dir, const char *kind) {
    char *t = work_file(work_dir, "metrics.jsonl");
    cJSON *out = cJSON_CreateArray();
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cJSON *k = cJSON_GetObjectItem(o, "kind");
        if (cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0)
            cJSON_AddItemToArray(out, o);
        else
            cJSON_Delete(o);
    }
    free(t);
    return out;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Start `pixflow loader --connect addr [extra]` with output in root/tag.out. */
static void start_loader(run *r, const char *addr, const char *tag, const char *extra1,
                         const char *extra2) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    char *argv[] = { bin, "loader", "--connect", (char *)addr, "--name", (char *)tag,
                     (char *)extra1, (char *)extra2, NULL };
    start_cmd(r, out, argv);
}

/* A TCP port nobody listens on right now. */
static int free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

static void run_job(const char *tag, const char *data_extra, int total_iters, run *r,
                    char *wd, size_t wdlen) {
    char cfg[600], out[600];
    snprintf(wd, wdlen, "%s/work_%s", root, tag);
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    write_config(cfg, wd, total_iters, data_extra);
    start_job(r, bin, out, cfg, "1", NULL, NULL, NULL);
}

/* A: 1 vs 3 threads per loader. */
static void test_threads(void) {
    run r;
    char wd1[600], wd3[600];
    run_job("threads1", "  loader_threads: 1\n", 60, &r, wd1, sizeof wd1);
    int st = finish(&r, 120);
    CHECK(st == 0, "threads1: exit %d (see %s)", st, r.out);
    run_job("threads3", "  loader_threads: 3\n", 60, &r, wd3, sizeof wd3);
    st = finish(&r, 120);
    CHECK(st == 0, "threads3: exit %d (see %s)", st, r.out);
    char *a = samples_rank(wd1, 0), *b = samples_rank(wd3, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/samples_rank0.log", wd1);
    CHECK(count_lines(path) == 60, "threads1: %d batches consumed, expected 60",
          count_lines(path));
    CHECK(a[0] && strcmp(a, b) == 0, "loader_threads 1 and 3 delivered different batches");
    free(a);
    free(b);
    check_exactly_once(wd3, 1, 60, ITERS_PER_EPOCH, EPOCH_LEN, "threads3");

    /* The loader's events: at least its last one, with what it did and its cache. */
    cJSON *ev = metrics_of(wd3, "loader");
    int n = cJSON_GetArraySize(ev), final = 0;
    double patches = 0;
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_GetArrayItem(ev, i);
        final += cJSON_IsTrue(cJSON_GetObjectItem(o, "final"));
        patches += num(o, "patches_per_s") * num(o, "interval");
        CHECK(num(o, "hit_rate") >= 0 && num(o, "hit_rate") <= 1 && num(o, "queue_depth") >= 0,
              "loader event fields in range");
        CHECK(cJSON_IsString(cJSON_GetObjectItem(o, "host")), "loader event names its host");
    }
    CHECK(final == 1, "threads3: %d final loader events, expected 1", final);
    cJSON *last = cJSON_GetArrayItem(ev, n - 1);
    /* 8 images decoded once, cached (default cache_mb): nearly every lookup hits. */
    CHECK(last && num(last, "cache_bytes") > 0 && num(last, "hit_rate") > 0.5,
          "last loader event: cache bytes %g, hit rate %g", num(last, "cache_bytes"),
          num(last, "hit_rate"));
    CHECK(patches > 60 * 4 * 0.9 && patches < 60 * 4 * 1.1,
          "loader events account for %.0f patches, served 240", patches);
    cJSON_Delete(ev);
    ev = metrics_of(wd3, "train");
    CHECK(cJSON_GetArraySize(ev) == 12, "%d train entries, expected 12",
          cJSON_GetArraySize(ev));
    for (int i = 0; i < cJSON_GetArraySize(ev); i++) {
        double dt = num(cJSON_GetArrayItem(ev, i), "data_time"),
               t = num(cJSON_GetArrayItem(ev, i), "time");
        CHECK(dt >= 0 && dt <= t, "train entry: data_time %g within time %g", dt, t);
    }
    char tb_path[1024], tb_err[256];
    static tb_event tb[TB_MAX_EVENTS];
    CHECK(tb_find(wd3, tb_path, sizeof tb_path) == 1, "one events.out.tfevents.* in %s", wd3);
    int n_tb = tb_read(tb_path, tb, TB_MAX_EVENTS, tb_err, sizeof tb_err);
    CHECK(n_tb > 0 && strcmp(tb[0].file_version, "brain.Event:2") == 0, "%s: %s", tb_path,
          n_tb < 0 ? tb_err : "no file_version first");
    /* train/it_per_s is 1 / time (written only where time > 0, as in every entry here). */
    const char *tags[3] = {"train/loss", "train/lr", "train/it_per_s"},
               *keys[3] = {"loss", "lr", "time"};
    for (int k = 0; k < 3; k++) {
        int j = 0;
        for (int i = 0; i < n_tb; i++) {
            if (strcmp(tb[i].tag, tags[k]) != 0) continue;
            cJSON *e = cJSON_GetArrayItem(ev, j++);
            CHECK(e && tb[i].step == (int64_t)num(e, "iter"), "%s record %d: step %lld, "
                  "metrics.jsonl iter %g", tags[k], j, (long long)tb[i].step,
                  e ? num(e, "iter") : -1);
            double want = e ? (k == 2 ? 1.0 / num(e, keys[k]) : num(e, keys[k])) : -1;
            CHECK(e && fabs(tb[i].value - want) <= 1e-6 * fabs(want),
                  "%s at %lld: %g, from metrics.jsonl %g", tags[k], (long long)tb[i].step,
                  tb[i].value, want);
        }
        CHECK(j == cJSON_GetArraySize(ev), "%d %s records, %d train entries", j, tags[k],
              cJSON_GetArraySize(ev));
    }
    cJSON_Delete(ev);
    char *log = work_file(wd3, "train.log");
    CHECK(strstr(log, "global batch 4 (1 workers x 4)"), "train.log names the global batch");
    CHECK(strstr(log, "Loader threads3") || strstr(log, "Loader loader"),
          "train.log has a loader line:\n%s", log);
    free(log);
}

/* B: img03.png disappears mid-run; cache_mb 0 makes every sample read its file again. */
static void test_bad_sample(int skip) {
    const char *tag = skip ? "skip" : "fail";
    char wd[600], data[200], victim[600], keep[600];
    snprintf(data, sizeof data, "  cache_mb: 0\n  on_bad_sample: %s\n", tag);
    snprintf(victim, sizeof victim, "%s/train/img03.png", root);
    snprintf(keep, sizeof keep, "%s/img03.keep", root);
    run r;
    int total = skip ? 120 : 100000;
    run_job(tag, data, total, &r, wd, sizeof wd);
    CHECK(wait_lines(wd, 8, 60), "%s: the job did not reach iteration 8", tag);
    CHECK(rename(victim, keep) == 0, "%s: cannot move %s away", tag, victim);
    int st = finish(&r, 120);
    rename(keep, victim);
    char *out = slurp(r.out), *log = work_file(wd, "train.log");
    if (!skip) {
        CHECK(st != 0 && st != -1, "fail: the job exited with %d", st);
        CHECK(strstr(out, "img03.png") && strstr(out, "failed"),
              "fail: the output does not name the file:\n%s", out);
        CHECK(strstr(log, "img03.png"), "fail: train.log does not name the file");
        free(out);
        free(log);
        return;
    }
    CHECK(st == 0, "skip: the job exited with %d (see %s)", st, r.out);
    /* Every skipped sample is one of img03's (index % 8 == 3), and per epoch the consumed and
       skipped samples together are the epoch. */
    char *t = work_file(wd, "samples_rank0.log");
    int skipped = 0, bad = 0, lines = 0, seen[20][EPOCH_LEN] = { { 0 } };
    char *save_line = NULL;
    for (char *line = strtok_r(t, "\n", &save_line); line;
         line = strtok_r(NULL, "\n", &save_line)) {
        unsigned epoch;
        char ids[256];
        lines++;
        if (sscanf(line, "%*d %u %*u %255s", &epoch, ids) != 2 || epoch >= 20) {
            bad++;
            continue;
        }
        for (char *p = strcmp(ids, "-") ? ids : NULL; p; p = strchr(p, ',') ? strchr(p, ',') + 1
                                                                             : NULL)
            seen[epoch][atoi(p) % EPOCH_LEN]++;
        char *sk = strstr(line, "skipped=");
        for (char *p = sk ? sk + 8 : NULL; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
            int idx = atoi(p);
            skipped++;
            bad += idx % 8 != 3;
            seen[epoch][idx % EPOCH_LEN]++;
        }
    }
    free(t);
    int wrong = 0;
    for (int e = 0; e < 20; e++)
        for (int i = 0; i < EPOCH_LEN; i++) wrong += seen[e][i] != 1;
    CHECK(lines == 120 && bad == 0 && wrong == 0,
          "skip: %d batches, %d bad entries, %d (epoch, sample) counts != 1", lines, bad, wrong);
    CHECK(skipped >= 3, "skip: only %d samples skipped", skipped);
    cJSON *ev = metrics_of(wd, "skip");
    CHECK(cJSON_GetArraySize(ev) == skipped, "skip: %d skip entries in metrics.jsonl, %d "
          "samples skipped in the batches", cJSON_GetArraySize(ev), skipped);
    cJSON *first = cJSON_GetArrayItem(ev, 0);
    const cJSON *p = cJSON_GetObjectItem(first, "path");
    CHECK(cJSON_IsString(p) && strstr(p->valuestring, "img03.png"),
          "skip entry names the file");
    cJSON_Delete(ev);
    ev = metrics_of(wd, "summary");
    CHECK(cJSON_GetArraySize(ev) == 1 &&
              num(cJSON_GetArrayItem(ev, 0), "skipped") == skipped,
          "skip: metrics.jsonl summary counts %g skipped, expected %d",
          num(cJSON_GetArrayItem(ev, 0), "skipped"), skipped);
    cJSON_Delete(ev);
    /* cache_mb 0: nothing kept, every lookup decodes. */
    ev = metrics_of(wd, "loader");
    cJSON *last = cJSON_GetArrayItem(ev, cJSON_GetArraySize(ev) - 1);
    CHECK(last && num(last, "cache_bytes") == 0 && num(last, "hit_rate") == 0 &&
              num(last, "skipped") == skipped,
          "skip: last loader event: cache bytes %g, hit rate %g, skipped %g",
          num(last, "cache_bytes"), num(last, "hit_rate"), num(last, "skipped"));
    cJSON_Delete(ev);
    char want[64];
    snprintf(want, sizeof want, "Summary: %d samples skipped", skipped);
    CHECK(strstr(log, "Skipped sample") && strstr(log, "img03.png") && strstr(log, want),
          "skip: train.log lacks the skips or '%s':\n%s", want, log);
    free(out);
    free(log);
}

/* C: a loader that starts first waits for the coordinator. */
static void test_early_loader(void) {
    char addr[64], wd[600], cfg[600], out[600];
    snprintf(addr, sizeof addr, "tcp://127.0.0.1:%d", free_port());
    run lr, jr;
    start_loader(&lr, addr, "early", NULL, NULL);
    /* Until it has said two retries (up to 60 s: no wall-clock bound, which a loaded machine
       breaks); their waits must double (the back-off), whatever the machine's speed. */
    char *said = NULL;
    int lines = 0;
    for (int tries = 0; tries < 600 && lines < 2; tries++) {
        usleep(100000);
        free(said);
        said = slurp(lr.out);
        lines = 0;
        for (char *p = said; (p = strstr(p, "retrying in")); p++) lines++;
    }
    char want[128];
    snprintf(want, sizeof want, "cannot reach coordinator at %s; retrying in", addr);
    CHECK(strstr(said, want), "early loader: no '%s' in\n%s", want, said);
    double w1 = -1, w2 = -1;
    char *r1 = strstr(said, "retrying in "), *r2 = r1 ? strstr(r1 + 1, "retrying in ") : NULL;
    if (r1) sscanf(r1 + 12, "%lf", &w1);
    if (r2) sscanf(r2 + 12, "%lf", &w2);
    CHECK(lines >= 2 && w1 > 0 && fabs(w2 - 2 * w1) < 0.051,
          "early loader: %d retry lines in 60 s, waits %.1f then %.1f s (expected 2 lines, the "
          "second wait double the first)", lines, w1, w2);
    free(said);
    snprintf(wd, sizeof wd, "%s/work_early", root);
    snprintf(cfg, sizeof cfg, "%s/early.yaml", root);
    snprintf(out, sizeof out, "%s/early_job.out", root);
    write_config(cfg, wd, 60, "");
    start_job(&jr, bin, out, cfg, "0", NULL, "--bind", addr);
    int st = finish(&jr, 120);
    CHECK(st == 0, "early: the job exited with %d (see %s)", st, out);
    int lst = finish(&lr, 20);
    CHECK(lst == 0, "early: the loader exited with %d (see %s)", lst, lr.out);
    said = slurp(lr.out);
    CHECK(strstr(said, "joined") && strstr(said, "served 60 batches"),
          "early loader did not join and serve every batch:\n%s", said);
    free(said);
    check_exactly_once(wd, 1, 60, ITERS_PER_EPOCH, EPOCH_LEN, "early");

    /* Nobody there, and a deadline. */
    snprintf(addr, sizeof addr, "tcp://127.0.0.1:%d", free_port());
    double t0 = pf_now();
    start_loader(&lr, addr, "gives_up", "--join-timeout", "0.7");
    st = finish(&lr, 20);
    double took = pf_now() - t0;
    said = slurp(lr.out);
    CHECK(st == 1 && took < 5, "--join-timeout 0.7: exit %d after %.1f s", st, took);
    CHECK(strstr(said, "no answer from the coordinator"), "--join-timeout: message:\n%s", said);
    free(said);
}

int main(void) {
    pf_test_job_begin("loader", bin, sizeof bin, root, sizeof root);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, 8, 48, 1);
    snprintf(dir, sizeof dir, "%s/val", root);
    make_images(dir, 2, 40, 2);
    setenv("OMP_NUM_THREADS", "1", 1);
    double t0 = pf_now();
    test_threads();
    printf("A (threads) done at %.1f s\n", pf_now() - t0);
    test_bad_sample(0);
    test_bad_sample(1);
    printf("B (bad samples) done at %.1f s\n", pf_now() - t0);
    test_early_loader();
    printf("C (early loader) done at %.1f s\n", pf_now() - t0);
    int rc = pf_test_end("test_loader");
    if (rc == 0 && !getenv("PF_TEST_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    } else {
        fprintf(stderr, "outputs kept in %s\n", root);
    }
    return rc;
}
