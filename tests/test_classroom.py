"""The class store (lmviz/server/follow.py): follow, answer once, reveal, bounds, expiry, secrets,
rate limits, hostile input and concurrency. Time comes from a fake clock: no test sleeps.

Every semantic test runs on both backends: ``memory`` (in-process, under the store's lock) and
``redis`` (lmviz/server/classroom_redis.py on a redis-server started for the run, no lock: atomic Lua
steps). The redis cases skip with a reason when redis-server or the redis package is missing,
except with LMVIZ_CLUSTER_TESTS=1 (.ci/run's cluster step). Redis-only cases (outages, restarts, several processes) are in
tests/test_classroom_redis.py."""
from __future__ import annotations

import threading

import pytest

from lmviz.server.classroom import ALPHABET, CODE_LEN, ClassLimits, ClassStore, MemoryBackend, normalise_code
from tests import redis_util
from tests.conftest import Clock


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.cluster)])
def new_backend(request):
    """backend(clock) -> a fresh, empty backend of the kind under test."""
    if request.param == "memory":
        return MemoryBackend
    redis_util.require_redis()
    return redis_util.backend


def stored(db) -> str:
    """Everything a backend holds, as text (to look for what must not be there)."""
    return repr(db._data) if isinstance(db, MemoryBackend) else repr(db.dump())


@pytest.fixture
def make(new_backend):
    def make(clock, **limits):
        return ClassStore(new_backend(clock), limits=ClassLimits(**limits), clock=clock)
    return make


@pytest.fixture
def store(clock, make):
    return make(clock)


@pytest.fixture
def cls(store):
    c = store.create_class()
    assert c.ok
    return c


OPTS = ["rises", "falls", "same"]


# -- create --------------------------------------------------------------------------------------
def test_codes_are_short_unambiguous_and_unique(store):
    made = [store.create_class() for _ in range(150)]
    codes = [c.code for c in made]
    assert all(len(c) == CODE_LEN and set(c) <= set(ALPHABET) for c in codes)
    assert not set("01OIL") & set(ALPHABET)
    assert len(set(codes)) == len(codes)
    assert len({c.secret for c in made}) == len(made)
    assert all(len(c.secret) >= 32 and c.code not in c.secret for c in made)


def test_code_typing_is_forgiving_but_not_guessing():
    assert normalise_code(" ab3d-7kq") == "AB3D7KQ"
    for bad in ("AB3D7K", "AB3D7KQX", "AB0D7KQ", "ABID7KQ", "<script>", "", None, 1234567, ["A"],
                "A" * 100_000, "ＡＢ３Ｄ７ＫＱ"):
        assert normalise_code(bad) is None


def test_the_secret_is_not_stored_in_clear(clock, new_backend):
    db = new_backend(clock)
    s = ClassStore(db, clock=clock)
    c = s.create_class()
    assert c.code in stored(db) and c.secret not in stored(db)


# -- publish and follow --------------------------------------------------------------------------
def test_follow_sees_published_state_and_version(store, cls):
    v0 = store.follow(cls.code, "s1")
    assert v0.status == "live" and v0.chapter == "" and v0.changed
    r = store.publish(cls.code, cls.secret, "generation", "temperature", {"tau": "0.5", "k": "0"})
    assert r.ok and r.version == v0.version + 1
    f = store.follow(cls.code.lower(), "s1", known_version=v0.version)
    assert (f.status, f.chapter, f.section, dict(f.settings)) == (
        "live", "generation", "temperature", {"tau": "0.5", "k": "0"})
    assert f.changed and f.version == r.version
    assert not store.follow(cls.code, "s1", known_version=f.version).changed


def test_same_state_again_does_not_bump_the_version(store, cls, clock):
    a = store.publish(cls.code, cls.secret, "attention", "", {"L": "1", "h": "2"})
    clock.advance(5)
    b = store.publish(cls.code, cls.secret, "attention", "", {"h": "2", "L": "1"})
    assert a.version == b.version
    c = store.publish(cls.code, cls.secret, "attention", "", {"L": "2", "h": "2"})
    assert c.version == a.version + 1
    hb = store.heartbeat(cls.code, cls.secret)
    assert hb.ok and hb.version == c.version


def test_returned_records_are_copies(store, cls):
    store.publish(cls.code, cls.secret, "generation", "", {"tau": "1"})
    f = store.follow(cls.code, "s1")
    f.settings["tau"] = "9"
    assert store.follow(cls.code, "s1").settings["tau"] == "1"


def test_followers_are_counted_and_leave(store, cls, clock):
    for i in range(5):
        store.follow(cls.code, f"s{i}")
    assert store.lecturer_view(cls.code, cls.secret).followers == 5
    store.leave(cls.code, "s0")
    assert store.lecturer_view(cls.code, cls.secret).followers == 4
    clock.advance(store.limits.follower_ttl_s + 1)
    store.follow(cls.code, "s1")
    assert store.lecturer_view(cls.code, cls.secret).followers == 1


def test_a_student_link_finds_the_chapter_without_counting_a_follower(clock, make):
    """``chapter_of``: where ui.first_paint sends a student link (the live class's chapter, ""
    for none); failed look-ups of one address are bounded, the others' are not."""
    s = make(clock, link_failures_per_min=3)
    c = s.create_class()
    assert s.chapter_of(c.code, "203.0.113.7") == ""          # the lecturer is on the home page
    s.publish(c.code, c.secret, "generation", "2", {"tau": "0.5"})
    assert s.chapter_of(c.code.lower(), "203.0.113.7") == "generation"
    assert s.lecturer_view(c.code, c.secret).followers == 0
    for bad in ("ZZZZZZZ", "<script>", None):
        assert s.chapter_of(bad, "203.0.113.7") == ""
    assert s.chapter_of(c.code, "203.0.113.7") == ""          # 3 failures: no look-up this minute
    assert s.chapter_of(c.code, "198.51.100.2") == "generation"
    clock.advance(61)
    assert s.chapter_of(c.code, "203.0.113.7") == "generation"
    s.end_class(c.code, c.secret)
    assert s.chapter_of(c.code, "198.51.100.2") == ""


def test_followers_beyond_the_bound_still_follow_uncounted(clock, make):
    s = make(clock, max_followers=3)
    c = s.create_class()
    views = [s.follow(c.code, f"s{i}") for i in range(10)]
    assert all(v.status == "live" for v in views)
    assert s.lecturer_view(c.code, c.secret).followers == 3


