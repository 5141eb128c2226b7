"""Every thread's stack on demand: ``kill -USR1 <server pid>`` appends them to the file named by
``LMVIZ_STACKS_FILE`` (nothing is installed without it). A server that stops answering one
session (a page that never finishes drawing, a press that is never run) shows where each script
run's thread waits; the browser tests' failure report asks for it (tests/conftest.py)."""
from __future__ import annotations

import faulthandler
import os
import signal

ENV = "LMVIZ_STACKS_FILE"
_OPEN: list = []            # the file faulthandler writes to must stay open


def install_from_env() -> bool:
    """Register the dump on SIGUSR1 when ``LMVIZ_STACKS_FILE`` names a file; True when it did."""
    path = os.environ.get(ENV, "").strip()
    if not path or not hasattr(signal, "SIGUSR1") or _OPEN:
        return bool(_OPEN)
    f = open(path, "a", buffering=1)       # noqa: SIM115 - held open for the process's life
    _OPEN.append(f)
    faulthandler.register(signal.SIGUSR1, file=f, all_threads=True, chain=False)
    return True
