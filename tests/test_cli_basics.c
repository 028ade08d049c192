/* What a new user types first, through the binary ($M2_BIN): `multi2 --version` prints the version
 * and the commit the build was configured from (a real commit of this checkout; "unknown" for a
 * source tree without git, checked on cmake/git_commit.cmake itself); every command and bench
 * subcommand answers --help on stdout with exit 0; `multi2 bench` without a benchmark is a usage
 * error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "core/build_info.h"
#include "tmpdir.h"

/* Runs a shell command; returns its exit status (-1 if it did not exit), stdout in *out. */
static int run(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 14, n = 0, k;
    char *buf = malloc(cap);
    assert_non_null(buf);
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) { buf = realloc(buf, cap *= 2); assert_non_null(buf); }
    }
    buf[n] = 0;
    int st = pclose(p);
    if (out) *out = buf; else free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int is_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return n > 0;
}

static void version(void **state) {
    const char *bin = getenv("M2_BIN");
    if (!bin) skip();
    char cmd[1024], *o;
    snprintf(cmd, sizeof cmd, "%s --version", bin);
    assert_int_equal(run(cmd, &o), 0);
    /* the binary and this test were configured together: the same version and commit */
    const char *version = m2_build_version(), *commit = m2_build_commit();
    char want[256];
    snprintf(want, sizeof want, "multi2 %s (commit %s)", version, commit);
    assert_string_equal(m2_build_id(), want);
    strcat(want, "\n");
    assert_string_equal(o, want);
    free(o);
    /* X.Y.Z */
    int a, b, c, used = 0;
    assert_int_equal(sscanf(version, "%d.%d.%d%n", &a, &b, &c, &used), 3);
    assert_int_equal(used, (int)strlen(version));
    /* from a git checkout, the commit is 12 hex digits (+ "-dirty") naming a real commit here */
    char gitdir[1200];
    struct stat sb;
    snprintf(gitdir, sizeof gitdir, "%s/.git", M2_SOURCE_DIR);
    if (stat(gitdir, &sb) != 0) { assert_string_equal(commit, "unknown"); return; }
    size_t hn = strcspn(commit, "-");
    assert_int_equal(hn, 12);
    assert_true(is_hex(commit, hn));
    assert_true(commit[hn] == 0 || !strcmp(commit + hn, "-dirty"));
    snprintf(cmd, sizeof cmd, "git -C '%s' cat-file -e '%.12s^{commit}' 2>&1", M2_SOURCE_DIR, commit);
    assert_int_equal(run(cmd, NULL), 0);
}

/* A source tree without .git (a release tarball) reports "unknown": a bare folder, and one
 * unpacked inside some other git work tree that has a commit (which must not be reported). */
static void version_without_git(void **state) {
    char dir[64], sub[128], cmd[1024], *o;
    assert_int_equal(m2t_tmpdir(dir, sizeof dir, "ver"), 0);
    snprintf(cmd, sizeof cmd, "'%s' -DM2_DIR='%s' -P '%s/cmake/git_commit.cmake'", M2_CMAKE, dir, M2_SOURCE_DIR);
    assert_int_equal(run(cmd, &o), 0);
    assert_string_equal(o, "unknown\n");
    free(o);
    snprintf(cmd, sizeof cmd, "git -C '%s' init -q && git -C '%s' -c user.name=t -c user.email=t "
                              "commit -q --allow-empty -m outer 2>&1", dir, dir);
    if (run(cmd, NULL) == 0) {   /* git present */
        snprintf(sub, sizeof sub, "%s/multi2-0.1.0", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        snprintf(cmd, sizeof cmd, "'%s' -DM2_DIR='%s' -P '%s/cmake/git_commit.cmake'", M2_CMAKE, sub, M2_SOURCE_DIR);
        assert_int_equal(run(cmd, &o), 0);
        assert_string_equal(o, "unknown\n");
        free(o);
    }
    assert_int_equal(m2_remove_tree(dir), 0);
}

/* Every command listed by `multi2 --help` (and each bench / tokenizer subcommand) answers --help
 * with a usage text on stdout and exit 0. */
static void help_everywhere(void **state) {
    const char *bin = getenv("M2_BIN");
    if (!bin) skip();
    char cmd[1024], *o, *list;
    snprintf(cmd, sizeof cmd, "%s --help", bin);
    assert_int_equal(run(cmd, &list), 0);
    const char *p = strstr(list, "commands:\n");
    assert_non_null(p);
    p += strlen("commands:\n");
    int n = 0;
    while (!strncmp(p, "  ", 2)) {
        char name[32];
        assert_int_equal(sscanf(p, " %31s", name), 1);
        snprintf(cmd, sizeof cmd, "%s %s --help 2>/dev/null", bin, name);
        int st = run(cmd, &o);
        if (st != 0 || !strstr(o, "usage: multi2 ")) fail_msg("'multi2 %s --help' exit %d, stdout:\n%s", name, st, o);
        free(o);
        n++;
        p = strchr(p, '\n');
        assert_non_null(p);
        p++;
    }
    assert_true(n >= 11);   /* demo .. tokenizer */
    free(list);
    const char *subs[] = {"bench engine", "bench env", "tokenizer train", "tokenizer encode", "tokenizer decode"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --help 2>/dev/null", bin, subs[i]);
        int st = run(cmd, &o);
        if (st != 0 || !strstr(o, "usage: multi2 ")) fail_msg("'multi2 %s --help' exit %d, stdout:\n%s", subs[i], st, o);
        free(o);
    }
    /* without a benchmark, or with an unknown one: usage on stderr, exit 2 */
    snprintf(cmd, sizeof cmd, "%s bench 2>&1", bin);
    assert_int_equal(run(cmd, &o), 2);
    assert_non_null(strstr(o, "usage: multi2 bench"));
    free(o);
    snprintf(cmd, sizeof cmd, "%s bench gpu 2>&1", bin);
    assert_int_equal(run(cmd, &o), 2);
    assert_non_null(strstr(o, "unknown benchmark 'gpu'"));
    free(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version),
        cmocka_unit_test(version_without_git),
        cmocka_unit_test(help_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
