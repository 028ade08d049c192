/* ScienceWorld input: referents, the action templates, the matcher with its ambiguity dialogue,
 * and the actions themselves with their messages (after the original's input/InputParser.scala and
 * actions/ sources). */
#include "env/scienceworld/sw.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- actions ---------------- */

enum {
    A_OPEN, A_CLOSE, A_ACTIVATE, A_DEACTIVATE, A_LOOK_AROUND, A_LOOK_AT, A_LOOK_IN, A_MOVE, A_PICK_UP,
    A_PUT_DOWN, A_POUR, A_FOCUS, A_GO, A_WAIT, A_WAIT1, A_INVENTORY, A_TASK, A_RESET_TASK, A_EAT,
    A_USE, A_READ, A_MIX, A_DUNK, A_CONNECT, A_DISCONNECT, A_FLUSH, A_COUNT
};

typedef struct action_def {
    const char *name;     /* the original's action name (what it sorts equal template ids by) */
    const char *pat[4];   /* "alt1|alt2" or "$" (an object slot); the first alternative is the template's */
    int npat;
    int free;             /* takes no time */
    int template_id;      /* the original's action id (input/ActionDefinitions.scala) */
} action_def;

/* The parser's grammar and the action templates the API lists are this one table: a template is a
 * row's first alternatives with "OBJ" for each slot (ActionTrigger.mkHumanReadableExample). The
 * teleport action exists only under a simplification multi2 does not model, so it is not here. */
static const action_def actions[A_COUNT] = {
    [A_OPEN] = {"open door", {"open", "$"}, 2, 0, 0},
    [A_CLOSE] = {"close door", {"close", "$"}, 2, 0, 1},
    [A_GO] = {"move through door", {"go|go through|walk through|move through|go to|walk to|move to|go into|move into", "$"}, 2, 0, 2},
    [A_LOOK_AROUND] = {"look around", {"look around|look"}, 1, 1, 3},
    [A_LOOK_AT] = {"look at", {"look at|look on|examine", "$"}, 2, 0, 4},
    [A_LOOK_IN] = {"look in", {"look in", "$"}, 2, 0, 5},
    [A_ACTIVATE] = {"activate", {"activate|turn on", "$"}, 2, 0, 6},
    [A_DEACTIVATE] = {"deactivate", {"deactivate|turn off", "$"}, 2, 0, 7},
    [A_EAT] = {"eat", {"eat|consume", "$"}, 2, 0, 8},
    [A_MOVE] = {"move object", {"move|put", "$", "to|in|into|on", "$"}, 4, 0, 9},
    [A_POUR] = {"pour object", {"pour", "$", "in|into|on|to", "$"}, 4, 0, 10},
    [A_FOCUS] = {"focus on", {"focus on|focus", "$"}, 2, 0, 11},
    [A_RESET_TASK] = {"reset task", {"reset task"}, 1, 0, 12},
    [A_USE] = {"use object", {"use", "$", "on|with", "$"}, 4, 0, 13},
    [A_READ] = {"read", {"read", "$"}, 2, 0, 14},
    [A_FLUSH] = {"flush", {"flush", "$"}, 2, 0, 15},
    [A_CONNECT] = {"connect electrically", {"connect", "$", "to|in|into", "$"}, 4, 0, 16},
    [A_DISCONNECT] = {"disconnect electrically", {"disconnect", "$"}, 2, 0, 17},
    [A_WAIT1] = {"wait1", {"wait1"}, 1, 0, 18},
    [A_WAIT] = {"wait10", {"wait"}, 1, 0, 19},
    [A_INVENTORY] = {"view inventory", {"inventory"}, 1, 1, 20},
    [A_PICK_UP] = {"pick up", {"pick up|get|take", "$"}, 2, 0, 21},
    [A_PUT_DOWN] = {"put down", {"put down|drop", "$"}, 2, 0, 22},
    [A_MIX] = {"mix", {"mix|stir", "$"}, 2, 0, 23},
    [A_TASK] = {"task description", {"task"}, 1, 1, 24},
    [A_DUNK] = {"dunk object", {"dunk", "$", "in|into", "$"}, 4, 0, 26},
};

/* ---------------- tokenizing ---------------- */

/* Lower-case, collapse whitespace, drop the stop words a/an/the (InputParser.tokenize). */
static void tokenize(const char *in, char *out, size_t cap) {
    /* fast path: already lower-case, single-spaced, without stop words */
    size_t L = strlen(in);
    if (L < cap && L && in[0] != ' ' && in[L - 1] != ' ') {
        int clean = 1;
        for (size_t i = 0; i < L && clean; i++) {
            char ch = in[i];
            if ((ch >= 'A' && ch <= 'Z') || (ch != ' ' && isspace((unsigned char)ch)) || (ch & 0x80)) clean = 0;
            else if (ch == ' ' && in[i + 1] == ' ') clean = 0;
            else if ((i == 0 || in[i - 1] == ' ') && ch == 'a' && (in[i + 1] == ' ' || !in[i + 1] || (in[i + 1] == 'n' && (in[i + 2] == ' ' || !in[i + 2])))) clean = 0;
            else if ((i == 0 || in[i - 1] == ' ') && !strncmp(in + i, "the", 3) && (in[i + 3] == ' ' || !in[i + 3])) clean = 0;
        }
        if (clean) { memcpy(out, in, L + 1); return; }
    }
    size_t n = 0;
    const char *p = in;
    while (*p) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *s = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        size_t len = (size_t)(p - s);
        char tok[64];
        size_t tl = len < sizeof tok - 1 ? len : sizeof tok - 1;
        for (size_t i = 0; i < tl; i++) tok[i] = (char)tolower((unsigned char)s[i]);
        tok[tl] = 0;
        if (len < sizeof tok - 1 && (!strcmp(tok, "a") || !strcmp(tok, "an") || !strcmp(tok, "the"))) continue;
        if (n && n + 1 < cap) out[n++] = ' ';
        for (size_t i = 0; i < len && n + 1 < cap; i++) out[n++] = (char)tolower((unsigned char)s[i]);
    }
    out[n] = 0;
}

/* ---------------- referents ---------------- */

static void add_ref(m2_sw_refs *r, const char *s) {
    if (r->n >= M2_SW_MAX_REFS || strlen(s) <= 1) return;
    char t[M2_SW_REF_LEN];
    tokenize(s, t, sizeof t);
    if (strlen(t) <= 1) return;
    for (int i = 0; i < r->n; i++) if (!strcmp(r->r[i], t)) return;
    snprintf(r->r[r->n++], M2_SW_REF_LEN, "%s", t);
}

