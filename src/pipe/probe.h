/* Internal to the pipeline: what an RL stage did to System 2 (sys2_offline, sys2_online). A fixed
 * probe set of states from the run's low-level data (or flat data for the flat method): the first
 * action state of n sequences evenly spaced over the set (the same states for every stage of the
 * run). At the stage's start a frozen copy of the adapter is kept; at its end both are compared:
 *   changed  the share of probe states whose greedy action (greedy generation of at most
 *            eval.max_new_tokens tokens, stopped at EOS) differs between the start and the end;
 *   kl       KL(pi_start || pi_end) per action token, summed exactly over the vocabulary, averaged
 *            over the dataset actions' tokens of the probe sequences (m2_token_divergence);
 *   on data  the probe states whose greedy action is the data's own action there (its tokens up to
 *            and with the EOS), at the start and at the end: a stage that starts on the data's
 *            action nearly everywhere and weights those same actions cannot move the argmax much,
 *            which is why it may change nothing.
 * A stage that changes no greedy decision and moves the policy by a KL near 0 did nothing the
 * evaluation can see; the report says so (pipe/report.h). */
#ifndef M2_PIPE_PROBE_H
#define M2_PIPE_PROBE_H
#include "data/seqset.h"
#include "pipe/world.h"

typedef struct pw_probe_result {
    int n_states;         /* probe states compared */
    int changed;          /* of them, greedy action changed */
    double kl;            /* KL(start || end) per action token */
    long kl_tokens;       /* action tokens the KL is averaged over */
    int start_on_data;    /* of them, the start's greedy action is the data's own; -1: not recorded */
    int end_on_data;      /* the same at the end; -1: not recorded (probe.json of older runs) */
} pw_probe_result;

typedef struct pw_probe pw_probe;

/* Picks n_states (<= set->n) probe states of `set` and freezes a copy of adapter `a` as the start
 * (call before a resumed stage restores its checkpoint: the copy is the stage's input). */
int pw_probe_begin(pw_world *w, const m2_seqset *set, int n_states, const m2_adapter *a, pw_probe **out,
                   m2_err *err);
/* Compares the start copy with `a` as it is now. */
int pw_probe_end(pw_probe *p, m2_adapter *a, int max_new_tokens, pw_probe_result *r, m2_err *err);
void pw_probe_free(pw_probe *p);

/* DIR/probe.json ({"n_states", "changed", "changed_frac", "kl", "kl_tokens", "start_on_data",
 * "end_on_data"}), written atomically; the last two are optional on reading (-1 when absent). */
int pw_probe_write(const pw_probe_result *r, const char *dir, m2_err *err);
/* Reads DIR/probe.json; 1 = read, 0 = absent, -1 = unreadable (err set). */
int pw_probe_read(const char *dir, pw_probe_result *r, m2_err *err);

#endif
