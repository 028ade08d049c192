/* ALFWorld class tables and floor plans.
 *
 * Two sources:
 *  - embedded (default): the project's own compact subset, written for multi2: 23 receptacle classes,
 *    ~50 object classes in 12 groups, and 12 floor plans of our own (3 per room type, the third of each
 *    room type unseen = OOD). Nothing here is copied from ALFRED.
 *  - a data folder with ALFWorld's constants.json and layouts/FloorPlanN-{objects,openable}.json:
 *    receptacles = VAL_RECEPTACLE_OBJECTS keys minus MOVABLE_RECEPTACLES, objects = everything those
 *    lists accept (sliced classes dropped), affordances from VAL_ACTION_OBJECTS and OPENABLE_CLASS_LIST.
 *    Plans = TRAIN_SCENE_NUMBERS; the four rooms of ALFWorld's valid_unseen (10, 219, 308, 424) are the
 *    unseen (OOD) plans, all others seen. Receptacle instances come from -openable.json (ids and poses;
 *    equal poses share a location); receptacle classes present in -objects.json but absent there
 *    (StoveBurner, Toaster, CoffeeMachine, ...) get synthetic instances (4 stove burners, else 1).
 */
#include "env/alfworld/alfworld.h"
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "core/rng.h"

/* ---------------------------------------------------------------- embedded tables (ours) */

typedef struct { const char *name, *flags, *accepts_or_group; } emb_cls;

/* Receptacles: flags "R" (+"O" openable); third field = accepted groups (one letter) and class names.
 * Objects: flags P pickup, c cleanable, h heatable, k coolable, s sliceable, r receptacle-object, t toggle;
 * third field = the object's group letter. */
static const emb_cls emb_classes[] = {
    {"CounterTop", "R", "F D K U C S M B O"},
    {"DiningTable", "R", "F D K U C S M B O P"},
    {"CoffeeTable", "R", "F D U M B O"},
    {"SideTable", "R", "F D U M B O"},
    {"Desk", "R", "D M B O P"},
    {"Dresser", "R", "D M B O"},
    {"Shelf", "R", "D K C S M B O T"},
    {"Cabinet", "RO", "D K C S O T"},
    {"Drawer", "RO", "U C M B T"},
    {"Fridge", "RO", "F Mug Cup Plate Bowl Pan Pot WineBottle"},
    {"Microwave", "RO", "Apple Bread Egg Potato Tomato Mug Cup Plate Bowl"},
    {"SinkBasin", "R", "F D K U C"},
    {"BathtubBasin", "R", "Cloth DishSponge SoapBar HandTowel"},
    {"StoveBurner", "R", "Pan Pot Kettle"},
    {"CoffeeMachine", "R", "Mug"},
    {"Toaster", "R", ""},
    {"GarbageCan", "R", "F C Newspaper CD Pen Pencil TissueBox ToiletPaper"},
    {"Bed", "R", "B L P CellPhone"},
    {"Sofa", "R", "B L CellPhone RemoteControl KeyChain CreditCard"},
    {"ArmChair", "R", "B L CellPhone RemoteControl KeyChain CreditCard"},
    {"Toilet", "R", "C T Candle TissueBox"},
    {"TowelHolder", "R", "Towel"},
    {"HandTowelHolder", "R", "HandTowel"},
    {"Safe", "RO", "CD CellPhone CreditCard KeyChain Statue Vase Watch"},
    {"TVStand", "R", "TissueBox RemoteControl Statue"},
    {"Apple", "Pchks", "F"}, {"Bread", "Phks", "F"}, {"Egg", "Pchks", "F"}, {"Potato", "Pchks", "F"},
    {"Tomato", "Pchks", "F"}, {"Lettuce", "Pcks", "F"},
    {"Mug", "Pchkr", "D"}, {"Cup", "Pchkr", "D"}, {"Plate", "Pchkr", "D"}, {"Bowl", "Pckr", "D"},
    {"Pan", "Pckr", "K"}, {"Pot", "Pckr", "K"}, {"Kettle", "Pc", "K"},
    {"Knife", "Pc", "U"}, {"ButterKnife", "Pc", "U"}, {"Fork", "Pc", "U"}, {"Spoon", "Pc", "U"},
    {"Spatula", "Pc", "U"}, {"Ladle", "Pc", "U"},
    {"DishSponge", "Pc", "C"}, {"SoapBar", "Pc", "C"}, {"Cloth", "Pc", "C"}, {"SprayBottle", "P", "C"},
    {"SoapBottle", "P", "C"},
    {"SaltShaker", "P", "S"}, {"PepperShaker", "P", "S"}, {"WineBottle", "Pk", "S"},
    {"CellPhone", "P", "M"}, {"KeyChain", "P", "M"}, {"CreditCard", "P", "M"}, {"Pen", "P", "M"},
    {"Pencil", "P", "M"}, {"CD", "P", "M"}, {"Watch", "P", "M"}, {"RemoteControl", "P", "M"},
    {"Book", "P", "B"}, {"Newspaper", "P", "B"}, {"Laptop", "P", "B"},
    {"Vase", "P", "O"}, {"Statue", "P", "O"}, {"Candle", "P", "O"}, {"AlarmClock", "P", "O"},
    {"TissueBox", "P", "O"},
    {"BasketBall", "P", "P"}, {"BaseballBat", "P", "P"}, {"TennisRacket", "P", "P"},
    {"Pillow", "P", "L"},
    {"ToiletPaper", "P", "T"}, {"Towel", "P", "T"}, {"HandTowel", "P", "T"},
    {"DeskLamp", "t", ""}, {"FloorLamp", "t", ""},
};

