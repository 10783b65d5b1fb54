/*  worker — `pixflow worker --connect ADDR [--device cpu]`: trains the network.

    It binds a PULL data endpoint, joins the job (HELLO names that endpoint), waits for START,
    builds the model and its optimiser (optimizers, paramwise_cfg, ema_decay) and restores them
    (resume_from: weights, EMA, optimiser, iteration; load_from: weights only; else init from
    the seed), then grants `prefetch` credits and consumes batches
    strictly in ticket order: batch for global iteration `it` is ticket it * W + rank. Each
    consumed batch is acknowledged and its credit returned; duplicates (a reissued ticket whose
    first loader was not dead after all) are dropped by ticket id.

    Every `checkpoint_config.interval` iterations, at the end and on an interrupt, the state goes
    to the checkpoint hook over an acknowledged DEALER/ROUTER exchange; the worker waits until
    the files are on disk. Every consumed batch is recorded in work_dir/samples_rankN.log
    (iteration, epoch, ticket, sample ids, a digest of the pixels) so tests can check that each
    sample came exactly once per epoch and that batches do not depend on the loaders.
*/
#include "worker/worker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/checkpoint.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/number.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/collective.h"
#include "nn/lr_schedule.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "proto/client.h"
#include "proto/proto.h"
#include "proto/security.h"
#include "worker/device.h"
#include "worker/train_state.h"

#define CKPT_ACK_TIMEOUT_S 120.0
#define COLLECTIVE_TIMEOUT_S 60.0  /* rendezvous, and each all-reduce: a dead rank ends the job */

typedef struct {
    int used;
    pf_parts parts;             /* header + gt + lq frames, owned */
    pf_msg_batch hdr;
} slot;