/* Content-specific references for cups/pots ("cup containing water"). */
static void content_refs(const m2_sw_world *w, int obj, const char *const *base, int nb, m2_sw_refs *r) {
    char cont[M2_SW_REF_LEN * 2] = "";
    int kids[64];
    int k = m2_sw_children(w, obj, kids, 64, 0);
    char names[16][M2_SW_NAME * 2];
    int nn = 0;
    for (int i = 0; i < k && nn < 16; i++) {
        if (w->o[kids[i]].flags & M2_SW_F_HIDDEN) continue;
        m2_sw_descript_name(w, kids[i], names[nn++], sizeof names[0]);
    }
    for (int i = 1; i < nn; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[M2_SW_NAME * 2];
            memcpy(t, names[j], sizeof t); memcpy(names[j], names[j - 1], sizeof t); memcpy(names[j - 1], t, sizeof t);
        }
    if (!nn) snprintf(cont, sizeof cont, "nothing");
    for (int i = 0; i < nn; i++) {
        if (i) strncat(cont, " and ", sizeof cont - strlen(cont) - 1);
        strncat(cont, names[i], sizeof cont - strlen(cont) - 1);
    }
    for (int i = 0; i < nb; i++) {
        char t[M2_SW_REF_LEN * 3];
        add_ref(r, base[i]);
        snprintf(t, sizeof t, "%s containing %s", base[i], cont);
        if (strlen(t) < M2_SW_REF_LEN) add_ref(r, t);
    }
}

/* The object's own referents (getReferents), from the perspective of `persp` (for doors). */
static void base_referents(const m2_sw_world *w, int obj, int persp, m2_sw_refs *r) {
    const m2_sw_obj *o = &w->o[obj];
    char dn[M2_SW_NAME * 2], t[M2_SW_REF_LEN];
    m2_sw_descript_name(w, obj, dn, sizeof dn);
    const char *mat = o->mat >= 0 ? m2_sw_materials[o->mat].name : "";
    switch (o->kind) {
    case M2_SW_K_UNIVERSE: add_ref(r, "universe"); break;
    case M2_SW_K_ROOM: add_ref(r, "room"); add_ref(r, o->name); break;
    case M2_SW_K_OUTSIDE: add_ref(r, "outside"); add_ref(r, o->name); break;
    case M2_SW_K_AGENT: add_ref(r, "agent"); add_ref(r, "self"); break;
    case M2_SW_K_INVENTORY: add_ref(r, "inventory"); break;
    case M2_SW_K_DOOR: {
        int other = persp != M2_SW_NONE ? m2_sw_door_other(w, obj, persp) : M2_SW_NONE;
        add_ref(r, "door");
        if (other != M2_SW_NONE) {
            snprintf(t, sizeof t, "door to %s", w->o[other].name); add_ref(r, t);
            snprintf(t, sizeof t, "%s door", w->o[other].name); add_ref(r, t);
        } else {
            snprintf(t, sizeof t, "door from %s to %s", w->o[o->door_a].name, w->o[o->door_b].name); add_ref(r, t);
            snprintf(t, sizeof t, "door from %s to %s", w->o[o->door_b].name, w->o[o->door_a].name); add_ref(r, t);
        }
        break;
    }
    case M2_SW_K_SUBSTANCE: add_ref(r, "substance"); add_ref(r, o->name); break;
    case M2_SW_K_CUP: case M2_SW_K_FLOWERPOT: case M2_SW_K_BOOKSHELF: {
        const char *base[4]; int nb = 0;
        if (!strcmp(o->name, "metal pot")) { base[nb++] = "pot"; base[nb++] = "metal pot"; }
        else if (!strcmp(o->name, "bowl")) { base[nb++] = "bowl"; base[nb++] = "wood bowl"; }
        else if (!strcmp(o->name, "jug")) { base[nb++] = "jug"; }
        else if (!strcmp(o->name, "glass jar")) { base[nb++] = "jar"; base[nb++] = "glass jar"; }
        else if (o->kind == M2_SW_K_FLOWERPOT) { base[nb++] = "pot"; base[nb++] = "flower pot"; }
        else if (o->kind == M2_SW_K_BOOKSHELF) { base[nb++] = "shelf"; base[nb++] = "book shelf"; }
        else if (strstr(o->name, "cup")) { base[nb++] = "cup"; }
        base[nb++] = o->name;
        content_refs(w, obj, base, nb, r);
        break;
    }
    case M2_SW_K_SURFACE: case M2_SW_K_CLOSABLE: case M2_SW_K_BED: case M2_SW_K_COUCH: {
        add_ref(r, o->name);
        if (*mat) { snprintf(t, sizeof t, "%s %s", mat, o->name); add_ref(r, t); }
        if (!strcmp(o->name, "large cupboard")) add_ref(r, "cupboard");
        if (!strcmp(o->name, "ultra low temperature freezer")) add_ref(r, "freezer");
        break;
    }
    case M2_SW_K_DRAWER: add_ref(r, "drawer"); add_ref(r, "wood table"); break;
    case M2_SW_K_BEEHIVE: add_ref(r, "bee hive"); add_ref(r, "hive"); add_ref(r, "beehive"); break;
    case M2_SW_K_STOVE: add_ref(r, "stove"); break;
    case M2_SW_K_OVEN:
        if (!strcmp(o->name, "blast furnace")) add_ref(r, "furnace");
        add_ref(r, o->name);
        break;
    case M2_SW_K_ANIMAL: {
        const char *stage = m2_sw_life_stage_name(w, obj);
        add_ref(r, "living thing"); add_ref(r, "organism"); add_ref(r, o->name); add_ref(r, dn);
        snprintf(t, sizeof t, "%s %s", stage, o->name); add_ref(r, t);
        snprintf(t, sizeof t, "%s %s", stage, dn); add_ref(r, t);
        break;
    }
    case M2_SW_K_PLANT: {
        /* FruitingTree.getReferents; a sickly plant answers to all of them with "sick " in front too */
        const char *stage = m2_sw_life_stage_name(w, obj);
        int first = r->n;
        add_ref(r, "living thing"); add_ref(r, "organism"); add_ref(r, o->name);
        snprintf(t, sizeof t, "%s in the %s stage", o->name, stage); add_ref(r, t);
        snprintf(t, sizeof t, "%s plant", stage); add_ref(r, t);
        snprintf(t, sizeof t, "%s %s", stage, o->name); add_ref(r, t);
        if (o->sickly) {
            int last = r->n;
            for (int i = first; i < last; i++) { snprintf(t, sizeof t, "sick %.100s", r->r[i]); add_ref(r, t); }
        }
        break;
    }
    case M2_SW_K_FLOWER:
        add_ref(r, "flower"); add_ref(r, o->name);
        if (o->extra > 0) { add_ref(r, "wilting flower"); snprintf(t, sizeof t, "wilting %s", o->name); add_ref(r, t); }
        break;
    case M2_SW_K_POLLEN:
        add_ref(r, "pollen");
        if (o->door_a != M2_SW_NONE) { snprintf(t, sizeof t, "%s pollen", w->o[o->door_a].alt); add_ref(r, t); }
        break;
    case M2_SW_K_ANSWERBOX: add_ref(r, "box"); add_ref(r, o->name); break;
    case M2_SW_K_PLANE:
        /* InclinedPlane.getReferents */
        add_ref(r, "inclined plane"); add_ref(r, "plane"); add_ref(r, dn);
        if (o->alt[0]) {
            snprintf(t, sizeof t, "inclined plane %s", o->alt); add_ref(r, t);
            snprintf(t, sizeof t, "plane %s", o->alt); add_ref(r, t);
            /* dn (up to 2 names) and the label can exceed one referent: a cut-off name would
             * match nothing a player types, so a referent that does not fit is left out */
            char dl[sizeof dn + M2_SW_NAME];
            snprintf(dl, sizeof dl, "%s %s", dn, o->alt);
            if (strlen(dl) < M2_SW_REF_LEN) add_ref(r, dl);
        }
        break;
    case M2_SW_K_STOPWATCH: add_ref(r, "stopwatch"); add_ref(r, "watch"); add_ref(r, "timer"); add_ref(r, o->name); break;
    case M2_SW_K_PICTURE:
        add_ref(r, o->name);
        snprintf(t, sizeof t, "%s of %s", o->name, o->alt); add_ref(r, t);
        break;
    case M2_SW_K_BOOK:
        add_ref(r, "book"); add_ref(r, o->alt);
        snprintf(t, sizeof t, "book by %s", o->alt2); add_ref(r, t);
        snprintf(t, sizeof t, "%s book", o->alt); add_ref(r, t);
        add_ref(r, o->name);
        snprintf(t, sizeof t, "%s by %s", o->name, o->alt2); add_ref(r, t);
        snprintf(t, sizeof t, "%s called %s", o->name, o->alt); add_ref(r, t);
        break;
    case M2_SW_K_TERMINAL: {
        const char *pn = o->parent != M2_SW_NONE ? w->o[o->parent].name : "";
        add_ref(r, "terminal"); add_ref(r, o->name);
        snprintf(t, sizeof t, "%s on %s", o->name, pn); add_ref(r, t);
        snprintf(t, sizeof t, "%s %s", pn, o->name); add_ref(r, t);
        break;
    }
    case M2_SW_K_LIGHTBULB:
        if (strstr(o->name, "light bulb")) { add_ref(r, "light"); add_ref(r, "light bulb"); }
        else if (strstr(o->name, "motor")) { add_ref(r, "motor"); add_ref(r, "electric motor"); }
        else if (strstr(o->name, "buzzer")) { add_ref(r, "buzzer"); add_ref(r, "electric buzzer"); }
        add_ref(r, o->name);
        break;
    case M2_SW_K_SWITCH: case M2_SW_K_WIRE: add_ref(r, "component"); add_ref(r, o->name); break;
    case M2_SW_K_PAINT: add_ref(r, "paint"); add_ref(r, o->name); break;
    case M2_SW_K_RECIPE:
        add_ref(r, o->name); add_ref(r, o->alt);
        snprintf(t, sizeof t, "%s called %s", o->name, o->alt); add_ref(r, t);
        break;
    case M2_SW_K_BATTERY: add_ref(r, "generator"); add_ref(r, o->name); break;
    case M2_SW_K_THING:
        add_ref(r, o->name); add_ref(r, dn);
        if (!strcmp(o->name, "metal fork")) add_ref(r, "steel fork");
        if (!strcmp(o->name, "plastic fork")) add_ref(r, "plastic fork");
        if (!strcmp(o->name, "paper clip")) add_ref(r, "steel paper clip");
        if (strstr(o->name, "unknown substance")) add_ref(r, "unknown substance");
        if (strstr(o->name, " block")) add_ref(r, "block");
        break;
    case M2_SW_K_FOOD:
        add_ref(r, o->name); add_ref(r, dn);
        if (!strcmp(o->name, "apple")) add_ref(r, "red apple");
        if (!strcmp(o->name, "apricot")) add_ref(r, "orange apricot");
        if (!strcmp(o->name, "jam")) add_ref(r, "red jam");
        break;
    default: add_ref(r, o->name); add_ref(r, dn); break;
    }
}

