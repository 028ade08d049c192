/* ScienceWorld electricity, after objects/electricalcomponent/ and processes/ElectricalConductivity.scala:
 *  - every component has two terminals (anode/cathode when polarized, terminal 1/2 otherwise); a
 *    terminal connects to at most one other terminal;
 *  - generators put 9 V on their anode and ground on their cathode while on (batteries always,
 *    gas/nuclear generators when activated, solar panels/wind generators when outside);
 *  - a polarized user (light bulb, motor, buzzer) is on when its anode reaches ground and its
 *    cathode touches a 9 V terminal; unpolarized conductors (wires, conductive objects) pass the
 *    voltage on in the same way, one step per tick in tree order, so circuits take a tick or two. */
#include "env/scienceworld/sw.h"
#include <stdio.h>
#include <string.h>

int sw_is_polarized(const sw_world *w, int obj) {
    int k = w->o[obj].kind;
    return k == K_LIGHTBULB || k == K_SWITCH || k == K_BATTERY;
}

/* Terminals carry their index (0/1) in `extra`; components get them right after themselves. */
int sw_terminal_of(const sw_world *w, int obj, int which) {
    int fast = obj + 1 + which;
    if (fast < w->n && w->o[fast].kind == K_TERMINAL && w->o[fast].parent == obj && w->o[fast].extra == which) return fast;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == K_TERMINAL && w->o[i].parent == obj && w->o[i].extra == which) return i;
    return SW_NONE;
}

static int add_terminal(sw_world *w, const char *name, int parent, int hidden, int which) {
    int t = sw_new(w, K_TERMINAL, name, parent);
    if (t == SW_NONE) return t;
    w->o[t].flags = hidden ? F_HIDDEN : 0;
    w->o[t].conn = SW_NONE;
    w->o[t].extra = (int16_t)which;
    return t;
}

int sw_add_component(sw_world *w, int kind, const char *name, int parent) {
    int id = sw_new(w, kind, name, parent);
    if (id == SW_NONE) return id;
    int pol = sw_is_polarized(w, id);
    add_terminal(w, pol ? "anode" : "terminal 1", id, 0, 0);
    add_terminal(w, pol ? "cathode" : "terminal 2", id, 0, 1);
    if (kind == K_WIRE) w->o[id].flags |= F_CONDUCTIVE;
    return id;
}

int sw_ensure_terminals(sw_world *w, int obj) {
    if (sw_terminal_of(w, obj, 0) != SW_NONE) return 0;
    if (w->n + 2 > SW_MAX_OBJ) return -1;
    w->o[obj].flags |= F_HASTERM;
    add_terminal(w, "terminal 1", obj, 1, 0);
    add_terminal(w, "terminal 2", obj, 1, 1);
    return 0;
}

int sw_is_electrically_connected(const sw_world *w, int obj) {
    for (int k = 0; k < 2; k++) {
        int t = sw_terminal_of(w, obj, k);
        if (t != SW_NONE && w->o[t].conn != SW_NONE) return 1;
    }
    return 0;
}

void sw_disconnect(sw_world *w, int obj) {
    for (int k = 0; k < 2; k++) {
        int t = sw_terminal_of(w, obj, k);
        if (t == SW_NONE || w->o[t].conn == SW_NONE) continue;
        int other = w->o[t].conn;
        if (w->o[other].conn == t) w->o[other].conn = SW_NONE;
        w->o[t].conn = SW_NONE;
    }
}

/* The other terminal of the component holding `t` (switches conduct only when on). */
static int other_terminal(const sw_world *w, int t) {
    int parent = w->o[t].parent;
    if (parent == SW_NONE) return SW_NONE;
    if (w->o[parent].kind == K_SWITCH && !(w->o[parent].flags & F_ON)) return SW_NONE;
    int a = sw_terminal_of(w, parent, 0), b = sw_terminal_of(w, parent, 1);
    return t == a ? b : t == b ? a : SW_NONE;
}

static int connects_to_voltage(const sw_world *w, int t) {
    int c = w->o[t].conn;
    return c != SW_NONE && w->o[c].volt == VOLT_GEN;
}

static int connects_to_ground(const sw_world *w, int t, int steps) {
    if (steps <= 0) return 0;   /* the original never stops on loops; we cap the walk */
    int c = w->o[t].conn;
    if (c == SW_NONE) return 0;
    int po = w->o[c].parent;
    if (po == SW_NONE) return 0;
    const sw_obj *p = &w->o[po];
    if (p->kind == K_BATTERY) return w->o[c].volt == VOLT_GROUND;
    if (p->kind != K_LIGHTBULB && p->kind != K_SWITCH && p->kind != K_WIRE && !(p->flags & F_CONDUCTIVE)) return 0;
    int other = other_terminal(w, c);
    if (other == SW_NONE) return 0;
    return connects_to_ground(w, other, steps - 1);
}

