/*  batch_pool — see batch_pool.h. A mutex-guarded free list and a condition variable the
    taker waits on; ZeroMQ's I/O threads give buffers back through pf_batch_pool_frame_done.
*/
#include "loader/batch_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct pf_batch_pool {
    pthread_mutex_t lock;
    pthread_cond_t returned;        /* signalled when a buffer comes back */
    pf_batch_buf *bufs;             /* count of them */
    uint8_t *pixels;                /* one allocation for every buffer */
    int count;
    int in_use;                     /* taken and not back (under lock) */
    pf_batch_buf *free_list;        /* under lock */
};

pf_batch_pool *pf_batch_pool_new(int count, size_t gt_bytes, size_t lq_bytes,
                                 size_t gt_plain_bytes) {
    if (count < 1) return NULL;
    pf_batch_pool *p = calloc(1, sizeof *p);
    size_t each = gt_bytes + lq_bytes + gt_plain_bytes;
    if (!p) return NULL;
    p->bufs = calloc((size_t)count, sizeof *p->bufs);
    p->pixels = malloc(each ? each * (size_t)count : 1);
    if (!p->bufs || !p->pixels) {
        free(p->bufs);
        free(p->pixels);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->returned, &ca);
    pthread_condattr_destroy(&ca);
    p->count = count;
    for (int i = count - 1; i >= 0; i--) {
        pf_batch_buf *b = &p->bufs[i];
        b->gt = p->pixels + (size_t)i * each;
        b->lq = b->gt + gt_bytes;
        b->gt_plain = gt_plain_bytes ? b->lq + lq_bytes : NULL;
        b->pool = p;
        atomic_init(&b->frames_out, 0);
        b->next_free = p->free_list;
        p->free_list = b;
    }
    return p;
}

void pf_batch_pool_destroy(pf_batch_pool **pool) {
    pf_batch_pool *p = *pool;
    if (!p) return;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->returned);
    free(p->bufs);
    free(p->pixels);
    free(p);
    *pool = NULL;
}

pf_batch_buf *pf_batch_pool_take(pf_batch_pool *p, double timeout_s) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long long ns = until.tv_nsec + (long long)(timeout_s * 1e9);
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&p->lock);
    while (!p->free_list)
        if (pthread_cond_timedwait(&p->returned, &p->lock, &until) == ETIMEDOUT) break;
    pf_batch_buf *b = p->free_list;
    if (b) {
        p->free_list = b->next_free;
        p->in_use++;
    }
    pthread_mutex_unlock(&p->lock);
    return b;
}

void pf_batch_pool_put(pf_batch_buf *b) {
    pf_batch_pool *p = b->pool;
    pthread_mutex_lock(&p->lock);
    b->next_free = p->free_list;
    p->free_list = b;
    p->in_use--;
    pthread_cond_signal(&p->returned);
    pthread_mutex_unlock(&p->lock);
}

void pf_batch_pool_hand_over(pf_batch_buf *b, int frames) {
    if (frames <= 0) {
        pf_batch_pool_put(b);
        return;
    }
    atomic_store(&b->frames_out, frames);
}

void pf_batch_pool_frame_done(void *data, void *hint) {
    (void)data;
    pf_batch_buf *b = hint;
    if (atomic_fetch_sub(&b->frames_out, 1) == 1) pf_batch_pool_put(b);
}

int pf_batch_pool_in_use(pf_batch_pool *p) {
    pthread_mutex_lock(&p->lock);
    int n = p->in_use;
    pthread_mutex_unlock(&p->lock);
    return n;
}
