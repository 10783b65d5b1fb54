/*  eltwise_dnnl — the element-wise steps of backward passes as oneDNN primitives, so they run
    on oneDNN's thread pool like the convolutions around them (plain C loops would run on one
    core while the others spin):
      ReLU backward   d = y > 0 ? d : 0   (oneDNN eltwise_relu_use_dst_for_bwd, in place)
      accumulate      a += b              (oneDNN sum, in place)
    Both are layout-agnostic: the tensors are seen as flat arrays of n floats, which is right
    whenever the operands share one layout (nn/cpu/dnnl_ctx.h). A primitive is built for one n
    and rebuilt when n changes.
*/
#ifndef PF_ELTWISE_DNNL_H
#define PF_ELTWISE_DNNL_H
#include <stddef.h>
#include "nn/cpu/dnnl_ctx.h"

typedef enum { PF_OP_RELU_BACKWARD, PF_OP_ACCUMULATE } pf_op_kind;

typedef struct {
    pf_op_kind kind;
    size_t n;                   /* floats the primitive is built for; 0 = none */
    pf_dnnl *ctx;
    dnnl_primitive_t prim;
    dnnl_memory_t m0, m1;       /* operand handles, set per call */
} pf_op;

/* d = y > 0 ? d : 0 over n floats (torch's threshold_backward on the ReLU output y). */
int pf_op_relu_backward(pf_op *op, pf_dnnl *ctx, float *d, const float *y, size_t n, char *err,
                        size_t errlen);

/* a += b over n floats. */
int pf_op_accumulate(pf_op *op, pf_dnnl *ctx, float *a, const float *b, size_t n, char *err,
                     size_t errlen);

void pf_op_free(pf_op *op);
#endif
