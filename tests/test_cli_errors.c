/*  `pixflow train` with bad input: every case must end with a clear message that names the
    file, key or image, a non-zero status, and — for what can be checked up front — before any
    process starts (no coordinator.addr, no config.yaml written).

    Up front: unknown key, wrong type, missing folder, GT that is not scale x LQ, an image
    smaller than the patch, a file that is not a PNG.
    During the run: a PNG whose header is fine but whose pixel data is truncated fails in the
    loader, and the job ends with that file's name on the terminal.
    A checkpoint of the wrong architecture (load_from, resume_from, `pixflow test`) or a
    PyTorch .pth: one exact message naming the file, the shapes and what the checkpoint says it
    is, before any process starts.
    `test_cli_errors disk_full` (ctest test_cli_errors.disk_full) is the full-disk case. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dnnl_version.h>
#if defined(PIXFLOW_HAVE_GPU_WORKER)
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>
#endif

#include "common/image.h"
#include "common/rng.h"
#include "common/util.h"
#include "pf_test.h"

extern char **environ;
static char root[256], bin[1024];

/* Run `pixflow ARGS`, capture output; returns the exit status (-1 on timeout). */
static int run(char *const args[], char **out, double timeout_s) {
    char path[400];
    snprintf(path, sizeof path, "%s/out.txt", root);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *argv[16];
    int k = 0;
    argv[k++] = bin;
    for (int i = 0; args[i] && k < 15; i++) argv[k++] = args[i];
    argv[k] = NULL;
    pid_t pid;
    if (posix_spawn(&pid, bin, &fa, NULL, argv, environ) != 0) return -2;
    posix_spawn_file_actions_destroy(&fa);
    double end = pf_now() + timeout_s;
    int st = 0, done = 0;
    while (pf_now() < end && !(done = waitpid(pid, &st, WNOHANG) == pid)) usleep(20000);
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    char err[256];
    *out = pf_read_file(path, NULL, err, sizeof err);
    if (!*out) *out = strdup("");
    return done && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void image(const char *dir, const char *name, int w, int h) {
    pf_mkdirs(dir, NULL, 0);
    uint8_t *px = malloc((size_t)w * h * 3);
    pf_rng r = pf_rng_make((uint64_t)w, (uint64_t)h, 0);
    for (int i = 0; i < w * h * 3; i++) px[i] = (uint8_t)pf_rng_below(&r, 256);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (pf_image_write_png(path, px, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    free(px);
}

static const char *base_cfg =
    "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
    "data:\n"
    "  samples_per_gpu: 2\n"
    "  train: {type: PairedImageDataset, gt_folder: %s, %s gt_patch_size: 32, repeat: 4}\n"
    "optimizers: {type: Adam, lr: 1.0e-3}\n"
    "total_iters: 20\n"
    "work_dir: %s\n"
    "%s";

static void write_cfg(const char *path, const char *gt, const char *lq_part, const char *wd,
                      const char *extra) {
    FILE *f = fopen(path, "w");
    fprintf(f, base_cfg, gt, lq_part, wd, extra);
    fclose(f);
}

/* Expect failure before any process: status 2, `want` pieces in the output, no job files. */
static void expect_upfront(const char *tag, const char *cfg, const char *wd, const char *want1,
                           const char *want2) {
    char *out;
    char *args[] = { "train", (char *)cfg, NULL };
    int st = run(args, &out, 30);
    CHECK(st == 2, "%s: status %d, expected 2; output:\n%s", tag, st, out);
    CHECK(strstr(out, want1) != NULL, "%s: output lacks '%s':\n%s", tag, want1, out);
    CHECK(!want2 || strstr(out, want2) != NULL, "%s: output lacks '%s':\n%s", tag, want2, out);
    char p[600];
    snprintf(p, sizeof p, "%s/coordinator.addr", wd);
    CHECK(access(p, F_OK) != 0, "%s: a coordinator was started", tag);
    snprintf(p, sizeof p, "%s/config.yaml", wd);
    CHECK(access(p, F_OK) != 0, "%s: config.yaml was written", tag);
    snprintf(p, sizeof p, "%s/coordinator.log", wd);
    CHECK(access(p, F_OK) != 0, "%s: a coordinator wrote its log", tag);
    free(out);
}

/* The output of a command that failed up front must be exactly "pixflow: WANT\n". */
static void expect_exact(const char *tag, const char *out, const char *want) {
    char full[4096];
    snprintf(full, sizeof full, "pixflow: %s\n", want);
    CHECK(!strcmp(out, full), "%s: output\n%s\nwant\n%s", tag, out, full);
}

/* Weights that do not fit: a checkpoint of EDSR 8 feats / 1 block (`ck`, iteration 20) for a
   config of 4 feats, as load_from, as resume_from and to `pixflow test` (1 and 2 workers),
   and a PyTorch .pth as load_from. One message with the file, the shapes and what the file
   says it is, before any process starts (no coordinator, no test worker). */
static void test_weights_mismatch(const char *gt, const char *ck) {
    char wd[400], cfg[400], extra[800], want[2048], pth[400], *out;
    snprintf(wd, sizeof wd, "%s/work_mismatch", root);
    snprintf(cfg, sizeof cfg, "%s/mismatch.yaml", root);
    const char *fit = "the weights do not fit the config's network (EDSR, scale 2, n_feats 4, "
                      "n_blocks 1): tensors 11 mis-shaped, 0 missing, 0 unexpected; "
                      "conv_first.weight: checkpoint [8, 3, 3, 3], config wants [4, 3, 3, 3]; "
                      "conv_first.bias: checkpoint [8], config wants [4]; body.0.conv1.weight: "
                      "checkpoint [8, 8, 3, 3], config wants [4, 4, 3, 3]; body.0.conv1.bias: "
                      "checkpoint [8], config wants [4]; ...; the checkpoint says it is EDSR, "
                      "scale 2, n_feats 8, n_blocks 1 (PixFlow, iteration 20). Set model: in the "
                      "config to the network the checkpoint holds, or use a checkpoint of this "
                      "one";
    snprintf(want, sizeof want, "%s: %s", ck, fit);
    const char *keys[] = { "load_from", "resume_from" };
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(cfg, "w");
        fprintf(f, base_cfg, gt, "", wd, "");
        fprintf(f, "%s: %s\n", keys[k], ck);
        fclose(f);
        /* n_feats 8 -> 4 in the model line */
        char *text = pf_read_file(cfg, NULL, extra, sizeof extra);
        char *at = text ? strstr(text, "n_feats: 8") : NULL;
        if (at) at[9] = '4';
        f = fopen(cfg, "w");
        fputs(text ? text : "", f);
        fclose(f);
        free(text);
        expect_upfront(keys[k], cfg, wd, want, NULL);
        char *args[] = { "train", cfg, NULL };
        run(args, &out, 30);
        expect_exact(keys[k], out, want);
        free(out);
    }
    /* pixflow test: in the process itself with 1 worker, before the workers with 2 */
    FILE *f = fopen(cfg, "w");
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 4, n_blocks: 1}\n"
               "data:\n  test: {type: PairedImageDataset, gt_folder: %s}\n"
               "optimizers: {lr: 1.0e-3}\ntotal_iters: 1\nwork_dir: %s\n", gt, wd);
    fclose(f);
    for (int workers = 1; workers <= 2; workers++) {
        char *xargs[] = { "test", cfg, "--checkpoint", (char *)ck, "--workers",
                          workers == 1 ? "1" : "2", NULL };
        int st = run(xargs, &out, 60);
        CHECK(st == 1, "test --workers %d: status %d", workers, st);
        expect_exact("pixflow test", out, want);
        free(out);
        char dir[600];
        snprintf(dir, sizeof dir, "%s/test/iter_20", wd);
        CHECK(access(dir, F_OK) != 0, "test --workers %d: %s was made", workers, dir);
    }
    /* A PyTorch checkpoint (torch.save's zip: its first entry is <name>/data.pkl) */
    snprintf(pth, sizeof pth, "%s/EDSR_x2.pth", root);
    uint8_t zip[64] = "PK\x03\x04";
    zip[26] = 16;
    memcpy(zip + 30, "EDSR_x2/data.pkl", 16);
    f = fopen(pth, "wb");
    fwrite(zip, 1, sizeof zip, f);
    fclose(f);
    f = fopen(cfg, "w");
    fprintf(f, base_cfg, gt, "", wd, "");
    fprintf(f, "load_from: %s\n", pth);
    fclose(f);
    const char *src = getenv("PF_SOURCE_DIR");
    snprintf(want, sizeof want, "%s: a PyTorch .pth (torch.save) file, not safetensors; convert "
             "it with: python3 %s/scripts/pth2safetensors.py %s OUT.safetensors (BasicSR's "
             "params / params_ema, MMagic's state_dict; docs/models.md)", pth,
             src ? src : "(PF_SOURCE_DIR unset)", pth);
    expect_upfront(".pth load_from", cfg, wd, want, NULL);
    char *args[] = { "train", cfg, NULL };
    run(args, &out, 30);
    expect_exact(".pth load_from", out, want);
    free(out);
}

