"""A training run as a background task (``lmviz.server.tasks``), with the records a page draws.

    job = TrainingJob(lambda cancel: Trainer(text, cfg, cancel=cancel), semaphore)
    job.start()                 # returns at once; the worker thread does everything else
    snap = job.snapshot()       # a consistent copy of the state, for the page to draw
    job.pause(); job.resume(); job.cancel()

The thread, the first-come queue on the shared semaphore, pause, cancel, error messages and the
lifecycle (states, "stopped" at once, "preparing" while the trainer is built) are
``lmviz.server.tasks.Task``'s. A training on a Ray cluster is the same job with another slot
(``lmviz.server.train_ray.RayTrainingJob``); :func:`lmviz.server.train_backend.training_job` picks one. This
module adds what a training publishes:

- every step's ``StepMetrics``; every ``eval_every`` steps the worker measures validation loss,
  samples the fixed prompt, records the attention of that prompt, and publishes a CPU copy of the
  weights (``snapshot().model`` with ``model_version``): the other chapters show that copy while
  training continues on the original. ``info["baselines"]`` holds the uniform and unigram
  baselines of the run's tokenizer and split (``lmviz.baselines.Baselines``).
- a training replay (``lmviz.replay``): at log-spaced steps the worker snapshots one layer's
  attention on a fixed held-out sentence, the 2-D PCA of the token embeddings and the next-token
  distribution at the fixed prompt (``snapshot().replay``; at most ``replay.DEFAULT_MAX_COUNT``
  snapshots and ``replay.DEFAULT_MAX_BYTES`` bytes, whatever the run's length). The chunks stop
  on every scheduled step, so each snapshot sees the model at its own step.
- ``make_trainer(cancel)`` is called on the worker (building a BPE or encoding a corpus can take
  seconds) after the slot is acquired; it gets the task's cancel callback, so Stop or a closed tab
  ends the preparation, the evaluations and the samples within a fraction of a second.
"""
from __future__ import annotations

import inspect
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from lmviz.server.tasks import FINAL, STATES, Cancelled, Task, check_cancel, is_active


PACE_WINDOW_S = 20.0       # a run's pace is measured over its last 20 s of running, or over the
                           # last half of its running when that is longer (see pace)
PACE_POINTS = 2048         # (seconds, steps) points kept: a chunk is >= a few ms, so > 20 s of them
                           # (the half-run window then spans what is kept)


def pace(points: list) -> tuple[float, float]:
    """(steps per second, seconds measured over) from (seconds of running, steps done) points,
    oldest first, over the last PACE_WINDOW_S of them or the last half of the run, whichever is
    longer; (0.0, 0.0) before two points. The window grows with the run: a 20 s window alone
    moved with every evaluation that fell in it, and a student watched the time left jump
    509 -> 409 -> 171 -> 207 s; the last half still follows a change of the machine's load.

    >>> pace([(0.0, 0), (10.0, 100), (30.0, 500)])     # the last 20 s: 400 steps
    (20.0, 20.0)
    >>> pace([(0.0, 0), (40.0, 400), (80.0, 1000)])     # 80 s run: the last 40 s, 600 steps
    (15.0, 40.0)
    >>> pace([(0.0, 0), (2.0, 10)]), pace([(0.0, 0)])
    ((5.0, 2.0), (0.0, 0.0))
    """
    if len(points) < 2:
        return 0.0, 0.0
    t1, s1 = points[-1]
    window = max(PACE_WINDOW_S, (t1 - points[0][0]) / 2)
    t0, s0 = next(((t, s) for t, s in points if t >= t1 - window), points[0])
    if (t0, s0) == (t1, s1):                    # the last chunk alone was longer than the window
        t0, s0 = points[-2]
    dt = t1 - t0
    return ((s1 - s0) / dt, dt) if dt > 0 else (0.0, 0.0)


