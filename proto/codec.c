/*  proto/codec — msgpack encode/decode/validate of every message header (proto.h).

    How the pieces fit: each message type has one schema table (SCHEMA_*) listing its fields:
    wire name, kind (which C type and which msgpack type), offset in the struct, bound (string
    buffer size, array capacity) and whether the field is required. pf_msg_encode and
    pf_msg_decode are two loops over that table, so a field is added in one place.

    Decoding never trusts the sender:
      1. scan_msgpack walks the raw bytes first and checks that every container count and
         string length fits in what is left of the buffer. msgpack-c's unpacker allocates a
         container's element array from the announced count before it has seen the elements
         (a 5-byte map header can ask for 2^32 entries = 128 GiB), so this scan is what keeps
         allocations at most a small multiple of the frame size.
      2. msgpack_unpack_next builds the object tree in its zone (freed on every path).
      3. The map is checked against the schema: `type` known (and equal to `expect`), `v` equal
         to PF_PROTO_VERSION, every key known and seen once, every value of the right msgpack
         type and in range, strings and arrays within bounds, required fields present, and the
         per-type invariants (batch/ticket n == len(indices) <= PF_MAX_BATCH; batch
         1 <= n + len(skipped) <= PF_MAX_BATCH; event: each GAN term present exactly when
         its bit of gan_terms is set, gan_terms in train events only).
    Every rejection increments a per-type counter (pf_proto_rejects).
*/
#include "proto/proto.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(int) == 4, "pf_msg_hello.role is sent as a 32-bit integer");

/* The largest header frame accepted: a WELCOME with a full config plus its small fields. */
#define PF_MAX_HEADER ((size_t)PF_MAX_CONFIG + 65536)

typedef enum {
    K_I32,      /* int32_t (or int): msgpack int */
    K_I64,      /* int64_t: msgpack int */
    K_U32,      /* uint32_t: msgpack non-negative int */
    K_U64,      /* uint64_t: msgpack non-negative int */
    K_F64,      /* double: msgpack float32/float64 */
    K_STR,      /* char[size]: msgpack str of at most size-1 bytes, no NUL */
    K_U32_ARR,  /* uint32_t[bound] with its uint32_t count at count_off, itself a wire field
                   that must equal the array's length: msgpack array */
    K_U32_LIST, /* uint32_t[bound] whose uint32_t count at count_off is not on the wire: it is
                   the array's length */
    K_TEXT      /* char * (malloc'd on decode) with uint32_t length at count_off: msgpack str */
} pf_kind;

typedef struct {
    const char *name;                   /* key on the wire */
    pf_kind kind;
    size_t off;                         /* offset in the type's struct */
    size_t size;                        /* K_STR: buffer size; K_U32_ARR / K_U32_LIST / K_TEXT:
                                           max items / bytes */
    size_t count_off;                   /* K_U32_ARR / K_U32_LIST / K_TEXT: offset of the
                                           uint32_t count */
    int required;                       /* 1 = a header without it is rejected; 0 optional;
                                           OMIT_ZERO: optional, and the encoder leaves it out
                                           when 0 (K_U32 and K_U64 only: a field added
                                           later whose absence keeps the other messages
                                           byte-identical);
                                           PRESENT_BIT: on the wire exactly when bit `lo` of
                                           the uint32_t mask at count_off is set (K_F64 only;
                                           the decoder refuses either without the other) */
    int64_t lo;                         /* integer kinds: smallest accepted value;
                                           PRESENT_BIT: the field's bit in the mask */
    uint64_t hi;                        /* integer kinds: largest accepted value (0 = type max) */
    const char *const *choices;         /* K_STR: accepted values, NULL-terminated, or NULL */
} pf_field;

typedef struct {
    const char *name;                   /* pf_msg_type_name */
    const pf_field *fields;
    int nfields;
} pf_schema;

#define MEMBER_SIZE(T, f) sizeof(((T *)0)->f)
#define INT(T, f, k, req) {#f, k, offsetof(T, f), MEMBER_SIZE(T, f), 0, req, 0, 0, NULL}
#define SINT(T, f, k, req) {#f, k, offsetof(T, f), MEMBER_SIZE(T, f), 0, req, INT64_MIN, 0, NULL}
#define RANGE(T, f, k, req, lo, hi) {#f, k, offsetof(T, f), MEMBER_SIZE(T, f), 0, req, lo, hi, NULL}
#define F64(T, f, req) {#f, K_F64, offsetof(T, f), MEMBER_SIZE(T, f), 0, req, 0, 0, NULL}
#define STR(T, f, req) {#f, K_STR, offsetof(T, f), MEMBER_SIZE(T, f), 0, req, 0, 0, NULL}
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define OMIT_ZERO 2
#define PRESENT_BIT 3
/* The GAN term i of an event: a double of gan[], on the wire when gan_terms has bit i. */
#define GAN_TERM(name, i) {name, K_F64, offsetof(pf_msg_event, gan) + (i) * sizeof(double), \
                           sizeof(double), offsetof(pf_msg_event, gan_terms), PRESENT_BIT, i, 0, \
                           NULL}
static const char *const GAN_TERM_NAMES[PF_GAN_N_TERMS] = {
    "l_g_pix", "l_g_percep", "l_g_style", "l_g_gan",
    "l_d_real", "l_d_fake", "out_d_real", "out_d_fake"};

