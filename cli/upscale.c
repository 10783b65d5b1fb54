/*  upscale — `pixflow upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT`: a trained network on
    someone's own images and videos (docs/upscale.md).

    WEIGHTS_OR_WORK_DIR is resolved by cli/model_source.h: a work dir (its config.yaml and
    checkpoints/latest, else the highest checkpoints/iter_N.safetensors) or a .safetensors file
    (its network from --config, else from config.yaml beside a work dir's checkpoints/). The
    EMA weights (params_ema.*) are used when the file has them, as `pixflow test` does.
    INPUTs are files, folders (their images and video files, sorted by name) and globs (the
    shell's, or quoted ones expanded here by glob(3)). Each input is dispatched by its kind:
    a .png/.jpg/.jpeg file is an image and goes through cli/upscale_image.c (16 bits and alpha
    kept); any other file FFmpeg reads as a video goes through cli/upscale_video.c (image
    networks frame by frame, recurrent video networks in clip windows, a sliding-window network
    (EDVR) frame by frame with each frame's window of num_frame LQ frames, padded at the clip's
    ends by the config's VideoTestDataset padding: data.test's, else data.eval's, else BasicSR's
    reflection_circle). A video network (BasicVSR, EDVR) is refused on images.
    An image's output is OUT/<stem>.png (or .jpg with --ext jpg; an image with alpha or 16 bits
    stays PNG), written to a temporary name in OUT and renamed (pf_write_file_atomic); a
    video's is OUT/<stem>.<--video-ext, else pf_upscale_video_ext's choice>, written as
    <stem>.part.<ext> and renamed. Before any inference: the weights are checked against the
    network, every image's header is read and every video probed (and its output opened and
    closed once: encoder, options, container), OUT is created and probed for writing, and an
    existing output is an error without --force. Ctrl-C (SIGINT) stops the run between frames
    and images: a video's temporary file is removed, nothing is left under its final name.

    pf_upscale_main is upscale_parse, upscale_model, upscale_inputs, upscale_outputs, then
    upscale_run (one input at a time, progress on stderr).
*/
#include "cli/commands.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <libavutil/log.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/model_source.h"
#include "cli/upscale.h"
#include "common/config.h"
#include "common/file_list.h"
#include "common/frame_indices.h"
#include "common/image.h"
#include "common/number.h"
#include "common/safetensors.h"
#include "common/util.h"
#include "nn/checkpoint.h"
#include "nn/infer.h"
#include "nn/model.h"
#include "nn/net.h"
#include "worker/device.h"

enum { INPUT_IMAGE, INPUT_VIDEO };
#define MAX_OVERLAP 64          /* default --tile-overlap: the receptive radius, at most this */
#define MEM_FRACTION 0.5        /* --tile auto: share of MemAvailable the activations may use */

static volatile sig_atomic_t interrupted;   /* SIGINT since pf_upscale_main began */

typedef struct {
    char *path;                 /* malloc'd */
    int kind;                   /* INPUT_IMAGE or INPUT_VIDEO */
    int w, h, frames;           /* a video's frame size and count (pf_upscale_video_probe) */
    const char *codec;          /* a video's encoder: --codec, or "ffv1" for an odd output
                                   size without --codec and --crf (libx264's 4:2:0 needs
                                   even sizes); NULL: the library's default */
    char out[PF_PATH_MAX + 300];    /* OUT/<stem>.<ext> */
} up_input;

typedef struct {
    const char *model;          /* WEIGHTS_OR_WORK_DIR */
    const char *cfg_path;       /* --config */
    const char *out_dir;        /* -o */
    const char *ext;            /* --ext: "png" (default) or "jpg" */
    const char *video_ext;      /* --video-ext; NULL: pf_upscale_video_ext's choice */
    pf_video_out_opts vo;       /* --codec, --crf, --quality, --bitrate */
    int tile;                   /* --tile N; -1 auto; 0 whole image */
    int overlap;                /* --tile-overlap; -1: the default */
    int ensemble, force;
    int device;                 /* --device cuda:N: N; -1 the CPU */
    int precision;              /* --precision: 0 fp32, 1 bf16 (test_cfg.precision's values);
                                   -1: the config's test_cfg.precision */
    char **inputs;              /* the INPUT arguments */
    int n_inputs;
} up_args;

