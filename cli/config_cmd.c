/*  `pixflow config CONFIG [--get KEY ...]` — the config as PixFlow resolves it.

    Without --get: the resolved YAML (every key, defaults filled in; what the coordinator sends
    its peers), after the same checks as `pixflow train` (data folders must exist). --get
    parses without checking paths. With --get: one line per KEY, its resolved value (strings
    unquoted, null as an empty line), for scripts (scripts/launch.sh reads the hooks a job needs
    and its key folder this way instead of grepping YAML); KEY is any key of the table with one
    value. `pixflow config --reference SECTION|KEY ...` prints the markdown key tables of
    docs/config.md from the key table (tests/test_config_docs.py compares them); `--keys` lists
    every key path of the table, `--networks` prints docs/models.md's table of the network
    types (common/networks.h). Exit status 0,
    2 for a bad config (the message names file, line and key) or an unknown KEY.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/config.h"
#include "common/config_keys.h"
#include "common/util.h"

/* pixflow config --reference WHAT...: the key tables of docs/config.md. */
static int reference(int argc, char **argv) {
    char *md = pf_config_reference((const char *const *)argv, argc);
    if (!md) {
        fprintf(stderr, "pixflow config --reference: not a section or key of the table:");
        for (int i = 0; i < argc; i++) fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "\n");
        return 2;
    }
    fputs(md, stdout);
    free(md);
    return 0;
}

int pf_config_main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[0], "--reference")) return reference(argc - 1, argv + 1);
    if (argc == 1 && !strcmp(argv[0], "--networks")) {
        char *md = pf_config_networks_reference();
        if (!md) return 2;
        fputs(md, stdout);
        free(md);
        return 0;
    }
    if (argc == 1 && !strcmp(argv[0], "--keys")) {
        for (int i = 0; i < pf_config_n_keys; i++) printf("%s\n", pf_config_keys[i].path);
        return 0;
    }
    if (argc < 1 || argv[0][0] == '-' || (argc > 1 && strcmp(argv[1], "--get") != 0) ||
        argc == 2) {
        fprintf(stderr, "usage: pixflow config CONFIG [--get KEY ...]\n"
                        "       pixflow config --reference SECTION|KEY ...\n"
                        "       pixflow config --keys\n"
                        "       pixflow config --networks\n");
        return 2;
    }
    static pf_config cfg;
    char err[2048];
    /* --get does not require the data folders to exist here: the launcher may run on a host
       that does not hold the data (the roles check them where they run). */
    int rc;
    if (argc == 1) {
        rc = pf_config_load(&cfg, argv[0], err, sizeof err);
    } else {
        size_t len = 0;
        char *text = pf_read_file(argv[0], &len, err, sizeof err);
        rc = text ? pf_config_parse(&cfg, argv[0], text, len, 0, err, sizeof err) : -1;
        free(text);
    }
    if (rc != 0) {
        fprintf(stderr, "pixflow: %s\n", err);
        return 2;
    }
    if (argc == 1) {
        char *yaml = pf_config_to_yaml(&cfg);
        if (!yaml) {
            fprintf(stderr, "pixflow: out of memory\n");
            return 1;
        }
        fputs(yaml, stdout);
        free(yaml);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        char value[PF_PATH_MAX + 64];
        if (pf_config_get(&cfg, argv[i], value, sizeof value) != 0) {
            fprintf(stderr, "pixflow config: --get %s: not a key with one value (a key of "
                            "docs/config.md's tables, e.g. model.type, data.train.gt_folder, "
                            "security.curve)\n", argv[i]);
            return 2;
        }
        printf("%s\n", value);
    }
    return 0;
}
