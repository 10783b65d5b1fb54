/*  config_keys — the table of config keys: one row per key, and what an unknown key is told.

    Every key PixFlow accepts is one row of `pf_config_keys` (common/config_keys.c): its path,
    kind, where it is stored in `pf_config`, range or choices, default, the key whose value
    decides whether it applies (the model types that take `model.num_group`, the optimisers
    that take `betas`, ...) and with which of its values the key is required (lr_config.step
    with policy Step), another accepted spelling, and a one-line meaning. That one row drives
    parsing (common/config.c walks the YAML tree with it), the defaults (pf_config_defaults),
    the `file:line: key: what is wrong` errors, the resolved YAML (pf_config_to_yaml,
    common/config_write.c), `pixflow config --get KEY` and the key tables of docs/config.md
    (pf_config_reference, common/config_docs.c; tests/test_config_docs.py fails when the page
    and the table differ).
    The model types, and which of them take each model key, come from the network rows
    (common/networks.h). Rules that span several keys (scale against patch size, eval against
    checkpoint interval, RRDBNet's 23 blocks, read from its network row) are code, in one
    function of config.c; a default that depends on another key's value (AdamW's weight_decay,
    Vimeo90K's num_frame) is the row's `def_for`.

    An unknown key is answered with the nearest key of its section ("did you mean
    'gt_folder'?", Damerau-Levenshtein distance) or, for the names of BasicSR's options files
    and MMagic's configs, with the PixFlow key that means the same or the closest thing and how
    it differs ("PixFlow calls this 'gt_folder'"). Such names are not accepted as aliases: a
    file written for another framework stops at its first foreign key, with the PixFlow name.
*/
#ifndef PF_CONFIG_KEYS_H
#define PF_CONFIG_KEYS_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PF_K_SECTION,       /* a mapping of keys (the rows below its path); `offset`: an int set
                           to 1 when the mapping is in the file, or 0 for none */
    PF_K_INT,           /* int in [lo, hi] (or one of `choices`, written "2|3|4") */
    PF_K_INT64,         /* int64_t in [lo, hi] (`seed` is a uint64_t below 2^63) */
    PF_K_FLOAT,         /* float in [lo, hi]; PF_KF_LO_OPEN / PF_KF_HI_OPEN exclude the ends */
    PF_K_BOOL,          /* int 0 / 1 */
    PF_K_STR,           /* char[size] */
    PF_K_PATH,          /* char[size], a path; PF_KF_DIR / PF_KF_FILE: checked on load */
    PF_K_CHOICE,        /* char[size], one of `choices` ("Adam|AdamW|SGD") */
    PF_K_ENUM,          /* int: the index of the value in `choices` */
    PF_K_INT_LIST,      /* int[max_n]: min_n..max_n items, each an int in [lo, hi] */
    PF_K_INT64_LIST,    /* int64_t[max_n], likewise */
    PF_K_FLOAT_LIST,    /* float[max_n], each a float in [lo, hi] */
    PF_K_DOUBLE,        /* double in [lo, hi] (options handed to code that takes doubles:
                           0.1 stays the double 0.1, not the float's 0.100000001) */
    PF_K_DOUBLE_LIST,   /* double[max_n], each a double in [lo, hi] */
    PF_K_ENUM_LIST,     /* int[max_n]: each item the index of its value in `choices` (a
                           kernel_list of names) */
    PF_K_CUSTOM,        /* parsed and written by config.c (`custom` names which) */
} pf_key_kind;

enum {
    PF_KF_REQUIRED = 1 << 0,    /* required in its section (when the section is given) */
    PF_KF_NULL = 1 << 1,        /* `null` allowed: an empty string / 0 / no section; an
                                   int (PF_K_INT, PF_K_INT64): its default */
    PF_KF_NONEMPTY = 1 << 2,    /* a string must not be "" */
    PF_KF_LO_OPEN = 1 << 3,     /* lo itself is out of range */
    PF_KF_HI_OPEN = 1 << 4,     /* hi itself is out of range */
    PF_KF_NOCASE = 1 << 5,      /* choices match in any case */
    PF_KF_ODD = 1 << 6,         /* ints (list items): odd only */
    PF_KF_INCREASING = 1 << 7,  /* list items strictly increasing */
    PF_KF_TRAIN_ONLY = 1 << 8,  /* a dataset key of data.train only: an error in eval / test */
    PF_KF_IF_CHANGED = 1 << 9,  /* written to the resolved YAML only when not the default (so
                                   configs without it keep their hash); a section: only when
                                   some key below it is not */
    PF_KF_NO_STORE = 1 << 10,   /* checked, then dropped (model.loss.reduction: only mean) */
    PF_KF_NO_WRITE = 1 << 11,   /* never written to the resolved YAML */
    PF_KF_DIR = 1 << 12,        /* PF_K_PATH: must be a directory (pf_config_load) */
    PF_KF_FILE = 1 << 13,       /* PF_K_PATH: must be a regular file (pf_config_load) */
    PF_KF_AUTO = 1 << 14,       /* PF_K_PATH: also the word `auto` (resume_from) */
    PF_KF_TO_TRAIN = 1 << 15,   /* with PF_KF_REQUIRED: required by `pixflow train` only
                                   (pf_config_check_train); a test config may leave it out */
    PF_KF_RANGE = 1 << 16,      /* PF_K_INT / PF_K_FLOAT: a number x or a range [lo, hi],
                                   stored in the field and the next one ([x, x]); written
                                   [lo, hi] (a degradation step's sigma, quality) */
};

