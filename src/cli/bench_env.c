/* Placeholder: 'bench env' lands with its issue. */
#include <stdio.h>
#include "cli/cli.h"

int bench_env_main(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "multi2 bench env: not implemented in this build yet\n");
    return 1;
}
