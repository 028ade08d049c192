#define _GNU_SOURCE
/* ALFWorld scenes: memory, ALFWorld's numbering of names, and the scene generator. */
#include "env/alfworld/alfworld.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const task_names[] = {
    NULL, "pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place"};
static const char *const task_short[] = {NULL, "pick", "look", "clean", "heat", "cool", "pick_two"};

const char *m2_aw_task_type_name(int t) { return (t >= 1 && t <= 6) ? task_names[t] : NULL; }

int m2_aw_task_type_parse(const char *s) {
    if (!s) return -1;
    for (int t = 1; t <= 6; t++)
        if (!strcmp(s, task_names[t]) || !strcmp(s, task_short[t])) return t;
    return -1;
}

/* ---------------------------------------------------------------- string builder (fixed buffer) */

void m2_aw_sb_puts(m2_aw_sb *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + 1 >= b->cap) return;
    size_t room = b->cap - 1 - b->len;
    if (n > room) n = room;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void m2_aw_sb_printf(m2_aw_sb *b, const char *fmt, ...) {
    if (b->len + 1 >= b->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    b->len += (size_t)n;
    if (b->len >= b->cap) b->len = b->cap - 1;
}

/* ---------------------------------------------------------------- scene memory */

int m2_aw_scene_alloc(m2_aw_scene *s, int n_cls, int n_recep, int n_obj, int n_loc, m2_err *err) {
    memset(s, 0, sizeof *s);
    if (n_cls < 1 || n_recep < 0 || n_obj < 0 || n_loc < 1 || n_cls > 4096 || n_recep > 4096 || n_obj > 8192 || n_loc > 8192)
        return m2_errorf(err, M2_EINVAL, "alfworld scene: impossible sizes (%d classes, %d receptacles, %d objects, %d locations)",
                         n_cls, n_recep, n_obj, n_loc);
    s->n_cls = n_cls; s->n_recep = n_recep; s->n_obj = n_obj; s->n_loc = n_loc;
    size_t nr = n_recep ? n_recep : 1, no = n_obj ? n_obj : 1;
    s->cls_name = calloc((size_t)n_cls, sizeof *s->cls_name);
    s->can_contain = calloc((size_t)n_cls * n_cls, 1);
    s->receps = calloc(nr, sizeof *s->receps);
    s->objs = calloc(no, sizeof *s->objs);
    s->loc_id = calloc((size_t)n_loc, sizeof *s->loc_id);
    s->init_in = calloc(no, sizeof *s->init_in);
    s->floor_loc = calloc(no, sizeof *s->floor_loc);
    s->init_bits = calloc(no, 1);
    s->init_opened = calloc(nr, 1);
    s->objs_by_name = calloc(no, sizeof *s->objs_by_name);
    s->receps_by_name = calloc(nr, sizeof *s->receps_by_name);
    s->obj_order = calloc(no, sizeof *s->obj_order);
    s->recep_order = calloc(nr, sizeof *s->recep_order);
    s->cmd_goto = calloc(nr, sizeof *s->cmd_goto);
    s->cmd_open = calloc(nr, sizeof *s->cmd_open);
    s->cmd_close = calloc(nr, sizeof *s->cmd_close);
    s->cmd_exr = calloc(nr, sizeof *s->cmd_exr);
    s->cmd_exo = calloc(no, sizeof *s->cmd_exo);
    s->cmd_use = calloc(no, sizeof *s->cmd_use);
    if (!s->cls_name || !s->can_contain || !s->receps || !s->objs || !s->loc_id || !s->init_in || !s->floor_loc || !s->init_bits ||
        !s->init_opened || !s->objs_by_name || !s->receps_by_name || !s->obj_order || !s->recep_order || !s->cmd_goto || !s->cmd_open || !s->cmd_close ||
        !s->cmd_exr || !s->cmd_exo || !s->cmd_use) {
        m2_aw_scene_free(s);
        return m2_errorf(err, M2_ENOMEM, "alfworld scene: out of memory");
    }
    for (int i = 0; i < n_obj; i++) s->init_in[i] = s->floor_loc[i] = -1;
    s->init_held = -1;
    s->goal.recep_cls = s->goal.toggle_cls = s->goal.obj_cls = -1;
    return 0;
}

void m2_aw_scene_free(m2_aw_scene *s) {
    if (!s) return;
    free(s->cls_name); free(s->can_contain); free(s->receps); free(s->objs); free(s->loc_id);
    free(s->init_in); free(s->floor_loc); free(s->init_bits); free(s->init_opened); free(s->objs_by_name); free(s->receps_by_name); free(s->obj_order); free(s->recep_order);
    free(s->cmd_goto); free(s->cmd_open); free(s->cmd_close); free(s->cmd_exr); free(s->cmd_exo); free(s->cmd_use);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- names */

void m2_aw_mangle(const char *id, char *out, size_t cap) {
    size_t n = 0;
    if (!cap) return;
    for (const char *p = id; *p; p++) {
        const char *rep = NULL;
        char one[2] = {*p, 0};
        switch (*p) {
        case '|': rep = "_bar_"; break;
        case '-': rep = "_minus_"; break;
        case '+': rep = "_plus_"; break;
        case '.': rep = "_dot_"; break;
        case ',': rep = "_comma_"; break;
        default: rep = one;
        }
        for (const char *q = rep; *q; q++) {
            if (n + 1 >= cap) { out[n] = 0; return; }
            out[n++] = *q;
        }
    }
    out[n] = 0;
}

void m2_aw_demangle(const char *m, char *out, size_t cap) {
    static const struct { const char *from; char to; } tab[] = {
        {"_bar_", '|'}, {"_minus_", '-'}, {"_plus_", '+'}, {"_dot_", '.'}, {"_comma_", ','}};
    size_t n = 0;
    if (!cap) return;
    while (*m && n + 1 < cap) {
        int hit = 0;
        for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
            size_t l = strlen(tab[k].from);
            if (!strncmp(m, tab[k].from, l)) { out[n++] = tab[k].to; m += l; hit = 1; break; }
        }
        if (!hit) out[n++] = *m++;
    }
    out[n] = 0;
}

typedef struct { char key[M2_AW_ID_MAX * 2]; char base[M2_AW_NAME_MAX]; int is_obj, idx; } name_ent;

static int cmp_ent_idx(const void *a, const void *b, void *ctx) {
    const name_ent *e = ctx;
    return strcmp(e[*(const int *)a].key, e[*(const int *)b].key);
}
static int cmp_base_key_idx(const void *a, const void *b, void *ctx) {
    const name_ent *e = ctx, *x = &e[*(const int *)a], *y = &e[*(const int *)b];
    int c = strcmp(x->base, y->base);
    return c ? c : strcmp(x->key, y->key);
}
static int cmp_obj_name(const void *a, const void *b, void *ctx) {
    const m2_aw_scene *s = ctx;
    return strcmp(s->objs[*(const int *)a].name, s->objs[*(const int *)b].name);
}
static int cmp_recep_name(const void *a, const void *b, void *ctx) {
    const m2_aw_scene *s = ctx;
    return strcmp(s->receps[*(const int *)a].name, s->receps[*(const int *)b].name);
}

static int find_cls_ci(const m2_aw_scene *s, const char *name) {
    for (int i = 0; i < s->n_cls; i++)
        if (!strcasecmp(s->cls_name[i], name)) return i;
    return -1;
}

/* prefix + name into a fixed buffer (names are short; this runs for every entity at every reset) */
static void cat2(char *dst, size_t cap, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la + 1 > cap) la = cap - 1;
    if (la + lb + 1 > cap) lb = cap - 1 - la;
    memcpy(dst, a, la);
    memcpy(dst + la, b, lb);
    dst[la + lb] = 0;
}

