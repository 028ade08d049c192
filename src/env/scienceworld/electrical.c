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

int m2_sw_is_polarized(const m2_sw_world *w, int obj) {
    int k = w->o[obj].kind;
    return k == M2_SW_K_LIGHTBULB || k == M2_SW_K_SWITCH || k == M2_SW_K_BATTERY;
}

/* Terminals carry their index (0/1) in `extra`; components get them right after themselves. */
int m2_sw_terminal_of(const m2_sw_world *w, int obj, int which) {
    int fast = obj + 1 + which;
    if (fast < w->n && w->o[fast].kind == M2_SW_K_TERMINAL && w->o[fast].parent == obj && w->o[fast].extra == which) return fast;
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == M2_SW_K_TERMINAL && w->o[i].parent == obj && w->o[i].extra == which) return i;
    return M2_SW_NONE;
}

static int add_terminal(m2_sw_world *w, const char *name, int parent, int hidden, int which) {
    int t = m2_sw_new(w, M2_SW_K_TERMINAL, name, parent);
    if (t == M2_SW_NONE) return t;
    w->o[t].flags = hidden ? M2_SW_F_HIDDEN : 0;
    w->o[t].conn = M2_SW_NONE;
    w->o[t].extra = (int16_t)which;
    return t;
}

int m2_sw_add_component(m2_sw_world *w, int kind, const char *name, int parent) {
    int id = m2_sw_new(w, kind, name, parent);
    if (id == M2_SW_NONE) return id;
    int pol = m2_sw_is_polarized(w, id);
    add_terminal(w, pol ? "anode" : "terminal 1", id, 0, 0);
    add_terminal(w, pol ? "cathode" : "terminal 2", id, 0, 1);
    if (kind == M2_SW_K_WIRE) w->o[id].flags |= M2_SW_F_CONDUCTIVE;
    return id;
}

int m2_sw_ensure_terminals(m2_sw_world *w, int obj) {
    if (m2_sw_terminal_of(w, obj, 0) != M2_SW_NONE) return 0;
    if (w->n + 2 > M2_SW_MAX_OBJ) return -1;
    w->o[obj].flags |= M2_SW_F_HASTERM;
    add_terminal(w, "terminal 1", obj, 1, 0);
    add_terminal(w, "terminal 2", obj, 1, 1);
    return 0;
}

int m2_sw_is_electrically_connected(const m2_sw_world *w, int obj) {
    for (int k = 0; k < 2; k++) {
        int t = m2_sw_terminal_of(w, obj, k);
        if (t != M2_SW_NONE && w->o[t].conn != M2_SW_NONE) return 1;
    }
    return 0;
}

void m2_sw_disconnect(m2_sw_world *w, int obj) {
    for (int k = 0; k < 2; k++) {
        int t = m2_sw_terminal_of(w, obj, k);
        if (t == M2_SW_NONE || w->o[t].conn == M2_SW_NONE) continue;
        int other = w->o[t].conn;
        if (w->o[other].conn == t) w->o[other].conn = M2_SW_NONE;
        w->o[t].conn = M2_SW_NONE;
    }
}

/* The other terminal of the component holding `t` (switches conduct only when on). */
static int other_terminal(const m2_sw_world *w, int t) {
    int parent = w->o[t].parent;
    if (parent == M2_SW_NONE) return M2_SW_NONE;
    if (w->o[parent].kind == M2_SW_K_SWITCH && !(w->o[parent].flags & M2_SW_F_ON)) return M2_SW_NONE;
    int a = m2_sw_terminal_of(w, parent, 0), b = m2_sw_terminal_of(w, parent, 1);
    return t == a ? b : t == b ? a : M2_SW_NONE;
}

static int connects_to_voltage(const m2_sw_world *w, int t) {
    int c = w->o[t].conn;
    return c != M2_SW_NONE && w->o[c].volt == M2_SW_VOLT_GEN;
}

static int connects_to_ground(const m2_sw_world *w, int t, int steps) {
    if (steps <= 0) return 0;   /* the original never stops on loops; we cap the walk */
    int c = w->o[t].conn;
    if (c == M2_SW_NONE) return 0;
    int po = w->o[c].parent;
    if (po == M2_SW_NONE) return 0;
    const m2_sw_obj *p = &w->o[po];
    if (p->kind == M2_SW_K_BATTERY) return w->o[c].volt == M2_SW_VOLT_GROUND;
    if (p->kind != M2_SW_K_LIGHTBULB && p->kind != M2_SW_K_SWITCH && p->kind != M2_SW_K_WIRE && !(p->flags & M2_SW_F_CONDUCTIVE)) return 0;
    int other = other_terminal(w, c);
    if (other == M2_SW_NONE) return 0;
    return connects_to_ground(w, other, steps - 1);
}

