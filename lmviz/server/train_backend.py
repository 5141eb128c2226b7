"""Where a training runs: the one choice between this server and a Ray cluster.

    job = training_job(make_trainer, semaphore, meta={...}).start()

``LMVIZ_RAY_ADDRESS`` unset (the default): a local :class:`lmviz.server.train_job.TrainingJob`, and
neither ``lmviz.server.train_ray`` nor ``ray`` is imported. Set: a
:class:`lmviz.server.train_ray.RayTrainingJob` (same arguments, API and lifecycle; the training runs on
that cluster). A plain function, so that neither job module imports the other's subclass.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable


def ray_address() -> str:
    """The Ray cluster trainings run on (LMVIZ_RAY_ADDRESS), "" for this server."""
    return os.environ.get("LMVIZ_RAY_ADDRESS", "").strip()


def training_job(make_trainer: Callable[..., Any], semaphore: threading.BoundedSemaphore | None = None,
                 **kwargs):
    """A training job (not started) on the backend ``ray_address()`` names."""
    if ray_address():
        from lmviz.server.train_ray import RayTrainingJob

        return RayTrainingJob(make_trainer, semaphore, **kwargs)
    from lmviz.server.train_job import TrainingJob

    return TrainingJob(make_trainer, semaphore, **kwargs)


__all__ = ["ray_address", "training_job"]