static void name_num(char *dst, size_t cap, const char *base, int num) {
    char digits[16];
    int k = 0;
    do { digits[k++] = (char)('0' + num % 10); num /= 10; } while (num > 0 && k < 15);
    size_t lb = strlen(base);
    if (lb + 1 + (size_t)k + 1 > cap) { dst[0] = 0; return; }
    memcpy(dst, base, lb);
    dst[lb] = ' ';
    for (int i = 0; i < k; i++) dst[lb + 1 + i] = digits[k - 1 - i];
    dst[lb + 1 + k] = 0;
}

int m2_aw_scene_finish(m2_aw_scene *s, m2_err *err) {
    int n = s->n_recep + s->n_obj;
    name_ent *e = malloc((size_t)(n ? n : 1) * sizeof *e);
    int *ix = malloc((size_t)(n ? n : 1) * sizeof *ix);
    if (!e || !ix) { free(e); free(ix); return m2_errorf(err, M2_ENOMEM, "alfworld scene: out of memory"); }
    for (int i = 0; i < n; i++) {
        int is_obj = i >= s->n_recep, idx = is_obj ? i - s->n_recep : i;
        const char *id = is_obj ? s->objs[idx].id : s->receps[idx].id;
        m2_aw_mangle(id, e[i].key, sizeof e[i].key);
        for (char *p = e[i].key; *p; p++) *p = (char)tolower((unsigned char)*p);
        /* Demangler: name = text before the first "_bar_", + "basin" when the id mentions a basin */
        const char *bar = strstr(e[i].key, "_bar_");
        size_t l = bar ? (size_t)(bar - e[i].key) : strlen(e[i].key);
        if (l >= M2_AW_NAME_MAX - 12) l = M2_AW_NAME_MAX - 12;
        memcpy(e[i].base, e[i].key, l);
        e[i].base[l] = 0;
        if (bar && strstr(e[i].key, "basin")) strcat(e[i].base, "basin");
        e[i].is_obj = is_obj;
        e[i].idx = idx;
        ix[i] = i;
    }
    qsort_r(ix, (size_t)n, sizeof *ix, cmp_ent_idx, e);
    for (int i = 1; i < n; i++)
        if (!strcmp(e[ix[i]].key, e[ix[i - 1]].key)) {
            char dup[M2_AW_ID_MAX * 2];
            snprintf(dup, sizeof dup, "%s", e[ix[i]].key);
            free(e); free(ix);
            return m2_errorf(err, M2_EFORMAT, "%s: duplicate entity id '%s'", s->source, dup);
        }
    int no = 0, nr = 0;
    for (int i = 0; i < n; i++) {
        if (e[ix[i]].is_obj) s->obj_order[no++] = e[ix[i]].idx;
        else s->recep_order[nr++] = e[ix[i]].idx;
    }
    /* numbers per base name from the top down in sorted-id order (the Demangler pops from [1..k]) */
    qsort_r(ix, (size_t)n, sizeof *ix, cmp_base_key_idx, e);
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && !strcmp(e[ix[j]].base, e[ix[i]].base)) j++;
        for (int q = i; q < j; q++) {
            const name_ent *x = &e[ix[q]];
            char *name = x->is_obj ? s->objs[x->idx].name : s->receps[x->idx].name;
            name_num(name, M2_AW_NAME_MAX, x->base, j - q);
        }
        i = j;
    }
    free(e);
    free(ix);
    for (int i = 0; i < s->n_obj; i++) s->objs_by_name[i] = i;
    for (int i = 0; i < s->n_recep; i++) s->receps_by_name[i] = i;
    qsort_r(s->objs_by_name, (size_t)s->n_obj, sizeof(int), cmp_obj_name, s);
    qsort_r(s->receps_by_name, (size_t)s->n_recep, sizeof(int), cmp_recep_name, s);
    s->cls_microwave = find_cls_ci(s, "Microwave");
    s->cls_fridge = find_cls_ci(s, "Fridge");
    s->cls_sinkbasin = find_cls_ci(s, "SinkBasin");
    s->cls_knife = find_cls_ci(s, "Knife");
    s->cls_butterknife = find_cls_ci(s, "ButterKnife");
    for (int r = 0; r < s->n_recep; r++) {
        const char *nm = s->receps[r].name;
        cat2(s->cmd_goto[r], sizeof s->cmd_goto[r], "go to ", nm);
        cat2(s->cmd_open[r], sizeof s->cmd_open[r], "open ", nm);
        cat2(s->cmd_close[r], sizeof s->cmd_close[r], "close ", nm);
        cat2(s->cmd_exr[r], sizeof s->cmd_exr[r], "examine ", nm);
    }
    for (int o = 0; o < s->n_obj; o++) {
        cat2(s->cmd_exo[o], sizeof s->cmd_exo[o], "examine ", s->objs[o].name);
        cat2(s->cmd_use[o], sizeof s->cmd_use[o], "use ", s->objs[o].name);
    }
    return 0;
}

