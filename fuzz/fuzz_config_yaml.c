/* libFuzzer target: the YAML config parser (core/config.h) on arbitrary bytes. Must never crash,
 * leak or hang; and whatever it accepts must survive the resolved-config round trip exactly
 * (to_yaml -> apply -> to_yaml gives the same text). Seeds: the YAML files under configs/.
 *   make fuzz && ./build-fuzz/fuzz_config_yaml -max_total_time=60 configs/ */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"
#include "pipe/run_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const m2_cfg_schema *s = m2_run_config_schema();
    m2_run_config *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    m2_err err = {0};
    if (!a || !b) { free(a); free(b); return 0; }
    if (m2_cfg_defaults(s, a, &err) != 0) abort();
    /* Inputs whose first line is "key=value" also exercise the override path. */
    const uint8_t *nl = memchr(data, '\n', size);
    if (nl && nl - data < 256 && memchr(data, '=', (size_t)(nl - data))) {
        char line[256];
        memcpy(line, data, (size_t)(nl - data));
        line[nl - data] = 0;
        m2_cfg_override(s, a, line, &err);
    }
    if (m2_cfg_apply_yaml(s, a, (const char *)data, size, "fuzz.yaml", &err) == 0) {
        char *y1 = m2_cfg_to_yaml(s, a);
        if (!y1) abort();
        if (m2_cfg_defaults(s, b, &err) != 0) abort();
        if (m2_cfg_apply_yaml(s, b, y1, strlen(y1), "resolved.yaml", &err) != 0) abort();
        char *y2 = m2_cfg_to_yaml(s, b);
        if (!y2 || strcmp(y1, y2)) abort();
        free(y1);
        free(y2);
    }
    free(a);
    free(b);
    return 0;
}
