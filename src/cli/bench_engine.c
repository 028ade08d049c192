/* Placeholder: 'bench engine' lands with its issue. */
#include <stdio.h>
#include "cli/cli.h"

int bench_engine_main(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "multi2 bench engine: not implemented in this build yet\n");
    return 1;
}
