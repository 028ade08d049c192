/* ScienceWorld environment class (env.h vtable): task families, splits, reset/step, admissible
 * actions, oracle, segmenter and describe. See docs/scienceworld.md. */
#include "env/scienceworld/tasks.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SW_STEP_LIMIT 100   /* envStepLimit default of the Python API: episode ends after this many moves */

typedef struct sw_env {
    m2_env base;
    m2_sw_session s;
    int task, variation, loaded;
    m2_sw_params params;
    int last_score;         /* x100 */
    int steps;
    char last_action[256];     /* the step before: what non-navigation sub-goals are judged on */
    int last_valid;
    m2_strbuf adm;              /* admissible actions, '\n' separated, then split in place */
    const char **adm_list;
    int adm_n, adm_cap;
} sw_env;

static int create(m2_env **out, const char *data_path, m2_err *err) {
    (void)data_path;   /* worlds are code: there is no data file */
    *out = NULL;
    sw_env *e = calloc(1, sizeof *e);
    if (!e) return m2_errorf(err, M2_ENOMEM, "scienceworld: out of memory");
    e->s.refs = calloc(M2_SW_MAX_OBJ, sizeof *e->s.refs);
    if (!e->s.refs) { free(e); return m2_errorf(err, M2_ENOMEM, "scienceworld: out of memory"); }
    e->base.cls = &m2_sw_class;
    e->task = -1;
    *out = &e->base;
    return 0;
}

static void destroy(m2_env *env) {
    sw_env *e = (sw_env *)env;
    if (!e) return;
    m2_strbuf_free(&e->s.out);
    m2_strbuf_free(&e->adm);
    free(e->adm_list);
    free(e->s.refs);
    free(e);
}

static int num_task_families(const m2_env *env) { (void)env; return M2_SW_NUM_TASKS; }

static const char *task_family_name(const m2_env *env, int i) {
    (void)env;
    return (i >= 0 && i < M2_SW_NUM_TASKS) ? m2_sw_tasks[i].name : NULL;
}

static int split_count(int t, m2_split split) {
    int lo, hi;
    m2_sw_split_range(m2_sw_tasks[t].n_variations, split, &lo, &hi);
    return hi - lo;
}

/* Resolves a task name; -1 with err for unknown or not-yet-implemented tasks. */
static int resolve_task(const char *task, m2_err *err) {
    int t = m2_sw_task_find(task);
    if (t < 0) return m2_errorf(err, M2_ENOTFOUND, "scienceworld: unknown task '%s' (see `multi2 tasks --env scienceworld`)", task);
    if (!m2_sw_tasks[t].implemented)
        return m2_errorf(err, M2_EUNSUPPORTED, "scienceworld: task '%s' is not implemented yet", m2_sw_tasks[t].name);
    return t;
}

static int num_episodes(m2_env *env, const char *task, m2_split split, m2_err *err) {
    (void)env;
    if (split < M2_SPLIT_TRAIN || split > M2_SPLIT_OOD) return m2_errorf(err, M2_EINVAL, "scienceworld: bad split %d", (int)split);
    if (!task) {   /* every implemented task, in table order */
        int n = 0;
        for (int t = 0; t < M2_SW_NUM_TASKS; t++) if (m2_sw_tasks[t].implemented) n += split_count(t, split);
        return n;
    }
    int t = resolve_task(task, err);
    if (t < 0) return -1;
    return split_count(t, split);
}

