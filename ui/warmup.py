"""Cold start: warm torch and the default model in the background, once per server process.

``streamlit run serve.py`` (README's command) calls :func:`start` from its ASGI lifespan, as the
server starts; ``streamlit run app.py`` has no server-start hook, so there the top of ``app.py``
calls it on the first visitor's run. It returns at once: first it imports numpy and pandas in the
caller's thread (see ``_shared_imports``), then a background task (the one mechanism,
``lmviz.server.tasks.Task``)

1. imports torch and names the device (:func:`device_name`: the sidebar badge reads
   "loading PyTorch…" until it is done),
2. loads the shipped default model (``lmviz.checkpoint.load_default`` is cached per process, so
   the pages' ``session.default_bundle()`` finds it ready),
3. builds one optimizer (torch's first imports ``torch._dynamo``, 0.85 s),
4. compresses Streamlit's frontend files for serve.py (``lmviz.server.frontend_gzip.warm``; at
   nice 19 from here on),
5. visits every chapter once in each language, as a student who skips the questions does
   (:func:`_visit_views`): the chapters' default views of the shipped model -- the traces,
   tables and figures a first visit draws -- land in the per-process caches every session shares
   (``st.cache_data`` / ``st.cache_resource``, keyed by model and inputs), so the first student
   of a chapter finds them computed. The visitor is a websocket session of the server's own
   (``ui.headless``, 127.0.0.1 only); its script runs go at nice 19 (:func:`lower_if_warm_visit`),
   one chapter at a time, so a room arriving during the visit keeps the CPU;
6. after steps 3 and 5, sets what the process holds aside from Python's cycle collector
   (:func:`_keep_out_of_collections`): a full collection of the whole heap held every session
   for 0.3 s.

The chapter's own title is drawn before any of that is needed (``render.page_header``; through
``serve.py`` it is already in the page the browser received, ``ui/first_paint.py``); a chapter
that needs the model waits for the same import, never for a second one.
"""
from __future__ import annotations

import math
import os
import secrets
import sys
import threading
import time

_TASK = None
_LOCK = threading.Lock()
_DEVICE: str | None = None     # the device's name, once the warm-up has imported torch
WARM_HEADER = "X-Lmviz-Warm-Visit"          # the warm visitor's websocket request carries this header...
_WARM_TOKEN = secrets.token_urlsafe(16)     # ...with this per-process value (a stranger's header is ignored)
VISITS: dict[str, float] = {}  # "slug?lang=xx" -> seconds the warm visit of that chapter took (nan: failed)


def _normal_priority() -> None:
    """Back to nice 0 for this thread where the OS allows it (root or CAP_SYS_NICE; else it stays
    at the Task's nice 19). A page thread that imports torch waits on this thread's import lock,
    so a warm-up at nice 19 on a busy server would slow the very page it is meant to speed up."""
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
    _keep_out_of_collections()
    ctx.phase("frontend")
    from lmviz.server import frontend_gzip

    _lower_this_thread()
    frontend_gzip.warm(ctx.cancelled)      # serve.py's compressed frontend files (1-2 s of CPU)
    if os.environ.get("LMVIZ_WARM_VIEWS") != "0":      # 0: torch and the model only
        ctx.phase("views")
        _visit_views(ctx)
    _keep_out_of_collections()
    return "warm"


def _keep_out_of_collections() -> None:
    """What the process holds by now (modules, torch, the model; after the warm visit, the default
    views' caches: ~490,000 objects Python's cycle collector tracks) is set aside for the rest of
    the process (``gc.freeze``, after one collection, so no garbage is set aside): the collector
    then looks only at what sessions made since. Python starts a full collection on its own as
    new objects pile up, and one over the whole heap held the interpreter, every session's run
    with it, for 0.3-0.37 s (a replay scrub step took 0.63 s instead of 0.35; any session's move
    could meet one). What is set aside is never collected as a cycle: a cached figure evicted
    later stays in memory, at most what was in use here (bounded, and already resident)."""
    import gc

    gc.collect()
    gc.freeze()


def _server_port() -> int | None:
    """This process's Streamlit port, or None when it is not a running server (AppTest's runs use
    a stand-in Runtime, and after them none: a test's warm-up must not visit a server of another
    process that happens to listen on the default port)."""
    from streamlit import config
    from streamlit.runtime import Runtime

    if not Runtime.exists() or type(Runtime.instance()) is not Runtime:
        return None
    port = config.get_option("server.port")
    return int(port) if port else None


def _visit_views(ctx) -> None:
    """Open every chapter in each language as one headless session of this server's own, skip
    its questions (the sections they hold back are drawn) and close; one chapter at a time, at
    nice 19 on both sides (this thread, and the visitor's script runs). Records each visit's time
    in VISITS; a server that is not reachable (yet) is waited for up to a minute, then left."""
    import asyncio

    from ui.chapters import registered
    from ui.headless import Session
    from ui.i18n import LANGS

    _lower_this_thread()
    headers = {WARM_HEADER: _WARM_TOKEN}
    port = None

    async def visit(slug: str, lang: str) -> None:
        async with Session(port, slug, f"lang={lang}", auto_rerun=False, headers=headers) as s:
            await s.wait_idle(timeout=120)
            await s.skip_questions(timeout=120)
            if s.errors:
                raise RuntimeError(s.errors[0])

    async def reachable() -> bool:
        nonlocal port
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ctx.cancelled():
            port = _server_port()
            try:
                if port is not None:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    return True
            except OSError:
                pass
            await asyncio.sleep(0.5)
        return False

    async def visit_all() -> None:
        if not await reachable():
            return
        t_all = time.perf_counter()
        for lang in LANGS:
            for c in registered():
                if ctx.cancelled():
                    return
                t0 = time.perf_counter()
                try:
                    await visit(c.slug, lang)
                    VISITS[f"{c.slug}?lang={lang}"] = time.perf_counter() - t0
                except Exception:  # noqa: BLE001 - a chapter that fails here fails for its visitor too, and says so there
                    VISITS[f"{c.slug}?lang={lang}"] = math.nan
        failed = sorted(k for k, v in VISITS.items() if math.isnan(v))
        done = {k: v for k, v in VISITS.items() if not math.isnan(v)}
        slowest = max(done, key=done.get, default="")
        # one line in the server's log (bench/startup.py and tests/test_warmup.py read it)
        print(f"lmviz warm visit: {len(done)} views in {time.perf_counter() - t_all:.1f} s"
              + (f", slowest /{slowest} {done[slowest]:.2f} s" if slowest else "")
              + f"; failed: {', '.join('/' + k for k in failed) or 'none'}", file=sys.stderr, flush=True)

    asyncio.run(visit_all())


def _lower_this_thread() -> None:
    """This thread at a task's nice (19; ``lmviz.server.tasks.lower_priority``, the one way)."""
    from lmviz.server.tasks import lower_priority

    lower_priority()


def lower_if_warm_visit(headers) -> bool:
    """Called at the top of every run (app.py): the server's own warm visitor's runs go at nice 19
    (each run has a thread of its own, so nothing else is slowed). True for that visitor."""
    if not secrets.compare_digest(str(headers.get(WARM_HEADER) or ""), _WARM_TOKEN):
        return False
    _lower_this_thread()
    return True


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
