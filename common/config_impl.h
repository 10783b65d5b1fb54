/*  config_impl — what the files of the config parser share; included by common/config*.c only.

    common/config.c walks the YAML tree with the key table (parsing, defaults, the rules that
    span keys); common/config_get.c converts one node (the typed getters over the YAML tree of
    common/yaml_tree.h, and the `file:line: key: what is wrong` error); common/config_keys.c
    holds the table and what reads a row's choices and range (declared in config_keys.h,
    which includes only the struct's header, common/config_types.h, so that the table and
    the parser do not include each other); common/config_write.c writes the resolved YAML
    (pf_config_to_yaml, pf_config_get); common/config_docs.c writes the key tables of
    docs/config.md (pf_config_reference) and docs/models.md's table of the network rows
    (common/networks.h, pf_config_networks_reference).
*/
#ifndef PF_CONFIG_IMPL_H
#define PF_CONFIG_IMPL_H
#include "common/config_keys.h"
#include "common/networks.h"
#include "common/yaml_tree.h"

#include <stddef.h>
#include <stdint.h>

/* ---- common/config_get.c: one node to one value -------------------------------------- */

typedef struct {
    const char *path;                   /* file name for messages */
    char *err;                          /* caller's error buffer */
    size_t errlen;                      /* its size */
    int failed;                         /* 1 once an error was written */
} pf_cfg_ctx;

/* 1-based line of a node; 0 for none (an absent value). */
static inline int node_line(const pf_ynode *n) {
    return n ? n->line : 0;
}

/* A node's type, -1 for none (an absent value). */
static inline int ytype(const pf_ynode *n) {
    return n ? (int)n->type : -1;
}

/* Record the first error as "path:line: key: message". Always returns -1. */
int pf_cfg_fail(pf_cfg_ctx *c, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* YAML 1.2 core null: absent value, or plain "", "~", "null", "Null", "NULL". */
int pf_cfg_is_null(const pf_ynode *n);
/* What the user wrote, for "got ..." in messages ("null", "a list", "'x'"). */
const char *pf_cfg_describe(const pf_ynode *n, char *buf, size_t size);
/* Copy a scalar into a NUL-terminated buffer; -1 when it does not fit or is no scalar. */
int pf_cfg_scalar_copy(const pf_ynode *n, char *out, size_t size);

/* The getters: node `n` (named `key` in messages) into *out; 0, or -1 with the error
   recorded in `c` (a wrong type, out of range, ...). */
int pf_cfg_get_int(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int64_t lo, int64_t hi,
                   int64_t *out);
int pf_cfg_get_int32(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int lo, int hi,
                     int *out);
/* A finite number (integers accepted); `lo_open` / `hi_open`: lo / hi themselves excluded. */
int pf_cfg_get_float(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo,
                     int lo_open, double hi, int hi_open, float *out);
/* The same, kept as a double (the range checked on the double). */
int pf_cfg_get_double(pf_cfg_ctx *c, const pf_ynode *n, const char *key, double lo,
                      int lo_open, double hi, int hi_open, double *out);
int pf_cfg_get_bool(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int *out);
/* One line of printable UTF-8 text, at most size - 1 bytes. */
int pf_cfg_get_str(pf_cfg_ctx *c, const pf_ynode *n, const char *key, char *out, size_t size);
/* A string from `choices` (NULL-terminated); exact case unless `nocase`. */
int pf_cfg_get_choice(pf_cfg_ctx *c, const pf_ynode *n, const char *key, const char **choices,
                      int nocase, char *out, size_t size);
/* A list of min_n..max_n items: their nodes into `items`, their number into *count. */
int pf_cfg_get_seq(pf_cfg_ctx *c, const pf_ynode *n, const char *key, int min_n, int max_n,
                   int *count, const pf_ynode **items);
/* Offset of the first byte of `s` that does not start a well-formed UTF-8 sequence, or
   `len` when all of it is UTF-8. */
size_t pf_utf8_invalid_at(const unsigned char *s, size_t len);

/* ---- common/config.c: rows ------------------------------------------------------------ */

/* The row of `path`; aborts when there is none (the code names a row the table lacks). */
const pf_config_key *pf_cfg_row(const char *path);
/* A row's default (`def`, as YAML writes it) into `base` (the config or an item). */
void pf_cfg_set_default(const pf_config_key *k, char *base);
/* 1 when row `k` applies to `base` (the config, or the item of a `*` row): no `when_key`, or
   that key's value is one of `when`. */
int pf_cfg_applies(const char *base, const pf_config_key *k);

/* "2|4": the scales of network `net` that `model.scale` allows, into out; returns out. */
const char *pf_cfg_net_scales(const pf_network *net, char *out, size_t size);

/* ---- common/config_write.c: text ------------------------------------------------------ */

typedef struct {
    char *s;                            /* text so far, NUL-terminated */
    size_t len, cap;                    /* used and allocated bytes */
    int oom;                            /* 1 after a failed allocation */
} pf_buf;

/* An empty text (4 KiB allocated); -1 when out of memory. */
int pf_buf_init(pf_buf *b);
/* Append printf-style; on a failed allocation b->oom is set and later calls do nothing. */
void pf_buf_put(pf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rows of a `*` section (one custom key, one clip) hold offsets inside the item. */
int pf_cfg_item_row(const pf_config_key *k);
#endif
