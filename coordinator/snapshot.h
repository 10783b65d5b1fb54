/*  snapshot — what the coordinator remembers of the job's events, so a monitor that joins late
    sees the state first and then the updates (`pixflow monitor`, docs/architecture.md).

    Kept, each with the order in which the coordinator saw it:
      - the last event of every (source, kind) pair (at most PF_SNAPSHOT_MAX_LATEST pairs; a
        pair beyond that is not kept), so every publisher's latest sequence number is in the
        replay and a monitor can tell gaps from the first live event on;
      - the last PF_MAX_SNAPSHOT_TRAIN `train` events (iteration, loss, lr, s/iter, data time,
        a GAN job's terms: the curves);
      - the last PF_SNAPSHOT_MAX_EVAL `eval` events (the eval history).
    Memory: at most about 1.5 MiB for the latest table, 0.9 MiB for the train history and
    1.4 MiB for the eval history (events are about 5.5 KiB; train entries are kept compact).
*/
#ifndef PF_SNAPSHOT_H
#define PF_SNAPSHOT_H
#include <stdint.h>

#include "proto/proto.h"

#define PF_SNAPSHOT_MAX_LATEST 256
#define PF_SNAPSHOT_MAX_EVAL 256

typedef struct pf_snapshot pf_snapshot;

/* A new, empty store, or NULL when out of memory. */
pf_snapshot *pf_snapshot_new(void);
void pf_snapshot_free(pf_snapshot *s);

/* Remember `ev` (copied). Out of memory drops it silently: a monitor then sees a gap. */
void pf_snapshot_add(pf_snapshot *s, const pf_msg_event *ev);

/* Call fn(ev, ctx) for every kept event in the order they were added, with at most the last
   `max_train` train events (0..PF_MAX_SNAPSHOT_TRAIN), each event once. Returns the count. */
uint32_t pf_snapshot_replay(const pf_snapshot *s, uint32_t max_train,
                            void (*fn)(const pf_msg_event *ev, void *ctx), void *ctx);
#endif