/* ---------------------------------------------------------------- episode counts */

/* Per task type (1..6): ALFWorld's game counts (train 3,553; valid_seen 140; valid_unseen 134). */
static const int counts[3][6] = {
    {790, 308, 650, 459, 533, 813},
    {35, 13, 27, 16, 25, 24},
    {24, 18, 31, 23, 21, 17},
};

int m2_aw_num_generated(int type, m2_split split) {
    if ((int)split < 0 || split > 2) return 0;
    if (type == 0) {
        int n = 0;
        for (int t = 0; t < 6; t++) n += counts[split][t];
        return n;
    }
    return (type >= 1 && type <= 6) ? counts[split][type - 1] : 0;
}

/* ---------------------------------------------------------------- generator */

static int room_ok(int type, int room) {
    switch (type) {
    case M2_AW_LOOK: return room == M2_AW_ROOM_BEDROOM || room == M2_AW_ROOM_LIVING;
    case M2_AW_CLEAN: return room == M2_AW_ROOM_BATHROOM || room == M2_AW_ROOM_KITCHEN;
    case M2_AW_HEAT: case M2_AW_COOL: return room == M2_AW_ROOM_KITCHEN;
    default: return 1;
    }
}

static const char *const lamp_hosts[] = {"Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "DiningTable",
                                         "CounterTop", "TVStand"};

