/*  bench_train_step — seconds per training step (forward + L1 loss + backward + Adam) of
    PixFlow's CPU backend, and seconds per whole-image inference, for the cases of the issue's
    benchmark (bench/train_step runs them against PyTorch, bench/torch_train_step.py):

      demo           EDSR 32 feats 4 blocks x2, batch 16, 48 x 48 LQ patches
      edsr_baseline  EDSR 64 / 16 x2, batch 16, LQ patch 48
      msrresnet      MSRResNet 64 / 16 x4, batch 16, LQ patch 32
      rcan_small     RCAN x2, 64 feats, 2 groups of 4 RCABs, squeeze 16, batch 16, LQ patch 48
      edsr_infer     EDSR 64 / 16 x4, pf_model_infer of one 256 x 256 LQ image (3 x 256 x 256
                     in, 3 x 1024 x 1024 out)
      basicvsr_demo  BasicVSR 16 feats 2 blocks x4, batch 2 clips of 3 frames, LQ patch 64,
                     Charbonnier (configs/demo_video.yaml's step)
      basicvsrpp_demo  BasicVSR++ 16 channels 1 block per branch x4 (max_residue_magnitude 10),
                     batch 2 clips of 3 frames, LQ patch 64, Charbonnier (configs/demo_video_pp.yaml's
                     step; bench/video/torch_basicvsrpp.py is its PyTorch side)
      edvr_demo      EDVR x4 32 feats, 5 frames, deformable_groups 8, 2 extraction and 4
                     reconstruction blocks (the "blocks" printed), TSA, batch 2 windows, LQ patch
                     64, GT the center frame, Charbonnier (bench/video/torch_edvr.py is its
                     PyTorch side)

    Inputs are random uint8 NHWC, converted inside the step as the worker's are. Prints, per
    case, the median of N timed steps after W warm-up steps. Threads: oneDNN's OpenMP pool,
    i.e. OMP_NUM_THREADS (default all cores).

    --mark prints a line "pf_mark step I warmup 0|1 model_ms T adam_ms A" on stdout after each
    step (model_ms: pf_model_train_step or pf_model_infer; adam_ms: the optimiser), so that
    bench/dnnl_profile.py can split ONEDNN_VERBOSE=1 output into steps.

    --smoke 1 runs every case at batch 2, LQ patch 8 (inference: a 16 x 16 image), for the
    benchmark scripts' smoke runs (ctest bench_smoke.*): the same code paths, no timing worth
    reading.

    --precision fp32|bf16 (default fp32): the convolutions' precision, training and inference
    plans alike (pf_model_set_precision before the first step; bf16 = torch.autocast("cpu",
    dtype=torch.bfloat16) for convolutions, issue 43). Each case prints one line
    "CASE precision P: REPORT" (pf_model_precision_report after the timed steps) after its
    result line. bf16 where
    oneDNN has no bf16 unit (pf_dnnl_bf16_isa NULL, e.g. ONEDNN_MAX_CPU_ISA=AVX512_CORE): the
    message "... no bf16 unit ..." on stderr and exit 77, nothing run (bench/train_step_bf16.sh
    and ctest bench_smoke.train_step_bf16 read it as skipped). --isa 1 prints one line
    "oneDNN ISA I, bf16 unit U" (pf_dnnl_bf16_isa; U "none" without one) and exits 0.

    Each result line also gives "conv G GFLOP/step": the convolution FLOPs of one step at the
    case's sizes, counted from the network's description (every PF_G_CONV node: 2 N OC IC K K
    OH OW, a multiply and an add per weight tap and output element; bias, activations and the
    other ops not counted), 3 x forward for a training step (forward, backward-data,
    backward-weights; also where the first layer skips backward-data), 1 x for inference.
    Image networks only (the video cases print no count).

    usage: bench_train_step [--steps N] [--warmup W] [--only CASE] [--mark 1] [--smoke 1]
                            [--precision fp32|bf16] [--isa 1]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "common/rng.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/graph.h"
#include "nn/model.h"
#include "nn/net.h"
#include "nn/optim.h"

typedef struct {
    const char *name;
    const char *model_type;
    int scale;
    int n_feats, n_blocks, num_group;   /* num_group: RCAN only */
    int batch, patch;                   /* training: batch and LQ patch; inference: batch 1 and
                                           the LQ image side */
    int infer;                          /* 1: time pf_model_infer, no loss, no optimiser */
    int frames;                         /* video network: frames per clip (0: images) */
} bench_case;

