/* data/: expert and policy trajectories, sub-goal segmentation into hierarchical records, the
 * prompt text every part builds its contexts with, JSONL, packing (DESIGN.md §5). A plain include list; each concern has its own header. */
#ifndef M2_DATA_H
#define M2_DATA_H
#include "data/prompts.h"
#include "data/traj.h"
#include "data/hier.h"
#include "data/pack.h"
#include "data/episodes.h"
#include "data/records_read.h"
#include "data/seqset.h"
#include "data/qa.h"
#endif
