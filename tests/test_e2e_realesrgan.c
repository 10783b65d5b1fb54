/*  End-to-end Real-ESRGAN training (issue 40): `pixflow train` on RealESRGANDataset and
    RealESRGANVideoDataset, every role its own process, and the determinism contract — every
    draw of the degradation comes from (seed, epoch, sample index), so batches and losses do
    not depend on the number of loaders, on an interruption, nor evaluation on how the eval set
    is split or whether its LQ was frozen to files first.

    Data, written by the test: 4 textured 96 x 96 PNG photos to train on, 3 others to evaluate,
    and 3 clips of 8 moving frames (96 x 80) as folders of PNGs. Images: EDSR x2 (8 features,
    1 block), GT patches of 80 with BasicSR's default kernels (up to 21 pixels; the pipeline's
    checks refuse a patch of 64 for them), USM GT. Clips: BasicVSR x4 (4 features, 1 block),
    GT patches of 64 with the stage 2 blur lowered to 17 (what the checks allow there).

    A. RealESRGANDataset, 1 loader: the reference (samples log: ids and the FNV-1a digest of
       each batch's GT and LQ; metrics.jsonl: loss per iteration), every loss finite; with an
       evaluation of type RealESRGANDataset at the last iteration (1 eval service).
    B. 3 loaders and 2 eval services: the same batches, bit for bit, the same losses, and the
       same per-image PSNR and SSIM in eval.log.
    C. SIGINT mid-run with 2 loaders (paused while it lands: exit 130, a checkpoint), then
       `--resume auto`: the losses after the resume point and every batch equal A's.
    D. RealESRGANVideoDataset, 1 vs 2 loaders: the same batches and losses.
    E. `pixflow test` with A's checkpoint on data.test of type RealESRGANDataset gives the same
       table (per-image PSNR and SSIM) as on a PairedImageDataset whose lq_folder is what
       `pixflow data CONFIG --degrade --set eval -o DIR` wrote, and the same per-image PSNR as
       A's eval.log.
*/
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "pf_test.h"
#include "pf_test_job.h"

#define IMAGES 4
#define BATCH 4
#define ITERS 24            /* image runs: 6 epochs of 4 batches (repeat 4) */
#define VIDEO_ITERS 6
#define FRAMES 8

static char root[256], bin[1024];

/* How a section's summary line ends: whether its checks held (failures since `fails`). */
static const char *verdict(int fails) {
    return pf_test_fail_ == fails ? "holds" : "FAILED (above)";
}

/* The image config: EDSR x2 on root/train (RealESRGANDataset), evaluation at ITERS on
   root/eval with `instances` services; data.test is `test_set` (a YAML mapping), or none when
   NULL. */
static void write_image_config(const char *path, const char *work_dir, int instances,
                               const char *test_set) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: %d\n"
            "  prefetch: 3\n"
            "  train: {type: RealESRGANDataset, gt_folder: %s/train, gt_patch_size: 80,\n"
            "          use_flip: true, use_rot: true, repeat: 4, gt_usm: true}\n"
            "  eval: {type: RealESRGANDataset, gt_folder: %s/eval}\n"
            "%s%s%s"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: %d, max_keep_ckpts: 2}\n"
            "evaluation: {interval: %d, crop_border: 2, convert_to: y, instances: %d}\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: 5\n",
            BATCH, root, root, test_set ? "  test: " : "", test_set ? test_set : "",
            test_set ? "\n" : "", ITERS, ITERS, ITERS, instances, work_dir);
    fclose(f);
}

static void write_video_config(const char *path, const char *work_dir) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: BasicVSR, scale: 4, num_feat: 4, num_block: 1,\n"
            "        loss: {type: CharbonnierLoss, eps: 1.0e-12}}\n"
            "data:\n"
            "  samples_per_gpu: 2\n"
            "  prefetch: 2\n"
            "  train:\n"
            "    type: RealESRGANVideoDataset\n"
            "    gt_folder: %s/clips\n"
            "    num_frame: 3\n"
            "    interval_list: [1, 2]\n"
            "    random_reverse: true\n"
            "    use_hflip: true\n"
            "    use_rot: true\n"
            "    gt_patch_size: 64\n"
            "    blur_kernel_size2: 17\n"
            "optimizers: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.99]}\n"
            "total_iters: %d\n"
            "checkpoint_config: {interval: 1000, max_keep_ckpts: 2}\n"
            "log_config: {interval: 1}\n"
            "work_dir: %s\n"
            "seed: 13\n",
            root, VIDEO_ITERS, work_dir);
    fclose(f);
}

