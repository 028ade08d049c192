/* ALFWorld behind env.h.
 *
 * data_path:
 *   NULL                         the project's embedded tables and floor plans; scenes are generated
 *   a folder with constants.json ALFWorld's tables + layouts/; scenes are generated
 *   a .tw-pddl/.json file, or a folder holding game.tw-pddl files (searched recursively)
 *                                game-file mode: episodes are those games, in sorted path order; a game
 *                                whose path names valid_seen / valid_unseen belongs to id / ood, any
 *                                other to train; a folder without split names serves every split.
 * Generated episodes: train depends on (index, seed); id/ood are fixed sets like ALFWorld's
 * valid_seen/valid_unseen (the seed is ignored there). task = one of the 6 type names (or NULL = all
 * six in type order). */
#include "env/alfworld/alfworld.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/fsutil.h"

typedef struct aw_game {
    char *path;
    int split_mask;   /* bit per m2_split */
    int type;
} aw_game;

typedef struct aw_env {
    m2_env base;
    m2_aw_tables tables;
    int have_tables;
    aw_game *games;
    int n_games, cap_games;
    m2_aw_scene scene;
    int have_scene;
    m2_aw_state st;
    m2_aw_cmdlist adm;
    int adm_valid;
    int won;
    int oracle_mode;   /* M2_AW_ORACLE_SEARCH (default) or M2_AW_ORACLE_PLANNER */
    char obs[16384];
} aw_env;

static void free_games(aw_env *e) {
    for (int i = 0; i < e->n_games; i++) free(e->games[i].path);
    free(e->games);
    e->games = NULL;
    e->n_games = e->cap_games = 0;
}

static void drop_scene(aw_env *e) {
    if (!e->have_scene) return;
    m2_aw_state_free(&e->st);
    m2_aw_scene_free(&e->scene);
    e->have_scene = 0;
}

static void destroy(m2_env *env) {
    aw_env *e = (aw_env *)env;
    if (!e) return;
    drop_scene(e);
    m2_aw_cmdlist_free(&e->adm);
    if (e->have_tables) m2_aw_tables_free(&e->tables);
    free_games(e);
    free(e);
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int add_game(aw_env *e, const char *path, m2_err *err) {
    if (e->n_games == e->cap_games) {
        int nc = e->cap_games ? 2 * e->cap_games : 64;
        aw_game *g = realloc(e->games, (size_t)nc * sizeof *g);
        if (!g) return m2_errorf(err, M2_ENOMEM, "out of memory");
        e->games = g;
        e->cap_games = nc;
    }
    aw_game *g = &e->games[e->n_games];
    memset(g, 0, sizeof *g);
    g->path = strdup(path);
    if (!g->path) return m2_errorf(err, M2_ENOMEM, "out of memory");
    e->n_games++;
    return 0;
}

static int walk(aw_env *e, const char *dir, int depth, m2_err *err) {
    if (depth > 16) return 0;
    DIR *d = opendir(dir);
    if (!d) return m2_errorf(err, M2_EIO, "%s: cannot open folder", dir);
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) { rc = m2_errorf(err, M2_ENOMEM, "out of memory"); break; }
        snprintf(p, n, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0) {
            if (S_ISDIR(sb.st_mode)) rc = walk(e, p, depth + 1, err);
            else if (ends_with(de->d_name, ".tw-pddl")) rc = add_game(e, p, err);
        }
        free(p);
    }
    closedir(d);
    return rc;
}

static int cmp_game(const void *a, const void *b) { return strcmp(((const aw_game *)a)->path, ((const aw_game *)b)->path); }

static int open_games(aw_env *e, const char *path, int is_dir, m2_err *err) {
    if (is_dir) {
        if (walk(e, path, 0, err)) return -1;
        if (!e->n_games) return m2_errorf(err, M2_ENOTFOUND, "%s: no constants.json and no *.tw-pddl game files inside", path);
        qsort(e->games, (size_t)e->n_games, sizeof *e->games, cmp_game);
    } else if (add_game(e, path, err)) return -1;
    int any_split = 0;
    for (int i = 0; i < e->n_games; i++) any_split |= strstr(e->games[i].path, "valid_seen") || strstr(e->games[i].path, "valid_unseen");
    for (int i = 0; i < e->n_games; i++) {
        aw_game *g = &e->games[i];
        if (!any_split) g->split_mask = 7;
        else if (strstr(g->path, "valid_unseen")) g->split_mask = 1 << M2_SPLIT_OOD;
        else if (strstr(g->path, "valid_seen")) g->split_mask = 1 << M2_SPLIT_ID;
        else g->split_mask = 1 << M2_SPLIT_TRAIN;
        m2_aw_scene sc;
        if (m2_aw_load_twpddl(g->path, &sc, err)) return -1;
        g->type = sc.goal.type;
        m2_aw_scene_free(&sc);
    }
    return 0;
}

