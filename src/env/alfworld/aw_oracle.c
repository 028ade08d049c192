/* ALFWorld expert and sub-goal segmenter.
 *
 * Two experts share one replanning policy; both decide from the CURRENT state every step, so they
 * recover after any deviation. SEARCH (the default, in the spirit of alfworld's handcoded expert) knows
 * only what the agent has seen: it visits unseen receptacles that can hold the object (opening closed
 * ones) until it sees one. PLANNER (like alfworld's planner expert) knows where everything is.
 *   holding something that is not the goal object -> put it down (open a receptacle if needed)
 *   not holding the goal object -> go to a receptacle known to hold one, open it if closed, take it;
 *                                  none known -> search
 *   clean/heat/cool not done yet -> go to the sink basin / microwave / fridge, clean/heat/cool it
 *   look tasks -> go to the lamp's receptacle (searching for it if unseen), use the lamp
 *   place tasks -> go to the target receptacle, open it if closed, move the object there
 * Ties break by "already here" first, then ALFWorld's listing (internal-id) order.
 */
#include "env/alfworld/alfworld.h"
#include <ctype.h>
#include <stdio.h>
#include <string.h>

static inline int at(const m2_aw_scene *s, const m2_aw_state *st, int r) { return s->receps[r].loc == st->loc; }
static inline int reachable(const m2_aw_scene *s, const m2_aw_state *st, int r) { return !s->receps[r].openable || st->opened[r]; }

/* First receptacle of class `cls` in listing order, preferring one at the agent's location. */
static int pick_recep(const m2_aw_scene *s, const m2_aw_state *st, int cls) {
    int first = -1;
    for (int i = 0; i < s->n_recep; i++) {
        int r = s->recep_order[i];
        if (s->receps[r].cls != cls) continue;
        if (at(s, st, r)) return r;
        if (first < 0) first = r;
    }
    return first;
}

static int count_in(const m2_aw_scene *s, const m2_aw_state *st, int r, int cls) {
    int n = 0;
    for (int o = 0; o < s->n_obj; o++) n += st->in[o] == r && s->objs[o].cls == cls;
    return n;
}

/* The receptacle the goal object(s) should end in. */
static int target_recep(const m2_aw_scene *s, const m2_aw_state *st) {
    const m2_aw_goal *g = &s->goal;
    if (g->type == M2_AW_PICK_TWO) {
        int best = -1, best_n = 0;
        for (int i = 0; i < s->n_recep; i++) {
            int r = s->recep_order[i];
            if (s->receps[r].cls != g->recep_cls) continue;
            int n = count_in(s, st, r, g->obj_cls);
            if (n > best_n) { best = r; best_n = n; }
        }
        if (best >= 0) return best;
    }
    return pick_recep(s, st, g->recep_cls);
}

static int emit(const m2_aw_scene *s, int verb, int a, int b, char *buf, size_t cap, m2_err *err) {
    m2_aw_cmd c = {verb, a, b};
    if (m2_aw_format_cmd(s, &c, buf, cap)) return m2_errorf(err, M2_EINVAL, "alfworld oracle: buffer too small");
    return 0;
}

/* Step towards receptacle r and its contents: go there, open it. Returns 1 if an action was emitted. */
static int approach(const m2_aw_scene *s, const m2_aw_state *st, int r, char *buf, size_t cap, m2_err *err, int *rc) {
    if (!at(s, st, r)) { *rc = emit(s, M2_AW_C_GOTO, r, -1, buf, cap, err); return 1; }
    if (!reachable(s, st, r)) { *rc = emit(s, M2_AW_C_OPEN, r, -1, buf, cap, err); return 1; }
    return 0;
}

static int put_away(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap, m2_err *err) {
    int h = st->held, hc = s->objs[h].cls, avoid = s->goal.recep_cls, rc = 0;
    int closed_here = -1, far = -1, far_any = -1;
    for (int i = 0; i < s->n_recep; i++) {
        int r = s->recep_order[i], cc = s->receps[r].cls;
        if (!s->can_contain[cc * s->n_cls + hc]) continue;
        if (at(s, st, r)) {
            if (cc == avoid) continue;
            if (reachable(s, st, r)) return emit(s, M2_AW_C_MOVE, h, r, buf, cap, err);
            if (closed_here < 0) closed_here = r;
        } else {
            if (cc != avoid && far < 0) far = r;
            if (far_any < 0) far_any = r;
        }
    }
    if (closed_here >= 0) return emit(s, M2_AW_C_OPEN, closed_here, -1, buf, cap, err);
    if (far < 0) far = far_any;
    if (far >= 0) { approach(s, st, far, buf, cap, err, &rc); return rc; }
    return m2_errorf(err, M2_ENOTFOUND, "alfworld oracle: no receptacle can take the %s", s->objs[h].name);
}

