/*  End-to-end GAN training (issue 41, docs/gan.md): `pixflow train` on a config with a `gan`
    section, every role its own process, on the CPU.

    Data, written by the test: 4 textured 96 x 96 PNG photos (RealESRGANDataset, GT patches of
    80, gt_usm: the loaders send the plain GT beside the sharpened one), MSRResNet x4 with 8
    features and 1 block, UNetDiscriminatorSN with 8 features, the perceptual loss on VGG19's
    conv1_2 and conv2_1 with random weights the test writes under torchvision's names
    (features.0 / 2 / 5), vanilla GAN loss, net_d_iters 2 and net_d_init_iters 1 (iterations
    1 and 3 train net_d only), Adam for net_g with its EMA, SGD with momentum for net_d (not
    scale-invariant, unlike Adam: gradients summed instead of averaged over the ranks would
    show), a Step schedule applied to both optimisers, a checkpoint every iteration. 4
    iterations.

    A. 1 worker with batch 4: the job finishes; the log has every term (l_g_pix, l_g_percep,
       l_g_gan, l_d_real, l_d_fake, out_d_real, out_d_fake) of each iteration, iteration 1
       and 3 without a generator step; the train loss is l_g_total (or l_d_real + l_d_fake at
       1 and 3); optim_d's lr follows lr_config from gan.optim_d.lr (halved from iteration 4,
       MMCV's runner.iter 3, as net_g's); each checkpoint has net_d's state_dict (weight_orig,
       weight_u, weight_v) and optim_d's momentum under net_d's names beside net_g's files;
       iteration 3 leaves net_g's weights as they were and moves its EMA by BasicSR's
       model_ema rule (ema3 = 0.9 ema2 + 0.1 p2: the EMA runs every iteration).
    B. 2 workers with batch 2 each: the same batches, the same losses and terms (to float
       rounding: only the order of sums differs), net_d's initial weights the same on both
       ranks and as A's (their digest in each rank's log), and net_g's weights and EMA after 4
       iterations the same as A's (both optimisers and the all-reduce of both networks'
       gradients).
    C. Resume is bit-identical: the same job interrupted by SIGINT once its first batch is
       consumed (it stops after that step, exit 130, its last checkpoint at iteration k < 4)
       and resumed (`--resume auto`) logs the same train losses and GAN terms, bit for bit, at
       every iteration, and ends with the same bits in net_g, its EMA, optim_g, net_d
       (weight_orig, u, v) and optim_d as A. A job with gan.load_from_d (BasicSR's
       pretrain_network_d) = iter_k.net_d.safetensors starts from the net_d the resume
       restored (the same digest in the log, unlike A's fresh one); with max_keep_ckpts 1 its last checkpoint's four files are all that is
       left. A checkpoint without its net_d file is refused with an error that names it.
    E. model_type ESRGANModel (relativistic) trains too: every term logged and finite.
    G. ESRGANModel with VGGStyleDiscriminator (input_size 128, GT patches 128) trains: every
       term finite; its checkpoint's net_d file holds the BatchNorm running statistics and
       num_batches_tracked (I64) = the number of net_d calls.
    D. The discriminator's real input is the plain GT (gan_gt_usm false): at iteration 1 A's
       l_d_real and out_d_real equal those of a job whose loaders send the plain GT alone
       (data.train.gt_usm off), and differ from a job with gan_gt_usm true.
    F. The terms reach the train events (proto.h gan_terms) and every consumer of A's run:
       metrics.jsonl has each iteration's terms under BasicSR's keys, equal to rank0.log's
       numbers (log_config.interval 1: no averaging; to the log's 6 digits), the generator's
       only at iterations 2 and 4, l_g_style never (style_weight 0); train.log's lines say
       "l_g_pix: %.4e" and so on; TensorBoard has losses/l_g_pix ... and out_d_real /
       out_d_fake (BasicSR's tags) at those steps with those values.
*/
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "proto/proto.h"
#include "pf_test.h"
#include "pf_test_job.h"
#include "pf_test_tb.h"

#define ITERS 4
#define N_TERMS 8

static char root[256], bin[1024];
static const char *model_type = "RealESRGANModel";   /* gan.model_type of the next config */
static int total_iters = ITERS;                      /* total_iters of the next config */
static int max_keep = 10;                            /* its max_keep_ckpts */
static const char *network_d = "{type: UNetDiscriminatorSN, num_in_ch: 3, num_feat: 8,\n"
                               "              skip_connection: true}";   /* its network_d */
static int gt_patch = 80;                            /* its gt_patch_size */
static const char *train_dir = "train";              /* its gt_folder under root */
static const char *TERMS[N_TERMS] = { "l_g_pix", "l_g_percep", "l_g_gan", "l_d_real",
                                      "l_d_fake", "out_d_real", "out_d_fake", "lr_d" };

/* VGG19 features.0, 2 and 5 (conv1_1, conv1_2, conv2_1), He-scaled random weights, small
   random biases, as a safetensors file at path. */
