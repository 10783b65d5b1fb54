/*  proto — every message PixFlow peers exchange: schemas, encode, decode, validate.

    A message is a ZeroMQ multipart message. Its header frame is a msgpack map with at least
    `type` (string, e.g. "ticket") and `v` (schema version, PF_PROTO_VERSION); the other keys
    are the fields of that type's struct below. Bulk data (pixels, checkpoint bytes) travels in
    the frames after the header, described by header fields, never inside msgpack.

    Decoders trust nothing: peers are on a network. A header that is not a msgpack map, has an
    unknown or mismatched `type`, another version, a missing required field, a field of the wrong
    msgpack type, a string or array longer than its bound, or trailing bytes is rejected with an
    error message, and the rejection is counted (pf_proto_rejects). Unknown extra keys are
    rejected too, so two ends that disagree about a schema fail loudly.

    The wire format of each type is documented in docs/protocol.md.
*/
#ifndef PF_PROTO_H
#define PF_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PF_PROTO_VERSION 4               /* 2: batch.skipped, loader/skip event fields;
                                           3: peer/worker event fields, snapshot, visual;
                                           4: eval event psnr_inf and friends */
#define PF_MAX_BATCH 1024               /* samples in one ticket/batch */
#define PF_MAX_ENDPOINT 256             /* "tcp://host:port" and friends */
#define PF_MAX_NAME 64
#define PF_MAX_TEXT 4096                /* free text in events, errors */
#define PF_MAX_CONFIG (1 << 20)         /* YAML text in WELCOME */
#define PF_MAX_FRAMES 8
#define PF_MAX_KEY 128                  /* key/value store key */
#define PF_MAX_KV_VALUE (64 << 10)      /* key/value store value, bytes (a frame of its own) */
#define PF_GAN_N_TERMS 8                /* pf_msg_event.gan: the logged terms of a GAN step */
#define PF_MAX_SNAPSHOT_TRAIN 4096      /* train events a monitor may ask to be replayed */
#define PF_MAX_VISUAL 64                /* samples in one visual message */
#define PF_MAX_VISUAL_FRAME (1 << 20)   /* bytes in one frame of a visual message (the events
                                           proxy disconnects a publisher sending more) */

typedef enum {
    PF_MSG_INVALID = 0,
    PF_MSG_HELLO,       /* peer -> coordinator (ctrl): join the job */
    PF_MSG_WELCOME,     /* coordinator -> peer: rank, config, event endpoints */
    PF_MSG_START,       /* coordinator -> worker: every role the worker needs is there */
    PF_MSG_HEARTBEAT,   /* both ways on ctrl */
    PF_MSG_CREDIT,      /* worker -> coordinator: n more prefetch slots are free */
    PF_MSG_TICKET,      /* coordinator -> loader: build this batch, send it to that worker */
    PF_MSG_BATCH,       /* loader -> worker (data): header + frames gt, lq [gt_plain] (NHWC) */
    PF_MSG_ACK,         /* worker -> coordinator: ticket consumed */
    PF_MSG_EVENT,       /* any publisher -> events (PUB/SUB) */
    PF_MSG_CKPT_SAVE,   /* worker rank 0 -> checkpoint hook: frames weights, optim */
    PF_MSG_CKPT_ACK,    /* checkpoint hook -> worker: the files are on disk (or why not) */
    PF_MSG_STOP,        /* coordinator -> peer: finish, interrupt (checkpoint first) or abort */
    PF_MSG_DONE,        /* worker -> coordinator: training ended, with status */
    PF_MSG_KV_SET,      /* peer -> coordinator: store frame 1 under key (collective bootstrap) */
    PF_MSG_KV_GET,      /* peer -> coordinator: ask for key */
    PF_MSG_KV_VALUE,    /* coordinator -> peer: key found or not; frame 1 = value when found */
    PF_MSG_SNAPSHOT,    /* monitor -> coordinator: replay the job's state (events), then END */
    PF_MSG_SNAPSHOT_END,/* coordinator -> monitor: the replay is complete; job facts */
    PF_MSG_VISUAL,      /* worker / eval hook -> events (topic "visual"): frames lq, output, gt
                           (uint8 NHWC RGB) of a few samples, for the visual hook and
                           TensorBoard images */
    PF_MSG_READY,       /* hook -> coordinator (ctrl): its events subscription delivers (a probe
                           it published came back through the proxy); also the probe itself on
                           events, topic "ready/<peer_id>" */
    PF_MSG_COUNT
} pf_msg_type;

