/* multi2 bench env: environment steps per second on one thread, per environment and policy.
 * Each (env, policy) pair runs whole episodes (reset, policy, step; 50-step cap) for --seconds.
 * steps_per_s counts the whole loop; step_only_per_s only the time inside step(); time_reset_s,
 * time_policy_s and time_step_s split the loop's time. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/env_opts.h"
#include "core/rng.h"
#include "core/timer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 bench env [--env NAME] [--data PATH] [--split S] [--seconds 1.0] [--max-steps 50] [--json]\n\n"
               "Steps per second per environment and policy (oracle, random) on one thread; environments\n"
               "that cannot be created are reported as unavailable.\n");
}

static cJSON *bench_one(m2_env *env, const char *policy, const env_opts *o) {
    const m2_env_class *c = env->cls;
    m2_err err = {0};
    int n_ep = c->num_episodes(env, NULL, o->split, &err);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "env", c->name);
    cJSON_AddStringToObject(r, "policy", policy);
    if (n_ep <= 0) {
        cJSON_AddBoolToObject(r, "available", 0);
        cJSON_AddStringToObject(r, "error", n_ep < 0 ? err.msg : "no episodes in split");
        return r;
    }
    int random = !strcmp(policy, "random");
    m2_rng rng;
    m2_rng_seed(&rng, 1234);
    char act[8192];
    long steps = 0, episodes = 0, wins = 0;
    double step_time = 0, reset_time = 0, policy_time = 0, t0 = m2_now_s(), now = t0;
    const char *fail = NULL;
    while (now - t0 < o->seconds && !fail) {
        /* one episode between clock checks */
        m2_step_result res;
        double r0 = m2_now_s();
        if (c->reset(env, NULL, o->split, (int)(episodes % n_ep), o->seed, &res, &err)) { fail = err.msg; break; }
        reset_time += m2_now_s() - r0;
        episodes++;
        for (int s = 0; s < o->max_steps && !res.done; s++) {
            double p0 = m2_now_s();
            if (random) {
                const char *const *adm; int na = 0;
                if (!c->admissible || c->admissible(env, &adm, &na) || na <= 0) break;
                const char *a = adm[m2_rng_below(&rng, (uint32_t)na)];
                double a0 = m2_now_s();
                policy_time += a0 - p0;
                c->step(env, a, &res);
                step_time += m2_now_s() - a0;
            } else {
                if (!c->oracle_next || c->oracle_next(env, act, sizeof act, &err)) break;
                double a0 = m2_now_s();
                policy_time += a0 - p0;
                c->step(env, act, &res);
                step_time += m2_now_s() - a0;
            }
            steps++;
        }
        wins += res.won;
        now = m2_now_s();
    }
    double dt = now - t0;
    cJSON_AddBoolToObject(r, "available", fail == NULL);
    if (fail) { cJSON_AddStringToObject(r, "error", fail); return r; }
    cJSON_AddNumberToObject(r, "episodes", (double)episodes);
    cJSON_AddNumberToObject(r, "steps", (double)steps);
    cJSON_AddNumberToObject(r, "seconds", dt);
    cJSON_AddNumberToObject(r, "steps_per_s", dt > 0 ? steps / dt : 0);
    cJSON_AddNumberToObject(r, "step_only_per_s", step_time > 0 ? steps / step_time : 0);
    cJSON_AddNumberToObject(r, "success", episodes ? (double)wins / episodes : 0);
    /* where the loop's time goes: reset, policy (oracle / admissible list), step */
    cJSON_AddNumberToObject(r, "time_reset_s", reset_time);
    cJSON_AddNumberToObject(r, "time_policy_s", policy_time);
    cJSON_AddNumberToObject(r, "time_step_s", step_time);
    return r;
}

int bench_env_main(int argc, char **argv) {
    env_opts o;
    int rc = env_opts_parse(&o, argc, argv, "bench env", "env data split seed seconds max-steps json");
    if (rc) return rc;
    if (o.help) { usage(stdout); return 0; }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "bench", "env");
    cJSON_AddNumberToObject(root, "threads", 1);
    cJSON_AddNumberToObject(root, "max_steps", o.max_steps);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    static const char *const policies[] = {"oracle", "random"};
    for (int i = 0; i < m2_env_count(); i++) {
        const m2_env_class *c = m2_env_at(i);
        if (o.env && strcmp(o.env, c->name)) continue;
        m2_err err = {0};
        m2_env *env = NULL;
        if (m2_env_create(c->name, o.env ? o.data : NULL, &env, &err)) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "env", c->name);
            cJSON_AddBoolToObject(r, "available", 0);
            cJSON_AddStringToObject(r, "error", err.msg);
            cJSON_AddItemToArray(arr, r);
            if (!o.json) printf("%-13s unavailable: %s\n", c->name, err.msg);
            continue;
        }
        for (int p = 0; p < 2; p++) {
            cJSON *r = bench_one(env, policies[p], &o);
            if (!o.json) {
                const cJSON *sps = cJSON_GetObjectItemCaseSensitive(r, "steps_per_s");
                const cJSON *so = cJSON_GetObjectItemCaseSensitive(r, "step_only_per_s");
                const cJSON *er = cJSON_GetObjectItemCaseSensitive(r, "error");
                if (sps) printf("%-13s %-7s %12.0f steps/s (step() alone %12.0f/s)\n", c->name, policies[p], sps->valuedouble, so ? so->valuedouble : 0);
                else printf("%-13s %-7s unavailable: %s\n", c->name, policies[p], er ? er->valuestring : "?");
            }
            cJSON_AddItemToArray(arr, r);
        }
        m2_env_destroy(env);
    }
    if (o.env && !m2_env_find(o.env)) {
        m2_err err = {0};
        m2_env *e = NULL;
        m2_env_create(o.env, NULL, &e, &err);
        fprintf(stderr, "multi2 bench env: %s\n", err.msg);
        cJSON_Delete(root);
        return 1;
    }
    if (o.json) {
        char *s = cJSON_Print(root);
        if (s) { puts(s); free(s); }
    }
    cJSON_Delete(root);
    return 0;
}
