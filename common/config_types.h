/*  config_types — the job configuration struct `pf_config` and the item types it holds
    (dataset, degradation step, clip, custom key), with their limits. common/config.h
    includes it and declares what parses and writes a config; the key table
    (common/config_keys.c) includes only this header to read the struct's layout, so the
    table and the parser do not include each other.
*/
#ifndef PF_CONFIG_TYPES_H
#define PF_CONFIG_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "common/perceptual_opts.h"
#include "common/realesrgan_pipeline.h"

#define PF_PATH_MAX 1024
#define PF_MAX_MILESTONES 16
#define PF_MAX_PERIODS 16

#define PF_MAX_DEGRADATIONS 4
#define PF_MAX_CUSTOM_KEYS 16

/* optimizers.paramwise_cfg.custom_keys entry (MMCV DefaultOptimizerConstructor): parameters
   whose name contains `key` (the longest such key wins; ties: the alphabetically first) train
   with lr * lr_mult and weight_decay * decay_mult. */
typedef struct {
    char key[64];                       /* [A-Za-z0-9_.]+ */
    float lr_mult;                      /* 1; 0 freezes the parameters */
    float decay_mult;                   /* 1 */
} pf_custom_key;
#define PF_VISUAL_MAX_SAMPLES 16         /* visual_config.num_samples upper bound */

/* One step of the on-the-fly degradation that makes LQ from GT (data.*.degradation). The
   first step downscales by model.scale: "BI" (MATLAB bicubic), "BD" (Gaussian blur, then every
   scale-th pixel) or "DN" (bicubic, then Gaussian noise); "JPEG" may follow. Names and default
   parameters are those of RDN (Zhang et al., CVPR 2018): BD 7x7 sigma 1.6, DN noise level 30. */
typedef struct {
    char type[8];                       /* "BI" | "BD" | "DN" | "JPEG" */
    int kernel_size;                    /* BD: Gaussian kernel size, odd (7) */
    float sigma;                        /* BD: blur sigma in pixels (1.6); DN: noise sigma on
                                           the 0..255 scale, low end of the range (30) */
    float sigma_max;                    /* DN: high end (= sigma when one number is given) */
    int quality, quality_max;           /* JPEG: quality 1..100, drawn per sample from
                                           [quality, quality_max] */
} pf_degradation;

#define PF_MAX_CLIPS 64                  /* data.*.clips items (larger sets: meta_info_file) */
#define PF_MAX_INTERVALS 8               /* data.*.interval_list items */

/* One item of data.*.clips (the video datasets): a clip and the part of it to use. */
typedef struct {
    char name[256];                     /* a folder of frames or a video file, relative to
                                           gt_folder (and lq_folder) */
    int frames[2];                      /* frames [first, end) of it; [0, 0]: all of them */
    int crop[4];                        /* x, y, w, h of the GT frames in pixels (multiples of
                                           model.scale); w = 0: the whole frame (mod-cropped) */
} pf_clip_cfg;

