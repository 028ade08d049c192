/* ScienceWorld gold-path oracle: the next expert action from the CURRENT state, per task, after
 * the original's mkGoldActionSequence scripts and goldagent/PathFinder.scala (BFS over the door
 * graph, "open door to X" then "go to X"). Replans after deviations. */
#include "env/scienceworld/tasks.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Next navigation action towards `target` room; 0 when already there, -1 when unreachable. */
static int nav_step(m2_sw_session *s, int target, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int here = w->o[w->agent].parent;
    if (here == target) return 0;
    int prev[M2_SW_MAX_OBJ], queue[M2_SW_MAX_OBJ], qh = 0, qt = 0;
    for (int i = 0; i < w->n; i++) prev[i] = -2;
    prev[here] = -1;
    queue[qt++] = here;
    while (qh < qt) {
        int r = queue[qh++];
        if (r == target) break;
        for (int d = 0; d < w->n; d++) {
            if (w->o[d].kind != M2_SW_K_DOOR) continue;
            int o = m2_sw_door_other(w, d, r);
            if (o == M2_SW_NONE || prev[o] != -2) continue;
            prev[o] = r;
            queue[qt++] = o;
        }
    }
    if (prev[target] == -2) return -1;
    int next = target;
    while (prev[next] != here) next = prev[next];
    int door = m2_sw_door_between(w, here, next);
    if (!(w->o[door].flags & M2_SW_F_OPEN)) snprintf(buf, cap, "open door to %s", w->o[next].name);
    else snprintf(buf, cap, "go to %s", w->o[next].name);
    return 1;
}

static int act_on(m2_sw_session *s, const char *verb, int obj, char *buf, size_t cap) {
    char ref[M2_SW_REF_LEN];
    m2_sw_session_referent(s, obj, ref, sizeof ref);
    if (!ref[0]) return -1;
    snprintf(buf, cap, "%s %s", verb, ref);
    return 1;
}

/* "<verb> A <prep> B" with both objects named by their current referents. */
static int act_two(m2_sw_session *s, const char *verb, int a, const char *prep, int b, char *buf, size_t cap) {
    char r1[M2_SW_REF_LEN], r2[M2_SW_REF_LEN];
    m2_sw_session_referent(s, a, r1, sizeof r1);
    m2_sw_session_referent(s, b, r2, sizeof r2);
    if (!r1[0] || !r2[0]) return -1;
    snprintf(buf, cap, "%s %s %s %s", verb, r1, prep, r2);
    return 1;
}

static int act_move(m2_sw_session *s, int obj, int dest, char *buf, size_t cap) {
    return act_two(s, "move", obj, "to", dest, buf, cap);
}

static int pour_into(m2_sw_session *s, int from, int to, char *buf, size_t cap) {
    return act_two(s, "pour", from, "into", to, buf, cap);
}

/* First visible object (by id) in `room` satisfying the find-task mode. */
static int pick_target(m2_sw_session *s, int mode, int room) {
    m2_sw_world *w = &s->w;
    int vis[M2_SW_MAX_OBJ];
    int n = m2_sw_visible_objects(w, vis, M2_SW_MAX_OBJ);
    for (int i = 0; i < n; i++) {
        int x = vis[i];
        const m2_sw_obj *o = &w->o[x];
        if (m2_sw_room_of(w, x) != room || x == w->agent || o->kind == M2_SW_K_ROOM || o->kind == M2_SW_K_OUTSIDE) continue;
        if (mode == 0 && !m2_sw_is_living(w, x)) continue;
        if (mode == 2 && !m2_sw_is_plant(w, x)) continue;
        if (mode == 3 && !m2_sw_is_animal(w, x)) continue;
        if (mode == 1) {
            if (m2_sw_is_living(w, x) || !(o->flags & M2_SW_F_MOVABLE) || o->kind == M2_SW_K_ANSWERBOX) continue;
            if (o->mat < 0 || o->state != M2_SW_ST_SOLID) continue;
            if (o->flags & M2_SW_F_CONTAINER) {   /* skip containers holding living things */
                int kids[32], k = m2_sw_children(w, x, kids, 32, 0), living = 0;
                for (int j = 0; j < k; j++) if (m2_sw_is_living(w, kids[j])) living = 1;
                if (living) continue;
            }
        }
        if (mode != 1 && !(o->flags & M2_SW_F_MOVABLE)) continue;
        char ref[M2_SW_REF_LEN];
        m2_sw_session_referent(s, x, ref, sizeof ref);
        if (!ref[0]) continue;
        return x;
    }
    return M2_SW_NONE;
}

static int oracle_find(m2_sw_session *s, int task, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const char *name = m2_sw_tasks[task].name;
    int mode = !strcmp(name, "find-living-thing") ? 0 : !strcmp(name, "find-non-living-thing") ? 1
             : !strcmp(name, "find-plant") ? 2 : 3;
    int box_room = m2_sw_room(w, p->location);
    int box = m2_sw_find_named(w, box_room, p->answer_box);
    int target = w->gs.cur >= 1 ? w->gs.last_obj : M2_SW_NONE;
    if (target == M2_SW_NONE) {
        /* phase 1: go where such things are and focus on one */
        int where = mode == 1 ? box_room : mode == 2 ? m2_sw_room(w, "greenhouse") : mode == 3 ? m2_sw_room(w, "outside")
                  : m2_sw_room(w, (p->seed_group + (int)strlen(p->answer_box)) % 2 ? "greenhouse" : "outside");
        int r = nav_step(s, where, buf, cap);
        if (r) return r;
        int x = pick_target(s, mode, where);
        if (x == M2_SW_NONE) return -1;
        return act_on(s, "focus on", x, buf, cap);
    }
    /* what to carry: plants travel in their flower pot */
    int carry = target;
    if (m2_sw_is_plant(w, target) && w->o[target].parent != M2_SW_NONE && w->o[w->o[target].parent].kind == M2_SW_K_FLOWERPOT)
        carry = w->o[target].parent;
    if (mode == 1) {
        /* non-living: it is already in the answer-box room; move it straight into the box */
        if (m2_sw_room_of(w, carry) != box_room && w->o[carry].parent != w->inventory) return act_on(s, "pick up", carry, buf, cap);
        int r = nav_step(s, box_room, buf, cap);
        if (r) return r;
        return act_move(s, carry, box, buf, cap);
    }
    if (w->o[carry].parent != w->inventory && !m2_sw_is_inside(w, carry, box)) return act_on(s, "pick up", carry, buf, cap);
    int r = nav_step(s, box_room, buf, cap);
    if (r) return r;
    return act_move(s, carry, box, buf, cap);
}

static int oracle_lifespan(m2_sw_session *s, int task, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const char *name = m2_sw_tasks[task].name;
    int r = nav_step(s, m2_sw_room(w, p->location), buf, cap);
    if (r) return r;
    const char *want = NULL;
    if (!strcmp(name, "lifespan-longest-lived")) want = p->long_animal;
    else if (!strcmp(name, "lifespan-shortest-lived")) want = p->short_animal;
    else want = w->gs.cur == 0 ? p->long_animal : p->short_animal;
    int x = m2_sw_find_named(w, m2_sw_room(w, p->location), want);
    if (x == M2_SW_NONE) return -1;
    return act_on(s, "focus on", x, buf, cap);
}


/* ---------------- change of state (boil / melt / freeze / any) ---------------- */

static int in_inventory(const m2_sw_world *w, int obj) { return obj != M2_SW_NONE && m2_sw_is_inside(w, obj, w->inventory); }

static int water_in(const m2_sw_world *w, int container) {
    int water = m2_sw_material_find("water");
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == container && w->o[i].mat == water && w->o[i].kind == M2_SW_K_SUBSTANCE)
            return i;
    return M2_SW_NONE;
}

