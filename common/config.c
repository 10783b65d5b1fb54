/*  config — YAML to pf_config, with strict validation, and back.

    How the pieces fit: pf_config_parse builds a YAML tree (common/yaml_tree.h, on libyaml),
    then walks it top-down. Each
    section has one function (parse_model, parse_data, ...) that iterates the pairs of its
    mapping and dispatches on the key name; a key no branch knows is "unknown key", with the
    nearest key of the section or another framework's meaning (common/config_keys.h). Typed
    getters (get_int, get_float, get_str, ...) convert one scalar and report a wrong type. After
    the walk, cross-checks (scale vs patch size, eval vs checkpoint interval, paths) run on the
    struct. The first error wins: it is formatted `file:line: key.path: what is wrong` into the
    caller's buffer and parsing stops.

    Line numbers: every node has the line it starts on; a missing key is reported at the key
    that opened its section (line 1 for top-level keys).

    Scalars follow the YAML 1.2 core schema, strictly: numbers and booleans must be plain
    (unquoted) scalars, `null`/`~`/empty means null, strings may be plain or quoted.

    pf_config_to_yaml writes every key of the resolved struct in a fixed order; its output
    parses back to an equal struct (tests/test_config.c checks it), and its FNV-1a 64 hash is
    pf_config.hash, so two processes agree they run the same job.
*/
#include "common/config.h"
#include "common/config_keys.h"
#include "common/number.h"
#include "common/yaml_tree.h"

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
#define PF_CONFIG_MAX_BATCH 1024        /* = PF_MAX_BATCH: samples in one ticket */

typedef struct {
    const char *path;                   /* file name for messages */
    char *err;                          /* caller's error buffer */
    size_t errlen;                      /* its size */
    int failed;                         /* 1 once an error was written */
} pf_cfg_ctx;

/* ---- locations and errors ------------------------------------------------------------- */

/* 1-based line of a node, from its first scalar; 0 when it has none. */
static int node_line(const pf_ynode *n) {
    return n ? n->line : 0;
}

/* A node's type, -1 for none (an absent value). */
static int ytype(const pf_ynode *n) {
    return n ? (int)n->type : -1;
}

/* Record the first error as "path:line: key: message". Always returns -1. */
static int fail(pf_cfg_ctx *c, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(pf_cfg_ctx *c, int line, const char *key, const char *fmt, ...) {
    if (c->failed)
        return -1;
    c->failed = 1;
    if (!c->err || !c->errlen)
        return -1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%d: %s: %s", c->path, line > 0 ? line : 1, key, msg);
    return -1;
}

/* ---- scalars -------------------------------------------------------------------------- */

/* Text of a scalar node (not NUL-terminated) or NULL for collections. */
static const char *scalar(const pf_ynode *n, size_t *len) {
    if (!n || n->type != PF_Y_SCALAR)
        return NULL;
    *len = n->len;
    return n->text;
}

static int is_plain(const pf_ynode *n) {
    return n && n->type == PF_Y_SCALAR && n->plain;
}

static int text_is(const char *s, size_t len, const char *word) {
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* YAML 1.2 core null: absent value, or plain "", "~", "null", "Null", "NULL". */
static int is_null(const pf_ynode *n) {
    if (!n)
        return 1;
    size_t len;
    const char *s = scalar(n, &len);
    if (!s || !is_plain(n))
        return 0;
    return len == 0 || text_is(s, len, "~") || text_is(s, len, "null") ||
           text_is(s, len, "Null") || text_is(s, len, "NULL");
}

/* What the user wrote, for "got ..." in messages. */
static const char *describe(const pf_ynode *n, char *buf, size_t size) {
    if (is_null(n))
        return "null";
    if (ytype(n) == PF_Y_MAPPING)
        return "a mapping";
    if (ytype(n) == PF_Y_SEQUENCE)
        return "a list";
    size_t len = 0;
    const char *s = scalar(n, &len);
    size_t show = len > 40 ? 40 : len;
    snprintf(buf, size, "%s'%.*s%s'", is_plain(n) ? "" : "the quoted string ", (int)show, s,
             len > show ? "..." : "");
    return buf;
}

/* Copy a scalar into a NUL-terminated buffer; -1 when it does not fit. */
static int scalar_copy(const pf_ynode *n, char *out, size_t size) {
    size_t len;
    const char *s = scalar(n, &len);
    if (!s || len + 1 > size)
        return -1;
    memcpy(out, s, len);
    out[len] = 0;
    return 0;
}

static int get_int(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int64_t lo, int64_t hi,
                   int64_t *out) {
    const char *want = lo > 0 ? "a positive integer" : lo == 0 ? "a non-negative integer"
                                                               : "an integer";
    char g[96];
    size_t len = 0;
    const char *s = scalar(n, &len);
    int64_t v = 0;
    pf_num_status st = s && is_plain(n) ? pf_parse_int(s, len, lo, hi, &v) : PF_NUM_SYNTAX;
    if (st == PF_NUM_SYNTAX)
        return fail(c, node_line(n), key, "expected %s, got %s", want, describe(n, g, sizeof g));
    if (st == PF_NUM_RANGE) {
        int beyond_64_bits = v == INT64_MIN || v == INT64_MAX;
        if (v < lo && (lo == 0 || lo == 1) && !beyond_64_bits)
            return fail(c, node_line(n), key, "expected %s, got %.*s", want, (int)len, s);
        return fail(c, node_line(n), key, "must be between %lld and %lld, got %.*s",
                    (long long)lo, (long long)hi, (int)len, s);
    }
    *out = v;
    return 0;
}

static int get_int32(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int lo, int hi,
                     int *out) {
    int64_t v = 0;   /* set by get_int on success; silences -Wmaybe-uninitialized */
    if (get_int(c, n, key, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* A finite number (integers accepted). `lo_open`: lo itself is not allowed. */
static int get_float(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo, int lo_open,
                     double hi, float *out) {
    char g[96];
    size_t len = 0;
    const char *s = scalar(n, &len);
    double v = 0;
    if (!s || !is_plain(n) || pf_parse_double(s, len, &v) != PF_NUM_OK)
        return fail(c, node_line(n), key, "expected a number, got %s", describe(n, g, sizeof g));
    /* the range is checked on the value as stored (a float: 1e-67 is 0 there; beyond the
       float range pf_parse_double refuses it) */
    float f = (float)v;
    if (f < lo || (lo_open && f == lo) || f > hi) {
        const char *as = (double)f != v ? " (as a 32-bit float: " : "";
        char fs[32] = "";
        if (as[0])
            snprintf(fs, sizeof fs, "%g)", (double)f);
        if (lo_open && lo == 0 && hi == HUGE_VAL)
            return fail(c, node_line(n), key, "must be greater than 0, got %.*s%s%s", (int)len,
                        s, as, fs);
        return fail(c, node_line(n), key, "must be in %c%g, %g], got %.*s%s%s",
                    lo_open ? '(' : '[', lo, hi, (int)len, s, as, fs);
    }
    *out = f;
    return 0;
}

static int get_bool(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int *out) {
    char g[96];
    size_t len;
    const char *s = scalar(n, &len);
    if (s && is_plain(n)) {
        if (text_is(s, len, "true") || text_is(s, len, "True") || text_is(s, len, "TRUE")) {
            *out = 1;
            return 0;
        }
        if (text_is(s, len, "false") || text_is(s, len, "False") || text_is(s, len, "FALSE")) {
            *out = 0;
            return 0;
        }
    }
    return fail(c, node_line(n), key, "expected true or false, got %s", describe(n, g, sizeof g));
}

static int get_str(pf_cfg_ctx *c, const pf_ynode *n, const char *key, char *out, size_t size) {
    char g[96];
    if (is_null(n) || ytype(n) != PF_Y_SCALAR)
        return fail(c, node_line(n), key, "expected a string, got %s", describe(n, g, sizeof g));
    size_t len;
    const char *s = scalar(n, &len);
    if (memchr(s, 0, len))
        return fail(c, node_line(n), key, "contains a NUL character");
    if (scalar_copy(n, out, size))
        return fail(c, node_line(n), key, "longer than %zu characters", size - 1);
    return 0;
}

/* A string from a fixed list (`choices` NULL-terminated); exact case unless `nocase`. */
static int get_choice(pf_cfg_ctx *c, const pf_ynode *n, const char *key, const char **choices,
                      int nocase, char *out, size_t size) {
    char g[96], v[64];
    if (is_null(n) || ytype(n) != PF_Y_SCALAR || scalar_copy(n, v, sizeof v))
        v[0] = 0;
    for (int i = 0; v[0] && choices[i]; i++) {
        if (nocase ? !strcasecmp(v, choices[i]) : !strcmp(v, choices[i])) {
            snprintf(out, size, "%s", choices[i]);
            return 0;
        }
    }
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", choices[i]);
    }
    return fail(c, node_line(n), key, "expected one of %s, got %s", list,
                describe(n, g, sizeof g));
}

/* A list of `min_n`..`max_n` items; `get` converts item i. */
static int get_seq(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int min_n, int max_n,
                   int *count, const pf_ynode **items) {
    char g[96];
    if (!n || ytype(n) != PF_Y_SEQUENCE)
        return fail(c, node_line(n), key, "expected a list, got %s", describe(n, g, sizeof g));
    int k = 0;
    for (int i = 0; i < n->n; i++) {
        const pf_ynode *item = n->kid[i];
        if (k == max_n)
            return fail(c, node_line(item), key, "at most %d items allowed", max_n);
        items[k++] = item;
    }
    if (k < min_n) {
        if (min_n == max_n)
            return fail(c, node_line(n), key, "expected %d items, got %d", min_n, k);
        return fail(c, node_line(n), key, "expected at least %d items, got %d", min_n, k);
    }
    *count = k;
    return 0;
}

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
        return fail(c, node_line(value) ? node_line(value) : node_line(key), path,
                    "expected a mapping, got %s", describe(value, g, sizeof g));
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
    if (!*key || ytype(*key) != PF_Y_SCALAR || scalar_copy(*key, name, size)) {
        fail(c, node_line(*key) ? node_line(*key) : section_line(s),
             keypath(s, "?", kp, sizeof kp), "unknown key %s", describe(*key, g, sizeof g));
        return -1;
    }
    return 1;
}

/* "unknown key", with the nearest key of section `sec` or the PixFlow name of another
   framework's key (common/config_keys.h). */
static int unknown(pf_cfg_ctx *c, const pf_section *s, pf_config_section_id sec,
                   const pf_ynode *key, const char *name) {
    char kp[128], hint[320];
    return fail(c, node_line(key), keypath(s, name, kp, sizeof kp), "unknown key%s",
                pf_config_unknown_hint(sec, name, hint, sizeof hint));
}

static int missing(pf_cfg_ctx *c, const pf_section *s, const char *name) {
    char kp[128];
    return fail(c, section_line(s), keypath(s, name, kp, sizeof kp), "required key is missing");
}

/* ---- model types and their keys ------------------------------------------------------ */

/* The networks of docs/models.md, in the order messages list them; bit i of a key's `types`
   below is MODEL_TYPES[i]. */
static const char *MODEL_TYPES[] = {"EDSR", "SRCNN", "FSRCNN", "ESPCN", "MSRResNet", "RCAN",
                                    "RRDBNet", NULL};
enum {
    M_EDSR = 1 << 0, M_SRCNN = 1 << 1, M_FSRCNN = 1 << 2, M_ESPCN = 1 << 3,
    M_MSRRESNET = 1 << 4, M_RCAN = 1 << 5, M_RRDBNET = 1 << 6
};

typedef enum {
    MK_N_FEATS, MK_NUM_FEAT, MK_N_BLOCKS, MK_NUM_BLOCK, MK_NUM_GROUP, MK_SQUEEZE_FACTOR,
    MK_NUM_GROW_CH, MK_RES_SCALE, MK_RGB_MEAN, MK_IMG_RANGE, MK_D, MK_S, MK_M, MK_CHANNELS,
    MK_KERNEL_SIZES, MK_COUNT
} model_key_id;

/* Hyper-parameter keys of `model:`: each is allowed only with the types it configures.
   `twin` is the other spelling of the same field (BasicSR's num_feat / num_block), -1 if none;
   giving both spellings is an error. */
static const struct {
    const char *name;                   /* key under model: */
    unsigned types;                     /* M_* bits of the types that take it */
    int twin;                           /* model_key_id of the other spelling, or -1 */
} MODEL_KEYS[MK_COUNT] = {
    [MK_N_FEATS] = {"n_feats", M_EDSR | M_MSRRESNET | M_RCAN | M_RRDBNET, MK_NUM_FEAT},
    [MK_NUM_FEAT] = {"num_feat", M_EDSR | M_MSRRESNET | M_RCAN | M_RRDBNET, MK_N_FEATS},
    [MK_N_BLOCKS] = {"n_blocks", M_EDSR | M_MSRRESNET | M_RCAN | M_RRDBNET, MK_NUM_BLOCK},
    [MK_NUM_BLOCK] = {"num_block", M_EDSR | M_MSRRESNET | M_RCAN | M_RRDBNET, MK_N_BLOCKS},
    [MK_NUM_GROUP] = {"num_group", M_RCAN, -1},
    [MK_SQUEEZE_FACTOR] = {"squeeze_factor", M_RCAN, -1},
    [MK_NUM_GROW_CH] = {"num_grow_ch", M_RRDBNET, -1},
    [MK_RES_SCALE] = {"res_scale", M_EDSR | M_RCAN, -1},
    [MK_RGB_MEAN] = {"rgb_mean", M_EDSR | M_RCAN, -1},
    [MK_IMG_RANGE] = {"img_range", M_EDSR | M_RCAN, -1},
    [MK_D] = {"d", M_FSRCNN, -1},
    [MK_S] = {"s", M_FSRCNN, -1},
    [MK_M] = {"m", M_FSRCNN, -1},
    [MK_CHANNELS] = {"channels", M_SRCNN, -1},
    [MK_KERNEL_SIZES] = {"kernel_sizes", M_SRCNN, -1},
};

/* M_* bit of a model type name; 0 for an unknown one. */
static unsigned model_type_bit(const char *type) {
    for (int i = 0; MODEL_TYPES[i]; i++)
        if (!strcmp(type, MODEL_TYPES[i]))
            return 1u << i;
    return 0;
}

/* Whether key `id` configures the network `type`. */
static int model_key_applies(const char *type, model_key_id id) {
    return (MODEL_KEYS[id].types & model_type_bit(type)) != 0;
}

/* ---- sections ------------------------------------------------------------------------- */

/* Line of each key, for cross-checks after the walk (0 = absent). Names are the key paths. */
typedef struct {
    int scale, patch[3], gt[3], lq[3], eval_interval, ckpt_interval, total_iters,
        total_epochs, load_from, resume_from, data_eval, evaluation, lr_periods, restart_w,
        loss_eps, loss_type, samples, meta[3], degradation[3], keys_dir;
    int model_type;
    int model_key[MK_COUNT];            /* model hyper-parameter keys, by model_key_id */
} pf_lines;

static int parse_loss(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    static const char *losses[] = {"L1Loss", "MSELoss", "CharbonnierLoss", NULL};
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r, have_type = 0, eps_line = 0;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "type")) {
            if (get_choice(c, v, kp, losses, 0, cfg->loss_type, sizeof cfg->loss_type))
                return -1;
            have_type = 1;
        } else if (!strcmp(name, "loss_weight")) {
            if (get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->loss_weight))
                return -1;
        } else if (!strcmp(name, "eps")) {
            if (get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->charbonnier_eps))
                return -1;
            eps_line = node_line(k);
        } else if (!strcmp(name, "reduction")) {
            static const char *red[] = {"mean", NULL};
            char tmp[8];
            if (get_choice(c, v, kp, red, 0, tmp, sizeof tmp))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_LOSS, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!have_type)
        return missing(c, s, "type");
    if (eps_line && strcmp(cfg->loss_type, "CharbonnierLoss"))
        return fail(c, eps_line, keypath(s, "eps", kp, sizeof kp),
                    "only allowed with type CharbonnierLoss");
    (void)L;
    return 0;
}

