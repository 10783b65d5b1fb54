/*  config_keys — see config_keys.h.

    The table is in the order the resolved YAML writes the keys (and docs/config.md lists
    them); that order is the one pf_config_to_yaml always had, so existing configs keep their
    hash. The BasicSR names come from its options files (options/train/EDSR/train_EDSR_Mx2.yml
    and its siblings: name, datasets, network_g, path, train, val, logger), the MMagic ones from
    MMEditing 0.x configs (the dialect PixFlow's keys follow). A foreign name is written only
    where PixFlow has the setting (or a documented stand-in); names with no PixFlow meaning get
    the generic answer.
*/
#include "common/config_keys.h"
#include "common/config_types.h"
#include "common/networks.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OFF(f) offsetof(pf_config, f)
#define SZ(f) sizeof(((pf_config *)0)->f)
#define N(f) (sizeof(((pf_config *)0)->f) / sizeof(((pf_config *)0)->f[0]))
#define INF 1e300   /* no upper bound */

/* The model types, and those that take each group of model keys: from the network rows. */
#define MODEL_TYPES PF_NET_LIST(ALL)
#define WIDE PF_NET_LIST(WIDE)          /* n_feats / n_blocks */
#define SHIFT PF_NET_LIST(SHIFT)        /* a mean shift */

#define IMAGE_SETS "PairedImageDataset|SingleImageDataset"
#define VIDEO_SETS "REDSRecurrentDataset|Vimeo90KRecurrentDataset|VideoRecurrentTestDataset|" \
                   "RealESRGANVideoDataset|REDSDataset|VideoTestDataset"
#define VIDEO_TRAIN "REDSRecurrentDataset|Vimeo90KRecurrentDataset|RealESRGANVideoDataset|" \
                    "REDSDataset"
#define REAL_SETS "RealESRGANDataset|RealESRGANVideoDataset"  /* LQ by the Real-ESRGAN pipeline */

/* The gan section's choices (issue 41): BasicSR's model types, discriminators and GANLoss
   gan_type names (those of nn/gan_loss.h's pf_gan_type_parse; tests/test_config_gan.c checks
   that each parses there). */
#define GAN_MODELS "RealESRGANModel|ESRGANModel"
#define GAN_NETDS "UNetDiscriminatorSN|VGGStyleDiscriminator"
#define GAN_TYPES "vanilla|lsgan|wgan|wgan_softplus|hinge"

/* Real-ESRGAN's degradation keys (BasicSR's names and train_realesrnet_x4plus.yml's defaults,
   those of pf_realesrgan_opts_default), stored as doubles in the set's pf_realesrgan_opts. */
#define RE_ROW(S, NAME, KIND, FIELD)                                                           \
    .path = "data." #S "." NAME, .kind = KIND, .offset = OFF(S.realesrgan.FIELD),              \
    .when_key = "data." #S ".type", .when = REAL_SETS
#define RE_PROB(S, NAME, FIELD, DEF, DOC)                                                      \
    {RE_ROW(S, NAME, PF_K_DOUBLE, FIELD), .lo = 0, .hi = 1, .def = DEF, .doc = DOC}
#define RE_PAIR(S, NAME, FIELD, FLAGS, LO, HI, DEF, DOC)                                       \
    {RE_ROW(S, NAME, PF_K_DOUBLE_LIST, FIELD), .flags = FLAGS, .size = 2, .min_n = 2,          \
     .lo = LO, .hi = HI, .def = DEF, .doc = DOC}
#define RE_KINDS "iso|aniso|generalized_iso|generalized_aniso|plateau_iso|plateau_aniso"

/* One stage's blur keys (I 0 or 1, SUF "" or "2", STAGE "stage 1" or "stage 2"). */
#define RE_BLUR_KEYS(S, I, SUF, STAGE, SIGMA)                                                   \
    {RE_ROW(S, "blur_kernel_size" SUF, PF_K_INT, blur[I].blur_kernel_size), .lo = 3, .hi = 31,  \
     .def = "21", .doc = STAGE " blur: largest kernel in pixels, odd; sizes are drawn from the " \
                         "odd 7..it (it alone when below 7)"},                                  \
    {RE_ROW(S, "kernel_list" SUF, PF_K_ENUM_LIST, blur[I].kernel_list), .choices = RE_KINDS,     \
     .size = 8, .count_offset = OFF(S.realesrgan.blur[I].n_kernels), .min_n = 1,               \
     .def = "[iso, aniso, generalized_iso, generalized_aniso, plateau_iso, plateau_aniso]",    \
     .doc = STAGE " blur: the kernel kinds to draw from (Real-ESRGAN paper, sec. 3.1)"},        \
    {RE_ROW(S, "kernel_prob" SUF, PF_K_DOUBLE_LIST, blur[I].kernel_prob), .size = 8,           \
     .count_offset = OFF(S.realesrgan.blur[I].n_kernel_prob), .min_n = 1, .lo = 0, .hi = 1,    \
     .def = "[0.45, 0.25, 0.12, 0.03, 0.12, 0.03]",                                            \
     .doc = STAGE " blur: probability of each kernel_list" SUF " kind; as many, summing to 1"}, \
    RE_PAIR(S, "blur_sigma" SUF, blur[I].blur_sigma, PF_KF_LO_OPEN, 0, INF, SIGMA,              \
            STAGE " blur: [lo, hi] of the Gaussian kinds' sigma (x and y), pixels"),            \
    RE_PAIR(S, "betag_range" SUF, blur[I].betag_range, PF_KF_LO_OPEN, 0, INF, "[0.5, 4]",      \
            STAGE " blur: [lo, hi] of the generalized Gaussian's shape beta, lo ≤ 1 ≤ hi"),     \
    RE_PAIR(S, "betap_range" SUF, blur[I].betap_range, PF_KF_LO_OPEN, 0, INF, "[1, 2]",        \
            STAGE " blur: [lo, hi] of the plateau kernel's shape beta, lo ≤ 1 ≤ hi"),           \
    RE_PROB(S, "sinc_prob" SUF, blur[I].sinc_prob, "0.1",                                       \
            STAGE " blur: probability of a circular sinc (ringing) kernel instead")

/* One stage's resize, noise and JPEG keys. */
#define RE_STAGE_KEYS(S, I, SUF, STAGE, RPROB, RRANGE, NRANGE, PRANGE, JPEG)                    \
    {RE_ROW(S, "resize_prob" SUF, PF_K_DOUBLE_LIST, resize[I].resize_prob), .size = 3,         \
     .count_offset = OFF(S.realesrgan.resize[I].n_resize_prob), .min_n = 3, .lo = 0, .hi = 1,  \
     .def = RPROB, .doc = STAGE " resize: probabilities of up, down and keep, summing to 1"},   \
    RE_PAIR(S, "resize_range" SUF, resize[I].resize_range, PF_KF_LO_OPEN, 0, INF, RRANGE,       \
            STAGE " resize: factor range [lo, hi]: down in [lo, 1), up in [1, hi); "            \
                  "lo ≤ 1 ≤ hi"),                                                               \
    RE_PROB(S, "gaussian_noise_prob" SUF, noise[I].gaussian_noise_prob, "0.5",                  \
            STAGE " noise: probability of Gaussian noise, else Poisson"),                       \
    RE_PAIR(S, "noise_range" SUF, noise[I].noise_range, 0, 0, 255, NRANGE,                      \
            STAGE " noise: [lo, hi] of the Gaussian sigma on the 0..255 scale"),                \
    RE_PAIR(S, "poisson_scale_range" SUF, noise[I].poisson_scale_range, 0, 0, INF, PRANGE,      \
            STAGE " noise: [lo, hi] of the Poisson noise's scale"),                             \
    RE_PROB(S, "gray_noise_prob" SUF, noise[I].gray_noise_prob, "0.4",                          \
            STAGE " noise: probability of gray noise (one plane for R, G and B)"),              \
    RE_PAIR(S, "jpeg_range" SUF, jpeg[I].jpeg_range, 0, 1, 100, "[30, 95]",                     \
            JPEG " JPEG: quality range [lo, hi], whole numbers")

#define REALESRGAN_KEYS(S)                                                                      \
    RE_BLUR_KEYS(S, 0, "", "stage 1", "[0.2, 3]"),                                              \
    RE_BLUR_KEYS(S, 1, "2", "stage 2", "[0.2, 1.5]"),                                           \
    RE_PROB(S, "final_sinc_prob", final_sinc_prob, "0.8",                                       \
            "probability of the final sinc filter (with the last resize); its size is drawn " \
            "from the odd 7..`blur_kernel_size` (stage 1's)"),                                 \
    RE_STAGE_KEYS(S, 0, "", "stage 1", "[0.2, 0.7, 0.1]", "[0.15, 1.5]", "[1, 30]",            \
                  "[0.05, 3]", "stage 1"),                                                                 \
    RE_PROB(S, "second_order_prob", second_order_prob, "1",                                     \
            "probability of stage 2 (BasicSR: always)"),                                        \
    RE_PROB(S, "second_blur_prob", second_blur_prob, "0.8",                                     \
            "probability of stage 2's blur"),                                                   \
    RE_STAGE_KEYS(S, 1, "2", "stage 2", "[0.3, 0.4, 0.3]", "[0.3, 1.2]", "[1, 25]",            \
                  "[0.05, 2.5]", "final"),                                                               \
    {.path = "data." #S ".degrade_seed", .kind = PF_K_INT64, .flags = PF_KF_IF_CHANGED,        \
     .offset = OFF(S.degrade_seed), .lo = 0, .hi = (double)INT64_MAX, .def = "0", .when_key = "data." #S ".type",             \
     .when = "RealESRGANDataset",                                                              \
     .doc = "eval and test only: each image is degraded from this seed and its place in the "  \
            "set, not from the job's `seed`, so runs with any `seed` are scored on the same "   \
            "degraded images (`pixflow data --degrade` writes them)"},                          \
    {.path = "data." #S ".gt_usm", .kind = PF_K_BOOL, .flags = PF_KF_TRAIN_ONLY,               \
     .offset = OFF(S.gt_usm), .def = "true", .when_key = "data." #S ".type", .when = REAL_SETS, \
     .doc = "train only: the GT patch is sharpened (unsharp mask, BasicSR's `gt_usm`) and "    \
            "the LQ made from the sharpened GT, as BasicSR's RealESRNetModel"}