static void write_vgg(const char *path) {
    static const int conv[3][2] = { { 3, 64 }, { 64, 64 }, { 64, 128 } };
    static const int index[3] = { 0, 2, 5 };
    pf_st_tensor t[6];
    char names[6][32];
    float *data[6];
    pf_rng r = pf_rng_make(77, 0, 0);
    for (int k = 0; k < 3; k++) {
        int in = conv[k][0], out = conv[k][1];
        size_t nw = (size_t)out * in * 9;
        data[2 * k] = malloc(nw * sizeof(float));
        data[2 * k + 1] = malloc((size_t)out * sizeof(float));
        float s = (float)sqrt(6.0 / (in * 9));
        for (size_t i = 0; i < nw; i++) data[2 * k][i] = s * (float)(2 * pf_rng_uniform(&r) - 1);
        for (int i = 0; i < out; i++) data[2 * k + 1][i] = 0.05f * (float)pf_rng_uniform(&r);
        snprintf(names[2 * k], sizeof names[0], "features.%d.weight", index[k]);
        snprintf(names[2 * k + 1], sizeof names[0], "features.%d.bias", index[k]);
        t[2 * k] = (pf_st_tensor){ names[2 * k], data[2 * k], 4, { out, in, 3, 3 } };
        t[2 * k + 1] = (pf_st_tensor){ names[2 * k + 1], data[2 * k + 1], 1, { out } };
    }
    void *buf = NULL;
    size_t len = 0;
    char err[256];
    if (pf_safetensors_serialize(t, 6, NULL, 0, &buf, &len, err, sizeof err) != 0) {
        fprintf(stderr, "setup: %s\n", err);
        exit(1);
    }
    FILE *f = create_or_exit(path);
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    for (int k = 0; k < 6; k++) free(data[k]);
}

/* The job: `batch` per worker; data.train.gt_usm `usm`; `gan_extra` more lines of the gan
   section ("" for none). */
static void write_config(const char *path, const char *work_dir, int batch, int usm,
                         const char *gan_extra) {
    FILE *f = create_or_exit(path);
    fprintf(f,
            "model: {type: MSRResNet, scale: 4, num_feat: 8, num_block: 1,\n"
            "        loss: {type: L1Loss, loss_weight: 1.0}}\n"
            "data:\n"
            "  samples_per_gpu: %d\n"
            "  prefetch: 2\n"
            "  train: {type: RealESRGANDataset, gt_folder: %s/%s, gt_patch_size: %d,\n"
            "          use_flip: true, use_rot: true, repeat: 4, gt_usm: %s}\n"
            "optimizers: {type: Adam, lr: 1.0e-3, betas: [0.9, 0.99]}\n"
            "ema_decay: 0.9\n"
            "lr_config: {policy: Step, step: [3], gamma: 0.5}\n"
            "total_iters: %d\n"
            "log_config: {interval: 1}\n"
            "checkpoint_config: {interval: 1, max_keep_ckpts: %d}\n"
            "work_dir: %s\n"
            "seed: 5\n"
            "gan:\n"
            "  model_type: %s\n"
            "  net_d_iters: 2\n"
            "  net_d_init_iters: 1\n"
            "  network_d: %s\n"
            "  perceptual_opt:\n"
            "    type: PerceptualLoss\n"
            "    layer_weights: {conv1_2: 0.1, conv2_1: 1.0}\n"
            "    vgg_type: vgg19\n"
            "    perceptual_weight: 1.0\n"
            "    style_weight: 0\n"
            "    criterion: l1\n"
            "    vgg_weights: %s/vgg19.safetensors\n"
            "  gan_opt: {type: GANLoss, gan_type: vanilla, loss_weight: 0.1}\n"
            "  optim_d: {type: SGD, lr: 0.02, momentum: 0.9}\n%s",
            batch, root, train_dir, gt_patch, usm ? "true" : "false", total_iters, max_keep,
            work_dir, model_type, network_d, root, gan_extra);
    fclose(f);
}

/* `pixflow train` of tag's config (batch per worker, `workers`, data.train.gt_usm `usm`, more
   gan lines `gan_extra`; resume: --resume, the config as written before); its exit status. */
static int train_with(const char *tag, int batch, const char *workers, const char *resume,
                      int usm, const char *gan_extra) {
    char cfg[600], wd[600], out[600];
    snprintf(cfg, sizeof cfg, "%s/%s.yaml", root, tag);
    snprintf(wd, sizeof wd, "%s/%s", root, tag);
    snprintf(out, sizeof out, "%s/%s%s.out", root, tag, resume ? "_resume" : "");
    if (!resume) write_config(cfg, wd, batch, usm, gan_extra);
    run r;
    start_job(&r, bin, out, cfg, "1", resume, "--workers", workers);
    return finish(&r, 240);
}

static int train(const char *tag, int batch, const char *workers, const char *resume) {
    return train_with(tag, batch, workers, resume, 1, "");
}

