/*  End-to-end EDVR (issue 42): `pixflow train` of a tiny EDVR (num_feat 8, windows of 3
    frames, deformable_groups 2, 1 extraction and 1 reconstruction block, TSA) on REDSDataset
    windows (num_frame LQ frames, the center frame's GT) of generated clips, with evaluation on
    a VideoTestDataset clip (every frame's SR from its reflection_circle window), every role
    its own process.

    Config (in process): the sliding-window sets are EDVR's, the recurrent ones refused for it
    (data.train / data.eval / data.test), a data num_frame unlike model.num_frame refused
    naming both keys, REDSDataset refused for BasicVSR and EDSR.
    A. 1 loader: the reference. Every epoch consumes each sample exactly once; every loss is
       finite; eval.log has the held-out clip's line ("val (6 frames): PSNR-Y ...") at both
       evaluations, and at the last one its PSNR-Y equals the mean over the clip's 6 frames
       of a naive PSNR-Y (double Y, crop_border 2) of the saved SR frames against the GT
       frames (evaluation.save_image).
    B. 2 loaders: the same batches bit for bit, the same losses and the same eval lines.
    `pixflow test` of A's last checkpoint on data.test (the same clip): results.tsv's PSNR-Y
    the eval hook's, and the naive PSNR-Y of the frames it saved. Both runs publish
    visual_config pictures (each window's center LQ frame, SR, GT).
    C. 2 workers with half the batch each (gradients all-reduced): every loss A's to fp32
       rounding (relative 1e-4), each epoch's samples once over the ranks; a single worker
       with half the batch has other losses and lands far from A's weights.
    D. A with with_predeblur true (BasicSR's PredeblurModule and conv_1x1 in place of
       conv_first): trains, every loss finite and unlike A's, eval lines at both evaluations,
       the checkpoint holds the predeblur's tensors under BasicSR's names and no conv_first.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/image.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"
#include "pf_test_psnr.h"

#define FRAMES 8            /* frames per training clip */
#define CLIPS 3
#define VAL_FRAMES 6
#define BATCH 4
#define TOTAL_ITERS 24
#define EVAL_EVERY 12
#define ITERS_PER_EPOCH (CLIPS * FRAMES / BATCH)

static char root[256], bin[1024];

/* The job's config; samples_per_gpu `spg` (BATCH, or BATCH / 2 for each of 2 workers);
   predeblur: model.with_predeblur. */
static void write_config(const char *path, const char *work_dir, int spg, int predeblur) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: EDVR, scale: 4, num_feat: 8, num_frame: 3, deformable_groups: 2,\n"
            "        num_extract_block: 1, num_reconstruct_block: 1, with_tsa: true,\n"
            "        with_predeblur: %s,\n"
            "        loss: {type: CharbonnierLoss, eps: 1.0e-12}}\n"
            "data:\n"
            "  samples_per_gpu: %d\n"
            "  prefetch: 3\n"
            "  train:\n"
            "    type: REDSDataset\n"
            "    gt_folder: %s/clips\n"
            "    clips: [{name: '000'}, {name: '001'}, {name: '002'}]\n"
            "    num_frame: 3\n"
            "    interval_list: [1, 2]\n"
            "    random_reverse: true\n"
            "    use_hflip: true\n"
            "    use_rot: true\n"
            "    gt_patch_size: 32\n"
            "  eval:\n"
            "    type: VideoTestDataset\n"
            "    gt_folder: %s/clips\n"
            "    clips: [{name: val}]\n"
            "    num_frame: 3\n"
            "    padding: reflection_circle\n"
            "  test: {type: VideoTestDataset, gt_folder: %s/clips, clips: [{name: val}],\n"
            "         num_frame: 3}\n"
            "optimizers: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.99]}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: %d, max_keep_ckpts: 3}\n"
            "evaluation: {interval: %d, metrics: [PSNR, SSIM], crop_border: 2, convert_to: y,\n"
            "             save_image: true}\n"
            "log_config: {interval: 1}\n"
            "visual_config: {interval: %d, num_samples: 2}\n"
            "work_dir: %s\n"
            "seed: 5\n",
            predeblur ? "true" : "false", spg, root, root, root, TOTAL_ITERS, EVAL_EVERY,
            EVAL_EVERY, EVAL_EVERY,
            work_dir);
    fclose(f);
}

/* The config checks of point 1: each text parsed (paths not checked) fails naming `want`, or
   passes when want is NULL. */
