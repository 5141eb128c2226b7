"""lmviz.tasks: progress, result, human error messages, cancel, pause, the FIFO cap, nice 19."""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from lmviz.tasks import Cancelled, Task, check_cancel, human_message
from tests.test_train import wait_for


def test_result_progress_and_done():
    def work(ctx):
        for i in range(5):
            ctx.progress(i + 1, 5)
        return "ok"

    t = Task(work).start()
    assert t.join(5)
    s = t.snapshot()
    assert (s.state, s.result, s.done, s.total, s.fraction, s.active) == ("done", "ok", 5, 5, 1.0, False)
    with pytest.raises(RuntimeError):
        t.start()


def test_error_message_has_no_class_name():
    def work(ctx):
        raise ValueError("the training text is empty")

    t = Task(work).start()
    assert t.join(5)
    s = t.snapshot()
    assert s.state == "error" and s.error == "the training text is empty"
    assert human_message(KeyError("x")) == "'x'" and not human_message(RuntimeError()).startswith("RuntimeError")


def test_cancel_pause_resume():
    gate = threading.Event()

    def work(ctx):
        n = 0
        while True:
            ctx.check()
            n += 1
            ctx.progress(n)
            gate.set()
            time.sleep(0.005)

    t = Task(work).start()
    assert gate.wait(5)
    t.pause()
    assert wait_for(lambda: t.state == "paused")
    n = t.snapshot().done
    time.sleep(0.1)
    assert t.snapshot().done == n
    t.resume()
    assert wait_for(lambda: t.snapshot().done > n)
    t.cancel()
    assert t.join(5) and t.state == "stopped"


def test_cap_is_first_come_first_served_and_a_queued_cancel_never_runs():
    sem = threading.BoundedSemaphore(1)
    release = threading.Event()
    ran = []

    def work(name):
        def w(ctx):
            ran.append(name)
            while not release.is_set():
                ctx.check()
                time.sleep(0.005)
            return name
        return w

    a = Task(work("a"), sem).start()
    assert wait_for(lambda: a.state == "running")
    b, c, d = (Task(work(n), sem).start() for n in "bcd")
    assert wait_for(lambda: (b.queue_position(), c.queue_position(), d.queue_position()) == (1, 2, 3))
    assert c.snapshot().state == "queued" and c.snapshot().active
    c.cancel()
    assert c.join(5) and c.state == "stopped"
    release.set()
    assert all(x.join(10) for x in (a, b, d))
    assert ran == ["a", "b", "d"]
    assert sem.acquire(blocking=False)
    sem.release()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux only")
def test_worker_thread_runs_at_nice_19_and_the_caller_does_not():
    t = Task(lambda ctx: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).start()
    assert t.join(5)
    assert t.snapshot().result == 19
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != 19 or os.nice(0) == 19


def test_check_cancel():
    check_cancel(None)
    with pytest.raises(Cancelled):
        check_cancel(lambda: True)


def test_the_allocator_calls_answer_and_leave_an_operators_setting_alone(monkeypatch):
    from lmviz.tasks import give_back_memory, limit_malloc_arenas

    assert isinstance(give_back_memory(), bool)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False            # the operator's MALLOC_ARENA_MAX wins
