"""Loads libmulti2.so and declares the C API of src/env/multi2_env.h for ctypes.

Where the library is looked for, first hit wins:
  1. $MULTI2_LIB (the file itself);
  2. libmulti2.so beside this package (python/multi2/, e.g. after copying it there);
  3. build/libmulti2.so of the checkout this package sits in (what `make` writes).
The library is loaded on first use, so `import multi2` works without it.

ctypes.CDLL (not PyDLL) releases the GIL for the duration of every foreign call: threads that step
different environments run their C code in parallel.
"""
import ctypes
import os
import threading

API_VERSION = 3          # the M2E_API_VERSION this package was written against (2: m2e_inspect, 3: its
                         # ScienceWorld templates, action-object combinations and goal progress)

class m2e_result(ctypes.Structure):
    _fields_ = [
        ("observation", ctypes.c_char_p),
        ("reward", ctypes.c_double),
        ("score", ctypes.c_double),
        ("done", ctypes.c_int),
        ("won", ctypes.c_int),
        ("valid", ctypes.c_int),
        ("moves", ctypes.c_int),
    ]


_P = ctypes.c_void_p
_S = ctypes.c_char_p
_I = ctypes.c_int
# name: (restype, argtypes) — one line per function of multi2_env.h
_PROTOTYPES = {
    "m2e_api_version": (_I, []),
    "m2e_env_count": (_I, []),
    "m2e_env_name": (_S, [_I]),
    "m2e_create": (_P, [_S, _S, ctypes.c_char_p, ctypes.c_size_t]),
    "m2e_free": (None, [_P]),
    "m2e_error": (_S, [_P]),
    "m2e_name": (_S, [_P]),
    "m2e_score_max": (ctypes.c_double, [_P]),
    "m2e_unit_score": (ctypes.c_double, [_P, ctypes.c_double]),
    "m2e_num_tasks": (_I, [_P]),
    "m2e_task_name": (_S, [_P, _I]),
    "m2e_num_episodes": (_I, [_P, _S, _S]),
    "m2e_reset": (_I, [_P, _S, _S, _I, ctypes.c_uint64, ctypes.POINTER(m2e_result)]),
    "m2e_step": (_I, [_P, _S, ctypes.POINTER(m2e_result)]),
    "m2e_step_many": (_I, [ctypes.POINTER(_P), ctypes.POINTER(_S), _I, ctypes.POINTER(m2e_result)]),
    "m2e_observation": (_S, [_P]),
    "m2e_task_text": (_S, [_P]),
    "m2e_last": (_I, [_P, ctypes.POINTER(m2e_result)]),
    "m2e_admissible": (_I, [_P, ctypes.POINTER(ctypes.POINTER(_S)), ctypes.POINTER(_I)]),
    "m2e_oracle": (_I, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "m2e_describe": (_P, [_P, _S, _S, _I]),   # a malloc'd char*: kept as a pointer to free it
    "m2e_inspect": (_P, [_P, _S]),            # a malloc'd char* (JSON), as m2e_describe's
    "m2e_string_free": (None, [_P]),
}

_lock = threading.Lock()
_lib = None


def candidates():
    """The paths tried, in order (see the module text)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    if os.environ.get("MULTI2_LIB"):
        out.append(os.environ["MULTI2_LIB"])
    out.append(os.path.join(here, "libmulti2.so"))
    out.append(os.path.join(os.path.dirname(os.path.dirname(here)), "build", "libmulti2.so"))
    return out


def lib():
    """The loaded library (loaded once, thread-safe)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            tried = []
            for path in candidates():
                if os.path.exists(path):
                    handle = ctypes.CDLL(path)
                    break
                tried.append(path)
            else:
                raise OSError("multi2: libmulti2.so not found (run `make`, or set MULTI2_LIB); tried: "
                              + ", ".join(tried))
            for name, (res, args) in _PROTOTYPES.items():
                f = getattr(handle, name)
                f.restype = res
                f.argtypes = args
            got = handle.m2e_api_version()
            if got < API_VERSION:
                raise OSError("multi2: %s has C API version %d, this package needs %d" % (path, got, API_VERSION))
            _lib = handle
    return _lib


def enc(s):
    """str -> bytes for a char* argument (None stays NULL)."""
    return None if s is None else s.encode("utf-8")


def dec(b):
    """char* result -> str (the games write UTF-8; a stray byte never raises)."""
    return "" if b is None else b.decode("utf-8", "replace")
