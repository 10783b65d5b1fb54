/*  test_work_dir — what `pixflow train` does with work_dir across runs, and what it says when
    a run is interrupted.

    Re-running into a work_dir: a first run with everything that writes files on (evaluation
    with save_image, visual_config, `pixflow test`), then a fresh second run. Every entry the
    first run left must be in the one archived_<time>/ folder (the same file: same inode), and
    no entry of the work_dir may be one of the first run's, so TensorBoard, eval and picture
    folders hold the second run only. A third run with --resume auto must archive nothing and
    append to the same logs.

    Interrupted runs (SIGINT to the front end, as Ctrl-C): "with a checkpoint" only when the
    newest checkpoint on disk is the stop's iteration; before the first iteration it says that
    none was written and names the newest there is (resumed work_dir) or that there is none.
*/
#include <dirent.h>
#include <sys/stat.h>

#include "pf_test_job.h"

static char root[256], bin[1024], wd[400], gt[400], ev[400];

static const char *cfg_text =
    "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
    "data:\n"
    "  samples_per_gpu: 2\n"
    "  train: {gt_folder: %s, gt_patch_size: 32, repeat: 4}\n"
    "  eval: {gt_folder: %s}\n"
    "  test: {gt_folder: %s}\n"
    "optimizers: {lr: 1.0e-3}\n"
    "work_dir: %s\n"
    "%s";

static void write_cfg(const char *path, const char *work_dir, const char *extra) {
    FILE *f = fopen(path, "w");
    fprintf(f, cfg_text, gt, ev, ev, work_dir, extra);
    fclose(f);
}

typedef struct {
    char name[256];
    ino_t ino;
} entry;

/* Top-level entries of `dir` (without . and .. and archived_*) with their inodes. */
static int list_dir(const char *dir, entry *out, int max, int *n_archives, char *archive,
                    size_t archive_len) {
    DIR *d = opendir(dir);
    int n = 0;
    if (n_archives) *n_archives = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!strncmp(e->d_name, "archived_", 9)) {
            if (n_archives) ++*n_archives;
            if (archive) snprintf(archive, archive_len, "%s/%s", dir, e->d_name);
            continue;
        }
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (n < max && stat(p, &st) == 0) {
            snprintf(out[n].name, sizeof out[n].name, "%s", e->d_name);
            out[n++].ino = st.st_ino;
        }
    }
    if (d) closedir(d);
    return n;
}

static int has_prefix(const entry *es, int n, const char *prefix) {
    int k = 0;
    for (int i = 0; i < n; i++) k += !strncmp(es[i].name, prefix, strlen(prefix));
    return k;
}

/* Run `pixflow ARGS` to the end; its status, output in *out (malloc'd). */
static int run_to_end(char *const args[], char **out, double timeout_s) {
    char *argv[16], path[600];
    int k = 0;
    argv[k++] = bin;
    for (int i = 0; args[i] && k < 15; i++) argv[k++] = args[i];
    argv[k] = NULL;
    snprintf(path, sizeof path, "%s/out.txt", root);
    run r;
    start_cmd(&r, path, argv);
    int st = finish(&r, timeout_s);
    *out = slurp(path);
    return st;
}

/* Start `pixflow train cfg --loaders L [--resume R]`, wait until its output contains
   `ready`, SIGINT the front end (the terminal's Ctrl-C reaches only it), and wait for it.
   Returns its status. */
static int interrupt_when(const char *cfg, const char *loaders, const char *resume,
                          const char *ready, char **out) {
    char path[600];
    snprintf(path, sizeof path, "%s/out_int.txt", root);
    run r;
    start_job(&r, bin, path, cfg, loaders, resume, NULL, NULL);
    double end = pf_now() + 120;
    int seen = 0;
    while (!seen && pf_now() < end) {
        char *t = slurp(path);
        seen = strstr(t, ready) != NULL;
        free(t);
        if (!seen) usleep(50000);
    }
    CHECK(seen, "'%s' never appeared in the output of %s", ready, cfg);
    usleep(300000);
    kill(r.pid, SIGINT);
    int st = finish(&r, 120);
    *out = slurp(path);
    return st;
}

