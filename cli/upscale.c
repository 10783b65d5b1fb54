/*  upscale — `pixflow upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT`: a trained network on
    someone's own images (docs/upscale.md).

    WEIGHTS_OR_WORK_DIR is a work dir (its config.yaml and the highest checkpoints/iter_N
    .safetensors) or a .safetensors file (its network from --config, else from config.yaml in
    the folder above the file's, as a work dir's checkpoints/ has it). The EMA weights
    (params_ema.*) are used when the file has them, as `pixflow test` does.
    INPUTs are files, folders (their .png/.jpg/.jpeg files, sorted by name) and globs (the
    shell's, or quoted ones expanded here by glob(3)). Each input is dispatched by its kind:
    an image goes through cli/upscale_image.c (16 bits and alpha kept); a video file is
    recognised by its extension and refused for now (its place is upscale_video below), as
    is a video network (BasicVSR) on images.
    Every output is OUT/<stem>.png (or .jpg with --ext jpg; an image with alpha or 16 bits
    stays PNG), written to a temporary name in OUT and renamed (pf_write_file_atomic). Before
    any inference: the weights are checked against the network, every input's header is read,
    OUT is created and probed for writing, and an existing output is an error without --force.

    pf_upscale_main is upscale_parse, upscale_model, upscale_inputs, upscale_outputs, then
    upscale_run (one image at a time, progress on stderr).
*/
#include "cli/commands.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/upscale.h"
#include "common/config.h"
#include "common/file_list.h"
#include "common/image.h"
#include "common/number.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/net.h"

enum { INPUT_IMAGE, INPUT_VIDEO };
#define MAX_OVERLAP 64          /* default --tile-overlap: the receptive radius, at most this */
#define MEM_FRACTION 0.5        /* --tile auto: share of MemAvailable the activations may use */

typedef struct {
    char *path;                 /* malloc'd */
    int kind;                   /* INPUT_IMAGE or INPUT_VIDEO */
    char out[PF_PATH_MAX + 300];    /* OUT/<stem>.<ext> */
} up_input;

typedef struct {
    const char *model;          /* WEIGHTS_OR_WORK_DIR */
    const char *cfg_path;       /* --config */
    const char *out_dir;        /* -o */
    const char *ext;            /* --ext: "png" (default) or "jpg" */
    int tile;                   /* --tile N; -1 auto; 0 whole image */
    int overlap;                /* --tile-overlap; -1: the default */
    int ensemble, force;
    char **inputs;              /* the INPUT arguments */
    int n_inputs;
} up_args;

typedef struct {
    pf_config *cfg;
    char cfg_path[PF_PATH_MAX + 64], weights[PF_PATH_MAX + 64];
    up_input *in;
    int n_in;
    double bytes_per_px;        /* --tile auto's activation estimate, bytes per LQ pixel */
} up_job;

static int usage(void) {
    fprintf(stderr, "usage: pixflow upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT [--config CONFIG]\n"
            "       [--tile N|auto] [--tile-overlap N] [--ensemble] [--threads N]\n"
            "       [--ext png|jpg] [--force] [--device cpu]\n");
    return 2;
}

/* Read argv into *a. Returns 0, or 2 after printing why. */
static int upscale_parse(int argc, char **argv, up_args *a) {
    *a = (up_args){ .ext = "png", .overlap = -1 };
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) return 2;
    const char *cmd = "pixflow upscale";
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-o") && v) a->out_dir = argv[++i];
        else if (!strcmp(o, "--config") && v) a->cfg_path = argv[++i];
        else if (!strcmp(o, "--ensemble")) a->ensemble = 1;
        else if (!strcmp(o, "--force")) a->force = 1;
        else if (!strcmp(o, "--tile") && v && !strcmp(v, "auto")) a->tile = -1, i++;
        else if (!strcmp(o, "--tile") && v) {
            if (pf_arg_int(cmd, o, argv[++i], 0, 1 << 20, &a->tile)) return 2;
        } else if (!strcmp(o, "--tile-overlap") && v) {
            if (pf_arg_int(cmd, o, argv[++i], 0, 1 << 16, &a->overlap)) return 2;
        } else if (!strcmp(o, "--threads") && v) {
            int n;
            if (pf_arg_int(cmd, o, argv[++i], 1, PF_MAX_THREADS, &n)) return 2;
            pf_set_threads(n);
        } else if (!strcmp(o, "--ext") && v) {
            a->ext = argv[++i];
            if (strcmp(a->ext, "png") && strcmp(a->ext, "jpg")) {
                fprintf(stderr, "%s: --ext %s: expected png or jpg\n", cmd, a->ext);
                return 2;
            }
        } else if (!strcmp(o, "--device") && v) {
            if (strcmp(argv[++i], "cpu") != 0) {
                fprintf(stderr, "%s: --device %s: not yet: upscale runs on the CPU (the CUDA "
                        "executor serves training workers only)\n", cmd, argv[i]);
                return 2;
            }
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "%s: unknown option or missing value: %s\n", cmd, o);
            return usage();
        } else if (!a->model) a->model = o;
        else a->inputs[a->n_inputs++] = argv[i];
    }
    if (!a->model || !a->n_inputs || !a->out_dir) return usage();
    return 0;
}

