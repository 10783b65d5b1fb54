/*  sn_cuda — spectral normalisation over a discriminator's device buffers (see sn_cuda.h): the
    layer list from the description (pf_disc_sn_at's offsets, so the state buffer is the
    host's), one pf_cuda_sn_* call per layer. */
#include "nn/cuda/sn_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/ops.h"
#include "nn/discriminator.h"

pf_cusn *pf_cusn_new(const pf_net *net, char *err, size_t errlen) {
    pf_cusn *s = calloc(1, sizeof *s);
    int n = pf_disc_sn_count(net);
    if (!s || !(s->layer = calloc((size_t)n + 1, sizeof *s->layer))) {
        snprintf(err, errlen, "spectral norm (%s): out of host memory", net->type);
        free(s);
        return NULL;
    }
    s->n = n;
    s->n_params = net->n_params;
    s->n_state = pf_disc_sn_numel(net);
    int max_rows = 1;
    for (int j = 0; j < n; j++) {
        pf_cusn_layer *l = &s->layer[j];
        const pf_nconv *c = &net->conv[pf_disc_sn_at(net, j, &l->u_offset, &l->v_offset)];
        const pf_param_info *t = &net->tensors[c->weight];
        snprintf(l->name, sizeof l->name, "%.*s", (int)strcspn(t->name, "."), t->name);
        l->rows = c->oc;
        l->cols = c->ic * c->k * c->k;
        l->eps = PF_SN_EPS;
        l->weight_offset = t->offset;
        if (l->rows > max_rows) max_rows = l->rows;
    }
    cudaError_t e = cudaMalloc((void **)&s->sigma, ((size_t)n + 1) * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&s->scratch, PF_CUDA_SN_SCRATCH(max_rows) * sizeof(double));
    if (e != cudaSuccess) {
        snprintf(err, errlen, "spectral norm (%s): cudaMalloc: %s", net->type,
                 cudaGetErrorString(e));
        pf_cusn_destroy(&s);
    }
    return s;
}

void pf_cusn_destroy(pf_cusn **self) {
    if (!self || !*self) return;
    pf_cusn *s = *self;
    cudaFree(s->sigma);
    cudaFree(s->scratch);
    free(s->layer);
    free(s);
    *self = NULL;
}

/* err = "spectral norm LAYER: " + err (the kernel's message). */
static int layer_fail(const pf_cusn_layer *l, char *err, size_t errlen) {
    char m[384];
    snprintf(m, sizeof m, "%s", err);
    snprintf(err, errlen, "spectral norm %s: %s", l->name, m);
    return -1;
}

int pf_cusn_forward(pf_cusn *s, const float *params, float *state, int training, float *eff,
                    cudaStream_t stream, char *err, size_t errlen) {
    cudaError_t e = cudaMemcpyAsync(eff, params, s->n_params * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "spectral norm: copying the parameters: cudaMemcpyAsync: %s",
                 cudaGetErrorString(e));
        return -1;
    }
    for (int j = 0; j < s->n; j++) {
        const pf_cusn_layer *l = &s->layer[j];
        if (pf_cuda_sn_forward(eff + l->weight_offset, state + l->u_offset,
                               state + l->v_offset, s->sigma + j, params + l->weight_offset,
                               l->rows, l->cols, l->eps, training, s->scratch, stream, err,
                               errlen))
            return layer_fail(l, err, errlen);
    }
    s->forwarded = 1;
    return 0;
}

int pf_cusn_backward(const pf_cusn *s, const float *params, const float *state, float *grads,
                     cudaStream_t stream, char *err, size_t errlen) {
    if (s->n && !s->forwarded) {
        snprintf(err, errlen, "spectral norm %s: backward before any forward (no sigma yet)",
                 s->layer[0].name);
        return -1;
    }
    for (int j = 0; j < s->n; j++) {
        const pf_cusn_layer *l = &s->layer[j];
        float *g = grads + l->weight_offset;
        if (pf_cuda_sn_backward(g, g, params + l->weight_offset, state + l->u_offset,
                                state + l->v_offset, s->sigma + j, l->rows, l->cols,
                                s->scratch, stream, err, errlen))
            return layer_fail(l, err, errlen);
    }
    return 0;
}

const float *pf_cusn_sigma(const pf_cusn *s, int j) {
    return j >= 0 && j < s->n ? s->sigma + j : NULL;
}
