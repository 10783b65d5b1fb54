/*  `pixflow monitor` against a running job (`pixflow train --loaders 2` on small generated
    images, log_config.interval 1 so metrics.jsonl holds every iteration's loss):

    A. Late join, nothing lost or doubled: a `--json --history 4096` monitor started once the
       job has run 20+ iterations prints the replay (the train events so far) and then the live
       events until the job's `done`; together its train events are iterations 1..TOTAL exactly
       once, each with the loss the log hook wrote to metrics.jsonl, and it reports no gap; its
       last line is the coordinator's `done` event and it exits 0.
    B. `--once` mid-run lists both loaders alive (names from the front end's processes line,
       with their pids), the worker with its device and memory, the hooks, and a progress line;
       after `kill -9` of one loader it shows that loader dead and the other alive while the
       job goes on and finishes with status 0. A second live loader named like a live one is
       refused; the killed one restarted under its name is taken, and the streaming monitor
       shows its events although their sequence numbers start at 1 again.
    C. No coordinator: `--once --join-timeout 1` at a dead address exits 1 within ~3 s, saying
       it cannot reach it. Bad usage exits 2.
*/
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define TOTAL 900

static char root[256], bin[1024];

/* Lines of metrics.jsonl with kind train: loss by iteration. */
static int metrics_losses(const char *work_dir, double *loss) {
    double lr[TOTAL + 1];
    return train_curve(work_dir, loss, lr, TOTAL);
}

static int count_train(const char *work_dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", work_dir);
    char *t = slurp(path);
    int n = 0;
    for (char *p = t; (p = strstr(p, "\"kind\":\"train\"")); p++) n++;
    free(t);
    return n;
}

/* `pixflow monitor --connect addr --once` output into out; its exit status. */
static int monitor_once(const char *addr, const char *out) {
    char *argv[] = { bin, "monitor", "--connect", (char *)addr, "--once", NULL };
    run r;
    start_cmd(&r, out, argv);
    return finish(&r, 20);
}

/* The line of the --once view that starts with two spaces and `name`, or NULL. */
static const char *row_of(const char *view, const char *name) {
    char key[80];
    snprintf(key, sizeof key, "\n  %s ", name);
    const char *p = strstr(view, key);
    return p ? p + 1 : NULL;
}

static int row_has(const char *view, const char *name, const char *word) {
    const char *r = row_of(view, name);
    if (!r) return 0;
    size_t len = strcspn(r, "\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), r);
    return strstr(line, word) != NULL;
}

/* The largest seq of the events from `source` among the JSON lines of path so far (0: none). */
static double max_seq_of(const char *path, const char *source) {
    char *t = slurp(path);
    double best = 0;
    for (char *line = t ? strtok(t, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *s = cJSON_GetObjectItem(o, "source");
        if (cJSON_IsString(s) && !strcmp(s->valuestring, source) &&
            !cJSON_GetObjectItem(o, "replay")) {
            double sq = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "seq"));
            if (sq > best) best = sq;
        }
        cJSON_Delete(o);
    }
    free(t);
    return best;
}

