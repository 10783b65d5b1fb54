/*  config — YAML to pf_config, with strict validation, driven by the key table.

    How the pieces fit: pf_config_parse builds a YAML tree (common/yaml_tree.h, on libyaml),
    then `walk`s it with the table of keys (common/config_keys.h): each key of a mapping must
    have a row in that section (else "unknown key", with the nearest key or another framework's
    meaning); the row's kind converts the value (the typed getters of common/config_get.c
    report a wrong type or range) into the row's field; required keys of the section must be
    there, and those with a `required_when` where their when_key says so ("missing: policy
    Step needs it"). Lists of mappings (clips, degradation steps) and custom_keys walk each
    item with the rows of their `*` section; metrics and convert_to have code of their own.
    After the walk: keys given where their `when` says they do not apply, then `rules` (every
    check and default that involves more than one key, in one place), then on load the
    paths. The first error wins: it is formatted `file:line: key.path: what is wrong`
    into the caller's buffer and parsing stops.

    Line numbers: every node has the line it starts on; a missing key is reported at the key
    that opened its section (line 1 for top-level keys).

    pf_config_defaults sets each row's default. The resolved YAML is written by
    common/config_write.c, docs/config.md's key tables by common/config_docs.c; what the
    files share is common/config_impl.h.
*/
#include "common/config.h"

#include "common/config_impl.h"
#include "common/frame_indices.h"
#include "common/networks.h"
#include "common/realesrgan_cfg.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PF_CONFIG_MAX_BYTES (1 << 20)   /* = PF_MAX_CONFIG: the file must fit a WELCOME */

/* ---- section walking ------------------------------------------------------------------ */

/* A mapping section: its node, the key node that opened it (for "missing" errors) and its
   dotted prefix ("" at the top level). */
typedef struct {
    const pf_ynode *map;
    const pf_ynode *opener;
    char prefix[64];
} pf_section;

static int section_line(const pf_section *s) {
    return s->opener ? node_line(s->opener) : 1;
}

/* Full key path of `name` inside section `s` into `out`. */
static const char *keypath(const pf_section *s, const char *name, char *out, size_t size) {
    snprintf(out, size, "%s%s%s", s->prefix, s->prefix[0] ? "." : "", name);
    return out;
}

/* Open `value` (under key node `key`, named `path`) as a section; error when not a mapping. */
static int open_section(pf_cfg_ctx *c, const pf_ynode *key, const pf_ynode *value,
                        const char *path, pf_section *out) {
    char g[96];
    if (!value || ytype(value) != PF_Y_MAPPING)
        return pf_cfg_fail(c, node_line(value) ? node_line(value) : node_line(key), path,
                           "expected a mapping, got %s", pf_cfg_describe(value, g, sizeof g));
    out->map = value;
    out->opener = key;
    snprintf(out->prefix, sizeof out->prefix, "%s", path);
    return 0;
}

/* Next pair of a section: key text in `name`; -1 with an error when the key is not a plain
   string. Returns 1 when a pair was produced, 0 at the end. */
static int next_pair(pf_cfg_ctx *c, const pf_section *s, void **it, char *name, size_t size,
                     const pf_ynode **key, const pf_ynode **value) {
    intptr_t i = (intptr_t)*it;     /* the iterator is the pair's index */
    if (2 * i + 1 >= s->map->n)
        return 0;
    *key = s->map->kid[2 * i];
    *value = s->map->kid[2 * i + 1];
    *it = (void *)(i + 1);
    char kp[128], g[64];
    if (!*key || ytype(*key) != PF_Y_SCALAR || pf_cfg_scalar_copy(*key, name, size)) {
        pf_cfg_fail(c, node_line(*key) ? node_line(*key) : section_line(s),
                    keypath(s, "?", kp, sizeof kp), "unknown key %s",
                    pf_cfg_describe(*key, g, sizeof g));
        return -1;
    }
    return 1;
}

/* "unknown key", with the nearest key of section `sec` or the PixFlow name of another
   framework's key (common/config_keys.h). */
/* "unknown key", with the nearest key of the section or the PixFlow name of another
   framework's key (common/config_keys.h). `sec`: the section's row path. */
static int unknown(pf_cfg_ctx *c, const pf_section *s, const char *sec, const pf_ynode *key,
                   const char *name) {
    char kp[128], hint[320];
    return pf_cfg_fail(c, node_line(key), keypath(s, name, kp, sizeof kp), "unknown key%s",
                       pf_config_unknown_hint(sec, name, hint, sizeof hint));
}

static int missing(pf_cfg_ctx *c, const pf_section *s, const char *name) {
    char kp[128];
    return pf_cfg_fail(c, section_line(s), keypath(s, name, kp, sizeof kp),
                       "required key is missing");
}

/* ---- paths ----------------------------------------------------------------------------- */

static int check_dir(pf_cfg_ctx *c, int line, const char *key, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0)
        return pf_cfg_fail(c, line, key, "no such directory '%s'", dir);
    if (!S_ISDIR(st.st_mode))
        return pf_cfg_fail(c, line, key, "not a directory: '%s'", dir);
    return 0;
}

static int check_file(pf_cfg_ctx *c, int line, const char *key, const char *file) {
    struct stat st;
    if (stat(file, &st) != 0)
        return pf_cfg_fail(c, line, key, "no such file '%s'", file);
    if (!S_ISREG(st.st_mode))
        return pf_cfg_fail(c, line, key, "not a regular file: '%s'", file);
    return 0;
}


/* ---- the walk: the key table (common/config_keys.h) applied to the tree ---------------- */

#define PF_CONFIG_MAX_KEYS 512          /* rows of pf_config_keys (checked at parse) */

/* Where each row's key was in the file, for the checks after the walk. */
typedef struct {
    int line[PF_CONFIG_MAX_KEYS];       /* line of the key, 0 = absent; by row index */
    unsigned char alias[PF_CONFIG_MAX_KEYS]; /* 1: given under the row's alias */
} pf_lines;

static int row_index(const pf_config_key *k) {
    return (int)(k - pf_config_keys);
}

/* The row of `path`; the table and the code that names rows must agree (a test runs every
   rule), so a missing row is a programming error. */
const pf_config_key *pf_cfg_row(const char *path) {
    const pf_config_key *k = pf_config_key_find(path);
    if (!k) {
        fprintf(stderr, "common/config.c: no row '%s' in pf_config_keys\n", path);
        abort();
    }
    return k;
}

/* Line of the key at `path` in the file, 0 when absent. */
static int line_of(const pf_lines *L, const char *path) {
    return L->line[row_index(pf_cfg_row(path))];
}

/* `path` with its last part as the user wrote it (the alias, if that was used). */
static const char *given_path(const pf_lines *L, const pf_config_key *k, char *out, size_t n) {
    if (!L->alias[row_index(k)])
        return k->path;
    const char *name = pf_config_key_name(k);
    snprintf(out, n, "%.*s%s", (int)(name - k->path), k->path, k->alias);
    return out;
}


/* One list item or scalar of an integer row into `*out`, with the row's range and oddness. */
static int get_row_int(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *n, const char *kp,
                       int64_t *out) {
    if (pf_cfg_get_int(c, n, kp, pf_cfg_bound64(k->lo), pf_cfg_bound64(k->hi), out))
        return -1;
    if ((k->flags & PF_KF_ODD) && *out % 2 == 0)
        return pf_cfg_fail(c, node_line(n), kp, "must be odd, got %lld", (long long)*out);
    if (k->choices) {
        char s[24], list[160];
        snprintf(s, sizeof s, "%lld", (long long)*out);
        if (!pf_cfg_in_choices(k->choices, s))
            return pf_cfg_fail(c, node_line(n), kp, "must be %s, got %s",
                               pf_cfg_or_list(k->choices, list, sizeof list), s);
    }
    return 0;
}

static int get_row_float(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *n,
                         const char *kp, float *out) {
    return pf_cfg_get_float(c, n, kp, k->lo, (k->flags & PF_KF_LO_OPEN) != 0,
                     k->hi >= 1e300 ? HUGE_VAL : k->hi, (k->flags & PF_KF_HI_OPEN) != 0, out);
}

static int get_row_double(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *n,
                          const char *kp, double *out) {
    return pf_cfg_get_double(c, n, kp, k->lo, (k->flags & PF_KF_LO_OPEN) != 0,
                             k->hi >= 1e300 ? HUGE_VAL : k->hi, (k->flags & PF_KF_HI_OPEN) != 0,
                             out);
}

/* An item of a PF_K_ENUM_LIST row: the index of its value in the row's choices. */
static int get_row_enum(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *n,
                        const char *kp, int *out) {
    char store[PF_MAX_CHOICES][48], got[48];
    const char *choices[PF_MAX_CHOICES + 1];
    pf_cfg_split_choices(k->choices, store, choices);
    if (pf_cfg_get_choice(c, n, kp, choices, 0, got, sizeof got))
        return -1;
    for (int i = 0; choices[i]; i++)
        if (!strcmp(choices[i], got))
            *out = i;
    return 0;
}

/* A PF_KF_RANGE row: a number x ([x, x]) or [lo, hi] with lo <= hi, each in the row's range,
   into the field and the one after it; an int row takes whole numbers. */
