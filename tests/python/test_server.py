"""`multi2 serve` over loopback, driven by a client written here: every route of AgentGym's
textcraft, alfworld and sciworld servers (and the ones their clients expect), field for field;
errors (unknown ids, bad JSON, missing fields, oversized bodies, finished episodes); the limits
(open environments, idle expiry); many environments stepped from many threads at once. Runs in the
ASan build too (the server binary is then instrumented); the comparisons with the ctypes package
are skipped there."""
import http.client
import threading
import time
import unittest

import m2test
from m2test import Server, sanitized

if not sanitized():
    import multi2
    from multi2.scienceworld import ScienceWorldEnv


def ipv6_loopback():
    """Whether ::1 can be bound here (containers may run without IPv6)."""
    import socket
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def split_of(k, counts):
    """AgentGym's flat index -> (split, index) over train, id, ood (what the server documents)."""
    for s, n in zip(("train", "id", "ood"), counts):
        if k < n:
            return s, k
        k -= n
    raise IndexError(k)


class Common(unittest.TestCase):
    def test_errors_every_server_shares(self):
        for env in ("textcraft", "alfworld", "sciworld"):
            with self.subTest(env=env), Server(env) as s:
                self.assertEqual(s.get("/nowhere"), (404, {"detail": "Not Found"}))
                self.assertEqual(s.get("/step")[0], 405)
                self.assertEqual(s.post("/observation")[0], 405)
                self.assertEqual(s.post("/step", {"id": 0, "action": "look"}), (200, {"error": "The id 0 is not valid."}))
                self.assertEqual(s.get("/observation?id=12")[1], {"error": "The id 12 is not valid."})
                st, body = s.post("/step", raw=b'{"id": 0, "action": ')
                self.assertEqual((st, list(body)), (422, ["detail"]))
                self.assertEqual(s.post("/step", raw=b"[1, 2]")[0], 422)
                self.assertEqual(s.post("/step", {"action": "look"})[0], 422)          # no id
                self.assertEqual(s.post("/step", {"id": 0.5, "action": "look"})[0], 422)
                self.assertEqual(s.post("/step", {"id": 0, "action": 7})[0], 422)
                self.assertEqual(s.post("/step", {"id": "0", "action": "x"})[1], {"error": "The id 0 is not valid."})
                self.assertEqual(s.get("/observation")[0], 422)                       # no ?id=
                self.assertEqual(s.get("/observation?id=abc")[0], 422)
                self.assertEqual(s.post("/step", raw=b"x" * (2 << 20))[0], 413)       # Content-Length over the limit
                # a chunked body has no Content-Length: the server counts while it reads
                c = http.client.HTTPConnection(s.host, s.port, timeout=60)
                c.request("POST", "/step", body=iter([b"y" * 65536] * 40), encode_chunked=True)
                r = c.getresponse()
                self.assertEqual(r.status, 413)
                r.read()
                c.close()
                self.assertEqual(s.post("/step", raw=b"\x00\xff" * 100)[0], 422)
                # still serving after all that
                self.assertEqual(s.post("/create")[0], 200)

    def test_help(self):
        r = m2test.run_multi2(["serve", "--help"], timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--max-envs", r.stdout)

    @unittest.skipUnless(ipv6_loopback(), "this machine has no IPv6 loopback")
    def test_ipv6_loopback(self):
        for host in ("::1", "[::1]"):
            with self.subTest(host=host), Server("textcraft", "--host", host) as s:
                self.assertEqual(s.host, "::1")
                st, r = s.post("/create")
                self.assertEqual((st, r["id"]), (200, 0))
                st, step = s.post("/step", {"id": 0, "action": "inventory"})
                self.assertEqual((st, step["done"]), (200, False))
                self.assertEqual(s.get("/observation?id=0")[1], step["observation"])
                with self.assertRaises(ConnectionRefusedError):         # bound to ::1 only, not to IPv4
                    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
                    try:
                        c.request("GET", "/")
                    finally:
                        c.close()

    def test_bad_command_lines(self):
        for args in (["--env", "zork"], ["--env", "textcraft", "--port", "70000"], ["--env", "textcraft", "--host", "nowhere"],
                     ["--env", "textcraft", "--host", "::g"], ["--env", "textcraft", "--host", "[::1"],
                     ["--env", "textcraft", "--max-envs", "0"], ["--env"], []):
            with self.subTest(args=args):
                r = m2test.run_multi2(["serve"] + args, timeout=30)
                self.assertIn(r.returncode, (1, 2))
                self.assertIn("multi2 serve", r.stderr)


class TextCraft(unittest.TestCase):
    def test_routes(self):
        with Server("textcraft") as s:
            self.assertEqual(s.get("/"), (200, "This is environment TextCraft."))
            st, c0 = s.post("/create", {"minecraft_dir": "agentenv_textcraft/", "commands": None, "goal": None})
            self.assertEqual(st, 200)
            self.assertEqual(set(c0), {"id", "observation", "done", "reward"})
            self.assertEqual((c0["id"], c0["done"], c0["reward"]), (0, False, 0))
            self.assertTrue(c0["observation"].startswith("Crafting commands:\n"))
            self.assertIn("\n\nGoal: craft ", c0["observation"])
            c1 = s.post("/create", {})[1]
            self.assertEqual(c1["id"], 1)
            self.assertNotEqual(c1["observation"], c0["observation"])          # create resets with data_idx = id
            self.assertEqual(s.post("/reset", {"id": 1, "data_idx": 0})[1]["observation"], c0["observation"])
            self.assertEqual(s.post("/reset", {"id": 1})[1]["observation"], c0["observation"])   # data_idx defaults to 0
            self.assertIn("not an item", s.post("/create", {"commands": "craft 1 x using 1 y", "goal": "minecraft:x"})[1]["error"])
            own = {"commands": "craft 4 pine planks using 1 pine logs", "goal": "minecraft:pine_planks"}
            st, c3 = s.post("/create", own)                                    # id 2 went with the failed one
            self.assertEqual(c3, {"id": 3, "done": False, "reward": 0,
                                  "observation": "Crafting commands:\n" + own["commands"] + "\n\nGoal: craft pine planks."})
            self.assertEqual(s.get("/commands?id=3"), (200, own["commands"]))
            self.assertEqual(s.get("/goal?id=3"), (200, own["goal"]))
            s.post("/step", {"id": 3, "action": "get 1 pine logs"})
            self.assertEqual(s.post("/step", {"id": 3, "action": own["commands"]})[1],
                             {"observation": "Crafted 4 minecraft:pine_planks", "reward": 1, "done": True})
            self.assertIn("go together", s.post("/create", {"goal": own["goal"]})[1]["error"])
            self.assertEqual(s.post("/create", {"commands": own["commands"], "goal": 3})[0], 422)
            st, step = s.post("/step", {"id": 0, "action": "inventory"})
            self.assertEqual(step, {"observation": "Inventory: You are not carrying anything.", "reward": 0, "done": False})
            self.assertEqual(s.get("/observation?id=0"), (200, step["observation"]))
            self.assertEqual(s.get("/detail?id=0")[1], {"observation": step["observation"], "done": False, "reward": 0,
                                                        "deleted": False})
            commands = s.get("/commands?id=0")[1]
            self.assertTrue(commands.startswith("craft "))
            self.assertIn(commands, c0["observation"])
            goal = s.get("/goal?id=0")[1]
            self.assertTrue(goal.startswith("minecraft:"))
            self.assertIn(goal.split(":")[1].replace("_", " "), c0["observation"])
            self.assertEqual(s.post("/close", {"id": 0}), (200, True))
            self.assertEqual(s.post("/close", {"id": 0}), (200, False))
            self.assertEqual(s.post("/step", {"id": 0, "action": "inventory"})[1],
                             {"error": "The task with environment 0 has been deleted."})

    @unittest.skipIf(sanitized(), "needs the ctypes package")
    def test_same_episodes_as_python(self):
        env = multi2.Env("textcraft")
        counts = [env.num_episodes(sp) for sp in ("train", "id", "ood")]
        with Server("textcraft", "--seed", "5") as s:
            i = s.post("/create")[1]["id"]
            for k in (0, 7, counts[0] + 2, sum(counts) - 1, sum(counts) + 3):
                with self.subTest(data_idx=k):
                    obs = s.post("/reset", {"id": i, "data_idx": k})[1]["observation"]
                    sp, idx = split_of(k % sum(counts), counts)
                    self.assertEqual(obs, env.reset(seed=5, options={"split": sp, "index": idx})[0])
                    for _ in range(30):
                        a = env.expert_action()
                        if a is None:
                            break
                        want = env.step(a)
                        got = s.post("/step", {"id": i, "action": a})[1]
                        self.assertEqual((got["observation"], got["reward"], got["done"]), want[:3])
                        if want[2]:
                            break
                    self.assertTrue(got["done"])
                    self.assertEqual(got["reward"], 1)


class ALFWorld(unittest.TestCase):
    def test_routes(self):
        with Server("alfworld") as s:
            self.assertEqual(s.get("/"), (200, "This is environment AlfWorld."))
            self.assertEqual(s.post("/create"), (200, {"id": 0}))
            self.assertEqual(s.post("/create", raw=b"not json: ALFWorld's create reads no body"), (200, {"id": 1}))
            self.assertIn("has not been reset", s.post("/step", {"id": 0, "action": "look"})[1]["error"])
            self.assertEqual(s.post("/reset", {"id": 0, "game": 0, "world_type": "Thor"})[1],
                             {"error": 'world_type must be one of "Text", "Embody" and "Hybrid"'})
            self.assertEqual(s.post("/reset", {"id": 0, "game": 10 ** 7, "world_type": "Text"})[1],
                             {"error": "list index out of range"})
            self.assertEqual(s.post("/reset", {"id": 0, "game": 0})[0], 422)
            st, r = s.post("/reset", {"id": 0, "game": 0, "world_type": "Text"})
            self.assertEqual(set(r), {"id", "observation", "available_actions", "task_type"})
            self.assertTrue(r["observation"].startswith("You are in the middle of a room."), r["observation"][:80])
            self.assertNotIn("Welcome", r["observation"])
            self.assertIn("\nYour task is to: ", r["observation"])
            self.assertIn("look", r["available_actions"])
            ttype, trial = r["task_type"].split("/")
            self.assertTrue(ttype.startswith(("pick", "look")))
            self.assertEqual(trial, "train_00000")
            self.assertEqual(s.get("/available_actions?id=0"), (200, r["available_actions"]))
            self.assertEqual(s.get("/observation?id=0"), (200, r["observation"]))
            d = s.get("/detail?id=0")[1]
            self.assertEqual(d, {"world_type": "Text", "game": 0, "observation": r["observation"],
                                 "available_actions": r["available_actions"], "done": False, "reward": 0, "deleted": False})
            st, step = s.post("/step", {"id": 0, "action": "inventory"})
            self.assertEqual(set(step), {"observation", "reward", "available_actions", "done"})
            self.assertEqual((step["reward"], step["done"]), (0.0, False))
            self.assertEqual(s.get("/detail?id=0")[1]["observation"], step["observation"])
            last = s.post("/reset", {"id": 0, "game": -1, "world_type": "Text"})[1]   # Python's games[-1]
            self.assertEqual(last["task_type"].split("/")[1][:3], "ood")
            self.assertEqual(s.post("/close", {"id": 0}), (200, True))
            self.assertEqual(s.get("/observation?id=0")[1], {"error": "The task with environment 0 has been deleted."})

    @unittest.skipIf(sanitized(), "needs the ctypes package")
    def test_expert_episode_and_finished(self):
        env = multi2.Env("alfworld")
        counts = [env.num_episodes(sp) for sp in ("train", "id", "ood")]
        with Server("alfworld") as s:
            i = s.post("/create")[1]["id"]
            for game in (3, counts[0] + 4, counts[0] + counts[1] + 5):
                with self.subTest(game=game):
                    sp, idx = split_of(game, counts)
                    r = s.post("/reset", {"id": i, "game": game, "world_type": "Text"})[1]
                    obs, info = env.reset(seed=0, options={"split": sp, "index": idx})
                    self.assertEqual(r["observation"], "\n".join(obs.split("\n\n")[1:]))
                    self.assertEqual(r["available_actions"], info["admissible_commands"])
                    self.assertEqual(r["task_type"].split("/")[1], "%s_%05d" % (sp, idx))
                    for _ in range(60):
                        a = env.expert_action()
                        o, rew, term, _, inf = env.step(a)
                        got = s.post("/step", {"id": i, "action": a})[1]
                        self.assertEqual(got, {"observation": o, "reward": float(inf["won"]),
                                               "available_actions": inf["admissible_commands"], "done": term})
                        if term:
                            break
                    self.assertEqual((got["reward"], got["done"]), (1.0, True))
                    self.assertEqual(s.post("/step", {"id": i, "action": "look"})[1],
                                     {"error": "The task with environment %d has finished." % i})
                    self.assertIn("finished", s.get("/available_actions?id=%d" % i)[1]["error"])


class SciWorld(unittest.TestCase):
    def test_routes(self):
        with Server("sciworld") as s:
            self.assertEqual(s.get("/"), (200, "This is environment ScienceWorld."))
            self.assertEqual(s.post("/create"), (200, {"id": 0}))
            self.assertEqual(s.get("/detail?id=0")[1], {"deleted": False, "done": False})   # its info dict at create
            self.assertEqual(s.post("/reset", {"id": 0})[0], 422)                 # data_idx is required here
            st, r = s.post("/reset", {"id": 0, "data_idx": 0})
            self.assertEqual(set(r), {"task_name", "var_num", "task_description", "observation", "reward", "score",
                                      "deleted", "done"})
            self.assertEqual((r["task_name"], r["var_num"], r["deleted"], r["done"]), ("boil", 0, False, False))
            self.assertTrue(r["task_description"].startswith("Your task is to boil"))
            self.assertTrue(r["observation"].startswith("This room is called"))
            self.assertEqual(s.post("/reset", {"id": 0, "data_idx": 10 ** 6})[1], {"error": "list index out of range"})
            st, step = s.post("/step", {"id": 0, "action": "look around"})
            self.assertEqual(set(step), {"observation", "reward", "score", "done"})
            hint = s.get("/action_hint?id=0")[1]
            acts = hint["possible_actions"]                                   # ScienceWorld's templates, sorted
            self.assertEqual((len(acts), acts, acts[:3]), (26, sorted(acts), ["activate OBJ", "close OBJ", "connect OBJ to OBJ"]))
            self.assertTrue({"go OBJ", "move OBJ to OBJ", "focus on OBJ", "wait1"} <= set(acts))
            objs = hint["possible_objects"]
            self.assertEqual(objs, sorted(objs))
            self.assertIn("kitchen", objs)                                    # boil 0 starts in the kitchen
            st, tree = s.get("/object_tree?id=0")
            self.assertEqual(set(tree), {"object_tree"})
            self.assertEqual(tree["object_tree"]["name"], "universe")
            self.assertTrue(all(k.rsplit("-", 1)[0] == v["name"] for k, v in tree["object_tree"]["contents"].items()))
            st, state = s.get("/state?id=0")
            self.assertEqual(set(state), {"observation", "inventory", "task_description", "goal_progress",
                                          "possible_actions", "possible_objects", "current_moves", "environment_info"})
            self.assertEqual(state["observation"], step["observation"])      # look() is the step's look around
            self.assertEqual((state["possible_objects"], state["current_moves"]), (objs[:10], 1))
            self.assertEqual(state["possible_actions"], acts[:10])
            self.assertTrue(state["goal_progress"].startswith("Completed keys: \n" + "-" * 100 + "\nSequential Subgoals:"))
            self.assertEqual(state["environment_info"], s.get("/detail?id=0")[1])
            st, vis = s.post("/step_visual", {"id": 0, "action": "Action: inventory</s>"})
            self.assertEqual(set(vis), {"observation", "reward", "score", "done", "info", "object_tree", "inventory", "moves"})
            self.assertEqual((vis["observation"], vis["moves"], vis["info"]["moves"]), (state["inventory"], 2, 2))
            self.assertEqual(set(vis["info"]), {"moves", "score", "reward", "look", "inv", "taskDesc", "valid",
                                                "variationIdx", "taskName", "simplificationStr"})
            self.assertEqual(vis["info"]["simplificationStr"], "")
            self.assertEqual(vis["info"]["valid"], sorted(vis["info"]["valid"]))
            self.assertEqual(s.post("/step_visual", {"id": 0})[0], 422)
            self.assertEqual(s.get("/state?id=5")[1], {"error": "The id 5 is not valid."})
            step = s.post("/step", {"id": 0, "action": "look around"})[1]
            goals = s.get("/goals?id=0")[1]["goals"]
            self.assertEqual(goals, s.get("/state?id=0")[1]["goal_progress"])
            self.assertIn("\n0\tfalse\t" + "GoalFind".rjust(40) + "\tfocus on the water\n", goals)   # boil's first, not done
            self.assertEqual(s.get("/task_description?id=0")[1], {"task_description": r["task_description"]})
            self.assertEqual(s.get("/observation?id=0")[1], step["observation"])
            d = s.get("/detail?id=0")[1]
            self.assertEqual((d["task_name"], d["observation"], d["deleted"]), ("boil", step["observation"], False))
            self.assertEqual(s.post("/close", {"id": 0}), (200, True))
            self.assertEqual(s.post("/close", {"id": 0})[1], {"error": "The task with environment 0 has been deleted."})

    @unittest.skipIf(sanitized(), "needs the ctypes package")
    def test_data_idx_order_and_gold_episode(self):
        sw = ScienceWorldEnv()
        excluded = {"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"}
        order = sorted((k for k in sw.tasks if k not in excluded), key=lambda k: tuple(int(x) for x in k.split("-")))
        games = [(sw.tasks[k], v) for k in order for v in range(sw.get_max_variations(sw.tasks[k]))]
        with Server("sciworld") as s:
            i = s.post("/create")[1]["id"]
            self.assertIn("error", s.post("/reset", {"id": i, "data_idx": len(games)})[1])
            for k in (0, 1, 500, 2000, len(games) - 1):
                with self.subTest(data_idx=k):
                    r = s.post("/reset", {"id": i, "data_idx": k})[1]
                    self.assertEqual((r["task_name"], r["var_num"]), games[k])
            r = s.post("/reset", {"id": i, "data_idx": 3})[1]
            sw.load(r["task_name"], r["var_num"])
            obs, _ = sw.reset()
            self.assertEqual(r["observation"], obs)
            total = 0
            for a in sw.get_gold_action_sequence():
                got = s.post("/step", {"id": i, "action": a})[1]
                o, rew, done, info = sw.step(a)
                self.assertEqual((got["observation"], got["reward"], got["score"]), (o, rew, info["score"]))
                total += got["reward"]
            self.assertEqual((got["score"], got["done"], total), (100, True, 100))
            self.assertIn("finished", s.post("/step", {"id": i, "action": "look around"})[1]["error"])


class Limits(unittest.TestCase):
    def test_max_envs_and_idle_expiry(self):
        with Server("textcraft", "--max-envs", "3", "--idle-seconds", "3") as s:
            ids = [s.post("/create")[1]["id"] for _ in range(3)]
            self.assertEqual(ids, [0, 1, 2])
            self.assertIn("too many open environments", s.post("/create")[1]["error"])
            self.assertEqual(s.post("/close", {"id": 1}), (200, True))
            self.assertEqual(s.post("/create")[1]["id"], 3)                       # ids are never reused
            time.sleep(4)
            self.assertEqual(s.get("/observation?id=0")[1], {"error": "The task with environment 0 has been deleted."})
            self.assertEqual([s.post("/create")[1].get("id") for _ in range(3)], [4, 5, 6])

    def test_many_environments_from_many_threads(self):
        """16 threads, each its own environment, stepping at once: every one sees what it would see alone."""
        actions = ["inventory", "get 1 oak log", "craft 4 oak planks using 1 oak log", "get 2 stick", "inventory"]

        def episode(s, k, out):
            i = s.post("/create")[1]["id"]
            got = [s.post("/reset", {"id": i, "data_idx": k})[1]["observation"]]
            for _ in range(8):
                for a in actions:
                    r = s.post("/step", {"id": i, "action": a})[1]
                    got.append(r["observation"] if "observation" in r else r)
            out[k] = got
            s.post("/close", {"id": i})

        with Server("textcraft", "--threads", "4") as s:
            alone = {}
            for k in range(16):
                episode(s, k, alone)
            together = {}
            ts = [threading.Thread(target=episode, args=(s, k, together)) for k in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(alone, together)
            self.assertEqual(s.post("/create")[1]["id"], 32)


if __name__ == "__main__":
    unittest.main(verbosity=2)
