/*  safetensors — read and write the safetensors format (huggingface/safetensors):
    8-byte little-endian header length N, N bytes of JSON header {name: {dtype, shape,
    data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the raw tensor bytes.
    PixFlow writes and reads F32 tensors, and I64 ones (torch's int64 buffers such as
    BatchNorm2d's num_batches_tracked; pf_safetensors_serialize_i64, pf_safetensors_get_i64); a file with
    other dtypes is rejected by name.
    The parser validates everything (header length, JSON, offsets inside the buffer and
    matching dtype * shape, no overlap, no hole, no trailing bytes: the tensors must tile the
    data section, as the reference implementation requires) since files come from users and
    from the network. Error messages start with the file name and name the tensor at fault.
*/
#ifndef PF_SAFETENSORS_H
#define PF_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    const float *data;
    int ndim;                   /* 0..4 */
    int64_t shape[4];
} pf_st_tensor;

/* Serialise tensors and metadata (pairs meta[2i] = key, meta[2i+1] = value) into one malloc'd
   buffer: data in the order given, compact JSON header padded with spaces to a multiple of 8.
   Returns 0, or -1 with err (duplicate name or key, empty name or "__metadata__", ndim outside
   0..4, negative dimension, out of memory). */
int pf_safetensors_serialize(const pf_st_tensor *t, int n, const char *const *meta, int n_meta,
                             void **out, size_t *outlen, char *err, size_t errlen);
/* The same, where i64[k] non-NULL makes tensor k I64 with those values (t[k].data unused;
   written little-endian, 8 bytes an element); i64 NULL: all F32 (pf_safetensors_serialize). */
int pf_safetensors_serialize_i64(const pf_st_tensor *t, const int64_t *const *i64, int n,
                                 const char *const *meta, int n_meta, void **out,
                                 size_t *outlen, char *err, size_t errlen);

typedef struct pf_safetensors pf_safetensors;

/* Parse a buffer (copied). `name` is used in messages. Returns 0 or -1 with err, which starts
   with `name`. A file torch.save wrote (zip with data.pkl, or a pickle) is named as such, with
   the command that converts it (scripts/pth2safetensors.py); anything else that cannot be
   safetensors (header length outside 2..100 MB, or no '{' after it) is "not a safetensors
   file" with its first 16 bytes (hex and text) and, where recognised, what it looks like
   (zip, gzip, HDF5, .npy, Git LFS pointer, HTML). */
int pf_safetensors_parse(const void *buf, size_t len, const char *name, pf_safetensors **out,
                         char *err, size_t errlen);
/* Read and parse a file. */
int pf_safetensors_load(const char *path, pf_safetensors **out, char *err, size_t errlen);

int pf_safetensors_count(const pf_safetensors *st);
/* The i-th tensor in file order (ascending data offset): name, ndim, shape (entries past ndim
   are 1); returns its data (aligned copy, F32, C order), or NULL if i is out of range or the
   tensor is I64 (name, ndim and shape are set then: pf_safetensors_get_i64 reads it). Any of
   name, ndim, shape may be NULL. Pointers stay valid until pf_safetensors_free. */
const float *pf_safetensors_at(const pf_safetensors *st, int i, const char **name, int *ndim,
                               int64_t shape[4]);
/* By name; NULL if absent (or I64). */
const float *pf_safetensors_get(const pf_safetensors *st, const char *name, int *ndim,
                                int64_t shape[4]);
/* An I64 tensor by name: ndim and shape (either may be NULL), and its first min(numel, max)
   values copied into out. Returns numel, or -1 when absent or not I64. */
int64_t pf_safetensors_get_i64(const pf_safetensors *st, const char *name, int *ndim,
                               int64_t shape[4], int64_t *out, size_t max);
/* The name given to pf_safetensors_parse (the path for pf_safetensors_load), for messages. */
const char *pf_safetensors_name(const pf_safetensors *st);
/* Metadata value for key, or NULL. */
const char *pf_safetensors_meta(const pf_safetensors *st, const char *key);
void pf_safetensors_free(pf_safetensors **st);

/* Write `len` bytes to `path` durably: temp file ".NAME.XXXXXX" in the same folder (mode
   0644), fsync, rename, fsync of the folder. Returns 0, or -1 with err naming the path
   (ENOSPC: "disk full"); on failure the target is untouched and the temp file removed — except
   when only the final folder fsync fails: then the new file is in place and err says so. */
int pf_write_file_atomic(const char *path, const void *data, size_t len, char *err,
                         size_t errlen);
#endif
