/* AgentGym's HTTP protocol over multi2's environments, without sockets (agentgym.h). One table of
 * open environments behind a mutex; each environment has its own mutex and a count of the
 * requests using it, so a close or an expiry never frees one that a request still holds. Each
 * environment keeps AgentGym's per-id "info" dict as a cJSON object, updated with every
 * response's fields as its servers do, which is what /detail and /observation answer. */
#include "env/agentgym.h"
#include "env/multi2_env.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { GYM_TEXTCRAFT, GYM_ALFWORLD, GYM_SCIWORLD } gym_kind;

static const char *const split_names[3] = {"train", "id", "ood"};

typedef struct gym_slot {
    int id;
    m2e_env *env;
    pthread_mutex_t mu;      /* one request at a time on this environment */
    int refs;                /* requests holding it (table lock) */
    int closed;              /* out of the table; the last holder frees it (table lock) */
    double last_used;        /* table lock */
    /* guarded by mu: */
    cJSON *info;             /* AgentGym's info dict for this id */
    int have_episode, done;
    int split, index;        /* the episode being played */
    const char *task;        /* its task family (ScienceWorld) or NULL */
    int variation;           /* ScienceWorld: its variation */
    char *tc_commands;       /* TextCraft: a custom episode's commands text and goal id (/create), else NULL */
    char *tc_goal;
} gym_slot;

/* A ScienceWorld task in AgentGym's data_idx order. */
typedef struct gym_sw_task {
    char name[64];
    int major, minor;
    int first[3], count[3];  /* per split: first variation, variations */
    int n_var;
} gym_sw_task;

struct m2_gym {
    gym_kind kind;
    const char *env_name;    /* multi2's name of the environment */
    char *data_path;
    uint64_t seed;
    int max_envs;
    double idle;
    size_t max_body;
    pthread_mutex_t lock;    /* slots, n_slots, next_id */
    gym_slot **slots;
    int n_slots, next_id;
    int split_count[3];      /* TextCraft / ALFWorld: episodes per split (every task) */
    gym_sw_task *sw;
    int n_sw, sw_total;
};

/* AgentGym's SciWorld server leaves these tasks out of data_idx (agentenv_sciworld/environment.py). */
static const char *const sw_excluded[] = {"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"};

#define SW_STATE_LIST_MAX 10   /* AgentGym's SciWorld /state shows the first 10 actions and objects */
#define TC_ITEM_NS "minecraft:"   /* TextCraft's item ids, which a custom goal must be */

/* ---------------- responses ---------------- */

typedef struct reply {
    int status;
    cJSON *json;
} reply;

static reply ok(cJSON *j) { return (reply){.status = 200, .json = j}; }

/* {key: the formatted message} with the given HTTP status (the one place both answers are made). */
static reply vmessage(int status, const char *key, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    cJSON *j = cJSON_CreateObject();
    if (j) cJSON_AddStringToObject(j, key, msg);
    return (reply){.status = status, .json = j};
}

static reply errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static reply errorf(const char *fmt, ...) {   /* a failure inside a route: 200 + {"error"} */
    va_list ap;
    va_start(ap, fmt);
    reply r = vmessage(200, "error", fmt, ap);
    va_end(ap);
    return r;
}

static reply detailf(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static reply detailf(int status, const char *fmt, ...) {   /* FastAPI's answer to a bad request */
    va_list ap;
    va_start(ap, fmt);
    reply r = vmessage(status, "detail", fmt, ap);
    va_end(ap);
    return r;
}

/* ---------------- the table ---------------- */

static void slot_free(gym_slot *s) {
    if (!s) return;
    m2e_free(s->env);
    cJSON_Delete(s->info);
    free(s->tc_commands);
    free(s->tc_goal);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Closes (under the table lock) every environment idle past the limit and not in use. */
static void expire_locked(m2_gym *g, double now, gym_slot **dead, int *n_dead) {
    for (int i = 0; i < g->n_slots;) {
        gym_slot *s = g->slots[i];
        if (s->refs == 0 && now - s->last_used > g->idle) {
            dead[(*n_dead)++] = s;
            g->slots[i] = g->slots[--g->n_slots];
        } else i++;
    }
}

static void expire(m2_gym *g, double now) {
    gym_slot **dead = malloc((size_t)g->max_envs * sizeof *dead);
    if (!dead) return;
    int n = 0;
    pthread_mutex_lock(&g->lock);
    expire_locked(g, now, dead, &n);
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < n; i++) slot_free(dead[i]);
    free(dead);
}

/* A new environment with the next id, held (refs 1, mu locked); NULL with the reply set. */
static gym_slot *slot_new(m2_gym *g, double now, reply *r) {
    gym_slot *s = calloc(1, sizeof *s);
    char msg[512] = "";
    if (!s || !(s->info = cJSON_CreateObject())) { free(s); *r = errorf("out of memory"); return NULL; }
    if (!(s->env = m2e_create(g->env_name, g->data_path, msg, sizeof msg))) {
        cJSON_Delete(s->info);
        free(s);
        *r = errorf("%s", msg);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_lock(&s->mu);
    s->refs = 1;
    s->last_used = now;
    pthread_mutex_lock(&g->lock);
    if (g->n_slots >= g->max_envs) {
        pthread_mutex_unlock(&g->lock);
        pthread_mutex_unlock(&s->mu);
        slot_free(s);
        *r = errorf("too many open environments (the server's limit is %d; close some with /close)", g->max_envs);
        return NULL;
    }
    s->id = g->next_id++;
    g->slots[g->n_slots++] = s;
    pthread_mutex_unlock(&g->lock);
    return s;
}

static reply unknown_id(m2_gym *g, long long id) {
    pthread_mutex_lock(&g->lock);
    int issued = id >= 0 && id < g->next_id;
    pthread_mutex_unlock(&g->lock);
    if (issued) return errorf("The task with environment %lld has been deleted.", id);
    return errorf("The id %lld is not valid.", id);
}

/* Holds environment `id` (its mutex locked); NULL with the reply set when there is none. */
static gym_slot *acquire(m2_gym *g, long long id, reply *r) {
    gym_slot *s = NULL;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n_slots; i++)
        if (g->slots[i]->id == id) { s = g->slots[i]; s->refs++; break; }
    pthread_mutex_unlock(&g->lock);
    if (!s) { *r = unknown_id(g, id); return NULL; }
    pthread_mutex_lock(&s->mu);
    return s;
}

static void release(m2_gym *g, gym_slot *s, double now) {
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&g->lock);
    s->last_used = now;
    int last = --s->refs == 0 && s->closed;
    pthread_mutex_unlock(&g->lock);
    if (last) slot_free(s);
}

