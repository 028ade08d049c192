/* TextCraft environment (ADaPT's rules): creation, reset (goal, command block with distractors),
 * the three actions with ADaPT's exact observation strings, and the m2_env_class glue. */
#include "env/textcraft/tc.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"

#define TC_DISTRACTORS 10   /* ADaPT: up to 10 uses sampled per input, then up to 10 distractors */

/* ---- creation ---- */

static int env_init(m2_tc_env *e, m2_err *err) {
    m2_tc_tree *t = &e->t;
    size_t nn = (size_t)t->n_names + 1, nr = (size_t)t->n_recipes + 1, nl = 1;
    for (int w = 0; w < e->worlds.n; w++)   /* line indices are per world: room for the longest list */
        if ((size_t)e->worlds.w[w].n_lines + 1 > nl) nl = (size_t)e->worlds.w[w].n_lines + 1;
    e->inv = calloc(nn, sizeof *e->inv);
    e->vinv = calloc(nn, sizeof *e->vinv);
    e->inv_has = calloc(nn, 1);
    e->line_listed = calloc(nl, 1);   /* per LINE: listed in this episode's block */
    e->line_mark = calloc(nl, 1);
    e->name_mark = calloc(nn, sizeof *e->name_mark);
    e->tree_cache = calloc(nn, sizeof *e->tree_cache);
    (void)nr;
    if (!e->inv || !e->vinv || !e->inv_has || !e->line_listed || !e->line_mark || !e->name_mark || !e->tree_cache)
        return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    if (m2_strbuf_reserve(&e->obs, 4096) || m2_strbuf_reserve(&e->task_text, 4096) || m2_strbuf_reserve(&e->act, 1024))
        return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    e->goal = -1;
    strcpy(e->task_name, "craft");
    return 0;
}

static void destroy(m2_env *env) {
    m2_tc_env *e = (m2_tc_env *)env;
    if (!e) return;
    if (e->tree_cache) for (int i = 0; i < e->t.n_names; i++) m2_tc_ivec_free(&e->tree_cache[i]);
    if (e->varied) tc_worlds_free(&e->worlds);
    tc_worlds_free(&e->base_worlds);   /* e->t is a copy of one of their trees */
    for (int i = 0; i < e->n_src; i++) { free((char *)e->src[i].name); free((char *)e->src[i].text); }
    free(e->src);
    free(e->inv); free(e->vinv); free(e->inv_has); free(e->line_listed); free(e->line_mark);
    free(e->name_mark); free(e->tree_cache); free(e->typed); free(e->used); free(e->adm);
    m2_tc_ivec_free(&e->adm_off); m2_tc_ivec_free(&e->tree_recipes); m2_tc_ivec_free(&e->block_lines);
    m2_tc_ivec_free(&e->inv_order); m2_tc_ivec_free(&e->cand); m2_tc_ivec_free(&e->vtouched);
    m2_strbuf_free(&e->obs); m2_strbuf_free(&e->task_text); m2_strbuf_free(&e->act); m2_strbuf_free(&e->adm_text);
    free(e);
}

extern const m2_env_class m2_tc_class;

