/*  worker — `pixflow worker --connect ADDR [--device cpu]`: trains the network.

    It binds a PULL data endpoint, joins the job (HELLO names that endpoint), waits for START,
    builds the model and its optimiser (optimizers, paramwise_cfg, ema_decay) and restores them
    (resume_from: weights, EMA, optimiser, iteration, and a GAN job's net_d and optim_d;
    load_from: weights only; else init from the seed), then grants `prefetch` credits and
    consumes batches
    strictly in ticket order: batch for global iteration `it` is ticket it * W + rank. Each
    consumed batch is acknowledged and its credit returned; duplicates (a reissued ticket whose
    first loader was not dead after all) are dropped by ticket id.

    Every `checkpoint_config.interval` iterations, at the end and on an interrupt, the state goes
    to the checkpoint hook over an acknowledged DEALER/ROUTER exchange; the worker waits until
    the files are on disk. Every consumed batch is recorded in work_dir/samples_rankN.log
    (iteration, epoch, ticket, sample ids, a digest of the pixels) so tests can check that each
    sample came exactly once per epoch and that batches do not depend on the loaders.

    One loop runs it all (worker_run, on runtime/reactor): STARTING until START, then TRAINING,
    where a step is a task ready while its batch is in, and on rank 0 CHECKPOINTING between a
    checkpoint's send and the hook's reply. ctrl is read in every phase; a stop or an abort is
    heard between two steps, never inside one.
*/
#include "worker/worker.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/checkpoint.h"
#include "common/gan_cfg.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/number.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/collective.h"
#include "nn/cpu/dnnl_ctx.h"
#include "nn/gan.h"
#include "nn/lr_schedule.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "runtime/client.h"
#include "proto/proto.h"
#include "runtime/reactor.h"
#include "proto/security.h"
#include "worker/device.h"
#include "worker/gan_state.h"
#include "worker/train_state.h"

#define CKPT_ACK_TIMEOUT_S 120.0
#define COLLECTIVE_TIMEOUT_S 60.0  /* rendezvous, and each all-reduce: a dead rank ends the job */

typedef struct {
    int used;
    pf_parts parts;             /* header + gt + lq (+ gt_plain) frames, owned */
    pf_msg_batch hdr;
} slot;

typedef struct {
    pf_client client;
    pf_config *cfg;
    void *zctx;                 /* the ZeroMQ context of every socket below */
    void *data;                 /* PULL, bound */
    void *ckpt;                 /* DEALER to the checkpoint hook */
    int rank, world;
    int64_t total_iters, iters_per_epoch;
    pf_model *model;            /* the CPU model; NULL on a GPU (gpu) */
    const pf_net *net;          /* the network's description: the model's, or gpu_net */
    float *params;              /* the host parameters (loading, checkpoints): the model's, or
                                   on a GPU gpu_params, the device's copy when it was last
                                   uploaded or downloaded */
    pf_net gpu_net;             /* on a GPU: the description alone (no CPU model) */
    float *gpu_params;          /* and its host parameter buffer */
    pf_optim optim;
    pf_gan *gan;                /* a GAN job (cfg->gan.enabled): net_d, the VGG and the step
                                   around model (CPU only); NULL otherwise */
    pf_optim optim_d;           /* and net_d's optimiser (gan.optim_d) */
    char resume_path[PF_PATH_MAX + 64]; /* the weights file restore() resumed from, "" = none:
                                   build_gan restores net_d and optim_d from beside it */
    uint32_t gan_terms;         /* the last GAN step's logged terms (pf_msg_event.gan_terms:
                                   bit i for gan_means[i]); 0 when no rank stepped */
    double gan_means[PF_GAN_N_TERMS]; /* and their means over the group (the train event) */
    slot *slots;                /* prefetch slots, a batch for iteration it sits in it % n */
    int n_slots;
    FILE *samples_log;
    int stop_requested;         /* STOP interrupt or a signal here: checkpoint and leave */
    int stop_agreed;            /* data parallel: some rank asked to stop; all stop after the
                                   same step (voted in the per-step all-reduce) */
    pf_collective *coll;        /* Gloo group of the world_size CPU workers, NULL otherwise */
    pf_gpu *gpu;                /* --device cuda:N: the model on the GPU (NCCL group inside) */
    int grouped;                /* world_size > 1: steps are agreed through a collective */
    int precision_logged;       /* the models' precision reports are in the log (after the
                                   first step, when their convolutions are set up) */
    int abort_requested;        /* STOP abort received: leave now */
    int window_batch;           /* a batch with one GT frame a sample came: leave with an error */
    uint64_t dropped;           /* duplicate or malformed batches */
    uint64_t skipped;           /* samples the loaders left out (data.on_bad_sample: skip) */
    uint64_t empty_steps;       /* iterations whose batch had no sample left: no step taken */
    uint64_t visuals;           /* visual messages published */
    double visual_time;         /* seconds spent preparing and publishing them */
    float *visual_out;          /* the step's output of the published samples (NHWC float) */
    uint8_t *visual_u8;         /* the same as uint8 */
    size_t visual_cap;          /* floats / bytes each of the two holds */
    int64_t it;                 /* the next iteration to train (iterations done) */
    int64_t last_ckpt;          /* the iteration of the last checkpoint (or of the start) */
    int64_t epoch;              /* the epoch of the last batch trained */
    double lr;                  /* the learning rate of the last step */
    double wait_since;          /* pf_now() when the wait for the batch of `it` began */
} worker;

static void publish_status(worker *w, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void publish_status(worker *w, const char *kind, const char *fmt, ...) {
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    snprintf(ev->kind, sizeof ev->kind, "%s", kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->text, sizeof ev->text, fmt, ap);
    va_end(ap);
    ev->total_iters = w->total_iters;
    pf_client_publish(&w->client, ev);
    free(ev);
}

/* Every rank, every 2 s of training and when it starts: a `worker` event with its device and
   memory in use (cpu: resident set from /proc/self/statm; cuda: pf_gpu_mem_used) for
   `pixflow monitor`. */
#define WORKER_EVENT_INTERVAL_S 2.0

static void publish_worker(worker *w, const char *device, int64_t iter) {
    pf_msg_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    snprintf(ev->kind, sizeof ev->kind, "worker");
    ev->iter = iter;
    ev->total_iters = w->total_iters;
    ev->rank = w->rank;
    ev->pid = getpid();
    snprintf(ev->host, sizeof ev->host, "%s", pf_hostname());
    snprintf(ev->device, sizeof ev->device, "%s", device);
    int64_t mem = w->gpu ? pf_gpu_mem_used(w->gpu) : -1;
    if (mem < 0) {
        long pages = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f && fscanf(f, "%ld %ld", &pages, &resident) == 2)
            mem = (int64_t)resident * sysconf(_SC_PAGESIZE);
        if (f) fclose(f);
    }
    ev->mem_bytes = mem > 0 ? mem : 0;
    pf_client_publish(&w->client, ev);
    free(ev);
}

/* 1 when training must stop after the current step: alone, as soon as asked; in a group, only
   once the ranks agreed (each step's vote), so every rank leaves after the same step and no
   all-reduce is left waiting for a rank that is gone. */
static int stop_now(const worker *w) {
    return w->grouped ? w->stop_agreed : w->stop_requested;
}

#define GAN_TERMS 8         /* the logged terms of a GAN step (pf_gan_losses' doubles) */
_Static_assert(GAN_TERMS == PF_GAN_N_TERMS, "the train event carries gan_step's terms in order");

/* Data parallel: average the gradients over the ranks that had samples (so the learning rate
   means the same for any world size), average the loss (and a GAN job's n_terms logged terms)
   for the log, and vote on stopping. A GAN job's net_d gradients are averaged the same way
   (one more all-reduce). `has_samples` is 0 for a rank whose batch lost every sample
   (data.on_bad_sample: skip): it contributes zero gradients. Returns how many ranks had
   samples (0: nobody steps), or -1 with err. */
