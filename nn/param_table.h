/*  param_table — the flat parameter layout shared by every backend: a convolution is two
    tensors, `name.weight` (OIHW, oc x ic x k x k) then `name.bias` (oc), appended at the running
    offset. The CPU model (nn/model.c) and the GPU model (nn/cuda/model_cuda.c) both register
    their layers through this, so their buffers and checkpoints line up by construction.
*/
#ifndef PF_PARAM_TABLE_H
#define PF_PARAM_TABLE_H
#include <stddef.h>

#include "nn/model.h"

/* Append conv `name`'s two tensors to tensors[*n_tensors..] at offset *n_params; both counters
   advance. The caller guarantees room for two entries. */
void pf_param_table_add_conv(pf_param_info *tensors, int *n_tensors, size_t *n_params,
                             const char *name, int ic, int oc, int k);
#endif