/* Joins two already-tokenized referents ("apple" + " in " + "bowl"): no re-tokenizing needed. */
static void add_join(m2_sw_refs *r, const char *a, const char *mid, const char *b) {
    size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
    if (r->n >= M2_SW_MAX_REFS || la + lm + lb >= M2_SW_REF_LEN) return;
    char *d = r->r[r->n];
    memcpy(d, a, la);
    memcpy(d + la, mid, lm);
    memcpy(d + la + lm, b, lb + 1);
    for (int i = 0; i < r->n; i++) if (!strcmp(r->r[i], d)) return;
    r->n++;
}

void m2_sw_object_referents(const m2_sw_world *w, int obj, int persp, m2_sw_refs *out) {
    m2_sw_refs base = {0};
    base_referents(w, obj, persp, &base);
    out->n = 0;
    int c = w->o[obj].parent;
    m2_sw_refs cref = {0};
    if (c != M2_SW_NONE) base_referents(w, c, persp, &cref);
    /* the bare referents first, so a long container list cannot crowd them out of M2_SW_MAX_REFS */
    for (int i = 0; i < base.n; i++) add_join(out, base.r[i], "", "");
    for (int i = 0; i < base.n; i++) {
        for (int j = 0; j < cref.n; j++) {
            add_join(out, base.r[i], " in ", cref.r[j]);
            add_join(out, base.r[i], " on ", cref.r[j]);
        }
    }
}

/* ---------------- visibility ---------------- */

static int vis_add(int *out, int n, int cap, int id) {
    for (int i = 0; i < n; i++) if (out[i] == id) return n;
    if (n < cap) out[n++] = id;
    return n;
}

static int accessible_rec(const m2_sw_world *w, int parent, int *out, int n, int cap) {
    int kids[M2_SW_MAX_OBJ];
    int k = m2_sw_children(w, parent, kids, M2_SW_MAX_OBJ, 0);
    for (int i = 0; i < k; i++) {
        n = vis_add(out, n, cap, kids[i]);
        if (w->o[kids[i]].flags & M2_SW_F_OPEN) n = accessible_rec(w, kids[i], out, n, cap);
    }
    return n;
}

int m2_sw_visible_objects(const m2_sw_world *w, int *out, int cap) {
    int room = w->o[w->agent].parent;
    int n = 0;
    n = vis_add(out, n, cap, room);
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].kind != M2_SW_K_DOOR) continue;
        int other = m2_sw_door_other(w, i, room);
        if (other == M2_SW_NONE) continue;
        n = vis_add(out, n, cap, i);
        n = vis_add(out, n, cap, other);
    }
    n = accessible_rec(w, room, out, n, cap);
    n = vis_add(out, n, cap, w->agent);
    n = accessible_rec(w, w->agent, out, n, cap);
    /* electrical terminals of everything visible (hidden ones too: the parser sees them) */
    int base = n;
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].kind != M2_SW_K_TERMINAL || (w->o[i].flags & M2_SW_F_DELETED)) continue;
        int p = w->o[i].parent;
        for (int j = 0; j < base; j++) if (out[j] == p) { n = vis_add(out, n, cap, i); break; }
    }
    /* deterministic order: by id */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) { int t = out[j]; out[j] = out[j - 1]; out[j - 1] = t; }
    return n;
}

