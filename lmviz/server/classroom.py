"""Classroom mode's shared state: a lecturer drives a class, students follow and answer.

One process holds every class in a :class:`ClassStore` guarded by ONE lock. The store keeps its
data in a small :class:`Backend` whose operations are chosen to map one to one onto Redis
commands, so several app processes could share classes through Redis with the same semantics:

==========================  ==========================================  =======================
Backend method              meaning                                     Redis
==========================  ==========================================  =======================
``get(key)``                a JSON record, or None (missing/expired)    ``GET`` + json.loads
``put(key, v, ttl)``        store a record with a time to live          ``SET key v PX ttl``
``put_if_absent(k, v, t)``  store only if absent; True when stored      ``SET key v NX PX ttl``
``delete(key)``             remove                                      ``DEL``
``incr(key, ttl)``          counter + 1 (TTL set when created)          ``INCR`` + ``EXPIRE NX``
``hincr(key, f, ttl)``      hash field + 1                              ``HINCRBY`` + ``EXPIRE``
``hgetall(key)``            hash as {field: int}                        ``HGETALL``
``zadd(key, m, score)``     member with an expiry time as its score     ``ZADD``
``zrem(key, m)``            remove a member                             ``ZREM``
``zlive(key, now)``         drop members whose score < now; count rest  ``ZREMRANGEBYSCORE``+``ZCARD``
``zlowest(key, n)``         the n members with the lowest scores        ``ZRANGE 0 n-1 WITHSCORES``
==========================  ==========================================  =======================

and four compound steps, each a read-check-write that must be atomic across processes (one Lua
script each in :mod:`lmviz.server.classroom_redis`; here they are built from the methods above, under
the store's lock):

=====================================  =================================================================
``put_if(key, v, ttl, field, expect)``  replace a record only while ``record[field] == expect`` (CAS)
``create_bounded(k, v, ttl, zs, m, s,   store a new record and ``zadd(z, m, s)`` for each ``(z, max)``
now)``                                  of zs, only while every z has fewer than ``max`` live members;
                                        1 stored, 0 key taken, -i the i-th zset (1-based) is full
``put_once_counted(k, v, ttl, h, f,     store an answer once, ``hincr(h, f)`` and ``incr`` each counter,
counters, guard, now)``                 only while every counter is below its bound and the guard
                                        record's field is unchanged; 1, 0 taken, -1 guard moved,
                                        -1-i the i-th counter (1-based) is at its bound
``zadd_bounded(key, m, s, max, now)``   ``zadd`` only while fewer than ``max`` members are live; returns
                                        the live count after it
=====================================  =================================================================

Every value is a JSON-serialisable record (the memory backend round-trips it through ``json``,
so a record that Redis could not hold fails here too). "Answer once" is atomic through
``put_if_absent`` (``SET NX``); the histogram is ``hincr`` (``HINCRBY``); rate limits are
``incr`` with a TTL. In one process the store's lock makes every operation atomic, bounds
included. A backend that is shared by several processes (``backend.shared``, the Redis one)
needs no lock: every write that depends on what was read goes through one of the compound
steps. A class record carries a revision ``rev`` that every write bumps; a write made from a
stale read fails its ``put_if`` and the whole store operation is run again on a fresh read (so
two replicas ending, heartbeating or publishing one class never lose an update). What stays
approximate across processes: the failed-look-up rate limit (read, then counted) may let a
session make a few more attempts than the limit when it sends them concurrently.

A backend that cannot be reached raises :class:`BackendUnavailable`; every store operation
turns it into its usual record with reason ``"store_unavailable"`` (status
``"unavailable"`` for a follower), and works again once the backend is back.
:func:`lmviz.server.classroom_backend.store_from_env` picks the backend: Redis when ``LMVIZ_REDIS_URL`` is
set, else memory.

Telling followers: every write that moves a class's version (``told`` in the record is the
version last told) calls ``announce(code, version)``; the memory backend calls this process's
listeners at once, Redis publishes it on the channel ``moved`` (``PUBLISH``) and each process's
one subscriber thread calls its listeners (:meth:`ClassStore.watch`). :class:`Pushes` is such a
listener: it wakes the followers of the class that moved, so a follower learns of a change as
an event, not at its next check.

Keys (``{c}`` a class code, ``{q}`` a question id, ``{s}`` a session id):
``class:{c}`` the class record; ``ans:{c}:{q}:{s}`` one student's answer (an option id);
``hist:{c}:{q}`` counts per option id; ``n:{c}:{q}`` answers to one question (or reports or
sentences of one activity ``{x}``); ``n:{c}`` everything counted in the class; ``n:{c}:{q}:{a}``
answers to one question (or of one activity) from one client address; ``snd:{c}:{q}`` the client
addresses those answers (or an activity's reports or sentences) came from (zset); ``sh:{c}:{a}`` everything
counted from one address or voter (its share of the class, ``{a}`` keyed as below);
``fol:{c}`` followers (zset); ``classes`` live classes (zset); ``own:{a}`` live classes of one
browser or address (zset); ``fail:{s}`` failed code look-ups of a session in the current minute;
``rl:{a}`` answer attempts of a voter or address in the current minute; for a room activity
``{x}`` that hands out items (``assign``/``report``/``tally``): ``seq:{c}:{x}`` its arrival
counter, ``asg:{c}:{x}:{s}`` one session's items, ``rep:{c}:{x}:{s}:{i}`` one report,
``acth:{c}:{x}`` reports per item; for a room corpus ``{x}``: ``sub:{c}:{x}:{h}`` one
sentence and its state (``{h}`` an HMAC of the sender), ``subq:{c}:{x}`` the queue (zset),
``subn:{c}:{x}`` the count, ``subs:{c}:{x}`` the order sent; ``epoch`` the store's
epoch (see ``ClassStore.epoch``). ``{a}`` is an HMAC of a browser id or client address with the
server's key (``class_key``): the store never holds an address. (The Redis backend puts a prefix,
``lmviz:`` by default, before every key.)

Security: a class code (7 characters from an alphabet without look-alikes, ~2.8e10 codes) is
what a student types or follows by link; the lecturer's secret (``secrets.token_urlsafe``, 192
bits) is never part of the student link, is stored only as a SHA-256 digest and is compared
with ``hmac.compare_digest``. Every lecturer operation needs it. A student sends only a code, a
session id (given by the server, not typed), a question id and an option id; option ids are
checked against the open question's options. The one free-form thing a student sends is one
sentence for the room's corpus (``submit``): cleaned (:func:`lmviz.clean_text.clean_text`: no
bidi, zero-width or control characters, NFC, whitespace folded), bounded in length and per class,
stored under an HMAC of the sender, and pending until the lecturer accepts it. Nothing stored is
ever meant to be rendered as HTML. Failed code look-ups are limited per session per minute.

Hostile clients: "a session" is cheap (a new tab, a script), so the bounds that matter count
browsers and addresses. A browser id is signed (:class:`BrowserIds`: only the server mints one);
an answer counts once per voter (the browser, every tab of it), and everything a class counts
(answers, sentences, head reports, and all of them together) is bounded per voter and per
address as well as in all (``ClassLimits``' shares): one sender reaching its share is told so
and nobody else is refused. Attempts are rate-limited per voter and per address. Classes are bounded per browser and per address, and a full store
reclaims a class whose lecturer went silent or that nobody follows before it refuses anyone.

Nothing here raises on a student's or lecturer's bad input: every operation returns a record
with ``ok``/``status`` and a ``reason`` (a short word the page turns into ``class.reason.*``).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Protocol, Sequence

from lmviz.clean_text import clean_text

__all__ = [
    "ALPHABET", "CODE_LEN", "ClassLimits", "Backend", "BackendUnavailable", "MemoryBackend",
    "ClassStore", "Created", "OpResult", "FollowView", "QuestionView", "LecturerView", "Histogram",
    "Assignment", "Tally", "Submission", "Queue",
    "normalise_code", "REASONS", "address_key", "client_address", "class_key", "BrowserIds", "Gate",
    "Pushes", "tell",
]

_LOG = logging.getLogger(__name__)

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: easy to read aloud and type
CODE_LEN = 7                                    # 31^7 ≈ 2.75e10 codes

_SLUG_RE = re.compile(r"[a-z0-9-]{0,40}")          # chapter slug ("" is the home page)
_SECTION_RE = re.compile(r"[A-Za-z0-9_.-]{0,64}")  # a section anchor
_KEY_RE = re.compile(r"[A-Za-z0-9_.-]{1,32}")      # a URL query parameter name
_ID_RE = re.compile(r"[a-z0-9_.-]{1,64}")          # question ids and option ids
_SESSION_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")  # a session id given by the server
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

# every reason a record can carry; the page shows t(f"class.reason.{reason}")
REASONS = (
    "full", "not_found", "bad_code", "rate_limited", "bad_session", "wrong_secret", "ended",
    "ended_by_lecturer", "lecturer_gone", "too_long", "bad_state", "bad_question", "no_question",
    "other_question", "closed", "bad_option", "already_answered", "too_many_answers",
    "too_many_questions", "store_unavailable", "too_many_classes", "reclaimed", "store_restarted", "too_fast",
    "empty", "text_too_long", "voter_share", "address_share",
)


@dataclass(frozen=True)
class ClassLimits:
    max_classes: int = 200               # live classes in the store at once
    idle_expiry_s: float = 180.0         # a class ends when the lecturer is silent this long
    max_age_s: float = 8 * 3600.0        # ... and in any case this long after it began
    ended_keep_s: float = 900.0          # an ended class is remembered this long ("ended", not "unknown")
    max_settings: int = 24               # query parameters in a published state
    max_value_len: int = 500             # characters per parameter value (urlstate keeps <= 500)
    max_questions: int = 40              # distinct questions one class may open
    max_options: int = 8                 # options per question
    # Shares. Everything a class counts (answers, sentences, head reports, and all of them
    # together) is bounded in all (a memory bound), per voter (a browser, every tab of it; a
    # session without the cookie is a voter of its own, so what bounds a cookie-less flood is its
    # address) and per client address. An address's share is a fraction of the total that a
    # 300-student room behind one NAT address still fits, so one flooding address never uses up
    # a count for the others: it gets "address_share", everyone else goes on.
    max_answers_per_question: int = 2000  # answers counted per question (a memory bound) ...
    max_answers_per_address: int = 400   # ... and per question from one client address: 1/5 of
                                         # it (a 300-student NAT room answers, with 100 to spare;
                                         # five flooding addresses are needed to fill a question)
    max_answers_per_class: int = 12000   # everything counted per class, all questions, sentences
                                         # and reports together (a memory bound) ...
    max_counts_per_address: int = 6000   # ... and from one client address: 1/2 of it. A 300-student
                                         # NAT room answering 15 questions, a sentence and up to 3
                                         # heads each sends <= 5700; a flood leaves the other half
    max_counts_per_voter: int = 200      # ... and from one voter: 40 questions (max_questions), a
                                         # sentence and 16 heads (max_items_per_student) in each of
                                         # ten activities fit; a voter that invents activity ids
                                         # cannot fill the class
    answers_per_voter_per_min: int = 20  # answer attempts of one browser per minute
    answers_per_address_per_min: int = 1200  # answer attempts of one client address per minute (a
                                         # hall behind one NAT address answers within a minute)
    max_items: int = 1024                # items one room activity hands out (the heads of a model)
    max_items_per_student: int = 16      # ... and how many one student takes
    max_reports_per_activity: int = 2000  # head reports counted per activity (a memory bound) ...
    max_reports_per_address: int = 1000  # ... and per activity from one address: 1/2 of it. A
                                         # 300-student NAT room reports 300 x heads_each(n, 300):
                                         # 300 for up to 300 heads, 900 for up to 900
    max_sentence_chars: int = 200        # one sentence a student sends for the room's corpus
    max_sentences: int = 800             # sentences one class may gather (one per student) ...
    max_sentences_per_address: int = 400  # ... and from one client address: 1/2 of them (a
                                         # 300-student NAT room sends its 300; after a flood of one
                                         # address 400 students of other addresses still send)
    max_followers: int = 500             # followers counted per class (more still follow, uncounted)
    follower_ttl_s: float = 30.0         # a follower not seen for this long is no longer counted
    lookup_failures_per_min: int = 10    # failed code look-ups per session per minute
    link_failures_per_min: int = 60      # failed look-ups of a student link's class per client
                                         # address per minute (ui.first_paint's redirect; past it
                                         # the link opens as before, its session looking the code up)
    max_classes_per_browser: int = 3     # live classes one browser (its signed cookie) may run
    max_classes_per_address: int = 12    # live classes one client address may run
    reclaim_silent_s: float = 20.0       # when full, a class whose lecturer is silent this long
                                         # (a lecturer's open page beats every second) makes room ...
    reclaim_empty_s: float = 900.0       # ... and so does one that nobody follows this long after
                                         # it began
    epoch_ttl_s: float = 2 * 86400.0     # the store's epoch outlives every class (see ``epoch``)


@dataclass(frozen=True)
class Created:
    ok: bool            # a class was created
    reason: str         # "" or "full"
    code: str = ""      # the class code students type or follow (?follow=CODE)
    secret: str = ""    # the lecturer's secret: keep it in the lecturer's session only
    epoch: str = ""     # the store's epoch when the class began (``ClassStore.lost``)


@dataclass(frozen=True)
class OpResult:
    ok: bool            # the operation took effect
    reason: str         # "" when ok, else one of REASONS
    version: int = -1   # the class's version after the operation (-1 when unknown)


@dataclass(frozen=True)
class QuestionView:
    id: str                              # question id (lmviz.chapters.questions)
    options: tuple[str, ...]             # its option ids, in order
    revealed: bool                       # the lecturer revealed the answer
    counts: Mapping[str, int] | None     # option id -> count, once revealed (None before)
    total: int                           # answers counted, once revealed (0 before)
    answer: str | None = None            # the right option the lecturer revealed with it, for a question whose
    #                                      answer comes from a live run (None: the question's own)
    senders: int = 0                     # client addresses the counted answers came from (with the counts)


@dataclass(frozen=True)
class FollowView:
    status: str                  # "live", "ended", "not_found", "bad_code", "rate_limited", "bad_session",
                                 # "unavailable" (the shared store cannot be reached right now)
    reason: str                  # why (for "ended": ended_by_lecturer, lecturer_gone or too_long)
    code: str = ""               # the normalised class code
    version: int = -1            # bumps on every change a follower should see
    changed: bool = False        # version differs from the caller's known_version
    chapter: str = ""            # the lecturer's chapter slug
    section: str = ""            # ... and section
    settings: Mapping[str, str] = field(default_factory=dict)  # the chapter's query parameters
    question: QuestionView | None = None  # the open question, if any
    updated: float = 0.0         # when the state was last published (store clock)
    followers: int = 0           # followers counted in this class (to pace the followers' updates)


@dataclass(frozen=True)
class LecturerView:
    ok: bool
    reason: str
    status: str = ""             # "live" or "ended"
    version: int = -1
    followers: int = 0           # followers seen in the last follower_ttl_s seconds
    question: QuestionView | None = None  # the open question, counts always included
    heartbeat_age_s: float = 0.0  # seconds since the lecturer's last heartbeat


@dataclass(frozen=True)
class Assignment:
    ok: bool
    reason: str
    items: tuple[int, ...] = ()  # the items this session was given, in order


@dataclass(frozen=True)
class Tally:
    ok: bool
    reason: str
    counts: Mapping[int, int] = field(default_factory=dict)  # item -> reports (items reported only)
    students: int = 0            # sessions that took items
    reported: int = 0            # ... and of them, those that reported at least one item
    senders: int = 0             # client addresses the counted reports came from


@dataclass(frozen=True)
class Submission:
    id: str                      # an opaque id (an HMAC of the sender: never the session id)
    text: str                    # the sentence as sent (cleaned; draw it as literal text)
    state: str                   # "pending", "accepted" or "dropped"


@dataclass(frozen=True)
class Queue:
    ok: bool
    reason: str
    items: tuple[Submission, ...] = ()   # oldest first
    senders: int = 0                     # client addresses the sentences came from


@dataclass(frozen=True)
class Histogram:
    ok: bool
    reason: str
    question_id: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)  # option id -> count (all options)
    total: int = 0
    revealed: bool = False
    senders: int = 0             # client addresses the counted answers came from


# -----------------------------------------------------------------------------
# backends

class Backend(Protocol):
    """Key-value storage with TTLs; each method is one Redis command (see the module docstring)."""

    def get(self, key: str) -> Any | None: ...
    def put(self, key: str, value: Any, ttl_s: float | None) -> None: ...
    def put_if_absent(self, key: str, value: Any, ttl_s: float | None) -> bool: ...
    def delete(self, key: str) -> None: ...
    def incr(self, key: str, ttl_s: float | None) -> int: ...
    def hincr(self, key: str, field: str, ttl_s: float | None) -> int: ...
    def hgetall(self, key: str) -> dict[str, int]: ...
    def zadd(self, key: str, member: str, score: float) -> None: ...
    def zrem(self, key: str, member: str) -> None: ...
    def zlive(self, key: str, now: float) -> int: ...
    def zlowest(self, key: str, n: int) -> list[tuple[str, float]]: ...
    # compound read-check-write steps (see the module docstring)
    def put_if(self, key: str, value: Any, ttl_s: float | None, field: str, expect: Any) -> bool: ...
    def create_bounded(self, key: str, value: Any, ttl_s: float | None,
                       zsets: Sequence[tuple[str, int]], member: str, score: float, now: float) -> int: ...
    def put_once_counted(self, key: str, value: Any, ttl_s: float | None, hkey: str, hfield: str,
                         counters: Sequence[tuple[str, int]], guard: tuple[str, str, Any] | None,
                         now: float) -> int: ...
    def zadd_bounded(self, key: str, member: str, score: float, max_live: int, now: float) -> int: ...
    # a class's version moved (ClassStore.watch): say it to every process that listens
    def announce(self, code: str, version: int) -> None: ...
    def listen(self, listener: Callable[[str, int], None]) -> None: ...


def tell(listeners: Sequence[Callable[[str, int], None]], code: str, version: int) -> None:
    """Call each listener of a class's move (a backend's ``announce`` or its subscriber); a
    listener's fault is logged, and neither the writer nor the other listeners see it."""
    for listener in list(listeners):
        try:
            listener(code, version)
        except Exception:  # noqa: BLE001 - a listener's fault is not the writer's
            _LOG.exception("class listener failed")


