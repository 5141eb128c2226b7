"""What the training replay costs, side by side in one run (CPU, one thread, under a minute).

    .venv/bin/python bench/replay.py

For the "tiny" and "default" presets on the English corpus: the median time of one training
step, of one replay snapshot (``take_snapshot``: the probe's attention, the prompt's
distribution, the embeddings' PCA), the number of snapshots a full run takes and their bytes,
and so the share of a full run's time the replay adds.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from lmviz.replay import Probe, SnapshotSchedule, default_probe, take_snapshot  # noqa: E402
from lmviz.train import PRESETS, Trainer, corpus_text, replace  # noqa: E402


def median(f, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[n // 2]


def main() -> None:
    torch.set_num_threads(1)
    text = corpus_text("english")
    probe: Probe = default_probe(text, "The ")
    print(f"probe sentence {probe.sentence!r}, prompt {probe.prompt!r}")
    print(f"{'preset':8} {'step ms':>8} {'snapshot ms':>12} {'snapshots':>10} {'KiB':>6} {'replay share':>13}")
    for name in ("tiny", "default"):
        cfg = PRESETS[name]
        tr = Trainer(text, replace(cfg, eval_every=10**6), device="cpu", prompt="The ")
        tr.step(3)                                                      # warm-up
        step = median(lambda: tr.step(1), 15)
        snaps = []
        snap = median(lambda: snaps.append(take_snapshot(tr.model, tr.tokenizer, probe, 0)), 15)
        n = len(SnapshotSchedule(cfg.max_steps).steps)
        kib = n * snaps[0].nbytes / 1024
        share = n * snap / (n * snap + cfg.max_steps * step)
        print(f"{name:8} {step * 1e3:8.1f} {snap * 1e3:12.1f} {n:10d} {kib:6.0f} {share:13.2%}")


if __name__ == "__main__":
    main()
