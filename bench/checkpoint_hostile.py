"""Server memory while hostile checkpoints are refused: RSS before and after each one.

Loads every hostile file of ``tests/test_checkpoint.py`` (the bad-input catalogue) in this one
process, the way the upload page does, and prints for each the catalogue key it was refused
with, the resident memory after it (MB) and how far the process's peak RSS rose while it was
read. A valid "bigger"-preset checkpoint is loaded last for comparison.

    python bench/checkpoint_hostile.py
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import torch

    torch.set_num_threads(1)
    from lmviz.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
    from lmviz.model import GPT
    from lmviz.train import PRESETS
    from tests.test_checkpoint import HOSTILE

    for data, _ in HOSTILE.values():          # warm every code path once (imports, allocator)
        try:
            load_checkpoint(data)
        except CheckpointError:
            pass
    start, start_peak = rss_mb(), peak_mb()
    print(f"baseline RSS {start:.1f} MB, peak {start_peak:.1f} MB")
    print(f"{'case':<44} {'refused with':<26} {'RSS MB':>7} {'peak +MB':>8}")
    for name, (data, _) in HOSTILE.items():
        before = peak_mb()
        try:
            load_checkpoint(data)
            key = "LOADED (!)"
        except CheckpointError as e:
            key = e.key
        print(f"{name[:44]:<44} {key:<26} {rss_mb():>7.1f} {peak_mb() - before:>8.1f}")
    end = rss_mb()
    print(f"after all {len(HOSTILE)} hostile files: RSS {end:.1f} MB ({end - start:+.1f}), "
          f"peak {peak_mb():.1f} MB ({peak_mb() - start_peak:+.1f})")
    from lmviz.tokenizer import CharTokenizer

    tok = CharTokenizer("".join(chr(0x4e00 + i) for i in range(1062)))
    blob = save_checkpoint(GPT(PRESETS["bigger"].model_config(tok.vocab_size)), tok)
    before = rss_mb()
    model, _, _ = load_checkpoint(blob)
    print(f"valid 'bigger' checkpoint ({len(blob) / 2**20:.1f} MB, {model.num_params():,} parameters): "
          f"RSS {before:.1f} -> {rss_mb():.1f} MB")


if __name__ == "__main__":
    main()
