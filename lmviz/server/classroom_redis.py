"""The class store's Redis backend: the same :class:`lmviz.server.classroom.Backend` semantics, shared by
every app process that points at one Redis (``LMVIZ_REDIS_URL``, see ``lmviz.server.classroom_backend.store_from_env``).

Only imported when a Redis URL is given: lmviz runs and tests without the ``redis`` package.

Time. Expiry follows the store's clock, exactly as in the memory backend: a string key holds
``"<expires_at>|<json>"`` (``expires_at`` empty for no expiry) and a hash holds its expiry in the
field ``~exp`` (fields the store uses are option ids, which never start with ``~``); a value whose
time has passed reads as absent. Every key also gets a real Redis TTL (``PX``) of the same length
plus ``grace_s``, so Redis itself frees what nobody reads again; sorted sets (member scores are
expiry times) get a TTL that reaches their latest member. With the default ``time.time`` clock
the two expiries coincide; tests pass a fake clock and never sleep.

Atomicity. Single-command steps are one command. Every step that reads, checks and writes
(``put_if_absent``, ``incr``, ``hincr`` with expiry, and the compound steps ``put_if``,
``create_bounded``, ``put_once_counted``, ``zadd_bounded``) is ONE Lua script
(``register_script``: EVALSHA, reloaded by redis-py after a server restart), so it is atomic across
every process; the store then needs no lock of its own (``shared = True``).

Outages. A refused or lost connection, a timeout, a server still loading its data after a
restart, or a read-only replica raise :class:`lmviz.server.classroom.BackendUnavailable`; the store turns
that into reason ``"store_unavailable"``. The client reconnects by itself on the next call, so the
store works again as soon as Redis is back (what Redis kept over the restart depends on its
persistence settings; see deploy/README.md).

Moves. ``announce`` publishes ``"<code> <version>"`` on the channel ``<prefix>moved``; the first
``listen`` starts this process's one subscriber thread, which calls the listeners for every such
message (its own process's included) and, while Redis is down, tries again every second (a
follower then still finds changes at its own next check).
"""
from __future__ import annotations

import functools
import json
import math
import threading
import time
from typing import Any, Callable, Sequence

from lmviz.server.classroom import BackendUnavailable, _Compound, normalise_code, tell

__all__ = ["RedisBackend"]


@functools.cache
def _redis():
    """The ``redis`` package, imported on first use: importing this module (the doctest run, a
    server with no ``LMVIZ_REDIS_URL``) needs no ``redis`` installed (requirements-cluster.txt)."""
    import redis
    return redis


@functools.cache
def _down() -> tuple[type[BaseException], ...]:
    """The errors that mean "Redis is not reachable now" (BusyLoadingError is a ConnectionError)."""
    ex = _redis().exceptions
    return (ex.ConnectionError, ex.TimeoutError, ex.ReadOnlyError, OSError)

# -- Lua ---------------------------------------------------------------------------------------
# live(k, now) -> json or nil: a string key's value unless its expires_at has passed
_LIVE = """
local function live(k, now)
  local s = redis.call('GET', k)
  if not s then return nil end
  local bar = string.find(s, '|', 1, true)
  local e = string.sub(s, 1, bar - 1)
  if e ~= '' and tonumber(e) <= now then return nil end
  return string.sub(s, bar + 1)
end
local function put(k, e, px, v)
  if px == '' then redis.call('SET', k, e .. '|' .. v)
  else redis.call('SET', k, e .. '|' .. v, 'PX', px) end
end
local function hincr(k, f, e, px, now)
  local old = redis.call('HGET', k, '~exp')
  if old and old ~= '' and tonumber(old) <= now then redis.call('DEL', k) end
  local n = redis.call('HINCRBY', k, f, 1)
  redis.call('HSET', k, '~exp', e)
  if px == '' then redis.call('PERSIST', k) else redis.call('PEXPIRE', k, px) end
  return n
end
local function incr(k, e, px, now)
  local s = live(k, now)
  if not s then put(k, e, px, '1') return 1 end
  local n = tonumber(s) + 1
  local raw = redis.call('GET', k)
  local bar = string.find(raw, '|', 1, true)
  redis.call('SET', k, string.sub(raw, 1, bar) .. string.format('%d', n), 'KEEPTTL')
  return n
end
local function zlive(k, now_s)   -- now_s: the clock as the caller sent it (a string)
  redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. now_s)
  return redis.call('ZCARD', k)
end
local function zadd(k, m, score, now, grace_ms)
  redis.call('ZADD', k, score, m)
  local want = math.ceil((tonumber(score) - now) * 1000 + grace_ms)
  if want < 1000 then want = 1000 end
  local t = redis.call('PTTL', k)
  if t < want then redis.call('PEXPIRE', k, want) end
end
"""

