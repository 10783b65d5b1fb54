/*  security.curve as a user meets it (docs/architecture.md, Security):

    A. `pixflow keygen DIR` writes the server and client pairs and admits the client
       (DIR/allowed/client); secret files are mode 0600; it refuses to overwrite a key.
    B. The `security` section round-trips through pf_config_to_yaml; unknown keys are refused.
    C. A job with security.curve: true (`pixflow train --loaders 0`): a loader whose key is not
       in DIR/allowed/ and a loader without keys are refused: each exits 1 within seconds saying
       why, and coordinator.log names the address it came from. Then a loader with the job's
       key joins and the job finishes with the batches (pixel digests) and losses of the same
       job run without CURVE and without intruders.
    D. Binding a non-loopback address without CURVE logs a warning naming the endpoint and
       security.curve.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define ITERS 8

static char root[256], bin[1024];

static int run_cmd(const char *out, char *const argv[], double timeout_s, double *took) {
    run r;
    double t0 = pf_now();
    start_cmd(&r, out, argv);
    int st = finish(&r, timeout_s);
    if (took) *took = pf_now() - t0;
    return st;
}

static int mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

static void test_keygen(const char *keys, const char *intruder) {
    char out[600], path[700];
    snprintf(out, sizeof out, "%s/keygen.out", root);
    char *argv[] = { bin, "keygen", (char *)keys, NULL };
    CHECK(run_cmd(out, argv, 20, NULL) == 0, "keygen %s failed", keys);
    const char *files[] = { "server", "client", "allowed/client" };
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", keys, files[i]);
        CHECK(mode_of(path) == 0644, "%s: mode %o, expected 644", path, mode_of(path));
    }
    const char *secrets[] = { "server_secret", "client_secret" };
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", keys, secrets[i]);
        CHECK(mode_of(path) == 0600, "%s: mode %o, expected 600", path, mode_of(path));
    }
    /* The admitted public key is the client's own. */
    snprintf(path, sizeof path, "%s/client", keys);
    char *a = slurp(path);
    snprintf(path, sizeof path, "%s/allowed/client", keys);
    char *b = slurp(path);
    char *ka = strstr(a, "public-key"), *kb = strstr(b, "public-key");
    CHECK(ka && kb && strncmp(ka, kb, 54) == 0, "allowed/client is not the client's public key");
    snprintf(path, sizeof path, "%s/server", keys);
    char *s = slurp(path);
    char *ks = strstr(s, "public-key");
    CHECK(ks && ka && strncmp(ka, ks, 54) != 0, "server and client have the same key");
    free(a);
    free(b);
    free(s);
    CHECK(run_cmd(out, argv, 20, NULL) == 1, "keygen over an existing folder did not fail");
    char *t = slurp(out);
    CHECK(strstr(t, "exists; not overwriting"), "keygen refusal says: %s", t);
    free(t);
    /* An intruder: a key pair of its own, and the job's server public key (which is not
       secret), but not admitted. */
    char *iargv[] = { bin, "keygen", (char *)intruder, "--name", "client", NULL };
    CHECK(run_cmd(out, iargv, 20, NULL) == 0, "keygen --name failed");
    snprintf(path, sizeof path, "%s/allowed", intruder);
    CHECK(access(path, F_OK) != 0, "keygen --name without --allow made %s", path);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s/server' '%s/server'", keys, intruder);
    CHECK(system(cmd) == 0, "%s", cmd);
}

