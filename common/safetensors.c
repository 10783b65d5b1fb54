/*  safetensors — read and write the safetensors format (see safetensors.h), and the durable
    file writer every PixFlow output goes through (pf_write_file_atomic).

    Layout (huggingface/safetensors, docs "format"): u64 little-endian N; N bytes of UTF-8 JSON,
    padded with spaces to a multiple of 8 by writers; then the data section. Each tensor's
    data_offsets [begin, end) are relative to the data section. The parser enforces what the
    reference implementation enforces: the header is a JSON object, every entry has a known
    dtype, a shape of non-negative integers and offsets with end - begin = 4 * prod(shape); the
    tensors tile the data section exactly (sorted by offset: no overlap, no hole, nothing after
    the last one). PixFlow also rejects any dtype other than F32 and I64 (8 bytes an element,
    little-endian) and more than 4 dimensions.
    Parsed tensors are kept in one float array (so each tensor is 4-byte aligned whatever N was),
    in data-offset order; that is the "file order" pf_safetensors_at indexes.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkstemp, fsync, O_DIRECTORY, fileno (CMake passes it too) */
#endif
#include "common/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where pth2safetensors.py is, for the message about a .pth file (CMake passes the source
   tree's scripts/ folder). */
#ifndef PF_SCRIPTS_DIR
#define PF_SCRIPTS_DIR "scripts"
#endif
/* The reference implementation refuses headers above 100 MB; so do we. */
#define PF_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)
/* Offsets are JSON numbers, parsed as doubles: exact up to 2^53. */
#define PF_ST_MAX_OFFSET ((double)((uint64_t)1 << 53))

typedef struct {
    char *name;                  /* tensor name (malloc'd) */
    int ndim;                    /* 0..4 */
    int64_t shape[4];            /* elements per dimension */
    uint64_t begin, end;         /* byte offsets in the data section */
    int i64;                     /* dtype I64 (else F32) */
} st_entry;

struct pf_safetensors {
    int n;                       /* tensors */
    st_entry *t;                 /* n entries sorted by begin offset */
    float *data;                 /* the data section as floats (aligned copy) */
    int n_meta;                  /* __metadata__ pairs */
    char **meta_key, **meta_val; /* n_meta strings each (malloc'd) */
    char *name;                  /* the file name given to parse / load, for messages */
};

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* Swap the bytes of n 4-byte words in place (only on big-endian hosts). */
static void swap32(void *p, size_t n) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++, b += 4) {
        uint8_t t0 = b[0], t1 = b[1];
        b[0] = b[3], b[1] = b[2], b[2] = t1, b[3] = t0;
    }
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Returns 1 if two of the n strings are equal, and sets *dup to one of them. */
static int has_duplicate(const char **s, int n, const char **dup) {
    if (n < 2) return 0;
    const char **sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return 0;
    memcpy(sorted, s, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    int found = 0;
    for (int i = 1; i < n && !found; i++) {
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            *dup = sorted[i];
            found = 1;
        }
    }
    free(sorted);
    return found;
}

/* Elements of a shape, or -1 on overflow / negative dimension. */
static int64_t shape_numel(const int64_t *shape, int ndim) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return -1;
        if (shape[d] != 0 && n > (INT64_MAX / 4) / shape[d]) return -1;
        n *= shape[d];
    }
    return n;
}

int pf_safetensors_serialize(const pf_st_tensor *t, int n, const char *const *meta, int n_meta,
                             void **out, size_t *outlen, char *err, size_t errlen) {
    return pf_safetensors_serialize_i64(t, NULL, n, meta, n_meta, out, outlen, err, errlen);
}