/* The highest N of dir/iter_N.safetensors into out. Returns 0, or -1 with err. */
static int latest_checkpoint(const char *dir, char *out, size_t len, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s (a work dir holds config.yaml and checkpoints/)", dir,
                 strerror(errno));
        return -1;
    }
    long best = -1;
    for (struct dirent *e; (e = readdir(d));) {
        long n;
        int end = 0;
        if (sscanf(e->d_name, "iter_%ld.safetensors%n", &n, &end) == 1 && end > 0 &&
            !e->d_name[end] && n > best)
            best = n;
    }
    closedir(d);
    if (best < 0) {
        snprintf(err, errlen, "%s: no iter_N.safetensors checkpoint", dir);
        return -1;
    }
    snprintf(out, len, "%s/iter_%ld.safetensors", dir, best);
    return 0;
}

/* WEIGHTS_OR_WORK_DIR (and --config) -> j->cfg_path and j->weights. 0, or -1 with err. */
static int find_model(const up_args *a, up_job *j, char *err, size_t errlen) {
    if (pf_is_dir(a->model)) {
        char ck[PF_PATH_MAX + 32];
        snprintf(ck, sizeof ck, "%s/checkpoints", a->model);
        if (latest_checkpoint(ck, j->weights, sizeof j->weights, err, errlen)) return -1;
        snprintf(j->cfg_path, sizeof j->cfg_path, "%s/config.yaml", a->model);
    } else if (pf_is_file(a->model)) {
        snprintf(j->weights, sizeof j->weights, "%s", a->model);
        const char *slash = strrchr(a->model, '/');
        snprintf(j->cfg_path, sizeof j->cfg_path, "%.*s../config.yaml",
                 slash ? (int)(slash - a->model + 1) : 0, a->model);
    } else {
        snprintf(err, errlen, "%s: no such file or work dir", a->model);
        return -1;
    }
    if (a->cfg_path) snprintf(j->cfg_path, sizeof j->cfg_path, "%s", a->cfg_path);
    if (!pf_is_file(j->cfg_path)) {
        snprintf(err, errlen, "%s: which network? no config: looked for %s (give --config "
                 "CONFIG)", j->weights, j->cfg_path);
        return -1;
    }
    return 0;
}

/* Upper bound of the inference activations, bytes per LQ pixel: every tensor of the network's
   description at its resolution (channels x (mul / div)^2 floats), as if none shared memory. */
static double activation_bytes(const pf_config *cfg) {
    pf_net net;
    char err[256];
    if (pf_net_build(&net, cfg, err, sizeof err) != 0) return 0;
    double sum = 0;
    for (int i = 0; i < net.n_t; i++) {
        const pf_gtensor *t = &net.t[i];
        if (!t->one) sum += (double)t->c * t->mul * t->mul / ((double)t->div * t->div);
    }
    pf_net_free(&net);
    return sum * sizeof(float);
}

/* The config at path, its data folders not required to exist here (a work dir's config
   names the training data relative to where training ran; upscale needs only model:).
   0, or -1 with err. */
static int load_config(pf_config *cfg, const char *path, char *err, size_t errlen) {
    size_t len = 0;
    char *text = pf_read_file(path, &len, err, errlen);
    int rc = text ? pf_config_parse(cfg, path, text, len, 0, err, errlen) : -1;
    free(text);
    return rc;
}

/* Config, weights check (against the description: names and shapes), the estimate. 0 or -1
   after printing why. */
static int upscale_model(const up_args *a, up_job *j) {
    char err[2048] = "";
    if (find_model(a, j, err, sizeof err) || load_config(j->cfg, j->cfg_path, err, sizeof err) ||
        pf_ckpt_check_weights(j->cfg, j->weights, err, sizeof err)) {
        fprintf(stderr, "pixflow upscale: %s\n", err);
        return -1;
    }
    j->bytes_per_px = activation_bytes(j->cfg);
    return 0;
}

