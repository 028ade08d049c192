/* TextCraft expert oracle (next action from the current inventory, so it recovers after any
 * deviation), admissible actions and the sub-goal segmenter (docs/textcraft.md). */
#include "env/textcraft/tc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_ORACLE_MAX_ING 32
#define TC_ORACLE_MAX_LEVEL 64

enum { PLAN_OK = 0, PLAN_EMITTED = 1, PLAN_FAIL = -1 };

static void vset(m2_tc_env *e, int name, int64_t v) {
    if (!e->name_mark[name]) { e->name_mark[name] = 1; m2_tc_ivec_push(&e->vtouched, name); }
    e->vinv[name] = v;
}

/* The item recipe of least depth whose line is listed this episode (first on ties). */
static int listed_recipe(const m2_tc_env *e, int item) {
    const m2_tc_tree *t = &e->t;
    const m2_tc_ivec *rs = &t->names[item].item_recipes;
    int best = -1;
    for (int i = 0; i < rs->n; i++) {
        const m2_tc_recipe *rc = &t->recipes[rs->a[i]];
        if (!e->line_listed[rc->line]) continue;
        if (best < 0 || rc->depth < t->recipes[best].depth) best = rs->a[i];
    }
    return best;
}

static int obtainable(const m2_tc_env *e, int item) {
    return m2_tc_is_gettable(&e->t, item) || listed_recipe(e, item) >= 0;
}

/* A concrete item for a tag input: one already held in the needed amount, else the one held most,
 * else the shallowest obtainable member (first on ties). */
static int pick_member(const m2_tc_env *e, const int64_t *inv, int tag, int64_t need) {
    const m2_tc_tree *t = &e->t;
    const m2_tc_ivec *m = &t->names[tag].members;
    int best = -1;
    for (int i = 0; i < m->n; i++) {
        int c = m->a[i];
        int64_t have = inv[c];
        if (have < need && !obtainable(e, c)) continue;
        if (best < 0) { best = c; continue; }
        int64_t hb = inv[best];
        int enough = have >= need, enough_b = hb >= need;
        if (enough != enough_b) { if (enough) best = c; continue; }
        if (have != hb) { if (have > hb) best = c; continue; }
        if (t->names[c].depth < t->names[best].depth) best = c;
    }
    return best;
}

static void emit_craft(m2_tc_env *e, const m2_tc_recipe *rc, const int *conc) {
    const m2_tc_tree *t = &e->t;
    m2_strbuf *a = &e->act;
    m2_strbuf_reset(a);
    m2_strbuf_puts(a, "craft ");
    m2_strbuf_put_int(a, rc->out_count);
    m2_strbuf_putc(a, ' ');
    m2_strbuf_puts(a, t->names[rc->out].disp);
    m2_strbuf_puts(a, " using ");
    for (int g = 0; g < rc->n_ing; g++) {
        if (g) m2_strbuf_puts(a, ", ");
        m2_strbuf_put_int(a, t->ings[rc->ing0 + g].count);
        m2_strbuf_putc(a, ' ');
        m2_strbuf_puts(a, t->names[conc[g]].disp);
    }
}

/* Makes n of item available in the virtual inventory and reserves them (so sibling inputs cannot
 * use them); emits the first action still needed and stops there. */
static int need(m2_tc_env *e, int item, int64_t n, int level) {
    const m2_tc_tree *t = &e->t;
    if (level > TC_ORACLE_MAX_LEVEL) return PLAN_FAIL;
    int64_t have = e->vinv[item];
    if (have < n) {
        int64_t missing = n - have;
        if (m2_tc_is_gettable(t, item)) {
            e->plan_recipe = e->cur_recipe;     /* the get serves the recipe being prepared */
            e->plan_batches = e->cur_batches;
            m2_strbuf_reset(&e->act);
            m2_strbuf_puts(&e->act, "get ");
            m2_strbuf_put_int(&e->act, missing);
            m2_strbuf_putc(&e->act, ' ');
            m2_strbuf_puts(&e->act, t->names[item].disp);
            return PLAN_EMITTED;
        }
        int r = listed_recipe(e, item);
        if (r < 0) return PLAN_FAIL;
        const m2_tc_recipe *rc = &t->recipes[r];
        if (rc->n_ing > TC_ORACLE_MAX_ING) return PLAN_FAIL;
        int64_t batches = (missing + rc->out_count - 1) / rc->out_count;
        int conc[TC_ORACLE_MAX_ING];
        int outer = e->cur_recipe;
        int64_t outer_batches = e->cur_batches;
        e->cur_recipe = r;
        e->cur_batches = batches;
        for (int g = 0; g < rc->n_ing; g++) {
            const m2_tc_ing *ing = &t->ings[rc->ing0 + g];
            int64_t k = batches * ing->count;
            int c = ing->is_tag ? pick_member(e, e->vinv, ing->name, k) : ing->name;
            if (c < 0) return PLAN_FAIL;
            conc[g] = c;
            int s = need(e, c, k, level + 1);
            if (s != PLAN_OK) return s;
        }
        e->cur_recipe = outer;
        e->cur_batches = outer_batches;
        e->plan_recipe = r;
        e->plan_batches = batches;
        emit_craft(e, rc, conc);
        return PLAN_EMITTED;
    }
    vset(e, item, have - n);
    return PLAN_OK;
}