typedef enum {
    PF_ROLE_NONE = 0, PF_ROLE_LOADER, PF_ROLE_WORKER, PF_ROLE_CHECKPOINT, PF_ROLE_EVAL,
    PF_ROLE_LOG, PF_ROLE_MONITOR, PF_ROLE_VISUAL, PF_ROLE_COUNT
} pf_role;

typedef struct {
    int role;                           /* pf_role */
    char name[PF_MAX_NAME];             /* "loader", "worker", ... for messages */
    int64_t pid;
    char host[PF_MAX_NAME];
    char endpoint[PF_MAX_ENDPOINT];     /* worker: its data (PULL) endpoint; checkpoint hook:
                                           its ROUTER endpoint; others "" */
} pf_msg_hello;

typedef struct {
    uint32_t peer_id;                   /* coordinator's id for this peer (names it in logs) */
    int32_t rank;                       /* worker rank, else -1 */
    int32_t world_size;                 /* number of workers */
    int32_t heartbeat_ms;               /* send a heartbeat at least this often */
    char events_pub[PF_MAX_ENDPOINT];   /* connect a PUB here to publish events */
    char events_sub[PF_MAX_ENDPOINT];   /* connect a SUB here to receive events */
    char *config;                       /* resolved YAML text (malloc'd by decode) */
    uint32_t config_len;
} pf_msg_welcome;

typedef struct {
    char ckpt_endpoint[PF_MAX_ENDPOINT];/* the checkpoint hook's ROUTER endpoint */
    int64_t total_iters;                /* iterations of the whole run (epochs resolved) */
    int64_t iters_per_epoch;            /* sampler's iterations per epoch */
} pf_msg_start;

typedef struct {
    uint32_t peer_id;
} pf_msg_heartbeat;

typedef struct {
    int32_t rank;
    uint32_t n;                         /* new free slots, 1..PF_MAX_BATCH */
    int64_t next_iter;                  /* first iteration the worker still needs (set once at
                                           start: resume point; later equal to its progress) */
} pf_msg_credit;

typedef struct {
    uint64_t ticket_id;                 /* unique in the job; = global iteration * world + rank */
    uint32_t epoch;
    int64_t iter;                       /* global iteration this batch is for (0-based) */
    int32_t rank;
    uint32_t n;                         /* number of samples */
    uint32_t indices[PF_MAX_BATCH];     /* dataset indices (after RepeatDataset) */
    char endpoint[PF_MAX_ENDPOINT];     /* the worker's data endpoint */
} pf_msg_ticket;

typedef struct {
    uint64_t ticket_id;
    uint32_t epoch;
    int64_t iter;
    int32_t rank;
    uint32_t n;                         /* samples in the frames, 0..PF_MAX_BATCH (fewer than
                                           the ticket's when some were skipped) */
    uint32_t indices[PF_MAX_BATCH];     /* dataset indices of those samples, in frame order */
    uint32_t gt_h, gt_w, lq_h, lq_w;    /* patch sizes; frames are n*h*w*3 bytes each */
    uint32_t loader_id;                 /* peer_id of the loader that built it */
    uint32_t skipped[PF_MAX_BATCH];     /* data.on_bad_sample skip: ticket samples left out
                                           (unreadable file); n + n_skipped = the ticket's n */
    uint32_t n_skipped;                 /* items in skipped (not a wire field: the array's
                                           length) */
    uint32_t gt_plain;                  /* 1: a third bulk frame follows, the GT unsharpened
                                           (data.train.gt_plain; as gt, n*gt_h*gt_w*3 bytes
                                           a frame); 0: not on the wire (absent), two frames */
    uint32_t gt_frames;                 /* GT frames per sample when they differ from the LQ's:
                                           1 for a sliding-window set (data.train.type
                                           REDSDataset: num_frame LQ frames, GT the center);
                                           0: as many as the LQ, not on the wire (absent) */
} pf_msg_batch;