# -- questions -----------------------------------------------------------------------------------
def test_answer_once_histogram_and_reveal(store, cls):
    assert store.open_question(cls.code, cls.secret, "gen_tau_half", OPTS).ok
    f = store.follow(cls.code, "s1")
    assert f.question.id == "gen_tau_half" and not f.question.revealed and f.question.counts is None
    for i, o in enumerate(["rises"] * 3 + ["falls"] * 2):
        assert store.answer(cls.code, f"s{i}", "gen_tau_half", o).ok
    again = store.answer(cls.code, "s0", "gen_tau_half", "falls")
    assert not again.ok and again.reason == "already_answered"
    assert store.my_answer(cls.code, "s0", "gen_tau_half") == "rises"
    assert store.my_answer(cls.code, "s9", "gen_tau_half") is None
    h = store.histogram(cls.code, cls.secret)
    assert h.ok and dict(h.counts) == {"rises": 3, "falls": 2, "same": 0} and h.total == 5
    lv = store.lecturer_view(cls.code, cls.secret)
    assert dict(lv.question.counts) == dict(h.counts)
    r = store.reveal(cls.code, cls.secret, "gen_tau_half")
    assert r.ok
    f = store.follow(cls.code, "s7", known_version=f.version)
    assert f.changed and f.question.revealed and dict(f.question.counts) == dict(h.counts)
    late = store.answer(cls.code, "s8", "gen_tau_half", "same")
    assert late.reason == "closed"
    assert store.histogram(cls.code, cls.secret).total == 5


def test_answers_must_match_the_open_question(store, cls):
    assert store.answer(cls.code, "s1", "gen_tau_half", "rises").reason == "no_question"
    store.open_question(cls.code, cls.secret, "gen_tau_half", OPTS)
    assert store.answer(cls.code, "s1", "kv_bytes", "a").reason == "other_question"
    for bad in ("up", "<script>alert(1)</script>", "RISES", "", None, 3, ["rises"], {"x": 1},
                "rises" * 1000):
        r = store.answer(cls.code, "s1", "gen_tau_half", bad)
        assert not r.ok and r.reason == "bad_option"
    assert store.histogram(cls.code, cls.secret).total == 0


def test_a_new_question_keeps_the_old_histogram_and_reopening_keeps_answers(store, cls):
    store.open_question(cls.code, cls.secret, "q1", ["a", "b"])
    store.answer(cls.code, "s1", "q1", "a")
    store.open_question(cls.code, cls.secret, "q2", ["a", "b", "c"])
    assert store.answer(cls.code, "s1", "q1", "b").reason == "other_question"
    assert store.answer(cls.code, "s1", "q2", "c").ok
    old = store.histogram(cls.code, cls.secret, "q1")
    assert dict(old.counts) == {"a": 1, "b": 0}
    store.open_question(cls.code, cls.secret, "q1", ["a", "b"])
    assert store.answer(cls.code, "s1", "q1", "b").reason == "already_answered"
    assert store.histogram(cls.code, cls.secret).counts["a"] == 1
    assert store.histogram(cls.code, cls.secret, "never").reason == "no_question"
    assert store.close_question(cls.code, cls.secret).ok
    assert store.follow(cls.code, "s1").question is None


def test_bad_questions_are_refused(store, cls):
    for qid, opts in (("", OPTS), ("<b>", OPTS), ("ok", ["a"]), ("ok", ["a", "a"]),
                      ("ok", ["a", "<i>"]), ("ok", "ab"), ("ok", [str(i) for i in range(20)]),
                      (None, OPTS), ("x" * 100, OPTS)):
        r = store.open_question(cls.code, cls.secret, qid, opts)
        assert not r.ok and r.reason == "bad_question", (qid, opts)
    assert store.reveal(cls.code, cls.secret).reason == "no_question"


# -- bounds --------------------------------------------------------------------------------------
def test_max_classes_then_room_again_after_expiry(clock, make):
    s = make(clock, max_classes=3)
    made = [s.create_class() for _ in range(3)]
    assert all(c.ok for c in made)
    full = s.create_class()
    assert not full.ok and full.reason == "full" and full.code == "" and full.secret == ""
    assert s.end_class(made[0].code, made[0].secret).ok
    assert s.create_class().ok                          # an ended class frees its place
    assert not s.create_class().ok
    clock.advance(s.limits.idle_expiry_s + 1)           # every lecturer went silent
    assert s.live_classes() == 0
    assert s.create_class().ok


def test_answer_bounds_per_question_and_per_class(clock, make):
    s = make(clock, max_answers_per_question=5, max_answers_per_class=8)
    c = s.create_class()
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    res = [s.answer(c.code, f"s{i}", "q1", "a") for i in range(7)]
    assert [r.ok for r in res] == [True] * 5 + [False] * 2
    assert res[-1].reason == "too_many_answers"
    s.open_question(c.code, c.secret, "q2", ["a", "b"])
    res = [s.answer(c.code, f"s{i}", "q2", "b") for i in range(5)]
    assert [r.ok for r in res] == [True] * 3 + [False] * 2
    assert s.histogram(c.code, c.secret).total == 3
    assert s.histogram(c.code, c.secret, "q1").total == 5


def test_max_questions(clock, make):
    s = make(clock, max_questions=3)
    c = s.create_class()
    assert all(s.open_question(c.code, c.secret, f"q{i}", ["a", "b"]).ok for i in range(3))
    assert s.open_question(c.code, c.secret, "q9", ["a", "b"]).reason == "too_many_questions"
    assert s.open_question(c.code, c.secret, "q0", ["a", "b"]).ok   # re-opening is fine


@pytest.mark.parametrize("settings", [
    {f"k{i}": "1" for i in range(1000)},               # huge dict
    {"tau": "x" * 501},                                 # value too long
    {"tau": 0.5},                                       # not a string
    {1: "a"},                                           # key not a string
    {"<b>": "1"},                                       # markup in a key
    {"a b": "1"},                                       # not a query-parameter name
    {"k" * 33: "1"},                                    # key too long
    {"s": "line\nbreak"},                               # control characters
    {"s": "nul\x00"},
    ["tau", "0.5"],                                     # not a mapping
    "tau=0.5",
])
def test_hostile_settings_are_refused_and_change_nothing(store, cls, settings):
    ok = store.publish(cls.code, cls.secret, "generation", "", {"tau": "1"})
    r = store.publish(cls.code, cls.secret, "generation", "", settings)
    assert not r.ok and r.reason == "bad_state" and r.version == ok.version
    assert dict(store.follow(cls.code, "s1").settings) == {"tau": "1"}


