/* Placeholder: 'eval' lands with its issue; until then it says so and fails. */
#include <stdio.h>
#include "cli/cli.h"

int cmd_eval(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "multi2 eval: not implemented in this build yet\n");
    return 1;
}
