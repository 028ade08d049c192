#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: multi2 bench engine [options] | multi2 bench generate --model FILE [options] | multi2 bench env [options]\n\n"
               "  engine     the engine: a LoRA train step and KV-cache generation on fixed model shapes\n"
               "  generate   prompt and generation tokens/s and memory on a model file (as llama-bench)\n"
               "  env        environment steps per second (oracle and random policies)\n\n"
               "multi2 bench engine --help, multi2 bench generate --help, multi2 bench env --help for their options.\n");
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "engine")) return bench_engine_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "env")) return bench_env_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "generate")) return bench_generate_main(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) { usage(stdout); return 0; }
    if (argc >= 2) fprintf(stderr, "multi2 bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