static const bench_case CASES[] = {
    {"demo", "EDSR", 2, 32, 4, 0, 16, 48, 0, 0},
    {"edsr_baseline", "EDSR", 2, 64, 16, 0, 16, 48, 0, 0},
    {"msrresnet", "MSRResNet", 4, 64, 16, 0, 16, 32, 0, 0},
    {"rcan_small", "RCAN", 2, 64, 4, 2, 16, 48, 0, 0},
    {"edsr_infer", "EDSR", 4, 64, 16, 0, 1, 256, 1, 0},
    {"basicvsr_demo", "BasicVSR", 4, 16, 2, 0, 2, 64, 0, 3},
    {"basicvsrpp_demo", "BasicVSRPlusPlus", 4, 16, 1, 0, 2, 64, 0, 3},
    {"edvr_demo", "EDVR", 4, 32, 4, 0, 2, 64, 0, 5},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The config's defaults with the case's network, scale and sizes; optimiser Adam, lr 1e-4. */
static void case_cfg(pf_config *c, const bench_case *k) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", k->model_type);
    c->scale = k->scale;
    c->n_feats = k->n_feats;
    c->n_blocks = k->n_blocks;
    if (k->num_group) c->num_group = k->num_group;
    c->learning_rate = 1e-4f;
    if (k->frames) {    /* a video training set of clips of k->frames frames */
        c->train.present = 1;
        snprintf(c->train.type, sizeof c->train.type, "REDSRecurrentDataset");
        c->train.num_frame = k->frames;
        snprintf(c->loss_type, sizeof c->loss_type, "CharbonnierLoss");
        c->charbonnier_eps = 1e-12f;
    }
    if (!strcmp(k->model_type, "EDVR")) {   /* a sliding window: n_blocks is reconstruction's */
        snprintf(c->train.type, sizeof c->train.type, "REDSDataset");
        c->edvr_num_frame = k->frames;
        c->center_frame_idx = k->frames / 2;
        c->deformable_groups = 8;
        c->num_extract_block = 2;
        c->num_reconstruct_block = k->n_blocks;
        c->with_tsa = 1;
    }
}

/* Convolution FLOPs of one forward of net at batch n, LQ h x w (see the header: PF_G_CONV
   nodes only), or -1 when a size cannot be planned. */
static double conv_flops(const pf_net *net, int n, int h, int w) {
    double f = 0.0;
    for (int i = 0; i < net->n_node; i++) {
        const pf_gnode *g = &net->node[i];
        if (g->op != PF_G_CONV) continue;
        const pf_nconv *l = &net->conv[g->conv];
        int oh, ow;
        char err[256];
        if (pf_net_tensor_size(net, g->out, h, w, &oh, &ow, err, sizeof err)) return -1.0;
        f += 2.0 * n * l->oc * l->ic * l->k * l->k * (double)oh * ow;
    }
    return f;
}

