"""multi2's environments (TextCraft, ALFWorld, ScienceWorld: C, in-process, deterministic) for
Python RL stacks, over libmulti2.so with ctypes. Nothing outside Python's standard library is
needed; gymnasium is used when it is installed. See docs/python.md.

    import multi2
    env = multi2.Env("textcraft", split="id")            # gymnasium-style
    vec = multi2.VectorEnv("alfworld", 8, threads=2)     # batched
    from multi2.alfworld import get_environment          # ALFWorld's API
    from multi2.scienceworld import ScienceWorldEnv      # ScienceWorld's API
"""
from .core import Error, Handle, Step, env_names, step_many
from .env import ALFWorldEnv, Env, ScienceWorldGymEnv, TextCraftEnv, VectorEnv, make

__all__ = ["Env", "VectorEnv", "make", "TextCraftEnv", "ALFWorldEnv", "ScienceWorldGymEnv", "Error", "Handle", "Step", "env_names", "step_many"]
__version__ = "0.1.0"