/* A list of exactly `n` integers in lo..hi (n <= 4) into out; "key[i]: ..." errors. */
static int get_int_list(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, int n, int lo, int hi,
                        int *out) {
    const pf_ynode *items[4];
    char ip[160];
    int got;
    if (get_seq(c, v, kp, n, n, &got, items))
        return -1;
    for (int i = 0; i < n; i++) {
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (get_int32(c, items[i], ip, lo, hi, &out[i]))
            return -1;
    }
    return 0;
}

/* One hyper-parameter key of model: (`id`, canonical: the twin spellings share a branch). */
static int parse_model_key(pf_cfg_ctx *c, model_key_id id, const pf_ynode *v, const char *kp,
                           pf_config *cfg) {
    const pf_ynode *items[4];
    char ip[160];
    int n;
    switch (id) {
    case MK_N_FEATS:
    case MK_NUM_FEAT:
        return get_int32(c, v, kp, 1, 4096, &cfg->n_feats);
    case MK_N_BLOCKS:
    case MK_NUM_BLOCK:
        return get_int32(c, v, kp, 1, 1024, &cfg->n_blocks);
    case MK_NUM_GROUP:
        return get_int32(c, v, kp, 1, 1024, &cfg->num_group);
    case MK_SQUEEZE_FACTOR:
        return get_int32(c, v, kp, 1, 4096, &cfg->squeeze_factor);
    case MK_NUM_GROW_CH:
        return get_int32(c, v, kp, 1, 4096, &cfg->num_grow_ch);
    case MK_RES_SCALE:
        return get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->res_scale);
    case MK_IMG_RANGE:
        return get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->img_range);
    case MK_D:
        return get_int32(c, v, kp, 1, 4096, &cfg->fsrcnn_d);
    case MK_S:
        return get_int32(c, v, kp, 1, 4096, &cfg->fsrcnn_s);
    case MK_M:
        return get_int32(c, v, kp, 0, 1024, &cfg->fsrcnn_m);
    case MK_RGB_MEAN:
        if (get_seq(c, v, kp, 3, 3, &n, items))
            return -1;
        for (int i = 0; i < 3; i++) {
            snprintf(ip, sizeof ip, "%s[%d]", kp, i);
            if (get_float(c, items[i], ip, 0, 0, 1, &cfg->rgb_mean[i]))
                return -1;
        }
        return 0;
    case MK_CHANNELS:
        return get_int_list(c, v, kp, 4, 1, 4096, cfg->srcnn_channels);
    case MK_KERNEL_SIZES:
        if (get_int_list(c, v, kp, 3, 1, 63, cfg->srcnn_kernel_sizes))
            return -1;
        get_seq(c, v, kp, 3, 3, &n, items);
        for (int i = 0; i < 3; i++) {
            snprintf(ip, sizeof ip, "%s[%d]", kp, i);
            if (cfg->srcnn_kernel_sizes[i] % 2 == 0)
                return fail(c, node_line(items[i]), ip, "kernel size must be odd, got %d",
                            cfg->srcnn_kernel_sizes[i]);
        }
        return 0;
    case MK_COUNT:
        break;
    }
    return -1;
}

/* After the walk: the first key (in the file) that the model type does not take, as
   "only allowed with type A, B or C"; -1 when there is one. */
static int check_model_keys(pf_cfg_ctx *c, const pf_section *s, const pf_config *cfg,
                            const pf_lines *L) {
    int bad = -1;
    for (int id = 0; id < MK_COUNT; id++)
        if (L->model_key[id] && !model_key_applies(cfg->model_type, (model_key_id)id) &&
            (bad < 0 || L->model_key[id] < L->model_key[bad]))
            bad = id;
    if (bad < 0)
        return 0;
    char list[160] = "", kp[128];
    unsigned types = MODEL_KEYS[bad].types;
    for (int i = 0; MODEL_TYPES[i]; i++) {
        if (!(types & (1u << i)))
            continue;
        types &= ~(1u << i);
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", at ? (types ? ", " : " or ") : "",
                 MODEL_TYPES[i]);
    }
    return fail(c, L->model_key[bad], keypath(s, MODEL_KEYS[bad].name, kp, sizeof kp),
                "only allowed with type %s (model.type is %s)", list, cfg->model_type);
}