/* The kind of a file by its extension: an image, a video, or -1 (neither). */
static int kind_of(const char *path) {
    static const char *const video[] = { "mp4", "mkv", "avi", "mov", "webm", "mpg", "mpeg",
                                         "m4v", "ts", "flv", "wmv", "y4m", "ogv", NULL };
    if (pf_image_format_of(path) != PF_IMAGE_UNKNOWN) return INPUT_IMAGE;
    const char *dot = strrchr(path, '.');
    for (int i = 0; dot && !strchr(dot, '/') && video[i]; i++)
        if (!strcasecmp(dot + 1, video[i])) return INPUT_VIDEO;
    return -1;
}

/* Append one input file. 0, or -1 with err. */
static int add_file(up_job *j, const char *path, char *err, size_t errlen) {
    int kind = kind_of(path);
    if (kind < 0) {
        snprintf(err, errlen, "%s: not an image (.png, .jpg, .jpeg) or a video", path);
        return -1;
    }
    up_input *in = &j->in[j->n_in];
    in->path = strdup(path);
    in->kind = kind;
    if (!in->path) return -1;
    j->n_in++;
    return 0;
}

/* A folder's images, sorted by name. 0, or -1 with err. */
static int add_folder(up_job *j, const char *dir, int *cap, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    pf_name_list names = { 0 };
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && pf_image_format_of(e->d_name) != PF_IMAGE_UNKNOWN)
            pf_names_add(&names, e->d_name);
    closedir(d);
    pf_names_sort(&names);
    int rc = 0;
    if (j->n_in + names.n > *cap) {
        *cap = j->n_in + names.n + 16;
        up_input *more = realloc(j->in, (size_t)*cap * sizeof *more);
        if (!more) rc = -1;
        else j->in = more;
    }
    for (int i = 0; rc == 0 && i < names.n; i++) {
        char path[PF_PATH_MAX + 260];
        snprintf(path, sizeof path, "%s/%s", dir, names.names[i]);
        if (pf_is_file(path)) rc = add_file(j, path, err, errlen);
    }
    if (rc == 0 && names.n == 0) {
        snprintf(err, errlen, "%s: no .png, .jpg or .jpeg file in it", dir);
        rc = -1;
    }
    pf_names_free(&names);
    return rc;
}

/* One INPUT argument: a file, a folder or a glob. 0, or -1 with err. */
static int add_input(up_job *j, const char *arg, int *cap, char *err, size_t errlen) {
    glob_t g = { 0 };
    int globbed = !pf_is_file(arg) && !pf_is_dir(arg) && strpbrk(arg, "*?[") &&
                  glob(arg, 0, NULL, &g) == 0;
    size_t n = globbed ? g.gl_pathc : 1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *p = globbed ? g.gl_pathv[i] : arg;
        if (j->n_in + 1 > *cap) {
            *cap = 2 * *cap + 16;
            up_input *more = realloc(j->in, (size_t)*cap * sizeof *more);
            if (!more) return -1;
            j->in = more;
        }
        if (pf_is_dir(p)) rc = add_folder(j, p, cap, err, errlen);
        else if (pf_is_file(p)) rc = add_file(j, p, err, errlen);
        else {
            snprintf(err, errlen, "%s: %s", p, globbed ? "not a file"
                     : strpbrk(p, "*?[") ? "no such file or folder, and no file matches it"
                     : "no such file or folder");
            rc = -1;
        }
    }
    if (globbed) globfree(&g);
    return rc;
}

/* Every input, each image's header read (so a file that is not an image is found before any
   work) and its output name. 0 or -1 after printing why. */
