/*  test_proto — proto/: every message type round-trips, every decoder rejects (and counts)
    hostile or mismatched headers without crashing, and the ZeroMQ framing carries identity,
    header and bulk frames.

    The hostile cases are built by re-packing a valid encoding with one change (a key dropped,
    a value of another msgpack type, an extra key, ...), so they cover every field of every
    type without the test re-stating the schemas. Expected outcomes (which fields are optional,
    string bounds) come from proto.h, not from proto/codec.c.
*/
#include "proto/proto.h"
#include "pf_test.h"

#include <errno.h>
#include <msgpack.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

static uint64_t total_rejects(void) {
    uint64_t s = 0;
    for (int t = 0; t < PF_MSG_COUNT; t++)
        s += pf_proto_rejects(t);
    return s;
}

static char config_text[] = "model:\n  type: EDSR\n  scale: 2\n";

/* A message of `type` with every field set to something other than zero. */
static void fill(pf_msg *m, int type) {
    memset(m, 0, sizeof *m);
    m->type = type;
    switch (type) {
    case PF_MSG_HELLO:
        m->u.hello.role = PF_ROLE_WORKER;
        strcpy(m->u.hello.name, "worker");
        m->u.hello.pid = 4242;
        strcpy(m->u.hello.host, "gpu-node-1");
        strcpy(m->u.hello.endpoint, "tcp://10.0.0.2:5601");
        break;
    case PF_MSG_WELCOME:
        m->u.welcome.peer_id = 17;
        m->u.welcome.rank = 1;
        m->u.welcome.world_size = 4;
        m->u.welcome.heartbeat_ms = 500;
        strcpy(m->u.welcome.events_pub, "tcp://10.0.0.1:5556");
        strcpy(m->u.welcome.events_sub, "tcp://10.0.0.1:5557");
        m->u.welcome.config = config_text;
        m->u.welcome.config_len = (uint32_t)strlen(config_text);
        break;
    case PF_MSG_START:
        strcpy(m->u.start.ckpt_endpoint, "tcp://10.0.0.3:5700");
        m->u.start.total_iters = 1800;
        m->u.start.iters_per_epoch = 50;
        break;
    case PF_MSG_HEARTBEAT:
        m->u.heartbeat.peer_id = 99;
        break;
    case PF_MSG_CREDIT:
        m->u.credit.rank = 2;
        m->u.credit.n = 4;
        m->u.credit.next_iter = 1234;
        break;
    case PF_MSG_TICKET:
        m->u.ticket.ticket_id = 0x1234567890ull;
        m->u.ticket.epoch = 3;
        m->u.ticket.iter = 777;
        m->u.ticket.rank = 1;
        m->u.ticket.n = 16;
        for (uint32_t i = 0; i < 16; i++)
            m->u.ticket.indices[i] = 1000000u * i + 7;
        strcpy(m->u.ticket.endpoint, "tcp://10.0.0.2:5601");
        break;
    case PF_MSG_BATCH:
        m->u.batch.ticket_id = 5555;
        m->u.batch.epoch = 1;
        m->u.batch.iter = 42;
        m->u.batch.rank = 3;
        m->u.batch.n = 8;
        for (uint32_t i = 0; i < 8; i++)
            m->u.batch.indices[i] = 4000000000u - i;
        m->u.batch.gt_h = m->u.batch.gt_w = 96;
        m->u.batch.lq_h = m->u.batch.lq_w = 48;
        m->u.batch.loader_id = 12;
        m->u.batch.n_skipped = 2;
        m->u.batch.skipped[0] = 3000000000u;
        m->u.batch.skipped[1] = 17;
        m->u.batch.gt_plain = 1;        /* the optional third frame, so every rule covers it */
        break;
    case PF_MSG_ACK:
        m->u.ack.ticket_id = UINT64_MAX;
        m->u.ack.rank = 7;
        break;
    case PF_MSG_EVENT:
        strcpy(m->u.event.kind, "train");
        strcpy(m->u.event.source, "worker0");
        m->u.event.seq = 31;
        m->u.event.iter = 300;
        m->u.event.total_iters = 1800;
        m->u.event.epoch = 2;
        m->u.event.loss = 0.0123456789;
        m->u.event.lr = 2e-4;
        m->u.event.time = 0.25;
        m->u.event.data_time = 0.001;
        m->u.event.psnr = 33.5;
        m->u.event.ssim = 0.91;
        m->u.event.best_psnr = 34.25;
        m->u.event.psnr_bicubic = 31.0;
        m->u.event.ssim_bicubic = 0.87;
        m->u.event.best_iter = 900;
        strcpy(m->u.event.path, "work_dirs/demo/checkpoints/iter_300.safetensors");
        strcpy(m->u.event.text, "loss 0.0123");
        m->u.event.count = 3;
        m->u.event.psnr_inf = 5;
        m->u.event.psnr_bicubic_inf = 7;
        m->u.event.psnr_inf_items = 1;
        m->u.event.psnr_bicubic_inf_items = 2;
        strcpy(m->u.event.host, "cpu-node-7");
        m->u.event.patches_per_s = 812.5;
        m->u.event.bytes_per_s = 3.5e8;
        m->u.event.hit_rate = 0.75;
        m->u.event.cache_bytes = 1ll << 33;
        m->u.event.queue_depth = 6;
        m->u.event.sample = 123456;
        strcpy(m->u.event.role, "worker");
        m->u.event.rank = -1;
        m->u.event.pid = 4242;
        m->u.event.peer_id = 9;
        strcpy(m->u.event.state, "dead");
        strcpy(m->u.event.device, "cuda:1");
        m->u.event.mem_bytes = 3ll << 31;
        break;
    case PF_MSG_CKPT_SAVE:
        m->u.ckpt_save.iter = 300;
        m->u.ckpt_save.epoch = 1;
        strcpy(m->u.ckpt_save.weights_name, "iter_300.safetensors");
        strcpy(m->u.ckpt_save.optim_name, "iter_300.optim.safetensors");
        m->u.ckpt_save.weights_size = 1u << 20;
        m->u.ckpt_save.optim_size = 2u << 20;
        break;
    case PF_MSG_CKPT_ACK:
        m->u.ckpt_ack.iter = 300;
        m->u.ckpt_ack.ok = 1;
        strcpy(m->u.ckpt_ack.path, "work_dirs/demo/checkpoints/iter_300.safetensors");
        strcpy(m->u.ckpt_ack.error, "");
        break;
    case PF_MSG_STOP:
        strcpy(m->u.stop.reason, "interrupt");
        strcpy(m->u.stop.text, "SIGINT");
        break;
    case PF_MSG_DONE:
        m->u.done.rank = 0;
        m->u.done.iter = 1800;
        m->u.done.status = 0;
        strcpy(m->u.done.text, "finished");
        break;
    case PF_MSG_KV_SET:
        strcpy(m->u.kv_set.key, "gloo/job/rank_1");
        m->u.kv_set.size = 300;
        break;
    case PF_MSG_KV_GET:
        strcpy(m->u.kv_get.key, "gloo/job/rank_0");
        break;
    case PF_MSG_KV_VALUE:
        strcpy(m->u.kv_value.key, "gloo/job/rank_0");
        m->u.kv_value.found = 1;
        m->u.kv_value.size = 4096;
        break;
    case PF_MSG_SNAPSHOT:
        m->u.snapshot.max_train = 240;
        break;
    case PF_MSG_SNAPSHOT_END:
        m->u.snapshot_end.events = 77;
        m->u.snapshot_end.total_iters = 1800;
        m->u.snapshot_end.iters_per_epoch = 37;
        m->u.snapshot_end.world_size = 2;
        m->u.snapshot_end.batch = 32;
        m->u.snapshot_end.started = 1;
        strcpy(m->u.snapshot_end.phase, "running");
        m->u.snapshot_end.uptime = 12.5;
        strcpy(m->u.snapshot_end.work_dir, "work_dirs/demo");
        strcpy(m->u.snapshot_end.model, "EDSR");
        break;
    case PF_MSG_READY:
        m->u.ready.peer_id = 4000000000u;
        break;
    case PF_MSG_VISUAL:
        strcpy(m->u.visual.source, "worker0");
        strcpy(m->u.visual.tag, "eval");
        strcpy(m->u.visual.name, "0801.png");
        m->u.visual.iter = 300;
        m->u.visual.n = 4;
        m->u.visual.gt_h = m->u.visual.gt_w = 96;
        m->u.visual.lq_h = m->u.visual.lq_w = 24;
        break;
    }
}

/* Field-exact comparison: both sides were zeroed before being filled. */
static int same(const pf_msg *a, const pf_msg *b) {
    if (a->type != b->type)
        return 0;
    if (a->type != PF_MSG_WELCOME)
        return memcmp(a, b, sizeof *a) == 0;
    const pf_msg_welcome *x = &a->u.welcome, *y = &b->u.welcome;
    return x->peer_id == y->peer_id && x->rank == y->rank && x->world_size == y->world_size &&
           x->heartbeat_ms == y->heartbeat_ms && !strcmp(x->events_pub, y->events_pub) &&
           !strcmp(x->events_sub, y->events_sub) && x->config_len == y->config_len &&
           y->config && memcmp(x->config, y->config, x->config_len) == 0 &&
           y->config[y->config_len] == 0;
}

