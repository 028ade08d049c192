/* ScienceWorld thermodynamics: materials with melting/boiling points, conductive heat transfer
 * between containers and their contents, heat sources (stove, oven, blast furnace, fire pit) and
 * sinks (fridge, freezer, ultra low temperature freezer), and changes of state of matter.
 *
 * Simplification (documented in docs/scienceworld.md): each tick every object with material
 * properties moves a fixed fraction of the way towards the temperature of what holds it, an active
 * heat source or a cooling device imposes its set temperature on its contents, and rooms stay at
 * their air temperature. State changes follow the material's melting and boiling points. */
#include "env/scienceworld/sw.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* name, melt, boil, solid/liquid/gas names, conductivity */
const sw_material sw_materials[] = {
    {"air", -218.0f, -194.0f, "solid air", "liquid air", "air", 0.1f},
    {"water", 0.0f, 100.0f, "ice", "water", "steam", 0.5f},
    {"orange juice", -2.0f, 100.0f, "frozen orange juice", "orange juice", "orange juice vapor", 0.5f},
    {"wood", 1000.0f, 2000.0f, "wood", "liquid wood", "wood vapor", 0.1f},
    {"steel", 1370.0f, 2862.0f, "steel", "liquid steel", "steel vapor", 0.8f},
    {"tin", 232.0f, 2602.0f, "tin", "liquid tin", "tin vapor", 0.8f},
    {"glass", 1400.0f, 2200.0f, "glass", "liquid glass", "glass vapor", 0.3f},
    {"ceramic", 1600.0f, 3000.0f, "ceramic", "liquid ceramic", "ceramic vapor", 0.3f},
    {"plastic", 200.0f, 400.0f, "plastic", "liquid plastic", "plastic vapor", 0.2f},
    {"paper", 1000.0f, 2000.0f, "paper", "liquid paper", "paper vapor", 0.1f},
    {"soap", 50.0f, 200.0f, "soap", "liquid soap", "soap vapor", 0.3f},
    {"sodium chloride", 801.0f, 1413.0f, "sodium chloride", "liquid sodium chloride", "sodium chloride vapor", 0.3f},
    {"paint", -10.0f, 100.0f, "frozen paint", "paint", "paint vapor", 0.3f},
    {"apple", -2.0f, 150.0f, "apple", "liquid apple", "apple vapor", 0.3f},
    {"banana", -2.0f, 150.0f, "banana", "liquid banana", "banana vapor", 0.3f},
    {"orange", -2.0f, 150.0f, "orange", "liquid orange", "orange vapor", 0.3f},
    {"potato", -2.0f, 150.0f, "potato", "liquid potato", "potato vapor", 0.3f},
    {"chocolate", 30.0f, 160.0f, "chocolate", "liquid chocolate", "chocolate vapor", 0.4f},
    {"ice cream", -5.0f, 100.0f, "ice cream", "liquid ice cream", "ice cream vapor", 0.4f},
    {"lead", 327.5f, 1749.0f, "lead", "liquid lead", "lead vapor", 0.8f},
    {"mercury", -38.8f, 356.7f, "solid mercury", "mercury", "mercury vapor", 0.8f},
    {"gallium", 29.8f, 2400.0f, "gallium", "liquid gallium", "gallium vapor", 0.8f},
    {"caesium", 28.5f, 671.0f, "caesium", "liquid caesium", "caesium vapor", 0.8f},
    {"rubber", 180.0f, 300.0f, "rubber", "liquid rubber", "rubber vapor", 0.2f},
    {"marshmallow", 60.0f, 200.0f, "marshmallow", "liquid marshmallow", "marshmallow vapor", 0.3f},
    {"butter", 35.0f, 150.0f, "butter", "liquid butter", "butter vapor", 0.4f},
    {"olive oil", -6.0f, 300.0f, "solid olive oil", "olive oil", "olive oil vapor", 0.4f},
    {"chicken", -2.0f, 150.0f, "chicken", "liquid chicken", "chicken vapor", 0.3f},
    {"ash", 1000.0f, 2000.0f, "ash", "liquid ash", "ash vapor", 0.1f},
};

