/* kernels/: every op of the transformer as a _forward/_backward pair over flat float arrays
 * (llm.c style). Shapes are given in a one-line comment per function; row-major throughout.
 * Backward functions ACCUMULATE (+=) into their gradient outputs; callers zero them.
 * Any gradient output pointer may be NULL to skip that gradient (e.g. frozen weights). */
#ifndef M2_KERNELS_H
#define M2_KERNELS_H
#include "kernels/quant.h"
#include "kernels/matmul.h"
#include "kernels/qdot.h"
#include "kernels/qgemm.h"
#include "kernels/ops.h"
#include "kernels/attention.h"
#include "kernels/loss.h"
#endif