/* Takes `id` out of the table; 1 if it was there. The memory goes with the last holder. */
static int close_id(m2_gym *g, long long id) {
    gym_slot *s = NULL;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n_slots; i++)
        if (g->slots[i]->id == id) {
            s = g->slots[i];
            g->slots[i] = g->slots[--g->n_slots];
            break;
        }
    int free_now = s && s->refs == 0;
    if (s) s->closed = 1;
    pthread_mutex_unlock(&g->lock);
    if (free_now) slot_free(s);
    return s != NULL;
}

/* ---------------- request fields ---------------- */

/* An integer field as pydantic reads one: a JSON integer (or a float with no fraction) or a
 * string holding one. 0 ok; -1 missing; -2 not an integer. */
static int int_of(const cJSON *v, long long *out) {
    if (!v || cJSON_IsNull(v)) return -1;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!isfinite(d) || d != floor(d) || fabs(d) > 1e15) return -2;
        *out = (long long)d;
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring) {
        char *end;
        errno = 0;
        long long x = strtoll(v->valuestring, &end, 10);
        if (errno || end == v->valuestring || *end) return -2;
        *out = x;
        return 0;
    }
    return -2;
}

static int body_int(const cJSON *body, const char *key, int required, long long dflt, long long *out, reply *r) {
    int rc = int_of(cJSON_GetObjectItemCaseSensitive(body, key), out);
    if (rc == -1 && !required) { *out = dflt; return 0; }
    if (rc == -1) { *r = detailf(422, "field required: body.%s", key); return -1; }
    if (rc == -2) { *r = detailf(422, "value is not a valid integer: body.%s", key); return -1; }
    return 0;
}

static int body_str(const cJSON *body, const char *key, const char **out, reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!v || cJSON_IsNull(v)) { *r = detailf(422, "field required: body.%s", key); return -1; }
    if (!cJSON_IsString(v) || !v->valuestring) { *r = detailf(422, "str type expected: body.%s", key); return -1; }
    *out = v->valuestring;
    return 0;
}

/* id=N from a query string ("a=1&id=2"). */
static int query_id(const char *q, long long *out, reply *r) {
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
        if (end - p > 3 && !strncmp(p, "id=", 3)) {
            char buf[32];
            size_t n = (size_t)(end - p - 3);
            if (n >= sizeof buf) break;
            memcpy(buf, p + 3, n);
            buf[n] = 0;
            char *e;
            errno = 0;
            long long x = strtoll(buf, &e, 10);
            if (errno || e == buf || *e) { *r = detailf(422, "value is not a valid integer: query.id"); return -1; }
            *out = x;
            return 0;
        }
        p = amp ? amp + 1 : end;
    }
    *r = detailf(422, "field required: query.id");
    return -1;
}

/* ---------------- episodes: AgentGym's indices -> (task, split, index) ---------------- */

static int total_episodes(const m2_gym *g) {
    return g->split_count[0] + g->split_count[1] + g->split_count[2];
}

/* Walks the splits in order: k -> (split, index). */
static void split_locate(const m2_gym *g, int k, int *split, int *index) {
    int s = 0;
    while (s < 2 && k >= g->split_count[s]) k -= g->split_count[s++];
    *split = s;
    *index = k;
}

/* Python's list indexing (what AgentGym's servers do with games[i]): -n..n-1; -1 past it. */
static int py_index(long long i, int n) {
    if (i < 0) i += n;
    return (i >= 0 && i < n) ? (int)i : -1;
}

/* ScienceWorld data_idx -> task, split and index; -1 out of range. */
static int sw_locate(const m2_gym *g, int k, const gym_sw_task **t, int *split, int *index, int *variation) {
    for (int i = 0; i < g->n_sw; i++) {
        const gym_sw_task *x = &g->sw[i];
        if (k >= x->n_var) { k -= x->n_var; continue; }
        for (int s = 0; s < 3; s++)
            if (k >= x->first[s] && k < x->first[s] + x->count[s]) {
                *t = x;
                *split = s;
                *index = k - x->first[s];
                *variation = k;
                return 0;
            }
        return -1;
    }
    return -1;
}

/* ---------------- info dict ---------------- */

static void info_set(cJSON *info, const char *key, cJSON *v) {
    if (!v) return;
    if (cJSON_GetObjectItemCaseSensitive(info, key)) cJSON_ReplaceItemInObjectCaseSensitive(info, key, v);
    else cJSON_AddItemToObject(info, key, v);
}

/* info.update(payload), as AgentGym's servers do after a step or reset. */
static void info_update(cJSON *info, const cJSON *payload) {
    for (const cJSON *c = payload ? payload->child : NULL; c; c = c->next)
        if (c->string) info_set(info, c->string, cJSON_Duplicate(c, 1));
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The admissible actions as a JSON array, in the environment's order or sorted (ScienceWorld's
 * valid action-object combinations are sorted). */