static int create_from_src(m2_env **out, const m2_tc_src *src, int n, m2_err *err) {
    *out = NULL;
    m2_tc_env *e = calloc(1, sizeof *e);
    if (!e) return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    e->base.cls = &m2_tc_class;
    if (tc_worlds_build(&e->base_worlds, src, n, err)) { free(e); return -1; }
    e->worlds = e->base_worlds;
    e->t = e->worlds.w[0];
    if (env_init(e, err)) { destroy(&e->base); return -1; }
    /* the files are kept for varied worlds (vary) */
    e->src = calloc((size_t)n, sizeof *e->src);
    if (!e->src) { destroy(&e->base); return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory"); }
    for (; e->n_src < n; e->n_src++) {
        char *nm = strdup(src[e->n_src].name), *tx = malloc(src[e->n_src].len + 1);
        if (tx) { memcpy(tx, src[e->n_src].text, src[e->n_src].len); tx[src[e->n_src].len] = 0; }
        e->src[e->n_src] = (m2_tc_src){nm, tx, src[e->n_src].len};
        if (!nm || !tx) { e->n_src++; destroy(&e->base); return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory"); }
    }
    *out = &e->base;
    return 0;
}

int m2_tc_create_from_memory(m2_env **out, const char *const *names, const char *const *texts,
                                    const size_t *lens, int n, m2_err *err) {
    *out = NULL;
    if (n <= 0) return m2_errorf(err, M2_EFORMAT, "textcraft: no recipe files given");
    m2_tc_src *src = malloc((size_t)n * sizeof *src);
    if (!src) return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    for (int i = 0; i < n; i++) src[i] = (m2_tc_src){names[i], texts[i], lens ? lens[i] : strlen(texts[i])};
    int rc = create_from_src(out, src, n, err);
    free(src);
    return rc;
}

static int is_dir(const char *p) { struct stat st; return !stat(p, &st) && S_ISDIR(st.st_mode); }

static int has_json(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    int found = 0;
    while (!found && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        found = l > 5 && !strcmp(de->d_name + l - 5, ".json");
    }
    closedir(d);
    return found;
}

/* data_path: a folder of recipe JSON files, or one holding recipes/ (ADaPT's layout) or
 * data/minecraft/recipes/ (a datapack). Only *.json files directly inside are read. */
static int create_from_dir(m2_env **out, const char *path, m2_err *err) {
    char dir[4096];
    const char *cands[] = {"", "/recipes", "/data/minecraft/recipes"};
    int ok = 0;
    for (int i = 0; i < 3 && !ok; i++) {
        snprintf(dir, sizeof dir, "%s%s", path, cands[i]);
        ok = is_dir(dir) && has_json(dir);
    }
    if (!ok) {
        if (!is_dir(path)) return m2_errorf(err, M2_EIO, "%s: not a folder of recipe files", path);
        return m2_errorf(err, M2_EFORMAT, "%s: no recipe files (*.json) in it, in recipes/ or in data/minecraft/recipes/", path);
    }
    DIR *d = opendir(dir);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot open folder", dir);
    m2_tc_src *src = NULL;
    char **bufs = NULL;
    int n = 0, cap = 0, rc = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= 5 || strcmp(de->d_name + l - 5, ".json")) continue;
        char full[4096 + 256];
        snprintf(full, sizeof full, "%s/%s", dir, de->d_name);
        if (is_dir(full)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            m2_tc_src *s2 = realloc(src, (size_t)cap * sizeof *s2);
            char **b2 = s2 ? realloc(bufs, (size_t)cap * 2 * sizeof *b2) : NULL;
            if (s2) src = s2;
            if (!s2 || !b2) { m2_errorf(err, M2_ENOMEM, "%s: out of memory", dir); goto done; }
            bufs = b2;
        }
        char *text = NULL;
        size_t len = 0;
        if (m2_read_file(full, &text, &len, err)) goto done;
        bufs[2 * n] = text;
        bufs[2 * n + 1] = strdup(full);
        if (!bufs[2 * n + 1]) { free(text); m2_errorf(err, M2_ENOMEM, "%s: out of memory", dir); goto done; }
        src[n] = (m2_tc_src){bufs[2 * n + 1], text, len};
        n++;
    }
    rc = create_from_src(out, src, n, err);
done:
    closedir(d);
    for (int i = 0; i < 2 * n; i++) free(bufs[i]);
    free(bufs);
    free(src);
    return rc;
}

static int create(m2_env **out, const char *data_path, m2_err *err) {
    *out = NULL;
    if (data_path && *data_path) return create_from_dir(out, data_path, err);
    int n = m2_tc_embedded_count();
    m2_tc_src *src = malloc((size_t)n * sizeof *src);
    if (!src) return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    for (int i = 0; i < n; i++) {
        m2_tc_embedded_file(i, &src[i].name, &src[i].text);
        src[i].len = strlen(src[i].text);
    }
    int rc = create_from_src(out, src, n, err);
    free(src);
    return rc;
}

/* ---- tasks ---- */

static int num_task_families(const m2_env *env) { (void)env; return 1; }
static const char *task_family_name(const m2_env *env, int i) { (void)env; return i == 0 ? "craft" : NULL; }

/* task: NULL/"craft" = the split's goals; "all" = every goal in ADaPT's order (index = ADaPT seed);
 * otherwise a craftable item ("oak sign" or "minecraft:oak_sign") as the only goal. */
/* A name that can be a goal: craftable (depth known) in the world its episodes are played in. */
static int goal_item(const m2_tc_env *e, int nm) {
    if (nm < 0) return 0;
    const m2_tc_tree *w = &e->worlds.w[e->worlds.world_of[nm]];
    return w->names[nm].item_recipes.n && w->names[nm].depth < M2_TC_DEPTH_INF;
}