static int sync_step(worker *w, int has_samples, float *loss, float *terms, int n_terms,
                     char *err, size_t errlen) {
    if (!w->coll) return has_samples;
    float *g = pf_model_grads(w->model);
    size_t n = pf_model_num_params(w->model);
    float *gd = w->gan ? pf_gan_d_grads(w->gan) : NULL;
    size_t nd = w->gan ? pf_gan_d_num_params(w->gan) : 0;
    if (!has_samples) {
        memset(g, 0, n * sizeof *g);
        if (gd) memset(gd, 0, nd * sizeof *gd);
        *loss = 0;
        for (int i = 0; i < n_terms; i++) terms[i] = 0;
    }
    if (pf_collective_allreduce_sum(w->coll, g, n, err, errlen) != 0 ||
        (gd && pf_collective_allreduce_sum(w->coll, gd, nd, err, errlen) != 0))
        return -1;
    float vote[3 + GAN_TERMS] = { *loss, w->stop_requested ? 1.0f : 0.0f,
                                  has_samples ? 1.0f : 0.0f };
    for (int i = 0; i < n_terms; i++) vote[3 + i] = terms[i];
    if (pf_collective_allreduce_sum(w->coll, vote, 3 + (size_t)n_terms, err, errlen) != 0)
        return -1;
    int ranks = (int)(vote[2] + 0.5f);
    float inv = ranks ? 1.0f / (float)ranks : 0.0f;
    for (size_t i = 0; i < n; i++) g[i] *= inv;
    for (size_t i = 0; i < nd; i++) gd[i] *= inv;
    *loss = vote[0] * inv;
    for (int i = 0; i < n_terms; i++) terms[i] = vote[3 + i] * inv;
    if (vote[1] > 0) w->stop_agreed = 1;
    return ranks;
}

/* sync_step, and when no rank had a sample the iteration counts as one without a step (said
   in the log). Returns 1: step, 0: no step, -1 with err. */
static int sync_or_skip(worker *w, const pf_msg_batch *b, float *loss, float *terms,
                        int n_terms, char *err, size_t errlen) {
    int ranks = sync_step(w, b->n > 0, loss, terms, n_terms, err, errlen);
    if (ranks <= 0) {
        if (ranks == 0) {
            w->empty_steps++;
            pf_warn("iteration %lld: no sample left in the batch (all skipped); no step taken",
                    (long long)b->iter);
        }
        return ranks;
    }
    return 1;
}

/* MMCV OptimizerHook: clip the (averaged) gradients of the model by their global norm
   (pf_state_clip_grads: a range not yet in the optimisation, BasicVSR's SPyNet before fix_iter
   or EDVR's non-fusion tensors before tsa_iter, is not in the norm). */
static void clip_grads(worker *w) {
    (void)pf_state_clip_grads(w->cfg, &w->optim, pf_model_grads(w->model));
}

/* The terms BasicSR logs (its loss_dict, proto.h's PF_GAN_TERM_*): the generator's when its
   step ran (l_g_percep and l_g_style when their weight is > 0: PerceptualLoss returns None
   otherwise), the discriminator's always. */
static uint32_t gan_logged(const pf_gan_cfg *gc, int g_on) {
    const pf_perceptual_opts *p = &gc->perceptual_opt;
    uint32_t g = 1u << PF_GAN_TERM_L_G_PIX | 1u << PF_GAN_TERM_L_G_GAN;
    if (gc->has_perceptual_opt && p->perceptual_weight > 0) g |= 1u << PF_GAN_TERM_L_G_PERCEP;
    if (gc->has_perceptual_opt && p->style_weight > 0) g |= 1u << PF_GAN_TERM_L_G_STYLE;
    return (g_on ? g : 0) | 1u << PF_GAN_TERM_L_D_REAL | 1u << PF_GAN_TERM_L_D_FAKE |
           1u << PF_GAN_TERM_OUT_D_REAL | 1u << PF_GAN_TERM_OUT_D_FAKE;
}

/* A GAN job's iteration (BasicSR's RealESRGANModel or ESRGANModel optimize_parameters,
   current_iter w->it + 1): pf_gan_compute on the batch (gt: the plain GT, gt_plain's frame
   when the loaders send one, i.e. with data.train.gt_usm, whose sharpened GT is then the
   batch's gt; else the batch's gt, which is plain), both networks' gradients averaged over the group, net_g's
   clipped as today (BasicSR clips nothing by default), optim_g stepped only when the
   generator step ran, optim_d always (its lr: lr_config from gan.optim_d.lr), and net_g's EMA
   every iteration (BasicSR's model_ema, also when the generator step is skipped). The logged
   loss is l_g_total = l_g_pix + l_g_percep + l_g_style + l_g_gan when the generator step ran,
   else l_d_real + l_d_fake; the terms go to the rank's log every log_config.interval (rank
   0) and, those BasicSR logs (gan_logged), into w->gan_terms / gan_means for the train event.
   Returns 0 or -1 with err. */
static int gan_step(worker *w, const pf_msg_batch *b, const uint8_t *gt, const uint8_t *lq,
                    const uint8_t *gt_plain, double lr, float *loss, char *err,
                    size_t errlen) {
    int64_t iter = w->it + 1;
    const pf_gan_cfg *gc = &w->cfg->gan;
    int g_on = iter % gc->net_d_iters == 0 && iter > gc->net_d_init_iters;
    pf_gan_losses L = { 0 };
    if (b->n > 0 && pf_gan_compute(w->gan, iter, lq, gt_plain ? gt_plain : gt,
                                   gt_plain ? gt : NULL, (int)b->n, (int)b->lq_h,
                                   (int)b->lq_w, &L, err, errlen) != 0)
        return -1;
    double t[GAN_TERMS] = { L.l_g_pix, L.l_g_percep, L.l_g_style, L.l_g_gan,
                            L.l_d_real, L.l_d_fake, L.out_d_real, L.out_d_fake };
    float terms[GAN_TERMS];   /* NaN (not computed) as 0: a rank without samples adds 0 */
    for (int i = 0; i < GAN_TERMS; i++) terms[i] = isnan(t[i]) ? 0.0f : (float)t[i];
    *loss = g_on ? terms[0] + terms[1] + terms[2] + terms[3] : terms[4] + terms[5];
    w->gan_terms = 0;
    int go = sync_or_skip(w, b, loss, terms, GAN_TERMS, err, errlen);
    if (go <= 0) return go;
    w->gan_terms = gan_logged(gc, g_on);
    for (int i = 0; i < GAN_TERMS; i++) w->gan_means[i] = terms[i];
    float *pg = pf_model_params(w->model);
    if (g_on) {
        clip_grads(w);
        pf_optim_step(&w->optim, pg, pf_model_grads(w->model), (float)lr);
    } else {
        pf_optim_ema_update(&w->optim, pg);
    }
    double lr_d = pf_lr_at_base(w->cfg, gc->optim_d.lr, w->it);
    pf_optim_step(&w->optim_d, pf_gan_d_params(w->gan), pf_gan_d_grads(w->gan), (float)lr_d);
    if (w->rank == 0 && w->cfg->log_interval > 0 && iter % w->cfg->log_interval == 0) {
        if (g_on)
            pf_info("gan: iter %lld: l_g_pix %.6g l_g_percep %.6g l_g_style %.6g l_g_gan %.6g "
                    "l_d_real %.6g l_d_fake %.6g out_d_real %.6g out_d_fake %.6g lr_d %.6g",
                    (long long)iter, terms[0], terms[1], terms[2], terms[3], terms[4],
                    terms[5], terms[6], terms[7], lr_d);
        else
            pf_info("gan: iter %lld: l_d_real %.6g l_d_fake %.6g out_d_real %.6g out_d_fake "
                    "%.6g lr_d %.6g (no generator step)", (long long)iter, terms[4], terms[5],
                    terms[6], terms[7], lr_d);
    }
    return 0;
}

/* One iteration's training step on batch b (gt, lq: its frames; gt_plain: its unsharpened GT
   frame, NULL when the batch has none — data.train.gt_plain, for the GAN step of issue 41,
   gan_step; unused by the one-network step): forward, backward, gradients
   averaged over the group, clipped (optimizer_config.grad_clip), the optimiser step and the
   EMA (nn/optim; on a GPU the same, nn/cuda/optim_cuda). A batch whose every sample was skipped
   (data.on_bad_sample: skip) takes no step on its own; in a CPU group the rank contributes
   zero gradients and the others' average is applied, and when no rank has a sample nobody steps. Either way the
   iteration counts, so the learning rate, the sampler and a resume stay functions of the
   iteration. Returns 0 or -1 with err. */