static cJSON *admissible_list(gym_slot *s, int sorted) {
    const char *const *list;
    int n;
    cJSON *a = cJSON_CreateArray();
    if (!a || m2e_admissible(s->env, &list, &n)) return a;
    const char **order = sorted ? malloc((size_t)(n ? n : 1) * sizeof *order) : NULL;
    if (order) {
        memcpy(order, list, (size_t)n * sizeof *order);
        qsort(order, (size_t)n, sizeof *order, str_cmp);
        list = order;
    }
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(list[i]));
    free(order);
    return a;
}

static cJSON *admissible_json(gym_slot *s) { return admissible_list(s, 0); }

/* AgentGym's ALFWorld reset text: the welcome banner's paragraph dropped, the remaining
 * paragraphs joined with single newlines ("\n".join(ob.split("\n\n")[1:])). */
static char *alfworld_reset_text(const char *ob) {
    const char *p = strstr(ob, "\n\n");
    if (!p) return strdup("");
    p += 2;
    char *out = malloc(strlen(p) + 1), *w = out;
    if (!out) return NULL;
    while (*p) {
        if (p[0] == '\n' && p[1] == '\n') { *w++ = '\n'; p += 2; }
        else *w++ = *p++;
    }
    *w = 0;
    return out;
}

/* AgentGym's process_ob: a leading "You arrive at loc N. " is dropped. */
static const char *alfworld_step_text(const char *ob) {
    static const char prefix[] = "You arrive at loc ";
    if (strncmp(ob, prefix, sizeof prefix - 1)) return ob;
    const char *dot = strstr(ob, ". ");
    return dot ? dot + 2 : ob;
}

/* ---------------- routes ---------------- */

typedef struct req {
    m2_gym *g;
    const cJSON *body;     /* an object (empty when none was sent) */
    const char *query;
    double now;
} req;

static const char *kind_title(gym_kind k) {
    return k == GYM_TEXTCRAFT ? "TextCraft" : k == GYM_ALFWORLD ? "AlfWorld" : "ScienceWorld";
}

static reply r_hello(req *q) {
    char msg[64];
    snprintf(msg, sizeof msg, "This is environment %s.", kind_title(q->g->kind));
    return ok(cJSON_CreateString(msg));
}

/* TextCraft's reset answer {id, observation, done, reward}, and its info dict (no id, deleted). */
static void tc_reset_payload(gym_slot *s, const char *observation, cJSON *payload) {
    cJSON_AddNumberToObject(payload, "id", s->id);
    cJSON_AddStringToObject(payload, "observation", observation);
    cJSON_AddBoolToObject(payload, "done", 0);
    cJSON_AddNumberToObject(payload, "reward", 0);
    info_update(s->info, payload);
    cJSON_DeleteItemFromObjectCaseSensitive(s->info, "id");   /* its info dict has no id */
    cJSON_AddBoolToObject(s->info, "deleted", 0);
}

/* A TextCraft episode of the caller's own, as TextCraftEnv.reset(commands=, goal=) makes one: the
 * commands are the text the agent is shown (crafting follows the recipe data, listed or not, as in
 * AgentGym), the goal an item id that wins when crafted. multi2 plays the goal's own episode (its
 * tree, its inventory rules) and shows the caller's commands in place of its block. */
static reply tc_custom_reset(req *q, gym_slot *s, const char *commands, const char *goal, cJSON *payload) {
    if (strncmp(goal, TC_ITEM_NS, sizeof TC_ITEM_NS - 1) || !goal[sizeof TC_ITEM_NS - 1])
        return errorf("goal must be an item id such as \"minecraft:oak_planks\" (got \"%s\")", goal);
    if (!commands[strspn(commands, " \t\r\n")]) return errorf("commands is empty: give the crafting commands the agent is shown");
    if (m2e_num_episodes(s->env, goal, "train") != 1)
        return errorf("goal \"%s\" is not an item multi2's TextCraft can craft (an unknown item, or one "
                      "without a recipe in its recipe data)", goal);
    char *d = m2e_describe(s->env, goal, "train", 0);
    cJSON *dj = d ? cJSON_Parse(d) : NULL;
    m2e_string_free(d);
    const cJSON *disp = cJSON_GetObjectItemCaseSensitive(dj, "goal");
    m2e_result r;
    if (!cJSON_IsString(disp) || m2e_reset(s->env, goal, "train", 0, q->g->seed, &r)) {
        cJSON_Delete(dj);
        s->have_episode = 0;
        return errorf("%s", m2e_error(s->env));
    }
    /* "Crafting commands:\n{commands}\n\nGoal: craft {goal as text}." as the environment words it */
    size_t len = strlen(commands) + strlen(disp->valuestring) + 64;
    char *ob = malloc(len);
    s->tc_commands = strdup(commands);
    s->tc_goal = strdup(goal);
    if (!ob || !s->tc_commands || !s->tc_goal) {
        free(ob);
        cJSON_Delete(dj);
        s->have_episode = 0;
        return errorf("out of memory");
    }
    snprintf(ob, len, "Crafting commands:\n%s\n\nGoal: craft %s.", commands, disp->valuestring);
    cJSON_Delete(dj);
    s->have_episode = 1;
    s->done = 0;
    s->split = 0;
    s->index = 0;
    cJSON_Delete(s->info);
    s->info = cJSON_CreateObject();
    tc_reset_payload(s, ob, payload);
    free(ob);
    return ok(payload);
}

/* Resets slot s to AgentGym index k: TextCraft data_idx, ALFWorld game, ScienceWorld data_idx.
 * Fills `payload` with the reset's fields. */