static void compute_visible(m2_sw_session *s) {
    if (s->vis_valid) return;
    s->vis_valid = 1;
    s->n_vis = m2_sw_visible_objects(&s->w, s->vis, M2_SW_MAX_OBJ);
    int room = s->w.o[s->w.agent].parent;
    for (int i = 0; i < s->n_vis; i++) m2_sw_object_referents(&s->w, s->vis[i], room, &s->refs[i]);
}

void m2_sw_session_referent(m2_sw_session *s, int obj, char *buf, size_t cap) {
    compute_visible(s);
    buf[0] = 0;
    int vi = -1;
    for (int i = 0; i < s->n_vis; i++) if (s->vis[i] == obj) vi = i;
    if (vi < 0) return;
    const char *best = NULL;
    for (int k = 0; k < s->refs[vi].n; k++) {
        const char *ref = s->refs[vi].r[k];
        int shared = 0;
        for (int j = 0; j < s->n_vis && !shared; j++) {
            if (j == vi) continue;
            for (int m = 0; m < s->refs[j].n; m++) if (!strcmp(s->refs[j].r[m], ref)) { shared = 1; break; }
        }
        if (shared) continue;
        if (!best || strlen(ref) < strlen(best) || (strlen(ref) == strlen(best) && strcmp(ref, best) < 0)) best = ref;
    }
    if (!best) {
        /* no referent of its own (identical objects, e.g. two "pea seed"s): its name, which raises the
         * ambiguity dialogue, rather than the first referent (a generic one such as "living thing") */
        for (int k = 0; k < s->refs[vi].n && !best; k++)
            if (!strcmp(s->refs[vi].r[k], s->w.o[obj].name)) best = s->refs[vi].r[k];
        if (!best) best = s->refs[vi].n ? s->refs[vi].r[0] : "";
    }
    snprintf(buf, cap, "%s", best);
}

/* ---------------- matching ---------------- */

typedef struct match_set { m2_sw_match m[M2_SW_MAX_MATCH]; int n; } match_set;

static void push_match(match_set *ms, int action, const int *objs, int nobj) {
    for (int i = 0; i < ms->n; i++) {
        if (ms->m[i].action != action) continue;
        int same = 1;
        for (int k = 0; k < nobj; k++) if (ms->m[i].obj[k] != objs[k]) same = 0;
        if (same) return;
    }
    if (ms->n >= M2_SW_MAX_MATCH) return;
    m2_sw_match *m = &ms->m[ms->n++];
    m->action = (int16_t)action;
    m->obj[0] = (int16_t)(nobj > 0 ? objs[0] : M2_SW_NONE);
    m->obj[1] = (int16_t)(nobj > 1 ? objs[1] : M2_SW_NONE);
}

static const char *skip_spaces(const char *s) { while (*s == ' ') s++; return s; }

/* in starts with the L characters of w as whole words: what follows is a space or the end (the
 * original matches tokens, so "opencupboard" is no "open cupboard") */
static int starts_words(const char *in, const char *w, size_t L) { return !strncmp(in, w, L) && (in[L] == ' ' || !in[L]); }

static void match_rec(m2_sw_session *s, int action, int pi, const char *in, int *objs, int nobj, match_set *ms) {
    const action_def *a = &actions[action];
    if (pi >= a->npat || pi >= 4) {
        if (!*skip_spaces(in)) push_match(ms, action, objs, nobj);
        return;
    }
    const char *pat = a->pat[pi];
    if (!strcmp(pat, "$")) {
        for (int i = 0; i < s->n_vis; i++)
            for (int k = 0; k < s->refs[i].n; k++) {
                const char *ref = s->refs[i].r[k];
                size_t L = strlen(ref);
                if (!starts_words(in, ref, L)) continue;
                objs[nobj] = s->vis[i];
                match_rec(s, action, pi + 1, skip_spaces(in + L), objs, nobj + 1, ms);
            }
        return;
    }
    const char *p = pat;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t L = e ? (size_t)(e - p) : strlen(p);
        if (starts_words(in, p, L)) match_rec(s, action, pi + 1, skip_spaces(in + L), objs, nobj, ms);
        p += L;
        if (*p == '|') p++;
    }
}

static void first_alt(const char *pat, char *buf, size_t cap) {
    const char *e = strchr(pat, '|');
    size_t L = e ? (size_t)(e - pat) : strlen(pat);
    if (L >= cap) L = cap - 1;
    memcpy(buf, pat, L);
    buf[L] = 0;
}

/* ---------------- action templates ---------------- */

static int template_by_text(const void *a, const void *b) {
    return strcmp(((const m2_sw_template *)a)->text, ((const m2_sw_template *)b)->text);
}

static int template_by_id(const void *a, const void *b) {   /* ActionHandler.getActions: by (id, name) */
    const m2_sw_template *x = a, *y = b;
    return x->id != y->id ? (x->id > y->id) - (x->id < y->id) : strcmp(x->name, y->name);
}

int m2_sw_action_templates(m2_sw_template *out, int cap, int by_id) {
    int n = 0;
    for (int a = 0; a < A_COUNT && n < cap; a++) {
        m2_sw_template *t = &out[n++];
        *t = (m2_sw_template){.name = actions[a].name, .id = actions[a].template_id};
        for (int i = 0; i < actions[a].npat; i++) {
            char alt[64];
            const char *word = alt;
            if (!strcmp(actions[a].pat[i], "$")) { word = "OBJ"; t->n_obj++; }
            else first_alt(actions[a].pat[i], alt, sizeof alt);
            size_t len = strlen(t->text);
            snprintf(t->text + len, sizeof t->text - len, "%s%s", i ? " " : "", word);
        }
    }
    qsort(out, (size_t)n, sizeof *out, by_id ? template_by_id : template_by_text);
    return n;
}

/* Human-readable form of a match, for the ambiguity dialogue ("focus on apple (in bowl, in counter)"). */
static void describe_match(const m2_sw_world *w, const m2_sw_match *m, m2_strbuf *b) {
    const action_def *a = &actions[m->action];
    int room = w->o[w->agent].parent, oi = 0;
    for (int i = 0; i < a->npat; i++) {
        if (i) m2_strbuf_puts(b, " ");
        if (strcmp(a->pat[i], "$")) {
            char alt[64];
            first_alt(a->pat[i], alt, sizeof alt);
            m2_strbuf_puts(b, alt);
            continue;
        }
        int obj = m->obj[oi++];
        char dn[M2_SW_NAME * 2];
        m2_strbuf_puts(b, m2_sw_descript_name(w, obj, dn, sizeof dn));
        int c = w->o[obj].parent, first = 1, guard = 0;
        if (c != M2_SW_NONE) m2_strbuf_puts(b, " (");
        while (c != M2_SW_NONE && guard++ < 32) {
            m2_strbuf_appendf(b, "%sin %s", first ? "" : ", ", w->o[c].name);
            first = 0;
            if (c == room) break;
            c = w->o[c].parent;
        }
        if (!first) m2_strbuf_puts(b, ")");
    }
}

