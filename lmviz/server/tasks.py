"""Background tasks: long work on a worker thread that a web page polls (the one mechanism).

    task = Task(work, semaphore, name="lmviz-cost-bench").start()   # returns at once
    snap = task.snapshot()      # state, progress, queue position, result, error
    task.cancel(); task.pause(); task.resume(); task.join(timeout)

``work(ctx)`` runs on the worker thread and returns the result; ``ctx`` is a :class:`TaskContext`:

- ``ctx.progress(done, total)`` records how far it got (the page draws a progress bar);
- ``ctx.cancelled()`` is True once ``cancel()`` was asked: pass it as the ``cancel`` callback of
  long core functions (``Trainer``, ``train_bpe``, ``fit``), which raise :class:`Cancelled`;
- ``ctx.check()`` raises :class:`Cancelled` when cancelled and blocks while paused;
- ``ctx.phase(name)`` says what the work is doing now; the phase "preparing" of a running task
  reads as the state "preparing".

The lifecycle (one for every task: a chapter's measurement, a local training, a training on Ray):

    new -> queued -> running <-> paused          running in the phase "preparing" reads "preparing"
               \\         \\          \\
                +---------+----------+--> done | stopped | error      (final: nothing follows)

- ``cancel()`` reads as "stopped" at once, whatever the worker is doing (a busy machine can delay
  a nice-19 worker's next look at the flag), and it stays "stopped": a task that was asked to stop
  never ends "done" or "error" afterwards, and a final state never changes. ``ACTIVE`` are the
  states in which a page keeps polling; :func:`is_active` is the one test of it.
- The worker never calls Streamlit (it has no script context). State changes happen under one
  lock; ``snapshot()`` copies them under it, so a page never sees a half-written state.
- A shared ``threading.BoundedSemaphore`` caps concurrent tasks across all sessions. A task waits
  its turn in first-come order (``queue_position`` 1, 2, ...) within its ``priority`` (0 before
  1: a class's lecturer is not queued behind the students' runs) and gives the slot back when it
  ends, however it ends (done, stopped, error). A task cancelled while queued never runs.
  A running task of priority 1 that holds a semaphore's slot while one of priority 0 waits for it
  steps aside at its next ``ctx.check()``: it gives the slot to the lecturer's task and reads
  "queued" again (first of its priority, its work kept where it stopped) until it gets a slot back
  (a task without a semaphore, a Ray actor's, never steps aside).
  A subclass with another kind of slot (a Ray actor the cluster places) overrides
  ``_acquire`` / ``_release`` and keeps the rest.
- The worker thread lowers its own CPU priority to nice 19 (Linux), so long work never starves
  the page reruns of the Streamlit server (torch's intra-op threads are separate threads).
  ``LMVIZ_TASK_NICE`` (0-19) sets another value: the test suite runs its tasks at 0, since on a
  machine busy with other work a nice-19 task waits for that work, and a test for it.
- An error is stored as a message for people (no Python class name in front), the traceback goes
  to the server log.
- ``pause()`` reads as "paused" at once too, and ``resume()`` as "running": the worker takes the
  ask at its next look (``ctx.check()``), and what a page drew at the press stays true.
- ``watch(key, wake)``: ``wake()`` is called whenever the task is asked to pause, resume or stop
  and whenever the state it reads as moves (so a page that stops polling a paused task still
  hears of the next move); one ``wake`` per key, a newer one replaces it, ``watch(key, None)``
  drops it; a ``wake`` that returns False or fails is forgotten, and all are once the task has
  ended. ``wake`` must be quick and must not call back into the task's control (it may run on
  the worker thread, under the task's lock).

>>> t = Task(lambda ctx: 6 * 7).start()
>>> t.join(5), t.snapshot().state, t.snapshot().result
(True, 'done', 42)
>>> t = Task(lambda ctx: int("x")).start(); _ = t.join(5)
>>> t.snapshot().state, t.snapshot().error
('error', "invalid literal for int() with base 10: 'x'")
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from lmviz.cancel import Cancelled, check_cancel  # noqa: F401 - the task module's own names too

STATES = ("new", "queued", "preparing", "running", "paused", "done", "stopped", "error")
FINAL = ("done", "stopped", "error")
ACTIVE = ("queued", "preparing", "running", "paused")       # a page keeps polling (is_active)
# the states the worker may move to from each (besides a final one, reachable from any
# non-final state); "preparing" and a cancelled task's "stopped" are read, never stored
_NEXT = {"new": ("queued", "running"), "queued": ("running",), "running": ("paused", "queued"),
         "paused": ("running",)}

_QUEUE_LOCK = threading.Lock()
_QUEUES: dict[int, list] = {}      # id(semaphore) -> tasks waiting on it, first come first


class Said(str):
    """A message for people: its English sentence (it is a ``str``, shown as it is where no
    catalogue is at hand: the server log, a test) that also carries its catalogue ``key`` and
    ``params``, so that a page says it in its own language (``ui.i18n.said``). It survives
    pickling (a training's error comes back from a Ray worker).

    >>> m = Said("task.err_memory"); m, m.key
    ('the computer ran out of memory', 'task.err_memory')
    """

    key: str
    params: dict

    def __new__(cls, key: str, **params) -> "Said":
        from lmviz.limits import english

        self = super().__new__(cls, english(key, params))
        self.key, self.params = key, params
        return self

    def __reduce__(self):
        return (_said, (self.key, self.params))


def _said(key: str, params: dict) -> Said:
    return Said(key, **params)


def human_message(e: BaseException) -> str:
    """The message of ``e`` for people: its text, without the Python class name in front; a
    :class:`Said` (sayable in any language) for running out of memory, an empty message, or an
    error that names its catalogue ``key`` and ``params`` (``CheckpointError``, ``ClusterError``).

    >>> human_message(ValueError("the text is empty")), human_message(MemoryError())
    ('the text is empty', 'the computer ran out of memory')
    """
    if isinstance(e, MemoryError):
        return Said("task.err_memory")
    key, params = getattr(e, "key", None), getattr(e, "params", None)
    if isinstance(key, str) and isinstance(params, dict):
        return Said(key, **params)
    msg = str(e).strip()
    return msg[:500] if msg else Said("task.err_unexpected")


TASK_NICE = 19     # a task's worker thread: below every page run of the server


def task_nice(raw: str | None = None) -> int:
    """``raw`` (default: ``LMVIZ_TASK_NICE``) when it is a whole number 0-19, else :data:`TASK_NICE`.

    >>> task_nice("0"), task_nice(" 5 "), task_nice("-5"), task_nice("20"), task_nice("low")
    (0, 5, 19, 19, 19)
    """
    raw = (os.environ.get("LMVIZ_TASK_NICE", "") if raw is None else raw).strip()
    return int(raw) if raw.isdigit() and int(raw) <= 19 else TASK_NICE


def lower_priority() -> None:
    """:func:`task_nice` for the calling thread only (Linux); a no-op where the OS does not allow
    it, or when the thread already runs at that value or lower."""
    try:
        tid = threading.get_native_id()
        nice = task_nice()
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
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


def is_active(state: str) -> bool:
    """True while a page should keep polling a task in ``state`` (queued, preparing, running,
    paused): the one place this is decided.

    >>> [s for s in STATES if is_active(s)]
    ['queued', 'preparing', 'running', 'paused']
    """
    return state in ACTIVE


def shown_state(state: str, phase: str, cancelled: bool, pause_asked: bool = False) -> str:
    """The state a task reads as, from what its worker stored: a final state stays; a cancelled
    task reads "stopped" at once; a running one in the phase "preparing" reads "preparing"; and a
    running or paused one reads as asked, "paused" from the ask to pause and "running" from the
    ask to resume (the worker takes the ask at its next look, a chunk of steps later: what a
    page draws at the press stays true, and no page has to be drawn again when the worker gets
    there).

    >>> shown_state("running", "preparing", False), shown_state("queued", "", True), shown_state("done", "", True)
    ('preparing', 'stopped', 'done')
    >>> shown_state("running", "", False, True), shown_state("paused", "", False, False)
    ('paused', 'running')
    """
    if state in FINAL:
        return state
    if cancelled:
        return "stopped"
    if state == "running" and phase == "preparing":
        return "preparing"
    if state in ("running", "paused"):
        return "paused" if pause_asked else "running"
    return state


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
        """True while a page should keep polling (queued, preparing, running or paused)."""
        return is_active(self.state)

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
        if not t._run.is_set() and not self.cancelled():
            t._move("paused")
            t._run.wait()
            t._move("running")
        check_cancel(self.cancelled)
        if t._lecturer_waits():
            t._step_aside()

    def progress(self, done: int, total: int | None = None) -> None:
        with self._task._lock:
            self._task._done = int(done)
            if total is not None:
                self._task._total = int(total)

    def phase(self, name: str) -> None:
        """Name the work's phase ("preparing", or "" once it runs); a change a page can see (the
        end of preparing, shown as "running" or, when a pause was asked meanwhile, "paused") is
        told to the watchers: a page without a timer (paused) showed "preparing" for good."""
        self._task._set_phase(name)


class InlineContext:
    """A TaskContext for work tried on the caller's thread within a time budget: ``cancelled()``
    turns True once ``budget_s`` seconds have passed (the work raises Cancelled and is handed to a
    task instead, see :meth:`TaskSlots.snapshot`); progress and phases go nowhere.

    >>> ctx = InlineContext(0.0); ctx.cancelled()
    True
    """

    def __init__(self, budget_s: float):
        self._end = time.monotonic() + budget_s

    def cancelled(self) -> bool:
        return time.monotonic() >= self._end

    def check(self) -> None:
        check_cancel(self.cancelled)

    def progress(self, done: int, total: int | None = None) -> None:
        pass

    def phase(self, name: str) -> None:
        pass


_STARTED: "weakref.WeakSet[Task]" = weakref.WeakSet()   # every task started in this process
EXIT_WAIT_S = 5.0        # at interpreter exit, how long the running tasks get to stop, all together


@atexit.register
def _stop_at_exit() -> None:
    """Ask every running task to stop and wait a little for it: a worker (a daemon thread) still
    inside a torch operation when the interpreter ends aborts the process ("terminate called
    without an active exception", exit status 134), and a page's task can outlive its session."""
    tasks = [task for task in list(_STARTED) if task._thread is not None and task._thread.is_alive()]
    for task in tasks:
        task.cancel()
    end = time.monotonic() + EXIT_WAIT_S
    for task in tasks:
        task.join(max(0.0, end - time.monotonic()))


class Task:
    """One piece of long work on a worker thread (see the module docstring)."""

    def __init__(self, work: Callable[[TaskContext], Any], semaphore: threading.BoundedSemaphore | None = None,
                 *, name: str = "lmviz-task", total: int = 0, poll_s: float = 0.05, phase: str = "",
                 priority: int = 1):
        self._work = work
        self._sem = semaphore
        self.priority = priority              # place in line: 0 goes ahead of every waiting 1 (a lecturer)
        self._name = name
        self._poll_s = poll_s                 # how often a queued task looks at its turn
        self._lock = threading.RLock()        # the state below (a subclass keeps its records under it too)
        self._stop = threading.Event()
        self._run = threading.Event()         # set = may run, clear = paused
        self._run.set()
        self._state = "new"
        self._phase = phase                   # a task that begins by preparing says so from the start
        self._done = 0
        self._total = total
        self._result: Any = None
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._watchers: dict[Any, Callable[[], bool]] = {}   # key -> wake (see ``watch``)

    # -- control (any thread) ------------------------------------------------------------------
    def start(self) -> "Task":
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("this task was already started")
            self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
            _STARTED.add(self)
            self._move("queued" if self._waits_for_a_slot() else "running")
        self._enqueue()
        self._thread.start()
        return self

    def pause(self) -> None:
        self._run.clear()
        self._tell()

    def resume(self) -> None:
        self._run.set()
        self._tell()

    def cancel(self) -> None:
        """Stop the task: it reads "stopped" from now on (the worker ends at its next look)."""
        self._stop.set()
        self._run.set()                       # a paused worker must wake up to stop
        self._tell()

    def watch(self, key: Any, wake: Callable[[], bool] | None) -> None:
        """Call ``wake()`` at every ask to pause, resume or stop and every move of the state, until
        it returns False or the task ends (see the module docstring); ``wake`` None: no longer
        (the key's watcher is dropped). A task that has ended is not watched."""
        with self._lock:
            if wake is None:
                self._watchers.pop(key, None)
            elif self._state not in FINAL:
                self._watchers[key] = wake

    def _tell(self) -> None:
        """Wake every watcher."""
        with self._lock:
            woken = list(self._watchers.items())
        gone = [key for key, wake in woken if not _woke(wake)]
        if gone:
            was = dict(woken)
            with self._lock:
                for key in gone:
                    if self._watchers.get(key) is was[key]:     # not replaced meanwhile
                        del self._watchers[key]

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
            return self._shown()

    @property
    def worker_state(self) -> str:
        """The state as the worker has taken the asks: "paused" once it has stopped at its look
        (``state`` reads "paused" from the ask), "running" once it has gone on."""
        with self._lock:
            return shown_state(self._state, self._phase, self._stop.is_set(), self._state == "paused")

    @property
    def active(self) -> bool:
        return is_active(self.state)

    def queue_position(self) -> int:
        with _QUEUE_LOCK:
            q = _QUEUES.get(id(self._sem), [])
            return q.index(self) + 1 if self in q else 0

    def snapshot(self) -> TaskSnapshot:
        pos = self.queue_position()
        with self._lock:
            state = self._shown()
            return TaskSnapshot(state, self._done, self._total, pos if state == "queued" else 0, self._phase,
                                self._result, self._error)

    # -- the lifecycle (under the lock) --------------------------------------------------------
    def _shown(self) -> str:
        return shown_state(self._state, self._phase, self._stop.is_set(), not self._run.is_set())

    def _set_phase(self, name: str) -> None:
        """The one way a phase changes: a change a page can see (the end of preparing, shown as
        "running" or, when a pause was asked meanwhile, "paused") is told to the watchers, since
        a page without a timer (paused) would show "preparing" for good."""
        with self._lock:
            before = self._shown()
            self._phase = str(name)
            if self._shown() != before:
                self._tell()

    def _move(self, state: str) -> bool:
        """Move the stored state to ``state`` (see the module docstring); False when the task has
        already ended (a final state never changes). An illegal move is a bug: ValueError."""
        with self._lock:
            if self._state in FINAL:
                return False
            if state != self._state and state not in FINAL and state not in _NEXT.get(self._state, ()):
                raise ValueError(f"a task cannot go from {self._state!r} to {state!r}")
            before, self._state = self._shown(), state
            if self._shown() != before:       # a move a page can see (running <-> paused reads as asked)
                self._tell()
            if state in FINAL:                # the last word: an ended task keeps no watcher
                self._watchers.clear()
            return True

    def _finish(self, state: str, result: Any = None, error: str | None = None) -> None:
        """End the task; one that was asked to stop ends "stopped", whatever its work did."""
        with self._lock:
            if self._stop.is_set():
                state, result, error = "stopped", None, None
            if self._move(state):
                self._result, self._error = result, error

    # -- the slot (a subclass with another kind of slot overrides these) ----------------------
    def _waits_for_a_slot(self) -> bool:
        """True when the task starts "queued" (it waits for a slot before it runs)."""
        return self._sem is not None

    def _enqueue(self) -> None:
        """Take a place in line (``start`` calls it, so the position shows at once; ``_acquire``
        leaves the line, however it ends)."""
        if self._sem is not None:
            self._line_up(ahead_of_peers=False)

    def _line_up(self, ahead_of_peers: bool) -> None:
        """Take the place in the semaphore's line behind every task of a lower priority number
        and behind (or, ``ahead_of_peers``, ahead of) the tasks of its own priority."""
        with _QUEUE_LOCK:
            q = _QUEUES.setdefault(id(self._sem), [])
            first_after = self.priority if ahead_of_peers else self.priority + 1   # priorities are whole numbers
            q.insert(next((k for k, t in enumerate(q) if t.priority >= first_after), len(q)), self)

    def _acquire(self) -> bool:
        """Block until this task holds its slot; False when it was cancelled meanwhile."""
        return self._wait_turn()

    def _release(self) -> None:
        if self._sem is not None and self._held:      # not when stopped while it stood aside
            self._held = False
            self._sem.release()

    def _lecturer_waits(self) -> bool:
        """True when this running task holds a semaphore's slot and a task of a lower priority
        number (a class's lecturer's) waits for one (the worker asks it at each ``ctx.check()``)."""
        if self._sem is None or self.priority == 0:
            return False
        with _QUEUE_LOCK:
            return any(w.priority < self.priority for w in _QUEUES.get(id(self._sem), ()))

    def _step_aside(self) -> None:
        """Give the slot to the waiting task ahead (``_lecturer_waits``), wait in line again as the
        first of this priority, and go on where the work stopped; Cancelled when stopped while
        waiting (the slot is not held then: ``_main`` must not give it back)."""
        with self._lock:
            self._move("queued")
        self._line_up(ahead_of_peers=True)
        self._held = False
        self._sem.release()
        if not self._wait_turn():
            raise Cancelled("cancelled")
        self._held = True
        with self._lock:
            self._move("running")

    # -- worker --------------------------------------------------------------------------------
    def _wait_turn(self) -> bool:
        """Block until this task holds a semaphore slot (first come, first served); False if cancelled."""
        if self._sem is None:
            return not self._stop.is_set()
        key = id(self._sem)
        try:
            while not self._stop.is_set():
                with _QUEUE_LOCK:
                    first = _QUEUES.get(key, [None])[0] is self
                if first and self._sem.acquire(timeout=self._poll_s):
                    with _QUEUE_LOCK:                 # a lecturer's task may have gone ahead meanwhile
                        first = _QUEUES.get(key, [None])[0] is self
                    if self._stop.is_set():           # cancelled while it waited for the slot
                        self._sem.release()
                        return False
                    if first:
                        return True
                    self._sem.release()
                    continue
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
        self._held = False                            # the semaphore's slot is held (a step aside gives it back meanwhile)
        acquired = False
        try:
            acquired = self._held = self._acquire()
            if not acquired:                          # cancelled while queued: it never runs
                self._finish("stopped")
                return
            self._move("running")
            result = self._work(TaskContext(self))
            self._finish("done", result=result)
        except Cancelled:
            self._finish("stopped")
        except Exception as e:  # noqa: BLE001 - the page shows the message; the thread must not die silently
            self._finish("error", error=human_message(e))
            if not self._stop.is_set():
                traceback.print_exc(file=sys.stderr)
        finally:
            if acquired:
                self._release()
            give_back_memory()         # what the work freed (its frames are gone by now)


def _woke(wake: Callable[[], bool]) -> bool:
    """``wake()``, False when it says so or fails (a watcher must never break the task that
    tells it: the worker moves the state)."""
    try:
        return wake() is not False
    except Exception:  # noqa: BLE001 - logged, and that watcher is forgotten
        traceback.print_exc(file=sys.stderr)
        return False


# ---------------------------------------------------------------- one task per purpose ----

class ResultCache:
    """Results of tasks that ended "done", by key, shared by every session (thread-safe); at most
    ``max_entries``, the least recently used goes first.

    >>> c = ResultCache(2); c.put("a", 1); c.put("b", 2); _ = c.get("a"); c.put("c", 3)
    >>> c.get("a"), c.get("b", "gone"), len(c)
    (1, 'gone', 2)
    """

    def __init__(self, max_entries: int = 8):
        self.max_entries = max(1, int(max_entries))
        self._lock = threading.Lock()
        self._d: OrderedDict = OrderedDict()

    def get(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            if key not in self._d:
                return default
            self._d.move_to_end(key)
            return self._d[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.max_entries:
                self._d.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._d)


_MISS = object()


class TaskSlots:
    """One owner's tasks (a browser session's), one per purpose (a chapter's demo, a long BPE run):

        snap = slots.snapshot("robot", (n_bins, steps), work, semaphore=sem, results=cache)

    - asking for a purpose with another key cancels the task of the previous key (a slider moved:
      the old value's work stops) and starts one for the new key; the same key returns the same
      task's snapshot;
    - a key whose result is in ``results`` (any owner computed it) is "done" at once, nothing runs;
      a task that ends "done" puts its result there;
    - ``inline_s`` > 0: the work is first tried on the caller's thread with an
      :class:`InlineContext` of that budget (most inputs finish well inside it); work that raises
      Cancelled there is started as a task instead;
    - ``close()`` (the session ended) cancels every task of the owner; nothing starts afterwards.

    >>> slots = TaskSlots(); ran = []
    >>> slots.snapshot("demo", 1, lambda ctx: ran.append(1) or "one", inline_s=5.0).result
    'one'
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, tuple[Any, Task]] = {}
        self._closed = False

    def snapshot(self, purpose: str, key: Any, work: Callable[[Any], Any], *,
                 semaphore: threading.BoundedSemaphore | None = None, results: ResultCache | None = None,
                 name: str = "lmviz-task", total: int = 0, inline_s: float = 0.0) -> TaskSnapshot:
        with self._lock:
            if self._closed:
                return TaskSnapshot("stopped", 0, total, 0)
            cur = self._tasks.get(purpose)
            if cur is not None and cur[0] != key:
                cur[1].cancel()                        # another value now: the old work stops
                del self._tasks[purpose]
                cur = None
            hit = results.get((purpose, key), _MISS) if results is not None else _MISS
            if hit is not _MISS:
                return TaskSnapshot("done", total or 1, total or 1, 0, result=hit)
            if cur is not None:
                return self._seen(cur[1].snapshot(), (purpose, key), results)
            if inline_s > 0:
                try:
                    result = work(InlineContext(inline_s))
                except Cancelled:
                    pass                               # longer than the budget: a task does it
                else:
                    if results is not None:
                        results.put((purpose, key), result)
                    return TaskSnapshot("done", total or 1, total or 1, 0, result=result)
            task = Task(work, semaphore, name=name, total=total).start()
            self._tasks[purpose] = (key, task)
            return self._seen(task.snapshot(), (purpose, key), results)

    @staticmethod
    def _seen(snap: TaskSnapshot, key: Any, results: ResultCache | None) -> TaskSnapshot:
        if snap.state == "done" and results is not None:
            results.put(key, snap.result)
        return snap

    def task(self, purpose: str) -> Task | None:
        """The purpose's current task (None when none was started or its result came cached)."""
        with self._lock:
            cur = self._tasks.get(purpose)
            return cur[1] if cur is not None else None

    def cancel(self, purpose: str) -> None:
        with self._lock:
            cur = self._tasks.pop(purpose, None)
        if cur is not None:
            cur[1].cancel()

    def close(self) -> None:
        """The owner went away: cancel all its tasks; later calls start nothing."""
        with self._lock:
            self._closed = True
            tasks, self._tasks = list(self._tasks.values()), {}
        for _, task in tasks:
            task.cancel()


# ---------------------------------------------------------------- trainings by secret ----

class RegistryFull(RuntimeError):
    """Every entry of the Registry holds a live task: a new one is refused (none is evicted)."""


class Registry:
    """Server-wide tasks by secret, so that a reloaded page, or another tab with the link, finds
    its task again. Every session that shows the task is one of its *watchers*:

        secret = runs.add(task, session)     # a fresh secrets.token_urlsafe; the page puts it in its URL
        runs.claim(secret, other_session)    # a session with that secret: the task (now watched), or None
        runs.release(secret, session)        # the session ended: when no watcher is left, cancel after grace_s
        runs.leave(secret, session)          # the session moved on (reset, a new run): likewise, at once

    The secret is 32 random bytes (never guessable, never derived from anything shown). A task
    is cancelled only when *no* session watches it any more: ``grace_s`` seconds after its last
    watcher ended (unless a session claimed it meanwhile; a reload), or at once when its last
    watcher left it; then the entry is forgotten (its records and model are freed). Opening the
    link in a second tab and closing that tab leaves the first tab's run alone.

    At most ``max_entries`` are kept. A full registry forgets the oldest entry whose task has
    ended (an unwatched one first); it never forgets a live task (queued, preparing, running,
    paused): nobody could reach it to stop it. When every entry is live, ``add`` raises
    :class:`RegistryFull` and the new task must not start.

    >>> runs = Registry(grace_s=0.0)
    >>> t = Task(lambda ctx: ctx.check() or time.sleep(0.05) or 1); s = runs.add(t, "a")
    >>> runs.claim("wrong", "b") is None, runs.claim(s, "b") is t, runs.watchers(s), len(s) >= 40
    (True, True, 2, True)
    """

    def __init__(self, max_entries: int = 64, grace_s: float = 30.0):
        self.max_entries = max_entries
        self.grace_s = grace_s
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}          # oldest first

    def add(self, task: "Task", owner: Any) -> str:
        """Register ``task`` (watched by ``owner``) under a fresh secret; RegistryFull when every
        entry holds a live task (call it before ``task.start()``)."""
        import secrets

        with self._lock:
            while len(self._entries) >= self.max_entries:
                if not self._forget_an_ended_one():
                    raise RegistryFull(f"all {self.max_entries} places for trainings on this server "
                                       f"are taken by trainings that are still going")
            secret = secrets.token_urlsafe(32)
            self._entries[secret] = _Entry(task, [owner])
        return secret

    def _forget_an_ended_one(self) -> bool:
        ended = [(s, e) for s, e in self._entries.items() if e.task.state in FINAL]
        for s, e in sorted(ended, key=lambda se: bool(se[1].watchers)):     # stable: oldest first
            self._forget(s)
            return True
        return False

    def _forget(self, secret: str) -> "_Entry":
        e = self._entries.pop(secret)
        if e.timer is not None:
            e.timer.cancel()
        return e

    def claim(self, secret: Any, watcher: Any) -> "Task | None":
        """The task registered under ``secret`` (now also watched by ``watcher``), or None."""
        if not isinstance(secret, str) or not 0 < len(secret) <= 100:
            return None
        with self._lock:
            e = self._entries.get(secret)
            if e is None:
                return None
            if e.timer is not None:                    # a reload within the grace period
                e.timer.cancel()
                e.timer = None
            if not any(w is watcher for w in e.watchers):
                e.watchers.append(watcher)
            return e.task

    def release(self, secret: Any, watcher: Any) -> None:
        """``watcher`` ended: when it was the last one, cancel the task after grace_s unless a
        session claims it first."""
        with self._lock:
            e = self._entries.get(secret)
            if e is None or not self._drop_watcher(e, watcher) or e.watchers:
                return
            e.timer = threading.Timer(self.grace_s, self._expire, args=(secret, e))
            e.timer.daemon = True
            e.timer.start()

    def leave(self, secret: Any, watcher: Any) -> bool:
        """``watcher`` moved on (reset, another run): when it was the last one, cancel the task
        and forget it now. True when the task was left to other watchers (not cancelled)."""
        with self._lock:
            e = self._entries.get(secret)
            if e is None or not self._drop_watcher(e, watcher):
                return False
            if e.watchers:
                return True
            self._forget(secret)
        e.task.cancel()
        return False

    def watchers(self, secret: Any) -> int:
        """How many sessions watch the task under ``secret`` (0: none, or no such secret)."""
        with self._lock:
            e = self._entries.get(secret) if isinstance(secret, str) else None
            return len(e.watchers) if e is not None else 0

    @staticmethod
    def _drop_watcher(e: "_Entry", watcher: Any) -> bool:
        for i, w in enumerate(e.watchers):
            if w is watcher:
                del e.watchers[i]
                return True
        return False

    def _expire(self, secret: str, entry: "_Entry") -> None:
        with self._lock:
            if self._entries.get(secret) is not entry or entry.watchers:
                return                                # claimed (or forgotten) in the meantime
            del self._entries[secret]
        entry.task.cancel()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass
class _Entry:
    task: Task
    watchers: list                    # the sessions that show this task (compared by identity)
    timer: threading.Timer | None = None