static reply do_reset(req *q, gym_slot *s, long long k, const char *world_type, cJSON *payload) {
    m2_gym *g = q->g;
    int split = 0, index = 0, variation = 0;
    const char *task = NULL;
    const gym_sw_task *t = NULL;
    if (g->kind == GYM_TEXTCRAFT) {
        int n = total_episodes(g);
        split_locate(g, (int)(((k % n) + n) % n), &split, &index);   /* data_idx % len, as AgentGym */
    } else if (g->kind == GYM_ALFWORLD) {
        int i = py_index(k, total_episodes(g));
        if (i < 0) return errorf("list index out of range");
        split_locate(g, i, &split, &index);
    } else {
        int i = py_index(k, g->sw_total);
        if (i < 0 || sw_locate(g, i, &t, &split, &index, &variation)) return errorf("list index out of range");
        task = t->name;
    }
    m2e_result r;
    if (m2e_reset(s->env, task, split_names[split], index, g->seed, &r)) {
        s->have_episode = 0;
        return errorf("%s", m2e_error(s->env));
    }
    s->have_episode = 1;
    s->done = 0;
    s->split = split;
    s->index = index;
    s->task = task;
    s->variation = variation;
    free(s->tc_commands);
    free(s->tc_goal);
    s->tc_commands = s->tc_goal = NULL;
    cJSON_Delete(s->info);
    s->info = cJSON_CreateObject();
    if (g->kind == GYM_TEXTCRAFT) {
        tc_reset_payload(s, r.observation, payload);
    } else if (g->kind == GYM_ALFWORLD) {
        char *ob = alfworld_reset_text(r.observation);
        char *d = m2e_describe(s->env, NULL, split_names[split], index);
        cJSON *dj = d ? cJSON_Parse(d) : NULL;
        m2e_string_free(d);
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(dj, "task_type");
        char type[256];
        /* the game's "<task type>/<trial>", as AgentGym cuts it from the game file's path; the
         * trial is the episode's split and index, as in python/multi2/alfworld.py's game names */
        snprintf(type, sizeof type, "%s/%s_%05d", cJSON_IsString(tt) ? tt->valuestring : "?", split_names[split], index);
        cJSON_Delete(dj);
        cJSON_AddNumberToObject(payload, "id", s->id);
        cJSON_AddStringToObject(payload, "observation", ob ? ob : "");
        cJSON_AddItemToObject(payload, "available_actions", admissible_json(s));
        cJSON_AddStringToObject(payload, "task_type", type);
        cJSON_AddStringToObject(s->info, "world_type", world_type);
        cJSON_AddNumberToObject(s->info, "game", (double)k);
        cJSON_AddStringToObject(s->info, "observation", ob ? ob : "");
        cJSON_AddItemToObject(s->info, "available_actions", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(payload, "available_actions"), 1));
        cJSON_AddBoolToObject(s->info, "done", 0);
        cJSON_AddNumberToObject(s->info, "reward", 0);
        cJSON_AddBoolToObject(s->info, "deleted", 0);
        free(ob);
    } else {
        cJSON_AddStringToObject(payload, "task_name", t->name);
        cJSON_AddNumberToObject(payload, "var_num", variation);
        cJSON_AddStringToObject(payload, "task_description", m2e_task_text(s->env));
        cJSON_AddStringToObject(payload, "observation", r.observation);
        cJSON_AddNumberToObject(payload, "reward", 0);
        cJSON_AddNumberToObject(payload, "score", r.score);
        cJSON_AddBoolToObject(payload, "deleted", 0);
        cJSON_AddBoolToObject(payload, "done", r.done);
        info_update(s->info, payload);
    }
    return ok(payload);
}

static reply r_create(req *q) {
    m2_gym *g = q->g;
    const char *commands = NULL, *goal = NULL;
    if (g->kind == GYM_TEXTCRAFT) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(q->body, "commands");
        const cJSON *gl = cJSON_GetObjectItemCaseSensitive(q->body, "goal");
        if (c && !cJSON_IsNull(c) && !cJSON_IsString(c)) return detailf(422, "str type expected: body.commands");
        if (gl && !cJSON_IsNull(gl) && !cJSON_IsString(gl)) return detailf(422, "str type expected: body.goal");
        /* TextCraftEnv.reset plays a custom episode only with both; one alone would be silently dropped */
        if (cJSON_IsString(c) != cJSON_IsString(gl))
            return errorf("commands and goal go together: give both (an episode of your own) or neither (episode data_idx = id)");
        if (cJSON_IsString(c)) { commands = c->valuestring; goal = gl->valuestring; }
    }
    reply r;
    gym_slot *s = slot_new(g, q->now, &r);
    if (!s) return r;
    if (g->kind == GYM_TEXTCRAFT) {   /* create resets with data_idx = id */
        cJSON *payload = cJSON_CreateObject();
        r = !payload ? errorf("out of memory")
            : goal ? tc_custom_reset(q, s, commands, goal, payload) : do_reset(q, s, s->id, NULL, payload);
        if (r.json != payload) cJSON_Delete(payload);
        int failed = r.json && cJSON_GetObjectItemCaseSensitive(r.json, "error");
        int id = s->id;
        release(g, s, q->now);
        if (failed) close_id(g, id);
        return r;
    }
    cJSON *j = cJSON_CreateObject();
    if (j) cJSON_AddNumberToObject(j, "id", s->id);
    if (g->kind == GYM_SCIWORLD) {   /* its info dict starts as {"deleted": False, "done": False} */
        cJSON_AddBoolToObject(s->info, "deleted", 0);
        cJSON_AddBoolToObject(s->info, "done", 0);
    } else {                         /* ALFWorld's as {"done": False, "reward": 0, "deleted": False} */
        cJSON_AddBoolToObject(s->info, "done", 0);
        cJSON_AddNumberToObject(s->info, "reward", 0);
        cJSON_AddBoolToObject(s->info, "deleted", 0);
    }
    release(g, s, q->now);
    return ok(j);
}