/* The task substance before it is focused: first object (by id) with the substance's name. */
static int find_substance(const m2_sw_world *w, const m2_sw_params *p) {
    if (!strcmp(p->substance, "water")) return water_in(w, p->pot);
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && !strcmp(w->o[i].name, p->substance) && w->o[i].parent != M2_SW_NONE) return i;
    return M2_SW_NONE;
}

/* Rooms in BFS order from `from` (for the nearest working sink). */
static int nearest_working_sink(const m2_sw_world *w, int from) {
    int queue[M2_SW_MAX_OBJ], seen[M2_SW_MAX_OBJ] = {0}, qh = 0, qt = 0;
    queue[qt++] = from;
    seen[from] = 1;
    while (qh < qt) {
        int r = queue[qh++];
        for (int i = 0; i < w->n; i++)
            if (w->o[i].kind == M2_SW_K_SINK && !strcmp(w->o[i].name, "sink") && !(w->o[i].flags & M2_SW_F_BROKEN) && w->o[i].parent == r)
                return i;
        for (int d = 0; d < w->n; d++) {
            if (w->o[d].kind != M2_SW_K_DOOR) continue;
            int o = m2_sw_door_other(w, d, r);
            if (o == M2_SW_NONE || seen[o]) continue;
            seen[o] = 1;
            queue[qt++] = o;
        }
    }
    return M2_SW_NONE;
}