/* Decode that must fail: checks the return, that the struct is left cleared, that exactly
   one rejection was counted and (when `word` is set) that the message names the problem. */
static void expect_reject(const void *buf, size_t len, int expect, const char *word,
                          const char *what) {
    pf_msg d;
    char err[512];
    uint64_t before = total_rejects();
    int rc = pf_msg_decode(buf, len, expect, &d, err, sizeof err);
    CHECK(rc == -1, "%s: accepted", what);
    CHECK(total_rejects() == before + 1, "%s: rejection not counted once", what);
    CHECK(d.type == 0, "%s: struct not cleared", what);
    if (word)
        CHECK(strstr(err, word) != NULL, "%s: error '%s' does not mention '%s'", what, err,
              word);
    if (rc == 0)
        pf_msg_clear(&d);
}

/* ---- re-packing a valid encoding with one change -------------------------------------- */

typedef enum { MUT_NONE, MUT_DROP, MUT_REPLACE, MUT_ADD, MUT_DUP } mut_mode;
typedef enum {
    V_INT, V_NEG, V_STR, V_FLOAT, V_NIL, V_ARRAY, V_MAP, V_BOOL, V_BIN, V_LONGSTR, V_BIGINT, V_NULSTR, V_STR8
} val_kind;

static void pack_val(msgpack_packer *pk, val_kind v) {
    static char longstr[PF_MAX_TEXT + 1];
    switch (v) {
    case V_INT: msgpack_pack_int64(pk, 5); break;
    case V_NEG: msgpack_pack_int64(pk, -1); break;
    case V_STR: msgpack_pack_str_with_body(pk, "x", 1); break;
    case V_FLOAT: msgpack_pack_double(pk, 1.5); break;
    case V_NIL: msgpack_pack_nil(pk); break;
    case V_ARRAY: msgpack_pack_array(pk, 1); msgpack_pack_int64(pk, 1); break;
    case V_MAP: msgpack_pack_map(pk, 0); break;
    case V_BOOL: msgpack_pack_true(pk); break;
    case V_BIN: msgpack_pack_bin_with_body(pk, "ab", 2); break;
    case V_LONGSTR:
        memset(longstr, 'a', sizeof longstr);
        msgpack_pack_str_with_body(pk, longstr, sizeof longstr);
        break;
    case V_BIGINT: msgpack_pack_uint64(pk, UINT64_MAX); break;
    case V_NULSTR: msgpack_pack_str_with_body(pk, "tcp\0evil", 8); break;
    case V_STR8: msgpack_pack_str_with_body(pk, "tcp_evil", 8); break;
    }
}

/* Start re-encoding the map in `src`: *up holds it (destroy it after), *pk writes into *sb. */
static const msgpack_object_map *repack_begin(const void *src, size_t len,
                                              msgpack_unpacked *up, msgpack_sbuffer *sb,
                                              msgpack_packer *pk) {
    msgpack_unpacked_init(up);
    size_t off = 0;
    msgpack_unpack_next(up, src, len, &off);
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    return &up->data.via.map;
}

/* Re-encode map `src` applying `mode` to `key` (MUT_ADD adds `key`: value). */
static msgpack_sbuffer repack(const void *src, size_t len, mut_mode mode, const char *key,
                              val_kind v) {
    msgpack_unpacked up;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    const msgpack_object_map *map = repack_begin(src, len, &up, &sb, &pk);
    size_t n = map->size + (mode == MUT_ADD || mode == MUT_DUP) - (mode == MUT_DROP);
    msgpack_pack_map(&pk, n);
    for (uint32_t i = 0; i < map->size; i++) {
        const msgpack_object_kv *kv = &map->ptr[i];
        int match = kv->key.via.str.size == strlen(key) &&
                    !memcmp(kv->key.via.str.ptr, key, strlen(key));
        if (match && mode == MUT_DROP)
            continue;
        msgpack_pack_object(&pk, kv->key);
        if (match && mode == MUT_REPLACE)
            pack_val(&pk, v);
        else
            msgpack_pack_object(&pk, kv->val);
        if (match && mode == MUT_DUP) {
            msgpack_pack_object(&pk, kv->key);
            msgpack_pack_object(&pk, kv->val);
        }
    }
    if (mode == MUT_ADD) {
        msgpack_pack_str_with_body(&pk, key, strlen(key));
        pack_val(&pk, v);
    }
    msgpack_unpacked_destroy(&up);
    return sb;
}

/* Re-encode map `src` with `key`'s value replaced by an array of `count` items, item j = j,
   except item 1 when `bad` is 1 (negative) or 2 (over 32 bits); and "n" replaced by n_value
   when it is >= 0. */
static msgpack_sbuffer repack_array(const void *src, size_t len, const char *key,
                                    uint32_t count, int bad, int64_t n_value) {
    msgpack_unpacked up;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    const msgpack_object_map *map = repack_begin(src, len, &up, &sb, &pk);
    msgpack_pack_map(&pk, map->size);
    for (uint32_t i = 0; i < map->size; i++) {
        const msgpack_object_kv *kv = &map->ptr[i];
        msgpack_pack_object(&pk, kv->key);
        if (kv->key.via.str.size == strlen(key) &&
            !memcmp(kv->key.via.str.ptr, key, strlen(key))) {
            msgpack_pack_array(&pk, count);
            for (uint32_t j = 0; j < count; j++) {
                if (j == 1 && bad == 1)
                    msgpack_pack_int64(&pk, -5);
                else if (j == 1 && bad == 2)
                    msgpack_pack_uint64(&pk, 1ull << 32);
                else
                    msgpack_pack_uint32(&pk, j);
            }
        } else if (n_value >= 0 && kv->key.via.str.size == 1 && kv->key.via.str.ptr[0] == 'n') {
            msgpack_pack_int64(&pk, n_value);
        } else {
            msgpack_pack_object(&pk, kv->val);
        }
    }
    msgpack_unpacked_destroy(&up);
    return sb;
}

/* Keys of the valid encoding of `type` with their msgpack types. */
typedef struct {
    char key[32];
    msgpack_object_type type;
} key_info;

static int keys_of(const void *buf, size_t len, key_info *out, int max) {
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    msgpack_unpack_next(&up, buf, len, &off);
    int n = 0;
    for (uint32_t i = 0; i < up.data.via.map.size && n < max; i++) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
        snprintf(out[n].key, sizeof out[n].key, "%.*s", (int)kv->key.via.str.size,
                 kv->key.via.str.ptr);
        out[n++].type = kv->val.type;
    }
    msgpack_unpacked_destroy(&up);
    return n;
}

/* proto.h: an event needs kind, source and seq; its other fields depend on the kind. A batch
   without `skipped` skipped nothing; one without `gt_plain` has no third frame. */
static int optional_field(int type, const char *key) {
    if (type == PF_MSG_BATCH)
        return !strcmp(key, "skipped") || !strcmp(key, "gt_plain");
    return type == PF_MSG_EVENT && strcmp(key, "kind") && strcmp(key, "source") &&
           strcmp(key, "seq") && strcmp(key, "type") && strcmp(key, "v");
}

/* A value of another msgpack type than `t`. */
static val_kind wrong_kind(msgpack_object_type t, int variant) {
    static const val_kind for_int[] = {V_STR, V_FLOAT, V_NIL, V_ARRAY, V_MAP, V_BOOL, V_BIN};
    static const val_kind for_str[] = {V_INT, V_FLOAT, V_NIL, V_ARRAY, V_MAP, V_BOOL, V_BIN};
    static const val_kind for_flt[] = {V_STR, V_INT, V_NIL, V_ARRAY, V_MAP, V_BOOL, V_BIN};
    static const val_kind for_arr[] = {V_STR, V_INT, V_NIL, V_FLOAT, V_MAP, V_BOOL, V_BIN};
    switch (t) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return for_int[variant];
    case MSGPACK_OBJECT_STR: return for_str[variant];
    case MSGPACK_OBJECT_FLOAT64: case MSGPACK_OBJECT_FLOAT32: return for_flt[variant];
    default: return for_arr[variant];
    }
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_names(void) {
    CHECK(!strcmp(pf_msg_type_name(PF_MSG_TICKET), "ticket"), "ticket name");
    CHECK(!strcmp(pf_msg_type_name(PF_MSG_CKPT_SAVE), "ckpt_save"), "ckpt_save name");
    CHECK(!strcmp(pf_msg_type_name(0), "invalid"), "0 is invalid");
    CHECK(!strcmp(pf_msg_type_name(PF_MSG_COUNT), "invalid"), "COUNT is invalid");
    CHECK(!strcmp(pf_msg_type_name(-3), "invalid"), "negative is invalid");
}