/* Plans: "number room unseen | receptacles | objects". A receptacle "Class*n/k" is n instances, k per
 * location (k defaults to 1). Rooms: K kitchen, L living room, B bedroom, T bathroom. */
static const char *const emb_plans[] = {
    "1001 K 0 | CounterTop*2 Cabinet*6/2 Drawer*4/2 Fridge Microwave SinkBasin StoveBurner*4/2 CoffeeMachine Toaster "
    "GarbageCan DiningTable Shelf*2 | Apple Bread Egg Potato Tomato Lettuce Mug Cup Plate Bowl Pan Pot Kettle Knife "
    "ButterKnife Fork Spoon Spatula Ladle DishSponge SaltShaker PepperShaker WineBottle SoapBottle",
    "1002 K 0 | CounterTop*3 Cabinet*8 Drawer*3 Fridge Microwave SinkBasin StoveBurner*4 CoffeeMachine Toaster "
    "GarbageCan | Apple Bread Egg Potato Tomato Lettuce Mug Cup Plate Bowl Pan Pot Knife Fork Spoon Spatula "
    "DishSponge SaltShaker PepperShaker SoapBottle CellPhone",
    "1003 K 1 | CounterTop Cabinet*4 Drawer*2 Fridge Microwave SinkBasin StoveBurner*2 CoffeeMachine GarbageCan "
    "DiningTable SideTable | Apple Bread Egg Potato Tomato Lettuce Mug Cup Plate Bowl Pan Pot Kettle Knife "
    "ButterKnife Fork Spoon Ladle DishSponge SaltShaker WineBottle",
    "1011 L 0 | Sofa ArmChair*2 CoffeeTable SideTable*2 Drawer*2/2 Shelf*3 TVStand GarbageCan DiningTable | "
    "CellPhone KeyChain CreditCard RemoteControl Book Newspaper Laptop Vase Statue Candle Pillow Watch TissueBox "
    "FloorLamp DeskLamp",
    "1012 L 0 | Sofa*2 ArmChair CoffeeTable SideTable Drawer*4/2 Shelf*2 TVStand GarbageCan Cabinet*2 | "
    "CellPhone KeyChain CreditCard RemoteControl Book Newspaper Laptop Vase Statue Pillow Watch Plate Bowl "
    "FloorLamp",
    "1013 L 1 | Sofa ArmChair CoffeeTable SideTable*2 Drawer*2 Shelf*2 TVStand GarbageCan | CellPhone KeyChain "
    "CreditCard RemoteControl Book Newspaper Laptop Vase Statue Candle Pillow Watch DeskLamp",
    "1021 B 0 | Bed Desk Dresser SideTable*2 Drawer*4/2 Shelf*2 GarbageCan Safe ArmChair | CellPhone KeyChain "
    "CreditCard Pen Pencil CD Watch Book Laptop Pillow AlarmClock BasketBall BaseballBat TennisRacket Mug Bowl "
    "DeskLamp",
    "1022 B 0 | Bed Desk*2 Dresser SideTable Drawer*6/3 Shelf*3 GarbageCan | CellPhone KeyChain CreditCard Pen "
    "Pencil CD Watch Book Laptop Pillow AlarmClock BaseballBat Mug Cup Vase DeskLamp FloorLamp",
    "1023 B 1 | Bed Dresser SideTable*2 Drawer*3 Shelf GarbageCan Safe Desk | CellPhone KeyChain CreditCard Pen "
    "Pencil CD Book Laptop Pillow AlarmClock TennisRacket BasketBall Mug Bowl Statue DeskLamp",
    "1031 T 0 | Toilet SinkBasin*2 BathtubBasin Cabinet*4/2 CounterTop TowelHolder HandTowelHolder GarbageCan "
    "Shelf | SoapBar SoapBottle Cloth SprayBottle DishSponge ToiletPaper Towel HandTowel Candle TissueBox",
    "1032 T 0 | Toilet SinkBasin BathtubBasin Cabinet*3 CounterTop Drawer*2 TowelHolder GarbageCan | SoapBar "
    "SoapBottle Cloth SprayBottle ToiletPaper Towel Candle",
    "1033 T 1 | Toilet SinkBasin BathtubBasin Cabinet*2 Shelf*2 TowelHolder HandTowelHolder GarbageCan | SoapBar "
    "SoapBottle Cloth SprayBottle DishSponge ToiletPaper Towel HandTowel TissueBox",
};

