#!/usr/bin/env python3
"""The table "What holds over the kept seeds, at a glance" of docs/results-small.md, from the
orderings of one `multi2 report` over the kept folders of every environment:

    build/multi2 report --out /tmp/glance experiments/small/*/s2[0-9]
    python3 scripts/glance_table.py /tmp/glance/results.json

Each cell: the report's per-seed difference better - worse (success in points; ScienceWorld its
mean score) +- its standard error and verdict (n.r.: not resolved); role swap's rows count the
methods above it that hold. Rows without a mode (a run evaluated in one mode) count as generating,
the set-up of every run (sys2.action_mode generate). Standard library only."""
import json
import sys

ENVS = [("textcraft", "TextCraft"), ("alfworld", "ALFWorld"), ("scienceworld", "ScienceWorld")]
SPLITS = ["id", "ood"]
MODES = [("generate", "generating"), ("score", "choosing")]
CLAIMS = ["Multi² above the flat single model", "Multi² above the shared adapter", "Multi² above random play",
          "online RL above offline only", "the anchor term helps", "the KL term helps",
          "SFT planner + RL executor above only SFT", "SFT planner + RL executor above only RL"]
ROLE_SWAP = "role swap the worst"
VERDICT = {"holds": "holds", "reversed": "**reversed**", "not resolved": "n.r."}


def cell(o):
    if o["measure"] == "score":
        d = "%+.3f ± %.3f" % (o["diff"], o["diff_se"])
    else:
        d = "%+.1f ± %.1f" % (100 * o["diff"], 100 * o["diff_se"])
    return "%s %s" % (VERDICT.get(o["verdict"], o["verdict"]), d)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/glance_table.py REPORT/results.json")
    path = sys.argv[1]
    try:
        with open(path) as f:
            orderings = json.load(f)["orderings"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit("glance_table: %s: %s" % (path, e))
    by = {}
    for o in orderings:
        mode = o.get("action_mode") or "generate"
        by.setdefault((o["claim"], o["env"], o["split"], mode), []).append(o)
    head = ["claim", "System 2"] + ["%s %s" % (name, s.upper()) for _, name in ENVS for s in SPLITS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for claim in CLAIMS + [ROLE_SWAP]:
        for mode, mode_name in MODES:
            cells = []
            for env, _ in ENVS:
                for s in SPLITS:
                    if claim == ROLE_SWAP:
                        os_ = [o for (c, e, sp, m), v in by.items() for o in v
                               if c.startswith(ROLE_SWAP + ":") and e == env and sp == s and m == mode]
                        held = sum(o["verdict"] == "holds" for o in os_)
                        cells.append("%d of %d hold" % (held, len(os_)) if os_ else "")
                    else:
                        os_ = by.get((claim, env, s, mode), [])
                        cells.append(cell(os_[0]) if os_ else "")
            if any(cells):
                label = claim + " (each method above it)" if claim == ROLE_SWAP else claim
                print("| " + " | ".join([label, mode_name] + cells) + " |")


if __name__ == "__main__":
    main()