static int get_row_range(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *v,
                         const char *kp, void *f) {
    float r[2];
    const pf_ynode *items[2];
    int n;
    char ip[160];
    if (ytype(v) != PF_Y_SEQUENCE) {
        if (get_row_float(c, k, v, kp, &r[0]))
            return -1;
        r[1] = r[0];
    } else {
        if (pf_cfg_get_seq(c, v, kp, 2, 2, &n, items))
            return -1;
        for (int i = 0; i < 2; i++)
            if (get_row_float(c, k, items[i], (snprintf(ip, sizeof ip, "%s[%d]", kp, i), ip),
                              &r[i]))
                return -1;
        if (r[0] > r[1])
            return pf_cfg_fail(c, node_line(v), kp, "range [%g, %g] is empty", r[0], r[1]);
    }
    if (k->kind == PF_K_FLOAT) {
        memcpy(f, r, sizeof r);
        return 0;
    }
    if (r[0] != (int)r[0] || r[1] != (int)r[1])
        return pf_cfg_fail(c, node_line(v), kp, "expected integers in [%g, %g]", k->lo, k->hi);
    ((int *)f)[0] = (int)r[0];
    ((int *)f)[1] = (int)r[1];
    return 0;
}

/* A list row: min_n..size items, each an int or float of the row's range. */
static int get_row_list(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *v, const char *kp,
                        char *base) {
    const pf_ynode *items[64];
    int n = 0;
    if (pf_cfg_get_seq(c, v, kp, k->min_n, (int)k->size, &n, items))
        return -1;
    for (int i = 0; i < n; i++) {
        char ip[160];
        int64_t x;
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (k->kind == PF_K_FLOAT_LIST) {
            if (get_row_float(c, k, items[i], ip, (float *)(base + k->offset) + i))
                return -1;
            continue;
        }
        if (k->kind == PF_K_DOUBLE_LIST) {
            if (get_row_double(c, k, items[i], ip, (double *)(base + k->offset) + i))
                return -1;
            continue;
        }
        if (k->kind == PF_K_ENUM_LIST) {
            if (get_row_enum(c, k, items[i], ip, (int *)(base + k->offset) + i))
                return -1;
            continue;
        }
        if (get_row_int(c, k, items[i], ip, &x))
            return -1;
        if (k->kind == PF_K_INT_LIST)
            ((int *)(base + k->offset))[i] = (int)x;
        else
            ((int64_t *)(base + k->offset))[i] = x;
        if ((k->flags & PF_KF_INCREASING) && i > 0 &&
            x <= ((int64_t *)(base + k->offset))[i - 1])
            return pf_cfg_fail(c, node_line(items[i]), ip, "must be greater than the item before "
                               "(the list is strictly increasing)");
    }
    if (k->count_offset)
        *(int *)(base + k->count_offset) = n;
    return 0;
}

/* One scalar or list key of row `k` from value node `v` (named `kp`) into `base`. */
static int parse_leaf(pf_cfg_ctx *c, const pf_config_key *k, const pf_ynode *v, const char *kp,
                      char *base) {
    char scratch[PF_PATH_MAX];
    void *f = (k->flags & PF_KF_NO_STORE) ? (void *)scratch : base + k->offset;
    size_t size = (k->flags & PF_KF_NO_STORE) ? sizeof scratch : k->size;
    int64_t x;
    char store[PF_MAX_CHOICES][48];
    const char *choices[PF_MAX_CHOICES + 1];
    if (k->flags & PF_KF_RANGE)
        return get_row_range(c, k, v, kp, f);
    switch (k->kind) {
    case PF_K_INT:
    case PF_K_INT64:
        if ((k->flags & PF_KF_NULL) && pf_cfg_is_null(v))
            x = strtoll(k->def, NULL, 10);  /* null: the default (center_frame_idx: ~) */
        else if (get_row_int(c, k, v, kp, &x))
            return -1;
        if (k->kind == PF_K_INT)
            *(int *)f = (int)x;
        else
            *(int64_t *)f = x;
        return 0;
    case PF_K_FLOAT:
        if (get_row_float(c, k, v, kp, (float *)f))
            return -1;
        if ((k->flags & PF_KF_NO_STORE) && k->def && *(float *)f != strtof(k->def, NULL))
            return pf_cfg_fail(c, node_line(v), kp, "%s", k->doc);   /* norm_type: only 2 */
        return 0;
    case PF_K_DOUBLE:
        return get_row_double(c, k, v, kp, (double *)f);
    case PF_K_BOOL:
        return pf_cfg_get_bool(c, v, kp, (int *)f);
    case PF_K_STR:
    case PF_K_PATH:
        if ((k->flags & PF_KF_NULL) && pf_cfg_is_null(v)) {
            ((char *)f)[0] = 0;
            return 0;
        }
        if (pf_cfg_get_str(c, v, kp, f, size))
            return -1;
        if (!((char *)f)[0] && (k->flags & (PF_KF_NONEMPTY | PF_KF_NULL)))
            return pf_cfg_fail(c, node_line(v), kp, "must not be empty%s",
                               (k->flags & PF_KF_NULL) ? " (use null for none)" : "");
        return 0;
    case PF_K_CHOICE:
    case PF_K_ENUM:
        if ((k->flags & PF_KF_NULL) && pf_cfg_is_null(v)) {
            ((char *)f)[0] = 0;
            return 0;
        }
        pf_cfg_split_choices(k->choices, store, choices);
        if (k->kind == PF_K_CHOICE)
            return pf_cfg_get_choice(c, v, kp, choices, (k->flags & PF_KF_NOCASE) != 0, f, size);
        if (pf_cfg_get_choice(c, v, kp, choices, 0, scratch, sizeof scratch))
            return -1;
        for (int i = 0; choices[i]; i++)
            if (!strcmp(choices[i], scratch))
                *(int *)f = i;
        return 0;
    case PF_K_INT_LIST:
    case PF_K_INT64_LIST:
    case PF_K_FLOAT_LIST:
    case PF_K_DOUBLE_LIST:
    case PF_K_ENUM_LIST:
        return get_row_list(c, k, v, kp, base);
    case PF_K_SECTION:
    case PF_K_CUSTOM:
        break;
    }
    return -1;
}

static int walk(pf_cfg_ctx *c, pf_lines *L, const pf_section *s, const char *sec, char *base,
                pf_config *cfg);
static const char *choice_value(const char *base, const pf_config_key *k);
static int parse_custom(pf_cfg_ctx *c, pf_lines *L, const pf_config_key *k, const pf_ynode *key,
                        const pf_ynode *v, const char *kp, char *base, pf_config *cfg);

/* The row of key `name` in section `sec` (by name or alias); sets *alias. A `*` section may
   have rows of one name for different values of its `when_key` (a degradation step's sigma):
   the one that applies to the item at `base` wins. */
static const pf_config_key *child(const char *sec, const char *name, int *alias,
                                  const char *base) {
    const pf_config_key *found = NULL;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!pf_config_key_in(k, sec))
            continue;
        *alias = k->alias && !strcmp(k->alias, name);
        if (*alias || !strcmp(pf_config_key_name(k), name)) {
            if (!pf_cfg_item_row(k) || pf_cfg_applies(base, k))
                return k;
            found = found ? found : k;
        }
    }
    *alias = 0;
    return found;
}

/* Walk the mapping `s` of section `sec` (a row path, "" for the top level) into `base`
   (the config, or one item for the rows of a `*` section): every key must have a row; the
   value is converted by the row's kind; required keys of the section must be there. */
static int walk(pf_cfg_ctx *c, pf_lines *L, const pf_section *s, const char *sec, char *base,
                pf_config *cfg) {
    void *it = NULL;
    char name[64], kp[160], other[160];
    const pf_ynode *key, *v;
    int r, alias;
    while ((r = next_pair(c, s, &it, name, sizeof name, &key, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        const pf_config_key *k = child(sec, name, &alias, base);
        if (!k)
            return unknown(c, s, sec, key, name);
        if (pf_cfg_item_row(k) && !pf_cfg_applies(base, k))   /* the item's own `when` */
            return pf_cfg_fail(c, node_line(key), kp, "not a parameter of %s %s",
                               pf_config_key_name(pf_cfg_row(k->when_key)),
                               choice_value(base, pf_cfg_row(k->when_key)));
        int i = row_index(k);
        if (k->alias && L->line[i])
            return pf_cfg_fail(c, node_line(key), kp, "same setting as %s (line %d); give only one",
                               given_path(L, k, other, sizeof other), L->line[i]);
        if ((k->flags & PF_KF_TRAIN_ONLY) && strcmp(sec, "data.train"))
            return pf_cfg_fail(c, node_line(key), kp, "only allowed in data.train");
        L->line[i] = node_line(key);
        L->alias[i] = (unsigned char)alias;
        if (k->kind == PF_K_SECTION) {
            pf_section sub;
            if ((k->flags & PF_KF_NULL) && pf_cfg_is_null(v))
                continue;
            if (open_section(c, key, v, kp, &sub))
                return -1;
            if (k->offset)
                *(int *)(base + k->offset) = 1;
            if (walk(c, L, &sub, k->path, base, cfg))
                return -1;
        } else if (k->kind == PF_K_CUSTOM) {
            if (parse_custom(c, L, k, key, v, kp, base, cfg))
                return -1;
        } else if (parse_leaf(c, k, v, kp, base)) {
            return -1;
        }
    }
    if (r < 0)
        return -1;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!pf_config_key_in(k, sec) || L->line[i] || !pf_cfg_applies(base, k))
            continue;
        if ((k->flags & PF_KF_REQUIRED) && !(k->flags & PF_KF_TO_TRAIN))
            return missing(c, s, pf_config_key_name(k));
        const pf_config_key *sel = k->required_when ? pf_cfg_row(k->when_key) : NULL;
        if (sel && pf_cfg_in_choices(k->required_when, choice_value(base, sel)))
            return pf_cfg_fail(c, section_line(s), keypath(s, pf_config_key_name(k), kp, sizeof kp),
                               "missing: %s %s needs it", pf_config_key_name(sel),
                               choice_value(base, sel));
    }
    return 0;
}

