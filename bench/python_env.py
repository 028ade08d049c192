#!/usr/bin/python3
"""Steps per second of multi2's environments through Python (python/multi2 over libmulti2.so) and
through HTTP (`multi2 serve`, AgentGym's protocol), against the C API in the same run
(build/bench_env_api: the same workload in C). The table in docs/python.md comes from this script.

Workload, the same on every path: episode k is train episode k (seed 0); its actions are the
admissible list at the reset, taken in turn; 50 steps or until done; the timed loop includes the
resets. "+ admissible" paths also fetch the admissible list after every step (what an info dict
with admissible_commands costs). HTTP: one environment per client thread, keep-alive connections
(http.client); ALFWorld's steps return the admissible list anyway (AgentGym's protocol).

    /usr/bin/python3 bench/python_env.py [--seconds 1.5] [--rounds 3] [--env textcraft ...] [--json]
Each path runs --rounds times, interleaved with the others; its median round is printed.
Needs `make` first (build/multi2, build/bench_env_api, build/libmulti2.so)."""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import multi2  # noqa: E402
from m2test import Server  # noqa: E402

EPISODE_STEPS = 50
ACTIONS_MAX = 64
SERVER_NAME = {"textcraft": "textcraft", "alfworld": "alfworld", "scienceworld": "sciworld"}


def c_reference(env, secs, admissible):
    args = [os.path.join(ROOT, "build", "bench_env_api"), env, str(secs)] + (["admissible"] if admissible else [])
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)["steps_per_s"]


def python_env(env, secs, admissible):
    e = multi2.Env(env, admissible=admissible)
    n = e.num_episodes("train")
    steps = k = 0
    t0 = t = time.perf_counter()
    while t - t0 < secs:
        _, info = e.reset(seed=0, options={"index": k % n})
        k += 1
        acts = e.handle.admissible()[:ACTIONS_MAX]
        for s in range(EPISODE_STEPS):
            term = e.step(acts[s % len(acts)])[2]
            steps += 1
            if term:
                break
        t = time.perf_counter()
    return steps / (t - t0)


def python_vector(env, secs, num_envs, threads):
    vec = multi2.VectorEnv(env, num_envs, threads=threads, admissible=False)
    n = vec.envs[0].num_episodes("train")
    nxt = num_envs
    vec.reset(seed=0)
    for e in vec.envs:
        e._seed_base, e._resets_since_seed = 0, 0
    acts = [e.handle.admissible()[:ACTIONS_MAX] for e in vec.envs]
    moves = [0] * num_envs
    steps = 0
    t0 = t = time.perf_counter()
    while t - t0 < secs:
        _, _, term, _, _ = vec.step([a[m % len(a)] for a, m in zip(acts, moves)])
        steps += num_envs
        for i in range(num_envs):
            moves[i] += 1
            if term[i] or moves[i] >= EPISODE_STEPS:
                vec.envs[i].reset(seed=0, options={"index": nxt % n})
                nxt += 1
                acts[i] = vec.envs[i].handle.admissible()[:ACTIONS_MAX]
                moves[i] = 0
        t = time.perf_counter()
    vec.close()
    return steps / (t - t0)


def http_client(s, env, secs, first, out):
    """One client thread: its own environment, episodes first, first+1, ... of AgentGym's order."""
    i = s.post("/create")[1]["id"]
    steps = busy = 0.0
    k = first
    while busy < secs:
        reset_body = {"id": i, "game": k, "world_type": "Text"} if env == "alfworld" else {"id": i, "data_idx": k}
        t = time.perf_counter()
        r = s.post("/reset", reset_body)[1]
        busy += time.perf_counter() - t
        if "error" in r:              # past the last index: start again from 0
            k = 0
            continue
        k += 1
        if env == "alfworld":
            acts = r["available_actions"]
        elif env == "scienceworld":   # the list costs a request of its own; it is not timed
            acts = s.get("/action_hint?id=%d" % i)[1]["possible_actions"]
        else:                         # TextCraft's protocol has no list: the same one the other paths use
            h = multi2.Handle("textcraft")
            h.reset(None, "train", (k - 1) % h.num_episodes(None, "train"), 0)
            acts = h.admissible()
        acts = acts[:ACTIONS_MAX]
        t = time.perf_counter()
        for st in range(EPISODE_STEPS):
            r = s.post("/step", {"id": i, "action": acts[st % len(acts)]})[1]
            steps += 1
            if r.get("done"):
                break
        busy += time.perf_counter() - t
    out.append(steps / busy)


def http(env, secs, clients):
    with Server(SERVER_NAME[env], "--threads", "4") as s:
        out = []
        ts = [threading.Thread(target=http_client, args=(s, env, secs, 1000 * c, out)) for c in range(clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--env", nargs="*", default=["textcraft", "alfworld", "scienceworld"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    paths = [   # (name, the C row it is compared with, how it is measured)
        ("C API (bench_env_api)", 0, lambda env, t: c_reference(env, t, False)),
        ("C API + admissible", 1, lambda env, t: c_reference(env, t, True)),
        ("Python Env", 0, lambda env, t: python_env(env, t, False)),
        ("Python Env + admissible", 1, lambda env, t: python_env(env, t, True)),
        ("Python VectorEnv 16, 1 thread", 0, lambda env, t: python_vector(env, t, 16, 1)),
        ("Python VectorEnv 16, 2 threads", 0, lambda env, t: python_vector(env, t, 16, 2)),
        ("HTTP, 1 client", 0, lambda env, t: http(env, t, 1)),
        ("HTTP, 8 clients", 0, lambda env, t: http(env, t, 8)),
    ]
    for env in a.env:
        # ROUNDS interleaved rounds of every path; each path's median round counts (the machine is shared)
        got = [[] for _ in paths]
        for _ in range(a.rounds):
            for j, (_, _, fn) in enumerate(paths):
                got[j].append(fn(env, a.seconds))
        med = [sorted(g)[len(g) // 2] for g in got]
        for j, (name, ref, _) in enumerate(paths):
            rows.append({"env": env, "path": name, "steps_per_s": med[j], "vs_c": med[j] / med[ref],
                         "rounds": got[j]})
    if a.json:
        print(json.dumps({"bench": "python_env", "cores": os.cpu_count(), "load": os.getloadavg(), "rows": rows}, indent=1))
        return
    print("%-13s %-32s %14s %10s" % ("env", "path", "steps/s", "vs C"))
    for r in rows:
        print("%-13s %-32s %14.0f %9.3fx" % (r["env"], r["path"], r["steps_per_s"], r["vs_c"]))
    print("(%d cores, load average %.2f %.2f %.2f; \"vs C\": against the C API row of the same workload)" % (
        (os.cpu_count(),) + os.getloadavg()))


if __name__ == "__main__":
    main()
