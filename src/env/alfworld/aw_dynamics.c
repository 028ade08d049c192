/* The 14 ALFWorld commands over a scene: parsing, preconditions (alfred.pddl), effects, feedback,
 * the admissible list and the goal test. One predicate (m2_aw_applicable) serves both the parser
 * path of step() and the admissible enumeration, so the two always agree. */
#include "env/alfworld/alfworld.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int m2_aw_state_init(m2_aw_state *st, const m2_aw_scene *s, m2_err *err) {
    memset(st, 0, sizeof *st);
    size_t no = s->n_obj ? s->n_obj : 1, nr = s->n_recep ? s->n_recep : 1;
    st->in = malloc(no * sizeof *st->in);
    st->bits = malloc(no);
    st->opened = malloc(nr);
    st->seen = malloc(nr);
    if (!st->in || !st->bits || !st->opened || !st->seen) {
        m2_aw_state_free(st);
        return m2_errorf(err, M2_ENOMEM, "alfworld state: out of memory");
    }
    m2_aw_state_reset(st, s);
    return 0;
}

void m2_aw_state_reset(m2_aw_state *st, const m2_aw_scene *s) {
    st->loc = s->start_loc;
    st->held = s->init_held;
    memcpy(st->in, s->init_in, (size_t)s->n_obj * sizeof *st->in);
    memcpy(st->bits, s->init_bits, (size_t)s->n_obj);
    memcpy(st->opened, s->init_opened, (size_t)s->n_recep);
    memset(st->seen, 0, (size_t)s->n_recep);
}

void m2_aw_state_free(m2_aw_state *st) {
    if (!st) return;
    free(st->in);
    free(st->bits);
    free(st->opened);
    free(st->seen);
    memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------- parsing */

static int bsearch_name(const m2_aw_scene *s, const int *by_name, int n, int is_obj, const char *name, size_t len) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const char *m = is_obj ? s->objs[by_name[mid]].name : s->receps[by_name[mid]].name;
        int c = strncmp(m, name, len);
        if (!c && m[len]) c = 1;
        if (!c) return by_name[mid];
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}
static int find_obj(const m2_aw_scene *s, const char *p, size_t len) { return bsearch_name(s, s->objs_by_name, s->n_obj, 1, p, len); }
static int find_rec(const m2_aw_scene *s, const char *p, size_t len) { return bsearch_name(s, s->receps_by_name, s->n_recep, 0, p, len); }

static int starts(const char *s, const char *prefix, const char **rest) {
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n)) return 0;
    *rest = s + n;
    return 1;
}

/* "X <sep> Y" inside [p, end): finds sep, looks X and Y up with the given finders. */
static int split2(const m2_aw_scene *s, const char *p, const char *end, const char *sep,
                  int (*fa)(const m2_aw_scene *, const char *, size_t), int (*fb)(const m2_aw_scene *, const char *, size_t),
                  int *a, int *b) {
    size_t sl = strlen(sep);
    for (const char *q = p; q + sl <= end; q++) {
        if (strncmp(q, sep, sl)) continue;
        int x = fa(s, p, (size_t)(q - p)), y = fb(s, q + sl, (size_t)(end - q - sl));
        if (x >= 0 && y >= 0) { *a = x; *b = y; return 0; }
    }
    return -1;
}

