"""lmviz.server.tasks: progress, result, human error messages, cancel, pause, the FIFO cap, nice 19."""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from lmviz.server.tasks import Cancelled, Task, check_cancel, human_message
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
    assert t.state == "paused"                                 # as asked, at once
    assert wait_for(lambda: t.worker_state == "paused")        # and the worker has stopped at its look
    n = t.snapshot().done
    time.sleep(0.1)
    assert t.snapshot().done == n
    t.resume()
    assert wait_for(lambda: t.snapshot().done > n)
    t.cancel()
    assert t.join(5) and t.state == "stopped"


def test_watchers_hear_every_ask_and_move_until_they_leave_or_the_task_ends():
    """What a page that stops polling a paused task relies on (chapters/training.py): a wake at
    each ask (pause, resume, stop) and each move of the state it reads as (running; the worker's
    own move to paused and back is not one: the state reads as asked), one per key, a wake that
    returns False or fails forgotten, one dropped on request, and none kept once the task has
    ended."""
    gate = threading.Event()

    def work(ctx):
        while True:
            ctx.check()
            gate.set()
            time.sleep(0.005)

    heard: dict[str, list[str]] = {"page": [], "tab": [], "gone": []}
    t = Task(work)
    t.watch("gone", lambda: heard["gone"].append(t.state) or False)     # its session closed
    t.start()
    assert gate.wait(5)
    t.watch("page", lambda: heard["page"].append("old") or True)
    t.watch("page", lambda: heard["page"].append(t.state) or True)      # a newer run of the page
    t.watch("tab", lambda: heard["tab"].append(t.state) or True)
    t.watch("broken", lambda: 1 / 0)                  # fails: forgotten, and the task goes on
    t.pause()
    assert wait_for(lambda: t.worker_state == "paused")
    t.resume()
    assert wait_for(lambda: t.worker_state == "running")
    assert heard["tab"] == ["paused", "running"]                        # the asks; the worker's moves: none
    assert heard["page"] == heard["tab"]
    t.watch("page", None)                                              # dropped: hears no more
    t.cancel()
    assert t.join(5) and t.state == "stopped"
    assert heard["page"] == ["paused", "running"] and heard["tab"] == ["paused", "running", "stopped"]
    assert heard["gone"] == ["running"]                                # the move to running, once
    assert t._watchers == {}
    t.watch("late", lambda: True)                                      # an ended task keeps none
    assert t._watchers == {}

    done = Task(lambda ctx: 42)
    done.watch("page", lambda: heard["page"].append(done.state) or True)
    done.start()
    assert done.join(5) and heard["page"][-2:] == ["running", "done"]  # its end is a move it reads as


def _held(ran: list, release: threading.Event):
    """Work named ``name`` that records its start in ``ran`` and runs until ``release`` is set."""
    def work(name):
        def w(ctx):
            ran.append(name)
            while not release.is_set():
                ctx.check()
                time.sleep(0.005)
            return name
        return w
    return work


def test_cap_is_first_come_first_served_and_a_queued_cancel_never_runs():
    sem = threading.BoundedSemaphore(1)
    release = threading.Event()
    ran = []
    work = _held(ran, release)

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
def test_worker_thread_runs_at_nice_19_and_the_caller_does_not(monkeypatch):
    monkeypatch.delenv("LMVIZ_TASK_NICE")           # the server's default (the suite sets 0)
    t = Task(lambda ctx: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).start()
    assert t.join(5)
    assert t.snapshot().result == 19
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != 19 or os.nice(0) == 19


def test_check_cancel():
    check_cancel(None)
    with pytest.raises(Cancelled):
        check_cancel(lambda: True)


def test_the_allocator_calls_answer_and_leave_an_operators_setting_alone(monkeypatch):
    from lmviz.server.tasks import give_back_memory, limit_malloc_arenas

    assert isinstance(give_back_memory(), bool)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False            # the operator's MALLOC_ARENA_MAX wins


# -- the one lifecycle (issue 27) ---------------------------------------------------------------

def _busy(gate: threading.Event, release: threading.Event, then=lambda: "finished"):
    """Work that is busy (not looking at cancel) until ``release``, then does ``then()``."""
    def work(ctx):
        gate.set()
        release.wait(10)
        return then()
    return work


