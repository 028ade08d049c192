/* libFuzzer target: TextCraft recipe loading and play. The input is split on 0x1e bytes into
 * recipe files (JSON text); the last part, when there are several and it does not start with '{',
 * is an action instead of a file. Every created env is reset on each split and on its first goals
 * in ADaPT's order (which reaches the worlds of goals on recipe cycles), sent the action, and
 * played by its oracle for a few steps. Seeds: fuzz/corpus/textcraft_recipe/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "env/env.h"
#include "env/textcraft/textcraft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    enum { MAXF = 16 };
    char *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = 0;
    const char *names[MAXF];
    const char *texts[MAXF];
    size_t lens[MAXF];
    static const char *const fname[MAXF] = {"a.json", "b.json", "c.json", "d.json", "e.json", "f.json", "g.json", "h.json",
                                            "i.json", "j.json", "k.json", "l.json", "m.json", "n.json", "o.json", "p.json"};
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n < MAXF; i++)
        if (i == size || copy[i] == 0x1e) {
            names[n] = fname[n];
            texts[n] = copy + start;
            lens[n] = i - start;
            n++;
            start = i + 1;
        }
    m2_err err = {0};
    m2_env *e = NULL;
    /* an action part is not a file: as a file it could only fail to parse and end the run */
    int has_action = n > 1 && (lens[n - 1] == 0 || texts[n - 1][0] != '{');
    int nf = n - has_action;
    if (!m2_tc_create_from_memory(&e, names, texts, lens, nf, &err)) {
        char action[256] = "";
        if (has_action) {
            size_t al = lens[n - 1] < sizeof action - 1 ? lens[n - 1] : sizeof action - 1;
            memcpy(action, texts[n - 1], al);
            action[al] = 0;
            for (size_t i = 0; i < al; i++) if (!action[i]) action[i] = ' ';
        }
        int n_all = e->cls->num_episodes(e, "all", M2_SPLIT_TRAIN, &err);
        for (int s = 0; s < 3 + (n_all < 8 ? n_all : 8); s++) {   /* three splits, then goals 0..7 */
            m2_step_result r;
            int rc = s < 3 ? e->cls->reset(e, NULL, (m2_split)s, 0, 0, &r, &err)
                           : e->cls->reset(e, "all", M2_SPLIT_TRAIN, s - 3, 0, &r, &err);
            if (rc) continue;
            if (has_action) e->cls->step(e, action, &r);
            char a[1024];
            for (int k = 0; k < 64 && !r.done; k++) {
                if (e->cls->oracle_next(e, a, sizeof a, &err)) break;
                e->cls->step(e, a, &r);
            }
            const char *const *adm;
            int na;
            e->cls->admissible(e, &adm, &na);
        }
        m2_env_destroy(e);
    }
    free(copy);
    return 0;
}
