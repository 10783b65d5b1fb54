/*  loader — `pixflow loader --connect ADDR`: turns tickets into batches.

    It joins the job through the coordinator, opens the train set named in the config it is
    given, and for each TICKET decodes (once, then cached) the listed samples, applies the
    paired random crop and flips drawn from (seed, epoch, sample index), packs uint8 NHWC GT and
    LQ frames and PUSHes them straight to the worker the ticket names. It keeps no state that
    matters: if it dies, the coordinator gives its tickets to another loader and the batches come
    out bit-identical.
*/
#include "loader/loader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/log.h"
#include "common/util.h"
#include "coordinator/client.h"
#include "loader/dataset.h"
#include "proto/proto.h"

#define MAX_WORKERS 64

typedef struct {
    char endpoint[PF_MAX_ENDPOINT];
    void *push;                     /* PUSH connected to that worker's data endpoint */
} worker_link;

typedef struct {
    pf_client client;
    pf_dataset ds;
    worker_link links[MAX_WORKERS];
    int n_links;
    uint8_t *gt_buf, *lq_buf;       /* one batch, reused */
    size_t gt_cap, lq_cap;
    uint64_t batches;
    double busy_s;
} loader;

static void *link_for(loader *l, const char *endpoint) {
    for (int i = 0; i < l->n_links; i++)
        if (strcmp(l->links[i].endpoint, endpoint) == 0) return l->links[i].push;
    if (l->n_links == MAX_WORKERS) return NULL;
    void *s = zmq_socket(l->client.zctx, ZMQ_PUSH);
    int linger = 1000, hwm = 64, tmo = 10000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
    if (zmq_connect(s, endpoint) != 0) {
        pf_error("cannot connect to worker data endpoint '%s': %s", endpoint,
                 zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    worker_link *k = &l->links[l->n_links++];
    snprintf(k->endpoint, sizeof k->endpoint, "%s", endpoint);
    k->push = s;
    return s;
}

/* Build and send the batch of one ticket. Returns 0, or -1 with err (fatal for this loader:
   an unreadable image fails the same way in any loader, so the job must hear about it). */
static int serve_ticket(loader *l, const pf_msg_ticket *t, char *err, size_t errlen) {
    const pf_config *cfg = &l->client.cfg;
    int gp = cfg->train.gt_patch_size, lp = gp / cfg->scale;
    size_t gt_sz = (size_t)gp * gp * 3, lq_sz = (size_t)lp * lp * 3;
    if (t->n * gt_sz > l->gt_cap) {
        free(l->gt_buf);
        l->gt_cap = t->n * gt_sz;
        l->gt_buf = malloc(l->gt_cap);
    }
    if (t->n * lq_sz > l->lq_cap) {
        free(l->lq_buf);
        l->lq_cap = t->n * lq_sz;
        l->lq_buf = malloc(l->lq_cap);
    }
    if (!l->gt_buf || !l->lq_buf) {
        snprintf(err, errlen, "out of memory for a batch of %u", t->n);
        l->gt_cap = l->lq_cap = 0;
        return -1;
    }
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->indices[i] >= l->ds.len) {
            snprintf(err, errlen, "ticket %llu names sample %u but data.train has %u",
                     (unsigned long long)t->ticket_id, t->indices[i], l->ds.len);
            return -1;
        }
        const pf_image *gt, *lq;
        if (pf_dataset_pair(&l->ds, (int)(t->indices[i] % (uint32_t)l->ds.n_files), &gt, &lq,
                            err, errlen) != 0)
            return -1;
        pf_paired_crop_augment(gt, lq, cfg->scale, gp, cfg->train.use_flip, cfg->train.use_rot,
                               cfg->seed, t->epoch, t->indices[i], l->gt_buf + i * gt_sz,
                               l->lq_buf + i * lq_sz);
    }
    pf_msg *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->type = PF_MSG_BATCH;
    pf_msg_batch *b = &m->u.batch;
    b->ticket_id = t->ticket_id;
    b->epoch = t->epoch;
    b->iter = t->iter;
    b->rank = t->rank;
    b->n = t->n;
    memcpy(b->indices, t->indices, sizeof b->indices[0] * t->n);
    b->gt_h = b->gt_w = (uint32_t)gp;
    b->lq_h = b->lq_w = (uint32_t)lp;
    b->loader_id = l->client.peer_id;
    pf_frame frames[2] = { { l->gt_buf, t->n * gt_sz }, { l->lq_buf, t->n * lq_sz } };
    void *push = link_for(l, t->endpoint);
    int rc = push ? pf_send(push, NULL, m, frames, 2) : -1;
    free(m);
    if (rc != 0) {
        /* Not fatal: the ticket stays outstanding at the coordinator, and a worker that is gone
           ends the job there. */
        pf_warn("could not send batch %llu to '%s': %s", (unsigned long long)t->ticket_id,
                t->endpoint, zmq_strerror(errno));
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: pixflow loader --connect tcp://HOST:PORT [--name NAME]\n");
}

int pf_loader_main(int argc, char **argv) {
    const char *addr = NULL, *name = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) addr = argv[++i];
        else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) name = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    if (!addr) {
        usage();
        return 2;
    }
    char auto_name[PF_MAX_NAME];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "loader-%d", (int)getpid());
        name = auto_name;
    }
    pf_log_set_name(name);
    pf_catch_signals();
    static loader l;
    char err[2048] = "";
    void *zctx = zmq_ctx_new();
    if (pf_client_join(&l.client, zctx, addr, PF_ROLE_LOADER, name, "", err, sizeof err)) {
        pf_error("%s", err);
        zmq_ctx_term(zctx);
        return 1;
    }
    pf_log_set_level(l.client.cfg.log_level);
    char logpath[PF_PATH_MAX + 96];
    snprintf(logpath, sizeof logpath, "%s/%s.log", l.client.cfg.work_dir, name);
    if (pf_mkdirs(l.client.cfg.work_dir, err, sizeof err) == 0) pf_log_open_file(logpath);
    if (pf_dataset_open(&l.ds, &l.client.cfg.train, "data.train", l.client.cfg.scale,
                        l.client.cfg.train.gt_patch_size, err, sizeof err) != 0) {
        pf_error("%s", err);
        pf_msg m = { .type = PF_MSG_DONE };
        m.u.done.rank = -1;
        m.u.done.status = 1;
        snprintf(m.u.done.text, sizeof m.u.done.text, "%s", err);
        pf_client_send(&l.client, &m, NULL, 0);
        pf_client_close(&l.client);
        zmq_ctx_term(zctx);
        return 1;
    }
    pf_info("joined %s as peer %u; %d images, %u samples per epoch", addr, l.client.peer_id,
            l.ds.n_files, l.ds.len);
    int status = 0;
    while (!pf_signalled) {
        if (!pf_client_coordinator_alive(&l.client)) {
            pf_error("coordinator at %s stopped answering; exiting", addr);
            status = 1;
            break;
        }
        zmq_pollitem_t it = { l.client.ctrl, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 200) <= 0) continue;
        pf_msg *m;
        if (pf_client_recv(&l.client, &m) != 1) continue;
        int stop = 0;
        if (m->type == PF_MSG_TICKET) {
            double t0 = pf_now();
            if (serve_ticket(&l, &m->u.ticket, err, sizeof err) != 0) {
                pf_error("%s", err);
                pf_msg d = { .type = PF_MSG_DONE };
                d.u.done.rank = -1;
                d.u.done.status = 1;
                snprintf(d.u.done.text, sizeof d.u.done.text, "loader %s: %s", name, err);
                pf_client_send(&l.client, &d, NULL, 0);
                status = 1;
                stop = 1;
            }
            l.batches++;
            l.busy_s += pf_now() - t0;
        } else if (m->type == PF_MSG_STOP) {
            pf_info("stop (%s): %s", m->u.stop.reason, m->u.stop.text);
            stop = 1;
        }
        pf_client_msg_free(&m);
        if (stop) break;
    }
    if (pf_signalled) {
        /* Leaving on SIGTERM/SIGINT: say so, so the coordinator reissues our tickets at once
           rather than after the heartbeat timeout. */
        pf_info("signal %d: leaving the job", (int)pf_signalled);
        pf_msg d = { .type = PF_MSG_DONE };
        d.u.done.rank = -1;
        snprintf(d.u.done.text, sizeof d.u.done.text, "loader %s left (signal %d)", name,
                 (int)pf_signalled);
        pf_client_send(&l.client, &d, NULL, 0);
    }
    if (l.batches)
        pf_info("served %llu batches, %.1f ms each", (unsigned long long)l.batches,
                1000.0 * l.busy_s / l.batches);
    for (int i = 0; i < l.n_links; i++) zmq_close(l.links[i].push);
    pf_dataset_close(&l.ds);
    pf_client_close(&l.client);
    zmq_ctx_term(zctx);
    free(l.gt_buf);
    free(l.lq_buf);
    return status;
}