static int is_lamp_host(const m2_aw_tables *t, int cls) {
    for (size_t i = 0; i < sizeof lamp_hosts / sizeof lamp_hosts[0]; i++)
        if (!strcmp(t->cls_name[cls], lamp_hosts[i])) return 1;
    return 0;
}

static int plan_has_cls(const m2_aw_plan *p, int cls) {
    for (int i = 0; i < p->n_recep; i++) if (p->receps[i].cls == cls) return 1;
    return 0;
}

static int appliance_cls(const m2_aw_tables *t, int type) {
    const char *n = type == M2_AW_CLEAN ? "SinkBasin" : type == M2_AW_HEAT ? "Microwave" : type == M2_AW_COOL ? "Fridge" : NULL;
    return n ? m2_aw_tables_find_cls(t, n) : -1;
}

static uint32_t need_flag(int type) {
    return type == M2_AW_CLEAN ? M2_AW_F_CLEANABLE : type == M2_AW_HEAT ? M2_AW_F_HEATABLE : type == M2_AW_COOL ? M2_AW_F_COOLABLE : 0;
}

/* Can some receptacle of the plan other than class `not_cls` hold class `o`? */
static int placeable(const m2_aw_tables *t, const m2_aw_plan *p, int o, int not_cls) {
    for (int i = 0; i < p->n_recep; i++) {
        int c = p->receps[i].cls;
        if (c != not_cls && t->can_contain[c * t->n_cls + o]) return 1;
    }
    return 0;
}

typedef m2_aw_goal_pick goal_pick;

/* Enumerates the achievable goals of `type` on plan p; writes up to cap into out; returns the count. */
static int plan_goals(const m2_aw_tables *t, const m2_aw_plan *p, int type, goal_pick *out, int cap) {
    int n = 0;
    if (!room_ok(type, p->room)) return 0;
    int app = appliance_cls(t, type);
    if (app >= 0 && !plan_has_cls(p, app)) return 0;
    uint32_t need = need_flag(type);
    for (int i = 0; i < p->n_obj_cls; i++) {
        int o = p->obj_cls[i];
        if (!(t->flags[o] & M2_AW_F_PICKUP) || (t->flags[o] & need) != need) continue;
        if (type == M2_AW_LOOK) {
            if (!placeable(t, p, o, -1)) continue;
            for (int j = 0; j < p->n_obj_cls; j++) {
                int l = p->obj_cls[j];
                if (!(t->flags[l] & M2_AW_F_TOGGLE)) continue;
                int host = 0;
                for (int k = 0; k < p->n_recep; k++) host |= is_lamp_host(t, p->receps[k].cls);
                if (!host) continue;
                if (n < cap) out[n] = (goal_pick){o, -1, l};
                n++;
            }
            continue;
        }
        /* distinct target receptacle classes of the plan */
        for (int k = 0; k < p->n_recep; k++) {
            int r = p->receps[k].cls, seen = 0;
            for (int q = 0; q < k; q++) seen |= p->receps[q].cls == r;
            if (seen || r == app || !t->can_contain[r * t->n_cls + o]) continue;
            if (!placeable(t, p, o, r)) continue;
            if (n < cap) out[n] = (goal_pick){o, r, -1};
            n++;
        }
    }
    return n;
}