typedef struct {
    pf_config *cfg;
    pf_model *m;                /* with its evaluation weights (pf_model_source_load) */
    int ema;                    /* the weights are params_ema.* */
    char cfg_path[PF_PATH_MAX + 64], weights[PF_PATH_MAX + 64];
    up_input *in;
    int n_in;
    double bytes_per_px;        /* --tile auto's activation estimate, bytes per LQ pixel */
    int padding;                /* a sliding-window network's (pf_frame_padding) */
    const char *padding_key;    /* the key it is from ("data.test.padding"), NULL: default */
    pf_gpu *gpu;                /* --device cuda:N: the network on that GPU, else NULL */
    pf_infer_net gpu_net;       /* its pf_infer_net */
} up_job;

/* The usage text on `f`; returns 2 (a usage error's status). */
static int usage_to(FILE *f) {
    fprintf(f, "usage: pixflow upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT [--config CONFIG]\n"
            "       [--tile N|auto] [--tile-overlap N] [--ensemble] [--threads N]\n"
            "       [--ext png|jpg] [--force] [--device cpu|cuda:N] [--precision fp32|bf16]\n"
            "       [--video-ext EXT] [--codec NAME] [--crf N] [--quality N] [--bitrate R]\n"
            "       [--drop-unsupported-streams]\n"
            "INPUT: images (PNG, JPEG), videos (any file FFmpeg reads), folders of them, globs.\n"
            "Details: docs/upscale.md\n");
    return 2;
}

static int usage(void) {
    return usage_to(stderr);
}

/* --bitrate R: bits/s, with an optional k or M suffix ("2M", "800k"). 0, or -1 after printing
   why. */
static int parse_bitrate(const char *v, long long *out) {
    char *end = NULL;
    double r = strtod(v, &end);
    if (end && (*end == 'k' || *end == 'K')) r *= 1e3, end++;
    else if (end && *end == 'M') r *= 1e6, end++;
    if (!end || end == v || *end || !(r >= 1000 && r <= 1e10)) {
        fprintf(stderr, "pixflow upscale: --bitrate %s: expected bits/s from 1000 to 1e10, "
                "optionally with k or M (\"2M\")\n", v);
        return -1;
    }
    *out = (long long)r;
    return 0;
}

/* Read argv into *a. Returns 0, -1 after printing the usage for --help, or 2 after printing
   why. */