@pytest.mark.parametrize("chapter,section", [("<script>", ""), ("Generation", ""), ("x" * 41, ""),
                                             ("generation", "<b>"), ("generation", "s" * 65),
                                             (None, ""), ("generation", None)])
def test_bad_chapter_or_section_refused(store, cls, chapter, section):
    assert store.publish(cls.code, cls.secret, chapter, section, {}).reason == "bad_state"


def test_markup_in_a_value_is_kept_as_plain_text(store, cls):
    text = '<img src=x onerror="alert(1)"> & 你好'
    assert store.publish(cls.code, cls.secret, "generation", "", {"prompt": text}).ok
    assert store.follow(cls.code, "s1").settings["prompt"] == text   # verbatim, never escaped or parsed


# -- expiry and ending ---------------------------------------------------------------------------
def test_idle_lecturer_ends_the_class_with_a_reason(store, cls, clock):
    store.publish(cls.code, cls.secret, "kv-cache", "", {"step": "3"})
    for _ in range(10):                                  # heartbeats keep it alive well past the limit
        clock.advance(store.limits.idle_expiry_s * 0.9)
        assert store.heartbeat(cls.code, cls.secret).ok
    assert store.follow(cls.code, "s1").status == "live"
    clock.advance(store.limits.idle_expiry_s + 1)
    f = store.follow(cls.code, "s1")
    assert (f.status, f.reason) == ("ended", "lecturer_gone") and f.settings == {}
    assert store.publish(cls.code, cls.secret, "kv-cache", "", {}).reason == "ended"
    assert store.answer(cls.code, "s1", "q", "a").reason == "ended"
    lv = store.lecturer_view(cls.code, cls.secret)
    assert (lv.ok, lv.status, lv.reason) == (False, "ended", "lecturer_gone")
    clock.advance(store.limits.ended_keep_s + 1)        # long after: forgotten
    assert store.follow(cls.code, "s1").status == "not_found"


def test_end_class_explicitly(store, cls):
    store.open_question(cls.code, cls.secret, "q1", ["a", "b"])
    before = store.follow(cls.code, "s1")
    assert store.end_class(cls.code, cls.secret).ok
    f = store.follow(cls.code, "s1", known_version=before.version)
    assert (f.status, f.reason, f.changed) == ("ended", "ended_by_lecturer", True)
    assert f.question is None
    assert store.end_class(cls.code, cls.secret).reason == "ended"


def test_a_class_has_a_longest_life(clock, make):
    s = make(clock, max_age_s=1000.0, idle_expiry_s=100.0)
    c = s.create_class()
    for _ in range(12):
        clock.advance(90)
        s.heartbeat(c.code, c.secret)
    f = s.follow(c.code, "s1")
    assert (f.status, f.reason) == ("ended", "too_long")


# -- who may drive -------------------------------------------------------------------------------
def test_wrong_secret_refused_everywhere(store, cls):
    other = store.create_class()
    store.publish(cls.code, cls.secret, "attention", "", {"L": "1"})
    store.open_question(cls.code, cls.secret, "q1", ["a", "b"])
    before = store.follow(cls.code, "s1")
    for secret in ("", "wrong", other.secret, cls.secret + "x", cls.secret[:-1], None, 123,
                   cls.code, "x" * 1_000_000):
        assert store.publish(cls.code, secret, "generation", "", {}).reason == "wrong_secret"
        assert store.heartbeat(cls.code, secret).reason == "wrong_secret"
        assert store.end_class(cls.code, secret).reason == "wrong_secret"
        assert store.open_question(cls.code, secret, "q2", ["a", "b"]).reason == "wrong_secret"
        assert store.reveal(cls.code, secret).reason == "wrong_secret"
        assert store.close_question(cls.code, secret).reason == "wrong_secret"
        assert store.histogram(cls.code, secret).reason == "wrong_secret"
        assert store.lecturer_view(cls.code, secret).reason == "wrong_secret"
    after = store.follow(cls.code, "s1")
    assert (after.version, after.chapter, after.question.revealed) == (before.version, "attention", False)


def test_a_follower_view_carries_no_secret(store, cls):
    store.publish(cls.code, cls.secret, "attention", "", {"L": "1"})
    assert cls.secret not in repr(store.follow(cls.code, "s1"))


# -- rate limit and hostile look-ups -------------------------------------------------------------
def test_failed_code_lookups_are_rate_limited_per_session(store, cls, clock):
    n = store.limits.lookup_failures_per_min
    for i in range(n):
        assert store.follow("ZZZZZZZ" if i % 2 else "bad", "attacker").status in ("not_found", "bad_code")
    blocked = store.follow(cls.code, "attacker")             # even the right code, for now
    assert (blocked.status, blocked.reason) == ("rate_limited", "rate_limited")
    assert store.answer(cls.code, "attacker", "q", "a").reason == "rate_limited"
    assert store.follow(cls.code, "student").status == "live"   # other sessions are not affected
    for _ in range(3 * n):                                       # good look-ups never count
        assert store.follow(cls.code, "student").status == "live"
    clock.advance(61)
    assert store.follow(cls.code, "attacker").status == "live"


@pytest.mark.parametrize("code", [None, 42, "", "<script>", "A" * 10_000, ["ABCDEFG"], "\x00" * 7])
@pytest.mark.parametrize("session", ["s1", None, "", "x" * 1000, "a b", "<i>"])
def test_hostile_lookups_never_raise(store, code, session):
    f = store.follow(code, session)
    assert f.status in ("bad_code", "bad_session", "rate_limited")
    assert not store.answer(code, session, "q", "a").ok
    store.leave(code, session)
    assert store.my_answer(code, session, "q") is None


def test_hostile_session_ids_cannot_answer(store, cls):
    store.open_question(cls.code, cls.secret, "q1", ["a", "b"])
    for s in (None, "", "x" * 1000, "a\nb", "<b>"):
        assert store.answer(cls.code, s, "q1", "a").reason == "bad_session"
    assert store.histogram(cls.code, cls.secret).total == 0


