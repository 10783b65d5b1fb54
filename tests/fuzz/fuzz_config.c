/*  fuzz_config — libFuzzer target for pf_config_parse (common/config.c): the YAML text a
    peer receives in WELCOME, so it comes from the network. check_paths = 0, as a peer parses
    it. An accepted config must also survive pf_config_to_yaml -> pf_config_parse (the
    round trip config.h promises).

    The YAML library is libyaml (common/yaml_tree.c): no suppressions, every leak is
    reported. The inputs that crashed, hung or leaked in libfyaml, the earlier parser, stay in
    regressions/config/ and are replayed.
*/
#include "common/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static pf_config cfg, cfg2;
    char err[1024];
    if (pf_config_parse(&cfg, "fuzz.yaml", (const char *)data, size, 0, err, sizeof err) != 0) {
        if (!err[0])
            abort();
        return 0;
    }
    char *yaml = pf_config_to_yaml(&cfg);
    if (!yaml)
        abort();
    size_t n = 0;
    while (yaml[n])
        n++;
    if (pf_config_parse(&cfg2, "resolved.yaml", yaml, n, 0, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_config: the resolved config does not parse back: %s\n%s\n", err,
                yaml);
        abort();
    }
    free(yaml);
    return 0;
}