/* The bulk frames of a batch message (parts[0] being the header), against the header b:
   part 1 gt, part 2 lq and, when b->gt_plain, part 3 gt_plain, each of b->n x
   `frames_per_sample` (a video set's num_frame, else 1) x h x w x 3 bytes (gt_plain as gt;
   gt and gt_plain hold b->gt_frames frames a sample instead when it is not 0).
   n_parts counts the header; sizes[i] is part i's size. Returns 0, or -1 with err saying which
   frame is wrong and what was expected ("batch: gt_plain frame is 1000 bytes, expected 27648
   (n 1 x 1 frames x 96 x 96 x 3)"). */
int pf_batch_check_frames(const pf_msg_batch *b, uint32_t frames_per_sample, int n_parts,
                          const size_t *sizes, char *err, size_t errlen);

typedef struct {
    uint64_t ticket_id;
    int32_t rank;
} pf_msg_ack;

/* Events: kind selects which optional fields mean something. */
typedef struct {
    char kind[PF_MAX_NAME];             /* "train" | "checkpoint" | "eval" | "status" | "done"
                                           | "error" | "loader" | "skip" */
    char source[PF_MAX_NAME];           /* publisher name, e.g. "worker0", "eval" */
    uint64_t seq;                       /* per-publisher sequence number from 1 */
    int64_t iter, total_iters;
    int64_t epoch;
    double loss, lr, time, data_time;   /* train: loss, learning rate, s/iter, s waiting data */
    double psnr, ssim, best_psnr;       /* eval: dB, [0,1] */
    double psnr_bicubic, ssim_bicubic;  /* eval: the same metrics of bicubic upscaling */
    int64_t best_iter;
    int64_t count;                      /* eval: items evaluated; eval_part: items in the
                                           sums psnr..ssim_bicubic (psnr and psnr_bicubic: less
                                           their *_inf_items);
                                           train: samples skipped in this batch; skip: samples
                                           this loader skipped so far */
    int64_t psnr_inf, psnr_bicubic_inf; /* eval, eval_part: frames (images) whose PSNR is +inf
                                           (equal to the GT), left out of the means; >= 0 */
    int64_t psnr_inf_items, psnr_bicubic_inf_items; /* eval, eval_part: items (images, clips
                                           all of whose frames are identical) with +inf PSNR,
                                           left out of psnr / psnr_bicubic (eval_part: of the
                                           sums); >= 0 */
    char path[PF_MAX_ENDPOINT * 4];     /* checkpoint: file path; skip: the unreadable file */
    char text[PF_MAX_TEXT];             /* status/error/done text; skip: why */
    char host[PF_MAX_NAME];             /* loader, skip: the loader's host */
    double patches_per_s, bytes_per_s;  /* loader: samples and payload bytes (GT + LQ frames)
                                           sent per second over the interval `time` */
    double hit_rate;                    /* loader: decoded-image cache hits / lookups over the
                                           interval, [0, 1] (0 without lookups) */
    int64_t cache_bytes;                /* loader: pixels held in its cache now, bytes */
    int64_t queue_depth;                /* loader: tickets received and not yet served */
    int64_t sample;                     /* skip: the dataset index left out */
    char role[PF_MAX_NAME];             /* peer: "loader", "worker", "checkpoint hook", ... */
    int32_t rank;                       /* peer, worker: worker rank (-1 for other roles) */
    int64_t pid;                        /* peer, worker: process id */
    uint32_t peer_id;                   /* peer: the coordinator's id for it */
    char state[PF_MAX_NAME];            /* peer: "joined" | "dead" | "left" */
    char device[PF_MAX_NAME];           /* worker: "cpu", "cuda:0", ... */
    int64_t mem_bytes;                  /* worker: memory in use (cpu: resident set; cuda: device
                                           memory allocated), bytes */
    uint32_t gan_terms;                 /* train, a GAN job (docs/gan.md): which terms gan[]
                                           carries, bit i for gan[i] (PF_GAN_TERM_*); 0 for
                                           every other event, and then neither this nor gan[]
                                           is on the wire (the bytes of a non-GAN event are
                                           those of before) */
    double gan[PF_GAN_N_TERMS];         /* train: the iteration's terms, means over the worker
                                           group as the loss, on the wire under BasicSR's
                                           log keys (pf_gan_term_name) */
} pf_msg_event;