/* `test_cli_errors disk_full` (its own ctest entry): a full disk at checkpoint time, a 300 KiB
   tmpfs as work_dir. The job must end with the reason, and no partial or temporary checkpoint
   file may be left. Mounting needs root (CAP_SYS_ADMIN): without it, or where the mount is
   refused, it says why and returns 77, which ctest shows as skipped. */
static int disk_full(const char *gt, const char *cfg) {
    char tiny_fs[600], cmd[900], fwd[700];
    if (geteuid() != 0) {
        printf("disk-full case skipped: mounting a tmpfs needs root (euid %d)\n", (int)geteuid());
        return 77;
    }
    snprintf(tiny_fs, sizeof tiny_fs, "%s/tiny_fs", root);
    pf_mkdirs(tiny_fs, NULL, 0);
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=300k tmpfs %s", tiny_fs);
    if (system(cmd) != 0) {
        printf("disk-full case skipped: `%s` failed (no CAP_SYS_ADMIN in this container?)\n",
               cmd);
        return 77;
    }
    snprintf(fwd, sizeof fwd, "%s/w", tiny_fs);
    FILE *f = fopen(cfg, "w");
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 64, n_blocks: 2}\n"
               "data:\n  samples_per_gpu: 2\n"
               "  train: {type: PairedImageDataset, gt_folder: %s, gt_patch_size: 32, "
               "repeat: 4}\n"
               "optimizers: {lr: 1.0e-3}\ntotal_iters: 6\n"
               "checkpoint_config: {interval: 3}\nwork_dir: %s\n", gt, fwd);
    fclose(f);
    char *out, *targs[] = { "train", (char *)cfg, NULL };
    int st = run(targs, &out, 60);
    CHECK(st == 1, "disk full: status %d, expected 1:\n%s", st, out);
    CHECK(strstr(out, "disk full") != NULL, "disk full: the reason is not shown:\n%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s/checkpoints 2>/dev/null)\"", fwd);
    CHECK(system(cmd) == 0, "disk full: files left in %s/checkpoints", fwd);
    snprintf(cmd, sizeof cmd, "umount %s", tiny_fs);
    if (system(cmd) != 0) fprintf(stderr, "could not unmount %s\n", tiny_fs);
    return pf_test_end("test_cli_errors disk_full");
}

