#include "agent/prompts_tmp.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char m2_tmp_high_prompt[] =
    "You are a high-level planner. Based on the state (task description, group action and current "
    "observation), please generate a clear and simple subtask.\n";

const char m2_tmp_low_prompt[] =
    "You are a low-level action executor. Based on the current subtask and observation, please "
    "generate a executable action and determine if the subtask is completed (true/false).\n"
    "Sometimes the number you receive will be wrong.\nYour task is to infer the correct number from "
    "the observation.";

const char m2_tmp_low_state_prefix[] = "Obs: ";

char *m2_tmp_high_state(const char *const *group_actions, int n, const char *obs) {
    size_t len = 64 + strlen(obs ? obs : "");
    for (int i = 0; i < n; i++) len += strlen(group_actions[i]) + 2;
    char *s = malloc(len), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "Group action: [");
    for (int i = 0; i < n; i++) p += sprintf(p, "%s%s", i ? ", " : "", group_actions[i]);
    sprintf(p, "]. Current observation: %s", obs ? obs : "");
    return s;
}
