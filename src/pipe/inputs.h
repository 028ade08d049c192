/* The input files a run's config names, checked before any stage runs (multi2 train, --dry-run,
 * --resume, multi2 demo): a run whose base, tokenizer, data or environment data cannot be read fails
 * in a second with the key, the file and the reason, instead of after the stages before the first
 * one that opens it. */
#ifndef M2_PIPE_INPUTS_H
#define M2_PIPE_INPUTS_H
#include "core/err.h"
#include "pipe/run_config.h"

/* Checks what the stages stages[0..n) read (pipe/plan.h m2_stage_reads_key):
 *   model.base (unless "tiny"): its config and weight file headers parse (no tensor is loaded);
 *   the tokenizer (model.tokenizer, else the base's own; model.tokenizer is checked whenever set):
 *   loads, and fits the base's vocabulary;
 *   data.path: the folder layout the stages read (expert/{high,low}.jsonl parse; medium/ optional;
 *   flat.jsonl for the flat method);
 *   env.data: the environment can be created from it;
 *   run.reuse_from (fresh = 1 only; a resumed run took its stages already): a run folder whose
 *   config loads. */
int m2_check_run_inputs(const m2_run_config *cfg, const char *const *stages, int n, int fresh, m2_err *err);

#endif