/* A row's default (`def`, as YAML writes it) into `base`; the text is the table's own. */
/* A PF_K_ENUM_LIST row's default, "[iso, aniso]": each name's index in the choices. */
static void set_enum_list_default(const pf_config_key *k, char *base) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    pf_cfg_split_choices(k->choices, store, v);
    int n = 0;
    for (const char *p = k->def + 1; *p && *p != ']' && n < (int)k->size; n++) {
        size_t len = strcspn(p, ", ]");
        for (int i = 0; v[i]; i++)
            if (strlen(v[i]) == len && !strncmp(v[i], p, len))
                ((int *)(base + k->offset))[n] = i;
        p += len;
        p += strspn(p, ", ");
    }
    if (k->count_offset)
        *(int *)(base + k->count_offset) = n;
}

void pf_cfg_set_default(const pf_config_key *k, char *base) {
    const char *d = k->def;
    if (!d || (k->flags & PF_KF_NO_STORE) || k->kind == PF_K_SECTION)
        return;
    void *f = base + k->offset;
    int null = !strcmp(d, "null");
    switch (k->kind) {
    case PF_K_INT:
        *(int *)f = (int)strtol(d, NULL, 10);
        if (k->flags & PF_KF_RANGE)
            ((int *)f)[1] = *(int *)f;
        break;
    case PF_K_INT64:
        *(int64_t *)f = strtoll(d, NULL, 10);
        break;
    case PF_K_FLOAT:
        *(float *)f = strtof(d, NULL);
        if (k->flags & PF_KF_RANGE)
            ((float *)f)[1] = *(float *)f;
        break;
    case PF_K_DOUBLE:
        *(double *)f = strtod(d, NULL);
        break;
    case PF_K_BOOL:
        *(int *)f = !strcmp(d, "true");
        break;
    case PF_K_STR:
    case PF_K_PATH:
    case PF_K_CHOICE: {
        size_t len = strlen(d);
        if (null)
            d = "", len = 0;
        else if (d[0] == '\'')
            d++, len -= 2;
        snprintf(f, k->size, "%.*s", (int)len, d);
        break;
    }
    case PF_K_ENUM: {
        char store[PF_MAX_CHOICES][48];
        const char *v[PF_MAX_CHOICES + 1];
        pf_cfg_split_choices(k->choices, store, v);
        for (int i = 0; v[i]; i++)
            if (!strcmp(v[i], d))
                *(int *)f = i;
        break;
    }
    case PF_K_ENUM_LIST:
        set_enum_list_default(k, base);
        break;
    case PF_K_INT_LIST:
    case PF_K_INT64_LIST:
    case PF_K_FLOAT_LIST:
    case PF_K_DOUBLE_LIST: {
        int n = 0;
        for (const char *p = d + 1; *p && *p != ']' && n < (int)k->size; n++) {
            char *end;
            double x = strtod(p, &end);
            if (k->kind == PF_K_DOUBLE_LIST)
                ((double *)f)[n] = x;
            else if (k->kind == PF_K_INT_LIST)
                ((int *)f)[n] = (int)x;
            else if (k->kind == PF_K_INT64_LIST)
                ((int64_t *)f)[n] = (int64_t)x;
            else
                ((float *)f)[n] = strtof(p, NULL);
            p = end + strspn(end, ", ");
        }
        if (k->count_offset)
            *(int *)(base + k->count_offset) = n;
        break;
    }
    case PF_K_CUSTOM:
        if (k->custom == PF_KC_METRICS) {
            ((pf_config *)base)->eval_psnr = ((pf_config *)base)->eval_ssim = 1;
        }
        break;
    case PF_K_SECTION:
        break;
    }
}

/* The current value of a CHOICE / ENUM / BOOL row as text ("null" when empty), for `when`. */
static const char *choice_value(const char *base, const pf_config_key *k) {
    if (k->kind == PF_K_BOOL)
        return *(const int *)(base + k->offset) ? "true" : "false";
    const char *s = base + k->offset;
    return s[0] ? s : "null";
}

int pf_cfg_applies(const char *base, const pf_config_key *k) {
    return !k->when_key || !k->when ||
           pf_cfg_in_choices(k->when, choice_value(base, pf_cfg_row(k->when_key)));
}

/* After the walk: the first key (in the file) given where it does not apply. */
static int check_when(pf_cfg_ctx *c, const pf_lines *L, const pf_config *cfg) {
    const pf_config_key *bad = NULL;
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (L->line[i] && !pf_cfg_item_row(k) && !pf_cfg_applies((const char *)cfg, k) &&
            (!bad || L->line[i] < L->line[row_index(bad)]))
            bad = k;
    }
    if (!bad)
        return 0;
    const pf_config_key *sel = pf_cfg_row(bad->when_key);
    char list[200], path[160], section[160], hint[400];
    /* A key of another framework's meaning here (BasicSR's use_hflip in an image set) gets
       the PixFlow name too. */
    snprintf(section, sizeof section, "%.*s", (int)(pf_config_key_name(bad) - bad->path - 1),
             bad->path);
    pf_config_unknown_hint(section, pf_config_key_name(bad), hint, sizeof hint);
    return pf_cfg_fail(c, L->line[row_index(bad)], given_path(L, bad, path, sizeof path),
                       "only allowed with %s %s (%s is %s)%s", pf_config_key_name(sel),
                       pf_cfg_or_list(bad->when, list, sizeof list), sel->path,
                       choice_value((const char *)cfg, sel),
                       strncmp(hint, "; PixFlow calls this", 20) ? "" : hint);
}

/* ---- keys with code of their own ---------------------------------------------------- */

/* optimizers.paramwise_cfg.custom_keys: {NAME: {lr_mult: X, decay_mult: Y}} (MMCV); each
   item is walked with the rows "optimizers.paramwise_cfg.custom_keys.*.KEY". */
static int parse_custom_keys(pf_cfg_ctx *c, pf_lines *L, const pf_ynode *key, const pf_ynode *v,
                             const char *kp, pf_config *cfg) {
    static const char *name_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_.";
    static const char *items = "optimizers.paramwise_cfg.custom_keys.*";
    pf_section keys;
    if (open_section(c, key, v, kp, &keys))
        return -1;
    void *it = NULL;
    char name[64], ip[192];
    const pf_ynode *k2, *v2;
    int r;
    while ((r = next_pair(c, &keys, &it, name, sizeof name, &k2, &v2)) > 0) {
        snprintf(ip, sizeof ip, "%s.%s", kp, name);
        if (!name[0] || strspn(name, name_chars) != strlen(name))
            return pf_cfg_fail(c, node_line(k2), ip, "a parameter-name part is made of letters, "
                               "digits, '_' and '.'");
        if (cfg->n_custom_keys == PF_MAX_CUSTOM_KEYS)
            return pf_cfg_fail(c, node_line(k2), ip, "at most %d custom keys", PF_MAX_CUSTOM_KEYS);
        pf_custom_key *ck = &cfg->custom_keys[cfg->n_custom_keys++];
        snprintf(ck->key, sizeof ck->key, "%s", name);
        pf_section one;
        if (open_section(c, k2, v2, ip, &one))
            return -1;
        for (int i = 0; i < pf_config_n_keys; i++) {
            if (pf_config_key_in(&pf_config_keys[i], items)) {
                pf_cfg_set_default(&pf_config_keys[i], (char *)ck);
                L->line[i] = 0;
            }
        }
        if (walk(c, L, &one, items, (char *)ck, cfg))
            return -1;
    }
    return r < 0 ? -1 : 0;
}

/* One item of a list of mappings (clips, degradation steps), `ip` its path, with the rows of
   section `rows` ("data.train.clips.*") into `base`: the key the other rows' `when` reads
   (a step's type) first, then the rows that apply at their defaults, then the walk. */
