"""multi2.Env / VectorEnv: gymnasium's contract, determinism, and episodes equal to the C
library's (`multi2 play` fed the same actions)."""
import random
import threading
import unittest

import m2test  # noqa: F401  (sets sys.path)
import multi2

try:
    import gymnasium
except ImportError:
    gymnasium = None

INFO_KEYS = {"admissible_commands", "won", "score", "task", "split", "index"}


def play_oracle(env, rng=None, explore=0.0, limit=60):
    """Steps env with the expert (or, with probability `explore`, a random admissible action);
    returns [(action, observation, reward, terminated)]."""
    out = []
    for _ in range(limit):
        info_adm = env.handle.admissible()
        a = env.expert_action()
        if a is None or (rng is not None and rng.random() < explore):
            a = rng.choice(info_adm) if rng is not None and info_adm else (a or "look")
        obs, rew, term, trunc, info = env.step(a)
        out.append((a, obs, rew, term))
        if term:
            break
    return out


class GymContract(unittest.TestCase):
    def test_reset_and_step_shapes(self):
        for name in multi2.env_names():
            with self.subTest(env=name):
                env = multi2.Env(name, split="id")
                obs, info = env.reset(seed=3, options={"index": 1})
                self.assertIsInstance(obs, str)
                self.assertTrue(obs)
                self.assertIsInstance(info, dict)
                self.assertLessEqual(INFO_KEYS, set(info))
                self.assertEqual((info["split"], info["index"], info["seed"]), ("id", 1, 3))
                self.assertIsInstance(info["admissible_commands"], list)
                self.assertTrue(all(isinstance(a, str) for a in info["admissible_commands"]))
                self.assertTrue(info["task"])
                self.assertFalse(info["won"])
                res = env.step(info["admissible_commands"][0])
                self.assertEqual(len(res), 5)
                obs2, reward, terminated, truncated, info2 = res
                self.assertIsInstance(obs2, str)
                self.assertIsInstance(reward, float)
                self.assertIsInstance(terminated, bool)
                self.assertIsInstance(truncated, bool)
                self.assertEqual(info2["moves"], 1)
                self.assertEqual(env.render(), obs2)
                env.close()

    def test_expert_terminates_with_reward(self):
        for name in multi2.env_names():
            with self.subTest(env=name):
                env = multi2.Env(name, split="ood")
                env.reset(seed=0, options={"index": 2})
                steps = play_oracle(env, limit=200)
                self.assertTrue(steps[-1][3], "the expert did not finish %s" % name)
                last = env.handle.last()
                self.assertTrue(last.won)
                self.assertEqual(env.handle.unit_score(last.score), 1.0)
                # the sum of rewards: 1 for TextCraft / ALFWorld, the 0..100 score for ScienceWorld
                self.assertAlmostEqual(sum(s[2] for s in steps), env.handle.score_max)

    def test_truncation(self):
        env = multi2.Env("alfworld", max_steps=3)
        env.reset(seed=0)
        flags = [env.step("look")[3] for _ in range(3)]
        self.assertEqual(flags, [False, False, True])

    def test_same_seed_same_episode(self):
        for name in multi2.env_names():
            with self.subTest(env=name):
                a, b = multi2.Env(name), multi2.Env(name)
                oa, _ = a.reset(seed=11, options={"index": 4})
                ob, _ = b.reset(seed=11, options={"index": 4})
                self.assertEqual(oa, ob)
                self.assertEqual(play_oracle(a, random.Random(5), 0.3), play_oracle(b, random.Random(5), 0.3))

    def test_seed_changes_textcraft_distractors(self):
        env = multi2.Env("textcraft")
        o1, _ = env.reset(seed=1, options={"index": 0})
        o2, _ = env.reset(seed=2, options={"index": 0})
        self.assertNotEqual(o1, o2)

    def test_reset_walks_the_split_and_seeds_follow(self):
        env = multi2.Env("scienceworld", split="id")
        idx = [env.reset(seed=5 if i == 0 else None)[1] for i in range(3)]
        self.assertEqual([i["index"] for i in idx], [0, 1, 2])
        self.assertEqual([i["seed"] for i in idx], [5, 6, 7])
        env.reset(options={"index": 3, "task": "boil"})
        self.assertEqual(env.reset()[1]["index"], 4)

    def test_bad_input_is_an_error(self):
        env = multi2.Env("alfworld")
        with self.assertRaises(multi2.Error):
            env.step("look")                       # before any reset
        with self.assertRaisesRegex(multi2.Error, "split"):
            env.reset(options={"split": "nonsense"})
        with self.assertRaisesRegex(multi2.Error, "out of range"):
            env.reset(options={"split": "id", "index": 10 ** 6})
        with self.assertRaisesRegex(multi2.Error, "task"):
            env.reset(options={"task": "no_such_task"})
        with self.assertRaises(ValueError):
            env.reset(options={"colour": "red"})
        with self.assertRaisesRegex(multi2.Error, "unknown environment"):
            multi2.Env("zork")
        env.close()
        with self.assertRaisesRegex(multi2.Error, "closed"):
            env.reset()

    def test_any_text_is_game_input(self):
        env = multi2.Env("textcraft")
        env.reset(seed=0)
        for junk in ["", "\x01\x02", "é" * 5000, "craft 999999999999 stick using"]:
            obs, reward, term, trunc, info = env.step(junk)
            self.assertIsInstance(obs, str)
            self.assertFalse(info["valid"] and junk == "")

    def test_one_class_per_environment(self):
        for cls, name in ((multi2.TextCraftEnv, "textcraft"), (multi2.ALFWorldEnv, "alfworld"),
                          (multi2.ScienceWorldGymEnv, "scienceworld")):
            with self.subTest(env=name):
                a, b = cls(split="ood"), multi2.Env(name, split="ood")
                self.assertEqual(a.reset(seed=2)[0], b.reset(seed=2)[0])
                self.assertEqual(a.env_name, name)

    @unittest.skipIf(gymnasium is None, "gymnasium is not installed")
    def test_gymnasium_make(self):
        env = gymnasium.make("multi2/TextCraft-v0", split="id")
        obs, info = env.reset(seed=0)
        self.assertEqual(info["split"], "id")

    @unittest.skipIf(gymnasium is None, "gymnasium is not installed")
    def test_is_a_gymnasium_env(self):
        self.assertIsInstance(multi2.Env("textcraft"), gymnasium.Env)

    def test_works_without_gymnasium(self):
        if gymnasium is None:
            self.assertIs(multi2.Env.__mro__[1], object)


