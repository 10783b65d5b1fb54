/*  pf_test_zoo — small hyper-parameters for every network type of the zoo (common/networks.h),
    for the tests that iterate its rows (test_onnx_export, test_bf16_zoo): a type reads the
    keys of its own groups and ignores the others, so one config serves every row. */
#ifndef PF_TEST_ZOO_H
#define PF_TEST_ZOO_H
#include <stdio.h>
#include "common/config.h"

/* The defaults with model.type `type` at `scale`, n_feats `n_feats`, 2 blocks (RCAN: 2 groups
   of 2, squeeze 4), RRDBNet growth 4, FSRCNN d 8 s 4 m 2, SRCNN widths 8, 4. */
static inline void pf_test_zoo_config(pf_config *c, const char *type, int scale, int n_feats) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", type);
    c->scale = scale;
    c->n_feats = n_feats;
    c->n_blocks = 2;
    c->num_group = 2;
    c->squeeze_factor = 4;
    c->num_grow_ch = 4;
    c->fsrcnn_d = 8;
    c->fsrcnn_s = 4;
    c->fsrcnn_m = 2;
    c->srcnn_channels[1] = 8;
    c->srcnn_channels[2] = 4;
}
#endif