/* (task, split, index) -> (task id, variation). task NULL: implemented tasks concatenated. */
static int locate(const char *task, m2_split split, int index, int *t_out, int *v_out, m2_err *err) {
    if (split < M2_SPLIT_TRAIN || split > M2_SPLIT_OOD) return m2_errorf(err, M2_EINVAL, "scienceworld: bad split %d", (int)split);
    int t = -1;
    if (task) {
        t = resolve_task(task, err);
        if (t < 0) return -1;
    } else {
        for (int i = 0; i < M2_SW_NUM_TASKS; i++) {
            if (!m2_sw_tasks[i].implemented) continue;
            int n = split_count(i, split);
            if (index < n) { t = i; break; }
            index -= n;
        }
        if (t < 0) return m2_errorf(err, M2_EINVAL, "scienceworld: episode index out of range for split %s", m2_split_name(split));
    }
    int lo, hi;
    m2_sw_split_range(m2_sw_tasks[t].n_variations, split, &lo, &hi);
    if (index < 0 || index >= hi - lo)
        return m2_errorf(err, M2_EINVAL, "scienceworld: episode index %d out of range (task %s, split %s has %d)", index,
                         m2_sw_tasks[t].name, m2_split_name(split), hi - lo);
    *t_out = t;
    *v_out = lo + index;
    return 0;
}

static int score100(const sw_env *e) {
    double s = m2_sw_goals_score(&e->s.w);
    return (int)nearbyint(s * 100.0);
}

/* Builds the world of (task, variation) into the session. */
static int load(sw_env *e, int t, int v) {
    m2_sw_session *s = &e->s;
    m2_sw_world *w = &s->w;
    memset(w, 0, sizeof *w);
    s->n_amb = 0;
    s->vis_valid = 0;
    w->focus = M2_SW_NONE;
    m2_sw_jrand r;
    m2_sw_jrand_seed(&r, v);
    w->universe = m2_sw_new(w, M2_SW_K_UNIVERSE, "universe", M2_SW_NONE);
    m2_sw_build_house(w, &r);
    /* agent in a random location (locations sorted by name) */
    int locs[16], nl = m2_sw_children(w, w->universe, locs, 16, 1);
    int start = locs[m2_sw_jrand_next_int(&r, nl)];
    w->agent = m2_sw_new(w, M2_SW_K_AGENT, "agent", start);
    w->inventory = m2_sw_new(w, M2_SW_K_INVENTORY, "inventory", w->agent);
    if (m2_sw_task_setup(t, v, w, s->task_desc, sizeof s->task_desc, &e->params) != 0) return -1;
    if (w->n >= M2_SW_MAX_OBJ) return -1;
    m2_sw_goals_tick(w);   /* records the starting location */
    e->task = t;
    e->variation = v;
    e->loaded = 1;
    e->steps = 0;
    e->last_score = score100(e);
    return 0;
}

static int reset(m2_env *env, const char *task, m2_split split, int index, uint64_t seed, m2_step_result *first, m2_err *err) {
    (void)seed;   /* a ScienceWorld variation is a fixed world: nothing left to randomise */
    sw_env *e = (sw_env *)env;
    int t, v;
    if (locate(task, split, index, &t, &v, err)) return -1;
    if (load(e, t, v)) return m2_errorf(err, M2_EINVAL, "scienceworld: cannot set up %s variation %d", m2_sw_tasks[t].name, v);
    m2_strbuf_reset(&e->s.out);
    m2_sw_look_around(&e->s.w, &e->s.out);
    if (e->s.out.oom) return m2_errorf(err, M2_ENOMEM, "scienceworld: out of memory");
    memset(first, 0, sizeof *first);
    first->observation = e->s.out.p;
    first->score = (float)e->last_score;
    first->valid = 1;
    return 0;
}

static const char *task_text(const m2_env *env) {
    const sw_env *e = (const sw_env *)env;
    return e->loaded ? e->s.task_desc : "";
}

