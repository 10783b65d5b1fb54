/*  Visual hook and TensorBoard images, end to end: `pixflow train` of 6 iterations with
    visual_config {interval: 3, num_samples: 3, output_dir} and an evaluation every 3 iterations
    (the first pictures come a few steps in: a hook's SUB may join the events proxy a moment
    after training starts), then what the
    job wrote is checked against values computed here from the data and the checkpoints:

    A. OUTPUT_DIR holds iter_3.png and iter_6.png only (work_dir/visuals is not made when
       output_dir is given); each is 3 x 16 wide, 3 x 16 tall (3 samples of 16 x 16 GT).
    B. Row i of iter_N.png is sample i of the batch of iteration N-1 (samples_rank0.log gives its
       indices and epoch): the GT column equals pf_dataset_sample's GT patch of that sample (the
       bytes the loader made), the LQ column pf_imresize_u8 x2 of its LQ patch, and the output
       column the network of checkpoint iter_{N-1} (the weights that step ran with) run on the
       LQ patch by pf_model_infer, within 1 level (batch vs single-image convolution order).
    C. The TensorBoard event file: every record's CRCs check (tests/pf_test_tb.h, its own
       decoder); "visual/train" images at steps 3 and 6, colorspace 3, whose PNG decodes to the
       same pixels as the iter_N.png the visual hook wrote; "eval/img00".."eval/img02" (not
       img03: num_samples 3) at steps 3 and 6, 3 x 48 by 48, with the GT column equal to the GT
       file, the output column equal to eval_visuals/iter_N/imgNN.png (saved by evaluation) and
       the LQ column pf_imresize_u8 x2 of the eval LQ.
    D. Bad pictures from a stranger on the events proxy during a job that runs until it is
       stopped: a visual message of 2 frames, one whose header is not msgpack, one with n = 0,
       one whose frames are a byte short, one whose GT is not a multiple of its LQ. The visual
       hook logs a warning for each ("dropped a visual message"), and a well-formed one sent
       after them (n 1, LQ 1 x 1 (10, 20, 30), output and GT 2 x 2, iter 999) is written as
       iter_999.png with the hand-worked pixels: LQ column all (10, 20, 30), then output, GT.
       Once the hook has written them, Ctrl-C (SIGINT to `pixflow train`) stops the job, which
       exits 130: nothing here depends on how many iterations a machine runs meanwhile.
    E. A job of 2 iterations (visual hook on) evaluates one 1000 x 1000 image at its end: its TensorBoard image
       eval/img00 is the centre crop that fits a 1 MiB frame, worked by hand (LQ 500 x 500;
       87381 LQ pixels fit; 295 x 295 at (102, 102); GT and output 590 x 590 at (204, 204)):
       1770 x 590, GT column = the GT file's crop, output column = the same crop of the saved
       eval output.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "common/config.h"
#include "common/dataset.h"
#include "common/image.h"
#include "common/imresize.h"
#include "common/metrics.h"
#include "nn/checkpoint.h"
#include "nn/model.h"
#include "pf_test_job.h"
#include "pf_test_tb.h"
#include "proto/proto.h"

#define GT 16
#define LQ 8
#define N_SAMPLES 3

static char root[512], wd[600], pics[600];

/* Column `col` (0 LQ, 1 output, 2 GT) of row block `row` of a grid whose cells are s x s. */
static void cell(const pf_image *grid, int row, int col, int s, uint8_t *out) {
    for (int y = 0; y < s; y++)
        memcpy(out + (size_t)y * s * 3,
               grid->data + (((size_t)row * s + y) * grid->w + (size_t)col * s) * 3,
               (size_t)s * 3);
}

static int max_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > m) m = d;
    }
    return m;
}

/* Indices and epoch of the batch of iteration `iter` from samples_rank0.log. */
static int batch_of(int64_t iter, uint32_t *idx, int max, uint32_t *epoch) {
    char path[700], line[1024];
    snprintf(path, sizeof path, "%s/samples_rank0.log", wd);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        long long it;
        unsigned ep;
        unsigned long long ticket;
        char list[512];
        if (sscanf(line, "%lld %u %llu %511s", &it, &ep, &ticket, list) != 4 || it != iter)
            continue;
        *epoch = ep;
        for (char *p = strtok(list, ","); p && n < max; p = strtok(NULL, ",")) idx[n++] = (uint32_t)atoi(p);
        break;
    }
    if (f) fclose(f);
    return n;
}