/* The keys of one dataset block, for set S (train, eval, test). */
#define DATASET_KEYS(S, DOC)                                                                   \
    {.path = "data." #S, .kind = PF_K_SECTION, .offset = OFF(S.present),                      \
     .type_doc = "dataset mapping", .def_doc = "none", .doc = DOC},                           \
    {.path = "data." #S ".type", .kind = PF_K_CHOICE, .offset = OFF(S.type), .size = SZ(S.type), \
     .choices = IMAGE_SETS "|RealESRGANDataset|" VIDEO_SETS, .def = "PairedImageDataset",   \
     .doc = "`SingleImageDataset`: LQ only (no GT, no metrics), `data.test` only; the video "  \
            "sets ([video.md](video.md)): `REDSRecurrentDataset`, "                            \
            "`Vimeo90KRecurrentDataset` (training), `VideoRecurrentTestDataset` (whole clips); " \
            "EDVR's sliding windows: `REDSDataset` (training: a center frame's GT and its "     \
            "`num_frame` LQ neighbours), `VideoTestDataset` (every frame with its window); "   \
            "`RealESRGANDataset` (GT images, LQ made by Real-ESRGAN's degradations below: per " \
            "training sample, per eval image from `degrade_seed`) and "                       \
            "`RealESRGANVideoDataset` "                                                        \
            "(REDSRecurrentDataset's clips, one draw per sample; training)"},                  \
    {.path = "data." #S ".gt_folder", .kind = PF_K_PATH,                                       \
     .flags = PF_KF_NONEMPTY | PF_KF_DIR | PF_KF_IF_CHANGED, .offset = OFF(S.gt_folder),       \
     .size = SZ(S.gt_folder), .def_doc = "—", .when_key = "data." #S ".type",                   \
     .required_when = "PairedImageDataset|RealESRGANDataset|" VIDEO_SETS,                      \
     .doc = "ground-truth images (video sets: clips, each a folder of frames or a video "     \
            "file); required by PairedImageDataset and the video sets, refused by "            \
            "SingleImageDataset"},                                                             \
    {.path = "data." #S ".lq_folder", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_DIR,      \
     .offset = OFF(S.lq_folder), .size = SZ(S.lq_folder), .def = "null",                       \
     .doc = "low-quality images; `null`: made from GT by `degradation` on the fly; required "  \
            "by SingleImageDataset, refused by the RealESRGAN sets"},                          \
    {.path = "data." #S ".filename_tmpl", .kind = PF_K_STR, .offset = OFF(S.filename_tmpl),   \
     .size = SZ(S.filename_tmpl), .def = "'{}'", .when_key = "data." #S ".type",               \
     .when = IMAGE_SETS,                                                                       \
     .doc = "LQ file stem from the GT stem, e.g. `'{}x2'`; contains `{}` exactly once"},        \
    {.path = "data." #S ".meta_info_file", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_FILE, \
     .offset = OFF(S.meta_info_file), .size = SZ(S.meta_info_file), .def = "null",             \
     .doc = "BasicSR meta_info: each non-empty line's first word names a file of the folder "  \
            "(GT; Single: LQ) to use, in that order; other files are ignored"},                \
    {.path = "data." #S ".degradation", .kind = PF_K_CUSTOM, .custom = PF_KC_DEGRADATION,      \
     .offset = OFF(S), .type_doc = "list of 1–2 steps",                         \
     .def_doc = "`[{type: BI}]` when `lq_folder` is null",                                     \
     .doc = "how LQ is made from GT, below; an error together with `lq_folder` and with the " \
            "RealESRGAN sets (their keys below)"},                                             \
    {.path = "data." #S ".gt_patch_size", .kind = PF_K_INT, .flags = PF_KF_TRAIN_ONLY,        \
     .offset = OFF(S.gt_patch_size), .lo = 1, .hi = 1 << 16, .def_doc = "— (train)",           \
     .doc = "train only: GT crop size in pixels; a multiple of `model.scale` (RRDBNet x2: of " \
            "4, its LQ patch is pixel-unshuffled by 2)"},                                      \
    {.path = "data." #S ".use_flip", .kind = PF_K_BOOL, .flags = PF_KF_TRAIN_ONLY,            \
     .offset = OFF(S.use_flip), .def = "false", .when_key = "data." #S ".type",                \
     .when = IMAGE_SETS "|RealESRGANDataset",                                                  \
     .doc = "train only: random horizontal and vertical flips"},                                \
    {.path = "data." #S ".use_rot", .kind = PF_K_BOOL, .flags = PF_KF_TRAIN_ONLY,             \
     .offset = OFF(S.use_rot), .def = "false",                                                 \
     .doc = "train only: random transpose (BasicSR's `rot90` flag; BasicSR's `use_rot` also "  \
            "flips vertically, which PixFlow's `use_flip` does); video sets: BasicSR's "       \
            "`use_rot`, a random vertical flip and a random transpose, all frames alike"},     \
    {.path = "data." #S ".repeat", .kind = PF_K_INT, .flags = PF_KF_TRAIN_ONLY,               \
     .offset = OFF(S.repeat), .lo = 1, .hi = 1 << 20, .def = "1",                              \
     .doc = "train only: the set is visited this many times per epoch (MMagic "                \
            "`RepeatDataset.times`)"},                                                         \
    {.path = "data." #S ".use_hflip", .kind = PF_K_BOOL, .flags = PF_KF_TRAIN_ONLY,           \
     .offset = OFF(S.use_hflip), .def = "false", .when_key = "data." #S ".type",               \
     .when = VIDEO_TRAIN, .doc = "train only: random horizontal flip of all frames alike"},   \
    {.path = "data." #S ".num_frame", .kind = PF_K_INT,                                        \
     .offset = OFF(S.num_frame), .lo = 1, .hi = 1000, .def = "15",                             \
     .def_for = "Vimeo90KRecurrentDataset=7|REDSDataset=5|VideoTestDataset=5",                  \
     .when_key = "data." #S ".type", .when = VIDEO_TRAIN "|VideoTestDataset",                  \
     .doc = "frames per training sample; REDSDataset and VideoTestDataset: the window of LQ "  \
            "frames around each center frame, odd"},                                           \
    {.path = "data." #S ".padding", .kind = PF_K_CHOICE, .offset = OFF(S.padding),             \
     .size = SZ(S.padding), .choices = "reflection_circle|reflection|replicate|circle",       \
     .def = "reflection_circle", .when_key = "data." #S ".type", .when = "VideoTestDataset",   \
     .doc = "how a window is filled at a clip's ends (BasicSR's generate_frame_indices; "      \
            "[video.md](video.md))"},                                                          \
    {.path = "data." #S ".interval_list", .kind = PF_K_INT_LIST, .flags = PF_KF_TRAIN_ONLY,   \
     .offset = OFF(S.interval_list), .size = N(S.interval_list),                               \
     .count_offset = OFF(S.n_intervals), .min_n = 1, .lo = 1, .hi = 1000, .def = "[1]",        \
     .when_key = "data." #S ".type", .when = VIDEO_TRAIN,                                      \
     .doc = "train only: a sample's frame spacing is drawn from these"},                      \
    {.path = "data." #S ".random_reverse", .kind = PF_K_BOOL, .flags = PF_KF_TRAIN_ONLY,      \
     .offset = OFF(S.random_reverse), .def = "false", .when_key = "data." #S ".type",          \
     .when = VIDEO_TRAIN, .doc = "train only: a sample's frames reversed with probability "    \
                                 "1/2"},                                                       \
    {.path = "data." #S ".val_partition", .kind = PF_K_CUSTOM, .custom = PF_KC_NAMES,         \
     .flags = PF_KF_TRAIN_ONLY, .offset = OFF(S), .when_key = "data." #S ".type",              \
     .when = VIDEO_TRAIN, .type_doc = "list of clip names", .def_doc = "none",                 \
     .doc = "train only: clips held out of training (BasicSR's `val_partition`, by name)"},   \
    REALESRGAN_KEYS(S),                                                                        \
    {.path = "data." #S ".clips", .kind = PF_K_CUSTOM, .custom = PF_KC_CLIPS, .offset = OFF(S), \
     .when_key = "data." #S ".type", .when = VIDEO_SETS, .type_doc = "list of mappings, "      \
     "≤ 64", .def_doc = "`meta_info_file`'s, else every clip of `gt_folder`",                  \
     .doc = "the clips and the part of each to use, below"},                                   \
    {.path = "data." #S ".clips.*.name", .kind = PF_K_STR,                                     \
     .flags = PF_KF_REQUIRED | PF_KF_NONEMPTY, .offset = offsetof(pf_clip_cfg, name),          \
     .size = sizeof(((pf_clip_cfg *)0)->name), .def_doc = "—",                                 \
     .doc = "a folder of frames or a video file, relative to `gt_folder` (and `lq_folder`)"},  \
    {.path = "data." #S ".clips.*.frames", .kind = PF_K_INT_LIST,                              \
     .offset = offsetof(pf_clip_cfg, frames), .size = 2, .min_n = 2, .lo = 0, .hi = 1 << 30,   \
     .def = "[0, 0]", .doc = "frames [first, end) of the clip; `[0, 0]`: all"},                \
    {.path = "data." #S ".clips.*.crop", .kind = PF_K_INT_LIST,                                \
     .offset = offsetof(pf_clip_cfg, crop), .size = 4, .min_n = 4, .lo = 0, .hi = 1 << 20,     \
     .def = "[0, 0, 0, 0]", .doc = "x, y, w, h of the GT frames (multiples of `model.scale`);" \
                                   " w 0: the whole frame"},                                   \
    {.path = "data." #S ".degradation.*.type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED,  \
     .offset = offsetof(pf_degradation, type), .size = sizeof(((pf_degradation *)0)->type),    \
     .choices = "BI|BD|DN|JPEG", .def_doc = "—",                                               \
     .doc = "`BI`: MATLAB `imresize(GT, 1/scale, 'bicubic')` (docs/data.md); `BD`: Gaussian "  \
            "blur of the GT (replicated borders), then the pixel at the centre of every scale "\
            "x scale block; `DN`: `BI`, then Gaussian noise (0..255 scale), rounded and "      \
            "clamped; `JPEG`: JPEG compression of the LQ (libjpeg-turbo)"},                   \
    {.path = "data." #S ".degradation.*.kernel_size", .kind = PF_K_INT, .flags = PF_KF_ODD,   \
     .offset = offsetof(pf_degradation, kernel_size), .lo = 1, .hi = 51, .def = "7",           \
     .when_key = "data." #S ".degradation.*.type", .when = "BD",                               \
     .doc = "Gaussian kernel size in pixels"},                                                 \
    {.path = "data." #S ".degradation.*.sigma", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,   \
     .offset = offsetof(pf_degradation, sigma), .lo = 0, .hi = 50, .def = "1.6",               \
     .when_key = "data." #S ".degradation.*.type", .when = "BD",                               \
     .doc = "blur sigma in pixels"},                                                           \
    {.path = "data." #S ".degradation.*.sigma", .kind = PF_K_FLOAT, .flags = PF_KF_RANGE,     \
     .offset = offsetof(pf_degradation, sigma), .lo = 0, .hi = 255, .def = "30",               \
     .when_key = "data." #S ".degradation.*.type", .when = "DN",                               \
     .doc = "noise standard deviation on the 0..255 scale; a range draws it per sample"},     \
    {.path = "data." #S ".degradation.*.quality", .kind = PF_K_INT, .flags = PF_KF_RANGE,     \
     .offset = offsetof(pf_degradation, quality), .lo = 1, .hi = 100,                          \
     .when_key = "data." #S ".degradation.*.type", .when = "JPEG", .required_when = "JPEG",    \
     .def_doc = "— (JPEG)",                                                                    \
     .doc = "JPEG quality; a range draws it per sample"}

