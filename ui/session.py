"""What pages share: the models (shipped default and this session's), the
background tasks (the server-wide cap, this session's training, the polling fragment).
The one place pages get shared objects from.

- ``default_bundle()`` is the shipped default model, shared by all users (read-only, eval mode,
  used under ``no_grad``: thread-safe).
- ``live_bundle()`` is the model the chapters show: the one chosen in the sidebar's model menu
  (``model_menu``: the shipped model, this session's trained one, or a pretrained folder of
  ``LMVIZ_MODEL_DIR`` or the Hugging Face cache, see ``lmviz.hf``), else the default.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import streamlit as st


# ---------------------------------------------------------------- models ----------------
@dataclass(frozen=True)
class Bundle:
    """A model with what the pages need beside it."""

    model: Any        # lmviz.model.GPT, eval mode
    tokenizer: Any    # lmviz.tokenizer tokenizer
    meta: dict        # training record: corpus, steps, losses, ... (pretrained: family, name, path)
    source: str       # "default", "session" (trained or uploaded here) or "pretrained" (lmviz.hf)


@st.cache_resource(show_spinner=False)
def default_bundle() -> Bundle:
    """The shipped default model (loaded once per server, shared read-only)."""
    global _DEFAULT_READY
    from lmviz.checkpoint import load_default

    model, tokenizer, meta = load_default()
    _DEFAULT_READY = True
    return Bundle(model, tokenizer, meta, "default")


_DEFAULT_READY = False      # True once default_bundle() has returned in this process


def live_bundle() -> Bundle:
    """The model the chapters show: this session's trained model if any, else the default.
    On a fresh server the first page that needs it says so while it loads (below the chapter's
    title, which is already drawn)."""
    bundle = st.session_state.get("lmviz_session_bundle")
    if bundle is not None:
        return bundle
    if not _DEFAULT_READY:
        from ui.i18n import t

        with st.spinner(t("common.loading_model")):
            return default_bundle()
    return default_bundle()


def try_live_bundle(message_key: str | None = None) -> Bundle | None:
    """``live_bundle()``, or None when no model can be loaded (a missing or unreadable default
    checkpoint must not crash a page); with ``message_key`` the page says why (``{err}``)."""
    try:
        return live_bundle()
    except Exception as e:  # noqa: BLE001 - shown to the user instead of a traceback
        if message_key:
            import html

            from ui.i18n import said, t

            from lmviz.server.tasks import human_message

            st.warning(t(message_key, err=html.escape(said(human_message(e))[:200])))
        return None


# the chapters' shipped toy models: name -> (module, loader, its arguments...); each loads a few
# hundred kilobytes
TOYS = {"kv": ("lmviz.chapters.kv_cache", "load_toy"),
        "pronoun": ("lmviz.chapters.attention_pronoun", "load_toy"),
        "reader": ("lmviz.chapters.beyond_reader", "load_reader"),
        "base_en": ("lmviz.chapters.post_training", "load_base", "en"),
        "base_zh": ("lmviz.chapters.post_training", "load_base", "zh")}
TOY_OR_LIVE = ("toy", "live")


@st.cache_resource(show_spinner=False)
def toy(name: str):
    """The shipped toy model ``name`` (an ``lmviz.train.Toy``), loaded once per process and
    shared read-only by every session."""
    from importlib import import_module

    module, loader, *args = TOYS[name]
    return getattr(import_module(module), loader)(*args)


def toy_or_live(name: str, label: str, option_names: dict, *, key: str, missing_key: str, live):
    """A section that asks either toy ``name`` or the live model: the choice (a radio, ``key``),
    then (choice, model, tokenizer, cache key, the live bundle or None); None when the chosen
    model cannot be had (a toy that fails to load says so with ``missing_key``; ``live()``
    returns the live bundle or None, having said why)."""
    import html

    from ui.i18n import t

    src = st.radio(label, TOY_OR_LIVE, horizontal=True, key=key, format_func=option_names.get)
    if src == "toy":
        try:
            m = toy(name)
        except (OSError, ValueError) as e:
            st.error(t(missing_key, err=html.escape(str(e)[:200])))
            return None
        return src, m.model, m.tokenizer, f"toy:{name}", None
    b = live()
    if b is None:
        return None
    return src, b.model, b.tokenizer, model_key(b), b


def shared_name(bundle: Bundle) -> str | None:
    """The model's id (lmviz.hf.model_ids), the name under which every session of this server (in
    any process) loads this same model, a link's ``?model=`` and a class's: "default" for the
    shipped one, a pretrained model's id while this server lists it; None for a model only this
    session holds (trained or uploaded here)."""
    from lmviz.hf import DEFAULT_ID

    if bundle.source == "default":
        return DEFAULT_ID
    if bundle.source == "pretrained":
        path = str(bundle.meta.get("path", ""))
        return next((k for k, p in pretrained_ids().items() if p == path), None)
    return None


def bundle_named(name: str) -> Bundle | None:
    """The model :func:`shared_name` calls ``name`` (an id another session published, e.g. a
    lecturer's): the shipped model, or a pretrained model this server lists; None for any other
    name or a model that cannot be loaded. A pretrained model is loaded here only when it comes
    at once (``ModelCache.quick``: in this process, or small): a longer load is the model menu's
    task, and a follower's menu takes the lecturer's model before its page asks for it."""
    from lmviz.hf import DEFAULT_ID
    from lmviz.hf_shared import MODELS
    from lmviz.server.tasks import InlineContext

    try:
        if name == DEFAULT_ID:
            return default_bundle()
        path = pretrained_ids().get(name)
        if path is not None and MODELS.quick(path):
            return _load_bundle(path, InlineContext(LOAD_INLINE_S))
    except Exception:  # noqa: BLE001 - a missing default, a refused folder, a load too long: the page says so
        return None
    return None


_SERIALS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # model -> its number in this process
_SERIALS_LOCK = threading.Lock()
_NEXT_SERIAL = itertools.count(1)


def model_key(bundle: Bundle) -> str:
    """A cache key that changes when the live model changes (default vs this session's), the same
    for every session showing one shared model. A number given to each model object, not its
    ``id()``: a freed model's address is reused by the next one (a pretrained copy is freed when
    no session holds it), and a key made of it would hand the new model the old one's results."""
    with _SERIALS_LOCK:
        n = _SERIALS.get(bundle.model)
        if n is None:
            n = _SERIALS[bundle.model] = next(_NEXT_SERIAL)
    return f"{bundle.source}:{n}"


@st.cache_resource(max_entries=64, show_spinner=False)
def trace(_model, model_key: str, ids: tuple[int, ...]):
    """The model's explicit forward pass over ``ids`` (``lmviz.model.GPT.forward_trace``: every
    step kept), computed once per process for the same model (``model_key``) and ids and shared by
    every session (read-only). The one way a page gets a model's trace."""
    import torch

    return _model.forward_trace(torch.tensor(ids, dtype=torch.long))


@st.cache_resource(max_entries=32, show_spinner=False)
def _next_logits(key: str, ids: tuple, _model):
    from lmviz.sampling import next_logits

    return next_logits(_model, list(ids))


def next_logits(bundle: Bundle, ids) -> "torch.Tensor":
    """lmviz.sampling.next_logits of the bundle's model after ``ids``, computed once per process
    for the same model and ids and shared by every session (read-only: a room opening /generation
    asks for the same prompt's logits 30 times). 32 entries: a pretrained vocabulary's logits are
    ~0.6 MB each."""
    return _next_logits(model_key(bundle), tuple(int(i) for i in ids), bundle.model)


def set_session_bundle(bundle: Bundle | None) -> None:
    """Make ``bundle`` the model every chapter shows in this session (None: back to default).
    A trained or uploaded one is also kept as the menu's "trained" entry."""
    st.session_state["lmviz_session_bundle"] = bundle
    if bundle is not None and bundle.source == "session":
        st.session_state["lmviz_trained_bundle"] = bundle


# ---------------------------------------------------------------- pretrained models -----------
@st.cache_data(ttl=30, show_spinner=False)
def pretrained_models() -> list:
    """The pretrained model folders on this machine (lmviz.hf.find_models; config.json only)."""
    from lmviz.hf import find_models

    return find_models()


LOAD_PURPOSE = "pretrained-load"   # this session's task slot for a pretrained model's load
LOAD_INLINE_S = 0.5                # a small folder's load is tried on the script's thread this long, then on a task
LOADING_KEY = "lmviz_model_loading"   # session key: the id of the pretrained model loading on a task


def pretrained_load(path: str):
    """The snapshot of this session's load of a pretrained folder: "done" with its Bundle as
    result when the copy is already in this process, or is small (``ModelCache.quick``) and
    loads within LOAD_INLINE_S on the script's thread; else a task's (lmviz.server.tasks; its
    progress is the parameters read) that goes on without holding a script thread: SmolLM2's
    first load takes seconds of reading and dequantising, and four sessions loading at once held
    every script thread of a server. One copy per server shared read-only by every session that shows it
    (lmviz.hf_shared: freed when no session holds it, the budget counting every model loaded).
    No semaphore: the load waits for no training (lmviz.hf_shared runs loads one at a time).
    A refusal (lmviz.checkpoint.CheckpointError, a sentence) is raised inline or is the
    task's error."""
    from lmviz.hf_shared import MODELS

    return task_slots().snapshot(LOAD_PURPOSE, path, partial(_load_bundle, path), name="lmviz-load",
                                 inline_s=LOAD_INLINE_S if MODELS.quick(path) else 0.0)


def _load_bundle(path: str, ctx) -> Bundle:
    from lmviz.hf_shared import load_shared

    model, tok, meta = load_shared(path, ctx)
    return Bundle(model, tok, {**meta, "path": path}, "pretrained")


@dataclass(frozen=True)
class Loading:
    """A pretrained model this session waits for (``model_menu``'s answer while it loads)."""

    path: str    # its folder (or GGUF file)
    label: str   # its name in the menu


def _apply_pretrained(pick: str, path: str, label: str) -> Loading | None:
    """Make the pretrained ``pick`` current when it is loaded (or refused: a sentence in the
    menu); a Loading while its task runs (``pretrained_load``)."""
    from lmviz.checkpoint import CheckpointError

    from ui.i18n import said, t
    from ui.render import escape

    try:
        snap = pretrained_load(path)
    except CheckpointError as e:                        # refused on the script's thread
        st.error(t("model.refused", name=escape(label), why=escape(t(e.key, **e.params))))
        return None
    if snap.state == "done":
        set_session_bundle(snap.result)
        return None
    if snap.state == "error":
        st.error(t("model.refused", name=escape(label), why=escape(said(snap.error or "?"))))
        return None
    if not snap.active:                                 # stopped: the session is closing
        return None
    st.session_state[LOADING_KEY] = pick
    return Loading(path, label)


def loading_page(loading: Loading, heading: str) -> None:
    """What a chapter shows while its model loads (in place of the chapter, drawn with the model
    it asked for once loaded): the chapter's ``heading`` (its h1, which also ends the link's
    first paint, ui.first_paint), the model's name and the share of its weights read, polled;
    the page reruns whole when the load ends."""
    from ui.i18n import t
    from ui.render import escape

    name = escape(loading.label)
    st.title(heading)

    def draw(snap) -> None:
        if snap is None or not snap.active:             # ended between the menu and here
            st.rerun()
        with st.container(key="lmviz-model-loading"):  # tests/browser_util.wait_idle waits for it to go
            text = (t("model.loading_step", name=name, done=snap.done, n=snap.total) if snap.total
                    else t("model.loading", name=name))
            st.progress(snap.fraction, text=text)
            st.caption(t("model.loading_once"))

    poll(partial(pretrained_load, loading.path), draw, every=0.5)


def pretrained_ids() -> dict[str, str]:
    """Each pretrained model this server lists, by its id (lmviz.hf.model_ids) -> its path."""
    from lmviz.hf import model_ids

    return {k: str(p) for k, p in model_ids(pretrained_models()).items()}


MODEL_URL_KEY = "lmviz_model_url"   # session key: the model's id as ui.urlstate seeds it (a link's, a lecturer's)
MODEL_APPLIED_KEY = "lmviz_model_applied"   # session key: the id the menu last made current (a new link or lecturer id differs)


def _picked() -> None:
    st.session_state["lmviz_model_pick"] = st.session_state["lmviz_model_choice"]


def model_menu() -> Loading | None:
    """The sidebar's model menu: the shipped model, this session's trained one (when there is one)
    and every pretrained folder found, each by its id (lmviz.hf.model_ids); the choice is the
    model every chapter shows (applied here, before the page draws). With no pretrained folder,
    one sentence says how to add one.

    The id is mirrored in ``?model=`` through ui.urlstate, so a link reproduces the view: a link's
    id applies on a session's first run (an unknown one: urlstate's note, the shipped model
    stays), and a follower takes the lecturer's id as it takes every other setting. A model only
    this session holds has no id a link or a class can carry: ``?model=`` is dropped, and a
    lecturer's followers draw the shipped model (the class's box says so, ui.follow).

    A pretrained model not yet in this process loads on a task (``pretrained_load``): the menu
    shows it chosen and returns its Loading, and app.py draws ``loading_page`` in place of the
    chapter until it is in."""
    from ui import follow, urlstate
    from ui.i18n import t

    from lmviz.hf import DEFAULT_ID, FAMILIES, MODEL_PARAM, SESSION_ID

    found = pretrained_models()
    ids = pretrained_ids()
    by_path = {p: k for k, p in ids.items()}
    trained = st.session_state.get("lmviz_trained_bundle")
    options = [DEFAULT_ID] + ([SESSION_ID] if trained is not None else []) + list(ids)
    labels = {DEFAULT_ID: t("model.default"), SESSION_ID: t("model.session"),
              **{by_path[str(f.path)]: f"{f.label} · {FAMILIES[f.family]}" for f in found}}

    def now() -> str:
        b = st.session_state.get("lmviz_session_bundle")
        if b is None:
            return DEFAULT_ID
        if b.source == "session":
            return SESSION_ID
        path = str(b.meta.get("path", ""))
        return by_path.get(path, path or DEFAULT_ID)    # a folder no longer listed: its path

    shareable = [DEFAULT_ID, *ids]
    urlstate.seed_from_url(MODEL_PARAM, MODEL_URL_KEY, now(), str, lambda v: v in shareable)
    pick = st.session_state.pop("lmviz_model_pick", None)
    pick = by_path.get(pick, pick)                      # a folder's path names it too
    if pick is None:
        wanted = st.session_state[MODEL_URL_KEY]
        if wanted != st.session_state.get(MODEL_APPLIED_KEY):
            pick = wanted                               # a link's or the lecturer's id, new since the last run
        v = follow.followed_view()
        if v is not None and MODEL_PARAM not in v.settings:
            pick = DEFAULT_ID                           # the lecturer's own model: the shipped one here
    if pick is None:
        pick = st.session_state.get(LOADING_KEY)        # a load under way goes on
    st.session_state.pop(LOADING_KEY, None)
    loading = None
    if pick != now() and pick in options:
        if pick == DEFAULT_ID:
            set_session_bundle(None)
        elif pick == SESSION_ID:
            set_session_bundle(trained)
        else:
            loading = _apply_pretrained(pick, ids[pick], labels[pick])
    if loading is None:
        task_slots().cancel(LOAD_PURPOSE)              # another choice, or the load's result taken
    current = now() if loading is None else pick
    # what this run applied: a model this session publishes between runs (a training's, an
    # upload's) stays current, where the id of the run before would have taken it back
    st.session_state[MODEL_URL_KEY] = st.session_state[MODEL_APPLIED_KEY] = current
    if current in shareable:
        urlstate.to_url(MODEL_PARAM, current)
    else:
        urlstate.drop(MODEL_PARAM)
    if current not in options:                      # e.g. a folder removed since it was chosen
        options.append(current)
        b = st.session_state.get("lmviz_session_bundle")
        labels[current] = b.meta.get("name", current) if b is not None else current
    st.session_state["lmviz_model_choice"] = current   # the menu follows the model (a training publishes one)
    st.selectbox(t("model.menu"), options, format_func=labels.get, key="lmviz_model_choice", on_change=_picked,
                 help=t("model.menu_help"))
    if not found:
        from ui.follow import following

        if not following():   # advice for whoever runs the server, not for a class's students
            st.caption(t("model.none_found"))
    return loading


# ================================================================ background tasks ========
# Long work runs as an lmviz.server.tasks.Task on a worker thread that never touches Streamlit. All
# tasks of the server -- trainings, the beyond chapter's demos, long BPE runs, measurements -- share one cap,
# LMVIZ_MAX_TRAININGS (default: half the cores, at least 1) at once, and wait in first-come order. A page draws a task
# with poll(); the training page calls publish_trained_model(), which is what makes every
# chapter show the model being trained (session_state is not reachable from the worker).

def max_trainings() -> int:
    """Concurrent background tasks allowed on this server: env LMVIZ_MAX_TRAININGS, else half the
    cores (at least 1). Each task already runs at nice 19 on its own thread(s); on a 2-core server
    the cap of 1 runs one training at full speed and queues the next, which kept the room's slider
    reruns at the level of a server with no training at all (bench/load.py, 20 sessions, 2
    trainings: p50 0.09-0.21 s with a cap of 1, 0.19-0.58 s with 2; numbers in the README)."""
    import os

    from lmviz.server.env import env_count

    return env_count("LMVIZ_MAX_TRAININGS", max(1, (os.cpu_count() or 2) // 2))


@st.cache_resource(show_spinner=False)
def task_semaphore() -> threading.BoundedSemaphore:
    """The server-wide cap on concurrent background tasks (shared by all sessions)."""
    return threading.BoundedSemaphore(max_trainings())


def start_task(work, *, name: str, total: int = 0):
    """Start ``work(ctx)`` as a Task under the server-wide cap; returns the task (see lmviz.server.tasks).
    Cache the returned task with ``st.cache_resource`` to share it between sessions."""
    from lmviz.server.tasks import Task

    return Task(work, task_semaphore(), name=name, total=total).start()


# A chapter's per-session work (a demo's training, a long BPE run): one task per session and
# purpose, the previous one cancelled when its input changes, all cancelled when the session ends
# (lmviz.server.tasks.TaskSlots); finished results are shared by every session through a bounded cache
# per purpose, so the second student with the same input gets it at once.
_RESULTS: dict = {}
_RESULTS_LOCK = threading.Lock()


def shared_results(purpose: str, max_entries: int = 8):
    """The server-wide lmviz.server.tasks.ResultCache of ``purpose`` (made once, ``max_entries`` long)."""
    with _RESULTS_LOCK:
        if purpose not in _RESULTS:
            from lmviz.server.tasks import ResultCache

            _RESULTS[purpose] = ResultCache(max_entries)
        return _RESULTS[purpose]


def _close_task_slots(slots) -> None:
    slots.close()


@st.cache_resource(scope="session", on_release=_close_task_slots, show_spinner=False)
def task_slots():
    """This session's lmviz.server.tasks.TaskSlots (its tasks are cancelled when the session ends)."""
    from lmviz.server.tasks import TaskSlots

    return TaskSlots()


def session_task(purpose: str, key, work, *, name: str, total: int = 0, inline_s: float = 0.0,
                 max_results: int = 8):
    """The snapshot of this session's task for ``purpose`` at input ``key`` (started under the
    server-wide cap when needed; see lmviz.server.tasks.TaskSlots). ``inline_s`` > 0: tried on the
    script's thread within that many seconds first (most inputs finish there, no rerun)."""
    return task_slots().snapshot(purpose, key, work, semaphore=task_semaphore(), name=name, total=total,
                                 results=shared_results(purpose, max_results), inline_s=inline_s)


MAX_POLL_S = 8.0     # the slowest a poll may become when its runs keep taking longer than its interval


def poll(snapshot, draw, *, every: float | None | Callable[[], float | None] = 1.0,
         watch: Callable[[str, Callable[[], bool]], None] | None = None) -> None:
    """Draw ``draw(snap)`` (``snap = snapshot()``, None when there is no task) in a fragment that
    reruns every ``every`` seconds while the task is active; when the task starts or ends, the
    whole page reruns once, so polling stops and the rest of the page sees the result. ``every``
    may be a function (read at each run): when its answer changes, the page reruns once and the
    poll comes back at the new pace (a paused training polls slower than a running one).

    One page has at most one active poll at a time (two ``run_every`` fragments on one page
    left a hidden copy of every chart of one of them in the browser on each tick, in
    Streamlit 1.67: the page grew by ~3 charts a second and the browser fell behind). A run that
    takes longer than the interval is interrupted by the next tick, which leaves the same hidden
    copies; so the interval follows the runs: when the last run took longer than the interval, the
    page reruns once and the fragment comes back with twice the run's time (at most
    ``MAX_POLL_S``); each full rerun picks the interval again from the last run's time.

    An ``every`` of None means no timer while the task is active: a paused training's page sits
    still, and a replay step never waits for a tick's run (bench/live_page.py: a tick that came
    with a step redrew the whole live section, 0.6 s). Then ``watch(key, wake)`` registers with
    the task (``lmviz.server.tasks.Task.watch``; ``key`` is this session's id) a push of the
    fragment's rerun (``_wake``), so a move of the task (resumed, stopped, ended, from any tab)
    is drawn at once; a run with a timer drops it (``watch(key, None)``: the timer's
    next run draws the move, and a push then would only redraw the section once more).

    A poll is drawn in the page's own run: reached while another fragment reruns on its own (a
    section a student alone has just revealed, ``ui.render._answered_here``), it asks for that
    run, so that its start and end rerun the page and not that fragment alone."""
    import time

    from ui.runtime import fragment_target, in_fragment_rerun

    if in_fragment_rerun():
        st.rerun()

    first = snapshot()
    active = first is not None and first.active
    name = f"lmviz_poll:{getattr(draw, '__module__', '')}.{getattr(draw, '__qualname__', '')}"
    took = st.session_state.get(name, 0.0)              # seconds the last run of this poll took
    pace = every() if callable(every) else every
    interval = None if pace is None else min(MAX_POLL_S, max(pace, 2 * took))

    read = st.session_state.setdefault(f"{name}:read", [0.0])   # when a run of it last read the task

    def body() -> None:
        target = fragment_target() if watch is not None else None
        if target is not None:                          # before the snapshot: no move falls between
            watch(target[0], partial(_wake, target, read) if active and interval is None else None)
        read[0] = time.monotonic()
        snap = snapshot()
        if (snap is not None and snap.active) != active or (callable(every) and every() != pace):
            st.rerun()
        if active and interval is not None and st.session_state.get(name, 0.0) > interval and interval < MAX_POLL_S:
            st.rerun()                                  # slower than its interval: come back slower
        t0 = time.perf_counter()
        try:
            draw(snap)
        finally:                                        # also when the run is interrupted
            st.session_state[name] = time.perf_counter() - t0

    st.fragment(run_every=interval if active else None)(body)()


def _wake(target: tuple[str, str, str], read: list) -> bool:
    """A poll's watcher (``poll``'s ``watch``): the task moved, so rerun the poll's fragment
    (``target``), unless a run of it read the task after the move (``read[0]``: when it last did),
    or the move was asked from this session's own script run (a press here: the run that follows
    the press draws it). False when the session is gone."""
    import time

    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    from ui.runtime import rerun_fragment

    asked = time.monotonic()
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None and ctx.session_id == target[0]:
        return True
    return rerun_fragment(target, unless=lambda: read[0] > asked)


# Seconds a slow part of a live view (a chart or text that changes at an evaluation) holds what it
# showed while a run is running. Every change redraws that chart in each watching browser (Plotly
# draws a changed chart twice here), and the Tang-poem preset evaluates every ~2.5 s: the
# perplexity panel, the attention map and the samples moved at every other tick of the live
# section (bench/live_page.py). Paused or ended, everything shows at once.
HOLD_S = 6.0


def due(before: tuple | None, version, now: float, every: float = HOLD_S) -> bool:
    """Whether a held view moves to ``version``: ``before`` is (version shown, when it was first
    shown) or None. It moves at once the first time, and otherwise only to a new version at least
    ``every`` seconds after the one shown came in (so one arriving after a quiet stretch is at once).

    >>> due(None, 1, 100.0), due((1, 100.0), 2, 103.0), due((1, 100.0), 2, 106.0), due((2, 90.0), 2, 200.0)
    (True, False, True, False)
    """
    return before is None or (before[0] != version and now - before[1] >= every)


def hold(name: str, run, version, value, *, running: bool, every: float = HOLD_S):
    """``value``, or while ``running`` the value last shown under ``name`` for this ``run`` until
    ``due`` moves it (``version``: what identifies ``value``, e.g. the evaluations so far). Not
    running, or another run, ``value`` at once. Kept in this session's state."""
    import time

    kept = st.session_state.get(name)           # (run, version, since, value)
    now = time.monotonic()
    if not running or kept is None or kept[0] != run or due(kept[1:3], version, now, every):
        since = kept[2] if kept is not None and kept[:2] == (run, version) else now
        kept = (run, version, since, value)
        st.session_state[name] = kept
    return kept[3]


def task_status(snap, *, queued_key: str, running_key: str, error_key: str, **fmt) -> bool:
    """The one status line of a task: queued (its place in line), a progress bar while it runs,
    the error message; True once the task is done (its result can be drawn)."""
    from ui.i18n import said, t
    from ui.render import escape

    if snap is None:
        return False
    if snap.state == "error":
        st.error(t(error_key, error=escape(said(snap.error or "?")), **fmt))
    elif snap.state == "queued":
        st.info(t(queued_key, n=snap.queue_position, cap=max_trainings(), **fmt))
    elif snap.active:
        st.progress(snap.fraction, text=t(running_key, step=snap.done, n=snap.total, **fmt))
    return snap.state == "done"


class TrainingSlot:
    """This session's training job (None until the first start)."""

    def __init__(self) -> None:
        self.job = None      # lmviz.server.train_job.TrainingJob | None
        self.label = ""      # what was trained (corpus, preset), for the bundle's meta
        self.secret = None   # the job's key in RUNS (and ?run= of /training), None without a job
        self.looked = None   # the ?run= value this session already tried to attach to
        self.refused = None  # why the last Start was refused (a message for people), else None
        self.earlier = None  # the induction record of the run before this one (lmviz.chapters.induction_run),
        #                      drawn beside the current run's: a one-layer control beside a two-layer run


# A reload opens a new session: the old one's job is found again through a per-run secret in
# /training's URL (?run=, set with st.query_params, never a chapter setting of ui.urlstate, so
# neither shared links nor the classroom's follow link carry it). Every session that shows a job
# watches it (lmviz.server.tasks.Registry): a job is stopped only when no session watches it any more,
# LMVIZ_RUN_GRACE_S seconds (default 30) after the last one ended, unless a new session claimed
# it meanwhile. In presenter mode the secret stays out of the address bar (it is projected); the
# presenting session keeps its job, but a reload there does not find it.
RUN_PARAM = "run"


def _grace_s() -> float:
    import os

    raw = os.environ.get("LMVIZ_RUN_GRACE_S", "").strip()
    try:
        return max(0.0, float(raw)) if raw else 30.0
    except ValueError:
        return 30.0


_RUNS = None
_RUNS_LOCK = threading.Lock()
MAX_RUNS = 64        # trainings the registry holds (live ones are never forgotten to make room)


def runs():
    """The server-wide lmviz.server.tasks.Registry of trainings by secret (bounded)."""
    global _RUNS
    with _RUNS_LOCK:
        if _RUNS is None:
            from lmviz.server.tasks import Registry

            _RUNS = Registry(max_entries=MAX_RUNS, grace_s=_grace_s())
        return _RUNS


def _release_training_slot(slot: TrainingSlot) -> None:
    # the session went away: a registered job goes on while another session watches it, else it
    # gets a grace period to be reattached (a reload); an unregistered one is stopped now
    if slot.secret is not None:
        runs().release(slot.secret, slot)
    elif slot.job is not None:
        slot.job.cancel()


@st.cache_resource(scope="session", on_release=_release_training_slot, show_spinner=False)
def training_slot() -> TrainingSlot:
    """The per-session slot; its job is stopped when the session ends (after the grace period)."""
    return TrainingSlot()


def _leave_job(slot: TrainingSlot) -> None:
    """This session lets go of its job: stopped unless another session watches it."""
    if slot.secret is not None:
        runs().leave(slot.secret, slot)
    elif slot.job is not None:
        slot.job.cancel()
    slot.job, slot.secret = None, None


def _hide_secret() -> bool:
    """True when the run's secret must stay out of the address bar (presenter mode)."""
    from ui.render import presenting

    return presenting()


def _show_secret(slot: TrainingSlot) -> None:
    """Keep ``?run=`` in step with this session's job (absent in presenter mode or without one)."""
    want = None if _hide_secret() or slot.job is None else slot.secret
    if want is None:
        if RUN_PARAM in st.query_params:
            del st.query_params[RUN_PARAM]
    elif st.query_params.get(RUN_PARAM) != want:
        st.query_params[RUN_PARAM] = want


def start_training(make_trainer, label: str = "", meta: dict | None = None):
    """Let go of this session's previous job (stopped unless another session watches it) and
    start a new one; returns the job, or None when the server's registry of trainings is full of
    live ones (``training_slot().refused`` then says so). ``make_trainer(cancel)`` builds the
    Trainer on the worker (see lmviz.server.train_job); ``meta`` (what is trained: corpus, preset) stays
    readable as ``job.meta``. The job is registered under a fresh secret, written to ``?run=``."""
    from lmviz.server.tasks import RegistryFull
    from lmviz.server.train_backend import training_job as new_job

    from lmviz.chapters.induction_run import induction_run

    slot = training_slot()
    if slot.job is not None:              # the run it replaces, when it probed induction: kept to compare
        slot.earlier = induction_run(slot.job.snapshot().evals) or slot.earlier
    _leave_job(slot)
    job = new_job(make_trainer, task_semaphore(), meta=dict(meta or {}, label=label))
    try:
        secret = runs().add(job, slot)          # before start: a refused job never runs
    except RegistryFull:
        slot.refused = "full"
        _show_secret(slot)
        return None
    slot.job, slot.label, slot.secret, slot.looked, slot.refused = job.start(), label, secret, secret, None
    _show_secret(slot)
    return job


def reset_training() -> None:
    """Let go of this session's job (stopped unless another session watches it) and its secret,
    and go back to the shipped model."""
    slot = training_slot()
    _leave_job(slot)
    slot.refused, slot.earlier = None, None
    _show_secret(slot)
    forget_trained_model()


def attach_run() -> str | None:
    """On /training: attach this session to the job named by ``?run=`` (a reload, another tab),
    and keep ``?run=`` in the URL while the session has a registered job (not in presenter mode).
    Returns "attached" when this call attached, "gone" when the link names no job (ended long
    ago, another server), else None."""
    slot = training_slot()
    raw = st.query_params.get(RUN_PARAM)
    out = None
    if raw and raw != slot.looked and raw != slot.secret:
        slot.looked = raw
        job = runs().claim(raw, slot)
        if job is None:
            out = "gone"
        else:
            if slot.job is not None and slot.job is not job:
                _leave_job(slot)
            slot.job, slot.secret, slot.label = job, raw, job.meta.get("label", "")
            out = "attached"
    _show_secret(slot)
    return out


def training_job():
    """This session's job, or None."""
    return training_slot().job


def publish_trained_model(snap, meta: dict | None = None) -> bool:
    """Show the snapshot's published weights in every chapter (once per model the job publishes:
    a checkpoint uploaded after the job's last one stays shown until the job publishes a newer one).

    Returns True when a new model was published by this call.
    """
    if snap is None or snap.model is None:
        return False
    if st.session_state.get("lmviz_job_published") is snap.model:
        return False
    info = dict(meta or {}, steps=snap.step, val_loss=snap.evals[-1].val_loss if snap.evals else None)
    set_session_bundle(Bundle(snap.model, snap.tokenizer, info, "session"))
    st.session_state["lmviz_job_published"] = snap.model
    return True


def forget_trained_model() -> None:
    """Back to the shipped default model in every chapter."""
    set_session_bundle(None)
    st.session_state.pop("lmviz_job_published", None)
    st.session_state.pop("lmviz_trained_bundle", None)