/* ---------------- running actions ---------------- */

static void say(m2_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(m2_strbuf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    m2_strbuf_puts(b, tmp);
}

/* Checks shared by move / pick up / put down (ActionMoveObject.isValidAction). */
static int can_move(const m2_sw_world *w, int obj, int dest, m2_strbuf *b) {
    const m2_sw_obj *o = &w->o[obj], *d = &w->o[dest];
    if (!(o->flags & M2_SW_F_MOVABLE)) { say(b, "The %s is not moveable.", o->name); return 0; }
    if (obj == dest) { say(b, "You can't move something into itself."); return 0; }
    if (o->mat >= 0 && o->state == M2_SW_ST_LIQUID) {
        say(b, "You can't pick up a liquid directly.  Try pouring it from one container to another, or dunking empty containers into containers filled with the liquid.");
        return 0;
    }
    if (o->mat >= 0 && o->state == M2_SW_ST_GAS) { say(b, "You can't pick up a gas directly."); return 0; }
    if (!(d->flags & M2_SW_F_CONTAINER)) { say(b, "That can't be moved there."); return 0; }
    if (!(d->flags & M2_SW_F_OPEN)) { say(b, "That can't be moved there, because the %s isn't open.", d->name); return 0; }
    if (m2_sw_is_inside(w, dest, obj)) { say(b, "You can't move something into itself."); return 0; }
    return 1;
}

static void do_move(m2_sw_world *w, int obj, int dest, m2_strbuf *b) {
    m2_sw_move(w, obj, dest);
    if (m2_sw_is_electrically_connected(w, obj)) {
        say(b, "(disconnecting %s)", w->o[obj].name);
        m2_sw_disconnect(w, obj);
    }
    say(b, "You move the %s to the %s.", w->o[obj].name, w->o[dest].name);
}

/* ActionConnectElectrical.getTerminal: a terminal, or a plain object's free (hidden) terminal. */
static int get_terminal(m2_sw_world *w, int x, m2_strbuf *b) {
    const m2_sw_obj *o = &w->o[x];
    if (o->kind == M2_SW_K_TERMINAL) return x;
    if (o->kind == M2_SW_K_LIGHTBULB || o->kind == M2_SW_K_SWITCH || o->kind == M2_SW_K_BATTERY) {
        say(b, "Connections must specify specific points of contact on polarized electrical components (e.g. anode, cathode)");
        return M2_SW_NONE;
    }
    if (o->kind == M2_SW_K_WIRE) {
        say(b, "Connections must specify specific points of contact on unpolarized electrical components (e.g. terminal 1, terminal 2)");
        return M2_SW_NONE;
    }
    if (o->kind == M2_SW_K_ROOM || o->kind == M2_SW_K_OUTSIDE || o->kind == M2_SW_K_UNIVERSE || o->kind == M2_SW_K_DOOR || o->kind == M2_SW_K_AGENT ||
        o->kind == M2_SW_K_INVENTORY || m2_sw_ensure_terminals(w, x)) {
        say(b, "It's not clear how to connect something to %s", o->name);
        return M2_SW_NONE;
    }
    for (int k = 0; k < 2; k++) {
        int t = m2_sw_terminal_of(w, x, k);
        if (t != M2_SW_NONE && w->o[t].conn == M2_SW_NONE) return t;
    }
    say(b, "%s is already connected, and must be disconnected before it can be connected to something else", o->name);
    return M2_SW_NONE;
}

static int run_action(m2_sw_session *s, const m2_sw_match *m) {
    m2_sw_world *w = &s->w;
    m2_strbuf *b = &s->out;
    int x = m->obj[0], y = m->obj[1];
    m2_sw_obj *ox = x != M2_SW_NONE ? &w->o[x] : NULL;
    switch (m->action) {
    case A_OPEN: case A_CLOSE: {
        int open = m->action == A_OPEN;
        const char *verb = open ? "open" : "closed";
        if (ox->kind == M2_SW_K_DOOR || (ox->flags & M2_SW_F_CONTAINER)) {
            if (ox->kind != M2_SW_K_DOOR && !(ox->flags & M2_SW_F_CLOSABLE)) {
                say(b, "The %s is not %s.", ox->name, open ? "openable" : "closeable");
                break;
            }
            if (!!(ox->flags & M2_SW_F_OPEN) == open) { say(b, "The %s is already %s.", ox->name, verb); break; }
            if (open) ox->flags |= M2_SW_F_OPEN; else ox->flags &= ~M2_SW_F_OPEN;
            say(b, "The %s is now %s.", ox->name, verb);
        } else {
            say(b, "The %s is not %s.", ox->name, open ? "openable" : "closeable");
        }
        break;
    }
    case A_ACTIVATE: case A_DEACTIVATE: {
        int on = m->action == A_ACTIVATE;
        if (!(ox->flags & M2_SW_F_DEVICE)) { say(b, "The %s is not something that can be activated.", ox->name); break; }
        if (!!(ox->flags & M2_SW_F_ON) == on) { say(b, "The %s is already %s.", ox->name, on ? "activated" : "deactivated"); break; }
        if (ox->flags & M2_SW_F_BROKEN) { say(b, "The %s appears broken, and can't be activated or deactivated.", ox->name); break; }
        if (on) ox->flags |= M2_SW_F_ON; else ox->flags &= ~M2_SW_F_ON;
        say(b, "The %s is now %s.", ox->name, on ? "activated" : "deactivated");
        break;
    }
    case A_LOOK_AROUND: m2_sw_look_around(w, b); break;
    case A_LOOK_AT:
        if (ox->flags & M2_SW_F_HIDDEN) { say(b, "<ERROR: attempting to view hidden object>"); break; }
        m2_sw_describe(w, x, 1, b);
        w->look_serial++;
        snprintf(w->look_name, sizeof w->look_name, "%s", ox->name);
        m2_sw_descript_name(w, x, w->look_dname, sizeof w->look_dname);
        if (ox->kind == M2_SW_K_PLANE) {
            int kids[8], k = m2_sw_children(w, x, kids, 8, 1);
            for (int i = 0; i < k; i++)
                if (!(w->o[kids[i]].flags & M2_SW_F_HIDDEN)) { ox->seen_move = w->moves; ox->seen_pos = w->o[kids[i]].plane_pos; break; }
        }
        break;
    case A_LOOK_IN:
        if (!(ox->flags & M2_SW_F_CONTAINER) || ox->kind == M2_SW_K_DOOR) { say(b, "It's not clear how to look inside of that."); break; }
        if (!(ox->flags & M2_SW_F_OPEN)) { say(b, "The %s isn't open, so you can't see inside.", ox->name); break; }
        {
            int kids[64];
            int k = m2_sw_children(w, x, kids, 64, 1);
            if (!k) say(b, "There is nothing in the %s.", ox->name);
            else {
                say(b, "Inside the %s is: \n", ox->name);
                for (int i = 0; i < k; i++) {
                    if (w->o[kids[i]].flags & M2_SW_F_HIDDEN) continue;
                    m2_strbuf_puts(b, "\t");
                    m2_sw_describe(w, kids[i], 0, b);
                    m2_strbuf_puts(b, "\n");
                }
            }
            m2_strbuf_puts(b, "\n");
        }
        break;
    case A_MOVE:
        if (can_move(w, x, y, b)) do_move(w, x, y, b);
        break;
    case A_PICK_UP:
        if (!can_move(w, x, w->inventory, b)) break;
        if (ox->parent == w->inventory) { say(b, "That object already appears to be in the inventory."); break; }
        do_move(w, x, w->inventory, b);
        break;
    case A_PUT_DOWN: {
        int here = w->o[w->agent].parent;
        if (!can_move(w, x, here, b)) break;
        if (ox->parent != w->inventory) { say(b, "That object does not appear to be in the inventory."); break; }
        do_move(w, x, here, b);
        break;
    }
    case A_POUR: {
        m2_sw_obj *oy = &w->o[y];
        int is_cont = (ox->flags & M2_SW_F_CONTAINER) && ox->kind != M2_SW_K_DOOR;
        if (x == y) { say(b, "You can't move something into itself."); break; }
        if (!(ox->flags & M2_SW_F_MOVABLE)) { say(b, "The %s is not moveable.", ox->name); break; }
        if (!is_cont) {
            if (ox->parent == M2_SW_NONE) { say(b, "The %s can't be poured out because it doesn't appear to be in a container.", ox->name); break; }
            if (!(w->o[ox->parent].flags & M2_SW_F_MOVABLE)) { say(b, "The %s the %s is in is not movable.", w->o[ox->parent].name, ox->name); break; }
            if (ox->mat >= 0 && ox->state == M2_SW_ST_SOLID) { say(b, "I'm not sure how to pour a solid. "); break; }
            if (ox->mat >= 0 && ox->state == M2_SW_ST_GAS) { say(b, "You can't pour a gas directly. "); break; }
        } else if (!(ox->flags & M2_SW_F_OPEN)) { say(b, "The %s can't be poured out, because it's not open.", ox->name); break; }
        if (!(oy->flags & M2_SW_F_CONTAINER) || oy->kind == M2_SW_K_DOOR) { say(b, "That can't be moved there, because it's not a container."); break; }
        if (!(oy->flags & M2_SW_F_OPEN)) { say(b, "That can't be moved there, because the %s isn't open.", oy->name); break; }
        if (m2_sw_is_inside(w, y, x)) { say(b, "You can't move something into itself."); break; }
        if (is_cont) {
            int kids[64];
            int k = m2_sw_children(w, x, kids, 64, 0);
            if (!k) { say(b, "The %s is empty, so there's nothing to pour.", ox->name); break; }
            for (int i = 0; i < k; i++) if (w->o[kids[i]].flags & M2_SW_F_MOVABLE) m2_sw_move(w, kids[i], y);
            say(b, "You pour the contents of the %s into the %s.", ox->name, oy->name);
        } else {
            m2_sw_move(w, x, y);
            say(b, "You pour the %s into the %s.", ox->name, oy->name);
        }
        break;
    }
    case A_FOCUS: {
        char dn[M2_SW_NAME * 2];
        w->focus = x;
        say(b, "You focus on the %s.", m2_sw_descript_name(w, x, dn, sizeof dn));
        break;
    }
    case A_GO: {
        int here = m2_sw_room_of(w, w->agent);
        if (ox->kind == M2_SW_K_DOOR) {
            if (!(ox->flags & M2_SW_F_OPEN)) { say(b, "The %s is not open.", ox->name); break; }
            int other = m2_sw_door_other(w, x, w->o[w->agent].parent);
            if (other == M2_SW_NONE) { say(b, "The door doesn't appear to go anywhere."); break; }
            m2_sw_move(w, w->agent, other);
            say(b, "You move through the %s to the %s.", ox->name, w->o[other].name);
        } else if (ox->kind == M2_SW_K_ROOM || ox->kind == M2_SW_K_OUTSIDE) {
            int door = here != M2_SW_NONE ? m2_sw_door_between(w, here, x) : M2_SW_NONE;
            if (door == M2_SW_NONE) { say(b, "It's not clear how to get there from here."); break; }
            if (!(w->o[door].flags & M2_SW_F_OPEN)) { say(b, "The door is not open."); break; }
            m2_sw_move(w, w->agent, x);
            say(b, "You move to the %s.", ox->name);
        } else {
            say(b, "Its not clear how to go to/through a %s.", ox->name);
        }
        break;
    }
    case A_WAIT: say(b, "You decide to wait for 10 iterations."); break;
    case A_WAIT1: say(b, "You decide to wait for 1 iterations."); break;
    case A_INVENTORY: m2_sw_inventory_text(w, b); break;
    case A_TASK: m2_strbuf_puts(b, s->task_desc); break;
    case A_RESET_TASK: say(b, "You reset the goal progress and focus."); w->focus = M2_SW_NONE; break;
    case A_EAT:
        if (!(ox->flags & M2_SW_F_MOVABLE) || ox->kind != M2_SW_K_FOOD) { say(b, "It's not clear how to eat that."); break; }
        say(b, "You eat the %s.", ox->name);
        m2_sw_delete(w, x);
        break;
    case A_USE: {
        if (w->n_used < M2_SW_MAX_USES) {
            memcpy(w->used[w->n_used][0], ox->name, M2_SW_NAME);
            memcpy(w->used[w->n_used][1], w->o[y].name, M2_SW_NAME);
            w->n_used++;
        }
        if (!strcmp(ox->name, "shovel") && !strcmp(w->o[y].name, "ground") && w->o[y].parent != M2_SW_NONE) {
            /* Shovelling.doShovel: a hole in the ground and a pile of soil next to it */
            int loc = w->o[y].parent;
            int hole = m2_sw_new(w, M2_SW_K_THING, "hole", loc);
            if (hole != M2_SW_NONE) w->o[hole].flags &= ~M2_SW_F_MOVABLE;
            int soil = m2_sw_new(w, M2_SW_K_THING, "soil", loc);
            if (soil != M2_SW_NONE) m2_sw_set_material(w, soil, "soil");
            say(b, "You dig a hole in the ground, and place the soil nearby.");
            break;
        }
        if (ox->kind == M2_SW_K_THERMOMETER) {
            const m2_sw_obj *oy = &w->o[y];
            if (oy->mat < 0) { say(b, "That thing doesn't appear to have a temperature that the thermometer can read. "); break; }
            say(b, "the thermometer measures a temperature of %.0f degrees celsius", m2_sw_java_round(oy->temp) + 0.0);
            break;
        }
        say(b, "I'm not sure how to use the %s on the %s.", ox->name, w->o[y].name);
        break;
    }
    case A_READ:
        if (w->n_used < M2_SW_MAX_USES) {
            memcpy(w->used[w->n_used][0], "read", 5);
            memcpy(w->used[w->n_used][1], ox->name, M2_SW_NAME);
            w->n_used++;
        }
        if (ox->kind == M2_SW_K_RECIPE) say(b, "The recipe reads:\n%s", w->recipe_text);
        else if (ox->kind == M2_SW_K_BOOK) say(b, "The book reads:\n%s by %s\n", ox->alt, ox->alt2);
        else say(b, "There's nothing written on the %s.", ox->name);
        break;
    case A_MIX: {
        int kids[4];
        /* ActionMix.isValidAction: fewer than two things gives no message at all */
        if (m2_sw_children(w, x, kids, 4, 0) <= 1) break;
        m2_sw_mix(w, x, b);
        break;
    }
    case A_DUNK:
        if (!(ox->flags & M2_SW_F_CONTAINER)) { say(b, "You can only dunk containers."); break; }
        say(b, "Dunking the %s into the %s doesn't seem to do anything.", ox->name, w->o[y].name);
        break;
    case A_CONNECT: {
        int ta = get_terminal(w, x, b);
        if (ta == M2_SW_NONE) break;
        int tb = get_terminal(w, y, b);
        if (tb == M2_SW_NONE) break;
        if (ta == tb) { say(b, "Something can't be connected to itself."); break; }
        for (int k = 0; k < 2; k++) {
            int t = k ? tb : ta;
            if (w->o[t].conn != M2_SW_NONE) {
                say(b, "%s on %s is already connected, and must be disconnected before it can be connected to something else",
                    w->o[t].name, w->o[w->o[t].parent].name);
                t = M2_SW_NONE;
                ta = M2_SW_NONE;
                break;
            }
        }
        if (ta == M2_SW_NONE) break;
        w->o[ta].conn = (int16_t)tb;
        w->o[tb].conn = (int16_t)ta;
        w->last_connect_move = w->moves;
        say(b, "%s on %s is now connected to %s on %s", w->o[ta].name, w->o[w->o[ta].parent].name, w->o[tb].name,
            w->o[w->o[tb].parent].name);
        break;
    }
    case A_DISCONNECT:
        if (ox->kind == M2_SW_K_TERMINAL) {
            say(b, "You must disconnect entire objects (such as %s) instead of just single terminals", w->o[ox->parent].name);
            break;
        }
        m2_sw_disconnect(w, x);
        say(b, "%s has been disconnected", ox->name);
        break;
    case A_FLUSH:
        if (ox->kind != M2_SW_K_TOILET) { say(b, "It's not clear how to flush that."); break; }
        say(b, "The %s flushes.", ox->name);
        break;
    }
    return actions[m->action].free ? 0 : 1;
}

/* Trim and collapse runs of spaces (AgentInterface.step post-processing). */
static void tidy(m2_strbuf *b) {
    if (!b->p) return;
    size_t j = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->p[i] == ' ' && j > 0 && b->p[j - 1] == ' ') continue;
        b->p[j++] = b->p[i];
    }
    b->p[j] = 0;
    size_t st = 0;
    while (st < j && isspace((unsigned char)b->p[st])) st++;
    while (j > st && isspace((unsigned char)b->p[j - 1])) j--;
    memmove(b->p, b->p + st, j - st);
    b->len = j - st;
    b->p[b->len] = 0;
}