static int train_step(worker *w, const pf_msg_batch *b, const uint8_t *gt, const uint8_t *lq,
                      const uint8_t *gt_plain, double lr, float *loss, char *err,
                      size_t errlen) {
    *loss = 0;
    if (w->gan) return gan_step(w, b, gt, lq, gt_plain, lr, loss, err, errlen);
    if (w->gpu) {
        if (b->n == 0 && w->grouped) {
            snprintf(err, errlen, "iteration %lld: every sample of rank %d's batch was skipped "
                     "(unreadable files); a GPU group cannot skip a step yet",
                     (long long)b->iter, w->rank);
            return -1;
        }
        if (b->n == 0) {
            w->empty_steps++;
            return 0;
        }
        int stop = w->stop_requested;
        if (pf_gpu_train_step(w->gpu, lq, gt, (int)b->n, (int)b->lq_h, (int)b->lq_w, loss,
                              &stop, err, errlen) != 0 ||
            pf_gpu_optim_step(w->gpu, (float)lr, w->cfg->grad_clip_max_norm, err, errlen) != 0)
            return -1;
        if (stop) w->stop_agreed = 1;
        return 0;
    }
    if (b->n > 0 && pf_model_train_step(w->model, lq, gt, (int)b->n, (int)b->lq_h,
                                        (int)b->lq_w, loss, err, errlen) != 0)
        return -1;
    int go = sync_or_skip(w, b, loss, NULL, 0, err, errlen);
    if (go <= 0) return go;
    clip_grads(w);   /* then the step */
    pf_optim_step(&w->optim, pf_model_params(w->model), pf_model_grads(w->model), (float)lr);
    return 0;
}

/* visual_config: after the step of iteration `done` - 1 (done = iterations completed), rank 0
   publishes on topic "visual" the first n = min(num_samples, batch) samples: lq and gt bytes
   from the batch, and the network's output of that step (no extra forward pass) clamped to
   [0, 1], times 255, rounded to uint8; n shrinks until each frame fits PF_MAX_VISUAL_FRAME.
   A video network's samples are clips: each is shown by its middle frame (T / 2). PUB drops at its high-water mark, so this never blocks. A failure is logged, never fatal.
   CUDA backend: the output stays on the GPU (pf_gpu_train_step does not hand it back), so the
   GPU worker publishes nothing yet. */
static void publish_visual(worker *w, const pf_msg_batch *b, const uint8_t *gt,
                           const uint8_t *lq, int64_t done) {
    if (w->rank != 0 || w->cfg->visual_interval <= 0 || done % w->cfg->visual_interval != 0 ||
        b->n == 0 || w->gpu)
        return;
    double t0 = pf_now();
    int s = pf_model_scale(w->model);
    size_t lq_img = (size_t)b->lq_h * b->lq_w * 3, gt_img = lq_img * s * s;
    /* a video network's samples are clips: each shows its middle frame (a sliding-window
       network's: the window's center LQ frame, its one GT and output frame) */
    size_t T = (size_t)pf_model_frames(w->model), mid = T / 2;
    size_t OT = (size_t)pf_model_out_frames(w->model), omid = OT / 2;
    int n = w->cfg->visual_num_samples < (int)b->n ? w->cfg->visual_num_samples : (int)b->n;
    while (n > 0 && (size_t)n * gt_img > PF_MAX_VISUAL_FRAME) n--;
    if (n == 0) {
        pf_warn("visual: one %ux%u GT patch exceeds %d bytes; no picture of iteration %" PRId64,
                b->lq_h * s, b->lq_w * s, PF_MAX_VISUAL_FRAME, done);
        return;
    }
    size_t count = (size_t)n * gt_img;
    if (count * OT > w->visual_cap) {
        float *f = realloc(w->visual_out, count * OT * sizeof *f);
        if (f) w->visual_out = f;
        uint8_t *u = f ? realloc(w->visual_u8, count * OT) : NULL;
        if (u) w->visual_u8 = u;
        if (!f || !u) {
            pf_warn("visual: out of memory; no picture of iteration %" PRId64, done);
            return;
        }
        w->visual_cap = count * OT;
    }
    if (pf_model_train_output(w->model, n, w->visual_out) != 0) {
        pf_warn("visual: no training output to show at iteration %" PRId64, done);
        return;
    }
    uint8_t *clip_lq = NULL, *clip_gt = NULL;
    if (T > 1) {
        clip_lq = malloc((size_t)n * lq_img);
        clip_gt = malloc(count);
        if (!clip_lq || !clip_gt) {
            free(clip_lq);
            free(clip_gt);
            pf_warn("visual: out of memory; no picture of iteration %" PRId64, done);
            return;
        }
        for (int i = 0; i < n; i++) {   /* sample i's frame mid, in place of sample i */
            memmove(w->visual_out + i * gt_img, w->visual_out + (i * OT + omid) * gt_img,
                    gt_img * sizeof *w->visual_out);
            memcpy(clip_lq + i * lq_img, lq + (i * T + mid) * lq_img, lq_img);
            memcpy(clip_gt + i * gt_img, gt + (i * OT + omid) * gt_img, gt_img);
        }
        lq = clip_lq;
        gt = clip_gt;
    }
    pf_to_u8(w->visual_out, w->visual_u8, count);   /* as evaluation does */
    pf_msg m = { .type = PF_MSG_VISUAL };
    pf_msg_visual *v = &m.u.visual;
    snprintf(v->source, sizeof v->source, "%s", w->client.name);
    snprintf(v->tag, sizeof v->tag, "train");
    v->iter = done;
    v->n = (uint32_t)n;
    v->lq_h = b->lq_h;
    v->lq_w = b->lq_w;
    v->gt_h = b->lq_h * (uint32_t)s;
    v->gt_w = b->lq_w * (uint32_t)s;
    pf_frame topic = { "visual", 6 };
    pf_frame frames[3] = { { lq, (size_t)n * lq_img }, { w->visual_u8, count },
                           { gt, count } };
    if (pf_send(w->client.pub, &topic, &m, frames, 3) != 0)
        pf_warn("visual: publish of iteration %" PRId64 " failed: %s", done, zmq_strerror(errno));
    free(clip_lq);
    free(clip_gt);
    w->visuals++;
    w->visual_time += pf_now() - t0;
}

/* After loading: every rank takes rank 0's parameters and optimiser state
   (sync_model_params), so the ranks start identical whatever each one found on disk. */
static int sync_model_params(worker *w, char *err, size_t errlen) {
    if (!w->coll) return 0;
    size_t n = w->net->n_params;
    pf_optim *o = &w->optim;
    float step = (float)o->step;
    float *state[] = { w->params, o->exp_avg, o->exp_avg_sq,
                       o->momentum_buffer, o->ema };
    for (size_t i = 0; i < sizeof state / sizeof state[0]; i++)
        if (state[i] && pf_collective_broadcast(w->coll, state[i], n, 0, err, errlen) != 0)
            return -1;
    if (pf_collective_broadcast(w->coll, &step, 1, 0, err, errlen) != 0) return -1;
    o->step = (int64_t)step;
    return 0;
}

/* The host part of "tcp://HOST:PORT". */
static void endpoint_host(const char *ep, char *host, size_t len) {
    const char *p = strstr(ep, "://");
    p = p ? p + 3 : ep;
    const char *colon = strrchr(p, ':');
    snprintf(host, len, "%.*s", colon ? (int)(colon - p) : (int)strlen(p), p);
}

/* SIGTERM or SIGHUP at the worker itself (a scheduler preempting the job): stop like an
   interrupt, with a checkpoint. */
static void check_signal(worker *w) {
    if (pf_signalled && !w->stop_requested) {
        pf_info("signal %d: checkpoint after this step", (int)pf_signalled);
        w->stop_requested = 1;
    }
}

/* Take whatever the coordinator sent, without waiting; sets the stop and abort flags. */
static void take_ctrl(worker *w) {
    pf_msg *m;
    int rc;
    while ((rc = pf_client_recv(&w->client, &m)) != 0) {
        if (rc < 0 || m->type != PF_MSG_STOP) {
            pf_client_msg_free(&m);
            continue;
        }
        if (strcmp(m->u.stop.reason, "interrupt") == 0) {
            if (!w->stop_requested) pf_info("interrupt: checkpoint after this step");
            w->stop_requested = 1;
        } else {
            pf_warn("stop (%s): %s", m->u.stop.reason, m->u.stop.text);
            w->abort_requested = 1;
        }
        pf_client_msg_free(&m);
    }
}

/* pf_batch_check_frames on the received parts. */
static int batch_frames_check(const pf_msg_batch *b, const pf_parts *p, size_t frames,
                              char *err, size_t errlen) {
    size_t sizes[PF_MAX_FRAMES];
    for (int i = 0; i < p->n; i++) sizes[i] = pf_parts_size(p, i);
    return pf_batch_check_frames(b, (uint32_t)frames, p->n, sizes, err, errlen);
}

/* Take one message from the data socket into its slot, or drop it. Returns 1 when there was
   one (kept or dropped), 0 when none was waiting. */
