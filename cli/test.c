/*  test — `pixflow test CONFIG --checkpoint PATH`: run data.test through a checkpoint.

    Outputs go to work_dir/test/<checkpoint stem>/<image>.png, with results.tsv beside them:
    one row per image (PSNR, SSIM, and bicubic's) and a mean row, the same table printed on
    stdout. Metrics follow evaluation.crop_border and evaluation.convert_to (docs/metrics.md).
    This runs in one process on the CPU; distributing the test set over workers comes with the
    multi-worker collectives.
*/
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "hooks/evaluate.h"
#include "loader/dataset.h"
#include "nn/model.h"
#include "worker/train_state.h"

int pf_test_main(int argc, char **argv) {
    const char *cfg_path = NULL, *ckpt = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) ckpt = argv[++i];
        else if (argv[i][0] != '-' && !cfg_path) cfg_path = argv[i];
        else cfg_path = NULL, i = argc;
    }
    if (!cfg_path || !ckpt) {
        fprintf(stderr, "usage: pixflow test CONFIG --checkpoint PATH\n");
        return 2;
    }
    pf_log_set_name("test");
    static pf_config cfg;
    char err[2048];
    if (pf_config_load(&cfg, cfg_path, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    if (!cfg.test.present) {
        fprintf(stderr, "pixflow: %s: data.test: required by `pixflow test`\n", cfg_path);
        return 2;
    }
    pf_dataset ds;
    if (pf_dataset_open(&ds, &cfg.test, "data.test", cfg.scale, 0, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    int status = 1;
    pf_eval_result r = { 0 };
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    if (!m || pf_state_load_weights(m, ckpt, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        goto out;
    }
    const char *base = strrchr(ckpt, '/');
    base = base ? base + 1 : ckpt;
    char stem[256], dir[PF_PATH_MAX + 300], tsv[PF_PATH_MAX + 320];
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(base, "."), base);
    snprintf(dir, sizeof dir, "%s/test/%s", cfg.work_dir, stem);
    double t0 = pf_now();
    if (pf_evaluate(m, &cfg, &ds, dir, NULL, NULL, &r, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        goto out;
    }
    snprintf(tsv, sizeof tsv, "%s/results.tsv", dir);
    FILE *f = fopen(tsv, "w");
    if (!f) {
        fprintf(stderr, "pixflow: %s: cannot write\n", tsv);
        goto out;
    }
    const char *ch = cfg.eval_y_channel ? "Y" : "RGB";
    FILE *outs[2] = { stdout, f };
    for (int k = 0; k < 2; k++) {
        fprintf(outs[k], "image\tpsnr_%s\tssim_%s\tpsnr_bicubic\tssim_bicubic\n", ch, ch);
        for (int i = 0; i < r.n; i++)
            fprintf(outs[k], "%s\t%.4f\t%.4f\t%.4f\t%.4f\n", r.items[i].name, r.items[i].psnr,
                    r.items[i].ssim, r.items[i].psnr_bicubic, r.items[i].ssim_bicubic);
        fprintf(outs[k], "mean\t%.4f\t%.4f\t%.4f\t%.4f\n", r.psnr, r.ssim, r.psnr_bicubic,
                r.ssim_bicubic);
    }
    fclose(f);
    printf("pixflow: %d images in %.1f s (crop_border %d, %s); outputs and results.tsv in %s\n",
           r.n, pf_now() - t0, cfg.crop_border, ch, dir);
    status = 0;
out:
    pf_eval_result_free(&r);
    pf_model_destroy(&m);
    pf_dataset_close(&ds);
    return status;
}
