/*  test_pth_convert — scripts/pth2safetensors.py, from PyTorch checkpoints as BasicSR and MMagic
    write them into what PixFlow's load_from and evaluation read.

    tests/reference/make_pth_cases.py (Debian's /usr/bin/python3 with torch 1.13) saves BasicSR's
    EDSR (n_feats 8, n_blocks 2, x2) with two independent random draws as 'params' and
    'params_ema', in torch.save's zip format, its legacy pickle format, and MMagic's layout
    ('state_dict' with 'generator.' / 'generator_ema.' prefixes, a discriminator and an int64
    buffer), and dumps both draws as raw float32. For each file:
      - PixFlow refuses the .pth itself with the message that names the converter;
      - the converter (run by /usr/bin/python3) writes a safetensors file;
      - pf_ckpt_check_weights (the front end's check) accepts it for the config's network;
      - pf_ckpt_load_weights (load_from) gives exactly the 'params' floats, name by name;
      - pf_ckpt_load_eval_weights (evaluation, `pixflow test`) gives exactly 'params_ema'.
    And BasicSR's net_d_N.pth of a UNetDiscriminatorSN ({'params': state_dict} with the
    spectral norm's weight_orig, weight_u, weight_v): converted, it loads strictly into the GAN
    step's net_d (pf_gan_d_load, what gan.load_from_d does), and net_d's state_dict written
    back (pf_gan_d_serialize) is torch's, name by name in torch's order, bit for bit; the same
    for a VGGStyleDiscriminator's, whose BatchNorm buffers the converter keeps
    (num_batches_tracked as I64).
    Without torch it exits 77 (skipped).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/gan.h"
#include "nn/model.h"
#include "pf_test.h"

#define PY "/usr/bin/python3"

/* The raw reference of one draw: names.txt order, float32 each. */
typedef struct {
    int n;
    char name[64][96];
    size_t numel[64];
    float *data;
} reference;

/* `which`.bin of dir, its tensors named in `names` (a names.txt file of dir). */
static int read_reference(const char *dir, const char *names, const char *which,
                          reference *r) {
    char path[600], line[256];
    snprintf(path, sizeof path, "%s/%s", dir, names);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t total = 0;
    r->n = 0;
    while (r->n < 64 && fgets(line, sizeof line, f) &&
           sscanf(line, "%95s %zu", r->name[r->n], &r->numel[r->n]) == 2)
        total += r->numel[r->n++];
    fclose(f);
    snprintf(path, sizeof path, "%s/%s.bin", dir, which);
    size_t len = 0;
    char err[256];
    r->data = (float *)pf_read_file(path, &len, err, sizeof err);
    return r->data && len == total * sizeof(float) ? 0 : -1;
}

/* Every model tensor equals the reference tensor of the same name, bit for bit. */
static void compare(const char *tag, pf_model *m, const reference *r) {
    int matched = 0;
    size_t at = 0;
    for (int j = 0; j < r->n; j++) {
        for (int i = 0; i < pf_model_num_tensors(m); i++) {
            const pf_param_info *t = pf_model_tensor_info(m, i);
            if (strcmp(t->name, r->name[j]) != 0) continue;
            CHECK(t->numel == r->numel[j], "%s: %s: %zu elements, reference %zu", tag, t->name,
                  t->numel, r->numel[j]);
            if (t->numel == r->numel[j] &&
                !memcmp(pf_model_params(m) + t->offset, r->data + at, t->numel * 4))
                matched++;
            else
                fprintf(stderr, "%s: %s differs\n", tag, t->name);
        }
        at += r->numel[j];
    }
    CHECK(matched == r->n && r->n == pf_model_num_tensors(m),
          "%s: %d of %d reference tensors match (model has %d)", tag, matched, r->n,
          pf_model_num_tensors(m));
}

/* BasicSR's net_d_N.pth (which: "net_d", UNetDiscriminatorSN, or "net_d_vgg",
   VGGStyleDiscriminator with its BatchNorm buffers; num_feat 8): converted, loaded strictly
   into the step's net_d, and written back as torch's state_dict, in its order, bit for bit
   (num_batches_tracked: I64 with the reference's value). */