/* rank's log of tag's run (malloc'd, "" when absent). */
static char *rank_log(const char *tag, int rank) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s/rank%d.log", root, tag, rank);
    return slurp(path);
}

/* The terms of tag's iterations 1..ITERS from rank 0's "gan: iter N:" lines: t[it][k] for
   TERMS[k], NAN when absent; g_step[it] 0 on the lines that say "no generator step". Returns
   how many iteration lines were found. */
static int read_terms(const char *tag, double t[ITERS + 1][N_TERMS], int g_step[ITERS + 1]) {
    char *log = rank_log(tag, 0);
    int found = 0;
    for (int it = 1; it <= ITERS; it++) {
        for (int k = 0; k < N_TERMS; k++) t[it][k] = NAN;
        char key[64];
        snprintf(key, sizeof key, "gan: iter %d: ", it);
        char *p = strstr(log, key);
        if (!p) continue;
        found++;
        char *eol = strchr(p, '\n');
        if (eol) *eol = '\0';
        g_step[it] = !strstr(p, "no generator step");
        for (int k = 0; k < N_TERMS; k++) {
            char name[32];
            snprintf(name, sizeof name, " %s ", TERMS[k]);
            char *q = strstr(p, name);
            if (q) t[it][k] = atof(q + strlen(name));
        }
        if (eol) *eol = '\n';
    }
    free(log);
    return found;
}

/* net_d's initial digest from rank's log of tag (the last run's, when the log holds several
   starts), or "". */
static void d_digest(const char *tag, int rank, char out[17]) {
    char *log = rank_log(tag, rank), *p = NULL;
    for (char *q = strstr(log, "initial digest "); q; q = strstr(q + 1, "initial digest "))
        p = q;
    snprintf(out, 17, "%.16s", p ? p + strlen("initial digest ") : "");
    free(log);
}

/* Largest |a - b| over every value of the two iter_ITERS checkpoints (net_g's params and its
   EMA; absolute: the biases start at 0 and move by about lr per Adam step, so relative to
   their size Adam's normalisation of near-zero gradients magnifies rounding). */
static double weight_distance(const char *tag_a, const char *tag_b) {
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/%s/checkpoints/iter_%d.safetensors", root, tag_a, ITERS);
    snprintf(pb, sizeof pb, "%s/%s/checkpoints/iter_%d.safetensors", root, tag_b, ITERS);
    int ema = 0;
    double d = ckpt_distance(pa, pb, 0, &ema);
    CHECK(ema > 0, "%s has no params_ema.* tensors", pb);
    return d;
}

/* Iteration 3 (no generator step): net_g's weights stay, its EMA moves by BasicSR's rule
   from iteration 2's checkpoint. */
static void check_ema_step(void) {
    char p2[600], p3[600], err[512];
    snprintf(p2, sizeof p2, "%s/one/checkpoints/iter_2.safetensors", root);
    snprintf(p3, sizeof p3, "%s/one/checkpoints/iter_3.safetensors", root);
    pf_safetensors *a = NULL, *b = NULL;
    if (pf_safetensors_load(p2, &a, err, sizeof err) != 0 ||
        pf_safetensors_load(p3, &b, err, sizeof err) != 0) {
        CHECK(0, "%s", err);
        pf_safetensors_free(&a);
        return;
    }
    double moved = 0, worst = 0, same = 0;
    int n_ema = 0;
    for (int i = 0; i < pf_safetensors_count(b); i++) {
        const char *name;
        int nd;
        int64_t shape[4];
        const float *e3 = pf_safetensors_at(b, i, &name, &nd, shape);
        if (strncmp(name, "params_ema.", 11) != 0) continue;
        n_ema++;
        const float *e2 = pf_safetensors_get(a, name, &nd, shape);
        const float *w2 = pf_safetensors_get(a, name + 11, &nd, shape);
        const float *w3 = pf_safetensors_get(b, name + 11, &nd, shape);
        if (!e2 || !w2 || !w3) {
            CHECK(0, "%s or its weights missing", name);
            continue;
        }
        size_t n = 1;
        for (int k = 0; k < nd; k++) n *= (size_t)shape[k];
        for (size_t k = 0; k < n; k++) {
            same = fmax(same, fabs((double)w3[k] - w2[k]));
            moved = fmax(moved, fabs((double)e3[k] - e2[k]));
            worst = fmax(worst, fabs(e3[k] - (0.9 * e2[k] + 0.1 * w2[k])));
        }
    }
    CHECK(n_ema > 0, "no params_ema.* in %s", p3);
    CHECK(same == 0, "iteration 3 (no generator step) moved net_g by %.3g", same);
    CHECK(moved > 1e-6 && worst < 1e-6, "iteration 3's EMA: moved %.3g, %.3g from BasicSR's "
          "0.9 ema + 0.1 p", moved, worst);
    pf_safetensors_free(&a);
    pf_safetensors_free(&b);
}