const pf_config_key pf_config_keys[] = {
    /* ---- model ---- */
    {.path = "model", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED},
    {.path = "model.type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED, .offset = OFF(model_type),
     .size = SZ(model_type), .choices = MODEL_TYPES,
     .doc = "network to build ([models.md](models.md))"},
    {.path = "model.scale", .kind = PF_K_INT, .flags = PF_KF_REQUIRED, .offset = OFF(scale),
     .lo = 1, .hi = 1 << 20,
     .choices = "2|3|4", .doc = "upscaling factor"},    /* + the types' scales (config_docs.c) */
    {.path = "model.in_channels", .kind = PF_K_INT, .offset = OFF(in_channels), .lo = 1,
     .hi = 1 << 20, .choices = "3", .def = "3", .doc = "images are loaded as RGB8"},
    {.path = "model.out_channels", .kind = PF_K_INT, .offset = OFF(out_channels), .lo = 1,
     .hi = 1 << 20, .choices = "3", .def = "3", .doc = "images are written as RGB8"},
    {.path = "model.n_feats", .kind = PF_K_INT, .offset = OFF(n_feats), .lo = 1, .hi = 4096,
     .def = "64", .when_key = "model.type", .when = WIDE, .alias = "num_feat",
     .doc = "width (BasicSR `num_feat`, MMagic `mid_channels`)"},
    {.path = "model.n_blocks", .kind = PF_K_INT, .offset = OFF(n_blocks), .lo = 1, .hi = 1024,
     .def = "16", .when_key = "model.type", .when = PF_NET_LIST(BLOCKS), .alias = "num_block",
     .doc = "depth: residual blocks (EDSR, MSRResNet), RCABs per residual group (RCAN), RRDBs "
            "(RRDBNet), residual blocks of each propagation trunk (BasicVSR, at most 31); "
            "BasicSR `num_block`, MMagic `num_blocks`"},
    {.path = "model.spynet_pretrained", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_FILE,
     .offset = OFF(spynet_pretrained), .size = SZ(spynet_pretrained), .def = "null",
     .when_key = "model.type", .when = PF_NET_LIST(SPYNET),
     .doc = "SPyNet weights, a safetensors file with BasicSR's names "
            "(`spynet.basic_module.L.basic_module.K.weight`, or without the `spynet.` prefix as "
            "BasicSR's spynet_sintel_final file has them); null: SPyNet initialised from the "
            "seed like the rest. `load_from` and `resume_from` win over it"},
    {.path = "model.fix_iter", .kind = PF_K_INT64, .offset = OFF(fix_iter), .lo = 0,
     .hi = 1e15, .def = "0", .when_key = "model.type", .when = PF_NET_LIST(SPYNET),
     .doc = "SPyNet is frozen (no update, no optimiser state) for the first `fix_iter` "
            "iterations (MMagic `train_cfg.fix_iter`, BasicSR `train.fix_flow`); its learning "
            "rate after that: `optimizers.paramwise_cfg.custom_keys.spynet.lr_mult`"},
    {.path = "model.max_residue_magnitude", .kind = PF_K_FLOAT, .offset =
     OFF(max_residue_magnitude), .lo = 0, .hi = INF, .def = "10", .when_key = "model.type",
     .when = "BasicVSRPlusPlus",
     .doc = "the deformable alignment's offsets are the flow plus at most this many pixels "
            "(max_residue_magnitude tanh of the predicted residue; BasicVSR++ Eq. 6, MMagic and "
            "BasicSR `max_residue_magnitude`)"},
    {.path = "model.is_low_res_input", .kind = PF_K_BOOL, .offset = OFF(is_low_res_input),
     .def = "true", .when_key = "model.type", .when = "BasicVSRPlusPlus",
     .doc = "the input is the LQ and the output 4x it (MMagic and BasicSR `is_low_res_input`); "
            "false, their same-size variant (strided feature extraction, bicubic x1/4 for "
            "SPyNet), is not supported yet"},
    {.path = "model.num_frame", .kind = PF_K_INT, .offset = OFF(edvr_num_frame), .lo = 1,
     .hi = 63, .def = "5", .when_key = "model.type", .when = "EDVR",
     .doc = "LQ frames of one window (BasicSR `num_frame`); odd (BasicSR also builds even "
            "windows, PixFlow refuses them: the center frame is num_frame // 2 neighbours from "
            "each end, as REDSDataset's windows); `data.train.num_frame` must equal it"},
    {.path = "model.deformable_groups", .kind = PF_K_INT, .offset = OFF(deformable_groups),
     .lo = 1, .hi = 4096, .def = "8", .when_key = "model.type", .when = "EDVR",
     .doc = "deformable groups of the PCD alignment's DCNs (BasicSR `deformable_groups`); "
            "must divide `n_feats`"},
    {.path = "model.num_extract_block", .kind = PF_K_INT, .offset = OFF(num_extract_block),
     .lo = 0, .hi = 1024, .def = "5", .when_key = "model.type", .when = "EDVR",
     .doc = "residual blocks of the per-frame feature extraction"},
    {.path = "model.num_reconstruct_block", .kind = PF_K_INT,
     .offset = OFF(num_reconstruct_block), .lo = 0, .hi = 1024, .def = "10",
     .when_key = "model.type", .when = "EDVR",
     .doc = "residual blocks of the reconstruction before the upsampler"},
    {.path = "model.center_frame_idx", .kind = PF_K_INT, .flags = PF_KF_NULL,
     .offset = OFF(center_frame_idx), .lo = -1, .hi = 62, .def = "-1", .when_key = "model.type",
     .when = "EDVR",
     .doc = "the reference frame in the window, 0..num_frame-1; null or -1 (BasicSR's null, "
            "`~`): num_frame // 2"},
    {.path = "model.hr_in", .kind = PF_K_BOOL, .offset = OFF(hr_in), .def = "false",
     .when_key = "model.type", .when = "EDVR",
     .doc = "BasicSR's same-size input (the predeblur's strided convs down by 4 first, "
            "output at the input's size): not supported yet (it trains at scale 1, which the "
            "data pipeline does not take)"},
    {.path = "model.with_predeblur", .kind = PF_K_BOOL, .offset = OFF(with_predeblur),
     .def = "false", .when_key = "model.type", .when = "EDVR",
     .doc = "BasicSR's PredeblurModule (a 3-level pyramid of residual blocks) and a 1x1 "
            "conv `conv_1x1` in place of `conv_first` (BasicSR's EDVR_L_x4_SRblur_REDS)"},
    {.path = "model.with_tsa", .kind = PF_K_BOOL, .offset = OFF(with_tsa), .def = "true",
     .when_key = "model.type", .when = "EDVR",
     .doc = "TSA fusion (temporal and spatial attention); false: one 1x1 conv `fusion` over "
            "the aligned frames"},
    {.path = "model.num_group", .kind = PF_K_INT, .offset = OFF(num_group), .lo = 1, .hi = 1024,
     .def = "10", .when_key = "model.type", .when = PF_NET_LIST(RCAN),
     .doc = "residual groups"},
    {.path = "model.squeeze_factor", .kind = PF_K_INT, .offset = OFF(squeeze_factor), .lo = 1,
     .hi = 4096, .def = "16", .when_key = "model.type", .when = PF_NET_LIST(RCAN),
     .doc = "channel attention squeezes `n_feats` to `n_feats / squeeze_factor` (integer "
            "division) channels; at most `n_feats`"},
    {.path = "model.num_grow_ch", .kind = PF_K_INT, .offset = OFF(num_grow_ch), .lo = 1,
     .hi = 4096, .def = "32", .when_key = "model.type", .when = PF_NET_LIST(GROW),
     .doc = "growth channels of each dense block"},
    {.path = "model.res_scale", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(res_scale), .lo = 0, .hi = INF, .def = "1", .when_key = "model.type",
     .when = SHIFT, .doc = "residual scaling"},
    {.path = "model.rgb_mean", .kind = PF_K_FLOAT_LIST, .offset = OFF(rgb_mean),
     .size = N(rgb_mean), .min_n = 3, .lo = 0, .hi = 1, .def = "[0.4488, 0.4371, 0.404]",
     .when_key = "model.type", .when = SHIFT,
     .doc = "mean shift (DIV2K mean, BasicSR default)"},
    {.path = "model.img_range", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(img_range), .lo = 0, .hi = INF, .def = "255", .when_key = "model.type",
     .when = SHIFT, .doc = "pixel range the mean shift works in"},
    {.path = "model.d", .kind = PF_K_INT, .offset = OFF(fsrcnn_d), .lo = 1, .hi = 4096,
     .def = "56", .when_key = "model.type", .when = PF_NET_LIST(FSRCNN),
     .doc = "feature width (LR feature extraction, expanding)"},
    {.path = "model.s", .kind = PF_K_INT, .offset = OFF(fsrcnn_s), .lo = 1, .hi = 4096,
     .def = "12", .when_key = "model.type", .when = PF_NET_LIST(FSRCNN),
     .doc = "width after shrinking"},
    {.path = "model.m", .kind = PF_K_INT, .offset = OFF(fsrcnn_m), .lo = 0, .hi = 1024,
     .def = "4", .when_key = "model.type", .when = PF_NET_LIST(FSRCNN),
     .doc = "3x3 mapping layers"},
    {.path = "model.channels", .kind = PF_K_INT_LIST, .offset = OFF(srcnn_channels),
     .size = N(srcnn_channels), .min_n = 4, .lo = 1, .hi = 4096, .def = "[3, 64, 32, 3]",
     .when_key = "model.type", .when = PF_NET_LIST(SRCNN),
     .doc = "channels in, after conv1, after conv2, out; first and last must equal "
            "`in_channels`, `out_channels`"},
    {.path = "model.kernel_sizes", .kind = PF_K_INT_LIST, .flags = PF_KF_ODD,
     .offset = OFF(srcnn_kernel_sizes), .size = N(srcnn_kernel_sizes), .min_n = 3, .lo = 1,
     .hi = 63, .def = "[9, 1, 5]", .when_key = "model.type", .when = PF_NET_LIST(SRCNN),
     .doc = "kernel size of each conv"},
    {.path = "model.loss", .kind = PF_K_SECTION, .def_doc = "`{type: L1Loss, loss_weight: 1}`",
     .doc = "pixel loss, below"},
    {.path = "model.loss.type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED,
     .offset = OFF(loss_type), .size = SZ(loss_type), .choices = "L1Loss|MSELoss|CharbonnierLoss",
     .def = "L1Loss", .def_doc = "— (when `loss` is given)", .doc = "the loss (BasicSR's)"},
    {.path = "model.loss.loss_weight", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(loss_weight), .lo = 0, .hi = INF, .def = "1", .doc = "factor on the loss"},
    {.path = "model.loss.eps", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(charbonnier_eps), .lo = 0, .hi = INF, .def = "1e-12",
     .when_key = "model.loss.type", .when = "CharbonnierLoss",
     .doc = "sqrt((x - y)^2 + eps) (BasicSR)"},
    {.path = "model.loss.reduction", .kind = PF_K_CHOICE, .flags = PF_KF_NO_STORE | PF_KF_NO_WRITE,
     .choices = "mean", .def = "mean",
     .doc = "accepted for MMagic compatibility; only `mean` exists"},

    /* ---- data ---- */
    {.path = "data", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED},
    {.path = "data.loaders", .kind = PF_K_INT, .offset = OFF(loaders), .lo = 1, .hi = 256,
     .def = "2", .doc = "loader processes `pixflow train` starts on this host"},
    {.path = "data.samples_per_gpu", .kind = PF_K_INT, .offset = OFF(samples_per_gpu), .lo = 1,
     .hi = 1024, .def = "16", .doc = "batch size per worker (at most `PF_MAX_BATCH`)"},
    {.path = "data.prefetch", .kind = PF_K_INT, .offset = OFF(prefetch), .lo = 1, .hi = 1024,
     .def = "4", .doc = "batches a worker may hold ahead (its credits)"},
    {.path = "data.cache_mb", .kind = PF_K_INT, .offset = OFF(cache_mb), .lo = 0, .hi = 1 << 20,
     .def = "1024",
     .doc = "decoded-image cache of each loader in MiB (GT + LQ pixels, least recently used "
            "dropped first); 0 decodes every sample's image"},
    {.path = "data.loader_threads", .kind = PF_K_INT, .offset = OFF(loader_threads), .lo = 1,
     .hi = 64, .def = "1",
     .doc = "threads each loader uses to decode and augment the samples of a batch"},
    {.path = "data.on_bad_sample", .kind = PF_K_ENUM, .offset = OFF(skip_bad_samples),
     .choices = "fail|skip", .def = "fail",
     .doc = "a sample whose file became unreadable mid-run: `fail` ends the job with a message "
            "naming the file; `skip` leaves it out of its batch, logs it and counts it. A video "
            "clip found cut short at start-up (docs/video.md): `fail` refuses the job before "
            "any process starts; `skip` warns and keeps the clip's whole frames only"},
    DATASET_KEYS(train, "training set, below; required by `pixflow train` (`data` needs at "
                        "least one of the three)"),
    DATASET_KEYS(eval, "evaluation set; required when `evaluation` is set"),
    DATASET_KEYS(test, "set for `pixflow test`"),

    /* ---- optimizers ---- */
    {.path = "optimizers", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED | PF_KF_TO_TRAIN,
     .offset = OFF(has_optimizers)},
    {.path = "optimizers.type", .kind = PF_K_CHOICE, .offset = OFF(optim_type),
     .size = SZ(optim_type), .choices = "Adam|AdamW|SGD", .def = "Adam",
     .doc = "`torch.optim` of the same name (torch 1.13 formulas, `nn/optim.c`)"},
    {.path = "optimizers.lr", .kind = PF_K_FLOAT, .flags = PF_KF_REQUIRED | PF_KF_LO_OPEN,
     .offset = OFF(learning_rate), .lo = 0, .hi = INF, .doc = "base learning rate"},
    {.path = "optimizers.betas", .kind = PF_K_FLOAT_LIST, .flags = PF_KF_HI_OPEN,
     .offset = OFF(betas), .size = N(betas), .min_n = 2, .lo = 0, .hi = 1,
     .def = "[0.9, 0.999]", .when_key = "optimizers.type", .when = "Adam|AdamW",
     .doc = "coefficients of the running averages of the gradient and its square"},
    {.path = "optimizers.eps", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN, .offset = OFF(eps),
     .lo = 0, .hi = INF, .def = "1e-08", .when_key = "optimizers.type", .when = "Adam|AdamW",
     .doc = "added to the denominator"},
    {.path = "optimizers.weight_decay", .kind = PF_K_FLOAT, .offset = OFF(weight_decay), .lo = 0,
     .hi = INF, .def = "0", .def_key = "optimizers.type", .def_for = "AdamW=0.01",
     .doc = "Adam and SGD: L2 term added to the gradient; AdamW: decoupled, `p *= 1 - lr * "
            "weight_decay` before the update. AdamW's default is torch's"},
    {.path = "optimizers.momentum", .kind = PF_K_FLOAT, .offset = OFF(momentum), .lo = 0,
     .hi = 1, .def = "0", .when_key = "optimizers.type", .when = "SGD",
     .doc = "0 = plain SGD (no buffer). Buffer `b = momentum * b + (1 - dampening) * g`, "
            "`b = g` on the first step"},
    {.path = "optimizers.dampening", .kind = PF_K_FLOAT, .offset = OFF(dampening), .lo = 0,
     .hi = 1, .def = "0", .when_key = "optimizers.type", .when = "SGD",
     .doc = "damps the gradient in the momentum buffer"},
    {.path = "optimizers.nesterov", .kind = PF_K_BOOL, .offset = OFF(nesterov), .def = "false",
     .when_key = "optimizers.type", .when = "SGD",
     .doc = "Nesterov momentum; needs `momentum > 0` and `dampening: 0` (as torch)"},
    {.path = "optimizers.paramwise_cfg", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .def_doc = "none", .doc = "per-parameter multipliers, below"},
    {.path = "optimizers.paramwise_cfg.custom_keys", .kind = PF_K_CUSTOM,
     .custom = PF_KC_CUSTOM_KEYS, .offset = OFF(n_custom_keys),
     .type_doc = "mapping of name parts to `{lr_mult, decay_mult}`, ≤ 16", .def_doc = "none",
     .doc = "a parameter takes the multipliers of the longest key that is a substring of its "
            "name (below)"},
    {.path = "optimizers.paramwise_cfg.custom_keys.*.lr_mult", .kind = PF_K_FLOAT,
     .offset = offsetof(pf_custom_key, lr_mult), .lo = 0, .hi = INF, .def = "1",
     .doc = "factor on the learning rate; 0 freezes the parameters"},
    {.path = "optimizers.paramwise_cfg.custom_keys.*.decay_mult", .kind = PF_K_FLOAT,
     .offset = offsetof(pf_custom_key, decay_mult), .lo = 0, .hi = INF, .def = "1",
     .doc = "factor on the weight decay"},

    /* ---- optimizer_config, ema_decay ---- */
    {.path = "optimizer_config", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "MMCV `OptimizerHook`"},
    {.path = "optimizer_config.grad_clip", .kind = PF_K_SECTION,
     .flags = PF_KF_NULL | PF_KF_IF_CHANGED, .def = "null",
     .doc = "before every step, `torch.nn.utils.clip_grad_norm_` over all parameters (the "
            "gradients averaged over the workers): when `max_norm / (norm + 1e-6) < 1` every "
            "gradient is multiplied by that factor"},
    {.path = "optimizer_config.grad_clip.max_norm", .kind = PF_K_FLOAT,
     .flags = PF_KF_REQUIRED | PF_KF_LO_OPEN, .offset = OFF(grad_clip_max_norm), .lo = 0,
     .hi = INF, .doc = "largest total L2 norm of all gradients"},
    {.path = "optimizer_config.grad_clip.norm_type", .kind = PF_K_FLOAT,
     .flags = PF_KF_NO_STORE | PF_KF_LO_OPEN, .lo = 0, .hi = INF, .def = "2",
     .doc = "only the L2 norm (2) is implemented"},
    {.path = "ema_decay", .kind = PF_K_FLOAT, .flags = PF_KF_IF_CHANGED | PF_KF_HI_OPEN,
     .offset = OFF(ema_decay), .lo = 0, .hi = 1, .def = "0",
     .doc = "BasicSR's `ema_decay`; 0 = off (below)"},

    /* ---- lr_config ---- */
    {.path = "lr_config", .kind = PF_K_SECTION, .doc = "the learning rate schedule"},
    {.path = "lr_config.policy", .kind = PF_K_CHOICE, .offset = OFF(lr_policy),
     .size = SZ(lr_policy), .choices = "Fixed|Step|CosineRestart", .def = "Fixed",
     .doc = "MMCV's `Fixed`, `Step`, `CosineRestart` (BasicSR `MultiStepLR`, "
            "`CosineAnnealingRestartLR`)"},
    {.path = "lr_config.step", .kind = PF_K_INT64_LIST, .flags = PF_KF_INCREASING,
     .offset = OFF(lr_step), .size = N(lr_step), .count_offset = OFF(n_lr_step), .min_n = 1,
     .lo = 1, .hi = (double)INT64_MAX, .when_key = "lr_config.policy", .when = "Step",
     .required_when = "Step", .def_doc = "— (Step)", .doc = "milestones in iterations"},
    {.path = "lr_config.gamma", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN, .offset = OFF(lr_gamma),
     .lo = 0, .hi = INF, .def = "0.1", .when_key = "lr_config.policy", .when = "Step",
     .doc = "factor at each milestone (MMCV's default)"},
    {.path = "lr_config.periods", .kind = PF_K_INT64_LIST, .offset = OFF(lr_periods),
     .size = N(lr_periods), .count_offset = OFF(n_lr_periods), .min_n = 1, .lo = 1,
     .hi = (double)(INT64_MAX / PF_MAX_PERIODS), .when_key = "lr_config.policy",
     .when = "CosineRestart", .required_when = "CosineRestart", .def_doc = "— (CosineRestart)",
     .doc = "period lengths in iterations; with `total_iters`, their sum must be ≥ "
            "`total_iters`"},
    {.path = "lr_config.restart_weights", .kind = PF_K_FLOAT_LIST, .flags = PF_KF_LO_OPEN,
     .offset = OFF(lr_restart_weights), .size = N(lr_restart_weights),
     .count_offset = OFF(n_lr_restart_weights), .min_n = 1, .lo = 0, .hi = INF,
     .when_key = "lr_config.policy", .when = "CosineRestart", .def_doc = "all 1",
     .doc = "peak factor of each period; as many as `periods`"},
    {.path = "lr_config.min_lr", .kind = PF_K_FLOAT, .offset = OFF(lr_min), .lo = 0, .hi = INF,
     .def = "0", .when_key = "lr_config.policy", .when = "CosineRestart",
     .doc = "absolute floor of the learning rate"},
    {.path = "lr_config.warmup", .kind = PF_K_CHOICE, .flags = PF_KF_NULL, .offset = OFF(lr_warmup),
     .size = SZ(lr_warmup), .choices = "linear", .def = "null",
     .doc = "warm-up before the schedule"},
    {.path = "lr_config.warmup_iters", .kind = PF_K_INT64, .offset = OFF(lr_warmup_iters),
     .lo = 1, .hi = (double)INT64_MAX, .when_key = "lr_config.warmup", .when = "linear",
     .required_when = "linear", .def_doc = "— (with warmup)",
     .doc = "length of the warm-up; at most `total_iters`"},
    {.path = "lr_config.warmup_ratio", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(lr_warmup_ratio), .lo = 0, .hi = 1, .def = "0.1",
     .when_key = "lr_config.warmup", .when = "linear",
     .doc = "the learning rate starts at `lr * warmup_ratio`"},

    /* ---- gan (issue 41: BasicSR's RealESRGANModel / ESRGANModel options) ---- */
    {.path = "gan", .kind = PF_K_SECTION, .offset = OFF(gan.enabled), .def_doc = "none",
     .doc = "present: a GAN job, the generator (`model`, `optimizers`) trained against a "
            "discriminator ([gan.md](gan.md)); below"},
    {.path = "gan.model_type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED,
     .offset = OFF(gan.model_type), .size = SZ(gan.model_type),
     .choices = GAN_MODELS, .def_doc = "—",
     .doc = "BasicSR's model: `RealESRGANModel` (realesrgan_model.py: plain GAN loss, sharpened "
            "GT per loss) or `ESRGANModel` (esrgan_model.py: relativistic GAN loss)"},
    {.path = "gan.net_d_iters", .kind = PF_K_INT, .offset = OFF(gan.net_d_iters), .lo = 1,
     .hi = 1 << 20, .def = "1",
     .doc = "the generator is updated on iterations that are a multiple of this (BasicSR's "
            "`net_d_iters`); the discriminator on every one"},
    {.path = "gan.net_d_init_iters", .kind = PF_K_INT,
     .offset = OFF(gan.net_d_init_iters), .lo = 0, .hi = 1 << 30, .def = "0",
     .doc = "the first this many iterations update only the discriminator (BasicSR's "
            "`net_d_init_iters`)"},
    {.path = "gan.l1_gt_usm", .kind = PF_K_BOOL, .offset = OFF(gan.l1_gt_usm), .def = "true",
     .when_key = "gan.model_type", .when = "RealESRGANModel",
     .doc = "the pixel loss compares with the sharpened GT (unsharp mask, BasicSR's USMSharp)"},
    {.path = "gan.percep_gt_usm", .kind = PF_K_BOOL, .offset = OFF(gan.percep_gt_usm),
     .def = "true", .when_key = "gan.model_type", .when = "RealESRGANModel",
     .doc = "the perceptual loss compares with the sharpened GT"},
    {.path = "gan.gan_gt_usm", .kind = PF_K_BOOL, .offset = OFF(gan.gan_gt_usm), .def = "false",
     .when_key = "gan.model_type", .when = "RealESRGANModel",
     .doc = "the discriminator sees the sharpened GT as real"},
    {.path = "gan.network_d", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED, .def_doc = "—",
     .doc = "the discriminator (BasicSR's `network_d`), below"},
    {.path = "gan.network_d.type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED,
     .offset = OFF(gan.network_d.type), .size = SZ(gan.network_d.type), .choices = GAN_NETDS,
     .def_doc = "—",
     .doc = "`UNetDiscriminatorSN` (Real-ESRGAN's, spectral norm, `nn/discriminator.h`: GT "
            "patch a multiple of 8) or `VGGStyleDiscriminator` (ESRGAN's: GT patch = "
            "`input_size`)"},
    {.path = "gan.network_d.num_in_ch", .kind = PF_K_INT, .offset = OFF(gan.network_d.num_in_ch),
     .lo = 1, .hi = 1 << 20, .choices = "3", .def = "3", .doc = "images are RGB"},
    {.path = "gan.network_d.num_feat", .kind = PF_K_INT, .offset = OFF(gan.network_d.num_feat),
     .lo = 1, .hi = 1024, .def = "64", .doc = "width of the first layer"},
    {.path = "gan.network_d.skip_connection", .kind = PF_K_BOOL,
     .offset = OFF(gan.network_d.skip_connection), .def = "true",
     .when_key = "gan.network_d.type", .when = "UNetDiscriminatorSN",
     .doc = "the U-Net's skip additions"},
    {.path = "gan.network_d.input_size", .kind = PF_K_INT,
     .offset = OFF(gan.network_d.input_size), .lo = 1, .hi = 1 << 16, .choices = "128|256",
     .def = "128", .when_key = "gan.network_d.type", .when = "VGGStyleDiscriminator",
     .doc = "its input in pixels; must equal `data.train.gt_patch_size`"},
    {.path = "gan.perceptual_opt", .kind = PF_K_SECTION, .offset = OFF(gan.has_perceptual_opt),
     .def_doc = "none", .doc = "BasicSR's PerceptualLoss on VGG19 features (none: no perceptual "
                               "loss), below"},
    {.path = "gan.perceptual_opt.type", .kind = PF_K_CHOICE,
     .flags = PF_KF_NO_STORE | PF_KF_NO_WRITE, .choices = "PerceptualLoss",
     .def = "PerceptualLoss", .doc = "accepted for BasicSR's options files; only this one"},
    {.path = "gan.perceptual_opt.layer_weights", .kind = PF_K_CUSTOM,
     .flags = PF_KF_REQUIRED, .custom = PF_KC_LAYER_WEIGHTS, .offset = OFF(gan.perceptual_opt),
     .type_doc = "mapping of VGG19 layer names to numbers ≥ 0", .def_doc = "—",
     .doc = "the layers compared and their weights, e.g. `{conv1_2: 0.1, conv2_2: 0.1, "
            "conv3_4: 1, conv4_4: 1, conv5_4: 1}` (Real-ESRGAN's); names `conv1_1` .. "
            "`pool5`"},
    {.path = "gan.perceptual_opt.vgg_type", .kind = PF_K_CHOICE,
     .offset = OFF(gan.perceptual_opt.vgg_type), .size = SZ(gan.perceptual_opt.vgg_type),
     .choices = "vgg19", .def = "vgg19", .doc = "the feature network"},
    {.path = "gan.perceptual_opt.use_input_norm", .kind = PF_K_BOOL,
     .offset = OFF(gan.perceptual_opt.use_input_norm), .def = "true",
     .doc = "normalise the input with ImageNet's mean and std"},
    {.path = "gan.perceptual_opt.range_norm", .kind = PF_K_BOOL,
     .offset = OFF(gan.perceptual_opt.range_norm), .def = "false",
     .doc = "map the input from [-1, 1] to [0, 1] first"},
    {.path = "gan.perceptual_opt.perceptual_weight", .kind = PF_K_DOUBLE,
     .offset = OFF(gan.perceptual_opt.perceptual_weight), .lo = 0, .hi = INF, .def = "1",
     .doc = "factor on the feature term; 0: none"},
    {.path = "gan.perceptual_opt.style_weight", .kind = PF_K_DOUBLE,
     .offset = OFF(gan.perceptual_opt.style_weight), .lo = 0, .hi = INF, .def = "0",
     .doc = "factor on the Gram-matrix (style) term; 0: none"},
    {.path = "gan.perceptual_opt.criterion", .kind = PF_K_ENUM,
     .offset = OFF(gan.perceptual_opt.criterion), .choices = "l1|l2|fro", .def = "l1",
     .doc = "mean absolute, mean squared difference or Frobenius norm"},
    {.path = "gan.perceptual_opt.vgg_weights", .kind = PF_K_PATH,
     .flags = PF_KF_REQUIRED | PF_KF_NONEMPTY, .offset = OFF(gan.vgg_weights),
     .size = SZ(gan.vgg_weights), .def_doc = "—",
     .doc = "VGG19 weights, safetensors with torchvision's names (nothing is downloaded): "
            "`scripts/pth2safetensors.py vgg19-dcbb9e9d.pth vgg19.safetensors`"},
    {.path = "gan.gan_opt", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED, .def_doc = "—",
     .doc = "BasicSR's GANLoss (`nn/gan_loss.h`), below"},
    {.path = "gan.gan_opt.type", .kind = PF_K_CHOICE, .flags = PF_KF_NO_STORE | PF_KF_NO_WRITE,
     .choices = "GANLoss", .def = "GANLoss",
     .doc = "accepted for BasicSR's options files; only this one"},
    {.path = "gan.gan_opt.gan_type", .kind = PF_K_CHOICE, .flags = PF_KF_REQUIRED,
     .offset = OFF(gan.gan_opt.gan_type), .size = SZ(gan.gan_opt.gan_type),
     .choices = GAN_TYPES, .def_doc = "—", .doc = "the adversarial loss"},
    {.path = "gan.gan_opt.real_label_val", .kind = PF_K_FLOAT,
     .offset = OFF(gan.gan_opt.real_label_val), .lo = -INF, .hi = INF, .type_doc = "number",
     .def = "1",
     .doc = "target of real samples (vanilla, lsgan)"},
    {.path = "gan.gan_opt.fake_label_val", .kind = PF_K_FLOAT,
     .offset = OFF(gan.gan_opt.fake_label_val), .lo = -INF, .hi = INF, .type_doc = "number",
     .def = "0",
     .doc = "target of fake samples (vanilla, lsgan)"},
    {.path = "gan.gan_opt.loss_weight", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(gan.gan_opt.loss_weight), .lo = 0, .hi = INF, .def = "1",
     .doc = "factor on the generator's adversarial loss (the discriminator's is not weighted)"},
    {.path = "gan.load_from_d", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_FILE,
     .offset = OFF(gan.load_from_d), .size = SZ(gan.load_from_d), .def = "null",
     .doc = "the discriminator's starting weights (BasicSR's `path.pretrain_network_d`): its "
            "state_dict as safetensors (`scripts/pth2safetensors.py net_d_N.pth`), every tensor "
            "with its shape, spectral norm's `weight_u` / `weight_v` included; `resume_from` "
            "wins over it"},
    {.path = "gan.optim_d", .kind = PF_K_SECTION, .flags = PF_KF_REQUIRED, .def_doc = "—",
     .doc = "the discriminator's optimiser: the keys and rules of `optimizers`; `lr_config` "
            "schedules both, each from its own `lr`"},
    {.path = "gan.optim_d.type", .kind = PF_K_CHOICE, .offset = OFF(gan.optim_d.type),
     .size = SZ(gan.optim_d.type), .choices = "Adam|AdamW|SGD", .def = "Adam",
     .doc = "as `optimizers.type`"},
    {.path = "gan.optim_d.lr", .kind = PF_K_FLOAT, .flags = PF_KF_REQUIRED | PF_KF_LO_OPEN,
     .offset = OFF(gan.optim_d.lr), .lo = 0, .hi = INF, .def_doc = "—",
     .doc = "base learning rate"},
    {.path = "gan.optim_d.betas", .kind = PF_K_FLOAT_LIST, .flags = PF_KF_HI_OPEN,
     .offset = OFF(gan.optim_d.betas), .size = N(gan.optim_d.betas), .min_n = 2, .lo = 0,
     .hi = 1, .def = "[0.9, 0.999]", .when_key = "gan.optim_d.type", .when = "Adam|AdamW",
     .doc = "as `optimizers.betas`"},
    {.path = "gan.optim_d.eps", .kind = PF_K_FLOAT, .flags = PF_KF_LO_OPEN,
     .offset = OFF(gan.optim_d.eps), .lo = 0, .hi = INF, .def = "1e-08",
     .when_key = "gan.optim_d.type", .when = "Adam|AdamW", .doc = "as `optimizers.eps`"},
    {.path = "gan.optim_d.weight_decay", .kind = PF_K_FLOAT,
     .offset = OFF(gan.optim_d.weight_decay), .lo = 0, .hi = INF, .def = "0",
     .def_key = "gan.optim_d.type", .def_for = "AdamW=0.01",
     .doc = "as `optimizers.weight_decay`"},
    {.path = "gan.optim_d.momentum", .kind = PF_K_FLOAT, .offset = OFF(gan.optim_d.momentum),
     .lo = 0, .hi = 1, .def = "0", .when_key = "gan.optim_d.type", .when = "SGD",
     .doc = "as `optimizers.momentum`"},
    {.path = "gan.optim_d.dampening", .kind = PF_K_FLOAT, .offset = OFF(gan.optim_d.dampening),
     .lo = 0, .hi = 1, .def = "0", .when_key = "gan.optim_d.type", .when = "SGD",
     .doc = "as `optimizers.dampening`"},
    {.path = "gan.optim_d.nesterov", .kind = PF_K_BOOL, .offset = OFF(gan.optim_d.nesterov),
     .def = "false", .when_key = "gan.optim_d.type", .when = "SGD",
     .doc = "as `optimizers.nesterov`"},

    /* ---- runner ---- */
    {.path = "total_iters", .kind = PF_K_INT64, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(total_iters), .lo = 1, .hi = (double)(INT64_MAX / 2), .def_doc = "—",
     .doc = "iteration-based runner: train this many iterations"},
    {.path = "total_epochs", .kind = PF_K_INT64, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(total_epochs), .lo = 1, .hi = 1 << 30, .def_doc = "—",
     .doc = "epoch-based runner: train this many epochs"},

    /* ---- hooks ---- */
    {.path = "checkpoint_config", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "the checkpoint hook"},
    {.path = "checkpoint_config.interval", .kind = PF_K_INT64, .flags = PF_KF_REQUIRED,
     .offset = OFF(ckpt_interval), .lo = 1, .hi = (double)INT64_MAX,
     .def_doc = "— (when the section is given)", .doc = "save every this many iterations"},
    {.path = "checkpoint_config.max_keep_ckpts", .kind = PF_K_INT, .offset = OFF(ckpt_max_keep),
     .lo = -1, .hi = 1 << 20, .def = "-1",
     .doc = "keep the last N checkpoints; -1 keeps all (0 is an error)"},
    {.path = "log_config", .kind = PF_K_SECTION, .doc = "the log hook"},
    {.path = "log_config.interval", .kind = PF_K_INT64, .offset = OFF(log_interval), .lo = 1,
     .hi = (double)INT64_MAX, .def = "10",
     .doc = "log training metrics every this many iterations"},
    {.path = "visual_config", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "pictures of training"},
    {.path = "visual_config.interval", .kind = PF_K_INT64, .offset = OFF(visual_interval),
     .lo = 0, .hi = (double)INT64_MAX, .def = "0",
     .doc = "0: off. Every this many iterations, rank 0 publishes the first `num_samples` "
            "samples of its batch (LQ, output of that step, GT); the visual hook writes "
            "`OUTPUT_DIR/iter_N.png` (rows: LQ bicubic-upscaled \\| output \\| GT) and the log "
            "hook a TensorBoard image `visual/train`; each evaluation also sends its first "
            "`num_samples` images to TensorBoard as `eval/<name>`"},
    {.path = "visual_config.num_samples", .kind = PF_K_INT, .offset = OFF(visual_num_samples),
     .lo = 1, .hi = PF_VISUAL_MAX_SAMPLES, .def = "4",
     .doc = "samples per grid (fewer when the batch is smaller or the GT patches would exceed "
            "1 MiB a frame)"},
    {.path = "visual_config.output_dir", .kind = PF_K_STR, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(visual_output_dir), .size = SZ(visual_output_dir), .def = "''",
     .def_doc = "'' = `work_dir/visuals`", .doc = "where the grids go"},
    {.path = "evaluation", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "the eval hook"},
    {.path = "evaluation.interval", .kind = PF_K_INT64, .flags = PF_KF_REQUIRED,
     .offset = OFF(eval_interval), .lo = 1, .hi = (double)INT64_MAX, .def_doc = "—",
     .doc = "evaluate every this many iterations; a multiple of the checkpoint interval"},
    {.path = "evaluation.metrics", .kind = PF_K_CUSTOM, .custom = PF_KC_METRICS,
     .offset = OFF(eval_psnr), .type_doc = "list of `PSNR`, `SSIM` (1–2 items, no repeats)",
     .def = "[PSNR, SSIM]", .doc = "docs/metrics.md"},
    {.path = "evaluation.crop_border", .kind = PF_K_INT, .offset = OFF(crop_border), .lo = 0,
     .hi = 1 << 16, .def = "0", .doc = "pixels cut from each side before the metrics"},
    {.path = "evaluation.convert_to", .kind = PF_K_CUSTOM, .custom = PF_KC_CONVERT_TO,
     .offset = OFF(eval_y_channel), .type_doc = "`y` (or `Y`) or `null`", .def = "null",
     .doc = "`y`: metrics on the Y channel (see `common/metrics.h`)"},
    {.path = "evaluation.save_image", .kind = PF_K_BOOL, .offset = OFF(eval_save_image),
     .def = "false", .doc = "write `work_dir/eval_visuals/iter_N/*.png`, and once per image the "
     "bicubic and GT references beside them (`eval_visuals/bicubic/`, `gt/`: the dashboard's A/B view)"},
    {.path = "evaluation.instances", .kind = PF_K_INT, .offset = OFF(eval_instances), .lo = 1,
     .hi = 64, .def = "1",
     .doc = "eval services `pixflow train` starts; image i of `data.eval` goes to instance i "
            "mod N, instance 0 gathers the results"},
    {.path = "evaluation.device", .kind = PF_K_CHOICE, .offset = OFF(eval_device),
     .size = SZ(eval_device), .choices = "cpu", .def = "cpu",
     .doc = "where the eval services run (CUDA devices come with the CUDA backend)"},
    {.path = "eval_cfg", .kind = PF_K_SECTION, .doc = "how evaluation and `pixflow test` infer"},
    {.path = "eval_cfg.pad_multiple", .kind = PF_K_INT, .offset = OFF(pad_multiple), .lo = 1,
     .hi = 1 << 16, .def = "1",
     .doc = "pad the LQ input to a multiple of this, crop the output back"},
    {.path = "eval_cfg.ensemble", .kind = PF_K_BOOL, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(eval_ensemble), .def = "false",
     .doc = "x8 self-ensemble (EDSR's `forward_x8`, BasicSR `self_ensemble`): the mean of the "
            "outputs for the 8 flips/transposes of the LQ, each transformed back"},
    {.path = "eval_cfg.tile", .kind = PF_K_INT, .flags = PF_KF_IF_CHANGED, .offset = OFF(eval_tile),
     .lo = 0, .hi = 1 << 16, .def = "0",
     .doc = "0: whole images. Otherwise tiled inference (BasicSR `tile_size`): cores of `tile` "
            "x `tile` LQ pixels, network buffers sized for one window"},
    {.path = "eval_cfg.tile_overlap", .kind = PF_K_INT, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(eval_tile_overlap), .lo = 0, .hi = 1 << 16, .def = "40",
     .doc = "LQ pixels of context around each tile core (BasicSR `tile_pad`)"},
    {.path = "eval_cfg.clip_window", .kind = PF_K_INT, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(clip_window), .lo = 2, .hi = 64, .def = "32",
     .doc = "a video network evaluates clips in windows of at most this many frames (memory "
            "grows with it); a clip no longer goes through whole ([video.md](video.md))"},
    {.path = "eval_cfg.clip_overlap", .kind = PF_K_INT, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(clip_overlap), .lo = 0, .hi = 62, .def = "8",
     .doc = "frames neighbouring windows share; each frame's output comes from the window "
            "where it is farther from the edge. Less than `clip_window`"},

    /* ---- security ---- */
    {.path = "security", .kind = PF_K_SECTION, .doc = "CURVE on the links"},
    {.path = "security.curve", .kind = PF_K_BOOL, .offset = OFF(curve), .def = "false",
     .doc = "ZeroMQ CURVE on every socket that can cross hosts; the coordinator, workers and "
            "checkpoint hook admit only peers whose public key is in `KEYS/allowed/`"},
    {.path = "security.keys_dir", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_DIR,
     .offset = OFF(keys_dir), .size = SZ(keys_dir), .def = "null",
     .doc = "the key folder (`pixflow keygen DIR`); `--keys DIR` and then `PIXFLOW_KEYS` take "
            "precedence. With `curve: true` one of the three must name a folder"},

    /* ---- run ---- */
    {.path = "work_dir", .kind = PF_K_STR, .flags = PF_KF_REQUIRED | PF_KF_NONEMPTY,
     .offset = OFF(work_dir), .size = SZ(work_dir),
     .doc = "where the job writes its logs, checkpoints and resolved config"},
    {.path = "load_from", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_FILE,
     .offset = OFF(load_from), .size = SZ(load_from), .def = "null",
     .doc = "weights only (safetensors; a BasicSR or MMagic `.pth`: "
            "`scripts/pth2safetensors.py`, docs/models.md); training starts at iteration 0"},
    {.path = "resume_from", .kind = PF_K_PATH, .flags = PF_KF_NULL | PF_KF_FILE | PF_KF_AUTO,
     .offset = OFF(resume_from), .size = SZ(resume_from), .def = "null",
     .doc = "full state (weights, iteration, LR schedule, sampler, optimiser); `auto` = "
            "`work_dir/checkpoints/latest`. Exclusive with `load_from`"},
    {.path = "resume_optim", .kind = PF_K_BOOL, .offset = OFF(resume_optim), .def = "true",
     .doc = "with `resume_from`: restore the optimiser state too"},
    {.path = "seed", .kind = PF_K_INT64, .offset = OFF(seed), .lo = 0, .hi = (double)INT64_MAX,
     .def = "0", .doc = "seeds initialisation, the sampler and augmentation (64-bit)"},
    {.path = "log_level", .kind = PF_K_CHOICE, .flags = PF_KF_NOCASE, .offset = OFF(log_level),
     .size = SZ(log_level), .choices = "debug|info|warning|error", .def = "info",
     .doc = "log threshold of every process"},
    {.path = "conv_algorithm", .kind = PF_K_CHOICE, .offset = OFF(conv_algorithm),
     .size = SZ(conv_algorithm), .choices = "auto|direct|winograd", .def = "auto",
     .doc = "CPU convolutions: `auto` runs 3x3 layers with at least 16 channels in and out on "
            "oneDNN's Winograd kernels where the CPU has them (AVX-512), direct elsewhere; "
            "`direct` everywhere (results then do not depend on Winograd's rounding); "
            "`winograd` on every 3x3 layer oneDNN offers it for (docs/nn.md)"},

    /* ---- precision (issue 43): MMagic's train_cfg / test_cfg sections, written only when
       not fp32 so configs without them keep their hash ---- */
    {.path = "train_cfg", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "how the training step computes"},
    {.path = "train_cfg.precision", .kind = PF_K_ENUM, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(train_precision), .choices = "fp32|bf16", .def = "fp32",
     .doc = "`bf16`: mixed precision as PyTorch's `torch.autocast(\"cpu\", "
            "dtype=torch.bfloat16)`: every convolution of the training step (net_g, a GAN's "
            "net_d and VGG) reads its input and weights rounded to bfloat16 and accumulates in "
            "fp32; master weights, gradients, optimiser, loss and checkpoints stay fp32. Needs "
            "a CPU with AVX512_BF16 or AMX (refused at start-up otherwise, never emulated); "
            "CPU workers only for now (docs/nn.md)"},
    {.path = "train_cfg.tsa_iter", .kind = PF_K_INT64, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(tsa_iter), .lo = 0, .hi = 1e15, .def = "0", .when_key = "model.type",
     .when = "EDVR",
     .doc = "BasicSR's EDVRModel `train.tsa_iter`: in iterations 1..tsa_iter-1 (1-based, "
            "BasicSR's current_iter) only the tensors whose names contain `fusion` train (TSA; "
            "without TSA the 1x1 `fusion` conv), from iteration tsa_iter on all of them. A "
            "tensor not yet training has no update, no weight decay, no optimiser state and no "
            "gradient in `optimizer_config.grad_clip`'s norm; its Adam step count starts when "
            "it joins (as `model.fix_iter`). 0: off; 1 is refused (BasicSR's elif would never "
            "free the rest). MMagic's EDVR `train_cfg.tsa_iter` N trains the fusion alone for N "
            "iterations: N + 1 here"},
    {.path = "test_cfg", .kind = PF_K_SECTION, .flags = PF_KF_IF_CHANGED,
     .doc = "how inference computes"},
    {.path = "test_cfg.precision", .kind = PF_K_ENUM, .flags = PF_KF_IF_CHANGED,
     .offset = OFF(test_precision), .choices = "fp32|bf16", .def = "fp32",
     .doc = "`bf16` as `train_cfg.precision`, for inference: evaluation during training, "
            "`pixflow test` and `pixflow upscale` (the `--precision` of either replaces it)"},
};
const int pf_config_n_keys = (int)(sizeof pf_config_keys / sizeof pf_config_keys[0]);

