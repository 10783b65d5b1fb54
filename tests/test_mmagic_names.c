/*  test_mmagic_names — BasicVSR++ and BasicVSR checkpoints under MMagic's parameter names
    (issue 42), converted by scripts/pth2safetensors.py, load into PixFlow and run as PyTorch.

    tests/reference/mmagic_names_ref.py (Debian's /usr/bin/python3 with torch 1.13) draws a
    BasicVSR++ (mid_channels 8, num_blocks 1) and a BasicVSR (mid_channels 8, num_blocks 2),
    renames their state_dicts to MMagic's names by its own rules and saves them as MMagic does
    ({'meta', 'state_dict': {'generator.<name>', 'step_counter'}}), with their float64 outputs
    on a 3-frame 16 x 16 clip. For each network:
      - the converter names the set it found ("MMagic's BasicVSRPlusPlusNet (mid_channels 8,
        num_blocks 1)"), as does load_from's log line (pf_ckpt_source_names), and writes
        BasicSR's names;
      - pf_ckpt_load_weights (load_from) takes the file for the config's network (strict:
        names and shapes) and pf_model_infer_clip's output is within 1e-5 of PyTorch's;
      - converted with --names keep, the file is refused by PixFlow's loader, naming the
        unexpected (MMagic's) and missing (BasicSR's) names and the name set recorded: the C
        loader stays strict, the renaming lives in the converter alone.
    And: a BasicVSR++ file with one tensor left out, or one extra, is refused by the converter
    naming that tensor; MMagic's SPyNet file alone (no mean / std), converted, loads through
    model.spynet_pretrained (pf_model_load_spynet) to the same SPyNet weights as the whole
    network's file, bit for bit.
    Without torch it exits 77 (skipped).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test.h"

#define PY "/usr/bin/python3"
enum { T = 3, H = 16, W = 16, MID = 8 };

static const char *src;
static char dir[256];

/* Runs the converter on DIR/NAME.pth with the extra arguments; its stdout and stderr go to
   DIR/NAME.log, returned in log (NUL-terminated, truncated). The exit status. */
static int convert(const char *name, const char *args, char *log, size_t loglen) {
    char cmd[2048], path[400];
    snprintf(cmd, sizeof cmd, PY " %s/scripts/pth2safetensors.py %s %s/%s.pth %s/%s.safetensors"
             " >%s/%s.log 2>&1", src, args, dir, name, dir, name, dir, name);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(log, 1, loglen - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    return rc;
}

static void video_cfg(pf_config *cfg, const char *type, int blocks) {
    pf_config_defaults(cfg);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", type);
    cfg->scale = 4;
    cfg->n_feats = MID;
    cfg->n_blocks = blocks;
    cfg->train.present = 1;
    snprintf(cfg->train.type, sizeof cfg->train.type, "REDSRecurrentDataset");
    cfg->train.num_frame = T;
}

/* MMagic's file of network `tag` (model.type type, n_blocks blocks): converted, loaded, run. */
static void check_net(const char *tag, const char *type, int blocks, const char *found,
                      const uint8_t *lq) {
    static pf_config cfg;
    char log[4096], err[2048], path[400];
    video_cfg(&cfg, type, blocks);
    int rc = convert(tag, "", log, sizeof log);
    CHECK(rc == 0 && strstr(log, found), "%s: converter rc %d, wanted '%s' in: %s", tag, rc,
          found, log);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, tag);
    char names[512];
    pf_ckpt_source_names(path, names, sizeof names);
    CHECK(strstr(names, found) != NULL, "%s: load_from's log line says '%s'", tag, names);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s: %s", tag, err);
    if (!m) return;
    rc = pf_ckpt_load_weights(m, path, NULL, err, sizeof err);
    CHECK(rc == 0, "%s: load_from: %s", tag, err);
    size_t n = (size_t)T * 4 * H * 4 * W * 3, len = 0;
    float *out = malloc(n * sizeof(float));
    snprintf(path, sizeof path, "%s/%s.out.f32", dir, tag);
    float *want = (float *)pf_read_file(path, &len, err, sizeof err);
    CHECK(want && len == n * sizeof(float), "%s: %s", path, want ? "size" : err);
    if (rc == 0 && want && len == n * sizeof(float)) {
        rc = pf_model_infer_clip(m, lq, T, H, W, out, err, sizeof err);
        CHECK(rc == 0, "%s: infer_clip: %s", tag, err);
        double worst = 0, big = 0;
        for (size_t i = 0; !rc && i < n; i++) {
            worst = fmax(worst, fabs((double)out[i] - want[i]));
            big = fmax(big, fabs((double)want[i]));
        }
        CHECK(!rc && worst <= 1e-5, "%s: output %.3g from PyTorch float64's", tag, worst);
        printf("%s: MMagic's names converted and loaded; output within %.2g of PyTorch float64's "
               "(|max| %.3f)\n", tag, worst, big);
    }
    free(want);
    free(out);
    pf_model_destroy(&m);
    /* --names keep: MMagic's names as they are, which PixFlow's loader refuses by name */
    rc = convert(tag, "--names keep", log, sizeof log);
    CHECK(rc == 0, "%s --names keep: %s", tag, log);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, tag);
    m = pf_model_new(&cfg, err, sizeof err);
    rc = m ? pf_ckpt_load_weights(m, path, NULL, err, sizeof err) : 0;
    CHECK(m && rc != 0 && strstr(err, "unexpected '") &&
          strstr(err, "missing 'spynet.basic_module.0.basic_module.0.weight'") &&
          strstr(err, "its names: names kept as in the file (--names keep)"),
          "%s --names keep: PixFlow's loader: %s", tag, m && rc ? err : "accepted");
    pf_model_destroy(&m);
}

