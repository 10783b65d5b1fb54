/*  test_bf16_zoo — issue 43's parity point: every network of the zoo (each row of
    common/networks.h, so a new row is covered without a change here) trains and infers in
    bf16 mixed precision (nn/cpu/dnnl_ctx.h pf_precision: convolutions read bf16 input and
    weights, accumulate in fp32) within the bf16 tolerance bench/gpu/gpu_check.c uses, 2e-2,
    of the same network in fp32.

    Per network: two models from one config (small hyper-parameters, below) with the same
    seeded parameters (pf_model_init), one set to fp32 and one to bf16 for training and
    inference (pf_model_set_precision); one training step each on the same random uint8 batch
    (image networks: n x h x w x 3; recurrent video networks: clips of NUM_FRAME frames;
    EDVR: windows of NUM_FRAME frames and the center frame's GT); then compared with
    gpu_check's measure, max_i |bf16_i - fp32_i| / max_i |fp32_i| per tensor
    (pf_ref_rel_err): the loss, the training output, every parameter-gradient tensor by name
    (pf_model_tensor_info) and the inference output of the first sample (pf_model_infer,
    pf_model_infer_clip or pf_model_infer_window on the inference plan, as test_cfg.precision
    bf16 runs it). One line per network gives the worst gradient and its tensor.

    The loss is MSELoss: L1's gradient sign(pred - gt) jumps where a prediction crosses its GT
    value, so a bf16 prediction on the other side of a GT value than the fp32 one flips that
    element's gradient, a difference of the loss and not of the convolutions (gpu_check
    counts such near-ties for its L1 cases instead).

    Entries (tests/CMakeLists.txt):
      test_bf16_zoo         the parity above; exits 77 ("no bf16 unit") where oneDNN has no
                            bf16 unit (pf_dnnl_bf16_isa NULL), never passes without running it.
      test_bf16_zoo.capped  `test_bf16_zoo capped`, with ONEDNN_MAX_CPU_ISA=AVX512_CORE: no
                            bf16 unit (checked), so every network refuses bf16 for training
                            and for inference with pf_dnnl_set_precision's message naming the
                            key, and still builds, trains and infers in fp32.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/networks.h"
#include "common/rng.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/model.h"
#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"
#include "tests/pf_test_zoo.h"

#define TOL_BF16 2e-2  /* bench/gpu/gpu_check.c TOL_LOW (TF32, bf16) */
enum { BATCH = 2, NUM_FRAME = 3, SEED = 43 };

/* Small hyper-parameters for every type (tests/pf_test_zoo.h), the video keys by the row's
   video column, MSELoss. The scale: the type's smallest from 2 (RRDBNet x2: its
   pixel-unshuffle path). */
static void small_config(pf_config *c, const pf_network *nw) {
    int scale = 2;
    while (!(nw->scales >> scale & 1)) scale++;
    /* n_feats 16: BasicVSR++ takes multiples of 8, EDVR of deformable_groups; RCAN's training
       plan at 8 (2-channel attention) is refused on AVX-512, "channel attention residual in
       another layout", a planner limit of its own */
    pf_test_zoo_config(c, nw->name, scale, 16);
    snprintf(c->loss_type, sizeof c->loss_type, "MSELoss");
    if (nw->video == 1) {       /* recurrent: trains on clips of data.train.num_frame */
        c->n_blocks = 1;
        c->train.present = 1;
        snprintf(c->train.type, sizeof c->train.type, "REDSRecurrentDataset");
        c->train.num_frame = NUM_FRAME;
    } else if (nw->video == 2) { /* sliding window: model.num_frame frames in */
        c->edvr_num_frame = NUM_FRAME;
        c->center_frame_idx = NUM_FRAME / 2;   /* the parser's default for `~` */
        c->deformable_groups = 2;
        c->num_extract_block = 1;
        c->num_reconstruct_block = 1;
        c->train.present = 1;
        snprintf(c->train.type, sizeof c->train.type, "REDSDataset");
        c->train.num_frame = NUM_FRAME;
    }
}

/* The LQ size of a network's batch: 16 x 16 for the video networks (SPyNet's and EDVR's
   pyramids), 13 x 11 rounded up to pf_model_input_multiple for the image ones. */
static void lq_size(const pf_model *m, int *h, int *w) {
    int q = pf_model_input_multiple(m);
    *h = pf_model_is_video(m) ? 16 : (13 + q - 1) / q * q;
    *w = pf_model_is_video(m) ? 16 : (11 + q - 1) / q * q;
}

static void random_u8(uint8_t *x, size_t n, uint64_t stream) {
    pf_rng r = pf_rng_make(SEED, stream, 0);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(pf_rng_u64(&r) & 255);
}

/* Inference of the first sample of the batch on m's inference plan: an image, a clip or a
   window as the network takes them; out its output frames. */
