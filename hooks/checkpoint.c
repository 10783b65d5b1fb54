/*  checkpoint hook — `pixflow hook checkpoint --connect ADDR`: the only writer of
    work_dir/checkpoints/.

    It binds a ROUTER; rank 0 sends CKPT_SAVE with the weights and optimiser safetensors bytes
    as frames. Both are parsed (a corrupt or truncated payload is refused, never written), then
    written with pf_write_file_atomic (temp file, fsync, rename, fsync of the folder): optimiser
    first, weights second, and the `latest` pointer (a one-line file naming the weights file)
    last, so `latest` never names a file that is not complete. Only then is CKPT_ACK ok sent, and
    a "checkpoint" event published. checkpoint_config.max_keep_ckpts older pairs are removed after
    the new one is safe. Any failure (disk full, permissions) is answered with ok = 0 and the
    reason, and the worker ends the job with it.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

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

/* Keep the newest `keep` checkpoints up to `current` (both files of each). Never touches
   `current` itself or anything after it. */
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
    }
}

/* Validate and write one checkpoint; fills ack. */
static void save(pf_hook *h, const pf_parts *p, const pf_msg_ckpt_save *c, pf_msg_ckpt_ack *ack) {
    const pf_config *cfg = &h->client.cfg;
    char err[1024] = "";
    ack->iter = c->iter;
    ack->ok = 0;
    char dir[PF_PATH_MAX + 32], wpath[PF_PATH_MAX + 128], opath[PF_PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%s/checkpoints", cfg->work_dir);
    if (p->n != 4 || pf_parts_size(p, 2) != c->weights_size ||
        pf_parts_size(p, 3) != c->optim_size) {
        snprintf(ack->error, sizeof ack->error, "frames do not match the header sizes");
        return;
    }
    if (!valid_name(c->weights_name, ".safetensors") ||
        !valid_name(c->optim_name, ".optim.safetensors")) {
        snprintf(ack->error, sizeof ack->error, "bad checkpoint file names '%s', '%s'",
                 c->weights_name, c->optim_name);
        return;
    }
    pf_safetensors *st = NULL;
    if (pf_safetensors_parse(pf_parts_data(p, 2), c->weights_size, c->weights_name, &st, err,
                             sizeof err) != 0 ||
        (pf_safetensors_free(&st), pf_safetensors_parse(pf_parts_data(p, 3), c->optim_size,
                                                         c->optim_name, &st, err,
                                                         sizeof err)) != 0) {
        snprintf(ack->error, sizeof ack->error, "refused a corrupt checkpoint: %s", err);
        return;
    }
    pf_safetensors_free(&st);
    snprintf(wpath, sizeof wpath, "%s/%s", dir, c->weights_name);
    snprintf(opath, sizeof opath, "%s/%s", dir, c->optim_name);
    char latest[PF_PATH_MAX + 64];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    char line[PF_MAX_NAME + 2];
    snprintf(line, sizeof line, "%s\n", c->weights_name);
    if (pf_mkdirs(dir, err, sizeof err) != 0 ||
        pf_write_file_atomic(opath, pf_parts_data(p, 3), c->optim_size, err, sizeof err) != 0 ||
        pf_write_file_atomic(wpath, pf_parts_data(p, 2), c->weights_size, err,
                             sizeof err) != 0 ||
        pf_write_file_atomic(latest, line, strlen(line), err, sizeof err) != 0) {
        snprintf(ack->error, sizeof ack->error, "%s", err);
        pf_error("checkpoint %" PRId64 " not written: %s", c->iter, err);
        return;
    }
    prune(dir, cfg->ckpt_max_keep, c->iter);
    ack->ok = 1;
    snprintf(ack->path, sizeof ack->path, "%s", wpath);
    pf_info("wrote %s (%.1f MB) and its optimiser state", wpath, c->weights_size / 1e6);
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
