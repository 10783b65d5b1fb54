/*  test_ckpt_hook — the checkpoint hook's check of a CKPT_SAVE before it writes anything
    (pf_hook_ckpt_check, hooks/checkpoint.c), with the messages as a worker sends them
    (pf_send over an inproc DEALER to a ROUTER, as the hook receives them):

      - a plain job's checkpoint (weights, optimiser) and a GAN job's (issue 41: and net_d's
        state_dict, optim_d's state) are accepted;
      - a GAN job's with net_d's frame truncated, or optim_d's frame not safetensors, is
        refused as corrupt, the message naming the net_d file;
      - a frame count or size other than the header's, and file names that could leave the
        folder, are refused.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/safetensors.h"
#include "hooks/hook.h"
#include "pf_test.h"

/* A small safetensors image of one tensor `name` (n floats 0.5 i), malloc'd. */
static void *image(const char *name, int n, size_t *len) {
    float v[16];
    for (int i = 0; i < n; i++) v[i] = 0.5f * (float)i;
    pf_st_tensor t = { name, v, 1, { n } };
    void *buf = NULL;
    char err[256];
    if (pf_safetensors_serialize(&t, 1, NULL, 0, &buf, len, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    return buf;
}

/* Send c with frames f[0..nf) from dealer, receive it at router, check it; returns the check's
   result, why the reason. */
static int sent_and_checked(void *dealer, void *router, const pf_msg_ckpt_save *c,
                            const pf_frame *f, int nf, char *why, size_t whylen) {
    pf_msg m = { .type = PF_MSG_CKPT_SAVE };
    m.u.ckpt_save = *c;
    pf_parts p;
    char err[256];
    why[0] = '\0';
    if (pf_send(dealer, NULL, &m, f, nf) != 0 || pf_parts_recv(router, 0, &p, err,
                                                                 sizeof err) != 0) {
        CHECK(0, "send / receive: %s", zmq_strerror(zmq_errno()));
        return -2;
    }
    int rc = pf_hook_ckpt_check(&p, c, why, whylen);
    pf_parts_close(&p);
    return rc;
}

int main(void) {
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER), *dealer = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    CHECK(zmq_bind(router, "inproc://ckpt") == 0 && zmq_connect(dealer, "inproc://ckpt") == 0,
          "inproc sockets");
    size_t len[4];
    void *buf[4] = { image("conv.weight", 4, &len[0]), image("conv.weight.exp_avg", 4, &len[1]),
                     image("conv1.weight_u", 8, &len[2]),
                     image("conv1.weight_orig.exp_avg", 8, &len[3]) };
    pf_frame f[4];
    for (int i = 0; i < 4; i++) f[i] = (pf_frame){ buf[i], len[i] };
    pf_msg_ckpt_save c = { .iter = 12, .epoch = 1, .weights_name = "iter_12.safetensors",
                           .optim_name = "iter_12.optim.safetensors",
                           .weights_size = len[0], .optim_size = len[1] };
    char why[1024];

    CHECK(sent_and_checked(dealer, router, &c, f, 2, why, sizeof why) == 0,
          "a plain job's checkpoint: %s", why);
    c.net_d_size = len[2];
    c.net_d_optim_size = len[3];
    CHECK(sent_and_checked(dealer, router, &c, f, 4, why, sizeof why) == 0,
          "a GAN job's checkpoint: %s", why);

    /* net_d's frame cut short (the header says so too): corrupt, named */
    c.net_d_size = len[2] - 4;
    f[2].size = len[2] - 4;
    CHECK(sent_and_checked(dealer, router, &c, f, 4, why, sizeof why) == -1 &&
              strstr(why, "refused a corrupt checkpoint: iter_12.net_d.safetensors"),
          "truncated net_d: '%s'", why);
    c.net_d_size = len[2];
    f[2].size = len[2];
    /* optim_d's frame not safetensors at all */
    char junk[64];
    memset(junk, 'x', sizeof junk);
    f[3] = (pf_frame){ junk, sizeof junk };
    c.net_d_optim_size = sizeof junk;
    CHECK(sent_and_checked(dealer, router, &c, f, 4, why, sizeof why) == -1 &&
              strstr(why, "refused a corrupt checkpoint: iter_12.net_d.optim.safetensors"),
          "junk optim_d: '%s'", why);
    f[3] = (pf_frame){ buf[3], len[3] };
    c.net_d_optim_size = len[3];

    /* frames the header does not announce, or sizes other than its */
    CHECK(sent_and_checked(dealer, router, &c, f, 2, why, sizeof why) == -1 &&
              strstr(why, "frames do not match the header sizes"),
          "net_d announced, not sent: '%s'", why);
    c.net_d_size = c.net_d_optim_size = 0;
    CHECK(sent_and_checked(dealer, router, &c, f, 4, why, sizeof why) == -1 &&
              strstr(why, "frames do not match the header sizes"),
          "net_d sent, not announced: '%s'", why);
    c.optim_size = len[1] + 1;
    CHECK(sent_and_checked(dealer, router, &c, f, 2, why, sizeof why) == -1 &&
              strstr(why, "frames do not match the header sizes"), "optimiser size: '%s'", why);
    c.optim_size = len[1];
    snprintf(c.weights_name, sizeof c.weights_name, "../iter_12.safetensors");
    CHECK(sent_and_checked(dealer, router, &c, f, 2, why, sizeof why) == -1 &&
              strstr(why, "bad checkpoint file names"), "a name outside the folder: '%s'", why);

    for (int i = 0; i < 4; i++) free(buf[i]);
    zmq_close(dealer);
    zmq_close(router);
    zmq_ctx_term(ctx);
    return pf_test_end("test_ckpt_hook");
}
