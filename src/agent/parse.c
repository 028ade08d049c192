#include "agent/parse.h"
#include <ctype.h>
#include <string.h>
#include <strings.h>

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* At position p: \s* ; \s* (true|false). Returns 1/0 for the flag, -1 when no match. */
static int tail_match(const char *p) {
    while (is_space(*p)) p++;
    if (*p != ';') return -1;
    p++;
    while (is_space(*p)) p++;
    if (!strncasecmp(p, "true", 4)) return 1;
    if (!strncasecmp(p, "false", 5)) return 0;
    return -1;
}

static void copy_trimmed(const char *b, const char *e, char *out, size_t cap) {
    while (b < e && is_space(*b)) b++;
    while (e > b && is_space(e[-1])) e--;
    size_t n = (size_t)(e - b);
    if (cap == 0) return;
    if (n > cap - 1) n = cap - 1;
    memcpy(out, b, n);
    out[n] = 0;
}

int m2_parse_action(const char *text, char *action, size_t cap, int *done_flag) {
    if (text) {
        for (const char *s = text; *s; s++) {
            /* (.*?) from s: lazily extend e over non-newline characters */
            for (const char *e = s;; e++) {
                int f = tail_match(e);
                if (f >= 0) {
                    copy_trimmed(s, e, action, cap);
                    *done_flag = f;
                    return 1;
                }
                if (*e == 0 || *e == '\n') break;
            }
        }
    }
    if (cap) { strncpy(action, "None", cap - 1); action[cap - 1] = 0; }
    *done_flag = 0;
    return 0;
}

void m2_parse_subgoal(const char *text, char *subgoal, size_t cap) {
    const char *b = text ? text : "";
    while (is_space(*b)) b++;   /* skip leading blank lines too */
    const char *e = strchr(b, '\n');
    if (!e) e = b + strlen(b);
    copy_trimmed(b, e, subgoal, cap);
}