static int goal_list(m2_tc_env *e, const char *task, m2_split split, const int **list, int *n, int *single, m2_err *err) {
    const m2_tc_tree *t = &e->worlds.w[0];   /* the goal lists (not the current episode's world) */
    if ((int)split < 0 || (int)split > 2) return m2_errorf(err, M2_EINVAL, "textcraft: unknown split %d", (int)split);
    if (!task || !*task || !strcmp(task, "craft")) { *list = t->split_goals[split].a; *n = t->split_goals[split].n; return 0; }
    if (!strcmp(task, "all")) { *list = t->goals.a; *n = t->goals.n; return 0; }
    int nm = m2_tc_find(t, task, (int)strlen(task));
    if (!goal_item(e, nm)) nm = m2_tc_find_typed(t, task, (int)strlen(task));
    if (!goal_item(e, nm))
        return m2_errorf(err, M2_ENOTFOUND, "textcraft: unknown task '%s' (use 'craft', 'all' or a craftable item name)", task);
    *single = nm;
    *list = single;
    *n = 1;
    return 0;
}

static int num_episodes(m2_env *env, const char *task, m2_split split, m2_err *err) {
    const int *list = NULL; int n = 0, single = -1;
    if (goal_list((m2_tc_env *)env, task, split, &list, &n, &single, err)) return -1;
    return n;
}

/* traverse_recipe_tree: every recipe reachable from the goal (item recipes, or the tag's recipes
 * for a tag), depth-first in recipe order; each name expanded once. */
static int tree_walk(m2_tc_env *e, int name, m2_tc_ivec *out, int level) {
    m2_tc_tree *t = &e->t;
    if (e->name_mark[name] || level > 4096) return 0;
    e->name_mark[name] = 1;
    if (m2_tc_ivec_push(&e->vtouched, name)) return -1;
    const m2_tc_ivec *rs = t->names[name].item_recipes.n ? &t->names[name].item_recipes : &t->names[name].tag_recipes;
    for (int i = 0; i < rs->n; i++) {
        const m2_tc_recipe *rc = &t->recipes[rs->a[i]];
        if (m2_tc_ivec_push(out, rs->a[i])) return -1;
        for (int g = 0; g < rc->n_ing; g++)
            if (tree_walk(e, t->ings[rc->ing0 + g].name, out, level + 1)) return -1;
    }
    return 0;
}

static const m2_tc_ivec *goal_tree(m2_tc_env *e, int goal, m2_err *err) {
    m2_tc_ivec *c = &e->tree_cache[goal];
    if (c->n) return c;
    e->vtouched.n = 0;
    int rc = tree_walk(e, goal, c, 0);
    for (int i = 0; i < e->vtouched.n; i++) e->name_mark[e->vtouched.a[i]] = 0;
    e->vtouched.n = 0;
    if (rc) { m2_tc_ivec_free(c); m2_errorf(err, M2_ENOMEM, "textcraft: out of memory"); return NULL; }
    return c;
}

