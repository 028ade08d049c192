"""A look-alike of ALFWorld's Python API (alfworld.agents.environment) over multi2's ALFWorld:

    from multi2.alfworld import get_environment        # instead of alfworld.agents.environment
    env = get_environment("AlfredTWEnv")(config, train_eval="eval_out_of_distribution")
    env = env.init_env(batch_size=4)
    obs, infos = env.reset()                            # obs: list[str]; infos: dict of lists
    obs, scores, dones, infos = env.step(commands)      # one command per batch slot

`config` is ALFWorld's YAML as a dict (only env.task_types and, when given, dataset.data_path /
multi2.data_path are read; None is fine). train_eval: "train" (the training scenes), 
"eval_in_distribution" (valid_seen: multi2's id split) or "eval_out_of_distribution" (valid_unseen:
ood). infos holds, per batch slot: admissible_commands, won, extra.gamefile (a name of the form
multi2/alfworld/<split>/<task type>/<index>/game.tw-pddl: the task type and the episode index are
its 3rd- and 2nd-last parts, as AgentGym reads them), expert_plan (the oracle's next action, as
a one-element list) and moves. Games are played in index order (train: a seeded shuffle, like
ALFWorld's training mode); a batch slot whose game is over keeps answering until the next reset.
"""
import random

from .core import Error, Handle

TRAIN_EVAL = {"train": "train", "eval_in_distribution": "id", "eval_out_of_distribution": "ood"}
# ALFWorld's config numbers task types 1..6 in this order (alfworld/agents/environment/alfred_tw_env.py)
TASK_TYPES = {1: "pick_and_place_simple", 2: "look_at_obj_in_light", 3: "pick_clean_then_place_in_recep",
              4: "pick_heat_then_place_in_recep", 5: "pick_cool_then_place_in_recep", 6: "pick_two_obj_and_place"}


def _get(cfg, *keys):
    for k in keys:
        if not isinstance(cfg, dict) or k not in cfg:
            return None
        cfg = cfg[k]
    return cfg


class AlfredTWEnv:
    """ALFWorld's TextWorld environment factory: holds the game list of a split."""

    def __init__(self, config=None, train_eval="train"):
        if train_eval not in TRAIN_EVAL:
            raise ValueError("train_eval must be one of %s, not %r" % (sorted(TRAIN_EVAL), train_eval))
        self.config = config or {}
        self.train_eval = train_eval
        self.split = TRAIN_EVAL[train_eval]
        self.data_path = _get(self.config, "multi2", "data_path")
        self._probe = Handle("alfworld", self.data_path)
        types = _get(self.config, "env", "task_types") or sorted(TASK_TYPES)
        known = set(self._probe.task_names())
        self.task_types = []
        for t in types:
            name = TASK_TYPES.get(t, t)
            if name not in known:
                raise ValueError("env.task_types: unknown task type %r (known: 1..6 or %s)" % (t, sorted(known)))
            self.task_types.append(name)
        every = sorted(TASK_TYPES.values()) == sorted(self.task_types)
        # (task family or None, index): the whole split at once when every type is asked for
        if every:
            self.games = [(None, i) for i in range(self._probe.num_episodes(None, self.split))]
        else:
            self.games = [(t, i) for t in self.task_types for i in range(self._probe.num_episodes(t, self.split))]
        self.num_games = len(self.games)
        self._files = {}
        self._seed = 0

    def gamefile(self, g):
        """The name of game g (computed on first use: it needs the task type)."""
        if g not in self._files:
            task, index = self.games[g]
            d = self._probe.describe(task, self.split, index)
            self._files[g] = "multi2/alfworld/%s/%s_%05d/game.tw-pddl" % (d.get("task_type", task or "all"), self.split, index)
        return self._files[g]

    @property
    def game_files(self):
        return [self.gamefile(g) for g in range(self.num_games)]

    def seed(self, num):
        self._seed = int(num)
        return [self._seed]

    def init_env(self, batch_size):
        if batch_size < 1:
            raise ValueError("init_env: batch_size must be >= 1")
        return AlfredBatchEnv(self, batch_size, self._seed)


class AlfredBatchEnv:
    """What init_env returns: TextWorld's batched reset/step with list-valued infos."""

    def __init__(self, parent, batch_size, seed):
        self.parent = parent
        self.batch_size = batch_size
        self.handles = [Handle("alfworld", parent.data_path) for _ in range(batch_size)]
        self.order = list(range(parent.num_games))
        self.rng = random.Random(seed)
        if parent.split == "train":
            self.rng.shuffle(self.order)
        self.cursor = 0
        self.current = [None] * batch_size
        self.resets = 0
        self.seed_base = seed

    def seed(self, num):
        self.seed_base = int(num)
        self.rng = random.Random(num)

    def reset(self):
        if not self.order:
            raise Error("alfworld: no games in split %s for task types %s" % (self.parent.split, self.parent.task_types))
        obs = []
        for b, h in enumerate(self.handles):
            g = self.order[self.cursor % len(self.order)]
            self.cursor += 1
            task, index = self.parent.games[g]
            r = h.reset(task, self.parent.split, index, self.seed_base + self.resets)
            self.current[b] = g
            obs.append(r.observation)
        self.resets += 1
        self.last = [h.last() for h in self.handles]
        return obs, self._infos()

    def step(self, commands):
        commands = list(commands)
        if len(commands) != self.batch_size:
            raise ValueError("step: %d commands for batch size %d" % (len(commands), self.batch_size))
        obs, scores, dones = [], [], []
        for b, (h, c) in enumerate(zip(self.handles, commands)):
            r = h.step(c) if not self.last[b].done else self.last[b]
            self.last[b] = r
            obs.append(r.observation)
            scores.append(float(r.score))
            dones.append(bool(r.done))
        return obs, scores, dones, self._infos()

    def _infos(self):
        return {
            "admissible_commands": [h.admissible() for h in self.handles],
            "won": [bool(r.won) for r in self.last],
            "extra.gamefile": [self.parent.gamefile(g) for g in self.current],
            "expert_plan": [[a] if a else [] for a in (h.oracle() for h in self.handles)],
            "moves": [r.moves for r in self.last],
        }

    def close(self):
        for h in self.handles:
            h.close()


_ENVS = {"AlfredTWEnv": AlfredTWEnv}


def get_environment(env_type):
    """get_environment("AlfredTWEnv") -> the class (ALFWorld's THOR and hybrid worlds are not here)."""
    if env_type not in _ENVS:
        raise ValueError("multi2.alfworld: environment %r is not available (multi2 has %s)" % (env_type, sorted(_ENVS)))
    return _ENVS[env_type]
