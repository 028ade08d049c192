#define _GNU_SOURCE
/* ALFWorld game files (game.tw-pddl): JSON {"pddl_domain", "grammar", "pddl_problem", "solvable", ...}.
 *
 * Reader: a small S-expression parser for the PDDL problem (objects with "- type" lists, :init facts,
 * :goal formula). The dynamics are built in (aw_dynamics.c), so pddl_domain is not interpreted; the task
 * text is taken from the grammar's "Your task is to: ..." rule (or written from the goal when absent).
 * The goal formula is matched against the six ALFWorld goal shapes (objectType/receptacleType of the
 * quantified variables, isClean/isHot/isCool/isToggled, two distinct objects, optional "forall not opened").
 * Affordances come from the file's own facts (pickupable, heatable, openable, canContain, ...), so files
 * need no tables. Objects declared without an objectType fact (ALFRED lists bare class names) are dropped;
 * an object with objectAtLocation but no inReceptacle lies on the floor there (listed by "look", never
 * takeable, as in the domain).
 *
 * Writer: the scene's initial state as a problem in the same vocabulary, plus the grammar's task rule.
 */
#include "env/alfworld/alfworld.h"
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/fsutil.h"
#include "core/strbuf.h"

/* ---------------------------------------------------------------- S-expressions */

typedef struct sx {
    const char *atom;     /* NULL for a list */
    int first, next;      /* child / sibling node indices, -1 = none */
    int line;
} sx;

typedef struct sx_tree {
    sx *n;
    int len, cap;
    char *text;           /* owned copy, atoms are NUL-terminated inside */
} sx_tree;

static void sx_free(sx_tree *t) { free(t->n); free(t->text); memset(t, 0, sizeof *t); }

static int sx_new(sx_tree *t, const char *atom, int line) {
    if (t->len == t->cap) {
        int nc = t->cap ? t->cap * 2 : 1024;
        sx *p = realloc(t->n, (size_t)nc * sizeof *p);
        if (!p) return -1;
        t->n = p;
        t->cap = nc;
    }
    t->n[t->len] = (sx){atom, -1, -1, line};
    return t->len++;
}

static void sx_attach(sx_tree *t, int parent, int *last, int node) {
    if (*last < 0) t->n[parent].first = node; else t->n[*last].next = node;
    *last = node;
}

/* Parses text into a tree whose root (node 0) is a list of the top-level forms. Atoms are copied into
 * t->text (allocated once, so atom pointers stay valid while the node array grows). */
static int sx_parse(sx_tree *t, const char *src, size_t len, const char *name, m2_err *err) {
    memset(t, 0, sizeof *t);
    t->text = malloc(2 * len + 2);
    if (!t->text) return m2_errorf(err, M2_ENOMEM, "out of memory");
    size_t w = 0;
    int stack[256], last[256], depth = 0, line = 1;
    if (sx_new(t, NULL, 1) < 0) return m2_errorf(err, M2_ENOMEM, "out of memory");
    stack[0] = 0; last[0] = -1;
    const char *p = src, *end = src + len;
    while (p < end) {
        char c = *p;
        if (c == '\n') { line++; p++; continue; }
        if (c == ';') { while (p < end && *p != '\n') p++; continue; }
        if (isspace((unsigned char)c) || c == 0) { p++; continue; }
        if (c == ')') {
            if (depth == 0) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: unexpected ')'", name, line);
            depth--;
            p++;
            continue;
        }
        int node;
        if (c == '(') {
            if (depth + 1 >= 256) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: nesting deeper than 255", name, line);
            if ((node = sx_new(t, NULL, line)) < 0) return m2_errorf(err, M2_ENOMEM, "out of memory");
            sx_attach(t, stack[depth], &last[depth], node);
            stack[++depth] = node;
            last[depth] = -1;
            p++;
            continue;
        }
        const char *s0 = p;
        while (p < end && *p && !isspace((unsigned char)*p) && *p != '(' && *p != ')' && *p != ';') p++;
        memcpy(t->text + w, s0, (size_t)(p - s0));
        t->text[w + (size_t)(p - s0)] = 0;
        if ((node = sx_new(t, t->text + w, line)) < 0) return m2_errorf(err, M2_ENOMEM, "out of memory");
        w += (size_t)(p - s0) + 1;
        sx_attach(t, stack[depth], &last[depth], node);
    }
    if (depth != 0) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: unbalanced parentheses (%d unclosed at the end)", name, depth);
    return 0;
}

static int sx_is(const sx_tree *t, int i, const char *atom) {
    return i >= 0 && t->n[i].atom && !strcasecmp(t->n[i].atom, atom);
}
/* the first element of list i is the atom `head` */
static int sx_head(const sx_tree *t, int i, const char *head) {
    return i >= 0 && !t->n[i].atom && sx_is(t, t->n[i].first, head);
}

/* ---------------------------------------------------------------- loader */

typedef struct ent { const char *name; int kind; } ent;   /* kind: 0 object 1 receptacle 2 location 3 agent 4 type */
enum { K_OBJ, K_REC, K_LOC, M2_SW_K_AGENT, K_TYPE, K_OTHER };