/* The logged terms of a GAN iteration, BasicSR's loss_dict keys (realesrgan_model.py,
   esrgan_model.py optimize_parameters), in pf_msg_event.gan order. A term is present when
   BasicSR would log it: the generator terms only when the generator step ran (and l_g_percep
   / l_g_style only with their weight > 0), the discriminator ones every iteration. */
enum {
    PF_GAN_TERM_L_G_PIX, PF_GAN_TERM_L_G_PERCEP, PF_GAN_TERM_L_G_STYLE, PF_GAN_TERM_L_G_GAN,
    PF_GAN_TERM_L_D_REAL, PF_GAN_TERM_L_D_FAKE, PF_GAN_TERM_OUT_D_REAL, PF_GAN_TERM_OUT_D_FAKE
};

/* "l_g_pix", ..., "out_d_fake" for i in [0, PF_GAN_N_TERMS), else NULL. */
const char *pf_gan_term_name(int i);

typedef struct {
    int64_t iter;                       /* iterations completed */
    int64_t epoch;
    char weights_name[PF_MAX_NAME];     /* "iter_100.safetensors" */
    char optim_name[PF_MAX_NAME];       /* "iter_100.optim.safetensors" */
    uint64_t weights_size, optim_size;  /* sizes of frames 1 and 2 in bytes */
    uint64_t net_d_size, net_d_optim_size; /* a GAN job's: sizes of frames 3 (net_d's
                                           state_dict, iter_N.net_d.safetensors) and 4 (optim_d,
                                           iter_N.net_d.optim.safetensors); both 0 = no such
                                           frames (left off the wire), else both > 0 */
} pf_msg_ckpt_save;

typedef struct {
    int64_t iter;
    int32_t ok;                         /* 1 = both files fsync'd and renamed into place */
    char path[PF_MAX_ENDPOINT * 4];     /* weights file written */
    char error[PF_MAX_TEXT];
} pf_msg_ckpt_ack;

typedef struct {
    char reason[PF_MAX_NAME];           /* "finish" | "interrupt" | "abort" */
    char text[PF_MAX_TEXT];
} pf_msg_stop;

typedef struct {
    int32_t rank;
    int64_t iter;
    int32_t status;                     /* 0 ok, else failure */
    char text[PF_MAX_TEXT];
} pf_msg_done;

/* The coordinator's key/value store, used to bootstrap collectives (Gloo, NCCL): values are
   opaque bytes in the frame after the header, at most PF_MAX_KV_VALUE. */
typedef struct {
    char key[PF_MAX_KEY];
    uint32_t size;                      /* KV_SET: bytes in frame 1 */
} pf_msg_kv_set;

typedef struct {
    char key[PF_MAX_KEY];
} pf_msg_kv_get;

typedef struct {
    char key[PF_MAX_KEY];
    int32_t found;                      /* 1: frame 1 holds `size` bytes; 0: not (yet) set */
    uint32_t size;
} pf_msg_kv_value;

/* A monitor's request for the job's state. The coordinator answers on ctrl with events (type
   event) it kept: the last event of each (source, kind), the last `max_train` train events and
   the eval history, in the order it saw them, plus a `peer` event (source "coordinator") for
   every peer it knows; then SNAPSHOT_END. */
typedef struct {
    uint32_t max_train;                 /* 0..PF_MAX_SNAPSHOT_TRAIN */
} pf_msg_snapshot;

typedef struct {
    uint32_t events;                    /* events replayed before this message */
    int64_t total_iters, iters_per_epoch;
    int32_t world_size;                 /* workers */
    int32_t batch;                      /* global batch: workers x samples_per_gpu */
    int32_t started;                    /* 1 once START went to the workers */
    char phase[PF_MAX_NAME];            /* "joining" | "running" | "stopping" | "draining" */
    double uptime;                      /* seconds since the coordinator started listening */
    char work_dir[PF_MAX_ENDPOINT * 4];
    char model[PF_MAX_NAME];            /* model.type */
} pf_msg_snapshot_end;

/* Pictures for the visual hook and TensorBoard: frames lq (n x lq_h x lq_w x 3), output and gt
   (n x gt_h x gt_w x 3 each), uint8 NHWC RGB, each at most PF_MAX_VISUAL_FRAME bytes. Not an
   event: it has no sequence number. */