static int generator_on(const sw_world *w, int obj) {
    const sw_obj *o = &w->o[obj];
    if (o->extra == GEN_BATTERY) return 1;
    if (o->extra == GEN_FUEL) return (o->flags & F_ON) != 0;
    /* renewable: on when outside, reached through open containers */
    int c = o->parent;
    for (int k = 0; k < 10 && c != SW_NONE; k++) {
        if (w->o[c].kind == K_OUTSIDE) return 1;
        if (!(w->o[c].flags & F_OPEN) || w->o[c].kind == K_ROOM) return 0;
        c = w->o[c].parent;
    }
    return 0;
}

static void conductor_tick(sw_world *w, int obj, int activate) {
    int t1 = sw_terminal_of(w, obj, 0), t2 = sw_terminal_of(w, obj, 1);
    if (t1 == SW_NONE || t2 == SW_NONE) return;
    if (!(w->o[obj].flags & F_CONDUCTIVE) && w->o[obj].kind != K_WIRE) {
        w->o[t1].volt = w->o[t2].volt = VOLT_NONE;
        return;
    }
    if (activate) w->o[obj].flags &= ~F_ON;
    if (connects_to_ground(w, t1, 10) && connects_to_voltage(w, t2)) {
        w->o[t1].volt = VOLT_GEN;
        if (activate) w->o[obj].flags |= F_ON;
    } else if (connects_to_ground(w, t2, 10) && connects_to_voltage(w, t1)) {
        w->o[t2].volt = VOLT_GEN;
        if (activate) w->o[obj].flags |= F_ON;
    }
}

void sw_elec_tick(sw_world *w, int obj) {
    sw_obj *o = &w->o[obj];
    if (o->kind == K_BATTERY) {
        int on = generator_on(w, obj);
        if (o->extra == GEN_RENEWABLE) { if (on) o->flags |= F_ON; else o->flags &= ~F_ON; }
        int a = sw_terminal_of(w, obj, 0), c = sw_terminal_of(w, obj, 1);
        if (a != SW_NONE) w->o[a].volt = on ? VOLT_GEN : VOLT_NONE;
        if (c != SW_NONE) w->o[c].volt = on ? VOLT_GROUND : VOLT_NONE;
        return;
    }
    if (o->kind == K_LIGHTBULB) {
        int a = sw_terminal_of(w, obj, 0), c = sw_terminal_of(w, obj, 1);
        o->flags &= ~F_ON;
        if (a != SW_NONE && c != SW_NONE && connects_to_ground(w, a, 10) && connects_to_voltage(w, c)) {
            w->o[a].volt = VOLT_GEN;
            o->flags |= F_ON;
        }
        return;
    }
    if (o->kind == K_WIRE) { conductor_tick(w, obj, 1); return; }
    if (o->kind != K_SWITCH && o->kind != K_TERMINAL && (o->flags & F_HASTERM) && sw_terminal_of(w, obj, 0) != SW_NONE)
        conductor_tick(w, obj, 0);
}

/* areComponentsElectricallyConnected(part, name): walk from the part's anode/terminal 1 side. */
static int connected_walk(const sw_world *w, int part, int t_in, const char *name, int count) {
    if (count <= 0) return 0;
    int a = sw_terminal_of(w, part, 0), b = sw_terminal_of(w, part, 1);
    int other = t_in == a ? b : a;
    if (w->o[part].kind == K_SWITCH && !(w->o[part].flags & F_ON)) return 0;
    if (other == SW_NONE) return 0;
    int c = w->o[other].conn;
    if (c == SW_NONE) return 0;
    int po = w->o[c].parent;
    if (po != SW_NONE && !strcmp(w->o[po].name, name)) return 1;
    return po != SW_NONE && connected_walk(w, po, c, name, count - 1);
}

int sw_connected_to_named(const sw_world *w, int obj, const char *name) {
    int t = sw_terminal_of(w, obj, 0);
    if (t == SW_NONE) return 0;
    return connected_walk(w, obj, t, name, 10);
}

void sw_connected_to_str(const sw_world *w, int terminal, sw_sb *b) {
    int c = w->o[terminal].conn;
    if (c == SW_NONE) { sw_sb_puts(b, "nothing"); return; }
    int p = w->o[c].parent;
    sw_sb_printf(b, "a %s on %s", w->o[c].name, p != SW_NONE ? w->o[p].name : "");
}
