/* TextCraft step(): ADaPT's three regex actions (re.match, so anchored at the start; '.' stops at
 * the first newline) and its exact observation strings. No allocation once buffers have grown. */
#include "env/textcraft/tc.h"
#include <stdlib.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }
/* Python str.strip() whitespace, ASCII part (plus the \x1c-\x1f separators it also strips). */
static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* Digits as Python prints int(digits): leading zeros dropped. */
static void put_int_text(m2_strbuf *b, const char *d, int n) {
    while (n > 1 && d[0] == '0') { d++; n--; }
    m2_strbuf_append(b, d, (size_t)n);
}

static int64_t parse_count(const char *d, int n) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (v > (INT64_MAX - 9) / 10) return INT64_MAX;   /* saturate: documented limit */
        v = v * 10 + (d[i] - '0');
    }
    return v;
}

/* "minecraft:" + typed with ' ' -> '_' (the item id ADaPT builds from typed text). */
static void put_typed_id(m2_strbuf *b, const char *s, int n) {
    m2_strbuf_append(b, M2_TC_NS, M2_TC_NS_LEN);
    size_t at = b->len;
    m2_strbuf_append(b, s, (size_t)n);
    for (size_t i = at; i < b->len; i++) if (b->p[i] == ' ') b->p[i] = '_';
}

/* Python repr() of "minecraft:" + typed-as-id: quotes and escapes as CPython writes them for the
 * ASCII range and the C1/Latin-1 non-printables; other UTF-8 is copied as is. */
static void put_repr_typed_id(m2_strbuf *b, const char *s, int n) {
    int sq = 0, dq = 0;
    for (int i = 0; i < n; i++) { sq |= s[i] == '\''; dq |= s[i] == '"'; }
    char q = sq && !dq ? '"' : '\'';
    m2_strbuf_putc(b, q);
    m2_strbuf_append(b, M2_TC_NS, M2_TC_NS_LEN);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ') c = '_';
        char esc[4] = {'\\', 'x', 0, 0};
        if (c == '\\' || c == (unsigned char)q) { m2_strbuf_putc(b, '\\'); m2_strbuf_putc(b, (char)c); }
        else if (c == '\t') m2_strbuf_append(b, "\\t", 2);
        else if (c == '\n') m2_strbuf_append(b, "\\n", 2);
        else if (c == '\r') m2_strbuf_append(b, "\\r", 2);
        else if (c < 0x20 || c == 0x7f) { esc[2] = hex[c >> 4]; esc[3] = hex[c & 15]; m2_strbuf_append(b, esc, 4); }
        else if (c == 0xc2 && i + 1 < n && ((unsigned char)s[i + 1] <= 0xa0 || (unsigned char)s[i + 1] == 0xad) &&
                 (unsigned char)s[i + 1] >= 0x80) {
            unsigned char d = (unsigned char)s[++i];
            esc[2] = hex[d >> 4]; esc[3] = hex[d & 15];
            m2_strbuf_append(b, esc, 4);
        } else m2_strbuf_putc(b, (char)c);
    }
    m2_strbuf_putc(b, q);
}

static void inv_add(m2_tc_env *e, int name, int64_t amt) {
    if (!e->inv_has[name]) {
        if (m2_tc_ivec_push(&e->inv_order, name)) return;   /* out of memory: item not added */
        e->inv_has[name] = 1;
        e->inv[name] = 0;
    }
    e->inv[name] = e->inv[name] > INT64_MAX - amt ? INT64_MAX : e->inv[name] + amt;
}

static void inv_remove(m2_tc_env *e, int name, int64_t amt) {
    if (!e->inv_has[name]) return;
    e->inv[name] -= amt;
    if (e->inv[name] > 0) return;
    /* Python deletes at exactly 0; a craft naming one item twice could go below: clamp and delete */
    e->inv[name] = 0;
    e->inv_has[name] = 0;
    for (int i = 0; i < e->inv_order.n; i++)
        if (e->inv_order.a[i] == name) {
            memmove(e->inv_order.a + i, e->inv_order.a + i + 1, (size_t)(e->inv_order.n - i - 1) * sizeof(int));
            e->inv_order.n--;
            break;
        }
}

