/*  test_optim — nn/optim against torch 1.13 and against its own invariants.

    Reference: tests/data/optim_ref.txt, written by tests/reference/optim_ref.py (torch.optim
    Adam / AdamW / SGD with param groups for lr_mult and decay_mult, clip_grad_norm_, BasicSR's
    EMA). For each case the same 10 steps run here, with one pf_optim_group per tensor; params,
    EMA, the clipping norms and the optimiser state must match torch within 1e-6 relative (per
    tensor: max |ours - torch| <= 1e-6 max |torch|; exp_avg_sq 3e-5, see test_case). The
    frozen tensor (lr_mult 0) and its EMA must stay bit-identical to the start. Also: MMCV's longest-substring rule for custom keys,
    and the checkpoint round trip of each optimiser's state and the EMA (worker/train_state),
    also from the description and a host buffer alone, as the worker on a GPU holds them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/config.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "tests/pf_test.h"
#include "worker/train_state.h"

enum { N = 12, STEPS = 10, MAXV = 16 };
static const size_t SIZES[3] = { 5, 4, 3 };
static const float LR_MULT[3] = { 1.0f, 0.5f, 0.0f }, DECAY_MULT[3] = { 1.0f, 2.0f, 0.0f };

typedef struct {
    const char *name;
    pf_optim_settings s;
    float max_norm, ema_decay;
} optim_case;

static const optim_case CASES[] = {
    { "adam", { PF_OPTIM_ADAM, 0.9f, 0.999f, 1e-8f, 0.01f, 0, 0, 0 }, 1.5f, 0.9f },
    { "adamw", { PF_OPTIM_ADAMW, 0.8f, 0.99f, 1e-6f, 0.05f, 0, 0, 0 }, 0.0f, 0.99f },
    { "sgd", { PF_OPTIM_SGD, 0, 0, 0, 1e-3f, 0.9f, 0.1f, 0 }, 1.0f, 0.0f },
    { "sgd_nesterov", { PF_OPTIM_SGD, 0, 0, 0, 1e-2f, 0.8f, 0, 1 }, 0.0f, 0.5f },
    { "sgd_plain", { PF_OPTIM_SGD, 0, 0, 0, 0, 0, 0, 0 }, 2.0f, 0.0f },
};

/* One case's lines of the reference file: name -> up to MAXV floats. */
typedef struct {
    char names[32][24];
    float v[32][MAXV];
    int n[32], count;
} ref_case;

static const float *ref_get(const ref_case *r, const char *name, int want) {
    for (int i = 0; i < r->count; i++)
        if (!strcmp(r->names[i], name)) {
            CHECK(r->n[i] == want, "%s: %d values, expected %d", name, r->n[i], want);
            return r->n[i] == want ? r->v[i] : NULL;
        }
    return NULL;
}

/* Read the block of case `name` from the reference file. Returns 0 or -1. */
static int ref_load(const char *name, ref_case *r) {
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/optim_ref.txt", pf_test_data());
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(r, 0, sizeof *r);
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        char word[64];
        if (sscanf(line, "%63s", word) != 1 || word[0] == '#') continue;
        if (!strcmp(word, "case")) {
            char cname[64];
            if (in) break;
            in = sscanf(line, "case %63s", cname) == 1 && !strcmp(cname, name);
            continue;
        }
        if (!in || r->count == 32) continue;
        snprintf(r->names[r->count], sizeof r->names[0], "%s", word);
        char *p = line + strlen(word), *end;
        int k = 0;
        for (float x = strtof(p, &end); end != p && k < MAXV; x = strtof(p, &end)) {
            r->v[r->count][k++] = x;
            p = end;
        }
        r->n[r->count++] = k;
    }
    fclose(f);
    return r->count ? 0 : -1;
}

/* Per tensor: max |a - b| <= tol * max |b| (exactly equal when b is all zero). */
static void check_close(const char *what, const char *cname, const float *a, const float *b,
                        double tol) {
    size_t off = 0;
    for (int t = 0; t < 3; t++) {
        double err = 0, mag = 0;
        for (size_t i = off; i < off + SIZES[t]; i++) {
            err = fmax(err, fabs((double)a[i] - b[i]));
            mag = fmax(mag, fabs((double)b[i]));
        }
        CHECK(err <= tol * mag, "%s: %s tensor %d: max error %.3g, max |torch| %.3g", cname,
              what, t, err, mag);
        off += SIZES[t];
    }
}