/* Does the expert know where object o is? SEARCH: only inside receptacles the agent has seen. */
static int known(const m2_aw_scene *s, const m2_aw_state *st, int mode, int o) {
    int r = st->in[o];
    return r >= 0 && (mode == M2_AW_ORACLE_PLANNER || st->seen[r]);
}

/* One search step for an object of class `cls`: the best unseen receptacle that can hold it (any unseen
 * receptacle when none can), preferring the agent's location, then receptacles without a door, then
 * listing order. Returns 0 with the action, or -1 with err when everything has been searched. */
static int explore(const m2_aw_scene *s, const m2_aw_state *st, int cls, char *buf, size_t cap, m2_err *err) {
    for (int pass = 0; pass < 2; pass++) {
        int best = -1, best_score = -1;
        for (int i = 0; i < s->n_recep; i++) {
            int r = s->recep_order[i];
            if (st->seen[r]) continue;
            if (pass == 0 && !s->can_contain[s->receps[r].cls * s->n_cls + cls]) continue;
            int score = at(s, st, r) ? 3 : !s->receps[r].openable ? 2 : 1;
            if (score > best_score) { best = r; best_score = score; }
        }
        if (best < 0) continue;
        int rc = 0;
        if (approach(s, st, best, buf, cap, err, &rc)) return rc;
        return emit(s, M2_AW_C_EXAMINE_R, best, -1, buf, cap, err);   /* here and open but not looked at yet */
    }
    return m2_errorf(err, M2_ENOTFOUND, "alfworld oracle: searched every receptacle, no %s found", s->cls_name[cls]);
}

int m2_aw_oracle(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap, m2_err *err) {
    return m2_aw_oracle_mode(s, st, M2_AW_ORACLE_SEARCH, buf, cap, err);
}

int m2_aw_oracle_mode(const m2_aw_scene *s, const m2_aw_state *st, int mode, char *buf, size_t cap, m2_err *err) {
    const m2_aw_goal *g = &s->goal;
    if (m2_aw_won(s, st)) return m2_errorf(err, M2_EINVAL, "alfworld oracle: the goal already holds");
    if (g->obj_cls < 0 || g->obj_cls >= s->n_cls) return m2_errorf(err, M2_EINVAL, "alfworld oracle: scene has no goal");
    int rc = 0, h = st->held;
    if (h >= 0 && s->objs[h].cls != g->obj_cls) return put_away(s, st, buf, cap, err);
    if (h >= 0) {
        if (g->type == M2_AW_LOOK) {
            int lamp = -1;
            for (int i = 0; i < s->n_obj; i++) {
                int o = s->obj_order[i];
                if (s->objs[o].cls != g->toggle_cls || !known(s, st, mode, o)) continue;
                if (at(s, st, st->in[o])) { lamp = o; break; }
                if (lamp < 0) lamp = o;
            }
            if (lamp < 0) return explore(s, st, g->toggle_cls, buf, cap, err);
            if (!at(s, st, st->in[lamp])) return emit(s, M2_AW_C_GOTO, st->in[lamp], -1, buf, cap, err);
            return emit(s, M2_AW_C_USE, lamp, -1, buf, cap, err);
        }
        uint8_t need = g->type == M2_AW_CLEAN ? M2_AW_S_CLEAN : g->type == M2_AW_HEAT ? M2_AW_S_HOT : g->type == M2_AW_COOL ? M2_AW_S_COOL : 0;
        if (need && !(st->bits[h] & need)) {
            int app_cls = g->type == M2_AW_CLEAN ? s->cls_sinkbasin : g->type == M2_AW_HEAT ? s->cls_microwave : s->cls_fridge;
            int app = app_cls >= 0 ? pick_recep(s, st, app_cls) : -1;
            if (app < 0) return m2_errorf(err, M2_ENOTFOUND, "alfworld oracle: no appliance for %s", m2_aw_task_type_name(g->type));
            if (!at(s, st, app)) return emit(s, M2_AW_C_GOTO, app, -1, buf, cap, err);
            int verb = g->type == M2_AW_CLEAN ? M2_AW_C_CLEAN : g->type == M2_AW_HEAT ? M2_AW_C_HEAT : M2_AW_C_COOL;
            return emit(s, verb, h, app, buf, cap, err);
        }
        int t = target_recep(s, st);
        if (t < 0) return m2_errorf(err, M2_ENOTFOUND, "alfworld oracle: no %s in the scene", s->cls_name[g->recep_cls]);
        if (approach(s, st, t, buf, cap, err, &rc)) return rc;
        return emit(s, M2_AW_C_MOVE, h, t, buf, cap, err);
    }
    /* hands empty: fetch a goal object the expert knows of, else search */
    int t = g->type == M2_AW_PICK_TWO ? target_recep(s, st) : -1;
    int best = -1, best_score = -1;
    for (int i = 0; i < s->n_obj; i++) {
        int o = s->obj_order[i], r = st->in[o];
        if (s->objs[o].cls != g->obj_cls || !known(s, st, mode, o)) continue;
        if (g->type == M2_AW_PICK_TWO && r == t) continue;
        int score = at(s, st, r) ? (reachable(s, st, r) ? 3 : 2) : 1;
        if (score > best_score) { best = o; best_score = score; }
    }
    if (best < 0) return explore(s, st, g->obj_cls, buf, cap, err);
    int r = st->in[best];
    if (approach(s, st, r, buf, cap, err, &rc)) return rc;
    return emit(s, M2_AW_C_TAKE, best, r, buf, cap, err);
}