def test_a_plain_task_reads_stopped_at_once_and_never_ends_done_after_it():
    gate, release = threading.Event(), threading.Event()
    t = Task(_busy(gate, release)).start()
    assert gate.wait(5) and t.state == "running"
    t.cancel()
    s = t.snapshot()
    assert (s.state, s.active) == ("stopped", False)          # at once, the worker still busy
    release.set()
    assert t.join(5)
    s = t.snapshot()
    assert (s.state, s.result, s.error) == ("stopped", None, None)   # its late result is dropped


def test_an_error_after_stop_is_impossible():
    gate, release = threading.Event(), threading.Event()

    def fail():
        raise ValueError("the worker hit an error on its way out")

    t = Task(_busy(gate, release, fail)).start()
    assert gate.wait(5)
    t.cancel()
    release.set()
    assert t.join(5)
    assert (t.state, t.snapshot().error) == ("stopped", None)


def test_a_final_state_never_changes_and_an_illegal_move_is_refused():
    t = Task(lambda ctx: 1).start()
    assert t.join(5) and t.state == "done"
    t.cancel()                                                # too late: it is done
    assert t.state == "done" and t.snapshot().result == 1
    assert t._move("running") is False and t.state == "done"
    fresh = Task(lambda ctx: 1)
    with pytest.raises(ValueError, match="cannot go from 'new' to 'paused'"):
        fresh._move("paused")


def test_the_phase_preparing_reads_as_a_state_and_active_is_decided_once():
    from lmviz.server.tasks import ACTIVE, STATES, is_active

    gate, release = threading.Event(), threading.Event()

    def work(ctx):
        ctx.phase("preparing")
        gate.set()
        release.wait(10)
        ctx.phase("running")
        return 1

    t = Task(work).start()
    assert gate.wait(5)
    assert t.state == "preparing" and t.active and t.snapshot().phase == "preparing"
    release.set()
    assert t.join(5) and t.state == "done"
    assert [s for s in STATES if is_active(s)] == list(ACTIVE) == ["queued", "preparing", "running", "paused"]
    # the training page asks the job, not a list of its own (chapters/training.py once had a copy)
    src = open("chapters/training.py", encoding="utf-8").read()
    assert '"preparing", "running", "paused")' not in src


def test_the_end_of_preparing_is_told_to_watchers():
    """A run paused while it prepared reads "preparing" until preparing ends and "paused" after:
    that move is told, as a page without a timer (a paused training's) hears of it only so (it
    showed "Preparing" for good: tests/test_page_replay.py under load)."""
    gate, release = threading.Event(), threading.Event()

    def work(ctx):
        ctx.phase("preparing")
        gate.set()
        release.wait(10)
        ctx.phase("")
        ctx.check()
        return 1

    heard: list[str] = []
    t = Task(work).start()
    assert gate.wait(5)
    t.watch("page", lambda: heard.append(t.state) or True)
    t.pause()
    assert t.state == "preparing" and heard == ["preparing"]      # the ask, read as it shows
    release.set()
    assert wait_for(lambda: "paused" in heard)
    assert wait_for(lambda: t.worker_state == "paused")
    t.cancel()
    assert t.join(5) and t.state == "stopped"