const pf_config_key *pf_config_key_find(const char *path) {
    for (int i = 0; i < pf_config_n_keys; i++)
        if (!strcmp(pf_config_keys[i].path, path))
            return &pf_config_keys[i];
    return NULL;
}

const char *pf_config_key_name(const pf_config_key *k) {
    const char *dot = strrchr(k->path, '.');
    return dot ? dot + 1 : k->path;
}

int pf_config_key_in(const pf_config_key *k, const char *section) {
    size_t n = strlen(section);
    const char *name = pf_config_key_name(k);
    if (!n)
        return name == k->path;
    return (size_t)(name - k->path) == n + 1 && !strncmp(k->path, section, n);
}

/* Another framework's name in a PixFlow section, and the answer.  */
static const struct {
    const char *sec;            /* section path (data.train stands for the three sets), NULL: any */
    const char *name;
    const char *hint;           /* follows "unknown key; " */
} FOREIGN[] = {
    /* BasicSR, top level of an options file */
    {"", "name", "PixFlow names a run by its folder, 'work_dir' (a path)"},
    {"", "model_type", "PixFlow has one training loop (BasicSR's SRModel); the "
                               "network is 'model.type'"},
    {"", "scale", "PixFlow calls this 'model.scale'"},
    {"", "num_gpu", "PixFlow takes the GPU count on the command line: "
                            "`pixflow train CONFIG --gpus N`"},
    {"", "manual_seed", "PixFlow calls this 'seed'"},
    {"", "datasets", "PixFlow calls this 'data' (with train, eval and test; "
                             "BasicSR's val is 'eval')"},
    {"", "network_g", "PixFlow calls this 'model' (type, scale, num_feat or n_feats, "
                              "num_block or n_blocks, ...)"},
    {"", "path", "PixFlow has no path section: pretrain_network_g is 'load_from', "
                         "resume_state is 'resume_from', both at the top level; "
                         "pretrain_network_d is 'gan.load_from_d'"},
    {"", "train", "PixFlow has no train section: optim_g is 'optimizers', scheduler is "
                          "'lr_config', total_iter is 'total_iters', pixel_opt is 'model.loss', "
                          "ema_decay is 'ema_decay', all at the top level"},
    {"", "val", "PixFlow calls this 'evaluation' (val_freq is its 'interval', save_img "
                        "its 'save_image'); the images are 'data.eval'"},
    {"", "logger", "PixFlow calls this 'log_config' (print_freq is its 'interval'); "
                           "save_checkpoint_freq is 'checkpoint_config.interval'"},
    {"", "total_iter", "PixFlow calls this 'total_iters'"},
    {"", "pretrain_network_g", "PixFlow calls this 'load_from' (weights only, every "
                                       "tensor must match; training starts at iteration 0)"},
    {"", "pretrain_network_d", "PixFlow calls this 'gan.load_from_d' (net_d's weights, every "
                                       "tensor must match)"},
    {"", "resume_state", "PixFlow calls this 'resume_from': a checkpoint's weights "
                                 "file (checkpoints/iter_N.safetensors, its optimiser state "
                                 "beside it) or auto, not a .state file"},
    {"", "optim_g", "PixFlow calls this 'optimizers' (the same keys: type, lr, betas, "
                            "weight_decay)"},
    {"", "scheduler", "PixFlow calls this 'lr_config' (MultiStepLR is policy: Step "
                              "with step: [milestones]; CosineAnnealingRestartLR is policy: "
                              "CosineRestart)"},
    {"", "pixel_opt", "PixFlow calls this 'model.loss'"},
    {NULL, "dcn_lr_mul", "PixFlow gives parameters a learning-rate multiplier by name: "
                         "'optimizers.paramwise_cfg.custom_keys: {dcn: {lr_mult: X}}' is "
                         "BasicSR's dcn_lr_mul (EDVR: the tensors whose names contain 'dcn')"},
    {NULL, "tsa_iter", "PixFlow calls this 'train_cfg.tsa_iter' (EDVR: BasicSR's iterations "
                       "1..tsa_iter-1 train the fusion alone)"},
    {"", "warmup_iter", "PixFlow calls this 'lr_config.warmup_iters' (with "
                                "lr_config.warmup: linear; for BasicSR's -1 leave both out)"},
    {"", "val_freq", "PixFlow calls this 'evaluation.interval' (a multiple of "
                             "checkpoint_config.interval: evaluation runs on checkpoints)"},
    {"", "save_checkpoint_freq", "PixFlow calls this 'checkpoint_config.interval'"},
    {"", "print_freq", "PixFlow calls this 'log_config.interval'"},
    {"", "crop_border", "PixFlow calls this 'evaluation.crop_border'"},
    {"", "test_y_channel", "PixFlow calls this 'evaluation.convert_to' (y for true, "
                                   "null for false)"},
    {"", "save_img", "PixFlow calls this 'evaluation.save_image'"},
    /* MMagic, top level */
    {"", "exp_name", "PixFlow names a run by its folder, 'work_dir' (a path)"},
    {"", "dist_params", "PixFlow needs no dist_params: workers join their collective "
                                "(Gloo, NCCL) through the coordinator"},
    /* BasicSR network_g, MMagic generator, in model: */
    {"model", "num_in_ch", "PixFlow calls this 'in_channels'"},
    {"model", "num_out_ch", "PixFlow calls this 'out_channels'"},
    {"model", "upscale", "PixFlow calls this 'scale'"},
    {"model", "upscale_factor", "PixFlow calls this 'scale'"},
    {"model", "mid_channels", "PixFlow calls this 'n_feats'"},
    {"model", "num_blocks", "PixFlow calls this 'n_blocks'"},
    {"model", "pixel_loss", "PixFlow calls this 'loss'"},
    {"model", "generator", "PixFlow's model is the generator itself: its type, scale, "
                                "n_feats, ... go directly under model"},
    /* data: */
    {"data", "val", "PixFlow calls this 'eval'"},
    {"data", "batch_size_per_gpu", "PixFlow calls this 'samples_per_gpu'"},
    {"data", "num_worker_per_gpu", "PixFlow's loader processes are 'loaders' (processes "
                                        "for the whole job on this host, not per GPU; each "
                                        "decodes with 'loader_threads' threads)"},
    {"data", "workers_per_gpu", "PixFlow's loader processes are 'loaders' (processes for "
                                     "the whole job on this host, not per GPU)"},
    {"data", "train_dataloader", "PixFlow has no dataloader sections: the batch size is "
                                      "'data.samples_per_gpu'"},
    /* data.train / eval / test */
    {"data.train", "dataroot_gt", "PixFlow calls this 'gt_folder'"},
    {"data.train", "dataroot_lq", "PixFlow calls this 'lq_folder'"},
    {"data.train", "gt_size", "PixFlow calls this 'gt_patch_size'"},
    {"data.train", "use_hflip", "PixFlow calls this 'use_flip', which flips vertically too "
                                  "(BasicSR's use_rot adds the vertical flip; PixFlow's use_rot "
                                  "is the transpose alone): BasicSR's use_hflip + use_rot is "
                                  "use_flip + use_rot here"},
    {"data.train", "batch_size_per_gpu", "PixFlow calls this 'data.samples_per_gpu' (one "
                                           "batch size per worker, under data, not per set)"},
    {"data.train", "num_worker_per_gpu", "PixFlow's loader processes are 'data.loaders' "
                                           "(for the whole job on this host, not per GPU)"},
    {"data.train", "dataset_enlarge_ratio", "PixFlow calls this 'repeat'"},
    {"data.train", "times", "PixFlow calls this 'repeat' (MMagic RepeatDataset.times)"},
    {"data.train", "dataset", "PixFlow writes the dataset flat under data.train (MMagic "
                                "RepeatDataset's times is 'repeat')"},
    {"data.train", "io_backend", "PixFlow reads image files from disk (PNG, JPEG); remove "
                                   "io_backend"},
    {"data.train", "name", "PixFlow's datasets have no name; remove it"},
    {"data.train", "scale", "PixFlow calls this 'model.scale' (one scale for the job)"},
    {"data.train", "prefetch_mode", "PixFlow always prefetches: 'data.prefetch' is how many "
                                      "batches a worker holds ahead"},
    {"data.train", "use_shuffle", "PixFlow always shuffles: each epoch's order comes from "
                                    "'seed'"},
    {"data.train", "pipeline", "PixFlow's pipeline is fixed: crop 'gt_patch_size', flips "
                                 "'use_flip' and 'use_rot', LQ from 'degradation' or "
                                 "'lq_folder'"},
    /* optimizers, lr_config (BasicSR scheduler), checkpoints, logging, evaluation */
    {"optimizers", "generator", "PixFlow's optimizers is one optimiser written flat (type, lr, "
                                "betas, ...), not optimizers.generator"},
    {"lr_config", "type", "PixFlow calls this 'policy' (MultiStepLR is Step, "
                        "CosineAnnealingRestartLR is CosineRestart)"},
    {"lr_config", "milestones", "PixFlow calls this 'step' (with policy: Step)"},
    {"lr_config", "eta_min", "PixFlow calls this 'min_lr' (with policy: CosineRestart)"},
    {"lr_config", "warmup_iter", "PixFlow calls this 'warmup_iters' (with warmup: linear)"},
    {"lr_config", "by_epoch", "PixFlow schedules by iteration only (MMCV's by_epoch: false); "
                            "remove it"},
    {"checkpoint_config", "by_epoch", "PixFlow checkpoints by iteration only; remove it"},
    {"checkpoint_config", "save_optimizer", "PixFlow always saves the optimiser state "
                                    "(checkpoints/iter_N.optim.safetensors); remove it"},
    {"log_config", "print_freq", "PixFlow calls this 'interval'"},
    {"log_config", "hooks", "PixFlow's log hook always writes train.log, metrics.jsonl and "
                          "TensorBoard events; remove hooks"},
    {NULL, "use_tb_logger", "PixFlow always writes TensorBoard events "
                          "(work_dir/events.out.tfevents.*); remove it"},
    {"evaluation", "val_freq", "PixFlow calls this 'interval'"},
    {"evaluation", "save_img", "PixFlow calls this 'save_image'"},
    {"evaluation", "test_y_channel", "PixFlow calls this 'convert_to' (y for true, null for "
                                    "false)"},
    {"evaluation", "gpu_collect", "PixFlow gathers the results on eval instance 0; remove it"},
    {"eval_cfg", "tile_pad", "PixFlow calls this 'tile_overlap'"},
    {"eval_cfg", "tile_size", "PixFlow calls this 'tile'"},
    {"eval_cfg", "self_ensemble", "PixFlow calls this 'ensemble'"},
    {"test_cfg", "metrics", "PixFlow calls this 'evaluation.metrics'"},
    {"test_cfg", "crop_border", "PixFlow calls this 'evaluation.crop_border'"},
    {"test_cfg", "convert_to", "PixFlow calls this 'evaluation.convert_to'"},
    {"train_cfg", "fix_iter", "PixFlow calls this 'model.fix_iter'"},
};

