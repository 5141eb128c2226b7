"""A training that runs in another process, watched from this server: both sides.

- **The worker's side**, :class:`TrainingWorker`: the one training loop (a local
  :class:`~lmviz.server.train_job.TrainingJob`) and what is new since the server's last look.
- **The server's side**, :class:`WorkerTrainingJob`: a TrainingJob whose task thread is a poller.
  It asks the worker every ``poll_s``, and at once after a press (pause, resume, stop), for
  what is new (step, evaluation and sample records, the attention of the fixed prompt, the
  replay, the pace, and after each evaluation the published weights as checkpoint bytes,
  ``lmviz.checkpoint.save_checkpoint``) and merges it into the job's records; ``snapshot()``
  only copies those, so a page never waits on the worker.

Where the worker lives is a subclass's: a Ray actor on a cluster (``lmviz.server.train_ray``) or
a child process of this server (``lmviz.server.train_process``). A subclass sends a call to the
worker (``_call``), names its failures (``SAID``, ``FAILED``, ``STOPPED``) and may add where it
runs to the device line (``_device``); the lifecycle, the records and the messages of a training
that fails on the worker are this module's.
"""
from __future__ import annotations

import os
import socket
import threading
from typing import Any, Callable

from lmviz.limits import SaidError
from lmviz.server.tasks import Cancelled, Said
from lmviz.server.train_job import TrainingJob


CANCEL_TIMEOUT_S = 10.0   # Stop waits at most this long for the worker's answer (the worker is removed anyway)


class TrainingWorker:
    """One training where the worker runs: a local TrainingJob (the one training loop) and what
    is new since the server's last look."""

    def __init__(self, make_trainer: Callable[..., Any], chunk: int) -> None:
        self.job = TrainingJob(make_trainer, None, chunk=chunk)
        self.sent_version = 0
        self.sent_replay = None

    def ready(self) -> dict:
        return {"node": socket.gethostname(), "pid": os.getpid()}

    def start(self) -> None:
        self.job.start()

    def pause(self) -> None:
        self.job.pause()

    def resume(self) -> None:
        self.job.resume()

    def cancel(self) -> None:
        self.job.cancel()
        self.job.join(5)

    def poll(self, n_steps: int, n_evals: int, n_samples: int) -> dict:
        snap = self.job.snapshot()
        # the state as the training has taken the asks ("paused" once it has stopped there): the
        # server's job reads as asked by itself
        out = {"state": self.job.worker_state, "error": snap.error, "max_steps": snap.max_steps,
               "elapsed_s": snap.elapsed_s, "info": snap.info, "steps": snap.steps[n_steps:],
               "evals": snap.evals[n_evals:], "samples": snap.samples[n_samples:], "checkpoint": None,
               "pace": (snap.steps_per_s, snap.pace_s)}
        if snap.model is not None and snap.model_version != self.sent_version:
            from lmviz.checkpoint import save_checkpoint

            out["checkpoint"] = save_checkpoint(snap.model, snap.tokenizer, {"steps": snap.step})
            out["attention"] = snap.attention
            self.sent_version = snap.model_version
        rp = snap.replay
        key = None if rp is None else (len(rp), rp.snapshots[-1].step if len(rp) else -1)
        if key != self.sent_replay:
            out["replay"] = rp
            self.sent_replay = key
        return out


