"""Benchmark: lmviz's pure-Python BPE trainer vs HF `tokenizers` (Rust), side by side.

Both learn the same number of merges on the same ~1 MB text with the same pre-split and the same
min_count, in one process. Like for like: HF is given the chunks of ``lmviz.bpe.pre_split`` as a
list of pieces (what lmviz counts), not one 1 MB string, and the runs are interleaved (HF, lmviz,
lmviz with ``record=True``, HF, ...) so that all three see the same machine load; the best of
--repeat runs of each is printed. ``record=True`` (the history of candidates and segmentations)
is the path the tokenization chapter's stepper uses; ``record=False`` is what a training uses.
The lmviz times include its own pre-split; the HF times do not (it gets the pieces ready-made).
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

from lmviz.bpe import PRE_SPLIT, pre_split, train_bpe  # noqa: E402


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


def hf_train(pieces: list[str] | str, num_merges: int, min_count: int = 2):
    """Train HF tokenizers' BPE on our pre-split pieces (a text is pre-split here first);
    returns its merges as string pairs."""
    if isinstance(pieces, str):
        pieces = pre_split(pieces)
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PRE_SPLIT), behavior="isolated")
    trainer = trainers.BpeTrainer(vocab_size=len(set("".join(pieces))) + num_merges,
                                  min_frequency=min_count, show_progress=False,
                                  special_tokens=[])
    tok.train_from_iterator(pieces, trainer=trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]


def interleaved(fns: dict, repeat: int) -> tuple[dict, dict]:
    """Run every fn once per round, ``repeat`` rounds; the best time and last result of each."""
    best, out = {k: float("inf") for k in fns}, {}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            out[k] = fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=1.0, help="corpus size in MB")
    ap.add_argument("--merges", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    text = corpus(int(args.mb * 1_000_000))
    n = args.merges
    pieces = pre_split(text)
    t, out = interleaved({"hf": lambda: hf_train(pieces, n),
                          "us": lambda: train_bpe(text, n, record=False),
                          "rec": lambda: train_bpe(text, n)}, args.repeat)
    t_hf, hf, t_us, us, t_rec = t["hf"], out["hf"], t["us"], out["us"], t["rec"]
    same = sum(1 for x, y in zip(us.merges, hf) if x == y)
    prefix = next((i for i, (x, y) in enumerate(zip(us.merges, hf)) if x != y), min(len(hf), n))
    print(f"text: {len(text.encode('utf-8')):,} bytes, {len(text):,} chars, "
          f"{us.n_chunks:,} chunks; merges: {n}")
    print(f"best of {args.repeat} interleaved runs each")
    print(f"HF tokenizers (Rust), pre-split pieces: {t_hf:.3f} s")
    print(f"lmviz.bpe (Python), record=False:       {t_us:.3f} s   ({t_us / t_hf:.2f}x HF)")
    print(f"lmviz.bpe (Python), record=True (page): {t_rec:.3f} s   ({t_rec / t_hf:.2f}x HF)")
    print(f"merges equal to HF's: {same}/{len(hf)} (identical prefix: {prefix})")


if __name__ == "__main__":
    main()