/* A: the single worker's run, its log and losses. */
static void check_one(double t[ITERS + 1][N_TERMS], const double *loss) {
    int g[ITERS + 1] = { 0 };
    CHECK(read_terms("one", t, g) == ITERS, "rank0.log lacks gan lines for some iterations");
    CHECK(!g[1] && g[2] && !g[3] && g[4], "generator step at 2 and 4 only (net_d_iters 2, "
          "net_d_init_iters 1)");
    for (int it = 1; it <= ITERS; it++) {
        for (int k = g[it] ? 0 : 3; k < N_TERMS; k++)
            CHECK(isfinite(t[it][k]), "iteration %d: %s missing or not finite", it, TERMS[k]);
        double want = g[it] ? t[it][0] + t[it][1] + t[it][2] : t[it][3] + t[it][4];
        CHECK(fabs(loss[it] - want) <= 1e-4 * fmax(1.0, fabs(want)),
              "iteration %d: loss %.6g is not l_g_total / l_d_real + l_d_fake (%.6g)", it,
              loss[it], want);
    }
    CHECK(t[2][0] > 0 && t[2][1] > 0 && t[2][2] > 0, "l_g_pix, l_g_percep, l_g_gan > 0");
    CHECK(t[1][7] == 0.02 && t[2][7] == 0.02 && t[3][7] == 0.02 && t[4][7] == 0.01,
          "optim_d's lr: 0.02, 0.02, 0.02, 0.01 (Step at MMCV's 0-based iter 3), got %g %g %g "
          "%g", t[1][7], t[2][7], t[3][7], t[4][7]);
    char *log = rank_log("one", 0);
    CHECK(strstr(log, "batches carry the plain GT beside gt_usm"),
          "the loaders did not send the plain GT");
    free(log);
    check_ema_step();
}

/* rank0.log's column (TERMS) of each event term (proto.h PF_GAN_TERM_*), -1: not logged
   there (l_g_style, whose weight is 0 in this config: never on the wire either). */
static const int TERM_COLUMN[PF_GAN_N_TERMS] = { 0, 1, -1, 2, 3, 4, 5, 6 };

/* |a - b| within the rounding of the log's %.6g (5e-6 relative) plus float's. */
static int close6(double a, double b) {
    return fabs(a - b) <= 6e-6 * fmax(fabs(b), 1e-30);
}

/* F, metrics.jsonl: each train line's terms against rank0.log's t (NAN: not logged). Returns
   the number of train lines checked. */
static int check_metrics_terms(const char *wd, const double t[ITERS + 1][N_TERMS],
                               const int g[ITERS + 1]) {
    char path[700], err[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", wd);
    char *text = pf_read_file(path, NULL, err, sizeof err);
    CHECK(text != NULL, "%s", err);
    int lines = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *kind = cJSON_GetObjectItem(o, "kind");
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "train")) {
            cJSON_Delete(o);
            continue;
        }
        int it = (int)cJSON_GetObjectItem(o, "iter")->valuedouble;
        lines++;
        for (int i = 0; i < PF_GAN_N_TERMS && it >= 1 && it <= ITERS; i++) {
            const cJSON *v = cJSON_GetObjectItem(o, pf_gan_term_name(i));
            int col = TERM_COLUMN[i], want = col >= 0 && (i >= PF_GAN_TERM_L_D_REAL || g[it]);
            CHECK(!v == !want, "metrics.jsonl, iteration %d: %s %s", it, pf_gan_term_name(i),
                  v ? "present, rank0.log has none" : "missing");
            if (v && want)
                CHECK(cJSON_IsNumber(v) && close6(v->valuedouble, t[it][col]),
                      "metrics.jsonl, iteration %d: %s %.9g, rank0.log %.6g", it,
                      pf_gan_term_name(i), v->valuedouble, t[it][col]);
        }
        cJSON_Delete(o);
    }
    free(text);
    return lines;
}

/* F, TensorBoard: the GAN scalars of wd's event file against t. */
static void check_tb_terms(const char *wd, const double t[ITERS + 1][N_TERMS],
                           const int g[ITERS + 1]) {
    static tb_event ev[TB_MAX_EVENTS];
    char path[700], err[256];
    CHECK(tb_find(wd, path, sizeof path) == 1, "%s: one TensorBoard event file", wd);
    int n = tb_read(path, ev, TB_MAX_EVENTS, err, sizeof err);
    CHECK(n > 0, "%s: %s", path, err);
    int seen[PF_GAN_N_TERMS] = { 0 };
    for (int e = 0; e < n; e++) {
        for (int i = 0; i < PF_GAN_N_TERMS; i++) {
            char tag[64];
            const char *key = pf_gan_term_name(i);
            snprintf(tag, sizeof tag, "%s%s", strncmp(key, "l_", 2) ? "" : "losses/", key);
            if (strcmp(ev[e].tag, tag)) continue;
            int it = (int)ev[e].step, col = TERM_COLUMN[i];
            CHECK(it >= 1 && it <= ITERS && col >= 0 && isfinite(t[it][col]) &&
                      close6(ev[e].value, t[it][col]),
                  "TensorBoard %s at step %d: %.9g, rank0.log %.6g", tag, it, ev[e].value,
                  it >= 1 && it <= ITERS && col >= 0 ? t[it][col] : NAN);
            seen[i]++;
        }
    }
    tb_free(ev, n > 0 ? n : 0);
    for (int i = 0; i < PF_GAN_N_TERMS; i++) {
        int want = TERM_COLUMN[i] < 0 ? 0 : i >= PF_GAN_TERM_L_D_REAL ? ITERS : g[2] + g[4];
        CHECK(seen[i] == want, "TensorBoard: %s at %d steps, expected %d", pf_gan_term_name(i),
              seen[i], want);
    }
}