static int step(m2_env *env, const char *action, m2_step_result *res) {
    sw_env *e = (sw_env *)env;
    memset(res, 0, sizeof *res);
    if (!e->loaded) {
        res->observation = "ERROR: Interface is not initialized -- call reset() before beginning.";
        res->done = 1;
        return 0;
    }
    int valid = 0;
    m2_sw_session_step(&e->s, action ? action : "", &valid);
    e->steps++;
    snprintf(e->last_action, sizeof e->last_action, "%s", action ? action : "");
    e->last_valid = valid;
    if (e->s.out.oom) {
        m2_strbuf_free(&e->s.out);
        res->observation = "ERROR: out of memory";
    } else if (!e->s.out.p || !e->s.out.p[0]) {
        /* what the Python API answers for an action that printed nothing */
        res->observation = "Unknown action. Type 'help' for a list of actions, and 'objects' for a list of possible object referents.";
    } else {
        res->observation = e->s.out.p;
    }
    int sc = score100(e);
    const m2_sw_goalseq *gs = &e->s.w.gs;
    res->score = (float)sc;
    res->reward = (float)(sc - e->last_score);
    e->last_score = sc;
    res->won = !gs->failed && gs->cur >= gs->n_ordered;
    res->done = res->won || gs->failed || e->s.w.moves >= SW_STEP_LIMIT;
    res->valid = valid;
    return 0;
}

static int admissible(m2_env *env, const char *const **out, int *n) {
    sw_env *e = (sw_env *)env;
    *out = NULL;
    *n = 0;
    if (!e->loaded) return 0;
    m2_strbuf_reset(&e->adm);
    m2_sw_admissible(&e->s, &e->adm);
    if (e->adm.oom || !e->adm.p) return -1;
    int count = 0;
    for (size_t i = 0; i < e->adm.len; i++) if (e->adm.p[i] == '\n') count++;
    if (count > e->adm_cap) {
        const char **l = realloc(e->adm_list, (size_t)count * sizeof *l);
        if (!l) return -1;
        e->adm_list = l;
        e->adm_cap = count;
    }
    char *p = e->adm.p;
    int k = 0;
    while (*p && k < count) {
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = 0;
        e->adm_list[k++] = p;
        p = nl + 1;
    }
    *out = e->adm_list;
    *n = k;
    return 0;
}

static int oracle_next(m2_env *env, char *buf, size_t cap, m2_err *err) {
    sw_env *e = (sw_env *)env;
    if (!e->loaded) return m2_errorf(err, M2_EINVAL, "scienceworld: oracle called before reset");
    if (m2_sw_oracle_next(&e->s, e->task, &e->params, buf, cap)) {
        if (cap) buf[0] = 0;
        return -1;
    }
    return 0;
}

/* Sub-goals: navigation is "go to <room>" (done once the agent is in it: its last action is the
 * "go to" the text names); every other sub-goal is one action (done once that action was the last
 * one and the simulator accepted it), as the segmenter below names them. */
static void room_of_nav(const char *a, char *out, size_t cap) {
    snprintf(out, cap, "go to %s", !strncmp(a, "go to ", 6) ? a + 6 : a + 13);
}
static int is_nav(const char *a);

static int subgoal_next(m2_env *env, char *buf, size_t cap, m2_err *err) {
    char a[512];
    if (oracle_next(env, a, sizeof a, err)) {
        if (err && !err->code) m2_errorf(err, M2_ENOTFOUND, "scienceworld: the oracle has no next action");
        return -1;
    }
    if (is_nav(a)) room_of_nav(a, buf, cap);
    else snprintf(buf, cap, "%s", a);
    return 0;
}

static void subgoal_begin(m2_env *env, const char *subgoal) {
    sw_env *e = (sw_env *)env;
    (void)subgoal;
    e->last_action[0] = 0;   /* an action sub-goal needs its action done within the sub-goal */
    e->last_valid = 0;
}

static int subgoal_done(m2_env *env, const char *subgoal) {
    sw_env *e = (sw_env *)env;
    if (!e->loaded || !subgoal) return 0;
    char t[256];
    snprintf(t, sizeof t, "%s", subgoal);
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '.' || t[n - 1] == '\n')) t[--n] = 0;
    if (!strncmp(t, "go to ", 6)) {
        const m2_sw_world *w = &e->s.w;
        return !strcmp(w->o[w->o[w->agent].parent].name, t + 6);
    }
    return e->last_valid && !strcmp(e->last_action, t);
}

/* Sub-goal segmenter (code rules): runs of navigation ("open door to X", "go to X") form one
 * sub-goal "go to <last room>"; free looks (look/inventory/task/wait) join the current sub-goal;
 * every other action is its own sub-goal named by the action. */