static void check_train_grid(const pf_config *cfg, pf_dataset *ds, int64_t iter,
                             const pf_image *grid) {
    uint32_t idx[8], epoch = 0;
    int n = batch_of(iter - 1, idx, 8, &epoch);
    CHECK(n == 4, "iter %lld: batch of %d samples in samples_rank0.log", (long long)iter, n);
    char err[512], ck[700];
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_%lld.safetensors", wd, (long long)iter - 1);
    pf_model *m = pf_model_new(cfg, err, sizeof err);
    CHECK(m && pf_ckpt_load_weights(m, ck, NULL, err, sizeof err) == 0, "%s: %s", ck, err);
    for (int i = 0; i < N_SAMPLES && i < n && m; i++) {
        uint8_t gt[GT * GT * 3], lq[LQ * LQ * 3], up[GT * GT * 3], got[GT * GT * 3],
            net[GT * GT * 3];
        float out[GT * GT * 3];
        CHECK(pf_dataset_sample(ds, idx[i], cfg->seed, epoch, gt, lq, err, sizeof err) == 0,
              "sample %u: %s", idx[i], err);
        cell(grid, i, 2, GT, got);
        CHECK(!memcmp(got, gt, sizeof gt), "iter %lld row %d: GT column is not sample %u's GT",
              (long long)iter, i, idx[i]);
        CHECK(pf_imresize_u8(lq, LQ, LQ, 3, 2.0, up) == 0, "imresize");
        cell(grid, i, 0, GT, got);
        CHECK(!memcmp(got, up, sizeof up), "iter %lld row %d: LQ column is not imresize(LQ)",
              (long long)iter, i);
        CHECK(pf_model_infer(m, lq, LQ, LQ, out, err, sizeof err) == 0, "infer: %s", err);
        pf_to_u8(out, net, sizeof net);
        cell(grid, i, 1, GT, got);
        int d = max_diff(got, net, sizeof net);
        CHECK(d <= 1, "iter %lld row %d: output column differs from the checkpoint's network "
              "by up to %d levels", (long long)iter, i, d);
    }
    pf_model_destroy(&m);
}

static void check_eval_image(const pf_config *cfg, pf_dataset *eval, const tb_event *e,
                             int file) {
    char err[512], path[800];
    pf_image img = {0}, saved = {0};
    CHECK(pf_image_decode_png(e->png, e->png_len, e->tag, &img, err, sizeof err) == 0, "%s",
          err);
    CHECK(img.w == 3 * 48 && img.h == 48 && e->width == img.w && e->height == img.h,
          "%s: %dx%d (header %lldx%lld), want 144x48", e->tag, img.w, img.h,
          (long long)e->width, (long long)e->height);
    const pf_image *gt, *lq;
    CHECK(pf_dataset_pair(eval, file, &gt, &lq, err, sizeof err) == 0, "%s", err);
    if (img.w != 144 || img.h != 48 || gt->w != 48 || lq->w != 24) {
        pf_image_free(&img);
        return;
    }
    uint8_t got[48 * 48 * 3], up[48 * 48 * 3];
    cell(&img, 0, 2, 48, got);
    CHECK(!memcmp(got, gt->data, sizeof got), "%s: GT column is not the GT file", e->tag);
    CHECK(pf_imresize_u8(lq->data, 24, 24, 3, 2.0, up) == 0, "imresize");
    cell(&img, 0, 0, 48, got);
    CHECK(!memcmp(got, up, sizeof up), "%s: LQ column is not imresize(LQ)", e->tag);
    snprintf(path, sizeof path, "%s/eval_visuals/iter_%lld/img%02d.png", wd, (long long)e->step,
             file);
    CHECK(pf_image_read_png(path, &saved, err, sizeof err) == 0, "%s", err);
    cell(&img, 0, 1, 48, got);
    CHECK(saved.data && !memcmp(got, saved.data, sizeof got),
          "%s step %lld: output column is not %s", e->tag, (long long)e->step, path);
    (void)cfg;
    pf_image_free(&saved);
    pf_image_free(&img);
}