static void test_config(const char *keys) {
    char yaml[2048], err[512];
    snprintf(yaml, sizeof yaml,
             "model: {type: SRCNN, scale: 2}\n"
             "data: {train: {gt_folder: x, gt_patch_size: 16}}\n"
             "optimizers: {lr: 1.0e-3}\ntotal_iters: 4\nwork_dir: w\n"
             "security: {curve: true, keys_dir: %s}\n", keys);
    pf_config a, b;
    CHECK(pf_config_parse(&a, "a.yaml", yaml, strlen(yaml), 0, err, sizeof err) == 0, "%s", err);
    CHECK(a.curve == 1 && strcmp(a.keys_dir, keys) == 0, "security not read: %d '%s'", a.curve,
          a.keys_dir);
    char *out = pf_config_to_yaml(&a);
    CHECK(out && pf_config_parse(&b, "b.yaml", out, strlen(out), 0, err, sizeof err) == 0,
          "%s", err);
    CHECK(b.curve == 1 && strcmp(b.keys_dir, keys) == 0 && a.hash == b.hash,
          "security did not round-trip: %s", out);
    free(out);
    const char *bad = "model: {type: SRCNN, scale: 2}\n"
                      "data: {train: {gt_folder: x, gt_patch_size: 16}}\n"
                      "optimizers: {lr: 1.0e-3}\ntotal_iters: 4\nwork_dir: w\n"
                      "security: {curve: yes please}\n";
    CHECK(pf_config_parse(&b, "c.yaml", bad, strlen(bad), 0, err, sizeof err) != 0 &&
          strstr(err, "c.yaml:6: security.curve"), "bad security.curve: %s", err);
    const char *unk = "model: {type: SRCNN, scale: 2}\n"
                      "data: {train: {gt_folder: x, gt_patch_size: 16}}\n"
                      "optimizers: {lr: 1.0e-3}\ntotal_iters: 4\nwork_dir: w\n"
                      "security:\n  curve: false\n  key: k\n";
    CHECK(pf_config_parse(&b, "d.yaml", unk, strlen(unk), 0, err, sizeof err) != 0 &&
          strstr(err, "d.yaml:8: security.key: unknown key"), "unknown key: %s", err);
}

static void write_cfg(const char *path, const char *work_dir, const char *keys) {
    char train[300];
    snprintf(train, sizeof train, "%s/train", root);
    write_tiny_config(path, train, work_dir, 2, ITERS);
    if (!keys) return;
    FILE *f = fopen(path, "a");
    fprintf(f, "security: {curve: true, keys_dir: %s}\n", keys);
    fclose(f);
}

/* The last loss logged in work_dir's metrics.jsonl, or NAN. */
static double final_loss(const char *work_dir) {
    double loss[ITERS + 1], lr[ITERS + 1];
    for (int i = 0; i <= ITERS; i++) loss[i] = NAN;
    train_curve(work_dir, loss, lr, ITERS);
    return loss[ITERS];
}

/* A loader that must be refused: exit 1 within 10 s, saying `why`. */
static void intruder(const char *addr, const char *keys, const char *name, const char *why) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, name);
    char *argv[8] = { bin, "loader", "--connect", (char *)addr, "--name", (char *)name, NULL };
    if (keys) {
        argv[6] = "--keys";
        argv[7] = (char *)keys;
    }
    char *all[10];
    memcpy(all, argv, sizeof argv);
    all[8] = NULL;
    double took = 0;
    int st = run_cmd(out, all, 30, &took);
    char *t = slurp(out);
    CHECK(st == 1, "%s: exit status %d, expected 1 (output: %s)", name, st, t);
    CHECK(took < 10, "%s: refused only after %.1f s", name, took);
    CHECK(strstr(t, why), "%s: output does not say '%s': %s", name, why, t);
    free(t);
}

