/* ScienceWorld chemistry, after processes/Chemistry.scala: "mix <container>" combines exactly the
 * listed ingredients (2 or 3 things in the container) into a product, paints mix into secondary and
 * tertiary colours, and any other 2-4 paints turn brown. */
#include "env/scienceworld/sw.h"
#include <stdio.h>
#include <string.h>

/* Chemistry.getSubstance: a content named `name` (in `state` when given), or whose material is it. */
static int find_in(const m2_sw_world *w, int container, const char *name, int state) {
    for (int i = 0; i < w->n; i++) {
        const m2_sw_obj *o = &w->o[i];
        if (o->parent != container || (o->flags & M2_SW_F_DELETED)) continue;
        if (!strcmp(o->name, name)) {
            if (state < 0) return i;
            if (o->mat >= 0 && o->state == state) return i;
        }
        if (o->mat >= 0 && !strcmp(m2_sw_materials[o->mat].name, name) && o->state == state) return i;
    }
    return M2_SW_NONE;
}

int m2_sw_add_paint(m2_sw_world *w, const char *name, int parent) {
    int id = m2_sw_new(w, M2_SW_K_PAINT, name, parent);
    if (id != M2_SW_NONE) m2_sw_set_material(w, id, "paint");
    return id;
}

typedef struct recipe {
    const char *in[3];
    int state[3];          /* required state per input, -1 any */
    const char *out, *out_material;
    int out_kind;
    const char *msg;
} recipe;

