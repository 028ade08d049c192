#!/usr/bin/env python3
"""The tables of docs/results-teamtr.md from the run folders scripts/teamtr_experiment.sh made:
per run the sampled test success before / after, the greedy chain and best-of-agents-alone success,
the sum of measured gains, the sum of certificates, rank correlation and violation rate of the
per-stage certificate against the measured gain, and the per-update out-of-region rate and D^."""
import glob, json, os, sys
out = sys.argv[1] if len(sys.argv) > 1 else "runs/teamtr-exp"
rows = []
for d in sorted(glob.glob(os.path.join(out, "n*_s*_*"))):
    e = os.path.join(d, "artifacts", "teamtr", "eval.json")
    if not os.path.isfile(e):
        continue
    ev = json.load(open(e))
    kls = []
    for line in open(os.path.join(d, "metrics.jsonl")):
        m = json.loads(line)["data"]
        kls += [v for k, v in m.items() if k.endswith("/kl") and k.startswith("teamtr/agent")]
    name = os.path.basename(d)
    n, seed, variant = name.split("_", 2)
    rows.append((int(n[1:]), variant, int(seed[1:]), ev, kls))
print("| n | variant | seed | success before -> after (sampled) | measured gain | certificate sum | chain greedy | best of agents alone | rank corr | violation rate | out-of-region rate | mean / max D^ |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n, v, s, ev, kls in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
    print("| %d | %s | %d | %.3f -> %.3f | %+.3f | %+.3f | %.3f | %.3f | %+.2f | %.2f | %.2f | %.4f / %.4f |" % (
        n, v, s, ev["success_before"], ev["success_after"], sum(ev["measured_gain"]), sum(ev["certificate"]),
        ev["chain"], ev["best_of"], ev["rank_corr"], ev["violation_rate"], ev["out_of_region_rate"],
        sum(kls) / max(len(kls), 1), max(kls or [0])))
