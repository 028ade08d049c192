#include "data/prompts.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char M2_PROMPT_HIGH[] =
    "You are a high-level planner. Based on the state (task description, group action and current observation), "
    "please generate a clear and simple subtask.\n";
const char M2_PROMPT_LOW[] =
    "You are a low-level action executor. Based on the current subtask and observation, please generate a "
    "executable action and determine if the subtask is completed (true/false).\n";
const char M2_PROMPT_LOW_MULTI2_EXTRA[] =
    "Sometimes the number you receive will be wrong.\nYour task is to infer the correct number from the observation.";

static int grow(char **buf, size_t *cap, size_t need) {
    if (need + 1 <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need + 1) nc *= 2;
    char *p = realloc(*buf, nc);
    if (!p) return -1;
    *buf = p; *cap = nc;
    return 0;
}

long m2_py_repr(char **buf, size_t *cap, size_t len, const char *s) {
    size_t n = strlen(s);
    if (grow(buf, cap, len + 4 * n + 2)) return -1;
    char *o = *buf + len;
    int sq = strchr(s, '\'') != NULL, dq = strchr(s, '"') != NULL;
    char q = sq && !dq ? '"' : '\'';
    static const char hex[] = "0123456789abcdef";
    *o++ = q;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)q) { *o++ = '\\'; *o++ = (char)c; }
        else if (c == '\t') { *o++ = '\\'; *o++ = 't'; }
        else if (c == '\n') { *o++ = '\\'; *o++ = 'n'; }
        else if (c == '\r') { *o++ = '\\'; *o++ = 'r'; }
        else if (c < 0x20 || c == 0x7f) { *o++ = '\\'; *o++ = 'x'; *o++ = hex[c >> 4]; *o++ = hex[c & 15]; }
        else *o++ = (char)c;
    }
    *o++ = q;
    *o = 0;
    return (long)(o - *buf);
}

static char *concat3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (!s) return NULL;
    memcpy(s, a, la); memcpy(s + la, b, lb); memcpy(s + la + lb, c, lc + 1);
    return s;
}

char *m2_prompt_state(const char *const *group_actions, int n, const char *observation) {
    char *buf = NULL;
    size_t cap = 0;
    long len = 0;
    const char *head = "Group action: [";
    if (grow(&buf, &cap, strlen(head))) return NULL;
    strcpy(buf, head);
    len = (long)strlen(head);
    for (int i = 0; i < n; i++) {
        if (i) {
            if (grow(&buf, &cap, (size_t)len + 2)) { free(buf); return NULL; }
            memcpy(buf + len, ", ", 3);
            len += 2;
        }
        len = m2_py_repr(&buf, &cap, (size_t)len, group_actions[i]);
        if (len < 0) { free(buf); return NULL; }
    }
    const char *mid = "]. Current observation: ";
    size_t lo = strlen(observation), lm = strlen(mid);
    if (grow(&buf, &cap, (size_t)len + lm + lo)) { free(buf); return NULL; }
    memcpy(buf + len, mid, lm);
    memcpy(buf + len + lm, observation, lo + 1);
    return buf;
}

char *m2_prompt_high_context(const char *task) { return concat3(M2_PROMPT_HIGH, " ", task); }

char *m2_prompt_low_context(const char *subtask, int multi2) {
    char *p = concat3(M2_PROMPT_LOW, multi2 ? M2_PROMPT_LOW_MULTI2_EXTRA : "", " Subtask: ");
    if (!p) return NULL;
    char *s = concat3(p, subtask, "");
    free(p);
    return s;
}

char *m2_prompt_low_obs(const char *observation) { return concat3("Obs: ", observation, ""); }

char *m2_prompt_low_action(const char *action, int subgoal_done) {
    return concat3(action, "; ", subgoal_done ? "True" : "False");
}

/* (.*?)\s*;\s*(true|false), re.search, case-insensitive: the first ';' followed by optional spaces
 * and true/false; the action is the text before it with trailing spaces removed. */
