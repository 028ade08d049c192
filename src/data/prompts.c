#include "data/prompts.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* ---------------------------------------------------------------- task information */

const m2_low_parts M2_LOW_PARTS_DEFAULT = {.task_info = 1, .commands = M2_PROMPT_COMMANDS_RELEVANT};

/* "<count> <name>" or "<name>" -> name, without the count, surrounding spaces or a final '.':
 * [*b, *e) inside s. */
static void item_name(const char *s, const char *end, const char **b, const char **e) {
    while (s < end && isspace((unsigned char)*s)) s++;
    const char *d = s;
    while (d < end && isdigit((unsigned char)*d)) d++;
    if (d > s && d < end && *d == ' ') s = d + 1;
    while (end > s && (isspace((unsigned char)end[-1]) || end[-1] == '.')) end--;
    *b = s;
    *e = end;
}

static int same_name(const char *a, const char *ae, const char *b, const char *be) {
    return ae - a == be - b && !strncasecmp(a, b, (size_t)(ae - a));
}

/* A block line "craft N <out> using c1 <in1>, c2 <in2>" (docs/textcraft.md): its output. */
static int line_output(const char *l, const char *le, const char **ob, const char **oe) {
    if (le - l < 6 || strncmp(l, "craft ", 6)) return 0;
    const char *u = strstr(l, " using ");
    if (!u || u > le) return 0;
    item_name(l + 6, u, ob, oe);
    return *oe > *ob;
}

/* The lines of `block` (after its header) that craft the item `subtask` names, and recursively
 * the listed lines that craft their ingredients; *n_kept = how many lines survive. The block is
 * rewritten in place (kept lines in their order). */
#define M2_TC_MAX_BLOCK_LINES 256
static void keep_relevant(char *block, size_t head_len, const char *subtask, int *n_kept) {
    const char *ls[M2_TC_MAX_BLOCK_LINES], *le[M2_TC_MAX_BLOCK_LINES];
    int n = 0, keep[M2_TC_MAX_BLOCK_LINES] = {0};
    for (char *p = block + head_len; *p && n < M2_TC_MAX_BLOCK_LINES;) {
        char *e = strchr(p, '\n');
        ls[n] = p;
        le[n] = e ? e : p + strlen(p);
        n++;
        p = e ? e + 1 : p + strlen(p);
    }
    *n_kept = n;
    const char *tb, *te;
    if (strncasecmp(subtask, "craft ", 6)) return;   /* no item named: every line */
    item_name(subtask + 6, subtask + strlen(subtask), &tb, &te);
    /* worklist of wanted names: the target, then the ingredients of every kept line */
    const char *wb[M2_TC_MAX_BLOCK_LINES * 8], *we[M2_TC_MAX_BLOCK_LINES * 8];
    int nw = 0, kept = 0;
    wb[nw] = tb, we[nw] = te, nw++;
    for (int w = 0; w < nw; w++) {
        for (int i = 0; i < n; i++) {
            const char *ob, *oe;
            if (keep[i] || !line_output(ls[i], le[i], &ob, &oe) || !same_name(ob, oe, wb[w], we[w])) continue;
            keep[i] = 1;
            kept++;
            for (const char *q = strstr(ls[i], " using ") + 7; q < le[i];) {
                const char *c = q;
                while (c < le[i] && *c != ',') c++;
                if (nw < M2_TC_MAX_BLOCK_LINES * 8) { item_name(q, c, &wb[nw], &we[nw]); nw++; }
                q = c < le[i] ? c + 1 : c;
            }
        }
    }
    if (!kept) return;   /* the sub-goal names no listed item (a garbled plan): every line */
    char *o = block + head_len;
    for (int i = 0; i < n; i++) {
        if (!keep[i]) continue;
        if (o > block + head_len) *o++ = '\n';
        memmove(o, ls[i], (size_t)(le[i] - ls[i]));
        o += le[i] - ls[i];
    }
    *o = 0;
    *n_kept = kept;
}

/* TextCraft's reset observation is "Crafting commands:\n<lines>\n\nGoal: craft <goal>." (docs/textcraft.md):
 * the block is everything before the blank line that precedes the goal. */
