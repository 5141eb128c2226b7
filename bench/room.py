"""The room's three activities through the class store: N students at once, one presenter.

    python bench/room.py --students 300 [--redis redis://127.0.0.1:6379/0] [--rounds 3]

In one process: a class in a ``ClassStore`` (the in-process memory backend, or Redis with
``--redis``), one thread per student (``--students``), all released together by a barrier, and
the presenter's own code path after the last answer. For each activity:

- **be the language model**: the lecturer opens the generation chapter's question (the shipped
  model's choices for the notes' line 白日依山尽，黄河入海), every student answers once (one in
  ten also tries a second answer and a forged option, which must be refused); then the presenter
  reads the histogram and computes the room against the model (``generation_room.compare``) and
  builds the figure (``viz.generation.room_figure``);
- **map the heads**: every student is dealt heads (``ClassStore.assign``, as many each as the
  room needs) and reports them; the presenter reads the tally and builds the layer x head map;
- **train on the room**: every student sends one sentence (one in ten a 10 kB block of markup,
  which must be refused); the lecturer accepts every second one; the presenter reads the queue
  and learns BPE on the accepted sentences.

Prints per activity: operations accepted per second (the students' burst), the time from the
last student's operation to the presenter's figure (p50/p95 over ``--rounds``), the server
memory per student (the Python heap one more round adds, tracemalloc, in a round of its own),
and whether every answer was counted exactly once (the store's counts against what the
students were told).

What this does not measure: the websocket and the page runs of 300 browser tabs (bench/load.py
and bench/follow.py drive those through Streamlit's own protocol).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import pct  # noqa: E402  (the load benchmark's percentile: q a fraction)
from lmviz.server.classroom import ClassLimits, ClassStore, MemoryBackend  # noqa: E402


def burst(n: int, work) -> tuple[float, list]:
    """Run work(i) on n threads released together; (seconds for all, results)."""
    gate = threading.Barrier(n + 1)
    out = [None] * n

    def run(i):
        gate.wait()
        out[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    gate.wait()
    t0 = time.perf_counter()
    for th in threads:
        th.join()
    return time.perf_counter() - t0, out


def make_store(redis_url: str | None, n: int) -> ClassStore:
    limits = ClassLimits(max_answers_per_address=n * 4, answers_per_address_per_min=n * 20,
                         max_answers_per_class=n * 40, max_counts_per_address=n * 40)
    if redis_url:
        import secrets

        from lmviz.server.classroom_redis import RedisBackend

        # a fresh key prefix per round: nothing of an earlier round (or another user) is read
        return ClassStore(RedisBackend.from_url(redis_url, prefix=f"lmviz-bench-{secrets.token_hex(4)}:"),
                          limits=limits)
    return ClassStore(MemoryBackend(), limits=limits)


def be_the_model(store, n, model, tok):
    import torch

    from lmviz.chapters import generation_room as gr
    from lmviz.sampling import next_logits
    from viz.generation import room_figure

    cls = store.create_class()
    ids, _ = tok.encode_lossy("白日依山尽，黄河入海")
    with torch.no_grad():
        ch = gr.choices(next_logits(model, ids), 1.0, text_of=tok.token)
    qid = gr.question_id(tok.decode(ids), 1.0)
    assert store.open_question(cls.code, cls.secret, qid, list(ch.options)).ok
    opts = ch.options

    def student(i):
        mine = opts[i % len(opts)]
        ok = store.answer(cls.code, f"b:st{i}", qid, mine, address="10.0.0.1").ok
        refused = True
        if i % 10 == 0:   # a second answer and a forged option: both refused
            refused = (store.answer(cls.code, f"b:st{i}", qid, opts[0], address="10.0.0.1").reason == "already_answered"
                       and store.answer(cls.code, f"b:st{i}", qid, "<b>", address="10.0.0.1").reason == "bad_option")
        return ok and refused, mine, time.perf_counter()

    took, res = burst(n, student)
    last = max(r[2] for r in res)
    h = store.histogram(cls.code, cls.secret, qid)
    back = gr.from_options(opts, 1.0)
    r = gr.compare(back, h.counts)
    room_figure([o for o in r.options], r.room, r.model, names=("room", "model"))
    lag = time.perf_counter() - last
    want = {o: sum(1 for x in res if x[1] == o) for o in opts}
    exact = all(x[0] for x in res) and dict(h.counts) == want and r.n == n
    return n / took, lag, exact


def map_heads(store, n, model):
    from lmviz.chapters.attention_heads import activity_id, head_effects, head_map, heads_each
    from viz.attention import head_map_figure

    cls = store.create_class()
    cfg = model.cfg
    heads = cfg.n_layer * cfg.n_head
    ids = list(range(1, 13))
    fx = head_effects(model, ids)                       # the shared cache: computed once
    act = activity_id("default", ids)
    each = heads_each(heads, n)

    def student(i):
        got = store.assign(cls.code, f"b:st{i}", act, heads, each)
        ok = got.ok and all(store.report(cls.code, f"b:st{i}", act, h, address="10.0.0.1").ok for h in got.items)
        return ok, got.items, time.perf_counter()

    took, res = burst(n, student)
    last = max(r[2] for r in res)
    tl = store.tally(cls.code, cls.secret, act)
    head_map_figure(head_map(fx, cfg.n_layer, cfg.n_head, dict(tl.counts)), ["L"] * cfg.n_layer, ["h"] * cfg.n_head)
    lag = time.perf_counter() - last
    want: dict = {}
    for r in res:
        for h in r[1]:
            want[h] = want.get(h, 0) + 1
    exact = all(r[0] for r in res) and dict(tl.counts) == want and tl.students == tl.reported == n
    return sum(len(r[1]) for r in res) / took, lag, exact


def train_on_room(store, n):
    from lmviz.bpe import train_bpe
    from lmviz.chapters.tokenization import ROOM_ACTIVITY

    cls = store.create_class()
    markup = "<script>" + "<b>x</b>" * 1300 + "</script>"          # 10 kB of markup

    def student(i):
        text = markup if i % 10 == 5 else (f"我喜欢学习第{i}个词元" if i % 2 else f"I love token number {i}")
        r = store.submit(cls.code, f"b:st{i}", ROOM_ACTIVITY, text, address="10.0.0.1")
        return (r.ok if text != markup else r.reason == "text_too_long"), text != markup, time.perf_counter()

    took, res = burst(n, student)
    last = max(r[2] for r in res)
    q = store.queue(cls.code, cls.secret, ROOM_ACTIVITY)
    for k, item in enumerate(q.items):
        store.moderate(cls.code, cls.secret, ROOM_ACTIVITY, item.id, k % 2 == 0)
    q = store.queue(cls.code, cls.secret, ROOM_ACTIVITY)
    corpus = "\n".join(i.text for i in q.items if i.state == "accepted")
    train_bpe(corpus, 60, record=False)
    lag = time.perf_counter() - last
    sent = sum(1 for r in res if r[1])
    exact = all(r[0] for r in res) and len(q.items) == sent
    return n / took, lag, exact


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--redis", default="", help="a Redis URL (the shared backend), else in-process memory")
    a = ap.parse_args()
    import torch

    from lmviz.checkpoint import load_default

    torch.set_num_threads(1)
    model, tok, _ = load_default()
    acts = {"be the language model": lambda s: be_the_model(s, a.students, model, tok),
            "map the heads": lambda s: map_heads(s, a.students, model),
            "train on the room": lambda s: train_on_room(s, a.students)}
    print(f"{a.students} students, backend {'redis' if a.redis else 'memory'}, {a.rounds} rounds")
    for name, run in acts.items():
        rates, lags, exact = [], [], True
        for _ in range(a.rounds):
            rate, lag, ok = run(make_store(a.redis or None, a.students))
            rates.append(rate)
            lags.append(lag)
            exact = exact and ok
        # memory in a round of its own: tracing every allocation slows the threads down enough
        # that a burst on Redis waits past the pool's time-out (its answers are not judged here)
        store = make_store(a.redis or None, a.students)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        run(store)
        mems = [(tracemalloc.get_traced_memory()[0] - base) / a.students]
        tracemalloc.stop()
        print(f"{name:<22} accepted/s median {statistics.median(rates):,.0f}; last answer -> presenter's figure "
              f"p50 {pct(lags, 0.5) * 1000:.0f} ms, p95 {pct(lags, 0.95) * 1000:.0f} ms; "
              f"memory/student {statistics.median(mems) / 1024:.1f} KiB; every answer counted once: {exact}")


if __name__ == "__main__":
    main()