/* F: A's train events carried the terms to metrics.jsonl, train.log and TensorBoard. */
static void check_event_terms(const double t[ITERS + 1][N_TERMS]) {
    int g[ITERS + 1] = { 0, 0, 1, 0, 1 };       /* net_d_iters 2, net_d_init_iters 1 */
    char wd[600], path[700];
    snprintf(wd, sizeof wd, "%s/one", root);
    CHECK(check_metrics_terms(wd, t, g) == ITERS, "metrics.jsonl: %d train lines", ITERS);
    snprintf(path, sizeof path, "%s/train.log", wd);
    char *log = slurp(path), want[64];
    /* iteration 2's line: "loss: ..., l_g_pix: 1.2345e-02, l_g_percep: ..." */
    char *line = strstr(log, "Iter [2/");
    char *eol = line ? strchr(line, '\n') : NULL;
    if (eol) *eol = '\0';
    for (int i = 0; i < PF_GAN_N_TERMS; i++) {
        if (TERM_COLUMN[i] < 0) continue;
        snprintf(want, sizeof want, ", %s: ", pf_gan_term_name(i));
        char *p = line ? strstr(line, want) : NULL;
        CHECK(p && fabs(atof(p + strlen(want)) - t[2][TERM_COLUMN[i]]) <=
                       6e-5 * fabs(t[2][TERM_COLUMN[i]]),
              "train.log, iteration 2: no '%s%.4e' in '%s'", want, t[2][TERM_COLUMN[i]],
              line ? line : "(no line)");
    }
    CHECK(line && !strstr(line, "l_g_style"), "train.log: l_g_style logged (weight 0)");
    free(log);
    check_tb_terms(wd, t, g);
}

/* The names in folder dir, sorted, separated by spaces (malloc'd). */
static char *list_dir(const char *dir) {
    struct dirent **e = NULL;
    int n = scandir(dir, &e, NULL, alphasort);
    char *out = calloc(1, 4096);
    for (int i = 0; i < n; i++) {
        if (e[i]->d_name[0] != '.' && strlen(out) + strlen(e[i]->d_name) + 2 < 4096)
            snprintf(out + strlen(out), 4096 - strlen(out), "%s%s", out[0] ? " " : "",
                     e[i]->d_name);
        free(e[i]);
    }
    free(e);
    return out;
}

/* 0 when checkpoint files a and b (work_dir/checkpoints/NAME of tags ta, tb) hold the same
   tensors with the same bits (both ways: the same names too). */
static double ckpt_file_distance(const char *ta, const char *tb, const char *name) {
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/%s/checkpoints/%s", root, ta, name);
    snprintf(pb, sizeof pb, "%s/%s/checkpoints/%s", root, tb, name);
    return fmax(ckpt_distance(pa, pb, 0, NULL), ckpt_distance(pb, pa, 0, NULL));
}

/* A's checkpoint holds net_d (spectral norm state included) and optim_d by net_d's names. */
static void check_net_d_files(void) {
    char path[700], err[512];
    snprintf(path, sizeof path, "%s/one/checkpoints/iter_%d.net_d.safetensors", root, ITERS);
    pf_safetensors *d = NULL, *o = NULL;
    int rc = pf_safetensors_load(path, &d, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    snprintf(path, sizeof path, "%s/one/checkpoints/iter_%d.net_d.optim.safetensors", root,
             ITERS);
    if (rc == 0) rc = pf_safetensors_load(path, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc == 0) {
        int nd;
        int64_t sh[4];
        CHECK(pf_safetensors_get(d, "conv0.weight", &nd, sh) &&
                  pf_safetensors_get(d, "conv1.weight_orig", &nd, sh) &&
                  pf_safetensors_get(d, "conv1.weight_u", &nd, sh) && nd == 1 && sh[0] == 16 &&
                  pf_safetensors_get(d, "conv1.weight_v", &nd, sh) &&
                  pf_safetensors_get(d, "conv9.bias", &nd, sh),
              "net_d's state_dict lacks torch's names (conv0.weight, conv1.weight_orig / _u "
              "[16] / _v, conv9.bias)");
        CHECK(pf_safetensors_get(o, "conv1.weight_orig.momentum_buffer", &nd, sh) &&
                  nd == 4 && sh[0] == 16 && pf_safetensors_meta(o, "optimizer") &&
                  !strcmp(pf_safetensors_meta(o, "optimizer"), "SGD"),
              "optim_d's file lacks SGD's momentum_buffer under net_d's names");
    }
    pf_safetensors_free(&d);
    pf_safetensors_free(&o);
}

/* The iteration of work_dir tag's checkpoints/latest (iter_K.safetensors), or -1. */
static int latest_iter(const char *tag) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s/checkpoints/latest", root, tag);
    char *t = slurp(path);
    int k = strncmp(t, "iter_", 5) ? -1 : atoi(t + 5);
    free(t);
    return k;
}

