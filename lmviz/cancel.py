"""Cancelling long core work: the callback the core checks and the exception it raises.

Long core functions (``Trainer``, ``train_bpe``, ``fit``, generation loops) take a ``cancel``
callback (``() -> bool``; None: never cancelled) and call :func:`check_cancel` between steps.
Whoever runs them (a background task of ``lmviz.server.tasks``, a test, a script) passes the callback;
the core does not know about threads or tasks.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["Cancelled", "check_cancel"]


class Cancelled(Exception):
    """Raised inside long work when its task was cancelled (the task ends as "stopped")."""


def check_cancel(cancel: Callable[[], bool] | None) -> None:
    """Raise :class:`Cancelled` when the ``cancel`` callback says so (None: never).

    >>> check_cancel(None); check_cancel(lambda: False)
    >>> check_cancel(lambda: True)
    Traceback (most recent call last):
    ...
    lmviz.cancel.Cancelled: cancelled
    """
    if cancel is not None and cancel():
        raise Cancelled("cancelled")
