/*  test_model_cuda_host — the CUDA backend's model code run on the host, with
    tests/cuda_host/host_ops.c standing in for the CUDA runtime, the kernels (naive loops from
    the contracts in nn/cuda/ops.h) and cuDNN: pf_cuda_model (nn/cuda/model_cuda.c: the
    staging of batches; nn/cuda/graph_cuda.c: the CUDA executor over the network description
    of nn/net.h, for every network) and the device optimiser (nn/cuda/optim_cuda.c), against the CPU model
    (nn/model.h) with the same weights and batches: parameter table, loss, every gradient
    tensor, inference, and the parameters after 3 Adam steps, for each network at x2 / x3 / x4
    and odd sizes, with L1, MSE and Charbonnier losses. What it checks is the host side of the
    backend — descriptions, plans (sizes, liveness reuse in inference), the order of the ops,
    their arguments, the gradient bookkeeping; the kernels themselves need a GPU
    (bench/gpu/gpu_check, which runs the same comparisons there). Built only with the CUDA backend (the headers come from the toolkit).
    bf16 (pf_cuda_model_set_precision; nn/cuda/conv_bf16.c around host_cudnn.c's raw bf16
    convolutions): EDSR and MSRResNet against the CPU model in fp32: loss and inference within
    2e-2 (gpu_check's TOL_LOW; measured <= 2.5e-3), gradients within 0.2 per tensor: exact
    autocast semantics are 5-11% from fp32 on the small networks' weight gradients
    (tests/reference/bf16_conv_grad_ref.py, float64 with bf16 rounding: 7.9% MSE, 10.6% L1 on an
    EDSR x3 16 / 2; measured here up to 8.7%); parameters after 3 Adam steps within 6 lr of
    the CPU's (Adam moves a parameter at most about lr a step; a near-zero gradient may take
    the other sign in bf16); and the refusals (compute capability below 8.0, after the first
    step).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/cpu/dnnl_ctx.h" /* PF_PREC_BF16 */
#include "nn/cuda/model_cuda.h"
#include "nn/cuda/optim_cuda.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "tests/cuda_host/net_cases.h"
#include "tests/pf_test.h"

#define TOL 1e-4 /* max |a - b| / max |b| per tensor, as the GPU check (fp32) */
#define TOL_BF16 2e-2 /* the CUDA model in bf16 against the CPU's fp32 (gpu_check's TOL_LOW) */
#define TOL_BF16_GRAD 0.2 /* its gradients (the head comment says why) */

static int g_bf16;   /* check(): the CUDA model's convolutions in bf16, tolerance TOL_BF16 */

static uint64_t rng = 12345;
static void random_u8(uint8_t *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (uint8_t)(rng >> 56);
    }
}

/* Device bytes of the hand-written EDSR plan the CUDA backend had before the network
   description (nn/cuda/model_cuda.c at 662d5b3), from its buffer list: training kept x, f0,
   a[1..n_blocks], t[0..n_blocks-1], r, a temporary, the largest upsample conv output, the
   pixel shuffle outputs, out, pred, gt and the gradients d_out, d_q (largest shuffle output),
   d_r, d_a, d_t; inference x, f0, three block buffers, the temporary, the upsample buffers,
   out and pred. The executor must not need more (issue: memory by liveness). */
static size_t edsr_hand_bytes(int n, int h, int w, int c, int nb, int scale, int training) {
    int r = scale == 3 ? 3 : 2, ns = scale == 4 ? 2 : 1;
    size_t feat = (size_t)n * c * h * w, lq = (size_t)n * 3 * h * w, pmax = 0, qmax = 0,
           qsum = 0;
    size_t sh = (size_t)h, sw = (size_t)w;
    for (int s = 0; s < ns; s++) {
        size_t ps = (size_t)n * c * r * r * sh * sw;
        if (ps > pmax) pmax = ps;
        sh *= r, sw *= r;
        size_t qs = (size_t)n * c * sh * sw;
        if (qs > qmax) qmax = qs;
        qsum += qs;
    }
    size_t hq = (size_t)n * 3 * sh * sw;
    size_t floats = lq + 2 * feat + pmax + 2 * hq + qsum;  /* x f0 tmp p out pred q */
    if (training)
        floats += (2 * (size_t)nb + 4) * feat + 2 * hq + qmax;  /* t a r d_r d_a d_t gt d_out d_q */
    else
        floats += 3 * feat;
    return floats * sizeof(float) + lq + (training ? hq : 0);   /* + the uint8 upload */
}

