/* TextCraft crafting tree: datapack recipe JSON -> recipes, tags, depths and goals, following
 * ADaPT's CraftingTree (docs/textcraft.md, environments.md §1.3), with files in sorted order. */
#include "env/textcraft/tc.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_MAX_NAMES 16384   /* transitive-dependency bitsets are n_names^2 bits */

int m2_tc_ivec_push(m2_tc_ivec *v, int x) {
    if (v->n == v->cap) {
        int nc = v->cap ? v->cap * 2 : 8;
        int *a = realloc(v->a, (size_t)nc * sizeof *a);
        if (!a) return -1;
        v->a = a; v->cap = nc;
    }
    v->a[v->n++] = x;
    return 0;
}

void m2_tc_ivec_free(m2_tc_ivec *v) { free(v->a); v->a = NULL; v->n = v->cap = 0; }

uint64_t m2_tc_fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}

/* ---- name table ---- */

static int hash_rebuild(m2_tc_tree *t, int cap) {
    int *h = malloc((size_t)cap * sizeof *h);
    if (!h) return -1;
    for (int i = 0; i < cap; i++) h[i] = -1;
    for (int i = 0; i < t->n_names; i++) {
        uint64_t k = m2_tc_fnv1a(t->names[i].id, (size_t)t->names[i].id_len);
        int j = (int)(k & (uint64_t)(cap - 1));
        while (h[j] >= 0) j = (j + 1) & (cap - 1);
        h[j] = i;
    }
    free(t->hash);
    t->hash = h; t->hash_cap = cap;
    return 0;
}

int m2_tc_find(const m2_tc_tree *t, const char *id, int len) {
    if (!t->hash_cap) return -1;
    uint64_t k = m2_tc_fnv1a(id, (size_t)len);
    for (int j = (int)(k & (uint64_t)(t->hash_cap - 1));; j = (j + 1) & (t->hash_cap - 1)) {
        int i = t->hash[j];
        if (i < 0) return -1;
        if (t->names[i].id_len == len && !memcmp(t->names[i].id, id, (size_t)len)) return i;
    }
}

int m2_tc_find_typed(const m2_tc_tree *t, const char *typed, int len) {
    if (!t->hash_cap) return -1;
    uint64_t h = m2_tc_fnv1a(M2_TC_NS, M2_TC_NS_LEN);
    for (int i = 0; i < len; i++) { h ^= (unsigned char)(typed[i] == ' ' ? '_' : typed[i]); h *= 1099511628211ull; }
    for (int j = (int)(h & (uint64_t)(t->hash_cap - 1));; j = (j + 1) & (t->hash_cap - 1)) {
        int i = t->hash[j];
        if (i < 0) return -1;
        const m2_tc_name *nm = &t->names[i];
        if (nm->id_len != M2_TC_NS_LEN + len || memcmp(nm->id, M2_TC_NS, M2_TC_NS_LEN)) continue;
        int k = 0;
        for (; k < len; k++)
            if (nm->id[M2_TC_NS_LEN + k] != (typed[k] == ' ' ? '_' : typed[k])) break;
        if (k == len) return i;
    }
}

/* item_id_to_str: every "minecraft:" removed, then '_' -> ' '. */
static char *display_of(const char *id) {
    size_t n = strlen(id);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (!strncmp(id + i, M2_TC_NS, M2_TC_NS_LEN)) { i += M2_TC_NS_LEN; continue; }
        d[o++] = id[i] == '_' ? ' ' : id[i];
        i++;
    }
    d[o] = 0;
    return d;
}