int pf_edit_distance(const char *a, const char *b) {
    enum { N = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= N || m >= N) return N;
    int d[N][N];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;                              /* deletion */
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;      /* insertion */
            if (d[i - 1][j - 1] + cost < best) best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;                          /* transposition */
            d[i][j] = best;
        }
    }
    return d[n][m];
}

/* 1 when the shorter of a and b (at least 4 bytes) begins the longer ("training", "train"). */
static int prefix_of(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
    return l >= 4 && la != lb && strncmp(a, b, l) == 0;
}

/* data.eval.x and data.test.x have the rows of data.train.x: "data.eval" -> "data.train". */
static const char *canonical_section(const char *section) {
    if (!strcmp(section, "data.eval") || !strcmp(section, "data.test"))
        return "data.train";
    return section;
}

/* Consider `key` as the answer to `name`: keeps the nearest within `allowed`. */
static void consider(const char *name, const char *key, int allowed, const char **best,
                     int *best_d) {
    int d = pf_edit_distance(name, key);
    if (d <= allowed && d < *best_d)
        *best_d = d, *best = key;
}

/* BasicSR's Real-ESRGAN options file has the resize, noise and JPEG options (and gt_usm) at
   its top level: a Real-ESRGAN key of the dataset block found at the top level, or under
   model (or train), is told where PixFlow keeps it. */
