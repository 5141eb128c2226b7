"""A training run in a background thread, observable from a web page that polls it.

    job = TrainingJob(lambda: Trainer(text, cfg), semaphore)
    job.start()                 # returns at once; the worker thread does everything else
    snap = job.snapshot()       # a consistent copy of the state, for the page to draw
    job.pause(); job.resume(); job.stop()

Rules the page relies on:

- The worker never calls Streamlit (it has no script context); it only appends records to lists
  guarded by one lock. ``snapshot()`` copies them under that lock, so a page never sees a
  half-written state.
- A shared ``threading.BoundedSemaphore`` caps concurrent trainings across all sessions. A job
  waits its turn in first-come order (``queue_position`` 1, 2, ...) and gives the slot back
  when it ends, however it ends (done, stopped, error).
- Every ``eval_every`` steps the worker measures validation loss, samples the fixed prompt,
  records the attention of that prompt, and publishes a CPU copy of the weights
  (``snapshot().model`` with ``model_version``): the other chapters show that copy while
  training continues on the original.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

STATES = ("new", "queued", "preparing", "running", "paused", "done", "stopped", "error")
FINAL = ("done", "stopped", "error")

_QUEUE_LOCK = threading.Lock()
_QUEUES: dict[int, list] = {}      # id(semaphore) -> jobs waiting on it, first come first


@dataclass(frozen=True)
class JobSnapshot:
    state: str                       # one of STATES
    step: int                        # optimizer steps taken
    max_steps: int                   # steps of the whole run (0 until the trainer exists)
    queue_position: int              # 1 = next to start; 0 when not queued
    tokens_per_s: float              # mean over the last few steps (0 before the first)
    eta_s: float | None              # seconds left at that rate (None when unknown)
    elapsed_s: float                 # seconds spent running (pauses and queueing excluded)
    steps: list = field(default_factory=list)     # StepMetrics, oldest first
    evals: list = field(default_factory=list)     # EvalMetrics, oldest first
    samples: list = field(default_factory=list)   # Sample, oldest first
    attention: Any = None            # (labels, weights [L,H,T,T]) at the latest evaluation
    model: Any = None                # CPU eval-mode GPT copy at the latest evaluation
    model_version: int = 0           # bumps every time ``model`` is replaced
    tokenizer: Any = None            # the run's tokenizer (None until prepared)
    info: dict = field(default_factory=dict)      # params, vocab size, tokens, device
    error: str | None = None         # the error message when state == "error"

    @property
    def active(self) -> bool:
        """True while the page should keep polling (queued, preparing, running or paused)."""
        return self.state in ("queued", "preparing", "running", "paused")


class TrainingJob:
    """One training run on a worker thread. ``make_trainer`` is called on that thread (building
    a BPE or encoding a corpus can take a second), after the semaphore is acquired."""

    def __init__(self, make_trainer: Callable[[], Any], semaphore: threading.BoundedSemaphore | None = None,
                 chunk: int = 5, poll_s: float = 0.05, on_eval: Callable[[Any], None] | None = None):
        self._make = make_trainer
        self._sem = semaphore
        self._chunk = chunk                   # steps between looks at the pause/stop events
        self._poll_s = poll_s
        self._on_eval = on_eval               # optional hook(trainer) after each evaluation (tests)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._run = threading.Event()         # set = may run, clear = paused
        self._run.set()
        self._state = "new"
        self._steps: list = []
        self._evals: list = []
        self._samples: list = []
        self._attention = None
        self._model = None
        self._version = 0
        self._tokenizer = None
        self._info: dict = {}
        self._max_steps = 0
        self._elapsed = 0.0
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self.trainer = None                   # the live Trainer, for tests and the checkpoint

    # -- control (any thread) ------------------------------------------------------------------
    def start(self) -> "TrainingJob":
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("this job was already started")
            self._state = "queued" if self._sem is not None else "preparing"
            self._thread = threading.Thread(target=self._main, name="lmviz-training", daemon=True)
        if self._sem is not None:
            with _QUEUE_LOCK:
                _QUEUES.setdefault(id(self._sem), []).append(self)
        self._thread.start()
        return self

    def pause(self) -> None:
        self._run.clear()

    def resume(self) -> None:
        self._run.set()

    def stop(self) -> None:
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
        """True once pause() was asked (the worker pauses at its next look at the events)."""
        return not self._run.is_set()

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    def queue_position(self) -> int:
        with _QUEUE_LOCK:
            q = _QUEUES.get(id(self._sem), [])
            return q.index(self) + 1 if self in q else 0

    def snapshot(self, last: int | None = None) -> JobSnapshot:
        """A consistent copy of everything the page draws (``last``: keep only the newest steps)."""
        pos = self.queue_position()
        with self._lock:
            steps = self._steps[-last:] if last else list(self._steps)
            recent = self._steps[-20:]
            tps = sum(m.tokens_per_s for m in recent) / len(recent) if recent else 0.0
            step = self._steps[-1].step if self._steps else 0
            eta = None
            if recent and self._max_steps:
                ms = sum(m.dt_ms for m in recent) / len(recent)
                eta = (self._max_steps - step) * ms / 1e3
            return JobSnapshot(self._state, step, self._max_steps, pos, tps, eta, self._elapsed,
                               steps, list(self._evals), list(self._samples), self._attention,
                               self._model, self._version, self._tokenizer, dict(self._info), self._error)

    # -- worker --------------------------------------------------------------------------------
    def _set(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, "_" + k, v)

    def _wait_turn(self) -> bool:
        """Block until this job holds a semaphore slot (first come, first served); False if stopped."""
        if self._sem is None:
            return True
        key = id(self._sem)
        try:
            while not self._stop.is_set():
                with _QUEUE_LOCK:
                    first = _QUEUES.get(key, [None])[0] is self
                if first and self._sem.acquire(timeout=self._poll_s):
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
        if not self._wait_turn():
            self._set(state="stopped")
            return
        try:
            self._set(state="preparing")
            tr = self._make()
            self.trainer = tr
            self._set(max_steps=tr.cfg.max_steps, tokenizer=tr.tokenizer,
                      info={"params": tr.num_params(), "vocab_size": tr.tokenizer.vocab_size,
                            "train_tokens": len(tr.train_ids), "val_tokens": len(tr.val_ids),
                            "device": str(tr.device), "prompt": tr.prompt})
            self._checkpoint(tr)
            while not self._stop.is_set() and not tr.done:
                if not self._run.is_set():
                    self._set(state="paused")
                    self._run.wait()
                    continue
                self._set(state="running")
                t0 = time.perf_counter()
                n = min(self._chunk, tr.cfg.eval_every - tr.steps_done % tr.cfg.eval_every)
                ms = tr.step(n)
                with self._lock:
                    self._steps.extend(ms)
                    self._elapsed += time.perf_counter() - t0
                if tr.steps_done % tr.cfg.eval_every == 0 or tr.done:
                    self._checkpoint(tr)
            self._set(state="stopped" if self._stop.is_set() and not tr.done else "done")
        except Exception as e:  # noqa: BLE001 - the page shows the message; the thread must not die silently
            self._set(state="error", error=f"{type(e).__name__}: {e}")
            traceback.print_exc()
        finally:
            self._sem is not None and self._sem.release()

    def _checkpoint(self, tr) -> None:
        """Evaluate, sample, look at attention and publish a copy of the weights."""
        from .train import copy_model

        ev = tr.evaluate()
        sm = tr.sample()
        att = tr.attention()
        model = copy_model(tr.model)
        with self._lock:
            self._evals.append(ev)
            self._samples.append(sm)
            self._attention = (att[0], att[1].numpy())
            self._model = model
            self._version += 1
        if self._on_eval is not None:
            self._on_eval(tr)
