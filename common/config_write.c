/*  config_write — the resolved YAML (pf_config_to_yaml) and one key's value (pf_config_get),
    from the key table (common/config_keys.h).

    pf_config_to_yaml writes the rows in table order, a key only where it applies (its `when`)
    and, for PF_KF_IF_CHANGED rows, only where it differs from the default; its output parses
    back to an equal struct (tests/test_config.c checks it), and its FNV-1a 64 hash is
    pf_config.hash, so two processes agree they run the same job.
*/
#include "common/config.h"
#include "common/config_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pf_buf_put(pf_buf *b, const char *fmt, ...) {
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

int pf_buf_init(pf_buf *b) {
    b->s = malloc(4096);
    b->len = 0;
    b->cap = 4096;
    b->oom = !b->s;
    if (b->s)
        b->s[0] = 0;
    return b->s ? 0 : -1;
}

/* A single-quoted YAML string ('' escapes a quote). */
static void put_str(pf_buf *b, const char *s) {
    pf_buf_put(b, "'");
    for (; *s; s++)
        pf_buf_put(b, *s == '\'' ? "''" : "%c", *s);
    pf_buf_put(b, "'");
}

/* The shortest decimal that reads back as the same float (at most 9 digits always do). */
static void put_float(pf_buf *b, float v) {
    char t[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(t, sizeof t, "%.*g", digits, (double)v);
        if (strtof(t, NULL) == v)
            break;
    }
    pf_buf_put(b, "%s", t);
}

/* The shortest %g form that reads back as the same double. */
static void put_double(pf_buf *b, double v) {
    char t[32];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(t, sizeof t, "%.*g", digits, v);
        if (strtod(t, NULL) == v)
            break;
    }
    pf_buf_put(b, "%s", t);
}

/* Value i of "A|B|C" ("?" out of range). */
static void put_choice(pf_buf *b, const char *choices, int i) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    int n = pf_cfg_split_choices(choices, store, v);
    pf_buf_put(b, "%s", i >= 0 && i < n ? v[i] : "?");
}

/* The value of leaf row `k` stored at `base`, as the resolved YAML writes it; `raw`: strings
   unquoted and null as "" (pixflow config --get). */
/* data.*.val_partition as [a, b], data.*.clips as [{name: a, frames: [0, 0], crop: [...]}]
   (flow style: one line, as pixflow config --get prints it too). */
static void put_value(pf_buf *b, const pf_config_key *k, const char *base, int raw);
static void put_clips(pf_buf *b, const pf_config_key *k, const pf_dataset_cfg *d) {
    pf_buf_put(b, "[");
    if (k->custom == PF_KC_NAMES) {
        for (int i = 0; i < d->n_val_partition; i++) {
            pf_buf_put(b, i ? ", " : "");
            put_str(b, d->val_partition[i]);
        }
    } else {
        char rows[96];
        snprintf(rows, sizeof rows, "%s.*", k->path);
        for (int i = 0; i < d->n_clips; i++) {
            pf_buf_put(b, i ? ", {" : "{");
            int first = 1;
            for (int r = 0; r < pf_config_n_keys; r++) {
                const pf_config_key *item = &pf_config_keys[r];
                if (!pf_config_key_in(item, rows))
                    continue;
                pf_buf_put(b, "%s%s: ", first ? "" : ", ", pf_config_key_name(item));
                put_value(b, item, (const char *)&d->clips[i], 0);
                first = 0;
            }
            pf_buf_put(b, "}");
        }
    }
    pf_buf_put(b, "]");
}

/* gan.perceptual_opt.layer_weights as {conv1_2: 0.1, ...} (flow style, file order). */
static void put_layer_weights(pf_buf *b, const pf_perceptual_opts *o) {
    pf_buf_put(b, "{");
    for (int i = 0; i < o->n_layers; i++) {
        pf_buf_put(b, "%s%s: ", i ? ", " : "", o->layer_weights[i].name);
        put_double(b, o->layer_weights[i].weight);
    }
    pf_buf_put(b, "}");
}

