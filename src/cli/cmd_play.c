/* multi2 play: play any registered environment by hand; reads one action per line from stdin
 * (a terminal or a pipe) and prints the observations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/env_opts.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 play --env NAME [--data PATH] [--split train|id|ood] [--index I] [--seed N] [--task T]\n"
        "                   [--vary V]\n\n"
        "Plays one episode by hand: type an action per line (stdin may be a pipe). --index is below the\n"
        "split's episode count (multi2 tasks lists the episodes).\n"
        "Commands besides game actions:\n"
        "  help         this help\n"
        "  admissible   list the admissible actions now\n"
        "  hint         show the expert oracle's next action\n"
        "  quit         stop\n"
        "  !TEXT        send TEXT to the game verbatim (e.g. !help for a game's own help command)\n"
        "--vary V (V > 0) plays in a procedurally varied world drawn from V (TextCraft: every item renamed;\n"
        "the same tasks and rules), the worlds the pre-training corpus plays in (pretrain.corpus_worlds).\n");
}

static void print_first_line_task(const char *task, const char *obs) {
    size_t n = strcspn(task, "\n");
    if (!n) return;
    char *line = strndup(task, n);
    if (line && !strstr(obs, line)) printf("Task: %s\n\n", line);
    free(line);
}

int cmd_play(int argc, char **argv) {
    env_opts o;
    int rc = env_opts_parse(&o, argc, argv, "play", "env data split index seed task vary");
    if (rc) return rc;
    if (o.help) { usage(stdout); return 0; }
    if (!o.env) { fprintf(stderr, "multi2 play: --env is required\n"); usage(stderr); return 2; }
    m2_env *env = env_opts_create(&o, "play");
    if (!env) return 1;
    const m2_env_class *c = env->cls;
    m2_err err = {0};
    /* an index past the split would wrap round to another episode (TextCraft) without a word */
    int avail = c->num_episodes(env, o.task, o.split, &err);
    if (avail < 0) { fprintf(stderr, "multi2 play: %s\n", err.msg); m2_env_destroy(env); return 1; }
    if (o.index >= avail) {
        fprintf(stderr, "multi2 play: --index %d, but split %s of %s%s%s has %d episode%s (indices 0..%d)\n", o.index,
                m2_split_name(o.split), c->name, o.task ? " task " : "", o.task ? o.task : "", avail, avail == 1 ? "" : "s",
                avail - 1);
        m2_env_destroy(env);
        return 2;
    }
    m2_step_result r;
    if (c->reset(env, o.task, o.split, o.index, o.seed, &r, &err)) {
        fprintf(stderr, "multi2 play: %s\n", err.msg);
        m2_env_destroy(env);
        return 1;
    }
    int tty = isatty(STDIN_FILENO);
    printf("[%s | split %s | index %d | seed %llu] type 'help' for commands\n\n", c->name, m2_split_name(o.split),
           o.index, (unsigned long long)o.seed);
    print_first_line_task(c->task_text(env), r.observation);
    printf("%s\n", r.observation);
    char *line = NULL;
    size_t cap = 0;
    int steps = 0;
    float ret = 0;
    for (;;) {
        if (tty) { printf("> "); fflush(stdout); }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!n) continue;
        if (!tty) printf("> %s\n", line);
        if (!strcmp(line, "quit") || !strcmp(line, "exit")) break;
        if (!strcmp(line, "help")) { usage(stdout); continue; }
        if (!strcmp(line, "admissible")) {
            const char *const *adm; int na = 0;
            if (!c->admissible || c->admissible(env, &adm, &na)) { printf("(no admissible list for this environment)\n"); continue; }
            for (int i = 0; i < na; i++) printf("  %s\n", adm[i]);
            continue;
        }
        if (!strcmp(line, "hint")) {
            char buf[4096];
            m2_err oerr = {0};
            if (!c->oracle_next || c->oracle_next(env, buf, sizeof buf, &oerr)) printf("(no hint: %s)\n", oerr.msg[0] ? oerr.msg : "no oracle");
            else printf("hint: %s\n", buf);
            continue;
        }
        const char *action = line[0] == '!' ? line + 1 : line;
        if (c->step(env, action, &r)) { fprintf(stderr, "multi2 play: step failed\n"); break; }
        steps++;
        ret += r.reward;
        printf("%s\n", r.observation);
        if (r.reward != 0) printf("(reward %g, score %g)\n", r.reward, r.score);
        if (r.done) {
            printf("\nEpisode over after %d steps: %s (score %g, return %g)\n", steps, r.won ? "won" : "lost", r.score, ret);
            break;
        }
    }
    if (!r.done) printf("\nStopped after %d steps (score %g, return %g)\n", steps, r.score, ret);
    free(line);
    m2_env_destroy(env);
    return 0;
}