int main(void) {
    pf_test_job_begin("monitor", bin, sizeof bin, root, sizeof root);
    char data[300], cfg[300], wd[300], out[300];
    snprintf(data, sizeof data, "%s/train", root);
    make_images(data, 8, 96, 11);
    snprintf(cfg, sizeof cfg, "%s/cfg.yaml", root);
    snprintf(wd, sizeof wd, "%s/wd", root);
    FILE *f = fopen(cfg, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 32, n_blocks: 4, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  prefetch: 2\n"
            "  train: {type: PairedImageDataset, gt_folder: %s, gt_patch_size: 64,\n"
            "          use_flip: true, use_rot: true, repeat: 3}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: 300, max_keep_ckpts: 1}\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: 5\n",
            data, TOTAL, wd);
    fclose(f);

    /* C first (no job): a dead address, and bad usage. */
    {
        char *argv[] = { bin, "monitor", "--connect", "tcp://127.0.0.1:9", "--once",
                         "--join-timeout", "1", NULL };
        run r;
        snprintf(out, sizeof out, "%s/dead.out", root);
        double t0 = pf_now();
        start_cmd(&r, out, argv);
        int st = finish(&r, 20);
        char *t = slurp(out);
        CHECK(st == 1, "C: monitor at a dead address: status %d (want 1): %s", st, t);
        CHECK(pf_now() - t0 < 5.0, "C: took %.1f s to give up", pf_now() - t0);
        CHECK(strstr(t, "127.0.0.1:9") != NULL, "C: message does not name the address: %s", t);
        free(t);
        char *argv2[] = { bin, "monitor", "--once", NULL };
        start_cmd(&r, out, argv2);
        st = finish(&r, 10);
        CHECK(st == 2, "C: monitor without --connect: status %d (want 2)", st);
    }

    run job;
    snprintf(out, sizeof out, "%s/train.out", root);
    start_job(&job, bin, out, cfg, "2", NULL, NULL, NULL);
    double t_job = pf_now();
    char addr_path[400];
    snprintf(addr_path, sizeof addr_path, "%s/coordinator.addr", wd);
    double until = pf_now() + 120;
    while (count_train(wd) < 20 && pf_now() < until && waitpid(job.pid, NULL, WNOHANG) == 0)
        usleep(50000);
    char *addr = slurp(addr_path);
    addr[strcspn(addr, "\n")] = 0;
    CHECK(count_train(wd) >= 20 && addr[0], "job did not get going (see %s)", out);
    if (pf_test_fail_) return pf_test_job_end("test_monitor", root);

    /* A: the streaming monitor, joined late. */
    char json_out[300];
    snprintf(json_out, sizeof json_out, "%s/monitor.jsonl", root);
    run mon;
    {
        char *argv[] = { bin, "monitor", "--connect", addr, "--json", "--history", "4096",
                         NULL };
        start_cmd(&mon, json_out, argv);
    }

    /* B: a snapshot view with both loaders. */
    pid_t l1 = pid_of(out, "loader1"), l2 = pid_of(out, "loader2");
    CHECK(l1 > 0 && l2 > 0, "no loader pids in the processes line");
    usleep(2500 * 1000);    /* the loaders' first throughput events (every 2 s) */
    char view1[300];
    snprintf(view1, sizeof view1, "%s/once1.txt", root);
    int st = monitor_once(addr, view1);
    char *v = slurp(view1);
    char pid1[32], pid2[32];
    snprintf(pid1, sizeof pid1, " %d ", (int)l1);
    snprintf(pid2, sizeof pid2, " %d ", (int)l2);
    CHECK(st == 0, "B: --once status %d: %s", st, v);
    CHECK(strstr(v, "loaders  2 (2 alive)") != NULL, "B: not two live loaders:\n%s", v);
    CHECK(row_has(v, "loader1", "alive") && row_has(v, "loader1", pid1),
          "B: loader1 (pid %d) not shown alive:\n%s", (int)l1, v);
    CHECK(row_has(v, "loader2", "alive") && row_has(v, "loader2", pid2),
          "B: loader2 (pid %d) not shown alive:\n%s", (int)l2, v);
    CHECK(strstr(v, "device cpu") && strstr(v, "mem ") && strstr(v, "MiB"),
          "B: no worker device/memory:\n%s", v);
    CHECK(strstr(v, "checkpoint hook") && strstr(v, "log hook"), "B: hooks missing:\n%s", v);
    CHECK(strstr(v, "progress [") && strstr(v, "it/s"), "B: no progress or speed:\n%s", v);
    free(v);

    /* Kill loader2 once it has published a few events (a loader event every 2 s; at least 8 s
       into the job and its seq 3 seen by the --json monitor, however slow the machine), so its
       restart below numbers from below where it got; the coordinator declares it dead after
       the 3 s heartbeat timeout. */
    while ((pf_now() - t_job < 8.0 || max_seq_of(json_out, "loader2") < 3) &&
           pf_now() - t_job < 120.0)
        usleep(100 * 1000);
    if (l2 > 0) kill(l2, SIGKILL);
    until = pf_now() + 20;
    int dead = 0;
    char view2[300];
    snprintf(view2, sizeof view2, "%s/once2.txt", root);
    while (!dead && pf_now() < until) {
        usleep(500 * 1000);
        if (monitor_once(addr, view2) != 0) break;
        v = slurp(view2);
        dead = row_has(v, "loader2", "dead");
        free(v);
    }
    v = slurp(view2);
    CHECK(dead, "B: killed loader2 never shown dead:\n%s", v);
    CHECK(row_has(v, "loader1", "alive") && strstr(v, "loaders  2 (1 alive)"),
          "B: loader1 not alive after loader2 died:\n%s", v);
    free(v);

    /* A second live loader named loader1 is refused (its events would mix with loader1's);
       loader2 restarted under its old name is welcome, and the monitor takes its events
       although their numbering starts again at 1. */
    {
        char *argv[] = { bin, "loader", "--connect", addr, "--name", "loader1", NULL };
        char dup_out[300];
        snprintf(dup_out, sizeof dup_out, "%s/dup.out", root);
        run r;
        start_cmd(&r, dup_out, argv);
        int dst = finish(&r, 20);
        char *t = slurp(dup_out);
        CHECK(dst != 0 && strstr(t, "already named 'loader1'"),
              "B: a second live loader1 was not refused (status %d): %s", dst, t);
        free(t);
    }
    run again;
    {
        char *argv[] = { bin, "loader", "--connect", addr, "--name", "loader2", NULL };
        char again_out[300];
        snprintf(again_out, sizeof again_out, "%s/again.out", root);
        start_cmd(&again, again_out, argv);
    }

    st = finish(&job, 600);
    finish(&again, 20);
    CHECK(st == 0, "job status %d after a loader was killed (see %s)", st, out);
    int mst = finish(&mon, 20);
    CHECK(mst == 0, "A: --json monitor status %d (want 0 at the job's end)", mst);

    /* A: train events of the stream = every iteration once, with metrics.jsonl's losses. */
    static double want[TOTAL + 1];
    for (int i = 0; i <= TOTAL; i++) want[i] = NAN;
    CHECK(metrics_losses(wd, want) == TOTAL, "metrics.jsonl does not hold %d train lines",
          TOTAL);
    static int seen[TOTAL + 1];
    char *t = slurp(json_out);
    int replayed = 0, live = 0, gaps = 0, bad_loss = 0, lines = 0;
    int rejoined = 0, after_rejoin = 0;   /* loader2's live join, then its loader events */
    double old_max = 0, first_after = 0;  /* loader2's highest seq before, first seq after */
    char last_kind[64] = "", last_source[64] = "";
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        lines++;
        CHECK(o != NULL, "A: not JSON: %s", line);
        if (!o) continue;
        const cJSON *k = cJSON_GetObjectItem(o, "kind"), *s = cJSON_GetObjectItem(o, "source");
        if (cJSON_IsString(k)) snprintf(last_kind, sizeof last_kind, "%s", k->valuestring);
        snprintf(last_source, sizeof last_source, "%s",
                 cJSON_IsString(s) ? s->valuestring : "");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, "gap")) gaps++;
        const cJSON *nm = cJSON_GetObjectItem(o, "name"), *stt = cJSON_GetObjectItem(o, "state");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, "peer") && cJSON_IsString(nm) &&
            !strcmp(nm->valuestring, "loader2") && cJSON_IsString(stt) &&
            !strcmp(stt->valuestring, "joined") && !cJSON_GetObjectItem(o, "replay"))
            rejoined++;
        int from_l2 = cJSON_IsString(s) && !strcmp(s->valuestring, "loader2");
        double sq = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "seq"));
        if (!rejoined && from_l2 && sq > old_max) old_max = sq;
        if (rejoined && from_l2 && !first_after) first_after = sq;
        if (rejoined && from_l2 && cJSON_IsString(k) && !strcmp(k->valuestring, "loader"))
            after_rejoin++;
        if (cJSON_IsString(k) && !strcmp(k->valuestring, "train")) {
            int it = (int)cJSON_GetObjectItem(o, "iter")->valuedouble;
            double loss = cJSON_GetObjectItem(o, "loss")->valuedouble;
            if (it >= 1 && it <= TOTAL) {
                seen[it]++;
                if (!(fabs(loss - want[it]) <= 1e-9 * fabs(want[it]))) bad_loss++;
            }
            if (cJSON_IsTrue(cJSON_GetObjectItem(o, "replay"))) replayed++;
            else live++;
        }
        cJSON_Delete(o);
    }
    free(t);
    int missing = 0, twice = 0;
    for (int i = 1; i <= TOTAL; i++) {
        missing += seen[i] == 0;
        twice += seen[i] > 1;
    }
    printf("monitor stream: %d lines, %d train events replayed, %d live\n", lines, replayed,
           live);
    CHECK(replayed >= 20, "A: only %d train events replayed (joined after 20+)", replayed);
    CHECK(live > 0, "A: no live train events");
    CHECK(missing == 0 && twice == 0, "A: iterations missing %d, seen twice %d", missing, twice);
    CHECK(bad_loss == 0, "A: %d losses differ from metrics.jsonl", bad_loss);
    CHECK(gaps == 0, "A: %d gaps reported in a healthy local run", gaps);
    CHECK(rejoined == 1 && after_rejoin >= 1,
          "B: restarted loader2: %d live joins, %d loader events after it (its numbering "
          "restarts at 1)", rejoined, after_rejoin);
    /* Meaningful only when the first loader2 had got further than the new one starts. */
    CHECK(old_max >= 3 && first_after >= 1 && first_after <= 2,
          "B: loader2 reached seq %g before the kill; the first event shown from its "
          "restart has seq %g (want 1 or 2: not dropped as a duplicate)", old_max,
          first_after);
    CHECK(!strcmp(last_kind, "done") && !strcmp(last_source, "coordinator"),
          "A: last line is %s from %s, not the coordinator's done", last_kind, last_source);
    free(addr);
    return pf_test_job_end("test_monitor", root);
}