static void test_rerun_archives_everything(void) {
    char c1[450], c2[450], c3[450], p[1200], *out;
    snprintf(c1, sizeof c1, "%s/c1.yaml", root);
    snprintf(c2, sizeof c2, "%s/c2.yaml", root);
    snprintf(c3, sizeof c3, "%s/c3.yaml", root);
    write_cfg(c1, wd, "total_iters: 10\ncheckpoint_config: {interval: 5}\n"
                      "evaluation: {interval: 10, save_image: true}\n"
                      "visual_config: {interval: 5}\nlog_config: {interval: 5}\n");
    write_cfg(c2, wd, "total_iters: 6\ncheckpoint_config: {interval: 3}\n");
    write_cfg(c3, wd, "total_iters: 9\ncheckpoint_config: {interval: 3}\n");

    /* run 1, and `pixflow test` on its last checkpoint */
    char *a1[] = { "train", c1, NULL };
    int st = run_to_end(a1, &out, 180);
    CHECK(st == 0, "run 1: status %d:\n%s", st, out);
    free(out);
    snprintf(p, sizeof p, "%s/checkpoints/iter_10.safetensors", wd);
    char *at[] = { "test", c1, "--checkpoint", p, NULL };
    st = run_to_end(at, &out, 120);
    CHECK(st == 0, "pixflow test: status %d:\n%s", st, out);
    free(out);
    static entry first[256], second[256], archived[256], third[256];
    int n1 = list_dir(wd, first, 256, NULL, NULL, 0);
    static const char *expected[] = { "events.out.tfevents.", "visuals", "eval_visuals", "test",
                                      "checkpoints", "metrics.jsonl", "train.log", "eval.log",
                                      "config.yaml", "samples_rank0.log", "rank0.log",
                                      "coordinator.log" };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        CHECK(has_prefix(first, n1, expected[i]) == 1, "run 1 left %d entries named %s*",
              has_prefix(first, n1, expected[i]), expected[i]);

    /* run 2, fresh: everything of run 1 moves, nothing of it stays */
    char *a2[] = { "train", c2, NULL };
    st = run_to_end(a2, &out, 180);
    CHECK(st == 0, "run 2: status %d:\n%s", st, out);
    CHECK(strstr(out, "held an earlier run") != NULL, "run 2 did not say it archived:\n%s", out);
    free(out);
    int n_arch = 0;
    char arch[700] = "";
    int n2 = list_dir(wd, second, 256, &n_arch, arch, sizeof arch);
    CHECK(n_arch == 1, "%d archive folders after run 2, expected 1", n_arch);
    int na = list_dir(arch, archived, 256, NULL, NULL, 0);
    /* coordinator.addr is not archived: the front end removes the stale address before it
       starts the coordinator */
    CHECK(na == n1 - 1, "the archive holds %d entries, run 1 left %d", na, n1);
    for (int i = 0; i < n1; i++) {
        int found = !strcmp(first[i].name, "coordinator.addr");
        for (int j = 0; j < na; j++)
            found |= !strcmp(first[i].name, archived[j].name) && first[i].ino == archived[j].ino;
        CHECK(found, "run 1's %s is not in %s", first[i].name, arch);
        /* the removed coordinator.addr's inode number is free again: a file of run 2 may
           get it (seen: coordinator.log) */
        for (int j = 0; j < n2 && strcmp(first[i].name, "coordinator.addr") != 0; j++)
            CHECK(second[j].ino != first[i].ino, "run 1's %s is still in the work_dir as %s",
                  first[i].name, second[j].name);
    }
    CHECK(has_prefix(second, n2, "events.out.tfevents.") == 1, "%d TensorBoard files after "
          "run 2, expected 1 (its own)", has_prefix(second, n2, "events.out.tfevents."));
    CHECK(!has_prefix(second, n2, "visuals") && !has_prefix(second, n2, "eval_visuals") &&
              !has_prefix(second, n2, "test"),
          "run 2 (no visuals, no eval, no test) has picture or test folders");
    snprintf(p, sizeof p, "test -e %s/checkpoints/iter_3.safetensors -a -e "
             "%s/checkpoints/iter_6.safetensors -a ! -e %s/checkpoints/iter_10.safetensors -a "
             "-e %s/checkpoints/iter_10.safetensors -a -e %s/test/iter_10/results.tsv",
             wd, wd, wd, arch, arch);
    CHECK(system(p) == 0, "checkpoints / test results not where they belong: %s", p);

    /* run 3, --resume auto: nothing is archived, the logs grow */
    char *a3[] = { "train", c3, "--resume", "auto", NULL };
    int lines2 = count_lines(strcat(strcpy(p, wd), "/train.log"));
    st = run_to_end(a3, &out, 180);
    CHECK(st == 0, "run 3 (--resume auto): status %d:\n%s", st, out);
    CHECK(strstr(out, "held an earlier run") == NULL, "--resume auto archived:\n%s", out);
    free(out);
    int n3 = list_dir(wd, third, 256, &n_arch, NULL, 0);
    CHECK(n_arch == 1, "%d archive folders after --resume auto, expected 1", n_arch);
    for (int j = 0; j < n2; j++) {
        if (strcmp(second[j].name, "train.log") && strcmp(second[j].name, "metrics.jsonl"))
            continue;
        int same = 0;
        for (int k = 0; k < n3; k++) same |= third[k].ino == second[j].ino;
        CHECK(same, "--resume auto replaced %s", second[j].name);
    }
    CHECK(count_lines(p) > lines2, "train.log did not grow on resume (%d lines)", lines2);
    snprintf(p, sizeof p, "%s/checkpoints/iter_9.safetensors", wd);
    CHECK(access(p, F_OK) == 0, "--resume auto did not reach iteration 9");
}

