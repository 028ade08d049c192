/* agent/: prompts and (later) the System 1 / System 2 control loop, rollouts, replay buffer. */
#ifndef M2_AGENT_H
#define M2_AGENT_H
#include "agent/prompts.h"
#endif