static void test_round_trip(void) {
    for (int t = 1; t < PF_MSG_COUNT; t++) {
        pf_msg m, d;
        fill(&m, t);
        void *buf;
        size_t len;
        char err[256];
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode %s", pf_msg_type_name(t));
        CHECK(pf_msg_decode(buf, len, t, &d, err, sizeof err) == 0, "decode %s: %s",
              pf_msg_type_name(t), err);
        CHECK(same(&m, &d), "%s differs after a round trip", pf_msg_type_name(t));
        pf_msg_clear(&d);
        CHECK(pf_msg_decode(buf, len, 0, &d, err, sizeof err) == 0 && d.type == t,
              "decode %s with expect 0", pf_msg_type_name(t));
        pf_msg_clear(&d);
        free(buf);
    }
    /* Full-size ticket and the largest config. */
    pf_msg m, d;
    fill(&m, PF_MSG_TICKET);
    m.u.ticket.n = PF_MAX_BATCH;
    for (uint32_t i = 0; i < PF_MAX_BATCH; i++)
        m.u.ticket.indices[i] = UINT32_MAX - i;
    void *buf;
    size_t len;
    char err[256];
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode full ticket");
    CHECK(pf_msg_decode(buf, len, PF_MSG_TICKET, &d, err, sizeof err) == 0 && same(&m, &d),
          "full ticket: %s", err);
    free(buf);
    fill(&m, PF_MSG_WELCOME);
    char *big = malloc(PF_MAX_CONFIG + 2);
    memset(big, 'y', PF_MAX_CONFIG + 1);
    big[PF_MAX_CONFIG + 1] = 0;
    m.u.welcome.config = big;
    m.u.welcome.config_len = PF_MAX_CONFIG;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode welcome with PF_MAX_CONFIG bytes");
    CHECK(pf_msg_decode(buf, len, PF_MSG_WELCOME, &d, err, sizeof err) == 0 && same(&m, &d),
          "welcome with PF_MAX_CONFIG bytes: %s", err);
    pf_msg_clear(&d);
    CHECK(d.type == 0 && d.u.welcome.config == NULL, "pf_msg_clear zeroes");
    free(buf);
    /* one byte more: the encoder refuses, and a hand-built header is rejected */
    m.u.welcome.config_len = PF_MAX_CONFIG + 1;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "encode refuses config over PF_MAX_CONFIG");
    m.u.welcome.config_len = 5;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode small welcome");
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    {
        /* rebuild with config = big string */
        msgpack_unpacked up;
        msgpack_unpacked_init(&up);
        size_t off = 0;
        msgpack_unpack_next(&up, buf, len, &off);
        msgpack_pack_map(&pk, up.data.via.map.size);
        for (uint32_t i = 0; i < up.data.via.map.size; i++) {
            msgpack_object_kv *kv = &up.data.via.map.ptr[i];
            msgpack_pack_object(&pk, kv->key);
            if (kv->key.via.str.size == 6 && !memcmp(kv->key.via.str.ptr, "config", 6))
                msgpack_pack_str_with_body(&pk, big, PF_MAX_CONFIG + 1);
            else
                msgpack_pack_object(&pk, kv->val);
        }
        msgpack_unpacked_destroy(&up);
    }
    expect_reject(sb.data, sb.size, 0, "bound", "welcome config of PF_MAX_CONFIG + 1 bytes");
    msgpack_sbuffer_destroy(&sb);
    free(buf);
    free(big);
}

static void test_encoder_bounds(void) {
    pf_msg m;
    void *buf;
    size_t len;
    fill(&m, PF_MSG_TICKET);
    m.u.ticket.n = PF_MAX_BATCH + 1;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "ticket n > PF_MAX_BATCH refused");
    fill(&m, PF_MSG_BATCH);
    m.u.batch.n = 0;
    m.u.batch.n_skipped = 0;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "batch with no sample and none skipped refused");
    m.u.batch.n_skipped = 1;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "batch n = 0 with one skipped sample encodes");
    free(buf);
    m.u.batch.n = PF_MAX_BATCH;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "batch n + skipped > PF_MAX_BATCH refused");
    m.u.batch.n = 1;
    m.u.batch.n_skipped = PF_MAX_BATCH + 1;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "batch skipped over PF_MAX_BATCH refused");
    fill(&m, PF_MSG_HELLO);
    memset(m.u.hello.name, 'a', sizeof m.u.hello.name);  /* no terminator */
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "unterminated string refused");
    fill(&m, PF_MSG_STOP);
    strcpy(m.u.stop.reason, "later");
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "stop reason outside the list refused");
    m.type = PF_MSG_COUNT;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "unknown type refused");
    m.type = PF_MSG_INVALID;
    CHECK(pf_msg_encode(&m, &buf, &len) == -1, "invalid type refused");
    /* exact string bound: 63 bytes fit name[64], and decode accepts them */
    fill(&m, PF_MSG_HELLO);
    memset(m.u.hello.name, 'n', 63);
    m.u.hello.name[63] = 0;
    pf_msg d;
    char err[256];
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "63-byte name encodes");
    CHECK(pf_msg_decode(buf, len, 0, &d, err, sizeof err) == 0 && same(&m, &d),
          "63-byte name decodes: %s", err);
    free(buf);
}

/* Every decoder: each byte-prefix, wrong version and type, each field with the wrong type,
   dropped, duplicated, oversized, an extra key, trailing bytes. */
static void test_hostile_per_type(void) {
    for (int t = 1; t < PF_MSG_COUNT; t++) {
        const char *tn = pf_msg_type_name(t);
        char what[256];
        pf_msg m;
        fill(&m, t);
        void *buf;
        size_t len;
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode %s", tn);

        for (size_t cut = 0; cut < len; cut++) {
            snprintf(what, sizeof what, "%s truncated to %zu of %zu bytes", tn, cut, len);
            expect_reject(buf, cut, 0, NULL, what);
        }
        unsigned char *longer = malloc(len + 1);
        memcpy(longer, buf, len);
        longer[len] = 0xc0;
        snprintf(what, sizeof what, "%s with a trailing byte", tn);
        expect_reject(longer, len + 1, 0, "trailing", what);
        free(longer);

        /* expect mismatch is counted on the claimed type */
        int other = t == PF_MSG_HELLO ? PF_MSG_DONE : PF_MSG_HELLO;
        uint64_t before = pf_proto_rejects(t);
        snprintf(what, sizeof what, "%s when expecting %s", tn, pf_msg_type_name(other));
        expect_reject(buf, len, other, "expected", what);
        CHECK(pf_proto_rejects(t) == before + 1, "%s: mismatch counted on its type", tn);

        msgpack_sbuffer sb;
        sb = repack(buf, len, MUT_REPLACE, "v", V_INT);
        snprintf(what, sizeof what, "%s with version 5", tn);
        expect_reject(sb.data, sb.size, 0, "version", what);
        msgpack_sbuffer_destroy(&sb);
        sb = repack(buf, len, MUT_REPLACE, "v", V_STR);
        snprintf(what, sizeof what, "%s with version as str", tn);
        expect_reject(sb.data, sb.size, 0, "v:", what);
        msgpack_sbuffer_destroy(&sb);
        sb = repack(buf, len, MUT_DROP, "v", V_INT);
        snprintf(what, sizeof what, "%s without version", tn);
        expect_reject(sb.data, sb.size, 0, "'v'", what);
        msgpack_sbuffer_destroy(&sb);

        before = pf_proto_rejects(PF_MSG_INVALID);
        sb = repack(buf, len, MUT_REPLACE, "type", V_STR);
        snprintf(what, sizeof what, "%s with type 'x'", tn);
        expect_reject(sb.data, sb.size, 0, "unknown message type", what);
        msgpack_sbuffer_destroy(&sb);
        CHECK(pf_proto_rejects(PF_MSG_INVALID) == before + 1, "unknown type counted as invalid");
        sb = repack(buf, len, MUT_REPLACE, "type", V_INT);
        snprintf(what, sizeof what, "%s with type as int", tn);
        expect_reject(sb.data, sb.size, 0, "type", what);
        msgpack_sbuffer_destroy(&sb);
        sb = repack(buf, len, MUT_DROP, "type", V_INT);
        snprintf(what, sizeof what, "%s without type", tn);
        expect_reject(sb.data, sb.size, 0, "type", what);
        msgpack_sbuffer_destroy(&sb);

        sb = repack(buf, len, MUT_ADD, "zzz", V_INT);
        snprintf(what, sizeof what, "%s with unknown key", tn);
        expect_reject(sb.data, sb.size, 0, "unknown key", what);
        msgpack_sbuffer_destroy(&sb);

        key_info keys[32];
        int nk = keys_of(buf, len, keys, 32);
        CHECK(nk >= 3, "%s has keys", tn);
        for (int k = 0; k < nk; k++) {
            const char *key = keys[k].key;
            if (!strcmp(key, "type") || !strcmp(key, "v"))
                continue;
            for (int variant = 0; variant < 7; variant++) {
                val_kind vk = wrong_kind(keys[k].type, variant);
                sb = repack(buf, len, MUT_REPLACE, key, vk);
                snprintf(what, sizeof what, "%s.%.40s with wrong msgpack type (variant %d)", tn,
                         key, variant);
                expect_reject(sb.data, sb.size, 0, key, what);
                msgpack_sbuffer_destroy(&sb);
            }
            sb = repack(buf, len, MUT_DUP, key, V_INT);
            snprintf(what, sizeof what, "%s.%.40s twice", tn, key);
            expect_reject(sb.data, sb.size, 0, "duplicate", what);
            msgpack_sbuffer_destroy(&sb);

            sb = repack(buf, len, MUT_DROP, key, V_INT);
            snprintf(what, sizeof what, "%s without %.40s", tn, key);
            if (optional_field(t, key)) {
                pf_msg d;
                char err[256];
                CHECK(pf_msg_decode(sb.data, sb.size, t, &d, err, sizeof err) == 0,
                      "%s: optional field may be absent: %s", what, err);
                pf_msg_clear(&d);
            } else {
                expect_reject(sb.data, sb.size, 0, "missing", what);
            }
            msgpack_sbuffer_destroy(&sb);

            if (keys[k].type == MSGPACK_OBJECT_STR) {
                /* PF_MAX_TEXT + 1 bytes is over every string bound except the config's */
                sb = repack(buf, len, MUT_REPLACE, key, V_LONGSTR);
                snprintf(what, sizeof what, "%s.%.40s oversized", tn, key);
                if (t == PF_MSG_WELCOME && !strcmp(key, "config")) {
                    pf_msg d;
                    char err[256];
                    CHECK(pf_msg_decode(sb.data, sb.size, t, &d, err, sizeof err) == 0 &&
                              d.u.welcome.config_len == PF_MAX_TEXT + 1,
                          "config may be long: %s", err);
                    pf_msg_clear(&d);
                } else {
                    expect_reject(sb.data, sb.size, 0, "bound", what);
                }
                msgpack_sbuffer_destroy(&sb);
            }
            if (keys[k].type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
                sb = repack(buf, len, MUT_REPLACE, key, V_BIGINT);
                snprintf(what, sizeof what, "%s.%.40s = 2^64-1", tn, key);
                int fits_u64 = !strcmp(key, "ticket_id") || !strcmp(key, "seq") ||
                               !strcmp(key, "weights_size") || !strcmp(key, "optim_size");
                if (fits_u64) {
                    pf_msg d;
                    char err[256];
                    CHECK(pf_msg_decode(sb.data, sb.size, t, &d, err, sizeof err) == 0,
                          "%s: a uint64 field takes 2^64-1: %s", what, err);
                    pf_msg_clear(&d);
                } else {
                    expect_reject(sb.data, sb.size, 0, "range", what);
                }
                msgpack_sbuffer_destroy(&sb);
            }
        }
        free(buf);
    }
}