static int receive_batch(worker *w, int64_t next_iter) {
    pf_parts p;
    char err[512];
    if (pf_parts_recv(w->data, ZMQ_DONTWAIT, &p, err, sizeof err) != 0) return 0;
    pf_msg *m = malloc(sizeof *m);
    const pf_config *cfg = w->cfg;
    const char *why = NULL;
    if (!m) why = "out of memory";
    else if (p.n != 3 && p.n != 4) why = "expected 3 or 4 frames (header, gt, lq, gt_plain)";
    else if (pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_BATCH, m, err,
                           sizeof err) != 0) why = err;
    if (!why) {
        pf_msg_batch *b = &m->u.batch;
        size_t gp = (size_t)cfg->train.gt_patch_size, lp = gp / cfg->scale;
        size_t frames = (size_t)pf_config_train_frames(cfg);   /* a video set's num_frame */
        if (b->rank != w->rank) why = "batch for another rank";
        else if (b->n + b->n_skipped != (uint32_t)cfg->samples_per_gpu)
            why = "wrong batch size";
        else if (b->n_skipped && !cfg->skip_bad_samples)
            why = "samples skipped but data.on_bad_sample is fail";
        else if (b->gt_h != gp || b->gt_w != gp || b->lq_h != lp || b->lq_w != lp)
            why = "wrong patch size";
        else if (!b->gt_plain != !cfg->train.gt_plain)
            why = b->gt_plain ? "a gt_plain frame this job does not use"
                              : "no gt_plain frame (data.train.gt_plain is on)";
        else if (b->gt_frames && b->gt_frames != (uint32_t)pf_net_out_frames(w->net)) {
            /* a sliding-window set's batch (REDSDataset: num_frame LQ frames, one GT frame a
               sample) is for a sliding-window network (EDVR: one output frame); the config
               refuses it for the networks that output every frame: the job ends (next_step) */
            why = "a sliding-window batch (data.train.type REDSDataset: one GT frame per "
                  "sample) for a network that outputs every frame";
            w->window_batch = 1;
        }
        else if (!b->gt_frames && (size_t)pf_net_out_frames(w->net) != frames)
            /* a GT frame per LQ frame for a sliding-window network (the config refuses the
               recurrent sets for it): dropped, as a batch of the wrong patch size is */
            why = "a GT frame per LQ frame for a sliding-window network (one GT frame a sample)";
        else if (batch_frames_check(b, &p, frames, err, sizeof err) != 0)
            why = err;
        else if (b->ticket_id != (uint64_t)b->iter * w->world + (uint64_t)w->rank)
            why = "ticket id does not match iteration and rank";
        else if (b->iter < next_iter) why = "duplicate (already consumed)";
        else if (b->iter >= next_iter + w->n_slots) why = "beyond the granted credits";
        else if (w->slots[b->iter % w->n_slots].used) why = "duplicate (already buffered)";
    }
    if (why) {
        w->dropped++;
        pf_debug("dropped a batch message: %s", why);
        pf_parts_close(&p);
        free(m);
        return 1;
    }
    slot *s = &w->slots[m->u.batch.iter % w->n_slots];
    s->used = 1;
    s->parts = p;
    s->hdr = m->u.batch;
    free(m);
    return 1;
}

/* 1 when the batch of iteration w->it is in its slot. */
static int batch_ready(const worker *w) {
    const slot *s = &w->slots[w->it % w->n_slots];
    return s->used && s->hdr.iter == w->it;
}

/* Send the state after iteration w->it to the checkpoint hook (its reply: take_ckpt_reply).
   pf_send copies the bytes, so they are freed here. Returns 0, or -1 with err. */
static int send_checkpoint(worker *w, char *err, size_t errlen) {
    void *wbuf = NULL, *obuf = NULL, *dbuf = NULL, *dobuf = NULL;
    size_t wlen = 0, olen = 0, dlen = 0, dolen = 0;
    /* On a GPU the state lives on the device: bring it to the host buffers to serialise it. */
    if (w->gpu && pf_gpu_download(w->gpu, w->params, &w->optim, err, errlen) != 0) return -1;
    if (pf_ckpt_serialize_net(w->cfg, w->net, w->params, &w->optim, w->it, w->epoch, w->lr,
                              &wbuf, &wlen, &obuf, &olen, err, errlen) != 0)
        return -1;
    /* A GAN job's net_d and optim_d: two more frames (gan_state.h). */
    if (w->gan && pf_state_gan_serialize(w->gan, &w->optim_d, w->it, &dbuf, &dlen, &dobuf,
                                         &dolen, err, errlen) != 0) {
        free(wbuf);
        free(obuf);
        return -1;
    }
    pf_msg *m = calloc(1, sizeof *m);
    int rc = -1;
    if (!m) {
        snprintf(err, errlen, "out of memory");
    } else {
        m->type = PF_MSG_CKPT_SAVE;
        pf_msg_ckpt_save *c = &m->u.ckpt_save;
        c->iter = w->it;
        c->epoch = w->epoch;
        snprintf(c->weights_name, sizeof c->weights_name, "iter_%" PRId64 ".safetensors", w->it);
        snprintf(c->optim_name, sizeof c->optim_name, "iter_%" PRId64 ".optim.safetensors",
                 w->it);
        c->weights_size = wlen;
        c->optim_size = olen;
        c->net_d_size = dlen;
        c->net_d_optim_size = dolen;
        pf_frame frames[4] = { { wbuf, wlen }, { obuf, olen }, { dbuf, dlen }, { dobuf, dolen } };
        rc = pf_send(w->ckpt, NULL, m, frames, w->gan ? 4 : 2);
        if (rc != 0) snprintf(err, errlen, "cannot send checkpoint %" PRId64 " to the checkpoint "
                              "hook: %s", w->it, zmq_strerror(errno));
    }
    free(m);
    free(wbuf);
    free(obuf);
    free(dbuf);
    free(dobuf);
    return rc;
}

/* Take one reply from the checkpoint hook. Returns 1 when it says checkpoint `iter` is on
   disk, -1 with err when it could not write it, 0 for anything else (nothing waiting, a reply
   about another iteration, a malformed message: dropped). */
static int take_ckpt_reply(worker *w, int64_t iter, char *err, size_t errlen) {
    pf_parts p;
    char e2[512];
    if (pf_parts_recv(w->ckpt, ZMQ_DONTWAIT, &p, e2, sizeof e2) != 0) return 0;
    pf_msg *a = malloc(sizeof *a);
    int ok = a && p.n == 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0),
                                            PF_MSG_CKPT_ACK, a, e2, sizeof e2) == 0;
    pf_parts_close(&p);
    int rc = 0;
    if (ok && a->u.ckpt_ack.iter == iter) {
        if (!a->u.ckpt_ack.ok) {
            snprintf(err, errlen, "checkpoint %" PRId64 " not written: %s", iter,
                     a->u.ckpt_ack.error);
            rc = -1;
        } else {
            pf_info("checkpoint %s on disk", a->u.ckpt_ack.path);
            rc = 1;
        }
    }
    free(a);
    return rc;
}

/* Restore or initialise the model; returns the first iteration to train, or -1 with err. */
static int64_t restore(worker *w, char *err, size_t errlen) {
    pf_config *cfg = w->cfg;
    char path[PF_PATH_MAX + 64];
    if (pf_ckpt_resolve_resume(cfg, path, sizeof path, err, errlen) != 0) return -1;
    snprintf(w->resume_path, sizeof w->resume_path, "%s", path);   /* a GAN job's net_d */
    if (path[0]) {
        int64_t iter = 0;
        if (pf_ckpt_check_resume(cfg, path, err, errlen) != 0 ||
            pf_ckpt_load_weights_net(w->net, cfg, w->params, path, &iter, err, errlen) != 0)
            return -1;
        if (cfg->resume_optim) {
            if (pf_ckpt_load_optim_net(&w->optim, w->net, path, err, errlen) != 0) return -1;
        }
        if (pf_ckpt_load_ema_net(&w->optim, w->net, w->params, path, err, errlen) != 0)
            return -1;
        pf_info("resumed from %s at iteration %" PRId64 "%s", path, iter,
                cfg->resume_optim ? " with optimiser state" : " (optimiser state reset)");
        return iter;
    }
    if (strcmp(cfg->resume_from, "auto") == 0)
        pf_info("resume auto: no checkpoint in %s/checkpoints; starting fresh", cfg->work_dir);
    if (cfg->load_from[0]) {
        if (pf_ckpt_load_weights_net(w->net, cfg, w->params, cfg->load_from, NULL, err,
                                     errlen) != 0)
            return -1;
        pf_info("loaded weights from %s; training starts at iteration 0", cfg->load_from);
    } else {
        pf_net_init_params(w->net, w->params, cfg->seed);
        if (cfg->spynet_pretrained[0]) {
            if (pf_ckpt_load_spynet(w->net, w->params, cfg->spynet_pretrained, err, errlen))
                return -1;
            pf_info("SPyNet weights from %s", cfg->spynet_pretrained);
        }
    }
    /* BasicSR: the EMA starts as a copy of the weights training starts from. */
    if (w->optim.ema)
        memcpy(w->optim.ema, w->params, w->net->n_params * sizeof(float));
    return 0;
}

