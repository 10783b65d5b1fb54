/*  pixflow — one executable, one subcommand per role (docs/architecture.md):

      pixflow train CONFIG [--resume auto|PATH] [--loaders N]   the whole job on this host
      pixflow test CONFIG --checkpoint PATH [--video[=CODEC]]    data.test through a checkpoint
      pixflow upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT        a network on your images, videos
      pixflow coordinator CONFIG [--bind EP] [--addr-file F]    the job's hub
      pixflow loader --connect EP [--join-timeout S]            decode + augment + batch
      pixflow worker --connect EP [--device cpu]                train the network
      pixflow hook checkpoint|eval|log|visual --connect EP      subscriber services
      pixflow monitor --connect EP [--once|--json|--http H:P]  watch a job from any host
      pixflow config CONFIG [--get KEY ...]                     the resolved config / values
      pixflow data CONFIG --explain|--degrade ...              a sample's making; a frozen LQ set
      pixflow keygen DIR [--name NAME [--allow]]                CURVE keys (security.curve)
      pixflow export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR        a trained network as ONNX
*/
#include <dnnl.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "coordinator/coordinator.h"
#include "hooks/hook.h"
#include "loader/loader.h"
#include "proto/security.h"
#include "worker/device.h"
#include "worker/worker.h"

static int usage(void) {
    fprintf(stderr,
            "usage: pixflow <command> ...\n"
            "  train CONFIG [--resume auto|PATH] [--loaders N] [--workers N] [--gpus N]\n"
            "        [--bind tcp://HOST:PORT] [--http [HOST:]PORT]\n"
            "                                                   run a training job on this host\n"
            "                                                   (--http: its dashboard, as monitor)\n"
            "                                                   (--loaders 0: loaders join by hand)\n"
            "  test CONFIG --checkpoint PATH [--workers N]      evaluate data.test\n"
            "        [--video[=CODEC]]                          (video sets: also CLIP.mkv)\n"
            "  upscale WEIGHTS_OR_WORK_DIR INPUT... -o OUT      a network on your images and videos\n"
            "        [--tile N|auto] [--ensemble] [--force]     (docs/upscale.md)\n"
            "  coordinator CONFIG [--bind EP] [--addr-file F] [--workers N] [--resume R]\n"
            "  loader --connect EP [--name NAME] [--join-timeout S]\n"
            "                                                   join a job (from any host); waits\n"
            "                                                   for the coordinator unless timed out\n"
            "  worker --connect EP [--device cpu|cuda:N] [--bind EP]\n"
            "  hook checkpoint|eval|log|visual --connect EP\n"
            "  monitor --connect EP [--once | --json] [--interval S] [--http HOST:PORT]\n"
            "                                                   watch a running job (any host,\n"
            "                                                   any time)\n"
            "  keygen DIR [--name NAME [--allow]]               CURVE key pairs for security.curve\n"
            "  --keys DIR (train, coordinator, loader, worker, hook; or PIXFLOW_KEYS=DIR): the\n"
            "        key folder when the job runs with security.curve: true\n"
            "  config CONFIG [--get KEY ...]                    the resolved config, or values\n"
            "                                                   of keys (for scripts)\n"
            "  data CONFIG --explain [--set train|eval|test] [--epoch E] --index I\n"
            "                                                   a sample's file, crop and drawn\n"
            "                                                   degradation parameters\n"
            "  data CONFIG --degrade --set eval|test -o DIR [--force]\n"
            "                                                   each image's LQ as evaluation\n"
            "                                                   makes it, as DIR/<stem>.png\n"
            "  export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR [--config CONFIG] [--force]\n"
            "        [--num-frame N]                            (video networks: N frames)\n"
            "                                                   the network as ONNX (opset 17)\n"
            "  --version\n");
    return 2;
}

/* `pixflow --version`: what this build has, with the versions of the libraries it runs on. */
static int version(void) {
    const dnnl_version_t *dnnl = dnnl_version();
    char gpu[256], nccl[256];
    pf_gpu_build_info(gpu, sizeof gpu, nccl, sizeof nccl);
    printf("pixflow %s\n"
           "backends:    cpu (oneDNN %d.%d.%d); %s\n"
           "collectives: gloo (CPU workers); %s\n",
           PIXFLOW_VERSION, dnnl->major, dnnl->minor, dnnl->patch, gpu, nccl);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    const char *cmd = argv[1];
    int n = argc - 2;
    char **rest = argv + 2;
    if (strcmp(cmd, "--version") == 0) return version();
    if (strcmp(cmd, "train") == 0) return pf_train_main(n, rest);
    if (strcmp(cmd, "test") == 0) return pf_test_main(n, rest);
    if (strcmp(cmd, "upscale") == 0) return pf_upscale_main(n, rest);
    if (strcmp(cmd, "coordinator") == 0) return pf_coordinator_main(n, rest);
    if (strcmp(cmd, "loader") == 0) return pf_loader_main(n, rest);
    if (strcmp(cmd, "worker") == 0) return pf_worker_main(n, rest);
    if (strcmp(cmd, "monitor") == 0) return pf_monitor_main(n, rest);
    if (strcmp(cmd, "config") == 0) return pf_config_main(n, rest);
    if (strcmp(cmd, "data") == 0) return pf_data_main(n, rest);
    if (strcmp(cmd, "keygen") == 0) return pf_keygen_main(n, rest);
    if (strcmp(cmd, "export") == 0) return pf_export_main(n, rest);
    if (strcmp(cmd, "hook") == 0 && n >= 1) {
        if (strcmp(rest[0], "checkpoint") == 0) return pf_hook_checkpoint_main(n - 1, rest + 1);
        if (strcmp(rest[0], "eval") == 0) return pf_hook_eval_main(n - 1, rest + 1);
        if (strcmp(rest[0], "log") == 0) return pf_hook_log_main(n - 1, rest + 1);
        if (strcmp(rest[0], "visual") == 0) return pf_hook_visual_main(n - 1, rest + 1);
    }
    return usage();
}
