/*  precision — the arithmetic of a model's convolutions, shared by both executors (config keys
    train_cfg.precision and test_cfg.precision, `pixflow upscale --precision`).

    PF_PREC_BF16 is mixed precision as torch.autocast(dtype=torch.bfloat16) does it for
    convolutions: a convolution reads its input and its weights rounded to bfloat16 (round to
    nearest even) and accumulates in fp32; its output, the gradients it writes (d input,
    d weights, d bias) and everything outside convolutions (master weights, optimiser state,
    loss, reductions, element-wise layers) stay fp32. The CPU executor's rules are in
    nn/cpu/dnnl_ctx.h and nn/cpu/conv_dnnl.h, the CUDA executor's in nn/cuda/conv_cudnn.h.
*/
#ifndef PF_PRECISION_H
#define PF_PRECISION_H
#include <string.h>

typedef enum {
    PF_PREC_FP32 = 0,
    PF_PREC_BF16 = 1,
} pf_precision;

/* "fp32" -> PF_PREC_FP32, "bf16" -> PF_PREC_BF16; 0, or -1 for anything else. */
static inline int pf_precision_parse(const char *s, pf_precision *out) {
    if (!strcmp(s, "fp32")) *out = PF_PREC_FP32;
    else if (!strcmp(s, "bf16")) *out = PF_PREC_BF16;
    else return -1;
    return 0;
}

static inline const char *pf_precision_name(pf_precision p) {
    return p == PF_PREC_BF16 ? "bf16" : "fp32";
}
#endif