def test_a_lecturers_task_waits_ahead_of_the_students_and_a_students_run_steps_aside():
    """Issue 55: a class's lecturer (priority 0) is not queued behind the students' runs (1): it
    takes the first place in line, behind any earlier lecturer's, and a student's running task
    steps aside at its next ``ctx.check()``: it reads "queued" (first of the students), the
    lecturers run, then it goes on where it stopped, before the students who queued after it."""
    from lmviz.server.train_job import TrainingJob

    sem = threading.BoundedSemaphore(1)
    release = threading.Event()
    ran = []
    work = _held(ran, release)
    a = Task(work("student-a"), sem).start()
    assert wait_for(lambda: a.state == "running")
    b, c = (Task(work(n), sem).start() for n in ("student-b", "student-c"))
    assert wait_for(lambda: (b.queue_position(), c.queue_position()) == (1, 2))
    lect = Task(work("lecturer"), sem, priority=0).start()
    assert wait_for(lambda: lect.state == "running")            # the student's run stood aside
    lect2 = Task(work("lecturer-2"), sem, priority=0).start()
    s = a.snapshot()
    assert (s.state, s.queue_position) == ("queued", 2)          # behind lecturer-2, ahead of b and c
    assert [x.queue_position() for x in (lect2, a, b, c)] == [1, 2, 3, 4]
    release.set()
    assert all(x.join(10) for x in (a, b, c, lect, lect2))
    assert ran == ["student-a", "lecturer", "lecturer-2", "student-b", "student-c"]   # a went on, not again
    assert [x.state for x in (a, b, c, lect, lect2)] == ["done"] * 5 and a.snapshot().result == "student-a"
    assert sem.acquire(blocking=False)                             # every slot given back once
    sem.release()
    # a training job takes its place from what it trains: a lecturer's run (chapters/training.py)
    assert TrainingJob(lambda cancel: None, sem, meta={"lecturer": True}).priority == 0
    assert TrainingJob(lambda cancel: None, sem, meta={"lecturer": False}).priority == 1


def test_a_student_stopped_while_it_stands_aside_gives_back_no_slot():
    sem = threading.BoundedSemaphore(1)
    release = threading.Event()
    ran = []
    a = Task(_held(ran, release)("student"), sem).start()
    assert wait_for(lambda: a.state == "running")
    lect = Task(_held(ran, release)("lecturer"), sem, priority=0).start()
    assert wait_for(lambda: lect.state == "running" and a.state == "queued")
    a.cancel()
    assert a.join(5) and a.state == "stopped" and a.queue_position() == 0
    release.set()
    assert lect.join(5) and lect.state == "done"
    assert sem.acquire(blocking=False) and not sem.acquire(blocking=False)   # one slot, given back once
    sem.release()


def test_work_that_never_checks_is_never_interrupted():
    """Stepping aside happens at ``ctx.check()`` only: work between two checks runs to its next one."""
    sem = threading.BoundedSemaphore(1)
    gate, release = threading.Event(), threading.Event()
    a = Task(_busy(gate, release), sem).start()
    assert gate.wait(5)
    lect = Task(lambda ctx: "lecturer", sem, priority=0).start()
    time.sleep(0.2)
    assert (a.state, lect.state) == ("running", "queued")
    release.set()
    assert a.join(5) and lect.join(5) and (a.state, lect.state) == ("done", "done")


def test_a_task_cancelled_while_queued_reads_stopped_at_once_and_leaves_the_line():
    sem = threading.BoundedSemaphore(1)
    gate, release = threading.Event(), threading.Event()
    a = Task(_busy(gate, release), sem).start()
    assert gate.wait(5)
    b = Task(lambda ctx: "b", sem).start()
    assert wait_for(lambda: b.snapshot().queue_position == 1)
    b.cancel()
    s = b.snapshot()
    assert (s.state, s.queue_position) == ("stopped", 0)
    release.set()
    assert a.join(5) and b.join(5) and b.state == "stopped"


# -- one task per session and purpose (faults 9 and 12 of issue 28) --------------------------------

def _until_cancelled(log: list, name):
    def work(ctx):
        log.append(name)
        while True:
            ctx.check()
            time.sleep(0.005)
    return work


def test_a_new_value_cancels_the_previous_task_and_close_cancels_all():
    from lmviz.server.tasks import TaskSlots

    slots, log = TaskSlots(), []
    s1 = slots.snapshot("robot", (11, 300), _until_cancelled(log, 11))
    t1 = slots.task("robot")
    assert s1.active and slots.snapshot("robot", (11, 300), _until_cancelled(log, "again")).active
    assert slots.task("robot") is t1 and wait_for(lambda: log == [11])    # same value: the same task
    slots.snapshot("robot", (13, 300), _until_cancelled(log, 13))          # the slider moved
    t2 = slots.task("robot")
    assert t2 is not t1 and t1.state == "stopped" and t2.active
    slots.snapshot("structure", ("en", 300), _until_cancelled(log, "s"))
    t3 = slots.task("structure")
    slots.close()                                                          # the session ended
    assert t2.state == "stopped" and t3.state == "stopped"
    assert all(t.join(5) for t in (t1, t2, t3))
    assert slots.snapshot("robot", (15, 300), _until_cancelled(log, 15)).state == "stopped"
    assert slots.task("robot") is None                                     # nothing starts after close