class Loading(unittest.TestCase):
    def test_import_without_the_library_and_a_clear_error(self):
        """`import multi2` needs no library; the first use names every place it looked."""
        import os, shutil, subprocess, sys, tempfile
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(m2test.ROOT, "python", "multi2"), os.path.join(d, "multi2"))
            env = dict(os.environ, PYTHONPATH=d, MULTI2_LIB=os.path.join(d, "nowhere.so"))
            r = subprocess.run([sys.executable, "-c", "import multi2\ntry:\n    multi2.Env('textcraft')\n"
                                "except OSError as e:\n    print('OSError', e)"], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("OSError multi2: libmulti2.so not found", r.stdout)
            self.assertIn("nowhere.so", r.stdout)
            # beside the package is the second place looked
            shutil.copy(os.environ.get("MULTI2_LIB") or os.path.join(m2test.ROOT, "build", "libmulti2.so"),
                        os.path.join(d, "multi2", "libmulti2.so"))
            env.pop("MULTI2_LIB")
            r = subprocess.run([sys.executable, "-c", "import multi2; print(multi2.env_names())"], capture_output=True,
                               text=True, env=env)
            self.assertEqual(r.stdout.strip(), "['textcraft', 'alfworld', 'scienceworld']", r.stderr)


class Vector(unittest.TestCase):
    def test_vector_equals_single_envs(self):
        for threads in (1, 3):
            with self.subTest(threads=threads):
                vec = multi2.VectorEnv("alfworld", 5, threads=threads, split="id")
                obs, infos = vec.reset(seed=100)
                self.assertEqual([i["index"] for i in infos], [0, 1, 2, 3, 4])
                singles = [multi2.Env("alfworld", split="id") for _ in range(5)]
                sobs = [e.reset(seed=100 + i, options={"index": i})[0] for i, e in enumerate(singles)]
                self.assertEqual(obs, sobs)
                for _ in range(8):
                    acts = [e.expert_action() or "look" for e in singles]
                    vres = vec.step(acts)
                    sres = [e.step(a) for e, a in zip(singles, acts)]
                    self.assertEqual(vres[0], [r[0] for r in sres])
                    self.assertEqual(vres[1], [r[1] for r in sres])
                    self.assertEqual(vres[4], [r[4] for r in sres])
                obs, infos = vec.reset()
                self.assertEqual([i["index"] for i in infos], [5, 6, 7, 8, 9])
                with self.assertRaises(ValueError):
                    vec.step(["look"])
                vec.close()

    def test_threads_share_nothing(self):
        """Environments stepped from 4 threads at once give what they give one at a time."""
        def episode(index, out):
            env = multi2.Env("scienceworld", split="train")
            env.reset(seed=0, options={"index": index})
            out[index] = play_oracle(env, random.Random(index), 0.2, limit=40)
        alone = {}
        for i in range(4):
            episode(i * 97, alone)
        together = {}
        ts = [threading.Thread(target=episode, args=(i * 97, together)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(alone, together)


class SameAsC(unittest.TestCase):
    """An episode played through Python shows the same text as `multi2 play` fed the same actions."""

    CASES = [("textcraft", "train", 3, 7), ("textcraft", "ood", 1, 0), ("alfworld", "train", 2, 11),
             ("alfworld", "ood", 5, 0), ("scienceworld", "id", 10, 0), ("scienceworld", "ood", 700, 0)]

    def check(self, name, split, index, seed, c_seed=None):
        env = multi2.Env(name, split=split)
        first, _ = env.reset(seed=seed, options={"index": index})
        steps = play_oracle(env, random.Random(index), 0.25, limit=40)
        actions = "".join(a + "\n" for a, _, _, _ in steps)
        r = m2test.run_multi2(["play", "--env", name, "--split", split, "--index", str(index), "--seed",
                               str(seed if c_seed is None else c_seed)], stdin=actions)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        pos = out.find(first + "\n")
        self.assertGreaterEqual(pos, 0, "the first observation differs")
        for a, obs, _, _ in steps:
            want = "> %s\n%s\n" % (a, obs)
            nxt = out.find(want, pos)
            self.assertGreaterEqual(nxt, 0, "step %r: Python and C differ" % a)
            pos = nxt + len(want)
        return steps

    def test_episodes_equal(self):
        for case in self.CASES:
            with self.subTest(case=case):
                self.check(*case)

    def test_comparison_sees_a_wrong_seed(self):
        with self.assertRaises(AssertionError):
            self.check("textcraft", "train", 3, 7, c_seed=8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