# KEYS[1]; ARGV: now, expires_at, px, json -> 1 stored, 0 present
_PUT_IF_ABSENT = _LIVE + """
local now = tonumber(ARGV[1])
if live(KEYS[1], now) then return 0 end
put(KEYS[1], ARGV[2], ARGV[3], ARGV[4])
return 1
"""

# KEYS[1]; ARGV: now, expires_at, px -> the new count
_INCR = _LIVE + "return incr(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[1]))"

# KEYS[1]; ARGV: now, expires_at, px, field -> the field's new count
_HINCR = _LIVE + "return hincr(KEYS[1], ARGV[4], ARGV[2], ARGV[3], tonumber(ARGV[1]))"

# KEYS[1]; ARGV: now, member, score, grace_ms
_ZADD = _LIVE + "zadd(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[1]), tonumber(ARGV[4])) return 1"

# KEYS[1]; ARGV: now, expires_at, px, json, field, expected (json) -> 1 replaced, 0 not
_PUT_IF = _LIVE + """
local now = tonumber(ARGV[1])
local cur = live(KEYS[1], now)
if not cur then return 0 end
local ok, rec = pcall(cjson.decode, cur)
if not ok or type(rec) ~= 'table' then return 0 end
local want = cjson.decode(ARGV[6])
if rec[ARGV[5]] ~= want then return 0 end
put(KEYS[1], ARGV[2], ARGV[3], ARGV[4])
return 1
"""

# KEYS: key, zkeys...; ARGV: now, expires_at, px, json, member, score, grace_ms, max per zkey...
# -> 1 stored, 0 key taken, -i the i-th zkey is full
_CREATE_BOUNDED = _LIVE + """
local now = tonumber(ARGV[1])
for i = 2, #KEYS do
  if zlive(KEYS[i], ARGV[1]) >= tonumber(ARGV[6 + i]) then return 1 - i end
end
if live(KEYS[1], now) then return 0 end
put(KEYS[1], ARGV[2], ARGV[3], ARGV[4])
for i = 2, #KEYS do zadd(KEYS[i], ARGV[5], ARGV[6], now, tonumber(ARGV[7])) end
return 1
"""

# KEYS: key, hkey, guard key ('' field = no guard), counter keys...
# ARGV: now, expires_at, px, json, hfield, guard field, guard expected (json), bounds...
# -> 1 stored, 0 taken, -1 guard moved, -1-j the j-th counter (KEYS[3 + j]) at its bound
_PUT_ONCE_COUNTED = _LIVE + """
local now = tonumber(ARGV[1])
if ARGV[6] ~= '' then
  local g = live(KEYS[3], now)
  if not g then return -1 end
  local ok, rec = pcall(cjson.decode, g)
  if not ok or type(rec) ~= 'table' or rec[ARGV[6]] ~= cjson.decode(ARGV[7]) then return -1 end
end
for i = 4, #KEYS do
  local n = tonumber(live(KEYS[i], now) or '0')
  if n >= tonumber(ARGV[4 + i]) then return 2 - i end
end
if live(KEYS[1], now) then return 0 end
put(KEYS[1], ARGV[2], ARGV[3], ARGV[4])
hincr(KEYS[2], ARGV[5], ARGV[2], ARGV[3], now)
for i = 4, #KEYS do incr(KEYS[i], ARGV[2], ARGV[3], now) end
return 1
"""

# KEYS[1]; ARGV: now, member, score, max, grace_ms -> the live count after it
_ZADD_BOUNDED = _LIVE + """
local now = tonumber(ARGV[1])
if zlive(KEYS[1], ARGV[1]) < tonumber(ARGV[4]) then
  zadd(KEYS[1], ARGV[2], ARGV[3], now, tonumber(ARGV[5]))
end
return redis.call('ZCARD', KEYS[1])
"""


