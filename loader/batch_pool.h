/*  batch_pool — the loader's batch buffers, handed to ZeroMQ without a copy.

    A buffer holds one batch's pixels: the GT frame (n x gt_patch x gt_patch x 3 bytes, uint8
    NHWC RGB), the LQ frame (n x lq_patch x lq_patch x 3) and, with data.train.gt_plain, the
    unsharpened GT frame (as GT) in one allocation. The loader takes
    a free buffer, its threads write the samples straight into it, and it sends both frames
    with pf_send_zc(..., pf_batch_pool_frame_done, buf): ZeroMQ calls that from one of its I/O
    threads once it has written a frame out (or dropped it), and the buffer goes back to the
    pool when all its frames are done. Taking a buffer waits while every one is in flight, so a
    loader never holds more than `count` batches of pixels, however slow the network.
*/
#ifndef PF_BATCH_POOL_H
#define PF_BATCH_POOL_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pf_batch_pool pf_batch_pool;

typedef struct pf_batch_buf {
    uint8_t *gt;                    /* gt_bytes: the GT frame */
    uint8_t *lq;                    /* lq_bytes: the LQ frame, right after gt */
    uint8_t *gt_plain;              /* gt_plain_bytes after lq: the unsharpened GT frame
                                       (data.train.gt_plain); NULL when gt_plain_bytes is 0 */
    atomic_int frames_out;          /* frames ZeroMQ still holds */
    pf_batch_pool *pool;
    struct pf_batch_buf *next_free; /* free list (under the pool's lock) */
} pf_batch_buf;

/* `count` buffers of gt_bytes + lq_bytes + gt_plain_bytes each (gt_plain_bytes 0: no
   gt_plain frame), allocated now. Returns NULL when out of memory. */
pf_batch_pool *pf_batch_pool_new(int count, size_t gt_bytes, size_t lq_bytes,
                                 size_t gt_plain_bytes);

/* Free the pool. Every buffer must be back (after zmq_ctx_term, ZeroMQ holds none). */
void pf_batch_pool_destroy(pf_batch_pool **pool);

/* A free buffer, waiting up to timeout_s for one to come back; NULL on timeout. */
pf_batch_buf *pf_batch_pool_take(pf_batch_pool *pool, double timeout_s);

/* Give back a buffer that was taken and not handed to ZeroMQ. */
void pf_batch_pool_put(pf_batch_buf *buf);

/* Before pf_send_zc: the buffer comes back after `frames` calls of pf_batch_pool_frame_done.
   With 0 frames (nothing to send) it comes back at once. */
void pf_batch_pool_hand_over(pf_batch_buf *buf, int frames);

/* pf_frame_free_fn for pf_send_zc with hint = the buffer. Thread-safe. */
void pf_batch_pool_frame_done(void *data, void *hint);

/* Buffers taken and not back yet. */
int pf_batch_pool_in_use(pf_batch_pool *pool);
#endif
