/*  config_keys — see config_keys.h.

    The BasicSR names come from its options files (options/train/EDSR/train_EDSR_Mx2.yml and
    its siblings: name, datasets, network_g, path, train, val, logger), the MMagic ones from
    MMEditing 0.x configs (the dialect PixFlow's keys follow). A row is written only where PixFlow has the setting (or a
    documented stand-in); names with no PixFlow meaning get the generic answer.
*/
#include "common/config_keys.h"

#include <stdio.h>
#include <string.h>

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

const pf_config_section pf_config_sections[PF_SEC_COUNT] = {
    [PF_SEC_TOP] = {"", KEYS("model", "data", "optimizers", "optimizer_config", "ema_decay",
                             "lr_config", "total_iters", "total_epochs", "checkpoint_config",
                             "log_config", "visual_config", "evaluation", "eval_cfg", "security",
                             "work_dir", "load_from", "resume_from", "resume_optim", "seed",
                             "log_level", "conv_algorithm")},
    [PF_SEC_MODEL] = {"model", KEYS("type", "scale", "in_channels", "out_channels", "n_feats",
                                    "num_feat", "n_blocks", "num_block", "num_group",
                                    "squeeze_factor", "num_grow_ch", "res_scale", "rgb_mean",
                                    "img_range", "d", "s", "m", "channels", "kernel_sizes",
                                    "loss")},
    [PF_SEC_LOSS] = {"model.loss", KEYS("type", "loss_weight", "eps", "reduction")},
    [PF_SEC_DATA] = {"data", KEYS("loaders", "samples_per_gpu", "prefetch", "cache_mb",
                                  "loader_threads", "on_bad_sample", "train", "eval", "test")},
    [PF_SEC_DATASET] = {"data.train", KEYS("type", "gt_folder", "lq_folder", "filename_tmpl",
                                           "gt_patch_size", "use_flip", "use_rot", "repeat",
                                           "meta_info_file", "degradation")},
    [PF_SEC_DEGRADATION] = {"data.train.degradation[0]",
                            KEYS("type", "kernel_size", "sigma", "quality")},
    [PF_SEC_OPTIM] = {"optimizers", KEYS("type", "lr", "betas", "eps", "weight_decay",
                                         "momentum", "dampening", "nesterov", "paramwise_cfg")},
    [PF_SEC_PARAMWISE] = {"optimizers.paramwise_cfg", KEYS("custom_keys")},
    [PF_SEC_CUSTOM_KEY] = {"optimizers.paramwise_cfg.custom_keys.body",
                           KEYS("lr_mult", "decay_mult")},
    [PF_SEC_OPTIMIZER_CONFIG] = {"optimizer_config", KEYS("grad_clip")},
    [PF_SEC_GRAD_CLIP] = {"optimizer_config.grad_clip", KEYS("max_norm", "norm_type")},
    [PF_SEC_LR] = {"lr_config", KEYS("policy", "step", "gamma", "periods", "restart_weights",
                                     "min_lr", "warmup", "warmup_iters", "warmup_ratio")},
    [PF_SEC_CKPT] = {"checkpoint_config", KEYS("interval", "max_keep_ckpts")},
    [PF_SEC_LOG] = {"log_config", KEYS("interval")},
    [PF_SEC_VISUAL] = {"visual_config", KEYS("interval", "output_dir", "num_samples")},
    [PF_SEC_EVAL] = {"evaluation", KEYS("interval", "metrics", "crop_border", "convert_to",
                                        "save_image", "instances", "device")},
    [PF_SEC_EVAL_CFG] = {"eval_cfg", KEYS("pad_multiple", "ensemble", "tile", "tile_overlap")},
    [PF_SEC_SECURITY] = {"security", KEYS("curve", "keys_dir")},
};