static void test_job(const char *keys, const char *intruder_keys) {
    char ref[600], wd[600], cfg[700], cfg_ref[700], out[700];
    snprintf(ref, sizeof ref, "%s/ref", root);
    snprintf(wd, sizeof wd, "%s/curve", root);
    snprintf(cfg_ref, sizeof cfg_ref, "%s/ref.yaml", root);
    snprintf(cfg, sizeof cfg, "%s/curve.yaml", root);
    write_cfg(cfg_ref, ref, NULL);
    write_cfg(cfg, wd, keys);

    run r;
    snprintf(out, sizeof out, "%s/ref.out", root);
    start_job(&r, bin, out, cfg_ref, "1", NULL, NULL, NULL);
    CHECK(finish(&r, 180) == 0, "reference run failed (%s)", out);

    snprintf(out, sizeof out, "%s/curve.out", root);
    start_job(&r, bin, out, cfg, "0", NULL, NULL, NULL);
    char addr_path[700];
    snprintf(addr_path, sizeof addr_path, "%s/coordinator.addr", wd);
    char *addr = NULL;
    for (double end = pf_now() + 30; !addr && pf_now() < end; usleep(50000)) {
        char err[256];
        addr = pf_read_file(addr_path, NULL, err, sizeof err);
    }
    CHECK(addr != NULL, "the CURVE job did not start (%s)", out);
    if (!addr) {
        kill(r.pid, SIGKILL);
        finish(&r, 5);
        return;
    }
    intruder(addr, intruder_keys, "intruder", "could not authenticate");
    intruder(addr, NULL, "nokeys", "has no keys");
    char log[700];
    snprintf(log, sizeof log, "%s/coordinator.log", wd);
    CHECK(wait_text(log, "refused a connection from 127.0.0.1: public key not in the allowed "
                         "folder", 5),
          "coordinator.log does not log the refused key with its address");
    CHECK(wait_text(log, "refused a connection from 127.0.0.1:", 1),
          "coordinator.log does not name the refused peer's address");
    /* The loader without keys: the server sees a mechanism mismatch or, when the client
       noticed first, a broken handshake (then the address is unknown: "from an unknown
       address on ctrl"). Either way a refusal on ctrl (the intruder's names no socket). */
    for (double end = pf_now() + 30; pf_now() < end; usleep(20000)) {
        char *t = slurp(log);
        int n = 0;
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
            n += strstr(line, "refused a connection from ") && strstr(line, " on ctrl: ");
        free(t);
        if (n >= 1) break;
        CHECK(pf_now() + 0.03 < end, "coordinator.log does not log the loader without keys");
    }
    /* The job's own loader. */
    run lr;
    snprintf(out, sizeof out, "%s/loader.out", root);
    char *largv[] = { bin, "loader", "--connect", addr, "--keys", (char *)keys, "--name",
                      "loader1", NULL };
    start_cmd(&lr, out, largv);
    CHECK(finish(&r, 180) == 0, "the CURVE job failed (%s)", r.out);
    CHECK(finish(&lr, 20) == 0, "the job's loader failed (%s)", out);
    free(addr);
    check_same_batches(ref, wd, 1, "curve");
    double a = final_loss(ref), b = final_loss(wd);
    CHECK(!isnan(a) && a == b, "final loss %.9g with CURVE, %.9g without", b, a);
}

static void test_public_bind_warning(void) {
    char wd[600], cfg[700], out[700], log[700];
    snprintf(wd, sizeof wd, "%s/public", root);
    snprintf(cfg, sizeof cfg, "%s/public.yaml", root);
    write_cfg(cfg, wd, NULL);
    snprintf(out, sizeof out, "%s/public.out", root);
    char *argv[] = { bin, "coordinator", cfg, "--bind", "tcp://0.0.0.0:*", NULL };
    run r;
    start_cmd(&r, out, argv);
    snprintf(log, sizeof log, "%s/coordinator.log", wd);
    CHECK(wait_text(log, "ctrl binds tcp://0.0.0.0:* without CURVE", 20),
          "no warning for a public bind without CURVE (%s)", log);
    char *t = slurp(log);
    CHECK(strstr(t, "security.curve"), "the warning does not name security.curve: %s", t);
    free(t);
    kill(r.pid, SIGTERM);
    finish(&r, 20);
}

int main(void) {
    pf_test_job_begin("curve", bin, sizeof bin, root, sizeof root);
    unsetenv("PIXFLOW_KEYS");
    char train[300];
    snprintf(train, sizeof train, "%s/train", root);
    make_images(train, 4, 48, 3);
    char keys[300], intruder_keys[300];
    snprintf(keys, sizeof keys, "%s/keys", root);
    snprintf(intruder_keys, sizeof intruder_keys, "%s/intruder_keys", root);
    test_keygen(keys, intruder_keys);
    test_config(keys);
    test_job(keys, intruder_keys);
    test_public_bind_warning();
    return pf_test_job_end("test_curve", root);
}