static int walk_item(pf_cfg_ctx *c, pf_lines *L, const char *rows, const pf_ynode *item,
                     const char *ip, char *base, pf_config *cfg) {
    pf_section one;
    char kp[192];
    if (open_section(c, item, item, ip, &one))
        return -1;
    for (int r = 0; r < pf_config_n_keys; r++) {
        const pf_config_key *k = &pf_config_keys[r], *sel;
        if (!pf_config_key_in(k, rows) || !k->when_key)
            continue;
        sel = pf_cfg_row(k->when_key);
        const pf_ynode *v = pf_ynode_get(item, pf_config_key_name(sel));
        if (!v)
            return missing(c, &one, pf_config_key_name(sel));
        if (parse_leaf(c, sel, v, keypath(&one, pf_config_key_name(sel), kp, sizeof kp), base))
            return -1;
        break;
    }
    for (int r = 0; r < pf_config_n_keys; r++) {
        if (pf_config_key_in(&pf_config_keys[r], rows)) {
            if (pf_cfg_applies(base, &pf_config_keys[r]))
                pf_cfg_set_default(&pf_config_keys[r], base);
            L->line[r] = 0;
        }
    }
    return walk(c, L, &one, rows, base, cfg);
}

/* data.*.clips: a list of mappings, each walked with the rows "data.SET.clips.*.KEY". */
static int parse_clips(pf_cfg_ctx *c, pf_lines *L, const pf_config_key *k, const pf_ynode *v,
                       const char *kp, pf_dataset_cfg *d, pf_config *cfg) {
    const pf_ynode *items[PF_MAX_CLIPS];
    char rows[96], ip[192];
    snprintf(rows, sizeof rows, "%s.*", k->path);
    if (pf_cfg_get_seq(c, v, kp, 1, PF_MAX_CLIPS, &d->n_clips, items))
        return -1;
    for (int i = 0; i < d->n_clips; i++) {
        pf_clip_cfg *clip = &d->clips[i];
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (walk_item(c, L, rows, items[i], ip, (char *)clip, cfg))
            return -1;
        for (int j = 0; j < i; j++)
            if (!strcmp(d->clips[j].name, clip->name) &&
                d->clips[j].frames[0] == clip->frames[0] &&
                d->clips[j].frames[1] == clip->frames[1])
                return pf_cfg_fail(c, node_line(items[i]), ip,
                                   "the same clip and frames as item %d", j);
    }
    return 0;
}

/* data.*.degradation: a list of steps, each walked with the rows "data.SET.degradation.*.KEY";
   the first step downscales (BI, BD or DN), JPEG may follow. */
static int parse_degradation(pf_cfg_ctx *c, pf_lines *L, const pf_config_key *k,
                             const pf_ynode *v, const char *kp, pf_dataset_cfg *d,
                             pf_config *cfg) {
    const pf_ynode *items[PF_MAX_DEGRADATIONS];
    char rows[96], ip[160];
    int n;
    snprintf(rows, sizeof rows, "%s.*", k->path);
    if (pf_cfg_get_seq(c, v, kp, 1, 2, &n, items))
        return -1;
    for (int i = 0; i < n; i++) {
        pf_degradation *g = &d->degradation[i];
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (walk_item(c, L, rows, items[i], ip, (char *)g, cfg))
            return -1;
        if (!strcmp(g->type, "BD"))
            g->sigma_max = g->sigma;    /* one blur for every sample */
        int down = strcmp(g->type, "JPEG") != 0;
        if (i == 0 && !down)
            return pf_cfg_fail(c, node_line(items[i]), ip,
                               "the first step must downscale (BI, BD or DN), got JPEG");
        if (i > 0 && down)
            return pf_cfg_fail(c, node_line(items[i]), ip, "only one downscaling step (BI, BD "
                               "or DN) is allowed; JPEG may follow");
    }
    d->n_degradations = n;
    return 0;
}

/* data.*.val_partition: a list of clip names, no repeats. */
static int parse_names(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, pf_dataset_cfg *d) {
    const pf_ynode *items[PF_MAX_CLIPS];
    char ip[192];
    if (pf_cfg_get_seq(c, v, kp, 1, PF_MAX_CLIPS, &d->n_val_partition, items))
        return -1;
    for (int i = 0; i < d->n_val_partition; i++) {
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (pf_cfg_get_str(c, items[i], ip, d->val_partition[i], sizeof d->val_partition[i]))
            return -1;
        if (!d->val_partition[i][0])
            return pf_cfg_fail(c, node_line(items[i]), ip, "must not be empty");
        for (int j = 0; j < i; j++)
            if (!strcmp(d->val_partition[j], d->val_partition[i]))
                return pf_cfg_fail(c, node_line(items[i]), ip, "'%s' is already item %d",
                                   d->val_partition[i], j);
    }
    return 0;
}

/* evaluation.metrics: 1-2 of PSNR, SSIM, no repeats. */
static int parse_metrics(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, pf_config *cfg) {
    static const char *metrics[] = {"PSNR", "SSIM", NULL};
    const pf_ynode *items[2];
    int n;
    char tmp[8];
    if (pf_cfg_get_seq(c, v, kp, 1, 2, &n, items))
        return -1;
    cfg->eval_psnr = cfg->eval_ssim = 0;
    for (int i = 0; i < n; i++) {
        char ip[160];
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (pf_cfg_get_choice(c, items[i], ip, metrics, 0, tmp, sizeof tmp))
            return -1;
        int *flag = !strcmp(tmp, "PSNR") ? &cfg->eval_psnr : &cfg->eval_ssim;
        if (*flag)
            return pf_cfg_fail(c, node_line(items[i]), ip, "%s listed twice", tmp);
        *flag = 1;
    }
    return 0;
}

/* gan.perceptual_opt.layer_weights: {NAME: WEIGHT, ...} in file order, each pair set with
   pf_perceptual_opts_set (common/perceptual_opts.h: NAME a VGG19 layer, not twice, WEIGHT a
   number >= 0), its error at the pair's line. */
static int parse_layer_weights(pf_cfg_ctx *c, const pf_ynode *key, const pf_ynode *v,
                               const char *kp, pf_perceptual_opts *o) {
    pf_section s;
    if (open_section(c, key, v, kp, &s))
        return -1;
    o->n_layers = 0;
    void *it = NULL;
    char name[64], ip[192], opt[96], num[40], why[1024];
    const pf_ynode *k2, *v2;
    int r;
    while ((r = next_pair(c, &s, &it, name, sizeof name, &k2, &v2)) > 0) {
        snprintf(ip, sizeof ip, "%s.%s", kp, name);
        double w;
        if (pf_cfg_get_double(c, v2, ip, 0, 0, 1e300, 0, &w))
            return -1;
        snprintf(opt, sizeof opt, "layer_weights.%s", name);
        snprintf(num, sizeof num, "%.17g", w);     /* read back as the same double */
        if (pf_perceptual_opts_set(o, opt, num, why, sizeof why)) {
            const char *colon = strstr(why, ": ");
            return pf_cfg_fail(c, node_line(k2), ip, "%s", colon ? colon + 2 : why);
        }
    }
    return r < 0 ? -1 : 0;
}

static int parse_custom(pf_cfg_ctx *c, pf_lines *L, const pf_config_key *k, const pf_ynode *key,
                        const pf_ynode *v, const char *kp, char *base, pf_config *cfg) {
    static const char *convert[] = {"y", NULL};
    char tmp[8];
    switch (k->custom) {
    case PF_KC_DEGRADATION:
        return parse_degradation(c, L, k, v, kp, (pf_dataset_cfg *)(base + k->offset), cfg);
    case PF_KC_CUSTOM_KEYS:
        return parse_custom_keys(c, L, key, v, kp, cfg);
    case PF_KC_METRICS:
        return parse_metrics(c, v, kp, cfg);
    case PF_KC_CLIPS:
        return parse_clips(c, L, k, v, kp, (pf_dataset_cfg *)(base + k->offset), cfg);
    case PF_KC_NAMES:
        return parse_names(c, v, kp, (pf_dataset_cfg *)(base + k->offset));
    case PF_KC_LAYER_WEIGHTS:
        return parse_layer_weights(c, key, v, kp, (pf_perceptual_opts *)(base + k->offset));
    case PF_KC_CONVERT_TO:
        cfg->eval_y_channel = 0;
        if (pf_cfg_is_null(v))
            return 0;
        if (pf_cfg_get_choice(c, v, kp, convert, 1, tmp, sizeof tmp))
            return -1;
        cfg->eval_y_channel = 1;
        return 0;
    case PF_KC_NONE:
        break;
    }
    return -1;
}

/* ---- rules that span keys, and per-type defaults (all of them, in one place) ---------- */

/* The sliding-window sets (REDSDataset, VideoTestDataset; common/frame_indices.h): num_frame
   odd (a center frame and as many neighbours on each side); each clip of data.*.clips whose
   frame range is given holds a whole window: REDSDataset (num_frame - 1) x max(interval_list)
   + 1 frames, VideoTestDataset pf_video_min_frames(num_frame, padding). Clips without a range
   are checked when the set is opened (common/video_dataset.c). */
