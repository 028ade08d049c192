/* ScienceWorld task table, variations and splits (tasks.c) and the gold-path oracle (oracle.c). */
#ifndef M2_SW_TASKS_H
#define M2_SW_TASKS_H
#include "env/scienceworld/sw.h"

#define M2_SW_NUM_TASKS 30

typedef struct m2_sw_task_info {
    const char *id;          /* "4-1" */
    const char *name;        /* "find-living-thing" */
    int n_variations;        /* as in the original */
    int implemented;
} m2_sw_task_info;
extern const m2_sw_task_info m2_sw_tasks[M2_SW_NUM_TASKS];

/* Per-variation parameters (what a task modifier set decides). */
typedef struct m2_sw_params {
    char location[M2_SW_NAME], answer_box[M2_SW_NAME], colour[16];
    char long_animal[M2_SW_NAME], medium_animal[M2_SW_NAME], short_animal[M2_SW_NAME];
    int seed_group;
    /* change-of-state tasks */
    char substance[M2_SW_NAME];
    int sub, stove_broken, mode;   /* mode: 0 boil, 1 melt, 2 freeze, 3 any change */
    int pot, thermometer;           /* the kitchen's metal pot and thermometer (object ids) */
    /* use-thermometer */
    char object[M2_SW_NAME], box_above[M2_SW_NAME], box_below[M2_SW_NAME], box_location[M2_SW_NAME];
    double threshold, object_temp, melting_point;
    int object_id, state0;
    /* power-component */
    char part[M2_SW_NAME], source[M2_SW_NAME];
    int renewable;            /* 1: use the renewable source (even variations), 0: the nonrenewable one */
    int part_id, source_id, wire1, wire2, wire3;
    /* test-conductivity */
    int conductive;
    char box_conductive[M2_SW_NAME], box_nonconductive[M2_SW_NAME];
    /* paints */
    char secondary[M2_SW_NAME], tertiary[M2_SW_NAME], in_sec[2][M2_SW_NAME], in_ter[2][M2_SW_NAME];
    int furniture, mixer;
    /* chemistry-mix */
    char result[M2_SW_NAME], inputs[3][M2_SW_NAME];
    int n_inputs;
    /* identify-life-stages */
    int n_stages, family, distractor_seed;
    /* inclined planes: the two planes (index into the task's plane set), the block, mode (1: steepest/most) */
    int plane[2], block, steep;
    char plane_name[2][M2_SW_NAME * 2], answer[M2_SW_NAME];
    int plane_id[2], block_id, watch_id;
    /* grow-plant / grow-fruit: seed type in `object`, seed jar room in `location`, pots case in `mode`
     * (0: 3 pots with soil, 1: 3 empty pots + 3 soil in the greenhouse, 2: 3 empty pots) */
    /* mendelian-genetics-*: species in `family` (m2_sw_species_tab), trait slot in `mode`, steep = 1 when the asked value is
     * the dominant one, dominant / recessive answer boxes in box_above / box_below, the 6 pot numbers */
    int pots[6];
} m2_sw_params;

int m2_sw_task_find(const char *name);
int m2_sw_state_task_mode(const char *name);             /* boil 0, melt 1, freeze 2, change-state 3, else -1 */                    /* by name or id, -1 if unknown */
void m2_sw_split_range(int n, int split, int *lo, int *hi);
int m2_sw_friction_variations(int named);                /* kept combinations of the friction tasks (1386 / 162) */
void m2_sw_variation_params(int task, int v, m2_sw_params *p);
/* Adds the task's objects to a built house, sets the goals and writes the task description. */
int m2_sw_task_setup(int task, int v, m2_sw_world *w, char *desc, size_t cap, m2_sw_params *p);

/* Next gold action for (task, params) from the current state; -1 when none (done or stuck). */
int m2_sw_oracle_next(m2_sw_session *s, int task, const m2_sw_params *p, char *buf, size_t cap);

#endif