#define ANY (-1)
static const recipe two_recipes[] = {
    {{"water", "sodium chloride"}, {M2_SW_ST_LIQUID, M2_SW_ST_SOLID}, "salt water", "salt water", M2_SW_K_SUBSTANCE, "Sodium chloride and water mix to produce salt water."},
    {{"water", "soap"}, {M2_SW_ST_LIQUID, ANY}, "soapy water", "soapy water", M2_SW_K_SUBSTANCE, "Soap and water mix to produce soapy water."},
    {{"water", "sugar"}, {M2_SW_ST_LIQUID, ANY}, "sugar water", "sugar water", M2_SW_K_SUBSTANCE, "Sugar and water mix to produce sugar water."},
    {{"water", "flour"}, {M2_SW_ST_LIQUID, ANY}, "dough", "flour", M2_SW_K_FOOD, "Flour and water mix to produce dough."},
    {{"chocolate", "marshmallow"}, {ANY, ANY}, "smores", "marshmallow", M2_SW_K_FOOD, "Chocolate and marshmallow mix to produce smores."},
    {{"water", "iron block"}, {M2_SW_ST_LIQUID, ANY}, "rust", "rust", M2_SW_K_SUBSTANCE, "Iron block and water mix to produce rust."},
    {{"sodium bicarbonate", "acetic acid"}, {ANY, ANY}, "sodium acetate", "sodium acetate", M2_SW_K_SUBSTANCE, "Sodium bicarbonate and acetic acid mix to produce sodium acetate."},
    {{"bread", "peanut"}, {ANY, ANY}, "peanut butter sandwich", "flour", M2_SW_K_FOOD, "Bread and peanuts mix to produce a peanut butter sandwich."},
    {{"bread", "jam"}, {ANY, ANY}, "jam sandwich", "flour", M2_SW_K_FOOD, "Bread and peanuts mix to produce a jam sandwich."},
    {{"bread", "banana"}, {ANY, ANY}, "banana sandwich", "flour", M2_SW_K_FOOD, "Bread and peanuts mix to produce a banana sandwich."},
    {{"paper", "red paint"}, {ANY, M2_SW_ST_LIQUID}, "red paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce red paper."},
    {{"paper", "green paint"}, {ANY, M2_SW_ST_LIQUID}, "green paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce green paper."},
    {{"paper", "blue paint"}, {ANY, M2_SW_ST_LIQUID}, "blue paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce blue paper."},
    {{"paper", "orange paint"}, {ANY, M2_SW_ST_LIQUID}, "orange paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce orange paper."},
    {{"paper", "yellow paint"}, {ANY, M2_SW_ST_LIQUID}, "yellow paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce yellow paper."},
    {{"paper", "violet paint"}, {ANY, M2_SW_ST_LIQUID}, "voilet paper", "paper", M2_SW_K_THING, "Paper and blue paint mix to produce voilet paper."},
    {{"red paint", "blue paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "violet paint", NULL, M2_SW_K_PAINT, "Red and blue paint mix to produce violet paint."},
    {{"blue paint", "yellow paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "green paint", NULL, M2_SW_K_PAINT, "Blue and yellow paint mix to produce green paint."},
    {{"yellow paint", "red paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "orange paint", NULL, M2_SW_K_PAINT, "Yellow and red paint mix to produce orange paint."},
    {{"yellow paint", "orange paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "yellow-orange paint", NULL, M2_SW_K_PAINT, "Yellow and orange paint mix to produce yellow-orange paint."},
    {{"orange paint", "red paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "red-orange paint", NULL, M2_SW_K_PAINT, "Red and orange paint mix to produce red-orange paint."},
    {{"red paint", "violet paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "violet-red paint", NULL, M2_SW_K_PAINT, "Violet and red paint mix to produce violet-red paint."},
    {{"violet paint", "blue paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "blue-violet paint", NULL, M2_SW_K_PAINT, "Blue and violet paint mix to produce blue-violet paint."},
    {{"blue paint", "green paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "green-blue paint", NULL, M2_SW_K_PAINT, "Blue and green paint mix to produce blue green paint."},
    {{"green paint", "yellow paint"}, {M2_SW_ST_LIQUID, M2_SW_ST_LIQUID}, "yellow-green paint", NULL, M2_SW_K_PAINT, "Green and yellow paint mix to produce yellow-green paint."},
};

static const recipe three_recipes[] = {
    {{"peanut", "almond", "cachew"}, {ANY, ANY, ANY}, "mixed nuts", "nut", M2_SW_K_FOOD, "Peanuts, almonds, and cachews mix to produce mixed nuts."},
    {{"apple", "orange", "banana"}, {ANY, ANY, ANY}, "fruit salad", "plant matter", M2_SW_K_FOOD, "Apples, oranges, and bananas mix to produce fruit salad."},
    {{"bread", "peanut", "jam"}, {ANY, ANY, ANY}, "peanut butter with jam sandwich", "flour", M2_SW_K_FOOD, "Bread and peanuts and jam mix to produce a peanut butter with jam sandwich."},
    {{"bread", "peanut", "banana"}, {ANY, ANY, ANY}, "peanut butter with banana sandwich", "flour", M2_SW_K_FOOD, "Bread and peanuts and jam mix to produce a peanut butter with banana sandwich."},
};

static const char *const all_paints[13] = {"red paint", "blue paint", "yellow paint", "violet paint", "green paint", "orange paint",
    "yellow-orange paint", "red-orange paint", "violet-red paint", "blue-violet paint", "green-blue paint", "green-yellow paint", "brown paint"};

static int try_recipes(m2_sw_world *w, int container, const recipe *rs, int nr, int nin, m2_strbuf *b) {
    for (int r = 0; r < nr; r++) {
        int found[3];
        int ok = 1;
        for (int k = 0; k < nin && ok; k++) {
            found[k] = find_in(w, container, rs[r].in[k], rs[r].state[k]);
            if (found[k] == M2_SW_NONE) ok = 0;
        }
        if (!ok) continue;
        for (int k = 0; k < nin; k++) m2_sw_delete(w, found[k]);
        int id;
        if (rs[r].out_kind == M2_SW_K_PAINT) id = m2_sw_add_paint(w, rs[r].out, container);
        else {
            id = m2_sw_new(w, rs[r].out_kind, rs[r].out, container);
            if (id != M2_SW_NONE && rs[r].out_material) m2_sw_set_material(w, id, rs[r].out_material);
        }
        m2_strbuf_puts(b, rs[r].msg);
        return 1;
    }
    return 0;
}

void m2_sw_mix(m2_sw_world *w, int container, m2_strbuf *b) {
    int kids[64], k = 0, all[64];
    int n = m2_sw_children(w, container, all, 64, 0);
    for (int i = 0; i < n; i++) if (!(w->o[all[i]].flags & M2_SW_F_HIDDEN)) kids[k++] = all[i];
    char dn[M2_SW_NAME * 2];
    if (k == 0) { m2_strbuf_puts(b, "That container is empty, so there are no items to mix."); return; }
    if (k == 1) {
        m2_strbuf_appendf(b, "There is only one thing (%s)", m2_sw_descript_name(w, kids[0], dn, sizeof dn));
        return;
    }
    if (k == 2 && try_recipes(w, container, two_recipes, (int)(sizeof two_recipes / sizeof two_recipes[0]), 2, b)) return;
    if (k == 3 && try_recipes(w, container, three_recipes, (int)(sizeof three_recipes / sizeof three_recipes[0]), 3, b)) return;
    if (k >= 2 && k <= 4) {
        /* catch-all: exactly k paints -> brown */
        int found[13], nf = 0;
        for (int i = 0; i < 13; i++) {
            int f = find_in(w, container, all_paints[i], M2_SW_ST_LIQUID);
            if (f != M2_SW_NONE) found[nf++] = f;
        }
        if (nf == k) {
            for (int i = 0; i < nf; i++) m2_sw_delete(w, found[i]);
            m2_sw_add_paint(w, "brown paint", container);
            m2_strbuf_puts(b, "The paints mix to produce brown paint.");
            return;
        }
    }
    m2_strbuf_appendf(b, "Mixing the contents of the %s does not appear to produce anything new.", m2_sw_descript_name(w, container, dn, sizeof dn));
}
