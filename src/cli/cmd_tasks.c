/* multi2 tasks: list the episodes of an environment split (index, task text and, per environment,
 * details such as TextCraft's goal and command block). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/env_opts.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 tasks --env NAME [--split train|id|ood] [--data DIR] [--task T] [--vary V] [--json]\n\n"
               "Lists the episodes of a split: index and task (with --json: one JSON object with every\n"
               "episode's description, e.g. TextCraft's goal, depth and command block for seed 0).\n");
}

int cmd_tasks(int argc, char **argv) {
    env_opts o;
    int rc = env_opts_parse(&o, argc, argv, "tasks", "env data split task json vary");
    if (rc) return rc;
    if (o.help) { usage(stdout); return 0; }
    if (!o.env) { fprintf(stderr, "multi2 tasks: --env is required\n"); usage(stderr); return 2; }
    m2_env *env = env_opts_create(&o, "tasks");
    if (!env) return 1;
    const m2_env_class *c = env->cls;
    m2_err err = {0};
    int n = c->num_episodes(env, o.task, o.split, &err);
    if (n < 0) { fprintf(stderr, "multi2 tasks: %s\n", err.msg); m2_env_destroy(env); return 1; }
    cJSON *root = cJSON_CreateObject(), *arr = NULL;
    if (!root) { m2_env_destroy(env); return 1; }
    cJSON_AddStringToObject(root, "env", c->name);
    cJSON_AddStringToObject(root, "split", m2_split_name(o.split));
    if (o.task) cJSON_AddStringToObject(root, "task", o.task);
    cJSON_AddNumberToObject(root, "count", n);
    cJSON *fam = cJSON_AddArrayToObject(root, "families");
    for (int i = 0; fam && c->num_task_families && i < c->num_task_families(env); i++)
        cJSON_AddItemToArray(fam, cJSON_CreateString(c->task_family_name(env, i)));
    arr = cJSON_AddArrayToObject(root, "tasks");
    rc = 0;
    for (int i = 0; i < n; i++) {
        char *d = c->describe ? c->describe(env, o.task, o.split, i, &err) : NULL;
        if (!d) { fprintf(stderr, "multi2 tasks: episode %d: %s\n", i, err.msg[0] ? err.msg : "no description"); rc = 1; break; }
        cJSON *x = cJSON_Parse(d);
        free(d);
        if (!x) { rc = 1; break; }
        if (o.json) cJSON_AddItemToArray(arr, x);
        else {
            /* the first text field an env provides: task_text, goal, task */
            static const char *const keys[] = {"task_text", "goal", "task"};
            const char *s = "";
            for (int k = 0; k < 3 && !*s; k++) {
                const cJSON *tt = cJSON_GetObjectItemCaseSensitive(x, keys[k]);
                if (cJSON_IsString(tt)) s = tt->valuestring;
            }
            printf("%5d  %.*s\n", i, (int)strcspn(s, "\n"), s);
            cJSON_Delete(x);
        }
    }
    if (!rc && o.json) {
        char *s = cJSON_Print(root);
        if (s) { puts(s); free(s); }
    } else if (!rc) printf("%d episodes in %s/%s\n", n, c->name, m2_split_name(o.split));
    cJSON_Delete(root);
    m2_env_destroy(env);
    return rc;
}