/* Brings the pot (held, or wherever it is) into `device` and switches it on. 0 when done. */
static int pot_into_device(m2_sw_session *s, const m2_sw_params *p, int device, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int pot = p->pot;
    if (w->o[pot].parent != device) {
        if (!in_inventory(w, pot)) {
            int r = nav_step(s, m2_sw_room_of(w, pot), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", pot, buf, cap);
        }
        int r = nav_step(s, m2_sw_room_of(w, device), buf, cap);
        if (r) return r;
        if ((w->o[device].flags & M2_SW_F_CLOSABLE) && !(w->o[device].flags & M2_SW_F_OPEN)) return act_on(s, "open", device, buf, cap);
        return act_move(s, pot, device, buf, cap);
    }
    if ((w->o[device].flags & M2_SW_F_DEVICE) && !(w->o[device].flags & M2_SW_F_ON)) return act_on(s, "activate", device, buf, cap);
    return 0;
}

static int measure(m2_sw_session *s, const m2_sw_params *p, int x, char *buf, size_t cap) {
    return act_two(s, "use", p->thermometer, "on", x, buf, cap);
}

/* Heat until `target` state: stove for low targets (when it works), oven, else blast furnace. */
static int heat(m2_sw_session *s, const m2_sw_params *p, int x, int target, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_material *m = &m2_sw_materials[w->o[x].mat];
    float need = target == M2_SW_ST_LIQUID ? m->melt_c : fminf(m->boil_c, m->combust_c);
    int kitchen = m2_sw_room(w, "kitchen");
    int device;
    if (need <= 150.0f && !p->stove_broken) device = m2_sw_find_named(w, kitchen, "stove");
    else if (need <= 450.0f) device = m2_sw_find_named(w, kitchen, "oven");
    else device = m2_sw_find_named(w, m2_sw_room(w, "foundry"), "blast furnace");
    int r = pot_into_device(s, p, device, buf, cap);
    if (r) return r;
    /* far from the change: let time pass in one action (goals are checked every tick) */
    if (need - w->o[x].temp > 60.0f) { snprintf(buf, cap, "wait"); return 1; }
    return measure(s, p, x, buf, cap);
}

static int cool(m2_sw_session *s, const m2_sw_params *p, int x, int target, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_material *m = &m2_sw_materials[w->o[x].mat];
    float need = target == M2_SW_ST_SOLID ? m->melt_c : m->boil_c;
    int device = need > -5.0f ? m2_sw_find_named(w, m2_sw_room(w, "kitchen"), "freezer")
                              : m2_sw_find_named(w, m2_sw_room(w, "workshop"), "ultra low temperature freezer");
    int r = pot_into_device(s, p, device, buf, cap);
    if (r) return r;
    if (w->o[x].temp - need > 20.0f) { snprintf(buf, cap, "wait"); return 1; }
    return measure(s, p, x, buf, cap);
}

static int oracle_change_state(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int kitchen = m2_sw_room(w, "kitchen");
    int pot = p->pot;
    /* 1: the thermometer */
    if (!in_inventory(w, p->thermometer)) {
        int r = nav_step(s, m2_sw_room_of(w, p->thermometer), buf, cap);
        if (r) return r;
        return act_on(s, "pick up", p->thermometer, buf, cap);
    }
    int x = gs->cur >= 1 ? gs->last_obj : find_substance(w, p);
    /* 2: the metal pot, unless the substance already sits in it */
    int pot_in_sink = w->o[pot].parent != M2_SW_NONE && w->o[w->o[pot].parent].kind == M2_SW_K_SINK;
    if (!in_inventory(w, pot) && gs->cur == 0 && !(x != M2_SW_NONE && m2_sw_is_inside(w, x, pot)) && !pot_in_sink) {
        int room = m2_sw_room_of(w, pot);
        int r = nav_step(s, room, buf, cap);
        if (r) return r;
        int c = w->o[pot].parent;
        if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
        return act_on(s, "pick up", pot, buf, cap);
    }
    (void)kitchen;
    if (gs->cur == 0) {
        /* 3: get the substance, focus on it */
        if (!strcmp(p->substance, "water")) {
            int water = water_in(w, pot);
            int sink = w->o[pot].parent != M2_SW_NONE && w->o[w->o[pot].parent].kind == M2_SW_K_SINK ? w->o[pot].parent : M2_SW_NONE;
            if (water == M2_SW_NONE) {
                if (sink == M2_SW_NONE) {
                    int target = nearest_working_sink(w, m2_sw_room_of(w, w->agent));
                    if (target == M2_SW_NONE) return -1;
                    int r = nav_step(s, m2_sw_room_of(w, target), buf, cap);
                    if (r) return r;
                    return act_move(s, pot, target, buf, cap);
                }
                return act_on(s, "activate", sink, buf, cap);
            }
            if (sink != M2_SW_NONE && (w->o[sink].flags & M2_SW_F_ON)) return act_on(s, "deactivate", sink, buf, cap);
            return act_on(s, "focus on", water, buf, cap);
        }
        if (x == M2_SW_NONE) return -1;
        int room = m2_sw_room_of(w, x);
        int r = nav_step(s, room, buf, cap);
        if (r) return r;
        for (int c = w->o[x].parent; c != M2_SW_NONE && c != room; c = w->o[c].parent)
            if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
        return act_on(s, "focus on", x, buf, cap);
    }
    if (x == M2_SW_NONE || (w->o[x].flags & M2_SW_F_DELETED) || w->o[x].mat < 0) return -1;
    /* 4: the substance goes into the metal pot */
    if (!m2_sw_is_inside(w, x, pot)) {
        if (!in_inventory(w, pot)) {
            int r = nav_step(s, m2_sw_room_of(w, pot), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", pot, buf, cap);
        }
        int r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
        if (r) return r;
        if (w->o[x].state == M2_SW_ST_SOLID) return act_move(s, x, pot, buf, cap);
        return pour_into(s, w->o[x].parent, pot, buf, cap);
    }
    /* 5: heat or cool towards the next state the goals wait for */
    int st = w->o[x].state;
    int want;
    if (p->mode == 3) {
        if (gs->stored_state < 0) return -1;
        int from = gs->stored_state;
        if (from == M2_SW_ST_SOLID) return heat(s, p, x, M2_SW_ST_LIQUID, buf, cap);
        if (from == M2_SW_ST_GAS) return cool(s, p, x, M2_SW_ST_LIQUID, buf, cap);
        return cool(s, p, x, M2_SW_ST_SOLID, buf, cap);
    }
    static const int first[3] = {M2_SW_ST_LIQUID, M2_SW_ST_SOLID, M2_SW_ST_LIQUID}, second[3] = {M2_SW_ST_GAS, M2_SW_ST_LIQUID, M2_SW_ST_SOLID};
    want = gs->cur == 1 ? first[p->mode] : second[p->mode];
    /* boiling: pick the heater for the final state right away (the liquid state passes on the way) */
    if (p->mode == 0 && st != M2_SW_ST_GAS) return heat(s, p, x, M2_SW_ST_GAS, buf, cap);
    if (want > st) return heat(s, p, x, want, buf, cap);
    return cool(s, p, x, want, buf, cap);
}

/* ---------------- use-thermometer ---------------- */

static int oracle_thermometer(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int x = p->object_id;
    if (gs->cur == 0) {
        if (!in_inventory(w, p->thermometer)) {
            int r = nav_step(s, m2_sw_room_of(w, p->thermometer), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", p->thermometer, buf, cap);
        }
        return act_on(s, "focus on", p->thermometer, buf, cap);
    }
    if (gs->cur == 1) {
        if (!in_inventory(w, x)) {
            int r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", x, buf, cap);
        }
        return act_on(s, "focus on", x, buf, cap);
    }
    int r = nav_step(s, m2_sw_room(w, p->box_location), buf, cap);
    if (r) return r;
    /* measure once in the answer-box room, then decide on the temperature at that moment */
    int measured = 0;
    for (int i = 0; i < w->n_used; i++)
        if (!strcmp(w->used[i][0], "thermometer") && !strcmp(w->used[i][1], w->o[x].name)) measured = 1;
    if (!measured) return measure(s, p, x, buf, cap);
    int box = m2_sw_find_named(w, m2_sw_room(w, p->box_location), w->o[x].temp > p->threshold ? p->box_above : p->box_below);
    return act_move(s, x, box, buf, cap);
}

/* ---------------- measure-melting-point-known-substance ---------------- */

#define MELT_MAX_MEASURES 12

static int oracle_melting(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int kitchen = m2_sw_room(w, "kitchen");
    int pot = p->pot;
    if (gs->cur == 0) {
        if (!in_inventory(w, p->thermometer)) {
            int r = nav_step(s, m2_sw_room_of(w, p->thermometer), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", p->thermometer, buf, cap);
        }
        return act_on(s, "focus on", p->thermometer, buf, cap);
    }
    int x = gs->cur >= 2 ? gs->last_obj : p->object_id;
    if (gs->cur == 1) {
        if (!strcmp(p->object, "water")) {
            x = water_in(w, pot);
            int sink = m2_sw_find_named(w, kitchen, "sink");
            if (x == M2_SW_NONE) {
                int r = nav_step(s, kitchen, buf, cap);
                if (r) return r;
                if (w->o[pot].parent != sink) {
                    int c = w->o[pot].parent;
                    if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
                    return act_move(s, pot, sink, buf, cap);
                }
                return act_on(s, "activate", sink, buf, cap);
            }
            if (w->o[sink].flags & M2_SW_F_ON) return act_on(s, "deactivate", sink, buf, cap);
            return act_on(s, "focus on", x, buf, cap);
        }
        if (x == M2_SW_NONE) return -1;
        int r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
        if (r) return r;
        for (int c = w->o[x].parent; c != M2_SW_NONE && c != m2_sw_room_of(w, x); c = w->o[c].parent)
            if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
        return act_on(s, "focus on", x, buf, cap);
    }
    if (x == M2_SW_NONE || (w->o[x].flags & M2_SW_F_DELETED)) return -1;
    /* measure: heat a solid (stove, or blast furnace above 200 C) / cool a liquid (freezer) until it changes */
    int uses = 0;
    for (int i = 0; i < w->n_used; i++) if (!strcmp(w->used[i][0], "thermometer")) uses++;
    int finished = w->o[x].state != p->state0 || uses >= MELT_MAX_MEASURES;
    if (!finished) {
        int device;
        if (p->state0 == M2_SW_ST_SOLID) {
            if (!m2_sw_is_inside(w, x, pot)) {
                int r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
                if (r) return r;
                int c = w->o[pot].parent;
                if (c != M2_SW_NONE && (w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
                return act_move(s, x, pot, buf, cap);
            }
            device = p->melting_point < 200.0 ? m2_sw_find_named(w, kitchen, "stove")
                                              : m2_sw_find_named(w, m2_sw_room(w, "foundry"), "blast furnace");
            int r = pot_into_device(s, p, device, buf, cap);
            if (r) return r;
        } else {
            device = m2_sw_find_named(w, kitchen, "freezer");
            int cup = w->o[x].parent;
            if (cup != device && w->o[cup].parent != device) {
                if (!in_inventory(w, cup)) return act_on(s, "pick up", cup, buf, cap);
                int r = nav_step(s, m2_sw_room_of(w, device), buf, cap);
                if (r) return r;
                if (!(w->o[device].flags & M2_SW_F_OPEN)) return act_on(s, "open", device, buf, cap);
                return act_move(s, cup, device, buf, cap);
            }
        }
        return measure(s, p, x, buf, cap);
    }
    int box_room = m2_sw_room(w, p->box_location);
    int r = nav_step(s, box_room, buf, cap);
    if (r) return r;
    const char *box = p->melting_point >= p->threshold ? p->box_above : p->box_below;
    return act_on(s, "focus on", m2_sw_find_named(w, box_room, box), buf, cap);
}

/* ---------------- power-component (and the renewable/nonrenewable variant) ---------------- */

static int connect_terminals(m2_sw_session *s, int ta, int tb, char *buf, size_t cap) {
    return act_two(s, "connect", ta, "to", tb, buf, cap);
}

static int oracle_power(m2_sw_session *s, const m2_sw_params *p, int renewable_task, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int part = p->part_id, src = p->source_id, w1 = p->wire1, w2 = p->wire2;
    if (part == M2_SW_NONE || src == M2_SW_NONE || w1 == M2_SW_NONE || w2 == M2_SW_NONE) return -1;
    int workshop = m2_sw_room(w, "workshop"), outside = m2_sw_room(w, "outside");
    int outdoor = renewable_task && p->renewable;
    if (gs->cur == 0) {
        int r = nav_step(s, m2_sw_room_of(w, part), buf, cap);
        if (r) return r;
        return act_on(s, "focus on", part, buf, cap);
    }
    (void)workshop;
    if (outdoor) {
        /* solar panels and wind generators work outside: carry everything there */
        const int items[4] = {part, src, w1, w2};
        int here = w->o[w->agent].parent;
        if (here != outside) {
            for (int i = 0; i < 4; i++)
                if (!in_inventory(w, items[i])) {
                    int r = nav_step(s, m2_sw_room_of(w, items[i]), buf, cap);
                    if (r) return r;
                    return act_on(s, "pick up", items[i], buf, cap);
                }
            return nav_step(s, outside, buf, cap);
        }
        for (int i = 0; i < 4; i++)
            if (in_inventory(w, items[i])) return act_on(s, "drop", items[i], buf, cap);
    }
    int sa = m2_sw_terminal_of(w, src, 0), sc = m2_sw_terminal_of(w, src, 1);
    int w1a = m2_sw_terminal_of(w, w1, 0), w1b = m2_sw_terminal_of(w, w1, 1), w2a = m2_sw_terminal_of(w, w2, 0), w2b = m2_sw_terminal_of(w, w2, 1);
    int pa = m2_sw_terminal_of(w, part, 0), pc = m2_sw_terminal_of(w, part, 1);
    const int pairs[4][2] = {{sa, w1a}, {sc, w2a}, {w1b, pc}, {w2b, pa}};
    for (int i = 0; i < 4; i++)
        if (w->o[pairs[i][0]].conn != pairs[i][1]) {
            if (w->o[pairs[i][0]].conn != M2_SW_NONE || w->o[pairs[i][1]].conn != M2_SW_NONE) {
                /* a wrong connection from an earlier deviation: undo it first */
                int bad = w->o[pairs[i][0]].conn != M2_SW_NONE ? pairs[i][0] : pairs[i][1];
                int obj = w->o[bad].parent;
                return act_on(s, "disconnect", obj, buf, cap);
            }
            return connect_terminals(s, pairs[i][0], pairs[i][1], buf, cap);
        }
    if ((w->o[src].flags & M2_SW_F_DEVICE) && !(w->o[src].flags & M2_SW_F_ON)) return act_on(s, "activate", src, buf, cap);
    snprintf(buf, cap, "wait1");
    return 1;
}

/* ---------------- test-conductivity ---------------- */

static int oracle_conductivity(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int kitchen = m2_sw_room(w, "kitchen"), workshop = m2_sw_room(w, "workshop");
    int x = gs->cur >= 1 ? gs->last_obj : p->object_id;
    int carrier = x;
    if (!strcmp(p->object, "water")) {
        int cup = p->pot;
        if (gs->cur == 0) x = water_in(w, cup);
        carrier = cup;
        if (x == M2_SW_NONE) {
            int sink = m2_sw_find_named(w, kitchen, "sink");
            int r = nav_step(s, kitchen, buf, cap);
            if (r) return r;
            if (w->o[cup].parent != sink) return act_move(s, cup, sink, buf, cap);
            return act_on(s, "activate", sink, buf, cap);
        }
        int sink = w->o[cup].parent;
        if (sink != M2_SW_NONE && w->o[sink].kind == M2_SW_K_SINK && (w->o[sink].flags & M2_SW_F_ON)) return act_on(s, "deactivate", sink, buf, cap);
    }
    if (x == M2_SW_NONE || (w->o[x].flags & M2_SW_F_DELETED)) return -1;
    if (gs->cur == 0) {
        if (!in_inventory(w, carrier)) {
            int r = nav_step(s, m2_sw_room_of(w, carrier), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", carrier, buf, cap);
        }
        return act_on(s, "focus on", x, buf, cap);
    }
    int r = nav_step(s, workshop, buf, cap);
    if (r) return r;
    if (in_inventory(w, carrier)) return act_on(s, "drop", carrier, buf, cap);
    int src = p->source_id, part = p->part_id, w1 = p->wire1, w2 = p->wire2, w3 = p->wire3;
    if (src == M2_SW_NONE || part == M2_SW_NONE || w1 == M2_SW_NONE || w2 == M2_SW_NONE || w3 == M2_SW_NONE) return -1;
    int sa = m2_sw_terminal_of(w, src, 0), sc = m2_sw_terminal_of(w, src, 1);
    int pa = m2_sw_terminal_of(w, part, 0), pc = m2_sw_terminal_of(w, part, 1);
    const int pairs[4][2] = {{sa, m2_sw_terminal_of(w, w1, 0)}, {sc, m2_sw_terminal_of(w, w2, 0)},
                             {m2_sw_terminal_of(w, w1, 1), pc}, {m2_sw_terminal_of(w, w3, 1), pa}};
    for (int i = 0; i < 4; i++)
        if (w->o[pairs[i][0]].conn != pairs[i][1]) {
            if (w->o[pairs[i][0]].conn != M2_SW_NONE || w->o[pairs[i][1]].conn != M2_SW_NONE) {
                int bad = w->o[pairs[i][0]].conn != M2_SW_NONE ? pairs[i][0] : pairs[i][1];
                return act_on(s, "disconnect", w->o[bad].parent, buf, cap);
            }
            return connect_terminals(s, pairs[i][0], pairs[i][1], buf, cap);
        }
    /* the test object between wire 2 and wire 3 */
    int w2b = m2_sw_terminal_of(w, w2, 1), w3a = m2_sw_terminal_of(w, w3, 0);
    int xt1 = m2_sw_terminal_of(w, x, 0), xt2 = m2_sw_terminal_of(w, x, 1);
    char rx[M2_SW_REF_LEN], rt[M2_SW_REF_LEN];
    m2_sw_session_referent(s, x, rx, sizeof rx);
    if (!rx[0]) return -1;
    if (xt1 == M2_SW_NONE || w->o[xt1].conn == M2_SW_NONE) {
        if (w->o[w2b].conn != M2_SW_NONE) return act_on(s, "disconnect", w2, buf, cap);
        m2_sw_session_referent(s, w2b, rt, sizeof rt);
        snprintf(buf, cap, "connect %s to %s", rx, rt);
        return 1;
    }
    if (w->o[xt2].conn == M2_SW_NONE) {
        if (w->o[w3a].conn != M2_SW_NONE) return act_on(s, "disconnect", w3, buf, cap);
        m2_sw_session_referent(s, w3a, rt, sizeof rt);
        snprintf(buf, cap, "connect %s to %s", rx, rt);
        return 1;
    }
    /* let the current settle (two wait1, as the gold path does), then read the part */
    if (w->moves - w->last_connect_move < 4) { snprintf(buf, cap, "wait1"); return 1; }
    int on = (w->o[part].flags & M2_SW_F_ON) != 0;
    int box = m2_sw_find_named(w, workshop, on ? p->box_conductive : p->box_nonconductive);
    return act_move(s, carrier, box, buf, cap);
}

/* ---------------- chemistry-mix-paint (secondary / tertiary) ---------------- */

static int paint_in(const m2_sw_world *w, int container, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == container && !strcmp(w->o[i].name, name)) return i;
    return M2_SW_NONE;
}

/* The cup (inside the task's paint furniture) that holds paint `name`. */
static int cup_with(const m2_sw_world *w, int furniture, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == furniture && w->o[i].kind == M2_SW_K_CUP && paint_in(w, i, name) != M2_SW_NONE)
            return i;
    return M2_SW_NONE;
}

static int oracle_paint(m2_sw_session *s, const m2_sw_params *p, int tertiary, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int mixer = p->mixer, furn = p->furniture;
    if (mixer == M2_SW_NONE || furn == M2_SW_NONE) return -1;
    int r;
    int carrying = 0;
    for (int i = 0; i < w->n; i++) if (w->o[i].kind == M2_SW_K_CUP && in_inventory(w, i)) carrying = 1;
    if (!carrying && w->o[w->agent].parent != m2_sw_room(w, p->location) && gs->cur == 0) {
        r = nav_step(s, m2_sw_room(w, p->location), buf, cap);
        if (r) return r;
    }
    const char *target = gs->cur == 0 ? p->secondary : p->tertiary;
    int made = paint_in(w, mixer, target);
    if (made != M2_SW_NONE) {
        r = nav_step(s, m2_sw_room_of(w, mixer), buf, cap);
        if (r) return r;
        return act_on(s, "focus on", made, buf, cap);
    }
    if ((w->o[furn].flags & M2_SW_F_CLOSABLE) && !(w->o[furn].flags & M2_SW_F_OPEN)) {
        r = nav_step(s, m2_sw_room_of(w, furn), buf, cap);
        if (r) return r;
        return act_on(s, "open", furn, buf, cap);
    }
    const char (*need)[M2_SW_NAME] = gs->cur == 0 ? p->in_sec : p->in_ter;
    for (int k = 0; k < 2; k++) {
        if (paint_in(w, mixer, need[k]) != M2_SW_NONE) continue;
        int cup = cup_with(w, furn, need[k]);
        if (cup == M2_SW_NONE) {
            /* used up here: any other cup of that paint (a carried one first, then this room, then the house) */
            int here = m2_sw_room(w, p->location);
            for (int pass = 0; pass < 3 && cup == M2_SW_NONE; pass++)
                for (int i = 0; i < w->n && cup == M2_SW_NONE; i++) {
                    if (w->o[i].kind != M2_SW_K_CUP || i == mixer || (w->o[i].flags & M2_SW_F_DELETED) || paint_in(w, i, need[k]) == M2_SW_NONE) continue;
                    if (pass == 0 && !in_inventory(w, i)) continue;
                    if (pass == 1 && m2_sw_room_of(w, i) != here) continue;
                    cup = i;
                }
            if (cup == M2_SW_NONE) return -1;
            if (m2_sw_room_of(w, cup) != here && !in_inventory(w, cup)) {
                int rr = nav_step(s, m2_sw_room_of(w, cup), buf, cap);
                if (rr) return rr;
                for (int c = w->o[cup].parent; c != M2_SW_NONE && w->o[c].kind != M2_SW_K_ROOM; c = w->o[c].parent)
                    if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
                return act_on(s, "pick up", cup, buf, cap);
            }
            if (w->o[w->agent].parent != here) {
                int rr = nav_step(s, here, buf, cap);
                if (rr) return rr;
            }
        }
        return pour_into(s, cup, mixer, buf, cap);
    }
    (void)tertiary;
    r = nav_step(s, m2_sw_room_of(w, mixer), buf, cap);
    if (r) return r;
    return act_on(s, "mix", mixer, buf, cap);
}

/* ---------------- chemistry-mix ---------------- */

static int oracle_chemistry(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int pot = p->pot;
    int r;
    int result = paint_in(w, pot, p->result);
    if (result != M2_SW_NONE) return act_on(s, "focus on", result, buf, cap);
    /* the pot sits in a sink being filled: switch the water off, take the pot back */
    int holder = w->o[pot].parent;
    if (holder != M2_SW_NONE && w->o[holder].kind == M2_SW_K_SINK) {
        if (water_in(w, pot) == M2_SW_NONE) {
            if (!(w->o[holder].flags & M2_SW_F_ON)) return act_on(s, "activate", holder, buf, cap);
            snprintf(buf, cap, "wait1");
            return 1;
        }
        if (w->o[holder].flags & M2_SW_F_ON) return act_on(s, "deactivate", holder, buf, cap);
        return act_on(s, "pick up", pot, buf, cap);
    }
    if (!in_inventory(w, pot)) {
        r = nav_step(s, m2_sw_room_of(w, pot), buf, cap);
        if (r) return r;
        int c = w->o[pot].parent;
        if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
        return act_on(s, "pick up", pot, buf, cap);
    }
    int read = 0;
    for (int i = 0; i < w->n_used; i++) if (!strcmp(w->used[i][0], "read") && !strcmp(w->used[i][1], "recipe")) read = 1;
    if (!read) {
        int recipe = m2_sw_find_named(w, M2_SW_NONE, "recipe");
        if (recipe == M2_SW_NONE) return -1;
        if (!in_inventory(w, recipe)) {
            r = nav_step(s, m2_sw_room_of(w, recipe), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", recipe, buf, cap);
        }
        return act_on(s, "read", recipe, buf, cap);
    }
    for (int k = 0; k < p->n_inputs; k++) {
        const char *in = p->inputs[k];
        if (paint_in(w, pot, in) != M2_SW_NONE) continue;
        if (!strcmp(in, "water")) {
            int sink = nearest_working_sink(w, m2_sw_room_of(w, w->agent));
            if (sink == M2_SW_NONE) return -1;
            r = nav_step(s, m2_sw_room_of(w, sink), buf, cap);
            if (r) return r;
            return act_move(s, pot, sink, buf, cap);
        }
        if (strstr(in, " paint")) {
            int cup = M2_SW_NONE;
            for (int i = 0; i < w->n && cup == M2_SW_NONE; i++)
                if (w->o[i].kind == M2_SW_K_CUP && i != pot && !(w->o[i].flags & M2_SW_F_DELETED) && paint_in(w, i, in) != M2_SW_NONE) cup = i;
            if (cup == M2_SW_NONE) return -1;
            r = nav_step(s, m2_sw_room_of(w, cup), buf, cap);
            if (r) return r;
            for (int c = w->o[cup].parent; c != M2_SW_NONE && w->o[c].kind != M2_SW_K_ROOM; c = w->o[c].parent)
                if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
            return pour_into(s, cup, pot, buf, cap);
        }
        /* a solid ingredient: the first one not already in the pot, preferring the recipe's room */
        int x = M2_SW_NONE, home = m2_sw_room(w, p->location);
        for (int pass = 0; pass < 2 && x == M2_SW_NONE; pass++)
            for (int i = 0; i < w->n && x == M2_SW_NONE; i++) {
                if ((w->o[i].flags & M2_SW_F_DELETED) || strcmp(w->o[i].name, in) || m2_sw_is_inside(w, i, pot) || w->o[i].parent == M2_SW_NONE) continue;
                if (pass == 0 && m2_sw_room_of(w, i) != home && !in_inventory(w, i)) continue;
                x = i;
            }
        if (x == M2_SW_NONE) return -1;
        if (!in_inventory(w, x)) {
            r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
            if (r) return r;
            for (int c = w->o[x].parent; c != M2_SW_NONE && w->o[c].kind != M2_SW_K_ROOM; c = w->o[c].parent)
                if ((w->o[c].flags & M2_SW_F_CLOSABLE) && !(w->o[c].flags & M2_SW_F_OPEN)) return act_on(s, "open", c, buf, cap);
            return act_on(s, "pick up", x, buf, cap);
        }
        return act_move(s, x, pot, buf, cap);
    }
    return act_on(s, "mix", pot, buf, cap);
}

/* ---------------- identify-life-stages-1 ---------------- */

/* identify-life-stages-2: go outside; focus on a tree of the type in the wanted stage when one is there,
 * otherwise wait a tick for one of them to grow into it. */
static int oracle_life_stages2(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    static const char *const stages[4] = {"seed", "seedling", "adult", "reproducing"};
    if (w->gs.cur >= 4) return -1;
    int outside = m2_sw_room(w, p->location);
    int r = nav_step(s, outside, buf, cap);
    if (r) return r;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_PLANT && !(w->o[i].flags & M2_SW_F_DELETED) && m2_sw_is_inside(w, i, outside) &&
            !strcmp(w->o[i].alt, p->part) && !strcmp(m2_sw_life_stage_name(w, i), stages[w->gs.cur]))
            return act_on(s, "focus on", i, buf, cap);
    snprintf(buf, cap, "wait1");
    return 1;
}

static int oracle_life_stages(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int x = p->part_id;
    if (x == M2_SW_NONE || w->gs.cur >= p->n_stages) return -1;
    int r = nav_step(s, m2_sw_room_of(w, x), buf, cap);
    if (r) return r;
    const char *want = m2_sw_life_family_stage(p->family, w->gs.cur);
    if (!strcmp(m2_sw_life_stage_name(w, x), want)) return act_on(s, "focus on", x, buf, cap);
    /* not there yet: let the animal grow (a stage that is already over cannot come back) */
    int idx_now = w->o[x].stage, idx_want = w->gs.cur;
    if (idx_now > idx_want) return -1;
    snprintf(buf, cap, m2_sw_life_ticks_left(w, x) > 11 ? "wait" : "wait1");
    return 1;
}

/* ---------------- grow-plant ---------------- */

/* First live object named `name` (by id) directly in `parent`, or anywhere when parent is M2_SW_NONE. */
static int first_named_in(const m2_sw_world *w, const char *name, int parent) {
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent != M2_SW_NONE && !strcmp(w->o[i].name, name) &&
            (parent == M2_SW_NONE || w->o[i].parent == parent))
            return i;
    return M2_SW_NONE;
}

/* The gold path of TaskGrowPlant, driven by the state: seed jar -> soil in flower pot 1 (already there,
 * moved from the greenhouse floor, or dug up outside with the shovel) -> a seed into the pot -> focus on
 * it -> keep water in the pot (jug filled at the greenhouse sink) until the plant is an adult -> wait. */
static int oracle_grow(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int greenhouse = m2_sw_room(w, "greenhouse");
    int pot = m2_sw_find_named(w, greenhouse, "flower pot 1");
    if (pot == M2_SW_NONE) return -1;
    int plant = M2_SW_NONE;
    for (int i = 0; i < w->n && plant == M2_SW_NONE; i++)
        if (w->o[i].kind == M2_SW_K_PLANT && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == pot && !strcmp(w->o[i].alt, p->object))
            plant = i;
    int r;
    if (plant == M2_SW_NONE) {
        int jar = first_named_in(w, "seed jar", M2_SW_NONE);
        if (jar == M2_SW_NONE) return -1;
        if (!in_inventory(w, jar)) {
            r = nav_step(s, m2_sw_room_of(w, jar), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", jar, buf, cap);
        }
        if (first_named_in(w, "soil", pot) == M2_SW_NONE) {
            int soil = first_named_in(w, "soil", w->inventory);
            if (soil == M2_SW_NONE) soil = first_named_in(w, "soil", greenhouse);
            if (soil == M2_SW_NONE) {
                /* dig: shovel first, then the ground outside */
                int outside = m2_sw_room(w, "outside");
                soil = first_named_in(w, "soil", outside);
                if (soil == M2_SW_NONE) {
                    int shovel = first_named_in(w, "shovel", M2_SW_NONE);
                    if (shovel == M2_SW_NONE) return -1;
                    if (!in_inventory(w, shovel)) {
                        r = nav_step(s, m2_sw_room_of(w, shovel), buf, cap);
                        if (r) return r;
                        return act_on(s, "pick up", shovel, buf, cap);
                    }
                    r = nav_step(s, outside, buf, cap);
                    if (r) return r;
                    snprintf(buf, cap, "use shovel in inventory on ground");
                    return 1;
                }
                r = nav_step(s, outside, buf, cap);
                if (r) return r;
                return act_on(s, "pick up", soil, buf, cap);
            }
            r = nav_step(s, greenhouse, buf, cap);
            if (r) return r;
            return act_move(s, soil, pot, buf, cap);
        }
        r = nav_step(s, greenhouse, buf, cap);
        if (r) return r;
        char pref[M2_SW_REF_LEN];
        m2_sw_session_referent(s, pot, pref, sizeof pref);
        if (!pref[0]) return -1;
        /* five identical seeds: the parser asks which one; the oracle answers 0 next step */
        snprintf(buf, cap, "move %s seed in seed jar to %s", p->object, pref);
        return 1;
    }
    r = nav_step(s, greenhouse, buf, cap);
    if (r) return r;
    if (w->focus != plant) return act_on(s, "focus on", plant, buf, cap);
    int stage = w->o[plant].stage;
    if ((stage == M2_SW_PLANT_SEED || stage == M2_SW_PLANT_SEEDLING) && water_in(w, pot) == M2_SW_NONE) {
        int sink = m2_sw_find_named(w, greenhouse, "sink"), jug = m2_sw_find_named(w, greenhouse, "jug");
        if (sink == M2_SW_NONE || jug == M2_SW_NONE) return -1;
        if (water_in(w, jug) != M2_SW_NONE) return pour_into(s, jug, pot, buf, cap);
        if (w->o[jug].parent != sink) return act_move(s, jug, sink, buf, cap);
        if (!(w->o[sink].flags & M2_SW_F_ON)) return act_on(s, "activate", sink, buf, cap);
        snprintf(buf, cap, "wait1");
        return 1;
    }
    if (stage >= M2_SW_PLANT_REPRODUCING) return -1;
    int left = m2_sw_life_ticks_left(w, plant);
    snprintf(buf, cap, left > 6 ? "wait" : "wait1");
    return 1;
}

/* ---------------- grow-fruit ---------------- */

static int count_named_in(const m2_sw_world *w, const char *name, int parent) {
    int n = 0;
    for (int i = 0; i < w->n; i++)
        if (!(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == parent && !strcmp(w->o[i].name, name)) n++;
    return n;
}

/* TaskGrowPlant's grow-fruit gold path, from the state: seed jar; soil into all three pots (moved from
 * the floor or dug up outside); a seed in each; water each pot while its plant is a seed or seedling;
 * close the greenhouse doors and open the bee hive; wait for a fruit of the right type and focus on it. */
static int oracle_grow_fruit(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int greenhouse = m2_sw_room(w, "greenhouse"), outside = m2_sw_room(w, "outside");
    /* three trees like the original's gold path; two (enough to cross-pollinate) when the soil must be
     * dug up outside, to stay well inside the 50-action budget */
    int np = p->mode == 2 ? 2 : 3;
    int pots[3], plants[3], r;
    for (int i = 0; i < np; i++) {
        char nm[M2_SW_NAME];
        snprintf(nm, sizeof nm, "flower pot %d", i + 1);
        pots[i] = m2_sw_find_named(w, greenhouse, nm);
        if (pots[i] == M2_SW_NONE) return -1;
        plants[i] = M2_SW_NONE;
        for (int j = 0; j < w->n && plants[i] == M2_SW_NONE; j++)
            if (w->o[j].kind == M2_SW_K_PLANT && !(w->o[j].flags & M2_SW_F_DELETED) && w->o[j].parent == pots[i] && !strcmp(w->o[j].alt, p->object))
                plants[i] = j;
    }
    int need_soil = 0, unplanted = 0;
    for (int i = 0; i < np; i++) {
        if (plants[i] == M2_SW_NONE) unplanted++;
        if (first_named_in(w, "soil", pots[i]) == M2_SW_NONE) need_soil++;
    }
    if (unplanted) {
        int jar = first_named_in(w, "seed jar", M2_SW_NONE);
        if (jar == M2_SW_NONE) return -1;
        if (!in_inventory(w, jar)) {
            r = nav_step(s, m2_sw_room_of(w, jar), buf, cap);
            if (r) return r;
            return act_on(s, "pick up", jar, buf, cap);
        }
        int have = count_named_in(w, "soil", w->inventory) + count_named_in(w, "soil", greenhouse);
        if (have < need_soil) {
            int shovel = first_named_in(w, "shovel", M2_SW_NONE);
            if (shovel == M2_SW_NONE) return -1;
            if (!in_inventory(w, shovel)) {
                r = nav_step(s, m2_sw_room_of(w, shovel), buf, cap);
                if (r) return r;
                return act_on(s, "pick up", shovel, buf, cap);
            }
            r = nav_step(s, outside, buf, cap);
            if (r) return r;
            int soil = first_named_in(w, "soil", outside);
            if (soil != M2_SW_NONE) return act_on(s, "pick up", soil, buf, cap);
            snprintf(buf, cap, "use shovel in inventory on ground");
            return 1;
        }
        r = nav_step(s, greenhouse, buf, cap);
        if (r) return r;
        for (int i = 0; i < np; i++) {
            if (first_named_in(w, "soil", pots[i]) != M2_SW_NONE) continue;
            int soil = first_named_in(w, "soil", w->inventory);
            if (soil == M2_SW_NONE) soil = first_named_in(w, "soil", greenhouse);
            if (soil == M2_SW_NONE) return -1;
            return act_move(s, soil, pots[i], buf, cap);
        }
        for (int i = 0; i < np; i++) {
            if (plants[i] != M2_SW_NONE) continue;
            char pref[M2_SW_REF_LEN];
            m2_sw_session_referent(s, pots[i], pref, sizeof pref);
            if (!pref[0]) return -1;
            snprintf(buf, cap, "move %s seed in seed jar to %s", p->object, pref);
            return 1;
        }
    }
    r = nav_step(s, greenhouse, buf, cap);
    if (r) return r;
    /* a fruit of the right type: focus on it */
    for (int i = 0; i < np; i++) {
        int f = first_named_in(w, p->object, plants[i]);
        if (f != M2_SW_NONE) return act_on(s, "focus on", f, buf, cap);
    }
    /* water the pots of seeds and seedlings */
    for (int i = 0; i < np; i++) {
        int st = w->o[plants[i]].stage;
        if ((st != M2_SW_PLANT_SEED && st != M2_SW_PLANT_SEEDLING) || water_in(w, pots[i]) != M2_SW_NONE) continue;
        int sink = m2_sw_find_named(w, greenhouse, "sink"), jug = m2_sw_find_named(w, greenhouse, "jug");
        if (sink == M2_SW_NONE || jug == M2_SW_NONE) return -1;
        if (water_in(w, jug) != M2_SW_NONE) return pour_into(s, jug, pots[i], buf, cap);
        if (w->o[jug].parent != sink) return act_move(s, jug, sink, buf, cap);
        if (!(w->o[sink].flags & M2_SW_F_ON)) return act_on(s, "activate", sink, buf, cap);
        break;
    }
    /* keep the bees in: close the greenhouse doors, then open the hive */
    for (int d = 0; d < w->n; d++)
        if (w->o[d].kind == M2_SW_K_DOOR && (w->o[d].flags & M2_SW_F_OPEN) && m2_sw_door_other(w, d, greenhouse) != M2_SW_NONE)
            return act_on(s, "close", d, buf, cap);
    int hive = m2_sw_find_named(w, greenhouse, "bee hive");
    if (hive != M2_SW_NONE && !(w->o[hive].flags & M2_SW_F_OPEN)) return act_on(s, "open", hive, buf, cap);
    /* wait: one tick at a time once a flower is pollinated or a seed/seedling needs watering soon */
    int fine = 0;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_FLOWER && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].extra > 0) fine = 1;
    snprintf(buf, cap, fine ? "wait1" : "wait");
    return 1;
}

/* ---------------- mendelian genetics ---------------- */

/* The pea plant (has_genes) directly in `pot`, M2_SW_NONE if none. */
static int pea_in(const m2_sw_world *w, int pot) {
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_PLANT && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == pot && w->o[i].has_genes) return i;
    return M2_SW_NONE;
}

/* Water `pot` with the jug filled at the greenhouse sink (one action of it). */
static int water_pot(m2_sw_session *s, int greenhouse, int pot, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int sink = m2_sw_find_named(w, greenhouse, "sink"), jug = m2_sw_find_named(w, greenhouse, "jug");
    if (sink == M2_SW_NONE || jug == M2_SW_NONE) return -1;
    if (water_in(w, jug) != M2_SW_NONE) return pour_into(s, jug, pot, buf, cap);
    if (w->o[jug].parent != sink) return act_move(s, jug, sink, buf, cap);
    if (!(w->o[sink].flags & M2_SW_F_ON)) return act_on(s, "activate", sink, buf, cap);
    snprintf(buf, cap, "wait1");
    return 1;
}

/* TaskMendelianGenetics1/2's experiment, shortened to fit the 50-action budget: plant the two parent seeds
 * (homozygous dominant and recessive for the trait) in the first two pots, water them while they are seeds
 * and seedlings, close the doors and open the bee hive; cross-pollination gives a pea seed (one allele of
 * each parent per trait, so every offspring is heterozygous and shows the dominant value). A seed trait is
 * read off that offspring seed; height and leaves need the offspring grown to an adult in the third pot,
 * flower traits its first flower. The
 * asked value shown by the offspring -> dominant box, else the recessive box. (The original grows 6 seeds,
 * plants 4 and counts the adults' phenotypes.) */
static int oracle_mendel(m2_sw_session *s, const m2_sw_params *p, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    int greenhouse = m2_sw_room(w, "greenhouse");
    int r = nav_step(s, greenhouse, buf, cap);
    if (r) return r;
    int pots[3], plants[3];
    for (int i = 0; i < 3; i++) {
        char nm[M2_SW_NAME];
        snprintf(nm, sizeof nm, "flower pot %d", p->pots[i]);
        pots[i] = m2_sw_find_named(w, greenhouse, nm);
        if (pots[i] == M2_SW_NONE) return -1;
        plants[i] = pea_in(w, pots[i]);
    }
    for (int i = 0; i < 2; i++) {
        if (plants[i] != M2_SW_NONE) continue;
        char pref[M2_SW_REF_LEN];
        m2_sw_session_referent(s, pots[i], pref, sizeof pref);
        if (!pref[0]) return -1;
        snprintf(buf, cap, "move %s seed in seed jar to %s", p->object, pref);   /* two seeds: the dialogue picks one */
        return 1;
    }
    /* an offspring: a pea seed grown on a parent, or the one planted in the third pot */
    int child = plants[2];
    if (child == M2_SW_NONE)
        for (int i = 0; i < w->n && child == M2_SW_NONE; i++)
            if (w->o[i].kind == M2_SW_K_PLANT && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].has_genes && w->o[i].stage == M2_SW_PLANT_SEED &&
                w->o[i].parent != M2_SW_NONE && (w->o[i].parent == plants[0] || w->o[i].parent == plants[1]))
                child = i;
    if (child != M2_SW_NONE) {
        int st = w->o[child].stage, kind = m2_sw_species_tab[p->family].kind[p->mode], visible;
        if (kind == M2_SW_TR_SEED_SHAPE || kind == M2_SW_TR_SEED_COLOR) visible = st == M2_SW_PLANT_SEED;
        else if (kind == M2_SW_TR_FLOWER_COLOR || kind == M2_SW_TR_FLOWER_SIZE) {   /* shown by its flowers */
            visible = 0;
            for (int i = 0; i < w->n; i++)
                if (w->o[i].kind == M2_SW_K_FLOWER && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].parent == child) visible = 1;
        } else visible = st == M2_SW_PLANT_ADULT || st == M2_SW_PLANT_REPRODUCING;   /* height, leaves */
        if (visible) {
            int shows = m2_sw_plant_trait_dominant(w, child, p->mode) == p->steep;
            int box = m2_sw_find_named(w, greenhouse, shows ? p->box_above : p->box_below);
            if (box == M2_SW_NONE) return -1;
            return act_on(s, "focus on", box, buf, cap);
        }
        if (plants[2] == M2_SW_NONE) {
            /* by name: the only seeds left are offspring (the session's shortest unique referent of a seed
             * on a plant can be a generic one such as "living thing" that the parser then resolves widely) */
            char pref[M2_SW_REF_LEN];
            m2_sw_session_referent(s, pots[2], pref, sizeof pref);
            if (!pref[0]) return -1;
            snprintf(buf, cap, "move %s seed to %s", p->object, pref);
            return 1;
        }
        if ((st == M2_SW_PLANT_SEED || st == M2_SW_PLANT_SEEDLING) && water_in(w, pots[2]) == M2_SW_NONE)
            return water_pot(s, greenhouse, pots[2], buf, cap);
        int left = st == M2_SW_PLANT_REPRODUCING ? 5 - w->o[child].stage_ticks : m2_sw_life_ticks_left(w, child);
        snprintf(buf, cap, left > 6 ? "wait" : "wait1");
        return 1;
    }
    /* the parents: water seeds and seedlings */
    for (int i = 0; i < 2; i++) {
        int st = w->o[plants[i]].stage;
        if ((st == M2_SW_PLANT_SEED || st == M2_SW_PLANT_SEEDLING) && water_in(w, pots[i]) == M2_SW_NONE)
            return water_pot(s, greenhouse, pots[i], buf, cap);
    }
    /* keep the bees in: close the greenhouse doors, then open the hive */
    for (int d = 0; d < w->n; d++)
        if (w->o[d].kind == M2_SW_K_DOOR && (w->o[d].flags & M2_SW_F_OPEN) && m2_sw_door_other(w, d, greenhouse) != M2_SW_NONE)
            return act_on(s, "close", d, buf, cap);
    int hive = m2_sw_find_named(w, greenhouse, "bee hive");
    if (hive != M2_SW_NONE && !(w->o[hive].flags & M2_SW_F_OPEN)) return act_on(s, "open", hive, buf, cap);
    /* one tick at a time once a flower is pollinated, or a parent is about to sprout / grow up (a seedling
     * makes no progress until watered, and the episode has only 100 ticks for two generations) */
    int fine = 0;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_FLOWER && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].extra > 0) fine = 1;
    for (int i = 0; i < 2; i++) {
        int st = w->o[plants[i]].stage;
        if ((st == M2_SW_PLANT_SEED || st == M2_SW_PLANT_SEEDLING) && m2_sw_life_ticks_left(w, plants[i]) < 11) fine = 1;
    }
    snprintf(buf, cap, fine ? "wait1" : "wait");
    return 1;
}