static char *textcraft_commands(const char *first_obs, const char *subtask, m2_prompt_commands commands) {
    static const char head[] = "Crafting commands:\n";
    const char *b = strstr(first_obs, head);
    if (!b) return NULL;
    const char *e = strstr(b, "\n\nGoal:");
    size_t n = e ? (size_t)(e - b) : strlen(b);
    while (n > 0 && b[n - 1] == '\n') n--;
    if (n <= sizeof head - 1) return NULL;   /* a header without commands */
    char *block = strndup(b, n);
    int kept;
    if (block && commands == M2_PROMPT_COMMANDS_RELEVANT && subtask) keep_relevant(block, sizeof head - 1, subtask, &kept);
    return block;
}

/* ALFWorld's reset observation is the banner, the room description and the task line, separated by
 * blank lines; the released code keeps the non-empty lines that are neither the banner nor the task
 * and joins them with spaces: the room description that lists the receptacles. */
static char *alfworld_room(const char *first_obs, const char *subtask, m2_prompt_commands commands) {
    (void)subtask;
    (void)commands;
    size_t cap = strlen(first_obs) + 1, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = first_obs; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *a = p, *z = p + n;
        while (a < z && isspace((unsigned char)*a)) a++;
        while (z > a && isspace((unsigned char)z[-1])) z--;
        if (z > a) {
            size_t at = len ? len + 1 : 0;   /* the line goes here (after a space) unless dropped */
            if (len) out[len] = ' ';
            memcpy(out + at, a, (size_t)(z - a));
            out[at + (size_t)(z - a)] = 0;
            int banner = strstr(out + at, "Welcome to TextWorld") != NULL;
            int task = (size_t)(z - a) >= 15 && !strncasecmp(out + at, "your task is to", 15);
            if (!banner && !task) len = at + (size_t)(z - a);
        }
        p = e ? e + 1 : p + n;
    }
    out[len] = 0;
    if (!len) { free(out); return NULL; }
    return out;
}

typedef enum info_place {
    INFO_IN_PROMPT,      /* after the sub-goal, on its own lines */
    INFO_BEFORE_OBS      /* in front of the sub-goal's first observation */
} info_place;

/* One row per environment that has task information: where it comes from and where it goes. */
static const struct task_info_rule {
    const char *env;
    char *(*extract)(const char *first_obs, const char *subtask, m2_prompt_commands commands);
    info_place place;
} task_info_rules[] = {
    {.env = "textcraft", .extract = textcraft_commands, .place = INFO_IN_PROMPT},
    {.env = "alfworld", .extract = alfworld_room, .place = INFO_BEFORE_OBS},
};

static const struct task_info_rule *task_info_rule_of(const char *env_name) {
    for (size_t i = 0; env_name && i < sizeof task_info_rules / sizeof task_info_rules[0]; i++)
        if (!strcmp(task_info_rules[i].env, env_name)) return &task_info_rules[i];
    return NULL;
}

char *m2_prompt_task_info(const char *env_name, const char *first_obs, const char *subtask, m2_prompt_commands commands) {
    const struct task_info_rule *r = task_info_rule_of(env_name);
    return r && first_obs ? r->extract(first_obs, subtask, commands) : NULL;
}

int m2_prompt_low_start(const m2_low_episode *e, const char *subtask, const char *obs0, char **prompt,
                        char **state0) {
    *prompt = *state0 = NULL;
    const struct task_info_rule *r = e->parts.task_info ? task_info_rule_of(e->env_name) : NULL;
    /* already in view (the first sub-goal) when obs0 holds what the first observation gives */
    char *whole = r && e->first_obs ? r->extract(e->first_obs, NULL, M2_PROMPT_COMMANDS_ALL) : NULL;
    int in_view = whole && strstr(obs0, whole);
    free(whole);
    char *info = r && e->first_obs && !in_view ? r->extract(e->first_obs, subtask, e->parts.commands) : NULL;
    char *p = e->instruction ? concat3(e->instruction, " Subtask: ", subtask) : m2_prompt_low_context(subtask, 1);
    char *s = NULL;
    if (p && info && r->place == INFO_IN_PROMPT) {
        char *q = concat3(p, "\n", info), *q2 = q ? concat3(q, "\n", "") : NULL;
        free(q);
        free(p);
        p = q2;
    }
    if (info && r->place == INFO_BEFORE_OBS) {
        char *q = concat3(info, " ", obs0);
        s = q ? m2_prompt_low_obs(q) : NULL;
        free(q);
    } else {
        s = m2_prompt_low_obs(obs0);
    }
    free(info);
    if (!p || !s) { free(p); free(s); return -1; }
    *prompt = p;
    *state0 = s;
    return 0;
}
