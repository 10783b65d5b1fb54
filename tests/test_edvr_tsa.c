/*  test_edvr_tsa — EDVR's train_cfg.tsa_iter (issue 42): BasicSR's EDVRModel trains only the
    tensors named *fusion* in its iterations 1..tsa_iter-1 (current_iter, 1-based) and every
    tensor from iteration tsa_iter on; PixFlow puts the others in optimiser groups that sit
    out steps 1..tsa_iter-1 (worker/train_state.c, pf_optim_group.start, fix_iter's mechanism).
    A tiny EDVR (num_feat 8, num_frame 3, deformable_groups 2, one extraction and one
    reconstruction block, TSA; batch 2 of LQ 16 x 16) trains K = 5 steps with tsa_iter 3, Adam
    (betas 0.9 / 0.99, eps 1e-5, weight_decay 1e-4), gradient clipping to norm 5e-4 (active in
    every step) and an EMA (decay 0.5), through pf_model_train_step, pf_state_clip_grads and
    pf_optim_step (the worker's step), weights from the counter hash, one hash batch per step.
    eps 1e-5 lies above the clipped gradients (about 1e-6 an element), so Adam's update stays
    near linear in them: with eps 1e-8 the first step of a tensor is lr * g / (|g| + eps), about
    lr * sign(g), and float32 rounding of elements with |g| near eps moved conv_hr.weight by a
    fraction of lr (measured 7e-3 of its largest |value| from float64 for PixFlow, 9e-4 for
    PyTorch float32), which hides the schedule under rounding. Always:
     - the config: tsa_iter is parsed (EDVR), refused on BasicVSR naming the key, refused when
       negative and when 1, BasicSR's spelling at the top level answered with the PixFlow key,
       written to the resolved YAML;
     - the groups: every tensor without "fusion" in its name starts at step 2, the fusion's at
       0; the clipping is active in every step (the norm above max_norm);
     - steps 1 and 2: every non-fusion tensor bit-unchanged, its Adam moments zero and its EMA
       bit-equal to it; every fusion tensor moved; step 3: every tensor moved;
     - resume: the state after 1, 2 and 3 steps written by the checkpoint writer
       (pf_ckpt_serialize: weights, EMA, optimiser), loaded into a new model and optimiser
       (pf_state_optim_new, pf_ckpt_load_weights / _optim / _ema, as the worker's restore()),
       trained to step K: parameters, moments, EMA and step count bit-identical to the
       uninterrupted run.
    `test_edvr_tsa torch` (ctest test_edvr_tsa.torch): the same run handed to
    tests/reference/edvr_tsa_ref.py, which trains tests/reference/edvr_ref.py's EDVR in float64
    following BasicSR's EDVRModel.optimize_parameters literally (requires_grad off at
    current_iter 1, on at current_iter tsa_iter, torch.optim.Adam skipping grad-None tensors,
    clip_grad_norm_, BasicSR's model_ema): after every step every PixFlow tensor (parameters and
    EMA) within 1e-4 of the float64 tensor's largest |value| (measured: 1.7e-7 at worst,
    PyTorch float32 1.9e-7), and three wrong runs shown to land beyond that bound: MMagic's
    boundary (the fusion alone for tsa_iter steps; 5.8e-2), the clipping norm over the frozen
    tensors' gradients too (4.6e-2) and no tsa_iter (0.16).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/checkpoint.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/optim.h"
#include "tests/pf_test.h"
#include "tests/pf_test_hash.h"
#include "tests/pf_test_ref.h"
#include "worker/train_state.h"

enum { K = 5, TSA = 3, N = 2, T = 3, H = 16, W = 16 };
#define LR 1.0e-3f
#define MAX_NORM 5.0e-4

static const char *CFG =
    "work_dir: /tmp/pf_test_edvr_tsa\n"
    "model: {type: EDVR, scale: 4, n_feats: 8, num_frame: 3, deformable_groups: 2,\n"
    "        num_extract_block: 1, num_reconstruct_block: 1, with_tsa: true,\n"
    "        loss: {type: CharbonnierLoss, eps: 1.0e-12}}\n"
    "optimizers: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.99], eps: 1.0e-5, "
    "weight_decay: 1.0e-4}\n"
    "optimizer_config: {grad_clip: {max_norm: 5.0e-4}}\n"
    "ema_decay: 0.5\n"
    "%s"
    "data:\n  test:\n    type: VideoTestDataset\n    gt_folder: gt\n    lq_folder: lq\n"
    "    num_frame: 3\n";

static int parse_with(pf_config *cfg, const char *extra, const char *model_type, char *err,
                      size_t errlen) {
    char text[2048];
    snprintf(text, sizeof text, CFG, extra);
    if (model_type) {   /* another network: EDVR's model line replaced */
        char *a = strstr(text, "model: {"), *b = strstr(text, "optimizers:");
        char tail[2048], head[64];
        snprintf(tail, sizeof tail, "%s", b);
        snprintf(head, sizeof head, "model: {type: %s, scale: 4}\n", model_type);
        snprintf(a, sizeof text - (size_t)(a - text), "%s%s", head, tail);
    }
    return pf_config_parse(cfg, "tsa.yaml", text, strlen(text), 0, err, errlen);
}