static void lower_copy(char *out, size_t cap, const char *in) {
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = 0;
}

static void task_text(m2_aw_scene *s, int tmpl) {
    char obj[M2_AW_CLS_MAX] = "", rec[M2_AW_CLS_MAX] = "", tog[M2_AW_CLS_MAX] = "", desc[200];
    if (s->goal.obj_cls >= 0) lower_copy(obj, sizeof obj, s->cls_name[s->goal.obj_cls]);
    if (s->goal.recep_cls >= 0) lower_copy(rec, sizeof rec, s->cls_name[s->goal.recep_cls]);
    if (s->goal.toggle_cls >= 0) lower_copy(tog, sizeof tog, s->cls_name[s->goal.toggle_cls]);
    switch (s->goal.type) {
    case M2_AW_PICK: snprintf(desc, sizeof desc, tmpl ? "put some %s on %s" : "put a %s in %s", obj, rec); break;
    case M2_AW_LOOK: snprintf(desc, sizeof desc, tmpl ? "examine the %s with the %s" : "look at %s under the %s", obj, tog); break;
    case M2_AW_CLEAN: snprintf(desc, sizeof desc, tmpl ? "clean some %s and put it in %s" : "put a clean %s in %s", obj, rec); break;
    case M2_AW_HEAT: snprintf(desc, sizeof desc, tmpl ? "heat some %s and put it in %s" : "put a hot %s in %s", obj, rec); break;
    case M2_AW_COOL: snprintf(desc, sizeof desc, tmpl ? "cool some %s and put it in %s" : "put a cool %s in %s", obj, rec); break;
    default: snprintf(desc, sizeof desc, tmpl ? "find two %s and put them in %s" : "put two %s in %s", obj, rec); break;
    }
    snprintf(s->task_text, sizeof s->task_text, "Your task is to: %s.", desc);
}

int m2_aw_tables_index(m2_aw_tables *t, m2_err *err) {
    for (int i = 0; i < t->n_plans; i++)
        for (int type = 1; type <= 6; type++) {
            m2_aw_plan *p = &t->plans[i];
            int n = plan_goals(t, p, type, NULL, 0);
            free(p->goals[type]);
            p->goals[type] = NULL;
            p->n_goals[type] = n;
            if (!n) continue;
            p->goals[type] = malloc((size_t)n * sizeof *p->goals[type]);
            if (!p->goals[type]) return m2_errorf(err, M2_ENOMEM, "out of memory");
            plan_goals(t, p, type, p->goals[type], n);
        }
    return 0;
}

static int type_supported(const m2_aw_tables *t, int type, m2_split split) {
    for (int i = 0; i < t->n_plans; i++)
        if (t->plans[i].unseen == (split == M2_SPLIT_OOD) && t->plans[i].n_goals[type] > 0) return 1;
    return 0;
}

int m2_aw_num_episodes(const m2_aw_tables *t, int type, m2_split split) {
    if ((int)split < 0 || split > 2 || type < 0 || type > 6) return 0;
    if (type) return type_supported(t, type, split) ? m2_aw_num_generated(type, split) : 0;
    int n = 0;
    for (int k = 1; k <= 6; k++) n += m2_aw_num_episodes(t, k, split);
    return n;
}

