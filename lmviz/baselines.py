"""What a loss means: the two baselines a language model must beat, and a deterministic held-out loss.

- **uniform**: guess every token of the vocabulary with the same probability: ``ln V`` nats per
  token (perplexity ``V``). An untrained model starts here.
- **unigram**: guess each token by how often it occurs in the training text, ignoring all context
  (add-``alpha`` smoothing, so a token never seen in training still gets a small probability),
  scored on the held-out text: the cross-entropy ``-mean log p(token)``. A model that beats it
  has learned something about context, not only which characters are common.

Both are in nats per token for a given tokenizer, so they sit on the same axis as the loss.
``heldout_loss`` scores a model on a text in non-overlapping windows of its block size, always
the same ones, so a number stored beside a model can be recomputed (a test does).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Baselines:
    vocab_size: int          # V, tokens in the vocabulary
    uniform: float           # ln V: nats per token of a uniform guess
    unigram: float           # held-out cross-entropy of the smoothed train unigram, nats per token
    unigram_train: float     # the same unigram scored on its own training text (its entropy)
    alpha: float             # add-alpha smoothing of the unigram counts
    n_train: int             # tokens the unigram was counted on
    n_heldout: int           # tokens it was scored on

    @property
    def uniform_ppl(self) -> float:
        return float(self.vocab_size)

    @property
    def unigram_ppl(self) -> float:
        return math.exp(self.unigram)

    def to_dict(self) -> dict:
        return {"vocab_size": self.vocab_size, "uniform": self.uniform, "unigram": self.unigram,
                "unigram_train": self.unigram_train, "alpha": self.alpha, "n_train": self.n_train,
                "n_heldout": self.n_heldout}


def uniform_baseline(vocab_size: int) -> float:
    """ln V, the loss of a uniform guess over V tokens.

    >>> round(uniform_baseline(100), 4)
    4.6052
    """
    if vocab_size < 1:
        raise ValueError("vocab_size must be at least 1")
    return math.log(vocab_size)


def unigram_baseline(train_ids, heldout_ids, vocab_size: int, alpha: float = 1.0) -> Baselines:
    """Uniform and unigram baselines from token ids (lists or 1-D tensors).

    p(v) = (count_train(v) + alpha) / (N_train + alpha V); unigram = -mean over held-out of ln p.

    >>> b = unigram_baseline([0, 0, 0, 1], [0, 1], vocab_size=2, alpha=0.0)
    >>> round(b.unigram, 4), round(b.uniform, 4)      # -(ln 3/4 + ln 1/4) / 2
    (0.837, 0.6931)
    """
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    tr = torch.as_tensor(train_ids, dtype=torch.long).flatten()
    va = torch.as_tensor(heldout_ids, dtype=torch.long).flatten()
    if len(tr) == 0 or len(va) == 0:
        raise ValueError("need some training and some held-out tokens")
    if int(tr.max()) >= vocab_size or int(va.max()) >= vocab_size or int(min(tr.min(), va.min())) < 0:
        raise ValueError("token ids must lie in [0, vocab_size)")
    counts = torch.bincount(tr.cpu(), minlength=vocab_size).double()
    logp = torch.log((counts + alpha) / (counts.sum() + alpha * vocab_size))        # [V]
    held = -float(logp[va.cpu()].mean())
    own = -float(logp[tr.cpu()].mean())
    return Baselines(vocab_size, uniform_baseline(vocab_size), held, own, float(alpha), len(tr), len(va))


def baselines(tokenizer, train_text: str, heldout_text: str, alpha: float = 1.0) -> Baselines:
    """Uniform and unigram baselines of a tokenizer on a train / held-out pair of texts."""
    return unigram_baseline(tokenizer.encode(train_text), tokenizer.encode(heldout_text),
                            tokenizer.vocab_size, alpha)


@torch.no_grad()
def heldout_loss(model, ids, max_tokens: int | None = None, batch_size: int = 64) -> float:
    """Mean next-token loss (nats) of model over ids [N], in non-overlapping windows of
    ``block_size + 1`` tokens from the start (the first ``max_tokens`` only, when given).
    Deterministic: the same model and ids give the same number."""
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()
    if max_tokens is not None:
        ids = ids[:max_tokens]
    T = model.cfg.block_size
    n_win = (len(ids) - 1) // T
    if n_win < 1:
        raise ValueError(f"need at least block_size + 1 = {T + 1} tokens, got {len(ids)}")
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    starts = torch.arange(n_win) * T
    offs = torch.arange(T)
    for i in range(0, n_win, batch_size):
        s = starts[i:i + batch_size]
        x = ids[s[:, None] + offs].to(dev)                     # [B,T]
        y = ids[s[:, None] + offs + 1].to(dev)                 # [B,T]
        logits = model(x)[0].float()                           # [B,T,V]
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"))
        count += y.numel()
    model.train(was_training)
    return total / count


@dataclass(frozen=True)
class LanguageReport:
    lang: str                # "en" or "zh"
    corpus: str              # the corpus it was measured on (english, poetry)
    heldout_loss: float      # nats per token on held-out text
    train_loss: float        # nats per token on a same-size sample of the training text
    gap: float               # heldout_loss - train_loss (large: memorised)
    unigram: float           # the unigram baseline on the same held-out text
    uniform: float           # ln V

    @property
    def heldout_ppl(self) -> float:
        return math.exp(self.heldout_loss)

    @property
    def unigram_ppl(self) -> float:
        return math.exp(self.unigram)

    @property
    def uniform_ppl(self) -> float:
        return math.exp(self.uniform)


def language_report(meta: dict, lang: str) -> LanguageReport:
    """The per-language numbers stored in a model's metadata (``meta["languages"][lang]``, as
    scripts/train_default.py writes them); ValueError when the model has none for lang."""
    m = (meta or {}).get("languages", {}).get(lang)
    if not isinstance(m, dict):
        raise ValueError(f"the model's metadata has no held-out numbers for {lang!r}")
    return LanguageReport(lang, m["corpus"], m["heldout_loss"], m["train_loss"], m["gap"],
                          m["unigram_baseline"], m["uniform_baseline"])