static int realesrgan_misplaced(const char *section, const char *name, char *buf, size_t size) {
    if (strcmp(section, "") && strcmp(section, "model") && strcmp(section, "train"))
        return 0;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (pf_config_key_in(k, "data.train") && k->when && !strcmp(k->when, REAL_SETS) &&
            !strcmp(pf_config_key_name(k), name)) {
            snprintf(buf, size, "; PixFlow keeps this Real-ESRGAN option in the dataset block "
                     "(BasicSR: at the top level): 'data.train.%s' (type RealESRGANDataset or "
                     "RealESRGANVideoDataset)", name);
            return 1;
        }
    }
    return 0;
}

const char *pf_config_unknown_hint(const char *section, const char *name, char *buf,
                                   size_t size) {
    buf[0] = 0;
    section = canonical_section(section);
    if (realesrgan_misplaced(section, name, buf, size))
        return buf;
    for (size_t i = 0; i < sizeof FOREIGN / sizeof FOREIGN[0]; i++) {
        if ((!FOREIGN[i].sec || !strcmp(FOREIGN[i].sec, section)) &&
            !strcmp(FOREIGN[i].name, name)) {
            snprintf(buf, size, "; %s", FOREIGN[i].hint);
            return buf;
        }
    }
    size_t len = strlen(name);
    int allowed = len <= 5 ? 1 : len <= 9 ? 2 : 3;
    const char *best = NULL;
    int best_d = allowed + 1;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!pf_config_key_in(k, section))
            continue;
        consider(name, pf_config_key_name(k), allowed, &best, &best_d);
        if (k->alias)
            consider(name, k->alias, allowed, &best, &best_d);
    }
    for (int i = 0; !best && i < pf_config_n_keys; i++)
        if (pf_config_key_in(&pf_config_keys[i], section) &&
            prefix_of(name, pf_config_key_name(&pf_config_keys[i])))
            best = pf_config_key_name(&pf_config_keys[i]);
    if (best) snprintf(buf, size, "; did you mean '%s'?", best);
    return buf;
}

