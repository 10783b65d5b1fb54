/*  fuzz_yaml — a YAML library alone, as the config parser uses one, for choosing the library
    on evidence (issue: "the YAML parser chosen on evidence"). Built twice: PF_YAML_FYAML (Debian's
    libfyaml 0.7.12, what common/config.c uses) and PF_YAML_LIBYAML (Debian's libyaml 0.2.5).
    Each input is parsed into a document with no pre-check and no child process (the text
    arrives over the network in WELCOME), and every node is walked the way the config parser
    walks its tree: mappings (keys and values), sequences, scalars with their text and line,
    aliases. A crash, a hang (> 10 s), a leak or a sanitizer report is the library's. The
    libraries are not instrumented (system builds), so libFuzzer's coverage is the harness's:
    mutation is close to blind, which is why each run is long (scripts/fuzz.sh yaml_*).
*/
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static volatile size_t sink;    /* keeps the walk from being optimised away */

#if defined(PF_YAML_FYAML)
#include <libfyaml.h>

static void quiet(struct fy_diag *d, void *u, const char *buf, size_t len) {
    (void)d, (void)u, (void)buf, (void)len;
}

static void walk(struct fy_node *n, int depth) {
    if (!n || depth > 64) return;
    switch (fy_node_get_type(n)) {
    case FYNT_SCALAR: {
        size_t len = 0;
        const char *s = fy_node_get_scalar(n, &len);
        const struct fy_mark *m = fy_token_start_mark(fy_node_get_scalar_token(n));
        sink += len + (s ? (unsigned char)s[0] : 0) + (m ? (size_t)m->line : 0);
        sink += fy_node_is_alias(n) + (size_t)fy_node_get_style(n);
        break;
    }
    case FYNT_MAPPING: {
        void *it = NULL;
        struct fy_node_pair *p;
        while ((p = fy_node_mapping_iterate(n, &it))) {
            walk(fy_node_pair_key(p), depth + 1);
            walk(fy_node_pair_value(p), depth + 1);
        }
        sink += fy_node_mapping_lookup_by_string(n, "model", 5) != NULL;
        break;
    }
    case FYNT_SEQUENCE: {
        void *it = NULL;
        struct fy_node *c;
        while ((c = fy_node_sequence_iterate(n, &it))) walk(c, depth + 1);
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = quiet;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag) return 0;
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    struct fy_document *doc = fy_document_build_from_string(&pcfg, (const char *)data, size);
    if (doc) {
        walk(fy_document_root(doc), 0);
    } else {
        void *it = NULL;
        struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
        if (e) sink += (size_t)e->line + (e->msg ? strlen(e->msg) : 0);
    }
    fy_document_destroy(doc);
    fy_diag_destroy(diag);
    return 0;
}

#elif defined(PF_YAML_LIBYAML)
#include <yaml.h>

static void walk(yaml_document_t *d, yaml_node_t *n, int depth) {
    if (!n || depth > 64) return;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        sink += n->data.scalar.length + n->start_mark.line + (size_t)n->data.scalar.style +
                (n->data.scalar.length ? n->data.scalar.value[0] : 0);
        break;
    case YAML_MAPPING_NODE:
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            walk(d, yaml_document_get_node(d, p->key), depth + 1);
            walk(d, yaml_document_get_node(d, p->value), depth + 1);
        }
        break;
    case YAML_SEQUENCE_NODE:
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top;
             i++)
            walk(d, yaml_document_get_node(d, *i), depth + 1);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return 0;
    yaml_parser_set_input_string(&p, data, size);
    yaml_document_t doc;
    if (yaml_parser_load(&p, &doc)) {
        walk(&doc, yaml_document_get_root_node(&doc), 0);
        yaml_document_delete(&doc);
    } else {
        sink += p.problem_mark.line + (p.problem ? strlen(p.problem) : 0);
    }
    yaml_parser_delete(&p);
    return 0;
}
#else
#error "define PF_YAML_FYAML or PF_YAML_LIBYAML"
#endif