int pf_safetensors_serialize_i64(const pf_st_tensor *t, const int64_t *const *i64, int n,
                                 const char *const *meta, int n_meta, void **out,
                                 size_t *outlen, char *err, size_t errlen) {
    *out = NULL;
    *outlen = 0;
    cJSON *root = cJSON_CreateObject();
    const char **names = malloc(((size_t)(n > n_meta ? n : n_meta) + 1) * sizeof *names);
    char *json = NULL;
    int rc = -1;
    if (!root || !names) {
        snprintf(err, errlen, "safetensors: out of memory");
        goto done;
    }
    const char *dup;
    for (int i = 0; i < n_meta; i++) names[i] = meta[2 * i];
    if (has_duplicate(names, n_meta, &dup)) {
        snprintf(err, errlen, "safetensors: duplicate metadata key '%s'", dup);
        goto done;
    }
    for (int i = 0; i < n; i++) names[i] = t[i].name;
    if (has_duplicate(names, n, &dup)) {
        snprintf(err, errlen, "safetensors: duplicate tensor name '%s'", dup);
        goto done;
    }
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; m && i < n_meta; i++) {
            if (!cJSON_AddStringToObject(m, meta[2 * i], meta[2 * i + 1])) m = NULL;
        }
        if (!m) {
            snprintf(err, errlen, "safetensors: out of memory");
            goto done;
        }
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = shape_numel(t[i].shape, t[i].ndim);
        if (!t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0 || t[i].ndim < 0 ||
            t[i].ndim > 4 || numel < 0 || (numel > 0 && !t[i].data && !(i64 && i64[i]))) {
            snprintf(err, errlen, "safetensors: tensor '%s': invalid name, shape or data",
                     t[i].name);
            goto done;
        }
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
        cJSON *dtype = e ? cJSON_AddStringToObject(e, "dtype", i64 && i64[i] ? "I64" : "F32") : NULL;
        cJSON *shape = dtype ? cJSON_AddArrayToObject(e, "shape") : NULL;
        cJSON *offs = shape ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        int ok = offs != NULL;
        for (int d = 0; ok && d < t[i].ndim; d++) {
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        }
        uint64_t end = offset + (uint64_t)numel * (i64 && i64[i] ? 8 : 4);
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset)) &&
             cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)end));
        if (!ok) {
            snprintf(err, errlen, "safetensors: out of memory");
            goto done;
        }
        offset = end;
    }
    json = cJSON_PrintUnformatted(root);
    if (!json) {
        snprintf(err, errlen, "safetensors: out of memory");
        goto done;
    }
    size_t hlen = strlen(json), padded = (hlen + 7) / 8 * 8;
    uint8_t *buf = malloc(8 + padded + offset);
    if (!buf) {
        snprintf(err, errlen, "safetensors: out of memory (%llu bytes)",
                 (unsigned long long)(8 + padded + offset));
        goto done;
    }
    for (int b = 0; b < 8; b++) buf[b] = (uint8_t)((uint64_t)padded >> (8 * b));
    memcpy(buf + 8, json, hlen);
    memset(buf + 8 + hlen, ' ', padded - hlen);
    uint8_t *p = buf + 8 + padded;
    for (int i = 0; i < n; i++) {
        size_t numel = (size_t)shape_numel(t[i].shape, t[i].ndim), bytes = numel * 4;
        if (i64 && i64[i]) { /* little-endian bytes whatever the host */
            for (size_t k = 0; k < numel; k++, p += 8)
                for (int b = 0; b < 8; b++) p[b] = (uint8_t)((uint64_t)i64[i][k] >> (8 * b));
            continue;
        }
        if (bytes) memcpy(p, t[i].data, bytes);
        if (!host_is_little_endian()) swap32(p, bytes / 4);
        p += bytes;
    }
    *out = buf;
    *outlen = 8 + padded + offset;
    rc = 0;
done:
    free(json);
    free(names);
    cJSON_Delete(root);
    return rc;
}

void pf_safetensors_free(pf_safetensors **st) {
    if (!st || !*st) return;
    pf_safetensors *s = *st;
    for (int i = 0; i < s->n; i++) free(s->t[i].name);
    for (int i = 0; i < s->n_meta; i++) {
        free(s->meta_key[i]);
        free(s->meta_val[i]);
    }
    free(s->t);
    free(s->data);
    free(s->meta_key);
    free(s->meta_val);
    free(s->name);
    free(s);
    *st = NULL;
}