typedef struct loader {
    const char *name;
    sx_tree t;
    ent *ents;
    int n_ents, cap_ents;
    int *by_name;             /* entity indices sorted case-insensitively by name */
    char (*cls)[M2_AW_CLS_MAX];
    int n_cls, cap_cls;
} loader;

static int find_ent(const loader *L, const char *name) {
    int lo = 0, hi = L->n_ents - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcasecmp(L->ents[L->by_name[mid]].name, name);
        if (!c) return L->by_name[mid];
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

static int cmp_ent_name(const void *a, const void *b, void *ctx) {
    const loader *L = ctx;
    return strcasecmp(L->ents[*(const int *)a].name, L->ents[*(const int *)b].name);
}

/* "CounterTopType" -> class index (created when new) */
static int cls_of(loader *L, const char *type_name, m2_err *err) {
    char c[M2_AW_CLS_MAX];
    size_t n = strlen(type_name);
    if (n > 4 && !strcasecmp(type_name + n - 4, "type")) n -= 4;
    if (n == 0 || n >= M2_AW_CLS_MAX) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: bad type name '%.60s'", L->name, type_name);
    memcpy(c, type_name, n);
    c[n] = 0;
    for (int i = 0; i < L->n_cls; i++) if (!strcasecmp(L->cls[i], c)) return i;
    if (L->n_cls == L->cap_cls) {
        int nc = L->cap_cls ? 2 * L->cap_cls : 64;
        void *p = realloc(L->cls, (size_t)nc * sizeof *L->cls);
        if (!p) return m2_errorf(err, M2_ENOMEM, "out of memory");
        L->cls = p;
        L->cap_cls = nc;
    }
    memcpy(L->cls[L->n_cls], c, n + 1);
    return L->n_cls++;
}

static int kind_of(const char *type) {
    if (!strcasecmp(type, "object")) return K_OBJ;
    if (!strcasecmp(type, "receptacle")) return K_REC;
    if (!strcasecmp(type, "location")) return K_LOC;
    if (!strcasecmp(type, "agent")) return M2_SW_K_AGENT;
    if (!strcasecmp(type, "otype") || !strcasecmp(type, "rtype")) return K_TYPE;
    return K_OTHER;
}

static int read_objects(loader *L, int list, m2_err *err) {
    const sx_tree *t = &L->t;
    int pending_from = L->n_ents;
    for (int i = t->n[list].next; i >= 0; i = t->n[i].next) {
        if (!t->n[i].atom) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: (:objects ...) holds a list", L->name, t->n[i].line);
        const char *a = t->n[i].atom;
        if (!strcmp(a, "-")) {
            int ty = t->n[i].next;
            if (ty < 0 || !t->n[ty].atom) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: '-' without a type", L->name, t->n[i].line);
            int k = kind_of(t->n[ty].atom);
            for (int j = pending_from; j < L->n_ents; j++) L->ents[j].kind = k;
            pending_from = L->n_ents;
            i = ty;
            continue;
        }
        if (L->n_ents == L->cap_ents) {
            int nc = L->cap_ents ? 2 * L->cap_ents : 256;
            ent *p = realloc(L->ents, (size_t)nc * sizeof *p);
            if (!p) return m2_errorf(err, M2_ENOMEM, "out of memory");
            L->ents = p;
            L->cap_ents = nc;
        }
        L->ents[L->n_ents++] = (ent){a, K_OTHER};
    }
    return 0;
}

/* goal pattern extraction */
typedef struct gvar { const char *v; int cls; int in_recep, clean, hot, cool, toggled, holds; } gvar;
typedef struct gscan { gvar v[16]; int n; int all_closed, distinct; int recep_cls; } gscan;

static gvar *gv(gscan *g, const char *v) {
    for (int i = 0; i < g->n; i++) if (!strcasecmp(g->v[i].v, v)) return &g->v[i];
    if (g->n == 16) return NULL;
    g->v[g->n] = (gvar){v, -1, 0, 0, 0, 0, 0, 0};
    return &g->v[g->n++];
}

static int scan_goal(loader *L, int node, gscan *g, int depth, m2_err *err) {
    const sx_tree *t = &L->t;
    if (node < 0 || t->n[node].atom) return 0;
    if (depth > 64) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: goal nested too deeply", L->name);
    int h = t->n[node].first;
    if (h < 0) return 0;
    if (!t->n[h].atom) {   /* a list of lists, e.g. a variable list */
        for (int c = h; c >= 0; c = t->n[c].next) if (scan_goal(L, c, g, depth + 1, err)) return -1;
        return 0;
    }
    const char *p = t->n[h].atom;
    int a1 = t->n[h].next, a2 = a1 >= 0 ? t->n[a1].next : -1;
    const char *x1 = a1 >= 0 ? t->n[a1].atom : NULL, *x2 = a2 >= 0 ? t->n[a2].atom : NULL;
    if (!strcasecmp(p, "and") || !strcasecmp(p, "or") || !strcasecmp(p, "exists")) {
        for (int c = a1; c >= 0; c = t->n[c].next) if (scan_goal(L, c, g, depth + 1, err)) return -1;
        return 0;
    }
    if (!strcasecmp(p, "forall")) {
        int body = a2;
        if (sx_head(t, body, "not") && sx_head(t, t->n[t->n[body].first].next, "opened")) g->all_closed = 1;
        return 0;
    }
    if (!strcasecmp(p, "not")) {
        if (sx_head(t, a1, "=")) g->distinct = 1;
        return 0;
    }
    if (!x1) return 0;
    gvar *v = x1[0] == '?' ? gv(g, x1) : NULL;
    if (!strcasecmp(p, "objectType") && x2 && v) { if ((v->cls = cls_of(L, x2, err)) < 0) return -1; }
    else if (!strcasecmp(p, "receptacleType") && x2) { if ((g->recep_cls = cls_of(L, x2, err)) < 0) return -1; }
    else if (!strcasecmp(p, "inReceptacle") && v) v->in_recep = 1;
    else if (!strcasecmp(p, "isClean") && v) v->clean = 1;
    else if (!strcasecmp(p, "isHot") && v) v->hot = 1;
    else if (!strcasecmp(p, "isCool") && v) v->cool = 1;
    else if (!strcasecmp(p, "isToggled") && v) v->toggled = 1;
    else if (!strcasecmp(p, "holds") && x2 && x2[0] == '?') { gvar *o = gv(g, x2); if (o) o->holds = 1; }
    return 0;
}

static int goal_from_scan(loader *L, const gscan *g, m2_aw_goal *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    out->obj_cls = out->recep_cls = out->toggle_cls = -1;
    out->all_closed = g->all_closed;
    const gvar *tog = NULL, *held = NULL, *placed = NULL;
    int n_placed = 0;
    for (int i = 0; i < g->n; i++) {
        const gvar *v = &g->v[i];
        if (v->toggled && v->cls >= 0) tog = v;
        if (v->holds && v->cls >= 0) held = v;
        if (v->in_recep && v->cls >= 0) { if (!placed) placed = v; n_placed++; }
    }
    if (tog) {
        if (!held) return m2_errorf(err, M2_EUNSUPPORTED, "%s: pddl_problem: goal toggles a lamp but holds no typed object", L->name);
        out->type = M2_AW_LOOK;
        out->toggle_cls = tog->cls;
        out->obj_cls = held->cls;
        return 0;
    }
    if (!placed || g->recep_cls < 0)
        return m2_errorf(err, M2_EUNSUPPORTED, "%s: pddl_problem: goal is none of the 6 ALFWorld task shapes "
                         "(needs objectType + receptacleType + inReceptacle, or isToggled + holds)", L->name);
    out->obj_cls = placed->cls;
    out->recep_cls = g->recep_cls;
    if (n_placed >= 2 || g->distinct) out->type = M2_AW_PICK_TWO;
    else if (placed->clean) out->type = M2_AW_CLEAN;
    else if (placed->hot) out->type = M2_AW_HEAT;
    else if (placed->cool) out->type = M2_AW_COOL;
    else out->type = M2_AW_PICK;
    return 0;
}

static const char *const fact_flags[] = {"pickupable", "cleanable", "heatable", "coolable", "toggleable", "sliceable",
                                         "isReceptacleObject"};
static const uint32_t fact_flag_bits[] = {M2_AW_F_PICKUP, M2_AW_F_CLEANABLE, M2_AW_F_HEATABLE, M2_AW_F_COOLABLE, M2_AW_F_TOGGLE,
                                          M2_AW_F_SLICEABLE, M2_AW_F_RECEP_OBJ};
static const char *const fact_state[] = {"isClean", "isHot", "isCool", "isToggled", "isSliced", "isOn"};
static const uint8_t fact_state_bits[] = {M2_AW_S_CLEAN, M2_AW_S_HOT, M2_AW_S_COOL, M2_AW_S_TOGGLED, M2_AW_S_SLICED, M2_AW_S_ON};

static void task_from_goal(m2_aw_scene *s) {
    char o[M2_AW_CLS_MAX] = "", r[M2_AW_CLS_MAX] = "", l[M2_AW_CLS_MAX] = "";
    const m2_aw_goal *g = &s->goal;
    for (int k = 0; g->obj_cls >= 0 && s->cls_name[g->obj_cls][k]; k++) o[k] = (char)tolower((unsigned char)s->cls_name[g->obj_cls][k]);
    for (int k = 0; g->recep_cls >= 0 && s->cls_name[g->recep_cls][k]; k++) r[k] = (char)tolower((unsigned char)s->cls_name[g->recep_cls][k]);
    for (int k = 0; g->toggle_cls >= 0 && s->cls_name[g->toggle_cls][k]; k++) l[k] = (char)tolower((unsigned char)s->cls_name[g->toggle_cls][k]);
    switch (g->type) {
    case M2_AW_LOOK: snprintf(s->task_text, sizeof s->task_text, "Your task is to: look at %s under the %s.", o, l); break;
    case M2_AW_CLEAN: snprintf(s->task_text, sizeof s->task_text, "Your task is to: put a clean %s in %s.", o, r); break;
    case M2_AW_HEAT: snprintf(s->task_text, sizeof s->task_text, "Your task is to: put a hot %s in %s.", o, r); break;
    case M2_AW_COOL: snprintf(s->task_text, sizeof s->task_text, "Your task is to: put a cool %s in %s.", o, r); break;
    case M2_AW_PICK_TWO: snprintf(s->task_text, sizeof s->task_text, "Your task is to: put two %s in %s.", o, r); break;
    default: snprintf(s->task_text, sizeof s->task_text, "Your task is to: put a %s in %s.", o, r); break;
    }
}

static int load_problem(loader *L, const char *problem, size_t plen, const char *grammar, m2_aw_scene *s, m2_err *err) {
    if (sx_parse(&L->t, problem, plen, L->name, err)) return -1;
    const sx_tree *t = &L->t;
    int def = t->n[0].first;
    if (!sx_head(t, def, "define")) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: expected (define (problem ...) ...)", L->name);
    int objects = -1, init = -1, goal = -1;
    for (int c = t->n[t->n[def].first].next; c >= 0; c = t->n[c].next) {
        if (sx_head(t, c, ":objects")) objects = t->n[c].first;
        else if (sx_head(t, c, ":init")) init = t->n[c].first;
        else if (sx_head(t, c, ":goal")) goal = t->n[t->n[c].first].next;
    }
    if (objects < 0) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: missing (:objects ...)", L->name);
    if (init < 0) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: missing (:init ...)", L->name);
    if (goal < 0) return m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: missing (:goal ...)", L->name);
    if (read_objects(L, objects, err)) return -1;
    int n = L->n_ents;
    L->by_name = malloc((size_t)(n + 1) * sizeof *L->by_name);
    if (!L->by_name) return m2_errorf(err, M2_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) L->by_name[i] = i;
    qsort_r(L->by_name, (size_t)n, sizeof *L->by_name, cmp_ent_name, L);
    int *ecls = malloc((size_t)(n + 1) * sizeof *ecls), *eloc = malloc((size_t)(n + 1) * sizeof *eloc);
    int *ein = malloc((size_t)(n + 1) * sizeof *ein), *eidx = malloc((size_t)(n + 1) * sizeof *eidx);
    int *eat = malloc((size_t)(n + 1) * sizeof *eat);
    uint32_t *eflags = calloc((size_t)n + 1, sizeof *eflags);
    uint8_t *ebits = calloc((size_t)n + 1, 1);
    int rc = -1, agent_loc = -1, held = -1, n_can = 0, cap_can = 0;
    int (*can)[2] = NULL;
    if (!ecls || !eloc || !ein || !eidx || !eat || !eflags || !ebits) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto done; }
    for (int i = 0; i < n; i++) ecls[i] = eloc[i] = ein[i] = eidx[i] = eat[i] = -1;
    for (int f = t->n[init].next; f >= 0; f = t->n[f].next) {
        if (t->n[f].atom) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: (:init ...) holds a bare atom '%.40s'", L->name, t->n[f].line, t->n[f].atom); goto done; }
        int h = t->n[f].first;
        if (h < 0 || !t->n[h].atom) continue;
        const char *p = t->n[h].atom;
        if (!strcmp(p, "=")) continue;
        int a1 = t->n[h].next, a2 = a1 >= 0 ? t->n[a1].next : -1;
        const char *x1 = a1 >= 0 ? t->n[a1].atom : NULL, *x2 = a2 >= 0 ? t->n[a2].atom : NULL;
        if (!x1) continue;
        if (!strcasecmp(p, "canContain")) {
            if (!x2) goto arity;
            int rc_ = cls_of(L, x1, err), oc = rc_ >= 0 ? cls_of(L, x2, err) : -1;
            if (oc < 0) goto done;
            if (n_can == cap_can) {
                cap_can = cap_can ? 2 * cap_can : 256;
                void *q = realloc(can, (size_t)cap_can * sizeof *can);
                if (!q) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto done; }
                can = q;
            }
            can[n_can][0] = rc_; can[n_can][1] = oc; n_can++;
            continue;
        }
        int e1 = find_ent(L, x1);
        int e2 = x2 ? find_ent(L, x2) : -1;
        if (!strcasecmp(p, "atLocation")) {
            if (e2 < 0 || L->ents[e2].kind != K_LOC) goto unknown2;
            agent_loc = e2;
        } else if (!strcasecmp(p, "receptacleType") || !strcasecmp(p, "objectType")) {
            if (!x2) goto arity;
            if (e1 < 0) goto unknown1;
            if ((ecls[e1] = cls_of(L, x2, err)) < 0) goto done;
        } else if (!strcasecmp(p, "receptacleAtLocation")) {
            if (e1 < 0) goto unknown1;
            if (e2 < 0 || L->ents[e2].kind != K_LOC) goto unknown2;
            eloc[e1] = e2;
        } else if (!strcasecmp(p, "objectAtLocation")) {
            if (e1 < 0) goto unknown1;
            if (e2 < 0 || L->ents[e2].kind != K_LOC) goto unknown2;
            eat[e1] = e2;
        } else if (!strcasecmp(p, "inReceptacle")) {
            if (e1 < 0) goto unknown1;
            if (e2 < 0 || L->ents[e2].kind != K_REC) goto unknown2;
            if (ein[e1] < 0) ein[e1] = e2;
        } else if (!strcasecmp(p, "openable")) {
            if (e1 < 0) goto unknown1;
            eflags[e1] |= M2_AW_F_OPENABLE;
        } else if (!strcasecmp(p, "opened")) {
            if (e1 < 0) goto unknown1;
            ebits[e1] |= 1;
        } else if (!strcasecmp(p, "holds")) {
            if (e2 < 0) goto unknown2;
            held = e2;
        } else {
            for (size_t k = 0; k < sizeof fact_flags / sizeof fact_flags[0]; k++)
                if (!strcasecmp(p, fact_flags[k])) { if (e1 < 0) goto unknown1; eflags[e1] |= fact_flag_bits[k]; }
            for (size_t k = 0; k < sizeof fact_state / sizeof fact_state[0]; k++)
                if (!strcasecmp(p, fact_state[k])) { if (e1 < 0) goto unknown1; ebits[e1] |= fact_state_bits[k]; }
        }
        continue;
    arity:
        m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: fact (%s ...) needs two arguments", L->name, t->n[f].line, p);
        goto done;
    unknown1:
        m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: fact (%s %.60s ...) names an undeclared object", L->name, t->n[f].line, p, x1);
        goto done;
    unknown2:
        m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: line %d: fact (%s %.60s %.60s) names an undeclared or mistyped object",
                  L->name, t->n[f].line, p, x1, x2 ? x2 : "");
        goto done;
    }
    if (agent_loc < 0) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: no (atLocation agent1 <location>) fact", L->name); goto done; }
    gscan gs;
    memset(&gs, 0, sizeof gs);
    gs.recep_cls = -1;
    if (scan_goal(L, goal, &gs, 0, err)) goto done;
    m2_aw_goal goal_v;
    if (goal_from_scan(L, &gs, &goal_v, err)) goto done;
    /* count entities */
    int nr = 0, no = 0, nl = 0;
    for (int i = 0; i < n; i++) {
        int k = L->ents[i].kind;
        if (k == K_REC) {
            if (ecls[i] < 0) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: receptacle '%.80s' has no receptacleType fact", L->name, L->ents[i].name); goto done; }
            if (eloc[i] < 0) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: receptacle '%.80s' has no receptacleAtLocation fact", L->name, L->ents[i].name); goto done; }
            eidx[i] = nr++;
        } else if (k == K_OBJ && ecls[i] >= 0) eidx[i] = no++;
        else if (k == K_LOC) eidx[i] = nl++;
    }
    if (m2_aw_scene_alloc(s, L->n_cls ? L->n_cls : 1, nr, no, nl ? nl : 1, err)) goto done;
    snprintf(s->source, sizeof s->source, "%s", L->name);
    for (int c = 0; c < L->n_cls; c++) memcpy(s->cls_name[c], L->cls[c], M2_AW_CLS_MAX);
    for (int k = 0; k < n_can; k++) s->can_contain[can[k][0] * s->n_cls + can[k][1]] = 1;
    for (int i = 0; i < n; i++) {
        if (eidx[i] < 0) continue;
        char id[M2_AW_ID_MAX];
        if (strlen(L->ents[i].name) >= M2_AW_ID_MAX * 2) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: name too long '%.60s...'", L->name, L->ents[i].name); goto fail_scene; }
        m2_aw_demangle(L->ents[i].name, id, sizeof id);
        switch (L->ents[i].kind) {
        case K_REC: {
            m2_aw_recep *r = &s->receps[eidx[i]];
            r->cls = ecls[i];
            r->loc = eidx[eloc[i]];
            r->openable = (eflags[i] & M2_AW_F_OPENABLE) != 0;
            snprintf(r->id, sizeof r->id, "%s", id);
            s->init_opened[eidx[i]] = ebits[i] & 1;
            break;
        }
        case K_OBJ: {
            m2_aw_obj *o = &s->objs[eidx[i]];
            o->cls = ecls[i];
            o->flags = eflags[i] & ~M2_AW_F_OPENABLE;
            snprintf(o->id, sizeof o->id, "%s", id);
            s->init_in[eidx[i]] = ein[i] >= 0 ? eidx[ein[i]] : -1;
            if (ein[i] < 0 && eat[i] >= 0) s->floor_loc[eidx[i]] = eidx[eat[i]];
            s->init_bits[eidx[i]] = ebits[i] & ~1u;
            break;
        }
        case K_LOC: snprintf(s->loc_id[eidx[i]], M2_AW_ID_MAX, "%s", id); break;
        }
    }
    if (nl == 0) snprintf(s->loc_id[0], M2_AW_ID_MAX, "loc");
    s->start_loc = eidx[agent_loc];
    if (held >= 0) {
        if (eidx[held] < 0 || L->ents[held].kind != K_OBJ) { m2_errorf(err, M2_EFORMAT, "%s: pddl_problem: (holds ...) names no typed object", L->name); goto fail_scene; }
        s->init_held = eidx[held];
        s->init_in[s->init_held] = -1;
        s->floor_loc[s->init_held] = -1;
    }
    s->goal = goal_v;
    s->plan = 0;
    s->room = -1;
    /* task text: from the grammar's task rule when present */
    const char *tt = grammar ? strstr(grammar, "Your task is to: ") : NULL;
    if (tt) {
        size_t k = 0;
        while (tt[k] && tt[k] != '"' && tt[k] != '\n' && k + 1 < sizeof s->task_text) k++;
        memcpy(s->task_text, tt, k);
        s->task_text[k] = 0;
    } else task_from_goal(s);
    if (m2_aw_scene_finish(s, err)) goto fail_scene;
    rc = 0;
    goto done;
