/*  test_state_dict — every network's checkpoint key list (parameters and buffers, in
    state_dict order) against the reference classes, and buffers both ways.

    BasicSR's SpyNet registers `mean` and `std` as buffers (spynet_arch.py:
    register_buffer('mean', Tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)), likewise std
    [0.229, 0.224, 0.225]), so they are in BasicVSR's state_dict, before the SpyNet convs (a
    module's own parameters and buffers come before its children's); EDSR and RCAN keep their
    rgb_mean as a plain attribute (edsr_arch.py, rcan_arch.py: `self.mean = torch.Tensor(...)`),
    so theirs is not in the state_dict. A checkpoint that lacks the buffers does not load into
    BasicSR's BasicVSR with strict=True, and a state_dict saved from it did not load into
    PixFlow (issue 33).

    Without arguments (no PyTorch needed), per network:
      - the checkpoint writer's weights file holds the parameters and the buffers: BasicVSR's
        first three keys are spynet.mean, spynet.std, spynet.basic_module.0.basic_module.0.weight
        with BasicSR's values and shape (1, 3, 1, 1), the EMA copy likewise under params_ema.;
        the image networks have no buffer;
      - it loads back (pf_model_load_weights) to the same bits;
      - a spynet.mean (or params_ema.spynet.std) with other values is refused, the message
        naming the buffer and both values; a mis-shaped spynet.mean is refused as mis-shaped;
      - a file without the buffers (PixFlow's checkpoints before them) still loads.
    With `torch` (ctest test_state_dict.torch; 77 without /usr/bin/python3 and torch): the same
    checkpoints go to tests/reference/state_dict_check.py, which requires their key lists in
    file order to equal the zoo_archs modules' state_dict().keys() and loads them with
    load_state_dict(strict=True); the state_dict of a fresh torch module it writes back (buffers
    included) must load here with its bits.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/optim.h"
#include "tests/pf_test.h"

#define PY "/usr/bin/python3"

typedef struct {
    const char *name;
    const char *type;
    int scale;
    int n_feats, n_blocks;      /* 0: the type's default */
    int n_buffers;              /* what the reference's state_dict holds beyond parameters */
} zoo_case;