static int infer_first(pf_model *m, const uint8_t *lq, int h, int w, float *out, char *err,
                       size_t errlen) {
    if (pf_model_is_window(m)) return pf_model_infer_window(m, lq, h, w, out, err, errlen);
    if (pf_model_is_video(m))
        return pf_model_infer_clip(m, lq, pf_model_frames(m), h, w, out, err, errlen);
    return pf_model_infer(m, lq, h, w, out, err, errlen);
}

/* A model of cfg at precision prec for training and inference, seeded parameters; NULL
   after a failed check. */
static pf_model *model_at(const pf_config *cfg, pf_precision prec) {
    char err[1024];
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    CHECK(m != NULL, "%s: pf_model_new: %s", cfg->model_type, err);
    if (!m) return NULL;
    int rc = pf_model_set_precision(m, prec, prec, "test_bf16_zoo", err, sizeof err);
    CHECK(rc == 0, "%s: pf_model_set_precision %s: %s", cfg->model_type,
          pf_precision_name(prec), err);
    if (rc) pf_model_destroy(&m);
    else pf_model_init(m, SEED);
    return m;
}

/* The largest of the relative errors seen in one network, and what it was. */
typedef struct {
    double err;
    char what[128];
} worst_t;

static void note(worst_t *w, double e, const char *what) {
    if (!(e <= w->err)) {
        w->err = e;
        snprintf(w->what, sizeof w->what, "%s", what);
    }
}

/* One network: fp32 and bf16 trained and inferred on the same batch, compared. Returns the
   network's worst relative error (over loss, output, gradients and inference). */
static double parity(const pf_network *nw) {
    static pf_config cfg;
    small_config(&cfg, nw);
    pf_model *fp = model_at(&cfg, PF_PREC_FP32), *bf = fp ? model_at(&cfg, PF_PREC_BF16) : NULL;
    double result = INFINITY;
    if (!fp || !bf) goto done;
    size_t np = pf_model_num_params(fp);
    CHECK(np == pf_model_num_params(bf) &&
              !memcmp(pf_model_params(fp), pf_model_params(bf), np * sizeof(float)),
          "%s: the two models' parameters differ", nw->name);
    int h, w, s = cfg.scale, T = pf_model_frames(fp), OT = pf_model_out_frames(fp);
    lq_size(fp, &h, &w);
    size_t lq_n = (size_t)BATCH * T * h * w * 3, out_n = (size_t)BATCH * OT * h * s * w * s * 3;
    uint8_t *lq = malloc(lq_n), *gt = malloc(out_n);
    float *out_fp = malloc(out_n * sizeof(float)), *out_bf = malloc(out_n * sizeof(float));
    random_u8(lq, lq_n, 1);
    random_u8(gt, out_n, 2);
    char err[1024];
    float loss_fp = 0, loss_bf = 0;
    int rc = pf_model_train_step(fp, lq, gt, BATCH, h, w, &loss_fp, err, sizeof err);
    CHECK(rc == 0, "%s fp32: pf_model_train_step: %s", nw->name, err);
    if (!rc) {
        rc = pf_model_train_step(bf, lq, gt, BATCH, h, w, &loss_bf, err, sizeof err);
        CHECK(rc == 0, "%s bf16: pf_model_train_step: %s", nw->name, err);
    }
    worst_t all = { 0, "" }, grad = { 0, "" };
    if (!rc) {
        note(&all, fabs((double)loss_bf - loss_fp) / fabs((double)loss_fp), "loss");
        rc = pf_model_train_output(fp, BATCH, out_fp) || pf_model_train_output(bf, BATCH, out_bf);
        CHECK(rc == 0, "%s: pf_model_train_output", nw->name);
        if (!rc) note(&all, pf_ref_rel_err(out_bf, out_fp, out_n), "output");
    }
    for (int i = 0; !rc && i < pf_model_num_tensors(fp); i++) {
        const pf_param_info *a = pf_model_tensor_info(fp, i), *b = pf_model_tensor_info(bf, i);
        CHECK(!strcmp(a->name, b->name) && a->offset == b->offset && a->numel == b->numel,
              "%s: tensor %d: %s against %s", nw->name, i, a->name, b->name);
        double e = pf_ref_rel_err(pf_model_grads(bf) + a->offset, pf_model_grads(fp) + a->offset,
                                  a->numel);
        CHECK(e <= TOL_BF16, "%s: gradient %s: bf16 %.3e from fp32 (bound %g)", nw->name,
              a->name, e, TOL_BF16);
        note(&grad, e, a->name);
    }
    /* inference of the first sample (its output frames), on the inference plans */
    size_t one = out_n / BATCH;
    if (!rc) {
        rc = infer_first(fp, lq, h, w, out_fp, err, sizeof err);
        CHECK(rc == 0, "%s fp32: inference: %s", nw->name, err);
    }
    if (!rc) {
        rc = infer_first(bf, lq, h, w, out_bf, err, sizeof err);
        CHECK(rc == 0, "%s bf16: inference: %s", nw->name, err);
    }
    if (!rc) note(&all, pf_ref_rel_err(out_bf, out_fp, one), "inference");
    if (!rc) {
        CHECK(all.err <= TOL_BF16, "%s: %s: bf16 %.3e from fp32 (bound %g)", nw->name, all.what,
              all.err, TOL_BF16);
        printf("%-17s x%d %8zu params  loss/output/inference worst %.2e (%s)  gradients "
               "worst %.2e (%s)\n", nw->name, s, np, all.err, all.what, grad.err, grad.what);
        result = all.err > grad.err ? all.err : grad.err;
    }
    free(lq);
    free(gt);
    free(out_fp);
    free(out_bf);
done:
    pf_model_destroy(&fp);
    pf_model_destroy(&bf);
    return result;
}