static void check_configs(void) {
    static const char *edvr = "model: {type: EDVR, scale: 4, num_feat: 16, num_frame: 5}\n";
    static const struct {
        const char *model, *data, *want;
    } cases[] = {
        { NULL, "  train: {type: REDSDataset, gt_folder: g, num_frame: 5, gt_patch_size: 64}\n"
                "  eval: {type: VideoTestDataset, gt_folder: g, num_frame: 5}\n"
                "  test: {type: VideoTestDataset, gt_folder: g, num_frame: 5}\n", NULL },
        { NULL, "  eval: {type: VideoRecurrentTestDataset, gt_folder: g}\n",
          "data.eval.type: EDVR takes a center frame's window of num_frame LQ frames and gives "
          "that frame: use VideoTestDataset" },
        { NULL, "  test: {type: VideoRecurrentTestDataset, gt_folder: g}\n",
          "data.test.type: EDVR takes a center frame's window" },
        { NULL, "  train: {type: REDSRecurrentDataset, gt_folder: g, num_frame: 5, "
                "gt_patch_size: 64}\n", "use REDSDataset" },
        { NULL, "  eval: {type: VideoTestDataset, gt_folder: g, num_frame: 3}\n",
          "data.eval.num_frame: must equal model.num_frame (5)" },
        { NULL, "  test: {type: VideoTestDataset, gt_folder: g, num_frame: 7}\n",
          "data.test.num_frame: must equal model.num_frame (5)" },
        { NULL, "  train: {type: PairedImageDataset, gt_folder: g, gt_patch_size: 64}\n",
          "data.train.type: EDVR trains on a center frame's window of num_frame LQ frames: "
          "REDSDataset (got PairedImageDataset)" },
        { NULL, "  eval: {type: PairedImageDataset, gt_folder: g}\n",
          "data.eval.type: EDVR takes a center frame's window" },
        { "model: {type: BasicVSR, scale: 4}\n",
          "  train: {type: REDSDataset, gt_folder: g, num_frame: 5, gt_patch_size: 64}\n",
          "data.train.type: REDSDataset gives a center frame's window" },
        { "model: {type: EDSR, scale: 4}\n",
          "  train: {type: REDSDataset, gt_folder: g, num_frame: 5, gt_patch_size: 64}\n",
          "data.train.type: EDSR is an image network; REDSDataset makes clips" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], err[1024] = "";
        snprintf(text, sizeof text, "work_dir: /tmp/pf_e2e_edvr_cfg\n%sdata:\n%s",
                 cases[i].model ? cases[i].model : edvr, cases[i].data);
        static pf_config cfg;
        int rc = pf_config_parse(&cfg, "edvr.yaml", text, strlen(text), 0, err, sizeof err);
        if (!cases[i].want)
            CHECK(rc == 0, "config case %zu accepted: %s", i, err);
        else
            CHECK(rc == -1 && strstr(err, cases[i].want), "config case %zu: want '%s', got %s",
                  i, cases[i].want, rc ? err : "accepted");
    }
    printf("config: %zu cases (the window sets for EDVR, the recurrent ones and other "
           "num_frame refused, REDSDataset refused for BasicVSR and EDSR)\n",
           sizeof cases / sizeof cases[0]);
}

/* eval.log's lines of iteration `iter` for clip val ("    iter N val (6 frames): ..."), one
   per evaluation; malloc'd, "" when none. */
static char *eval_lines(const char *work_dir, int iter) {
    char path[600], prefix[64];
    snprintf(path, sizeof path, "%s/eval.log", work_dir);
    snprintf(prefix, sizeof prefix, "    iter %d val ", iter);
    char *t = slurp(path), *o = calloc(strlen(t) + 1, 1);
    for (char *l = strtok(t, "\n"); l; l = strtok(NULL, "\n"))
        if (strncmp(l, prefix, strlen(prefix)) == 0) strcat(strcat(o, l), "\n");
    free(t);
    return o;
}

/* The mean PSNR-Y (crop_border 2) over the val clip's frames saved as dir/NNNNNNNN.png against
   the GT frames; NAN when a file is missing or a size differs. */
