"""The class store on Redis, beyond the semantics shared with the memory backend (those run on
both backends in tests/test_classroom.py): choosing the backend from the environment, the lazy
import, outages and restarts, real TTLs on every key, and several processes on one Redis.

Each test here starts what it needs on 127.0.0.1 and a free port; skips with a reason when
redis-server or the redis package is missing, except with LMVIZ_CLUSTER_TESTS=1."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from lmviz.server.classroom import ClassStore, MemoryBackend
from lmviz.server.classroom_backend import store_from_env
from tests import redis_util
from tests.conftest import ROOT, Clock


def test_without_a_url_the_store_is_in_process_and_redis_is_not_imported():
    code = textwrap.dedent("""
        import sys
        from lmviz.server.classroom_backend import store_from_env
        s = store_from_env({})
        c = s.create_class()
        assert c.ok and s.follow(c.code, "s1").status == "live"
        print(type(s._db).__name__, "redis" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MemoryBackend", "False"]
    assert isinstance(store_from_env({"LMVIZ_REDIS_URL": "  "})._db, MemoryBackend)


def test_a_url_without_the_redis_package_says_what_to_install():
    code = textwrap.dedent("""
        import sys
        sys.modules["redis"] = None                 # as if the package were not installed
        from lmviz.server.classroom_backend import store_from_env
        try:
            store_from_env({"LMVIZ_REDIS_URL": "redis://127.0.0.1:1/0"})
        except RuntimeError as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert "requirements-cluster.txt" in out.stdout, out.stderr


@pytest.fixture
def server():
    redis_util.require_redis()
    srv = redis_util.RedisServer(persist=True)
    yield srv
    srv.close()


@pytest.mark.cluster
def test_store_from_env_uses_redis_and_its_prefix(server):
    from lmviz.server.classroom_redis import RedisBackend

    s = store_from_env({"LMVIZ_REDIS_URL": server.url, "LMVIZ_REDIS_PREFIX": "course1:"})
    assert isinstance(s._db, RedisBackend) and s._db.shared
    c = s.create_class()
    assert c.ok
    keys = set(s._db.dump())
    assert f"course1:class:{c.code}" in keys and all(k.startswith("course1:") for k in keys)
    other = store_from_env({"LMVIZ_REDIS_URL": server.url, "LMVIZ_REDIS_PREFIX": "course2:"})
    assert other.follow(c.code, "s1").status == "not_found"     # prefixes keep deployments apart


@pytest.mark.cluster
def test_two_stores_on_one_redis_share_a_class(server):
    clock = Clock(2_000_000.0)
    a = ClassStore(redis_util.backend(clock, server, "shared:"), clock=clock)
    b = ClassStore(redis_util.backend(clock, server, "shared:"), clock=clock)
    c = a.create_class()
    a.publish(c.code, c.secret, "generation", "temperature", {"tau": "0.5"})
    f = b.follow(c.code, "s1")
    assert (f.status, f.chapter, dict(f.settings)) == ("live", "generation", {"tau": "0.5"})
    assert b.open_question(c.code, c.secret, "q1", ["a", "b"]).ok        # the secret works on b too
    assert a.answer(c.code, "s1", "q1", "a").ok
    assert b.answer(c.code, "s1", "q1", "b").reason == "already_answered"
    assert dict(b.histogram(c.code, c.secret).counts) == {"a": 1, "b": 0}
    assert a.lecturer_view(c.code, c.secret).followers == 1


def test_an_address_share_holds_across_replicas(server):
    """One address flooding sentences through two replicas gets one share between them (the
    counters live in Redis); a student of another address is still counted."""
    clock = Clock(2_000_000.0)
    a, b = (ClassStore(redis_util.backend(clock, server, "share:"), clock=clock) for _ in range(2))
    c = a.create_class()
    got = [(a if i % 2 else b).submit(c.code, f"s:x{i}", "corpus.room", f"spam {i}", address="198.51.100.9")
           for i in range(620)]
    assert sum(r.ok for r in got) == a.limits.max_sentences_per_address
    assert {r.reason for r in got if not r.ok} == {"address_share"}
    assert b.submit(c.code, "b:aRealStudent0001", "corpus.room", "hello", address="203.0.113.5").ok


@pytest.mark.cluster
def test_every_key_gets_a_real_ttl(server):
    """Redis frees what nobody reads again: no key without an expiry."""
    clock = Clock(2_000_000.0)
    db = redis_util.backend(clock, server, "ttl:")
    s = ClassStore(db, clock=clock)
    c = s.create_class()
    s.publish(c.code, c.secret, "attention", "", {"L": "1"})
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    for i in range(3):
        s.follow(c.code, f"s{i}")
        s.answer(c.code, f"s{i}", "q1", "a")
    s.follow("ZZZZZZZ", "lost")
    keys = list(db.client.scan_iter(match="ttl:*"))
    kinds = {k.decode().split(":")[1] for k in keys}
    assert kinds >= {"class", "classes", "fol", "ans", "hist", "n", "fail"}
    ttls = {k.decode(): db.client.pttl(k) for k in keys}
    assert all(t > 0 for t in ttls.values()), ttls
    assert ttls[f"ttl:class:{c.code}"] <= (s.limits.idle_expiry_s + s.limits.ended_keep_s + 6) * 1000


@pytest.mark.cluster
def test_outage_gives_a_reason_and_the_store_recovers_after_a_restart(server):
    clock = Clock(2_000_000.0)
    s = ClassStore(redis_util.backend(clock, server, "out:"), clock=clock)
    c = s.create_class()
    s.publish(c.code, c.secret, "kv-cache", "", {"step": "3"})
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    assert s.answer(c.code, "s1", "q1", "a").ok

    server.stop()                                     # Redis goes away
    down = "store_unavailable"
    assert (s.follow(c.code, "s2").status, s.follow(c.code, "s2").reason) == ("unavailable", down)
    assert s.create_class().reason == down and not s.create_class().ok
    for r in (s.publish(c.code, c.secret, "kv-cache", "", {"step": "4"}), s.heartbeat(c.code, c.secret),
              s.open_question(c.code, c.secret, "q2", ["a", "b"]), s.reveal(c.code, c.secret),
              s.close_question(c.code, c.secret), s.end_class(c.code, c.secret),
              s.answer(c.code, "s2", "q1", "b"), s.histogram(c.code, c.secret),
              s.lecturer_view(c.code, c.secret)):
        assert (r.ok, r.reason) == (False, down), r
    assert s.my_answer(c.code, "s1", "q1") is None and s.leave(c.code, "s1") is None
    assert s.live_classes() == -1

    server.start()                                    # back, with what it saved on shutdown
    f = s.follow(c.code, "s2")
    assert (f.status, dict(f.settings), f.question.id) == ("live", {"step": "3"}, "q1")
    assert s.answer(c.code, "s2", "q1", "b").ok and s.my_answer(c.code, "s1", "q1") == "a"
    assert dict(s.histogram(c.code, c.secret).counts) == {"a": 1, "b": 1}
    assert s.publish(c.code, c.secret, "kv-cache", "", {"step": "4"}).ok
    assert s.create_class().ok and s.live_classes() == 2


@pytest.mark.cluster
def test_a_restart_that_lost_the_data_says_not_found_not_an_error():
    redis_util.require_redis()
    srv = redis_util.RedisServer(persist=False)
    try:
        clock = Clock(2_000_000.0)
        s = ClassStore(redis_util.backend(clock, srv, "lost:"), clock=clock)
        c = s.create_class()
        srv.restart()
        assert s.follow(c.code, "s1").status == "not_found"
        assert s.publish(c.code, c.secret, "generation").reason == "not_found"
        assert s.create_class().ok
    finally:
        srv.close()


@pytest.mark.cluster
def test_answers_from_several_processes_count_exactly(server):
    """Four OS processes (each its own store, no shared lock) answer and double-answer at once."""
    import time

    clock = time.time                                 # the workers' stores run on the real clock
    s = ClassStore(redis_util.backend(clock, server, "procs:"), clock=clock)
    c = s.create_class()
    s.open_question(c.code, c.secret, "q1", ["a", "b", "c"])
    worker = textwrap.dedent(f"""
        import json, sys
        from lmviz.server.classroom_redis import RedisBackend
        from lmviz.server.classroom import ClassStore
        p = int(sys.argv[1])
        s = ClassStore(RedisBackend.from_url({server.url!r}, prefix="procs:"))
        ok = 0
        for i in range(60):
            ok += s.answer({c.code!r}, f"s{{i}}", "q1", "abc"[i % 3]).ok      # the same 60 sessions
            ok += s.answer({c.code!r}, f"p{{p}}-{{i}}", "q1", "a").ok         # 60 of its own
            s.follow({c.code!r}, f"p{{p}}-{{i}}")
        print(json.dumps(ok))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(p)], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for p in range(4)]
    oks = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        oks.append(json.loads(out))
    assert sum(oks) == 60 + 4 * 60                    # each session counted exactly once
    h = s.histogram(c.code, c.secret)
    assert h.total == 300 and dict(h.counts) == {"a": 20 + 240, "b": 20, "c": 20}
    assert s.lecturer_view(c.code, c.secret).followers == 240


