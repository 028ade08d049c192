/* Observation texts of alfred.twl2 (alfworld 0.5.0), written out by hand as C string formats.
 * Lists follow TextWorld: items joined by ", " and the last by ", and " (so two items read
 * "a x 1, and a y 2"), "nothing" when empty; the indefinite article is always "a". Lists are in
 * internal-id order (scene->obj_order / recep_order). */
#include "env/alfworld/alfworld.h"
#include <string.h>

const char m2_aw_help_text[] =
    "\nAvailable commands:\n"
    "  look:                             look around your current location\n"
    "  inventory:                        check your current inventory\n"
    "  go to (receptacle):               move to a receptacle\n"
    "  open (receptacle):                open a receptacle\n"
    "  close (receptacle):               close a receptacle\n"
    "  take (object) from (receptacle):  take an object from a receptacle\n"
    "  move (object) to (receptacle):  place an object in or on a receptacle\n"
    "  examine (something):              examine a receptacle or an object\n"
    "  use (object):                     use an object\n"
    "  heat (object) with (receptacle):  heat an object using a receptacle\n"
    "  clean (object) with (receptacle): clean an object using a receptacle\n"
    "  cool (object) with (receptacle):  cool an object using a receptacle\n"
    "  slice (object) with (object):     slice an object using a sharp object\n";

/* Emits list items one at a time; the separator depends on whether a next item exists, so items are
 * buffered one behind. */
typedef struct { m2_aw_sb *b; const char *pending; int n; const char *art; } lister;

static void list_add(lister *l, const char *item) {
    if (l->pending) {
        if (l->n > 1) m2_aw_sb_puts(l->b, ", ");
        m2_aw_sb_puts(l->b, l->art);
        m2_aw_sb_puts(l->b, l->pending);
    }
    l->pending = item;
    l->n++;
}

static void list_end(lister *l) {
    if (!l->n) { m2_aw_sb_puts(l->b, "nothing"); return; }
    if (l->n > 1) m2_aw_sb_puts(l->b, ", and ");
    m2_aw_sb_puts(l->b, l->art);
    m2_aw_sb_puts(l->b, l->pending);
}

static void list_contents(const m2_aw_scene *s, const m2_aw_state *st, int r, m2_aw_sb *b) {
    lister l = {b, NULL, 0, "a "};
    for (int i = 0; i < s->n_obj; i++) {
        int o = s->obj_order[i];
        if (st->in[o] == r) list_add(&l, s->objs[o].name);
    }
    list_end(&l);
}

static void recep_text(const m2_aw_scene *s, const m2_aw_state *st, int r, m2_aw_sb *b) {
    const char *name = s->receps[r].name;
    if (s->receps[r].openable && st->opened[r]) {
        m2_aw_sb_printf(b, "The %s is open. In it, you see ", name);
        list_contents(s, st, r, b);
        m2_aw_sb_puts(b, ".");
    } else if (s->receps[r].openable) {
        m2_aw_sb_printf(b, "The %s is closed.", name);
    } else {
        m2_aw_sb_printf(b, "On the %s, you see ", name);
        list_contents(s, st, r, b);
        m2_aw_sb_puts(b, ".");
    }
}

void m2_aw_text_recep(const m2_aw_scene *s, const m2_aw_state *st, int r, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    recep_text(s, st, r, &b);
}

static void look_text(const m2_aw_scene *s, const m2_aw_state *st, m2_aw_sb *b) {
    int here = 0;
    for (int r = 0; r < s->n_recep; r++) here |= s->receps[r].loc == st->loc;
    if (!here) {
        m2_aw_sb_puts(b, "You are in the middle of a room. Looking quickly around you, you see ");
        lister l = {b, NULL, 0, "a "};
        for (int i = 0; i < s->n_recep; i++) list_add(&l, s->receps[s->recep_order[i]].name);
        list_end(&l);
        m2_aw_sb_puts(b, ".");
        return;
    }
    m2_aw_sb_puts(b, "You are facing the ");
    lister l = {b, NULL, 0, ""};
    for (int i = 0; i < s->n_recep; i++) {
        int r = s->recep_order[i];
        if (s->receps[r].loc == st->loc) list_add(&l, s->receps[r].name);
    }
    list_end(&l);
    /* objects lying at the location outside every receptacle (only game files have them) */
    m2_aw_sb_puts(b, ". Next to it, you see ");
    lister f = {b, NULL, 0, "a "};
    for (int i = 0; i < s->n_obj; i++) {
        int o = s->obj_order[i];
        if (st->in[o] < 0 && st->held != o && s->floor_loc[o] == st->loc) list_add(&f, s->objs[o].name);
    }
    list_end(&f);
    m2_aw_sb_puts(b, ".");
}

void m2_aw_text_look(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    look_text(s, st, &b);
}

void m2_aw_text_intro(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    m2_aw_sb_puts(&b, "-= Welcome to TextWorld, ALFRED! =-\n\n");
    look_text(s, st, &b);
    m2_aw_sb_puts(&b, "\n\n");
    m2_aw_sb_puts(&b, s->task_text);
}

void m2_aw_text_inventory(const m2_aw_scene *s, const m2_aw_state *st, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    if (st->held >= 0) m2_aw_sb_printf(&b, "You are carrying: a %s.", s->objs[st->held].name);
    else m2_aw_sb_puts(&b, "You are not carrying anything.");
}

void m2_aw_text_examine_obj(const m2_aw_scene *s, const m2_aw_state *st, int o, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    const char *n = s->objs[o].name;
    uint32_t f = s->objs[o].flags;
    int cl = st->bits[o] & M2_AW_S_CLEAN, hot = st->bits[o] & M2_AW_S_HOT, cool = st->bits[o] & M2_AW_S_COOL;
    int sl = st->bits[o] & M2_AW_S_SLICED, tog = st->bits[o] & M2_AW_S_TOGGLED;
    /* the grammar's rules, first match wins */
    if (f & M2_AW_F_RECEP_OBJ) m2_aw_sb_printf(&b, "This is a normal %s. In it, you see nothing.", n);
    else if (cl && hot && sl) m2_aw_sb_printf(&b, "This is a hot and clean sliced %s.", n);
    else if (cl && cool && sl) m2_aw_sb_printf(&b, "This is a cool and clean sliced %s.", n);
    else if (cl && sl) m2_aw_sb_printf(&b, "This is a clean sliced %s.", n);
    else if (hot && sl) m2_aw_sb_printf(&b, "This is a hot sliced %s.", n);
    else if (cool && sl) m2_aw_sb_printf(&b, "This is a cool sliced %s.", n);
    else if (cl && hot) m2_aw_sb_printf(&b, "This is a hot and clean %s.", n);
    else if (cl && cool) m2_aw_sb_printf(&b, "This is a cool and clean %s.", n);
    else if (hot) m2_aw_sb_printf(&b, "This is a hot %s.", n);
    else if (cl) m2_aw_sb_printf(&b, "This is a clean %s.", n);
    else if (cool) m2_aw_sb_printf(&b, "This is a cold %s.", n);
    else if ((f & M2_AW_F_TOGGLE) && tog) m2_aw_sb_printf(&b, "This %s is on.", n);
    else if (f & M2_AW_F_TOGGLE) m2_aw_sb_printf(&b, "This %s is off.", n);
    else if ((f & M2_AW_F_SLICEABLE) && sl) m2_aw_sb_printf(&b, "This is a sliced %s.", n);
    else m2_aw_sb_printf(&b, "There's nothing special about %s.", n);
}
