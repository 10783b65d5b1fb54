/*  batch_builder — see batch_builder.h.

    One job at a time: fill() publishes the job (a generation number under the lock), every
    thread including the caller takes sample numbers from an atomic counter until none are left,
    and the caller waits until the helpers have finished theirs. The helpers block the job's
    signals, so SIGINT/SIGTERM reach the loader's main thread and its poll loop sees them.
*/
#include "loader/batch_builder.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

#define ERR_LEN 512

struct pf_batch_builder {
    pf_dataset *ds;
    size_t gt_size, lq_size;        /* bytes of one sample */
    int n_helpers;                  /* threads - 1 */
    pthread_t *helpers;
    pthread_mutex_t lock;
    pthread_cond_t wake;            /* a new job, or stop */
    pthread_cond_t finished;        /* a helper finished its part of the job */
    uint64_t generation;            /* job number (under lock) */
    int helpers_busy;               /* helpers still on the current job (under lock) */
    int stop;                       /* under lock */
    /* The current job: written by fill() before it is published, read by every thread. */
    uint64_t seed;
    uint32_t epoch, n;
    const uint32_t *indices;
    uint8_t *gt, *lq, *gt_plain;    /* gt_plain: NULL when the batch has no such frame */
    atomic_uint next;               /* next sample slot to take */
    atomic_int failures;
    char (*errors)[ERR_LEN];        /* per slot: "" or why it failed */
};

/* Take and make samples until the job has none left. */
static void work(pf_batch_builder *b) {
    for (;;) {
        uint32_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n) return;
        b->errors[i][0] = '\0';
        uint8_t *plain = b->gt_plain ? b->gt_plain + i * b->gt_size : NULL;
        if (pf_dataset_sample_gt_plain(b->ds, b->indices[i], b->seed, b->epoch,
                                       b->gt + i * b->gt_size, b->lq + i * b->lq_size, plain,
                                       b->errors[i], ERR_LEN) != 0) {
            if (!b->errors[i][0]) snprintf(b->errors[i], ERR_LEN, "sample %u failed",
                                           b->indices[i]);
            atomic_fetch_add(&b->failures, 1);
        }
    }
}

static void *helper_main(void *arg) {
    pf_batch_builder *b = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (!b->stop && b->generation == seen) pthread_cond_wait(&b->wake, &b->lock);
        if (b->stop) break;
        seen = b->generation;
        pthread_mutex_unlock(&b->lock);
        work(b);
        pthread_mutex_lock(&b->lock);
        if (--b->helpers_busy == 0) pthread_cond_signal(&b->finished);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

pf_batch_builder *pf_batch_builder_new(pf_dataset *ds, int threads, char *err, size_t errlen) {
    if (threads < 1 || threads > 64 || ds->gt_patch <= 0 || ds->scale <= 0) {
        snprintf(err, errlen, "batch builder: %d threads, patch %d, scale %d: expected 1..64 "
                 "threads and a training dataset", threads, ds->gt_patch, ds->scale);
        return NULL;
    }
    pf_batch_builder *b = calloc(1, sizeof *b);
    if (!b || !(b->errors = calloc(PF_MAX_BATCH, sizeof *b->errors)) ||
        !(b->helpers = calloc((size_t)threads, sizeof *b->helpers))) {
        if (b) free(b->errors);
        free(b);
        snprintf(err, errlen, "out of memory for %d loader threads", threads);
        return NULL;
    }
    b->ds = ds;
    size_t gp = (size_t)ds->gt_patch, lp = gp / (size_t)ds->scale;
    b->gt_size = gp * gp * 3 * (size_t)ds->gt_frames;  /* a video set's frames (a sliding
                                                          window's: 1, its center) */
    b->lq_size = lp * lp * 3 * (size_t)ds->frames;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->wake, NULL);
    pthread_cond_init(&b->finished, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < threads - 1; i++) {
        if (pthread_create(&b->helpers[i], NULL, helper_main, b) != 0) {
            snprintf(err, errlen, "cannot start loader thread %d of %d", i + 2, threads);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pf_batch_builder_destroy(&b);
            return NULL;
        }
        b->n_helpers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return b;
}

void pf_batch_builder_destroy(pf_batch_builder **bp) {
    pf_batch_builder *b = *bp;
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    b->stop = 1;
    pthread_cond_broadcast(&b->wake);
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->n_helpers; i++) pthread_join(b->helpers[i], NULL);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->wake);
    pthread_cond_destroy(&b->finished);
    free(b->helpers);
    free(b->errors);
    free(b);
    *bp = NULL;
}

int pf_batch_builder_fill(pf_batch_builder *b, uint64_t seed, uint32_t epoch,
                          const uint32_t *indices, uint32_t n, uint8_t *gt, uint8_t *lq,
                          uint8_t *gt_plain) {
    if (n > PF_MAX_BATCH) n = PF_MAX_BATCH;
    b->seed = seed;
    b->epoch = epoch;
    b->indices = indices;
    b->n = n;
    b->gt = gt;
    b->lq = lq;
    b->gt_plain = gt_plain;
    atomic_store(&b->next, 0);
    atomic_store(&b->failures, 0);
    /* Wake helpers only when there is more than one sample to share. */
    int helpers = n > 1 ? b->n_helpers : 0;
    if (helpers) {
        pthread_mutex_lock(&b->lock);
        b->helpers_busy = b->n_helpers;
        b->generation++;
        pthread_cond_broadcast(&b->wake);
        pthread_mutex_unlock(&b->lock);
    }
    work(b);
    if (helpers) {
        pthread_mutex_lock(&b->lock);
        while (b->helpers_busy) pthread_cond_wait(&b->finished, &b->lock);
        pthread_mutex_unlock(&b->lock);
    }
    return atomic_load(&b->failures);
}

const char *pf_batch_builder_error(const pf_batch_builder *b, uint32_t i) {
    return i < b->n && b->errors[i][0] ? b->errors[i] : NULL;
}

void pf_batch_builder_sample_sizes(const pf_batch_builder *b, size_t *gt_size,
                                   size_t *lq_size) {
    *gt_size = b->gt_size;
    *lq_size = b->lq_size;
}
