/*  yaml_tree — see yaml_tree.h. */
#include "common/yaml_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct pf_ydoc {
    pf_ynode *root;
    pf_ynode **all;             /* every node, for freeing */
    int n_all, cap_all;
};

typedef struct {
    pf_ynode *node;
    int cap;                    /* room in node->kid */
} open_node;

static void node_free(pf_ynode *n) {
    if (!n) return;
    free((char *)n->text);
    free(n->kid);
    free(n);
}

void pf_ydoc_free(pf_ydoc **d) {
    if (!*d) return;
    for (int i = 0; i < (*d)->n_all; i++) node_free((*d)->all[i]);
    free((*d)->all);
    free(*d);
    *d = NULL;
}

const pf_ynode *pf_ydoc_root(const pf_ydoc *d) { return d ? d->root : NULL; }

const pf_ynode *pf_ynode_get(const pf_ynode *m, const char *key) {
    if (!m || m->type != PF_Y_MAPPING) return NULL;
    size_t len = strlen(key);
    for (int i = 0; i + 1 < m->n; i += 2) {
        const pf_ynode *k = m->kid[i];
        if (k->type == PF_Y_SCALAR && k->len == len && !memcmp(k->text, key, len))
            return m->kid[i + 1];
    }
    return NULL;
}

static pf_ynode *new_node(pf_ydoc *d, pf_ytype type, const yaml_mark_t *mark) {
    if (d->n_all == d->cap_all) {
        int cap = d->cap_all ? 2 * d->cap_all : 64;
        pf_ynode **a = realloc(d->all, (size_t)cap * sizeof *a);
        if (!a) return NULL;
        d->all = a;
        d->cap_all = cap;
    }
    pf_ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->type = type;
    n->line = (int)mark->line + 1;
    d->all[d->n_all++] = n;
    return n;
}

static int add_kid(open_node *o, pf_ynode *k) {
    if (o->node->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        pf_ynode **a = realloc(o->node->kid, (size_t)cap * sizeof *a);
        if (!a) return -1;
        o->node->kid = a;
        o->cap = cap;
    }
    o->node->kid[o->node->n++] = k;
    return 0;
}

/* Scalar keys of mapping m by text, then line. */
static int key_order(const void *a, const void *b) {
    const pf_ynode *x = *(pf_ynode *const *)a, *y = *(pf_ynode *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* The key given twice in m whose second occurrence comes first in the text (NULL: none),
   in O(n log n): the config arrives over the network, a mapping may have 100k keys. */
static const pf_ynode *duplicate_key(const pf_ynode *m) {
    int n = 0;
    pf_ynode **keys = malloc(((size_t)m->n / 2 + 1) * sizeof *keys);
    if (!keys) return NULL;
    for (int i = 0; i + 1 < m->n; i += 2)
        if (m->kid[i]->type == PF_Y_SCALAR) keys[n++] = m->kid[i];
    qsort(keys, (size_t)n, sizeof *keys, key_order);
    const pf_ynode *dup = NULL;
    for (int i = 1; i < n; i++) {
        const pf_ynode *a = keys[i - 1], *b = keys[i];
        int same = a->len == b->len && !memcmp(a->text, b->text, a->len);
        /* b is the second of its group when the one before it starts the group */
        int second = same && (i < 2 || keys[i - 2]->len != a->len ||
                              memcmp(keys[i - 2]->text, a->text, a->len));
        if (second && (!dup || b->line < dup->line)) dup = b;
    }
    free(keys);
    return dup;
}

static void syntax_error(const yaml_parser_t *p, int *line, char *msg, size_t msglen) {
    const char *problem = p->problem ? p->problem : "invalid YAML";
    int at = (int)p->problem_mark.line + 1;
    /* an unterminated quote or flow collection is reported where it started */
    if (p->context && strstr(problem, "end of stream")) at = (int)p->context_mark.line + 1;
    const char *hint = strstr(problem, "tab") ? " (YAML indents with spaces, not tab characters)"
                       : strstr(problem, "expected key") || strstr(problem, "expected '-'")
                           ? " (check the indentation)"
                       : strstr(problem, "not allowed in this context")
                           ? " (check the indentation, or quote a value that holds ': ')"
                           : "";
    *line = at;
    if (p->context)
        snprintf(msg, msglen, "syntax error: %s, %s on line %d%s", problem, p->context,
                 (int)p->context_mark.line + 1, hint);
    else
        snprintf(msg, msglen, "syntax error: %s%s", problem, hint);
}

pf_ydoc *pf_yaml_parse(const char *text, size_t len, int max_depth, int *line, char *msg,
                       size_t msglen) {
    *line = 1;
    msg[0] = 0;
    pf_ydoc *d = calloc(1, sizeof *d);
    open_node *stack = calloc((size_t)max_depth + 2, sizeof *stack);
    yaml_parser_t p;
    if (!d || !stack || !yaml_parser_initialize(&p)) {
        free(stack);
        free(d);
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, docs = 0, ok = 0, done = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            if (p.error == YAML_MEMORY_ERROR) snprintf(msg, msglen, "out of memory");
            else syntax_error(&p, line, msg, msglen);
            break;
        }
        pf_ynode *n = NULL;
        int fail = 0;
        *line = (int)ev.start_mark.line + 1;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = ok = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                snprintf(msg, msglen, "a second YAML document starts here ('---'): a config is "
                         "one document");
                fail = 1;
            }
            break;
        case YAML_ALIAS_EVENT:
            snprintf(msg, msglen, "aliases are not supported (*%.40s)",
                     ev.data.alias.anchor ? (const char *)ev.data.alias.anchor : "");
            fail = 1;
            break;
        case YAML_SCALAR_EVENT:
            if (!(n = new_node(d, PF_Y_SCALAR, &ev.start_mark)) ||
                !(n->text = malloc(ev.data.scalar.length + 1))) {
                snprintf(msg, msglen, "out of memory");
                fail = 1;
                break;
            }
            memcpy((char *)n->text, ev.data.scalar.value, ev.data.scalar.length);
            ((char *)n->text)[ev.data.scalar.length] = 0;
            n->len = ev.data.scalar.length;
            n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (depth >= max_depth) {
                snprintf(msg, msglen, "nested more than %d levels deep", max_depth);
                fail = 1;
                break;
            }
            if (!(n = new_node(d, ev.type == YAML_MAPPING_START_EVENT ? PF_Y_MAPPING
                                                                     : PF_Y_SEQUENCE,
                               &ev.start_mark))) {
                snprintf(msg, msglen, "out of memory");
                fail = 1;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            const pf_ynode *m = stack[depth - 1].node, *dup;
            if (m->type == PF_Y_MAPPING && (dup = duplicate_key(m))) {
                *line = dup->line;
                snprintf(msg, msglen, "duplicate key '%.60s'", dup->text);
                fail = 1;
            }
            depth--;
            break;
        }
        default:
            break;
        }
        if (n && !fail) {   /* a new node: the child of the open collection, or the root */
            if (depth > 0) {
                if (add_kid(&stack[depth - 1], n)) {
                    snprintf(msg, msglen, "out of memory");
                    fail = 1;
                }
            } else if (!d->root) {
                d->root = n;
            }
            if (!fail && n->type != PF_Y_SCALAR) stack[depth++] = (open_node){ n, 0 };
        }
        yaml_event_delete(&ev);
        if (fail) break;
    }
    yaml_parser_delete(&p);
    free(stack);
    if (!ok) {
        pf_ydoc_free(&d);
        return NULL;
    }
    return d;
}