/* Unsigned fields, counts, ranges. */
static void test_field_rules(void) {
    pf_msg m;
    void *buf;
    size_t len;
    msgpack_sbuffer sb;
    static const struct {
        int type;
        const char *key;
    } unsigned_keys[] = {
        {PF_MSG_TICKET, "ticket_id"}, {PF_MSG_TICKET, "epoch"},   {PF_MSG_TICKET, "n"},
        {PF_MSG_BATCH, "gt_h"},       {PF_MSG_BATCH, "loader_id"}, {PF_MSG_ACK, "ticket_id"},
        {PF_MSG_WELCOME, "peer_id"},  {PF_MSG_HEARTBEAT, "peer_id"}, {PF_MSG_CREDIT, "n"},
        {PF_MSG_EVENT, "seq"},        {PF_MSG_CKPT_SAVE, "weights_size"},
    };
    for (size_t i = 0; i < sizeof unsigned_keys / sizeof unsigned_keys[0]; i++) {
        fill(&m, unsigned_keys[i].type);
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
        sb = repack(buf, len, MUT_REPLACE, unsigned_keys[i].key, V_NEG);
        char what[96];
        snprintf(what, sizeof what, "%s.%s = -1", pf_msg_type_name(unsigned_keys[i].type),
                 unsigned_keys[i].key);
        expect_reject(sb.data, sb.size, 0, "negative", what);
        msgpack_sbuffer_destroy(&sb);
        free(buf);
    }
    /* negative where a signed field allows it: welcome.rank = -1 (not a worker) */
    fill(&m, PF_MSG_WELCOME);
    m.u.welcome.rank = -1;
    pf_msg d;
    char err[256];
    CHECK(pf_msg_encode(&m, &buf, &len) == 0 &&
              pf_msg_decode(buf, len, 0, &d, err, sizeof err) == 0 && d.u.welcome.rank == -1,
          "welcome.rank -1: %s", err);
    pf_msg_clear(&d);
    free(buf);

    /* n and the indices array must agree; n <= PF_MAX_BATCH */
    for (int t = PF_MSG_TICKET; t <= PF_MSG_BATCH; t++) {
        fill(&m, t);
        uint32_t *n = t == PF_MSG_TICKET ? &m.u.ticket.n : &m.u.batch.n;
        *n = 3;
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
        sb = repack(buf, len, MUT_REPLACE, "indices", V_ARRAY);   /* one item, n = 3 */
        expect_reject(sb.data, sb.size, 0, "items", "n != length of indices");
        msgpack_sbuffer_destroy(&sb);
        sb = repack(buf, len, MUT_REPLACE, "n", V_BIGINT);
        expect_reject(sb.data, sb.size, 0, "range", "n = 2^64-1");
        msgpack_sbuffer_destroy(&sb);
        free(buf);

        /* PF_MAX_BATCH + 1 indices with n = PF_MAX_BATCH + 1, hand-built */
        *n = 1;
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
        sb = repack_array(buf, len, "indices", PF_MAX_BATCH + 1, 0, PF_MAX_BATCH + 1);
        expect_reject(sb.data, sb.size, 0, NULL, "PF_MAX_BATCH + 1 indices");
        msgpack_sbuffer_destroy(&sb);
        free(buf);

        /* a negative index, an index over 32 bits */
        fill(&m, t);
        CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
        for (int bad = 1; bad <= 2; bad++) {
            sb = repack_array(buf, len, "indices", *n, bad, -1);
            expect_reject(sb.data, sb.size, 0, "indices[1]",
                          bad == 1 ? "negative index" : "index over 32 bits");
            msgpack_sbuffer_destroy(&sb);
        }
        free(buf);
    }

    /* batch.skipped: every length checked against PF_MAX_BATCH, alone and with n */
    fill(&m, PF_MSG_BATCH);
    m.u.batch.n = 1;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
    sb = repack_array(buf, len, "skipped", PF_MAX_BATCH + 1, 0, -1);
    expect_reject(sb.data, sb.size, 0, "bound", "PF_MAX_BATCH + 1 skipped");
    msgpack_sbuffer_destroy(&sb);
    sb = repack_array(buf, len, "skipped", PF_MAX_BATCH, 0, -1);
    expect_reject(sb.data, sb.size, 0, "out of range", "n 1 + PF_MAX_BATCH skipped");
    msgpack_sbuffer_destroy(&sb);
    sb = repack_array(buf, len, "skipped", PF_MAX_BATCH - 1, 0, -1);
    CHECK(pf_msg_decode(sb.data, sb.size, PF_MSG_BATCH, &m, err, sizeof err) == 0 &&
              m.u.batch.n_skipped == PF_MAX_BATCH - 1 && m.u.batch.skipped[7] == 7,
          "n 1 + PF_MAX_BATCH - 1 skipped accepted: %s", err);
    msgpack_sbuffer_destroy(&sb);
    for (int bad = 1; bad <= 2; bad++) {
        sb = repack_array(buf, len, "skipped", 3, bad, -1);
        expect_reject(sb.data, sb.size, 0, "skipped[1]",
                      bad == 1 ? "negative skipped index" : "skipped index over 32 bits");
        msgpack_sbuffer_destroy(&sb);
    }
    free(buf);
    fill(&m, PF_MSG_BATCH);
    m.u.batch.n = 0;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode a batch whose samples were all skipped");
    CHECK(pf_msg_decode(buf, len, PF_MSG_BATCH, &m, err, sizeof err) == 0 &&
              m.u.batch.n == 0 && m.u.batch.n_skipped == 2,
          "batch with no sample left: %s", err);
    sb = repack_array(buf, len, "skipped", 0, 0, -1);
    expect_reject(sb.data, sb.size, 0, "out of range", "batch with no sample and none skipped");
    msgpack_sbuffer_destroy(&sb);
    free(buf);

    /* credit.n must be 1..PF_MAX_BATCH; stop.reason from its list; hello.role a real role */
    fill(&m, PF_MSG_CREDIT);
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
    sb = repack(buf, len, MUT_REPLACE, "n", V_INT);
    CHECK(pf_msg_decode(sb.data, sb.size, 0, &m, err, sizeof err) == 0 && m.u.credit.n == 5,
          "credit n = 5: %s", err);
    msgpack_sbuffer_destroy(&sb);
    free(buf);
    fill(&m, PF_MSG_STOP);
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
    sb = repack(buf, len, MUT_REPLACE, "reason", V_STR);
    expect_reject(sb.data, sb.size, 0, "reason", "stop.reason 'x'");
    msgpack_sbuffer_destroy(&sb);
    free(buf);
    fill(&m, PF_MSG_HELLO);
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
    sb = repack(buf, len, MUT_REPLACE, "role", V_INT);   /* 5 = PF_ROLE_LOG: valid */
    CHECK(pf_msg_decode(sb.data, sb.size, 0, &m, err, sizeof err) == 0, "role 5: %s", err);
    msgpack_sbuffer_destroy(&sb);
    sb = repack(buf, len, MUT_REPLACE, "role", V_NEG);
    expect_reject(sb.data, sb.size, 0, "role", "hello.role -1");
    msgpack_sbuffer_destroy(&sb);
    free(buf);

    /* a string with a NUL byte inside; the same length without the NUL is fine */
    fill(&m, PF_MSG_START);
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode");
    sb = repack(buf, len, MUT_REPLACE, "ckpt_endpoint", V_NULSTR);
    expect_reject(sb.data, sb.size, 0, "NUL", "string with a NUL byte");
    msgpack_sbuffer_destroy(&sb);
    sb = repack(buf, len, MUT_REPLACE, "ckpt_endpoint", V_STR8);
    CHECK(pf_msg_decode(sb.data, sb.size, PF_MSG_START, &m, err, sizeof err) == 0 &&
              !strcmp(m.u.start.ckpt_endpoint, "tcp_evil"),
          "start with a replaced endpoint: %s", err);
    msgpack_sbuffer_destroy(&sb);
    free(buf);
}