/* Run `pixflow train cfg --loaders L [--resume R]` to the end; its exit status. */
static int train(const char *cfg, const char *loaders, const char *resume, const char *tag) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    run r;
    start_job(&r, bin, out, cfg, loaders, resume, NULL, NULL);
    int st = finish(&r, 300);
    CHECK(st == 0, "run %s exited with %d (see %s)", tag, st, out);
    return st;
}

/* Run argv (NULL-terminated, argv[0] the binary) to the end with output in root/tag.out; its
   exit status. */
static int run_cmd(char *const argv[], const char *tag) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.out", root, tag);
    run r;
    start_cmd(&r, out, argv);
    int st = finish(&r, 300);
    CHECK(st == 0, "%s exited with %d (see %s)", tag, st, out);
    return st;
}

/* eval.log's per-image lines of iteration `iter` ("    iter N name: PSNR-Y ..."), sorted so
   that the order in which services wrote them does not matter; malloc'd, "" when none. */
static char *eval_lines(const char *work_dir, int iter) {
    char path[600], prefix[64];
    snprintf(path, sizeof path, "%s/eval.log", work_dir);
    snprintf(prefix, sizeof prefix, "    iter %d ", iter);
    char *t = slurp(path);
    char *lines[64];
    int n = 0;
    for (char *l = strtok(t, "\n"); l && n < 64; l = strtok(NULL, "\n"))
        if (strncmp(l, prefix, strlen(prefix)) == 0) lines[n++] = l;
    for (int i = 1; i < n; i++)     /* insertion sort: a handful of lines */
        for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char *s = lines[j];
            lines[j] = lines[j - 1];
            lines[j - 1] = s;
        }
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(lines[i]) + 1;
    char *o = calloc(len, 1);
    for (int i = 0; i < n; i++) strcat(strcat(o, lines[i]), "\n");
    free(t);
    return o;
}

/* The PSNR column of `pixflow test`'s results.tsv row for image `name`, or NAN. */
static double tsv_psnr(const char *tsv, const char *name) {
    char key[80];
    snprintf(key, sizeof key, "\n%s\t", name);
    const char *p = strstr(tsv, key);
    return p ? atof(p + strlen(key)) : NAN;
}

/* The PSNR of `name` in eval.log lines from eval_lines, or NAN. */
static double log_psnr(const char *lines, int iter, const char *name) {
    char key[120];
    snprintf(key, sizeof key, "    iter %d %s: PSNR-Y ", iter, name);
    const char *p = strstr(lines, key);
    return p ? atof(p + strlen(key)) : NAN;
}

/* A and B (and the reference of C): 1 loader and 1 eval service, then 3 loaders and 2. */
static void runs_ab(const char *wd_a, const char *wd_b, char **ref, double *loss_a) {
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/a.yaml", root);
    write_image_config(cfg, wd_a, 1, NULL);
    double t0 = pf_now();
    if (train(cfg, "1", NULL, "a")) return;
    double lr[ITERS + 1];
    CHECK(train_curve(wd_a, loss_a, lr, ITERS) == ITERS, "run A: metrics.jsonl lacks train "
          "entries");
    int finite = 0;
    for (int i = 1; i <= ITERS; i++) finite += isfinite(loss_a[i]) && loss_a[i] > 0;
    CHECK(finite == ITERS, "run A: %d of %d losses finite and positive", finite, ITERS);
    printf("A: %d iterations of EDSR x2 on RealESRGANDataset (GT 80, batch %d), 1 loader, "
           "1 eval service: %.1f s; loss at 1 %.5f, at %d %.5f\n", ITERS, BATCH,
           pf_now() - t0, loss_a[1], ITERS, loss_a[ITERS]);
    check_exactly_once(wd_a, 1, ITERS, IMAGES * 4 / BATCH, IMAGES * 4, "run A");
    *ref = samples(wd_a);

    snprintf(cfg, sizeof cfg, "%s/b.yaml", root);
    write_image_config(cfg, wd_b, 2, NULL);
    t0 = pf_now();
    int fails = pf_test_fail_;
    if (train(cfg, "3", NULL, "b")) return;
    char out_b[600];
    snprintf(out_b, sizeof out_b, "%s/b.out", root);
    char *procs = slurp(out_b);
    CHECK(strstr(procs, " eval hook 1=") && strstr(procs, " loader3="),
          "run B: no second eval service or third loader on the processes line (%s)", out_b);
    free(procs);
    check_same_batches(wd_a, wd_b, 1, "run B (3 loaders)");
    int diff = curve_diffs(wd_a, wd_b, 1, ITERS, "run B");
    CHECK(diff == 0, "run B: %d of %d losses differ from 1 loader's", diff, ITERS);
    char *ea = eval_lines(wd_a, ITERS), *eb = eval_lines(wd_b, ITERS);
    int images = 0;
    for (char *p = ea; (p = strchr(p, '\n')); p++) images++;
    CHECK(images == 3 && strcmp(ea, eb) == 0,
          "eval.log per image, 1 service (%d images):\n%s2 services:\n%s", images, ea, eb);
    printf("B: 3 loaders, 2 eval services: %.1f s; %d batches, %d losses and the per-image "
           "eval lines equal A's: %s\n%s", pf_now() - t0, ITERS, ITERS, verdict(fails), ea);
    free(ea);
    free(eb);
}

