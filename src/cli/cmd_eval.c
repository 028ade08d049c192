/* multi2 eval: run a policy on an environment split and report success, mean score and per-episode
 * results. Policies: the expert oracle, uniform random over admissible actions, and the trained
 * policy of a run folder (--run DIR: its config and artifacts, greedy pass@1, pipe/pipe.h). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/env_opts.h"
#include "data/data.h"
#include "pipe/pipe.h"
#include "pipe/runfiles.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 eval --env NAME --policy oracle|random [--split train|id|ood] [--episodes N]\n"
               "                   [--seed S] [--max-steps 50] [--task T] [--data PATH] [--vary V] [--out FILE.jsonl] [--json]\n"
               "       multi2 eval --run RUN_DIR [--env NAME] [--split train|id|ood] [--episodes N] [--seed S]\n"
               "                   [--action-mode generate|score] [--vary V] [--out FILE.jsonl] [--json]\n\n"
               "Plays the first N episodes of the split's episode order (default: all; with --run: eval.episodes\n"
               "of the run; N may not exceed the split's episode count, see multi2 tasks), which takes the task\n"
               "types in turn (ALFWorld task types, ScienceWorld tasks, TextCraft crafting depths; within a type\n"
               "in index order), and prints success rate, mean score, per-episode results and a breakdown per\n"
               "task type; --out writes one JSON line per episode with\n"
               "its transcript. --run evaluates a trained run folder (multi2 train): its environment, its\n"
               "adapters (newest stage), greedy decoding, step limit eval.step_limit; episode i gets seed S + i\n"
               "(--seed S; default the run's eval.seed), so another S draws other episodes of the same tasks;\n"
               "--action-mode evaluates the run's adapters with System 2 generating its actions or choosing\n"
               "among the admissible ones by log-prob (default: the run's sys2.action_mode).\n"
               "--vary V (V > 0) plays in a procedurally varied world drawn from V (TextCraft: every item\n"
               "renamed, the same tasks): with --run, a test of whether the policy reads the task or recalls it.\n");
}

/* --episodes N must fit in the split: episode indices past its end would wrap (TextCraft) or
 * fail mid-way (ALFWorld, ScienceWorld). Returns 0, or 2 after saying the split's size. */
static int check_episodes(m2_env *env, const char *task, m2_split split, int episodes) {
    m2_err err = {0};
    int avail = env->cls->num_episodes(env, task, split, &err);
    if (avail < 0) { fprintf(stderr, "multi2 eval: %s\n", err.msg); return 1; }
    if (episodes <= avail) return 0;
    fprintf(stderr, "multi2 eval: --episodes %d, but split %s of %s%s%s has %d episode%s (use --episodes %d or fewer)\n",
            episodes, m2_split_name(split), env->cls->name, task ? " task " : "", task ? task : "", avail,
            avail == 1 ? "" : "s", avail);
    return 2;
}

/* {"<type>": {"episodes", "success", "score"}} of one split: the per-type breakdown of --json. */
static cJSON *types_json(const m2_eval_agg *agg, const char *split) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < agg->n; i++) {
        const m2_eval_cell *c = &agg->cells[i];
        if (strcmp(c->split, split) || !strcmp(c->task_type, "all")) continue;
        cJSON *t = cJSON_AddObjectToObject(o, c->task_type);
        cJSON_AddNumberToObject(t, "episodes", c->n);
        cJSON_AddNumberToObject(t, "success", c->n ? (double)c->success / c->n : 0);
        cJSON_AddNumberToObject(t, "score", c->n ? c->score / c->n : 0);
    }
    return o;
}

/* One line per task type (text output). */
static void print_types(const m2_eval_agg *agg, const char *split) {
    for (int i = 0; i < agg->n; i++) {
        const m2_eval_cell *c = &agg->cells[i];
        if (strcmp(c->split, split) || !strcmp(c->task_type, "all") || c->n == 0) continue;
        printf("  %-40s %4d episodes  success %.4f  mean score %.4f\n", c->task_type, c->n, (double)c->success / c->n,
               c->score / c->n);
    }
}