static int ci_eq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

int m2_aw_tables_find_cls(const m2_aw_tables *t, const char *name) {
    for (int i = 0; i < t->n_cls; i++)
        if (ci_eq(t->cls_name[i], name)) return i;
    return -1;
}

static int tables_alloc(m2_aw_tables *t, int n_cls, m2_err *err) {
    t->n_cls = n_cls;
    t->cls_name = calloc((size_t)n_cls, sizeof *t->cls_name);
    t->flags = calloc((size_t)n_cls, sizeof *t->flags);
    t->can_contain = calloc((size_t)n_cls * n_cls, 1);
    if (!t->cls_name || !t->flags || !t->can_contain) return m2_errorf(err, M2_ENOMEM, "alfworld tables: out of memory");
    return 0;
}

void m2_aw_tables_free(m2_aw_tables *t) {
    if (!t) return;
    free(t->cls_name);
    free(t->flags);
    free(t->can_contain);
    for (int i = 0; i < t->n_plans; i++) {
        free(t->plans[i].receps);
        free(t->plans[i].obj_cls);
        for (int k = 0; k < 7; k++) free(t->plans[i].goals[k]);
    }
    free(t->plans);
    free(t->domain_text);
    free(t->grammar_text);
    memset(t, 0, sizeof *t);
}

/* Deterministic pseudo-coordinates for the embedded plans' ids: ALFRED-shaped, stable per plan. */
static void fmt_coord(char *out, size_t cap, double v) {
    snprintf(out, cap, "%s%05.2f", v < 0 ? "-" : "+", v < 0 ? -v : v);
}
static void fake_id(char *out, size_t cap, const char *cls, int plan, int serial, int loc_key) {
    uint64_t h = m2_hash64(((uint64_t)plan << 32) ^ ((uint64_t)loc_key << 12) ^ (uint64_t)serial);
    char x[16], y[16], z[16];
    fmt_coord(x, sizeof x, (double)((int)(h % 800) - 400) / 100.0);
    fmt_coord(y, sizeof y, (double)((int)((h >> 16) % 200)) / 100.0);
    fmt_coord(z, sizeof z, (double)((int)((h >> 32) % 800) - 400) / 100.0);
    if (!strcmp(cls, "SinkBasin")) snprintf(out, cap, "Sink|%s|%s|%s|SinkBasin", x, y, z);
    else if (!strcmp(cls, "BathtubBasin")) snprintf(out, cap, "Bathtub|%s|%s|%s|BathtubBasin", x, y, z);
    else snprintf(out, cap, "%s|%s|%s|%s", cls, x, y, z);
}