/* ---------------------------------------------------------------- sub-goals */

static void class_of(const char *name, char *out, size_t cap);

/* Does `name` ("apple 1", or the class "apple") name object/receptacle `full`? */
static int names(const char *full, const char *name, size_t len) {
    if (strlen(full) == len && !strncmp(full, name, len)) return 1;
    char c[M2_AW_NAME_MAX];
    class_of(full, c, sizeof c);
    return strlen(c) == len && !strncmp(c, name, len);
}

static int goal_bit(const m2_aw_goal *g) {
    return g->type == M2_AW_CLEAN ? M2_AW_S_CLEAN : g->type == M2_AW_HEAT ? M2_AW_S_HOT : g->type == M2_AW_COOL ? M2_AW_S_COOL : 0;
}

int m2_aw_subgoal_next(const m2_aw_scene *s, const m2_aw_state *st, int mode, char *buf, size_t cap, m2_err *err) {
    const m2_aw_goal *g = &s->goal;
    if (m2_aw_won(s, st)) return m2_errorf(err, M2_EINVAL, "alfworld: the goal already holds");
    if (g->obj_cls < 0 || g->obj_cls >= s->n_cls) return m2_errorf(err, M2_EINVAL, "alfworld: scene has no goal");
    int h = st->held;
    char c[M2_AW_NAME_MAX];
    if (h >= 0 && s->objs[h].cls != g->obj_cls) {
        snprintf(buf, cap, "put down %s", s->objs[h].name);
        return 0;
    }
    if (h < 0) {
        for (int i = 0; i < s->n_obj; i++) {
            int o = s->obj_order[i];
            if (s->objs[o].cls != g->obj_cls) continue;
            class_of(s->objs[o].name, c, sizeof c);
            snprintf(buf, cap, "take %s", c);
            return 0;
        }
        return m2_errorf(err, M2_ENOTFOUND, "alfworld: no %s in the scene", s->cls_name[g->obj_cls]);
    }
    if (g->type == M2_AW_LOOK) {
        int lamp = -1;
        for (int i = 0; i < s->n_obj; i++) {
            int o = s->obj_order[i];
            if (s->objs[o].cls != g->toggle_cls) continue;
            if (known(s, st, mode, o)) { lamp = o; break; }
            if (lamp < 0) lamp = o;
        }
        if (lamp < 0) return m2_errorf(err, M2_ENOTFOUND, "alfworld: no lamp in the scene");
        snprintf(buf, cap, "use %s", s->objs[lamp].name);
        return 0;
    }
    int need = goal_bit(g);
    if (need && !(st->bits[h] & need)) {
        int app_cls = g->type == M2_AW_CLEAN ? s->cls_sinkbasin : g->type == M2_AW_HEAT ? s->cls_microwave : s->cls_fridge;
        int app = app_cls >= 0 ? pick_recep(s, st, app_cls) : -1;
        if (app < 0) return m2_errorf(err, M2_ENOTFOUND, "alfworld: no appliance for %s", m2_aw_task_type_name(g->type));
        snprintf(buf, cap, "%s %s with %s", g->type == M2_AW_CLEAN ? "clean" : g->type == M2_AW_HEAT ? "heat" : "cool",
                 s->objs[h].name, s->receps[app].name);
        return 0;
    }
    int t = target_recep(s, st);
    if (t < 0) return m2_errorf(err, M2_ENOTFOUND, "alfworld: no %s in the scene", s->cls_name[g->recep_cls]);
    snprintf(buf, cap, "put %s in/on %s", s->objs[h].name, s->receps[t].name);
    return 0;
}

