"""lmviz.server.tasks.Registry: trainings found again by secret, stopped after a grace period."""
from __future__ import annotations

import threading
import time

from lmviz.server.tasks import Registry, Task
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


# -- issue 28, fault 2: opening and closing someone's ?run= link stopped their training ----------

def test_a_second_tab_that_opens_and_closes_the_link_leaves_the_run_alone():
    runs = Registry(grace_s=0.05)
    a, _ = forever()
    secret = runs.add(a, "owner")
    assert runs.claim(secret, "stranger") is a and runs.watchers(secret) == 2
    runs.release(secret, "stranger")                        # the stranger closed the tab
    time.sleep(0.3)                                         # well past the grace period
    assert a.state == "running" and runs.watchers(secret) == 1
    assert runs.claim(secret, "owner's duplicated tab") is a
    runs.release(secret, "owner's duplicated tab")
    time.sleep(0.3)
    assert a.state == "running"                             # the owner still watches
    runs.release(secret, "owner")                           # the last watcher ended
    assert wait_for(lambda: a.state == "stopped", 5) and len(runs) == 0


def test_the_last_watcher_ends_the_run_whoever_started_it():
    runs = Registry(grace_s=0.05)
    a, _ = forever()
    secret = runs.add(a, "owner")
    runs.claim(secret, "other")
    runs.release(secret, "owner")                           # the owner closed the tab first
    time.sleep(0.3)
    assert a.state == "running"                             # the other tab still shows it
    runs.release(secret, "other")
    assert wait_for(lambda: a.state == "stopped", 5)


def test_leaving_a_run_stops_it_only_when_nobody_else_watches():
    runs = Registry(grace_s=30)
    a, _ = forever()
    secret = runs.add(a, "owner")
    runs.claim(secret, "other")
    assert runs.leave(secret, "other") is True and a.state == "running"     # left to the owner
    assert runs.leave(secret, "other") is False                            # not a watcher any more
    assert runs.leave(secret, "owner") is False                            # the last one: stopped now
    assert a.state == "stopped" and runs.claim(secret, "x") is None


# -- issue 28, fault 3: a full registry orphaned a running training --------------------------------

def test_a_full_registry_never_forgets_a_live_run_and_refuses_the_new_one():
    import threading

    import pytest

    from lmviz.server.tasks import RegistryFull

    sem = threading.BoundedSemaphore(1)
    runs = Registry(max_entries=3)
    def until_stopped(ctx):
        while True:
            ctx.check()
            time.sleep(0.005)

    running = Task(until_stopped, sem)
    queued = [Task(lambda ctx: 1, sem) for _ in range(2)]
    secrets_ = [runs.add(t, f"s{i}") for i, t in enumerate([running] + queued)]
    for t in [running] + queued:
        t.start()
    assert wait_for(lambda: running.state == "running" and all(t.state == "queued" for t in queued))
    newcomer = Task(lambda ctx: 1, sem)
    with pytest.raises(RegistryFull, match="still going"):
        runs.add(newcomer, "late")
    assert newcomer.state == "new"                            # refused before it started
    assert len(runs) == 3 and [runs.claim(s, "x") for s in secrets_] == [running] + queued
    running.cancel()                                           # one ends: its place can be reused
    assert wait_for(lambda: running.state == "stopped" and queued[0].state == "done", 10)
    assert runs.add(newcomer, "late") and runs.claim(secrets_[0], "x") is None
    for t in queued:
        t.cancel()


def test_a_full_registry_forgets_an_unwatched_ended_run_before_a_watched_one():
    runs = Registry(max_entries=2, grace_s=30)
    watched, unwatched = Task(lambda ctx: 1).start(), Task(lambda ctx: 2).start()
    assert watched.join(5) and unwatched.join(5)
    s_watched = runs.add(watched, "a")                         # older, but its session still shows it
    s_unwatched = runs.add(unwatched, "b")
    runs.release(s_unwatched, "b")                             # its tab closed (the grace period runs)
    live, _ = forever()
    runs.add(live, "c")
    assert runs.claim(s_unwatched, "x") is None and runs.claim(s_watched, "x") is watched
    live.cancel()