static void check_config(void) {
    static pf_config cfg;
    char err[1024];
    int rc = parse_with(&cfg, "train_cfg: {tsa_iter: 3}\n", NULL, err, sizeof err);
    CHECK(rc == 0 && cfg.tsa_iter == 3, "tsa_iter 3 on EDVR: %s", rc ? err : "wrong value");
    if (rc == 0) {
        char *y = pf_config_to_yaml(&cfg);
        CHECK(y && strstr(y, "train_cfg:\n  tsa_iter: 3\n"), "resolved YAML has tsa_iter:\n%s",
              y ? y : "(null)");
        free(y);
    }
    rc = parse_with(&cfg, "", NULL, err, sizeof err);
    CHECK(rc == 0 && cfg.tsa_iter == 0, "tsa_iter defaults to 0 (off): %s", rc ? err : "");
    static const struct {
        const char *extra, *type, *want;
    } bad[] = {
        { "train_cfg: {tsa_iter: 5000}\n", "BasicVSR",
          "train_cfg.tsa_iter: only allowed with type EDVR (model.type is BasicVSR)" },
        { "train_cfg: {tsa_iter: -1}\n", NULL, "train_cfg.tsa_iter: " },
        { "train_cfg: {tsa_iter: 1}\n", NULL, "train_cfg.tsa_iter: 1 would freeze" },
        { "tsa_iter: 50000\n", NULL, "PixFlow calls this 'train_cfg.tsa_iter'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = parse_with(&cfg, bad[i].extra, bad[i].type, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].want), "config case %zu: want '%s', got %s", i,
              bad[i].want, rc ? err : "accepted");
    }
}

/* ---- training ------------------------------------------------------------------------------ */

typedef struct {
    pf_config cfg;
    pf_model *m;
    pf_optim o;
} run;

/* A new model (hash weights) and the worker's optimiser of config `extra`; 0 or -1. */
static int run_new(run *r, const char *extra) {
    char err[1024];
    memset(r, 0, sizeof *r);
    int rc = parse_with(&r->cfg, extra, NULL, err, sizeof err);
    CHECK(rc == 0, "config: %s", err);
    if (rc) return -1;
    r->m = pf_model_new(&r->cfg, err, sizeof err);
    CHECK(r->m != NULL, "pf_model_new: %s", err);
    if (!r->m) return -1;
    const pf_net *g = pf_model_net(r->m);
    pf_hash_fill_params(g->tensors, g->n_tensors, pf_model_params(r->m));
    rc = pf_state_optim_new(&r->cfg, g, pf_model_params(r->m), &r->o, err, sizeof err);
    CHECK(rc == 0, "pf_state_optim_new: %s", err);
    if (rc) pf_model_destroy(&r->m);
    return rc;
}