static int reset(m2_env *env, const char *task, m2_split split, int index, uint64_t seed, m2_step_result *first, m2_err *err) {
    m2_tc_env *e = (m2_tc_env *)env;
    m2_tc_tree *t = &e->t;
    const int *list = NULL; int n = 0, single = -1;
    if (goal_list(e, task, split, &list, &n, &single, err)) return -1;
    if (n <= 0) return m2_errorf(err, M2_ENOTFOUND, "textcraft: split '%s' has no goals of depth >= 2", m2_split_name(split));
    if (index < 0) return m2_errorf(err, M2_EINVAL, "textcraft: episode index %d is negative", index);
    int goal = list[index % n];
    e->t = e->worlds.w[e->worlds.world_of[goal]];   /* t points at e->t: now this goal's world */
    /* one RNG stream per (family, split, index): train and id share goal items, not blocks */
    uint64_t stream = single >= 0 ? (3ull << 40) ^ (uint64_t)goal
                    : (task && !strcmp(task, "all")) ? (4ull << 40) | (uint64_t)index
                    : ((uint64_t)split + 1) << 40 | (uint64_t)index;
    m2_rng rng;
    m2_rng_seed_stream(&rng, seed, stream);
    const m2_tc_ivec *tree = goal_tree(e, goal, err);
    if (!tree) return -1;

    /* clear the previous episode */
    for (int i = 0; i < e->block_lines.n; i++) e->line_listed[e->block_lines.a[i]] = 0;
    e->block_lines.n = 0;
    for (int i = 0; i < e->inv_order.n; i++) { e->inv[e->inv_order.a[i]] = 0; e->inv_has[e->inv_order.a[i]] = 0; }
    e->sg_item = -1;
    e->sg_base = 0;
    e->inv_order.n = 0;

    /* tree lines (deduplicated, first-seen order), then distractors: for each input of each tree
     * recipe up to 10 recipes using it, minus tree lines; then up to 10 of those */
    for (int i = 0; i < tree->n; i++) {
        int l = t->recipes[tree->a[i]].line;
        if (!e->line_mark[l]) { e->line_mark[l] = 1; if (m2_tc_ivec_push(&e->block_lines, l)) goto oom; }
    }
    int n_tree_lines = e->block_lines.n;
    e->cand.n = 0;
    for (int i = 0; i < tree->n; i++) {
        const m2_tc_recipe *rc = &t->recipes[tree->a[i]];
        for (int g = 0; g < rc->n_ing; g++) {
            const m2_tc_ivec *u = &t->names[t->ings[rc->ing0 + g].name].uses;
            int k = u->n < TC_DISTRACTORS ? u->n : TC_DISTRACTORS;
            int picked[TC_DISTRACTORS];
            for (int j = 0; j < k; j++) {
                int p;
                if (u->n <= TC_DISTRACTORS) p = j;
                else for (;;) {   /* k distinct of u->n by rejection (k <= 10) */
                    p = (int)m2_rng_below(&rng, (uint32_t)u->n);
                    int dup = 0;
                    for (int q = 0; q < j; q++) dup |= picked[q] == p;
                    if (!dup) break;
                }
                picked[j] = p;
                int l = t->recipes[u->a[p]].line;
                if (!e->line_mark[l]) { e->line_mark[l] = 2; if (m2_tc_ivec_push(&e->cand, l)) goto oom; }
            }
        }
    }
    int nd = e->cand.n < TC_DISTRACTORS ? e->cand.n : TC_DISTRACTORS;
    for (int j = 0; j < nd; j++) {   /* partial Fisher-Yates: nd distinct candidates */
        int r = j + (int)m2_rng_below(&rng, (uint32_t)(e->cand.n - j));
        int tmp = e->cand.a[j]; e->cand.a[j] = e->cand.a[r]; e->cand.a[r] = tmp;
        if (m2_tc_ivec_push(&e->block_lines, e->cand.a[j])) goto oom;
    }
    for (int i = 0; i < e->cand.n; i++) e->line_mark[e->cand.a[i]] = 0;
    for (int i = 0; i < n_tree_lines; i++) e->line_mark[e->block_lines.a[i]] = 0;
    m2_rng_shuffle_u32(&rng, (uint32_t *)e->block_lines.a, (uint32_t)e->block_lines.n);
    for (int i = 0; i < e->block_lines.n; i++) e->line_listed[e->block_lines.a[i]] = 1;
    e->tree_recipes.n = 0;
    for (int i = 0; i < tree->n; i++) if (m2_tc_ivec_push(&e->tree_recipes, tree->a[i])) goto oom;

    e->goal = goal;
    e->goal_depth = t->names[goal].depth;
    e->won = 0;
    e->split = split; e->index = index; e->seed = seed;
    snprintf(e->task_name, sizeof e->task_name, "%s", single >= 0 ? "item" : (task && !strcmp(task, "all")) ? "all" : "craft");

    /* "Crafting commands:\n" + lines + "\n\nGoal: craft " + goal + "." (ADaPT's reset text) */
    m2_strbuf *o = &e->obs;
    m2_strbuf_reset(o);
    m2_strbuf_puts(o, "Crafting commands:\n");
    for (int i = 0; i < e->block_lines.n; i++) {
        if (i) m2_strbuf_putc(o, '\n');
        m2_strbuf_append(o, t->lines[e->block_lines.a[i]], (size_t)t->line_len[e->block_lines.a[i]]);
    }
    m2_strbuf_puts(o, "\n\nGoal: craft ");
    m2_strbuf_puts(o, t->names[goal].disp);
    m2_strbuf_putc(o, '.');
    /* task text as Multi² builds it from the reset text: "craft X\n\nCrafting commands:\n..." */
    m2_strbuf_reset(&e->task_text);
    m2_strbuf_puts(&e->task_text, "craft ");
    m2_strbuf_puts(&e->task_text, t->names[goal].disp);
    m2_strbuf_puts(&e->task_text, "\n\n");
    m2_strbuf_append(&e->task_text, o->p, o->len - (size_t)t->names[goal].disp_len - 15);
    if (o->oom || e->task_text.oom) goto oom;
    if (first) *first = (m2_step_result){.observation = o->p, .valid = 1};
    return 0;
oom:
    return m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
}

static const char *task_text(const m2_env *env) {
    const m2_tc_env *e = (const m2_tc_env *)env;
    return e->goal >= 0 ? e->task_text.p : "";
}

static int step(m2_env *env, const char *action, m2_step_result *res) {
    return m2_tc_step((m2_tc_env *)env, action ? action : "", res);
}