static int parse_model(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    void *it = NULL;
    char name[64], kp[128], twin[128];
    const pf_ynode *k, *v;
    int r, in_line = 0, out_line = 0;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        int id = 0;
        while (id < MK_COUNT && strcmp(name, MODEL_KEYS[id].name))
            id++;
        if (id < MK_COUNT) {
            int other = MODEL_KEYS[id].twin;
            if (other >= 0 && L->model_key[other])
                return fail(c, node_line(k), kp, "same setting as %s (line %d); give only one",
                            keypath(s, MODEL_KEYS[other].name, twin, sizeof twin),
                            L->model_key[other]);
            if (parse_model_key(c, (model_key_id)id, v, kp, cfg))
                return -1;
            L->model_key[id] = node_line(k);
        } else if (!strcmp(name, "type")) {
            if (get_choice(c, v, kp, MODEL_TYPES, 0, cfg->model_type, sizeof cfg->model_type))
                return -1;
            L->model_type = node_line(k);
        } else if (!strcmp(name, "scale")) {
            if (get_int32(c, v, kp, 1, 1 << 20, &cfg->scale))
                return -1;
            L->scale = node_line(k);
        } else if (!strcmp(name, "in_channels")) {
            if (get_int32(c, v, kp, 1, 1 << 20, &cfg->in_channels))
                return -1;
            in_line = node_line(k);
        } else if (!strcmp(name, "out_channels")) {
            if (get_int32(c, v, kp, 1, 1 << 20, &cfg->out_channels))
                return -1;
            out_line = node_line(k);
        } else if (!strcmp(name, "loss")) {
            pf_section sub;
            if (open_section(c, k, v, kp, &sub) || parse_loss(c, &sub, cfg, L))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_MODEL, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!L->model_type)
        return missing(c, s, "type");
    if (!L->scale)
        return missing(c, s, "scale");
    if (cfg->scale < 2 || cfg->scale > 4)
        return fail(c, L->scale, "model.scale", "must be 2, 3 or 4, got %d", cfg->scale);
    if (cfg->in_channels != 3)
        return fail(c, in_line, "model.in_channels",
                    "must be 3 (images are loaded as RGB), got %d", cfg->in_channels);
    if (cfg->out_channels != 3)
        return fail(c, out_line, "model.out_channels",
                    "must be 3 (images are loaded as RGB), got %d", cfg->out_channels);
    if (check_model_keys(c, s, cfg, L))
        return -1;
    unsigned type = model_type_bit(cfg->model_type);
    if (type == M_RRDBNET) {
        /* BasicSR's RRDBNet upsamples x4 by two nearest x2 stages; x2 pixel-unshuffles first.
           x3 has no such construction. */
        if (cfg->scale == 3)
            return fail(c, L->scale, "model.scale", "must be 2 or 4 for RRDBNet, got 3");
        if (!L->model_key[MK_N_BLOCKS] && !L->model_key[MK_NUM_BLOCK])
            cfg->n_blocks = 23;
    }
    if (type == M_RCAN && cfg->squeeze_factor > cfg->n_feats) {
        int line = L->model_key[MK_SQUEEZE_FACTOR];
        line = line ? line : L->model_key[MK_N_FEATS] + L->model_key[MK_NUM_FEAT];
        return fail(c, line, "model.squeeze_factor",
                    "must be at most n_feats (%d): channel attention has n_feats / "
                    "squeeze_factor channels, got %d", cfg->n_feats, cfg->squeeze_factor);
    }
    if (type == M_SRCNN) {
        if (!L->model_key[MK_CHANNELS]) {
            cfg->srcnn_channels[0] = cfg->in_channels;
            cfg->srcnn_channels[3] = cfg->out_channels;
        } else if (cfg->srcnn_channels[0] != cfg->in_channels ||
                   cfg->srcnn_channels[3] != cfg->out_channels) {
            return fail(c, L->model_key[MK_CHANNELS], "model.channels",
                        "first and last must equal in_channels and out_channels (%d, %d)",
                        cfg->in_channels, cfg->out_channels);
        }
    }
    return 0;
}

/* A number, or a list [lo, hi] with lo <= hi, into lo/hi (both the number when one). */
static int get_float_range(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, double lo,
                           double hi, float *out_lo, float *out_hi) {
    if (ytype(v) != PF_Y_SEQUENCE) {
        if (get_float(c, v, kp, lo, 0, hi, out_lo))
            return -1;
        *out_hi = *out_lo;
        return 0;
    }
    const pf_ynode *items[2];
    int n;
    char ip[160];
    if (get_seq(c, v, kp, 2, 2, &n, items))
        return -1;
    for (int i = 0; i < 2; i++) {
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (get_float(c, items[i], ip, lo, 0, hi, i ? out_hi : out_lo))
            return -1;
    }
    if (*out_lo > *out_hi)
        return fail(c, node_line(v), kp, "range [%g, %g] is empty", *out_lo, *out_hi);
    return 0;
}

/* One item of data.*.degradation (a mapping with `type`). */
static int parse_degradation_step(pf_cfg_ctx *c, const pf_ynode *item, const char *kp,
                                  pf_degradation *g) {
    static const char *types[] = {"BI", "BD", "DN", "JPEG", NULL};
    pf_section s;
    if (open_section(c, item, item, kp, &s))
        return -1;
    const pf_ynode *type = pf_ynode_get(item, "type");
    char tp[200];
    snprintf(tp, sizeof tp, "%s.type", kp);
    if (!type)
        return missing(c, &s, "type");
    if (get_choice(c, type, tp, types, 0, g->type, sizeof g->type))
        return -1;
    if (!strcmp(g->type, "BD")) {
        g->kernel_size = 7;
        g->sigma = g->sigma_max = 1.6f;
    } else if (!strcmp(g->type, "DN")) {
        g->sigma = g->sigma_max = 30.0f;
    }
    int have_quality = 0;
    void *it = NULL;
    char name[64], ap[200];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, &s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(&s, name, ap, sizeof ap);
        if (!strcmp(name, "type"))
            continue;
        if (!strcmp(name, "kernel_size") && !strcmp(g->type, "BD")) {
            if (get_int32(c, v, ap, 1, 51, &g->kernel_size))
                return -1;
            if (g->kernel_size % 2 == 0)
                return fail(c, node_line(v), ap, "must be odd, got %d", g->kernel_size);
        } else if (!strcmp(name, "sigma") && !strcmp(g->type, "BD")) {
            if (get_float(c, v, ap, 0, 1, 50, &g->sigma))
                return -1;
            g->sigma_max = g->sigma;
        } else if (!strcmp(name, "sigma") && !strcmp(g->type, "DN")) {
            if (get_float_range(c, v, ap, 0, 255, &g->sigma, &g->sigma_max))
                return -1;
        } else if (!strcmp(name, "quality") && !strcmp(g->type, "JPEG")) {
            float q0, q1;
            if (get_float_range(c, v, ap, 1, 100, &q0, &q1))
                return -1;
            if (q0 != (int)q0 || q1 != (int)q1)
                return fail(c, node_line(v), ap, "expected integers in [1, 100]");
            g->quality = (int)q0;
            g->quality_max = (int)q1;
            have_quality = 1;
        } else if (!strcmp(name, "kernel_size") || !strcmp(name, "sigma") ||
                   !strcmp(name, "quality")) {
            return fail(c, node_line(k), ap, "not a parameter of type %s", g->type);
        } else {
            return unknown(c, &s, PF_SEC_DEGRADATION, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!strcmp(g->type, "JPEG") && !have_quality)
        return missing(c, &s, "quality");
    return 0;
}

/* data.*.degradation: a list; the first step downscales (BI, BD or DN), JPEG may follow. */
static int parse_degradation(pf_cfg_ctx *c, const pf_ynode *v, const char *kp,
                             pf_dataset_cfg *d) {
    const pf_ynode *items[PF_MAX_DEGRADATIONS];
    int n;
    if (get_seq(c, v, kp, 1, 2, &n, items))
        return -1;
    for (int i = 0; i < n; i++) {
        char ip[160];
        snprintf(ip, sizeof ip, "%s[%d]", kp, i);
        if (parse_degradation_step(c, items[i], ip, &d->degradation[i]))
            return -1;
        int down = strcmp(d->degradation[i].type, "JPEG") != 0;
        if (i == 0 && !down)
            return fail(c, node_line(items[i]), ip,
                        "the first step must downscale (BI, BD or DN), got JPEG");
        if (i > 0 && down)
            return fail(c, node_line(items[i]), ip,
                        "only one downscaling step (BI, BD or DN) is allowed; JPEG may follow");
    }
    d->n_degradations = n;
    return 0;
}

/* data.train / data.eval / data.test; `idx` 0, 1, 2. */
static int parse_dataset(pf_cfg_ctx *c, pf_section *s, pf_dataset_cfg *d, int idx,
                         pf_lines *L) {
    static const char *types[] = {"PairedImageDataset", "SingleImageDataset", NULL};
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r, have_type = 0;
    d->present = 1;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        int train_only = 0;
        if (!strcmp(name, "type")) {
            if (get_choice(c, v, kp, types, 0, d->type, sizeof d->type))
                return -1;
            have_type = 1;
        } else if (!strcmp(name, "gt_folder")) {
            if (get_str(c, v, kp, d->gt_folder, sizeof d->gt_folder))
                return -1;
            if (!d->gt_folder[0])
                return fail(c, node_line(v), kp, "must not be empty");
            L->gt[idx] = node_line(k);
        } else if (!strcmp(name, "lq_folder")) {
            if (is_null(v))
                d->lq_folder[0] = 0;
            else if (get_str(c, v, kp, d->lq_folder, sizeof d->lq_folder))
                return -1;
            L->lq[idx] = node_line(k);
        } else if (!strcmp(name, "filename_tmpl")) {
            if (get_str(c, v, kp, d->filename_tmpl, sizeof d->filename_tmpl))
                return -1;
            const char *a = strstr(d->filename_tmpl, "{}");
            if (!a || strstr(a + 2, "{}"))
                return fail(c, node_line(v), kp, "must contain '{}' exactly once, got '%s'",
                            d->filename_tmpl);
        } else if (!strcmp(name, "gt_patch_size")) {
            train_only = 1;
            if (idx == 0 && get_int32(c, v, kp, 1, 1 << 16, &d->gt_patch_size))
                return -1;
            L->patch[idx] = node_line(k);
        } else if (!strcmp(name, "use_flip")) {
            train_only = 1;
            if (idx == 0 && get_bool(c, v, kp, &d->use_flip))
                return -1;
        } else if (!strcmp(name, "use_rot")) {
            train_only = 1;
            if (idx == 0 && get_bool(c, v, kp, &d->use_rot))
                return -1;
        } else if (!strcmp(name, "repeat")) {
            train_only = 1;
            if (idx == 0 && get_int32(c, v, kp, 1, 1 << 20, &d->repeat))
                return -1;
        } else if (!strcmp(name, "meta_info_file")) {
            if (is_null(v))
                d->meta_info_file[0] = 0;
            else if (get_str(c, v, kp, d->meta_info_file, sizeof d->meta_info_file))
                return -1;
            L->meta[idx] = node_line(k);
        } else if (!strcmp(name, "degradation")) {
            if (parse_degradation(c, v, kp, d))
                return -1;
            L->degradation[idx] = node_line(k);
        } else {
            return unknown(c, s, PF_SEC_DATASET, k, name);
        }
        if (train_only && idx != 0)
            return fail(c, node_line(k), kp, "only allowed in data.train");
    }
    if (r < 0)
        return -1;
    (void)have_type;
    char kp2[128];
    if (!strcmp(d->type, "SingleImageDataset")) {
        if (idx != 2)
            return fail(c, section_line(s), keypath(s, "type", kp2, sizeof kp2),
                        "SingleImageDataset (LQ only, no metrics) is only allowed in data.test");
        if (L->gt[idx])
            return fail(c, L->gt[idx], keypath(s, "gt_folder", kp2, sizeof kp2),
                        "not used by SingleImageDataset (LQ only); remove it");
        if (!d->lq_folder[0])
            return fail(c, L->lq[idx] ? L->lq[idx] : section_line(s),
                        keypath(s, "lq_folder", kp2, sizeof kp2),
                        "required by SingleImageDataset");
        if (L->degradation[idx])
            return fail(c, L->degradation[idx], keypath(s, "degradation", kp2, sizeof kp2),
                        "not used by SingleImageDataset (its LQ is read from lq_folder)");
        return 0;
    }
    if (!L->gt[idx])
        return missing(c, s, "gt_folder");
    if (idx == 0 && !L->patch[0])
        return missing(c, s, "gt_patch_size");
    if (d->lq_folder[0] && L->degradation[idx])
        return fail(c, L->degradation[idx], keypath(s, "degradation", kp2, sizeof kp2),
                    "makes LQ from GT; it cannot be combined with lq_folder '%s'",
                    d->lq_folder);
    if (!d->lq_folder[0] && !d->n_degradations) {
        d->n_degradations = 1;
        snprintf(d->degradation[0].type, sizeof d->degradation[0].type, "BI");
    }
    return 0;
}