static double saved_psnr(const char *dir) {
    double sum = 0;
    for (int f = 0; f < VAL_FRAMES; f++) {
        char out_path[700], gt_path[700], err[512];
        snprintf(out_path, sizeof out_path, "%s/%08d.png", dir, f);
        snprintf(gt_path, sizeof gt_path, "%s/clips/val/%08d.png", root, f);
        pf_image out = { 0 }, gt = { 0 };
        int ok = pf_image_read_png(out_path, &out, err, sizeof err) == 0 &&
                 pf_image_read_png(gt_path, &gt, err, sizeof err) == 0 && out.h == gt.h &&
                 out.w == gt.w;
        CHECK(ok, "saved frame %s against %s: %s", out_path, gt_path, err);
        if (ok) sum += pf_test_psnr_y(out.data, gt.w, gt.data, gt.w, gt.h, gt.w, 2);
        pf_image_free(&out);
        pf_image_free(&gt);
        if (!ok) return NAN;
    }
    return sum / VAL_FRAMES;
}

/* C: 2 workers x BATCH / 2 samples (the gradients all-reduced) against run A (1 worker x
   BATCH, losses loss_a): every iteration's loss (the group's mean) A's to fp32 rounding as it
   grows over the steps (relative 1e-4; 5e-6 seen), every epoch's samples once over the two
   ranks; a single worker with BATCH / 2 (other samples) has other losses (relative 1e-3 and
   30 times C's at some iteration) and lands 20 times farther from A's weights. (The weights
   themselves drift from A's by more than rounding: Adam's normalised steps on near-zero
   gradients, e.g. the zero-initialised biases, amplify it; the losses show the split and the
   all-reduce.) */
static void data_parallel(const char *wd_a, const double *loss_a) {
    const char *tags[2] = { "two_workers", "half_batch" };
    char ck[2][700], ref[700];
    double worst[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
        char cfg[600], wd[600], out[700];
        snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tags[k]);
        snprintf(wd, sizeof wd, "%s/work_%s", root, tags[k]);
        snprintf(out, sizeof out, "%s/%s.out", root, tags[k]);
        snprintf(ck[k], sizeof ck[k], "%s/checkpoints/iter_%d.safetensors", wd, TOTAL_ITERS);
        write_config(cfg, wd, BATCH / 2, 0);
        run r;
        start_job(&r, bin, out, cfg, "1", NULL, "--workers", k ? "1" : "2");
        int st = finish(&r, 600);
        CHECK(st == 0, "run %s exited with %d (see %s)", tags[k], st, out);
        if (st) return;
        if (!k) check_exactly_once(wd, 2, TOTAL_ITERS, ITERS_PER_EPOCH, CLIPS * FRAMES, "run C");
        static double loss[TOTAL_ITERS + 1], lr[TOTAL_ITERS + 1];
        CHECK(train_curve(wd, loss, lr, TOTAL_ITERS) == TOTAL_ITERS, "run %s: losses", tags[k]);
        for (int i = 1; i <= TOTAL_ITERS; i++)
            worst[k] = fmax(worst[k], fabs(loss[i] - loss_a[i]) / loss_a[i]);
    }
    snprintf(ref, sizeof ref, "%s/checkpoints/iter_%d.safetensors", wd_a, TOTAL_ITERS);
    double same = ckpt_distance(ck[0], ref, 1, NULL), other = ckpt_distance(ck[1], ref, 1, NULL);
    printf("run C: 2 workers x %d vs 1 worker x %d over %d steps: losses within %.3g "
           "(relative), weights %.3g (max relative); 1 worker x %d: losses %.3g, weights "
           "%.3g\n", BATCH / 2, BATCH, TOTAL_ITERS, worst[0], same, BATCH / 2, worst[1], other);
    CHECK(worst[0] < 1e-4, "2 workers' losses drifted from 1 worker's with their joint batch: "
          "%.3g", worst[0]);
    CHECK(worst[1] > 1e-3 && worst[1] > 30 * worst[0] && other > 20 * same, "the comparison cannot tell runs apart "
          "(losses %.3g vs %.3g, weights %.3g vs %.3g)", worst[1], worst[0], other, same);
}