@dataclass(frozen=True)
class JobSnapshot:
    state: str                       # one of STATES
    step: int                        # optimizer steps taken
    max_steps: int                   # steps of the whole run (0 until the trainer exists)
    queue_position: int              # 1 = next to start; 0 when not queued
    tokens_per_s: float              # mean over the last few steps (0 before the first)
    eta_s: float | None              # seconds left at ``steps_per_s`` (None when unknown)
    elapsed_s: float                 # seconds spent running, evaluations included (pauses and queueing not)
    steps: list = field(default_factory=list)     # StepMetrics, oldest first
    evals: list = field(default_factory=list)     # EvalMetrics, oldest first
    samples: list = field(default_factory=list)   # Sample, oldest first
    attention: Any = None            # (labels, weights [L,H,T,T]) at the latest evaluation
    model: Any = None                # CPU eval-mode GPT copy at the latest evaluation
    model_version: int = 0           # bumps every time ``model`` is replaced
    tokenizer: Any = None            # the run's tokenizer (None until prepared)
    info: dict = field(default_factory=dict)      # params, vocab size, tokens, device
    error: str | None = None         # a message for people when state == "error"
    replay: Any = None               # lmviz.replay.Replay so far (None: this run keeps no replay)
    steps_per_s: float = 0.0         # this run's pace over its last PACE_WINDOW_S of running
    #                                  (evaluations, samples and snapshots included; pauses not)
    pace_s: float = 0.0              # the seconds of running that pace was measured over

    @property
    def active(self) -> bool:
        """True while the page should keep polling (``lmviz.server.tasks.is_active``)."""
        return is_active(self.state)


def _takes_cancel(make: Callable) -> bool:
    try:
        return len(inspect.signature(make).parameters) >= 1
    except (TypeError, ValueError):
        return False


