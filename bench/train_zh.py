"""Live training in Chinese against English, side by side in one run (CPU, 1 torch thread as the app).

    .venv/bin/python bench/train_zh.py             # both presets to the end of their runs (~5 min)
    .venv/bin/python bench/train_zh.py --quick     # stop each run at 60 s

For the "poetry" preset on the Tang-poetry corpus (lmviz.poetry: its tokenizer, held-out whole
poems) and the English "tiny" preset on the English corpus, it reports:

1. held-out loss after 60 s of training (or at the end of the run, if sooner) against the
   uniform and unigram baselines of the same tokenizer and split (lmviz.baselines);
2. when the held-out loss first fell below the unigram baseline (checked every BEAT_EVERY
   steps), and the held-out loss at the end of the run;
3. the form metric (lmviz.poetry.form_share: share of generated lines that are 5 or 7
   characters) of the run's fixed sample (Trainer.sample: the preset's sample_len tokens, what
   the page shows) at the end and at 60 s, for the poetry preset.

Held-out loss is lmviz.baselines.heldout_loss on the first EVAL_TOKENS tokens of the held-out
part (deterministic), timed out of the training clock. The machine is shared: the load average is
printed before and after each run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from lmviz.baselines import heldout_loss, unigram_baseline  # noqa: E402
from lmviz.poetry import PROMPT, form_share, poetry_tokenizer, training_text  # noqa: E402
from lmviz.train import Trainer, corpus_text, make_config  # noqa: E402

EVAL_TOKENS = 16_384
CHECK_S = 60.0
BEAT_EVERY = 50           # steps between checks of "held-out loss below the unigram baseline yet?"


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def run(name: str, trainer: Trainer, check_s: float, quick: bool, prompt: str, form: bool) -> dict:
    b = unigram_baseline(trainer.train_ids, trainer.val_ids, trainer.tokenizer.vocab_size)
    rec = {"name": name, "params": trainer.num_params(), "vocab": trainer.tokenizer.vocab_size,
           "uniform": b.uniform, "unigram": b.unigram, "load_before": load()}
    train_s, at_check, beat = 0.0, None, None
    while not trainer.done:
        t0 = time.perf_counter()
        trainer.step(10)
        train_s += time.perf_counter() - t0
        if beat is None and trainer.steps_done % BEAT_EVERY == 0:
            if heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS) < b.unigram:
                beat = {"t": train_s, "step": trainer.steps_done}
        if at_check is None and (train_s >= check_s or trainer.done):
            at_check = {"t": train_s, "step": trainer.steps_done,
                        "val": heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS)}
            if form:
                smp = trainer.sample(prompt)
                at_check["form"] = form_share(smp.prompt + smp.text)   # the prompt begins the first line
            if quick:
                break
    rec["check"], rec["beat"] = at_check, beat
    rec["end"] = {"t": train_s, "step": trainer.steps_done,
                  "val": heldout_loss(trainer.model, trainer.val_ids, EVAL_TOKENS),
                  "train": heldout_loss(trainer.model, trainer.train_ids, EVAL_TOKENS)}
    s = trainer.sample(prompt)
    rec["sample"] = s.prompt + s.text
    if form:
        rec["end"]["form"] = form_share(s.prompt + s.text)
    rec["load_after"] = load()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stop each run at the 60 s check")
    ap.add_argument("--check_s", type=float, default=CHECK_S)
    args = ap.parse_args()
    print(load(), f"torch threads {torch.get_num_threads()}", flush=True)

    text, vf = training_text()
    zh = Trainer(text, make_config("poetry", val_frac=vf), device="cpu", tokenizer=poetry_tokenizer(),
                 prompt=PROMPT)
    en = Trainer(corpus_text("english"), make_config("tiny"), device="cpu")
    recs = [run("poetry (zh)", zh, args.check_s, args.quick, PROMPT, True),
            run("tiny (en)", en, args.check_s, args.quick, "The ", False)]

    print(f"\n{'':34s}" + "".join(f"{r['name']:>18s}" for r in recs))
    rows = [
        ("parameters", lambda r: f"{r['params']:,}"),
        ("vocabulary", lambda r: f"{r['vocab']:,}"),
        ("uniform baseline ln V (nats)", lambda r: f"{r['uniform']:.3f}"),
        ("unigram baseline, held-out", lambda r: f"{r['unigram']:.3f}"),
        ("first below unigram (step, s)", lambda r: f"{r['beat']['step']}, {r['beat']['t']:.0f} s"
         if r["beat"] else "not yet"),
        (f"held-out loss at {args.check_s:.0f} s", lambda r: f"{r['check']['val']:.3f}"),
        ("  (step, train seconds)", lambda r: f"{r['check']['step']}, {r['check']['t']:.0f} s"),
        ("  below unigram by", lambda r: f"{r['unigram'] - r['check']['val']:.3f}"),
        (f"form share at {args.check_s:.0f} s", lambda r: f"{r['check']['form'].share:.0%} of {r['check']['form'].n_lines}"
         if "form" in r["check"] else "-"),
        ("held-out loss at the end", lambda r: f"{r['end']['val']:.3f}"),
        ("train loss at the end", lambda r: f"{r['end']['train']:.3f}"),
        ("  (step, train seconds)", lambda r: f"{r['end']['step']}, {r['end']['t']:.0f} s"),
        ("form share at the end", lambda r: f"{r['end']['form'].share:.0%} of {r['end']['form'].n_lines}"
         if "form" in r["end"] else "-"),
    ]
    for label, f in rows:
        print(f"{label:34s}" + "".join(f"{f(r):>18s}" for r in recs))
    for r in recs:
        print(f"\n{r['name']}: {r['load_before']} -> {r['load_after']}\nsample: {r['sample']!r}")


if __name__ == "__main__":
    main()