static int generator_on(const m2_sw_world *w, int obj) {
    const m2_sw_obj *o = &w->o[obj];
    if (o->extra == M2_SW_GEN_BATTERY) return 1;
    if (o->extra == M2_SW_GEN_FUEL) return (o->flags & M2_SW_F_ON) != 0;
    /* renewable: on when outside, reached through open containers */
    int c = o->parent;
    for (int k = 0; k < 10 && c != M2_SW_NONE; k++) {
        if (w->o[c].kind == M2_SW_K_OUTSIDE) return 1;
        if (!(w->o[c].flags & M2_SW_F_OPEN) || w->o[c].kind == M2_SW_K_ROOM) return 0;
        c = w->o[c].parent;
    }
    return 0;
}

static void conductor_tick(m2_sw_world *w, int obj, int activate) {
    int t1 = m2_sw_terminal_of(w, obj, 0), t2 = m2_sw_terminal_of(w, obj, 1);
    if (t1 == M2_SW_NONE || t2 == M2_SW_NONE) return;
    if (!(w->o[obj].flags & M2_SW_F_CONDUCTIVE) && w->o[obj].kind != M2_SW_K_WIRE) {
        w->o[t1].volt = w->o[t2].volt = M2_SW_VOLT_NONE;
        return;
    }
    if (activate) w->o[obj].flags &= ~M2_SW_F_ON;
    if (connects_to_ground(w, t1, 10) && connects_to_voltage(w, t2)) {
        w->o[t1].volt = M2_SW_VOLT_GEN;
        if (activate) w->o[obj].flags |= M2_SW_F_ON;
    } else if (connects_to_ground(w, t2, 10) && connects_to_voltage(w, t1)) {
        w->o[t2].volt = M2_SW_VOLT_GEN;
        if (activate) w->o[obj].flags |= M2_SW_F_ON;
    }
}

void m2_sw_elec_tick(m2_sw_world *w, int obj) {
    m2_sw_obj *o = &w->o[obj];
    if (o->kind == M2_SW_K_BATTERY) {
        int on = generator_on(w, obj);
        if (o->extra == M2_SW_GEN_RENEWABLE) { if (on) o->flags |= M2_SW_F_ON; else o->flags &= ~M2_SW_F_ON; }
        int a = m2_sw_terminal_of(w, obj, 0), c = m2_sw_terminal_of(w, obj, 1);
        if (a != M2_SW_NONE) w->o[a].volt = on ? M2_SW_VOLT_GEN : M2_SW_VOLT_NONE;
        if (c != M2_SW_NONE) w->o[c].volt = on ? M2_SW_VOLT_GROUND : M2_SW_VOLT_NONE;
        return;
    }
    if (o->kind == M2_SW_K_LIGHTBULB) {
        int a = m2_sw_terminal_of(w, obj, 0), c = m2_sw_terminal_of(w, obj, 1);
        o->flags &= ~M2_SW_F_ON;
        if (a != M2_SW_NONE && c != M2_SW_NONE && connects_to_ground(w, a, 10) && connects_to_voltage(w, c)) {
            w->o[a].volt = M2_SW_VOLT_GEN;
            o->flags |= M2_SW_F_ON;
        }
        return;
    }
    if (o->kind == M2_SW_K_WIRE) { conductor_tick(w, obj, 1); return; }
    if (o->kind != M2_SW_K_SWITCH && o->kind != M2_SW_K_TERMINAL && (o->flags & M2_SW_F_HASTERM) && m2_sw_terminal_of(w, obj, 0) != M2_SW_NONE)
        conductor_tick(w, obj, 0);
}

/* areComponentsElectricallyConnected(part, name): walk from the part's anode/terminal 1 side. */
static int connected_walk(const m2_sw_world *w, int part, int t_in, const char *name, int count) {
    if (count <= 0) return 0;
    int a = m2_sw_terminal_of(w, part, 0), b = m2_sw_terminal_of(w, part, 1);
    int other = t_in == a ? b : a;
    if (w->o[part].kind == M2_SW_K_SWITCH && !(w->o[part].flags & M2_SW_F_ON)) return 0;
    if (other == M2_SW_NONE) return 0;
    int c = w->o[other].conn;
    if (c == M2_SW_NONE) return 0;
    int po = w->o[c].parent;
    if (po != M2_SW_NONE && !strcmp(w->o[po].name, name)) return 1;
    return po != M2_SW_NONE && connected_walk(w, po, c, name, count - 1);
}

int m2_sw_connected_to_named(const m2_sw_world *w, int obj, const char *name) {
    int t = m2_sw_terminal_of(w, obj, 0);
    if (t == M2_SW_NONE) return 0;
    return connected_walk(w, obj, t, name, 10);
}

void m2_sw_connected_to_str(const m2_sw_world *w, int terminal, m2_strbuf *b) {
    int c = w->o[terminal].conn;
    if (c == M2_SW_NONE) { m2_strbuf_puts(b, "nothing"); return; }
    int p = w->o[c].parent;
    m2_strbuf_appendf(b, "a %s on %s", w->o[c].name, p != M2_SW_NONE ? w->o[p].name : "");
}