static void put_value(pf_buf *b, const pf_config_key *k, const char *base, int raw) {
    const char *f = base + k->offset;
    if (k->flags & PF_KF_NO_STORE) {
        pf_buf_put(b, "%s", k->def);
        return;
    }
    if (k->flags & PF_KF_RANGE) {               /* [lo, hi]: the field and the next */
        pf_buf_put(b, "[");
        for (int i = 0; i < 2; i++) {
            pf_buf_put(b, i ? ", " : "");
            if (k->kind == PF_K_INT)
                pf_buf_put(b, "%d", ((const int *)f)[i]);
            else
                put_float(b, ((const float *)f)[i]);
        }
        pf_buf_put(b, "]");
        return;
    }
    switch (k->kind) {
    case PF_K_INT:
        pf_buf_put(b, "%d", *(const int *)f);
        return;
    case PF_K_INT64:
        pf_buf_put(b, "%lld", (long long)*(const int64_t *)f);
        return;
    case PF_K_FLOAT:
        put_float(b, *(const float *)f);
        return;
    case PF_K_DOUBLE:
        put_double(b, *(const double *)f);
        return;
    case PF_K_BOOL:
        pf_buf_put(b, "%s", *(const int *)f ? "true" : "false");
        return;
    case PF_K_STR:
    case PF_K_PATH:
    case PF_K_CHOICE:
        if (raw)
            pf_buf_put(b, "%s", f);
        else if (!f[0] && (k->flags & PF_KF_NULL))
            pf_buf_put(b, "null");
        else if (k->kind == PF_K_CHOICE)
            pf_buf_put(b, "%s", f);            /* a word of a fixed vocabulary: safe unquoted */
        else
            put_str(b, f);
        return;
    case PF_K_ENUM:
        put_choice(b, k->choices, *(const int *)f);
        return;
    case PF_K_INT_LIST:
    case PF_K_INT64_LIST:
    case PF_K_FLOAT_LIST:
    case PF_K_DOUBLE_LIST:
    case PF_K_ENUM_LIST: {
        int n = k->count_offset ? *(const int *)(base + k->count_offset) : k->min_n;
        pf_buf_put(b, "[");
        for (int i = 0; i < n; i++) {
            pf_buf_put(b, i ? ", " : "");
            if (k->kind == PF_K_DOUBLE_LIST)
                put_double(b, ((const double *)f)[i]);
            else if (k->kind == PF_K_ENUM_LIST)
                put_choice(b, k->choices, ((const int *)f)[i]);
            else if (k->kind == PF_K_INT_LIST)
                pf_buf_put(b, "%d", ((const int *)f)[i]);
            else if (k->kind == PF_K_INT64_LIST)
                pf_buf_put(b, "%lld", (long long)((const int64_t *)f)[i]);
            else
                put_float(b, ((const float *)f)[i]);
        }
        pf_buf_put(b, "]");
        return;
    }
    case PF_K_CUSTOM: {
        const pf_config *cfg = (const pf_config *)base;
        if (k->custom == PF_KC_METRICS)
            pf_buf_put(b, "[%s%s%s]", cfg->eval_psnr ? "PSNR" : "",
                       cfg->eval_psnr && cfg->eval_ssim ? ", " : "", cfg->eval_ssim ? "SSIM" : "");
        else if (k->custom == PF_KC_CONVERT_TO)
            pf_buf_put(b, "%s", cfg->eval_y_channel ? "y" : raw ? "" : "null");
        else if (k->custom == PF_KC_NAMES || k->custom == PF_KC_CLIPS)
            put_clips(b, k, (const pf_dataset_cfg *)(base + k->offset));
        else if (k->custom == PF_KC_LAYER_WEIGHTS)
            put_layer_weights(b, (const pf_perceptual_opts *)(base + k->offset));
        return;
    }
    case PF_K_SECTION:
        return;
    }
}

/* 1 when row `k` holds different values at `a` and `b` (two configs). */
static int field_differs(const pf_config_key *k, const char *a, const char *b) {
    a += k->offset;
    b += k->offset;
    size_t n = sizeof(int);
    switch (k->kind) {
    case PF_K_STR:
    case PF_K_PATH:
    case PF_K_CHOICE:
        return strcmp(a, b) != 0;
    case PF_K_INT64:
    case PF_K_INT64_LIST:
        n = sizeof(int64_t);
        break;
    case PF_K_FLOAT:
    case PF_K_FLOAT_LIST:
        n = sizeof(float);
        break;
    case PF_K_DOUBLE:
    case PF_K_DOUBLE_LIST:
        n = sizeof(double);
        break;
    default:
        break;
    }
    switch (k->kind) {          /* lists: every item */
    case PF_K_INT_LIST:
    case PF_K_INT64_LIST:
    case PF_K_FLOAT_LIST:
    case PF_K_DOUBLE_LIST:
    case PF_K_ENUM_LIST:
        n *= k->size;
        break;
    case PF_K_SECTION:
        if (!k->offset)
            return 0;
        break;
    default:
        break;
    }
    return memcmp(a, b, n) != 0;
}

/* Rows of a `*` section (one custom key) hold offsets inside the item, not the config. */
int pf_cfg_item_row(const pf_config_key *k) {
    return strstr(k->path, ".*.") != NULL;
}

/* 1 when some key below section `sec` differs between configs `a` and `b`. */
static int section_changed(const pf_config_key *sec, const char *a, const char *b) {
    size_t n = strlen(sec->path);
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!strncmp(k->path, sec->path, n) && k->path[n] == '.' && !pf_cfg_item_row(k) &&
            !(k->flags & PF_KF_NO_STORE) && field_differs(k, a, b))
            return 1;
    }
    return 0;
}