static double max_rel_err(const float *got, const float *ref, size_t n) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= worst)) worst = d;
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    }
    return scale > 0 ? worst / scale : worst;
}

/* Worst per-tensor error over the flat buffers, and that tensor's name; skip: a substring of
   the names left out (NULL: none). */
static double worst_tensor(const pf_model *cpu, const float *got, const float *ref,
                           const char *skip, const char **name) {
    double worst = 0;
    *name = "";
    for (int i = 0; i < pf_model_num_tensors(cpu); i++) {
        const pf_param_info *t = pf_model_tensor_info(cpu, i);
        if (skip && strstr(t->name, skip)) continue;
        double e = max_rel_err(got + t->offset, ref + t->offset, t->numel);
        if (!(e <= worst)) {
            worst = e;
            *name = t->name;
        }
    }
    return worst;
}

/* The CPU model's inference of the first sample of a batch of T-frame samples: one image, a
   T-frame clip (a recurrent network: T frames out) or one window (EDVR: its center frame's
   SR). 0, or -1 with err. */
static int infer_cpu(pf_model *m, const uint8_t *lq, int T, int h, int w, float *out, char *err,
                     size_t errlen) {
    if (pf_model_is_window(m)) return pf_model_infer_window(m, lq, h, w, out, err, errlen);
    if (T > 1) return pf_model_infer_clip(m, lq, T, h, w, out, err, errlen);
    return pf_model_infer(m, lq, h, w, out, err, errlen);
}

/* hp: EDSR and MSRResNet n_feats n_blocks (EDSR res_scale hp[2] / 10); RCAN n_feats n_blocks
   num_group squeeze_factor; RRDBNet n_feats n_blocks num_grow_ch; FSRCNN d s m; SRCNN c1 c2;
   ESPCN none; the video networks net_cases.h's pf_net_case_video: BasicVSR and BasicVSR++
   num_feat num_block and the frames T of a training clip (batches of n x T LQ and GT frames,
   inference of a T-frame clip against pf_model_infer_clip), EDVR num_feat num_frame
   deformable_groups center (batches of n x num_frame LQ frames and n center GT frames,
   inference of one window against pf_model_infer_window). */
