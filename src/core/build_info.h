/* The build's identity: the project version and the source commit it was configured from, so a run
 * records which binary made each of its stages (pipe/stage.h: stages.json "made_by"). */
#ifndef M2_CORE_BUILD_INFO_H
#define M2_CORE_BUILD_INFO_H

/* "X.Y.Z", the project version of CMakeLists.txt ("unknown" in a build that does not set it). */
const char *m2_build_version(void);
/* The commit as 12 hex digits, with "-dirty" when tracked files differed from it at configure time;
 * "unknown" without git or outside a checkout (cmake/git_commit.cmake). */
const char *m2_build_commit(void);
/* "multi2 X.Y.Z (commit C)": what `multi2 --version` prints and a run records. */
const char *m2_build_id(void);

#endif