/* One item of a block list (a degradation step): the rows of section `rows` that apply to it,
   the first after "- ". */
static void write_item(pf_buf *b, const char *rows, int depth, const char *item) {
    int first = 1;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!pf_config_key_in(k, rows) || !pf_cfg_applies(item, k))
            continue;
        pf_buf_put(b, "%*s%s%s: ", 2 * depth, "", first ? "- " : "  ", pf_config_key_name(k));
        put_value(b, k, item, 0);
        pf_buf_put(b, "\n");
        first = 0;
    }
}

/* The keys of section `sec` at indentation `depth`, from `base` (the config or an item);
   `def`: the same at its defaults, for PF_KF_IF_CHANGED. */
static void write_rows(pf_buf *b, const pf_config *cfg, const char *sec, int depth,
                       const char *base, const char *def) {
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!pf_config_key_in(k, sec) || (k->flags & PF_KF_NO_WRITE) || !pf_cfg_applies(base, k) ||
            ((k->flags & PF_KF_TRAIN_ONLY) && strcmp(sec, "data.train")))
            continue;
        const char *name = pf_config_key_name(k);
        int at = 2 * depth;
        if (k->kind == PF_K_SECTION) {
            if ((k->offset && !*(const int *)(base + k->offset)) ||
                ((k->flags & PF_KF_IF_CHANGED) && !section_changed(k, base, def)))
                continue;
            pf_buf_put(b, "%*s%s:\n", at, "", name);
            write_rows(b, cfg, k->path, depth + 1, base, def);
            continue;
        }
        if ((k->flags & PF_KF_IF_CHANGED) && !field_differs(k, base, def))
            continue;
        if (k->custom == PF_KC_CLIPS || k->custom == PF_KC_NAMES) {
            const pf_dataset_cfg *d = (const pf_dataset_cfg *)(base + k->offset);
            if (k->custom == PF_KC_CLIPS ? d->n_clips == 0 : d->n_val_partition == 0)
                continue;
        }
        if (k->custom == PF_KC_DEGRADATION) {
            const pf_dataset_cfg *d = (const pf_dataset_cfg *)(base + k->offset);
            char rows[96];
            snprintf(rows, sizeof rows, "%s.*", k->path);
            if (d->n_degradations)
                pf_buf_put(b, "%*s%s:\n", at, "", name);
            for (int j = 0; j < d->n_degradations; j++)
                write_item(b, rows, depth + 1, (const char *)&d->degradation[j]);
            continue;
        }
        if (k->custom == PF_KC_CUSTOM_KEYS) {
            static const char *items = "optimizers.paramwise_cfg.custom_keys.*";
            pf_custom_key dk = {0};             /* an item at its defaults */
            for (int r = 0; r < pf_config_n_keys; r++)
                if (pf_config_key_in(&pf_config_keys[r], items))
                    pf_cfg_set_default(&pf_config_keys[r], (char *)&dk);
            if (cfg->n_custom_keys)
                pf_buf_put(b, "%*s%s:\n", at, "", name);
            for (int j = 0; j < cfg->n_custom_keys; j++) {
                pf_buf_put(b, "%*s'%s':\n", at + 2, "", cfg->custom_keys[j].key);
                write_rows(b, cfg, items, depth + 2, (const char *)&cfg->custom_keys[j],
                           (const char *)&dk);
            }
            continue;
        }
        pf_buf_put(b, "%*s%s: ", at, "", name);
        put_value(b, k, base, 0);
        pf_buf_put(b, "\n");
    }
}

char *pf_config_to_yaml(const pf_config *cfg) {
    pf_buf b;
    if (pf_buf_init(&b))
        return NULL;
    pf_config *def = malloc(sizeof *def);
    if (!def) {
        free(b.s);
        return NULL;
    }
    pf_config_defaults(def);
    write_rows(&b, cfg, "", 0, (const char *)cfg, (const char *)def);
    free(def);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

int pf_config_get(const pf_config *cfg, const char *path, char *out, size_t size) {
    const pf_config_key *k = pf_config_key_find(path);
    if (!k || k->kind == PF_K_SECTION || pf_cfg_item_row(k) || k->custom == PF_KC_DEGRADATION ||
        k->custom == PF_KC_CUSTOM_KEYS || size == 0)
        return -1;
    pf_buf b;
    if (pf_buf_init(&b))
        return -1;
    put_value(&b, k, (const char *)cfg, 1);
    int rc = b.oom ? -1 : 0;
    if (!rc)
        snprintf(out, size, "%s", b.s);
    free(b.s);
    return rc;
}