/* ---------------- inclined planes ---------------- */

/* The experiment of TaskInclinedPlane1.actionSequenceMeasureBlockFallTime, with a fixed duration: for each
 * plane in turn, put the block on it, start the stopwatch, wait, look at the plane (noting how far down the
 * block is), stop and read the stopwatch. Both planes get the same number of ticks, so the plane where the
 * block got further is the steeper (or less rough) one. (The original waits until the block reaches the
 * bottom; on a 10 degree plane that takes 116 ticks, more than the 100-move episode.) The unordered goals
 * b1/aTime1/dTime1/readTime1, b2/... (indices 2..9) record where the experiment stands; each plane keeps
 * what the last "look at" showed (seen_move, seen_pos), so the oracle needs no memory of its own. */
static int oracle_planes(m2_sw_session *s, const m2_sw_params *p, int by_surface, char *buf, size_t cap) {
    m2_sw_world *w = &s->w;
    const m2_sw_goalseq *gs = &w->gs;
    int r = nav_step(s, m2_sw_room(w, p->location), buf, cap);
    if (r) return r;
    int watch = p->watch_id, block = p->block_id;
    if (!in_inventory(w, watch)) return act_on(s, "pick up", watch, buf, cap);
    for (int k = 0; k < 2; k++) {
        const int *done = gs->done_unordered + 2 + 4 * k;
        int plane = p->plane_id[k];
        if (!done[0]) return act_move(s, block, plane, buf, cap);
        if (!done[1]) return act_on(s, "activate", watch, buf, cap);
        if (!done[2]) {
            if (w->o[watch].watch_user < 11) { snprintf(buf, cap, "wait"); return 1; }
            int on_since = w->moves - w->o[watch].watch_cur;   /* the move the stopwatch was started */
            if (w->o[plane].seen_move < on_since) return act_on(s, "look at", plane, buf, cap);
            return act_on(s, "deactivate", watch, buf, cap);
        }
        if (!done[3]) return act_on(s, "examine", watch, buf, cap);
    }
    /* further down = steeper / less friction */
    int further = w->o[p->plane_id[0]].seen_pos < w->o[p->plane_id[1]].seen_pos ? 0 : 1;
    int pick = by_surface ? (p->steep ? 1 - further : further) : (p->steep ? further : 1 - further);
    return act_on(s, "focus on", p->plane_id[pick], buf, cap);
}