/* Another framework's name in a PixFlow section, and the answer. `sec` -1: any section. */
static const struct {
    int sec;
    const char *name;
    const char *hint;           /* follows "unknown key; " */
} FOREIGN[] = {
    /* BasicSR, top level of an options file */
    {PF_SEC_TOP, "name", "PixFlow names a run by its folder, 'work_dir' (a path)"},
    {PF_SEC_TOP, "model_type", "PixFlow has one training loop (BasicSR's SRModel); the "
                               "network is 'model.type'"},
    {PF_SEC_TOP, "scale", "PixFlow calls this 'model.scale'"},
    {PF_SEC_TOP, "num_gpu", "PixFlow takes the GPU count on the command line: "
                            "`pixflow train CONFIG --gpus N`"},
    {PF_SEC_TOP, "manual_seed", "PixFlow calls this 'seed'"},
    {PF_SEC_TOP, "datasets", "PixFlow calls this 'data' (with train, eval and test; "
                             "BasicSR's val is 'eval')"},
    {PF_SEC_TOP, "network_g", "PixFlow calls this 'model' (type, scale, num_feat or n_feats, "
                              "num_block or n_blocks, ...)"},
    {PF_SEC_TOP, "path", "PixFlow has no path section: pretrain_network_g is 'load_from', "
                         "resume_state is 'resume_from', both at the top level"},
    {PF_SEC_TOP, "train", "PixFlow has no train section: optim_g is 'optimizers', scheduler is "
                          "'lr_config', total_iter is 'total_iters', pixel_opt is 'model.loss', "
                          "ema_decay is 'ema_decay', all at the top level"},
    {PF_SEC_TOP, "val", "PixFlow calls this 'evaluation' (val_freq is its 'interval', save_img "
                        "its 'save_image'); the images are 'data.eval'"},
    {PF_SEC_TOP, "logger", "PixFlow calls this 'log_config' (print_freq is its 'interval'); "
                           "save_checkpoint_freq is 'checkpoint_config.interval'"},
    {PF_SEC_TOP, "total_iter", "PixFlow calls this 'total_iters'"},
    {PF_SEC_TOP, "pretrain_network_g", "PixFlow calls this 'load_from' (weights only, every "
                                       "tensor must match; training starts at iteration 0)"},
    {PF_SEC_TOP, "resume_state", "PixFlow calls this 'resume_from': a checkpoint's weights "
                                 "file (checkpoints/iter_N.safetensors, its optimiser state "
                                 "beside it) or auto, not a .state file"},
    {PF_SEC_TOP, "optim_g", "PixFlow calls this 'optimizers' (the same keys: type, lr, betas, "
                            "weight_decay)"},
    {PF_SEC_TOP, "scheduler", "PixFlow calls this 'lr_config' (MultiStepLR is policy: Step "
                              "with step: [milestones]; CosineAnnealingRestartLR is policy: "
                              "CosineRestart)"},
    {PF_SEC_TOP, "pixel_opt", "PixFlow calls this 'model.loss'"},
    {PF_SEC_TOP, "warmup_iter", "PixFlow calls this 'lr_config.warmup_iters' (with "
                                "lr_config.warmup: linear; for BasicSR's -1 leave both out)"},
    {PF_SEC_TOP, "val_freq", "PixFlow calls this 'evaluation.interval' (a multiple of "
                             "checkpoint_config.interval: evaluation runs on checkpoints)"},
    {PF_SEC_TOP, "save_checkpoint_freq", "PixFlow calls this 'checkpoint_config.interval'"},
    {PF_SEC_TOP, "print_freq", "PixFlow calls this 'log_config.interval'"},
    {PF_SEC_TOP, "crop_border", "PixFlow calls this 'evaluation.crop_border'"},
    {PF_SEC_TOP, "test_y_channel", "PixFlow calls this 'evaluation.convert_to' (y for true, "
                                   "null for false)"},
    {PF_SEC_TOP, "save_img", "PixFlow calls this 'evaluation.save_image'"},
    /* MMagic, top level */
    {PF_SEC_TOP, "exp_name", "PixFlow names a run by its folder, 'work_dir' (a path)"},
    {PF_SEC_TOP, "dist_params", "PixFlow needs no dist_params: workers join their collective "
                                "(Gloo, NCCL) through the coordinator"},
    /* BasicSR network_g, MMagic generator, in model: */
    {PF_SEC_MODEL, "num_in_ch", "PixFlow calls this 'in_channels'"},
    {PF_SEC_MODEL, "num_out_ch", "PixFlow calls this 'out_channels'"},
    {PF_SEC_MODEL, "upscale", "PixFlow calls this 'scale'"},
    {PF_SEC_MODEL, "upscale_factor", "PixFlow calls this 'scale'"},
    {PF_SEC_MODEL, "mid_channels", "PixFlow calls this 'n_feats'"},
    {PF_SEC_MODEL, "num_blocks", "PixFlow calls this 'n_blocks'"},
    {PF_SEC_MODEL, "pixel_loss", "PixFlow calls this 'loss'"},
    {PF_SEC_MODEL, "generator", "PixFlow's model is the generator itself: its type, scale, "
                                "n_feats, ... go directly under model"},
    /* data: */
    {PF_SEC_DATA, "val", "PixFlow calls this 'eval'"},
    {PF_SEC_DATA, "batch_size_per_gpu", "PixFlow calls this 'samples_per_gpu'"},
    {PF_SEC_DATA, "num_worker_per_gpu", "PixFlow's loader processes are 'loaders' (processes "
                                        "for the whole job on this host, not per GPU; each "
                                        "decodes with 'loader_threads' threads)"},
    {PF_SEC_DATA, "workers_per_gpu", "PixFlow's loader processes are 'loaders' (processes for "
                                     "the whole job on this host, not per GPU)"},
    {PF_SEC_DATA, "train_dataloader", "PixFlow has no dataloader sections: the batch size is "
                                      "'data.samples_per_gpu'"},
    /* data.train / eval / test */
    {PF_SEC_DATASET, "dataroot_gt", "PixFlow calls this 'gt_folder'"},
    {PF_SEC_DATASET, "dataroot_lq", "PixFlow calls this 'lq_folder'"},
    {PF_SEC_DATASET, "gt_size", "PixFlow calls this 'gt_patch_size'"},
    {PF_SEC_DATASET, "use_hflip", "PixFlow calls this 'use_flip', which flips vertically too "
                                  "(BasicSR's use_rot adds the vertical flip; PixFlow's use_rot "
                                  "is the transpose alone): BasicSR's use_hflip + use_rot is "
                                  "use_flip + use_rot here"},
    {PF_SEC_DATASET, "batch_size_per_gpu", "PixFlow calls this 'data.samples_per_gpu' (one "
                                           "batch size per worker, under data, not per set)"},
    {PF_SEC_DATASET, "num_worker_per_gpu", "PixFlow's loader processes are 'data.loaders' "
                                           "(for the whole job on this host, not per GPU)"},
    {PF_SEC_DATASET, "dataset_enlarge_ratio", "PixFlow calls this 'repeat'"},
    {PF_SEC_DATASET, "times", "PixFlow calls this 'repeat' (MMagic RepeatDataset.times)"},
    {PF_SEC_DATASET, "dataset", "PixFlow writes the dataset flat under data.train (MMagic "
                                "RepeatDataset's times is 'repeat')"},
    {PF_SEC_DATASET, "io_backend", "PixFlow reads image files from disk (PNG, JPEG); remove "
                                   "io_backend"},
    {PF_SEC_DATASET, "name", "PixFlow's datasets have no name; remove it"},
    {PF_SEC_DATASET, "scale", "PixFlow calls this 'model.scale' (one scale for the job)"},
    {PF_SEC_DATASET, "prefetch_mode", "PixFlow always prefetches: 'data.prefetch' is how many "
                                      "batches a worker holds ahead"},
    {PF_SEC_DATASET, "use_shuffle", "PixFlow always shuffles: each epoch's order comes from "
                                    "'seed'"},
    {PF_SEC_DATASET, "pipeline", "PixFlow's pipeline is fixed: crop 'gt_patch_size', flips "
                                 "'use_flip' and 'use_rot', LQ from 'degradation' or "
                                 "'lq_folder'"},
    /* optimizers, lr_config (BasicSR scheduler), checkpoints, logging, evaluation */
    {PF_SEC_OPTIM, "generator", "PixFlow's optimizers is one optimiser written flat (type, lr, "
                                "betas, ...), not optimizers.generator"},
    {PF_SEC_LR, "type", "PixFlow calls this 'policy' (MultiStepLR is Step, "
                        "CosineAnnealingRestartLR is CosineRestart)"},
    {PF_SEC_LR, "milestones", "PixFlow calls this 'step' (with policy: Step)"},
    {PF_SEC_LR, "eta_min", "PixFlow calls this 'min_lr' (with policy: CosineRestart)"},
    {PF_SEC_LR, "warmup_iter", "PixFlow calls this 'warmup_iters' (with warmup: linear)"},
    {PF_SEC_LR, "by_epoch", "PixFlow schedules by iteration only (MMCV's by_epoch: false); "
                            "remove it"},
    {PF_SEC_CKPT, "by_epoch", "PixFlow checkpoints by iteration only; remove it"},
    {PF_SEC_CKPT, "save_optimizer", "PixFlow always saves the optimiser state "
                                    "(checkpoints/iter_N.optim.safetensors); remove it"},
    {PF_SEC_LOG, "print_freq", "PixFlow calls this 'interval'"},
    {PF_SEC_LOG, "hooks", "PixFlow's log hook always writes train.log, metrics.jsonl and "
                          "TensorBoard events; remove hooks"},
    {-1, "use_tb_logger", "PixFlow always writes TensorBoard events "
                          "(work_dir/events.out.tfevents.*); remove it"},
    {PF_SEC_EVAL, "val_freq", "PixFlow calls this 'interval'"},
    {PF_SEC_EVAL, "save_img", "PixFlow calls this 'save_image'"},
    {PF_SEC_EVAL, "test_y_channel", "PixFlow calls this 'convert_to' (y for true, null for "
                                    "false)"},
    {PF_SEC_EVAL, "gpu_collect", "PixFlow gathers the results on eval instance 0; remove it"},
    {PF_SEC_EVAL_CFG, "tile_pad", "PixFlow calls this 'tile_overlap'"},
    {PF_SEC_EVAL_CFG, "tile_size", "PixFlow calls this 'tile'"},
    {PF_SEC_EVAL_CFG, "self_ensemble", "PixFlow calls this 'ensemble'"},
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

const char *pf_config_unknown_hint(pf_config_section_id sec, const char *name, char *buf,
                                   size_t size) {
    buf[0] = 0;
    for (size_t i = 0; i < sizeof FOREIGN / sizeof FOREIGN[0]; i++) {
        if ((FOREIGN[i].sec == (int)sec || FOREIGN[i].sec < 0) &&
            !strcmp(FOREIGN[i].name, name)) {
            snprintf(buf, size, "; %s", FOREIGN[i].hint);
            return buf;
        }
    }
    if ((unsigned)sec >= PF_SEC_COUNT) return buf;
    size_t len = strlen(name);
    int allowed = len <= 5 ? 1 : len <= 9 ? 2 : 3;
    const char *const *keys = pf_config_sections[sec].keys;
    const char *best = NULL;
    int best_d = allowed + 1;
    for (int i = 0; keys[i]; i++) {
        int d = pf_edit_distance(name, keys[i]);
        if (d < best_d) best_d = d, best = keys[i];
    }
    for (int i = 0; !best && keys[i]; i++)
        if (prefix_of(name, keys[i])) best = keys[i];
    if (best) snprintf(buf, size, "; did you mean '%s'?", best);
    return buf;
}