/* AgentGym's ALFWorld and SciWorld servers refuse every route but reset on a finished episode. */
static int finished(const m2_gym *g, const gym_slot *s) { return g->kind != GYM_TEXTCRAFT && s->done; }

static reply r_reset(req *q) {
    m2_gym *g = q->g;
    reply r;
    long long id, k;
    const char *world_type = "Text";
    if (body_int(q->body, "id", 1, 0, &id, &r)) return r;
    if (g->kind == GYM_ALFWORLD) {
        if (body_int(q->body, "game", 1, 0, &k, &r) || body_str(q->body, "world_type", &world_type, &r)) return r;
        if (strcmp(world_type, "Text") && strcmp(world_type, "Embody") && strcmp(world_type, "Hybrid"))
            return errorf("world_type must be one of \"Text\", \"Embody\" and \"Hybrid\"");
    } else if (body_int(q->body, "data_idx", g->kind == GYM_SCIWORLD, 0, &k, &r)) return r;
    gym_slot *s = acquire(g, id, &r);
    if (!s) return r;
    cJSON *payload = cJSON_CreateObject();
    r = payload ? do_reset(q, s, k, world_type, payload) : errorf("out of memory");
    if (r.json != payload) cJSON_Delete(payload);
    release(g, s, q->now);
    return r;
}

/* A JSON value the environment shows of its current state (m2e_inspect); NULL with *r set. */
static cJSON *inspect_json(gym_slot *s, const char *what, reply *r) {
    char *js = m2e_inspect(s->env, what);
    cJSON *v = js ? cJSON_Parse(js) : NULL;
    if (!v) *r = js ? errorf("out of memory") : errorf("%s", m2e_error(s->env));
    m2e_string_free(js);
    return v;
}

/* AgentGym's step_visual clean-up of a model's raw output: a trailing "</s>" dropped, then the
 * text after the first "Action:" (up to a second one), trimmed. malloc'd. */
static char *visual_action(const char *raw) {
    static const char eos[] = "</s>", tag[] = "Action:";
    size_t n = strlen(raw);
    if (n >= sizeof eos - 1 && !strcmp(raw + n - (sizeof eos - 1), eos)) n -= sizeof eos - 1;
    const char *a = raw, *end = raw + n, *hit = NULL;
    for (const char *p = raw; p + sizeof tag - 1 <= end; p++)
        if (!strncmp(p, tag, sizeof tag - 1)) { hit = p; break; }
    if (hit) {
        a = hit + sizeof tag - 1;
        for (const char *p = a; p + sizeof tag - 1 <= end; p++)
            if (!strncmp(p, tag, sizeof tag - 1)) { end = p; break; }
        while (a < end && strchr(" \t\r\n\f\v", *a)) a++;
        while (end > a && strchr(" \t\r\n\f\v", end[-1])) end--;
    }
    char *out = malloc((size_t)(end - a) + 1);
    if (out) {
        memcpy(out, a, (size_t)(end - a));
        out[end - a] = 0;
    }
    return out;
}

/* ScienceWorld's step info dict (what its Python API returns with each step), from this port. */
static cJSON *sw_step_info(gym_slot *s, const m2e_result *st) {
    cJSON *info = cJSON_CreateObject();
    reply ignored;
    if (!info) return NULL;
    cJSON_AddNumberToObject(info, "moves", st->moves);
    cJSON_AddNumberToObject(info, "score", st->score);
    cJSON_AddNumberToObject(info, "reward", st->reward);
    cJSON *look = inspect_json(s, "look", &ignored), *inv = look ? inspect_json(s, "inventory", &ignored) : NULL;
    if (look) cJSON_AddItemToObject(info, "look", look);
    if (inv) cJSON_AddItemToObject(info, "inv", inv);
    cJSON_AddStringToObject(info, "taskDesc", m2e_task_text(s->env));
    cJSON_AddItemToObject(info, "valid", admissible_list(s, 1));
    cJSON_AddNumberToObject(info, "variationIdx", s->variation);
    cJSON_AddStringToObject(info, "taskName", s->task ? s->task : "");
    cJSON_AddStringToObject(info, "simplificationStr", "");   /* AgentGym loads without simplifications */
    return info;
}

/* /step, and SciWorld's /step_visual (the action cleaned as above; the step's info, the object
 * tree, the inventory and the moves added to the answer and to the info dict, as its server does). */
static reply step_route(req *q, int visual) {
    m2_gym *g = q->g;
    reply r;
    long long id;
    const char *action;
    if (body_int(q->body, "id", 1, 0, &id, &r) || body_str(q->body, "action", &action, &r)) return r;
    gym_slot *s = acquire(g, id, &r);
    if (!s) return r;
    if (finished(g, s)) { release(g, s, q->now); return errorf("The task with environment %lld has finished.", id); }
    if (!s->have_episode) { release(g, s, q->now); return errorf("The environment %lld has not been reset.", id); }
    char *cleaned = visual ? visual_action(action) : NULL;
    if (visual && !cleaned) { release(g, s, q->now); return errorf("out of memory"); }
    m2e_result st;
    int failed = m2e_step(s->env, cleaned ? cleaned : action, &st);
    free(cleaned);
    if (failed) {
        r = errorf("%s", m2e_error(s->env));
        release(g, s, q->now);
        return r;
    }
    cJSON *p = cJSON_CreateObject();
    if (!p) { release(g, s, q->now); return errorf("out of memory"); }
    s->done = st.done;
    if (g->kind == GYM_ALFWORLD) {
        cJSON_AddStringToObject(p, "observation", alfworld_step_text(st.observation));
        cJSON_AddNumberToObject(p, "reward", st.won ? 1.0 : 0.0);
        cJSON_AddItemToObject(p, "available_actions", admissible_json(s));
        cJSON_AddBoolToObject(p, "done", st.done);
    } else {
        cJSON_AddStringToObject(p, "observation", st.observation);
        cJSON_AddNumberToObject(p, "reward", st.reward);
        if (g->kind == GYM_SCIWORLD) cJSON_AddNumberToObject(p, "score", st.score);
        cJSON_AddBoolToObject(p, "done", st.done);
    }
    if (visual) {   /* its server answers null / "" when the tree / the inventory cannot be had */
        reply ignored;
        cJSON *info = sw_step_info(s, &st), *tree = inspect_json(s, "object_tree", &ignored);
        cJSON *inv = inspect_json(s, "inventory", &ignored);
        cJSON_AddItemToObject(p, "info", info ? info : cJSON_CreateNull());
        cJSON_AddItemToObject(p, "object_tree", tree ? tree : cJSON_CreateNull());
        cJSON_AddItemToObject(p, "inventory", inv ? inv : cJSON_CreateString(""));
        cJSON_AddNumberToObject(p, "moves", st.moves);
    }
    info_update(s->info, p);
    release(g, s, q->now);
    return ok(p);
}

