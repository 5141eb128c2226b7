"""The Ray training backend (lmviz.server.train_ray) on a local in-process Ray (2 CPUs, 127.0.0.1).

- with LMVIZ_RAY_ADDRESS set, ``training_job(...)`` is a RayTrainingJob; unset, it is the local job
  and ``ray`` is never imported;
- a tiny training submitted through the backend runs on a Ray actor, its step count grows and it
  publishes a model (checkpoint bytes loaded back) and ends "done";
- Stop ends it as "stopped" and removes the actor; a training that fails on the worker shows its
  own message; a killed actor ends the job with a clear message instead of hanging; an
  unreachable cluster address is a sentence at once (not minutes of ray.init retries);
- the cluster's CPUs are the cap: a second job waits queued (position 1) until the first ends.

Out of the default run: runs with LMVIZ_CLUSTER_TESTS=1 (``.ci/run`` sets it). Skips with a
reason when ray is missing, except with LMVIZ_CLUSTER_TESTS=1, where it fails instead.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests import redis_util
from tests.conftest import ROOT
from tests.model_util import tiny_trainer as _make

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(os.environ.get("LMVIZ_CLUSTER_TESTS") != "1",
                       reason="Ray tests run with LMVIZ_CLUSTER_TESTS=1 (.ci/run sets it)"),
]



def _require_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        if redis_util.cluster_required():
            pytest.fail("Ray tests are required in CI but ray is not installed "
                        "(pip install -r requirements-cluster.txt)")
        pytest.skip("ray is not installed (pip install -r requirements-cluster.txt)")


@pytest.fixture(scope="module")
def local_ray():
    _require_ray()
    import ray

    from lmviz.server.train_ray import runtime_env

    os.environ["LMVIZ_RAY_POLL_S"] = "0.2"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="lmviz",
             runtime_env=runtime_env(), _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()
    os.environ.pop("LMVIZ_RAY_POLL_S", None)


@pytest.fixture
def on_ray(local_ray, monkeypatch):
    monkeypatch.setenv("LMVIZ_RAY_ADDRESS", "local-test")     # connect() finds Ray initialised
    monkeypatch.setenv("LMVIZ_RAY_TIMEOUT", "20")
    return local_ray


def _wait(job, cond, limit: float = 90.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        snap = job.snapshot()
        if cond(snap):
            return snap
        time.sleep(0.1)
    raise AssertionError(f"timed out; last snapshot state={snap.state} step={snap.step} error={snap.error}")


def test_unset_means_local_and_ray_is_never_imported():
    code = ("import os, sys; os.environ.pop('LMVIZ_RAY_ADDRESS', None)\n"
            "from lmviz.server.train_backend import training_job\n"
            "j = training_job(lambda: None)\n"
            "print(type(j).__name__, 'ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["TrainingJob", "False"], out.stderr


def test_an_unreachable_cluster_is_a_sentence_at_once():
    _require_ray()
    import socket

    with socket.socket() as s:                          # a free port: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("from lmviz.server.train_backend import training_job\n"
            "j = training_job(lambda: None).start(); print(j.join(30)); s = j.snapshot()\n"
            "print(s.state); print(s.error)")
    env = dict(os.environ, LMVIZ_RAY_ADDRESS=f"127.0.0.1:{port}")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    lines = out.stdout.splitlines()
    assert lines[:2] == ["True", "error"], out.stdout + out.stderr[-1500:]
    assert lines[2].startswith(f"could not reach the Ray cluster at 127.0.0.1:{port}")


def test_a_training_runs_on_ray_and_its_curve_grows(on_ray):
    from lmviz.server.train_backend import training_job
    from lmviz.server.train_job import TrainingJob
    from lmviz.server.train_ray import RayTrainingJob

    job = training_job(_make(60))
    assert isinstance(job, RayTrainingJob)
    job.start()
    first = _wait(job, lambda s: s.step > 0)
    assert first.state in ("running", "done") and first.active or first.state == "done"
    snap = _wait(job, lambda s: s.state == "done")
    assert snap.step == 60 and [m.step for m in snap.steps] == list(range(1, 61))
    assert snap.step > first.step
    assert len(snap.evals) >= 6 and snap.samples and snap.info["params"] > 0
    assert snap.info["worker"] and snap.error is None
    # the published weights came back in the checkpoint format and run here
    assert snap.model is not None and snap.model_version >= 2 and snap.tokenizer is not None
    import torch

    ids = torch.tensor([snap.tokenizer.encode("the cat")])
    assert torch.isfinite(snap.model(ids)[0]).all()
    labels, weights = snap.attention
    assert weights.ndim == 4 and len(labels) == weights.shape[-1]
    if hasattr(TrainingJob, "_start_replay"):           # a job that keeps a training replay streams it too
        assert snap.replay is not None and len(snap.replay) >= 2 and snap.replay.snapshots[-1].step == 60


def test_stop_ends_the_remote_training(on_ray):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(100_000, eval_every=1000)).start()
    _wait(job, lambda s: s.step > 0)
    actor = job._actor
    job.cancel()
    assert job.join(30)
    snap = job.snapshot()
    assert snap.state == "stopped" and snap.step < 100_000
    end, gone = time.monotonic() + 20, False           # the actor is removed (ray.kill is asynchronous)
    while not gone and time.monotonic() < end:
        try:
            on_ray.get(actor.ready.remote(), timeout=5)
            time.sleep(0.3)
        except Exception:  # noqa: BLE001 - RayActorError: it is gone
            gone = True
    assert gone


def test_a_failed_remote_training_says_why(on_ray):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(10, text="   ")).start()
    assert job.join(60)
    snap = job.snapshot()
    assert snap.state == "error" and snap.error == "the training text is empty"


def test_a_killed_worker_gives_a_clear_error_not_a_hang(on_ray):
    from lmviz.server.train_backend import training_job

    job = training_job(_make(100_000, eval_every=1000)).start()
    _wait(job, lambda s: s.step > 0)
    on_ray.kill(job._actor, no_restart=True)
    assert job.join(30)                                # no hang: ends within the timeout
    snap = job.snapshot()
    assert snap.state == "error" and "was lost" in snap.error and "Traceback" not in snap.error
    assert snap.step > 0 and snap.steps                # what it had streamed stays


def test_the_clusters_cpus_are_the_cap(on_ray, monkeypatch):
    from lmviz.server.train_backend import training_job

    monkeypatch.setenv("LMVIZ_RAY_CPUS", "2")          # one training takes the whole local cluster
    a = training_job(_make(100_000, eval_every=1000)).start()
    _wait(a, lambda s: s.step > 0)
    b = training_job(_make(20)).start()
    snap = _wait(b, lambda s: s.state == "queued", 30)
    assert snap.queue_position == 1
    time.sleep(1.0)
    assert b.snapshot().state == "queued" and b.snapshot().step == 0
    a.cancel()
    assert a.join(30)
    done = _wait(b, lambda s: s.state == "done")
    assert done.step == 20 and done.queue_position == 0
