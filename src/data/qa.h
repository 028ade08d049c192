/* Verifiable question/answer tasks for teams (TeamTR, DESIGN.md §6): generated task families with
 * train/test splits, a JSONL loader for user data, numeric answer extraction and the exact checker.
 *
 * Families:
 *  - arithmetic: "Compute 7+5-3+8." with a worked solution of one step per operation
 *    ("7+5=12", "12-3=9", "9+8=17"); every intermediate value stays in [0, M2_QA_ARITH_MAX].
 *  - craft: crafting-count questions built from TextCraft's recipe lines (the environment's own
 *    crafting commands, env/textcraft): "Recipes: craft 4 stick using 2 oak planks; craft 4 oak planks
 *    using 1 oak log. How many oak log are needed for 12 stick?" with the steps
 *    "12 stick: 3 crafts, 6 oak planks", "6 oak planks: 2 crafts, 2 oak log". Train questions come
 *    from the environment's train episodes, test questions from its OOD episodes.
 *  - jsonl: one {"question": ..., "answer": ...} object a line (GSM8K / MATH style); the answer's
 *    value is extracted like a model's (m2_answer_extract); such items have no worked steps.
 * A worked solution is split into n contiguous parts, one per agent of a chain (m2_qa_parts), so
 * pre-training text shows a team splitting the work; the final part always ends with the answer. */
#ifndef M2_DATA_QA_H
#define M2_DATA_QA_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

#define M2_QA_ARITH_MAX 99      /* intermediate values of arithmetic questions stay in 0..99 */
#define M2_QA_MAX_STEPS 16

typedef struct m2_qa {
    char *question;
    char *answer;               /* the answer text as given (generated: the number) */
    double value;               /* its numeric value */
    int n_steps;
    char *steps[M2_QA_MAX_STEPS];   /* worked solution steps (none for jsonl items) */
} m2_qa;

typedef struct m2_qa_set { m2_qa *q; int n, cap; } m2_qa_set;

void m2_qa_set_init(m2_qa_set *s);
void m2_qa_set_free(m2_qa_set *s);

enum { M2_QA_SPLIT_TRAIN = 0, M2_QA_SPLIT_TEST = 1 };

/* n arithmetic questions of min_ops..max_ops operations (+ and -, operands 1..9). The split
 * decides the stream: train and test questions are drawn from different seeds, and the test split
 * skips every question among the first n_train of the train split (the training set), so the two
 * are disjoint; the test count can then be lower than n (zero is an error: too few distinct
 * questions of that many operations). */
int m2_qa_arith(uint64_t seed, int split, int n, int n_train, int min_ops, int max_ops, m2_qa_set *out, m2_err *err);

/* n crafting-count questions from the recipe lines of the textcraft environment's episodes (train
 * split -> train, ood split -> test); data_path NULL = the embedded recipe set. Questions of one
 * (depth 1) or two (depth 2) recipe steps, alternating; amounts drawn from seed. */
int m2_qa_craft(const char *data_path, uint64_t seed, int split, int n, m2_qa_set *out, m2_err *err);

/* {question, answer} objects, one a line; empty lines skipped. answer may be a string or a number;
 * its value is extracted (m2_answer_extract). Errors name the file, the line and the reason. */
int m2_qa_load_jsonl(const char *path, m2_qa_set *out, m2_err *err);
/* The same over text[0..len) (a NUL inside ends its line's JSON); path names it in errors. */
int m2_qa_parse_jsonl(const char *text, size_t len, const char *path, m2_qa_set *out, m2_err *err);

/* The numeric answer of a text: the last \boxed{...} (a \frac{a}{b} in it is a/b, else its last number), else the number after
 * the last "####", else the last number of the text. Numbers: optional '-', digits with ','
 * thousands separators, optional decimals, or a fraction a/b. Returns 1 and *value when found. */
int m2_answer_extract(const char *text, double *value);

/* The exact checker: 1 when the final message's extracted number equals the question's value
 * (|a - b| <= 1e-6 * max(1, |b|): decimals written differently still match), else 0. */
int m2_qa_check(const m2_qa *q, const char *final_message);

/* Splits q's worked steps into n contiguous parts (agent j of a chain gets part j), joined by ", ":
 * with k >= n steps part j holds steps [j*k/n, (j+1)*k/n); with fewer steps than agents, agent
 * j < k does step j and the later agents repeat the answer. The last part always ends with the
 * answer. parts[j] malloc'd. Items without steps: every part is the answer text. */
int m2_qa_parts(const m2_qa *q, int n, char **parts, m2_err *err);

#endif