static int execute(m2_sw_session *s, const m2_sw_match *m) {
    m2_sw_world *w = &s->w;
    int takes_time = run_action(s, m);
    s->vis_valid = 0;
    m2_sw_goals_tick(w);
    if (!takes_time) return 0;
    /* the action's own tick, then one more per waited iteration (AgentInterface.step loop) */
    int ticks = m->action == A_WAIT ? 11 : m->action == A_WAIT1 ? 2 : 1;
    for (int t = 0; t < ticks; t++) {
        m2_sw_tick(w);
        w->moves++;
        m2_sw_goals_tick(w);
    }
    return 1;
}

void m2_sw_free_action_text(const m2_sw_world *w, int inventory, m2_strbuf *b) {
    if (inventory) m2_sw_inventory_text(w, b);
    else m2_sw_look_around(w, b);
    tidy(b);
}

int m2_sw_session_step(m2_sw_session *s, const char *input, int *valid) {
    s->vis_valid = 0;   /* the world may have changed since the last look (and changes below) */
    m2_strbuf_reset(&s->out);
    *valid = 0;
    char in[512];
    tokenize(input ? input : "", in, sizeof in);

    if (s->n_amb > 0) {
        /* ambiguity resolution: the input is the number of the intended action */
        char *end = NULL;
        long v = strtol(in, &end, 10);
        int n = s->n_amb;
        s->n_amb = 0;
        if (!in[0] || !end || *end) {
            m2_strbuf_appendf(&s->out, "ERROR: Unknown response (%s).  Action cancelled.", input ? input : "");
            tidy(&s->out);
            return 0;
        }
        if (v < 0 || v >= n) {
            m2_strbuf_appendf(&s->out, "ERROR: Value out of range (%s).  Action cancelled.", input);
            tidy(&s->out);
            return 0;
        }
        m2_sw_match m = s->amb[v];
        *valid = 1;
        int t = execute(s, &m);
        tidy(&s->out);
        return t;
    }

    if (!strcmp(in, "help")) {   /* the templates, sorted, as the original's getPossibleActions */
        m2_sw_template t[M2_SW_MAX_TEMPLATES];
        int n = m2_sw_action_templates(t, M2_SW_MAX_TEMPLATES, 0);
        m2_strbuf_puts(&s->out, "Possible actions: ");
        for (int i = 0; i < n; i++) m2_strbuf_appendf(&s->out, "\n\t%s", t[i].text);
        return 0;
    }

    compute_visible(s);
    match_set ms;
    ms.n = 0;
    int objs[4];
    for (int a = 0; a < A_COUNT; a++) match_rec(s, a, 0, in, objs, 0, &ms);
    if (ms.n == 0) {
        m2_strbuf_puts(&s->out, "No known action matches that input.");
        return 0;
    }
    if (ms.n > 1) {
        *valid = 1;
        m2_strbuf_puts(&s->out, "Ambiguous request: Please enter the number for the action you intended (or blank to cancel):\n");
        for (int i = 0; i < ms.n; i++) {
            m2_strbuf_appendf(&s->out, "%d:\t", i);
            describe_match(&s->w, &ms.m[i], &s->out);
            m2_strbuf_puts(&s->out, "\n");
            s->amb[i] = ms.m[i];
        }
        s->n_amb = ms.n;
        return 0;
    }
    *valid = 1;
    int t = execute(s, &ms.m[0]);
    tidy(&s->out);
    return t;
}

