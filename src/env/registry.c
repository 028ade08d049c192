#include "env/env.h"
#include <stdio.h>
#include <string.h>

static const m2_env_class *const classes[] = {
    &m2_tc_class,
    &m2_aw_class,
    &m2_sw_class,
};

int m2_split_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "train")) return M2_SPLIT_TRAIN;
    if (!strcmp(s, "id") || !strcmp(s, "valid_seen") || !strcmp(s, "dev") || !strcmp(s, "seen")) return M2_SPLIT_ID;
    if (!strcmp(s, "ood") || !strcmp(s, "valid_unseen") || !strcmp(s, "test") || !strcmp(s, "unseen")) return M2_SPLIT_OOD;
    return -1;
}

const char *m2_split_name(m2_split s) {
    switch (s) {
    case M2_SPLIT_TRAIN: return "train";
    case M2_SPLIT_ID: return "id";
    case M2_SPLIT_OOD: return "ood";
    }
    return "?";
}

int m2_env_count(void) { return (int)(sizeof classes / sizeof classes[0]); }
const m2_env_class *m2_env_at(int i) { return (i >= 0 && i < m2_env_count()) ? classes[i] : NULL; }

const m2_env_class *m2_env_find(const char *name) {
    for (int i = 0; i < m2_env_count(); i++)
        if (name && !strcmp(classes[i]->name, name)) return classes[i];
    return NULL;
}

int m2_env_create(const char *name, const char *data_path, m2_env **out, m2_err *err) {
    *out = NULL;
    const m2_env_class *c = m2_env_find(name);
    if (!c) {
        char known[256] = "";
        for (int i = 0; i < m2_env_count(); i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, classes[i]->name, sizeof known - strlen(known) - 1);
        }
        return m2_errorf(err, M2_ENOTFOUND, "unknown environment '%s' (known: %s)", name ? name : "(null)", known);
    }
    return c->create(out, data_path, err);
}

void m2_env_destroy(m2_env *env) {
    if (env && env->cls) env->cls->destroy(env);
}

double m2_env_unit_score(const char *env_name, double score) {
    const m2_env_class *c = m2_env_find(env_name);
    if (!c || c->score_max <= 0) return score;
    return score > 0 ? score / c->score_max : 0.0;
}
