/*  export — `pixflow export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR [--config CONFIG]
    [--num-frame N] [--force]`: a trained network as an ONNX model (nn/onnx_export.h,
    docs/export.md); a video network (BasicVSR) unrolled over N frames (default: the config's
    data.train.num_frame). The model is
    resolved as `pixflow upscale` resolves it (cli/model_source.h), with the weights evaluation
    uses (params_ema when present); the file is written to a temporary name in OUT's folder
    and renamed, and an existing OUT is kept unless --force.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "common/log.h"
#include "common/number.h"
#include "common/safetensors.h"
#include "nn/net.h"
#include "nn/onnx_export.h"

static int usage(void) {
    fprintf(stderr, "usage: pixflow export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR [--config CONFIG] "
                    "[--num-frame N] [--force]\n"
                    "  WEIGHTS_OR_WORK_DIR: a work dir (config.yaml, checkpoints/latest) or a "
                    ".safetensors file\n"
                    "  (its config: --config, else the work dir's ../config.yaml)\n"
                    "  --num-frame N: a video network's frames (1..%d; default: "
                    "data.train.num_frame)\n", PF_MODEL_MAX_CLIP);
    return 2;
}

/* The model as ONNX into *buf; a video network unrolled over `frames` (0: its training clip
   length), its description built again for that many frames (the same parameter table). */
static int encode(pf_model *m, const pf_config *cfg, int frames, void **buf, size_t *len,
                  char *err, size_t errlen) {
    if (!pf_model_is_video(m))
        return pf_onnx_export(pf_model_net(m), pf_model_params(m), buf, len, err, errlen);
    pf_net clip;
    if (pf_net_build_video(&clip, cfg, frames ? frames : pf_model_frames(m), err, errlen))
        return -1;
    int rc = pf_onnx_export(&clip, pf_model_params(m), buf, len, err, errlen);
    pf_net_free(&clip);
    return rc;
}

int pf_export_main(int argc, char **argv) {
    const char *out = NULL, *src = NULL, *config = NULL;
    int force = 0, frames = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--onnx") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = 1;
        else if (!strcmp(argv[i], "--num-frame") && i + 1 < argc) {
            if (pf_arg_int("export", "--num-frame", argv[++i], 1, PF_MODEL_MAX_CLIP, &frames))
                return 2;
        }
        else if (argv[i][0] != '-' && !src) src = argv[i];
        else {
            fprintf(stderr, "pixflow export: %s: %s\n", argv[i],
                    argv[i][0] == '-' ? "unknown option or missing value" : "one model only");
            return usage();
        }
    }
    if (!out || !src) return usage();
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, "pixflow: %s exists (--force replaces it)\n", out);
        return 1;
    }
    pf_log_set_name("export");
    static pf_config cfg;
    char err[4096] = "";
    int ema = 0;
    /* fp32: the ONNX graph is fp32 whatever test_cfg.precision says */
    pf_model *m = pf_model_source_load(src, config, 0, &cfg, &ema, err, sizeof err);
    void *buf = NULL;
    size_t len = 0;
    if (m && frames && !pf_model_is_video(m))
        fprintf(stderr, "pixflow export: warning: --num-frame %d ignored: %s is an image "
                "network\n", frames, cfg.model_type);
    int rc = !m || encode(m, &cfg, frames, &buf, &len, err, sizeof err) ||
             pf_write_file_atomic(out, buf, len, err, sizeof err);
    if (rc) fprintf(stderr, "pixflow: export: %s\n", err);
    else printf("%s: %s x%d (%s weights), opset %d, %zu bytes\n", out, cfg.model_type,
                cfg.scale, ema ? "params_ema" : "params", PF_ONNX_OPSET, len);
    free(buf);
    pf_model_destroy(&m);
    return rc ? 1 : 0;
}
