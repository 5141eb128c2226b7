"""Background tasks: long work on a worker thread that a web page polls (the one mechanism).

    task = Task(work, semaphore, name="lmviz-cost-bench").start()   # returns at once
    snap = task.snapshot()      # state, progress, queue position, result, error
    task.cancel(); task.pause(); task.resume(); task.join(timeout)

``work(ctx)`` runs on the worker thread and returns the result; ``ctx`` is a :class:`TaskContext`:

- ``ctx.progress(done, total)`` records how far it got (the page draws a progress bar);
- ``ctx.cancelled()`` is True once ``cancel()`` was asked: pass it as the ``cancel`` callback of
  long core functions (``Trainer``, ``train_bpe``, ``fit``), which raise :class:`Cancelled`;
- ``ctx.check()`` raises :class:`Cancelled` when cancelled and blocks while paused.

Rules the pages rely on:

- The worker never calls Streamlit (it has no script context). State changes happen under one
  lock; ``snapshot()`` copies them under it, so a page never sees a half-written state.
- A shared ``threading.BoundedSemaphore`` caps concurrent tasks across all sessions. A task waits
  its turn in first-come order (``queue_position`` 1, 2, ...) and gives the slot back when it
  ends, however it ends (done, stopped, error). A task cancelled while queued never runs.
- The worker thread lowers its own CPU priority to nice 19 (Linux), so long work never starves
  the page reruns of the Streamlit server (torch's intra-op threads are separate threads).
- An error is stored as a message for people (no Python class name in front), the traceback goes
  to the server log.

>>> t = Task(lambda ctx: 6 * 7).start()
>>> t.join(5), t.snapshot().state, t.snapshot().result
(True, 'done', 42)
>>> t = Task(lambda ctx: int("x")).start(); _ = t.join(5)
>>> t.snapshot().state, t.snapshot().error
('error', "invalid literal for int() with base 10: 'x'")
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .cancel import Cancelled, check_cancel  # noqa: F401 - the task module's own names too

STATES = ("new", "queued", "running", "paused", "done", "stopped", "error")
FINAL = ("done", "stopped", "error")

_QUEUE_LOCK = threading.Lock()
_QUEUES: dict[int, list] = {}      # id(semaphore) -> tasks waiting on it, first come first


def human_message(e: BaseException) -> str:
    """The message of ``e`` for people: its text, without the Python class name in front.

    >>> human_message(ValueError("the text is empty")), human_message(MemoryError())
    ('the text is empty', 'the computer ran out of memory')
    """
    if isinstance(e, MemoryError):
        return "the computer ran out of memory"
    msg = str(e).strip()
    return msg[:500] if msg else "an unexpected error in the background work"


def lower_priority() -> None:
    """Nice 19 for the calling thread only (Linux); a no-op where the OS does not allow it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


# glibc's allocator (Linux): the server's memory after sessions and trainings end -------------

def _glibc(name: str, *args) -> bool:
    """glibc's ``name(*args)`` as a bool; False where there is no glibc or no such function."""
    import ctypes

    try:
        return bool(getattr(ctypes.CDLL("libc.so.6"), name)(*args))
    except (OSError, AttributeError):
        return False