static int parse_data(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        pf_section sub;
        if (!strcmp(name, "loaders")) {
            if (get_int32(c, v, kp, 1, 256, &cfg->loaders))
                return -1;
        } else if (!strcmp(name, "samples_per_gpu")) {
            if (get_int32(c, v, kp, 1, PF_CONFIG_MAX_BATCH, &cfg->samples_per_gpu))
                return -1;
            L->samples = node_line(k);
        } else if (!strcmp(name, "prefetch")) {
            if (get_int32(c, v, kp, 1, 1024, &cfg->prefetch))
                return -1;
        } else if (!strcmp(name, "cache_mb")) {
            if (get_int32(c, v, kp, 0, 1 << 20, &cfg->cache_mb))
                return -1;
        } else if (!strcmp(name, "loader_threads")) {
            if (get_int32(c, v, kp, 1, 64, &cfg->loader_threads))
                return -1;
        } else if (!strcmp(name, "on_bad_sample")) {
            static const char *modes[] = {"fail", "skip", NULL};
            char mode[8];
            if (get_choice(c, v, kp, modes, 0, mode, sizeof mode))
                return -1;
            cfg->skip_bad_samples = !strcmp(mode, "skip");
        } else if (!strcmp(name, "train") || !strcmp(name, "eval") || !strcmp(name, "test")) {
            int idx = name[1] == 'r' ? 0 : name[1] == 'v' ? 1 : 2;
            pf_dataset_cfg *d = idx == 0 ? &cfg->train : idx == 1 ? &cfg->eval : &cfg->test;
            if (open_section(c, k, v, kp, &sub) || parse_dataset(c, &sub, d, idx, L))
                return -1;
            if (idx == 1)
                L->data_eval = node_line(k);
        } else {
            return unknown(c, s, PF_SEC_DATA, k, name);
        }
    }
    if (r < 0)
        return -1;
    /* data.train is needed to train (pixflow train checks it); `pixflow test` needs only
       data.test. An empty data section is still an error. */
    if (!cfg->train.present && !cfg->eval.present && !cfg->test.present)
        return missing(c, s, "train");
    return 0;
}

/* One custom key `ck` (named `kp` for messages) from mapping `v` under key node `k`:
   {lr_mult: X, decay_mult: Y}, both default 1. */
static int parse_custom_key(pf_cfg_ctx *c, const pf_ynode *k, const pf_ynode *v, const char *kp,
                            pf_custom_key *ck) {
    pf_section one;
    if (open_section(c, k, v, kp, &one))
        return -1;
    ck->lr_mult = ck->decay_mult = 1.0f;
    void *it = NULL;
    char field[64], fp[256];
    const pf_ynode *fk, *fv;
    int r;
    while ((r = next_pair(c, &one, &it, field, sizeof field, &fk, &fv)) > 0) {
        snprintf(fp, sizeof fp, "%s.%s", kp, field);
        float *out = !strcmp(field, "lr_mult")      ? &ck->lr_mult
                   : !strcmp(field, "decay_mult")   ? &ck->decay_mult
                                                    : NULL;
        if (!out)
            return unknown(c, &one, PF_SEC_CUSTOM_KEY, fk, field);
        if (get_float(c, fv, fp, 0, 0, HUGE_VAL, out))
            return -1;
    }
    return r < 0 ? -1 : 0;
}

/* optimizers.paramwise_cfg: {custom_keys: {KEY: {lr_mult: X, decay_mult: Y}}} (MMCV). */
static int parse_paramwise(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    static const char *name_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_.";
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        pf_section keys;
        if (strcmp(name, "custom_keys") != 0)
            return unknown(c, s, PF_SEC_PARAMWISE, k, name);
        if (open_section(c, k, v, kp, &keys))
            return -1;
        void *it2 = NULL;
        char key[64], kp2[192];
        const pf_ynode *k2, *v2;
        int r2;
        while ((r2 = next_pair(c, &keys, &it2, key, sizeof key, &k2, &v2)) > 0) {
            snprintf(kp2, sizeof kp2, "%s.%s", kp, key);
            if (!key[0] || strspn(key, name_chars) != strlen(key))
                return fail(c, node_line(k2), kp2, "a parameter-name part is made of letters, "
                            "digits, '_' and '.'");
            if (cfg->n_custom_keys == PF_MAX_CUSTOM_KEYS)
                return fail(c, node_line(k2), kp2, "at most %d custom keys", PF_MAX_CUSTOM_KEYS);
            pf_custom_key *ck = &cfg->custom_keys[cfg->n_custom_keys++];
            snprintf(ck->key, sizeof ck->key, "%s", key);
            if (parse_custom_key(c, k2, v2, kp2, ck))
                return -1;
        }
        if (r2 < 0)
            return -1;
    }
    return r < 0 ? -1 : 0;
}

static int parse_optim(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    static const char *types[] = {"Adam", "AdamW", "SGD", NULL};
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v, *items[4];
    int r, n, have_lr = 0, have_wd = 0;
    int adam_line = 0, sgd_line = 0;    /* a key of only one family, for the type check */
    const char *adam_key = "", *sgd_key = "";
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "type")) {
            if (get_choice(c, v, kp, types, 0, cfg->optim_type, sizeof cfg->optim_type))
                return -1;
        } else if (!strcmp(name, "lr")) {
            if (get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->learning_rate))
                return -1;
            have_lr = 1;
        } else if (!strcmp(name, "betas")) {
            if (get_seq(c, v, kp, 2, 2, &n, items))
                return -1;
            for (int i = 0; i < 2; i++) {
                char ip[160];
                snprintf(ip, sizeof ip, "%s[%d]", kp, i);
                if (get_float(c, items[i], ip, 0, 0, 0.9999999, &cfg->betas[i]))
                    return -1;
            }
            adam_line = node_line(k), adam_key = "betas";
        } else if (!strcmp(name, "eps")) {
            if (get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->eps))
                return -1;
            adam_line = node_line(k), adam_key = "eps";
        } else if (!strcmp(name, "weight_decay")) {
            if (get_float(c, v, kp, 0, 0, HUGE_VAL, &cfg->weight_decay))
                return -1;
            have_wd = 1;
        } else if (!strcmp(name, "momentum")) {
            if (get_float(c, v, kp, 0, 0, 1, &cfg->momentum))
                return -1;
            sgd_line = node_line(k), sgd_key = "momentum";
        } else if (!strcmp(name, "dampening")) {
            if (get_float(c, v, kp, 0, 0, 1, &cfg->dampening))
                return -1;
            sgd_line = node_line(k), sgd_key = "dampening";
        } else if (!strcmp(name, "nesterov")) {
            if (get_bool(c, v, kp, &cfg->nesterov))
                return -1;
            sgd_line = node_line(k), sgd_key = "nesterov";
        } else if (!strcmp(name, "paramwise_cfg")) {
            pf_section sub;
            if (open_section(c, k, v, kp, &sub) || parse_paramwise(c, &sub, cfg))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_OPTIM, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!have_lr)
        return missing(c, s, "lr");
    int sgd = !strcmp(cfg->optim_type, "SGD");
    if (sgd && adam_line)
        return fail(c, adam_line, keypath(s, adam_key, kp, sizeof kp),
                    "only for type Adam or AdamW (type is SGD)");
    if (!sgd && sgd_line)
        return fail(c, sgd_line, keypath(s, sgd_key, kp, sizeof kp),
                    "only for type SGD (type is %s)", cfg->optim_type);
    if (cfg->nesterov && (cfg->momentum <= 0 || cfg->dampening != 0))
        return fail(c, sgd_line, keypath(s, "nesterov", kp, sizeof kp),
                    "Nesterov momentum requires a momentum > 0 and zero dampening (torch)");
    if (!have_wd && !strcmp(cfg->optim_type, "AdamW"))
        cfg->weight_decay = 0.01f;   /* torch.optim.AdamW's default */
    return 0;
}

/* optimizer_config: {grad_clip: {max_norm: X, norm_type: 2}} or grad_clip: null (MMCV
   OptimizerHook). */
