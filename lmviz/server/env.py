"""Numbers the server reads from its environment (``LMVIZ_*``): a positive value, else the default.

>>> import os; os.environ["LMVIZ_DOCTEST_N"] = " 3 "; env_count("LMVIZ_DOCTEST_N", 4)
3
>>> os.environ["LMVIZ_DOCTEST_N"] = "0"; env_count("LMVIZ_DOCTEST_N", 4), env_float("LMVIZ_DOCTEST_N", 0.5)
(4, 0.5)
>>> os.environ["LMVIZ_DOCTEST_N"] = "²"; env_count("LMVIZ_DOCTEST_N", 4), env_float("LMVIZ_DOCTEST_N", 0.5)
(4, 0.5)
"""
from __future__ import annotations

import os


def env_float(name: str, default: float) -> float:
    """A positive number from the environment (a backend's poll period, timeout, CPUs), else ``default``."""
    try:
        v = float(os.environ.get(name, ""))
        return v if v > 0 else default
    except ValueError:
        return default


def env_count(name: str, default: int) -> int:
    """A positive whole number from the environment (places, trainings, a gate's size), else ``default``."""
    try:
        v = int(os.environ.get(name, "").strip())
        return v if v > 0 else default
    except ValueError:
        return default