static int window_set_rules(pf_cfg_ctx *c, const pf_lines *L, const char *set,
                            const pf_dataset_cfg *d) {
    char kp[96];
    int train = !strcmp(d->type, "REDSDataset");
    if (!train && strcmp(d->type, "VideoTestDataset"))
        return 0;
    snprintf(kp, sizeof kp, "%s.num_frame", set);
    if (d->num_frame % 2 == 0)
        return pf_cfg_fail(c, line_of(L, kp) ? line_of(L, kp) : line_of(L, set), kp,
                           "%s takes an odd num_frame (a center frame and num_frame / 2 "
                           "neighbours on each side, as BasicSR's %s), got %d", d->type,
                           d->type, d->num_frame);
    int need = 1, max_interval = 1;
    for (int i = 0; i < d->n_intervals; i++)
        if (d->interval_list[i] > max_interval) max_interval = d->interval_list[i];
    if (train) need = (d->num_frame - 1) * max_interval + 1;
    else need = pf_video_min_frames(d->num_frame, pf_frame_padding_parse(d->padding));
    for (int i = 0; i < d->n_clips; i++) {
        const pf_clip_cfg *k = &d->clips[i];
        if (!k->frames[1] || k->frames[1] - k->frames[0] >= need)
            continue;
        snprintf(kp, sizeof kp, "%s.clips", set);
        if (train)
            return pf_cfg_fail(c, line_of(L, kp), kp,
                               "item %d (%s) has %d frames ([%d, %d)); num_frame %d with "
                               "interval %d needs %d", i, k->name, k->frames[1] - k->frames[0],
                               k->frames[0], k->frames[1], d->num_frame, max_interval, need);
        return pf_cfg_fail(c, line_of(L, kp), kp,
                           "item %d (%s) has %d frames ([%d, %d)); num_frame %d with padding "
                           "%s needs %d", i, k->name, k->frames[1] - k->frames[0],
                           k->frames[0], k->frames[1], d->num_frame, d->padding, need);
    }
    return 0;
}

/* A dataset block (data.train / eval / test, `set` its path, `idx` 0..2): its type's needs. */
/* The video sets: training types in data.train only, whole clips in eval and test;
   Vimeo-90K's 7 frames and its list of sequences. */
static int video_set_rules(pf_cfg_ctx *c, const pf_lines *L, const char *set, int idx,
                           pf_dataset_cfg *d) {
    char kp[96];
    int is_train_type = !strcmp(d->type, "REDSRecurrentDataset") ||
                        !strcmp(d->type, "Vimeo90KRecurrentDataset") ||
                        !strcmp(d->type, "RealESRGANVideoDataset") ||
                        !strcmp(d->type, "REDSDataset");
    int type_line = (snprintf(kp, sizeof kp, "%s.type", set), line_of(L, kp));
    if (is_train_type && idx != 0)
        return pf_cfg_fail(c, type_line, kp, "%s makes training samples; %s takes "
                           "VideoRecurrentTestDataset (whole clips)", d->type, set);
    if ((!strcmp(d->type, "VideoRecurrentTestDataset") || !strcmp(d->type, "VideoTestDataset")) &&
        idx == 0)
        return pf_cfg_fail(c, type_line, kp,
                           "%s is whole clips for evaluation and test; data.train takes "
                           "REDSRecurrentDataset, Vimeo90KRecurrentDataset or REDSDataset "
                           "(sliding windows)", d->type);
    if (window_set_rules(c, L, set, d))
        return -1;
    if (!strcmp(d->type, "Vimeo90KRecurrentDataset")) {
        if (!d->meta_info_file[0] && !d->n_clips)
            return pf_cfg_fail(c, line_of(L, set), "data.train.meta_info_file",
                               "Vimeo90KRecurrentDataset needs its list of sequences "
                               "(meta_info_file, e.g. sep_trainlist.txt, or clips)");
    }
    return 0;
}

/* No frame of a clip data.eval (or data.test) uses may be a frame data.train uses: clips of
   the same name given in both must have disjoint frame ranges, and a clip data.train holds
   out (val_partition) must not be listed in its own clips. */
static int held_out_rules(pf_cfg_ctx *c, const pf_lines *L, const pf_config *cfg) {
    const pf_dataset_cfg *t = &cfg->train;
    const pf_dataset_cfg *others[2] = {&cfg->eval, &cfg->test};
    static const char *names[2] = {"data.eval", "data.test"};
    if (!t->present || !pf_config_is_video_set(t->type))
        return 0;
    for (int o = 0; o < 2; o++) {
        const pf_dataset_cfg *e = others[o];
        if (!e->present || !pf_config_is_video_set(e->type) || strcmp(e->gt_folder, t->gt_folder))
            continue;
        for (int i = 0; i < e->n_clips; i++)
            for (int j = 0; j < t->n_clips; j++) {
                const pf_clip_cfg *a = &e->clips[i], *b = &t->clips[j];
                if (strcmp(a->name, b->name))
                    continue;
                int a1 = a->frames[1] ? a->frames[1] : 1 << 30;
                int b1 = b->frames[1] ? b->frames[1] : 1 << 30;
                if (a->frames[0] < b1 && b->frames[0] < a1) {
                    char kp[64];
                    snprintf(kp, sizeof kp, "%s.clips", names[o]);
                    return pf_cfg_fail(c, line_of(L, kp), kp,
                                       "item %d (%s, frames [%d, %d)) shares "
                                       "frames with data.train.clips item %d ([%d, %d)): "
                                       "evaluation "
                                       "frames must not be trained on", i, a->name, a->frames[0],
                                       a->frames[1], j, b->frames[0], b->frames[1]);
                }
            }
    }
    for (int v = 0; v < t->n_val_partition; v++)
        for (int j = 0; j < t->n_clips; j++)
            if (!strcmp(t->val_partition[v], t->clips[j].name))
                return pf_cfg_fail(c, line_of(L, "data.train.val_partition"),
                                   "data.train.val_partition",
                                   "'%s' is held out but listed in data.train.clips (item %d)",
                                   t->val_partition[v], j);
    return 0;
}

static int dataset_rules(pf_cfg_ctx *c, const pf_lines *L, const char *set, int idx,
                         pf_dataset_cfg *d) {
    char kp[96];
#define AT(key) (snprintf(kp, sizeof kp, "%s.%s", set, key), line_of(L, kp))
#define KP(key) (snprintf(kp, sizeof kp, "%s.%s", set, key), kp)
    int section = line_of(L, set);
    const char *a = strstr(d->filename_tmpl, "{}");
    if (!a || strstr(a + 2, "{}"))
        return pf_cfg_fail(c, AT("filename_tmpl"), KP("filename_tmpl"),
                           "must contain '{}' exactly once, got '%s'", d->filename_tmpl);
    if (!strcmp(d->type, "SingleImageDataset")) {
        if (idx != 2)
            return pf_cfg_fail(c, section, KP("type"),
                               "SingleImageDataset (LQ only, no metrics) is only allowed in "
                               "data.test");
        if (AT("gt_folder"))
            return pf_cfg_fail(c, AT("gt_folder"), KP("gt_folder"),
                               "not used by SingleImageDataset (LQ only); remove it");
        if (!d->lq_folder[0])
            return pf_cfg_fail(c, AT("lq_folder") ? AT("lq_folder") : line_of(L, set),
                               KP("lq_folder"),
                               "required by SingleImageDataset");
        if (AT("degradation"))
            return pf_cfg_fail(c, AT("degradation"), KP("degradation"),
                               "not used by SingleImageDataset (its LQ is read from lq_folder)");
        return 0;
    }
    if (video_set_rules(c, L, set, idx, d))
        return -1;
    if (idx == 0 && !AT("gt_patch_size"))
        return pf_cfg_fail(c, line_of(L, set), KP("gt_patch_size"), "required key is missing");
    if (pf_dataset_is_realesrgan(d)) {
        if (d->lq_folder[0])
            return pf_cfg_fail(c, AT("lq_folder"), KP("lq_folder"), "not used by %s (its LQ is "
                               "made from the GT by the Real-ESRGAN degradations); remove it",
                               d->type);
        if (AT("degradation"))
            return pf_cfg_fail(c, AT("degradation"), KP("degradation"), "not used by %s: its "
                               "degradations are the keys blur_kernel_size, ..., jpeg_range2 "
                               "(docs/config.md)", d->type);
        if (idx == 0 && AT("degrade_seed"))
            return pf_cfg_fail(c, AT("degrade_seed"), KP("degrade_seed"), "eval and test only: "
                               "training samples are degraded from `seed`, the epoch and the "
                               "sample index");
        return 0;
    }
    if (d->lq_folder[0] && AT("degradation"))
        return pf_cfg_fail(c, AT("degradation"), KP("degradation"),
                           "makes LQ from GT; it cannot be combined with lq_folder "
                           "'%s'", d->lq_folder);
    if (!d->lq_folder[0] && !d->n_degradations) {
        d->n_degradations = 1;
        snprintf(d->degradation[0].type, sizeof d->degradation[0].type, "BI");
    }
    return 0;
#undef AT
#undef KP
}

const char *pf_cfg_net_scales(const pf_network *net, char *out, size_t size) {
    const char *allowed = pf_cfg_row("model.scale")->choices;
    out[0] = '\0';
    for (int s = 1, at = 0; s < 32 && at < (int)size; s++) {
        char v[16];
        snprintf(v, sizeof v, "%d", s);
        if (net->scales >> s & 1 && pf_cfg_in_choices(allowed, v))
            at += snprintf(out + at, size - (size_t)at, "%s%d", at ? "|" : "", s);
    }
    return out;
}

