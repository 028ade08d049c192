/* multi2: one binary, one subcommand per file in src/cli/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kernels/matmul.h"
#include "cli/cli.h"
#include "core/build_info.h"

/* dist_fn: the command runs on the ranks of an MPI job (docs/dist.md); the others refuse several */
typedef struct { const char *name; m2_cmd_fn fn; const char *help; m2_cmd_dist_fn dist_fn; } command;

static const command commands[] = {
    {.name = "demo", .fn = cmd_demo, .help = "run the whole pipeline on the embedded defaults", .dist_fn = cmd_demo_dist},
    {.name = "train", .fn = cmd_train, .help = "run a training config (YAML) with key=value overrides", .dist_fn = cmd_train_dist},
    {.name = "eval", .fn = cmd_eval, .help = "evaluate a policy (oracle, random or a run) on an environment split", .dist_fn = cmd_eval_dist},
    {.name = "play", .fn = cmd_play, .help = "play an environment by hand in the terminal"},
    {.name = "tasks", .fn = cmd_tasks, .help = "list the tasks of an environment split"},
    {.name = "report", .fn = cmd_report, .help = "results over training seeds: mean and standard error of several folders"},
    {.name = "data", .fn = cmd_data, .help = "write expert / medium hierarchical trajectories as JSONL"},
    {.name = "bench", .fn = cmd_bench, .help = "benchmarks: bench engine | bench env"},
    {.name = "logits", .fn = cmd_logits, .help = "print a model's last-position logits for a prompt"},
    {.name = "generate", .fn = cmd_generate, .help = "generate a completion with a model"},
    {.name = "merge", .fn = cmd_merge, .help = "fold an adapter into a base model and write it"},
    {.name = "serve", .fn = cmd_serve, .help = "serve an environment over HTTP with AgentGym's protocol"},
    {.name = "tokenizer", .fn = cmd_tokenizer, .help = "tokenizer tools: tokenizer train | encode | decode"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nmulti2 <command> --help for the options of one command; multi2 --version for the build.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    /* OpenBLAS fell back to its generic kernels on a CPU it does not know: restart once with the
     * core type that fits (OPENBLAS_CORETYPE is read only when the library loads). If exec fails
     * we simply continue on the slow kernels. */
    m2_blas_restart_with_better_core(argv);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
    if (!strcmp(argv[1], "--version")) { printf("%s\n", m2_build_id()); return 0; }
    /* started by mpirun / srun: the ranks of one job (docs/dist.md); otherwise rank 0 of 1 */
    m2_dist dist;
    m2_err err = {0};
    if (m2_dist_init(&dist, &argc, &argv, &err)) { fprintf(stderr, "multi2: %s\n", err.msg); return 1; }
    if (!m2_dist_alone(&dist)) {
        int rc = 2;
        const command *c = NULL;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[1], commands[i].name)) c = &commands[i];
        if (c && c->dist_fn) {
            /* rank 0 alone prints; the others' errors still reach stderr */
            if (dist.rank != 0 && !freopen("/dev/null", "w", stdout)) rc = 1;
            else rc = c->dist_fn(argc - 1, argv + 1, &dist);
            /* an error on one rank ends every rank: the others may wait in a collective */
            if (rc == 1) {
                char why[96];
                snprintf(why, sizeof why, "multi2 %s failed (its message is above)", c->name);
                m2_dist_abort(&dist, why);
            }
        } else if (dist.rank == 0) {
            fprintf(stderr, "multi2 %s: runs in one process; under mpirun only `multi2 train`, `multi2 eval` and "
                    "`multi2 demo` run on several ranks (%d here)\n", argv[1], dist.world);
        }
        m2_dist_finalize(&dist);
        return rc;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].fn(argc - 1, argv + 1);
            m2_dist_finalize(&dist);   /* mpirun -np 1 started MPI */
            return rc;
        }
    m2_dist_finalize(&dist);
    fprintf(stderr, "multi2: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