class BackendUnavailable(Exception):
    """The backend cannot be reached (connection refused or lost, timeout, server loading)."""


class _Compound:
    """The compound steps built from the single-command methods. Atomic only under the store's
    lock: what the memory backend uses. A shared backend overrides each with one atomic step."""

    shared = False   # True: atomic across processes and thread-safe; the store takes no lock

    def put_if(self, key, value, ttl_s, field, expect):
        cur = self.get(key)
        if not isinstance(cur, dict) or cur.get(field) != expect:
            return False
        self.put(key, value, ttl_s)
        return True

    def create_bounded(self, key, value, ttl_s, zsets, member, score, now):
        for i, (zkey, max_live) in enumerate(zsets):
            if self.zlive(zkey, now) >= max_live:
                return -(i + 1)
        if not self.put_if_absent(key, value, ttl_s):
            return 0
        for zkey, _ in zsets:
            self.zadd(zkey, member, score)
        return 1

    def put_once_counted(self, key, value, ttl_s, hkey, hfield, counters, guard, now):
        if guard is not None:
            rec = self.get(guard[0])
            if not isinstance(rec, dict) or rec.get(guard[1]) != guard[2]:
                return -1
        for i, (k, bound) in enumerate(counters, 1):
            if (self.get(k) or 0) >= bound:
                return -1 - i
        if not self.put_if_absent(key, value, ttl_s):
            return 0
        self.hincr(hkey, hfield, ttl_s)
        for k, _ in counters:
            self.incr(k, ttl_s)
        return 1

    def zadd_bounded(self, key, member, score, max_live, now):
        n = self.zlive(key, now)
        if n < max_live:
            self.zadd(key, member, score)
            n = self.zlive(key, now)
        return n