int m2_aw_subgoal_done(const m2_aw_scene *s, const m2_aw_state *st, const char *text) {
    char t[512];
    snprintf(t, sizeof t, "%s", text ? text : "");
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '.' || t[n - 1] == '\n')) t[--n] = 0;
    char *x = t;
    while (*x == ' ') x++;
    if (!strncmp(x, "put down ", 9)) {
        x += 9;
        return st->held < 0 || !names(s->objs[st->held].name, x, strlen(x));
    }
    if (!strncmp(x, "take ", 5)) {
        x += 5;
        char *from = strstr(x, " from ");
        size_t len = from ? (size_t)(from - x) : strlen(x);
        return st->held >= 0 && names(s->objs[st->held].name, x, len);
    }
    if (!strncmp(x, "use ", 4)) {
        x += 4;
        for (int o = 0; o < s->n_obj; o++)
            if ((st->bits[o] & M2_AW_S_TOGGLED) && names(s->objs[o].name, x, strlen(x))) return 1;
        return 0;
    }
    int bit = !strncmp(x, "heat ", 5) ? M2_AW_S_HOT : !strncmp(x, "cool ", 5) ? M2_AW_S_COOL
            : !strncmp(x, "clean ", 6) ? M2_AW_S_CLEAN : 0;
    if (bit) {
        x = strchr(x, ' ') + 1;
        char *with = strstr(x, " with ");
        size_t len = with ? (size_t)(with - x) : strlen(x);
        for (int o = 0; o < s->n_obj; o++)
            if ((st->bits[o] & bit) && names(s->objs[o].name, x, len)) return 1;
        return 0;
    }
    if (!strncmp(x, "put ", 4)) {
        x += 4;
        static const char *const seps[] = {" in/on ", " in ", " on "};
        char *sep = NULL;
        size_t sl = 0;
        for (int i = 0; i < 3 && !sep; i++) if ((sep = strstr(x, seps[i]))) sl = strlen(seps[i]);
        if (!sep) return 0;
        size_t len = (size_t)(sep - x);
        const char *r = sep + sl;
        for (int o = 0; o < s->n_obj; o++) {
            int in = st->in[o];
            if (in >= 0 && names(s->objs[o].name, x, len) && names(s->receps[in].name, r, strlen(r))) return 1;
        }
        return 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- segmenter */

/* "apple 1" -> "apple" */
static void class_of(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s", name);
    char *sp = strrchr(out, ' ');
    if (sp && isdigit((unsigned char)sp[1])) *sp = 0;
}

static int succeeded(const char *obs) { return obs && strncmp(obs, "Nothing happens.", 16) != 0; }

static int push(m2_subgoal *out, int cap, int n, int first, int last, const char *text) {
    if (n >= cap || first > last) return n;
    snprintf(out[n].text, sizeof out[n].text, "%s", text);
    out[n].first = first;
    out[n].last = last;
    return n + 1;
}

int m2_aw_segment(const m2_aw_scene *s, const char *const *actions, const char *const *obs, int n,
                  m2_subgoal *out, int cap) {
    int k = 0, start = 0;
    char text[256], a[M2_AW_NAME_MAX * 2 + 16], b[M2_AW_NAME_MAX * 2 + 16];
    for (int i = 0; i < n; i++) {
        const char *act = actions[i] ? actions[i] : "";
        if (!succeeded(obs ? obs[i] : NULL)) continue;
        m2_aw_cmd c;
        if (m2_aw_parse(s, act, &c)) continue;
        switch (c.verb) {
        case M2_AW_C_TAKE:
            /* finding and taking is one sub-goal: it ends on the take, which the executor knows it
             * issues ("find X" ended on the step that revealed X, unknowable when acting) */
            class_of(s->objs[c.a].name, a, sizeof a);
            snprintf(text, sizeof text, "take %s", a);
            k = push(out, cap, k, start, i, text);
            start = i + 1;
            break;
        case M2_AW_C_HEAT: case M2_AW_C_COOL: case M2_AW_C_CLEAN:
            snprintf(text, sizeof text, "%s %s with %s", c.verb == M2_AW_C_HEAT ? "heat" : c.verb == M2_AW_C_COOL ? "cool" : "clean",
                     s->objs[c.a].name, s->receps[c.b].name);
            k = push(out, cap, k, start, i, text);
            start = i + 1;
            break;
        case M2_AW_C_MOVE:
            snprintf(text, sizeof text, "put %s in/on %s", s->objs[c.a].name, s->receps[c.b].name);
            k = push(out, cap, k, start, i, text);
            start = i + 1;
            break;
        case M2_AW_C_USE:
            snprintf(text, sizeof text, "use %s", s->objs[c.a].name);
            k = push(out, cap, k, start, i, text);
            start = i + 1;
            break;
        default: break;
        }
    }
    if (start < n) {
        /* trailing steps that completed nothing: they served the next sub-goal, named from the task */
        snprintf(b, sizeof b, "%s", s->goal.obj_cls >= 0 ? s->cls_name[s->goal.obj_cls] : "object");
        for (char *p = b; *p; p++) *p = (char)tolower((unsigned char)*p);
        snprintf(text, sizeof text, "take %s", b);
        k = push(out, cap, k, start, n - 1, text);
    }
    return k;
}
