"""Train the shipped default model: a char-level GPT on English + Chinese text.

    .venv/bin/python scripts/train_default.py            # writes assets/models/default.{safetensors,json}
    .venv/bin/python scripts/train_default.py --steps 50 --out /tmp/x   # a quick smoke run

Fixed seed, plain AdamW with warmup + cosine decay, 2 threads. Each batch draws a fixed share
of its rows from the Chinese corpus (it is much smaller than the English one, so sampling by
length alone would leave Chinese almost unseen). Validation text is the last 10% of each corpus.
"""
from __future__ import annotations

import argparse
import json
import math
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

torch.set_num_threads(2)

from lmviz.checkpoint import save_checkpoint  # noqa: E402
from lmviz.data import CORPUS_DIR, get_batch, load_corpus, split  # noqa: E402
from lmviz.model import GPT, GPTConfig  # noqa: E402
from lmviz.tokenizer import CharTokenizer  # noqa: E402

CORPORA = ("english", "chinese")


def wait_for_corpora(names, poll_s=30, max_wait_s=20 * 60) -> list[str]:
    """Wait until every corpus file exists (another engineer writes them); else use what exists."""
    t0 = time.time()
    while True:
        have = [n for n in names if (CORPUS_DIR / f"{n}.txt").is_file()]
        if len(have) == len(names) or time.time() - t0 > max_wait_s:
            if not have:
                raise SystemExit(f"no corpus among {names} in {CORPUS_DIR}")
            return have
        print(f"waiting for corpora {sorted(set(names) - set(have))} ...", flush=True)
        time.sleep(poll_s)


@torch.no_grad()
def estimate_loss(model, data, block_size, batch_size, iters, seed):
    g = torch.Generator().manual_seed(seed)
    model.eval()
    losses = [model(*get_batch(data, batch_size, block_size, g))[1].item() for _ in range(iters)]
    model.train()
    return sum(losses) / len(losses)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--zh_share", type=float, default=0.25, help="share of each batch drawn from Chinese")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--eval_every", type=int, default=300)
    ap.add_argument("--out", default=str(ROOT / "assets" / "models" / "default"))
    args = ap.parse_args()

    names = wait_for_corpora(list(CORPORA))
    texts = {n: load_corpus(n) for n in names}
    tok = CharTokenizer("".join(texts.values()))
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=4, n_head=4, n_kv_head=4,
                    d_model=128, pos="learned", norm="layernorm", dropout=0.0)
    torch.manual_seed(args.seed)
    model = GPT(cfg)
    print(f"corpora {names}, vocab {tok.vocab_size}, params {model.num_params():,}", flush=True)

    parts = {n: split(torch.tensor(tok.encode(t), dtype=torch.long), 0.1) for n, t in texts.items()}
    n_zh = round(args.batch * args.zh_share) if "chinese" in parts and len(parts) > 1 else 0
    shares = {n: (n_zh if n == "chinese" else args.batch - n_zh) for n in parts}
    shares = {n: b for n, b in shares.items() if b > 0}
    if len(shares) > 1 and sum(shares.values()) != args.batch:
        raise SystemExit("batch shares do not add up")
    g = torch.Generator().manual_seed(args.seed)

    def batch():
        xs, ys = zip(*(get_batch(parts[n][0], b, cfg.block_size, g) for n, b in shares.items()))
        return torch.cat(xs), torch.cat(ys)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.99))
    warmup = max(1, args.steps // 20)

    def lr_at(step):  # linear warmup, cosine down to 10%
        if step < warmup:
            return args.lr * (step + 1) / warmup
        frac = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))

    history = []
    t0 = time.time()
    model.train()
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            val = {n: estimate_loss(model, parts[n][1], cfg.block_size, 32, 10, 0) for n in parts}
            tr = {n: estimate_loss(model, parts[n][0], cfg.block_size, 32, 10, 1) for n in parts}
            history.append({"step": step, "train": tr, "val": val, "time_s": round(time.time() - t0, 1)})
            print(f"step {step:5d}  train {tr}  val {val}  {time.time() - t0:.0f}s", flush=True)
        if step == args.steps:
            break
        for grp in opt.param_groups:
            grp["lr"] = lr_at(step)
        x, y = batch()
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0:
            print(f"step {step:5d}  loss {loss.item():.3f}  {time.time() - t0:.0f}s", flush=True)
    elapsed = time.time() - t0

    model.eval()
    samples = {}
    for prompt in ("The ", "我喜欢"):
        ids = torch.tensor([tok.encode(prompt)])
        gs = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for _ in range(120):
                logits, _ = model(ids[:, -cfg.block_size:])
                p = torch.softmax(logits[0, -1] / 0.8, -1)
                ids = torch.cat([ids, torch.multinomial(p, 1, generator=gs)[None]], 1)
        samples[prompt] = tok.decode(ids[0].tolist())
        print(repr(samples[prompt]), flush=True)

    final = history[-1]
    weights = {n: shares[n] / args.batch for n in shares}
    record = {
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
    meta = {k: record[k] for k in ("corpora", "steps", "final_train_loss", "final_val_loss", "seed", "trained_at")}
    blob = save_checkpoint(model, tok, meta, half=True)
    out.with_suffix(".safetensors").write_bytes(blob)
    out.with_suffix(".json").write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {out.with_suffix('.safetensors')} ({len(blob) / 1e6:.2f} MB) in {elapsed:.0f}s", flush=True)


if __name__ == "__main__":
    main()
