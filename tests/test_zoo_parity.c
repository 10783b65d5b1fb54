/*  test_zoo_parity — every network of docs/models.md against PyTorch, and its weights both ways.

    Reference data: tests/data/zoo/<case>.safetensors, written by tests/reference/zoo_ref.py
    (the networks of tests/reference/zoo_archs.py, re-implementations of BasicSR's EDSR,
    MSRResNet, RCAN, RRDBNet, MMagic's SRCNNNet and yjn870's FSRCNN / ESPCN in PyTorch 1.13,
    float32). One file holds a case's config (__metadata__, PixFlow key names), its uint8
    batch (lq, gt as F32 NHWC), the weights under their reference names, and what torch
    computed: ref.out (NHWC), ref.loss, ref.grad.<name>, ref.adam_losses.

    Per case:
      - the config is the metadata written as a PixFlow YAML and parsed (so the model keys of
        common/config.c are what builds the network); pf_model_new must build it — a type
        PixFlow does not build yet fails the case, it is not skipped;
      - names and shapes: the model's tensors are exactly the file's parameters;
      - weights are copied by name into pf_model_params(); the same tensors serialised as a
        weights-only file load with pf_model_load_weights to identical bits;
      - round trip: the checkpoint writer's weights file (pf_ckpt_serialize) re-loads bit-
        identically; with one tensor renamed or one mis-shaped, pf_model_load_weights fails and
        its message names that tensor;
      - one training step: output (pf_model_train_output, and pf_model_infer image by image),
        loss and every gradient within relative error 1e-4 of torch (max |ours - torch| / max(max |torch|, 1e-6), per
        tensor); then the losses of 10 Adam steps (pf_optim, lr 1e-3, betas (0.9, 0.999), eps
        1e-8) within 1e-4 relative.
    Usage: test_zoo_parity [CASE ...] (default: every file in tests/data/zoo; ctest runs one
    entry per case). With PF_ZOO_EXPORT=DIR set, each case's checkpoint weights file and
    resolved config are written to DIR/<case>.safetensors and DIR/<case>.yaml (input for
    tests/reference/zoo_roundtrip.py).
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/safetensors.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "tests/pf_test.h"

#define TOL 1e-4
#define MAX_CASES 64

/* Hyper-parameter keys the metadata may carry: PixFlow's model.* config names. */
static const char *HP_KEYS[] = { "n_feats", "n_blocks", "num_group", "squeeze_factor",
                                 "num_grow_ch", "d", "s", "m", "res_scale", "img_range",
                                 "rgb_mean", "channels", "kernel_sizes", NULL };

/* Tensors of a reference file that are not model parameters. */
static int is_reference_only(const char *name) {
    return !strcmp(name, "lq") || !strcmp(name, "gt") || !strncmp(name, "ref.", 4);
}

static size_t numel_of(int ndim, const int64_t *shape) {
    size_t n = 1;
    for (int k = 0; k < ndim; k++) n *= (size_t)shape[k];
    return n;
}

/* max |a - b| / max(max |b|, 1e-6). */
static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0.0, den = 1e-6;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - (double)b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return num / den;
}

/* The case's config: its metadata as a PixFlow YAML, parsed. Lists "a,b,c" become [a, b, c].
   Returns 0, or -1 (reported). */