typedef struct {
    char source[PF_MAX_NAME];           /* "worker0", "eval" */
    char tag[PF_MAX_NAME];              /* "train" (the worker's current batch) | "eval" */
    char name[PF_MAX_NAME];             /* eval: the image's file name; train: "" */
    int64_t iter;                       /* iterations completed when the pictures were taken */
    uint32_t n;                         /* samples, 1..PF_MAX_VISUAL */
    uint32_t gt_h, gt_w, lq_h, lq_w;
} pf_msg_visual;

typedef struct {
    uint32_t peer_id;
} pf_msg_ready;

typedef struct {
    int type;                           /* pf_msg_type */
    union {
        pf_msg_hello hello;
        pf_msg_welcome welcome;
        pf_msg_start start;
        pf_msg_heartbeat heartbeat;
        pf_msg_credit credit;
        pf_msg_ticket ticket;
        pf_msg_batch batch;
        pf_msg_ack ack;
        pf_msg_event event;
        pf_msg_ckpt_save ckpt_save;
        pf_msg_ckpt_ack ckpt_ack;
        pf_msg_stop stop;
        pf_msg_done done;
        pf_msg_kv_set kv_set;
        pf_msg_kv_get kv_get;
        pf_msg_kv_value kv_value;
        pf_msg_snapshot snapshot;
        pf_msg_snapshot_end snapshot_end;
        pf_msg_visual visual;
        pf_msg_ready ready;
    } u;
} pf_msg;

/* The wire name of a type ("ticket") or "invalid". */
const char *pf_msg_type_name(int type);

/* Encode `m` as a msgpack map into a malloc'd buffer (*out, *outlen). Returns 0, or -1 when
   the struct itself is out of bounds (e.g. n > PF_MAX_BATCH), which is a programming error. */
int pf_msg_encode(const pf_msg *m, void **out, size_t *outlen);

/* Decode and validate a header frame. `expect` = a pf_msg_type to accept only that type, or 0
   to accept any. Returns 0 and fills `m`, or -1 with `err` set and the reject counter of the
   claimed type (or of PF_MSG_INVALID) incremented. On success free with pf_msg_clear. */
int pf_msg_decode(const void *data, size_t len, int expect, pf_msg *m, char *err, size_t errlen);

/* Free what decode allocated (welcome.config) and zero the struct. */
void pf_msg_clear(pf_msg *m);

/* Rejections counted since start for a type (PF_MSG_INVALID: unparseable / unknown type). */
uint64_t pf_proto_rejects(int type);

/* --- ZeroMQ framing ------------------------------------------------------------------ */

typedef struct {
    const void *data;
    size_t size;
} pf_frame;

/* A received multipart message: up to PF_MAX_FRAMES parts (more is an error). */
typedef struct {
    int n;
    void *part[PF_MAX_FRAMES];          /* zmq_msg_t*, owned */
} pf_parts;

/* Send [identity] + header(m) + frames. `identity` may be NULL (non-ROUTER sockets).
   Returns 0 or -1 (errno from zmq). */
int pf_send(void *sock, const pf_frame *identity, const pf_msg *m,
            const pf_frame *frames, int nframes);

/* Called by ZeroMQ when it no longer needs a frame handed over by pf_send_zc: `data` is the
   frame's bytes, `hint` the caller's. It may run on a libzmq I/O thread. */
typedef void pf_frame_free_fn(void *data, void *hint);

/* pf_send without copying the bulk frames: ZeroMQ keeps frames[i].data until it calls
   free_fn(frames[i].data, hint), exactly once per frame whatever happens (also when the send
   fails or is refused, possibly before pf_send_zc returns, possibly on an I/O thread). The
   identity and header are copied. Returns 0 or -1 (errno from zmq, EINVAL for bad
   arguments). */
int pf_send_zc(void *sock, const pf_frame *identity, const pf_msg *m, const pf_frame *frames,
               int nframes, pf_frame_free_fn *free_fn, void *hint);

/* Receive one multipart message; blocks unless `flags` has ZMQ_DONTWAIT. Returns 0, or -1 with
   errno (EAGAIN, EINTR) or with err set when there are too many parts (they are drained). */
int pf_parts_recv(void *sock, int flags, pf_parts *p, char *err, size_t errlen);
const void *pf_parts_data(const pf_parts *p, int i);
size_t pf_parts_size(const pf_parts *p, int i);
void pf_parts_close(pf_parts *p);

#endif
