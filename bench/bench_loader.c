/*  bench_loader — what one loader process can deliver, in patches per second, on the demo data.

    Measures, single-threaded as a loader runs: (1) first touch of every training image: PNG
    decode + mod-crop + MATLAB-bicubic LQ (done once per image, then cached); (2) the steady
    state: paired random crop + flips of GT patches of data.train.gt_patch_size, the work per
    sample once images are cached; (3) whole batches of samples_per_gpu including the msgpack
    header encode. Usage: bench_loader [CONFIG] (default configs/demo.yaml). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/dataset.h"
#include "common/util.h"
#include "proto/proto.h"

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "configs/demo.yaml";
    static pf_config cfg;
    char err[2048];
    if (pf_config_load(&cfg, path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pf_dataset ds;
    if (pf_dataset_open(&ds, &cfg.train, "data.train", cfg.scale, cfg.train.gt_patch_size, err,
                        sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t0 = pf_now();
    double pixels = 0;
    for (int i = 0; i < ds.n_files; i++) {
        const pf_image *g, *l;
        if (pf_dataset_pair(&ds, i, &g, &l, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        pixels += (double)g->w * g->h;
    }
    double first = pf_now() - t0;
    printf("first touch (decode + bicubic LQ) of %d images, %.1f Mpixel: %.3f s (%.1f ms/image)\n",
           ds.n_files, pixels / 1e6, first, 1000 * first / ds.n_files);
    int gp = cfg.train.gt_patch_size, lp = gp / cfg.scale, n = cfg.samples_per_gpu;
    uint8_t *gt = malloc((size_t)gp * gp * 3 * n), *lq = malloc((size_t)lp * lp * 3 * n);
    uint32_t idx = 0;
    long patches = 0;
    t0 = pf_now();
    while (pf_now() - t0 < 2.0) {
        for (int k = 0; k < 1000; k++, idx++)
            if (pf_dataset_sample(&ds, idx % ds.len, cfg.seed, 0, gt, lq, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
        patches += 1000;
    }
    double dt = pf_now() - t0;
    printf("pf_dataset_sample (crop + flips as configured), GT patch %d: %.0f patches/s\n", gp,
           patches / dt);
    pf_msg *m = calloc(1, sizeof *m);
    long batches = 0;
    t0 = pf_now();
    while (pf_now() - t0 < 2.0) {
        for (int j = 0; j < n; j++, idx++) {
            if (pf_dataset_sample(&ds, idx % ds.len, cfg.seed, 0, gt + (size_t)j * gp * gp * 3,
                                  lq + (size_t)j * lp * lp * 3, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            m->u.batch.indices[j] = idx % ds.len;
        }
        m->type = PF_MSG_BATCH;
        m->u.batch.n = (uint32_t)n;
        m->u.batch.gt_h = m->u.batch.gt_w = (uint32_t)gp;
        m->u.batch.lq_h = m->u.batch.lq_w = (uint32_t)lp;
        void *buf;
        size_t len;
        pf_msg_encode(m, &buf, &len);
        free(buf);
        batches++;
    }
    dt = pf_now() - t0;
    printf("batches of %d (crop + flip + header): %.0f batches/s = %.0f patches/s per loader\n", n,
           batches / dt, batches * n / dt);
    free(m);
    free(gt);
    free(lq);
    pf_dataset_close(&ds);
    return 0;
}