/* Headers that are not maps, and lengths that claim far more than the frame holds. */
static void test_hostile_bytes(void) {
    static const unsigned char map32[] = {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'x', 1, 0, 0};
    expect_reject(map32, sizeof map32, 0, "claims", "map32 of 2^32-1 entries in 10 bytes");
    static const unsigned char arr32[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5};
    expect_reject(arr32, sizeof arr32, 0, "claims", "array32 of 2^32-1 items in 10 bytes");
    static const unsigned char str32[] = {0x81, 0xa4, 't', 'y', 'p', 'e',
                                          0xdb, 0xff, 0xff, 0xff, 0xff, 'a'};
    expect_reject(str32, sizeof str32, 0, "claims", "str32 of 4 GiB in 12 bytes");
    static const unsigned char bin32[] = {0x81, 0xa1, 'a', 0xc6, 0xff, 0xff, 0xff, 0xff, 0};
    expect_reject(bin32, sizeof bin32, 0, "claims", "bin32 of 4 GiB");
    static const unsigned char ext32[] = {0x81, 0xa1, 'a', 0xc9, 0x7f, 0xff, 0xff, 0xff, 1, 0};
    expect_reject(ext32, sizeof ext32, 0, "claims", "ext32 of 2 GiB");
    /* a map16 whose values are map32 headers: each claims 2^32 entries */
    unsigned char nested[64] = {0xde, 0x00, 0x08};
    for (int i = 0; i < 8; i++) {
        nested[3 + i * 6] = 0xa1;
        nested[4 + i * 6] = (unsigned char)('a' + i);
        nested[5 + i * 6] = 0xdf;
        nested[6 + i * 6] = nested[7 + i * 6] = nested[8 + i * 6] = 0xff;
    }
    expect_reject(nested, sizeof nested, 0, "claims", "map of huge maps");
    /* deep nesting: 200 one-element arrays */
    unsigned char deep[201];
    memset(deep, 0x91, 200);
    deep[200] = 0x01;
    expect_reject(deep, sizeof deep, 0, NULL, "200 nested arrays");
    unsigned char deepmap[401];
    for (int i = 0; i < 200; i++) {
        deepmap[2 * i] = 0x81;
        deepmap[2 * i + 1] = 0xa0;      /* key "" */
    }
    deepmap[400] = 0x01;
    expect_reject(deepmap, sizeof deepmap, 0, NULL, "200 nested maps");
    static const unsigned char never[] = {0x81, 0xc1, 0x01};
    expect_reject(never, sizeof never, 0, NULL, "reserved byte 0xc1");
    static const unsigned char notmap[][3] = {{0x93, 1, 2}, {0xa2, 'h', 'i'}, {0xcd, 1, 2}};
    for (int i = 0; i < 3; i++) {
        uint64_t before = pf_proto_rejects(PF_MSG_INVALID);
        expect_reject(notmap[i], i == 1 ? 3 : 3, 0, NULL, "top level not a map");
        CHECK(pf_proto_rejects(PF_MSG_INVALID) == before + 1, "non-map counted as invalid");
    }
    static const unsigned char intkey[] = {0x81, 0x01, 0x02};
    expect_reject(intkey, sizeof intkey, 0, NULL, "int key");
    static const unsigned char emptymap[] = {0x80};
    expect_reject(emptymap, sizeof emptymap, 0, "type", "empty map");
    expect_reject(NULL, 0, 0, "empty", "NULL buffer");
    expect_reject("", 0, 0, "empty", "zero bytes");
}

/* SplitMix64 for reproducible fuzz input. */
static uint64_t fuzz_state = 0x5eed;
static uint64_t fuzz_next(void) {
    uint64_t z = (fuzz_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void test_fuzz(void) {
    unsigned char buf[512];
    int accepted = 0, rejected = 0;
    uint64_t before = total_rejects();
    /* random bytes, with a map-ish first byte half of the time */
    for (int i = 0; i < 4000; i++) {
        size_t len = fuzz_next() % sizeof buf;
        for (size_t j = 0; j < len; j++)
            buf[j] = (unsigned char)fuzz_next();
        if (len && (i & 1))
            buf[0] = (unsigned char)(0x80 | (fuzz_next() & 0x0f));
        pf_msg d;
        char err[256];
        if (pf_msg_decode(buf, len, 0, &d, err, sizeof err) == 0) {
            accepted++;
            pf_msg_clear(&d);
        } else {
            rejected++;
        }
    }
    /* valid encodings of every type with 1..4 random bytes changed */
    for (int i = 0; i < 6000; i++) {
        int t = 1 + (int)(fuzz_next() % (PF_MSG_COUNT - 1));
        pf_msg m;
        fill(&m, t);
        void *enc;
        size_t len;
        if (pf_msg_encode(&m, &enc, &len))
            continue;
        int changes = 1 + (int)(fuzz_next() % 4);
        for (int c = 0; c < changes; c++)
            ((unsigned char *)enc)[fuzz_next() % len] = (unsigned char)fuzz_next();
        pf_msg d;
        char err[256];
        if (pf_msg_decode(enc, len, 0, &d, err, sizeof err) == 0) {
            accepted++;
            CHECK(d.type > 0 && d.type < PF_MSG_COUNT, "accepted message has a type");
            if (d.type == PF_MSG_TICKET)
                CHECK(d.u.ticket.n <= PF_MAX_BATCH, "accepted ticket within bounds");
            pf_msg_clear(&d);
        } else {
            rejected++;
        }
        free(enc);
    }
    CHECK(total_rejects() == before + (uint64_t)rejected, "every fuzz rejection counted");
    CHECK(rejected > 5000, "fuzz mostly rejected (%d rejected, %d accepted)", rejected,
          accepted);
    printf("fuzz: %d rejected, %d accepted (mutations that stayed valid)\n", rejected,
           accepted);
}

/* ---- ZeroMQ framing ------------------------------------------------------------------- */

static void test_pair(void *ctx) {
    void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
    CHECK(zmq_bind(a, "inproc://pf-test-pair") == 0, "bind");
    CHECK(zmq_connect(b, "inproc://pf-test-pair") == 0, "connect");
    pf_msg m;
    fill(&m, PF_MSG_BATCH);
    unsigned char gt[96 * 96 * 3 * 2], lq[48 * 48 * 3 * 2];
    for (size_t i = 0; i < sizeof gt; i++)
        gt[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < sizeof lq; i++)
        lq[i] = (unsigned char)(i * 13);
    pf_frame frames[2] = {{gt, sizeof gt}, {lq, sizeof lq}};
    CHECK(pf_send(a, NULL, &m, frames, 2) == 0, "pf_send batch");
    pf_parts p;
    char err[256];
    CHECK(pf_parts_recv(b, 0, &p, err, sizeof err) == 0, "recv: %s", err);
    CHECK(p.n == 3, "3 parts, got %d", p.n);
    pf_msg d;
    CHECK(pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_BATCH, &d, err,
                        sizeof err) == 0 && same(&m, &d),
          "header: %s", err);
    CHECK(pf_parts_size(&p, 1) == sizeof gt && !memcmp(pf_parts_data(&p, 1), gt, sizeof gt),
          "gt frame");
    CHECK(pf_parts_size(&p, 2) == sizeof lq && !memcmp(pf_parts_data(&p, 2), lq, sizeof lq),
          "lq frame");
    CHECK(pf_parts_data(&p, 3) == NULL && pf_parts_size(&p, 3) == 0, "no part 3");
    CHECK(pf_parts_data(&p, -1) == NULL, "no part -1");
    pf_parts_close(&p);
    CHECK(p.n == 0, "closed");

    /* nothing waiting: EAGAIN */
    CHECK(pf_parts_recv(b, ZMQ_DONTWAIT, &p, err, sizeof err) == -1 && errno == EAGAIN,
          "EAGAIN when empty");

    /* too many parts: dropped whole, counted, and the next message is intact */
    for (int i = 0; i < PF_MAX_FRAMES + 3; i++)
        zmq_send(a, "x", 1, i + 1 < PF_MAX_FRAMES + 3 ? ZMQ_SNDMORE : 0);
    fill(&m, PF_MSG_HEARTBEAT);
    CHECK(pf_send(a, NULL, &m, NULL, 0) == 0, "send heartbeat");
    uint64_t before = pf_proto_rejects(PF_MSG_INVALID);
    CHECK(pf_parts_recv(b, 0, &p, err, sizeof err) == -1 && strstr(err, "parts"),
          "too many parts rejected: '%s'", err);
    CHECK(pf_proto_rejects(PF_MSG_INVALID) == before + 1, "too many parts counted");
    CHECK(pf_parts_recv(b, 0, &p, err, sizeof err) == 0 && p.n == 1, "next message intact");
    CHECK(pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_HEARTBEAT, &d, err,
                        sizeof err) == 0 && d.u.heartbeat.peer_id == 99,
          "heartbeat after the dropped message: %s", err);
    pf_parts_close(&p);
    /* exactly PF_MAX_FRAMES parts is fine */
    for (int i = 0; i < PF_MAX_FRAMES; i++)
        zmq_send(a, "y", 1, i + 1 < PF_MAX_FRAMES ? ZMQ_SNDMORE : 0);
    CHECK(pf_parts_recv(b, 0, &p, err, sizeof err) == 0 && p.n == PF_MAX_FRAMES,
          "PF_MAX_FRAMES parts accepted");
    pf_parts_close(&p);
    /* pf_send refuses more frames than a receiver takes, and a bad struct */
    pf_frame many[PF_MAX_FRAMES];
    for (int i = 0; i < PF_MAX_FRAMES; i++)
        many[i] = (pf_frame){"z", 1};
    CHECK(pf_send(a, NULL, &m, many, PF_MAX_FRAMES) == -1 && errno == EINVAL,
          "pf_send with too many frames");
    m.type = 0;
    CHECK(pf_send(a, NULL, &m, NULL, 0) == -1 && errno == EINVAL, "pf_send invalid struct");
    CHECK(pf_parts_recv(b, ZMQ_DONTWAIT, &p, err, sizeof err) == -1 && errno == EAGAIN,
          "refused sends sent nothing");
    zmq_close(a);
    zmq_close(b);
}