/* One dataset block: data.train, data.eval or data.test. */
typedef struct {
    int present;                        /* 1 when the block is in the file */
    char type[32];                      /* "PairedImageDataset" | "SingleImageDataset" (LQ
                                           only; data.test only) | a video set |
                                           "RealESRGANDataset" | "RealESRGANVideoDataset" (LQ
                                           made by the Real-ESRGAN pipeline) */
    char gt_folder[PF_PATH_MAX];        /* folder of ground-truth images (required by
                                           PairedImageDataset, refused by SingleImageDataset) */
    char lq_folder[PF_PATH_MAX];        /* folder of low-quality images; "" = made from GT by
                                           `degradation` on the fly */
    char meta_info_file[PF_PATH_MAX];   /* "" or a file whose lines name the GT (Single: LQ)
                                           files to use, in order (BasicSR meta_info) */
    int n_degradations;                 /* steps below; 0 when lq_folder is given */
    pf_degradation degradation[PF_MAX_DEGRADATIONS];
    char filename_tmpl[64];             /* LQ name from GT stem, "{}" default, e.g. "{}x2" */
    int gt_patch_size;                  /* train: GT crop size in pixels (multiple of scale) */
    int use_flip;                       /* train: random horizontal and vertical flips */
    int use_rot;                        /* train: random transpose (BasicSR's rot90 flag) */
    int repeat;                         /* RepeatDataset `times`: the set is visited this many
                                           times per epoch (default 1) */
    /* video datasets (REDSRecurrentDataset, Vimeo90KRecurrentDataset, REDSDataset,
       VideoRecurrentTestDataset, VideoTestDataset; common/video_dataset.h) */
    int num_frame;                      /* train: frames per sample (15; Vimeo 7; REDSDataset
                                           5, odd); VideoTestDataset: frames of each window */
    int interval_list[PF_MAX_INTERVALS];/* train: frame spacings to draw from ([1]) */
    int n_intervals;
    int random_reverse;                 /* train: reverse the frame order with probability 1/2 */
    int use_hflip;                      /* train: random horizontal flip (BasicSR augment) */
    char padding[24];                   /* VideoTestDataset: how a window is filled at a clip's
                                           ends (common/frame_indices.h; "reflection_circle") */
    pf_clip_cfg clips[PF_MAX_CLIPS];    /* the clips; none: meta_info_file or every clip of
                                           gt_folder */
    int n_clips;
    char val_partition[PF_MAX_CLIPS][64]; /* train: clips held out (BasicSR val_partition) */
    int n_val_partition;
    int64_t degrade_seed;               /* RealESRGANDataset eval / test: the seed of each
                                           image's degradation (0), not the job's `seed` */
    int gt_usm;                         /* RealESRGAN*Dataset: the GT patch is sharpened (USM,
                                           BasicSR's gt_usm); its LQ is made from the GT as read */
    pf_realesrgan_opts realesrgan;      /* RealESRGAN*Dataset: the degradation keys
                                           (blur_kernel_size, ..., jpeg_range2) as parsed; scale
                                           is model.scale. Read through
                                           pf_dataset_realesrgan_opts (common/realesrgan_cfg.h) */
    int gt_plain;                       /* not a key: with gt_usm, each training sample also
                                           carries its GT patch unsharpened (the batch's
                                           gt_plain frame; BasicSR RealESRGANModel's `gt` beside
                                           `gt_usm`). Set by the parse for a GAN job on a
                                           RealESRGANDataset with gt_usm (issue 41; and by
                                           tests); 0 = batches as without it */
    int skip_cut_videos;                /* not a key: 1 when data.on_bad_sample is skip (set by
                                           pf_config_parse): a video file cut short at start-up
                                           is used up to its whole frames instead of refused
                                           (common/video_dataset.h) */
} pf_dataset_cfg;

/* The `gan` section (issue 41; common/gan_cfg.h, docs/gan.md): present, the job trains the
   generator (`model`, `optimizers`) against a discriminator, as BasicSR's RealESRGANModel or
   ESRGANModel (basicsr/models/realesrgan_model.py, esrgan_model.py, their base
   srgan_model.py), with BasicSR's option names and defaults. */
typedef struct {
    char type[24];                      /* "UNetDiscriminatorSN" | "VGGStyleDiscriminator" */
    int num_in_ch;                      /* 3 (the executors read RGB) */
    int num_feat;                       /* 64 */
    int skip_connection;                /* UNetDiscriminatorSN: 1 */
    int input_size;                     /* VGGStyleDiscriminator: 128 | 256 (128) */
} pf_gan_netd_cfg;

typedef struct {                        /* BasicSR's GANLoss (nn/gan_loss.h) */
    char gan_type[16];                  /* vanilla | lsgan | wgan | wgan_softplus | hinge */
    float real_label_val;               /* 1 */
    float fake_label_val;               /* 0 */
    float loss_weight;                  /* 1: the generator's adversarial loss only */
} pf_gan_loss_cfg;

typedef struct {                        /* optim_d: the rows and rules of `optimizers` */
    char type[16];                      /* "Adam" | "AdamW" | "SGD" */
    float lr;                           /* > 0, required */
    float betas[2];                     /* Adam/AdamW: (0.9, 0.999) */
    float eps;                          /* Adam/AdamW: 1e-8 */
    float weight_decay;                 /* 0 (AdamW: 0.01) */
    float momentum, dampening;          /* SGD: 0, 0 */
    int nesterov;                       /* SGD: 0 */
} pf_gan_optim_cfg;

typedef struct {
    int enabled;                        /* 1 when the `gan` section is in the file */
    char model_type[24];                /* "RealESRGANModel" | "ESRGANModel" (relativistic) */
    int net_d_iters;                    /* discriminator updates every this many iterations
                                           (>= 1, BasicSR 1) */
    int net_d_init_iters;               /* the first this many iterations update only the
                                           discriminator (>= 0, BasicSR 0) */
    int l1_gt_usm, percep_gt_usm, gan_gt_usm; /* RealESRGANModel: each loss compares with the
                                           sharpened GT (1, 1, 0: BasicSR's defaults) */
    pf_gan_netd_cfg network_d;
    int has_perceptual_opt;             /* 1 when perceptual_opt is given (else no
                                           perceptual loss) */
    pf_perceptual_opts perceptual_opt;  /* common/perceptual_opts.h */
    char vgg_weights[PF_PATH_MAX];      /* perceptual_opt.vgg_weights: VGG19 safetensors */
    pf_gan_loss_cfg gan_opt;
    pf_gan_optim_cfg optim_d;
    char load_from_d[PF_PATH_MAX];      /* net_d's pretrained state_dict (safetensors; BasicSR's
                                           path.pretrain_network_d), "" = none */
} pf_gan_cfg;

