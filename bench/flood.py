"""A flood from one address beside 30 real students, on the class store the server uses (issue 55).

    python bench/flood.py [--students 30] [--questions 22] [--flood 500] [--sentences 620] [--redis]

The hostile probe of issue 55, replayed in process with the server's own store
(``lmviz.server.classroom.ClassStore``; ``--redis``: its Redis backend on a redis-server of its
own). One address (a script, or a browser refusing cookies: a new voter id for every answer)
sends ``--flood`` answers to each of ``--questions`` questions and ``--sentences`` sentences for
the room's corpus, interleaved with ``--students`` real students of addresses of their own, each
answering every question and sending one sentence. The same students then do the same in a
class without the flood (side by side in one run). Printed: how many of the real students'
answers and sentences were counted (every one, with and without), how many of the flood's (its
address's share), how many addresses the projector names under each count
(``Histogram.senders``, ``Queue.senders``), and the real students' time per store call (p50,
p95) with and without the flood. The last line reads ``real students' answer p50 X ms, p95 Y ms
(without the flood p50 A ms, p95 B ms), counted N of N; ...``.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from load import pct  # noqa: E402

FLOOD = "198.51.100.9"
OPTS = ["rises", "falls", "same"]


def _store(redis_url: str | None, **limits):
    from lmviz.server.classroom import ClassLimits, ClassStore, MemoryBackend

    if redis_url is None:
        return ClassStore(MemoryBackend(), limits=ClassLimits(**limits))
    from lmviz.server.classroom_redis import RedisBackend

    return ClassStore(RedisBackend.from_url(redis_url, prefix=f"bench{time.time_ns()}:"), limits=ClassLimits(**limits))


def _send(calls, op, times: list, out: dict, kind: str, rng: random.Random) -> None:
    """Make each (who, voter, address) call of ``calls`` in a shuffled order, ``op(voter,
    address)``: the real students' call times in ``times``, what was counted in ``out``."""
    rng.shuffle(calls)
    for who, sid, addr in calls:
        t0 = time.perf_counter()
        r = op(sid, addr)
        if who == "real":
            times.append(time.perf_counter() - t0)
            if not r.ok:
                out["refused"].add(r.reason)
        out[f"{who}_{kind}"] += r.ok


def _class_run(store, args, flood: bool, rng: random.Random) -> dict:
    """One class: the real students (and the flood, when asked) answer every question and send
    one sentence each; what was counted and the real students' call times."""
    c = store.create_class()
    real = [("real", f"b:realStudent{i:05d}", f"203.0.{i // 250}.{i % 250 + 1}") for i in range(args.students)]
    out = {"real_answers": 0, "flood_answers": 0, "real_sentences": 0, "flood_sentences": 0,
           "refused": set(), "senders": [], "times_ans": [], "times_sub": []}
    for q in range(args.questions):
        qid = f"q{q}"
        store.open_question(c.code, c.secret, qid, OPTS)
        calls = real + ([("flood", f"s:flood{q}-{j}", FLOOD) for j in range(args.flood)] if flood else [])
        _send(calls, lambda sid, addr: store.answer(c.code, sid, qid, rng.choice(OPTS), address=addr),
              out["times_ans"], out, "answers", rng)
        out["senders"].append(store.histogram(c.code, c.secret, qid).senders)
        store.close_question(c.code, c.secret)
    calls = real + ([("flood", f"s:script{j}", FLOOD) for j in range(args.sentences)] if flood else [])
    _send(calls, lambda sid, addr: store.submit(c.code, sid, "corpus.room", f"sentence from {sid}", address=addr),
          out["times_sub"], out, "sentences", rng)
    out["queue_senders"] = store.queue(c.code, c.secret, "corpus.room").senders
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--questions", type=int, default=22)
    ap.add_argument("--flood", type=int, default=500, help="the flood's answers per question (one address)")
    ap.add_argument("--sentences", type=int, default=620, help="the flood's sentences (one address)")
    ap.add_argument("--redis", action="store_true", help="the Redis backend (a redis-server of its own)")
    args = ap.parse_args()
    redis = None
    if args.redis:
        from tests.redis_util import RedisServer

        redis = RedisServer()
    try:
        # the pace limit per address (1,200 answers a minute) is off here: the shares are under
        # test, and the flood's answers would otherwise mostly be refused as too fast
        store = _store(redis.url if redis else None, answers_per_address_per_min=10**9,
                       answers_per_voter_per_min=10**9)
        lim = store.limits
        rng = random.Random(0)
        base = _class_run(store, args, False, rng)
        hit = _class_run(store, args, True, rng)
    finally:
        if redis is not None:
            redis.close()
    n_ans, n_sub = args.students * args.questions, args.students
    print(f"backend {'redis' if args.redis else 'memory'}; {args.students} real students, {args.questions} questions; "
          f"the flood: one address, {args.flood} cookie-less answers a question, {args.sentences} sentences")
    print(f"flood counted: answers {hit['flood_answers']} of {args.flood * args.questions} "
          f"(share per question {lim.max_answers_per_address}, of the class {lim.max_counts_per_address}), "
          f"sentences {hit['flood_sentences']} of {args.sentences} (share {lim.max_sentences_per_address})")
    print(f"the projector: answers from {min(hit['senders'])}-{max(hit['senders'])} addresses a question "
          f"(without the flood {min(base['senders'])}-{max(base['senders'])}); sentences from "
          f"{hit['queue_senders']} addresses ({base['queue_senders']})")
    print(f"real students' answers and sentences refused: {sorted(hit['refused']) or 'none'}")
    ms = lambda xs, q: 1000 * pct(xs, q)  # noqa: E731
    print(f"real students' answer p50 {ms(hit['times_ans'], 0.5):.2f} ms, p95 {ms(hit['times_ans'], 0.95):.2f} ms "
          f"(without the flood p50 {ms(base['times_ans'], 0.5):.2f} ms, p95 {ms(base['times_ans'], 0.95):.2f} ms), "
          f"counted {hit['real_answers']} of {n_ans} ({base['real_answers']} of {n_ans}); sentence p95 "
          f"{ms(hit['times_sub'], 0.95):.2f} ms ({ms(base['times_sub'], 0.95):.2f} ms), counted "
          f"{hit['real_sentences']} of {n_sub} ({base['real_sentences']} of {n_sub})")


if __name__ == "__main__":
    main()