static const pf_field HELLO[] = {
    RANGE(pf_msg_hello, role, K_I32, 1, PF_ROLE_NONE + 1, PF_ROLE_COUNT - 1),
    STR(pf_msg_hello, name, 1),
    SINT(pf_msg_hello, pid, K_I64, 1),
    STR(pf_msg_hello, host, 1),
    STR(pf_msg_hello, endpoint, 1),
};
static const pf_field WELCOME[] = {
    INT(pf_msg_welcome, peer_id, K_U32, 1),
    RANGE(pf_msg_welcome, rank, K_I32, 1, -1, INT32_MAX),
    RANGE(pf_msg_welcome, world_size, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_welcome, heartbeat_ms, K_I32, 1, 1, INT32_MAX),
    STR(pf_msg_welcome, events_pub, 1),
    STR(pf_msg_welcome, events_sub, 1),
    {"config", K_TEXT, offsetof(pf_msg_welcome, config), PF_MAX_CONFIG,
     offsetof(pf_msg_welcome, config_len), 1, 0, 0, NULL},
};
static const pf_field START[] = {
    STR(pf_msg_start, ckpt_endpoint, 1),
    RANGE(pf_msg_start, total_iters, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_start, iters_per_epoch, K_I64, 1, 1, INT64_MAX),
};
static const pf_field HEARTBEAT[] = {
    INT(pf_msg_heartbeat, peer_id, K_U32, 1),
};
static const pf_field CREDIT[] = {
    RANGE(pf_msg_credit, rank, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_credit, n, K_U32, 1, 1, PF_MAX_BATCH),
    RANGE(pf_msg_credit, next_iter, K_I64, 1, 0, INT64_MAX),
};
static const pf_field TICKET[] = {
    INT(pf_msg_ticket, ticket_id, K_U64, 1),
    INT(pf_msg_ticket, epoch, K_U32, 1),
    RANGE(pf_msg_ticket, iter, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_ticket, rank, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_ticket, n, K_U32, 1, 1, PF_MAX_BATCH),
    {"indices", K_U32_ARR, offsetof(pf_msg_ticket, indices), PF_MAX_BATCH,
     offsetof(pf_msg_ticket, n), 1, 0, 0, NULL},
    STR(pf_msg_ticket, endpoint, 1),
};
static const pf_field BATCH[] = {
    INT(pf_msg_batch, ticket_id, K_U64, 1),
    INT(pf_msg_batch, epoch, K_U32, 1),
    RANGE(pf_msg_batch, iter, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_batch, rank, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_batch, n, K_U32, 1, 0, PF_MAX_BATCH),   /* 0: every sample skipped */
    {"indices", K_U32_ARR, offsetof(pf_msg_batch, indices), PF_MAX_BATCH,
     offsetof(pf_msg_batch, n), 1, 0, 0, NULL},
    RANGE(pf_msg_batch, gt_h, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_batch, gt_w, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_batch, lq_h, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_batch, lq_w, K_U32, 1, 1, 1 << 16),
    INT(pf_msg_batch, loader_id, K_U32, 1),
    {"skipped", K_U32_LIST, offsetof(pf_msg_batch, skipped), PF_MAX_BATCH,
     offsetof(pf_msg_batch, n_skipped), 0, 0, 0, NULL},
    RANGE(pf_msg_batch, gt_plain, K_U32, OMIT_ZERO, 0, 1),
    RANGE(pf_msg_batch, gt_frames, K_U32, OMIT_ZERO, 0, 1000),
};
static const pf_field ACK[] = {
    INT(pf_msg_ack, ticket_id, K_U64, 1),
    RANGE(pf_msg_ack, rank, K_I32, 1, 0, INT32_MAX),
};
static const pf_field EVENT[] = {
    STR(pf_msg_event, kind, 1),
    STR(pf_msg_event, source, 1),
    RANGE(pf_msg_event, seq, K_U64, 1, 1, 0),
    SINT(pf_msg_event, iter, K_I64, 0),
    SINT(pf_msg_event, total_iters, K_I64, 0),
    SINT(pf_msg_event, epoch, K_I64, 0),
    F64(pf_msg_event, loss, 0),
    F64(pf_msg_event, lr, 0),
    F64(pf_msg_event, time, 0),
    F64(pf_msg_event, data_time, 0),
    F64(pf_msg_event, psnr, 0),
    F64(pf_msg_event, ssim, 0),
    F64(pf_msg_event, best_psnr, 0),
    F64(pf_msg_event, psnr_bicubic, 0),
    F64(pf_msg_event, ssim_bicubic, 0),
    SINT(pf_msg_event, best_iter, K_I64, 0),
    SINT(pf_msg_event, count, K_I64, 0),
    RANGE(pf_msg_event, psnr_inf, K_I64, 0, 0, INT64_MAX),
    RANGE(pf_msg_event, psnr_bicubic_inf, K_I64, 0, 0, INT64_MAX),
    RANGE(pf_msg_event, psnr_inf_items, K_I64, 0, 0, INT64_MAX),
    RANGE(pf_msg_event, psnr_bicubic_inf_items, K_I64, 0, 0, INT64_MAX),
    STR(pf_msg_event, path, 0),
    STR(pf_msg_event, text, 0),
    STR(pf_msg_event, host, 0),
    F64(pf_msg_event, patches_per_s, 0),
    F64(pf_msg_event, bytes_per_s, 0),
    F64(pf_msg_event, hit_rate, 0),
    RANGE(pf_msg_event, cache_bytes, K_I64, 0, 0, INT64_MAX),
    RANGE(pf_msg_event, queue_depth, K_I64, 0, 0, INT64_MAX),
    SINT(pf_msg_event, sample, K_I64, 0),
    STR(pf_msg_event, role, 0),
    RANGE(pf_msg_event, rank, K_I32, 0, -1, INT32_MAX),
    SINT(pf_msg_event, pid, K_I64, 0),
    INT(pf_msg_event, peer_id, K_U32, 0),
    STR(pf_msg_event, state, 0),
    STR(pf_msg_event, device, 0),
    RANGE(pf_msg_event, mem_bytes, K_I64, 0, 0, INT64_MAX),
    RANGE(pf_msg_event, gan_terms, K_U32, OMIT_ZERO, 0, (1u << PF_GAN_N_TERMS) - 1),
    GAN_TERM("l_g_pix", PF_GAN_TERM_L_G_PIX),
    GAN_TERM("l_g_percep", PF_GAN_TERM_L_G_PERCEP),
    GAN_TERM("l_g_style", PF_GAN_TERM_L_G_STYLE),
    GAN_TERM("l_g_gan", PF_GAN_TERM_L_G_GAN),
    GAN_TERM("l_d_real", PF_GAN_TERM_L_D_REAL),
    GAN_TERM("l_d_fake", PF_GAN_TERM_L_D_FAKE),
    GAN_TERM("out_d_real", PF_GAN_TERM_OUT_D_REAL),
    GAN_TERM("out_d_fake", PF_GAN_TERM_OUT_D_FAKE),
};
static const pf_field CKPT_SAVE[] = {
    RANGE(pf_msg_ckpt_save, iter, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_ckpt_save, epoch, K_I64, 1, 0, INT64_MAX),
    STR(pf_msg_ckpt_save, weights_name, 1),
    STR(pf_msg_ckpt_save, optim_name, 1),
    INT(pf_msg_ckpt_save, weights_size, K_U64, 1),
    INT(pf_msg_ckpt_save, optim_size, K_U64, 1),
    INT(pf_msg_ckpt_save, net_d_size, K_U64, OMIT_ZERO),
    INT(pf_msg_ckpt_save, net_d_optim_size, K_U64, OMIT_ZERO),
};
static const pf_field CKPT_ACK[] = {
    RANGE(pf_msg_ckpt_ack, iter, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_ckpt_ack, ok, K_I32, 1, 0, 1),
    STR(pf_msg_ckpt_ack, path, 1),
    STR(pf_msg_ckpt_ack, error, 1),
};
static const char *const STOP_REASONS[] = {"finish", "interrupt", "abort", NULL};
static const pf_field STOP[] = {
    {"reason", K_STR, offsetof(pf_msg_stop, reason), MEMBER_SIZE(pf_msg_stop, reason), 0, 1, 0,
     0, STOP_REASONS},
    STR(pf_msg_stop, text, 1),
};
static const pf_field DONE[] = {
    RANGE(pf_msg_done, rank, K_I32, 1, -1, INT32_MAX),  /* -1: not a worker */
    RANGE(pf_msg_done, iter, K_I64, 1, 0, INT64_MAX),
    SINT(pf_msg_done, status, K_I32, 1),
    STR(pf_msg_done, text, 1),
};