static int intern(m2_tc_tree *t, const char *id, size_t len) {
    int f = m2_tc_find(t, id, (int)len);
    if (f >= 0) return f;
    if (t->n_names == t->cap_names) {
        int nc = t->cap_names ? t->cap_names * 2 : 256;
        m2_tc_name *a = realloc(t->names, (size_t)nc * sizeof *a);
        if (!a) return -1;
        t->names = a; t->cap_names = nc;
    }
    m2_tc_name *nm = &t->names[t->n_names];
    memset(nm, 0, sizeof *nm);
    nm->id = malloc(len + 1);
    if (!nm->id) return -1;
    memcpy(nm->id, id, len);
    nm->id[len] = 0;
    nm->disp = display_of(nm->id);
    if (!nm->disp) { free(nm->id); return -1; }
    nm->id_len = (int)len;
    nm->disp_len = (int)strlen(nm->disp);
    nm->tag_of = -1;
    nm->depth = -1;
    nm->best = -1;
    t->n_names++;
    if (t->n_names * 2 > t->hash_cap) {
        if (hash_rebuild(t, t->hash_cap ? t->hash_cap * 2 : 512)) return -1;
    } else {
        int j = (int)(m2_tc_fnv1a(nm->id, len) & (uint64_t)(t->hash_cap - 1));
        while (t->hash[j] >= 0) j = (j + 1) & (t->hash_cap - 1);
        t->hash[j] = t->n_names - 1;
    }
    return t->n_names - 1;
}

/* ---- parsing one file ---- */

typedef struct parse_ctx { m2_tc_tree *t; const char *file; m2_err *err; } parse_ctx;

static int add_ing(m2_tc_tree *t, int name, int count, int is_tag) {
    if (t->n_ings == t->cap_ings) {
        int nc = t->cap_ings ? t->cap_ings * 2 : 1024;
        m2_tc_ing *a = realloc(t->ings, (size_t)nc * sizeof *a);
        if (!a) return -1;
        t->ings = a; t->cap_ings = nc;
    }
    t->ings[t->n_ings++] = (m2_tc_ing){name, count, is_tag};
    return 0;
}

/* An ingredient value: {"item": id} | {"tag": id} | [alternatives...] (first one, as ADaPT). */
static int parse_ingredient(parse_ctx *c, const cJSON *v, const char *field, int *name, int *is_tag) {
    if (cJSON_IsArray(v)) {
        v = cJSON_GetArrayItem(v, 0);
        if (!v) return m2_errorf(c->err, M2_EFORMAT, "%s: field '%s': empty list of alternatives", c->file, field);
    }
    if (!cJSON_IsObject(v))
        return m2_errorf(c->err, M2_EFORMAT, "%s: field '%s': expected an object with \"item\" or \"tag\"", c->file, field);
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(v, "item");
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(v, "tag");
    const cJSON *s = it ? it : tg;
    if (!s) return m2_errorf(c->err, M2_EFORMAT, "%s: field '%s': needs \"item\" or \"tag\"", c->file, field);
    if (!cJSON_IsString(s))
        return m2_errorf(c->err, M2_EFORMAT, "%s: field '%s.%s': expected a string", c->file, field, it ? "item" : "tag");
    int n = intern(c->t, s->valuestring, strlen(s->valuestring));
    if (n < 0) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
    *name = n;
    *is_tag = it ? 0 : 1;
    if (*is_tag) c->t->names[n].is_tag = 1; else c->t->names[n].is_item = 1;
    return 0;
}

/* Non-overlapping occurrences of key in s (Python str.count). */
static int count_sub(const char *s, const char *key) {
    size_t kl = strlen(key);
    int n = 0;
    for (const char *p = strstr(s, key); p; p = strstr(p + kl, key)) n++;
    return n;
}