/* D: run A's job with with_predeblur true (loss_a: A's losses). */
static void predeblur_run(const double *loss_a) {
    char cfg[600], wd[600], out[700], ckpt[700], err[512];
    snprintf(cfg, sizeof cfg, "%s/predeblur.yaml", root);
    snprintf(wd, sizeof wd, "%s/work_predeblur", root);
    snprintf(out, sizeof out, "%s/predeblur.out", root);
    write_config(cfg, wd, BATCH, 1);
    run r;
    double t0 = pf_now();
    start_job(&r, bin, out, cfg, "1", NULL, NULL, NULL);
    int st = finish(&r, 600);
    CHECK(st == 0, "run D (with_predeblur) exited with %d (see %s)", st, out);
    if (st) return;
    static double loss[TOTAL_ITERS + 1], lr[TOTAL_ITERS + 1];
    CHECK(train_curve(wd, loss, lr, TOTAL_ITERS) == TOTAL_ITERS,
          "run D: %s/metrics.jsonl lacks train entries", wd);
    int finite = 1, same = 0;
    for (int i = 1; i <= TOTAL_ITERS; i++) {
        finite &= isfinite(loss[i]) && loss[i] > 0;
        same += loss[i] == loss_a[i];
    }
    CHECK(finite && same == 0, "run D: losses not finite and positive, or %d equal to A's",
          same);
    char *first = eval_lines(wd, EVAL_EVERY), *last = eval_lines(wd, TOTAL_ITERS);
    CHECK(strstr(first, "val (6 frames): PSNR-Y ") && strstr(last, "val (6 frames): PSNR-Y "),
          "run D: no eval line for clip val at iterations %d and %d in %s/eval.log", EVAL_EVERY,
          TOTAL_ITERS, wd);
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/iter_%d.safetensors", wd, TOTAL_ITERS);
    pf_safetensors *sf = NULL;
    int rc = pf_safetensors_load(ckpt, &sf, err, sizeof err);
    CHECK(rc == 0, "run D: %s", err);
    if (rc == 0) {
        static const char *want[] = { "predeblur.conv_first.weight",
            "predeblur.stride_conv_l3.bias", "predeblur.resblock_l2_1.conv1.weight",
            "predeblur.resblock_l1.4.conv2.weight", "conv_1x1.weight" };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            CHECK(pf_safetensors_get(sf, want[i], NULL, NULL) != NULL,
                  "run D: %s lacks %s", ckpt, want[i]);
        CHECK(!pf_safetensors_get(sf, "conv_first.weight", NULL, NULL) &&
              !pf_safetensors_get(sf, "predeblur.stride_conv_hr1.weight", NULL, NULL),
              "run D: %s has conv_first or stride_conv_hr1", ckpt);
        pf_safetensors_free(&sf);
    }
    printf("run D: %d iterations of EDVR with_predeblur in %.1f s: loss at 1 %.5f, at %d %.5f; "
           "%s", TOTAL_ITERS, pf_now() - t0, loss[1], TOTAL_ITERS, loss[TOTAL_ITERS], last);
    free(first);
    free(last);
}