class MemoryBackend(_Compound):
    """The in-process backend: dicts with expiry times. NOT thread-safe by itself: the store's
    lock serialises every call. Values are copied through JSON on the way in and out, so records
    stay JSON-serialisable and callers never share a mutable record."""

    PURGE_EVERY = 512  # writes between sweeps of expired keys (keeps memory bounded)

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._data: dict[str, tuple[Any, float | None]] = {}  # key -> (value, expires_at)
        self._z: dict[str, dict[str, float]] = {}              # sorted sets: key -> {member: score}
        self._writes = 0
        self._listeners: list[Callable[[str, int], None]] = []  # ClassStore.watch

    def announce(self, code: str, version: int) -> None:
        """Tell this process's listeners at once, in the writer's thread (under the store's lock:
        a listener must be quick and must not call the store)."""
        tell(self._listeners, code, version)

    def listen(self, listener: Callable[[str, int], None]) -> None:
        self._listeners.append(listener)

    # -- helpers
    def _expiry(self, ttl_s: float | None) -> float | None:
        return None if ttl_s is None else self._clock() + float(ttl_s)

    def _live(self, key: str):
        hit = self._data.get(key)
        if hit is None:
            return None
        if hit[1] is not None and hit[1] <= self._clock():
            del self._data[key]
            return None
        return hit

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % self.PURGE_EVERY == 0:
            now = self._clock()
            for k in [k for k, (_, e) in self._data.items() if e is not None and e <= now]:
                del self._data[k]
            for k in list(self._z):   # members' scores are their expiry times
                self.zlive(k, now)

    def __len__(self) -> int:
        return sum(1 for k in list(self._data) if self._live(k) is not None)

    # -- the Backend interface
    def get(self, key: str) -> Any | None:
        hit = self._live(key)
        return None if hit is None else json.loads(hit[0])

    def put(self, key: str, value: Any, ttl_s: float | None) -> None:
        self._data[key] = (json.dumps(value), self._expiry(ttl_s))
        self._wrote()

    def put_if_absent(self, key: str, value: Any, ttl_s: float | None) -> bool:
        if self._live(key) is not None:
            return False
        self.put(key, value, ttl_s)
        return True

    def delete(self, key: str) -> None:
        self._data.pop(key, None)
        self._z.pop(key, None)

    def incr(self, key: str, ttl_s: float | None) -> int:
        hit = self._live(key)
        if hit is None:
            self._data[key] = (json.dumps(1), self._expiry(ttl_s))
            self._wrote()
            return 1
        n = json.loads(hit[0]) + 1
        self._data[key] = (json.dumps(n), hit[1])
        return n

    def hincr(self, key: str, field: str, ttl_s: float | None) -> int:
        hit = self._live(key)
        h = json.loads(hit[0]) if hit else {}
        h[field] = h.get(field, 0) + 1
        self._data[key] = (json.dumps(h), self._expiry(ttl_s))
        self._wrote()
        return h[field]

    def hgetall(self, key: str) -> dict[str, int]:
        hit = self._live(key)
        return json.loads(hit[0]) if hit else {}

    # sorted sets hold only str -> float, always JSON-safe: kept as plain dicts (no copies), so
    # counting followers costs one pass over the members and no JSON round trip
    def zadd(self, key: str, member: str, score: float) -> None:
        self._z.setdefault(key, {})[str(member)] = float(score)

    def zrem(self, key: str, member: str) -> None:
        z = self._z.get(key)
        if z is not None:
            z.pop(member, None)

    def zlive(self, key: str, now: float) -> int:
        z = self._z.get(key)
        if not z:
            return 0
        dead = [m for m, sc in z.items() if sc < now]
        for m in dead:
            del z[m]
        if not z:
            del self._z[key]
        return len(z)

    def zlowest(self, key: str, n: int) -> list[tuple[str, float]]:
        z = self._z.get(key) or {}
        return sorted(z.items(), key=lambda ms: (ms[1], ms[0]))[:max(0, int(n))]


# -----------------------------------------------------------------------------
# validation

def normalise_code(raw: Any) -> str | None:
    """A typed or linked class code -> its canonical form, or None when it cannot be one.

    Spaces and dashes are dropped and letters upper-cased; look-alikes are not guessed.

    >>> normalise_code(" ab3-d 7kq "), normalise_code("<b>"), normalise_code("x" * 10_000)
    ('AB3D7KQ', None, None)
    """
    if not isinstance(raw, str) or len(raw) > 40:
        return None
    code = raw.replace(" ", "").replace("-", "").upper()
    if len(code) != CODE_LEN or any(c not in ALPHABET for c in code):
        return None
    return code


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _valid_settings(settings: Any, limits: ClassLimits) -> dict[str, str] | None:
    """A copy of the settings when they are a small {str: str} dict of URL parameters, else None."""
    if not isinstance(settings, Mapping) or len(settings) > limits.max_settings:
        return None
    out = {}
    for k, v in settings.items():
        if not isinstance(k, str) or not _KEY_RE.fullmatch(k):
            return None
        if not isinstance(v, str) or len(v) > limits.max_value_len or _CONTROL_RE.search(v):
            return None
        out[k] = v
    return out


def _valid_id(x: Any) -> bool:
    return isinstance(x, str) and bool(_ID_RE.fullmatch(x))