static int parse_optimizer_config(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (strcmp(name, "grad_clip") != 0)
            return unknown(c, s, PF_SEC_OPTIMIZER_CONFIG, k, name);
        if (is_null(v)) {
            cfg->grad_clip_max_norm = 0;
            continue;
        }
        pf_section clip;
        if (open_section(c, k, v, kp, &clip))
            return -1;
        void *it2 = NULL;
        char field[64], kp2[192];
        const pf_ynode *k2, *v2;
        int r2, have_max = 0;
        while ((r2 = next_pair(c, &clip, &it2, field, sizeof field, &k2, &v2)) > 0) {
            keypath(&clip, field, kp2, sizeof kp2);
            if (!strcmp(field, "max_norm")) {
                if (get_float(c, v2, kp2, 0, 1, HUGE_VAL, &cfg->grad_clip_max_norm))
                    return -1;
                have_max = 1;
            } else if (!strcmp(field, "norm_type")) {
                float t;
                if (get_float(c, v2, kp2, 0, 1, HUGE_VAL, &t))
                    return -1;
                if (t != 2.0f)
                    return fail(c, node_line(v2), kp2, "only the L2 norm (2) is implemented");
            } else {
                return unknown(c, &clip, PF_SEC_GRAD_CLIP, k2, field);
            }
        }
        if (r2 < 0)
            return -1;
        if (!have_max)
            return missing(c, &clip, "max_norm");
    }
    return r < 0 ? -1 : 0;
}

static int parse_lr(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    static const char *policies[] = {"Fixed", "Step", "CosineRestart", NULL};
    static const char *warmups[] = {"linear", NULL};
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v, *items[PF_MAX_PERIODS];
    int r, n;
    int have_step = 0, have_periods = 0, have_weights = 0, warm_line = 0;
    char warm_name[64] = "";
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "policy")) {
            if (get_choice(c, v, kp, policies, 0, cfg->lr_policy, sizeof cfg->lr_policy))
                return -1;
        } else if (!strcmp(name, "step")) {
            if (get_seq(c, v, kp, 1, PF_MAX_MILESTONES, &n, items))
                return -1;
            for (int i = 0; i < n; i++) {
                char ip[160];
                snprintf(ip, sizeof ip, "%s[%d]", kp, i);
                if (get_int(c, items[i], ip, 1, INT64_MAX, &cfg->lr_step[i]))
                    return -1;
                if (i && cfg->lr_step[i] <= cfg->lr_step[i - 1])
                    return fail(c, node_line(items[i]), ip,
                                "milestones must be strictly increasing");
            }
            cfg->n_lr_step = n;
            have_step = 1;
        } else if (!strcmp(name, "gamma")) {
            if (get_float(c, v, kp, 0, 1, HUGE_VAL, &cfg->lr_gamma))
                return -1;
        } else if (!strcmp(name, "periods")) {
            if (get_seq(c, v, kp, 1, PF_MAX_PERIODS, &n, items))
                return -1;
            for (int i = 0; i < n; i++) {
                char ip[160];
                snprintf(ip, sizeof ip, "%s[%d]", kp, i);
                if (get_int(c, items[i], ip, 1, INT64_MAX / PF_MAX_PERIODS, &cfg->lr_periods[i]))
                    return -1;
            }
            cfg->n_lr_periods = n;
            have_periods = 1;
            L->lr_periods = node_line(k);
        } else if (!strcmp(name, "restart_weights")) {
            if (get_seq(c, v, kp, 1, PF_MAX_PERIODS, &n, items))
                return -1;
            for (int i = 0; i < n; i++) {
                char ip[160];
                snprintf(ip, sizeof ip, "%s[%d]", kp, i);
                if (get_float(c, items[i], ip, 0, 1, HUGE_VAL, &cfg->lr_restart_weights[i]))
                    return -1;
            }
            have_weights = n;
            L->restart_w = node_line(k);
        } else if (!strcmp(name, "min_lr")) {
            if (get_float(c, v, kp, 0, 0, HUGE_VAL, &cfg->lr_min))
                return -1;
        } else if (!strcmp(name, "warmup")) {
            if (is_null(v))
                cfg->lr_warmup[0] = 0;
            else if (get_choice(c, v, kp, warmups, 0, cfg->lr_warmup, sizeof cfg->lr_warmup))
                return -1;
        } else if (!strcmp(name, "warmup_iters")) {
            if (get_int(c, v, kp, 1, INT64_MAX, &cfg->lr_warmup_iters))
                return -1;
            if (!warm_line) {
                warm_line = node_line(k);
                snprintf(warm_name, sizeof warm_name, "%s", name);
            }
        } else if (!strcmp(name, "warmup_ratio")) {
            if (get_float(c, v, kp, 0, 1, 1, &cfg->lr_warmup_ratio))
                return -1;
            if (!warm_line) {
                warm_line = node_line(k);
                snprintf(warm_name, sizeof warm_name, "%s", name);
            }
        } else {
            return unknown(c, s, PF_SEC_LR, k, name);
        }
    }
    if (r < 0)
        return -1;
    /* Policy keys are checked against the policy after the walk, whatever their order. */
    it = NULL;
    while (next_pair(c, s, &it, name, sizeof name, &k, &v) > 0) {
        int is_step = !strcmp(name, "step") || !strcmp(name, "gamma");
        int is_cos = !strcmp(name, "periods") || !strcmp(name, "restart_weights") ||
                     !strcmp(name, "min_lr");
        const char *want = is_step ? "Step" : is_cos ? "CosineRestart" : NULL;
        if (want && strcmp(want, cfg->lr_policy))
            return fail(c, node_line(k), keypath(s, name, kp, sizeof kp),
                        "only allowed with policy %s (policy is %s)", want, cfg->lr_policy);
    }
    if (!strcmp(cfg->lr_policy, "Step") && !have_step)
        return missing(c, s, "step");
    if (!strcmp(cfg->lr_policy, "CosineRestart")) {
        if (!have_periods)
            return missing(c, s, "periods");
        if (have_weights && have_weights != cfg->n_lr_periods)
            return fail(c, L->restart_w, "lr_config.restart_weights",
                        "has %d items but periods has %d", have_weights, cfg->n_lr_periods);
        if (!have_weights)
            for (int i = 0; i < cfg->n_lr_periods; i++)
                cfg->lr_restart_weights[i] = 1.0f;
    }
    if (!cfg->lr_warmup[0] && warm_line)
        return fail(c, warm_line, keypath(s, warm_name, kp, sizeof kp),
                    "only allowed with warmup: linear");
    if (cfg->lr_warmup[0] && cfg->lr_warmup_iters <= 0)
        return missing(c, s, "warmup_iters");
    return 0;
}

static int parse_ckpt(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "interval")) {
            if (get_int(c, v, kp, 1, INT64_MAX, &cfg->ckpt_interval))
                return -1;
            L->ckpt_interval = node_line(k);
        } else if (!strcmp(name, "max_keep_ckpts")) {
            if (get_int32(c, v, kp, -1, 1 << 20, &cfg->ckpt_max_keep))
                return -1;
            if (cfg->ckpt_max_keep == 0)
                return fail(c, node_line(v), kp, "must be -1 (keep all) or positive, got 0");
        } else {
            return unknown(c, s, PF_SEC_CKPT, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!L->ckpt_interval)
        return missing(c, s, "interval");
    return 0;
}

static int parse_log(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "interval")) {
            if (get_int(c, v, kp, 1, INT64_MAX, &cfg->log_interval))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_LOG, k, name);
        }
    }
    return r < 0 ? -1 : 0;
}

static int parse_visual(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "interval")) {
            if (get_int(c, v, kp, 0, INT64_MAX, &cfg->visual_interval))
                return -1;
        } else if (!strcmp(name, "output_dir")) {
            if (get_str(c, v, kp, cfg->visual_output_dir, sizeof cfg->visual_output_dir))
                return -1;
        } else if (!strcmp(name, "num_samples")) {
            if (get_int32(c, v, kp, 1, PF_VISUAL_MAX_SAMPLES, &cfg->visual_num_samples))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_VISUAL, k, name);
        }
    }
    return r < 0 ? -1 : 0;
}

static int parse_eval(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    static const char *metrics[] = {"PSNR", "SSIM", NULL};
    static const char *convert[] = {"y", NULL};
    void *it = NULL;
    char name[64], kp[128], tmp[8];
    const pf_ynode *k, *v, *items[8];
    int r, n;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "interval")) {
            if (get_int(c, v, kp, 1, INT64_MAX, &cfg->eval_interval))
                return -1;
            L->eval_interval = node_line(k);
        } else if (!strcmp(name, "metrics")) {
            if (get_seq(c, v, kp, 1, 2, &n, items))
                return -1;
            cfg->eval_psnr = cfg->eval_ssim = 0;
            for (int i = 0; i < n; i++) {
                char ip[160];
                snprintf(ip, sizeof ip, "%s[%d]", kp, i);
                if (get_choice(c, items[i], ip, metrics, 0, tmp, sizeof tmp))
                    return -1;
                int *flag = !strcmp(tmp, "PSNR") ? &cfg->eval_psnr : &cfg->eval_ssim;
                if (*flag)
                    return fail(c, node_line(items[i]), ip, "%s listed twice", tmp);
                *flag = 1;
            }
        } else if (!strcmp(name, "crop_border")) {
            if (get_int32(c, v, kp, 0, 1 << 16, &cfg->crop_border))
                return -1;
        } else if (!strcmp(name, "convert_to")) {
            if (is_null(v))
                cfg->eval_y_channel = 0;
            else if (get_choice(c, v, kp, convert, 1, tmp, sizeof tmp))
                return -1;
            else
                cfg->eval_y_channel = 1;
        } else if (!strcmp(name, "save_image")) {
            if (get_bool(c, v, kp, &cfg->eval_save_image))
                return -1;
        } else if (!strcmp(name, "instances")) {
            if (get_int32(c, v, kp, 1, 64, &cfg->eval_instances))
                return -1;
        } else if (!strcmp(name, "device")) {
            static const char *devices[] = {"cpu", NULL};
            if (get_choice(c, v, kp, devices, 0, cfg->eval_device, sizeof cfg->eval_device))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_EVAL, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!L->eval_interval)
        return missing(c, s, "interval");
    return 0;
}