/* pf_send_zc: the frames arrive intact, and free_fn runs exactly once per frame on every
   path: after delivery (inproc: when the receiver closes them; tcp: once written out), for
   empty frames, when the send fails, and when the call is refused. */
static atomic_int zc_calls;

static void zc_free(void *data, void *hint) {
    (void)data;
    CHECK(hint == &zc_calls, "free_fn gets the caller's hint");
    atomic_fetch_add(&zc_calls, 1);
}

static int zc_wait(int want) {
    for (int i = 0; i < 200 && atomic_load(&zc_calls) < want; i++)
        usleep(5000);
    return atomic_load(&zc_calls);
}

/* A batch of n samples (with its gt_plain frame when gt_plain) sent by pf_send_zc: the parts
   received are the header and frames sent, pf_batch_check_frames accepts them, and free_fn
   runs once per frame. */
static void zc_roundtrip(void *tx, void *rx, uint32_t n, int gt_plain, const char *what) {
    static unsigned char gt[4 * 8 * 8 * 3], lq[4 * 4 * 4 * 3], plain[4 * 8 * 8 * 3];
    for (size_t i = 0; i < sizeof gt; i++) {
        gt[i] = (unsigned char)(i * 5 + n);
        plain[i] = (unsigned char)(i * 7 + n);
    }
    for (size_t i = 0; i < sizeof lq; i++)
        lq[i] = (unsigned char)(i * 11 + n);
    pf_msg m, d;
    fill(&m, PF_MSG_BATCH);
    m.u.batch.n = n;
    memset(m.u.batch.indices + n, 0, sizeof m.u.batch.indices - n * sizeof m.u.batch.indices[0]);
    m.u.batch.gt_h = m.u.batch.gt_w = 8;
    m.u.batch.lq_h = m.u.batch.lq_w = 4;
    m.u.batch.gt_plain = (uint32_t)gt_plain;
    size_t gsz = n * 8 * 8 * 3, lsz = n * 4 * 4 * 3;
    pf_frame frames[3] = {{gt, gsz}, {lq, lsz}, {plain, gsz}};
    int nf = gt_plain ? 3 : 2;
    atomic_store(&zc_calls, 0);
    CHECK(pf_send_zc(tx, NULL, &m, frames, nf, zc_free, &zc_calls) == 0, "%s: send: %s", what,
          zmq_strerror(errno));
    pf_parts p;
    char err[256];
    CHECK(pf_parts_recv(rx, 0, &p, err, sizeof err) == 0 && p.n == nf + 1, "%s: %d parts", what,
          nf + 1);
    CHECK(pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_BATCH, &d, err,
                        sizeof err) == 0 && same(&m, &d),
          "%s: header: %s", what, err);
    size_t sizes[PF_MAX_FRAMES];
    for (int i = 0; i < p.n; i++) sizes[i] = pf_parts_size(&p, i);
    CHECK(pf_batch_check_frames(&d.u.batch, 1, p.n, sizes, err, sizeof err) == 0, "%s: %s",
          what, err);
    CHECK(pf_parts_size(&p, 1) == gsz && (!gsz || !memcmp(pf_parts_data(&p, 1), gt, gsz)),
          "%s: gt frame", what);
    CHECK(pf_parts_size(&p, 2) == lsz && (!lsz || !memcmp(pf_parts_data(&p, 2), lq, lsz)),
          "%s: lq frame", what);
    CHECK(!gt_plain || (pf_parts_size(&p, 3) == gsz &&
                        (!gsz || !memcmp(pf_parts_data(&p, 3), plain, gsz))),
          "%s: gt_plain frame", what);
    pf_parts_close(&p);
    CHECK(zc_wait(nf) == nf, "%s: free_fn called %d times, expected %d", what,
          atomic_load(&zc_calls), nf);
    usleep(20000);
    CHECK(atomic_load(&zc_calls) == nf, "%s: free_fn called again", what);
}

static void test_zero_copy(void *ctx) {
    void *a = zmq_socket(ctx, ZMQ_PAIR), *b = zmq_socket(ctx, ZMQ_PAIR);
    CHECK(zmq_bind(a, "inproc://pf-test-zc") == 0, "bind");
    CHECK(zmq_connect(b, "inproc://pf-test-zc") == 0, "connect");
    zc_roundtrip(a, b, 4, 0, "inproc batch");
    zc_roundtrip(a, b, 4, 1, "inproc batch with gt_plain");
    zc_roundtrip(a, b, 0, 0, "inproc batch with empty frames");
    /* tcp: ZeroMQ's I/O thread writes the frames out, then frees them */
    void *push = zmq_socket(ctx, ZMQ_PUSH), *pull = zmq_socket(ctx, ZMQ_PULL);
    int linger = 0;
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    char ep[256];
    size_t eplen = sizeof ep;
    CHECK(zmq_bind(pull, "tcp://127.0.0.1:*") == 0, "bind tcp");
    zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, ep, &eplen);
    CHECK(zmq_connect(push, ep) == 0, "connect tcp");
    zc_roundtrip(push, pull, 3, 0, "tcp batch");
    zc_roundtrip(push, pull, 3, 1, "tcp batch with gt_plain");

    pf_msg m;
    fill(&m, PF_MSG_HEARTBEAT);
    unsigned char x[16] = {0};
    pf_frame many[PF_MAX_FRAMES];
    for (int i = 0; i < PF_MAX_FRAMES; i++)
        many[i] = (pf_frame){x, sizeof x};
    atomic_store(&zc_calls, 0);
    CHECK(pf_send_zc(a, NULL, &m, many, PF_MAX_FRAMES, zc_free, &zc_calls) == -1 &&
              errno == EINVAL,
          "too many frames refused");
    CHECK(atomic_load(&zc_calls) == PF_MAX_FRAMES, "refused: free_fn for every frame (%d)",
          atomic_load(&zc_calls));
    CHECK(pf_send_zc(a, NULL, &m, many, 1, NULL, NULL) == -1 && errno == EINVAL,
          "no free_fn refused");
    /* a send that fails: a PUSH with no peer and no wait */
    void *lonely = zmq_socket(ctx, ZMQ_PUSH);
    int zero = 0;
    zmq_setsockopt(lonely, ZMQ_SNDTIMEO, &zero, sizeof zero);
    zmq_setsockopt(lonely, ZMQ_LINGER, &zero, sizeof zero);
    atomic_store(&zc_calls, 0);
    CHECK(pf_send_zc(lonely, NULL, &m, many, 2, zc_free, &zc_calls) == -1 && errno == EAGAIN,
          "send with no peer fails with EAGAIN (%s)", zmq_strerror(errno));
    CHECK(atomic_load(&zc_calls) == 2, "failed send: free_fn for both frames (%d)",
          atomic_load(&zc_calls));
    zmq_close(lonely);
    zmq_close(push);
    zmq_close(pull);
    zmq_close(a);
    zmq_close(b);
}