static const pf_field KV_SET[] = {
    STR(pf_msg_kv_set, key, 1),
    RANGE(pf_msg_kv_set, size, K_U32, 1, 0, PF_MAX_KV_VALUE),
};
static const pf_field KV_GET[] = {
    STR(pf_msg_kv_get, key, 1),
};
static const pf_field KV_VALUE[] = {
    STR(pf_msg_kv_value, key, 1),
    RANGE(pf_msg_kv_value, found, K_I32, 1, 0, 1),
    RANGE(pf_msg_kv_value, size, K_U32, 1, 0, PF_MAX_KV_VALUE),
};

static const pf_field SNAPSHOT[] = {
    RANGE(pf_msg_snapshot, max_train, K_U32, 1, 0, PF_MAX_SNAPSHOT_TRAIN),
};
static const char *const PHASES[] = {"joining", "running", "stopping", "draining", NULL};
static const pf_field SNAPSHOT_END[] = {
    INT(pf_msg_snapshot_end, events, K_U32, 1),
    RANGE(pf_msg_snapshot_end, total_iters, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_snapshot_end, iters_per_epoch, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_snapshot_end, world_size, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_snapshot_end, batch, K_I32, 1, 0, INT32_MAX),
    RANGE(pf_msg_snapshot_end, started, K_I32, 1, 0, 1),
    {"phase", K_STR, offsetof(pf_msg_snapshot_end, phase),
     MEMBER_SIZE(pf_msg_snapshot_end, phase), 0, 1, 0, 0, PHASES},
    F64(pf_msg_snapshot_end, uptime, 1),
    STR(pf_msg_snapshot_end, work_dir, 1),
    STR(pf_msg_snapshot_end, model, 1),
};
static const char *const VISUAL_TAGS[] = {"train", "eval", NULL};
static const pf_field VISUAL[] = {
    STR(pf_msg_visual, source, 1),
    {"tag", K_STR, offsetof(pf_msg_visual, tag), MEMBER_SIZE(pf_msg_visual, tag), 0, 1, 0, 0,
     VISUAL_TAGS},
    STR(pf_msg_visual, name, 1),
    RANGE(pf_msg_visual, iter, K_I64, 1, 0, INT64_MAX),
    RANGE(pf_msg_visual, n, K_U32, 1, 1, PF_MAX_VISUAL),
    RANGE(pf_msg_visual, gt_h, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_visual, gt_w, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_visual, lq_h, K_U32, 1, 1, 1 << 16),
    RANGE(pf_msg_visual, lq_w, K_U32, 1, 1, 1 << 16),
};