static int bench(const bench_case *case_, int warmup, int steps, int mark, int smoke,
                 pf_precision prec) {
    bench_case tiny = *case_, *k = &tiny;
    if (smoke) {
        tiny.batch = 1 + !tiny.infer;
        tiny.patch = tiny.infer ? 16 : 8;
    }
    pf_config cfg;
    case_cfg(&cfg, k);
    char err[512];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", k->name, err);
        return -1;
    }
    pf_model_init(m, 0);
    if (pf_model_set_precision(m, prec, prec, "bench_train_step --precision", err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", k->name, err);
        pf_model_destroy(&m);
        return -1;
    }
    pf_adam adam;
    if (pf_adam_init(&adam, pf_model_num_params(m), cfg.betas[0], cfg.betas[1], cfg.eps,
                     cfg.weight_decay)) {
        fprintf(stderr, "out of memory\n");
        pf_model_destroy(&m);
        return -1;
    }
    int s = cfg.scale, p = k->patch, gp = p * s;
    size_t nf = (size_t)(k->frames ? k->frames : 1), nfo = (size_t)pf_model_out_frames(m);
    size_t nlq = (size_t)k->batch * nf * p * p * 3, ngt = (size_t)k->batch * nfo * gp * gp * 3;
    uint8_t *lq = malloc(nlq), *gt = malloc(ngt);
    float *out = k->infer ? malloc(ngt * sizeof(float)) : NULL;
    double *t = calloc((size_t)steps, sizeof(double));
    int rc = 0;
    if (!lq || !gt || !t || (k->infer && !out)) {
        fprintf(stderr, "out of memory\n");
        rc = -1;
    }
    pf_rng r = pf_rng_make(1, 2, 3);
    for (size_t i = 0; !rc && i < nlq; i++) lq[i] = (uint8_t)pf_rng_below(&r, 256);
    for (size_t i = 0; !rc && i < ngt; i++) gt[i] = (uint8_t)pf_rng_below(&r, 256);
    float loss = 0.0f;
    for (int i = 0; !rc && i < warmup + steps; i++) {
        double t0 = now();
        if (k->infer)
            rc = pf_model_infer(m, lq, p, p, out, err, sizeof err);
        else
            rc = pf_model_train_step(m, lq, gt, k->batch, p, p, &loss, err, sizeof err);
        double t1 = now();
        if (!rc && !k->infer)
            pf_adam_step(&adam, pf_model_params(m), pf_model_grads(m), cfg.learning_rate);
        if (rc) fprintf(stderr, "%s: %s\n", k->name, err);
        if (i >= warmup) t[i - warmup] = now() - t0;
        if (mark) {
            printf("pf_mark step %d warmup %d model_ms %.3f adam_ms %.3f\n", i, i < warmup,
                   1e3 * (t1 - t0), 1e3 * (now() - t1));
            fflush(stdout);
        }
    }
    if (!rc) {
        qsort(t, (size_t)steps, sizeof(double), cmp);
        char groups[32] = "";
        if (k->num_group) snprintf(groups, sizeof groups, " %d groups", k->num_group);
        if (k->frames) snprintf(groups, sizeof groups, " %d frames", k->frames);
        printf("%-13s pixflow %s %d feats %d blocks%s x%d %s batch %d patch %d: %zu params, "
               "median %.4f s/step (min %.4f, max %.4f, %d steps)",
               k->name, k->model_type, k->n_feats, k->n_blocks, groups, s,
               k->infer ? "infer" : "train", k->batch, p, pf_model_num_params(m),
               (t[(steps - 1) / 2] + t[steps / 2]) / 2, t[0], t[steps - 1], steps);
        /* the process's peak resident memory so far (one case per process in
           bench/train_step): model, plan buffers, gradients, oneDNN's scratch */
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        if (!k->infer) printf(", last loss %.4f", loss);
        double fl = k->frames ? -1.0 : conv_flops(pf_model_net(m), k->batch, p, p);
        if (fl >= 0) printf(", conv %.3f GFLOP/step", 1e-9 * fl * (k->infer ? 1 : 3));
        printf(", peak RSS %.0f MiB\n", (double)ru.ru_maxrss / 1024.0);
        char rep[512];
        printf("%s precision %s: %s\n", k->name, pf_precision_name(prec),
               pf_model_precision_report(m, rep, sizeof rep));
        pf_graph_profile_print(stdout);     /* PF_GRAPH_PROFILE=1: time per op */
    }
    free(t);
    free(out);
    free(lq);
    free(gt);
    pf_adam_free(&adam);
    pf_model_destroy(&m);
    return rc;
}

int main(int argc, char **argv) {
    int steps = 10, warmup = 3, mark = 0, smoke = 0, print_isa = 0;
    const char *only = "", *precision = "fp32";
    int bad = argc % 2 == 0;
    for (int i = 1; !bad && i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
        else if (!strcmp(argv[i], "--mark")) mark = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--smoke")) smoke = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--precision")) precision = argv[i + 1];
        else if (!strcmp(argv[i], "--isa")) print_isa = atoi(argv[i + 1]);
        else bad = 1;
    }
    int found = !*only;
    for (int i = 0; i < N_CASES; i++) found |= !strcmp(only, CASES[i].name);
    pf_precision prec = PF_PREC_FP32;
    bad |= pf_precision_parse(precision, &prec) != 0;
    if (bad || !found) {
        fprintf(stderr, "usage: %s [--steps N] [--warmup W] [--only CASE] [--mark 1] "
                "[--smoke 1] [--precision fp32|bf16] [--isa 1]\ncases:",
                argv[0]);
        for (int i = 0; i < N_CASES; i++) fprintf(stderr, " %s", CASES[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    char isa[32];
    if (print_isa) {
        const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
        printf("oneDNN ISA %s, bf16 unit %s\n", isa, unit ? unit : "none");
        return 0;
    }
    if (prec == PF_PREC_BF16 && !pf_dnnl_bf16_isa(isa, sizeof isa)) {
        fprintf(stderr, "%s: --precision bf16: no bf16 unit: oneDNN's ISA here is %s (bf16 "
                "needs AVX512_BF16 or AMX; it is refused, never emulated)\n", argv[0], isa);
        return 77;
    }
    if (steps < 1) steps = 1;
    if (warmup < 0) warmup = 0;
    int rc = 0;
    for (int i = 0; i < N_CASES; i++)
        if (!*only || !strcmp(only, CASES[i].name))
            rc |= bench(&CASES[i], warmup, steps, mark, smoke, prec);
    return rc ? 1 : 0;
}