static void test_case(const optim_case *c) {
    ref_case r;
    if (ref_load(c->name, &r) != 0) {
        CHECK(0, "%s: reference data missing", c->name);
        return;
    }
    const float *init = ref_get(&r, "init", N), *lrs = ref_get(&r, "lr", STEPS);
    const float *want_p = ref_get(&r, "params", N), *want_ema = ref_get(&r, "ema", N);
    if (!init || !lrs || !want_p || !want_ema) {
        CHECK(0, "%s: reference incomplete", c->name);
        return;
    }
    pf_optim o;
    CHECK(pf_optim_init(&o, N, &c->s) == 0, "init");
    pf_optim_group g[3];
    size_t off = 0;
    for (int t = 0; t < 3; t++) {
        g[t] = (pf_optim_group){ off, SIZES[t], LR_MULT[t], DECAY_MULT[t], 0 };
        off += SIZES[t];
    }
    CHECK(pf_optim_set_groups(&o, g, 3) == 0, "groups");
    float p[N];
    memcpy(p, init, sizeof p);
    if (c->ema_decay > 0) CHECK(pf_optim_ema_init(&o, c->ema_decay, p) == 0, "ema");
    float norms[STEPS];
    for (int t = 0; t < STEPS; t++) {
        char key[16];
        snprintf(key, sizeof key, "grad_%d", t + 1);
        const float *gr = ref_get(&r, key, N);
        if (!gr) {
            CHECK(0, "%s: %s missing", c->name, key);
            break;
        }
        float grad[N];
        memcpy(grad, gr, sizeof grad);
        if (c->max_norm > 0) norms[t] = (float)pf_clip_grad_norm(grad, N, c->max_norm);
        pf_optim_step(&o, p, grad, lrs[t]);
    }
    CHECK(o.step == STEPS, "%s: step %lld", c->name, (long long)o.step);
    check_close("params", c->name, p, want_p, 1e-6);
    if (c->ema_decay > 0) check_close("ema", c->name, o.ema, want_ema, 1e-6);
    if (c->max_norm > 0) {
        const float *want_n = ref_get(&r, "norm", STEPS);
        for (int t = 0; want_n && t < STEPS; t++)
            CHECK(fabs(norms[t] - want_n[t]) <= 1e-6 * want_n[t], "%s: norm %d: %.9g vs %.9g",
                  c->name, t + 1, norms[t], want_n[t]);
    }
    const char *state_names[3] = { "exp_avg", "exp_avg_sq", "momentum_buffer" };
    float *state[3] = { o.exp_avg, o.exp_avg_sq, o.momentum_buffer };
    for (int k = 0; k < 3; k++) {
        const float *want = ref_get(&r, state_names[k], N);
        CHECK(!want == !state[k], "%s: %s %s", c->name, state_names[k],
              state[k] ? "not in the reference" : "missing here");
        /* exp_avg_sq: 1e-6 would fail. betas are float32 in pf_config and Adam keeps the
           update bit-identical to PixFlow's earlier one, 1 - beta2 in float; torch takes
           1 - 0.999 in double (the Python float), 1.3e-5 relative apart. The parameters
           see it only through sqrt(v) and stay within 1e-6. */
        double tol = k == 1 ? 3e-5 : 1e-6;
        if (want && state[k]) check_close(state_names[k], c->name, state[k], want, tol);
    }
    /* lr_mult 0: the frozen tensor and its EMA are exactly the start values. */
    size_t f0 = SIZES[0] + SIZES[1];
    CHECK(memcmp(p + f0, init + f0, SIZES[2] * sizeof(float)) == 0, "%s: frozen tensor moved",
          c->name);
    if (o.ema)
        CHECK(memcmp(o.ema + f0, init + f0, SIZES[2] * sizeof(float)) == 0,
              "%s: EMA of the frozen tensor drifted", c->name);
    pf_optim_free(&o);
}

