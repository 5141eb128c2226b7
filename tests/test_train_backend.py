"""Where a training runs (lmviz.server.train_backend) and the Ray job's lifecycle on a fake cluster.

``tests/test_ray.py`` needs ray and a local cluster (LMVIZ_CLUSTER_TESTS=1); these run always:
``tests/fake_ray.py`` answers the same calls in this process, with the timing a test chooses.
The fast fake is the machine on which ``test_a_training_runs_on_ray_and_its_curve_grows`` used
to fail: the worker's whole run arrives in the server's first look, and the job showed those
steps while it still read "preparing" (issue 27)."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from tests.conftest import ROOT
from tests.model_util import tiny_trainer as _make
from tests.fake_ray import FakeRay
from tests.test_train import wait_for



@pytest.fixture
def fake_ray(monkeypatch):
    import lmviz.server.train_ray as train_ray

    def install(**kw):
        fake = FakeRay(**kw)
        monkeypatch.setitem(sys.modules, "ray", fake)
        monkeypatch.setattr(train_ray, "_REMOTE", None)         # the actor class is made from this fake
        monkeypatch.setenv("LMVIZ_RAY_ADDRESS", "fake-cluster")
        monkeypatch.setenv("LMVIZ_RAY_POLL_S", "0.05")
        return fake
    return install


def test_the_factory_picks_the_backend_and_no_job_module_imports_the_other():
    code = ("import os, sys; os.environ.pop('LMVIZ_RAY_ADDRESS', None)\n"
            "from lmviz.server.train_backend import training_job\n"
            "j = training_job(lambda: None)\n"
            "print(type(j).__name__, 'lmviz.server.train_ray' in sys.modules, 'ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["TrainingJob", "False", "False"], out.stderr
    import ast

    for path, other in (("lmviz/server/train_job.py", "train_ray"), ("lmviz/server/train_ray.py", "train_backend")):
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(other in m for m in names), (path, names)
    from lmviz.server.train_job import TrainingJob

    assert "__new__" not in TrainingJob.__dict__


def test_a_fast_worker_never_shows_its_steps_while_the_job_reads_preparing(fake_ray, monkeypatch):
    from lmviz.server.train_backend import training_job
    from lmviz.server.train_ray import RayTrainingJob

    fake_ray(finish_at_start=True)
    seen = []
    merge = RayTrainingJob._merge

    def merge_and_look(self, d):                  # what a page polling at that instant would see
        merge(self, d)
        seen.append(self.snapshot())

    monkeypatch.setattr(RayTrainingJob, "_merge", merge_and_look)
    job = training_job(_make(60))
    assert isinstance(job, RayTrainingJob)
    before = job.snapshot()
    assert before.state == "new" and not before.active
    job.start()
    assert job.join(120)
    snap = job.snapshot()
    assert snap.state == "done" and snap.step == 60 and [m.step for m in snap.steps] == list(range(1, 61))
    assert seen and seen[0].step == 60                   # the whole run came in the first look
    for first in (s for s in seen if s.step > 0):        # tests/test_ray.py's assertion, on each
        assert first.state in ("running", "done") and first.active or first.state == "done"
    assert snap.model is not None and snap.info["worker"] and snap.error is None


def test_a_job_the_cluster_cannot_place_is_queued_and_a_stop_removes_it(fake_ray):
    from lmviz.server.train_backend import training_job

    placed = threading.Event()
    fake = fake_ray(placed=placed)
    job = training_job(_make(20)).start()
    snap = job.snapshot()
    assert (snap.state, snap.queue_position) == ("queued", 1) and snap.active    # its place, from the start
    job.cancel()
    snap = job.snapshot()
    assert (snap.state, snap.queue_position) == ("stopped", 0)     # at once
    assert job.join(10) and job.state == "stopped" and job.snapshot().step == 0
    assert fake.killed == fake.actors and len(fake.actors) == 1    # the actor was removed


def test_placed_then_preparing_then_running_and_a_lost_worker_is_a_sentence(fake_ray):
    from lmviz.server.train_backend import training_job

    placed = threading.Event()
    fake = fake_ray(placed=placed)
    job = training_job(_make(100_000, eval_every=1000)).start()
    assert wait_for(lambda: job.state == "queued")
    placed.set()
    states = []
    assert wait_for(lambda: states.append(job.snapshot().state) or job.snapshot().step > 0, 60)
    assert states[0] in ("queued", "preparing") and "running" in states
    assert states.index("running") > max((i for i, s in enumerate(states) if s == "preparing"), default=-1)
    fake.kill(fake.actors[0])                                      # the worker's process ended
    assert job.join(30)
    snap = job.snapshot()
    assert snap.state == "error" and "was lost" in snap.error and snap.steps


def test_a_failed_remote_training_says_why_and_stop_after_it_changes_nothing(fake_ray):
    from lmviz.server.train_backend import training_job

    fake_ray()
    job = training_job(_make(10, text="   ")).start()
    assert job.join(60)
    assert (job.state, job.snapshot().error) == ("error", "the training text is empty")
    job.cancel()
    assert job.state == "error"                                    # a final state stays
