#include "core/build_info.h"

/* Set for this one file by CMakeLists.txt at configure time, so a new commit recompiles it alone;
 * a build that does not set them (the fuzz targets) says "unknown". */
#ifndef M2_BUILD_VERSION
#define M2_BUILD_VERSION "unknown"
#endif
#ifndef M2_BUILD_COMMIT
#define M2_BUILD_COMMIT "unknown"
#endif

const char *m2_build_version(void) { return M2_BUILD_VERSION; }
const char *m2_build_commit(void) { return M2_BUILD_COMMIT; }
const char *m2_build_id(void) { return "multi2 " M2_BUILD_VERSION " (commit " M2_BUILD_COMMIT ")"; }