/* --run DIR of a TeamTR run: greedy test success of the chain, of each agent alone, best of them. */
static int eval_team(const env_opts *o, m2_dist *dist) {
    FILE *out = NULL;
    int writer = m2_dist_alone(dist) || dist->rank == 0;
    if (writer && o->out && !(out = fopen(o->out, "w"))) { fprintf(stderr, "multi2 eval: %s: cannot create\n", o->out); return 1; }
    m2_team_eval ev;
    m2_err err = {0};
    int rc = m2_pipe_eval_team_run_dist(o->run, o->episodes, out, &ev, dist, &err);
    if (out && fclose(out) && !rc) { fprintf(stderr, "multi2 eval: %s: write failed\n", o->out); return 1; }
    if (rc) { fprintf(stderr, "multi2 eval: %s\n", err.msg); return 1; }
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "run", o->run);
        cJSON_AddStringToObject(root, "method", "teamtr");
        cJSON_AddNumberToObject(root, "questions", ev.questions);
        cJSON_AddNumberToObject(root, "chain", ev.chain);
        cJSON_AddNumberToObject(root, "best_of", ev.best_of);
        cJSON *a = cJSON_AddArrayToObject(root, "alone");
        for (int k = 0; k < ev.n_agents; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ev.alone[k]));
        char *s = cJSON_Print(root);
        if (s) { puts(s); free(s); }
        cJSON_Delete(root);
    } else {
        printf("%s (teamtr, %d agents): test success over %d questions (greedy): chain %.4f, best of agents alone %.4f, alone",
               o->run, ev.n_agents, ev.questions, ev.chain, ev.best_of);
        for (int k = 0; k < ev.n_agents; k++) printf(" %.4f", ev.alone[k]);
        printf("\n");
    }
    return 0;
}

/* --run DIR: the trained policy of a run folder; under MPI its episodes split across the ranks. */
static int eval_run(const env_opts *o, m2_dist *dist) {
    int rc;
    if (m2_run_records_only(o->run)) {
        fprintf(stderr, "multi2 eval: %s holds a run's records alone (%s: kept without its weights), so it cannot "
                "play; its evaluation records are in %s/eval/\n", o->run, M2_RECORDS_ONLY_FILE, o->run);
        return 1;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/config.yaml", o->run);
    m2_run_config *cfg = malloc(sizeof *cfg);
    m2_err err = {0};
    if (!cfg || m2_run_config_load(cfg, path, 0, NULL, &err)) {
        fprintf(stderr, "multi2 eval: %s\n", cfg ? err.msg : "out of memory");
        free(cfg);
        return 1;
    }
    if (m2_method_of(cfg)->team) {   /* a TeamTR run: its team on the test questions of its task family */
        free(cfg);
        return eval_team(o, dist);
    }
    if (o->env && strcmp(o->env, cfg->env_name)) {
        fprintf(stderr, "multi2 eval: --env %s, but %s was trained on %s\n", o->env, o->run, cfg->env_name);
        free(cfg);
        return 2;
    }
    if (o->policy) fprintf(stderr, "multi2 eval: --policy is ignored with --run (the run's trained policy is used)\n");
    int mode = -1;
    if (o->action_mode) {
        for (int i = 0; i < M2_N_ACTION_MODES; i++)
            if (!strcmp(m2_action_mode_names[i], o->action_mode)) mode = i;
        if (mode < 0) {
            fprintf(stderr, "multi2 eval: --action-mode '%s': expected %s\n", o->action_mode, M2_CHOICES(M2_ACTION_MODE_LIST));
            free(cfg);
            return 2;
        }
    }
    if (o->episodes > 0) {   /* checked here, not after a model load and the first episodes */
        m2_env *env = NULL;
        if (m2_env_create(cfg->env_name, cfg->env_data[0] ? cfg->env_data : NULL, &env, &err)) {
            fprintf(stderr, "multi2 eval: %s\n", err.msg);
            free(cfg);
            return 1;
        }
        rc = check_episodes(env, cfg->env_task[0] ? cfg->env_task : NULL, o->split, o->episodes);
        m2_env_destroy(env);
        if (rc) { free(cfg); return rc; }
    }
    FILE *out = NULL;
    int writer = m2_dist_alone(dist) || dist->rank == 0;
    if (writer && o->out && !(out = fopen(o->out, "w"))) { fprintf(stderr, "multi2 eval: %s: cannot create\n", o->out); free(cfg); return 1; }
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    const char *split = m2_split_name(o->split);
    rc = m2_pipe_eval_run_dist(o->run, split, o->episodes, 0, o->seed_set ? (int64_t)o->seed : -1, mode, o->vary, out,
                               &agg, o->json || !writer ? NULL : stderr, dist, &err);
    if (out && fclose(out) && !rc) { fprintf(stderr, "multi2 eval: %s: write failed\n", o->out); rc = 1; }
    if (rc) fprintf(stderr, "multi2 eval: %s\n", err.msg);
    const m2_eval_cell *c = rc ? NULL : m2_eval_agg_find(&agg, split, "all");
    if (!rc && c) {
        double n = c->n ? c->n : 1, steps = c->steps > 0 ? c->steps : 1;
        double tok = (c->sys1_prompt + c->sys1_gen + c->sys2_prompt + c->sys2_gen) / n;
        if (o->json) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddStringToObject(root, "env", cfg->env_name);
            cJSON_AddStringToObject(root, "split", split);
            cJSON_AddStringToObject(root, "run", o->run);
            cJSON_AddStringToObject(root, "method", m2_method_names[cfg->method]);
            cJSON_AddNumberToObject(root, "episodes", c->n);
            cJSON_AddNumberToObject(root, "success", c->success / n);
            cJSON_AddNumberToObject(root, "mean_score", c->score / n);
            cJSON_AddNumberToObject(root, "mean_steps", c->steps / n);
            cJSON_AddNumberToObject(root, "tokens_per_episode", tok);
            cJSON_AddNumberToObject(root, "sys1_calls", c->sys1_calls / n);
            cJSON_AddNumberToObject(root, "invalid_rate", c->invalid / steps);
            char *aj = m2_eval_agg_to_json(&agg);
            cJSON *a = aj ? cJSON_Parse(aj) : NULL;
            free(aj);
            if (a) cJSON_AddItemToObject(root, "summary", a);
            cJSON_AddItemToObject(root, "task_types", types_json(&agg, split));
            char *s = cJSON_Print(root);
            if (s) { puts(s); free(s); }
            cJSON_Delete(root);
        } else {
            printf("%s %s %s (%s): success %.4f, mean score %.4f, mean steps %.2f, tokens/episode %.0f, invalid rate %.3f over %d episodes\n",
                   cfg->env_name, split, o->run, m2_method_names[cfg->method], c->success / n, c->score / n, c->steps / n, tok,
                   c->invalid / steps, c->n);
            print_types(&agg, split);
        }
    }
    m2_eval_agg_free(&agg);
    free(cfg);
    return rc ? 1 : 0;
}