static int upscale_parse(int argc, char **argv, up_args *a) {
    *a = (up_args){ .ext = "png", .overlap = -1, .device = -1, .precision = -1,
                    .vo = pf_video_out_opts_default() };
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) return 2;
    const char *cmd = "pixflow upscale";
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) return usage_to(stdout), -1;
        if (!strcmp(o, "-o") && v) a->out_dir = argv[++i];
        else if (!strcmp(o, "--drop-unsupported-streams")) a->vo.drop_unsupported = 1;
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
        } else if (!strcmp(o, "--video-ext") && v) {
            a->video_ext = argv[++i];
            a->video_ext += a->video_ext[0] == '.';
            size_t n = strlen(a->video_ext);
            if (!n || n > 8 || strspn(a->video_ext, "abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != n) {
                fprintf(stderr, "%s: --video-ext %s: expected a file extension (mkv, mp4, ...)\n",
                        cmd, argv[i]);
                return 2;
            }
        } else if (!strcmp(o, "--codec") && v) {
            a->vo.codec = argv[++i];
        } else if (!strcmp(o, "--crf") && v) {
            if (pf_arg_int(cmd, o, argv[++i], 0, 63, &a->vo.crf)) return 2;
        } else if (!strcmp(o, "--quality") && v) {
            if (pf_arg_int(cmd, o, argv[++i], 1, 255, &a->vo.quality)) return 2;
        } else if (!strcmp(o, "--bitrate") && v) {
            if (parse_bitrate(argv[++i], &a->vo.bit_rate)) return 2;
        } else if (!strcmp(o, "--precision") && v) {
            const char *p = argv[++i];
            a->precision = !strcmp(p, "fp32") ? 0 : !strcmp(p, "bf16") ? 1 : -2;
            if (a->precision == -2) {
                fprintf(stderr, "%s: --precision %s: expected fp32 or bf16\n", cmd, p);
                return 2;
            }
        } else if (!strcmp(o, "--device") && v) {
            char *end = NULL;
            const char *d = argv[++i];
            if (!strcmp(d, "cpu")) a->device = -1;
            else if (!strncmp(d, "cuda:", 5) && (a->device = (int)strtol(d + 5, &end, 10)) >= 0 &&
                     end != d + 5 && !*end) {
            } else {
                fprintf(stderr, "%s: --device %s: expected cpu or cuda:N\n", cmd, d);
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

/* --device cuda:N: the network on GPU N with the CPU model's weights (worker/device.h), run
   through pf_infer_on like the CPU model. Image networks; bf16 (from `why`, --precision or
   test_cfg.precision) runs cuDNN's bf16 convolutions with fp32 accumulation, refused below
   compute capability 8.0. 0 or -1 after printing why. */
static int upscale_gpu(int device, const char *why, up_job *j) {
    char err[1024] = "";
    j->cfg->train_precision = 0;        /* inference only: no training plan to set */
    if (pf_model_is_video(j->m))
        snprintf(err, sizeof err, "--device cuda:%d: %s runs on the CPU only for now", device,
                 j->cfg->model_type);
    else if ((j->gpu = pf_gpu_new(j->cfg, device, err, sizeof err)) &&
             pf_gpu_set_params(j->gpu, pf_model_params(j->m), err, sizeof err) == 0)
        j->gpu_net = pf_gpu_infer_net(j->gpu, pf_model_input_multiple(j->m));
    else
        pf_gpu_destroy(&j->gpu);
    if (j->gpu) return 0;
    fprintf(stderr, "pixflow upscale: cuda:%d: %s%s%s\n", device, err,
            j->cfg->test_precision ? "; bf16 from " : "", j->cfg->test_precision ? why : "");
    return -1;
}

/* A sliding-window network's padding at a clip's ends: the config's VideoTestDataset's,
   data.test's before data.eval's (evaluation's set), else reflection_circle (BasicSR's for
   EDVR's REDS4 and Vid4 tests). */
static void window_padding(up_job *j) {
    const pf_dataset_cfg *set[2] = { &j->cfg->test, &j->cfg->eval };
    static const char *const key[2] = { "data.test.padding", "data.eval.padding" };
    j->padding = PF_PAD_REFLECTION_CIRCLE;
    j->padding_key = NULL;
    for (int i = 1; i >= 0; i--)
        if (set[i]->present && !strcmp(set[i]->type, "VideoTestDataset") &&
            pf_frame_padding_parse(set[i]->padding) >= 0) {
            j->padding = pf_frame_padding_parse(set[i]->padding);
            j->padding_key = key[i];
        }
}

/* The model (cli/model_source.h: config, weights checked against the network, loaded), the
   --tile auto estimate and, with --device cuda:N, the GPU. 0 or -1 after printing why. */
static int upscale_model(const up_args *a, up_job *j) {
    char err[2048] = "";
    if (pf_model_source_resolve(a->model, a->cfg_path, j->cfg_path, sizeof j->cfg_path,
                                j->weights, sizeof j->weights, err, sizeof err) == 0)
        j->m = pf_model_source_load(a->model, a->cfg_path, a->precision, j->cfg, &j->ema, err,
                                    sizeof err);
    if (!j->m) {
        fprintf(stderr, "pixflow upscale: %s\n", err);
        return -1;
    }
    j->bytes_per_px = activation_bytes(j->cfg);
    window_padding(j);
    return a->device >= 0 ? upscale_gpu(a->device, a->precision == 1 ? "--precision"
                                            : "test_cfg.precision", j) : 0;
}

/* The kind of a file by its extension: an image, a video, or -1 (neither). */
static int kind_of(const char *path) {
    static const char *const video[] = { "mp4", "mkv", "avi", "mov", "webm", "mpg", "mpeg",
                                         "m4v", "ts", "mts", "m2ts", "flv", "wmv", "y4m",
                                         "ogv", "3gp", "nut", "vob", NULL };
    if (pf_image_format_of(path) != PF_IMAGE_UNKNOWN) return INPUT_IMAGE;
    const char *dot = strrchr(path, '.');
    for (int i = 0; dot && !strchr(dot, '/') && video[i]; i++)
        if (!strcasecmp(dot + 1, video[i])) return INPUT_VIDEO;
    return -1;
}

/* Append one input file: an image by its extension, any other file a video (probed by
   upscale_inputs). 0, or -1 with err. */
static int add_file(up_job *j, const char *path, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    int kind = kind_of(path) == INPUT_IMAGE ? INPUT_IMAGE : INPUT_VIDEO;
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
        if (e->d_name[0] != '.' && kind_of(e->d_name) >= 0)
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
        snprintf(err, errlen, "%s: no image (.png, .jpg, .jpeg) or video file (.mp4, .mkv, "
                 "...; docs/upscale.md) in it", dir);
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

/* The first bytes of a file are a PNG's or a JPEG's signature. */
static int image_bytes(const char *path) {
    unsigned char b[8] = { 0 };
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    return (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) ||
           (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF);
}

/* An image's header read (its output extension: png, or --ext for 8-bit without alpha), or
   a video probed by FFmpeg (its container: --video-ext, else pf_upscale_video_ext). An image
   for a video network, or an image's bytes under another extension, is refused. 0, or -1
   with err naming the file. */
static int input_kind(const up_args *a, const up_job *j, up_input *in, char *ext, size_t len,
                      char *err, size_t errlen) {
    if (in->kind == INPUT_IMAGE) {
        pf_image_full info = { 0 };
        if (pf_model_is_video(j->m)) {
            snprintf(err, errlen, "%s: %s is a video network (%s): it takes video files, not "
                     "images (make a video of a folder of frames: ffmpeg -i %%08d.png -c:v ffv1 "
                     "clip.mkv)", in->path, j->cfg->model_type, j->cfg_path);
            return -1;
        }
        if (pf_image_full_info(in->path, &info, err, errlen)) return -1;
        snprintf(ext, len, "%s", info.depth == 16 || info.channels % 2 == 0 ? "png" : a->ext);
        return 0;
    }
    if (image_bytes(in->path)) {
        snprintf(err, errlen, "%s: a PNG or JPEG image by its bytes: name it .png or .jpg "
                 "(images are told by their extension)", in->path);
        return -1;
    }
    char why[1536];
    if (pf_upscale_video_probe(in->path, &in->w, &in->h, &in->frames, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", in->path, why);
        return -1;
    }
    int T = pf_model_frames(j->m), need = pf_video_min_frames(T, j->padding);
    if (pf_model_is_window(j->m) && in->frames < need) {
        snprintf(err, errlen, "%s: %d frame%s: too few for %s's windows of %d frames with "
                 "padding %s (%s; %d frames at least; replicate takes any clip)", in->path,
                 in->frames, in->frames > 1 ? "s" : "", j->cfg->model_type, T,
                 pf_frame_padding_name(j->padding),
                 j->padding_key ? j->padding_key : "the default: no VideoTestDataset in the "
                 "config", need);
        return -1;
    }
    int s = pf_model_scale(j->m);
    in->codec = a->vo.codec;
    if (!a->vo.codec && a->vo.crf < 0 && ((in->w * s) | (in->h * s)) & 1) in->codec = "ffv1";
    if (a->video_ext) snprintf(ext, len, "%s", a->video_ext);
    else pf_upscale_video_ext(in->path, in->codec, ext, len);
    return 0;
}

/* Every input, each image's header read and each video probed (so a file that is neither is
   found before any work) and its output name. 0 or -1 after printing why. */
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
        char ext[32];
        if (input_kind(a, j, in, ext, sizeof ext, err, sizeof err)) {
            fprintf(stderr, "pixflow upscale: %s\n", err);
            return -1;
        }
        const char *base = strrchr(in->path, '/');
        base = base ? base + 1 : in->path;
        snprintf(in->out, sizeof in->out, "%s/%.*s.%s", a->out_dir,
                 (int)(strrchr(base, '.') ? strrchr(base, '.') - base : (long)strlen(base)),
                 base, ext);
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
    int s = pf_model_scale(j->m);
    for (int i = 0; i < j->n_in; i++) {
        pf_video_out_opts o = a->vo;
        o.codec = j->in[i].codec;
        if (j->in[i].kind == INPUT_VIDEO &&
            pf_upscale_video_check(j->in[i].path, j->in[i].out, j->in[i].w * s,
                                   j->in[i].h * s, &o, err, sizeof err)) {
            fprintf(stderr, "pixflow upscale: %s (from %s)\n", err, j->in[i].path);
            return -1;
        }
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

/* Progress on stderr: a bar redrawn in place on a terminal, else one line per input (inputs
   done per second: "img/s" after an image, "files/s" after a video, whose own line has its
   frames/s). */
static void progress(int i, int n, const up_input *in, double t0, const char *note) {
    double dt = pf_now() - t0, rate = dt > 0 ? (i + 1) / dt : 0;
    int eta = rate > 0 ? (int)((n - i - 1) / rate + 0.5) : 0;
    const char *base = strrchr(in->path, '/');
    int tty = isatty(2);
    fprintf(stderr, "%s[%d/%d] %s %.2f %s ETA %d:%02d%s%s", tty ? "\r\033[K" : "", i + 1, n,
            base ? base + 1 : in->path, rate, in->kind == INPUT_VIDEO ? "files/s" : "img/s",
            eta / 60, eta % 60, note,
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

/* One video file: upscaled frame by frame (image network; --tile auto from the frame size)
   or in clip windows (video network), encoded, renamed. 0, or -1 with err. */
static int upscale_video_one(const up_job *j, pf_upscaler *u, const up_args *a,
                             const up_input *in, char *note, size_t notelen, char *err,
                             size_t errlen) {
    int video = pf_model_is_video(u->m);
    u->opts.tile = video ? 0 : a->tile >= 0 ? a->tile
                 : auto_tile(j, in->h, in->w, u->opts.tile_overlap);
    pf_video_out_opts o = a->vo;
    o.codec = in->codec;
    if (in->codec && !a->vo.codec)
        fprintf(stderr, "%s: encoder ffv1: its %dx%d frames are odd-sized, which libx264's "
                "4:2:0 does not take\n", in->out, in->w * pf_model_scale(u->m),
                in->h * pf_model_scale(u->m));
    double t0 = pf_now();
    int rc = pf_upscale_video(u, j->cfg->clip_window, j->cfg->clip_overlap, j->padding,
                              in->path, in->out, &o, &interrupted, err, errlen);
    double dt = pf_now() - t0;
    if (pf_model_is_window(u->m))
        snprintf(note, notelen, " (%dx%d, %d frames, %.2f frames/s, windows of %d frames, "
                 "padding %s)", in->w, in->h, in->frames, dt > 0 ? in->frames / dt : 0,
                 pf_model_frames(u->m), pf_frame_padding_name(j->padding));
    else if (video)
        snprintf(note, notelen, " (%dx%d, %d frames, %.2f frames/s, windows of %d sharing %d)",
                 in->w, in->h, in->frames, dt > 0 ? in->frames / dt : 0, j->cfg->clip_window,
                 j->cfg->clip_overlap);
    else
        snprintf(note, notelen, " (%dx%d, %d frames, %.2f frames/s, tile %d)", in->w, in->h,
                 in->frames, dt > 0 ? in->frames / dt : 0, u->opts.tile);
    return rc;
}

/* A video network takes neither tiles nor the ensemble (as evaluation). 0, or -1 with err. */
static int video_net_opts(const up_args *a, const up_job *j, char *err, size_t errlen) {
    if (!pf_model_is_video(j->m) || (a->tile <= 0 && !a->ensemble)) return 0;
    snprintf(err, errlen, "%s is a video network (%s): --tile N and --ensemble do not apply to "
             "it (it runs whole frames, %s)", j->cfg->model_type, j->cfg_path,
             pf_model_is_window(j->m) ? "each with its window of model.num_frame frames"
                                      : "windows of eval_cfg.clip_window frames");
    return -1;
}

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* The model, then every input in order (interrupted: stop between frames and images). 0 or -1
   after printing why. */
static int upscale_run(const up_args *a, up_job *j) {
    char err[2048] = "";
    pf_model *m = j->m;
    int ema = j->ema;
    if (video_net_opts(a, j, err, sizeof err)) {
        fprintf(stderr, "pixflow upscale: %s\n", err);
        return -1;
    }
    int radius = pf_infer_receptive_radius(j->cfg);
    int overlap = a->overlap >= 0 ? a->overlap
                : radius == PF_INFER_GLOBAL ? 0 : radius < MAX_OVERLAP ? radius : MAX_OVERLAP;
    int q = pf_model_input_multiple(m), mult = j->cfg->pad_multiple > 0 ? j->cfg->pad_multiple : 1;
    pf_upscaler u = { m, { a->ensemble, 0, overlap }, mult % q ? mult * q : mult,
                      j->gpu ? &j->gpu_net : NULL };
    char tile[32];
    snprintf(tile, sizeof tile, a->tile < 0 ? "auto" : a->tile ? "%d" : "off", a->tile);
    fprintf(stderr, "pixflow upscale: %s (%s%s), x%d, %d input%s, tile %s, overlap %d "
            "(receptive radius %d)%s; activations <= %.0f bytes a pixel\n", j->weights,
            j->cfg->model_type, ema ? ", EMA weights" : "", pf_model_scale(m), j->n_in,
            j->n_in > 1 ? "s" : "", tile, overlap, radius, a->ensemble ? ", x8 ensemble" : "",
            j->bytes_per_px);
    if (a->tile != 0 && radius == PF_INFER_GLOBAL)
        fprintf(stderr, "pixflow upscale: warning: %s pools over the whole image: tiled outputs "
                "differ from untiled ones\n", j->cfg->model_type);
    else if (a->tile != 0 && overlap < radius)
        fprintf(stderr, "pixflow upscale: warning: --tile-overlap %d is below the receptive "
                "radius %d: seams possible where tiles meet\n", overlap, radius);
    int rc = 0;
    double t0 = pf_now();
    for (int i = 0; rc == 0 && i < j->n_in; i++) {
        const up_input *in = &j->in[i];
        char note[192] = "";
        if (interrupted) {
            snprintf(err, sizeof err, "interrupted before %s", in->path);
            rc = -1;
        } else if (in->kind == INPUT_VIDEO) {
            rc = upscale_video_one(j, &u, a, in, note, sizeof note, err, sizeof err);
        } else {
            rc = upscale_one(j, &u, a, in, note, sizeof note, err, sizeof err);
        }
        if (rc == 0) progress(i, j->n_in, in, t0, note);
    }
    if (rc) fprintf(stderr, "%spixflow upscale: %s\n", isatty(2) ? "\n" : "", err);
    else fprintf(stderr, "pixflow upscale: %d output%s in %s (%.2f s)\n", j->n_in,
                 j->n_in > 1 ? "s" : "", a->out_dir, pf_now() - t0);
    return rc;
}

int pf_upscale_main(int argc, char **argv) {
    up_args a;
    static pf_config cfg;
    up_job j = { .cfg = &cfg };
    int status = upscale_parse(argc, argv, &a);
    av_log_set_level(AV_LOG_WARNING);   /* not libx264's info lines */
    /* SIGINT sets `interrupted` from here on, so that the check of a video's output (which
       writes and removes a temporary file) and the run end cleanly; a second one kills */
    struct sigaction sa = { .sa_handler = on_sigint, .sa_flags = SA_RESETHAND }, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    if (status == 0)
        status = upscale_model(&a, &j) || upscale_inputs(&a, &j) || upscale_outputs(&a, &j) ||
                 upscale_run(&a, &j) ? 1 : 0;
    for (int i = 0; i < j.n_in; i++) free(j.in[i].path);
    free(j.in);
    free(a.inputs);
    pf_gpu_destroy(&j.gpu);
    pf_model_destroy(&j.m);
    sigaction(SIGINT, &old, NULL);
    return status < 0 ? 0 : status && interrupted ? 130 : status;
}