static int case_config(const char *cname, const pf_safetensors *st, pf_config *cfg) {
    const char *type = pf_safetensors_meta(st, "model_type");
    const char *scale = pf_safetensors_meta(st, "scale");
    const char *loss = pf_safetensors_meta(st, "loss_type");
    if (!type || !scale || !loss) {
        CHECK(0, "%s: metadata lacks model_type, scale or loss_type", cname);
        return -1;
    }
    char text[4096];
    int at = snprintf(text, sizeof text, "model:\n  type: %s\n  scale: %s\n", type, scale);
    for (int i = 0; HP_KEYS[i]; i++) {
        const char *v = pf_safetensors_meta(st, HP_KEYS[i]);
        if (!v) continue;
        at += snprintf(text + at, sizeof text - (size_t)at, strchr(v, ',') ? "  %s: [" : "  %s: ",
                       HP_KEYS[i]);
        for (const char *p = v; *p; p++)
            at += snprintf(text + at, sizeof text - (size_t)at, *p == ',' ? ", " : "%c", *p);
        at += snprintf(text + at, sizeof text - (size_t)at, strchr(v, ',') ? "]\n" : "\n");
    }
    int s = atoi(scale);
    snprintf(text + at, sizeof text - (size_t)at,
             "  loss: {type: %s}\ndata:\n  train: {gt_folder: a, gt_patch_size: %d}\n"
             "optimizers: {type: Adam, lr: 1.0e-3}\ntotal_iters: 10\nwork_dir: w\n",
             loss, 8 * s);
    char err[512];
    int rc = pf_config_parse(cfg, cname, text, strlen(text), 0, err, sizeof err);
    CHECK(rc == 0, "%s: config from metadata: %s\n%s", cname, err, text);
    return rc;
}

/* Every model tensor is a file parameter of the same shape and every file parameter is a
   model tensor. Returns the number of mismatches (each reported). */
static int check_names(const char *cname, const pf_model *m, const pf_safetensors *st) {
    int bad = 0, n_file = 0;
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        int ndim;
        int64_t shape[4];
        if (!pf_safetensors_get(st, t->name, &ndim, shape)) {
            CHECK(0, "%s: model tensor %s is not in the reference", cname, t->name);
            bad++;
            continue;
        }
        int same = ndim == t->ndim;
        for (int k = 0; same && k < ndim; k++) same = shape[k] == t->shape[k];
        CHECK(same, "%s: %s: shape differs from the reference (ndim %d vs %d; dim 0 %lld vs %lld)",
              cname, t->name, t->ndim, ndim, (long long)t->shape[0], (long long)shape[0]);
        bad += !same;
    }
    for (int j = 0; j < pf_safetensors_count(st); j++) {
        const char *name;
        pf_safetensors_at(st, j, &name, NULL, NULL);
        if (is_reference_only(name)) continue;
        n_file++;
        int known = 0;
        for (int i = 0; i < pf_model_num_tensors(m) && !known; i++)
            known = !strcmp(pf_model_tensor_info(m, i)->name, name);
        CHECK(known, "%s: reference parameter %s is not a model tensor", cname, name);
        bad += !known;
    }
    CHECK(n_file == pf_model_num_tensors(m), "%s: %d reference parameters, model has %d", cname,
          n_file, pf_model_num_tensors(m));
    return bad + (n_file != pf_model_num_tensors(m));
}

/* Load the serialised buffer into `m` with pf_model_load_weights. Returns its result, err set. */
static int load_buffer(pf_model *m, const void *buf, size_t len, char *err, size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_parse(buf, len, "weights", &st, err, errlen)) return -1;
    int rc = pf_model_load_weights(m, st, err, errlen);
    pf_safetensors_free(&st);
    return rc;
}

/* Serialise `t` (no metadata) and load it into `m`. Returns pf_model_load_weights's result. */
static int load_tensors(pf_model *m, const pf_st_tensor *t, int n, char *err, size_t errlen) {
    void *buf = NULL;
    size_t len = 0;
    if (pf_safetensors_serialize(t, n, NULL, 0, &buf, &len, err, errlen)) return -1;
    int rc = load_buffer(m, buf, len, err, errlen);
    free(buf);
    return rc;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, len, f) == len, "write %s", path);
    if (f) fclose(f);
}

/* Weights both ways: a weights-only file of the reference tensors, the checkpoint writer's
   file, and two broken files. `m` holds the reference weights; `m2` is a second instance. */
