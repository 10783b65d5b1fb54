/*  checkpoint hook — `pixflow hook checkpoint --connect ADDR`: the only writer of
    work_dir/checkpoints/.

    It binds a ROUTER; rank 0 sends CKPT_SAVE with the weights and optimiser safetensors bytes
    as frames, and for a GAN job two more: net_d's state_dict and optim_d's state
    (iter_N.net_d.safetensors, iter_N.net_d.optim.safetensors, named after the weights file:
    pf_ckpt_net_d_path). All are parsed (a corrupt or truncated payload is refused, never
    written), then written with pf_write_file_atomic (temp file, fsync, rename, fsync of the
    folder): net_d's files first, the optimiser next, weights after them, and the `latest`
    pointer (a one-line file naming the weights file) last, so `latest` never names a
    checkpoint with a file that is not complete. Only then is CKPT_ACK ok sent, and a
    "checkpoint" event published. checkpoint_config.max_keep_ckpts older checkpoints (all their
    files) are removed after the new one is safe. Any failure (disk full, permissions) is
    answered with ok = 0 and the reason, and the worker ends the job with it.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/checkpoint.h"
#include "common/log.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "hooks/hook.h"

static int ckpt_bind(pf_hook *h, char *endpoint, size_t eplen, char *err, size_t errlen) {
    h->own = zmq_socket(h->zctx, ZMQ_ROUTER);
    int linger = 2000;
    zmq_setsockopt(h->own, ZMQ_LINGER, &linger, sizeof linger);
    return pf_bind_report(h->own, "checkpoint", pf_hook_bind_arg(), endpoint, eplen, err, errlen);
}

/* 1 if `name` is "iter_<digits><suffix>" (so it cannot escape the folder). */
static int valid_name(const char *name, const char *suffix) {
    if (strncmp(name, "iter_", 5) != 0) return 0;
    const char *p = name + 5;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strcmp(p, suffix) == 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Keep the newest `keep` checkpoints up to `current` (every file of each: weights, optimiser,
   a GAN job's net_d and its optimiser). Never touches `current` itself or anything after
   it. */
static void prune(const char *dir, int keep, int64_t current) {
    if (keep < 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    int64_t iters[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        if (valid_name(e->d_name, ".safetensors")) {
            int64_t it = strtoll(e->d_name + 5, NULL, 10);
            if (it < current) iters[n++] = it;
        }
    }
    closedir(d);
    qsort(iters, n, sizeof iters[0], cmp_i64);
    for (int i = 0; i < n - (keep - 1); i++) {   /* `current` counts as one of the kept */
        char path[PF_PATH_MAX + 96];
        snprintf(path, sizeof path, "%s/iter_%" PRId64 ".safetensors", dir, iters[i]);
        unlink(path);
        snprintf(path, sizeof path, "%s/iter_%" PRId64 ".optim.safetensors", dir, iters[i]);
        unlink(path);
        snprintf(path, sizeof path, "%s/iter_%" PRId64 ".net_d.safetensors", dir, iters[i]);
        unlink(path);
        snprintf(path, sizeof path, "%s/iter_%" PRId64 ".net_d.optim.safetensors", dir,
                 iters[i]);
        unlink(path);
    }
}

/* The payload frames of c (from part 2 on): weights, optimiser, and for a GAN job net_d and
   optim_d; their file names in checkpoints/ into names (PF_MAX_NAME + 32 each). Returns how
   many (2 or 4). */
static int payloads(const pf_msg_ckpt_save *c, char names[4][PF_MAX_NAME + 32],
                    uint64_t sizes[4]) {
    snprintf(names[0], sizeof names[0], "%s", c->weights_name);
    snprintf(names[1], sizeof names[1], "%s", c->optim_name);
    pf_ckpt_net_d_path(c->weights_name, names[2], sizeof names[2]);
    pf_ckpt_optim_path(names[2], names[3], sizeof names[3]);
    sizes[0] = c->weights_size;
    sizes[1] = c->optim_size;
    sizes[2] = c->net_d_size;
    sizes[3] = c->net_d_optim_size;
    return c->net_d_size ? 4 : 2;
}

int pf_hook_ckpt_check(const pf_parts *p, const pf_msg_ckpt_save *c, char *why,
                       size_t whylen) {
    char names[4][PF_MAX_NAME + 32], err[1024] = "";
    uint64_t sizes[4];
    int n = payloads(c, names, sizes);
    int bad = p->n != 2 + n;
    for (int i = 0; i < n && !bad; i++) bad = pf_parts_size(p, 2 + i) != sizes[i];
    if (bad) {
        snprintf(why, whylen, "frames do not match the header sizes");
        return -1;
    }
    if (!valid_name(c->weights_name, ".safetensors") ||
        !valid_name(c->optim_name, ".optim.safetensors")) {
        snprintf(why, whylen, "bad checkpoint file names '%s', '%s'", c->weights_name,
                 c->optim_name);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        pf_safetensors *st = NULL;
        if (pf_safetensors_parse(pf_parts_data(p, 2 + i), sizes[i], names[i], &st, err,
                                 sizeof err) != 0) {
            snprintf(why, whylen, "refused a corrupt checkpoint: %s", err);
            return -1;
        }
        pf_safetensors_free(&st);
    }
    return 0;
}

/* Validate and write one checkpoint; fills ack. */
static void save(pf_hook *h, const pf_parts *p, const pf_msg_ckpt_save *c, pf_msg_ckpt_ack *ack) {
    const pf_config *cfg = &h->client.cfg;
    char err[1024] = "";
    ack->iter = c->iter;
    ack->ok = 0;
    if (pf_hook_ckpt_check(p, c, ack->error, sizeof ack->error) != 0) return;
    char dir[PF_PATH_MAX + 32], names[4][PF_MAX_NAME + 32];
    uint64_t sizes[4];
    int n = payloads(c, names, sizes);
    snprintf(dir, sizeof dir, "%s/checkpoints", cfg->work_dir);
    char latest[PF_PATH_MAX + 64];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    char line[PF_MAX_NAME + 2];
    snprintf(line, sizeof line, "%s\n", c->weights_name);
    int rc = pf_mkdirs(dir, err, sizeof err);
    /* net_d's files (3, 2), the optimiser (1), the weights (0): `latest` names the weights
       file, so it and everything it needs is complete before `latest` moves. */
    for (int i = n - 1; i >= 0 && rc == 0; i--) {
        char path[PF_PATH_MAX + 128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = pf_write_file_atomic(path, pf_parts_data(p, 2 + i), sizes[i], err, sizeof err);
    }
    if (rc != 0 || pf_write_file_atomic(latest, line, strlen(line), err, sizeof err) != 0) {
        snprintf(ack->error, sizeof ack->error, "%s", err);
        pf_error("checkpoint %" PRId64 " not written: %s", c->iter, err);
        return;
    }
    prune(dir, cfg->ckpt_max_keep, c->iter);
    ack->ok = 1;
    snprintf(ack->path, sizeof ack->path, "%s/%s", dir, c->weights_name);
    pf_info("wrote %s (%.1f MB) and its optimiser state%s", ack->path, c->weights_size / 1e6,
            n == 4 ? ", net_d and optim_d" : "");
}

static int ckpt_ready(pf_hook *h, char *err, size_t errlen) {
    pf_parts p;
    char e2[512];
    while (pf_parts_recv(h->own, ZMQ_DONTWAIT, &p, e2, sizeof e2) == 0) {
        pf_msg *m = malloc(sizeof *m), *a = calloc(1, sizeof *a);
        if (!m || !a) {
            free(m);
            free(a);
            pf_parts_close(&p);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (p.n >= 2 && pf_msg_decode(pf_parts_data(&p, 1), pf_parts_size(&p, 1),
                                      PF_MSG_CKPT_SAVE, m, e2, sizeof e2) == 0) {
            a->type = PF_MSG_CKPT_ACK;
            save(h, &p, &m->u.ckpt_save, &a->u.ckpt_ack);
            /* The event goes out before the ack, so it is on its way to the subscribers
               before the worker can finish and the job start to stop. */
            if (a->u.ckpt_ack.ok) {
                pf_msg_event *ev = calloc(1, sizeof *ev);
                if (ev) {
                    snprintf(ev->kind, sizeof ev->kind, "checkpoint");
                    ev->iter = m->u.ckpt_save.iter;
                    ev->epoch = m->u.ckpt_save.epoch;
                    snprintf(ev->path, sizeof ev->path, "%s", a->u.ckpt_ack.path);
                    pf_client_publish(&h->client, ev);
                    free(ev);
                }
            }
            pf_frame id = { pf_parts_data(&p, 0), pf_parts_size(&p, 0) };
            pf_send(h->own, &id, a, NULL, 0);
        } else {
            pf_warn("dropped a bad checkpoint request: %s", p.n >= 2 ? e2 : "too few frames");
        }
        free(m);
        free(a);
        pf_parts_close(&p);
    }
    return 0;
}

static const pf_hook_ops checkpoint_ops = {
    .role = PF_ROLE_CHECKPOINT,
    .name = "checkpoint",
    .kinds = (const char *const[]){ "none", NULL },
    .bind = ckpt_bind,
    .own_ready = ckpt_ready,
};

int pf_hook_checkpoint_main(int argc, char **argv) {
    return pf_hook_run(&checkpoint_ops, argc, argv);
}
