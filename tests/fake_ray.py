"""A fake of the few ``ray`` calls lmviz.server.train_ray makes, in this process and without ray.

Actor methods run at once on the caller's thread (``.remote()`` computes, ``ray.get`` returns
or raises what it computed), so a test controls the timing that a real cluster leaves to chance:

- ``finish_at_start``: the actor's ``start`` runs its training to the end before it answers: the
  server's first look already sees every step and "done" (a fast machine, the timing behind the
  flaky ``tests/test_ray.py::test_a_training_runs_on_ray_and_its_curve_grows``);
- ``placed``: an Event; until it is set the cluster has no room and the actor stays unplaced
  (``ray.wait`` finds its ``ready`` call not done), so the job is queued;
- ``kill(actor)`` ends an actor; its later calls raise ``RayActorError`` (a lost worker).
"""
from __future__ import annotations

import threading
import types


class GetTimeoutError(Exception):
    pass


class RayActorError(Exception):
    pass


class WorkerCrashedError(Exception):
    pass


class NodeDiedError(Exception):
    pass


class _Ref:
    def __init__(self, fn, ready: threading.Event | None = None):
        self._fn, self._ready, self._done, self._value, self._error = fn, ready, False, None, None
        if ready is None:
            self._run()

    def _run(self) -> None:
        if not self._done:
            try:
                self._value = self._fn()
            except Exception as e:  # noqa: BLE001 - re-raised by get, as ray does
                self._error = e
            self._done = True

    def is_ready(self) -> bool:
        return self._ready is None or self._ready.is_set()


class _Method:
    def __init__(self, actor: "_Actor", name: str):
        self._actor, self._name = actor, name

    def remote(self, *args, **kwargs) -> _Ref:
        actor = self._actor

        def call():
            if actor.dead:
                raise RayActorError("The actor died unexpectedly before finishing this task.")
            out = getattr(actor.obj, self._name)(*args, **kwargs)
            if self._name == "start" and actor.fake.finish_at_start:
                actor.obj.job.join(120)          # a fast machine: the whole run before the answer
            return out
        return _Ref(call, actor.fake.placed if self._name == "ready" else None)


class _Actor:
    def __init__(self, fake: "FakeRay", cls, args, kwargs):
        self.fake, self.dead = fake, False
        self.obj = cls(*args, **kwargs)
        fake.actors.append(self)

    def __getattr__(self, name: str) -> _Method:
        return _Method(self, name)


class _ActorClass:
    def __init__(self, fake: "FakeRay", cls):
        self._fake, self._cls = fake, cls

    def options(self, **opts) -> "_ActorClass":
        self._fake.options.append(opts)
        return self

    def remote(self, *args, **kwargs) -> _Actor:
        return _Actor(self._fake, self._cls, args, kwargs)


class FakeRay(types.ModuleType):
    """Install with ``monkeypatch.setitem(sys.modules, "ray", FakeRay())``."""

    def __init__(self, finish_at_start: bool = False, placed: threading.Event | None = None):
        super().__init__("ray")
        self.finish_at_start = finish_at_start
        self.placed = placed
        self.actors: list[_Actor] = []
        self.options: list[dict] = []
        self.killed: list[_Actor] = []
        self.exceptions = types.SimpleNamespace(GetTimeoutError=GetTimeoutError, RayActorError=RayActorError,
                                                WorkerCrashedError=WorkerCrashedError, NodeDiedError=NodeDiedError)

    def is_initialized(self) -> bool:
        return True

    def remote(self, **_opts):
        return lambda cls: _ActorClass(self, cls)

    def get(self, ref: _Ref, timeout: float | None = None):
        if not ref.is_ready():
            if not ref._ready.wait(timeout):
                raise GetTimeoutError("Get timed out")
        ref._run()
        if ref._error is not None:
            raise ref._error
        return ref._value

    def wait(self, refs: list, timeout: float | None = None):
        ready = [r for r in refs if r.is_ready()]
        if not ready and refs and refs[0]._ready is not None:
            refs[0]._ready.wait(timeout)
            ready = [r for r in refs if r.is_ready()]
        return ready, [r for r in refs if r not in ready]

    def kill(self, actor: _Actor, no_restart: bool = True) -> None:
        if not actor.dead:
            actor.dead = True
            job = getattr(actor.obj, "job", None)
            if job is not None:
                job.cancel()
            self.killed.append(actor)
