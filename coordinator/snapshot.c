/*  snapshot — the coordinator's memory of the job's events for late-joining monitors
    (snapshot.h). Three stores, one arrival counter: replay merges them by arrival order. */
#include "coordinator/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t order;
    pf_msg_event *ev;                   /* malloc'd */
} kept;

typedef struct {                        /* a train event, compact */
    uint64_t order, seq;
    char source[PF_MAX_NAME];
    int64_t iter, total_iters, epoch, count;
    double loss, lr, time, data_time;
    uint32_t gan_terms;                 /* a GAN job's terms (pf_msg_event.gan_terms, gan) */
    double gan[PF_GAN_N_TERMS];
} train_entry;

struct pf_snapshot {
    uint64_t next_order;
    kept latest[PF_SNAPSHOT_MAX_LATEST];
    int n_latest;
    train_entry train[PF_MAX_SNAPSHOT_TRAIN]; /* ring */
    uint32_t n_train, train_head;       /* entries held; index of the oldest */
    kept eval[PF_SNAPSHOT_MAX_EVAL];    /* ring */
    uint32_t n_eval, eval_head;
};

pf_snapshot *pf_snapshot_new(void) {
    return calloc(1, sizeof(pf_snapshot));
}

void pf_snapshot_free(pf_snapshot *s) {
    if (!s) return;
    for (int i = 0; i < s->n_latest; i++) free(s->latest[i].ev);
    for (uint32_t i = 0; i < s->n_eval; i++) free(s->eval[(s->eval_head + i) % PF_SNAPSHOT_MAX_EVAL].ev);
    free(s);
}

static pf_msg_event *copy_event(const pf_msg_event *ev) {
    pf_msg_event *c = malloc(sizeof *c);
    if (c) *c = *ev;
    return c;
}

void pf_snapshot_add(pf_snapshot *s, const pf_msg_event *ev) {
    if (!s) return;
    uint64_t order = ++s->next_order;
    int i = 0;
    while (i < s->n_latest && (strcmp(s->latest[i].ev->source, ev->source) != 0 ||
                               strcmp(s->latest[i].ev->kind, ev->kind) != 0))
        i++;
    if (i < s->n_latest) {
        *s->latest[i].ev = *ev;
        s->latest[i].order = order;
    } else if (s->n_latest < PF_SNAPSHOT_MAX_LATEST) {
        pf_msg_event *c = copy_event(ev);
        if (c) s->latest[s->n_latest++] = (kept){ order, c };
    }
    if (strcmp(ev->kind, "train") == 0) {
        uint32_t at = (s->train_head + s->n_train) % PF_MAX_SNAPSHOT_TRAIN;
        if (s->n_train == PF_MAX_SNAPSHOT_TRAIN) s->train_head = (s->train_head + 1) % PF_MAX_SNAPSHOT_TRAIN;
        else s->n_train++;
        train_entry *t = &s->train[at];
        t->order = order;
        t->seq = ev->seq;
        snprintf(t->source, sizeof t->source, "%s", ev->source);
        t->iter = ev->iter;
        t->total_iters = ev->total_iters;
        t->epoch = ev->epoch;
        t->count = ev->count;
        t->loss = ev->loss;
        t->lr = ev->lr;
        t->time = ev->time;
        t->data_time = ev->data_time;
        t->gan_terms = ev->gan_terms;
        memcpy(t->gan, ev->gan, sizeof t->gan);
    } else if (strcmp(ev->kind, "eval") == 0) {
        pf_msg_event *c = copy_event(ev);
        if (!c) return;
        uint32_t at = (s->eval_head + s->n_eval) % PF_SNAPSHOT_MAX_EVAL;
        if (s->n_eval == PF_SNAPSHOT_MAX_EVAL) {
            free(s->eval[at].ev);
            s->eval_head = (s->eval_head + 1) % PF_SNAPSHOT_MAX_EVAL;
        } else {
            s->n_eval++;
        }
        s->eval[at] = (kept){ order, c };
    }
}

typedef struct {
    uint64_t order;
    const pf_msg_event *ev;             /* NULL: a train entry */
    const train_entry *t;
} item;

static int by_order(const void *a, const void *b) {
    uint64_t x = ((const item *)a)->order, y = ((const item *)b)->order;
    return x < y ? -1 : x > y;
}

uint32_t pf_snapshot_replay(const pf_snapshot *s, uint32_t max_train,
                            void (*fn)(const pf_msg_event *ev, void *ctx), void *ctx) {
    if (!s) return 0;
    if (max_train > s->n_train) max_train = s->n_train;
    size_t cap = (size_t)s->n_latest + max_train + s->n_eval;
    item *items = malloc(sizeof *items * (cap ? cap : 1));
    pf_msg_event *tmp = calloc(1, sizeof *tmp);
    if (!items || !tmp) {
        free(items);
        free(tmp);
        return 0;
    }
    size_t n = 0;
    for (int i = 0; i < s->n_latest; i++)
        items[n++] = (item){ s->latest[i].order, s->latest[i].ev, NULL };
    for (uint32_t i = s->n_train - max_train; i < s->n_train; i++) {
        const train_entry *t = &s->train[(s->train_head + i) % PF_MAX_SNAPSHOT_TRAIN];
        items[n++] = (item){ t->order, NULL, t };
    }
    for (uint32_t i = 0; i < s->n_eval; i++) {
        const kept *k = &s->eval[(s->eval_head + i) % PF_SNAPSHOT_MAX_EVAL];
        items[n++] = (item){ k->order, k->ev, NULL };
    }
    qsort(items, n, sizeof *items, by_order);
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && items[i].order == items[i - 1].order) continue;  /* in two stores */
        const pf_msg_event *ev = items[i].ev;
        if (!ev) {
            const train_entry *t = items[i].t;
            memset(tmp, 0, sizeof *tmp);
            snprintf(tmp->kind, sizeof tmp->kind, "train");
            snprintf(tmp->source, sizeof tmp->source, "%s", t->source);
            tmp->seq = t->seq;
            tmp->iter = t->iter;
            tmp->total_iters = t->total_iters;
            tmp->epoch = t->epoch;
            tmp->count = t->count;
            tmp->loss = t->loss;
            tmp->lr = t->lr;
            tmp->time = t->time;
            tmp->data_time = t->data_time;
            tmp->gan_terms = t->gan_terms;
            memcpy(tmp->gan, t->gan, sizeof tmp->gan);
            ev = tmp;
        }
        fn(ev, ctx);
        count++;
    }
    free(items);
    free(tmp);
    return count;
}