/* Keys parsed by code of their own (lists of mappings, user-named keys, sets). */
typedef enum {
    PF_KC_NONE,
    PF_KC_DEGRADATION,          /* data.*.degradation: list of steps (pf_degradation), each
                                   walked with the rows data.*.degradation.*.KEY */
    PF_KC_CUSTOM_KEYS,          /* optimizers.paramwise_cfg.custom_keys: {NAME: {...}} */
    PF_KC_METRICS,              /* evaluation.metrics: a set of PSNR, SSIM (two int flags) */
    PF_KC_CONVERT_TO,           /* evaluation.convert_to: y / Y / null (int flag) */
    PF_KC_CLIPS,                /* data.*.clips: list of {name, frames, crop} (pf_clip_cfg) */
    PF_KC_NAMES,                /* data.*.val_partition: list of clip names */
    PF_KC_LAYER_WEIGHTS,        /* gan.perceptual_opt.layer_weights: {VGG19 layer: weight}
                                   (pf_perceptual_opts, common/perceptual_opts.h) */
} pf_key_custom;

typedef struct {
    const char *path;           /* "model.n_feats"; the dataset keys have one row per set
                                   (data.train.*, data.eval.*, data.test.*); the keys of each
                                   custom key ("optimizers.paramwise_cfg.custom_keys.*.lr_mult")
                                   are rows with offsets inside the item */
    pf_key_kind kind;
    unsigned flags;             /* PF_KF_* */
    size_t offset;              /* the field in pf_config (or in the item, for `*` rows) */
    size_t size;                /* its bytes (strings) or items (lists) */
    size_t count_offset;        /* variable lists: the int that counts the items; 0 for a
                                   fixed length (min_n == size; offset 0 is pf_config.path) */
    int min_n;                  /* lists: fewest items */
    double lo, hi;              /* numbers and list items: the range */
    const char *choices;        /* CHOICE / ENUM / INT: the values, '|'-separated */
    const char *def;            /* the default as YAML writes it ("64", "[0.9, 0.999]",
                                   "Adam", "null"); NULL: none (required, or set by a rule) */
    const char *when_key;       /* the key whose value decides whether this one applies, or
                                   NULL: always ("model.type", "optimizers.type", ...); in a
                                   `*` section, a key of the same item, read first, and two
                                   rows may share a name for different values of it */
    const char *when;           /* the values of when_key that take this key ("RCAN|EDSR");
                                   given elsewhere it is "only allowed with ..." */
    const char *required_when;  /* the values of when_key with which the key must be given
                                   ("Step"; `when` NULL: it applies with every value); missing
                                   there: "missing: policy Step needs it" */
    const char *alias;          /* another accepted spelling (BasicSR's num_feat), or NULL */
    pf_key_custom custom;       /* PF_K_CUSTOM: which */
    const char *type_doc;       /* the type column of docs/config.md when it is not derived
                                   from kind and range (custom keys) */
    const char *def_key;        /* the key whose value picks a default of `def_for`, or NULL:
                                   `when_key` ("optimizers.type") */
    const char *def_for;        /* defaults for some values of def_key, '|'-separated
                                   VALUE=DEFAULT pairs ("AdamW=0.01"): applied after the walk
                                   when the key is not in the file; the docs' default column
                                   adds "; AdamW 0.01" */
    const char *def_doc;        /* the default column when it is not `def` ("— (JPEG)") */
    const char *doc;            /* what the key does (the meaning column) */
} pf_config_key;

extern const pf_config_key pf_config_keys[];
extern const int pf_config_n_keys;

/* The row of `path` ("model.n_feats", "data.eval.gt_folder"), or NULL. */
const pf_config_key *pf_config_key_find(const char *path);

/* Last component of a row's path ("n_feats"). */
const char *pf_config_key_name(const pf_config_key *k);

/* 1 when row `k` sits directly in the section `section` ("" for the top level). */
int pf_config_key_in(const pf_config_key *k, const char *section);

/* What follows "unknown key" for key `name` in section `section` ("" = top level,
   "data.eval", "data.train.degradation.*", ...): "; PixFlow calls this 'x' ..." for a BasicSR /
   MMagic name, "; did you mean 'x'?" when a key of the section is within a small edit distance
   (1 for names up to 5 characters, 2 up to 9, else 3), else "" (an unknown name with nothing
   near it). Written into buf (size >= 1); returns buf. */
const char *pf_config_unknown_hint(const char *section, const char *name, char *buf,
                                   size_t size);

/* Optimal-string-alignment distance between a and b (insertions, deletions, substitutions and
   transpositions of neighbours, each 1), for names up to 63 bytes; longer ones give 64. */
int pf_edit_distance(const char *a, const char *b);

/* A row's choices and range, for the parser (common/config*.c). */
#define PF_MAX_CHOICES 16

/* Split "A|B|C" into `out` (NUL-terminated copies in `store`, NULL after the last); returns
   the count. */
int pf_cfg_split_choices(const char *choices, char store[][48], const char **out);
/* "A, B or C" from "A|B|C", into out; returns out. */
const char *pf_cfg_or_list(const char *choices, char *out, size_t size);
/* 1 when `value` is one of "A|B|C". */
int pf_cfg_in_choices(const char *choices, const char *value);
/* int64 bound of a row's double range (1e300 and 2^63 mean no bound). */
int64_t pf_cfg_bound64(double x);
#endif
