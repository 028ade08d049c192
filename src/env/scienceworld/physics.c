/* ScienceWorld thermodynamics, after processes/HeatTransfer.scala, StateOfMatter, Combustion.scala
 * and the heat/cooling source devices:
 *  - each tick walks the object tree from the universe; every object first runs its device step
 *    (stove/oven/blast furnace heat their contents towards their set temperature, fridge/freezers
 *    cool theirs, sinks fill open containers with water, fountains refill), then combustion, then
 *    conductive transfer container<->content and content<->content (coefficient 0.1 times the
 *    smaller conductivity), then its state of matter from melting/boiling points (renaming water to
 *    ice/steam etc.), then recurses into its contents;
 *  - burning objects stay at combustion point + 200 C for 100 ticks, then turn into ash; liquid
 *    water next to them puts the fire out. */
#include "env/scienceworld/sw.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HEAT_COEF 0.10
#define COMBUSTION_DELTA 200.0f

/* name, solid/liquid/gas names, conductivity, melt, boil, combustion, initial state, initial temp */
const m2_sw_material m2_sw_materials[] = {
    {"air", "solid air", "liquid air", "air", 0.01f, -215.0f, -194.0f, 100000.0f, M2_SW_ST_GAS, 10.0f},
    {"water", "ice", "water", "steam", 0.5f, 0.0f, 100.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"orange juice", "solid orange juice", "orange juice", "gaseous orange juice", 0.5f, 0.0f, 100.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"apple juice", "solid apple juice", "apple juice", "gaseous apple juice", 0.5f, -2.0f, 160.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"wood", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 350.0f, M2_SW_ST_SOLID, 10.0f},
    {"paper", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 210.0f, M2_SW_ST_SOLID, 10.0f},
    {"metal", "metal", "liquid metal", "gaseous metal", 1.0f, 1000.0f, 2000.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"aluminum", "aluminum", "liquid aluminum", "gaseous aluminum", 1.0f, 660.0f, 2470.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"steel", "steel", "liquid steel", "gaseous steel", 1.0f, 1400.0f, 2900.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"tin", "tin", "liquid tin", "gasseous tin", 1.0f, 232.0f, 2602.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"glass", "glass", "liquid glass", "gaseous glass", 1.0f, 1400.0f, 2200.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"ceramic", "ceramic", "liquid ceramic", "gaseous ceramic", 0.02f, 2000.0f, 10001.0f, 10000.0f, M2_SW_ST_SOLID, 10.0f},
    {"plastic", "plastic", "liquid plastic", "gaseous plastic", 1.0f, 200.0f, 300.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"soap", "soap", "liquid soap", "gaseous soap", 0.5f, 140.0f, 100000.0f, 537.0f, M2_SW_ST_SOLID, 10.0f},
    {"sodium chloride", "sodium chloride", "liquid sodium chloride", "gaseous sodium chloride", 0.2f, 801.0f, 1465.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"chocolate", "solid chocolate", "liquid chocolate", "gaseous chocolate", 0.5f, 30.0f, 100000.0f, 95.0f, M2_SW_ST_SOLID, 10.0f},
    {"marshmallow", "marshmallow", "liquid marshmallow", "gaseous marshmallow", 0.5f, 36.0f, 100000.0f, 350.0f, M2_SW_ST_SOLID, 10.0f},
    {"ice cream", "ice cream", "liquid ice cream", "gaseous ice cream", 0.5f, -10.0f, 101.0f, 100000.0f, M2_SW_ST_SOLID, -15.0f},
    {"rubber", "rubber", "liquid rubber", "gaseous rubber", 0.5f, 180.0f, 10001.0f, 260.0f, M2_SW_ST_SOLID, 10.0f},
    {"lead", "lead", "liquid lead", "gaseous lead", 1.0f, 327.0f, 1740.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"mercury", "solid mercury", "liquid mercury", "gaseous mercury", 1.0f, -39.0f, 357.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"gallium", "gallium", "liquid gallium", "gaseous gallium", 1.0f, 30.0f, 2400.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"caesium", "solid caesium", "liquid caesium", "gaseous caesium", 1.0f, 29.0f, 671.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"ash", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 10002.0f, M2_SW_ST_SOLID, 10.0f},
    {"soil", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 10000.0f, M2_SW_ST_SOLID, 10.0f},
    {"plant matter", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 200.0f, M2_SW_ST_SOLID, 10.0f},
    {"paint", NULL, NULL, NULL, 0.5f, 0.0f, 100.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"salt water", NULL, NULL, NULL, 0.5f, -2.0f, 102.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"soapy water", NULL, NULL, NULL, 0.5f, -1.0f, 101.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"sugar water", NULL, NULL, NULL, 0.5f, -1.0f, 101.0f, 100000.0f, M2_SW_ST_LIQUID, 10.0f},
    {"flour", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 380.0f, M2_SW_ST_SOLID, 10.0f},
    {"nut", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 400.0f, M2_SW_ST_SOLID, 10.0f},
    {"jam", NULL, NULL, NULL, 0.5f, 10000.0f, 10001.0f, 400.0f, M2_SW_ST_SOLID, 10.0f},
    {"sugar", NULL, NULL, NULL, 0.5f, 186.0f, 100000.0f, 350.0f, M2_SW_ST_SOLID, 10.0f},
    {"rust", NULL, NULL, NULL, 0.9f, 100000.0f, 100001.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"iron", "iron", "liquid iron", "gaseous iron", 1.0f, 1538.0f, 2862.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"acetic acid", "solid acetic acid", "acetic acid", "gaseous acetic acid", 0.2f, 17.0f, 119.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
    {"sodium bicarbonate", NULL, NULL, NULL, 0.2f, 10000.0f, 10001.0f, 100.0f, M2_SW_ST_SOLID, 10.0f},
    {"sodium acetate", NULL, NULL, NULL, 0.2f, 324.0f, 881.0f, 100000.0f, M2_SW_ST_SOLID, 10.0f},
};

static const int n_materials = (int)(sizeof m2_sw_materials / sizeof m2_sw_materials[0]);

int m2_sw_material_find(const char *name) {
    for (int i = 0; i < n_materials; i++)
        if (!strcmp(m2_sw_materials[i].name, name)) return i;
    return -1;
}

const char *m2_sw_state_name(int st) { return st == M2_SW_ST_SOLID ? "solid" : st == M2_SW_ST_LIQUID ? "liquid" : "gas"; }

double m2_sw_java_round(double x) { return x >= 0 ? floor(x + 0.5) : -floor(-x + 0.5); }

/* MaterialProperties.electricallyConductive: the metals (MetalProp and its subclasses). */
static int material_conductive(const char *m) {
    static const char *const metals[] = {"metal", "steel", "tin", "lead", "mercury", "gallium", "caesium", "aluminum",
                                         "copper", "iron", "brass", "bronze", "gold", "platinum", "zinc", "titanium", "silicon"};
    for (size_t i = 0; i < sizeof metals / sizeof metals[0]; i++) if (!strcmp(m, metals[i])) return 1;
    return 0;
}

void m2_sw_set_material(m2_sw_world *w, int obj, const char *material) {
    m2_sw_obj *o = &w->o[obj];
    int m = m2_sw_material_find(material);
    if (m < 0) return;
    if (material_conductive(material)) o->flags |= M2_SW_F_CONDUCTIVE; else o->flags &= ~M2_SW_F_CONDUCTIVE;
    o->mat = (int16_t)m;
    o->flags |= M2_SW_F_MATERIAL;
    o->temp = m2_sw_materials[m].init_temp;
    o->state = (uint8_t)m2_sw_materials[m].init_state;
    o->combust_ticks = 100;
    if (!strcmp(material, "ash")) { o->combusted = 1; o->combust_ticks = 0; }
}

float m2_sw_melt_point(const m2_sw_world *w, int obj) {
    const m2_sw_obj *o = &w->o[obj];
    if (o->flags & M2_SW_F_UNKNOWN) return o->melt_ov;
    return o->mat >= 0 ? m2_sw_materials[o->mat].melt_c : 0.0f;
}

/* StateOfMatter.ChangeOfState: infer the state from the temperature; rename on a change. */
void m2_sw_update_name_for_state(m2_sw_world *w, int obj) {
    m2_sw_obj *o = &w->o[obj];
    if (o->mat < 0) return;
    const m2_sw_material *m = &m2_sw_materials[o->mat];
    float melt = m2_sw_melt_point(w, obj);
    int st = o->temp < melt ? M2_SW_ST_SOLID : o->temp > m->boil_c ? M2_SW_ST_GAS : M2_SW_ST_LIQUID;
    if (st == o->state) return;
    o->state = (uint8_t)st;
    if (o->flags & M2_SW_F_UNKNOWN) {
        static const char *const pre[3] = {"solid", "liquid", "gaseous"};
        char base[M2_SW_NAME];
        memcpy(base, o->alt, sizeof base);
        snprintf(o->name, sizeof o->name, "%s %.38s", pre[st], base);
        return;
    }
    const char *nm = st == M2_SW_ST_SOLID ? m->solid_name : st == M2_SW_ST_LIQUID ? m->liquid_name : m->gas_name;
    if (nm) snprintf(o->name, sizeof o->name, "%s", nm);
}

static void touching(m2_sw_world *w, int a, int b) {
    m2_sw_obj *o1 = &w->o[a], *o2 = &w->o[b];
    if (o1->mat < 0 || o2->mat < 0) return;
    double k = fmin(m2_sw_materials[o1->mat].conductivity, m2_sw_materials[o2->mat].conductivity);
    o1->temp += (float)((o2->temp - o1->temp) * k * HEAT_COEF);
    o2->temp += (float)((o1->temp - o2->temp) * k * HEAT_COEF);
}

/* Set temperature of an active heat source / cooling device, NAN when it does nothing. */
static float device_setpoint(const m2_sw_obj *o, int *heating) {
    *heating = 1;
    if (!(o->flags & M2_SW_F_ON) || (o->flags & M2_SW_F_BROKEN)) return NAN;
    if (o->kind == M2_SW_K_STOVE) return 260.0f;
    if (o->kind == M2_SW_K_OVEN) return strcmp(o->name, "blast furnace") ? 540.0f : 3000.0f;
    if (o->kind == M2_SW_K_CLOSABLE) {
        *heating = 0;
        if (!strcmp(o->name, "fridge")) return 2.0f;
        if (!strcmp(o->name, "freezer")) return -18.0f;
        if (!strcmp(o->name, "ultra low temperature freezer")) return -86.0f;
    }
    return NAN;
}

static int has_child_named(const m2_sw_world *w, int parent, const char *material) {
    int m = m2_sw_material_find(material);
    for (int i = 0; i < w->n; i++)
        if (w->o[i].parent == parent && !(w->o[i].flags & M2_SW_F_DELETED) && w->o[i].mat == m && w->o[i].kind == M2_SW_K_SUBSTANCE) return 1;
    return 0;
}

static void add_water(m2_sw_world *w, int parent) {
    int id = m2_sw_new(w, M2_SW_K_SUBSTANCE, "water", parent);
    if (id == M2_SW_NONE) return;
    m2_sw_set_material(w, id, "water");
}

static void combustion_tick(m2_sw_world *w, int id) {
    m2_sw_obj *o = &w->o[id];
    if (o->mat < 0) return;
    const m2_sw_material *m = &m2_sw_materials[o->mat];
    if (o->temp >= m->combust_c && !o->combusting && o->combust_ticks > 0) { o->combusting = 1; o->combusted = 1; }
    if (!o->combusting || o->combust_ticks <= 0) return;
    o->combust_ticks--;
    float burn = m->combust_c + COMBUSTION_DELTA;
    if (o->temp < burn) o->temp = burn;
    if (o->combust_ticks == 0) {
        o->combusting = 0;
        int parent = o->parent;
        if (parent != M2_SW_NONE) {
            int ash = m2_sw_new(w, M2_SW_K_SUBSTANCE, "ash", parent);
            if (ash != M2_SW_NONE) { m2_sw_set_material(w, ash, "ash"); w->o[ash].temp = w->o[id].temp; }
            for (int i = 0; i < w->n; i++) if (w->o[i].parent == id) w->o[i].parent = (int16_t)parent;
        }
        m2_sw_delete(w, id);
        return;
    }
    /* liquid water in the same container (or inside) puts the fire out */
    int water = m2_sw_material_find("water");
    for (int i = 0; i < w->n; i++) {
        m2_sw_obj *c = &w->o[i];
        if (c->flags & M2_SW_F_DELETED || c->mat != water || c->state != M2_SW_ST_LIQUID) continue;
        if (c->parent != id && (o->parent == M2_SW_NONE || c->parent != o->parent)) continue;
        c->temp = o->temp;
        o->combusting = 0;
        o->temp = m->combust_c - 10.0f;
        break;
    }
}

/* Children lists for one tick (id order), rebuilt whenever the tick adds or re-parents objects. */
typedef struct tick_index { int16_t head[M2_SW_MAX_OBJ], next[M2_SW_MAX_OBJ]; int n; } tick_index;

static void index_build(const m2_sw_world *w, tick_index *ix) {
    for (int i = 0; i < M2_SW_MAX_OBJ; i++) ix->head[i] = ix->next[i] = -1;
    int16_t tail[M2_SW_MAX_OBJ];
    for (int i = 0; i < M2_SW_MAX_OBJ; i++) tail[i] = -1;
    for (int i = 0; i < w->n; i++) {
        const m2_sw_obj *o = &w->o[i];
        if (o->parent == M2_SW_NONE || (o->flags & M2_SW_F_DELETED) || o->kind == M2_SW_K_DOOR) continue;
        if (tail[o->parent] < 0) ix->head[o->parent] = (int16_t)i;
        else ix->next[tail[o->parent]] = (int16_t)i;
        tail[o->parent] = (int16_t)i;
    }
    ix->n = w->n;
}

static int index_children(const tick_index *ix, int parent, int *out) {
    int k = 0;
    for (int c = ix->head[parent]; c >= 0; c = ix->next[c]) out[k++] = c;
    return k;
}

static void tick_obj(m2_sw_world *w, int id, uint8_t *done, int depth, tick_index *ix) {
    if (done[id] || depth > 32) return;
    m2_sw_obj *o = &w->o[id];
    if (o->flags & M2_SW_F_DELETED) return;
    int kids[M2_SW_MAX_OBJ];
    int k = index_children(ix, id, kids);
    /* device step */
    int heating;
    float sp = device_setpoint(o, &heating);
    if (!isnan(sp))
        for (int i = 0; i < k; i++) {
            m2_sw_obj *c = &w->o[kids[i]];
            if (c->mat < 0) continue;
            if (heating ? c->temp < sp : c->temp > sp) c->temp += (float)((sp - c->temp) * HEAT_COEF);
        }
    if (o->kind == M2_SW_K_SINK && (o->flags & M2_SW_F_ON) && !(o->flags & M2_SW_F_BROKEN)) {
        for (int i = 0; i < k; i++) {
            const m2_sw_obj *c = &w->o[kids[i]];
            if ((c->flags & M2_SW_F_CONTAINER) && (c->flags & M2_SW_F_OPEN) && c->kind != M2_SW_K_PLANT && !has_child_named(w, kids[i], "water"))
                add_water(w, kids[i]);
        }
        /* the sink's own water runs straight down the open drain */
    }
    if (o->kind == M2_SW_K_FOUNTAIN && !has_child_named(w, id, "water")) add_water(w, id);
    if (o->kind == M2_SW_K_FLOWERPOT && o->extra == 1 && !has_child_named(w, id, "water")) add_water(w, id);   /* self-watering */
    m2_sw_life_tick(w, id);
    m2_sw_elec_tick(w, id);
    if (o->kind == M2_SW_K_STOPWATCH) {   /* StopWatch.tick: counts while on, resets when off (keeps the last reading) */
        if (o->flags & M2_SW_F_ON) o->watch_user = ++o->watch_cur;
        else o->watch_cur = 0;
    }
    if (o->kind == M2_SW_K_PLANE)         /* InclinedPlane.slideObjectDownPlane, constant 'speed' g sin(angle) (1 - friction) */
        for (int i = 0; i < k; i++) {
            m2_sw_obj *c = &w->o[kids[i]];
            if (c->flags & M2_SW_F_HIDDEN) continue;
            if (c->mat >= 0 && c->state == M2_SW_ST_LIQUID) { c->plane_pos = 0.0; continue; }
            if (c->mat >= 0 && c->state == M2_SW_ST_GAS) { c->plane_pos = 1.0; continue; }
            if (c->plane_pos <= 0) continue;
            double delta = (double)0.1f * sin(o->angle * M_PI / 180.0) * (1.0 - (double)o->friction);
            double np = c->plane_pos - delta;
            c->plane_pos = np > 0.0 ? np : 0.0;
        }
    if (w->n != ix->n || w->tree_dirty) { index_build(w, ix); w->tree_dirty = 0; }
    k = index_children(ix, id, kids);
    int was_combusting = o->combusting;
    combustion_tick(w, id);
    if (was_combusting || o->combusting || w->n != ix->n) index_build(w, ix);
    if (o->flags & M2_SW_F_DELETED) { done[id] = 1; return; }
    for (int i = 0; i < k; i++) touching(w, id, kids[i]);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++) touching(w, kids[i], kids[j]);
    m2_sw_update_name_for_state(w, id);
    done[id] = 1;
    for (int i = 0; i < k; i++) tick_obj(w, kids[i], done, depth + 1, ix);
}

void m2_sw_tick(m2_sw_world *w) {
    uint8_t done[M2_SW_MAX_OBJ];
    memset(done, 0, sizeof done);
    tick_index ix;
    index_build(w, &ix);
    tick_obj(w, w->universe, done, 0, &ix);
}
