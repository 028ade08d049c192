"""A look-alike of ScienceWorld's Python API (scienceworld.ScienceWorldEnv) over multi2's
ScienceWorld, answering to both spellings (load / get_task_names ... and the older camelCase
getTaskNames ... that GLIDER's and Multi²'s code use):

    from multi2.scienceworld import ScienceWorldEnv     # instead of: from scienceworld import ...
    env = ScienceWorldEnv("", envStepLimit=100)
    env.load("boil", 0, "")
    obs, info = env.reset()
    obs, reward, done, info = env.step("look around")   # info: score, moves, valid, look, ...

Variations: every task's variations 0..n-1 as in the original, split train / dev / test by index
(get_variations_train/dev/test). Differences from the Scala original: simplifications are accepted
and ignored (multi2's worlds are the original's default), getObjectTree holds what multi2 models of
each object, the goal-progress text words each sub-goal in multi2's words and the type ids of the
action-object combinations are multi2's object kinds (docs/python.md), and the gold sequence comes
from multi2's oracle (often shorter than the original's gold path; docs/scienceworld.md).
"""
from .core import Error, Handle

SPLIT_OF = {"train": "train", "dev": "id", "test": "ood"}
GOLD_MAX_STEPS = 1000        # the oracle ends far sooner; a bound so a stuck expert cannot loop


