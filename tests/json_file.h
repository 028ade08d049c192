/* A JSON file a test's code wrote, parsed: dir/name read and parsed, the test failing when it cannot
 * be. Include after <cmocka.h> and <cjson/cJSON.h>; the caller frees the result (cJSON_Delete). */
#ifndef M2_TEST_JSON_FILE_H
#define M2_TEST_JSON_FILE_H
#include <stdio.h>
#include <stdlib.h>
#include "core/fsutil.h"

static inline cJSON *m2t_read_json(const char *dir, const char *name) {
    m2_err err = {0};
    char p[1200], *text = NULL;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (m2_read_file(p, &text, NULL, &err)) fail_msg("%s", err.msg);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) fail_msg("%s: not JSON", p);
    return j;
}

#endif
