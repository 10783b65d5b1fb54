/*  perceptual_opts — see perceptual_opts.h. Moved from nn/perceptual_loss.c (issue 41, slice C)
    unchanged, so that common/config.c may use it. */
#include "common/perceptual_opts.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/number.h"

static const char *const vgg19_names[PF_VGG19_N_LAYERS] = {
    "conv1_1", "relu1_1", "conv1_2", "relu1_2", "pool1",
    "conv2_1", "relu2_1", "conv2_2", "relu2_2", "pool2",
    "conv3_1", "relu3_1", "conv3_2", "relu3_2", "conv3_3", "relu3_3", "conv3_4", "relu3_4",
    "pool3",
    "conv4_1", "relu4_1", "conv4_2", "relu4_2", "conv4_3", "relu4_3", "conv4_4", "relu4_4",
    "pool4",
    "conv5_1", "relu5_1", "conv5_2", "relu5_2", "conv5_3", "relu5_3", "conv5_4", "relu5_4",
    "pool5",
};

static const char *const criterion_names[PF_PERCEP_N_CRITERIA] = {
    [PF_PERCEP_L1] = "l1",
    [PF_PERCEP_L2] = "l2",
    [PF_PERCEP_FRO] = "fro",
};

/* Index of name in names[0..n), or -1 (also for NULL). */
static int name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

int pf_vgg19_layer_index(const char *name) {
    return name_index(vgg19_names, PF_VGG19_N_LAYERS, name);
}

const char *pf_vgg19_layer_name(int i) {
    return i >= 0 && i < PF_VGG19_N_LAYERS ? vgg19_names[i] : NULL;
}

int pf_percep_criterion_parse(const char *name, pf_percep_criterion *c) {
    int i = name_index(criterion_names, PF_PERCEP_N_CRITERIA, name);
    if (i >= 0) *c = (pf_percep_criterion)i;
    return i < 0 ? -1 : 0;
}

const char *pf_percep_criterion_name(pf_percep_criterion c) {
    return (unsigned)c < PF_PERCEP_N_CRITERIA ? criterion_names[c] : "?";
}

void pf_perceptual_opts_default(pf_perceptual_opts *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->vgg_type, sizeof o->vgg_type, "vgg19");
    o->use_input_norm = 1;
    o->range_norm = 0;
    o->perceptual_weight = 1.0;
    o->style_weight = 0.0;
    o->criterion = PF_PERCEP_L1;
}

/* "KEY: not a VGG19 layer name: 'NAME' (one of conv1_1, ..., pool5)" into err. */
static void bad_layer(const char *key, const char *name, char *err, size_t errlen) {
    char list[PF_VGG19_N_LAYERS * PF_PERCEP_NAME_MAX];
    size_t used = 0;
    for (int i = 0; i < PF_VGG19_N_LAYERS; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 vgg19_names[i]);
    snprintf(err, errlen, "%s: not a VGG19 layer name: '%s' (one of %s)", key, name, list);
}