# -- the backend ---------------------------------------------------------------------------------
def test_backend_semantics(clock, new_backend):
    db = new_backend(clock)
    assert db.put_if_absent("k", {"a": [1, 2]}, 10) and not db.put_if_absent("k", 1, 10)
    got = db.get("k")
    got["a"].append(3)
    assert db.get("k") == {"a": [1, 2]}
    assert [db.incr("n", 5) for _ in range(3)] == [1, 2, 3]
    clock.advance(5)
    assert db.get("k") == {"a": [1, 2]} and db.get("n") is None and db.incr("n", 5) == 1
    clock.advance(6)
    assert db.get("k") is None and db.put_if_absent("k", 2, None)
    assert db.hincr("h", "x", 10) == 1 and db.hincr("h", "x", 10) == 2 and db.hgetall("h") == {"x": 2}
    db.zadd("z", "m1", clock() + 1)
    db.zadd("z", "m2", clock() + 10)
    assert db.zlive("z", clock()) == 2
    clock.advance(2)
    assert db.zlive("z", clock()) == 1
    db.zrem("z", "m2")
    assert db.zlive("z", clock()) == 0
    db.delete("k")
    assert db.get("k") is None
    with pytest.raises(TypeError):
        db.put("bad", {1, 2}, None)          # only JSON records: what Redis could hold too


def test_a_counted_write_names_the_counter_at_its_bound(clock, new_backend):
    """put_once_counted: 1 stored, 0 taken, -1 guard moved, -1-i the i-th counter at its bound
    (the store tells the sender whose share it was); nothing is written when refused."""
    db = new_backend(clock)
    db.put("g", {"status": "live"}, None)
    guard = ("g", "status", "live")
    counters = [("c1", 2), ("c2", 1)]
    assert db.put_once_counted("k1", "v", 60, "h", "f", counters, guard, clock()) == 1
    assert db.put_once_counted("k1", "v", 60, "h", "f", [("c1", 9)], guard, clock()) == 0
    assert db.put_once_counted("k2", "v", 60, "h", "f", counters, guard, clock()) == -3   # c2 is full
    assert db.put_once_counted("k2", "v", 60, "h", "f", [("c9", 5), ("c1", 1)], guard, clock()) == -3
    assert db.put_once_counted("k2", "v", 60, "h", "f", [("c1", 1)], None, clock()) == -2
    assert db.put_once_counted("k2", "v", 60, "h", "f", [], ("g", "status", "ended"), clock()) == -1
    assert db.get("k2") is None and db.hgetall("h") == {"f": 1} and (db.get("c1"), db.get("c2")) == (1, 1)


def test_memory_backend_sweeps_expired_keys(clock):
    s = ClassStore(clock=clock)
    for i in range(400):                     # 400 sessions each fail once: 400 short-lived keys
        s.follow("ZZZZZZZ", f"s{i}")
    clock.advance(61)
    for i in range(MemoryBackend.PURGE_EVERY):
        s.follow("ZZZZZZZ", f"t{i}")
    assert len(s._db._data) <= MemoryBackend.PURGE_EVERY + 1


