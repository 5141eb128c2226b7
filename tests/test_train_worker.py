"""The server's side of a training that runs elsewhere (lmviz/server/train_worker.py), with a
scripted worker: what a page watching the run is told."""
from __future__ import annotations

import threading
import time

from lmviz.server.train_worker import WorkerTrainingJob


class Scripted(WorkerTrainingJob):
    """A worker that prepares until it is asked to pause, then reports "paused" (a pause pressed
    while the training was still being built, as on a loaded machine)."""

    BACKEND = "test"

    def __init__(self):
        super().__init__(lambda: None, poll_s=0.01)
        self.asked: list[str] = []
        self.remote = "preparing"

    def _call(self, method: str, *args, within=None):
        self.asked.append(method)
        if method == "pause":
            self.remote = "paused"            # it stops at its first look once built
        if method != "poll":
            return None
        return {"state": self.remote, "error": None, "max_steps": 100, "elapsed_s": 0.0, "info": {},
                "steps": [], "evals": [], "samples": [], "checkpoint": None, "pace": (0.0, 0.0)}


def _until(cond, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_a_pause_asked_while_preparing_is_told_when_it_shows():
    """The page of a paused run has no timer: the end of preparing, which shows the run "paused"
    at last, must reach it as a push (before, the second tab of a run paused while preparing
    read "Preparing" for good: the phase changed without a word to the watchers)."""
    job = Scripted()
    seen: list[str] = []
    woke = threading.Event()

    def wake() -> bool:
        seen.append(job.state)
        woke.set()
        return True

    job.watch("page", wake)
    job.start()
    try:
        assert _until(lambda: "poll" in job.asked)
        assert job.state == "preparing"
        job.pause()                                       # the press: told at once, still preparing
        assert _until(lambda: job.state == "paused")
        assert _until(lambda: "paused" in seen), seen     # and the end of preparing is told too
        assert seen[0] == "preparing"
    finally:
        job.cancel()
        job.join(5)