/* A weight >= 0 from text (common/number.h's rule); 0, or -1 with "KEY: ..." in err. */
static int parse_weight(const char *key, const char *value, double *out, char *err,
                        size_t errlen) {
    double v;
    if (pf_parse_double(value, strlen(value), &v) != PF_NUM_OK) {
        snprintf(err, errlen, "%s: expected a number >= 0, got '%s'", key, value);
        return -1;
    }
    if (!(v >= 0)) {
        snprintf(err, errlen, "%s: must be >= 0, got %s", key, value);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bool(const char *key, const char *value, int *out, char *err, size_t errlen) {
    if (!strcmp(value, "true") || !strcmp(value, "True") || !strcmp(value, "TRUE")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(value, "false") || !strcmp(value, "False") || !strcmp(value, "FALSE")) {
        *out = 0;
        return 0;
    }
    snprintf(err, errlen, "%s: expected true or false, got '%s'", key, value);
    return -1;
}

/* layer_weights.NAME = value: appended after the layers already set. */
static int set_layer(pf_perceptual_opts *o, const char *key, const char *name,
                     const char *value, char *err, size_t errlen) {
    if (pf_vgg19_layer_index(name) < 0) {
        bad_layer(key, name, err, errlen);
        return -1;
    }
    for (int k = 0; k < o->n_layers; k++)
        if (!strcmp(o->layer_weights[k].name, name)) {
            snprintf(err, errlen, "%s: layer given twice", key);
            return -1;
        }
    if (o->n_layers >= PF_VGG19_N_LAYERS) { /* unreachable with distinct valid names */
        snprintf(err, errlen, "%s: more than %d layers", key, PF_VGG19_N_LAYERS);
        return -1;
    }
    double w;
    if (parse_weight(key, value, &w, err, errlen)) return -1;
    pf_percep_layer *l = &o->layer_weights[o->n_layers++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->weight = w;
    return 0;
}

int pf_perceptual_opts_set(pf_perceptual_opts *o, const char *key, const char *value, char *err,
                           size_t errlen) {
    static const char layer_prefix[] = "layer_weights.";
    if (!strncmp(key, layer_prefix, sizeof layer_prefix - 1))
        return set_layer(o, key, key + sizeof layer_prefix - 1, value, err, errlen);
    if (!strcmp(key, "perceptual_weight"))
        return parse_weight(key, value, &o->perceptual_weight, err, errlen);
    if (!strcmp(key, "style_weight"))
        return parse_weight(key, value, &o->style_weight, err, errlen);
    if (!strcmp(key, "use_input_norm")) return parse_bool(key, value, &o->use_input_norm, err,
                                                          errlen);
    if (!strcmp(key, "range_norm")) return parse_bool(key, value, &o->range_norm, err, errlen);
    if (!strcmp(key, "criterion")) {
        if (pf_percep_criterion_parse(value, &o->criterion) == 0) return 0;
        snprintf(err, errlen, "%s: unknown criterion '%s' (one of l1, l2, fro)", key, value);
        return -1;
    }
    if (!strcmp(key, "vgg_type")) {
        if (!strcmp(value, "vgg19")) {
            snprintf(o->vgg_type, sizeof o->vgg_type, "vgg19");
            return 0;
        }
        snprintf(err, errlen, "%s: '%s' is not supported (only vgg19)", key, value);
        return -1;
    }
    snprintf(err, errlen,
             "%s: unknown key (known: layer_weights.NAME, vgg_type, use_input_norm, range_norm,"
             " perceptual_weight, style_weight, criterion)", key);
    return -1;
}

int pf_perceptual_opts_check(const pf_perceptual_opts *o, char *err, size_t errlen) {
    if (o->n_layers < 1 || o->n_layers > PF_VGG19_N_LAYERS) {
        snprintf(err, errlen, "layer_weights: %d layers; give 1 to %d, e.g. {conv5_4: 1.0}",
                 o->n_layers, PF_VGG19_N_LAYERS);
        return -1;
    }
    char key[64];
    for (int k = 0; k < o->n_layers; k++) {
        const pf_percep_layer *l = &o->layer_weights[k];
        snprintf(key, sizeof key, "layer_weights.%.*s", PF_PERCEP_NAME_MAX, l->name);
        if (!memchr(l->name, 0, sizeof l->name) || pf_vgg19_layer_index(l->name) < 0) {
            bad_layer(key, memchr(l->name, 0, sizeof l->name) ? l->name : "(unterminated)",
                      err, errlen);
            return -1;
        }
        for (int j = 0; j < k; j++)
            if (!strcmp(o->layer_weights[j].name, l->name)) {
                snprintf(err, errlen, "%s: layer given twice", key);
                return -1;
            }
        if (!(l->weight >= 0 && isfinite(l->weight))) {
            snprintf(err, errlen, "%s: must be a finite number >= 0, got %g", key, l->weight);
            return -1;
        }
    }
    static const char *const wnames[2] = { "perceptual_weight", "style_weight" };
    const double w[2] = { o->perceptual_weight, o->style_weight };
    for (int i = 0; i < 2; i++)
        if (!(w[i] >= 0 && isfinite(w[i]))) {
            snprintf(err, errlen, "%s: must be a finite number >= 0, got %g", wnames[i], w[i]);
            return -1;
        }
    if (strcmp(o->vgg_type, "vgg19")) {
        snprintf(err, errlen, "vgg_type: '%.*s' is not supported (only vgg19)",
                 (int)sizeof o->vgg_type, o->vgg_type);
        return -1;
    }
    if ((unsigned)o->criterion >= PF_PERCEP_N_CRITERIA) {
        snprintf(err, errlen, "criterion: %d is not l1, l2 or fro", (int)o->criterion);
        return -1;
    }
    return 0;
}