/* No groups = one group with multipliers 1, bit-identical to groups of multiplier 1. */
static void test_default_group(void) {
    pf_optim_settings s = { PF_OPTIM_ADAMW, 0.9f, 0.999f, 1e-8f, 0.1f, 0, 0, 0 };
    pf_optim a, b;
    CHECK(pf_optim_init(&a, N, &s) == 0 && pf_optim_init(&b, N, &s) == 0, "init");
    pf_optim_group g[2] = { { 0, 7, 1.0f, 1.0f, 0 }, { 7, 5, 1.0f, 1.0f, 0 } };
    pf_optim_group bad[2] = { { 0, 7, 1.0f, 1.0f, 0 }, { 7, 4, 1.0f, 1.0f, 0 } };
    CHECK(pf_optim_set_groups(&b, bad, 2) == -1, "groups that leave a gap are refused");
    CHECK(pf_optim_set_groups(&b, g, 2) == 0, "groups");
    float pa[N], pb[N], gr[N];
    for (int i = 0; i < N; i++) pa[i] = pb[i] = 0.1f * (float)(i - 5), gr[i] = 0.03f * (float)i;
    for (int t = 0; t < 3; t++) {
        pf_optim_step(&a, pa, gr, 1e-3f);
        pf_optim_step(&b, pb, gr, 1e-3f);
    }
    CHECK(memcmp(pa, pb, sizeof pa) == 0, "one group == groups of multiplier 1");
    pf_optim_free(&a);
    pf_optim_free(&b);
    /* Clipping below max_norm leaves the gradients alone. */
    float g2[2] = { 3.0f, 4.0f };
    CHECK_NEAR(pf_clip_grad_norm(g2, 2, 10.0f), 5.0, 1e-6);
    CHECK(g2[0] == 3.0f && g2[1] == 4.0f, "no clipping under max_norm");
    CHECK_NEAR(pf_clip_grad_norm(g2, 2, 1.0f), 5.0, 1e-6);
    CHECK_NEAR(g2[0], 0.6, 1e-6);
    CHECK_NEAR(g2[1], 0.8, 1e-6);
}

/* A group that joins at step `start` (BasicVSR's fix_iter) behaves as torch's parameters
   without a gradient until then: untouched, and from step start + 1 on exactly as a fresh
   optimiser over that range alone (its own step count); the others as if it were not there;
   its EMA copy stays equal to it while it waits. For Adam and SGD with momentum. */
static void test_late_group(void) {
    static const pf_optim_settings kinds[2] = {
        { PF_OPTIM_ADAM, 0.9f, 0.99f, 1e-8f, 0.01f, 0, 0, 0 },
        { PF_OPTIM_SGD, 0, 0, 0, 0.01f, 0.9f, 0, 0 } };
    for (int k = 0; k < 2; k++) {
        const pf_optim_settings *s = &kinds[k];
        pf_optim all, head, tail;
        CHECK(pf_optim_init(&all, N, s) == 0 && pf_optim_init(&head, 7, s) == 0 &&
              pf_optim_init(&tail, N - 7, s) == 0, "init");
        pf_optim_group g[2] = { { 0, 7, 1.0f, 1.0f, 0 }, { 7, N - 7, 1.0f, 1.0f, 3 } };
        CHECK(pf_optim_set_groups(&all, g, 2) == 0, "groups");
        float p[N], ph[7], pt[N - 7], gr[N];
        for (int i = 0; i < N; i++) p[i] = 0.1f * (float)(i - 5);
        CHECK(pf_optim_ema_init(&all, 0.9f, p) == 0, "ema");
        memcpy(ph, p, sizeof ph);
        memcpy(pt, p + 7, sizeof pt);
        int waited = 1;
        for (int t = 0; t < 8; t++) {
            for (int i = 0; i < N; i++) gr[i] = 0.03f * (float)(i + 1) * (t % 3 == 1 ? -1 : 1);
            pf_optim_step(&all, p, gr, 1e-2f);
            pf_optim_step(&head, ph, gr, 1e-2f);
            if (t >= 3) pf_optim_step(&tail, pt, gr + 7, 1e-2f);
            if (t < 3)
                for (int i = 7; i < N; i++)
                    waited &= p[i] == 0.1f * (float)(i - 5) && all.ema[i] == p[i];
        }
        CHECK(waited, "%s: the late group moved (or its EMA did) before its start",
              pf_optim_kind_name(s->kind));
        CHECK(memcmp(p, ph, sizeof ph) == 0 && memcmp(p + 7, pt, sizeof pt) == 0,
              "%s: a group joining at step 3 == a fresh optimiser over it from step 4",
              pf_optim_kind_name(s->kind));
        pf_optim_free(&all);
        pf_optim_free(&head);
        pf_optim_free(&tail);
    }
}