static void run_free(run *r) {
    pf_optim_free(&r->o);
    pf_model_destroy(&r->m);
}

/* Step s's batch (0-based): LQ N x T x H x W x 3 and the center GT N x 4H x 4W x 3 from the
   counter hash names "tsa.lq#s" / "tsa.gt#s". */
static void batch(int s, uint8_t *lq, uint8_t *gt) {
    char nl[32], ng[32];
    snprintf(nl, sizeof nl, "tsa.lq#%d", s);
    snprintf(ng, sizeof ng, "tsa.gt#%d", s);
    uint64_t bl = pf_hash_name(nl), bg = pf_hash_name(ng);
    for (size_t i = 0; i < (size_t)N * T * H * W * 3; i++)
        lq[i] = (uint8_t)floor(pf_hash_unit(bl, i) * 256);
    for (size_t i = 0; i < (size_t)N * 16 * H * W * 3; i++)
        gt[i] = (uint8_t)floor(pf_hash_unit(bg, i) * 256);
}

/* The worker's step on batch s: forward and backward, the clipping, the optimiser step with
   EMA. Returns the gradient norm before clipping, or -1. */
static double step(run *r, int s) {
    static uint8_t lq[N * T * H * W * 3], gt[N * 16 * H * W * 3];
    char err[1024];
    float loss;
    batch(s, lq, gt);
    if (pf_model_train_step(r->m, lq, gt, N, H, W, &loss, err, sizeof err) != 0) {
        CHECK(0, "train step %d: %s", s + 1, err);
        return -1;
    }
    double norm = pf_state_clip_grads(&r->cfg, &r->o, pf_model_grads(r->m));
    pf_optim_step(&r->o, pf_model_params(r->m), pf_model_grads(r->m), LR);
    return norm;
}

static int is_fusion(const pf_param_info *t) { return strstr(t->name, "fusion") != NULL; }

/* The optimiser groups, and steps 1..K: non-fusion tensors frozen bit for bit (no moments,
   EMA equal) in steps 1..TSA-1, every tensor moving afterwards. Writes each step's parameters
   and EMA to dir (when not NULL) for the torch comparison. */
