/*  pair_cache — see pair_cache.h. Callers of the static functions below hold c->lock. */
#include "common/pair_cache.h"

#include <stdlib.h>
#include <string.h>

int pf_pair_cache_init(pf_pair_cache *c, int n, size_t limit) {
    memset(c, 0, sizeof *c);
    c->entries = calloc(n > 0 ? (size_t)n : 1, sizeof *c->entries);
    if (!c->entries) return -1;
    c->n = n;
    for (int i = 0; i < n; i++) c->entries[i].lru_prev = c->entries[i].lru_next = -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->loaded, NULL);
    c->lru_head = c->lru_tail = -1;
    c->stats.limit = limit;
    return 0;
}

void pf_pair_cache_free(pf_pair_cache *c) {
    if (!c->entries) return;
    for (int i = 0; i < c->n; i++) {
        pf_image_free(&c->entries[i].gt);
        pf_image_free(&c->entries[i].lq);
    }
    free(c->entries);
    c->entries = NULL;
    c->n = 0;
    pthread_cond_destroy(&c->loaded);
    pthread_mutex_destroy(&c->lock);
}

static size_t entry_bytes(const pf_cache_entry *e) {
    return ((size_t)e->gt.w * e->gt.h + (size_t)e->lq.w * e->lq.h) * 3;
}

static void lru_unlink(pf_pair_cache *c, pf_cache_entry *e) {
    if (e->lru_prev >= 0) c->entries[e->lru_prev].lru_next = e->lru_next;
    else c->lru_head = e->lru_next;
    if (e->lru_next >= 0) c->entries[e->lru_next].lru_prev = e->lru_prev;
    else c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = -1;
}

static void lru_push_front(pf_pair_cache *c, int i) {
    pf_cache_entry *e = &c->entries[i];
    e->lru_prev = -1;
    e->lru_next = c->lru_head;
    if (c->lru_head >= 0) c->entries[c->lru_head].lru_prev = i;
    c->lru_head = i;
    if (c->lru_tail < 0) c->lru_tail = i;
}

/* Drop unpinned entries, least recently used first, until the bytes held fit the limit or
   only pinned entries are left. */
static void evict_over_limit(pf_pair_cache *c) {
    for (int i = c->lru_tail; i >= 0 && c->stats.bytes > c->stats.limit;) {
        pf_cache_entry *e = &c->entries[i];
        int prev = e->lru_prev;
        if (e->pins == 0) {
            lru_unlink(c, e);
            c->stats.bytes -= entry_bytes(e);
            c->stats.evictions++;
            pf_image_free(&e->gt);
            pf_image_free(&e->lq);
            e->state = PF_ENTRY_EMPTY;
        }
        i = prev;
    }
}

int pf_pair_cache_acquire(pf_pair_cache *c, int i, pf_cache_load_fn *load, void *ctx,
                          char *err, size_t errlen) {
    pf_cache_entry *e = &c->entries[i];
    pthread_mutex_lock(&c->lock);
    while (e->state == PF_ENTRY_LOADING) pthread_cond_wait(&c->loaded, &c->lock);
    if (e->state == PF_ENTRY_READY) {
        e->pins++;
        c->stats.hits++;
        lru_unlink(c, e);
        lru_push_front(c, i);
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    e->state = PF_ENTRY_LOADING;
    c->stats.misses++;
    pthread_mutex_unlock(&c->lock);

    pf_image g = { 0 }, l = { 0 };
    int rc = load(ctx, i, &g, &l, err, errlen);

    pthread_mutex_lock(&c->lock);
    if (rc == 0) {
        e->gt = g;
        e->lq = l;
        e->state = PF_ENTRY_READY;
        e->pins = 1;
        lru_push_front(c, i);
        c->stats.bytes += entry_bytes(e);
        evict_over_limit(c);
    } else {
        e->state = PF_ENTRY_EMPTY;
    }
    pthread_cond_broadcast(&c->loaded);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void pf_pair_cache_release(pf_pair_cache *c, int i) {
    pthread_mutex_lock(&c->lock);
    c->entries[i].pins--;
    evict_over_limit(c);
    pthread_mutex_unlock(&c->lock);
}

void pf_pair_cache_set_limit(pf_pair_cache *c, size_t bytes) {
    pthread_mutex_lock(&c->lock);
    c->stats.limit = bytes;
    evict_over_limit(c);
    pthread_mutex_unlock(&c->lock);
}

void pf_pair_cache_stats(pf_pair_cache *c, pf_cache_stats *out) {
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}

int pf_pair_cache_state(pf_pair_cache *c, int i) {
    pthread_mutex_lock(&c->lock);
    int s = c->entries[i].state;
    pthread_mutex_unlock(&c->lock);
    return s;
}