/* EDVR's keys (nn/edvr.c): an odd window (the rule; BasicSR builds even ones too),
   its reference frame inside it (-1 resolved to num_frame / 2), deform groups dividing the
   width, hr_in refused (scale 1), and train_cfg.tsa_iter 1 (BasicSR never unfreezes). */
static int edvr_rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    int T = cfg->edvr_num_frame;
    if (T % 2 == 0)
        return pf_cfg_fail(c, line_of(L, "model.num_frame"), "model.num_frame",
                           "must be odd for EDVR (a center frame and num_frame / 2 neighbours on "
                           "each side, as the sliding-window sets give), got %d", T);
    if (cfg->center_frame_idx < 0)
        cfg->center_frame_idx = T / 2;
    else if (cfg->center_frame_idx >= T)
        return pf_cfg_fail(c, line_of(L, "model.center_frame_idx"), "model.center_frame_idx",
                           "must be in [0, num_frame) = [0, %d), got %d", T,
                           cfg->center_frame_idx);
    if (cfg->n_feats % cfg->deformable_groups) {
        int line = line_of(L, "model.deformable_groups");
        return pf_cfg_fail(c, line ? line : line_of(L, "model.n_feats"),
                           "model.deformable_groups", "must divide n_feats (%d), got %d",
                           cfg->n_feats, cfg->deformable_groups);
    }
    /* nn/edvr.c builds hr_in (tests/test_edvr.c checks it against PyTorch), but BasicSR
       trains it at scale 1 (REDS blur / blur_comp LQ frames of the GT's size), and
       model.scale, the paired crops and the video sets take 2, 3 or 4 only */
    if (cfg->hr_in)
        return pf_cfg_fail(c, line_of(L, "model.hr_in"), "model.hr_in",
                           "true (BasicSR's same-size EDVR, trained at scale 1 on LQ frames of "
                           "the GT's size) is not supported yet: model.scale 1 is not supported "
                           "by the config and the data pipeline");
    if (cfg->tsa_iter == 1)
        return pf_cfg_fail(c, line_of(L, "train_cfg.tsa_iter"), "train_cfg.tsa_iter",
                           "1 would freeze every tensor but the fusion's for good (BasicSR's "
                           "EDVRModel frees them at current_iter tsa_iter in an elif of "
                           "current_iter 1); use 0 (off) or at least 2");
    return 0;
}

static int model_rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    const pf_network *net = pf_network_find(cfg->model_type);   /* a choice of the rows */
    if (!(net->scales >> cfg->scale & 1)) {
        /* RRDBNet upsamples x4 by two nearest x2 stages and pixel-unshuffles x2 first;
           BasicVSR has two pixel-shuffle x2 stages */
        char scales[32], list[48];
        pf_cfg_net_scales(net, scales, sizeof scales);
        return pf_cfg_fail(c, line_of(L, "model.scale"), "model.scale",
                           "must be %s for %s%s, got %d", pf_cfg_or_list(scales, list, sizeof list),
                           net->name, net->scale_note, cfg->scale);
    }
    if (net->keys & PF_NK_WIDE && !line_of(L, "model.n_blocks"))
        cfg->n_blocks = net->n_blocks;
    if (net->max_blocks && cfg->n_blocks > net->max_blocks)
        return pf_cfg_fail(c, line_of(L, "model.n_blocks"), "model.n_blocks",
                           "must be at most %d for %s, got %d", net->max_blocks, net->name,
                           cfg->n_blocks);
    if (net->video == 2 && edvr_rules(c, L, cfg))
        return -1;
    if (net->keys & PF_NK_RCAN && cfg->squeeze_factor > cfg->n_feats) {
        int line = line_of(L, "model.squeeze_factor");
        return pf_cfg_fail(c, line ? line : line_of(L, "model.n_feats"), "model.squeeze_factor",
                           "must be at most n_feats (%d): channel attention has n_feats / "
                           "squeeze_factor channels, got %d", cfg->n_feats, cfg->squeeze_factor);
    }
    if (net->keys & PF_NK_SRCNN) {
        if (!line_of(L, "model.channels")) {
            cfg->srcnn_channels[0] = cfg->in_channels;
            cfg->srcnn_channels[3] = cfg->out_channels;
        } else if (cfg->srcnn_channels[0] != cfg->in_channels ||
                   cfg->srcnn_channels[3] != cfg->out_channels) {
            return pf_cfg_fail(c, line_of(L, "model.channels"), "model.channels",
                               "first and last must equal in_channels and out_channels (%d, %d)",
                               cfg->in_channels, cfg->out_channels);
        }
    }
    return 0;
}

static int optim_rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    if (cfg->nesterov && (cfg->momentum <= 0 || cfg->dampening != 0))
        return pf_cfg_fail(c, line_of(L, "optimizers.nesterov"), "optimizers.nesterov",
                           "Nesterov momentum requires a momentum > 0 and zero dampening (torch)");
    if (cfg->ckpt_max_keep == 0)
        return pf_cfg_fail(c, line_of(L, "checkpoint_config.max_keep_ckpts"),
                           "checkpoint_config.max_keep_ckpts",
                           "must be -1 (keep all) or positive, got 0");
    if (!strcmp(cfg->lr_policy, "CosineRestart")) {
        int weights = line_of(L, "lr_config.restart_weights");
        if (weights && cfg->n_lr_restart_weights != cfg->n_lr_periods)
            return pf_cfg_fail(c, weights, "lr_config.restart_weights",
                               "has %d items but periods has %d", cfg->n_lr_restart_weights,
                               cfg->n_lr_periods);
        if (!weights) {
            for (int i = 0; i < cfg->n_lr_periods; i++)
                cfg->lr_restart_weights[i] = 1.0f;
            cfg->n_lr_restart_weights = cfg->n_lr_periods;
        }
    }
    return 0;
}

/* The defaults that depend on another key's value (a row's def_for, "AdamW=0.01"), for the
   keys the file leaves out. */
static void value_defaults(const pf_lines *L, pf_config *cfg) {
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (!k->def_for || L->line[i])
            continue;
        const char *sel = choice_value((const char *)cfg,
                                       pf_cfg_row(k->def_key ? k->def_key : k->when_key));
        size_t n = strlen(sel);
        for (const char *p = k->def_for; *p; p += strcspn(p, "|"), p += *p == '|') {
            if (strncmp(p, sel, n) || p[n] != '=')
                continue;
            char def[48];
            snprintf(def, sizeof def, "%.*s", (int)strcspn(p + n + 1, "|"), p + n + 1);
            pf_config_key row = *k;
            row.def = def;
            pf_cfg_set_default(&row, (char *)cfg);
        }
    }
}

/* The Real-ESRGAN sets' degradation keys, checked together for the model's scale and (train)
   the GT patch: the error names the key the pipeline's check names, at its line. */
static int realesrgan_rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    static const char *sets[3] = {"data.train", "data.eval", "data.test"};
    pf_dataset_cfg *ds[3] = {&cfg->train, &cfg->eval, &cfg->test};
    for (int i = 0; i < 3; i++) {
        if (!ds[i]->present || !pf_dataset_is_realesrgan(ds[i]))
            continue;
        pf_realesrgan_opts o;
        char err[700], kp[96];
        ds[i]->realesrgan.scale = cfg->scale;
        if (!pf_dataset_realesrgan_opts(ds[i], sets[i], cfg->scale,
                                        i == 0 ? ds[i]->gt_patch_size : 0, &o, err, sizeof err))
            continue;
        const char *colon = strstr(err, ": ");
        snprintf(kp, sizeof kp, "%.*s", colon ? (int)(colon - err) : 0, err);
        int line = line_of(L, kp);
        return pf_cfg_fail(c, line ? line : line_of(L, sets[i]), kp, "%s",
                           colon ? colon + 2 : err);
    }
    return 0;
}

/* The gan section (issue 41): the discriminator against the GT patch, optim_d's Nesterov rule
   (as optimizers'), the perceptual options as a whole (pf_perceptual_opts_check), and what is
   not supported yet. */
