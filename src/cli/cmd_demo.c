/* multi2 demo: the whole pipeline on embedded defaults (DESIGN.md §8). Until the pipeline lands it
 * says so plainly and exits 0, so the README's first command stays runnable. */
#include <stdio.h>
#include "cli/cli.h"

int cmd_demo(int argc, char **argv) {
    (void)argc; (void)argv;
    printf("multi2 demo: the Multi2 pipeline is not finished yet (see README, 'Status').\n");
    return 0;
}