static int create(m2_env **out, const char *data_path, m2_err *err) {
    *out = NULL;
    aw_env *e = calloc(1, sizeof *e);
    if (!e) return m2_errorf(err, M2_ENOMEM, "out of memory");
    e->base.cls = &m2_aw_class;
    int rc;
    if (!data_path || !*data_path) {
        rc = m2_aw_tables_embedded(&e->tables, err);
        e->have_tables = rc == 0;
    } else {
        struct stat sb;
        if (stat(data_path, &sb) != 0) { free(e); return m2_errorf(err, M2_EIO, "%s: no such file or folder", data_path); }
        char cpath[4096];
        snprintf(cpath, sizeof cpath, "%s/constants.json", data_path);
        if (S_ISDIR(sb.st_mode) && m2_path_exists(cpath)) {
            rc = m2_aw_tables_load(&e->tables, data_path, err);
            e->have_tables = rc == 0;
        } else {
            rc = open_games(e, data_path, S_ISDIR(sb.st_mode), err);
        }
    }
    if (rc) { destroy(&e->base); return -1; }
    *out = &e->base;
    return 0;
}

static int num_task_families(const m2_env *env) { (void)env; return 6; }
static const char *task_family_name(const m2_env *env, int i) { (void)env; return m2_aw_task_type_name(i + 1); }

static int parse_task(const char *task, m2_err *err) {
    if (!task || !*task || !strcmp(task, "all")) return 0;
    int t = m2_aw_task_type_parse(task);
    if (t < 0) {
        m2_errorf(err, M2_ENOTFOUND,
                         "alfworld: unknown task '%s' (known: pick_and_place_simple, look_at_obj_in_light, "
                         "pick_clean_then_place_in_recep, pick_heat_then_place_in_recep, pick_cool_then_place_in_recep, "
                         "pick_two_obj_and_place; short: pick, look, clean, heat, cool, pick_two)", task);
        return -1;
    }
    return t;
}

/* game index of episode `index` of (type, split) in game-file mode; -1 if out of range */
static int game_at(const aw_env *e, int type, m2_split split, int index, int *count) {
    int n = 0, hit = -1;
    for (int i = 0; i < e->n_games; i++) {
        if (!(e->games[i].split_mask & (1 << split))) continue;
        if (type && e->games[i].type != type) continue;
        if (n == index) hit = i;
        n++;
    }
    if (count) *count = n;
    return hit;
}

static int num_episodes(m2_env *env, const char *task, m2_split split, m2_err *err) {
    aw_env *e = (aw_env *)env;
    int t = parse_task(task, err);
    if (t < 0) return -1;
    if ((int)split < 0 || split > 2) return m2_errorf(err, M2_EINVAL, "alfworld: bad split %d", (int)split);
    if (e->have_tables) return m2_aw_num_episodes(&e->tables, t, split);
    int n = 0;
    game_at(e, t, split, -1, &n);
    return n;
}

static int load_episode(aw_env *e, const char *task, m2_split split, int index, uint64_t seed, m2_aw_scene *sc, m2_err *err) {
    int t = parse_task(task, err);
    if (t < 0) return -1;
    if ((int)split < 0 || split > 2) return m2_errorf(err, M2_EINVAL, "alfworld: bad split %d", (int)split);
    if (e->have_tables) return m2_aw_generate(&e->tables, t, split, index, split == M2_SPLIT_TRAIN ? seed : 0, sc, err);
    int n = 0, g = game_at(e, t, split, index, &n);
    if (g < 0) return m2_errorf(err, M2_EINVAL, "alfworld: episode index %d out of range [0, %d) for %s/%s", index, n,
                                t ? m2_aw_task_type_name(t) : "all", m2_split_name(split));
    return m2_aw_load_twpddl(e->games[g].path, sc, err);
}

static void fill(aw_env *e, m2_step_result *r, float reward, int valid) {
    r->observation = e->obs;
    r->reward = reward;
    r->done = e->won;
    r->score = e->won ? 1.f : 0.f;
    r->won = e->won;
    r->valid = valid;
}

static int reset(m2_env *env, const char *task, m2_split split, int index, uint64_t seed, m2_step_result *first, m2_err *err) {
    aw_env *e = (aw_env *)env;
    m2_aw_scene sc;
    if (load_episode(e, task, split, index, seed, &sc, err)) return -1;
    drop_scene(e);
    e->scene = sc;
    if (m2_aw_state_init(&e->st, &e->scene, err)) { m2_aw_scene_free(&e->scene); return -1; }
    e->have_scene = 1;
    e->adm_valid = 0;
    e->won = m2_aw_won(&e->scene, &e->st);
    m2_aw_text_intro(&e->scene, &e->st, e->obs, sizeof e->obs);
    if (first) fill(e, first, 0.f, 1);
    return 0;
}