int m2_sw_oracle_next(m2_sw_session *s, int task, const m2_sw_params *p, char *buf, size_t cap) {
    const char *name = m2_sw_tasks[task].name;
    if (s->n_amb > 0) {
        /* identical objects (seeds in the jar, piles of soil): the grow tasks move one that is not yet
         * where it should be (not already in a flower pot); other tasks take the first option */
        int pick = 0;
        if (!strncmp(name, "grow-", 5) || !strncmp(name, "mendelian-", 10))
            for (int i = 0; i < s->n_amb; i++) {
                int x = s->amb[i].obj[0], y = s->amb[i].obj[1], in_pot = 0;
                if (x == M2_SW_NONE || y == M2_SW_NONE) break;
                for (int c = s->w.o[x].parent; c != M2_SW_NONE; c = s->w.o[c].parent)
                    if (s->w.o[c].kind == M2_SW_K_FLOWERPOT) in_pot = 1;
                if (!in_pot) { pick = i; break; }
            }
        snprintf(buf, cap, "%d", pick);
        return 0;
    }
    if (s->w.gs.failed || s->w.gs.cur >= s->w.gs.n_ordered) return -1;
    int r = -1;
    if (!strncmp(name, "find-", 5)) r = oracle_find(s, task, p, buf, cap);
    else if (!strncmp(name, "lifespan-", 9)) r = oracle_lifespan(s, task, p, buf, cap);
    else if (m2_sw_state_task_mode(name) >= 0) r = oracle_change_state(s, p, buf, cap);
    else if (!strcmp(name, "use-thermometer")) r = oracle_thermometer(s, p, buf, cap);
    else if (!strncmp(name, "measure-melting-point-", 22)) r = oracle_melting(s, p, buf, cap);
    else if (!strncmp(name, "test-conductivity", 17)) r = oracle_conductivity(s, p, buf, cap);
    else if (!strcmp(name, "chemistry-mix")) r = oracle_chemistry(s, p, buf, cap);
    else if (!strcmp(name, "identify-life-stages-1")) r = oracle_life_stages(s, p, buf, cap);
    else if (!strcmp(name, "identify-life-stages-2")) r = oracle_life_stages2(s, p, buf, cap);
    else if (!strcmp(name, "grow-plant")) r = oracle_grow(s, p, buf, cap);
    else if (!strcmp(name, "grow-fruit")) r = oracle_grow_fruit(s, p, buf, cap);
    else if (!strncmp(name, "mendelian-genetics-", 19)) r = oracle_mendel(s, p, buf, cap);
    else if (!strncmp(name, "chemistry-mix-paint", 19)) r = oracle_paint(s, p, strstr(name, "tertiary") != NULL, buf, cap);
    else if (!strncmp(name, "power-component", 15)) r = oracle_power(s, p, strcmp(name, "power-component") != 0, buf, cap);
    else if (!strcmp(name, "inclined-plane-determine-angle")) r = oracle_planes(s, p, 0, buf, cap);
    else if (!strncmp(name, "inclined-plane-friction", 23)) r = oracle_planes(s, p, 1, buf, cap);
    return r > 0 ? 0 : -1;
}
