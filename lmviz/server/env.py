"""Numbers and addresses the server reads from its environment (``LMVIZ_*``): a positive value,
else the default; a list of addresses, else none.

>>> import os; os.environ["LMVIZ_DOCTEST_N"] = " 3 "; env_count("LMVIZ_DOCTEST_N", 4)
3
>>> os.environ["LMVIZ_DOCTEST_N"] = "0"; env_count("LMVIZ_DOCTEST_N", 4), env_float("LMVIZ_DOCTEST_N", 0.5)
(4, 0.5)
>>> os.environ["LMVIZ_DOCTEST_N"] = "²"; env_count("LMVIZ_DOCTEST_N", 4), env_float("LMVIZ_DOCTEST_N", 0.5)
(4, 0.5)
>>> os.environ["LMVIZ_DOCTEST_A"] = " 127.0.0.1, ::1 ,nginx, 10.0.0.02"; sorted(env_addresses("LMVIZ_DOCTEST_A"))
['127.0.0.1', '::1']
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
    """A positive whole number from the environment (trainings, a gate's size), else ``default``."""
    try:
        v = int(os.environ.get(name, "").strip())
        return v if v > 0 else default
    except ValueError:
        return default


def env_addresses(name: str) -> frozenset[str]:
    """The IP addresses in a comma-separated list from the environment (the proxies a replica
    trusts), each as :mod:`ipaddress` writes it; entries that are not an address are left out."""
    import ipaddress

    out = set()
    for raw in os.environ.get(name, "").split(","):
        try:
            out.add(str(ipaddress.ip_address(raw.strip())))
        except ValueError:
            continue
    return frozenset(out)
