/*  test_zoo_configs — every file in configs/zoo (the references' architectures and recipes)
    parses, builds its network with the published parameter count, and infers a small image to
    finite values. Expected counts: PyTorch's sum(p.numel()) of tests/reference/zoo_archs.py's
    networks with the same hyper-parameters, which agree with the papers' figures (EDSR-baseline
    x2 1.37 M, EDSR x2 40.7 M, MSRResNet x4 1.52 M, RCAN x2 15.4 M, ESRGAN's RRDBNet 16.7 M).
    And every network row (common/networks.h) has a builder in nn/zoo.c: each builds its
    description at each of its scales with the default keys. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/networks.h"
#include "common/util.h"
#include "nn/model.h"
#include "nn/net.h"
#include "tests/pf_test.h"

static const struct {
    const char *file;
    size_t params;
} cases[] = {
    { "EDSR_Mx2.yaml", 1369859 },
    { "EDSR_Lx2.yaml", 40729603 },
    { "MSRResNet_x4.yaml", 1517571 },
    { "RCAN_x2.yaml", 15444643 },
    { "RRDBNet_PSNR_x4.yaml", 16697987 },
    { "RealESRNet_x4plus.yaml", 16697987 },  /* the same RRDBNet, Real-ESRGAN data */
    { "FSRCNN_x3.yaml", 24683 },
    { "ESPCN_x3.yaml", 31131 },
};

static void every_row_builds(void) {
    static pf_config c;
    for (int i = 0; i < pf_n_networks; i++)
        for (int s = 1; s <= 8; s++) {
            if (!(pf_networks[i].scales >> s & 1)) continue;
            pf_config_defaults(&c);
            snprintf(c.model_type, sizeof c.model_type, "%s", pf_networks[i].name);
            c.scale = s;
            if (pf_networks[i].n_blocks) c.n_blocks = pf_networks[i].n_blocks;
            pf_net g;
            char err[512];
            int rc = pf_net_build(&g, &c, err, sizeof err);
            CHECK(rc == 0, "%s x%d: %s", pf_networks[i].name, s, err);
            if (!rc) pf_net_free(&g);
        }
}

int main(void) {
    every_row_builds();
    const char *src = getenv("PF_SOURCE_DIR");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024], err[2048];
        snprintf(path, sizeof path, "%s/configs/zoo/%s", src ? src : ".", cases[i].file);
        size_t len = 0;
        char *text = pf_read_file(path, &len, err, sizeof err);
        CHECK(text != NULL, "%s", err);
        if (!text) continue;
        static pf_config cfg;
        int rc = pf_config_parse(&cfg, path, text, len, 0, err, sizeof err);
        free(text);
        CHECK(rc == 0, "%s: %s", path, err);
        if (rc) continue;
        pf_model *m = pf_model_new(&cfg, err, sizeof err);
        CHECK(m != NULL, "%s: %s", cases[i].file, err);
        if (!m) continue;
        CHECK(pf_model_num_params(m) == cases[i].params, "%s: %zu parameters, expected %zu",
              cases[i].file, pf_model_num_params(m), cases[i].params);
        pf_model_init(m, 1);
        int h = 10, w = 12, s = cfg.scale;
        uint8_t lq[10 * 12 * 3];
        for (int k = 0; k < h * w * 3; k++) lq[k] = (uint8_t)(k * 37 % 256);
        float *out = malloc((size_t)h * s * w * s * 3 * sizeof(float));
        rc = pf_model_infer(m, lq, h, w, out, err, sizeof err);
        CHECK(rc == 0, "%s: %s", cases[i].file, err);
        int finite = 1;
        for (int k = 0; !rc && k < h * s * w * s * 3; k++) finite &= isfinite(out[k]);
        CHECK(finite, "%s: non-finite output", cases[i].file);
        printf("%-22s %-9s x%d %10zu parameters, infers %dx%d -> %dx%d\n", cases[i].file,
               cfg.model_type, s, pf_model_num_params(m), h, w, h * s, w * s);
        free(out);
        pf_model_destroy(&m);
    }
    return pf_test_end("test_zoo_configs");
}