static const pf_field READY[] = {
    INT(pf_msg_ready, peer_id, K_U32, 1),
};

static const pf_schema SCHEMAS[PF_MSG_COUNT] = {
    [PF_MSG_INVALID] = {"invalid", NULL, 0},
    [PF_MSG_HELLO] = {"hello", HELLO, NELEM(HELLO)},
    [PF_MSG_WELCOME] = {"welcome", WELCOME, NELEM(WELCOME)},
    [PF_MSG_START] = {"start", START, NELEM(START)},
    [PF_MSG_HEARTBEAT] = {"heartbeat", HEARTBEAT, NELEM(HEARTBEAT)},
    [PF_MSG_CREDIT] = {"credit", CREDIT, NELEM(CREDIT)},
    [PF_MSG_TICKET] = {"ticket", TICKET, NELEM(TICKET)},
    [PF_MSG_BATCH] = {"batch", BATCH, NELEM(BATCH)},
    [PF_MSG_ACK] = {"ack", ACK, NELEM(ACK)},
    [PF_MSG_EVENT] = {"event", EVENT, NELEM(EVENT)},
    [PF_MSG_CKPT_SAVE] = {"ckpt_save", CKPT_SAVE, NELEM(CKPT_SAVE)},
    [PF_MSG_CKPT_ACK] = {"ckpt_ack", CKPT_ACK, NELEM(CKPT_ACK)},
    [PF_MSG_STOP] = {"stop", STOP, NELEM(STOP)},
    [PF_MSG_DONE] = {"done", DONE, NELEM(DONE)},
    [PF_MSG_KV_SET] = {"kv_set", KV_SET, NELEM(KV_SET)},
    [PF_MSG_KV_GET] = {"kv_get", KV_GET, NELEM(KV_GET)},
    [PF_MSG_KV_VALUE] = {"kv_value", KV_VALUE, NELEM(KV_VALUE)},
    [PF_MSG_SNAPSHOT] = {"snapshot", SNAPSHOT, NELEM(SNAPSHOT)},
    [PF_MSG_SNAPSHOT_END] = {"snapshot_end", SNAPSHOT_END, NELEM(SNAPSHOT_END)},
    [PF_MSG_VISUAL] = {"visual", VISUAL, NELEM(VISUAL)},
    [PF_MSG_READY] = {"ready", READY, NELEM(READY)},
};

/* decode_map marks seen fields in a 64-bit mask. */
#define FITS_MASK(t) _Static_assert(NELEM(t) < 64, #t " has too many fields for the seen mask")
FITS_MASK(HELLO); FITS_MASK(WELCOME); FITS_MASK(START); FITS_MASK(HEARTBEAT); FITS_MASK(CREDIT);
FITS_MASK(TICKET); FITS_MASK(BATCH); FITS_MASK(ACK); FITS_MASK(EVENT); FITS_MASK(CKPT_SAVE);
FITS_MASK(CKPT_ACK); FITS_MASK(STOP); FITS_MASK(DONE); FITS_MASK(KV_SET); FITS_MASK(KV_GET);
FITS_MASK(KV_VALUE); FITS_MASK(SNAPSHOT); FITS_MASK(SNAPSHOT_END); FITS_MASK(VISUAL); FITS_MASK(READY);

static _Atomic uint64_t rejects[PF_MSG_COUNT];

const char *pf_gan_term_name(int i) {
    return i >= 0 && i < PF_GAN_N_TERMS ? GAN_TERM_NAMES[i] : NULL;
}

const char *pf_msg_type_name(int type) {
    if (type <= PF_MSG_INVALID || type >= PF_MSG_COUNT)
        return "invalid";
    return SCHEMAS[type].name;
}

uint64_t pf_proto_rejects(int type) {
    if (type < 0 || type >= PF_MSG_COUNT)
        return 0;
    return atomic_load(&rejects[type]);
}

/* Counted by the framing code (too many parts), which has no decoded type. */
void pf_proto_count_reject(int type);
void pf_proto_count_reject(int type) {
    atomic_fetch_add(&rejects[type > 0 && type < PF_MSG_COUNT ? type : PF_MSG_INVALID], 1);
}

/* ---- field access --------------------------------------------------------------------- */

static uint64_t kind_max(pf_kind k) {
    switch (k) {
    case K_I32: return INT32_MAX;
    case K_U32: return UINT32_MAX;
    case K_I64: return INT64_MAX;
    default: return UINT64_MAX;
    }
}

static int64_t kind_min(pf_kind k) {
    return k == K_I32 ? INT32_MIN : k == K_I64 ? INT64_MIN : 0;
}

/* Effective bounds of an integer field: the declared ones clipped to the C type. */
static void field_bounds(const pf_field *f, int64_t *lo, uint64_t *hi) {
    *lo = f->lo < kind_min(f->kind) ? kind_min(f->kind) : f->lo;
    *hi = f->hi == 0 || f->hi > kind_max(f->kind) ? kind_max(f->kind) : f->hi;
}

static int in_bounds(const pf_field *f, int64_t sv, uint64_t uv, int negative) {
    int64_t lo;
    uint64_t hi;
    field_bounds(f, &lo, &hi);
    if (negative)
        return sv >= lo;
    return uv <= hi && (lo <= 0 || uv >= (uint64_t)lo);
}

