"""Benchmark: lmviz's pure-Python BPE trainer vs HF `tokenizers` (Rust), side by side.

Both learn the same number of merges on the same ~1 MB text with the same pre-split
(lmviz.bpe.PRE_SPLIT) and the same min_count, in one process, best of a few repeats each.
The text is the concatenation of this Python's standard-library sources in sorted order, so it
is deterministic for a given Python install and realistic (prose in docstrings, code).

    .venv/bin/python bench/bpe.py            # 500 merges on 1 MB
    .venv/bin/python bench/bpe.py --mb 0.2 --merges 200 --repeat 1
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lmviz.bpe import PRE_SPLIT, train_bpe  # noqa: E402


def corpus(n_bytes: int) -> str:
    """The first ~n_bytes of the sorted stdlib .py sources (UTF-8 text, deterministic)."""
    root = sysconfig.get_paths()["stdlib"]
    parts, total = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "test", "tests"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    s = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            parts.append(s)
            total += len(s.encode("utf-8"))
            if total >= n_bytes:
                return "".join(parts).encode("utf-8")[:n_bytes].decode("utf-8", "ignore")
    return "".join(parts)


def hf_train(text: str, num_merges: int, min_count: int = 2):
    """Train HF tokenizers' BPE with our pre-split; returns its merges as string pairs."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PRE_SPLIT), behavior="isolated")
    trainer = trainers.BpeTrainer(vocab_size=len(set(text)) + num_merges,
                                  min_frequency=min_count, show_progress=False,
                                  special_tokens=[])
    tok.train_from_iterator([text], trainer=trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1.0, help="corpus size in MB")
    ap.add_argument("--merges", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    text = corpus(int(args.mb * 1_000_000))
    n = args.merges
    t_hf, hf = best_of(lambda: hf_train(text, n), args.repeat)
    t_us, us = best_of(lambda: train_bpe(text, n, record=False), args.repeat)
    same = sum(1 for x, y in zip(us.merges, hf) if x == y)
    prefix = next((i for i, (x, y) in enumerate(zip(us.merges, hf)) if x != y), min(len(hf), n))
    print(f"text: {len(text.encode('utf-8')):,} bytes, {len(text):,} chars, "
          f"{us.n_chunks:,} chunks; merges: {n}")
    print(f"HF tokenizers (Rust): {t_hf:.3f} s")
    print(f"lmviz.bpe (Python):   {t_us:.3f} s")
    print(f"ratio lmviz / HF:     {t_us / t_hf:.2f}x")
    print(f"merges equal to HF's: {same}/{len(hf)} (identical prefix: {prefix})")


if __name__ == "__main__":
    main()
