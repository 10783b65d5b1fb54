/*  gen_msg_seeds — writes the seed corpus of fuzz_msg: one valid header of every message type
    (pf_msg_encode of a filled struct), prefixed with the type byte fuzz_msg reads as `expect`,
    plus the same headers with byte 0 = 0 (accept any type) for a few. Run once by hand when
    a schema changes:
        cc -std=c11 -D_GNU_SOURCE -I. tests/fuzz/gen_msg_seeds.c proto/codec.c \
           $(pkg-config --cflags --libs msgpack) -o /tmp/gen && /tmp/gen tests/fuzz/corpus/msg
*/
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pf_msg m;

static void put(const char *dir, int expect, const char *suffix) {
    void *buf;
    size_t len;
    if (pf_msg_encode(&m, &buf, &len) != 0) {
        fprintf(stderr, "gen_msg_seeds: %s does not encode\n", pf_msg_type_name(m.type));
        exit(1);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s%s", dir, pf_msg_type_name(m.type), suffix);
    FILE *f = fopen(path, "wb");
    unsigned char e = (unsigned char)expect;
    if (!f || fwrite(&e, 1, 1, f) != 1 || fwrite(buf, 1, len, f) != len || fclose(f)) {
        perror(path);
        exit(1);
    }
    free(buf);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gen_msg_seeds DIR\n");
        return 2;
    }
    static char yaml[] = "model:\n  type: SRCNN\n  scale: 2\n";
    for (int t = 1; t < PF_MSG_COUNT; t++) {
        memset(&m, 0, sizeof m);
        m.type = t;
        switch (t) {
        case PF_MSG_HELLO:
            m.u.hello = (pf_msg_hello){PF_ROLE_WORKER, "worker", 4242, "host1", "tcp://10.0.0.2:5601"};
            break;
        case PF_MSG_WELCOME:
            m.u.welcome = (pf_msg_welcome){7, 0, 2, 500, "tcp://10.0.0.1:5556", "tcp://10.0.0.1:5557",
                                           yaml, sizeof yaml - 1};
            break;
        case PF_MSG_START:
            m.u.start = (pf_msg_start){"tcp://10.0.0.3:5700", 300000, 1000};
            break;
        case PF_MSG_HEARTBEAT: m.u.heartbeat.peer_id = 3; break;
        case PF_MSG_CREDIT: m.u.credit = (pf_msg_credit){1, 4, 120}; break;
        case PF_MSG_TICKET:
            m.u.ticket.ticket_id = 241; m.u.ticket.epoch = 1; m.u.ticket.iter = 120;
            m.u.ticket.rank = 1; m.u.ticket.n = 4;
            for (int i = 0; i < 4; i++) m.u.ticket.indices[i] = 100 + 7 * i;
            strcpy(m.u.ticket.endpoint, "tcp://10.0.0.2:5601");
            break;
        case PF_MSG_BATCH:
            m.u.batch.ticket_id = 241; m.u.batch.epoch = 1; m.u.batch.iter = 120;
            m.u.batch.rank = 1; m.u.batch.n = 3;
            for (int i = 0; i < 3; i++) m.u.batch.indices[i] = 100 + 7 * i;
            m.u.batch.gt_h = m.u.batch.gt_w = 96; m.u.batch.lq_h = m.u.batch.lq_w = 48;
            m.u.batch.loader_id = 5; m.u.batch.n_skipped = 1; m.u.batch.skipped[0] = 121;
            break;
        case PF_MSG_ACK: m.u.ack = (pf_msg_ack){241, 1}; break;
        case PF_MSG_EVENT:
            strcpy(m.u.event.kind, "train"); strcpy(m.u.event.source, "worker0");
            m.u.event.seq = 9; m.u.event.iter = 120; m.u.event.total_iters = 1000;
            m.u.event.loss = 0.03125; m.u.event.lr = 1e-4; m.u.event.time = 0.25;
            m.u.event.psnr = 30.5; m.u.event.ssim = 0.9; strcpy(m.u.event.path, "/tmp/x.png");
            strcpy(m.u.event.text, "ok"); strcpy(m.u.event.host, "host1");
            m.u.event.hit_rate = 0.5; m.u.event.sample = 3;
            m.u.event.psnr_inf = 2; m.u.event.psnr_bicubic_inf = 3;
            m.u.event.psnr_inf_items = 1; m.u.event.psnr_bicubic_inf_items = 1;
            break;
        case PF_MSG_CKPT_SAVE:
            m.u.ckpt_save = (pf_msg_ckpt_save){100, 1, "iter_100.safetensors",
                                               "iter_100.optim.safetensors", 1024, 2048};
            break;
        case PF_MSG_CKPT_ACK:
            m.u.ckpt_ack.iter = 100; m.u.ckpt_ack.ok = 1;
            strcpy(m.u.ckpt_ack.path, "work/checkpoints/iter_100.safetensors");
            break;
        case PF_MSG_STOP: strcpy(m.u.stop.reason, "interrupt"); strcpy(m.u.stop.text, "SIGINT"); break;
        case PF_MSG_DONE: m.u.done.rank = 0; m.u.done.iter = 1000; strcpy(m.u.done.text, "done"); break;
        case PF_MSG_KV_SET: strcpy(m.u.kv_set.key, "gloo/0"); m.u.kv_set.size = 64; break;
        case PF_MSG_KV_GET: strcpy(m.u.kv_get.key, "gloo/0"); break;
        case PF_MSG_KV_VALUE: strcpy(m.u.kv_value.key, "gloo/0"); m.u.kv_value.found = 1; m.u.kv_value.size = 64; break;
        case PF_MSG_SNAPSHOT: m.u.snapshot.max_train = 240; break;
        case PF_MSG_READY: m.u.ready.peer_id = 3; break;
        case PF_MSG_SNAPSHOT_END:
            m.u.snapshot_end.events = 5; m.u.snapshot_end.total_iters = 1000;
            m.u.snapshot_end.iters_per_epoch = 10; m.u.snapshot_end.world_size = 1;
            m.u.snapshot_end.batch = 16; strcpy(m.u.snapshot_end.phase, "running");
            strcpy(m.u.snapshot_end.work_dir, "work_dirs/demo"); strcpy(m.u.snapshot_end.model, "EDSR");
            break;
        case PF_MSG_VISUAL:
            strcpy(m.u.visual.source, "worker0"); strcpy(m.u.visual.tag, "train");
            m.u.visual.iter = 10; m.u.visual.n = 2; m.u.visual.gt_h = m.u.visual.gt_w = 8;
            m.u.visual.lq_h = m.u.visual.lq_w = 4;
            break;
        }
        put(argv[1], t, "");
        if (t == PF_MSG_WELCOME || t == PF_MSG_BATCH || t == PF_MSG_EVENT)
            put(argv[1], 0, "_any");
    }
    return 0;
}
