/*  pair_cache — decoded (GT, LQ) pairs kept in memory, least recently used dropped first,
    bounded by a number of bytes of pixels. Shared by the image datasets (one entry per image)
    and the video datasets (one entry per frame of a clip): common/dataset.h.

    A caller pins an entry while it reads the pixels; decoding happens outside the lock with
    the entry marked as loading, so a second thread asking for the same entry waits for the
    first instead of decoding it again; only unpinned entries are evicted, so the bytes held
    exceed the limit only by the entries in use at that moment (an entry larger than the limit
    is decoded, used by its caller, and dropped when released). If decoding fails, the entry
    is empty again and the next caller tries (and fails) on its own, so every caller gets its
    own error message.

    An entry moves EMPTY -> LOADING (one thread decodes it, without the lock) -> READY (in the
    LRU list) -> EMPTY (evicted, only when no caller has it pinned).
*/
#ifndef PF_PAIR_CACHE_H
#define PF_PAIR_CACHE_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/image.h"

/* Entry states. */
enum { PF_ENTRY_EMPTY = 0, PF_ENTRY_LOADING = 1, PF_ENTRY_READY = 2 };

typedef struct {
    int state;                  /* PF_ENTRY_EMPTY, _LOADING (a thread is decoding it), _READY */
    int pins;                   /* callers reading gt/lq now; a pinned entry is never evicted */
    int lru_prev, lru_next;     /* READY entries, most recently used first; -1 at the ends */
    pf_image gt, lq;            /* decoded RGB8 pixels when READY (gt may be empty: LQ only) */
} pf_cache_entry;

/* Cache counters. */
typedef struct {
    uint64_t hits;              /* requests that found the pair decoded (or being decoded by
                                   another thread, and waited for it) */
    uint64_t misses;            /* requests that decoded it */
    uint64_t evictions;         /* pairs dropped to stay under the limit */
    size_t bytes, limit;        /* bytes of pixels held now; the limit (SIZE_MAX: none) */
} pf_cache_stats;

typedef struct {
    pf_cache_entry *entries;
    int n;
    pthread_mutex_t lock;       /* guards entries[], lru_*, stats */
    pthread_cond_t loaded;      /* broadcast when an entry leaves PF_ENTRY_LOADING */
    int lru_head, lru_tail;     /* most / least recently used READY entry; -1 when none */
    pf_cache_stats stats;
} pf_pair_cache;

/* Decode entry i's pair into *gt and *lq (called without the lock; both zeroed before).
   Returns 0, or -1 with err (and nothing allocated). */
typedef int (pf_cache_load_fn)(void *ctx, int i, pf_image *gt, pf_image *lq, char *err,
                               size_t errlen);

/* An empty cache of n entries bounded by `limit` bytes (SIZE_MAX: none). Returns 0, or -1
   (out of memory). */
int pf_pair_cache_init(pf_pair_cache *c, int n, size_t limit);

/* Free every pair and the entries. */
void pf_pair_cache_free(pf_pair_cache *c);

/* Pin entry i's pair, decoding it with load(ctx, i, ...) first when no thread has.
   Returns 0 (c->entries[i].gt/lq valid until pf_pair_cache_release), or -1 with err from
   load. Thread-safe. */
int pf_pair_cache_acquire(pf_pair_cache *c, int i, pf_cache_load_fn *load, void *ctx,
                          char *err, size_t errlen);

/* Unpin entry i; it may be evicted now. Thread-safe. */
void pf_pair_cache_release(pf_pair_cache *c, int i);

/* Bound the cache to `bytes` (0 keeps nothing), evicting at once if over. Thread-safe. */
void pf_pair_cache_set_limit(pf_pair_cache *c, size_t bytes);

/* A snapshot of the counters. Thread-safe. */
void pf_pair_cache_stats(pf_pair_cache *c, pf_cache_stats *out);

/* The state of entry i, for tests. Thread-safe. */
int pf_pair_cache_state(pf_pair_cache *c, int i);
#endif