class TrainingJob(Task):
    """One training run as a Task (start, pause, resume, cancel, join, queue_position and the
    lifecycle are Task's). ``make_trainer(cancel)`` (or ``make_trainer()``) builds the Trainer on
    the worker thread, after the semaphore slot is acquired; meanwhile the job reads "preparing"."""

    def __init__(self, make_trainer: Callable[..., Any], semaphore: threading.BoundedSemaphore | None = None,
                 chunk: int = 5, poll_s: float = 0.05, on_eval: Callable[[Any], None] | None = None,
                 meta: dict | None = None):
        # a class's lecturer's run (meta "lecturer") waits ahead of the students' runs
        super().__init__(self._work, semaphore, name="lmviz-training", poll_s=poll_s, phase="preparing",
                         priority=0 if (meta or {}).get("lecturer") else 1)
        self.meta = dict(meta or {})          # what is trained (corpus, preset, label, lecturer): set once, read by pages
        self._make = make_trainer
        self._chunk = chunk                   # steps between looks at pause/cancel
        self._on_eval = on_eval               # optional hook(trainer) after each evaluation (tests)
        # the records below change under the task's lock, with the state: a snapshot never pairs
        # new records with an old state (steps taken but "preparing")
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
        self.trainer = None                   # the live Trainer while the run lasts (tests)
        self._recorder = None                 # lmviz.replay.Recorder of this run (None: no replay)
        self._pace: deque = deque(maxlen=PACE_POINTS)   # (run seconds, steps done) after each chunk

    def snapshot(self, last: int | None = None) -> JobSnapshot:
        """A consistent copy of everything the page draws (``last``: keep only the newest steps)."""
        pos = self.queue_position()
        with self._lock:
            state = self._shown()
            steps = self._steps[-last:] if last else list(self._steps)
            recent = self._steps[-20:]
            tps = sum(m.tokens_per_s for m in recent) / len(recent) if recent else 0.0
            step = self._steps[-1].step if self._steps else 0
            sps, over = self._pace_now()
            eta = (self._max_steps - step) / sps if sps > 0 and self._max_steps else None
            return JobSnapshot(state, step, self._max_steps, pos if state == "queued" else 0, tps, eta,
                               self._elapsed, steps, list(self._evals), list(self._samples), self._attention,
                               self._model, self._version, self._tokenizer, dict(self._info), self._error,
                               self._replay_so_far(), sps, over)

    def _pace_now(self) -> tuple[float, float]:
        """(steps per second, seconds measured over) of this run (called under the lock)."""
        return pace(list(self._pace))

    def _replay_so_far(self):
        """The run's training replay so far (None: this run keeps none)."""
        return self._recorder.replay() if self._recorder is not None else None

    # -- worker --------------------------------------------------------------------------------
    def _work(self, ctx) -> None:
        tr = self._make(ctx.cancelled) if _takes_cancel(self._make) else self._make()
        check_cancel(ctx.cancelled)
        tr.cancel = ctx.cancelled
        self.trainer = tr
        try:
            self._train(ctx, tr)
        finally:
            # the run is over: its optimizer state, gradients and batches go (the published copy
            # of the weights stays in the snapshots; lmviz.server.tasks gives the memory back)
            self.trainer = None
            tr.cancel = None

    def _train(self, ctx, tr) -> None:
        from lmviz.baselines import unigram_baseline

        unknown = list(getattr(tr, "unknown", []))   # a fine-tune's characters outside its vocabulary
        info = {"params": tr.num_params(), "vocab_size": tr.tokenizer.vocab_size,
                "train_tokens": len(tr.train_ids), "val_tokens": len(tr.val_ids),
                "device": str(tr.device), "prompt": tr.prompt,
                "unknown": unknown[:50], "n_unknown": len(unknown),
                "baselines": unigram_baseline(tr.train_ids, tr.val_ids, tr.tokenizer.vocab_size)}
        with self._lock:
            self._max_steps, self._tokenizer, self._info = tr.cfg.max_steps, tr.tokenizer, info
        rec = self._start_replay(tr)
        self._checkpoint(ctx, tr, phase="running")       # the step-0 records and the phase together
        with self._lock:
            self._pace.append((0.0, tr.steps_done))
        while not tr.done:
            ctx.check()                        # pause waits here; Stop raises Cancelled
            t0 = time.perf_counter()
            n = min(self._chunk, tr.cfg.eval_every - tr.steps_done % tr.cfg.eval_every)
            if rec is not None:                # stop on the next replay step (only a chunk's last can be one)
                n = min(n, rec.steps_to_next(tr.steps_done) or n)
            ms = tr.step(n)
            check_cancel(ctx.cancelled)        # stopped meanwhile: these steps are not published
            if rec is not None and ms:
                rec.after_step(tr.model, tr.tokenizer, ms[-1].step, ms[-1].loss)
            with self._lock:
                self._steps.extend(ms)
            ctx.progress(tr.steps_done, tr.cfg.max_steps)
            if tr.steps_done % tr.cfg.eval_every == 0 or tr.done:
                self._checkpoint(ctx, tr)
            with self._lock:                   # the chunk's time, its checkpoint included
                self._elapsed += time.perf_counter() - t0
                self._pace.append((self._elapsed, tr.steps_done))

    def _start_replay(self, tr):
        """The run's replay Recorder, with its step-0 snapshot (None when the probe does not fit
        this tokenizer: the run trains without a replay). The probe sentence comes from the end
        of the validation text, which the model never trains on."""
        from lmviz.replay import Recorder, default_probe

        try:
            held_out = tr.tokenizer.decode(tr.val_ids[-20_000:].tolist())
            rec = Recorder(default_probe(held_out, tr.prompt), max_steps=tr.cfg.max_steps)
            rec.start(tr.model, tr.tokenizer)
        except ValueError:
            return None
        with self._lock:
            self._recorder = rec
        return rec

    def _checkpoint(self, ctx, tr, phase: str | None = None) -> None:
        """Evaluate, sample, look at attention and publish a copy of the weights (and, with
        ``phase``, enter that phase in the same locked step)."""
        from lmviz.train import copy_model

        ev = tr.evaluate()
        sm = tr.sample()
        att = tr.attention()
        model = copy_model(tr.model)
        check_cancel(ctx.cancelled)            # stopped meanwhile: nothing more is published
        with self._lock:
            if phase is not None:
                self._set_phase(phase)
            self._evals.append(ev)
            self._samples.append(sm)
            self._attention = (att[0], att[1].numpy())
            self._model = model
            self._version += 1
        if self._on_eval is not None:
            self._on_eval(tr)


__all__ = ["Cancelled", "JobSnapshot", "STATES", "FINAL", "TrainingJob"]
