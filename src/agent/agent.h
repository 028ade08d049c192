/* agent/: the System 1 / System 2 control loop, model policy, rollouts, replay buffer, evaluation. */
#ifndef M2_AGENT_H
#define M2_AGENT_H
#include "data/prompts.h"
#include "agent/parse.h"
#include "agent/loop.h"
#include "agent/replay.h"
#include "agent/eval.h"
#include "agent/expert.h"
#include "agent/model_policy.h"
#include "agent/collect.h"
#include "agent/team.h"
#include "agent/team_hier.h"
#endif
