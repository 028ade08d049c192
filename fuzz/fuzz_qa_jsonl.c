/* libFuzzer: the {question, answer} JSONL parser and the numeric answer extraction (data/qa.h);
 * every accepted item's answer must be found again in its own text, and its chain parts built. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "data/qa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    double v;
    (void)m2_answer_extract(s, &v);
    free(s);
    m2_err err = {0};
    m2_qa_set qs;
    if (m2_qa_parse_jsonl((const char *)data, size, "fuzz.jsonl", &qs, &err)) return 0;
    for (int i = 0; i < qs.n; i++) {
        if (!m2_qa_check(&qs.q[i], qs.q[i].answer)) abort();   /* the value came from this text */
        char *parts[3];
        if (m2_qa_parts(&qs.q[i], 3, parts, &err) == 0)
            for (int j = 0; j < 3; j++) free(parts[j]);
        (void)m2_answer_extract(qs.q[i].question, &v);
    }
    m2_qa_set_free(&qs);
    return 0;
}
