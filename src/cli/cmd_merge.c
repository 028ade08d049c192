/* Placeholder: 'merge' lands with its issue; until then it says so and fails. */
#include <stdio.h>
#include "cli/cli.h"

int cmd_merge(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "multi2 merge: not implemented in this build yet\n");
    return 1;
}
