/* libFuzzer target: the ALFWorld game-file reader (game.tw-pddl JSON + PDDL problem).
 * Input starting with '{' is the whole JSON file; anything else is used as the "pddl_problem" string,
 * so the fuzzer reaches the S-expression parser directly. A scene that loads is played a few steps
 * (oracle, admissible list, texts) to exercise the loaded state. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "env/alfworld/alfworld.h"

static void play(const m2_aw_scene *s) {
    m2_aw_state st;
    m2_err err = {0};
    if (m2_aw_state_init(&st, s, &err)) return;
    m2_aw_cmdlist l = {0};
    char buf[8192], a[256];
    m2_aw_text_intro(s, &st, buf, sizeof buf);
    for (int k = 0; k < 8; k++) {
        if (m2_aw_admissible(s, &st, &l)) break;
        if (m2_aw_oracle(s, &st, a, sizeof a, &err)) {
            if (!l.n) break;
            snprintf(a, sizeof a, "%s", l.items[k % l.n]);
        }
        m2_aw_cmd c;
        if (!m2_aw_parse(s, a, &c) && m2_aw_applicable(s, &st, &c)) m2_aw_apply(s, &st, &c, buf, sizeof buf);
        (void)m2_aw_won(s, &st);
    }
    m2_aw_cmdlist_free(&l);
    m2_aw_state_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    m2_aw_scene s;
    m2_err err = {0};
    if (size > (1u << 20)) return 0;
    if (size && data[0] == '{') {
        if (m2_aw_load_twpddl_text((const char *)data, size, "fuzz", &s, &err) == 0) { play(&s); m2_aw_scene_free(&s); }
        return 0;
    }
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pddl_problem", text);
    char *j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    free(text);
    if (j && m2_aw_load_twpddl_text(j, strlen(j), "fuzz", &s, &err) == 0) { play(&s); m2_aw_scene_free(&s); }
    free(j);
    return 0;
}