/* A JSON number that is a non-negative integer below 2^53 -> *v. */
static int json_u64(const cJSON *j, uint64_t *v) {
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0 && d < PF_ST_MAX_OFFSET) || d != (double)(uint64_t)d) return 0;
    *v = (uint64_t)d;
    return 1;
}

static int cmp_entry(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Fill one entry from its JSON object. Returns 0, or -1 with err. */
static int parse_entry(const cJSON *e, const char *name, st_entry *out, char *err,
                       size_t errlen) {
    static const char *const other_dtypes[] = {
        "F64", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
        "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64", NULL};
    if (!cJSON_IsObject(e)) {
        snprintf(err, errlen, "tensor '%s': entry is not a JSON object", name);
        return -1;
    }
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs)) {
        snprintf(err, errlen, "tensor '%s': needs string 'dtype', arrays 'shape' and "
                 "'data_offsets'", name);
        return -1;
    }
    out->i64 = !strcmp(dtype->valuestring, "I64");
    if (strcmp(dtype->valuestring, "F32") != 0 && !out->i64) {
        int known = 0;
        for (int i = 0; other_dtypes[i]; i++) known |= !strcmp(dtype->valuestring, other_dtypes[i]);
        snprintf(err, errlen, "tensor '%s': %s dtype '%.32s' (PixFlow reads F32 and I64 only)", name,
                 known ? "unsupported" : "unknown", dtype->valuestring);
        return -1;
    }
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > 4) {
        snprintf(err, errlen, "tensor '%s': %d dimensions (at most 4 supported)", name, ndim);
        return -1;
    }
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        uint64_t v;
        if (!json_u64(cJSON_GetArrayItem(shape, d), &v)) {
            snprintf(err, errlen, "tensor '%s': shape[%d] is not a non-negative integer", name, d);
            return -1;
        }
        out->shape[d] = (int64_t)v;
    }
    for (int d = ndim; d < 4; d++) out->shape[d] = 1;
    if (cJSON_GetArraySize(offs) != 2 || !json_u64(cJSON_GetArrayItem(offs, 0), &out->begin) ||
        !json_u64(cJSON_GetArrayItem(offs, 1), &out->end) || out->end < out->begin) {
        snprintf(err, errlen, "tensor '%s': data_offsets must be [begin, end] integers with "
                 "begin <= end", name);
        return -1;
    }
    int64_t numel = shape_numel(out->shape, ndim);
    int size = out->i64 ? 8 : 4;
    if (numel < 0 || (uint64_t)numel * size != out->end - out->begin) {
        snprintf(err, errlen, "tensor '%s': shape holds %lld bytes of %s but data_offsets "
                 "span %llu", name, (long long)numel * size, out->i64 ? "I64" : "F32",
                 (unsigned long long)(out->end - out->begin));
        return -1;
    }
    return 0;
}

/* Parse the JSON header and the data section into s: a buffer looks_like_safetensors
   accepted (header length 2..PF_ST_MAX_HEADER, then '{' when there is a byte after it).
   Returns 0, or -1 with err (no name). */
