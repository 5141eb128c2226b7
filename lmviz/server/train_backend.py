"""Where a training runs: the one choice between a thread of this server, a process of its own
beside it, and a Ray cluster.

    job = training_job(make_trainer, semaphore, meta={...}).start()

Unset: a :class:`lmviz.server.train_job.TrainingJob` on a thread of this server, and none of the
other modules (nor ``ray``) is imported (``streamlit run app.py``, the tests' AppTest sessions).
``LMVIZ_TRAIN_PROCESS=1``, which README's server (serve.py) sets unless told otherwise: a
:class:`lmviz.server.train_process.ProcessTrainingJob` (the training in a process of its own, with
its share of the cores whatever the pages do). ``LMVIZ_RAY_ADDRESS`` set: a
:class:`lmviz.server.train_ray.RayTrainingJob` (on that cluster). Same arguments, API and lifecycle
for all three. A plain function, so that no job module imports another's subclass.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable


def ray_address() -> str:
    """The Ray cluster trainings run on (LMVIZ_RAY_ADDRESS), "" for this server."""
    return os.environ.get("LMVIZ_RAY_ADDRESS", "").strip()


def own_process() -> bool:
    """True when trainings run in a process of their own beside this server (LMVIZ_TRAIN_PROCESS=1)."""
    return os.environ.get("LMVIZ_TRAIN_PROCESS", "").strip() == "1"


def training_job(make_trainer: Callable[..., Any], semaphore: threading.BoundedSemaphore | None = None,
                 **kwargs):
    """A training job (not started) on the backend ``ray_address()`` names."""
    if ray_address():
        from lmviz.server.train_ray import RayTrainingJob

        return RayTrainingJob(make_trainer, semaphore, **kwargs)
    if own_process():
        from lmviz.server.train_process import ProcessTrainingJob

        return ProcessTrainingJob(make_trainer, semaphore, **kwargs)
    from lmviz.server.train_job import TrainingJob

    return TrainingJob(make_trainer, semaphore, **kwargs)


__all__ = ["own_process", "ray_address", "training_job"]
