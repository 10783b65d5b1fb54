/*  vgg — the VGG19 feature extractor as a network description, and its weights by
    torchvision's names (nn/vgg.h). */
#include "nn/vgg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"

/* Output channels of block 1..5's convolutions (torchvision's cfg 'E'). */
static const int vgg19_width[5] = { 64, 128, 256, 512, 512 };

/* BasicSR's ImageNet statistics for images in [0, 1]. */
static const float imagenet_mean[3] = { 0.485f, 0.456f, 0.406f };
static const float imagenet_std[3] = { 0.229f, 0.224f, 0.225f };

/* Append s to buf (len bytes, NUL-terminated), truncating. */
static void cat(char *buf, size_t len, const char *s) {
    size_t at = strlen(buf);
    if (at + 1 < len) snprintf(buf + at, len - at, "%s", s);
}

/* Append "[d0, d1, ...]". */
static void cat_shape(char *buf, size_t len, int ndim, const int64_t *shape) {
    char dim[32];
    cat(buf, len, "[");
    for (int k = 0; k < ndim; k++) {
        snprintf(dim, sizeof dim, "%s%lld", k ? ", " : "", (long long)shape[k]);
        cat(buf, len, dim);
    }
    cat(buf, len, "]");
}

/* A PF_G_AFFINE node on x (3 channels): out[c] = (x[c] - sub[c]) * mul[c]. */
static int affine3(pf_net *g, int x, const float sub[3], const float mul[3]) {
    if (pf_net_node(g, PF_G_AFFINE, &x, 1, 3, 1, 1, 0) < 0) return -1;
    pf_gnode *nd = &g->node[g->n_node - 1];
    for (int c = 0; c < 3; c++) {
        nd->sub[c] = sub[c];
        nd->mul[c] = mul[c];
    }
    return nd->out;
}

/* Module i of features on x (c channels, LQ / div): a conv's layer "features.i" (c -> width
   of the block), a ReLU, or a 2 x 2 max pooling. *c and *div follow the output. */
static int vgg_module(pf_net *g, int i, int x, int *c, int *div) {
    const char *name = pf_vgg19_layer_name(i);
    if (!strncmp(name, "pool", 4)) {
        *div *= 2;
        return pf_net_node(g, PF_G_MAXPOOL2, &x, 1, *c, 1, *div, 0);
    }
    if (!strncmp(name, "relu", 4)) return pf_net_node(g, PF_G_RELU, &x, 1, *c, 1, *div, 0);
    int oc = vgg19_width[name[4] - '1'];
    char lname[32];
    snprintf(lname, sizeof lname, "features.%d", i);
    pf_param_init w_init = { PF_INIT_NORMAL, (double)oc * 9, 1.0 };  /* fan_out, torchvision */
    pf_param_init b_init = { PF_INIT_CONST, 1.0, 0.0 };
    int ci = pf_net_add_conv(g, lname, *c, oc, 3, w_init, b_init);
    if (ci < 0) return -1;
    int out = pf_net_node(g, PF_G_CONV, &x, 1, oc, 1, *div, 0);
    if (out < 0) return -1;
    g->node[g->n_node - 1].conv = ci;
    g->node[g->n_node - 1].param = g->conv[ci].weight;
    *c = oc;
    return out;
}

/* The deepest index of layer_names, or -1 with err. */
static int deepest_layer(const char *const *layer_names, int n_layers, char *err,
                         size_t errlen) {
    if (!layer_names || n_layers <= 0) {
        snprintf(err, errlen, "VGG19: no feature layers asked for");
        return -1;
    }
    int last = -1;
    for (int k = 0; k < n_layers; k++) {
        int i = pf_vgg19_layer_index(layer_names[k]);
        if (i < 0) {
            snprintf(err, errlen, "VGG19: unknown layer '%s' (valid: ",
                     layer_names[k] ? layer_names[k] : "(null)");
            for (int j = 0; j < PF_VGG19_N_NAMES; j++) {
                if (j) cat(err, errlen, ", ");
                cat(err, errlen, pf_vgg19_layer_name(j));
            }
            cat(err, errlen, ")");
            return -1;
        }
        if (i > last) last = i;
    }
    return last;
}