static void test_interrupt_messages(void) {
    char c4[450], c5[450], c6[450], wd2[450], wd3[450], want[2400], *out;
    /* resumed work_dir (iter_9 from above), no loader: stopped before any step */
    snprintf(c4, sizeof c4, "%s/c4.yaml", root);
    write_cfg(c4, wd, "total_iters: 100\ncheckpoint_config: {interval: 50}\n");
    int st = interrupt_when(c4, "0", "auto", "processes:", &out);
    snprintf(want, sizeof want, "pixflow: stopped before its first iteration: nothing was trained, so "
             "no checkpoint was "
             "written at the stop. The newest is %s/checkpoints/iter_9.safetensors (iteration "
             "9): `pixflow train %s --resume auto` continues from there\n", wd, c4);
    CHECK(st == 130 && strstr(out, want) && !strstr(out, "with a checkpoint"),
          "resumed, stopped before a step: status %d, output:\n%s\nexpected:\n%s", st, out,
          want);
    free(out);

    /* fresh work_dir, no loader: nothing to continue from */
    snprintf(wd2, sizeof wd2, "%s/work2", root);
    snprintf(c5, sizeof c5, "%s/c5.yaml", root);
    write_cfg(c5, wd2, "total_iters: 100\n");
    st = interrupt_when(c5, "0", NULL, "processes:", &out);
    snprintf(want, sizeof want, "pixflow: stopped before its first iteration: nothing was trained, so "
             "no checkpoint was "
             "written, and %s/checkpoints has none: a new run starts from the beginning\n", wd2);
    CHECK(st == 130 && strstr(out, want), "fresh, stopped before a step: status %d, output:\n"
          "%s\nexpected:\n%s", st, out, want);
    free(out);

    /* training: the stop writes the checkpoint of the iteration it stopped at */
    snprintf(wd3, sizeof wd3, "%s/work3", root);
    snprintf(c6, sizeof c6, "%s/c6.yaml", root);
    write_cfg(c6, wd3, "total_iters: 1000000\nlog_config: {interval: 20}\n");
    st = interrupt_when(c6, "1", NULL, "[20/1000000]", &out);
    const char *msg = strstr(out, "pixflow: stopped at iteration ");
    long long at = msg ? atoll(msg + strlen("pixflow: stopped at iteration ")) : -1;
    snprintf(want, sizeof want, "pixflow: stopped at iteration %lld with a checkpoint "
             "(%s/checkpoints/iter_%lld.safetensors); continue with `pixflow train %s --resume "
             "auto`\n", at, wd3, at, c6);
    CHECK(st == 130 && at >= 20 && strstr(out, want), "stopped while training: status %d, "
          "output:\n%s\nexpected:\n%s", st, out, want);
    char latest_path[600], latest_want[64];
    snprintf(latest_path, sizeof latest_path, "%s/checkpoints/latest", wd3);
    snprintf(latest_want, sizeof latest_want, "iter_%lld.safetensors\n", at);
    char *latest = slurp(latest_path);
    CHECK(!strcmp(latest, latest_want), "latest is '%s', the message said iteration %lld",
          latest, at);
    free(latest);
    free(out);
}

int main(void) {
    const char *b = getenv("PF_BIN");
    snprintf(bin, sizeof bin, "%s", b ? b : "build/pixflow");
    snprintf(root, sizeof root, "/tmp/pf_wd_%d", (int)getpid());
    snprintf(wd, sizeof wd, "%s/work", root);
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(ev, sizeof ev, "%s/ev", root);
    make_images(gt, 4, 64, 1);
    make_images(ev, 2, 48, 2);
    test_rerun_archives_everything();
    test_interrupt_messages();
    int rc = pf_test_end("test_work_dir");
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    }
    return rc;
}
