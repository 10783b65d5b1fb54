/*  config_docs — the key tables of docs/config.md (pf_config_reference, `pixflow config
    --reference`), generated from the key table (common/config_keys.h): a row per key with its
    type (from kind, range and flags, or the row's type_doc), default (def_doc, else def) and
    meaning (the `when` it applies under, then doc), the per-type defaults and scales from the
    network rows (common/networks.h); and docs/models.md's table of the network rows
    (pf_config_networks_reference, `pixflow config --networks`). tests/test_config_docs.py
    fails when the pages and the tables differ.
*/
#include "common/config.h"
#include "common/config_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A bound as the docs write it: 2^k for large powers of two. */
static void put_bound(pf_buf *b, double x) {
    int e;
    if (x >= 65536 && frexp(x, &e) == 0.5 && e - 1 >= 17)
        pf_buf_put(b, "2^%d", e - 1);
    else
        pf_buf_put(b, "%g", x);
}

/* The type column for a number (int or float) of row `k`'s range. */
static void put_number_type(pf_buf *b, const pf_config_key *k, int integer) {
    int lo_open = (k->flags & PF_KF_LO_OPEN) != 0, hi_open = (k->flags & PF_KF_HI_OPEN) != 0;
    int no_hi = integer ? pf_cfg_bound64(k->hi) == INT64_MAX : k->hi >= 1e300;
    const char *what = integer ? ((k->flags & PF_KF_ODD) ? "odd int" : "int") : "number";
    if (integer && k->choices) {
        char store[PF_MAX_CHOICES][48];
        const char *v[PF_MAX_CHOICES + 1];
        int n = pf_cfg_split_choices(k->choices, store, v);
        pf_buf_put(b, "int in {");
        for (int i = 0; i < n; i++)
            pf_buf_put(b, "%s%s", i ? ", " : "", v[i]);
        pf_buf_put(b, "}");
    } else if (no_hi && k->lo == 0) {
        pf_buf_put(b, "%s %s 0", what, lo_open ? ">" : "≥");
    } else if (no_hi && integer && k->lo == 1) {
        pf_buf_put(b, "%s > 0", what);
    } else if (integer) {
        pf_buf_put(b, "%s in ", what);
        put_bound(b, k->lo);
        pf_buf_put(b, "..");
        put_bound(b, k->hi);
    } else {
        pf_buf_put(b, "number in %c%g, %g%c", lo_open ? '(' : '[', k->lo, k->hi,
                   hi_open ? ')' : ']');
    }
}

/* "`A` \\| `B`" from "A|B". */
static void put_choices(pf_buf *b, const char *choices) {
    char store[PF_MAX_CHOICES][48];
    const char *v[PF_MAX_CHOICES + 1];
    int n = pf_cfg_split_choices(choices, store, v);
    for (int i = 0; i < n; i++)
        pf_buf_put(b, "%s`%s`", i ? " \\| " : "", v[i]);
}

static void put_type(pf_buf *b, const pf_config_key *k) {
    int null = (k->flags & PF_KF_NULL) != 0;
    if (k->type_doc) {
        pf_buf_put(b, "%s", k->type_doc);
        return;
    }
    switch (k->kind) {
    case PF_K_SECTION:
        pf_buf_put(b, "mapping%s", null ? " or `null`" : "");
        return;
    case PF_K_INT:
    case PF_K_INT64:
    case PF_K_FLOAT:
    case PF_K_DOUBLE:
        put_number_type(b, k, k->kind == PF_K_INT || k->kind == PF_K_INT64);
        if (k->flags & PF_KF_RANGE)
            pf_buf_put(b, " or `[lo, hi]`");
        return;
    case PF_K_BOOL:
        pf_buf_put(b, "bool");
        return;
    case PF_K_STR:
        pf_buf_put(b, "string%s", k->size ? "" : "");
        if (k->size)
            pf_buf_put(b, ", ≤ %zu bytes", k->size - 1);
        return;
    case PF_K_PATH:
        pf_buf_put(b, "path%s%s%s", (k->flags & PF_KF_DIR) ? " to a directory" : "",
                   (k->flags & PF_KF_FILE) ? " to a file" : "",
                   (k->flags & PF_KF_AUTO) ? ", `auto`" : "");
        pf_buf_put(b, "%s", null ? ", or `null`" : "");
        return;
    case PF_K_CHOICE:
    case PF_K_ENUM:
        put_choices(b, k->choices);
        pf_buf_put(b, "%s%s", (k->flags & PF_KF_NOCASE) ? " (any case)" : "",
                   null ? " or `null`" : "");
        return;
    case PF_K_ENUM_LIST:
        pf_buf_put(b, "list of ");
        put_choices(b, k->choices);
        pf_buf_put(b, ", %d–%zu items", k->min_n, k->size);
        return;
    case PF_K_INT_LIST:
    case PF_K_INT64_LIST:
    case PF_K_FLOAT_LIST:
    case PF_K_DOUBLE_LIST:
        pf_buf_put(b, "list[");
        put_number_type(b, k, k->kind == PF_K_INT_LIST || k->kind == PF_K_INT64_LIST);
        if (k->flags & PF_KF_INCREASING)
            pf_buf_put(b, ", strictly increasing");
        if (k->count_offset && k->min_n != (int)k->size)
            pf_buf_put(b, ", %d–%zu items]", k->min_n, k->size);
        else
            pf_buf_put(b, ", %zu]", k->size);
        return;
    case PF_K_CUSTOM:
        return;
    }
}

