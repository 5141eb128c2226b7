"""A training in a process of its own (lmviz.server.train_process, LMVIZ_TRAIN_PROCESS=1).

The same lifecycle and records as a training on a thread, in another process (its pid is not
this one's): it runs to "done" and publishes a model, attention and replay that work here; Stop
ends the process; a training that fails there says its own sentence; a killed process is a
sentence, not a hang; the server's cap queues a second training until the first ends; a
training that cannot be sent to a process is a sentence.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

from tests.model_util import tiny_trainer as _make
from tests.test_train import wait_for


@pytest.fixture
def own_process(monkeypatch):
    monkeypatch.setenv("LMVIZ_TRAIN_PROCESS", "1")
    monkeypatch.setenv("LMVIZ_TRAIN_POLL_S", "0.05")
    monkeypatch.setenv("LMVIZ_TRAIN_TIMEOUT", "30")
    from lmviz.server.train_process import warm

    warm()              # from this thread, as serve.py does: the processes get its priority


def _pid(job) -> int:
    return int(job.snapshot().info["worker"].split()[-1])


def test_a_training_runs_in_its_own_process_and_its_records_come_back(own_process):
    from lmviz.server.train_backend import training_job
    from lmviz.server.train_process import ProcessTrainingJob

    job = training_job(_make(60))
    assert isinstance(job, ProcessTrainingJob)
    job.start()
    assert wait_for(lambda: job.snapshot().step > 0, 120)
    # at the server's priority, not the poller thread's nice 19 (a task's thread)
    assert os.getpriority(os.PRIO_PROCESS, _pid(job)) == os.getpriority(os.PRIO_PROCESS, 0)
    first = job.snapshot()
    assert first.state in ("running", "done")
    assert job.join(120)
    snap = job.snapshot()
    assert snap.state == "done" and snap.error is None
    assert snap.step == 60 and [m.step for m in snap.steps] == list(range(1, 61))
    assert len(snap.evals) >= 6 and snap.samples and snap.info["params"] > 0
    assert snap.info["worker"].startswith("process ") and _pid(job) != os.getpid()
    assert snap.info["backend"] == "process" and "·" not in snap.info["device"]   # the page says where
    assert snap.steps_per_s > 0                        # the worker's own pace
    import torch

    ids = torch.tensor([snap.tokenizer.encode("the cat")])
    assert torch.isfinite(snap.model(ids)[0]).all()   # the published weights work here
    labels, weights = snap.attention
    assert weights.ndim == 4 and len(labels) == weights.shape[-1]
    assert snap.replay is not None and snap.replay.snapshots[-1].step == 60
    assert job._proc is None                           # the process was ended with the job


def test_a_training_process_never_runs_the_servers_main_script(own_process, monkeypatch, tmp_path):
    """While a page runs, Streamlit's ``__main__`` is the app script (AppTest's, in a test run): a
    training started then must not run it in its process (the whole app again, or a script
    that cannot run there: every training of the suite's run failed after an AppTest)."""
    import sys
    import types

    from lmviz.server.train_backend import training_job

    script = tmp_path / "app_script.py"
    script.write_text("raise SystemExit('the server script ran in the training process')\n")
    main = types.ModuleType("__main__")
    main.__file__, main.__spec__ = str(script), None
    monkeypatch.setitem(sys.modules, "__main__", main)
    job = training_job(_make(20)).start()
    assert job.join(120)
    snap = job.snapshot()
    assert (snap.state, snap.error, snap.step) == ("done", None, 20)


def test_pause_resume_and_stop_reach_the_process(own_process):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(100_000, eval_every=1000)).start()
    assert wait_for(lambda: job.snapshot().step > 0, 120)
    proc = job._proc
    job.pause()
    assert job.snapshot().state == "paused"                   # reads as asked, at once
    assert wait_for(lambda: job.worker_state == "paused", 30)  # the process's training has stopped
    time.sleep(0.3)
    held = job.snapshot().step
    time.sleep(0.5)
    assert job.snapshot().step == held                 # paused there, not only here
    job.resume()
    assert wait_for(lambda: job.snapshot().step > held, 30)
    job.cancel()
    assert job.join(30)
    snap = job.snapshot()
    assert snap.state == "stopped" and snap.step < 100_000
    proc.join(10)
    assert not proc.is_alive()                         # Stop ended the process


def test_a_failed_training_says_its_own_sentence(own_process):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(10, text="   ")).start()
    assert job.join(120)
    snap = job.snapshot()
    assert snap.state == "error" and snap.error == "the training text is empty"


def test_a_killed_process_is_a_sentence_not_a_hang(own_process):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(100_000, eval_every=1000)).start()
    assert wait_for(lambda: job.snapshot().step > 0, 120)
    job._proc.kill()
    assert job.join(30)
    snap = job.snapshot()
    assert snap.state == "error" and "ended unexpectedly" in snap.error and "Traceback" not in snap.error
    assert snap.step > 0 and snap.steps                # what it had sent stays


def test_the_servers_cap_queues_the_second_training(own_process):
    from lmviz.server.train_backend import training_job

    cap = threading.BoundedSemaphore(1)
    a = training_job(_make(100_000, eval_every=1000), cap).start()
    assert wait_for(lambda: a.snapshot().step > 0, 120)
    b = training_job(_make(20), cap).start()
    snap = b.snapshot()
    assert (snap.state, snap.queue_position) == ("queued", 1)
    time.sleep(0.5)
    assert b.snapshot().state == "queued" and b._proc is None      # no process while queued
    a.cancel()
    assert a.join(30) and b.join(120)
    assert b.snapshot().state == "done" and b.snapshot().step == 20


def test_a_training_that_cannot_be_sent_is_a_sentence(own_process):
    from lmviz.server.train_backend import training_job

    lock = threading.Lock()                            # a lock does not pickle
    job = training_job(lambda cancel, held=lock: None).start()
    assert job.join(60)
    snap = job.snapshot()
    assert snap.state == "error" and snap.error.startswith("the training could not be handed to a process")