static const char *task_text(const m2_env *env) {
    const aw_env *e = (const aw_env *)env;
    return e->have_scene ? e->scene.task_text : "";
}

static int step(m2_env *env, const char *action, m2_step_result *res) {
    aw_env *e = (aw_env *)env;
    if (!e->have_scene) {
        snprintf(e->obs, sizeof e->obs, "Nothing happens.");
        fill(e, res, 0.f, 0);
        return 0;
    }
    m2_aw_cmd c;
    int valid = !m2_aw_parse(&e->scene, action, &c) && m2_aw_applicable(&e->scene, &e->st, &c);
    if (valid) m2_aw_apply(&e->scene, &e->st, &c, e->obs, sizeof e->obs);
    else snprintf(e->obs, sizeof e->obs, "Nothing happens.");
    e->adm_valid = 0;
    int was = e->won;
    e->won = m2_aw_won(&e->scene, &e->st);
    fill(e, res, (e->won && !was) ? 1.f : 0.f, valid);
    return 0;
}

static int admissible(m2_env *env, const char *const **actions, int *n) {
    aw_env *e = (aw_env *)env;
    *actions = NULL;
    *n = 0;
    if (!e->have_scene) return 0;
    if (!e->adm_valid) {
        if (m2_aw_admissible(&e->scene, &e->st, &e->adm)) return -1;
        e->adm_valid = 1;
    }
    *actions = e->adm.items;
    *n = e->adm.n;
    return 0;
}

static int oracle_next(m2_env *env, char *buf, size_t cap, m2_err *err) {
    aw_env *e = (aw_env *)env;
    if (!e->have_scene) return m2_errorf(err, M2_EINVAL, "alfworld: oracle called before reset");
    return m2_aw_oracle_mode(&e->scene, &e->st, e->oracle_mode, buf, cap, err);
}

int m2_aw_set_oracle(m2_env *env, const char *mode, m2_err *err) {
    if (!env || env->cls != &m2_aw_class) return m2_errorf(err, M2_EINVAL, "m2_aw_set_oracle: not an alfworld env");
    aw_env *e = (aw_env *)env;
    if (mode && !strcmp(mode, "search")) e->oracle_mode = M2_AW_ORACLE_SEARCH;
    else if (mode && !strcmp(mode, "planner")) e->oracle_mode = M2_AW_ORACLE_PLANNER;
    else return m2_errorf(err, M2_EINVAL, "alfworld: unknown oracle '%s' (known: search, planner)", mode ? mode : "(null)");
    return 0;
}

static int segment(const m2_env *env, const char *const *actions, const char *const *observations, int n_steps,
                   m2_subgoal *out, int cap) {
    const aw_env *e = (const aw_env *)env;
    if (!e->have_scene) return 0;
    return m2_aw_segment(&e->scene, actions, observations, n_steps, out, cap);
}

static int subgoal_next(m2_env *env, char *buf, size_t cap, m2_err *err) {
    aw_env *e = (aw_env *)env;
    if (!e->have_scene) return m2_errorf(err, M2_EINVAL, "alfworld: no episode (call reset first)");
    return m2_aw_subgoal_next(&e->scene, &e->st, e->oracle_mode, buf, cap, err);
}
static void subgoal_begin(m2_env *env, const char *subgoal) { (void)env; (void)subgoal; }   /* predicates read the state */
static int subgoal_done(m2_env *env, const char *subgoal) {
    aw_env *e = (aw_env *)env;
    return e->have_scene && m2_aw_subgoal_done(&e->scene, &e->st, subgoal);
}

static const char *const room_names[] = {"kitchen", "living room", "bedroom", "bathroom"};

static char *describe(m2_env *env, const char *task, m2_split split, int index, m2_err *err) {
    aw_env *e = (aw_env *)env;
    m2_aw_scene sc;
    if (load_episode(e, task, split, index, 0, &sc, err)) return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "env", "alfworld");
    cJSON_AddStringToObject(o, "split", m2_split_name(split));
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddStringToObject(o, "task_type", m2_aw_task_type_name(sc.goal.type) ? m2_aw_task_type_name(sc.goal.type) : "?");
    cJSON_AddStringToObject(o, "task", sc.task_text);
    cJSON_AddNumberToObject(o, "floor_plan", sc.plan);
    cJSON_AddStringToObject(o, "room", sc.room >= 0 && sc.room < 4 ? room_names[sc.room] : "?");
    cJSON_AddNumberToObject(o, "receptacles", sc.n_recep);
    cJSON_AddNumberToObject(o, "objects", sc.n_obj);
    cJSON_AddStringToObject(o, "source", sc.source);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    m2_aw_scene_free(&sc);
    if (!s) m2_errorf(err, M2_ENOMEM, "out of memory");
    return s;
}

const m2_env_class m2_aw_class = {
    .name = "alfworld",
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
};