static void check(const char *type, int scale, int h, int w, const int hp[4], const char *loss) {
    pf_config c;
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "%s", type);
    snprintf(c.loss_type, sizeof c.loss_type, "%s", loss);
    c.scale = scale;
    int video = pf_net_case_video(&c, type, hp);
    if (!strcmp(type, "EDSR") || !strcmp(type, "MSRResNet") || !strcmp(type, "RCAN") ||
        !strcmp(type, "RRDBNet")) {
        c.n_feats = hp[0];
        c.n_blocks = hp[1];
    }
    if (!strcmp(type, "EDSR")) {
        c.res_scale = (float)hp[2] / 10.0f;
    } else if (!strcmp(type, "RCAN")) {
        c.num_group = hp[2];
        c.squeeze_factor = hp[3];
    } else if (!strcmp(type, "RRDBNet")) {
        c.num_grow_ch = hp[2];
    } else if (!strcmp(type, "FSRCNN")) {
        c.fsrcnn_d = hp[0];
        c.fsrcnn_s = hp[1];
        c.fsrcnn_m = hp[2];
    } else if (!strcmp(type, "SRCNN")) {
        c.srcnn_channels[1] = hp[0];
        c.srcnn_channels[2] = hp[1];
    }
    char label[96], err[512] = "";
    const double tol_net = g_bf16 ? TOL_BF16 : TOL;
    pf_model *cpu = pf_model_new(&c, err, sizeof err);
    /* LQ frames in (T) and out (OT) a sample: 1 and 1 for an image network, T and T for a
       recurrent one, num_frame and 1 for EDVR */
    int T = cpu ? pf_model_frames(cpu) : 1, OT = cpu ? pf_model_out_frames(cpu) : 1;
    int window = cpu && pf_model_is_window(cpu);
    if (video) snprintf(label, sizeof label, "%s x%d %dx%dx%d%s %s", type, scale, T, h, w,
                        window ? " window" : "", loss);
    else snprintf(label, sizeof label, "%s x%d %dx%d %s%s", type, scale, h, w, loss,
                  g_bf16 ? " bf16" : "");
    pf_cuda_model *dev = cpu ? pf_cuda_model_new(&c, 0, 0, err, sizeof err) : NULL;
    if (dev && g_bf16 &&
        pf_cuda_model_set_precision(dev, PF_PREC_BF16, PF_PREC_BF16, "test", err, sizeof err))
        pf_cuda_model_destroy(&dev);
    CHECK(cpu && dev, "%s: %s", label, err);
    if (!cpu || !dev) {
        pf_model_destroy(&cpu);
        return;
    }
    pf_model_init(cpu, 7);

    /* the same parameter table */
    size_t np = pf_model_num_params(cpu);
    int same = pf_cuda_model_num_params(dev) == np &&
               pf_cuda_model_num_tensors(dev) == pf_model_num_tensors(cpu);
    for (int i = 0; same && i < pf_model_num_tensors(cpu); i++)
        same = !strcmp(pf_cuda_model_tensor_info(dev, i)->name,
                       pf_model_tensor_info(cpu, i)->name) &&
               pf_cuda_model_tensor_info(dev, i)->offset == pf_model_tensor_info(cpu, i)->offset;
    CHECK(same, "%s: parameter tables differ", label);

    CHECK(pf_cuda_model_frames(dev) == T && pf_cuda_model_out_frames(dev) == OT &&
              (!video || T > 1) && (OT == T || (window && OT == 1)),
          "%s: frames in / out %d / %d, the CPU model's %d / %d", label,
          pf_cuda_model_frames(dev), pf_cuda_model_out_frames(dev), T, OT);

    int n = 2, H = h * scale, W = w * scale;
    size_t lq = (size_t)n * T * h * w * 3, hq = (size_t)n * OT * H * W * 3;
    size_t n_out = (size_t)OT * H * W * 3;     /* one inference's output */
    uint8_t *in = malloc(lq + hq);
    float *got = malloc(np * sizeof(float));
    float *out_cpu = malloc(n_out * sizeof(float));
    float *out_dev = malloc(n_out * sizeof(float));
    if (!in || !got || !out_cpu || !out_dev) exit(2);
    random_u8(in, lq + hq);
    float loss_cpu = 0, loss_dev = 0;
    int rc = pf_cuda_model_set_params(dev, pf_model_params(cpu), err, sizeof err) ||
             pf_model_train_step(cpu, in, in + lq, n, h, w, &loss_cpu, err, sizeof err) ||
             pf_cuda_model_train_step(dev, in, in + lq, n, h, w, &loss_dev, err, sizeof err) ||
             pf_cuda_model_get_grads(dev, got, err, sizeof err);
    CHECK(rc == 0, "%s: train step: %s", label, err);
    if (rc) goto done;
    CHECK(fabs((double)loss_dev - loss_cpu) <= tol_net * fabs((double)loss_cpu),
          "%s: loss %.8g, cpu %.8g", label, (double)loss_dev, (double)loss_cpu);
    for (int i = 0; i < pf_model_num_tensors(cpu); i++) {
        const pf_param_info *t = pf_model_tensor_info(cpu, i);
        double e = max_rel_err(got + t->offset, pf_model_grads(cpu) + t->offset, t->numel);
        double tol = pf_grad_tol(type, t->name, g_bf16 ? TOL_BF16_GRAD : tol_net); /* net_cases.h */
        CHECK(e <= tol, "%s: gradient of %s: max rel err %.3g (tolerance %g)", label, t->name, e,
              tol);
    }
    const char *gname;
    double ge = worst_tensor(cpu, got, pf_model_grads(cpu), NULL, &gname);

    rc = infer_cpu(cpu, in, T, h, w, out_cpu, err, sizeof err) ||
         pf_cuda_model_infer(dev, in, h, w, out_dev, err, sizeof err);
    CHECK(rc == 0, "%s: infer: %s", label, err);
    double ie = rc ? NAN : max_rel_err(out_dev, out_cpu, n_out);
    CHECK(ie <= tol_net, "%s: inference: max rel err %.3g", label, ie);

    /* 3 Adam steps on both, a new batch each (the device optimiser made from the host's). A
       video network takes SGD with momentum instead, with SPyNet (BasicVSR, BasicVSR++)
       joining at step 3 (fix_iter 2, the groups the worker makes): Adam's normalised update
       turns the float-rounding differences of near-zero gradients, which BasicVSR has many of
       at these sizes (EDVR too: its DCN offsets start at zero), into differences of a
       fraction of lr, while SGD is linear in the gradient. */
    pf_adam opt;
    pf_cuda_optim dopt;
    int spynet = !strncmp(pf_model_tensor_info(cpu, 0)->name, "spynet.", 7);
    if (!video && pf_adam_init(&opt, np, 0.9f, 0.99f, 1e-8f, 0.0f)) exit(2);
    if (video) {
        pf_optim_settings sgd = { PF_OPTIM_SGD, 0, 0, 0, 0.0f, 0.9f, 0.0f, 0 };
        int nt = pf_model_num_tensors(cpu);
        pf_optim_group *gs = calloc((size_t)nt, sizeof *gs);
        if (!gs || pf_optim_init(&opt, np, &sgd)) exit(2);
        for (int i = 0; i < nt; i++) {
            const pf_param_info *t = pf_model_tensor_info(cpu, i);
            gs[i] = (pf_optim_group){ t->offset, t->numel, 1.0f, 1.0f,
                                      strncmp(t->name, "spynet.", 7) ? 0 : 2 };
        }
        if (pf_optim_set_groups(&opt, gs, nt)) exit(2);
        free(gs);
    }
    float *before = malloc(np * sizeof(float));
    if (!before) exit(2);
    memcpy(before, pf_model_params(cpu), np * sizeof(float));
    rc = pf_cuda_optim_init(&dopt, &opt, pf_cuda_model_stream(dev), err, sizeof err);
    CHECK(rc == 0, "%s: optimiser: %s", label, err);
    for (int t = 1; rc == 0 && t <= 3; t++) {
        if (t > 1) {
            random_u8(in, lq + hq);
            rc = pf_model_train_step(cpu, in, in + lq, n, h, w, &loss_cpu, err, sizeof err) ||
                 pf_cuda_model_train_step(dev, in, in + lq, n, h, w, &loss_dev, err,
                                          sizeof err);
        }
        float lr = video ? 1e-2f : 1e-4f;
        pf_optim_step(&opt, pf_model_params(cpu), pf_model_grads(cpu), lr);
        rc = rc || pf_cuda_optim_step(&dopt, pf_cuda_model_params_device(dev),
                                      pf_cuda_model_grads_device(dev), lr, err, sizeof err);
        if (spynet && t == 2) {     /* SPyNet untouched so far, the rest moved */
            const pf_param_info *s0 = pf_model_tensor_info(cpu, 0);
            const pf_param_info *tl = pf_model_tensor_info(cpu, pf_model_num_tensors(cpu) - 1);
            rc = rc || pf_cuda_model_get_params(dev, got, err, sizeof err);
            CHECK(rc == 0 && !strncmp(s0->name, "spynet.", 7) &&
                      !memcmp(got + s0->offset, before + s0->offset,
                              s0->numel * sizeof(float)) &&
                      memcmp(got + tl->offset, before + tl->offset, tl->numel * sizeof(float)),
                  "%s: after 2 steps SPyNet (%s) unchanged on the device, %s moved", label,
                  s0->name, tl->name);
        }
    }
    free(before);
    rc = rc || pf_cuda_model_get_params(dev, got, err, sizeof err);
    CHECK(rc == 0, "%s: Adam steps: %s", label, err);
    const char *pname = "";
    /* EDVR's DCN offset convolutions (conv_offset) start at zero (BasicSR's init_offset), so
       after a step every deformable sample lies a hair from a pixel, where bilinear
       sampling's derivative jumps: the CPU (float) and host_ops.c's stand-ins (double) take
       different sides, and conv_offset's parameters after 3 steps came 0.84 apart (relative)
       with the stand-ins, 2e-6 with the real kernels (float too). Drawing them instead puts
       samples across pixels and the offset path's gradients part at the first step.
       Everything else is compared; the inference below runs the stepped offsets. */
    const char *skip = window ? "conv_offset" : NULL;
    double pe = rc ? NAN : worst_tensor(cpu, got, pf_model_params(cpu), skip, &pname);
    if (g_bf16) {   /* within 6 lr (1e-4) of the CPU's, absolute */
        pe = 0;
        for (size_t i = 0; rc == 0 && i < np; i++) {
            double d = fabs((double)got[i] - pf_model_params(cpu)[i]);
            if (!(d <= pe)) pe = d;
        }
        CHECK(rc == 0 && pe <= 6e-4, "%s: parameters after 3 Adam steps: max |diff| %.3g "
              "(bound 6 lr = 6e-4)", label, pe);
    } else {
        CHECK(pe <= pf_param_tol(type, tol_net), "%s: parameters after 3 %s steps: %s max rel "
              "err %.3g", label, video ? "SGD" : "Adam", pname, pe);   /* net_cases.h */
    }
    /* an eval forward with the trained weights (evaluation after some iterations) */
    double ae = NAN;
    if (rc == 0) {
        rc = infer_cpu(cpu, in, T, h, w, out_cpu, err, sizeof err) ||
             pf_cuda_model_infer(dev, in, h, w, out_dev, err, sizeof err);
        CHECK(rc == 0, "%s: infer after the steps: %s", label, err);
        ae = rc ? NAN : max_rel_err(out_dev, out_cpu, n_out);
        CHECK(ae <= tol_net, "%s: inference after 3 steps: max rel err %.3g", label, ae);
    }
    if (rc == 0) pf_cuda_optim_free(&dopt);
    pf_optim_free(&opt);
    size_t tb = pf_cuda_model_plan_bytes(dev, 1), ib = pf_cuda_model_plan_bytes(dev, 0);
    if (!strcmp(type, "EDSR")) {
        size_t ht = edsr_hand_bytes(n, h, w, hp[0], hp[1], scale, 1);
        size_t hi = edsr_hand_bytes(1, h, w, hp[0], hp[1], scale, 0);
        CHECK(tb <= ht && ib <= hi, "%s: device plan bytes training %zu (hand plan %zu), "
              "inference %zu (hand plan %zu)", label, tb, ht, ib, hi);
        printf("%-28s device plans: training %zu bytes (hand plan %zu), inference %zu (%zu)\n",
               label, tb, ht, ib, hi);
    }
    printf("%-28s loss %.6f / %.6f, worst gradient %.2e (%s), inference %.2e, "
           "3 %s steps %.2e, then inference %.2e, device plans %zu / %zu bytes\n", label,
           (double)loss_dev, (double)loss_cpu, ge, gname, ie,
           !video ? "Adam" : spynet ? "SGD (fix_iter 2)" : "SGD", pe, ae, tb, ib);