static void check_net_d(const pf_config *cfg, const char *src, const char *dir,
                        const char *which) {
    char cmd[2048], path[400], err[1024], names[128];
    reference r = { 0 };
    snprintf(names, sizeof names, "%s_names.txt", which);
    CHECK(read_reference(dir, names, which, &r) == 0, "%s: %s reference", dir, which);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, which);
    snprintf(cmd, sizeof cmd, PY " %s/scripts/pth2safetensors.py %s/%s.pth %s >/dev/null", src,
             dir, which, path);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    pf_model *g = pf_model_new(cfg, err, sizeof err);
    int vgg = !strcmp(which, "net_d_vgg");
    pf_gan_opts o = { .model_type = PF_GAN_MODEL_REALESRGAN, .net_d_iters = 1,
                      .gan = { .gan_type = PF_GAN_VANILLA, .real_label_val = 1,
                               .loss_weight = 1 },
                      .d_num_in_ch = 3, .d_num_feat = 8, .d_skip_connection = 1,
                      .d_type = vgg ? PF_GAN_D_VGG : PF_GAN_D_UNET_SN, .d_input_size = 128 };
    pf_gan *s = g ? pf_gan_new(&o, g, 1, err, sizeof err) : NULL;
    pf_safetensors *st = NULL, *back = NULL;
    void *buf = NULL;
    size_t len = 0;
    int rc = s && r.data ? pf_safetensors_load(path, &st, err, sizeof err) : -1;
    if (rc == 0) rc = pf_gan_d_load(s, st, err, sizeof err);
    if (rc == 0) rc = pf_gan_d_serialize(s, &buf, &len, err, sizeof err);
    if (rc == 0) rc = pf_safetensors_parse(buf, len, "net_d", &back, err, sizeof err);
    CHECK(rc == 0, "BasicSR's net_d .pth, converted: %s", err);
    int same = rc == 0 && pf_safetensors_count(back) == r.n;
    size_t at = 0;
    for (int i = 0; same && i < r.n; i++) {
        const char *name;
        int nd;
        int64_t shape[4];
        const float *v = pf_safetensors_at(back, i, &name, &nd, shape);
        int64_t count = -1;
        if (!v) pf_safetensors_get_i64(back, name, NULL, NULL, &count, 1);
        same = !strcmp(name, r.name[i]) &&
               (v ? !memcmp(v, r.data + at, r.numel[i] * sizeof(float))
                  : (float)count == r.data[at]);
        if (!same) fprintf(stderr, "%s: tensor %d: %s, torch's %s\n", which, i, name, r.name[i]);
        at += r.numel[i];
    }
    CHECK(same, "%s loaded from BasicSR's .pth is not torch's state_dict (%d tensors)", which,
          r.n);
    pf_safetensors_free(&st);
    pf_safetensors_free(&back);
    free(buf);
    free(r.data);
    pf_gan_free(&s);
    pf_model_destroy(&g);
}

int main(void) {
    if (system(PY " -c 'import torch, numpy' 2>/dev/null") != 0) {
        printf("test_pth_convert: skipped: " PY " cannot import torch and numpy\n");
        return 77;
    }
    const char *src = getenv("PF_SOURCE_DIR");
    if (!src) src = ".";
    char dir[256], cmd[2048], err[2048], want[2048];
    snprintf(dir, sizeof dir, "/tmp/pf_pth_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, PY " %s/tests/reference/make_pth_cases.py %s", src, dir);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    reference params = { 0 }, ema = { 0 };
    CHECK(read_reference(dir, "names.txt", "params", &params) == 0,
          "%s: params reference unreadable", dir);
    CHECK(read_reference(dir, "names.txt", "params_ema", &ema) == 0,
          "%s: EMA reference unreadable", dir);
    static pf_config cfg;
    pf_config_defaults(&cfg);
    snprintf(cfg.model_type, sizeof cfg.model_type, "EDSR");
    cfg.scale = 2;
    cfg.n_feats = 8;
    cfg.n_blocks = 2;
    const char *cases[] = { "basicsr", "basicsr_legacy", "mmagic" };
    for (int c = 0; c < 3 && params.data && ema.data; c++) {
        char pth[400], out[400];
        snprintf(pth, sizeof pth, "%s/%s.pth", dir, cases[c]);
        snprintf(out, sizeof out, "%s/%s.safetensors", dir, cases[c]);
        pf_safetensors *st = NULL;
        snprintf(want, sizeof want, "%s: a PyTorch .pth (torch.save) file, not safetensors; "
                 "convert it with: python3 %s/scripts/pth2safetensors.py %s OUT.safetensors "
                 "(BasicSR's params / params_ema, MMagic's state_dict; docs/models.md)", pth,
                 src, pth);
        CHECK(pf_safetensors_load(pth, &st, err, sizeof err) == -1 && !strcmp(err, want),
              "%s: '%s'", cases[c], err);
        snprintf(cmd, sizeof cmd, PY " %s/scripts/pth2safetensors.py %s %s", src, pth, out);
        CHECK(system(cmd) == 0, "%s failed", cmd);
        CHECK(pf_ckpt_check_weights(&cfg, out, err, sizeof err) == 0, "%s: %s", cases[c], err);
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s", err);
        if (!m) break;
        CHECK(pf_ckpt_load_weights(m, out, NULL, err, sizeof err) == 0, "%s: %s", cases[c], err);
        compare(cases[c], m, &params);
        int used_ema = 0;
        CHECK(pf_ckpt_load_eval_weights(m, out, &used_ema, err, sizeof err) == 0 && used_ema,
              "%s: eval weights: ema %d, %s", cases[c], used_ema, err);
        compare(cases[c], m, &ema);
        pf_model_destroy(&m);
    }
    /* --key params_ema: the EMA draw as the plain weights (to train from it) */
    snprintf(cmd, sizeof cmd, PY " %s/scripts/pth2safetensors.py --key params_ema %s/basicsr.pth "
             "%s/ema_only.safetensors >/dev/null", src, dir, dir);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    char path[400];
    snprintf(path, sizeof path, "%s/ema_only.safetensors", dir);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (m && ema.data) {
        CHECK(pf_ckpt_load_weights(m, path, NULL, err, sizeof err) == 0, "--key: %s", err);
        compare("--key params_ema", m, &ema);
    }
    pf_model_destroy(&m);
    /* a key that holds no state_dict: refused, naming the top-level keys */
    snprintf(cmd, sizeof cmd, PY " %s/scripts/pth2safetensors.py --key nothing %s/basicsr.pth "
             "%s/x.safetensors 2>/dev/null", src, dir, dir);
    CHECK(system(cmd) != 0, "--key nothing was accepted");
    check_net_d(&cfg, src, dir, "net_d");
    check_net_d(&cfg, src, dir, "net_d_vgg");
    free(params.data);
    free(ema.data);
    int rc = pf_test_end("test_pth_convert");
    if (rc == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return rc;
}
