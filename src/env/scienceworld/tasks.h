/* ScienceWorld task table, variations and splits (tasks.c) and the gold-path oracle (oracle.c). */
#ifndef M2_SW_TASKS_H
#define M2_SW_TASKS_H
#include "env/scienceworld/sw.h"

#define SW_NUM_TASKS 30

typedef struct sw_task_info {
    const char *id;          /* "4-1" */
    const char *name;        /* "find-living-thing" */
    int n_variations;        /* as in the original */
    int implemented;
} sw_task_info;
extern const sw_task_info sw_tasks[SW_NUM_TASKS];

/* Per-variation parameters (what a task modifier set decides). */
typedef struct sw_params {
    char location[SW_NAME], answer_box[SW_NAME], colour[16];
    char long_animal[SW_NAME], medium_animal[SW_NAME], short_animal[SW_NAME];
    int seed_group;
    /* change-of-state tasks */
    char substance[SW_NAME];
    int sub, stove_broken, mode;   /* mode: 0 boil, 1 melt, 2 freeze, 3 any change */
    int pot, thermometer;           /* the kitchen's metal pot and thermometer (object ids) */
    /* use-thermometer */
    char object[SW_NAME], box_above[SW_NAME], box_below[SW_NAME], box_location[SW_NAME];
    double threshold, object_temp, melting_point;
    int object_id, state0;
    /* power-component */
    char part[SW_NAME], source[SW_NAME];
    int renewable;            /* 1: use the renewable source (even variations), 0: the nonrenewable one */
    int part_id, source_id, wire1, wire2, wire3;
    /* test-conductivity */
    int conductive;
    char box_conductive[SW_NAME], box_nonconductive[SW_NAME];
    /* paints */
    char secondary[SW_NAME], tertiary[SW_NAME], in_sec[2][SW_NAME], in_ter[2][SW_NAME];
    int furniture, mixer;
    /* chemistry-mix */
    char result[SW_NAME], inputs[3][SW_NAME];
    int n_inputs;
    /* identify-life-stages */
    int n_stages, family, distractor_seed;
    /* inclined planes: the two planes (index into the task's plane set), the block, mode (1: steepest/most) */
    int plane[2], block, steep;
    char plane_name[2][SW_NAME * 2], answer[SW_NAME];
    int plane_id[2], block_id, watch_id;
    /* grow-plant / grow-fruit: seed type in `object`, seed jar room in `location`, pots case in `mode`
     * (0: 3 pots with soil, 1: 3 empty pots + 3 soil in the greenhouse, 2: 3 empty pots) */
    /* mendelian-genetics-*: species in `family` (sw_species_tab), trait slot in `mode`, steep = 1 when the asked value is
     * the dominant one, dominant / recessive answer boxes in box_above / box_below, the 6 pot numbers */
    int pots[6];
} sw_params;

int sw_task_find(const char *name);
int sw_state_task_mode(const char *name);             /* boil 0, melt 1, freeze 2, change-state 3, else -1 */                    /* by name or id, -1 if unknown */
void sw_split_range(int n, int split, int *lo, int *hi);
int sw_friction_variations(int named);                /* kept combinations of the friction tasks (1386 / 162) */
void sw_variation_params(int task, int v, sw_params *p);
/* Adds the task's objects to a built house, sets the goals and writes the task description. */
int sw_task_setup(int task, int v, sw_world *w, char *desc, size_t cap, sw_params *p);

/* Next gold action for (task, params) from the current state; -1 when none (done or stuck). */
int sw_oracle_next(sw_session *s, int task, const sw_params *p, char *buf, size_t cap);

#endif