done:
    free(in), free(got), free(out_cpu), free(out_dev);
    pf_cuda_model_destroy(&dev);
    pf_model_destroy(&cpu);
}

/* The CUDA model as a pf_infer_net (what worker/device_cuda.c's pf_gpu_infer_net makes for
   `pixflow upscale --device cuda:N`; that file needs NCCL, so the test has its own). */
static int run_dev(void *m, const void *lq, size_t es, int h, int w, float *out, char *err,
                   size_t errlen) {
    if (es != 1) return snprintf(err, errlen, "float input"), -1;
    return pf_cuda_model_infer(m, lq, h, w, out, err, errlen);
}

/* pf_infer_on's tiling and x8 ensemble over the CUDA model (windows of several shapes, the
   plan rebuilt between them) against pf_infer on the CPU model with the same weights. */
static void check_tiled(const char *type, int scale, int h, int w, int tile, int overlap) {
    pf_config c;
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "%s", type);
    c.scale = scale, c.n_feats = 8, c.n_blocks = 1, c.num_grow_ch = 4;
    char err[512] = "";
    pf_model *cpu = pf_model_new(&c, err, sizeof err);
    pf_cuda_model *dev = cpu ? pf_cuda_model_new(&c, 0, 0, err, sizeof err) : NULL;
    CHECK(cpu && dev, "%s tiled: %s", type, err);
    if (!cpu || !dev) {
        pf_model_destroy(&cpu);
        return;
    }
    pf_model_init(cpu, 11);
    size_t n_out = (size_t)h * scale * w * scale * 3;
    uint8_t *in = malloc((size_t)h * w * 3);
    float *out_cpu = malloc(n_out * sizeof(float)), *out_dev = malloc(n_out * sizeof(float));
    if (!in || !out_cpu || !out_dev) exit(2);
    random_u8(in, (size_t)h * w * 3);
    pf_infer_opts o = { .ensemble = 1, .tile = tile, .tile_overlap = overlap };
    pf_infer_net net = { .scale = pf_cuda_model_scale(dev),
                         .input_multiple = pf_model_input_multiple(cpu), .run = run_dev,
                         .ctx = dev };
    int rc = pf_cuda_model_set_params(dev, pf_model_params(cpu), err, sizeof err) ||
             pf_infer(cpu, in, h, w, &o, out_cpu, err, sizeof err) ||
             pf_infer_on(&net, in, 1, h, w, &o, out_dev, err, sizeof err);
    CHECK(rc == 0, "%s tiled: %s", type, err);
    double e = rc ? NAN : max_rel_err(out_dev, out_cpu, n_out);
    CHECK(e <= TOL, "%s x%d %dx%d tile %d overlap %d, x8 ensemble: max rel err %.3g", type,
          scale, h, w, tile, overlap, e);
    printf("%s x%d %dx%d tile %d overlap %d x8 ensemble on the CUDA model: max rel err %.3g\n",
           type, scale, h, w, tile, overlap, e);
    free(in);
    free(out_cpu);
    free(out_dev);
    pf_cuda_model_destroy(&dev);
    pf_model_destroy(&cpu);
}