/* Plans from the inventory plus `nx` pending gets (items xn, counts xc); the first action goes to
 * e->act and its recipe to e->plan_recipe. */
static int plan_next(m2_tc_env *e, const int *xn, const int64_t *xc, int nx) {
    e->vtouched.n = 0;
    e->cur_recipe = e->plan_recipe = -1;
    e->cur_batches = e->plan_batches = 0;
    for (int i = 0; i < e->inv_order.n; i++) vset(e, e->inv_order.a[i], e->inv[e->inv_order.a[i]]);
    for (int i = 0; i < nx; i++) vset(e, xn[i], e->vinv[xn[i]] + xc[i]);
    int s = need(e, e->goal, e->vinv[e->goal] + 1, 0);
    for (int i = 0; i < e->vtouched.n; i++) { e->vinv[e->vtouched.a[i]] = 0; e->name_mark[e->vtouched.a[i]] = 0; }
    e->vtouched.n = 0;
    return s;
}

int m2_tc_oracle_next(m2_tc_env *e, char *buf, size_t cap, m2_err *err) {
    if (e->goal < 0) return m2_errorf(err, M2_EINVAL, "textcraft oracle: no episode (call reset first)");
    if (e->won) return m2_errorf(err, M2_EINVAL, "textcraft oracle: the goal is already crafted");
    int s = plan_next(e, NULL, NULL, 0);
    if (s != PLAN_EMITTED)
        return m2_errorf(err, M2_ENOTFOUND, "textcraft oracle: no way to craft %s from the listed commands", e->t.names[e->goal].disp);
    if (e->act.oom) return m2_errorf(err, M2_ENOMEM, "textcraft oracle: out of memory");
    if (e->act.len + 1 > cap) return m2_errorf(err, M2_EINVAL, "textcraft oracle: action longer than the buffer (%zu bytes)", cap);
    memcpy(buf, e->act.p, e->act.len + 1);
    return 0;
}

/* ---------------------------------------------------------------- sub-goals */

/* The oracle's next CRAFT: its gets are assumed done (pending) until the plan's first action is a
 * craft; that craft, with its batches, is the sub-goal (the gets before it serve it). */
#define TC_SUBGOAL_MAX_GETS 64
int m2_tc_subgoal_next(m2_tc_env *e, char *buf, size_t cap, m2_err *err) {
    if (e->goal < 0) return m2_errorf(err, M2_EINVAL, "textcraft: no episode (call reset first)");
    if (e->won) return m2_errorf(err, M2_EINVAL, "textcraft: the goal is already crafted");
    int xn[TC_SUBGOAL_MAX_GETS];
    int64_t xc[TC_SUBGOAL_MAX_GETS];
    int nx = 0;
    for (;;) {
        if (plan_next(e, xn, xc, nx) != PLAN_EMITTED)
            return m2_errorf(err, M2_ENOTFOUND, "textcraft: no way to craft %s from the listed commands", e->t.names[e->goal].disp);
        if (strncmp(e->act.p, "get ", 4)) break;   /* a craft */
        if (nx == TC_SUBGOAL_MAX_GETS) return m2_errorf(err, M2_EINVAL, "textcraft: more than %d gets before a craft", nx);
        /* "get N <item>": pending */
        char *end;
        long long k = strtoll(e->act.p + 4, &end, 10);
        const char *name = end + 1;
        int item = -1;
        for (int i = 0; i < e->t.n_names && item < 0; i++)
            if (e->t.names[i].is_item && !strcmp(e->t.names[i].disp, name) && m2_tc_is_gettable(&e->t, i)) item = i;
        if (item < 0 || k <= 0) return m2_errorf(err, M2_EINVAL, "textcraft: cannot read the oracle's '%s'", e->act.p);
        xn[nx] = item;
        xc[nx++] = k;
    }
    if (e->plan_recipe < 0) return m2_errorf(err, M2_ENOTFOUND, "textcraft: the oracle's craft has no recipe");
    const m2_tc_recipe *rc = &e->t.recipes[e->plan_recipe];
    int n = snprintf(buf, cap, "craft %lld %s", (long long)(rc->out_count * e->plan_batches), e->t.names[rc->out].disp);
    if (n < 0 || (size_t)n >= cap) return m2_errorf(err, M2_EINVAL, "textcraft: sub-goal longer than the buffer");
    return 0;
}

