/* cli/: one file per subcommand; each returns the process exit status (0 ok, 1 error, 2 usage). */
#ifndef M2_CLI_H
#define M2_CLI_H
#include "dist/dist.h"

typedef int (*m2_cmd_fn)(int argc, char **argv);   /* argv[0] is the subcommand name */
/* A subcommand on the ranks of an MPI job (docs/dist.md): every rank runs it with the same
 * arguments; rank 0 alone writes files and prints (main sends the others' stdout to /dev/null). */
typedef int (*m2_cmd_dist_fn)(int argc, char **argv, m2_dist *dist);

int cmd_demo(int argc, char **argv);
int cmd_demo_dist(int argc, char **argv, m2_dist *dist);
int cmd_play(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_eval_dist(int argc, char **argv, m2_dist *dist);
int cmd_bench(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_train_dist(int argc, char **argv, m2_dist *dist);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* bench subcommands, one file each */
int bench_engine_main(int argc, char **argv);
int bench_env_main(int argc, char **argv);
int bench_generate_main(int argc, char **argv);

#endif
