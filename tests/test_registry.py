"""lmviz.tasks.Registry: trainings found again by secret, stopped after a grace period."""
from __future__ import annotations

import threading
import time

from lmviz.tasks import Registry, Task
from tests.test_train import wait_for


def forever():
    stop = threading.Event()

    def work(ctx):
        while True:
            ctx.check()
            time.sleep(0.005)
    return Task(work).start(), stop


def test_secrets_are_long_random_and_a_wrong_one_claims_nothing():
    runs = Registry()
    t, _ = forever()
    s1, s2 = runs.add(t, "a"), runs.add(t, "b")
    assert s1 != s2 and len(s1) >= 40
    for bad in (None, "", s1[:-1], s1 + "x", 42, "x" * 10_000):
        assert runs.claim(bad, "c") is None
    t.cancel()


def test_release_stops_after_the_grace_period_unless_reclaimed():
    runs = Registry(grace_s=0.2)
    a, _ = forever()
    sa = runs.add(a, "A")
    runs.release(sa, "A")
    assert runs.claim(sa, "B") is a                         # a reload within the grace period
    time.sleep(0.4)
    assert a.state == "running"                             # not stopped
    runs.release(sa, "A")                                   # the former owner's late release: ignored
    time.sleep(0.4)
    assert a.state == "running"
    runs.release(sa, "B")                                   # the new owner closes the tab for good
    assert wait_for(lambda: a.state == "stopped", 5)
    assert runs.claim(sa, "C") is None and len(runs) == 0   # forgotten: its records are freed


def test_bounded_ended_runs_go_first():
    runs = Registry(max_entries=3)
    done = Task(lambda ctx: 1).start()
    assert done.join(5)
    live = [forever()[0] for _ in range(3)]
    s_done = runs.add(done, "x")
    secrets_live = [runs.add(t, "x") for t in live]
    assert len(runs) == 3 and runs.claim(s_done, "y") is None
    assert all(runs.claim(s, "y") is t for s, t in zip(secrets_live, live))
    for t in live:
        t.cancel()