static void test_router_dealer(void *ctx) {
    void *router = zmq_socket(ctx, ZMQ_ROUTER), *dealer = zmq_socket(ctx, ZMQ_DEALER);
    CHECK(zmq_setsockopt(dealer, ZMQ_ROUTING_ID, "loader-7", 8) == 0, "routing id");
    CHECK(zmq_bind(router, "inproc://pf-test-ctrl") == 0, "bind");
    CHECK(zmq_connect(dealer, "inproc://pf-test-ctrl") == 0, "connect");
    pf_msg m, d;
    fill(&m, PF_MSG_HELLO);
    m.u.hello.role = PF_ROLE_LOADER;
    CHECK(pf_send(dealer, NULL, &m, NULL, 0) == 0, "dealer sends hello");
    pf_parts p;
    char err[256];
    CHECK(pf_parts_recv(router, 0, &p, err, sizeof err) == 0 && p.n == 2,
          "router gets identity + header (%d parts)", p.n);
    CHECK(pf_parts_size(&p, 0) == 8 && !memcmp(pf_parts_data(&p, 0), "loader-7", 8),
          "identity frame");
    CHECK(pf_msg_decode(pf_parts_data(&p, 1), pf_parts_size(&p, 1), PF_MSG_HELLO, &d, err,
                        sizeof err) == 0 && same(&m, &d),
          "hello: %s", err);
    /* reply through the identity with a welcome and one bulk frame */
    pf_frame id = {pf_parts_data(&p, 0), pf_parts_size(&p, 0)};
    fill(&m, PF_MSG_WELCOME);
    pf_frame extra = {"bulk", 4};
    CHECK(pf_send(router, &id, &m, &extra, 1) == 0, "router replies");
    pf_parts_close(&p);
    CHECK(pf_parts_recv(dealer, 0, &p, err, sizeof err) == 0 && p.n == 2,
          "dealer gets header + frame (%d parts)", p.n);
    CHECK(pf_msg_decode(pf_parts_data(&p, 0), pf_parts_size(&p, 0), PF_MSG_WELCOME, &d, err,
                        sizeof err) == 0 && same(&m, &d),
          "welcome: %s", err);
    pf_msg_clear(&d);
    CHECK(pf_parts_size(&p, 1) == 4 && !memcmp(pf_parts_data(&p, 1), "bulk", 4), "bulk frame");
    pf_parts_close(&p);
    zmq_close(router);
    zmq_close(dealer);
}

/* buf re-packed with one change (repack) is rejected with an error that mentions word. */
static void expect_reject_repacked(const void *buf, size_t len, mut_mode mode, const char *key,
                                   val_kind v, const char *word, const char *what) {
    msgpack_sbuffer sb = repack(buf, len, mode, key, v);
    expect_reject(sb.data, sb.size, 0, word, what);
    msgpack_sbuffer_destroy(&sb);
}

/* A GAN job's ckpt_save (issue 41) names two more frames, net_d's state_dict and optim_d's
   state, by their sizes; a single-network message leaves both off, and its bytes are the
   msgpack map packed here independently, field by field, as the message was before them. */
static void test_ckpt_save_net_d(void) {
    pf_msg m, d;
    void *buf = NULL, *buf1 = NULL;
    size_t len = 0, len1 = 0;
    char err[256];
    fill(&m, PF_MSG_CKPT_SAVE);
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode a ckpt_save without net_d");
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 8);
    msgpack_pack_str_with_body(&pk, "type", 4);
    msgpack_pack_str_with_body(&pk, "ckpt_save", 9);
    msgpack_pack_str_with_body(&pk, "v", 1);
    msgpack_pack_int64(&pk, PF_PROTO_VERSION);
    msgpack_pack_str_with_body(&pk, "iter", 4);
    msgpack_pack_int64(&pk, 300);
    msgpack_pack_str_with_body(&pk, "epoch", 5);
    msgpack_pack_int64(&pk, 1);
    msgpack_pack_str_with_body(&pk, "weights_name", 12);
    msgpack_pack_str_with_body(&pk, "iter_300.safetensors", 20);
    msgpack_pack_str_with_body(&pk, "optim_name", 10);
    msgpack_pack_str_with_body(&pk, "iter_300.optim.safetensors", 26);
    msgpack_pack_str_with_body(&pk, "weights_size", 12);
    msgpack_pack_uint64(&pk, 1u << 20);
    msgpack_pack_str_with_body(&pk, "optim_size", 10);
    msgpack_pack_uint64(&pk, 2u << 20);
    CHECK(len == sb.size && !memcmp(buf, sb.data, len),
          "a ckpt_save without net_d is not the single-network message byte for byte "
          "(%zu vs %zu bytes)", len, sb.size);
    msgpack_sbuffer_destroy(&sb);

    m.u.ckpt_save.net_d_size = 5u << 20;
    m.u.ckpt_save.net_d_optim_size = 3;
    CHECK(pf_msg_encode(&m, &buf1, &len1) == 0, "encode a ckpt_save with net_d");
    /* fixstr "net_d_size" (11) + uint32 (5), fixstr "net_d_optim_size" (17) + fixint (1) */
    CHECK(len1 == len + 34, "net_d's sizes add their keys and values only (%zu -> %zu)", len,
          len1);
    CHECK(pf_msg_decode(buf1, len1, PF_MSG_CKPT_SAVE, &d, err, sizeof err) == 0 &&
              d.u.ckpt_save.net_d_size == 5u << 20 && d.u.ckpt_save.net_d_optim_size == 3 &&
              same(&m, &d), "ckpt_save with net_d: %s", err);
    CHECK(pf_msg_decode(buf, len, PF_MSG_CKPT_SAVE, &d, err, sizeof err) == 0 &&
              d.u.ckpt_save.net_d_size == 0 && d.u.ckpt_save.net_d_optim_size == 0,
          "ckpt_save without net_d: %s", err);
    expect_reject_repacked(buf1, len1, MUT_DROP, "net_d_optim_size", V_INT, "net_d_optim_size",
                           "net_d without optim_d");
    expect_reject_repacked(buf1, len1, MUT_REPLACE, "net_d_size", V_NEG, "net_d_size",
                           "net_d_size -1");
    m.u.ckpt_save.net_d_optim_size = 0;
    void *bad = NULL;
    size_t bad_len = 0;
    CHECK(pf_msg_encode(&m, &bad, &bad_len) == -1 && !bad,
          "encode refuses net_d without optim_d");
    free(buf);
    free(buf1);
}

/* An optional uint field of the batch header (`name`, at *field of m, which has the others at
   0): absent from the header when 0 (14 keys: type, v and the 12 fields a batch had before the
   optional ones), so other batches keep their bytes; `value` round-trips and adds only its key
   (fixstr) and value (positive fixint); a negative value on the wire and `bad` in the struct
   are refused. *buf1 / *len1 get the encoding with `value` (the caller frees it). */
static void check_optional_batch_field(pf_msg *m, uint32_t *field, const char *name,
                                       uint32_t value, uint32_t bad, void **buf1, size_t *len1) {
    pf_msg d;
    void *buf = NULL, *refused = NULL;
    size_t len = 0, len2 = 0;
    char err[256];
    *field = 0;
    CHECK(pf_msg_encode(m, &buf, &len) == 0, "encode a batch without %s", name);
    key_info keys[32];
    int nk = keys_of(buf, len, keys, 32), has = 0;
    for (int k = 0; k < nk; k++) has |= !strcmp(keys[k].key, name);
    CHECK(!has && nk == 14, "%s 0 is not on the wire (%d keys)", name, nk);
    CHECK(pf_msg_decode(buf, len, PF_MSG_BATCH, &d, err, sizeof err) == 0 && same(m, &d),
          "batch without %s: %s", name, err);
    *field = value;
    CHECK(pf_msg_encode(m, buf1, len1) == 0, "encode a batch with %s", name);
    CHECK(*len1 == len + strlen(name) + 2, "%s adds its key and value only (%zu -> %zu bytes)",
          name, len, *len1);
    CHECK(pf_msg_decode(*buf1, *len1, PF_MSG_BATCH, &d, err, sizeof err) == 0 && same(m, &d),
          "batch with %s: %s", name, err);
    expect_reject_repacked(buf, len, MUT_ADD, name, V_NEG, name, "optional field -1");
    *field = bad;
    CHECK(pf_msg_encode(m, &refused, &len2) == -1 && !refused, "encode refuses %s %u", name,
          bad);
    *field = value;
    free(buf);
}

/* batch.gt_plain (data.train.gt_plain, issue 41): absent from the header when 0, so batches of
   jobs without it are the bytes they were before the field; 1 round-trips; anything else is
   refused on both ends. pf_batch_check_frames: the frame sizes against the header, each
   wrong frame named. */