int main(void) {
    check("EDSR", 2, 12, 12, (const int[4]){16, 2, 10, 0}, "L1Loss");
    check("EDSR", 3, 17, 13, (const int[4]){16, 2, 5, 0}, "MSELoss");
    check("EDSR", 4, 17, 13, (const int[4]){16, 2, 1, 0}, "L1Loss");
    check("EDSR", 2, 12, 12, (const int[4]){16, 2, 10, 0}, "CharbonnierLoss");
    /* the ones gpu_check runs too, the video network's (EDVR) at the end: every
       case draws its batches from one random sequence, and an L1 case's gradients hang on
       which side of a GT value each prediction lands (BasicVSR 20 x 24's trunk gradients go
       to 1.7e-4 with the draws shifted by the video cases'), so the others keep theirs */
    pf_config probe;
    for (int i = 0; i < PF_NET_CASES; i++)
        if (!pf_net_case_video(&probe, pf_net_cases[i].type, pf_net_cases[i].hp))
            check(pf_net_cases[i].type, pf_net_cases[i].scale, pf_net_cases[i].h,
                  pf_net_cases[i].w, pf_net_cases[i].hp, pf_net_cases[i].loss);
    /* BasicVSR: SPyNet at 32 x 32 (12 x 12 rounded up: both resizes, six levels down to 1 x
       1) and at 64 x 64 (20 x 24), warps with zeros and border padding, every video op
       (EDVR is pf_net_cases') */
    check("BasicVSR", 4, 12, 12, (const int[4]){8, 1, 3, 0}, "CharbonnierLoss");
    check("BasicVSR", 4, 20, 24, (const int[4]){12, 2, 2, 0}, "L1Loss");
    /* bf16 mixed precision against the CPU's fp32 */
    g_bf16 = 1;
    check("EDSR", 2, 12, 12, (const int[4]){16, 2, 10, 0}, "L1Loss");
    check("EDSR", 3, 17, 13, (const int[4]){16, 2, 5, 0}, "MSELoss");
    check("MSRResNet", 4, 12, 12, (const int[4]){16, 2, 0, 0}, "CharbonnierLoss");
    g_bf16 = 0;
    /* after the cases above: they draw their data from the same random sequence */
    check_tiled("EDSR", 2, 18, 14, 7, 6);
    check_tiled("RRDBNet", 2, 18, 14, 5, 4);   /* tiles aligned to the input multiple 2 */
    for (int i = 0; i < PF_NET_CASES; i++)
        if (pf_net_case_video(&probe, pf_net_cases[i].type, pf_net_cases[i].hp))
            check(pf_net_cases[i].type, pf_net_cases[i].scale, pf_net_cases[i].h,
                  pf_net_cases[i].w, pf_net_cases[i].hp, pf_net_cases[i].loss);

    /* refusals, named */
    pf_config c;
    char err[512] = "";
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "RRDBNet");
    c.scale = 2, c.n_feats = 8, c.n_blocks = 1, c.num_grow_ch = 4;
    pf_cuda_model *m = pf_cuda_model_new(&c, 0, 0, err, sizeof err);
    uint8_t px[13 * 12 * 3] = {0};
    float out[13 * 12 * 3 * 4];
    CHECK(m && pf_cuda_model_infer(m, px, 13, 12, out, err, sizeof err) != 0 &&
              strstr(err, "not divisible by 2"),
          "odd size for RRDBNet x2: '%s'", err);
    pf_cuda_model_destroy(&m);
    /* bf16: refused on a device below compute capability 8.0, and after the first step */
    m = pf_cuda_model_new(&c, 0, 0, err, sizeof err);
    setenv("PF_HOST_CC", "7.5", 1);
    CHECK(m && pf_cuda_model_set_precision(m, PF_PREC_BF16, PF_PREC_FP32, "train_cfg.precision",
                                           err, sizeof err) != 0 &&
              strstr(err, "train_cfg.precision") && strstr(err, "7.5") &&
              strstr(err, "8.0"),
          "bf16 on compute capability 7.5: '%s'", err);
    CHECK(m && pf_cuda_model_set_precision(m, PF_PREC_FP32, PF_PREC_FP32, "x", err,
                                           sizeof err) == 0,
          "fp32 on compute capability 7.5: '%s'", err);
    unsetenv("PF_HOST_CC");
    uint8_t px2[12 * 12 * 3] = {0};
    CHECK(m && pf_cuda_model_infer(m, px2, 12, 12, out, err, sizeof err) == 0 &&
              pf_cuda_model_set_precision(m, PF_PREC_BF16, PF_PREC_BF16, "test_cfg.precision",
                                          err, sizeof err) != 0 &&
              strstr(err, "test_cfg.precision") && strstr(err, "before the first step"),
          "bf16 after inference: '%s'", err);
    pf_cuda_model_destroy(&m);
    /* EDVR: an LQ size not a multiple of 4, in training and inference, with the CPU's words */
    pf_config_defaults(&c);
    snprintf(c.model_type, sizeof c.model_type, "EDVR");
    c.scale = 4;
    pf_net_case_video(&c, "EDVR", (const int[4]){8, 3, 2, 0});
    m = pf_cuda_model_new(&c, 0, 0, err, sizeof err);
    static uint8_t edvr_in[2 * 3 * 12 * 10 * 3 + 2 * 48 * 40 * 3];
    float edvr_loss = 0;
    CHECK(m && pf_cuda_model_train_step(m, edvr_in, edvr_in + 2 * 3 * 12 * 10 * 3, 2, 12, 10,
                                        &edvr_loss, err, sizeof err) != 0 &&
              strstr(err, "EDVR: LQ 12 x 10: height and width must be multiples of 4"),
          "EDVR train step at 12 x 10: '%s'", err);
    float *edvr_out = malloc(48 * 40 * 3 * sizeof(float));
    if (!edvr_out) exit(2);
    CHECK(m && pf_cuda_model_infer(m, edvr_in, 10, 12, edvr_out, err, sizeof err) != 0 &&
              strstr(err, "EDVR: LQ 10 x 12: height and width must be multiples of 4"),
          "EDVR inference at 10 x 12: '%s'", err);
    free(edvr_out);
    pf_cuda_model_destroy(&m);
    snprintf(c.model_type, sizeof c.model_type, "NoSuchNet");
    CHECK(pf_cuda_model_new(&c, 0, 0, err, sizeof err) == NULL && strstr(err, "NoSuchNet"),
          "unknown type: '%s'", err);
    snprintf(c.model_type, sizeof c.model_type, "EDSR");
    snprintf(c.loss_type, sizeof c.loss_type, "PerceptualLoss");
    CHECK(pf_cuda_model_new(&c, 0, 0, err, sizeof err) == NULL && strstr(err, "PerceptualLoss"),
          "unknown loss: '%s'", err);
    return pf_test_end("test_model_cuda_host");
}