/* C: interrupted by SIGINT and resumed equals A bit for bit; gan.load_from_d; a checkpoint
   without net_d. */
static void check_resume(const double one[ITERS + 1][N_TERMS], const double *loss_one) {
    char cfg[600], wd[600];
    snprintf(cfg, sizeof cfg, "%s/half.yaml", root);
    snprintf(wd, sizeof wd, "%s/half", root);
    write_config(cfg, wd, 4, 1, "");
    char out_path[600];
    snprintf(out_path, sizeof out_path, "%s/half.out", root);
    run r;
    start_job(&r, bin, out_path, cfg, "1", NULL, "--workers", "1");
    CHECK(wait_lines(wd, 1, 120), "the run to interrupt consumed no batch (see %s)", out_path);
    kill(r.pid, SIGINT);
    int st = finish(&r, 60), k = latest_iter("half");
    CHECK(st == 130 && k >= 1 && k < ITERS, "interrupted run: exit %d (130 expected), last "
          "checkpoint %d (1 to %d expected; see %s)", st, k, ITERS - 1, out_path);
    if (st != 130 || k < 1 || k >= ITERS) return;
    int st2 = train("half", 4, "1", "auto");
    CHECK(st2 == 0, "resumed run exited with %d (see %s/half_resume.out)", st2, root);
    if (st2) return;
    printf("interrupted after iteration %d, resumed to %d\n", k, ITERS);
    double t[ITERS + 1][N_TERMS], loss[ITERS + 1] = { 0 }, lr[ITERS + 1];
    int g[ITERS + 1], diff = 0;
    CHECK(read_terms("half", t, g) == ITERS, "resumed run: gan lines missing");
    CHECK(train_curve(wd, loss, lr, ITERS) == ITERS, "resumed run: %d train events", ITERS);
    for (int it = 1; it <= ITERS; it++) {
        diff += loss[it] != loss_one[it];
        for (int j = 0; j < N_TERMS; j++)
            diff += !(t[it][j] == one[it][j] || (isnan(t[it][j]) && isnan(one[it][j])));
    }
    CHECK(diff == 0, "%d losses / terms differ between the resumed and the uninterrupted run",
          diff);
    char name[4][64];
    snprintf(name[0], sizeof name[0], "iter_%d.safetensors", ITERS);
    snprintf(name[1], sizeof name[1], "iter_%d.optim.safetensors", ITERS);
    snprintf(name[2], sizeof name[2], "iter_%d.net_d.safetensors", ITERS);
    snprintf(name[3], sizeof name[3], "iter_%d.net_d.optim.safetensors", ITERS);
    for (int f = 0; f < 4; f++) {
        double d = ckpt_file_distance("one", "half", name[f]);
        CHECK(d == 0, "%s differs after the resume by %.3g", name[f], d);
    }
    char *log = rank_log("half", 0);
    CHECK(strstr(log, "gan: resumed net_d from ") && strstr(log, "with optim_d's state"),
          "the resumed run does not say it restored net_d and optim_d");
    free(log);

    /* gan.load_from_d: net_d of the checkpoint the resume started from (its digest logged) */
    char extra[800], resumed[17], loaded[17], fresh[17];
    snprintf(extra, sizeof extra, "  load_from_d: %s/checkpoints/iter_%d.net_d.safetensors\n",
             wd, k);
    total_iters = 3;
    max_keep = 1;
    st = train_with("loadd", 4, "1", NULL, 1, extra);
    total_iters = ITERS;
    max_keep = 10;
    CHECK(st == 0, "a job with gan.load_from_d exited with %d (see %s/loadd.out)", st, root);
    /* max_keep_ckpts 1: iteration 3's four files and `latest` are left, nothing of 1 and 2 */
    char dir[700];
    snprintf(dir, sizeof dir, "%s/loadd/checkpoints", root);
    char *ls = list_dir(dir);
    CHECK(!strcmp(ls, "iter_3.net_d.optim.safetensors iter_3.net_d.safetensors "
                      "iter_3.optim.safetensors iter_3.safetensors latest"),
          "max_keep_ckpts 1 left: %s", ls);
    free(ls);
    d_digest("half", 0, resumed);
    d_digest("loadd", 0, loaded);
    d_digest("one", 0, fresh);
    CHECK(resumed[0] && !strcmp(resumed, loaded) && strcmp(resumed, fresh),
          "net_d's start: resumed %s, load_from_d %s (should be equal), fresh %s (other)",
          resumed, loaded, fresh);

    /* a GAN checkpoint without its net_d file */
    char gone[800];
    snprintf(gone, sizeof gone, "%s/checkpoints/iter_%d.net_d.safetensors", wd, ITERS);
    remove(gone);
    total_iters = ITERS + 1;
    write_config(cfg, wd, 4, 1, "");
    total_iters = ITERS;
    st = train("half", 4, "1", "auto");
    snprintf(cfg, sizeof cfg, "%s/half_resume.out", root);
    char *out = slurp(cfg);
    log = rank_log("half", 0);
    CHECK(st != 0 && (strstr(out, gone) || strstr(log, gone)) &&
              (strstr(out, "has no net_d") || strstr(log, "has no net_d")),
          "resume without %s: exit %d, no error naming it:\n%s", gone, st, out);
    free(out);
    free(log);
}

