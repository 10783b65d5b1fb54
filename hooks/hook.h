/*  hook — the loop every hook service shares: join the job, subscribe to the event kinds it
    wants, optionally serve one socket of its own (the checkpoint hook's ROUTER), and on STOP
    finish its work, answer DONE and exit. The loop is a reactor (runtime/reactor.h): the events
    SUB, ctrl and the own socket are its readers, a 200 ms tick watches the coordinator. A hook supplies callbacks; `pixflow hook NAME
    --connect ADDR` picks the hook by name.
*/
#ifndef PF_HOOK_H
#define PF_HOOK_H
#include <stddef.h>
#include <stdint.h>

#include "runtime/client.h"
#include "proto/proto.h"

typedef struct pf_hook pf_hook;

typedef struct {
    int role;                           /* pf_role */
    const char *name;                   /* "checkpoint", "eval", "log" */
    const char *const *kinds;           /* event kinds to subscribe to, NULL-terminated; NULL =
                                           every event */
    /* Bind the hook's own socket before joining; return its endpoint in `endpoint` (or leave
       it empty). Optional. */
    int (*bind)(pf_hook *h, char *endpoint, size_t eplen, char *err, size_t errlen);
    /* After WELCOME: the config is in h->client.cfg. */
    int (*start)(pf_hook *h, char *err, size_t errlen);
    int (*event)(pf_hook *h, const pf_msg_event *ev, char *err, size_t errlen);
    /* A PF_MSG_VISUAL (topic "visual") whose frames passed pf_visual_check: lq n x lq_h x lq_w
       x 3, output and gt n x gt_h x gt_w x 3, uint8 NHWC RGB. Optional: without it, visual
       messages are ignored. A malformed one is logged and dropped before reaching here. */
    int (*visual)(pf_hook *h, const pf_msg_visual *v, const uint8_t *lq, const uint8_t *output,
                  const uint8_t *gt, char *err, size_t errlen);
    /* h->own is readable. */
    int (*own_ready)(pf_hook *h, char *err, size_t errlen);
    /* STOP received ("finish" | "interrupt" | "abort"): finish up before DONE. */
    int (*stop)(pf_hook *h, const char *reason, char *err, size_t errlen);
    /* After stop: 1 while the hook still expects events before it may leave (the eval hook's
       instance 0 gathering the other instances' last parts); events go on to `event`
       meanwhile, and this is asked again after each and every 200 ms. It decides when to
       give up. Optional: without it the hook leaves after stop. */
    int (*waiting)(pf_hook *h);
    void (*destroy)(pf_hook *h);
} pf_hook_ops;

struct pf_hook {
    pf_client client;
    void *zctx;
    void *sub;                          /* events SUB */
    void *own;                          /* the hook's own socket, or NULL */
    void *state;                        /* the hook's data */
    const pf_hook_ops *ops;
    char pending_stop[PF_MAX_NAME];     /* a STOP reason taken by pf_hook_stop_requested */
    int instance, instances;            /* --instance i/N: this service's share (0/1 alone) */
};

/* For long work inside a callback: 1 if the coordinator has asked to interrupt or abort (the
   STOP is kept and handled by the loop once the callback returns). */
int pf_hook_stop_requested(pf_hook *h);

/* Run a hook to completion. argv: --connect ADDR [--bind tcp://HOST:PORT] [--instance I/N]
   (instance I of N services of the same kind; named NAME for I = 0, NAMEI otherwise). Returns the exit
   status: 0 after a clean STOP (or a refusal because the job was already stopping), 128 + N
   when signal N came before the job started (before READY), 1 on failure (the coordinator is
   told why). Once the job runs, a signal is noted and the hook goes on until its STOP; a
   second signal ends it with 1. */
int pf_hook_run(const pf_hook_ops *ops, int argc, char **argv);

/* Per-hook entry points (argv excludes "hook NAME"). */
int pf_hook_checkpoint_main(int argc, char **argv);
int pf_hook_eval_main(int argc, char **argv);
int pf_hook_log_main(int argc, char **argv);
int pf_hook_visual_main(int argc, char **argv);

/* The --bind value given on the command line, or "tcp://127.0.0.1:*". */
const char *pf_hook_bind_arg(void);
/* The checkpoint hook's check of a CKPT_SAVE (hooks/checkpoint.c) before it writes anything:
   p is the message as the ROUTER received it (identity, header, then the payload frames), c
   its decoded header. The payloads must be 2 (weights, optimiser) or, with c->net_d_size, 4
   (and net_d's state_dict, optim_d's state), each of its header's size and each parsed as
   safetensors; the names iter_<digits>.safetensors and .optim.safetensors. Returns 0, or -1
   with why ("frames do not match the header sizes", "bad checkpoint file names ...",
   "refused a corrupt checkpoint: <file name>: <the parser's reason>"). */
int pf_hook_ckpt_check(const pf_parts *p, const pf_msg_ckpt_save *c, char *why,
                       size_t whylen);
#endif
