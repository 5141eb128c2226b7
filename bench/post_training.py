"""Benchmark: the post-training chapter's live SFT, from the shipped base model, over 3 seeds.

    python bench/post_training.py [--lang zh,en] [--seeds 0,1,2] [--threads 1]

For each language and seed: the base model (``lmviz.chapters.post_training.load_base``, or
``--train-base``: trained here first, timed), a copy fine-tuned on the seed's instruction pairs
with the loss masked to the answers (``run_sft``), timed on ``--threads`` torch threads. Printed
per run: the time, the held-out accuracy before and after (pairs the base model read about, never
fine-tuned on; beside it, how many of them the base model completes in its corpus's own form) and
the unseen accuracy (pairs it never read), and the step at which the held-out accuracy first
reached its best; then a few DPO steps on four of the fine-tuned model's own mistakes (the
right answer chosen, its answer rejected), against the fine-tuned model frozen: the margin, the
loss and the KL to the reference after 20 steps. Goal (issue 58): the stated held-out accuracy within 90 s on one
thread of a 2-core server.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lang", default="zh,en")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train-base", action="store_true", help="pre-train the base model here (timed)")
    args = ap.parse_args()

    import torch

    from lmviz.chapters import post_training as pt
    from lmviz.train import copy_model

    torch.set_num_threads(args.threads)
    for lang in args.lang.split(","):
        if args.train_base:
            t0 = time.perf_counter()
            toy = pt.train_base(lang)
            print(f"{lang}: base model pre-trained in {time.perf_counter() - t0:.1f} s, final loss {toy.losses[-1]:.3f}")
        else:
            toy = pt.load_base(lang)
        corpus = pt.base_corpus(lang)
        block = pt.BaseTrainConfig().block_size
        for seed in (int(s) for s in args.seeds.split(",")):
            cfg = pt.SFTConfig(seed=seed)
            split = pt.sft_split(lang, corpus, cfg.share, seed)
            knew = pt.answered(toy.model, toy.tokenizer, pt.as_statements(split.held, lang), block)
            model = copy_model(toy.model)
            t0 = time.perf_counter()
            run = pt.run_sft(model, toy.tokenizer, split, block, cfg)
            took = time.perf_counter() - t0
            best = max(a for _, a, _ in run.counted)
            first = next(s for s, a, _ in run.counted if a == best)
            print(f"{lang} seed {seed}: SFT {cfg.steps} steps in {took:.1f} s ({args.threads} thread); "
                  f"held-out {run.counted[0][1]:.2f} -> {run.counted[-1][1]:.2f} of {len(split.held)} "
                  f"(the base completes {sum(knew) / len(knew):.2f} of them in its corpus's form) "
                  f"(best {best:.2f} at step {first}); unseen {run.counted[0][2]:.2f} -> {run.counted[-1][2]:.2f} "
                  f"of {len(split.unseen)}; masked loss {run.losses[0]:.2f} -> {run.losses[-1]:.3f}", flush=True)
            prefs = pt.mistakes_as_preferences(model, toy.tokenizer, split.held, 4, lang)
            t0 = time.perf_counter()
            rec = pt.run_dpo(copy_model(model), model, toy.tokenizer, prefs, beta=0.1, steps=20)
            print(f"  DPO on {len(prefs)} of its mistakes (the right answer chosen, its own rejected), beta 0.1, "
                  f"20 steps in {time.perf_counter() - t0:.2f} s: margin 0 -> {rec[-1].margin:.2f}, loss "
                  f"{rec[0].loss:.3f} -> {rec[-1].loss:.3f}, chosen {rec[-1].chosen_shift:+.2f} / rejected "
                  f"{rec[-1].rejected_shift:+.2f} nats against the reference, KL {rec[-1].kl:.2f} nats", flush=True)


if __name__ == "__main__":
    main()