class WorkerTrainingJob(TrainingJob):
    """A TrainingJob whose training runs in a :class:`TrainingWorker` elsewhere (module
    docstring). ``trainer`` stays None (the Trainer lives on the worker)."""

    def __init__(self, make_trainer: Callable[..., Any], semaphore=None, chunk: int = 5,
                 poll_s: float = 0.5, on_eval=None, meta: dict | None = None):
        super().__init__(make_trainer, semaphore, chunk=chunk, poll_s=poll_s, meta=meta)
        self._remote_paused = False
        self._where = ""                      # where the training runs, as the page names it
        self._remote_replay = None            # the worker's latest training replay (if it keeps one)
        self._remote_pace = (0.0, 0.0)        # the worker's measured pace (steps/s, seconds over)
        self._asked = threading.Event()       # a press (pause, resume, stop): the poller goes at once
        self.watch(self, self._press)         # (the task tells its watchers of each press)

    # -- what a subclass gives ------------------------------------------------------------------
    BACKEND = ""              # "ray" or "process": where the worker lives (``snapshot().info["backend"]``)
    SAID = SaidError          # the error of this place: a catalogue key and its params
    FAILED = ""               # catalogue key: the training failed there with no message of its own
    STOPPED = ""              # catalogue key: it was stopped there, not from this server

    def _call(self, method: str, *args, within: float | None = None):
        """``TrainingWorker.method(*args)`` on the worker, within ``within`` seconds at most (None:
        the backend's own timeout); raises ``SAID`` when it cannot."""
        raise NotImplementedError

    def _device(self, device: str) -> str:
        """The device line the page shows for the worker's ``device``."""
        return device

    def _press(self) -> bool:
        """A watcher of this task (it is also told of the state's moves: one more look then)."""
        self._asked.set()
        return True

    def _cancel_remote(self) -> None:
        try:
            self._call("cancel", within=CANCEL_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - it is being removed anyway
            pass

    # -- the poller (the task's worker thread) -------------------------------------------------
    def _replay_so_far(self):
        return self._remote_replay

    def _pace_now(self) -> tuple[float, float]:
        return self._remote_pace

    def _work(self, ctx) -> None:
        self._call("start")
        n_steps = n_evals = n_samples = 0
        while True:
            if ctx.cancelled():
                self._cancel_remote()
                raise Cancelled("stopped")
            if self.paused != self._remote_paused:
                self._call("pause" if self.paused else "resume")
                self._remote_paused = self.paused
            d = self._call("poll", n_steps, n_evals, n_samples)
            self._merge(d)
            n_steps += len(d["steps"])
            n_evals += len(d["evals"])
            n_samples += len(d["samples"])
            state = d["state"]
            if state == "done":
                return None
            if state == "error":
                err = d["error"]          # the worker's own message (a Said keeps its key)
                if isinstance(err, Said):
                    raise self.SAID(err.key, **err.params)
                raise RuntimeError(err) if err else self.SAID(self.FAILED)
            if state == "stopped":
                raise self.SAID(self.STOPPED)
            ctx.progress(n_steps and self._steps[-1].step, d["max_steps"])
            self._asked.wait(self._poll_s)
            self._asked.clear()

    def _merge(self, d: dict) -> None:
        """Add what the worker sent, and take on its state, in one locked step: a snapshot that
        shows the worker's steps never reads "preparing"."""
        model = tok = None
        if d.get("checkpoint"):
            from lmviz.checkpoint import load_checkpoint

            model, tok, _ = load_checkpoint(d["checkpoint"])
        remote = d["state"]
        with self._lock:
            self._steps.extend(d["steps"])
            self._evals.extend(d["evals"])
            self._samples.extend(d["samples"])
            self._max_steps, self._elapsed = d["max_steps"], d["elapsed_s"]
            self._remote_pace = tuple(d.get("pace", (0.0, 0.0)))
            if d["info"]:               # where it runs: "backend", "worker" and the device line
                self._info = {**d["info"], "backend": self.BACKEND, "worker": self._where,
                              "device": self._device(d["info"].get("device", "?"))}
            if d.get("replay") is not None:
                self._remote_replay = d["replay"]
            if model is not None:
                self._model, self._tokenizer, self._attention = model, tok, d.get("attention")
                self._version += 1
            if remote in ("running", "paused", "done"):
                self._set_phase("running")      # the end of preparing, told to the watchers
            if remote in ("running", "paused") and self._state in ("running", "paused"):
                self._move(remote)


__all__ = ["TrainingWorker", "WorkerTrainingJob"]
