"""The look-alikes of ALFWorld's (get_environment / init_env) and ScienceWorld's (ScienceWorldEnv)
Python APIs: the calls existing code makes, and what they answer."""
import unittest

import m2test  # noqa: F401
import multi2
from multi2.alfworld import get_environment
from multi2.scienceworld import ScienceWorldEnv

ALFWORLD_CONFIG = {"env": {"type": "AlfredTWEnv", "task_types": [1, 2, 3, 4, 5, 6], "expert_type": "handcoded"},
                   "dataset": {"data_path": "$ALFWORLD_DATA/json_2.1.1/train"}}


class ALFWorld(unittest.TestCase):
    def test_eval_loop_as_alfworld_users_write_it(self):
        env_cls = get_environment("AlfredTWEnv")
        env = env_cls(ALFWORLD_CONFIG, train_eval="eval_out_of_distribution")
        self.assertEqual(env.num_games, multi2.Env("alfworld").num_episodes("ood"))
        env = env.init_env(batch_size=3)
        obs, infos = env.reset()
        self.assertEqual(len(obs), 3)
        self.assertTrue(all(o.startswith("-= Welcome to TextWorld, ALFRED! =-") for o in obs))
        for key in ("admissible_commands", "won", "extra.gamefile", "expert_plan"):
            self.assertEqual(len(infos[key]), 3, key)
        # AgentGym reads "<task type>/<trial>" as the gamefile's 3rd- and 2nd-last parts
        parts = [g.split("/")[-3:-1] for g in infos["extra.gamefile"]]
        self.assertEqual([p[1] for p in parts], ["ood_00000", "ood_00001", "ood_00002"])
        self.assertTrue(all(p[0].startswith(("pick", "look")) for p in parts))
        dones = [False] * 3
        for _ in range(80):
            cmds = [p[0] if p else "look" for p in infos["expert_plan"]]
            self.assertTrue(all(c in adm for c, adm, d in zip(cmds, infos["admissible_commands"], dones) if not d))
            obs, scores, dones, infos = env.step(cmds)
            if all(dones):
                break
        self.assertEqual(dones, [True] * 3)
        self.assertEqual(infos["won"], [True] * 3)
        self.assertEqual(scores, [1.0] * 3)
        # the next reset takes the next games
        obs, infos = env.reset()
        self.assertEqual([g.split("/")[-2] for g in infos["extra.gamefile"]], ["ood_00003", "ood_00004", "ood_00005"])
        self.assertEqual(infos["won"], [False] * 3)

    def test_task_types_filter_and_splits(self):
        env = get_environment("AlfredTWEnv")({"env": {"task_types": [1]}}, train_eval="eval_in_distribution")
        self.assertEqual(env.num_games, multi2.Env("alfworld").num_episodes("id", task="pick_and_place_simple"))
        b = env.init_env(2)
        _, infos = b.reset()
        self.assertTrue(all(g.split("/")[-3] == "pick_and_place_simple" for g in infos["extra.gamefile"]))
        train = get_environment("AlfredTWEnv")(None, train_eval="train")
        self.assertEqual(train.num_games, multi2.Env("alfworld").num_episodes("train"))
        t = train.init_env(1)
        t.seed(4)
        o1, _ = t.reset()
        t2 = train.init_env(1)
        t2.seed(4)
        self.assertEqual(o1, t2.reset()[0])         # a seeded shuffle: reproducible

    def test_errors(self):
        with self.assertRaises(ValueError):
            get_environment("AlfredThorEnv")
        with self.assertRaises(ValueError):
            get_environment("AlfredTWEnv")(ALFWORLD_CONFIG, train_eval="valid")
        with self.assertRaises(ValueError):
            get_environment("AlfredTWEnv")({"env": {"task_types": [9]}})
        env = get_environment("AlfredTWEnv")(None, train_eval="eval_in_distribution").init_env(2)
        env.reset()
        with self.assertRaises(ValueError):
            env.step(["look"])