static int generate_once(const m2_aw_tables *t, int type, m2_split split, int index, uint64_t seed, int attempt,
                         m2_aw_scene *out, m2_err *err) {
    memset(out, 0, sizeof *out);
    if ((int)split < 0 || split > 2) return m2_errorf(err, M2_EINVAL, "alfworld: bad split %d", (int)split);
    if (type < 0 || type > 6) return m2_errorf(err, M2_EINVAL, "alfworld: bad task type %d", type);
    int total = type && !type_supported(t, type, split) ? m2_aw_num_generated(type, split) : m2_aw_num_episodes(t, type, split);
    if (index < 0 || index >= total)
        return m2_errorf(err, M2_EINVAL, "alfworld: episode index %d out of range [0, %d) for %s/%s", index, total,
                         type ? m2_aw_task_type_name(type) : "all", m2_split_name(split));
    if (type == 0) {   /* the supported types, concatenated in type order */
        for (type = 1; type <= 6; type++) {
            int c = m2_aw_num_episodes(t, type, split);
            if (index < c) break;
            index -= c;
        }
    }
    m2_rng rng;
    m2_rng_seed_stream(&rng, seed, ((uint64_t)attempt << 56) ^ ((uint64_t)(split + 1) << 48) ^ ((uint64_t)type << 40) ^ (uint64_t)index);
    /* eligible plans */
    int *elig = calloc((size_t)t->n_plans + 1, sizeof *elig), ne = 0;
    if (!elig) return m2_errorf(err, M2_ENOMEM, "out of memory");
    for (int i = 0; i < t->n_plans; i++) {
        if (t->plans[i].unseen != (split == M2_SPLIT_OOD)) continue;
        if (t->plans[i].n_goals[type] > 0) elig[ne++] = i;
    }
    if (!ne) {
        free(elig);
        return m2_errorf(err, M2_ENOTFOUND, "alfworld tables (%s): no %s floor plan supports %s", t->source,
                         split == M2_SPLIT_OOD ? "unseen" : "seen", m2_aw_task_type_name(type));
    }
    const m2_aw_plan *p = &t->plans[elig[m2_rng_below(&rng, (uint32_t)ne)]];
    free(elig);
    goal_pick g = p->goals[type][m2_rng_below(&rng, (uint32_t)p->n_goals[type])];

    /* instance counts per object class */
    int nc = t->n_cls;
    int *count = calloc((size_t)p->n_obj_cls + 1, sizeof *count), n_obj = 0;
    if (!count) return m2_errorf(err, M2_ENOMEM, "out of memory");
    for (int i = 0; i < p->n_obj_cls; i++) {
        int c = p->obj_cls[i];
        if (t->flags[c] & M2_AW_F_TOGGLE) {
            count[i] = (type != M2_AW_LOOK || c == g.toggle) ? 1 : m2_rng_below(&rng, 2);
            if (type == M2_AW_LOOK && c != g.toggle) count[i] = 0;   /* one lamp class per look scene: no ambiguity */
        } else {
            count[i] = 1 + (int)m2_rng_below(&rng, 3);
            if (c == g.obj && type == M2_AW_PICK_TWO && count[i] < 2) count[i] = 2 + (int)m2_rng_below(&rng, 2);
        }
        n_obj += count[i];
    }
    /* locations: 0 = start, then one per distinct loc_key */
    int *loc_of = calloc((size_t)p->n_recep + 1, sizeof *loc_of), n_loc = 1;
    if (!loc_of) { free(count); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    for (int i = 0; i < p->n_recep; i++) {
        int l = -1;
        for (int j = 0; j < i; j++) if (p->receps[j].loc_key == p->receps[i].loc_key) { l = loc_of[j]; break; }
        loc_of[i] = l >= 0 ? l : n_loc++;
    }
    if (m2_aw_scene_alloc(out, nc, p->n_recep, n_obj, n_loc, err)) { free(count); free(loc_of); return -1; }
    memcpy(out->cls_name, t->cls_name, (size_t)nc * sizeof *t->cls_name);
    memcpy(out->can_contain, t->can_contain, (size_t)nc * nc);
    snprintf(out->source, sizeof out->source, "alfworld generator (%.200s tables, FloorPlan%d, %s #%d, seed %llu, draw %d)",
             t->source, p->number, m2_split_name(split), index, (unsigned long long)seed, attempt);
    out->plan = p->number;
    out->room = p->room;
    snprintf(out->loc_id[0], M2_AW_ID_MAX, "loc|0|0|0|30");
    for (int i = 0; i < p->n_recep; i++) {
        m2_aw_recep *r = &out->receps[i];
        r->cls = p->receps[i].cls;
        r->loc = loc_of[i];
        r->openable = (t->flags[r->cls] & M2_AW_F_OPENABLE) != 0;
        snprintf(r->id, sizeof r->id, "%s", p->receps[i].id);
        snprintf(out->loc_id[r->loc], M2_AW_ID_MAX, "loc|%d|%d|%d|%d", p->receps[i].loc_key, r->loc, r->loc % 4, 30);
    }
    free(loc_of);
    /* objects */
    int *cand = calloc((size_t)p->n_recep + 1, sizeof *cand);
    if (!cand) { free(count); m2_aw_scene_free(out); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    int k = 0;
    for (int i = 0; i < p->n_obj_cls; i++) {
        int c = p->obj_cls[i];
        for (int j = 0; j < count[i]; j++) {
            int nc_ = 0;
            for (int r = 0; r < p->n_recep; r++) {
                int rc = out->receps[r].cls;
                int ok = (t->flags[c] & M2_AW_F_TOGGLE) ? is_lamp_host(t, rc) : t->can_contain[rc * nc + c];
                if (c == g.obj && rc == g.recep) ok = 0;   /* the goal must not hold at the start */
                if (ok) cand[nc_++] = r;
            }
            if (!nc_) continue;
            m2_aw_obj *o = &out->objs[k];
            o->cls = c;
            o->flags = t->flags[c] & ~(M2_AW_F_RECEP | M2_AW_F_OPENABLE);
            uint64_t h = m2_rng_u64(&rng);
            snprintf(o->id, sizeof o->id, "%s|%s%02d.%02d|+%02d.%02d|%s%02d.%02d", t->cls_name[c],
                     (h & 1) ? "-" : "+", (int)((h >> 1) % 4), (int)((h >> 3) % 100),
                     (int)((h >> 10) % 2), (int)((h >> 12) % 100),
                     (h & 0x100000) ? "-" : "+", (int)((h >> 21) % 4), (int)((h >> 23) % 100));
            /* guarantee unique ids */
            for (int q = 0; q < k; q++)
                if (!strcmp(out->objs[q].id, o->id)) {
                    size_t l = strlen(o->id);
                    snprintf(o->id + l, sizeof o->id - l, "|%d", k);
                    break;
                }
            out->init_in[k] = cand[m2_rng_below(&rng, (uint32_t)nc_)];
            k++;
        }
    }
    out->n_obj = k;
    free(cand);
    free(count);
    out->start_loc = 0;
    out->goal.type = type;
    out->goal.obj_cls = g.obj;
    out->goal.recep_cls = g.recep;
    out->goal.toggle_cls = g.toggle;
    task_text(out, (int)m2_rng_below(&rng, 2));
    if (m2_aw_scene_finish(out, err)) { m2_aw_scene_free(out); return -1; }
    return 0;
}

/* ALFWorld keeps only games its expert solves; likewise a drawn scene is kept when the searching expert
 * wins it within 50 steps, else the scene is drawn again from the next sub-stream (about 1 scene in 250
 * with ALFWorld's tables, where small objects can hide in any of 30 drawers and cabinets). */
static int expert_solves(const m2_aw_scene *s, int max_steps) {
    m2_aw_state st;
    m2_err err = {0};
    if (m2_aw_state_init(&st, s, &err)) return 0;
    char a[256], buf[4096];
    int ok = 0;
    for (int k = 0; k < max_steps && !(ok = m2_aw_won(s, &st)); k++) {
        m2_aw_cmd c;
        if (m2_aw_oracle(s, &st, a, sizeof a, &err) || m2_aw_parse(s, a, &c) || !m2_aw_applicable(s, &st, &c)) break;
        m2_aw_apply(s, &st, &c, buf, sizeof buf);
    }
    if (!ok) ok = m2_aw_won(s, &st);
    m2_aw_state_free(&st);
    return ok;
}

int m2_aw_generate(const m2_aw_tables *t, int type, m2_split split, int index, uint64_t seed, m2_aw_scene *out, m2_err *err) {
    for (int attempt = 0;; attempt++) {
        if (generate_once(t, type, split, index, seed, attempt, out, err)) return -1;
        if (attempt == 63 || expert_solves(out, 50)) return 0;
        m2_aw_scene_free(out);
    }
}