static void check_weights_files(const char *cname, const pf_config *cfg, pf_model *m,
                                pf_model *m2, const pf_safetensors *ref) {
    char err[4096];
    size_t bytes = pf_model_num_params(m) * sizeof(float);
    int n = pf_model_num_tensors(m);
    pf_st_tensor *t = calloc((size_t)n, sizeof *t);
    int k = 0;
    for (int j = 0; j < pf_safetensors_count(ref) && k < n; j++) {
        const char *name;
        const float *d = pf_safetensors_at(ref, j, &name, &t[k].ndim, t[k].shape);
        if (is_reference_only(name)) continue;
        t[k].name = name;
        t[k++].data = d;
    }
    memset(pf_model_params(m2), 0, bytes);
    CHECK(load_tensors(m2, t, k, err, sizeof err) == 0, "%s: weights-only file: %s", cname, err);
    CHECK(!memcmp(pf_model_params(m), pf_model_params(m2), bytes),
          "%s: pf_model_load_weights differs from the copy by name", cname);

    /* The checkpoint writer's weights file re-loads bit-identically. */
    void *wbuf = NULL;
    size_t wlen = 0;
    CHECK(pf_ckpt_serialize(cfg, m, NULL, 0, 0, 0.0, &wbuf, &wlen, NULL, NULL, err,
                             sizeof err) == 0, "%s: pf_ckpt_serialize: %s", cname, err);
    memset(pf_model_params(m2), 0, bytes);
    CHECK(wbuf && load_buffer(m2, wbuf, wlen, err, sizeof err) == 0, "%s: checkpoint: %s", cname,
          err);
    CHECK(!memcmp(pf_model_params(m), pf_model_params(m2), bytes),
          "%s: checkpoint weights do not round-trip bit-identically", cname);
    const char *dir = getenv("PF_ZOO_EXPORT");
    if (dir && wbuf) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, cname);
        write_file(path, wbuf, wlen);
        char *yaml = pf_config_to_yaml(cfg);
        snprintf(path, sizeof path, "%s/%s.yaml", dir, cname);
        if (yaml) write_file(path, yaml, strlen(yaml));
        free(yaml);
    }
    free(wbuf);

    /* From PyTorch: tests/data/zoo_torch/<case>.safetensors, when present, is the module's
       state_dict as torch wrote it (tests/reference/zoo_roundtrip.py -o, after
       load_state_dict(strict=True) of this case's weights): `load_from`'s path must take it
       and give the same bits. */
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/zoo_torch/%s.safetensors", pf_test_data(), cname);
    if (access(tpath, F_OK) == 0) {
        pf_safetensors *ts = NULL;
        CHECK(pf_safetensors_load(tpath, &ts, err, sizeof err) == 0, "%s", err);
        memset(pf_model_params(m2), 0, bytes);
        CHECK(ts && pf_model_load_weights(m2, ts, err, sizeof err) == 0, "%s: %s: %s", cname,
              tpath, err);
        CHECK(!memcmp(pf_model_params(m), pf_model_params(m2), bytes),
              "%s: weights written by torch load with different bits", cname);
        printf("%s: weights written by PyTorch (%s) load bit-identically\n", cname, tpath);
        pf_safetensors_free(&ts);
    }

    /* One tensor renamed (the last: a bias or a PReLU slope), then one mis-shaped (the first,
       flattened to 1-D): refused, and the message names it. */
    char renamed[160], want[320];
    const char *victim = t[k - 1].name;
    snprintf(renamed, sizeof renamed, "%s_renamed", victim);
    t[k - 1].name = renamed;
    int rc = load_tensors(m2, t, k, err, sizeof err);
    snprintf(want, sizeof want, "missing '%s'", victim);
    CHECK(rc == -1 && strstr(err, want), "%s: renamed %s: rc %d, '%s'", cname, victim, rc, err);
    snprintf(want, sizeof want, "unexpected '%s'", renamed);
    CHECK(rc == -1 && strstr(err, want), "%s: renamed: '%s' does not say %s", cname, err, want);
    t[k - 1].name = victim;
    pf_st_tensor keep = t[0];
    t[0].shape[0] = (int64_t)numel_of(t[0].ndim, t[0].shape);
    t[0].ndim = t[0].ndim == 1 ? 2 : 1;
    if (t[0].ndim == 2) t[0].shape[1] = 1;
    rc = load_tensors(m2, t, k, err, sizeof err);
    snprintf(want, sizeof want, "1 mis-shaped, 0 missing, 0 unexpected; %s: checkpoint [",
             t[0].name);
    CHECK(rc == -1 && strstr(err, want), "%s: mis-shaped %s: rc %d, '%s'", cname, t[0].name, rc,
          err);
    t[0] = keep;
    free(t);
}