/* Invariants across fields of one type, checked by the encoder and the decoder alike.
   Returns NULL, or what is wrong. */
static const char *cross_field_error(const pf_msg *m, char *buf, size_t len) {
    if (m->type == PF_MSG_EVENT && m->u.event.gan_terms && strcmp(m->u.event.kind, "train")) {
        snprintf(buf, len, "gan_terms in a '%.64s' event (train events only)", m->u.event.kind);
        return buf;
    }
    if (m->type == PF_MSG_BATCH) {
        /* The ticket had 1..PF_MAX_BATCH samples: those sent plus those skipped. */
        uint64_t total = (uint64_t)m->u.batch.n + m->u.batch.n_skipped;
        if (total < 1 || total > PF_MAX_BATCH) {
            snprintf(buf, len, "n + len(skipped) = %llu out of range [1, %d]",
                     (unsigned long long)total, PF_MAX_BATCH);
            return buf;
        }
    }
    if (m->type == PF_MSG_CKPT_SAVE &&
        (m->u.ckpt_save.net_d_size == 0) != (m->u.ckpt_save.net_d_optim_size == 0)) {
        /* net_d's state_dict and optim_d's state travel together or not at all. */
        snprintf(buf, len, "net_d_size and net_d_optim_size: one is 0, the other not");
        return buf;
    }
    return NULL;
}

/* ---- encode --------------------------------------------------------------------------- */

static int pack_str(msgpack_packer *pk, const char *s, size_t len) {
    return msgpack_pack_str(pk, len) || msgpack_pack_str_body(pk, s, len);
}

/* 1 when a PRESENT_BIT field f of the struct at base has its bit set. */
static int bit_set(const pf_field *f, const char *base) {
    return (*(const uint32_t *)(base + f->count_off) >> f->lo) & 1;
}

/* 1 when the encoder leaves field f of the struct at base out (OMIT_ZERO and 0; PRESENT_BIT
   and its bit clear). */
static int omitted(const pf_field *f, const char *base) {
    if (f->required == PRESENT_BIT) return !bit_set(f, base);
    if (f->required != OMIT_ZERO) return 0;
    return f->kind == K_U64 ? *(const uint64_t *)(base + f->off) == 0
                            : *(const uint32_t *)(base + f->off) == 0;
}

int pf_msg_encode(const pf_msg *m, void **out, size_t *outlen) {
    *out = NULL;
    *outlen = 0;
    if (!m || m->type <= PF_MSG_INVALID || m->type >= PF_MSG_COUNT)
        return -1;
    const pf_schema *sc = &SCHEMAS[m->type];
    const char *base = (const char *)&m->u;

    /* The struct must satisfy the schema the receiver will apply. */
    for (int i = 0; i < sc->nfields; i++) {
        const pf_field *f = &sc->fields[i];
        const char *p = base + f->off;
        int64_t sv = 0;
        uint64_t uv = 0;
        int neg = 0;
        switch (f->kind) {
        case K_I32: sv = *(const int32_t *)p; break;
        case K_I64: sv = *(const int64_t *)p; break;
        case K_U32: uv = *(const uint32_t *)p; break;
        case K_U64: uv = *(const uint64_t *)p; break;
        case K_F64: continue;
        case K_STR:
            if (strnlen(p, f->size) >= f->size)
                return -1;
            if (f->choices) {
                int ok = 0;
                for (int c = 0; f->choices[c]; c++)
                    ok |= !strcmp(p, f->choices[c]);
                if (!ok)
                    return -1;
            }
            continue;
        case K_U32_ARR: case K_U32_LIST:
            if (*(const uint32_t *)(base + f->count_off) > f->size)
                return -1;
            continue;
        case K_TEXT: {
            uint32_t len = *(const uint32_t *)(base + f->count_off);
            const char *t = *(char *const *)p;
            if (len > f->size || (len && !t) || (t && memchr(t, 0, len)))
                return -1;
            continue;
        }
        }
        if (f->kind == K_I32 || f->kind == K_I64) {
            neg = sv < 0;
            uv = (uint64_t)sv;
        }
        if (!in_bounds(f, sv, uv, neg))
            return -1;
    }
    char why[128];
    if (cross_field_error(m, why, sizeof why))
        return -1;

    int written = 0;
    for (int i = 0; i < sc->nfields; i++)
        written += !omitted(&sc->fields[i], base);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int e = msgpack_pack_map(&pk, (size_t)written + 2);
    e = e || pack_str(&pk, "type", 4) || pack_str(&pk, sc->name, strlen(sc->name));
    e = e || pack_str(&pk, "v", 1) || msgpack_pack_int64(&pk, PF_PROTO_VERSION);
    for (int i = 0; i < sc->nfields && !e; i++) {
        const pf_field *f = &sc->fields[i];
        const char *p = base + f->off;
        if (omitted(f, base))
            continue;
        e = pack_str(&pk, f->name, strlen(f->name));
        if (e)
            break;
        switch (f->kind) {
        case K_I32: e = msgpack_pack_int64(&pk, *(const int32_t *)p); break;
        case K_I64: e = msgpack_pack_int64(&pk, *(const int64_t *)p); break;
        case K_U32: e = msgpack_pack_uint64(&pk, *(const uint32_t *)p); break;
        case K_U64: e = msgpack_pack_uint64(&pk, *(const uint64_t *)p); break;
        case K_F64: e = msgpack_pack_double(&pk, *(const double *)p); break;
        case K_STR: e = pack_str(&pk, p, strlen(p)); break;
        case K_U32_ARR: case K_U32_LIST: {
            uint32_t n = *(const uint32_t *)(base + f->count_off);
            const uint32_t *a = (const uint32_t *)p;
            e = msgpack_pack_array(&pk, n);
            for (uint32_t j = 0; j < n && !e; j++)
                e = msgpack_pack_uint64(&pk, a[j]);
            break;
        }
        case K_TEXT: {
            uint32_t len = *(const uint32_t *)(base + f->count_off);
            const char *t = *(char *const *)p;
            e = pack_str(&pk, t ? t : "", len);
            break;
        }
        }
    }
    if (e) {
        msgpack_sbuffer_destroy(&sb);
        return -1;
    }
    *outlen = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    if (!*out) {
        /* an empty buffer cannot happen (the map header is always there) */
        *outlen = 0;
        return -1;
    }
    return 0;
}