int m2_aw_parse(const m2_aw_scene *s, const char *text, m2_aw_cmd *out) {
    out->verb = M2_AW_C_NONE; out->a = out->b = -1;
    if (!text) return -1;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r') text++;
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) end--;
    size_t len = (size_t)(end - text);
    const char *r;
    if (len == 4 && !strncmp(text, "look", 4)) { out->verb = M2_AW_C_LOOK; return 0; }
    if (len == 9 && !strncmp(text, "inventory", 9)) { out->verb = M2_AW_C_INVENTORY; return 0; }
    if (len == 4 && !strncmp(text, "help", 4)) { out->verb = M2_AW_C_HELP; return 0; }
    if (len > 200) return -1;
    if (starts(text, "go to ", &r)) {
        out->a = find_rec(s, r, (size_t)(end - r));
        if (out->a < 0) return -1;
        out->verb = M2_AW_C_GOTO;
        return 0;
    }
    if (starts(text, "open ", &r) || starts(text, "close ", &r)) {
        out->a = find_rec(s, r, (size_t)(end - r));
        if (out->a < 0) return -1;
        out->verb = text[0] == 'o' ? M2_AW_C_OPEN : M2_AW_C_CLOSE;
        return 0;
    }
    if (starts(text, "examine ", &r)) {
        if ((out->a = find_rec(s, r, (size_t)(end - r))) >= 0) { out->verb = M2_AW_C_EXAMINE_R; return 0; }
        if ((out->a = find_obj(s, r, (size_t)(end - r))) >= 0) { out->verb = M2_AW_C_EXAMINE_O; return 0; }
        return -1;
    }
    if (starts(text, "use ", &r)) {
        out->a = find_obj(s, r, (size_t)(end - r));
        if (out->a < 0) return -1;
        out->verb = M2_AW_C_USE;
        return 0;
    }
    if (starts(text, "take ", &r)) {
        if (split2(s, r, end, " from ", find_obj, find_rec, &out->a, &out->b)) return -1;
        out->verb = M2_AW_C_TAKE;
        return 0;
    }
    if (starts(text, "move ", &r)) {
        if (split2(s, r, end, " to ", find_obj, find_rec, &out->a, &out->b)) return -1;
        out->verb = M2_AW_C_MOVE;
        return 0;
    }
    if (starts(text, "put ", &r)) {   /* the pre-0.4 dialect: put X in/on Y (also "in" or "on") = move X to Y */
        if (split2(s, r, end, " in/on ", find_obj, find_rec, &out->a, &out->b) &&
            split2(s, r, end, " in ", find_obj, find_rec, &out->a, &out->b) &&
            split2(s, r, end, " on ", find_obj, find_rec, &out->a, &out->b))
            return -1;
        out->verb = M2_AW_C_MOVE;
        return 0;
    }
    static const struct { const char *pre; int verb; } withs[] = {
        {"heat ", M2_AW_C_HEAT}, {"cool ", M2_AW_C_COOL}, {"clean ", M2_AW_C_CLEAN}, {"slice ", M2_AW_C_SLICE}};
    for (size_t k = 0; k < sizeof withs / sizeof withs[0]; k++) {
        if (!starts(text, withs[k].pre, &r)) continue;
        int ok = withs[k].verb == M2_AW_C_SLICE ? split2(s, r, end, " with ", find_obj, find_obj, &out->a, &out->b)
                                             : split2(s, r, end, " with ", find_obj, find_rec, &out->a, &out->b);
        if (ok) return -1;
        out->verb = withs[k].verb;
        return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------- preconditions */

static inline int here(const m2_aw_scene *s, const m2_aw_state *st, int r) { return s->receps[r].loc == st->loc; }
static inline int reachable(const m2_aw_scene *s, const m2_aw_state *st, int r) {
    return !s->receps[r].openable || st->opened[r];
}
/* object in a receptacle at the agent's location (PDDL objectAtLocation) */
static inline int obj_here(const m2_aw_scene *s, const m2_aw_state *st, int o) {
    int r = st->in[o];
    return r >= 0 && here(s, st, r);
}

int m2_aw_applicable(const m2_aw_scene *s, const m2_aw_state *st, const m2_aw_cmd *c) {
    int a = c->a, b = c->b;
    switch (c->verb) {
    case M2_AW_C_LOOK: case M2_AW_C_INVENTORY: case M2_AW_C_HELP: return 1;
    case M2_AW_C_GOTO: return a >= 0 && !here(s, st, a);
    case M2_AW_C_OPEN: return a >= 0 && s->receps[a].openable && here(s, st, a) && !st->opened[a];
    case M2_AW_C_CLOSE: return a >= 0 && s->receps[a].openable && here(s, st, a) && st->opened[a];
    case M2_AW_C_EXAMINE_R: return a >= 0 && here(s, st, a);
    case M2_AW_C_EXAMINE_O:
        return a >= 0 && (st->held == a || (obj_here(s, st, a) && reachable(s, st, st->in[a])));
    case M2_AW_C_TAKE:
        return a >= 0 && b >= 0 && st->held < 0 && (s->objs[a].flags & M2_AW_F_PICKUP) && st->in[a] == b &&
               here(s, st, b) && reachable(s, st, b);
    case M2_AW_C_MOVE:
        return a >= 0 && b >= 0 && st->held == a && here(s, st, b) && reachable(s, st, b) &&
               s->can_contain[s->receps[b].cls * s->n_cls + s->objs[a].cls];
    case M2_AW_C_HEAT:
        return a >= 0 && b >= 0 && st->held == a && (s->objs[a].flags & M2_AW_F_HEATABLE) &&
               s->receps[b].cls == s->cls_microwave && here(s, st, b);
    case M2_AW_C_COOL:
        return a >= 0 && b >= 0 && st->held == a && (s->objs[a].flags & M2_AW_F_COOLABLE) &&
               s->receps[b].cls == s->cls_fridge && here(s, st, b);
    case M2_AW_C_CLEAN:
        return a >= 0 && b >= 0 && st->held == a && (s->objs[a].flags & M2_AW_F_CLEANABLE) &&
               s->receps[b].cls == s->cls_sinkbasin && here(s, st, b);
    case M2_AW_C_USE: return a >= 0 && (s->objs[a].flags & M2_AW_F_TOGGLE) && obj_here(s, st, a);
    case M2_AW_C_SLICE:
        return a >= 0 && b >= 0 && a != b && (s->objs[a].flags & M2_AW_F_SLICEABLE) && st->held == b &&
               (s->objs[b].cls == s->cls_knife || s->objs[b].cls == s->cls_butterknife) && obj_here(s, st, a);
    }
    return 0;
}

/* ---------------------------------------------------------------- effects + feedback */

void m2_aw_apply(const m2_aw_scene *s, m2_aw_state *st, const m2_aw_cmd *c, char *buf, size_t cap) {
    m2_aw_sb b = {buf, 0, cap};
    if (cap) buf[0] = 0;
    int x = c->a, y = c->b;
    switch (c->verb) {
    case M2_AW_C_LOOK: m2_aw_text_look(s, st, buf, cap); return;
    case M2_AW_C_INVENTORY: m2_aw_text_inventory(s, st, buf, cap); return;
    case M2_AW_C_HELP: m2_aw_sb_puts(&b, m2_aw_help_text); return;
    case M2_AW_C_GOTO:
        st->loc = s->receps[x].loc;
        if (reachable(s, st, x)) st->seen[x] = 1;
        m2_aw_sb_printf(&b, "You arrive at %s. ", s->receps[x].name);
        m2_aw_text_recep(s, st, x, buf + b.len, cap - b.len);
        return;
    case M2_AW_C_OPEN:
        st->opened[x] = 1;
        st->seen[x] = 1;
        m2_aw_sb_printf(&b, "You open the %s. ", s->receps[x].name);
        m2_aw_text_recep(s, st, x, buf + b.len, cap - b.len);
        return;
    case M2_AW_C_CLOSE:
        st->opened[x] = 0;
        m2_aw_sb_printf(&b, "You close the %s.", s->receps[x].name);
        return;
    case M2_AW_C_EXAMINE_R:
        if (reachable(s, st, x)) st->seen[x] = 1;
        m2_aw_text_recep(s, st, x, buf, cap);
        return;
    case M2_AW_C_EXAMINE_O: m2_aw_text_examine_obj(s, st, x, buf, cap); return;
    case M2_AW_C_TAKE:
        st->in[x] = -1;
        st->held = x;
        m2_aw_sb_printf(&b, "You pick up the %s from the %s.", s->objs[x].name, s->receps[y].name);
        return;
    case M2_AW_C_MOVE:
        st->in[x] = y;
        st->seen[y] = 1;
        st->held = -1;
        m2_aw_sb_printf(&b, "You move the %s to the %s.", s->objs[x].name, s->receps[y].name);
        return;
    case M2_AW_C_HEAT:
        st->bits[x] = (uint8_t)((st->bits[x] | M2_AW_S_HOT) & ~M2_AW_S_COOL);
        m2_aw_sb_printf(&b, "You heat the %s using the %s.", s->objs[x].name, s->receps[y].name);
        return;
    case M2_AW_C_COOL:
        st->bits[x] = (uint8_t)((st->bits[x] | M2_AW_S_COOL) & ~M2_AW_S_HOT);
        m2_aw_sb_printf(&b, "You cool the %s using the %s.", s->objs[x].name, s->receps[y].name);
        return;
    case M2_AW_C_CLEAN:
        st->bits[x] |= M2_AW_S_CLEAN;
        m2_aw_sb_printf(&b, "You clean the %s using the %s.", s->objs[x].name, s->receps[y].name);
        return;
    case M2_AW_C_USE:
        /* ToggleObject flips isOn and sets isToggled for good; the feedback tests isToggled, so it always
         * reads "You turn on" (as in alfworld). */
        st->bits[x] = (uint8_t)((st->bits[x] ^ M2_AW_S_ON) | M2_AW_S_TOGGLED);
        m2_aw_sb_printf(&b, "You turn on the %s.", s->objs[x].name);
        return;
    case M2_AW_C_SLICE:
        st->bits[x] |= M2_AW_S_SLICED;
        m2_aw_sb_printf(&b, "You sliced the %s with the %s.", s->objs[x].name, s->objs[y].name);
        return;
    }
    m2_aw_sb_puts(&b, "Nothing happens.");
}

int m2_aw_format_cmd(const m2_aw_scene *s, const m2_aw_cmd *c, char *buf, size_t cap) {
    const char *on = c->a >= 0 && c->a < s->n_obj ? s->objs[c->a].name : "?";
    const char *ra = c->a >= 0 && c->a < s->n_recep ? s->receps[c->a].name : "?";
    const char *rb = c->b >= 0 && c->b < s->n_recep ? s->receps[c->b].name : "?";
    int n;
    switch (c->verb) {
    case M2_AW_C_LOOK: n = snprintf(buf, cap, "look"); break;
    case M2_AW_C_INVENTORY: n = snprintf(buf, cap, "inventory"); break;
    case M2_AW_C_HELP: n = snprintf(buf, cap, "help"); break;
    case M2_AW_C_GOTO: n = snprintf(buf, cap, "go to %s", ra); break;
    case M2_AW_C_OPEN: n = snprintf(buf, cap, "open %s", ra); break;
    case M2_AW_C_CLOSE: n = snprintf(buf, cap, "close %s", ra); break;
    case M2_AW_C_EXAMINE_R: n = snprintf(buf, cap, "examine %s", ra); break;
    case M2_AW_C_EXAMINE_O: n = snprintf(buf, cap, "examine %s", on); break;
    case M2_AW_C_USE: n = snprintf(buf, cap, "use %s", on); break;
    case M2_AW_C_TAKE: n = snprintf(buf, cap, "take %s from %s", on, rb); break;
    case M2_AW_C_MOVE: n = snprintf(buf, cap, "move %s to %s", on, rb); break;
    case M2_AW_C_HEAT: n = snprintf(buf, cap, "heat %s with %s", on, rb); break;
    case M2_AW_C_COOL: n = snprintf(buf, cap, "cool %s with %s", on, rb); break;
    case M2_AW_C_CLEAN: n = snprintf(buf, cap, "clean %s with %s", on, rb); break;
    case M2_AW_C_SLICE:
        n = snprintf(buf, cap, "slice %s with %s", on, c->b >= 0 && c->b < s->n_obj ? s->objs[c->b].name : "?");
        break;
    default: n = snprintf(buf, cap, "Nothing happens."); return -1;
    }
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

/* ---------------------------------------------------------------- goal */

int m2_aw_won(const m2_aw_scene *s, const m2_aw_state *st) {
    const m2_aw_goal *g = &s->goal;
    int ok = 0;
    switch (g->type) {
    case M2_AW_PICK: case M2_AW_CLEAN: case M2_AW_HEAT: case M2_AW_COOL: {
        uint8_t need = g->type == M2_AW_CLEAN ? M2_AW_S_CLEAN : g->type == M2_AW_HEAT ? M2_AW_S_HOT : g->type == M2_AW_COOL ? M2_AW_S_COOL : 0;
        for (int o = 0; o < s->n_obj && !ok; o++) {
            int r = st->in[o];
            ok = s->objs[o].cls == g->obj_cls && r >= 0 && s->receps[r].cls == g->recep_cls && (st->bits[o] & need) == need;
        }
        break;
    }
    case M2_AW_PICK_TWO:
        for (int o = 0; o < s->n_obj && !ok; o++) {
            int r = st->in[o];
            if (s->objs[o].cls != g->obj_cls || r < 0 || s->receps[r].cls != g->recep_cls) continue;
            for (int o2 = o + 1; o2 < s->n_obj && !ok; o2++) ok = st->in[o2] == r && s->objs[o2].cls == g->obj_cls;
        }
        break;
    case M2_AW_LOOK:
        if (st->held < 0 || s->objs[st->held].cls != g->obj_cls) return 0;
        for (int o = 0; o < s->n_obj && !ok; o++)
            ok = s->objs[o].cls == g->toggle_cls && (st->bits[o] & M2_AW_S_TOGGLED) &&
                 (obj_here(s, st, o) || (st->in[o] < 0 && st->held != o && s->floor_loc[o] == st->loc));
        break;
    }
    if (ok && g->all_closed)
        for (int r = 0; r < s->n_recep; r++) if (st->opened[r]) return 0;
    return ok;
}

/* ---------------------------------------------------------------- admissible commands */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void add_static(m2_aw_cmdlist *l, const char *str) { if (l->n < l->cap) l->items[l->n++] = str; }

static void add_dyn(m2_aw_cmdlist *l, const m2_aw_scene *s, int verb, int a, int b) {
    m2_aw_cmd c = {verb, a, b};
    size_t room = l->buf_cap - l->buf_len;
    if (room < 2 * M2_AW_NAME_MAX + 24 || l->n >= l->cap) return;   /* sized in advance; never happens */
    if (m2_aw_format_cmd(s, &c, l->buf + l->buf_len, room)) return;
    /* buf was sized before formatting started, so it does not move during this call */
    l->items[l->n++] = l->buf + l->buf_len;
    l->buf_len += strlen(l->buf + l->buf_len) + 1;
}

int m2_aw_admissible(const m2_aw_scene *s, const m2_aw_state *st, m2_aw_cmdlist *l) {
    /* per receptacle: go to | examine + open/close + move/heat/cool/clean; per object: examine, use, take,
     * slice; plus held examine and the three fixed commands */
    int max_items = 8 * s->n_recep + 5 * s->n_obj + 16;
    size_t max_buf = (size_t)(2 * s->n_obj + 4 * s->n_recep + 8) * (2 * M2_AW_NAME_MAX + 24);
    if (l->cap < max_items) {
        const char **it = realloc(l->items, (size_t)max_items * sizeof *it);
        if (!it) return -1;
        l->items = it;
        l->cap = max_items;
    }
    if (l->buf_cap < max_buf) {
        char *b = realloc(l->buf, max_buf);
        if (!b) return -1;
        l->buf = b;
        l->buf_cap = max_buf;
    }
    l->n = 0;
    l->buf_len = 0;
    add_static(l, "help");
    add_static(l, "inventory");
    add_static(l, "look");
    int held = st->held;
    if (held >= 0) add_static(l, s->cmd_exo[held]);
    for (int r = 0; r < s->n_recep; r++) {
        if (!here(s, st, r)) { add_static(l, s->cmd_goto[r]); continue; }
        add_static(l, s->cmd_exr[r]);
        if (s->receps[r].openable) add_static(l, st->opened[r] ? s->cmd_close[r] : s->cmd_open[r]);

        if (held >= 0) {
            m2_aw_cmd c = {M2_AW_C_MOVE, held, r};
            if (m2_aw_applicable(s, st, &c)) add_dyn(l, s, M2_AW_C_MOVE, held, r);
            int rc = s->receps[r].cls;
            if (rc == s->cls_microwave && (s->objs[held].flags & M2_AW_F_HEATABLE)) add_dyn(l, s, M2_AW_C_HEAT, held, r);
            if (rc == s->cls_fridge && (s->objs[held].flags & M2_AW_F_COOLABLE)) add_dyn(l, s, M2_AW_C_COOL, held, r);
            if (rc == s->cls_sinkbasin && (s->objs[held].flags & M2_AW_F_CLEANABLE)) add_dyn(l, s, M2_AW_C_CLEAN, held, r);
        }
    }
    int knife = held >= 0 && (s->objs[held].cls == s->cls_knife || s->objs[held].cls == s->cls_butterknife);
    for (int o = 0; o < s->n_obj; o++) {
        int r = st->in[o];
        if (r < 0 || !here(s, st, r)) continue;
        uint32_t f = s->objs[o].flags;
        if (f & M2_AW_F_TOGGLE) add_static(l, s->cmd_use[o]);
        if (knife && (f & M2_AW_F_SLICEABLE)) add_dyn(l, s, M2_AW_C_SLICE, o, held);
        if (!reachable(s, st, r)) continue;
        add_static(l, s->cmd_exo[o]);
        if (held < 0 && (f & M2_AW_F_PICKUP)) add_dyn(l, s, M2_AW_C_TAKE, o, r);
    }
    qsort(l->items, (size_t)l->n, sizeof *l->items, cmp_str);
    int w = 0;
    for (int i = 0; i < l->n; i++)
        if (!w || strcmp(l->items[w - 1], l->items[i])) l->items[w++] = l->items[i];
    l->n = w;
    return 0;
}

void m2_aw_cmdlist_free(m2_aw_cmdlist *l) {
    if (!l) return;
    free(l->items);
    free(l->buf);
    memset(l, 0, sizeof *l);
}
