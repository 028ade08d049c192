/* libFuzzer: PEFT adapter_config.json parsing; accepted configs re-encode and parse again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_err err = {0};
    m2_lora_config c, c2;
    char base[256];
    if (m2_peft_config_parse((const char *)data, size, "fuzz.json", &c, base, sizeof base, &err)) return 0;
    char *js = m2_peft_config_json(&c, base);
    if (js) {
        if (m2_peft_config_parse(js, strlen(js), "again.json", &c2, NULL, 0, &err)) abort();
        if (c2.rank != c.rank || c2.targets != c.targets) abort();
        free(js);
    }
    return 0;
}
