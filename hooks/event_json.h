/*  event_json — the fields of an event as JSON members, named as in metrics.jsonl
    (docs/architecture.md): shared by the log hook and `pixflow monitor --json`. */
#ifndef PF_EVENT_JSON_H
#define PF_EVENT_JSON_H
#include <cjson/cJSON.h>

#include "proto/proto.h"

/* Add to `o` the members that mean something for ev->kind: train (iter, epoch, loss, lr, time,
   data_time, skipped — raw, one step; a GAN job's also its terms, proto.h gan_terms, under
   BasicSR's keys l_g_pix ... out_d_fake), eval (iter, psnr, ssim, psnr_bicubic, ssim_bicubic,
   psnr_inf, psnr_bicubic_inf, best_psnr, best_iter, checkpoint), loader (host, interval, patches_per_s, bytes_per_s,
   hit_rate, cache_bytes, queue_depth, skipped), skip (iter, epoch, sample, path, host, text),
   checkpoint (iter, path), worker (iter, rank, host, pid, device, mem_bytes), peer (name, role,
   rank, host, pid, state); any other kind: text. Not kind, source or seq. */
void pf_event_json_add(cJSON *o, const pf_msg_event *ev);
#endif
