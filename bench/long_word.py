"""Benchmark: a pretrained model's byte-level BPE on one very long word, lmviz against HF
`tokenizers` (Rust), side by side.

A word of ``--letters`` letters (the English corpus's first letters with everything else left
out: one piece under GPT-2's pre-tokenizer, so the whole word is one merge problem, and a
realistic one: many merges apply) is encoded by
``lmviz.hf_tokenizer.HFTokenizer`` and by ``tokenizers.Tokenizer`` from the same tokenizer.json
(a GPT-2-style BPE of 4,000 merges trained by ``tokenizers`` on that corpus). Interleaved runs,
median of ``--repeat``; lmviz's per-piece cache is emptied before each of its runs. The ids must
be equal. Goal (issue 55): within 10x of ``tokenizers`` for 10,000 letters.

    .venv/bin/python bench/long_word.py [--letters 10000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--letters", type=int, default=10_000)
    ap.add_argument("--merges", type=int, default=4_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from lmviz import ASSETS
    from lmviz.hf_tokenizer import HFTokenizer

    text = (ASSETS / "corpora" / "english.txt").read_text(encoding="utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([text], trainers.BpeTrainer(
        vocab_size=256 + args.merges, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokenizer.json")
        tok.save(path)
        mine = HFTokenizer.from_file(path)
    word = "".join(c for c in text if c.isascii() and c.isalpha())[:args.letters]   # English, spaces gone

    def ours():
        mine._cache.clear()
        return mine.encode(word)

    def ref():
        return tok.encode(word, add_special_tokens=False).ids

    assert ours() == ref(), "lmviz's ids differ from tokenizers'"
    times = {"lmviz": [], "tokenizers": []}
    for _ in range(args.repeat):
        for name, f in (("lmviz", ours), ("tokenizers", ref)):
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"letters": args.letters, "tokens": len(ref()), "merges": args.merges,
                      "lmviz_ms": round(med["lmviz"] * 1e3, 2), "tokenizers_ms": round(med["tokenizers"] * 1e3, 2),
                      "ratio": round(med["lmviz"] / med["tokenizers"], 1)}))


if __name__ == "__main__":
    main()