/* --policy oracle|random: each episode as it arrives in episode order (pipe/pipe.h
 * m2_pipe_reference_episodes; under MPI from every rank): counted, its results entry kept, its line
 * printed and its record written by rank 0. */
typedef struct policy_rows {
    const env_opts *o;
    const char *env;
    m2_eval_agg *agg;
    cJSON *res;
    FILE *out;
    int writer, wins, total_steps, invalid;
    double score_sum;
} policy_rows;

static int policy_row(void *ud, int64_t i, const m2_episode *ep, const char *rec, m2_err *err) {
    policy_rows *p = ud;
    if (m2_eval_agg_add(p->agg, ep, err)) return -1;
    cJSON *r = cJSON_Parse(rec), *e = cJSON_CreateObject();
    if (!r || !e) { cJSON_Delete(r); cJSON_Delete(e); return m2_errorf(err, M2_ENOMEM, "episode %lld: out of memory", (long long)i); }
    const char *task = cJSON_GetStringValue(cJSON_GetObjectItem(r, "task"));
    int index = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "index"));
    size_t l = task ? strcspn(task, "\n") : 0;
    char *first = strndup(task ? task : "", l);
    cJSON_AddNumberToObject(e, "index", index);
    cJSON_AddStringToObject(e, "task_type", ep->task_type ? ep->task_type : "");
    cJSON_AddStringToObject(e, "task", first ? first : "");
    cJSON_AddBoolToObject(e, "success", ep->success);
    cJSON_AddNumberToObject(e, "score", ep->score);
    cJSON_AddNumberToObject(e, "return", cJSON_GetNumberValue(cJSON_GetObjectItem(r, "return")));
    cJSON_AddNumberToObject(e, "steps", ep->steps);
    cJSON_AddNumberToObject(e, "invalid_actions", ep->invalid);
    cJSON_AddItemToArray(p->res, e);
    cJSON_Delete(r);
    p->wins += ep->success != 0;
    p->score_sum += m2_env_unit_score(p->env, ep->score);   /* 0..1, as the run records and reports */
    p->total_steps += ep->steps;
    p->invalid += ep->invalid;
    if (p->writer && !p->o->json)
        printf("%5d  %-7s score %-5g steps %-3d %s\n", index, ep->success ? "success" : "fail", ep->score, ep->steps,
               first ? first : "");
    free(first);
    /* the records of a run's eval/<split>.jsonl (pipe/runfiles.h), the policy as the method */
    if (p->writer && p->out && fprintf(p->out, "%s\n", rec) < 0) return m2_errorf(err, M2_EIO, "%s: write failed", p->o->out);
    return 0;
}