static tb_event ev[TB_MAX_EVENTS];

/* Send one visual message: header from `v` (NULL: the bytes `raw`), then nframes frames of the
   given sizes from `bytes`. */
static void send_visual(void *pub, const pf_msg_visual *v, const char *raw, const uint8_t *bytes,
                        const size_t *sizes, int nframes) {
    if (v) {
        pf_msg m = { .type = PF_MSG_VISUAL };
        m.u.visual = *v;
        pf_frame topic = { "visual", 6 }, frames[3];
        for (int i = 0; i < nframes; i++) frames[i] = (pf_frame){ bytes, sizes[i] };
        CHECK(pf_send(pub, &topic, &m, frames, nframes) == 0, "pf_send");
        return;
    }
    zmq_send(pub, "visual", 6, ZMQ_SNDMORE);
    zmq_send(pub, raw, strlen(raw), nframes ? ZMQ_SNDMORE : 0);
    for (int i = 0; i < nframes; i++)
        zmq_send(pub, bytes, sizes[i], i + 1 < nframes ? ZMQ_SNDMORE : 0);
}

/* The eval picture of a 1000 x 1000 image, centre-cropped (see D at the top). */
static void check_big_eval(const char *wd2, const char *big, int iter) {
    char tb[800], err[512], path[900];
    CHECK(tb_find(wd2, tb, sizeof tb) == 1, "one event file in %s", wd2);
    int n = tb_read(tb, ev, TB_MAX_EVENTS, err, sizeof err), seen = 0;
    CHECK(n > 0, "%s: %s", tb, err);
    pf_image gt = {0}, saved = {0};
    snprintf(path, sizeof path, "%s/img00.png", big);
    CHECK(pf_image_read_png(path, &gt, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/eval_visuals/iter_%d/img00.png", wd2, iter);
    CHECK(pf_image_read_png(path, &saved, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
        if (!ev[i].has_image || strcmp(ev[i].tag, "eval/img00") != 0) continue;
        seen++;
        pf_image img = {0};
        CHECK(pf_image_decode_png(ev[i].png, ev[i].png_len, "tb", &img, err, sizeof err) == 0,
              "%s", err);
        CHECK(ev[i].step == iter && img.w == 1770 && img.h == 590, "eval/img00 step %lld %dx%d",
              (long long)ev[i].step, img.w, img.h);
        if (img.w != 1770 || img.h != 590 || !gt.data || !saved.data) {
            pf_image_free(&img);
            continue;
        }
        int gt_ok = 1, out_ok = 1;
        for (int y = 0; y < 590; y++) {
            const uint8_t *row = img.data + (size_t)y * 1770 * 3;
            size_t src = ((size_t)(204 + y) * 1000 + 204) * 3;
            gt_ok &= !memcmp(row + 2 * 590 * 3, gt.data + src, 590 * 3);
            out_ok &= !memcmp(row + 590 * 3, saved.data + src, 590 * 3);
        }
        CHECK(gt_ok, "eval/img00: GT column is not the centre crop of the GT");
        CHECK(out_ok, "eval/img00: output column is not the centre crop of the saved output");
        pf_image_free(&img);
    }
    CHECK(seen == 1, "%d eval/img00 images, want 1", seen);
    if (n > 0) tb_free(ev, n);
    pf_image_free(&gt);
    pf_image_free(&saved);
}

/* Count of `text` in the file at `path` (0 when it cannot be read). */
static int count_text(const char *path, const char *text) {
    char *t = slurp(path);
    int n = 0;
    for (char *p = t; (p = strstr(p, text)) != NULL; p++) n++;
    free(t);
    return n;
}

static void test_bad_pictures(const char *bin, const char *data) {
    char cfg_path[700], out[700], wd2[700], pics2[700], path[800], events[256] = "", err[512];
    char hook_log[800], grid[800];
    snprintf(cfg_path, sizeof cfg_path, "%s/bad.yaml", root);
    snprintf(out, sizeof out, "%s/bad.txt", root);
    snprintf(wd2, sizeof wd2, "%s/wd2", root);
    snprintf(pics2, sizeof pics2, "%s/pics2", root);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  train: {gt_folder: %s, gt_patch_size: 16, repeat: 100}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: 10000000\n"
            "checkpoint_config: {interval: 10000000}\n"
            "log_config: {interval: 100}\n"
            "visual_config: {interval: 1000, num_samples: 2, output_dir: %s}\n"
            "work_dir: %s\n",
            data, pics2, wd2);
    fclose(f);
    run r;
    start_job(&r, bin, out, cfg_path, "1", NULL, NULL, NULL);
    snprintf(path, sizeof path, "%s/coordinator.log", wd2);
    CHECK(wait_text(path, "visual hook 'visual' joined", 60), "the visual hook did not join");
    log_value(path, "events in ", events, sizeof events);
    snprintf(path, sizeof path, "%s/samples_rank0.log", wd2);
    CHECK(wait_lines(wd2, 1, 60), "training did not start");
    void *ctx = zmq_ctx_new(), *pub = zmq_socket(ctx, ZMQ_PUB);
    int linger = 2000;
    zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
    CHECK(zmq_connect(pub, events) == 0, "connect to '%s'", events);
    usleep(500000);                                     /* PUB: let the connection settle */
    static uint8_t bytes[64];
    for (int i = 0; i < 64; i++) bytes[i] = (uint8_t)(i * 5);
    pf_msg_visual v;
    memset(&v, 0, sizeof v);
    snprintf(v.source, sizeof v.source, "stranger");
    snprintf(v.tag, sizeof v.tag, "train");
    v.iter = 999;
    v.n = 1;
    v.lq_h = v.lq_w = 1;
    v.gt_h = v.gt_w = 2;
    const size_t good[3] = {3, 12, 12}, short_gt[3] = {3, 12, 11};
    send_visual(pub, &v, NULL, bytes, good, 1);              /* 2 frames after the topic */
    send_visual(pub, NULL, "\xc1 not msgpack", bytes, good, 3);
    pf_msg_visual bad = v;
    bad.gt_h = 3;                                            /* not a multiple of lq */
    send_visual(pub, &bad, NULL, bytes, (const size_t[3]){3, 18, 18}, 3);
    send_visual(pub, &v, NULL, bytes, short_gt, 3);
    /* n = 0 cannot be encoded by pf_send (out of range): the same header, n patched. */
    pf_msg m = { .type = PF_MSG_VISUAL };
    m.u.visual = v;
    void *hdr;
    size_t hdrlen;
    CHECK(pf_msg_encode(&m, &hdr, &hdrlen) == 0, "encode");
    uint8_t *key = memmem(hdr, hdrlen, "\xa1n\x01", 3);  /* "n": 1 */
    CHECK(key != NULL, "n in the header");
    if (key) key[2] = 0;
    zmq_send(pub, "visual", 6, ZMQ_SNDMORE);
    zmq_send(pub, hdr, hdrlen, ZMQ_SNDMORE);
    for (int i = 0; i < 3; i++) zmq_send(pub, bytes, good[i], i < 2 ? ZMQ_SNDMORE : 0);
    free(hdr);
    const uint8_t px[27] = {10, 20, 30,                       /* LQ, then output, then GT */
                            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                            101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112};
    pf_frame topic = { "visual", 6 }, frames[3] = { { px, 3 }, { px + 3, 12 }, { px + 15, 12 } };
    m.u.visual = v;
    CHECK(pf_send(pub, &topic, &m, frames, 3) == 0, "good picture");
    zmq_close(pub);
    zmq_ctx_term(ctx);
    snprintf(hook_log, sizeof hook_log, "%s/visual_hook.log", wd2);
    snprintf(grid, sizeof grid, "%s/iter_999.png", pics2);
    struct stat sb;
    double end = pf_now() + 120;
    while (pf_now() < end && (count_text(hook_log, "dropped a ") < 5 || stat(grid, &sb) != 0))
        usleep(50000);
    usleep(300000);                                     /* the PNG's last bytes */
    kill(r.pid, SIGINT);
    int st = finish(&r, 300);
    CHECK(st == 130, "the job with bad pictures, stopped by SIGINT, exited %d, want 130 (see %s)",
          st, out);
    snprintf(path, sizeof path, "%s", hook_log);
    char *log = pf_read_file(path, NULL, err, sizeof err);
    int warnings = 0;
    for (char *p = log; p && (p = strstr(p, "dropped a ")) != NULL; p++) warnings++;
    CHECK(warnings == 5, "%d warnings about dropped pictures in %s, want 5", warnings, path);
    CHECK(log && strstr(log, "do not match") && strstr(log, "not an integer multiple"),
          "the warnings say what is wrong");
    free(log);
    pf_image img = {0};
    snprintf(path, sizeof path, "%s/iter_999.png", pics2);
    CHECK(pf_image_read_png(path, &img, err, sizeof err) == 0, "%s", err);
    static const uint8_t want[2][6][3] = {
        {{10, 20, 30}, {10, 20, 30}, {1, 2, 3}, {4, 5, 6}, {101, 102, 103}, {104, 105, 106}},
        {{10, 20, 30}, {10, 20, 30}, {7, 8, 9}, {10, 11, 12}, {107, 108, 109}, {110, 111, 112}},
    };
    CHECK(img.w == 6 && img.h == 2 && !memcmp(img.data, want, sizeof want),
          "iter_999.png: %dx%d, pixels differ from the hand-worked grid", img.w, img.h);
    pf_image_free(&img);
}

static void test_big_eval(const char *bin, const char *data) {
    char cfg_path[700], out[700], wd3[700], big[700];
    snprintf(big, sizeof big, "%s/big", root);
    make_images(big, 1, 1000, 4);
    snprintf(cfg_path, sizeof cfg_path, "%s/big.yaml", root);
    snprintf(out, sizeof out, "%s/big.txt", root);
    snprintf(wd3, sizeof wd3, "%s/wd3", root);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  train: {gt_folder: %s, gt_patch_size: 16}\n"
            "  eval: {gt_folder: %s}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: 2\n"
            "checkpoint_config: {interval: 2}\n"
            "evaluation: {interval: 2, metrics: [PSNR], save_image: true}\n"
            "visual_config: {interval: 1000, num_samples: 2, output_dir: %s/pics3}\n"
            "work_dir: %s\n",
            data, big, root, wd3);
    fclose(f);
    run r;
    start_job(&r, bin, out, cfg_path, "1", NULL, NULL, NULL);
    int st = finish(&r, 300);
    CHECK(st == 0, "the job that evaluates a 1000 x 1000 image exited %d (see %s)", st, out);
    check_big_eval(wd3, big, 2);
}

int main(void) {
    char bin[512], data[600], cfg_path[700], out[700], err[512];
    pf_test_job_begin("visual", bin, sizeof bin, root, sizeof root);
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(wd, sizeof wd, "%s/wd", root);
    snprintf(pics, sizeof pics, "%s/pics", root);
    snprintf(cfg_path, sizeof cfg_path, "%s/visual.yaml", root);
    snprintf(out, sizeof out, "%s/out.txt", root);
    make_images(data, 4, 48, 11);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f,
            "model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1, loss: {type: L1Loss}}\n"
            "data:\n"
            "  samples_per_gpu: 4\n"
            "  train: {gt_folder: %s, gt_patch_size: %d, use_flip: true, use_rot: true,\n"
            "          repeat: 2}\n"
            "  eval: {gt_folder: %s}\n"
            "optimizers: {type: Adam, lr: 1.0e-3}\n"
            "total_iters: 6\n"
            "checkpoint_config: {interval: 1}\n"
            "evaluation: {interval: 3, metrics: [PSNR], save_image: true}\n"
            "log_config: {interval: 1}\n"
            "visual_config: {interval: 3, num_samples: %d, output_dir: %s}\n"
            "work_dir: %s\n"
            "seed: 5\n",
            data, GT, data, N_SAMPLES, pics, wd);
    fclose(f);
    run r;
    start_job(&r, bin, out, cfg_path, "1", NULL, NULL, NULL);
    int st = finish(&r, 300);
    CHECK(st == 0, "pixflow train exited %d (see %s)", st, out);

    pf_config cfg;
    CHECK(pf_config_load(&cfg, cfg_path, err, sizeof err) == 0, "%s", err);
    pf_dataset ds, eval;
    CHECK(pf_dataset_open(&ds, &cfg.train, "data.train", cfg.scale, cfg.train.gt_patch_size, err,
                          sizeof err) == 0, "%s", err);
    CHECK(pf_dataset_open(&eval, &cfg.eval, "data.eval", cfg.scale, 0, err, sizeof err) == 0,
          "%s", err);
    pf_dataset_set_seed(&eval, cfg.seed);

    /* A, B */
    char p[800];
    struct stat sb;
    snprintf(p, sizeof p, "%s/visuals", wd);
    CHECK(stat(p, &sb) != 0, "%s made although output_dir is set", p);
    pf_image grids[7] = {{0}};
    for (int it = 1; it <= 6; it++) {
        snprintf(p, sizeof p, "%s/iter_%d.png", pics, it);
        int have = stat(p, &sb) == 0;
        CHECK(have == (it % 3 == 0), "%s %s", p, have ? "written" : "missing");
        if (!have || it % 3) continue;
        CHECK(pf_image_read_png(p, &grids[it], err, sizeof err) == 0, "%s", err);
        CHECK(grids[it].w == 3 * GT && grids[it].h == N_SAMPLES * GT, "%s is %dx%d", p,
              grids[it].w, grids[it].h);
        if (grids[it].w == 3 * GT && grids[it].h == N_SAMPLES * GT)
            check_train_grid(&cfg, &ds, it, &grids[it]);
    }

    /* C */
    char tb[800];
    CHECK(tb_find(wd, tb, sizeof tb) == 1, "one event file in %s", wd);
    int n = tb_read(tb, ev, TB_MAX_EVENTS, err, sizeof err);
    CHECK(n > 0, "%s: %s", tb, err);
    int train_seen = 0, eval_seen[4][7] = {{0}}, scalars = 0;
    for (int i = 0; i < n; i++) {
        const tb_event *e = &ev[i];
        if (!e->has_image) {
            scalars += e->n_values == 1;
            continue;
        }
        CHECK(e->colorspace == 3 && e->png, "%s: colorspace %lld", e->tag,
              (long long)e->colorspace);
        if (!strcmp(e->tag, "visual/train")) {
            train_seen++;
            pf_image img = {0};
            int k = (int)e->step;
            CHECK((k == 3 || k == 6) && grids[k].data, "visual/train at step %d", k);
            CHECK(pf_image_decode_png(e->png, e->png_len, "tb", &img, err, sizeof err) == 0,
                  "%s", err);
            if ((k == 3 || k == 6) && grids[k].data)
                CHECK(img.w == grids[k].w && img.h == grids[k].h && e->width == img.w &&
                      e->height == img.h &&
                      !memcmp(img.data, grids[k].data, (size_t)img.w * img.h * 3),
                      "visual/train step %d differs from pics/iter_%d.png", k, k);
            pf_image_free(&img);
        } else {
            int file = -1;
            CHECK(sscanf(e->tag, "eval/img%d", &file) == 1 && file >= 0 && file < N_SAMPLES &&
                  (e->step == 3 || e->step == 6), "unexpected image %s at step %lld", e->tag,
                  (long long)e->step);
            if (file >= 0 && file < 4 && (e->step == 3 || e->step == 6)) {
                eval_seen[file][e->step]++;
                check_eval_image(&cfg, &eval, e, file);
            }
        }
    }
    CHECK(train_seen == 2, "%d visual/train images, want 2", train_seen);
    for (int k = 0; k < N_SAMPLES; k++)
        CHECK(eval_seen[k][3] == 1 && eval_seen[k][6] == 1, "eval/img%02d: %d at step 3, %d at "
              "step 6", k, eval_seen[k][3], eval_seen[k][6]);
    CHECK(scalars >= 4, "scalars still written (%d)", scalars);
    if (n > 0) tb_free(ev, n);
    for (int k = 0; k < 7; k++) pf_image_free(&grids[k]);
    pf_dataset_close(&ds);
    pf_dataset_close(&eval);

    /* D, E */
    test_bad_pictures(bin, data);
    test_big_eval(bin, data);
    if (pf_test_fail_ == 0) remove_tree(root);
    return pf_test_end("test_visual");
}
