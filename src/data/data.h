/* data/: expert and policy trajectories, sub-goal segmentation into hierarchical records, JSONL,
 * packing (DESIGN.md §5). A plain include list; each concern has its own header. */
#ifndef M2_DATA_H
#define M2_DATA_H
#include "data/traj.h"
#include "data/hier.h"
#include "data/pack.h"
#include "data/records_read.h"
#endif