static const int n_materials = (int)(sizeof sw_materials / sizeof sw_materials[0]);

int sw_material_find(const char *name) {
    for (int i = 0; i < n_materials; i++)
        if (!strcmp(sw_materials[i].name, name)) return i;
    return -1;
}

const char *sw_state_name(int st) {
    return st == ST_SOLID ? "solid" : st == ST_LIQUID ? "liquid" : "gas";
}

static int state_for(const sw_material *m, float t) {
    if (t >= m->boil_c) return ST_GAS;
    if (t >= m->melt_c) return ST_LIQUID;
    return ST_SOLID;
}

/* Substances change their name with their state (water -> ice/steam); other objects keep theirs. */
void sw_update_name_for_state(sw_world *w, int obj) {
    sw_obj *o = &w->o[obj];
    if (o->mat < 0) return;
    const sw_material *m = &sw_materials[o->mat];
    o->state = (uint8_t)state_for(m, o->temp);
    if (o->kind != K_SUBSTANCE) return;
    if (!strcmp(m->name, "paint") || !strcmp(m->name, "air")) return;   /* names kept */
    const char *nm = o->state == ST_SOLID ? m->solid_name : o->state == ST_LIQUID ? m->liquid_name : m->gas_name;
    snprintf(o->name, sizeof o->name, "%s", nm);
}

/* The temperature an object's container imposes (NAN = none). */
static float container_setpoint(const sw_world *w, int c) {
    const sw_obj *o = &w->o[c];
    if (o->kind == K_STOVE) return (o->flags & F_ON) ? 400.0f : NAN;
    if (o->kind == K_OVEN) {
        if (!(o->flags & F_ON)) return NAN;
        return strcmp(o->name, "blast furnace") ? 250.0f : 1600.0f;
    }
    if (o->kind == K_FIREPIT) return (o->flags & F_ON) ? 600.0f : NAN;
    if (o->kind == K_CLOSABLE) {
        if (!strcmp(o->name, "fridge")) return 4.0f;
        if (!strcmp(o->name, "freezer")) return -10.0f;
        if (!strcmp(o->name, "ultra low temperature freezer")) return -80.0f;
    }
    if (o->kind == K_ROOM || o->kind == K_OUTSIDE) return 25.0f;
    return NAN;
}

static float holder_temperature(const sw_world *w, int c) {
    float sp = container_setpoint(w, c);
    if (!isnan(sp)) return sp;
    const sw_obj *o = &w->o[c];
    if (o->mat >= 0) return o->temp;
    /* no material: pass through to its own holder */
    if (o->parent != SW_NONE) return holder_temperature(w, o->parent);
    return 25.0f;
}

void sw_tick(sw_world *w) {
    float next[SW_MAX_OBJ];
    for (int i = 0; i < w->n; i++) next[i] = w->o[i].temp;
    for (int i = 0; i < w->n; i++) {
        const sw_obj *o = &w->o[i];
        if (o->mat < 0 || (o->flags & F_DELETED) || o->parent == SW_NONE) continue;
        if (o->kind == K_SUBSTANCE && !strcmp(sw_materials[o->mat].name, "air")) continue;
        float target = holder_temperature(w, o->parent);
        float k = sw_materials[o->mat].conductivity;
        float rate = 0.15f + 0.25f * k;   /* fraction of the difference closed per tick */
        float d = target - o->temp;
        float step = d * rate;
        if (fabsf(d) > 0.5f && fabsf(step) < 0.5f) step = d > 0 ? 0.5f : -0.5f;
        if (fabsf(step) > fabsf(d)) step = d;
        next[i] = o->temp + step;
    }
    for (int i = 0; i < w->n; i++) {
        if (w->o[i].mat < 0) continue;
        w->o[i].temp = next[i];
        sw_update_name_for_state(w, i);
    }
    /* thermometers read the temperature of where they are */
    for (int i = 0; i < w->n; i++)
        if (w->o[i].kind == K_THERMOMETER && w->o[i].parent != SW_NONE) w->o[i].temp = next[i];
}