typedef struct {
    char path[PF_PATH_MAX];             /* the YAML file this came from */
    uint64_t hash;                      /* FNV-1a 64 of the resolved YAML text */

    /* model */
    char model_type[32];                /* a network type: a row of common/networks.h
                                           (EDSR, SRCNN, ..., BasicVSR; docs/models.md) */
    int scale;                          /* 2, 3 or 4 */
    int in_channels, out_channels;      /* 3, 3 */
    int n_feats, n_blocks;              /* width and depth (BasicSR num_feat / num_block) of
                                           EDSR (64 / 16), MSRResNet (64 / 16), RCAN (64 / 16
                                           blocks per group), RRDBNet (64 / 23), BasicVSR
                                           (64 / 15 per propagation trunk) */
    char spynet_pretrained[PF_PATH_MAX];/* BasicVSR: SPyNet weights (safetensors), "" none */
    int64_t fix_iter;                   /* BasicVSR: SPyNet frozen for these iterations (0) */
    float max_residue_magnitude;        /* BasicVSRPlusPlus: bound of the deformable offsets'
                                           residue from the flow, in pixels (10) */
    int is_low_res_input;               /* BasicVSRPlusPlus: 1 (x4; 0 not supported yet) */
    int edvr_num_frame;                 /* EDVR: LQ frames of a window (5), odd */
    int deformable_groups;              /* EDVR: the PCD DCNs' deform groups (8) */
    int num_extract_block;              /* EDVR: feature-extraction residual blocks (5) */
    int num_reconstruct_block;          /* EDVR: reconstruction residual blocks (10) */
    int center_frame_idx;               /* EDVR: reference frame, -1: num_frame / 2 */
    int hr_in, with_predeblur;          /* EDVR: 0 (1 refused: scale 1), 0 */
    int with_tsa;                       /* EDVR: TSA fusion (1) or a 1x1 conv (0) */
    int num_group;                      /* RCAN residual groups (10) */
    int squeeze_factor;                 /* RCAN channel attention reduction (16) */
    int num_grow_ch;                    /* RRDBNet dense block growth channels (32) */
    int fsrcnn_d, fsrcnn_s, fsrcnn_m;   /* FSRCNN d (56), s (12), m (4) */
    float res_scale;                    /* EDSR / RCAN residual scaling (1) */
    float rgb_mean[3];                  /* EDSR / RCAN mean shift (DIV2K mean, BasicSR) */
    float img_range;                    /* EDSR / RCAN: 255 */
    int srcnn_channels[4];              /* SRCNN: (3, 64, 32, 3) */
    int srcnn_kernel_sizes[3];          /* SRCNN: (9, 1, 5) */
    char loss_type[32];                 /* "L1Loss" | "MSELoss" | "CharbonnierLoss" */
    float loss_weight;                  /* 1.0 */
    float charbonnier_eps;              /* 1e-12 (BasicSR) */

    /* data */
    int loaders;                        /* loader processes `pixflow train` starts (default 2) */
    int samples_per_gpu;                /* batch size per worker */
    int prefetch;                       /* batches a worker may hold ahead (credits), default 4 */
    int cache_mb;                       /* decoded-image cache of each loader, MiB (1024) */
    int loader_threads;                 /* decode/augment threads in each loader (1) */
    int skip_bad_samples;               /* data.on_bad_sample: 0 = fail (default), 1 = skip */
    pf_dataset_cfg train, eval, test;

    /* optimizer (one generator) */
    char optim_type[16];                /* "Adam" | "AdamW" | "SGD" */
    int has_optimizers;                 /* 1 when the optimizers section is given (a test
                                           config may leave it out; pf_config_defaults: 1) */
    float learning_rate;                /* optimizers.lr */
    float betas[2];                     /* Adam/AdamW: (0.9, 0.999) */
    float eps;                          /* Adam/AdamW: 1e-8 */
    float weight_decay;                 /* 0 (AdamW: 0.01, torch's default); Adam and SGD add
                                           it to the gradient, AdamW decays the weights */
    float momentum;                     /* SGD: 0 */
    float dampening;                    /* SGD: 0 */
    int nesterov;                       /* SGD: 0 */
    pf_custom_key custom_keys[PF_MAX_CUSTOM_KEYS]; /* optimizers.paramwise_cfg.custom_keys */
    int n_custom_keys;
    float grad_clip_max_norm;           /* optimizer_config.grad_clip.max_norm; 0 = no clip */
    float ema_decay;                    /* top-level ema_decay (BasicSR); 0 = no EMA */

    /* lr_config */
    char lr_policy[24];                 /* "Fixed" | "Step" | "CosineRestart" */
    int64_t lr_step[PF_MAX_MILESTONES]; /* Step: milestones in iterations */
    int n_lr_step;
    float lr_gamma;                     /* Step: factor at each milestone (0.5) */
    int64_t lr_periods[PF_MAX_PERIODS]; /* CosineRestart: period lengths in iterations */
    int n_lr_periods;
    float lr_restart_weights[PF_MAX_PERIODS]; /* CosineRestart: peak factor of each period */
    int n_lr_restart_weights;           /* = n_lr_periods once resolved */
    float lr_min;                       /* CosineRestart: min_lr (absolute) */
    char lr_warmup[16];                 /* "" | "linear" */
    int64_t lr_warmup_iters;
    float lr_warmup_ratio;              /* lr starts at base * ratio */

    /* runner */
    int64_t total_iters;                /* > 0 selects the iteration-based runner */
    int64_t total_epochs;               /* > 0 selects the epoch-based runner */

    /* hooks */
    int64_t ckpt_interval;              /* checkpoint_config.interval (iterations) */
    int ckpt_max_keep;                  /* checkpoint_config.max_keep_ckpts, -1 = keep all */
    int64_t log_interval;               /* log_config.interval (iterations) */
    int64_t visual_interval;            /* visual_config.interval (iterations), 0 = off */
    char visual_output_dir[PF_PATH_MAX];/* visual_config.output_dir, "" = work_dir/visuals */
    int visual_num_samples;             /* visual_config.num_samples, 1..16 (default 4) */
    int64_t eval_interval;              /* evaluation.interval (iterations, multiple of ckpt) */
    int eval_psnr, eval_ssim;           /* evaluation.metrics contains PSNR / SSIM */
    int crop_border;                    /* evaluation.crop_border (pixels on each side) */
    int eval_y_channel;                 /* evaluation.convert_to: y */
    int eval_save_image;                /* evaluation.save_image */
    int eval_instances;                 /* evaluation.instances: eval services that split the
                                           eval set (default 1) */
    char eval_device[16];               /* evaluation.device: "cpu" (the CUDA backend will add
                                           "cuda:N") */
    int pad_multiple;                   /* eval_cfg.pad_multiple: pad LQ to a multiple, crop back */
    int eval_ensemble;                  /* eval_cfg.ensemble: x8 self-ensemble (default 0) */
    int eval_tile;                      /* eval_cfg.tile: tile core in LQ pixels, 0 = off */
    int clip_window, clip_overlap;      /* eval_cfg: a video network's frames per inference
                                           window and frames shared by neighbours (32, 8) */
    int eval_tile_overlap;              /* eval_cfg.tile_overlap: LQ pixels of context (40) */

    /* run */
    char work_dir[PF_PATH_MAX];
    char load_from[PF_PATH_MAX];        /* weights only, start at iteration 0 */
    char resume_from[PF_PATH_MAX];      /* full state; "auto" = work_dir/checkpoints/latest */
    int resume_asked;                   /* not a key: set by pf_job_prepare when resume_from or
                                           --resume was given, even "auto" with nothing to
                                           resume yet (then resume_from is "") */
    int resume_optim;                   /* default 1 */
    uint64_t seed;                      /* default 0 */
    char log_level[16];                 /* "debug" | "info" | "warning" | "error" */
    char conv_algorithm[16];            /* CPU convolutions: "auto" (default) | "direct" |
                                           "winograd" (nn/cpu/conv_dnnl.h) */
    int train_precision;                /* train_cfg.precision: 0 fp32 (default), 1 bf16 (the
                                           values of nn/cpu/dnnl_ctx.h's pf_precision) */
    int test_precision;                 /* test_cfg.precision: the same, for evaluation, `pixflow
                                           test` and `pixflow upscale` */
    int64_t tsa_iter;                   /* train_cfg.tsa_iter, EDVR: only the `fusion` tensors
                                           train in iterations 1..tsa_iter-1 (BasicSR's
                                           EDVRModel; 0 off, never 1) */

    /* gan (issue 41): enabled 0 without the section */
    pf_gan_cfg gan;

    /* security */
    int curve;                          /* security.curve: CURVE on every link (default 0) */
    char keys_dir[PF_PATH_MAX];         /* security.keys_dir: "" = none (--keys / PIXFLOW_KEYS) */
} pf_config;
#endif
