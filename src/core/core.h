/* core/: the layer every other one stands on. One include for all of it; each concern has its own
 * small header. */
#ifndef M2_CORE_H
#define M2_CORE_H
#include "core/err.h"
#include "core/rng.h"
#include "core/arena.h"
#include "core/pool.h"
#include "core/timer.h"
#include "core/fsutil.h"
#include "core/strbuf.h"
#include "core/config.h"
#include "core/jsonl.h"
#include "core/tblog.h"
#include "core/run.h"
#include "core/ckpt.h"
#include "core/progress.h"
#include "core/chart.h"
#include "core/build_info.h"
#endif
