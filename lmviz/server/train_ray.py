"""Trainings on a Ray cluster: the backend ``lmviz.server.train_backend.training_job`` picks when
``LMVIZ_RAY_ADDRESS`` is set.

    LMVIZ_RAY_ADDRESS=127.0.0.1:6379 streamlit run app.py     # every training runs on that cluster

Unset, nothing here is imported and ``ray`` is not needed. Set, ``training_job(...)`` builds a
:class:`RayTrainingJob` (same constructor, same ``start / cancel / pause / resume / join /
snapshot``, the same lifecycle and the same :class:`~lmviz.server.train_job.JobSnapshot`), so pages do
not know where the training runs:

- The training itself is the one training loop: a local ``TrainingJob`` inside a Ray actor
  (:class:`TrainingWorker`, ``num_cpus`` = LMVIZ_RAY_CPUS, default 1, per training; a GPU each with
  LMVIZ_RAY_GPUS=1). The cluster's resources are the cap on concurrent trainings: an actor that
  the cluster cannot place yet is a queued job (``queue_position`` counts this server's waiting
  Ray jobs, oldest first); Stop while queued removes it. The actor is the job's slot in
  ``lmviz.server.tasks.Task``'s lifecycle (``_acquire`` waits until it is placed, ``_release`` removes
  it): queued while it waits, "preparing" until the worker's training takes its first steps, then
  running.
- On this server, a poller (``lmviz.server.train_worker.WorkerTrainingJob``, shared with the
  process backend: an ``lmviz.server.tasks.Task`` thread) asks the actor every
  LMVIZ_RAY_POLL_S (0.5 s) for what is new since its last look: step, evaluation and sample
  records, the attention of the fixed prompt, and, after each evaluation, the published weights as
  checkpoint bytes (``lmviz.checkpoint.save_checkpoint``: the format of a downloaded checkpoint,
  loaded back with ``load_checkpoint``). ``snapshot()`` only copies those records: a page never
  waits on the cluster.
- Every call to the cluster has a timeout (LMVIZ_RAY_TIMEOUT, default 30 s). A worker that
  dies (its process killed, its node lost) or stops answering ends the job in state "error" with
  a sentence that says so; a training that fails on the worker (a bad text, out of memory) ends
  with that training's own message; Stop ends it as "stopped" and removes the actor.
- Code on the workers: by default the workers import lmviz from this checkout's folder
  (PYTHONPATH; a local cluster, or machines with the code at the same path and the requirements
  installed). LMVIZ_RAY_UPLOAD=1 ships the checkout (without .git, tests, bench) as Ray's
  ``working_dir`` instead.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from lmviz.limits import SaidError
from lmviz.server.env import env_float
from lmviz.server.train_worker import TrainingWorker, WorkerTrainingJob

ROOT = Path(__file__).resolve().parents[2]
_INIT_LOCK = threading.Lock()
_PENDING_LOCK = threading.Lock()
_PENDING: list = []                  # this server's Ray jobs waiting for cluster resources, oldest first


def timeout_s() -> float:
    """Seconds any call to the cluster may take (LMVIZ_RAY_TIMEOUT, default 30)."""
    return env_float("LMVIZ_RAY_TIMEOUT", 30.0)


def runtime_env() -> dict:
    """How the workers get lmviz (see the module docstring) and their torch thread count."""
    cpus = env_float("LMVIZ_RAY_CPUS", 1.0)
    env = {"env_vars": {"LMVIZ_THREADS": str(max(1, int(cpus)))}}
    if os.environ.get("LMVIZ_RAY_UPLOAD") == "1":
        env["working_dir"] = str(ROOT)
        env["excludes"] = [".git", ".venv", "tests", "bench", "screenshots", "__pycache__"]
    else:
        path = os.environ.get("PYTHONPATH", "")
        env["env_vars"]["PYTHONPATH"] = str(ROOT) + (os.pathsep + path if path else "")
    return env


class ClusterError(SaidError, RuntimeError):
    """The Ray cluster cannot be used; ``key`` and ``params`` name the sentence in the catalogue
    (the page says it in its own language), ``str()`` is the English one."""


def connect(address: str | None = None) -> None:
    """Connect this process to the cluster once (``ray.init``); a second call does nothing."""
    try:
        import ray
    except ImportError as e:
        raise ClusterError("train.err_ray_missing") from e

    with _INIT_LOCK:
        if ray.is_initialized():
            return
        address = address or os.environ.get("LMVIZ_RAY_ADDRESS", "").strip()
        host, _, port = address.rpartition(":")
        if port.isdigit():                  # ray.init retries an unreachable address for minutes
            import socket

            try:
                socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5).close()
            except OSError as e:
                raise ClusterError("train.err_ray_unreachable", address=address, why=str(e.strerror or e)) from e
        try:
            ray.init(address=address, namespace="lmviz", runtime_env=runtime_env(),
                     log_to_driver=False, include_dashboard=False)
        except Exception as e:  # noqa: BLE001 - one sentence for the page
            raise ClusterError("train.err_ray_unreachable", address=address, why=str(e).strip()[:160]) from e


_REMOTE = None


def _remote_worker():
    """TrainingWorker as a Ray actor class (made once; ``ray`` is imported only here and below)."""
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(max_restarts=0, max_task_retries=0)(TrainingWorker)
    return _REMOTE


def _lost(e: BaseException) -> ClusterError:
    from ray import exceptions as rx

    if isinstance(e, rx.GetTimeoutError):
        return ClusterError("train.err_ray_timeout", s=f"{timeout_s():.0f}")
    if isinstance(e, (rx.RayActorError, rx.WorkerCrashedError, rx.NodeDiedError)):
        return ClusterError("train.err_ray_lost")
    return ClusterError("train.err_ray_problem", why=str(e).strip()[:200])


class RayTrainingJob(WorkerTrainingJob):
    """A training in a :class:`~lmviz.server.train_worker.TrainingWorker` actor (module docstring).
    ``semaphore`` is ignored: the cluster's resources are the cap."""

    BACKEND = "ray"
    SAID, FAILED, STOPPED = ClusterError, "train.err_ray_failed", "train.err_ray_stopped"

    def __init__(self, make_trainer: Callable[..., Any], semaphore=None, chunk: int = 5,
                 poll_s: float | None = None, on_eval=None, meta: dict | None = None):
        super().__init__(make_trainer, None, chunk=chunk, poll_s=poll_s or env_float("LMVIZ_RAY_POLL_S", 0.5),
                         meta=meta)
        self._actor = None

    def queue_position(self) -> int:
        with _PENDING_LOCK:
            return _PENDING.index(self) + 1 if self in _PENDING else 0

    def _call(self, method: str, *args, within: float | None = None):
        return self._get(getattr(self._actor, method).remote(*args), within)

    def _device(self, device: str) -> str:
        return f"{device} · {self._where}"          # the page names the cluster's node

    def _get(self, ref, within: float | None = None):
        import ray

        try:
            return ray.get(ref, timeout=min(within, timeout_s()) if within else timeout_s())
        except Exception as e:  # noqa: BLE001 - becomes one sentence
            raise _lost(e) from e

    # -- the slot: an actor the cluster places -------------------------------------------------
    def _waits_for_a_slot(self) -> bool:
        return True

    def _enqueue(self) -> None:
        with _PENDING_LOCK:
            _PENDING.append(self)

    def _acquire(self) -> bool:
        """Connect, create the actor and wait until the cluster places it (the job reads "queued"
        and holds its place in this server's line from ``start`` on); False when Stop came first.
        The actor is removed again when this fails or is stopped."""
        placed = False
        try:
            connect()
            gpus = env_float("LMVIZ_RAY_GPUS", 0.0) if os.environ.get("LMVIZ_RAY_GPUS") else 0
            opts = {"num_cpus": env_float("LMVIZ_RAY_CPUS", 1.0)}
            if gpus:
                opts["num_gpus"] = gpus
            import ray

            try:
                self._actor = _remote_worker().options(**opts).remote(self._make, self._chunk)
            except Exception as e:  # noqa: BLE001 - e.g. a training that cannot be sent (pickled)
                raise ClusterError("train.err_ray_send", why=str(e).strip()[:160]) from e
            ready = self._actor.ready.remote()
            while not ray.wait([ready], timeout=self._poll_s)[0]:
                if self.cancelled:
                    return False
            self._where = f"Ray {self._get(ready)['node']}"
            placed = not self.cancelled
            return placed
        finally:
            with _PENDING_LOCK:
                if self in _PENDING:
                    _PENDING.remove(self)
            if not placed:
                self._drop()

    def _release(self) -> None:
        self._drop()

    def _drop(self) -> None:
        actor, self._actor = self._actor, None
        if actor is not None:
            import ray

            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass


__all__ = ["RayTrainingJob", "TrainingWorker", "connect", "runtime_env", "timeout_s"]