static int upscale_inputs(const up_args *a, up_job *j) {
    char err[2048] = "";
    int cap = a->n_inputs + 16;
    j->in = calloc((size_t)cap, sizeof *j->in);
    for (int i = 0; j->in && i < a->n_inputs; i++)
        if (add_input(j, a->inputs[i], &cap, err, sizeof err) != 0) {
            fprintf(stderr, "pixflow upscale: %s\n", err[0] ? err : "out of memory");
            return -1;
        }
    for (int i = 0; j->in && i < j->n_in; i++) {
        up_input *in = &j->in[i];
        pf_image_full info = { 0 };
        if (in->kind == INPUT_VIDEO) {      /* upscale_video's place, when it comes */
            fprintf(stderr, "pixflow upscale: %s: video input is not supported yet (images: "
                    ".png, .jpg, .jpeg)\n", in->path);
            return -1;
        }
        if (pf_image_full_info(in->path, &info, err, sizeof err)) {
            fprintf(stderr, "pixflow upscale: %s\n", err);
            return -1;
        }
        const char *base = strrchr(in->path, '/');
        base = base ? base + 1 : in->path;
        int keep_png = info.depth == 16 || info.channels % 2 == 0;
        snprintf(in->out, sizeof in->out, "%s/%.*s.%s", a->out_dir,
                 (int)(strrchr(base, '.') ? strrchr(base, '.') - base : (long)strlen(base)),
                 base, keep_png ? "png" : a->ext);
        for (int k = 0; k < i; k++)
            if (!strcmp(j->in[k].out, in->out)) {
                fprintf(stderr, "pixflow upscale: %s and %s would both be written to %s\n",
                        j->in[k].path, in->path, in->out);
                return -1;
            }
    }
    return j->in ? 0 : -1;
}

/* OUT created and probed for writing; no output exists unless --force. 0 or -1 after
   printing why. */