class ScienceWorld(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = ScienceWorldEnv("", envStepLimit=100)

    def test_task_table(self):
        names = self.env.get_task_names()
        self.assertEqual(len(names), 30)
        self.assertIn("boil", names)
        self.assertEqual(self.env.tasks["1-1"], "boil")
        h = multi2.Handle("scienceworld")
        for t in ("boil", "find-living-thing", "inclined-plane-determine-angle"):
            with self.subTest(task=t):
                self.env.load(t, 0)
                tr, dv, te = (self.env.get_variations_train(), self.env.get_variations_dev(), self.env.get_variations_test())
                self.assertEqual(tr + dv + te, list(range(self.env.get_max_variations(t))))
                self.assertEqual([len(tr), len(dv), len(te)], [h.num_episodes(t, s) for s in ("train", "id", "ood")])

    def test_load_step_and_info(self):
        env = self.env
        env.load("boil", 15, "easy")
        obs, info = env.reset()
        h = multi2.Handle("scienceworld")
        split, index = env._locate("boil", 15)
        self.assertEqual(obs, h.reset("boil", split, index, 0).observation)
        self.assertEqual(info["variationIdx"], 15)
        self.assertIn("boil", env.get_task_description())
        obs, reward, done, info = env.step("look around")
        self.assertIsInstance(obs, str)
        self.assertIsInstance(reward, float)
        self.assertFalse(done)
        self.assertEqual(info["moves"], 1)
        self.assertIn("score", info)
        self.assertEqual((info["look"], info["inv"]), (env.look(), env.inventory()))
        self.assertEqual(info["valid"], sorted(h.admissible()))          # the valid combinations: admissible
        self.assertEqual(info["valid"], sorted(info["valid"]))
        self.assertEqual(env.look(), obs)                                   # the free look: the step's words,
        self.assertEqual(env.get_num_moves(), 1)                            # no move spent
        objs = env.getPossibleObjects()
        self.assertEqual(objs, sorted(objs))
        self.assertTrue({a[6:] for a in info["valid"] if a.startswith("go to ")} <= set(objs))
        self.assertEqual(env.getObjectTree()["name"], "universe")
        self.assertEqual(env.inventory(), env.step("inventory")[0])

    def test_action_templates(self):
        env = self.env
        env.load("boil", 0)
        env.reset()
        acts = env.get_possible_actions()                   # templates, sorted, as ScienceWorld's
        self.assertEqual(len(acts), 26)
        self.assertEqual(acts, sorted(acts))
        for t in ("open OBJ", "go OBJ", "move OBJ to OBJ", "pour OBJ in OBJ", "focus on OBJ", "wait1", "look around"):
            self.assertIn(t, acts)
        ids = env.get_possible_actions_with_IDs()
        self.assertEqual(sorted(x["action_example"] for x in ids), acts)
        self.assertEqual([x["template_id"] for x in ids], sorted(x["template_id"] for x in ids))
        self.assertEqual({x["action_example"]: x["template_id"] for x in ids}["focus on OBJ"], 11)
        combos, lut = env.get_possible_action_object_combinations()
        objs = env.get_possible_objects()
        self.assertEqual(sorted(lut.values()), objs)
        n = len(objs)
        slots = {x["template_id"]: x["action_example"].count("OBJ") for x in ids}
        self.assertEqual(len(combos), sum({0: 1, 1: n, 2: n * (n - 1)}[k] for k in slots.values()))
        moves = [c for c in combos if c["template_id"] == 9]
        self.assertEqual(len(moves), n * (n - 1))
        c = moves[0]
        self.assertEqual(c["action"], "move %s to %s" % (lut[str(c["obj_ids"][0])], lut[str(c["obj_ids"][1])]))
        self.assertEqual(len(c["type_ids"]), 2)
        self.assertEqual(env.getPossibleActionObjectCombinations()[1], lut)

    def test_goal_progress(self):
        env = self.env
        env.load("use-thermometer", 3)
        env.reset()
        text = env.get_goal_progress()
        self.assertTrue(text.startswith("Completed keys: \n" + "-" * 100 + "\nSequential Subgoals:\n"))
        rows = [line.split("\t") for line in text.split("\n") if line[:1].isdigit()]
        self.assertTrue(rows and all(r[1] == "false" for r in rows))
        for a in env.get_gold_action_sequence():
            _, _, done, info = env.step(a)
        self.assertEqual(info["score"], 100)
        text = env.getGoalProgressStr()
        seq = text.split("Sequential Subgoals:\n")[1].split("Unordered")[0]
        marks = [line.split("\t")[1] for line in seq.split("\n") if line[:1].isdigit()]
        self.assertEqual(marks, ["true"] * 3)                   # focus thermometer, focus object, box by temperature
        self.assertIn("move1", text.split("\n")[0])            # a keyed sub-goal (the object's room) done

    def test_gold_sequence_solves_the_task(self):
        env = self.env
        for task, var in (("boil", 0), ("find-living-thing", 200), ("chemistry-mix", 30)):
            with self.subTest(task=task):
                env.load(task, var, "")
                env.reset()
                gold = env.get_gold_action_sequence()
                self.assertTrue(gold)
                done, info = False, {}
                for a in gold:
                    _, _, done, info = env.step(a)
                self.assertTrue(done)
                self.assertEqual(info["score"], 100)

    def test_camel_case_aliases(self):
        env = self.env
        env.load("melt", 0)
        self.assertEqual(env.getTaskNames(), env.get_task_names())
        self.assertEqual(env.getMaxVariations("melt"), env.get_max_variations("melt"))
        self.assertEqual(env.getVariationsTest(), env.get_variations_test())
        self.assertEqual(env.getTaskDescription(), env.get_task_description())
        self.assertEqual(env.getGoldActionSequence(), env.get_gold_action_sequence())
        self.assertEqual(env.getPossibleActions(), env.get_possible_actions())
        env.load("1-3", 0)                              # an id names its task too
        self.assertEqual(env.task_name, env.tasks["1-3"])

    def test_errors(self):
        with self.assertRaises(multi2.Error):
            self.env.load("no-such-task", 0)
        with self.assertRaisesRegex(multi2.Error, "variations"):
            self.env.load("boil", 10 ** 5)
        fresh = ScienceWorldEnv()
        with self.assertRaises(multi2.Error):
            fresh.step("look around")
        fresh.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