/* Rewrite the samples log without entries at or after `start_iter` (a resumed run trains
   those again), then open it for appending. */
static FILE *open_samples_log(const pf_config *cfg, int rank, int64_t start_iter) {
    char path[PF_PATH_MAX + 64], tmp[PF_PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/samples_rank%d.log", cfg->work_dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *in = fopen(path, "r");
    if (in) {
        FILE *out = fopen(tmp, "w");
        char *line = NULL;
        size_t cap = 0;
        while (out && getline(&line, &cap, in) > 0) {
            long long it = -1;
            if (sscanf(line, "%lld", &it) == 1 && it < start_iter) fputs(line, out);
        }
        free(line);
        fclose(in);
        if (!out || fclose(out) != 0 || rename(tmp, path) != 0) {
            pf_error("%s: cannot rewrite the record for the resume at %lld", path,
                     (long long)start_iter);
            unlink(tmp);
            return NULL;
        }
    } else if (start_iter > 0) {
        pf_warn("%s missing: its record starts at iteration %lld", path,
                (long long)start_iter);
    }
    return fopen(path, start_iter > 0 ? "a" : "w");
}

/* PF_DUMP_BATCHES=DIR (a bench facility: bench/video/same_iters.sh --paired feeds PyTorch the
   batches PixFlow trained on): the batch of iteration b->iter as DIR/iter_<iter>_rank<rank>.u8,
   one text line "pixflow-batch 1 iter I rank R n N frames T gt_frames G lq_h H lq_w W gt_h H2
   gt_w W2\n" (T: LQ frames a sample, 1 for images; G: GT frames a sample), then the GT bytes
   (n x G x gt_h x gt_w x 3 uint8, each frame NHWC, samples in order) and the LQ bytes (n x T x
   lq_h x lq_w x 3). Written under a temporary name and renamed; a failure is a warning (the
   training goes on without the file). */
static void dump_batch(worker *w, const pf_msg_batch *b, const uint8_t *gt, const uint8_t *lq) {
    static const char *dir;
    static int looked;
    if (!looked) {
        looked = 1;
        dir = getenv("PF_DUMP_BATCHES");
        if (dir && *dir) pf_info("PF_DUMP_BATCHES: each batch goes to %s", dir);
    }
    if (!dir || !*dir) return;
    uint32_t T = (uint32_t)pf_config_train_frames(w->cfg), G = b->gt_frames ? b->gt_frames : T;
    char path[PF_PATH_MAX + 64], tmp[PF_PATH_MAX + 80];
    snprintf(path, sizeof path, "%s/iter_%" PRId64 "_rank%d.u8", dir, b->iter, w->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    size_t gt_bytes = (size_t)b->n * G * b->gt_h * b->gt_w * 3;
    size_t lq_bytes = (size_t)b->n * T * b->lq_h * b->lq_w * 3;
    FILE *f = fopen(tmp, "wb");
    int ok = f && fprintf(f, "pixflow-batch 1 iter %" PRId64 " rank %d n %u frames %u gt_frames "
                          "%u lq_h %u lq_w %u gt_h %u gt_w %u\n", b->iter, w->rank, b->n, T, G,
                          b->lq_h, b->lq_w, b->gt_h, b->gt_w) > 0 &&
             fwrite(gt, 1, gt_bytes, f) == gt_bytes && fwrite(lq, 1, lq_bytes, f) == lq_bytes;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        pf_warn("PF_DUMP_BATCHES: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}

/* Record the batch of slot s in the samples log (iteration, epoch, ticket, sample ids, a
   digest of the pixels, loader, skipped ids), acknowledge it, free the slot and return its
   credit. */
static void consume_batch(worker *w, slot *s) {
    const pf_msg_batch *b = &s->hdr;
    const uint8_t *gt = pf_parts_data(&s->parts, 1), *lq = pf_parts_data(&s->parts, 2);
    uint64_t digest = pf_fnv1a64(gt, pf_parts_size(&s->parts, 1), PF_FNV_OFFSET);
    digest = pf_fnv1a64(lq, pf_parts_size(&s->parts, 2), digest);
    if (b->gt_plain)   /* data.train.gt_plain: the unsharpened GT too */
        digest = pf_fnv1a64(pf_parts_data(&s->parts, 3), pf_parts_size(&s->parts, 3), digest);
    fprintf(w->samples_log, "%" PRId64 " %u %" PRIu64 " ", b->iter, b->epoch, b->ticket_id);
    for (uint32_t i = 0; i < b->n; i++)
        fprintf(w->samples_log, "%s%u", i ? "," : "", b->indices[i]);
    fprintf(w->samples_log, "%s %016" PRIx64 " loader=%u", b->n ? "" : "-", digest,
            b->loader_id);
    for (uint32_t i = 0; i < b->n_skipped; i++)
        fprintf(w->samples_log, "%s%u", i ? "," : " skipped=", b->skipped[i]);
    fputc('\n', w->samples_log);
    fflush(w->samples_log);
    pf_msg ack = { .type = PF_MSG_ACK };
    ack.u.ack.ticket_id = b->ticket_id;
    ack.u.ack.rank = w->rank;
    pf_client_send(&w->client, &ack, NULL, 0);
    pf_msg credit = { .type = PF_MSG_CREDIT };
    credit.u.credit.rank = w->rank;
    credit.u.credit.n = 1;
    credit.u.credit.next_iter = b->iter + 1;
    pf_parts_close(&s->parts);
    s->used = 0;
    pf_client_send(&w->client, &credit, NULL, 0);
}

/* The end of training (all iterations done, or stopped): the summary in the log and, when
   samples were skipped, a status event. */
static void report_end(worker *w) {
    pf_info("%s at iteration %" PRId64 " (%" PRIu64 " batch messages dropped, %" PRIu64
            " samples skipped, %" PRIu64 " iterations without a sample)",
            stop_now(w) ? "interrupted" : "finished", w->it, w->dropped, w->skipped,
            w->empty_steps);
    if (w->visuals)
        pf_info("visual: %" PRIu64 " pictures published, %.3f ms each on average", w->visuals,
                1e3 * w->visual_time / (double)w->visuals);
    if (w->skipped)
        publish_status(w, "status", "worker%d: %" PRIu64 " samples skipped (unreadable files, "
                       "data.on_bad_sample: skip), %" PRIu64 " iterations without a sample",
                       w->rank, w->skipped, w->empty_steps);
}

/* The worker's loop (worker_run). ctrl is a reader throughout; once START is in, the data
   socket and the checkpoint hook's socket are readers too, and `step` a task ready while the
   batch of w->it waits in its slot (the readers, registered before it, are heard between two
   steps). A 200 ms tick watches the coordinator while the worker waits (as the old loops'
   200 ms poll did: a batch in hand is trained first), a 2 s timer publishes the worker
   event, a one-shot the checkpoint hook's deadline. */
typedef enum {
    STARTING,           /* waiting for START on ctrl */
    TRAINING,           /* stepping through the iterations */
    CHECKPOINTING,      /* rank 0: the state went to the checkpoint hook, its reply is due */
} worker_phase;

typedef struct {
    worker *w;
    worker_phase phase;
    const char *device;         /* --device, named in the worker events */
    int gpu_index;              /* --device cuda:N; -1 for the CPU */
    const char *data_ep;        /* the data endpoint bound: its host hosts the Gloo group */
    pf_task *step;              /* one iteration's step (on_step) */
    pf_timer *ckpt_deadline;    /* while CHECKPOINTING: CKPT_ACK_TIMEOUT_S after the send */
    int status;                 /* exit status once the loop ends */
    char *err;                  /* why, when status is 1 */
    size_t errlen;
} worker_loop;

#define WORKER_TICK_S 0.2

static int on_ckpt_deadline(pf_reactor *r, void *arg);

/* Rank 0 after iteration w->it: the state goes to the checkpoint hook and the loop waits for
   its reply (on_ckpt_reply), CKPT_ACK_TIMEOUT_S at most; no step meanwhile. Returns 0, or -1
   with err. */
static int begin_checkpoint(pf_reactor *r, worker_loop *wl) {
    pf_task_ready(wl->step, 0);
    if (send_checkpoint(wl->w, wl->err, wl->errlen) != 0) return -1;
    wl->phase = CHECKPOINTING;
    wl->ckpt_deadline = pf_reactor_after(r, CKPT_ACK_TIMEOUT_S, on_ckpt_deadline, wl);
    if (!wl->ckpt_deadline) snprintf(wl->err, wl->errlen, "out of memory");
    return wl->ckpt_deadline ? 0 : -1;
}

/* After any event while TRAINING: an abort ends the loop with an error; the end of the
   iterations or a stop ends it in order, after a last checkpoint (rank 0) when the state
   since the last one would be lost; else the step is ready once its batch is in. Stop wins
   over a batch in hand, as before: a stop is heard between two steps. Returns 0, or -1 to end
   the loop (status set). */
static int next_step(pf_reactor *r, worker_loop *wl) {
    worker *w = wl->w;
    if (wl->phase != TRAINING) return 0;
    if (w->abort_requested) {
        snprintf(wl->err, wl->errlen, "aborted by the coordinator");
        return -1;
    }
    if (w->window_batch) {
        snprintf(wl->err, wl->errlen, "batch: one GT frame per sample for %d LQ frames (a "
                 "sliding-window set, data.train.type REDSDataset); %s outputs every frame "
                 "(a sliding-window network such as EDVR consumes these batches)",
                 pf_config_train_frames(w->cfg), w->cfg->model_type);
        return -1;
    }
    if (w->it < w->total_iters && !stop_now(w)) {
        pf_task_ready(wl->step, batch_ready(w));
        return 0;
    }
    pf_task_ready(wl->step, 0);
    if (stop_now(w) && w->it != w->last_ckpt && w->rank == 0) return begin_checkpoint(r, wl);
    report_end(w);
    wl->status = 0;
    wl->err[0] = '\0';
    return -1;
}

/* Once, after the first step (CPU): what each model's convolutions run, oneDNN's kernels
   included (pf_model_precision_report), net_g's and a GAN's net_d and VGG. */
static void log_precision_report(worker *w) {
    if (w->precision_logged || !w->model) return;
    w->precision_logged = 1;
    char buf[1024];
    pf_info("precision net_g: %s", pf_model_precision_report(w->model, buf, sizeof buf));
    if (!w->gan) return;
    pf_info("precision net_d: %s",
            pf_model_precision_report(pf_gan_d_model(w->gan), buf, sizeof buf));
    if (pf_gan_vgg(w->gan))
        pf_info("precision vgg: %s",
                pf_model_precision_report(pf_gan_vgg(w->gan), buf, sizeof buf));
}

/* The task: the step of iteration w->it on the batch in its slot, its visual, record, ACK and
   credit, the `train` event (rank 0; the loss is the group's mean), then what the coordinator
   sent meanwhile, and the checkpoint every checkpoint_config.interval iterations and at the
   end (rank 0). */
static int on_step(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    worker *w = wl->w;
    slot *s = &w->slots[w->it % w->n_slots];
    const pf_msg_batch *b = &s->hdr;
    double t0 = pf_now(), data_time = t0 - w->wait_since;
    pf_msg_event ev = { .iter = w->it + 1, .total_iters = w->total_iters, .epoch = b->epoch,
                        .count = b->n_skipped, .data_time = data_time };
    snprintf(ev.kind, sizeof ev.kind, "train");
    const uint8_t *gt = pf_parts_data(&s->parts, 1), *lq = pf_parts_data(&s->parts, 2);
    const uint8_t *gt_plain = b->gt_plain ? pf_parts_data(&s->parts, 3) : NULL;
    float loss = 0;
    w->epoch = b->epoch;
    w->lr = pf_lr_at(w->cfg, w->it);
    w->skipped += b->n_skipped;
    if (train_step(w, b, gt, lq, gt_plain, w->lr, &loss, wl->err, wl->errlen) != 0) return -1;
    log_precision_report(w);
    publish_visual(w, b, gt, lq, w->it + 1);
    dump_batch(w, b, gt, lq);
    consume_batch(w, s);
    w->it++;
    ev.loss = loss;
    ev.lr = w->lr;
    if (w->gan) {
        ev.gan_terms = w->gan_terms;
        memcpy(ev.gan, w->gan_means, sizeof ev.gan);
    }
    ev.time = pf_now() - t0 + data_time;
    if (w->rank == 0) pf_client_publish(&w->client, &ev);
    take_ctrl(w);
    if (w->abort_requested) {
        snprintf(wl->err, wl->errlen, "aborted by the coordinator");
        return -1;
    }
    w->wait_since = pf_now();
    if (w->rank == 0 && ((w->cfg->ckpt_interval > 0 && w->it % w->cfg->ckpt_interval == 0) ||
                         w->it == w->total_iters))
        return begin_checkpoint(r, wl);
    return next_step(r, wl);
}

static int on_data(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    while (receive_batch(wl->w, wl->w->it)) {}
    return next_step(r, wl);
}

/* The checkpoint hook's socket: a reply counts while CHECKPOINTING, for the iteration sent;
   anything else is dropped, as the old wait dropped it. */
static int on_ckpt_reply(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    worker *w = wl->w;
    int64_t iter = wl->phase == CHECKPOINTING ? w->it : -1;
    int rc = take_ckpt_reply(w, iter, wl->err, wl->errlen);
    if (rc <= 0) return rc;
    pf_reactor_cancel(r, &wl->ckpt_deadline);
    w->last_ckpt = iter;
    w->wait_since = pf_now();
    wl->phase = TRAINING;
    return next_step(r, wl);
}

static int on_ckpt_deadline(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    snprintf(wl->err, wl->errlen, "the checkpoint hook did not confirm iteration %" PRId64
             " within %.0f s", wl->w->it, CKPT_ACK_TIMEOUT_S);
    return -1;
}

/* The host side of the network: on the CPU the model (its description and parameters); on a
   GPU (gpu 1) only the description and a host parameter buffer, which loading, the optimiser's
   host state and checkpoints use (the device holds the model). Returns 0, or -1 with err. */
static int host_state(worker *w, int gpu, char *err, size_t errlen) {
    if (!gpu) {
        w->model = pf_model_new(w->cfg, err, errlen);
        if (!w->model) return -1;
        w->net = pf_model_net(w->model);
        w->params = pf_model_params(w->model);
        return 0;
    }
    if (pf_net_build(&w->gpu_net, w->cfg, err, errlen) != 0) return -1;
    w->net = &w->gpu_net;
    w->gpu_params = calloc(w->gpu_net.n_params + 1, sizeof(float));
    if (!w->gpu_params) {
        snprintf(err, errlen, "out of memory for %zu parameters", w->gpu_net.n_params);
        return -1;
    }
    w->params = w->gpu_params;
    return 0;
}

/* A GAN job (CPU): the step around the model with net_d drawn from the job's seed (the same
   on every rank: pf_gan_new's init is a function of the seed), then restored from the
   checkpoint restore() resumed from, or loaded from gan.load_from_d (pf_state_gan_restore:
   every rank reads the same file); the digest of net_d's starting state goes to the log so
   runs can compare; the VGG19 from gan.perceptual_opt.vgg_weights, and optim_d. Returns 0,
   or -1 with err. */
static int build_gan(worker *w, char *err, size_t errlen) {
    pf_gan_opts o;
    if (pf_state_gan_opts(w->cfg, &o, err, errlen) != 0) return -1;
    w->gan = pf_gan_new(&o, w->model, (uint64_t)w->cfg->seed, err, errlen);
    if (!w->gan ||
        pf_state_optim_d_new(w->cfg, pf_gan_d_num_params(w->gan), &w->optim_d, err, errlen) ||
        pf_state_gan_restore(w->cfg, w->gan, &w->optim_d, w->resume_path, err, errlen))
        return -1;
    size_t nd = pf_gan_d_num_params(w->gan);
    uint64_t h = pf_gan_d_digest(w->gan);   /* the BatchNorm buffers too (VGGStyle) */
    pf_info("gan: %s with %s (%zu parameters, initial digest %016" PRIx64 ")%s",
            w->cfg->gan.model_type, w->cfg->gan.network_d.type, nd, h,
            w->cfg->train.gt_plain ? ", batches carry the plain GT beside gt_usm" : "");
    return 0;
}

/* The precisions (train_cfg.precision, test_cfg.precision) and the CPU's bf16 unit, logged
   before the model is built: a CPU worker refuses bf16 without a bf16 unit (pf_model_new,
   the message naming the key); a GPU worker logs what it will run (pf_gpu_new sets the CUDA
   model's precision and refuses bf16 below compute capability 8.0). Returns 0 (-1 with err
   is kept for refusals that need no model). */
static int check_precision(const worker_loop *wl, char *err, size_t errlen) {
    const pf_config *cfg = wl->w->cfg;
    (void)err;
    (void)errlen;
    if (wl->gpu_index >= 0) {
        pf_info("precision: train_cfg.precision %s on cuda:%d%s",
                pf_precision_name((pf_precision)cfg->train_precision), wl->gpu_index,
                cfg->train_precision ? " (cuDNN bf16 convolutions, fp32 accumulation, fp32 "
                "weights, optimiser and element-wise ops; unverified on hardware)" : "");
        return 0;
    }
    char isa[32];
    const char *unit = pf_dnnl_bf16_isa(isa, sizeof isa);
    pf_info("precision: train_cfg.precision %s, test_cfg.precision %s; bf16 unit: %s "
            "(oneDNN ISA %s)", pf_precision_name((pf_precision)cfg->train_precision),
            pf_precision_name((pf_precision)cfg->test_precision), unit ? unit : "none", isa);
    return 0;
}

/* After START: the Gloo group (CPU, world_size > 1), the model, its optimiser and their
   restored state (made equal over the group), and on --device cuda:N the GPU copy (NCCL
   group). Returns the first iteration to train, or -1 with err. */
static int64_t build_model(worker_loop *wl, char *err, size_t errlen) {
    worker *w = wl->w;
    w->grouped = w->world > 1;
    if (pf_gan_check_backend(w->cfg, wl->gpu_index >= 0, err, errlen) != 0 ||
        check_precision(wl, err, errlen) != 0)
        return -1;
    if (w->world > 1 && wl->gpu_index < 0) {
        char host[PF_MAX_ENDPOINT];
        endpoint_host(wl->data_ep, host, sizeof host);
        w->coll = pf_collective_gloo_new(w->rank, w->world, host, "gloo", pf_client_kv_set,
                                         pf_client_kv_get, &w->client, COLLECTIVE_TIMEOUT_S,
                                         err, errlen);
        if (!w->coll) return -1;
        pf_info("joined the Gloo group: rank %d of %d on %s", w->rank, w->world, host);
    }
    if (host_state(w, wl->gpu_index >= 0, err, errlen) != 0 ||
        pf_state_optim_new(w->cfg, w->net, w->params, &w->optim, err, errlen) != 0)
        return -1;
    int64_t start_iter = restore(w, err, errlen);
    if (start_iter < 0 || sync_model_params(w, err, errlen) != 0 ||
        (w->cfg->gan.enabled && build_gan(w, err, errlen) != 0))
        return -1;
    if (wl->gpu_index < 0) return start_iter;
    /* Train on the GPU: the restored state goes up once; a group agrees on rank 0's. */
    w->gpu = pf_gpu_new(w->cfg, wl->gpu_index, err, errlen);
    if (!w->gpu || pf_gpu_upload(w->gpu, w->params, &w->optim, err, errlen) != 0) return -1;
    if (w->world > 1 &&
        (pf_gpu_join_group(w->gpu, w->rank, w->world, pf_client_kv_set, pf_client_kv_get,
                           &w->client, COLLECTIVE_TIMEOUT_S, err, errlen) != 0 ||
         pf_gpu_broadcast_state(w->gpu, err, errlen) != 0))
        return -1;
    pf_info("training on cuda:%d%s", wl->gpu_index, w->world > 1 ? " (NCCL group)" : "");
    return start_iter;
}

/* The checkpoint hook's socket, the prefetch slots and the samples log; then the start is
   announced (log, status event) and the `prefetch` credits granted. Returns 0, or -1 with
   err. */
static int open_training(worker_loop *wl, const char *ckpt_ep, char *err, size_t errlen) {
    worker *w = wl->w;
    w->ckpt = zmq_socket(w->zctx, ZMQ_DEALER);
    int linger = 5000;
    zmq_setsockopt(w->ckpt, ZMQ_LINGER, &linger, sizeof linger);
    if (pf_security_client(w->ckpt) != 0 || zmq_connect(w->ckpt, ckpt_ep) != 0) {
        snprintf(err, errlen, "cannot connect to checkpoint hook '%s': %s", ckpt_ep,
                 zmq_strerror(errno));
        return -1;
    }
    w->n_slots = w->cfg->prefetch;
    w->slots = calloc((size_t)w->n_slots, sizeof *w->slots);
    w->samples_log = open_samples_log(w->cfg, w->rank, w->it);
    if (!w->slots || !w->samples_log) {
        snprintf(err, errlen, "cannot open %s/samples_rank%d.log or allocate slots",
                 w->cfg->work_dir, w->rank);
        return -1;
    }
    int global = w->world * w->cfg->samples_per_gpu;
    pf_info("rank %d of %d, %zu parameters, iterations %" PRId64 "..%" PRId64
            ", data endpoint %s, global batch %d (%d per worker)", w->rank, w->world,
            w->net->n_params, w->it, w->total_iters, wl->data_ep, global,
            w->cfg->samples_per_gpu);
    publish_status(w, "status", "worker%d training from iteration %" PRId64 ", global batch %d "
                   "(%d workers x %d)", w->rank, w->it, global, w->world,
                   w->cfg->samples_per_gpu);
    pf_msg credit = { .type = PF_MSG_CREDIT };
    credit.u.credit.rank = w->rank;
    credit.u.credit.n = (uint32_t)w->n_slots;
    credit.u.credit.next_iter = w->it;
    pf_client_send(&w->client, &credit, NULL, 0);
    return 0;
}

static int on_worker_event(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    publish_worker(wl->w, wl->device, wl->w->it);
    return 0;
}

/* START is in (ckpt_ep: the checkpoint hook's endpoint): build, open, and from here on read
   the data and the hook's replies, step, and publish the worker event. A signal caught before
   START is heard now (it stops the worker before its first step, as before). Returns 0, or -1
   with err. */
static int begin_training(pf_reactor *r, worker_loop *wl, const char *ckpt_ep) {
    worker *w = wl->w;
    int64_t start_iter = build_model(wl, wl->err, wl->errlen);
    if (start_iter < 0) return -1;
    w->it = w->last_ckpt = start_iter;
    w->epoch = w->iters_per_epoch ? start_iter / w->iters_per_epoch : 0;
    if (open_training(wl, ckpt_ep, wl->err, wl->errlen) != 0) return -1;
    publish_worker(w, wl->device, w->it);
    if (pf_reactor_reader(r, w->data, on_data, wl) != 0 ||
        pf_reactor_reader(r, w->ckpt, on_ckpt_reply, wl) != 0 ||
        !(wl->step = pf_reactor_task(r, on_step, wl)) ||
        !pf_reactor_every(r, WORKER_EVENT_INTERVAL_S, on_worker_event, wl)) {
        snprintf(wl->err, wl->errlen, "the worker's loop failed");
        return -1;
    }
    wl->phase = TRAINING;
    w->wait_since = pf_now();
    check_signal(w);
    return 0;
}

/* STARTING: take ctrl's messages until START (then begin_training) or STOP (before training
   started: in order, status 0 with nothing trained and nothing to checkpoint; "abort": 1).
   Other messages are dropped. A signal here changes nothing: the worker starts and stops
   before its first step, or the coordinator, stopping too, says STOP. Returns 0, or -1 to end
   the loop. */
static int take_start(pf_reactor *r, worker_loop *wl) {
    worker *w = wl->w;
    pf_msg *m;
    int rc;
    while ((rc = pf_client_recv(&w->client, &m)) != 0) {
        if (rc < 0) continue;
        if (m->type == PF_MSG_START) {
            char ckpt_ep[PF_MAX_ENDPOINT];
            snprintf(ckpt_ep, sizeof ckpt_ep, "%s", m->u.start.ckpt_endpoint);
            w->total_iters = m->u.start.total_iters;
            w->iters_per_epoch = m->u.start.iters_per_epoch;
            pf_client_msg_free(&m);
            return begin_training(r, wl, ckpt_ep);
        }
        int stop = m->type == PF_MSG_STOP;
        if (stop) {
            pf_info("stopped before training started (%s): %s", m->u.stop.reason,
                    m->u.stop.text);
            if (strcmp(m->u.stop.reason, "abort") == 0)
                snprintf(wl->err, wl->errlen, "did not start");
            else
                wl->status = 0;
        }
        pf_client_msg_free(&m);
        if (stop) return -1;
    }
    return 0;
}

static int on_worker_ctrl(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    if (wl->phase == STARTING && take_start(r, wl) != 0) return -1;
    if (wl->phase == STARTING) return 0;
    take_ctrl(wl->w);
    if (wl->w->abort_requested && wl->phase == CHECKPOINTING) {
        snprintf(wl->err, wl->errlen, "job aborted while checkpointing");
        return -1;
    }
    return next_step(r, wl);
}

/* Every WORKER_TICK_S: the coordinator must answer while the worker waits for it (START), for
   a batch or for the checkpoint hook. */
static int on_worker_tick(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    worker *w = wl->w;
    if (pf_client_coordinator_alive(&w->client)) return 0;
    if (wl->phase == STARTING) {
        pf_error("coordinator stopped answering before training started");
        snprintf(wl->err, wl->errlen, "did not start");
    } else if (wl->phase == CHECKPOINTING) {
        snprintf(wl->err, wl->errlen, "coordinator stopped answering while checkpointing");
    } else if (batch_ready(w)) {
        return 0;
    } else {
        snprintf(wl->err, wl->errlen, "coordinator stopped answering");
    }
    return -1;
}

/* SIGTERM or SIGHUP: after START, a stop after the current step (check_signal); before it,
   nothing yet (begin_training looks). */
static int on_worker_signal(pf_reactor *r, void *arg) {
    worker_loop *wl = arg;
    if (wl->phase == STARTING) return 0;
    check_signal(wl->w);
    return next_step(r, wl);
}

/* Joined and publishing: wait for START, train, checkpoint, until the last iteration, a
   stop, an abort or an error. Returns the exit status (0: finished, stopped in order, or
   stopped before training started; 1 with err). */
static int worker_run(worker *w, const char *device, int gpu_index, const char *data_ep,
                      char *err, size_t errlen) {
    worker_loop wl = { .w = w, .phase = STARTING, .device = device, .gpu_index = gpu_index,
                       .data_ep = data_ep, .status = 1, .err = err, .errlen = errlen };
    pf_reactor *r = pf_reactor_new();
    int ok = r && pf_reactor_reader(r, w->client.ctrl, on_worker_ctrl, &wl) == 0 &&
             pf_reactor_every(r, WORKER_TICK_S, on_worker_tick, &wl);
    if (ok) pf_reactor_on_signal(r, on_worker_signal, &wl);
    if (!ok || pf_reactor_run(r) != 0) {
        snprintf(err, errlen, "the worker's loop failed");
        wl.status = 1;
    }
    pf_reactor_destroy(&r);
    return wl.status;
}

static void usage(void) {
    fprintf(stderr, "usage: pixflow worker --connect tcp://HOST:PORT [--device cpu|cuda:N] "
                    "[--bind tcp://HOST:PORT] [--keys DIR] [--threads N]\n");
}

typedef struct {
    const char *addr;           /* --connect: the coordinator */
    const char *device;         /* --device cpu | cuda:N */
    const char *bind;           /* --bind: the data endpoint */
    const char *keys;           /* --keys: CURVE keys directory, or NULL */
    int gpu_index;              /* N of cuda:N, -1 for the CPU */
} worker_args;

/* Parse argv (--threads takes effect here). Returns 0, or 2 after the message. */
static int parse_args(int argc, char **argv, worker_args *a) {
    *a = (worker_args){ .device = "cpu", .bind = "tcp://127.0.0.1:*", .gpu_index = -1 };
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) a->addr = argv[++i];
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) a->device = argv[++i];
        else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) a->bind = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) a->keys = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            int threads;
            if (pf_arg_int("pixflow worker", "--threads", argv[++i], 1, PF_MAX_THREADS,
                           &threads))
                return 2;
            pf_set_threads(threads);
        } else {
            usage();
            return 2;
        }
    }
    if (!a->addr) {
        usage();
        return 2;
    }
    int64_t d = 0;
    if (strncmp(a->device, "cuda:", 5) == 0 &&
        pf_parse_int(a->device + 5, strlen(a->device + 5), 0, 255, &d) == PF_NUM_OK) {
        a->gpu_index = (int)d;
    } else if (strcmp(a->device, "cpu") != 0) {
        fprintf(stderr, "pixflow worker: --device %.60s: expected cpu or cuda:N (N 0..255)\n",
                a->device);
        return 2;
    }
    return 0;
}