static int parse_emb_plan(m2_aw_tables *t, const char *spec, m2_aw_plan *p, int *loc_serial, m2_err *err) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    char *sec[3] = {buf, NULL, NULL};
    char *bar1 = strchr(buf, '|');
    if (!bar1) return m2_errorf(err, M2_EFORMAT, "embedded plan '%.20s': missing '|'", spec);
    *bar1 = 0; sec[1] = bar1 + 1;
    char *bar2 = strchr(sec[1], '|');
    if (!bar2) return m2_errorf(err, M2_EFORMAT, "embedded plan '%.20s': missing second '|'", spec);
    *bar2 = 0; sec[2] = bar2 + 1;
    char room;
    if (sscanf(sec[0], "%d %c %d", &p->number, &room, &p->unseen) != 3)
        return m2_errorf(err, M2_EFORMAT, "embedded plan '%.20s': bad header", spec);
    p->room = room == 'K' ? M2_AW_ROOM_KITCHEN : room == 'L' ? M2_AW_ROOM_LIVING : room == 'B' ? M2_AW_ROOM_BEDROOM : M2_AW_ROOM_BATHROOM;
    p->receps = calloc(64, sizeof *p->receps);
    p->obj_cls = calloc((size_t)t->n_cls, sizeof *p->obj_cls);
    if (!p->receps || !p->obj_cls) return m2_errorf(err, M2_ENOMEM, "out of memory");
    char *save = NULL;
    int serial = 0;
    for (char *tok = strtok_r(sec[1], " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int n = 1, per = 1;
        char *star = strchr(tok, '*');
        if (star) {
            *star = 0;
            char *slash = strchr(star + 1, '/');
            if (slash) { *slash = 0; per = atoi(slash + 1); }
            n = atoi(star + 1);
        }
        int c = m2_aw_tables_find_cls(t, tok);
        if (c < 0 || n < 1 || per < 1) return m2_errorf(err, M2_EFORMAT, "embedded plan %d: bad receptacle '%s'", p->number, tok);
        for (int i = 0; i < n; i++) {
            if (p->n_recep >= 64) return m2_errorf(err, M2_EFORMAT, "embedded plan %d: too many receptacles", p->number);
            if (i % per == 0) (*loc_serial)++;
            m2_aw_plan_recep *r = &p->receps[p->n_recep++];
            r->cls = c;
            r->loc_key = *loc_serial;
            fake_id(r->id, sizeof r->id, tok, p->number, serial++, r->loc_key);
        }
    }
    for (char *tok = strtok_r(sec[2], " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int c = m2_aw_tables_find_cls(t, tok);
        if (c < 0) return m2_errorf(err, M2_EFORMAT, "embedded plan %d: unknown object class '%s'", p->number, tok);
        p->obj_cls[p->n_obj_cls++] = c;
    }
    return 0;
}

int m2_aw_tables_embedded(m2_aw_tables *t, m2_err *err) {
    memset(t, 0, sizeof *t);
    int n = (int)(sizeof emb_classes / sizeof emb_classes[0]);
    if (tables_alloc(t, n, err)) return -1;
    snprintf(t->source, sizeof t->source, "embedded");
    for (int i = 0; i < n; i++) {
        snprintf(t->cls_name[i], M2_AW_CLS_MAX, "%s", emb_classes[i].name);
        uint32_t f = 0;
        for (const char *c = emb_classes[i].flags; *c; c++) {
            switch (*c) {
            case 'R': f |= M2_AW_F_RECEP; break;
            case 'O': f |= M2_AW_F_OPENABLE; break;
            case 'P': f |= M2_AW_F_PICKUP; break;
            case 'c': f |= M2_AW_F_CLEANABLE; break;
            case 'h': f |= M2_AW_F_HEATABLE; break;
            case 'k': f |= M2_AW_F_COOLABLE; break;
            case 's': f |= M2_AW_F_SLICEABLE; break;
            case 'r': f |= M2_AW_F_RECEP_OBJ; break;
            case 't': f |= M2_AW_F_TOGGLE; break;
            }
        }
        t->flags[i] = f;
    }
    for (int r = 0; r < n; r++) {
        if (!(t->flags[r] & M2_AW_F_RECEP)) continue;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", emb_classes[r].accepts_or_group);
        char *save = NULL;
        for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            if (strlen(tok) == 1) {
                for (int o = 0; o < n; o++)
                    if ((t->flags[o] & M2_AW_F_PICKUP) && !strcmp(emb_classes[o].accepts_or_group, tok))
                        t->can_contain[r * n + o] = 1;
            } else {
                int o = m2_aw_tables_find_cls(t, tok);
                if (o < 0) { m2_aw_tables_free(t); return m2_errorf(err, M2_EFORMAT, "embedded tables: unknown class '%s'", tok); }
                t->can_contain[r * n + o] = 1;
            }
        }
    }
    t->n_plans = (int)(sizeof emb_plans / sizeof emb_plans[0]);
    t->plans = calloc((size_t)t->n_plans, sizeof *t->plans);
    if (!t->plans) { m2_aw_tables_free(t); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    int loc_serial = 0;
    for (int i = 0; i < t->n_plans; i++)
        if (parse_emb_plan(t, emb_plans[i], &t->plans[i], &loc_serial, err)) { m2_aw_tables_free(t); return -1; }
    if (m2_aw_tables_index(t, err)) { m2_aw_tables_free(t); return -1; }
    return 0;
}

/* ---------------------------------------------------------------- ALFWorld data folder */

static char *path_join(char *out, size_t cap, const char *a, const char *b) {
    snprintf(out, cap, "%s/%s", a, b);
    return out;
}

static cJSON *field(const cJSON *root, const char *name, int type_array, const char *file, m2_err *err) {
    cJSON *f = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!f) { m2_errorf(err, M2_EFORMAT, "%s: missing field '%s'", file, name); return NULL; }
    if (type_array ? !cJSON_IsArray(f) : !cJSON_IsObject(f)) {
        m2_errorf(err, M2_EFORMAT, "%s: field '%s': expected a JSON %s", file, name, type_array ? "array" : "object");
        return NULL;
    }
    return f;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Adds class `name` (if new) and returns its index. */
static int add_cls(m2_aw_tables *t, int *cap, const char *name, m2_err *err) {
    int c = m2_aw_tables_find_cls(t, name);
    if (c >= 0) return c;
    if (strlen(name) >= M2_AW_CLS_MAX) return m2_errorf(err, M2_EFORMAT, "class name too long: '%.60s'", name);
    if (t->n_cls == *cap) {
        int nc = *cap ? *cap * 2 : 128;
        void *a = realloc(t->cls_name, (size_t)nc * sizeof *t->cls_name);
        if (!a) return m2_errorf(err, M2_ENOMEM, "out of memory");
        t->cls_name = a;
        void *b = realloc(t->flags, (size_t)nc * sizeof *t->flags);
        if (!b) return m2_errorf(err, M2_ENOMEM, "out of memory");
        t->flags = b;
        *cap = nc;
    }
    snprintf(t->cls_name[t->n_cls], M2_AW_CLS_MAX, "%s", name);
    t->flags[t->n_cls] = 0;
    return t->n_cls++;
}

static int in_str_array(const cJSON *arr, const char *s) {
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) if (cJSON_IsString(e) && !strcmp(e->valuestring, s)) return 1;
    return 0;
}

