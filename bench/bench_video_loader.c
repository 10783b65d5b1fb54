/*  bench_video_loader — what one loader thread delivers from a video training set, in
    samples (clips of num_frame frames, GT patch and LQ patch) per second, single-threaded as
    a loader with loader_threads 1 runs: pf_dataset_sample of the config's data.train for
    samples drawn as the sampler draws them (every index of an epoch in a seeded order).

    Two cache settings: `cold` (cache_mb 0: every frame of every sample is read from its video
    file again: seek, decode, RGB conversion, MATLAB-bicubic LQ) and `warm` (the config's
    cache, after one pass over every frame: crops and flips only). bench/video/loader_ratio.sh
    runs it beside bench/video/torch_video_loader.py, a PyTorch DataLoader reading the same
    clips. Usage: bench_video_loader [CONFIG] [SAMPLES] (configs/demo_video.yaml, 200). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/dataset.h"
#include "common/rng.h"
#include "common/util.h"

static int run(pf_dataset *ds, const pf_config *cfg, int n, const char *what) {
    size_t gt = pf_video_sample_gt_bytes(ds->video), lq = pf_video_sample_lq_bytes(ds->video);
    uint8_t *g = malloc(gt), *l = malloc(lq);
    char err[1024];
    pf_rng r = pf_rng_make(cfg->seed, 7, 0);
    double t0 = pf_now();
    for (int i = 0; i < n; i++) {
        uint32_t index = (uint32_t)pf_rng_below(&r, ds->len);
        if (pf_dataset_sample(ds, index, cfg->seed, 0, g, l, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
    }
    double dt = pf_now() - t0;
    printf("pixflow %-4s %d samples of %d frames (GT %d x %d): %.1f samples/s (%.1f frames/s), "
           "1 thread\n", what, n, ds->frames, ds->gt_patch, ds->gt_patch, n / dt,
           n * ds->frames / dt);
    free(g);
    free(l);
    return 0;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "configs/demo_video.yaml";
    int n = argc > 2 ? atoi(argv[2]) : 200;
    static pf_config cfg;
    char err[2048];
    if (pf_config_load(&cfg, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pf_dataset ds;
    if (pf_dataset_open(&ds, &cfg.train, "data.train", cfg.scale, cfg.train.gt_patch_size, err,
                        sizeof err) != 0 || !ds.video) {
        fprintf(stderr, "%s\n", ds.video ? err : "data.train is not a video set");
        return 1;
    }
    pf_dataset_set_cache_limit(&ds, 0);
    if (run(&ds, &cfg, n, "cold")) return 1;
    pf_dataset_set_cache_limit(&ds, (size_t)cfg.cache_mb << 20);
    double t0 = pf_now();
    for (int c = 0; c < ds.video->n_clips; c++)       /* one pass over every frame */
        for (int t = 0; t < ds.video->clips[c].n_frames; t++) {
            const pf_image *gt, *lq;
            if (pf_video_dataset_frame(ds.video, c, t, &gt, &lq, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            pf_video_dataset_release(ds.video, c, t);
        }
    printf("pixflow first touch of %u frames (decode + LQ, in order): %.1f s\n",
           ds.video->n_frames, pf_now() - t0);
    if (run(&ds, &cfg, n * 10, "warm")) return 1;
    pf_dataset_close(&ds);
    return 0;
}
