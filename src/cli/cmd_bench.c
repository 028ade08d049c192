#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "engine")) return bench_engine_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "env")) return bench_env_main(argc - 1, argv + 1);
    fprintf(stderr, "usage: multi2 bench engine [--json] | multi2 bench env [--json]\n");
    return 2;
}
