"""Corpora and batches: text files in assets/corpora/ (``<name>.txt`` or gzip-compressed
``<name>.txt.gz``), split, and random training windows."""
from __future__ import annotations

import gzip
from pathlib import Path

import torch

CORPUS_DIR = Path(__file__).resolve().parent.parent / "assets" / "corpora"
PAD_LABEL = -1  # the label of a padded position: GPT.forward's cross_entropy(ignore_index=-1) skips it


def available_corpora() -> list[str]:
    """Names of the corpora that exist now (``<name>.txt`` or ``<name>.txt.gz``), sorted."""
    if not CORPUS_DIR.is_dir():
        return []
    names = {p.name[:-len(suffix)] for suffix in (".txt", ".txt.gz")
             for p in CORPUS_DIR.glob("*" + suffix) if p.is_file()}
    return sorted(names)


def load_corpus(name: str) -> str:
    """The text of assets/corpora/<name>.txt (or .txt.gz), UTF-8. Only listed names are accepted."""
    names = available_corpora()
    if name not in names:
        raise ValueError(f"unknown corpus {name!r}; available: {', '.join(names) or 'none'}")
    plain = CORPUS_DIR / f"{name}.txt"
    if plain.is_file():
        return plain.read_text(encoding="utf-8")
    with gzip.open(CORPUS_DIR / f"{name}.txt.gz", "rt", encoding="utf-8") as f:
        return f.read()


def split(ids, val_frac: float = 0.1, *, n_val: int | None = None, at_space: int = 0):
    """(train, val): the first (1 - val_frac) of the sequence, then the rest (no shuffling, so
    validation text is text the model never saw). The ONE tail split (Trainer, pages, BPE).

    ``n_val``: the caller's count of held-out items instead of val_frac's share (the Trainer's
    at-least-one-window rule). ``at_space`` (text only): move the cut back to the last space or
    newline within that many characters before it, if there is one (Chinese text may have none).

    >>> split(list(range(10)), 0.2)
    ([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])
    >>> split(list(range(10)), n_val=3)
    ([0, 1, 2, 3, 4, 5, 6], [7, 8, 9])
    >>> split("aa bb cc", n_val=2, at_space=50)
    ('aa bb', ' cc')
    """
    if not 0.0 <= val_frac < 1.0:
        raise ValueError(f"val_frac must be in [0, 1), got {val_frac}")
    n = int(round(len(ids) * (1.0 - val_frac))) if n_val is None else len(ids) - n_val
    if at_space:
        ws = max(ids.rfind(c, max(0, n - at_space), n + 1) for c in " \n")
        if ws > 0:
            n = ws
    return ids[:n], ids[n:]


def get_batch(data: torch.Tensor, batch_size: int, block_size: int, generator: torch.Generator | None = None):
    """Random windows of data [N] long: x [B,T] and y [B,T] = x shifted one to the left,
    so y[b, t] is the token that follows x[b, t] (teacher forcing)."""
    if data.dim() != 1:
        raise ValueError("data must be a 1-D tensor of token ids")
    if len(data) < block_size + 1:
        raise ValueError(f"need at least block_size + 1 = {block_size + 1} tokens, got {len(data)}")
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)   # [B]
    offs = torch.arange(block_size)                                                   # [T]
    x = data[ix[:, None] + offs]                                                      # [B,T]
    y = data[ix[:, None] + offs + 1]                                                  # [B,T]
    return x, y


def pad_batch(rows, width: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged token rows -> inputs x [N,W] and labels y [N,W] = each row shifted by one (the ONE
    padding): x[i, :len-1] = row[:-1], y[i, :len-1] = row[1:]; padded inputs are 0 and padded
    labels PAD_LABEL (-1), which the loss skips. W = ``width`` or the longest row minus one.

    >>> x, y = pad_batch([[5, 6, 7], [8, 9]])
    >>> x.tolist(), y.tolist()
    ([[5, 6], [8, 0]], [[6, 7], [9, -1]])
    """
    W = max(len(r) for r in rows) - 1 if width is None else width
    x = torch.zeros(len(rows), W, dtype=torch.long)                   # [N,W] inputs, 0 = padding
    y = torch.full((len(rows), W), PAD_LABEL, dtype=torch.long)       # [N,W] labels, -1 = padding
    for i, r in enumerate(rows):
        if len(r) > 1:
            x[i, :len(r) - 1] = torch.as_tensor(r[:-1])
            y[i, :len(r) - 1] = torch.as_tensor(r[1:])
    return x, y


def holdout_units(units, val_frac: float = 0.1, seed: int = 0):
    """(train, held-out): whole units (paragraphs, poems) held out at random with a fixed seed,
    each list in its original order. The same units, fraction and seed give the same split.

    >>> holdout_units(list("abcdefghij"), 0.2, seed=0)
    (['a', 'b', 'c', 'd', 'e', 'f', 'h', 'i'], ['g', 'j'])
    """
    import random

    if not 0.0 <= val_frac < 1.0:
        raise ValueError(f"val_frac must be in [0, 1), got {val_frac}")
    units = list(units)
    n_val = int(round(len(units) * val_frac))
    held = set(random.Random(seed).sample(range(len(units)), n_val))
    return ([u for i, u in enumerate(units) if i not in held],
            [u for i, u in enumerate(units) if i in held])


def paragraph_split(name: str, val_frac: float = 0.1, seed: int = 0) -> tuple[str, str]:
    """(train text, held-out text) of a corpus made of blank-line separated paragraphs (the
    English docstrings), whole paragraphs held out with ``holdout_units``."""
    pars = [p for p in load_corpus(name).strip().split("\n\n") if p]
    tr, va = holdout_units(pars, val_frac, seed)
    return "\n\n".join(tr) + "\n\n", "\n\n".join(va) + "\n\n"