/* Returns 1 if the file holds a crafting recipe (appended, kept=undecided), 0 if another type. */
static int parse_recipe(parse_ctx *c, const cJSON *root, int file_idx) {
    m2_tc_tree *t = c->t;
    if (!cJSON_IsObject(root)) return m2_errorf(c->err, M2_EFORMAT, "%s: expected a JSON object at top level", c->file);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!type) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'type': missing", c->file);
    if (!cJSON_IsString(type)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'type': expected a string", c->file);
    int shaped = !strcmp(type->valuestring, "minecraft:crafting_shaped");
    int shapeless = !strcmp(type->valuestring, "minecraft:crafting_shapeless");
    if (!shaped && !shapeless) return 0;

    int ing0 = t->n_ings;
    if (shaped) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(root, "pattern");
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(root, "key");
        if (!pat) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'pattern': missing", c->file);
        if (!cJSON_IsArray(pat)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'pattern': expected a list of strings", c->file);
        const cJSON *row;
        cJSON_ArrayForEach(row, pat)
            if (!cJSON_IsString(row)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'pattern': expected a list of strings", c->file);
        if (!key) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'key': missing", c->file);
        if (!cJSON_IsObject(key)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'key': expected an object", c->file);
        const cJSON *k;
        cJSON_ArrayForEach(k, key) {
            char field[64];
            snprintf(field, sizeof field, "key.%.40s", k->string);
            if (!k->string[0]) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'key': empty key", c->file);
            int name, is_tag;
            if (parse_ingredient(c, k, field, &name, &is_tag)) return -1;
            int count = 0;
            cJSON_ArrayForEach(row, pat) count += count_sub(row->valuestring, k->string);
            if (add_ing(t, name, count, is_tag)) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
        }
    } else {
        const cJSON *ings = cJSON_GetObjectItemCaseSensitive(root, "ingredients");
        if (!ings) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'ingredients': missing", c->file);
        if (!cJSON_IsArray(ings)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'ingredients': expected a list", c->file);
        const cJSON *g;
        int i = 0;
        cJSON_ArrayForEach(g, ings) {
            char field[64];
            snprintf(field, sizeof field, "ingredients[%d]", i++);
            int name, is_tag;
            if (parse_ingredient(c, g, field, &name, &is_tag)) return -1;
            /* repeated ingredients (by name) are merged and counted, keeping the first's kind */
            int j = ing0;
            for (; j < t->n_ings; j++) if (t->ings[j].name == name) { t->ings[j].count++; break; }
            if (j == t->n_ings && add_ing(t, name, 1, is_tag)) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
        }
    }
    if (t->n_ings == ing0) return m2_errorf(c->err, M2_EFORMAT, "%s: field '%s': no ingredients", c->file, shaped ? "key" : "ingredients");

    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
    const char *out_id;
    long count = 1;
    if (!res) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'result': missing", c->file);
    if (cJSON_IsString(res)) out_id = res->valuestring;
    else if (cJSON_IsObject(res)) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(res, "item");
        if (!it) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'result.item': missing", c->file);
        if (!cJSON_IsString(it)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'result.item': expected a string", c->file);
        out_id = it->valuestring;
        const cJSON *cn = cJSON_GetObjectItemCaseSensitive(res, "count");
        if (cn && !cJSON_IsNull(cn)) {
            /* range first: converting a double outside long's range (1e300) is undefined */
            if (!cJSON_IsNumber(cn) || !(cn->valuedouble >= 0 && cn->valuedouble <= 1e6) ||
                cn->valuedouble != (double)(long)cn->valuedouble)
                return m2_errorf(c->err, M2_EFORMAT, "%s: field 'result.count': expected an integer in 0..1000000", c->file);
            count = (long)cn->valuedouble;
            if (count == 0) count = 1;   /* ADaPT: get("count") or 1 */
        }
    } else return m2_errorf(c->err, M2_EFORMAT, "%s: field 'result': expected an object or a string", c->file);

    const cJSON *grp = cJSON_GetObjectItemCaseSensitive(root, "group");
    int group = -1;
    if (grp) {
        if (!cJSON_IsString(grp)) return m2_errorf(c->err, M2_EFORMAT, "%s: field 'group': expected a string", c->file);
        size_t gl = strlen(grp->valuestring);
        char *g = malloc(M2_TC_NS_LEN + gl + 1);
        if (!g) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
        memcpy(g, M2_TC_NS, M2_TC_NS_LEN);
        memcpy(g + M2_TC_NS_LEN, grp->valuestring, gl + 1);
        group = intern(t, g, M2_TC_NS_LEN + gl);
        free(g);
        if (group < 0) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
    }
    int out = intern(t, out_id, strlen(out_id));
    if (out < 0) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
    t->names[out].is_item = 1;

    if (t->n_recipes == t->cap_recipes) {
        int nc = t->cap_recipes ? t->cap_recipes * 2 : 256;
        m2_tc_recipe *a = realloc(t->recipes, (size_t)nc * sizeof *a);
        if (!a) return m2_errorf(c->err, M2_ENOMEM, "%s: out of memory", c->file);
        t->recipes = a; t->cap_recipes = nc;
    }
    /* out_tag holds the group name for now; pass 2 decides what it means */
    t->recipes[t->n_recipes++] = (m2_tc_recipe){.out = out, .out_count = (int)count, .out_tag = group,
                                             .ing0 = ing0, .n_ing = t->n_ings - ing0, .line = -1,
                                             .file = file_idx, .depth = -1};
    return 1;
}

/* ---- pass 2: skips, groups, cycles (ADaPT's _load_recipes bookkeeping, in file order) ---- */

static int ends_with_block(const m2_tc_name *n) {
    return n->id_len >= 6 && !memcmp(n->id + n->id_len - 6, "_block", 6);
}

static int register_recipes(m2_tc_tree *t, m2_tc_ivec *kept, int first_file, m2_err *err) {
    int nn = t->n_names;
    if (nn > TC_MAX_NAMES)
        return m2_errorf(err, M2_EUNSUPPORTED, "recipes: %d distinct item and tag names (more than %d are not supported)", nn, TC_MAX_NAMES);
    size_t words = ((size_t)nn + 63) / 64;
    uint64_t *deps = calloc((size_t)nn * words, sizeof *deps);
    if (!deps && nn) return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
    /* pass 0: the recipes of first_file (none when it is -1); pass 1: all others, in file order */
    for (int pass = 0; pass < 2; pass++)
    for (int r = 0; r < t->n_recipes; r++) {
        m2_tc_recipe *rc = &t->recipes[r];
        if ((rc->file == first_file) != (pass == 0)) continue;
        const m2_tc_ing *in = &t->ings[rc->ing0];
        if (rc->n_ing == 1 && ends_with_block(&t->names[in[0].name])) { t->stats.n_skipped_block++; rc->out_tag = -2; continue; }
        int out = rc->out, tag = rc->out_tag;
        if (tag >= 0 && tag != out) { t->names[tag].is_tag = 1; t->names[out].tag_of = tag; }
        int skip = 0;
        for (int i = 0; i < rc->n_ing; i++) {
            const uint64_t *d = deps + (size_t)in[i].name * words;
            if (d[out / 64] >> (out % 64) & 1) skip = 1;
        }
        if (skip) {
            t->stats.n_skipped_cycle++;
            rc->out_tag = -2;
            if (m2_tc_ivec_push(&t->cycle_skipped, r)) goto oom;
            continue;
        }
        m2_tc_name *o = &t->names[out];
        if (!o->item_recipes.n && m2_tc_ivec_push(&t->craft_order, out)) goto oom;
        if (m2_tc_ivec_push(&o->item_recipes, r) || m2_tc_ivec_push(kept, r)) goto oom;
        uint64_t *dout = deps + (size_t)out * words;
        for (int i = 0; i < rc->n_ing; i++) {
            int nm = in[i].name;
            dout[nm / 64] |= 1ull << (nm % 64);
            const uint64_t *d = deps + (size_t)nm * words;
            for (size_t w = 0; w < words; w++) dout[w] |= d[w];
        }
        if (tag >= 0 && m2_tc_ivec_push(&t->names[tag].tag_recipes, r)) goto oom;
    }
    free(deps);
    return 0;
oom:
    free(deps);
    return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
}

/* clean_up_recipes: an input tag none of whose members has a recipe becomes a plain item. */
static int clean_up(m2_tc_tree *t, const m2_tc_ivec *kept, m2_err *err) {
    for (int i = 0; i < t->n_names; i++)
        if (t->names[i].tag_of >= 0 && m2_tc_ivec_push(&t->names[t->names[i].tag_of].members, i))
            return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
    for (int k = 0; k < kept->n; k++) {
        m2_tc_recipe *rc = &t->recipes[kept->a[k]];
        for (int i = 0; i < rc->n_ing; i++) {
            m2_tc_ing *g = &t->ings[rc->ing0 + i];
            if (!g->is_tag) continue;
            const m2_tc_ivec *m = &t->names[g->name].members;
            int ok = 0;
            for (int j = 0; j < m->n && !ok; j++) ok = t->names[m->a[j]].item_recipes.n > 0;
            if (!ok) {
                g->is_tag = 0;
                if (t->names[g->name].is_tag) t->stats.n_tags_cleaned++;
                t->names[g->name].is_tag = 0;
                t->names[g->name].is_item = 1;
            }
        }
    }
    return 0;
}

/* get_min_depth, memoised; a name met again while being computed counts as unreachable (ADaPT
 * would recurse forever on such a cycle). */
static int depth_of(m2_tc_tree *t, int name, int level);

static int recipe_depth(m2_tc_tree *t, int r, int level) {
    m2_tc_recipe *rc = &t->recipes[r];
    int d = 0;
    for (int i = 0; i < rc->n_ing; i++) {
        int x = depth_of(t, t->ings[rc->ing0 + i].name, level + 1);
        x = x >= M2_TC_DEPTH_INF ? M2_TC_DEPTH_INF : x + 1;
        if (x > d) d = x;
    }
    rc->depth = d;
    return d;
}

static int depth_of(m2_tc_tree *t, int name, int level) {
    m2_tc_name *n = &t->names[name];
    if (n->depth >= 0) return n->depth;
    if (n->depth == -2 || level > 4096) return M2_TC_DEPTH_INF;
    const m2_tc_ivec *rs = n->item_recipes.n ? &n->item_recipes : &n->tag_recipes;
    if (!rs->n) { n->depth = 0; return 0; }
    n->depth = -2;
    int best = M2_TC_DEPTH_INF;
    for (int i = 0; i < rs->n; i++) {
        int d = recipe_depth(t, rs->a[i], level);
        if (d < best) best = d;
    }
    n->depth = best;
    return best;
}

/* Recipe command line: "craft N out using c1 in1, c2 in2". */
static int build_lines(m2_tc_tree *t, const m2_tc_ivec *kept, m2_err *err) {
    int cap = 16;
    while (cap < kept->n * 2 + 2) cap *= 2;
    int *h = malloc((size_t)cap * sizeof *h);
    char *tmp = NULL;
    size_t tcap = 0;
    if (!h) return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
    for (int i = 0; i < cap; i++) h[i] = -1;
    for (int k = 0; k < kept->n; k++) {
        m2_tc_recipe *rc = &t->recipes[kept->a[k]];
        size_t need = 64 + (size_t)t->names[rc->out].disp_len;
        for (int i = 0; i < rc->n_ing; i++) need += 16 + (size_t)t->names[t->ings[rc->ing0 + i].name].disp_len;
        if (need > tcap) {
            char *p = realloc(tmp, need);
            if (!p) goto oom;
            tmp = p; tcap = need;
        }
        int n = sprintf(tmp, "craft %d %s using ", rc->out_count, t->names[rc->out].disp);
        for (int i = 0; i < rc->n_ing; i++) {
            const m2_tc_ing *g = &t->ings[rc->ing0 + i];
            n += sprintf(tmp + n, "%s%d %s", i ? ", " : "", g->count, t->names[g->name].disp);
        }
        uint64_t hv = m2_tc_fnv1a(tmp, (size_t)n);
        int j = (int)(hv & (uint64_t)(cap - 1));
        for (; h[j] >= 0; j = (j + 1) & (cap - 1))
            if (t->line_len[h[j]] == n && !memcmp(t->lines[h[j]], tmp, (size_t)n)) break;
        if (h[j] < 0) {
            if (t->n_lines == t->cap_lines) {
                int nc = t->cap_lines ? t->cap_lines * 2 : 256;
                char **a = realloc(t->lines, (size_t)nc * sizeof *a);
                if (!a) goto oom;
                t->lines = a;
                int *l = realloc(t->line_len, (size_t)nc * sizeof *l);
                if (!l) goto oom;
                t->line_len = l;
                int *lr = realloc(t->line_recipe, (size_t)nc * sizeof *lr);
                if (!lr) goto oom;
                t->line_recipe = lr;
                t->cap_lines = nc;
            }
            char *s = malloc((size_t)n + 1);
            if (!s) goto oom;
            memcpy(s, tmp, (size_t)n + 1);
            t->lines[t->n_lines] = s;
            t->line_len[t->n_lines] = n;
            t->line_recipe[t->n_lines] = kept->a[k];
            h[j] = t->n_lines++;
        }
        rc->line = h[j];
    }
    free(h); free(tmp);
    return 0;
oom:
    free(h); free(tmp);
    return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
}

static int push_goal(m2_tc_tree *t, int it) {
    /* split by a hash of the goal id: 2 in 10 goal items are held out as OOD */
    int ood = m2_tc_fnv1a(t->names[it].id, (size_t)t->names[it].id_len) % 10 < 2;
    return m2_tc_ivec_push(&t->goals, it) || m2_tc_ivec_push(&t->split_goals[ood ? M2_SPLIT_OOD : M2_SPLIT_TRAIN], it) ||
           (!ood && m2_tc_ivec_push(&t->split_goals[M2_SPLIT_ID], it));
}

/* ADaPT's reset list: craftable items of depth >= 2, depth-descending, stable in first-recipe
 * order; then the splits. extra[0..n_extra) are cycle goals with their depths in their own
 * worlds: each follows the goals of its depth, in the order given. */
static int set_goals(m2_tc_tree *t, const int *extra, const int *extra_depth, int n_extra, m2_err *err) {
    t->goals.n = 0;
    for (int s = 0; s < 3; s++) t->split_goals[s].n = 0;
    int maxd = 0;
    for (int i = 0; i < t->craft_order.n; i++) {
        int d = t->names[t->craft_order.a[i]].depth;
        if (d < M2_TC_DEPTH_INF && d > maxd) maxd = d;
    }
    for (int i = 0; i < n_extra; i++)
        if (extra_depth[i] < M2_TC_DEPTH_INF && extra_depth[i] > maxd) maxd = extra_depth[i];
    for (int d = maxd; d >= 2; d--) {
        for (int i = 0; i < t->craft_order.n; i++)
            if (t->names[t->craft_order.a[i]].depth == d && push_goal(t, t->craft_order.a[i]))
                return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
        for (int i = 0; i < n_extra; i++)
            if (extra_depth[i] == d && push_goal(t, extra[i])) return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
    }
    t->stats.n_goals = t->goals.n;
    for (int s = 0; s < 3; s++) t->stats.split_goals[s] = t->split_goals[s].n;
    return 0;
}

typedef struct src_ref { const char *name; int idx; } src_ref;
static int cmp_src(const void *a, const void *b) {
    return strcmp(((const src_ref *)a)->name, ((const src_ref *)b)->name);
}

int m2_tc_tree_build(m2_tc_tree *t, const m2_tc_src *files, int n, int first_file, m2_err *err) {
    memset(t, 0, sizeof *t);
    if (n <= 0) return m2_errorf(err, M2_EFORMAT, "recipes: no recipe files");
    src_ref *order = malloc((size_t)n * sizeof *order);
    m2_tc_ivec kept = {0};
    if (!order) return m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
    for (int i = 0; i < n; i++) order[i] = (src_ref){files[i].name, i};
    /* sorted file names: the documented deterministic order (ADaPT used os.listdir order) */
    qsort(order, (size_t)n, sizeof *order, cmp_src);
    t->stats.n_files = n;
    for (int k = 0; k < n; k++) {
        const m2_tc_src *f = &files[order[k].idx];
        const char *end = NULL;
        cJSON *root = cJSON_ParseWithLengthOpts(f->text, f->len, &end, 0);
        if (!root) {
            size_t pos = end && end >= f->text ? (size_t)(end - f->text) : 0;
            m2_errorf(err, M2_EFORMAT, "%s: malformed JSON near byte %zu", f->name, pos);
            goto fail;
        }
        parse_ctx c = {t, f->name, err};
        int r = parse_recipe(&c, root, order[k].idx);
        cJSON_Delete(root);
        if (r < 0) goto fail;
        if (r == 0) t->stats.n_other_type++; else t->stats.n_crafting++;
    }
    if (register_recipes(t, &kept, first_file, err) || clean_up(t, &kept, err)) goto fail;
    t->stats.n_kept = kept.n;
    for (int i = 0; i < t->n_names; i++) {
        m2_tc_name *nm = &t->names[i];
        depth_of(t, i, 0);
        t->stats.n_items += nm->is_item;
        t->stats.n_tags += nm->is_tag;
        for (int j = 0; j < nm->item_recipes.n; j++) {
            int r = nm->item_recipes.a[j];
            if (nm->best < 0 || t->recipes[r].depth < t->recipes[nm->best].depth) nm->best = r;
        }
        for (int j = 0; j < nm->item_recipes.n; j++) {
            const m2_tc_recipe *rc = &t->recipes[nm->item_recipes.a[j]];
            for (int g = 0; g < rc->n_ing; g++) {
                m2_tc_ivec *u = &t->names[t->ings[rc->ing0 + g].name].uses;
                if ((!u->n || u->a[u->n - 1] != nm->item_recipes.a[j]) && m2_tc_ivec_push(u, nm->item_recipes.a[j])) {
                    m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
                    goto fail;
                }
            }
        }
    }
    if (build_lines(t, &kept, err)) goto fail;
    t->stats.n_craftable = t->craft_order.n;
    for (int i = 0; i < t->craft_order.n; i++) {
        int d = t->names[t->craft_order.a[i]].depth;
        t->stats.depth_hist[d < M2_TC_MAX_DEPTH_HIST ? d : M2_TC_MAX_DEPTH_HIST - 1]++;
    }
    if (set_goals(t, NULL, NULL, 0, err)) goto fail;
    free(order);
    m2_tc_ivec_free(&kept);
    return 0;
fail:
    free(order);
    m2_tc_ivec_free(&kept);
    m2_tc_tree_free(t);
    return -1;
}

void m2_tc_tree_free(m2_tc_tree *t) {
    for (int i = 0; i < t->n_names; i++) {
        m2_tc_name *n = &t->names[i];
        free(n->id); free(n->disp);
        m2_tc_ivec_free(&n->item_recipes); m2_tc_ivec_free(&n->tag_recipes);
        m2_tc_ivec_free(&n->uses); m2_tc_ivec_free(&n->members);
    }
    free(t->names); free(t->hash); free(t->recipes); free(t->ings);
    for (int i = 0; i < t->n_lines; i++) free(t->lines[i]);
    free(t->lines); free(t->line_len); free(t->line_recipe);
    m2_tc_ivec_free(&t->craft_order); m2_tc_ivec_free(&t->goals); m2_tc_ivec_free(&t->cycle_skipped);
    for (int s = 0; s < 3; s++) m2_tc_ivec_free(&t->split_goals[s]);
    memset(t, 0, sizeof *t);
}

int m2_tc_is_craftable(const m2_tc_tree *t, int name) {
    return name >= 0 && (t->names[name].item_recipes.n || t->names[name].tag_recipes.n);
}

/* get succeeds for a known item that is neither craftable nor a tag. */
int m2_tc_is_gettable(const m2_tc_tree *t, int name) {
    return name >= 0 && !m2_tc_is_craftable(t, name) && !t->names[name].is_tag && t->names[name].is_item;
}

/* ---- worlds: goals on recipe cycles ---- */

int tc_worlds_build(tc_worlds *ws, const m2_tc_src *files, int n, m2_err *err) {
    memset(ws, 0, sizeof *ws);
    m2_tc_ivec extra = {0}, extra_depth = {0};
    uint8_t *is_goal = NULL;
    ws->w = calloc(TC_MAX_WORLDS, sizeof *ws->w);
    ws->first_file = calloc(TC_MAX_WORLDS, sizeof *ws->first_file);
    if (!ws->w || !ws->first_file) { m2_errorf(err, M2_ENOMEM, "recipes: out of memory"); goto fail; }
    if (m2_tc_tree_build(&ws->w[0], files, n, -1, err)) goto fail;
    ws->n = 1;
    m2_tc_tree *t0 = &ws->w[0];
    ws->world_of = calloc((size_t)t0->n_names + 1, sizeof *ws->world_of);
    is_goal = calloc((size_t)t0->n_names + 1, 1);
    if (!ws->world_of || !is_goal) { m2_errorf(err, M2_ENOMEM, "recipes: out of memory"); goto fail; }
    for (int i = 0; i < t0->goals.n; i++) is_goal[t0->goals.a[i]] = 1;
    /* one variant per skipped cycle recipe, in load order: the same files with that recipe's file
     * registered first, so the cycle is broken at its other recipe (as ADaPT's loader does when the
     * files come in that order) */
    for (int k = 0; k < t0->cycle_skipped.n && ws->n < TC_MAX_WORLDS; k++) {
        int f = t0->recipes[t0->cycle_skipped.a[k]].file;
        m2_tc_tree *v = &ws->w[ws->n];
        if (m2_tc_tree_build(v, files, n, f, err)) goto fail;   /* frees v itself */
        if (v->n_names != t0->n_names) {   /* the same files interned in the same order */
            m2_tc_tree_free(v);
            m2_errorf(err, M2_EINVAL, "recipes: internal error: a cycle variant has other names");
            goto fail;
        }
        int found = 0;
        for (int i = 0; i < v->goals.n; i++) {
            int g = v->goals.a[i];
            if (is_goal[g]) continue;   /* w[0], or an earlier variant, already serves it */
            is_goal[g] = 1;
            ws->world_of[g] = ws->n;
            if (m2_tc_ivec_push(&extra, g) || m2_tc_ivec_push(&extra_depth, v->names[g].depth)) {
                m2_tc_tree_free(v);
                m2_errorf(err, M2_ENOMEM, "recipes: out of memory");
                goto fail;
            }
            found++;
        }
        if (!found) { m2_tc_tree_free(v); continue; }
        /* a variant's own goal lists are never used (w[0]'s hold every goal): emptied so that
         * nothing can read them by mistake */
        m2_tc_ivec_free(&v->goals);
        for (int s = 0; s < 3; s++) m2_tc_ivec_free(&v->split_goals[s]);
        const char *slash = strrchr(files[f].name, '/');
        ws->first_file[ws->n] = strdup(slash ? slash + 1 : files[f].name);
        ws->n++;   /* counted before the strdup check so that tc_worlds_free frees v */
        if (!ws->first_file[ws->n - 1]) { m2_errorf(err, M2_ENOMEM, "recipes: out of memory"); goto fail; }
    }
    if (extra.n && set_goals(t0, extra.a, extra_depth.a, extra.n, err)) goto fail;
    t0->stats.n_cycle_goals = extra.n;
    free(is_goal);
    m2_tc_ivec_free(&extra);
    m2_tc_ivec_free(&extra_depth);
    return 0;
fail:
    free(is_goal);
    m2_tc_ivec_free(&extra);
    m2_tc_ivec_free(&extra_depth);
    tc_worlds_free(ws);
    return -1;
}

void tc_worlds_free(tc_worlds *ws) {
    for (int i = 0; i < ws->n; i++) m2_tc_tree_free(&ws->w[i]);
    if (ws->first_file) for (int i = 0; i < TC_MAX_WORLDS; i++) free(ws->first_file[i]);
    free(ws->w); free(ws->first_file); free(ws->world_of);
    memset(ws, 0, sizeof *ws);
}