/* MMCV DefaultOptimizerConstructor: keys sorted alphabetically, then by length (longest
   first); the first key that is a substring of the name wins. */
static void test_custom_keys(void) {
    static pf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *keys[] = { "body", "body.1", "conv", "weight", "dy.1" };
    for (int i = 0; i < 5; i++) snprintf(cfg.custom_keys[i].key, 64, "%s", keys[i]);
    cfg.n_custom_keys = 5;
    CHECK(pf_state_custom_key(&cfg, "body.1.conv1.weight") == 1, "longest: body.1");
    CHECK(pf_state_custom_key(&cfg, "body.0.conv1.weight") == 3, "longest: weight");
    CHECK(pf_state_custom_key(&cfg, "body.0.conv1.bias") == 0, "body");
    CHECK(pf_state_custom_key(&cfg, "conv_first.bias") == 2, "conv (substring)");
    CHECK(pf_state_custom_key(&cfg, "upsample.0.bias") == -1, "none");
    /* Equal length: the alphabetically first ("body" before "conv"... both 4: "body"). */
    CHECK(pf_state_custom_key(&cfg, "conv_body.bias") == 0, "tie: alphabetical");
}

static void write_buf(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, len, f) == len, "write %s", path);
    if (f) fclose(f);
}

/* SRCNN x2 under `optim` (an optimizers mapping) and `extra` top-level keys. */
static pf_model *make_model(pf_config *c, const char *optim, const char *extra) {
    char text[1024], err[512];
    snprintf(text, sizeof text, "model: {type: SRCNN, scale: 2}\n"
             "data:\n  train: {gt_folder: a, gt_patch_size: 32}\n"
             "optimizers: %s\ntotal_iters: 10\nwork_dir: w\n%s", optim, extra);
    CHECK(pf_config_parse(c, "t.yaml", text, strlen(text), 0, err, sizeof err) == 0, "%s", err);
    pf_model *m = pf_model_new(c, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (m) pf_model_init(m, 3);
    return m;
}

/* What the worker on a GPU does with the checkpoint of test_checkpoint (no pf_model: the
   description and a host buffer): pf_ckpt_check_weights accepts it, the _net loaders give the
   model's parameters and o's state bitwise, and pf_ckpt_serialize_net writes the same bytes
   (wb, ob) again. */
static void test_host_state(const pf_config *c, pf_model *m, const pf_optim *o, const char *optim,
                            const char *wpath, const void *wb, size_t wl, const void *ob,
                            size_t ol) {
    char err[512];
    pf_net net;
    CHECK(pf_ckpt_check_weights(c, wpath, err, sizeof err) == 0, "%s: %s", optim, err);
    if (pf_net_build(&net, c, err, sizeof err) != 0) {
        CHECK(0, "%s: %s", optim, err);
        return;
    }
    size_t n = net.n_params;
    float *hp = calloc(n + 1, sizeof(float));
    pf_optim h;
    int64_t iter = -1;
    CHECK(n == pf_model_num_params(m) &&
          pf_ckpt_load_weights_net(&net, c, hp, wpath, &iter, err, sizeof err) == 0 &&
          iter == 3 && memcmp(hp, pf_model_params(m), n * sizeof(float)) == 0,
          "%s: host weights: %s", optim, err);
    CHECK(pf_state_optim_new(c, &net, hp, &h, err, sizeof err) == 0 &&
          pf_ckpt_load_optim_net(&h, &net, wpath, err, sizeof err) == 0 &&
          pf_ckpt_load_ema_net(&h, &net, hp, wpath, err, sizeof err) == 0,
          "%s: host optimiser: %s", optim, err);
    float *a[4] = { o->exp_avg, o->exp_avg_sq, o->momentum_buffer, o->ema };
    float *b[4] = { h.exp_avg, h.exp_avg_sq, h.momentum_buffer, h.ema };
    for (int k = 0; k < 4; k++)
        CHECK(!a[k] == !b[k] && (!a[k] || memcmp(a[k], b[k], n * sizeof(float)) == 0),
              "%s: host state %d differs", optim, k);
    void *wb2 = NULL, *ob2 = NULL;
    size_t wl2 = 0, ol2 = 0;
    CHECK(pf_ckpt_serialize_net(c, &net, hp, &h, 3, 0, 1e-2, &wb2, &wl2, &ob2, &ol2, err,
                                sizeof err) == 0 &&
          wl2 == wl && ol2 == ol && !memcmp(wb2, wb, wl) && !memcmp(ob2, ob, ol),
          "%s: the host state writes other bytes: %s", optim, err);
    free(wb2);
    free(ob2);
    pf_optim_free(&h);
    free(hp);
    pf_net_free(&net);
}

/* Train 3 steps, checkpoint, load into a fresh optimiser: state, step and EMA come back
   bitwise; another type refuses the file; evaluation weights are the EMA's. */
static void test_checkpoint(const char *optim, const char *extra, int n_state) {
    static pf_config c;
    char err[512], dir[] = "/tmp/test_optim_XXXXXX", wpath[64], opath[80];
    pf_model *m = make_model(&c, optim, extra);
    if (!m || !mkdtemp(dir)) return;
    pf_optim o, back;
    CHECK(pf_state_optim_new(&c, pf_model_net(m), pf_model_params(m),
                             &o, err, sizeof err) == 0, "%s", err);
    size_t n = pf_model_num_params(m);
    float *grads = malloc(n * sizeof(float));
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < n; i++) grads[i] = 0.01f * (float)((i * 7 + (size_t)t) % 13) - 0.06f;
        pf_optim_step(&o, pf_model_params(m), grads, 1e-2f);
    }
    void *wb, *ob;
    size_t wl, ol;
    CHECK(pf_ckpt_serialize(&c, m, &o, 3, 0, 1e-2, &wb, &wl, &ob, &ol, err, sizeof err) == 0,
          "%s", err);
    snprintf(wpath, sizeof wpath, "%s/iter_3.safetensors", dir);
    snprintf(opath, sizeof opath, "%s/iter_3.optim.safetensors", dir);
    write_buf(wpath, wb, wl);
    write_buf(opath, ob, ol);
    test_host_state(&c, m, &o, optim, wpath, wb, wl, ob, ol);
    free(wb);
    free(ob);
    CHECK(pf_state_optim_new(&c, pf_model_net(m), pf_model_params(m),
                             &back, err, sizeof err) == 0, "%s", err);
    CHECK(pf_ckpt_load_optim(&back, m, wpath, err, sizeof err) == 0, "%s: %s", optim, err);
    CHECK(pf_ckpt_load_ema(&back, m, wpath, err, sizeof err) == 0, "%s: %s", optim, err);
    CHECK(back.step == 3, "%s: step %lld", optim, (long long)back.step);
    float *a[4] = { o.exp_avg, o.exp_avg_sq, o.momentum_buffer, o.ema };
    float *b[4] = { back.exp_avg, back.exp_avg_sq, back.momentum_buffer, back.ema };
    int have = 0;
    for (int k = 0; k < 4; k++) {
        CHECK(!a[k] == !b[k], "%s: state %d", optim, k);
        if (a[k] && b[k]) {
            have += k < 3;
            CHECK(memcmp(a[k], b[k], n * sizeof(float)) == 0, "%s: state %d differs", optim, k);
        }
    }
    CHECK(have == n_state, "%s: %d state buffers, expected %d", optim, have, n_state);
    /* Evaluation prefers the EMA; load_from (pf_ckpt_load_weights) takes the plain names. */
    int ema = -1;
    float *p = pf_model_params(m), *keep = malloc(n * sizeof(float));
    memcpy(keep, p, n * sizeof(float));
    CHECK(pf_ckpt_load_eval_weights(m, wpath, &ema, err, sizeof err) == 0, "%s", err);
    CHECK(ema == (o.ema != NULL), "%s: eval weights ema=%d", optim, ema);
    if (o.ema) CHECK(memcmp(p, o.ema, n * sizeof(float)) == 0, "%s: eval took not the EMA", optim);
    CHECK(pf_ckpt_load_weights(m, wpath, NULL, err, sizeof err) == 0, "load_from: %s", err);
    CHECK(memcmp(p, keep, n * sizeof(float)) == 0, "%s: plain weights", optim);
    pf_optim_free(&back);
    /* Resuming this file under another optimiser type is an error that says what to do. */
    static pf_config c2;
    const char *other = strstr(optim, "SGD") ? "{type: Adam, lr: 1.0e-3}"
                                             : "{type: SGD, lr: 0.1, momentum: 0.9}";
    pf_model *m2 = make_model(&c2, other, "");
    if (m2) {
        CHECK(pf_state_optim_new(&c2, pf_model_net(m2), pf_model_params(m2),
                                 &back, err, sizeof err) == 0, "%s", err);
        CHECK(pf_ckpt_load_optim(&back, m2, wpath, err, sizeof err) == -1 &&
                  strstr(err, "resume_optim: false"),
              "%s resumed as %s: '%s'", optim, other, err);
        pf_optim_free(&back);
        pf_model_destroy(&m2);
    }
    unlink(wpath);
    unlink(opath);
    rmdir(dir);
    free(keep);
    free(grads);
    pf_optim_free(&o);
    pf_model_destroy(&m);
}