/* The training step and 10 Adam steps against torch. `m` holds the reference weights. */
static void check_training(const char *cname, pf_model *m, const pf_safetensors *ref) {
    int ndim;
    int64_t lq_shape[4], gt_shape[4], out_shape[4];
    const float *lqf = pf_safetensors_get(ref, "lq", &ndim, lq_shape);
    const float *gtf = pf_safetensors_get(ref, "gt", NULL, gt_shape);
    const float *ref_out = pf_safetensors_get(ref, "ref.out", NULL, out_shape);
    const float *ref_loss = pf_safetensors_get(ref, "ref.loss", NULL, NULL);
    const float *ref_adam = pf_safetensors_get(ref, "ref.adam_losses", NULL, NULL);
    if (!lqf || ndim != 4 || !gtf || !ref_out || !ref_loss || !ref_adam) {
        CHECK(0, "%s: reference lacks lq, gt or ref.*", cname);
        return;
    }
    int n = (int)lq_shape[0], h = (int)lq_shape[1], w = (int)lq_shape[2];
    size_t n_lq = numel_of(4, lq_shape), n_gt = numel_of(4, gt_shape);
    size_t n_out = numel_of(4, out_shape);
    uint8_t *lq = malloc(n_lq), *gt = malloc(n_gt);
    float *out = malloc(n_out * sizeof(float));
    for (size_t i = 0; i < n_lq; i++) lq[i] = (uint8_t)lqf[i];
    for (size_t i = 0; i < n_gt; i++) gt[i] = (uint8_t)gtf[i];

    char err[512], worst_name[128] = "ref.out";
    float loss = 0.0f;
    int rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
    CHECK(rc == 0, "%s: train_step: %s", cname, err);
    if (rc) {
        free(lq);
        free(gt);
        free(out);
        return;
    }
    float first_loss = loss;
    CHECK(pf_model_train_output(m, n, out) == 0, "%s: train_output", cname);
    double worst = rel_err(out, ref_out, n_out);
    CHECK(worst <= TOL, "%s: output: relative error %.3g", cname, worst);
    double e = rel_err(&loss, ref_loss, 1);
    CHECK(e <= TOL, "%s: loss %.8g vs torch %.8g", cname, loss, ref_loss[0]);
    if (e > worst) {
        worst = e;
        snprintf(worst_name, sizeof worst_name, "ref.loss");
    }
    float *params = pf_model_params(m), *grads = pf_model_grads(m);
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        char key[128];
        snprintf(key, sizeof key, "ref.grad.%s", t->name);
        int gd;
        int64_t gs[4];
        const float *g = pf_safetensors_get(ref, key, &gd, gs);
        if (!g || numel_of(gd, gs) != t->numel) {
            CHECK(0, "%s: %s missing or mis-sized in the reference", cname, key);
            continue;
        }
        e = rel_err(grads + t->offset, g, t->numel);
        CHECK(e <= TOL, "%s: gradient of %s: relative error %.3g", cname, t->name, e);
        if (e > worst) {
            worst = e;
            snprintf(worst_name, sizeof worst_name, "%s", key);
        }
    }

    /* The inference path (one image at a time) gives the same output. */
    size_t per = n_out / (size_t)n;
    for (int i = 0; i < n; i++) {
        rc = pf_model_infer(m, lq + (size_t)i * h * w * 3, h, w, out, err, sizeof err);
        CHECK(rc == 0, "%s: infer: %s", cname, err);
        e = rc ? 1.0 : rel_err(out, ref_out + (size_t)i * per, per);
        CHECK(e <= TOL, "%s: inference of image %d: relative error %.3g", cname, i, e);
        if (e > worst) {
            worst = e;
            snprintf(worst_name, sizeof worst_name, "ref.out (inference, image %d)", i);
        }
    }

    pf_optim adam;
    pf_optim_settings s = { .kind = PF_OPTIM_ADAM, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f };
    CHECK(pf_optim_init(&adam, pf_model_num_params(m), &s) == 0, "out of memory");
    double worst_adam = 0.0;
    for (int k = 0; k < 10; k++) {
        if (k > 0) {
            rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
            CHECK(rc == 0, "%s: train_step %d: %s", cname, k, err);
            if (rc) break;
        }
        e = rel_err(&loss, &ref_adam[k], 1);
        CHECK(e <= TOL, "%s: loss after %d Adam steps %.8g vs torch %.8g", cname, k, loss,
              ref_adam[k]);
        worst_adam = fmax(worst_adam, e);
        pf_optim_step(&adam, params, grads, 1e-3f);
    }
    pf_optim_free(&adam);
    free(lq);
    free(gt);
    free(out);
    printf("%s: loss %.8f (torch %.8f); worst relative error %.3g (%s); 10 Adam steps: loss "
           "%.8f (torch %.8f), worst relative error %.3g\n", cname, first_loss,
           ref_loss[0], worst, worst_name, loss, ref_adam[9], worst_adam);
}

