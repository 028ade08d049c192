/* Placeholder until the textcraft port lands: creating it reports that it is not built yet. */
#include "env/env.h"

static int create(m2_env **out, const char *data_path, m2_err *err) {
    (void)data_path;
    *out = 0;
    return m2_errorf(err, M2_EUNSUPPORTED, "environment 'textcraft' is not implemented in this build yet");
}

const m2_env_class m2_textcraft_class = { .name = "textcraft", .create = create };