static int is_nav(const char *a) { return !strncmp(a, "go to ", 6) || !strncmp(a, "open door to ", 13); }
static int is_free(const char *a) {
    return !strcmp(a, "look around") || !strcmp(a, "inventory") || !strcmp(a, "task") || !strncmp(a, "wait", 4) ||
           !strncmp(a, "look at ", 8) || !strncmp(a, "look in ", 8);
}

static int segment(const m2_env *env, const char *const *acts, const char *const *obs, int n, m2_subgoal *out, int cap) {
    (void)env; (void)obs;
    int k = 0;
    for (int i = 0; i < n; i++) {
        const char *a = acts[i] ? acts[i] : "";
        if (is_free(a) && k > 0) { out[k - 1].last = i; continue; }
        if (is_nav(a) && k > 0 && !strncmp(out[k - 1].text, "go to ", 6)) {
            out[k - 1].last = i;
            const char *room = !strncmp(a, "go to ", 6) ? a + 6 : a + 13;
            snprintf(out[k - 1].text, sizeof out[0].text, "go to %s", room);
            continue;
        }
        if (k >= cap) break;
        if (is_nav(a)) snprintf(out[k].text, sizeof out[0].text, "go to %s", !strncmp(a, "go to ", 6) ? a + 6 : a + 13);
        else snprintf(out[k].text, sizeof out[0].text, "%s", a);
        out[k].first = out[k].last = i;
        k++;
    }
    return k;
}

static char *describe(m2_env *env, const char *task, m2_split split, int index, m2_err *err) {
    int t, v;
    if (locate(task, split, index, &t, &v, err)) return NULL;
    m2_sw_params p;
    m2_sw_variation_params(t, v, &p);
    /* the task text needs the world set up; use a scratch session */
    sw_env *tmp = NULL;
    m2_env *te = NULL;
    if (create(&te, NULL, err)) return NULL;
    tmp = (sw_env *)te;
    if (load(tmp, t, v)) { destroy(te); m2_errorf(err, M2_EINVAL, "scienceworld: cannot set up %s variation %d", m2_sw_tasks[t].name, v); return NULL; }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "env", "scienceworld");
    cJSON_AddStringToObject(o, "task", m2_sw_tasks[t].name);
    cJSON_AddStringToObject(o, "task_id", m2_sw_tasks[t].id);
    cJSON_AddStringToObject(o, "split", m2_split_name(split));
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddNumberToObject(o, "variation", v);
    cJSON_AddStringToObject(o, "goal", tmp->s.task_desc);
    cJSON_AddStringToObject(o, "start", tmp->s.w.o[tmp->s.w.o[tmp->s.w.agent].parent].name);
    char *js = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    destroy(te);
    if (!js) m2_errorf(err, M2_ENOMEM, "scienceworld: out of memory");
    return js;
}

/* ---- inspect: what the original's Python API shows of the current state ---- */

/* getPossibleObjects: one unique referent per visible, non-hidden object, sorted by (referent, id). */
typedef struct sw_ref { int obj; char r[M2_SW_REF_LEN]; } sw_ref;
static int ref_cmp(const void *a, const void *b) {
    const sw_ref *x = a, *y = b;
    int c = strcmp(x->r, y->r);
    return c ? c : x->obj - y->obj;
}

/* The visible, non-hidden objects with their unique referents, sorted; *n set. NULL when out of memory. */
static sw_ref *referenced_objects(sw_env *e, int *n) {
    int vis[M2_SW_MAX_OBJ];
    int nv = m2_sw_visible_objects(&e->s.w, vis, M2_SW_MAX_OBJ);
    sw_ref *refs = malloc((size_t)(nv ? nv : 1) * sizeof *refs);
    *n = 0;
    if (!refs) return NULL;
    for (int i = 0; i < nv; i++) {
        if (e->s.w.o[vis[i]].flags & M2_SW_F_HIDDEN) continue;   /* includeHidden = false */
        refs[*n].obj = vis[i];
        m2_sw_session_referent(&e->s, vis[i], refs[*n].r, sizeof refs[*n].r);
        if (refs[*n].r[0]) (*n)++;
    }
    qsort(refs, (size_t)*n, sizeof *refs, ref_cmp);
    return refs;
}