static int parse_into(pf_safetensors *s, const uint8_t *b, size_t len, char *err,
                      size_t errlen) {
    if (len < 8) {
        snprintf(err, errlen, "file of %zu bytes is shorter than the 8-byte header length", len);
        return -1;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)b[i] << (8 * i);
    if (hlen > len - 8) {
        snprintf(err, errlen, "header length %llu runs past the end of the file (%zu bytes): "
                 "a truncated file?", (unsigned long long)hlen, len);
        return -1;
    }
    const char *json = (const char *)b + 8;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)hlen, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        /* cJSON sets `end` to the error position too (no need for its global error pointer) */
        size_t at = end && end >= json && end <= json + hlen ? (size_t)(end - json) : 0;
        snprintf(err, errlen, "header is not valid JSON (near byte %zu)", at);
        cJSON_Delete(root);
        return -1;
    }
    for (const char *p = end; p < json + hlen; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            snprintf(err, errlen, "header has trailing bytes after the JSON object");
            cJSON_Delete(root);
            return -1;
        }
    }
    int rc = -1, count = cJSON_GetArraySize(root);
    const char **names = malloc(((size_t)count + 1) * sizeof *names);
    s->t = calloc((size_t)count + 1, sizeof *s->t);
    if (!names || !s->t) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(item) || s->meta_key) {
                snprintf(err, errlen, "__metadata__ must be one object of strings");
                goto done;
            }
            int nm = cJSON_GetArraySize(item);
            s->meta_key = calloc((size_t)nm + 1, sizeof *s->meta_key);
            s->meta_val = calloc((size_t)nm + 1, sizeof *s->meta_val);
            if (!s->meta_key || !s->meta_val) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            const cJSON *kv;
            cJSON_ArrayForEach(kv, item) {
                if (!cJSON_IsString(kv)) {
                    snprintf(err, errlen, "__metadata__['%s'] is not a string", kv->string);
                    goto done;
                }
                char *k = dup_str(kv->string), *v = dup_str(kv->valuestring);
                if (k && v) {
                    s->meta_key[s->n_meta] = k;
                    s->meta_val[s->n_meta++] = v;
                }
                if (!k || !v) {
                    free(k);
                    free(v);
                    snprintf(err, errlen, "out of memory");
                    goto done;
                }
            }
            continue;
        }
        st_entry *t = &s->t[s->n];
        if (parse_entry(item, item->string, t, err, errlen) != 0) goto done;
        if (!(t->name = dup_str(item->string))) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        names[s->n++] = t->name;
    }
    const char *dup;
    if (has_duplicate(names, s->n, &dup)) {
        snprintf(err, errlen, "tensor '%s' appears twice", dup);
        goto done;
    }
    if (s->meta_key && has_duplicate((const char **)s->meta_key, s->n_meta, &dup)) {
        snprintf(err, errlen, "__metadata__ key '%s' appears twice", dup);
        goto done;
    }
    /* The tensors must tile the data section: sorted by offset, each starts where the last
       ended, and the last ends at the end of the file. */
    qsort(s->t, (size_t)s->n, sizeof *s->t, cmp_entry);
    uint64_t data_len = len - 8 - hlen, at = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->t[i].begin != at) {
            snprintf(err, errlen, "tensor '%s': data_offsets [%llu, %llu] %s", s->t[i].name,
                     (unsigned long long)s->t[i].begin, (unsigned long long)s->t[i].end,
                     s->t[i].begin < at ? "overlap the previous tensor" : "leave a hole before it");
            goto done;
        }
        if (s->t[i].end > data_len) {
            snprintf(err, errlen, "tensor '%s': data_offsets [%llu, %llu] run past the end of "
                     "the data (%llu bytes)", s->t[i].name, (unsigned long long)s->t[i].begin,
                     (unsigned long long)s->t[i].end, (unsigned long long)data_len);
            goto done;
        }
        at = s->t[i].end;
    }
    if (at != data_len) {
        snprintf(err, errlen, "%llu bytes after the last tensor belong to no tensor",
                 (unsigned long long)(data_len - at));
        goto done;
    }
    s->data = malloc(data_len ? data_len : 4);
    if (!s->data) {
        snprintf(err, errlen, "out of memory (%llu bytes)", (unsigned long long)data_len);
        goto done;
    }
    memcpy(s->data, b + 8 + hlen, data_len);
    if (!host_is_little_endian()) swap32(s->data, data_len / 4);
    rc = 0;
done:
    free(names);
    cJSON_Delete(root);
    return rc;
}

/* Whether the buffer holds a file torch.save wrote: its zip format (PyTorch >= 1.6: a zip
   whose first entry is "<archive>/data.pkl") or the legacy one (a pickle, protocol 2 and up:
   0x80 then the protocol number). */