static const int unseen_plans[] = {10, 219, 308, 424};

static int load_plan(m2_aw_tables *t, const char *dir, int number, int room, m2_aw_plan *p, int *loc_serial, m2_err *err) {
    char path[1024], rel[128];
    p->number = number;
    p->room = room;
    p->unseen = 0;
    for (size_t i = 0; i < sizeof unseen_plans / sizeof unseen_plans[0]; i++) if (unseen_plans[i] == number) p->unseen = 1;
    snprintf(rel, sizeof rel, "layouts/FloorPlan%d-objects.json", number);
    char *text = NULL;
    if (m2_read_file(path_join(path, sizeof path, dir, rel), &text, NULL, err)) return -1;
    cJSON *objs = cJSON_Parse(text);
    free(text);
    if (!objs || !cJSON_IsArray(objs)) { cJSON_Delete(objs); return m2_errorf(err, M2_EFORMAT, "%s: expected a JSON array of class names", path); }
    int n = cJSON_GetArraySize(objs);
    p->obj_cls = calloc((size_t)(n > 0 ? n : 1), sizeof *p->obj_cls);
    uint8_t *present_recep = calloc((size_t)t->n_cls, 1);
    if (!p->obj_cls || !present_recep) { cJSON_Delete(objs); free(present_recep); return m2_errorf(err, M2_ENOMEM, "out of memory"); }
    const cJSON *e;
    int idx = 0;
    cJSON_ArrayForEach(e, objs) {
        if (!cJSON_IsString(e)) { cJSON_Delete(objs); free(present_recep); return m2_errorf(err, M2_EFORMAT, "%s: entry %d: expected a class name string", path, idx); }
        idx++;
        int c = m2_aw_tables_find_cls(t, e->valuestring);
        if (c < 0) continue;
        if (t->flags[c] & M2_AW_F_RECEP) present_recep[c] = 1;
        else if (t->flags[c] & (M2_AW_F_PICKUP | M2_AW_F_TOGGLE)) {
            int dup = 0;
            for (int k = 0; k < p->n_obj_cls; k++) dup |= p->obj_cls[k] == c;
            if (!dup) p->obj_cls[p->n_obj_cls++] = c;
        }
    }
    cJSON_Delete(objs);

    snprintf(rel, sizeof rel, "layouts/FloorPlan%d-openable.json", number);
    if (m2_read_file(path_join(path, sizeof path, dir, rel), &text, NULL, err)) { free(present_recep); return -1; }
    cJSON *op = cJSON_Parse(text);
    free(text);
    if (!op || !cJSON_IsObject(op)) { cJSON_Delete(op); free(present_recep); return m2_errorf(err, M2_EFORMAT, "%s: expected a JSON object id -> pose", path); }
    int nr = cJSON_GetArraySize(op);
    p->receps = calloc((size_t)nr + 4 * (size_t)t->n_cls + 1, sizeof *p->receps);   /* + synthetic instances */
    double (*poses)[4] = calloc((size_t)nr + 1, sizeof *poses);
    uint8_t *has_inst = calloc((size_t)t->n_cls, 1);
    if (!p->receps || !poses || !has_inst) {
        cJSON_Delete(op); free(present_recep); free(poses); free(has_inst);
        return m2_errorf(err, M2_ENOMEM, "out of memory");
    }
    cJSON_ArrayForEach(e, op) {
        const char *id = e->string;
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 4) {
            m2_errorf(err, M2_EFORMAT, "%s: receptacle '%.80s': expected a pose [x, z, rotation, horizon]", path, id);
            cJSON_Delete(op); free(present_recep); free(poses); free(has_inst);
            return -1;
        }
        if (strlen(id) >= M2_AW_ID_MAX) continue;
        char cls[M2_AW_CLS_MAX];
        const char *last = strrchr(id, '|');
        if (ends_with(id, "Basin") && last) snprintf(cls, sizeof cls, "%s", last + 1);
        else { size_t k = strcspn(id, "|"); if (k >= sizeof cls) continue; memcpy(cls, id, k); cls[k] = 0; }
        int c = m2_aw_tables_find_cls(t, cls);
        if (c < 0 || !(t->flags[c] & M2_AW_F_RECEP)) continue;
        double pose[4];
        for (int k = 0; k < 4; k++) {
            cJSON *v = cJSON_GetArrayItem(e, k);
            if (!cJSON_IsNumber(v)) {
                m2_errorf(err, M2_EFORMAT, "%s: receptacle '%.80s': pose entry %d is not a number", path, id, k);
                cJSON_Delete(op); free(present_recep); free(poses); free(has_inst);
                return -1;
            }
            pose[k] = v->valuedouble;
        }
        int key = -1;
        for (int q = 0; q < p->n_recep; q++)
            if (!memcmp(poses[q], pose, sizeof pose)) { key = p->receps[q].loc_key; break; }
        if (key < 0) key = ++(*loc_serial);
        memcpy(poses[p->n_recep], pose, sizeof pose);
        m2_aw_plan_recep *r = &p->receps[p->n_recep++];
        r->cls = c;
        r->loc_key = key;
        snprintf(r->id, sizeof r->id, "%s", id);
        has_inst[c] = 1;
    }
    cJSON_Delete(op);
    /* Receptacle classes listed in -objects.json without a pose entry: synthetic instances. */
    for (int c = 0; c < t->n_cls; c++) {
        if (!present_recep[c] || has_inst[c]) continue;
        int count = !strcmp(t->cls_name[c], "StoveBurner") ? 4 : 1;
        for (int i = 0; i < count; i++) {
            if (i % 2 == 0) (*loc_serial)++;
            m2_aw_plan_recep *r = &p->receps[p->n_recep++];
            r->cls = c;
            r->loc_key = *loc_serial;   /* stove burners stand in pairs */
            fake_id(r->id, sizeof r->id, t->cls_name[c], number, 1000 + c * 8 + i, r->loc_key);
        }
    }
    free(present_recep);
    free(poses);
    free(has_inst);
    return 0;
}