class ScienceWorldEnv:
    def __init__(self, taskName="", serverPath=None, envStepLimit=100, data_path=None):
        self._h = Handle("scienceworld", data_path)
        self._scratch = None
        self.env_step_limit = int(envStepLimit)
        names = self._h.task_names()
        self._ranges = {}          # task -> {split: (first variation, count)}
        self.tasks = {}            # "1-1": "boil", ... (the original's task dict, id order)
        for t in names:
            d = self._h.describe(t, "train", 0)
            self.tasks[d["task_id"]] = t
        self.task_names = list(self.tasks.values())
        self.task_name = None
        self.variation = None
        self.simplifications = ""
        self._last = None
        if taskName:
            self.load(taskName, 0, "")

    # --- the task table ---
    def _split_ranges(self, task):
        if task not in self._ranges:
            if task not in self.task_names:
                raise Error("scienceworld: unknown task %r (see get_task_names())" % task)
            r = {}
            for sw, m2 in SPLIT_OF.items():
                n = self._h.num_episodes(task, m2)
                first = self._h.describe(task, m2, 0)["variation"] if n else 0
                r[sw] = (first, n)
            self._ranges[task] = r
        return self._ranges[task]

    def get_task_names(self):
        return list(self.task_names)

    def get_max_variations(self, task_name):
        return max(first + n for first, n in self._split_ranges(task_name).values())

    def _variations(self, which):
        if self.task_name is None:
            raise Error("scienceworld: load a task first")
        first, n = self._split_ranges(self.task_name)[which]
        return list(range(first, first + n))

    def get_variations_train(self):
        return self._variations("train")

    def get_variations_dev(self):
        return self._variations("dev")

    def get_variations_test(self):
        return self._variations("test")

    def get_random_variation_train(self):
        import random
        return random.choice(self.get_variations_train())

    def _locate(self, task, variation):
        """(task, variation) -> (multi2 split, index in it)."""
        for sw in ("train", "dev", "test"):
            first, n = self._split_ranges(task)[sw]
            if first <= variation < first + n:
                return SPLIT_OF[sw], variation - first
        raise Error("scienceworld: task %s has variations 0..%d, not %d" % (task, self.get_max_variations(task) - 1, variation))

    # --- episodes ---
    def load(self, taskName, variationIdx=0, simplificationStr="", generateGoldPath=False):
        if taskName in self.tasks:            # an id such as "1-1" also names a task
            taskName = self.tasks[taskName]
        split, index = self._locate(taskName, int(variationIdx))
        self.task_name, self.variation, self.simplifications = taskName, int(variationIdx), simplificationStr or ""
        self._episode = (taskName, split, index)
        self._last = self._h.reset(taskName, split, index, 0)
        self._gold = None

    def reset(self):
        if self.task_name is None:
            raise Error("scienceworld: load a task first")
        self._last = self._h.reset(*self._episode, 0)
        return self._last.observation, self._info(self._last)

    def step(self, inputStr):
        if self.task_name is None:
            raise Error("scienceworld: load a task first")
        r = self._h.step(inputStr)
        self._last = r
        done = r.done or r.moves >= self.env_step_limit
        return r.observation, float(r.reward), bool(done), self._info(r)

    def _info(self, r):
        """The original's info dict; "valid" is its list of valid action-object combinations."""
        return {"moves": r.moves, "score": int(round(r.score)), "reward": float(r.reward), "look": self.look(),
                "inv": self.inventory(), "taskDesc": self.get_task_description(),
                "valid": self.get_valid_action_object_combinations(), "variationIdx": self.variation,
                "taskName": self.task_name, "simplificationStr": self.simplifications}

    def get_task_description(self):
        return self._h.task_text()

    taskdescription = get_task_description

    def get_possible_actions(self):
        """The action templates ("open OBJ", "move OBJ to OBJ", ...), sorted."""
        return self._h.inspect("possible_actions")

    def get_possible_actions_with_IDs(self):
        return self._h.inspect("possible_actions_with_ids")

    def get_possible_action_object_combinations(self):
        """(every template filled with every ordered choice of possible objects, {object id: referent})."""
        d = self._h.inspect("action_object_combinations")
        return d["templates"], d["lookUpTable"]

    def get_valid_action_object_combinations(self):
        """The admissible actions, sorted as the original's."""
        return sorted(self._h.admissible())

    def get_goal_progress(self):
        """The goal sequence with each sub-goal's done mark (the original's getGoalProgressStr)."""
        return self._h.inspect("goal_progress")

    def get_possible_objects(self):
        return self._h.inspect("possible_objects")

    def get_object_tree(self):
        return self._h.inspect("object_tree")

    def look(self):
        """The free action: what "look around" answers, without a move."""
        return self._h.inspect("look")

    def inventory(self):
        return self._h.inspect("inventory")

    def get_num_moves(self):
        return self._last.moves if self._last else 0

    def get_gold_action_sequence(self):
        """The oracle's actions from the start of the loaded episode to its end."""
        if self.task_name is None:
            raise Error("scienceworld: load a task first")
        if self._gold is None:
            if self._scratch is None:
                self._scratch = Handle("scienceworld", self._h.data_path)
            r = self._scratch.reset(*self._episode, 0)
            gold = []
            while not r.done and len(gold) < GOLD_MAX_STEPS:
                a = self._scratch.oracle()
                if a is None:
                    break
                gold.append(a)
                r = self._scratch.step(a)
            self._gold = gold
        return list(self._gold)

    def close(self):
        self._h.close()
        if self._scratch is not None:
            self._scratch.close()

    # --- the older camelCase spellings ---
    getTaskNames = get_task_names
    getMaxVariations = get_max_variations
    getVariationsTrain = get_variations_train
    getVariationsDev = get_variations_dev
    getVariationsTest = get_variations_test
    getRandomVariationTrain = get_random_variation_train
    getTaskDescription = get_task_description
    getPossibleActions = get_possible_actions
    getPossibleActionsWithIDs = get_possible_actions_with_IDs
    getPossibleActionObjectCombinations = get_possible_action_object_combinations
    getGoalProgressStr = get_goal_progress
    getPossibleObjects = get_possible_objects
    getObjectTree = get_object_tree
    getValidActionObjectCombinations = get_valid_action_object_combinations
    getGoldActionSequence = get_gold_action_sequence
    getNumMoves = get_num_moves
    shutdown = close