static int grow_typed(m2_tc_env *e, int n) {
    if (n <= e->typed_cap) return 0;
    int nc = e->typed_cap ? e->typed_cap : 16;
    while (nc < n) nc *= 2;
    m2_tc_typed *t = realloc(e->typed, (size_t)nc * sizeof *t);
    if (!t) return -1;
    e->typed = t;
    uint8_t *u = realloc(e->used, (size_t)nc);
    if (!u) return -1;
    e->used = u;
    e->typed_cap = e->used_cap = nc;
    return 0;
}

static void fail_not_enough(m2_tc_env *e, int out_is_tag, const char *os, int on) {
    m2_strbuf_puts(&e->obs, "Could not find enough items to craft ");
    if (out_is_tag) m2_strbuf_puts(&e->obs, "None");
    else put_typed_id(&e->obs, os, on);
}

/* craft (.*) using (.*): output text [os, os+on), inputs text [is, is+in) */
static void do_craft(m2_tc_env *e, const char *os, int on, const char *is, int in, m2_step_result *res) {
    m2_tc_tree *t = &e->t;
    m2_strbuf *o = &e->obs;
    /* output: "N item" or "item" (count 1) */
    const char *cd = "1"; int cdn = 1;
    int j = 0;
    while (j < on && is_digit(os[j])) j++;
    if (j > 0 && j < on && os[j] == ' ') { cd = os; cdn = j; os += j + 1; on -= j + 1; }
    int out = m2_tc_find_typed(t, os, on);
    int out_is_tag = out >= 0 && t->names[out].is_tag;

    /* inputs: split on ',', strip, each "([0-9]+) (.*)" else "Wrong item format: ..." */
    int n = 1;
    for (int i = 0; i < in; i++) n += is[i] == ',';
    if (grow_typed(e, n)) { m2_strbuf_puts(o, "Could not execute craft"); return; }
    const char *p = is, *end = is + in;
    for (int k = 0; k < n; k++) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        if (!q) q = end;
        const char *a = p, *b = q;
        while (a < b && is_space((unsigned char)*a)) a++;
        while (b > a && is_space((unsigned char)b[-1])) b--;
        int dn = 0;
        while (a + dn < b && is_digit(a[dn])) dn++;
        if (dn == 0 || a + dn >= b || a[dn] != ' ') {
            m2_strbuf_puts(o, "Wrong item format: ");
            m2_strbuf_append(o, a, (size_t)(b - a));
            return;
        }
        m2_tc_typed *ty = &e->typed[k];
        ty->digits = a; ty->dlen = dn;
        ty->count = parse_count(a, dn);
        ty->s = a + dn + 1; ty->len = (int)(b - ty->s);
        ty->name = m2_tc_find_typed(t, ty->s, ty->len);
        ty->is_tag = ty->name >= 0 && t->names[ty->name].is_tag;
        p = q + 1;
    }
    /* has_items: each input on its own, by concrete item id */
    for (int k = 0; k < n; k++) {
        const m2_tc_typed *ty = &e->typed[k];
        if (ty->is_tag || ty->name < 0 || !e->inv_has[ty->name] || e->inv[ty->name] < ty->count) {
            fail_not_enough(e, out_is_tag, os, on);
            return;
        }
    }
    /* match one stored recipe of the output exactly: same inputs, same counts; a tag input
     * matches an item whose group is that tag */
    int found = -1;
    if (out >= 0 && !out_is_tag) {
        const m2_tc_ivec *rs = &t->names[out].item_recipes;
        for (int r = 0; r < rs->n && found < 0; r++) {
            const m2_tc_recipe *rc = &t->recipes[rs->a[r]];
            memset(e->used, 0, (size_t)n);
            int ok = 1;
            for (int g = 0; g < rc->n_ing && ok; g++) {
                const m2_tc_ing *ing = &t->ings[rc->ing0 + g];
                int m = -1;
                for (int k = 0; k < n && m < 0; k++) {
                    if (e->used[k]) continue;
                    int nm = e->typed[k].name;
                    if (ing->is_tag ? t->names[nm].tag_of == ing->name : nm == ing->name) m = k;
                }
                if (m < 0 || e->typed[m].count != ing->count) ok = 0;
                else e->used[m] = 1;
            }
            for (int k = 0; k < n && ok; k++) ok = e->used[k];
            if (ok) found = rs->a[r];
        }
    }
    if (found < 0) {
        m2_strbuf_puts(o, "Could not find a valid recipe for ItemTagWithCount(item_tag=ItemTag(tag=");
        if (out_is_tag) { put_repr_typed_id(o, os, on); m2_strbuf_puts(o, ", item_id=None)"); }
        else { m2_strbuf_puts(o, "None, item_id="); put_repr_typed_id(o, os, on); m2_strbuf_putc(o, ')'); }
        m2_strbuf_puts(o, ", count=");
        put_int_text(o, cd, cdn);
        m2_strbuf_putc(o, ')');
        return;
    }
    for (int k = 0; k < n; k++) inv_remove(e, e->typed[k].name, e->typed[k].count);
    const m2_tc_recipe *rc = &t->recipes[found];
    inv_add(e, rc->out, rc->out_count);
    m2_strbuf_puts(o, "Crafted ");
    m2_strbuf_put_int(o, rc->out_count);
    m2_strbuf_putc(o, ' ');
    m2_strbuf_append(o, t->names[rc->out].id, (size_t)t->names[rc->out].id_len);
    res->valid = 1;
    if (rc->out == e->goal) {
        res->reward = 1.f;
        e->won = 1;
    }
}