static int admissible(m2_env *env, const char *const **actions, int *n) { return m2_tc_admissible((m2_tc_env *)env, actions, n); }

static int oracle_next(m2_env *env, char *buf, size_t cap, m2_err *err) { return m2_tc_oracle_next((m2_tc_env *)env, buf, cap, err); }

static int subgoal_next(m2_env *env, char *buf, size_t cap, m2_err *err) {
    return m2_tc_subgoal_next((m2_tc_env *)env, buf, cap, err);
}
static void subgoal_begin(m2_env *env, const char *subgoal) { m2_tc_subgoal_begin((m2_tc_env *)env, subgoal); }
static int subgoal_done(m2_env *env, const char *subgoal) { return m2_tc_subgoal_done((m2_tc_env *)env, subgoal); }

static int segment(const m2_env *env, const char *const *actions, const char *const *observations, int n_steps,
                   m2_subgoal *out, int cap) {
    return m2_tc_segment((const m2_tc_env *)env, actions, observations, n_steps, out, cap);
}

static char *describe(m2_env *env, const char *task, m2_split split, int index, m2_err *err) {
    m2_tc_env *e = (m2_tc_env *)env;
    m2_step_result first;
    if (reset(env, task, split, index, 0, &first, err)) return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON *cmds = cJSON_CreateArray();
    if (!o || !cmds) { cJSON_Delete(o); cJSON_Delete(cmds); m2_errorf(err, M2_ENOMEM, "textcraft: out of memory"); return NULL; }
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddStringToObject(o, "split", m2_split_name(split));
    cJSON_AddStringToObject(o, "task", e->task_name);
    cJSON_AddStringToObject(o, "goal", e->t.names[e->goal].disp);
    cJSON_AddStringToObject(o, "goal_id", e->t.names[e->goal].id);
    cJSON_AddNumberToObject(o, "depth", e->goal_depth);
    int w = e->worlds.world_of[e->goal];
    if (w) cJSON_AddStringToObject(o, "cycle_first_file", e->worlds.first_file[w]);   /* a cycle goal's world */
    cJSON_AddStringToObject(o, "task_text", e->task_text.p);
    cJSON_AddStringToObject(o, "observation", first.observation);
    for (int i = 0; i < e->block_lines.n; i++) cJSON_AddItemToArray(cmds, cJSON_CreateString(e->t.lines[e->block_lines.a[i]]));
    cJSON_AddItemToObject(o, "commands", cmds);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) m2_errorf(err, M2_ENOMEM, "textcraft: out of memory");
    return s;
}

static int vary(m2_env *env, uint64_t seed, m2_err *err) { return m2_tc_vary((m2_tc_env *)env, seed, err); }

/* ---- public extras ---- */

static const m2_tc_env *as_tc(const m2_env *env) { return env && env->cls == &m2_tc_class ? (const m2_tc_env *)env : NULL; }

int m2_tc_stats_get(const m2_env *env, m2_tc_stats *st) {
    const m2_tc_env *e = as_tc(env);
    if (!e) return -1;
    *st = e->worlds.w[0].stats;
    return 0;
}
const char *m2_tc_goal(const m2_env *env) { const m2_tc_env *e = as_tc(env); return e && e->goal >= 0 ? e->t.names[e->goal].disp : NULL; }
const char *m2_tc_goal_id(const m2_env *env) { const m2_tc_env *e = as_tc(env); return e && e->goal >= 0 ? e->t.names[e->goal].id : NULL; }
int m2_tc_goal_depth(const m2_env *env) { const m2_tc_env *e = as_tc(env); return e && e->goal >= 0 ? e->goal_depth : -1; }
int m2_tc_command_count(const m2_env *env) { const m2_tc_env *e = as_tc(env); return e ? e->block_lines.n : 0; }
const char *m2_tc_command(const m2_env *env, int i) {
    const m2_tc_env *e = as_tc(env);
    return e && i >= 0 && i < e->block_lines.n ? e->t.lines[e->block_lines.a[i]] : NULL;
}

const m2_env_class m2_tc_class = {
    .name = "textcraft",
    .score_max = 1,
    .create = create,
    .destroy = destroy,
    .num_task_families = num_task_families,
    .task_family_name = task_family_name,
    .num_episodes = num_episodes,
    .reset = reset,
    .task_text = task_text,
    .step = step,
    .admissible = admissible,
    .oracle_next = oracle_next,
    .segment = segment,
    .subgoal_next = subgoal_next,
    .subgoal_begin = subgoal_begin,
    .subgoal_done = subgoal_done,
    .describe = describe,
    .vary = vary,
};