static int ref_by_obj(const void *a, const void *b) { return ((const sw_ref *)a)->obj - ((const sw_ref *)b)->obj; }

static cJSON *possible_objects(sw_env *e) {
    int n;
    sw_ref *refs = referenced_objects(e, &n);
    cJSON *a = refs ? cJSON_CreateArray() : NULL;
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(refs[i].r));
    free(refs);
    return a;
}

/* getPossibleActions (sorted template texts) and getPossibleActionsWithIDs ({action_example,
 * template_id} by id), from the parser's action table. */
static cJSON *possible_actions(int with_ids) {
    m2_sw_template t[M2_SW_MAX_TEMPLATES];
    int n = m2_sw_action_templates(t, M2_SW_MAX_TEMPLATES, with_ids);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *x = with_ids ? cJSON_CreateObject() : cJSON_CreateString(t[i].text);
        if (x && with_ids) {
            cJSON_AddStringToObject(x, "action_example", t[i].text);
            cJSON_AddNumberToObject(x, "template_id", t[i].id);
        }
        cJSON_AddItemToArray(a, x);
    }
    return a;
}

/* One filled template of getPossibleActionObjectCombinations: the template's "OBJ"s replaced in
 * order by the referents of objs. */
static cJSON *filled_template(const m2_sw_world *w, const m2_sw_template *t, const sw_ref *refs, const int *objs) {
    char text[sizeof t->text + 2 * M2_SW_REF_LEN];
    size_t len = 0;
    int k = 0;
    for (const char *p = t->text; *p && len + 1 < sizeof text;) {
        if (!strncmp(p, "OBJ", 3)) {
            len += (size_t)snprintf(text + len, sizeof text - len, "%s", refs[objs[k++]].r);
            p += 3;
        } else text[len++] = *p++;
    }
    text[len < sizeof text ? len : sizeof text - 1] = 0;
    cJSON *x = cJSON_CreateObject(), *ids = cJSON_CreateArray(), *types = cJSON_CreateArray();
    if (!x || !ids || !types) { cJSON_Delete(x); cJSON_Delete(ids); cJSON_Delete(types); return NULL; }
    cJSON_AddStringToObject(x, "action", text);
    cJSON_AddNumberToObject(x, "template_id", t->id);
    for (int i = 0; i < t->n_obj; i++) {
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(refs[objs[i]].obj));
        cJSON_AddItemToArray(types, cJSON_CreateNumber(w->o[refs[objs[i]].obj].kind));
    }
    cJSON_AddItemToObject(x, "obj_ids", ids);
    cJSON_AddItemToObject(x, "type_ids", types);
    return x;
}

/* getPossibleActionObjectCombinations: every template (by id) with every ordered choice of distinct
 * possible objects for its slots (the original's combinations, each in its permutations), and the
 * look-up table from object id to referent. Valid or not: the admissible list is the valid ones. */
