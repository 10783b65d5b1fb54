/*  export — `pixflow export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR [--config CONFIG] [--force]`:
    a trained image network as an ONNX model (nn/onnx_export.h, docs/export.md). The model is
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
#include "common/safetensors.h"
#include "nn/onnx_export.h"

static int usage(void) {
    fprintf(stderr, "usage: pixflow export --onnx OUT.onnx WEIGHTS_OR_WORK_DIR [--config CONFIG] "
                    "[--force]\n"
                    "  WEIGHTS_OR_WORK_DIR: a work dir (config.yaml, checkpoints/latest) or a "
                    ".safetensors file\n"
                    "  (its config: --config, else the work dir's ../config.yaml)\n");
    return 2;
}

int pf_export_main(int argc, char **argv) {
    const char *out = NULL, *src = NULL, *config = NULL;
    int force = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--onnx") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = 1;
        else if (argv[i][0] != '-' && !src) src = argv[i];
        else return usage();
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
    pf_model *m = pf_model_source_load(src, config, &cfg, &ema, err, sizeof err);
    void *buf = NULL;
    size_t len = 0;
    int rc = !m || pf_onnx_export(pf_model_net(m), pf_model_params(m), &buf, &len, err,
                                  sizeof err) ||
             pf_write_file_atomic(out, buf, len, err, sizeof err);
    if (rc) fprintf(stderr, "pixflow: export: %s\n", err);
    else printf("%s: %s x%d (%s weights), opset %d, %zu bytes\n", out, cfg.model_type,
                cfg.scale, ema ? "params_ema" : "params", PF_ONNX_OPSET, len);
    free(buf);
    pf_model_destroy(&m);
    return rc ? 1 : 0;
}
