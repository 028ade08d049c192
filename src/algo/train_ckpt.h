/* What a stage checkpoint holds for the algo/ loops, on core/ckpt.h: every trainable group (LoRA
 * adapter, critic heads and their Polyak targets, the base when pre-training) with its AdamW
 * moments and step count, the loop state (m2_train_state), RNG states, and the replay buffer (a
 * replay.json file beside the arrays). Restoring these into freshly built objects and calling the
 * loop again continues bit for bit (tests/test_algo_train.c). Array names: "<key>.w", "<key>.m",
 * "<key>.v", "<key>.target"; scalars under state["<key>"]. */
#ifndef M2_ALGO_TRAIN_CKPT_H
#define M2_ALGO_TRAIN_CKPT_H
#include "agent/replay.h"
#include "algo/train.h"
#include "core/ckpt.h"
#include "model/model.h"

/* Arrays are added BY REFERENCE (m2_ckpt_add): keep the objects alive until m2_ckpt_save returns. */
int m2_ckpt_add_params(m2_ckpt *c, const char *key, const m2_params *p, m2_err *err);
int m2_ckpt_restore_params(const m2_ckpt *c, const char *key, m2_params *p, m2_err *err);
/* key = "adapter.<name>" / "head.<name>" */
int m2_ckpt_add_adapter(m2_ckpt *c, const m2_adapter *a, m2_err *err);
int m2_ckpt_restore_adapter(const m2_ckpt *c, m2_adapter *a, m2_err *err);
int m2_ckpt_add_head(m2_ckpt *c, const m2_head *h, m2_err *err);
int m2_ckpt_restore_head(const m2_ckpt *c, m2_head *h, m2_err *err);

int m2_ckpt_add_train_state(m2_ckpt *c, const char *key, const m2_train_state *s, m2_err *err);
int m2_ckpt_get_train_state(const m2_ckpt *c, const char *key, m2_train_state *s, m2_err *err);

/* The buffer is written as <ckpt dir>/replay.json when the checkpoint is saved (r must stay alive
 * until then) and read back from the loaded checkpoint's folder. */
int m2_ckpt_add_replay(m2_ckpt *c, const m2_replay *r, m2_err *err);
int m2_ckpt_restore_replay(const m2_ckpt *c, m2_replay *r, m2_err *err);

#endif