static cJSON *action_object_combinations(sw_env *e) {
    int n;
    sw_ref *refs = referenced_objects(e, &n);
    m2_sw_template t[M2_SW_MAX_TEMPLATES];
    int nt = m2_sw_action_templates(t, M2_SW_MAX_TEMPLATES, 1);
    cJSON *o = refs ? cJSON_CreateObject() : NULL, *list = o ? cJSON_AddArrayToObject(o, "templates") : NULL;
    cJSON *lut = list ? cJSON_AddObjectToObject(o, "lookUpTable") : NULL;
    int ok = lut != NULL;
    for (int k = 0; ok && k < nt; k++) {
        int objs[2] = {0, 0};
        if (t[k].n_obj == 0) ok = cJSON_AddItemToArray(list, filled_template(&e->s.w, &t[k], refs, objs));
        for (int i = 0; ok && t[k].n_obj == 1 && i < n; i++) {
            objs[0] = i;
            ok = cJSON_AddItemToArray(list, filled_template(&e->s.w, &t[k], refs, objs));
        }
        for (int i = 0; t[k].n_obj == 2 && i < n; i++)
            for (int j = i + 1; ok && j < n; j++) {   /* the pair (i, j), then its other order */
                objs[0] = i, objs[1] = j;
                ok = cJSON_AddItemToArray(list, filled_template(&e->s.w, &t[k], refs, objs));
                objs[0] = j, objs[1] = i;
                ok = ok && cJSON_AddItemToArray(list, filled_template(&e->s.w, &t[k], refs, objs));
            }
    }
    sw_ref *by_id = ok ? malloc((size_t)(n ? n : 1) * sizeof *by_id) : NULL;   /* the table in object-id order */
    if (by_id) {
        memcpy(by_id, refs, (size_t)n * sizeof *by_id);
        qsort(by_id, (size_t)n, sizeof *by_id, ref_by_obj);
    }
    for (int i = 0; by_id && i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", by_id[i].obj);
        cJSON_AddStringToObject(lut, key, by_id[i].r);
    }
    if (!by_id) { cJSON_Delete(o); o = NULL; }
    free(by_id);
    free(refs);
    return o;
}

static cJSON *flag_obj(const char *k1, int v1, const char *k2, int v2, const char *k3, int v3) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddBoolToObject(p, k1, v1);
    if (k2) cJSON_AddBoolToObject(p, k2, v2);
    if (k3) cJSON_AddBoolToObject(p, k3, v3);
    return p;
}

/* EnvObject.toJSON's shape (uuid, name, type, isDeleted, the property groups or null, contents
 * keyed "name-uuid"), holding what this port models: uuid is the object's index, type its kind
 * (m2_sw_kind_names); doors are portals, not contents, as in the original. */
static cJSON *object_tree(const m2_sw_world *w, int obj, int depth) {
    const m2_sw_obj *o = &w->o[obj];
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char id[16];
    snprintf(id, sizeof id, "%d", obj);
    cJSON_AddStringToObject(j, "uuid", id);
    cJSON_AddStringToObject(j, "name", o->name);
    cJSON_AddStringToObject(j, "type", o->kind < M2_SW_K_COUNT && m2_sw_kind_names[o->kind] ? m2_sw_kind_names[o->kind] : "?");
    cJSON_AddBoolToObject(j, "isDeleted", (o->flags & M2_SW_F_DELETED) != 0);
    if (o->mat >= 0) {
        const m2_sw_material *m = &m2_sw_materials[o->mat];
        cJSON *p = cJSON_AddObjectToObject(j, "propMaterial");
        cJSON_AddStringToObject(p, "substanceName", m->name);
        cJSON_AddNumberToObject(p, "temperatureC", o->temp);
        cJSON_AddStringToObject(p, "stateOfMatter", m2_sw_state_name(o->state));
        cJSON_AddNumberToObject(p, "boilingPoint", m->boil_c);
        cJSON_AddNumberToObject(p, "meltingPoint", m2_sw_melt_point(w, obj));
        cJSON_AddBoolToObject(p, "isCombusting", o->combusting);
        cJSON_AddBoolToObject(p, "hasCombusted", o->combusted);
        cJSON_AddNumberToObject(p, "combustionTicks", o->combust_ticks);
        cJSON_AddBoolToObject(p, "electricallyConductive", (o->flags & M2_SW_F_CONDUCTIVE) != 0);
    } else cJSON_AddNullToObject(j, "propMaterial");
    if (o->flags & M2_SW_F_EDIBLE) cJSON_AddItemToObject(j, "propEdibility", flag_obj("isEdible", 1, NULL, 0, NULL, 0));
    else cJSON_AddNullToObject(j, "propEdibility");
    if (o->flags & M2_SW_F_CONTAINER)
        cJSON_AddItemToObject(j, "propContainer", flag_obj("isContainer", 1, "isOpen", (o->flags & M2_SW_F_OPEN) != 0,
                                                           "isClosable", (o->flags & M2_SW_F_CLOSABLE) != 0));
    else cJSON_AddNullToObject(j, "propContainer");
    if (o->flags & M2_SW_F_DEVICE)
        cJSON_AddItemToObject(j, "propDevice", flag_obj("isActivable", 1, "isActivated", (o->flags & M2_SW_F_ON) != 0,
                                                        "isBroken", (o->flags & M2_SW_F_BROKEN) != 0));
    else cJSON_AddNullToObject(j, "propDevice");
    cJSON_AddItemToObject(j, "propMoveable", flag_obj("isMovable", (o->flags & M2_SW_F_MOVABLE) != 0, NULL, 0, NULL, 0));
    if (o->flags & M2_SW_F_LIVING) {
        const char *stage = m2_sw_life_stage_name(w, obj);
        cJSON *p = cJSON_AddObjectToObject(j, "propLife");
        cJSON_AddStringToObject(p, "lifeformType", o->alt[0] ? o->alt : o->name);
        cJSON_AddStringToObject(p, "lifeStage", stage);
        cJSON_AddBoolToObject(p, "isSickly", o->sickly);
        cJSON_AddBoolToObject(p, "isDead", !strcmp(stage, "dead"));
    } else cJSON_AddNullToObject(j, "propLife");
    cJSON *c = cJSON_AddObjectToObject(j, "contents");
    int kids[M2_SW_MAX_OBJ];
    int k = depth < M2_SW_MAX_OBJ ? m2_sw_children(w, obj, kids, M2_SW_MAX_OBJ, 1) : 0;   /* a tree: depth < objects */
    for (int i = 0; i < k && c; i++) {
        char key[M2_SW_NAME + 16];
        snprintf(key, sizeof key, "%s-%d", w->o[kids[i]].name, kids[i]);
        cJSON *sub = object_tree(w, kids[i], depth + 1);
        if (!sub) { cJSON_Delete(j); return NULL; }
        cJSON_AddItemToObject(c, key, sub);
    }
    return j;
}