static int parse_eval_cfg(pf_cfg_ctx *c, pf_section *s, pf_config *cfg) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "pad_multiple")) {
            if (get_int32(c, v, kp, 1, 1 << 16, &cfg->pad_multiple))
                return -1;
        } else if (!strcmp(name, "ensemble")) {
            if (get_bool(c, v, kp, &cfg->eval_ensemble))
                return -1;
        } else if (!strcmp(name, "tile")) {
            if (get_int32(c, v, kp, 0, 1 << 16, &cfg->eval_tile))
                return -1;
        } else if (!strcmp(name, "tile_overlap")) {
            if (get_int32(c, v, kp, 0, 1 << 16, &cfg->eval_tile_overlap))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_EVAL_CFG, k, name);
        }
    }
    return r < 0 ? -1 : 0;
}

static int get_opt_path(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, char *out,
                        size_t size);

/* security: CURVE on the links that can cross hosts (docs/architecture.md, Security). */
static int parse_security(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    void *it = NULL;
    char name[64], kp[128];
    const pf_ynode *k, *v;
    int r;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        keypath(s, name, kp, sizeof kp);
        if (!strcmp(name, "curve")) {
            if (get_bool(c, v, kp, &cfg->curve))
                return -1;
        } else if (!strcmp(name, "keys_dir")) {
            if (get_opt_path(c, v, kp, cfg->keys_dir, sizeof cfg->keys_dir))
                return -1;
            L->keys_dir = node_line(k);
        } else {
            return unknown(c, s, PF_SEC_SECURITY, k, name);
        }
    }
    return r < 0 ? -1 : 0;
}

/* A path that may be null. */
static int get_opt_path(pf_cfg_ctx *c, const pf_ynode *v, const char *kp, char *out,
                        size_t size) {
    if (is_null(v)) {
        out[0] = 0;
        return 0;
    }
    if (get_str(c, v, kp, out, size))
        return -1;
    if (!out[0])
        return fail(c, node_line(v), kp, "must not be empty (use null for none)");
    return 0;
}

static int parse_top(pf_cfg_ctx *c, pf_section *s, pf_config *cfg, pf_lines *L) {
    static const char *levels[] = {"debug", "info", "warning", "error", NULL};
    static const char *conv_algos[] = {"auto", "direct", "winograd", NULL};
    void *it = NULL;
    char name[64];
    const pf_ynode *k, *v;
    int r, have_model = 0, have_data = 0, have_optim = 0, have_work = 0;
    while ((r = next_pair(c, s, &it, name, sizeof name, &k, &v)) > 0) {
        pf_section sub;
        const char *kp = name;
        if (!strcmp(name, "model")) {
            if (open_section(c, k, v, kp, &sub) || parse_model(c, &sub, cfg, L))
                return -1;
            have_model = 1;
        } else if (!strcmp(name, "data")) {
            if (open_section(c, k, v, kp, &sub) || parse_data(c, &sub, cfg, L))
                return -1;
            have_data = 1;
        } else if (!strcmp(name, "optimizers")) {
            if (open_section(c, k, v, kp, &sub) || parse_optim(c, &sub, cfg))
                return -1;
            have_optim = 1;
        } else if (!strcmp(name, "optimizer_config")) {
            if (open_section(c, k, v, kp, &sub) || parse_optimizer_config(c, &sub, cfg))
                return -1;
        } else if (!strcmp(name, "ema_decay")) {
            if (get_float(c, v, kp, 0, 0, 0.9999999, &cfg->ema_decay))
                return -1;
        } else if (!strcmp(name, "lr_config")) {
            if (open_section(c, k, v, kp, &sub) || parse_lr(c, &sub, cfg, L))
                return -1;
        } else if (!strcmp(name, "total_iters")) {
            if (get_int(c, v, kp, 1, INT64_MAX / 2, &cfg->total_iters))
                return -1;
            L->total_iters = node_line(k);
        } else if (!strcmp(name, "total_epochs")) {
            if (get_int(c, v, kp, 1, 1 << 30, &cfg->total_epochs))
                return -1;
            L->total_epochs = node_line(k);
        } else if (!strcmp(name, "checkpoint_config")) {
            if (open_section(c, k, v, kp, &sub) || parse_ckpt(c, &sub, cfg, L))
                return -1;
        } else if (!strcmp(name, "log_config")) {
            if (open_section(c, k, v, kp, &sub) || parse_log(c, &sub, cfg))
                return -1;
        } else if (!strcmp(name, "visual_config")) {
            if (open_section(c, k, v, kp, &sub) || parse_visual(c, &sub, cfg))
                return -1;
        } else if (!strcmp(name, "evaluation")) {
            if (open_section(c, k, v, kp, &sub) || parse_eval(c, &sub, cfg, L))
                return -1;
            L->evaluation = node_line(k);
        } else if (!strcmp(name, "eval_cfg")) {
            if (open_section(c, k, v, kp, &sub) || parse_eval_cfg(c, &sub, cfg))
                return -1;
        } else if (!strcmp(name, "security")) {
            if (open_section(c, k, v, kp, &sub) || parse_security(c, &sub, cfg, L))
                return -1;
        } else if (!strcmp(name, "work_dir")) {
            if (get_str(c, v, kp, cfg->work_dir, sizeof cfg->work_dir))
                return -1;
            if (!cfg->work_dir[0])
                return fail(c, node_line(v), kp, "must not be empty");
            have_work = 1;
        } else if (!strcmp(name, "load_from")) {
            if (get_opt_path(c, v, kp, cfg->load_from, sizeof cfg->load_from))
                return -1;
            L->load_from = node_line(k);
        } else if (!strcmp(name, "resume_from")) {
            if (get_opt_path(c, v, kp, cfg->resume_from, sizeof cfg->resume_from))
                return -1;
            L->resume_from = node_line(k);
        } else if (!strcmp(name, "resume_optim")) {
            if (get_bool(c, v, kp, &cfg->resume_optim))
                return -1;
        } else if (!strcmp(name, "seed")) {
            int64_t seed;
            if (get_int(c, v, kp, 0, INT64_MAX, &seed))
                return -1;
            cfg->seed = (uint64_t)seed;
        } else if (!strcmp(name, "log_level")) {
            if (get_choice(c, v, kp, levels, 1, cfg->log_level, sizeof cfg->log_level))
                return -1;
        } else if (!strcmp(name, "conv_algorithm")) {
            if (get_choice(c, v, kp, conv_algos, 0, cfg->conv_algorithm,
                           sizeof cfg->conv_algorithm))
                return -1;
        } else {
            return unknown(c, s, PF_SEC_TOP, k, name);
        }
    }
    if (r < 0)
        return -1;
    if (!have_model)
        return missing(c, s, "model");
    if (!have_data)
        return missing(c, s, "data");
    if (!have_optim)
        return missing(c, s, "optimizers");
    if (!have_work)
        return missing(c, s, "work_dir");
    return 0;
}

/* ---- cross-checks --------------------------------------------------------------------- */

static int check_dir(pf_cfg_ctx *c, int line, const char *key, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0)
        return fail(c, line, key, "no such directory '%s'", dir);
    if (!S_ISDIR(st.st_mode))
        return fail(c, line, key, "not a directory: '%s'", dir);
    return 0;
}

static int check_file(pf_cfg_ctx *c, int line, const char *key, const char *file) {
    struct stat st;
    if (stat(file, &st) != 0)
        return fail(c, line, key, "no such file '%s'", file);
    if (!S_ISREG(st.st_mode))
        return fail(c, line, key, "not a regular file: '%s'", file);
    return 0;
}

static int cross_check(pf_cfg_ctx *c, pf_config *cfg, pf_lines *L, int check_paths) {
    int both = L->total_iters && L->total_epochs;
    if (both || (!L->total_iters && !L->total_epochs))
        return fail(c, both ? (L->total_iters > L->total_epochs ? L->total_iters
                                                               : L->total_epochs)
                            : 1,
                    "total_iters", "exactly one of total_iters and total_epochs must be set");
    if (cfg->train.present && cfg->train.gt_patch_size % cfg->scale)
        return fail(c, L->patch[0], "data.train.gt_patch_size",
                    "must be a positive multiple of model.scale (%d), got %d", cfg->scale,
                    cfg->train.gt_patch_size);
    /* RRDBNet x2 pixel-unshuffles the LQ patch by 2 first (BasicSR asserts even sizes). */
    if (cfg->train.present && model_type_bit(cfg->model_type) == M_RRDBNET &&
        cfg->scale == 2 && cfg->train.gt_patch_size % 4)
        return fail(c, L->patch[0], "data.train.gt_patch_size",
                    "must be a multiple of 4 for RRDBNet x2 (the LQ patch is pixel-unshuffled "
                    "by 2), got %d", cfg->train.gt_patch_size);
    /* No checkpoint_config: one checkpoint at the end of an iteration-based run. The epoch
       runner's length in iterations is known only once the dataset is read, so there the
       interval stays 0, which means "at the end only". */
    if (!L->ckpt_interval && cfg->total_iters)
        cfg->ckpt_interval = cfg->total_iters;
    if (L->evaluation && !cfg->eval.present)
        return fail(c, L->evaluation, "data.eval", "required when evaluation is set");
    if (L->evaluation) {
        if (!L->ckpt_interval)
            return fail(c, L->evaluation, "evaluation.interval",
                        "evaluation runs on checkpoints: checkpoint_config.interval must be set");
        if (cfg->eval_interval % cfg->ckpt_interval)
            return fail(c, L->eval_interval, "evaluation.interval",
                        "must be a multiple of checkpoint_config.interval (%lld), got %lld",
                        (long long)cfg->ckpt_interval, (long long)cfg->eval_interval);
    }
    if (cfg->lr_warmup[0] && cfg->total_iters && cfg->lr_warmup_iters > cfg->total_iters)
        return fail(c, 1, "lr_config.warmup_iters", "larger than total_iters (%lld)",
                    (long long)cfg->total_iters);
    if (!strcmp(cfg->lr_policy, "CosineRestart") && cfg->total_iters) {
        int64_t sum = 0;
        for (int i = 0; i < cfg->n_lr_periods; i++)
            sum += cfg->lr_periods[i];
        if (sum < cfg->total_iters)
            return fail(c, L->lr_periods, "lr_config.periods",
                        "sum of periods (%lld) is less than total_iters (%lld)", (long long)sum,
                        (long long)cfg->total_iters);
    }
    if (cfg->load_from[0] && cfg->resume_from[0])
        return fail(c, L->resume_from, "resume_from",
                    "load_from and resume_from are exclusive (resume restores weights too)");
    if (!check_paths)
        return 0;
    static const char *names[3] = {"data.train", "data.eval", "data.test"};
    const pf_dataset_cfg *ds[3] = {&cfg->train, &cfg->eval, &cfg->test};
    for (int i = 0; i < 3; i++) {
        char kp[64];
        if (!ds[i]->present)
            continue;
        snprintf(kp, sizeof kp, "%s.gt_folder", names[i]);
        if (ds[i]->gt_folder[0] && check_dir(c, L->gt[i], kp, ds[i]->gt_folder))
            return -1;
        snprintf(kp, sizeof kp, "%s.lq_folder", names[i]);
        if (ds[i]->lq_folder[0] && check_dir(c, L->lq[i], kp, ds[i]->lq_folder))
            return -1;
        snprintf(kp, sizeof kp, "%s.meta_info_file", names[i]);
        if (ds[i]->meta_info_file[0] && check_file(c, L->meta[i], kp, ds[i]->meta_info_file))
            return -1;
    }
    if (cfg->load_from[0] && check_file(c, L->load_from, "load_from", cfg->load_from))
        return -1;
    if (cfg->keys_dir[0] && check_dir(c, L->keys_dir, "security.keys_dir", cfg->keys_dir))
        return -1;
    if (cfg->resume_from[0] && strcmp(cfg->resume_from, "auto") &&
        check_file(c, L->resume_from, "resume_from", cfg->resume_from))
        return -1;
    return 0;
}