/* Bind the data endpoint (its address to data_ep) and join the job as a worker; from here the
   log also goes to work_dir/rankN.log. Returns 0, or -1 with the sockets closed and *status
   the exit status (1, or what the coordinator's answer says: pf_client_stop_status). */
static int worker_join(worker *w, const worker_args *a, char *data_ep, char *err,
                       size_t errlen, int *status) {
    w->zctx = pf_zmq_ctx_new();
    w->data = zmq_socket(w->zctx, ZMQ_PULL);
    int linger = 0, hwm = 256;
    zmq_setsockopt(w->data, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(w->data, ZMQ_RCVHWM, &hwm, sizeof hwm);
    *status = 1;
    if (pf_bind_report(w->data, "data", a->bind, data_ep, PF_MAX_ENDPOINT, err, errlen) != 0)
        pf_error("data endpoint: %s", err);
    else if (pf_client_join(&w->client, w->zctx, a->addr, PF_ROLE_WORKER, "worker", data_ep,
                            err, errlen))
        *status = pf_client_stop_status(&w->client, err);
    else
        *status = -1;
    if (*status >= 0) {
        zmq_close(w->data);
        pf_zmq_ctx_term(w->zctx);
        return -1;
    }
    w->cfg = &w->client.cfg;
    w->rank = w->client.rank;
    w->world = w->client.world_size;
    snprintf(w->client.name, sizeof w->client.name, "worker%d", w->rank);
    pf_log_set_name(w->client.name);
    pf_log_set_level(w->cfg->log_level);
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/rank%d.log", w->cfg->work_dir, w->rank);
    pf_log_open_file(path);
    return 0;
}

/* Tell the coordinator how it ended (DONE: rank, iteration, status, err) and free
   everything. */
static void worker_close(worker *w, int status, const char *err) {
    pf_msg done = { .type = PF_MSG_DONE };
    done.u.done.rank = w->rank;
    done.u.done.iter = w->it;
    done.u.done.status = status;
    snprintf(done.u.done.text, sizeof done.u.done.text, "%s", err);
    if (status) pf_error("%s", err);
    if (w->client.ctrl) pf_client_send(&w->client, &done, NULL, 0);
    if (w->samples_log) fclose(w->samples_log);
    for (int i = 0; w->slots && i < w->n_slots; i++)
        if (w->slots[i].used) pf_parts_close(&w->slots[i].parts);
    free(w->slots);
    if (w->ckpt) zmq_close(w->ckpt);
    zmq_close(w->data);
    pf_client_close(&w->client);
    pf_zmq_ctx_term(w->zctx);
    pf_gan_free(&w->gan);       /* before the model it borrows */
    pf_optim_free(&w->optim_d);
    pf_model_destroy(&w->model);
    pf_net_free(&w->gpu_net);
    free(w->gpu_params);
    pf_optim_free(&w->optim);
    free(w->visual_out);
    free(w->visual_u8);
    if (w->coll) pf_collective_destroy(&w->coll);
    if (w->gpu) pf_gpu_destroy(&w->gpu);
}

int pf_worker_main(int argc, char **argv) {
    worker_args a;
    if (parse_args(argc, argv, &a) != 0) return 2;
    pf_log_set_name("worker");
    pf_catch_signals();
    /* The front end stops a job through the coordinator; a worker ignores the terminal's
       SIGINT so that it can finish its step and checkpoint when told to. */
    signal(SIGINT, SIG_IGN);
    static worker w;
    char err[2048] = "", data_ep[PF_MAX_ENDPOINT];
    /* Workers bind (data) and connect (ctrl, checkpoint hook): both halves of the keys. */
    if (pf_security_init_peer(a.keys, PF_SEC_CLIENT | PF_SEC_SERVER, err, sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    int status;
    if (worker_join(&w, &a, data_ep, err, sizeof err, &status) != 0) return status;
    /* The first train events must reach the hooks: a PUB drops what it publishes before it is
       connected to the proxy and subscribed to. START waits in ctrl's queue meanwhile. Stopped
       meanwhile (a signal here, or the job stopping): nothing trained, nothing to checkpoint;
       DONE at the first iteration says so without an error. */
    if (pf_client_confirm_publisher(&w.client, 20.0, err, sizeof err) != 0) {
        status = w.client.stopped_by > 0 ? 0 : 1;
        if (!status) {
            pf_info("%s: stopping before training started", err);
            err[0] = '\0';
        }
    } else {
        status = worker_run(&w, a.device, a.gpu_index, data_ep, err, sizeof err);
    }
    worker_close(&w, status, err);
    return status;
}