static char *read_optional(const char *dir, const char *name) {
    char path[1024];
    char *text = NULL;
    m2_err e = {0};
    if (m2_read_file(path_join(path, sizeof path, dir, name), &text, NULL, &e)) return NULL;
    return text;
}

int m2_aw_tables_load(m2_aw_tables *t, const char *dir, m2_err *err) {
    memset(t, 0, sizeof *t);
    char path[1024];
    path_join(path, sizeof path, dir, "constants.json");
    char *text = NULL;
    if (m2_read_file(path, &text, NULL, err)) return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root || !cJSON_IsObject(root)) { cJSON_Delete(root); return m2_errorf(err, M2_EFORMAT, "%s: not a JSON object", path); }
    snprintf(t->source, sizeof t->source, "%s", dir);
    int cap = 0, rc = -1;
    cJSON *vro = field(root, "VAL_RECEPTACLE_OBJECTS", 0, path, err); if (!vro) goto done;
    cJSON *vao = field(root, "VAL_ACTION_OBJECTS", 0, path, err); if (!vao) goto done;
    cJSON *openable = field(root, "OPENABLE_CLASS_LIST", 1, path, err); if (!openable) goto done;
    cJSON *movable = field(root, "MOVABLE_RECEPTACLES", 1, path, err); if (!movable) goto done;
    cJSON *scene_type = field(root, "SCENE_TYPE", 0, path, err); if (!scene_type) goto done;
    cJSON *train = field(root, "TRAIN_SCENE_NUMBERS", 1, path, err); if (!train) goto done;
    const cJSON *r, *o;
    /* classes: receptacles (keys), then the objects they accept, then toggleables */
    cJSON_ArrayForEach(r, vro) {
        if (!cJSON_IsArray(r)) { m2_errorf(err, M2_EFORMAT, "%s: VAL_RECEPTACLE_OBJECTS.%s: expected an array", path, r->string); goto done; }
        if (add_cls(t, &cap, r->string, err) < 0) goto done;
    }
    cJSON_ArrayForEach(r, vro) {
        cJSON_ArrayForEach(o, r) {
            if (!cJSON_IsString(o)) { m2_errorf(err, M2_EFORMAT, "%s: VAL_RECEPTACLE_OBJECTS.%s: expected class name strings", path, r->string); goto done; }
            if (ends_with(o->valuestring, "Sliced")) continue;
            if (add_cls(t, &cap, o->valuestring, err) < 0) goto done;
        }
    }
    cJSON *tog = cJSON_GetObjectItemCaseSensitive(vao, "Toggleable");
    if (!cJSON_IsArray(tog)) { m2_errorf(err, M2_EFORMAT, "%s: VAL_ACTION_OBJECTS.Toggleable: expected an array", path); goto done; }
    cJSON_ArrayForEach(o, tog) if (cJSON_IsString(o) && add_cls(t, &cap, o->valuestring, err) < 0) goto done;
    int n = t->n_cls;
    t->can_contain = calloc((size_t)n * n, 1);
    if (!t->can_contain) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto done; }
    cJSON_ArrayForEach(r, vro) {
        int rc_ = m2_aw_tables_find_cls(t, r->string);
        int movable_r = in_str_array(movable, r->string);
        if (!movable_r) t->flags[rc_] |= M2_AW_F_RECEP;
        cJSON_ArrayForEach(o, r) {
            if (ends_with(o->valuestring, "Sliced")) continue;
            int oc = m2_aw_tables_find_cls(t, o->valuestring);
            t->flags[oc] |= M2_AW_F_PICKUP;
            t->can_contain[rc_ * n + oc] = 1;
        }
    }
    for (int c = 0; c < n; c++) {
        if (in_str_array(movable, t->cls_name[c])) t->flags[c] |= M2_AW_F_RECEP_OBJ | M2_AW_F_PICKUP;
        if ((t->flags[c] & M2_AW_F_RECEP) && in_str_array(openable, t->cls_name[c])) t->flags[c] |= M2_AW_F_OPENABLE;
    }
    static const struct { const char *key; uint32_t flag; } acts[] = {
        {"Cleanable", M2_AW_F_CLEANABLE}, {"Heatable", M2_AW_F_HEATABLE}, {"Coolable", M2_AW_F_COOLABLE},
        {"Sliceable", M2_AW_F_SLICEABLE}, {"Toggleable", M2_AW_F_TOGGLE}};
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        cJSON *a = cJSON_GetObjectItemCaseSensitive(vao, acts[k].key);
        if (!cJSON_IsArray(a)) { m2_errorf(err, M2_EFORMAT, "%s: VAL_ACTION_OBJECTS.%s: expected an array", path, acts[k].key); goto done; }
        cJSON_ArrayForEach(o, a) {
            if (!cJSON_IsString(o)) continue;
            int c = m2_aw_tables_find_cls(t, o->valuestring);
            if (c >= 0) t->flags[c] |= acts[k].flag;
        }
    }
    /* plans */
    int np = cJSON_GetArraySize(train);
    t->plans = calloc((size_t)(np > 0 ? np : 1), sizeof *t->plans);
    if (!t->plans) { m2_errorf(err, M2_ENOMEM, "out of memory"); goto done; }
    int loc_serial = 0;
    cJSON_ArrayForEach(o, train) {
        if (!cJSON_IsNumber(o)) { m2_errorf(err, M2_EFORMAT, "%s: TRAIN_SCENE_NUMBERS: expected numbers", path); goto done; }
        int number = o->valueint, room = -1;
        static const char *rooms[] = {"Kitchen", "LivingRoom", "Bedroom", "Bathroom"};
        for (int k = 0; k < 4; k++) {
            cJSON *lst = cJSON_GetObjectItemCaseSensitive(scene_type, rooms[k]);
            const cJSON *x;
            if (cJSON_IsArray(lst)) cJSON_ArrayForEach(x, lst) if (cJSON_IsNumber(x) && x->valueint == number) room = k;
        }
        if (room < 0) { m2_errorf(err, M2_EFORMAT, "%s: SCENE_TYPE: floor plan %d has no room type", path, number); goto done; }
        if (load_plan(t, dir, number, room, &t->plans[t->n_plans], &loc_serial, err)) { t->n_plans++; goto done; }
        t->n_plans++;
    }
    t->domain_text = read_optional(dir, "alfred.pddl");
    t->grammar_text = read_optional(dir, "alfred.twl2");
    rc = m2_aw_tables_index(t, err);
done:
    cJSON_Delete(root);
    if (rc) m2_aw_tables_free(t);
    return rc;
}