/* ONEDNN_MAX_CPU_ISA below bf16: each network refuses bf16 for either plan, naming the key,
   and still trains and infers in fp32. */
static int capped(void) {
    char isa[32] = "";
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    CHECK(unit == NULL, "ONEDNN_MAX_CPU_ISA=%s: oneDNN still reports the bf16 unit %s (ISA %s)",
          getenv("ONEDNN_MAX_CPU_ISA") ? getenv("ONEDNN_MAX_CPU_ISA") : "(unset)", unit, isa);
    for (int i = 0; !unit && i < pf_n_networks; i++) {
        const pf_network *nw = &pf_networks[i];
        static pf_config cfg;
        small_config(&cfg, nw);
        char err[1024] = "", want[256];
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s: pf_model_new: %s", nw->name, err);
        if (!m) continue;
        static const char *keys[2] = { "train_cfg.precision", "test_cfg.precision" };
        for (int k = 0; k < 2; k++) {
            int rc = pf_model_set_precision(m, k ? PF_PREC_FP32 : PF_PREC_BF16,
                                            k ? PF_PREC_BF16 : PF_PREC_FP32, keys[k], err,
                                            sizeof err);
            snprintf(want, sizeof want, "%s: bf16 needs a CPU with AVX512_BF16 or AMX; oneDNN's "
                     "ISA here is %s (no bf16 unit): use fp32", keys[k], isa);
            CHECK(rc == -1 && !strcmp(err, want), "%s: %s bf16 with no bf16 unit: rc %d, '%s'",
                  nw->name, keys[k], rc, rc ? err : "");
        }
        int rc = pf_model_set_precision(m, PF_PREC_FP32, PF_PREC_FP32, "fp32", err, sizeof err);
        CHECK(rc == 0, "%s: fp32: %s", nw->name, err);
        pf_model_init(m, SEED);
        int h, w, s = cfg.scale, T = pf_model_frames(m), OT = pf_model_out_frames(m);
        lq_size(m, &h, &w);
        size_t lq_n = (size_t)BATCH * T * h * w * 3, out_n = (size_t)BATCH * OT * h * s * w * s * 3;
        uint8_t *lq = malloc(lq_n), *gt = malloc(out_n);
        float *out = malloc(out_n * sizeof(float)), loss = NAN;
        random_u8(lq, lq_n, 1);
        random_u8(gt, out_n, 2);
        rc = pf_model_train_step(m, lq, gt, BATCH, h, w, &loss, err, sizeof err);
        CHECK(rc == 0 && isfinite(loss) && loss > 0, "%s fp32 capped: step: %s (loss %g)",
              nw->name, rc ? err : "", loss);
        int finite = 1;
        for (size_t j = 0; !rc && j < pf_model_num_params(m); j++)
            finite &= isfinite(pf_model_grads(m)[j]);
        rc = rc ? rc : infer_first(m, lq, h, w, out, err, sizeof err);
        for (size_t j = 0; !rc && j < out_n / BATCH; j++) finite &= isfinite(out[j]);
        CHECK(rc == 0 && finite, "%s fp32 capped: gradients and inference finite: %s", nw->name,
              rc ? err : "");
        printf("%-17s x%d refuses bf16 (%s), fp32 loss %.6f\n", nw->name, s, isa, loss);
        free(lq);
        free(gt);
        free(out);
        pf_model_destroy(&m);
    }
    return pf_test_end("test_bf16_zoo capped");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "capped")) return capped();
    char isa[32] = "";
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    if (!unit) {
        printf("test_bf16_zoo: SKIPPED: no bf16 unit (oneDNN's ISA here is %s)\n", isa);
        return 77;
    }
    printf("bf16 unit %s; bound %g on max |bf16 - fp32| / max |fp32| per tensor\n", unit,
           TOL_BF16);
    for (int i = 0; i < pf_n_networks; i++) parity(&pf_networks[i]);
    return pf_test_end("test_bf16_zoo");
}
