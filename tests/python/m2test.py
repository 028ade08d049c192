"""Shared helpers of the Python tests (run by CTest with PYTHONPATH=python, MULTI2_LIB, M2_BIN)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))


def multi2_bin():
    """The multi2 binary CTest names (M2_BIN), else build/multi2."""
    return os.environ.get("M2_BIN") or os.path.join(ROOT, "build", "multi2")


def run_multi2(args, stdin=None, timeout=120):
    return subprocess.run([multi2_bin()] + list(args), input=stdin, capture_output=True, text=True, timeout=timeout)