def _senders_key(item: str) -> str:
    """The zset of the client addresses an item's count came from: ``n:{c}:{q}`` -> ``snd:{c}:{q}``.

    >>> _senders_key("n:ABC2345:q1")
    'snd:ABC2345:q1'
    """
    return "snd:" + item.split(":", 1)[1]


def address_key(raw: Any) -> str:
    """A client address as the unit its bounds count: an IPv4 address, or an IPv6 address's /64
    network (one household or device gets a whole /64); "" when ``raw`` is not an address.

    >>> address_key("203.0.113.7"), address_key("2001:db8:1:2:aa::1"), address_key("::ffff:10.0.0.1")
    ('203.0.113.7', '2001:db8:1:2::/64', '10.0.0.1')
    >>> address_key("<b>"), address_key(None)
    ('', '')
    """
    import ipaddress

    if not isinstance(raw, str) or len(raw) > 64:
        return ""
    try:
        ip = ipaddress.ip_address(raw.strip())
    except ValueError:
        return ""
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def client_address(peer: str | None, forwarded: Sequence[str], trusted: Collection[str] | None = None) -> str:
    """The address a request's client is counted by (:func:`address_key`), from its peer address
    and its X-Forwarded-For headers (a session's websocket, or a student link's request).

    X-Forwarded-For is believed only from a peer in ``trusted`` (by default
    ``LMVIZ_TRUSTED_PROXIES``, comma-separated addresses; unset: none, as for ``streamlit run
    serve.py`` with nobody in front): behind nginx (deploy/) requests come from the proxy, and the
    last X-Forwarded-For entry is the client as nginx saw it (the template appends
    ``$remote_addr``; entries before it are the client's own claims and are ignored). From any
    other peer, a loopback one included, X-Forwarded-For is ignored and the peer is the client:
    anyone who reaches the server directly could claim any address.

    >>> client_address("127.0.0.1", ["6.6.6.6, 203.0.113.7"], {"127.0.0.1"})
    '203.0.113.7'
    >>> client_address("127.0.0.1", ["6.6.6.6"], set()), client_address("198.51.100.2", ["6.6.6.6"], {"127.0.0.1"})
    ('127.0.0.1', '198.51.100.2')
    """
    import ipaddress

    from lmviz.server.env import env_addresses

    peer = peer or "127.0.0.1"      # Streamlit gives None for a loopback peer
    trusted = env_addresses("LMVIZ_TRUSTED_PROXIES") if trusted is None else trusted
    try:
        proxied = str(ipaddress.ip_address(peer)) in trusted
    except ValueError:
        proxied = False
    if proxied and forwarded:
        last = forwarded[-1].split(",")[-1].strip()
        return address_key(last) or address_key(peer)
    return address_key(peer)


_process_key = secrets.token_bytes(32)


def class_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The server secret that signs browser ids (:class:`BrowserIds`) and keys client addresses in
    the store: ``LMVIZ_CLASS_KEY`` (give every replica of a course the same one), else a random
    key made when this process started (one process: enough; a restart hands out new ids)."""
    env = os.environ if environ is None else environ
    raw = env.get("LMVIZ_CLASS_KEY", "")
    return hashlib.sha256(raw.encode("utf-8")).digest() if raw else _process_key


class BrowserIds:
    """Signed browser ids: the value of the cookie that makes "one answer per browser" and "a few
    classes per browser" hold across tabs. ``mint()`` gives ``ID.SIGNATURE`` (an HMAC-SHA256 of
    the id with the server's key); ``verify`` gives the id back only for a value this server (or a
    replica with the same key) minted, so a client cannot invent ids; it can only ask for new ones
    by loading the page again, and the per-address bounds still count those.

    >>> ids = BrowserIds(b"k" * 32)
    >>> v = ids.mint(); ids.verify(v) == v.split(".")[0], ids.verify(v + "x"), ids.verify("a.b")
    (True, None, None)
    """

    COOKIE = "lmviz_id"
    _RE = re.compile(r"([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})")

    def __init__(self, key: bytes | None = None):
        self._key = class_key() if key is None else key

    def _sign(self, ident: str) -> str:
        import base64

        mac = hmac.new(self._key, b"browser:" + ident.encode("ascii"), hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")

    def mint(self) -> str:
        ident = secrets.token_urlsafe(12)
        return f"{ident}.{self._sign(ident)}"

    def verify(self, value: Any) -> str | None:
        if not isinstance(value, str) or len(value) > 64:
            return None
        m = self._RE.fullmatch(value)
        if not m or not hmac.compare_digest(self._sign(m.group(1)), m.group(2)):
            return None
        return m.group(1)

    def set_cookie_header(self, secure: bool = False) -> str:
        """A ``Set-Cookie`` value handing a fresh id to a browser (a year; HttpOnly: no script of
        the page reads it; Lax: sent with the follow link a student opens)."""
        return (f"{self.COOKIE}={self.mint()}; Path=/; Max-Age=31536000; HttpOnly; SameSite=Lax"
                + ("; Secure" if secure else ""))


# -- the lecture's own replica ------------------------------------------------------------
#
# Behind nginx (deploy/), a lecturer's session runs on a replica of its own, so that the room's
# page runs and sends never stand between the lecturer's press and its page. What routes it is a
# cookie: a chapter page opened in presenter mode (``?present=1``) hands it out (ui/first_paint.py),
# and nginx's ``map $cookie_lmviz_lecture`` sends every later request of that browser, its
# websocket included, to the lecture replica. A replica that serves only the room is started with
# ``LMVIZ_ROLE=room``: there "Start a class" reloads the tab as a presenter link that starts it
# (``?present=1&start=1``), and the reloaded page's session is the lecture replica's.

LECTURE_COOKIE = "lmviz_lecture"


def lecture_cookie_header(secure: bool = False) -> str:
    """A ``Set-Cookie`` value marking a lecturer's browser (until the browser closes; HttpOnly;
    Lax, so that a link from another site carries it too and the lecturer lands where they lecture).

    >>> lecture_cookie_header(secure=True)
    'lmviz_lecture=1; Path=/; HttpOnly; SameSite=Lax; Secure'
    """
    return f"{LECTURE_COOKIE}=1; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")


def lectures_elsewhere() -> bool:
    """True on a replica that serves the room only (``LMVIZ_ROLE=room``): its lecturers move to
    the lecture replica before they start a class."""
    return os.environ.get("LMVIZ_ROLE", "").strip().lower() == "room"


# -----------------------------------------------------------------------------
# the store

class _Conflict(Exception):
    """A class record changed between this operation's read and its write: run it again."""


_RETRIES = 25   # runs of one operation before giving up on a class that keeps changing


def _guarded(unavailable: Callable[[], Any]):
    """Run a store operation under the store's lock (a no-op for a shared backend), again after a
    write conflict, and as ``unavailable()`` when the backend cannot be reached."""
    def wrap(fn):
        @functools.wraps(fn)
        def op(self, *args, **kwargs):
            try:
                for _ in range(_RETRIES):
                    with self._lock:
                        try:
                            return fn(self, *args, **kwargs)
                        except _Conflict:
                            continue
                return unavailable()
            except BackendUnavailable:
                return unavailable()
        return op
    return wrap


_OP_DOWN = functools.partial(OpResult, False, "store_unavailable")


