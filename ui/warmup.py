"""Cold start: warm torch and the default model in the background, once per server process.

``streamlit run serve.py`` (README's command) calls :func:`start` from its ASGI lifespan, as the
server starts; ``streamlit run app.py`` has no server-start hook, so there the top of ``app.py``
calls it on the first visitor's run. It returns at once: first it imports numpy and pandas in the
caller's thread (see ``_shared_imports``), then a background task (the one mechanism,
``lmviz.server.tasks.Task``)

1. imports torch and names the device (:func:`device_name`: the sidebar badge reads
   "loading PyTorch…" until it is done),
2. loads the shipped default model (``lmviz.checkpoint.load_default`` is cached per process, so
   the pages' ``session.default_bundle()`` finds it ready), and
3. builds one optimizer (torch's first imports ``torch._dynamo``, 0.85 s).

The chapter's own title is drawn before any of that is needed (``render.page_header``; through
``serve.py`` it is already in the page the browser received, ``ui/first_paint.py``); a chapter
that needs the model waits for the same import, never for a second one.
"""
from __future__ import annotations

import sys
import threading

_TASK = None
_LOCK = threading.Lock()
_DEVICE: str | None = None     # the device's name, once the warm-up has imported torch


def _normal_priority() -> None:
    """Back to nice 0 for this thread where the OS allows it (root or CAP_SYS_NICE; else it stays
    at the Task's nice 19). A page thread that imports torch waits on this thread's import lock,
    so a warm-up at nice 19 on a busy server would slow the very page it is meant to speed up."""
    import os

    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 0)
    except (AttributeError, OSError):
        pass


def _warm(ctx) -> str:
    global _DEVICE
    _normal_priority()
    import lmviz

    _DEVICE = lmviz.device_name()          # torch import + device name (the sidebar badge)
    ctx.phase("model")
    from lmviz.checkpoint import load_default

    try:
        load_default()
    except Exception:  # noqa: BLE001 - a missing default model is reported by the pages themselves
        return "no default model"
    ctx.phase("optimizer")
    import torch

    # torch's first optimizer imports torch._dynamo: 0.85 s (and ~70 MB) that the loss chapter's
    # SGD step and every training's AdamW would otherwise wait for on their first use
    torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    return "warm"


def _shared_imports() -> None:
    """numpy and pandas, in the caller's thread, before any page can build a figure (also with the
    warm-up off): plotly looks pandas up in sys.modules without importing it (optional_imports),
    so a figure built while another thread imported pandas met a half-initialised module (a page's
    AttributeError traceback); numpy met the same between torch and plotly. pandas is what a
    page's first st.dataframe converts through: 0.24 s, once per process."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401


def start() -> None:
    """Start the warm-up once per server process; returns at once (safe to call on every run)."""
    global _TASK
    import os

    if _TASK is not None:
        return
    with _LOCK:
        _shared_imports()           # a second caller waits here until the first has imported
        if _TASK is None and os.environ.get("LMVIZ_WARMUP") != "0":   # 0: off (bench/startup.py)
            from lmviz.server.tasks import Task, limit_malloc_arenas

            limit_malloc_arenas()
            _TASK = Task(_warm, name="lmviz-warmup").start()


def device_name() -> str | None:
    """The device's name ("CPU" or the GPU's), or None while torch is still loading. With the
    warm-up off (LMVIZ_WARMUP=0) nothing loads torch in the background: the name comes once a
    page has imported torch itself."""
    if _DEVICE is None and _TASK is None and "torch" in sys.modules:
        import lmviz

        return lmviz.device_name()
    return _DEVICE


def state() -> str | None:
    """"warm" once torch and the default model are loaded, None before (or when never started)."""
    return _TASK.snapshot().result if _TASK is not None else None
