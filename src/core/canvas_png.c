/* PNG output of core/canvas.h. Without libpng in this build it reports so. */
#include "core/canvas.h"

int m2_canvas_png_supported(void) { return 0; }

int m2_canvas_png_write(const m2_canvas *c, const char *path, m2_err *err) {
    (void)c;
    return m2_errorf(err, M2_EUNSUPPORTED, "%s: PNG output is not built in; write .svg", path);
}
