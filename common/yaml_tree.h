/*  yaml_tree — a YAML text as a tree of scalars, sequences and mappings, for the config
    parser (common/config.c; its typed getters over this tree are common/config_get.c). Built
    on libyaml 0.2.5 (Debian's libyaml-dev) from its event stream, chosen on evidence: fuzzed
    alone for 10 minutes each on the config seeds, libfyaml 0.7.12 (the earlier parser) hung
    within seconds and has known crashes and hangs (tests/fuzz/regressions/config), libyaml
    neither (bench/results/fuzz_2026-12-02_*_yaml_*).

    What the tree refuses, each with the 1-based line it happened on: YAML syntax errors
    (libyaml's problem text, with a hint: tab characters, indentation), aliases and anchors
    (refused rather than expanded: "billion laughs", and the config arrives over the network),
    a second document, nesting deeper than max_depth, a key given twice in one mapping, a
    mapping key that is not a scalar. Tags are ignored.

    Scalars keep their text as written (no type resolution: the caller decides what "4" or
    "null" mean) and whether they were plain (unquoted). All memory belongs to the document.
*/
#ifndef PF_YAML_TREE_H
#define PF_YAML_TREE_H
#include <stddef.h>

typedef enum { PF_Y_SCALAR, PF_Y_SEQUENCE, PF_Y_MAPPING } pf_ytype;

typedef struct pf_ynode {
    pf_ytype type;
    int line;                   /* 1-based line where the node starts */
    int plain;                  /* scalar: written unquoted (plain style) */
    const char *text;           /* scalar: its text, NUL-terminated (may hold no NUL inside:
                                   the caller refuses NUL bytes before parsing) */
    size_t len;                 /* scalar: bytes of text */
    struct pf_ynode **kid;      /* sequence: items; mapping: key, value, key, value, ... */
    int n;                      /* entries of kid (a mapping: 2 x pairs) */
} pf_ynode;

typedef struct pf_ydoc pf_ydoc;

/* Parse len bytes of text (one YAML document; an empty text is an empty document, root NULL).
   Returns the document, or NULL with *line (1-based) and msg (what is wrong, for "yaml: ..."
   messages) on an error above or out of memory. */
pf_ydoc *pf_yaml_parse(const char *text, size_t len, int max_depth, int *line, char *msg,
                       size_t msglen);
/* The top node (NULL for an empty document). */
const pf_ynode *pf_ydoc_root(const pf_ydoc *d);
void pf_ydoc_free(pf_ydoc **d);

/* Mapping m's value for key `key` (a scalar equal to it), or NULL. */
const pf_ynode *pf_ynode_get(const pf_ynode *m, const char *key);
#endif