/* get ([0-9]+) (.*) */
static void do_get(m2_tc_env *e, const char *d, int dn, const char *s, int n, m2_step_result *res) {
    m2_tc_tree *t = &e->t;
    int nm = m2_tc_find_typed(t, s, n);
    if (!m2_tc_is_gettable(t, nm)) {
        m2_strbuf_puts(&e->obs, "Could not find ");
        m2_strbuf_append(&e->obs, s, (size_t)n);
        return;
    }
    inv_add(e, nm, parse_count(d, dn));
    m2_strbuf_puts(&e->obs, "Got ");
    put_int_text(&e->obs, d, dn);
    m2_strbuf_putc(&e->obs, ' ');
    m2_strbuf_append(&e->obs, s, (size_t)n);
    res->valid = 1;
}

static void do_inventory(m2_tc_env *e, m2_step_result *res) {
    m2_strbuf *o = &e->obs;
    m2_strbuf_puts(o, "Inventory: ");
    if (!e->inv_order.n) m2_strbuf_puts(o, "You are not carrying anything.");
    for (int i = 0; i < e->inv_order.n; i++) {
        int nm = e->inv_order.a[i];
        m2_strbuf_putc(o, '[');
        m2_strbuf_append(o, e->t.names[nm].disp, (size_t)e->t.names[nm].disp_len);
        m2_strbuf_puts(o, "] (");
        m2_strbuf_put_int(o, e->inv[nm]);
        m2_strbuf_puts(o, ") ");
    }
    res->valid = 1;
}

int m2_tc_step(m2_tc_env *e, const char *action, m2_step_result *res) {
    size_t alen = strlen(action);
    const char *nl = memchr(action, '\n', alen);
    size_t L = nl ? (size_t)(nl - action) : alen;   /* '.' does not match a newline */
    m2_strbuf_reset(&e->obs);
    *res = (m2_step_result){0};
    int handled = 0;
    if (e->goal < 0) {
        m2_strbuf_puts(&e->obs, "Could not execute ");
        m2_strbuf_append(&e->obs, action, alen);
        handled = 1;
    }
    if (!handled && L >= 13 && !memcmp(action, "craft ", 6)) {
        /* greedy: the last " using " that starts at index >= 6 */
        for (size_t i = L - 7; i >= 6 && !handled; i--)
            if (!memcmp(action + i, " using ", 7)) {
                do_craft(e, action + 6, (int)(i - 6), action + i + 7, (int)(L - i - 7), res);
                handled = 1;
            }
    }
    if (!handled && L >= 6 && !memcmp(action, "get ", 4)) {
        size_t j = 4;
        while (j < L && is_digit(action[j])) j++;
        if (j > 4 && j < L && action[j] == ' ') {
            do_get(e, action + 4, (int)(j - 4), action + j + 1, (int)(L - j - 1), res);
            handled = 1;
        }
    }
    if (!handled && alen >= 9 && !memcmp(action, "inventory", 9)) { do_inventory(e, res); handled = 1; }
    if (!handled) {
        m2_strbuf_puts(&e->obs, "Could not execute ");
        m2_strbuf_append(&e->obs, action, alen);
    }
    res->observation = m2_strbuf_str(&e->obs);
    res->won = e->won;
    res->done = e->won;
    res->score = e->won ? 1.f : 0.f;
    return e->obs.oom ? -1 : 0;   /* out of memory: the observation is cut short */
}