fail_scene:
    m2_aw_scene_free(s);
done:
    free(ecls); free(eloc); free(ein); free(eidx); free(eat); free(eflags); free(ebits); free(can);
    return rc;
}

int m2_aw_load_twpddl_text(const char *text, size_t len, const char *name, m2_aw_scene *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if (!name) name = "game.tw-pddl";
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root || !cJSON_IsObject(root)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: not a JSON object", name); }
    cJSON *prob = cJSON_GetObjectItemCaseSensitive(root, "pddl_problem");
    if (!prob) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: missing field 'pddl_problem'", name); }
    if (!cJSON_IsString(prob)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: field 'pddl_problem': expected a string", name); }
    cJSON *gram = cJSON_GetObjectItemCaseSensitive(root, "grammar");
    if (gram && !cJSON_IsString(gram)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: field 'grammar': expected a string", name); }
    cJSON *solv = cJSON_GetObjectItemCaseSensitive(root, "solvable");
    if (solv && !cJSON_IsBool(solv)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: field 'solvable': expected true or false", name); }
    loader L;
    memset(&L, 0, sizeof L);
    L.name = name;
    int rc = load_problem(&L, prob->valuestring, strlen(prob->valuestring), gram ? gram->valuestring : NULL, out, err);
    if (!rc) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "multi2");
        cJSON *fp = meta ? cJSON_GetObjectItemCaseSensitive(meta, "floor_plan") : NULL;
        cJSON *room = meta ? cJSON_GetObjectItemCaseSensitive(meta, "room_type") : NULL;
        if (cJSON_IsNumber(fp)) out->plan = fp->valueint;
        if (cJSON_IsNumber(room) && room->valueint >= 0 && room->valueint < 4) out->room = room->valueint;
    }
    sx_free(&L.t);
    free(L.ents);
    free(L.by_name);
    free(L.cls);
    cJSON_Delete(root);
    return rc;
}

int m2_aw_load_twpddl(const char *path, m2_aw_scene *out, m2_err *err) {
    char *text = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    if (m2_read_file(path, &text, &len, err)) return -1;
    int rc = m2_aw_load_twpddl_text(text, len, path, out, err);
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- writer */

static void goal_text(const m2_aw_scene *s, m2_strbuf *d) {
    const m2_aw_goal *g = &s->goal;
    const char *o = g->obj_cls >= 0 ? s->cls_name[g->obj_cls] : "None";
    const char *r = g->recep_cls >= 0 ? s->cls_name[g->recep_cls] : "None";
    m2_strbuf_puts(d, "    (:goal\n        (and\n");
    if (g->type == M2_AW_LOOK) {
        m2_strbuf_appendf(d, "            (exists (?ot - object ?a - agent ?l - location)\n"
                             "                (and (objectType ?ot %sType) (toggleable ?ot) (isToggled ?ot) (objectAtLocation ?ot ?l) (atLocation ?a ?l)))\n"
                             "            (exists (?o - object ?a - agent)\n"
                             "                (and (objectType ?o %sType) (holds ?a ?o)))\n", s->cls_name[g->toggle_cls], o);
    } else if (g->type == M2_AW_PICK_TWO) {
        m2_strbuf_appendf(d, "            (exists (?r - receptacle)\n"
                             "                (exists (?o1 - object)\n"
                             "                    (and (inReceptacle ?o1 ?r) (objectType ?o1 %sType) (receptacleType ?r %sType)\n"
                             "                        (exists (?o2 - object)\n"
                             "                            (and (not (= ?o1 ?o2)) (objectType ?o2 %sType) (receptacleType ?r %sType) (inReceptacle ?o2 ?r))))))\n",
                          o, r, o, r);
    } else {
        const char *st = g->type == M2_AW_CLEAN ? "(cleanable ?o) (isClean ?o) " : g->type == M2_AW_HEAT ? "(heatable ?o) (isHot ?o) "
                       : g->type == M2_AW_COOL ? "(coolable ?o) (isCool ?o) " : "";
        m2_strbuf_appendf(d, "            (exists (?r - receptacle)\n"
                             "                (exists (?o - object)\n"
                             "                    (and %s(inReceptacle ?o ?r) (objectType ?o %sType) (receptacleType ?r %sType))))\n", st, o, r);
    }
    if (g->all_closed) m2_strbuf_puts(d, "            (forall (?re - receptacle) (not (opened ?re)))\n");
    m2_strbuf_puts(d, "        )\n    )\n");
}

char *m2_aw_write_problem(const m2_aw_scene *s, m2_err *err) {
    m2_strbuf d = {0};
    char m[M2_AW_ID_MAX * 2];
    uint8_t *ocls = calloc((size_t)s->n_cls, 1), *rcls = calloc((size_t)s->n_cls, 1);
    if (!ocls || !rcls) { free(ocls); free(rcls); m2_errorf(err, M2_ENOMEM, "out of memory"); return NULL; }
    for (int i = 0; i < s->n_obj; i++) ocls[s->objs[i].cls] = 1;
    for (int i = 0; i < s->n_recep; i++) rcls[s->receps[i].cls] = 1;
    if (s->goal.obj_cls >= 0) ocls[s->goal.obj_cls] = 1;
    if (s->goal.toggle_cls >= 0) ocls[s->goal.toggle_cls] = 1;
    if (s->goal.recep_cls >= 0) rcls[s->goal.recep_cls] = 1;
    m2_strbuf_puts(&d, "(define (problem plan_multi2)\n    (:domain alfred)\n    (:objects\n        agent1 - agent\n");
    for (int c = 0; c < s->n_cls; c++) if (ocls[c]) m2_strbuf_appendf(&d, "        %sType - otype\n", s->cls_name[c]);
    for (int c = 0; c < s->n_cls; c++) if (rcls[c]) m2_strbuf_appendf(&d, "        %sType - rtype\n", s->cls_name[c]);
    for (int i = 0; i < s->n_obj; i++) { m2_aw_mangle(s->objs[i].id, m, sizeof m); m2_strbuf_appendf(&d, "        %s - object\n", m); }
    for (int i = 0; i < s->n_recep; i++) { m2_aw_mangle(s->receps[i].id, m, sizeof m); m2_strbuf_appendf(&d, "        %s - receptacle\n", m); }
    for (int i = 0; i < s->n_loc; i++) { m2_aw_mangle(s->loc_id[i], m, sizeof m); m2_strbuf_appendf(&d, "        %s - location\n", m); }
    m2_strbuf_puts(&d, "    )\n    (:init\n");
    m2_aw_mangle(s->loc_id[s->start_loc], m, sizeof m);
    m2_strbuf_appendf(&d, "        (atLocation agent1 %s)\n", m);
    for (int i = 0; i < s->n_recep; i++) {
        char l[M2_AW_ID_MAX * 2];
        m2_aw_mangle(s->receps[i].id, m, sizeof m);
        m2_aw_mangle(s->loc_id[s->receps[i].loc], l, sizeof l);
        m2_strbuf_appendf(&d, "        (receptacleType %s %sType)\n        (receptacleAtLocation %s %s)\n", m, s->cls_name[s->receps[i].cls], m, l);
        if (s->receps[i].openable) m2_strbuf_appendf(&d, "        (openable %s)\n", m);
        if (s->init_opened[i]) m2_strbuf_appendf(&d, "        (opened %s)\n", m);
    }
    for (int i = 0; i < s->n_obj; i++) {
        m2_aw_mangle(s->objs[i].id, m, sizeof m);
        m2_strbuf_appendf(&d, "        (objectType %s %sType)\n", m, s->cls_name[s->objs[i].cls]);
        int r = s->init_in[i];
        if (r >= 0) {
            char rm[M2_AW_ID_MAX * 2], l[M2_AW_ID_MAX * 2];
            m2_aw_mangle(s->receps[r].id, rm, sizeof rm);
            m2_aw_mangle(s->loc_id[s->receps[r].loc], l, sizeof l);
            m2_strbuf_appendf(&d, "        (inReceptacle %s %s)\n        (objectAtLocation %s %s)\n", m, rm, m, l);
        } else if (s->floor_loc[i] >= 0) {
            char l[M2_AW_ID_MAX * 2];
            m2_aw_mangle(s->loc_id[s->floor_loc[i]], l, sizeof l);
            m2_strbuf_appendf(&d, "        (objectAtLocation %s %s)\n", m, l);
        }
        for (size_t k = 0; k < sizeof fact_flags / sizeof fact_flags[0]; k++)
            if (s->objs[i].flags & fact_flag_bits[k]) m2_strbuf_appendf(&d, "        (%s %s)\n", fact_flags[k], m);
        for (size_t k = 0; k < sizeof fact_state / sizeof fact_state[0]; k++)
            if (s->init_bits[i] & fact_state_bits[k]) m2_strbuf_appendf(&d, "        (%s %s)\n", fact_state[k], m);
    }
    if (s->init_held >= 0) {
        m2_aw_mangle(s->objs[s->init_held].id, m, sizeof m);
        m2_strbuf_appendf(&d, "        (holds agent1 %s)\n        (holdsAny agent1)\n", m);
    }
    for (int r = 0; r < s->n_cls; r++) {
        if (!rcls[r]) continue;
        for (int o = 0; o < s->n_cls; o++)
            if (ocls[o] && s->can_contain[r * s->n_cls + o]) m2_strbuf_appendf(&d, "        (canContain %sType %sType)\n", s->cls_name[r], s->cls_name[o]);
    }
    m2_strbuf_puts(&d, "    )\n");
    goal_text(s, &d);
    m2_strbuf_puts(&d, ")\n");
    free(ocls);
    free(rcls);
    char *text = m2_strbuf_take(&d);
    if (!text) m2_errorf(err, M2_ENOMEM, "out of memory");
    return text;
}

static const char *const room_names[] = {"kitchen", "living room", "bedroom", "bathroom"};

char *m2_aw_write_twpddl(const m2_aw_scene *s, const m2_aw_tables *t, m2_err *err) {
    char *problem = m2_aw_write_problem(s, err);
    if (!problem) return NULL;
    /* task description without the "Your task is to: " prefix and the final period */
    char desc[256];
    const char *tt = s->task_text;
    if (!strncmp(tt, "Your task is to: ", 17)) tt += 17;
    snprintf(desc, sizeof desc, "%s", tt);
    size_t dl = strlen(desc);
    if (dl && desc[dl - 1] == '.') desc[dl - 1] = 0;
    m2_strbuf g = {0};
    if (t && t->grammar_text && strstr(t->grammar_text, "UNKNOWN GOAL")) {
        const char *p = t->grammar_text, *q;
        while ((q = strstr(p, "UNKNOWN GOAL"))) {
            m2_strbuf_append(&g, p, (size_t)(q - p));
            m2_strbuf_puts(&g, desc);
            p = q + 12;
        }
        m2_strbuf_puts(&g, p);
    } else {
        m2_strbuf_appendf(&g, "grammar :: \"\"\"\n    {\n        \"task\": [\n            {\n                \"rhs\": \"Your task is to: %s.\"\n"
                              "            }\n        ]\n    }\n\"\"\";\n", desc);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pddl_domain", t && t->domain_text ? t->domain_text
                                                : ";; multi2: the alfred domain is built into the engine (src/env/alfworld)\n");
    cJSON_AddStringToObject(o, "grammar", m2_strbuf_str(&g));
    cJSON_AddStringToObject(o, "pddl_problem", problem);
    cJSON_AddBoolToObject(o, "solvable", 1);
    cJSON *meta = cJSON_AddObjectToObject(o, "multi2");
    cJSON_AddNumberToObject(meta, "floor_plan", s->plan);
    cJSON_AddNumberToObject(meta, "room_type", s->room);
    if (s->room >= 0 && s->room < 4) cJSON_AddStringToObject(meta, "room", room_names[s->room]);
    cJSON_AddStringToObject(meta, "task_type", m2_aw_task_type_name(s->goal.type) ? m2_aw_task_type_name(s->goal.type) : "?");
    cJSON_AddStringToObject(meta, "source", s->source);
    char *out = cJSON_Print(o);
    cJSON_Delete(o);
    free(problem);
    int oom = g.oom;
    m2_strbuf_free(&g);
    if (!out || oom) { free(out); m2_errorf(err, M2_ENOMEM, "out of memory"); return NULL; }
    return out;
}

int m2_aw_save_twpddl(const m2_aw_scene *s, const m2_aw_tables *t, const char *path, m2_err *err) {
    char *text = m2_aw_write_twpddl(s, t, err);
    if (!text) return -1;
    int rc = m2_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

int m2_aw_export(const m2_aw_tables *t, int type, m2_split split, int count, uint64_t seed, const char *out_dir, m2_err *err) {
    static const char *const split_dirs[] = {"train", "valid_seen", "valid_unseen"};
    if ((int)split < 0 || split > 2) return m2_errorf(err, M2_EINVAL, "alfworld export: bad split %d", (int)split);
    int total = m2_aw_num_generated(type, split);
    if (count < 0 || count > total) count = total;
    for (int i = 0; i < count; i++) {
        m2_aw_scene s;
        if (m2_aw_generate(t, type, split, i, seed, &s, err)) return -1;
        const m2_aw_goal *g = &s.goal;
        int second = g->type == M2_AW_LOOK ? g->toggle_cls : g->recep_cls;
        char dir[4096], path[4200];
        snprintf(dir, sizeof dir, "%s/%s/%s-%s-None-%s-%d/trial_multi2_%05d", out_dir, split_dirs[split],
                 m2_aw_task_type_name(g->type), s.cls_name[g->obj_cls], second >= 0 ? s.cls_name[second] : "None", s.plan, i);
        snprintf(path, sizeof path, "%s/game.tw-pddl", dir);
        int rc = m2_mkdir_p(dir, err);
        if (!rc) rc = m2_aw_save_twpddl(&s, t, path, err);
        m2_aw_scene_free(&s);
        if (rc) return -1;
    }
    return count;
}