static int gan_rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    const pf_gan_cfg *g = &cfg->gan;
    if (!g->enabled)
        return 0;
    if (pf_network_find(cfg->model_type)->video)
        return pf_cfg_fail(c, line_of(L, "gan"), "gan",
                           "GAN training of a video network (%s) is not supported yet: the gan "
                           "section takes an image network (issue 41)", cfg->model_type);
    if (g->optim_d.nesterov && (g->optim_d.momentum <= 0 || g->optim_d.dampening != 0))
        return pf_cfg_fail(c, line_of(L, "gan.optim_d.nesterov"), "gan.optim_d.nesterov",
                           "Nesterov momentum requires a momentum > 0 and zero dampening (torch)");
    char why[1024], kp[96];
    if (g->has_perceptual_opt && pf_perceptual_opts_check(&g->perceptual_opt, why, sizeof why)) {
        const char *colon = strstr(why, ": ");
        snprintf(kp, sizeof kp, "gan.perceptual_opt.%.*s", colon ? (int)(colon - why) : 0, why);
        const pf_config_key *k = pf_config_key_find(kp);
        int line = k ? L->line[row_index(k)] : 0;
        return pf_cfg_fail(c, line ? line : line_of(L, "gan.perceptual_opt"), kp, "%s",
                           colon ? colon + 2 : why);
    }
    int patch = cfg->train.present ? cfg->train.gt_patch_size : 0, at = line_of(L, "gan.network_d");
    if (line_of(L, "data.train.gt_patch_size"))
        at = line_of(L, "data.train.gt_patch_size");
    if (patch && !strcmp(g->network_d.type, "VGGStyleDiscriminator") &&
        patch != g->network_d.input_size)
        return pf_cfg_fail(c, at, "data.train.gt_patch_size", "must equal "
                           "gan.network_d.input_size (%d): VGGStyleDiscriminator takes GT "
                           "patches of that size, got %d", g->network_d.input_size, patch);
    if (patch && !strcmp(g->network_d.type, "UNetDiscriminatorSN") && patch % 8)
        return pf_cfg_fail(c, at, "data.train.gt_patch_size", "must be a multiple of 8 for "
                           "UNetDiscriminatorSN (it halves the patch three times), got %d",
                           patch);
    /* RealESRGANModel compares with the plain GT and the sharpened one (its gt and gt_usm),
       ESRGANModel with the plain one: with data.train.gt_usm the loaders send both (set here,
       where every role, loaders included, resolves its config). Not a key: the resolved YAML
       and the hash stay. */
    if (cfg->train.present && pf_dataset_is_realesrgan(&cfg->train) && cfg->train.gt_usm)
        cfg->train.gt_plain = 1;
    return 0;
}

/* Every rule that involves more than one key, after the walk and the `when` checks. */
/* The recurrent networks output every frame of a clip; the sliding-window sets give one GT
   frame per sample (the center of its LQ window): for a sliding-window network (EDVR, video
   2), whose window is model.num_frame frames, and only for it. 0, or -1 (failed). */
static int window_net_rules(pf_cfg_ctx *c, const pf_lines *L, const pf_config *cfg,
                            const pf_network *net) {
    const pf_dataset_cfg *sets3[3] = {&cfg->train, &cfg->eval, &cfg->test};
    static const char *set_names[3] = {"data.train", "data.eval", "data.test"};
    for (int i = 0; net->video == 2 && i < 3; i++) {
        char kp[64];
        snprintf(kp, sizeof kp, "%s.type", set_names[i]);
        int line = line_of(L, kp) ? line_of(L, kp) : line_of(L, set_names[i]);
        if (sets3[i]->present && !pf_config_is_window_set(sets3[i]->type))
            return pf_cfg_fail(c, line, kp, "%s takes a center frame's window of num_frame LQ "
                               "frames and gives that frame: use %s (got %s)", cfg->model_type,
                               i ? "VideoTestDataset" : "REDSDataset", sets3[i]->type);
        snprintf(kp, sizeof kp, "%s.num_frame", set_names[i]);
        if (sets3[i]->present && sets3[i]->num_frame != cfg->edvr_num_frame)
            return pf_cfg_fail(c, line_of(L, kp) ? line_of(L, kp) : line, kp,
                               "must equal model.num_frame (%d), the window %s takes, got %d",
                               cfg->edvr_num_frame, cfg->model_type, sets3[i]->num_frame);
    }
    for (int i = 0; net->video == 1 && i < 3; i++) {
        char kp[64];
        snprintf(kp, sizeof kp, "%s.type", set_names[i]);
        if (sets3[i]->present && pf_config_is_window_set(sets3[i]->type))
            return pf_cfg_fail(c, line_of(L, kp) ? line_of(L, kp) : line_of(L, set_names[i]), kp,
                               "%s gives a center frame's window of num_frame LQ frames and "
                               "one GT frame (a sliding-window network's data, EDVR); %s "
                               "outputs every frame of a clip: use %s", sets3[i]->type,
                               cfg->model_type, i ? "VideoRecurrentTestDataset"
                                                  : "REDSRecurrentDataset");
    }
    return 0;
}

static int rules(pf_cfg_ctx *c, const pf_lines *L, pf_config *cfg) {
    value_defaults(L, cfg);
    if (model_rules(c, L, cfg) || optim_rules(c, L, cfg))
        return -1;
    static const char *sets[3] = {"data.train", "data.eval", "data.test"};
    pf_dataset_cfg *ds[3] = {&cfg->train, &cfg->eval, &cfg->test};
    for (int i = 0; i < 3; i++)
        if (ds[i]->present && dataset_rules(c, L, sets[i], i, ds[i]))
            return -1;
    if (held_out_rules(c, L, cfg))
        return -1;
    if (cfg->clip_overlap >= cfg->clip_window)
        return pf_cfg_fail(c, line_of(L, "eval_cfg.clip_overlap"), "eval_cfg.clip_overlap",
                           "must be less than eval_cfg.clip_window (%d), got %d", cfg->clip_window,
                           cfg->clip_overlap);
    /* A video network trains on clips and an image network on images; either evaluates a
       video set (an image network frame by frame). */
    const pf_network *net = pf_network_find(cfg->model_type);
    char video_nets[64];
    if (cfg->train.present && !!net->video != pf_config_is_video_set(cfg->train.type))
        return pf_cfg_fail(c, line_of(L, "data.train.type") ? line_of(L, "data.train.type")
                           : line_of(L, "data.train"),
                           "data.train.type",
                           net->video == 2 ? "%s trains on a center frame's window of "
                           "num_frame LQ frames: REDSDataset (got %s)"
                           : net->video ? "%s trains on clips: REDSRecurrentDataset or "
                           "Vimeo90KRecurrentDataset (got %s)"
                           : "%s is an image network; %s makes clips (a video network: %s)",
                           cfg->model_type, cfg->train.type,
                           pf_cfg_or_list(PF_NET_LIST(VIDEO), video_nets, sizeof video_nets));
    if (window_net_rules(c, L, cfg, net))
        return -1;
    if (net->video && cfg->test.present && !pf_config_is_video_set(cfg->test.type))
        return pf_cfg_fail(c, line_of(L, "data.test.type") ? line_of(L, "data.test.type")
                           : line_of(L, "data.test"),
                           "data.test.type", "%s runs on clips: VideoRecurrentTestDataset "
                           "(got %s)", cfg->model_type, cfg->test.type);
    if (net->video && cfg->eval.present && !pf_config_is_video_set(cfg->eval.type))
        return pf_cfg_fail(c, line_of(L, "data.eval.type") ? line_of(L, "data.eval.type")
                           : line_of(L, "data.eval"),
                           "data.eval.type", "%s runs on clips: VideoRecurrentTestDataset "
                           "(got %s)", cfg->model_type, cfg->eval.type);
    /* data.train is needed to train (pixflow train checks it); `pixflow test` needs only
       data.test. An empty data section is still an error. */
    if (!cfg->train.present && !cfg->eval.present && !cfg->test.present)
        return pf_cfg_fail(c, line_of(L, "data"), "data.train", "required key is missing");
    int iters = line_of(L, "total_iters"), epochs = line_of(L, "total_epochs");
    /* neither: a test config (pf_config_check_train refuses it for training) */
    if (iters && epochs)
        return pf_cfg_fail(c, iters > epochs ? iters : epochs, "total_iters",
                           "exactly one of total_iters and total_epochs must be set");
    int patch = line_of(L, "data.train.gt_patch_size");
    if (cfg->train.present && cfg->train.gt_patch_size % cfg->scale)
        return pf_cfg_fail(c, patch, "data.train.gt_patch_size",
                           "must be a positive multiple of model.scale (%d), got %d", cfg->scale,
                           cfg->train.gt_patch_size);
    /* RRDBNet x2 pixel-unshuffles the LQ patch by 2 first (BasicSR asserts even sizes). */
    if (cfg->train.present && net->unshuffle >> cfg->scale & 1 &&
        cfg->train.gt_patch_size % (2 * cfg->scale))
        return pf_cfg_fail(c, patch, "data.train.gt_patch_size",
                           "must be a multiple of %d for %s x%d (the LQ patch is "
                           "pixel-unshuffled by 2), got %d", 2 * cfg->scale, cfg->model_type,
                           cfg->scale, cfg->train.gt_patch_size);
    if (realesrgan_rules(c, L, cfg) || gan_rules(c, L, cfg))
        return -1;
    /* No checkpoint_config: one checkpoint at the end of an iteration-based run. The epoch
       runner's length in iterations is known only once the dataset is read, so there the
       interval stays 0, which means "at the end only". */
    int ckpt = line_of(L, "checkpoint_config.interval");
    if (!ckpt && cfg->total_iters)
        cfg->ckpt_interval = cfg->total_iters;
    int evaluation = line_of(L, "evaluation");
    if (evaluation && !cfg->eval.present)
        return pf_cfg_fail(c, evaluation, "data.eval", "required when evaluation is set");
    if (evaluation) {
        if (!ckpt)
            return pf_cfg_fail(c, evaluation, "evaluation.interval",
                               "evaluation runs on checkpoints: checkpoint_config.interval must be "
                               "set");
        if (cfg->eval_interval % cfg->ckpt_interval)
            return pf_cfg_fail(c, line_of(L, "evaluation.interval"), "evaluation.interval",
                               "must be a multiple of checkpoint_config.interval (%lld), got %lld",
                               (long long)cfg->ckpt_interval, (long long)cfg->eval_interval);
    }
    if (cfg->lr_warmup[0] && cfg->total_iters && cfg->lr_warmup_iters > cfg->total_iters)
        return pf_cfg_fail(c, line_of(L, "lr_config.warmup_iters"), "lr_config.warmup_iters",
                           "larger than total_iters (%lld)", (long long)cfg->total_iters);
    if (!strcmp(cfg->lr_policy, "CosineRestart") && cfg->total_iters) {
        int64_t sum = 0;
        for (int i = 0; i < cfg->n_lr_periods; i++)
            sum += cfg->lr_periods[i];
        if (sum < cfg->total_iters)
            return pf_cfg_fail(c, line_of(L, "lr_config.periods"), "lr_config.periods",
                               "sum of periods (%lld) is less than total_iters "
                               "(%lld)", (long long)sum,
                               (long long)cfg->total_iters);
    }
    if (cfg->load_from[0] && cfg->resume_from[0])
        return pf_cfg_fail(c, line_of(L, "resume_from"), "resume_from",
                           "load_from and resume_from are exclusive (resume restores weights too)");
    return 0;
}