/* Aliases are refused rather than resolved (common/yaml_tree.h): expanding nested aliases grows
   exponentially ("billion laughs"), and the config is also parsed from the network (WELCOME).
   The nesting depth is bounded too. */
#define PF_CONFIG_MAX_DEPTH 16

/* ---- public --------------------------------------------------------------------------- */

void pf_config_defaults(pf_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->in_channels = cfg->out_channels = 3;
    cfg->n_feats = 64;
    cfg->n_blocks = 16;
    cfg->num_group = 10;
    cfg->squeeze_factor = 16;
    cfg->num_grow_ch = 32;
    cfg->fsrcnn_d = 56;
    cfg->fsrcnn_s = 12;
    cfg->fsrcnn_m = 4;
    cfg->res_scale = 1.0f;
    cfg->rgb_mean[0] = 0.4488f;
    cfg->rgb_mean[1] = 0.4371f;
    cfg->rgb_mean[2] = 0.4040f;
    cfg->img_range = 255.0f;
    int ch[4] = {3, 64, 32, 3}, ks[3] = {9, 1, 5};
    memcpy(cfg->srcnn_channels, ch, sizeof ch);
    memcpy(cfg->srcnn_kernel_sizes, ks, sizeof ks);
    snprintf(cfg->loss_type, sizeof cfg->loss_type, "L1Loss");
    cfg->loss_weight = 1.0f;
    cfg->charbonnier_eps = 1e-12f;
    cfg->loaders = 2;
    cfg->samples_per_gpu = 16;
    cfg->prefetch = 4;
    cfg->cache_mb = 1024;
    cfg->loader_threads = 1;
    pf_dataset_cfg *ds[3] = {&cfg->train, &cfg->eval, &cfg->test};
    for (int i = 0; i < 3; i++) {
        snprintf(ds[i]->type, sizeof ds[i]->type, "PairedImageDataset");
        snprintf(ds[i]->filename_tmpl, sizeof ds[i]->filename_tmpl, "{}");
        ds[i]->repeat = 1;
    }
    snprintf(cfg->optim_type, sizeof cfg->optim_type, "Adam");
    cfg->betas[0] = 0.9f;
    cfg->betas[1] = 0.999f;
    cfg->eps = 1e-8f;
    snprintf(cfg->lr_policy, sizeof cfg->lr_policy, "Fixed");
    cfg->lr_gamma = 0.1f;
    cfg->lr_warmup_ratio = 0.1f;
    cfg->ckpt_max_keep = -1;
    cfg->log_interval = 10;
    cfg->visual_num_samples = 4;
    cfg->eval_psnr = cfg->eval_ssim = 1;
    cfg->eval_instances = 1;
    snprintf(cfg->eval_device, sizeof cfg->eval_device, "cpu");
    cfg->pad_multiple = 1;
    cfg->eval_tile_overlap = 40;
    cfg->resume_optim = 1;
    snprintf(cfg->log_level, sizeof cfg->log_level, "info");
    snprintf(cfg->conv_algorithm, sizeof cfg->conv_algorithm, "auto");
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Offset of the first byte of `s` that does not start a well-formed UTF-8 sequence (RFC 3629:
   no overlong forms, no surrogates, nothing past U+10FFFF), or `len` when all of it is UTF-8.
   The config must be UTF-8 text (YAML 1.2); saying so with the offset is clearer than the
   parser's error (libfyaml 0.7.12, the earlier parser, even looped forever on a directive
   followed by a malformed sequence, "%\xf0", found by tests/fuzz/fuzz_config). */
static size_t utf8_invalid_at(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned char b = s[i];
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF;     /* allowed range of the second byte */
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            n = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            n = 2;
            if (b == 0xE0) lo = 0xA0;           /* overlong */
            if (b == 0xED) hi = 0x9F;           /* surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            n = 3;
            if (b == 0xF0) lo = 0x90;           /* overlong */
            if (b == 0xF4) hi = 0x8F;           /* past U+10FFFF */
        } else {
            return i;
        }
        if (len - i - 1 < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return i;
        i += n + 1;
    }
    return len;
}

static int parse_text(pf_config *cfg, const char *path, const char *text, size_t len,
                      int check_paths, char *err, size_t errlen) {
    pf_cfg_ctx c = {path ? path : "<config>", err, errlen, 0};
    if (err && errlen)
        err[0] = 0;
    pf_config_defaults(cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", c.path);
    if (len > PF_CONFIG_MAX_BYTES)
        return fail(&c, 1, "config", "larger than %d bytes", PF_CONFIG_MAX_BYTES);
    if (memchr(text, 0, len))
        return fail(&c, 1, "config", "contains a NUL byte");
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len) {
        int line = 1;
        for (size_t i = 0; i < bad; i++)
            line += text[i] == '\n';
        return fail(&c, line, "config", "not UTF-8 text (byte 0x%02x at offset %zu)",
                    (unsigned char)text[bad], bad);
    }

    int yline = 1;
    char ymsg[256];
    pf_ydoc *doc = pf_yaml_parse(text, len, PF_CONFIG_MAX_DEPTH, &yline, ymsg, sizeof ymsg);
    if (!doc)
        return fail(&c, yline, "yaml", "%s", ymsg);
    const pf_ynode *root = pf_ydoc_root(doc);
    pf_lines L;
    memset(&L, 0, sizeof L);
    pf_section top = {.map = root, .opener = NULL, .prefix = ""};
    char g[96];
    int rc;
    if (!root || ytype(root) != PF_Y_MAPPING)
        rc = fail(&c, node_line(root), "config", "expected a mapping at the top level, got %s",
                  describe(root, g, sizeof g));
    else
        rc = parse_top(&c, &top, cfg, &L);
    if (!rc)
        rc = cross_check(&c, cfg, &L, check_paths);
    pf_ydoc_free(&doc);
    if (rc)
        return -1;
    char *yaml = pf_config_to_yaml(cfg);
    if (!yaml)
        return fail(&c, 1, "config", "out of memory");
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
        return fail(&c, 1, "config", "cannot open: %s", strerror(errno));
    }
    char *buf = malloc(PF_CONFIG_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, PF_CONFIG_MAX_BYTES + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        pf_config_defaults(cfg);
        return fail(&c, 1, "config", buf ? "read error" : "out of memory");
    }
    int rc = pf_config_parse(cfg, path, buf, n, 1, err, errlen);
    free(buf);
    return rc;
}

/* ---- writing -------------------------------------------------------------------------- */

typedef struct {
    char *s;                            /* text so far, NUL-terminated */
    size_t len, cap;                    /* used and allocated bytes */
    int oom;                            /* 1 after a failed allocation */
} pf_buf;