/* "craft N <item>" / "get N <item>" (N optional: 1) -> the item and N; -1 when unreadable. */
static int parse_subgoal(const m2_tc_env *e, const char *text, int64_t *n) {
    while (*text == ' ') text++;
    const char *p;
    if (!strncmp(text, "craft ", 6)) p = text + 6;
    else if (!strncmp(text, "get ", 4)) p = text + 4;
    else return -1;
    char *end;
    long long k = strtoll(p, &end, 10);
    if (end != p && *end == ' ') { p = end + 1; *n = k > 0 ? k : 1; } else *n = 1;
    size_t len = strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '.' || p[len - 1] == '\n')) len--;
    for (int i = 0; i < e->t.n_names; i++) {
        const m2_tc_name *nm = &e->t.names[i];
        if (nm->is_item && (size_t)nm->disp_len == len && !strncmp(nm->disp, p, len)) return i;
    }
    return -1;
}

void m2_tc_subgoal_begin(m2_tc_env *e, const char *subgoal) {
    int64_t n;
    e->sg_item = parse_subgoal(e, subgoal ? subgoal : "", &n);
    e->sg_base = e->sg_item >= 0 ? e->inv[e->sg_item] : 0;
}

int m2_tc_subgoal_done(m2_tc_env *e, const char *subgoal) {
    int64_t n;
    int item = parse_subgoal(e, subgoal ? subgoal : "", &n);
    if (item < 0 || e->goal < 0) return 0;
    int64_t base = item == e->sg_item ? e->sg_base : 0;
    return e->inv[item] >= base + n;
}

/* "inventory", a get for every fetchable item of the goal's tree (count as one recipe uses it),
 * then every listed line with tag inputs replaced by a concrete member (the one held most, else
 * the shallowest obtainable one). */