@pytest.mark.cluster
def test_concurrent_lecturer_writes_lose_no_update(server):
    """Two replicas writing one class record at once: every version bump survives (CAS + retry)."""
    import threading

    clock = Clock(2_000_000.0)
    stores = [ClassStore(redis_util.backend(clock, server, "cas:"), clock=clock) for _ in range(2)]
    c = stores[0].create_class()
    go = threading.Barrier(4)

    def lecturer(st: ClassStore, k: int):
        go.wait()
        for i in range(25):
            assert st.publish(c.code, c.secret, "attention", "", {"who": f"{k}-{i}"}).ok

    th = [threading.Thread(target=lecturer, args=(stores[k % 2], k)) for k in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout=120)
    assert stores[1].follow(c.code, "s1").version == 100     # 100 changes, 100 bumps


@pytest.mark.parametrize("aof", [False, True], ids=["no-persistence", "append-only-file"])
def test_a_redis_crash_loses_the_class_only_without_the_append_only_file(aof):
    """Issue 28, fault 13: after a crash (kill -9: no save on shutdown) a class survives only
    with Redis' append-only file, which deploy/local-cluster.sh turns on; without it the store
    knows its data was lost (a new epoch), so the pages say "the class service restarted"."""
    redis_util.require_redis()
    srv = redis_util.RedisServer(persist=True, aof=aof)
    try:
        clock = Clock(2_000_000.0)
        s = ClassStore(redis_util.backend(clock, srv, "crash:"), clock=clock)
        c = s.create_class()
        s.publish(c.code, c.secret, "generation", "", {"tau": "0.5"})
        srv.crash()
        assert s.follow(c.code, "s1").status == "unavailable"
        srv.start()
        f = s.follow(c.code, "s1")
        if aof:
            assert (f.status, dict(f.settings)) == ("live", {"tau": "0.5"}) and not s.lost(c.epoch)
            assert s.publish(c.code, c.secret, "generation", "", {"tau": "1"}).ok
        else:
            assert f.status == "not_found" and s.lost(c.epoch)
            assert s.publish(c.code, c.secret, "generation").reason == "not_found"
            n = s.create_class()
            assert n.ok and n.epoch != c.epoch and not s.lost(n.epoch)
    finally:
        srv.close()
