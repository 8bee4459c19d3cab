"""Shared by the trace scripts: makes a run reproducible."""

import os
import sys


def pin_hash_seed():
    """Re-runs this script with PYTHONHASHSEED=0 unless it already has it:
    uproot orders some of its work by hashing branch names, so both the
    file's layout and the order of a vector read's elements would otherwise
    change from run to run."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