int pf_net_build_vgg19_features(pf_net *g, const char *const *layer_names, int n_layers,
                                int use_input_norm, int range_norm, int *layer_tensor,
                                char *err, size_t errlen) {
    pf_net_init(g);
    int last = deepest_layer(layer_names, n_layers, err, errlen);
    if (last < 0) return -1;
    snprintf(g->type, sizeof g->type, "VGG19");
    g->scale = 1;
    int x = g->input = pf_net_node(g, PF_G_INPUT, NULL, 0, 3, 1, 1, 0);
    if (range_norm) {
        static const float sub[3] = { -1.0f, -1.0f, -1.0f }, half[3] = { 0.5f, 0.5f, 0.5f };
        x = x < 0 ? -1 : affine3(g, x, sub, half);
    }
    if (use_input_norm && x >= 0) {
        float inv[3];
        for (int c = 0; c < 3; c++) inv[c] = 1.0f / imagenet_std[c];
        x = affine3(g, x, imagenet_mean, inv);
    }
    int out[PF_VGG19_N_NAMES], c = 3, div = 1;
    for (int i = 0; i <= last && x >= 0; i++) x = out[i] = vgg_module(g, i, x, &c, &div);
    if (x < 0 || g->oom) {
        snprintf(err, errlen, "VGG19: out of memory");
        pf_net_free(g);
        return -1;
    }
    g->output = x;
    for (int k = 0; layer_tensor && k < n_layers; k++)
        layer_tensor[k] = out[pf_vgg19_layer_index(layer_names[k])];
    return 0;
}

/* The first few names of a list, for a message. */
#define VGG_LIST_MAX 3

int pf_vgg_load_st(const pf_net *net, float *params, const struct pf_safetensors *st,
                   char *err, size_t errlen) {
    const float **src = calloc((size_t)net->n_tensors + 1, sizeof *src);
    if (!src) {
        snprintf(err, errlen, "%s: out of memory", pf_safetensors_name(st));
        return -1;
    }
    int missing = 0, shaped = 0;
    char miss[512] = "", bad[1024] = "";
    for (int i = 0; i < net->n_tensors; i++) {
        const pf_param_info *t = &net->tensors[i];
        int ndim = 0;
        int64_t shape[8];
        const float *d = pf_safetensors_get(st, t->name, &ndim, shape);
        int same = d && ndim == t->ndim;
        for (int k = 0; same && k < ndim; k++) same = shape[k] == t->shape[k];
        if (!d && missing++ < VGG_LIST_MAX) {
            if (missing > 1) cat(miss, sizeof miss, ", ");
            cat(miss, sizeof miss, t->name);
        }
        if (d && !same && shaped++ < VGG_LIST_MAX) {
            if (shaped > 1) cat(bad, sizeof bad, "; ");
            cat(bad, sizeof bad, t->name);
            cat(bad, sizeof bad, ": the file has ");
            cat_shape(bad, sizeof bad, ndim, shape);
            cat(bad, sizeof bad, ", ");
            cat(bad, sizeof bad, net->type);
            cat(bad, sizeof bad, " wants ");
            cat_shape(bad, sizeof bad, t->ndim, t->shape);
        }
        src[i] = same ? d : NULL;
    }
    if (missing || shaped) {
        size_t at = (size_t)snprintf(err, errlen, "%s: not the weights of torchvision's vgg19 "
                                     "for %s:", pf_safetensors_name(st), net->type);
        if (missing && at < errlen)
            at += (size_t)snprintf(err + at, errlen - at, " %d tensors missing (%s%s)", missing,
                                   miss, missing > VGG_LIST_MAX ? ", ..." : "");
        if (shaped && at < errlen)
            snprintf(err + at, errlen - at, "%s %d mis-shaped (%s%s)", missing ? ";" : "",
                     shaped, bad, shaped > VGG_LIST_MAX ? "; ..." : "");
        cat(err, errlen, "; convert torchvision's vgg19 .pth (state_dict names "
            "features.N.weight / .bias) with scripts/pth2safetensors.py");
        free(src);
        return -1;
    }
    for (int i = 0; i < net->n_tensors; i++)
        memcpy(params + net->tensors[i].offset, src[i], net->tensors[i].numel * sizeof(float));
    free(src);
    return 0;
}

int pf_vgg_load(const pf_net *net, float *params, const char *path, char *err, size_t errlen) {
    pf_safetensors *st = NULL;
    if (pf_safetensors_load(path, &st, err, errlen)) return -1;
    int rc = pf_vgg_load_st(net, params, st, err, errlen);
    pf_safetensors_free(&st);
    return rc;
}
