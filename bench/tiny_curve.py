"""The README's tiny-preset row: a live training on the English corpus, validation loss over wall
time, the way the training chapter runs it (one torch thread, an evaluation and a sample every
eval_every steps).

    .venv/bin/python bench/tiny_curve.py [--corpus english] [--threads 1] [--at 10]

Prints the validation loss at step 0, the last evaluation within --at seconds, and at the end
(steps and seconds of each), then the final sample from the fixed prompt.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="english")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--at", type=float, default=10.0, help="report the loss reached after this many seconds")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from lmviz.train import PRESETS, Trainer, corpus_text, default_prompt

    text = corpus_text(args.corpus)
    tr = Trainer(text, PRESETS["tiny"], device="cpu", prompt=default_prompt(text, args.corpus))
    t0 = time.perf_counter()
    curve = [(0.0, 0, tr.evaluate().val_loss)]
    while not tr.done:
        tr.step(tr.cfg.eval_every)
        loss = tr.evaluate().val_loss
        tr.sample()                                   # the chapter samples at every evaluation too
        curve.append((time.perf_counter() - t0, tr.steps_done, loss))
    early = max((c for c in curve if c[0] <= args.at), key=lambda c: c[0])
    for label, (s, n, loss) in (("start", curve[0]), (f"within {args.at:g} s", early), ("end", curve[-1])):
        print(f"{label:>12}: val loss {loss:.2f} at step {n:,} ({s:.1f} s)")
    print(f"sample: {tr.sample().text!r}")


if __name__ == "__main__":
    main()