static void put(pf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(pf_buf *b, const char *fmt, ...) {
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

/* A single-quoted YAML string ('' escapes a quote). */
static void put_str(pf_buf *b, const char *s) {
    put(b, "'");
    for (; *s; s++)
        put(b, *s == '\'' ? "''" : "%c", *s);
    put(b, "'");
}

/* The shortest decimal that reads back as the same float (at most 9 digits always do). */
static void put_float(pf_buf *b, float v) {
    char t[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(t, sizeof t, "%.*g", digits, (double)v);
        if (strtof(t, NULL) == v)
            break;
    }
    put(b, "%s", t);
}

/* A word from a fixed vocabulary (type names, policies): safe to write unquoted. */
static void put_word(pf_buf *b, const char *s) {
    put(b, "%s", s);
}

static void put_degradation(pf_buf *b, const pf_degradation *g) {
    put(b, "      - type: ");
    put_word(b, g->type);
    put(b, "\n");
    if (!strcmp(g->type, "BD")) {
        put(b, "        kernel_size: %d\n        sigma: ", g->kernel_size);
        put_float(b, g->sigma);
        put(b, "\n");
    } else if (!strcmp(g->type, "DN")) {
        put(b, "        sigma: [");
        put_float(b, g->sigma);
        put(b, ", ");
        put_float(b, g->sigma_max);
        put(b, "]\n");
    } else if (!strcmp(g->type, "JPEG")) {
        put(b, "        quality: [%d, %d]\n", g->quality, g->quality_max);
    }
}

static void put_dataset(pf_buf *b, const char *name, const pf_dataset_cfg *d, int train) {
    if (!d->present)
        return;
    put(b, "  %s:\n    type: ", name);
    put_word(b, d->type);
    if (d->gt_folder[0]) {
        put(b, "\n    gt_folder: ");
        put_str(b, d->gt_folder);
    }
    put(b, "\n    lq_folder: ");
    if (d->lq_folder[0])
        put_str(b, d->lq_folder);
    else
        put(b, "null");
    put(b, "\n    filename_tmpl: ");
    put_str(b, d->filename_tmpl);
    put(b, "\n    meta_info_file: ");
    if (d->meta_info_file[0])
        put_str(b, d->meta_info_file);
    else
        put(b, "null");
    put(b, "\n");
    if (d->n_degradations) {
        put(b, "    degradation:\n");
        for (int i = 0; i < d->n_degradations; i++)
            put_degradation(b, &d->degradation[i]);
    }
    if (train)
        put(b, "    gt_patch_size: %d\n    use_flip: %s\n    use_rot: %s\n    repeat: %d\n",
            d->gt_patch_size, d->use_flip ? "true" : "false", d->use_rot ? "true" : "false",
            d->repeat);
}

char *pf_config_to_yaml(const pf_config *cfg) {
    pf_buf b = {malloc(4096), 0, 4096, 0};
    if (!b.s)
        return NULL;
    b.s[0] = 0;
    const char *t = cfg->model_type;
    put(&b, "model:\n  type: ");
    put_word(&b, t);
    put(&b, "\n  scale: %d\n  in_channels: %d\n  out_channels: %d\n", cfg->scale,
        cfg->in_channels, cfg->out_channels);
    /* Only the keys the type takes (the parser refuses the others); EDSR's and SRCNN's keys
       come in the order they always had, so their configs keep their hashes. */
    if (model_key_applies(t, MK_N_FEATS))
        put(&b, "  n_feats: %d\n  n_blocks: %d\n", cfg->n_feats, cfg->n_blocks);
    if (model_key_applies(t, MK_NUM_GROUP))
        put(&b, "  num_group: %d\n  squeeze_factor: %d\n", cfg->num_group,
            cfg->squeeze_factor);
    if (model_key_applies(t, MK_NUM_GROW_CH))
        put(&b, "  num_grow_ch: %d\n", cfg->num_grow_ch);
    if (model_key_applies(t, MK_RES_SCALE)) {
        put(&b, "  res_scale: ");
        put_float(&b, cfg->res_scale);
        put(&b, "\n  rgb_mean: [");
        for (int i = 0; i < 3; i++) {
            put(&b, i ? ", " : "");
            put_float(&b, cfg->rgb_mean[i]);
        }
        put(&b, "]\n  img_range: ");
        put_float(&b, cfg->img_range);
        put(&b, "\n");
    }
    if (model_key_applies(t, MK_D))
        put(&b, "  d: %d\n  s: %d\n  m: %d\n", cfg->fsrcnn_d, cfg->fsrcnn_s, cfg->fsrcnn_m);
    if (model_key_applies(t, MK_CHANNELS))
        put(&b, "  channels: [%d, %d, %d, %d]\n  kernel_sizes: [%d, %d, %d]\n",
            cfg->srcnn_channels[0], cfg->srcnn_channels[1], cfg->srcnn_channels[2],
            cfg->srcnn_channels[3], cfg->srcnn_kernel_sizes[0], cfg->srcnn_kernel_sizes[1],
            cfg->srcnn_kernel_sizes[2]);
    put(&b, "  loss:\n    type: ");
    put_word(&b, cfg->loss_type);
    put(&b, "\n    loss_weight: ");
    put_float(&b, cfg->loss_weight);
    put(&b, "\n");
    if (!strcmp(cfg->loss_type, "CharbonnierLoss")) {
        put(&b, "    eps: ");
        put_float(&b, cfg->charbonnier_eps);
        put(&b, "\n");
    }

    put(&b, "data:\n  loaders: %d\n  samples_per_gpu: %d\n  prefetch: %d\n", cfg->loaders,
        cfg->samples_per_gpu, cfg->prefetch);
    put(&b, "  cache_mb: %d\n  loader_threads: %d\n  on_bad_sample: %s\n", cfg->cache_mb,
        cfg->loader_threads, cfg->skip_bad_samples ? "skip" : "fail");
    put_dataset(&b, "train", &cfg->train, 1);
    put_dataset(&b, "eval", &cfg->eval, 0);
    put_dataset(&b, "test", &cfg->test, 0);

    put(&b, "optimizers:\n  type: ");
    put_word(&b, cfg->optim_type);
    put(&b, "\n  lr: ");
    put_float(&b, cfg->learning_rate);
    if (strcmp(cfg->optim_type, "SGD") != 0) {
        put(&b, "\n  betas: [");
        put_float(&b, cfg->betas[0]);
        put(&b, ", ");
        put_float(&b, cfg->betas[1]);
        put(&b, "]\n  eps: ");
        put_float(&b, cfg->eps);
    }
    put(&b, "\n  weight_decay: ");
    put_float(&b, cfg->weight_decay);
    put(&b, "\n");
    if (!strcmp(cfg->optim_type, "SGD")) {
        put(&b, "  momentum: ");
        put_float(&b, cfg->momentum);
        put(&b, "\n  dampening: ");
        put_float(&b, cfg->dampening);
        put(&b, "\n  nesterov: %s\n", cfg->nesterov ? "true" : "false");
    }
    if (cfg->n_custom_keys > 0) {
        put(&b, "  paramwise_cfg:\n    custom_keys:\n");
        for (int i = 0; i < cfg->n_custom_keys; i++) {
            put(&b, "      '%s':\n        lr_mult: ", cfg->custom_keys[i].key);
            put_float(&b, cfg->custom_keys[i].lr_mult);
            put(&b, "\n        decay_mult: ");
            put_float(&b, cfg->custom_keys[i].decay_mult);
            put(&b, "\n");
        }
    }
    if (cfg->grad_clip_max_norm > 0) {
        put(&b, "optimizer_config:\n  grad_clip:\n    max_norm: ");
        put_float(&b, cfg->grad_clip_max_norm);
        put(&b, "\n    norm_type: 2\n");
    }
    if (cfg->ema_decay > 0) {
        put(&b, "ema_decay: ");
        put_float(&b, cfg->ema_decay);
        put(&b, "\n");
    }

    put(&b, "lr_config:\n  policy: ");
    put_word(&b, cfg->lr_policy);
    put(&b, "\n");
    if (!strcmp(cfg->lr_policy, "Step")) {
        put(&b, "  step: [");
        for (int i = 0; i < cfg->n_lr_step; i++)
            put(&b, "%s%lld", i ? ", " : "", (long long)cfg->lr_step[i]);
        put(&b, "]\n  gamma: ");
        put_float(&b, cfg->lr_gamma);
        put(&b, "\n");
    } else if (!strcmp(cfg->lr_policy, "CosineRestart")) {
        put(&b, "  periods: [");
        for (int i = 0; i < cfg->n_lr_periods; i++)
            put(&b, "%s%lld", i ? ", " : "", (long long)cfg->lr_periods[i]);
        put(&b, "]\n  restart_weights: [");
        for (int i = 0; i < cfg->n_lr_periods; i++) {
            put(&b, i ? ", " : "");
            put_float(&b, cfg->lr_restart_weights[i]);
        }
        put(&b, "]\n  min_lr: ");
        put_float(&b, cfg->lr_min);
        put(&b, "\n");
    }
    if (cfg->lr_warmup[0]) {
        put(&b, "  warmup: ");
        put_word(&b, cfg->lr_warmup);
        put(&b, "\n  warmup_iters: %lld\n  warmup_ratio: ", (long long)cfg->lr_warmup_iters);
        put_float(&b, cfg->lr_warmup_ratio);
        put(&b, "\n");
    } else {
        put(&b, "  warmup: null\n");
    }

    if (cfg->total_iters)
        put(&b, "total_iters: %lld\n", (long long)cfg->total_iters);
    else
        put(&b, "total_epochs: %lld\n", (long long)cfg->total_epochs);
    if (cfg->ckpt_interval)
        put(&b, "checkpoint_config:\n  interval: %lld\n  max_keep_ckpts: %d\n",
            (long long)cfg->ckpt_interval, cfg->ckpt_max_keep);
    put(&b, "log_config:\n  interval: %lld\n", (long long)cfg->log_interval);
    if (cfg->visual_interval || cfg->visual_num_samples != 4 || cfg->visual_output_dir[0])
        put(&b, "visual_config:\n  interval: %lld\n  num_samples: %d\n",
            (long long)cfg->visual_interval, cfg->visual_num_samples);
    if (cfg->visual_output_dir[0]) {
        put(&b, "  output_dir: ");
        put_str(&b, cfg->visual_output_dir);
        put(&b, "\n");
    }
    if (cfg->eval_interval) {
        put(&b, "evaluation:\n  interval: %lld\n  metrics: [", (long long)cfg->eval_interval);
        put(&b, "%s%s%s]\n", cfg->eval_psnr ? "PSNR" : "",
            cfg->eval_psnr && cfg->eval_ssim ? ", " : "", cfg->eval_ssim ? "SSIM" : "");
        put(&b, "  crop_border: %d\n  convert_to: %s\n  save_image: %s\n", cfg->crop_border,
            cfg->eval_y_channel ? "y" : "null", cfg->eval_save_image ? "true" : "false");
        put(&b, "  instances: %d\n  device: %s\n", cfg->eval_instances, cfg->eval_device);
    }
    put(&b, "eval_cfg:\n  pad_multiple: %d\n", cfg->pad_multiple);
    /* Written only when not the default, so configs without them keep their hash. */
    if (cfg->eval_ensemble)
        put(&b, "  ensemble: true\n");
    if (cfg->eval_tile)
        put(&b, "  tile: %d\n", cfg->eval_tile);
    if (cfg->eval_tile_overlap != 40)
        put(&b, "  tile_overlap: %d\n", cfg->eval_tile_overlap);
    put(&b, "security:\n  curve: %s\n  keys_dir: ", cfg->curve ? "true" : "false");
    if (cfg->keys_dir[0])
        put_str(&b, cfg->keys_dir);
    else
        put(&b, "null");
    put(&b, "\n");
    put(&b, "work_dir: ");
    put_str(&b, cfg->work_dir);
    put(&b, "\nload_from: ");
    if (cfg->load_from[0])
        put_str(&b, cfg->load_from);
    else
        put(&b, "null");
    put(&b, "\nresume_from: ");
    if (cfg->resume_from[0])
        put_str(&b, cfg->resume_from);
    else
        put(&b, "null");
    put(&b, "\nresume_optim: %s\nseed: %llu\nlog_level: ", cfg->resume_optim ? "true" : "false",
        (unsigned long long)cfg->seed);
    put_word(&b, cfg->log_level);
    put(&b, "\nconv_algorithm: ");
    put_word(&b, cfg->conv_algorithm);
    put(&b, "\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
