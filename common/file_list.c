/*  file_list — see file_list.h. */
#include "common/file_list.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/image.h"
#include "common/log.h"

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pf_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int pf_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int pf_names_add(pf_name_list *l, const char *name) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **t = realloc(l->names, sizeof *t * cap);
        if (!t) return -1;
        l->names = t;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name))) return -1;
    l->n++;
    return 0;
}

void pf_names_sort(pf_name_list *l) {
    if (l->n > 1) qsort(l->names, l->n, sizeof *l->names, cmp_str);
}

void pf_names_free(pf_name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

int pf_list_images(const char *folder, const char *key, const char *field, pf_name_list *out,
                   char *err, size_t errlen) {
    DIR *d = opendir(folder);
    if (!d) {
        snprintf(err, errlen, "%s.%s: cannot open '%s': %s", key, field, folder,
                 strerror(errno));
        return -1;
    }
    int skipped = 0, oom = 0;
    struct dirent *e;
    while (!oom && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (pf_image_format_of(e->d_name) == PF_IMAGE_UNKNOWN) skipped++;
        else oom = pf_names_add(out, e->d_name) != 0;
    }
    closedir(d);
    if (oom) {
        snprintf(err, errlen, "%s: out of memory listing '%s'", key, folder);
        return -1;
    }
    if (skipped)
        pf_warn("%s.%s: ignoring %d files that are not .png, .jpg or .jpeg in '%s'", key, field,
                skipped, folder);
    if (out->n == 0) {
        snprintf(err, errlen, "%s.%s: no .png, .jpg or .jpeg files in '%s'", key, field,
                 folder);
        return -1;
    }
    pf_names_sort(out);
    return 0;
}