static void check_phases(const char *dir) {
    static run r;
    if (run_new(&r, "train_cfg: {tsa_iter: 3}\n")) return;
    const pf_net *g = pf_model_net(r.m);
    size_t np = g->n_params;
    int n_fusion = 0, groups_ok = r.o.n_groups == g->n_tensors;
    for (int i = 0; groups_ok && i < g->n_tensors; i++) {
        n_fusion += is_fusion(&g->tensors[i]);
        groups_ok = r.o.groups[i].offset == g->tensors[i].offset &&
                    r.o.groups[i].start == (is_fusion(&g->tensors[i]) ? 0 : TSA - 1);
    }
    CHECK(groups_ok && n_fusion > 0 && n_fusion < g->n_tensors, "groups: %d tensors, %d fusion, "
          "the others start at step %d", g->n_tensors, n_fusion, TSA - 1);
    float *p0 = malloc(np * sizeof(float)), *prev = malloc(np * sizeof(float));
    memcpy(p0, pf_model_params(r.m), np * sizeof(float));
    if (dir) {
        FILE *f = NULL;
        char path[1100];
        snprintf(path, sizeof path, "%s/params.txt", dir);
        f = fopen(path, "w");
        CHECK(f != NULL, "%s", path);
        if (f) {
            fprintf(f, "config %d %d %d %d %d %d %d %d %d %d\n", N, T, H, W, 8, 2, 1, 1, 1, 1);
            fprintf(f, "train %d %d %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", K, TSA, LR,
                    r.cfg.betas[0], r.cfg.betas[1], r.cfg.eps, r.cfg.weight_decay,
                    r.cfg.grad_clip_max_norm, r.cfg.ema_decay);
            pf_ref_print_params(f, g->tensors, g->n_tensors);
            CHECK(fclose(f) == 0, "%s", path);
        }
        pf_ref_write_file(dir, "params.f32", p0, np * sizeof(float));
    }
    for (int s = 0; s < K; s++) {
        memcpy(prev, pf_model_params(r.m), np * sizeof(float));
        double norm = step(&r, s);
        CHECK(norm > MAX_NORM, "step %d: gradient norm %.4g, not above max_norm %g: the "
              "clipping would not be exercised", s + 1, norm, MAX_NORM);
        int fusion_only = s + 1 < TSA;
        int n_frozen_ok = 0, n_moved = 0, n_frozen = 0;
        const float *p = pf_model_params(r.m);
        for (int i = 0; i < g->n_tensors; i++) {
            const pf_param_info *t = &g->tensors[i];
            size_t off = t->offset, bytes = t->numel * sizeof(float);
            int moved = memcmp(p + off, prev + off, bytes) != 0;
            n_moved += moved;
            if (!fusion_only || is_fusion(t)) continue;
            n_frozen++;
            int zero = 1;
            for (size_t j = 0; j < t->numel; j++)
                zero &= r.o.exp_avg[off + j] == 0 && r.o.exp_avg_sq[off + j] == 0;
            n_frozen_ok += !moved && !memcmp(p + off, p0 + off, bytes) && zero &&
                           !memcmp(r.o.ema + off, p0 + off, bytes);
        }
        if (fusion_only)
            CHECK(n_frozen_ok == n_frozen && n_moved == n_fusion, "step %d (fusion only): %d of "
                  "%d non-fusion tensors bit-unchanged with zero moments and EMA, %d tensors "
                  "moved (want the %d fusion ones)", s + 1, n_frozen_ok, n_frozen, n_moved,
                  n_fusion);
        else
            CHECK(n_moved == g->n_tensors, "step %d: %d of %d tensors moved", s + 1, n_moved,
                  g->n_tensors);
        printf("step %d: gradient norm %.4f clipped to %g; %s\n", s + 1, norm, MAX_NORM,
               fusion_only ? "the fusion's tensors moved, every other bit-unchanged (moments 0, "
                             "EMA equal)" : "every tensor moved");
        if (dir) {
            char name[64];
            snprintf(name, sizeof name, "pf%d.f32", s + 1);
            pf_ref_write_file(dir, name, p, np * sizeof(float));
            snprintf(name, sizeof name, "ema%d.f32", s + 1);
            pf_ref_write_file(dir, name, r.o.ema, np * sizeof(float));
        }
    }
    if (dir) {
        static uint8_t lq[N * T * H * W * 3], gt[N * 16 * H * W * 3];
        for (int s = 0; s < K; s++) {
            char name[64];
            batch(s, lq, gt);
            snprintf(name, sizeof name, "lq%d.u8", s + 1);
            pf_ref_write_file(dir, name, lq, sizeof lq);
            snprintf(name, sizeof name, "gt%d.u8", s + 1);
            pf_ref_write_file(dir, name, gt, sizeof gt);
        }
    }
    free(p0);
    free(prev);
    run_free(&r);
}

/* ---- resume ---------------------------------------------------------------------------------- */

/* Write r's state after `iter` steps as the checkpoint hook does (weights with EMA, optimiser
   file beside); 0 or -1. */
static int save(run *r, const char *dir, int iter, char *path, size_t size) {
    char err[1024], opath[1200];
    void *wb = NULL, *ob = NULL;
    size_t wl = 0, ol = 0;
    snprintf(path, size, "%s/iter_%d.safetensors", dir, iter);
    pf_ckpt_optim_path(path, opath, sizeof opath);
    int rc = pf_ckpt_serialize(&r->cfg, r->m, &r->o, iter, 0, LR, &wb, &wl, &ob, &ol, err,
                               sizeof err);
    rc = rc ? rc : pf_write_file_atomic(path, wb, wl, err, sizeof err);
    rc = rc ? rc : pf_write_file_atomic(opath, ob, ol, err, sizeof err);
    CHECK(rc == 0, "checkpoint at %d: %s", iter, err);
    free(wb);
    free(ob);
    return rc;
}