/* MMagic's SPyNet file through model.spynet_pretrained: the same SPyNet tensors as the
   converted BasicVSR++ file's (bvsrpp.safetensors, converted again here). */
static void check_spynet(void) {
    static pf_config cfg;
    char log[4096], err[2048], path[400];
    video_cfg(&cfg, "BasicVSRPlusPlus", 1);
    int rc = convert("spynet", "", log, sizeof log);
    CHECK(rc == 0 && strstr(log, "MMagic's SPyNet"), "spynet: rc %d: %s", rc, log);
    rc = convert("bvsrpp", "", log, sizeof log);
    CHECK(rc == 0, "bvsrpp: %s", log);
    pf_model *a = pf_model_new(&cfg, err, sizeof err), *b = pf_model_new(&cfg, err, sizeof err);
    if (!a || !b) {
        CHECK(0, "%s", err);
        pf_model_destroy(&a);
        pf_model_destroy(&b);
        return;
    }
    snprintf(path, sizeof path, "%s/bvsrpp.safetensors", dir);
    CHECK(pf_ckpt_load_weights(a, path, NULL, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/spynet.safetensors", dir);
    CHECK(pf_model_load_spynet(b, path, err, sizeof err) == 0, "spynet_pretrained: %s", err);
    int n = 0, same = 0;
    for (int i = 0; i < pf_model_num_tensors(a); i++) {
        const pf_param_info *t = pf_model_tensor_info(a, i);
        if (strncmp(t->name, "spynet.", 7)) continue;
        n++;
        same += !memcmp(pf_model_params(a) + t->offset, pf_model_params(b) + t->offset,
                        t->numel * sizeof(float));
    }
    CHECK(n == 60 && same == n, "spynet_pretrained: %d of %d SPyNet tensors equal", same, n);
    printf("MMagic's SPyNet file: %d of %d tensors as in the whole network's file\n", same, n);
    pf_model_destroy(&a);
    pf_model_destroy(&b);
}

int main(void) {
    if (system(PY " -c 'import torch, torchvision, numpy' 2>/dev/null") != 0) {
        printf("test_mmagic_names: skipped: " PY " cannot import torch, torchvision, numpy\n");
        return 77;
    }
    src = getenv("PF_SOURCE_DIR");
    if (!src) src = ".";
    char cmd[2048], log[4096], err[256];
    snprintf(dir, sizeof dir, "/tmp/pf_mmagic_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, PY " %s/tests/reference/mmagic_names_ref.py %s", src, dir);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    char path[400];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/lq.u8", dir);
    uint8_t *lq = (uint8_t *)pf_read_file(path, &len, err, sizeof err);
    CHECK(lq && len == (size_t)T * H * W * 3, "%s: %s", path, lq ? "size" : err);
    if (lq && len == (size_t)T * H * W * 3) {
        check_net("bvsrpp", "BasicVSRPlusPlus", 1,
                  "MMagic's BasicVSRPlusPlusNet (mid_channels 8, num_blocks 1), renamed to "
                  "BasicSR's", lq);
        check_net("bvsr", "BasicVSR", 2,
                  "MMagic's BasicVSRNet (mid_channels 8, num_blocks 2), renamed to BasicSR's", lq);
        check_spynet();
    }
    free(lq);
    /* strict: one tensor missing, one unknown, each named */
    int rc = convert("bvsrpp_missing", "", log, sizeof log);
    CHECK(rc != 0 && strstr(log, "1 missing: deform_align.forward_2.conv_offset.6.bias"),
          "a missing tensor: rc %d: %s", rc, log);
    rc = convert("bvsrpp_extra", "", log, sizeof log);
    CHECK(rc != 0 && strstr(log, "1 unknown: upsample3.upsample_conv.weight"),
          "an unknown tensor: rc %d: %s", rc, log);
    rc = pf_test_end("test_mmagic_names");
    if (rc == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return rc;
}
