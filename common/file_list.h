/*  file_list — lists of file names and the folder listings the datasets make. */
#ifndef PF_FILE_LIST_H
#define PF_FILE_LIST_H
#include <stddef.h>

/* A growing list of names (relative to their folder). */
typedef struct {
    char **names;
    int n, cap;
} pf_name_list;

/* Append a copy of name. Returns 0, or -1 (out of memory). */
int pf_names_add(pf_name_list *l, const char *name);

/* Sort by strcmp. */
void pf_names_sort(pf_name_list *l);

/* Free the names and empty the list. */
void pf_names_free(pf_name_list *l);

/* 1 when path is a regular file (stat follows links) / a directory. */
int pf_is_file(const char *path);
int pf_is_dir(const char *path);

/* Every .png/.jpg/.jpeg of `folder`, sorted by name, into out. Other files are ignored with a
   warning naming key.field; no image is an error. Errors: "key.field: what is wrong" with the
   folder. Returns 0 or -1 with err. */
int pf_list_images(const char *folder, const char *key, const char *field, pf_name_list *out,
                   char *err, size_t errlen);
#endif