/* D: which GT the discriminator sees as real. At iteration 1 (no generator step) l_d_real
   and out_d_real are net_d (the same init: the seed) on the real input only, and with
   gan_gt_usm false (A's default) that is the plain GT: A, whose loaders send the sharpened GT
   and the plain one beside it (data.train.gt_usm), must log the values of a job whose loaders
   send the plain GT alone (gt_usm off), and a job with gan_gt_usm true other ones. So the
   worker hands pf_gan_compute the gt_plain frame as `gt` and the batch's gt as gt_usm. */
static void check_plain_gt(const double one[ITERS + 1][N_TERMS]) {
    int a = train_with("plain", 4, "1", NULL, 0, "");
    int b = train_with("usm_real", 4, "1", NULL, 1, "  gan_gt_usm: true\n");
    CHECK(a == 0 && b == 0, "plain / usm_real runs exited with %d / %d", a, b);
    if (a || b) return;
    double tp[ITERS + 1][N_TERMS], tu[ITERS + 1][N_TERMS];
    int g[ITERS + 1];
    CHECK(read_terms("plain", tp, g) == ITERS && read_terms("usm_real", tu, g) == ITERS,
          "plain / usm_real: gan lines missing");
    printf("iteration 1, out_d_real: %.6g (gt_usm, gan_gt_usm false), %.6g (plain GT sent "
           "alone), %.6g (gan_gt_usm true)\n", one[1][5], tp[1][5], tu[1][5]);
    CHECK(one[1][3] == tp[1][3] && one[1][5] == tp[1][5],
          "iteration 1: l_d_real / out_d_real %.6g / %.6g, not the plain GT's %.6g / %.6g",
          one[1][3], one[1][5], tp[1][3], tp[1][5]);
    CHECK(one[1][5] != tu[1][5], "iteration 1: out_d_real %.6g the same with gan_gt_usm true",
          one[1][5]);
}

/* tag's job (`what` in messages) logged every term of each iteration, finite (the generator's
   where its step ran). */
static void check_finite_terms(const char *tag, const char *what) {
    double t[ITERS + 1][N_TERMS];
    int g[ITERS + 1];
    CHECK(read_terms(tag, t, g) == ITERS, "%s: gan lines missing", what);
    for (int it = 1; it <= ITERS; it++)
        for (int k = g[it] ? 0 : 3; k < N_TERMS; k++)
            CHECK(isfinite(t[it][k]), "%s, iteration %d: %s not finite", what, it, TERMS[k]);
}

/* E: an ESRGANModel job (BasicSR's esrgan_model.py step) runs and logs finite terms. */
static void check_esrgan(void) {
    model_type = "ESRGANModel";
    int st = train_with("esrgan", 4, "1", NULL, 1, "");
    model_type = "RealESRGANModel";
    CHECK(st == 0, "ESRGANModel: pixflow train exited with %d (see %s/esrgan.out)", st, root);
    if (st == 0) check_finite_terms("esrgan", "ESRGANModel");
}

static void check_vgg_d_job(const char *tag);

/* G: ESRGANModel with VGGStyleDiscriminator (BasicSR's ESRGAN recipe; num_feat 8, input_size
   128 = gt_patch_size, photos of 136 x 136) trains: every term finite, and the last
   checkpoint's net_d file carries the BatchNorm buffers, num_batches_tracked (I64) counting
   every net_d call: 3 per iteration (the discriminator step's) and 2 more per generator step
   (iterations 2 and 4): 16. The same job on 2 workers with batch 1 each (BatchNorm not
   synchronised: each rank normalises its own image, as BasicSR under DDP) trains too, and its
   checkpoint (rank 0's running statistics) has the same count. */
