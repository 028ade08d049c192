"""A bounded load test of `multi2 serve` over loopback: many environments open at once, stepped
from several client threads, thousands of steps, churn of create/close; no error answer, and no
leak (the server's resident memory stays flat across rounds; in the ASan build LeakSanitizer
checks the exit, which Server's exit check turns into a failure)."""
import threading
import time
import unittest

from m2test import Server, sanitized

THREADS = 8
ENVS_PER_THREAD = 8           # 64 environments open at once
ROUNDS = 12                   # steps per environment per round (a reset starts each round)
WARM_ROUNDS = 3               # rounds before the memory is read, and rounds after
RSS_SLACK_KIB = 8 * 1024      # growth allowed between the warm rounds and the last (allocator noise)

TEXTCRAFT_ACTIONS = ["inventory", "get 1 oak log", "craft 4 oak planks using 1 oak log", "get 3 iron ingot",
                     "craft 1 bucket using 3 iron ingot", "get 99999999999 stick", "look", ""]
ALFWORLD_ACTIONS = ["look", "inventory", "go to countertop 1", "open fridge 1", "take apple 1 from countertop 1",
                    "help", "examine drawer 1", "go to sinkbasin 1"]


def hammer(s, actions, rounds, reset_body, errors, counter):
    ids = [s.post("/create")[1]["id"] for _ in range(ENVS_PER_THREAD)]
    for r in range(rounds):
        for j, i in enumerate(ids):
            out = s.post("/reset", reset_body(i, r * ENVS_PER_THREAD + j))[1]
            if "error" in out:
                errors.append(out)
        for k in range(ROUNDS):
            for i in ids:
                st, out = s.post("/step", {"id": i, "action": actions[(i + k) % len(actions)]})
                if st != 200 or "error" in out:
                    if "finished" not in str(out):   # ALFWorld refuses steps after a win, as AgentGym does
                        errors.append(out)
                counter[0] += 1
    for i in ids:
        if s.post("/close", {"id": i})[1] is not True:
            errors.append("close %d" % i)


def run_round(s, actions, rounds, reset_body):
    errors, counter = [], [0]
    ts = [threading.Thread(target=hammer, args=(s, actions, rounds, reset_body, errors, counter)) for _ in range(THREADS)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors, counter[0], time.time() - t0


class Load(unittest.TestCase):
    def check(self, env, actions, reset_body, rounds):
        """WARM rounds, then as many again plus churn: the memory held may grow in the first
        rounds (caches, the allocator's free lists), never after."""
        # one malloc arena: memory freed by one server thread is reused by the others, so the
        # resident size measures what is held, not how allocations spread over per-thread arenas
        with Server(env, "--threads", "4", "--max-envs", str(THREADS * ENVS_PER_THREAD),
                    environ={"MALLOC_ARENA_MAX": "1"}) as s:
            steps, t0 = 0, time.time()
            for phase in ("warm", "measured"):
                for _ in range(WARM_ROUNDS):
                    errors, n, _ = run_round(s, actions, rounds, reset_body)
                    self.assertEqual(errors, [])
                    steps += n
                if phase == "warm":
                    warm = s.rss_kib()
                    # churn: open and close many more environments than the limit, one at a time
                    for _ in range(300):
                        i = s.post("/create")[1]["id"]
                        self.assertIs(s.post("/close", {"id": i})[1], True)
            secs = time.time() - t0
            if not sanitized():
                self.assertLess(s.rss_kib() - warm, RSS_SLACK_KIB, "the server's memory grew: a leak?")
            print("\n%s: %d steps in %.1f s (%.0f steps/s over %d client threads, %d environments open), RSS %d -> %d KiB" % (
                env, steps, secs, steps / secs, THREADS, THREADS * ENVS_PER_THREAD, warm, s.rss_kib()))
            self.assertGreaterEqual(steps, 3000)

    def test_textcraft(self):
        self.check("textcraft", TEXTCRAFT_ACTIONS, lambda i, k: {"id": i, "data_idx": k}, 1)

    def test_alfworld(self):
        self.check("alfworld", ALFWORLD_ACTIONS, lambda i, k: {"id": i, "game": k * 7, "world_type": "Text"}, 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
