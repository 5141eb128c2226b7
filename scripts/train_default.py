"""Train the shipped default model: a char-level GPT on English docstrings + Tang poems.

    .venv/bin/python scripts/train_default.py            # writes assets/models/default.{safetensors,json}
    .venv/bin/python scripts/train_default.py --steps 50 --out /tmp/x   # a quick smoke run

Fixed seed, lmviz.train's AdamW, warm-up + cosine schedule and training loop (train_steps), 1 torch thread (the app's setting; a shared
2-core machine). Data: `english` (CPython docstrings, whole paragraphs held out with a fixed
seed) and `poetry` (regular-form Tang poems, the corpus's own held-out poems, see
lmviz/poetry.py). Each batch draws a fixed share of its rows from each language. The small
modern-Chinese prose corpus (`chinese.txt`, 9.5k characters) is left out: any share large
enough to matter is memorised (the previous model: train 0.24, held-out 7.67 nats), and the
poetry corpus is 170x larger. The vocabulary is the poetry vocabulary (lmviz.poetry), which also
holds every character of the English corpus and of the app's example sentences, plus "□".

The metadata stores, per language, losses of the saved (fp16) model measured by
lmviz.baselines.heldout_loss on fixed token samples, the uniform and unigram baselines, and
the train - held-out gap; tests/test_default_model.py recomputes them. The shipped model is this
script with its defaults (3000 steps, 822 s on a shared 2-core machine, 1 thread).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# threads sleep instead of spinning while they wait: on a busy shared 2-core server a spinning
# pool of 2 threads was ~2.4x slower per step than a passive one (see STACK-NOTES.md)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

torch.set_num_threads(1)

from lmviz.baselines import heldout_loss, unigram_baseline  # noqa: E402
from lmviz.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from lmviz.data import get_batch, paragraph_split  # noqa: E402
from lmviz.model import GPT, GPTConfig  # noqa: E402
from lmviz.poetry import load_poetry, poetry_tokenizer  # noqa: E402
from lmviz.sampling import generate, model_step  # noqa: E402
from lmviz.train import TrainConfig, adamw, lr_at, train_steps  # noqa: E402

CORPORA = ("english", "poetry")
LANG = {"english": "en", "poetry": "zh"}
ENGLISH_HELDOUT_FRAC, ENGLISH_SEED = 0.1, 0     # whole paragraphs held out
EVAL_TOKENS = 65_536                            # tokens of each text scored for the metadata


def language_texts() -> dict[str, tuple[str, str]]:
    """{corpus: (train text, held-out text)}, both split by whole units with a fixed seed."""
    poems = load_poetry()
    return {"english": paragraph_split("english", ENGLISH_HELDOUT_FRAC, ENGLISH_SEED),
            "poetry": (poems.train_text, poems.heldout_text)}


def language_report(model, tok, texts, eval_tokens=EVAL_TOKENS) -> dict:
    """Per language: held-out and train loss (same-size fixed samples: the first eval_tokens
    tokens of each text), the uniform and unigram baselines, and the gap."""
    out = {}
    for name, (tr, va) in texts.items():
        tr_ids, va_ids = tok.encode(tr), tok.encode(va)
        b = unigram_baseline(tr_ids, va_ids, tok.vocab_size)
        held = heldout_loss(model, va_ids, eval_tokens)
        train = heldout_loss(model, tr_ids, eval_tokens)
        out[LANG[name]] = {
            "corpus": name, "heldout_loss": held, "train_loss": train, "gap": held - train,
            "unigram_baseline": b.unigram, "uniform_baseline": b.uniform,
            "below_unigram": b.unigram - held, "eval_tokens": min(eval_tokens, len(va_ids)),
            "train_tokens": len(tr_ids), "heldout_tokens": len(va_ids),
        }
    return out


@torch.no_grad()
def estimate_loss(model, data, block_size, batch_size, iters, seed):
    g = torch.Generator().manual_seed(seed)
    model.eval()
    losses = [model(*get_batch(data, batch_size, block_size, g))[1].item() for _ in range(iters)]
    model.train()
    return sum(losses) / len(losses)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--zh_share", type=float, default=0.6875, help="share of each batch drawn from the poems (22 of 32 rows)")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--eval_every", type=int, default=300)
    ap.add_argument("--out", default=str(ROOT / "assets" / "models" / "default"))
    args = ap.parse_args()

    names = list(CORPORA)
    splits = language_texts()
    texts = {n: splits[n][0] + splits[n][1] for n in names}
    tok = poetry_tokenizer()
    for n in names:
        if n == "english" and tok.encode_lossy(texts[n])[1]:
            raise SystemExit("the vocabulary misses English characters; rebuild the poetry corpus")
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=4, n_head=4, n_kv_head=4,
                    d_model=128, pos="learned", norm="layernorm", dropout=0.0)
    torch.manual_seed(args.seed)
    model = GPT(cfg)
    print(f"corpora {names}, vocab {tok.vocab_size}, params {model.num_params():,}", flush=True)

    parts = {n: tuple(torch.tensor(tok.encode(t), dtype=torch.long) for t in splits[n]) for n in names}
    n_zh = round(args.batch * args.zh_share) if "poetry" in parts and len(parts) > 1 else 0
    shares = {n: (n_zh if n == "poetry" else args.batch - n_zh) for n in parts}
    shares = {n: b for n, b in shares.items() if b > 0}
    if len(shares) > 1 and sum(shares.values()) != args.batch:
        raise SystemExit("batch shares do not add up")
    g = torch.Generator().manual_seed(args.seed)

    def batch():
        xs, ys = zip(*(get_batch(parts[n][0], b, cfg.block_size, g) for n, b in shares.items()))
        return torch.cat(xs), torch.cat(ys)

    # the one optimizer, learning-rate schedule and loop of lmviz.train (linear warm-up over the
    # first 5 % of steps, cosine down to 10 %, gradient norm clipped at 1)
    tcfg = TrainConfig(lr=args.lr, max_steps=args.steps, warmup_steps=max(1, args.steps // 20),
                       min_lr_frac=0.1, weight_decay=0.1, beta2=0.99, grad_clip=1.0)
    opt = adamw(model, tcfg)

    history = []
    t0 = time.time()
    model.train()
    for start in range(0, args.steps + 1, args.eval_every):
        val = {n: estimate_loss(model, parts[n][1], cfg.block_size, 32, 10, 0) for n in parts}
        tr = {n: estimate_loss(model, parts[n][0], cfg.block_size, 32, 10, 1) for n in parts}
        history.append({"step": start, "train": tr, "val": val, "time_s": round(time.time() - t0, 1)})
        print(f"step {start:5d}  train {tr}  val {val}  {time.time() - t0:.0f}s", flush=True)
        n = min(args.eval_every, args.steps - start)
        for step, loss, _, _ in train_steps(model, opt, batch, lambda k: lr_at(k, tcfg), n, start=start,
                                            clip=tcfg.grad_clip):
            if (step - 1) % 50 == 0:
                print(f"step {step - 1:5d}  loss {loss:.3f}  {time.time() - t0:.0f}s", flush=True)
    if history[-1]["step"] != args.steps:
        val = {n: estimate_loss(model, parts[n][1], cfg.block_size, 32, 10, 0) for n in parts}
        tr = {n: estimate_loss(model, parts[n][0], cfg.block_size, 32, 10, 1) for n in parts}
        history.append({"step": args.steps, "train": tr, "val": val, "time_s": round(time.time() - t0, 1)})
    elapsed = time.time() - t0

    model.eval()
    samples = {}
    for prompt in ("The ", "春"):
        gs = torch.Generator().manual_seed(0)
        with torch.no_grad():
            new = [t.token for t in generate(model_step(model), tok.encode(prompt), 120, gs, temperature=0.8)]
        ids = torch.tensor([tok.encode(prompt) + new])
        samples[prompt] = tok.decode(ids[0].tolist())
        print(repr(samples[prompt]), flush=True)

    final = history[-1]
    weights = {n: shares[n] / args.batch for n in shares}
    # losses of the model as shipped (fp16 weights, read back), on fixed samples
    blob = save_checkpoint(model, tok, {}, half=True)
    shipped = load_checkpoint(blob)[0]
    languages = language_report(shipped, tok, splits)
    print(json.dumps(languages, indent=1), flush=True)
    record = {
        "languages": languages,
        "vocab_size": tok.vocab_size, "unk": tok.unk,
        "corpora": names,
        "corpus_chars": {n: len(t) for n, t in texts.items()},
        "batch_share": weights,
        "config": cfg.to_dict(),
        "params": model.num_params(),
        "steps": args.steps, "batch_size": args.batch, "lr": args.lr, "seed": args.seed,
        "tokens_seen": args.steps * args.batch * cfg.block_size,
        "final_train_loss": final["train"], "final_val_loss": final["val"],
        "final_val_loss_mixed": sum(weights[n] * final["val"][n] for n in weights),
        "train_time_s": round(elapsed, 1), "torch_threads": torch.get_num_threads(),
        "trained_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "history": history, "samples_t0.8": samples,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: record[k] for k in ("corpora", "steps", "final_train_loss", "final_val_loss", "seed", "trained_at",
                                   "languages")}
    blob = save_checkpoint(model, tok, meta, half=True)
    out.with_suffix(".safetensors").write_bytes(blob)
    out.with_suffix(".json").write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {out.with_suffix('.safetensors')} ({len(blob) / 1e6:.2f} MB) in {elapsed:.0f}s", flush=True)


if __name__ == "__main__":
    main()