static reply r_step(req *q) { return step_route(q, 0); }
static reply r_step_visual(req *q) { return step_route(q, 1); }

static reply r_close(req *q) {
    reply r;
    long long id;
    if (body_int(q->body, "id", 1, 0, &id, &r)) return r;
    int was = close_id(q->g, id);
    if (!was && q->g->kind == GYM_SCIWORLD) return unknown_id(q->g, id);   /* its server raises */
    return ok(cJSON_CreateBool(was));
}

/* GET routes on one id: the environment held, the finished check done. */
typedef reply (*get_fn)(req *q, gym_slot *s);

static reply with_id(req *q, get_fn fn) {
    reply r;
    long long id;
    if (query_id(q->query, &id, &r)) return r;
    gym_slot *s = acquire(q->g, id, &r);
    if (!s) return r;
    if (finished(q->g, s)) r = errorf("The task with environment %lld has finished.", id);
    else r = fn(q, s);
    release(q->g, s, q->now);
    return r;
}

static reply g_observation(req *q, gym_slot *s) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(s->info, "observation");
    if (!o) return errorf("'observation'");   /* the KeyError AgentGym's servers answer before a reset */
    return ok(cJSON_Duplicate(o, 1));
}

static reply g_detail(req *q, gym_slot *s) { return ok(cJSON_Duplicate(s->info, 1)); }

static reply g_available_actions(req *q, gym_slot *s) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(s->info, "available_actions");
    if (!a) return errorf("'available_actions'");
    return ok(cJSON_Duplicate(a, 1));
}

/* TextCraft's episode description: the crafting commands and the goal of the current episode. */
static reply tc_describe(gym_slot *s, const char *key) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    if (s->tc_goal) return ok(cJSON_CreateString(!strcmp(key, "commands") ? s->tc_commands : s->tc_goal));
    char *d = m2e_describe(s->env, NULL, split_names[s->split], s->index);
    cJSON *dj = d ? cJSON_Parse(d) : NULL;
    m2e_string_free(d);
    if (!dj) return errorf("%s", m2e_error(s->env));
    reply r;
    if (!strcmp(key, "commands")) {   /* "\n".join(...) like the TextCraft environment's self.commands */
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(dj, "commands");
        size_t len = 1;
        const cJSON *x;
        cJSON_ArrayForEach(x, c) if (cJSON_IsString(x)) len += strlen(x->valuestring) + 1;
        char *txt = calloc(1, len), *w = txt;
        cJSON_ArrayForEach(x, c) if (txt && cJSON_IsString(x)) w += sprintf(w, "%s%s", w == txt ? "" : "\n", x->valuestring);
        r = txt ? ok(cJSON_CreateString(txt)) : errorf("out of memory");
        free(txt);
    } else {   /* the goal's item id, "minecraft:..." as the environment's self.goal */
        const cJSON *gid = cJSON_GetObjectItemCaseSensitive(dj, "goal_id");
        r = cJSON_IsString(gid) ? ok(cJSON_CreateString(gid->valuestring)) : errorf("no goal");
    }
    cJSON_Delete(dj);
    return r;
}

static reply g_commands(req *q, gym_slot *s) { return tc_describe(s, "commands"); }
static reply g_goal(req *q, gym_slot *s) { return tc_describe(s, "goal"); }

static reply g_action_hint(req *q, gym_slot *s) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    cJSON *j = cJSON_CreateObject();
    if (!j) return errorf("out of memory");
    reply r;
    cJSON *acts = inspect_json(s, "possible_actions", &r), *objs = acts ? inspect_json(s, "possible_objects", &r) : NULL;
    if (!objs) { cJSON_Delete(j); cJSON_Delete(acts); return r; }
    cJSON_AddItemToObject(j, "possible_actions", acts);
    cJSON_AddItemToObject(j, "possible_objects", objs);
    return ok(j);
}

static reply g_object_tree(req *q, gym_slot *s) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    reply r;
    cJSON *tree = inspect_json(s, "object_tree", &r);
    if (!tree) return r;
    cJSON *j = cJSON_CreateObject();
    if (!j) { cJSON_Delete(tree); return errorf("out of memory"); }
    cJSON_AddItemToObject(j, "object_tree", tree);
    return ok(j);
}

/* Keeps the first n items of array a (AgentGym's [:10]). */
static cJSON *first_n(cJSON *a, int n) {
    while (a && cJSON_GetArraySize(a) > n) cJSON_DeleteItemFromArray(a, cJSON_GetArraySize(a) - 1);
    return a;
}

