/* multi2 report: results over training seeds, from folders made alike but for run.seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "pipe/report.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: multi2 report --out DIR [--title TEXT] FOLDER FOLDER...\n"
            "       multi2 report --teamtr --out DIR [--title TEXT] RUN RUN...\n"
            "\n"
            "Aggregates the results.json of several demo or run folders, made alike but for run.seed (one\n"
            "folder per training seed, e.g. `multi2 demo --out runs/s23 run.seed=23`; a demo still running\n"
            "gives its finished runs), per method,\n"
            "environment and split: mean success rate and mean score over the folders with their standard\n"
            "error, mean steps, tokens, System 1 calls and invalid-action rate per episode, and each folder's\n"
            "success rate (a run evaluated in both action modes, eval.action_modes, gives a row per mode);\n"
            "per RL stage (sys2_offline, sys2_online), the share of probe decisions it changed and its KL\n"
            "over the seeds, its advantage and weight spread, and the online share of the replay buffer,\n"
            "naming every stage that changed nothing; and the paper's orderings (Multi\xc2\xb2 above flat, the\n"
            "shared adapter, random, offline only, no anchor, no KL, only SFT, only RL; role swap the\n"
            "worst) as paired differences over the seeds with a verdict. Writes DIR/results.md,\n"
            "DIR/results.json and DIR/plots/results.svg|png (means with standard-error bars), and from\n"
            "the folders' evaluation records and metrics the figures DIR/plots/boxes (per-task-type\n"
            "success over seeds x task types), buckets (success by task type), tokens (per episode and\n"
            "system) and online (the online stage's learning curves, sys2.online.eval_every), each\n"
            ".svg and .png. DIR must be new, empty, or a folder multi2 report wrote (DIR/seeds.json).\n"
            "\n"
            "--teamtr: TeamTR run folders (methods teamtr and teamtr_hier), grouped by team size and variant\n"
            "over their seeds: success before and after, measured gain, certificate, rank correlation,\n"
            "violation rate, D^ and the out-of-region rate, the stale penalty per team size, and the charts\n"
            "DIR/plots/teamtr_{success,kl,cumulative,bound_vs_gain,stale_penalty}.svg|png. Writes\n"
            "DIR/teamtr.md and DIR/teamtr.json; DIR must be new, empty, or one it wrote (DIR/teamtr.json).\n");
}

int cmd_report(int argc, char **argv) {
    const char *out = NULL, *title = NULL;
    int teamtr = 0;
    const char **folders = calloc((size_t)argc, sizeof *folders);
    int n = 0;
    if (!folders) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); free(folders); return 0; }
        if (!strcmp(a, "--teamtr")) teamtr = 1;
        else if (!strcmp(a, "--out") && next) { out = next; i++; }
        else if (!strcmp(a, "--title") && next) { title = next; i++; }
        else if (a[0] != '-') folders[n++] = a;
        else {
            fprintf(stderr, "multi2 report: unexpected argument '%s'%s\n", a,
                    !strcmp(a, "--out") || !strcmp(a, "--title") ? " (needs a value)" : "");
            usage(stderr);
            free(folders);
            return 2;
        }
    }
    if (!out || n == 0) {
        fprintf(stderr, "multi2 report: %s\n", !out ? "--out DIR is required" : "no folder given");
        usage(stderr);
        free(folders);
        return 2;
    }
    m2_err err = {0};
    int rc = teamtr ? m2_report_teamtr(folders, n, out, title, &err) : m2_report_over_seeds(folders, n, out, title, &err);
    if (rc) fprintf(stderr, "multi2 report: %s\n", err.msg);
    else if (teamtr) printf("TeamTR runs over seeds (%d folders): %s/teamtr.md, %s/teamtr.json, %s/plots/teamtr_*.svg\n", n, out, out, out);
    else printf("results over %d folders: %s/results.md, %s/results.json, %s/plots/ (results, boxes, buckets, tokens, online)\n",
                n, out, out, out);
    free(folders);
    return rc ? 1 : 0;
}
