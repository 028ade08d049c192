/* Options shared by the environment commands (play, tasks, eval, data, bench env). */
#ifndef M2_CLI_ENV_OPTS_H
#define M2_CLI_ENV_OPTS_H
#include <stdint.h>
#include "env/env.h"

typedef struct env_opts {
    const char *env, *data, *task, *policy, *out, *variant, *run;
    const char *action_mode;   /* --action-mode (eval --run): System 2's action mode; NULL = the run's */
    m2_split split;
    int index, episodes, max_steps, json, help;
    uint64_t seed;
    int seed_set;     /* --seed was given */
    uint64_t vary;    /* --vary: a procedurally varied world (env.h vary; 0: the original) */
    float noise;
    double seconds;
} env_opts;

/* Parses argv[1..] into o (defaults set first). `allowed` lists the long options the command
 * accepts, e.g. "env data split index seed task json". Returns 0, or 2 after printing a usage
 * error naming the option. */
int env_opts_parse(env_opts *o, int argc, char **argv, const char *cmd, const char *allowed);
/* Creates o->env (required) with o->data, in the varied world o->vary when it is not 0; prints the
 * error and returns NULL on failure. */
m2_env *env_opts_create(const env_opts *o, const char *cmd);

#endif