class ClassStore:
    """Classes shared by the sessions of one process (or, with a Redis backend, of several).

    ``clock`` returns seconds (``time.time`` by default; tests pass a fake one). When ``backend``
    is None a :class:`MemoryBackend` on the same clock is used.
    """

    def __init__(self, backend: Backend | None = None, limits: ClassLimits = ClassLimits(),
                 clock: Callable[[], float] = time.time, key: bytes | None = None):
        self.limits = limits
        self._clock = clock
        self._key = class_key() if key is None else key   # keys client addresses and browsers
        self._db = backend if backend is not None else MemoryBackend(clock)
        # one lock serialises a process-local backend; a shared one is atomic step by step
        self._lock = contextlib.nullcontext() if getattr(self._db, "shared", False) else threading.Lock()

    # -- internals (call with the lock held) ----------------------------------------------------
    def _ttl_live(self) -> float:
        return self.limits.idle_expiry_s + self.limits.ended_keep_s

    def _load(self, code: str) -> dict | None:
        """The class record, ending it first when the lecturer went silent or it ran too long."""
        rec = self._db.get(f"class:{code}")
        if rec is None or rec["status"] != "live":
            return rec
        now = self._clock()
        if now - rec["heartbeat"] > self.limits.idle_expiry_s:
            return self._end(code, rec, "lecturer_gone")
        if now - rec["created"] > self.limits.max_age_s:
            return self._end(code, rec, "too_long")
        return rec

    def _write(self, code: str, rec: dict, ttl_s: float) -> None:
        """Store a class record read earlier in this operation, unless someone wrote it since."""
        seen = rec.get("rev", 0)
        rec["rev"] = seen + 1
        moved = rec["version"] != rec.get("told")      # the version followers were last told of
        rec["told"] = rec["version"]
        if not self._db.put_if(f"class:{code}", rec, ttl_s, "rev", seen):
            raise _Conflict(code)
        if moved:
            self._db.announce(code, rec["version"])

    def _end(self, code: str, rec: dict, reason: str) -> dict:
        rec.update(status="ended", reason=reason, ended_at=self._clock(), version=rec["version"] + 1)
        self._write(code, rec, self.limits.ended_keep_s)
        for z in ("classes", *rec.get("owners", ())):
            self._db.zrem(z, code)
        return rec

    def _save(self, code: str, rec: dict) -> None:
        self._write(code, rec, self._ttl_live())
        until = self._clock() + self.limits.idle_expiry_s
        for z in ("classes", *rec.get("owners", ())):
            self._db.zadd(z, code, until)

    def _client(self, kind: str, raw: str) -> str:
        """An opaque key for a browser id or an address: an HMAC with the server's key, so the
        store (and Redis) never holds a client's address."""
        return hmac.new(self._key, f"{kind}:{raw}".encode("utf-8", "surrogatepass"),
                        hashlib.sha256).hexdigest()[:32]

    def _address(self, address: Any) -> str:
        """The opaque key of a client address (``address_key``), "" without one."""
        return self._client("a", address) if isinstance(address, str) and address else ""

    def _sender(self, session_id: str) -> str:
        """The opaque id a room corpus keeps a sentence under (never the session id)."""
        return self._client("s", session_id)[:24]

    def _too_fast(self, session_id: str | None = None, who: str = "") -> bool:
        """One more attempt of a voter (``session_id``) and of an address key (``who``) this
        minute; True when either is over its bound (the address is counted only when the voter
        is not)."""
        lim = self.limits
        return ((session_id is not None
                 and self._db.incr(f"rl:{self._client('v', session_id)}", 60.0) > lim.answers_per_voter_per_min)
                or (bool(who) and self._db.incr(f"rl:{who}", 60.0) > lim.answers_per_address_per_min))

    def _reclaim(self, zkey: str, now: float) -> bool:
        """End one class of ``zkey`` that can make room: its lecturer silent for
        ``reclaim_silent_s`` or nobody following it ``reclaim_empty_s`` after it began (members
        with the oldest heartbeat first). True when a place was freed."""
        lim = self.limits
        for code, _ in self._db.zlowest(zkey, lim.max_classes):
            rec = self._db.get(f"class:{code}")
            if rec is None or rec["status"] != "live":
                self._db.zrem(zkey, code)       # a record already gone or ended: its place is free
                return True
            silent = now - rec["heartbeat"] >= lim.reclaim_silent_s
            empty = (now - rec["created"] >= lim.reclaim_empty_s
                     and self._db.zlive(f"fol:{code}", now) == 0)
            if silent or empty:
                self._end(code, rec, "reclaimed")
                return True
        return False

    def _epoch(self, create: bool) -> str:
        e = self._db.get("epoch")
        if e is None and create:
            self._db.put_if_absent("epoch", secrets.token_hex(8), self.limits.epoch_ttl_s)
            e = self._db.get("epoch")
        if e is not None and create:
            self._db.put("epoch", e, self.limits.epoch_ttl_s)   # outlives every class begun now
        return e if isinstance(e, str) else ""

    def _lecturer(self, code: Any, secret: Any) -> tuple[str | None, dict | None, str]:
        """(code, live record, "") when code and secret match a live class, else (.., None, reason)."""
        c = normalise_code(code)
        if c is None:
            return None, None, "bad_code"
        rec = self._load(c)
        if rec is None:
            return c, None, "not_found"
        if (not isinstance(secret, str) or len(secret) > 200
                or not hmac.compare_digest(_digest(secret), rec["secret_sha256"])):
            return c, None, "wrong_secret"
        if rec["status"] != "live":
            return c, None, "ended"
        return c, rec, ""

    def _question_view(self, code: str, q: dict | None, with_counts: bool) -> QuestionView | None:
        if not q:
            return None
        counts = total = None
        senders = 0
        if with_counts or q["revealed"]:
            h = self._db.hgetall(f"hist:{code}:{q['id']}")
            counts = {o: int(h.get(o, 0)) for o in q["options"]}
            total = sum(counts.values())
            senders = self._senders(code, q["id"])
        return QuestionView(q["id"], tuple(q["options"]), q["revealed"], counts, total or 0, q.get("answer"),
                            senders)

    def _senders(self, c: str, item: str) -> int:
        """The client addresses that one question's answers (or one activity's reports or
        sentences) came from (``_count`` adds each once): the projector says it beside the count,
        so a count that one address filled shows as such."""
        return self._db.zlive(_senders_key(f"n:{c}:{item}"), self._clock())

    def _failed_lookup(self, session_id: str) -> None:
        self._db.incr(f"fail:{session_id}", 60.0)

    def _rate_limited(self, session_id: str) -> bool:
        n = self._db.get(f"fail:{session_id}")
        return n is not None and int(n) >= self.limits.lookup_failures_per_min

    # -- lecturer ---------------------------------------------------------------------------------
    @_guarded(functools.partial(Created, False, "store_unavailable"))
    def create_class(self, browser: str = "", address: str = "") -> Created:
        """A new class with a fresh code and secret.

        ``browser`` (a verified browser id) and ``address`` (``address_key``) name who asks: each
        may run at most ``max_classes_per_browser`` / ``max_classes_per_address`` live classes
        (``reason="too_many_classes"``; their own silent or empty classes are reclaimed first).
        When ``max_classes`` are live, a class whose lecturer is silent or that nobody follows is
        ended (reason ``"reclaimed"``) to make room; ``reason="full"`` only when none can be.
        """
        now = self._clock()
        lim = self.limits
        owners = []
        if isinstance(browser, str) and browser:
            owners.append((f"own:{self._client('b', browser)}", lim.max_classes_per_browser))
        if isinstance(address, str) and address:
            owners.append((f"own:{self._client('a', address)}", lim.max_classes_per_address))
        zsets = owners + [("classes", lim.max_classes)]
        epoch = self._epoch(create=True)
        secret = secrets.token_urlsafe(24)
        rec = {"created": now, "heartbeat": now, "status": "live", "reason": "", "version": 0,
               "rev": 0, "secret_sha256": _digest(secret), "chapter": "", "section": "",
               "settings": {}, "updated": now, "question": None, "asked": {},
               "owners": [z for z, _ in owners]}
        for _ in range(20 + lim.max_classes):
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))
            got = self._db.create_bounded(f"class:{code}", rec, self._ttl_live(), zsets, code,
                                          now + lim.idle_expiry_s, now)
            if got == 1:
                return Created(True, "", code, secret, epoch)
            if got < 0:
                zkey = zsets[-got - 1][0]
                if not self._reclaim(zkey, now):
                    return Created(False, "full" if zkey == "classes" else "too_many_classes")
        return Created(False, "full")  # collisions or reclaims in a row: the store is crowded

    @_guarded(lambda: "")
    def epoch(self) -> str:
        """The store's epoch: a random word written when the store is first used and kept as long
        as its data. A store that lost its data (a Redis restart without persistence) has a new
        one, so a class that vanished with it can be told from one that ended ("" when the
        store cannot be reached)."""
        return self._epoch(create=True)

    @_guarded(lambda: False)
    def lost(self, epoch: Any) -> bool:
        """True when the store's data was lost since ``epoch`` (an ``epoch()`` or
        ``Created.epoch`` seen earlier): the class store restarted empty."""
        return isinstance(epoch, str) and bool(epoch) and self._epoch(create=False) != epoch

    def watch(self, listener: Callable[[str, int], None]) -> None:
        """Call ``listener(code, version)`` whenever a class's version moves (the lecturer's
        chapter, section or settings changed, a question opened, was revealed or closed, the class
        ended), in this process, whichever process wrote it: at once in the writer's thread for
        the memory backend, from the subscriber thread for Redis. A listener returns quickly and
        never calls the store."""
        self._db.listen(listener)

    @_guarded(_OP_DOWN)
    def publish(self, code: str, secret: str, chapter: str, section: str = "",
                settings: Mapping[str, str] | None = None) -> OpResult:
        """Set what followers see (also a heartbeat). The version bumps only when it changed."""
        settings = {} if settings is None else settings
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        clean = _valid_settings(settings, self.limits)
        if (clean is None or not isinstance(chapter, str) or not _SLUG_RE.fullmatch(chapter)
                or not isinstance(section, str) or not _SECTION_RE.fullmatch(section)):
            return OpResult(False, "bad_state", rec["version"])
        now = self._clock()
        rec["heartbeat"] = now
        if (rec["chapter"], rec["section"], rec["settings"]) != (chapter, section, clean):
            rec.update(chapter=chapter, section=section, settings=clean, updated=now,
                       version=rec["version"] + 1)
        self._save(c, rec)
        return OpResult(True, "", rec["version"])

    @_guarded(_OP_DOWN)
    def heartbeat(self, code: str, secret: str) -> OpResult:
        """The lecturer's page is still open (call every few seconds; followers are not told)."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        rec["heartbeat"] = self._clock()
        self._save(c, rec)
        return OpResult(True, "", rec["version"])

    @_guarded(_OP_DOWN)
    def end_class(self, code: str, secret: str) -> OpResult:
        """End the class now: followers get status "ended", reason "ended_by_lecturer"."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        rec = self._end(c, rec, "ended_by_lecturer")
        return OpResult(True, "", rec["version"])

    @_guarded(_OP_DOWN)
    def open_question(self, code: str, secret: str, question_id: str,
                      options: Sequence[str]) -> OpResult:
        """Ask a question (closing any other). Re-opening one keeps its answers, un-revealed."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        opts = list(options) if isinstance(options, (list, tuple)) else None
        if (not _valid_id(question_id) or opts is None
                or not 2 <= len(opts) <= self.limits.max_options
                or not all(_valid_id(o) and len(o) <= 32 for o in opts) or len(set(opts)) != len(opts)):
            return OpResult(False, "bad_question", rec["version"])
        if question_id not in rec["asked"] and len(rec["asked"]) >= self.limits.max_questions:
            return OpResult(False, "too_many_questions", rec["version"])
        rec["asked"][question_id] = opts
        rec["question"] = {"id": question_id, "options": opts, "revealed": False}
        rec["heartbeat"] = self._clock()
        rec["version"] += 1
        self._save(c, rec)
        return OpResult(True, "", rec["version"])

    @_guarded(_OP_DOWN)
    def reveal(self, code: str, secret: str, question_id: str | None = None, answer: str | None = None) -> OpResult:
        """Reveal the open question (only when question_id, if given, is the open one); ``answer``:
        its right option, for a question a live run answers (one of its options)."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        q = rec["question"]
        if not q:
            return OpResult(False, "no_question", rec["version"])
        if question_id is not None and question_id != q["id"]:
            return OpResult(False, "other_question", rec["version"])
        if answer is not None and answer not in q["options"]:
            return OpResult(False, "bad_option", rec["version"])
        if not q["revealed"]:
            q["revealed"] = True
            if answer is not None:
                q["answer"] = answer
            rec["version"] += 1
        rec["heartbeat"] = self._clock()
        self._save(c, rec)
        return OpResult(True, "", rec["version"])

    @_guarded(_OP_DOWN)
    def close_question(self, code: str, secret: str) -> OpResult:
        """Put the open question away (followers see no question; its answers are kept)."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        if rec["question"]:
            rec["question"] = None
            rec["version"] += 1
        rec["heartbeat"] = self._clock()
        self._save(c, rec)
        return OpResult(True, "", rec["version"])

    @_guarded(functools.partial(Histogram, False, "store_unavailable"))
    def histogram(self, code: str, secret: str, question_id: str | None = None) -> Histogram:
        """Anonymous counts per option of the open question (or of an earlier one by id)."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return Histogram(False, why)
        q = rec["question"]
        qid = q["id"] if question_id is None and q else question_id
        if qid is None or qid not in rec["asked"]:
            return Histogram(False, "no_question")
        h = self._db.hgetall(f"hist:{c}:{qid}")
        counts = {o: int(h.get(o, 0)) for o in rec["asked"][qid]}
        revealed = q["revealed"] if q and q["id"] == qid else True
        return Histogram(True, "", qid, counts, sum(counts.values()), revealed, self._senders(c, qid))

    @_guarded(functools.partial(LecturerView, False, "store_unavailable"))
    def lecturer_view(self, code: str, secret: str) -> LecturerView:
        """What the lecturer's panel shows: followers, the open question with live counts."""
        c = normalise_code(code)
        _, rec, why = self._lecturer(code, secret)
        if rec is None:
            if why == "ended":
                full = self._db.get(f"class:{c}")
                return LecturerView(False, full["reason"] if full else why, "ended")
            return LecturerView(False, why)
        now = self._clock()
        return LecturerView(True, "", "live", rec["version"], self._db.zlive(f"fol:{c}", now),
                            self._question_view(c, rec["question"], True), now - rec["heartbeat"])

    # -- students ---------------------------------------------------------------------------------
    @_guarded(functools.partial(FollowView, "unavailable", "store_unavailable"))
    def follow(self, code: Any, session_id: Any, known_version: int = -1) -> FollowView:
        """What a follower shows. Cheap: one record read; ``changed`` says whether to redraw.

        Never raises: an unknown, malformed or ended class comes back as a status and a reason.
        """
        if not isinstance(session_id, str) or not _SESSION_RE.fullmatch(session_id):
            return FollowView("bad_session", "bad_session")
        if self._rate_limited(session_id):
            return FollowView("rate_limited", "rate_limited")
        c = normalise_code(code)
        if c is None:
            self._failed_lookup(session_id)
            return FollowView("bad_code", "bad_code")
        rec = self._load(c)
        if rec is None:
            self._failed_lookup(session_id)
            return FollowView("not_found", "not_found", c)
        v = rec["version"]
        if rec["status"] != "live":
            self._db.zrem(f"fol:{c}", session_id)
            return FollowView("ended", rec["reason"], c, v, v != known_version)
        now = self._clock()
        n = self._db.zadd_bounded(f"fol:{c}", session_id, now + self.limits.follower_ttl_s,
                                  self.limits.max_followers, now)
        return FollowView("live", "", c, v, v != known_version, rec["chapter"], rec["section"],
                          rec["settings"], self._question_view(c, rec["question"], False),
                          rec["updated"], int(n or 0))

    @_guarded(lambda: "")
    def chapter_of(self, code: Any, address: str = "") -> str:
        """The chapter a live class shows now ("" for the home page, or when ``code`` names no
        live class): where a student link sends its browser before Streamlit starts
        (``ui.first_paint``). Counts nobody as a follower; a client address whose look-ups failed
        ``link_failures_per_min`` times this minute gets "" without a look-up."""
        who = f"lf:{self._address(address)}" if address else ""
        if who:
            n = self._db.get(who)
            if n is not None and int(n) >= self.limits.link_failures_per_min:
                return ""
        c = normalise_code(code)
        rec = self._load(c) if c is not None else None
        if rec is None or rec["status"] != "live":
            if who:
                self._db.incr(who, 60.0)
            return ""
        return rec["chapter"] if isinstance(rec["chapter"], str) else ""

    @_guarded(lambda: None)
    def leave(self, code: Any, session_id: Any) -> None:
        """A follower stepped away or closed the tab: stop counting it."""
        c = normalise_code(code)
        if c is not None and isinstance(session_id, str):
            self._db.zrem(f"fol:{c}", session_id)

    @_guarded(_OP_DOWN)
    def answer(self, code: Any, session_id: Any, question_id: Any, option_id: Any,
               address: str = "") -> OpResult:
        """Count one answer: once per voter (``session_id``: a verified browser id, so every tab
        of one browser is one voter) per question, only for the open, unrevealed question and
        only an option id of that question. ``address`` (``address_key``) is the client's
        address: its answers per question are bounded by ``max_answers_per_address``, so one
        client can never use up the question's ``max_answers_per_question`` for the others;
        attempts are rate-limited per voter and per address."""
        if not isinstance(session_id, str) or not _SESSION_RE.fullmatch(session_id):
            return OpResult(False, "bad_session")
        if self._rate_limited(session_id):
            return OpResult(False, "rate_limited")
        lim = self.limits
        who = self._address(address)
        if self._too_fast(session_id, who):
            return OpResult(False, "too_fast")
        c = normalise_code(code)
        rec = self._load(c) if c is not None else None
        if rec is None:
            self._failed_lookup(session_id)
            return OpResult(False, "bad_code" if c is None else "not_found")
        if rec["status"] != "live":
            return OpResult(False, "ended", rec["version"])
        q = rec["question"]
        if not q:
            return OpResult(False, "no_question", rec["version"])
        if question_id != q["id"]:
            return OpResult(False, "other_question", rec["version"])
        if q["revealed"]:
            return OpResult(False, "closed", rec["version"])
        if not isinstance(option_id, str) or option_id not in q["options"]:
            return OpResult(False, "bad_option", rec["version"])
        ttl = self._ttl_live() + self.limits.max_age_s
        # counted only while the question is still the one checked above (the class's version
        # is unchanged: no reveal, close or other question in between, in any process)
        why = self._count(c, f"ans:{c}:{q['id']}:{session_id}", option_id, ttl, f"hist:{c}:{q['id']}",
                          option_id, f"n:{c}:{q['id']}", lim.max_answers_per_question,
                          lim.max_answers_per_address, session_id, who,
                          (f"class:{c}", "version", rec["version"]))
        if why == "moved":
            raise _Conflict(c)
        return OpResult(not why, why, rec["version"])

    def _count(self, c: str, key: str, value: Any, ttl: float, hkey: str, hfield: str, item: str,
               item_max: int, item_max_per_address: int, voter: str, who: str,
               guard: tuple[str, str, Any]) -> str:
        """Store ``key`` once and count it (``hincr(hkey, hfield)``) within every share of its
        sender: the voter's and the address's (``who``, none without one) share of the class,
        the address's share of ``item`` (a question or activity), then ``item``'s and the class's
        totals. "" when counted, else the reason: "already_answered", "voter_share",
        "address_share", "too_many_answers" (a total: the class is full for everyone), or
        "moved" (the guard record changed)."""
        lim = self.limits
        counters = [(f"sh:{c}:{self._client('v', voter)}", lim.max_counts_per_voter, "voter_share")]
        if who:
            counters += [(f"sh:{c}:{who}", lim.max_counts_per_address, "address_share"),
                         (f"{item}:{who}", item_max_per_address, "address_share")]
        counters += [(item, item_max, "too_many_answers"),
                     (f"n:{c}", lim.max_answers_per_class, "too_many_answers")]
        now = self._clock()
        got = self._db.put_once_counted(key, value, ttl, hkey, hfield, [(k, b) for k, b, _ in counters],
                                        guard, now)
        if got == 1 and who:                          # the item's senders: its client addresses, each once
            self._db.zadd(_senders_key(item), who, now + ttl)
        return "" if got == 1 else "already_answered" if got == 0 else "moved" if got == -1 else counters[-got - 2][2]

    # -- a room activity that hands out items (the attention chapter's heads) ------------------
    def _activity(self, code: Any, session_id: Any, activity: Any) -> tuple[str | None, dict | None, str]:
        if not isinstance(session_id, str) or not _SESSION_RE.fullmatch(session_id):
            return None, None, "bad_session"
        if not _valid_id(activity):
            return None, None, "bad_question"
        c = normalise_code(code)
        rec = self._load(c) if c is not None else None
        if rec is None:
            self._failed_lookup(session_id)
            return None, None, "bad_code" if c is None else "not_found"
        if rec["status"] != "live":
            return None, None, "ended"
        return c, rec, ""

    @_guarded(functools.partial(Assignment, False, "store_unavailable"))
    def assign(self, code: Any, session_id: Any, activity: Any, n_items: Any,
               per_student: Any = 1) -> Assignment:
        """This session's items of a room activity: students in the order they ask take
        consecutive items, ``per_student`` each, round the ``n_items`` (so every item has a
        student once the room has ``n_items / per_student`` of them, and two once it has twice
        that). Asking again gives the same items; the first ``per_student`` asked for is kept."""
        lim = self.limits
        if (not isinstance(n_items, int) or not isinstance(per_student, int)
                or not 1 <= n_items <= lim.max_items or not 1 <= per_student <= lim.max_items_per_student):
            return Assignment(False, "bad_question")
        c, rec, why = self._activity(code, session_id, activity)
        if rec is None:
            return Assignment(False, why)
        key = f"asg:{c}:{activity}:{session_id}"
        got = self._db.get(key)
        if got is not None:
            return Assignment(True, "", tuple(got))
        if self._too_fast(session_id):
            return Assignment(False, "too_fast")
        ttl = self._ttl_live() + lim.max_age_s
        k = self._db.hincr(f"seq:{c}:{activity}", "n", ttl)          # this session's arrival number
        per = min(per_student, n_items)
        items = [((k - 1) * per + j) % n_items for j in range(per)]
        if not self._db.put_if_absent(key, items, ttl):              # a second tab of it came first
            items = self._db.get(key) or items
        return Assignment(True, "", tuple(items))

    @_guarded(_OP_DOWN)
    def report(self, code: Any, session_id: Any, activity: Any, item: Any, address: str = "") -> OpResult:
        """A student reports one of its items done: counted once per session and item, and only
        for an item the store gave this session (``assign``)."""
        c, rec, why = self._activity(code, session_id, activity)
        if rec is None:
            return OpResult(False, why)
        got = self._db.get(f"asg:{c}:{activity}:{session_id}")
        if got is None or not isinstance(item, int) or item not in got:
            return OpResult(False, "bad_option", rec["version"])
        lim = self.limits
        if self._too_fast(who=self._address(address)):
            return OpResult(False, "too_fast", rec["version"])
        ttl = self._ttl_live() + lim.max_age_s
        why = self._count(c, f"rep:{c}:{activity}:{session_id}:{item}", 1, ttl, f"acth:{c}:{activity}",
                          str(item), f"n:{c}:{activity}", lim.max_reports_per_activity,
                          lim.max_reports_per_address, session_id, self._address(address),
                          (f"class:{c}", "status", "live"))
        if why:
            return OpResult(False, "ended" if why == "moved" else why, rec["version"])
        if self._db.put_if_absent(f"repd:{c}:{activity}:{session_id}", 1, ttl):   # its first report
            self._db.hincr(f"seq:{c}:{activity}", "reported", ttl)
        return OpResult(True, "", rec["version"])

    @_guarded(functools.partial(Tally, False, "store_unavailable"))
    def tally(self, code: str, secret: str, activity: Any) -> Tally:
        """The lecturer's view of an activity: reports per item, how many students took items and
        how many of them reported."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return Tally(False, why)
        if not _valid_id(activity):
            return Tally(False, "bad_question")
        h = self._db.hgetall(f"acth:{c}:{activity}")
        seq = self._db.hgetall(f"seq:{c}:{activity}")
        return Tally(True, "", {int(k): int(v) for k, v in h.items() if str(k).isdigit()},
                     int(seq.get("n", 0)), int(seq.get("reported", 0)), self._senders(c, activity))

    # -- a room corpus: one sentence per student, shown only once the lecturer accepts it --------
    @_guarded(_OP_DOWN)
    def submit(self, code: Any, session_id: Any, activity: Any, text: Any, address: str = "") -> OpResult:
        """One student's sentence for the room's corpus: once per voter, bounded in length and
        per class, and pending until the lecturer accepts it (``moderate``)."""
        c, rec, why = self._activity(code, session_id, activity)
        if rec is None:
            return OpResult(False, why)
        lim = self.limits
        sentence = clean_text(text, lim.max_sentence_chars)    # what the queue shows is what is used
        if not sentence:
            why = "empty" if sentence == "" else "text_too_long" if isinstance(text, str) else "bad_option"
            return OpResult(False, why, rec["version"])
        if self._too_fast(session_id, self._address(address)):
            return OpResult(False, "too_fast", rec["version"])
        sid = self._sender(session_id)
        ttl = self._ttl_live() + lim.max_age_s
        why = self._count(c, f"sub:{c}:{activity}:{sid}", {"t": sentence, "state": "pending"}, ttl,
                          f"subn:{c}:{activity}", "n", f"n:{c}:{activity}", lim.max_sentences,
                          lim.max_sentences_per_address, session_id, self._address(address),
                          (f"class:{c}", "status", "live"))
        if why:
            return OpResult(False, "ended" if why == "moved" else why, rec["version"])
        # the queue's order is the order sent: the n-th sentence's expiry score is n ms later
        n = self._db.hincr(f"subs:{c}:{activity}", "seq", ttl)
        self._db.zadd(f"subq:{c}:{activity}", sid, self._clock() + ttl + n / 1000)
        return OpResult(True, "", rec["version"])

    @_guarded(lambda: None)
    def my_submission(self, code: Any, session_id: Any, activity: Any) -> Submission | None:
        """This session's sentence and its state, or None."""
        c = self._own_lookup(code, session_id, activity)
        if c is None:
            return None
        sid = self._sender(session_id)
        r = self._db.get(f"sub:{c}:{activity}:{sid}")
        return Submission(sid, r["t"], r["state"]) if isinstance(r, dict) else None

    @_guarded(functools.partial(Queue, False, "store_unavailable"))
    def queue(self, code: str, secret: str, activity: Any) -> Queue:
        """The lecturer's moderation queue: every sentence sent, oldest first, with its state."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return Queue(False, why)
        if not _valid_id(activity):
            return Queue(False, "bad_question")
        items = []
        for sid, _ in self._db.zlowest(f"subq:{c}:{activity}", self.limits.max_sentences):
            r = self._db.get(f"sub:{c}:{activity}:{sid}")
            if isinstance(r, dict):
                items.append(Submission(sid, r["t"], r["state"]))
        return Queue(True, "", tuple(items), self._senders(c, activity))

    @_guarded(_OP_DOWN)
    def moderate(self, code: str, secret: str, activity: Any, submission_id: Any, accept: bool) -> OpResult:
        """The lecturer accepts or drops one sentence (a pending one; a decision is final)."""
        c, rec, why = self._lecturer(code, secret)
        if rec is None:
            return OpResult(False, why)
        if not _valid_id(activity) or not isinstance(submission_id, str) or not _KEY_RE.fullmatch(submission_id):
            return OpResult(False, "bad_option", rec["version"])
        key = f"sub:{c}:{activity}:{submission_id}"
        r = self._db.get(key)
        if not isinstance(r, dict):
            return OpResult(False, "bad_option", rec["version"])
        new = {"t": r["t"], "state": "accepted" if accept else "dropped"}
        if not self._db.put_if(key, new, self._ttl_live() + self.limits.max_age_s, "state", "pending"):
            return OpResult(False, "already_answered", rec["version"])
        return OpResult(True, "", rec["version"])

    @_guarded(lambda: None)
    def my_answer(self, code: Any, session_id: Any, question_id: Any) -> str | None:
        """The option id this session answered to a question, or None."""
        c = self._own_lookup(code, session_id, question_id)
        if c is None:
            return None
        return self._db.get(f"ans:{c}:{question_id}:{session_id}")

    @staticmethod
    def _own_lookup(code: Any, session_id: Any, item_id: Any) -> str | None:
        """The normalised class code when a session asks for its own record (a valid code,
        session id and question or activity id), else None."""
        c = normalise_code(code)
        if (c is None or not isinstance(session_id, str) or not _SESSION_RE.fullmatch(session_id)
                or not _valid_id(item_id)):
            return None
        return c

    # -- monitoring -------------------------------------------------------------------------------
    @_guarded(lambda: -1)
    def live_classes(self) -> int:
        """Classes currently counted against max_classes (-1 when the store cannot be reached)."""
        return self._db.zlive("classes", self._clock())


# -----------------------------------------------------------------------------
# pacing the followers

class Gate:
    """At most ``slots`` holders at a time; a holder's place lapses ``lease_s`` after it entered.

    Classroom mode passes each follower's whole-page update through one gate per process, so
    that however many followers a replica holds, only a few rerun their page at once and the
    lecturer's own reruns keep most of the process (followers then catch up a little later,
    the lecturer never waits for them). A follower leaves when its page run ends (and at its
    next check, whatever happened); the lease frees the place of one whose tab closed meanwhile.

    First come, first served: a holder keeps its place in line from its first ``enter`` until it
    gets in, and of the holders waiting at the gate the one in line longest goes first. (Without
    it a woken waiter could lose the place to a newcomer and wait again behind it, so one
    follower could lose round after round while the others went through.) Thread-safe.
    """

    def __init__(self, slots: int, lease_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.slots = max(1, int(slots))
        self.lease_s = float(lease_s)
        self._clock = clock
        self._held: dict[str, float] = {}   # holder -> when its lease ends
        self._since: dict[str, float] = {}  # holder asking for a place -> when it first asked (its place in line)
        self._waiting: dict[str, int] = {}  # holder -> its calls now waiting at the gate
        self._lock = threading.Condition()

    def _take(self, holder: str) -> bool:
        now = self._clock()
        for h in [h for h, until in self._held.items() if until <= now]:
            del self._held[h]
        if holder in self._held:
            self._since.pop(holder, None)
            return True
        free = self.slots - len(self._held)
        mine = (self._since[holder], holder)
        ahead = sum(1 for h in self._waiting if h != holder and (self._since.get(h, now), h) < mine)
        if free <= ahead:
            return False
        self._held[holder] = now + self.lease_s
        self._since.pop(holder, None)
        return True

    def enter(self, holder: str, wait_s: float = 0.0) -> bool:
        """Take a place (True), or keep one already held; False while every place is taken or
        promised to holders in line before this one, after waiting up to ``wait_s`` seconds for
        one to be left (the followers of one change then go through one after another, in the
        order they came, instead of each waiting for its next check)."""
        with self._lock:
            now = self._clock()
            for h in [h for h, t in self._since.items() if t < now - 10 * self.lease_s and h not in self._waiting]:
                del self._since[h]                     # gone for long: a closed tab's place in line
            self._since.setdefault(holder, now)        # its place in line, kept until it gets in
            self._waiting[holder] = self._waiting.get(holder, 0) + 1
            try:
                ok = self._lock.wait_for(lambda: self._take(holder), max(0.0, float(wait_s)))
            finally:
                self._waiting[holder] -= 1
                if not self._waiting[holder]:
                    del self._waiting[holder]
            if not ok:
                self._lock.notify_all()                # one fewer waiting ahead of the others
            return ok

    def leave(self, holder: str) -> list[str]:
        """Give up a place. Returns the holders in line that stopped waiting (their ``enter`` gave
        up) and may go in now, first in line first, one per place the waiting ones leave free:
        the caller wakes them (:class:`Pushes`), or they would wait for their next check."""
        with self._lock:
            if self._held.pop(holder, None) is None:
                return []
            self._lock.notify_all()                    # the first in line among the waiting goes in
            free = self.slots - len(self) - len(self._waiting)    # the Condition's lock is re-entrant
            if free <= 0:
                return []
            line = sorted((t, h) for h, t in self._since.items() if h not in self._waiting and h not in self._held)
            return [h for _, h in line[:free]]

    def __len__(self) -> int:
        now = self._clock()
        with self._lock:
            return sum(1 for until in self._held.values() if until > now)


class Pushes:
    """Which followers of this process follow which class, and whom to wake when one moves.

    A follower registers its check under its class (``follow``: a holder id and a ``target``,
    whatever ``wake`` needs to rerun that check: for Streamlit, the session and fragment).
    :meth:`moved` is a :meth:`ClassStore.watch` listener: it wakes every follower of the class
    that moved. :meth:`wake` wakes chosen holders (the ones a :class:`Gate` lets in after they
    stopped waiting). ``wake(target, delay_s)`` returns False for a target that is gone (its
    session closed): it is forgotten. ``wake`` is called outside this object's lock and must be
    quick (Streamlit's: a call scheduled on the server's event loop). The followers of one move
    are woken ``per_s`` a second (the i-th after ``i / per_s`` seconds), not all at once: every
    check is a little Python, and a room's checks at the same moment took the lecturer's own runs
    (bench/room_ws.py, 300 students: the lecturer's "ask" 8-25 s). Thread-safe; at most
    ``max_holders`` followers are kept (the oldest registration goes first).
    """

    def __init__(self, wake: Callable[[Any, float], bool], max_holders: int = 5000, per_s: float = 50.0):
        self._wake = wake
        self.per_s = float(per_s)
        self.max_holders = int(max_holders)
        self._of: dict[str, tuple[str, Any]] = {}     # holder -> (class code, target), oldest first
        self._lock = threading.Lock()

    def follow(self, code: str, holder: str, target: Any) -> None:
        with self._lock:
            self._of.pop(holder, None)
            self._of[holder] = (code, target)
            while len(self._of) > self.max_holders:
                del self._of[next(iter(self._of))]

    def drop(self, holder: str) -> None:
        with self._lock:
            self._of.pop(holder, None)

    def moved(self, code: str, version: int) -> None:  # noqa: ARG002 - the follower reads it itself
        with self._lock:
            woken = [(h, t) for h, (c, t) in self._of.items() if c == code]
        self._send(woken)

    def wake(self, holders: Sequence[str]) -> None:
        with self._lock:
            woken = [(h, self._of[h][1]) for h in holders if h in self._of]
        self._send(woken)

    def _send(self, woken: list[tuple[str, Any]]) -> None:
        gone = [h for i, (h, target) in enumerate(woken) if not self._wake(target, i / self.per_s)]
        if gone:
            with self._lock:
                for h in gone:
                    self._of.pop(h, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._of)