/* A custom key that matches no parameter stops the worker; lr_mult 0 freezes conv1. */
static void test_optim_new(void) {
    static pf_config c;
    char err[512];
    pf_model *m = make_model(&c, "{type: AdamW, lr: 1.0e-3, paramwise_cfg: {custom_keys: "
                                 "{conv9: {lr_mult: 0}}}}", "");
    pf_optim o;
    if (m) {
        CHECK(pf_state_optim_new(&c, pf_model_net(m), pf_model_params(m),
                                 &o, err, sizeof err) == -1 && strstr(err, "'conv9'"),
              "unmatched key: '%s'", err);
        pf_model_destroy(&m);
    }
    m = make_model(&c, "{type: AdamW, lr: 1.0e-3, paramwise_cfg: {custom_keys: "
                       "{conv1: {lr_mult: 0}, 'conv3.bias': {lr_mult: 2, decay_mult: 0}}}}", "");
    if (!m) return;
    CHECK(pf_state_optim_new(&c, pf_model_net(m), pf_model_params(m),
                             &o, err, sizeof err) == 0, "%s", err);
    CHECK(o.n_groups == pf_model_num_tensors(m), "one group per tensor");
    for (int i = 0; i < o.n_groups; i++) {
        const char *name = pf_model_tensor_info(m, i)->name;
        float lm = !strncmp(name, "conv1.", 6) ? 0.0f : !strcmp(name, "conv3.bias") ? 2.0f : 1.0f;
        float dm = !strcmp(name, "conv3.bias") ? 0.0f : 1.0f;
        CHECK(o.groups[i].lr_mult == lm && o.groups[i].decay_mult == dm, "%s: %g %g", name,
              o.groups[i].lr_mult, o.groups[i].decay_mult);
    }
    pf_optim_free(&o);
    pf_model_destroy(&m);
}