static int is_torch_save(const uint8_t *b, size_t len) {
    if (len >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return 1;
    if (len < 30 || memcmp(b, "PK\x03\x04", 4) != 0) return 0;
    size_t n = (size_t)b[26] | (size_t)b[27] << 8;       /* local header: file name length */
    static const char pkl[] = "data.pkl";
    return n >= sizeof pkl - 1 && 30 + n <= len &&
           memcmp(b + 30 + n - (sizeof pkl - 1), pkl, sizeof pkl - 1) == 0;
}

/* What a buffer that is not safetensors looks like, for the message: "" when nothing is
   recognised. */
static const char *other_format(const uint8_t *b, size_t len) {
    static const struct { const char *magic; size_t n; const char *what; } known[] = {
        { "PK\x03\x04", 4, "a zip archive (numpy .npz?)" },
        { "\x1f\x8b", 2, "a gzip file" },
        { "\x89HDF\r\n\x1a\n", 8, "an HDF5 file (Keras .h5?)" },
        { "\x93NUMPY", 6, "a numpy .npy file" },
        { "version https://git-lfs", 23, "a Git LFS pointer, not the file it points to (run "
                                         "`git lfs pull`)" },
        { "<!DOCTYPE", 9, "an HTML page (a failed download?)" },
        { "<html", 5, "an HTML page (a failed download?)" },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (len >= known[i].n && memcmp(b, known[i].magic, known[i].n) == 0)
            return known[i].what;
    return "";
}

/* Whether the buffer can be safetensors at all: an 8-byte header length in range, then '{'.
   A file shorter than that, or cut short after it, is parse_into's to report. */
static int looks_like_safetensors(const uint8_t *b, size_t len) {
    if (len < 8) return 1;
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)b[i] << (8 * i);
    return hlen >= 2 && hlen <= PF_ST_MAX_HEADER && (len == 8 || b[8] == '{');
}

int pf_safetensors_parse(const void *buf, size_t len, const char *name, pf_safetensors **out,
                         char *err, size_t errlen) {
    *out = NULL;
    const uint8_t *b = buf;
    if (is_torch_save(b, len)) {
        snprintf(err, errlen, "%s: a PyTorch .pth (torch.save) file, not safetensors; convert "
                 "it with: python3 " PF_SCRIPTS_DIR "/pth2safetensors.py %s OUT.safetensors "
                 "(BasicSR's params / params_ema, MMagic's state_dict; docs/models.md)", name,
                 name);
        return -1;
    }
    if (!looks_like_safetensors(b, len)) {
        char hex[3 * 16 + 1] = "", text[17] = "";
        size_t n = len < 16 ? len : 16;
        for (size_t i = 0; i < n; i++) {
            snprintf(hex + strlen(hex), sizeof hex - strlen(hex), "%s%02x", i ? " " : "", b[i]);
            text[i] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : '.';
        }
        text[n] = '\0';
        const char *what = other_format(b, len);
        snprintf(err, errlen, "%s: not a safetensors file%s%s: it starts with %s (\"%s\"), where "
                 "safetensors has an 8-byte little-endian header length (2 to %llu) and then "
                 "'{'", name, what[0] ? "; it looks like " : "", what, hex, text,
                 (unsigned long long)PF_ST_MAX_HEADER);
        return -1;
    }
    pf_safetensors *s = calloc(1, sizeof *s);
    char msg[512];
    if (!s || !(s->name = dup_str(name))) {
        snprintf(err, errlen, "%s: out of memory", name);
        pf_safetensors_free(&s);
        return -1;
    }
    if (parse_into(s, buf, len, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: invalid safetensors: %s", name, msg);
        pf_safetensors_free(&s);
        return -1;
    }
    *out = s;
    return 0;
}

const char *pf_safetensors_name(const pf_safetensors *st) {
    return st && st->name ? st->name : "";
}

int pf_safetensors_load(const char *path, pf_safetensors **out, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return -1;
    }
    size_t len = (size_t)sb.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory (%zu bytes)", path, len);
        fclose(f);
        return -1;
    }
    size_t got = fread(buf, 1, len, f);
    int rd_err = ferror(f);
    fclose(f);
    if (got != len) {
        snprintf(err, errlen, "%s: read %zu of %zu bytes%s%s", path, got, len,
                 rd_err ? ": " : "", rd_err ? strerror(errno) : "");
        free(buf);
        return -1;
    }
    int rc = pf_safetensors_parse(buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

int pf_safetensors_count(const pf_safetensors *st) {
    return st ? st->n : 0;
}

static const float *entry_out(const pf_safetensors *st, const st_entry *e, const char **name,
                              int *ndim, int64_t shape[4]) {
    if (name) *name = e->name;
    if (ndim) *ndim = e->ndim;
    if (shape) memcpy(shape, e->shape, sizeof e->shape);
    return e->i64 ? NULL : st->data + e->begin / 4;
}

const float *pf_safetensors_at(const pf_safetensors *st, int i, const char **name, int *ndim,
                               int64_t shape[4]) {
    if (!st || i < 0 || i >= st->n) return NULL;
    return entry_out(st, &st->t[i], name, ndim, shape);
}

const float *pf_safetensors_get(const pf_safetensors *st, const char *name, int *ndim,
                                int64_t shape[4]) {
    for (int i = 0; st && i < st->n; i++) {
        if (strcmp(st->t[i].name, name) == 0) return entry_out(st, &st->t[i], NULL, ndim, shape);
    }
    return NULL;
}

int64_t pf_safetensors_get_i64(const pf_safetensors *st, const char *name, int *ndim,
                               int64_t shape[4], int64_t *out, size_t max) {
    for (int i = 0; st && i < st->n; i++) {
        const st_entry *e = &st->t[i];
        if (strcmp(e->name, name) != 0) continue;
        if (!e->i64) return -1;
        entry_out(st, e, NULL, ndim, shape);
        int64_t numel = shape_numel(e->shape, e->ndim);
        /* the data section was read as 4-byte words (swapped to host order on big-endian
           hosts): word 0 of an element is its low half, word 1 its high one */
        const uint32_t *w = (const uint32_t *)st->data + e->begin / 4;
        for (int64_t k = 0; k < numel && (size_t)k < max; k++)
            out[k] = (int64_t)((uint64_t)w[2 * k + 1] << 32 | w[2 * k]);
        return numel;
    }
    return -1;
}

const char *pf_safetensors_meta(const pf_safetensors *st, const char *key) {
    for (int i = 0; st && i < st->n_meta; i++) {
        if (strcmp(st->meta_key[i], key) == 0) return st->meta_val[i];
    }
    return NULL;
}

static const char *io_reason(int e) {
    return e == ENOSPC ? "disk full" : e == EDQUOT ? "disk quota exceeded" : strerror(e);
}

int pf_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                         size_t errlen) {
    /* temp file next to the target, so rename() stays within one file system */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    size_t tlen = strlen(path) + 16;
    char *tmp = malloc(tlen), *dir = malloc(dirlen + 2);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (!*base) {
        snprintf(err, errlen, "%s: is a directory name, not a file name", path);
        free(tmp);
        free(dir);
        return -1;
    }
    if (slash) {
        memcpy(dir, path, dirlen ? dirlen : 1); /* "/x" -> "/" */
        dir[dirlen ? dirlen : 1] = 0;
    } else {
        strcpy(dir, ".");
    }
    snprintf(tmp, tlen, "%.*s%s.%s.XXXXXX", (int)dirlen, path, slash ? "/" : "", base);
    int rc = -1, fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file in %s: %s", path, dir,
                 io_reason(errno));
        goto out;
    }
    fchmod(fd, 0644); /* mkstemp makes 0600; outputs are meant to be shared */
    const uint8_t *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, errlen, "%s: write failed: %s", path, w < 0 ? io_reason(errno)
                     : "no progress");
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        snprintf(err, errlen, "%s: fsync failed: %s", path, io_reason(errno));
        goto fail;
    }
    int c = close(fd);
    fd = -1;
    if (c != 0) {
        snprintf(err, errlen, "%s: close failed: %s", path, io_reason(errno));
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot rename %s into place: %s", path, tmp,
                 io_reason(errno));
        goto fail;
    }
    /* make the rename itself durable; file systems that cannot fsync a folder say EINVAL */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL) {
            snprintf(err, errlen, "%s: written, but fsync of folder %s failed: %s", path, dir,
                     io_reason(errno));
            close(dfd);
            goto out;
        }
        close(dfd);
    }
    rc = 0;
    goto out;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
out:
    free(tmp);
    free(dir);
    return rc;
}