static reply g_state(req *q, gym_slot *s) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    reply r;
    cJSON *look = inspect_json(s, "look", &r);
    cJSON *inv = look ? inspect_json(s, "inventory", &r) : NULL;
    cJSON *objs = inv ? inspect_json(s, "possible_objects", &r) : NULL;
    cJSON *acts = objs ? inspect_json(s, "possible_actions", &r) : NULL;
    cJSON *goals = acts ? inspect_json(s, "goal_progress", &r) : NULL;
    cJSON *j = goals ? cJSON_CreateObject() : NULL;
    if (!j) {
        cJSON_Delete(look);
        cJSON_Delete(inv);
        cJSON_Delete(objs);
        cJSON_Delete(acts);
        cJSON_Delete(goals);
        return goals ? errorf("out of memory") : r;
    }
    m2e_result last;
    m2e_last(s->env, &last);
    cJSON_AddItemToObject(j, "observation", look);
    cJSON_AddItemToObject(j, "inventory", inv);
    cJSON_AddStringToObject(j, "task_description", m2e_task_text(s->env));
    cJSON_AddItemToObject(j, "goal_progress", goals);
    cJSON_AddItemToObject(j, "possible_actions", first_n(acts, SW_STATE_LIST_MAX));
    cJSON_AddItemToObject(j, "possible_objects", first_n(objs, SW_STATE_LIST_MAX));
    cJSON_AddNumberToObject(j, "current_moves", last.moves);
    cJSON_AddItemToObject(j, "environment_info", cJSON_Duplicate(s->info, 1));
    return ok(j);
}

static reply g_goals(req *q, gym_slot *s) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    reply r;
    cJSON *goals = inspect_json(s, "goal_progress", &r);
    if (!goals) return r;
    cJSON *j = cJSON_CreateObject();
    if (!j) { cJSON_Delete(goals); return errorf("out of memory"); }
    cJSON_AddItemToObject(j, "goals", goals);
    return ok(j);
}

static reply g_task_description(req *q, gym_slot *s) {
    if (!s->have_episode) return errorf("The environment %d has not been reset.", s->id);
    cJSON *j = cJSON_CreateObject();
    if (j) cJSON_AddStringToObject(j, "task_description", m2e_task_text(s->env));
    return ok(j);
}

#define TC (1 << GYM_TEXTCRAFT)
#define AW (1 << GYM_ALFWORLD)
#define SW (1 << GYM_SCIWORLD)

typedef struct route {
    int kinds;               /* which servers have it */
    const char *method, *path;
    reply (*post)(req *q);   /* a route of its own */
    get_fn get;              /* or a GET on ?id= */
} route;

static reply r_hello_route(req *q) { return r_hello(q); }

static const route routes[] = {
    {.kinds = TC | AW | SW, .method = "GET", .path = "/", .post = r_hello_route},
    {.kinds = TC | AW | SW, .method = "POST", .path = "/create", .post = r_create},
    {.kinds = TC | AW | SW, .method = "POST", .path = "/reset", .post = r_reset},
    {.kinds = TC | AW | SW, .method = "POST", .path = "/step", .post = r_step},
    {.kinds = TC | AW | SW, .method = "POST", .path = "/close", .post = r_close},
    {.kinds = TC | AW | SW, .method = "GET", .path = "/observation", .get = g_observation},
    {.kinds = TC | AW | SW, .method = "GET", .path = "/detail", .get = g_detail},
    {.kinds = AW, .method = "GET", .path = "/available_actions", .get = g_available_actions},
    {.kinds = TC, .method = "GET", .path = "/commands", .get = g_commands},
    {.kinds = TC, .method = "GET", .path = "/goal", .get = g_goal},
    {.kinds = SW, .method = "GET", .path = "/action_hint", .get = g_action_hint},
    {.kinds = SW, .method = "GET", .path = "/goals", .get = g_goals},
    {.kinds = SW, .method = "GET", .path = "/task_description", .get = g_task_description},
    {.kinds = SW, .method = "POST", .path = "/step_visual", .post = r_step_visual},
    {.kinds = SW, .method = "GET", .path = "/object_tree", .get = g_object_tree},
    {.kinds = SW, .method = "GET", .path = "/state", .get = g_state},
};

static reply dispatch(m2_gym *g, const char *method, const char *path, const char *query, const char *body,
                      size_t body_len, double now) {
    const route *hit = NULL;
    int other_method = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!(routes[i].kinds & (1 << g->kind)) || strcmp(routes[i].path, path)) continue;
        if (!strcmp(routes[i].method, method)) { hit = &routes[i]; break; }
        other_method = 1;
    }
    if (!hit) return other_method ? detailf(405, "Method Not Allowed") : detailf(404, "Not Found");
    if (body_len > g->max_body) return detailf(413, "request body too large (the server's limit is %zu bytes)", g->max_body);
    cJSON *parsed = NULL;
    if (!strcmp(method, "POST") && body && body_len) {
        /* ALFWorld's and SciWorld's /create read no body at all */
        int ignore = !strcmp(path, "/create") && g->kind != GYM_TEXTCRAFT;
        if (!ignore) {
            parsed = cJSON_ParseWithLength(body, body_len);
            if (!parsed) return detailf(422, "the body is not valid JSON");
            if (!cJSON_IsObject(parsed)) { cJSON_Delete(parsed); return detailf(422, "the body must be a JSON object"); }
        }
    }
    cJSON *empty = parsed ? NULL : cJSON_CreateObject();
    req q = {.g = g, .body = parsed ? parsed : empty, .query = query ? query : "", .now = now};
    reply r = q.body ? (hit->post ? hit->post(&q) : with_id(&q, hit->get)) : errorf("out of memory");
    cJSON_Delete(parsed);
    cJSON_Delete(empty);
    return r;
}

char *m2_gym_handle(m2_gym *g, const char *method, const char *path, const char *query, const char *body,
                    size_t body_len, double now, int *status) {
    expire(g, now);
    reply r = dispatch(g, method ? method : "", path ? path : "", query, body, body_len, now);
    *status = r.status;
    char *s = r.json ? cJSON_PrintUnformatted(r.json) : NULL;
    cJSON_Delete(r.json);
    return s;
}

