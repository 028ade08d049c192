/* libFuzzer: HF config.json parsing; an accepted config must survive to_json -> parse and map to
 * an engine config. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_hf_config c, c2;
    if (m2_hf_config_parse((const char *)data, size, "fuzz.json", &c, &err)) return 0;
    char *js = m2_hf_config_to_json(&c);
    if (js) {
        if (m2_hf_config_parse(js, strlen(js), "again.json", &c2, &err)) abort();   /* our own output must parse */
        free(js);
    }
    m2_model_config mc;
    m2_hf_to_model_config(&c, &mc, &err);
    return 0;
}