/* ---- a row's choices and range (common/config_impl.h) ---------------------------------- */

/* Split "A|B|C" into `out` (NUL-terminated copies in `store`); returns the count. */
int pf_cfg_split_choices(const char *choices, char store[][48], const char **out) {
    int n = 0;
    for (const char *p = choices; p && *p && n < PF_MAX_CHOICES;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        snprintf(store[n], 48, "%.*s", (int)len, p);
        out[n] = store[n];
        n++;
        p = bar ? bar + 1 : p + len;
    }
    out[n] = NULL;
    return n;
}

/* "A, B or C" from "A|B|C". */
const char *pf_cfg_or_list(const char *choices, char *out, size_t size) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    int n = pf_cfg_split_choices(choices, store, v);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t at = strlen(out);
        snprintf(out + at, size - at, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", v[i]);
    }
    return out;
}

/* 1 when `value` is one of "A|B|C". */
int pf_cfg_in_choices(const char *choices, const char *value) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    int n = pf_cfg_split_choices(choices, store, v);
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], value))
            return 1;
    return 0;
}

/* int64 bound of a row's double range (1e300 and 2^63 mean no bound). */
int64_t pf_cfg_bound64(double x) {
    if (x >= 9.2e18)
        return INT64_MAX;
    if (x <= -9.2e18)
        return INT64_MIN;
    return (int64_t)x;
}
