"""lmviz core: a small GPT-style language model and the pure functions that explain it.

This package imports torch and numpy only -- never streamlit or plotly -- so every function
here can be tested, benchmarked and reused outside the app. Functions return records
(dataclasses, tensors, lists) instead of printing.

Thread policy (a shared 2-core server): torch's intra-op pool collapses when another process
takes a core (a training step went from ~70 ms to ~256 ms here), while one thread per process
stays steady (~108 ms). So the pool size is set once, on first import, to
``LMVIZ_THREADS`` if given, else half the cores (at least 1): on a 2-core server that leaves a
core for the Streamlit server; on a laptop it still uses several cores.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ASSETS", "device", "set_threads", "torch_threads"]

ASSETS = Path(__file__).resolve().parent.parent / "assets"   # corpora, catalogues, the default model

_THREADS_SET = False


def torch_threads() -> int:
    """Number of intra-op threads lmviz asks torch for (see the module docstring)."""
    env = os.environ.get("LMVIZ_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, (os.cpu_count() or 2) // 2)


def set_threads() -> int:
    """Set torch's thread count once per process, before any torch op; returns it."""
    global _THREADS_SET
    import torch

    n = torch_threads()
    if not _THREADS_SET:
        torch.set_num_threads(n)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set, or parallel work already started
            pass
        _THREADS_SET = True
    return n


def device():
    """The torch device lmviz computes on: CUDA when present, else CPU.

    >>> str(device()) in ("cpu", "cuda")
    True
    """
    import torch

    set_threads()
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_name() -> str:
    """Human-readable name of :func:`device` ("CPU" or the CUDA device's name)."""
    import torch

    if device().type == "cuda":
        return torch.cuda.get_device_name(0)
    return "CPU"
