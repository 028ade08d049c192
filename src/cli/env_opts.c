#include "cli/env_opts.h"
#include "data/traj.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int allowed_opt(const char *allowed, const char *name) {
    size_t n = strlen(name);
    for (const char *p = allowed; (p = strstr(p, name)); p += n)
        if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int env_opts_parse(env_opts *o, int argc, char **argv, const char *cmd, const char *allowed) {
    memset(o, 0, sizeof *o);
    o->split = M2_SPLIT_TRAIN;
    o->max_steps = 50;
    o->episodes = -1;
    o->noise = M2_MEDIUM_NOISE_DEFAULT;
    o->seconds = 1.0;
    o->variant = "expert";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = 1; return 0; }
        if (strncmp(a, "--", 2)) { fprintf(stderr, "multi2 %s: unexpected argument '%s' (see --help)\n", cmd, a); return 2; }
        const char *name = a + 2;
        if (!allowed_opt(allowed, name)) { fprintf(stderr, "multi2 %s: unknown option '%s' (see --help)\n", cmd, a); return 2; }
        if (!strcmp(name, "json")) { o->json = 1; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "multi2 %s: option '%s' needs a value\n", cmd, a); return 2; }
        const char *v = argv[++i];
        long long x;
        double d;
        char *end;
        if (!strcmp(name, "env")) o->env = v;
        else if (!strcmp(name, "data")) o->data = v;
        else if (!strcmp(name, "task")) o->task = v;
        else if (!strcmp(name, "policy")) o->policy = v;
        else if (!strcmp(name, "out")) o->out = v;
        else if (!strcmp(name, "variant")) o->variant = v;
        else if (!strcmp(name, "run")) o->run = v;
        else if (!strcmp(name, "action-mode")) o->action_mode = v;
        else if (!strcmp(name, "split")) {
            int s = m2_split_parse(v);
            if (s < 0) { fprintf(stderr, "multi2 %s: --split '%s': use train, id (valid_seen/dev) or ood (valid_unseen/test)\n", cmd, v); return 2; }
            o->split = (m2_split)s;
        } else if (!strcmp(name, "index")) {
            if (parse_int(v, 0, 1000000000, &x)) { fprintf(stderr, "multi2 %s: --index '%s': expected an integer >= 0\n", cmd, v); return 2; }
            o->index = (int)x;
        } else if (!strcmp(name, "episodes")) {
            if (parse_int(v, 1, 100000000, &x)) { fprintf(stderr, "multi2 %s: --episodes '%s': expected an integer >= 1\n", cmd, v); return 2; }
            o->episodes = (int)x;
        } else if (!strcmp(name, "max-steps")) {
            if (parse_int(v, 1, 1000000, &x)) { fprintf(stderr, "multi2 %s: --max-steps '%s': expected an integer >= 1\n", cmd, v); return 2; }
            o->max_steps = (int)x;
        } else if (!strcmp(name, "seed")) {
            errno = 0;
            unsigned long long u = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') { fprintf(stderr, "multi2 %s: --seed '%s': expected an integer >= 0\n", cmd, v); return 2; }
            o->seed = u;
            o->seed_set = 1;
        } else if (!strcmp(name, "vary")) {
            errno = 0;
            unsigned long long u = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') { fprintf(stderr, "multi2 %s: --vary '%s': expected an integer >= 0\n", cmd, v); return 2; }
            o->vary = u;
        } else if (!strcmp(name, "noise")) {
            d = strtod(v, &end);
            if (end == v || *end || !(d >= 0 && d <= 1)) { fprintf(stderr, "multi2 %s: --noise '%s': expected a probability in [0,1]\n", cmd, v); return 2; }
            o->noise = (float)d;
        } else if (!strcmp(name, "seconds")) {
            d = strtod(v, &end);
            if (end == v || *end || !(d > 0 && d <= 3600)) { fprintf(stderr, "multi2 %s: --seconds '%s': expected a number in (0,3600]\n", cmd, v); return 2; }
            o->seconds = d;
        } else { fprintf(stderr, "multi2 %s: unknown option '%s'\n", cmd, a); return 2; }
    }
    return 0;
}

m2_env *env_opts_create(const env_opts *o, const char *cmd) {
    m2_err err = {0};
    m2_env *e = NULL;
    if (m2_env_create(o->env, o->data, &e, &err)) {
        fprintf(stderr, "multi2 %s: %s\n", cmd, err.msg);
        return NULL;
    }
    if (o->vary) {
        int rc = e->cls->vary ? e->cls->vary(e, o->vary, &err)
                              : m2_errorf(&err, M2_EUNSUPPORTED, "environment %s has no procedurally varied worlds", e->cls->name);
        if (rc) {
            fprintf(stderr, "multi2 %s: --vary %llu: %s\n", cmd, (unsigned long long)o->vary, err.msg);
            m2_env_destroy(e);
            return NULL;
        }
    }
    return e;
}
