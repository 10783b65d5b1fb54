/*  A GAN job's terms in the train event (proto.h gan_terms / gan[], docs/gan.md) through the
    two consumers that have no job-level test of their own:
    A. hooks/event_json (`pixflow monitor --json`, /api/events): the members l_g_pix ...
       out_d_fake exactly for the bits set, with the event's values; a train event without
       gan_terms has the seven members it had before and no term.
    B. coordinator/snapshot (the replay for a monitor that joins late): the compact train
       history gives back each event's gan_terms and terms, also for the events that are no
       longer the latest of their source. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coordinator/snapshot.h"
#include "hooks/event_json.h"
#include "pf_test.h"

#define D_BITS 0xf0u                    /* l_d_real, l_d_fake, out_d_real, out_d_fake */

/* A train event of iteration it carrying the terms of mask, term i = it + 0.125 i. */
static pf_msg_event train_event(int64_t it, uint32_t mask) {
    pf_msg_event ev;
    memset(&ev, 0, sizeof ev);
    snprintf(ev.kind, sizeof ev.kind, "train");
    snprintf(ev.source, sizeof ev.source, "worker0");
    ev.seq = (uint64_t)it;
    ev.iter = it;
    ev.loss = 1.0 / (double)it;
    ev.gan_terms = mask;
    for (int i = 0; i < PF_GAN_N_TERMS; i++)
        if (mask >> i & 1) ev.gan[i] = (double)it + 0.125 * i;
    return ev;
}

static void test_json(void) {
    static const uint32_t masks[] = { D_BITS, 0xffu & ~(1u << PF_GAN_TERM_L_G_STYLE), 0 };
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
        pf_msg_event ev = train_event(7, masks[k]);
        cJSON *o = cJSON_CreateObject();
        pf_event_json_add(o, &ev);
        int members = cJSON_GetArraySize(o), terms = 0;
        for (int i = 0; i < PF_GAN_N_TERMS; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, pf_gan_term_name(i));
            int want = masks[k] >> i & 1;
            terms += v != NULL;
            CHECK(!v == !want, "mask %#x: %s %s", masks[k], pf_gan_term_name(i),
                  v ? "present without its bit" : "missing");
            if (v && want)
                CHECK(cJSON_IsNumber(v) && v->valuedouble == 7 + 0.125 * i,
                      "mask %#x: %s = %.17g", masks[k], pf_gan_term_name(i), v->valuedouble);
        }
        CHECK(members == 7 + terms, "mask %#x: %d members, the train event's 7 + %d terms",
              masks[k], members, terms);
        cJSON_Delete(o);
    }
}

typedef struct {
    int n;
    pf_msg_event got[8];
} replay_ctx;

static void keep(const pf_msg_event *ev, void *arg) {
    replay_ctx *c = arg;
    if (c->n < 8) c->got[c->n++] = *ev;
}

static void test_snapshot(void) {
    static const uint32_t masks[] = { D_BITS, 0xffu & ~(1u << PF_GAN_TERM_L_G_STYLE), D_BITS, 0 };
    pf_snapshot *s = pf_snapshot_new();
    CHECK(s != NULL, "pf_snapshot_new");
    if (!s) return;
    for (int it = 1; it <= 4; it++) {
        pf_msg_event ev = train_event(it, masks[it - 1]);
        pf_snapshot_add(s, &ev);
    }
    replay_ctx c = { 0 };
    uint32_t n = pf_snapshot_replay(s, PF_MAX_SNAPSHOT_TRAIN, keep, &c);
    CHECK(n == 4 && c.n == 4, "replayed %u events, expected the 4 train events", n);
    for (int k = 0; k < c.n && k < 4; k++) {
        const pf_msg_event *ev = &c.got[k];
        pf_msg_event want = train_event(k + 1, masks[k]);
        CHECK(ev->iter == k + 1 && ev->gan_terms == want.gan_terms &&
                  !memcmp(ev->gan, want.gan, sizeof ev->gan),
              "replayed event %d: iter %lld, gan_terms %#x (expected %#x), l_d_real %.17g",
              k, (long long)ev->iter, ev->gan_terms, want.gan_terms,
              ev->gan[PF_GAN_TERM_L_D_REAL]);
    }
    pf_snapshot_free(s);
}

int main(void) {
    test_json();
    test_snapshot();
    return pf_test_end("test_event_gan");
}