static int upscale_outputs(const up_args *a, const up_job *j) {
    char err[2048] = "", probe[PF_PATH_MAX + 64];
    if (pf_mkdirs(a->out_dir, err, sizeof err) != 0) {
        fprintf(stderr, "pixflow upscale: -o %s: %s\n", a->out_dir, err);
        return -1;
    }
    snprintf(probe, sizeof probe, "%s/.pixflow-upscale-XXXXXX", a->out_dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(stderr, "pixflow upscale: -o %s: cannot write there: %s\n", a->out_dir,
                strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    for (int i = 0; !a->force && i < j->n_in; i++)
        if (access(j->in[i].out, F_OK) == 0) {
            fprintf(stderr, "pixflow upscale: %s exists (from %s); --force overwrites\n",
                    j->in[i].out, j->in[i].path);
            return -1;
        }
    return 0;
}

/* MemAvailable of /proc/meminfo in bytes, else free pages (sysconf); 0 when unknown. The
   environment variable PIXFLOW_MEM_AVAILABLE (bytes) stands in for both (tests). */
static double available_memory(void) {
    const char *env = getenv("PIXFLOW_MEM_AVAILABLE");
    if (env && atof(env) > 0) return atof(env);
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb > 0) return kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * size : 0;
}

/* --tile auto for an h x w image: 0 when its activations fit MEM_FRACTION of the available
   memory, else the largest tile whose window (tile + 2 overlap)^2 fits, at least 16. */
static int auto_tile(const up_job *j, int h, int w, int overlap) {
    double budget = available_memory() * MEM_FRACTION, per = j->bytes_per_px;
    if (per <= 0 || budget <= 0 || (double)h * w * per <= budget) return 0;
    int t = (int)sqrt(budget / per) - 2 * overlap;
    return t < 16 ? 16 : t;
}

/* Write one result: PNG as stored, or JPEG (quality 95) of an 8-bit gray or RGB image. */
static int write_result(const char *path, const pf_image_full *img, char *err, size_t errlen) {
    if (pf_image_format_of(path) != PF_IMAGE_JPEG)
        return pf_image_write_png_full(path, img, err, errlen);
    size_t n = (size_t)img->w * img->h;
    uint8_t *rgb = malloc(n * 3), *buf = NULL;
    size_t len = 0;
    int rc = rgb ? 0 : -1;
    for (size_t i = 0; rgb && i < n * 3; i++)
        rgb[i] = ((const uint8_t *)img->data)[img->channels == 3 ? i : i / 3];
    if (rc == 0) rc = pf_image_encode_jpeg(rgb, img->w, img->h, 95, &buf, &len, err, errlen);
    if (rc == 0) rc = pf_write_file_atomic(path, buf, len, err, errlen);
    else if (!rgb) snprintf(err, errlen, "%s: out of memory", path);
    free(rgb);
    free(buf);
    return rc;
}

/* Progress on stderr: a bar redrawn in place on a terminal, else one line per image. */
static void progress(int i, int n, const up_input *in, double t0, const char *note) {
    double dt = pf_now() - t0, rate = dt > 0 ? (i + 1) / dt : 0;
    int eta = rate > 0 ? (int)((n - i - 1) / rate + 0.5) : 0;
    const char *base = strrchr(in->path, '/');
    int tty = isatty(2);
    fprintf(stderr, "%s[%d/%d] %s %.2f img/s ETA %d:%02d%s%s", tty ? "\r\033[K" : "", i + 1, n,
            base ? base + 1 : in->path, rate, eta / 60, eta % 60, note,
            tty && i + 1 < n ? "" : "\n");
}

/* One image: read, upscale, write. 0, or -1 with err. */
static int upscale_one(const up_job *j, pf_upscaler *u, const up_args *a, const up_input *in,
                       char *note, size_t notelen, char *err, size_t errlen) {
    pf_image_full img, out = { 0 };
    if (pf_image_read_full(in->path, &img, err, errlen)) return -1;
    u->opts.tile = a->tile >= 0 ? a->tile : auto_tile(j, img.h, img.w, u->opts.tile_overlap);
    snprintf(note, notelen, " (%dx%d %s%s, tile %d)", img.w, img.h,
             img.channels >= 3 ? "RGB" : "gray", img.channels % 2 ? "" : "+alpha",
             u->opts.tile);
    int rc = pf_upscale_image(u, &img, &out, err, errlen);
    if (rc == 0) rc = write_result(in->out, &out, err, errlen);
    pf_image_full_free(&img);
    pf_image_full_free(&out);
    return rc;
}

/* The model, then every input in order. 0 or -1 after printing why. */
static int upscale_run(const up_args *a, up_job *j) {
    char err[2048] = "";
    pf_model *m = pf_model_new(j->cfg, err, sizeof err);
    int ema = 0;
    if (m && pf_model_is_video(m))
        snprintf(err, sizeof err, "%s: %s is a video network: it runs on videos, which "
                 "pixflow upscale does not take yet, not on images", j->cfg_path,
                 j->cfg->model_type);
    if (!m || err[0] || pf_ckpt_load_eval_weights(m, j->weights, &ema, err, sizeof err)) {
        fprintf(stderr, "pixflow upscale: %s\n", err);
        pf_model_destroy(&m);
        return -1;
    }
    int radius = pf_infer_receptive_radius(j->cfg);
    int overlap = a->overlap >= 0 ? a->overlap
                : radius == PF_INFER_GLOBAL ? 0 : radius < MAX_OVERLAP ? radius : MAX_OVERLAP;
    int q = pf_model_input_multiple(m), mult = j->cfg->pad_multiple > 0 ? j->cfg->pad_multiple : 1;
    pf_upscaler u = { m, { a->ensemble, 0, overlap }, mult % q ? mult * q : mult };
    char tile[32];
    snprintf(tile, sizeof tile, a->tile < 0 ? "auto" : a->tile ? "%d" : "off", a->tile);
    fprintf(stderr, "pixflow upscale: %s (%s%s), x%d, %d input%s, tile %s, overlap %d "
            "(receptive radius %d)%s; activations <= %.0f bytes a pixel\n", j->weights,
            j->cfg->model_type, ema ? ", EMA weights" : "", pf_model_scale(m), j->n_in,
            j->n_in > 1 ? "s" : "", tile, overlap, radius, a->ensemble ? ", x8 ensemble" : "",
            j->bytes_per_px);
    int rc = 0;
    double t0 = pf_now();
    for (int i = 0; rc == 0 && i < j->n_in; i++) {
        const up_input *in = &j->in[i];
        char note[128] = "";
        /* the per-input dispatch: images here; videos (refused by upscale_inputs for now)
           will go to their own function */
        rc = upscale_one(j, &u, a, in, note, sizeof note, err, sizeof err);
        if (rc == 0) progress(i, j->n_in, in, t0, note);
    }
    if (rc) fprintf(stderr, "%spixflow upscale: %s\n", isatty(2) ? "\n" : "", err);
    else fprintf(stderr, "pixflow upscale: %d output%s in %s (%.2f s)\n", j->n_in,
                 j->n_in > 1 ? "s" : "", a->out_dir, pf_now() - t0);
    pf_model_destroy(&m);
    return rc;
}

int pf_upscale_main(int argc, char **argv) {
    up_args a;
    static pf_config cfg;
    up_job j = { .cfg = &cfg };
    int status = upscale_parse(argc, argv, &a);
    if (status == 0)
        status = upscale_model(&a, &j) || upscale_inputs(&a, &j) || upscale_outputs(&a, &j) ||
                 upscale_run(&a, &j) ? 1 : 0;
    for (int i = 0; i < j.n_in; i++) free(j.in[i].path);
    free(j.in);
    free(a.inputs);
    return status;
}