/* The per-type parts of a key: after the default, the row's def_for ("; AdamW 0.01") and
   the network rows' n_blocks defaults ("; RRDBNet 23", common/networks.h); after the
   meaning, the scales of model.scale ("; RRDBNet: 2 or 4"). */
static void put_per_type_default(pf_buf *b, const pf_config_key *k) {
    for (const char *p = k->def_for; p && *p; p += strcspn(p, "|"), p += *p == '|') {
        int n = (int)strcspn(p, "=");
        pf_buf_put(b, "; %.*s %.*s", n, p, (int)strcspn(p + n + 1, "|"), p + n + 1);
    }
    for (int i = 0; !strcmp(k->path, "model.n_blocks") && i < pf_n_networks; i++)
        if (pf_networks[i].keys & PF_NK_WIDE && pf_networks[i].n_blocks != atoi(k->def))
            pf_buf_put(b, "; %s %d", pf_networks[i].name, pf_networks[i].n_blocks);
}

static void put_per_type_doc(pf_buf *b, const pf_config_key *k) {
    for (int i = 0; !strcmp(k->path, "model.scale") && i < pf_n_networks; i++) {
        char scales[32], list[48];
        if (strcmp(pf_cfg_net_scales(&pf_networks[i], scales, sizeof scales), k->choices))
            pf_buf_put(b, "; %s: %s", pf_networks[i].name,
                       pf_cfg_or_list(scales, list, sizeof list));
    }
}

/* One table row: `name` (the key or its alias) of row `k`. */
static void put_reference_row(pf_buf *b, const pf_config_key *k, const char *name) {
    pf_buf_put(b, "| `%s` | ", name);
    put_type(b, k);
    pf_buf_put(b, " | ");
    if (name != pf_config_key_name(k))
        pf_buf_put(b, " | BasicSR's spelling of `%s` (give one of the two) |\n",
                   pf_config_key_name(k));
    else {
        if (k->def_doc)
            pf_buf_put(b, "%s", k->def_doc);
        else if (k->def)
            pf_buf_put(b, "%s", k->def);
        else
            pf_buf_put(b, "%s", (k->flags & PF_KF_REQUIRED) ? "—" : "none");
        put_per_type_default(b, k);
        pf_buf_put(b, " | ");
        if (k->when) {
            char list[200];
            const char *sel = pf_config_key_name(pf_cfg_row(k->when_key));
            if (!strcmp(sel, "type") || !strcmp(sel, "policy"))
                pf_buf_put(b, "%s only", pf_cfg_or_list(k->when, list, sizeof list));
            else
                pf_buf_put(b, "with `%s: %s` only", sel,
                           pf_cfg_or_list(k->when, list, sizeof list));
            pf_buf_put(b, "%s", k->doc && k->doc[0] ? ": " : "");
        }
        pf_buf_put(b, "%s", k->doc ? k->doc : "");
        put_per_type_doc(b, k);
        pf_buf_put(b, " |\n");
    }
}

char *pf_config_reference(const char *const *what, int n) {
    pf_buf b;
    if (pf_buf_init(&b))
        return NULL;
    pf_buf_put(&b, "| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
    for (int w = 0; w < n; w++) {
        int in_section = 0;
        for (int i = 0; i < pf_config_n_keys; i++)
            in_section |= pf_config_key_in(&pf_config_keys[i], what[w]);
        for (int i = 0; i < pf_config_n_keys; i++) {
            const pf_config_key *k = &pf_config_keys[i];
            if (in_section ? !pf_config_key_in(k, what[w]) : strcmp(k->path, what[w]))
                continue;
            put_reference_row(&b, k, pf_config_key_name(k));
            if (k->alias)
                put_reference_row(&b, k, k->alias);
        }
        if (!in_section && !pf_config_key_find(what[w])) {
            free(b.s);
            return NULL;
        }
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* docs/models.md's table: a row per network type, its keys from the key table's rows that
   apply to it (`when` on model.type) with their defaults. */
char *pf_config_networks_reference(void) {
    pf_buf b;
    if (pf_buf_init(&b))
        return NULL;
    pf_buf_put(&b, "| `model.type` | scales | trains on | reference | hyper-parameters (config "
                   "keys, default) |\n| --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < pf_n_networks; i++) {
        const pf_network *net = &pf_networks[i];
        char scales[32], list[48];
        pf_buf_put(&b, "| %s | %s | %s | %s | ", net->name,
                   pf_cfg_or_list(pf_cfg_net_scales(net, scales, sizeof scales), list,
                                  sizeof list),
                   net->video == 2 ? "windows" : net->video ? "clips" : "images", net->reference);
        int n = 0;
        for (int j = 0; j < pf_config_n_keys; j++) {
            const pf_config_key *k = &pf_config_keys[j];
            if (!k->when_key || strcmp(k->when_key, "model.type") ||
                !pf_cfg_in_choices(k->when, net->name))
                continue;
            pf_buf_put(&b, "%s`%s`", n++ ? ", " : "", pf_config_key_name(k));
            if (!strcmp(k->path, "model.n_blocks"))
                pf_buf_put(&b, " %d", net->n_blocks);
            else if (k->def)
                pf_buf_put(&b, " %s", k->def);
        }
        pf_buf_put(&b, "%s |\n", n ? "" : "none");
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
