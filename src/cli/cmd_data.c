/* multi2 data: expert (or medium, noisy-expert) trajectories written as the hierarchical `high`
 * and `low` JSONL records of DESIGN.md §5 (docs/env-tools.md). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/env_opts.h"
#include "core/fsutil.h"
#include "data/data.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 data --env NAME --split train|id|ood --episodes N --out DIR\n"
               "                   [--variant expert|medium] [--noise P] [--seed S] [--max-steps 50] [--task T] [--data PATH] [--vary V] [--json]\n\n"
               "Writes DIR/high.jsonl (one record per episode) and DIR/low.jsonl (one per sub-goal) for the\n"
               "first N episodes of the split's episode order, which takes the task types in turn (ALFWorld\n"
               "task types, ScienceWorld tasks, TextCraft crafting depths; within a type in index order;\n"
               "N beyond the split's size wraps around). Every record names its task_type; System 2's\n"
               "contexts carry the task information (the defaults of config prompt.low.*: task_info\n"
               "true, commands relevant).\n"
               "expert: the oracle; episodes it cannot finish are skipped and counted.\n"
               "medium: each step, with probability P (default 0.3) the expert action is replaced by a\n"
               "random admissible action or by the expert action with a wrong number; the oracle then\n"
               "recovers from the new state. Every medium episode is written, finished or not.\n"
               "--vary V (V > 0): episodes of a procedurally varied world drawn from V (TextCraft: every item renamed).\n");
}

static FILE *open_tmp(const char *dir, const char *name, char *path, char *tmp, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    snprintf(tmp, cap, "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    return fopen(tmp, "w");
}

static int finish(FILE *f, const char *tmp, const char *path) {
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) { unlink(tmp); return -1; }
    return 0;
}

int cmd_data(int argc, char **argv) {
    env_opts o;
    int rc = env_opts_parse(&o, argc, argv, "data", "env data split task episodes seed max-steps out variant noise json vary");
    if (rc) return rc;
    if (o.help) { usage(stdout); return 0; }
    if (!o.env || !o.out || o.episodes < 1) {
        fprintf(stderr, "multi2 data: --env, --episodes and --out are required\n");
        usage(stderr);
        return 2;
    }
    int medium = !strcmp(o.variant, "medium");
    if (!medium && strcmp(o.variant, "expert")) { fprintf(stderr, "multi2 data: --variant '%s': use expert or medium\n", o.variant); return 2; }
    m2_err err = {0};
    if (m2_mkdir_p(o.out, &err)) { fprintf(stderr, "multi2 data: %s\n", err.msg); return 1; }
    m2_env *env = env_opts_create(&o, "data");
    if (!env) return 1;
    char hp[4096], ht[4096], lp[4096], lt[4096];
    FILE *hf = open_tmp(o.out, "high.jsonl", hp, ht, sizeof hp);
    FILE *lf = open_tmp(o.out, "low.jsonl", lp, lt, sizeof lp);
    if (!hf || !lf) {
        fprintf(stderr, "multi2 data: %s: cannot create files\n", o.out);
        if (hf) { fclose(hf); unlink(ht); }
        if (lf) { fclose(lf); unlink(lt); }
        m2_env_destroy(env);
        return 1;
    }
    m2_rollout_opts ro = {.policy = medium ? M2_POLICY_MEDIUM : M2_POLICY_ORACLE, .max_steps = o.max_steps,
                          .noise = o.noise, .policy_seed = o.seed, .hierarchical = 1,
                          .subgoal_budget = medium ? M2_SUBGOAL_BUDGET_DEFAULT : 0};
    int n_high = 0, n_low = 0, skipped = 0, wins = 0, steps = 0, noisy = 0, segs_ok = 0;
    m2_episode_order order;
    rc = m2_episode_order_build(env, o.task, o.split, &order, &err) ? 1 : 0;
    if (rc) fprintf(stderr, "multi2 data: %s\n", err.msg);
    for (int i = 0; i < o.episodes && !rc; i++) {
        const m2_episode_ref *r = m2_episode_order_at(&order, i);
        m2_env_traj t;
        if (m2_rollout(env, r->task, o.split, r->index, o.seed, &ro, &t, &err)) {
            fprintf(stderr, "multi2 data: episode %d: %s\n", i, err.msg);
            rc = 1;
        } else if (!medium && !t.won) {
            skipped++;
        } else {
            cJSON *h = NULL, *ls = NULL;
            m2_hier_opts ho = {.parts = M2_LOW_PARTS_DEFAULT, .task_type = r->type};
            if (m2_hier_records(env, &t, o.variant, &ho, &h, &ls, &err) || m2_hier_write_line(hf, h, hp, &err)) rc = 1;
            const cJSON *l;
            if (!rc) cJSON_ArrayForEach(l, ls) {
                if (m2_hier_write_line(lf, l, lp, &err)) { rc = 1; break; }
                n_low++;
            }
            if (rc) fprintf(stderr, "multi2 data: %s\n", err.msg);
            n_high++;
            wins += t.won;
            steps += t.n;
            noisy += t.noisy_steps;
            for (int g = 0; g < t.n_subgoals; g++) segs_ok += t.subgoals[g].success;
            cJSON_Delete(h);
            cJSON_Delete(ls);
        }
        m2_env_traj_free(&t);
    }
    m2_episode_order_free(&order);
    if (rc) { fclose(hf); fclose(lf); unlink(ht); unlink(lt); }
    else if (finish(hf, ht, hp) | finish(lf, lt, lp)) { fprintf(stderr, "multi2 data: %s: write failed\n", o.out); rc = 1; }
    if (!rc) {
        if (o.json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "env", env->cls->name);
            cJSON_AddStringToObject(j, "split", m2_split_name(o.split));
            cJSON_AddStringToObject(j, "variant", o.variant);
            cJSON_AddNumberToObject(j, "episodes", o.episodes);
            cJSON_AddNumberToObject(j, "written", n_high);
            cJSON_AddNumberToObject(j, "skipped", skipped);
            cJSON_AddNumberToObject(j, "success", n_high ? (double)wins / n_high : 0);
            cJSON_AddNumberToObject(j, "high_records", n_high);
            cJSON_AddNumberToObject(j, "low_records", n_low);
            cJSON_AddNumberToObject(j, "successful_segments", segs_ok);
            cJSON_AddNumberToObject(j, "steps", steps);
            cJSON_AddNumberToObject(j, "noisy_steps", noisy);
            cJSON_AddStringToObject(j, "out", o.out);
            char *js = cJSON_PrintUnformatted(j);
            if (js) { puts(js); free(js); }
            cJSON_Delete(j);
        }
        else
            printf("%s %s %s: %d episodes written (%d skipped), %d high and %d low records, success %.4f, successful "
                   "sub-goal segments %d/%d (%.1f %%) -> %s/{high,low}.jsonl\n",
                   env->cls->name, m2_split_name(o.split), o.variant, n_high, skipped, n_high, n_low,
                   n_high ? (double)wins / n_high : 0, segs_ok, n_low, n_low ? 100.0 * segs_ok / n_low : 0.0, o.out);
    }
    m2_env_destroy(env);
    return rc;
}