/* ---- decode --------------------------------------------------------------------------- */

/* Walk one msgpack object at data[0..len) without allocating. Every container count and every
   str/bin/ext length must fit in the bytes that are left, so the unpacker's allocations stay
   bounded by the frame size. Returns the object's length in bytes, or 0 when it is truncated
   or malformed. */
static size_t scan_msgpack(const unsigned char *d, size_t len) {
    size_t pos = 0;
    uint64_t need = 1;                  /* objects still to read */
    while (need) {
        if (pos >= len)
            return 0;
        unsigned b = d[pos++];
        uint64_t skip = 0, add = 0;     /* payload bytes; child objects */
        size_t hdr = 0;                 /* length field bytes after the type byte */
        int what = 0;                   /* 0 scalar, 1 raw (len = skip), 2 array, 3 map */
        need--;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool */
        } else if (b >= 0x80 && b <= 0x8f) {
            add = 2 * (uint64_t)(b & 0x0f);
        } else if (b >= 0x90 && b <= 0x9f) {
            add = b & 0x0f;
        } else if (b >= 0xa0 && b <= 0xbf) {
            skip = b & 0x1f;
        } else {
            switch (b) {
            case 0xc4: case 0xd9: hdr = 1; what = 1; break;           /* bin8, str8 */
            case 0xc5: case 0xda: hdr = 2; what = 1; break;           /* bin16, str16 */
            case 0xc6: case 0xdb: hdr = 4; what = 1; break;           /* bin32, str32 */
            case 0xc7: hdr = 1; what = 1; skip = 1; break;            /* ext8 (+type) */
            case 0xc8: hdr = 2; what = 1; skip = 1; break;            /* ext16 */
            case 0xc9: hdr = 4; what = 1; skip = 1; break;            /* ext32 */
            case 0xca: skip = 4; break;                               /* float32 */
            case 0xcb: skip = 8; break;                               /* float64 */
            case 0xcc: case 0xd0: skip = 1; break;                    /* (u)int8 */
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xd4: skip = 2; break;                               /* fixext1..16 */
            case 0xd5: skip = 3; break;
            case 0xd6: skip = 5; break;
            case 0xd7: skip = 9; break;
            case 0xd8: skip = 17; break;
            case 0xdc: hdr = 2; what = 2; break;                      /* array16 */
            case 0xdd: hdr = 4; what = 2; break;                      /* array32 */
            case 0xde: hdr = 2; what = 3; break;                      /* map16 */
            case 0xdf: hdr = 4; what = 3; break;                      /* map32 */
            default: return 0;                                        /* 0xc1: never used */
            }
        }
        if (hdr) {
            if (len - pos < hdr)
                return 0;
            uint64_t n = 0;
            for (size_t i = 0; i < hdr; i++)
                n = (n << 8) | d[pos + i];
            pos += hdr;
            if (what == 1)
                skip += n;
            else
                add = what == 3 ? 2 * n : n;
        }
        if (skip > len - pos)
            return 0;
        pos += (size_t)skip;
        need += add;
        if (need > len - pos)           /* each object takes at least one byte */
            return 0;
    }
    return pos;
}

typedef struct {
    char *err;                          /* caller's buffer */
    size_t errlen;
    int type;                           /* claimed type, for the reject counter */
} pf_dctx;