/* ---------------- set-up ---------------- */

static int sw_cmp(const void *a, const void *b) {
    const gym_sw_task *x = a, *y = b;
    return x->major != y->major ? x->major - y->major : x->minor - y->minor;
}

/* AgentGym's data_idx table: every included task in id order with its variations. */
static int build_sw_table(m2_gym *g, m2e_env *probe, m2_err *err) {
    int n = m2e_num_tasks(probe);
    if (!(g->sw = calloc((size_t)n, sizeof *g->sw))) return m2_errorf(err, M2_ENOMEM, "serve: out of memory");
    for (int i = 0; i < n; i++) {
        gym_sw_task t = {.n_var = 0};
        snprintf(t.name, sizeof t.name, "%s", m2e_task_name(probe, i));
        char *d = m2e_describe(probe, t.name, "train", 0);
        cJSON *dj = d ? cJSON_Parse(d) : NULL;
        m2e_string_free(d);
        const cJSON *tid = cJSON_GetObjectItemCaseSensitive(dj, "task_id");
        if (!cJSON_IsString(tid) || sscanf(tid->valuestring, "%d-%d", &t.major, &t.minor) != 2) {
            cJSON_Delete(dj);
            return m2_errorf(err, M2_EFORMAT, "serve: scienceworld task %s has no task id (%s)", t.name, m2e_error(probe));
        }
        int excluded = 0;
        for (size_t k = 0; k < sizeof sw_excluded / sizeof sw_excluded[0]; k++) excluded |= !strcmp(tid->valuestring, sw_excluded[k]);
        cJSON_Delete(dj);
        if (excluded) continue;
        for (int s = 0; s < 3; s++) {
            t.count[s] = m2e_num_episodes(probe, t.name, split_names[s]);
            if (t.count[s] < 0) return m2_errorf(err, M2_EINVAL, "serve: %s", m2e_error(probe));
            char *ds = t.count[s] ? m2e_describe(probe, t.name, split_names[s], 0) : NULL;
            cJSON *dsj = ds ? cJSON_Parse(ds) : NULL;
            m2e_string_free(ds);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(dsj, "variation");
            t.first[s] = cJSON_IsNumber(v) ? v->valueint : 0;
            cJSON_Delete(dsj);
            if (t.first[s] + t.count[s] > t.n_var) t.n_var = t.first[s] + t.count[s];
        }
        g->sw[g->n_sw++] = t;
        g->sw_total += t.n_var;
    }
    qsort(g->sw, (size_t)g->n_sw, sizeof *g->sw, sw_cmp);
    return 0;
}

int m2_gym_create(m2_gym **out, const m2_gym_config *cfg, m2_err *err) {
    *out = NULL;
    gym_kind kind;
    const char *name = cfg->env ? cfg->env : "";
    if (!strcmp(name, "textcraft")) kind = GYM_TEXTCRAFT;
    else if (!strcmp(name, "alfworld")) kind = GYM_ALFWORLD;
    else if (!strcmp(name, "sciworld") || !strcmp(name, "scienceworld")) kind = GYM_SCIWORLD;
    else return m2_errorf(err, M2_EINVAL, "serve: unknown environment '%s' (use textcraft, alfworld or sciworld)", name);
    m2_gym *g = calloc(1, sizeof *g);
    if (!g) return m2_errorf(err, M2_ENOMEM, "serve: out of memory");
    g->kind = kind;
    g->env_name = kind == GYM_TEXTCRAFT ? "textcraft" : kind == GYM_ALFWORLD ? "alfworld" : "scienceworld";
    g->seed = cfg->seed;
    g->max_envs = cfg->max_envs > 0 ? cfg->max_envs : M2_GYM_MAX_ENVS_DEFAULT;
    g->idle = cfg->idle_seconds > 0 ? cfg->idle_seconds : M2_GYM_IDLE_SECONDS_DEFAULT;
    g->max_body = cfg->max_body ? cfg->max_body : M2_GYM_MAX_BODY_DEFAULT;
    pthread_mutex_init(&g->lock, NULL);
    if ((cfg->data_path && !(g->data_path = strdup(cfg->data_path))) || !(g->slots = calloc((size_t)g->max_envs, sizeof *g->slots))) {
        m2_gym_free(g);
        return m2_errorf(err, M2_ENOMEM, "serve: out of memory");
    }
    char msg[512];
    m2e_env *probe = m2e_create(g->env_name, g->data_path, msg, sizeof msg);
    if (!probe) {
        m2_gym_free(g);
        return m2_errorf(err, M2_EINVAL, "serve: %s", msg);
    }
    int rc = 0;
    for (int s = 0; s < 3 && !rc; s++)
        if ((g->split_count[s] = m2e_num_episodes(probe, NULL, split_names[s])) < 0)
            rc = m2_errorf(err, M2_EINVAL, "serve: %s", m2e_error(probe));
    if (!rc && total_episodes(g) <= 0) rc = m2_errorf(err, M2_EINVAL, "serve: %s has no episodes", g->env_name);
    if (!rc && kind == GYM_SCIWORLD) rc = build_sw_table(g, probe, err);
    m2e_free(probe);
    if (rc) { m2_gym_free(g); return -1; }
    *out = g;
    return 0;
}

void m2_gym_free(m2_gym *g) {
    if (!g) return;
    for (int i = 0; i < g->n_slots; i++) slot_free(g->slots[i]);
    free(g->slots);
    free(g->sw);
    free(g->data_path);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

size_t m2_gym_max_body(const m2_gym *g) { return g->max_body; }

int m2_gym_open_envs(m2_gym *g) {
    pthread_mutex_lock(&g->lock);
    int n = g->n_slots;
    pthread_mutex_unlock(&g->lock);
    return n;
}