def _reachable(fn):
    """Backend calls raise BackendUnavailable instead of redis' connection errors."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _down() as e:
            raise BackendUnavailable(f"redis: {type(e).__name__}: {e}") from e
    return call


def _num(x: float) -> str:
    return repr(float(x))


class RedisBackend(_Compound):
    """:class:`lmviz.server.classroom.Backend` on one Redis database, every key under ``prefix``."""

    shared = True

    def __init__(self, client: "redis.Redis", prefix: str = "lmviz:",
                 clock: Callable[[], float] = time.time, grace_s: float = 5.0):
        self.client = client
        self.prefix = prefix
        self._clock = clock
        self._grace_ms = int(grace_s * 1000)
        reg = client.register_script
        self._put_if_absent, self._incr, self._hincr = reg(_PUT_IF_ABSENT), reg(_INCR), reg(_HINCR)
        self._zadd, self._put_if = reg(_ZADD), reg(_PUT_IF)
        self._create_bounded, self._put_once_counted = reg(_CREATE_BOUNDED), reg(_PUT_ONCE_COUNTED)
        self._zadd_bounded = reg(_ZADD_BOUNDED)
        self._listeners: list[Callable[[str, int], None]] = []
        self._subscriber: threading.Thread | None = None
        self._listen_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, prefix: str = "lmviz:", clock: Callable[[], float] = time.time,
                 connect_timeout_s: float = 1.0, timeout_s: float = 2.0,
                 max_connections: int = 32) -> "RedisBackend":
        """A backend on ``redis://host:port/db`` with short time-outs (a page never waits long on
        a Redis that is down), one quick retry (a pooled connection that a Redis restart cut is
        replaced on the spot) and a bounded pool: a room of 300 answering at once waits its turn
        for one of ``max_connections`` connections (at most ``timeout_s``) instead of opening 300
        sockets at once, whose connects then time out (measured: 175 of 300 answers refused as
        ``store_unavailable`` with an unbounded pool; bench/room.py --redis)."""
        redis = _redis()
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=timeout_s,
            socket_connect_timeout=connect_timeout_s, socket_timeout=timeout_s,
            retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1), health_check_interval=30)
        return cls(redis.Redis(connection_pool=pool), prefix, clock)

    # -- helpers
    def _k(self, key: str) -> str:
        return self.prefix + key

    def _exp(self, ttl_s: float | None) -> tuple[str, str]:
        """(expires_at on the store clock, real PX in ms) for a TTL; both "" for no expiry."""
        if ttl_s is None:
            return "", ""
        return _num(self._clock() + float(ttl_s)), str(max(1, math.ceil(float(ttl_s) * 1000)) + self._grace_ms)

    def _parse(self, raw: bytes | None) -> Any | None:
        if raw is None:
            return None
        e, _, v = raw.decode("utf-8").partition("|")
        if e and float(e) <= self._clock():
            return None
        return json.loads(v)

    # -- the Backend interface
    @_reachable
    def get(self, key: str) -> Any | None:
        return self._parse(self.client.get(self._k(key)))

    @_reachable
    def put(self, key: str, value: Any, ttl_s: float | None) -> None:
        payload = json.dumps(value)
        e, px = self._exp(ttl_s)
        self.client.set(self._k(key), f"{e}|{payload}", px=int(px) if px else None)

    @_reachable
    def put_if_absent(self, key: str, value: Any, ttl_s: float | None) -> bool:
        payload = json.dumps(value)
        e, px = self._exp(ttl_s)
        return self._put_if_absent([self._k(key)], [_num(self._clock()), e, px, payload]) == 1

    @_reachable
    def delete(self, key: str) -> None:
        self.client.delete(self._k(key))

    @_reachable
    def incr(self, key: str, ttl_s: float | None) -> int:
        e, px = self._exp(ttl_s)
        return int(self._incr([self._k(key)], [_num(self._clock()), e, px]))

    @_reachable
    def hincr(self, key: str, field: str, ttl_s: float | None) -> int:
        e, px = self._exp(ttl_s)
        return int(self._hincr([self._k(key)], [_num(self._clock()), e, px, field]))

    @_reachable
    def hgetall(self, key: str) -> dict[str, int]:
        h = {k.decode("utf-8"): v.decode("utf-8") for k, v in self.client.hgetall(self._k(key)).items()}
        e = h.pop("~exp", "")
        if e and float(e) <= self._clock():
            return {}
        return {k: int(v) for k, v in h.items()}

    @_reachable
    def zadd(self, key: str, member: str, score: float) -> None:
        self._zadd([self._k(key)], [_num(self._clock()), str(member), _num(score), self._grace_ms])

    @_reachable
    def zrem(self, key: str, member: str) -> None:
        self.client.zrem(self._k(key), member)

    @_reachable
    def zlive(self, key: str, now: float) -> int:
        k = self._k(key)
        p = self.client.pipeline(transaction=True)
        p.zremrangebyscore(k, "-inf", f"({_num(now)}")
        p.zcard(k)
        return int(p.execute()[1])

    @_reachable
    def zlowest(self, key: str, n: int) -> list[tuple[str, float]]:
        if n <= 0:
            return []
        got = self.client.zrange(self._k(key), 0, int(n) - 1, withscores=True)
        return [(m.decode("utf-8"), float(sc)) for m, sc in got]

    # -- compound steps, one script each
    @_reachable
    def put_if(self, key: str, value: Any, ttl_s: float | None, field: str, expect: Any) -> bool:
        e, px = self._exp(ttl_s)
        return self._put_if([self._k(key)], [_num(self._clock()), e, px, json.dumps(value), field,
                                             json.dumps(expect)]) == 1

    @_reachable
    def create_bounded(self, key: str, value: Any, ttl_s: float | None,
                       zsets: Sequence[tuple[str, int]], member: str, score: float, now: float) -> int:
        e, px = self._exp(ttl_s)
        return int(self._create_bounded(
            [self._k(key)] + [self._k(z) for z, _ in zsets],
            [_num(now), e, px, json.dumps(value), str(member), _num(score), self._grace_ms]
            + [int(m) for _, m in zsets]))

    @_reachable
    def put_once_counted(self, key: str, value: Any, ttl_s: float | None, hkey: str, hfield: str,
                         counters: Sequence[tuple[str, int]], guard: tuple[str, str, Any] | None,
                         now: float) -> int:
        e, px = self._exp(ttl_s)
        gkey, gfield, gwant = (guard[0], guard[1], json.dumps(guard[2])) if guard else ("", "", "null")
        keys = [self._k(key), self._k(hkey), self._k(gkey)] + [self._k(k) for k, _ in counters]
        args = [_num(now), e, px, json.dumps(value), hfield, gfield, gwant] + [int(b) for _, b in counters]
        return int(self._put_once_counted(keys, args))

    @_reachable
    def zadd_bounded(self, key: str, member: str, score: float, max_live: int, now: float) -> int:
        return int(self._zadd_bounded([self._k(key)], [_num(now), str(member), _num(score),
                                                       int(max_live), self._grace_ms]))

    # -- moves: pub/sub (ClassStore.watch)
    def announce(self, code: str, version: int) -> None:
        try:
            self.client.publish(self._k("moved"), f"{code} {int(version)}")
        except _down():
            pass     # the write itself is done: followers find it at their next check

    def listen(self, listener: Callable[[str, int], None]) -> None:
        with self._listen_lock:
            self._listeners.append(listener)
            if self._subscriber is None:
                self._subscriber = threading.Thread(target=self._hear, name="lmviz-class-moves",
                                                    daemon=True)
                self._subscriber.start()

    def _hear(self) -> None:
        """The subscriber thread: one pub/sub connection for the process, for its whole life."""
        pubsub = None
        while True:
            try:
                if pubsub is None:
                    pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                    pubsub.subscribe(self._k("moved"))
                msg = pubsub.get_message(timeout=1.0)
            except _down():
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except Exception:  # noqa: BLE001 - a dead connection may fail to close
                        pass
                pubsub = None
                time.sleep(1.0)
                continue
            if not msg or msg.get("type") != "message":
                continue
            parts = bytes(msg.get("data") or b"").decode("ascii", "replace").split()
            code = normalise_code(parts[0]) if len(parts) == 2 else None
            if code is None or not parts[1].isdigit():
                continue
            tell(self._listeners, code, int(parts[1]))

    # -- for tests and operators
    @_reachable
    def dump(self) -> dict[str, Any]:
        """Every key under the prefix with its raw value (strings, hashes or sorted sets)."""
        out: dict[str, Any] = {}
        for k in self.client.scan_iter(match=self.prefix + "*", count=500):
            t = self.client.type(k).decode()
            out[k.decode()] = (self.client.get(k) if t == "string" else self.client.hgetall(k)
                               if t == "hash" else self.client.zrange(k, 0, -1, withscores=True))
        return out
