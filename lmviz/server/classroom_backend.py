"""Which class store this process uses: the factory that picks the backend of
:class:`lmviz.server.classroom.ClassStore` (memory, or Redis through :mod:`lmviz.server.classroom_redis`).

It is a module of its own so that neither backend module imports the other: the Redis backend
builds on :mod:`lmviz.server.classroom`, and only this factory knows both.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Mapping

from lmviz.server.classroom import ClassLimits, ClassStore

__all__ = ["store_from_env"]


def store_from_env(environ: Mapping[str, str] | None = None, limits: ClassLimits = ClassLimits(),
                   clock: Callable[[], float] = time.time) -> ClassStore:
    """The class store this process should use: shared through Redis when ``LMVIZ_REDIS_URL`` is
    set (e.g. ``redis://10.0.0.5:6379/0``; ``LMVIZ_REDIS_PREFIX`` names the key prefix, default
    ``lmviz:``), else in this process's memory. Connecting is lazy: an unreachable Redis shows
    up as ``store_unavailable`` in the results, not here. The ``redis`` package is imported only
    when the URL is set (``pip install -r requirements-cluster.txt``)."""
    env = os.environ if environ is None else environ
    url = env.get("LMVIZ_REDIS_URL", "").strip()
    if not url:
        return ClassStore(limits=limits, clock=clock)
    from lmviz.server.classroom_redis import RedisBackend
    try:
        backend = RedisBackend.from_url(url, prefix=env.get("LMVIZ_REDIS_PREFIX", "lmviz:"),
                                        clock=clock)            # imports redis: only here
    except ImportError as e:
        raise RuntimeError("LMVIZ_REDIS_URL is set but the redis package is missing "
                           "(pip install -r requirements-cluster.txt)") from e
    return ClassStore(backend, limits, clock)