/* ---------------- admissible actions ---------------- */

void m2_sw_admissible(m2_sw_session *s, m2_strbuf *b) {
    m2_sw_world *w = &s->w;
    if (s->n_amb > 0) {
        for (int i = 0; i < s->n_amb; i++) m2_strbuf_appendf(b, "%d\n", i);
        return;
    }
    m2_strbuf_puts(b, "look around\ninventory\nwait\nwait1\ntask\n");
    int vis[M2_SW_MAX_OBJ];
    int nv = m2_sw_visible_objects(w, vis, M2_SW_MAX_OBJ);
    char (*ref)[M2_SW_REF_LEN] = malloc((size_t)nv * M2_SW_REF_LEN);
    if (!ref) return;
    for (int i = 0; i < nv; i++) m2_sw_session_referent(s, vis[i], ref[i], M2_SW_REF_LEN);
    int here = w->o[w->agent].parent;
    for (int i = 0; i < nv; i++) {
        int x = vis[i];
        const m2_sw_obj *o = &w->o[x];
        if (!ref[i][0] || x == w->agent || x == w->inventory) continue;
        if (o->kind == M2_SW_K_ROOM || o->kind == M2_SW_K_OUTSIDE) {
            if (x != here) m2_strbuf_appendf(b, "go to %s\n", ref[i]);
            continue;
        }
        m2_strbuf_appendf(b, "look at %s\n", ref[i]);
        m2_strbuf_appendf(b, "focus on %s\n", ref[i]);
        if ((o->kind == M2_SW_K_DOOR || (o->flags & M2_SW_F_CLOSABLE))) m2_strbuf_appendf(b, "%s %s\n", (o->flags & M2_SW_F_OPEN) ? "close" : "open", ref[i]);
        if (o->flags & M2_SW_F_DEVICE) m2_strbuf_appendf(b, "%s %s\n", (o->flags & M2_SW_F_ON) ? "deactivate" : "activate", ref[i]);
        if ((o->flags & M2_SW_F_CONTAINER) && (o->flags & M2_SW_F_OPEN) && o->kind != M2_SW_K_DOOR) m2_strbuf_appendf(b, "look in %s\n", ref[i]);
        int liquid = o->mat >= 0 && o->state != M2_SW_ST_SOLID;
        if ((o->flags & M2_SW_F_MOVABLE) && !liquid) {
            if (o->parent == w->inventory) m2_strbuf_appendf(b, "put down %s\n", ref[i]);
            else m2_strbuf_appendf(b, "pick up %s\n", ref[i]);
        }
        if (o->kind == M2_SW_K_FOOD) m2_strbuf_appendf(b, "eat %s\n", ref[i]);
        if (o->kind == M2_SW_K_BOOK) m2_strbuf_appendf(b, "read %s\n", ref[i]);
    }
    /* mixing, pouring cups into other open containers, and wiring free terminals together */
    for (int i = 0; i < nv; i++) {
        int x = vis[i];
        const m2_sw_obj *o = &w->o[x];
        if (!ref[i][0] || !(o->flags & M2_SW_F_CONTAINER) || !(o->flags & M2_SW_F_OPEN) || o->kind == M2_SW_K_DOOR) continue;
        int kids[4], k = m2_sw_children(w, x, kids, 4, 0);
        if (k >= 2 && o->kind == M2_SW_K_CUP) m2_strbuf_appendf(b, "mix %s\n", ref[i]);
        if (k >= 1 && o->kind == M2_SW_K_CUP && (o->flags & M2_SW_F_MOVABLE))
            for (int j = 0; j < nv; j++) {
                const m2_sw_obj *oy = &w->o[vis[j]];
                if (vis[j] == x || !ref[j][0] || oy->kind != M2_SW_K_CUP || !(oy->flags & M2_SW_F_OPEN)) continue;
                m2_strbuf_appendf(b, "pour %s into %s\n", ref[i], ref[j]);
            }
    }
    for (int i = 0; i < nv; i++) {
        const m2_sw_obj *t = &w->o[vis[i]];
        if (t->kind != M2_SW_K_TERMINAL || (t->flags & M2_SW_F_HIDDEN) || t->conn != M2_SW_NONE || !ref[i][0]) continue;
        for (int j = i + 1; j < nv; j++) {
            const m2_sw_obj *u = &w->o[vis[j]];
            if (u->kind != M2_SW_K_TERMINAL || (u->flags & M2_SW_F_HIDDEN) || u->conn != M2_SW_NONE || !ref[j][0] || u->parent == t->parent) continue;
            m2_strbuf_appendf(b, "connect %s to %s\n", ref[i], ref[j]);
        }
    }
    /* moves: inventory items into visible open containers; thermometer uses */
    for (int i = 0; i < nv; i++) {
        int x = vis[i];
        if (w->o[x].parent != w->inventory || !ref[i][0]) continue;
        for (int j = 0; j < nv; j++) {
            int y = vis[j];
            const m2_sw_obj *oy = &w->o[y];
            if (y == x || !ref[j][0] || !(oy->flags & M2_SW_F_CONTAINER) || !(oy->flags & M2_SW_F_OPEN) || oy->kind == M2_SW_K_DOOR) continue;
            if (y == w->inventory || y == w->agent) continue;
            if (w->o[x].kind == M2_SW_K_THERMOMETER) continue;
            m2_strbuf_appendf(b, "move %s to %s\n", ref[i], ref[j]);
        }
        if (w->o[x].kind == M2_SW_K_THERMOMETER)
            for (int j = 0; j < nv; j++)
                if (vis[j] != x && w->o[vis[j]].mat >= 0 && ref[j][0]) m2_strbuf_appendf(b, "use %s on %s\n", ref[i], ref[j]);
    }
    /* movable things lying in the room (or on another plane) onto an inclined plane: the experiment's first step */
    for (int j = 0; j < nv; j++) {
        int y = vis[j];
        if (w->o[y].kind != M2_SW_K_PLANE || !ref[j][0]) continue;
        for (int i = 0; i < nv; i++) {
            int x = vis[i], px = w->o[x].parent;
            if (x == y || !ref[i][0] || !(w->o[x].flags & M2_SW_F_MOVABLE) || px == y || px == M2_SW_NONE) continue;
            if (w->o[x].kind == M2_SW_K_PLANE || w->o[x].kind == M2_SW_K_TERMINAL || w->o[x].kind == M2_SW_K_DOOR) continue;
            if (w->o[x].mat >= 0 && w->o[x].state == M2_SW_ST_GAS) continue;   /* the room's air */
            if (px != w->o[w->agent].parent && w->o[px].kind != M2_SW_K_PLANE) continue;
            m2_strbuf_appendf(b, "move %s to %s\n", ref[i], ref[j]);
        }
    }
    free(ref);
}
