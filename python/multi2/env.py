"""gymnasium-style environments over libmulti2: Env (one episode at a time) and VectorEnv (a batch,
stepped in one foreign call or by threads that run in parallel since ctypes releases the GIL).

    env = multi2.Env("alfworld", split="ood")
    obs, info = env.reset(seed=0, options={"index": 3})
    obs, reward, terminated, truncated, info = env.step(info["admissible_commands"][0])

Episodes: reset() without options walks the split in order (index 0, 1, 2, ... wrapping round);
options={"index": i} picks episode i, options may also set "split" and "task" (a task family,
see env.task_names()). The episode seed is `seed` when given; without it, the last seed given
plus the number of resets since (0 at the start), so a run is reproducible from its first seed.
The same (env, split, task, index, seed) and actions give the same text as the C library and
`multi2 play` give.
"""
import concurrent.futures
import string

from .core import Error, Handle, step_many

try:                                   # subclass gymnasium.Env when it is there, work without it
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:                    # pragma: no cover - depends on the machine
    _gym = None
    _spaces = None

TEXT_MAX = 1 << 16                     # the longest text the spaces describe (ScienceWorld's looks are long)
_Base = _gym.Env if _gym is not None else object


class Env(_Base):
    """One environment of libmulti2 with gymnasium's reset/step contract.

    Arguments: name ("textcraft", "alfworld", "scienceworld"); split ("train", "id", "ood"); task
    (a task family or None for all); data_path (None: the embedded data); max_steps (truncate
    after this many steps; None: never); admissible (put info["admissible_commands"] into every
    info; TextCraft's list is long, so a fast loop may switch it off)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, name, split="train", task=None, data_path=None, max_steps=None, admissible=True,
                 render_mode=None):
        self.env_name = name
        self.split = split
        self.task_family = task
        self.max_steps = max_steps
        self.want_admissible = admissible
        self.render_mode = render_mode
        self._h = Handle(name, data_path)
        self._next_index = 0
        self._seed_base = 0
        self._resets_since_seed = 0
        self._index = None
        self._seed = None
        self._obs = ""
        if _spaces is not None:
            chars = frozenset(string.printable)
            self.observation_space = _spaces.Text(max_length=TEXT_MAX, charset=chars)
            self.action_space = _spaces.Text(max_length=TEXT_MAX, charset=chars)

    # --- what the environment offers ---
    @property
    def handle(self):
        """The underlying core.Handle (task lists, describe, oracle)."""
        return self._h

    def task_names(self):
        return self._h.task_names()

    def num_episodes(self, split=None, task=None):
        return self._h.num_episodes(task if task is not None else self.task_family, split or self.split)

    def expert_action(self):
        """The expert oracle's next action from the current state (None when it has none)."""
        return self._h.oracle()

    # --- gymnasium ---
    def reset(self, *, seed=None, options=None):
        if _gym is not None:
            super().reset(seed=seed)
        options = dict(options or {})
        split = options.pop("split", self.split)
        task = options.pop("task", self.task_family)
        index = options.pop("index", None)
        if options:
            raise ValueError("reset: unknown options %s (known: index, split, task)" % sorted(options))
        self.split, self.task_family = split, task
        n = self._h.num_episodes(task, split)
        if n <= 0:
            raise Error("%s: split %s%s has no episodes" % (self.env_name, split, "/" + task if task else ""))
        if index is None:
            index = self._next_index % n
        if seed is not None:
            self._seed_base, self._resets_since_seed = int(seed), 0
        ep_seed = self._seed_base + self._resets_since_seed
        self._resets_since_seed += 1
        r = self._h.reset(task, split, int(index), ep_seed)
        self._next_index = int(index) + 1
        self._index, self._seed = int(index), ep_seed
        self._obs = r.observation
        return r.observation, self._info(r)

    def step(self, action):
        r = self._h.step(action)
        self._obs = r.observation
        truncated = bool(self.max_steps is not None and r.moves >= self.max_steps and not r.done)
        return r.observation, float(r.reward), r.done, truncated, self._info(r)

    def render(self):
        return self._obs

    def close(self):
        self._h.close()

    def _info(self, r):
        info = {
            "won": r.won,
            "score": r.score,
            "task": self._h.task_text(),
            "split": self.split,
            "index": self._index,
            "seed": self._seed,
            "moves": r.moves,
            "valid": r.valid,
            "task_family": self.task_family,
        }
        if self.want_admissible:
            info["admissible_commands"] = self._h.admissible()
        return info