int main(void) {
    check_configs();
    pf_test_job_begin("e2e_edvr", bin, sizeof bin, root, sizeof root);
    char dir[600], cfg[2][600], wd[2][600];
    for (int c = 0; c < CLIPS; c++) {
        snprintf(dir, sizeof dir, "%s/clips/%03d", root, c);
        make_clip(dir, c, 1 + c, c % 2, 48, 40, FRAMES);
    }
    snprintf(dir, sizeof dir, "%s/clips/val", root);
    make_clip(dir, 7, 2, 1, 48, 40, VAL_FRAMES);    /* LQ 12 x 10: padded to 12 x 12 */
    setenv("OMP_NUM_THREADS", "2", 1);  /* the same thread count for every run */
    const char *tags[2] = { "one", "two" };
    static double loss[2][TOTAL_ITERS + 1], lr[2][TOTAL_ITERS + 1];
    char *batches[2], *evals[2];
    for (int k = 0; k < 2; k++) {
        snprintf(wd[k], sizeof wd[k], "%s/work_%s", root, tags[k]);
        snprintf(cfg[k], sizeof cfg[k], "%s/%s.yaml", root, tags[k]);
        write_config(cfg[k], wd[k], BATCH, 0);
        char out[700];
        snprintf(out, sizeof out, "%s/%s.out", root, tags[k]);
        run r;
        double t0 = pf_now();
        start_job(&r, bin, out, cfg[k], k ? "2" : "1", NULL, NULL, NULL);
        int st = finish(&r, 600);
        CHECK(st == 0, "run %c exited with %d (see %s)", 'A' + k, st, r.out);
        printf("run %c: %d iterations of EDVR (windows of 3, batch %d) with %d loader%s and 2 "
               "evaluations in %.1f s\n", 'A' + k, TOTAL_ITERS, BATCH, k + 1, k ? "s" : "",
               pf_now() - t0);
        /* rank 0's closing line counts its visual pictures; the visual hook's grids */
        char rank0[700], grid[700];
        snprintf(rank0, sizeof rank0, "%s/rank0.log", wd[k]);
        snprintf(grid, sizeof grid, "%s/visuals/iter_%d.png", wd[k], TOTAL_ITERS);
        char *log = slurp(rank0);
        CHECK(strstr(log, "visual: 2 pictures published") && !strstr(log, "no picture") &&
              access(grid, F_OK) == 0, "run %c: not 2 visual pictures (iterations %d and %d; "
              "see %s, %s)", 'A' + k, EVAL_EVERY, TOTAL_ITERS, rank0, grid);
        free(log);
        CHECK(train_curve(wd[k], loss[k], lr[k], TOTAL_ITERS) == TOTAL_ITERS,
              "run %c: %s/metrics.jsonl lacks train entries", 'A' + k, wd[k]);
        batches[k] = samples(wd[k]);
        evals[k] = eval_lines(wd[k], TOTAL_ITERS);
        char *first = eval_lines(wd[k], EVAL_EVERY);
        CHECK(strstr(first, "val (6 frames): PSNR-Y "), "run %c: no eval line of iteration %d "
              "for clip val in %s/eval.log", 'A' + k, EVAL_EVERY, wd[k]);
        free(first);
    }
    check_exactly_once(wd[0], 1, TOTAL_ITERS, ITERS_PER_EPOCH, CLIPS * FRAMES, "run A");
    int finite = 1;
    for (int i = 1; i <= TOTAL_ITERS; i++) finite &= isfinite(loss[0][i]) && loss[0][i] > 0;
    CHECK(finite, "run A: a loss not finite and positive");
    printf("run A: loss at 1 %.5f, at %d %.5f\n", loss[0][1], TOTAL_ITERS,
           loss[0][TOTAL_ITERS]);
    CHECK(strcmp(batches[0], batches[1]) == 0, "2 loaders delivered other batches than 1");
    CHECK(memcmp(loss[0], loss[1], sizeof loss[0]) == 0, "losses differ between 1 and 2 loaders");
    CHECK(strcmp(evals[0], evals[1]) == 0 && strstr(evals[0], "val (6 frames): PSNR-Y "),
          "eval lines of iteration %d: 1 loader\n%s2 loaders\n%s", TOTAL_ITERS, evals[0],
          evals[1]);
    const char *p = strstr(evals[0], "PSNR-Y ");
    snprintf(dir, sizeof dir, "%s/eval_visuals/iter_%d/val", wd[0], TOTAL_ITERS);
    double logged = p ? atof(p + 7) : NAN, naive = saved_psnr(dir);
    CHECK(fabs(logged - naive) < 6e-5, "clip val at iteration %d: eval.log PSNR-Y %.4f, the "
          "saved frames' %.6f", TOTAL_ITERS, logged, naive);
    printf("eval at %d: %sthe saved frames' naive PSNR-Y %.6f dB\n", TOTAL_ITERS, evals[0],
           naive);
    /* `pixflow test` of the last checkpoint on data.test (the same clip): its results.tsv row
       and saved frames agree with the eval hook's */
    char ckpt[700], out[700], tsv[700];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/iter_%d.safetensors", wd[0], TOTAL_ITERS);
    snprintf(out, sizeof out, "%s/test.out", root);
    char *argv[] = { bin, "test", cfg[0], "--checkpoint", ckpt, NULL };
    run t;
    start_cmd(&t, out, argv);
    int st = finish(&t, 300);
    CHECK(st == 0, "pixflow test exited with %d (see %s)", st, out);
    snprintf(tsv, sizeof tsv, "%s/test/iter_%d/results.tsv", wd[0], TOTAL_ITERS);
    char *table = slurp(tsv);
    const char *row = strstr(table, "\nval\t");
    double tested = row ? atof(row + 5) : NAN;
    snprintf(dir, sizeof dir, "%s/test/iter_%d/val", wd[0], TOTAL_ITERS);
    double naive_test = saved_psnr(dir);
    CHECK(fabs(tested - logged) < 1.5e-4 && fabs(tested - naive_test) < 6e-5,
          "pixflow test: val PSNR-Y %.4f (%s), its saved frames' %.6f, the eval hook's %.4f",
          tested, tsv, naive_test, logged);
    printf("pixflow test: val PSNR-Y %.4f dB, its saved frames' %.6f dB\n", tested, naive_test);
    free(table);
    data_parallel(wd[0], loss[0]);
    predeblur_run(loss[0]);
    for (int k = 0; k < 2; k++) {
        free(batches[k]);
        free(evals[k]);
    }
    return pf_test_job_end("test_e2e_edvr", root);
}