/* The text written into b as a JSON string (NULL when out of memory); b freed. */
static cJSON *text_json(m2_strbuf *b) {
    cJSON *v = b->oom ? NULL : cJSON_CreateString(b->p ? b->p : "");
    m2_strbuf_free(b);
    return v;
}

static char *inspect(m2_env *env, const char *what, m2_err *err) {
    sw_env *e = (sw_env *)env;
    if (!e->loaded) { m2_errorf(err, M2_EINVAL, "scienceworld: inspect before reset"); return NULL; }
    cJSON *v = NULL;
    m2_strbuf b = {0};
    if (!strcmp(what, "possible_objects")) v = possible_objects(e);
    else if (!strcmp(what, "possible_actions")) v = possible_actions(0);
    else if (!strcmp(what, "possible_actions_with_ids")) v = possible_actions(1);
    else if (!strcmp(what, "action_object_combinations")) v = action_object_combinations(e);
    else if (!strcmp(what, "object_tree")) v = object_tree(&e->s.w, e->s.w.universe, 0);
    else if (!strcmp(what, "goal_progress")) {
        m2_sw_goal_progress(&e->s.w, &b);
        v = text_json(&b);
    } else if (!strcmp(what, "look") || !strcmp(what, "inventory")) {   /* free actions: no tick */
        m2_sw_free_action_text(&e->s.w, what[0] == 'i', &b);
        v = text_json(&b);
    } else {
        m2_errorf(err, M2_EUNSUPPORTED, "scienceworld: nothing called '%s' to inspect (use possible_actions, possible_actions_with_ids, "
                   "possible_objects, action_object_combinations, object_tree, goal_progress, look or inventory)", what);
        return NULL;
    }
    char *js = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    if (!js) m2_errorf(err, M2_ENOMEM, "scienceworld: out of memory");
    return js;
}

const m2_env_class m2_sw_class = {
    .name = "scienceworld",
    .score_max = 100,
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
    .inspect = inspect,
};