def make(name, **kwargs):
    """multi2.make("textcraft", split="id") is multi2.Env("textcraft", split="id")."""
    return Env(name, **kwargs)


class VectorEnv:
    """n copies of one environment, reset and stepped together (verl-agent's and TextWorld's
    batched managers call them this way): lists in, lists out, one info dict per copy.

    threads=1 steps the whole batch in ONE foreign call; threads=k>1 splits it into k chunks
    stepped by k threads at once (ctypes releases the GIL, so the C code runs in parallel)."""

    def __init__(self, name, num_envs, threads=1, **kwargs):
        if num_envs < 1:
            raise ValueError("VectorEnv: num_envs must be >= 1")
        self.num_envs = num_envs
        self.envs = [Env(name, **kwargs) for _ in range(num_envs)]
        self.threads = max(1, min(int(threads), num_envs))
        self._pool = concurrent.futures.ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self._round = 0          # resets so far: copy i of round r takes episode r * num_envs + i

    def reset(self, *, seed=None, options=None):
        """seed: copy i gets seed + i. options: a dict for every copy, or a list of dicts; without
        an index, copy i takes episode i of the split (then i + n at the next reset, ...)."""
        opts = options if isinstance(options, (list, tuple)) else [dict(options or {}) for _ in self.envs]
        if len(opts) != self.num_envs:
            raise ValueError("VectorEnv.reset: %d option dicts for %d environments" % (len(opts), self.num_envs))
        obs, infos = [], []
        for i, (e, o) in enumerate(zip(self.envs, opts)):
            o = dict(o or {})
            if "index" not in o:
                n = e.num_episodes(o.get("split"), o.get("task"))
                o["index"] = (self._round * self.num_envs + i) % max(n, 1)
            ob, info = e.reset(seed=None if seed is None else seed + i, options=o)
            obs.append(ob)
            infos.append(info)
        self._round += 1
        return obs, infos

    def _step_chunk(self, lo, hi, actions):
        envs = self.envs[lo:hi]
        reps = step_many([e.handle for e in envs], actions[lo:hi])
        out = []
        for e, r in zip(envs, reps):
            e._obs = r.observation
            trunc = bool(e.max_steps is not None and r.moves >= e.max_steps and not r.done)
            out.append((r.observation, float(r.reward), r.done, trunc, e._info(r)))
        return out

    def step(self, actions):
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError("VectorEnv.step: %d actions for %d environments" % (len(actions), self.num_envs))
        if self._pool is None:
            res = self._step_chunk(0, self.num_envs, actions)
        else:
            k = self.threads
            bounds = [(self.num_envs * j // k, self.num_envs * (j + 1) // k) for j in range(k)]
            futs = [self._pool.submit(self._step_chunk, lo, hi, actions) for lo, hi in bounds]
            res = [x for f in futs for x in f.result()]
        obs, rew, term, trunc, infos = (list(c) for c in zip(*res))
        return obs, rew, term, trunc, infos

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()
        for e in self.envs:
            e.close()


class TextCraftEnv(Env):
    """multi2.Env("textcraft", ...)."""

    def __init__(self, **kwargs):
        super().__init__("textcraft", **kwargs)


class ALFWorldEnv(Env):
    """multi2.Env("alfworld", ...)."""

    def __init__(self, **kwargs):
        super().__init__("alfworld", **kwargs)


class ScienceWorldGymEnv(Env):
    """multi2.Env("scienceworld", ...) (ScienceWorld's own API: multi2.scienceworld.ScienceWorldEnv)."""

    def __init__(self, **kwargs):
        super().__init__("scienceworld", **kwargs)


# gymnasium.make("multi2/TextCraft-v0", split="id") and the like, when gymnasium is installed
GYM_IDS = {"multi2/TextCraft-v0": "multi2.env:TextCraftEnv", "multi2/ALFWorld-v0": "multi2.env:ALFWorldEnv",
           "multi2/ScienceWorld-v0": "multi2.env:ScienceWorldGymEnv"}
if _gym is not None:                   # pragma: no cover - depends on the machine
    for _id, _entry in GYM_IDS.items():
        if _id not in _gym.registry:
            _gym.register(id=_id, entry_point=_entry)