static void run_case(const char *cname) {
    char path[1024], err[4096];
    snprintf(path, sizeof path, "%s/zoo/%s.safetensors", pf_test_data(), cname);
    pf_safetensors *ref = NULL;
    if (pf_safetensors_load(path, &ref, err, sizeof err)) {
        CHECK(0, "%s: %s", cname, err);
        return;
    }
    static pf_config cfg;
    pf_model *m = NULL, *m2 = NULL;
    if (case_config(cname, ref, &cfg)) goto done;
    m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s: PixFlow does not build %s x%d: %s", cname, cfg.model_type, cfg.scale,
          err);
    m2 = m ? pf_model_new(&cfg, err, sizeof err) : NULL;
    if (!m || !m2 || check_names(cname, m, ref)) goto done;
    for (int i = 0; i < pf_model_num_tensors(m); i++) {
        const pf_param_info *t = pf_model_tensor_info(m, i);
        const float *d = pf_safetensors_get(ref, t->name, NULL, NULL);
        memcpy(pf_model_params(m) + t->offset, d, t->numel * sizeof(float));
    }
    check_weights_files(cname, &cfg, m, m2, ref);
    check_training(cname, m, ref);
done:
    pf_model_destroy(&m);
    pf_model_destroy(&m2);
    pf_safetensors_free(&ref);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        for (int i = 1; i < argc; i++) run_case(argv[i]);
        return pf_test_end("test_zoo_parity");
    }
    char dir[1024], *names[MAX_CASES];
    int n = 0;
    snprintf(dir, sizeof dir, "%s/zoo", pf_test_data());
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    for (struct dirent *e; d && (e = readdir(d)) && n < MAX_CASES;) {
        size_t len = strlen(e->d_name), ext = strlen(".safetensors");
        if (len > ext && !strcmp(e->d_name + len - ext, ".safetensors"))
            names[n++] = strndup(e->d_name, len - ext);
    }
    if (d) closedir(d);
    CHECK(n >= 11, "%d reference cases in %s, expected at least 11", n, dir);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++) {
        run_case(names[i]);
        free(names[i]);
    }
    return pf_test_end("test_zoo_parity");
}