int main(int argc, char **argv) {
    const char *b = getenv("PF_BIN");
    snprintf(bin, sizeof bin, "%s", b ? b : "build/pixflow");
    snprintf(root, sizeof root, "/tmp/pf_cli_%d", (int)getpid());
    pf_mkdirs(root, NULL, 0);
    char gt[400], lq[400], small[400], notpng[400], trunc[400], cfg[400], wd[400];
    snprintf(gt, sizeof gt, "%s/gt", root);
    snprintf(lq, sizeof lq, "%s/lq", root);
    snprintf(small, sizeof small, "%s/small", root);
    snprintf(notpng, sizeof notpng, "%s/notpng", root);
    snprintf(trunc, sizeof trunc, "%s/trunc", root);
    snprintf(cfg, sizeof cfg, "%s/c.yaml", root);
    snprintf(wd, sizeof wd, "%s/work", root);
    image(gt, "a.png", 64, 64);
    image(gt, "b.png", 64, 64);
    image(lq, "a.png", 32, 32);
    image(lq, "b.png", 31, 32);          /* GT b is not 2 x LQ b */
    image(small, "tiny.png", 20, 20);
    pf_mkdirs(notpng, NULL, 0);
    char p[600];
    snprintf(p, sizeof p, "%s/fake.png", notpng);
    FILE *f = fopen(p, "w");
    fputs("GIF89a not a png at all", f);
    fclose(f);
    if (argc > 1 && !strcmp(argv[1], "disk_full")) {
        int rc = disk_full(gt, cfg);
        if (rc != 1) {
            snprintf(p, sizeof p, "rm -rf %s", root);
            if (system(p) != 0) fprintf(stderr, "could not remove %s\n", root);
        }
        return rc;
    }

    write_cfg(cfg, gt, "", wd, "colour: red\n");
    expect_upfront("unknown key", cfg, wd, "c.yaml:8: colour: unknown key", NULL);
    /* 11 bytes on which libfyaml 0.7.12, the earlier parser, crashed (found by tests/fuzz;
       tests/fuzz/regressions/config/crash_libfyaml_*): a syntax error with its line */
    f = fopen(cfg, "w");
    fputs("? ?:& ? :\t:", f);
    fclose(f);
    expect_upfront("libfyaml crash input", cfg, wd, "c.yaml:1: yaml: syntax error", NULL);
    write_cfg(cfg, gt, "", wd, "seed: abc\n");
    expect_upfront("wrong type", cfg, wd, "c.yaml:8: seed:", NULL);
    char missing[450];
    snprintf(missing, sizeof missing, "%s/nowhere", root);
    write_cfg(cfg, missing, "", wd, "");
    expect_upfront("missing folder", cfg, wd, "c.yaml:4: data.train.gt_folder:", "nowhere");
    char lq_part[500];
    snprintf(lq_part, sizeof lq_part, "lq_folder: %s,", lq);
    write_cfg(cfg, gt, lq_part, wd, "");
    expect_upfront("GT != scale x LQ", cfg, wd, "gt/b.png", "lq/b.png");
    write_cfg(cfg, small, "", wd, "");
    expect_upfront("smaller than patch", cfg, wd, "small/tiny.png", "smaller than the patch");
    write_cfg(cfg, notpng, "", wd, "");
    expect_upfront("not a PNG", cfg, wd, "notpng/fake.png", "not a PNG");

    /* A PNG with a valid header and truncated pixel data fails in the loader. */
    image(trunc, "ok.png", 64, 64);
    image(trunc, "cut.png", 64, 64);
    snprintf(p, sizeof p, "%s/cut.png", trunc);
    truncate(p, 300);
    write_cfg(cfg, trunc, "", wd, "");
    char *out;
    char *args[] = { "train", cfg, NULL };
    int st = run(args, &out, 60);
    CHECK(st == 1, "truncated PNG: status %d, expected 1; output:\n%s", st, out);
    CHECK(strstr(out, "trunc/cut.png") != NULL, "truncated PNG: the file is not named:\n%s",
          out);
    free(out);

    /* pixflow test with weights of another architecture. */
    char ck[600];
    snprintf(ck, sizeof ck, "%s/checkpoints/latest", wd);
    write_cfg(cfg, gt, "", wd,
              "checkpoint_config: {interval: 20}\n");
    char *targs[] = { "train", cfg, NULL };
    st = run(targs, &out, 120);
    CHECK(st == 0, "small training run failed (%d):\n%s", st, out);
    free(out);
    char tcfg[400];
    snprintf(tcfg, sizeof tcfg, "%s/t.yaml", root);
    f = fopen(tcfg, "w");
    /* a test config: model, data.test and work_dir only (BasicSR's test options) */
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 2}\n"
               "data:\n  test: {type: PairedImageDataset, gt_folder: %s}\n"
               "work_dir: %s\n", gt, wd);
    fclose(f);
    snprintf(p, sizeof p, "%s/checkpoints/iter_20.safetensors", wd);
    char *xargs[] = { "test", tcfg, "--checkpoint", p, NULL };
    st = run(xargs, &out, 60);
    CHECK(st != 0, "test with mismatched weights succeeded:\n%s", out);
    CHECK(strstr(out, "tensors 0 mis-shaped, 4 missing, 0 unexpected; missing "
                 "'body.1.conv1.weight', 'body.1.conv1.bias', 'body.1.conv2.weight', "
                 "'body.1.conv2.bias'; the checkpoint says it is EDSR, scale 2, n_feats 8, "
                 "n_blocks 1 (PixFlow, iteration 20)") != NULL,
          "the missing tensors are not named:\n%s", out);
    free(out);
    test_weights_mismatch(gt, p);
    /* the same test config with the trained network runs `pixflow test`; `pixflow train`
       refuses it, naming the training keys it lacks, before anything starts */
    f = fopen(tcfg, "w");
    fprintf(f, "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\n"
               "data:\n  test: {type: PairedImageDataset, gt_folder: %s}\n"
               "work_dir: %s\n", gt, wd);
    fclose(f);
    st = run(xargs, &out, 60);
    char tsv[700];
    snprintf(tsv, sizeof tsv, "%s/test/iter_20/results.tsv", wd);
    CHECK(st == 0 && access(tsv, F_OK) == 0,
          "pixflow test on a config with model, data.test and work_dir only: status %d, %s:\n%s",
          st, tsv, out);
    free(out);
    char *ttargs[] = { "train", tcfg, NULL };
    st = run(ttargs, &out, 30);
    CHECK(st == 2 && strstr(out, "t.yaml: `pixflow train` needs optimizers, total_iters (or "
                            "total_epochs), data.train, missing from the config") != NULL,
          "pixflow train on a test config: status %d, want 2 naming the training keys:\n%s", st,
          out);
    free(out);

    /* A fresh run into a work_dir that holds an earlier run: the earlier results move to
       work_dir/archived_<time>/ and the new run's checkpoints survive pruning. Then --resume
       auto with load_from in the config resumes (the checkpoint wins over load_from). */
    write_cfg(cfg, gt, "", wd, "checkpoint_config: {interval: 5, max_keep_ckpts: 1}\n");
    st = run(targs, &out, 120);
    CHECK(st == 0, "second fresh run into the same work_dir failed (%d):\n%s", st, out);
    free(out);
    char *latest = pf_read_file(ck, NULL, (char[256]){ 0 }, 256);
    CHECK(latest && strncmp(latest, "iter_20.safetensors", 19) == 0, "latest: %s",
          latest ? latest : "(none)");
    free(latest);
    snprintf(p, sizeof p, "%s/checkpoints/iter_20.safetensors", wd);
    CHECK(access(p, F_OK) == 0, "the final checkpoint was pruned");
    snprintf(p, sizeof p, "%s/checkpoints/iter_15.safetensors", wd);
    CHECK(access(p, F_OK) != 0, "max_keep_ckpts 1 kept iter_15");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls -d %s/archived_*/checkpoints/iter_20.safetensors >/dev/null "
             "2>&1", wd);
    CHECK(system(cmd) == 0, "the earlier run's checkpoints were not archived");
    char extra[800];
    snprintf(extra, sizeof extra, "load_from: %s/checkpoints/iter_20.safetensors\n", wd);
    write_cfg(cfg, gt, "", wd, extra);
    char *rargs[] = { "train", cfg, "--resume", "auto", NULL };
    st = run(rargs, &out, 120);
    CHECK(st == 0, "--resume auto with load_from in the config failed (%d):\n%s", st, out);
    free(out);

    /* Numeric options, every subcommand: the whole value must be a number in range
       (common/number.h, the config's rule); otherwise status 2 and one line naming the command,
       the option, the value and the range, before anything starts. */
    {
        static const struct {
            const char *args[8];            /* after `pixflow`; "CFG" is the config */
            const char *want;               /* the whole output */
        } cases[] = {
            {{"train", "CFG", "--loaders", "abc"},
             "pixflow train: --loaders abc: expected a whole number 0..256"},
            {{"train", "CFG", "--loaders", "-1"},
             "pixflow train: --loaders -1: expected a whole number 0..256"},
            {{"train", "CFG", "--loaders", ""},
             "pixflow train: --loaders '': expected a whole number 0..256"},
            {{"train", "CFG", "--loaders", "3 "},
             "pixflow train: --loaders '3 ': expected a whole number 0..256"},
            {{"train", "CFG", "--workers", "1.5"},
             "pixflow train: --workers 1.5: expected a whole number 1..64"},
            {{"train", "CFG", "--gpus", "99999999999999999999"},
             "pixflow train: --gpus 99999999999999999999: expected a whole number 0..64"},
            {{"train", "CFG", "--threads", "0"},
             "pixflow train: --threads 0: expected a whole number 1..1024"},
            {{"worker", "--connect", "tcp://127.0.0.1:1", "--threads", "2x"},
             "pixflow worker: --threads 2x: expected a whole number 1..1024"},
            {{"worker", "--connect", "tcp://127.0.0.1:1", "--device", "cuda:-1"},
             "pixflow worker: --device cuda:-1: expected cpu or cuda:N (N 0..255)"},
            {{"test", "CFG", "--checkpoint", "x", "--threads", "-3"},
             "pixflow test: --threads -3: expected a whole number 1..1024"},
            {{"test", "CFG", "--checkpoint", "x", "--workers", "0x10"},
             "pixflow test: --workers 0x10: expected a whole number 1..64"},
            {{"test", "CFG", "--checkpoint", "x", "--shard", "2/2"},
             "pixflow test: --shard 2/2: expected I/N with N a whole number 1..64 and I 0..N-1"},
            {{"coordinator", "CFG", "--workers", "65"},
             "pixflow coordinator: --workers 65: expected a whole number 1..64"},
            {{"loader", "--connect", "tcp://127.0.0.1:1", "--join-timeout", "0"},
             "pixflow loader: --join-timeout 0: expected seconds in (0, 604800]"},
            {{"monitor", "--connect", "tcp://127.0.0.1:1", "--interval", "abc"},
             "pixflow monitor: --interval abc: expected seconds in (0, 3600]"},
            {{"monitor", "--connect", "tcp://127.0.0.1:1", "--join-timeout", "1e999"},
             "pixflow monitor: --join-timeout 1e999: expected seconds in (0, 604800]"},
            {{"monitor", "--connect", "tcp://127.0.0.1:1", "--history", "-5"},
             "pixflow monitor: --history -5: expected a whole number 0..4096"},
            {{"hook", "eval", "--connect", "tcp://127.0.0.1:1", "--instance", "1/0"},
             "pixflow hook eval: --instance 1/0: expected I/N with N a whole number 1..64 and "
             "I 0..N-1"},
        };
        char nwd[450];
        snprintf(nwd, sizeof nwd, "%s/numbers", root);
        write_cfg(cfg, gt, "", nwd, "");
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char *a[8] = { NULL }, *out, want[256];
            for (int k = 0; k < 7 && cases[c].args[k]; k++)
                a[k] = strcmp(cases[c].args[k], "CFG") ? (char *)cases[c].args[k] : cfg;
            snprintf(want, sizeof want, "%s\n", cases[c].want);
            int st = run(a, &out, 30);
            CHECK(st == 2 && !strcmp(out, want), "%s %s %s: status %d, output:\n%s(expected "
                  "status 2 and:\n%s)", a[0], a[2], a[3] ? a[3] : "", st, out, want);
            CHECK(access(nwd, F_OK) != 0, "%s %s: a job was started", a[0], a[2]);
            free(out);
        }
    }

    /* --version: what is built, with the library versions (the ones it runs on must be the
       ones its headers name), and nothing stale. */
    {
        char want[1024], *out;
        int at = snprintf(want, sizeof want, "pixflow %s\nbackends:    cpu (oneDNN %d.%d.%d); ",
                          PIXFLOW_VERSION, DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR,
                          DNNL_VERSION_PATCH);
#if defined(PIXFLOW_HAVE_GPU_WORKER)
        snprintf(want + at, sizeof want - at,
                 "cuda compiled, not verified on hardware (CUDA runtime %d.%d, cuDNN %d.%d.%d, "
                 "cuBLAS)\ncollectives: gloo (CPU workers); nccl %d.%d.%d (GPU workers; "
                 "compiled, not verified on hardware)\n", CUDART_VERSION / 1000,
                 CUDART_VERSION % 1000 / 10, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL,
                 NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#elif defined(PIXFLOW_HAVE_CUDA)
        snprintf(want + at, sizeof want - at,
                 "cuda ops compiled (nn/cuda, gpu_check), GPU workers not built: NCCL was not "
                 "found when the build was configured\ncollectives: gloo (CPU workers); nccl not "
                 "built\n");
#else
        snprintf(want + at, sizeof want - at,
                 "cuda not built (nvcc, cuDNN or cuBLAS were not found when the build was "
                 "configured)\ncollectives: gloo (CPU workers); nccl not built\n");
#endif
        char *vargs[] = { "--version", NULL };
        int st = run(vargs, &out, 30);
        CHECK(st == 0 && !strcmp(out, want), "--version: status %d, output:\n%s(expected:\n%s)",
              st, out, want);
        /* no stale "not yet", and "verified" only as "not verified" (no GPU run is recorded) */
        int claims = strstr(out, "not yet") != NULL;
        for (const char *v = out; (v = strstr(v, "verified")); v++)
            claims |= v - out < 4 || strncmp(v - 4, "not ", 4) != 0;
        CHECK(!claims, "--version claims more than is known:\n%s", out);
        free(out);
    }

    int rc = pf_test_end("test_cli_errors");
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    }
    return rc;
}