static void check_vgg_d(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/train128", root);
    make_images(dir, 4, 136, 5);
    model_type = "ESRGANModel";
    network_d = "{type: VGGStyleDiscriminator, num_in_ch: 3, num_feat: 8, input_size: 128}";
    gt_patch = 128;
    train_dir = "train128";
    int st = train_with("vggd", 2, "1", NULL, 1, "");
    int st2 = train_with("vggd2", 1, "2", NULL, 1, "");
    model_type = "RealESRGANModel";
    CHECK(st == 0, "VGGStyleDiscriminator: pixflow train exited with %d (see %s/vggd.out)", st,
          root);
    CHECK(st2 == 0, "VGGStyleDiscriminator, 2 workers: pixflow train exited with %d (see "
          "%s/vggd2.out)", st2, root);
    if (st == 0) check_vgg_d_job("vggd");
    if (st2 == 0) check_vgg_d_job("vggd2");
}

/* G's checks of one job, tag. */
static void check_vgg_d_job(const char *tag) {
    check_finite_terms(tag, tag);
    char path[700], err[512];
    snprintf(path, sizeof path, "%s/%s/checkpoints/iter_%d.net_d.safetensors", root, tag, ITERS);
    pf_safetensors *st_d = NULL;
    CHECK(pf_safetensors_load(path, &st_d, err, sizeof err) == 0, "%s", err);
    int64_t nbt = -1;
    int ndim = -1;
    const float *rv = pf_safetensors_get(st_d, "bn4_1.running_var", NULL, NULL);
    CHECK(pf_safetensors_get_i64(st_d, "bn0_1.num_batches_tracked", &ndim, NULL, &nbt, 1) == 1 &&
          ndim == 0 && nbt == 16, "%s: bn0_1.num_batches_tracked %lld, want 16", path,
          (long long)nbt);
    CHECK(rv && rv[0] != 1.0f && isfinite(rv[0]), "%s: bn4_1.running_var updated", path);
    pf_safetensors_free(&st_d);
}

int main(void) {
    pf_test_job_begin("gan", bin, sizeof bin, root, sizeof root);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/train", root);
    make_images(dir, 4, 96, 3);
    snprintf(dir, sizeof dir, "%s/vgg19.safetensors", root);
    write_vgg(dir);
    setenv("OMP_NUM_THREADS", "1", 1);

    double t1[ITERS + 1][N_TERMS], t2[ITERS + 1][N_TERMS];
    double l1[ITERS + 1] = { 0 }, l2[ITERS + 1] = { 0 }, lr1[ITERS + 1], lr2[ITERS + 1];
    char wd1[600], wd2[600];
    snprintf(wd1, sizeof wd1, "%s/one", root);
    snprintf(wd2, sizeof wd2, "%s/two", root);
    int st1 = train("one", 4, "1", NULL);
    CHECK(st1 == 0, "1 worker: pixflow train exited with %d (see %s/one.out)", st1, root);
    int st2 = train("two", 2, "2", NULL);
    CHECK(st2 == 0, "2 workers: pixflow train exited with %d (see %s/two.out)", st2, root);
    if (st1 == 0 && st2 == 0) {
        CHECK(train_curve(wd1, l1, lr1, ITERS) == ITERS, "1 worker: %d train events", ITERS);
        CHECK(train_curve(wd2, l2, lr2, ITERS) == ITERS, "2 workers: %d train events", ITERS);
        check_one(t1, l1);
        check_event_terms(t1);
        int g[ITERS + 1];
        CHECK(read_terms("two", t2, g) == ITERS, "2 workers: gan lines missing");
        double worst = 0;
        for (int it = 1; it <= ITERS; it++) {
            worst = fmax(worst, fabs(l1[it] - l2[it]) / fmax(1e-3, fabs(l1[it])));
            for (int k = 0; k < N_TERMS; k++)
                if (isfinite(t1[it][k]) || isfinite(t2[it][k]))
                    worst = fmax(worst, fabs(t1[it][k] - t2[it][k]) /
                                            fmax(1e-3, fabs(t1[it][k])));
        }
        double wdist = weight_distance("two", "one");
        printf("2 workers x 2 vs 1 worker x 4: losses and terms within %.3g (relative), net_g "
               "and its EMA within %.3g (absolute; weights of about 0.05, Adam lr 1e-3)\n",
               worst, wdist);
        CHECK(worst < 1e-4, "losses differ between 1 and 2 workers: %.3g", worst);
        CHECK(wdist < 1e-5, "net_g differs between 1 and 2 workers: %.3g", wdist);
        char d1[17], d20[17], d21[17];
        d_digest("one", 0, d1);
        d_digest("two", 0, d20);
        d_digest("two", 1, d21);
        CHECK(d1[0] && !strcmp(d1, d20) && !strcmp(d20, d21),
              "net_d's initial weights differ: '%s' (1 worker), '%s' and '%s' (2 ranks)", d1,
              d20, d21);
        char ck[700];
        snprintf(ck, sizeof ck, "%s/checkpoints/iter_%d.safetensors", wd1, ITERS);
        FILE *f = fopen(ck, "rb");
        CHECK(f != NULL, "no checkpoint %s", ck);
        if (f) fclose(f);
        check_net_d_files();
        check_resume(t1, l1);
        check_plain_gt(t1);
        check_esrgan();
        check_vgg_d();
    }
    return pf_test_job_end("test_e2e_gan", root);
}