/* pf_config_load: every path row marked DIR or FILE must name one (resume_from may be auto). */
static int check_paths_exist(pf_cfg_ctx *c, const pf_lines *L, const pf_config *cfg) {
    for (int i = 0; i < pf_config_n_keys; i++) {
        const pf_config_key *k = &pf_config_keys[i];
        if (k->kind != PF_K_PATH || !(k->flags & (PF_KF_DIR | PF_KF_FILE)))
            continue;
        const char *p = (const char *)cfg + k->offset;
        if (!p[0] || ((k->flags & PF_KF_AUTO) && !strcmp(p, "auto")))
            continue;   /* a set not in the file has empty folders */
        if ((k->flags & PF_KF_DIR) ? check_dir(c, L->line[i], k->path, p)
                                   : check_file(c, L->line[i], k->path, p))
            return -1;
    }
    /* the VGG19 weights are never downloaded: say how to make the file */
    const char *vgg = cfg->gan.vgg_weights;
    struct stat st;
    if (cfg->gan.enabled && cfg->gan.has_perceptual_opt &&
        (stat(vgg, &st) != 0 || !S_ISREG(st.st_mode)))
        return pf_cfg_fail(c, line_of(L, "gan.perceptual_opt.vgg_weights"),
                           "gan.perceptual_opt.vgg_weights", "no such file '%s': convert "
                           "torchvision's vgg19 weights (vgg19-dcbb9e9d.pth) with "
                           "scripts/pth2safetensors.py: python3 scripts/pth2safetensors.py "
                           "vgg19-dcbb9e9d.pth %s", vgg, vgg);
    return 0;
}


/* Aliases are refused rather than resolved (common/yaml_tree.h): expanding nested aliases grows
   exponentially ("billion laughs"), and the config is also parsed from the network (WELCOME).
   The nesting depth is bounded too. */
#define PF_CONFIG_MAX_DEPTH 16


int pf_config_is_video_set(const char *type) {
    return !strcmp(type, "REDSRecurrentDataset") || !strcmp(type, "Vimeo90KRecurrentDataset") ||
           !strcmp(type, "VideoRecurrentTestDataset") || !strcmp(type, "RealESRGANVideoDataset") ||
           pf_config_is_window_set(type);
}

int pf_config_is_window_set(const char *type) {
    return !strcmp(type, "REDSDataset") || !strcmp(type, "VideoTestDataset");
}

int pf_config_train_frames(const pf_config *cfg) {
    return cfg->train.present && pf_config_is_video_set(cfg->train.type) &&
                   cfg->train.num_frame > 0
               ? cfg->train.num_frame
               : 1;
}

/* ---- public --------------------------------------------------------------------------- */

void pf_config_defaults(pf_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < pf_config_n_keys; i++)
        if (!pf_cfg_item_row(&pf_config_keys[i]))
            pf_cfg_set_default(&pf_config_keys[i], (char *)cfg);
    cfg->has_optimizers = 1;    /* a config made in code trains; parsing says what the file has */
}

int pf_config_check_train(const pf_config *cfg, char *err, size_t errlen) {
    char keys[256] = "";
    int n = 0;
    const char *need[3] = {
        cfg->has_optimizers ? NULL : "optimizers",
        cfg->total_iters || cfg->total_epochs ? NULL : "total_iters (or total_epochs)",
        cfg->train.present ? NULL : "data.train",
    };
    for (int i = 0; i < 3; i++)
        if (need[i]) {
            size_t at = strlen(keys);
            snprintf(keys + at, sizeof keys - at, "%s%s", n++ ? ", " : "", need[i]);
        }
    if (!n)
        return 0;
    snprintf(err, errlen, "%s: `pixflow train` needs %s, missing from the config (a config "
             "with model, data.test and work_dir is enough for `pixflow test` only)", cfg->path,
             keys);
    return -1;
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int parse_text(pf_config *cfg, const char *path, const char *text, size_t len,
                      int check_paths, char *err, size_t errlen) {
    pf_cfg_ctx c = {path ? path : "<config>", err, errlen, 0};
    if (err && errlen)
        err[0] = 0;
    pf_config_defaults(cfg);
    cfg->has_optimizers = 0;    /* set by the walk when the file has the section */
    snprintf(cfg->path, sizeof cfg->path, "%s", c.path);
    if (pf_config_n_keys > PF_CONFIG_MAX_KEYS)
        return pf_cfg_fail(&c, 1, "config", "the key table has more than %d rows",
                           PF_CONFIG_MAX_KEYS);
    if (len > PF_CONFIG_MAX_BYTES)
        return pf_cfg_fail(&c, 1, "config", "larger than %d bytes", PF_CONFIG_MAX_BYTES);
    if (memchr(text, 0, len))
        return pf_cfg_fail(&c, 1, "config", "contains a NUL byte");
    size_t bad = pf_utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len) {
        int line = 1;
        for (size_t i = 0; i < bad; i++)
            line += text[i] == '\n';
        return pf_cfg_fail(&c, line, "config", "not UTF-8 text (byte 0x%02x at offset %zu)",
                           (unsigned char)text[bad], bad);
    }

    int yline = 1;
    char ymsg[256];
    pf_ydoc *doc = pf_yaml_parse(text, len, PF_CONFIG_MAX_DEPTH, &yline, ymsg, sizeof ymsg);
    if (!doc)
        return pf_cfg_fail(&c, yline, "yaml", "%s", ymsg);
    const pf_ynode *root = pf_ydoc_root(doc);
    pf_lines L;
    memset(&L, 0, sizeof L);
    pf_section top = {.map = root, .opener = NULL, .prefix = ""};
    char g[96];
    int rc;
    if (!root || ytype(root) != PF_Y_MAPPING)
        rc = pf_cfg_fail(&c, node_line(root), "config",
                         "expected a mapping at the top level, got %s",
                         pf_cfg_describe(root, g, sizeof g));
    else
        rc = walk(&c, &L, &top, "", (char *)cfg, cfg);
    if (!rc) {   /* not keys: data.on_bad_sample, for a set opened on its own */
        cfg->train.skip_cut_videos = cfg->eval.skip_cut_videos = cfg->test.skip_cut_videos =
            cfg->skip_bad_samples;
        rc = check_when(&c, &L, cfg);
    }
    if (!rc)
        rc = rules(&c, &L, cfg);
    if (!rc && check_paths)
        rc = check_paths_exist(&c, &L, cfg);
    pf_ydoc_free(&doc);
    if (rc)
        return -1;
    char *yaml = pf_config_to_yaml(cfg);
    if (!yaml)
        return pf_cfg_fail(&c, 1, "config", "out of memory");
    cfg->hash = fnv1a64(yaml);
    free(yaml);
    return 0;
}

int pf_config_parse(pf_config *cfg, const char *path, const char *text, size_t len,
                    int check_paths, char *err, size_t errlen) {
    return parse_text(cfg, path, text, len, check_paths, err, errlen);
}

int pf_config_load(pf_config *cfg, const char *path, char *err, size_t errlen) {
    pf_cfg_ctx c = {path, err, errlen, 0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        pf_config_defaults(cfg);
        return pf_cfg_fail(&c, 1, "config", "cannot open: %s", strerror(errno));
    }
    char *buf = malloc(PF_CONFIG_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, PF_CONFIG_MAX_BYTES + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        pf_config_defaults(cfg);
        return pf_cfg_fail(&c, 1, "config", buf ? "read error" : "out of memory");
    }
    int rc = pf_config_parse(cfg, path, buf, n, 1, err, errlen);
    free(buf);
    return rc;
}