# -- concurrency ---------------------------------------------------------------------------------
def test_many_threads_answering_at_once_count_exactly(store, cls):
    store.open_question(cls.code, cls.secret, "q1", ["a", "b", "c"])
    n_threads, per_thread = 16, 25
    start = threading.Barrier(n_threads)
    results = []
    lock = threading.Lock()

    def student(t: int):
        start.wait()
        out = []
        for i in range(per_thread):
            sid = f"s{t}-{i}"
            opt = "abc"[(t + i) % 3]
            out.append(store.answer(cls.code, sid, "q1", opt).ok)
            out.append(store.answer(cls.code, sid, "q1", opt).ok)         # a double click
            out.append(store.answer(cls.code, f"s{(t + 1) % n_threads}-{i}", "q1", "a").ok)  # a race
            store.follow(cls.code, sid)
        with lock:
            results.extend(out)

    threads = [threading.Thread(target=student, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    n = n_threads * per_thread
    assert sum(results) == n                   # each session counted exactly once
    h = store.histogram(cls.code, cls.secret)
    assert h.total == n and sum(h.counts.values()) == n
    assert store.lecturer_view(cls.code, cls.secret).followers == n


def test_concurrent_creates_respect_max_classes(clock, make):
    s = make(clock, max_classes=25)
    made, lock = [], threading.Lock()
    start = threading.Barrier(8)

    def lecturer():
        start.wait()
        got = [s.create_class() for _ in range(10)]
        with lock:
            made.extend(got)

    threads = [threading.Thread(target=lecturer) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    ok = [c for c in made if c.ok]
    assert len(ok) == 25 and len({c.code for c in ok}) == 25
    assert s.live_classes() == 25


def test_follower_sets_of_vanished_classes_are_swept(clock):
    s = ClassStore(clock=clock)
    c = s.create_class()
    for i in range(20):
        s.follow(c.code, f"s{i}")
    clock.advance(s.limits.idle_expiry_s + s.limits.ended_keep_s + 1)   # nobody reads it again
    for i in range(MemoryBackend.PURGE_EVERY):
        s.follow("ZZZZZZZ", f"t{i}")
    assert s._db._z == {}


# -- hostile clients (issue 28, faults 4 and 5) ---------------------------------------------------
def test_one_client_cannot_lock_the_lecturers_out(clock, make):
    """205 scripted sessions from one address (new session, no cookie each time) filled the store
    and refused real lecturers: now one address runs at most max_classes_per_address classes."""
    s = make(clock, max_classes=20)
    lim = s.limits
    made = [s.create_class(address="198.51.100.9") for _ in range(205)]
    assert sum(c.ok for c in made) == lim.max_classes_per_address
    assert {c.reason for c in made if not c.ok} == {"too_many_classes"}
    lecturer = s.create_class(browser="realLecturer0001", address="203.0.113.5")
    assert lecturer.ok
    # one browser (its cookie), whatever address it comes from, runs a few classes
    mine = [s.create_class(browser="tabsOfOneBrowser", address=f"192.0.2.{i}") for i in range(6)]
    assert [c.ok for c in mine] == [True] * lim.max_classes_per_browser + [False] * 3
    assert mine[-1].reason == "too_many_classes"


def test_a_lecturers_own_closed_page_makes_room_for_their_new_class(clock, make):
    """A lecturer who reloaded a few times gets a new class once the old pages went silent."""
    s = make(clock)
    old = [s.create_class(browser="lecturerBrowser1") for _ in range(3)]
    assert all(c.ok for c in old)
    assert s.create_class(browser="lecturerBrowser1").reason == "too_many_classes"
    clock.advance(s.limits.reclaim_silent_s)
    for c in old[1:]:
        assert s.heartbeat(c.code, c.secret).ok          # two tabs still open, one closed
    new = s.create_class(browser="lecturerBrowser1")
    assert new.ok
    assert s.lecturer_view(old[0].code, old[0].secret).reason == "reclaimed"
    assert s.follow(old[0].code, "st1").reason == "reclaimed"


def test_a_full_store_reclaims_silent_or_empty_classes_never_a_live_one(clock, make):
    s = make(clock, max_classes=4)
    cs = [s.create_class(address=f"192.0.2.{i}") for i in range(4)]
    for i, c in enumerate(cs):
        s.follow(c.code, f"student{i}")
    assert s.create_class(address="203.0.113.5").reason == "full"   # all live, just begun
    clock.advance(s.limits.reclaim_silent_s)
    for c in cs[1:]:
        s.heartbeat(c.code, c.secret)
        s.follow(c.code, "student")
    got = s.create_class(address="203.0.113.5")                     # cs[0]'s lecturer is silent
    assert got.ok and s.lecturer_view(cs[0].code, cs[0].secret).reason == "reclaimed"
    assert s.create_class(address="203.0.113.6").reason == "full"   # the others are in use
    # a class nobody follows, reclaim_empty_s after it began, makes room too (its page beats)
    for _ in range(int(s.limits.reclaim_empty_s // 10) + 1):
        clock.advance(10)
        for c in (*cs[1:], got):
            s.heartbeat(c.code, c.secret)
        for c in cs[1:]:
            s.follow(c.code, "student")
    assert s.create_class(address="203.0.113.6").ok
    assert s.lecturer_view(got.code, got.secret).reason == "reclaimed"
    assert all(s.lecturer_view(c.code, c.secret).ok for c in cs[1:])


def test_client_addresses_are_not_stored(clock, new_backend):
    db = new_backend(clock)
    s = ClassStore(db, clock=clock)
    c = s.create_class(browser="someBrowserId123", address="198.51.100.77")
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    s.answer(c.code, "b:someBrowserId123", "q1", "a", address="198.51.100.77")
    assert "198.51.100.77" not in stored(db)
    assert stored(db).count("someBrowserId123") == 1      # only as the voter of its answer


def test_one_client_cannot_fill_a_question_for_the_others(clock, make):
    """500 votes from one scripted client filled max_answers_per_question; the next real
    student was refused. Now one address counts at most max_answers_per_address."""
    s = make(clock, max_answers_per_question=50, max_answers_per_address=10,
             answers_per_address_per_min=10_000)
    c = s.create_class()
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    votes = [s.answer(c.code, f"s:script{i}", "q1", "a", address="198.51.100.9") for i in range(500)]
    assert sum(v.ok for v in votes) == 10
    assert {v.reason for v in votes if not v.ok} == {"address_share"}
    real = s.answer(c.code, "b:aRealStudent0001", "q1", "b", address="203.0.113.5")
    assert real.ok
    assert dict(s.histogram(c.code, c.secret).counts) == {"a": 10, "b": 1}


# -- a share per sender: the probe of issue 55 (every number here is the store's default) --------
FLOOD, REAL = "198.51.100.9", "203.0.113.5"


def test_a_flood_of_sentences_from_one_address_leaves_the_corpus_to_the_others(store, cls):
    """620 sentences from one address, a new cookie-less voter each, filled max_sentences (600)
    and the next real student was refused. Now the address gets its share, then a sentence."""
    lim = store.limits
    got = [store.submit(cls.code, f"s:script{i}", "corpus.room", f"spam {i}", address=FLOOD) for i in range(620)]
    assert sum(r.ok for r in got) == lim.max_sentences_per_address == 400
    assert {r.reason for r in got if not r.ok} == {"address_share"}
    assert store.submit(cls.code, "b:aRealStudent0001", "corpus.room", "我来自另一个网络", address=REAL).ok
    assert 300 <= lim.max_sentences_per_address < lim.max_sentences     # a 300-student NAT room fits
    q = store.queue(cls.code, cls.secret, "corpus.room")
    assert len(q.items) == 401 and q.senders == 2                       # the queue says: from two addresses


def test_cookie_less_voters_of_one_address_are_bounded_on_one_question(store, cls):
    store.open_question(cls.code, cls.secret, "q1", OPTS)
    votes = [store.answer(cls.code, f"s:tab{i}", "q1", "rises", address=FLOOD) for i in range(500)]
    assert sum(v.ok for v in votes) == store.limits.max_answers_per_address == 400
    assert votes[-1].reason == "address_share"
    assert store.answer(cls.code, "b:aRealStudent0001", "q1", "falls", address=REAL).ok
    h = store.histogram(cls.code, cls.secret)
    assert dict(h.counts) == {"rises": 400, "falls": 1, "same": 0}
    # the projector says how many addresses the 401 came from (each address once, however many voters)
    assert h.senders == 2 and store.lecturer_view(cls.code, cls.secret).question.senders == 2


def test_cookie_less_head_reports_of_one_address_are_bounded(clock, make):
    """300 cookie-less sessions of one address, each taking 16 heads (the most a student may)
    and reporting them all: 4800 reports, bounded by the address's share of the activity."""
    s = make(clock, answers_per_address_per_min=100_000)   # the share is under test, not the pace
    c = s.create_class()
    act, lim = "heads.abc", s.limits
    sent = []
    for i in range(300):
        items = s.assign(c.code, f"s:tab{i}", act, 144, lim.max_items_per_student).items
        sent += [s.report(c.code, f"s:tab{i}", act, j, address=FLOOD) for j in items]
    assert len(sent) == 4800 and sum(r.ok for r in sent) == lim.max_reports_per_address == 1000
    assert {r.reason for r in sent if not r.ok} == {"address_share"}
    mine = s.assign(c.code, "b:aRealStudent0001", act, 144, 1).items[0]
    assert s.report(c.code, "b:aRealStudent0001", act, mine, address=REAL).ok
    tl = s.tally(c.code, c.secret, act)
    assert sum(tl.counts.values()) == 1001 and tl.senders == 2


def test_the_class_total_is_shared_per_voter_and_per_address(clock, make):
    """A voter that invents activity ids, or an address flooding question after question, meets
    its share of the class total; a sender of another address is still counted."""
    s = make(clock, max_counts_per_voter=5, max_counts_per_address=12, max_answers_per_class=30,
             answers_per_voter_per_min=1000)
    c = s.create_class()
    mine = [s.submit(c.code, "b:oneBrowser00001", f"corpus.x{i}", "hi", address=FLOOD).reason for i in range(7)]
    assert mine == [""] * 5 + ["voter_share"] * 2
    others = [s.submit(c.code, f"s:x{i}", "corpus.y", "hi", address=FLOOD).reason for i in range(10)]
    assert others == [""] * 7 + ["address_share"] * 3            # 5 + 7 = the address's 12
    assert s.open_question(c.code, c.secret, "q1", OPTS).ok
    assert s.answer(c.code, "s:someone", "q1", "same", address=REAL).ok


def test_answer_attempts_are_rate_limited_per_voter_and_per_address(clock, make):
    s = make(clock, answers_per_voter_per_min=5, answers_per_address_per_min=30)
    c = s.create_class()
    s.open_question(c.code, c.secret, "q1", ["a", "b"])
    first = s.answer(c.code, "b:oneBrowser00001", "q1", "a", address="192.0.2.1")
    again = [s.answer(c.code, "b:oneBrowser00001", "q1", "b", address="192.0.2.1") for _ in range(6)]
    assert first.ok and [r.reason for r in again] == ["already_answered"] * 4 + ["too_fast"] * 2
    burst = [s.answer(c.code, f"s:x{i}", "q1", "a", address="192.0.2.2") for i in range(40)]
    assert sum(r.ok for r in burst) == 30 and burst[-1].reason == "too_fast"
    assert s.answer(c.code, "s:other", "q1", "b", address="192.0.2.3").ok    # another client
    clock.advance(61)
    assert s.answer(c.code, "s:late", "q1", "b", address="192.0.2.2").ok


def test_a_lost_store_is_told_from_an_ended_class(clock, new_backend):
    s = ClassStore(new_backend(clock), clock=clock)
    c = s.create_class()
    assert c.epoch and s.epoch() == c.epoch and not s.lost(c.epoch)
    assert s.end_class(c.code, c.secret).ok and not s.lost(c.epoch)
    assert not s.lost("") and not s.lost(None)


def test_browser_ids_are_signed():
    from lmviz.server.classroom import BrowserIds

    a, b = BrowserIds(b"a" * 32), BrowserIds(b"b" * 32)
    v = a.mint()
    ident = a.verify(v)
    assert ident and v.startswith(ident + ".") and len({a.mint() for _ in range(50)}) == 50
    assert b.verify(v) is None                      # another server's key
    forged = [ident + "." + "A" * 22, v[:-1] + ("A" if v[-1] != "A" else "B"), "x" * 10_000, None,
              "", v + ".x", "<script>." + v.split(".")[1]]
    assert all(a.verify(f) is None for f in forged)
    h = a.set_cookie_header(secure=True)
    assert h.startswith("lmviz_id=") and "HttpOnly" in h and "SameSite=Lax" in h and "Secure" in h


def test_the_gate_lets_a_few_through_and_their_places_lapse():
    from lmviz.server.classroom import Gate

    clock = Clock()
    g = Gate(2, lease_s=10, clock=clock)
    assert g.enter("a") and g.enter("b") and not g.enter("c") and g.enter("a")
    g.leave("a")
    assert g.enter("c") and not g.enter("d") and len(g) == 2
    clock.advance(10)                                # b's and c's tabs closed: their places lapse
    assert g.enter("d") and len(g) == 1


def test_a_waiting_gate_lets_the_next_in_when_a_place_is_left():
    """A follower whose update finds the gate full waits for a place instead of its next check:
    it gets in as soon as the holder leaves (its page run ended), and gives up after its wait."""
    import time

    from lmviz.server.classroom import Gate

    g = Gate(1, lease_s=10)
    assert g.enter("a")
    assert not g.enter("b", wait_s=0.05)               # nobody left: refused after the wait
    threading.Timer(0.1, g.leave, args=("a",)).start()
    t0 = time.monotonic()
    assert g.enter("b", wait_s=5)                       # in when a left, long before 5 s
    assert time.monotonic() - t0 < 2 and len(g) == 1


def test_the_gate_serves_followers_in_the_order_they_first_asked():
    """A follower refused a place keeps its place in line: when the place is left, it goes in
    before one that came to the gate later, even one that has waited there longer (before, the
    place went to whoever took the lock first, and a woken waiter could lose it again and again)."""
    import time

    from lmviz.server.classroom import Gate

    g = Gate(1, lease_s=10)
    assert g.enter("a")
    assert not g.enter("b", wait_s=0.01)                # b asks first, and is refused
    got = []

    def wait(holder):
        if g.enter(holder, wait_s=5):
            got.append(holder)

    late = threading.Thread(target=wait, args=("c",))
    late.start()                                         # c asks after b, waits from now on
    time.sleep(0.05)
    first = threading.Thread(target=wait, args=("b",))
    first.start()                                        # b's next check waits at the gate too
    time.sleep(0.05)
    g.leave("a")
    first.join(2)
    assert got == ["b"] and late.is_alive()
    g.leave("b")
    late.join(2)
    assert got == ["b", "c"]
    assert g.enter("d") is False and g._since.keys() == {"d"}   # only who still waits keeps a place


def test_a_follower_applies_the_class_again_when_its_page_run_was_cut_short():
    """A follower's check applies a new class version and asks for a page run; the version counts
    as shown only once that run has ended (page_done). In bench/room_ws.py, 1 to 3 of 100
    followers a round took the version, had that run cut short before their page drew the
    lecturer's question, and never saw it; now their next check applies it again."""
    from ui.follow import known_version

    f = {"version": 7, "drawing": 7}                 # applied at a check, its page run not ended
    assert known_version(f, ticking=False) == 7        # the page run itself: nothing to apply
    assert known_version(f, ticking=True) == -1        # the next check: that run never ended
    f.pop("drawing")                                   # page_done: the page drew version 7
    assert known_version(f, ticking=True) == 7


def test_a_page_run_is_done_when_it_ends_ends_itself_or_fails_but_not_when_replaced():
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    from ui.render import end_page
    from ui.runtime import page_run

    done = []
    with page_run(lambda: done.append("end")):
        pass
    with page_run(lambda: done.append("ended itself")):
        end_page()
        done.append("not reached")
    for exc, name in ((ValueError("x"), "error"), (RerunException(None), "rerun")):
        with pytest.raises(type(exc)), page_run(lambda n=name: done.append(n)):
            raise exc
    assert done == ["end", "ended itself", "error"]          # a replaced run leaves it to the next one


def test_a_fragments_rerun_waits_for_the_end_of_the_run_before_it(monkeypatch):
    """A fragment's rerun asked for while the session's last runner has stopped but its events
    still wait on the event loop goes on only once that runner is gone (else Streamlit starts a
    new runner and drops the old run's last deltas: a student never saw the question); a whole
    run goes on at once; a runner that never goes lets it go after the looks run out (made
    shorter here than the server's 10 s)."""
    import asyncio
    import threading
    from types import SimpleNamespace

    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    from ui import runtime
    from ui.runtime import _STOPPED_WAIT_S, patient

    monkeypatch.setattr(runtime, "_STOPPED_TRIES", 50)         # the looks run out after 0.5 s here
    _STOPPED_TRIES = 50

    async def scenario(fragment_id, runner_goes_at):
        calls = []
        wrapped = patient(lambda session, cs: calls.append(loop.time() - t0))
        loop = asyncio.get_running_loop()
        stopped = SimpleNamespace(_requests=SimpleNamespace(_state=ScriptRequestType.STOP))
        session = SimpleNamespace(_scriptrunner=stopped, _event_loop=loop)
        t0 = loop.time()
        wrapped(session, ClientState(fragment_id=fragment_id))
        if runner_goes_at is not None:
            await asyncio.sleep(runner_goes_at)
            assert calls == [] or not fragment_id
            session._scriptrunner = None              # its SHUTDOWN was handled
        await asyncio.sleep(_STOPPED_TRIES * _STOPPED_WAIT_S + 0.5)
        return calls

    def run(*args):                     # on a thread of its own: no event loop left running there
        out = []
        t = threading.Thread(target=lambda: out.append(asyncio.run(scenario(*args))))
        t.start()
        t.join(30)
        return out[0]

    assert len(run("frag", 0.1)) == 1
    assert run("frag", 0.1)[0] >= 0.1
    assert run("", 0.1)[0] < 0.05                                    # a whole run: at once
    assert len(run("frag", None)) == 1                               # the runner never went


# -- a room activity that hands out items (the heads of a model) -------------------------------
def test_items_go_round_the_room_and_each_report_counts_once(store, cls):
    """16 heads, 40 students: one head each in arrival order, every head twice or more; a second
    ask gives the same head; a report counts once per session and item, only for a given item;
    the tally counts the students who took heads and those who reported."""
    act = "heads.abc"
    got = [store.assign(cls.code, f"b:s{i}", act, 16, 1) for i in range(40)]
    assert all(a.ok for a in got) and [a.items[0] for a in got[:18]] == list(range(16)) + [0, 1]
    assert store.assign(cls.code, "b:s3", act, 16, 4).items == (3,)         # kept, not re-dealt
    per_head = [sum(a.items[0] == h for a in got) for h in range(16)]
    assert min(per_head) >= 2
    assert store.report(cls.code, "b:s3", act, 3).ok
    assert store.report(cls.code, "b:s3", act, 3).reason == "already_answered"
    assert store.report(cls.code, "b:s3", act, 4).reason == "bad_option"     # not given to s3
    assert store.report(cls.code, "b:nobody", act, 0).reason == "bad_option"
    assert store.report(cls.code, "b:s4", act, "4").reason == "bad_option"   # forged type
    t = store.tally(cls.code, cls.secret, act)
    assert t.ok and t.counts == {3: 1} and t.students == 40 and t.reported == 1
    assert store.report(cls.code, "b:s4", act, 4).ok
    t = store.tally(cls.code, cls.secret, act)     # two students' work reached the projector
    assert t.counts == {3: 1, 4: 1} and (t.students, t.reported) == (40, 2)
    assert store.tally(cls.code, "wrong", act).reason == "wrong_secret"


def test_a_small_room_takes_several_items_each(store, cls):
    a = store.assign(cls.code, "b:x", "heads.q", 16, 6)
    b = store.assign(cls.code, "b:y", "heads.q", 16, 6)
    c = store.assign(cls.code, "b:z", "heads.q", 16, 6)
    assert a.items == (0, 1, 2, 3, 4, 5) and b.items == (6, 7, 8, 9, 10, 11) and c.items == (12, 13, 14, 15, 0, 1)


@pytest.mark.parametrize("args,reason", [
    (("heads.q", 0, 1), "bad_question"), (("heads.q", 16, 0), "bad_question"),
    (("heads.q", 10**6, 1), "bad_question"), (("<script>", 16, 1), "bad_question"),
    (("heads.q", "16", 1), "bad_question")])
def test_hostile_assignments_are_refused(store, cls, args, reason):
    assert store.assign(cls.code, "b:h", *args).reason == reason


def test_reports_after_the_class_ended_are_refused(store, cls):
    store.assign(cls.code, "b:x", "heads.q", 4, 1)
    store.end_class(cls.code, cls.secret)
    assert store.report(cls.code, "b:x", "heads.q", 0).reason == "ended"


# -- a room corpus: one sentence per student, shown once the lecturer accepts it ---------------
def test_sentences_wait_for_the_lecturer_and_count_once(store, cls):
    act = "corpus.room"
    assert store.submit(cls.code, "b:a", act, "  我喜欢学习\n语言模型  ").ok
    assert store.submit(cls.code, "b:a", act, "again").reason == "already_answered"
    assert store.submit(cls.code, "b:b", act, "<b>bold</b> & <script>x</script>").ok
    assert store.submit(cls.code, "b:c", act, "x" * 201).reason == "text_too_long"
    assert store.submit(cls.code, "b:c", act, "   ").reason == "empty"
    assert store.submit(cls.code, "b:c", act, "\u200b\u202e\u2066\x00").reason == "empty"
    assert store.submit(cls.code, "b:c", act, 12).reason == "bad_option"
    mine = store.my_submission(cls.code, "b:a", act)
    assert (mine.text, mine.state) == ("我喜欢学习 语言模型", "pending")
    q = store.queue(cls.code, cls.secret, act)
    assert [i.text for i in q.items] == ["我喜欢学习 语言模型", "<b>bold</b> & <script>x</script>"]
    assert all("b:a" not in i.id and "b:b" not in i.id for i in q.items)      # no session ids
    assert store.queue(cls.code, "wrong", act).reason == "wrong_secret"
    first, second = q.items
    assert store.moderate(cls.code, cls.secret, act, first.id, True).ok
    # the queue shows what the corpus will hold: the one cleaning rule, applied before storing
    assert store.submit(cls.code, "b:d", act, "e\u0301vil\u202e txt.exe\u200b\n\u3000ok\x85").ok
    assert store.queue(cls.code, cls.secret, act).items[-1].text == "évil txt.exe ok"
    assert store.my_submission(cls.code, "b:d", act).text == "évil txt.exe ok"
    assert store.moderate(cls.code, cls.secret, act, second.id, False).ok
    assert store.moderate(cls.code, cls.secret, act, first.id, False).reason == "already_answered"
    assert store.moderate(cls.code, cls.secret, act, "nope", True).reason == "bad_option"
    assert store.moderate(cls.code, "wrong", act, first.id, True).reason == "wrong_secret"
    assert [i.state for i in store.queue(cls.code, cls.secret, act).items] == ["accepted", "dropped", "pending"]
    assert store.my_submission(cls.code, "b:a", act).state == "accepted"


def test_a_class_gathers_a_bounded_number_of_sentences(clock, make):
    store = make(clock, max_sentences=3)
    c = store.create_class()
    got = [store.submit(c.code, f"b:{i}", "corpus.x", f"sentence {i}").reason for i in range(5)]
    assert got == ["", "", "", "too_many_answers", "too_many_answers"]
    assert len(store.queue(c.code, c.secret, "corpus.x").items) == 3


# -- moves told to listeners (ClassStore.watch) and the followers woken (Pushes) -------------------
def _heard_until(heard: list, n: int, timeout: float = 10.0) -> list:
    """``heard`` once it holds ``n`` moves (Redis tells them from its subscriber thread)."""
    import time

    deadline = time.monotonic() + timeout
    while len(heard) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return heard


def test_every_move_of_a_class_is_told_once_and_nothing_else(clock, new_backend):
    """A follower learns of a change as an event: each write that moves the class's version (a
    chapter or setting published, a question opened, revealed or closed, the class ended) is told
    to the listeners once; a heartbeat or a publish of the same state tells nothing. With Redis a
    second store on the same database (another process) hears them as well."""
    db = new_backend(clock)
    store = ClassStore(db, clock=clock)
    heard: list = []
    store.watch(lambda code, version: heard.append((code, version)))
    other: list = []
    if not isinstance(db, MemoryBackend):
        ClassStore(redis_util.backend(clock, prefix=db.prefix),
                   clock=clock).watch(lambda code, version: other.append((code, version)))
        import time

        deadline = time.monotonic() + 10         # both subscribers listen before anything is told
        while db.client.pubsub_numsub(db.prefix + "moved")[0][1] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    c = store.create_class()
    assert store.heartbeat(c.code, c.secret).ok
    v1 = store.publish(c.code, c.secret, "generation", "", {"gen_tau": "0.5"}).version
    assert store.publish(c.code, c.secret, "generation", "", {"gen_tau": "0.5"}).version == v1
    assert store.heartbeat(c.code, c.secret).ok
    v2 = store.open_question(c.code, c.secret, "gen_tau_half", OPTS).version
    v3 = store.reveal(c.code, c.secret).version
    assert store.end_class(c.code, c.secret).ok
    v4 = store.follow(c.code, "s1").version
    want = [(c.code, v) for v in (0, v1, v2, v3, v4)]
    assert len({v1, v2, v3, v4}) == 4
    assert _heard_until(heard, len(want)) == want
    if not isinstance(db, MemoryBackend):
        assert _heard_until(other, len(want)) == want


def test_pushes_wake_the_followers_of_the_class_that_moved():
    from lmviz.server.classroom import Pushes

    woken: list = []
    gone = {"t-closed"}
    delays: list = []
    p = Pushes(lambda target, delay: delays.append(delay) or woken.append(target) or target not in gone,
               max_holders=3, per_s=10)
    p.follow("AAAAAAA", "s1", "t1")
    p.follow("AAAAAAA", "s2", "t-closed")
    p.follow("BBBBBBB", "s3", "t3")
    p.follow("AAAAAAA", "s1", "t1b")            # a new run of s1's check: its newest target
    p.moved("AAAAAAA", 4)
    assert sorted(woken) == ["t-closed", "t1b"] and len(p) == 2    # the closed session is forgotten
    assert delays == [0.0, 0.1]                  # woken 10 a second, not all at once
    woken.clear()
    p.wake(["s3", "s2", "nobody"])
    assert woken == ["t3"]
    p.drop("s3")
    p.moved("BBBBBBB", 1)
    assert woken == ["t3"]
    for i in range(5):                           # bounded: the oldest registration goes first
        p.follow("CCCCCCC", f"n{i}", f"tn{i}")
    assert len(p) == 3 and "s1" not in p._of


def test_the_gate_names_who_stopped_waiting_when_a_place_is_left():
    """A follower whose update was refused at the gate stops waiting: when a place is left, the
    gate names the first in line so that it is woken (a push), not left to its next check."""
    from lmviz.server.classroom import Gate

    g = Gate(1, lease_s=10, clock=Clock())
    assert g.enter("a")
    assert not g.enter("b") and not g.enter("c")    # refused; b first in line
    assert g.leave("nobody") == []
    assert g.leave("a") == ["b"]
    assert g.enter("b") and g.leave("b") == ["c"]
    assert g.leave("b") == []