/* The uninterrupted run against runs cut after `cut` steps, saved, reloaded into a new model
   and optimiser (the worker's restore()) and trained on to K. */
static void check_resume(void) {
    char root[] = "/tmp/pf_edvr_tsa.XXXXXX", err[1024], path[1200];
    if (!mkdtemp(root)) {
        CHECK(0, "mkdtemp");
        return;
    }
    static run a;
    if (run_new(&a, "train_cfg: {tsa_iter: 3}\n")) return;
    for (int s = 0; s < K; s++) step(&a, s);
    size_t np = pf_model_num_params(a.m), bytes = np * sizeof(float);
    static const int cuts[] = { 1, TSA - 1, TSA };   /* inside, at the end of, after the phase */
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        static run b;
        if (run_new(&b, "train_cfg: {tsa_iter: 3}\n")) break;
        for (int s = 0; s < cuts[c]; s++) step(&b, s);
        int rc = save(&b, root, cuts[c], path, sizeof path);
        run_free(&b);
        if (rc || run_new(&b, "train_cfg: {tsa_iter: 3}\n")) break;
        /* other weights and state first, so a load that misses something shows */
        for (size_t i = 0; i < np; i++) {
            pf_model_params(b.m)[i] += 1.0f;
            b.o.ema[i] = -1.0f;
        }
        int64_t iter = -1;
        rc = pf_ckpt_load_weights(b.m, path, &iter, err, sizeof err);
        rc = rc ? rc : pf_ckpt_load_optim(&b.o, b.m, path, err, sizeof err);
        rc = rc ? rc : pf_ckpt_load_ema(&b.o, b.m, path, err, sizeof err);
        CHECK(rc == 0 && iter == cuts[c] && b.o.step == cuts[c], "resume at %d: %s (iter %lld, "
              "step %lld)", cuts[c], rc ? err : "", (long long)iter, (long long)b.o.step);
        for (int s = cuts[c]; rc == 0 && s < K; s++) step(&b, s);
        int same = rc == 0 && b.o.step == a.o.step &&
                   !memcmp(pf_model_params(b.m), pf_model_params(a.m), bytes) &&
                   !memcmp(b.o.exp_avg, a.o.exp_avg, bytes) &&
                   !memcmp(b.o.exp_avg_sq, a.o.exp_avg_sq, bytes) &&
                   !memcmp(b.o.ema, a.o.ema, bytes);
        CHECK(same, "resumed after step %d: parameters, moments, EMA or step differ from the "
              "uninterrupted run's after step %d", cuts[c], K);
        printf("resumed after step %d (%s): after step %d parameters, Adam moments, EMA and "
               "step count bit-identical to the uninterrupted run\n", cuts[c],
               cuts[c] < TSA - 1 ? "inside the fusion-only phase"
               : cuts[c] == TSA - 1 ? "its last step" : "after it", K);
        run_free(&b);
    }
    run_free(&a);
    pf_ref_remove(root);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "torch")) {
        if (!pf_ref_have("test_edvr_tsa torch", "numpy, torch, torchvision"))
            return 77;
        char root[] = "/tmp/pf_edvr_tsa_ref.XXXXXX";
        if (!mkdtemp(root)) {
            CHECK(0, "mkdtemp");
            return pf_test_end("test_edvr_tsa torch");
        }
        check_phases(root);
        pf_ref_exec("edvr_tsa_ref.py", root);
        if (getenv("PF_TEST_KEEP")) printf("test_edvr_tsa torch: kept %s\n", root);
        else pf_ref_remove(root);
        return pf_test_end("test_edvr_tsa torch");
    }
    check_config();
    check_phases(NULL);
    check_resume();
    return pf_test_end("test_edvr_tsa");
}
