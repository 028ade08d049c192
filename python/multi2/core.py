"""One C environment handle (multi2_env.h) as a Python object: the layer every other class of
the package stands on. Methods raise multi2.Error with the library's message on failure."""
import ctypes
import json

from . import _lib
from ._lib import dec, enc

SPLITS = ("train", "id", "ood")
ORACLE_CAP = 8192            # bytes for one expert action (the games' actions are far shorter)


class Error(RuntimeError):
    """A failure reported by libmulti2 (unknown environment, split, task or index, bad data)."""


def env_names():
    """The environments built into the library: ['textcraft', 'alfworld', 'scienceworld']."""
    L = _lib.lib()
    return [dec(L.m2e_env_name(i)) for i in range(L.m2e_env_count())]


class Step:
    """What reset and step report (a copy: it stays valid after the next call)."""
    __slots__ = ("observation", "reward", "score", "done", "won", "valid", "moves")

    def __init__(self, s):
        self.observation = dec(s.observation)
        self.reward = s.reward
        self.score = s.score
        self.done = bool(s.done)
        self.won = bool(s.won)
        self.valid = bool(s.valid)
        self.moves = s.moves

    def __repr__(self):
        return "Step(reward=%g, score=%g, done=%s, won=%s, moves=%d, observation=%r)" % (
            self.reward, self.score, self.done, self.won, self.moves, self.observation[:60])


class Handle:
    """An m2e_env*: create by name (and data path), reset by (task, split, index, seed), step."""

    def __init__(self, name, data_path=None):
        self._L = _lib.lib()
        buf = ctypes.create_string_buffer(1024)
        p = self._L.m2e_create(enc(name), enc(data_path), buf, len(buf))
        if not p:
            raise Error(dec(buf.value))
        self._p = ctypes.c_void_p(p)
        self.name = name
        self.data_path = data_path
        self._res = _lib.m2e_result()

    # --- lifetime ---
    def close(self):
        if getattr(self, "_p", None):
            self._L.m2e_free(self._p)
            self._p = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, rc):
        if rc != 0:
            raise Error(dec(self._L.m2e_error(self._p)))

    @property
    def ptr(self):
        if not self._p:
            raise Error("%s: the environment is closed" % self.name)
        return self._p

    # --- the task list ---
    @property
    def score_max(self):
        return self._L.m2e_score_max(self.ptr)

    def unit_score(self, score):
        return self._L.m2e_unit_score(self.ptr, float(score))

    def task_names(self):
        n = self._L.m2e_num_tasks(self.ptr)
        return [dec(self._L.m2e_task_name(self._p, i)) for i in range(n)]

    def num_episodes(self, task=None, split="train"):
        n = self._L.m2e_num_episodes(self.ptr, enc(task), enc(split))
        if n < 0:
            self._check(-1)
        return n

    def _json_of(self, p):
        """The JSON text a C call returned (NULL: its error), decoded, then freed."""
        if not p:
            self._check(-1)
        try:
            return json.loads(ctypes.string_at(p).decode("utf-8", "replace"))
        finally:
            self._L.m2e_string_free(p)

    def describe(self, task=None, split="train", index=0):
        return self._json_of(self._L.m2e_describe(self.ptr, enc(task), enc(split), int(index)))

    def inspect(self, what):
        """A JSON value about the current state (m2e_inspect: ScienceWorld's possible_actions,
        possible_actions_with_ids, possible_objects, action_object_combinations, object_tree,
        goal_progress, look, inventory), taking no game time."""
        return self._json_of(self._L.m2e_inspect(self.ptr, enc(what)))

    # --- playing ---
    def reset(self, task=None, split="train", index=0, seed=0):
        self._check(self._L.m2e_reset(self.ptr, enc(task), enc(split), int(index), int(seed) & (2**64 - 1),
                                      ctypes.byref(self._res)))
        return Step(self._res)

    def step(self, action):
        self._check(self._L.m2e_step(self.ptr, enc(action), ctypes.byref(self._res)))
        return Step(self._res)

    def last(self):
        self._check(self._L.m2e_last(self.ptr, ctypes.byref(self._res)))
        return Step(self._res)

    def observation(self):
        return dec(self._L.m2e_observation(self.ptr))

    def task_text(self):
        return dec(self._L.m2e_task_text(self.ptr))

    def admissible(self):
        lst = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_int()
        self._check(self._L.m2e_admissible(self.ptr, ctypes.byref(lst), ctypes.byref(n)))
        return [dec(lst[i]) for i in range(n.value)]

    def oracle(self):
        """The expert's next action, or None when it has none (episode over, or stuck)."""
        buf = ctypes.create_string_buffer(ORACLE_CAP)
        if self._L.m2e_oracle(self.ptr, buf, len(buf)) != 0:
            return None
        return dec(buf.value)


def step_many(handles, actions):
    """Steps handles[i] with actions[i] in ONE foreign call (the GIL is released throughout);
    returns the list of Step reports. Raises Error naming the first failed handle."""
    n = len(handles)
    if len(actions) != n:
        raise ValueError("step_many: %d environments but %d actions" % (n, len(actions)))
    L = _lib.lib()
    ptrs = (ctypes.c_void_p * n)(*[h.ptr for h in handles])
    acts = (ctypes.c_char_p * n)(*[enc(a if a is not None else "") for a in actions])
    out = (_lib.m2e_result * n)()
    failed = L.m2e_step_many(ptrs, acts, n, out)
    if failed:
        for h in handles:
            msg = dec(L.m2e_error(h.ptr))
            if msg:
                raise Error(msg)
        raise Error("step_many: %d steps failed" % failed)
    return [Step(out[i]) for i in range(n)]
