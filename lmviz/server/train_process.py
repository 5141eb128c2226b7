"""Trainings in a process of their own, beside this server: the backend
``lmviz.server.train_backend.training_job`` picks when ``LMVIZ_TRAIN_PROCESS=1`` (and no Ray address).

    LMVIZ_TRAIN_PROCESS=1 streamlit run serve.py    # every training runs in its own process

Why: a training on a thread of the server shares the server's Python (one interpreter lock) with
every session's page runs. With 20-30 sessions moving sliders it ran 1.1-1.5 times (once 3.3
times) slower than alone, and nothing bounded that (bench/train_zh.py --with-load). In a process
of its own the operating system gives it its share of the cores, whatever the pages do.

- **The slot** is the server's training cap, as for a training on a thread (the semaphore,
  first come first served, "queued" while waiting); the process is started once the slot is
  held and ended when the job ends, however it ends.
- **Starting** costs a fork, not an import: the processes are forked from multiprocessing's fork
  server, which imports torch and lmviz once (``forkserver`` with ``lmviz.train`` preloaded),
  started as the server starts (:func:`warm`, from serve.py; else by the first training, whose
  "preparing" phase then takes the seconds of that import). A training process never imports
  the server's main module (:func:`_without_main`). The processes run at the priority
  of the thread that started the fork server: serve.py's, the server's own (a task's thread,
  the first training's, is at nice 19, and without privileges a process cannot come back).
- **The training** is the one training loop (a local TrainingJob in a
  :class:`~lmviz.server.train_worker.TrainingWorker`), watched by a
  :class:`~lmviz.server.train_worker.WorkerTrainingJob` poller every ``LMVIZ_TRAIN_POLL_S``
  (0.2 s) over a pipe. ``make_trainer`` must pickle (a ``functools.partial`` of a module
  function, as ``lmviz.train.make_trainer``).
- **Failures are sentences**: every call has a timeout (``LMVIZ_TRAIN_TIMEOUT``, 30 s); a process
  that dies (killed, out of memory) ends the job in "error" saying so; a training that fails there
  ends with its own message; Stop ends the process.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from lmviz.limits import SaidError
from lmviz.server.env import env_float
from lmviz.server.train_worker import TrainingWorker, WorkerTrainingJob

_CONTEXT = None
_CONTEXT_LOCK = threading.Lock()


def timeout_s() -> float:
    """Seconds any call to the training's process may take (LMVIZ_TRAIN_TIMEOUT, default 30)."""
    return env_float("LMVIZ_TRAIN_TIMEOUT", 30.0)


class ProcessError(SaidError, RuntimeError):
    """The training's process cannot go on; ``key`` and ``params`` name the sentence in the
    catalogue (the page says it in its own language), ``str()`` is the English one."""


NAME = "lmviz-training"       # the training processes' name (and how _without_main knows them)


def _without_main(get_preparation_data):
    """``multiprocessing.spawn.get_preparation_data`` that leaves the parent's main module out of
    what a training process is told to import. In a Streamlit server ``sys.modules["__main__"]``
    is the app script while a page runs, and a child told to import it runs the whole app (under
    a test runner's AppTest, a script that cannot run at all). A training process needs only
    ``serve`` and what it imports; other processes are left as they are."""
    def prepared(name):
        data = get_preparation_data(name)
        if name == NAME:
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    prepared.lmviz_without_main = True
    return prepared


def _context():
    """multiprocessing's fork server context, with torch and lmviz imported there once."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            import multiprocessing
            from multiprocessing import spawn

            if not getattr(spawn.get_preparation_data, "lmviz_without_main", False):
                spawn.get_preparation_data = _without_main(spawn.get_preparation_data)
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["lmviz.train", "lmviz.server.train_process"])
            _CONTEXT = ctx
        return _CONTEXT


def warm() -> None:
    """Start the fork server now (it imports torch and lmviz on its own), so that even the first
    training's process is a fork; returns at once (serve.py calls it as the server starts)."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def serve(conn, make_trainer: Callable[..., Any], chunk: int) -> None:
    """The training's process: a TrainingWorker answering the server's calls on ``conn``
    (``(method, args)`` in, ``("ok", value)`` or ``("err", message)`` out) until the server
    cancels it or goes away."""
    worker = TrainingWorker(make_trainer, chunk)
    try:
        while True:
            try:
                method, args = conn.recv()
            except (EOFError, OSError):          # the server has gone
                break
            try:
                conn.send(("ok", getattr(worker, method)(*args)))
            except Exception as e:  # noqa: BLE001 - sent back as one sentence
                conn.send(("err", f"{type(e).__name__}: {e}"[:200]))
            if method == "cancel":
                break
    finally:
        worker.job.cancel()


class ProcessTrainingJob(WorkerTrainingJob):
    """A training in a process of its own (module docstring); same constructor, API and
    lifecycle as a local TrainingJob."""

    BACKEND = "process"
    SAID, FAILED, STOPPED = ProcessError, "train.err_process_failed", "train.err_process_stopped"

    def __init__(self, make_trainer: Callable[..., Any], semaphore=None, chunk: int = 5,
                 poll_s: float | None = None, on_eval=None, meta: dict | None = None):
        super().__init__(make_trainer, semaphore, chunk=chunk,
                         poll_s=poll_s or env_float("LMVIZ_TRAIN_POLL_S", 0.2), meta=meta)
        self._proc = None
        self._conn = None
        self._pipe = threading.Lock()         # one call on the pipe at a time

    def _work(self, ctx) -> None:
        self._spawn()
        self._where = f"process {self._call('ready')['pid']}"
        super()._work(ctx)

    def _spawn(self) -> None:
        mp = _context()
        here, there = mp.Pipe()
        proc = mp.Process(target=serve, args=(there, self._make, self._chunk), name=NAME, daemon=True)
        try:
            proc.start()
        except Exception as e:  # noqa: BLE001 - e.g. a training that cannot be sent (pickled)
            raise ProcessError("train.err_process_send", why=str(e).strip()[:160]) from e
        finally:
            there.close()
        self._proc, self._conn = proc, here

    def _call(self, method: str, *args, within: float | None = None):
        limit = min(within, timeout_s()) if within else timeout_s()
        with self._pipe:
            conn = self._conn
            if conn is None:
                raise ProcessError("train.err_process_lost")
            try:
                conn.send((method, args))
                if not conn.poll(limit):
                    raise ProcessError("train.err_process_timeout", s=f"{limit:.0f}")
                kind, value = conn.recv()
            except (EOFError, OSError) as e:     # the process died: its end of the pipe closed
                raise ProcessError("train.err_process_lost") from e
        if kind == "err":
            raise ProcessError("train.err_process_problem", why=value)
        return value

    def _release(self) -> None:
        """End the process (however the job ended), then give the slot back."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()                         # the process's recv ends: it stops its training
        if proc is not None:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        super()._release()


__all__ = ["ProcessError", "ProcessTrainingJob", "serve", "timeout_s", "warm"]