int cmd_eval(int argc, char **argv) { return cmd_eval_dist(argc, argv, NULL); }

int cmd_eval_dist(int argc, char **argv, m2_dist *dist) {
    env_opts o;
    int rc = env_opts_parse(&o, argc, argv, "eval", "env data split task episodes seed max-steps policy run json out action-mode vary");
    if (rc) return rc;
    if (o.help) { usage(stdout); return 0; }
    if (o.run) return eval_run(&o, dist);
    if (!o.env) { fprintf(stderr, "multi2 eval: --env is required\n"); usage(stderr); return 2; }
    if (!o.policy) { fprintf(stderr, "multi2 eval: --policy is required (oracle or random)\n"); usage(stderr); return 2; }
    int pk = m2_policy_parse(o.policy);
    if (pk != M2_POLICY_ORACLE && pk != M2_POLICY_RANDOM) {
        fprintf(stderr, "multi2 eval: unknown policy '%s' (--policy takes oracle or random; a trained policy is "
                        "evaluated with --run RUN_DIR, the folder multi2 train wrote)\n", o.policy);
        return 2;
    }
    m2_env *env = env_opts_create(&o, "eval");
    if (!env) return 1;
    m2_err err = {0};
    if ((rc = check_episodes(env, o.task, o.split, o.episodes))) { m2_env_destroy(env); return rc; }
    int writer = m2_dist_alone(dist) || dist->rank == 0;
    FILE *out = NULL;
    if (writer && o.out && !(out = fopen(o.out, "w"))) {
        fprintf(stderr, "multi2 eval: %s: cannot create\n", o.out);
        m2_env_destroy(env);
        return 1;
    }
    m2_eval_agg agg;
    m2_eval_agg_init(&agg);
    m2_rollout_opts ro = {.policy = (m2_policy_kind)pk, .max_steps = o.max_steps, .policy_seed = o.seed};
    cJSON *root = cJSON_CreateObject();
    policy_rows j = {.o = &o, .env = env->cls->name, .agg = &agg, .res = cJSON_CreateArray(), .out = out, .writer = writer};
    rc = 0;
    /* the first N episodes of the split's order, every one with environment seed --seed */
    int n = m2_pipe_reference_episodes(env, o.task, o.split, o.episodes > 0 ? o.episodes : INT32_MAX, &ro, o.policy,
                                       o.seed, 1, dist, policy_row, &j, &err);
    if (n < 0) {
        fprintf(stderr, "multi2 eval: %s\n", err.msg);
        rc = 1;
    }
    if (out && fclose(out) && !rc) { fprintf(stderr, "multi2 eval: %s: write failed\n", o.out); rc = 1; }
    if (!rc) {
        cJSON_AddStringToObject(root, "env", env->cls->name);
        cJSON_AddStringToObject(root, "split", m2_split_name(o.split));
        if (o.task) cJSON_AddStringToObject(root, "task", o.task);
        cJSON_AddStringToObject(root, "policy", o.policy);
        cJSON_AddNumberToObject(root, "seed", (double)o.seed);
        cJSON_AddNumberToObject(root, "max_steps", o.max_steps);
        cJSON_AddNumberToObject(root, "episodes", n);
        cJSON_AddNumberToObject(root, "success", n ? (double)j.wins / n : 0);
        cJSON_AddNumberToObject(root, "mean_score", n ? j.score_sum / n : 0);
        cJSON_AddNumberToObject(root, "mean_steps", n ? (double)j.total_steps / n : 0);
        cJSON_AddNumberToObject(root, "invalid_rate", j.total_steps ? (double)j.invalid / j.total_steps : 0);
        cJSON_AddItemToObject(root, "task_types", types_json(&agg, m2_split_name(o.split)));
        cJSON_AddItemToObject(root, "results", j.res);
        j.res = NULL;
        if (o.json) {
            char *s = cJSON_Print(root);
            if (s) { puts(s); free(s); }
        } else {
            printf("%s %s %s: success %.4f, mean score %.4f, mean steps %.2f over %d episodes\n", env->cls->name,
                   m2_split_name(o.split), o.policy, n ? (double)j.wins / n : 0, n ? j.score_sum / n : 0,
                   n ? (double)j.total_steps / n : 0, n);
            print_types(&agg, m2_split_name(o.split));
        }
    }
    cJSON_Delete(j.res);
    cJSON_Delete(root);
    m2_eval_agg_free(&agg);
    m2_env_destroy(env);
    return rc;
}
