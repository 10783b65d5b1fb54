/*  param_table — see param_table.h. */
#include "nn/param_table.h"

#include <stdio.h>

void pf_param_table_add_conv(pf_param_info *tensors, int *n_tensors, size_t *n_params,
                             const char *name, int ic, int oc, int k) {
    pf_param_info *w = &tensors[(*n_tensors)++], *b = &tensors[(*n_tensors)++];
    snprintf(w->name, sizeof w->name, "%s.weight", name);
    w->offset = *n_params;
    w->numel = (size_t)oc * ic * k * k;
    w->ndim = 4;
    w->shape[0] = oc;
    w->shape[1] = ic;
    w->shape[2] = k;
    w->shape[3] = k;
    *n_params += w->numel;
    snprintf(b->name, sizeof b->name, "%s.bias", name);
    b->offset = *n_params;
    b->numel = (size_t)oc;
    b->ndim = 1;
    b->shape[0] = oc;
    *n_params += b->numel;
}