def test_a_finished_result_is_shared_and_bounded():
    from lmviz.server.tasks import ResultCache, TaskSlots

    cache, runs = ResultCache(2), []

    def work(k):
        return lambda ctx: runs.append(k) or k * 10

    a, b = TaskSlots(), TaskSlots()
    assert wait_for(lambda: a.snapshot("bpe", 1, work(1), results=cache).state == "done")
    snap = b.snapshot("bpe", 1, work(1), results=cache)                     # another session
    assert (snap.state, snap.result, runs) == ("done", 10, [1]) and b.task("bpe") is None
    for k in (2, 3):
        assert wait_for(lambda: a.snapshot("bpe", k, work(k), results=cache).state == "done")
    assert len(cache) == 2 and cache.get(("bpe", 1)) is None                # the oldest went


def test_work_over_the_inline_budget_moves_to_a_task():
    from lmviz.server.tasks import TaskSlots

    threads = []

    def work(ctx):
        threads.append(threading.current_thread().name)
        for _ in range(400):
            ctx.check()                                       # the inline budget ends the first try
            time.sleep(0.005)
        return "long"

    slots = TaskSlots()
    quick = slots.snapshot("bpe", "short", lambda ctx: threads.append(threading.current_thread().name) or "s",
                           inline_s=5.0)
    assert quick.state == "done" and quick.result == "s" and slots.task("bpe") is None
    snap = slots.snapshot("bpe", "long", work, name="lmviz-bpe", inline_s=0.05)
    assert snap.active and slots.task("bpe") is not None
    assert wait_for(lambda: slots.snapshot("bpe", "long", work).state == "done", 20)
    here = threading.current_thread().name
    assert threads == [here, here, "lmviz-bpe"]                # tried here, then on the task's thread


def test_a_task_error_can_be_said_in_the_page_language():
    """Running out of memory, an empty message, a refused checkpoint, a Ray cluster that cannot be
    used: the task keeps an English sentence (the log, Ray's pickling) that a page says in its
    own language; any other message stays as it is."""
    import pickle

    from lmviz.checkpoint import CheckpointError
    from lmviz.server.tasks import Said
    from lmviz.server.train_ray import ClusterError
    from ui.i18n import translate

    t = Task(lambda ctx: [0] * (1 << 62)).start()
    assert t.join(10) and t.snapshot().error == "the computer ran out of memory"
    msg = t.snapshot().error
    assert isinstance(msg, Said) and translate(msg.key, "zh") == "服务器内存不足"
    for e in (ClusterError("train.err_ray_unreachable", address="10.0.0.5:6379", why="Connection refused"),
              CheckpointError("ckpt.err_params", params=9, limit=5), RuntimeError()):
        m = pickle.loads(pickle.dumps(human_message(e)))      # as a Ray worker's error comes back
        assert isinstance(m, Said) and (m == str(e) or not str(e)), (m, str(e))
        zh = translate(m.key, "zh", **m.params)
        assert zh != m and not any(w in zh for w in ("could", "the ", "error")), zh
    assert not isinstance(human_message(ValueError("a plain message")), Said)


def test_at_exit_running_tasks_are_stopped_and_waited_for():
    """A worker still inside torch when the interpreter ends aborts the process (exit 134): the
    exit hook asks every running task to stop and waits for it."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import atexit, threading
        held = {}
        # registered before the tasks module's own hook, so it runs after it (last in, first out)
        atexit.register(lambda: print("state", held["t"].snapshot().state, "alive", held["t"]._thread.is_alive()))
        from lmviz.server.tasks import Task, check_cancel
        ended = threading.Event()
        def work(ctx):
            while True:
                check_cancel(ctx.cancelled)
                ended.wait(0.01)
        held["t"] = Task(work).start()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert out.returncode == 0, out.stderr
    assert "state stopped alive False" in out.stdout
