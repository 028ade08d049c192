/* algo/: losses and trainers (DESIGN.md §6). Pure loss functions over flat arrays; the glue that
 * runs the model over packed batches sits beside them. */
#ifndef M2_ALGO_H
#define M2_ALGO_H
#include "algo/tokens.h"
#include "algo/losses.h"
#include "algo/teamtr.h"
#include "algo/steps.h"
#include "algo/train.h"
#include "algo/team_train.h"
#endif