static int reject(pf_dctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reject(pf_dctx *c, const char *fmt, ...) {
    pf_proto_count_reject(c->type);
    if (c->err && c->errlen) {
        int n = snprintf(c->err, c->errlen, "%s: ", pf_msg_type_name(c->type));
        if (n < 0 || (size_t)n >= c->errlen)
            n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *mp_type_name(msgpack_object_type t) {
    switch (t) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "bool";
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return "integer";
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "negative integer";
    case MSGPACK_OBJECT_FLOAT32: case MSGPACK_OBJECT_FLOAT64: return "float";
    case MSGPACK_OBJECT_STR: return "str";
    case MSGPACK_OBJECT_ARRAY: return "array";
    case MSGPACK_OBJECT_MAP: return "map";
    case MSGPACK_OBJECT_BIN: return "bin";
    case MSGPACK_OBJECT_EXT: return "ext";
    }
    return "unknown";
}

static int str_is(const msgpack_object *o, const char *s) {
    size_t n = strlen(s);
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
           (n == 0 || memcmp(o->via.str.ptr, s, n) == 0);
}

/* One integer field value into the struct. */
static int decode_int(pf_dctx *c, const pf_field *f, const msgpack_object *o, char *p) {
    int neg;
    int64_t sv = 0;
    uint64_t uv = 0;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        neg = 0;
        uv = o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        neg = 1;
        sv = o->via.i64;
        if (f->kind == K_U32 || f->kind == K_U64)
            return reject(c, "%s: negative value %lld for an unsigned field", f->name,
                          (long long)sv);
    } else {
        return reject(c, "%s: expected integer, got %s", f->name, mp_type_name(o->type));
    }
    if (!in_bounds(f, sv, uv, neg)) {
        int64_t lo;
        uint64_t hi;
        field_bounds(f, &lo, &hi);
        if (neg)
            return reject(c, "%s: %lld out of range [%lld, %llu]", f->name, (long long)sv,
                          (long long)lo, (unsigned long long)hi);
        return reject(c, "%s: %llu out of range [%lld, %llu]", f->name, (unsigned long long)uv,
                      (long long)lo, (unsigned long long)hi);
    }
    switch (f->kind) {
    case K_I32: *(int32_t *)p = (int32_t)(neg ? sv : (int64_t)uv); break;
    case K_I64: *(int64_t *)p = neg ? sv : (int64_t)uv; break;
    case K_U32: *(uint32_t *)p = (uint32_t)uv; break;
    case K_U64: *(uint64_t *)p = uv; break;
    default: break;
    }
    return 0;
}

/* One field value into the struct at `base`. `*arr_n` receives an array's length. */
static int decode_field(pf_dctx *c, const pf_field *f, const msgpack_object *o, char *base,
                        int64_t *arr_n) {
    char *p = base + f->off;
    switch (f->kind) {
    case K_I32: case K_I64: case K_U32: case K_U64:
        return decode_int(c, f, o, p);
    case K_F64:
        if (o->type != MSGPACK_OBJECT_FLOAT64 && o->type != MSGPACK_OBJECT_FLOAT32)
            return reject(c, "%s: expected float, got %s", f->name, mp_type_name(o->type));
        *(double *)p = o->via.f64;
        return 0;
    case K_STR: {
        if (o->type != MSGPACK_OBJECT_STR)
            return reject(c, "%s: expected str, got %s", f->name, mp_type_name(o->type));
        size_t n = o->via.str.size;
        if (n >= f->size)
            return reject(c, "%s: string of %zu bytes over the bound of %zu", f->name, n,
                          f->size - 1);
        if (n && memchr(o->via.str.ptr, 0, n))
            return reject(c, "%s: string contains a NUL byte", f->name);
        if (n)
            memcpy(p, o->via.str.ptr, n);
        p[n] = 0;
        if (f->choices) {
            for (int i = 0; f->choices[i]; i++)
                if (!strcmp(p, f->choices[i]))
                    return 0;
            return reject(c, "%s: '%s' is not an accepted value", f->name, p);
        }
        return 0;
    }
    case K_U32_ARR: case K_U32_LIST: {
        if (o->type != MSGPACK_OBJECT_ARRAY)
            return reject(c, "%s: expected array, got %s", f->name, mp_type_name(o->type));
        uint32_t n = o->via.array.size;
        if (n > f->size)
            return reject(c, "%s: array of %u items over the bound of %zu", f->name, n,
                          f->size);
        uint32_t *a = (uint32_t *)p;
        for (uint32_t i = 0; i < n; i++) {
            const msgpack_object *e = &o->via.array.ptr[i];
            if (e->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
                return reject(c, "%s[%u]: negative value for an unsigned field", f->name, i);
            if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return reject(c, "%s[%u]: expected integer, got %s", f->name, i,
                              mp_type_name(e->type));
            if (e->via.u64 > UINT32_MAX)
                return reject(c, "%s[%u]: %llu does not fit 32 bits", f->name, i,
                              (unsigned long long)e->via.u64);
            a[i] = (uint32_t)e->via.u64;
        }
        if (f->kind == K_U32_LIST)
            *(uint32_t *)(base + f->count_off) = n;
        else
            *arr_n = n;
        return 0;
    }
    case K_TEXT: {
        if (o->type != MSGPACK_OBJECT_STR)
            return reject(c, "%s: expected str, got %s", f->name, mp_type_name(o->type));
        size_t n = o->via.str.size;
        if (n > f->size)
            return reject(c, "%s: string of %zu bytes over the bound of %zu", f->name, n,
                          f->size);
        if (n && memchr(o->via.str.ptr, 0, n))
            return reject(c, "%s: string contains a NUL byte", f->name);
        char *t = malloc(n + 1);
        if (!t)
            return reject(c, "%s: out of memory", f->name);
        if (n)
            memcpy(t, o->via.str.ptr, n);
        t[n] = 0;
        *(char **)p = t;
        *(uint32_t *)(base + f->count_off) = (uint32_t)n;
        return 0;
    }
    }
    return reject(c, "%s: bad schema", f->name);
}

/* Check the map `root` against the schema of its claimed type and fill m->u. */
static int decode_map(pf_dctx *c, const msgpack_object *root, int expect, pf_msg *m) {
    const msgpack_object_kv *kv = root->via.map.ptr;
    uint32_t nkv = root->via.map.size;

    /* `type` first: it selects the schema and the counter. */
    const msgpack_object *tobj = NULL;
    for (uint32_t i = 0; i < nkv; i++) {
        if (str_is(&kv[i].key, "type")) {
            if (tobj)
                return reject(c, "duplicate key 'type'");
            tobj = &kv[i].val;
        }
    }
    if (!tobj)
        return reject(c, "missing key 'type'");
    if (tobj->type != MSGPACK_OBJECT_STR)
        return reject(c, "type: expected str, got %s", mp_type_name(tobj->type));
    int type = PF_MSG_INVALID;
    for (int t = PF_MSG_INVALID + 1; t < PF_MSG_COUNT; t++)
        if (str_is(tobj, SCHEMAS[t].name))
            type = t;
    if (type == PF_MSG_INVALID) {
        size_t n = tobj->via.str.size > 32 ? 32 : tobj->via.str.size;
        char shown[33];
        for (size_t i = 0; i < n; i++) {
            char ch = tobj->via.str.ptr[i];
            shown[i] = ch >= 32 && ch < 127 ? ch : '?';
        }
        shown[n] = 0;
        return reject(c, "unknown message type '%s'", shown);
    }
    c->type = type;
    if (expect && type != expect)
        return reject(c, "expected a %s message", pf_msg_type_name(expect));

    const pf_schema *sc = &SCHEMAS[type];
    uint64_t seen = 0;                  /* bit i: field i seen (schemas have < 64 fields) */
    int have_v = 0;
    int64_t arr_n = -1;
    m->type = type;
    char *base = (char *)&m->u;
    for (uint32_t i = 0; i < nkv; i++) {
        const msgpack_object *k = &kv[i].key, *v = &kv[i].val;
        if (k->type != MSGPACK_OBJECT_STR)
            return reject(c, "map key is a %s, expected str", mp_type_name(k->type));
        if (str_is(k, "type"))
            continue;
        if (str_is(k, "v")) {
            if (have_v)
                return reject(c, "duplicate key 'v'");
            have_v = 1;
            if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return reject(c, "v: expected integer, got %s", mp_type_name(v->type));
            if (v->via.u64 != PF_PROTO_VERSION)
                return reject(c, "version %llu, this build speaks %d",
                              (unsigned long long)v->via.u64, PF_PROTO_VERSION);
            continue;
        }
        int fi = -1;
        for (int j = 0; j < sc->nfields; j++)
            if (str_is(k, sc->fields[j].name))
                fi = j;
        if (fi < 0) {
            size_t n = k->via.str.size > 32 ? 32 : k->via.str.size;
            char shown[33];
            for (size_t j = 0; j < n; j++) {
                char ch = k->via.str.ptr[j];
                shown[j] = ch >= 32 && ch < 127 ? ch : '?';
            }
            shown[n] = 0;
            return reject(c, "unknown key '%s'", shown);
        }
        if (seen & (1ull << fi))
            return reject(c, "duplicate key '%s'", sc->fields[fi].name);
        seen |= 1ull << fi;
        if (decode_field(c, &sc->fields[fi], v, base, &arr_n))
            return -1;
    }
    if (!have_v)
        return reject(c, "missing key 'v' (schema version)");
    for (int j = 0; j < sc->nfields; j++)
        if (sc->fields[j].required == 1 && !(seen & (1ull << j)))
            return reject(c, "missing required field '%s'", sc->fields[j].name);
    for (int j = 0; j < sc->nfields; j++) {
        const pf_field *f = &sc->fields[j];
        if (f->required == PRESENT_BIT && bit_set(f, base) != !!(seen & (1ull << j)))
            return reject(c, bit_set(f, base) ? "'%s' missing, its bit (%d) is set"
                                              : "'%s' present without its bit (%d) set",
                          f->name, (int)f->lo);
    }

    /* Arrays come with their count: they must agree. */
    for (int j = 0; j < sc->nfields; j++) {
        const pf_field *f = &sc->fields[j];
        if (f->kind == K_U32_ARR) {
            uint32_t n = *(const uint32_t *)(base + f->count_off);
            if ((int64_t)n != arr_n)
                return reject(c, "n = %u but %s has %lld items", n, f->name, (long long)arr_n);
        }
    }
    char why[128];
    if (cross_field_error(m, why, sizeof why))
        return reject(c, "%s", why);
    return 0;
}

int pf_msg_decode(const void *data, size_t len, int expect, pf_msg *m, char *err,
                  size_t errlen) {
    pf_dctx c = {err, errlen, PF_MSG_INVALID};
    memset(m, 0, sizeof *m);
    if (err && errlen)
        err[0] = 0;
    if (!data || len == 0)
        return reject(&c, "empty header frame");
    if (len > PF_MAX_HEADER)
        return reject(&c, "header frame of %zu bytes over the limit of %zu", len,
                      PF_MAX_HEADER);
    size_t objlen = scan_msgpack(data, len);
    if (objlen == 0)
        return reject(&c, "not valid msgpack: truncated, a reserved byte, or a length or count "
                          "that claims more than the frame holds");
    if (objlen != len)
        return reject(&c, "%zu trailing bytes after the map", len - objlen);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc;
    msgpack_unpack_return ur = msgpack_unpack_next(&up, data, len, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS)
        rc = reject(&c, ur == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory"
                                                          : "msgpack parse error");
    else if (off != len)
        rc = reject(&c, "%zu trailing bytes after the map", len - off);
    else if (up.data.type != MSGPACK_OBJECT_MAP)
        rc = reject(&c, "header is a msgpack %s, expected map", mp_type_name(up.data.type));
    else
        rc = decode_map(&c, &up.data, expect, m);
    msgpack_unpacked_destroy(&up);
    if (rc)
        pf_msg_clear(m);                /* m->type is set once a schema was chosen */
    return rc;
}

void pf_msg_clear(pf_msg *m) {
    if (!m)
        return;
    if (m->type == PF_MSG_WELCOME)
        free(m->u.welcome.config);
    memset(m, 0, sizeof *m);
}