/* Small widths so each case builds in milliseconds; every model.type of docs/models.md. */
static const zoo_case CASES[] = {
    { "srcnn_x3", "SRCNN", 3, 0, 0, 0 },
    { "fsrcnn_x2", "FSRCNN", 2, 0, 0, 0 },
    { "espcn_x4", "ESPCN", 4, 0, 0, 0 },
    { "edsr_x3", "EDSR", 3, 8, 2, 0 },
    { "msrresnet_x4", "MSRResNet", 4, 8, 2, 0 },
    { "rcan_x2", "RCAN", 2, 16, 1, 0 },
    { "rrdbnet_x2", "RRDBNet", 2, 8, 1, 0 },
    { "basicvsr", "BasicVSR", 4, 4, 1, 2 },
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

static void case_config(const zoo_case *c, pf_config *cfg) {
    pf_config_defaults(cfg);
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", c->type);
    cfg->scale = c->scale;
    if (c->n_feats) cfg->n_feats = c->n_feats;
    if (c->n_blocks) cfg->n_blocks = c->n_blocks;
    if (!strcmp(c->type, "RCAN")) {
        cfg->num_group = 2;
        cfg->squeeze_factor = 4;
    }
    if (!strcmp(c->type, "RRDBNet")) cfg->num_grow_ch = 4;
    if (!strcmp(c->type, "BasicVSR")) {
        cfg->train.present = 1;
        snprintf(cfg->train.type, sizeof cfg->train.type, "REDSRecurrentDataset");
        cfg->train.num_frame = 2;
    }
}

/* The checkpoint writer's weights file for m, with an EMA copy (EMA = 0.5 x the weights, so
   the two differ). Returns the malloc'd buffer, or NULL (reported). */
static void *checkpoint(const pf_config *cfg, pf_model *m, size_t *len) {
    pf_optim o;
    pf_optim_settings s = { .kind = PF_OPTIM_ADAM, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f };
    size_t n = pf_model_num_params(m);
    void *w = NULL, *ob = NULL;
    size_t olen = 0;
    char err[512];
    if (pf_optim_init(&o, n, &s) || pf_optim_ema_init(&o, 0.999f, pf_model_params(m))) {
        CHECK(0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) o.ema[i] *= 0.5f;
    int rc = pf_ckpt_serialize(cfg, m, &o, 7, 0, 1e-4, &w, len, &ob, &olen, err, sizeof err);
    CHECK(rc == 0, "%s: pf_ckpt_serialize: %s", cfg->model_type, err);
    free(ob);
    pf_optim_free(&o);
    return rc == 0 ? w : NULL;
}

/* Whether name ends with suffix ("" never). */
static int ends_with(const char *name, const char *suffix) {
    size_t n = strlen(name), k = strlen(suffix);
    return k && n >= k && !strcmp(name + n - k, suffix);
}

/* A copy of st's tensors: those ending in drop or drop2 left out ("": none), `change` with
   value[0] + 1, `reshape` flattened to 1-D; serialised and parsed. NULL on failure
   (reported). */
static pf_safetensors *variant(const pf_safetensors *st, const char *drop, const char *drop2,
                               const char *change, const char *reshape) {
    int n = pf_safetensors_count(st), k = 0;
    pf_st_tensor *t = calloc((size_t)n + 1, sizeof *t);
    float *changed = NULL;
    for (int i = 0; t && i < n; i++) {
        const char *name;
        int ndim;
        int64_t shape[4];
        const float *d = pf_safetensors_at(st, i, &name, &ndim, shape);
        if (ends_with(name, drop) || ends_with(name, drop2)) continue;
        t[k] = (pf_st_tensor){ .name = name, .data = d, .ndim = ndim };
        memcpy(t[k].shape, shape, sizeof shape);
        size_t numel = 1;
        for (int j = 0; j < ndim; j++) numel *= (size_t)shape[j];
        if (!strcmp(name, change)) {
            changed = malloc(numel * sizeof *changed);
            if (!changed) break;
            memcpy(changed, d, numel * sizeof *changed);
            changed[0] += 1.0f;
            t[k].data = changed;
        }
        if (!strcmp(name, reshape)) {
            t[k].ndim = 1;
            t[k].shape[0] = (int64_t)numel;
        }
        k++;
    }
    void *buf = NULL;
    size_t len = 0;
    char err[512];
    pf_safetensors *out = NULL;
    int rc = t ? pf_safetensors_serialize(t, k, NULL, 0, &buf, &len, err, sizeof err) : -1;
    if (rc == 0) rc = pf_safetensors_parse(buf, len, "variant.safetensors", &out, err, sizeof err);
    CHECK(rc == 0, "variant: %s", err);
    free(buf);
    free(changed);
    free(t);
    return out;
}

/* m's parameters equal st's tensors of the same names bit for bit. */
static int same_bits(pf_model *m, const pf_safetensors *st, const char *prefix) {
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *p = pf_model_tensor_info(m, i);
        char name[160];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const float *d = pf_safetensors_get(st, name, NULL, NULL);
        if (!d || memcmp(d, pf_model_params(m) + p->offset, p->numel * sizeof(float))) return 0;
    }
    return 1;
}

/* The buffer checks of one BasicVSR checkpoint `st` into model m. */
static void check_buffers(pf_model *m, const pf_safetensors *st) {
    static const float mean[3] = { 0.485f, 0.456f, 0.406f }, std[3] = { 0.229f, 0.224f, 0.225f };
    const char *name;
    int ndim;
    int64_t shape[4];
    const float *d = pf_safetensors_at(st, 0, &name, &ndim, shape);
    CHECK(d && !strcmp(name, "spynet.mean") && ndim == 4 && shape[0] == 1 && shape[1] == 3 &&
          shape[2] == 1 && shape[3] == 1 && !memcmp(d, mean, sizeof mean),
          "key 0 is BasicSR's spynet.mean (1, 3, 1, 1) = ImageNet's mean: got '%s'",
          d ? name : "(none)");
    d = pf_safetensors_at(st, 1, &name, &ndim, shape);
    CHECK(d && !strcmp(name, "spynet.std") && ndim == 4 && !memcmp(d, std, sizeof std),
          "key 1 is spynet.std = ImageNet's std: got '%s'", d ? name : "(none)");
    d = pf_safetensors_at(st, 2, &name, NULL, NULL);
    CHECK(d && !strcmp(name, "spynet.basic_module.0.basic_module.0.weight"),
          "key 2 is the first SpyNet conv: got '%s'", d ? name : "(none)");
    CHECK(pf_safetensors_get(st, "params_ema.spynet.mean", NULL, NULL) &&
              pf_safetensors_get(st, "params_ema.spynet.std", NULL, NULL),
          "the EMA copy holds the buffers too");

    char err[2048];
    struct {
        const char *change, *reshape, *want;
    } bad[] = {
        { "spynet.mean", "", "buffer spynet.mean: checkpoint [1.485, 0.456, 0.406], the "
                               "network uses [0.485, 0.456, 0.406]" },
        { "params_ema.spynet.std", "", "buffer params_ema.spynet.std: checkpoint [1.229" },
        { "", "spynet.mean", "1 mis-shaped, 0 missing, 0 unexpected; spynet.mean: "
                                 "checkpoint [3], config wants [1, 3, 1, 1]" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pf_safetensors *v = variant(st, "", "", bad[i].change, bad[i].reshape);
        err[0] = 0;
        int rc = v ? pf_model_load_weights(m, v, err, sizeof err) : 0;
        CHECK(rc == -1 && strstr(err, bad[i].want), "refused, saying '%s': rc %d, '%s'",
              bad[i].want, rc, err);
        if (i == 0) printf("a spynet.mean of other values is refused: %s\n", err);
        pf_safetensors_free(&v);
    }
    /* PixFlow's checkpoints before the buffers were written: no spynet.mean/std at all */
    pf_safetensors *v = variant(st, "spynet.mean", "spynet.std", "", "");
    int rc = v ? pf_model_load_weights(m, v, err, sizeof err) : -1;
    CHECK(rc == 0 && !pf_safetensors_get(v, "spynet.mean", NULL, NULL) &&
              !pf_safetensors_get(v, "params_ema.spynet.std", NULL, NULL) && same_bits(m, v, ""),
          "a file without the buffers loads: %s", rc ? err : "");
    pf_safetensors_free(&v);
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* One case; with dir, also its weights file and config for the PyTorch side. */
static void check_case(const zoo_case *c, const char *dir) {
    pf_config cfg;
    case_config(c, &cfg);
    char err[1024];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s: pf_model_new: %s", c->name, err);
    if (!m) return;
    pf_model_init(m, 5);
    size_t len = 0;
    void *w = checkpoint(&cfg, m, &len);
    pf_safetensors *st = NULL;
    if (w) CHECK(pf_safetensors_parse(w, len, c->name, &st, err, sizeof err) == 0, "%s", err);
    if (!st) {
        free(w);
        pf_model_destroy(&m);
        return;
    }
    int nt = pf_model_num_tensors(m);
    CHECK(pf_model_num_buffers(m) == c->n_buffers, "%s: %d buffers, the reference has %d",
          c->name, pf_model_num_buffers(m), c->n_buffers);
    CHECK(pf_safetensors_count(st) == 2 * (nt + c->n_buffers),
          "%s: %d tensors in the file, want 2 x (%d parameters + %d buffers)", c->name,
          pf_safetensors_count(st), nt, c->n_buffers);
    CHECK(same_bits(m, st, "") && pf_model_load_weights(m, st, err, sizeof err) == 0 &&
              same_bits(m, st, ""),
          "%s: the checkpoint loads back to the same bits: %s", c->name, err);
    if (c->n_buffers) check_buffers(m, st);
    printf("%s: %d parameter tensors + %d buffers written and loaded back\n", c->name, nt,
           c->n_buffers);
    if (dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, c->name);
        CHECK(write_file(path, w, len) == 0, "cannot write %s", path);
        char *yaml = pf_config_to_yaml(&cfg);
        snprintf(path, sizeof path, "%s/%s.yaml", dir, c->name);
        CHECK(yaml && write_file(path, yaml, strlen(yaml)) == 0, "cannot write %s", path);
        free(yaml);
    }
    pf_safetensors_free(&st);
    free(w);
    pf_model_destroy(&m);
}

/* A torch-written state_dict (DIR/CASE.torch.safetensors) loads with its bits. */
static void check_from_torch(const zoo_case *c, const char *dir) {
    pf_config cfg;
    case_config(c, &cfg);
    char err[1024], path[1024];
    snprintf(path, sizeof path, "%s/%s.torch.safetensors", dir, c->name);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    pf_safetensors *st = NULL;
    CHECK(m && pf_safetensors_load(path, &st, err, sizeof err) == 0, "%s: %s", path, err);
    if (m && st) {
        int rc = pf_model_load_weights(m, st, err, sizeof err);
        CHECK(rc == 0 && same_bits(m, st, ""), "%s: torch's state_dict does not load: %s",
              c->name, err);
        if (rc == 0) printf("%s: the state_dict of torch's module (%d tensors) loads\n", c->name,
                            pf_safetensors_count(st));
    }
    pf_safetensors_free(&st);
    pf_model_destroy(&m);
}

static int with_torch(void) {
    if (access(PY, X_OK) != 0 || system(PY " -c 'import torch, yaml' 2>/dev/null") != 0) {
        printf("test_state_dict torch: SKIPPED: no %s with torch and yaml (scripts/setup.sh "
               "--ref-deps)\n", PY);
        return 77;
    }
    char dir[] = "/tmp/pf_state_dict.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < N_CASES; i++) check_case(&CASES[i], dir);
    const char *src = getenv("PF_SOURCE_DIR");
    char cmd[4096];
    int at = snprintf(cmd, sizeof cmd, PY " %s/tests/reference/state_dict_check.py %s",
                      src ? src : ".", dir);
    for (int i = 0; i < N_CASES; i++)
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %s", CASES[i].name);
    fflush(stdout);
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: exit status %d", cmd,
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        for (int i = 0; i < N_CASES; i++) check_from_torch(&CASES[i], dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return pf_test_end("test_state_dict torch");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) return with_torch();
    for (int i = 0; i < N_CASES; i++) check_case(&CASES[i], NULL);
    return pf_test_end("test_state_dict");
}
