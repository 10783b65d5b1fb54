/*  `pixflow config CONFIG [--get KEY ...]` — the config as PixFlow resolves it.

    Without --get: the resolved YAML (every key, defaults filled in; what the coordinator sends
    its peers), after the same checks as `pixflow train` (data folders must exist). --get
    parses without checking paths. With --get: one line per KEY, its resolved value, for scripts (scripts/launch.sh
    reads the hooks a job needs and its key folder this way instead of grepping YAML). Keys:
    work_dir, model.type, evaluation.instances, visual_config.interval, security.curve (true /
    false), security.keys_dir, total_iters, seed. Exit status 0, 2 for a bad config (the
    message names file, line and key) or an unknown KEY.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/config.h"
#include "common/util.h"

static int print_key(const pf_config *c, const char *key) {
    if (!strcmp(key, "work_dir")) printf("%s\n", c->work_dir);
    else if (!strcmp(key, "model.type")) printf("%s\n", c->model_type);
    else if (!strcmp(key, "evaluation.instances")) printf("%d\n", c->eval_instances);
    else if (!strcmp(key, "visual_config.interval")) printf("%" PRId64 "\n", c->visual_interval);
    else if (!strcmp(key, "security.curve")) printf("%s\n", c->curve ? "true" : "false");
    else if (!strcmp(key, "security.keys_dir")) printf("%s\n", c->keys_dir);
    else if (!strcmp(key, "total_iters")) printf("%" PRId64 "\n", c->total_iters);
    else if (!strcmp(key, "seed")) printf("%" PRIu64 "\n", c->seed);
    else return -1;
    return 0;
}

int pf_config_main(int argc, char **argv) {
    if (argc < 1 || argv[0][0] == '-' || (argc > 1 && strcmp(argv[1], "--get") != 0) ||
        argc == 2) {
        fprintf(stderr, "usage: pixflow config CONFIG [--get KEY ...]\n");
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
        if (print_key(&cfg, argv[i]) != 0) {
            fprintf(stderr, "pixflow config: --get %s: not a key this command reports (work_dir, "
                            "model.type, evaluation.instances, visual_config.interval, "
                            "security.curve, security.keys_dir, total_iters, seed)\n", argv[i]);
            return 2;
        }
    }
    return 0;
}