int m2_tc_admissible(m2_tc_env *e, const char *const **actions, int *n) {
    const m2_tc_tree *t = &e->t;
    m2_strbuf *b = &e->adm_text;
    m2_strbuf_reset(b);
    e->adm_off.n = 0;
    *actions = NULL; *n = 0;
    if (e->goal < 0) return 0;
#define ADM_PUSH() m2_tc_ivec_push(&e->adm_off, (int)b->len)
#define ADM_END() m2_strbuf_putc(b, 0)
    ADM_PUSH(); m2_strbuf_puts(b, "inventory"); ADM_END();
    e->vtouched.n = 0;
    for (int i = 0; i < e->tree_recipes.n; i++) {
        const m2_tc_recipe *rc = &t->recipes[e->tree_recipes.a[i]];
        for (int g = 0; g < rc->n_ing; g++) {
            const m2_tc_ing *ing = &t->ings[rc->ing0 + g];
            int nm = ing->name;
            if (!m2_tc_is_gettable(t, nm) || e->name_mark[nm]) continue;
            e->name_mark[nm] = 1;
            m2_tc_ivec_push(&e->vtouched, nm);
            ADM_PUSH();
            m2_strbuf_puts(b, "get "); m2_strbuf_put_int(b, ing->count); m2_strbuf_putc(b, ' '); m2_strbuf_puts(b, t->names[nm].disp);
            ADM_END();
        }
    }
    for (int i = 0; i < e->vtouched.n; i++) e->name_mark[e->vtouched.a[i]] = 0;
    e->vtouched.n = 0;
    for (int i = 0; i < e->block_lines.n; i++) {
        const m2_tc_recipe *rc = &t->recipes[t->line_recipe[e->block_lines.a[i]]];
        ADM_PUSH();
        m2_strbuf_puts(b, "craft "); m2_strbuf_put_int(b, rc->out_count); m2_strbuf_putc(b, ' ');
        m2_strbuf_puts(b, t->names[rc->out].disp); m2_strbuf_puts(b, " using ");
        for (int g = 0; g < rc->n_ing; g++) {
            const m2_tc_ing *ing = &t->ings[rc->ing0 + g];
            int c = ing->is_tag ? pick_member(e, e->inv, ing->name, 0) : ing->name;
            if (c < 0) c = ing->name;
            if (g) m2_strbuf_puts(b, ", ");
            m2_strbuf_put_int(b, ing->count); m2_strbuf_putc(b, ' '); m2_strbuf_puts(b, t->names[c].disp);
        }
        ADM_END();
    }
#undef ADM_PUSH
#undef ADM_END
    if (b->oom) return -1;   /* out of memory: the list would be cut short */
    if (e->adm_off.n > e->adm_cap) {
        int nc = e->adm_off.n * 2;
        const char **a = realloc((void *)e->adm, (size_t)nc * sizeof *a);
        if (!a) return -1;
        e->adm = a; e->adm_cap = nc;
    }
    for (int i = 0; i < e->adm_off.n; i++) e->adm[i] = b->p + e->adm_off.a[i];
    *actions = e->adm;
    *n = e->adm_off.n;
    return 0;
}

/* "Crafted N minecraft:x" -> N and the id x; 0 if the observation is not a successful craft. */
static int parse_crafted(const char *obs, long *n, const char **id, int *idlen) {
    if (!obs || strncmp(obs, "Crafted ", 8)) return 0;
    const char *p = obs + 8;
    char *end;
    *n = strtol(p, &end, 10);
    if (end == p || *end != ' ') return 0;
    *id = end + 1;
    *idlen = (int)strlen(end + 1);
    return 1;
}

static int is_success(const char *obs) {
    return obs && (!strncmp(obs, "Got ", 4) || !strncmp(obs, "Crafted ", 8));
}

static void subgoal_text(m2_subgoal *sg, long n, const char *id, int idlen) {
    char disp[200];
    int o = 0;
    for (int i = 0; i < idlen && o < (int)sizeof disp - 1;) {
        if (!strncmp(id + i, M2_TC_NS, M2_TC_NS_LEN)) { i += M2_TC_NS_LEN; continue; }
        disp[o++] = id[i] == '_' ? ' ' : id[i];
        i++;
    }
    disp[o] = 0;
    snprintf(sg->text, sizeof sg->text, "craft %ld %s", n, disp);
}

/* One sub-goal per crafted item: a run of successful crafts of the same item (batches), with the
 * steps before it since the previous sub-goal (gets, inventory, failed actions). Steps after the
 * last craft form a final sub-goal "craft 1 <goal>". */
int m2_tc_segment(const m2_tc_env *e, const char *const *actions, const char *const *observations, int n_steps,
               m2_subgoal *out, int cap) {
    (void)actions;
    int ns = 0, start = 0;
    for (int i = 0; i < n_steps && ns < cap; i++) {
        long cnt; const char *id; int idl;
        if (!parse_crafted(observations[i], &cnt, &id, &idl)) continue;
        long total = cnt;
        int last = i;
        /* merge following crafts of the same item while nothing else succeeds in between */
        for (int j = i + 1; j < n_steps; j++) {
            long c2; const char *id2; int l2;
            if (parse_crafted(observations[j], &c2, &id2, &l2)) {
                if (l2 == idl && !memcmp(id, id2, (size_t)idl)) { total += c2; last = j; continue; }
                break;
            }
            if (is_success(observations[j])) break;
        }
        subgoal_text(&out[ns], total, id, idl);
        out[ns].first = start;
        out[ns].last = last;
        ns++;
        start = last + 1;
        i = last;
    }
    if (start < n_steps && ns < cap && e->goal >= 0) {
        snprintf(out[ns].text, sizeof out[ns].text, "craft 1 %s", e->t.names[e->goal].disp);
        out[ns].first = start;
        out[ns].last = n_steps - 1;
        ns++;
    }
    return ns;
}