/* C: SIGINT at iteration >= 10 (2 loaders), then --resume auto. */
static void run_c(const char *ref_wd, const char *ref) {
    char cfg[600], wd[600], out[600], err[256];
    snprintf(cfg, sizeof cfg, "%s/c.yaml", root);
    snprintf(wd, sizeof wd, "%s/work_c", root);
    snprintf(out, sizeof out, "%s/c.out", root);
    write_image_config(cfg, wd, 1, NULL);
    run r;
    double t0 = pf_now();
    int fails = pf_test_fail_;
    start_job(&r, bin, out, cfg, "2", NULL, NULL, NULL);
    CHECK(wait_lines(wd, 10, 200), "run C did not reach iteration 10 (see %s)", out);
    /* The loaders paused while the interrupt lands, so that it lands before the last
       iteration however fast the machine: the worker runs out of batches a few iterations on. */
    pid_t loaders[2] = { pid_of(out, "loader1"), pid_of(out, "loader2") };
    for (int i = 0; i < 2; i++)
        if (loaders[i] > 0) kill(loaders[i], SIGSTOP);
    kill(r.pid, SIGINT);
    usleep(300000);
    for (int i = 0; i < 2; i++)
        if (loaders[i] > 0) kill(loaders[i], SIGCONT);
    int st = finish(&r, 60);
    CHECK(st == 130, "interrupted run exited with %d, expected 130 (see %s)", st, out);
    char latest[700];
    snprintf(latest, sizeof latest, "%s/checkpoints/latest", wd);
    char *name = pf_read_file(latest, NULL, err, sizeof err);
    CHECK(name != NULL, "no checkpoints/latest after the interrupt: %s", err);
    int k = name ? atoi(name + 5) : 0;
    free(name);
    CHECK(k >= 10 && k < ITERS, "interrupt checkpoint at iteration %d", k);
    if (k < 10 || k >= ITERS || train(cfg, "2", "auto", "c_resumed")) return;
    int diff = curve_diffs(ref_wd, wd, k + 1, ITERS, "run C");
    CHECK(diff == 0, "run C: %d iterations after the resume at %d differ from A's", diff, k);
    char *s = samples(wd);
    CHECK(strcmp(s, ref) == 0, "run C: the interrupted and resumed run consumed other batches");
    free(s);
    printf("C: SIGINT at iteration %d (exit 130), --resume auto: %d later losses and all %d "
           "batches equal A's: %s; %.1f s\n", k, ITERS - k, ITERS, verdict(fails),
           pf_now() - t0);
}

/* D: RealESRGANVideoDataset with 1 and 2 loaders. */
static void run_d(void) {
    char dir[600], cfg[600], wd[2][600];
    for (int c = 0; c < 3; c++) {
        snprintf(dir, sizeof dir, "%s/clips/%03d", root, c);
        make_clip(dir, c, 1 + c, c % 2, 96, 80, FRAMES);
    }
    double t0 = pf_now();
    int fails = pf_test_fail_;
    for (int k = 0; k < 2; k++) {
        snprintf(cfg, sizeof cfg, "%s/d%d.yaml", root, k);
        snprintf(wd[k], sizeof wd[k], "%s/work_d%d", root, k);
        write_video_config(cfg, wd[k]);
        if (train(cfg, k ? "2" : "1", NULL, k ? "d2" : "d1")) return;
    }
    double loss[VIDEO_ITERS + 1], lr[VIDEO_ITERS + 1];
    CHECK(train_curve(wd[0], loss, lr, VIDEO_ITERS) == VIDEO_ITERS && isfinite(loss[VIDEO_ITERS]),
          "run D: no finite loss at iteration %d", VIDEO_ITERS);
    check_same_batches(wd[0], wd[1], 1, "run D (2 loaders)");
    int diff = curve_diffs(wd[0], wd[1], 1, VIDEO_ITERS, "run D");
    CHECK(diff == 0, "run D: %d losses differ between 1 and 2 loaders", diff);
    printf("D: BasicVSR x4 on RealESRGANVideoDataset (3 frames, GT 64), %d iterations with 1 "
           "and with 2 loaders: %.1f s; loss at %d %.5f; batches and losses equal: %s\n",
           VIDEO_ITERS, pf_now() - t0, VIDEO_ITERS, loss[VIDEO_ITERS], verdict(fails));
}