def limit_malloc_arenas(n: int = 2) -> bool:
    """Ask glibc for at most ``n`` malloc arenas from now on (False where there is no glibc).
    Each new thread (a session's script run, a training) could get an arena of its own, and
    memory freed in one stays with it: ``bench/load.py --waves 2`` (20 sessions, 2 trainings,
    twice) read 705 MB open / 824 MB closed in the second wave with glibc's default of 8 per
    core, 622 / 767 MB with this call (627 / 738 MB with MALLOC_ARENA_MAX=2 in the environment),
    slider latency unchanged. An environment variable MALLOC_ARENA_MAX set by the operator wins;
    ``ui.warmup.start`` calls it once per server."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return _glibc("mallopt", -8, int(n))                   # -8: M_ARENA_MAX


def give_back_memory() -> bool:
    """Return the heap's free pages to the OS (glibc's ``malloc_trim(0)``, every arena); False
    where there is no glibc. glibc keeps what a thread freed for its own reuse, so a finished
    training's optimizer state and batches stayed in the server's resident memory: 383-402 MB
    after two default-preset trainings ended, 320-321 MB once trimmed (three rounds in one
    process, /tmp experiment of 2026-12-01; ``bench/load.py --waves 2`` measures the server).
    Called at the end of every task."""
    return _glibc("malloc_trim", 0)


@dataclass(frozen=True)
class TaskSnapshot:
    state: str                  # one of STATES
    done: int                   # progress: units of work finished (steps, measurements)
    total: int                  # units of the whole task (0 while unknown)
    queue_position: int         # 1 = next to start; 0 when not queued
    phase: str = ""             # what the work is doing now, as it said (e.g. "preparing")
    result: Any = None          # what ``work`` returned, once state == "done"
    error: str | None = None    # a message for people, when state == "error"

    @property
    def active(self) -> bool:
        """True while a page should keep polling (queued, running or paused)."""
        return self.state in ("queued", "running", "paused")

    @property
    def fraction(self) -> float:
        """done / total in [0, 1] (0 while the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total else 0.0


class TaskContext:
    """What ``work`` sees of its task (see the module docstring)."""

    def __init__(self, task: "Task"):
        self._task = task

    def cancelled(self) -> bool:
        return self._task._stop.is_set()

    def check(self) -> None:
        """Raise Cancelled when cancelled; while paused, wait (state "paused") until resumed."""
        t = self._task
        if not t._run.is_set():
            t._set(state="paused")
            t._run.wait()
            t._set(state="running")
        check_cancel(self.cancelled)

    def progress(self, done: int, total: int | None = None) -> None:
        with self._task._lock:
            self._task._done = int(done)
            if total is not None:
                self._task._total = int(total)

    def phase(self, name: str) -> None:
        self._task._set(phase=name)


class Task:
    """One piece of long work on a worker thread (see the module docstring)."""

    def __init__(self, work: Callable[[TaskContext], Any], semaphore: threading.BoundedSemaphore | None = None,
                 *, name: str = "lmviz-task", total: int = 0, poll_s: float = 0.05):
        self._work = work
        self._sem = semaphore
        self._name = name
        self._poll_s = poll_s                 # how often a queued task looks at its turn
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._run = threading.Event()         # set = may run, clear = paused
        self._run.set()
        self._state = "new"
        self._phase = ""
        self._done = 0
        self._total = total
        self._result: Any = None
        self._error: str | None = None
        self._thread: threading.Thread | None = None

    # -- control (any thread) ------------------------------------------------------------------
    def start(self) -> "Task":
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("this task was already started")
            self._state = "queued" if self._sem is not None else "running"
            self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
        if self._sem is not None:
            with _QUEUE_LOCK:
                _QUEUES.setdefault(id(self._sem), []).append(self)
        self._thread.start()
        return self

    def pause(self) -> None:
        self._run.clear()

    def resume(self) -> None:
        self._run.set()

    def cancel(self) -> None:
        self._stop.set()
        self._run.set()                       # a paused worker must wake up to stop

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker to end; True when it has."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    @property
    def paused(self) -> bool:
        """True once pause() was asked (the work pauses at its next ``ctx.check()``)."""
        return not self._run.is_set()

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set()

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    def queue_position(self) -> int:
        with _QUEUE_LOCK:
            q = _QUEUES.get(id(self._sem), [])
            return q.index(self) + 1 if self in q else 0

    def snapshot(self) -> TaskSnapshot:
        pos = self.queue_position()
        with self._lock:
            return TaskSnapshot(self._state, self._done, self._total, pos, self._phase, self._result, self._error)

    # -- worker --------------------------------------------------------------------------------
    def _set(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, "_" + k, v)

    def _wait_turn(self) -> bool:
        """Block until this task holds a semaphore slot (first come, first served); False if cancelled."""
        if self._sem is None:
            return True
        key = id(self._sem)
        try:
            while not self._stop.is_set():
                with _QUEUE_LOCK:
                    first = _QUEUES.get(key, [None])[0] is self
                if first and self._sem.acquire(timeout=self._poll_s):
                    if self._stop.is_set():           # cancelled while it waited for the slot
                        self._sem.release()
                        return False
                    return True
                if not first:
                    time.sleep(self._poll_s)
            return False
        finally:
            with _QUEUE_LOCK:
                q = _QUEUES.get(key, [])
                if self in q:
                    q.remove(self)
                if not q:
                    _QUEUES.pop(key, None)

    def _main(self) -> None:
        lower_priority()
        if not self._wait_turn():
            self._set(state="stopped")
            return
        try:
            self._set(state="running")
            result = self._work(TaskContext(self))
            self._set(result=result, state="done")
        except Cancelled:
            self._set(state="stopped")
        except Exception as e:  # noqa: BLE001 - the page shows the message; the thread must not die silently
            self._set(state="error", error=human_message(e))
            traceback.print_exc(file=sys.stderr)
        finally:
            if self._sem is not None:
                self._sem.release()
            give_back_memory()         # what the work freed (its frames are gone by now)


class Registry:
    """Server-wide tasks by secret, so that a reloaded page finds its task again.

        secret = runs.add(task, owner)      # a fresh secrets.token_urlsafe; the page puts it in its URL
        runs.claim(secret, other_owner)     # a new session with that secret: the task, or None
        runs.release(secret, owner)         # the owner went away: cancel after grace_s unless claimed

    The secret is 32 random bytes (never guessable, never derived from anything shown). A task is
    cancelled ``grace_s`` seconds after its owner released it, unless a session claimed it in the
    meantime; then the entry is forgotten (its records and model are freed). A release by a former
    owner (one that lost the task to a later claim) changes nothing. At most ``max_entries`` are
    kept: beyond that the oldest entry of an ended task goes first, then the oldest released one,
    then the oldest (forgetting an entry never cancels its task: only a release does).

    >>> runs = Registry(grace_s=0.0)
    >>> t = Task(lambda ctx: ctx.check() or time.sleep(0.05) or 1); s = runs.add(t, owner="a")
    >>> runs.claim("wrong", "b") is None, runs.claim(s, "b") is t, len(s) >= 40
    (True, True, True)
    """

    def __init__(self, max_entries: int = 64, grace_s: float = 30.0):
        self.max_entries = max_entries
        self.grace_s = grace_s
        self._lock = threading.Lock()
        self._entries: dict[str, list] = {}          # secret -> [task, owner, timer], oldest first

    def add(self, task: "Task", owner: Any) -> str:
        import secrets

        secret = secrets.token_urlsafe(32)
        with self._lock:
            self._entries[secret] = [task, owner, None]
            while len(self._entries) > self.max_entries:
                self._evict()
        return secret

    def _evict(self) -> None:
        items = list(self._entries.items())
        for pick in (lambda e: not e[0].snapshot().active, lambda e: e[1] is None, lambda e: True):
            for secret, e in items:
                if pick(e):
                    if e[2] is not None:
                        e[2].cancel()
                    del self._entries[secret]
                    return

    def claim(self, secret: Any, owner: Any) -> "Task | None":
        """The task registered under ``secret`` (now owned by ``owner``), or None."""
        if not isinstance(secret, str) or not 0 < len(secret) <= 100:
            return None
        with self._lock:
            e = self._entries.get(secret)
            if e is None:
                return None
            if e[2] is not None:
                e[2].cancel()
            e[1], e[2] = owner, None
            return e[0]

    def release(self, secret: Any, owner: Any) -> None:
        """``owner`` went away: cancel its task after grace_s, unless someone claims it first."""
        with self._lock:
            e = self._entries.get(secret)
            if e is None or e[1] is not owner:
                return
            e[1] = None
            e[2] = threading.Timer(self.grace_s, self._expire, args=(secret, e))
            e[2].daemon = True
            e[2].start()

    def drop(self, secret: Any, owner: Any) -> None:
        """Forget ``secret`` now (its owner started another task or reset); the task is not touched."""
        with self._lock:
            e = self._entries.get(secret)
            if e is not None and e[1] is owner:
                if e[2] is not None:
                    e[2].cancel()
                del self._entries[secret]

    def _expire(self, secret: str, entry: list) -> None:
        with self._lock:
            if self._entries.get(secret) is not entry or entry[1] is not None:
                return                                # claimed (or forgotten) in the meantime
            del self._entries[secret]
        entry[0].cancel()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