typedef struct {
    pf_client client;
    pf_config *cfg;
    void *data;                 /* PULL, bound */
    void *ckpt;                 /* DEALER to the checkpoint hook */
    int rank, world;
    int64_t total_iters, iters_per_epoch;
    pf_model *model;
    pf_optim optim;
    slot *slots;                /* prefetch slots, a batch for iteration it sits in it % n */
    int n_slots;
    FILE *samples_log;
    int stop_requested;         /* STOP interrupt or a signal here: checkpoint and leave */
    int stop_agreed;            /* data parallel: some rank asked to stop; all stop after the
                                   same step (voted in the per-step all-reduce) */
    pf_collective *coll;        /* Gloo group of the world_size CPU workers, NULL otherwise */
    pf_gpu *gpu;                /* --device cuda:N: the model on the GPU (NCCL group inside) */
    int grouped;                /* world_size > 1: steps are agreed through a collective */
    int abort_requested;        /* STOP abort received: leave now */
    uint64_t dropped;           /* duplicate or malformed batches */
    uint64_t skipped;           /* samples the loaders left out (data.on_bad_sample: skip) */
    uint64_t empty_steps;       /* iterations whose batch had no sample left: no step taken */
    uint64_t visuals;           /* visual messages published */
    double visual_time;         /* seconds spent preparing and publishing them */
    float *visual_out;          /* the step's output of the published samples (NHWC float) */
    uint8_t *visual_u8;         /* the same as uint8 */
    size_t visual_cap;          /* floats / bytes each of the two holds */
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

/* Data parallel: average the gradients over the ranks that had samples (so the learning rate
   means the same for any world size), average the loss for the log, and vote on stopping.
   `has_samples` is 0 for a rank whose batch lost every sample (data.on_bad_sample: skip): it
   contributes zero gradients. Returns how many ranks had samples (0: nobody steps), or -1 with
   err. */
static int sync_step(worker *w, int has_samples, float *loss, char *err, size_t errlen) {
    if (!w->coll) return has_samples;
    float *g = pf_model_grads(w->model);
    size_t n = pf_model_num_params(w->model);
    if (!has_samples) {
        memset(g, 0, n * sizeof *g);
        *loss = 0;
    }
    if (pf_collective_allreduce_sum(w->coll, g, n, err, errlen) != 0) return -1;
    float vote[3] = { *loss, w->stop_requested ? 1.0f : 0.0f, has_samples ? 1.0f : 0.0f };
    if (pf_collective_allreduce_sum(w->coll, vote, 3, err, errlen) != 0) return -1;
    int ranks = (int)(vote[2] + 0.5f);
    float inv = ranks ? 1.0f / (float)ranks : 0.0f;
    for (size_t i = 0; i < n; i++) g[i] *= inv;
    *loss = vote[0] * inv;
    if (vote[1] > 0) w->stop_agreed = 1;
    return ranks;
}

/* One iteration's training step on batch b (gt, lq: its frames): forward, backward, gradients
   averaged over the group, clipped (optimizer_config.grad_clip), the optimiser step and the
   EMA (nn/optim; on a GPU the same, nn/cuda/optim_cuda). A batch whose every sample was skipped
   (data.on_bad_sample: skip) takes no step on its own; in a CPU group the rank contributes
   zero gradients and the others' average is applied, and when no rank has a sample nobody steps. Either way the
   iteration counts, so the learning rate, the sampler and a resume stay functions of the
   iteration. Returns 0 or -1 with err. */
static int train_step(worker *w, const pf_msg_batch *b, const uint8_t *gt, const uint8_t *lq,
                      double lr, float *loss, char *err, size_t errlen) {
    *loss = 0;
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
    int ranks = sync_step(w, b->n > 0, loss, err, errlen);
    if (ranks < 0) return -1;
    if (ranks == 0) {
        w->empty_steps++;
        pf_warn("iteration %lld: no sample left in the batch (all skipped); no step taken",
                (long long)b->iter);
        return 0;
    }
    /* MMCV OptimizerHook: clip the (averaged) gradients by their global norm, then step. */
    if (w->cfg->grad_clip_max_norm > 0)
        pf_clip_grad_norm(pf_model_grads(w->model), pf_model_num_params(w->model),
                          w->cfg->grad_clip_max_norm);
    pf_optim_step(&w->optim, pf_model_params(w->model), pf_model_grads(w->model), (float)lr);
    return 0;
}

/* visual_config: after the step of iteration `done` - 1 (done = iterations completed), rank 0
   publishes on topic "visual" the first n = min(num_samples, batch) samples: lq and gt bytes
   from the batch, and the network's output of that step (no extra forward pass) clamped to
   [0, 1], times 255, rounded to uint8; n shrinks until each frame fits PF_MAX_VISUAL_FRAME.
   PUB drops at its high-water mark, so this never blocks. A failure is logged, never fatal.
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
    int n = w->cfg->visual_num_samples < (int)b->n ? w->cfg->visual_num_samples : (int)b->n;
    while (n > 0 && (size_t)n * gt_img > PF_MAX_VISUAL_FRAME) n--;
    if (n == 0) {
        pf_warn("visual: one %ux%u GT patch exceeds %d bytes; no picture of iteration %" PRId64,
                b->lq_h * s, b->lq_w * s, PF_MAX_VISUAL_FRAME, done);
        return;
    }
    size_t count = (size_t)n * gt_img;
    if (count > w->visual_cap) {
        float *f = realloc(w->visual_out, count * sizeof *f);
        if (f) w->visual_out = f;
        uint8_t *u = f ? realloc(w->visual_u8, count) : NULL;
        if (u) w->visual_u8 = u;
        if (!f || !u) {
            pf_warn("visual: out of memory; no picture of iteration %" PRId64, done);
            return;
        }
        w->visual_cap = count;
    }
    if (pf_model_train_output(w->model, n, w->visual_out) != 0) {
        pf_warn("visual: no training output to show at iteration %" PRId64, done);
        return;
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
    w->visuals++;
    w->visual_time += pf_now() - t0;
}

/* After loading: every rank takes rank 0's parameters and optimiser state
   (sync_model_params), so the ranks start identical whatever each one found on disk. */
static int sync_model_params(worker *w, char *err, size_t errlen) {
    if (!w->coll) return 0;
    size_t n = pf_model_num_params(w->model);
    pf_optim *o = &w->optim;
    float step = (float)o->step;
    float *state[] = { pf_model_params(w->model), o->exp_avg, o->exp_avg_sq,
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

/* Handle whatever the coordinator sent; sets stop/abort flags. */
static void poll_ctrl(worker *w) {
    pf_msg *m;
    int rc;
    check_signal(w);
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

/* Take one message from the data socket into its slot, or drop it. */
static void receive_batch(worker *w, int64_t next_iter) {
    pf_parts p;
    char err[512];
    if (pf_parts_recv(w->data, ZMQ_DONTWAIT, &p, err, sizeof err) != 0) return;
    pf_msg *m = malloc(sizeof *m);
    const pf_config *cfg = w->cfg;
    const char *why = NULL;
    if (!m) why = "out of memory";
    else if (p.n != 3) why = "expected 3 frames (header, gt, lq)";
    else if (pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_BATCH, m, err,
                           sizeof err) != 0) why = err;
    if (!why) {
        pf_msg_batch *b = &m->u.batch;
        size_t gp = (size_t)cfg->train.gt_patch_size, lp = gp / cfg->scale;
        if (b->rank != w->rank) why = "batch for another rank";
        else if (b->n + b->n_skipped != (uint32_t)cfg->samples_per_gpu)
            why = "wrong batch size";
        else if (b->n_skipped && !cfg->skip_bad_samples)
            why = "samples skipped but data.on_bad_sample is fail";
        else if (b->gt_h != gp || b->gt_w != gp || b->lq_h != lp || b->lq_w != lp)
            why = "wrong patch size";
        else if (pf_parts_size(&p, 1) != b->n * gp * gp * 3 ||
                 pf_parts_size(&p, 2) != b->n * lp * lp * 3)
            why = "frame sizes do not match the header";
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
        return;
    }
    slot *s = &w->slots[m->u.batch.iter % w->n_slots];
    s->used = 1;
    s->parts = p;
    s->hdr = m->u.batch;
    free(m);
}

/* Send the state to the checkpoint hook and wait until it says the files are on disk.
   Returns 0, or -1 with err. */
static int save_checkpoint(worker *w, int64_t iter, int64_t epoch, double lr, char *err,
                           size_t errlen) {
    void *wbuf = NULL, *obuf = NULL;
    size_t wlen = 0, olen = 0;
    /* On a GPU the state lives on the device: bring it to the CPU model to serialise it. */
    if (w->gpu && pf_gpu_download(w->gpu, pf_model_params(w->model), &w->optim, err,
                                  errlen) != 0)
        return -1;
    if (pf_ckpt_serialize(w->cfg, w->model, &w->optim, iter, epoch, lr, &wbuf, &wlen, &obuf,
                           &olen, err, errlen) != 0)
        return -1;
    pf_msg *m = calloc(1, sizeof *m);
    if (!m) {
        free(wbuf);
        free(obuf);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->type = PF_MSG_CKPT_SAVE;
    pf_msg_ckpt_save *c = &m->u.ckpt_save;
    c->iter = iter;
    c->epoch = epoch;
    snprintf(c->weights_name, sizeof c->weights_name, "iter_%" PRId64 ".safetensors", iter);
    snprintf(c->optim_name, sizeof c->optim_name, "iter_%" PRId64 ".optim.safetensors", iter);
    c->weights_size = wlen;
    c->optim_size = olen;
    pf_frame frames[2] = { { wbuf, wlen }, { obuf, olen } };
    int rc = pf_send(w->ckpt, NULL, m, frames, 2);
    /* The bytes stay with us until the hook confirms; nothing else is sent meanwhile. */
    if (rc != 0) snprintf(err, errlen, "cannot send checkpoint %" PRId64 " to the checkpoint "
                          "hook: %s", iter, zmq_strerror(errno));
    double deadline = pf_now() + CKPT_ACK_TIMEOUT_S;
    while (rc == 0) {
        if (pf_now() > deadline) {
            snprintf(err, errlen, "the checkpoint hook did not confirm iteration %" PRId64
                     " within %.0f s", iter, CKPT_ACK_TIMEOUT_S);
            rc = -1;
            break;
        }
        if (!pf_client_coordinator_alive(&w->client)) {
            snprintf(err, errlen, "coordinator stopped answering while checkpointing");
            rc = -1;
            break;
        }
        zmq_pollitem_t it[] = { { w->ckpt, 0, ZMQ_POLLIN, 0 },
                                { w->client.ctrl, 0, ZMQ_POLLIN, 0 } };
        zmq_poll(it, 2, 200);
        if (it[1].revents & ZMQ_POLLIN) poll_ctrl(w);
        if (w->abort_requested) {
            snprintf(err, errlen, "job aborted while checkpointing");
            rc = -1;
            break;
        }
        if (!(it[0].revents & ZMQ_POLLIN)) continue;
        pf_parts p;
        char e2[512];
        if (pf_parts_recv(w->ckpt, ZMQ_DONTWAIT, &p, e2, sizeof e2) != 0) continue;
        pf_msg *a = malloc(sizeof *a);
        int ok = a && p.n == 1 && pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0),
                                                PF_MSG_CKPT_ACK, a, e2, sizeof e2) == 0;
        pf_parts_close(&p);
        if (ok && a->u.ckpt_ack.iter == iter) {
            if (!a->u.ckpt_ack.ok) {
                snprintf(err, errlen, "checkpoint %" PRId64 " not written: %s", iter,
                         a->u.ckpt_ack.error);
                rc = -1;
            } else {
                pf_info("checkpoint %s on disk", a->u.ckpt_ack.path);
            }
            free(a);
            break;
        }
        free(a);
    }
    free(m);
    free(wbuf);
    free(obuf);
    return rc;
}

/* Restore or initialise the model; returns the first iteration to train, or -1 with err. */
static int64_t restore(worker *w, char *err, size_t errlen) {
    pf_config *cfg = w->cfg;
    char path[PF_PATH_MAX + 64];
    if (pf_ckpt_resolve_resume(cfg, path, sizeof path, err, errlen) != 0) return -1;
    if (path[0]) {
        int64_t iter = 0;
        if (pf_ckpt_check_resume(cfg, path, err, errlen) != 0 ||
            pf_ckpt_load_weights(w->model, path, &iter, err, errlen) != 0)
            return -1;
        if (cfg->resume_optim) {
            if (pf_ckpt_load_optim(&w->optim, w->model, path, err, errlen) != 0) return -1;
        }
        if (pf_ckpt_load_ema(&w->optim, w->model, path, err, errlen) != 0) return -1;
        pf_info("resumed from %s at iteration %" PRId64 "%s", path, iter,
                cfg->resume_optim ? " with optimiser state" : " (optimiser state reset)");
        return iter;
    }
    if (strcmp(cfg->resume_from, "auto") == 0)
        pf_info("resume auto: no checkpoint in %s/checkpoints; starting fresh", cfg->work_dir);
    if (cfg->load_from[0]) {
        if (pf_ckpt_load_weights(w->model, cfg->load_from, NULL, err, errlen) != 0) return -1;
        pf_info("loaded weights from %s; training starts at iteration 0", cfg->load_from);
    } else {
        pf_model_init(w->model, cfg->seed);
    }
    /* BasicSR: the EMA starts as a copy of the weights training starts from. */
    if (w->optim.ema)
        memcpy(w->optim.ema, pf_model_params(w->model),
               pf_model_num_params(w->model) * sizeof(float));
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

static void usage(void) {
    fprintf(stderr, "usage: pixflow worker --connect tcp://HOST:PORT [--device cpu|cuda:N] "
                    "[--bind tcp://HOST:PORT] [--keys DIR] [--threads N]\n");
}

/* Wait for START; fills the checkpoint endpoint. Returns 0, 1 when the job stopped in order
   before it started (a STOP other than "abort": nothing to train, nothing to checkpoint), or -1
   (aborted, or the coordinator gone). A signal here changes nothing: the worker starts and
   stops before its first step, or the coordinator, stopping too, says STOP. */
static int wait_start(worker *w, char *ckpt_ep, size_t eplen) {
    while (!w->abort_requested) {
        if (!pf_client_coordinator_alive(&w->client)) {
            pf_error("coordinator stopped answering before training started");
            return -1;
        }
        zmq_pollitem_t it = { w->client.ctrl, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 200) <= 0) continue;
        pf_msg *m;
        if (pf_client_recv(&w->client, &m) != 1) continue;
        int type = m->type;
        if (type == PF_MSG_START) {
            snprintf(ckpt_ep, eplen, "%s", m->u.start.ckpt_endpoint);
            w->total_iters = m->u.start.total_iters;
            w->iters_per_epoch = m->u.start.iters_per_epoch;
        } else if (type == PF_MSG_STOP) {
            pf_info("stopped before training started (%s): %s", m->u.stop.reason,
                    m->u.stop.text);
            if (strcmp(m->u.stop.reason, "abort") != 0) type = -1;
        }
        pf_client_msg_free(&m);
        if (type == PF_MSG_START) return 0;
        if (type == -1) return 1;
        if (type == PF_MSG_STOP) return -1;
    }
    return -1;
}

int pf_worker_main(int argc, char **argv) {
    const char *addr = NULL, *device = "cpu", *bind = "tcp://127.0.0.1:*", *keys = NULL;
    int gpu_index = -1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) addr = argv[++i];
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) device = argv[++i];
        else if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) keys = argv[++i];
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
    if (!addr) {
        usage();
        return 2;
    }
    int64_t d = 0;
    if (strncmp(device, "cuda:", 5) == 0 &&
        pf_parse_int(device + 5, strlen(device + 5), 0, 255, &d) == PF_NUM_OK) {
        gpu_index = (int)d;
    } else if (strcmp(device, "cpu") != 0) {
        fprintf(stderr, "pixflow worker: --device %.60s: expected cpu or cuda:N (N 0..255)\n",
                device);
        return 2;
    }
    pf_log_set_name("worker");
    pf_catch_signals();
    /* The front end stops a job through the coordinator; a worker ignores the terminal's
       SIGINT so that it can finish its step and checkpoint when told to. */
    signal(SIGINT, SIG_IGN);
    static worker w;
    char err[2048] = "";
    /* Workers bind (data) and connect (ctrl, checkpoint hook): both halves of the keys. */
    if (pf_security_init_peer(keys, PF_SEC_CLIENT | PF_SEC_SERVER, err, sizeof err) != 0) {
        pf_error("%s", err);
        return 2;
    }
    void *zctx = pf_zmq_ctx_new();
    w.data = zmq_socket(zctx, ZMQ_PULL);
    int linger = 0, hwm = 256;
    zmq_setsockopt(w.data, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(w.data, ZMQ_RCVHWM, &hwm, sizeof hwm);
    char data_ep[PF_MAX_ENDPOINT];
    if (pf_bind_report(w.data, "data", bind, data_ep, sizeof data_ep, err, sizeof err) != 0) {
        pf_error("data endpoint: %s", err);
        zmq_close(w.data);
        pf_zmq_ctx_term(zctx);
        return 1;
    }
    if (pf_client_join(&w.client, zctx, addr, PF_ROLE_WORKER, "worker", data_ep, err,
                       sizeof err)) {
        zmq_close(w.data);
        pf_zmq_ctx_term(zctx);
        return pf_client_stop_status(&w.client, err);
    }
    w.cfg = &w.client.cfg;
    w.rank = w.client.rank;
    w.world = w.client.world_size;
    snprintf(w.client.name, sizeof w.client.name, "worker%d", w.rank);
    pf_log_set_name(w.client.name);
    pf_log_set_level(w.cfg->log_level);
    char path[PF_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/rank%d.log", w.cfg->work_dir, w.rank);
    pf_log_open_file(path);
    int status = 1;
    int64_t it = 0, start_iter = 0;
    char ckpt_ep[PF_MAX_ENDPOINT];
    /* The first train events must reach the hooks: a PUB drops what it publishes before it is
       connected to the proxy and subscribed to. START waits in ctrl's queue meanwhile. */
    /* Stopped before training started (a signal here, or the job stopping): nothing trained,
       nothing to checkpoint; DONE at the first iteration says so without an error. */
    if (pf_client_confirm_publisher(&w.client, 20.0, err, sizeof err) != 0) {
        if (w.client.stopped_by > 0) {
            pf_info("%s: stopping before training started", err);
            status = 0;
            err[0] = '\0';
        }
        goto done;
    }
    int started = wait_start(&w, ckpt_ep, sizeof ckpt_ep);
    if (started != 0) {
        if (started > 0) status = 0;
        else snprintf(err, sizeof err, "did not start");
        goto done;
    }
    w.grouped = w.world > 1;
    if (w.world > 1 && gpu_index < 0) {
        char host[PF_MAX_ENDPOINT];
        endpoint_host(data_ep, host, sizeof host);
        w.coll = pf_collective_gloo_new(w.rank, w.world, host, "gloo", pf_client_kv_set,
                                        pf_client_kv_get, &w.client, COLLECTIVE_TIMEOUT_S, err,
                                        sizeof err);
        if (!w.coll) goto done;
        pf_info("joined the Gloo group: rank %d of %d on %s", w.rank, w.world, host);
    }
    w.model = pf_model_new(w.cfg, err, sizeof err);
    if (!w.model) goto done;
    if (pf_state_optim_new(w.cfg, w.model, &w.optim, err, sizeof err) != 0) goto done;
    start_iter = restore(&w, err, sizeof err);
    if (start_iter < 0 || sync_model_params(&w, err, sizeof err) != 0) goto done;
    if (gpu_index >= 0) {
        /* Train on the GPU: the restored state goes up once; a group agrees on rank 0's. */
        w.gpu = pf_gpu_new(w.cfg, gpu_index, err, sizeof err);
        if (!w.gpu || pf_gpu_upload(w.gpu, pf_model_params(w.model), &w.optim, err,
                                    sizeof err) != 0)
            goto done;
        if (w.world > 1 &&
            (pf_gpu_join_group(w.gpu, w.rank, w.world, pf_client_kv_set, pf_client_kv_get,
                               &w.client, COLLECTIVE_TIMEOUT_S, err, sizeof err) != 0 ||
             pf_gpu_broadcast_state(w.gpu, err, sizeof err) != 0))
            goto done;
        pf_info("training on cuda:%d%s", gpu_index, w.world > 1 ? " (NCCL group)" : "");
    }
    w.ckpt = zmq_socket(zctx, ZMQ_DEALER);
    linger = 5000;
    zmq_setsockopt(w.ckpt, ZMQ_LINGER, &linger, sizeof linger);
    if (pf_security_client(w.ckpt) != 0 || zmq_connect(w.ckpt, ckpt_ep) != 0) {
        snprintf(err, sizeof err, "cannot connect to checkpoint hook '%s': %s", ckpt_ep,
                 zmq_strerror(errno));
        goto done;
    }
    w.n_slots = w.cfg->prefetch;
    w.slots = calloc((size_t)w.n_slots, sizeof *w.slots);
    w.samples_log = open_samples_log(w.cfg, w.rank, start_iter);
    if (!w.slots || !w.samples_log) {
        snprintf(err, sizeof err, "cannot open %s/samples_rank%d.log or allocate slots",
                 w.cfg->work_dir, w.rank);
        goto done;
    }
    pf_info("rank %d of %d, %zu parameters, iterations %" PRId64 "..%" PRId64
            ", data endpoint %s, global batch %d (%d per worker)", w.rank, w.world,
            pf_model_num_params(w.model), start_iter, w.total_iters, data_ep,
            w.world * w.cfg->samples_per_gpu, w.cfg->samples_per_gpu);
    publish_status(&w, "status", "worker%d training from iteration %" PRId64 ", global batch %d "
                   "(%d workers x %d)", w.rank, start_iter, w.world * w.cfg->samples_per_gpu,
                   w.world, w.cfg->samples_per_gpu);
    pf_msg credit = { .type = PF_MSG_CREDIT };
    credit.u.credit.rank = w.rank;
    credit.u.credit.n = (uint32_t)w.n_slots;
    credit.u.credit.next_iter = start_iter;
    pf_client_send(&w.client, &credit, NULL, 0);
    int64_t last_ckpt = start_iter;
    double lr = 0;
    int64_t epoch = w.iters_per_epoch ? start_iter / w.iters_per_epoch : 0;
    double next_worker_event = 0;
    for (it = start_iter; it < w.total_iters;) {
        if (pf_now() >= next_worker_event) {
            publish_worker(&w, device, it);
            next_worker_event = pf_now() + WORKER_EVENT_INTERVAL_S;
        }
        if (stop_now(&w)) break;
        /* Wait for the batch of this iteration. */
        double t_wait = pf_now();
        slot *s = &w.slots[it % w.n_slots];
        while (!(s->used && s->hdr.iter == it) && !w.abort_requested && !stop_now(&w)) {
            if (!pf_client_coordinator_alive(&w.client)) {
                snprintf(err, sizeof err, "coordinator stopped answering");
                goto done;
            }
            zmq_pollitem_t items[] = { { w.data, 0, ZMQ_POLLIN, 0 },
                                       { w.client.ctrl, 0, ZMQ_POLLIN, 0 } };
            zmq_poll(items, 2, 200);
            if (items[0].revents & ZMQ_POLLIN) receive_batch(&w, it);
            if (items[1].revents & ZMQ_POLLIN) poll_ctrl(&w);
            check_signal(&w);
        }
        if (w.abort_requested) {
            snprintf(err, sizeof err, "aborted by the coordinator");
            goto done;
        }
        if (stop_now(&w)) break;
        double data_time = pf_now() - t_wait;
        double t0 = pf_now();
        const pf_msg_batch *b = &s->hdr;
        int64_t b_skipped = b->n_skipped;
        epoch = b->epoch;
        const uint8_t *gt = pf_parts_data(&s->parts, 1), *lq = pf_parts_data(&s->parts, 2);
        float loss = 0;
        lr = pf_lr_at(w.cfg, it);
        w.skipped += b->n_skipped;
        if (train_step(&w, b, gt, lq, lr, &loss, err, sizeof err) != 0) goto done;
        publish_visual(&w, b, gt, lq, it + 1);
        /* Record, acknowledge, return the credit. */
        uint64_t digest = pf_fnv1a64(gt, pf_parts_size(&s->parts, 1), PF_FNV_OFFSET);
        digest = pf_fnv1a64(lq, pf_parts_size(&s->parts, 2), digest);
        fprintf(w.samples_log, "%" PRId64 " %u %" PRIu64 " ", b->iter, b->epoch, b->ticket_id);
        for (uint32_t i = 0; i < b->n; i++)
            fprintf(w.samples_log, "%s%u", i ? "," : "", b->indices[i]);
        fprintf(w.samples_log, "%s %016" PRIx64 " loader=%u", b->n ? "" : "-", digest,
                b->loader_id);
        for (uint32_t i = 0; i < b->n_skipped; i++)
            fprintf(w.samples_log, "%s%u", i ? "," : " skipped=", b->skipped[i]);
        fputc('\n', w.samples_log);
        fflush(w.samples_log);
        pf_msg ack = { .type = PF_MSG_ACK };
        ack.u.ack.ticket_id = b->ticket_id;
        ack.u.ack.rank = w.rank;
        pf_client_send(&w.client, &ack, NULL, 0);
        pf_parts_close(&s->parts);
        s->used = 0;
        credit.u.credit.n = 1;
        credit.u.credit.next_iter = it + 1;
        pf_client_send(&w.client, &credit, NULL, 0);
        it++;
        /* Drain whatever arrived meanwhile so slots fill while we train. */
        receive_batch(&w, it);
        pf_msg_event ev = { 0 };
        snprintf(ev.kind, sizeof ev.kind, "train");
        ev.iter = it;
        ev.total_iters = w.total_iters;
        ev.epoch = epoch;
        ev.loss = loss;
        ev.lr = lr;
        ev.time = pf_now() - t0 + data_time;
        ev.data_time = data_time;
        ev.count = b_skipped;
        if (w.rank == 0) pf_client_publish(&w.client, &ev);  /* loss is the group's mean */
        poll_ctrl(&w);
        if (w.abort_requested) {
            snprintf(err, sizeof err, "aborted by the coordinator");
            goto done;
        }
        if (w.rank == 0 && ((w.cfg->ckpt_interval > 0 && it % w.cfg->ckpt_interval == 0) ||
                            it == w.total_iters)) {
            if (save_checkpoint(&w, it, epoch, lr, err, sizeof err) != 0) goto done;
            last_ckpt = it;
        }
    }
    if (stop_now(&w) && it != last_ckpt && w.rank == 0) {
        if (save_checkpoint(&w, it, epoch, lr, err, sizeof err) != 0) goto done;
        last_ckpt = it;
    }
    status = 0;
    err[0] = '\0';
    pf_info("%s at iteration %" PRId64 " (%" PRIu64 " batch messages dropped, %" PRIu64
            " samples skipped, %" PRIu64 " iterations without a sample)",
            stop_now(&w) ? "interrupted" : "finished", it, w.dropped, w.skipped,
            w.empty_steps);
    if (w.visuals)
        pf_info("visual: %" PRIu64 " pictures published, %.3f ms each on average", w.visuals,
                1e3 * w.visual_time / (double)w.visuals);
    if (w.skipped)
        publish_status(&w, "status", "worker%d: %" PRIu64 " samples skipped (unreadable files, "
                       "data.on_bad_sample: skip), %" PRIu64 " iterations without a sample",
                       w.rank, w.skipped, w.empty_steps);
done:;
    pf_msg done = { .type = PF_MSG_DONE };
    done.u.done.rank = w.rank;
    done.u.done.iter = it;
    done.u.done.status = status;
    snprintf(done.u.done.text, sizeof done.u.done.text, "%s", err);
    if (status) pf_error("%s", err);
    if (w.client.ctrl) pf_client_send(&w.client, &done, NULL, 0);
    if (w.samples_log) fclose(w.samples_log);
    for (int i = 0; w.slots && i < w.n_slots; i++)
        if (w.slots[i].used) pf_parts_close(&w.slots[i].parts);
    free(w.slots);
    if (w.ckpt) zmq_close(w.ckpt);
    zmq_close(w.data);
    pf_client_close(&w.client);
    pf_zmq_ctx_term(zctx);
    pf_model_destroy(&w.model);
    pf_optim_free(&w.optim);
    free(w.visual_out);
    free(w.visual_u8);
    if (w.coll) pf_collective_destroy(&w.coll);
    if (w.gpu) pf_gpu_destroy(&w.gpu);
    return status;
}