static void test_batch_gt_plain(void) {
    pf_msg m;
    void *buf1 = NULL;
    size_t len1 = 0;
    char err[256];
    fill(&m, PF_MSG_BATCH);
    check_optional_batch_field(&m, &m.u.batch.gt_plain, "gt_plain", 1, 2, &buf1, &len1);
    expect_reject_repacked(buf1, len1, MUT_REPLACE, "gt_plain", V_INT, "gt_plain",   /* 5 */
                           "gt_plain 5");
    free(buf1);

    /* frames: n 8 x 2 frames a sample (a video set), GT 96, LQ 48 */
    fill(&m, PF_MSG_BATCH);
    const pf_msg_batch *b = &m.u.batch;
    size_t gt = 8 * 2 * 96 * 96 * 3, lq = 8 * 2 * 48 * 48 * 3;
    size_t sizes[4] = {100, gt, lq, gt};
    CHECK(pf_batch_check_frames(b, 2, 4, sizes, err, sizeof err) == 0, "frames: %s", err);
    sizes[3] = gt - 3;
    CHECK(pf_batch_check_frames(b, 2, 4, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt_plain frame is 442365 bytes, expected 442368 (n 8 x 2 frames x "
                     "96 x 96 x 3)"), "short gt_plain frame: %s", err);
    sizes[3] = lq;
    CHECK(pf_batch_check_frames(b, 2, 4, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt_plain frame is 110592 bytes"), "gt_plain frame of LQ size: %s",
          err);
    CHECK(pf_batch_check_frames(b, 2, 3, sizes, err, sizeof err) == -1 &&
              strstr(err, "3 parts, expected 4 (header, gt, lq, gt_plain)"),
          "gt_plain frame missing: %s", err);
    m.u.batch.gt_plain = 0;
    sizes[3] = gt;
    CHECK(pf_batch_check_frames(b, 2, 3, sizes, err, sizeof err) == 0, "two frames: %s", err);
    CHECK(pf_batch_check_frames(b, 2, 4, sizes, err, sizeof err) == -1 &&
              strstr(err, "4 parts, expected 3"), "a gt_plain frame the header does not name: %s",
          err);
    sizes[1] = lq;
    CHECK(pf_batch_check_frames(b, 2, 3, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt frame is"), "wrong gt frame: %s", err);
    sizes[1] = gt;
    sizes[2] = gt;
    CHECK(pf_batch_check_frames(b, 1, 3, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt frame is 442368 bytes, expected 221184"),
          "frames per sample counted: %s", err);
}

/* batch.gt_frames (a sliding-window set's one GT frame a sample, issue 42): absent when 0, so
   other batches keep their bytes; 1 round-trips and adds only its key and value; out of range
   refused; pf_batch_check_frames counts gt and gt_plain by it and lq by num_frame. */
static void test_batch_gt_frames(void) {
    pf_msg m;
    void *buf1 = NULL;
    size_t len1 = 0;
    char err[256];
    fill(&m, PF_MSG_BATCH);
    m.u.batch.gt_plain = 0;
    check_optional_batch_field(&m, &m.u.batch.gt_frames, "gt_frames", 1, 1001, &buf1, &len1);
    free(buf1);
    /* n 8, 5 LQ frames a sample, 1 GT frame: GT 96, LQ 48 */
    fill(&m, PF_MSG_BATCH);
    m.u.batch.gt_plain = 0;
    m.u.batch.gt_frames = 1;
    size_t gt = 8 * 1 * 96 * 96 * 3, lq = 8 * 5 * 48 * 48 * 3;
    size_t sizes[4] = {100, gt, lq, gt};
    CHECK(pf_batch_check_frames(&m.u.batch, 5, 3, sizes, err, sizeof err) == 0, "window: %s",
          err);
    m.u.batch.gt_plain = 1;
    CHECK(pf_batch_check_frames(&m.u.batch, 5, 4, sizes, err, sizeof err) == 0,
          "window with gt_plain: %s", err);
    sizes[1] = 5 * gt;
    CHECK(pf_batch_check_frames(&m.u.batch, 5, 4, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt frame is 1105920 bytes, expected 221184 (n 8 x 1 frames x 96 x "
                     "96 x 3)"), "GT of every frame with gt_frames 1: %s", err);
    m.u.batch.gt_frames = 0;   /* the same frames without the field: GT counted by num_frame */
    CHECK(pf_batch_check_frames(&m.u.batch, 5, 4, sizes, err, sizeof err) == -1 &&
              strstr(err, "gt_plain frame is 221184 bytes, expected 1105920"),
          "gt_frames absent: %s", err);
}

/* FNV-1a 64 of len bytes. */
static uint64_t fnv1a(const void *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

/* Event gan_terms / gan[] (a GAN job's train event, docs/protocol.md): absent when 0, and then
   the bytes are those of before the field (fill's event encoded by main at d9f2c4d, the
   commit before gan_terms: 589 bytes, FNV-1a 64 5fd20dd8269df714); present, each term under
   BasicSR's log key exactly when its bit is set; the decoder refuses a term without its bit,
   a bit without its term, a mask over 8 bits, a non-float term, gan_terms outside train. */
static void test_event_gan_terms(void) {
    pf_msg m, d;
    void *buf = NULL, *buf1 = NULL;
    size_t len = 0, len1 = 0;
    char err[256];
    fill(&m, PF_MSG_EVENT);
    for (int i = 0; i < PF_GAN_N_TERMS; i++) m.u.event.gan[i] = 100 + i;   /* not sent */
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode an event without gan_terms");
    CHECK(len == 589 && fnv1a(buf, len) == 0x5fd20dd8269df714ull,
          "an event without gan_terms is not the old encoding (%zu bytes, FNV %016llx)", len,
          (unsigned long long)fnv1a(buf, len));
    CHECK(pf_msg_decode(buf, len, PF_MSG_EVENT, &d, err, sizeof err) == 0 &&
              d.u.event.gan_terms == 0 && d.u.event.gan[0] == 0, "no gan terms: %s", err);
    free(buf);

    /* a generator step without the style term: every bit but l_g_style's */
    static const char *const names[PF_GAN_N_TERMS] = {"l_g_pix", "l_g_percep", "l_g_style",
        "l_g_gan", "l_d_real", "l_d_fake", "out_d_real", "out_d_fake"};
    for (int i = 0; i < PF_GAN_N_TERMS; i++)
        CHECK(!strcmp(pf_gan_term_name(i), names[i]), "term %d named %s", i, pf_gan_term_name(i));
    CHECK(pf_gan_term_name(-1) == NULL && pf_gan_term_name(PF_GAN_N_TERMS) == NULL,
          "term names out of range");
    fill(&m, PF_MSG_EVENT);
    m.u.event.gan_terms = 0xffu & ~(1u << PF_GAN_TERM_L_G_STYLE);
    for (int i = 0; i < PF_GAN_N_TERMS; i++)
        m.u.event.gan[i] = i == PF_GAN_TERM_L_G_STYLE ? 0 : 0.125 * (i + 1) + 1e-9;
    CHECK(pf_msg_encode(&m, &buf, &len) == 0, "encode an event with gan_terms");
    key_info keys[64];
    int nk = keys_of(buf, len, keys, 64), found = 0;
    for (int k = 0; k < nk; k++)
        for (int i = 0; i < PF_GAN_N_TERMS; i++)
            if (!strcmp(keys[k].key, names[i]))
                found |= 1 << i;
    CHECK(found == (int)m.u.event.gan_terms && nk == 2 + 37 + 1 + 7,
          "the set terms (%#x) and gan_terms are on the wire, no other (%d keys)", found, nk);
    CHECK(pf_msg_decode(buf, len, PF_MSG_EVENT, &d, err, sizeof err) == 0 && same(&m, &d),
          "event with gan terms: round trip: %s", err);

    static const struct {
        mut_mode mode;
        const char *key;
        val_kind v;
        const char *word, *what;
    } bad[] = {
        {MUT_DROP, "l_d_fake", V_NIL, "'l_d_fake' missing", "a set term missing"},
        {MUT_ADD, "l_g_style", V_FLOAT, "'l_g_style' present without its bit",
         "a term whose bit is clear"},
        {MUT_REPLACE, "l_g_pix", V_STR, "l_g_pix: expected float", "a term as a string"},
        {MUT_REPLACE, "l_g_gan", V_INT, "l_g_gan: expected float", "a term as an integer"},
        {MUT_REPLACE, "gan_terms", V_BIGINT, "gan_terms", "gan_terms over 32 bits"},
        {MUT_REPLACE, "gan_terms", V_NEG, "gan_terms", "gan_terms negative"},
        {MUT_DROP, "gan_terms", V_NIL, "present without its bit", "terms without gan_terms"},
        {MUT_DUP, "out_d_real", V_NIL, "duplicate key 'out_d_real'", "a term twice"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        msgpack_sbuffer sb = repack(buf, len, bad[k].mode, bad[k].key, bad[k].v);
        expect_reject(sb.data, sb.size, 0, bad[k].word, bad[k].what);
        msgpack_sbuffer_destroy(&sb);
    }
    free(buf);

    /* the encoder: a mask over 8 bits, or gan_terms in another kind of event */
    m.u.event.gan_terms = 1u << PF_GAN_N_TERMS;
    CHECK(pf_msg_encode(&m, &buf1, &len1) == -1 && !buf1, "encode refuses gan_terms 0x100");
    m.u.event.gan_terms = 1;
    strcpy(m.u.event.kind, "eval");
    CHECK(pf_msg_encode(&m, &buf1, &len1) == -1 && !buf1, "encode refuses gan_terms in eval");
    /* the decoder: the same eval event with gan_terms 5 (V_INT), l_g_pix and l_g_style added
       by hand: the terms agree with the mask, the kind does not */
    m.u.event.gan_terms = 0;
    CHECK(pf_msg_encode(&m, &buf1, &len1) == 0, "encode an eval event");
    msgpack_sbuffer sb = repack(buf1, len1, MUT_ADD, "gan_terms", V_INT);
    msgpack_sbuffer sb2 = repack(sb.data, sb.size, MUT_ADD, "l_g_pix", V_FLOAT);
    msgpack_sbuffer sb3 = repack(sb2.data, sb2.size, MUT_ADD, "l_g_style", V_FLOAT);
    expect_reject(sb3.data, sb3.size, 0, "train events only", "gan_terms in an eval event");
    msgpack_sbuffer_destroy(&sb);
    msgpack_sbuffer_destroy(&sb2);
    msgpack_sbuffer_destroy(&sb3);
    free(buf1);
}

int main(void) {
    test_names();
    test_round_trip();
    test_batch_gt_plain();
    test_batch_gt_frames();
    test_ckpt_save_net_d();
    test_event_gan_terms();
    test_encoder_bounds();
    test_hostile_per_type();
    test_field_rules();
    test_hostile_bytes();
    test_fuzz();
    void *ctx = zmq_ctx_new();
    test_pair(ctx);
    test_zero_copy(ctx);
    test_router_dealer(ctx);
    zmq_ctx_term(ctx);
    return pf_test_end("test_proto");
}
