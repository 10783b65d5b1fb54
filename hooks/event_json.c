/*  event_json — event fields as JSON members (event_json.h). */
#include "hooks/event_json.h"

#include <string.h>

static void num(cJSON *o, const char *k, double v) {
    cJSON_AddNumberToObject(o, k, v);
}

void pf_event_json_add(cJSON *o, const pf_msg_event *ev) {
    const char *k = ev->kind;
    if (!strcmp(k, "train")) {
        num(o, "iter", (double)ev->iter);
        num(o, "epoch", (double)ev->epoch);
        num(o, "loss", ev->loss);
        num(o, "lr", ev->lr);
        num(o, "time", ev->time);
        num(o, "data_time", ev->data_time);
        num(o, "skipped", (double)ev->count);
        for (int i = 0; i < PF_GAN_N_TERMS; i++)       /* a GAN job's terms, those it has */
            if (ev->gan_terms >> i & 1) num(o, pf_gan_term_name(i), ev->gan[i]);
    } else if (!strcmp(k, "eval")) {
        num(o, "iter", (double)ev->iter);
        num(o, "psnr", ev->psnr);
        num(o, "ssim", ev->ssim);
        num(o, "psnr_bicubic", ev->psnr_bicubic);
        num(o, "ssim_bicubic", ev->ssim_bicubic);
        num(o, "psnr_inf", (double)ev->psnr_inf);
        num(o, "psnr_bicubic_inf", (double)ev->psnr_bicubic_inf);
        num(o, "best_psnr", ev->best_psnr);
        num(o, "best_iter", (double)ev->best_iter);
        cJSON_AddStringToObject(o, "checkpoint", ev->path);
    } else if (!strcmp(k, "loader")) {
        cJSON_AddStringToObject(o, "host", ev->host);
        num(o, "interval", ev->time);
        num(o, "patches_per_s", ev->patches_per_s);
        num(o, "bytes_per_s", ev->bytes_per_s);
        num(o, "hit_rate", ev->hit_rate);
        num(o, "cache_bytes", (double)ev->cache_bytes);
        num(o, "queue_depth", (double)ev->queue_depth);
        num(o, "skipped", (double)ev->count);
    } else if (!strcmp(k, "skip")) {
        num(o, "iter", (double)ev->iter);
        num(o, "epoch", (double)ev->epoch);
        num(o, "sample", (double)ev->sample);
        cJSON_AddStringToObject(o, "path", ev->path);
        cJSON_AddStringToObject(o, "host", ev->host);
        cJSON_AddStringToObject(o, "text", ev->text);
    } else if (!strcmp(k, "checkpoint")) {
        num(o, "iter", (double)ev->iter);
        cJSON_AddStringToObject(o, "path", ev->path);
    } else if (!strcmp(k, "worker")) {
        num(o, "iter", (double)ev->iter);
        num(o, "rank", ev->rank);
        cJSON_AddStringToObject(o, "host", ev->host);
        num(o, "pid", (double)ev->pid);
        cJSON_AddStringToObject(o, "device", ev->device);
        num(o, "mem_bytes", (double)ev->mem_bytes);
    } else if (!strcmp(k, "peer")) {
        cJSON_AddStringToObject(o, "name", ev->text);
        cJSON_AddStringToObject(o, "role", ev->role);
        num(o, "rank", ev->rank);
        cJSON_AddStringToObject(o, "host", ev->host);
        num(o, "pid", (double)ev->pid);
        cJSON_AddStringToObject(o, "state", ev->state);
    } else {
        cJSON_AddStringToObject(o, "text", ev->text);
    }
}
