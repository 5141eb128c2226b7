"""A throw-away ``redis-server`` for tests: 127.0.0.1, a free port, its own temporary folder.

Tests that need it are marked ``cluster`` and skip with a reason when ``redis-server`` or the
``redis`` package is missing, except with ``LMVIZ_CLUSTER_TESTS=1`` (``.ci/run``'s cluster step,
which installs both), where they fail instead.
"""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.browser_util import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def cluster_required() -> bool:
    """True in the cluster step (LMVIZ_CLUSTER_TESTS=1): a missing piece fails instead of skipping."""
    return os.environ.get("LMVIZ_CLUSTER_TESTS") == "1"


def require_redis():
    """Skip (fail under LMVIZ_CLUSTER_TESTS=1) unless redis-server and the redis package are both here."""
    problem = None
    if not Path(REDIS_SERVER).exists():
        problem = "redis-server not found (apt-get install redis-server)"
    else:
        try:
            import redis  # noqa: F401
        except ImportError:
            problem = "the redis package is not installed (pip install -r requirements-cluster.txt)"
    if problem:
        if cluster_required():
            pytest.fail(f"Redis tests are required with LMVIZ_CLUSTER_TESTS=1 but: {problem}")
        pytest.skip(problem)


class RedisServer:
    """``redis-server`` on 127.0.0.1:<free port>; ``persist=True`` saves its data on shutdown
    (an RDB file in its folder) so that a restart keeps it, as a packaged Redis does."""

    def __init__(self, persist: bool = False, aof: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lmviz-redis-"))
        self.port = free_port()
        self.persist = persist
        self.aof = aof      # the append-only file (deploy/local-cluster.sh): survives a kill -9
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20) -> None:
        save = ["--save", "3600 1", "--dbfilename", "dump.rdb"] if self.persist else ["--save", ""]
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--appendonly", "yes" if self.aof else "no", "--appendfsync", "always",
             "--protected-mode", "yes", "--daemonize", "no", *save,
             "--logfile", str(self.dir / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.dir / 'redis.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError("redis-server did not answer PING")

    def stop(self) -> None:
        """SIGTERM (a persisting server saves first) and wait for the process to end."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def crash(self) -> None:
        """SIGKILL: no chance to save (what a crash, an OOM kill or a power cut gives)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


_shared: RedisServer | None = None


def shared_server() -> RedisServer:
    """One server for the whole test run (each test uses its own key prefix)."""
    global _shared
    require_redis()
    if _shared is None or _shared.proc is None or _shared.proc.poll() is not None:
        _shared = RedisServer()
        atexit.register(_shared.close)
    return _shared


_n = 0


def backend(clock, server: RedisServer | None = None, prefix: str | None = None):
    """A RedisBackend on the fake clock, under a prefix no other test uses."""
    from lmviz.server.classroom_redis import RedisBackend

    global _n
    _n += 1
    srv = server or shared_server()
    return RedisBackend.from_url(srv.url, prefix=prefix or f"t{os.getpid()}-{_n}:", clock=clock)
