/* ScienceWorld gold-path oracle: the next expert action from the CURRENT state, per task, after
 * the original's mkGoldActionSequence scripts and goldagent/PathFinder.scala (BFS over the door
 * graph, "open door to X" then "go to X"). Replans after deviations. */
#include "env/scienceworld/tasks.h"
#include <stdio.h>
#include <string.h>

/* Next navigation action towards `target` room; 0 when already there, -1 when unreachable. */
static int nav_step(sw_session *s, int target, char *buf, size_t cap) {
    sw_world *w = &s->w;
    int here = w->o[w->agent].parent;
    if (here == target) return 0;
    int prev[SW_MAX_OBJ], queue[SW_MAX_OBJ], qh = 0, qt = 0;
    for (int i = 0; i < w->n; i++) prev[i] = -2;
    prev[here] = -1;
    queue[qt++] = here;
    while (qh < qt) {
        int r = queue[qh++];
        if (r == target) break;
        for (int d = 0; d < w->n; d++) {
            if (w->o[d].kind != K_DOOR) continue;
            int o = sw_door_other(w, d, r);
            if (o == SW_NONE || prev[o] != -2) continue;
            prev[o] = r;
            queue[qt++] = o;
        }
    }
    if (prev[target] == -2) return -1;
    int next = target;
    while (prev[next] != here) next = prev[next];
    int door = sw_door_between(w, here, next);
    if (!(w->o[door].flags & F_OPEN)) snprintf(buf, cap, "open door to %s", w->o[next].name);
    else snprintf(buf, cap, "go to %s", w->o[next].name);
    return 1;
}

static int act_on(sw_session *s, const char *verb, int obj, char *buf, size_t cap) {
    char ref[SW_REF_LEN];
    sw_session_referent(s, obj, ref, sizeof ref);
    if (!ref[0]) return -1;
    snprintf(buf, cap, "%s %s", verb, ref);
    return 1;
}

static int act_move(sw_session *s, int obj, int dest, char *buf, size_t cap) {
    char r1[SW_REF_LEN], r2[SW_REF_LEN];
    sw_session_referent(s, obj, r1, sizeof r1);
    sw_session_referent(s, dest, r2, sizeof r2);
    if (!r1[0] || !r2[0]) return -1;
    snprintf(buf, cap, "move %s to %s", r1, r2);
    return 1;
}

/* First visible object (by id) in `room` satisfying the find-task mode. */
static int pick_target(sw_session *s, int mode, int room) {
    sw_world *w = &s->w;
    int vis[SW_MAX_OBJ];
    int n = sw_visible_objects(w, vis, SW_MAX_OBJ);
    for (int i = 0; i < n; i++) {
        int x = vis[i];
        const sw_obj *o = &w->o[x];
        if (sw_room_of(w, x) != room || x == w->agent || o->kind == K_ROOM || o->kind == K_OUTSIDE) continue;
        if (mode == 0 && !sw_is_living(w, x)) continue;
        if (mode == 2 && !sw_is_plant(w, x)) continue;
        if (mode == 3 && !sw_is_animal(w, x)) continue;
        if (mode == 1) {
            if (sw_is_living(w, x) || !(o->flags & F_MOVABLE) || o->kind == K_ANSWERBOX) continue;
            if (o->mat < 0 || o->state != ST_SOLID) continue;
            if (o->flags & F_CONTAINER) {   /* skip containers holding living things */
                int kids[32], k = sw_children(w, x, kids, 32, 0), living = 0;
                for (int j = 0; j < k; j++) if (sw_is_living(w, kids[j])) living = 1;
                if (living) continue;
            }
        }
        if (mode != 1 && !(o->flags & F_MOVABLE)) continue;
        char ref[SW_REF_LEN];
        sw_session_referent(s, x, ref, sizeof ref);
        if (!ref[0]) continue;
        return x;
    }
    return SW_NONE;
}

static int oracle_find(sw_session *s, int task, const sw_params *p, char *buf, size_t cap) {
    sw_world *w = &s->w;
    const char *name = sw_tasks[task].name;
    int mode = !strcmp(name, "find-living-thing") ? 0 : !strcmp(name, "find-non-living-thing") ? 1
             : !strcmp(name, "find-plant") ? 2 : 3;
    int box_room = sw_room(w, p->location);
    int box = sw_find_named(w, box_room, p->answer_box);
    int target = w->gs.cur >= 1 ? w->gs.last_obj : SW_NONE;
    if (target == SW_NONE) {
        /* phase 1: go where such things are and focus on one */
        int where = mode == 1 ? box_room : mode == 2 ? sw_room(w, "greenhouse") : mode == 3 ? sw_room(w, "outside")
                  : sw_room(w, (p->seed_group + (int)strlen(p->answer_box)) % 2 ? "greenhouse" : "outside");
        int r = nav_step(s, where, buf, cap);
        if (r) return r;
        int x = pick_target(s, mode, where);
        if (x == SW_NONE) return -1;
        return act_on(s, "focus on", x, buf, cap);
    }
    /* what to carry: plants travel in their flower pot */
    int carry = target;
    if (sw_is_plant(w, target) && w->o[target].parent != SW_NONE && w->o[w->o[target].parent].kind == K_FLOWERPOT)
        carry = w->o[target].parent;
    if (mode == 1) {
        /* non-living: it is already in the answer-box room; move it straight into the box */
        if (sw_room_of(w, carry) != box_room && w->o[carry].parent != w->inventory) return act_on(s, "pick up", carry, buf, cap);
        int r = nav_step(s, box_room, buf, cap);
        if (r) return r;
        return act_move(s, carry, box, buf, cap);
    }
    if (w->o[carry].parent != w->inventory && !sw_is_inside(w, carry, box)) return act_on(s, "pick up", carry, buf, cap);
    int r = nav_step(s, box_room, buf, cap);
    if (r) return r;
    return act_move(s, carry, box, buf, cap);
}

static int oracle_lifespan(sw_session *s, int task, const sw_params *p, char *buf, size_t cap) {
    sw_world *w = &s->w;
    const char *name = sw_tasks[task].name;
    int r = nav_step(s, sw_room(w, p->location), buf, cap);
    if (r) return r;
    const char *want = NULL;
    if (!strcmp(name, "lifespan-longest-lived")) want = p->long_animal;
    else if (!strcmp(name, "lifespan-shortest-lived")) want = p->short_animal;
    else want = w->gs.cur == 0 ? p->long_animal : p->short_animal;
    int x = sw_find_named(w, sw_room(w, p->location), want);
    if (x == SW_NONE) return -1;
    return act_on(s, "focus on", x, buf, cap);
}

int sw_oracle_next(sw_session *s, int task, const sw_params *p, char *buf, size_t cap) {
    if (s->n_amb > 0) { snprintf(buf, cap, "0"); return 0; }
    if (s->w.gs.failed || s->w.gs.cur >= s->w.gs.n_ordered) return -1;
    const char *name = sw_tasks[task].name;
    int r = -1;
    if (!strncmp(name, "find-", 5)) r = oracle_find(s, task, p, buf, cap);
    else if (!strncmp(name, "lifespan-", 9)) r = oracle_lifespan(s, task, p, buf, cap);
    return r > 0 ? 0 : -1;
}
