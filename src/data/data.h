/* data/: expert and policy trajectories, sub-goal segmentation into hierarchical records, JSONL. */
#ifndef M2_DATA_H
#define M2_DATA_H
#include "data/traj.h"
#include "data/hier.h"
#endif