/* pf_optim_ema_update: BasicSR's model_ema alone (a GAN iteration without a generator step):
   ema = 0.75 ema + 0.25 p with the parameters and the step count left as they are; nothing
   without an EMA. */
static void test_ema_update(void) {
    pf_optim o;
    pf_optim_settings s = { .kind = PF_OPTIM_ADAM, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f };
    float p[3] = { 1.0f, -2.0f, 0.5f }, p0[3] = { 0.0f, 2.0f, 4.0f };
    CHECK(pf_optim_init(&o, 3, &s) == 0 && pf_optim_ema_init(&o, 0.75f, p0) == 0, "init");
    pf_optim_ema_update(&o, p);
    const float want[3] = { 0.25f, 1.0f, 3.125f };
    for (int i = 0; i < 3; i++)
        CHECK(o.ema[i] == want[i], "ema[%d] = %g, want %g", i, o.ema[i], want[i]);
    CHECK(o.step == 0 && p[1] == -2.0f, "the step and the parameters stay");
    pf_optim_free(&o);
    CHECK(pf_optim_init(&o, 3, &s) == 0, "init");
    pf_optim_ema_update(&o, p);   /* no EMA: nothing */
    CHECK(o.ema == NULL, "no EMA made");
    pf_optim_free(&o);
}

int main(void) {
    test_ema_update();
    test_checkpoint("{type: Adam, lr: 1.0e-3}", "", 2);
    test_checkpoint("{type: AdamW, lr: 1.0e-3}", "ema_decay: 0.9\n", 2);
    test_checkpoint("{type: SGD, lr: 0.1, momentum: 0.9}", "ema_decay: 0.999\n", 1);
    test_checkpoint("{type: SGD, lr: 0.1}", "", 0);
    test_optim_new();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) test_case(&CASES[i]);
    test_default_group();
    test_late_group();
    test_custom_keys();
    return pf_test_end("test_optim");
}