/* E: pixflow test on the RealESRGANDataset set and on the frozen one from --degrade. */
static void run_e(const char *wd_a) {
    char cfg[2][600], wd[2][600], test_set[700], ckpt[800], lq[600], err[256];
    char latest[700];
    snprintf(latest, sizeof latest, "%s/checkpoints/latest", wd_a);
    char *name = pf_read_file(latest, NULL, err, sizeof err);
    CHECK(name != NULL, "run A left no checkpoints/latest: %s", err);
    if (!name) return;
    name[strcspn(name, "\r\n")] = '\0';
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints/%s", wd_a, name);
    free(name);
    snprintf(lq, sizeof lq, "%s/eval_lq", root);
    double t0 = pf_now();
    int fails = pf_test_fail_;
    for (int k = 0; k < 2; k++) {
        snprintf(cfg[k], sizeof cfg[k], "%s/e%d.yaml", root, k);
        snprintf(wd[k], sizeof wd[k], "%s/work_e%d", root, k);
        if (k == 0)
            snprintf(test_set, sizeof test_set, "{type: RealESRGANDataset, gt_folder: %s/eval}",
                     root);
        else
            snprintf(test_set, sizeof test_set, "{type: PairedImageDataset, gt_folder: %s/eval,"
                     " lq_folder: %s}", root, lq);
        write_image_config(cfg[k], wd[k], 1, test_set);
    }
    char *degrade[] = { bin, "data", cfg[0], "--degrade", "--set", "eval", "-o", lq, NULL };
    if (run_cmd(degrade, "e_degrade")) return;
    char *tables[2];
    for (int k = 0; k < 2; k++) {
        char *test[] = { bin, "test", cfg[k], "--checkpoint", ckpt, NULL };
        if (run_cmd(test, k ? "e_test_paired" : "e_test_realesrgan")) return;
        char tsv[900];
        snprintf(tsv, sizeof tsv, "%s/test/%.*s/results.tsv", wd[k],
                 (int)(strrchr(ckpt, '.') - strrchr(ckpt, '/') - 1), strrchr(ckpt, '/') + 1);
        tables[k] = slurp(tsv);
        CHECK(tables[k][0], "no %s", tsv);
    }
    CHECK(strcmp(tables[0], tables[1]) == 0, "pixflow test on the RealESRGANDataset set:\n%s\n"
          "on the --degrade files as a PairedImageDataset:\n%s", tables[0], tables[1]);
    char *ea = eval_lines(wd_a, ITERS);
    int same = 0;
    for (int i = 0; i < 3; i++) {
        char img[16];
        snprintf(img, sizeof img, "img%02d", i);
        double t = tsv_psnr(tables[0], img), e = log_psnr(ea, ITERS, img);
        same += fabs(t - e) < 1.5e-4;   /* both printed to 4 decimals */
        printf("E: %s PSNR-Y: pixflow test %.4f dB (RealESRGANDataset), eval hook %.4f dB\n",
               img, t, e);
    }
    CHECK(same == 3, "pixflow test and the eval hook agree on %d of 3 images' PSNR", same);
    printf("E: pixflow test's table on the --degrade files (PairedImageDataset) equals the "
           "RealESRGANDataset's, and its PSNR the eval hook's: %s; %.1f s\n", verdict(fails),
           pf_now() - t0);
    free(ea);
    free(tables[0]);
    free(tables[1]);
}

int main(void) {
    pf_test_job_begin("e2e_realesrgan", bin, sizeof bin, root, sizeof root);
    char dir[600], wd_a[600], wd_b[600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, IMAGES, 96, 3);
    snprintf(dir, sizeof dir, "%s/eval", root);
    make_images(dir, 3, 96, 4);
    snprintf(wd_a, sizeof wd_a, "%s/work_a", root);
    snprintf(wd_b, sizeof wd_b, "%s/work_b", root);
    setenv("OMP_NUM_THREADS", "2", 1);  /* the same thread count for every run */
    double t0 = pf_now();
    char *ref = NULL;
    static double loss_a[ITERS + 1];
    runs_ab(wd_a, wd_b, &ref, loss_a);
    if (ref) run_c(wd_a, ref);
    free(ref);
    run_d();
    run_e(wd_a);
    printf("all runs: %.1f s\n", pf_now() - t0);
    return pf_test_job_end("test_e2e_realesrgan", root);
}
